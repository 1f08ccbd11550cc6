/* Depthwise convolution (nn/depthwise_conv2d.c), as PyTorch's Conv2d with
 * groups = in_channels (Keras's DepthwiseConv2D): x [N, C, H, W], w [C M,
 * KH, KW] (PyTorch's [C M, 1, KH, KW]), y [N, C M, OH, OW]; output channel
 * o reads input channel o / M alone. Each output takes KH KW taps, so the
 * products are too small for GEMMs: the kernels compute them directly,
 * a work-item per value written (neighbouring items on neighbouring
 * columns: coalesced on a GPU, vectorised across items on a CPU). */

/* Item i: y[i] = bias[o] (0 without) + the window's taps of channel o / M
 * times w[o]; relu: then 0 where not above 0 (a batchnorm's ReLU, the
 * batchnorm folded in for evaluation). */
__kernel void dw_forward(__global float *y, int y_off,
                         __global const float *x, int x_off,
                         __global const float *w, int w_off,
                         __global const float *bias, int bias_off,
                         int has_bias, int relu, int total, int C, int M,
                         int H, int W, int OH, int OW, int KH, int KW, int sh,
                         int sw, int ph, int pw, int dil_h, int dil_w) {
  int i = get_global_id(0);
  if (i >= total) return;
  int ox = i % OW, t = i / OW;
  int oy = t % OH;
  t /= OH;
  int F = C * M, o = t % F, n = t / F;
  __global const float *plane = x + x_off + (n * C + o / M) * H * W;
  __global const float *taps = w + w_off + o * KH * KW;
  float acc = has_bias ? bias[bias_off + o] : 0.0f;
  for (int ky = 0; ky < KH; ky++) {
    int iy = oy * sh - ph + ky * dil_h;
    if (iy < 0 || iy >= H) continue;
    for (int kx = 0; kx < KW; kx++) {
      int ix = ox * sw - pw + kx * dil_w;
      if (ix >= 0 && ix < W) acc += plane[iy * W + ix] * taps[ky * KW + kx];
    }
  }
  y[y_off + i] = relu && !(acc > 0.0f) ? 0.0f : acc;
}

/* Item i, an input value (n, c, iy, ix): dx[i] = the sum over channel c's
 * M outputs and the taps that read it of dy times the tap's weight,
 * written or (accumulate) added. */
__kernel void dw_backward_data(__global float *dx, int dx_off,
                               __global const float *dy, int dy_off,
                               __global const float *w, int w_off,
                               int accumulate, int total, int C, int M, int H,
                               int W, int OH, int OW, int KH, int KW, int sh,
                               int sw, int ph, int pw, int dil_h, int dil_w) {
  int i = get_global_id(0);
  if (i >= total) return;
  int ix = i % W, t = i / W;
  int iy = t % H;
  t /= H;
  int c = t % C, n = t / C;
  float acc = 0.0f;
  for (int m = 0; m < M; m++) {
    int o = c * M + m;
    __global const float *g = dy + dy_off + (n * C * M + o) * OH * OW;
    __global const float *taps = w + w_off + o * KH * KW;
    for (int ky = 0; ky < KH; ky++) {
      int sy = iy + ph - ky * dil_h;
      if (sy < 0 || sy % sh) continue;
      int oy = sy / sh;
      if (oy >= OH) continue;
      for (int kx = 0; kx < KW; kx++) {
        int sx = ix + pw - kx * dil_w;
        if (sx < 0 || sx % sw) continue;
        int ox = sx / sw;
        if (ox < OW) acc += g[oy * OW + ox] * taps[ky * KW + kx];
      }
    }
  }
  dx[dx_off + i] = accumulate ? dx[dx_off + i] + acc : acc;
}

/* Group j, a weight (o, ky, kx): dwt[j] = the sum over samples n0..n1 and
 * the output positions of dy times the input value the tap read there,
 * written or (accumulate) added (the launches that cut the batch into
 * parts where the device's loops are capped add into the first's). The
 * group's CLT_WG items take the positions lid, lid + CLT_WG, ... */
__kernel void dw_backward_weights(__global float *dwt, int dwt_off,
                                  __global const float *dy, int dy_off,
                                  __global const float *x, int x_off,
                                  int accumulate, int n0, int n1, int C,
                                  int M, int H, int W, int OH, int OW,
                                  int KH, int KW, int sh, int sw, int ph,
                                  int pw, int dil_h, int dil_w) {
  __local float scratch[CLT_WG];
  int j = get_group_id(0), lid = get_local_id(0);
  int kx = j % KW, t = j / KW;
  int ky = t % KH, o = t / KH;
  int c = o / M, P = OH * OW;
  float s = 0.0f;
  for (int q = lid; q < (n1 - n0) * P; q += CLT_WG) {
    int n = n0 + q / P, r = q % P;
    int iy = (r / OW) * sh - ph + ky * dil_h;
    int ix = (r % OW) * sw - pw + kx * dil_w;
    if (iy >= 0 && iy < H && ix >= 0 && ix < W)
      s += dy[dy_off + (n * C * M + o) * P + r] *
           x[x_off + ((n * C + c) * H + iy) * W + ix];
  }
  s = group_sum(scratch, s);
  if (lid == 0) dwt[dwt_off + j] = accumulate ? dwt[dwt_off + j] + s : s;
}

/* The same in rows, shaped for CPU devices (the element kernels' index
 * work and bounds tests per value left POCL's loops scalar): a work-item
 * per few rows of the output (forward) or of dx (data gradient), or per
 * (sample, output channel) plane (the weight gradient's partial sums), a row
 * taken four columns at a time in float4s (POCL does not vectorise
 * scalar loops over floats: it may not reorder their sums), the taps
 * inside, each read of a row one vload4 where the four values lie inside
 * it and a gather of what lies inside (0 outside) at its ends. */

/* row[i], row[i + s], row[i + 2 s], row[i + 3 s], each 0 outside 0..n-1. */
static inline float4 dw_load4(__global const float *row, int n, int i,
                              int s) {
  if (s == 1 && i >= 0 && i + 4 <= n) return vload4(0, row + i);
  float4 v = (float4)(0.0f);
  if (i >= 0 && i < n) v.s0 = row[i];
  if (i + s >= 0 && i + s < n) v.s1 = row[i + s];
  if (i + 2 * s >= 0 && i + 2 * s < n) v.s2 = row[i + 2 * s];
  if (i + 3 * s >= 0 && i + 3 * s < n) v.s3 = row[i + 3 * s];
  return v;
}

/* v's first n - i values (at most 4) into row[i...]. */
static inline void dw_store4(__global float *row, int n, int i,
                             float4 v) {
  if (i + 4 <= n) {
    vstore4(v, 0, row + i);
    return;
  }
  row[i] = v.s0;
  if (i + 1 < n) row[i + 1] = v.s1;
  if (i + 2 < n) row[i + 2] = v.s2;
}

/* Outputs ox..ox+3 of output row oy where the row's stride and
 * dilation are 1, without the bias: a sum per tap of the four
 * (independent chains of additions), taps kb..kb+3 reading the row from
 * ox - pw + kb (a, then c). inside: every load lies inside the row, a
 * constant where inlined (the loads without their tests), as KH and KW
 * may be (the loops unrolled). */
static inline float4 dw_forward_four(__global const float *plane,
                                     __global const float *taps, int oy,
                                     int ox, int H, int W, int KH, int KW,
                                     int sh, int ph, int pw, int dil_h,
                                     bool inside) {
  float4 s0 = (float4)(0.0f), s1 = s0, s2 = s0, s3 = s0;
  int i = ox - pw;
  for (int ky = 0; ky < KH; ky++) {
    int iy = oy * sh - ph + ky * dil_h;
    if (iy < 0 || iy >= H) continue;
    __global const float *row = plane + iy * W;
    __global const float *tk = taps + ky * KW;
    float4 a = inside ? vload4(0, row + i) : dw_load4(row, W, i, 1);
    for (int kb = 0; kb < KW; kb += 4) {
      float4 c = inside ? vload4(0, row + i + kb + 4)
                        : dw_load4(row, W, i + kb + 4, 1);
      s0 += tk[kb] * a;
      if (kb + 1 < KW) s1 += tk[kb + 1] * (float4)(a.s123, c.s0);
      if (kb + 2 < KW) s2 += tk[kb + 2] * (float4)(a.s23, c.s01);
      if (kb + 3 < KW) s3 += tk[kb + 3] * (float4)(a.s3, c.s012);
      a = c;
    }
  }
  return (s0 + s1) + (s2 + s3);
}

/* The 3x3 windows' kernels eight columns at a time, where the row's
 * stride and dilation are 1 and its padding 0 or 1, in rows of at least
 * 10 values (on POCL 2.4-3.3x faster than four at a time, which tests the
 * bounds of every load at the rows' ends): eight outputs read the ten
 * values row[i..i+9] of a row of n, outside it at most the one before it
 * (i = -1) or the one past it (i + 9 = n), 0 there; a takes the first
 * eight, c the last two. */
static inline void dw_load10(__global const float *row, int n, int i,
                             float8 *a, float2 *c) {
  if (i < 0) {
    float8 v = vload8(0, row);
    *a = (float8)(0.0f, v.s012, v.s3456);
    *c = (float2)(v.s7, row[8]);
    return;
  }
  *a = vload8(0, row + i);
  *c = i + 10 > n ? (float2)(row[i + 8], 0.0f) : vload2(0, row + i + 8);
}
/* Those ten values from the first, shifted by one and by two. */
#define DW_SHIFT1(a, c) ((float8)((a).s1234, (a).s567, (c).s0))
#define DW_SHIFT2(a, c) ((float8)((a).s2345, (a).s67, (c).s01))

/* Outputs ox..ox+7 of output row oy (i = ox - pw): the sums of
 * dw_forward_four in the same order, eight at a time. */
static inline float8 dw_forward_eight3(__global const float *plane,
                                       __global const float *taps, int oy,
                                       int ox, int H, int W, int sh, int ph,
                                       int pw, int dil_h) {
  float8 s0 = (float8)(0.0f), s1 = s0, s2 = s0;
  int i = ox - pw;
  for (int ky = 0; ky < 3; ky++) {
    int iy = oy * sh - ph + ky * dil_h;
    if (iy < 0 || iy >= H) continue;
    __global const float *row = plane + iy * W;
    __global const float *tk = taps + ky * 3;
    float8 a;
    float2 c;
    dw_load10(row, W, i, &a, &c);
    s0 += tk[0] * a;
    s1 += tk[1] * DW_SHIFT1(a, c);
    s2 += tk[2] * DW_SHIFT2(a, c);
  }
  return (s0 + s1) + s2;
}

/* Windows of up to 8 columns whose row has stride and dilation 1, eight
 * outputs at a time from an item's input rows copied into private memory
 * between zeros (buf: rows from iy0, `stride` values apart, a row's
 * column ix at pw + ix), so that no load tests its bounds. */
#define DW_BUF 1024
/* Input rows iy0..iy0+rows-1 (those inside the plane) into buf, each
 * `stride` values (a multiple of 8) of zeros but for the row at pw. */
static inline void dw_buffer_rows(float *buf, __global const float *plane,
                                  int iy0, int rows, int stride, int H, int W,
                                  int pw) {
  for (int r = 0; r < rows; r++) {
    int iy = iy0 + r;
    if (iy < 0 || iy >= H) continue; /* never read */
    float *row = buf + r * stride;
    __global const float *src = plane + iy * W;
    /* zeros in the eights that hold the padding (those the values
     * overwrite in part first), then the values, the last eight
     * overlapping the one before */
    for (int s = 0; s < pw; s += 8) vstore8((float8)(0.0f), 0, row + s);
    for (int s = (pw + W) / 8 * 8; s < stride; s += 8)
      vstore8((float8)(0.0f), 0, row + s);
    if (W < 8) {
      for (int s = 0; s < W; s++) row[pw + s] = src[s];
      continue;
    }
    for (int s = 0; s < W; s += 8) {
      int at = min(s, W - 8);
      vstore8(vload8(0, src + at), 0, row + pw + at);
    }
  }
}
/* A stride for rows of n values: n + 8 or more, a multiple of 8. */
#define DW_STRIDE(n) (((n) + 15) / 8 * 8)
/* STEP(k, window) for k = 0..7 and the eight values of the float16 v
 * from k on: tap k's window of eight outputs read from buffered values. */
#define DW_SHIFTS(v, STEP)                                                    \
  STEP(0, (v).s01234567)                                                      \
  STEP(1, (v).s12345678)                                                      \
  STEP(2, (v).s23456789)                                                      \
  STEP(3, (v).s3456789a)                                                      \
  STEP(4, (v).s456789ab)                                                      \
  STEP(5, (v).s56789abc)                                                      \
  STEP(6, (v).s6789abcd)                                                      \
  STEP(7, (v).s789abcde)
/* Where an eight starts in a row of n: at ix, or n - 8 for the row's last
 * (0 in rows shorter than 8). */
#define DW_AT(ix, n) max(0, min((ix), (n) - 8))
/* dw_loadN: p[0..N-1], in rows shorter than N only p[0..n-1] read, 0
 * for the rest; dw_storeN: v into p[0..N-1], or p[0..n-1] only where
 * n < N. N: 8, and 16 (the stride-2 data gradient's sixteens). */
#define DW_PARTIAL_ROWS(N)                                                    \
  static inline float##N dw_load##N(__global const float *p, int n) {        \
    if (n >= N) return vload##N(0, p);                                        \
    float v[N] = {0.0f};                                                      \
    for (int i = 0; i < n; i++) v[i] = p[i];                                  \
    return vload##N(0, v);                                                    \
  }                                                                           \
  static inline void dw_store##N(__global float *p, int n, float##N v) {     \
    if (n >= N) {                                                             \
      vstore##N(v, 0, p);                                                     \
      return;                                                                 \
    }                                                                         \
    float t[N];                                                               \
    vstore##N(v, 0, t);                                                       \
    for (int i = 0; i < n; i++) p[i] = t[i];                                  \
  }
DW_PARTIAL_ROWS(8)
DW_PARTIAL_ROWS(16)
/* Windows of up to 8 columns whose row has stride 2 and dilation 1
 * (MobileNet's downsampling layers), eight outputs at a time from buffered
 * rows as well: outputs at..at+7 read the row's values from 2 at, tap kx
 * those at 2 at + kx + 2 j (j = 0..7). The 24 values from 2 at split into
 * the even ones (e) and the odd ones (o): tap 2 u reads e from u on, tap
 * 2 u + 1 reads o from u on. STEP(k, window) for k = 0..7. */
#define DW_SHIFTS_EVEN_ODD(e, o, STEP)                                        \
  STEP(0, (e).s01234567)                                                      \
  STEP(1, (o).s01234567)                                                      \
  STEP(2, (e).s12345678)                                                      \
  STEP(3, (o).s12345678)                                                      \
  STEP(4, (e).s23456789)                                                      \
  STEP(5, (o).s23456789)                                                      \
  STEP(6, (e).s3456789a)                                                      \
  STEP(7, (o).s3456789a)
/* The even and the odd values of p[0..23] (p[0], p[2], .. and p[1], p[3],
 * .., 12 each, the last four lanes of each repeated). */
#define DW_EVEN_ODD(p, e, o)                                                  \
  {                                                                           \
    float16 v_ = (float16)(vload8(0, (p)), vload8(0, (p) + 8));               \
    float8 c_ = vload8(0, (p) + 16);                                          \
    e = (float16)(v_.even, c_.even, c_.even);                                 \
    o = (float16)(v_.odd, c_.odd, c_.odd);                                    \
  }
/* A stride for buffered rows of n values read by the stride-2 eights of
 * an output row of OW: the row's last eight reads 24 values from
 * 2 (OW - 8), a row shorter than 8 from 0. */
#define DW_STRIDE_TWO(n, OW) DW_STRIDE(max((n), 2 * max((OW) - 8, 0) + 16))
/* Outputs at..at+7 of output row oy from buf, the row's stride 1 or (two)
 * 2: with stride 1 the sums of dw_forward_four in the same order. */
static inline float8 dw_forward_eight_buf(const float *buf, int stride,
                                          int iy0, __global const float *taps,
                                          int oy, int at, int H, int KH,
                                          int KW, int sh, int ph, int dil_h,
                                          bool two) {
  float8 s[4] = {(float8)(0.0f), (float8)(0.0f), (float8)(0.0f),
                 (float8)(0.0f)};
  for (int ky = 0; ky < KH; ky++) {
    int iy = oy * sh - ph + ky * dil_h;
    if (iy < 0 || iy >= H) continue;
    const float *row = buf + (iy - iy0) * stride;
    __global const float *tk = taps + ky * KW;
#define DW_TAP(k, window)                                                     \
  if (KW > (k)) s[(k) % 4] += tk[k] * window;
    if (two) {
      float16 e, o;
      DW_EVEN_ODD(row + 2 * at, e, o)
      DW_SHIFTS_EVEN_ODD(e, o, DW_TAP)
    } else {
      float16 v = (float16)(vload8(0, row + at), vload8(0, row + at + 8));
      DW_SHIFTS(v, DW_TAP)
    }
#undef DW_TAP
  }
  return (s[0] + s[1]) + (s[2] + s[3]);
}

/* Item r, rows y0..y1-1 of an output plane (n, o): R rows of it (the
 * plane's last item fewer), each = bias + each tap's weight times the
 * input values it reads (relu: then 0 where not above 0). Several rows an
 * item: on POCL 5-13% less time than an item a row (fewer work-groups,
 * the index divisions paid once); the loads wholly inside the row without
 * their tests, and 3x3 windows unrolled: together 1.2-1.8x faster. */
__kernel void dw_forward_rows(__global float *y, int y_off,
                              __global const float *x, int x_off,
                              __global const float *w, int w_off,
                              __global const float *bias, int bias_off,
                              int has_bias, int relu, int planes, int R,
                              int eights_ok, int C, int M, int H, int W,
                              int OH, int OW,
                              int KH, int KW, int sh, int sw, int ph, int pw,
                              int dil_h, int dil_w) {
  int r = get_global_id(0), blocks = (OH + R - 1) / R;
  if (r >= planes * blocks) return;
  int t = r / blocks, y0 = r % blocks * R, y1 = min(OH, y0 + R);
  int F = C * M, o = t % F, n = t / F;
  __global const float *plane = x + x_off + (n * C + o / M) * H * W;
  __global const float *taps = w + w_off + o * KH * KW;
  float b = has_bias ? bias[bias_off + o] : 0.0f;
  /* by fours: the loads of outputs ox..ox+3 read the row from ox - pw to
   * ox - pw + reach - 1 */
  bool fours = sw == 1 && dil_w == 1, k3 = KH == 3 && KW == 3;
  int reach = (KW + 3) / 4 * 4 + 4;
  /* eight at a time: the row's last eight outputs last, some of them
   * written a second time (the same values) where OW is not a multiple
   * of 8 */
  bool eights = eights_ok && fours && k3 && pw <= 1 && W >= 10;
  /* other windows of up to 8 columns: from buffered rows (the reads of
   * the row's last eight reach W + 2 pw + 7 at most) */
  /* and windows of up to 8 columns with stride 2 along the row */
  bool twos = eights_ok && sw == 2 && dil_w == 1 && KW <= 8;
  int stride = twos ? DW_STRIDE_TWO(W + 2 * pw, OW) : DW_STRIDE(W + 2 * pw);
  int iy0 = y0 * sh - ph;
  int rows_in = (y1 - 1 - y0) * sh + (KH - 1) * dil_h + 1;
  if (eights_ok && ((!eights && fours) || twos) && KW <= 8 &&
      rows_in * stride <= DW_BUF) {
    float buf[DW_BUF];
    dw_buffer_rows(buf, plane, iy0, rows_in, stride, H, W, pw);
    for (int oy = y0; oy < y1; oy++) {
      __global float *out = y + y_off + (t * OH + oy) * OW;
      for (int ox = 0; ox < OW; ox += 8) {
        int at = DW_AT(ox, OW);
        float8 v = twos && KH == 3 && KW == 3
                       ? dw_forward_eight_buf(buf, stride, iy0, taps, oy, at,
                                              H, 3, 3, sh, ph, dil_h, true)
                   : twos ? dw_forward_eight_buf(buf, stride, iy0, taps, oy,
                                                 at, H, KH, KW, sh, ph, dil_h,
                                                 true)
                   : KH == 7 && KW == 7
                       ? dw_forward_eight_buf(buf, stride, iy0, taps, oy, at,
                                              H, 7, 7, sh, ph, dil_h, false)
                       : dw_forward_eight_buf(buf, stride, iy0, taps, oy, at,
                                              H, KH, KW, sh, ph, dil_h,
                                              false);
        v = b + v;
        if (relu) v = select((float8)(0.0f), v, v > 0.0f);
        dw_store8(out + at, OW, v);
      }
    }
    return;
  }
  for (int oy = y0; oy < y1; oy++) {
    __global float *out = y + y_off + (t * OH + oy) * OW;
    for (int ox = 0; eights && ox < OW; ox += 8) {
      int at = min(ox, OW - 8);
      float8 v = b + dw_forward_eight3(plane, taps, oy, at, H, W, sh, ph, pw,
                                       dil_h);
      if (relu) v = select((float8)(0.0f), v, v > 0.0f);
      vstore8(v, 0, out + at);
    }
    for (int ox = 0; !eights && ox < OW; ox += 4) {
      float4 v;
      bool inside = ox - pw >= 0 && ox - pw + reach <= W;
      if (fours && inside && k3)
        v = dw_forward_four(plane, taps, oy, ox, H, W, 3, 3, sh, ph, pw,
                            dil_h, true);
      else if (fours && inside)
        v = dw_forward_four(plane, taps, oy, ox, H, W, KH, KW, sh, ph, pw,
                            dil_h, true);
      else if (fours)
        v = dw_forward_four(plane, taps, oy, ox, H, W, KH, KW, sh, ph, pw,
                            dil_h, false);
      else {
        v = (float4)(0.0f);
        for (int ky = 0; ky < KH; ky++) {
          int iy = oy * sh - ph + ky * dil_h;
          if (iy < 0 || iy >= H) continue;
          __global const float *row = plane + iy * W;
          for (int kx = 0; kx < KW; kx++)
            v += taps[ky * KW + kx] *
                 dw_load4(row, W, ox * sw - pw + kx * dil_w, sw);
        }
      }
      v = b + v;
      if (relu) v = select((float4)(0.0f), v, v > 0.0f);
      dw_store4(out, OW, ox, v);
    }
  }
}

/* The row of dy's plane g whose taps of row ky read input row iy (stride
 * sh, padding ph, dilation dil_h), or 0 where none does. */
static inline __global const float *dw_dy_row(__global const float *g,
                                              int iy, int ky, int sh, int ph,
                                              int dil_h, int OH, int OW) {
  int sy = iy + ph - ky * dil_h;
  return sy < 0 || sy % sh || sy / sh >= OH ? 0 : g + (sy / sh) * OW;
}

/* Columns ix..ix+3 of dx's row iy of channel c, stride 1 along the row:
 * the sum over the channel's M outputs (dy's planes from g0, their taps
 * from w0) and the taps whose rows read row iy; a sum per tap of four
 * (independent chains of additions). With dilation 1 along the row, taps
 * kb+3..kb read dy's row from ix + pw - kb - 3 (a, then c; the next
 * four's c is this a); inside: every such load lies inside dy's row, a
 * constant where inlined, as KH, KW, sh and dil_h may be. */
static inline float4 dw_data_four(__global const float *g0,
                                  __global const float *w0, int iy, int ix,
                                  int M, int OH, int OW, int KH, int KW,
                                  int sh, int ph, int pw, int dil_h,
                                  int dil_w, bool inside) {
  float4 s0 = (float4)(0.0f), s1 = s0, s2 = s0, s3 = s0;
  for (int m = 0; m < M; m++) {
    __global const float *g = g0 + m * OH * OW;
    __global const float *taps = w0 + m * KH * KW;
    for (int ky = 0; ky < KH; ky++) {
      __global const float *grow = dw_dy_row(g, iy, ky, sh, ph, dil_h, OH, OW);
      if (!grow) continue;
      __global const float *tk = taps + ky * KW;
      if (dil_w == 1) {
        int i = ix + pw;
        float4 c = inside ? vload4(0, grow + i + 1)
                          : dw_load4(grow, OW, i + 1, 1);
        for (int kb = 0; kb < KW; kb += 4) {
          float4 a = inside ? vload4(0, grow + i - kb - 3)
                            : dw_load4(grow, OW, i - kb - 3, 1);
          s0 += tk[kb] * (float4)(a.s3, c.s012);
          if (kb + 1 < KW) s1 += tk[kb + 1] * (float4)(a.s23, c.s01);
          if (kb + 2 < KW) s2 += tk[kb + 2] * (float4)(a.s123, c.s0);
          if (kb + 3 < KW) s3 += tk[kb + 3] * a;
          c = a;
        }
        continue;
      }
      for (int kx = 0; kx < KW; kx++)
        s0 += tk[kx] * dw_load4(grow, OW, ix + pw - kx * dil_w, 1);
    }
  }
  return (s0 + s1) + (s2 + s3);
}

/* Columns ix..ix+7 of dx's row iy of channel c for a 3x3 window of
 * stride and dilation 1 and padding 1 along the row (OW = W), stride and
 * dilation 1 down the columns: the sums of dw_data_four in the same
 * order, eight at a time, reading dy's row from j = ix - 1 to j + 9. */
static inline float8 dw_data_eight3(__global const float *g0,
                                    __global const float *w0, int iy, int ix,
                                    int M, int OH, int OW, int ph) {
  float8 s0 = (float8)(0.0f), s1 = s0, s2 = s0;
  int j = ix - 1;
  for (int m = 0; m < M; m++) {
    __global const float *g = g0 + m * OH * OW;
    __global const float *taps = w0 + m * 9;
    for (int ky = 0; ky < 3; ky++) {
      __global const float *grow = dw_dy_row(g, iy, ky, 1, ph, 1, OH, OW);
      if (!grow) continue;
      __global const float *tk = taps + ky * 3;
      float8 a;
      float2 c;
      dw_load10(grow, OW, j, &a, &c);
      s0 += tk[0] * DW_SHIFT2(a, c);
      s1 += tk[1] * DW_SHIFT1(a, c);
      s2 += tk[2] * a;
    }
  }
  return (s0 + s1) + s2;
}

/* Columns at..at+7 of dx's row iy of channel c for windows of up to 8
 * columns, stride 1 down the columns, from dy's rows sy0.. of the M
 * planes buffered in buf (dw_buffer_rows, `rows` a plane, dy's column s
 * at s + KW - 1 - pw): tap kx reads dy's columns from at + pw - kx, the
 * values from KW - 1 - kx on. */
static inline float8 dw_data_eight_buf(const float *buf, int stride, int rows,
                                       int sy0, __global const float *w0,
                                       int iy, int at, int M, int OH, int KH,
                                       int KW, int ph, int dil_h) {
  float8 s[4] = {(float8)(0.0f), (float8)(0.0f), (float8)(0.0f),
                 (float8)(0.0f)};
  for (int m = 0; m < M; m++) {
    __global const float *taps = w0 + m * KH * KW;
    for (int ky = 0; ky < KH; ky++) {
      int sy = iy + ph - ky * dil_h;
      if (sy < 0 || sy >= OH) continue;
      const float *row = buf + (m * rows + sy - sy0) * stride + at;
      __global const float *tk = taps + ky * KW + KW - 1;
      float16 v = (float16)(vload8(0, row), vload8(0, row + 8));
#define DW_TAP(k, window)                                                     \
  if (KW > (k)) s[(k) % 4] += tk[-(k)] * window;
      DW_SHIFTS(v, DW_TAP)
#undef DW_TAP
    }
  }
  return (s[0] + s[1]) + (s[2] + s[3]);
}

/* Stride 2 along the row, windows of up to 8 columns: columns
 * at..at+15 of dx's row iy, from dy's rows sy0.. of the M planes buffered
 * in buf (`rows` a plane, dy's column s at s + 3). Column ix's tap kx
 * reads dy's column (ix + pw - kx) / 2 where ix + pw - kx is even: with
 * h = (at + pw) / 2, the even columns at + 2 j and the odd ones
 * at + 2 j + 1 each read eight consecutive columns of dy from h - u or
 * h + 1 - u, u = 0..3, the taps of one parity each, which depends on that
 * of at + pw; the windows from buf's h + 3 - u or h + 4 - u, those of the
 * float16 from h (w(k): its values from k on). The sums interleaved. */
static inline float16 dw_data_sixteen_two(const float *buf, int stride,
                                          int rows, int sy0,
                                          __global const float *w0, int iy,
                                          int at, int M, int OH, int KH,
                                          int KW, int sh, int ph, int pw,
                                          int dil_h) {
  float8 e = (float8)(0.0f), o = e;
  int h = (at + pw) / 2;
  bool odd = (at + pw) % 2;
  for (int m = 0; m < M; m++) {
    __global const float *taps = w0 + m * KH * KW;
    for (int ky = 0; ky < KH; ky++) {
      int sy = iy + ph - ky * dil_h;
      if (sy < 0 || sy % sh || sy / sh >= OH) continue;
      const float *row = buf + (m * rows + sy / sh - sy0) * stride + h;
      __global const float *tk = taps + ky * KW;
      float16 v = (float16)(vload8(0, row), vload8(0, row + 8));
      float8 w0_ = v.s01234567, w1_ = v.s12345678, w2_ = v.s23456789,
             w3_ = v.s3456789a, w4_ = v.s456789ab;
      /* the taps of even kx (k: kx / 2) and of odd kx, on windows a..d */
#define DW_EVEN_TAPS(s, a, b, c, d)                                           \
  {                                                                           \
    s += tk[0] * a;                                                           \
    if (KW > 2) s += tk[2] * b;                                               \
    if (KW > 4) s += tk[4] * c;                                               \
    if (KW > 6) s += tk[6] * d;                                               \
  }
#define DW_ODD_TAPS(s, a, b, c, d)                                            \
  {                                                                           \
    if (KW > 1) s += tk[1] * a;                                               \
    if (KW > 3) s += tk[3] * b;                                               \
    if (KW > 5) s += tk[5] * c;                                               \
    if (KW > 7) s += tk[7] * d;                                               \
  }
      if (odd) {
        DW_ODD_TAPS(e, w3_, w2_, w1_, w0_)
        DW_EVEN_TAPS(o, w4_, w3_, w2_, w1_)
      } else {
        DW_EVEN_TAPS(e, w3_, w2_, w1_, w0_)
        DW_ODD_TAPS(o, w3_, w2_, w1_, w0_)
      }
#undef DW_EVEN_TAPS
#undef DW_ODD_TAPS
    }
  }
  return (float16)(e.s0, o.s0, e.s1, o.s1, e.s2, o.s2, e.s3, o.s3, e.s4,
                   o.s4, e.s5, o.s5, e.s6, o.s6, e.s7, o.s7);
}
/* a / b rounded down, b > 0 */
#define DW_FLOOR_DIV(a, b) ((a) >= 0 ? (a) / (b) : -((-(a) + (b) - 1) / (b)))

/* Item r, rows iy0..iy1-1 of dx's plane (n, c): R rows (the plane's last
 * item fewer), each the sum over channel c's M outputs and the taps whose
 * rows read it of dy's row times the weight; written or (accumulate)
 * added. Stride 1: gathered four columns at a time (each column's tap kx
 * read dy's column ix + pw - kx dil_w); other strides: dy's row
 * scattered to the columns each output column read. */
__kernel void dw_backward_data_rows(__global float *dx, int dx_off,
                                    __global const float *dy, int dy_off,
                                    __global const float *w, int w_off,
                                    int accumulate, int planes, int R,
                                    int eights_ok, int C, int M, int H,
                                    int W, int OH, int OW, int KH, int KW,
                                    int sh, int sw,
                                    int ph, int pw, int dil_h, int dil_w) {
  int r = get_global_id(0), blocks = (H + R - 1) / R;
  if (r >= planes * blocks) return;
  int t = r / blocks, iy0 = r % blocks * R, iy1 = min(H, iy0 + R);
  int c = t % C, n = t / C;
  __global const float *g0 = dy + dy_off + (n * C + c) * M * OH * OW;
  __global const float *w0 = w + w_off + c * M * KH * KW;
  /* with dilation 1 along the row, the loads of columns ix..ix+3 read
   * dy's row from ix + pw - reach + 5 to ix + pw + 4 */
  bool k3 = KH == 3 && KW == 3 && sh == 1 && dil_h == 1 && dil_w == 1;
  int reach = dil_w == 1 ? (KW + 3) / 4 * 4 + 4 : 0;
  /* eight at a time where padding 1 keeps OW = W, the row's last eight
   * last: some of them written a second time (the same values), or where
   * added, 0 added to those the eight before took */
  bool eights = eights_ok && sw == 1 && k3 && pw == 1 && W >= 10;
  /* other windows of up to 8 columns whose padding lies within their
   * reach, stride 1 down the columns: eight at a time as well, from dy's
   * rows buffered (the reads of a row's last eight reach W + 7 at most) */
  int stride = DW_STRIDE(W), sy0 = iy0 + ph - (KH - 1) * dil_h;
  int rows_in = iy1 - 1 - iy0 + (KH - 1) * dil_h + 1;
  bool buffered = eights_ok && !eights && sw == 1 && sh == 1 &&
                  dil_w == 1 && KW <= 8 &&
                  pw <= KW - 1 && M * rows_in * stride <= DW_BUF;
  /* stride 2 along the row, windows of up to 8 columns: sixteen at a
   * time from dy's rows buffered (the reads of a row's last sixteen reach
   * its column (W + pw) / 2 + 4 at most) */
  int sy_two = DW_FLOOR_DIV(iy0 + ph - (KH - 1) * dil_h, sh);
  int rows_two = DW_FLOOR_DIV(iy1 - 1 + ph, sh) - sy_two + 1;
  int stride_two = DW_STRIDE(max(OW + 3, (max(W, 16) + pw) / 2 + 8));
  bool twos = eights_ok && sw == 2 && dil_w == 1 && KW <= 8 &&
              M * rows_two * stride_two <= DW_BUF;
  float buf[DW_BUF];
  for (int m = 0; buffered && m < M; m++)
    dw_buffer_rows(buf + m * rows_in * stride, g0 + m * OH * OW, sy0, rows_in,
                   stride, OH, OW, KW - 1 - pw);
  for (int m = 0; twos && m < M; m++)
    dw_buffer_rows(buf + m * rows_two * stride_two, g0 + m * OH * OW, sy_two,
                   rows_two, stride_two, OH, OW, 3);
  int8 lane = (int8)(0, 1, 2, 3, 4, 5, 6, 7);
  int16 lane16 = (int16)(lane, lane + 8);
  for (int iy = iy0; iy < iy1; iy++) {
    __global float *out = dx + dx_off + (t * H + iy) * W;
    if (twos) {
      for (int ix = 0; ix < W; ix += 16) {
        int at = max(0, min(ix, W - 16));
        float16 v =
            KH == 3 && KW == 3
                ? dw_data_sixteen_two(buf, stride_two, rows_two, sy_two, w0,
                                      iy, at, M, OH, 3, 3, sh, ph, pw, dil_h)
                : dw_data_sixteen_two(buf, stride_two, rows_two, sy_two, w0,
                                      iy, at, M, OH, KH, KW, sh, ph, pw,
                                      dil_h);
        if (accumulate)
          v = dw_load16(out + at, W) +
              select(v, (float16)(0.0f), lane16 < ix - at);
        dw_store16(out + at, W, v);
      }
      continue;
    }
    if (sw == 1) {
      int ix = 0;
      for (; (eights || buffered) && ix < W; ix += 8) {
        int at = DW_AT(ix, W);
        float8 v =
            eights ? dw_data_eight3(g0, w0, iy, at, M, OH, OW, ph)
            : KH == 7 && KW == 7
                ? dw_data_eight_buf(buf, stride, rows_in, sy0, w0, iy, at, M,
                                    OH, 7, 7, ph, dil_h)
                : dw_data_eight_buf(buf, stride, rows_in, sy0, w0, iy, at, M,
                                    OH, KH, KW, ph, dil_h);
        if (accumulate)
          v = dw_load8(out + at, W) + select(v, (float8)(0.0f), lane < ix - at);
        dw_store8(out + at, W, v);
      }
      for (; ix < W; ix += 4) {
        float4 v;
        bool inside = reach > 0 && ix + pw + 5 - reach >= 0 &&
                      ix + pw + 5 <= OW;
        if (inside && k3)
          v = dw_data_four(g0, w0, iy, ix, M, OH, OW, 3, 3, 1, ph, pw, 1, 1,
                           true);
        else if (inside)
          v = dw_data_four(g0, w0, iy, ix, M, OH, OW, KH, KW, sh, ph, pw,
                           dil_h, 1, true);
        else
          v = dw_data_four(g0, w0, iy, ix, M, OH, OW, KH, KW, sh, ph, pw,
                           dil_h, dil_w, false);
        if (accumulate) v = dw_load4(out, W, ix, 1) + v;
        dw_store4(out, W, ix, v);
      }
      continue;
    }
    if (!accumulate)
      for (int ix = 0; ix < W; ix++) out[ix] = 0.0f;
    for (int m = 0; m < M; m++) {
      __global const float *g = g0 + m * OH * OW;
      __global const float *taps = w0 + m * KH * KW;
      for (int ky = 0; ky < KH; ky++) {
        __global const float *grow =
            dw_dy_row(g, iy, ky, sh, ph, dil_h, OH, OW);
        if (!grow) continue;
        for (int kx = 0; kx < KW; kx++) {
          float wv = taps[ky * KW + kx];
          /* the output columns lo..hi-1 whose tap kx reads inside the
           * row */
          int off = kx * dil_w - pw;
          int lo = off < 0 ? (-off + sw - 1) / sw : 0;
          int hi = W - 1 - off < 0 ? 0 : (W - 1 - off) / sw + 1;
          if (hi > OW) hi = OW;
          for (int ox = lo; ox < hi; ox++) out[ox * sw + off] += wv * grow[ox];
        }
      }
    }
  }
}

/* The sum of a float8's values. */
#define DW_LANES(v)                                                           \
  ((((v).s0 + (v).s1) + ((v).s2 + (v).s3)) +                                  \
   (((v).s4 + (v).s5) + ((v).s6 + (v).s7)))

/* Item p, a plane (n, o): part[p, tap] = the sum over the plane of dy
 * times the input value the tap read, for each of its KH KW taps (four
 * columns at a time, the four partial sums added at the end; 3x3 windows
 * eight at a time, all nine taps in one sweep). */
__kernel void dw_weights_rows(__global float *part, int part_off,
                              __global const float *dy, int dy_off,
                              __global const float *x, int x_off, int planes,
                              int eights_ok, int C, int M, int H, int W,
                              int OH, int OW,
                              int KH, int KW, int sh, int sw, int ph, int pw,
                              int dil_h, int dil_w) {
  int p = get_global_id(0);
  if (p >= planes) return;
  int F = C * M, o = p % F, n = p / F;
  __global const float *plane = x + x_off + (n * C + o / M) * H * W;
  __global const float *g = dy + dy_off + p * OH * OW;
  __global float *out = part + part_off + p * KH * KW;
  if (eights_ok && sw == 1 && dil_w == 1 && KH == 3 && KW == 3 && pw <= 1 &&
      W >= 10) {
    /* 3x3, eight columns at a time (dw_load10), the plane swept once:
     * tap (ky, kx)'s sums in s<ky><kx>; the row's last eight last, the
     * columns an eight before it took masked off */
    float8 s00 = (float8)(0.0f), s01 = s00, s02 = s00, s10 = s00, s11 = s00,
           s12 = s00, s20 = s00, s21 = s00, s22 = s00;
    for (int oy = 0; oy < OH; oy++) {
      __global const float *grow = g + oy * OW;
      for (int ox = 0; ox < OW; ox += 8) {
        int at = min(ox, OW - 8), i = at - pw;
        float8 d = vload8(0, grow + at);
        int8 lane = (int8)(0, 1, 2, 3, 4, 5, 6, 7);
        d = select(d, (float8)(0.0f), lane < ox - at);
#define DW_WEIGHT_ROW(ky, t0, t1, t2)                                         \
  {                                                                           \
    int iy = oy * sh - ph + (ky) * dil_h;                                     \
    if (iy >= 0 && iy < H) {                                                  \
      float8 a;                                                               \
      float2 c;                                                               \
      dw_load10(plane + iy * W, W, i, &a, &c);                                \
      t0 += d * a;                                                            \
      t1 += d * DW_SHIFT1(a, c);                                              \
      t2 += d * DW_SHIFT2(a, c);                                              \
    }                                                                         \
  }
        DW_WEIGHT_ROW(0, s00, s01, s02)
        DW_WEIGHT_ROW(1, s10, s11, s12)
        DW_WEIGHT_ROW(2, s20, s21, s22)
#undef DW_WEIGHT_ROW
      }
    }
    out[0] = DW_LANES(s00);
    out[1] = DW_LANES(s01);
    out[2] = DW_LANES(s02);
    out[3] = DW_LANES(s10);
    out[4] = DW_LANES(s11);
    out[5] = DW_LANES(s12);
    out[6] = DW_LANES(s20);
    out[7] = DW_LANES(s21);
    out[8] = DW_LANES(s22);
    return;
  }
  if (eights_ok && sw == 2 && dil_w == 1 && KW <= 8) {
    /* stride 2 along the row, windows of up to 8 columns: eight columns
     * at a time from the plane's rows buffered a block of output rows at
     * a time (as many as the buffer holds the input rows of), a sweep of
     * the block for each row of taps, each block's sums added to the
     * blocks' before; dy's rows buffered too where shorter than 8 */
    int stride2 = DW_STRIDE_TWO(W + 2 * pw, OW);
    int span = DW_BUF / stride2 - (KH - 1) * dil_h - 1;
    int B = span < 0 ? 0 : span / sh + 1;
    if (B > 0) {
      float buf[DW_BUF], gbuf[DW_BUF / 4];
      bool short_rows = OW < 8 && OH * 8 <= DW_BUF / 4;
      if (short_rows) dw_buffer_rows(gbuf, g, 0, OH, 8, OH, OW, 0);
      int8 lane = (int8)(0, 1, 2, 3, 4, 5, 6, 7);
      for (int oy0 = 0; oy0 < OH; oy0 += B) {
        int oy1 = min(OH, oy0 + B), iy0 = oy0 * sh - ph;
        dw_buffer_rows(buf, plane, iy0,
                       (oy1 - 1 - oy0) * sh + (KH - 1) * dil_h + 1, stride2,
                       H, W, pw);
        for (int ky = 0; ky < KH; ky++) {
          float8 t[8];
#pragma unroll
          for (int k = 0; k < 8; k++) t[k] = (float8)(0.0f);
          for (int oy = oy0; oy < oy1; oy++) {
            int iy = oy * sh - ph + ky * dil_h;
            if (iy < 0 || iy >= H) continue;
            const float *row = buf + (iy - iy0) * stride2;
            __global const float *grow = g + oy * OW;
            for (int ox = 0; ox < OW; ox += 8) {
              int at = DW_AT(ox, OW);
              float8 d = short_rows ? vload8(0, gbuf + oy * 8)
                         : OW < 8 ? dw_load8(grow, OW)
                                  : select(vload8(0, grow + at),
                                           (float8)(0.0f), lane < ox - at);
              float16 e, o;
              DW_EVEN_ODD(row + 2 * at, e, o)
#define DW_TAP(k, window) if (KW > (k)) t[k] += d * window;
              DW_SHIFTS_EVEN_ODD(e, o, DW_TAP)
#undef DW_TAP
            }
          }
#pragma unroll
          for (int k = 0; k < 8; k++)
            if (k < KW)
              out[ky * KW + k] =
                  (oy0 > 0 ? out[ky * KW + k] : 0.0f) + DW_LANES(t[k]);
        }
      }
      return;
    }
  }
  int stride = DW_STRIDE(W + 2 * pw);
  bool short_rows = OW < 8;
  if (eights_ok && sw == 1 && dil_w == 1 && KW <= 8 &&
      H * stride <= DW_BUF &&
      (!short_rows || OH * 8 <= DW_BUF / 4)) {
    /* other windows of up to 8 columns: eight columns at a time from the
     * plane's rows buffered (dw_buffer_rows), a sweep of the plane for
     * each row of taps; dy's rows too where shorter than 8 (read as
     * eights, 0 past their end) */
    float buf[DW_BUF], gbuf[DW_BUF / 4];
    dw_buffer_rows(buf, plane, 0, H, stride, H, W, pw);
    if (short_rows) dw_buffer_rows(gbuf, g, 0, OH, 8, OH, OW, 0);
    int8 lane = (int8)(0, 1, 2, 3, 4, 5, 6, 7);
    for (int ky = 0; ky < KH; ky++) {
      float8 t[8];
#pragma unroll
      for (int k = 0; k < 8; k++) t[k] = (float8)(0.0f);
      for (int oy = 0; oy < OH; oy++) {
        int iy = oy * sh - ph + ky * dil_h;
        if (iy < 0 || iy >= H) continue;
        const float *row = buf + iy * stride;
        __global const float *grow = g + oy * OW;
        for (int ox = 0; ox < OW; ox += 8) {
          int at = DW_AT(ox, OW);
          float8 d = short_rows ? vload8(0, gbuf + oy * 8)
                                : select(vload8(0, grow + at), (float8)(0.0f),
                                         lane < ox - at);
          float16 v = (float16)(vload8(0, row + at), vload8(0, row + at + 8));
#define DW_TAP(k, window) if (KW > (k)) t[k] += d * window;
          DW_SHIFTS(v, DW_TAP)
#undef DW_TAP
        }
      }
#pragma unroll
      for (int k = 0; k < 8; k++)
        if (k < KW) out[ky * KW + k] = DW_LANES(t[k]);
    }
    return;
  }
  if (sw == 1 && dil_w == 1) {
    /* four taps kb..kb+3 at a time: each four columns of dy's row times
     * the input row's eight from ox - pw + kb, shifted by the tap */
    for (int ky = 0; ky < KH; ky++)
      for (int kb = 0; kb < KW; kb += 4) {
        float4 s0 = (float4)(0.0f), s1 = s0, s2 = s0, s3 = s0;
        for (int oy = 0; oy < OH; oy++) {
          int iy = oy * sh - ph + ky * dil_h;
          if (iy < 0 || iy >= H) continue;
          __global const float *row = plane + iy * W, *grow = g + oy * OW;
          float4 a = dw_load4(row, W, kb - pw, 1);
          for (int ox = 0; ox < OW; ox += 4) {
            float4 d = dw_load4(grow, OW, ox, 1);
            float4 c = dw_load4(row, W, ox + 4 + kb - pw, 1);
            s0 += d * a;
            s1 += d * (float4)(a.s123, c.s0);
            s2 += d * (float4)(a.s23, c.s01);
            s3 += d * (float4)(a.s3, c.s012);
            a = c;
          }
        }
        __global float *o4 = out + ky * KW + kb;
        o4[0] = (s0.s0 + s0.s1) + (s0.s2 + s0.s3);
        if (kb + 1 < KW) o4[1] = (s1.s0 + s1.s1) + (s1.s2 + s1.s3);
        if (kb + 2 < KW) o4[2] = (s2.s0 + s2.s1) + (s2.s2 + s2.s3);
        if (kb + 3 < KW) o4[3] = (s3.s0 + s3.s1) + (s3.s2 + s3.s3);
      }
    return;
  }
  for (int ky = 0; ky < KH; ky++)
    for (int kx = 0; kx < KW; kx++) {
      float4 s = (float4)(0.0f);
      for (int oy = 0; oy < OH; oy++) {
        int iy = oy * sh - ph + ky * dil_h;
        if (iy < 0 || iy >= H) continue;
        __global const float *row = plane + iy * W, *grow = g + oy * OW;
        for (int ox = 0; ox < OW; ox += 4)
          s += dw_load4(grow, OW, ox, 1) *
               dw_load4(row, W, ox * sw - pw + kx * dil_w, sw);
      }
      out[ky * KW + kx] = (s.s0 + s.s1) + (s.s2 + s.s3);
    }
}

/* Item j, a weight (o, tap): dwt[j] = the sum of the N planes' partial
 * sums of it, in order of the samples. */
__kernel void dw_weights_combine(__global float *dwt, int dwt_off,
                                 __global const float *part, int part_off,
                                 int N, int F, int KK) {
  int j = get_global_id(0);
  if (j >= F * KK) return;
  float s = 0.0f;
  for (int n = 0; n < N; n++) s += part[part_off + n * F * KK + j];
  dwt[dwt_off + j] = s;
}
