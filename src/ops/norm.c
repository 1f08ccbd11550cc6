/* Batch normalisation (cl/norm.cl). */
#include "ops/ops.h"

/* The element-wise kernels' range: (spatial position, plane), in groups of
 * at most 64 items, a row of a plane (or several small planes) each. */
static void plane_range(const clt_context *ctx, int64_t planes, int64_t HW,
                        size_t global[2], size_t local[2]) {
  size_t most = ctx->work_group < 64 ? ctx->work_group : 64;
  local[0] = (size_t)HW < most ? (size_t)HW : most;
  local[1] = most / local[0];
  global[0] = (size_t)HW;
  global[1] = (size_t)planes;
}

clt_status clt_bn_stats(clt_context *ctx, clt_tensor *mean, clt_tensor *var,
                        const clt_tensor *x, int64_t N, int64_t C,
                        int64_t HW) {
  size_t local = ctx->work_group, global = local * (size_t)C;
  return CLT_RUN(ctx, CLT_K_bn_stats, 1, &global, &local, KT(mean), KT(var),
                 KT(x), KI(N), KI(C), KI(HW));
}

clt_status clt_bn_update_running(clt_context *ctx, clt_tensor *rmean,
                                 clt_tensor *rvar, clt_tensor *tracked,
                                 const clt_tensor *mean, const clt_tensor *var,
                                 int64_t C, int64_t M, float momentum) {
  return CLT_RUN_1D(ctx, CLT_K_bn_update_running, (size_t)C, KT(rmean),
                    KT(rvar), KT(tracked), KT(mean), KT(var), KI(C), KI(M),
                    KF(momentum));
}

clt_status clt_bn_forward(clt_context *ctx, clt_tensor *y, const clt_tensor *x,
                          const clt_tensor *mean, const clt_tensor *var,
                          const clt_tensor *gamma, const clt_tensor *beta,
                          int64_t N, int64_t C, int64_t HW, float eps) {
  size_t global[2], local[2];
  plane_range(ctx, N * C, HW, global, local);
  return CLT_RUN(ctx, CLT_K_bn_apply, 2, global, local, KT(y), KT(x),
                 KT(mean), KT(var), KT(gamma), KT(beta), KI(N), KI(C), KI(HW),
                 KF(eps));
}

clt_status clt_bn_backward(clt_context *ctx, clt_tensor *dx,
                           clt_tensor *dgamma, clt_tensor *dbeta,
                           const clt_tensor *dy, const clt_tensor *x,
                           const clt_tensor *mean, const clt_tensor *var,
                           const clt_tensor *gamma, int64_t N, int64_t C,
                           int64_t HW, float eps, bool training,
                           bool accumulate) {
  size_t local = ctx->work_group, global = local * (size_t)C;
  CLT_TRY(CLT_RUN(ctx, CLT_K_bn_backward_reduce, 1, &global, &local,
                  KT(dgamma), KT(dbeta), KT(dy), KT(x), KT(mean), KT(var),
                  KI(N), KI(C), KI(HW), KF(eps)));
  if (!dx) return CLT_OK;
  size_t g2[2], l2[2];
  plane_range(ctx, N * C, HW, g2, l2);
  return CLT_RUN(ctx, CLT_K_bn_backward_apply, 2, g2, l2, KT(dx), KT(dy),
                 KT(x), KT(mean), KT(var), KT(gamma), KT(dgamma), KT(dbeta),
                 KI(N), KI(C), KI(HW), KF(eps), KI(training), KI(accumulate));
}
