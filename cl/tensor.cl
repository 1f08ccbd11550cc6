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
