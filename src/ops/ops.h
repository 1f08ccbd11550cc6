/* Device operations: plain C functions that enqueue kernels, in pairs
 * x_forward(out, in, ...) / x_backward(dinp, dout, ...). Counts are passed
 * explicitly (a partial last batch uses the first rows of each buffer).
 * `accumulate` adds into the output instead of overwriting it. */
#ifndef CLT_OPS_OPS_H
#define CLT_OPS_OPS_H

#include "runtime/runtime.h"
#include "tensor/tensor.h"

/* Row-major strided-batched GEMM with explicit leading dimensions (the
 * stored row length of each operand, at least its row's width), so that
 * a product can run on blocks of wider matrices: the column block of one
 * image, or one k-chunk. clt_gemm_strided_batched is this with the
 * natural ones. Operand extents are checked against the tensors.
 *
 * colmajor: the same product asked of CLBlast as its transpose,
 * C^T = op(B)^T op(A)^T in column-major order (the same memory). Its
 * indirect kernel wants C column-major (with GEMMK 0): a row-major call
 * makes it copy C to a transposed temporary and back, a column-major one
 * does not; which is faster depends on the device's kernel parameters and
 * the padding of the shape, so the plans measure both (gemm_plan.h). */
clt_status clt_gemm_ld(clt_context *ctx, bool colmajor, clt_transpose ta,
                       clt_transpose tb, int64_t m, int64_t n, int64_t k,
                       float alpha,
                       const clt_tensor *a, int64_t lda, int64_t stride_a,
                       const clt_tensor *b, int64_t ldb, int64_t stride_b,
                       float beta, clt_tensor *c, int64_t ldc,
                       int64_t stride_c, int64_t batch);

/* The checks of clt_gemm_ld's arguments (positive sizes and batch, leading
 * dimensions, f32 operands that hold the extents), failing with a message
 * that names `routine`; for the other GEMM kernels (gemm_mma.h). */
clt_status clt_gemm_check_args(clt_context *ctx, const char *routine,
                               clt_transpose ta, clt_transpose tb, int64_t m,
                               int64_t n, int64_t k, const clt_tensor *a,
                               int64_t lda, int64_t stride_a,
                               const clt_tensor *b, int64_t ldb,
                               int64_t stride_b, const clt_tensor *c,
                               int64_t ldc, int64_t stride_c, int64_t batch);

/* out = alpha * (sum over s < slices of ws[s * n + i]) (+ beta * out) over
 * n elements, slices summed in order (the same bits every run); out is not
 * read when beta is 0. */
clt_status clt_sum_slices(clt_context *ctx, clt_tensor *out,
                          const clt_tensor *ws, int64_t n, int64_t slices,
                          float alpha, float beta);

/* Mixed precision's rounding done by the kernel that writes an op's
 * output (cl/prelude.cl STORE16; graph.c decides where): mode 0 none, 1
 * to the nearest fp16 value, 2 that and the halves' bits into copy (an
 * f16 tensor, element i of it for element i of the output). The ops that
 * take a `const clt_round16 *` apply it to what they write; NULL: mode
 * 0. Where the op accumulates, the sum is what is rounded. */
typedef struct clt_round16 {
  int mode;
  const clt_tensor *copy;
} clt_round16;

/* A clt_round16 given to a kernel (cl/prelude.cl): KR_ID(id, r) the
 * kernel of its mode (ROUND16_VARIANTS), KR(r, y) the argument that
 * ROUND16_PARAMS takes, y (the op's output) standing in for the copy
 * where there is none (never written then). */
static inline int clt_round16_mode(const clt_round16 *r) {
  return r ? r->mode : 0;
}
static inline const clt_tensor *clt_round16_copy(const clt_round16 *r,
                                                 const clt_tensor *y) {
  return r && r->copy ? r->copy : y;
}
#define KR_ID(id, r) ((clt_kernel_id)((id) + clt_round16_mode(r)))
#define KR(r, y) KT(clt_round16_copy((r), (y)))

/* Kernels that walk a whole row or plane in one work-item (a CPU device
 * vectorises the loop, and pays its index work once) cut it into parts
 * where the loops would run more than ctx->loop_limit iterations: Mesa's
 * llvmpipe ends them after 65,535 without an error, and gave wrong
 * numbers from col2im at 100x100 images. Each part is computed as the
 * whole would compute it (the same operations on each element, in the
 * same order: the same bits).
 *
 * clt_loop_per returns how many of `units` (output rows, pixels, input
 * rows) a work-item takes: all of them where cost(units) is within the
 * limit, else the most for which cost (what a work-item taking that many
 * runs, inner loops included; growing with them) is, at least 1, evened
 * out over the parts that makes. */
typedef int64_t (*clt_loop_cost)(int64_t per, const void *arg);
int64_t clt_loop_per(const clt_context *ctx, int64_t units, clt_loop_cost cost,
                     const void *arg);
/* The most of `units` (at least 1) whose cost is within limit, cost
 * growing with them: clt_loop_per's search, for other limits too. */
int64_t clt_loop_most(int64_t units, int64_t limit, clt_loop_cost cost,
                      const void *arg);
static inline int64_t clt_loop_parts(int64_t units, int64_t per) {
  return (units + per - 1) / per;
}
/* The loop iterations one work-item may run on this device, measured on
 * the first call (a kernel looping 2^18 times): 0 where it ran them all,
 * else how many ran (65,535 on Mesa's llvmpipe, which ends the rest
 * without an error). Where it is not 0, the kernels whose work-items loop
 * over a whole product's k or a whole tensor (our own GEMMs, CLBlast's,
 * the sums into one value) cut their work into launches that each stay
 * within clt_loop_budget of it: elsewhere they run as they are, in one
 * launch. */
clt_status clt_device_loop_cap(clt_context *ctx, int64_t *cap);
/* Half the cap, as the loop counts the launchers reckon are estimates
 * (llvmpipe counts every loop iteration, inner ones and unrolled vector
 * work included); 0 for no cap. */
static inline int64_t clt_loop_budget(int64_t cap) { return cap / 2; }

/* The cost of a loop over per elements and a second one (fp16 rounding). */
static inline int64_t clt_loop_cost_twice(int64_t per, const void *arg) {
  (void)arg;
  return 2 * per + 1;
}

/* out = a + b over n elements. */
clt_status clt_add_forward(clt_context *ctx, clt_tensor *out,
                           const clt_tensor *a, const clt_tensor *b, int64_t n,
                           bool accumulate, const clt_round16 *round);
/* out = max(a + b, 0): a sum with a fused ReLU (the ReLU layer's select). */
clt_status clt_add_relu_forward(clt_context *ctx, clt_tensor *out,
                                const clt_tensor *a, const clt_tensor *b,
                                int64_t n, const clt_round16 *round);
/* y[i] = x[i] / 255 for the n bytes of x (u8) into y (f32), rounded as
 * the host's (float)x / 255.0f (clt_loader_byte_values): the loader's
 * pixel bytes made the model's inputs. */
clt_status clt_unit_u8(clt_context *ctx, clt_tensor *y, const clt_tensor *x,
                       int64_t n);
/* out = alpha * x over n elements. */
clt_status clt_scale_forward(clt_context *ctx, clt_tensor *out,
                             const clt_tensor *x, int64_t n, float alpha,
                             bool accumulate, const clt_round16 *round);
/* y = x rounded to the nearest fp16 value (ties to even, infinity past
 * the largest half), kept in f32, over n elements; y may be x (mixed
 * precision, cl/half.cl). */
clt_status clt_round_f16(clt_context *ctx, clt_tensor *y, const clt_tensor *x,
                         int64_t n);
/* clt_round_f16 of x in place over n elements, the fp16 values stored in
 * y (an f16 tensor) as well. */
clt_status clt_round_save_f16(clt_context *ctx, clt_tensor *x, clt_tensor *y,
                              int64_t n);
/* y[r, c] += bias[c], y of [rows, cols]; then ReLU where relu. */
clt_status clt_bias_rows_forward(clt_context *ctx, clt_tensor *y,
                                 const clt_tensor *bias, int64_t rows,
                                 int64_t cols, bool relu,
                                 const clt_round16 *round);
/* y[n, c, s] += bias[c], y of [batch, channels, spatial]; then ReLU where
 * relu. */
clt_status clt_bias_channels_forward(clt_context *ctx, clt_tensor *y,
                                     const clt_tensor *bias, int64_t batch,
                                     int64_t channels, int64_t spatial,
                                     bool relu, const clt_round16 *round);

/* y = (x - mean[c]) / sqrt(var[c]) over n elements of [.., channels,
 * spatial] (c = (i / spatial) % channels); where var[c] is 0 the values
 * are only shifted: the normalize layer. */
clt_status clt_normalize_forward(clt_context *ctx, clt_tensor *y,
                                 const clt_tensor *x, const clt_tensor *mean,
                                 const clt_tensor *var, int64_t n,
                                 int64_t channels, int64_t spatial,
                                 const clt_round16 *round);

clt_status clt_activation_forward(clt_context *ctx, clt_tensor *y,
                                  const clt_tensor *x, int64_t n,
                                  clt_activation kind, float alpha,
                                  const clt_round16 *round);
clt_status clt_activation_backward(clt_context *ctx, clt_tensor *dx,
                                   const clt_tensor *dy, const clt_tensor *x,
                                   const clt_tensor *y, int64_t n,
                                   clt_activation kind, float alpha,
                                   bool accumulate, const clt_round16 *round);

clt_status clt_softmax_forward(clt_context *ctx, clt_tensor *y,
                               const clt_tensor *x, int64_t rows,
                               int64_t cols);
clt_status clt_softmax_backward(clt_context *ctx, clt_tensor *dx,
                                const clt_tensor *dy, const clt_tensor *y,
                                int64_t rows, int64_t cols, bool accumulate);
/* Fused softmax + cross-entropy with integer labels: per-row loss and
 * correctness (argmax == label) into loss_rows / correct_rows [rows], and
 * grad = (softmax(x) - target) * grad_scale, the target onehot(label) or,
 * with label smoothing `smoothing` in [0, 1], (1 - smoothing) onehot +
 * smoothing / cols (PyTorch's CrossEntropyLoss(label_smoothing)). With
 * class_weights ([cols] f32, or NULL), a row's loss and gradient are
 * both multiplied by its label's weight (Keras's class_weight; the
 * caller's grad_scale stays 1 / samples). */
clt_status clt_softmax_xent_forward_backward(
    clt_context *ctx, clt_tensor *loss_rows, clt_tensor *correct_rows,
    clt_tensor *grad, const clt_tensor *x, const clt_tensor *labels,
    const clt_tensor *class_weights, int64_t rows, int64_t cols,
    float grad_scale, float smoothing);
/* Sigmoid and binary cross-entropy, fused (PyTorch's BCEWithLogitsLoss),
 * of logits x against targets t in [0, 1], [rows, cols]: per row, the sum
 * of the elements' losses into loss_rows and the count of elements whose
 * prediction (x > 0) is the target's side of 1/2 into correct_rows;
 * grad = (sigmoid(x) - t) * grad_scale. */
clt_status clt_sigmoid_xent_forward_backward(
    clt_context *ctx, clt_tensor *loss_rows, clt_tensor *correct_rows,
    clt_tensor *grad, const clt_tensor *x, const clt_tensor *t, int64_t rows,
    int64_t cols, float grad_scale);

/* The regression losses of an element's difference d = p - t. */
typedef enum clt_regression_kind {
  CLT_REGRESSION_MSE,   /* d^2 */
  CLT_REGRESSION_MAE,   /* |d| */
  CLT_REGRESSION_HUBER, /* d^2 / 2 within delta, else delta (|d| - delta/2) */
} clt_regression_kind;

/* Per row, the sum of the loss's terms into loss_rows and of the absolute
 * differences into abs_rows; grad = the term's derivative * grad_scale
 * (mse 2d; mae sign(d), 0 at 0; huber d within delta, else delta
 * sign(d)). delta: huber's only. */
clt_status clt_regression_loss_forward_backward(
    clt_context *ctx, clt_regression_kind kind, float delta,
    clt_tensor *loss_rows, clt_tensor *abs_rows, clt_tensor *grad,
    const clt_tensor *p, const clt_tensor *t, int64_t rows, int64_t cols,
    float grad_scale);

/* The items of a group that reduces with group_sum (cl/prelude.cl) where
 * `busy` of them have work: the smallest power of two that holds them,
 * ctx->work_group at most. Items past the work would only add zeros and
 * walk the tree's barriers, which cost on POCL, where a group's items run
 * as a loop on one core (README "Measured plans": the batch-norm nets 5-20%
 * faster than with groups of 256). */
size_t clt_group_items(const clt_context *ctx, int64_t busy);
/* The items with work in a group whose items take the runs of 16 of a
 * plane of `inner` values, then its tail, one each (sum_channels, batch
 * norm's runs): the larger count of the two. */
static inline int64_t clt_runs_busy(int64_t inner) {
  return inner / 16 > inner % 16 ? inner / 16 : inner % 16;
}

/* out[c] = sum of x[outer, channels, inner] over outer and inner (in
 * launches of clt_sum_channels_part's `part` of outer each where the
 * device's loops are capped; clt_device_loop_cap). */
clt_status clt_sum_channels_part(clt_context *ctx, int64_t outer,
                                 int64_t inner, int64_t *part);
clt_status clt_sum_channels_forward(clt_context *ctx, clt_tensor *out,
                                    const clt_tensor *x, int64_t outer,
                                    int64_t channels, int64_t inner,
                                    bool accumulate);
/* A dense layer's fused ReLU and bias gradients in one pass: x [rows,
 * cols] becomes its gradient through the ReLU whose output is y (in place,
 * clt_activation_backward's numbers), and out[c] = sum over r of the new
 * x[r, c] (clt_sum_channels_forward's with inner 1, same bits). */
clt_status clt_sum_columns_relu(clt_context *ctx, clt_tensor *out,
                                clt_tensor *x, const clt_tensor *y,
                                int64_t rows, int64_t cols);
/* acc[index] += scale * sum(x[0..n)). */
clt_status clt_sum_into(clt_context *ctx, clt_tensor *acc, int index,
                        const clt_tensor *x, int64_t n, float scale);
/* Both acc[i0] += s0 * sum(x0[0..n)) and acc[i1] += s1 * sum(x1[0..n))
 * (i0 != i1), each with clt_sum_into's bits, in one launch where the
 * device's loops allow. */
clt_status clt_sum2_into(clt_context *ctx, clt_tensor *acc, int i0,
                         const clt_tensor *x0, float s0, int i1,
                         const clt_tensor *x1, float s1, int64_t n);
/* acc[index] += sum(x[0..n)^2). */
clt_status clt_sumsq_into(clt_context *ctx, clt_tensor *acc, int index,
                          const clt_tensor *x, int64_t n);

typedef struct clt_sgd_params {
  float lr, momentum, dampening, weight_decay, max_norm;
  bool nesterov, first;
} clt_sgd_params;

clt_status clt_sgd_step(clt_context *ctx, clt_tensor *p, const clt_tensor *g,
                        clt_tensor *momentum_buf, const clt_tensor *norm_sq,
                        const clt_sgd_params *hp);

typedef struct clt_adam_params {
  float lr, beta1, beta2, eps, weight_decay, max_norm;
  bool decoupled; /* AdamW */
  int64_t step;   /* 1-based, for the bias corrections */
} clt_adam_params;

clt_status clt_adam_step(clt_context *ctx, clt_tensor *p, const clt_tensor *g,
                         clt_tensor *m, clt_tensor *v,
                         const clt_tensor *norm_sq,
                         const clt_adam_params *hp);

typedef struct clt_rmsprop_params {
  float lr, alpha, eps, weight_decay, momentum, max_norm;
  bool centered;
} clt_rmsprop_params;

/* torch.optim.RMSprop: sq, the running mean square; buf, the momentum
 * buffer (NULL where hp->momentum is 0); avg, the running mean of the
 * gradient (NULL unless hp->centered). */
clt_status clt_rmsprop_step(clt_context *ctx, clt_tensor *p,
                            const clt_tensor *g, clt_tensor *sq,
                            clt_tensor *buf, clt_tensor *avg,
                            const clt_tensor *norm_sq,
                            const clt_rmsprop_params *hp);

/* ---- convolution, pooling, normalisation, dropout, concatenation ---- */

/* Geometry of a 2-D convolution or pooling window over NCHW data. */
typedef struct clt_window {
  int64_t C, H, W;       /* input channels and size */
  int64_t KH, KW;        /* window */
  int64_t OH, OW;        /* output size */
  int64_t pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;
  /* im2col, col2im and max pooling: one work-item per element written
   * (coalesced, for GPUs) instead of one per row (the default, for CPU
   * devices). */
  bool per_element;
  /* max pooling's forward with a work-item per row, where the window is
   * 2x2 of stride 2 without padding (clt_maxpool_vectors_fit): its
   * windows 8 or 4 at a time in vectors. */
  bool vectors;
  /* im2col and col2im: the unfold in the row layout, row [batch*OH*OW,
   * C*KH*KW] (col's transpose: im2row, row2im) instead of col [C*KH*KW,
   * batch*OH*OW]. */
  bool rows;
} clt_window;

/* Output size of a window along one axis (PyTorch's formula); 0 when the
 * window does not fit (C's division would round a negative span up). */
static inline int64_t clt_window_out(int64_t in, int64_t k, int64_t pad,
                                     int64_t stride, int64_t dil) {
  int64_t span = in + 2 * pad - dil * (k - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

/* col [C*KH*KW, batch*OH*OW] from x [batch, C, H, W] (w->rows: its
 * transpose, row [batch*OH*OW, C*KH*KW]). */
clt_status clt_im2col_forward(clt_context *ctx, clt_tensor *col,
                              const clt_tensor *x, int64_t batch,
                              const clt_window *w);
/* dx [batch, C, H, W] from dcol, the inverse scatter of im2col (w->rows:
 * from drow, laid out as row). */
clt_status clt_col2im_backward(clt_context *ctx, clt_tensor *dx,
                               const clt_tensor *dcol, int64_t batch,
                               const clt_window *w, bool accumulate,
                               const clt_round16 *round);
/* y [B, A, S] from x [A, B, S], adding bias[a] when bias is not NULL. */
clt_status clt_swap_axes01(clt_context *ctx, clt_tensor *y,
                           const clt_tensor *x, const clt_tensor *bias,
                           int64_t A, int64_t B, int64_t S);
/* What a swap does to a fused ReLU (cl/conv.cl swap_axes01). */
typedef enum clt_swap_relu {
  CLT_SWAP_PLAIN = 0,
  CLT_SWAP_RELU = 1,      /* ReLU of what is written (after the bias) */
  CLT_SWAP_RELU_GRAD = 2, /* times mask > 0, mask [A, B, S] as x */
} clt_swap_relu;
/* clt_swap_axes01 with a fused ReLU (mask: only for CLT_SWAP_RELU_GRAD). */
clt_status clt_swap_axes01_relu(clt_context *ctx, clt_tensor *y,
                                const clt_tensor *x, const clt_tensor *bias,
                                const clt_tensor *mask, int64_t A, int64_t B,
                                int64_t S, clt_swap_relu relu,
                                const clt_round16 *round);
/* y [N, P, C] from x [N, C, P] (NCHW to NHWC); with mask (a ReLU's output,
 * laid out as x), the gradient through that ReLU, x * (mask > 0), which
 * also replaces x. */
clt_status clt_nchw_to_nhwc(clt_context *ctx, clt_tensor *y, clt_tensor *x,
                            const clt_tensor *mask, int64_t N, int64_t C,
                            int64_t P);

/* Direct convolution (cl/conv.cl; nn/conv2d.c offers it where a window
 * has few taps): y [batch, F, OH, OW] = weight [F, C, KH, KW] applied to x
 * [batch, C, H, W], plus bias (NULL: none), then ReLU where relu. */
clt_status clt_conv_direct_forward(clt_context *ctx, clt_tensor *y,
                                   const clt_tensor *x,
                                   const clt_tensor *weight,
                                   const clt_tensor *bias, int64_t batch,
                                   int64_t F, const clt_window *w, bool relu,
                                   const clt_round16 *round);
/* Its weight gradient dw [F, C, KH, KW] and, where db is not NULL, bias
 * gradient db [F] from x and dy [batch, F, OH, OW] (through a ReLU whose
 * output is mask, where mask is not NULL), overwritten: partial sums in
 * work (clt_conv_direct_workspace floats), then added up in order. */
clt_status clt_conv_direct_wgrad(clt_context *ctx, clt_tensor *dw,
                                 clt_tensor *db, const clt_tensor *x,
                                 const clt_tensor *dy, const clt_tensor *mask,
                                 int64_t batch, int64_t F, const clt_window *w,
                                 clt_tensor *work);
/* The floats clt_conv_direct_wgrad's work must hold. */
int64_t clt_conv_direct_workspace(int64_t batch, int64_t F,
                                  const clt_window *w, bool bias);

/* The tiled direct convolution (cl/conv.cl conv_tiled16, conv_tiled8
 * and their _small forms; nn/conv2d.c offers it for stride 1, shaped for
 * CPU devices): the weights [F, C, KH, KW] in tiles of 8 filters
 * (clt_conv_tile_weights, into clt_conv_tiled_weights_len floats; made
 * once for as long as the weights stay), x copied with its padding
 * written out into work (clt_conv_tiled_workspace floats), then y [batch,
 * F, OH, OW] = the weights applied to it, in blocks of v = 16 or 8 output
 * columns, plus bias (NULL: none), then ReLU where relu.
 * v | CLT_TILED_SMALL: the same with the small register tiles (a
 * work-item's 4 filters by 2 rows, the weight gradient's 3 filters by 3
 * taps, instead of 8 by 3: for CPUs with 16 vector registers), the same
 * numbers. clt_conv_tiled_fits: whether it runs w (stride 1, its loops
 * within the device's limit). */
#define CLT_TILED_SMALL 0x100
bool clt_conv_tiled_fits(const clt_context *ctx, const clt_window *w, int v);
int64_t clt_conv_tiled_workspace(int64_t batch, const clt_window *w, int v);
int64_t clt_conv_tiled_weights_len(int64_t F, const clt_window *w);
clt_status clt_conv_tile_weights(clt_context *ctx, clt_tensor *tiles,
                                 const clt_tensor *weight, int64_t F,
                                 const clt_window *w);
clt_status clt_conv_tiled_forward(clt_context *ctx, int v, clt_tensor *y,
                                  const clt_tensor *x,
                                  const clt_tensor *tiles,
                                  const clt_tensor *bias, int64_t batch,
                                  int64_t F, const clt_window *w, bool relu,
                                  const clt_round16 *round, clt_tensor *work);
/* The same kernel for the data gradient of a stride-1 convolution: dx
 * [batch, C, H, W] (+)= the full correlation of dy [batch, F, OH, OW]
 * with the weights flipped, dy padded into work
 * (clt_conv_tiled_dgrad_workspace floats). Runs where the padding is at
 * most dil*(K-1) (clt_conv_tiled_dgrad_fits). */
bool clt_conv_tiled_dgrad_fits(const clt_context *ctx, const clt_window *w,
                               int64_t F, int v);
int64_t clt_conv_tiled_dgrad_workspace(int64_t batch, int64_t F,
                                       const clt_window *w, int v);
/* And the weight gradient dw [F, C, KH, KW] (overwritten) from x and dy
 * [batch, F, OH, OW]: both padded into work (clt_conv_tiled_wgrad_pads
 * floats), partial sums over chunks of rows in partials
 * (clt_conv_tiled_wgrad_workspace floats), added up in order. */
bool clt_conv_tiled_wgrad_fits(const clt_context *ctx, const clt_window *w,
                               int64_t F, int v);
int64_t clt_conv_tiled_wgrad_workspace(const clt_context *ctx, int64_t batch,
                                       int64_t F, const clt_window *w, int v);
int64_t clt_conv_tiled_wgrad_pads(int64_t batch, int64_t F,
                                  const clt_window *w, int v);
clt_status clt_conv_tiled_wgrad(clt_context *ctx, int v, clt_tensor *dw,
                                clt_tensor *partials, const clt_tensor *x,
                                const clt_tensor *dy, int64_t batch,
                                int64_t F, const clt_window *w,
                                clt_tensor *work);
clt_status clt_conv_tiled_dgrad(clt_context *ctx, int v, clt_tensor *dx,
                                const clt_tensor *dy,
                                const clt_tensor *weight, int64_t batch,
                                int64_t F, const clt_window *w,
                                bool accumulate, const clt_round16 *round,
                                clt_tensor *work);

/* The conv2d forward (clt_conv2d_forward) given the GEMM as a function:
 * im2col of batch images into col, gemm(user) making tmp = weight col
 * [filters, batch*OH*OW], then y = swap(tmp) + bias. The layer passes its
 * measured plan; the public op one GEMM. */
clt_status clt_conv2d_forward_with(clt_context *ctx, const clt_window *w,
                                   int64_t filters, int64_t batch,
                                   const clt_tensor *x, const clt_tensor *bias,
                                   clt_tensor *col, clt_tensor *tmp,
                                   clt_tensor *y,
                                   clt_status (*gemm)(void *user),
                                   void *user);

/* Pooling over batch*C planes (w->C counts planes here). */
bool clt_maxpool_vectors_fit(const clt_window *w);
clt_status clt_maxpool_forward(clt_context *ctx, clt_tensor *y,
                               clt_tensor *argmax, const clt_tensor *x,
                               const clt_window *w, const clt_round16 *round);
clt_status clt_maxpool_backward(clt_context *ctx, clt_tensor *dx,
                                const clt_tensor *dy, const clt_tensor *argmax,
                                const clt_window *w, bool accumulate,
                                const clt_round16 *round);
clt_status clt_avgpool_forward(clt_context *ctx, clt_tensor *y,
                               const clt_tensor *x, const clt_window *w,
                               const clt_round16 *round);
clt_status clt_avgpool_backward(clt_context *ctx, clt_tensor *dx,
                                const clt_tensor *dy, const clt_window *w,
                                bool accumulate, const clt_round16 *round);

/* Batch normalisation of x [N, C, HW] (HW 1 for dense inputs).
 * The reductions (the statistics, dgamma and dbeta) run one group per
 * channel where want <= 1 (work unused), its items sharing each plane's
 * runs of 16 (want 1) or each taking whole planes (want CLT_BN_PER_PLANE),
 * else split (cl/norm.cl): the N planes of each channel in parts chunks
 * reduced side by side, then combined, where one group per channel leaves
 * a GPU idle.
 * clt_bn_parts gives the parts the reductions run in for `want` (backward:
 * dgamma and dbeta's sums, else the statistics): 0 for one group per
 * channel, else that many chunks of *chunk planes (work then holds at
 * least 2 C parts floats). Where the device ends a work-item's loops
 * early (clt_device_loop_cap) a way whose loops would pass the budget
 * runs in more parts instead, one group per channel included (llvmpipe:
 * wrong statistics from 20,000 rows of BatchNorm1d otherwise).
 * clt_bn_work_floats: the work floats that ways asking for 1 to `most`
 * parts need, both reductions. */
#define CLT_BN_PER_PLANE ((int64_t)-1)
clt_status clt_bn_parts(clt_context *ctx, int64_t N, int64_t HW,
                        bool backward, int64_t want, int64_t *parts,
                        int64_t *chunk);
clt_status clt_bn_work_floats(clt_context *ctx, int64_t N, int64_t C,
                              int64_t HW, int64_t most, int64_t *floats);
clt_status clt_bn_stats(clt_context *ctx, clt_tensor *mean, clt_tensor *var,
                        const clt_tensor *x, int64_t N, int64_t C, int64_t HW,
                        int64_t want, clt_tensor *work);
clt_status clt_bn_update_running(clt_context *ctx, clt_tensor *rmean,
                                 clt_tensor *rvar, clt_tensor *tracked,
                                 const clt_tensor *mean, const clt_tensor *var,
                                 int64_t C, int64_t M, float momentum);
/* y = (x - mean) / sqrt(var + eps) gamma + beta, then max(y, 0) where
 * relu (a ReLU fused after it: the ReLU layer's select). runs16: the
 * layout with a work-item per run of 16 positions of a plane, else one per
 * position (cl/norm.cl; the layer measures which is faster). */
clt_status clt_bn_forward(clt_context *ctx, clt_tensor *y, const clt_tensor *x,
                          const clt_tensor *mean, const clt_tensor *var,
                          const clt_tensor *gamma, const clt_tensor *beta,
                          int64_t N, int64_t C, int64_t HW, float eps,
                          bool relu, bool runs16, const clt_round16 *round);
/* Evaluation's batch norm folded into the convolution before it:
 * w_out[f][i] = w[f][i] k[f] (per weights a filter) and b_out[f] = (b[f]
 * - mean[f]) k[f] + beta[f] (b 0 where NULL), k = gamma / sqrt(var +
 * eps) as clt_bn_forward computes it. */
clt_status clt_bn_fold(clt_context *ctx, clt_tensor *w_out, clt_tensor *b_out,
                       const clt_tensor *w, const clt_tensor *b,
                       const clt_tensor *mean, const clt_tensor *var,
                       const clt_tensor *gamma, const clt_tensor *beta,
                       int64_t F, int64_t per, float eps);
clt_status clt_bn_backward(clt_context *ctx, clt_tensor *dx,
                           clt_tensor *dgamma, clt_tensor *dbeta,
                           const clt_tensor *dy, const clt_tensor *x,
                           const clt_tensor *mean, const clt_tensor *var,
                           const clt_tensor *gamma, int64_t N, int64_t C,
                           int64_t HW, float eps, bool training,
                           bool accumulate, int64_t want, bool runs16,
                           clt_tensor *work, const clt_round16 *round);

/* Training mode in one kernel each way (cl/norm.cl's bn_train_forward and
 * bn_train_backward; the layer measures them against the separate
 * kernels above): one group per channel, its items sharing each plane's
 * runs of 16 or (planes) each taking whole planes, as clt_bn_stats with
 * want 1 or CLT_BN_PER_PLANE.
 * clt_bn_train_forward: the batch's mean and biased variance into mean and
 * var, the running averages updated as clt_bn_update_running does (M =
 * N HW), and y as clt_bn_forward computes it from them.
 * clt_bn_train_backward: dgamma, dbeta and dx as clt_bn_backward computes
 * them in training mode, where relu with dy taken as dy times (out > 0)
 * (the gradient of a ReLU fused after the forward, whose output is out;
 * dy itself is left as it is).
 * clt_bn_fused_fits: whether the device's loop budget
 * (clt_device_loop_cap) lets one work-item loop over its share of the
 * channel (else both refuse, CLT_ERR_UNSUPPORTED). */
clt_status clt_bn_fused_fits(clt_context *ctx, int64_t N, int64_t HW,
                             bool backward, bool planes, bool *fits);
clt_status clt_bn_train_forward(clt_context *ctx, clt_tensor *y,
                                clt_tensor *mean, clt_tensor *var,
                                clt_tensor *rmean, clt_tensor *rvar,
                                clt_tensor *tracked, const clt_tensor *x,
                                const clt_tensor *gamma,
                                const clt_tensor *beta, int64_t N, int64_t C,
                                int64_t HW, float eps, float momentum,
                                bool relu, bool planes,
                                const clt_round16 *round);
clt_status clt_bn_train_backward(clt_context *ctx, clt_tensor *dx,
                                 clt_tensor *dgamma, clt_tensor *dbeta,
                                 const clt_tensor *dy, const clt_tensor *x,
                                 const clt_tensor *out, const clt_tensor *mean,
                                 const clt_tensor *var,
                                 const clt_tensor *gamma, int64_t N,
                                 int64_t C, int64_t HW, float eps, bool relu,
                                 bool accumulate, bool planes,
                                 const clt_round16 *round);

/* Layer normalisation (cl/norm.cl ln_*), torch.nn.LayerNorm over each
 * of N samples' D values: y = (x - mean) * rstd * gamma + beta with the
 * sample's mean and rstd = 1 / sqrt(biased variance + eps), both kept
 * (N floats each) for the backward. clt_ln_backward: dgamma and dbeta
 * (written, [D]; NULL both, a frozen layer's: not made) and, where dx,
 * dx written or (accumulate) added; the parameter sums run in parts of
 * the batch where the device's loops are capped (clt_loop_per). Both
 * refuse (CLT_ERR_UNSUPPORTED) a sample whose values a work-group's loops
 * cannot walk within the device's budget (clt_device_loop_cap). runs16:
 * the layout of runs of 16 values with vector loads (cl/norm.cl), else a
 * value per item; the same numbers to float rounding. relu: a ReLU
 * fused after it, y = max(y, 0) forward, and backward dy taken as 0 where
 * the forward's output y is not > 0 (y is read only where relu). */
clt_status clt_ln_forward(clt_context *ctx, clt_tensor *y, clt_tensor *mean,
                          clt_tensor *rstd, const clt_tensor *x,
                          const clt_tensor *gamma, const clt_tensor *beta,
                          int64_t N, int64_t D, float eps, bool relu,
                          bool runs16);
clt_status clt_ln_backward(clt_context *ctx, clt_tensor *dx,
                           clt_tensor *dgamma, clt_tensor *dbeta,
                           const clt_tensor *dy, const clt_tensor *x,
                           const clt_tensor *y, const clt_tensor *mean,
                           const clt_tensor *rstd, const clt_tensor *gamma,
                           int64_t N, int64_t D, bool relu, bool accumulate,
                           bool runs16);

/* Layer normalisation over each pixel's channels (cl/norm.cl lnc_*):
 * x [N, C, P], pixel (n, p)'s C values normalised by their own mean and
 * rstd (kept, N P floats each, for the backward), then y = xhat *
 * gamma[c] + beta[c]; relu and accumulate as clt_ln_forward's and
 * clt_ln_backward's; the parameter sums ([C], written; dgamma and dbeta
 * NULL, a frozen layer's: not made) in parts of the batch where the
 * device's loops are capped. CLT_ERR_UNSUPPORTED where a
 * pixel's C channels pass the device's loop budget. runs16: the layout of
 * runs of 16 pixels in vectors (cl/norm.cl), else a pixel per item; the
 * same numbers to float rounding. part: NULL, or (with runs16, dx and
 * dgamma) 2 C N ceil(P / 16) floats of workspace (clt_lnc_part_floats): the
 * parameter sums are then taken in the input gradient's pass, each run's
 * into part, and summed from there (dx the same bits; dgamma and dbeta
 * the same sums in another order). */
clt_status clt_lnc_forward(clt_context *ctx, clt_tensor *y, clt_tensor *mean,
                           clt_tensor *rstd, const clt_tensor *x,
                           const clt_tensor *gamma, const clt_tensor *beta,
                           int64_t N, int64_t C, int64_t P, float eps,
                           bool relu, bool runs16);
clt_status clt_lnc_backward(clt_context *ctx, clt_tensor *dx,
                            clt_tensor *dgamma, clt_tensor *dbeta,
                            const clt_tensor *dy, const clt_tensor *x,
                            const clt_tensor *y, const clt_tensor *mean,
                            const clt_tensor *rstd, const clt_tensor *gamma,
                            int64_t N, int64_t C, int64_t P, bool relu,
                            bool accumulate, bool runs16, clt_tensor *part);
static inline int64_t clt_lnc_part_floats(int64_t N, int64_t C, int64_t P) {
  return 2 * C * N * ((P + 15) / 16);
}

/* Depthwise convolution (cl/depthwise.cl), PyTorch's Conv2d with groups
 * = win->C: x [N, C, H, W], w [C M, KH, KW], y [N, C M, OH, OW], output
 * channel o from input channel o / M; bias [C M] or NULL; relu: the
 * forward's output 0 where not above 0 (a batchnorm's ReLU where the
 * batchnorm is folded in for evaluation). The backward writes, where not
 * NULL, dw (NULL: a frozen layer's), db (the sums of dy per channel) and
 * dx (or adds into it where accumulate). Only the window's sizes, strides, padding and
 * dilations are read from win. Three layouts, measured by the layer: a
 * work-item per value (the weight sums a group per weight, in parts of
 * the batch where the device's loops are capped), or (rows) a work-item
 * per few rows or a plane, for CPU devices, whose weight gradient
 * sums each plane into work (clt_dw_work_floats) and then those in order,
 * a row four columns at a time with tested loads at its ends, or (rows,
 * eights) where the window allows, eight columns at a time from loads
 * that need no tests (3x3 windows of padding 0 or 1 from global memory,
 * other windows of up to 8 columns of stride 1 or 2 along the row from
 * rows copied into private memory: on POCL mostly 1.7-3.6x faster, on
 * llvmpipe often slower); rows only where clt_dw_rows_fit (else CLT_ERR_UNSUPPORTED). */
typedef enum clt_dw_layout {
  CLT_DW_PER_VALUE,
  CLT_DW_ROWS,
  CLT_DW_ROWS_EIGHTS
} clt_dw_layout;
bool clt_dw_rows_fit(const clt_context *ctx, int64_t M, const clt_window *w);
int64_t clt_dw_work_floats(int64_t N, int64_t M, const clt_window *w);
clt_status clt_dw_forward(clt_context *ctx, clt_tensor *y, const clt_tensor *x,
                          const clt_tensor *w, const clt_tensor *bias,
                          int64_t N, int64_t M, const clt_window *win,
                          clt_dw_layout layout, bool relu);
clt_status clt_dw_backward(clt_context *ctx, clt_tensor *dx, clt_tensor *dw,
                           clt_tensor *db, const clt_tensor *dy,
                           const clt_tensor *x, const clt_tensor *w,
                           int64_t N, int64_t M, const clt_window *win,
                           bool accumulate, clt_dw_layout layout,
                           clt_tensor *work);

/* y = x * mask, mask = 1/(1-p) where hash(seed, counter, i) >= p, else 0. */
clt_status clt_dropout_forward(clt_context *ctx, clt_tensor *y,
                               clt_tensor *mask, const clt_tensor *x,
                               int64_t n, float p, uint64_t seed,
                               uint64_t counter);
/* out = a * b elementwise. */
clt_status clt_mul_forward(clt_context *ctx, clt_tensor *out,
                           const clt_tensor *a, const clt_tensor *b, int64_t n,
                           bool accumulate);

/* Concatenation along channels: x [N, Cx, S] into channels [c_off,
 * c_off + Cx) of y [N, Cy, S]; backward copies (adds) that slice of y
 * into x. */
clt_status clt_channel_slice(clt_context *ctx, clt_tensor *y, clt_tensor *x,
                             int64_t N, int64_t Cy, int64_t Cx, int64_t c_off,
                             int64_t S, bool backward, bool accumulate);

#endif
