/* Activations, forward and backward (cl/activation.cl): a kernel per kind. */
#include "ops/ops.h"

static clt_kernel_id forward_kernel(clt_activation kind) {
  switch (kind) {
  case CLT_ACT_RELU: return CLT_K_activation_forward_relu;
  case CLT_ACT_LEAKY_RELU: return CLT_K_activation_forward_leaky_relu;
  case CLT_ACT_SIGMOID: return CLT_K_activation_forward_sigmoid;
  case CLT_ACT_TANH: return CLT_K_activation_forward_tanh;
  case CLT_ACT_SILU: return CLT_K_activation_forward_silu;
  case CLT_ACT_ELU: return CLT_K_activation_forward_elu;
  case CLT_ACT_SOFTPLUS: return CLT_K_activation_forward_softplus;
  default: return CLT_K_activation_forward_gelu;
  }
}

static clt_kernel_id backward_kernel(clt_activation kind) {
  switch (kind) {
  case CLT_ACT_RELU: return CLT_K_activation_backward_relu;
  case CLT_ACT_LEAKY_RELU: return CLT_K_activation_backward_leaky_relu;
  case CLT_ACT_SIGMOID: return CLT_K_activation_backward_sigmoid;
  case CLT_ACT_TANH: return CLT_K_activation_backward_tanh;
  case CLT_ACT_SILU: return CLT_K_activation_backward_silu;
  case CLT_ACT_ELU: return CLT_K_activation_backward_elu;
  case CLT_ACT_SOFTPLUS: return CLT_K_activation_backward_softplus;
  default: return CLT_K_activation_backward_gelu;
  }
}

clt_status clt_activation_forward(clt_context *ctx, clt_tensor *y,
                                  const clt_tensor *x, int64_t n,
                                  clt_activation kind, float alpha,
                                  const clt_round16 *round) {
  return CLT_RUN_ELEMS(ctx, KR_ID(forward_kernel(kind), round), (size_t)n,
                       KT(y), KT(x), KI(n), KF(alpha), KR(round, y));
}

clt_status clt_activation_backward(clt_context *ctx, clt_tensor *dx,
                                   const clt_tensor *dy, const clt_tensor *x,
                                   const clt_tensor *y, int64_t n,
                                   clt_activation kind, float alpha,
                                   bool accumulate, const clt_round16 *round) {
  return CLT_RUN_ELEMS(ctx, KR_ID(backward_kernel(kind), round), (size_t)n,
                       KT(dx), KT(dy), KT(x), KT(y), KI(n), KF(alpha),
                       KI(accumulate), KR(round, dx));
}
