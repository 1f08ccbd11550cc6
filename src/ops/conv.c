/* im2col / col2im and the axis swap (cl/conv.cl). */
#include "ops/ops.h"

#define WINDOW_ARGS(w)                                                         \
  KI((w)->C), KI((w)->H), KI((w)->W), KI((w)->KH), KI((w)->KW), KI((w)->OH),   \
      KI((w)->OW), KI((w)->pad_h), KI((w)->pad_w), KI((w)->stride_h),          \
      KI((w)->stride_w), KI((w)->dil_h), KI((w)->dil_w)

clt_status clt_im2col_forward(clt_context *ctx, clt_tensor *col,
                              const clt_tensor *x, int64_t batch,
                              const clt_window *w) {
  int64_t n = batch * w->C * w->KH * w->KW * w->OH; /* rows of col */
  return CLT_RUN_1D(ctx, CLT_K_im2col, (size_t)n, KT(col), KT(x), KI(batch),
                    WINDOW_ARGS(w));
}

clt_status clt_col2im_backward(clt_context *ctx, clt_tensor *dx,
                               const clt_tensor *dcol, int64_t batch,
                               const clt_window *w, bool accumulate) {
  int64_t n = batch * w->C * w->H; /* rows of dx */
  return CLT_RUN_1D(ctx, CLT_K_col2im, (size_t)n, KT(dx), KT(dcol), KI(batch),
                    WINDOW_ARGS(w), KI(accumulate));
}

clt_status clt_swap_axes01(clt_context *ctx, clt_tensor *y,
                           const clt_tensor *x, const clt_tensor *bias,
                           int64_t A, int64_t B, int64_t S) {
  /* Without a bias, x stands in for the unread bias buffer. */
  return CLT_RUN_1D(ctx, CLT_K_swap_axes01, (size_t)(A * B), KT(y), KT(x),
                    KT(bias ? bias : x), KI(A), KI(B), KI(S), KI(bias != NULL));
}
