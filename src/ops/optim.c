/* Optimizer updates (cl/optim.cl). */
#include <math.h>

#include "ops/ops.h"

clt_status clt_sgd_step(clt_context *ctx, clt_tensor *p, const clt_tensor *g,
                        clt_tensor *momentum_buf, const clt_tensor *norm_sq,
                        const clt_sgd_params *hp) {
  /* Without momentum the buffer is never read; p stands in for it. */
  const clt_tensor *buf = momentum_buf ? momentum_buf : p;
  /* The _clip kernel reads the norm; the other never does. */
  clt_kernel_id k = hp->max_norm > 0.0f ? CLT_K_sgd_step_clip : CLT_K_sgd_step;
  return CLT_RUN_ELEMS(ctx, k, (size_t)p->numel, KT(p), KT(g), KT(buf),
                       KT(norm_sq), KI(p->numel), KF(hp->lr),
                       KF(momentum_buf ? hp->momentum : 0.0f),
                       KF(hp->dampening), KF(hp->weight_decay),
                       KI(hp->nesterov), KI(hp->first), KF(hp->max_norm));
}

clt_status clt_adam_step(clt_context *ctx, clt_tensor *p, const clt_tensor *g,
                         clt_tensor *m, clt_tensor *v,
                         const clt_tensor *norm_sq, const clt_adam_params *hp) {
  double t = (double)hp->step;
  float bias1 = (float)(1.0 - pow(hp->beta1, t));
  float bias2 = (float)(1.0 - pow(hp->beta2, t));
  clt_kernel_id k =
      hp->max_norm > 0.0f ? CLT_K_adam_step_clip : CLT_K_adam_step;
  return CLT_RUN_ELEMS(ctx, k, (size_t)p->numel, KT(p), KT(g), KT(m), KT(v),
                       KT(norm_sq), KI(p->numel), KF(hp->lr), KF(hp->beta1),
                       KF(hp->beta2), KF(hp->eps), KF(hp->weight_decay),
                       KI(hp->decoupled), KF(bias1), KF(bias2),
                       KF(hp->max_norm));
}

clt_status clt_rmsprop_step(clt_context *ctx, clt_tensor *p,
                            const clt_tensor *g, clt_tensor *sq,
                            clt_tensor *buf, clt_tensor *avg,
                            const clt_tensor *norm_sq,
                            const clt_rmsprop_params *hp) {
  /* A buffer the kernel does not touch: sq stands in for it. */
  float momentum = buf ? hp->momentum : 0.0f;
  int centered = avg != NULL && hp->centered;
  clt_kernel_id k =
      hp->max_norm > 0.0f ? CLT_K_rmsprop_step_clip : CLT_K_rmsprop_step;
  return CLT_RUN_ELEMS(ctx, k, (size_t)p->numel, KT(p), KT(g), KT(sq),
                       KT(buf ? buf : sq), KT(avg ? avg : sq), KT(norm_sq),
                       KI(p->numel), KF(hp->lr), KF(hp->alpha), KF(hp->eps),
                       KF(hp->weight_decay), KF(momentum), KI(centered),
                       KF(hp->max_norm));
}
