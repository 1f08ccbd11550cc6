/* Checks of cl/half.cl: f32 -> f16 -> f32 through a plain f16 tensor
 * (round to nearest even, as the host's clt_f32_to_f16), the same
 * rounding in place in f32 (mixed precision), and the loss scaler's
 * unscale-and-check kernel. */
#include "check/harness.h"

static clt_status round_trip_body(check_set *s, const void *arg) {
  int64_t n = *(const int64_t *)arg;
  check_f32 *x, *y;
  clt_tensor *h = NULL;
  /* Values over many binades, subnormal halves included. */
  CLT_TRY(check_operand(s, n, -3.0f, 3.0f, &x));
  for (int64_t i = 0; i < n; i++)
    x->host[i] *= (float)(1 << (i % 24)) / 65536.0f;
  CLT_TRY(check_upload(x));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &y));
  clt_status st = clt_tensor_create(s->ctx, CLT_F16, 1, &n, &h);
  if (st == CLT_OK) st = clt_tensor_convert(h, x->t);
  if (st == CLT_OK) st = clt_tensor_convert(y->t, h);
  clt_tensor_destroy(h);
  CLT_TRY(st);
  for (int64_t i = 0; i < n; i++) {
    uint16_t half;
    clt_f32_to_f16(&x->host[i], &half, 1);
    clt_f16_to_f32(&half, &y->host[i], 1);
  }
  return CLT_OK;
}

clt_status clt_check_half_round_trip(clt_context *ctx, int64_t n,
                                     double *max_err) {
  return check_run(ctx, 11, round_trip_body, &n, max_err);
}

/* Mixed precision's rounding in place (clt_round_f16), against
 * f32 -> f16 -> f32 on the host, over the same binades plus values past
 * the largest half (infinity). */
static clt_status round_in_place_body(check_set *s, const void *arg) {
  int64_t n = *(const int64_t *)arg;
  check_f32 *x;
  CLT_TRY(check_operand(s, n, -3.0f, 3.0f, &x));
  for (int64_t i = 0; i < n; i++)
    x->host[i] *= i % 25 == 24 ? 40000.0f : (float)(1 << (i % 24)) / 65536.0f;
  CLT_TRY(check_upload(x));
  CLT_TRY(clt_round_f16(s->ctx, x->t, x->t, n));
  for (int64_t i = 0; i < n; i++) {
    uint16_t half;
    clt_f32_to_f16(&x->host[i], &half, 1);
    clt_f16_to_f32(&half, &x->host[i], 1);
  }
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
