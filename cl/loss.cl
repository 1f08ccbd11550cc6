/* Softmax, softmax + cross-entropy (fused), mean squared error. One
 * work-item per row: class counts are small (10..1000) and the rows are
 * independent, so no local memory and no barrier is needed. */

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

/* Per row: loss[r] = logsumexp(x[r]) - x[r, label]; correct[r] = argmax
 * is the label; grad[r] = (softmax(x[r]) - onehot(label)) * grad_scale.
 * Stable for logits of any size: everything is relative to the row max.
 * A label outside [0, cols) gives loss NaN, which the caller reports. */
__kernel void softmax_xent(__global float *loss, int loss_off,
                           __global float *correct, int correct_off,
                           __global float *grad, int grad_off,
                           __global const float *x, int x_off,
                           __global const int *labels, int labels_off,
                           int rows, int cols, float grad_scale) {
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
  float s = 0.0f;
  for (int c = 0; c < cols; c++) s += exp(xr[c] - m);
  bool valid = label >= 0 && label < cols;
  /* (m - x[label]) + log(s), not (m + log(s)) - x[label]: with large,
   * nearly equal logits the sum m + log(s) would round log(s) away. */
  loss[loss_off + r] = valid ? (m - xr[label]) + log(s) : NAN;
  correct[correct_off + r] = (valid && arg == label) ? 1.0f : 0.0f;
  float inv = 1.0f / s;
  for (int c = 0; c < cols; c++) {
    float p = exp(xr[c] - m) * inv;
    grad[grad_off + r * cols + c] = (p - (c == label ? 1.0f : 0.0f)) * grad_scale;
  }
}

/* Per row: loss[r] = sum_c (p - t)^2 (the caller divides by the element
 * count); grad = 2 (p - t) * grad_scale. */
__kernel void mse(__global float *loss, int loss_off,
                  __global float *grad, int grad_off,
                  __global const float *p, int p_off,
                  __global const float *t, int t_off, int rows, int cols,
                  float grad_scale) {
  int r = get_global_id(0);
  if (r >= rows) return;
  float s = 0.0f;
  for (int c = 0; c < cols; c++) {
    int i = r * cols + c;
    float d = p[p_off + i] - t[t_off + i];
    s += d * d;
    grad[grad_off + i] = 2.0f * d * grad_scale;
  }
  loss[loss_off + r] = s;
}
