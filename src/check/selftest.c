/* The cases `cltrain selftest` runs: every op on small random inputs. The
 * checks themselves are in the files beside this one, one per kernel
 * family. */
#include "check/check.h"

static clt_status st_half(clt_context *ctx, double *e) {
  return clt_check_half_round_trip(ctx, 1001, e);
}
static clt_status st_round_half(clt_context *ctx, double *e) {
  return clt_check_half_round_in_place(ctx, 1001, e);
}
static clt_status st_unscale(clt_context *ctx, double *e) {
  return clt_check_loss_scaler_unscale(ctx, 1001, e);
}
static clt_status st_fill(clt_context *ctx, double *e) {
  return clt_check_fill(ctx, 1000, e);
}
static clt_status st_unit_u8(clt_context *ctx, double *e) {
  return clt_check_unit_u8(ctx, 1001, e);
}
static clt_status st_copy_view(clt_context *ctx, double *e) {
  return clt_check_copy_view(ctx, 1001, e);
}
static clt_status st_gemm_nn(clt_context *ctx, double *e) {
  return clt_check_gemm(ctx, CLT_NO_TRANS, CLT_NO_TRANS, 33, 17, 65, 1.0f,
                        0.0f, 1, e);
}
static clt_status st_gemm_tn(clt_context *ctx, double *e) {
  return clt_check_gemm(ctx, CLT_TRANS, CLT_NO_TRANS, 31, 7, 19, 0.5f, 1.0f, 1,
                        e);
}
static clt_status st_gemm_nt(clt_context *ctx, double *e) {
  return clt_check_gemm(ctx, CLT_NO_TRANS, CLT_TRANS, 64, 10, 127, 1.0f, 0.0f,
                        1, e);
}
static clt_status st_gemm_tt(clt_context *ctx, double *e) {
  return clt_check_gemm(ctx, CLT_TRANS, CLT_TRANS, 3, 33, 7, -1.0f, 0.5f, 1, e);
}
static clt_status st_gemm_batched(clt_context *ctx, double *e) {
  return clt_check_gemm(ctx, CLT_NO_TRANS, CLT_TRANS, 9, 13, 27, 1.0f, 0.0f, 5,
                        e);
}
/* The column-major form (the measured plans' second): NN and a strided
 * batch of TN with beta. */
static clt_status st_gemm_ct_nn(clt_context *ctx, double *e) {
  return clt_check_gemm_form(ctx, true, CLT_NO_TRANS, CLT_NO_TRANS, 33, 17, 65,
                             1.0f, 0.0f, 1, e);
}
static clt_status st_gemm_ct_batched(clt_context *ctx, double *e) {
  return clt_check_gemm_form(ctx, true, CLT_TRANS, CLT_NO_TRANS, 9, 13, 27,
                             0.5f, 1.0f, 5, e);
}
/* Our own fp32 kernels (the plans' candidates): a strided batch of TN
 * by rows with beta, a strip moved back to end at n; NT by dot products
 * with a masked tail of k. */
static clt_status st_blocked_rows(clt_context *ctx, double *e) {
  return clt_check_gemm_blocked(ctx, 0, CLT_TRANS, CLT_NO_TRANS, 5, 45, 17,
                                0.5f, 0.25f, 3, e);
}
static clt_status st_blocked_dot(clt_context *ctx, double *e) {
  return clt_check_gemm_blocked(ctx, 3, CLT_NO_TRANS, CLT_TRANS, 9, 13, 37,
                                1.0f, 0.5f, 1, e);
}
/* ... adding a dense layer's bias and ReLU in its launch */
static clt_status st_blocked_dot_bias(clt_context *ctx, double *e) {
  return clt_check_gemm_blocked_bias(ctx, 3, 9, 13, 37, 1.0f, true, e);
}
/* The fp16 route's kernel, each tile configuration, on the shapes of a
 * conv's three products (NN, NT, TN). */
static clt_status st_mma_0(clt_context *ctx, double *e) {
  return clt_check_gemm_mma(ctx, 0, CLT_NO_TRANS, CLT_NO_TRANS, 33, 17, 65,
                            1.0f, 0.0f, 1, e);
}
static clt_status st_mma_1(clt_context *ctx, double *e) {
  return clt_check_gemm_mma(ctx, 1, CLT_NO_TRANS, CLT_TRANS, 150, 70, 129,
                            1.0f, 0.0f, 3, e);
}
static clt_status st_mma_2(clt_context *ctx, double *e) {
  return clt_check_gemm_mma(ctx, 2, CLT_TRANS, CLT_NO_TRANS, 131, 260, 47,
                            0.5f, 1.0f, 1, e);
}
/* The ring configurations: packed operands, every transpose path of the
 * packing, a batch, beta. */
static clt_status st_mma_3(clt_context *ctx, double *e) {
  return clt_check_gemm_mma(ctx, 3, CLT_NO_TRANS, CLT_NO_TRANS, 33, 17, 65,
                            1.0f, 0.0f, 1, e);
}
static clt_status st_mma_4(clt_context *ctx, double *e) {
  return clt_check_gemm_mma(ctx, 4, CLT_NO_TRANS, CLT_TRANS, 150, 70, 129,
                            1.0f, 0.0f, 3, e);
}
static clt_status st_mma_5(clt_context *ctx, double *e) {
  return clt_check_gemm_mma(ctx, 5, CLT_TRANS, CLT_NO_TRANS, 131, 260, 47,
                            0.5f, 1.0f, 1, e);
}
static clt_status st_mma_6(clt_context *ctx, double *e) {
  return clt_check_gemm_mma(ctx, 6, CLT_TRANS, CLT_TRANS, 70, 150, 129,
                            1.0f, 0.0f, 2, e);
}
static clt_status st_mma_7(clt_context *ctx, double *e) {
  return clt_check_gemm_mma(ctx, 7, CLT_NO_TRANS, CLT_NO_TRANS, 131, 260, 47,
                            1.0f, 0.0f, 1, e);
}
static clt_status st_mma_8(clt_context *ctx, double *e) {
  return clt_check_gemm_mma(ctx, 8, CLT_NO_TRANS, CLT_TRANS, 150, 300, 129,
                            0.5f, 1.0f, 2, e);
}
/* The warpgroup (wgmma) configurations: the same paths, sizes that cut
 * their 64-row slices, their instructions' columns and k-blocks of 16. */
static clt_status st_mma_9(clt_context *ctx, double *e) {
  return clt_check_gemm_mma(ctx, 9, CLT_NO_TRANS, CLT_NO_TRANS, 33, 17, 65,
                            1.0f, 0.0f, 1, e);
}
static clt_status st_mma_10(clt_context *ctx, double *e) {
  return clt_check_gemm_mma(ctx, 10, CLT_NO_TRANS, CLT_TRANS, 150, 70, 129,
                            1.0f, 0.0f, 3, e);
}
static clt_status st_mma_11(clt_context *ctx, double *e) {
  return clt_check_gemm_mma(ctx, 11, CLT_TRANS, CLT_NO_TRANS, 131, 260, 47,
                            0.5f, 1.0f, 1, e);
}
static clt_status st_mma_12(clt_context *ctx, double *e) {
  return clt_check_gemm_mma(ctx, 12, CLT_TRANS, CLT_TRANS, 70, 150, 129,
                            1.0f, 0.0f, 2, e);
}
static clt_status st_mma_13(clt_context *ctx, double *e) {
  return clt_check_gemm_mma(ctx, 13, CLT_NO_TRANS, CLT_NO_TRANS, 131, 260, 47,
                            1.0f, 0.0f, 1, e);
}
static clt_status st_mma_14(clt_context *ctx, double *e) {
  return clt_check_gemm_mma(ctx, 14, CLT_TRANS, CLT_NO_TRANS, 150, 300, 129,
                            1.0f, 0.0f, 1, e);
}
static clt_status st_mma_15(clt_context *ctx, double *e) {
  return clt_check_gemm_mma(ctx, 15, CLT_NO_TRANS, CLT_TRANS, 150, 300, 129,
                            0.5f, 1.0f, 2, e);
}
static clt_status st_mma_16(clt_context *ctx, double *e) {
  return clt_check_gemm_mma(ctx, 16, CLT_TRANS, CLT_TRANS, 70, 150, 129,
                            1.0f, 0.0f, 2, e);
}
/* 3xTF32 (fp32 products on the same tensor cores, as accurate as f32):
 * each configuration on f32 values, every transpose, batches, beta. */
static clt_status st_x3_0(clt_context *ctx, double *e) {
  return clt_check_gemm_tf32x3(ctx, 0, CLT_NO_TRANS, CLT_NO_TRANS, 131, 260,
                               47, 1.0f, 0.0f, 1, e);
}
static clt_status st_x3_1(clt_context *ctx, double *e) {
  return clt_check_gemm_tf32x3(ctx, 1, CLT_NO_TRANS, CLT_TRANS, 150, 70, 129,
                               1.0f, 0.0f, 3, e);
}
static clt_status st_x3_2(clt_context *ctx, double *e) {
  return clt_check_gemm_tf32x3(ctx, 2, CLT_TRANS, CLT_NO_TRANS, 131, 260, 47,
                               0.5f, 1.0f, 1, e);
}
static clt_status st_x3_3(clt_context *ctx, double *e) {
  return clt_check_gemm_tf32x3(ctx, 3, CLT_TRANS, CLT_TRANS, 70, 150, 129,
                               1.0f, 0.0f, 2, e);
}
static clt_status st_x3_4(clt_context *ctx, double *e) {
  return clt_check_gemm_tf32x3(ctx, 4, CLT_NO_TRANS, CLT_TRANS, 150, 300, 129,
                               1.0f, 1.0f, 2, e);
}
static clt_status st_x3_5(clt_context *ctx, double *e) {
  return clt_check_gemm_tf32x3(ctx, 5, CLT_NO_TRANS, CLT_NO_TRANS, 33, 17, 65,
                               1.0f, 0.0f, 1, e);
}

static clt_status st_add(clt_context *ctx, double *e) {
  return clt_check_add(ctx, 1001, false, 0, e);
}
static clt_status st_add_acc(clt_context *ctx, double *e) {
  return clt_check_add(ctx, 257, true, 1, e);
}
static clt_status st_add_relu(clt_context *ctx, double *e) {
  return clt_check_add_relu(ctx, 1001, 2, e);
}
static clt_status st_scale(clt_context *ctx, double *e) {
  return clt_check_scale(ctx, 1001, -0.75f, false, 0, e);
}
static clt_status st_scale_acc(clt_context *ctx, double *e) {
  return clt_check_scale(ctx, 257, 2.5f, true, 0, e);
}
static clt_status st_bias_rows(clt_context *ctx, double *e) {
  return clt_check_bias_rows(ctx, 7, 33, false, 0, e);
}
static clt_status st_bias_channels(clt_context *ctx, double *e) {
  return clt_check_bias_channels(ctx, 3, 5, 17, false, 0, e);
}
static clt_status st_normalize(clt_context *ctx, double *e) {
  return clt_check_normalize(ctx, 3, 5, 17, 0, e);
}
static clt_status st_bias_rows_relu(clt_context *ctx, double *e) {
  return clt_check_bias_rows(ctx, 7, 33, true, 1, e);
}
static clt_status st_bias_channels_relu(clt_context *ctx, double *e) {
  return clt_check_bias_channels(ctx, 3, 5, 17, true, 2, e);
}

/* Forward and backward of each activation, 1000 elements. The entries
 * named "fp16-rounded" or "fp16-saved" also run the op asking it to round
 * what it writes (and to save it in fp16: mixed precision's rounding in
 * the kernels, check_run_rounded). */
#define ACT_CASES(tag, kind, alpha)                                            \
  static clt_status st_##tag##_fwd(clt_context *ctx, double *e) {              \
    return clt_check_activation_forward(ctx, kind, 1000, alpha, 2, e);         \
  }                                                                            \
  static clt_status st_##tag##_bwd(clt_context *ctx, double *e) {              \
    return clt_check_activation_backward(ctx, kind, 1000, alpha, true, 1, e);  \
  }
ACT_CASES(relu, CLT_ACT_RELU, 0.0f)
ACT_CASES(leaky, CLT_ACT_LEAKY_RELU, 0.01f)
ACT_CASES(sigmoid, CLT_ACT_SIGMOID, 0.0f)
ACT_CASES(tanh, CLT_ACT_TANH, 0.0f)
ACT_CASES(gelu, CLT_ACT_GELU, 0.0f)
ACT_CASES(silu, CLT_ACT_SILU, 0.0f)
ACT_CASES(elu, CLT_ACT_ELU, 1.0f)
ACT_CASES(softplus, CLT_ACT_SOFTPLUS, 0.0f)
#undef ACT_CASES

static clt_status st_softmax_fwd(clt_context *ctx, double *e) {
  return clt_check_softmax_forward(ctx, 7, 10, e);
}
static clt_status st_softmax_bwd(clt_context *ctx, double *e) {
  return clt_check_softmax_backward(ctx, 7, 10, false, e);
}
static clt_status st_xent(clt_context *ctx, double *e) {
  return clt_check_softmax_xent(ctx, 33, 10, 5.0f, 0.0f, false, e);
}
static clt_status st_xent_large(clt_context *ctx, double *e) {
  return clt_check_softmax_xent(ctx, 33, 10, 1e4f, 0.0f, false, e);
}
static clt_status st_xent_smoothed(clt_context *ctx, double *e) {
  return clt_check_softmax_xent(ctx, 33, 10, 1e4f, 0.1f, false, e);
}
static clt_status st_xent_weighted(clt_context *ctx, double *e) {
  return clt_check_softmax_xent(ctx, 33, 10, 5.0f, 0.1f, true, e);
}
static clt_status st_mse(clt_context *ctx, double *e) {
  return clt_check_regression_loss(ctx, CLT_REGRESSION_MSE, 0.0f, 7, 10, e);
}
static clt_status st_sigmoid_xent(clt_context *ctx, double *e) {
  return clt_check_sigmoid_xent(ctx, 33, 10, 30.0f, e);
}
static clt_status st_mae(clt_context *ctx, double *e) {
  return clt_check_regression_loss(ctx, CLT_REGRESSION_MAE, 0.0f, 7, 10, e);
}
static clt_status st_huber(clt_context *ctx, double *e) {
  return clt_check_regression_loss(ctx, CLT_REGRESSION_HUBER, 0.5f, 7, 10, e);
}
static clt_status st_sum_channels_dense(clt_context *ctx, double *e) {
  return clt_check_sum_channels(ctx, 33, 10, 1, false, e);
}
static clt_status st_sum_channels_conv(clt_context *ctx, double *e) {
  return clt_check_sum_channels(ctx, 3, 5, 49, true, e);
}
static clt_status st_sum_columns_relu(clt_context *ctx, double *e) {
  return clt_check_sum_columns_relu(ctx, 33, 10, e);
}
static clt_status st_sum_into(clt_context *ctx, double *e) {
  return clt_check_sum_into(ctx, 1000, 2, 0.5f, e);
}
static clt_status st_sum2_into(clt_context *ctx, double *e) {
  return clt_check_sum2_into(ctx, 777, 0, 0.5f, 1, 1.0f, e);
}
static clt_status st_sumsq_into(clt_context *ctx, double *e) {
  return clt_check_sumsq_into(ctx, 1000, 4, e);
}

static clt_status st_sgd_plain(clt_context *ctx, double *e) {
  clt_sgd_params hp = {.lr = 0.1f};
  return clt_check_sgd_step(ctx, 100, &hp, 3, e);
}
static clt_status st_sgd_momentum(clt_context *ctx, double *e) {
  clt_sgd_params hp = {.lr = 0.1f, .momentum = 0.9f, .dampening = 0.1f};
  return clt_check_sgd_step(ctx, 100, &hp, 3, e);
}
static clt_status st_sgd_nesterov(clt_context *ctx, double *e) {
  clt_sgd_params hp = {
      .lr = 0.05f, .momentum = 0.9f, .weight_decay = 0.01f, .nesterov = true};
  return clt_check_sgd_step(ctx, 100, &hp, 3, e);
}
static clt_status st_sgd_clip(clt_context *ctx, double *e) {
  clt_sgd_params hp = {.lr = 0.1f, .momentum = 0.5f, .max_norm = 0.5f};
  return clt_check_sgd_step(ctx, 100, &hp, 3, e);
}
static clt_status st_adam_step1(clt_context *ctx, double *e) {
  clt_adam_params hp = {
      .lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
  return clt_check_adam_step(ctx, 100, &hp, 1, e);
}
static clt_status st_adam_step3(clt_context *ctx, double *e) {
  clt_adam_params hp = {.lr = 0.01f,
                        .beta1 = 0.9f,
                        .beta2 = 0.999f,
                        .eps = 1e-8f,
                        .weight_decay = 0.1f};
  return clt_check_adam_step(ctx, 100, &hp, 3, e);
}
static clt_status st_adamw_clip(clt_context *ctx, double *e) {
  clt_adam_params hp = {.lr = 0.01f,
                        .beta1 = 0.9f,
                        .beta2 = 0.999f,
                        .eps = 1e-8f,
                        .weight_decay = 0.1f,
                        .decoupled = true,
                        .max_norm = 0.5f};
  return clt_check_adam_step(ctx, 100, &hp, 3, e);
}

static clt_status st_rmsprop(clt_context *ctx, double *e) {
  clt_rmsprop_params hp = {.lr = 0.01f, .alpha = 0.99f, .eps = 1e-8f};
  return clt_check_rmsprop_step(ctx, 100, &hp, 3, e);
}
static clt_status st_rmsprop_centered(clt_context *ctx, double *e) {
  clt_rmsprop_params hp = {.lr = 0.01f,
                           .alpha = 0.9f,
                           .eps = 1e-8f,
                           .weight_decay = 0.1f,
                           .momentum = 0.9f,
                           .centered = true,
                           .max_norm = 0.5f};
  return clt_check_rmsprop_step(ctx, 100, &hp, 3, e);
}

/* A window with the same size, stride, padding and dilation along both
 * axes (the checks derive OH and OW). */
static clt_window square(int64_t C, int64_t H, int64_t W, int64_t k,
                         int64_t stride, int64_t pad, int64_t dil) {
  return (clt_window){.C = C, .H = H, .W = W, .KH = k, .KW = k,
                      .pad_h = pad, .pad_w = pad, .stride_h = stride,
                      .stride_w = stride, .dil_h = dil, .dil_w = dil};
}

static clt_status st_im2col(clt_context *ctx, double *e) {
  clt_window w = square(3, 9, 7, 3, 2, 1, 1);
  return clt_check_im2col(ctx, 2, &w, e);
}
static clt_status st_im2col_dil(clt_context *ctx, double *e) {
  clt_window w = square(1, 11, 9, 5, 1, 4, 2);
  return clt_check_im2col(ctx, 1, &w, e);
}
static clt_status st_col2im(clt_context *ctx, double *e) {
  clt_window w = square(3, 9, 7, 3, 2, 1, 1);
  return clt_check_col2im(ctx, 2, &w, true, 1, e);
}
static clt_status st_col2im_dil(clt_context *ctx, double *e) {
  clt_window w = square(1, 11, 9, 5, 1, 4, 2);
  return clt_check_col2im(ctx, 1, &w, false, 0, e);
}
static clt_status st_direct_fwd(clt_context *ctx, double *e) {
  clt_window w = square(3, 9, 12, 3, 1, 1, 1);
  return clt_check_conv_direct_forward(ctx, 2, 5, &w, true, true, 2, e);
}
static clt_status st_direct_wgrad(clt_context *ctx, double *e) {
  clt_window w = square(1, 11, 13, 3, 1, 0, 1);
  return clt_check_conv_direct_wgrad(ctx, 3, 4, &w, true, true, e);
}
static clt_status st_dw_fwd(clt_context *ctx, double *e) {
  clt_window w = square(3, 9, 12, 3, 2, 1, 1);
  return clt_check_dw_forward(ctx, 2, 2, &w, true, false, CLT_DW_PER_VALUE, e);
}
static clt_status st_dw_bwd(clt_context *ctx, double *e) {
  clt_window w = square(5, 11, 7, 3, 1, 2, 2);
  return clt_check_dw_backward(ctx, 3, 1, &w, true, true, CLT_DW_PER_VALUE, 40,
                               e);
}
static clt_status st_dw_fwd_rows(clt_context *ctx, double *e) {
  clt_window w = square(3, 9, 12, 3, 2, 1, 1);
  return clt_check_dw_forward(ctx, 2, 2, &w, true, true, CLT_DW_ROWS, e);
}
static clt_status st_dw_bwd_rows(clt_context *ctx, double *e) {
  clt_window w = square(2, 11, 7, 3, 2, 2, 2);
  return clt_check_dw_backward(ctx, 3, 3, &w, true, true, CLT_DW_ROWS, 0, e);
}
/* stride 1: the rows' data gradient gathered four columns at a time (13
 * and 6 columns: one and two past the last whole four) */
static clt_status st_dw_bwd_rows_s1(clt_context *ctx, double *e) {
  clt_window w = square(2, 13, 6, 3, 1, 1, 1);
  return clt_check_dw_backward(ctx, 2, 2, &w, false, true, CLT_DW_ROWS, 0, e);
}
/* stride 1, a 7x7 window: the rows taking four taps a pass from two
 * loads of the row (a second, partial four; padding past both edges) */
static clt_status st_dw_fwd_rows_k7(clt_context *ctx, double *e) {
  clt_window w = square(2, 10, 9, 7, 1, 3, 1);
  return clt_check_dw_forward(ctx, 2, 1, &w, true, false, CLT_DW_ROWS, e);
}
/* MobileNet's 3x3 of stride 1 with padding 1 on rows of 13: the rows'
 * unrolled 3x3 path, its loads inside the row between the edges' (7 rows:
 * an item's 4, then 3) */
static clt_status st_dw_fwd_rows_k3(clt_context *ctx, double *e) {
  clt_window w = square(2, 7, 13, 3, 1, 1, 1);
  return clt_check_dw_forward(ctx, 2, 1, &w, false, true, CLT_DW_ROWS_EIGHTS,
                              e);
}
static clt_status st_dw_bwd_rows_k3(clt_context *ctx, double *e) {
  clt_window w = square(2, 7, 13, 3, 1, 1, 1);
  return clt_check_dw_backward(ctx, 2, 1, &w, true, true, CLT_DW_ROWS_EIGHTS, 0,
                               e);
}
static clt_status st_dw_bwd_rows_k3_written(clt_context *ctx, double *e) {
  clt_window w = square(2, 7, 13, 3, 1, 1, 1);
  return clt_check_dw_backward(ctx, 2, 2, &w, false, false, CLT_DW_ROWS_EIGHTS,
                               0, e);
}
static clt_status st_dw_bwd_rows_short(clt_context *ctx, double *e) {
  clt_window w = square(3, 7, 7, 7, 1, 3, 1);
  return clt_check_dw_backward(ctx, 2, 1, &w, false, false, CLT_DW_ROWS_EIGHTS,
                               0, e);
}
static clt_status st_dw_bwd_rows_k7(clt_context *ctx, double *e) {
  clt_window w = square(2, 9, 10, 7, 1, 3, 1);
  return clt_check_dw_backward(ctx, 2, 2, &w, true, true, CLT_DW_ROWS_EIGHTS, 0,
                               e);
}
/* stride 2 along the row: eight outputs at a time, sixteen columns of dx
 * from buffered rows of dy, on 19 columns (the sixteens from columns 0
 * and 3: both parities of their taps) */
static clt_status st_dw_fwd_rows_s2(clt_context *ctx, double *e) {
  clt_window w = square(2, 9, 19, 5, 2, 2, 1);
  return clt_check_dw_forward(ctx, 2, 2, &w, true, true, CLT_DW_ROWS_EIGHTS,
                              e);
}
static clt_status st_dw_bwd_rows_s2(clt_context *ctx, double *e) {
  clt_window w = square(2, 9, 19, 3, 2, 1, 1);
  return clt_check_dw_backward(ctx, 2, 2, &w, true, true, CLT_DW_ROWS_EIGHTS,
                               0, e);
}
/* The tiled direct convolution (stride 1), each op in another block
 * width, on windows that cut a tile of filters and a block of columns. */
static clt_status st_tiled_fwd(clt_context *ctx, double *e) {
  clt_window w = square(5, 9, 21, 3, 1, 1, 1);
  return clt_check_conv_tiled_forward(ctx, 16, 2, 11, &w, true, true, 2, e);
}
static clt_status st_tiled_dgrad(clt_context *ctx, double *e) {
  clt_window w = square(3, 11, 10, 5, 1, 4, 2);
  return clt_check_conv_tiled_dgrad(ctx, 8, 2, 9, &w, true, 1, e);
}
static clt_status st_tiled_wgrad(clt_context *ctx, double *e) {
  clt_window w = square(7, 9, 19, 3, 1, 1, 1);
  return clt_check_conv_tiled_wgrad(ctx, 16, 3, 10, &w, e);
}
/* The small register tiles (ops.h CLT_TILED_SMALL): 11 filters in tiles
 * of 4 (the last from a weight tile's second half), 9 rows in pairs;
 * the weight gradient's 10 filters and 63 taps in threes. */
static clt_status st_tiled_small_fwd(clt_context *ctx, double *e) {
  clt_window w = square(5, 9, 21, 3, 1, 1, 1);
  return clt_check_conv_tiled_forward(ctx, 8 | CLT_TILED_SMALL, 2, 11, &w,
                                      true, true, 1, e);
}
static clt_status st_tiled_small_wgrad(clt_context *ctx, double *e) {
  clt_window w = square(7, 9, 19, 3, 1, 1, 1);
  return clt_check_conv_tiled_wgrad(ctx, 16 | CLT_TILED_SMALL, 3, 10, &w, e);
}
/* The implicit GEMMs (cl/igemm.cl), each op in a different tile
 * configuration, on windows that cut tiles and k blocks. */
static clt_status st_implicit_fwd(clt_context *ctx, double *e) {
  clt_window w = square(19, 9, 10, 3, 1, 1, 1);
  return clt_check_conv_implicit_forward(ctx, 0, 3, 70, &w, true, true, 2, e);
}
static clt_status st_implicit_dgrad(clt_context *ctx, double *e) {
  clt_window w = square(17, 11, 9, 3, 2, 1, 1);
  return clt_check_conv_implicit_dgrad(ctx, 1, 2, 33, &w, true, 1, e);
}
static clt_status st_implicit_wgrad(clt_context *ctx, double *e) {
  clt_window w = square(9, 11, 9, 3, 2, 1, 1);
  return clt_check_conv_implicit_wgrad(ctx, 2, 4, 3, 130, &w, e);
}
static clt_status st_im2row(clt_context *ctx, double *e) {
  clt_window w = square(3, 9, 7, 3, 2, 1, 1);
  w.rows = true;
  return clt_check_im2col(ctx, 2, &w, e);
}
static clt_status st_row2im_dil(clt_context *ctx, double *e) {
  clt_window w = square(1, 11, 9, 5, 1, 4, 2);
  w.rows = true;
  return clt_check_col2im(ctx, 2, &w, true, 2, e);
}
static clt_status st_nchw_to_nhwc(clt_context *ctx, double *e) {
  return clt_check_nchw_to_nhwc(ctx, 3, 5, 121, true, e);
}
static clt_status st_swap_axes(clt_context *ctx, double *e) {
  return clt_check_swap_axes01(ctx, 5, 3, 121, true, CLT_SWAP_PLAIN, 0, e);
}
static clt_status st_swap_relu(clt_context *ctx, double *e) {
  return clt_check_swap_axes01(ctx, 5, 3, 121, true, CLT_SWAP_RELU, 2, e);
}
static clt_status st_swap_relu_grad(clt_context *ctx, double *e) {
  return clt_check_swap_axes01(ctx, 3, 5, 121, false, CLT_SWAP_RELU_GRAD, 0, e);
}
static clt_status st_maxpool_fwd(clt_context *ctx, double *e) {
  clt_window w = square(6, 9, 7, 3, 2, 1, 1);
  return clt_check_maxpool_forward(ctx, &w, 2, e);
}
/* 2x2 of stride 2 in vectors: rows of 9 windows (a block of 8 and one
 * overlapping it), then of 4. */
static clt_status st_maxpool_vectors(clt_context *ctx, double *e) {
  clt_window w = square(6, 7, 19, 2, 2, 0, 1);
  w.vectors = true;
  double e2 = 0.0;
  CLT_TRY(clt_check_maxpool_forward(ctx, &w, 0, e));
  w = square(5, 3, 9, 2, 2, 0, 1);
  w.vectors = true;
  CLT_TRY(clt_check_maxpool_forward(ctx, &w, 1, &e2));
  if (e2 > *e) *e = e2;
  return CLT_OK;
}
static clt_status st_maxpool_bwd(clt_context *ctx, double *e) {
  clt_window w = square(6, 9, 7, 3, 2, 1, 1);
  return clt_check_maxpool_backward(ctx, &w, true, 1, e);
}
static clt_status st_avgpool_fwd(clt_context *ctx, double *e) {
  clt_window w = square(6, 9, 7, 3, 2, 1, 1);
  return clt_check_avgpool_forward(ctx, &w, 1, e);
}
static clt_status st_avgpool_bwd(clt_context *ctx, double *e) {
  clt_window w = square(6, 9, 7, 3, 2, 1, 1);
  return clt_check_avgpool_backward(ctx, &w, true, 1, e);
}
/* Global: a window over a whole 7x7 plane (runs of 16 and a tail). */
static clt_status st_avgpool_global_fwd(clt_context *ctx, double *e) {
  clt_window w = square(6, 7, 7, 7, 7, 0, 1);
  return clt_check_avgpool_forward(ctx, &w, 1, e);
}
static clt_status st_avgpool_global_bwd(clt_context *ctx, double *e) {
  clt_window w = square(6, 7, 7, 7, 7, 0, 1);
  return clt_check_avgpool_backward(ctx, &w, true, 2, e);
}
static clt_status st_bn_stats(clt_context *ctx, double *e) {
  return clt_check_bn_stats(ctx, 7, 3, 49, 1, e);
}
static clt_status st_bn_stats_split(clt_context *ctx, double *e) {
  return clt_check_bn_stats(ctx, 7, 3, 49, 3, e);
}
static clt_status st_bn_bwd_split(clt_context *ctx, double *e) {
  return clt_check_bn_backward(ctx, 33, 10, 7, 1e-5f, true, true, 8, false, 0,
                               e);
}
static clt_status st_bn_stats_planes(clt_context *ctx, double *e) {
  return clt_check_bn_stats(ctx, 7, 3, 49, CLT_BN_PER_PLANE, e);
}
static clt_status st_bn_bwd_planes(clt_context *ctx, double *e) {
  return clt_check_bn_backward(ctx, 33, 10, 7, 1e-5f, true, false,
                               CLT_BN_PER_PLANE, false, 0, e);
}
static clt_status st_bn_running(clt_context *ctx, double *e) {
  return clt_check_bn_update_running(ctx, 10, 343, 0.1f, e);
}
static clt_status st_bn_fwd(clt_context *ctx, double *e) {
  return clt_check_bn_forward(ctx, 7, 3, 49, 1e-5f, false, false, 2, e);
}
static clt_status st_bn_fwd_relu(clt_context *ctx, double *e) {
  return clt_check_bn_forward(ctx, 5, 4, 33, 1e-5f, true, false, 1, e);
}
static clt_status st_bn_bwd_train(clt_context *ctx, double *e) {
  return clt_check_bn_backward(ctx, 7, 3, 49, 1e-5f, true, false, 1, false, 1,
                               e);
}
static clt_status st_bn_bwd_eval(clt_context *ctx, double *e) {
  return clt_check_bn_backward(ctx, 33, 10, 1, 1e-5f, false, true, 1, false, 0,
                               e);
}
static clt_status st_bn_fold(clt_context *ctx, double *e) {
  return clt_check_bn_fold(ctx, 5, 27, 1e-5f, true, e);
}
static clt_status st_bn_fwd16(clt_context *ctx, double *e) {
  return clt_check_bn_forward(ctx, 5, 4, 33, 1e-5f, true, true, 2, e);
}
static clt_status st_bn_bwd16(clt_context *ctx, double *e) {
  return clt_check_bn_backward(ctx, 7, 3, 49, 1e-5f, true, true, 1, true, 1,
                               e);
}
static clt_status st_bn_train_fwd(clt_context *ctx, double *e) {
  return clt_check_bn_train_forward(ctx, 7, 3, 49, 1e-5f, 0.1f, true, false,
                                    2, e);
}
static clt_status st_bn_train_bwd(clt_context *ctx, double *e) {
  return clt_check_bn_train_backward(ctx, 33, 10, 7, 1e-5f, true, true, true,
                                     1, e);
}
static clt_status st_ln_fwd(clt_context *ctx, double *e) {
  return clt_check_ln_forward(ctx, 7, 301, 1e-5f, false, false, e);
}
static clt_status st_ln_bwd(clt_context *ctx, double *e) {
  return clt_check_ln_backward(ctx, 33, 49, 1e-5f, false, true, false, 9, e);
}
static clt_status st_ln_fwd16(clt_context *ctx, double *e) {
  return clt_check_ln_forward(ctx, 7, 301, 1e-5f, true, true, e);
}
static clt_status st_ln_bwd16(clt_context *ctx, double *e) {
  return clt_check_ln_backward(ctx, 33, 49, 1e-5f, true, true, true, 9, e);
}
static clt_status st_lnc_fwd(clt_context *ctx, double *e) {
  return clt_check_lnc_forward(ctx, 3, 7, 45, 1e-5f, true, false, e);
}
static clt_status st_lnc_bwd(clt_context *ctx, double *e) {
  return clt_check_lnc_backward(ctx, 3, 7, 45, 1e-5f, true, true, 0, 40, e);
}
/* 45 pixels: two runs of 16 and 13 one by one */
static clt_status st_lnc_fwd16(clt_context *ctx, double *e) {
  return clt_check_lnc_forward(ctx, 3, 7, 45, 1e-5f, true, true, e);
}
static clt_status st_lnc_bwd16(clt_context *ctx, double *e) {
  return clt_check_lnc_backward(ctx, 3, 7, 45, 1e-5f, true, true, 1, 40, e);
}
static clt_status st_lnc_bwd16_sums(clt_context *ctx, double *e) {
  return clt_check_lnc_backward(ctx, 3, 7, 45, 1e-5f, true, true, 2, 0, e);
}
static clt_status st_dropout(clt_context *ctx, double *e) {
  return clt_check_dropout(ctx, 10001, 0.3f, 42, 7, e);
}
static clt_status st_mul(clt_context *ctx, double *e) {
  return clt_check_mul(ctx, 1001, false, e);
}
static clt_status st_mul_acc(clt_context *ctx, double *e) {
  return clt_check_mul(ctx, 257, true, e);
}
static clt_status st_concat_fwd(clt_context *ctx, double *e) {
  return clt_check_channel_slice(ctx, 3, 7, 3, 2, 49, false, false, e);
}
static clt_status st_concat_bwd(clt_context *ctx, double *e) {
  return clt_check_channel_slice(ctx, 3, 7, 3, 2, 49, true, true, e);
}

/* Tolerances: a few float rounding steps for exact arithmetic; the
 * device's exp / tanh / erf are allowed a few ulp more. */
const clt_selftest_case clt_selftest_cases[] = {
    {"tensor fill", st_fill, 0.0, false},
    {"tensor copy (views)", st_copy_view, 0.0, false},
    {"bytes to floats (/255)", st_unit_u8, 0.0, false},
    {"f32 -> f16 -> f32 1001", st_half, 0.0, false},
    {"round to f16 in place 1001", st_round_half, 0.0, false},
    {"loss scaler unscale 1001", st_unscale, 0.0, false},
    {"gemm nn 33x17x65", st_gemm_nn, 1e-5, false},
    {"gemm tn 31x7x19 beta=1", st_gemm_tn, 1e-5, false},
    {"gemm nt 64x10x127", st_gemm_nt, 1e-5, false},
    {"gemm tt 3x33x7 alpha=-1", st_gemm_tt, 1e-5, false},
    {"gemm strided batched 5x9x13x27", st_gemm_batched, 1e-5, false},
    {"gemm c^T nn 33x17x65", st_gemm_ct_nn, 1e-5, false},
    {"gemm c^T tn strided batched 5x9x13x27 beta=1", st_gemm_ct_batched, 1e-5,
     false},
    {"gemm own rows 4x32 tn strided batched 3x5x45x17 beta=0.25",
     st_blocked_rows, 1e-5, false},
    {"gemm own dot 4x4 nt 9x13x37 beta=0.5", st_blocked_dot, 1e-5, false},
    {"gemm own dot 4x4 nt 9x13x37 + bias + relu", st_blocked_dot_bias, 1e-5,
     false},
    {"gemm fp16 64x64 nn 33x17x65", st_mma_0, 1e-5, true},
    {"gemm fp16 128x64 nt 3x150x70x129", st_mma_1, 1e-5, true},
    {"gemm fp16 128x128 tn 131x260x47 beta=1", st_mma_2, 1e-5, true},
    {"gemm fp16 64x128 ring nn 33x17x65", st_mma_3, 1e-5, true},
    {"gemm fp16 128x128 ring nt 3x150x70x129", st_mma_4, 1e-5, true},
    {"gemm fp16 128x128x8 ring tn 131x260x47 beta=1", st_mma_5, 1e-5, true},
    {"gemm fp16 64x128 ring ldm tt 2x70x150x129", st_mma_6, 1e-5, true},
    {"gemm fp16 128x128 ring ldm nn 131x260x47", st_mma_7, 1e-5, true},
    {"gemm fp16 128x256 ring ldm nt 2x150x300x129 beta=1", st_mma_8, 1e-5,
     true},
    {"gemm fp16 128x128 wgmma plain nn 33x17x65", st_mma_9, 1e-5, true},
    {"gemm fp16 64x128 wgmma nt 3x150x70x129", st_mma_10, 1e-5, true},
    {"gemm fp16 128x128 wgmma tn 131x260x47 beta=1", st_mma_11, 1e-5, true},
    {"gemm fp16 128x128 wgmma k16 tt 2x70x150x129", st_mma_12, 1e-5, true},
    {"gemm fp16 128x128 wgmma k16 x2 nn 131x260x47", st_mma_13, 1e-5, true},
    {"gemm fp16 64x256 wgmma k16 tn 150x300x129", st_mma_14, 1e-5, true},
    {"gemm fp16 128x256 wgmma k16 nt 2x150x300x129 beta=1", st_mma_15, 1e-5,
     true},
    {"gemm fp16 64x128 wgmma k64 tt 2x70x150x129", st_mma_16, 1e-5, true},
    {"gemm 3xtf32 128x128 nn 131x260x47", st_x3_0, 1e-6, true},
    {"gemm 3xtf32 128x128 d1 nt 3x150x70x129", st_x3_1, 1e-6, true},
    {"gemm 3xtf32 64x128 tn 131x260x47 beta=1", st_x3_2, 1e-6, true},
    {"gemm 3xtf32 64x128 k16 tt 2x70x150x129", st_x3_3, 1e-6, true},
    {"gemm 3xtf32 128x256 nt 2x150x300x129 beta=1", st_x3_4, 1e-6, true},
    {"gemm 3xtf32 64x64 nn 33x17x65", st_x3_5, 1e-6, true},
    {"add 1001", st_add, 1e-6, false},
    {"add 257 accumulate, fp16-rounded", st_add_acc, 1e-6, false},
    {"add 1001 + fused relu, fp16-saved", st_add_relu, 1e-6, false},
    {"scale 1001", st_scale, 1e-6, false},
    {"scale 257 accumulate", st_scale_acc, 1e-6, false},
    {"bias rows 7x33", st_bias_rows, 1e-6, false},
    {"bias channels 3x5x17", st_bias_channels, 1e-6, false},
    {"normalize 3x5x17", st_normalize, 1e-6, false},
    {"bias rows 7x33 + fused relu, fp16-rounded", st_bias_rows_relu, 1e-6,
     false},
    {"bias channels 3x5x17 + fused relu, fp16-saved", st_bias_channels_relu,
     1e-6, false},
    {"relu forward 1000, fp16-saved", st_relu_fwd, 1e-6, false},
    {"relu backward 1000 accumulate, fp16-rounded", st_relu_bwd, 1e-6, false},
    {"leaky relu forward 1000, fp16-saved", st_leaky_fwd, 1e-6, false},
    {"leaky relu backward 1000 accumulate, fp16-rounded", st_leaky_bwd, 1e-6,
     false},
    {"sigmoid forward 1000, fp16-saved", st_sigmoid_fwd, 1e-5, false},
    {"sigmoid backward 1000 accumulate, fp16-rounded", st_sigmoid_bwd, 1e-5,
     false},
    {"tanh forward 1000, fp16-saved", st_tanh_fwd, 1e-5, false},
    {"tanh backward 1000 accumulate, fp16-rounded", st_tanh_bwd, 1e-5, false},
    {"gelu forward 1000, fp16-saved", st_gelu_fwd, 1e-5, false},
    {"gelu backward 1000 accumulate, fp16-rounded", st_gelu_bwd, 1e-5, false},
    {"silu forward 1000, fp16-saved", st_silu_fwd, 1e-5, false},
    {"silu backward 1000 accumulate, fp16-rounded", st_silu_bwd, 1e-5, false},
    {"elu forward 1000, fp16-saved", st_elu_fwd, 1e-5, false},
    {"elu backward 1000 accumulate, fp16-rounded", st_elu_bwd, 1e-5, false},
    {"softplus forward 1000, fp16-saved", st_softplus_fwd, 1e-5, false},
    {"softplus backward 1000 accumulate, fp16-rounded", st_softplus_bwd, 1e-5,
     false},
    {"softmax forward 7x10", st_softmax_fwd, 1e-5, false},
    {"softmax backward 7x10", st_softmax_bwd, 1e-5, false},
    {"softmax xent 33x10", st_xent, 1e-5, false},
    {"softmax xent 33x10 logits +-1e4", st_xent_large, 1e-5, false},
    {"softmax xent 33x10 logits +-1e4, label smoothing 0.1", st_xent_smoothed,
     1e-5, false},
    {"softmax xent 33x10, class weights, smoothing 0.1",
     st_xent_weighted, 1e-5, false},
    {"sigmoid xent 33x10 logits +-30", st_sigmoid_xent, 1e-5, false},
    {"mse 7x10", st_mse, 1e-5, false},
    {"mae 7x10", st_mae, 1e-5, false},
    {"huber 7x10 delta 0.5", st_huber, 1e-5, false},
    {"sum channels 33x10x1", st_sum_channels_dense, 1e-5, false},
    {"sum channels 3x5x49 accumulate", st_sum_channels_conv, 1e-5, false},
    {"sum columns through relu 33x10", st_sum_columns_relu, 1e-5, false},
    {"sum into 1000", st_sum_into, 1e-5, false},
    {"two sums into 777 (loss and correct count)", st_sum2_into, 1e-5, false},
    {"sumsq into 1000", st_sumsq_into, 1e-5, false},
    {"sgd 3 steps", st_sgd_plain, 1e-5, false},
    {"sgd momentum dampening 3 steps", st_sgd_momentum, 1e-5, false},
    {"sgd nesterov weight decay 3 steps", st_sgd_nesterov, 1e-5, false},
    {"sgd momentum clip 3 steps", st_sgd_clip, 1e-5, false},
    {"adam step 1", st_adam_step1, 1e-5, false},
    {"adam weight decay 3 steps", st_adam_step3, 1e-5, false},
    {"adamw clip 3 steps", st_adamw_clip, 1e-5, false},
    {"rmsprop 3 steps", st_rmsprop, 1e-5, false},
    {"rmsprop centered momentum clip 3 steps", st_rmsprop_centered, 1e-5,
     false},
    {"im2col 2x3x9x7 k3s2p1", st_im2col, 0.0, false},
    {"im2col 1x11x9 k5 dil2 p4", st_im2col_dil, 0.0, false},
    {"col2im 2x3x9x7 k3s2p1 accumulate, fp16-rounded", st_col2im, 1e-5, false},
    {"col2im 1x11x9 k5 dil2 p4", st_col2im_dil, 1e-5, false},
    {"depthwise conv 2x3x9x12 k3s2p1 x2 + bias", st_dw_fwd, 1e-5, false},
    {"depthwise conv backward 3x5x11x7 k3p2d2 + bias accumulate, in parts",
     st_dw_bwd, 1e-5, false},
    {"depthwise conv 2x3x9x12 k3s2p1 x2 + bias + relu in rows",
     st_dw_fwd_rows, 1e-5, false},
    {"depthwise conv backward 3x2x11x7 k3s2p2d2 x3 + bias accumulate in rows",
     st_dw_bwd_rows, 1e-5, false},
    {"depthwise conv backward 2x2x13x6 k3p1 x2 accumulate in rows",
     st_dw_bwd_rows_s1, 1e-5, false},
    {"depthwise conv 2x2x10x9 k7p3 + bias in rows", st_dw_fwd_rows_k7, 1e-5,
     false},
    {"depthwise conv backward 2x2x9x10 k7p3 x2 + bias accumulate in rows, "
     "eights",
     st_dw_bwd_rows_k7, 1e-5, false},
    {"depthwise conv 2x2x7x13 k3p1 + relu in rows, eights", st_dw_fwd_rows_k3,
     1e-5, false},
    {"depthwise conv backward 2x2x7x13 k3p1 + bias accumulate in rows, "
     "eights",
     st_dw_bwd_rows_k3, 1e-5, false},
    {"depthwise conv backward 2x2x7x13 k3p1 x2 in rows, eights",
     st_dw_bwd_rows_k3_written, 1e-5, false},
    {"depthwise conv backward 2x3x7x7 k7p3 in rows, eights",
     st_dw_bwd_rows_short, 1e-5, false},
    {"depthwise conv 2x2x9x19 k5s2p2 x2 + bias + relu in rows, eights",
     st_dw_fwd_rows_s2, 1e-5, false},
    {"depthwise conv backward 2x2x9x19 k3s2p1 x2 + bias accumulate in rows, "
     "eights",
     st_dw_bwd_rows_s2, 1e-5, false},
    {"conv direct 2x3x9x12 k3p1 to 5 + bias + relu, fp16-saved", st_direct_fwd,
     1e-5, false},
    {"conv direct weight gradient 3x1x11x13 k3 to 4, bias, relu",
     st_direct_wgrad, 1e-5, false},
    {"conv tiled 2x5x9x21 k3p1 to 11 + bias + relu (16), fp16-saved",
     st_tiled_fwd, 1e-5, false},
    {"conv tiled data gradient 2x3x11x10 k5 dil2 p4 from 9 (8), "
     "accumulate, fp16-rounded",
     st_tiled_dgrad, 1e-5, false},
    {"conv tiled weight gradient 3x7x9x19 k3p1 to 10 (16)", st_tiled_wgrad,
     1e-5, false},
    {"conv tiled 2x5x9x21 k3p1 to 11 + bias + relu (8, small tiles), "
     "fp16-rounded",
     st_tiled_small_fwd, 1e-5, false},
    {"conv tiled weight gradient 3x7x9x19 k3p1 to 10 (16, small tiles)",
     st_tiled_small_wgrad, 1e-5, false},
    {"conv implicit 3x19x9x10 k3p1 to 70 + bias + relu (64x64), "
     "fp16-saved",
     st_implicit_fwd, 1e-5, false},
    {"conv implicit data gradient 2x17x11x9 k3s2p1 from 33 (16x64), "
     "fp16-rounded",
     st_implicit_dgrad, 1e-5, false},
    {"conv implicit weight gradient 3x9x11x9 k3s2p1 to 130, 4 chunks "
     "(128x128)",
     st_implicit_wgrad, 1e-5, false},
    {"im2row 2x3x9x7 k3s2p1", st_im2row, 0.0, false},
    {"row2im 2x1x11x9 k5 dil2 p4 accumulate, fp16-saved", st_row2im_dil, 1e-5,
     false},
    {"nchw to nhwc 3x5x121 fused relu gradient", st_nchw_to_nhwc, 0.0, false},
    {"swap axes 5x3x121 + bias", st_swap_axes, 0.0, false},
    {"swap axes 5x3x121 + bias + fused relu, fp16-saved", st_swap_relu, 0.0,
     false},
    {"swap axes 3x5x121 fused relu gradient", st_swap_relu_grad, 0.0, false},
    {"maxpool forward 6x9x7 k3s2p1, fp16-saved", st_maxpool_fwd, 0.0, false},
    {"maxpool forward 2x2 in vectors 6x7x19, and 5x3x9 fp16-rounded",
     st_maxpool_vectors, 0.0, false},
    {"maxpool backward 6x9x7 k3s2p1 accumulate, fp16-rounded", st_maxpool_bwd,
     1e-6, false},
    {"avgpool forward 6x9x7 k3s2p1, fp16-rounded", st_avgpool_fwd, 1e-6, false},
    {"avgpool backward 6x9x7 k3s2p1 accumulate, fp16-rounded", st_avgpool_bwd,
     1e-6, false},
    {"avgpool global forward 6x7x7, fp16-rounded", st_avgpool_global_fwd,
     1e-6, false},
    {"avgpool global backward 6x7x7 accumulate, fp16-saved",
     st_avgpool_global_bwd, 1e-6, false},
    {"batchnorm stats 7x3x49", st_bn_stats, 1e-5, false},
    {"batchnorm stats 7x3x49 split in 3", st_bn_stats_split, 1e-5, false},
    {"batchnorm backward 33x10x7 split in 8 accumulate", st_bn_bwd_split, 1e-5,
     false},
    {"batchnorm stats 7x3x49 an item per plane", st_bn_stats_planes, 1e-5,
     false},
    {"batchnorm backward 33x10x7 an item per plane", st_bn_bwd_planes, 1e-5,
     false},
    {"batchnorm running stats 10", st_bn_running, 1e-6, false},
    {"batchnorm forward 7x3x49, fp16-saved", st_bn_fwd, 1e-5, false},
    {"batchnorm forward 5x4x33 + fused relu, fp16-rounded", st_bn_fwd_relu,
     1e-5, false},
    {"batchnorm backward training 7x3x49, fp16-rounded", st_bn_bwd_train, 1e-5,
     false},
    {"batchnorm backward eval 33x10 accumulate", st_bn_bwd_eval, 1e-5, false},
    {"batchnorm folded into 5x27 weights", st_bn_fold, 1e-5, false},
    {"batchnorm forward 5x4x33 + fused relu in runs of 16, fp16-saved",
     st_bn_fwd16, 1e-5, false},
    {"batchnorm backward training 7x3x49 accumulate in runs of 16, "
     "fp16-rounded",
     st_bn_bwd16, 1e-5, false},
    {"batchnorm training forward 7x3x49 + fused relu in one kernel, "
     "fp16-saved",
     st_bn_train_fwd, 1e-5, false},
    {"batchnorm training backward 33x10x7 + fused relu accumulate in one "
     "kernel, an item per plane, fp16-rounded",
     st_bn_train_bwd, 1e-5, false},
    {"layernorm forward 7x301", st_ln_fwd, 1e-5, false},
    {"layernorm backward 33x49 accumulate, sums in 5 parts",
     st_ln_bwd, 1e-5, false},
    {"layernorm forward 7x301 + fused relu in runs of 16", st_ln_fwd16, 1e-5,
     false},
    {"layernorm backward 33x49 + fused relu accumulate in runs of 16, sums "
     "in 33 parts",
     st_ln_bwd16, 1e-5, false},
    {"layernorm over channels forward 3x7x45 + fused relu", st_lnc_fwd, 1e-5,
     false},
    {"layernorm over channels backward 3x7x45 + fused relu accumulate, sums "
     "in parts",
     st_lnc_bwd, 1e-5, false},
    {"layernorm over channels forward 3x7x45 + fused relu in runs of 16",
     st_lnc_fwd16, 1e-5, false},
    {"layernorm over channels backward 3x7x45 + fused relu accumulate in "
     "runs of 16, sums in parts",
     st_lnc_bwd16, 1e-5, false},
    {"layernorm over channels backward 3x7x45 + fused relu accumulate in "
     "runs of 16, sums in the same pass",
     st_lnc_bwd16_sums, 1e-5, false},
    {"dropout 10001 p=0.3", st_dropout, 1e-6, false},
    {"mul 1001", st_mul, 1e-6, false},
    {"mul 257 accumulate", st_mul_acc, 1e-6, false},
    {"concat forward 3x3x49 into 3x7x49 at 2", st_concat_fwd, 0.0, false},
    {"concat backward 3x7x49 at 2 accumulate", st_concat_bwd, 1e-6, false},
};
const int clt_selftest_case_count =
    (int)(sizeof clt_selftest_cases / sizeof clt_selftest_cases[0]);
