/* Softmax, softmax + cross-entropy (fused), sigmoid + binary cross-entropy
 * (fused, multi-label), the regression losses (mean squared error, mean
 * absolute error, Huber). One
 * work-item per row: class counts are small (10..1000) and the rows are
 * independent, so no local memory and no barrier is needed. Rows longer
 * than a work-item's loops may be (ops.h clt_loop_per: llvmpipe ends them
 * after 65,535 iterations) go to the _group kernels at the end: a
 * work-group of CLT_WG items per row. */

/* y[r, :] = softmax(x[r, :]) */
__kernel void softmax_rows(__global float *y, int y_off,
                           __global const float *x, int x_off, int rows,
                           int cols) {
  int r = get_global_id(0);
  if (r >= rows) return;
  __global const float *xr = x + x_off + r * cols;
  __global float *yr = y + y_off + r * cols;
  float m = xr[0];
  for (int c = 1; c < cols; c++) m = fmax(m, xr[c]);
  float s = 0.0f;
  for (int c = 0; c < cols; c++) s += exp(xr[c] - m);
  float inv = 1.0f / s;
  for (int c = 0; c < cols; c++) yr[c] = exp(xr[c] - m) * inv;
}

/* dx = y * (dy - sum(dy * y)) row by row, from the softmax output y. */
__kernel void softmax_rows_backward(__global float *dx, int dx_off,
                                    __global const float *dy, int dy_off,
                                    __global const float *y, int y_off,
                                    int rows, int cols, int accumulate) {
  int r = get_global_id(0);
  if (r >= rows) return;
  int base = r * cols;
  float dot = 0.0f;
  for (int c = 0; c < cols; c++)
    dot += dy[dy_off + base + c] * y[y_off + base + c];
  for (int c = 0; c < cols; c++) {
    float g = y[y_off + base + c] * (dy[dy_off + base + c] - dot);
    dx[dx_off + base + c] = accumulate ? dx[dx_off + base + c] + g : g;
  }
}

/* Row xr's cross-entropy loss from its largest logit m and s, the sum of
 * exp(xr[c] - m); NaN for a label outside [0, cols). (m - x[label]) +
 * log(s), not (m + log(s)) - x[label]: with large, nearly equal logits the
 * sum m + log(s) would round log(s) away. With label smoothing e (PyTorch's
 * label_smoothing: the target (1 - e) onehot + e / cols), the loss is
 * (1 - e) (m - x[label]) + e (m - mean) + log(s), mean the row's mean
 * logit, m - mean given as `spread` (the mean of m - x[c], summed from
 * those differences: a mean of large logits would round away what sets
 * them apart); e = 0 gives the plain loss's bits. */
static float xent_loss(__global const float *xr, int label, int cols, float m,
                       float s, float e, float spread) {
  if (!(label >= 0 && label < cols)) return NAN;
  float l = m - xr[label];
  return (e != 0.0f ? (1.0f - e) * l + e * spread : l) + log(s);
}

/* The loss's gradient at column c holding logit xc: (softmax - target) *
 * grad_scale, inv being 1 / s, the target (1 - e) onehot + e / cols. */
static float xent_grad(float xc, int c, int label, float m, float inv,
                       float grad_scale, float e, float e_cols) {
  return (exp(xc - m) * inv - ((c == label ? 1.0f - e : 0.0f) + e_cols)) *
         grad_scale;
}

/* The weight of a row of label `label` (valid: in [0, cols)): cw[label]
 * where weighted (class weights), else 1, which leaves the loss's and the
 * gradient's bits as they are. */
static float xent_weight(__global const float *cw, int weighted, int label,
                         bool valid) {
  return weighted && valid ? cw[label] : 1.0f;
}

/* Per row: loss[r] = logsumexp(x[r]) - x[r, label]; correct[r] = argmax
 * is the label; grad[r] = (softmax(x[r]) - onehot(label)) * grad_scale;
 * with label smoothing e the target is (1 - e) onehot + e / cols (above);
 * weighted, both times cw[label] (class weights, Keras's class_weight).
 * Stable for logits of any size: everything is relative to the row max.
 * A label outside [0, cols) gives loss NaN, which the caller reports. */
__kernel void softmax_xent(__global float *loss, int loss_off,
                           __global float *correct, int correct_off,
                           __global float *grad, int grad_off,
                           __global const float *x, int x_off,
                           __global const int *labels, int labels_off,
                           __global const float *cw, int cw_off,
                           int rows, int cols, float grad_scale, float e,
                           int weighted) {
  int r = get_global_id(0);
  if (r >= rows) return;
  __global const float *xr = x + x_off + r * cols;
  int label = labels[labels_off + r];
  float m = xr[0];
  int arg = 0;
  for (int c = 1; c < cols; c++)
    if (xr[c] > m) {
      m = xr[c];
      arg = c;
    }
  float s = 0.0f, sum = 0.0f;
  for (int c = 0; c < cols; c++) s += exp(xr[c] - m);
  for (int c = 0; c < cols; c++) sum += m - xr[c];
  bool valid = label >= 0 && label < cols;
  float w = xent_weight(cw + cw_off, weighted, label, valid);
  loss[loss_off + r] = w * xent_loss(xr, label, cols, m, s, e, sum / cols);
  correct[correct_off + r] = (valid && arg == label) ? 1.0f : 0.0f;
  float inv = 1.0f / s, e_cols = e / cols, scale = grad_scale * w;
  for (int c = 0; c < cols; c++)
    grad[grad_off + r * cols + c] =
        xent_grad(xr[c], c, label, m, inv, scale, e, e_cols);
}

/* One element's regression loss of d = p - t, and its derivative into *g:
 * kind 0 mse, d^2; 1 mae, |d| (derivative sign(d), 0 at 0, as PyTorch's
 * L1Loss); 2 huber, d^2 / 2 where |d| <= delta, else delta (|d| -
 * delta / 2) (PyTorch's HuberLoss, Keras's Huber). */
static float regression_term(float d, int kind, float delta, float *g) {
  float a = fabs(d);
  if (kind == 0) {
    *g = 2.0f * d;
    return d * d;
  }
  float s = d > 0.0f ? 1.0f : d < 0.0f ? -1.0f : 0.0f;
  if (kind == 1) {
    *g = s;
    return a;
  }
  if (a <= delta) {
    *g = d;
    return 0.5f * d * d;
  }
  *g = delta * s;
  return delta * (a - 0.5f * delta);
}

/* Per row: loss[r] = sum_c term(p - t) and abs_err[r] = sum_c |p - t| (the
 * caller divides by the element count: the mean loss and the mean
 * absolute error); grad = term'(p - t) * grad_scale. */
__kernel void regression_loss(__global float *loss, int loss_off,
                              __global float *abs_err, int abs_off,
                              __global float *grad, int grad_off,
                              __global const float *p, int p_off,
                              __global const float *t, int t_off, int rows,
                              int cols, float grad_scale, int kind,
                              float delta) {
  int r = get_global_id(0);
  if (r >= rows) return;
  float s = 0.0f, a = 0.0f;
  for (int c = 0; c < cols; c++) {
    int i = r * cols + c;
    float d = p[p_off + i] - t[t_off + i], g;
    s += regression_term(d, kind, delta, &g);
    a += fabs(d);
    grad[grad_off + i] = g * grad_scale;
  }
  loss[loss_off + r] = s;
  abs_err[abs_off + r] = a;
}

/* One element of the binary cross-entropy of logit x against target t in
 * [0, 1] (PyTorch's BCEWithLogitsLoss): max(x, 0) - x t + log(1 + e^-|x|),
 * never exp of a large number; *g: its derivative sigmoid(x) - t, and
 * *hit: 1 where the prediction (x > 0, a probability over 1/2) is the
 * target's side of 1/2 (Keras's binary_accuracy). */
static float sigmoid_xent_term(float x, float t, float *g, float *hit) {
  float e = exp(-fabs(x)); /* in (0, 1] */
  float p = x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
  *g = p - t;
  *hit = (x > 0.0f) == (t >= 0.5f) ? 1.0f : 0.0f;
  return fmax(x, 0.0f) - x * t + log1p(e);
}

/* Per row: loss[r] = sum_c term(x, t), correct[r] = the elements whose
 * prediction is right (the caller divides both by the element count);
 * grad = (sigmoid(x) - t) * grad_scale. */
__kernel void sigmoid_xent(__global float *loss, int loss_off,
                           __global float *correct, int correct_off,
                           __global float *grad, int grad_off,
                           __global const float *x, int x_off,
                           __global const float *t, int t_off, int rows,
                           int cols, float grad_scale) {
  int r = get_global_id(0);
  if (r >= rows) return;
  float s = 0.0f, right = 0.0f;
  for (int c = 0; c < cols; c++) {
    int i = r * cols + c;
    float g, hit;
    s += sigmoid_xent_term(x[x_off + i], t[t_off + i], &g, &hit);
    right += hit;
    grad[grad_off + i] = g * grad_scale;
  }
  loss[loss_off + r] = s;
  correct[correct_off + r] = right;
}

/* ---- a work-group per row: global rows * CLT_WG exactly (no group may
 * leave before the barriers), local CLT_WG ---- */

/* The largest v over the group, to every item (group_sum's tree). */
static float group_max(__local float *scratch, float v) {
  int lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = CLT_WG / 2; step > 0; step /= 2) {
    if (lid < step) scratch[lid] = fmax(scratch[lid], scratch[lid + step]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float m = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return m;
}

/* The first column holding the row's largest value, to every item, from
 * each item's first largest of its columns (m at arg; arg -1: none) and
 * that value in *m. */
static int group_argmax(__local float *sm, __local int *sa, float *m,
                        int arg) {
  int lid = get_local_id(0);
  sm[lid] = *m;
  sa[lid] = arg;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = CLT_WG / 2; step > 0; step /= 2) {
    if (lid < step) {
      float mb = sm[lid + step];
      int ab = sa[lid + step];
      if (ab >= 0 && (sa[lid] < 0 || mb > sm[lid] ||
                      (mb == sm[lid] && ab < sa[lid]))) {
        sm[lid] = mb;
        sa[lid] = ab;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  *m = sm[0];
  int a = sa[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return a;
}

__kernel void softmax_rows_group(__global float *y, int y_off,
                                 __global const float *x, int x_off, int rows,
                                 int cols) {
  __local float scratch[CLT_WG];
  int r = get_group_id(0), lid = get_local_id(0);
  __global const float *xr = x + x_off + r * cols;
  __global float *yr = y + y_off + r * cols;
  float m = -INFINITY;
  for (int c = lid; c < cols; c += CLT_WG) m = fmax(m, xr[c]);
  m = group_max(scratch, m);
  float s = 0.0f;
  for (int c = lid; c < cols; c += CLT_WG) s += exp(xr[c] - m);
  float inv = 1.0f / group_sum(scratch, s);
  for (int c = lid; c < cols; c += CLT_WG) yr[c] = exp(xr[c] - m) * inv;
}

__kernel void softmax_rows_backward_group(__global float *dx, int dx_off,
                                          __global const float *dy,
                                          int dy_off, __global const float *y,
                                          int y_off, int rows, int cols,
                                          int accumulate) {
  __local float scratch[CLT_WG];
  int r = get_group_id(0), lid = get_local_id(0);
  int base = r * cols;
  float dot = 0.0f;
  for (int c = lid; c < cols; c += CLT_WG)
    dot += dy[dy_off + base + c] * y[y_off + base + c];
  dot = group_sum(scratch, dot);
  for (int c = lid; c < cols; c += CLT_WG) {
    float g = y[y_off + base + c] * (dy[dy_off + base + c] - dot);
    dx[dx_off + base + c] = accumulate ? dx[dx_off + base + c] + g : g;
  }
}

__kernel void softmax_xent_group(__global float *loss, int loss_off,
                                 __global float *correct, int correct_off,
                                 __global float *grad, int grad_off,
                                 __global const float *x, int x_off,
                                 __global const int *labels, int labels_off,
                                 __global const float *cw, int cw_off,
                                 int rows, int cols, float grad_scale,
                                 float e, int weighted) {
  __local float scratch[CLT_WG];
  __local int args[CLT_WG];
  int r = get_group_id(0), lid = get_local_id(0);
  __global const float *xr = x + x_off + r * cols;
  int label = labels[labels_off + r];
  float m = -INFINITY;
  int arg = -1;
  for (int c = lid; c < cols; c += CLT_WG)
    if (arg < 0 || xr[c] > m) {
      m = xr[c];
      arg = c;
    }
  arg = group_argmax(scratch, args, &m, arg);
  float s = 0.0f, sum = 0.0f;
  for (int c = lid; c < cols; c += CLT_WG) s += exp(xr[c] - m);
  s = group_sum(scratch, s);
  for (int c = lid; c < cols; c += CLT_WG) sum += m - xr[c];
  sum = group_sum(scratch, sum);
  bool valid = label >= 0 && label < cols;
  float w = xent_weight(cw + cw_off, weighted, label, valid);
  if (lid == 0) {
    loss[loss_off + r] = w * xent_loss(xr, label, cols, m, s, e, sum / cols);
    correct[correct_off + r] = (valid && arg == label) ? 1.0f : 0.0f;
  }
  float inv = 1.0f / s, e_cols = e / cols, scale = grad_scale * w;
  for (int c = lid; c < cols; c += CLT_WG)
    grad[grad_off + r * cols + c] =
        xent_grad(xr[c], c, label, m, inv, scale, e, e_cols);
}

__kernel void regression_loss_group(__global float *loss, int loss_off,
                                    __global float *abs_err, int abs_off,
                                    __global float *grad, int grad_off,
                                    __global const float *p, int p_off,
                                    __global const float *t, int t_off,
                                    int rows, int cols, float grad_scale,
                                    int kind, float delta) {
  __local float scratch[CLT_WG];
  int r = get_group_id(0), lid = get_local_id(0);
  float s = 0.0f, a = 0.0f;
  for (int c = lid; c < cols; c += CLT_WG) {
    int i = r * cols + c;
    float d = p[p_off + i] - t[t_off + i], g;
    s += regression_term(d, kind, delta, &g);
    a += fabs(d);
    grad[grad_off + i] = g * grad_scale;
  }
  s = group_sum(scratch, s);
  a = group_sum(scratch, a);
  if (lid == 0) {
    loss[loss_off + r] = s;
    abs_err[abs_off + r] = a;
  }
}

__kernel void sigmoid_xent_group(__global float *loss, int loss_off,
                                 __global float *correct, int correct_off,
                                 __global float *grad, int grad_off,
                                 __global const float *x, int x_off,
                                 __global const float *t, int t_off, int rows,
                                 int cols, float grad_scale) {
  __local float scratch[CLT_WG];
  int r = get_group_id(0), lid = get_local_id(0);
  float s = 0.0f, right = 0.0f;
  for (int c = lid; c < cols; c += CLT_WG) {
    int i = r * cols + c;
    float g, hit;
    s += sigmoid_xent_term(x[x_off + i], t[t_off + i], &g, &hit);
    right += hit;
    grad[grad_off + i] = g * grad_scale;
  }
  s = group_sum(scratch, s);
  right = group_sum(scratch, right);
  if (lid == 0) {
    loss[loss_off + r] = s;
    correct[correct_off + r] = right;
  }
}
