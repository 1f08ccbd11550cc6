/* im2col / col2im for convolutions (NCHW), and the batch sum used for
 * weight gradients. A convolution geometry travels as one int array:
 *   g[0..3]  = C, H, W (input), unused
 *   g[4..7]  = KH, KW, OH, OW
 *   g[8..13] = pad_h, pad_w, stride_h, stride_w, dil_h, dil_w
 * passed as scalars so that the kernels need no __constant buffer. */

/* col[n][(c*KH + kh)*KW + kw][oh*OW + ow] = x[n][c][ih][iw], or 0 in the
 * padding. One work-item per element of col, over the whole batch. */
__kernel void im2col(__global float *col, int col_off,
                     __global const float *x, int x_off, int batch, int C,
                     int H, int W, int KH, int KW, int OH, int OW, int pad_h,
                     int pad_w, int stride_h, int stride_w, int dil_h,
                     int dil_w) {
  int i = get_global_id(0);
  int spatial = OH * OW;
  int rows = C * KH * KW;
  if (i >= batch * rows * spatial) return;
  int s = i % spatial;
  int r = (i / spatial) % rows;
  int n = i / (spatial * rows);
  int ow = s % OW, oh = s / OW;
  int kw = r % KW, kh = (r / KW) % KH, c = r / (KW * KH);
  int ih = oh * stride_h - pad_h + kh * dil_h;
  int iw = ow * stride_w - pad_w + kw * dil_w;
  float v = 0.0f;
  if (ih >= 0 && ih < H && iw >= 0 && iw < W)
    v = x[x_off + ((n * C + c) * H + ih) * W + iw];
  col[col_off + i] = v;
}

/* dx[n][c][ih][iw] (+)= sum of dcol over the (kh, kw, oh, ow) that read
 * it: a gather, so no two work-items write the same element. */
__kernel void col2im(__global float *dx, int dx_off,
                     __global const float *dcol, int dcol_off, int batch,
                     int C, int H, int W, int KH, int KW, int OH, int OW,
                     int pad_h, int pad_w, int stride_h, int stride_w,
                     int dil_h, int dil_w, int accumulate) {
  int i = get_global_id(0);
  if (i >= batch * C * H * W) return;
  int iw = i % W;
  int ih = (i / W) % H;
  int c = (i / (W * H)) % C;
  int n = i / (W * H * C);
  int spatial = OH * OW;
  int rows = C * KH * KW;
  float sum = 0.0f;
  for (int kh = 0; kh < KH; kh++) {
    int th = ih + pad_h - kh * dil_h;
    if (th < 0 || th % stride_h != 0) continue;
    int oh = th / stride_h;
    if (oh >= OH) continue;
    for (int kw = 0; kw < KW; kw++) {
      int tw = iw + pad_w - kw * dil_w;
      if (tw < 0 || tw % stride_w != 0) continue;
      int ow = tw / stride_w;
      if (ow >= OW) continue;
      int r = (c * KH + kh) * KW + kw;
      sum += dcol[dcol_off + (n * rows + r) * spatial + oh * OW + ow];
    }
  }
  dx[dx_off + i] = accumulate ? dx[dx_off + i] + sum : sum;
}

/* out[j] = sum over n of x[n * count + j]: per-image weight gradients
 * summed over the batch. */
__kernel void sum_batch(__global float *out, int out_off,
                        __global const float *x, int x_off, int batch,
                        int count) {
  int j = get_global_id(0);
  if (j >= count) return;
  float s = 0.0f;
  for (int n = 0; n < batch; n++) s += x[x_off + n * count + j];
  out[out_off + j] = s;
}
