/* im2col / col2im for convolutions (NCHW), and the axis swap between the
 * GEMM's channel-major layout and NCHW. col is [C*KH*KW, batch*OH*OW]: one
 * GEMM covers the whole batch. A convolution geometry travels as one int array:
 *   g[0..3]  = C, H, W (input), unused
 *   g[4..7]  = KH, KW, OH, OW
 *   g[8..13] = pad_h, pad_w, stride_h, stride_w, dil_h, dil_w
 * passed as scalars so that the kernels need no __constant buffer. */

/* The output columns [*lo, *hi) whose window column kw reads inside the
 * input (iw = ow * stride_w + kw * dil_w - pad_w). */
static void window_cols(int kw, int W, int OW, int pad_w, int stride_w,
                        int dil_w, int *lo, int *hi) {
  int iw0 = kw * dil_w - pad_w;
  *lo = min(OW, iw0 >= 0 ? 0 : (stride_w - 1 - iw0) / stride_w);
  *hi = iw0 >= W ? *lo : max(*lo, min(OW, (W - 1 - iw0) / stride_w + 1));
}

/* The output rows [*lo, *hi) whose window row kh reads inside the input
 * (ih = oh * stride_h + kh * dil_h - pad_h); empty where *lo >= *hi. */
static void window_rows(int kh, int H, int OH, int pad_h, int stride_h,
                        int dil_h, int *lo, int *hi) {
  int top = pad_h - kh * dil_h, bottom = H - 1 + pad_h - kh * dil_h;
  *lo = top <= 0 ? 0 : (top + stride_h - 1) / stride_h;
  *hi = bottom < 0 ? 0 : min(OH, bottom / stride_h + 1);
}

#if !CLT_ROUND16_PROGRAM
/* col[(c*KH + kh)*KW + kw][(n*OH + oh)*OW + ow] = x[n][c][ih][iw], or 0 in
 * the padding. One work-item per (n, row of col): it writes that row's
 * OH*OW run for image n, looping over oh and ow, so the divisions happen
 * once per work-item and the inner loop copies contiguous memory with no
 * test in it, which CPU devices (POCL) vectorise (a work-item per (n, row,
 * oh) was 1.5-2x slower on POCL: more index work for 11-wide rows). Where
 * the run is long, per output rows each (ops.h clt_loop_per). */
__kernel void im2col(__global float *col, int col_off,
                     __global const float *x, int x_off, int batch, int C,
                     int H, int W, int KH, int KW, int OH, int OW, int pad_h,
                     int pad_w, int stride_h, int stride_w, int dil_h,
                     int dil_w, int per) {
  int parts = (OH + per - 1) / per;
  int i = get_global_id(0);
  int rows = C * KH * KW;
  if (i >= batch * rows * parts) return;
  int part = i % parts;
  int r = i / parts % rows;
  int n = i / parts / rows;
  int oh0 = part * per, oh1 = min(OH, oh0 + per);
  int kw = r % KW, kh = (r / KW) % KH, c = r / (KW * KH);
  int iw0 = kw * dil_w - pad_w, lo, hi;
  window_cols(kw, W, OW, pad_w, stride_w, dil_w, &lo, &hi);
  __global const float *plane = x + x_off + (n * C + c) * H * W;
  __global float *out = col + col_off + ((r * batch + n) * OH + oh0) * OW;
  for (int oh = oh0; oh < oh1; oh++, out += OW) {
    int ih = oh * stride_h - pad_h + kh * dil_h;
    if (ih < 0 || ih >= H) {
      for (int ow = 0; ow < OW; ow++) out[ow] = 0.0f;
      continue;
    }
    __global const float *in = plane + ih * W;
    /* Column ow reads iw = ow * stride_w + iw0: zeros left of lo and from
     * hi on (padding), a plain copy between. */
    for (int ow = 0; ow < lo; ow++) out[ow] = 0.0f;
    if (stride_w == 1) {
      __global const float *src = in + iw0;
      for (int ow = lo; ow < hi; ow++) out[ow] = src[ow];
    } else {
      for (int ow = lo; ow < hi; ow++) out[ow] = in[ow * stride_w + iw0];
    }
    for (int ow = hi; ow < OW; ow++) out[ow] = 0.0f;
  }
}
#endif

/* The output row whose window row kh reads input row ih, or -1 where
 * none does. */
static int window_row(int ih, int kh, int pad_h, int stride_h, int dil_h,
                      int OH) {
  int th = ih + pad_h - kh * dil_h;
  if (th < 0 || th % stride_h != 0) return -1;
  int oh = th / stride_h;
  return oh < OH ? oh : -1;
}

/* The gradient of x[n][c][ih][iw]: the sum of the col elements that
 * im2col copied it to (dcol at its offset; rows: the row layout's, as
 * im2row copied them). */
static float col2im_sum(__global const float *dcol, int batch, int n, int c,
                        int ih, int iw, int C, int KH, int KW, int OH, int OW,
                        int pad_h, int pad_w, int stride_h, int stride_w,
                        int dil_h, int dil_w, int rows) {
  int spatial = OH * OW, ckk = C * KH * KW;
  float sum = 0.0f;
  for (int kh = 0; kh < KH; kh++) {
    int oh = window_row(ih, kh, pad_h, stride_h, dil_h, OH);
    if (oh < 0) continue;
    for (int kw = 0; kw < KW; kw++) {
      int tw = iw + pad_w - kw * dil_w;
      if (tw < 0 || tw % stride_w != 0) continue;
      int ow = tw / stride_w;
      if (ow >= OW) continue;
      int r = (c * KH + kh) * KW + kw;
      int p = oh * OW + ow;
      sum += rows ? dcol[(n * spatial + p) * ckk + r]
                  : dcol[(r * batch + n) * spatial + p];
    }
  }
  return sum;
}

/* dx[n][c][ih][iw] (+)= sum of dcol over the (kh, kw, oh, ow) that read
 * it. One work-item per input plane (n, c), which it owns: for each (kh,
 * kw) it adds image n's dcol row of (c, kh, kw), OH*OW values together in
 * dcol, into the plane, output row by output row, loops over ow with no
 * division or test in them (contiguous for stride 1, which CPU devices
 * vectorise). A work-item per input row took 20-30% longer on POCL (the
 * CNN's second convolution at batch 64: 1.2-1.7 against 1.0-1.1 ms), but
 * where the plane is large, a work-item takes per of its rows (ops.h
 * clt_loop_per), and of each dcol row the output rows that read them. An
 * element gets its contributions in (kh, kw) order, as col2im_sum adds
 * them. */
ROUND16_BODY col2im_body(__global float *dx, int dx_off,
                         __global const float *dcol, int dcol_off, int batch,
                         int C, int H, int W, int KH, int KW, int OH, int OW,
                         int pad_h, int pad_w, int stride_h, int stride_w,
                         int dil_h, int dil_w, int accumulate, int per,
                         ROUND16_PARAMS, int round16) {
  int parts = (H + per - 1) / per;
  int i = get_global_id(0);
  if (i >= batch * C * parts) return;
  int part = i % parts, u = i / parts;
  int c = u % C, n = u / C;
  int ih0 = part * per, ih1 = min(H, ih0 + per);
  __global float *plane = dx + dx_off + u * H * W;
  if (!accumulate)
    for (int e = ih0 * W; e < ih1 * W; e++) plane[e] = 0.0f;
  for (int kh = 0; kh < KH; kh++) {
    /* The output rows whose window row kh reads input row ih in [ih0,
     * ih1): ih - ih0 in [0, ih1 - ih0), as if the padding were ih0 more. */
    int oh_lo, oh_hi;
    window_rows(kh, ih1 - ih0, OH, pad_h + ih0, stride_h, dil_h, &oh_lo,
                &oh_hi);
    for (int kw = 0; kw < KW; kw++) {
      /* Column ow of this dcol row came from iw = ow * stride_w + iw0. */
      int iw0 = kw * dil_w - pad_w, ow_lo, ow_hi;
      window_cols(kw, W, OW, pad_w, stride_w, dil_w, &ow_lo, &ow_hi);
      int r = (c * KH + kh) * KW + kw;
      __global const float *src = dcol + dcol_off + (r * batch + n) * OH * OW;
      for (int oh = oh_lo; oh < oh_hi; oh++) {
        __global float *out =
            plane + (oh * stride_h - pad_h + kh * dil_h) * W + iw0;
        __global const float *s = src + oh * OW;
        if (stride_w == 1) {
          for (int ow = ow_lo; ow < ow_hi; ow++) out[ow] += s[ow];
        } else {
          for (int ow = ow_lo; ow < ow_hi; ow++)
            out[ow * stride_w] += s[ow];
        }
      }
    }
  }
  ROUND16_RUN(plane + ih0 * W, (ih1 - ih0) * W, u * H * W + ih0 * W);
}
ROUND16_VARIANTS(col2im, (__global float *dx, int dx_off,
                  __global const float *dcol, int dcol_off, int batch, int C,
                  int H, int W, int KH, int KW, int OH, int OW, int pad_h,
                  int pad_w, int stride_h, int stride_w, int dil_h, int dil_w,
                  int accumulate, int per, ROUND16_PARAMS),
                 (dx, dx_off, dcol, dcol_off, batch, C, H, W, KH, KW, OH, OW,
                  pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, accumulate,
                  per, ROUND16_ARGS))

#if !CLT_ROUND16_PROGRAM
/* The unfold laid out the other way, "rows": row [batch*OH*OW,
 * C*KH*KW], the transpose of col, row[(n*OH + oh)*OW + ow][(c*KH + kh)*KW
 * + kw] = x[n][c][ih][iw] or 0. It makes a convolution's weight gradient a
 * TN product (dy in NHWC times row, both with the pixels as rows), the
 * form CLBlast's Xgemm runs without copies (nn/conv2d.c's "rows"
 * backward). One work-item per output row (n, oh): it writes that row's
 * OW pixel rows, OW*C*KH*KW contiguous values, KW at a time from one input
 * row; where that is long, per pixels of it each (ops.h clt_loop_per). */
__kernel void im2row(__global float *row, int row_off,
                     __global const float *x, int x_off, int batch, int C,
                     int H, int W, int KH, int KW, int OH, int OW, int pad_h,
                     int pad_w, int stride_h, int stride_w, int dil_h,
                     int dil_w, int per) {
  int parts = (OW + per - 1) / per;
  int i = get_global_id(0);
  if (i >= batch * OH * parts) return;
  int part = i % parts, u = i / parts;
  int oh = u % OH;
  int n = u / OH;
  int ckk = C * KH * KW;
  int ow0 = part * per, ow1 = min(OW, ow0 + per);
  __global float *out = row + row_off + (u * OW + ow0) * ckk;
  __global const float *img = x + x_off + n * C * H * W;
  int ih0 = oh * stride_h - pad_h;
  for (int ow = ow0; ow < ow1; ow++) {
    int iw0 = ow * stride_w - pad_w;
    /* Inside the image: no test per element. */
    bool inside = ih0 >= 0 && ih0 + (KH - 1) * dil_h < H && iw0 >= 0 &&
                  iw0 + (KW - 1) * dil_w < W;
    if (inside) {
      __global const float *in = img + ih0 * W + iw0;
      if (KW == 3 && dil_w == 1) { /* 3-wide windows: one vector each */
        for (int c = 0; c < C; c++, in += H * W)
          for (int kh = 0; kh < KH; kh++, out += 3)
            vstore3(vload3(0, in + kh * dil_h * W), 0, out);
        continue;
      }
      for (int c = 0; c < C; c++, in += H * W)
        for (int kh = 0; kh < KH; kh++) {
          __global const float *r = in + kh * dil_h * W;
          for (int kw = 0; kw < KW; kw++) *out++ = r[kw * dil_w];
        }
      continue;
    }
    for (int c = 0; c < C; c++)
      for (int kh = 0; kh < KH; kh++) {
        int ih = ih0 + kh * dil_h;
        __global const float *r = img + (c * H + ih) * W;
        for (int kw = 0; kw < KW; kw++) {
          int iw = iw0 + kw * dil_w;
          *out++ = ih >= 0 && ih < H && iw >= 0 && iw < W ? r[iw] : 0.0f;
        }
      }
  }
}
#endif

/* dx[n][c][:][:] (+)= the sum of the drow elements im2row copied each
 * element to: col2im's inverse over the row layout, one work-item per
 * input plane (n, c), which it owns. It walks the output pixels in order
 * and adds each one's window, drow's KH*KW values of channel c (together
 * in drow), into the plane: a window inside the input a row of KW at a
 * time (for 3 wide, one vector), one at the edges with its taps checked.
 * An element gets its contributions in the order of the pixels that read
 * it (not col2im's: other rounding, no other numbers). Where the plane is
 * large, a work-item takes per of its rows, and the pixels whose windows
 * reach them (ops.h clt_loop_per). */
ROUND16_BODY row2im_body(__global float *dx, int dx_off,
                         __global const float *drow, int drow_off, int batch,
                         int C, int H, int W, int KH, int KW, int OH, int OW,
                         int pad_h, int pad_w, int stride_h, int stride_w,
                         int dil_h, int dil_w, int accumulate, int per,
                         ROUND16_PARAMS, int round16) {
  int parts = (H + per - 1) / per;
  int i = get_global_id(0);
  if (i >= batch * C * parts) return;
  int part = i % parts, u = i / parts;
  int c = u % C, n = u / C;
  int ckk = C * KH * KW;
  /* This work-item's input rows [b0, b1), and the output rows whose
   * windows reach them: ih0 + (KH - 1) * dil_h >= b0 and ih0 < b1. */
  int b0 = part * per, b1 = min(H, b0 + per);
  int reach = b0 + pad_h - (KH - 1) * dil_h;
  int oh0 = reach <= 0 ? 0 : (reach + stride_h - 1) / stride_h;
  int oh1 = min(OH, (b1 + pad_h + stride_h - 1) / stride_h);
  __global float *plane = dx + dx_off + u * H * W;
  if (!accumulate)
    for (int e = b0 * W; e < b1 * W; e++) plane[e] = 0.0f;
  __global const float *src =
      drow + drow_off + (n * OH * OW + oh0 * OW) * ckk + c * KH * KW;
  for (int oh = oh0; oh < oh1; oh++) {
    int ih0 = oh * stride_h - pad_h;
    /* The whole window's rows in [b0, b1) (then inside the input). */
    bool rows_in = ih0 >= b0 && ih0 + (KH - 1) * dil_h < b1;
    for (int ow = 0; ow < OW; ow++, src += ckk) {
      int iw0 = ow * stride_w - pad_w;
      bool inside = rows_in && iw0 >= 0 && iw0 + (KW - 1) * dil_w < W;
      if (inside && KW == 3 && dil_w == 1) {
        __global float *o = plane + ih0 * W + iw0;
        for (int kh = 0; kh < KH; kh++, o += dil_h * W)
          vstore3(vload3(0, o) + vload3(0, src + kh * 3), 0, o);
        continue;
      }
      for (int kh = 0; kh < KH; kh++) {
        int ih = ih0 + kh * dil_h;
        if (ih < b0 || ih >= b1) continue;
        for (int kw = 0; kw < KW; kw++) {
          int iw = iw0 + kw * dil_w;
          if (iw >= 0 && iw < W) plane[ih * W + iw] += src[kh * KW + kw];
        }
      }
    }
  }
  ROUND16_RUN(plane + b0 * W, (b1 - b0) * W, u * H * W + b0 * W);
}
ROUND16_VARIANTS(row2im, (__global float *dx, int dx_off,
                  __global const float *drow, int drow_off, int batch, int C,
                  int H, int W, int KH, int KW, int OH, int OW, int pad_h,
                  int pad_w, int stride_h, int stride_w, int dil_h, int dil_w,
                  int accumulate, int per, ROUND16_PARAMS),
                 (dx, dx_off, drow, drow_off, batch, C, H, W, KH, KW, OH, OW,
                  pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, accumulate,
                  per, ROUND16_ARGS))

/* The same four with one work-item per element (rows: the row layout's),
 * consecutive work-items on consecutive elements of what they write
 * (coalesced on a GPU, where a work-item per row makes neighbours write a
 * row apart). The layer measures both layouts of im2col and col2im and
 * keeps the faster, for im2row and row2im too (nn/conv2d.c). */
#if !CLT_ROUND16_PROGRAM
__kernel void im2col_elems(__global float *col, int col_off,
                           __global const float *x, int x_off, int batch,
                           int C, int H, int W, int KH, int KW, int OH,
                           int OW, int pad_h, int pad_w, int stride_h,
                           int stride_w, int dil_h, int dil_w, int rows) {
  int i = get_global_id(0);
  int ckk = C * KH * KW;
  if (i >= batch * ckk * OH * OW) return;
  /* col's element i: row r, column (n*OH + oh)*OW + ow; rows: the row
   * layout's, row (n*OH + oh)*OW + ow, column r. */
  int r, p;
  if (rows) {
    r = i % ckk;
    p = i / ckk;
  } else {
    r = i / (OW * OH * batch);
    p = i % (OW * OH * batch);
  }
  int ow = p % OW;
  int oh = (p / OW) % OH;
  int n = p / (OW * OH);
  int kw = r % KW, kh = (r / KW) % KH, c = r / (KW * KH);
  int ih = oh * stride_h - pad_h + kh * dil_h;
  int iw = ow * stride_w - pad_w + kw * dil_w;
  col[col_off + i] = ih >= 0 && ih < H && iw >= 0 && iw < W
                         ? x[x_off + ((n * C + c) * H + ih) * W + iw]
                         : 0.0f;
}
#endif

ROUND16_BODY col2im_elems_body(__global float *dx, int dx_off,
                               __global const float *dcol, int dcol_off,
                               int batch, int C, int H, int W, int KH, int KW,
                               int OH, int OW, int pad_h, int pad_w,
                               int stride_h, int stride_w, int dil_h, int dil_w,
                               int accumulate, int rows, ROUND16_PARAMS,
                               int round16) {
  int i = get_global_id(0);
  if (i >= batch * C * H * W) return;
  int iw = i % W;
  int ih = (i / W) % H;
  int c = (i / (W * H)) % C;
  int n = i / (W * H * C);
  float sum = col2im_sum(dcol + dcol_off, batch, n, c, ih, iw, C, KH, KW, OH,
                         OW, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w,
                         rows);
  STORE16(dx, dx_off, i, accumulate ? dx[dx_off + i] + sum : sum);
}
ROUND16_VARIANTS(col2im_elems, (__global float *dx, int dx_off,
                  __global const float *dcol, int dcol_off, int batch, int C,
                  int H, int W, int KH, int KW, int OH, int OW, int pad_h,
                  int pad_w, int stride_h, int stride_w, int dil_h, int dil_w,
                  int accumulate, int rows, ROUND16_PARAMS),
                 (dx, dx_off, dcol, dcol_off, batch, C, H, W, KH, KW, OH, OW,
                  pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, accumulate,
                  rows, ROUND16_ARGS))

/* y[b][a][s] = x[a][b][s] (+ bias[a]): between the GEMM's [channels,
 * batch, spatial] and NCHW's [batch, channels, spatial], either way. One
 * work-item per row of s. relu (a fused ReLU, nn/conv2d.c): 1 applies it
 * to what is written (the forward), 2 multiplies by mask > 0, mask laid
 * out as x (the backward: the gradient through it, mask its output); the
 * same arithmetic as cl/activation.cl's, so the same bits. A long row of s
 * goes per elements a work-item (ops.h clt_loop_per). */
ROUND16_BODY swap_axes01_body(__global float *y, int y_off,
                              __global const float *x, int x_off,
                              __global const float *bias, int bias_off,
                              __global const float *mask, int mask_off, int A,
                              int B, int S, int has_bias, int relu, int per,
                              ROUND16_PARAMS, int round16) {
  int parts = (S + per - 1) / per;
  int i = get_global_id(0);
  if (i >= A * B * parts) return;
  int part = i % parts, u = i / parts;
  int a = u / B, b = u % B;
  int s0 = part * per, n = min(S, s0 + per) - s0;
  float add = has_bias ? bias[bias_off + a] : 0.0f;
  __global const float *in = x + x_off + u * S + s0;
  __global float *out = y + y_off + (b * A + a) * S + s0;
  if (relu == 1) {
    for (int s = 0; s < n; s++) {
      float v = in[s] + add;
      out[s] = v > 0.0f ? v : 0.0f;
    }
  } else if (relu == 2) {
    __global const float *m = mask + mask_off + u * S + s0;
    for (int s = 0; s < n; s++)
      out[s] = (in[s] + add) * (m[s] > 0.0f ? 1.0f : 0.0f);
  } else {
    for (int s = 0; s < n; s++) out[s] = in[s] + add;
  }
  ROUND16_RUN(out, n, (b * A + a) * S + s0);
}
ROUND16_VARIANTS(swap_axes01, (__global float *y, int y_off,
                  __global const float *x, int x_off,
                  __global const float *bias, int bias_off,
                  __global const float *mask, int mask_off, int A, int B, int S,
                  int has_bias, int relu, int per, ROUND16_PARAMS),
                 (y, y_off, x, x_off, bias, bias_off, mask, mask_off, A, B, S,
                  has_bias, relu, per, ROUND16_ARGS))

#if !CLT_ROUND16_PROGRAM
/* y[n][p][c] = x[n][c][p]: NCHW to NHWC, [N, C, P] to [N, P, C] (the
 * "rows" backward's dy, nn/conv2d.c). relu_grad: the gradient through a
 * fused ReLU, times mask > 0 (mask laid out as x: the ReLU's output;
 * swap_axes01's arithmetic), which is also written back into x (so that
 * the bias gradient can sum x in NCHW). One work-item per tile of 8
 * channels by 8 pixels of one image: a whole tile is read as eight float8
 * rows, transposed in registers and written as eight float8 rows (a CPU
 * device's vector loads and stores; scalar code ran 3x slower on POCL);
 * the tiles at the edges go element by element. */
#define NHWC_TILE 8
__kernel void nchw_to_nhwc(__global float *y, int y_off, __global float *x,
                           int x_off, __global const float *mask,
                           int mask_off, int N, int C, int P, int relu_grad) {
  int ct = (C + NHWC_TILE - 1) / NHWC_TILE;
  int pt = (P + NHWC_TILE - 1) / NHWC_TILE;
  int i = get_global_id(0);
  if (i >= N * ct * pt) return;
  int p0 = i % pt * NHWC_TILE;
  int c0 = i / pt % ct * NHWC_TILE;
  int n = i / (pt * ct);
  __global float *in = x + x_off + n * C * P;
  __global const float *m = mask + mask_off + n * C * P;
  __global float *out = y + y_off + n * P * C;
  if (p0 + NHWC_TILE <= P && c0 + NHWC_TILE <= C) {
    float8 r[NHWC_TILE];
    for (int k = 0; k < NHWC_TILE; k++) {
      r[k] = vload8(0, in + (c0 + k) * P + p0);
      if (relu_grad) {
        float8 keep = select((float8)0.0f, (float8)1.0f,
                             isgreater(vload8(0, m + (c0 + k) * P + p0),
                                       (float8)0.0f));
        r[k] = r[k] * keep;
        vstore8(r[k], 0, in + (c0 + k) * P + p0);
      }
    }
    vstore8((float8)(r[0].s0, r[1].s0, r[2].s0, r[3].s0, r[4].s0, r[5].s0,
                     r[6].s0, r[7].s0), 0, out + (p0 + 0) * C + c0);
    vstore8((float8)(r[0].s1, r[1].s1, r[2].s1, r[3].s1, r[4].s1, r[5].s1,
                     r[6].s1, r[7].s1), 0, out + (p0 + 1) * C + c0);
    vstore8((float8)(r[0].s2, r[1].s2, r[2].s2, r[3].s2, r[4].s2, r[5].s2,
                     r[6].s2, r[7].s2), 0, out + (p0 + 2) * C + c0);
    vstore8((float8)(r[0].s3, r[1].s3, r[2].s3, r[3].s3, r[4].s3, r[5].s3,
                     r[6].s3, r[7].s3), 0, out + (p0 + 3) * C + c0);
    vstore8((float8)(r[0].s4, r[1].s4, r[2].s4, r[3].s4, r[4].s4, r[5].s4,
                     r[6].s4, r[7].s4), 0, out + (p0 + 4) * C + c0);
    vstore8((float8)(r[0].s5, r[1].s5, r[2].s5, r[3].s5, r[4].s5, r[5].s5,
                     r[6].s5, r[7].s5), 0, out + (p0 + 5) * C + c0);
    vstore8((float8)(r[0].s6, r[1].s6, r[2].s6, r[3].s6, r[4].s6, r[5].s6,
                     r[6].s6, r[7].s6), 0, out + (p0 + 6) * C + c0);
    vstore8((float8)(r[0].s7, r[1].s7, r[2].s7, r[3].s7, r[4].s7, r[5].s7,
                     r[6].s7, r[7].s7), 0, out + (p0 + 7) * C + c0);
    return;
  }
  int pe = min(P, p0 + NHWC_TILE), ce = min(C, c0 + NHWC_TILE);
  for (int p = p0; p < pe; p++)
    for (int c = c0; c < ce; c++) {
      float v = in[c * P + p];
      if (relu_grad) {
        v = v * (m[c * P + p] > 0.0f ? 1.0f : 0.0f);
        in[c * P + p] = v;
      }
      out[p * C + c] = v;
    }
}
#endif

/* Direct convolution, for windows with few taps (C*KH*KW at most
 * nn/conv2d.c's DIRECT_MAX_TAPS: a first layer's 3x3 over one or three
 * channels), where the GEMM's k is the tap count and CLBlast pads it to
 * its tile (k = 9 to 32 on POCL), so that a product of 9-term sums runs at
 * a fraction of the GEMM's speed: no unfold, and the bias and a fused
 * ReLU in the same pass. Two layouts, as im2col's: a work-item per output
 * plane or weight-gradient entry (conv_direct_forward, conv_direct_wgrad:
 * explicit vectors along the rows, for CPU devices) or per element (the
 * _elems kernels: neighbouring work-items on neighbouring memory, for
 * GPUs). The forward adds the taps in (c, kh, kw) order, then the bias. */

/* The columns [*lo, *hi) of an output row whose whole window lies inside
 * the input, where the row kernels below work in blocks of 16 or 8
 * columns (float16, float8: a CPU device's vectors), none where the
 * stride is not 1. Blocks go from lo in steps of their width, the last
 * moved back to end at hi (it then computes some columns a second time,
 * the same way: the same bits). */
static void inner_cols(int W, int OW, int KW, int pad_w, int stride_w,
                       int dil_w, int *lo, int *hi) {
  int last = W - 1 + pad_w - (KW - 1) * dil_w; /* ow * stride_w <= last */
  *lo = min(OW, (pad_w + stride_w - 1) / stride_w);
  *hi = last < 0 ? *lo : max(*lo, min(OW, last / stride_w + 1));
  if (stride_w != 1) *hi = *lo;
}

/* y[n][f][oh][ow] for one column, every tap checked against the input's
 * edges. */
static float direct_col(__global const float *xn, __global const float *wf,
                        int oh, int ow, int C, int H, int W, int KH, int KW,
                        int pad_h, int pad_w, int stride_h, int stride_w,
                        int dil_h, int dil_w) {
  int ih0 = oh * stride_h - pad_h, iw0 = ow * stride_w - pad_w;
  float s = 0.0f;
  for (int c = 0; c < C; c++)
    for (int kh = 0; kh < KH; kh++) {
      int ih = ih0 + kh * dil_h;
      if (ih < 0 || ih >= H) continue;
      __global const float *row = xn + (c * H + ih) * W;
      __global const float *wr = wf + (c * KH + kh) * KW;
      for (int kw = 0; kw < KW; kw++) {
        int iw = iw0 + kw * dil_w;
        if (iw >= 0 && iw < W) s += wr[kw] * row[iw];
      }
    }
  return s;
}

/* The forward's blocks of V columns over [lo, hi) of output row oh (the
 * weights in scalar registers, each tap a vector load of the input). */
#define DIRECT_FORWARD_BLOCKS(V)                                               \
  for (int ow = lo; ow < hi; ow += V) {                                        \
    int at = min(ow, hi - V);                                                  \
    float##V s = 0.0f;                                                         \
    for (int c = 0; c < C; c++)                                                \
      for (int kh = 0; kh < KH; kh++) {                                        \
        int ih = ih0 + kh * dil_h;                                             \
        if (ih < 0 || ih >= H) continue;                                       \
        __global const float *row = xn + (c * H + ih) * W + at - pad_w;        \
        __global const float *wr = wf + (c * KH + kh) * KW;                    \
        for (int kw = 0; kw < KW; kw++)                                        \
          s += wr[kw] * vload##V(0, row + kw * dil_w);                         \
      }                                                                        \
    s += b;                                                                    \
    if (relu) s = select((float##V)0.0f, s, isgreater(s, (float##V)0.0f));     \
    vstore##V(s, 0, out + at);                                                 \
  }

/* y[n][f][:][:] for work-item n*F + f: the inner columns in blocks, the
 * rest column by column; where that is long, per output rows a work-item
 * (ops.h clt_loop_per). */
ROUND16_BODY conv_direct_forward_body(__global float *y, int y_off,
                                      __global const float *x, int x_off,
                                      __global const float *wt, int wt_off,
                                      __global const float *bias, int bias_off,
                                      int batch, int F, int C, int H, int W,
                                      int KH, int KW, int OH, int OW, int pad_h,
                                      int pad_w, int stride_h, int stride_w,
                                      int dil_h, int dil_w, int has_bias,
                                      int relu, int per, ROUND16_PARAMS,
                                      int round16) {
  int parts = (OH + per - 1) / per;
  int u = get_global_id(0);
  if (u >= batch * F * parts) return;
  int part = u % parts, i = u / parts;
  int f = i % F, n = i / F;
  int oh0 = part * per, oh1 = min(OH, oh0 + per);
  __global const float *xn = x + x_off + n * C * H * W;
  __global const float *wf = wt + wt_off + f * C * KH * KW;
  float b = has_bias ? bias[bias_off + f] : 0.0f;
  int lo, hi;
  inner_cols(W, OW, KW, pad_w, stride_w, dil_w, &lo, &hi);
  if (hi - lo < 8) hi = lo;
  for (int oh = oh0; oh < oh1; oh++) {
    __global float *out = y + y_off + (i * OH + oh) * OW;
    int ih0 = oh * stride_h - pad_h;
    if (hi - lo >= 16) {
      DIRECT_FORWARD_BLOCKS(16)
    } else {
      DIRECT_FORWARD_BLOCKS(8)
    }
    for (int ow = 0; ow < OW; ow++) {
      if (ow == lo && hi > lo) ow = hi;
      if (ow >= OW) break;
      float s = direct_col(xn, wf, oh, ow, C, H, W, KH, KW, pad_h, pad_w,
                           stride_h, stride_w, dil_h, dil_w) + b;
      out[ow] = relu && !(s > 0.0f) ? 0.0f : s;
    }
  }
  ROUND16_RUN(y + y_off + (i * OH + oh0) * OW, (oh1 - oh0) * OW,
              (i * OH + oh0) * OW);
}
ROUND16_VARIANTS(conv_direct_forward, (__global float *y, int y_off,
                  __global const float *x, int x_off, __global const float *wt,
                  int wt_off, __global const float *bias, int bias_off,
                  int batch, int F, int C, int H, int W, int KH, int KW, int OH,
                  int OW, int pad_h, int pad_w, int stride_h, int stride_w,
                  int dil_h, int dil_w, int has_bias, int relu, int per,
                  ROUND16_PARAMS),
                 (y, y_off, x, x_off, wt, wt_off, bias, bias_off, batch, F, C,
                  H, W, KH, KW, OH, OW, pad_h, pad_w, stride_h, stride_w, dil_h,
                  dil_w, has_bias, relu, per, ROUND16_ARGS))

/* The same, a work-item per element: global (OW, OH, batch*F). */
ROUND16_BODY conv_direct_forward_elems_body(
    __global float *y, int y_off, __global const float *x, int x_off,
    __global const float *wt, int wt_off, __global const float *bias,
    int bias_off, int batch, int F, int C, int H, int W, int KH, int KW, int OH,
    int OW, int pad_h, int pad_w, int stride_h, int stride_w, int dil_h,
    int dil_w, int has_bias, int relu, ROUND16_PARAMS, int round16) {
  int ow = get_global_id(0), oh = get_global_id(1), nf = get_global_id(2);
  if (ow >= OW || oh >= OH || nf >= batch * F) return;
  int f = nf % F, n = nf / F;
  float s = direct_col(x + x_off + n * C * H * W,
                       wt + wt_off + f * C * KH * KW, oh, ow, C, H, W, KH,
                       KW, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w);
  s += has_bias ? bias[bias_off + f] : 0.0f;
  STORE16(y, y_off, (nf * OH + oh) * OW + ow, relu && !(s > 0.0f) ? 0.0f : s);
}
ROUND16_VARIANTS(conv_direct_forward_elems, (__global float *y, int y_off,
                  __global const float *x, int x_off, __global const float *wt,
                  int wt_off, __global const float *bias, int bias_off,
                  int batch, int F, int C, int H, int W, int KH, int KW, int OH,
                  int OW, int pad_h, int pad_w, int stride_h, int stride_w,
                  int dil_h, int dil_w, int has_bias, int relu, ROUND16_PARAMS),
                 (y, y_off, x, x_off, wt, wt_off, bias, bias_off, batch, F, C,
                  H, W, KH, KW, OH, OW, pad_h, pad_w, stride_h, stride_w, dil_h,
                  dil_w, has_bias, relu, ROUND16_ARGS))

/* The direct convolution's weight and bias gradients, as partial sums
 * over the output rows r = n*OH + oh, in chunks of rows_per_chunk (the
 * last may be shorter): for tap j = (c*KH + kh)*KW + kw the sum over the
 * chunk's rows and every column ow of dy[n][f][oh][ow] *
 * x[n][c][ih][iw], and where taps = C*KH*KW + 1 the bias's, dy alone.
 * relu_grad: dy through a fused ReLU, times mask > 0 (mask the ReLU's
 * output; swap_axes01's arithmetic). The host adds the partials up in
 * order. Here a work-item per (chunk, f, j), writing
 * ws[chunk*F*C*KH*KW + f*C*KH*KW + j] (the bias's at
 * ws[chunks*F*C*KH*KW + chunk*F + f]); the columns it reads inside the
 * input go in blocks, as the forward's, each block's lanes added up
 * pairwise (less those the block before covered), then the other columns
 * one by one. */
#define LANES8 ((int8)(0, 1, 2, 3, 4, 5, 6, 7))
#define LANES16                                                                \
  ((int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))

static float sum8(float8 v) {
  float4 a = v.lo + v.hi;
  return (a.x + a.y) + (a.z + a.w);
}

#define DIRECT_WGRAD_BLOCKS(V)                                                 \
  for (int ow = lo; ow < vhi; ow += V) {                                       \
    int at = min(ow, vhi - V);                                                 \
    float##V s = 0.0f;                                                         \
    for (int r = r0; r < r1;) {                                                \
      int n = r / OH, a = r % OH, e = min(OH, a + (r1 - r));                   \
      r += e - a;                                                              \
      a = max(a, oh_lo);                                                       \
      e = min(e, oh_hi);                                                       \
      if (a >= e) continue;                                                    \
      int o = ((n * F + f) * OH + a) * OW + at;                                \
      __global const float *g = dy + dy_off + o;                               \
      __global const float *m = mask + mask_off + o;                           \
      __global const float *xr = x + x_off +                                   \
                                 ((n * C + c) * H + a * stride_h - pad_h +     \
                                  kh * dil_h) * W + at + iw0;                  \
      int xstep = stride_h * W;                                                \
      if (bias && relu_grad) {                                                 \
        for (int oh = a; oh < e; oh++, g += OW, m += OW)                       \
          s += select((float##V)0.0f, vload##V(0, g),                          \
                      isgreater(vload##V(0, m), (float##V)0.0f));              \
      } else if (bias) {                                                       \
        for (int oh = a; oh < e; oh++, g += OW) s += vload##V(0, g);           \
      } else if (relu_grad) {                                                  \
        for (int oh = a; oh < e; oh++, g += OW, m += OW, xr += xstep)          \
          s += select((float##V)0.0f, vload##V(0, g),                          \
                      isgreater(vload##V(0, m), (float##V)0.0f)) *             \
               vload##V(0, xr);                                                \
      } else {                                                                 \
        for (int oh = a; oh < e; oh++, g += OW, xr += xstep)                   \
          s += vload##V(0, g) * vload##V(0, xr);                               \
      }                                                                        \
    }                                                                          \
    total += sum##V(select((float##V)0.0f, s, LANES##V >= ow - at));           \
  }

#if !CLT_ROUND16_PROGRAM
__kernel void conv_direct_wgrad(__global float *ws, int ws_off,
                                __global const float *x, int x_off,
                                __global const float *dy, int dy_off,
                                __global const float *mask, int mask_off,
                                int batch, int F, int C, int H, int W,
                                int KH, int KW, int OH, int OW, int pad_h,
                                int pad_w, int stride_h, int stride_w,
                                int dil_h, int dil_w, int taps, int chunks,
                                int rows_per_chunk, int relu_grad) {
  int i = get_global_id(0);
  if (i >= chunks * F * taps) return;
  int ckk = C * KH * KW;
  int j = i % taps, f = i / taps % F, chunk = i / (taps * F);
  bool bias = j == ckk;
  int c = j / (KH * KW), kh = j / KW % KH, kw = j % KW;
  /* The columns this tap reads inside the input, [lo, hi) (all for the
   * bias), in blocks where the stride is 1 and there are 8 or more. */
  int iw0 = kw * dil_w - pad_w, lo = 0, hi = OW;
  if (!bias) window_cols(kw, W, OW, pad_w, stride_w, dil_w, &lo, &hi);
  int vhi = (stride_w == 1 || bias) && hi - lo >= 8 ? hi : lo;
  int r0 = chunk * rows_per_chunk;
  int r1 = min(batch * OH, r0 + rows_per_chunk);
  /* The output rows whose window row kh lies inside the input: oh in
   * [oh_lo, oh_hi) (all of them for the bias). */
  int oh_lo = 0, oh_hi = OH;
  if (!bias) window_rows(kh, H, OH, pad_h, stride_h, dil_h, &oh_lo, &oh_hi);
  float total = 0.0f;
  if (vhi - lo >= 16) {
    DIRECT_WGRAD_BLOCKS(16)
  } else {
    DIRECT_WGRAD_BLOCKS(8)
  }
  for (int ow = lo; ow < hi; ow++) {
    if (ow == lo && vhi > lo) ow = vhi;
    if (ow >= hi) break;
    for (int r = r0; r < r1;) {
      int n = r / OH, a = r % OH, e = min(OH, a + (r1 - r));
      r += e - a;
      for (int oh = max(a, oh_lo); oh < min(e, oh_hi); oh++) {
        int o = ((n * F + f) * OH + oh) * OW + ow;
        float g = dy[dy_off + o];
        if (relu_grad) g = g * (mask[mask_off + o] > 0.0f ? 1.0f : 0.0f);
        int ih = oh * stride_h - pad_h + kh * dil_h;
        total += bias ? g
                      : g * x[x_off + ((n * C + c) * H + ih) * W +
                              ow * stride_w + iw0];
      }
    }
  }
  if (bias)
    ws[ws_off + chunks * F * ckk + chunk * F + f] = total;
  else
    ws[ws_off + chunk * F * ckk + f * ckk + j] = total;
}
#endif

#if !CLT_ROUND16_PROGRAM
/* The same partials, a work-item per (ow, chunk, f*taps + j), global (OW,
 * chunks, F*taps), kept apart by column: the tap's at
 * ws[((chunk*F + f)*C*KH*KW + j)*OW + ow] (zero where column ow never
 * meets the input), the bias's at ws[chunks*F*C*KH*KW*OW + (chunk*F +
 * f)*OW + ow]; the host adds them up over chunks and columns. */
__kernel void conv_direct_wgrad_elems(
    __global float *ws, int ws_off, __global const float *x, int x_off,
    __global const float *dy, int dy_off, __global const float *mask,
    int mask_off, int batch, int F, int C, int H, int W, int KH, int KW,
    int OH, int OW, int pad_h, int pad_w, int stride_h, int stride_w,
    int dil_h, int dil_w, int taps, int chunks, int rows_per_chunk,
    int relu_grad) {
  int ow = get_global_id(0), chunk = get_global_id(1);
  int fj = get_global_id(2);
  if (ow >= OW || chunk >= chunks || fj >= F * taps) return;
  int ckk = C * KH * KW;
  int f = fj / taps, j = fj % taps;
  int c = j / (KH * KW), kh = j / KW % KH, kw = j % KW;
  int iw = ow * stride_w - pad_w + kw * dil_w;
  int r0 = chunk * rows_per_chunk;
  int r1 = min(batch * OH, r0 + rows_per_chunk);
  float s = 0.0f;
  if (j == ckk || (iw >= 0 && iw < W)) {
    int n = r0 / OH, oh = r0 % OH;
    for (int r = r0; r < r1; r++) {
      int at = ((n * F + f) * OH + oh) * OW + ow;
      float g = dy[dy_off + at];
      if (relu_grad) g = g * (mask[mask_off + at] > 0.0f ? 1.0f : 0.0f);
      if (j == ckk) {
        s += g;
      } else {
        int ih = oh * stride_h - pad_h + kh * dil_h;
        if (ih >= 0 && ih < H)
          s += g * x[x_off + ((n * C + c) * H + ih) * W + iw];
      }
      if (++oh == OH) {
        oh = 0;
        n++;
      }
    }
  }
  ws[ws_off + (j == ckk ? chunks * F * ckk * OW + (chunk * F + f) * OW
                        : ((chunk * F + f) * ckk + j) * OW) + ow] = s;
}
#endif

/* Direct convolution tiled for CPU devices ("tiled 16", "tiled 8" in
 * nn/conv2d.c), for stride 1 and any number of taps: no unfold, no GEMM,
 * no swap. x is first copied into xp with its padding written out
 * (conv_pad: every row Wq wide, so that a block of V output columns reads
 * each tap as one vector load, edges included), and the weights into wr,
 * TILE_F filters' weights of a tap side by side (conv_tile_weights); then
 * a work-item takes TF filters by V columns of TR consecutive output
 * rows of one image: TR*TF vector accumulators, each tap TR vector loads
 * of the input, TF weights broadcast from consecutive addresses, each
 * used for TR multiply-adds (the register tile of our GEMMs, cl/gemm.cl,
 * its operand read straight from the input; the pointers step, no index
 * is computed in the loop). A block's rows past OH read the last row
 * again and are not stored. The taps are added in (c, kh, kw) order, then
 * the bias. Two register tiles, measured against each other
 * (nn/conv2d.c): 8 filters by 3 rows (24 accumulators: a CPU with 32
 * vector registers, AVX-512) and 4 by 2, "small" (8: AVX2's 16 registers;
 * there 8 by 3 spilled its sums to memory on every tap, and 4 by 2 took
 * 0.5-0.8x as long, POCL 3.1 on a 2-core EPYC, 16- and 32-channel 3x3
 * layers at batch 64). A tile of TF filters reads its weights from the
 * tiles of TILE_F that conv_tile_weights lays out (TF divides TILE_F).
 * The same kernels give a stride-1 convolution's data gradient: dy padded
 * by dil*(K-1) - pad, the weights flipped and transposed as conv_tile_weights
 * reads them (the strides w_f, w_c, w_kh, w_kw from w_base, negative where
 * flipped), the result added into dx where accumulate. */
#define TILE_F 8
/* The large tile's 3 rows: on POCL (2-core Xeon, AVX-512) the 16- and
 * 64-channel 28x28 forwards took 0.6-0.8x as long as with one row, 2 rows
 * in between, 4 (32 accumulators: spilled) 1.2-1.5x; 7x7 planes within
 * noise. */

#if !CLT_ROUND16_PROGRAM
/* xp[plane][hp][wq] = x[plane][hp - pad_h][wq - pad_w], 0 outside x; a
 * work-item per plane, or per `per` of its rows where that is long (ops.h
 * clt_loop_per; with a work-item per row a copy took about twice as long
 * on POCL, the ResNet's 30x34 planes). */
__kernel void conv_pad(__global float *xp, int xp_off,
                       __global const float *x, int x_off, int planes, int H,
                       int W, int Hp, int Wq, int pad_h, int pad_w, int per) {
  int parts = (Hp + per - 1) / per;
  int i = get_global_id(0);
  if (i >= planes * parts) return;
  int plane = i / parts, hp0 = i % parts * per, hp1 = min(Hp, hp0 + per);
  int lo = min(pad_w, Wq), hi = min(Wq, pad_w + W);
  __global float *out = xp + xp_off + (plane * Hp + hp0) * Wq;
  for (int hp = hp0; hp < hp1; hp++, out += Wq) {
    int ih = hp - pad_h;
    if (ih < 0 || ih >= H) {
      for (int q = 0; q < Wq; q++) out[q] = 0.0f;
      continue;
    }
    __global const float *in = x + x_off + (plane * H + ih) * W - pad_w;
    for (int q = 0; q < lo; q++) out[q] = 0.0f;
    for (int q = lo; q < hi; q++) out[q] = in[q];
    for (int q = hi; q < Wq; q++) out[q] = 0.0f;
  }
}

/* wr[fb][t][j] for tap t = (c*KH + kh)*KW + kw of input channel c: the
 * weight of output channel fb*TILE_F + j (0 past F) at w_base + o*w_f +
 * c*w_c + kh*w_kh + kw*w_kw; a work-item per element. */
__kernel void conv_tile_weights(__global float *wr, int wr_off,
                                __global const float *wt, int wt_off, int F,
                                int C, int KH, int KW, int w_base, int w_f,
                                int w_c, int w_kh, int w_kw) {
  int taps = C * KH * KW, fblocks = (F + TILE_F - 1) / TILE_F;
  int i = get_global_id(0);
  if (i >= fblocks * taps * TILE_F) return;
  int j = i % TILE_F, t = i / TILE_F % taps, fb = i / (TILE_F * taps);
  int o = fb * TILE_F + j, kw = t % KW, kh = t / KW % KH, c = t / (KW * KH);
  wr[wr_off + i] = o < F ? wt[wt_off + w_base + o * w_f + c * w_c +
                              kh * w_kh + kw * w_kw]
                         : 0.0f;
}
#endif

#define CONV_TILED(NAME, V, TF, TR)                                            \
  ROUND16_BODY NAME##_body(                                                    \
      __global float *y, int y_off, __global const float *xp, int xp_off,      \
      __global const float *wr, int wr_off, __global const float *bias,        \
      int bias_off, int batch, int F, int C, int KH, int KW, int OH, int OW,   \
      int Hp, int Wq, int dil_h, int dil_w, int has_bias, int relu,            \
      int accumulate, ROUND16_PARAMS, int round16) {                           \
    int blocks = (OW + V - 1) / V, fblocks = (F + TF - 1) / TF;                \
    int rblocks = (OH + TR - 1) / TR;                                          \
    int u = get_global_id(0);                                                  \
    if (u >= batch * fblocks * rblocks * blocks) return;                       \
    int blk = u % blocks;                                                      \
    u /= blocks;                                                               \
    int oh0 = u % rblocks * TR;                                                \
    u /= rblocks;                                                              \
    int fb = u % fblocks, n = u / fblocks, f0 = fb * TF;                       \
    __global const float *row =                                                \
        xp + xp_off + (n * C * Hp + oh0) * Wq + blk * V;                       \
    __global const float *w =                                                  \
        wr + wr_off + f0 / TILE_F * C * KH * KW * TILE_F + f0 % TILE_F;        \
    int row_step = dil_h * Wq, plane_step = (Hp - KH * dil_h) * Wq;            \
    int roff[TR];                                                              \
    _Pragma("unroll") for (int r = 0; r < TR; r++) roff[r] =                   \
        (min(oh0 + r, OH - 1) - oh0) * Wq;                                     \
    float##V acc[TR][TF];                                                      \
    _Pragma("unroll") for (int r = 0; r < TR; r++)                             \
      _Pragma("unroll") for (int j = 0; j < TF; j++) acc[r][j] = 0.0f;         \
    for (int c = 0; c < C; c++, row += plane_step)                             \
      for (int kh = 0; kh < KH; kh++, row += row_step) {                       \
        __global const float *in = row;                                        \
        for (int kw = 0; kw < KW; kw++, in += dil_w, w += TILE_F) {            \
          float##V v[TR];                                                      \
          _Pragma("unroll") for (int r = 0; r < TR; r++) v[r] =                \
              vload##V(0, in + roff[r]);                                       \
          _Pragma("unroll") for (int j = 0; j < TF; j++) {                     \
            float##V wj = (float##V)(w[j]);                                    \
            _Pragma("unroll") for (int r = 0; r < TR; r++) acc[r][j] =         \
                fma(wj, v[r], acc[r][j]);                                      \
          }                                                                    \
        }                                                                      \
      }                                                                        \
    int valid = min(V, OW - blk * V);                                          \
    for (int r = 0; r < TR && oh0 + r < OH; r++)                               \
      for (int j = 0; j < TF && f0 + j < F; j++) {                             \
        int at = ((n * F + f0 + j) * OH + oh0 + r) * OW + blk * V;             \
        __global float *out = y + y_off + at;                                  \
        float##V s = acc[r][j];                                                \
        if (has_bias) s += bias[bias_off + f0 + j];                            \
        if (relu) s = select((float##V)0.0f, s, isgreater(s, (float##V)0.0f)); \
        if (valid == V) {                                                      \
          if (accumulate) s = vload##V(0, out) + s;                            \
          vstore##V(s, 0, out);                                                \
        } else {                                                               \
          float part[V];                                                       \
          vstore##V(s, 0, part);                                               \
          for (int e = 0; e < valid; e++)                                      \
            out[e] = accumulate ? out[e] + part[e] : part[e];                  \
        }                                                                      \
        ROUND16_RUN(out, valid, at);                                           \
      }                                                                        \
  }                                                                            \
  ROUND16_VARIANTS(NAME, (__global float *y, int y_off,                        \
                   __global const float *xp, int xp_off,                       \
                   __global const float *wr, int wr_off,                       \
                   __global const float *bias, int bias_off, int batch, int F, \
                   int C, int KH, int KW, int OH, int OW, int Hp, int Wq,      \
                   int dil_h, int dil_w, int has_bias, int relu,               \
                   int accumulate, ROUND16_PARAMS),                            \
                   (y, y_off, xp, xp_off, wr, wr_off, bias, bias_off, batch,   \
                    F, C, KH, KW, OH, OW, Hp, Wq, dil_h, dil_w, has_bias,      \
                    relu, accumulate, ROUND16_ARGS))

CONV_TILED(conv_tiled16, 16, 8, 3)
CONV_TILED(conv_tiled8, 8, 8, 3)
CONV_TILED(conv_tiled16_small, 16, 4, 2)
CONV_TILED(conv_tiled8_small, 8, 4, 2)

/* The tiled way's weight gradient, straight from the padded input (xp,
 * as the forward's conv_pad writes it) and dy padded too (dyp: rows of
 * ldy, zeros past OW, so that every load is a whole vector): for filter f
 * and tap t = (c*KH + kh)*KW + kw, the sum over the rows r = n*OH + oh of
 * a chunk and every column ow of dy[n][f][oh][ow] * xp[n][c][oh +
 * kh*dil_h][ow + kw*dil_w], into part[(chunk*F + f)*taps + t] (the host
 * adds the chunks up in order). A work-item takes WG_F filters by WG_T
 * consecutive taps of one chunk: WG_F*WG_T vector accumulators, per block
 * of V columns WG_F loads of dy and WG_T of xp, summed across at the end.
 * Work-items in a row share their chunk (its dy and xp stay in the
 * cache), the taps varying fastest. */
/* Two tiles, as the forward's: 8 filters by 3 taps (on POCL, 2-core
 * Xeon with AVX-512: 0.7-0.9x as long as 4 by 3 on 7x7 planes of 32 and
 * 128 channels, within noise on 28x28 ones; 4 by 6 took up to 2x as long
 * on 7x7 planes) and 3 by 3, "small" (AVX2: 8 by 3 spilled; 3 by 3 took
 * 0.7-0.8x as long as 8 by 3, 4 by 2 0.8-0.9x, 4 by 3 no less). */
#define CONV_TILED_WGRAD(NAME, V, WG_F, WG_T)                                  \
  __kernel void NAME(                                                          \
      __global float *part, int part_off, __global const float *xp,            \
      int xp_off, __global const float *dyp, int dyp_off, int batch, int F,    \
      int C, int KH, int KW, int OH, int OW, int Hp, int Wq, int ldy,          \
      int dil_h, int dil_w, int per, int chunks) {                             \
    int taps = C * KH * KW, tgroups = (taps + WG_T - 1) / WG_T;                \
    int fblocks = (F + WG_F - 1) / WG_F;                                       \
    int i = get_global_id(0);                                                  \
    if (i >= chunks * fblocks * tgroups) return;                               \
    int tg = i % tgroups, fb = i / tgroups % fblocks;                          \
    int chunk = i / (tgroups * fblocks);                                       \
    int r0 = chunk * per, r1 = min(batch * OH, r0 + per);                      \
    int n = r0 / OH, oh = r0 % OH, blocks = (OW + V - 1) / V;                  \
    __global const float *xr[WG_T], *dr[WG_F];                                 \
    _Pragma("unroll") for (int k = 0; k < WG_T; k++) {                         \
      int t = min(tg * WG_T + k, taps - 1);                                    \
      int kw = t % KW, kh = t / KW % KH, c = t / (KW * KH);                    \
      xr[k] = xp + xp_off + ((n * C + c) * Hp + oh + kh * dil_h) * Wq +        \
              kw * dil_w;                                                      \
    }                                                                          \
    _Pragma("unroll") for (int j = 0; j < WG_F; j++) {                         \
      int f = min(fb * WG_F + j, F - 1);                                       \
      dr[j] = dyp + dyp_off + ((n * F + f) * OH + oh) * ldy;                   \
    }                                                                          \
    float##V acc[WG_F][WG_T];                                                  \
    _Pragma("unroll") for (int j = 0; j < WG_F; j++)                           \
      _Pragma("unroll") for (int k = 0; k < WG_T; k++) acc[j][k] = 0.0f;       \
    for (int r = r0; r < r1; r++) {                                            \
      for (int blk = 0; blk < blocks; blk++) {                                 \
        float##V d[WG_F];                                                      \
        _Pragma("unroll") for (int j = 0; j < WG_F; j++) d[j] =                \
            vload##V(blk, dr[j]);                                              \
        _Pragma("unroll") for (int k = 0; k < WG_T; k++) {                     \
          float##V xv = vload##V(blk, xr[k]);                                  \
          _Pragma("unroll") for (int j = 0; j < WG_F; j++) acc[j][k] =         \
              fma(d[j], xv, acc[j][k]);                                        \
        }                                                                      \
      }                                                                        \
      /* the next row: of this image, or the first of the next */              \
      bool last = ++oh == OH;                                                  \
      if (last) oh = 0;                                                        \
      _Pragma("unroll") for (int k = 0; k < WG_T; k++) xr[k] +=                \
          last ? (C * Hp - OH + 1) * Wq : Wq;                                  \
      _Pragma("unroll") for (int j = 0; j < WG_F; j++) dr[j] +=                \
          last ? ((F - 1) * OH + 1) * ldy : ldy;                               \
    }                                                                          \
    _Pragma("unroll") for (int j = 0; j < WG_F; j++) {                         \
      int f = fb * WG_F + j;                                                   \
      _Pragma("unroll") for (int k = 0; k < WG_T; k++) {                       \
        int t = tg * WG_T + k;                                                 \
        if (f < F && t < taps)                                                 \
          part[part_off + (chunk * F + f) * taps + t] =                        \
              lanes_sum##V(acc[j][k]);                                         \
      }                                                                        \
    }                                                                          \
  }

/* The lanes of a vector added pairwise, halves first. */
static float lanes_sum8(float8 v) {
  float4 h = v.lo + v.hi;
  float2 q = h.lo + h.hi;
  return q.x + q.y;
}
static float lanes_sum16(float16 v) { return lanes_sum8(v.lo + v.hi); }

#if !CLT_ROUND16_PROGRAM
CONV_TILED_WGRAD(conv_tiled_wgrad16, 16, 8, 3)
CONV_TILED_WGRAD(conv_tiled_wgrad8, 8, 8, 3)
CONV_TILED_WGRAD(conv_tiled_wgrad16_small, 16, 3, 3)
CONV_TILED_WGRAD(conv_tiled_wgrad8_small, 8, 3, 3)
#endif
