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
 * Built with -DIG_BM, IG_BN (the group's tile of C) and either
 *   IG_TM, IG_TN (fp32): the work-item's tile, (IG_BM/IG_TM) x
 *     (IG_BN/IG_TN) work-items; an item computes the rows ty + i*IG_TY and
 *     the columns tx + j*IG_TX of the tile, so that neighbouring items
 *     write neighbouring columns; or
 *   CLT_MMA_PTX, CLT_MMA_ASM, IG_WM, IG_WN (fp16 inputs, f32 sums, as
 *     cl/mma.cl): IG_WM x IG_WN warps of 32, each a (IG_BM/IG_WM) x
 *     (IG_BN/IG_WN) part of the tile in 16 x 8 pieces on the tensor cores
 *     (or their emulation, CLT_MMA_PTX=0); the operands are rounded to
 *     fp16 on their way to local memory (exact for mixed precision's
 *     values, which are fp16 already).
 * The loads are the same for both, but an fp16 item loads two adjacent k
 * of a row or column at a time (IG_KP), stored into local memory as one
 * word (two halves). Each block's loads are issued before the block
 * before it is multiplied and land in registers meanwhile (one block
 * ahead), then stored into the local tiles. The work-items must be a
 * multiple of IG_BN and of IG_BK / IG_KP. Sizes and offsets are ints (the
 * host refuses tensors past 2^31 elements). */

#ifndef IG_BM
#define IG_BM 64
#endif
#ifndef IG_BN
#define IG_BN 64
#endif
/* The k block: 16 (fp32), or a multiple of the instruction's 16 (fp16:
 * 32, as cl/mma.cl, half the barriers). */
#ifndef IG_BK
#define IG_BK 16
#endif

#ifdef CLT_MMA_PTX
#ifndef IG_WM
#define IG_WM 2
#endif
#ifndef IG_WN
#define IG_WN 2
#endif
#define IG_THREADS (IG_WM * IG_WN * 32)
/* 16 x 8 pieces per warp along m and n, and the sums an item holds. */
#define IG_MT (IG_BM / IG_WM / 16)
#define IG_NT (IG_BN / IG_WN / 8)
#define IG_ACC (IG_MT * IG_NT * 4)
/* Words (two halves) per row of a local tile, k along the row: 4 more
 * than IG_BK/2, so that a fragment's 8 rows x 4 words fall in 32 banks
 * (IG_BK 16 or 32). */
#define IG_LDW (IG_BK / 2 + 4)
#define IG_A_TILE (IG_BM * IG_LDW)
#define IG_B_TILE (IG_BN * IG_LDW)
typedef uint ig_tile;
/* Adjacent k an item loads and stores together (one word of halves). */
#define IG_KP 2
#else
#ifndef IG_TM
#define IG_TM 4
#endif
#ifndef IG_TN
#define IG_TN 4
#endif
#define IG_TX (IG_BN / IG_TN)
#define IG_TY (IG_BM / IG_TM)
#define IG_THREADS (IG_TX * IG_TY)
#define IG_ACC (IG_TM * IG_TN)
/* Rows of the local tiles, k-major: one float more than a tile's width,
 * so that items storing along k hit different banks. */
#define IG_LDA (IG_BM + 1)
#define IG_LDB (IG_BN + 1)
#define IG_A_TILE (IG_BK * IG_LDA)
#define IG_B_TILE (IG_BK * IG_LDB)
typedef float ig_tile;
#define IG_KP 1
#endif

/* An operand loaded along k: item lid holds k (lid % IG_KI) * IG_KP ..
 * + IG_KP - 1 of rows lid / IG_KI + i * IG_ROW_STEP; along n (B of the
 * forward and the data gradient): column lid % IG_BN, k (lid / IG_BN) *
 * IG_KP + i * IG_K_STEP and the IG_KP - 1 after. An item's registers hold
 * value kp of its i-th group at i * IG_KP + kp. */
#define IG_KI (IG_BK / IG_KP)
#define IG_ROW_STEP (IG_THREADS / IG_KI)
#define IG_K_STEP (IG_THREADS / IG_BN * IG_KP)
#define IG_A_LOADS (IG_BM * IG_BK / IG_THREADS)
#define IG_B_LOADS (IG_BN * IG_BK / IG_THREADS)
#if IG_THREADS % IG_BN || IG_THREADS % IG_KI || IG_A_LOADS % IG_KP ||         \
    IG_B_LOADS % IG_KP
#error "igemm: the work-items must be a multiple of IG_BN and IG_BK / IG_KP"
#endif
/* A window offset that makes every bounds test fail (k or n past the
 * product). */
#define IG_NOWHERE (1 << 29)

/* The local tiles of a kernel, and the emulated instruction's scratch. */
#if defined(CLT_MMA_PTX) && !CLT_MMA_PTX
#define IG_LOCALS                                                             \
  __local ig_tile as[IG_A_TILE], bs[IG_B_TILE];                               \
  __local uint scratch[IG_THREADS * 6]
#else
#define IG_LOCALS                                                             \
  __local ig_tile as[IG_A_TILE], bs[IG_B_TILE];                               \
  __local uint *scratch = 0
#endif

#ifdef CLT_MMA_PTX
/* acc += the tile's k-block product for this item's pieces: each warp
 * loads its fragments (cl/mma.cl's layout) and issues the instruction. */
static void ig_multiply(float *acc, __local const uint *as,
                        __local const uint *bs, int lid,
                        __local uint *scratch) {
  int lane = lid & 31, warp = lid >> 5, g = lane >> 2, t = lane & 3;
  int wm = warp / IG_WN, wn = warp % IG_WN;
  __local uint *mine = scratch ? scratch + warp * 32 * 6 : scratch;
#pragma unroll
  for (int ks = 0; ks < IG_BK / 16; ks++) {
    uint fa[IG_MT][4], fb[IG_NT][2];
#pragma unroll
    for (int i = 0; i < IG_MT; i++) {
      int row = wm * (IG_BM / IG_WM) + i * 16 + g;
      mma_load_a(fa[i], as + row * IG_LDW + ks * 8 + t, IG_LDW);
    }
#pragma unroll
    for (int j = 0; j < IG_NT; j++) {
      int row = wn * (IG_BN / IG_WN) + j * 8 + g;
      mma_load_b(fb[j], bs + row * IG_LDW + ks * 8 + t);
    }
    /* emulated, each product holds two barriers: unrolled, a CPU
     * compiler would see MT x NT x 2 copies of each (cl/mma.cl) */
#if CLT_MMA_PTX
#pragma unroll
#else
#pragma unroll 1
#endif
    for (int i = 0; i < IG_MT; i++)
#if CLT_MMA_PTX
#pragma unroll
#else
#pragma unroll 1
#endif
      for (int j = 0; j < IG_NT; j++)
        MMA_16816(acc + (i * IG_NT + j) * 4, fa[i], fb[j], mine, lane);
  }
}

/* The tile position of this item's sum q. */
static void ig_out(int q, int lid, int *row, int *col) {
  int lane = lid & 31, warp = lid >> 5, g = lane >> 2, t = lane & 3;
  int r = q & 3, i = (q >> 2) / IG_NT, j = (q >> 2) % IG_NT;
  *row = (warp / IG_WN) * (IG_BM / IG_WM) + i * 16 + g + (r >> 1) * 8;
  *col = (warp % IG_WN) * (IG_BN / IG_WN) + j * 8 + 2 * t + (r & 1);
}

/* Two loaded values (v[0], v[1]: k and k + 1, k even) into a local tile
 * as one word of halves: row r of a tile (m of A, n of B), k along the
 * row. */
#define IG_PUT(tile, r, k, v)                                                 \
  vstore_half2_rte((float2)((v)[0], (v)[1]), ((r) * 2 * IG_LDW + (k)) / 2,    \
                   (__local half *)(tile))
#define IG_PUT_A(k, m, v) IG_PUT(as, m, k, v)
#define IG_PUT_B(k, n, v) IG_PUT(bs, n, k, v)
#else
/* acc[i*IG_TN + j] += the tile's k-block product for this item's rows and
 * columns. */
static void ig_multiply(float *acc, __local const float *as,
                        __local const float *bs, int lid,
                        __local uint *scratch) {
  int tx = lid % IG_TX, ty = lid / IG_TX;
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

/* The tile position of this item's sum q. */
static void ig_out(int q, int lid, int *row, int *col) {
  *row = lid / IG_TX + (q / IG_TN) * IG_TY;
  *col = lid % IG_TX + (q % IG_TN) * IG_TX;
}

#define IG_PUT_A(k, m, v) (as[(k) * IG_LDA + (m)] = (v)[0])
#define IG_PUT_B(k, n, v) (bs[(k) * IG_LDB + (n)] = (v)[0])
#endif

/* Registers into the local tiles (the mapping above); B along n or, as A,
 * along k. */
static void ig_stash(const float *ra, const float *rb, bool b_along_n,
                     __local ig_tile *as, __local ig_tile *bs, int lid) {
  int kq = lid % IG_KI * IG_KP, r = lid / IG_KI;
#pragma unroll
  for (int i = 0; i < IG_A_LOADS / IG_KP; i++)
    IG_PUT_A(kq, r + i * IG_ROW_STEP, ra + i * IG_KP);
#pragma unroll
  for (int i = 0; i < IG_B_LOADS / IG_KP; i++) {
    if (b_along_n)
      IG_PUT_B(lid / IG_BN * IG_KP + i * IG_K_STEP, lid % IG_BN,
               rb + i * IG_KP);
    else
      IG_PUT_B(kq, r + i * IG_ROW_STEP, rb + i * IG_KP);
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

__kernel __attribute__((reqd_work_group_size(IG_THREADS, 1, 1))) void
igemm_fwd(__global float *y, int y_off, __global const float *x, int x_off,
          __global const float *w, int w_off, __global const float *bias,
          int bias_off, int has_bias, int relu, int batch, int F, int C,
          int H, int W, int KH, int KW, int OH, int OW, int pad_h, int pad_w,
          int stride_h, int stride_w, int dil_h, int dil_w, ROUND16_PARAMS,
          int round16) {
  IG_LOCALS;
  __local int4 rows[IG_BK];
  int lid = get_local_id(0);
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
  int kq = lid % IG_KI * IG_KP, a_row = m0 + lid / IG_KI;
  int b_k = lid / IG_BN * IG_KP;

  float acc[IG_ACC];
#pragma unroll
  for (int i = 0; i < IG_ACC; i++) acc[i] = 0.0f;
  float ra[IG_A_LOADS], rb[IG_B_LOADS];

  /* Block kl's loads: A from the weights, B from x through the rows
   * table (holding block kl's rows). */
#define IG_FWD_LOAD(kl)                                                       \
  do {                                                                        \
    _Pragma("unroll") for (int i = 0; i < IG_A_LOADS / IG_KP; i++)            \
        _Pragma("unroll") for (int kp = 0; kp < IG_KP; kp++) {                \
      int m = a_row + i * IG_ROW_STEP, k = (kl) + kq + kp;                    \
      ra[i * IG_KP + kp] = m < M && k < K ? w[m * K + k] : 0.0f;              \
    }                                                                         \
    _Pragma("unroll") for (int i = 0; i < IG_B_LOADS / IG_KP; i++)            \
        _Pragma("unroll") for (int kp = 0; kp < IG_KP; kp++) {                \
      int4 r = rows[b_k + i * IG_K_STEP + kp];                                \
      int ih = ih0 + r.y, iw = iw0 + r.z;                                     \
      rb[i * IG_KP + kp] =                                                    \
          (uint)ih < (uint)H && (uint)iw < (uint)W ? x[corner + r.x] : 0.0f;  \
    }                                                                         \
  } while (0)

  /* Block 0 into registers; then each block: stored into local memory,
   * the next block's rows into the table and its loads issued, this one
   * multiplied while they travel. */
  if (lid < IG_BK) rows[lid] = ig_col_row(lid, K, KH, KW, H, W, dil_h, dil_w);
  barrier(CLK_LOCAL_MEM_FENCE);
  IG_FWD_LOAD(0);
  for (int k0 = 0; k0 < K; k0 += IG_BK) {
    barrier(CLK_LOCAL_MEM_FENCE); /* the last block is multiplied */
    ig_stash(ra, rb, true, as, bs, lid);
    if (lid < IG_BK)
      rows[lid] =
          ig_col_row(k0 + IG_BK + lid, K, KH, KW, H, W, dil_h, dil_w);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (k0 + IG_BK < K) IG_FWD_LOAD(k0 + IG_BK);
    ig_multiply(acc, as, bs, lid, scratch);
  }
#undef IG_FWD_LOAD

#pragma unroll
  for (int q = 0; q < IG_ACC; q++) {
    int m, col;
    ig_out(q, lid, &m, &col);
    m += m0;
    col += n0;
    if (m >= M || col >= N) continue;
    int cb = col / OHW, cp = col - cb * OHW;
    float v = acc[q];
    if (has_bias) v += bias[bias_off + m];
    if (relu) v = v > 0.0f ? v : 0.0f;
    STORE16(y, y_off, (cb * M + m) * OHW + cp, v);
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

__kernel __attribute__((reqd_work_group_size(IG_THREADS, 1, 1))) void
igemm_dx(__global float *dx, int dx_off, __global const float *dy,
         int dy_off, __global const float *w, int w_off, int accumulate,
         int batch, int F, int C, int H, int W, int KH, int KW, int OH,
         int OW, int pad_h, int pad_w, int stride_h, int stride_w, int dil_h,
         int dil_w, ROUND16_PARAMS, int round16) {
  IG_LOCALS;
  __local int4 rows[IG_BK];
  int lid = get_local_id(0);
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
  int kq = lid % IG_KI * IG_KP, a_row = m0 + lid / IG_KI;
  int b_k = lid / IG_BN * IG_KP;

  float acc[IG_ACC];
#pragma unroll
  for (int i = 0; i < IG_ACC; i++) acc[i] = 0.0f;
  float ra[IG_A_LOADS], rb[IG_B_LOADS];
  bool unit = stride_h == 1 && stride_w == 1;

  /* Block kl's loads: A[c][(f, r)] = W[f][c][r], B from dy through the
   * rows table (holding block kl's rows); oh*stride_h = ih + pad_h -
   * kh*dil_h, and ow alike. */
#define IG_DX_LOAD(kl)                                                        \
  do {                                                                        \
    _Pragma("unroll") for (int kp = 0; kp < IG_KP; kp++) {                    \
      int k = (kl) + kq + kp, f = k / KK, r = k - f * KK;                     \
      _Pragma("unroll") for (int i = 0; i < IG_A_LOADS / IG_KP; i++) {        \
        int m = a_row + i * IG_ROW_STEP;                                      \
        ra[i * IG_KP + kp] =                                                  \
            m < M && k < K ? w[(f * C + m) * KK + r] : 0.0f;                  \
      }                                                                       \
    }                                                                         \
    _Pragma("unroll") for (int i = 0; i < IG_B_LOADS / IG_KP; i++)            \
        _Pragma("unroll") for (int kp = 0; kp < IG_KP; kp++) {                \
      int4 t = rows[b_k + i * IG_K_STEP + kp];                                \
      int sh = ihp - t.y, sw = iwp - t.z, oh = sh, ow = sw;                   \
      if (!unit) {                                                            \
        oh = sh / stride_h;                                                   \
        ow = sw / stride_w;                                                   \
        if (oh * stride_h != sh) oh = -1;                                     \
        if (ow * stride_w != sw) ow = -1;                                     \
      }                                                                       \
      rb[i * IG_KP + kp] = sh >= 0 && sw >= 0 && (uint)oh < (uint)OH &&       \
                                   (uint)ow < (uint)OW                        \
                               ? dy[plane + t.x + oh * OW + ow]               \
                               : 0.0f;                                        \
    }                                                                         \
  } while (0)

  /* As the forward's loop. */
  if (lid < IG_BK) rows[lid] = ig_dy_row(lid, K, KH, KW, OHW, dil_h, dil_w);
  barrier(CLK_LOCAL_MEM_FENCE);
  IG_DX_LOAD(0);
  for (int k0 = 0; k0 < K; k0 += IG_BK) {
    barrier(CLK_LOCAL_MEM_FENCE); /* the last block is multiplied */
    ig_stash(ra, rb, true, as, bs, lid);
    if (lid < IG_BK)
      rows[lid] = ig_dy_row(k0 + IG_BK + lid, K, KH, KW, OHW, dil_h, dil_w);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (k0 + IG_BK < K) IG_DX_LOAD(k0 + IG_BK);
    ig_multiply(acc, as, bs, lid, scratch);
  }
#undef IG_DX_LOAD

#pragma unroll
  for (int q = 0; q < IG_ACC; q++) {
    int m, col;
    ig_out(q, lid, &m, &col);
    m += m0;
    col += n0;
    if (m >= M || col >= N) continue;
    int cb = col / HW, cp = col - cb * HW;
    int at = (cb * M + m) * HW + cp;
    STORE16(dx, dx_off, at, accumulate ? dx[dx_off + at] + acc[q] : acc[q]);
  }
}

/* ---- weight gradient ---------------------------------------------------- */

__kernel __attribute__((reqd_work_group_size(IG_THREADS, 1, 1))) void
igemm_dw(__global float *dw, int dw_off, __global const float *x, int x_off,
         __global const float *dy, int dy_off, int kchunk, int batch, int F,
         int C, int H, int W, int KH, int KW, int OH, int OW, int pad_h,
         int pad_w, int stride_h, int stride_w, int dil_h, int dil_w) {
  IG_LOCALS;
  /* The tile's columns n = (c, kh, kw), fixed for the whole k range. */
  __local int4 cols[IG_BN];
  int lid = get_local_id(0);
  int KK = KH * KW, N = C * KK, OHW = OH * OW, K = batch * OHW, M = F;
  int m0 = get_group_id(1) * IG_BM, n0 = get_group_id(0) * IG_BN;
  int z = get_group_id(2);
  int k_begin = z * kchunk, k_end = min(K, k_begin + kchunk);
  x += x_off;
  dy += dy_off;
  if (lid < IG_BN)
    cols[lid] = ig_col_row(n0 + lid, N, KH, KW, H, W, dil_h, dil_w);
  barrier(CLK_LOCAL_MEM_FENCE);
  int kq = lid % IG_KI * IG_KP, a_col = lid / IG_KI, a_row = m0 + a_col;

  float acc[IG_ACC];
#pragma unroll
  for (int i = 0; i < IG_ACC; i++) acc[i] = 0.0f;
  float ra[IG_A_LOADS], rb[IG_B_LOADS];

  /* Block kl's loads: each of this item's k = (b, oh, ow) indexes dy for
   * A and, through the tile's columns, x for B (both along k). */
#define IG_DW_LOAD(kl)                                                        \
  do {                                                                        \
    _Pragma("unroll") for (int kp = 0; kp < IG_KP; kp++) {                    \
      int k = (kl) + kq + kp;                                                 \
      bool k_in = k < k_end;                                                  \
      int b = k_in ? k / OHW : 0, p = k_in ? k - b * OHW : 0;                 \
      int oh = p / OW, ow = p - oh * OW;                                      \
      int corner = b * C * H * W + (oh * stride_h - pad_h) * W +              \
                   ow * stride_w - pad_w;                                     \
      int ih0 = k_in ? oh * stride_h - pad_h : -2 * IG_NOWHERE;               \
      int iw0 = ow * stride_w - pad_w;                                        \
      _Pragma("unroll") for (int i = 0; i < IG_A_LOADS / IG_KP; i++) {        \
        int m = a_row + i * IG_ROW_STEP;                                      \
        ra[i * IG_KP + kp] =                                                  \
            m < M && k_in ? dy[(b * M + m) * OHW + p] : 0.0f;                 \
      }                                                                       \
      _Pragma("unroll") for (int i = 0; i < IG_B_LOADS / IG_KP; i++) {        \
        int4 t = cols[a_col + i * IG_ROW_STEP];                               \
        int ih = ih0 + t.y, iw = iw0 + t.z;                                   \
        rb[i * IG_KP + kp] = (uint)ih < (uint)H && (uint)iw < (uint)W         \
                                 ? x[corner + t.x]                            \
                                 : 0.0f;                                      \
      }                                                                       \
    }                                                                         \
  } while (0)

  /* As the forward's loop, the columns fixed. */
  IG_DW_LOAD(k_begin);
  for (int k0 = k_begin; k0 < k_end; k0 += IG_BK) {
    barrier(CLK_LOCAL_MEM_FENCE); /* the previous block is multiplied */
    ig_stash(ra, rb, false, as, bs, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (k0 + IG_BK < k_end) IG_DW_LOAD(k0 + IG_BK);
    ig_multiply(acc, as, bs, lid, scratch);
  }
#undef IG_DW_LOAD

  __global float *out = dw + dw_off + (long)z * M * N;
#pragma unroll
  for (int q = 0; q < IG_ACC; q++) {
    int m, col;
    ig_out(q, lid, &m, &col);
    m += m0;
    col += n0;
    if (m < M && col < N) out[m * N + col] = acc[q];
  }
}
