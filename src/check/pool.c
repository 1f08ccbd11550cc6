/* Checks of cl/pool.cl: max and average pooling, as torch.nn.MaxPool2d
 * and AvgPool2d. */
#include <math.h>

#include "check/harness.h"

typedef struct pool_args {
  const clt_window *w;
  bool accumulate;
} pool_args;

/* The window of output (oh, ow) clamped to the input, [h0, h1) x [w0, w1),
 * and PyTorch's avg_pool2d divisor: the window clamped to the padded
 * input only (count_include_pad=True). */
static double pool_window(const clt_window *w, int64_t oh, int64_t ow,
                          int64_t *h0, int64_t *h1, int64_t *w0, int64_t *w1) {
  int64_t hs = oh * w->stride_h - w->pad_h, ws = ow * w->stride_w - w->pad_w;
  int64_t he = hs + w->KH, we = ws + w->KW;
  if (he > w->H + w->pad_h) he = w->H + w->pad_h;
  if (we > w->W + w->pad_w) we = w->W + w->pad_w;
  double size = (double)((he - hs) * (we - ws));
  *h0 = hs > 0 ? hs : 0;
  *w0 = ws > 0 ? ws : 0;
  *h1 = he < w->H ? he : w->H;
  *w1 = we < w->W ? we : w->W;
  return size;
}

/* torch.nn.MaxPool2d on the host: the first maximum in row-major order,
 * and any NaN (as PyTorch: `val > max || isnan(val)`). */
static void maxpool_ref(const clt_window *w, const float *x, float *y,
                        int32_t *arg) {
  for (int64_t p = 0; p < w->C; p++)
    for (int64_t oh = 0; oh < w->OH; oh++)
      for (int64_t ow = 0; ow < w->OW; ow++) {
        int64_t h0, h1, w0, w1;
        pool_window(w, oh, ow, &h0, &h1, &w0, &w1);
        const float *xp = x + p * w->H * w->W;
        float best = -INFINITY;
        int64_t at = h0 * w->W + w0;
        for (int64_t ih = h0; ih < h1; ih++)
          for (int64_t iw = w0; iw < w1; iw++) {
            float v = xp[ih * w->W + iw];
            if (v > best || isnan(v)) {
              best = v;
              at = ih * w->W + iw;
            }
          }
        int64_t o = (p * w->OH + oh) * w->OW + ow;
        if (y) y[o] = best;
        arg[o] = (int32_t)at;
      }
}

static clt_status maxpool_forward_body(check_set *s, const void *arg) {
  const pool_args *a = arg;
  clt_window w;
  CLT_TRY(check_window(s, a->w, true, &w));
  int64_t plane = w.H * w.W, nout = w.C * w.OH * w.OW;
  check_f32 *x, *y;
  check_i32 *argmax;
  CLT_TRY(check_operand(s, w.C * plane, -1.0f, 1.0f, &x));
  /* Even planes: 9 levels, so that windows hold ties. */
  for (int64_t p = 0; p < w.C; p += 2)
    for (int64_t i = 0; i < plane; i++) {
      float *v = &x->host[p * plane + i];
      *v = roundf(*v * 4.0f) / 4.0f;
    }
  if (w.C >= 2) x->host[(w.C - 1) * plane + (w.H / 2) * w.W + w.W / 2] = NAN;
  CLT_TRY(check_upload(x));
  CLT_TRY(check_operand(s, nout, -1.0f, 1.0f, &y));
  CLT_TRY(check_operand_i32(s, nout, &argmax));
  const clt_round16 *round;
  CLT_TRY(check_round(s, y, &round));
  CLT_TRY(clt_maxpool_forward(s->ctx, y->t, argmax->t, x->t, &w, round));
  maxpool_ref(&w, x->host, y->host, argmax->host);
  return CLT_OK;
}

clt_status clt_check_maxpool_forward(clt_context *ctx, const clt_window *w,
                                     int round16, double *max_err) {
  pool_args a = {w, false};
  return check_run_rounded(ctx, 200, maxpool_forward_body, &a, round16,
                           max_err);
}

static clt_status maxpool_backward_body(check_set *s, const void *arg) {
  const pool_args *a = arg;
  clt_window w;
  CLT_TRY(check_window(s, a->w, true, &w));
  int64_t plane = w.H * w.W, nx = w.C * plane, nout = w.C * w.OH * w.OW;
  check_f32 *x, *y, *dy, *dx;
  check_i32 *argmax;
  double *sum;
  /* x and y only make the argmax (the host's, of random inputs, so that
   * overlapping windows share maxima); the op reads neither. */
  CLT_TRY(check_operand(s, nx, -1.0f, 1.0f, &x));
  CLT_TRY(check_operand(s, nout, -1.0f, 1.0f, &y));
  CLT_TRY(check_operand_i32(s, nout, &argmax));
  maxpool_ref(&w, x->host, NULL, argmax->host);
  CLT_TRY(check_upload_i32(argmax));
  CLT_TRY(check_operand(s, nout, -1.0f, 1.0f, &dy));
  CLT_TRY(check_operand(s, nx, -1.0f, 1.0f, &dx));
  CLT_TRY(check_doubles(s, nx, &sum));
  const clt_round16 *round;
  CLT_TRY(check_round(s, dx, &round));
  CLT_TRY(clt_maxpool_backward(s->ctx, dx->t, dy->t, argmax->t, &w,
                               a->accumulate, round));
  for (int64_t p = 0; p < w.C; p++)
    for (int64_t o = 0; o < w.OH * w.OW; o++)
      sum[p * plane + argmax->host[p * w.OH * w.OW + o]] +=
          dy->host[p * w.OH * w.OW + o];
  for (int64_t i = 0; i < nx; i++)
    dx->host[i] = (float)(a->accumulate ? dx->host[i] + sum[i] : sum[i]);
  return CLT_OK;
}

clt_status clt_check_maxpool_backward(clt_context *ctx, const clt_window *w,
                                      bool accumulate, int round16,
                                      double *max_err) {
  pool_args a = {w, accumulate};
  return check_run_rounded(ctx, 210, maxpool_backward_body, &a, round16,
                           max_err);
}

static clt_status avgpool_forward_body(check_set *s, const void *arg) {
  const pool_args *a = arg;
  clt_window w;
  CLT_TRY(check_window(s, a->w, true, &w));
  int64_t plane = w.H * w.W;
  check_f32 *x, *y;
  CLT_TRY(check_operand(s, w.C * plane, -1.0f, 1.0f, &x));
  CLT_TRY(check_operand(s, w.C * w.OH * w.OW, -1.0f, 1.0f, &y));
  const clt_round16 *round;
  CLT_TRY(check_round(s, y, &round));
  CLT_TRY(clt_avgpool_forward(s->ctx, y->t, x->t, &w, round));
  for (int64_t p = 0; p < w.C; p++)
    for (int64_t oh = 0; oh < w.OH; oh++)
      for (int64_t ow = 0; ow < w.OW; ow++) {
        int64_t h0, h1, w0, w1;
        double size = pool_window(&w, oh, ow, &h0, &h1, &w0, &w1), sum = 0.0;
        for (int64_t ih = h0; ih < h1; ih++)
          for (int64_t iw = w0; iw < w1; iw++)
            sum += x->host[p * plane + ih * w.W + iw];
        y->host[(p * w.OH + oh) * w.OW + ow] = (float)(sum / size);
      }
  return CLT_OK;
}

clt_status clt_check_avgpool_forward(clt_context *ctx, const clt_window *w,
                                     int round16, double *max_err) {
  pool_args a = {w, false};
  return check_run_rounded(ctx, 220, avgpool_forward_body, &a, round16,
                           max_err);
}

static clt_status avgpool_backward_body(check_set *s, const void *arg) {
  const pool_args *a = arg;
  clt_window w;
  CLT_TRY(check_window(s, a->w, true, &w));
  int64_t plane = w.H * w.W, nx = w.C * plane;
  check_f32 *dy, *dx;
  double *sum;
  CLT_TRY(check_operand(s, w.C * w.OH * w.OW, -1.0f, 1.0f, &dy));
  CLT_TRY(check_operand(s, nx, -1.0f, 1.0f, &dx));
  CLT_TRY(check_doubles(s, nx, &sum));
  const clt_round16 *round;
  CLT_TRY(check_round(s, dx, &round));
  CLT_TRY(clt_avgpool_backward(s->ctx, dx->t, dy->t, &w, a->accumulate,
                               round));
  for (int64_t p = 0; p < w.C; p++)
    for (int64_t oh = 0; oh < w.OH; oh++)
      for (int64_t ow = 0; ow < w.OW; ow++) {
        int64_t h0, h1, w0, w1;
        double size = pool_window(&w, oh, ow, &h0, &h1, &w0, &w1);
        double g = dy->host[(p * w.OH + oh) * w.OW + ow] / size;
        for (int64_t ih = h0; ih < h1; ih++)
          for (int64_t iw = w0; iw < w1; iw++)
            sum[p * plane + ih * w.W + iw] += g;
      }
  for (int64_t i = 0; i < nx; i++)
    dx->host[i] = (float)(a->accumulate ? dx->host[i] + sum[i] : sum[i]);
  return CLT_OK;
}

clt_status clt_check_avgpool_backward(clt_context *ctx, const clt_window *w,
                                      bool accumulate, int round16,
                                      double *max_err) {
  pool_args a = {w, accumulate};
  return check_run_rounded(ctx, 230, avgpool_backward_body, &a, round16,
                           max_err);
}
