/* Checks of cl/depthwise.cl: the depthwise convolution of x [N, C, H, W]
 * by w [C M, KH, KW] against torch.nn.functional.conv2d(groups=C)'s
 * definition, every sum in double. */
#include "check/harness.h"

typedef struct dw_args {
  int64_t N, M;
  const clt_window *w;
  bool bias, relu, accumulate;
  clt_dw_layout layout;
} dw_args;

/* Visits every tap (n, o, oh, ow, kh, kw) that reads inside x: `yi` its
 * index in y (dy), `xi` in x, `wi` in the weight. */
#define FOR_DW_TAPS(w, N, M, yi, xi, wi, body)                                \
  do {                                                                        \
    int64_t F_ = (w)->C * (M);                                                \
    for (int64_t n_ = 0; n_ < (N); n_++)                                      \
      for (int64_t o_ = 0; o_ < F_; o_++)                                     \
        for (int64_t oh_ = 0; oh_ < (w)->OH; oh_++)                           \
          for (int64_t ow_ = 0; ow_ < (w)->OW; ow_++) {                       \
            int64_t yi = ((n_ * F_ + o_) * (w)->OH + oh_) * (w)->OW + ow_;    \
            for (int64_t kh_ = 0; kh_ < (w)->KH; kh_++)                       \
              for (int64_t kw_ = 0; kw_ < (w)->KW; kw_++) {                   \
                int64_t ih_ =                                                 \
                    oh_ * (w)->stride_h - (w)->pad_h + kh_ * (w)->dil_h;      \
                int64_t iw_ =                                                 \
                    ow_ * (w)->stride_w - (w)->pad_w + kw_ * (w)->dil_w;      \
                if (ih_ < 0 || ih_ >= (w)->H || iw_ < 0 || iw_ >= (w)->W)     \
                  continue;                                                   \
                int64_t xi =                                                  \
                    ((n_ * (w)->C + o_ / (M)) * (w)->H + ih_) * (w)->W + iw_; \
                int64_t wi = (o_ * (w)->KH + kh_) * (w)->KW + kw_;            \
                body                                                          \
              }                                                               \
          }                                                                   \
  } while (0)

static clt_status dw_forward_body(check_set *s, const void *arg) {
  const dw_args *a = arg;
  clt_window w;
  CLT_TRY(check_window(s, a->w, false, &w));
  int64_t F = w.C * a->M, ny = a->N * F * w.OH * w.OW;
  check_f32 *x, *wt, *b, *y;
  double *ref;
  CLT_TRY(check_operand(s, a->N * w.C * w.H * w.W, -1.0f, 1.0f, &x));
  CLT_TRY(check_operand(s, F * w.KH * w.KW, -1.0f, 1.0f, &wt));
  CLT_TRY(check_operand(s, F, -1.0f, 1.0f, &b));
  CLT_TRY(check_operand(s, ny, -1.0f, 1.0f, &y));
  CLT_TRY(check_doubles(s, ny, &ref));
  CLT_TRY(clt_dw_forward(s->ctx, y->t, x->t, wt->t, a->bias ? b->t : NULL,
                         a->N, a->M, &w, a->layout, a->relu));
  FOR_DW_TAPS(&w, a->N, a->M, yi, xi, wi,
              { ref[yi] += (double)wt->host[wi] * x->host[xi]; });
  int64_t ohw = w.OH * w.OW;
  for (int64_t i = 0; i < ny; i++) {
    float v = (float)(ref[i] + (a->bias ? b->host[i / ohw % F] : 0.0));
    y->host[i] = a->relu && !(v > 0.0f) ? 0.0f : v;
  }
  return CLT_OK;
}

clt_status clt_check_dw_forward(clt_context *ctx, int64_t N, int64_t M,
                                const clt_window *w, bool bias, bool relu,
                                clt_dw_layout layout, double *max_err) {
  dw_args a = {.N = N, .M = M, .w = w, .bias = bias, .relu = relu,
               .layout = layout};
  return check_run(ctx, 280, dw_forward_body, &a, max_err);
}

static clt_status dw_backward_body(check_set *s, const void *arg) {
  const dw_args *a = arg;
  clt_window w;
  CLT_TRY(check_window(s, a->w, false, &w));
  int64_t F = w.C * a->M, ny = a->N * F * w.OH * w.OW;
  int64_t nx = a->N * w.C * w.H * w.W, nw = F * w.KH * w.KW;
  check_f32 *x, *wt, *dy, *dx, *dw, *db;
  CLT_TRY(check_operand(s, nx, -1.0f, 1.0f, &x));
  CLT_TRY(check_operand(s, nw, -1.0f, 1.0f, &wt));
  CLT_TRY(check_operand(s, ny, -1.0f, 1.0f, &dy));
  CLT_TRY(check_operand(s, nx, -1.0f, 1.0f, &dx));
  CLT_TRY(check_operand(s, nw, -1.0f, 1.0f, &dw));
  CLT_TRY(check_operand(s, F, -1.0f, 1.0f, &db));
  clt_tensor *work = NULL;
  if (a->layout != CLT_DW_PER_VALUE)
    CLT_TRY(check_plain(s, clt_dw_work_floats(a->N, a->M, &w), &work));
  CLT_TRY(clt_dw_backward(s->ctx, dx->t, dw->t, a->bias ? db->t : NULL,
                          dy->t, x->t, wt->t, a->N, a->M, &w, a->accumulate,
                          a->layout, work));
  double *sx, *sw, *sb;
  CLT_TRY(check_doubles(s, nx, &sx));
  CLT_TRY(check_doubles(s, nw, &sw));
  CLT_TRY(check_doubles(s, F, &sb));
  FOR_DW_TAPS(&w, a->N, a->M, yi, xi, wi, {
    sx[xi] += (double)dy->host[yi] * wt->host[wi];
    sw[wi] += (double)dy->host[yi] * x->host[xi];
  });
  int64_t ohw = w.OH * w.OW;
  for (int64_t i = 0; i < ny; i++) sb[i / ohw % F] += dy->host[i];
  for (int64_t i = 0; i < nx; i++)
    dx->host[i] = (float)(a->accumulate ? dx->host[i] + sx[i] : sx[i]);
  for (int64_t i = 0; i < nw; i++) dw->host[i] = (float)sw[i];
  for (int64_t f = 0; a->bias && f < F; f++) db->host[f] = (float)sb[f];
  return CLT_OK;
}

clt_status clt_check_dw_backward(clt_context *ctx, int64_t N, int64_t M,
                                 const clt_window *w, bool bias,
                                 bool accumulate, clt_dw_layout layout,
                                 int64_t loop_limit, double *max_err) {
  dw_args a = {.N = N, .M = M, .w = w, .bias = bias,
               .accumulate = accumulate, .layout = layout};
  int64_t saved = ctx->loop_limit;
  if (loop_limit > 0) ctx->loop_limit = loop_limit;
  clt_status st = check_run(ctx, 290, dw_backward_body, &a, max_err);
  ctx->loop_limit = saved;
  return st;
}
