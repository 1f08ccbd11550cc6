/* Checks of cl/elementwise.cl: sums, scaling, bias, channel slices. */
#include <math.h>

#include "check/harness.h"

typedef struct unary_args {
  int64_t n;
  float alpha;
  bool accumulate;
  bool relu; /* add: the fused ReLU's kernel (no accumulate) */
} unary_args;

static clt_status add_body(check_set *s, const void *arg) {
  const unary_args *u = arg;
  check_f32 *a, *b, *out;
  CLT_TRY(check_operand(s, u->n, -1.0f, 1.0f, &a));
  CLT_TRY(check_operand(s, u->n, -1.0f, 1.0f, &b));
  CLT_TRY(check_operand(s, u->n, -1.0f, 1.0f, &out));
  const clt_round16 *round;
  CLT_TRY(check_round(s, out, &round));
  if (u->relu)
    CLT_TRY(clt_add_relu_forward(s->ctx, out->t, a->t, b->t, u->n, round));
  else
    CLT_TRY(clt_add_forward(s->ctx, out->t, a->t, b->t, u->n, u->accumulate,
                            round));
  for (int64_t i = 0; i < u->n; i++) {
    double v = (double)a->host[i] + b->host[i];
    if (u->relu) v = v > 0.0 ? v : 0.0;
    out->host[i] = (float)(u->accumulate ? out->host[i] + v : v);
  }
  return CLT_OK;
}

clt_status clt_check_add(clt_context *ctx, int64_t n, bool accumulate,
                         int round16, double *max_err) {
  unary_args u = {.n = n, .accumulate = accumulate};
  return check_run_rounded(ctx, 20, add_body, &u, round16, max_err);
}

clt_status clt_check_add_relu(clt_context *ctx, int64_t n, int round16,
                              double *max_err) {
  unary_args u = {.n = n, .relu = true};
  return check_run_rounded(ctx, 21, add_body, &u, round16, max_err);
}

static clt_status scale_body(check_set *s, const void *arg) {
  const unary_args *u = arg;
  check_f32 *x, *out;
  CLT_TRY(check_operand(s, u->n, -1.0f, 1.0f, &x));
  CLT_TRY(check_operand(s, u->n, -1.0f, 1.0f, &out));
  const clt_round16 *round;
  CLT_TRY(check_round(s, out, &round));
  CLT_TRY(clt_scale_forward(s->ctx, out->t, x->t, u->n, u->alpha, u->accumulate,
                            round));
  for (int64_t i = 0; i < u->n; i++) {
    double v = (double)u->alpha * x->host[i];
    out->host[i] = (float)(u->accumulate ? out->host[i] + v : v);
  }
  return CLT_OK;
}

clt_status clt_check_scale(clt_context *ctx, int64_t n, float alpha,
                           bool accumulate, int round16, double *max_err) {
  unary_args u = {.n = n, .alpha = alpha, .accumulate = accumulate};
  return check_run_rounded(ctx, 30, scale_body, &u, round16, max_err);
}

/* y [outer, channels, inner] += bias[channels]; the rows op is
 * [rows, cols, 1]. */
typedef struct bias_args {
  int64_t outer, channels, inner;
  bool rows, relu;
} bias_args;

static clt_status bias_body(check_set *s, const void *arg) {
  const bias_args *b = arg;
  int64_t inner = b->inner;
  check_f32 *y, *bias;
  CLT_TRY(check_operand(s, b->outer * b->channels * inner, -1.0f, 1.0f, &y));
  CLT_TRY(check_operand(s, b->channels, -1.0f, 1.0f, &bias));
  const clt_round16 *round;
  CLT_TRY(check_round(s, y, &round));
  if (b->rows)
    CLT_TRY(clt_bias_rows_forward(s->ctx, y->t, bias->t, b->outer, b->channels,
                                  b->relu, round));
  else
    CLT_TRY(clt_bias_channels_forward(s->ctx, y->t, bias->t, b->outer,
                                      b->channels, inner, b->relu, round));
  for (int64_t o = 0; o < b->outer; o++)
    for (int64_t c = 0; c < b->channels; c++)
      for (int64_t p = 0; p < inner; p++) {
        float *v = &y->host[(o * b->channels + c) * inner + p];
        *v = (float)((double)*v + bias->host[c]);
        if (b->relu && !(*v > 0.0f)) *v = 0.0f;
      }
  return CLT_OK;
}

clt_status clt_check_bias_rows(clt_context *ctx, int64_t rows, int64_t cols,
                               bool relu, int round16, double *max_err) {
  bias_args b = {rows, cols, 1, true, relu};
  return check_run_rounded(ctx, 40, bias_body, &b, round16, max_err);
}

clt_status clt_check_bias_channels(clt_context *ctx, int64_t batch,
                                   int64_t channels, int64_t spatial, bool relu,
                                   int round16, double *max_err) {
  bias_args b = {batch, channels, spatial, false, relu};
  return check_run_rounded(ctx, 50, bias_body, &b, round16, max_err);
}

static clt_status normalize_body(check_set *s, const void *arg) {
  const bias_args *b = arg;
  int64_t n = b->outer * b->channels * b->inner;
  check_f32 *y, *x, *mean, *var;
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &y));
  CLT_TRY(check_operand(s, n, -50.0f, 50.0f, &x));
  CLT_TRY(check_operand(s, b->channels, -20.0f, 20.0f, &mean));
  CLT_TRY(check_operand(s, b->channels, 1e-4f, 400.0f, &var));
  if (b->channels > 1) { /* a constant feature */
    var->host[1] = 0.0f;
    CLT_TRY(check_upload(var));
  }
  const clt_round16 *round;
  CLT_TRY(check_round(s, y, &round));
  CLT_TRY(clt_normalize_forward(s->ctx, y->t, x->t, mean->t, var->t, n,
                                b->channels, b->inner, round));
  for (int64_t i = 0; i < n; i++) {
    int64_t c = (i / b->inner) % b->channels;
    double v = var->host[c], d = (double)x->host[i] - mean->host[c];
    y->host[i] = (float)(v > 0.0 ? d / sqrt(v) : d);
  }
  return CLT_OK;
}

clt_status clt_check_normalize(clt_context *ctx, int64_t batch,
                               int64_t channels, int64_t spatial, int round16,
                               double *max_err) {
  bias_args b = {batch, channels, spatial, false, false};
  return check_run_rounded(ctx, 55, normalize_body, &b, round16, max_err);
}

typedef struct slice_args {
  int64_t N, Cy, Cx, c_off, S;
  bool backward, accumulate;
} slice_args;

static clt_status channel_slice_body(check_set *s, const void *arg) {
  const slice_args *a = arg;
  if (a->c_off < 0 || a->Cx < 1 || a->c_off + a->Cx > a->Cy)
    return clt_ctx_fail(s->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "check: channels [%lld, %lld) outside %lld",
                        (long long)a->c_off, (long long)(a->c_off + a->Cx),
                        (long long)a->Cy);
  check_f32 *y, *x;
  CLT_TRY(check_operand(s, a->N * a->Cy * a->S, -1.0f, 1.0f, &y));
  CLT_TRY(check_operand(s, a->N * a->Cx * a->S, -1.0f, 1.0f, &x));
  CLT_TRY(clt_channel_slice(s->ctx, y->t, x->t, a->N, a->Cy, a->Cx, a->c_off,
                            a->S, a->backward, a->accumulate));
  for (int64_t n = 0; n < a->N; n++)
    for (int64_t c = 0; c < a->Cx; c++)
      for (int64_t j = 0; j < a->S; j++) {
        float *yv = &y->host[(n * a->Cy + a->c_off + c) * a->S + j];
        float *xv = &x->host[(n * a->Cx + c) * a->S + j];
        if (!a->backward)
          *yv = *xv;
        else
          *xv = a->accumulate ? (float)((double)*xv + *yv) : *yv;
      }
  return CLT_OK;
}

clt_status clt_check_channel_slice(clt_context *ctx, int64_t N, int64_t Cy,
                                   int64_t Cx, int64_t c_off, int64_t S,
                                   bool backward, bool accumulate,
                                   double *max_err) {
  slice_args a = {N, Cy, Cx, c_off, S, backward, accumulate};
  return check_run(ctx, 300, channel_slice_body, &a, max_err);
}
