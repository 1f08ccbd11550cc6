/* Max and average pooling (cl/pool.cl); w->C counts N*C planes.
 * w->per_element picks max pooling's kernels with a work-item per element
 * (average pooling's are per element already). */
#include "ops/ops.h"

#define POOL_ARGS(w)                                                           \
  KI((w)->C), KI((w)->H), KI((w)->W), KI((w)->OH), KI((w)->OW), KI((w)->KH),   \
      KI((w)->KW), KI((w)->pad_h), KI((w)->pad_w), KI((w)->stride_h),          \
      KI((w)->stride_w)

clt_status clt_maxpool_forward(clt_context *ctx, clt_tensor *y,
                               clt_tensor *argmax, const clt_tensor *x,
                               const clt_window *w) {
  if (w->per_element)
    return CLT_RUN_1D(ctx, CLT_K_maxpool_forward_elems,
                      (size_t)(w->C * w->OH * w->OW), KT(y), KT(argmax), KT(x),
                      POOL_ARGS(w));
  return CLT_RUN_1D(ctx, CLT_K_maxpool_forward, (size_t)(w->C * w->OH),
                    KT(y), KT(argmax), KT(x), POOL_ARGS(w));
}

clt_status clt_maxpool_backward(clt_context *ctx, clt_tensor *dx,
                                const clt_tensor *dy, const clt_tensor *argmax,
                                const clt_window *w, bool accumulate) {
  if (w->stride_h >= w->KH && w->stride_w >= w->KW) {
    /* Windows do not overlap: a scatter, far cheaper than the gather (the
     * per-row kernel clears dx itself). */
    if (!w->per_element)
      return CLT_RUN_1D(ctx, CLT_K_maxpool_backward_scatter,
                        (size_t)(w->C * w->OH), KT(dx), KT(dy), KT(argmax),
                        KI(w->C), KI(w->H), KI(w->W), KI(w->OH), KI(w->OW),
                        KI(w->pad_h), KI(w->stride_h), KI(accumulate));
    if (!accumulate) {
      clt_tensor plane = clt_tensor_slice_1d(dx, 0, w->C * w->H * w->W);
      CLT_TRY(clt_tensor_fill(&plane, 0.0));
    }
    return CLT_RUN_1D(ctx, CLT_K_maxpool_backward_scatter_elems,
                      (size_t)(w->C * w->OH * w->OW), KT(dx), KT(dy),
                      KT(argmax), KI(w->C), KI(w->H), KI(w->W), KI(w->OH),
                      KI(w->OW));
  }
  if (w->per_element)
    return CLT_RUN_1D(ctx, CLT_K_maxpool_backward_elems,
                      (size_t)(w->C * w->H * w->W), KT(dx), KT(dy),
                      KT(argmax), POOL_ARGS(w), KI(accumulate));
  return CLT_RUN_1D(ctx, CLT_K_maxpool_backward, (size_t)(w->C * w->H),
                    KT(dx), KT(dy), KT(argmax), POOL_ARGS(w), KI(accumulate));
}

clt_status clt_avgpool_forward(clt_context *ctx, clt_tensor *y,
                               const clt_tensor *x, const clt_window *w) {
  return CLT_RUN_1D(ctx, CLT_K_avgpool_forward, (size_t)(w->C * w->OH * w->OW),
                    KT(y), KT(x), POOL_ARGS(w));
}

clt_status clt_avgpool_backward(clt_context *ctx, clt_tensor *dx,
                                const clt_tensor *dy, const clt_window *w,
                                bool accumulate) {
  return CLT_RUN_1D(ctx, CLT_K_avgpool_backward, (size_t)(w->C * w->H * w->W),
                    KT(dx), KT(dy), POOL_ARGS(w), KI(accumulate));
}
