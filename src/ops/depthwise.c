/* Depthwise convolution (cl/depthwise.cl). */
#include "ops/ops.h"

/* The window's fields as the kernels take them, after their own. */
#define DW_WINDOW(w)                                                          \
  KI((w)->H), KI((w)->W), KI((w)->OH), KI((w)->OW), KI((w)->KH),              \
      KI((w)->KW), KI((w)->stride_h), KI((w)->stride_w), KI((w)->pad_h),      \
      KI((w)->pad_w), KI((w)->dil_h), KI((w)->dil_w)

/* The loops of the rows kernels' work-items (every iteration of every
 * loop, as llvmpipe counts them), where each loop over a row's taps takes
 * them four at a time if the row's stride and dilation are 1 (kx: that
 * loop's iterations); the kernels that take eight columns at a time
 * loop less than these count: */
static int64_t row_taps(const clt_window *w) {
  bool by_four = w->stride_w == 1 && w->dil_w == 1;
  return by_four ? (w->KW + 3) / 4 : w->KW;
}

/* and at most this many more where an item first copies its input rows
 * into private memory (cl/depthwise.cl dw_buffer_rows: rows of `stride`
 * values, rows x stride <= 1024 floats, stride >= 16: a loop over the
 * rows, zeros and the row's values 8 at a time, its tail one by one),
 * and in rows shorter than 8 (16 in the stride-2 data gradient) a loop
 * of up to 16 a load or store (dw_load8, dw_store8, dw_load16,
 * dw_store16) */
#define BUFFER_LOOPS (1024 / 16 * (1 + 8) + 1024 / 8 * 2)
#define SHORT_ROW_LOOPS 16
#define DW_BUF 1024

/* The stride-2 weight gradient (stride 2 and dilation 1 along the row,
 * windows of up to 8 columns) buffers the plane's rows a block of output
 * rows at a time: the blocks it takes, as cl/depthwise.cl counts them
 * (its DW_STRIDE_TWO; 0 where none fits and the four-wide path runs). */
static int64_t weight_blocks(const clt_window *w) {
  if (w->stride_w != 2 || w->dil_w != 1 || w->KW > 8) return 0;
  int64_t n = w->W + 2 * w->pad_w, reach = 2 * (w->OW > 8 ? w->OW - 8 : 0);
  if (n < reach + 16) n = reach + 16;
  int64_t stride = (n + 15) / 8 * 8;
  int64_t span = DW_BUF / stride - (w->KH - 1) * w->dil_h - 1;
  if (span < 0) return 0;
  int64_t B = span / w->stride_h + 1;
  return (w->OH + B - 1) / B;
}

/* the forward's, `per` output rows an item (a clt_loop_cost) */
static int64_t forward_loops(int64_t per, const void *arg) {
  const clt_window *w = arg;
  int64_t fours = (w->OW + 3) / 4;
  return per * (1 + SHORT_ROW_LOOPS +
                fours * (1 + w->KH * (row_taps(w) + 1))) +
         BUFFER_LOOPS;
}

/* the data gradient's, `per` rows of dx an item (stride 1: four columns
 * at a time; else scattered column by column), M filters a channel */
typedef struct data_loops_arg {
  clt_window w;
  int64_t M;
} data_loops_arg;
static int64_t data_loops(int64_t per, const void *arg) {
  const data_loops_arg *a = arg;
  const clt_window *w = &a->w;
  int64_t row = w->stride_w == 1
                    ? (w->W + 3) / 4 *
                          (1 + a->M * (1 + w->KH * (row_taps(w) + 1)))
                    : w->W + a->M * (w->KH * w->KW * (w->OW + 2) + w->KH);
  return per * (1 + 2 * SHORT_ROW_LOOPS + row) + BUFFER_LOOPS;
}

/* and the weight gradient's, a plane an item */
static int64_t weight_loops(const clt_window *w) {
  int64_t fours = (w->OW + 3) / 4, blocks = weight_blocks(w);
  /* the stride-2 blocks: a copy and the sums' loops each */
  int64_t more = blocks > 1 ? blocks * (BUFFER_LOOPS + w->KH * 18) : 0;
  return w->KH * row_taps(w) * (w->OH * (fours + 1) + 1) +
         (w->OH + 1) * (SHORT_ROW_LOOPS + 2) + BUFFER_LOOPS + more;
}

/* The rows an item of the forward and of the data gradient: 4 (on POCL
 * 5-13% less time than an item a row: fewer work-groups, the index
 * divisions paid once), fewer where the loops would pass the limit. */
#define ROWS_PER_ITEM 4
static int64_t forward_rows(const clt_context *ctx, const clt_window *w) {
  int64_t rows = w->OH < ROWS_PER_ITEM ? w->OH : ROWS_PER_ITEM;
  return clt_loop_per(ctx, rows, forward_loops, w);
}
static int64_t data_rows(const clt_context *ctx, int64_t M,
                         const clt_window *w) {
  data_loops_arg a = {*w, M};
  int64_t rows = w->H < ROWS_PER_ITEM ? w->H : ROWS_PER_ITEM;
  return clt_loop_per(ctx, rows, data_loops, &a);
}

/* The most loops of a work-item of any rows kernel, a row an item. */
static int64_t rows_loops(int64_t M, const clt_window *w) {
  data_loops_arg a = {*w, M};
  int64_t fwd = forward_loops(1, w), bwd = data_loops(1, &a);
  int64_t wgt = weight_loops(w);
  int64_t most = fwd > bwd ? fwd : bwd;
  return wgt > most ? wgt : most;
}

bool clt_dw_rows_fit(const clt_context *ctx, int64_t M, const clt_window *w) {
  return rows_loops(M, w) <= ctx->loop_limit;
}

int64_t clt_dw_work_floats(int64_t N, int64_t M, const clt_window *w) {
  return N * w->C * M * w->KH * w->KW;
}

/* CLT_ERR_UNSUPPORTED where the rows kernels' loops pass the limit. */
static clt_status rows_check(clt_context *ctx, int64_t M,
                             const clt_window *w) {
  if (clt_dw_rows_fit(ctx, M, w)) return CLT_OK;
  return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED,
                      "depthwise convolution in rows: %lldx%lld images with "
                      "a %lldx%lld window take %lld loop iterations a "
                      "work-item, more than %lld (the kernels of a "
                      "work-item per value run it)",
                      (long long)w->H, (long long)w->W, (long long)w->KH,
                      (long long)w->KW, (long long)rows_loops(M, w),
                      (long long)ctx->loop_limit);
}

clt_status clt_dw_forward(clt_context *ctx, clt_tensor *y, const clt_tensor *x,
                          const clt_tensor *w, const clt_tensor *bias,
                          int64_t N, int64_t M, const clt_window *win,
                          clt_dw_layout layout, bool relu) {
  int64_t total = N * win->C * M * win->OH * win->OW;
  if (total == 0) return CLT_OK;
  if (layout != CLT_DW_PER_VALUE) {
    CLT_TRY(rows_check(ctx, M, win));
    int64_t planes = N * win->C * M, R = forward_rows(ctx, win);
    int64_t items = planes * ((win->OH + R - 1) / R);
    return CLT_RUN_1D(ctx, CLT_K_dw_forward_rows, (size_t)items, KT(y),
                      KT(x), KT(w), KT(bias ? bias : w), KI(bias != NULL),
                      KI(relu), KI(planes), KI(R),
                      KI(layout == CLT_DW_ROWS_EIGHTS), KI(win->C), KI(M),
                      DW_WINDOW(win));
  }
  /* w stands in for the bias where there is none (not read) */
  return CLT_RUN_1D(ctx, CLT_K_dw_forward, (size_t)total, KT(y), KT(x), KT(w),
                    KT(bias ? bias : w), KI(bias != NULL), KI(relu),
                    KI(total), KI(win->C), KI(M), DW_WINDOW(win));
}

/* (a clt_loop_cost: dw_backward_weights's loop over per samples' output
 * positions, CLT_WG items sharing them, and the group sum) */
typedef struct dw_loops {
  int64_t positions, items;
} dw_loops;
static int64_t dw_weight_loops(int64_t per, const void *arg) {
  const dw_loops *l = arg;
  return (per * l->positions + l->items - 1) / l->items + 64;
}

/* The rows way of the backward (clt_dw_backward's, past db). */
static clt_status backward_rows(clt_context *ctx, clt_tensor *dx,
                                clt_tensor *dw, const clt_tensor *dy,
                                const clt_tensor *x, const clt_tensor *w,
                                int64_t N, int64_t M, const clt_window *win,
                                bool accumulate, bool eights,
                                clt_tensor *work) {
  CLT_TRY(rows_check(ctx, M, win));
  int64_t F = win->C * M, kk = win->KH * win->KW;
  int64_t need = clt_dw_work_floats(N, M, win);
  if (dw && (!work || clt_tensor_numel(work) < need))
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "depthwise convolution in rows: the weight "
                        "gradient needs a workspace of %lld floats, given "
                        "%lld",
                        (long long)need,
                        (long long)(work ? clt_tensor_numel(work) : 0));
  if (dw) {
    CLT_TRY(CLT_RUN_1D(ctx, CLT_K_dw_weights_rows, (size_t)(N * F),
                       KT(work), KT(dy), KT(x), KI(N * F), KI(eights),
                       KI(win->C), KI(M), DW_WINDOW(win)));
    CLT_TRY(CLT_RUN_1D(ctx, CLT_K_dw_weights_combine, (size_t)(F * kk),
                       KT(dw), KT(work), KI(N), KI(F), KI(kk)));
  }
  if (!dx) return CLT_OK;
  int64_t planes = N * win->C, R = data_rows(ctx, M, win);
  int64_t items = planes * ((win->H + R - 1) / R);
  return CLT_RUN_1D(ctx, CLT_K_dw_backward_data_rows, (size_t)items, KT(dx),
                    KT(dy), KT(w), KI(accumulate), KI(planes), KI(R),
                    KI(eights), KI(win->C), KI(M), DW_WINDOW(win));
}

clt_status clt_dw_backward(clt_context *ctx, clt_tensor *dx, clt_tensor *dw,
                           clt_tensor *db, const clt_tensor *dy,
                           const clt_tensor *x, const clt_tensor *w,
                           int64_t N, int64_t M, const clt_window *win,
                           bool accumulate, clt_dw_layout layout,
                           clt_tensor *work) {
  int64_t F = win->C * M;
  if (N == 0) return CLT_OK;
  if (db)
    CLT_TRY(clt_sum_channels_forward(ctx, db, dy, N, F, win->OH * win->OW,
                                     false));
  if (layout != CLT_DW_PER_VALUE)
    return backward_rows(ctx, dx, dw, dy, x, w, N, M, win, accumulate,
                         layout == CLT_DW_ROWS_EIGHTS, work);
  dw_loops loops = {win->OH * win->OW, (int64_t)ctx->work_group};
  int64_t per = clt_loop_per(ctx, N, dw_weight_loops, &loops);
  size_t local = ctx->work_group;
  size_t global = local * (size_t)(F * win->KH * win->KW);
  for (int64_t n0 = 0; dw && n0 < N; n0 += per) {
    int64_t n1 = n0 + per < N ? n0 + per : N;
    CLT_TRY(CLT_RUN(ctx, CLT_K_dw_backward_weights, 1, &global, &local,
                    KT(dw), KT(dy), KT(x), KI(n0 > 0), KI(n0), KI(n1),
                    KI(win->C), KI(M), DW_WINDOW(win)));
  }
  if (!dx) return CLT_OK;
  int64_t total = N * win->C * win->H * win->W;
  return CLT_RUN_1D(ctx, CLT_K_dw_backward_data, (size_t)total, KT(dx),
                    KT(dy), KT(w), KI(accumulate), KI(total), KI(win->C),
                    KI(M), DW_WINDOW(win));
}
