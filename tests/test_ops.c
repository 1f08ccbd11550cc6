/* Every device op (src/ops/ops.h, except GEMM: test_gemm.c) against its
 * host reference from ops/opcheck.h, on odd shapes: rows 1, 3, 7, 33,
 * columns 1, 10, 127, lengths 1 to 1000 around the work-group sizes, and
 * convolution / pooling windows with odd sizes, strides, padding and
 * dilation. The backward ops are also compared with finite differences of
 * the device's own forward ops (or, where the forward is linear, checked
 * to be its adjoint).
 *
 * CLT_TEST_TINY=1 keeps to tiny shapes (for the oclgrind simulator); the
 * suite never calls CLBlast. */
#include <math.h>

#include "common.h"
#include "check/check.h"
#include "check/harness.h"
#include "common/rng.h"
#include "data/loader.h"
#include "mma_context.h"
#include "ops/conv_implicit.h"

/* ------------------------------------------------------------------------ */
/* Shapes                                                                    */

static const int64_t full_rows[] = {1, 3, 7, 33};
static const int64_t full_cols[] = {1, 10, 127};
static const int64_t full_lengths[] = {1,  2,   7,   63,  64,
                                       65, 255, 256, 257, 1000};
static const int64_t tiny_rows[] = {1, 2};
static const int64_t tiny_cols[] = {1, 3};
static const int64_t tiny_lengths[] = {1, 5};

#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

typedef struct shape_list {
  const int64_t *v;
  int count;
} shape_list;

static shape_list rows_list(void) {
  return test_tiny() ? (shape_list){tiny_rows, COUNT(tiny_rows)}
                     : (shape_list){full_rows, COUNT(full_rows)};
}
static shape_list cols_list(void) {
  return test_tiny() ? (shape_list){tiny_cols, COUNT(tiny_cols)}
                     : (shape_list){full_cols, COUNT(full_cols)};
}
static shape_list lengths_list(void) {
  return test_tiny() ? (shape_list){tiny_lengths, COUNT(tiny_lengths)}
                     : (shape_list){full_lengths, COUNT(full_lengths)};
}

/* Loop index i over the grid rows x cols. */
static void grid_at(int i, int64_t *rows, int64_t *cols) {
  shape_list r = rows_list(), c = cols_list();
  *rows = r.v[i / c.count];
  *cols = c.v[i % c.count];
}
static int grid_count(void) { return rows_list().count * cols_list().count; }

/* Exact arithmetic: a rounding or two of float. */
#define TOL_EXACT 1e-6
/* Sums, the device's exp / tanh / erf, optimizer updates. */
#define TOL 1e-5

/* ------------------------------------------------------------------------ */
/* The harness itself (check/harness.h): what every check below relies on    */

/* Fills elements [from, from + count) of the operand's base buffer (its
 * canaries are at [0, CHECK_GUARD) and past CHECK_GUARD + 7) with 0.5; the
 * reference says 0.25 within the operand. */
typedef struct stray_fill {
  int64_t from, count;
} stray_fill;

static clt_status stray_fill_body(check_set *s, const void *arg) {
  const stray_fill *f = arg;
  check_f32 *x;
  clt_tensor *v;
  CLT_TRY(check_operand(s, 7, -1.0f, 1.0f, &x));
  CLT_TRY(check_view(s, x->base, f->from, f->count, &v));
  CLT_TRY(clt_tensor_fill(v, 0.5));
  for (int64_t i = 0; i < 7; i++) x->host[i] = 0.25f;
  return CLT_OK;
}

START_TEST(harness_measures_and_catches_strays) {
  double e = -1.0;
  /* Within the operand: a wrong value is an error of |0.5 - 0.25|. */
  stray_fill inside = {CHECK_GUARD, 7};
  ck_assert_ok(check_run(g_ctx, 1, stray_fill_body, &inside, &e));
  ck_assert_double_eq_tol(e, 0.25, 1e-12);
  /* One element past the end, or before the start: the check fails and
   * the context says where. */
  stray_fill past = {CHECK_GUARD, 8}, before = {CHECK_GUARD - 1, 8};
  ck_assert_int_eq(check_run(g_ctx, 1, stray_fill_body, &past, &e),
                   CLT_ERR_INTERNAL);
  ck_assert_msg(isinf(e), "error %g", e);
  ck_assert_ptr_nonnull(
      strstr(clt_context_last_error(g_ctx), "element 1 past its end"));
  ck_assert_int_eq(check_run(g_ctx, 1, stray_fill_body, &before, &e),
                   CLT_ERR_INTERNAL);
  ck_assert_ptr_nonnull(
      strstr(clt_context_last_error(g_ctx), "element 1 before its start"));
}
END_TEST

/* An i32 operand filled with 7 where the reference wants 7 but for one
 * element: an integer that differs counts as 1. */
static clt_status int_fill_body(check_set *s, const void *arg) {
  (void)arg;
  check_i32 *x;
  CLT_TRY(check_operand_i32(s, 5, &x));
  CLT_TRY(clt_tensor_fill(x->t, 7));
  for (int64_t i = 0; i < 5; i++) x->host[i] = i == 3 ? 6 : 7;
  return CLT_OK;
}

START_TEST(harness_counts_integers) {
  double e = -1.0;
  ck_assert_ok(check_run(g_ctx, 2, int_fill_body, NULL, &e));
  ck_assert_double_eq(e, 1.0);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Element-wise ops and bias                                                 */

START_TEST(add_lengths) {
  shape_list n = lengths_list();
  double e;
  for (int k = 0; k < n.count; k++) {
    ck_assert_check(clt_check_add(g_ctx, n.v[k], false, k % 3, &e), e,
                    TOL_EXACT, "n=%lld round %d", (long long)n.v[k], k % 3);
    ck_assert_check(clt_check_add(g_ctx, n.v[k], true, (k + 1) % 3, &e), e,
                    TOL_EXACT, "n=%lld accumulate round %d", (long long)n.v[k],
                    (k + 1) % 3);
    ck_assert_check(clt_check_add_relu(g_ctx, n.v[k], (k + 2) % 3, &e), e,
                    TOL_EXACT, "n=%lld relu round %d", (long long)n.v[k],
                    (k + 2) % 3);
  }
}
END_TEST

/* cl/half.cl: conversions and the loss scaler's kernel, guarded. */
START_TEST(half_lengths) {
  shape_list n = lengths_list();
  double e;
  for (int k = 0; k < n.count; k++) {
    ck_assert_check(clt_check_half_round_trip(g_ctx, n.v[k], &e), e, 0.0,
                    "n=%lld", (long long)n.v[k]);
    ck_assert_check(clt_check_half_round_in_place(g_ctx, n.v[k], &e), e, 0.0,
                    "n=%lld", (long long)n.v[k]);
    ck_assert_check(clt_check_loss_scaler_unscale(g_ctx, n.v[k], &e), e, 0.0,
                    "n=%lld", (long long)n.v[k]);
  }
}
END_TEST

/* Pixel bytes into floats in [0, 1] (fit's byte batches): the host's
 * (float)b / 255.0f bit for bit, every one of the 256 bytes (the last
 * length holds each), every operand a view at an offset (neither a
 * multiple of 8), the floats around the output untouched. */
START_TEST(unit_u8_lengths) {
  shape_list lens = lengths_list();
  for (int k = 0; k <= lens.count; k++) {
    int64_t n = k < lens.count ? lens.v[k] : 256 + 9, nb = n + 3, nf = n + 7;
    uint8_t *bytes = malloc((size_t)nb);
    float *out = malloc((size_t)nf * sizeof(float));
    for (int64_t i = 0; i < nb; i++) bytes[i] = (uint8_t)((i * 77 + n) % 256);
    for (int64_t i = 0; i < nf; i++) out[i] = -7.25f;
    clt_tensor *tb, *tf;
    ck_assert_ok(clt_tensor_create(g_ctx, CLT_U8, 1, &nb, &tb));
    ck_assert_ok(clt_tensor_create(g_ctx, CLT_F32, 1, &nf, &tf));
    ck_assert_ok(clt_tensor_upload(tb, bytes));
    ck_assert_ok(clt_tensor_upload(tf, out));
    clt_tensor x = clt_tensor_slice_1d(tb, 3, n);
    clt_tensor y = clt_tensor_slice_1d(tf, 5, n);
    ck_assert_ok(clt_unit_u8(g_ctx, &y, &x, n));
    ck_assert_ok(clt_tensor_download(tf, out));
    float values[256];
    clt_loader_byte_values(values);
    bool seen[256] = {false};
    for (int64_t i = 0; i < nf; i++) {
      bool inside = i >= 5 && i < 5 + n;
      uint8_t b = inside ? bytes[3 + i - 5] : 0;
      float want = inside ? (float)b / 255.0f : -7.25f;
      if (inside) {
        ck_assert(values[b] == want); /* the loader's floats */
        seen[b] = true;
      }
      ck_assert_msg(memcmp(&out[i], &want, sizeof want) == 0,
                    "n=%lld: element %lld is %a, not %a (byte %d)",
                    (long long)n, (long long)i, (double)out[i], (double)want,
                    (int)b);
    }
    if (k == lens.count)
      for (int v = 0; v < 256; v++) ck_assert_msg(seen[v], "byte %d", v);
    /* The wrong types are refused. */
    ck_assert_int_eq(clt_unit_u8(g_ctx, &x, &y, n), CLT_ERR_INVALID_ARGUMENT);
    clt_tensor_destroy(tb);
    clt_tensor_destroy(tf);
    free(bytes);
    free(out);
  }
}
END_TEST

START_TEST(scale_lengths) {
  static const float alphas[] = {1.0f, -0.75f, 0.0f, 3.5f};
  shape_list n = lengths_list();
  double e;
  for (int k = 0; k < n.count; k++)
    for (int a = 0; a < COUNT(alphas); a++) {
      int r = (k + a) % 3;
      ck_assert_check(
          clt_check_scale(g_ctx, n.v[k], alphas[a], false, r, &e), e,
          TOL_EXACT, "n=%lld alpha=%g round %d", (long long)n.v[k], alphas[a],
          r);
      ck_assert_check(
          clt_check_scale(g_ctx, n.v[k], alphas[a], true, (r + 1) % 3, &e), e,
          TOL_EXACT, "n=%lld alpha=%g accumulate round %d", (long long)n.v[k],
          alphas[a], (r + 1) % 3);
    }
}
END_TEST

START_TEST(bias_rows_grid) {
  int64_t rows, cols;
  grid_at(_i, &rows, &cols);
  double e;
  for (int relu = 0; relu < 2; relu++)
    ck_assert_check(
        clt_check_bias_rows(g_ctx, rows, cols, relu, (_i + relu) % 3, &e), e,
        TOL_EXACT, "%lldx%lld relu %d round %d", (long long)rows,
        (long long)cols, relu, (_i + relu) % 3);
}
END_TEST

/* The normalize layer's forward on odd shapes, a channel of variance 0
 * among them, with each rounding mode. */
START_TEST(normalize_shapes) {
  static const int64_t full[][3] = {{1, 1, 1}, {1, 3, 1},  {3, 1, 7},
                                    {2, 7, 49}, {5, 33, 1}, {1, 127, 3}};
  static const int64_t tiny[][3] = {{1, 1, 1}, {2, 3, 2}};
  int count = test_tiny() ? COUNT(tiny) : COUNT(full);
  double e;
  for (int k = 0; k < count; k++) {
    const int64_t *s = test_tiny() ? tiny[k] : full[k];
    for (int r = 0; r < 3; r++)
      ck_assert_check(clt_check_normalize(g_ctx, s[0], s[1], s[2], r, &e), e,
                      TOL, "%lldx%lldx%lld round %d", (long long)s[0],
                      (long long)s[1], (long long)s[2], r);
  }
}
END_TEST

START_TEST(bias_channels_shapes) {
  static const int64_t full[][3] = {{1, 1, 1},  {1, 3, 1},  {3, 1, 7},
                                    {2, 7, 49}, {3, 10, 1}, {1, 33, 10}};
  static const int64_t tiny[][3] = {{1, 1, 1}, {2, 3, 2}};
  int count = test_tiny() ? COUNT(tiny) : COUNT(full);
  double e;
  for (int k = 0; k < count; k++) {
    const int64_t *s = test_tiny() ? tiny[k] : full[k];
    for (int relu = 0; relu < 2; relu++)
      ck_assert_check(clt_check_bias_channels(g_ctx, s[0], s[1], s[2], relu,
                                              (k + relu) % 3, &e),
                      e, TOL_EXACT, "%lldx%lldx%lld relu %d round %d",
                      (long long)s[0], (long long)s[1], (long long)s[2], relu,
                      (k + relu) % 3);
  }
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Activations                                                               */

static const struct {
  clt_activation kind;
  float alpha;
  const char *name;
} activations[] = {
    {CLT_ACT_RELU, 0.0f, "relu"},
    {CLT_ACT_LEAKY_RELU, 0.01f, "leaky relu 0.01"},
    {CLT_ACT_LEAKY_RELU, 0.2f, "leaky relu 0.2"},
    {CLT_ACT_SIGMOID, 0.0f, "sigmoid"},
    {CLT_ACT_TANH, 0.0f, "tanh"},
    {CLT_ACT_GELU, 0.0f, "gelu"},
    {CLT_ACT_SILU, 0.0f, "silu"},
    {CLT_ACT_ELU, 1.0f, "elu"},
    {CLT_ACT_ELU, 0.3f, "elu 0.3"},
    {CLT_ACT_SOFTPLUS, 0.0f, "softplus"},
};

START_TEST(activation_forward_lengths) {
  shape_list n = lengths_list();
  double e;
  for (int k = 0; k < n.count; k++)
    ck_assert_check(
        clt_check_activation_forward(g_ctx, activations[_i].kind, n.v[k],
                                     activations[_i].alpha, k % 3, &e),
        e, TOL, "%s n=%lld round %d", activations[_i].name, (long long)n.v[k],
        k % 3);
}
END_TEST

START_TEST(activation_backward_lengths) {
  shape_list n = lengths_list();
  double e;
  for (int k = 0; k < n.count; k++)
    for (int acc = 0; acc < 2; acc++)
      ck_assert_check(clt_check_activation_backward(
                          g_ctx, activations[_i].kind, n.v[k],
                          activations[_i].alpha, acc, (k + acc) % 3, &e),
                      e, TOL, "%s n=%lld accumulate=%d round %d",
                      activations[_i].name, (long long)n.v[k], acc,
                      (k + acc) % 3);
}
END_TEST

/* gelu's erf is our own (cl/activation.cl normal_cdf: two polynomials,
 * erfc's tail from exp): within 1e-6 of double over [-4, 4], +-25 and a
 * ramp over [-10, 10] (a few float roundings: 1.2e-7 seen on POCL),
 * tighter than the other activations' tolerance, so that a coefficient
 * a digit off fails it. */
START_TEST(gelu_accuracy) {
  double e;
  ck_assert_check(
      clt_check_activation_forward(g_ctx, CLT_ACT_GELU, 4000, 0.0f, 0, &e),
      e, 1e-6, "gelu forward");
  ck_assert_check(clt_check_activation_backward(g_ctx, CLT_ACT_GELU, 4000,
                                                0.0f, false, 0, &e),
                  e, 1e-6, "gelu backward");
}
END_TEST

/* A host array on the device as a fresh 1-D tensor. */
static clt_tensor *upload_new(const float *host, int64_t n) {
  clt_tensor *t;
  int64_t shape[1] = {n};
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_F32, 1, shape, &t));
  ck_assert_ok(clt_tensor_upload(t, host));
  return t;
}

static float *download_new(const clt_tensor *t) {
  float *host = malloc((size_t)clt_tensor_numel(t) * sizeof(float));
  ck_assert_ptr_nonnull(host);
  ck_assert_ok(clt_tensor_download(t, host));
  return host;
}

/* The backward with dy = 1 against central differences of the device's
 * forward, (f(x + h) - f(x - h)) / 2h, away from relu's kink. */
START_TEST(activation_backward_finite_differences) {
  enum { N = 64 };
  const float h = 1e-2f;
  clt_activation kind = activations[_i].kind;
  float alpha = activations[_i].alpha;
  float x[N], xp[N], xm[N], ones[N];
  clt_random_fill(x, N, 7, -3.0f, 3.0f);
  for (int i = 0; i < N; i++) {
    if (fabsf(x[i]) < 2 * h) x[i] = 0.5f;
    xp[i] = x[i] + h;
    xm[i] = x[i] - h;
    ones[i] = 1.0f;
  }
  clt_tensor *tx = upload_new(x, N), *tp = upload_new(xp, N),
             *tm = upload_new(xm, N), *tone = upload_new(ones, N);
  clt_tensor *ty = upload_new(ones, N), *typ = upload_new(ones, N),
             *tym = upload_new(ones, N), *tdx = upload_new(ones, N);
  ck_assert_ok(clt_activation_forward(g_ctx, ty, tx, N, kind, alpha, NULL));
  ck_assert_ok(clt_activation_forward(g_ctx, typ, tp, N, kind, alpha, NULL));
  ck_assert_ok(clt_activation_forward(g_ctx, tym, tm, N, kind, alpha, NULL));
  ck_assert_ok(clt_activation_backward(g_ctx, tdx, tone, tx, ty, N, kind, alpha,
                                       false, NULL));
  float *yp = download_new(typ), *ym = download_new(tym),
        *dx = download_new(tdx);
  for (int i = 0; i < N; i++) {
    double fd = ((double)yp[i] - ym[i]) / (2.0 * h);
    ck_assert_msg(fabs(fd - dx[i]) < 2e-3,
                  "%s at x=%g: backward %g, finite "
                  "difference %g",
                  activations[_i].name, x[i], dx[i], fd);
  }
  free(yp);
  free(ym);
  free(dx);
  clt_tensor *all[] = {tx, tp, tm, tone, ty, typ, tym, tdx};
  for (int i = 0; i < COUNT(all); i++) clt_tensor_destroy(all[i]);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Softmax and losses                                                        */

START_TEST(softmax_forward_grid) {
  int64_t rows, cols;
  grid_at(_i, &rows, &cols);
  double e;
  ck_assert_check(clt_check_softmax_forward(g_ctx, rows, cols, &e), e, TOL,
                  "%lldx%lld", (long long)rows, (long long)cols);
}
END_TEST

START_TEST(softmax_backward_grid) {
  int64_t rows, cols;
  grid_at(_i, &rows, &cols);
  double e;
  ck_assert_check(clt_check_softmax_backward(g_ctx, rows, cols, false, &e), e,
                  TOL, "%lldx%lld", (long long)rows, (long long)cols);
  ck_assert_check(clt_check_softmax_backward(g_ctx, rows, cols, true, &e), e,
                  TOL, "%lldx%lld accumulate", (long long)rows,
                  (long long)cols);
}
END_TEST

/* The softmax backward of a random dy against central differences of
 * sum(dy * softmax(x)): one row, each column perturbed in its own row. */
START_TEST(softmax_backward_finite_differences) {
  enum { C = 10 };
  const float h = 1e-2f;
  float x[C], dy[C], xs[2 * C * C];
  clt_random_fill(x, C, 8, -2.0f, 2.0f);
  clt_random_fill(dy, C, 9, -1.0f, 1.0f);
  for (int j = 0; j < C; j++)
    for (int c = 0; c < C; c++) {
      xs[(2 * j) * C + c] = x[c] + (c == j ? h : 0.0f);
      xs[(2 * j + 1) * C + c] = x[c] - (c == j ? h : 0.0f);
    }
  clt_tensor *tx = upload_new(x, C), *tdy = upload_new(dy, C);
  clt_tensor *ty = upload_new(x, C), *tdx = upload_new(x, C);
  clt_tensor *txs = upload_new(xs, 2 * C * C), *tys = upload_new(xs, 2 * C * C);
  ck_assert_ok(clt_softmax_forward(g_ctx, ty, tx, 1, C));
  ck_assert_ok(clt_softmax_backward(g_ctx, tdx, tdy, ty, 1, C, false));
  ck_assert_ok(clt_softmax_forward(g_ctx, tys, txs, 2 * C, C));
  float *dx = download_new(tdx), *ys = download_new(tys);
  for (int j = 0; j < C; j++) {
    double fd = 0.0;
    for (int c = 0; c < C; c++)
      fd += dy[c] * ((double)ys[(2 * j) * C + c] - ys[(2 * j + 1) * C + c]);
    fd /= 2.0 * h;
    ck_assert_msg(fabs(fd - dx[j]) < 1e-3,
                  "softmax column %d: backward %g, finite difference %g", j,
                  dx[j], fd);
  }
  free(dx);
  free(ys);
  clt_tensor *all[] = {tx, tdy, ty, tdx, txs, tys};
  for (int i = 0; i < COUNT(all); i++) clt_tensor_destroy(all[i]);
}
END_TEST

START_TEST(softmax_xent_grid) {
  static const float scales[] = {1.0f, 5.0f, 30.0f, 1e4f};
  static const float smoothings[] = {0.0f, 0.1f, 1.0f};
  int64_t rows, cols;
  grid_at(_i, &rows, &cols);
  double e;
  for (int s = 0; s < COUNT(scales); s++)
    for (int k = 0; k < COUNT(smoothings); k++)
      for (int w = 0; w <= (k == 1); w++) /* class weights at 0.1 */
        ck_assert_check(clt_check_softmax_xent(g_ctx, rows, cols, scales[s],
                                               smoothings[k], w, &e),
                        e, TOL,
                        "%lldx%lld logits +-%g, label smoothing %g, %s",
                        (long long)rows, (long long)cols, scales[s],
                        smoothings[k], w ? "class weights" : "unweighted");
}
END_TEST

/* The fused gradient against central differences of the device's loss. */
START_TEST(softmax_xent_finite_differences) {
  enum { C = 7 };
  const float h = 1e-2f;
  float x[C], xs[2 * C * C];
  int32_t label = 3, labels[2 * C * C];
  clt_random_fill(x, C, 10, -2.0f, 2.0f);
  for (int j = 0; j < C; j++)
    for (int c = 0; c < C; c++) {
      xs[(2 * j) * C + c] = x[c] + (c == j ? h : 0.0f);
      xs[(2 * j + 1) * C + c] = x[c] - (c == j ? h : 0.0f);
    }
  for (int i = 0; i < 2 * C; i++) labels[i] = label;
  int64_t lshape[1] = {2 * C};
  clt_tensor *tl, *tls;
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_I32, 1, lshape, &tls));
  ck_assert_ok(clt_tensor_upload(tls, labels));
  ck_assert_ok(clt_tensor_view(tls, 0, 1, (int64_t[]){1}, &tl));
  clt_tensor *tx = upload_new(x, C), *tgrad = upload_new(x, C);
  clt_tensor *tloss = upload_new(xs, 2 * C), *tcorr = upload_new(xs, 2 * C);
  clt_tensor *txs = upload_new(xs, 2 * C * C), *tgs = upload_new(xs, 2 * C * C);
  float weights[C];
  for (int c = 0; c < C; c++) weights[c] = c == label ? 2.5f : 0.5f;
  clt_tensor *tw = upload_new(weights, C);
  static const float smoothings[] = {0.0f, 0.2f, 1.0f};
  for (int k = 0; k < COUNT(smoothings); k++) {
    float e = smoothings[k];
    /* the label's class weight 2.5 (the others 0.5, never applied) */
    const clt_tensor *w = k == 1 ? tw : NULL;
    ck_assert_ok(clt_softmax_xent_forward_backward(g_ctx, tloss, tcorr, tgrad,
                                                   tx, tl, w, 1, C, 1.0f, e));
    float *grad = download_new(tgrad);
    ck_assert_ok(clt_softmax_xent_forward_backward(
        g_ctx, tloss, tcorr, tgs, txs, tls, w, 2 * C, C, 1.0f, e));
    float *loss = download_new(tloss);
    for (int j = 0; j < C; j++) {
      double fd = ((double)loss[2 * j] - loss[2 * j + 1]) / (2.0 * h);
      ck_assert_msg(fabs(fd - grad[j]) < 1e-3,
                    "cross-entropy logit %d, label smoothing %g: gradient %g, "
                    "finite difference %g",
                    j, e, grad[j], fd);
    }
    free(grad);
    free(loss);
  }
  clt_tensor_destroy(tl);
  clt_tensor *all[] = {tls, tx, tgrad, tloss, tcorr, txs, tgs, tw};
  for (int i = 0; i < COUNT(all); i++) clt_tensor_destroy(all[i]);
}
END_TEST

/* A label outside [0, cols) gives a NaN loss (reported by the caller) and
 * never counts as correct; labels must be i32. */
START_TEST(softmax_xent_bad_labels) {
  enum { R = 3, C = 4 };
  float x[R * C];
  clt_random_fill(x, R * C, 11, -1.0f, 1.0f);
  int32_t labels[R] = {-1, 2, 4};
  clt_tensor *tx = upload_new(x, R * C), *tgrad = upload_new(x, R * C);
  clt_tensor *tloss = upload_new(x, R), *tcorr = upload_new(x, R), *tlab;
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_I32, 1, (int64_t[]){R}, &tlab));
  ck_assert_ok(clt_tensor_upload(tlab, labels));
  ck_assert_ok(clt_softmax_xent_forward_backward(g_ctx, tloss, tcorr, tgrad, tx,
                                                 tlab, NULL, R, C, 1.0f, 0.1f));
  float *loss = download_new(tloss), *corr = download_new(tcorr);
  ck_assert(isnan(loss[0]));
  ck_assert(isfinite(loss[1]) && loss[1] > 0.0f);
  ck_assert(isnan(loss[2]));
  ck_assert(corr[0] == 0.0f && corr[2] == 0.0f);
  free(loss);
  free(corr);
  /* Float labels are refused, with a message naming the op. */
  ck_assert_int_eq(clt_softmax_xent_forward_backward(
                       g_ctx, tloss, tcorr, tgrad, tx, tx, NULL, R, C, 1.0f,
                       0.0f),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx), "i32"));
  /* Class weights: a weight a class (too few here), f32; a weighted row
   * with a bad label is NaN still, and the good one is weighted. */
  ck_assert_int_eq(clt_softmax_xent_forward_backward(
                       g_ctx, tloss, tcorr, tgrad, tx, tlab, tloss, R, C, 1.0f,
                       0.0f),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(
      strstr(clt_context_last_error(g_ctx), "class weights must be 4"));
  float cw[C] = {1.0f, 1.0f, 3.0f, 1.0f};
  clt_tensor *tcw = upload_new(cw, C);
  ck_assert_ok(clt_softmax_xent_forward_backward(g_ctx, tloss, tcorr, tgrad, tx,
                                                 tlab, NULL, R, C, 1.0f, 0.0f));
  float *plain = download_new(tloss);
  ck_assert_ok(clt_softmax_xent_forward_backward(g_ctx, tloss, tcorr, tgrad, tx,
                                                 tlab, tcw, R, C, 1.0f, 0.0f));
  float *weighted = download_new(tloss);
  ck_assert(isnan(weighted[0]) && isnan(weighted[2]));
  ck_assert_float_eq(weighted[1], 3.0f * plain[1]);
  free(plain);
  free(weighted);
  clt_tensor_destroy(tcw);
  clt_tensor *all[] = {tx, tgrad, tloss, tcorr, tlab};
  for (int i = 0; i < COUNT(all); i++) clt_tensor_destroy(all[i]);
}
END_TEST

/* Rows longer than one work-item's loops may be go to a work-group per
 * row (ops/loss.c), here every row (a loop limit of 1): softmax, its
 * backward, the fused cross-entropy and MSE against the host reference,
 * columns below and past the group size; the arg max ties to the first
 * column as one work-item per row takes it; and 70,000 columns at the
 * context's own limit (one work-item per row gave wrong numbers there on
 * llvmpipe). */
START_TEST(loss_rows_by_groups) {
  static const int64_t full_cols[] = {1, 10, 127, 300, 1000};
  static const int64_t tiny_cols_g[] = {3, 70};
  const int64_t *cols = test_tiny() ? tiny_cols_g : full_cols;
  int ncols = test_tiny() ? COUNT(tiny_cols_g) : COUNT(full_cols);
  int64_t saved = g_ctx->loop_limit;
  double e;
  g_ctx->loop_limit = 1;
  for (int k = 0; k < ncols; k++)
    for (int64_t rows = 1; rows <= 3; rows += 2) {
      int64_t c = cols[k];
      ck_assert_check(clt_check_softmax_forward(g_ctx, rows, c, &e), e, TOL,
                      "groups %lldx%lld", (long long)rows, (long long)c);
      ck_assert_check(clt_check_softmax_backward(g_ctx, rows, c, k & 1, &e), e,
                      TOL, "groups %lldx%lld", (long long)rows, (long long)c);
      ck_assert_check(
          clt_check_softmax_xent(g_ctx, rows, c, 30.0f, 0.0f, false, &e), e,
          TOL, "groups %lldx%lld", (long long)rows, (long long)c);
      ck_assert_check(
          clt_check_softmax_xent(g_ctx, rows, c, 1e4f, 0.1f, false, &e), e,
          TOL, "groups %lldx%lld, label smoothing", (long long)rows,
          (long long)c);
      ck_assert_check(
          clt_check_softmax_xent(g_ctx, rows, c, 5.0f, 0.1f, true, &e), e, TOL,
          "groups %lldx%lld, class weights", (long long)rows, (long long)c);
      for (int kind = 0; kind < 3; kind++)
        ck_assert_check(clt_check_regression_loss(g_ctx, kind, 0.4f, rows, c,
                                                  &e),
                        e, TOL, "groups %lldx%lld, regression loss %d",
                        (long long)rows, (long long)c, kind);
      ck_assert_check(clt_check_sigmoid_xent(g_ctx, rows, c, 30.0f, &e), e,
                      TOL, "groups %lldx%lld, sigmoid xent", (long long)rows,
                      (long long)c);
    }
  /* Two rows whose largest logit is at columns 5 and 200 of 300 alike:
   * the first counts, in both kernels. */
  enum { R = 2, C = 300 };
  float *x = calloc(R * C, sizeof(float));
  ck_assert(x);
  for (int r = 0; r < R; r++) x[r * C + 5] = x[r * C + 200] = 3.0f;
  int32_t labels[R] = {5, 200};
  clt_tensor *tx = upload_new(x, R * C), *tgrad = upload_new(x, R * C);
  clt_tensor *tloss = upload_new(x, R), *tcorr = upload_new(x, R), *tlab;
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_I32, 1, (int64_t[]){R}, &tlab));
  ck_assert_ok(clt_tensor_upload(tlab, labels));
  for (int groups = 0; groups < 2; groups++) {
    g_ctx->loop_limit = groups ? 1 : saved;
    ck_assert_ok(clt_softmax_xent_forward_backward(
        g_ctx, tloss, tcorr, tgrad, tx, tlab, NULL, R, C, 1.0f, 0.5f));
    float *corr = download_new(tcorr);
    ck_assert_msg(corr[0] == 1.0f && corr[1] == 0.0f,
                  "groups %d: ties counted %g, %g", groups, corr[0], corr[1]);
    free(corr);
  }
  g_ctx->loop_limit = saved;
  free(x);
  clt_tensor *all[] = {tx, tgrad, tloss, tcorr, tlab};
  for (int i = 0; i < COUNT(all); i++) clt_tensor_destroy(all[i]);
  if (test_tiny()) return;
  ck_assert_check(clt_check_softmax_forward(g_ctx, 2, 70000, &e), e, TOL,
                  "2x70000");
  ck_assert_check(clt_check_softmax_backward(g_ctx, 2, 70000, true, &e), e, TOL,
                  "2x70000");
  ck_assert_check(
      clt_check_softmax_xent(g_ctx, 2, 70000, 5.0f, 0.1f, true, &e), e, TOL,
      "2x70000, class weights");
  for (int kind = 0; kind < 3; kind++)
    ck_assert_check(clt_check_regression_loss(g_ctx, kind, 0.4f, 2, 70000, &e),
                    e, TOL, "2x70000, regression loss %d", kind);
  ck_assert_check(clt_check_sigmoid_xent(g_ctx, 2, 70000, 30.0f, &e), e, TOL,
                  "2x70000, sigmoid xent");
}
END_TEST

/* Sigmoid and binary cross-entropy: logits within 4 of 0, and of +-30. */
START_TEST(sigmoid_xent_grid) {
  int64_t rows, cols;
  grid_at(_i, &rows, &cols);
  double e;
  for (int k = 0; k < 2; k++)
    ck_assert_check(clt_check_sigmoid_xent(g_ctx, rows, cols, k ? 30.0f : 1.0f,
                                           &e),
                    e, TOL, "%lldx%lld, logits %s", (long long)rows,
                    (long long)cols, k ? "+-30" : "within 4");
}
END_TEST

/* mse, mae and huber (delta 0.4 of differences in [-2, 2]: both sides) */
START_TEST(regression_loss_grid) {
  int64_t rows, cols;
  grid_at(_i, &rows, &cols);
  double e;
  for (int kind = 0; kind < 3; kind++)
    ck_assert_check(clt_check_regression_loss(g_ctx, kind, 0.4f, rows, cols,
                                              &e),
                    e, TOL, "%lldx%lld, regression loss %d", (long long)rows,
                    (long long)cols, kind);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Reductions                                                                */

/* Dense bias gradients: [rows, cols] summed over rows (inner 1). */
START_TEST(sum_channels_dense_grid) {
  int64_t rows, cols;
  grid_at(_i, &rows, &cols);
  double e;
  for (int acc = 0; acc < 2; acc++)
    ck_assert_check(clt_check_sum_channels(g_ctx, rows, cols, 1, acc, &e), e,
                    TOL, "%lldx%lldx1 accumulate=%d", (long long)rows,
                    (long long)cols, acc);
  /* with a fused ReLU's gradient on the way */
  ck_assert_check(clt_check_sum_columns_relu(g_ctx, rows, cols, &e), e, TOL,
                  "through relu, %lldx%lld", (long long)rows, (long long)cols);
}
END_TEST

/* Convolution bias gradients: [outer, channels, inner], inner = H * W,
 * including counts per channel above the work-group size. */
START_TEST(sum_channels_conv_shapes) {
  static const int64_t full[][3] = {{1, 1, 1},   {1, 3, 49},  {1, 10, 300},
                                    {3, 7, 1},   {3, 7, 49},  {33, 3, 49},
                                    {7, 1, 127}, {2, 33, 10}, {1, 1, 1000}};
  static const int64_t tiny[][3] = {{1, 1, 1}, {2, 3, 5}};
  int count = test_tiny() ? COUNT(tiny) : COUNT(full);
  double e;
  for (int k = 0; k < count; k++) {
    const int64_t *s = test_tiny() ? tiny[k] : full[k];
    for (int acc = 0; acc < 2; acc++)
      ck_assert_check(clt_check_sum_channels(g_ctx, s[0], s[1], s[2], acc, &e),
                      e, TOL, "%lldx%lldx%lld accumulate=%d", (long long)s[0],
                      (long long)s[1], (long long)s[2], acc);
  }
}
END_TEST

/* The reductions' groups hold the items that have work, a power of two,
 * the device's group at most (ops.h clt_group_items, clt_runs_busy). */
START_TEST(group_items_fit_the_work) {
  size_t wg = g_ctx->work_group;
  ck_assert_uint_eq(clt_group_items(g_ctx, 0), 1);
  ck_assert_uint_eq(clt_group_items(g_ctx, 1), 1);
  ck_assert_uint_eq(clt_group_items(g_ctx, 3), wg < 4 ? wg : 4);
  ck_assert_uint_eq(clt_group_items(g_ctx, 16), wg < 16 ? wg : 16);
  ck_assert_uint_eq(clt_group_items(g_ctx, 17), wg < 32 ? wg : 32);
  ck_assert_uint_eq(clt_group_items(g_ctx, (int64_t)wg), wg);
  ck_assert_uint_eq(clt_group_items(g_ctx, 1000 * (int64_t)wg), wg);
  ck_assert_int_eq(clt_runs_busy(49), 3);  /* 3 runs, a tail of 1 */
  ck_assert_int_eq(clt_runs_busy(46), 14); /* 2 runs, a tail of 14 */
  ck_assert_int_eq(clt_runs_busy(784), 49);
  ck_assert_int_eq(clt_runs_busy(0), 0);
}
END_TEST

START_TEST(sum_into_lengths) {
  shape_list n = lengths_list();
  double e;
  for (int k = 0; k < n.count; k++) {
    long long len = (long long)n.v[k];
    ck_assert_check(clt_check_sum_into(g_ctx, n.v[k], 0, 1.0f, &e), e, TOL,
                    "n=%lld", len);
    ck_assert_check(clt_check_sum_into(g_ctx, n.v[k], 4, -0.5f, &e), e, TOL,
                    "n=%lld", len);
    ck_assert_check(clt_check_sumsq_into(g_ctx, n.v[k], 0, &e), e, TOL,
                    "n=%lld", len);
    ck_assert_check(clt_check_sumsq_into(g_ctx, n.v[k], 3, &e), e, TOL,
                    "n=%lld", len);
    ck_assert_check(clt_check_sum2_into(g_ctx, n.v[k], 0, 0.25f, 1, 1.0f, &e),
                    e, TOL, "two sums, n=%lld", len);
    ck_assert_check(clt_check_sum2_into(g_ctx, n.v[k], 4, 1.0f, 2, -2.0f, &e),
                    e, TOL, "two sums, n=%lld", len);
  }
  /* A device that ends a work-item's loops early (ops.h
   * clt_device_loop_cap) gets the sums in parts: a cap of 200 forced,
   * parts of 36 groups' worth. */
  int64_t cap;
  ck_assert_ok(clt_device_loop_cap(g_ctx, &cap));
  int64_t saved = g_ctx->loop_cap, part = 36 * (int64_t)g_ctx->work_group;
  g_ctx->loop_cap = 200;
  static const int64_t cut[] = {1, 3, 2, 7};
  for (int k = 0; k < COUNT(cut); k++) {
    int64_t len = cut[k] * part + (k == 1 ? 0 : 5);
    ck_assert_check(clt_check_sum_into(g_ctx, len, 2, 0.75f, &e), e, TOL,
                    "n=%lld in parts of %lld", (long long)len,
                    (long long)part);
    ck_assert_check(clt_check_sumsq_into(g_ctx, len, 1, &e), e, TOL,
                    "n=%lld in parts of %lld", (long long)len,
                    (long long)part);
    ck_assert_check(clt_check_sum2_into(g_ctx, len, 3, 0.5f, 0, 1.0f, &e), e,
                    TOL, "two sums, n=%lld in parts of %lld", (long long)len,
                    (long long)part);
  }
  g_ctx->loop_cap = saved;
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Optimizer updates                                                         */

static const struct {
  const char *name;
  clt_sgd_params hp;
} sgd_variants[] = {
    {"plain", {.lr = 0.1f}},
    {"weight decay", {.lr = 0.1f, .weight_decay = 0.05f}},
    {"momentum", {.lr = 0.1f, .momentum = 0.9f}},
    {"momentum dampening", {.lr = 0.1f, .momentum = 0.9f, .dampening = 0.5f}},
    {"nesterov", {.lr = 0.05f, .momentum = 0.8f, .nesterov = true}},
    {"nesterov weight decay",
     {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 0.01f, .nesterov = true}},
    /* max_norm 0.05 clips every gradient here, 100 none. */
    {"clipped", {.lr = 0.1f, .max_norm = 0.05f}},
    {"momentum clipped",
     {.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f, .max_norm = 0.05f}},
    {"momentum clip inactive",
     {.lr = 0.1f, .momentum = 0.9f, .max_norm = 100.0f}},
};

START_TEST(sgd_variants_steps) {
  static const int64_t full[] = {1, 7, 257, 1000}, tiny[] = {1, 5};
  const int64_t *n = test_tiny() ? tiny : full;
  int count = test_tiny() ? COUNT(tiny) : COUNT(full);
  double e;
  for (int k = 0; k < count; k++)
    for (int steps = 1; steps <= 3; steps += 2)
      ck_assert_check(
          clt_check_sgd_step(g_ctx, n[k], &sgd_variants[_i].hp, steps, &e), e,
          TOL, "sgd %s n=%lld steps=%d", sgd_variants[_i].name, (long long)n[k],
          steps);
}
END_TEST

static const struct {
  const char *name;
  clt_adam_params hp;
} adam_variants[] = {
    {"adam", {.lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f}},
    {"adam betas", {.lr = 0.1f, .beta1 = 0.5f, .beta2 = 0.9f, .eps = 1e-3f}},
    {"adam weight decay",
     {.lr = 0.01f,
      .beta1 = 0.9f,
      .beta2 = 0.999f,
      .eps = 1e-8f,
      .weight_decay = 0.1f}},
    {"adamw",
     {.lr = 0.01f,
      .beta1 = 0.9f,
      .beta2 = 0.999f,
      .eps = 1e-8f,
      .weight_decay = 0.1f,
      .decoupled = true}},
    {"adamw clipped",
     {.lr = 0.01f,
      .beta1 = 0.9f,
      .beta2 = 0.999f,
      .eps = 1e-8f,
      .weight_decay = 0.01f,
      .decoupled = true,
      .max_norm = 0.05f}},
    {"adam clipped",
     {.lr = 0.01f,
      .beta1 = 0.9f,
      .beta2 = 0.999f,
      .eps = 1e-8f,
      .weight_decay = 0.01f,
      .max_norm = 0.05f}},
};

START_TEST(adam_variants_steps) {
  static const int64_t full[] = {1, 7, 257, 1000}, tiny[] = {1, 5};
  const int64_t *n = test_tiny() ? tiny : full;
  int count = test_tiny() ? COUNT(tiny) : COUNT(full);
  double e;
  for (int k = 0; k < count; k++)
    for (int steps = 1; steps <= 3; steps += 2)
      ck_assert_check(
          clt_check_adam_step(g_ctx, n[k], &adam_variants[_i].hp, steps, &e), e,
          TOL, "%s n=%lld steps=%d", adam_variants[_i].name, (long long)n[k],
          steps);
}
END_TEST

static const struct {
  const char *name;
  clt_rmsprop_params hp;
} rmsprop_variants[] = {
    {"rmsprop", {.lr = 0.01f, .alpha = 0.99f, .eps = 1e-8f}},
    {"rmsprop alpha eps", {.lr = 0.1f, .alpha = 0.5f, .eps = 1e-2f}},
    {"rmsprop weight decay",
     {.lr = 0.01f, .alpha = 0.99f, .eps = 1e-8f, .weight_decay = 0.1f}},
    {"rmsprop momentum",
     {.lr = 0.01f, .alpha = 0.9f, .eps = 1e-8f, .momentum = 0.9f}},
    {"rmsprop centered",
     {.lr = 0.01f, .alpha = 0.99f, .eps = 1e-8f, .centered = true}},
    {"rmsprop centered momentum clipped",
     {.lr = 0.01f,
      .alpha = 0.9f,
      .eps = 1e-6f,
      .weight_decay = 0.01f,
      .momentum = 0.5f,
      .centered = true,
      .max_norm = 0.05f}},
    {"rmsprop clip inactive",
     {.lr = 0.01f, .alpha = 0.99f, .eps = 1e-8f, .max_norm = 100.0f}},
};

/* The element-wise kernels (cl/prelude.cl FOR_RUN) with runs of 1, 3
 * and 256 elements a work-item (ctx->element_run, which the plans choose
 * per device) give the reference's numbers on lengths the runs do not
 * divide: fill, the sums and scaling, the fp16 roundings and
 * conversions, an activation forward and backward, each optimizer. */
static const size_t element_runs[] = {1, 3, 256};

START_TEST(element_runs_lengths) {
  g_ctx->element_run = element_runs[_i];
  shape_list n = lengths_list();
  double e;
  for (int k = 0; k < n.count; k++) {
    int64_t len = n.v[k];
    int r = k % 3;
    ck_assert_check(clt_check_fill(g_ctx, len, &e), e, 0.0, "fill n=%lld",
                    (long long)len);
    ck_assert_check(clt_check_add(g_ctx, len, k % 2, r, &e), e, TOL_EXACT,
                    "add n=%lld", (long long)len);
    ck_assert_check(clt_check_add_relu(g_ctx, len, r, &e), e, TOL_EXACT,
                    "add relu n=%lld", (long long)len);
    ck_assert_check(clt_check_scale(g_ctx, len, -0.75f, k % 2, r, &e), e,
                    TOL_EXACT, "scale n=%lld", (long long)len);
    ck_assert_check(clt_check_half_round_trip(g_ctx, len, &e), e, 0.0,
                    "f16 round trip n=%lld", (long long)len);
    ck_assert_check(clt_check_half_round_in_place(g_ctx, len, &e), e, 0.0,
                    "f16 round in place n=%lld", (long long)len);
    ck_assert_check(
        clt_check_activation_forward(g_ctx, CLT_ACT_GELU, len, 0.0f, r, &e), e,
        TOL, "gelu n=%lld", (long long)len);
    ck_assert_check(clt_check_activation_backward(g_ctx, CLT_ACT_SIGMOID, len,
                                                  0.0f, k % 2, r, &e),
                    e, TOL, "sigmoid backward n=%lld", (long long)len);
    /* the clipped variants: sgd's momentum, adamw, rmsprop's centered
     * with momentum */
    ck_assert_check(clt_check_sgd_step(g_ctx, len, &sgd_variants[7].hp, 3, &e),
                    e, TOL, "sgd %s n=%lld", sgd_variants[7].name,
                    (long long)len);
    ck_assert_check(
        clt_check_adam_step(g_ctx, len, &adam_variants[4].hp, 3, &e), e, TOL,
        "%s n=%lld", adam_variants[4].name, (long long)len);
    ck_assert_check(
        clt_check_rmsprop_step(g_ctx, len, &rmsprop_variants[5].hp, 3, &e), e,
        TOL, "%s n=%lld", rmsprop_variants[5].name, (long long)len);
  }
  g_ctx->element_run = 0;
}
END_TEST

START_TEST(rmsprop_variants_steps) {
  static const int64_t full[] = {1, 7, 257, 1000}, tiny[] = {1, 5};
  const int64_t *n = test_tiny() ? tiny : full;
  int count = test_tiny() ? COUNT(tiny) : COUNT(full);
  double e;
  for (int k = 0; k < count; k++)
    for (int steps = 1; steps <= 3; steps += 2)
      ck_assert_check(clt_check_rmsprop_step(g_ctx, n[k],
                                             &rmsprop_variants[_i].hp, steps,
                                             &e),
                      e, TOL, "%s n=%lld steps=%d", rmsprop_variants[_i].name,
                      (long long)n[k], steps);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Convolution                                                               */

/* C, H, W, KH, KW, stride, padding and dilation along h and w; the checks
 * derive OH and OW. */
#define WIN(c, h, w, kh, kw, sh, sw, ph, pw, dh, dw)                           \
  {.C = (c), .H = (h), .W = (w), .KH = (kh), .KW = (kw), .stride_h = (sh),     \
   .stride_w = (sw), .pad_h = (ph), .pad_w = (pw), .dil_h = (dh),              \
   .dil_w = (dw)}

static const clt_window full_conv_windows[] = {
    WIN(1, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1),   /* "same" 3x3 */
    WIN(3, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1),   /* stride 2, padding */
    WIN(3, 5, 5, 1, 1, 1, 1, 0, 0, 1, 1),   /* 1x1 */
    WIN(3, 7, 7, 1, 1, 2, 2, 0, 0, 1, 1),   /* 1x1 stride 2: pixels unread */
    WIN(1, 11, 9, 5, 5, 2, 2, 2, 2, 1, 1),  /* 5x5 stride 2 */
    WIN(3, 9, 11, 3, 3, 1, 1, 2, 2, 2, 2),  /* dilation 2 */
    WIN(1, 13, 7, 5, 3, 2, 1, 2, 0, 2, 1),  /* every parameter differs */
    WIN(3, 5, 5, 3, 3, 1, 1, 3, 3, 1, 1),   /* windows wholly in padding */
    WIN(1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1),   /* one pixel */
    WIN(3, 33, 31, 5, 5, 1, 1, 2, 2, 1, 1), /* above the work-group size */
    WIN(2, 6, 5, 3, 3, 1, 1, 0, 0, 1, 1),   /* valid 3x3: windows inside */
    WIN(1, 6, 28, 3, 3, 1, 1, 0, 0, 1, 1),  /* valid, 26 wide: vectors */
    WIN(2, 5, 14, 3, 3, 1, 1, 1, 1, 1, 1),  /* 14 wide: shorter vectors */
    WIN(2, 6, 8, 3, 3, 1, 1, 2, 2, 1, 1),   /* padding K-1: 10 wide out of
                                               8 (the tiled data gradient's
                                               padding 0) */
};
static const clt_window tiny_conv_windows[] = {
    WIN(1, 5, 3, 3, 3, 2, 2, 1, 1, 1, 1),
    WIN(3, 3, 3, 1, 1, 1, 1, 0, 0, 1, 1),
    WIN(1, 5, 5, 3, 3, 1, 1, 2, 2, 2, 2),
    WIN(2, 5, 4, 3, 3, 1, 1, 0, 0, 1, 1), /* valid 3x3: windows inside */
    WIN(1, 4, 19, 3, 3, 1, 1, 1, 0, 1, 1), /* 17 wide: vectors */
    WIN(1, 3, 12, 3, 3, 1, 1, 0, 1, 1, 1), /* 12 wide: shorter vectors */
    WIN(1, 3, 8, 3, 3, 1, 1, 2, 2, 1, 1),  /* padding K-1, 10 wide */
};

static const clt_window *conv_window(int i) {
  return test_tiny() ? &tiny_conv_windows[i] : &full_conv_windows[i];
}
static int conv_window_count(void) {
  return test_tiny() ? COUNT(tiny_conv_windows) : COUNT(full_conv_windows);
}

static void window_str(const clt_window *w, char *buf, size_t size) {
  snprintf(buf, size, "C%lld %lldx%lld k%lldx%lld s%lld,%lld p%lld,%lld "
           "d%lld,%lld", (long long)w->C, (long long)w->H, (long long)w->W,
           (long long)w->KH, (long long)w->KW, (long long)w->stride_h,
           (long long)w->stride_w, (long long)w->pad_h, (long long)w->pad_w,
           (long long)w->dil_h, (long long)w->dil_w);
}

/* w with its output size. */
static clt_window with_out(const clt_window *w) {
  clt_window o = *w;
  o.OH = clt_window_out(w->H, w->KH, w->pad_h, w->stride_h, w->dil_h);
  o.OW = clt_window_out(w->W, w->KW, w->pad_w, w->stride_w, w->dil_w);
  return o;
}

/* sum of a[i] * b[i] in double, and in *mag the sum of |a[i] * b[i]|. */
static double dot(const float *a, const float *b, int64_t n, double *mag) {
  double s = 0.0, m = 0.0;
  for (int64_t i = 0; i < n; i++) {
    s += (double)a[i] * b[i];
    m += fabs((double)a[i] * b[i]);
  }
  if (mag) *mag = m > *mag ? m : *mag;
  return s;
}

/* A backward op is the adjoint of its (linear) forward A:
 * <A x, d> = <x, A^T d>, with the device's own ops. */
static void assert_adjoint(double lhs, double rhs, double mag,
                           const char *what) {
  ck_assert_msg(fabs(lhs - rhs) <= 1e-5 * (mag > 1.0 ? mag : 1.0),
                "%s: <A x, d> = %.9g but <x, A^T d> = %.9g", what, lhs, rhs);
}

/* The fp16 products' kernel (cl/mma.cl, test_gemm.c has the rest) with its
 * tensor-core instruction emulated in OpenCL C, so that oclgrind sees its
 * local memory: every tile configuration, the four transposes, a batch of
 * two, sizes that cut the 16 x 8 x 16 tiles and the k-blocks. */
START_TEST(gemm_mma_emulated) {
  clt_context *ctx = open_emulated_mma(NULL);
  int64_t m = test_tiny() ? 17 : 70, n = test_tiny() ? 9 : 45,
          k = test_tiny() ? 35 : 77;
  for (int c = 0; c < CLT_FP16_CONFIGS; c++)
    for (int t = 0; t < 4 && !mma_config_refused(ctx, c); t++) {
      if (test_tiny() && c > 0 && t > 0) continue;
      /* Tiny (oclgrind, which interprets every work-item): of the ring
       * configurations 64x128, 128x128 with 8 warps and 128x256; emulated,
       * "ldm" builds the same kernel as the plain ring, and 128x128 with 4
       * warps differs from 64x128 only in its tile's height. Of the
       * warpgroup ones 64x128 (one warpgroup, a block's products left
       * running), 128x128 (two, finished first) and 128x256 k16 (the
       * widest instruction, the other swizzle); the rest differ from
       * these in their layout without swizzle or a compiler hint. */
      const char *name = clt_fp16_config_name(c);
      if (test_tiny() && (!strcmp(name, "128x128 ring") ||
                          (strstr(name, " ldm") && strncmp(name, "128x256", 7))))
        continue;
      if (test_tiny() && strstr(name, "wgmma") &&
          strcmp(name, "64x128 wgmma") && strcmp(name, "128x128 wgmma") &&
          strcmp(name, "128x256 wgmma k16"))
        continue;
      clt_transpose ta = t & 1 ? CLT_TRANS : CLT_NO_TRANS;
      clt_transpose tb = t & 2 ? CLT_TRANS : CLT_NO_TRANS;
      double e = -1.0;
      clt_status st = clt_check_gemm_mma(ctx, c, ta, tb, m, n, k, 1.0f, 0.5f, 2, &e);
      ck_assert_msg(st == CLT_OK && e <= TOL,
                    "%s transposes %d: %s, max error %.3g (%s)",
                    clt_fp16_config_name(c), t, clt_status_string(st), e,
                    clt_context_last_error(ctx));
    }
  /* 3xTF32 (the same kernel on tf32 pairs, its packing writing both
   * parts): tiny, 128x128 (two warpgroups, 3 products a step) and 64x64
   * (a 6-block ring, one block's products left running), one transpose
   * each; else every configuration and transpose. */
  for (int c = 0; c < CLT_TF32X3_CONFIGS; c++)
    for (int t = 0; t < 4 && !mma_config_refused(ctx, CLT_MMA_TF32X3(c));
         t++) {
      const char *name = clt_tf32x3_config_name(c);
      if (test_tiny() && (strcmp(name, "3xtf32 128x128") != 0 || t != 1) &&
          (strcmp(name, "3xtf32 64x64") != 0 || t != 2))
        continue;
      clt_transpose ta = t & 1 ? CLT_TRANS : CLT_NO_TRANS;
      clt_transpose tb = t & 2 ? CLT_TRANS : CLT_NO_TRANS;
      double e = -1.0;
      clt_status st =
          clt_check_gemm_tf32x3(ctx, c, ta, tb, m, n, k, 1.0f, 0.5f, 2, &e);
      ck_assert_msg(st == CLT_OK && e <= 1e-6,
                    "%s transposes %d: %s, max error %.3g (%s)", name, t,
                    clt_status_string(st), e, clt_context_last_error(ctx));
    }
  clt_context_destroy(ctx);
}
END_TEST

/* Our own fp32 GEMM kernels (cl/gemm.cl; test_gemm.c has more shapes),
 * on sizes small enough for oclgrind that still reach every path: a
 * partial tile of rows, a strip of columns moved back to end at n (its
 * first columns skipped), C read for beta, k past a vector with a masked
 * tail and k below one (scalars), C^T's strided stores, a batch of two. */
START_TEST(gemm_blocked_tiles) {
  static const struct {
    clt_transpose ta, tb;
    int64_t m, n, k;
    float beta;
  } cases[] = {
      {CLT_NO_TRANS, CLT_NO_TRANS, 5, 33, 3, 0.5f},
      {CLT_TRANS, CLT_NO_TRANS, 9, 32, 2, 0.0f},
      {CLT_NO_TRANS, CLT_NO_TRANS, 3, 9, 2, 0.0f},
      {CLT_TRANS, CLT_NO_TRANS, 5, 13, 3, 1.0f},
      {CLT_NO_TRANS, CLT_TRANS, 5, 3, 17, 0.5f},
      {CLT_NO_TRANS, CLT_TRANS, 9, 5, 4, 0.0f},
      {CLT_TRANS, CLT_NO_TRANS, 33, 3, 2, 0.5f},
      {CLT_TRANS, CLT_TRANS, 34, 5, 3, 0.0f},
  };
  int ran[CLT_GEMM_BLOCKED_CONFIGS] = {0};
  for (int c = 0; c < CLT_GEMM_BLOCKED_CONFIGS; c++)
    for (int i = 0; i < COUNT(cases); i++) {
      double e = -1.0;
      clt_status st = clt_check_gemm_blocked(
          g_ctx, c, cases[i].ta, cases[i].tb, cases[i].m, cases[i].n,
          cases[i].k, 1.5f, cases[i].beta, 2, &e);
      if (st == CLT_ERR_UNSUPPORTED) continue;
      ran[c]++;
      ck_assert_msg(st == CLT_OK && e <= TOL,
                    "%s case %d: %s, max error %.3g (%s)",
                    clt_gemm_blocked_config_name(c), i, clt_status_string(st),
                    e, clt_context_last_error(g_ctx));
    }
  for (int c = 0; c < CLT_GEMM_BLOCKED_CONFIGS; c++)
    ck_assert_msg(ran[c] >= 2, "%s ran %d cases",
                  clt_gemm_blocked_config_name(c), ran[c]);
}
END_TEST

/* The public convolution op (the layer's path) and CLBlast's convgemm
 * against a direct host convolution, odd shape, stride, padding,
 * dilation, bias. */
START_TEST(conv2d_public_op) {
  clt_conv2d_shape sh = {.batch = 3, .C = 2, .H = 7, .W = 9, .filters = 5,
                         .KH = 3, .KW = 2, .stride_h = 2, .stride_w = 1,
                         .pad_h = 1, .pad_w = 0, .dil_h = 1, .dil_w = 2};
  int64_t oh, ow, ncol, ntmp;
  ck_assert_ok(clt_conv2d_sizes(&sh, &oh, &ow, &ncol, &ntmp));
  ck_assert_int_eq(oh, 4);
  ck_assert_int_eq(ow, 7);
  int64_t nx = 3 * 2 * 7 * 9, nw = 5 * 2 * 3 * 2, ny = 3 * 5 * oh * ow;
  float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc(5 * 4),
        *y = malloc(ny * 4), *ref = calloc(ny, 4);
  for (int64_t i = 0; i < nx; i++) x[i] = (float)((i * 37) % 11) / 5.0f - 1;
  for (int64_t i = 0; i < nw; i++) w[i] = (float)((i * 13) % 7) / 3.0f - 1;
  for (int i = 0; i < 5; i++) b[i] = 0.1f * (float)i;
  for (int n = 0; n < 3; n++)
    for (int f = 0; f < 5; f++)
      for (int i = 0; i < oh; i++)
        for (int j = 0; j < ow; j++) {
          double acc = b[f];
          for (int c = 0; c < 2; c++)
            for (int p = 0; p < 3; p++)
              for (int q = 0; q < 2; q++) {
                int64_t r = i * 2 - 1 + p, t = j + 2 * q;
                if (r < 0 || r >= 7 || t < 0 || t >= 9) continue;
                acc += (double)x[((n * 2 + c) * 7 + r) * 9 + t] *
                       w[((f * 2 + c) * 3 + p) * 2 + q];
              }
          ref[((n * 5 + f) * oh + i) * ow + j] = (float)acc;
        }
  clt_tensor *tx, *tw, *tb, *tc, *tt, *ty;
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_F32, 1, &nx, &tx));
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_F32, 1, &nw, &tw));
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_F32, 1, (int64_t[]){5}, &tb));
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_F32, 1, &ncol, &tc));
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_F32, 1, &ntmp, &tt));
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_F32, 1, &ny, &ty));
  ck_assert_ok(clt_tensor_upload(tx, x));
  ck_assert_ok(clt_tensor_upload(tw, w));
  ck_assert_ok(clt_tensor_upload(tb, b));
  ck_assert_ok(clt_conv2d_forward(g_ctx, &sh, tx, tw, tb, tc, tt, ty));
  ck_assert_ok(clt_tensor_download(ty, y));
  for (int64_t i = 0; i < ny; i++)
    ck_assert_msg(fabsf(y[i] - ref[i]) < 1e-4f, "y[%lld] %g, want %g",
                  (long long)i, (double)y[i], (double)ref[i]);
  if (!test_tiny()) { /* oclgrind runs no CLBlast */
    ck_assert_ok(clt_conv2d_forward_convgemm(g_ctx, &sh, tx, tw, ty));
    ck_assert_ok(clt_tensor_download(ty, y));
    for (int64_t i = 0; i < ny; i++) {
      int64_t f = i / (oh * ow) % 5;
      ck_assert_msg(fabsf(y[i] + b[f] - ref[i]) < 1e-4f, "convgemm y[%lld]",
                    (long long)i);
    }
  }
  sh.KH = 9; /* does not fit */
  ck_assert_int_eq(clt_conv2d_forward(g_ctx, &sh, tx, tw, tb, tc, tt, ty),
                   CLT_ERR_SHAPE);
  clt_tensor *all[] = {tx, tw, tb, tc, tt, ty};
  for (int i = 0; i < 6; i++) clt_tensor_destroy(all[i]);
  free(x), free(w), free(b), free(y), free(ref);
}
END_TEST

/* Both layouts of the kernels (a work-item per row and per element), for
 * both layouts of the unfold (col and its transpose, row). */
START_TEST(im2col_windows) {
  static const int64_t full_batches[] = {1, 3}, tiny_batches[] = {1, 2};
  const int64_t *batches = test_tiny() ? tiny_batches : full_batches;
  char where[128];
  window_str(conv_window(_i), where, sizeof where);
  double e;
  for (int layout = 0; layout < 4; layout++) {
    clt_window w = *conv_window(_i);
    w.per_element = layout & 1;
    w.rows = layout >> 1;
    for (int b = 0; b < 2; b++) {
      ck_assert_check(clt_check_im2col(g_ctx, batches[b], &w, &e), e, 0.0,
                      "%s batch %lld per element %d rows %d", where,
                      (long long)batches[b], w.per_element, w.rows);
      for (int acc = 0; acc < 2; acc++) {
        int r = (layout + b + acc) % 3;
        ck_assert_check(clt_check_col2im(g_ctx, batches[b], &w, acc, r, &e), e,
                        TOL,
                        "%s batch %lld accumulate=%d per element %d rows %d "
                        "round %d",
                        where, (long long)batches[b], acc, w.per_element,
                        w.rows, r);
      }
    }
  }
}
END_TEST

/* The tiled direct convolution in blocks of 16 and 8 columns, each with
 * both register tiles (8 filters by 3 rows and the small 4 by 2; the
 * weight gradient's 8 by 3 and 3 by 3): the forward on every stride-1
 * window (filters 1, 5 and 17: one tile of 8 filters partly used, three;
 * the small tiles: 4 filters a work-item from the second half of a
 * weight tile too), with and without the bias and a fused
 * ReLU, each rounding mode; the weight gradient; the data gradient,
 * overwritten and added, where the padding is at most dil*(K-1); against
 * the host reference. */
START_TEST(conv_tiled_windows) {
  char where[128];
  clt_window win = *conv_window(_i);
  const clt_window *w = &win;
  win.OH = clt_window_out(win.H, win.KH, win.pad_h, win.stride_h, win.dil_h);
  win.OW = clt_window_out(win.W, win.KW, win.pad_w, win.stride_w, win.dil_w);
  window_str(w, where, sizeof where);
  static const int64_t batches[] = {1, 3, 2}, filters[] = {1, 5, 17};
  bool stride1 = w->stride_h == 1 && w->stride_w == 1;
  bool pads = w->pad_h <= w->dil_h * (w->KH - 1) &&
              w->pad_w <= w->dil_w * (w->KW - 1);
  double e;
  static const int shapes[] = {8, 16, 8 | CLT_TILED_SMALL,
                               16 | CLT_TILED_SMALL};
  for (int si = 0; si < 4; si++) {
    int v = shapes[si];
    ck_assert_int_eq(clt_conv_tiled_fits(g_ctx, w, v), stride1);
    ck_assert_int_eq(clt_conv_tiled_dgrad_fits(g_ctx, w, 5, v),
                     stride1 && pads);
    ck_assert_int_eq(clt_conv_tiled_wgrad_fits(g_ctx, w, 5, v), stride1);
    for (int k = 0; stride1 && k < 3; k++)
      for (int flags = 0; flags < 4; flags++) {
        bool bias = flags & 1, relu = flags >> 1;
        int r = (flags + k) % 3;
        ck_assert_check(clt_check_conv_tiled_forward(g_ctx, v, batches[k],
                                                     filters[k], w, bias,
                                                     relu, r, &e),
                        e, TOL, "%s tiled %#x forward bias %d relu %d round %d",
                        where, v, bias, relu, r);
        if (flags == 0)
          ck_assert_check(clt_check_conv_tiled_wgrad(g_ctx, v, batches[k],
                                                     filters[k], w, &e),
                          e, TOL, "%s tiled %#x weight gradient", where, v);
        if (!pads || flags > 1) continue;
        ck_assert_check(clt_check_conv_tiled_dgrad(g_ctx, v, batches[k],
                                                   filters[k], w, flags, r,
                                                   &e),
                        e, TOL, "%s tiled %#x data gradient accumulate %d "
                        "round %d", where, v, flags, r);
      }
  }
}
END_TEST

/* The direct convolution, forward and weight gradient, in both layouts
 * (a work-item per row and per element), with and without the bias and a
 * fused ReLU, against the host reference. */
START_TEST(conv_direct_windows) {
  char where[128];
  window_str(conv_window(_i), where, sizeof where);
  static const int64_t batches[] = {1, 3}, filters[] = {1, 5};
  double e;
  for (int layout = 0; layout < 2; layout++)
    for (int k = 0; k < 2; k++)
      for (int flags = 0; flags < 4; flags++) {
        clt_window w = *conv_window(_i);
        w.per_element = layout;
        bool bias = flags & 1, relu = flags >> 1;
        int r = (flags + k) % 3;
        ck_assert_check(clt_check_conv_direct_forward(g_ctx, batches[k],
                                                      filters[k], &w, bias,
                                                      relu, r, &e),
                        e, TOL,
                        "%s forward per element %d bias %d relu %d round %d",
                        where, layout, bias, relu, r);
        ck_assert_check(clt_check_conv_direct_wgrad(g_ctx, batches[k],
                                                    filters[k], &w, bias,
                                                    relu, &e),
                        e, TOL,
                        "%s weight gradient per element %d bias %d relu %d",
                        where, layout, bias, relu);
      }
}
END_TEST

/* A weight gradient sums batch*OH*OW products (3069 here) in one f32
 * accumulator per chunk. */
#define TOL_SUM 1e-4

/* The implicit-GEMM convolution (cl/igemm.cl) in every tile
 * configuration on every window: forward with and without the bias and a
 * fused ReLU, the data gradient written and added, the weight gradient in
 * one chunk and in three, against the host reference. */
START_TEST(conv_implicit_windows) {
  char where[128];
  window_str(conv_window(_i), where, sizeof where);
  static const int64_t batches[] = {1, 3}, filters[] = {1, 5};
  clt_window w = *conv_window(_i);
  double e;
  /* Under oclgrind (tiny), one batch: it interprets every work-item. */
  int nb = test_tiny() ? 1 : 2;
  for (int config = 0; config < CLT_IGEMM_FP32_CONFIGS; config++)
    for (int k = 0; k < nb; k++) {
      const char *cn = clt_igemm_config_name(config);
      for (int flags = 0; flags < 4; flags += 3) {
        int r = (flags / 3 + k + config) % 3;
        ck_assert_check(clt_check_conv_implicit_forward(
                            g_ctx, config, batches[k], filters[k], &w,
                            flags & 1, flags >> 1, r, &e),
                        e, TOL,
                        "%s %s forward batch %lld bias/relu %d round %d",
                        where, cn, (long long)batches[k], flags, r);
      }
      for (int acc = 0; acc < 2; acc++) {
        int r = (acc + k + config + 1) % 3;
        ck_assert_check(clt_check_conv_implicit_dgrad(g_ctx, config,
                                                      batches[k], filters[k],
                                                      &w, acc, r, &e),
                        e, TOL,
                        "%s %s data gradient batch %lld acc %d round %d",
                        where, cn, (long long)batches[k], acc, r);
      }
      for (int splits = 1; splits <= 3; splits += 2)
        ck_assert_check(clt_check_conv_implicit_wgrad(g_ctx, config, splits,
                                                      batches[k], filters[k],
                                                      &w, &e),
                        e, TOL_SUM,
                        "%s %s weight gradient batch %lld splits %d",
                        where, cn, (long long)batches[k], splits);
    }
}
END_TEST

/* Shapes that cut every tile and k block of the implicit GEMMs (filters
 * and channels past 64 and 128, k not a multiple of 16, more chunks asked
 * than k blocks), in configurations [first, last) on ctx (small: smaller
 * images, the same tiles cut); what the ops refuse. */
static const clt_window full_implicit[] = {
    WIN(19, 9, 10, 3, 3, 1, 1, 1, 1, 1, 1),
    WIN(17, 11, 9, 3, 3, 2, 2, 1, 1, 1, 1),
    WIN(130, 5, 5, 1, 1, 1, 1, 0, 0, 1, 1),
    WIN(1, 28, 28, 3, 3, 1, 1, 0, 0, 1, 1), /* the sample CNN's */
    WIN(32, 13, 13, 3, 3, 1, 1, 0, 0, 1, 1),
};
static const clt_window tiny_implicit[] = {
    WIN(19, 4, 5, 3, 3, 1, 1, 1, 1, 1, 1),
    WIN(17, 5, 3, 3, 3, 2, 2, 1, 1, 1, 1),
};

static void implicit_tiles(clt_context *ctx, int first, int last,
                           bool small) {
  static const int64_t full_filters[] = {70, 33, 130, 32, 64},
                       tiny_filters[] = {70, 33};
  const clt_window *wins = small ? tiny_implicit : full_implicit;
  const int64_t *filters = small ? tiny_filters : full_filters;
  /* The emulated instruction under oclgrind (tiny): one window. */
  int count = small ? (test_tiny() && first >= CLT_IGEMM_FP32_CONFIGS ? 1 : 2)
                    : COUNT(full_implicit);
  int64_t batch = small ? 2 : 3;
  double e;
  for (int i = 0; i < count; i++) {
    clt_window w = with_out(&wins[i]);
    char where[128];
    window_str(&w, where, sizeof where);
    for (int config = first; config < last; config++) {
      const char *cn = clt_igemm_config_name(config);
      int r = (i + config) % 3;
      ck_assert_check(clt_check_conv_implicit_forward(ctx, config, batch,
                                                      filters[i], &w, true,
                                                      true, r, &e),
                      e, TOL_SUM, "%s F%lld %s forward round %d", where,
                      (long long)filters[i], cn, r);
      ck_assert_check(clt_check_conv_implicit_dgrad(ctx, config, batch,
                                                    filters[i], &w, true,
                                                    (r + 1) % 3, &e),
                      e, TOL_SUM, "%s F%lld %s data gradient round %d", where,
                      (long long)filters[i], cn, (r + 1) % 3);
      static const int splits[] = {1, 4, 1000};
      for (int k = 0; k < 3; k++)
        ck_assert_check(clt_check_conv_implicit_wgrad(ctx, config,
                                                      splits[k], batch,
                                                      filters[i], &w, &e),
                        e, TOL_SUM, "%s F%lld %s weight gradient splits %d",
                        where, (long long)filters[i], cn, splits[k]);
    }
  }
}

START_TEST(conv_implicit_tiles) {
  implicit_tiles(g_ctx, 0, CLT_IGEMM_FP32_CONFIGS, test_tiny());
  /* Refused: no such configuration, an fp16 one without the route (none
   * on this context unless the device has tensor cores), a y too small,
   * chunks without a workspace. */
  const clt_window *wins = test_tiny() ? tiny_implicit : full_implicit;
  int64_t batch = test_tiny() ? 2 : 3, filters[1] = {70};
  clt_window w = with_out(&wins[0]);
  int64_t nx = batch * w.C * w.H * w.W, nw = filters[0] * w.C * w.KH * w.KW;
  int64_t ny = batch * filters[0] * w.OH * w.OW;
  clt_tensor *x, *wt, *y;
  ck_assert_int_eq(clt_tensor_create(g_ctx, CLT_F32, 1, &nx, &x), CLT_OK);
  ck_assert_int_eq(clt_tensor_create(g_ctx, CLT_F32, 1, &nw, &wt), CLT_OK);
  ck_assert_int_eq(clt_tensor_create(g_ctx, CLT_F32, 1, &ny, &y), CLT_OK);
  ck_assert_int_eq(clt_conv_implicit_forward(g_ctx, CLT_IGEMM_CONFIGS, y, x,
                                             wt, NULL, batch, filters[0], &w,
                                             false, NULL),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(clt_conv_implicit_forward(g_ctx, 0, y, x, wt, NULL,
                                             batch + 1, filters[0], &w,
                                             false, NULL),
                   CLT_ERR_SHAPE);
  ck_assert_int_eq(clt_conv_implicit_wgrad(g_ctx, 0, 4, wt, NULL, x, y, batch,
                                           filters[0], &w),
                   CLT_ERR_INVALID_ARGUMENT);
  clt_fp16_route route;
  ck_assert_int_eq(clt_fp16_route_get(g_ctx, &route, NULL), CLT_OK);
  if (route == CLT_FP16_SGEMM)
    ck_assert_int_eq(clt_conv_implicit_forward(g_ctx, CLT_IGEMM_FP32_CONFIGS,
                                               y, x, wt, NULL, batch,
                                               filters[0], &w, false, NULL),
                     CLT_ERR_UNSUPPORTED);
  clt_tensor_destroy(x);
  clt_tensor_destroy(wt);
  clt_tensor_destroy(y);
}
END_TEST

/* The fp16 configurations on the emulated instruction: every line of
 * the tensor-core path but the instruction itself (small shapes: the
 * emulation is slow). */
START_TEST(conv_implicit_fp16_emulated) {
  clt_context *ctx = open_emulated_mma(NULL);
  implicit_tiles(ctx, CLT_IGEMM_FP32_CONFIGS, CLT_IGEMM_CONFIGS, true);
  clt_context_destroy(ctx);
}
END_TEST

/* col2im against im2col: <im2col(x), d> = <x, col2im(d)>, in both
 * layouts of the unfold. */
START_TEST(col2im_adjoint) {
  for (int rows = 0; rows < 2; rows++) {
    clt_window w = with_out(conv_window(_i));
    w.rows = rows;
    int64_t batch = 2, nx = batch * w.C * w.H * w.W;
    int64_t ncol = batch * w.C * w.KH * w.KW * w.OH * w.OW;
    float *x = malloc((size_t)nx * sizeof(float));
    float *d = malloc((size_t)ncol * sizeof(float));
    ck_assert(x && d);
    clt_random_fill(x, nx, 12, -1.0f, 1.0f);
    clt_random_fill(d, ncol, 13, -1.0f, 1.0f);
    clt_tensor *tx = upload_new(x, nx), *td = upload_new(d, ncol);
    clt_tensor *tcol = upload_new(d, ncol), *tdx = upload_new(x, nx);
    ck_assert_ok(clt_im2col_forward(g_ctx, tcol, tx, batch, &w));
    ck_assert_ok(clt_col2im_backward(g_ctx, tdx, td, batch, &w, false, NULL));
    float *col = download_new(tcol), *dx = download_new(tdx);
    double mag = 0.0;
    double lhs = dot(col, d, ncol, &mag), rhs = dot(x, dx, nx, &mag);
    char where[128];
    window_str(&w, where, sizeof where);
    assert_adjoint(lhs, rhs, mag, where);
    free(x);
    free(d);
    free(col);
    free(dx);
    clt_tensor *all[] = {tx, td, tcol, tdx};
    for (int i = 0; i < COUNT(all); i++) clt_tensor_destroy(all[i]);
  }
}
END_TEST

/* The kernels that walk a row or plane per work-item, cut into parts
 * (ops.h clt_loop_per) by a loop limit low enough to give every part one
 * row or pixel (1), or a few (150): against the host reference, both
 * layouts, accumulating, fp16-rounded; and col2im / row2im, which add,
 * the same bits as in one part. */
START_TEST(row_kernels_in_parts) {
  clt_window w0 = with_out(conv_window(_i));
  char where[128];
  window_str(&w0, where, sizeof where);
  static const int64_t limits[] = {1, 150};
  int64_t saved = g_ctx->loop_limit;
  double e;
  for (int l = 0; l < COUNT(limits); l++) {
    g_ctx->loop_limit = limits[l];
    for (int rows = 0; rows < 2; rows++) {
      clt_window w = w0;
      w.rows = rows;
      ck_assert_check(clt_check_im2col(g_ctx, 2, &w, &e), e, 0.0,
                      "%s limit %lld rows %d", where, (long long)limits[l],
                      rows);
      for (int acc = 0; acc < 2; acc++) {
        int r = (l + rows + acc) % 3;
        ck_assert_check(clt_check_col2im(g_ctx, 2, &w, acc, r, &e), e, TOL,
                        "%s limit %lld rows %d accumulate %d round %d", where,
                        (long long)limits[l], rows, acc, r);
      }
    }
    for (int flags = 0; flags < 4; flags++) {
      bool bias = flags & 1, relu = flags >> 1;
      int r = (flags + l) % 3;
      ck_assert_check(
          clt_check_conv_direct_forward(g_ctx, 2, 3, &w0, bias, relu, r, &e), e,
          TOL, "%s direct limit %lld bias %d relu %d round %d", where,
          (long long)limits[l], bias, relu, r);
      ck_assert_check(
          clt_check_bias_channels(g_ctx, 2, 3, w0.H * w0.W, relu, r, &e), e,
          TOL_EXACT, "bias 2x3x%lld limit %lld relu %d",
          (long long)(w0.H * w0.W), (long long)limits[l], relu);
      for (int swap_relu = 0; swap_relu < 3; swap_relu++)
        ck_assert_check(clt_check_swap_axes01(g_ctx, 3, 2, w0.OH * w0.OW, bias,
                                              swap_relu, r, &e),
                        e, 0.0, "swap 3x2x%lld limit %lld bias %d relu %d",
                        (long long)(w0.OH * w0.OW), (long long)limits[l], bias,
                        swap_relu);
    }
  }
  g_ctx->loop_limit = saved;
  for (int rows = 0; rows < 2; rows++) {
    clt_window w = w0;
    w.rows = rows;
    int64_t batch = 2, nx = batch * w.C * w.H * w.W;
    int64_t ncol = batch * w.C * w.KH * w.KW * w.OH * w.OW;
    float *d = malloc((size_t)ncol * sizeof(float));
    float *zeros = calloc((size_t)nx, sizeof(float));
    ck_assert(d && zeros);
    clt_random_fill(d, ncol, 14, -1.0f, 1.0f);
    clt_tensor *td = upload_new(d, ncol);
    float *dx[2];
    for (int cut = 0; cut < 2; cut++) {
      clt_tensor *tdx = upload_new(zeros, nx);
      g_ctx->loop_limit = cut ? 1 : saved;
      ck_assert_ok(clt_col2im_backward(g_ctx, tdx, td, batch, &w, false, NULL));
      dx[cut] = download_new(tdx);
      clt_tensor_destroy(tdx);
    }
    g_ctx->loop_limit = saved;
    ck_assert_msg(memcmp(dx[0], dx[1], (size_t)nx * sizeof(float)) == 0,
                  "%s rows %d: col2im cut into parts gave other bits", where,
                  rows);
    free(dx[0]);
    free(dx[1]);
    free(d);
    free(zeros);
    clt_tensor_destroy(td);
  }
}
END_TEST

/* The same kernels on one large image at the context's own loop limit:
 * 260 x 260 (67,600 pixels), where a work-item per row or plane would run
 * more than 65,535 loop iterations, which Mesa's llvmpipe cuts short
 * without an error (col2im went wrong there from 100 x 100 on). */
START_TEST(row_kernels_large_image) {
  if (test_tiny()) return; /* too slow on the simulator */
  clt_window big = {.C = 1,
                    .H = 260,
                    .W = 260,
                    .KH = 3,
                    .KW = 3,
                    .stride_h = 1,
                    .stride_w = 1,
                    .pad_h = 1,
                    .pad_w = 1,
                    .dil_h = 1,
                    .dil_w = 1};
  clt_window w0 = with_out(&big);
  double e;
  for (int rows = 0; rows < 2; rows++) {
    clt_window w = w0;
    w.rows = rows;
    ck_assert_check(clt_check_im2col(g_ctx, 1, &w, &e), e, 0.0,
                    "260x260 rows %d", rows);
    ck_assert_check(clt_check_col2im(g_ctx, 1, &w, false, 0, &e), e, TOL,
                    "260x260 rows %d", rows);
  }
  ck_assert_check(
      clt_check_conv_direct_forward(g_ctx, 1, 2, &w0, true, true, 0, &e), e,
      TOL, "260x260 direct");
  ck_assert_check(clt_check_bias_channels(g_ctx, 1, 2, 260 * 260, true, 0, &e),
                  e, TOL_EXACT, "bias 1x2x67600");
  ck_assert_check(clt_check_swap_axes01(g_ctx, 2, 1, 260 * 260, true, 1, 0, &e),
                  e, 0.0, "swap 2x1x67600");
}
END_TEST

/* NCHW to NHWC (the "rows" backward's dy), plain and through a ReLU's
 * gradient. */
START_TEST(nchw_to_nhwc_grid) {
  int64_t rows, cols;
  grid_at(_i, &rows, &cols);
  double e;
  shape_list n = lengths_list();
  for (int k = 0; k < n.count && k < 4; k++)
    for (int relu = 0; relu < 2; relu++)
      ck_assert_check(clt_check_nchw_to_nhwc(g_ctx, n.v[k], rows, cols, relu,
                                             &e),
                      e, 0.0, "%lldx%lldx%lld relu gradient %d",
                      (long long)n.v[k], (long long)rows, (long long)cols,
                      relu);
  /* Whole 8x8 tiles (vector code) and the edges beside them, also in
   * tiny runs (oclgrind). */
  for (int relu = 0; _i == 0 && relu < 2; relu++)
    ck_assert_check(clt_check_nchw_to_nhwc(g_ctx, 2, 17, 9, relu, &e), e, 0.0,
                    "2x17x9 relu gradient %d", relu);
}
END_TEST

/* The swap between [channels, batch, spatial] and NCHW. */
START_TEST(swap_axes_grid) {
  int64_t rows, cols;
  grid_at(_i, &rows, &cols);
  double e;
  shape_list n = lengths_list();
  for (int k = 0; k < n.count && k < 4; k++)
    for (int bias = 0; bias < 2; bias++)
      for (int relu = 0; relu < 3; relu++) /* plain, ReLU, its gradient */
        ck_assert_check(clt_check_swap_axes01(g_ctx, rows, cols, n.v[k], bias,
                                              relu, (k + bias + relu) % 3, &e),
                        e, 0.0, "%lldx%lldx%lld bias %d relu %d round %d",
                        (long long)rows, (long long)cols, (long long)n.v[k],
                        bias, relu, (k + bias + relu) % 3);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Pooling (C counts batch * channels planes)                                */

static const clt_window full_pool_windows[] = {
    WIN(1, 7, 5, 3, 3, 2, 2, 1, 1, 1, 1),   /* overlapping, padded */
    WIN(3, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1),   /* stride 1: 9 windows a pixel */
    WIN(3, 8, 6, 2, 2, 2, 2, 0, 0, 1, 1),   /* the usual 2x2 */
    WIN(6, 11, 7, 5, 5, 2, 2, 2, 2, 1, 1),  /* 5x5, batch 2 x 3 channels */
    WIN(1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1),   /* one pixel */
    WIN(2, 7, 6, 3, 2, 2, 1, 1, 1, 1, 1),   /* every parameter differs */
    WIN(2, 5, 5, 5, 5, 1, 1, 0, 0, 1, 1),   /* global */
    WIN(5, 3, 7, 3, 7, 2, 1, 0, 0, 1, 1),   /* global, not square */
    WIN(3, 7, 7, 3, 3, 3, 3, 1, 1, 1, 1),   /* stride = window, padded */
    WIN(3, 32, 33, 3, 3, 2, 2, 1, 1, 1, 1), /* above the work-group size */
    WIN(2, 6, 70, 2, 3, 2, 2, 0, 1, 1, 1),  /* rows of 35: three runs of the
                                               per-row kernel's 16 */
    WIN(2, 9, 8, 2, 2, 3, 3, 0, 0, 1, 1),   /* stride > window: rows and
                                               columns no window reads */
    /* 2x2 of stride 2 (the vectors' kernel): rows of 5 windows (vectors
     * of 4, the last block overlapping the first) on odd sides; rows of
     * 13 (vectors of 8, overlapping); rows of 16 (two whole blocks, the
     * last load at the last element) */
    WIN(2, 9, 11, 2, 2, 2, 2, 0, 0, 1, 1),
    WIN(3, 26, 26, 2, 2, 2, 2, 0, 0, 1, 1),
    WIN(2, 4, 32, 2, 2, 2, 2, 0, 0, 1, 1),
};
static const clt_window tiny_pool_windows[] = {
    WIN(1, 5, 3, 3, 3, 2, 2, 1, 1, 1, 1),
    WIN(2, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1),
    WIN(3, 4, 4, 2, 2, 2, 2, 0, 0, 1, 1),
    WIN(2, 2, 41, 2, 2, 2, 2, 0, 1, 1, 1), /* runs of 16 and 4, edges */
    WIN(1, 8, 5, 2, 2, 3, 3, 1, 0, 1, 1),  /* stride > window, padded */
    WIN(3, 2, 5, 2, 5, 1, 1, 0, 0, 1, 1),  /* global */
    WIN(2, 5, 13, 2, 2, 2, 2, 0, 0, 1, 1), /* vectors of 4, overlapping */
    WIN(1, 2, 18, 2, 2, 2, 2, 0, 0, 1, 1), /* vectors of 8, overlapping;
                                              the last load at the end */
};

static const clt_window *pool_window(int i) {
  return test_tiny() ? &tiny_pool_windows[i] : &full_pool_windows[i];
}
static int pool_window_count(void) {
  return test_tiny() ? COUNT(tiny_pool_windows) : COUNT(full_pool_windows);
}

/* Every layout: a work-item per row, per element, and (the forward of
 * 2x2 windows of stride 2) per row in vectors. */
START_TEST(maxpool_windows) {
  char where[128];
  window_str(pool_window(_i), where, sizeof where);
  double e;
  for (int layout = 0; layout < 3; layout++) {
    clt_window w = *pool_window(_i);
    if (layout == 2 && !clt_maxpool_vectors_fit(&w)) continue;
    w.per_element = layout == 1;
    w.vectors = layout == 2;
    int per_element = layout == 1, r = (_i + layout) % 3;
    ck_assert_check(clt_check_maxpool_forward(g_ctx, &w, r, &e), e, 0.0,
                    "%s layout %d round %d", where, layout, r);
    for (int acc = 0; acc < 2 && layout < 2; acc++) {
      int rb = (r + acc + 1) % 3;
      ck_assert_check(clt_check_maxpool_backward(g_ctx, &w, acc, rb, &e), e,
                      TOL_EXACT, "%s accumulate=%d per element %d round %d",
                      where, acc, per_element, rb);
    }
  }
}
END_TEST

START_TEST(avgpool_windows) {
  char where[128];
  window_str(pool_window(_i), where, sizeof where);
  double e;
  ck_assert_check(
      clt_check_avgpool_forward(g_ctx, pool_window(_i), _i % 3, &e), e,
      TOL_EXACT, "%s round %d", where, _i % 3);
  for (int acc = 0; acc < 2; acc++)
    ck_assert_check(clt_check_avgpool_backward(g_ctx, pool_window(_i), acc,
                                               (_i + acc + 1) % 3, &e),
                    e, TOL_EXACT, "%s accumulate=%d round %d", where, acc,
                    (_i + acc + 1) % 3);
}
END_TEST

/* Global max pooling over a large plane walks more values in one
 * work-item than llvmpipe runs (ops.h clt_device_loop_cap): refused there
 * with the reason, computed right where there is no limit; and with a
 * limit of 600 forced on every stack, a 16 x 16 window refused, 8 x 8
 * computed, for average pooling too where the window is not global.
 * Global average pooling sums runs of 16, so that its 200 x 200 planes
 * are computed on every stack (under the forced limit 40 x 40, not
 * 80 x 80); its backward writes them in parts (its work-items stay
 * within ctx->loop_limit). */
static clt_window global_window(int64_t side) {
  clt_window w = {.C = 2, .H = side, .W = side, .KH = side, .KW = side,
                  .OH = 1, .OW = 1, .stride_h = side, .stride_w = side,
                  .dil_h = 1, .dil_w = 1};
  return w;
}

START_TEST(pool_window_under_loop_cap) {
  double e;
  int64_t cap;
  ck_assert_ok(clt_device_loop_cap(g_ctx, &cap));
  clt_window big = global_window(200);
  for (int per_element = 0; per_element < 2; per_element++) {
    big.per_element = per_element;
    ck_assert_check(clt_check_avgpool_forward(g_ctx, &big, 0, &e), e, TOL,
                    "global avgpool 200x200");
    clt_status st = clt_check_maxpool_forward(g_ctx, &big, 0, &e);
    if (cap == 0) {
      ck_assert_check(st, e, TOL_EXACT, "global maxpool 200x200");
    } else {
      ck_assert_int_eq(st, CLT_ERR_UNSUPPORTED);
      ck_assert_ptr_nonnull(
          strstr(clt_context_last_error(g_ctx), "a window of 200x200"));
    }
  }
  for (int acc = 0; acc < 2; acc++)
    ck_assert_check(clt_check_avgpool_backward(g_ctx, &big, acc, acc + 1, &e),
                    e, TOL_EXACT,
                    "global avgpool backward 200x200 accumulate=%d", acc);
  int64_t saved = g_ctx->loop_cap;
  g_ctx->loop_cap = 600;
  clt_window w16 = global_window(16), w8 = global_window(8);
  /* not global: two windows of 16 x 16 down a 17 x 16 plane, of 8 x 8 down
   * a 9 x 8 one */
  clt_window a16 = w16, a8 = w8;
  a16.H = 17, a16.stride_h = 1, a16.OH = 2;
  a8.H = 9, a8.stride_h = 1, a8.OH = 2;
  ck_assert_int_eq(clt_check_avgpool_forward(g_ctx, &a16, 0, &e),
                   CLT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(
      strstr(clt_context_last_error(g_ctx), "after 600 iterations"));
  ck_assert_int_eq(clt_check_maxpool_forward(g_ctx, &w16, 0, &e),
                   CLT_ERR_UNSUPPORTED);
  ck_assert_check(clt_check_avgpool_forward(g_ctx, &a8, 0, &e), e, TOL,
                  "avgpool 8x8 windows, cap 600");
  ck_assert_check(clt_check_maxpool_forward(g_ctx, &w8, 0, &e), e, TOL_EXACT,
                  "global maxpool 8x8, cap 600");
  clt_window g40 = global_window(40), g80 = global_window(80);
  ck_assert_check(clt_check_avgpool_forward(g_ctx, &g40, 1, &e), e, TOL,
                  "global avgpool 40x40, cap 600");
  ck_assert_int_eq(clt_check_avgpool_forward(g_ctx, &g80, 0, &e),
                   CLT_ERR_UNSUPPORTED);
  /* Max pooling's kernels with a work-item per row whose rows are too
   * long run with a work-item per element instead (the same bits): rows
   * of 300 under a forced cap, overlapping (the gather) and not (the
   * scatter), and rows of 8,000 with the device's own (llvmpipe: wrong
   * gradients from the gather in one item per row). */
  static const int64_t wins[][3] = {{300, 3, 1}, {300, 2, 2}, {8000, 3, 1}};
  for (int k = 0; k < COUNT(wins); k++) {
    g_ctx->loop_cap = k < 2 ? 600 : saved;
    int64_t W = wins[k][0], K = wins[k][1], S = wins[k][2], P = K / 2 * (S == 1);
    clt_window w = {.C = 2, .H = 3, .W = W, .KH = K, .KW = K, .pad_h = P,
                    .pad_w = P, .stride_h = S, .stride_w = S, .dil_h = 1,
                    .dil_w = 1};
    w.OH = clt_window_out(w.H, K, P, S, 1);
    w.OW = clt_window_out(W, K, P, S, 1);
    ck_assert_check(clt_check_maxpool_forward(g_ctx, &w, 0, &e), e,
                    TOL_EXACT, "maxpool %lldx%lld stride %lld on rows of %lld",
                    (long long)K, (long long)K, (long long)S, (long long)W);
    for (int acc = 0; acc < 2; acc++)
      ck_assert_check(clt_check_maxpool_backward(g_ctx, &w, acc, 0, &e), e,
                      TOL, "maxpool backward %lldx%lld stride %lld on rows "
                      "of %lld accumulate=%d",
                      (long long)K, (long long)K, (long long)S, (long long)W,
                      acc);
  }
  g_ctx->loop_cap = saved;
}
END_TEST

/* Both backward ops against their forward with the device's own ops: max
 * pooling is linear once the argmax is fixed. */
START_TEST(pool_adjoint) {
  clt_window w = with_out(pool_window(_i));
  int64_t nx = w.C * w.H * w.W, ny = w.C * w.OH * w.OW;
  float *x = malloc((size_t)nx * sizeof(float));
  float *d = malloc((size_t)ny * sizeof(float));
  ck_assert(x && d);
  clt_random_fill(x, nx, 14, -1.0f, 1.0f);
  clt_random_fill(d, ny, 15, -1.0f, 1.0f);
  clt_tensor *tx = upload_new(x, nx), *td = upload_new(d, ny);
  clt_tensor *ty = upload_new(d, ny), *tdx = upload_new(x, nx), *targ;
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_I32, 1, &ny, &targ));
  char where[160];
  window_str(&w, where, sizeof where);
  for (int is_max = 0; is_max < 2; is_max++) {
    if (is_max) {
      ck_assert_ok(clt_maxpool_forward(g_ctx, ty, targ, tx, &w, NULL));
      ck_assert_ok(
          clt_maxpool_backward(g_ctx, tdx, td, targ, &w, false, NULL));
    } else {
      ck_assert_ok(clt_avgpool_forward(g_ctx, ty, tx, &w, NULL));
      ck_assert_ok(clt_avgpool_backward(g_ctx, tdx, td, &w, false, NULL));
    }
    float *y = download_new(ty), *dx = download_new(tdx);
    double mag = 0.0;
    double lhs = dot(y, d, ny, &mag), rhs = dot(x, dx, nx, &mag);
    char what[200];
    snprintf(what, sizeof what, "%s %s", is_max ? "maxpool" : "avgpool",
             where);
    assert_adjoint(lhs, rhs, mag, what);
    free(y);
    free(dx);
  }
  free(x);
  free(d);
  clt_tensor *all[] = {tx, td, ty, tdx, targ};
  for (int i = 0; i < COUNT(all); i++) clt_tensor_destroy(all[i]);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Depthwise convolution                                                     */

/* C, H, W, kernel, stride, padding, dilation, multiplier: one channel,
 * odd sizes, strides that skip taps, padding past the kernel's reach,
 * dilation, a rectangle made of rows of 1, multipliers of 1 to 3, a 7x7
 * window reaching past every edge of a 14x9 plane (ConvNeXt's); the rows'
 * four taps a pass (stride and dilation 1 along the row) with whole fours
 * of taps (4, 8: padding past the reach) and, in the twelfth, a 3x5
 * window of stride 2 and dilation 2 down the columns only (set in
 * dw_shapes); MobileNet's 3x3 with padding 1 on rows wide enough for
 * loads wholly inside them between the edges' (the rows kernels' 3x3
 * path), 11 rows (an item's 4, the last 3); the 3x3 kernels' eight
 * columns at a time (padding 0 or 1, rows of 10 or more): 16 columns (the
 * last eight reading past the row), 10 columns without padding (one
 * eight) and with it (two, overlapping); the other windows' eight at a
 * time from buffered rows: the 7x7 on 9 columns, the 4x4 and 8x8 above,
 * a 5x5 with a multiplier of 2 (the tiny list's last: a 7x7); stride 2
 * along the row from buffered rows (eights of outputs, sixteens of dx,
 * the weight gradient in blocks of rows): MobileNet's 3x3 on 28 columns,
 * a 5x5 on 33 (odd: dx's sixteens starting at both parities), a 4x4 of
 * stride 1 and dilation 2 down the columns (set in dw_shapes), an 8x8, a
 * 40x40 plane (the weight gradient in three blocks), padding past the
 * window's reach. */
static const int64_t full_dw_cases[][8] = {
    {1, 1, 1, 1, 1, 0, 1, 1},   {3, 7, 5, 3, 1, 1, 1, 1},
    {2, 9, 12, 3, 2, 1, 1, 3},  {5, 11, 7, 3, 1, 2, 2, 1},
    {4, 8, 8, 5, 3, 2, 1, 2},   {7, 13, 1, 1, 2, 0, 1, 1},
    {33, 6, 6, 3, 1, 1, 1, 1},  {3, 28, 28, 3, 1, 0, 1, 2},
    {2, 14, 9, 7, 1, 3, 1, 1},  {2, 6, 11, 4, 1, 2, 1, 1},
    {3, 9, 10, 8, 1, 8, 1, 2},  {3, 10, 9, 5, 1, 4, 1, 1},
    {2, 11, 21, 3, 1, 1, 1, 1}, {2, 5, 16, 3, 1, 1, 1, 1},
    {3, 4, 10, 3, 1, 0, 1, 1},  {1, 3, 10, 3, 1, 1, 1, 2},
    {2, 7, 12, 5, 1, 2, 1, 2},  {3, 14, 28, 3, 2, 1, 1, 1},
    {2, 9, 33, 5, 2, 2, 1, 2},  {2, 7, 20, 4, 2, 1, 1, 1},
    {1, 6, 17, 8, 2, 3, 1, 1},  {1, 40, 40, 3, 2, 1, 1, 1},
    {2, 5, 9, 3, 2, 4, 1, 1}};
static const int64_t tiny_dw_cases[][8] = {{1, 1, 1, 1, 1, 0, 1, 1},
                                           {2, 5, 4, 3, 2, 1, 1, 2},
                                           {3, 5, 5, 3, 1, 2, 2, 1},
                                           {2, 5, 6, 7, 1, 3, 1, 1},
                                           {1, 6, 13, 3, 1, 1, 1, 1},
                                           {1, 3, 16, 3, 1, 1, 1, 1},
                                           {1, 4, 9, 7, 1, 3, 1, 1},
                                           {1, 4, 19, 3, 2, 1, 1, 1},
                                           {1, 3, 9, 5, 2, 2, 1, 2}};

static const int64_t *dw_case(int i) {
  return test_tiny() ? tiny_dw_cases[i] : full_dw_cases[i];
}
static int dw_case_count(void) {
  return test_tiny() ? COUNT(tiny_dw_cases) : COUNT(full_dw_cases);
}

START_TEST(dw_shapes) {
  const int64_t *c = dw_case(_i);
  clt_window w = {.C = c[0], .H = c[1], .W = c[2], .KH = c[3], .KW = c[3],
                  .stride_h = c[4], .stride_w = c[4], .pad_h = c[5],
                  .pad_w = c[5], .dil_h = c[6], .dil_w = c[6]};
  if (!test_tiny() && _i == 5) w.KW = 1, w.pad_w = 0; /* a column: W 1 */
  if (!test_tiny() && _i == 11) /* down the columns: 3 taps, stride 2 */
    w.KH = 3, w.stride_h = 2, w.dil_h = 2, w.pad_h = 1;
  if (!test_tiny() && _i == 19) /* stride 2 along the row only */
    w.stride_h = 1, w.dil_h = 2, w.pad_h = 2;
  int64_t M = c[7];
  double e;
  /* the loop limit at which the rows kernels just fit (an item a row,
   * where several would pass it) */
  clt_window wo = w; /* with its output's size, as the ops see it */
  wo.OH = clt_window_out(w.H, w.KH, w.pad_h, w.stride_h, w.dil_h);
  wo.OW = clt_window_out(w.W, w.KW, w.pad_w, w.stride_w, w.dil_w);
  int64_t saved = g_ctx->loop_limit, lo = 0, hi = saved;
  while (hi - lo > 1) {
    g_ctx->loop_limit = (lo + hi) / 2;
    if (clt_dw_rows_fit(g_ctx, M, &wo))
      hi = g_ctx->loop_limit;
    else
      lo = g_ctx->loop_limit;
  }
  g_ctx->loop_limit = saved;
  /* the three layouts: a work-item per value, and per rows (where they
   * fit) four or eight columns at a time, those at the limit too (way 3:
   * rows, 4: eights); the forward at batch 3 through a ReLU */
  for (int way = 0; way < 5; way++) {
    clt_dw_layout layout = way == 0   ? CLT_DW_PER_VALUE
                           : way % 2 ? CLT_DW_ROWS
                                     : CLT_DW_ROWS_EIGHTS;
    if (way && !clt_dw_rows_fit(g_ctx, M, &w)) continue;
    g_ctx->loop_limit = way > 2 ? hi : saved;
    for (int N = 1; N <= 3; N += 2)
      for (int bias = 0; bias < 2; bias++) {
        ck_assert_check(clt_check_dw_forward(g_ctx, N, M, &w, bias, N == 3,
                                             layout, &e),
                        e, TOL,
                        "depthwise case %d N=%d bias=%d relu=%d way=%d", _i,
                        N, bias, N == 3, way);
        for (int acc = 0; acc < 2; acc++)
          ck_assert_check(clt_check_dw_backward(g_ctx, N, M, &w, bias, acc,
                                                layout, 0, &e),
                          e, TOL,
                          "depthwise backward case %d N=%d bias=%d "
                          "accumulate=%d way=%d",
                          _i, N, bias, acc, way);
      }
    g_ctx->loop_limit = saved;
  }
  /* the weight sums cut into parts of the batch (a sample each) */
  ck_assert_check(clt_check_dw_backward(g_ctx, 3, M, &w, true, false,
                                        CLT_DW_PER_VALUE, 2, &e),
                  e, TOL, "depthwise backward case %d in parts", _i);
  /* rows past the loop limit are refused, not run to wrong numbers */
  g_ctx->loop_limit = 2;
  clt_status st =
      clt_check_dw_forward(g_ctx, 1, M, &w, true, false, CLT_DW_ROWS, &e);
  g_ctx->loop_limit = saved;
  ck_assert_int_eq(st, CLT_ERR_UNSUPPORTED);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Layer normalisation                                                       */

/* Samples x values: one value (variance 0: y is beta), fewer values than
 * a group's items, more (several per item, a tail), a large sample. */
static const int64_t full_ln_shapes[][2] = {{1, 1},  {3, 1},   {7, 3},
                                            {1, 33}, {33, 7},  {5, 127},
                                            {3, 300}, {2, 4099}};
static const int64_t tiny_ln_shapes[][2] = {{1, 1}, {3, 7}, {2, 37}};

static const int64_t *ln_shape(int i) {
  return test_tiny() ? tiny_ln_shapes[i] : full_ln_shapes[i];
}
static int ln_shape_count(void) {
  return test_tiny() ? COUNT(tiny_ln_shapes) : COUNT(full_ln_shapes);
}

START_TEST(ln_shapes) {
  const int64_t *sh = ln_shape(_i);
  int64_t N = sh[0], D = sh[1];
  double e;
  /* Both layouts: a value per item, and runs of 16 (only a tail where D
   * is under 16; whole runs and a tail where it is 33, 127, 300, 4099);
   * with and without the fused ReLU. */
  for (int r16 = 0; r16 < 2; r16++)
    for (int relu = 0; relu < 2; relu++) {
      ck_assert_check(
          clt_check_ln_forward(g_ctx, N, D, 1e-5f, relu, r16, &e), e, TOL,
          "layernorm %lldx%lld relu=%d runs16=%d", (long long)N, (long long)D,
          relu, r16);
      ck_assert_check(clt_check_ln_forward(g_ctx, N, D, 0.1f, relu, r16, &e),
                      e, TOL, "layernorm %lldx%lld eps 0.1 relu=%d runs16=%d",
                      (long long)N, (long long)D, relu, r16);
      for (int acc = 0; acc < 2; acc++)
        ck_assert_check(
            clt_check_ln_backward(g_ctx, N, D, 1e-5f, relu, acc, r16, 0, &e),
            e, TOL,
            "layernorm backward %lldx%lld relu=%d accumulate=%d runs16=%d",
            (long long)N, (long long)D, relu, acc, r16);
      /* The parameter sums cut into parts of the batch (a loop limit of
       * 3: parts of 2 a value per item, the last one shorter where N is
       * odd; parts of 1 in runs of 16). */
      if (N > 1)
        ck_assert_check(
            clt_check_ln_backward(g_ctx, N, D, 1e-5f, relu, true, r16, 3, &e),
            e, TOL, "layernorm backward %lldx%lld in parts relu=%d runs16=%d",
            (long long)N, (long long)D, relu, r16);
    }
}
END_TEST

/* Layer normalisation over each pixel's channels, x [N, C, P]: one
 * channel (variance 0), one pixel, odd sizes, many channels, many pixels
 * (more than a group's items for the parameter sums; 8 channels there:
 * among 2,000 pixels of 3 values some have so small a variance that the
 * float mean's rounding, times rstd, passes the tolerance, as it would in
 * any float implementation). */
static const int64_t full_lnc_shapes[][3] = {
    {1, 1, 1}, {3, 1, 5},  {2, 5, 1},   {3, 7, 13},
    {2, 33, 49}, {5, 64, 3}, {1, 300, 7}, {2, 8, 1000}};
static const int64_t tiny_lnc_shapes[][3] = {
    {1, 1, 1}, {2, 3, 5}, {3, 5, 2}, {2, 3, 21}};

static const int64_t *lnc_shape(int i) {
  return test_tiny() ? tiny_lnc_shapes[i] : full_lnc_shapes[i];
}
static int lnc_shape_count(void) {
  return test_tiny() ? COUNT(tiny_lnc_shapes) : COUNT(full_lnc_shapes);
}

START_TEST(lnc_shapes) {
  const int64_t *sh = lnc_shape(_i);
  int64_t N = sh[0], C = sh[1], P = sh[2];
  double e;
  /* both layouts: a pixel per item, and runs of 16 (only pixels one by one
   * where P is under 16; runs and those where it is 49 or 1000) */
  for (int r16 = 0; r16 < 2; r16++)
    for (int relu = 0; relu < 2; relu++) {
      ck_assert_check(
          clt_check_lnc_forward(g_ctx, N, C, P, 1e-5f, relu, r16, &e), e, TOL,
          "layernorm over channels %lldx%lldx%lld relu=%d runs16=%d",
          (long long)N, (long long)C, (long long)P, relu, r16);
      ck_assert_check(
          clt_check_lnc_forward(g_ctx, N, C, P, 0.1f, relu, r16, &e), e, TOL,
          "layernorm over channels %lldx%lldx%lld eps 0.1 relu=%d runs16=%d",
          (long long)N, (long long)C, (long long)P, relu, r16);
      /* the backward's layouts: runs16 0 and 1, and (r16 1) also 2, the
       * parameter sums in the input gradient's pass */
      for (int layout = r16; layout <= 2 * r16; layout++)
        for (int acc = 0; acc < 2; acc++)
          ck_assert_check(clt_check_lnc_backward(g_ctx, N, C, P, 1e-5f, relu,
                                                 acc, layout, 0, &e),
                          e, TOL,
                          "layernorm over channels backward %lldx%lldx%lld "
                          "relu=%d accumulate=%d layout=%d",
                          (long long)N, (long long)C, (long long)P, relu,
                          acc, layout);
      /* the parameter sums cut into parts of the batch (a sample each) */
      if (N > 1)
        ck_assert_check(clt_check_lnc_backward(g_ctx, N, C, P, 1e-5f, relu,
                                               true, r16, 3, &e),
                        e, TOL,
                        "layernorm over channels backward %lldx%lldx%lld in "
                        "parts relu=%d runs16=%d",
                        (long long)N, (long long)C, (long long)P, relu, r16);
    }
}
END_TEST

/* Too many channels a pixel for a work-item's loops under the device's
 * cap: refused with the limit named, forward and backward; fewer run. */
START_TEST(lnc_under_loop_cap) {
  int64_t saved = g_ctx->loop_cap;
  double e;
  for (int r16 = 0; r16 < 2; r16++) {
    /* 3 C + 1 iterations and 8 against a budget of 200, the first 15
     * times in runs of 16 (the pixels past a sample's last run) */
    int64_t too_many = r16 ? 5 : 70, fits = r16 ? 3 : 60;
    g_ctx->loop_cap = 400;
    clt_status st =
        clt_check_lnc_forward(g_ctx, 2, too_many, 3, 1e-5f, false, r16, &e);
    clt_status st2 = clt_check_lnc_backward(g_ctx, 2, too_many, 3, 1e-5f,
                                            false, false, r16, 0, &e);
    const char *msg = clt_context_last_error(g_ctx);
    char want[64];
    snprintf(want, sizeof want, "%lld channels a pixel", (long long)too_many);
    bool named = strstr(msg, want) && strstr(msg, "after 400 iterations");
    clt_status ok = clt_check_lnc_backward(g_ctx, 2, fits, 3, 1e-5f, true,
                                           false, r16, 0, &e);
    g_ctx->loop_cap = saved;
    ck_assert_int_eq(st, CLT_ERR_UNSUPPORTED);
    ck_assert_int_eq(st2, CLT_ERR_UNSUPPORTED);
    ck_assert_msg(named, "message: %s", msg);
    ck_assert_check(ok, e, TOL,
                    "layernorm over channels 2x%lldx3, cap 400 runs16=%d",
                    (long long)fits, r16);
  }
}
END_TEST

/* A sample too long for a work-group's loops under the device's cap is
 * refused with the limit named, not run to wrong numbers, in both
 * layouts (runs of 16 walk 16 times as many values). */
START_TEST(ln_under_loop_cap) {
  int64_t cap;
  ck_assert_ok(clt_device_loop_cap(g_ctx, &cap));
  int64_t saved = g_ctx->loop_cap;
  double e;
  int64_t wg = (int64_t)g_ctx->work_group;
  for (int r16 = 0; r16 < 2; r16++) {
    /* 3 (D / wg + 2) + 64 iterations (D / 16 / wg + 3 a pass in runs)
     * against a budget of 200 */
    int64_t too_long = (r16 ? 16 : 1) * 60 * wg;
    int64_t fits = (r16 ? 16 : 1) * 38 * wg;
    g_ctx->loop_cap = 400;
    clt_status st =
        clt_check_ln_forward(g_ctx, 2, too_long, 1e-5f, false, r16, &e);
    clt_status st2 = clt_check_ln_backward(g_ctx, 2, too_long, 1e-5f, false,
                                           false, r16, 0, &e);
    const char *msg = clt_context_last_error(g_ctx);
    bool named = strstr(msg, "after 400 iterations") != NULL;
    clt_status ok = clt_check_ln_backward(g_ctx, 2, fits, 1e-5f, true, false,
                                          r16, 0, &e);
    g_ctx->loop_cap = saved;
    ck_assert_int_eq(st, CLT_ERR_UNSUPPORTED);
    ck_assert_int_eq(st2, CLT_ERR_UNSUPPORTED);
    ck_assert_msg(named, "message: %s", msg);
    ck_assert_check(ok, e, TOL, "layernorm backward 2x%lld, cap 400 runs16=%d",
                    (long long)fits, r16);
  }
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Batch normalisation                                                       */

static const int64_t full_bn_shapes[][3] = {
    {2, 1, 1},  {1, 3, 49},  {3, 1, 7},   {7, 3, 49},
    {33, 10, 1}, {2, 3, 300}, {1, 1, 1000}, {5, 33, 3}};
static const int64_t tiny_bn_shapes[][3] = {{2, 1, 1}, {2, 3, 5}, {2, 3, 37}};

static const int64_t *bn_shape(int i) {
  return test_tiny() ? tiny_bn_shapes[i] : full_bn_shapes[i];
}
static int bn_shape_count(void) {
  return test_tiny() ? COUNT(tiny_bn_shapes) : COUNT(full_bn_shapes);
}

START_TEST(bn_shapes) {
  const int64_t *sh = bn_shape(_i);
  int64_t N = sh[0], C = sh[1], HW = sh[2];
  double e;
  ck_assert_check(clt_check_bn_stats(g_ctx, N, C, HW, 1, &e), e, TOL,
                  "%lldx%lldx%lld", (long long)N, (long long)C, (long long)HW);
  /* Both layouts of the element-wise passes: per element, and in runs of
   * 16 (whole runs and a tail where HW is 49, 300 or 1000; only a tail
   * where it is under 16). */
  /* Folded into a convolution of C filters with HW weights each. */
  for (int has_b = 0; has_b < 2; has_b++)
    ck_assert_check(clt_check_bn_fold(g_ctx, C, HW, 1e-5f, has_b, &e), e, TOL,
                    "fold %lldx%lld bias=%d", (long long)C, (long long)HW,
                    has_b);
  for (int r16 = 0; r16 < 2; r16++) {
    ck_assert_check(
        clt_check_bn_forward(g_ctx, N, C, HW, 1e-5f, false, r16, 2, &e), e,
        TOL, "%lldx%lldx%lld runs16=%d", (long long)N, (long long)C,
        (long long)HW, r16);
    ck_assert_check(
        clt_check_bn_forward(g_ctx, N, C, HW, 0.1f, false, r16, 1, &e), e,
        TOL, "%lldx%lldx%lld eps 0.1 runs16=%d", (long long)N, (long long)C,
        (long long)HW, r16);
    ck_assert_check(clt_check_bn_forward(g_ctx, N, C, HW, 1e-5f, true, r16,
                                         (_i + r16) % 3, &e),
                    e, TOL, "%lldx%lldx%lld relu round %d runs16=%d",
                    (long long)N, (long long)C, (long long)HW, (_i + r16) % 3,
                    r16);
    for (int training = 0; training < 2; training++)
      for (int acc = 0; acc < 2; acc++)
        ck_assert_check(
            clt_check_bn_backward(g_ctx, N, C, HW, 1e-5f, training, acc, 1,
                                  r16, (training + acc + r16) % 3, &e),
            e, TOL,
            "%lldx%lldx%lld training=%d accumulate=%d round %d runs16=%d",
            (long long)N, (long long)C, (long long)HW, training, acc,
            (training + acc + r16) % 3, r16);
  }
  /* Training mode in one kernel each way, items sharing each plane's
   * runs or taking whole planes, with and without a fused ReLU */
  for (int planes = 0; planes < 2; planes++)
    for (int relu = 0; relu < 2; relu++) {
      int r = (_i + planes + relu) % 3;
      ck_assert_check(clt_check_bn_train_forward(g_ctx, N, C, HW, 1e-5f,
                                                 relu ? 0.1f : 1.0f, relu,
                                                 planes, r, &e),
                      e, TOL, "%lldx%lldx%lld one kernel planes=%d relu=%d "
                      "round %d", (long long)N, (long long)C, (long long)HW,
                      planes, relu, r);
      ck_assert_check(clt_check_bn_train_backward(g_ctx, N, C, HW, 1e-5f,
                                                  relu, (planes + relu) % 2,
                                                  planes, r, &e),
                      e, TOL, "%lldx%lldx%lld backward one kernel planes=%d "
                      "relu=%d accumulate=%d round %d", (long long)N,
                      (long long)C, (long long)HW, planes, relu,
                      (planes + relu) % 2, r);
    }
  /* The split reductions: 2 and 3 parts leave a shorter last chunk for
   * odd N, 128 more parts than planes (one plane each); and one group per
   * channel with an item per plane. */
  static const int64_t wants[] = {2, 3, 8, 128, CLT_BN_PER_PLANE};
  for (size_t w = 0; w < COUNT(wants); w++) {
    ck_assert_check(clt_check_bn_stats(g_ctx, N, C, HW, wants[w], &e), e, TOL,
                    "%lldx%lldx%lld in %lld parts", (long long)N,
                    (long long)C, (long long)HW, (long long)wants[w]);
    for (int training = 0; training < 2; training++)
      ck_assert_check(clt_check_bn_backward(g_ctx, N, C, HW, 1e-5f, training,
                                            training, wants[w], w % 2 == 1,
                                            (int)(w + training) % 3, &e),
                      e, TOL,
                      "%lldx%lldx%lld training=%d in %lld parts round %d",
                      (long long)N, (long long)C, (long long)HW, training,
                      (long long)wants[w], (int)(w + training) % 3);
  }
}
END_TEST

/* The reductions over the batch (bias gradients, batch-norm statistics
 * and their gradient sums) on a device that ends a work-item's loops
 * early (ops.h clt_device_loop_cap): first at sizes past llvmpipe's
 * limit (65,535) with the device's own cap (none on POCL: one launch, as
 * always), then with a cap of 600 forced on every stack, where they run
 * in parts; and a refusal where a part of one plane would still loop
 * too long. */
START_TEST(reductions_under_loop_cap) {
  double e;
  int64_t cap;
  ck_assert_ok(clt_device_loop_cap(g_ctx, &cap));
  /* Past llvmpipe's limit in one launch: 70,000 rows of a dense bias
   * gradient, 24,000 planes of 4, a BatchNorm1d over 24,000 rows. */
  ck_assert_check(clt_check_sum_channels(g_ctx, 70000, 3, 1, true, &e), e,
                  TOL, "70000 rows, cap %lld", (long long)cap);
  ck_assert_check(clt_check_sum_columns_relu(g_ctx, 70000, 3, &e), e, TOL,
                  "70000 rows through relu, cap %lld", (long long)cap);
  ck_assert_check(clt_check_sum_channels(g_ctx, 24000, 2, 4, false, &e), e,
                  TOL, "24000 planes of 4, cap %lld", (long long)cap);
  ck_assert_check(clt_check_bn_stats(g_ctx, 24000, 2, 1, 1, &e), e, TOL,
                  "batchnorm 24000x2, cap %lld", (long long)cap);
  ck_assert_check(clt_check_bn_backward(g_ctx, 24000, 2, 1, 1e-5f, true,
                                        false, 1, false, 0, &e),
                  e, TOL, "batchnorm backward 24000x2, cap %lld",
                  (long long)cap);

  int64_t saved = g_ctx->loop_cap;
  g_ctx->loop_cap = 600;
  /* sum_columns and sum_channels: several launches, the first one
   * adding into out only where asked */
  static const int64_t sums[][3] = {{1000, 3, 1}, {150, 2, 5}, {97, 3, 40}};
  for (int k = 0; k < COUNT(sums); k++) {
    int64_t part;
    ck_assert_ok(clt_sum_channels_part(g_ctx, sums[k][0], sums[k][2], &part));
    ck_assert_msg(part < sums[k][0], "%lld of %lld in one part",
                  (long long)part, (long long)sums[k][0]);
    for (int acc = 0; acc < 2; acc++)
      ck_assert_check(clt_check_sum_channels(g_ctx, sums[k][0], sums[k][1],
                                             sums[k][2], acc, &e),
                      e, TOL, "%lldx%lldx%lld accumulate=%d in parts of %lld",
                      (long long)sums[k][0], (long long)sums[k][1],
                      (long long)sums[k][2], acc, (long long)part);
    if (sums[k][2] == 1)
      ck_assert_check(clt_check_sum_columns_relu(g_ctx, sums[k][0],
                                                 sums[k][1], &e),
                      e, TOL, "%lldx%lld through relu in parts of %lld",
                      (long long)sums[k][0], (long long)sums[k][1],
                      (long long)part);
  }
  /* batch norm: one group per channel (want 1) and 8 parts asked for
   * both become more parts */
  static const int64_t bns[][3] = {{2000, 3, 3}, {1001, 2, 17}};
  static const int64_t wants[] = {1, 8};
  for (int k = 0; k < COUNT(bns); k++)
    for (int w = 0; w < COUNT(wants); w++) {
      int64_t N = bns[k][0], C = bns[k][1], HW = bns[k][2], parts, chunk;
      ck_assert_ok(clt_bn_parts(g_ctx, N, HW, false, wants[w], &parts,
                                &chunk));
      ck_assert_msg(parts > wants[w] && chunk * parts >= N &&
                        chunk * (parts - 1) < N,
                    "%lldx%lld asking for %lld: %lld parts of %lld",
                    (long long)N, (long long)HW, (long long)wants[w],
                    (long long)parts, (long long)chunk);
      ck_assert_check(clt_check_bn_stats(g_ctx, N, C, HW, wants[w], &e), e,
                      TOL, "%lldx%lldx%lld asking for %lld, in %lld parts",
                      (long long)N, (long long)C, (long long)HW,
                      (long long)wants[w], (long long)parts);
      for (int training = 0; training < 2; training++)
        ck_assert_check(clt_check_bn_backward(g_ctx, N, C, HW, 1e-5f,
                                              training, !training, wants[w],
                                              training == 1, 0, &e),
                        e, TOL,
                        "backward %lldx%lldx%lld training=%d asking for %lld",
                        (long long)N, (long long)C, (long long)HW, training,
                        (long long)wants[w]);
    }
  /* an item per plane: one group per channel where an item's planes loop
   * within the budget, in parts where the statistics' two passes over
   * 4800-value planes would not */
  static const int64_t pps[][3] = {{2000, 3, 3}, {2, 1, 4800}};
  for (int k = 0; k < COUNT(pps); k++) {
    int64_t N = pps[k][0], C = pps[k][1], HW = pps[k][2], parts, chunk;
    ck_assert_ok(clt_bn_parts(g_ctx, N, HW, false, CLT_BN_PER_PLANE, &parts,
                              &chunk));
    ck_assert_msg(k == 0 ? parts == 0 : parts > 1,
                  "%lldx%lld an item per plane: %lld parts", (long long)N,
                  (long long)HW, (long long)parts);
    ck_assert_check(
        clt_check_bn_stats(g_ctx, N, C, HW, CLT_BN_PER_PLANE, &e), e, TOL,
        "%lldx%lldx%lld an item per plane, cap 600", (long long)N,
        (long long)C, (long long)HW);
    ck_assert_check(clt_check_bn_backward(g_ctx, N, C, HW, 1e-5f, true, false,
                                          CLT_BN_PER_PLANE, false, 0, &e),
                    e, TOL,
                    "backward %lldx%lldx%lld an item per plane, cap 600",
                    (long long)N, (long long)C, (long long)HW);
  }
  /* training's passes in one kernel: within the budget for 2000 planes
   * of 3 with an item per plane, not for 2 planes of 4800 (three passes
   * over each, or two backward), and then refused rather than wrong */
  for (int backward = 0; backward < 2; backward++) {
    bool fits;
    ck_assert_ok(clt_bn_fused_fits(g_ctx, 2000, 3, backward, true, &fits));
    ck_assert(fits);
    ck_assert_check(clt_check_bn_train_forward(g_ctx, 2000, 3, 3, 1e-5f, 0.1f,
                                               true, true, 0, &e),
                    e, TOL, "2000x3x3 in one kernel, cap 600");
    ck_assert_check(clt_check_bn_train_backward(g_ctx, 2000, 3, 3, 1e-5f,
                                                true, false, true, 0, &e),
                    e, TOL, "backward 2000x3x3 in one kernel, cap 600");
    ck_assert_ok(clt_bn_fused_fits(g_ctx, 2, 4800, backward, true, &fits));
    ck_assert(!fits);
  }
  ck_assert_int_ne(clt_check_bn_train_forward(g_ctx, 2, 1, 4800, 1e-5f, 0.1f,
                                              false, true, 0, &e),
                   CLT_OK);
  ck_assert_ptr_nonnull(
      strstr(clt_context_last_error(g_ctx), "loops after 600 iterations"));
  /* planes so long that a part of one would loop past the budget: a
   * refusal naming the limit, not wrong numbers */
  int64_t long_hw = 16 * (int64_t)g_ctx->work_group * 8, parts, chunk;
  ck_assert_int_eq(clt_bn_parts(g_ctx, 20, long_hw, false, 1, &parts, &chunk),
                   CLT_ERR_UNSUPPORTED);
  ck_assert_ptr_nonnull(
      strstr(clt_context_last_error(g_ctx), "loops after 600 iterations"));
  g_ctx->loop_cap = saved;
}
END_TEST

/* Evaluation mode also runs on one value per channel. */
START_TEST(bn_backward_eval_single) {
  double e;
  ck_assert_check(
      clt_check_bn_backward(g_ctx, 1, 3, 1, 1e-5f, false, true, 1, false, 2,
                            &e),
      e,
      TOL, "1x3x1 evaluation, fp16-saved");
}
END_TEST

START_TEST(bn_update_running_shapes) {
  static const int64_t full_c[] = {1, 3, 10, 65}, tiny_c[] = {1, 3};
  static const int64_t ms[] = {2, 49, 343};
  static const float momenta[] = {0.1f, 0.01f, 1.0f};
  const int64_t *cs = test_tiny() ? tiny_c : full_c;
  int count = test_tiny() ? COUNT(tiny_c) : COUNT(full_c);
  double e;
  for (int k = 0; k < count; k++)
    for (int m = 0; m < COUNT(ms); m++)
      for (int mo = 0; mo < COUNT(momenta); mo++)
        ck_assert_check(clt_check_bn_update_running(g_ctx, cs[k], ms[m],
                                                    momenta[mo], &e),
                        e, TOL_EXACT, "C=%lld M=%lld momentum=%g",
                        (long long)cs[k], (long long)ms[m], momenta[mo]);
}
END_TEST

/* The training-mode backward against central differences of the device's
 * own statistics and forward: L = sum(dy * bn(x)). Each perturbed copy of
 * one channel is a channel of its own in one stacked input, so one
 * bn_stats and one bn_forward give every difference. Loop 0 per element,
 * loop 1 in runs of 16 (planes of 17: a run and a tail). */
START_TEST(bn_backward_finite_differences) {
  const bool r16 = _i == 1;
  const int64_t N = test_tiny() ? 2 : 3, C = 2;
  const int64_t HW = r16 ? 17 : test_tiny() ? 3 : 5;
  const int64_t M = N * HW, n = N * C * HW, K = 2 * n; /* stacked channels */
  const float h = 1e-2f, eps = 1e-5f;
  float *x = malloc((size_t)n * sizeof(float));
  float *dy = malloc((size_t)n * sizeof(float));
  float *xs = malloc((size_t)(N * K * HW) * sizeof(float));
  float gamma[2] = {1.3f, -0.7f}, beta[2] = {0.2f, -0.4f};
  float *gs = malloc((size_t)K * sizeof(float));
  float *bs = malloc((size_t)K * sizeof(float));
  ck_assert(x && dy && xs && gs && bs);
  clt_random_fill(x, n, 16, -1.0f, 1.0f);
  clt_random_fill(dy, n, 17, -1.0f, 1.0f);
  /* Channel k = 2 j + sign of the stack: x's channel c(j), with element j
   * moved by +h or -h. */
  for (int64_t j = 0; j < n; j++) {
    int64_t c = (j / HW) % C;
    for (int sign = 0; sign < 2; sign++) {
      int64_t k = 2 * j + sign;
      gs[k] = gamma[c];
      bs[k] = beta[c];
      for (int64_t b = 0; b < N; b++)
        for (int64_t s = 0; s < HW; s++) {
          int64_t src = (b * C + c) * HW + s;
          xs[(b * K + k) * HW + s] =
              x[src] + (src == j ? (sign ? -h : h) : 0.0f);
        }
    }
  }
  clt_tensor *tx = upload_new(x, n), *tdy = upload_new(dy, n);
  clt_tensor *tg = upload_new(gamma, C), *tb = upload_new(beta, C);
  clt_tensor *tmean = upload_new(gamma, C), *tvar = upload_new(gamma, C);
  clt_tensor *tdx = upload_new(x, n), *tdg = upload_new(gamma, C),
             *tdb = upload_new(beta, C);
  clt_tensor *txs = upload_new(xs, N * K * HW);
  clt_tensor *tys = upload_new(xs, N * K * HW);
  clt_tensor *tgs = upload_new(gs, K), *tbs = upload_new(bs, K);
  clt_tensor *tms = upload_new(gs, K), *tvs = upload_new(gs, K);
  ck_assert_ok(clt_bn_stats(g_ctx, tmean, tvar, tx, N, C, HW, 1, NULL));
  ck_assert_ok(clt_bn_backward(g_ctx, tdx, tdg, tdb, tdy, tx, tmean, tvar, tg,
                               N, C, HW, eps, true, false, 1, r16, NULL,
                               NULL));
  ck_assert_ok(clt_bn_stats(g_ctx, tms, tvs, txs, N, K, HW, 1, NULL));
  ck_assert_ok(clt_bn_forward(g_ctx, tys, txs, tms, tvs, tgs, tbs, N, K, HW,
                              eps, false, r16, NULL));
  float *dx = download_new(tdx), *ys = download_new(tys);
  for (int64_t j = 0; j < n; j++) {
    int64_t c = (j / HW) % C;
    double loss[2] = {0.0, 0.0};
    for (int sign = 0; sign < 2; sign++)
      for (int64_t b = 0; b < N; b++)
        for (int64_t s = 0; s < HW; s++)
          loss[sign] += (double)dy[(b * C + c) * HW + s] *
                        ys[(b * K + 2 * j + sign) * HW + s];
    double fd = (loss[0] - loss[1]) / (2.0 * h);
    ck_assert_msg(fabs(fd - dx[j]) < 2e-3 * (fabs(fd) > 1.0 ? fabs(fd) : 1.0),
                  "batchnorm %lldx%lldx%lld (M=%lld, runs16=%d) element "
                  "%lld: backward %g, finite difference %g",
                  (long long)N, (long long)C, (long long)HW, (long long)M,
                  r16, (long long)j, dx[j], fd);
  }
  free(dx);
  free(ys);
  free(x);
  free(dy);
  free(xs);
  free(gs);
  free(bs);
  clt_tensor *all[] = {tx,  tdy, tg,  tb,  tmean, tvar, tdx, tdg,
                       tdb, txs, tys, tgs, tbs,   tms,  tvs};
  for (int i = 0; i < COUNT(all); i++) clt_tensor_destroy(all[i]);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Dropout, product, concatenation                                           */

START_TEST(dropout_lengths) {
  static const int64_t full_n[] = {1, 7, 64, 257, 1000, 100003};
  static const int64_t tiny_n[] = {5, 100};
  static const float ps[] = {0.0f, 0.1f, 0.5f, 0.9f};
  const int64_t *ns = test_tiny() ? tiny_n : full_n;
  int count = test_tiny() ? COUNT(tiny_n) : COUNT(full_n);
  double e;
  for (int k = 0; k < count; k++)
    for (int i = 0; i < COUNT(ps); i++) {
      if (test_tiny() && (i == 1 || i == 3)) continue;
      uint64_t seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(k + 1) + (uint64_t)i;
      ck_assert_check(clt_check_dropout(g_ctx, ns[k], ps[i], seed, 0, &e), e,
                      TOL_EXACT, "n=%lld p=%g counter 0", (long long)ns[k],
                      ps[i]);
      ck_assert_check(
          clt_check_dropout(g_ctx, ns[k], ps[i], seed, 0x100000003ULL, &e), e,
          TOL_EXACT, "n=%lld p=%g counter 2^32+3", (long long)ns[k], ps[i]);
    }
}
END_TEST

START_TEST(mul_lengths) {
  shape_list n = lengths_list();
  double e;
  for (int k = 0; k < n.count; k++)
    for (int acc = 0; acc < 2; acc++)
      ck_assert_check(clt_check_mul(g_ctx, n.v[k], acc, &e), e, TOL_EXACT,
                      "n=%lld accumulate=%d", (long long)n.v[k], acc);
}
END_TEST

START_TEST(channel_slice_shapes) {
  /* N, Cy, Cx, c_off, S */
  static const int64_t full[][5] = {{1, 1, 1, 0, 1},  {3, 7, 3, 0, 49},
                                    {3, 7, 3, 2, 49}, {3, 7, 3, 4, 49},
                                    {2, 5, 5, 0, 10}, {1, 33, 1, 32, 1},
                                    {7, 10, 4, 6, 1}, {2, 3, 1, 1, 300}};
  static const int64_t tiny[][5] = {{1, 3, 1, 1, 2}, {2, 4, 2, 2, 3}};
  int count = test_tiny() ? COUNT(tiny) : COUNT(full);
  double e;
  for (int k = 0; k < count; k++) {
    const int64_t *s = test_tiny() ? tiny[k] : full[k];
    ck_assert_check(clt_check_channel_slice(g_ctx, s[0], s[1], s[2], s[3],
                                            s[4], false, false, &e),
                    e, 0.0, "x %lldx%lldx%lld into %lld channels at %lld",
                    (long long)s[0], (long long)s[2], (long long)s[4],
                    (long long)s[1], (long long)s[3]);
    for (int acc = 0; acc < 2; acc++)
      ck_assert_check(clt_check_channel_slice(g_ctx, s[0], s[1], s[2], s[3],
                                              s[4], true, acc, &e),
                      e, TOL_EXACT,
                      "backward x %lldx%lldx%lld from %lld channels at %lld "
                      "accumulate=%d",
                      (long long)s[0], (long long)s[2], (long long)s[4],
                      (long long)s[1], (long long)s[3], acc);
  }
}
END_TEST

/* ------------------------------------------------------------------------ */

static Suite *ops_suite(void) {
  Suite *s = suite_create("ops");

  TCase *harness = tcase_create("harness");
  tcase_add_test(harness, harness_measures_and_catches_strays);
  tcase_add_test(harness, harness_counts_integers);
  suite_add_tcase(s, harness);

  TCase *ew = tcase_create("elementwise");
  tcase_add_test(ew, add_lengths);
  tcase_add_test(ew, scale_lengths);
  tcase_add_test(ew, unit_u8_lengths);
  tcase_add_test(ew, half_lengths);
  tcase_add_loop_test(ew, element_runs_lengths, 0, COUNT(element_runs));
  tcase_add_loop_test(ew, bias_rows_grid, 0, grid_count());
  tcase_add_test(ew, bias_channels_shapes);
  tcase_add_test(ew, normalize_shapes);
  suite_add_tcase(s, ew);

  TCase *act = tcase_create("activation");
  tcase_add_loop_test(act, activation_forward_lengths, 0, COUNT(activations));
  tcase_add_loop_test(act, activation_backward_lengths, 0, COUNT(activations));
  tcase_add_loop_test(act, activation_backward_finite_differences, 0,
                      COUNT(activations));
  tcase_add_test(act, gelu_accuracy);
  suite_add_tcase(s, act);

  TCase *loss = tcase_create("loss");
  tcase_add_loop_test(loss, softmax_forward_grid, 0, grid_count());
  tcase_add_loop_test(loss, softmax_backward_grid, 0, grid_count());
  tcase_add_test(loss, softmax_backward_finite_differences);
  tcase_add_loop_test(loss, softmax_xent_grid, 0, grid_count());
  tcase_add_test(loss, softmax_xent_finite_differences);
  tcase_add_test(loss, softmax_xent_bad_labels);
  tcase_add_loop_test(loss, regression_loss_grid, 0, grid_count());
  tcase_add_loop_test(loss, sigmoid_xent_grid, 0, grid_count());
  tcase_add_test(loss, loss_rows_by_groups);
  suite_add_tcase(s, loss);

  TCase *red = tcase_create("reduce");
  tcase_add_loop_test(red, sum_channels_dense_grid, 0, grid_count());
  tcase_add_test(red, sum_channels_conv_shapes);
  tcase_add_test(red, group_items_fit_the_work);
  tcase_add_test(red, sum_into_lengths);
  tcase_add_test(red, reductions_under_loop_cap);
  suite_add_tcase(s, red);

  TCase *opt = tcase_create("optim");
  tcase_add_loop_test(opt, sgd_variants_steps, 0, COUNT(sgd_variants));
  tcase_add_loop_test(opt, adam_variants_steps, 0, COUNT(adam_variants));
  tcase_add_loop_test(opt, rmsprop_variants_steps, 0,
                      COUNT(rmsprop_variants));
  suite_add_tcase(s, opt);

  TCase *conv = tcase_create("conv");
  tcase_add_test(conv, conv2d_public_op);
  tcase_add_test(conv, gemm_mma_emulated);
  tcase_add_test(conv, gemm_blocked_tiles);
  tcase_add_loop_test(conv, im2col_windows, 0, conv_window_count());
  tcase_add_loop_test(conv, col2im_adjoint, 0, conv_window_count());
  tcase_add_loop_test(conv, conv_direct_windows, 0, conv_window_count());
  tcase_add_loop_test(conv, conv_implicit_windows, 0, conv_window_count());
  tcase_add_test(conv, conv_implicit_tiles);
  tcase_add_test(conv, conv_implicit_fp16_emulated);
  tcase_add_loop_test(conv, swap_axes_grid, 0, grid_count());
  tcase_add_loop_test(conv, row_kernels_in_parts, 0, conv_window_count());
  tcase_add_test(conv, row_kernels_large_image);
  tcase_add_loop_test(conv, nchw_to_nhwc_grid, 0, grid_count());
  suite_add_tcase(s, conv);

  TCase *tiled = tcase_create("conv tiled");
  tcase_add_loop_test(tiled, conv_tiled_windows, 0, conv_window_count());
  suite_add_tcase(s, tiled);

  TCase *pool = tcase_create("pool");
  tcase_add_loop_test(pool, maxpool_windows, 0, pool_window_count());
  tcase_add_loop_test(pool, avgpool_windows, 0, pool_window_count());
  tcase_add_loop_test(pool, pool_adjoint, 0, pool_window_count());
  tcase_add_test(pool, pool_window_under_loop_cap);
  suite_add_tcase(s, pool);

  TCase *norm = tcase_create("batchnorm");
  tcase_add_loop_test(norm, bn_shapes, 0, bn_shape_count());
  tcase_add_test(norm, bn_backward_eval_single);
  tcase_add_test(norm, bn_update_running_shapes);
  tcase_add_loop_test(norm, bn_backward_finite_differences, 0, 2);
  suite_add_tcase(s, norm);

  TCase *dw = tcase_create("depthwise");
  tcase_add_loop_test(dw, dw_shapes, 0, dw_case_count());
  suite_add_tcase(s, dw);

  TCase *ln = tcase_create("layernorm");
  tcase_add_loop_test(ln, ln_shapes, 0, ln_shape_count());
  tcase_add_test(ln, ln_under_loop_cap);
  tcase_add_loop_test(ln, lnc_shapes, 0, lnc_shape_count());
  tcase_add_test(ln, lnc_under_loop_cap);
  suite_add_tcase(s, ln);

  TCase *misc = tcase_create("dropout and concat");
  tcase_add_test(misc, dropout_lengths);
  tcase_add_test(misc, mul_lengths);
  tcase_add_test(misc, channel_slice_shapes);
  suite_add_tcase(s, misc);
  return s;
}

int main(void) { return test_run_suite("ops", ops_suite); }
