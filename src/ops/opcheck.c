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
#define SET_MAX_BUFS 8

/* An f32 operand: a view of n elements at offset GUARD into a base tensor
 * of n + 2 * GUARD. `all` mirrors the whole base on the host; after the op
 * the reference writes what it expects into `host`, and the comparison
 * covers the guards too. */
typedef struct guarded_buf {
  clt_tensor *base, *t;
  float *all, *host;
  int64_t n;
} guarded_buf;

/* The operands of one check, freed together. */
typedef struct check_set {
  clt_context *ctx;
  guarded_buf bufs[SET_MAX_BUFS];
  int count;
  clt_tensor *labels; /* the one non-f32 operand (cross-entropy) */
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

/* Downloads every operand (guards included) and folds its largest
 * difference from the host's expectation into s->err. */
static clt_status set_compare(check_set *s) {
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
  clt_tensor_destroy(s->labels);
  s->count = 0;
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
