/* Checks of cl/loss.cl: softmax, fused softmax cross-entropy, squared
 * error. */
#include <math.h>

#include "check/harness.h"

typedef struct rows_args {
  int64_t rows, cols;
  bool accumulate;
  float logit_scale;
  float smoothing; /* softmax_xent's label smoothing */
  bool weighted;   /* softmax_xent with class weights */
  int kind;        /* regression: clt_regression_kind */
  float delta;     /* huber's */
} rows_args;

/* y = softmax(x) of one row, in double. */
static void softmax_row_ref(const float *x, int64_t cols, double *y) {
  double m = x[0];
  for (int64_t c = 1; c < cols; c++)
    if (x[c] > m) m = x[c];
  double sum = 0.0;
  for (int64_t c = 0; c < cols; c++) sum += exp(x[c] - m);
  for (int64_t c = 0; c < cols; c++) y[c] = exp(x[c] - m) / sum;
}

static clt_status softmax_forward_body(check_set *s, const void *arg) {
  const rows_args *a = arg;
  int64_t rows = a->rows, cols = a->cols;
  check_f32 *x, *y;
  double *row;
  CLT_TRY(check_doubles(s, cols, &row));
  CLT_TRY(check_operand(s, rows * cols, -5.0f, 5.0f, &x));
  CLT_TRY(check_operand(s, rows * cols, -1.0f, 1.0f, &y));
  CLT_TRY(clt_softmax_forward(s->ctx, y->t, x->t, rows, cols));
  for (int64_t r = 0; r < rows; r++) {
    softmax_row_ref(x->host + r * cols, cols, row);
    for (int64_t c = 0; c < cols; c++) y->host[r * cols + c] = (float)row[c];
  }
  return CLT_OK;
}

clt_status clt_check_softmax_forward(clt_context *ctx, int64_t rows,
                                     int64_t cols, double *max_err) {
  rows_args a = {.rows = rows, .cols = cols};
  return check_run(ctx, 80, softmax_forward_body, &a, max_err);
}

static clt_status softmax_backward_body(check_set *s, const void *arg) {
  const rows_args *a = arg;
  int64_t rows = a->rows, cols = a->cols;
  check_f32 *y, *dy, *dx;
  double *row;
  CLT_TRY(check_doubles(s, cols, &row));
  CLT_TRY(check_operand(s, rows * cols, -5.0f, 5.0f, &y));
  for (int64_t r = 0; r < rows; r++) {
    softmax_row_ref(y->host + r * cols, cols, row);
    for (int64_t c = 0; c < cols; c++) y->host[r * cols + c] = (float)row[c];
  }
  CLT_TRY(check_upload(y));
  CLT_TRY(check_operand(s, rows * cols, -1.0f, 1.0f, &dy));
  CLT_TRY(check_operand(s, rows * cols, -1.0f, 1.0f, &dx));
  CLT_TRY(clt_softmax_backward(s->ctx, dx->t, dy->t, y->t, rows, cols,
                               a->accumulate));
  for (int64_t r = 0; r < rows; r++) {
    const float *yr = y->host + r * cols, *dyr = dy->host + r * cols;
    float *dxr = dx->host + r * cols;
    double dot = 0.0;
    for (int64_t c = 0; c < cols; c++) dot += (double)dyr[c] * yr[c];
    for (int64_t c = 0; c < cols; c++) {
      double g = yr[c] * (dyr[c] - dot);
      dxr[c] = (float)(a->accumulate ? dxr[c] + g : g);
    }
  }
  return CLT_OK;
}

clt_status clt_check_softmax_backward(clt_context *ctx, int64_t rows,
                                      int64_t cols, bool accumulate,
                                      double *max_err) {
  rows_args a = {.rows = rows, .cols = cols, .accumulate = accumulate};
  return check_run(ctx, 90, softmax_backward_body, &a, max_err);
}

/* Labels uniform in [0, cols): an i32 operand, guarded like the rest. */
static clt_status random_labels(check_set *s, int64_t rows, int64_t cols,
                                check_i32 **labels) {
  CLT_TRY(check_operand_i32(s, rows, labels));
  clt_rng r = clt_rng_derive(s->seed++, 98, 0);
  for (int64_t i = 0; i < rows; i++)
    (*labels)->host[i] = (int32_t)clt_rng_below(&r, (uint64_t)cols);
  return check_upload_i32(*labels);
}

static clt_status xent_body(check_set *s, const void *arg) {
  const rows_args *a = arg;
  int64_t rows = a->rows, cols = a->cols;
  float logit_scale = a->logit_scale;
  check_f32 *x, *loss, *correct, *grad;
  check_i32 *labels;
  CLT_TRY(check_operand(s, rows * cols, -logit_scale, logit_scale, &x));
  if (logit_scale > 1.0f) {
    /* Every other row: logits within 1 of +-logit_scale, where a log-sum-exp
     * that adds the row maximum back before subtracting loses precision. */
    for (int64_t r = 1; r < rows; r += 2)
      for (int64_t c = 0; c < cols; c++) {
        float *v = &x->host[r * cols + c];
        *v = (r % 4 == 1 ? logit_scale : -logit_scale) + *v / logit_scale;
      }
    CLT_TRY(check_upload(x));
  }
  CLT_TRY(random_labels(s, rows, cols, &labels));
  CLT_TRY(check_operand(s, rows, -1.0f, 1.0f, &loss));
  CLT_TRY(check_operand(s, rows, -1.0f, 1.0f, &correct));
  CLT_TRY(check_operand(s, rows * cols, -1.0f, 1.0f, &grad));
  check_f32 *cw = NULL;
  if (a->weighted) CLT_TRY(check_operand(s, cols, 0.05f, 4.0f, &cw));
  float grad_scale = 1.0f / (float)rows;
  double e = a->smoothing;
  CLT_TRY(clt_softmax_xent_forward_backward(
      s->ctx, loss->t, correct->t, grad->t, x->t, labels->t,
      cw ? cw->t : NULL, rows, cols, grad_scale, a->smoothing));
  const int32_t *label = labels->host;
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x->host + r * cols;
    int64_t arg_max = 0;
    for (int64_t c = 1; c < cols; c++)
      if (xr[c] > xr[arg_max]) arg_max = c;
    double m = xr[arg_max], sum = 0.0, mean = 0.0;
    for (int64_t c = 0; c < cols; c++) sum += exp(xr[c] - m);
    for (int64_t c = 0; c < cols; c++) mean += xr[c] / (double)cols;
    double lse = m + log(sum);
    double w = cw ? (double)cw->host[label[r]] : 1.0;
    /* PyTorch's definition: (1 - e) nll(label) + e mean over c of nll(c),
     * times the label's weight (Keras's class_weight) */
    loss->host[r] =
        (float)(w * ((1.0 - e) * (lse - xr[label[r]]) + e * (lse - mean)));
    correct->host[r] = arg_max == label[r] ? 1.0f : 0.0f;
    for (int64_t c = 0; c < cols; c++) {
      double p = exp(xr[c] - m) / sum;
      double t = (c == label[r] ? 1.0 - e : 0.0) + e / (double)cols;
      grad->host[r * cols + c] = (float)(w * (p - t) * grad_scale);
    }
  }
  return CLT_OK;
}

clt_status clt_check_softmax_xent(clt_context *ctx, int64_t rows, int64_t cols,
                                  float logit_scale, float smoothing,
                                  bool weighted, double *max_err) {
  rows_args a = {.rows = rows,
                 .cols = cols,
                 .logit_scale = logit_scale,
                 .smoothing = smoothing,
                 .weighted = weighted};
  return check_run(ctx, 100, xent_body, &a, max_err);
}

/* One element's loss term and derivative, in double (cl/loss.cl's
 * regression_term). */
static double regression_ref(double d, int kind, double delta, double *g) {
  double a = fabs(d), sign = d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0;
  switch (kind) {
  case CLT_REGRESSION_MSE:
    *g = 2.0 * d;
    return d * d;
  case CLT_REGRESSION_MAE:
    *g = sign;
    return a;
  default:
    *g = a <= delta ? d : delta * sign;
    return a <= delta ? 0.5 * d * d : delta * (a - 0.5 * delta);
  }
}

static clt_status regression_body(check_set *s, const void *arg) {
  const rows_args *a = arg;
  int64_t rows = a->rows, cols = a->cols;
  check_f32 *p, *t, *loss, *abs_err, *grad;
  CLT_TRY(check_operand(s, rows * cols, -1.0f, 1.0f, &p));
  CLT_TRY(check_operand(s, rows * cols, -1.0f, 1.0f, &t));
  CLT_TRY(check_operand(s, rows, -1.0f, 1.0f, &loss));
  CLT_TRY(check_operand(s, rows, -1.0f, 1.0f, &abs_err));
  CLT_TRY(check_operand(s, rows * cols, -1.0f, 1.0f, &grad));
  float grad_scale = 1.0f / (float)(rows * cols);
  CLT_TRY(clt_regression_loss_forward_backward(
      s->ctx, (clt_regression_kind)a->kind, a->delta, loss->t, abs_err->t,
      grad->t, p->t, t->t, rows, cols, grad_scale));
  for (int64_t r = 0; r < rows; r++) {
    double sum = 0.0, sum_abs = 0.0;
    for (int64_t c = 0; c < cols; c++) {
      double d = (double)p->host[r * cols + c] - t->host[r * cols + c], g;
      sum += regression_ref(d, a->kind, a->delta, &g);
      sum_abs += fabs(d);
      grad->host[r * cols + c] = (float)(g * grad_scale);
    }
    loss->host[r] = (float)sum;
    abs_err->host[r] = (float)sum_abs;
  }
  return CLT_OK;
}

clt_status clt_check_regression_loss(clt_context *ctx, int kind, float delta,
                                     int64_t rows, int64_t cols,
                                     double *max_err) {
  rows_args a = {.rows = rows, .cols = cols, .kind = kind, .delta = delta};
  return check_run(ctx, 110 + (uint64_t)kind, regression_body, &a, max_err);
}

static clt_status sigmoid_xent_body(check_set *s, const void *arg) {
  const rows_args *a = arg;
  int64_t rows = a->rows, cols = a->cols;
  check_f32 *x, *t, *loss, *correct, *grad;
  CLT_TRY(check_operand(s, rows * cols, -4.0f, 4.0f, &x));
  CLT_TRY(check_operand(s, rows * cols, 0.0f, 1.0f, &t));
  CLT_TRY(check_operand(s, rows, -1.0f, 1.0f, &loss));
  CLT_TRY(check_operand(s, rows, -1.0f, 1.0f, &correct));
  CLT_TRY(check_operand(s, rows * cols, -1.0f, 1.0f, &grad));
  if (a->logit_scale > 1.0f) { /* every other row: logits near +-scale */
    for (int64_t r = 1; r < rows; r += 2)
      for (int64_t c = 0; c < cols; c++) {
        float *v = &x->host[r * cols + c];
        *v = (c % 2 ? a->logit_scale : -a->logit_scale) + *v;
      }
    CLT_TRY(check_upload(x));
  }
  for (int64_t i = 0; i < rows * cols; i += 3) t->host[i] = i % 2 ? 1.0f : 0.0f;
  CLT_TRY(check_upload(t)); /* hard labels beside soft ones */
  float grad_scale = 1.0f / (float)(rows * cols);
  CLT_TRY(clt_sigmoid_xent_forward_backward(s->ctx, loss->t, correct->t,
                                            grad->t, x->t, t->t, rows, cols,
                                            grad_scale));
  for (int64_t r = 0; r < rows; r++) {
    double sum = 0.0, right = 0.0;
    for (int64_t c = 0; c < cols; c++) {
      double v = x->host[r * cols + c], y = t->host[r * cols + c];
      /* -(y log p + (1 - y) log(1 - p)), p = sigmoid(v), written stably */
      sum += fmax(v, 0.0) - v * y + log1p(exp(-fabs(v)));
      right += (v > 0) == (y >= 0.5);
      grad->host[r * cols + c] =
          (float)((1.0 / (1.0 + exp(-v)) - y) * grad_scale);
    }
    loss->host[r] = (float)sum;
    correct->host[r] = (float)right;
  }
  return CLT_OK;
}

clt_status clt_check_sigmoid_xent(clt_context *ctx, int64_t rows, int64_t cols,
                                  float logit_scale, double *max_err) {
  rows_args a = {.rows = rows, .cols = cols, .logit_scale = logit_scale};
  return check_run(ctx, 120, sigmoid_xent_body, &a, max_err);
}
