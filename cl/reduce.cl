/* Reductions. The kernels using group_sum (cl/prelude.cl) run in groups of
 * GROUP_ITEMS items, as many as the work has (ops.h clt_group_items). */

/* out[c] (+)= sum over o < outer, s < inner of x[(o * channels + c) * inner
 * + s]: bias gradients of conv layers (inner H*W; dense layers, inner 1,
 * use sum_columns). One group per channel. */
__kernel void sum_channels(__global float *out, int out_off,
                           __global const float *x, int x_off, int outer,
                           int channels, int inner, int accumulate) {
  __local float scratch[CLT_WG];
  int c = get_group_id(0);
  int lid = get_local_id(0);
  /* No division per element: the planes one by one, each work-item adding
   * runs of 16 (vload16: one vector on a CPU device, which a loop of
   * scalars with a stride of the group is not, 4x faster on POCL;
   * neighbours still read neighbouring memory on a GPU), then the tail. */
  float16 s16 = 0.0f;
  float s = 0.0f;
  int body = inner / 16 * 16;
  for (int o = 0; o < outer; o++) {
    __global const float *plane = x + x_off + (o * channels + c) * inner;
    for (int i = lid * 16; i < body; i += GROUP_ITEMS * 16)
      s16 += vload16(0, plane + i);
    for (int i = body + lid; i < inner; i += GROUP_ITEMS) s += plane[i];
  }
  float total = group_sum(scratch, s + sum16(s16));
  if (lid == 0)
    out[out_off + c] = accumulate ? out[out_off + c] + total : total;
}

/* out[c] (+)= sum over r of x[r, c] for x [rows, cols]: dense bias
 * gradients. One work-item per column; rows are few (the batch). */
__kernel void sum_columns(__global float *out, int out_off,
                          __global const float *x, int x_off, int rows,
                          int cols, int accumulate) {
  int c = get_global_id(0);
  if (c >= cols) return;
  float s = 0.0f;
  for (int r = 0; r < rows; r++) s += x[x_off + r * cols + c];
  out[out_off + c] = accumulate ? out[out_off + c] + s : s;
}

/* sum_columns through a fused ReLU: x[r, c] becomes its gradient through
 * the ReLU whose output is y (in place, as activation_backward_relu),
 * and out[c] (+)= the column's sum of it, in sum_columns' order: a dense
 * layer's ReLU and bias gradients in one pass (and one launch). */
__kernel void sum_columns_relu(__global float *out, int out_off,
                               __global float *x, int x_off,
                               __global const float *y, int y_off, int rows,
                               int cols, int accumulate) {
  int c = get_global_id(0);
  if (c >= cols) return;
  float s = 0.0f;
  for (int r = 0; r < rows; r++) {
    int i = r * cols + c;
    float g = x[x_off + i] * (y[y_off + i] > 0.0f ? 1.0f : 0.0f);
    x[x_off + i] = g;
    s += g;
  }
  out[out_off + c] = accumulate ? out[out_off + c] + s : s;
}

/* sum(x[0..n)) over one group: each item its stride of GROUP_ITEMS, then
 * the group's tree (the total to every item). */
static float group_total(__local float *scratch, __global const float *x,
                         int n) {
  float s = 0.0f;
  for (int j = get_local_id(0); j < n; j += GROUP_ITEMS) s += x[j];
  return group_sum(scratch, s);
}

/* acc[index] += scale * sum(x[0..n)), one group. */
__kernel void sum_into(__global float *acc, int acc_off,
                       __global const float *x, int x_off, int n, int index,
                       float scale) {
  __local float scratch[CLT_WG];
  float total = group_total(scratch, x + x_off, n);
  if (get_local_id(0) == 0) acc[acc_off + index] += scale * total;
}

/* Two of those in one launch, a group each: group 0 adds s0 * sum(x0[0..n))
 * into acc[i0], group 1 s1 * sum(x1[0..n)) into acc[i1] (i0 != i1), each
 * in sum_into's order, so with its bits. A batch's loss and correct count
 * at the price of one launch: on POCL every launch costs 6-13 us, 2% of
 * the MLP's step at batch 32. */
__kernel void sum2_into(__global float *acc, int acc_off,
                        __global const float *x0, int x0_off,
                        __global const float *x1, int x1_off, int n, int i0,
                        int i1, float s0, float s1) {
  __local float scratch[CLT_WG];
  int second = get_group_id(0) == 1;
  float total = group_total(scratch, second ? x1 + x1_off : x0 + x0_off, n);
  if (get_local_id(0) == 0)
    acc[acc_off + (second ? i1 : i0)] += (second ? s1 : s0) * total;
}

/* acc[index] += sum(x[0..n)^2), one group: the global gradient norm. */
__kernel void sumsq_into(__global float *acc, int acc_off,
                         __global const float *x, int x_off, int n,
                         int index) {
  __local float scratch[CLT_WG];
  int lid = get_local_id(0);
  float s = 0.0f;
  for (int j = lid; j < n; j += GROUP_ITEMS) {
    float v = x[x_off + j];
    s += v * v;
  }
  float total = group_sum(scratch, s);
  if (lid == 0) acc[acc_off + index] += total;
}

/* out[i] = alpha * sum over s < slices of ws[s * n + i] (+ beta * out[i]):
 * the partial products of a split-K GEMM added up, slices in order so that
 * every run gives the same bits. One work-item per element. */
__kernel void sum_slices(__global float *out, int out_off,
                         __global const float *ws, int ws_off, int n,
                         int slices, float alpha, float beta) {
  int i = get_global_id(0);
  if (i >= n) return;
  float s = 0.0f;
  for (int k = 0; k < slices; k++) s += ws[ws_off + k * n + i];
  s *= alpha;
  out[out_off + i] = beta != 0.0f ? s + beta * out[out_off + i] : s;
}
