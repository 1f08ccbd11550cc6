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

/* ------------------------------------------------------------------------ */
/* Guarded operands                                                          */

/* Elements kept on each side of every operand: odd, so that offsets are not
 * aligned to anything a kernel might assume. */
#define GUARD 3
#define SET_MAX_BUFS 12
#define SET_MAX_IBUFS 2
#define SET_MAX_WORK 2

/* An f32 operand: a view of n elements at offset GUARD into a base tensor
 * of n + 2 * GUARD. `all` mirrors the whole base on the host; after the op
 * the reference writes what it expects into `host`, and the comparison
 * covers the guards too. */
typedef struct guarded_buf {
  clt_tensor *base, *t;
  float *all, *host;
  int64_t n;
} guarded_buf;

/* The same for an i32 operand (pooling's argmax). */
typedef struct guarded_ibuf {
  clt_tensor *base, *t;
  int32_t *all, *host;
  int64_t n;
} guarded_ibuf;

/* The operands of one check, freed together. */
typedef struct check_set {
  clt_context *ctx;
  guarded_buf bufs[SET_MAX_BUFS];
  int count;
  guarded_ibuf ibufs[SET_MAX_IBUFS];
  int icount;
  clt_tensor *labels; /* the one non-f32 operand (cross-entropy) */
  double *work[SET_MAX_WORK]; /* host scratch of the reference */
  int wcount;
  uint64_t seed;
  double err;
} check_set;

static void set_begin(check_set *s, clt_context *ctx, uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->ctx = ctx;
  s->seed = seed;
}

static clt_status buf_upload(guarded_buf *b) {
  return clt_tensor_upload(b->base, b->all);
}

/* A new operand of n elements uniform in [lo, hi) (guards too), uploaded. */
static clt_status set_buf(check_set *s, int64_t n, float lo, float hi,
                          guarded_buf **out) {
  if (s->count == SET_MAX_BUFS)
    return clt_ctx_fail(s->ctx, CLT_ERR_INTERNAL, "opcheck: too many operands");
  guarded_buf *b = &s->bufs[s->count++];
  int64_t total = n + 2 * GUARD;
  b->n = n;
  b->all = malloc((size_t)total * sizeof(float));
  if (!b->all) return clt_ctx_fail(s->ctx, CLT_ERR_HOST_MEMORY, "opcheck");
  b->host = b->all + GUARD;
  clt_random_fill(b->all, total, s->seed++, lo, hi);
  int64_t base_shape[1] = {total}, shape[1] = {n};
  CLT_TRY(clt_tensor_create(s->ctx, CLT_F32, 1, base_shape, &b->base));
  CLT_TRY(clt_tensor_view(b->base, GUARD, 1, shape, &b->t));
  CLT_TRY(buf_upload(b));
  *out = b;
  return CLT_OK;
}

/* A new i32 operand of n elements uniform in [-99, 99] (guards too),
 * uploaded. */
static clt_status set_ibuf(check_set *s, int64_t n, guarded_ibuf **out) {
  if (s->icount == SET_MAX_IBUFS)
    return clt_ctx_fail(s->ctx, CLT_ERR_INTERNAL,
                        "opcheck: too many integer operands");
  guarded_ibuf *b = &s->ibufs[s->icount++];
  int64_t total = n + 2 * GUARD;
  b->n = n;
  b->all = malloc((size_t)total * sizeof(int32_t));
  if (!b->all) return clt_ctx_fail(s->ctx, CLT_ERR_HOST_MEMORY, "opcheck");
  b->host = b->all + GUARD;
  clt_rng r = clt_rng_derive(s->seed++, 97, 0);
  for (int64_t i = 0; i < total; i++)
    b->all[i] = (int32_t)clt_rng_below(&r, 199) - 99;
  int64_t base_shape[1] = {total}, shape[1] = {n};
  CLT_TRY(clt_tensor_create(s->ctx, CLT_I32, 1, base_shape, &b->base));
  CLT_TRY(clt_tensor_view(b->base, GUARD, 1, shape, &b->t));
  CLT_TRY(clt_tensor_upload(b->base, b->all));
  *out = b;
  return CLT_OK;
}

/* Downloads every operand (guards included) and folds its largest
 * difference from the host's expectation into s->err; an integer that
 * differs counts as 1. */
static clt_status set_compare(check_set *s) {
  for (int i = 0; i < s->icount; i++) {
    guarded_ibuf *b = &s->ibufs[i];
    int64_t total = b->n + 2 * GUARD;
    int32_t *got = malloc((size_t)total * sizeof(int32_t));
    if (!got) return clt_ctx_fail(s->ctx, CLT_ERR_HOST_MEMORY, "opcheck");
    clt_status st = clt_tensor_download(b->base, got);
    for (int64_t j = 0; st == CLT_OK && j < total; j++)
      if (got[j] != b->all[j] && s->err < 1.0) s->err = 1.0;
    free(got);
    CLT_TRY(st);
  }
  for (int i = 0; i < s->count; i++) {
    guarded_buf *b = &s->bufs[i];
    int64_t total = b->n + 2 * GUARD;
    float *got = malloc((size_t)total * sizeof(float));
    if (!got) return clt_ctx_fail(s->ctx, CLT_ERR_HOST_MEMORY, "opcheck");
    clt_status st = clt_tensor_download(b->base, got);
    if (st == CLT_OK) {
      double e = max_rel_err(got, b->all, total);
      if (e > s->err) s->err = e;
    }
    free(got);
    CLT_TRY(st);
  }
  return CLT_OK;
}

static clt_status set_end(check_set *s, clt_status st, double *max_err) {
  *max_err = st == CLT_OK ? s->err : INFINITY;
  for (int i = 0; i < s->count; i++) {
    clt_tensor_destroy(s->bufs[i].t);
    clt_tensor_destroy(s->bufs[i].base);
    free(s->bufs[i].all);
  }
  for (int i = 0; i < s->icount; i++) {
    clt_tensor_destroy(s->ibufs[i].t);
    clt_tensor_destroy(s->ibufs[i].base);
    free(s->ibufs[i].all);
  }
  for (int i = 0; i < s->wcount; i++) free(s->work[i]);
  clt_tensor_destroy(s->labels);
  s->count = 0;
  s->icount = 0;
  s->wcount = 0;
  s->labels = NULL;
  return st;
}

/* ------------------------------------------------------------------------ */
/* Element-wise ops and bias                                                 */

static clt_status add_body(check_set *s, int64_t n, bool accumulate) {
  guarded_buf *a, *b, *out;
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &a));
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &b));
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &out));
  CLT_TRY(clt_add_forward(s->ctx, out->t, a->t, b->t, n, accumulate));
  for (int64_t i = 0; i < n; i++) {
    double v = (double)a->host[i] + b->host[i];
    out->host[i] = (float)(accumulate ? out->host[i] + v : v);
  }
  return set_compare(s);
}

clt_status clt_check_add(clt_context *ctx, int64_t n, bool accumulate,
                         double *max_err) {
  check_set s;
  set_begin(&s, ctx, 20);
  return set_end(&s, add_body(&s, n, accumulate), max_err);
}

static clt_status scale_body(check_set *s, int64_t n, float alpha,
                             bool accumulate) {
  guarded_buf *x, *out;
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &x));
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &out));
  CLT_TRY(clt_scale_forward(s->ctx, out->t, x->t, n, alpha, accumulate));
  for (int64_t i = 0; i < n; i++) {
    double v = (double)alpha * x->host[i];
    out->host[i] = (float)(accumulate ? out->host[i] + v : v);
  }
  return set_compare(s);
}

clt_status clt_check_scale(clt_context *ctx, int64_t n, float alpha,
                           bool accumulate, double *max_err) {
  check_set s;
  set_begin(&s, ctx, 30);
  return set_end(&s, scale_body(&s, n, alpha, accumulate), max_err);
}

static clt_status bias_rows_body(check_set *s, int64_t rows, int64_t cols) {
  guarded_buf *y, *bias;
  CLT_TRY(set_buf(s, rows * cols, -1.0f, 1.0f, &y));
  CLT_TRY(set_buf(s, cols, -1.0f, 1.0f, &bias));
  CLT_TRY(clt_bias_rows_forward(s->ctx, y->t, bias->t, rows, cols));
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++)
      y->host[r * cols + c] =
          (float)((double)y->host[r * cols + c] + bias->host[c]);
  return set_compare(s);
}

clt_status clt_check_bias_rows(clt_context *ctx, int64_t rows, int64_t cols,
                               double *max_err) {
  check_set s;
  set_begin(&s, ctx, 40);
  return set_end(&s, bias_rows_body(&s, rows, cols), max_err);
}

static clt_status bias_channels_body(check_set *s, int64_t batch,
                                     int64_t channels, int64_t spatial) {
  guarded_buf *y, *bias;
  CLT_TRY(set_buf(s, batch * channels * spatial, -1.0f, 1.0f, &y));
  CLT_TRY(set_buf(s, channels, -1.0f, 1.0f, &bias));
  CLT_TRY(clt_bias_channels_forward(s->ctx, y->t, bias->t, batch, channels,
                                    spatial));
  for (int64_t b = 0; b < batch; b++)
    for (int64_t c = 0; c < channels; c++)
      for (int64_t p = 0; p < spatial; p++) {
        float *v = &y->host[(b * channels + c) * spatial + p];
        *v = (float)((double)*v + bias->host[c]);
      }
  return set_compare(s);
}

clt_status clt_check_bias_channels(clt_context *ctx, int64_t batch,
                                   int64_t channels, int64_t spatial,
                                   double *max_err) {
  check_set s;
  set_begin(&s, ctx, 50);
  return set_end(&s, bias_channels_body(&s, batch, channels, spatial), max_err);
}

/* ------------------------------------------------------------------------ */
/* Activations                                                               */

static double act_ref(clt_activation kind, double x, double alpha) {
  switch (kind) {
  case CLT_ACT_RELU: return x > 0.0 ? x : 0.0;
  case CLT_ACT_LEAKY_RELU: return x > 0.0 ? x : alpha * x;
  case CLT_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
  case CLT_ACT_TANH: return tanh(x);
  case CLT_ACT_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
  }
  return NAN;
}

/* d act / dx at x, as PyTorch defines it (relu and leaky relu at 0 take
 * the left-hand slope). */
static double act_grad_ref(clt_activation kind, double x, double alpha) {
  switch (kind) {
  case CLT_ACT_RELU: return x > 0.0 ? 1.0 : 0.0;
  case CLT_ACT_LEAKY_RELU: return x > 0.0 ? 1.0 : alpha;
  case CLT_ACT_SIGMOID: {
    double s = 1.0 / (1.0 + exp(-x));
    return s * (1.0 - s);
  }
  case CLT_ACT_TANH: {
    double t = tanh(x);
    return 1.0 - t * t;
  }
  case CLT_ACT_GELU: {
    double cdf = 0.5 * (1.0 + erf(x / sqrt(2.0)));
    double pdf = exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
    return cdf + x * pdf;
  }
  }
  return NAN;
}

/* x uniform in [-4, 4] with one exact zero (the kink of relu). */
static clt_status act_input(check_set *s, int64_t n, guarded_buf **x) {
  CLT_TRY(set_buf(s, n, -4.0f, 4.0f, x));
  (*x)->host[n / 2] = 0.0f;
  return buf_upload(*x);
}

static clt_status act_forward_body(check_set *s, clt_activation kind, int64_t n,
                                   float alpha) {
  guarded_buf *x, *y;
  CLT_TRY(act_input(s, n, &x));
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &y));
  CLT_TRY(clt_activation_forward(s->ctx, y->t, x->t, n, kind, alpha));
  for (int64_t i = 0; i < n; i++)
    y->host[i] = (float)act_ref(kind, x->host[i], alpha);
  return set_compare(s);
}

clt_status clt_check_activation_forward(clt_context *ctx, clt_activation kind,
                                        int64_t n, float alpha,
                                        double *max_err) {
  check_set s;
  set_begin(&s, ctx, 60);
  return set_end(&s, act_forward_body(&s, kind, n, alpha), max_err);
}

static clt_status act_backward_body(check_set *s, clt_activation kind,
                                    int64_t n, float alpha, bool accumulate) {
  guarded_buf *x, *y, *dy, *dx;
  CLT_TRY(act_input(s, n, &x));
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &y));
  for (int64_t i = 0; i < n; i++)
    y->host[i] = (float)act_ref(kind, x->host[i], alpha);
  CLT_TRY(buf_upload(y));
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &dy));
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &dx));
  CLT_TRY(clt_activation_backward(s->ctx, dx->t, dy->t, x->t, y->t, n, kind,
                                  alpha, accumulate));
  for (int64_t i = 0; i < n; i++) {
    double g = dy->host[i] * act_grad_ref(kind, x->host[i], alpha);
    dx->host[i] = (float)(accumulate ? dx->host[i] + g : g);
  }
  return set_compare(s);
}

clt_status clt_check_activation_backward(clt_context *ctx, clt_activation kind,
                                         int64_t n, float alpha,
                                         bool accumulate, double *max_err) {
  check_set s;
  set_begin(&s, ctx, 70);
  return set_end(&s, act_backward_body(&s, kind, n, alpha, accumulate),
                 max_err);
}

/* ------------------------------------------------------------------------ */
/* Softmax and losses                                                        */

/* y = softmax(x) of one row, in double. */
static void softmax_row_ref(const float *x, int64_t cols, double *y) {
  double m = x[0];
  for (int64_t c = 1; c < cols; c++)
    if (x[c] > m) m = x[c];
  double sum = 0.0;
  for (int64_t c = 0; c < cols; c++) sum += exp(x[c] - m);
  for (int64_t c = 0; c < cols; c++) y[c] = exp(x[c] - m) / sum;
}

static clt_status softmax_forward_body(check_set *s, int64_t rows, int64_t cols,
                                       double *row) {
  guarded_buf *x, *y;
  CLT_TRY(set_buf(s, rows * cols, -5.0f, 5.0f, &x));
  CLT_TRY(set_buf(s, rows * cols, -1.0f, 1.0f, &y));
  CLT_TRY(clt_softmax_forward(s->ctx, y->t, x->t, rows, cols));
  for (int64_t r = 0; r < rows; r++) {
    softmax_row_ref(x->host + r * cols, cols, row);
    for (int64_t c = 0; c < cols; c++) y->host[r * cols + c] = (float)row[c];
  }
  return set_compare(s);
}

clt_status clt_check_softmax_forward(clt_context *ctx, int64_t rows,
                                     int64_t cols, double *max_err) {
  check_set s;
  set_begin(&s, ctx, 80);
  double *row = malloc((size_t)cols * sizeof(double));
  clt_status st = row ? softmax_forward_body(&s, rows, cols, row)
                      : clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "opcheck");
  free(row);
  return set_end(&s, st, max_err);
}

static clt_status softmax_backward_body(check_set *s, int64_t rows,
                                        int64_t cols, bool accumulate,
                                        double *row) {
  guarded_buf *y, *dy, *dx;
  CLT_TRY(set_buf(s, rows * cols, -5.0f, 5.0f, &y));
  for (int64_t r = 0; r < rows; r++) {
    softmax_row_ref(y->host + r * cols, cols, row);
    for (int64_t c = 0; c < cols; c++) y->host[r * cols + c] = (float)row[c];
  }
  CLT_TRY(buf_upload(y));
  CLT_TRY(set_buf(s, rows * cols, -1.0f, 1.0f, &dy));
  CLT_TRY(set_buf(s, rows * cols, -1.0f, 1.0f, &dx));
  CLT_TRY(
      clt_softmax_backward(s->ctx, dx->t, dy->t, y->t, rows, cols, accumulate));
  for (int64_t r = 0; r < rows; r++) {
    const float *yr = y->host + r * cols, *dyr = dy->host + r * cols;
    float *dxr = dx->host + r * cols;
    double dot = 0.0;
    for (int64_t c = 0; c < cols; c++) dot += (double)dyr[c] * yr[c];
    for (int64_t c = 0; c < cols; c++) {
      double g = yr[c] * (dyr[c] - dot);
      dxr[c] = (float)(accumulate ? dxr[c] + g : g);
    }
  }
  return set_compare(s);
}

clt_status clt_check_softmax_backward(clt_context *ctx, int64_t rows,
                                      int64_t cols, bool accumulate,
                                      double *max_err) {
  check_set s;
  set_begin(&s, ctx, 90);
  double *row = malloc((size_t)cols * sizeof(double));
  clt_status st = row ? softmax_backward_body(&s, rows, cols, accumulate, row)
                      : clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "opcheck");
  free(row);
  return set_end(&s, st, max_err);
}

static clt_status upload_labels(check_set *s, int64_t rows, int64_t cols,
                                int32_t *labels) {
  clt_rng r = clt_rng_derive(s->seed++, 98, 0);
  for (int64_t i = 0; i < rows; i++)
    labels[i] = (int32_t)clt_rng_below(&r, (uint64_t)cols);
  int64_t shape[1] = {rows};
  CLT_TRY(clt_tensor_create(s->ctx, CLT_I32, 1, shape, &s->labels));
  return clt_tensor_upload(s->labels, labels);
}

static clt_status xent_body(check_set *s, int64_t rows, int64_t cols,
                            float logit_scale, int32_t *labels) {
  guarded_buf *x, *loss, *correct, *grad;
  CLT_TRY(set_buf(s, rows * cols, -logit_scale, logit_scale, &x));
  if (logit_scale > 1.0f) {
    /* Every other row: logits within 1 of +-logit_scale, where a log-sum-exp
     * that adds the row maximum back before subtracting loses precision. */
    for (int64_t r = 1; r < rows; r += 2)
      for (int64_t c = 0; c < cols; c++) {
        float *v = &x->host[r * cols + c];
        *v = (r % 4 == 1 ? logit_scale : -logit_scale) + *v / logit_scale;
      }
    CLT_TRY(buf_upload(x));
  }
  CLT_TRY(upload_labels(s, rows, cols, labels));
  CLT_TRY(set_buf(s, rows, -1.0f, 1.0f, &loss));
  CLT_TRY(set_buf(s, rows, -1.0f, 1.0f, &correct));
  CLT_TRY(set_buf(s, rows * cols, -1.0f, 1.0f, &grad));
  float grad_scale = 1.0f / (float)rows;
  CLT_TRY(clt_softmax_xent_forward_backward(s->ctx, loss->t, correct->t,
                                            grad->t, x->t, s->labels, rows,
                                            cols, grad_scale));
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x->host + r * cols;
    int64_t arg = 0;
    for (int64_t c = 1; c < cols; c++)
      if (xr[c] > xr[arg]) arg = c;
    double m = xr[arg], sum = 0.0;
    for (int64_t c = 0; c < cols; c++) sum += exp(xr[c] - m);
    double lse = m + log(sum);
    loss->host[r] = (float)(lse - xr[labels[r]]);
    correct->host[r] = arg == labels[r] ? 1.0f : 0.0f;
    for (int64_t c = 0; c < cols; c++) {
      double p = exp(xr[c] - m) / sum;
      grad->host[r * cols + c] =
          (float)((p - (c == labels[r] ? 1.0 : 0.0)) * grad_scale);
    }
  }
  return set_compare(s);
}

clt_status clt_check_softmax_xent(clt_context *ctx, int64_t rows, int64_t cols,
                                  float logit_scale, double *max_err) {
  check_set s;
  set_begin(&s, ctx, 100);
  int32_t *labels = malloc((size_t)rows * sizeof(int32_t));
  clt_status st = labels ? xent_body(&s, rows, cols, logit_scale, labels)
                         : clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "opcheck");
  free(labels);
  return set_end(&s, st, max_err);
}

static clt_status mse_body(check_set *s, int64_t rows, int64_t cols) {
  guarded_buf *p, *t, *loss, *grad;
  CLT_TRY(set_buf(s, rows * cols, -1.0f, 1.0f, &p));
  CLT_TRY(set_buf(s, rows * cols, -1.0f, 1.0f, &t));
  CLT_TRY(set_buf(s, rows, -1.0f, 1.0f, &loss));
  CLT_TRY(set_buf(s, rows * cols, -1.0f, 1.0f, &grad));
  float grad_scale = 1.0f / (float)(rows * cols);
  CLT_TRY(clt_mse_forward_backward(s->ctx, loss->t, grad->t, p->t, t->t, rows,
                                   cols, grad_scale));
  for (int64_t r = 0; r < rows; r++) {
    double sum = 0.0;
    for (int64_t c = 0; c < cols; c++) {
      double d = (double)p->host[r * cols + c] - t->host[r * cols + c];
      sum += d * d;
      grad->host[r * cols + c] = (float)(2.0 * d * grad_scale);
    }
    loss->host[r] = (float)sum;
  }
  return set_compare(s);
}

clt_status clt_check_mse(clt_context *ctx, int64_t rows, int64_t cols,
                         double *max_err) {
  check_set s;
  set_begin(&s, ctx, 110);
  return set_end(&s, mse_body(&s, rows, cols), max_err);
}

/* ------------------------------------------------------------------------ */
/* Reductions                                                                */

static clt_status sum_channels_body(check_set *s, int64_t outer,
                                    int64_t channels, int64_t inner,
                                    bool accumulate) {
  guarded_buf *x, *out;
  CLT_TRY(set_buf(s, outer * channels * inner, -1.0f, 1.0f, &x));
  CLT_TRY(set_buf(s, channels, -1.0f, 1.0f, &out));
  CLT_TRY(clt_sum_channels_forward(s->ctx, out->t, x->t, outer, channels, inner,
                                   accumulate));
  for (int64_t c = 0; c < channels; c++) {
    double sum = accumulate ? out->host[c] : 0.0;
    for (int64_t o = 0; o < outer; o++)
      for (int64_t i = 0; i < inner; i++)
        sum += x->host[(o * channels + c) * inner + i];
    out->host[c] = (float)sum;
  }
  return set_compare(s);
}

clt_status clt_check_sum_channels(clt_context *ctx, int64_t outer,
                                  int64_t channels, int64_t inner,
                                  bool accumulate, double *max_err) {
  check_set s;
  set_begin(&s, ctx, 120);
  return set_end(&s, sum_channels_body(&s, outer, channels, inner, accumulate),
                 max_err);
}

#define ACC_SLOTS 5

static clt_status sum_into_body(check_set *s, int64_t n, int index, float scale,
                                bool squares) {
  if (index < 0 || index >= ACC_SLOTS)
    return clt_ctx_fail(s->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "opcheck: accumulator index %d outside 0..%d", index,
                        ACC_SLOTS - 1);
  guarded_buf *x, *acc;
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &x));
  CLT_TRY(set_buf(s, ACC_SLOTS, -1.0f, 1.0f, &acc));
  if (squares)
    CLT_TRY(clt_sumsq_into(s->ctx, acc->t, index, x->t, n));
  else
    CLT_TRY(clt_sum_into(s->ctx, acc->t, index, x->t, n, scale));
  double sum = 0.0;
  for (int64_t i = 0; i < n; i++)
    sum += squares ? (double)x->host[i] * x->host[i] : x->host[i];
  acc->host[index] = (float)(acc->host[index] + (squares ? sum : scale * sum));
  return set_compare(s);
}

clt_status clt_check_sum_into(clt_context *ctx, int64_t n, int index,
                              float scale, double *max_err) {
  check_set s;
  set_begin(&s, ctx, 130);
  return set_end(&s, sum_into_body(&s, n, index, scale, false), max_err);
}

clt_status clt_check_sumsq_into(clt_context *ctx, int64_t n, int index,
                                double *max_err) {
  check_set s;
  set_begin(&s, ctx, 140);
  return set_end(&s, sum_into_body(&s, n, index, 1.0f, true), max_err);
}

/* ------------------------------------------------------------------------ */
/* Optimizer updates                                                         */

/* A fresh random gradient for one step, and in norm[0] its sum of squares
 * (what clipping by global norm reads). Returns the clipping factor of
 * torch.nn.utils.clip_grad_norm_ for max_norm, from that float value. */
static clt_status next_gradient(check_set *s, guarded_buf *g, guarded_buf *norm,
                                float max_norm, double *clip) {
  clt_random_fill(g->host, g->n, s->seed++, -1.0f, 1.0f);
  double sq = 0.0;
  for (int64_t i = 0; i < g->n; i++) sq += (double)g->host[i] * g->host[i];
  norm->host[0] = (float)sq;
  CLT_TRY(buf_upload(g));
  CLT_TRY(buf_upload(norm));
  *clip = 1.0;
  if (max_norm > 0.0f) {
    double coef = max_norm / (sqrt((double)norm->host[0]) + 1e-6);
    *clip = coef < 1.0 ? coef : 1.0;
  }
  return CLT_OK;
}

static void state_store(guarded_buf *b, const double *w) {
  for (int64_t i = 0; i < b->n; i++) b->host[i] = (float)w[i];
}

/* torch.optim.SGD, step `step` (1-based), on the double state w, buf. */
static void sgd_reference(const clt_sgd_params *hp, int step, const float *g,
                          double clip, int64_t n, double *w, double *buf) {
  for (int64_t i = 0; i < n; i++) {
    double d = g[i] * clip + (double)hp->weight_decay * w[i];
    if (hp->momentum != 0.0f) {
      buf[i] =
          step == 1 ? d : hp->momentum * buf[i] + (1.0 - hp->dampening) * d;
      d = hp->nesterov ? d + hp->momentum * buf[i] : buf[i];
    }
    w[i] -= hp->lr * d;
  }
}

static clt_status sgd_body(check_set *s, int64_t n, const clt_sgd_params *hp,
                           int steps, double *w, double *bufd) {
  bool momentum = hp->momentum != 0.0f;
  guarded_buf *p, *g, *norm, *buf = NULL;
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &p));
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &g));
  CLT_TRY(set_buf(s, 1, -1.0f, 1.0f, &norm));
  if (momentum) {
    CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &buf));
    /* Before the first step the buffer holds nothing meaningful. */
    for (int64_t i = 0; i < n; i++) buf->host[i] = NAN;
    CLT_TRY(buf_upload(buf));
  }
  for (int64_t i = 0; i < n; i++) w[i] = p->host[i];
  for (int step = 1; step <= steps; step++) {
    double clip;
    CLT_TRY(next_gradient(s, g, norm, hp->max_norm, &clip));
    clt_sgd_params h = *hp;
    h.first = step == 1;
    CLT_TRY(clt_sgd_step(s->ctx, p->t, g->t, momentum ? buf->t : NULL, norm->t,
                         &h));
    sgd_reference(hp, step, g->host, clip, n, w, bufd);
  }
  state_store(p, w);
  if (momentum) state_store(buf, bufd);
  return set_compare(s);
}

clt_status clt_check_sgd_step(clt_context *ctx, int64_t n,
                              const clt_sgd_params *hp, int steps,
                              double *max_err) {
  check_set s;
  set_begin(&s, ctx, 150);
  double *w = malloc((size_t)n * sizeof(double));
  double *buf = malloc((size_t)n * sizeof(double));
  clt_status st = w && buf ? sgd_body(&s, n, hp, steps, w, buf)
                           : clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "opcheck");
  free(w);
  free(buf);
  return set_end(&s, st, max_err);
}

/* torch.optim.Adam / AdamW (amsgrad off), step `step` (1-based). */
static void adam_reference(const clt_adam_params *hp, int step, const float *g,
                           double clip, int64_t n, double *w, double *m,
                           double *v) {
  double lr = hp->lr, b1 = hp->beta1, b2 = hp->beta2, wd = hp->weight_decay;
  double bias1 = 1.0 - pow(b1, step), bias2 = 1.0 - pow(b2, step);
  for (int64_t i = 0; i < n; i++) {
    double d = g[i] * clip;
    if (hp->decoupled)
      w[i] *= 1.0 - lr * wd;
    else
      d += wd * w[i];
    m[i] = b1 * m[i] + (1.0 - b1) * d;
    v[i] = b2 * v[i] + (1.0 - b2) * d * d;
    double denom = sqrt(v[i]) / sqrt(bias2) + hp->eps;
    w[i] -= lr / bias1 * m[i] / denom;
  }
}

static clt_status adam_body(check_set *s, int64_t n, const clt_adam_params *hp,
                            int steps, double *state) {
  double *w = state, *m = state + n, *v = state + 2 * n;
  guarded_buf *p, *g, *norm, *mb, *vb;
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &p));
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &g));
  CLT_TRY(set_buf(s, 1, -1.0f, 1.0f, &norm));
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &mb));
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &vb));
  for (int64_t i = 0; i < n; i++) {
    w[i] = p->host[i];
    m[i] = v[i] = 0.0; /* PyTorch starts both moments at zero */
    mb->host[i] = vb->host[i] = 0.0f;
  }
  CLT_TRY(buf_upload(mb));
  CLT_TRY(buf_upload(vb));
  for (int step = 1; step <= steps; step++) {
    double clip;
    CLT_TRY(next_gradient(s, g, norm, hp->max_norm, &clip));
    clt_adam_params h = *hp;
    h.step = step;
    CLT_TRY(clt_adam_step(s->ctx, p->t, g->t, mb->t, vb->t, norm->t, &h));
    adam_reference(hp, step, g->host, clip, n, w, m, v);
  }
  state_store(p, w);
  state_store(mb, m);
  state_store(vb, v);
  return set_compare(s);
}

clt_status clt_check_adam_step(clt_context *ctx, int64_t n,
                               const clt_adam_params *hp, int steps,
                               double *max_err) {
  check_set s;
  set_begin(&s, ctx, 160);
  double *state = malloc(3 * (size_t)n * sizeof(double));
  clt_status st = state ? adam_body(&s, n, hp, steps, state)
                        : clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "opcheck");
  free(state);
  return set_end(&s, st, max_err);
}

/* ------------------------------------------------------------------------ */
/* Convolution: im2col, col2im, the axis swap                               */

/* n doubles of zeros for the reference, freed with the set. */
static clt_status set_work(check_set *s, int64_t n, double **out) {
  if (s->wcount == SET_MAX_WORK)
    return clt_ctx_fail(s->ctx, CLT_ERR_INTERNAL, "opcheck: too much scratch");
  double *p = calloc(n > 0 ? (size_t)n : 1, sizeof(double));
  if (!p) return clt_ctx_fail(s->ctx, CLT_ERR_HOST_MEMORY, "opcheck");
  s->work[s->wcount++] = p;
  *out = p;
  return CLT_OK;
}

/* Output size along one axis, or -1 where the window does not fit (the
 * floor of a negative span, which C's division would round up). */
static int64_t window_out(int64_t in, int64_t k, int64_t pad, int64_t stride,
                          int64_t dil) {
  int64_t span = in + 2 * pad - dil * (k - 1) - 1;
  return span < 0 ? -1 : span / stride + 1;
}

/* A copy of `in` with OH and OW set; pooling reads no dilation. */
static clt_status window_geometry(check_set *s, const clt_window *in,
                                  bool pool, clt_window *w) {
  *w = *in;
  if (pool) w->dil_h = w->dil_w = 1;
  if (w->C < 1 || w->H < 1 || w->W < 1 || w->KH < 1 || w->KW < 1 ||
      w->pad_h < 0 || w->pad_w < 0 || w->stride_h < 1 || w->stride_w < 1 ||
      w->dil_h < 1 || w->dil_w < 1)
    return clt_ctx_fail(s->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "opcheck: window sizes must be positive");
  if (pool && (2 * w->pad_h > w->KH || 2 * w->pad_w > w->KW))
    return clt_ctx_fail(s->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "opcheck: pooling padding above half the window");
  w->OH = window_out(w->H, w->KH, w->pad_h, w->stride_h, w->dil_h);
  w->OW = window_out(w->W, w->KW, w->pad_w, w->stride_w, w->dil_w);
  if (w->OH < 1 || w->OW < 1)
    return clt_ctx_fail(s->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "opcheck: a %lldx%lld window does not fit %lldx%lld",
                        (long long)w->KH, (long long)w->KW, (long long)w->H,
                        (long long)w->W);
  return CLT_OK;
}

/* Visits every (image n, channel c, kh, kw, oh, ow) of an unfold: `at` is
 * the index in col, `src` that in x or -1 for padding. */
#define FOR_UNFOLD(w, batch, at, src, body)                                    \
  do {                                                                         \
    int64_t sp_ = (w)->OH * (w)->OW;                                           \
    for (int64_t n_ = 0; n_ < (batch); n_++)                                   \
      for (int64_t c_ = 0; c_ < (w)->C; c_++)                                  \
        for (int64_t kh_ = 0; kh_ < (w)->KH; kh_++)                            \
          for (int64_t kw_ = 0; kw_ < (w)->KW; kw_++)                          \
            for (int64_t oh_ = 0; oh_ < (w)->OH; oh_++)                        \
              for (int64_t ow_ = 0; ow_ < (w)->OW; ow_++) {                    \
                int64_t ih_ = oh_ * (w)->stride_h - (w)->pad_h +               \
                              kh_ * (w)->dil_h;                                \
                int64_t iw_ = ow_ * (w)->stride_w - (w)->pad_w +               \
                              kw_ * (w)->dil_w;                                \
                int64_t row_ = (c_ * (w)->KH + kh_) * (w)->KW + kw_;           \
                int64_t at = (row_ * (batch) + n_) * sp_ + oh_ * (w)->OW + ow_;\
                int64_t src = ih_ >= 0 && ih_ < (w)->H && iw_ >= 0 &&          \
                                      iw_ < (w)->W                             \
                                  ? ((n_ * (w)->C + c_) * (w)->H + ih_) *      \
                                            (w)->W +                           \
                                        iw_                                    \
                                  : -1;                                        \
                body                                                           \
              }                                                                \
  } while (0)

static clt_status im2col_body(check_set *s, int64_t batch,
                              const clt_window *win) {
  clt_window w;
  CLT_TRY(window_geometry(s, win, false, &w));
  guarded_buf *x, *col;
  CLT_TRY(set_buf(s, batch * w.C * w.H * w.W, -1.0f, 1.0f, &x));
  CLT_TRY(set_buf(s, batch * w.C * w.KH * w.KW * w.OH * w.OW, -1.0f, 1.0f,
                  &col));
  CLT_TRY(clt_im2col_forward(s->ctx, col->t, x->t, batch, &w));
  FOR_UNFOLD(&w, batch, at, src,
             { col->host[at] = src >= 0 ? x->host[src] : 0.0f; });
  return set_compare(s);
}

clt_status clt_check_im2col(clt_context *ctx, int64_t batch,
                            const clt_window *w, double *max_err) {
  check_set s;
  set_begin(&s, ctx, 170);
  return set_end(&s, im2col_body(&s, batch, w), max_err);
}

static clt_status col2im_body(check_set *s, int64_t batch,
                              const clt_window *win, bool accumulate) {
  clt_window w;
  CLT_TRY(window_geometry(s, win, false, &w));
  int64_t nx = batch * w.C * w.H * w.W;
  guarded_buf *dcol, *dx;
  double *sum;
  CLT_TRY(set_buf(s, batch * w.C * w.KH * w.KW * w.OH * w.OW, -1.0f, 1.0f,
                  &dcol));
  CLT_TRY(set_buf(s, nx, -1.0f, 1.0f, &dx));
  CLT_TRY(set_work(s, nx, &sum));
  CLT_TRY(clt_col2im_backward(s->ctx, dx->t, dcol->t, batch, &w, accumulate));
  FOR_UNFOLD(&w, batch, at, src, {
    if (src >= 0) sum[src] += dcol->host[at];
  });
  for (int64_t i = 0; i < nx; i++)
    dx->host[i] = (float)(accumulate ? dx->host[i] + sum[i] : sum[i]);
  return set_compare(s);
}

clt_status clt_check_col2im(clt_context *ctx, int64_t batch,
                            const clt_window *w, bool accumulate,
                            double *max_err) {
  check_set s;
  set_begin(&s, ctx, 180);
  return set_end(&s, col2im_body(&s, batch, w, accumulate), max_err);
}

static clt_status swap_body(check_set *s, int64_t A, int64_t B, int64_t S,
                            bool bias) {
  guarded_buf *x, *y, *b;
  CLT_TRY(set_buf(s, A * B * S, -1.0f, 1.0f, &x));
  CLT_TRY(set_buf(s, A * B * S, -1.0f, 1.0f, &y));
  CLT_TRY(set_buf(s, A, -1.0f, 1.0f, &b));
  CLT_TRY(clt_swap_axes01(s->ctx, y->t, x->t, bias ? b->t : NULL, A, B, S));
  for (int64_t a = 0; a < A; a++)
    for (int64_t j = 0; j < B; j++)
      for (int64_t k = 0; k < S; k++)
        y->host[(j * A + a) * S + k] =
            x->host[(a * B + j) * S + k] + (bias ? b->host[a] : 0.0f);
  return set_compare(s);
}

clt_status clt_check_swap_axes01(clt_context *ctx, int64_t A, int64_t B,
                                 int64_t S, bool bias, double *max_err) {
  check_set s;
  set_begin(&s, ctx, 190);
  return set_end(&s, swap_body(&s, A, B, S, bias), max_err);
}

/* ------------------------------------------------------------------------ */
/* Pooling                                                                   */

/* The window of output (oh, ow) clamped to the input, [h0, h1) x [w0, w1),
 * and PyTorch's avg_pool2d divisor: the window clamped to the padded
 * input only (count_include_pad=True). */
static double pool_window(const clt_window *w, int64_t oh, int64_t ow,
                          int64_t *h0, int64_t *h1, int64_t *w0,
                          int64_t *w1) {
  int64_t hs = oh * w->stride_h - w->pad_h, ws = ow * w->stride_w - w->pad_w;
  int64_t he = hs + w->KH, we = ws + w->KW;
  if (he > w->H + w->pad_h) he = w->H + w->pad_h;
  if (we > w->W + w->pad_w) we = w->W + w->pad_w;
  double size = (double)((he - hs) * (we - ws));
  *h0 = hs > 0 ? hs : 0;
  *w0 = ws > 0 ? ws : 0;
  *h1 = he < w->H ? he : w->H;
  *w1 = we < w->W ? we : w->W;
  return size;
}

/* torch.nn.MaxPool2d on the host: the first maximum in row-major order,
 * and any NaN (as PyTorch: `val > max || isnan(val)`). */
static void maxpool_ref(const clt_window *w, const float *x, float *y,
                        int32_t *arg) {
  for (int64_t p = 0; p < w->C; p++)
    for (int64_t oh = 0; oh < w->OH; oh++)
      for (int64_t ow = 0; ow < w->OW; ow++) {
        int64_t h0, h1, w0, w1;
        pool_window(w, oh, ow, &h0, &h1, &w0, &w1);
        const float *xp = x + p * w->H * w->W;
        float best = -INFINITY;
        int64_t at = h0 * w->W + w0;
        for (int64_t ih = h0; ih < h1; ih++)
          for (int64_t iw = w0; iw < w1; iw++) {
            float v = xp[ih * w->W + iw];
            if (v > best || isnan(v)) {
              best = v;
              at = ih * w->W + iw;
            }
          }
        int64_t o = (p * w->OH + oh) * w->OW + ow;
        y[o] = best;
        arg[o] = (int32_t)at;
      }
}

static clt_status maxpool_forward_body(check_set *s, const clt_window *win) {
  clt_window w;
  CLT_TRY(window_geometry(s, win, true, &w));
  int64_t plane = w.H * w.W, nout = w.C * w.OH * w.OW;
  guarded_buf *x, *y;
  guarded_ibuf *arg;
  CLT_TRY(set_buf(s, w.C * plane, -1.0f, 1.0f, &x));
  /* Even planes: 9 levels, so that windows hold ties. */
  for (int64_t p = 0; p < w.C; p += 2)
    for (int64_t i = 0; i < plane; i++) {
      float *v = &x->host[p * plane + i];
      *v = roundf(*v * 4.0f) / 4.0f;
    }
  if (w.C >= 2)
    x->host[(w.C - 1) * plane + (w.H / 2) * w.W + w.W / 2] = NAN;
  CLT_TRY(buf_upload(x));
  CLT_TRY(set_buf(s, nout, -1.0f, 1.0f, &y));
  CLT_TRY(set_ibuf(s, nout, &arg));
  CLT_TRY(clt_maxpool_forward(s->ctx, y->t, arg->t, x->t, &w));
  maxpool_ref(&w, x->host, y->host, arg->host);
  return set_compare(s);
}

clt_status clt_check_maxpool_forward(clt_context *ctx, const clt_window *w,
                                     double *max_err) {
  check_set s;
  set_begin(&s, ctx, 200);
  return set_end(&s, maxpool_forward_body(&s, w), max_err);
}

static clt_status maxpool_backward_body(check_set *s, const clt_window *win,
                                        bool accumulate) {
  clt_window w;
  CLT_TRY(window_geometry(s, win, true, &w));
  int64_t plane = w.H * w.W, nx = w.C * plane, nout = w.C * w.OH * w.OW;
  guarded_buf *x, *y, *dy, *dx;
  guarded_ibuf *arg;
  double *sum;
  /* x and y only make the argmax; the op reads neither. */
  CLT_TRY(set_buf(s, nx, -1.0f, 1.0f, &x));
  CLT_TRY(set_buf(s, nout, -1.0f, 1.0f, &y));
  CLT_TRY(set_ibuf(s, nout, &arg));
  float *y_before = malloc((size_t)nout * sizeof(float));
  if (!y_before) return clt_ctx_fail(s->ctx, CLT_ERR_HOST_MEMORY, "opcheck");
  memcpy(y_before, y->host, (size_t)nout * sizeof(float));
  maxpool_ref(&w, x->host, y->host, arg->host);
  memcpy(y->host, y_before, (size_t)nout * sizeof(float));
  free(y_before);
  CLT_TRY(clt_tensor_upload(arg->base, arg->all));
  CLT_TRY(set_buf(s, nout, -1.0f, 1.0f, &dy));
  CLT_TRY(set_buf(s, nx, -1.0f, 1.0f, &dx));
  CLT_TRY(set_work(s, nx, &sum));
  CLT_TRY(clt_maxpool_backward(s->ctx, dx->t, dy->t, arg->t, &w, accumulate));
  for (int64_t p = 0; p < w.C; p++)
    for (int64_t o = 0; o < w.OH * w.OW; o++)
      sum[p * plane + arg->host[p * w.OH * w.OW + o]] +=
          dy->host[p * w.OH * w.OW + o];
  for (int64_t i = 0; i < nx; i++)
    dx->host[i] = (float)(accumulate ? dx->host[i] + sum[i] : sum[i]);
  return set_compare(s);
}

clt_status clt_check_maxpool_backward(clt_context *ctx, const clt_window *w,
                                      bool accumulate, double *max_err) {
  check_set s;
  set_begin(&s, ctx, 210);
  return set_end(&s, maxpool_backward_body(&s, w, accumulate), max_err);
}

static clt_status avgpool_forward_body(check_set *s, const clt_window *win) {
  clt_window w;
  CLT_TRY(window_geometry(s, win, true, &w));
  int64_t plane = w.H * w.W;
  guarded_buf *x, *y;
  CLT_TRY(set_buf(s, w.C * plane, -1.0f, 1.0f, &x));
  CLT_TRY(set_buf(s, w.C * w.OH * w.OW, -1.0f, 1.0f, &y));
  CLT_TRY(clt_avgpool_forward(s->ctx, y->t, x->t, &w));
  for (int64_t p = 0; p < w.C; p++)
    for (int64_t oh = 0; oh < w.OH; oh++)
      for (int64_t ow = 0; ow < w.OW; ow++) {
        int64_t h0, h1, w0, w1;
        double size = pool_window(&w, oh, ow, &h0, &h1, &w0, &w1), sum = 0.0;
        for (int64_t ih = h0; ih < h1; ih++)
          for (int64_t iw = w0; iw < w1; iw++)
            sum += x->host[p * plane + ih * w.W + iw];
        y->host[(p * w.OH + oh) * w.OW + ow] = (float)(sum / size);
      }
  return set_compare(s);
}

clt_status clt_check_avgpool_forward(clt_context *ctx, const clt_window *w,
                                     double *max_err) {
  check_set s;
  set_begin(&s, ctx, 220);
  return set_end(&s, avgpool_forward_body(&s, w), max_err);
}

static clt_status avgpool_backward_body(check_set *s, const clt_window *win,
                                        bool accumulate) {
  clt_window w;
  CLT_TRY(window_geometry(s, win, true, &w));
  int64_t plane = w.H * w.W, nx = w.C * plane;
  guarded_buf *dy, *dx;
  double *sum;
  CLT_TRY(set_buf(s, w.C * w.OH * w.OW, -1.0f, 1.0f, &dy));
  CLT_TRY(set_buf(s, nx, -1.0f, 1.0f, &dx));
  CLT_TRY(set_work(s, nx, &sum));
  CLT_TRY(clt_avgpool_backward(s->ctx, dx->t, dy->t, &w, accumulate));
  for (int64_t p = 0; p < w.C; p++)
    for (int64_t oh = 0; oh < w.OH; oh++)
      for (int64_t ow = 0; ow < w.OW; ow++) {
        int64_t h0, h1, w0, w1;
        double size = pool_window(&w, oh, ow, &h0, &h1, &w0, &w1);
        double g = dy->host[(p * w.OH + oh) * w.OW + ow] / size;
        for (int64_t ih = h0; ih < h1; ih++)
          for (int64_t iw = w0; iw < w1; iw++)
            sum[p * plane + ih * w.W + iw] += g;
      }
  for (int64_t i = 0; i < nx; i++)
    dx->host[i] = (float)(accumulate ? dx->host[i] + sum[i] : sum[i]);
  return set_compare(s);
}

clt_status clt_check_avgpool_backward(clt_context *ctx, const clt_window *w,
                                      bool accumulate, double *max_err) {
  check_set s;
  set_begin(&s, ctx, 230);
  return set_end(&s, avgpool_backward_body(&s, w, accumulate), max_err);
}

/* ------------------------------------------------------------------------ */
/* Batch normalisation                                                       */

/* The offset of channel c's inputs: -4, -2, 0, 2, 4, -4, ... */
static float bn_offset(int64_t c) { return (float)((c % 5) - 2) * 2.0f; }

/* x [N, C, HW] uniform in [-1, 1] plus its channel's offset. */
static clt_status bn_input(check_set *s, int64_t N, int64_t C, int64_t HW,
                           guarded_buf **x) {
  CLT_TRY(set_buf(s, N * C * HW, -1.0f, 1.0f, x));
  for (int64_t i = 0; i < N * C * HW; i++)
    (*x)->host[i] += bn_offset((i / HW) % C);
  return buf_upload(*x);
}

/* Per-channel mean and biased variance in double, two passes. */
static void bn_stats_ref(const float *x, int64_t N, int64_t C, int64_t HW,
                         int64_t c, double *mean, double *var) {
  double sum = 0.0, sq = 0.0;
  for (int64_t n = 0; n < N; n++)
    for (int64_t j = 0; j < HW; j++) sum += x[(n * C + c) * HW + j];
  *mean = sum / (double)(N * HW);
  for (int64_t n = 0; n < N; n++)
    for (int64_t j = 0; j < HW; j++) {
      double d = x[(n * C + c) * HW + j] - *mean;
      sq += d * d;
    }
  *var = sq / (double)(N * HW);
}

static clt_status bn_stats_body(check_set *s, int64_t N, int64_t C,
                                int64_t HW) {
  guarded_buf *x, *mean, *var;
  CLT_TRY(bn_input(s, N, C, HW, &x));
  CLT_TRY(set_buf(s, C, -1.0f, 1.0f, &mean));
  CLT_TRY(set_buf(s, C, -1.0f, 1.0f, &var));
  CLT_TRY(clt_bn_stats(s->ctx, mean->t, var->t, x->t, N, C, HW));
  for (int64_t c = 0; c < C; c++) {
    double m, v;
    bn_stats_ref(x->host, N, C, HW, c, &m, &v);
    mean->host[c] = (float)m;
    var->host[c] = (float)v;
  }
  return set_compare(s);
}

clt_status clt_check_bn_stats(clt_context *ctx, int64_t N, int64_t C,
                              int64_t HW, double *max_err) {
  check_set s;
  set_begin(&s, ctx, 240);
  return set_end(&s, bn_stats_body(&s, N, C, HW), max_err);
}

static clt_status bn_running_body(check_set *s, int64_t C, int64_t M,
                                  float momentum) {
  if (M < 2)
    return clt_ctx_fail(s->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "opcheck: batch statistics need 2 values per channel "
                        "(PyTorch refuses 1)");
  guarded_buf *rmean, *rvar, *tracked, *mean, *var;
  CLT_TRY(set_buf(s, C, -1.0f, 1.0f, &rmean));
  CLT_TRY(set_buf(s, C, 0.5f, 2.0f, &rvar));
  CLT_TRY(set_buf(s, 1, -1.0f, 1.0f, &tracked));
  tracked->host[0] = 3.0f;
  CLT_TRY(buf_upload(tracked));
  CLT_TRY(set_buf(s, C, -1.0f, 1.0f, &mean));
  CLT_TRY(set_buf(s, C, 0.0f, 2.0f, &var));
  CLT_TRY(clt_bn_update_running(s->ctx, rmean->t, rvar->t, tracked->t, mean->t,
                                var->t, C, M, momentum));
  double m = momentum;
  for (int64_t c = 0; c < C; c++) {
    double unbiased = var->host[c] * (double)M / (double)(M - 1);
    rmean->host[c] = (float)((1.0 - m) * rmean->host[c] + m * mean->host[c]);
    rvar->host[c] = (float)((1.0 - m) * rvar->host[c] + m * unbiased);
  }
  tracked->host[0] = 4.0f;
  return set_compare(s);
}

clt_status clt_check_bn_update_running(clt_context *ctx, int64_t C, int64_t M,
                                       float momentum, double *max_err) {
  check_set s;
  set_begin(&s, ctx, 250);
  return set_end(&s, bn_running_body(&s, C, M, momentum), max_err);
}

/* mean[c] near channel c's offset (or its batch mean), var in [0.25, 2]
 * (or the batch variance), both as float. */
static clt_status bn_moments(check_set *s, const guarded_buf *x, int64_t N,
                             int64_t C, int64_t HW, bool batch,
                             guarded_buf **mean, guarded_buf **var) {
  CLT_TRY(set_buf(s, C, -0.5f, 0.5f, mean));
  CLT_TRY(set_buf(s, C, 0.25f, 2.0f, var));
  for (int64_t c = 0; c < C; c++) {
    if (batch) {
      double m, v;
      bn_stats_ref(x->host, N, C, HW, c, &m, &v);
      (*mean)->host[c] = (float)m;
      (*var)->host[c] = (float)v;
    } else {
      (*mean)->host[c] += bn_offset(c);
    }
  }
  CLT_TRY(buf_upload(*mean));
  return buf_upload(*var);
}

static clt_status bn_forward_body(check_set *s, int64_t N, int64_t C,
                                  int64_t HW, float eps) {
  guarded_buf *x, *mean, *var, *gamma, *beta, *y;
  CLT_TRY(bn_input(s, N, C, HW, &x));
  CLT_TRY(bn_moments(s, x, N, C, HW, false, &mean, &var));
  CLT_TRY(set_buf(s, C, -1.5f, 1.5f, &gamma));
  CLT_TRY(set_buf(s, C, -1.0f, 1.0f, &beta));
  CLT_TRY(set_buf(s, N * C * HW, -1.0f, 1.0f, &y));
  CLT_TRY(clt_bn_forward(s->ctx, y->t, x->t, mean->t, var->t, gamma->t,
                         beta->t, N, C, HW, eps));
  for (int64_t i = 0; i < N * C * HW; i++) {
    int64_t c = (i / HW) % C;
    double inv = 1.0 / sqrt((double)var->host[c] + eps);
    y->host[i] = (float)(((double)x->host[i] - mean->host[c]) * inv *
                             gamma->host[c] +
                         beta->host[c]);
  }
  return set_compare(s);
}

clt_status clt_check_bn_forward(clt_context *ctx, int64_t N, int64_t C,
                                int64_t HW, float eps, double *max_err) {
  check_set s;
  set_begin(&s, ctx, 260);
  return set_end(&s, bn_forward_body(&s, N, C, HW, eps), max_err);
}

static clt_status bn_backward_body(check_set *s, int64_t N, int64_t C,
                                   int64_t HW, float eps, bool training,
                                   bool accumulate) {
  guarded_buf *x, *mean, *var, *gamma, *dy, *dx, *dgamma, *dbeta, *dgamma2,
      *dbeta2;
  int64_t M = N * HW;
  CLT_TRY(bn_input(s, N, C, HW, &x));
  CLT_TRY(bn_moments(s, x, N, C, HW, training, &mean, &var));
  CLT_TRY(set_buf(s, C, -1.5f, 1.5f, &gamma));
  CLT_TRY(set_buf(s, N * C * HW, -1.0f, 1.0f, &dy));
  CLT_TRY(set_buf(s, N * C * HW, -1.0f, 1.0f, &dx));
  CLT_TRY(set_buf(s, C, -1.0f, 1.0f, &dgamma));
  CLT_TRY(set_buf(s, C, -1.0f, 1.0f, &dbeta));
  CLT_TRY(set_buf(s, C, -1.0f, 1.0f, &dgamma2));
  CLT_TRY(set_buf(s, C, -1.0f, 1.0f, &dbeta2));
  CLT_TRY(clt_bn_backward(s->ctx, dx->t, dgamma->t, dbeta->t, dy->t, x->t,
                          mean->t, var->t, gamma->t, N, C, HW, eps, training,
                          accumulate));
  CLT_TRY(clt_bn_backward(s->ctx, NULL, dgamma2->t, dbeta2->t, dy->t, x->t,
                          mean->t, var->t, gamma->t, N, C, HW, eps, training,
                          accumulate));
  for (int64_t c = 0; c < C; c++) {
    double mu = mean->host[c], inv = 1.0 / sqrt((double)var->host[c] + eps);
    double sg = 0.0, sb = 0.0;
    for (int64_t n = 0; n < N; n++)
      for (int64_t j = 0; j < HW; j++) {
        int64_t i = (n * C + c) * HW + j;
        sb += dy->host[i];
        sg += dy->host[i] * ((x->host[i] - mu) * inv);
      }
    double k = gamma->host[c] * inv;
    for (int64_t n = 0; n < N; n++)
      for (int64_t j = 0; j < HW; j++) {
        int64_t i = (n * C + c) * HW + j;
        double xhat = (x->host[i] - mu) * inv;
        double g = training ? k / (double)M *
                                  ((double)M * dy->host[i] - sb - xhat * sg)
                            : k * dy->host[i];
        dx->host[i] = (float)(accumulate ? dx->host[i] + g : g);
      }
    dgamma->host[c] = dgamma2->host[c] = (float)sg;
    dbeta->host[c] = dbeta2->host[c] = (float)sb;
  }
  return set_compare(s);
}

clt_status clt_check_bn_backward(clt_context *ctx, int64_t N, int64_t C,
                                 int64_t HW, float eps, bool training,
                                 bool accumulate, double *max_err) {
  check_set s;
  set_begin(&s, ctx, 270);
  return set_end(&s,
                 bn_backward_body(&s, N, C, HW, eps, training, accumulate),
                 max_err);
}

/* ------------------------------------------------------------------------ */
/* Dropout, product, concatenation                                           */

/* Runs dropout of x into the fresh (offset 0) tensors y2 / mask2 and
 * downloads the mask into got. */
static clt_status dropout_again(check_set *s, const guarded_buf *x,
                                check_buf *y2, check_buf *mask2, int64_t n,
                                float p, uint64_t seed, uint64_t counter,
                                float *got) {
  CLT_TRY(clt_dropout_forward(s->ctx, y2->t, mask2->t, x->t, n, p, seed,
                              counter));
  return clt_tensor_download(mask2->t, got);
}

static clt_status dropout_body(check_set *s, int64_t n, float p, uint64_t seed,
                               uint64_t counter, check_buf *y2,
                               check_buf *mask2, float *first, float *got) {
  guarded_buf *x, *y, *mask;
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &x));
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &y));
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &mask));
  CLT_TRY(buf_make(s->ctx, n, s->seed++, y2));
  CLT_TRY(buf_make(s->ctx, n, s->seed++, mask2));
  CLT_TRY(clt_dropout_forward(s->ctx, y->t, mask->t, x->t, n, p, seed,
                              counter));
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
  CLT_TRY(set_compare(s));
  double mean = (double)n * (1.0 - p), sd = sqrt((double)n * p * (1.0 - p));
  if (fabs((double)kept - mean) > 5.0 * sd + 0.5 && s->err < 1.0) s->err = 1.0;
  /* The same call again into other buffers: the same mask, bit for bit. */
  CLT_TRY(dropout_again(s, x, y2, mask2, n, p, seed, counter, got));
  if (memcmp(got, first, (size_t)n * sizeof(float)) != 0 && s->err < 1.0)
    s->err = 1.0;
  CLT_TRY(clt_tensor_download(y2->t, got));
  double e = max_rel_err(got, y->host, n);
  if (e > s->err) s->err = e;
  /* Another counter or seed: another mask, where n p (1 - p) makes a
   * coincidence negligible (below 1e-8). */
  if ((double)n * p * (1.0 - p) < 20.0) return CLT_OK;
  const uint64_t high = (uint64_t)1 << 40;
  const uint64_t other[4][2] = {{seed, counter + 1},
                                {seed, counter ^ high},
                                {seed + 1, counter},
                                {seed ^ high, counter}};
  for (int k = 0; k < 4; k++) {
    CLT_TRY(dropout_again(s, x, y2, mask2, n, p, other[k][0], other[k][1],
                          got));
    int64_t differ = 0;
    for (int64_t i = 0; i < n; i++)
      differ += (got[i] != 0.0f) != (first[i] != 0.0f);
    if (differ == 0 && s->err < 1.0) s->err = 1.0;
  }
  return CLT_OK;
}

clt_status clt_check_dropout(clt_context *ctx, int64_t n, float p,
                             uint64_t seed, uint64_t counter,
                             double *max_err) {
  check_set s;
  set_begin(&s, ctx, 280);
  check_buf y2 = {0}, mask2 = {0};
  float *first = malloc((size_t)n * sizeof(float));
  float *got = malloc((size_t)n * sizeof(float));
  clt_status st =
      first && got
          ? dropout_body(&s, n, p, seed, counter, &y2, &mask2, first, got)
          : clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "opcheck");
  free(first);
  free(got);
  buf_free(&y2);
  buf_free(&mask2);
  return set_end(&s, st, max_err);
}

static clt_status mul_body(check_set *s, int64_t n, bool accumulate) {
  guarded_buf *a, *b, *out;
  CLT_TRY(set_buf(s, n, -2.0f, 2.0f, &a));
  CLT_TRY(set_buf(s, n, -2.0f, 2.0f, &b));
  CLT_TRY(set_buf(s, n, -1.0f, 1.0f, &out));
  CLT_TRY(clt_mul_forward(s->ctx, out->t, a->t, b->t, n, accumulate));
  for (int64_t i = 0; i < n; i++) {
    double v = (double)a->host[i] * b->host[i];
    out->host[i] = (float)(accumulate ? out->host[i] + v : v);
  }
  return set_compare(s);
}

clt_status clt_check_mul(clt_context *ctx, int64_t n, bool accumulate,
                         double *max_err) {
  check_set s;
  set_begin(&s, ctx, 290);
  return set_end(&s, mul_body(&s, n, accumulate), max_err);
}

static clt_status channel_slice_body(check_set *s, int64_t N, int64_t Cy,
                                     int64_t Cx, int64_t c_off, int64_t S,
                                     bool backward, bool accumulate) {
  if (c_off < 0 || Cx < 1 || c_off + Cx > Cy)
    return clt_ctx_fail(s->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "opcheck: channels [%lld, %lld) outside %lld",
                        (long long)c_off, (long long)(c_off + Cx),
                        (long long)Cy);
  guarded_buf *y, *x;
  CLT_TRY(set_buf(s, N * Cy * S, -1.0f, 1.0f, &y));
  CLT_TRY(set_buf(s, N * Cx * S, -1.0f, 1.0f, &x));
  CLT_TRY(clt_channel_slice(s->ctx, y->t, x->t, N, Cy, Cx, c_off, S, backward,
                            accumulate));
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < Cx; c++)
      for (int64_t j = 0; j < S; j++) {
        float *yv = &y->host[(n * Cy + c_off + c) * S + j];
        float *xv = &x->host[(n * Cx + c) * S + j];
        if (!backward)
          *yv = *xv;
        else
          *xv = accumulate ? (float)((double)*xv + *yv) : *yv;
      }
  return set_compare(s);
}

clt_status clt_check_channel_slice(clt_context *ctx, int64_t N, int64_t Cy,
                                   int64_t Cx, int64_t c_off, int64_t S,
                                   bool backward, bool accumulate,
                                   double *max_err) {
  check_set s;
  set_begin(&s, ctx, 300);
  return set_end(&s,
                 channel_slice_body(&s, N, Cy, Cx, c_off, S, backward,
                                    accumulate),
                 max_err);
}
