/* Checks of cl/half.cl: f32 -> f16 -> f32 through a plain f16 tensor
 * (round to nearest even, as the host's clt_f32_to_f16), the same
 * rounding in place in f32 (mixed precision), and the loss scaler's
 * unscale-and-check kernel. */
#include <string.h>

#include "check/harness.h"

/* An operand of n values over many binades, subnormal halves included;
 * with past_max, every 25th beyond the largest half (infinity). */
static clt_status binades_operand(check_set *s, int64_t n, bool past_max,
                                  check_f32 **x) {
  CLT_TRY(check_operand(s, n, -3.0f, 3.0f, x));
  for (int64_t i = 0; i < n; i++)
    (*x)->host[i] *= past_max && i % 25 == 24
                         ? 40000.0f
                         : (float)(1 << (i % 24)) / 65536.0f;
  return check_upload(*x);
}

/* The host's f32 -> f16 -> f32 of v[0..n), in place. */
static void host_round(float *v, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    uint16_t half;
    clt_f32_to_f16(&v[i], &half, 1);
    clt_f16_to_f32(&half, &v[i], 1);
  }
}

static clt_status round_trip_body(check_set *s, const void *arg) {
  int64_t n = *(const int64_t *)arg;
  check_f32 *x, *y;
  clt_tensor *h = NULL;
  CLT_TRY(binades_operand(s, n, false, &x));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &y));
  clt_status st = clt_tensor_create(s->ctx, CLT_F16, 1, &n, &h);
  if (st == CLT_OK) st = clt_tensor_convert(h, x->t);
  if (st == CLT_OK) st = clt_tensor_convert(y->t, h);
  clt_tensor_destroy(h);
  CLT_TRY(st);
  memcpy(y->host, x->host, (size_t)n * sizeof(float));
  host_round(y->host, n);
  return CLT_OK;
}

clt_status clt_check_half_round_trip(clt_context *ctx, int64_t n,
                                     double *max_err) {
  return check_run(ctx, 11, round_trip_body, &n, max_err);
}

/* Mixed precision's rounding in place (clt_round_f16, and
 * clt_round_save_f16 which keeps an fp16 copy too), against
 * f32 -> f16 -> f32 on the host, over the same binades plus values past
 * the largest half (infinity). */
static clt_status round_in_place_body(check_set *s, const void *arg) {
  int64_t n = *(const int64_t *)arg;
  check_f32 *x, *y, *z;
  clt_tensor *h = NULL;
  CLT_TRY(binades_operand(s, n, true, &x));
  CLT_TRY(binades_operand(s, n, true, &y));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &z));
  CLT_TRY(clt_round_f16(s->ctx, x->t, x->t, n));
  /* The forward's form: rounded in place and saved in fp16 (read back
   * through z). */
  clt_status st = clt_tensor_create(s->ctx, CLT_F16, 1, &n, &h);
  if (st == CLT_OK) st = clt_round_save_f16(s->ctx, y->t, h, n);
  if (st == CLT_OK) st = clt_tensor_convert(z->t, h);
  clt_tensor_destroy(h);
  CLT_TRY(st);
  host_round(x->host, n);
  host_round(y->host, n);
  memcpy(z->host, y->host, (size_t)n * sizeof(float));
  return CLT_OK;
}

clt_status clt_check_half_round_in_place(clt_context *ctx, int64_t n,
                                         double *max_err) {
  return check_run(ctx, 13, round_in_place_body, &n, max_err);
}

/* g /= 4 in place, no overflow found. */
static clt_status unscale_body(check_set *s, const void *arg) {
  int64_t n = *(const int64_t *)arg;
  check_f32 *g;
  CLT_TRY(check_operand(s, n, -8.0f, 8.0f, &g));
  clt_loss_scaler_options o;
  clt_loss_scaler_options_init(&o);
  o.init_scale = 4.0f;
  clt_loss_scaler *sc = NULL;
  CLT_TRY(clt_loss_scaler_create(s->ctx, &o, &sc));
  bool skip = true;
  clt_status st = clt_loss_scaler_unscale(sc, g->t, &skip);
  clt_loss_scaler_destroy(sc);
  CLT_TRY(st);
  if (skip)
    return clt_ctx_fail(s->ctx, CLT_ERR_INTERNAL,
                        "loss scaler: finite gradients reported as overflow");
  for (int64_t i = 0; i < n; i++) g->host[i] *= 0.25f;
  return CLT_OK;
}

clt_status clt_check_loss_scaler_unscale(clt_context *ctx, int64_t n,
                                         double *max_err) {
  return check_run(ctx, 12, unscale_body, &n, max_err);
}
