/* Checks of cl/reduce.cl: sums over channels, sums into an accumulator. */
#include "check/harness.h"

typedef struct sum_channels_args {
  int64_t outer, channels, inner;
  bool accumulate;
} sum_channels_args;

static clt_status sum_channels_body(check_set *s, const void *arg) {
  const sum_channels_args *a = arg;
  int64_t channels = a->channels, inner = a->inner;
  check_f32 *x, *out;
  CLT_TRY(check_operand(s, a->outer * channels * inner, -1.0f, 1.0f, &x));
  CLT_TRY(check_operand(s, channels, -1.0f, 1.0f, &out));
  CLT_TRY(clt_sum_channels_forward(s->ctx, out->t, x->t, a->outer, channels,
                                   inner, a->accumulate));
  for (int64_t c = 0; c < channels; c++) {
    double sum = a->accumulate ? out->host[c] : 0.0;
    for (int64_t o = 0; o < a->outer; o++)
      for (int64_t i = 0; i < inner; i++)
        sum += x->host[(o * channels + c) * inner + i];
    out->host[c] = (float)sum;
  }
  return CLT_OK;
}

clt_status clt_check_sum_channels(clt_context *ctx, int64_t outer,
                                  int64_t channels, int64_t inner,
                                  bool accumulate, double *max_err) {
  sum_channels_args a = {outer, channels, inner, accumulate};
  return check_run(ctx, 120, sum_channels_body, &a, max_err);
}

/* A dense layer's fused ReLU and bias gradients (clt_sum_columns_relu):
 * dy [rows, cols] masked in place where the ReLU's output y is not
 * positive (y spans both signs and holds exact zeros, as a ReLU's output
 * does), db its column sums. */
typedef struct sum_columns_relu_args {
  int64_t rows, cols;
} sum_columns_relu_args;

static clt_status sum_columns_relu_body(check_set *s, const void *arg) {
  const sum_columns_relu_args *a = arg;
  int64_t rows = a->rows, cols = a->cols, n = rows * cols;
  check_f32 *dy, *y, *db;
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &dy));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &y));
  CLT_TRY(check_operand(s, cols, -1.0f, 1.0f, &db));
  /* every third output exactly 0: the mask's edge */
  for (int64_t i = 0; i < n; i += 3) y->host[i] = 0.0f;
  CLT_TRY(check_upload(y));
  CLT_TRY(clt_sum_columns_relu(s->ctx, db->t, dy->t, y->t, rows, cols));
  for (int64_t i = 0; i < n; i++)
    if (!(y->host[i] > 0.0f)) dy->host[i] = 0.0f;
  for (int64_t c = 0; c < cols; c++) {
    double sum = 0.0;
    for (int64_t r = 0; r < rows; r++) sum += dy->host[r * cols + c];
    db->host[c] = (float)sum;
  }
  return CLT_OK;
}

clt_status clt_check_sum_columns_relu(clt_context *ctx, int64_t rows,
                                      int64_t cols, double *max_err) {
  sum_columns_relu_args a = {rows, cols};
  return check_run(ctx, 125, sum_columns_relu_body, &a, max_err);
}

/* The accumulator's length: the slots beside `index` must not change. */
#define ACC_SLOTS 5

typedef struct sum_into_args {
  int64_t n;
  int index;
  float scale;
  bool squares;
} sum_into_args;

static clt_status sum_into_body(check_set *s, const void *arg) {
  const sum_into_args *a = arg;
  if (a->index < 0 || a->index >= ACC_SLOTS)
    return clt_ctx_fail(s->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "check: accumulator index %d outside 0..%d", a->index,
                        ACC_SLOTS - 1);
  check_f32 *x, *acc;
  CLT_TRY(check_operand(s, a->n, -1.0f, 1.0f, &x));
  CLT_TRY(check_operand(s, ACC_SLOTS, -1.0f, 1.0f, &acc));
  if (a->squares)
    CLT_TRY(clt_sumsq_into(s->ctx, acc->t, a->index, x->t, a->n));
  else
    CLT_TRY(clt_sum_into(s->ctx, acc->t, a->index, x->t, a->n, a->scale));
  double sum = 0.0;
  for (int64_t i = 0; i < a->n; i++)
    sum += a->squares ? (double)x->host[i] * x->host[i] : x->host[i];
  acc->host[a->index] =
      (float)(acc->host[a->index] + (a->squares ? sum : a->scale * sum));
  return CLT_OK;
}

clt_status clt_check_sum_into(clt_context *ctx, int64_t n, int index,
                              float scale, double *max_err) {
  sum_into_args a = {n, index, scale, false};
  return check_run(ctx, 130, sum_into_body, &a, max_err);
}

/* Two sums in one call (clt_sum2_into): slots i0 and i1 of an
 * accumulator whose other slots must not change. */
typedef struct sum2_into_args {
  int64_t n;
  int i0, i1;
  float s0, s1;
} sum2_into_args;

static clt_status sum2_into_body(check_set *s, const void *arg) {
  const sum2_into_args *a = arg;
  if (a->i0 < 0 || a->i0 >= ACC_SLOTS || a->i1 < 0 || a->i1 >= ACC_SLOTS ||
      a->i0 == a->i1)
    return clt_ctx_fail(s->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "check: accumulator slots %d and %d: two different "
                        "ones in 0..%d",
                        a->i0, a->i1, ACC_SLOTS - 1);
  check_f32 *x0, *x1, *acc;
  CLT_TRY(check_operand(s, a->n, -1.0f, 1.0f, &x0));
  CLT_TRY(check_operand(s, a->n, 0.0f, 1.0f, &x1));
  CLT_TRY(check_operand(s, ACC_SLOTS, -1.0f, 1.0f, &acc));
  CLT_TRY(clt_sum2_into(s->ctx, acc->t, a->i0, x0->t, a->s0, a->i1, x1->t,
                        a->s1, a->n));
  double sum0 = 0.0, sum1 = 0.0;
  for (int64_t i = 0; i < a->n; i++) {
    sum0 += x0->host[i];
    sum1 += x1->host[i];
  }
  acc->host[a->i0] = (float)(acc->host[a->i0] + a->s0 * sum0);
  acc->host[a->i1] = (float)(acc->host[a->i1] + a->s1 * sum1);
  return CLT_OK;
}

clt_status clt_check_sum2_into(clt_context *ctx, int64_t n, int i0, float s0,
                               int i1, float s1, double *max_err) {
  sum2_into_args a = {n, i0, i1, s0, s1};
  return check_run(ctx, 150, sum2_into_body, &a, max_err);
}

clt_status clt_check_sumsq_into(clt_context *ctx, int64_t n, int index,
                                double *max_err) {
  sum_into_args a = {n, index, 1.0f, true};
  return check_run(ctx, 140, sum_into_body, &a, max_err);
}
