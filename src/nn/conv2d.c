/* conv2d filters=N kernel=K[xK] [stride=S] [padding=P|same|valid]
 *        [dilation=D] [bias=true] [init=glorot|he] [groups=1]
 *        [activation=...]
 * NCHW, weight [filters, C, KH, KW] and bias [filters] as PyTorch's Conv2d.
 * Every product covers the whole batch in one CLBlast GEMM: im2col lays the
 * batch side by side, col [C*KH*KW, batch*OH*OW], so
 *   forward  y' [filters, batch*OH*OW] = W col, then y = swap(y') + bias;
 *   backward col = im2col(x) again, dy' = swap(dy), dW = dy' col^T,
 *            db = row sums of dy', dcol = W^T dy', dx = col2im(dcol).
 * col is the largest buffer of a layer (KH*KW times its input), so it is
 * not kept from the forward to the backward but made again there: then
 * every convolution's col and tmp are workspaces of one step, which the
 * graph shares between layers (graph/memplan.c), for the price of one
 * im2col per layer and step.
 * Each product may also run per image (the column blocks of col) and the
 * weight gradient split along k into partial products (ops/gemm_plan.h);
 * which is fastest depends on the device (one GEMM suits POCL, per image
 * an H100's weight gradient 50x better), so compile measures them
 * (graph/plan.c) and the steps run the plans chosen.
 * Per image, the products need no swap ("NCHW direct"): image b's columns
 * of col, col_b = col[:, b*OH*OW .. (b+1)*OH*OW), give
 *   forward  y[b] [filters, OH*OW] = W col_b, then y += bias over NCHW;
 *   backward db = sums of dy over NCHW, dW = sum over b of dy[b] col_b^T
 *            (per-image partials summed in order, as split-K),
 *            dcol_b = W^T dy[b];
 * each a strided-batched GEMM. The backward has a third way, "rows": the
 * unfold transposed, row [batch*OH*OW, C*KH*KW] (im2row), and dy in NHWC,
 * dy' [batch*OH*OW, filters] (in tmp, as the swaps' dy'), give
 *   backward dW = dy'^T row, db = sums of dy over NCHW, drow = dy' W,
 *            dx = row2im(drow);
 * the weight gradient is then a TN product, the form CLBlast's Xgemm runs
 * without copying an operand (conv2's dW on POCL: 46 against 34 GFLOP/s
 * for the NT product of the swaps), and split-K applies to it as to the
 * swaps'. Whether any of this beats one GEMM and a swap depends on the
 * device too, so the forward's and the backward's layouts are measured as
 * well, each whole way timed (the swap and the bias kernels with the GEMMs
 * that need them; backward, from x and dy to dW, db and dx, the unfold
 * and the fold included).
 * A window with few taps (C*KH*KW <= DIRECT_MAX_TAPS: a first layer's
 * 3x3 over one or three channels) is also offered the direct kernels
 * (ops/conv.c, a work-item per output row or per element): forward, y
 * straight from x with the bias and the ReLU, no unfold and no GEMM;
 * backward, dW and db as partial sums straight from x and dy, added up in
 * order, and dcol per image as NCHW direct's. Their GEMMs' k would be the
 * tap count, which CLBlast pads to its tile: the CNN's first convolution
 * (k = 9) ran its products at 6-13 GFLOP/s on POCL against 50-70 for the
 * second's.
 * Every window is also offered the implicit GEMMs (ops/conv_implicit.h,
 * one way per tile configuration; under mixed precision, where the device
 * has the fp16 route, its fp16 configurations too): forward, y straight
 * from x and W with the bias and the ReLU, no unfold, no swap; backward,
 * dy through the fused ReLU and db as NCHW direct's, then dW from x and dy
 * (its k range cut into chunks, enough for every compute unit to have
 * work-groups) and dx from W and dy, added in place: no unfold, no fold.
 * Shaped for GPUs, where im2col and col2im took a third of the ResNet's
 * step; measured like the others.
 * Stride-1 windows are also offered the tiled ways (ops/conv.c
 * clt_conv_tiled_*, blocks of 16 or 8 output columns), shaped for CPU
 * devices, where im2col, col2im and the swaps took a third of the
 * ResNet's step on POCL: forward, x padded into col and y straight from
 * it with the bias and the ReLU, a register tile of 8 filters by 3 rows
 * a work-item, or in the "small" ways 4 by 2 (a CPU with 16 vector
 * registers: 8 by 3 spilled there); backward, dy through the fused ReLU
 * and db as NCHW direct's, dW from x and dy both padded into col
 * (partial sums over chunks of rows in work; 8 filters by 3 taps a
 * work-item, small 3 by 3), then dx as the forward's kernel over dy
 * padded into col with the weights flipped (stride 1 makes the data
 * gradient a convolution), added where dx accumulates: no unfold, no
 * GEMM, no swap.
 * A 1x1 window of stride 1 without padding (a pointwise convolution:
 * MobileNet's, ConvNeXt's) is also offered the pointwise way, where col_b
 * is image b of x itself: forward y[b] = W x[b], backward dW = sum over b
 * of dy[b] x[b]^T and dx[b] = W^T dy[b] (written or added), each one
 * strided-batched GEMM on x, y, dy and dx as they lie in NCHW (no unfold,
 * no fold, no swap), by the kernel of our own that the product's plan
 * chose where it runs one image's shape, else by CLBlast. Where ConvNeXt's
 * 1x1 convolutions ran on POCL as an unfold, a GEMM and a swap, the
 * copies took a fifth of the step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "ops/conv_implicit.h"
#include "ops/gemm_blocked.h"
#include "ops/gemm_tuning.h"

static const char *const keys[] = {
    "filters", "kernel", "stride", "padding", "dilation", "bias", "init",
    "groups",  "activation", "name", "input", "inputs", NULL};
static const char *const inits[] = {"glorot", "he", NULL};

typedef struct conv_state {
  clt_window w;
  int64_t filters;
  bool bias;
  /* Workspaces, planned by the graph (which owns them); the forward's
   * and the backward's may share memory with other layers' in between. */
  clt_tensor *col;   /* forward: [C*KH*KW, max_batch*OH*OW] */
  clt_tensor *tmp;   /* forward: [filters, max_batch*OH*OW], y' (the swap
                        layout's; unused by NCHW direct, as btmp) */
  clt_tensor *bcol;  /* backward: col again (kept from the forward where
                        that costs no memory, else made again), then dcol */
  bool col_kept;
  clt_tensor *btmp;  /* backward: dy' */
  clt_tensor *work;  /* backward: split-K, per-image or the tiled way's
                        partial products of dW (or NULL) */
  /* Plans for the products over max_batch (forward, dW, dcol; the rows
   * backward's dW and drow). */
  clt_gemm_plan plan_fwd, plan_dw, plan_dcol, plan_dwr, plan_drow;
  /* The layouts chosen, forward and backward (run_way's ways: the GEMMs
   * above and a swap, NCHW direct, NCHW direct with its GEMMs in the
   * column-major form, or (backward) rows). */
  int fwd_way, bwd_way;
  /* col2im with a work-item per element (im2col's choice is w's). */
  bool col2im_elems;
  /* The implicit backward's chunks of dW's k range, per tile
   * configuration. */
  int implicit_splits[CLT_IGEMM_CONFIGS];
  /* With a batchnorm folded in (clt_graph_node.bn_fold): the weights and
   * the bias an evaluation forward runs with, made again when the
   * parameters were written since fold_version (clt_graph.params_version;
   * 0: never made). */
  clt_tensor *fold_w, *fold_b;
  uint64_t fold_version;
  /* The tiled ways' forward: the weights in tiles (clt_conv_tile_weights),
   * those of tiles_of (the parameter or fold_w) at tiles_version (0:
   * none), and the graph's frozen_params_version then (tiles_current);
   * NULL where no tiled way is offered. */
  clt_tensor *tiles;
  const clt_tensor *tiles_of;
  uint64_t tiles_version, tiles_frozen_version;
} conv_state;

/* The NCHW weight gradient's per-image partials may use this many floats
 * at most (split-K's limit, graph/plan.c). */
#define NCHW_MAX_WORKSPACE ((int64_t)16 << 20)

/* run_way's ways; WAY_IMPLICIT + c: the implicit GEMMs in tile
 * configuration c. */
enum { WAY_SWAP, WAY_NCHW, WAY_NCHW_CT, WAY_ROWS, WAY_DIRECT,
       WAY_DIRECT_ELEMS, WAY_TILED16, WAY_TILED8, WAY_TILED16_SMALL,
       WAY_TILED8_SMALL, WAY_POINTWISE, WAY_IMPLICIT };

/* A 1x1 window of stride 1 without padding: col is x itself, image by
 * image (the pointwise way's ground). */
static bool pointwise(const clt_window *w) {
  return w->KH == 1 && w->KW == 1 && w->stride_h == 1 && w->stride_w == 1 &&
         w->pad_h == 0 && w->pad_w == 0;
}

/* Whether a way is one of the tiled ones, and its blocks of output
 * columns and register tiles (ops.h clt_conv_tiled_forward's v). */
static bool tiled_way(int way) {
  return way >= WAY_TILED16 && way <= WAY_TILED8_SMALL;
}
static int tiled_v(int way) {
  int small = way >= WAY_TILED16_SMALL ? CLT_TILED_SMALL : 0;
  return ((way - WAY_TILED16) % 2 ? 8 : 16) | small;
}

/* The direct way (cl/conv.cl conv_direct_*, a work-item per row or per
 * element) is offered to windows of at most this many taps (C*KH*KW):
 * below it the GEMMs' k is smaller than CLBlast's tiles; above it the
 * products are the GEMMs' own ground. */
#define DIRECT_MAX_TAPS 64

/* The three products over `batch` images (conv2d's header comment). */
static clt_gemm_product forward_product(const conv_state *s, int64_t batch) {
  const clt_window *w = &s->w;
  return (clt_gemm_product){CLT_NO_TRANS, CLT_NO_TRANS, s->filters,
                            batch * w->OH * w->OW, w->C * w->KH * w->KW,
                            batch, false};
}

static clt_gemm_product wgrad_product(const conv_state *s, int64_t batch) {
  const clt_window *w = &s->w;
  return (clt_gemm_product){CLT_NO_TRANS, CLT_TRANS, s->filters,
                            w->C * w->KH * w->KW, batch * w->OH * w->OW,
                            batch, true};
}

static clt_gemm_product dgrad_product(const conv_state *s, int64_t batch) {
  const clt_window *w = &s->w;
  return (clt_gemm_product){CLT_TRANS, CLT_NO_TRANS, w->C * w->KH * w->KW,
                            batch * w->OH * w->OW, s->filters, batch, false};
}

/* The rows backward's: dW = dy'^T row, the swaps' dW with both operands
 * stored the other way round, and drow = dy' W (the images cut m: one
 * GEMM). */
static clt_gemm_product wgrad_rows_product(const conv_state *s,
                                           int64_t batch) {
  clt_gemm_product p = wgrad_product(s, batch);
  p.ta = CLT_TRANS;
  p.tb = CLT_NO_TRANS;
  return p;
}

static clt_gemm_product drow_product(const conv_state *s, int64_t batch) {
  const clt_window *w = &s->w;
  return (clt_gemm_product){CLT_NO_TRANS, CLT_NO_TRANS,
                            batch * w->OH * w->OW, w->C * w->KH * w->KW,
                            s->filters, 1, false};
}

/* Runs one product over `batch` images with the plan chosen for the
 * compiled batch; work holds its split-K partials. */
static clt_status run_product(clt_graph *g, const conv_state *s,
                              clt_gemm_product (*make)(const conv_state *,
                                                       int64_t),
                              const clt_gemm_plan *chosen, int64_t batch,
                              const clt_tensor *a, const clt_tensor *b,
                              clt_tensor *c, clt_tensor *work) {
  clt_gemm_product planned = make(s, g->max_batch), run = make(s, batch);
  clt_gemm_plan plan = clt_gemm_plan_for(chosen, &planned, &run);
  return clt_gemm_plan_run(g->ctx, &run, &plan, 1.0f, a, b, 0.0f, c, work);
}

/* What a forward or backward reads and writes, over `batch` images (bias,
 * db and dcol NULL where the layer has none). */
typedef struct conv_io {
  int64_t batch;
  const clt_tensor *weight, *bias;
  const clt_tensor *x; /* the input (unfolded into col, but by the direct
                          way) */
  clt_tensor *dx;      /* backward: its gradient (NULL: none wanted) */
  bool acc;            /* add into dx (else overwrite) */
  clt_tensor *col;  /* im2col of x (rows: im2row); the backward overwrites
                       it with dcol (drow) */
  clt_tensor *tmp;  /* y' or dy' (the swap layout's) */
  clt_tensor *y;    /* forward: NCHW output */
  clt_tensor *dy;   /* backward: NCHW gradient of y (a fused ReLU's
                       backward rewrites it in place) */
  clt_tensor *dw, *db, *dcol; /* dw, db NULL: the layer is frozen (every
                                 way then skips its weight gradient) */
  clt_tensor *work; /* split-K or per-image partials of dW */
  bool relu;        /* a fused ReLU (clt_graph_node.fused_relu) */
  bool colmajor;    /* NCHW direct: its GEMMs in the column-major form */
  const clt_tensor *out; /* backward with relu: the output, its mask */
  /* Mixed precision: the rounding of y (forward) or dx (backward) by the
   * kernel that writes it last (clt_graph_out_round); NULL: none. */
  const clt_round16 *round;
  /* The tiled forward: conv_state.tiles holds weight's tiles already
   * (else they are made first: the timing of a plan counts them). */
  bool tiles_ready;
} conv_io;

/* y' = W col by the forward's plan, then y = swap(y') + bias (and the
 * fused ReLU). */
static clt_status forward_swap(clt_graph *g, const conv_state *s,
                               const conv_io *io) {
  CLT_TRY(run_product(g, s, forward_product, &s->plan_fwd, io->batch,
                      io->weight, io->col, io->tmp, io->work));
  return clt_swap_axes01_relu(g->ctx, io->y, io->tmp, io->bias, NULL,
                              s->filters, io->batch, s->w.OH * s->w.OW,
                              io->relu ? CLT_SWAP_RELU : CLT_SWAP_PLAIN,
                              io->round);
}

/* The bias (and the fused ReLU) over y in NCHW, after a product that
 * wrote it. */
static clt_status bias_nchw(clt_graph *g, const conv_state *s,
                            const conv_io *io) {
  int64_t ohw = s->w.OH * s->w.OW, f = s->filters;
  if (io->bias)
    return clt_bias_channels_forward(g->ctx, io->y, io->bias, io->batch, f,
                                     ohw, io->relu, io->round);
  return io->relu ? clt_activation_forward(g->ctx, io->y, io->y,
                                           io->batch * f * ohw, CLT_ACT_RELU,
                                           0.0f, io->round)
                  : CLT_OK;
}

/* A per-image way's products, each C_b = op(A_b) op(B_b) + beta C_b for
 * every image b as one strided batch (clt_gemm_ld's): NCHW direct's
 * (`chosen` NULL) by CLBlast in the form measured (io->colmajor); the
 * pointwise way's by the kernel of our own that `chosen` (the product's
 * plan over the whole batch) names where it runs one image's shape, else
 * by CLBlast in the plan's form. */
static clt_status per_image(clt_graph *g, const conv_io *io,
                            const clt_gemm_plan *chosen, clt_transpose ta,
                            clt_transpose tb, int64_t m, int64_t n,
                            int64_t k, const clt_tensor *a, int64_t lda,
                            int64_t sa, const clt_tensor *b, int64_t ldb,
                            int64_t sb, float beta, clt_tensor *c,
                            int64_t ldc, int64_t sc) {
  clt_gemm_plan plan = {CLT_GEMM_ONE, 1, 0,
                        chosen ? chosen->colmajor : io->colmajor, 0};
  if (chosen && chosen->blocked > 0 && chosen->mma == 0 &&
      clt_gemm_blocked_fits(chosen->blocked - 1, ta, tb, m, n, k))
    plan.blocked = chosen->blocked;
  return clt_gemm_plan_call(g->ctx, &plan, ta, tb, m, n, k, 1.0f, a, lda, sa,
                            b, ldb, sb, beta, c, ldc, sc, io->batch);
}

/* Image b's block of the unfold as the per-image ways read it: NCHW
 * direct's col_b, col's columns b OH OW .. (b + 1) OH OW, or the pointwise
 * way's x[b] itself (a 1x1 window's unfold, pointwise()); its leading
 * dimension and the stride from one image's to the next. */
typedef struct image_cols {
  const clt_tensor *t;
  int64_t ld, stride;
} image_cols;

static image_cols cols_of(const conv_state *s, const conv_io *io,
                          bool pointwise_way) {
  int64_t ohw = s->w.OH * s->w.OW;
  if (pointwise_way) return (image_cols){io->x, ohw, s->w.C * ohw};
  return (image_cols){io->col, io->batch * ohw, ohw};
}

/* NCHW direct's and the pointwise way's forward: y[b] = W col_b for every
 * b as one strided-batched GEMM, straight into NCHW, then the bias (and
 * the fused ReLU). */
static clt_status forward_per_image(clt_graph *g, const conv_state *s,
                                    const conv_io *io, bool pointwise_way) {
  const clt_window *w = &s->w;
  int64_t ohw = w->OH * w->OW, ckk = w->C * w->KH * w->KW, f = s->filters;
  image_cols col = cols_of(s, io, pointwise_way);
  CLT_TRY(per_image(g, io, pointwise_way ? &s->plan_fwd : NULL,
                    CLT_NO_TRANS, CLT_NO_TRANS, f, ohw, ckk, io->weight, ckk,
                    0, col.t, col.ld, col.stride, 0.0f, io->y, ohw,
                    f * ohw));
  return bias_nchw(g, s, io);
}

/* dy' = swap(dy) (through the fused ReLU), db its row sums, then dW and
 * dcol by their plans. */
static clt_status backward_swap(clt_graph *g, const conv_state *s,
                                const conv_io *io) {
  int64_t ohw = s->w.OH * s->w.OW;
  CLT_TRY(clt_swap_axes01_relu(g->ctx, io->tmp, io->dy, NULL, io->out,
                               io->batch, s->filters, ohw,
                               io->relu ? CLT_SWAP_RELU_GRAD
                                        : CLT_SWAP_PLAIN,
                               NULL));
  if (io->db)
    CLT_TRY(clt_sum_channels_forward(g->ctx, io->db, io->tmp, 1, s->filters,
                                     io->batch * ohw, false));
  if (io->dw)
    CLT_TRY(run_product(g, s, wgrad_product, &s->plan_dw, io->batch,
                        io->tmp, io->col, io->dw, io->work));
  if (!io->dcol) return CLT_OK;
  return run_product(g, s, dgrad_product, &s->plan_dcol, io->batch,
                     io->weight, io->tmp, io->dcol, io->work);
}

/* dcol_b = W^T dy[b] for every image b, one batched GEMM (where dcol is
 * wanted). */
static clt_status dcol_nchw(clt_graph *g, const conv_state *s,
                            const conv_io *io) {
  if (!io->dcol) return CLT_OK;
  int64_t ohw = s->w.OH * s->w.OW, ckk = s->w.C * s->w.KH * s->w.KW;
  int64_t f = s->filters;
  return per_image(g, io, NULL, CLT_TRANS, CLT_NO_TRANS, ckk, ohw, f,
                   io->weight, ckk, 0, io->dy, ohw, f * ohw, 0.0f, io->dcol,
                   io->batch * ohw, ohw);
}

/* dy through the fused ReLU (in place) and db from dy in NCHW: the
 * start of the backwards that read dy as it is. */
static clt_status dy_in_nchw(clt_graph *g, const conv_state *s,
                             const conv_io *io) {
  int64_t ohw = s->w.OH * s->w.OW, f = s->filters, b = io->batch;
  if (io->relu)
    CLT_TRY(clt_activation_backward(g->ctx, io->dy, io->dy, io->out, io->out,
                                    b * f * ohw, CLT_ACT_RELU, 0.0f, false,
                                    NULL));
  if (!io->db) return CLT_OK;
  return clt_sum_channels_forward(g->ctx, io->db, io->dy, b, f, ohw, false);
}

/* NCHW direct's and the pointwise way's backward: dy through the fused
 * ReLU (in place), db from dy in NCHW; dW = sum over b of dy[b] col_b^T
 * (one batched GEMM of per-image partials, summed in order); then NCHW
 * direct's dcol_b = W^T dy[b], or the pointwise way's dx[b] = W^T dy[b]
 * straight into dx, written or added (no fold), mixed precision's
 * rounding of dx (io->round) after the product. */
static clt_status backward_per_image(clt_graph *g, const conv_state *s,
                                     const conv_io *io, bool pointwise_way) {
  const clt_window *w = &s->w;
  int64_t ohw = w->OH * w->OW, ckk = w->C * w->KH * w->KW, f = s->filters;
  int64_t b = io->batch;
  CLT_TRY(dy_in_nchw(g, s, io));
  image_cols col = cols_of(s, io, pointwise_way);
  clt_tensor *partials = b > 1 ? io->work : io->dw;
  if (io->dw)
    CLT_TRY(per_image(g, io, pointwise_way ? &s->plan_dw : NULL,
                      CLT_NO_TRANS, CLT_TRANS, f, ckk, ohw, io->dy, ohw,
                      f * ohw, col.t, col.ld, col.stride, 0.0f, partials,
                      ckk, f * ckk));
  if (io->dw && b > 1)
    CLT_TRY(clt_sum_slices(g->ctx, io->dw, io->work, f * ckk, b, 1.0f, 0.0f));
  if (!pointwise_way) return dcol_nchw(g, s, io);
  if (!io->dx) return CLT_OK;
  CLT_TRY(per_image(g, io, &s->plan_dcol, CLT_TRANS, CLT_NO_TRANS, ckk, ohw,
                    f, io->weight, ckk, 0, io->dy, ohw, f * ohw,
                    io->acc ? 1.0f : 0.0f, io->dx, ohw, ckk * ohw));
  if (!io->round || io->round->mode == 0) return CLT_OK;
  int64_t n = b * ckk * ohw;
  clt_tensor dx = clt_tensor_slice_1d(io->dx, 0, n);
  if (io->round->mode == 2)
    return clt_round_save_f16(g->ctx, &dx, (clt_tensor *)io->round->copy, n);
  return clt_round_f16(g->ctx, &dx, &dx, n);
}

/* The direct way's backward: dy through the fused ReLU (in place where dx
 * needs it too, else inside the kernel), dW and db by the direct kernel,
 * and dcol as NCHW direct's. */
static clt_status backward_direct(clt_graph *g, const conv_state *s,
                                  const conv_io *io, const clt_window *w) {
  int64_t ohw = s->w.OH * s->w.OW, f = s->filters, b = io->batch;
  if (!io->dw) { /* frozen: dy through the ReLU, then dcol */
    CLT_TRY(dy_in_nchw(g, s, io));
    return dcol_nchw(g, s, io);
  }
  bool relu_first = io->relu && io->dcol;
  if (relu_first)
    CLT_TRY(clt_activation_backward(g->ctx, io->dy, io->dy, io->out, io->out,
                                    b * f * ohw, CLT_ACT_RELU, 0.0f, false,
                                    NULL));
  CLT_TRY(clt_conv_direct_wgrad(g->ctx, io->dw, io->db, io->x, io->dy,
                                io->relu && !relu_first ? io->out : NULL, b,
                                f, w, io->work));
  return dcol_nchw(g, s, io);
}

/* dy' = dy in NHWC (through the fused ReLU, which also rewrites dy in
 * place), db the sums of dy over NCHW, then dW = dy'^T row and drow =
 * dy' W by their plans (col holds row). */
static clt_status backward_rows(clt_graph *g, const conv_state *s,
                                const conv_io *io) {
  int64_t ohw = s->w.OH * s->w.OW;
  CLT_TRY(clt_nchw_to_nhwc(g->ctx, io->tmp, io->dy, io->relu ? io->out : NULL,
                           io->batch, s->filters, ohw));
  if (io->db)
    CLT_TRY(clt_sum_channels_forward(g->ctx, io->db, io->dy, io->batch,
                                     s->filters, ohw, false));
  if (io->dw)
    CLT_TRY(run_product(g, s, wgrad_rows_product, &s->plan_dwr, io->batch,
                        io->tmp, io->col, io->dw, io->work));
  if (!io->dcol) return CLT_OK;
  return run_product(g, s, drow_product, &s->plan_drow, io->batch, io->tmp,
                     io->weight, io->dcol, NULL);
}

/* The tiled backward: dy through the fused ReLU (in place) and db as
 * NCHW direct's, dW by the tiled kernel from x (padded into col) and dy
 * (its partial sums in work), dx by the tiled kernel from W and dy
 * (padded into col once dW has read x; added where io->acc): no unfold,
 * no fold, no swap. */
static clt_status backward_tiled(clt_graph *g, const conv_state *s,
                                 const conv_io *io, int v) {
  int64_t f = s->filters, b = io->batch;
  CLT_TRY(dy_in_nchw(g, s, io));
  if (io->dw)
    CLT_TRY(clt_conv_tiled_wgrad(g->ctx, v, io->dw, io->work, io->x, io->dy,
                                 b, f, &s->w, io->col));
  if (!io->dx) return CLT_OK;
  return clt_conv_tiled_dgrad(g->ctx, v, io->dx, io->dy, io->weight, b, f,
                              &s->w, io->acc, io->round, io->col);
}

/* The implicit backward in tile configuration `config`: dy through the
 * fused ReLU (in place) and db as NCHW direct's, dW from x and dy, dx
 * from W and dy (added where io->acc). */
static clt_status backward_implicit(clt_graph *g, const conv_state *s,
                                    const conv_io *io, int config) {
  int64_t f = s->filters, b = io->batch;
  CLT_TRY(dy_in_nchw(g, s, io));
  if (io->dw)
    CLT_TRY(clt_conv_implicit_wgrad(g->ctx, config,
                                    s->implicit_splits[config], io->dw,
                                    io->work, io->x, io->dy, b, f, &s->w));
  if (!io->dx) return CLT_OK;
  return clt_conv_implicit_dgrad(g->ctx, config, io->dx, io->dy, io->weight,
                                 b, f, &s->w, io->acc, io->round);
}

static clt_status conv_configure(clt_graph *g, clt_graph_node *n,
                                 clt_layer_args *a) {
  clt_err err = {0};
  conv_state *s = calloc(1, sizeof *s);
  if (!s) return clt_node_fail(g, n, CLT_ERR_HOST_MEMORY, "state");
  n->state = s;
  clt_window *w = &s->w;
  int init = 0;
  if (clt_args_get_int(a, "filters", true, 0, 1, &s->filters, &err) !=
          CLT_OK ||
      clt_args_get_bool(a, "bias", true, &s->bias, &err) != CLT_OK ||
      clt_args_get_choice(a, "init", inits, "glorot", &init, &err) !=
          CLT_OK)
    return clt_graph_err(g, &err);
  CLT_TRY(clt_layer_check_count(g, n, "filters", s->filters));
  CLT_TRY(clt_layer_get_conv_window(g, n, a, w));
  /* groups=: PyTorch's 1 only; its depthwise case is a layer of its own */
  int64_t groups = 1;
  if (clt_args_get_int(a, "groups", false, 1, 1, &groups, &err) != CLT_OK)
    return clt_graph_err(g, &err);
  if (groups != 1 && groups == w->C && s->filters % w->C == 0)
    return clt_node_fail(g, n, CLT_ERR_FORMAT,
                         "groups=%lld (one group a channel) is a depthwise "
                         "convolution: write 'depthwise_conv2d kernel=%lld "
                         "multiplier=%lld' (followed by a 1x1 conv2d for a "
                         "separable one)",
                         (long long)groups, (long long)w->KH,
                         (long long)(s->filters / w->C));
  if (groups != 1)
    return clt_node_fail(g, n, CLT_ERR_FORMAT,
                         "groups=%lld: only 1 is supported (and depthwise "
                         "convolutions, groups equal to the %lld input "
                         "channels, as depthwise_conv2d)",
                         (long long)groups, (long long)w->C);
  n->ndim = 3;
  n->shape[0] = s->filters;
  n->shape[1] = w->OH;
  n->shape[2] = w->OW;
  int64_t wshape[4] = {s->filters, w->C, w->KH, w->KW};
  clt_param *p = clt_node_add_param(n, "weight", 4, wshape);
  p->init = CLT_INIT_UNIFORM;
  p->bound = clt_init_bound(init, w->C * w->KH * w->KW,
                            s->filters * w->KH * w->KW);
  if (s->bias) clt_node_add_param(n, "bias", 1, &s->filters);
  return CLT_OK;
}

/* A layout being measured: the layer's io over the compiled batch, the
 * ways offered (WAY_ values), and col restored before each way's checked
 * run. */
typedef struct layout_work {
  clt_graph *g;
  const conv_state *s;
  conv_io io;
  bool backward;
  int ids[CLT_MEASURE_MAX_WAYS];
} layout_work;

/* The forward or backward in a layout (the WAY_ enum), each run whole:
 * forward, x unfolded into col (not by the direct, tiled and implicit
 * ways), the products and the bias; backward, x unfolded into col
 * (im2row for rows; im2col unless the forward's col is kept; none for the
 * direct, tiled and implicit ways), the products, and col folded into
 * dx. */
static clt_status run_way(clt_graph *g, const conv_state *s,
                          const conv_io *in, bool backward, int way) {
  conv_io io = *in;
  io.colmajor = way == WAY_NCHW_CT;
  if (way >= WAY_IMPLICIT && !backward)
    return clt_conv_implicit_forward(g->ctx, way - WAY_IMPLICIT, io.y, io.x,
                                     io.weight, io.bias, io.batch,
                                     s->filters, &s->w, io.relu, io.round);
  if (way >= WAY_IMPLICIT)
    return backward_implicit(g, s, &io, way - WAY_IMPLICIT);
  bool direct = way == WAY_DIRECT || way == WAY_DIRECT_ELEMS;
  bool tiled = tiled_way(way);
  clt_window dwin = s->w; /* the direct kernels' layout */
  dwin.per_element = way == WAY_DIRECT_ELEMS;
  if (!backward) {
    if (tiled) { /* x padded into col */
      if (!io.tiles_ready)
        CLT_TRY(clt_conv_tile_weights(g->ctx, s->tiles, io.weight,
                                      s->filters, &s->w));
      return clt_conv_tiled_forward(g->ctx, tiled_v(way), io.y, io.x,
                                    s->tiles, io.bias, io.batch, s->filters,
                                    &s->w, io.relu, io.round, io.col);
    }
    if (direct)
      return clt_conv_direct_forward(g->ctx, io.y, io.x, io.weight, io.bias,
                                     io.batch, s->filters, &dwin, io.relu,
                                     io.round);
    if (way == WAY_POINTWISE) return forward_per_image(g, s, &io, true);
    CLT_TRY(clt_im2col_forward(g->ctx, io.col, io.x, io.batch, &s->w));
    return way ? forward_per_image(g, s, &io, false)
               : forward_swap(g, s, &io);
  }
  if (way == WAY_POINTWISE) return backward_per_image(g, s, &io, true);
  clt_window w = s->w;
  w.rows = way == WAY_ROWS;
  /* col holds the forward's unfold only where it is kept and the forward
   * made one. */
  bool unfold = w.rows || !s->col_kept || s->fwd_way >= WAY_DIRECT;
  /* (read only by dW: none where the layer is frozen) */
  if (!direct && !tiled && unfold && io.dw)
    CLT_TRY(clt_im2col_forward(g->ctx, io.col, io.x, io.batch, &w));
  if (direct)
    CLT_TRY(backward_direct(g, s, &io, &dwin));
  else if (tiled)
    return backward_tiled(g, s, &io, tiled_v(way));
  else if (way == WAY_ROWS)
    CLT_TRY(backward_rows(g, s, &io));
  else if (way == WAY_SWAP)
    CLT_TRY(backward_swap(g, s, &io));
  else
    CLT_TRY(backward_per_image(g, s, &io, false));
  if (!io.dx) return CLT_OK;
  w.per_element = s->col2im_elems;
  return clt_col2im_backward(g->ctx, io.dx, io.dcol, io.batch, &w, io.acc,
                             io.round);
}

static clt_status run_layout(void *user, int way) {
  layout_work *l = user;
  return run_way(l->g, l->s, &l->io, l->backward, l->ids[way]);
}

/* Before a backward way's checked run: col as the forward leaves it where
 * it is kept (the ways overwrite it with dcol). */
static clt_status refill_col(void *user) {
  layout_work *l = user;
  if (!l->s->col_kept) return CLT_OK;
  return clt_im2col_forward(l->g->ctx, l->io.col, l->io.x, l->io.batch,
                            &l->s->w);
}

/* The implicit ways (a GPU's ground) lose by far on CPU devices (POCL:
 * 15-50x), and measuring them costs a compile its time: after
 * IMPLICIT_SLOW_LAYOUTS layouts in a context where every implicit way
 * took more than IMPLICIT_SLOW_RATIO times the way chosen, they are not
 * run any more (as our own GEMM kernels, ops/gemm_measure.c); they stay
 * in the list, untimed, so that a layout's stored plan does not depend on
 * what the context measured before it. A test forcing a way by name may
 * take them always. */
#define IMPLICIT_SLOW_RATIO 3.0
#define IMPLICIT_SLOW_LAYOUTS 3

static bool implicit_timed(clt_graph *g) {
  return g->test_way_name ||
         clt_gemm_state_of(g->ctx)->implicit_slow < IMPLICIT_SLOW_LAYOUTS;
}

/* Whether the implicit GEMMs' fp16 configurations are offered: under
 * mixed precision, where the device has the fp16 route's instruction. */
static clt_status implicit_fp16(clt_graph *g, bool *on) {
  *on = false;
  if (g->precision != CLT_PRECISION_MIXED) return CLT_OK;
  clt_fp16_route route;
  CLT_TRY(clt_fp16_route_get(g->ctx, &route, NULL));
  *on = route != CLT_FP16_SGEMM;
  return CLT_OK;
}

/* Counts a layout whose implicit ways [first, count) took far longer than
 * the way chosen, each that was timed (at least one). */
static void note_implicit(clt_graph *g, const double *seconds, int first,
                          int count, int chosen) {
  if (first >= count || chosen >= first || !(seconds[chosen] > 0.0)) return;
  int timed = 0;
  for (int i = first; i < count; i++) {
    if (!(seconds[i] > 0.0)) continue;
    if (!(seconds[i] > IMPLICIT_SLOW_RATIO * seconds[chosen])) return;
    timed++;
  }
  if (timed == 0) return;
  clt_gemm_state *gs = clt_gemm_state_get(g->ctx);
  if (gs && ++gs->implicit_slow == IMPLICIT_SLOW_LAYOUTS)
    clt_ctx_log(g->ctx, CLT_LOG_INFO,
                "conv2d: the implicit-GEMM ways ran far slower than the "
                "others on %d layouts; not measured further on this device",
                IMPLICIT_SLOW_LAYOUTS);
}

/* Whether the tiled way in blocks of v columns is offered: stride 1, its
 * padded copies within col; backward, where the weight gradient's loops
 * fit the device (where it is made: not for a frozen layer), and where dx
 * is wanted, the padding allows the flipped window. */
static bool tiled_offered(clt_graph *g, const conv_state *s,
                          const conv_io *io, bool backward, int v) {
  int64_t b = g->max_batch, f = s->filters;
  const clt_window *w = &s->w;
  bool fits = s->tiles && clt_conv_tiled_fits(g->ctx, w, v) &&
              clt_conv_tiled_workspace(b, w, v) <= io->col->numel;
  if (!backward || !fits) return fits;
  return (!io->dw || (clt_conv_tiled_wgrad_fits(g->ctx, w, f, v) &&
                      clt_conv_tiled_wgrad_pads(b, f, w, v) <=
                          io->col->numel)) &&
         (!io->dx || (clt_conv_tiled_dgrad_fits(g->ctx, w, f, v) &&
                      clt_conv_tiled_dgrad_workspace(b, f, w, v) <=
                          io->col->numel));
}

/* Times the swap layout (the plans chosen) against NCHW direct in both
 * forms (where nchw_fits), backward rows, where direct the direct way,
 * the tiled ways where offered and the implicit GEMMs, forward or
 * backward, on the buffers io names; *way receives the choice (a WAY_
 * value). */
static clt_status plan_layout(clt_graph *g, clt_graph_node *n,
                              const conv_io *io, bool backward,
                              bool nchw_fits, bool direct, int *way) {
  conv_state *s = n->state;
  const clt_window *w = &s->w;
  int64_t ohw = w->OH * w->OW, ckk = w->C * w->KH * w->KW;
  int64_t b = g->max_batch;
  layout_work l = {g, s, *io, backward, {WAY_SWAP}};
  static const char *const names[] = {
      "gemm + swap",    "nchw direct",       "nchw direct c^T",
      "rows",           "direct",            "direct per element",
      "tiled 16",       "tiled 8",           "tiled 16 small",
      "tiled 8 small",  "pointwise",
      "implicit 64x64", "implicit 16x64",    "implicit 128x128",
      "implicit fp16 64x64", "implicit fp16 128x64",
      "implicit fp16 128x128"};
  int count = 1;
  if (nchw_fits) {
    l.ids[count++] = WAY_NCHW;
    l.ids[count++] = WAY_NCHW_CT;
  }
  if (backward) l.ids[count++] = WAY_ROWS;
  if (direct) {
    l.ids[count++] = WAY_DIRECT;
    l.ids[count++] = WAY_DIRECT_ELEMS;
  }
  bool skip[CLT_MEASURE_MAX_WAYS] = {false};
  int group[CLT_MEASURE_MAX_WAYS] = {0};
  /* The tiled ways as a group led by the smallest register tile in
   * blocks of 8 (the fewest registers): where it takes more than 3x as
   * long as gemm + swap (gemm_measure.c's GROUP_SLOW_RATIO), the others are
   * not run (llvmpipe: the CNN's conv2 at batch 8, 4.5-5.8x, each run of
   * the four 1.1-2.8 s forward and backward). */
  static const int tiled_order[] = {WAY_TILED8_SMALL, WAY_TILED8,
                                    WAY_TILED16, WAY_TILED16_SMALL};
  for (int o = 0; o < 4; o++)
    if (tiled_offered(g, s, io, backward, tiled_v(tiled_order[o]))) {
      group[count] = 3;
      l.ids[count++] = tiled_order[o];
    }
  if (pointwise(w) && nchw_fits) l.ids[count++] = WAY_POINTWISE;
  int implicit_first = count;
  bool fp16 = false;
  CLT_TRY(implicit_fp16(g, &fp16));
  /* The implicit ways in order of cost (the 16x64 tiles first): a first
   * that loses by far spares the device building the others. */
  static const int implicit_order[CLT_IGEMM_CONFIGS] = {1, 0, 2, 3, 4, 5};
  for (int o = 0; o < CLT_IGEMM_CONFIGS; o++) {
    int c = implicit_order[o];
    if (clt_igemm_config_fp16(c) && !fp16) continue;
    skip[count] = !implicit_timed(g);
    group[count] = clt_igemm_config_fp16(c) ? 2 : 1;
    l.ids[count++] = WAY_IMPLICIT + c;
  }
  char shape[64], key[512];
  /* A frozen layer's backward is its data gradient alone. */
  bool frozen = backward && !io->dw;
  clt_gemm_product whole = frozen     ? dgrad_product(s, b)
                           : backward ? wgrad_product(s, b)
                                      : forward_product(s, b);
  clt_gemm_product_str(&whole, shape, sizeof shape);
  /* The swap way's time depends on its products' plans too, but those are
   * stored and measured again together with this choice. */
  snprintf(key, sizeof key,
           "conv2d %lldx%lldx%lld to %lld, kernel %lldx%lld, padding "
           "%lldx%lld, stride %lldx%lld, dilation %lldx%lld, batch %lld, "
           "bias %d, relu %d, dx %d, %s%s",
           (long long)w->C, (long long)w->H, (long long)w->W,
           (long long)s->filters, (long long)w->KH, (long long)w->KW,
           (long long)w->pad_h, (long long)w->pad_w, (long long)w->stride_h,
           (long long)w->stride_w, (long long)w->dil_h, (long long)w->dil_w,
           (long long)b, s->bias, io->relu, io->dx != NULL,
           backward ? "unfold and fold included" : "unfold included",
           frozen ? ", frozen" : "");
  double flops = 2.0 * (double)s->filters * (double)ckk * (double)(b * ohw);
  if (backward && !frozen) flops *= io->dx ? 2.0 : 1.0;
  clt_tensor checks[2];
  int nchecks = 0;
  if (backward) {
    if (io->dw)
      checks[nchecks++] = clt_tensor_slice_1d(io->dw, 0, io->dw->numel);
    if (io->dx)
      checks[nchecks++] =
          clt_tensor_slice_1d(io->dx, 0, b * w->C * w->H * w->W);
  } else {
    checks[nchecks++] = clt_tensor_slice_1d(io->y, 0, s->filters * b * ohw);
  }
  clt_graph_ways ways = {
      .what = backward ? "backward layout" : "forward layout",
      .shape = shape,
      .m = whole.m,
      .n = whole.n,
      .k = whole.k,
      .key = key,
      .flops = flops,
      .work = {.count = count, .skip = skip, .group = group,
               .run = run_layout,
               .prepare = backward ? refill_col : NULL, .user = &l,
               .check_count = nchecks}};
  for (int i = 0; i < count; i++) ways.names[i] = names[l.ids[i]];
  for (int i = 0; i < nchecks; i++) ways.work.checks[i] = &checks[i];
  double seconds[CLT_MEASURE_MAX_WAYS];
  ways.seconds = seconds;
  int chosen = 0;
  CLT_TRY(clt_graph_plan_ways(g, n, &ways, &chosen));
  *way = l.ids[chosen];
  note_implicit(g, seconds, implicit_first, count, chosen);
  return CLT_OK;
}

/* im2col or col2im with a work-item per row or per element, measured. */
typedef struct copy_work {
  clt_graph *g;
  clt_window w;
  bool backward;
  clt_tensor *x, *col; /* im2col: x -> col; col2im: col -> x */
} copy_work;

static clt_status run_copy(void *user, int way) {
  copy_work *c = user;
  clt_window w = c->w;
  w.per_element = way == 1;
  if (c->backward)
    return clt_col2im_backward(c->g->ctx, c->x, c->col, c->g->max_batch, &w,
                               false, NULL);
  return clt_im2col_forward(c->g->ctx, c->col, c->x, c->g->max_batch, &w);
}

/* Chooses im2col's layout (or col2im's, backward) for this geometry: a
 * work-item per row of what it writes (the default, shaped for CPU
 * devices) or per element (coalesced, for GPUs): issue 8's "kernels laid
 * out for the device", by measurement. x and col hold fixed values. */
static clt_status plan_copy(clt_graph *g, clt_graph_node *n, bool backward,
                            clt_tensor *x, clt_tensor *col, bool *elems) {
  conv_state *s = n->state;
  const clt_window *w = &s->w;
  int64_t b = g->max_batch, rows = w->C * w->KH * w->KW;
  int64_t cols = b * w->OH * w->OW, xlen = b * w->C * w->H * w->W;
  copy_work c = {g, *w, backward, x, col};
  char shape[64], key[512];
  snprintf(shape, sizeof shape, "%s %lldx%lld",
           backward ? "col2im" : "im2col", (long long)rows, (long long)cols);
  snprintf(key, sizeof key,
           "%s %lldx%lldx%lld, kernel %lldx%lld, padding %lldx%lld, stride "
           "%lldx%lld, dilation %lldx%lld, batch %lld",
           backward ? "col2im" : "im2col", (long long)w->C, (long long)w->H,
           (long long)w->W, (long long)w->KH, (long long)w->KW,
           (long long)w->pad_h, (long long)w->pad_w, (long long)w->stride_h,
           (long long)w->stride_w, (long long)w->dil_h, (long long)w->dil_w,
           (long long)b);
  clt_tensor check = backward ? clt_tensor_slice_1d(x, 0, xlen)
                              : clt_tensor_slice_1d(col, 0, rows * cols);
  clt_graph_ways ways = {
      .what = backward ? "col2im layout" : "im2col layout",
      .shape = shape,
      .m = rows,
      .n = cols,
      .k = 1,
      .key = key,
      .flops = 0.0,
      .names = {"per row", "per element"},
      .work = {.count = 2, .run = run_copy, .user = &c, .check_count = 1}};
  ways.work.checks[0] = &check;
  int chosen = 0;
  CLT_TRY(clt_graph_plan_ways(g, n, &ways, &chosen));
  *elems = chosen == 1;
  return CLT_OK;
}

/* The chunks of the implicit weight gradient's k range (batch*OH*OW) in
 * tile configuration `config`: as many as give the device's compute units
 * two work-groups each, while a chunk keeps 16 k blocks of its own (a
 * device that reports no units gets one chunk). */
static int implicit_splits(const clt_graph *g, const conv_state *s,
                           int config) {
  const clt_window *w = &s->w;
  int64_t tiles = clt_conv_implicit_wgrad_tiles(config, s->filters, w);
  int64_t want = 2 * (int64_t)g->ctx->info.compute_units;
  int64_t k = g->max_batch * w->OH * w->OW, most = k / (16 * 16);
  int64_t splits = (want + tiles - 1) / tiles;
  if (splits > most) splits = most;
  if (splits > 4096) splits = 4096;
  return splits < 1 ? 1 : (int)splits;
}

static void release_fold(conv_state *s) {
  clt_tensor_destroy(s->fold_w);
  clt_tensor_destroy(s->fold_b);
  clt_tensor_destroy(s->tiles);
  s->fold_w = s->fold_b = s->tiles = NULL;
  s->tiles_of = NULL;
  s->fold_version = s->tiles_version = 0;
}

/* Chooses the plans, measuring on the backward's workspaces (nothing
 * else lives in them while the graph compiles): col and tmp hold a fixed
 * spread of values, each product writes what the next one reads (y' into
 * tmp, dW from tmp and col, dcol from W and tmp; the rows backward's dW
 * and drow alike). Then the copies' layouts, on the input and col; then
 * the layouts: the forward's on its own buffers (col, tmp, y, all live
 * together), the backward's on the backward's (x, col, tmp, dy, dx), with
 * a workspace for the partials of any way's dW held while measuring.
 * With a batchnorm folded in (bn_fold), first the buffers of the folded
 * weights and bias. */
static clt_status plan_products(clt_graph *g, clt_graph_node *n) {
  conv_state *s = n->state;
  clt_tensor *col = s->bcol, *tmp = s->btmp;
  release_fold(s);
  if (n->bn_fold >= 0) {
    int64_t nw = n->params[0].value.numel;
    CLT_TRY(clt_tensor_create(g->ctx, CLT_F32, 1, &nw, &s->fold_w));
    CLT_TRY(clt_tensor_create(g->ctx, CLT_F32, 1, &s->filters, &s->fold_b));
  }
  if (clt_conv_tiled_fits(g->ctx, &s->w, 8) ||
      clt_conv_tiled_fits(g->ctx, &s->w, 16)) {
    int64_t nt = clt_conv_tiled_weights_len(s->filters, &s->w);
    CLT_TRY(clt_tensor_create(g->ctx, CLT_F32, 1, &nt, &s->tiles));
  }
  clt_graph_node *in = clt_graph_in(g, n, 0);
  bool measuring = clt_graph_plans_measure(g);
  if (measuring) {
    CLT_TRY(clt_graph_plan_fill(g, col));
    CLT_TRY(clt_graph_plan_fill(g, tmp));
  }
  int64_t b = g->max_batch;
  clt_gemm_product fwd = forward_product(s, b), dw = wgrad_product(s, b),
                   dcol = dgrad_product(s, b), dwr = wgrad_rows_product(s, b),
                   drow = drow_product(s, b);
  const clt_tensor *weight = &n->params[0].value;
  /* NULL where the layer is frozen: no weight gradient to plan or run. */
  clt_tensor *dweight = clt_node_param_grad(n, 0);
  CLT_TRY(clt_graph_plan_product(g, n, "forward", &fwd, weight, col, tmp,
                                 &s->plan_fwd));
  /* No gradient (a forward-only graph): no backward to plan. */
  bool bwd = n->grad != NULL, dx = bwd && in->needs_grad;
  s->plan_dw = s->plan_dcol = s->plan_dwr = s->plan_drow =
      (clt_gemm_plan){CLT_GEMM_ONE, 1, 0, false, 0};
  if (bwd && dweight)
    CLT_TRY(clt_graph_plan_product(g, n, "weight gradient", &dw, tmp, col,
                                   dweight, &s->plan_dw));
  if (dx)
    CLT_TRY(clt_graph_plan_product(g, n, "data gradient", &dcol, weight, tmp,
                                   col, &s->plan_dcol));
  if (bwd && dweight)
    CLT_TRY(clt_graph_plan_product(g, n, "weight gradient (rows)", &dwr, tmp,
                                   col, dweight, &s->plan_dwr));
  if (dx)
    CLT_TRY(clt_graph_plan_product(g, n, "data gradient (rows)", &drow, tmp,
                                   weight, col, &s->plan_drow));
  /* The copies' layouts, on the input and col (fixed values again). */
  if (measuring) CLT_TRY(clt_graph_plan_fill(g, in->out));
  CLT_TRY(plan_copy(g, n, false, in->out, s->col, &s->w.per_element));
  if (dx && in->grad) {
    if (measuring) CLT_TRY(clt_graph_plan_fill(g, col));
    CLT_TRY(plan_copy(g, n, true, in->grad, col, &s->col2im_elems));
  }
  int64_t swap_work = clt_gemm_plan_workspace(&dw, &s->plan_dw);
  int64_t rows_work = clt_gemm_plan_workspace(&dwr, &s->plan_dwr);
  /* NCHW direct's per-image partials of dW must fit (one image needs
   * none). */
  int64_t nchw_work = b > 1 ? b * s->filters * dw.n : 0;
  bool nchw_fits = nchw_work <= NCHW_MAX_WORKSPACE;
  if (!nchw_fits) nchw_work = 0;
  bool direct = fwd.k <= DIRECT_MAX_TAPS; /* k: the window's taps */
  int64_t direct_work =
      direct ? clt_conv_direct_workspace(b, s->filters, &s->w, s->bias) : 0;
  int64_t implicit_work[CLT_IGEMM_CONFIGS];
  for (int c = 0; c < CLT_IGEMM_CONFIGS; c++) {
    s->implicit_splits[c] = implicit_splits(g, s, c);
    implicit_work[c] = clt_conv_implicit_workspace(s->implicit_splits[c], b,
                                                   s->filters, &s->w);
  }
  int64_t tiled_work[4];
  for (int i = 0; i < 4; i++) {
    int v = tiled_v(WAY_TILED16 + i);
    tiled_work[i] =
        clt_conv_tiled_wgrad_fits(g->ctx, &s->w, s->filters, v)
            ? clt_conv_tiled_wgrad_workspace(g->ctx, b, s->filters, &s->w, v)
            : 0;
  }
  int64_t most = swap_work > nchw_work ? swap_work : nchw_work;
  for (int i = 0; i < 4; i++)
    if (tiled_work[i] > most) most = tiled_work[i];
  if (rows_work > most) most = rows_work;
  if (direct_work > most) most = direct_work;
  for (int c = 0; c < CLT_IGEMM_CONFIGS; c++)
    if (implicit_work[c] > most) most = implicit_work[c];
  clt_tensor *work = NULL;
  if (measuring) {
    int64_t len = most > 1 ? most : 1;
    CLT_TRY(clt_tensor_create(g->ctx, CLT_F32, 1, &len, &work));
  }
  conv_io fio = {.batch = b, .weight = weight, .x = in->out,
                 .bias = s->bias ? &n->params[1].value : NULL,
                 .col = s->col, .tmp = s->tmp, .y = n->out, .work = work,
                 .relu = n->fused_relu};
  /* The backward reads x and the output (a fused ReLU's mask) in their
   * backward copies where mixed precision keeps them apart (graph.h): the
   * forward copies may share memory with the backward's buffers. */
  clt_tensor *bx = in->out_bwd ? in->out_bwd : in->out;
  clt_tensor *bout = n->out_bwd ? n->out_bwd : n->out;
  conv_io bio = {.batch = b, .weight = weight, .x = bx,
                 .dx = dx ? in->grad : NULL, .col = col, .tmp = tmp,
                 .dy = n->grad, .dw = dweight,
                 .db = s->bias ? clt_node_param_grad(n, 1) : NULL,
                 .dcol = dx ? col : NULL, .work = work,
                 .relu = n->fused_relu, .out = bout};
  clt_status st = CLT_OK;
  if (measuring) st = clt_graph_plan_fill(g, s->col);
  if (measuring && st == CLT_OK && n->grad)
    st = clt_graph_plan_fill(g, n->grad);
  if (st == CLT_OK)
    st = plan_layout(g, n, &fio, false, true, direct, &s->fwd_way);
  if (measuring && st == CLT_OK && n->grad && in->out_bwd)
    st = clt_graph_plan_fill(g, in->out_bwd);
  if (measuring && st == CLT_OK && n->grad && n->out_bwd)
    st = clt_graph_plan_fill(g, n->out_bwd);
  if (st == CLT_OK && n->grad)
    st = plan_layout(g, n, &bio, true, nchw_fits, direct, &s->bwd_way);
  clt_tensor_destroy(work);
  CLT_TRY(st);
  /* The tiles live on only for a tiled forward. */
  if (!tiled_way(s->fwd_way)) {
    clt_tensor_destroy(s->tiles);
    s->tiles = NULL;
  }
  /* The workspace holds partial weight gradients: none where frozen. */
  int64_t need = !dweight ? 0
                 : s->bwd_way >= WAY_IMPLICIT
                     ? implicit_work[s->bwd_way - WAY_IMPLICIT]
                 : s->bwd_way == WAY_POINTWISE ? nchw_work
                 : s->bwd_way >= WAY_TILED16
                     ? tiled_work[s->bwd_way - WAY_TILED16]
                 : s->bwd_way >= WAY_DIRECT ? direct_work
                 : s->bwd_way == WAY_ROWS ? rows_work
                 : s->bwd_way > 0         ? nchw_work
                                          : swap_work;
  return need > 0 ? clt_graph_workspace(g, n, CLT_F32, need,
                                        CLT_LIVE_BACKWARD, &s->work)
                  : CLT_OK;
}

static clt_status conv_reserve(clt_graph *g, clt_graph_node *n) {
  conv_state *s = n->state;
  const clt_window *w = &s->w;
  int64_t cols = g->max_batch * w->OH * w->OW;
  int64_t col = w->C * w->KH * w->KW * cols, tmp = s->filters * cols;
  CLT_TRY(clt_graph_workspace_keep(g, n, CLT_F32, col, &s->col, &s->bcol,
                                   &s->col_kept));
  CLT_TRY(clt_graph_workspace(g, n, CLT_F32, tmp, CLT_LIVE_FORWARD, &s->tmp));
  return clt_graph_workspace(g, n, CLT_F32, tmp, CLT_LIVE_BACKWARD, &s->btmp);
}


/* Whether the tiles hold the weights w as they are now: no parameter was
 * written since they were made, or w is the layer's own weight, frozen,
 * and nothing that reaches frozen weights was written since (an
 * optimizer's steps leave it alone: a fine-tuning run tiles it once).
 * Freezing or unfreezing compiles the graph again, which drops the tiles
 * (release_fold): a weight frozen now was frozen when they were made. */
static bool tiles_current(const clt_graph *g, const clt_graph_node *n,
                          const clt_tensor *w) {
  const conv_state *s = n->state;
  if (s->tiles_version == 0 || s->tiles_of != w) return false;
  if (s->tiles_version == g->params_version) return true;
  return w == &n->params[0].value && !n->params[0].trainable &&
         s->tiles_frozen_version == g->frozen_params_version;
}

/* The forward in the layout chosen (run_way). */
static clt_status conv_forward(clt_graph *g, clt_graph_node *n) {
  conv_state *s = n->state;
  conv_io io = {.batch = g->batch, .weight = &n->params[0].value,
                .x = clt_graph_in(g, n, 0)->out,
                .bias = s->bias ? &n->params[1].value : NULL, .col = s->col,
                .tmp = s->tmp, .y = n->out, .relu = n->fused_relu};
  clt_graph_node *bn = NULL;
  if (n->bn_fold >= 0 && !g->training) {
    /* evaluation with the batchnorm folded in: its output, its ReLU */
    bn = &g->nodes[n->bn_fold];
    CLT_TRY(clt_batchnorm_fold(g, bn, io.weight, io.bias, s->filters,
                               s->fold_w, s->fold_b, &s->fold_version));
    io.weight = s->fold_w;
    io.bias = s->fold_b;
    io.y = bn->out;
    io.relu = bn->fused_relu;
    /* The convolution's own output is not made: nothing to round. */
    n->out_rounded = true;
  }
  if (tiled_way(s->fwd_way)) {
    if (!tiles_current(g, n, io.weight)) {
      s->tiles_version = 0;
      CLT_TRY(clt_conv_tile_weights(g->ctx, s->tiles, io.weight, s->filters,
                                    &s->w));
      s->tiles_version = g->params_version;
      s->tiles_frozen_version = g->frozen_params_version;
      s->tiles_of = io.weight;
    }
    io.tiles_ready = true;
  }
  /* Every way's last kernel is ours but NCHW direct's without a bias or
   * a ReLU, where the GEMM writes y. */
  bool gemm_last = (s->fwd_way == WAY_NCHW || s->fwd_way == WAY_NCHW_CT ||
                    s->fwd_way == WAY_POINTWISE) &&
                   !io.bias && !io.relu;
  if (!gemm_last) io.round = clt_graph_out_round(g, bn ? bn : n);
  return run_way(g, s, &io, false, s->fwd_way);
}

/* The backward in the layout chosen, from x and dy to dW, db and dx
 * (run_way). */
static clt_status conv_backward(clt_graph *g, clt_graph_node *n) {
  conv_state *s = n->state;
  bool acc = false;
  clt_tensor *dx = clt_graph_input_grad(g, n, 0, &acc);
  /* dcol goes into the col buffer (col is read before it is written). */
  conv_io io = {.batch = g->batch, .weight = &n->params[0].value,
                .x = clt_graph_in(g, n, 0)->out, .dx = dx, .acc = acc,
                .col = s->bcol, .tmp = s->btmp, .dy = n->grad,
                .dw = clt_node_param_grad(n, 0),
                .db = s->bias ? clt_node_param_grad(n, 1) : NULL,
                .dcol = dx ? s->bcol : NULL, .work = s->work,
                .relu = n->fused_relu, .out = n->out};
  /* dx comes from col2im or the implicit data gradient: ours. */
  if (dx) io.round = clt_graph_grad_round(g, n, 0, acc);
  return run_way(g, s, &io, true, s->bwd_way);
}

static void conv_destroy(clt_graph_node *n) {
  if (n->state) release_fold(n->state);
  free(n->state);
}

const clt_layer_ops clt_layer_conv2d = {
    .type = "conv2d",
    .min_inputs = 1,
    .max_inputs = 1,
    .option_keys = keys,
    .configure = conv_configure,
    .reserve = conv_reserve,
    .compile = plan_products,
    .forward = conv_forward,
    .backward = conv_backward,
    .destroy = conv_destroy,
    .fuses_relu = true,
};
