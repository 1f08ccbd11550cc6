/* Checks of device ops against host references on random inputs, one
 * file per kernel family under src/check/ (named as in cl/: the checks of
 * cl/pool.cl are in src/check/pool.c; GEMM, which is CLBlast's, in
 * gemm.c), run by the harness of check/harness.h. Each returns the largest
 * error found (relative to max(1, |reference|)) in *max_err. Shared by
 * `cltrain selftest` and the test suites; not part of the installed
 * library (the build makes them a static library of their own).
 *
 * The references are plain C in double precision, written from the ops'
 * definitions (PyTorch's, where the op has one), not from the kernels.
 * Every operand (integer ones included) is a view at an odd offset into a
 * larger buffer whose guard elements on both sides hold canaries, so a
 * kernel that ignores an offset shows as an error and one that writes
 * past its range fails the check (CLT_ERR_INTERNAL, naming the operand
 * and the element, on the context). A NaN or infinity where the
 * reference is finite gives an infinite error. */
#ifndef CLT_CHECK_CHECK_H
#define CLT_CHECK_CHECK_H

#include "ops/ops.h"

/* The checks that take `round16` run the op once as it is and, where
 * round16 is 1 or 2, once more asking it to round what it writes to fp16
 * (mode 1) and to save the halves too (mode 2; ops.h clt_round16):
 * check_run_rounded in check/harness.h says what the second run must
 * give. */

/* ---- cl/tensor.cl: check/tensor.c --------------------------------------- */
/* Fills an operand of n elements with 0.25. */
clt_status clt_check_fill(clt_context *ctx, int64_t n, double *max_err);
/* Copies the last third of one operand into the first third of another
 * through views of them (views of views). */
clt_status clt_check_copy_view(clt_context *ctx, int64_t n, double *max_err);
/* clt_unit_u8 on n bytes (every byte value where n >= 256). */
clt_status clt_check_unit_u8(clt_context *ctx, int64_t n, double *max_err);

/* ---- cl/half.cl: check/half.c ------------------------------------------- */
/* An operand of n floats over many binades to f16 and back, against the
 * host's IEEE rounding. */
clt_status clt_check_half_round_trip(clt_context *ctx, int64_t n,
                                     double *max_err);
/* n floats, some past the largest half, rounded to fp16 values in place
 * (clt_round_f16; clt_round_save_f16 with its fp16 copy: mixed
 * precision), against the host's rounding. */
clt_status clt_check_half_round_in_place(clt_context *ctx, int64_t n,
                                         double *max_err);
/* The loss scaler divides n finite gradients by its scale (4) and finds
 * no overflow. */
clt_status clt_check_loss_scaler_unscale(clt_context *ctx, int64_t n,
                                         double *max_err);

/* ---- GEMM (CLBlast): check/gemm.c --------------------------------------- */
/* c = alpha op(a) op(b) + beta c, batch times (strided batched), the
 * operands at odd offsets as everywhere. The error is scaled by
 * 1/sqrt(k): k products are summed per element. */
clt_status clt_check_gemm(clt_context *ctx, clt_transpose ta, clt_transpose tb,
                          int64_t m, int64_t n, int64_t k, float alpha,
                          float beta, int64_t batch, double *max_err);

/* The same in either form (colmajor: clt_gemm_strided_batched_colmajor). */
clt_status clt_check_gemm_form(clt_context *ctx, bool colmajor,
                               clt_transpose ta, clt_transpose tb, int64_t m,
                               int64_t n, int64_t k, float alpha, float beta,
                               int64_t batch, double *max_err);

/* The same by our own fp32 kernel in configuration `config`
 * (ops/gemm_blocked.h); CLT_ERR_UNSUPPORTED where it does not run the
 * transposes and n asked for. */
clt_status clt_check_gemm_blocked(clt_context *ctx, int config,
                                  clt_transpose ta, clt_transpose tb,
                                  int64_t m, int64_t n, int64_t k, float alpha,
                                  float beta, int64_t batch, double *max_err);
/* clt_gemm_blocked_bias (NT, one matrix): the product, the bias of its
 * columns and a ReLU where relu. */
clt_status clt_check_gemm_blocked_bias(clt_context *ctx, int config,
                                       int64_t m, int64_t n, int64_t k,
                                       float alpha, bool relu,
                                       double *max_err);

/* The same by the fp16 route's kernel (ops/gemm_mma.h) in tile
 * configuration `config`: the reference takes a and b rounded to fp16
 * (nearest even), the sums in double. CLT_ERR_UNSUPPORTED where the
 * context has no route. */
clt_status clt_check_gemm_mma(clt_context *ctx, int config, clt_transpose ta,
                              clt_transpose tb, int64_t m, int64_t n,
                              int64_t k, float alpha, float beta,
                              int64_t batch, double *max_err);

/* The same as 3xTF32 (clt_gemm_tf32x3_strided_batched) in configuration
 * `config`: the reference takes a and b as they are (f32's accuracy is
 * the claim), the sums in double. */
clt_status clt_check_gemm_tf32x3(clt_context *ctx, int config,
                                 clt_transpose ta, clt_transpose tb,
                                 int64_t m, int64_t n, int64_t k, float alpha,
                                 float beta, int64_t batch, double *max_err);

/* ---- cl/elementwise.cl: check/elementwise.c ----------------------------- */
/* out = a + b (+ out) over n elements. */
clt_status clt_check_add(clt_context *ctx, int64_t n, bool accumulate,
                         int round16, double *max_err);
/* out = max(a + b, 0) over n elements (a ReLU fused after a sum). */
clt_status clt_check_add_relu(clt_context *ctx, int64_t n, int round16,
                              double *max_err);
/* out = alpha * x (+ out) over n elements. */
clt_status clt_check_scale(clt_context *ctx, int64_t n, float alpha,
                           bool accumulate, int round16, double *max_err);
/* y += bias, then ReLU where relu (a fused ReLU). */
clt_status clt_check_bias_rows(clt_context *ctx, int64_t rows, int64_t cols,
                               bool relu, int round16, double *max_err);
clt_status clt_check_bias_channels(clt_context *ctx, int64_t batch,
                                   int64_t channels, int64_t spatial, bool relu,
                                   int round16, double *max_err);
/* y = (x - mean[c]) / sqrt(var[c]) over [batch, channels, spatial], one
 * channel's variance 0 (shifted only) where there are two or more. */
clt_status clt_check_normalize(clt_context *ctx, int64_t batch,
                               int64_t channels, int64_t spatial, int round16,
                               double *max_err);

/* Concatenation along channels: forward copies x [N, Cx, S] into channels
 * [c_off, c_off + Cx) of y [N, Cy, S] and leaves the rest of y alone;
 * backward copies (adds) that slice of y into x. */
clt_status clt_check_channel_slice(clt_context *ctx, int64_t N, int64_t Cy,
                                   int64_t Cx, int64_t c_off, int64_t S,
                                   bool backward, bool accumulate,
                                   double *max_err);

/* ---- cl/activation.cl: check/activation.c ------------------------------- */
/* Forward on x uniform in [-4, 4] (one element exactly 0). */
clt_status clt_check_activation_forward(clt_context *ctx, clt_activation kind,
                                        int64_t n, float alpha, int round16,
                                        double *max_err);
/* Backward against the analytic derivative computed in double from x; the
 * op is given y = the forward output rounded to float. */
clt_status clt_check_activation_backward(clt_context *ctx, clt_activation kind,
                                         int64_t n, float alpha,
                                         bool accumulate, int round16,
                                         double *max_err);

/* ---- cl/loss.cl: check/loss.c ------------------------------------------- */
/* Softmax of rows of x uniform in [-5, 5]. */
clt_status clt_check_softmax_forward(clt_context *ctx, int64_t rows,
                                     int64_t cols, double *max_err);
clt_status clt_check_softmax_backward(clt_context *ctx, int64_t rows,
                                      int64_t cols, bool accumulate,
                                      double *max_err);
/* Fused softmax cross-entropy on logits uniform in [-logit_scale,
 * logit_scale] with random labels: the per-row loss (against a double
 * log-sum-exp), the correctness flags and the gradient, all in one error.
 * A large logit_scale (1e4) shows the op is stable; then every other row
 * holds logits within 1 of +-logit_scale (large and nearly equal).
 * smoothing: the label smoothing (0: none); weighted: with random class
 * weights in [0.05, 4]. */
clt_status clt_check_softmax_xent(clt_context *ctx, int64_t rows, int64_t cols,
                                  float logit_scale, float smoothing,
                                  bool weighted, double *max_err);
/* Per-row loss, correct count and gradient of the fused sigmoid and binary
 * cross-entropy, soft and hard targets; logit_scale > 1: every other row's
 * logits near +-logit_scale. */
clt_status clt_check_sigmoid_xent(clt_context *ctx, int64_t rows, int64_t cols,
                                  float logit_scale, double *max_err);
/* Per-row loss, absolute error and gradient of a regression loss (kind:
 * clt_regression_kind; delta: huber's). */
clt_status clt_check_regression_loss(clt_context *ctx, int kind, float delta,
                                     int64_t rows, int64_t cols,
                                     double *max_err);

/* ---- cl/reduce.cl: check/reduce.c --------------------------------------- */
/* out[c] (+)= sum of x[outer, channels, inner] over outer and inner. */
clt_status clt_check_sum_channels(clt_context *ctx, int64_t outer,
                                  int64_t channels, int64_t inner,
                                  bool accumulate, double *max_err);
/* acc[index] += scale * sum(x[0..n)) into an accumulator of 5 values, so
 * that the four that must not change are checked too. */
clt_status clt_check_sum_into(clt_context *ctx, int64_t n, int index,
                              float scale, double *max_err);
/* clt_sum_columns_relu: dy [rows, cols] through a ReLU (in place) and its
 * column sums. */
clt_status clt_check_sum_columns_relu(clt_context *ctx, int64_t rows,
                                      int64_t cols, double *max_err);
/* clt_sum2_into: slots i0 and i1 at once. */
clt_status clt_check_sum2_into(clt_context *ctx, int64_t n, int i0, float s0,
                               int i1, float s1, double *max_err);
clt_status clt_check_sumsq_into(clt_context *ctx, int64_t n, int index,
                                double *max_err);

/* ---- cl/optim.cl: check/optim.c ----------------------------------------- */
/* `steps` steps of torch.optim.SGD from step 1 (hp->first is set by the
 * check: the first step starts the momentum buffer from the gradient, and
 * the device buffer holds NaN before it to prove it is not read). With
 * hp->momentum 0 the op gets no momentum buffer. Where hp->max_norm > 0,
 * each step's gradient is clipped as by torch.nn.utils.clip_grad_norm_,
 * through a norm buffer holding that gradient's sum of squares. Compares
 * the parameters and the momentum buffer. */
clt_status clt_check_sgd_step(clt_context *ctx, int64_t n,
                              const clt_sgd_params *hp, int steps,
                              double *max_err);
/* `steps` steps of torch.optim.Adam (hp->decoupled: AdamW) from zero
 * moments, steps numbered from 1 (hp->step is set by the check); clipping
 * as for SGD. Compares the parameters and both moments. */
clt_status clt_check_adam_step(clt_context *ctx, int64_t n,
                               const clt_adam_params *hp, int steps,
                               double *max_err);
/* `steps` steps of torch.optim.RMSprop from zero state; the op gets a
 * momentum buffer only where hp->momentum > 0 and a mean gradient only
 * where hp->centered; clipping as for SGD. Compares the parameters and
 * every state buffer. */
clt_status clt_check_rmsprop_step(clt_context *ctx, int64_t n,
                                  const clt_rmsprop_params *hp, int steps,
                                  double *max_err);

/* ---- cl/conv.cl: check/conv.c ------------------------------------------- */
/* The window checks (here and pooling's) take the geometry in w without
 * w->OH and w->OW, which they derive by PyTorch's formula; a window that
 * does not fit gives CLT_ERR_INVALID_ARGUMENT. */

/* col [C*KH*KW, batch*OH*OW] = im2col(x [batch, C, H, W]), as
 * torch.nn.functional.unfold: zeros where a window reads padding (w->rows:
 * its transpose, row [batch*OH*OW, C*KH*KW]). */
clt_status clt_check_im2col(clt_context *ctx, int64_t batch,
                            const clt_window *w, double *max_err);
/* dx (+)= col2im(dcol), as torch.nn.functional.fold: every column element
 * added into the input element it was read from (w->rows: dcol laid out as
 * row). The reference scatters; the op may gather. */
clt_status clt_check_col2im(clt_context *ctx, int64_t batch,
                            const clt_window *w, bool accumulate, int round16,
                            double *max_err);
/* y [B, A, S] = x [A, B, S] (+ bias[a]), with a fused ReLU (relu, a
 * clt_swap_relu: its forward, or its gradient by a mask holding zeros). */
clt_status clt_check_swap_axes01(clt_context *ctx, int64_t A, int64_t B,
                                 int64_t S, bool bias, int relu, int round16,
                                 double *max_err);
/* y [N, P, C] = x [N, C, P], through a ReLU's gradient (a mask holding
 * zeros) where relu_grad. */
clt_status clt_check_nchw_to_nhwc(clt_context *ctx, int64_t N, int64_t C,
                                  int64_t P, bool relu_grad,
                                  double *max_err);

/* The direct convolution (w->per_element: its layout): y [batch, F, OH,
 * OW] = weight [F, C, KH, KW] applied to x (+ bias[f]) (ReLU'd where
 * relu), as torch.nn.functional.conv2d. */
clt_status clt_check_conv_direct_forward(clt_context *ctx, int64_t batch,
                                         int64_t F, const clt_window *w,
                                         bool bias, bool relu, int round16,
                                         double *max_err);
/* Its weight gradient, and where bias the bias's (the bias operand is
 * left alone otherwise), from x and dy (through a ReLU's gradient, a mask
 * holding zeros, where relu), as autograd gives them. */
clt_status clt_check_conv_direct_wgrad(clt_context *ctx, int64_t batch,
                                       int64_t F, const clt_window *w,
                                       bool bias, bool relu,
                                       double *max_err);

/* The implicit-GEMM convolution (ops/conv_implicit.h) in tile
 * configuration `config` (an fp16 one: on operands rounded to fp16, in a
 * context with the fp16 route): the forward as
 * clt_check_conv_direct_forward's;
 * the data gradient dx (= or +=, accumulate) from dy; the weight gradient
 * from x and dy, its k range in at most `splits` chunks; against the host
 * reference in double. */
clt_status clt_check_conv_implicit_forward(clt_context *ctx, int config,
                                           int64_t batch, int64_t F,
                                           const clt_window *w, bool bias,
                                           bool relu, int round16,
                                           double *max_err);
clt_status clt_check_conv_implicit_dgrad(clt_context *ctx, int config,
                                         int64_t batch, int64_t F,
                                         const clt_window *w, bool accumulate,
                                         int round16, double *max_err);
clt_status clt_check_conv_implicit_wgrad(clt_context *ctx, int config,
                                         int splits, int64_t batch,
                                         int64_t F, const clt_window *w,
                                         double *max_err);

/* The tiled direct convolution (stride 1; ops.h clt_conv_tiled_forward)
 * in blocks of v = 16 or 8 columns: the forward as
 * clt_check_conv_direct_forward's, the data and weight gradients as
 * clt_check_conv_implicit_dgrad's and _wgrad's. */
clt_status clt_check_conv_tiled_forward(clt_context *ctx, int v,
                                        int64_t batch, int64_t F,
                                        const clt_window *w, bool bias,
                                        bool relu, int round16,
                                        double *max_err);
clt_status clt_check_conv_tiled_dgrad(clt_context *ctx, int v, int64_t batch,
                                      int64_t F, const clt_window *w,
                                      bool accumulate, int round16,
                                      double *max_err);
clt_status clt_check_conv_tiled_wgrad(clt_context *ctx, int v, int64_t batch,
                                      int64_t F, const clt_window *w,
                                      double *max_err);

/* ---- cl/pool.cl: check/pool.c ------------------------------------------- */
/* Pooling over w->C planes, as torch.nn.MaxPool2d / AvgPool2d (ceil_mode
 * off). Pooling has no dilation (w->dil_* are ignored) and, as in PyTorch,
 * padding must be at most half the window. */

/* y and argmax (the index ih * W + iw within the plane, i32). Inputs are
 * uniform on odd planes and take only 9 values on even ones, so windows
 * hold ties: the first maximum in row-major order wins, as in PyTorch.
 * Where there are 2 planes or more, the last holds one NaN, which every
 * window over it returns (argmax pointing at it). An argmax that differs
 * counts as an error of 1. */
clt_status clt_check_maxpool_forward(clt_context *ctx, const clt_window *w,
                                     int round16, double *max_err);
/* dx (+)= dy routed through argmax, given the host's argmax of random
 * inputs (overlapping windows share maxima). */
clt_status clt_check_maxpool_backward(clt_context *ctx, const clt_window *w,
                                      bool accumulate, int round16,
                                      double *max_err);
/* The divisor counts padding (count_include_pad=True) but not what lies
 * past the padded edge. */
clt_status clt_check_avgpool_forward(clt_context *ctx, const clt_window *w,
                                     int round16, double *max_err);
clt_status clt_check_avgpool_backward(clt_context *ctx, const clt_window *w,
                                      bool accumulate, int round16,
                                      double *max_err);

/* ---- cl/norm.cl: check/norm.c ------------------------------------------- */
/* Batch normalisation of x [N, C, HW] as torch.nn.BatchNorm1d/2d. Inputs
 * are uniform in [-1, 1] plus a per-channel offset (up to +-4), so a
 * one-pass variance would lose digits. */

/* mean[c] and the biased var[c] over N and HW, `want` parts asked of the
 * split reductions (clt_bn_stats; 1: the per-channel kernel). */
clt_status clt_check_bn_stats(clt_context *ctx, int64_t N, int64_t C,
                              int64_t HW, int64_t want, double *max_err);
/* running stats moved by momentum towards the batch's (the unbiased
 * variance, M / (M - 1), for M > 1 elements per channel), and
 * num_batches_tracked + 1. */
clt_status clt_check_bn_update_running(clt_context *ctx, int64_t C, int64_t M,
                                       float momentum, double *max_err);
/* y = (x - mean) / sqrt(var + eps) * gamma + beta, var in [0.25, 2],
 * then max(y, 0) where relu (a fused ReLU); runs16: the layout in runs of
 * 16 (clt_bn_forward). */
clt_status clt_check_bn_forward(clt_context *ctx, int64_t N, int64_t C,
                                int64_t HW, float eps, bool relu, bool runs16,
                                int round16, double *max_err);
/* Evaluation's batch norm folded into the convolution before it
 * (clt_bn_fold): F filters of per weights scaled by gamma / sqrt(var +
 * eps), and the bias (or 0 without has_b) carried through the running
 * statistics, gamma and beta. */
clt_status clt_check_bn_fold(clt_context *ctx, int64_t F, int64_t per,
                             float eps, bool has_b, double *max_err);
/* dgamma = sum dy xhat, dbeta = sum dy, and dx (+)=: in training, the
 * gradient through the batch statistics (the op is given mean / var = the
 * batch's, rounded to float); in evaluation, gamma dy / sqrt(var + eps)
 * with running statistics. A second call with dx NULL must still give
 * dgamma and dbeta. want: as clt_check_bn_stats; runs16: dx's layout, as
 * clt_check_bn_forward's. */
clt_status clt_check_bn_backward(clt_context *ctx, int64_t N, int64_t C,
                                 int64_t HW, float eps, bool training,
                                 bool accumulate, int64_t want, bool runs16,
                                 int round16, double *max_err);

/* Training mode in one kernel (clt_bn_train_forward, _backward), the
 * group's items sharing each plane's runs of 16 or (planes) taking whole
 * planes. Forward: the batch's mean and biased variance, the running
 * statistics moved as clt_check_bn_update_running's (num_batches_tracked
 * + 1), and y from the batch's statistics, max(y, 0) where relu.
 * Backward: dgamma, dbeta and dx (+)= as clt_check_bn_backward's in
 * training, with dy taken as 0 where relu and a fused ReLU's output (an
 * operand of its own, half of it <= 0) is not > 0; dy is left as it
 * was. */
clt_status clt_check_bn_train_forward(clt_context *ctx, int64_t N, int64_t C,
                                      int64_t HW, float eps, float momentum,
                                      bool relu, bool planes, int round16,
                                      double *max_err);
clt_status clt_check_bn_train_backward(clt_context *ctx, int64_t N,
                                       int64_t C, int64_t HW, float eps,
                                       bool relu, bool accumulate,
                                       bool planes, int round16,
                                       double *max_err);

/* Layer normalisation of x [N, D] as torch.nn.LayerNorm over each
 * sample's D values (clt_ln_forward): y, the means and the rstds against
 * a reference in double; inputs carry a per-sample offset (up to +-4).
 * relu: the fused ReLU (y = max(y, 0); backward, dy through a ReLU whose
 * output is an operand of its own). clt_check_ln_backward: dgamma, dbeta
 * and dx (+)= from the forward's own statistics. runs16: the layout
 * (clt_ln_forward); loop_limit, where not 0, is set on the context for
 * the check (and restored) to cut the parameter sums into parts. */
clt_status clt_check_ln_forward(clt_context *ctx, int64_t N, int64_t D,
                                float eps, bool relu, bool runs16,
                                double *max_err);
clt_status clt_check_ln_backward(clt_context *ctx, int64_t N, int64_t D,
                                 float eps, bool relu, bool accumulate,
                                 bool runs16, int64_t loop_limit,
                                 double *max_err);
/* The same over each pixel's C channels of x [N, C, P] (clt_lnc_forward,
 * clt_lnc_backward: layernorm over=channels), gamma and beta [C]; runs16
 * their layout of runs of 16 pixels; the backward's layout 0 a pixel per
 * item, 1 runs of 16, 2 runs of 16 with the parameter sums taken in the
 * input gradient's pass (clt_lnc_backward's part). */
clt_status clt_check_lnc_forward(clt_context *ctx, int64_t N, int64_t C,
                                 int64_t P, float eps, bool relu, bool runs16,
                                 double *max_err);
clt_status clt_check_lnc_backward(clt_context *ctx, int64_t N, int64_t C,
                                  int64_t P, float eps, bool relu,
                                  bool accumulate, int layout,
                                  int64_t loop_limit, double *max_err);

/* ---- cl/depthwise.cl: check/depthwise.c --------------------------------- */
/* The depthwise convolution of x [N, C, H, W] by w [C M, KH, KW] (+ bias
 * per output channel), as torch.nn.functional.conv2d(groups=C)
 * and, where relu, 0 where not above 0 (clt_dw_forward); its backward
 * (clt_dw_backward): dx (+)=, dw and, where bias, db, from dy, in the
 * given layout (clt_dw_forward). loop_limit, where
 * not 0, is set on the context for the check (and restored) to cut the
 * weight sums into parts. */
clt_status clt_check_dw_forward(clt_context *ctx, int64_t N, int64_t M,
                                const clt_window *w, bool bias, bool relu,
                                clt_dw_layout layout, double *max_err);
clt_status clt_check_dw_backward(clt_context *ctx, int64_t N, int64_t M,
                                 const clt_window *w, bool bias,
                                 bool accumulate, clt_dw_layout layout,
                                 int64_t loop_limit, double *max_err);

/* ---- cl/dropout.cl: check/dropout.c ------------------------------------- */
/* Dropout of n elements with rate p: each mask element is 0 or
 * 1 / (1 - p), y = x * mask; the kept count is within 5 standard
 * deviations of n (1 - p); the same seed and counter give the same mask
 * (bit for bit) again, into other buffers at another offset; a counter
 * or a seed that differs (in its low or its high 32 bits) gives another
 * mask where n is large enough to tell. A failed statistical or
 * determinism test counts as an error of 1. */
clt_status clt_check_dropout(clt_context *ctx, int64_t n, float p,
                             uint64_t seed, uint64_t counter, double *max_err);
/* out = a * b (+ out) over n elements. */
clt_status clt_check_mul(clt_context *ctx, int64_t n, bool accumulate,
                         double *max_err);

/* ---- cltrain selftest: check/selftest.c --------------------------------- */
/* One self-test case: a name and a check on small fixed shapes. */
typedef struct clt_selftest_case {
  const char *name;
  clt_status (*run)(clt_context *ctx, double *max_err);
  double tolerance;
  bool fp16_route; /* runs only where the device has the fp16 route
                      (ops/gemm_mma.h) */
} clt_selftest_case;

extern const clt_selftest_case clt_selftest_cases[];
extern const int clt_selftest_case_count;

#endif
