/* Tensor fills and copies. Every buffer argument is followed by the
 * element offset of the tensor inside it (views share buffers). */

__kernel void fill_f32(__global float *x, int x_off, int n, float value) {
  int i = get_global_id(0);
  if (i < n) x[x_off + i] = value;
}

__kernel void fill_i32(__global int *x, int x_off, int n, int value) {
  int i = get_global_id(0);
  if (i < n) x[x_off + i] = value;
}

__kernel void fill_u8(__global uchar *x, int x_off, int n, int value) {
  int i = get_global_id(0);
  if (i < n) x[x_off + i] = (uchar)value;
}

/* y[i] = table[x[i]]: pixel bytes to the floats a host would have made
 * (the table comes from the host, so every device gives the same bits). */
__kernel void lookup_u8_f32(__global float *y, int y_off,
                            __global const uchar *x, int x_off,
                            __global const float *table, int table_off,
                            int n) {
  int i = get_global_id(0);
  if (i < n) y[y_off + i] = table[table_off + x[x_off + i]];
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
