/* Half precision: the host conversions against IEEE 754 (every half value,
 * ties to even, subnormals, overflow, NaN), the device's conversions
 * against the host's, and the dynamic loss scaler against a scripted run
 * of overflowing gradients. */
#include <math.h>

#include "common.h"

static float bits_f(uint32_t x) {
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

static bool half_is_nan(uint16_t h) {
  return (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}

/* Every half value converts to the float it names and back to itself. */
START_TEST(host_every_half_round_trips) {
  static uint16_t h[65536], back[65536];
  static float f[65536];
  for (int i = 0; i < 65536; i++) h[i] = (uint16_t)i;
  clt_f16_to_f32(h, f, 65536);
  clt_f32_to_f16(f, back, 65536);
  for (int i = 0; i < 65536; i++) {
    if (half_is_nan(h[i])) {
      ck_assert(isnan(f[i]) && half_is_nan(back[i]));
      continue;
    }
    ck_assert_msg(back[i] == h[i], "0x%04x -> %a -> 0x%04x", i, (double)f[i],
                  back[i]);
  }
  /* Values by their definition. */
  ck_assert(f[0x3c00] == 1.0f && f[0xc000] == -2.0f);
  ck_assert(f[0x7bff] == 65504.0f);
  ck_assert(f[0x0001] == 0x1p-24f && f[0x03ff] == 1023 * 0x1p-24f);
  ck_assert(f[0x0400] == 0x1p-14f);
  ck_assert(isinf(f[0x7c00]) && f[0xfc00] < 0);
  ck_assert(f[0x8000] == 0.0f && signbit(f[0x8000]));
}
END_TEST

/* Rounding: ties to even, overflow to infinity, into and out of the
 * subnormals. */
START_TEST(host_rounds_to_nearest_even) {
  const struct {
    float in;
    uint16_t out;
  } cases[] = {
      {1.0f + 0x1p-11f, 0x3c00},           /* tie, 1.0 is even */
      {1.0f + 3 * 0x1p-11f, 0x3c02},       /* tie, rounds up to even */
      {1.0f + 0x1p-11f + 0x1p-20f, 0x3c01}, /* above the tie */
      {65504.0f, 0x7bff},
      {65519.0f, 0x7bff},
      {65520.0f, 0x7c00}, /* the tie above the largest: infinity */
      {1e10f, 0x7c00},
      {-1e10f, 0xfc00},
      {0x1p-24f, 0x0001},
      {0x1p-25f, 0x0000},          /* tie between 0 and the least: 0 */
      {0x1p-25f * 1.0001f, 0x0001}, /* just above it */
      {3 * 0x1p-25f, 0x0002},      /* tie 1.5 ulp: to even 2 */
      {0x1p-14f - 0x1p-25f, 0x0400}, /* rounds up into the normals */
      {1e-10f, 0x0000},
      {-0.0f, 0x8000},
      {INFINITY, 0x7c00},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint16_t h;
    clt_f32_to_f16(&cases[i].in, &h, 1);
    ck_assert_msg(h == cases[i].out, "%a -> 0x%04x, not 0x%04x",
                  (double)cases[i].in, h, cases[i].out);
  }
  float nan = NAN;
  uint16_t h;
  clt_f32_to_f16(&nan, &h, 1);
  ck_assert(half_is_nan(h));
}
END_TEST

/* The device converts as the host does: every half to float, and floats
 * spread over every exponent (with ties and subnormals) to half. */
START_TEST(device_conversions_match_the_host) {
  enum { N = 65536, M = 3 * 65536 + 7 };
  /* CLT_TEST_TINY (oclgrind, which interprets every work-item): every
   * 61st value of each set. */
  int stride = getenv("CLT_TEST_TINY") ? 61 : 1;
  static uint16_t h[N], hd[M], hh[M];
  static float f[N], fd[N], x[M];
  for (int i = 0; i < N; i++) h[i] = (uint16_t)i;
  clt_f16_to_f32(h, f, N);
  int n = 0; /* the halves sent to the device: h[0..n) after packing */
  for (int i = 0; i < N; i += stride) h[n++] = (uint16_t)i;
  clt_f16_to_f32(h, f, n);
  clt_tensor *th = NULL, *tf = NULL, *tx = NULL, *ty = NULL;
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_F16, 1, (int64_t[]){n}, &th));
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_F32, 1, (int64_t[]){n}, &tf));
  ck_assert_ok(clt_tensor_upload(th, h));
  ck_assert_ok(clt_tensor_convert(tf, th));
  ck_assert_ok(clt_tensor_download(tf, fd));
  for (int i = 0; i < n; i++)
    ck_assert_msg(half_is_nan(h[i]) ? isnan(fd[i])
                                    : memcmp(&f[i], &fd[i], 4) == 0,
                  "0x%04x: device %a, host %a", i, (double)fd[i],
                  (double)f[i]);
  /* Floats: every half, every midpoint between neighbours (ties), and
   * points a quarter of the way (no tie), plus a few from far out. */
  int m = 0;
  for (int i = 0; i < N; i += stride) {
    uint16_t hi = (uint16_t)i, next = (uint16_t)(i + 1);
    if (half_is_nan(hi) || (hi & 0x7fff) >= 0x7c00) continue;
    float a, b;
    clt_f16_to_f32(&hi, &a, 1);
    clt_f16_to_f32(&next, &b, 1);
    if ((next & 0x7fff) >= 0x7c00) b = 2 * a;
    x[m++] = a;
    x[m++] = a + (b - a) / 2;
    x[m++] = a + (b - a) / 4;
  }
  x[m++] = bits_f(0x7f7fffff);
  x[m++] = -bits_f(0x00000001);
  x[m++] = NAN;
  x[m++] = -INFINITY;
  ck_assert_int_le(m, M);
  clt_f32_to_f16(x, hh, m);
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_F32, 1, (int64_t[]){m}, &tx));
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_F16, 1, (int64_t[]){m}, &ty));
  ck_assert_ok(clt_tensor_upload(tx, x));
  ck_assert_ok(clt_tensor_convert(ty, tx));
  ck_assert_ok(clt_tensor_download(ty, hd));
  for (int i = 0; i < m; i++)
    ck_assert_msg(half_is_nan(hh[i]) ? half_is_nan(hd[i]) : hd[i] == hh[i],
                  "%a: device 0x%04x, host 0x%04x", (double)x[i], hd[i],
                  hh[i]);
  /* Other dtypes do not convert. */
  clt_tensor *ti = NULL;
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_I32, 1, (int64_t[]){m}, &ti));
  ck_assert_int_eq(clt_tensor_convert(ti, tx), CLT_ERR_UNSUPPORTED);
  clt_tensor_destroy(ti);
  clt_tensor_destroy(th);
  clt_tensor_destroy(tf);
  clt_tensor_destroy(tx);
  clt_tensor_destroy(ty);
}
END_TEST

/* GradScaler's rules over a scripted run: clean steps grow the scale
 * after growth_interval, an overflow (Inf or NaN anywhere) skips the step
 * and backs off, and clean gradients come back divided by the scale. */
START_TEST(loss_scaler_grows_backs_off_and_skips) {
  clt_loss_scaler_options o;
  clt_loss_scaler_options_init(&o);
  ck_assert(o.init_scale == 65536.0f && o.growth_interval == 2000);
  o.init_scale = 1024.0f;
  o.growth_interval = 3;
  clt_loss_scaler *s = NULL;
  ck_assert_ok(clt_loss_scaler_create(g_ctx, &o, &s));
  enum { N = 1000 };
  static float g[N], back[N];
  clt_tensor *t = NULL;
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_F32, 1, (int64_t[]){N}, &t));
  /* step: 0 clean, 1 clean, 2 inf, 3 clean, 4 clean, 5 clean (grows),
   * 6 nan, 7 clean */
  const int bad[] = {0, 0, 1, 0, 0, 0, 2, 0};
  const float scale_before[] = {1024, 1024, 1024, 512, 512, 512,
                                1024, 512};
  int64_t skipped = 0;
  for (int step = 0; step < 8; step++) {
    float sc = clt_loss_scaler_scale(s);
    ck_assert_msg(sc == scale_before[step], "step %d: scale %g", step,
                  (double)sc);
    for (int i = 0; i < N; i++) g[i] = sc * (float)(i % 7 - 3) * 0.25f;
    if (bad[step] == 1) g[N - 1] = INFINITY;
    if (bad[step] == 2) g[N / 2] = NAN;
    ck_assert_ok(clt_tensor_upload(t, g));
    bool skip = true;
    ck_assert_ok(clt_loss_scaler_unscale(s, t, &skip));
    ck_assert_int_eq(skip, bad[step] != 0);
    skipped += bad[step] != 0;
    ck_assert_int_eq(clt_loss_scaler_skipped(s), skipped);
    if (skip) continue;
    ck_assert_ok(clt_tensor_download(t, back));
    for (int i = 0; i < N; i++)
      ck_assert(back[i] == (float)(i % 7 - 3) * 0.25f);
  }
  o.backoff_factor = 1.0f;
  clt_loss_scaler *bad_opts = NULL;
  ck_assert_int_eq(clt_loss_scaler_create(g_ctx, &o, &bad_opts),
                   CLT_ERR_INVALID_ARGUMENT);
  clt_tensor_destroy(t);
  clt_loss_scaler_destroy(s);
}
END_TEST

static Suite *half_suite(void) {
  Suite *s = suite_create("half");
  TCase *tc = tcase_create("half");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, host_every_half_round_trips);
  tcase_add_test(tc, host_rounds_to_nearest_even);
  tcase_add_test(tc, device_conversions_match_the_host);
  tcase_add_test(tc, loss_scaler_grows_backs_off_and_skips);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite("half", half_suite); }
