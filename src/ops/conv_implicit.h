/* Convolutions as implicit GEMMs (cl/igemm.cl): the forward, the data
 * gradient and the weight gradient without im2col, col2im or the axis
 * swap, the unfolded operand read from x (dy) tile by tile. Shaped for
 * GPUs; nn/conv2d.c offers them to every device as measured ways ("implicit
 * ..."), chosen only where faster. The program is built on first use, once
 * per tile configuration. Tensors are f32 in NCHW, the weight [F, C, KH,
 * KW]; each must hold what its shape needs (else CLT_ERR_SHAPE), and none
 * may reach past 2^31 elements (CLT_ERR_UNSUPPORTED). */
#ifndef CLT_OPS_CONV_IMPLICIT_H
#define CLT_OPS_CONV_IMPLICIT_H

#include "ops/ops.h"

/* Tile configurations (a work-group's tile of the output): f32 products,
 * 0 "64x64", 1 "16x64" (few filters or channels), 2 "128x128"; fp16
 * inputs with f32 sums on the fp16 route's instruction (ops/gemm_mma.h:
 * tensor cores, or their emulation; CLT_ERR_UNSUPPORTED where the route
 * is SGEMM), 3 "fp16 64x64", 4 "fp16 128x64", 5 "fp16 128x128": for
 * mixed precision, whose values are fp16 already (others are rounded to
 * nearest even on their way in). */
#define CLT_IGEMM_CONFIGS 6
#define CLT_IGEMM_FP32_CONFIGS 3
const char *clt_igemm_config_name(int config);
bool clt_igemm_config_fp16(int config);

/* y [batch, F, OH, OW] = the convolution of x [batch, C, H, W] by weight,
 * plus bias (NULL: none), then ReLU where relu. */
clt_status clt_conv_implicit_forward(clt_context *ctx, int config,
                                     clt_tensor *y, const clt_tensor *x,
                                     const clt_tensor *weight,
                                     const clt_tensor *bias, int64_t batch,
                                     int64_t filters, const clt_window *w,
                                     bool relu, const clt_round16 *round);

/* dx [batch, C, H, W] = (or +=, accumulate) the gradient of the input
 * from dy [batch, F, OH, OW]. */
clt_status clt_conv_implicit_dgrad(clt_context *ctx, int config,
                                   clt_tensor *dx, const clt_tensor *dy,
                                   const clt_tensor *weight, int64_t batch,
                                   int64_t filters, const clt_window *w,
                                   bool accumulate, const clt_round16 *round);

/* dw [F, C*KH*KW] = the weight gradient from x and dy, the k range
 * (batch*OH*OW) cut into at most `splits` chunks whose partial products go
 * to work (clt_conv_implicit_workspace floats; NULL for one chunk) and are
 * summed in order. */
clt_status clt_conv_implicit_wgrad(clt_context *ctx, int config, int splits,
                                   clt_tensor *dw, clt_tensor *work,
                                   const clt_tensor *x, const clt_tensor *dy,
                                   int64_t batch, int64_t filters,
                                   const clt_window *w);
int64_t clt_conv_implicit_workspace(int splits, int64_t batch,
                                    int64_t filters, const clt_window *w);
/* The work-groups of one chunk of the weight gradient (its tiles of dW). */
int64_t clt_conv_implicit_wgrad_tiles(int config, int64_t filters,
                                      const clt_window *w);

#endif
