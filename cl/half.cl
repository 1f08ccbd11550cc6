/* fp16 storage on every OpenCL 1.2 device: vload_half and vstore_half are
 * core functions, so half buffers need no cl_khr_fp16 (arithmetic stays
 * in float). Stores round to nearest even, as IEEE 754 and the host's
 * clt_f32_to_f16 do; overflow gives infinity, NaN stays NaN. */

__kernel void fill_f16(__global half *x, int x_off, int n, float value) {
  int i = get_global_id(0);
  if (i < n) vstore_half_rte(value, x_off + i, x);
}

__kernel void f32_to_f16(__global half *y, int y_off,
                         __global const float *x, int x_off, int n) {
  int i = get_global_id(0);
  if (i < n) vstore_half_rte(x[x_off + i], y_off + i, y);
}

__kernel void f16_to_f32(__global float *y, int y_off,
                         __global const half *x, int x_off, int n) {
  int i = get_global_id(0);
  if (i < n) y[y_off + i] = vload_half(x_off + i, x);
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

/* Mixed precision's fp16 values kept in fp32 buffers (graph.c): x rounded
 * to the nearest half, ties to even, as vstore_half_rte then vload_half
 * would give, with no half buffer (a private half is not OpenCL C 1.2
 * without cl_khr_fp16). In the halves' normal range, the float's mantissa
 * keeps its top 10 bits, rounded to nearest even on the 13 dropped (a carry
 * moves into the exponent, as it should); below 2^-14 the halves are
 * multiples of 2^-24, and scaling by a power of two is exact; from 65520
 * on, a half overflows to infinity. Integer steps: libm's ilogb and ldexp
 * cost a CPU device a quarter of a mixed-precision step. */
static float round_to_half(float v) {
  uint u = as_uint(v), a = u & 0x7fffffffu, sign = u & 0x80000000u;
  if (a >= 0x7f800000u) return v; /* infinity, NaN */
  if (a >= 0x477ff000u) return as_float(sign | 0x7f800000u);
  if (a >= 0x38800000u) {
    a += 0xfffu + ((a >> 13) & 1u);
    return as_float(sign | (a & ~0x1fffu));
  }
  return rint(v * 0x1p24f) * 0x1p-24f;
}

__kernel void round_f16(__global float *y, int y_off,
                        __global const float *x, int x_off, int n) {
  int i = get_global_id(0);
  if (i < n) y[y_off + i] = round_to_half(x[x_off + i]);
}

/* The bits of r as a half, r being one already (round_to_half's result):
 * integer steps too (vstore_half_rte is slow on CPU devices). */
static ushort half_bits(float r) {
  uint u = as_uint(r), a = u & 0x7fffffffu, sign = (u >> 16) & 0x8000u;
  if (a > 0x7f800000u) return (ushort)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a == 0x7f800000u) return (ushort)(sign | 0x7c00u);
  if (a >= 0x38800000u) return (ushort)(sign | ((a - 0x38000000u) >> 13));
  return (ushort)(sign | (uint)(as_float(a) * 0x1p24f));
}

/* The same rounding of an output in place, saving it in fp16 too (the
 * copy that mixed precision keeps for the backward pass; y is an f16
 * tensor, written as its bits). */
__kernel void round_save_f16(__global float *x, int x_off,
                             __global ushort *y, int y_off, int n) {
  int i = get_global_id(0);
  if (i >= n) return;
  float r = round_to_half(x[x_off + i]);
  y[y_off + i] = half_bits(r);
  x[x_off + i] = r;
}
