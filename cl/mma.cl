/* GEMM with fp16 inputs and fp32 sums on NVIDIA's tensor cores, through
 * inline PTX (mma.sync.m16n8k16, sm_80 and later): mixed precision's
 * products where CLBlast can only run SGEMM (NVIDIA's OpenCL has no
 * cl_khr_fp16). Built on demand, never at start-up (src/ops/gemm_mma.c):
 *   -DCLT_MMA_PTX=1  the tensor-core instruction (only a compiler that
 *                    emits PTX accepts it: the probe finds out);
 *   -DCLT_MMA_PTX=0  the same kernel with the instruction done in OpenCL C
 *                    by the warp's work-items through local memory, with
 *                    the operand layouts of the PTX ISA ("Matrix
 *                    Fragments for mma.m16n8k16 with floating point
 *                    type"), so that every other line of the kernel is
 *                    checked on any device (POCL, oclgrind);
 *   -DMMA_BM, MMA_BN  the block's tile of C, MMA_WM x MMA_WN warps of 32.
 *
 * C = alpha op(A) op(B) + beta C, row-major, op() per ta/tb, strided
 * batches along dimension 2 of the range. A and B are f32 in memory and
 * rounded to fp16 (nearest even) on their way to local memory: exact for
 * mixed precision's values, which are fp16 already. The sums are f32. */

#ifndef MMA_BM
#define MMA_BM 64
#endif
#ifndef MMA_BN
#define MMA_BN 64
#endif
#ifndef MMA_WM
#define MMA_WM 2
#endif
#ifndef MMA_WN
#define MMA_WN 2
#endif
#define MMA_BK 32
#define MMA_THREADS (MMA_WM * MMA_WN * 32)
/* Tiles of 16 x 8 each warp computes, along m and n. */
#define MMA_TM (MMA_BM / MMA_WM / 16)
#define MMA_TN (MMA_BN / MMA_WN / 8)
/* Words (two halves) per row of a local tile, k along the row: BK/2 and 4
 * more, so that the 8 rows x 4 words a fragment load touches fall in 32
 * different banks. */
#define MMA_LDS (MMA_BK / 2 + 4)

/* MMA_16816, the tensor-core instruction or its emulation: cl/prelude.cl
 * (shared with cl/igemm.cl). */

#define MMA_A_LOADS (MMA_BM * MMA_BK / MMA_THREADS)
#define MMA_B_LOADS (MMA_BN * MMA_BK / MMA_THREADS)

/* This work-item's share of the next k-block of op(A) (rows m0.., k k0..)
 * and op(B) into registers, zero outside the matrices. Consecutive items
 * read consecutive addresses: along k where the operand is stored with k
 * contiguous, else along m (n). */
static void mma_fetch(float *ra, float *rb, int ta, int tb, int m, int n,
                      int k, int m0, int n0, int k0, __global const float *a,
                      int lda, __global const float *b, int ldb, int lid) {
#pragma unroll
  for (int i = 0; i < MMA_A_LOADS; i++) {
    int e = lid + i * MMA_THREADS;
    int r = ta ? e % MMA_BM : e / MMA_BK, kk = ta ? e / MMA_BM : e % MMA_BK;
    int row = m0 + r, col = k0 + kk;
    ra[i] = row < m && col < k
                ? a[ta ? (long)col * lda + row : (long)row * lda + col]
                : 0.0f;
  }
#pragma unroll
  for (int i = 0; i < MMA_B_LOADS; i++) {
    int e = lid + i * MMA_THREADS;
    int c = tb ? e / MMA_BK : e % MMA_BN, kk = tb ? e % MMA_BK : e / MMA_BN;
    int col = n0 + c, row = k0 + kk;
    rb[i] = col < n && row < k
                ? b[tb ? (long)col * ldb + row : (long)row * ldb + col]
                : 0.0f;
  }
}

/* The registers into the local tiles as halves: as[r][k] and bs[c][k]. */
static void mma_stash(const float *ra, const float *rb, int ta, int tb,
                      __local uint *as, __local uint *bs, int lid) {
  __local half *ah = (__local half *)as, *bh = (__local half *)bs;
#pragma unroll
  for (int i = 0; i < MMA_A_LOADS; i++) {
    int e = lid + i * MMA_THREADS;
    int r = ta ? e % MMA_BM : e / MMA_BK, kk = ta ? e / MMA_BM : e % MMA_BK;
    vstore_half_rte(ra[i], r * 2 * MMA_LDS + kk, ah);
  }
#pragma unroll
  for (int i = 0; i < MMA_B_LOADS; i++) {
    int e = lid + i * MMA_THREADS;
    int c = tb ? e / MMA_BK : e % MMA_BN, kk = tb ? e % MMA_BK : e / MMA_BN;
    vstore_half_rte(rb[i], c * 2 * MMA_LDS + kk, bh);
  }
}

__kernel __attribute__((reqd_work_group_size(MMA_THREADS, 1, 1))) void
gemm_mma(int ta, int tb, int m, int n, int k, float alpha,
         __global const float *a, int a_off, int lda, int stride_a,
         __global const float *b, int b_off, int ldb, int stride_b,
         float beta, __global float *c, int c_off, int ldc, int stride_c) {
  __local uint as[MMA_BM * MMA_LDS], bs[MMA_BN * MMA_LDS];
#if CLT_MMA_PTX
  __local uint *scratch = 0;
#else
  __local uint scratch_all[MMA_WM * MMA_WN * 32 * 6];
#endif
  int lid = get_local_id(0), lane = lid & 31, warp = lid >> 5;
#if !CLT_MMA_PTX
  __local uint *scratch = scratch_all + warp * 32 * 6;
#endif
  int g = lane >> 2, t = lane & 3;
  int wm = warp / MMA_WN, wn = warp % MMA_WN;
  int m0 = get_group_id(1) * MMA_BM, n0 = get_group_id(0) * MMA_BN;
  long batch = get_group_id(2);
  a += a_off + batch * stride_a;
  b += b_off + batch * stride_b;
  c += c_off + batch * stride_c;

  float acc[MMA_TM][MMA_TN][4];
#pragma unroll
  for (int i = 0; i < MMA_TM; i++)
#pragma unroll
    for (int j = 0; j < MMA_TN; j++)
#pragma unroll
      for (int q = 0; q < 4; q++) acc[i][j][q] = 0.0f;

  float ra[MMA_A_LOADS], rb[MMA_B_LOADS];
  mma_fetch(ra, rb, ta, tb, m, n, k, m0, n0, 0, a, lda, b, ldb, lid);
  for (int k0 = 0; k0 < k; k0 += MMA_BK) {
    mma_stash(ra, rb, ta, tb, as, bs, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    /* The next block travels while this one is multiplied. */
    if (k0 + MMA_BK < k)
      mma_fetch(ra, rb, ta, tb, m, n, k, m0, n0, k0 + MMA_BK, a, lda, b, ldb,
                lid);
#pragma unroll
    for (int ks = 0; ks < MMA_BK / 16; ks++) {
      uint fa[MMA_TM][4], fb[MMA_TN][2];
#pragma unroll
      for (int i = 0; i < MMA_TM; i++) {
        int row = wm * (MMA_BM / MMA_WM) + i * 16 + g;
        mma_load_a(fa[i], as + row * MMA_LDS + ks * 8 + t, MMA_LDS);
      }
#pragma unroll
      for (int j = 0; j < MMA_TN; j++) {
        int row = wn * (MMA_BN / MMA_WN) + j * 8 + g;
        mma_load_b(fb[j], bs + row * MMA_LDS + ks * 8 + t);
      }
#pragma unroll
      for (int i = 0; i < MMA_TM; i++)
#pragma unroll
        for (int j = 0; j < MMA_TN; j++)
          MMA_16816(acc[i][j], fa[i], fb[j], scratch, lane);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

#pragma unroll
  for (int i = 0; i < MMA_TM; i++)
#pragma unroll
    for (int j = 0; j < MMA_TN; j++)
#pragma unroll
      for (int q = 0; q < 4; q++) {
        int row = m0 + wm * (MMA_BM / MMA_WM) + i * 16 + g + (q >> 1) * 8;
        int col = n0 + wn * (MMA_BN / MMA_WN) + j * 8 + 2 * t + (q & 1);
        if (row >= m || col >= n) continue;
        __global float *out = c + (long)row * ldc + col;
        float v = alpha * acc[i][j][q];
        *out = beta == 0.0f ? v : v + beta * *out;
      }
}
