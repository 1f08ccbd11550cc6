/* Softmax and the losses (cl/loss.cl). */
#include "ops/ops.h"

/* Whether a row of cols is longer than one work-item's loops may be
 * (ops.h clt_loop_per): then a work-group of ctx->work_group items takes
 * it (the _group kernels), global and local set for that. */
static bool by_groups(const clt_context *ctx, int64_t rows, int64_t cols,
                      size_t *global, size_t *local) {
  *local = ctx->work_group;
  *global = *local * (size_t)rows;
  return 3 * cols + 3 > ctx->loop_limit;
}

clt_status clt_softmax_forward(clt_context *ctx, clt_tensor *y,
                               const clt_tensor *x, int64_t rows,
                               int64_t cols) {
  size_t global, local;
  if (by_groups(ctx, rows, cols, &global, &local))
    return CLT_RUN(ctx, CLT_K_softmax_rows_group, 1, &global, &local, KT(y),
                   KT(x), KI(rows), KI(cols));
  return CLT_RUN_1D(ctx, CLT_K_softmax_rows, (size_t)rows, KT(y), KT(x),
                    KI(rows), KI(cols));
}

clt_status clt_softmax_backward(clt_context *ctx, clt_tensor *dx,
                                const clt_tensor *dy, const clt_tensor *y,
                                int64_t rows, int64_t cols, bool accumulate) {
  size_t global, local;
  if (by_groups(ctx, rows, cols, &global, &local))
    return CLT_RUN(ctx, CLT_K_softmax_rows_backward_group, 1, &global, &local,
                   KT(dx), KT(dy), KT(y), KI(rows), KI(cols), KI(accumulate));
  return CLT_RUN_1D(ctx, CLT_K_softmax_rows_backward, (size_t)rows, KT(dx),
                    KT(dy), KT(y), KI(rows), KI(cols), KI(accumulate));
}

clt_status clt_softmax_xent_forward_backward(
    clt_context *ctx, clt_tensor *loss_rows, clt_tensor *correct_rows,
    clt_tensor *grad, const clt_tensor *x, const clt_tensor *labels,
    const clt_tensor *class_weights, int64_t rows, int64_t cols,
    float grad_scale, float smoothing) {
  if (labels->dtype != CLT_I32)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "softmax cross-entropy: labels must be i32");
  if (class_weights && (class_weights->dtype != CLT_F32 ||
                        class_weights->numel < cols))
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "softmax cross-entropy: class weights must be %lld "
                        "f32 values",
                        (long long)cols);
  /* unweighted: any buffer stands in for the weights, never read */
  const clt_tensor *cw = class_weights ? class_weights : x;
  int weighted = class_weights != NULL;
  size_t global, local;
  if (by_groups(ctx, rows, cols, &global, &local))
    return CLT_RUN(ctx, CLT_K_softmax_xent_group, 1, &global, &local,
                   KT(loss_rows), KT(correct_rows), KT(grad), KT(x), KT(labels),
                   KT(cw), KI(rows), KI(cols), KF(grad_scale), KF(smoothing),
                   KI(weighted));
  return CLT_RUN_1D(ctx, CLT_K_softmax_xent, (size_t)rows, KT(loss_rows),
                    KT(correct_rows), KT(grad), KT(x), KT(labels), KT(cw),
                    KI(rows), KI(cols), KF(grad_scale), KF(smoothing),
                    KI(weighted));
}

clt_status clt_regression_loss_forward_backward(
    clt_context *ctx, clt_regression_kind kind, float delta,
    clt_tensor *loss_rows, clt_tensor *abs_rows, clt_tensor *grad,
    const clt_tensor *p, const clt_tensor *t, int64_t rows, int64_t cols,
    float grad_scale) {
  size_t global, local;
  if (by_groups(ctx, rows, cols, &global, &local))
    return CLT_RUN(ctx, CLT_K_regression_loss_group, 1, &global, &local,
                   KT(loss_rows), KT(abs_rows), KT(grad), KT(p), KT(t),
                   KI(rows), KI(cols), KF(grad_scale), KI(kind), KF(delta));
  return CLT_RUN_1D(ctx, CLT_K_regression_loss, (size_t)rows, KT(loss_rows),
                    KT(abs_rows), KT(grad), KT(p), KT(t), KI(rows), KI(cols),
                    KF(grad_scale), KI(kind), KF(delta));
}

clt_status clt_sigmoid_xent_forward_backward(
    clt_context *ctx, clt_tensor *loss_rows, clt_tensor *correct_rows,
    clt_tensor *grad, const clt_tensor *x, const clt_tensor *t, int64_t rows,
    int64_t cols, float grad_scale) {
  size_t global, local;
  if (by_groups(ctx, rows, cols, &global, &local))
    return CLT_RUN(ctx, CLT_K_sigmoid_xent_group, 1, &global, &local,
                   KT(loss_rows), KT(correct_rows), KT(grad), KT(x), KT(t),
                   KI(rows), KI(cols), KF(grad_scale));
  return CLT_RUN_1D(ctx, CLT_K_sigmoid_xent, (size_t)rows, KT(loss_rows),
                    KT(correct_rows), KT(grad), KT(x), KT(t), KI(rows),
                    KI(cols), KF(grad_scale));
}
