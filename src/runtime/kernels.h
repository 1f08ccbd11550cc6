/* Every kernel the library launches, with the cl/ file that holds it.
 * Adding a kernel: write it in cl/FILE.cl and list it here. */
#ifndef CLT_RUNTIME_KERNELS_H
#define CLT_RUNTIME_KERNELS_H

#define CLT_KERNEL_LIST(X)                                                     \
  X(fill_f32, "tensor")                                                        \
  X(fill_i32, "tensor")                                                        \
  X(fill_u8, "tensor")                                                         \
  X(lookup_u8_f32, "tensor")                                                   \
  X(fill_f16, "half")                                                          \
  X(f32_to_f16, "half")                                                        \
  X(f16_to_f32, "half")                                                        \
  X(unscale_check_f32, "half")                                                 \
  X(round_f16, "half")                                                         \
  X(round_save_f16, "half")                                                    \
  X(add_f32, "elementwise")                                                    \
  X(scale_f32, "elementwise")                                                  \
  X(bias_add_rows, "elementwise")                                              \
  X(bias_add_channels, "elementwise")                                          \
  X(activation_forward_relu, "activation")                                     \
  X(activation_backward_relu, "activation")                                    \
  X(activation_forward_leaky_relu, "activation")                               \
  X(activation_backward_leaky_relu, "activation")                              \
  X(activation_forward_sigmoid, "activation")                                  \
  X(activation_backward_sigmoid, "activation")                                 \
  X(activation_forward_tanh, "activation")                                     \
  X(activation_backward_tanh, "activation")                                    \
  X(activation_forward_gelu, "activation")                                     \
  X(activation_backward_gelu, "activation")                                    \
  X(softmax_rows, "loss")                                                      \
  X(softmax_rows_backward, "loss")                                             \
  X(softmax_xent, "loss")                                                      \
  X(mse, "loss")                                                               \
  X(sum_channels, "reduce")                                                    \
  X(sum_columns, "reduce")                                                     \
  X(sum_into, "reduce")                                                        \
  X(sumsq_into, "reduce")                                                      \
  X(sum_slices, "reduce")                                                      \
  X(sgd_step, "optim")                                                         \
  X(adam_step, "optim")                                                        \
  X(channel_slice_copy, "elementwise")                                         \
  X(im2col, "conv")                                                            \
  X(col2im, "conv")                                                            \
  X(im2col_elems, "conv")                                                      \
  X(col2im_elems, "conv")                                                      \
  X(im2row, "conv")                                                            \
  X(row2im, "conv")                                                            \
  X(swap_axes01, "conv")                                                       \
  X(nchw_to_nhwc, "conv")                                                      \
  X(conv_direct_forward, "conv")                                               \
  X(conv_direct_wgrad, "conv")                                                 \
  X(conv_direct_forward_elems, "conv")                                         \
  X(conv_direct_wgrad_elems, "conv")                                           \
  X(maxpool_forward, "pool")                                                   \
  X(maxpool_backward, "pool")                                                  \
  X(maxpool_backward_scatter, "pool")                                          \
  X(maxpool_forward_elems, "pool")                                             \
  X(maxpool_backward_elems, "pool")                                            \
  X(maxpool_backward_scatter_elems, "pool")                                    \
  X(avgpool_forward, "pool")                                                   \
  X(avgpool_backward, "pool")                                                  \
  X(bn_stats, "norm")                                                          \
  X(bn_update_running, "norm")                                                 \
  X(bn_apply, "norm")                                                          \
  X(bn_backward_reduce, "norm")                                                \
  X(bn_backward_apply, "norm")                                                 \
  X(bn_stats_part, "norm")                                                     \
  X(bn_stats_combine, "norm")                                                  \
  X(bn_backward_part, "norm")                                                  \
  X(bn_backward_combine, "norm")                                               \
  X(dropout_forward, "dropout")                                                \
  X(mul_f32, "dropout")                                                        \
  X(gemm_rows_4x32, "gemm")                                                    \
  X(gemm_rows_8x32, "gemm")                                                    \
  X(gemm_rows_4x8, "gemm")                                                     \
  X(gemm_dot_4x4, "gemm")                                                      \
  X(gemm_dot_8x2, "gemm")

#endif
