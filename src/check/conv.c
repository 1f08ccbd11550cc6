/* Checks of cl/conv.cl: im2col, col2im (both layouts), the axis swap and
 * NCHW to NHWC, the direct convolution; and of cl/igemm.cl, the implicit
 * GEMMs. */
#include <stdlib.h>

#include "check/harness.h"
#include "ops/conv_implicit.h"

typedef struct window_args {
  int64_t batch;
  const clt_window *w;
  bool accumulate;
} window_args;

/* Visits every (image n, channel c, kh, kw, oh, ow) of an unfold: `at` is
 * the index in col (or, w->rows, in row), `src` that in x or -1 for
 * padding. */
#define FOR_UNFOLD(w, batch, at, src, body)                                    \
  do {                                                                         \
    int64_t sp_ = (w)->OH * (w)->OW, ckk_ = (w)->C * (w)->KH * (w)->KW;        \
    for (int64_t n_ = 0; n_ < (batch); n_++)                                   \
      for (int64_t c_ = 0; c_ < (w)->C; c_++)                                  \
        for (int64_t kh_ = 0; kh_ < (w)->KH; kh_++)                            \
          for (int64_t kw_ = 0; kw_ < (w)->KW; kw_++)                          \
            for (int64_t oh_ = 0; oh_ < (w)->OH; oh_++)                        \
              for (int64_t ow_ = 0; ow_ < (w)->OW; ow_++) {                    \
                int64_t ih_ =                                                  \
                    oh_ * (w)->stride_h - (w)->pad_h + kh_ * (w)->dil_h;       \
                int64_t iw_ =                                                  \
                    ow_ * (w)->stride_w - (w)->pad_w + kw_ * (w)->dil_w;       \
                int64_t row_ = (c_ * (w)->KH + kh_) * (w)->KW + kw_;           \
                int64_t px_ = oh_ * (w)->OW + ow_;                             \
                int64_t at = (w)->rows ? (n_ * sp_ + px_) * ckk_ + row_        \
                                       : (row_ * (batch) + n_) * sp_ + px_;    \
                int64_t src =                                                  \
                    ih_ >= 0 && ih_ < (w)->H && iw_ >= 0 && iw_ < (w)->W       \
                        ? ((n_ * (w)->C + c_) * (w)->H + ih_) * (w)->W + iw_   \
                        : -1;                                                  \
                body                                                           \
              }                                                                \
  } while (0)

static clt_status im2col_body(check_set *s, const void *arg) {
  const window_args *a = arg;
  int64_t batch = a->batch;
  clt_window w;
  CLT_TRY(check_window(s, a->w, false, &w));
  check_f32 *x, *col;
  CLT_TRY(check_operand(s, batch * w.C * w.H * w.W, -1.0f, 1.0f, &x));
  CLT_TRY(check_operand(s, batch * w.C * w.KH * w.KW * w.OH * w.OW, -1.0f, 1.0f,
                        &col));
  CLT_TRY(clt_im2col_forward(s->ctx, col->t, x->t, batch, &w));
  FOR_UNFOLD(&w, batch, at, src,
             { col->host[at] = src >= 0 ? x->host[src] : 0.0f; });
  return CLT_OK;
}

clt_status clt_check_im2col(clt_context *ctx, int64_t batch,
                            const clt_window *w, double *max_err) {
  window_args a = {batch, w, false};
  return check_run(ctx, 170, im2col_body, &a, max_err);
}

static clt_status col2im_body(check_set *s, const void *arg) {
  const window_args *a = arg;
  int64_t batch = a->batch;
  clt_window w;
  CLT_TRY(check_window(s, a->w, false, &w));
  int64_t nx = batch * w.C * w.H * w.W;
  check_f32 *dcol, *dx;
  double *sum;
  CLT_TRY(check_operand(s, batch * w.C * w.KH * w.KW * w.OH * w.OW, -1.0f, 1.0f,
                        &dcol));
  CLT_TRY(check_operand(s, nx, -1.0f, 1.0f, &dx));
  CLT_TRY(check_doubles(s, nx, &sum));
  const clt_round16 *round;
  CLT_TRY(check_round(s, dx, &round));
  CLT_TRY(clt_col2im_backward(s->ctx, dx->t, dcol->t, batch, &w, a->accumulate,
                              round));
  FOR_UNFOLD(&w, batch, at, src, {
    if (src >= 0) sum[src] += dcol->host[at];
  });
  for (int64_t i = 0; i < nx; i++)
    dx->host[i] = (float)(a->accumulate ? dx->host[i] + sum[i] : sum[i]);
  return CLT_OK;
}

clt_status clt_check_col2im(clt_context *ctx, int64_t batch,
                            const clt_window *w, bool accumulate, int round16,
                            double *max_err) {
  window_args a = {batch, w, accumulate};
  return check_run_rounded(ctx, 180, col2im_body, &a, round16, max_err);
}

/* An operand of n values that a ReLU could have output: zeros where it
 * cut (the mask of a fused ReLU's gradient). */
static clt_status relu_mask_operand(check_set *s, int64_t n, check_f32 **m) {
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, m));
  for (int64_t i = 0; i < n; i++)
    if ((*m)->host[i] < 0.0f) (*m)->host[i] = 0.0f;
  return check_upload(*m);
}

typedef struct swap_args {
  int64_t A, B, S;
  bool bias;
  int relu;
} swap_args;

static clt_status swap_body(check_set *s, const void *arg) {
  const swap_args *a = arg;
  int64_t A = a->A, B = a->B, S = a->S;
  check_f32 *x, *y, *b, *m;
  CLT_TRY(check_operand(s, A * B * S, -1.0f, 1.0f, &x));
  CLT_TRY(check_operand(s, A * B * S, -1.0f, 1.0f, &y));
  CLT_TRY(check_operand(s, A, -1.0f, 1.0f, &b));
  CLT_TRY(relu_mask_operand(s, A * B * S, &m));
  const clt_round16 *round;
  CLT_TRY(check_round(s, y, &round));
  CLT_TRY(clt_swap_axes01_relu(s->ctx, y->t, x->t, a->bias ? b->t : NULL, m->t,
                               A, B, S, (clt_swap_relu)a->relu, round));
  for (int64_t i = 0; i < A; i++)
    for (int64_t j = 0; j < B; j++)
      for (int64_t k = 0; k < S; k++) {
        int64_t at = (i * B + j) * S + k;
        float v = x->host[at] + (a->bias ? b->host[i] : 0.0f);
        if (a->relu == CLT_SWAP_RELU) v = v > 0.0f ? v : 0.0f;
        if (a->relu == CLT_SWAP_RELU_GRAD)
          v = v * (m->host[at] > 0.0f ? 1.0f : 0.0f);
        y->host[(j * A + i) * S + k] = v;
      }
  return CLT_OK;
}

clt_status clt_check_swap_axes01(clt_context *ctx, int64_t A, int64_t B,
                                 int64_t S, bool bias, int relu, int round16,
                                 double *max_err) {
  swap_args a = {A, B, S, bias, relu};
  return check_run_rounded(ctx, 190, swap_body, &a, round16, max_err);
}

typedef struct nhwc_args {
  int64_t N, C, P;
  bool relu_grad;
} nhwc_args;

static clt_status nhwc_body(check_set *s, const void *arg) {
  const nhwc_args *a = arg;
  int64_t N = a->N, C = a->C, P = a->P, n = N * C * P;
  check_f32 *x, *y, *m;
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &x));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &y));
  CLT_TRY(relu_mask_operand(s, n, &m));
  CLT_TRY(clt_nchw_to_nhwc(s->ctx, y->t, x->t, a->relu_grad ? m->t : NULL,
                           N, C, P));
  for (int64_t b = 0; b < N; b++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t p = 0; p < P; p++) {
        int64_t at = (b * C + c) * P + p;
        float v = x->host[at];
        if (a->relu_grad) {
          v = v * (m->host[at] > 0.0f ? 1.0f : 0.0f);
          x->host[at] = v; /* rewritten in place */
        }
        y->host[(b * P + p) * C + c] = v;
      }
  return CLT_OK;
}

clt_status clt_check_nchw_to_nhwc(clt_context *ctx, int64_t N, int64_t C,
                                  int64_t P, bool relu_grad,
                                  double *max_err) {
  nhwc_args a = {N, C, P, relu_grad};
  return check_run(ctx, 195, nhwc_body, &a, max_err);
}

/* The fp16 configurations take fp16 values (mixed precision's): the
 * operands rounded to them, on the host and the device. */
static clt_status implicit_inputs(check_set *s, int config, check_f32 *a,
                                  check_f32 *b) {
  if (!clt_igemm_config_fp16(config)) return CLT_OK;
  check_f32 *ops[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    uint16_t *h = malloc((size_t)ops[i]->n * sizeof(uint16_t));
    if (!h) return clt_ctx_fail(s->ctx, CLT_ERR_HOST_MEMORY, "check");
    clt_f32_to_f16(ops[i]->host, h, ops[i]->n);
    clt_f16_to_f32(h, ops[i]->host, ops[i]->n);
    free(h);
    CLT_TRY(check_upload(ops[i]));
  }
  return CLT_OK;
}

typedef struct direct_args {
  int64_t batch, F;
  const clt_window *w;
  bool bias, relu;
  int config; /* conv_forward_body: an implicit GEMM's (-1: direct) */
  int tiled;  /* conv_forward_body: the tiled kernel's columns (0: none) */
} direct_args;

/* Visits every tap (n, f, oh, ow, c, kh, kw) that reads inside x: `yi`
 * its index in y (dy), `xi` in x, `wi` in the weight. */
#define FOR_TAPS(w, batch, F, yi, xi, wi, body)                                \
  do {                                                                         \
    for (int64_t n_ = 0; n_ < (batch); n_++)                                   \
      for (int64_t f_ = 0; f_ < (F); f_++)                                     \
        for (int64_t oh_ = 0; oh_ < (w)->OH; oh_++)                            \
          for (int64_t ow_ = 0; ow_ < (w)->OW; ow_++) {                        \
            int64_t yi = ((n_ * (F) + f_) * (w)->OH + oh_) * (w)->OW + ow_;    \
            for (int64_t c_ = 0; c_ < (w)->C; c_++)                            \
              for (int64_t kh_ = 0; kh_ < (w)->KH; kh_++)                      \
                for (int64_t kw_ = 0; kw_ < (w)->KW; kw_++) {                  \
                  int64_t ih_ =                                                \
                      oh_ * (w)->stride_h - (w)->pad_h + kh_ * (w)->dil_h;     \
                  int64_t iw_ =                                                \
                      ow_ * (w)->stride_w - (w)->pad_w + kw_ * (w)->dil_w;     \
                  if (ih_ < 0 || ih_ >= (w)->H || iw_ < 0 || iw_ >= (w)->W)    \
                    continue;                                                  \
                  int64_t xi = ((n_ * (w)->C + c_) * (w)->H + ih_) * (w)->W +  \
                               iw_;                                            \
                  int64_t wi = ((f_ * (w)->C + c_) * (w)->KH + kh_) *          \
                                   (w)->KW +                                   \
                               kw_;                                            \
                  body                                                         \
                }                                                              \
          }                                                                    \
  } while (0)

/* The reference of the direct convolution: y (before bias and ReLU; zeros
 * on entry) in double, every tap in (c, kh, kw) order as PyTorch's Conv2d
 * sums them. */
static void direct_reference(const clt_window *w, int64_t batch, int64_t F,
                             const float *x, const float *wt, double *y) {
  FOR_TAPS(w, batch, F, yi, xi, wi, { y[yi] += (double)wt[wi] * x[xi]; });
}

/* The forward of the direct kernels (config < 0) or of an implicit GEMM
 * in tile configuration config. */
static clt_status conv_forward_body(check_set *s, const void *arg) {
  const direct_args *a = arg;
  clt_window w;
  CLT_TRY(check_window(s, a->w, false, &w));
  w.per_element = a->w->per_element;
  int64_t ny = a->batch * a->F * w.OH * w.OW;
  check_f32 *x, *wt, *b, *y;
  double *ref;
  CLT_TRY(check_operand(s, a->batch * w.C * w.H * w.W, -1.0f, 1.0f, &x));
  CLT_TRY(check_operand(s, a->F * w.C * w.KH * w.KW, -1.0f, 1.0f, &wt));
  CLT_TRY(check_operand(s, a->F, -1.0f, 1.0f, &b));
  CLT_TRY(check_operand(s, ny, -1.0f, 1.0f, &y));
  CLT_TRY(check_doubles(s, ny, &ref));
  if (a->config >= 0) CLT_TRY(implicit_inputs(s, a->config, x, wt));
  const clt_round16 *round;
  CLT_TRY(check_round(s, y, &round));
  if (a->config >= 0)
    CLT_TRY(clt_conv_implicit_forward(s->ctx, a->config, y->t, x->t, wt->t,
                                      a->bias ? b->t : NULL, a->batch, a->F, &w,
                                      a->relu, round));
  else if (a->tiled) {
    clt_tensor *xp, *tiles;
    CLT_TRY(check_plain(s, clt_conv_tiled_workspace(a->batch, &w, a->tiled),
                        &xp));
    CLT_TRY(check_plain(s, clt_conv_tiled_weights_len(a->F, &w), &tiles));
    CLT_TRY(clt_conv_tile_weights(s->ctx, tiles, wt->t, a->F, &w));
    CLT_TRY(clt_conv_tiled_forward(s->ctx, a->tiled, y->t, x->t, tiles,
                                   a->bias ? b->t : NULL, a->batch, a->F, &w,
                                   a->relu, round, xp));
  } else
    CLT_TRY(clt_conv_direct_forward(s->ctx, y->t, x->t, wt->t,
                                    a->bias ? b->t : NULL, a->batch, a->F, &w,
                                    a->relu, round));
  direct_reference(&w, a->batch, a->F, x->host, wt->host, ref);
  int64_t ohw = w.OH * w.OW;
  for (int64_t i = 0; i < ny; i++) {
    double v = ref[i] + (a->bias ? b->host[i / ohw % a->F] : 0.0f);
    y->host[i] = (float)(a->relu && v < 0.0 ? 0.0 : v);
  }
  return CLT_OK;
}

clt_status clt_check_conv_direct_forward(clt_context *ctx, int64_t batch,
                                         int64_t F, const clt_window *w,
                                         bool bias, bool relu, int round16,
                                         double *max_err) {
  direct_args a = {batch, F, w, bias, relu, -1, 0};
  return check_run_rounded(ctx, 200, conv_forward_body, &a, round16, max_err);
}

static clt_status direct_wgrad_body(check_set *s, const void *arg) {
  const direct_args *a = arg;
  clt_window w;
  CLT_TRY(check_window(s, a->w, false, &w));
  w.per_element = a->w->per_element;
  int64_t ckk = w.C * w.KH * w.KW, ny = a->batch * a->F * w.OH * w.OW;
  check_f32 *x, *dy, *m, *dw, *db;
  CLT_TRY(check_operand(s, a->batch * w.C * w.H * w.W, -1.0f, 1.0f, &x));
  CLT_TRY(check_operand(s, ny, -1.0f, 1.0f, &dy));
  CLT_TRY(relu_mask_operand(s, ny, &m));
  CLT_TRY(check_operand(s, a->F * ckk, -1.0f, 1.0f, &dw));
  CLT_TRY(check_operand(s, a->F, -1.0f, 1.0f, &db));
  clt_tensor *work;
  CLT_TRY(check_plain(
      s, clt_conv_direct_workspace(a->batch, a->F, &w, a->bias), &work));
  CLT_TRY(clt_conv_direct_wgrad(s->ctx, dw->t, a->bias ? db->t : NULL, x->t,
                                dy->t, a->relu ? m->t : NULL, a->batch, a->F,
                                &w, work));
  double *sw, *sb;
  CLT_TRY(check_doubles(s, a->F * ckk, &sw));
  CLT_TRY(check_doubles(s, a->F, &sb));
  for (int64_t n = 0; n < a->batch; n++)
    for (int64_t f = 0; f < a->F; f++)
      for (int64_t oh = 0; oh < w.OH; oh++)
        for (int64_t ow = 0; ow < w.OW; ow++) {
          int64_t at = ((n * a->F + f) * w.OH + oh) * w.OW + ow;
          double g = dy->host[at];
          if (a->relu && !(m->host[at] > 0.0f)) g = 0.0;
          sb[f] += g;
          for (int64_t c = 0; c < w.C; c++)
            for (int64_t kh = 0; kh < w.KH; kh++)
              for (int64_t kw = 0; kw < w.KW; kw++) {
                int64_t ih = oh * w.stride_h - w.pad_h + kh * w.dil_h;
                int64_t iw = ow * w.stride_w - w.pad_w + kw * w.dil_w;
                if (ih < 0 || ih >= w.H || iw < 0 || iw >= w.W) continue;
                sw[(f * w.C + c) * w.KH * w.KW + kh * w.KW + kw] +=
                    g * x->host[((n * w.C + c) * w.H + ih) * w.W + iw];
              }
        }
  for (int64_t i = 0; i < a->F * ckk; i++) dw->host[i] = (float)sw[i];
  for (int64_t f = 0; a->bias && f < a->F; f++) db->host[f] = (float)sb[f];
  return CLT_OK;
}

clt_status clt_check_conv_direct_wgrad(clt_context *ctx, int64_t batch,
                                       int64_t F, const clt_window *w,
                                       bool bias, bool relu,
                                       double *max_err) {
  direct_args a = {batch, F, w, bias, relu, -1, 0};
  return check_run(ctx, 210, direct_wgrad_body, &a, max_err);
}

/* The implicit GEMMs' gradients. */
typedef struct implicit_args {
  int64_t batch, F;
  const clt_window *w;
  int config, splits;
  bool accumulate;
  int tiled; /* the data gradient by the tiled kernel in blocks of this
                many columns (0: the implicit GEMM) */
} implicit_args;

clt_status clt_check_conv_implicit_forward(clt_context *ctx, int config,
                                           int64_t batch, int64_t F,
                                           const clt_window *w, bool bias,
                                           bool relu, int round16,
                                           double *max_err) {
  direct_args a = {batch, F, w, bias, relu, config, 0};
  return check_run_rounded(ctx, 220, conv_forward_body, &a, round16, max_err);
}


static clt_status implicit_dgrad_body(check_set *s, const void *arg) {
  const implicit_args *a = arg;
  clt_window w;
  CLT_TRY(check_window(s, a->w, false, &w));
  int64_t nx = a->batch * w.C * w.H * w.W;
  check_f32 *dy, *wt, *dx;
  double *sum;
  CLT_TRY(check_operand(s, a->batch * a->F * w.OH * w.OW, -1.0f, 1.0f, &dy));
  CLT_TRY(check_operand(s, a->F * w.C * w.KH * w.KW, -1.0f, 1.0f, &wt));
  CLT_TRY(check_operand(s, nx, -1.0f, 1.0f, &dx));
  CLT_TRY(check_doubles(s, nx, &sum));
  CLT_TRY(implicit_inputs(s, a->config, dy, wt));
  const clt_round16 *round;
  CLT_TRY(check_round(s, dx, &round));
  if (a->tiled) {
    clt_tensor *dyp;
    CLT_TRY(check_plain(
        s, clt_conv_tiled_dgrad_workspace(a->batch, a->F, &w, a->tiled),
        &dyp));
    CLT_TRY(clt_conv_tiled_dgrad(s->ctx, a->tiled, dx->t, dy->t, wt->t,
                                 a->batch, a->F, &w, a->accumulate, round,
                                 dyp));
  } else
    CLT_TRY(clt_conv_implicit_dgrad(s->ctx, a->config, dx->t, dy->t, wt->t,
                                    a->batch, a->F, &w, a->accumulate, round));
  FOR_TAPS(&w, a->batch, a->F, yi, xi, wi,
           { sum[xi] += (double)wt->host[wi] * dy->host[yi]; });
  for (int64_t i = 0; i < nx; i++)
    dx->host[i] = (float)(a->accumulate ? dx->host[i] + sum[i] : sum[i]);
  return CLT_OK;
}

clt_status clt_check_conv_implicit_dgrad(clt_context *ctx, int config,
                                         int64_t batch, int64_t F,
                                         const clt_window *w, bool accumulate,
                                         int round16, double *max_err) {
  implicit_args a = {batch, F, w, config, 1, accumulate, 0};
  return check_run_rounded(ctx, 230, implicit_dgrad_body, &a, round16, max_err);
}

clt_status clt_check_conv_tiled_forward(clt_context *ctx, int v,
                                        int64_t batch, int64_t F,
                                        const clt_window *w, bool bias,
                                        bool relu, int round16,
                                        double *max_err) {
  direct_args a = {batch, F, w, bias, relu, -1, v};
  return check_run_rounded(ctx, 250, conv_forward_body, &a, round16, max_err);
}

clt_status clt_check_conv_tiled_dgrad(clt_context *ctx, int v, int64_t batch,
                                      int64_t F, const clt_window *w,
                                      bool accumulate, int round16,
                                      double *max_err) {
  implicit_args a = {batch, F, w, 0, 1, accumulate, v};
  return check_run_rounded(ctx, 260, implicit_dgrad_body, &a, round16,
                           max_err);
}

static clt_status implicit_wgrad_body(check_set *s, const void *arg) {
  const implicit_args *a = arg;
  clt_window w;
  CLT_TRY(check_window(s, a->w, false, &w));
  int64_t nw = a->F * w.C * w.KH * w.KW;
  check_f32 *x, *dy, *dw;
  double *sum;
  CLT_TRY(check_operand(s, a->batch * w.C * w.H * w.W, -1.0f, 1.0f, &x));
  CLT_TRY(check_operand(s, a->batch * a->F * w.OH * w.OW, -1.0f, 1.0f, &dy));
  CLT_TRY(check_operand(s, nw, -1.0f, 1.0f, &dw));
  CLT_TRY(check_doubles(s, nw, &sum));
  CLT_TRY(implicit_inputs(s, a->config, x, dy));
  if (a->tiled) {
    clt_tensor *partials, *xp;
    CLT_TRY(check_plain(s,
                        clt_conv_tiled_wgrad_workspace(s->ctx, a->batch, a->F,
                                                       &w, a->tiled),
                        &partials));
    CLT_TRY(check_plain(
        s, clt_conv_tiled_wgrad_pads(a->batch, a->F, &w, a->tiled), &xp));
    CLT_TRY(clt_conv_tiled_wgrad(s->ctx, a->tiled, dw->t, partials, x->t,
                                 dy->t, a->batch, a->F, &w, xp));
  } else {
    int64_t len = clt_conv_implicit_workspace(a->splits, a->batch, a->F, &w);
    clt_tensor *work = NULL;
    if (len > 0) CLT_TRY(check_plain(s, len, &work));
    CLT_TRY(clt_conv_implicit_wgrad(s->ctx, a->config, a->splits, dw->t,
                                    work, x->t, dy->t, a->batch, a->F, &w));
  }
  FOR_TAPS(&w, a->batch, a->F, yi, xi, wi,
           { sum[wi] += (double)x->host[xi] * dy->host[yi]; });
  for (int64_t i = 0; i < nw; i++) dw->host[i] = (float)sum[i];
  return CLT_OK;
}

clt_status clt_check_conv_implicit_wgrad(clt_context *ctx, int config,
                                         int splits, int64_t batch,
                                         int64_t F, const clt_window *w,
                                         double *max_err) {
  implicit_args a = {batch, F, w, config, splits, false, 0};
  return check_run(ctx, 240, implicit_wgrad_body, &a, max_err);
}

clt_status clt_check_conv_tiled_wgrad(clt_context *ctx, int v, int64_t batch,
                                      int64_t F, const clt_window *w,
                                      double *max_err) {
  implicit_args a = {batch, F, w, 0, 1, false, v};
  return check_run(ctx, 270, implicit_wgrad_body, &a, max_err);
}
