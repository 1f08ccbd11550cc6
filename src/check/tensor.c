/* Checks of cl/tensor.cl (fill, bytes to floats) and of copies through
 * views. */
#include <string.h>

#include "check/harness.h"

static clt_status fill_body(check_set *s, const void *arg) {
  int64_t n = *(const int64_t *)arg;
  check_f32 *x;
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &x));
  CLT_TRY(clt_tensor_fill(x->t, 0.25));
  for (int64_t i = 0; i < n; i++) x->host[i] = 0.25f;
  return CLT_OK;
}

clt_status clt_check_fill(clt_context *ctx, int64_t n, double *max_err) {
  return check_run(ctx, 1, fill_body, &n, max_err);
}

/* Copies the last third of one tensor into the first third of another,
 * through views of the operands (views of views). */
static clt_status copy_view_body(check_set *s, const void *arg) {
  int64_t n = *(const int64_t *)arg;
  int64_t third = n / 3 > 0 ? n / 3 : 1, off = n - third;
  check_f32 *src, *dst;
  clt_tensor *vs, *vd;
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &src));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &dst));
  CLT_TRY(check_view(s, src->t, off, third, &vs));
  CLT_TRY(check_view(s, dst->t, 0, third, &vd));
  CLT_TRY(clt_tensor_copy(vd, vs));
  memcpy(dst->host, src->host + off, (size_t)third * sizeof(float));
  return CLT_OK;
}

clt_status clt_check_copy_view(clt_context *ctx, int64_t n, double *max_err) {
  return check_run(ctx, 2, copy_view_body, &n, max_err);
}

/* Pixel bytes to floats in [0, 1] (clt_unit_u8, what the fit loop makes of
 * the loader's byte batches): the host's (float)b / 255.0f exactly. The
 * bytes run through every value (77 is prime to 256), from a view at an
 * odd offset. */
static clt_status unit_u8_body(check_set *s, const void *arg) {
  int64_t n = *(const int64_t *)arg;
  uint8_t *bytes = NULL;
  float *room = NULL;
  check_f32 *y;
  clt_tensor *base, *x;
  CLT_TRY(check_floats(s, (n + CHECK_GUARD + 3) / 4, &room)); /* as bytes */
  bytes = (uint8_t *)room;
  for (int64_t i = 0; i < n + CHECK_GUARD; i++)
    bytes[i] = (uint8_t)((i * 77 + 5) % 256);
  CLT_TRY(check_bytes(s, bytes, n + CHECK_GUARD, &base));
  CLT_TRY(check_view(s, base, CHECK_GUARD, n, &x));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &y));
  CLT_TRY(clt_unit_u8(s->ctx, y->t, x, n));
  for (int64_t i = 0; i < n; i++)
    y->host[i] = (float)bytes[CHECK_GUARD + i] / 255.0f;
  return CLT_OK;
}

clt_status clt_check_unit_u8(clt_context *ctx, int64_t n, double *max_err) {
  return check_run(ctx, 3, unit_u8_body, &n, max_err);
}
