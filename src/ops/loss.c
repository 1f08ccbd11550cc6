/* Softmax and the losses (cl/loss.cl). */
#include "ops/ops.h"

clt_status clt_softmax_forward(clt_context *ctx, clt_tensor *y,
                               const clt_tensor *x, int64_t rows,
                               int64_t cols) {
  return CLT_RUN_1D(ctx, CLT_K_softmax_rows, (size_t)rows, KT(y), KT(x),
                    KI(rows), KI(cols));
}

clt_status clt_softmax_backward(clt_context *ctx, clt_tensor *dx,
                                const clt_tensor *dy, const clt_tensor *y,
                                int64_t rows, int64_t cols, bool accumulate) {
  return CLT_RUN_1D(ctx, CLT_K_softmax_rows_backward, (size_t)rows, KT(dx),
                    KT(dy), KT(y), KI(rows), KI(cols), KI(accumulate));
}

clt_status clt_softmax_xent_forward_backward(
    clt_context *ctx, clt_tensor *loss_rows, clt_tensor *correct_rows,
    clt_tensor *grad, const clt_tensor *x, const clt_tensor *labels,
    int64_t rows, int64_t cols, float grad_scale) {
  if (labels->dtype != CLT_I32)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "softmax cross-entropy: labels must be i32");
  return CLT_RUN_1D(ctx, CLT_K_softmax_xent, (size_t)rows, KT(loss_rows),
                    KT(correct_rows), KT(grad), KT(x), KT(labels), KI(rows),
                    KI(cols), KF(grad_scale));
}

clt_status clt_mse_forward_backward(clt_context *ctx, clt_tensor *loss_rows,
                                    clt_tensor *grad, const clt_tensor *p,
                                    const clt_tensor *t, int64_t rows,
                                    int64_t cols, float grad_scale) {
  return CLT_RUN_1D(ctx, CLT_K_mse, (size_t)rows, KT(loss_rows), KT(grad),
                    KT(p), KT(t), KI(rows), KI(cols), KF(grad_scale));
}
