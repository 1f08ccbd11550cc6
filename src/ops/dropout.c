/* Dropout and the elementwise product (cl/dropout.cl). */
#include "ops/ops.h"

clt_status clt_dropout_forward(clt_context *ctx, clt_tensor *y,
                               clt_tensor *mask, const clt_tensor *x,
                               int64_t n, float p, uint64_t seed,
                               uint64_t counter) {
  return CLT_RUN_1D(ctx, CLT_K_dropout_forward, (size_t)n, KT(y), KT(mask),
                    KT(x), KI(n), KF(p), KU(seed), KU(counter));
}

clt_status clt_mul_forward(clt_context *ctx, clt_tensor *out,
                           const clt_tensor *a, const clt_tensor *b, int64_t n,
                           bool accumulate) {
  return CLT_RUN_ELEMS(ctx, CLT_K_mul_f32, (size_t)n, KT(out), KT(a), KT(b),
                       KI(n), KI(accumulate));
}
