/* Element-wise ops and bias addition (cl/elementwise.cl). */
#include "ops/ops.h"

clt_status clt_add_forward(clt_context *ctx, clt_tensor *out,
                           const clt_tensor *a, const clt_tensor *b, int64_t n,
                           bool accumulate, const clt_round16 *round) {
  return CLT_RUN_ELEMS(ctx, KR_ID(CLT_K_add_f32, round), (size_t)n, KT(out),
                       KT(a), KT(b), KI(n), KI(accumulate), KR(round, out));
}

clt_status clt_add_relu_forward(clt_context *ctx, clt_tensor *out,
                                const clt_tensor *a, const clt_tensor *b,
                                int64_t n, const clt_round16 *round) {
  return CLT_RUN_ELEMS(ctx, KR_ID(CLT_K_add_relu_f32, round), (size_t)n,
                       KT(out), KT(a), KT(b), KI(n), KR(round, out));
}

clt_status clt_unit_u8(clt_context *ctx, clt_tensor *y, const clt_tensor *x,
                       int64_t n) {
  if (y->dtype != CLT_F32 || x->dtype != CLT_U8 || x->numel < n ||
      y->numel < n)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "bytes to [0, 1]: %lld bytes (u8) into f32",
                        (long long)n);
  return CLT_RUN_1D(ctx, CLT_K_unit_u8_f32, (size_t)((n + 7) / 8), KT(y), KT(x),
                    KI(n));
}

clt_status clt_scale_forward(clt_context *ctx, clt_tensor *out,
                             const clt_tensor *x, int64_t n, float alpha,
                             bool accumulate, const clt_round16 *round) {
  return CLT_RUN_ELEMS(ctx, KR_ID(CLT_K_scale_f32, round), (size_t)n, KT(out),
                       KT(x), KI(n), KF(alpha), KI(accumulate), KR(round, out));
}

clt_status clt_round_f16(clt_context *ctx, clt_tensor *y, const clt_tensor *x,
                         int64_t n) {
  return CLT_RUN_ELEMS(ctx, CLT_K_round_f16, (size_t)n, KT(y), KT(x), KI(n));
}

clt_status clt_round_save_f16(clt_context *ctx, clt_tensor *x, clt_tensor *y,
                              int64_t n) {
  return CLT_RUN_ELEMS(ctx, CLT_K_round_save_f16, (size_t)n, KT(x), KT(y),
                       KI(n));
}

clt_status clt_bias_rows_forward(clt_context *ctx, clt_tensor *y,
                                 const clt_tensor *bias, int64_t rows,
                                 int64_t cols, bool relu,
                                 const clt_round16 *round) {
  return CLT_RUN_1D(ctx, KR_ID(CLT_K_bias_add_rows, round),
                    (size_t)(rows * cols), KT(y), KT(bias), KI(rows),
                    KI(cols), KI(relu), KR(round, y));
}

clt_status clt_normalize_forward(clt_context *ctx, clt_tensor *y,
                                 const clt_tensor *x, const clt_tensor *mean,
                                 const clt_tensor *var, int64_t n,
                                 int64_t channels, int64_t spatial,
                                 const clt_round16 *round) {
  return CLT_RUN_1D(ctx, KR_ID(CLT_K_normalize_forward, round), (size_t)n,
                    KT(y), KT(x), KT(mean), KT(var), KI(n), KI(channels),
                    KI(spatial), KR(round, y));
}

clt_status clt_bias_channels_forward(clt_context *ctx, clt_tensor *y,
                                     const clt_tensor *bias, int64_t batch,
                                     int64_t channels, int64_t spatial,
                                     bool relu, const clt_round16 *round) {
  int64_t planes = batch * channels;
  int64_t per = clt_loop_per(ctx, spatial, clt_loop_cost_twice, NULL);
  return CLT_RUN_1D(ctx, KR_ID(CLT_K_bias_add_channels, round),
                    (size_t)(planes * clt_loop_parts(spatial, per)), KT(y),
                    KT(bias), KI(channels), KI(spatial), KI(planes), KI(relu),
                    KI(per), KR(round, y));
}

clt_status clt_channel_slice(clt_context *ctx, clt_tensor *y, clt_tensor *x,
                             int64_t N, int64_t Cy, int64_t Cx, int64_t c_off,
                             int64_t S, bool backward, bool accumulate) {
  return CLT_RUN_1D(ctx, CLT_K_channel_slice_copy, (size_t)(N * Cx * S), KT(y),
                    KT(x), KI(N), KI(Cy), KI(Cx), KI(c_off), KI(S),
                    KI(backward), KI(accumulate));
}
