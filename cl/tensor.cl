/* Tensor fills and copies. Every buffer argument is followed by the
 * element offset of the tensor inside it (views share buffers). */

__kernel void fill_f32(__global float *x, int x_off, int n, float value,
                       int run) {
  FOR_RUN(i, n) x[x_off + i] = value;
}

__kernel void fill_i32(__global int *x, int x_off, int n, int value) {
  int i = get_global_id(0);
  if (i < n) x[x_off + i] = value;
}

__kernel void fill_u8(__global uchar *x, int x_off, int n, int value) {
  int i = get_global_id(0);
  if (i < n) x[x_off + i] = (uchar)value;
}

/* y[i] = x[i] / 255 as IEEE division rounds it (the host's (float)v /
 * 255.0f: pixel bytes to the floats the loader would have made), without
 * a division or a table: the product by 1/255 rounded (0x1.010102p-8),
 * then one FMA correction of its residual, exact for each of the 256
 * bytes (OpenCL rounds products and fma() correctly; test_ops checks all
 * 256 on every device). 0 is made +0 by hand: llvmpipe's fma gave -0
 * there. Eight bytes a work-item (a gather through a table
 * ran 2.5-4.5x slower on POCL); the last item takes the rest one by one. */
__kernel void unit_u8_f32(__global float *y, int y_off,
                          __global const uchar *x, int x_off, int n) {
  int i = get_global_id(0) * 8;
  if (i >= n) return;
  const float c = 0x1.010102p-8f;
  if (i + 8 <= n) {
    float8 v = convert_float8(vload8(0, x + x_off + i));
    float8 q = v * c;
    float8 r = fma(fma(-q, (float8)255.0f, v), (float8)c, q);
    vstore8(v > 0.0f ? r : (float8)0.0f, 0, y + y_off + i);
    return;
  }
  for (; i < n; i++) {
    float v = (float)x[x_off + i];
    float q = v * c;
    float r = fma(fma(-q, 255.0f, v), c, q);
    y[y_off + i] = v > 0.0f ? r : 0.0f;
  }
}

/* How many loop iterations one work-item may run here: n where the
 * device runs them all, fewer where it ends a work-item's loops early
 * without an error (Mesa's llvmpipe: 65,535 in all). The sequence keeps
 * a compiler from replacing the loop by its count. One work-item. */
__kernel void loop_probe(__global uint *out, int out_off, int n) {
  uint x = 1u, count = 0u;
  for (int i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    count++;
  }
  out[out_off] = count;
  out[out_off + 1] = x;
}
