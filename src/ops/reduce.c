/* Reductions (cl/reduce.cl): groups of as many items as the work has,
 * ctx->work_group at most (clt_group_items). */
#include "ops/ops.h"

size_t clt_group_items(const clt_context *ctx, int64_t busy) {
  size_t items = 1;
  while ((int64_t)items < busy && items < ctx->work_group) items *= 2;
  return items;
}

/* How many of `outer` one launch of sum_channels (sum_columns where inner
 * is 1) takes: all of them, but where the device ends a work-item's loops
 * early (clt_device_loop_cap), so many that each item's loops stay within
 * the budget: sum_columns a step a row, sum_channels for each of its
 * planes a step, its runs of 16 and its tail (each with an exit test),
 * and the group sum's halvings (llvmpipe, one launch: wrong sums from
 * 65,535 rows or about 20,000 planes). */
clt_status clt_sum_channels_part(clt_context *ctx, int64_t outer,
                                 int64_t inner, int64_t *part) {
  int64_t cap;
  CLT_TRY(clt_device_loop_cap(ctx, &cap));
  *part = outer;
  if (cap == 0) return CLT_OK;
  int64_t wg = (int64_t)ctx->work_group;
  int64_t plane = inner == 1 ? 1
                             : 3 + (inner / 16 + wg - 1) / wg +
                                   (inner % 16 + wg - 1) / wg;
  int64_t room = (clt_loop_budget(cap) - 64) / plane;
  if (room < 1) room = 1;
  if (outer > room) *part = room;
  return CLT_OK;
}

/* clt_sum_channels_forward, or with y (inner 1 only) clt_sum_columns_relu:
 * the same launches in parts, x then rewritten through y's ReLU on the
 * way (its callers say which: x is const only to the first). */
static clt_status channel_sums(clt_context *ctx, clt_tensor *out,
                               const clt_tensor *x, const clt_tensor *y,
                               int64_t outer, int64_t channels, int64_t inner,
                               bool accumulate) {
  int64_t part;
  CLT_TRY(clt_sum_channels_part(ctx, outer, inner, &part));
  /* the parts after the first add into out; one launch where outer is 0
   * (out = 0 then, or kept) */
  int64_t o0 = 0;
  do {
    int64_t at = o0 * channels * inner, count = outer - o0;
    if (count > part) count = part;
    clt_tensor xp = clt_tensor_slice_1d(x, at, x->numel - at);
    int acc = o0 > 0 || accumulate;
    if (y) { /* [outer, channels] through the ReLU whose output is y */
      clt_tensor yp = clt_tensor_slice_1d(y, at, y->numel - at);
      CLT_TRY(CLT_RUN_1D(ctx, CLT_K_sum_columns_relu, (size_t)channels,
                         KT(out), KT(&xp), KT(&yp), KI(count), KI(channels),
                         KI(acc)));
    } else if (inner == 1) { /* [outer, channels]: a column sum, no group */
      CLT_TRY(CLT_RUN_1D(ctx, CLT_K_sum_columns, (size_t)channels, KT(out),
                         KT(&xp), KI(count), KI(channels), KI(acc)));
    } else {
      size_t local = clt_group_items(ctx, clt_runs_busy(inner));
      size_t global = local * (size_t)channels;
      CLT_TRY(CLT_RUN(ctx, CLT_K_sum_channels, 1, &global, &local, KT(out),
                      KT(&xp), KI(count), KI(channels), KI(inner), KI(acc)));
    }
  } while ((o0 += part) < outer);
  return CLT_OK;
}

clt_status clt_sum_channels_forward(clt_context *ctx, clt_tensor *out,
                                    const clt_tensor *x, int64_t outer,
                                    int64_t channels, int64_t inner,
                                    bool accumulate) {
  return channel_sums(ctx, out, x, NULL, outer, channels, inner, accumulate);
}

clt_status clt_sum_columns_relu(clt_context *ctx, clt_tensor *out,
                                clt_tensor *x, const clt_tensor *y,
                                int64_t rows, int64_t cols) {
  return channel_sums(ctx, out, x, y, rows, cols, 1, false);
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
  int64_t part;
  CLT_TRY(sum_part(ctx, n, &part));
  for (int64_t at = 0; at < n; at += part) {
    clt_tensor xp = clt_tensor_slice_1d(x, at, x->numel - at);
    int64_t count = n - at < part ? n - at : part;
    size_t local = clt_group_items(ctx, count);
    CLT_TRY(CLT_RUN(ctx, CLT_K_sum_into, 1, &local, &local, KT(acc), KT(&xp),
                    KI(count), KI(index), KF(scale)));
  }
  return CLT_OK;
}

clt_status clt_sum2_into(clt_context *ctx, clt_tensor *acc, int i0,
                         const clt_tensor *x0, float s0, int i1,
                         const clt_tensor *x1, float s1, int64_t n) {
  if (i0 == i1)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "sum2 into: both sums into slot %d", i0);
  int64_t part;
  CLT_TRY(sum_part(ctx, n, &part));
  if (part < n) { /* a capped device: in parts, one sum after the other */
    CLT_TRY(clt_sum_into(ctx, acc, i0, x0, n, s0));
    return clt_sum_into(ctx, acc, i1, x1, n, s1);
  }
  /* the group sum_into takes for n: the same bits */
  size_t local = clt_group_items(ctx, n), global = 2 * local;
  return CLT_RUN(ctx, CLT_K_sum2_into, 1, &global, &local, KT(acc), KT(x0),
                 KT(x1), KI(n), KI(i0), KI(i1), KF(s0), KF(s1));
}

clt_status clt_sumsq_into(clt_context *ctx, clt_tensor *acc, int index,
                          const clt_tensor *x, int64_t n) {
  int64_t part;
  CLT_TRY(sum_part(ctx, n, &part));
  for (int64_t at = 0; at < n; at += part) {
    clt_tensor xp = clt_tensor_slice_1d(x, at, x->numel - at);
    int64_t count = n - at < part ? n - at : part;
    size_t local = clt_group_items(ctx, count);
    CLT_TRY(CLT_RUN(ctx, CLT_K_sumsq_into, 1, &local, &local, KT(acc),
                    KT(&xp), KI(count), KI(index)));
  }
  return CLT_OK;
}

clt_status clt_sum_slices(clt_context *ctx, clt_tensor *out,
                          const clt_tensor *ws, int64_t n, int64_t slices,
                          float alpha, float beta) {
  return CLT_RUN_1D(ctx, CLT_K_sum_slices, (size_t)n, KT(out), KT(ws), KI(n),
                    KI(slices), KF(alpha), KF(beta));
}
