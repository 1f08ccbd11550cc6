/* fp16 storage on every OpenCL 1.2 device: vload_half and vstore_half are
 * core functions, so half buffers need no cl_khr_fp16 (arithmetic stays
 * in float). Stores round to nearest even, as IEEE 754 and the host's
 * clt_f32_to_f16 do; overflow gives infinity, NaN stays NaN. */

__kernel void fill_f16(__global half *x, int x_off, int n, float value) {
  int i = get_global_id(0);
  if (i < n) vstore_half_rte(value, x_off + i, x);
}

__kernel void f32_to_f16(__global half *y, int y_off,
                         __global const float *x, int x_off, int n,
                         int run) {
  FOR_RUN(i, n) vstore_half_rte(x[x_off + i], y_off + i, y);
}

/* x's halves read as their bits: half_value (cl/prelude.cl) is
 * vload_half's value, faster on CPU devices. */
__kernel void f16_to_f32(__global float *y, int y_off,
                         __global const ushort *x, int x_off, int n,
                         int run) {
  FOR_RUN(i, n) y[y_off + i] = half_value(x[x_off + i]);
}

/* Dynamic loss scaling: g *= inv_scale, and found[0] = 1 when any
 * gradient is infinite or NaN (then the step is skipped; the gradients
 * are thrown away, so scaling them anyway does no harm). */
__kernel void unscale_check_f32(__global float *g, int g_off, int n,
                                float inv_scale, __global int *found,
                                int found_off) {
  int i = get_global_id(0);
  if (i >= n) return;
  float v = g[g_off + i];
  if (!isfinite(v)) atomic_max(found + found_off, 1);
  g[g_off + i] = v * inv_scale;
}

/* round_to_half and half_bits: cl/prelude.cl (the layers' kernels round
 * what they write with them too). */
__kernel void round_f16(__global float *y, int y_off,
                        __global const float *x, int x_off, int n,
                        int run) {
  FOR_RUN(i, n) y[y_off + i] = round_to_half(x[x_off + i]);
}

/* The same rounding of an output in place, saving it in fp16 too (the
 * copy that mixed precision keeps for the backward pass; y is an f16
 * tensor, written as its bits). */
__kernel void round_save_f16(__global float *x, int x_off,
                             __global ushort *y, int y_off, int n,
                             int run) {
  FOR_RUN(i, n) {
    float r = round_to_half(x[x_off + i]);
    y[y_off + i] = half_bits(r);
    x[x_off + i] = r;
  }
}
