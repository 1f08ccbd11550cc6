/* Element-wise arithmetic. Every buffer argument is followed by the element
 * offset of its tensor; `accumulate` adds into the output instead of
 * overwriting it (gradients that flow in from several consumers). */

ROUND16_BODY add_f32_body(__global float *out, int out_off,
                          __global const float *a, int a_off,
                          __global const float *b, int b_off, int n,
                          int accumulate, int run, ROUND16_PARAMS,
                          int round16) {
  FOR_RUN(i, n) {
    float v = a[a_off + i] + b[b_off + i];
    STORE16(out, out_off, i, accumulate ? out[out_off + i] + v : v);
  }
}
ROUND16_ACC_VARIANTS(add_f32,
                     (__global float *out, int out_off, __global const float *a,
                      int a_off, __global const float *b, int b_off, int n,
                      int accumulate, ROUND16_PARAMS, int run),
                     (out, out_off, a, a_off, b, b_off, n, accumulate, run,
                      ROUND16_ARGS))

/* out = max(a + b, 0): a sum with a fused ReLU (nn/merge.c), a select as
 * the ReLU layer's. */
ROUND16_BODY add_relu_f32_body(__global float *out, int out_off,
                               __global const float *a, int a_off,
                               __global const float *b, int b_off, int n,
                               int run, ROUND16_PARAMS, int round16) {
  FOR_RUN(i, n) {
    float v = a[a_off + i] + b[b_off + i];
    STORE16(out, out_off, i, v > 0.0f ? v : 0.0f);
  }
}
ROUND16_VARIANTS(add_relu_f32, (__global float *out, int out_off,
                  __global const float *a, int a_off, __global const float *b,
                  int b_off, int n, ROUND16_PARAMS, int run),
                 (out, out_off, a, a_off, b, b_off, n, run, ROUND16_ARGS))

/* out = alpha * x (+ out when accumulating). */
ROUND16_BODY scale_f32_body(__global float *out, int out_off,
                            __global const float *x, int x_off, int n,
                            float alpha, int accumulate, int run,
                            ROUND16_PARAMS, int round16) {
  FOR_RUN(i, n) {
    float v = alpha * x[x_off + i];
    STORE16(out, out_off, i, accumulate ? out[out_off + i] + v : v);
  }
}
ROUND16_ACC_VARIANTS(scale_f32,
                     (__global float *out, int out_off, __global const float *x,
                      int x_off, int n, float alpha, int accumulate,
                      ROUND16_PARAMS, int run),
                     (out, out_off, x, x_off, n, alpha, accumulate, run,
                      ROUND16_ARGS))

/* y = (x - mean[c]) * scale, c = (i / spatial) % channels, the scale
 * 1 / sqrt(var[c]), or 1 where var[c] is 0 (a constant feature is left
 * as it is, as scikit-learn's StandardScaler leaves it): the normalize
 * layer (nn/normalize.c). */
ROUND16_BODY normalize_forward_body(__global float *y, int y_off,
                                    __global const float *x, int x_off,
                                    __global const float *mean, int mean_off,
                                    __global const float *var, int var_off,
                                    int n, int channels, int spatial,
                                    ROUND16_PARAMS, int round16) {
  int i = get_global_id(0);
  if (i >= n) return;
  int c = (i / spatial) % channels;
  float v = var[var_off + c];
  float scale = v > 0.0f ? 1.0f / sqrt(v) : 1.0f;
  STORE16(y, y_off, i, (x[x_off + i] - mean[mean_off + c]) * scale);
}
ROUND16_VARIANTS(normalize_forward, (__global float *y, int y_off,
                  __global const float *x, int x_off,
                  __global const float *mean, int mean_off,
                  __global const float *var, int var_off, int n, int channels,
                  int spatial, ROUND16_PARAMS),
                 (y, y_off, x, x_off, mean, mean_off, var, var_off, n,
                  channels, spatial, ROUND16_ARGS))

/* y[row, col] += bias[col] for a [rows, cols] matrix, in place. */
ROUND16_BODY bias_add_rows_body(__global float *y, int y_off,
                                __global const float *bias, int b_off, int rows,
                                int cols, int relu, ROUND16_PARAMS,
                                int round16) {
  int i = get_global_id(0);
  if (i >= rows * cols) return;
  float v = y[y_off + i] + bias[b_off + i % cols];
  /* relu: a fused ReLU after the bias (nn/dense.c), a select. */
  STORE16(y, y_off, i, relu && !(v > 0.0f) ? 0.0f : v);
}
ROUND16_VARIANTS(bias_add_rows, (__global float *y, int y_off,
                  __global const float *bias, int b_off, int rows, int cols,
                  int relu, ROUND16_PARAMS),
                 (y, y_off, bias, b_off, rows, cols, relu, ROUND16_ARGS))

/* y[n, c, s] += bias[c] for NCHW data, then a fused ReLU where relu; one
 * work-item per (n, c) plane, looping over its contiguous spatial
 * elements (a large plane per elements each: ops.h clt_loop_per). */
ROUND16_BODY bias_add_channels_body(__global float *y, int y_off,
                                    __global const float *bias, int b_off,
                                    int channels, int spatial, int planes,
                                    int relu, int per, ROUND16_PARAMS,
                                    int round16) {
  int parts = (spatial + per - 1) / per;
  int i = get_global_id(0);
  if (i >= planes * parts) return;
  int part = i % parts, u = i / parts;
  int s0 = part * per, n = min(spatial, s0 + per) - s0;
  float b = bias[b_off + u % channels];
  __global float *plane = y + y_off + u * spatial + s0;
  if (relu) {
    for (int s = 0; s < n; s++) {
      float v = plane[s] + b;
      plane[s] = v > 0.0f ? v : 0.0f;
    }
  } else {
    for (int s = 0; s < n; s++) plane[s] += b;
  }
  ROUND16_RUN(plane, n, u * spatial + s0);
}
ROUND16_VARIANTS(bias_add_channels, (__global float *y, int y_off,
                  __global const float *bias, int b_off, int channels,
                  int spatial, int planes, int relu, int per, ROUND16_PARAMS),
                 (y, y_off, bias, b_off, channels, spatial, planes, relu, per,
                  ROUND16_ARGS))

#if !CLT_ROUND16_PROGRAM
/* Copies x [N, Cx, S] into channels [c_off, c_off + Cx) of y [N, Cy, S]
 * (concatenation); with `backward` the other way round, y's slice into x
 * (adding when accumulating). */
__kernel void channel_slice_copy(__global float *y, int y_off,
                                 __global float *x, int x_off, int N, int Cy,
                                 int Cx, int c_off, int S, int backward,
                                 int accumulate) {
  int i = get_global_id(0);
  if (i >= N * Cx * S) return;
  int s = i % S, c = (i / S) % Cx, n = i / (S * Cx);
  int j = (n * Cy + c_off + c) * S + s;
  if (!backward)
    y[y_off + j] = x[x_off + i];
  else
    x[x_off + i] = accumulate ? x[x_off + i] + y[y_off + j] : y[y_off + j];
}
#endif
