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

/* The most of x one launch of sum_into or sumsq_into takes: all of it,
 * but where the device ends a work-item's loops early
 * (clt_device_loop_cap), so many that each item's loop (n / group
 * iterations, and the group sum's halvings) stays within the budget. The
 * launches add into the same slot, one after the other. */
static clt_status sum_part(clt_context *ctx, int64_t n, int64_t *part) {
  int64_t cap;
  CLT_TRY(clt_device_loop_cap(ctx, &cap));
  *part = n;
  int64_t room = clt_loop_budget(cap) - 64;
  if (cap > 0 && room > 0 && n > room * (int64_t)ctx->work_group)
    *part = room * (int64_t)ctx->work_group;
  return CLT_OK;
}

clt_status clt_sum_into(clt_context *ctx, clt_tensor *acc, int index,
                        const clt_tensor *x, int64_t n, float scale) {
  size_t local = ctx->work_group;
  int64_t part;
  CLT_TRY(sum_part(ctx, n, &part));
  for (int64_t at = 0; at < n; at += part) {
    clt_tensor xp = clt_tensor_slice_1d(x, at, x->numel - at);
    CLT_TRY(CLT_RUN(ctx, CLT_K_sum_into, 1, &local, &local, KT(acc), KT(&xp),
                    KI(n - at < part ? n - at : part), KI(index), KF(scale)));
  }
  return CLT_OK;
}

clt_status clt_sumsq_into(clt_context *ctx, clt_tensor *acc, int index,
                          const clt_tensor *x, int64_t n) {
  size_t local = ctx->work_group;
  int64_t part;
  CLT_TRY(sum_part(ctx, n, &part));
  for (int64_t at = 0; at < n; at += part) {
    clt_tensor xp = clt_tensor_slice_1d(x, at, x->numel - at);
    CLT_TRY(CLT_RUN(ctx, CLT_K_sumsq_into, 1, &local, &local, KT(acc),
                    KT(&xp), KI(n - at < part ? n - at : part), KI(index)));
  }
  return CLT_OK;
}

clt_status clt_sum_slices(clt_context *ctx, clt_tensor *out,
                          const clt_tensor *ws, int64_t n, int64_t slices,
                          float alpha, float beta) {
  return CLT_RUN_1D(ctx, CLT_K_sum_slices, (size_t)n, KT(out), KT(ws), KI(n),
                    KI(slices), KF(alpha), KF(beta));
}
