/* Max and average pooling (cl/pool.cl); w->C counts N*C planes.
 * w->per_element picks max pooling's kernels with a work-item per element
 * (average pooling's are per element already), w->vectors the forward's
 * vectors of 2x2 windows. */
#include "ops/ops.h"

#define POOL_ARGS(w)                                                           \
  KI((w)->C), KI((w)->H), KI((w)->W), KI((w)->OH), KI((w)->OW), KI((w)->KH),   \
      KI((w)->KW), KI((w)->pad_h), KI((w)->pad_w), KI((w)->stride_h),          \
      KI((w)->stride_w)

/* Whether a work-item that would loop `loops` times runs within the
 * device's loop budget (clt_device_loop_cap; no budget: always). */
static clt_status loops_fit(clt_context *ctx, int64_t loops, bool *fit) {
  int64_t cap;
  CLT_TRY(clt_device_loop_cap(ctx, &cap));
  *fit = cap == 0 || loops <= clt_loop_budget(cap);
  return CLT_OK;
}

/* A work-item walks a whole window (`loops` iterations: by default KH
 * rows of KW, each row its loop's exit test): where the device ends a
 * work-item's loops early (llvmpipe gave a 260 x 260 average pooling's
 * mean from the first 65,535 values) a window past the budget is
 * refused, not computed wrong. Nothing pools that much but a global
 * pooling over a large plane (global average pooling's kernel sums runs
 * of 16: planes 16 times larger fit). */
static int64_t window_loops(const clt_window *w) {
  return w->KH * (w->KW + 2) + 64;
}
static clt_status window_fits(clt_context *ctx, const char *op,
                              const clt_window *w, int64_t loops) {
  bool fit;
  CLT_TRY(loops_fit(ctx, loops, &fit));
  if (fit) return CLT_OK;
  return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED,
                      "%s: a window of %lldx%lld values is more than %s "
                      "runs in one work-item (it ends a work-item's loops "
                      "after %lld iterations, without an error); pool in "
                      "steps there (smaller windows one after the other)",
                      op, (long long)w->KH, (long long)w->KW, ctx->info.name,
                      (long long)ctx->loop_cap);
}

/* Max pooling's kernels with a work-item per row give way to those with a
 * work-item per element where a row's loops (counted at each call below)
 * would not fit: the same operations on each element in the same order,
 * so the same bits (llvmpipe: the backward's rows of 8,000 under a 3 x 3
 * window of stride 1 gave wrong gradients in one item). */
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool clt_maxpool_vectors_fit(const clt_window *w) {
  return w->KH == 2 && w->KW == 2 && w->stride_h == 2 && w->stride_w == 2 &&
         w->pad_h == 0 && w->pad_w == 0;
}

clt_status clt_maxpool_forward(clt_context *ctx, clt_tensor *y,
                               clt_tensor *argmax, const clt_tensor *x,
                               const clt_window *w, const clt_round16 *round) {
  CLT_TRY(window_fits(ctx, "maxpool", w, window_loops(w)));
  /* an output row: its runs of 16 windows and the edge windows, each a
   * window's rows, and a store loop a run */
  bool fit = true;
  CLT_TRY(loops_fit(ctx,
                   (ceil_div(w->OW, 16) + 4) * w->KH * (w->KW + 2) + w->OW +
                       64,
                   &fit));
  if (w->per_element || !fit)
    return CLT_RUN_1D(ctx, KR_ID(CLT_K_maxpool_forward_elems, round),
                      (size_t)(w->C * w->OH * w->OW), KT(y), KT(argmax), KT(x),
                      POOL_ARGS(w), KR(round, y));
  if (w->vectors && clt_maxpool_vectors_fit(w))
    return CLT_RUN_1D(ctx, KR_ID(CLT_K_maxpool_forward_2x2, round),
                      (size_t)(w->C * w->OH), KT(y), KT(argmax), KT(x),
                      KI(w->C), KI(w->H), KI(w->W), KI(w->OH), KI(w->OW),
                      KR(round, y));
  return CLT_RUN_1D(ctx, KR_ID(CLT_K_maxpool_forward, round),
                    (size_t)(w->C * w->OH), KT(y), KT(argmax), KT(x),
                    POOL_ARGS(w), KR(round, y));
}

clt_status clt_maxpool_backward(clt_context *ctx, clt_tensor *dx,
                                const clt_tensor *dy, const clt_tensor *argmax,
                                const clt_window *w, bool accumulate,
                                const clt_round16 *round) {
  /* Windows that do not overlap: a scatter, far cheaper than the gather
   * (the per-row kernel clears dx itself). It rounds only the elements it
   * writes, so not where it adds into dx and rounds, nor where it saves
   * the halves too (never asked by the graph: clt_graph_grad_round). */
  int mode = clt_round16_mode(round);
  bool fit = true;
  if (w->stride_h >= w->KH && w->stride_w >= w->KW &&
      (mode == 0 || (mode == 1 && !accumulate))) {
    /* an output row: the input rows it clears, its windows */
    CLT_TRY(loops_fit(ctx,
                     (w->stride_h + w->KH + w->pad_h + 1) * w->W + w->OW + 64,
                     &fit));
    if (!w->per_element && fit)
      return CLT_RUN_1D(ctx, KR_ID(CLT_K_maxpool_backward_scatter, round),
                        (size_t)(w->C * w->OH), KT(dx), KT(dy), KT(argmax),
                        KI(w->C), KI(w->H), KI(w->W), KI(w->OH), KI(w->OW),
                        KI(w->pad_h), KI(w->stride_h), KI(accumulate),
                        KR(round, dx));
    if (!accumulate) {
      clt_tensor plane = clt_tensor_slice_1d(dx, 0, w->C * w->H * w->W);
      CLT_TRY(clt_tensor_fill(&plane, 0.0));
    }
    return CLT_RUN_1D(ctx, KR_ID(CLT_K_maxpool_backward_scatter_elems, round),
                      (size_t)(w->C * w->OH * w->OW), KT(dx), KT(dy),
                      KT(argmax), KI(w->C), KI(w->H), KI(w->W), KI(w->OH),
                      KI(w->OW), KR(round, dx));
  }
  /* an input row: each element the windows covering it */
  CLT_TRY(loops_fit(ctx,
                   w->W * (2 + ceil_div(w->KH, w->stride_h) *
                                   (ceil_div(w->KW, w->stride_w) + 2)) +
                       64,
                   &fit));
  if (w->per_element || !fit)
    return CLT_RUN_1D(ctx, KR_ID(CLT_K_maxpool_backward_elems, round),
                      (size_t)(w->C * w->H * w->W), KT(dx), KT(dy),
                      KT(argmax), POOL_ARGS(w), KI(accumulate), KR(round, dx));
  return CLT_RUN_1D(ctx, KR_ID(CLT_K_maxpool_backward, round),
                    (size_t)(w->C * w->H), KT(dx), KT(dy), KT(argmax),
                    POOL_ARGS(w), KI(accumulate), KR(round, dx));
}

/* A window over the whole plane without padding: global pooling. */
static bool global_window(const clt_window *w) {
  return w->KH == w->H && w->KW == w->W && w->OH == 1 && w->OW == 1 &&
         w->pad_h == 0 && w->pad_w == 0;
}

clt_status clt_avgpool_forward(clt_context *ctx, clt_tensor *y,
                               const clt_tensor *x, const clt_window *w,
                               const clt_round16 *round) {
  int64_t hw = w->H * w->W;
  if (global_window(w)) { /* its runs of 16, its tail */
    CLT_TRY(window_fits(ctx, "avgpool", w, hw / 16 + hw % 16 + 64));
    return CLT_RUN_1D(ctx, KR_ID(CLT_K_avgpool_global_forward, round),
                      (size_t)w->C, KT(y), KT(x), KI(w->C), KI(hw),
                      KR(round, y));
  }
  CLT_TRY(window_fits(ctx, "avgpool", w, window_loops(w)));
  return CLT_RUN_1D(ctx, KR_ID(CLT_K_avgpool_forward, round),
                    (size_t)(w->C * w->OH * w->OW), KT(y), KT(x), POOL_ARGS(w),
                    KR(round, y));
}

clt_status clt_avgpool_backward(clt_context *ctx, clt_tensor *dx,
                                const clt_tensor *dy, const clt_window *w,
                                bool accumulate, const clt_round16 *round) {
  if (global_window(w)) {
    int64_t hw = w->H * w->W;
    int64_t per = clt_loop_per(ctx, hw, clt_loop_cost_twice, NULL);
    return CLT_RUN_1D(ctx, KR_ID(CLT_K_avgpool_global_backward, round),
                      (size_t)(w->C * clt_loop_parts(hw, per)), KT(dx),
                      KT(dy), KI(w->C), KI(hw), KI(per), KI(accumulate),
                      KR(round, dx));
  }
  return CLT_RUN_1D(ctx, KR_ID(CLT_K_avgpool_backward, round),
                    (size_t)(w->C * w->H * w->W), KT(dx), KT(dy), POOL_ARGS(w),
                    KI(accumulate), KR(round, dx));
}
