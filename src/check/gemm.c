/* Checks of GEMM (CLBlast, through ops/gemm.c, our own fp32 kernels,
 * ops/gemm_blocked.c, and the fp16 route's kernel, ops/gemm_mma.c),
 * strided batched. */
#include <math.h>
#include <stdlib.h>

#include "check/harness.h"
#include "ops/gemm_blocked.h"

typedef struct gemm_args {
  clt_transpose ta, tb;
  int64_t m, n, k;
  float alpha, beta;
  int64_t batch;
  int mma_config; /* -1: CLBlast's SGEMM; else the fp16 kernel's tiles */
  bool colmajor;  /* SGEMM in the column-major form */
  int blocked;    /* -1: as above; else our own fp32 kernel's configuration */
  int tf32x3;     /* -1: as above; else the 3xTF32 configuration */
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
  if (g->tf32x3 >= 0) {
    CLT_TRY(clt_gemm_tf32x3_strided_batched(
        s->ctx, g->tf32x3, g->ta, g->tb, m, n, k, g->alpha, a->t, m * k,
        b->t, k * n, g->beta, c->t, m * n, g->batch));
  } else if (g->blocked >= 0) {
    CLT_TRY(clt_gemm_blocked_strided_batched(
        s->ctx, g->blocked, g->ta, g->tb, m, n, k, g->alpha, a->t, m * k,
        b->t, k * n, g->beta, c->t, m * n, g->batch));
  } else if (g->mma_config < 0) {
    CLT_TRY((g->colmajor ? clt_gemm_strided_batched_colmajor
                         : clt_gemm_strided_batched)(
        s->ctx, g->ta, g->tb, m, n, k, g->alpha, a->t, m * k, b->t, k * n,
        g->beta, c->t, m * n, g->batch));
  } else {
    CLT_TRY(clt_gemm_f16_strided_batched(s->ctx, g->mma_config, g->ta, g->tb,
                                         m, n, k, g->alpha, a->t, m * k, b->t,
                                         k * n, g->beta, c->t, m * n,
                                         g->batch));
  }
  /* The fp16 kernel's inputs are the operands rounded to fp16 (copies:
   * the harness compares the operands themselves too). */
  int64_t na = g->batch * m * k, nb = g->batch * k * n;
  float *ra = a->host, *rb = b->host, *copy = NULL;
  uint16_t *h = NULL;
  if (g->mma_config >= 0) {
    copy = malloc((size_t)(na + nb) * sizeof(float));
    h = malloc((size_t)(na + nb) * sizeof(uint16_t));
    if (!copy || !h) {
      free(copy);
      free(h);
      return clt_ctx_fail(s->ctx, CLT_ERR_HOST_MEMORY, "gemm check");
    }
    clt_f32_to_f16(a->host, h, na);
    clt_f32_to_f16(b->host, h + na, nb);
    clt_f16_to_f32(h, copy, na + nb);
    ra = copy;
    rb = copy + na;
  }
  for (int64_t i = 0; i < g->batch; i++)
    gemm_reference(g, ra + i * m * k, rb + i * k * n, c->host + i * m * n);
  free(copy);
  free(h);
  return CLT_OK;
}

clt_status clt_check_gemm_form(clt_context *ctx, bool colmajor,
                               clt_transpose ta, clt_transpose tb, int64_t m,
                               int64_t n, int64_t k, float alpha, float beta,
                               int64_t batch, double *max_err) {
  gemm_args g = {ta, tb, m, n, k, alpha, beta, batch, -1, colmajor, -1, -1};
  clt_status st = check_run(ctx, 10, gemm_body, &g, max_err);
  /* Sums of k products of values in [-1, 1]: scale the tolerance by k. */
  if (st == CLT_OK) *max_err /= sqrt((double)k);
  return st;
}

clt_status clt_check_gemm(clt_context *ctx, clt_transpose ta, clt_transpose tb,
                          int64_t m, int64_t n, int64_t k, float alpha,
                          float beta, int64_t batch, double *max_err) {
  return clt_check_gemm_form(ctx, false, ta, tb, m, n, k, alpha, beta, batch,
                             max_err);
}

clt_status clt_check_gemm_mma(clt_context *ctx, int config, clt_transpose ta,
                              clt_transpose tb, int64_t m, int64_t n,
                              int64_t k, float alpha, float beta,
                              int64_t batch, double *max_err) {
  gemm_args g = {ta, tb, m, n, k, alpha, beta, batch, config, false, -1, -1};
  clt_status st = check_run(ctx, 11, gemm_body, &g, max_err);
  if (st == CLT_OK) *max_err /= sqrt((double)k);
  return st;
}

clt_status clt_check_gemm_blocked(clt_context *ctx, int config,
                                  clt_transpose ta, clt_transpose tb,
                                  int64_t m, int64_t n, int64_t k, float alpha,
                                  float beta, int64_t batch, double *max_err) {
  gemm_args g = {ta, tb, m, n, k, alpha, beta, batch, -1, false, config, -1};
  clt_status st = check_run(ctx, 12, gemm_body, &g, max_err);
  if (st == CLT_OK) *max_err /= sqrt((double)k);
  return st;
}

clt_status clt_check_gemm_tf32x3(clt_context *ctx, int config,
                                 clt_transpose ta, clt_transpose tb,
                                 int64_t m, int64_t n, int64_t k, float alpha,
                                 float beta, int64_t batch, double *max_err) {
  gemm_args g = {ta, tb, m, n, k, alpha, beta, batch, -1, false, -1, config};
  clt_status st = check_run(ctx, 13, gemm_body, &g, max_err);
  if (st == CLT_OK) *max_err /= sqrt((double)k);
  return st;
}

/* clt_gemm_blocked_bias: C = alpha A B^T (A [m, k], B [n, k]), then the
 * bias of C's columns and a ReLU where relu; the reference rounds the
 * product to f32 before adding the bias, as the kernel does. */
typedef struct gemm_bias_args {
  int config;
  int64_t m, n, k;
  float alpha;
  bool relu;
} gemm_bias_args;

static clt_status gemm_bias_body(check_set *s, const void *arg) {
  const gemm_bias_args *g = arg;
  int64_t m = g->m, n = g->n, k = g->k;
  check_f32 *a, *b, *c, *bias;
  CLT_TRY(check_operand(s, m * k, -1.0f, 1.0f, &a));
  CLT_TRY(check_operand(s, n * k, -1.0f, 1.0f, &b));
  CLT_TRY(check_operand(s, m * n, -1.0f, 1.0f, &c));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &bias));
  CLT_TRY(clt_gemm_blocked_bias(s->ctx, g->config, CLT_NO_TRANS, CLT_TRANS, m,
                                n, k, g->alpha, a->t, k, b->t, k, c->t, n,
                                bias->t, g->relu));
  gemm_args plain = {CLT_NO_TRANS, CLT_TRANS, m, n, k, g->alpha, 0.0f, 1,
                     -1, false, g->config, -1};
  gemm_reference(&plain, a->host, b->host, c->host);
  for (int64_t i = 0; i < m * n; i++) {
    float v = c->host[i] + bias->host[i % n];
    c->host[i] = g->relu && !(v > 0.0f) ? 0.0f : v;
  }
  return CLT_OK;
}

clt_status clt_check_gemm_blocked_bias(clt_context *ctx, int config,
                                       int64_t m, int64_t n, int64_t k,
                                       float alpha, bool relu,
                                       double *max_err) {
  gemm_bias_args g = {config, m, n, k, alpha, relu};
  clt_status st = check_run(ctx, 14, gemm_bias_body, &g, max_err);
  if (st == CLT_OK) *max_err /= sqrt((double)k);
  return st;
}
