/* Max and average pooling (NCHW), forward and backward. Backward passes
 * gather over the windows that cover each input element, so no two
 * work-items write one element and no atomics are needed. */

/* The largest element of window (oh, ow) of a plane, its index into the
 * plane in *at (-1 for a window wholly in the padding). The first maximum
 * wins; NaN propagates, as in PyTorch. */
static float window_max(__global const float *plane, int H, int W, int oh,
                        int ow, int KH, int KW, int pad_h, int pad_w,
                        int stride_h, int stride_w, int *at) {
  float best = -INFINITY;
  int best_at = -1;
  for (int kh = 0; kh < KH; kh++) {
    int ih = oh * stride_h - pad_h + kh;
    if (ih < 0 || ih >= H) continue;
    for (int kw = 0; kw < KW; kw++) {
      int iw = ow * stride_w - pad_w + kw;
      if (iw < 0 || iw >= W) continue;
      float v = plane[ih * W + iw];
      int take = (best_at < 0) | (v > best) | (isnan(v) & !isnan(best));
      best = take ? v : best;
      best_at = take ? ih * W + iw : best_at;
    }
  }
  *at = best_at;
  return best;
}

/* One work-item per output row (plane p, oh). The windows wholly inside
 * the row's width (all of them without padding) go MAXPOOL_RUN at a time:
 * a private best and argmax per window, started at each window's first
 * element and updated by every later (kh, kw) with bitwise tests and
 * selects, nothing branching on the data (ReLU outputs tie often), loops
 * of constant length that CPU devices keep in vector registers (2x
 * faster on POCL than updating y and arg in place). The same order and
 * comparison as window_max, which does the windows at the padded edges. */
#define MAXPOOL_RUN 16
ROUND16_BODY maxpool_forward_body(__global float *y, int y_off,
                                  __global int *arg, int arg_off,
                                  __global const float *x, int x_off,
                                  int planes, int H, int W, int OH, int OW,
                                  int KH, int KW, int pad_h, int pad_w,
                                  int stride_h, int stride_w, ROUND16_PARAMS,
                                  int round16) {
  int i = get_global_id(0);
  if (i >= planes * OH) return;
  int oh = i % OH, p = i / OH;
  __global const float *plane = x + x_off + p * H * W;
  __global float *yr = y + y_off + i * OW;
  __global int *ar = arg + arg_off + i * OW;
  int h0 = oh * stride_h - pad_h;
  int kh0 = max(0, -h0), kh1 = min(KH, H - h0);
  /* Interior: 0 <= ow * stride_w - pad_w and ow * stride_w - pad_w + KW <= W. */
  int lo = (pad_w + stride_w - 1) / stride_w;
  int hi = W + pad_w - KW < 0 ? 0 : min(OW, (W + pad_w - KW) / stride_w + 1);
  if (kh0 >= kh1 || lo >= hi) lo = hi = 0;
  for (int ow = 0; ow < OW; ow++) {
    if (ow == lo) ow = hi;
    if (ow >= OW) break;
    int best_at;
    yr[ow] = window_max(plane, H, W, oh, ow, KH, KW, pad_h, pad_w, stride_h,
                        stride_w, &best_at);
    ar[ow] = best_at;
  }
  for (int o0 = lo; o0 < hi; o0 += MAXPOOL_RUN) {
    /* Windows o0 .. o0 + last; the lanes past last repeat the last one. */
    int last = min(MAXPOOL_RUN, hi - o0) - 1;
    int w0 = o0 * stride_w - pad_w;
    float best[MAXPOOL_RUN];
    int at[MAXPOOL_RUN];
    for (int j = 0; j < MAXPOOL_RUN; j++) {
      at[j] = (h0 + kh0) * W + w0 + min(j, last) * stride_w;
      best[j] = plane[at[j]];
    }
    for (int kh = kh0; kh < kh1; kh++)
      for (int kw = kh == kh0 ? 1 : 0; kw < KW; kw++) {
        int at0 = (h0 + kh) * W + w0 + kw;
        for (int j = 0; j < MAXPOOL_RUN; j++) {
          int a = at0 + min(j, last) * stride_w;
          float v = plane[a];
          int take = (v > best[j]) | (isnan(v) & !isnan(best[j]));
          best[j] = take ? v : best[j];
          at[j] = take ? a : at[j];
        }
      }
    for (int j = 0; j <= last; j++) {
      yr[o0 + j] = best[j];
      ar[o0 + j] = at[j];
    }
  }
  ROUND16_RUN(yr, OW, i * OW);
}
ROUND16_VARIANTS(maxpool_forward, (__global float *y, int y_off,
                  __global int *arg, int arg_off, __global const float *x,
                  int x_off, int planes, int H, int W, int OH, int OW, int KH,
                  int KW, int pad_h, int pad_w, int stride_h, int stride_w,
                  ROUND16_PARAMS),
                 (y, y_off, arg, arg_off, x, x_off, planes, H, W, OH, OW, KH,
                  KW, pad_h, pad_w, stride_h, stride_w, ROUND16_ARGS))

/* 2x2 windows of stride 2 without padding (the usual max pooling), a
 * work-item per output row as maxpool_forward, but a row's windows 8 (or,
 * on rows of 4 to 7 windows, 4) at a time in vectors: two vector loads of
 * the window rows, their even and odd lanes the windows' left and right
 * columns. The last block of a row starts at OW - 8 (or OW - 4), over
 * windows the block before it wrote already, the same values again, so
 * that no load passes the row's end; rows of 1 to 3 windows go one window
 * at a time. The same order and comparison as window_max: the first
 * maximum in (kh, kw) order wins, NaN propagates. On POCL (2-core EPYC,
 * AVX-512) 4-7x faster than maxpool_forward on the CNN's 26x26 and 11x11
 * planes; the layer measures it against the other layouts (nn/pool.c). */
#define MAXPOOL2_TAKE(mask_t, best, at, v, a)                                  \
  {                                                                            \
    mask_t take_ = isgreater(v, best) | (isnan(v) & ~isnan(best));              \
    best = select(best, v, take_);                                             \
    at = select(at, a, take_);                                                 \
  }
#define MAXPOOL2_BLOCK(n, twice, mask_t, lanes)                                \
  for (int o = 0; o < OW; o += n) {                                            \
    int ow = min(o, OW - n), c = row + 2 * ow;                                 \
    float##twice top = vload##twice(0, plane + c);                             \
    float##twice bottom = vload##twice(0, plane + c + W);                      \
    float##n best = top.even;                                                  \
    mask_t at = lanes + c;                                                     \
    MAXPOOL2_TAKE(mask_t, best, at, top.odd, lanes + (c + 1));                 \
    MAXPOOL2_TAKE(mask_t, best, at, bottom.even, lanes + (c + W));             \
    MAXPOOL2_TAKE(mask_t, best, at, bottom.odd, lanes + (c + W + 1));          \
    vstore##n(best, 0, yr + ow);                                               \
    vstore##n(at, 0, ar + ow);                                                 \
  }
ROUND16_BODY maxpool_forward_2x2_body(__global float *y, int y_off,
                                      __global int *arg, int arg_off,
                                      __global const float *x, int x_off,
                                      int planes, int H, int W, int OH,
                                      int OW, ROUND16_PARAMS, int round16) {
  int i = get_global_id(0);
  if (i >= planes * OH) return;
  int oh = i % OH, p = i / OH;
  __global const float *plane = x + x_off + p * H * W;
  __global float *yr = y + y_off + i * OW;
  __global int *ar = arg + arg_off + i * OW;
  int row = 2 * oh * W;
  if (OW >= 8) {
    MAXPOOL2_BLOCK(8, 16, int8, ((int8)(0, 2, 4, 6, 8, 10, 12, 14)))
  } else if (OW >= 4) {
    MAXPOOL2_BLOCK(4, 8, int4, ((int4)(0, 2, 4, 6)))
  } else {
    for (int ow = 0; ow < OW; ow++) {
      int c = row + 2 * ow;
      float best = plane[c];
      int at = c;
      for (int k = 1; k < 4; k++) {
        int a = c + (k >> 1) * W + (k & 1);
        float v = plane[a];
        int take = (v > best) | (isnan(v) & !isnan(best));
        best = take ? v : best;
        at = take ? a : at;
      }
      yr[ow] = best;
      ar[ow] = at;
    }
  }
  ROUND16_RUN(yr, OW, i * OW);
}
ROUND16_VARIANTS(maxpool_forward_2x2, (__global float *y, int y_off,
                  __global int *arg, int arg_off, __global const float *x,
                  int x_off, int planes, int H, int W, int OH, int OW,
                  ROUND16_PARAMS),
                 (y, y_off, arg, arg_off, x, x_off, planes, H, W, OH, OW,
                  ROUND16_ARGS))

static int first_window(int i, int pad, int k, int stride) {
  int t = i + pad - k + 1; /* smallest o with o*stride + k - 1 >= i + pad */
  return t <= 0 ? 0 : (t + stride - 1) / stride;
}

/* The gradient of element (ih, iw) of plane p: the sum of dy over the
 * windows covering it whose argmax it is (dy and arg at their offsets). */
static float maxpool_gather(__global const float *dy, __global const int *arg,
                            int p, int ih, int iw, int W, int OH, int OW,
                            int KH, int KW, int pad_h, int pad_w,
                            int stride_h, int stride_w) {
  int oh0 = first_window(ih, pad_h, KH, stride_h);
  int ow0 = first_window(iw, pad_w, KW, stride_w);
  float sum = 0.0f;
  for (int oh = oh0; oh < OH && oh * stride_h - pad_h <= ih; oh++)
    for (int ow = ow0; ow < OW && ow * stride_w - pad_w <= iw; ow++) {
      int o = (p * OH + oh) * OW + ow;
      if (arg[o] == ih * W + iw) sum += dy[o];
    }
  return sum;
}

ROUND16_BODY maxpool_backward_body(__global float *dx, int dx_off,
                                   __global const float *dy, int dy_off,
                                   __global const int *arg, int arg_off,
                                   int planes, int H, int W, int OH, int OW,
                                   int KH, int KW, int pad_h, int pad_w,
                                   int stride_h, int stride_w, int accumulate,
                                   ROUND16_PARAMS, int round16) {
  /* One work-item per input row (p, ih), gathering from the windows that
   * cover each element. */
  int i = get_global_id(0);
  if (i >= planes * H) return;
  int ih = i % H, p = i / H;
  for (int iw = 0; iw < W; iw++) {
    float sum = maxpool_gather(dy + dy_off, arg + arg_off, p, ih, iw, W, OH,
                               OW, KH, KW, pad_h, pad_w, stride_h, stride_w);
    int at = i * W + iw;
    STORE16(dx, dx_off, at, accumulate ? dx[dx_off + at] + sum : sum);
  }
}
ROUND16_VARIANTS(maxpool_backward, (__global float *dx, int dx_off,
                  __global const float *dy, int dy_off,
                  __global const int *arg, int arg_off, int planes, int H,
                  int W, int OH, int OW, int KH, int KW, int pad_h, int pad_w,
                  int stride_h, int stride_w, int accumulate, ROUND16_PARAMS),
                 (dx, dx_off, dy, dy_off, arg, arg_off, planes, H, W, OH, OW,
                  KH, KW, pad_h, pad_w, stride_h, stride_w, accumulate, ROUND16_ARGS))

/* Backward of max pooling with windows that do not overlap (stride >=
 * kernel): every input element lies in at most one window, so each output
 * adds its gradient at its argmax without conflicts. One work-item per
 * output row oh, which first zeroes (unless accumulating) the input rows
 * from its windows' first row to the next output row's, the first taking
 * the rows above and the last those below: every row once, and every
 * element its windows scatter into lies in its own rows, so nothing else
 * needs dx cleared beforehand. */
ROUND16_BODY maxpool_backward_scatter_body(
    __global float *dx, int dx_off, __global const float *dy, int dy_off,
    __global const int *arg, int arg_off, int planes, int H, int W, int OH,
    int OW, int pad_h, int stride_h, int accumulate, ROUND16_PARAMS,
    int round16) {
  int i = get_global_id(0);
  if (i >= planes * OH) return;
  int p = i / OH, oh = i % OH;
  __global float *plane = dx + dx_off + p * H * W;
  if (!accumulate) {
    int r0 = oh == 0 ? 0 : min(H, oh * stride_h - pad_h);
    int r1 = oh == OH - 1 ? H : min(H, (oh + 1) * stride_h - pad_h);
    for (int e = r0 * W; e < r1 * W; e++) plane[e] = 0.0f;
  }
  /* Rounding (mode 1 and not accumulating only: ops/pool.c) rounds the
   * one gradient each element gets; the zeros are halves already. */
  for (int ow = 0; ow < OW; ow++) {
    int at = arg[arg_off + i * OW + ow];
    if (at >= 0)
      store16(plane + at, plane[at] + dy[dy_off + i * OW + ow],
              h16 + h16_off + p * H * W + at, round16);
  }
}
ROUND16_VARIANTS(maxpool_backward_scatter, (__global float *dx, int dx_off,
                  __global const float *dy, int dy_off,
                  __global const int *arg, int arg_off, int planes, int H,
                  int W, int OH, int OW, int pad_h, int stride_h,
                  int accumulate, ROUND16_PARAMS),
                 (dx, dx_off, dy, dy_off, arg, arg_off, planes, H, W, OH, OW,
                  pad_h, stride_h, accumulate, ROUND16_ARGS))

/* The three max-pooling kernels above with one work-item per element
 * written (consecutive work-items on consecutive elements: coalesced on a
 * GPU); the layer measures both layouts (nn/pool.c). */
ROUND16_BODY maxpool_forward_elems_body(__global float *y, int y_off,
                                        __global int *arg, int arg_off,
                                        __global const float *x, int x_off,
                                        int planes, int H, int W, int OH,
                                        int OW, int KH, int KW, int pad_h,
                                        int pad_w, int stride_h, int stride_w,
                                        ROUND16_PARAMS, int round16) {
  int i = get_global_id(0);
  if (i >= planes * OH * OW) return;
  int ow = i % OW, oh = (i / OW) % OH, p = i / (OW * OH);
  __global const float *plane = x + x_off + p * H * W;
  int best_at;
  STORE16(y, y_off, i,
          window_max(plane, H, W, oh, ow, KH, KW, pad_h, pad_w, stride_h,
                     stride_w, &best_at));
  arg[arg_off + i] = best_at;
}
ROUND16_VARIANTS(maxpool_forward_elems, (__global float *y, int y_off,
                  __global int *arg, int arg_off, __global const float *x,
                  int x_off, int planes, int H, int W, int OH, int OW, int KH,
                  int KW, int pad_h, int pad_w, int stride_h, int stride_w,
                  ROUND16_PARAMS),
                 (y, y_off, arg, arg_off, x, x_off, planes, H, W, OH, OW, KH,
                  KW, pad_h, pad_w, stride_h, stride_w, ROUND16_ARGS))

ROUND16_BODY maxpool_backward_elems_body(
    __global float *dx, int dx_off, __global const float *dy, int dy_off,
    __global const int *arg, int arg_off, int planes, int H, int W, int OH,
    int OW, int KH, int KW, int pad_h, int pad_w, int stride_h, int stride_w,
    int accumulate, ROUND16_PARAMS, int round16) {
  int i = get_global_id(0);
  if (i >= planes * H * W) return;
  int iw = i % W, ih = (i / W) % H, p = i / (W * H);
  float sum = maxpool_gather(dy + dy_off, arg + arg_off, p, ih, iw, W, OH,
                             OW, KH, KW, pad_h, pad_w, stride_h, stride_w);
  STORE16(dx, dx_off, i, accumulate ? dx[dx_off + i] + sum : sum);
}
ROUND16_VARIANTS(maxpool_backward_elems, (__global float *dx, int dx_off,
                  __global const float *dy, int dy_off,
                  __global const int *arg, int arg_off, int planes, int H,
                  int W, int OH, int OW, int KH, int KW, int pad_h, int pad_w,
                  int stride_h, int stride_w, int accumulate, ROUND16_PARAMS),
                 (dx, dx_off, dy, dy_off, arg, arg_off, planes, H, W, OH, OW,
                  KH, KW, pad_h, pad_w, stride_h, stride_w, accumulate, ROUND16_ARGS))

ROUND16_BODY maxpool_backward_scatter_elems_body(
    __global float *dx, int dx_off, __global const float *dy, int dy_off,
    __global const int *arg, int arg_off, int planes, int H, int W, int OH,
    int OW, ROUND16_PARAMS, int round16) {
  int i = get_global_id(0);
  if (i >= planes * OH * OW) return;
  int p = i / (OH * OW);
  int at = arg[arg_off + i];
  if (at >= 0) {
    at += p * H * W;
    STORE16(dx, dx_off, at, dx[dx_off + at] + dy[dy_off + i]);
  }
}
ROUND16_VARIANTS(maxpool_backward_scatter_elems, (__global float *dx,
                  int dx_off, __global const float *dy, int dy_off,
                  __global const int *arg, int arg_off, int planes, int H,
                  int W, int OH, int OW, ROUND16_PARAMS),
                 (dx, dx_off, dy, dy_off, arg, arg_off, planes, H, W, OH, OW,
                  ROUND16_ARGS))

/* Average pooling; the divisor counts padding (PyTorch's default,
 * count_include_pad=True) but not what lies past the padded edge. */
static int avg_divisor(int oh, int ow, int H, int W, int KH, int KW,
                       int pad_h, int pad_w, int stride_h, int stride_w) {
  int h0 = oh * stride_h - pad_h, w0 = ow * stride_w - pad_w;
  int h1 = min(h0 + KH, H + pad_h), w1 = min(w0 + KW, W + pad_w);
  return (h1 - h0) * (w1 - w0);
}

ROUND16_BODY avgpool_forward_body(__global float *y, int y_off,
                                  __global const float *x, int x_off,
                                  int planes, int H, int W, int OH, int OW,
                                  int KH, int KW, int pad_h, int pad_w,
                                  int stride_h, int stride_w, ROUND16_PARAMS,
                                  int round16) {
  int i = get_global_id(0);
  if (i >= planes * OH * OW) return;
  int ow = i % OW, oh = (i / OW) % OH, p = i / (OW * OH);
  float sum = 0.0f;
  for (int kh = 0; kh < KH; kh++) {
    int ih = oh * stride_h - pad_h + kh;
    if (ih < 0 || ih >= H) continue;
    for (int kw = 0; kw < KW; kw++) {
      int iw = ow * stride_w - pad_w + kw;
      if (iw >= 0 && iw < W) sum += x[x_off + (p * H + ih) * W + iw];
    }
  }
  STORE16(y, y_off, i,
          sum / (float)avg_divisor(oh, ow, H, W, KH, KW, pad_h, pad_w,
                                   stride_h, stride_w));
}
ROUND16_VARIANTS(avgpool_forward, (__global float *y, int y_off,
                  __global const float *x, int x_off, int planes, int H, int W,
                  int OH, int OW, int KH, int KW, int pad_h, int pad_w,
                  int stride_h, int stride_w, ROUND16_PARAMS),
                 (y, y_off, x, x_off, planes, H, W, OH, OW, KH, KW, pad_h,
                  pad_w, stride_h, stride_w, ROUND16_ARGS))

ROUND16_BODY avgpool_backward_body(__global float *dx, int dx_off,
                                   __global const float *dy, int dy_off,
                                   int planes, int H, int W, int OH, int OW,
                                   int KH, int KW, int pad_h, int pad_w,
                                   int stride_h, int stride_w, int accumulate,
                                   ROUND16_PARAMS, int round16) {
  int i = get_global_id(0);
  if (i >= planes * H * W) return;
  int iw = i % W, ih = (i / W) % H, p = i / (W * H);
  float sum = 0.0f;
  int oh0 = first_window(ih, pad_h, KH, stride_h);
  int ow0 = first_window(iw, pad_w, KW, stride_w);
  for (int oh = oh0; oh < OH && oh * stride_h - pad_h <= ih; oh++)
    for (int ow = ow0; ow < OW && ow * stride_w - pad_w <= iw; ow++)
      sum += dy[dy_off + (p * OH + oh) * OW + ow] /
             (float)avg_divisor(oh, ow, H, W, KH, KW, pad_h, pad_w, stride_h,
                                stride_w);
  STORE16(dx, dx_off, i, accumulate ? dx[dx_off + i] + sum : sum);
}
ROUND16_VARIANTS(avgpool_backward, (__global float *dx, int dx_off,
                  __global const float *dy, int dy_off, int planes, int H,
                  int W, int OH, int OW, int KH, int KW, int pad_h, int pad_w,
                  int stride_h, int stride_w, int accumulate, ROUND16_PARAMS),
                 (dx, dx_off, dy, dy_off, planes, H, W, OH, OW, KH, KW, pad_h,
                  pad_w, stride_h, stride_w, accumulate, ROUND16_ARGS))

/* Global average pooling (a window over the whole plane, no padding):
 * item p, y[p] = the sum of plane p's hw values, in runs of 16 (one
 * vector a run on a CPU) and then the tail, over hw. On POCL the windowed
 * forward's bounds tests a value left the sum scalar: the separable
 * sample's pooling of 256 x 128 planes of 7x7 took 2.1 ms of a 33 ms
 * inference step. */
ROUND16_BODY avgpool_global_forward_body(__global float *y, int y_off,
                                         __global const float *x, int x_off,
                                         int planes, int hw, ROUND16_PARAMS,
                                         int round16) {
  int p = get_global_id(0);
  if (p >= planes) return;
  __global const float *plane = x + x_off + p * hw;
  float16 s16 = (float16)(0.0f);
  float s = 0.0f;
  int body = hw / 16 * 16;
  for (int i = 0; i < body; i += 16) s16 += vload16(0, plane + i);
  for (int i = body; i < hw; i++) s += plane[i];
  STORE16(y, y_off, p, (sum16(s16) + s) / (float)hw);
}
ROUND16_VARIANTS(avgpool_global_forward, (__global float *y, int y_off,
                  __global const float *x, int x_off, int planes, int hw,
                  ROUND16_PARAMS),
                 (y, y_off, x, x_off, planes, hw, ROUND16_ARGS))

/* Its backward: element s of plane p gets dy[p] / hw, written or
 * (accumulate) added. Item i, `per` elements of a plane (its part i %
 * parts): one division an item, where a work-item an element paid one
 * an element (on POCL the separable sample's took 1.8 ms of a 34 ms
 * training step at batch 64, its 64 x 128 planes of 7x7). */
ROUND16_BODY avgpool_global_backward_body(__global float *dx, int dx_off,
                                          __global const float *dy,
                                          int dy_off, int planes, int hw,
                                          int per, int accumulate,
                                          ROUND16_PARAMS, int round16) {
  int parts = (hw + per - 1) / per;
  int i = get_global_id(0);
  if (i >= planes * parts) return;
  int part = i % parts, p = i / parts;
  int s0 = part * per, n = min(hw, s0 + per) - s0;
  float g = dy[dy_off + p] / (float)hw;
  __global float *out = dx + dx_off + p * hw + s0;
  if (accumulate)
    for (int s = 0; s < n; s++) out[s] += g;
  else
    for (int s = 0; s < n; s++) out[s] = g;
  ROUND16_RUN(out, n, p * hw + s0);
}
ROUND16_VARIANTS(avgpool_global_backward, (__global float *dx, int dx_off,
                  __global const float *dy, int dy_off, int planes, int hw,
                  int per, int accumulate, ROUND16_PARAMS),
                 (dx, dx_off, dy, dy_off, planes, hw, per, accumulate,
                  ROUND16_ARGS))
