/* Checks of GEMM (CLBlast, through ops/gemm.c), strided batched. */
#include <math.h>

#include "check/harness.h"

typedef struct gemm_args {
  clt_transpose ta, tb;
  int64_t m, n, k;
  float alpha, beta;
  int64_t batch;
} gemm_args;

/* c = alpha op(a) op(b) + beta c for one matrix, in double. */
static void gemm_reference(const gemm_args *g, const float *a, const float *b,
                           float *c) {
  int64_t m = g->m, n = g->n, k = g->k;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0.0;
      for (int64_t p = 0; p < k; p++) {
        double av = g->ta == CLT_TRANS ? a[p * m + i] : a[i * k + p];
        double bv = g->tb == CLT_TRANS ? b[j * k + p] : b[p * n + j];
        s += av * bv;
      }
      c[i * n + j] = (float)(g->alpha * s + g->beta * c[i * n + j]);
    }
}

static clt_status gemm_body(check_set *s, const void *arg) {
  const gemm_args *g = arg;
  int64_t m = g->m, n = g->n, k = g->k;
  check_f32 *a, *b, *c;
  CLT_TRY(check_operand(s, g->batch * m * k, -1.0f, 1.0f, &a));
  CLT_TRY(check_operand(s, g->batch * k * n, -1.0f, 1.0f, &b));
  CLT_TRY(check_operand(s, g->batch * m * n, -1.0f, 1.0f, &c));
  CLT_TRY(clt_gemm_strided_batched(s->ctx, g->ta, g->tb, m, n, k, g->alpha,
                                   a->t, m * k, b->t, k * n, g->beta, c->t,
                                   m * n, g->batch));
  for (int64_t i = 0; i < g->batch; i++)
    gemm_reference(g, a->host + i * m * k, b->host + i * k * n,
                   c->host + i * m * n);
  return CLT_OK;
}

clt_status clt_check_gemm(clt_context *ctx, clt_transpose ta, clt_transpose tb,
                          int64_t m, int64_t n, int64_t k, float alpha,
                          float beta, int64_t batch, double *max_err) {
  gemm_args g = {ta, tb, m, n, k, alpha, beta, batch};
  clt_status st = check_run(ctx, 10, gemm_body, &g, max_err);
  /* Sums of k products of values in [-1, 1]: scale the tolerance by k. */
  if (st == CLT_OK) *max_err /= sqrt((double)k);
  return st;
}
