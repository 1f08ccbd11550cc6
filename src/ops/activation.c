/* Activations, forward and backward (cl/activation.cl). */
#include "ops/ops.h"

clt_status clt_activation_forward(clt_context *ctx, clt_tensor *y,
                                  const clt_tensor *x, int64_t n,
                                  clt_activation kind, float alpha) {
  return CLT_RUN_1D(ctx, CLT_K_activation_forward, (size_t)n, KT(y), KT(x),
                    KI(n), KI(kind), KF(alpha));
}

clt_status clt_activation_backward(clt_context *ctx, clt_tensor *dx,
                                   const clt_tensor *dy, const clt_tensor *x,
                                   const clt_tensor *y, int64_t n,
                                   clt_activation kind, float alpha,
                                   bool accumulate) {
  return CLT_RUN_1D(ctx, CLT_K_activation_backward, (size_t)n, KT(dx), KT(dy),
                    KT(x), KT(y), KI(n), KI(kind), KF(alpha), KI(accumulate));
}
