/* Checks of cl/conv.cl: im2col, col2im (both layouts), the axis swap and
 * NCHW to NHWC. */
#include "check/harness.h"

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
  CLT_TRY(
      clt_col2im_backward(s->ctx, dx->t, dcol->t, batch, &w, a->accumulate));
  FOR_UNFOLD(&w, batch, at, src, {
    if (src >= 0) sum[src] += dcol->host[at];
  });
  for (int64_t i = 0; i < nx; i++)
    dx->host[i] = (float)(a->accumulate ? dx->host[i] + sum[i] : sum[i]);
  return CLT_OK;
}

clt_status clt_check_col2im(clt_context *ctx, int64_t batch,
                            const clt_window *w, bool accumulate,
                            double *max_err) {
  window_args a = {batch, w, accumulate};
  return check_run(ctx, 180, col2im_body, &a, max_err);
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
  CLT_TRY(clt_swap_axes01_relu(s->ctx, y->t, x->t, a->bias ? b->t : NULL,
                               m->t, A, B, S, (clt_swap_relu)a->relu));
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
                                 int64_t S, bool bias, int relu,
                                 double *max_err) {
  swap_args a = {A, B, S, bias, relu};
  return check_run(ctx, 190, swap_body, &a, max_err);
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
