/* Reductions (cl/reduce.cl): groups of exactly ctx->work_group items. */
#include "ops/ops.h"

clt_status clt_sum_channels_forward(clt_context *ctx, clt_tensor *out,
                                    const clt_tensor *x, int64_t outer,
                                    int64_t channels, int64_t inner,
                                    bool accumulate) {
  if (inner == 1) /* [outer, channels]: a column sum, no group needed */
    return CLT_RUN_1D(ctx, CLT_K_sum_columns, (size_t)channels, KT(out),
                      KT(x), KI(outer), KI(channels), KI(accumulate));
  size_t local = ctx->work_group;
  size_t global = local * (size_t)channels;
  return CLT_RUN(ctx, CLT_K_sum_channels, 1, &global, &local, KT(out), KT(x),
                 KI(outer), KI(channels), KI(inner), KI(accumulate));
}

clt_status clt_sum_into(clt_context *ctx, clt_tensor *acc, int index,
                        const clt_tensor *x, int64_t n, float scale) {
  size_t local = ctx->work_group;
  return CLT_RUN(ctx, CLT_K_sum_into, 1, &local, &local, KT(acc), KT(x), KI(n),
                 KI(index), KF(scale));
}

clt_status clt_sumsq_into(clt_context *ctx, clt_tensor *acc, int index,
                          const clt_tensor *x, int64_t n) {
  size_t local = ctx->work_group;
  return CLT_RUN(ctx, CLT_K_sumsq_into, 1, &local, &local, KT(acc), KT(x),
                 KI(n), KI(index));
}

clt_status clt_sum_slices(clt_context *ctx, clt_tensor *out,
                          const clt_tensor *ws, int64_t n, int64_t slices,
                          float alpha, float beta) {
  return CLT_RUN_1D(ctx, CLT_K_sum_slices, (size_t)n, KT(out), KT(ws), KI(n),
                    KI(slices), KF(alpha), KF(beta));
}
