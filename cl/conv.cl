/* im2col / col2im for convolutions (NCHW), and the axis swap between the
 * GEMM's channel-major layout and NCHW. col is [C*KH*KW, batch*OH*OW]: one
 * GEMM covers the whole batch. A convolution geometry travels as one int array:
 *   g[0..3]  = C, H, W (input), unused
 *   g[4..7]  = KH, KW, OH, OW
 *   g[8..13] = pad_h, pad_w, stride_h, stride_w, dil_h, dil_w
 * passed as scalars so that the kernels need no __constant buffer. */

/* col[(c*KH + kh)*KW + kw][(n*OH + oh)*OW + ow] = x[n][c][ih][iw], or 0 in
 * the padding. One work-item per (n, row of col): it writes that row's
 * OH*OW run for image n, looping over oh and ow, so the divisions happen
 * once per work-item and the inner loop copies contiguous memory with no
 * test in it, which CPU devices (POCL) vectorise (a work-item per (n, row,
 * oh) was 1.5-2x slower on POCL: more index work for 11-wide rows). */
__kernel void im2col(__global float *col, int col_off,
                     __global const float *x, int x_off, int batch, int C,
                     int H, int W, int KH, int KW, int OH, int OW, int pad_h,
                     int pad_w, int stride_h, int stride_w, int dil_h,
                     int dil_w) {
  int i = get_global_id(0);
  int rows = C * KH * KW;
  if (i >= batch * rows) return;
  int r = i % rows;
  int n = i / rows;
  int kw = r % KW, kh = (r / KW) % KH, c = r / (KW * KH);
  int iw0 = kw * dil_w - pad_w;
  int lo = min(OW, iw0 >= 0 ? 0 : (stride_w - 1 - iw0) / stride_w);
  int hi = iw0 >= W ? lo : max(lo, min(OW, (W - 1 - iw0) / stride_w + 1));
  __global const float *plane = x + x_off + (n * C + c) * H * W;
  __global float *out = col + col_off + (r * batch + n) * OH * OW;
  for (int oh = 0; oh < OH; oh++, out += OW) {
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
 * im2col copied it to (dcol at its offset). */
static float col2im_sum(__global const float *dcol, int batch, int n, int c,
                        int ih, int iw, int KH, int KW, int OH, int OW,
                        int pad_h, int pad_w, int stride_h, int stride_w,
                        int dil_h, int dil_w) {
  int spatial = OH * OW;
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
      sum += dcol[(r * batch + n) * spatial + oh * OW + ow];
    }
  }
  return sum;
}

/* dx[n][c][ih][iw] (+)= sum of dcol over the (kh, kw, oh, ow) that read
 * it: a gather, so no two work-items write the same element. One
 * work-item per input row (n, c, ih): for each (kh, kw) whose window rows
 * reach ih it adds one dcol row into the output row, a loop over ow with
 * no division in it (contiguous for stride 1, which CPU devices
 * vectorise). The contributions are added in (kh, kw) order, as
 * col2im_sum adds them. */
__kernel void col2im(__global float *dx, int dx_off,
                     __global const float *dcol, int dcol_off, int batch,
                     int C, int H, int W, int KH, int KW, int OH, int OW,
                     int pad_h, int pad_w, int stride_h, int stride_w,
                     int dil_h, int dil_w, int accumulate) {
  int i = get_global_id(0);
  if (i >= batch * C * H) return;
  int ih = i % H;
  int c = (i / H) % C;
  int n = i / (H * C);
  __global float *out = dx + dx_off + i * W;
  if (!accumulate)
    for (int iw = 0; iw < W; iw++) out[iw] = 0.0f;
  for (int kh = 0; kh < KH; kh++) {
    int oh = window_row(ih, kh, pad_h, stride_h, dil_h, OH);
    if (oh < 0) continue;
    for (int kw = 0; kw < KW; kw++) {
      /* Column ow of this dcol row came from iw = ow * stride_w + iw0. */
      int iw0 = kw * dil_w - pad_w;
      if (iw0 >= W) continue;
      int ow_lo = iw0 >= 0 ? 0 : (stride_w - 1 - iw0) / stride_w;
      int ow_hi = min(OW, (W - 1 - iw0) / stride_w + 1);
      int r = (c * KH + kh) * KW + kw;
      __global const float *src =
          dcol + dcol_off + ((r * batch + n) * OH + oh) * OW;
      if (stride_w == 1) {
        __global float *o = out + iw0;
        for (int ow = ow_lo; ow < ow_hi; ow++) o[ow] += src[ow];
      } else {
        for (int ow = ow_lo; ow < ow_hi; ow++)
          out[ow * stride_w + iw0] += src[ow];
      }
    }
  }
}

/* The same two with one work-item per element, consecutive work-items on
 * consecutive elements of what they write (coalesced on a GPU, where a
 * work-item per row makes neighbours write a row apart). The layer
 * measures both layouts and keeps the faster (nn/conv2d.c). */
__kernel void im2col_elems(__global float *col, int col_off,
                           __global const float *x, int x_off, int batch,
                           int C, int H, int W, int KH, int KW, int OH,
                           int OW, int pad_h, int pad_w, int stride_h,
                           int stride_w, int dil_h, int dil_w) {
  int i = get_global_id(0);
  int rows = C * KH * KW;
  if (i >= batch * rows * OH * OW) return;
  int ow = i % OW;
  int oh = (i / OW) % OH;
  int n = (i / (OW * OH)) % batch;
  int r = i / (OW * OH * batch);
  int kw = r % KW, kh = (r / KW) % KH, c = r / (KW * KH);
  int ih = oh * stride_h - pad_h + kh * dil_h;
  int iw = ow * stride_w - pad_w + kw * dil_w;
  /* col's element i: row r, column (n*OH + oh)*OW + ow. */
  col[col_off + i] = ih >= 0 && ih < H && iw >= 0 && iw < W
                         ? x[x_off + ((n * C + c) * H + ih) * W + iw]
                         : 0.0f;
}

__kernel void col2im_elems(__global float *dx, int dx_off,
                           __global const float *dcol, int dcol_off,
                           int batch, int C, int H, int W, int KH, int KW,
                           int OH, int OW, int pad_h, int pad_w, int stride_h,
                           int stride_w, int dil_h, int dil_w,
                           int accumulate) {
  int i = get_global_id(0);
  if (i >= batch * C * H * W) return;
  int iw = i % W;
  int ih = (i / W) % H;
  int c = (i / (W * H)) % C;
  int n = i / (W * H * C);
  float sum = col2im_sum(dcol + dcol_off, batch, n, c, ih, iw, KH, KW, OH,
                         OW, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w);
  dx[dx_off + i] = accumulate ? dx[dx_off + i] + sum : sum;
}

/* y[b][a][s] = x[a][b][s] (+ bias[a]): between the GEMM's [channels,
 * batch, spatial] and NCHW's [batch, channels, spatial], either way. One
 * work-item per row of s. relu (a fused ReLU, nn/conv2d.c): 1 applies it
 * to what is written (the forward), 2 multiplies by mask > 0, mask laid
 * out as x (the backward: the gradient through it, mask its output); the
 * same arithmetic as cl/activation.cl's, so the same bits. */
__kernel void swap_axes01(__global float *y, int y_off,
                          __global const float *x, int x_off,
                          __global const float *bias, int bias_off,
                          __global const float *mask, int mask_off, int A,
                          int B, int S, int has_bias, int relu) {
  int i = get_global_id(0);
  if (i >= A * B) return;
  int a = i / B, b = i % B;
  float add = has_bias ? bias[bias_off + a] : 0.0f;
  __global const float *in = x + x_off + i * S;
  __global float *out = y + y_off + (b * A + a) * S;
  if (relu == 1) {
    for (int s = 0; s < S; s++) {
      float v = in[s] + add;
      out[s] = v > 0.0f ? v : 0.0f;
    }
  } else if (relu == 2) {
    __global const float *m = mask + mask_off + i * S;
    for (int s = 0; s < S; s++)
      out[s] = (in[s] + add) * (m[s] > 0.0f ? 1.0f : 0.0f);
  } else {
    for (int s = 0; s < S; s++) out[s] = in[s] + add;
  }
}
