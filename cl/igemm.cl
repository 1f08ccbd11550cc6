/* Convolutions as implicit GEMMs: the products of nn/conv2d.c without
 * their unfold. The operand im2col would write (col [C*KH*KW,
 * batch*OH*OW], KH*KW times the input) is read straight from x (dy) tile
 * by tile into local memory, so neither im2col nor col2im nor the axis
 * swap runs, and the output is written in NCHW with the bias and the ReLU
 * (the forward) or added into dx (the data gradient). Shaped for GPUs
 * (tiles in local memory, loads coalesced along work-items); offered to
 * every device as measured candidates (src/ops/conv_implicit.c), chosen
 * only where they are faster.
 *
 * The three products, as C [M, N] = A [M, K] B [K, N]:
 *   igemm_fwd  y = W col:       M = F, N = batch*OH*OW, K = C*KH*KW
 *   igemm_dx   dx = W^T dy:     M = C, N = batch*H*W,   K = F*KH*KW
 *              (B[(f,kh,kw)][(b,ih,iw)] = dy[b][f][oh][ow] where
 *              ih = oh*stride_h - pad_h + kh*dil_h, and iw alike, else 0)
 *   igemm_dw   dW = dy col^T:   M = F, N = C*KH*KW,     K = batch*OH*OW,
 *              the k range cut into get_num_groups(2) chunks of kchunk,
 *              each chunk's partial product written to its own slice.
 *
 * Built with -DIG_BM, IG_BN (the group's tile of C) and IG_TM, IG_TN (the
 * work-item's): (IG_BM/IG_TM) x (IG_BN/IG_TN) work-items, which must be a
 * multiple of IG_BN and of IG_BK. A work-item computes the rows
 * ty + i*IG_TY and the columns tx + j*IG_TX of the tile, so that
 * neighbouring work-items write neighbouring columns. Sizes and offsets
 * are ints (the host refuses tensors past 2^31 elements). */

#ifndef IG_BM
#define IG_BM 64
#endif
#ifndef IG_BN
#define IG_BN 64
#endif
#ifndef IG_TM
#define IG_TM 4
#endif
#ifndef IG_TN
#define IG_TN 4
#endif
#define IG_BK 16
#define IG_TX (IG_BN / IG_TN)
#define IG_TY (IG_BM / IG_TM)
#define IG_THREADS (IG_TX * IG_TY)
#define IG_A_LOADS (IG_BM * IG_BK / IG_THREADS)
#define IG_B_LOADS (IG_BN * IG_BK / IG_THREADS)
/* Rows of the local tiles, k-major: one float more than a tile's width,
 * so that items storing along k hit different banks. */
#define IG_LDA (IG_BM + 1)
#define IG_LDB (IG_BN + 1)
/* A window offset that makes every bounds test fail (k or n past the
 * product). */
#define IG_NOWHERE (1 << 29)

/* acc[i*IG_TN + j] += the tile's k-block product for this item's rows and
 * columns. */
static void ig_multiply(float *acc, __local const float *as,
                        __local const float *bs, int tx, int ty) {
  for (int kk = 0; kk < IG_BK; kk++) {
    float a[IG_TM], b[IG_TN];
#pragma unroll
    for (int i = 0; i < IG_TM; i++) a[i] = as[kk * IG_LDA + ty + i * IG_TY];
#pragma unroll
    for (int j = 0; j < IG_TN; j++) b[j] = bs[kk * IG_LDB + tx + j * IG_TX];
#pragma unroll
    for (int i = 0; i < IG_TM; i++)
#pragma unroll
      for (int j = 0; j < IG_TN; j++)
        acc[i * IG_TN + j] = mad(a[i], b[j], acc[i * IG_TN + j]);
  }
}

/* Registers into the local tiles. A is always loaded along k (item lid
 * holds k lid % IG_BK of rows lid / IG_BK + i * (IG_THREADS / IG_BK));
 * B along n (b_along_n: column lid % IG_BN of k rows lid / IG_BN +
 * i * (IG_THREADS / IG_BN)) or along k as A. */
static void ig_stash(const float *ra, const float *rb, bool b_along_n,
                     __local float *as, __local float *bs, int lid) {
#pragma unroll
  for (int i = 0; i < IG_A_LOADS; i++)
    as[(lid % IG_BK) * IG_LDA + lid / IG_BK + i * (IG_THREADS / IG_BK)] =
        ra[i];
#pragma unroll
  for (int i = 0; i < IG_B_LOADS; i++) {
    if (b_along_n)
      bs[(lid / IG_BN + i * (IG_THREADS / IG_BN)) * IG_LDB + lid % IG_BN] =
          rb[i];
    else
      bs[(lid % IG_BK) * IG_LDB + lid / IG_BK + i * (IG_THREADS / IG_BK)] =
          rb[i];
  }
}

/* ---- forward ------------------------------------------------------------ */

/* Where row k of col reads x, relative to its column's window corner:
 * (c*H*W + kh*dil_h*W + kw*dil_w, kh*dil_h, kw*dil_w); past K nowhere. */
static int4 ig_col_row(int k, int K, int KH, int KW, int H, int W, int dil_h,
                       int dil_w) {
  if (k >= K) return (int4)(0, IG_NOWHERE, IG_NOWHERE, 0);
  int kk = KH * KW, c = k / kk, r = k - c * kk, kh = r / KW, kw = r - kh * KW;
  return (int4)(c * H * W + kh * dil_h * W + kw * dil_w, kh * dil_h,
                kw * dil_w, 0);
}

/* Block k0's loads into registers: A from the weights, B from x through
 * the block's rows of col (rows). */
static void ig_fwd_fetch(float *ra, float *rb, __local const int4 *rows,
                         __global const float *w, __global const float *x,
                         int M, int K, int k0, int a_row, int a_k, int H,
                         int W, int ih0, int iw0, int corner, int lid) {
#pragma unroll
  for (int i = 0; i < IG_A_LOADS; i++) {
    int m = a_row + i * (IG_THREADS / IG_BK), k = k0 + a_k;
    ra[i] = m < M && k < K ? w[m * K + k] : 0.0f;
  }
#pragma unroll
  for (int i = 0; i < IG_B_LOADS; i++) {
    int4 r = rows[lid / IG_BN + i * (IG_THREADS / IG_BN)];
    int ih = ih0 + r.y, iw = iw0 + r.z;
    rb[i] = (uint)ih < (uint)H && (uint)iw < (uint)W ? x[corner + r.x] : 0.0f;
  }
}

__kernel __attribute__((reqd_work_group_size(IG_THREADS, 1, 1))) void
igemm_fwd(__global float *y, int y_off, __global const float *x, int x_off,
          __global const float *w, int w_off, __global const float *bias,
          int bias_off, int has_bias, int relu, int batch, int F, int C,
          int H, int W, int KH, int KW, int OH, int OW, int pad_h, int pad_w,
          int stride_h, int stride_w, int dil_h, int dil_w) {
  __local float as[IG_BK * IG_LDA], bs[IG_BK * IG_LDB];
  __local int4 rows[2][IG_BK];
  int lid = get_local_id(0), tx = lid % IG_TX, ty = lid / IG_TX;
  int K = C * KH * KW, OHW = OH * OW, N = batch * OHW, M = F;
  int m0 = get_group_id(1) * IG_BM, n0 = get_group_id(0) * IG_BN;
  x += x_off;
  w += w_off;
  /* This item's column of the B tile: its window's corner in x. */
  int n = n0 + lid % IG_BN;
  bool n_in = n < N;
  int b = n_in ? n / OHW : 0, p = n_in ? n - b * OHW : 0;
  int oh = p / OW, ow = p - oh * OW;
  int corner = b * C * H * W + (oh * stride_h - pad_h) * W +
               ow * stride_w - pad_w;
  /* The window's corner for the bounds tests (outside the product:
   * every test fails, whatever a row adds). */
  int ih0 = n_in ? oh * stride_h - pad_h : -2 * IG_NOWHERE;
  int iw0 = ow * stride_w - pad_w;
  int a_row = m0 + lid / IG_BK, a_k = lid % IG_BK;

  float acc[IG_TM * IG_TN];
#pragma unroll
  for (int i = 0; i < IG_TM * IG_TN; i++) acc[i] = 0.0f;
  float ra[IG_A_LOADS], rb[IG_B_LOADS];

  if (lid < IG_BK)
    rows[0][lid] = ig_col_row(lid, K, KH, KW, H, W, dil_h, dil_w);
  barrier(CLK_LOCAL_MEM_FENCE);
  ig_fwd_fetch(ra, rb, rows[0], w, x, M, K, 0, a_row, a_k, H, W, ih0, iw0,
               corner, lid);
  for (int k0 = 0, s = 1; k0 < K; k0 += IG_BK, s ^= 1) {
    ig_stash(ra, rb, true, as, bs, lid);
    if (lid < IG_BK)
      rows[s][lid] =
          ig_col_row(k0 + IG_BK + lid, K, KH, KW, H, W, dil_h, dil_w);
    barrier(CLK_LOCAL_MEM_FENCE);
    /* The next block travels while this one is multiplied. */
    if (k0 + IG_BK < K)
      ig_fwd_fetch(ra, rb, rows[s], w, x, M, K, k0 + IG_BK, a_row, a_k, H, W,
                   ih0, iw0, corner, lid);
    ig_multiply(acc, as, bs, tx, ty);
    barrier(CLK_LOCAL_MEM_FENCE);
  }

#pragma unroll
  for (int j = 0; j < IG_TN; j++) {
    int col = n0 + tx + j * IG_TX;
    if (col >= N) continue;
    int cb = col / OHW, cp = col - cb * OHW;
#pragma unroll
    for (int i = 0; i < IG_TM; i++) {
      int m = m0 + ty + i * IG_TY;
      if (m >= M) continue;
      float v = acc[i * IG_TN + j];
      if (has_bias) v += bias[bias_off + m];
      if (relu) v = v > 0.0f ? v : 0.0f;
      y[y_off + (cb * M + m) * OHW + cp] = v;
    }
  }
}

/* ---- data gradient ------------------------------------------------------- */

/* Row k = (f, kh, kw) of B: (f*OH*OW, kh*dil_h, kw*dil_w); past K
 * nowhere. */
static int4 ig_dy_row(int k, int K, int KH, int KW, int OHW, int dil_h,
                      int dil_w) {
  if (k >= K) return (int4)(0, IG_NOWHERE, IG_NOWHERE, 0);
  int kk = KH * KW, f = k / kk, r = k - f * kk, kh = r / KW, kw = r - kh * KW;
  return (int4)(f * OHW, kh * dil_h, kw * dil_w, 0);
}

/* Block k0's loads into registers: A[c][(f, r)] = W[f][c][r] (this item's
 * k once per block), B from dy through the block's rows (rows). */
static void ig_dx_fetch(float *ra, float *rb, __local const int4 *rows,
                        __global const float *w, __global const float *dy,
                        int M, int K, int KK, int C, int k0, int a_row,
                        int a_k, int OH, int OW, int stride_h, int stride_w,
                        int ihp, int iwp, int plane, int lid) {
  int k = k0 + a_k, f = k / KK, r = k - f * KK;
#pragma unroll
  for (int i = 0; i < IG_A_LOADS; i++) {
    int m = a_row + i * (IG_THREADS / IG_BK);
    ra[i] = m < M && k < K ? w[(f * C + m) * KK + r] : 0.0f;
  }
  bool unit = stride_h == 1 && stride_w == 1;
#pragma unroll
  for (int i = 0; i < IG_B_LOADS; i++) {
    int4 t = rows[lid / IG_BN + i * (IG_THREADS / IG_BN)];
    /* oh*stride_h = ih + pad_h - kh*dil_h, and ow alike */
    int sh = ihp - t.y, sw = iwp - t.z, oh = sh, ow = sw;
    if (!unit) {
      oh = sh / stride_h;
      ow = sw / stride_w;
      if (oh * stride_h != sh) oh = -1;
      if (ow * stride_w != sw) ow = -1;
    }
    rb[i] = sh >= 0 && sw >= 0 && (uint)oh < (uint)OH && (uint)ow < (uint)OW
                ? dy[plane + t.x + oh * OW + ow]
                : 0.0f;
  }
}

__kernel __attribute__((reqd_work_group_size(IG_THREADS, 1, 1))) void
igemm_dx(__global float *dx, int dx_off, __global const float *dy,
         int dy_off, __global const float *w, int w_off, int accumulate,
         int batch, int F, int C, int H, int W, int KH, int KW, int OH,
         int OW, int pad_h, int pad_w, int stride_h, int stride_w, int dil_h,
         int dil_w) {
  __local float as[IG_BK * IG_LDA], bs[IG_BK * IG_LDB];
  __local int4 rows[2][IG_BK];
  int lid = get_local_id(0), tx = lid % IG_TX, ty = lid / IG_TX;
  int KK = KH * KW, K = F * KK, OHW = OH * OW, HW = H * W, N = batch * HW;
  int M = C;
  int m0 = get_group_id(1) * IG_BM, n0 = get_group_id(0) * IG_BN;
  dy += dy_off;
  w += w_off;
  /* This item's column of B: input pixel (b, ih, iw); ih + pad_h and
   * iw + pad_w (outside the product: every test fails). */
  int n = n0 + lid % IG_BN;
  bool n_in = n < N;
  int b = n_in ? n / HW : 0, p = n_in ? n - b * HW : 0;
  int ih = p / W, iw = p - ih * W;
  int ihp = n_in ? ih + pad_h : -2 * IG_NOWHERE, iwp = iw + pad_w;
  int plane = b * F * OHW;
  int a_row = m0 + lid / IG_BK, a_k = lid % IG_BK;

  float acc[IG_TM * IG_TN];
#pragma unroll
  for (int i = 0; i < IG_TM * IG_TN; i++) acc[i] = 0.0f;
  float ra[IG_A_LOADS], rb[IG_B_LOADS];

  if (lid < IG_BK) rows[0][lid] = ig_dy_row(lid, K, KH, KW, OHW, dil_h, dil_w);
  barrier(CLK_LOCAL_MEM_FENCE);
  ig_dx_fetch(ra, rb, rows[0], w, dy, M, K, KK, C, 0, a_row, a_k, OH, OW,
              stride_h, stride_w, ihp, iwp, plane, lid);
  for (int k0 = 0, s = 1; k0 < K; k0 += IG_BK, s ^= 1) {
    ig_stash(ra, rb, true, as, bs, lid);
    if (lid < IG_BK)
      rows[s][lid] = ig_dy_row(k0 + IG_BK + lid, K, KH, KW, OHW, dil_h, dil_w);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (k0 + IG_BK < K)
      ig_dx_fetch(ra, rb, rows[s], w, dy, M, K, KK, C, k0 + IG_BK, a_row, a_k,
                  OH, OW, stride_h, stride_w, ihp, iwp, plane, lid);
    ig_multiply(acc, as, bs, tx, ty);
    barrier(CLK_LOCAL_MEM_FENCE);
  }

#pragma unroll
  for (int j = 0; j < IG_TN; j++) {
    int col = n0 + tx + j * IG_TX;
    if (col >= N) continue;
    int cb = col / HW, cp = col - cb * HW;
#pragma unroll
    for (int i = 0; i < IG_TM; i++) {
      int m = m0 + ty + i * IG_TY;
      if (m >= M) continue;
      __global float *out = dx + dx_off + (cb * M + m) * HW + cp;
      float v = acc[i * IG_TN + j];
      *out = accumulate ? *out + v : v;
    }
  }
}

/* ---- weight gradient ------------------------------------------------------ */

__kernel __attribute__((reqd_work_group_size(IG_THREADS, 1, 1))) void
igemm_dw(__global float *dw, int dw_off, __global const float *x, int x_off,
         __global const float *dy, int dy_off, int kchunk, int batch, int F,
         int C, int H, int W, int KH, int KW, int OH, int OW, int pad_h,
         int pad_w, int stride_h, int stride_w, int dil_h, int dil_w) {
  __local float as[IG_BK * IG_LDA], bs[IG_BK * IG_LDB];
  /* The tile's columns n = (c, kh, kw), fixed for the whole k range. */
  __local int4 cols[IG_BN];
  int lid = get_local_id(0), tx = lid % IG_TX, ty = lid / IG_TX;
  int KK = KH * KW, N = C * KK, OHW = OH * OW, K = batch * OHW, M = F;
  int m0 = get_group_id(1) * IG_BM, n0 = get_group_id(0) * IG_BN;
  int z = get_group_id(2);
  int k_begin = z * kchunk, k_end = min(K, k_begin + kchunk);
  x += x_off;
  dy += dy_off;
  if (lid < IG_BN)
    cols[lid] = ig_col_row(n0 + lid, N, KH, KW, H, W, dil_h, dil_w);
  barrier(CLK_LOCAL_MEM_FENCE);
  int a_row = m0 + lid / IG_BK, a_k = lid % IG_BK, a_col = lid / IG_BK;

  float acc[IG_TM * IG_TN];
#pragma unroll
  for (int i = 0; i < IG_TM * IG_TN; i++) acc[i] = 0.0f;
  float ra[IG_A_LOADS], rb[IG_B_LOADS];

  for (int k0 = k_begin; k0 < k_end; k0 += IG_BK) {
    /* This item's k = (b, oh, ow) indexes dy for A and, through the
     * tile's columns, x for B (both loaded along k). */
    int k = k0 + a_k;
    bool k_in = k < k_end;
    int b = k_in ? k / OHW : 0, p = k_in ? k - b * OHW : 0;
    int oh = p / OW, ow = p - oh * OW;
    int corner = b * C * H * W + (oh * stride_h - pad_h) * W +
                 ow * stride_w - pad_w;
    int ih0 = k_in ? oh * stride_h - pad_h : -2 * IG_NOWHERE;
    int iw0 = ow * stride_w - pad_w;
#pragma unroll
    for (int i = 0; i < IG_A_LOADS; i++) {
      int m = a_row + i * (IG_THREADS / IG_BK);
      ra[i] = m < M && k_in ? dy[(b * M + m) * OHW + p] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < IG_B_LOADS; i++) {
      int4 t = cols[a_col + i * (IG_THREADS / IG_BK)];
      int ih = ih0 + t.y, iw = iw0 + t.z;
      rb[i] = (uint)ih < (uint)H && (uint)iw < (uint)W ? x[corner + t.x]
                                                       : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE); /* the previous block is multiplied */
    ig_stash(ra, rb, false, as, bs, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    ig_multiply(acc, as, bs, tx, ty);
  }

  __global float *out = dw + dw_off + (long)z * M * N;
#pragma unroll
  for (int i = 0; i < IG_TM; i++) {
    int m = m0 + ty + i * IG_TY;
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < IG_TN; j++) {
      int col = n0 + tx + j * IG_TX;
      if (col < N) out[m * N + col] = acc[i * IG_TN + j];
    }
  }
}
