/* Batch normalisation (cl/norm.cl). */
#include "ops/ops.h"

/* The element-wise kernels' range: (spatial position, plane), or (run of
 * 16 positions, plane) where runs16, in groups of at most the
 * one-dimensional launches' items (clt_launch_items, measured per device),
 * a row of a plane (or several small planes) each. */
static void plane_range(const clt_context *ctx, int64_t planes, int64_t HW,
                        bool runs16, size_t global[2], size_t local[2]) {
  size_t most = clt_launch_items(ctx);
  size_t items = (size_t)(runs16 ? (HW + 15) / 16 : HW);
  local[0] = items < most ? items : most;
  local[1] = most / local[0];
  global[0] = items;
  global[1] = (size_t)planes;
}

/* The parts (chunks of *chunk planes) that asking for `want` makes. */
static int64_t split_parts(int64_t N, int64_t want, int64_t *chunk) {
  if (want < 1) want = 1;
  *chunk = (N + want - 1) / want;
  if (*chunk < 1) *chunk = 1;
  return (N + *chunk - 1) / *chunk;
}

/* The loop iterations of a reduction's work-item, as llvmpipe counts them
 * (every iteration of every loop, and a loop's exit test): the kernels of
 * one group per channel walk all N planes, each plane one step of that
 * loop, its runs of 16 and its tail (each with its exit), or (planes)
 * every CLT_WG-th plane, all its runs and its tail; the split kernels walk
 * chunk HW / CLT_WG elements of their chunk (each step with its inner
 * loop's exit test) and cross each of its planes' boundaries once.
 * passes: 2 for the statistics (the mean, then the deviations), 1 for the
 * gradient sums; 64 for the group sums and the combine. */
static int64_t per_channel_loops(const clt_context *ctx, int64_t N,
                                 int64_t HW, int passes, bool planes) {
  int64_t wg = (int64_t)ctx->work_group;
  if (planes)
    return passes * ((N + wg - 1) / wg) * (3 + HW / 16 + HW % 16) + 64;
  int64_t runs = (HW / 16 + wg - 1) / wg, tail = (HW % 16 + wg - 1) / wg;
  return passes * N * (3 + runs + tail) + 64;
}

/* The group of a channel's reduction (one group per channel): as many
 * items as it has planes (planes) or runs (clt_runs_busy), at most
 * ctx->work_group. With either, each item's loops are those
 * per_channel_loops counts with ctx->work_group: a smaller group is one
 * that holds every plane or run. */
static size_t channel_group(const clt_context *ctx, int64_t N, int64_t HW,
                            bool planes) {
  return clt_group_items(ctx, planes ? N : clt_runs_busy(HW));
}

typedef struct split_shape {
  const clt_context *ctx;
  int64_t HW;
  int passes;
} split_shape;

/* (a clt_loop_cost) */
static int64_t split_loops(int64_t chunk, const void *arg) {
  const split_shape *s = arg;
  int64_t wg = (int64_t)s->ctx->work_group;
  int64_t steps = (chunk * s->HW + wg - 1) / wg;
  return s->passes * (2 * steps + chunk + 2) + 64;
}

clt_status clt_bn_parts(clt_context *ctx, int64_t N, int64_t HW,
                        bool backward, int64_t want, int64_t *parts,
                        int64_t *chunk) {
  int passes = backward ? 1 : 2;
  int64_t cap;
  CLT_TRY(clt_device_loop_cap(ctx, &cap));
  int64_t budget = clt_loop_budget(cap);
  bool per_channel_fits =
      cap == 0 || per_channel_loops(ctx, N, HW, passes,
                                    want == CLT_BN_PER_PLANE) <= budget;
  if (want <= 1 && per_channel_fits) {
    *parts = 0;
    *chunk = N;
    return CLT_OK;
  }
  *parts = split_parts(N, want < 2 ? 2 : want, chunk);
  split_shape shape = {ctx, HW, passes};
  if (cap == 0 || split_loops(*chunk, &shape) <= budget) return CLT_OK;
  /* The longest chunk within the budget, the planes then evened out over
   * the parts that makes. */
  int64_t lo = clt_loop_most(*chunk, budget, split_loops, &shape);
  if (split_loops(lo, &shape) <= budget) {
    *parts = split_parts(N, (N + lo - 1) / lo, chunk);
    return CLT_OK;
  }
  /* Planes too large for a part of one: the runs of 16 of one group per
   * channel go further. */
  if (per_channel_fits) {
    *parts = 0;
    *chunk = N;
    return CLT_OK;
  }
  return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED,
                      "batchnorm over %lld planes of %lld values: %s ends a "
                      "work-item's loops after %lld iterations, fewer than "
                      "its reductions need",
                      (long long)N, (long long)HW, ctx->info.name,
                      (long long)cap);
}

clt_status clt_bn_work_floats(clt_context *ctx, int64_t N, int64_t C,
                              int64_t HW, int64_t most, int64_t *floats) {
  /* the parts grow with the parts asked for: the fewest and the most */
  int64_t parts = 1;
  for (int backward = 0; backward < 2; backward++)
    for (int i = 0; i < 2; i++) {
      int64_t p, chunk;
      CLT_TRY(clt_bn_parts(ctx, N, HW, backward, i ? most : 1, &p, &chunk));
      if (p > parts) parts = p;
    }
  *floats = 2 * C * parts;
  return CLT_OK;
}

/* The split kernels' range: a group of ctx->work_group items per (channel,
 * part). */
static void split_range(const clt_context *ctx, int64_t C, int64_t parts,
                        size_t global[2], size_t local[2]) {
  local[0] = ctx->work_group;
  local[1] = 1;
  global[0] = ctx->work_group * (size_t)C;
  global[1] = (size_t)parts;
}

static clt_status check_work(clt_context *ctx, const char *what,
                             const clt_tensor *work, int64_t need) {
  if (work && clt_tensor_numel(work) >= need) return CLT_OK;
  return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                      "%s: the split needs a workspace of %lld floats, "
                      "given %lld",
                      what, (long long)need,
                      (long long)(work ? clt_tensor_numel(work) : 0));
}

clt_status clt_bn_stats(clt_context *ctx, clt_tensor *mean, clt_tensor *var,
                        const clt_tensor *x, int64_t N, int64_t C, int64_t HW,
                        int64_t want, clt_tensor *work) {
  int64_t chunk, parts;
  CLT_TRY(clt_bn_parts(ctx, N, HW, false, want, &parts, &chunk));
  if (parts == 0) {
    size_t local = channel_group(ctx, N, HW, want == CLT_BN_PER_PLANE);
    size_t global = local * (size_t)C;
    return CLT_RUN(ctx, CLT_K_bn_stats, 1, &global, &local, KT(mean),
                   KT(var), KT(x), KI(N), KI(C), KI(HW),
                   KI(want == CLT_BN_PER_PLANE));
  }
  CLT_TRY(check_work(ctx, "batchnorm statistics", work, 2 * C * parts));
  size_t global[2], local[2];
  split_range(ctx, C, parts, global, local);
  CLT_TRY(CLT_RUN(ctx, CLT_K_bn_stats_part, 2, global, local, KT(work), KT(x),
                  KI(N), KI(C), KI(HW), KI(chunk)));
  return CLT_RUN_1D(ctx, CLT_K_bn_stats_combine, (size_t)C, KT(mean), KT(var),
                    KT(work), KI(N), KI(C), KI(HW), KI(chunk), KI(parts));
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
                          int64_t N, int64_t C, int64_t HW, float eps,
                          bool relu, bool runs16, const clt_round16 *round) {
  size_t global[2], local[2];
  plane_range(ctx, N * C, HW, runs16, global, local);
  clt_kernel_id id = runs16 ? CLT_K_bn_apply16 : CLT_K_bn_apply;
  return CLT_RUN(ctx, KR_ID(id, round), 2, global, local, KT(y),
                 KT(x), KT(mean), KT(var), KT(gamma), KT(beta), KI(N), KI(C),
                 KI(HW), KF(eps), KI(relu), KR(round, y));
}

clt_status clt_bn_fold(clt_context *ctx, clt_tensor *w_out, clt_tensor *b_out,
                       const clt_tensor *w, const clt_tensor *b,
                       const clt_tensor *mean, const clt_tensor *var,
                       const clt_tensor *gamma, const clt_tensor *beta,
                       int64_t F, int64_t per, float eps) {
  /* w stands in for the bias where there is none (not read) */
  return CLT_RUN_1D(ctx, CLT_K_bn_fold, (size_t)(F * per + F), KT(w_out),
                    KT(b_out), KT(w), KT(b ? b : w), KT(mean), KT(var),
                    KT(gamma), KT(beta), KI(F), KI(per), KI(b != NULL),
                    KF(eps));
}

clt_status clt_bn_backward(clt_context *ctx, clt_tensor *dx,
                           clt_tensor *dgamma, clt_tensor *dbeta,
                           const clt_tensor *dy, const clt_tensor *x,
                           const clt_tensor *mean, const clt_tensor *var,
                           const clt_tensor *gamma, int64_t N, int64_t C,
                           int64_t HW, float eps, bool training,
                           bool accumulate, int64_t want, bool runs16,
                           clt_tensor *work, const clt_round16 *round) {
  int64_t chunk, parts;
  CLT_TRY(clt_bn_parts(ctx, N, HW, true, want, &parts, &chunk));
  if (parts == 0) {
    size_t local = channel_group(ctx, N, HW, want == CLT_BN_PER_PLANE);
    size_t global = local * (size_t)C;
    CLT_TRY(CLT_RUN(ctx, CLT_K_bn_backward_reduce, 1, &global, &local,
                    KT(dgamma), KT(dbeta), KT(dy), KT(x), KT(mean), KT(var),
                    KI(N), KI(C), KI(HW), KF(eps),
                    KI(want == CLT_BN_PER_PLANE)));
  } else {
    CLT_TRY(check_work(ctx, "batchnorm backward", work, 2 * C * parts));
    size_t global[2], local[2];
    split_range(ctx, C, parts, global, local);
    CLT_TRY(CLT_RUN(ctx, CLT_K_bn_backward_part, 2, global, local, KT(work),
                    KT(dy), KT(x), KT(mean), KT(var), KI(N), KI(C), KI(HW),
                    KF(eps), KI(chunk)));
    CLT_TRY(CLT_RUN_1D(ctx, CLT_K_bn_backward_combine, (size_t)C, KT(dgamma),
                       KT(dbeta), KT(work), KI(C), KI(parts)));
  }
  if (!dx) return CLT_OK;
  size_t g2[2], l2[2];
  plane_range(ctx, N * C, HW, runs16, g2, l2);
  clt_kernel_id id =
      runs16 ? CLT_K_bn_backward_apply16 : CLT_K_bn_backward_apply;
  return CLT_RUN(ctx, KR_ID(id, round), 2, g2, l2,
                 KT(dx), KT(dy), KT(x), KT(mean), KT(var), KT(gamma),
                 KT(dgamma), KT(dbeta), KI(N), KI(C), KI(HW), KF(eps),
                 KI(training), KI(accumulate), KR(round, dx));
}

clt_status clt_bn_fused_fits(clt_context *ctx, int64_t N, int64_t HW,
                             bool backward, bool planes, bool *fits) {
  int64_t cap;
  CLT_TRY(clt_device_loop_cap(ctx, &cap));
  /* the reductions' passes and the element-wise one */
  *fits = cap == 0 || per_channel_loops(ctx, N, HW, backward ? 2 : 3,
                                        planes) <= clt_loop_budget(cap);
  return CLT_OK;
}

/* CLT_OK where the fused kernel's loops fit the device's budget, else
 * CLT_ERR_UNSUPPORTED naming the limit. */
static clt_status fused_check(clt_context *ctx, const char *what, int64_t N,
                              int64_t HW, bool backward, bool planes) {
  bool fits;
  CLT_TRY(clt_bn_fused_fits(ctx, N, HW, backward, planes, &fits));
  if (fits) return CLT_OK;
  int64_t cap;
  CLT_TRY(clt_device_loop_cap(ctx, &cap));
  return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED,
                      "%s over %lld planes of %lld values in one kernel: %s "
                      "ends a work-item's loops after %lld iterations, "
                      "fewer than it needs (the separate kernels run in "
                      "parts)",
                      what, (long long)N, (long long)HW, ctx->info.name,
                      (long long)cap);
}

clt_status clt_bn_train_forward(clt_context *ctx, clt_tensor *y,
                                clt_tensor *mean, clt_tensor *var,
                                clt_tensor *rmean, clt_tensor *rvar,
                                clt_tensor *tracked, const clt_tensor *x,
                                const clt_tensor *gamma,
                                const clt_tensor *beta, int64_t N, int64_t C,
                                int64_t HW, float eps, float momentum,
                                bool relu, bool planes,
                                const clt_round16 *round) {
  CLT_TRY(fused_check(ctx, "batchnorm", N, HW, false, planes));
  size_t local = channel_group(ctx, N, HW, planes);
  size_t global = local * (size_t)C;
  return CLT_RUN(ctx, KR_ID(CLT_K_bn_train_forward, round), 1, &global,
                 &local, KT(y), KT(x), KT(mean), KT(var), KT(gamma), KT(beta),
                 KT(rmean), KT(rvar), KT(tracked), KI(N), KI(C), KI(HW),
                 KF(eps), KF(momentum), KI(relu), KI(planes), KR(round, y));
}

clt_status clt_bn_train_backward(clt_context *ctx, clt_tensor *dx,
                                 clt_tensor *dgamma, clt_tensor *dbeta,
                                 const clt_tensor *dy, const clt_tensor *x,
                                 const clt_tensor *out, const clt_tensor *mean,
                                 const clt_tensor *var,
                                 const clt_tensor *gamma, int64_t N,
                                 int64_t C, int64_t HW, float eps, bool relu,
                                 bool accumulate, bool planes,
                                 const clt_round16 *round) {
  CLT_TRY(fused_check(ctx, "batchnorm backward", N, HW, true, planes));
  size_t local = channel_group(ctx, N, HW, planes);
  size_t global = local * (size_t)C;
  return CLT_RUN(ctx, KR_ID(CLT_K_bn_train_backward, round), 1, &global,
                 &local, KT(dx), KT(dgamma), KT(dbeta), KT(dy), KT(x),
                 KT(relu ? out : x), KT(mean), KT(var), KT(gamma), KI(N),
                 KI(C), KI(HW), KF(eps), KI(relu), KI(accumulate), KI(planes),
                 KR(round, dx));
}

/* CLT_ERR_UNSUPPORTED, naming `what` over `count` `unit` and the cap,
 * where a work-item's `loops` iterations pass the device's budget. */
static clt_status loops_fit(clt_context *ctx, int64_t loops, const char *what,
                            int64_t count, const char *unit) {
  int64_t cap;
  CLT_TRY(clt_device_loop_cap(ctx, &cap));
  if (cap == 0 || loops <= clt_loop_budget(cap)) return CLT_OK;
  return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED,
                      "%s over %lld %s: %s ends a work-item's loops after "
                      "%lld iterations, fewer than it needs",
                      what, (long long)count, unit, ctx->info.name,
                      (long long)cap);
}

/* Layer normalisation's one-group-per-sample kernels: each item walks
 * D / CLT_WG values three times (two sums and the writes; in runs of 16,
 * its runs and its share of the tail) and the group sums. */
static clt_status ln_fits(clt_context *ctx, const char *what, int64_t D,
                          bool runs16) {
  int64_t wg = (int64_t)ctx->work_group;
  int64_t per = runs16 ? (D / 16 + wg - 1) / wg + 1 : (D + wg - 1) / wg;
  return loops_fit(ctx, 3 * (per + 2) + 64, what, D, "values a sample");
}

/* The one-group-per-sample kernels' groups: as many items as have
 * values (runs16 0) or runs of 16 and tail values (1), ctx->work_group
 * at most (clt_group_items): a group of 256 on a sample of 64 values
 * walked the group sum's barriers with items that had nothing to add.
 * Each item's loops are those ln_fits counts (a smaller group holds every
 * value or run, one each). */
static size_t ln_group(clt_context *ctx, int64_t D, bool runs16) {
  return clt_group_items(ctx, runs16 ? clt_runs_busy(D) : D);
}

clt_status clt_ln_forward(clt_context *ctx, clt_tensor *y, clt_tensor *mean,
                          clt_tensor *rstd, const clt_tensor *x,
                          const clt_tensor *gamma, const clt_tensor *beta,
                          int64_t N, int64_t D, float eps, bool relu,
                          bool runs16) {
  CLT_TRY(ln_fits(ctx, "layernorm", D, runs16));
  if (N == 0) return CLT_OK;
  size_t local = ln_group(ctx, D, runs16), global = local * (size_t)N;
  return CLT_RUN(ctx, runs16 ? CLT_K_ln_forward16 : CLT_K_ln_forward, 1,
                 &global, &local, KT(y), KT(mean), KT(rstd), KT(x), KT(gamma),
                 KT(beta), KI(D), KF(eps), KI(relu));
}

/* (a clt_loop_cost: ln_backward_params's loop over per samples, or
 * ln_backward_params16's, whose last item loops over them for each of up
 * to 15 values) */
static int64_t ln_param_loops(int64_t per, const void *arg) {
  bool runs16 = *(const bool *)arg;
  return runs16 ? 15 * (per + 1) + 1 : per + 1;
}

clt_status clt_ln_backward(clt_context *ctx, clt_tensor *dx,
                           clt_tensor *dgamma, clt_tensor *dbeta,
                           const clt_tensor *dy, const clt_tensor *x,
                           const clt_tensor *y, const clt_tensor *mean,
                           const clt_tensor *rstd, const clt_tensor *gamma,
                           int64_t N, int64_t D, bool relu, bool accumulate,
                           bool runs16) {
  const clt_tensor *out = relu ? y : dy; /* not read without relu */
  CLT_TRY(ln_fits(ctx, "layernorm backward", D, runs16));
  if (N == 0) return CLT_OK;
  int64_t per = clt_loop_per(ctx, N, ln_param_loops, &runs16);
  size_t items = (size_t)(runs16 ? (D + 15) / 16 : D);
  for (int64_t n0 = 0; dgamma && n0 < N; n0 += per) {
    int64_t n1 = n0 + per < N ? n0 + per : N;
    CLT_TRY(CLT_RUN_1D(
        ctx, runs16 ? CLT_K_ln_backward_params16 : CLT_K_ln_backward_params,
        items, KT(dgamma), KT(dbeta), KT(dy), KT(x), KT(mean), KT(rstd),
        KT(out), KI(D), KI(relu), KI(n0), KI(n1), KI(n0 > 0)));
  }
  if (!dx) return CLT_OK;
  size_t local = ln_group(ctx, D, runs16), global = local * (size_t)N;
  return CLT_RUN(ctx,
                 runs16 ? CLT_K_ln_backward_data16 : CLT_K_ln_backward_data, 1,
                 &global, &local, KT(dx), KT(dy), KT(x), KT(mean), KT(rstd),
                 KT(gamma), KT(out), KI(D), KI(relu), KI(accumulate));
}

/* lnc_forward's and lnc_backward_data's three loops over a pixel's
 * channels (runs16: up to 15 pixels of them at a sample's end). */
static clt_status lnc_fits(clt_context *ctx, const char *what, int64_t C,
                           bool runs16) {
  return loops_fit(ctx, (runs16 ? 15 : 1) * (3 * C + 1) + 8, what, C,
                   "channels a pixel");
}

clt_status clt_lnc_forward(clt_context *ctx, clt_tensor *y, clt_tensor *mean,
                           clt_tensor *rstd, const clt_tensor *x,
                           const clt_tensor *gamma, const clt_tensor *beta,
                           int64_t N, int64_t C, int64_t P, float eps,
                           bool relu, bool runs16) {
  CLT_TRY(lnc_fits(ctx, "layernorm over channels", C, runs16));
  if (N * P == 0) return CLT_OK;
  size_t items = (size_t)(runs16 ? N * ((P + 15) / 16) : N * P);
  return CLT_RUN_1D(ctx, runs16 ? CLT_K_lnc_forward16 : CLT_K_lnc_forward,
                    items, KT(y), KT(mean), KT(rstd), KT(x), KT(gamma),
                    KT(beta), KI(N), KI(C), KI(P), KF(eps), KI(relu));
}

/* (a clt_loop_cost: lnc_backward_params's loop over per samples' pixels,
 * or their runs of 16 (each up to 15 pixels one by one), CLT_WG items
 * sharing them, and the two group sums) */
typedef struct lnc_loops {
  int64_t P, items;
  bool runs16;
} lnc_loops;
static int64_t lnc_param_loops(int64_t per, const void *arg) {
  const lnc_loops *l = arg;
  int64_t units = per * (l->runs16 ? (l->P + 15) / 16 : l->P);
  return (units + l->items - 1) / l->items * (l->runs16 ? 16 : 1) + 128;
}

clt_status clt_lnc_backward(clt_context *ctx, clt_tensor *dx,
                            clt_tensor *dgamma, clt_tensor *dbeta,
                            const clt_tensor *dy, const clt_tensor *x,
                            const clt_tensor *y, const clt_tensor *mean,
                            const clt_tensor *rstd, const clt_tensor *gamma,
                            int64_t N, int64_t C, int64_t P, bool relu,
                            bool accumulate, bool runs16, clt_tensor *part) {
  const clt_tensor *out = relu ? y : dy; /* not read without relu */
  CLT_TRY(lnc_fits(ctx, "layernorm over channels backward", C, runs16));
  if (N * P == 0) return CLT_OK;
  if (part && dx && runs16 && dgamma) {
    int64_t J = N * ((P + 15) / 16), need = clt_lnc_part_floats(N, C, P);
    if (part->numel < need)
      return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                          "layernorm over channels backward: %lld floats "
                          "for the partial sums, %lld needed",
                          (long long)part->numel, (long long)need);
    CLT_TRY(CLT_RUN_1D(ctx, CLT_K_lnc_backward_data16_sums, (size_t)J,
                       KT(dx), KT(dy), KT(x), KT(mean), KT(rstd), KT(gamma),
                       KT(out), KI(N), KI(C), KI(P), KI(relu),
                       KI(accumulate), KT(part)));
    clt_tensor pg = clt_tensor_slice_1d(part, 0, C * J);
    clt_tensor pb = clt_tensor_slice_1d(part, C * J, C * J);
    CLT_TRY(clt_sum_channels_forward(ctx, dgamma, &pg, 1, C, J, false));
    return clt_sum_channels_forward(ctx, dbeta, &pb, 1, C, J, false);
  }
  lnc_loops loops = {P, (int64_t)ctx->work_group, runs16};
  int64_t per = clt_loop_per(ctx, N, lnc_param_loops, &loops);
  size_t local = ctx->work_group, global = local * (size_t)C;
  for (int64_t n0 = 0; dgamma && n0 < N; n0 += per) {
    int64_t n1 = n0 + per < N ? n0 + per : N;
    CLT_TRY(CLT_RUN(
        ctx, runs16 ? CLT_K_lnc_backward_params16 : CLT_K_lnc_backward_params,
        1, &global, &local, KT(dgamma), KT(dbeta), KT(dy), KT(x), KT(mean),
        KT(rstd), KT(out), KI(C), KI(P), KI(relu), KI(n0), KI(n1),
        KI(n0 > 0)));
  }
  if (!dx) return CLT_OK;
  size_t items = (size_t)(runs16 ? N * ((P + 15) / 16) : N * P);
  return CLT_RUN_1D(
      ctx, runs16 ? CLT_K_lnc_backward_data16 : CLT_K_lnc_backward_data,
      items, KT(dx), KT(dy), KT(x), KT(mean), KT(rstd), KT(gamma), KT(out),
      KI(N), KI(C), KI(P), KI(relu), KI(accumulate));
}
