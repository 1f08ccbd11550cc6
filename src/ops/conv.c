/* im2col / col2im and the axis swap (cl/conv.cl), and the convolution's
 * forward made of them. */
#include <clblast_c.h>

#include "ops/ops.h"
#include "tensor/tensor.h"

#define WINDOW_ARGS(w)                                                         \
  KI((w)->C), KI((w)->H), KI((w)->W), KI((w)->KH), KI((w)->KW), KI((w)->OH),   \
      KI((w)->OW), KI((w)->pad_h), KI((w)->pad_w), KI((w)->stride_h),          \
      KI((w)->stride_w), KI((w)->dil_h), KI((w)->dil_w)

/* What one work-item of the row kernels below runs, in loop iterations,
 * when it takes `per` of its units (ops.h clt_loop_per). */
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int64_t im2col_cost(int64_t per, const void *arg) { /* output rows */
  const clt_window *w = arg;
  return per * (w->OW + 1) + 1;
}

static int64_t im2row_cost(int64_t per, const void *arg) { /* pixels */
  const clt_window *w = arg;
  return per * (w->C * w->KH * (w->KW + 1) + 1) + 1;
}

static int64_t col2im_cost(int64_t per, const void *arg) { /* input rows */
  const clt_window *w = arg;
  /* zeroing and fp16 rounding; each tap's output rows reading them */
  return 2 * per * w->W +
         w->KH * w->KW * (ceil_div(per, w->stride_h) * (w->OW + 1) + 1) + w->KH;
}

static int64_t row2im_cost(int64_t per, const void *arg) { /* input rows */
  const clt_window *w = arg;
  int64_t rows = ceil_div(per + (w->KH - 1) * w->dil_h, w->stride_h) + 1;
  if (rows > w->OH) rows = w->OH;
  return 2 * per * w->W + rows * (w->OW * (w->KH * (w->KW + 1) + 1) + 1);
}

clt_status clt_im2col_forward(clt_context *ctx, clt_tensor *col,
                              const clt_tensor *x, int64_t batch,
                              const clt_window *w) {
  int64_t ckk = w->C * w->KH * w->KW, pixels = batch * w->OH * w->OW;
  if (w->per_element)
    return CLT_RUN_1D(ctx, CLT_K_im2col_elems, (size_t)(ckk * pixels),
                      KT(col), KT(x), KI(batch), WINDOW_ARGS(w),
                      KI(w->rows));
  if (w->rows) { /* a work-item per output row (image, oh) */
    int64_t per = clt_loop_per(ctx, w->OW, im2row_cost, w);
    return CLT_RUN_1D(ctx, CLT_K_im2row,
                      (size_t)(batch * w->OH * clt_loop_parts(w->OW, per)),
                      KT(col), KT(x), KI(batch), WINDOW_ARGS(w), KI(per));
  }
  /* a work-item per (image, row of col) */
  int64_t per = clt_loop_per(ctx, w->OH, im2col_cost, w);
  return CLT_RUN_1D(ctx, CLT_K_im2col,
                    (size_t)(batch * ckk * clt_loop_parts(w->OH, per)), KT(col),
                    KT(x), KI(batch), WINDOW_ARGS(w), KI(per));
}

clt_status clt_col2im_backward(clt_context *ctx, clt_tensor *dx,
                               const clt_tensor *dcol, int64_t batch,
                               const clt_window *w, bool accumulate,
                               const clt_round16 *round) {
  int64_t n = batch * w->C * w->H; /* rows of dx */
  if (w->per_element)
    return CLT_RUN_1D(ctx, KR_ID(CLT_K_col2im_elems, round),
                      (size_t)(n * w->W), KT(dx), KT(dcol), KI(batch),
                      WINDOW_ARGS(w), KI(accumulate), KI(w->rows),
                      KR(round, dx));
  /* a work-item per input plane (image, channel) */
  int64_t per = clt_loop_per(ctx, w->H, w->rows ? row2im_cost : col2im_cost, w);
  return CLT_RUN_1D(ctx, KR_ID(w->rows ? CLT_K_row2im : CLT_K_col2im, round),
                    (size_t)(batch * w->C * clt_loop_parts(w->H, per)), KT(dx),
                    KT(dcol), KI(batch), WINDOW_ARGS(w), KI(accumulate),
                    KI(per), KR(round, dx));
}

clt_status clt_swap_axes01_relu(clt_context *ctx, clt_tensor *y,
                                const clt_tensor *x, const clt_tensor *bias,
                                const clt_tensor *mask, int64_t A, int64_t B,
                                int64_t S, clt_swap_relu relu,
                                const clt_round16 *round) {
  if (relu == CLT_SWAP_RELU_GRAD && !mask)
    return clt_ctx_fail(ctx, CLT_ERR_INTERNAL, "swap: a ReLU gradient "
                        "without the ReLU's output");
  /* x stands in for the buffers the kernel does not read. */
  int64_t per = clt_loop_per(ctx, S, clt_loop_cost_twice, NULL);
  return CLT_RUN_1D(ctx, KR_ID(CLT_K_swap_axes01, round),
                    (size_t)(A * B * clt_loop_parts(S, per)), KT(y), KT(x),
                    KT(bias ? bias : x), KT(mask ? mask : x), KI(A), KI(B),
                    KI(S), KI(bias != NULL), KI(relu), KI(per), KR(round, y));
}

clt_status clt_nchw_to_nhwc(clt_context *ctx, clt_tensor *y, clt_tensor *x,
                            const clt_tensor *mask, int64_t N, int64_t C,
                            int64_t P) {
  enum { TILE = 8 }; /* cl/conv.cl's NHWC_TILE */
  int64_t tiles = N * ((C + TILE - 1) / TILE) * ((P + TILE - 1) / TILE);
  /* x stands in for the mask where there is none (not read). */
  return CLT_RUN_1D(ctx, CLT_K_nchw_to_nhwc, (size_t)tiles, KT(y), KT(x),
                    KT(mask ? mask : x), KI(N), KI(C), KI(P),
                    KI(mask != NULL));
}

clt_status clt_swap_axes01(clt_context *ctx, clt_tensor *y, const clt_tensor *x,
                           const clt_tensor *bias, int64_t A, int64_t B,
                           int64_t S) {
  return clt_swap_axes01_relu(ctx, y, x, bias, NULL, A, B, S, CLT_SWAP_PLAIN,
                              NULL);
}

clt_status clt_conv2d_forward_with(clt_context *ctx, const clt_window *w,
                                   int64_t filters, int64_t batch,
                                   const clt_tensor *x, const clt_tensor *bias,
                                   clt_tensor *col, clt_tensor *tmp,
                                   clt_tensor *y,
                                   clt_status (*gemm)(void *user),
                                   void *user) {
  CLT_TRY(clt_im2col_forward(ctx, col, x, batch, w));
  CLT_TRY(gemm(user));
  return clt_swap_axes01(ctx, y, tmp, bias, filters, batch, w->OH * w->OW);
}

static clt_status window_of(const clt_conv2d_shape *s, clt_window *w) {
  *w = (clt_window){.C = s->C, .H = s->H, .W = s->W, .KH = s->KH,
                    .KW = s->KW, .pad_h = s->pad_h, .pad_w = s->pad_w,
                    .stride_h = s->stride_h ? s->stride_h : 1,
                    .stride_w = s->stride_w ? s->stride_w : 1,
                    .dil_h = s->dil_h ? s->dil_h : 1,
                    .dil_w = s->dil_w ? s->dil_w : 1};
  w->OH = clt_window_out(s->H, s->KH, s->pad_h, w->stride_h, w->dil_h);
  w->OW = clt_window_out(s->W, s->KW, s->pad_w, w->stride_w, w->dil_w);
  bool ok = s->batch > 0 && s->C > 0 && s->H > 0 && s->W > 0 &&
            s->filters > 0 && s->KH > 0 && s->KW > 0 && s->pad_h >= 0 &&
            s->pad_w >= 0 && w->stride_h > 0 && w->stride_w > 0 &&
            w->dil_h > 0 && w->dil_w > 0 && w->OH > 0 && w->OW > 0;
  return ok ? CLT_OK : CLT_ERR_SHAPE;
}

CLT_API clt_status clt_conv2d_sizes(const clt_conv2d_shape *s, int64_t *oh,
                                    int64_t *ow, int64_t *col_floats,
                                    int64_t *tmp_floats) {
  clt_window w;
  CLT_TRY(window_of(s, &w));
  int64_t cols = s->batch * w.OH * w.OW;
  if (oh) *oh = w.OH;
  if (ow) *ow = w.OW;
  if (col_floats) *col_floats = s->C * s->KH * s->KW * cols;
  if (tmp_floats) *tmp_floats = s->filters * cols;
  return CLT_OK;
}

typedef struct one_gemm {
  clt_context *ctx;
  int64_t m, n, k;
  const clt_tensor *a, *b;
  clt_tensor *c;
} one_gemm;

static clt_status run_one_gemm(void *user) {
  one_gemm *p = user;
  return clt_gemm(p->ctx, CLT_NO_TRANS, CLT_NO_TRANS, p->m, p->n, p->k, 1.0f,
                  p->a, p->b, 0.0f, p->c);
}

CLT_API clt_status clt_conv2d_forward(clt_context *ctx,
                                      const clt_conv2d_shape *s,
                                      const clt_tensor *x,
                                      const clt_tensor *weight,
                                      const clt_tensor *bias, clt_tensor *col,
                                      clt_tensor *tmp, clt_tensor *y) {
  clt_window w;
  if (window_of(s, &w) != CLT_OK)
    return clt_ctx_fail(ctx, CLT_ERR_SHAPE,
                        "conv2d: a %lldx%lld window (stride, padding, "
                        "dilation) does not fit a %lldx%lld input",
                        (long long)s->KH, (long long)s->KW, (long long)s->H,
                        (long long)s->W);
  int64_t ohw = w.OH * w.OW, ckk = s->C * s->KH * s->KW;
  if (x->numel < s->batch * s->C * s->H * s->W ||
      weight->numel < s->filters * ckk ||
      col->numel < ckk * s->batch * ohw ||
      tmp->numel < s->filters * s->batch * ohw ||
      y->numel < s->batch * s->filters * ohw ||
      (bias && bias->numel < s->filters))
    return clt_ctx_fail(ctx, CLT_ERR_SHAPE,
                        "conv2d: a tensor is smaller than the shape needs "
                        "(see clt_conv2d_sizes)");
  one_gemm p = {ctx, s->filters, s->batch * ohw, ckk, weight, col, tmp};
  return clt_conv2d_forward_with(ctx, &w, s->filters, s->batch, x, bias, col,
                                 tmp, y, run_one_gemm, &p);
}

CLT_API clt_status clt_conv2d_forward_convgemm(clt_context *ctx,
                                               const clt_conv2d_shape *s,
                                               const clt_tensor *x,
                                               const clt_tensor *weight,
                                               clt_tensor *y) {
  clt_window w;
  if (window_of(s, &w) != CLT_OK)
    return clt_ctx_fail(ctx, CLT_ERR_SHAPE, "conv2d (convgemm): bad shape");
  clt_turn_begin(ctx);
  CLBlastStatusCode rc = CLBlastSconvgemm(
      CLBlastKernelModeCrossCorrelation, (size_t)w.C, (size_t)w.H,
      (size_t)w.W, (size_t)w.KH, (size_t)w.KW, (size_t)w.pad_h,
      (size_t)w.pad_w, (size_t)w.stride_h, (size_t)w.stride_w,
      (size_t)w.dil_h, (size_t)w.dil_w, (size_t)s->filters,
      (size_t)s->batch, x->buffer, (size_t)x->offset, weight->buffer,
      (size_t)weight->offset, y->buffer, (size_t)y->offset, &ctx->queue,
      NULL);
  clt_turn_end(ctx);
  if (rc != CLBlastSuccess)
    return clt_ctx_fail(ctx, CLT_ERR_CLBLAST, "CLBlastSconvgemm: %d",
                        (int)rc);
  return CLT_OK;
}

/* ---- direct convolution (cl/conv.cl conv_direct_*) ---- */

/* The weight gradient's partial sums: output rows (n, oh) go in chunks of
 * DIRECT_ROWS, fewer and longer where the partials (per element: kept
 * apart by column too) would pass DIRECT_MAX_PARTIALS floats. Both
 * layouts chunk alike, so the workspace is the larger layout's. */
enum { DIRECT_ROWS = 64 };
#define DIRECT_MAX_PARTIALS ((int64_t)4 << 20)

static void direct_chunks(int64_t batch, int64_t F, const clt_window *w,
                          bool bias, int64_t *chunks, int64_t *per_chunk) {
  int64_t rows = batch * w->OH;
  int64_t per_slice = F * (w->C * w->KH * w->KW + (bias ? 1 : 0));
  int64_t most = DIRECT_MAX_PARTIALS / (per_slice * w->OW);
  if (most < 1) most = 1;
  int64_t n = (rows + DIRECT_ROWS - 1) / DIRECT_ROWS;
  if (n > most) n = most;
  *per_chunk = (rows + n - 1) / n;
  *chunks = (rows + *per_chunk - 1) / *per_chunk;
}

int64_t clt_conv_direct_workspace(int64_t batch, int64_t F,
                                  const clt_window *w, bool bias) {
  int64_t chunks, per_chunk;
  direct_chunks(batch, F, w, bias, &chunks, &per_chunk);
  return chunks * w->OW * F * (w->C * w->KH * w->KW + (bias ? 1 : 0));
}

/* What a work-item of conv_direct_forward runs for per output rows: each
 * row's inner columns in blocks of 16 or 8 and the others one by one
 * (cl/conv.cl inner_cols), every one a loop over the taps; the row's
 * column loop; the fp16 rounding. */
static int64_t direct_forward_cost(int64_t per, const void *arg) {
  const clt_window *w = arg;
  int64_t last = w->W - 1 + w->pad_w - (w->KW - 1) * w->dil_w;
  int64_t lo = ceil_div(w->pad_w, w->stride_w), hi;
  if (lo > w->OW) lo = w->OW;
  hi = last < 0 || w->stride_w != 1 ? lo : last / w->stride_w + 1;
  if (hi > w->OW) hi = w->OW;
  if (hi - lo < 8) hi = lo;
  int64_t inner = hi > lo ? hi - lo : 0;
  int64_t blocks = inner ? ceil_div(inner, inner >= 16 ? 16 : 8) : 0;
  int64_t taps = w->C * (w->KH * (w->KW + 1) + 1) + 1;
  return per * ((blocks + w->OW - inner) * taps + 2 * w->OW + 1) + 1;
}

clt_status clt_conv_direct_forward(clt_context *ctx, clt_tensor *y,
                                   const clt_tensor *x,
                                   const clt_tensor *weight,
                                   const clt_tensor *bias, int64_t batch,
                                   int64_t F, const clt_window *w, bool relu,
                                   const clt_round16 *round) {
  /* x stands in for the bias where there is none (not read). */
  const clt_tensor *b = bias ? bias : x;
  if (w->per_element) {
    size_t global[3] = {(size_t)w->OW, (size_t)w->OH, (size_t)(batch * F)};
    return CLT_RUN(ctx, KR_ID(CLT_K_conv_direct_forward_elems, round), 3,
                   global, NULL, KT(y), KT(x), KT(weight), KT(b), KI(batch),
                   KI(F), WINDOW_ARGS(w), KI(bias != NULL), KI(relu),
                   KR(round, y));
  }
  int64_t per = clt_loop_per(ctx, w->OH, direct_forward_cost, w);
  return CLT_RUN_1D(ctx, KR_ID(CLT_K_conv_direct_forward, round),
                    (size_t)(batch * F * clt_loop_parts(w->OH, per)), KT(y),
                    KT(x), KT(weight), KT(b), KI(batch), KI(F), WINDOW_ARGS(w),
                    KI(bias != NULL), KI(relu), KI(per), KR(round, y));
}

clt_status clt_conv_direct_wgrad(clt_context *ctx, clt_tensor *dw,
                                 clt_tensor *db, const clt_tensor *x,
                                 const clt_tensor *dy, const clt_tensor *mask,
                                 int64_t batch, int64_t F, const clt_window *w,
                                 clt_tensor *work) {
  int64_t ckk = w->C * w->KH * w->KW, taps = ckk + (db ? 1 : 0);
  int64_t chunks, per_chunk;
  direct_chunks(batch, F, w, db != NULL, &chunks, &per_chunk);
  if (work->numel < chunks * w->OW * F * taps)
    return clt_ctx_fail(ctx, CLT_ERR_INTERNAL,
                        "conv direct: a workspace of %lld floats where "
                        "%lld are needed", (long long)work->numel,
                        (long long)(chunks * w->OW * F * taps));
  /* dy stands in for the mask where there is none (not read). */
  const clt_tensor *m = mask ? mask : dy;
  if (!w->per_element) {
    /* The partials [chunks, F*C*KH*KW], then [chunks, F]. */
    CLT_TRY(CLT_RUN_1D(ctx, CLT_K_conv_direct_wgrad,
                       (size_t)(chunks * F * taps), KT(work), KT(x), KT(dy),
                       KT(m), KI(batch), KI(F), WINDOW_ARGS(w), KI(taps),
                       KI(chunks), KI(per_chunk), KI(mask != NULL)));
    CLT_TRY(clt_sum_slices(ctx, dw, work, F * ckk, chunks, 1.0f, 0.0f));
    if (!db) return CLT_OK;
    clt_tensor biases = clt_tensor_slice_1d(work, chunks * F * ckk, chunks * F);
    return clt_sum_slices(ctx, db, &biases, F, chunks, 1.0f, 0.0f);
  }
  /* The partials [chunks, F*C*KH*KW, OW], then [chunks, F, OW]. */
  size_t global[3] = {(size_t)w->OW, (size_t)chunks, (size_t)(F * taps)};
  CLT_TRY(CLT_RUN(ctx, CLT_K_conv_direct_wgrad_elems, 3, global, NULL,
                  KT(work), KT(x), KT(dy), KT(m), KI(batch), KI(F),
                  WINDOW_ARGS(w), KI(taps), KI(chunks), KI(per_chunk),
                  KI(mask != NULL)));
  CLT_TRY(clt_sum_channels_forward(ctx, dw, work, chunks, F * ckk, w->OW,
                                   false));
  if (!db) return CLT_OK;
  clt_tensor biases =
      clt_tensor_slice_1d(work, chunks * F * ckk * w->OW, chunks * F * w->OW);
  return clt_sum_channels_forward(ctx, db, &biases, chunks, F, w->OW, false);
}

/* The tiled direct convolution (cl/conv.cl conv_pad, conv_tile_weights,
 * conv_tiled16, conv_tiled8, conv_tiled_wgrad16, conv_tiled_wgrad8 and
 * their _small forms). */
enum { TILE_F = 8 }; /* cl/conv.cl's TILE_F: the weight tiles' filters */

/* A v's kernels and register tiles (cl/conv.cl's CONV_TILED and
 * CONV_TILED_WGRAD instances): blocks of `cols` columns, the forward's
 * tf filters by tr rows, the weight gradient's wf filters by wt taps. */
typedef struct tiled_shape {
  int cols, tf, tr, wf, wt;
  clt_kernel_id forward, wgrad;
} tiled_shape;

static tiled_shape shape_of(int v) {
  bool small = v & CLT_TILED_SMALL;
  int cols = v & ~CLT_TILED_SMALL;
  tiled_shape t = {
      cols, 8, 3, 8, 3, CLT_K_conv_tiled8, CLT_K_conv_tiled_wgrad8};
  if (small) {
    t.tf = 4;
    t.tr = 2;
    t.wf = 3;
    t.wt = 3;
  }
  if (cols == 16) {
    t.forward = small ? CLT_K_conv_tiled16_small : CLT_K_conv_tiled16;
    t.wgrad = small ? CLT_K_conv_tiled_wgrad16_small : CLT_K_conv_tiled_wgrad16;
  } else if (small) {
    t.forward = CLT_K_conv_tiled8_small;
    t.wgrad = CLT_K_conv_tiled_wgrad8_small;
  }
  return t;
}

/* The padded input's rows (Hp) and their width (Wq) for blocks of v
 * output columns. */
static void tiled_geometry(const clt_window *w, int v, int64_t *hp,
                           int64_t *wq) {
  int cols = shape_of(v).cols;
  *hp = w->OH + w->dil_h * (w->KH - 1);
  *wq = ceil_div(w->OW, cols) * cols + w->dil_w * (w->KW - 1);
}

/* The loop iterations of a tiled work-item: every tap's tr loads and
 * tr*tf multiply-adds, the tap rows, the stores and their fp16
 * rounding. */
static int64_t tiled_cost(const clt_window *w, int v) {
  tiled_shape t = shape_of(v);
  return w->C * w->KH * (w->KW * t.tr * (t.tf + 1) + 1) +
         t.tr * t.tf * (3 * t.cols + 3);
}

/* conv_pad's loops for per rows of width *wq. */
static int64_t pad_cost(int64_t per, const void *arg) {
  return per * (*(const int64_t *)arg + 3) + 1;
}

bool clt_conv_tiled_fits(const clt_context *ctx, const clt_window *w, int v) {
  int64_t hp, wq;
  tiled_geometry(w, v, &hp, &wq);
  int cols = v & ~CLT_TILED_SMALL;
  return (cols == 8 || cols == 16) && w->stride_h == 1 && w->stride_w == 1 &&
         tiled_cost(w, v) <= ctx->loop_limit &&
         pad_cost(1, &wq) <= ctx->loop_limit;
}

/* The padded copy's floats. */
static int64_t tiled_input_len(int64_t batch, const clt_window *w, int v) {
  int64_t hp, wq;
  tiled_geometry(w, v, &hp, &wq);
  return batch * w->C * hp * wq;
}

int64_t clt_conv_tiled_weights_len(int64_t F, const clt_window *w) {
  return ceil_div(F, TILE_F) * TILE_F * w->C * w->KH * w->KW;
}

int64_t clt_conv_tiled_workspace(int64_t batch, const clt_window *w, int v) {
  return tiled_input_len(batch, w, v);
}

/* The weights' element of (output channel o, input channel i, kh, kw)
 * read at ws[0] + o*ws[1] + i*ws[2] + kh*ws[3] + kw*ws[4], into tiles
 * (F rounded up to whole tiles; the surplus filters zero). */
static clt_status tile_weights(clt_context *ctx, clt_tensor *tiles,
                               const clt_tensor *weight, int64_t F,
                               const clt_window *w, const int64_t ws[5]) {
  int64_t len = clt_conv_tiled_weights_len(F, w);
  if (tiles->numel < len)
    return clt_ctx_fail(ctx, CLT_ERR_INTERNAL,
                        "conv tiled: %lld floats for weight tiles of %lld",
                        (long long)tiles->numel, (long long)len);
  return CLT_RUN_1D(ctx, CLT_K_conv_tile_weights, (size_t)len, KT(tiles),
                    KT(weight), KI(F), KI(w->C), KI(w->KH), KI(w->KW),
                    KI(ws[0]), KI(ws[1]), KI(ws[2]), KI(ws[3]), KI(ws[4]));
}

clt_status clt_conv_tile_weights(clt_context *ctx, clt_tensor *tiles,
                                 const clt_tensor *weight, int64_t F,
                                 const clt_window *w) {
  int64_t kk = w->KH * w->KW;
  const int64_t ws[5] = {0, w->C * kk, kk, w->KW, 1};
  return tile_weights(ctx, tiles, weight, F, w, ws);
}

/* src [planes, H, W] into dst [planes, hp, wq] at (pad_h, pad_w), zeros
 * around. */
static clt_status pad_planes(clt_context *ctx, clt_tensor *dst,
                             const clt_tensor *src, int64_t planes,
                             int64_t H, int64_t W, int64_t hp, int64_t wq,
                             int64_t pad_h, int64_t pad_w) {
  int64_t per = clt_loop_per(ctx, hp, pad_cost, &wq);
  return CLT_RUN_1D(ctx, CLT_K_conv_pad,
                    (size_t)(planes * clt_loop_parts(hp, per)), KT(dst),
                    KT(src), KI(planes), KI(H), KI(W), KI(hp), KI(wq),
                    KI(pad_h), KI(pad_w), KI(per));
}

/* y (or dx) from x (or dy) padded into work and the weights' tiles
 * (clt_conv_tile_weights). */
static clt_status tiled_run(clt_context *ctx, int v, clt_tensor *y,
                            const clt_tensor *x, const clt_tensor *tiles,
                            const clt_tensor *bias, int64_t batch, int64_t F,
                            const clt_window *w, bool relu, bool accumulate,
                            const clt_round16 *round, clt_tensor *work) {
  int64_t hp, wq, need = clt_conv_tiled_workspace(batch, w, v);
  tiled_geometry(w, v, &hp, &wq);
  if (!clt_conv_tiled_fits(ctx, w, v) || work->numel < need ||
      tiles->numel < clt_conv_tiled_weights_len(F, w))
    return clt_ctx_fail(ctx, CLT_ERR_INTERNAL,
                        "conv tiled: a window it does not run, a "
                        "workspace of %lld floats where %lld are needed, "
                        "or weight tiles too short",
                        (long long)work->numel, (long long)need);
  clt_tensor xp = clt_tensor_slice_1d(work, 0, need);
  CLT_TRY(pad_planes(ctx, &xp, x, batch * w->C, w->H, w->W, hp, wq,
                     w->pad_h, w->pad_w));
  tiled_shape t = shape_of(v);
  int64_t items = batch * ceil_div(F, t.tf) * ceil_div(w->OH, t.tr) *
                  ceil_div(w->OW, t.cols);
  /* x stands in for the bias where there is none (not read). */
  return CLT_RUN_1D(ctx, KR_ID(t.forward, round), (size_t)items, KT(y), KT(&xp),
                    KT(tiles), KT(bias ? bias : x), KI(batch), KI(F), KI(w->C),
                    KI(w->KH), KI(w->KW), KI(w->OH), KI(w->OW), KI(hp), KI(wq),
                    KI(w->dil_h), KI(w->dil_w), KI(bias != NULL), KI(relu),
                    KI(accumulate), KR(round, y));
}

clt_status clt_conv_tiled_forward(clt_context *ctx, int v, clt_tensor *y,
                                  const clt_tensor *x,
                                  const clt_tensor *tiles,
                                  const clt_tensor *bias, int64_t batch,
                                  int64_t F, const clt_window *w, bool relu,
                                  const clt_round16 *round, clt_tensor *work) {
  return tiled_run(ctx, v, y, x, tiles, bias, batch, F, w, relu, false,
                   round, work);
}

/* The data gradient's window: dy [batch, F, OH, OW] in, dx [batch, C, H,
 * W] out, padded by dil*(K-1) - pad (stride 1). */
static clt_window dgrad_window(const clt_window *w, int64_t F) {
  clt_window t = *w;
  t.C = F;
  t.H = w->OH;
  t.W = w->OW;
  t.OH = w->H;
  t.OW = w->W;
  t.pad_h = w->dil_h * (w->KH - 1) - w->pad_h;
  t.pad_w = w->dil_w * (w->KW - 1) - w->pad_w;
  return t;
}

bool clt_conv_tiled_dgrad_fits(const clt_context *ctx, const clt_window *w,
                               int64_t F, int v) {
  clt_window t = dgrad_window(w, F); /* w's strides: fits checks them */
  return t.pad_h >= 0 && t.pad_w >= 0 && clt_conv_tiled_fits(ctx, &t, v);
}

int64_t clt_conv_tiled_dgrad_workspace(int64_t batch, int64_t F,
                                       const clt_window *w, int v) {
  clt_window t = dgrad_window(w, F);
  return clt_conv_tiled_workspace(batch, &t, v) +
         clt_conv_tiled_weights_len(w->C, &t);
}

clt_status clt_conv_tiled_dgrad(clt_context *ctx, int v, clt_tensor *dx,
                                const clt_tensor *dy,
                                const clt_tensor *weight, int64_t batch,
                                int64_t F, const clt_window *w,
                                bool accumulate, const clt_round16 *round,
                                clt_tensor *work) {
  if (!clt_conv_tiled_dgrad_fits(ctx, w, F, v))
    return clt_ctx_fail(ctx, CLT_ERR_INTERNAL,
                        "conv tiled: a data gradient it does not run");
  clt_window t = dgrad_window(w, F);
  /* dx's channel c, dy's f, tap (kh, kw): weight [f][c][KH-1-kh][KW-1-kw]. */
  int64_t kk = w->KH * w->KW;
  const int64_t ws[5] = {kk - 1, kk, w->C * kk, -w->KW, -1};
  int64_t xlen = clt_conv_tiled_workspace(batch, &t, v);
  int64_t tlen = clt_conv_tiled_weights_len(w->C, &t);
  if (work->numel < xlen + tlen)
    return clt_ctx_fail(ctx, CLT_ERR_INTERNAL,
                        "conv tiled: a data gradient's workspace of %lld "
                        "floats where %lld are needed",
                        (long long)work->numel, (long long)(xlen + tlen));
  clt_tensor xp = clt_tensor_slice_1d(work, 0, xlen);
  clt_tensor tiles = clt_tensor_slice_1d(work, xlen, tlen);
  CLT_TRY(tile_weights(ctx, &tiles, weight, w->C, &t, ws));
  return tiled_run(ctx, v, dx, dy, &tiles, NULL, batch, w->C, &t, false,
                   accumulate, round, &xp);
}

/* The tiled weight gradient's partial sums may take this many floats at
 * most: chunks of rows grow past one image where they would not fit. */
#define TILED_MAX_PARTIALS ((int64_t)4 << 20)

#define WGRAD_BLOCKS 64

/* A tiled weight-gradient work-item's loop iterations for per rows. */
typedef struct wgrad_cost_arg {
  const clt_window *w;
  int v;
} wgrad_cost_arg;

static int64_t wgrad_cost(int64_t per, const void *arg) {
  const wgrad_cost_arg *a = arg;
  tiled_shape t = shape_of(a->v);
  int64_t blocks = ceil_div(a->w->OW, t.cols);
  /* a row: per block wf loads of dy, wt of x and their multiply-adds;
   * the pointer steps; then the setup and the lane sums */
  return per * (blocks * (t.wf + t.wt * (t.wf + 1)) + t.wf + t.wt + 1) +
         t.wf * t.wt * 6 + t.wf + t.wt;
}

/* The rows (n*OH + oh) of a chunk: one image's, more where the partials
 * would not fit, fewer where the loops would pass the device's limit;
 * 0 where one row passes it. */
static int64_t wgrad_rows(const clt_context *ctx, int64_t batch, int64_t F,
                          const clt_window *w, int v) {
  wgrad_cost_arg a = {w, v};
  if (wgrad_cost(1, &a) > ctx->loop_limit) return 0;
  int64_t rows = batch * w->OH, taps = w->C * w->KH * w->KW;
  /* At least WGRAD_BLOCKS blocks of columns a work-item: with a chunk an
   * image, the tiled backward of 7x7 and 11x11 planes took 1.3-1.7x as
   * long on POCL (a work-item's setup and lane sums against a short
   * loop). */
  int64_t per = ceil_div(WGRAD_BLOCKS, ceil_div(w->OW, shape_of(v).cols));
  if (per < w->OH) per = w->OH;
  int64_t least = ceil_div(rows * F * taps, TILED_MAX_PARTIALS);
  if (per < least) per = least;
  if (per > rows) per = rows;
  int64_t most = clt_loop_most(rows, ctx->loop_limit, wgrad_cost, &a);
  return per < most ? per : most;
}

bool clt_conv_tiled_wgrad_fits(const clt_context *ctx, const clt_window *w,
                               int64_t F, int v) {
  return clt_conv_tiled_fits(ctx, w, v) && wgrad_rows(ctx, 1, F, w, v) > 0;
}

int64_t clt_conv_tiled_wgrad_workspace(const clt_context *ctx, int64_t batch,
                                       int64_t F, const clt_window *w,
                                       int v) {
  /* The most any batch up to `batch` needs (a smaller last batch may cut
   * its rows into more chunks). */
  int64_t most = 0;
  for (int64_t b = 1; b <= batch; b++) {
    int64_t per = wgrad_rows(ctx, b, F, w, v);
    if (per < 1) return 0;
    int64_t chunks = ceil_div(b * w->OH, per);
    if (chunks > most) most = chunks;
  }
  return most * F * w->C * w->KH * w->KW;
}

/* dy's padded copy: rows of whole blocks. The data gradient pads dy
 * again (its window's padding): reading the weight gradient's rows from
 * that copy instead saved a copy a layer, but on POCL (2-core EPYC,
 * AVX-512, the ResNet at batch 64, 2026-12-02) the weight gradient then
 * took as much longer as the copy had taken (rows of 34 unaligned: conv_pad
 * 1.70 -> 1.39 ms a step, conv_tiled_wgrad16 2.1-2.3 -> 2.6-2.7; rows of
 * 48 aligned: -0.1 and +0.1 ms), so each keeps its own. */
static int64_t wgrad_dy_len(int64_t batch, int64_t F, const clt_window *w,
                            int v) {
  int cols = shape_of(v).cols;
  return batch * F * w->OH * ceil_div(w->OW, cols) * cols;
}

int64_t clt_conv_tiled_wgrad_pads(int64_t batch, int64_t F,
                                  const clt_window *w, int v) {
  return tiled_input_len(batch, w, v) + wgrad_dy_len(batch, F, w, v);
}

clt_status clt_conv_tiled_wgrad(clt_context *ctx, int v, clt_tensor *dw,
                                clt_tensor *partials, const clt_tensor *x,
                                const clt_tensor *dy, int64_t batch,
                                int64_t F, const clt_window *w,
                                clt_tensor *work) {
  int64_t hp, wq, per = wgrad_rows(ctx, batch, F, w, v);
  tiled_geometry(w, v, &hp, &wq);
  int64_t xlen = tiled_input_len(batch, w, v), taps = w->C * w->KH * w->KW;
  tiled_shape t = shape_of(v);
  int64_t dylen = wgrad_dy_len(batch, F, w, v);
  int64_t ldy = ceil_div(w->OW, t.cols) * t.cols;
  int64_t chunks = per > 0 ? ceil_div(batch * w->OH, per) : 0;
  if (!clt_conv_tiled_fits(ctx, w, v) || per < 1 ||
      work->numel < xlen + dylen || partials->numel < chunks * F * taps)
    return clt_ctx_fail(ctx, CLT_ERR_INTERNAL,
                        "conv tiled: a weight gradient it does not run, or "
                        "workspaces too small");
  clt_tensor xp = clt_tensor_slice_1d(work, 0, xlen);
  clt_tensor dyp = clt_tensor_slice_1d(work, xlen, dylen);
  CLT_TRY(pad_planes(ctx, &xp, x, batch * w->C, w->H, w->W, hp, wq,
                     w->pad_h, w->pad_w));
  CLT_TRY(pad_planes(ctx, &dyp, dy, batch * F, w->OH, w->OW, w->OH, ldy, 0,
                     0));
  int64_t items = chunks * ceil_div(F, t.wf) * ceil_div(taps, t.wt);
  CLT_TRY(CLT_RUN_1D(ctx, t.wgrad, (size_t)items, KT(partials), KT(&xp),
                     KT(&dyp), KI(batch), KI(F), KI(w->C), KI(w->KH),
                     KI(w->KW), KI(w->OH), KI(w->OW), KI(hp), KI(wq),
                     KI(ldy), KI(w->dil_h), KI(w->dil_w), KI(per),
                     KI(chunks)));
  return clt_sum_slices(ctx, dw, partials, F * taps, chunks, 1.0f, 0.0f);
}
