/* Every kernel the library launches, with the cl/ file that holds it.
 * Adding a kernel: write it in cl/FILE.cl and list it here; in a file
 * that has ROUND16_VARIANTS, a kernel written out goes inside #if
 * !CLT_ROUND16_PROGRAM (test_runtime checks). */
#ifndef CLT_RUNTIME_KERNELS_H
#define CLT_RUNTIME_KERNELS_H

/* A kernel made by ROUND16_VARIANTS (cl/prelude.cl): NAME, NAME_r16 and
 * NAME_s16, in that order (the host adds the rounding mode to NAME's id:
 * KR_ID in ops/ops.h). The last two are in FILE's round16 program (the
 * file built with CLT_ROUND16_PROGRAM=1, runtime/program.c), which their
 * file's name after CLT_ROUND16_FILE says. */
#define CLT_ROUND16_FILE "round16:"
#define CLT_KERNEL_R16(X, name, file)                                          \
  X(name, file) X(name##_r16, CLT_ROUND16_FILE file)                           \
      X(name##_s16, CLT_ROUND16_FILE file)

#define CLT_KERNEL_LIST(X)                                                     \
  X(fill_f32, "tensor")                                                        \
  X(fill_i32, "tensor")                                                        \
  X(fill_u8, "tensor")                                                         \
  X(unit_u8_f32, "tensor")                                                     \
  X(loop_probe, "tensor")                                                      \
  X(fill_f16, "half")                                                          \
  X(f32_to_f16, "half")                                                        \
  X(f16_to_f32, "half")                                                        \
  X(unscale_check_f32, "half")                                                 \
  X(round_f16, "half")                                                         \
  X(round_save_f16, "half")                                                    \
  CLT_KERNEL_R16(X, add_f32, "elementwise")                                    \
  CLT_KERNEL_R16(X, add_relu_f32, "elementwise")                               \
  CLT_KERNEL_R16(X, scale_f32, "elementwise")                                  \
  CLT_KERNEL_R16(X, bias_add_rows, "elementwise")                              \
  CLT_KERNEL_R16(X, bias_add_channels, "elementwise")                          \
  CLT_KERNEL_R16(X, normalize_forward, "elementwise")                          \
  CLT_KERNEL_R16(X, activation_forward_relu, "activation")                     \
  CLT_KERNEL_R16(X, activation_backward_relu, "activation")                    \
  CLT_KERNEL_R16(X, activation_forward_leaky_relu, "activation")               \
  CLT_KERNEL_R16(X, activation_backward_leaky_relu, "activation")              \
  CLT_KERNEL_R16(X, activation_forward_sigmoid, "activation")                  \
  CLT_KERNEL_R16(X, activation_backward_sigmoid, "activation")                 \
  CLT_KERNEL_R16(X, activation_forward_tanh, "activation")                     \
  CLT_KERNEL_R16(X, activation_backward_tanh, "activation")                    \
  CLT_KERNEL_R16(X, activation_forward_gelu, "activation")                     \
  CLT_KERNEL_R16(X, activation_backward_gelu, "activation")                    \
  CLT_KERNEL_R16(X, activation_forward_silu, "activation")                     \
  CLT_KERNEL_R16(X, activation_backward_silu, "activation")                    \
  CLT_KERNEL_R16(X, activation_forward_elu, "activation")                      \
  CLT_KERNEL_R16(X, activation_backward_elu, "activation")                     \
  CLT_KERNEL_R16(X, activation_forward_softplus, "activation")                 \
  CLT_KERNEL_R16(X, activation_backward_softplus, "activation")                \
  X(softmax_rows, "loss")                                                      \
  X(softmax_rows_backward, "loss")                                             \
  X(softmax_xent, "loss")                                                      \
  X(regression_loss, "loss")                                                   \
  X(sigmoid_xent, "loss")                                                      \
  X(softmax_rows_group, "loss")                                                \
  X(softmax_rows_backward_group, "loss")                                       \
  X(softmax_xent_group, "loss")                                                \
  X(regression_loss_group, "loss")                                             \
  X(sigmoid_xent_group, "loss")                                                \
  X(sum_channels, "reduce")                                                    \
  X(sum_columns, "reduce")                                                     \
  X(sum_columns_relu, "reduce")                                                \
  X(sum_into, "reduce")                                                        \
  X(sum2_into, "reduce")                                                       \
  X(sumsq_into, "reduce")                                                      \
  X(sum_slices, "reduce")                                                      \
  X(sgd_step, "optim")                                                         \
  X(sgd_step_clip, "optim")                                                    \
  X(adam_step, "optim")                                                        \
  X(adam_step_clip, "optim")                                                   \
  X(rmsprop_step, "optim")                                                     \
  X(rmsprop_step_clip, "optim")                                                \
  X(channel_slice_copy, "elementwise")                                         \
  X(im2col, "conv")                                                            \
  CLT_KERNEL_R16(X, col2im, "conv")                                            \
  X(im2col_elems, "conv")                                                      \
  CLT_KERNEL_R16(X, col2im_elems, "conv")                                      \
  X(im2row, "conv")                                                            \
  CLT_KERNEL_R16(X, row2im, "conv")                                            \
  CLT_KERNEL_R16(X, swap_axes01, "conv")                                       \
  X(nchw_to_nhwc, "conv")                                                      \
  CLT_KERNEL_R16(X, conv_direct_forward, "conv")                               \
  X(conv_direct_wgrad, "conv")                                                 \
  CLT_KERNEL_R16(X, conv_direct_forward_elems, "conv")                         \
  X(conv_direct_wgrad_elems, "conv")                                           \
  X(conv_pad, "conv")                                                          \
  X(conv_tile_weights, "conv")                                                 \
  CLT_KERNEL_R16(X, conv_tiled16, "conv")                                      \
  CLT_KERNEL_R16(X, conv_tiled8, "conv")                                       \
  CLT_KERNEL_R16(X, conv_tiled16_small, "conv")                                \
  CLT_KERNEL_R16(X, conv_tiled8_small, "conv")                                 \
  X(conv_tiled_wgrad16, "conv")                                                \
  X(conv_tiled_wgrad8, "conv")                                                 \
  X(conv_tiled_wgrad16_small, "conv")                                          \
  X(conv_tiled_wgrad8_small, "conv")                                           \
  CLT_KERNEL_R16(X, maxpool_forward, "pool")                                   \
  CLT_KERNEL_R16(X, maxpool_backward, "pool")                                  \
  CLT_KERNEL_R16(X, maxpool_backward_scatter, "pool")                          \
  CLT_KERNEL_R16(X, maxpool_forward_elems, "pool")                             \
  CLT_KERNEL_R16(X, maxpool_forward_2x2, "pool")                               \
  CLT_KERNEL_R16(X, maxpool_backward_elems, "pool")                            \
  CLT_KERNEL_R16(X, maxpool_backward_scatter_elems, "pool")                    \
  CLT_KERNEL_R16(X, avgpool_forward, "pool")                                   \
  CLT_KERNEL_R16(X, avgpool_global_forward, "pool")                            \
  CLT_KERNEL_R16(X, avgpool_backward, "pool")                                  \
  CLT_KERNEL_R16(X, avgpool_global_backward, "pool")                           \
  X(bn_stats, "norm")                                                          \
  X(bn_update_running, "norm")                                                 \
  CLT_KERNEL_R16(X, bn_apply, "norm")                                          \
  CLT_KERNEL_R16(X, bn_apply16, "norm")                                        \
  X(bn_fold, "norm")                                                           \
  X(bn_backward_reduce, "norm")                                                \
  CLT_KERNEL_R16(X, bn_backward_apply, "norm")                                 \
  CLT_KERNEL_R16(X, bn_backward_apply16, "norm")                               \
  CLT_KERNEL_R16(X, bn_train_forward, "norm")                                  \
  CLT_KERNEL_R16(X, bn_train_backward, "norm")                                 \
  X(bn_stats_part, "norm")                                                     \
  X(bn_stats_combine, "norm")                                                  \
  X(bn_backward_part, "norm")                                                  \
  X(bn_backward_combine, "norm")                                               \
  X(dw_forward, "depthwise")                                                   \
  X(dw_backward_data, "depthwise")                                             \
  X(dw_backward_weights, "depthwise")                                          \
  X(dw_forward_rows, "depthwise")                                              \
  X(dw_backward_data_rows, "depthwise")                                        \
  X(dw_weights_rows, "depthwise")                                              \
  X(dw_weights_combine, "depthwise")                                           \
  X(ln_forward, "norm")                                                        \
  X(ln_forward16, "norm")                                                      \
  X(ln_backward_data, "norm")                                                  \
  X(ln_backward_data16, "norm")                                                \
  X(ln_backward_params, "norm")                                                \
  X(ln_backward_params16, "norm")                                              \
  X(lnc_forward, "norm")                                                       \
  X(lnc_backward_data, "norm")                                                 \
  X(lnc_backward_params, "norm")                                               \
  X(lnc_forward16, "norm")                                                     \
  X(lnc_backward_data16, "norm")                                               \
  X(lnc_backward_data16_sums, "norm")                                          \
  X(lnc_backward_params16, "norm")                                             \
  X(dropout_forward, "dropout")                                                \
  X(mul_f32, "dropout")                                                        \
  X(gemm_rows_4x32, "gemm")                                                    \
  X(gemm_rows_8x32, "gemm")                                                    \
  X(gemm_rows_4x8, "gemm")                                                     \
  X(gemm_dot_4x4, "gemm")                                                      \
  X(gemm_dot_8x2, "gemm")                                                      \
  X(gemm_rows_6x16, "gemm")                                                    \
  X(gemm_rows_4x16, "gemm")                                                    \
  X(gemm_dot_4x2_v8, "gemm")                                                   \
  X(gemm_dot_3x3_v8, "gemm")                                                   \
  X(gemm_dot_2x4_v8, "gemm")                                                   \
  X(gemm_rows_6x16_kb64, "gemm")                                               \
  X(gemm_rows_4x32_kb64, "gemm")

#endif
