/* Device ops against host references (see opcheck.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "ops/opcheck.h"

void clt_random_fill(float *host, int64_t n, uint64_t seed, float lo,
                     float hi) {
  clt_rng r = clt_rng_derive(seed, 99, 0);
  for (int64_t i = 0; i < n; i++)
    host[i] = lo + (hi - lo) * (float)clt_rng_uniform(&r);
}

static double rel_err(double got, double want) {
  double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
  if (isnan(got) != isnan(want)) return INFINITY;
  if (isnan(got)) return 0.0;
  return fabs(got - want) / scale;
}

static double max_rel_err(const float *got, const float *want, int64_t n) {
  double worst = 0.0;
  for (int64_t i = 0; i < n; i++) {
    double e = rel_err(got[i], want[i]);
    if (e > worst) worst = e;
  }
  return worst;
}

/* A device tensor of n f32 with a host copy of random values. */
typedef struct check_buf {
  clt_tensor *t;
  float *host;
} check_buf;

static clt_status buf_make(clt_context *ctx, int64_t n, uint64_t seed,
                           check_buf *b) {
  b->host = malloc((size_t)n * sizeof(float));
  if (!b->host) return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "check buffer");
  clt_random_fill(b->host, n, seed, -1.0f, 1.0f);
  int64_t shape[1] = {n};
  clt_status st = clt_tensor_create(ctx, CLT_F32, 1, shape, &b->t);
  if (st == CLT_OK) st = clt_tensor_upload(b->t, b->host);
  return st;
}

static void buf_free(check_buf *b) {
  clt_tensor_destroy(b->t);
  free(b->host);
  b->t = NULL;
  b->host = NULL;
}

clt_status clt_check_fill(clt_context *ctx, int64_t n, double *max_err) {
  check_buf b = {0};
  clt_status st = buf_make(ctx, n, 1, &b);
  if (st == CLT_OK) st = clt_tensor_fill(b.t, 0.25);
  if (st == CLT_OK) st = clt_tensor_download(b.t, b.host);
  *max_err = 0.0;
  for (int64_t i = 0; st == CLT_OK && i < n; i++) {
    double e = rel_err(b.host[i], 0.25);
    if (e > *max_err) *max_err = e;
  }
  buf_free(&b);
  return st;
}

/* Copies the middle third of a tensor through views and checks it. */
clt_status clt_check_copy_view(clt_context *ctx, int64_t n, double *max_err) {
  check_buf src = {0}, dst = {0};
  clt_tensor *vs = NULL, *vd = NULL;
  int64_t third = n / 3 > 0 ? n / 3 : 1, off = n - third;
  int64_t shape[1] = {third};
  clt_status st = buf_make(ctx, n, 2, &src);
  if (st == CLT_OK) st = buf_make(ctx, n, 3, &dst);
  if (st == CLT_OK) st = clt_tensor_view(src.t, off, 1, shape, &vs);
  if (st == CLT_OK) st = clt_tensor_view(dst.t, 0, 1, shape, &vd);
  if (st == CLT_OK) st = clt_tensor_copy(vd, vs);
  float *got = malloc((size_t)n * sizeof(float));
  if (!got && st == CLT_OK) st = CLT_ERR_HOST_MEMORY;
  if (st == CLT_OK) st = clt_tensor_download(dst.t, got);
  if (st == CLT_OK) {
    memcpy(dst.host, src.host + off, (size_t)third * sizeof(float));
    *max_err = max_rel_err(got, dst.host, n);
  }
  free(got);
  clt_tensor_destroy(vs);
  clt_tensor_destroy(vd);
  buf_free(&src);
  buf_free(&dst);
  return st;
}

static void gemm_reference(clt_transpose ta, clt_transpose tb, int64_t m,
                           int64_t n, int64_t k, float alpha, const float *a,
                           const float *b, float beta, float *c) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0.0;
      for (int64_t p = 0; p < k; p++) {
        double av = ta == CLT_TRANS ? a[p * m + i] : a[i * k + p];
        double bv = tb == CLT_TRANS ? b[j * k + p] : b[p * n + j];
        s += av * bv;
      }
      c[i * n + j] = (float)(alpha * s + beta * c[i * n + j]);
    }
}

clt_status clt_check_gemm(clt_context *ctx, clt_transpose ta, clt_transpose tb,
                          int64_t m, int64_t n, int64_t k, float alpha,
                          float beta, int64_t batch, double *max_err) {
  check_buf a = {0}, b = {0}, c = {0};
  clt_status st = buf_make(ctx, batch * m * k, 10, &a);
  if (st == CLT_OK) st = buf_make(ctx, batch * k * n, 11, &b);
  if (st == CLT_OK) st = buf_make(ctx, batch * m * n, 12, &c);
  if (st == CLT_OK)
    st = clt_gemm_strided_batched(ctx, ta, tb, m, n, k, alpha, a.t, m * k, b.t,
                                  k * n, beta, c.t, m * n, batch);
  float *got = malloc((size_t)(batch * m * n) * sizeof(float));
  if (!got && st == CLT_OK) st = CLT_ERR_HOST_MEMORY;
  if (st == CLT_OK) st = clt_tensor_download(c.t, got);
  if (st == CLT_OK) {
    for (int64_t i = 0; i < batch; i++)
      gemm_reference(ta, tb, m, n, k, alpha, a.host + i * m * k,
                     b.host + i * k * n, beta, c.host + i * m * n);
    /* Sums of k products of values in [-1, 1]: scale the tolerance by k. */
    *max_err = max_rel_err(got, c.host, batch * m * n) / sqrt((double)k);
  }
  free(got);
  buf_free(&a);
  buf_free(&b);
  buf_free(&c);
  return st;
}
