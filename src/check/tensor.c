/* Checks of cl/tensor.cl (fill) and of copies through views. */
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
