/* Checks of cl/dropout.cl: dropout (a counter-based mask) and the
 * element-wise product. */
#include <math.h>
#include <string.h>

#include "check/harness.h"

typedef struct dropout_args {
  int64_t n;
  float p;
  uint64_t seed, counter;
} dropout_args;

/* Runs dropout of x into the fresh (offset 0) tensors y2 / mask2 and
 * downloads the mask into got. */
static clt_status dropout_again(check_set *s, const check_f32 *x,
                                clt_tensor *y2, clt_tensor *mask2,
                                const dropout_args *a, uint64_t seed,
                                uint64_t counter, float *got) {
  CLT_TRY(
      clt_dropout_forward(s->ctx, y2, mask2, x->t, a->n, a->p, seed, counter));
  return clt_tensor_download(mask2, got);
}

static clt_status dropout_body(check_set *s, const void *arg) {
  const dropout_args *a = arg;
  int64_t n = a->n;
  float p = a->p;
  check_f32 *x, *y, *mask;
  clt_tensor *y2, *mask2;
  float *first, *got;
  CLT_TRY(check_floats(s, n, &first));
  CLT_TRY(check_floats(s, n, &got));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &x));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &y));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &mask));
  CLT_TRY(check_plain(s, n, &y2));
  CLT_TRY(check_plain(s, n, &mask2));
  CLT_TRY(clt_dropout_forward(s->ctx, y->t, mask->t, x->t, n, p, a->seed,
                              a->counter));
  CLT_TRY(clt_tensor_download(mask->t, first));
  /* What the device kept decides the expectation; the rest is exact. */
  double scale = 1.0 / (1.0 - (double)p);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; i++) {
    bool keep = first[i] != 0.0f;
    kept += keep;
    mask->host[i] = keep ? (float)scale : 0.0f;
    y->host[i] = keep ? (float)(x->host[i] * scale) : 0.0f;
  }
  CLT_TRY(check_compare(s));
  double mean = (double)n * (1.0 - p), sd = sqrt((double)n * p * (1.0 - p));
  if (fabs((double)kept - mean) > 5.0 * sd + 0.5) check_worse(s, 1.0);
  /* The same call again into other buffers: the same mask, bit for bit. */
  CLT_TRY(dropout_again(s, x, y2, mask2, a, a->seed, a->counter, got));
  if (memcmp(got, first, (size_t)n * sizeof(float)) != 0) check_worse(s, 1.0);
  CLT_TRY(clt_tensor_download(y2, got));
  check_worse(s, check_max_rel_err(got, y->host, n));
  /* Another counter or seed: another mask, where n p (1 - p) makes a
   * coincidence negligible (below 1e-8). */
  if ((double)n * p * (1.0 - p) < 20.0) return CLT_OK;
  const uint64_t high = (uint64_t)1 << 40;
  const uint64_t other[4][2] = {{a->seed, a->counter + 1},
                                {a->seed, a->counter ^ high},
                                {a->seed + 1, a->counter},
                                {a->seed ^ high, a->counter}};
  for (int k = 0; k < 4; k++) {
    CLT_TRY(dropout_again(s, x, y2, mask2, a, other[k][0], other[k][1], got));
    int64_t differ = 0;
    for (int64_t i = 0; i < n; i++)
      differ += (got[i] != 0.0f) != (first[i] != 0.0f);
    if (differ == 0) check_worse(s, 1.0);
  }
  return CLT_OK;
}

clt_status clt_check_dropout(clt_context *ctx, int64_t n, float p,
                             uint64_t seed, uint64_t counter, double *max_err) {
  dropout_args a = {n, p, seed, counter};
  return check_run(ctx, 280, dropout_body, &a, max_err);
}

typedef struct mul_args {
  int64_t n;
  bool accumulate;
} mul_args;

static clt_status mul_body(check_set *s, const void *arg) {
  const mul_args *a = arg;
  check_f32 *x, *y, *out;
  CLT_TRY(check_operand(s, a->n, -2.0f, 2.0f, &x));
  CLT_TRY(check_operand(s, a->n, -2.0f, 2.0f, &y));
  CLT_TRY(check_operand(s, a->n, -1.0f, 1.0f, &out));
  CLT_TRY(clt_mul_forward(s->ctx, out->t, x->t, y->t, a->n, a->accumulate));
  for (int64_t i = 0; i < a->n; i++) {
    double v = (double)x->host[i] * y->host[i];
    out->host[i] = (float)(a->accumulate ? out->host[i] + v : v);
  }
  return CLT_OK;
}

clt_status clt_check_mul(clt_context *ctx, int64_t n, bool accumulate,
                         double *max_err) {
  mul_args a = {n, accumulate};
  return check_run(ctx, 290, mul_body, &a, max_err);
}
