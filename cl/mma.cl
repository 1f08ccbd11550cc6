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
 *   -DMMA_BM, MMA_BN  the block's tile of C, MMA_WM x MMA_WN warps of 32;
 *   -DMMA_STAGES=S    S > 0: the staged form below instead (S k-blocks in
 *                    its ring), with -DCLT_MMA_ASYNC=0 or 1 and
 *                    -DCLT_MMA_LDMATRIX=0 or 1;
 *   -DMMA_WGMMA=1     with S > 0: the warpgroup form at the end (Hopper's
 *                    wgmma, through a rewriting of the program's PTX);
 *                    with -DMMA_WG_TF32=1 it runs fp32 products as
 *                    3xTF32 instead (f32's accuracy, no fp16 rounding).
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

#ifndef MMA_STAGES
#define MMA_STAGES 0
#endif
#ifndef MMA_WGMMA
#define MMA_WGMMA 0
#endif

/* ---- the plain form: a program holds only the kernel its configuration
 * runs. A CPU compiler asked for the program's binary compiles every
 * kernel in it, each for any work-group size: POCL spent 82 of a 90 s
 * build of a 128x256 warpgroup program on this kernel, unused there. */
#if MMA_STAGES == 0

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
/* emulated, each product holds two barriers: unrolled, a CPU compiler
 * would see TM x TN x 2 copies of each */
#if CLT_MMA_PTX
#pragma unroll
#else
#pragma unroll 1
#endif
      for (int i = 0; i < MMA_TM; i++)
#if CLT_MMA_PTX
#pragma unroll
#else
#pragma unroll 1
#endif
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
#endif /* MMA_STAGES == 0 */

/* ---- the staged form: fp16 operands packed once, a ring of k-blocks ----
 *
 * mma_pack writes op(A) as [M'][K'] and op(B)^T as [N'][K'] halves, k
 * contiguous, zero past the matrices (M', N', K' rounded up to the tiles,
 * so the product's loop reads whole tiles with no bounds checks);
 * gemm_mma_staged multiplies them through a ring of MMA_STAGES k-blocks
 * in local memory: block kb + STAGES - 1 travels while block kb is
 * multiplied, one barrier a block. With -DCLT_MMA_ASYNC=1 (PTX only) the
 * blocks travel by cp.async, straight from global to local memory; with
 * 0 through registers, stored after the products (every device).
 *
 * A k-block row is 32 halves: four 16-byte chunks, chunk c of row r kept
 * at c ^ ((r >> 1) & 3), so that the 8 rows x 4 words a fragment load
 * touches fall in 32 different banks without padding (which the ring's
 * 48 KB could not spare). */

#if MMA_STAGES > 0
#ifndef CLT_MMA_ASYNC
#define CLT_MMA_ASYNC 0
#endif
/* -DCLT_MMA_LDMATRIX=1 (with CLT_MMA_ASYNC=1 only): fragments by ldmatrix. */
#if !(CLT_MMA_PTX && CLT_MMA_ASYNC)
#undef CLT_MMA_LDMATRIX
#define CLT_MMA_LDMATRIX 0
#endif
#ifndef CLT_MMA_LDMATRIX
#define CLT_MMA_LDMATRIX 0
#endif
#define MMA_ROWS (MMA_BM + MMA_BN)
#define MMA_CHUNKS (MMA_ROWS * 4 / MMA_THREADS)

/* Eight floats as halves (nearest even) in one 16-byte store. */
static void mma_store8(float8 v, __global uint4 *p) {
  ushort h[8];
  vstore_half8_rte(v, 0, (__private half *)h);
  *p = (uint4)(h[0] | (uint)h[1] << 16, h[2] | (uint)h[3] << 16,
               h[4] | (uint)h[5] << 16, h[6] | (uint)h[7] << 16);
}

#ifndef MMA_WG_TF32
#define MMA_WG_TF32 0
#endif
#if MMA_WG_TF32
/* x rounded to tf32 (10 bits of mantissa, nearest even; the low 13 bits
 * zero), where that stays finite (else cut); inf and NaN as they are. */
static float8 tf32_round8(float8 x) {
  uint8 u = as_uint8(x), inf = (uint8)(0x7f800000u);
  uint8 r = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
  r = select(r, u & 0xffffe000u, (r & inf) == inf);
  return select(as_float8(r), x, (u & inf) == inf);
}

/* Eight floats as tf32 pairs, x = big + small (small the rest, rounded
 * again): the big parts at p[0..1], the small ones at p[at..at + 1]. */
static void mma_store8_split(float8 v, __global uint4 *p, int at) {
  float8 big = tf32_round8(v);
  /* inf - inf: an infinite value's small part is 0 */
  float8 small = select(tf32_round8(v - big), (float8)(0.0f), isinf(big));
  p[0] = as_uint4(big.lo);
  p[1] = as_uint4(big.hi);
  p[at] = as_uint4(small.lo);
  p[at + 1] = as_uint4(small.hi);
}
#endif

/* One block of 32 rows x 64 columns of an operand: dst[r][c] =
 * op(src)[r][c] as halves, op(src)[r][c] = src[r ld + c] or, with trans,
 * src[c ld + r]; zero for r >= rows or c >= cols. Each of the 32 x 8
 * items writes 8 consecutive columns of a row with one 16-byte store
 * (cols_p is a multiple of 8): without trans straight from the source (8
 * consecutive floats of its row); with trans through local memory, so
 * that the reads go along the stored rows (r) and the writes along k (c),
 * both coalesced. With vec (the source's rows start at multiples of 4
 * floats) the reads are 16-byte loads where a whole vector lies inside
 * the matrix. With MMA_WG_TF32 (the warpgroup form's 3xTF32) each value
 * is two tf32 floats instead, big + small: a packed row holds the cols_p
 * big parts, then the cols_p small ones. */
static void mma_pack_block(__local float *tile, int trans, int vec, int rows,
                           int cols, __global const float *src, int ld,
                           __global uint4 *dst, int cols_p, int r0, int c0) {
  int tx = get_local_id(0), lid = get_local_id(1) * 32 + tx;
  /* this item's chunk: row r0 + lid / 8, columns c .. c + 7 */
  int row = lid / 8, c = c0 + 8 * (lid % 8);
  float8 v = (float8)(0.0f);
  if (trans) {
    /* the tile as [32 r][65]: column c0 + j of op(src) is row c0 + j as
     * stored, read along r, four floats an item and a load (two loads an
     * item), or one float (eight) */
    if (vec) {
      for (int e = lid; e < 512; e += 256) {
        int j = e / 8, rq = 4 * (e % 8), r = r0 + rq, cc = c0 + j;
        float4 q = (float4)(0.0f);
        if (cc < cols) {
          __global const float *s = src + (long)cc * ld + r;
          if (r + 4 <= rows)
            q = *(__global const float4 *)s;
          else
            q = (float4)(r < rows ? s[0] : 0.0f, r + 1 < rows ? s[1] : 0.0f,
                         r + 2 < rows ? s[2] : 0.0f, 0.0f);
        }
        tile[(rq + 0) * 65 + j] = q.s0;
        tile[(rq + 1) * 65 + j] = q.s1;
        tile[(rq + 2) * 65 + j] = q.s2;
        tile[(rq + 3) * 65 + j] = q.s3;
      }
    } else {
      for (int j = get_local_id(1); j < 64; j += 8) {
        int r = r0 + tx, cc = c0 + j;
        tile[tx * 65 + j] = r < rows && cc < cols ? src[(long)cc * ld + r] : 0.0f;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    __local const float *t = tile + row * 65 + 8 * (lid % 8);
    v = (float8)(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]);
  } else if (r0 + row < rows) {
    __global const float *s = src + (long)(r0 + row) * ld + c;
    if (vec && c + 8 <= cols)
      v = (float8)(*(__global const float4 *)s, *(__global const float4 *)(s + 4));
    else if (c + 8 <= cols)
      v = (float8)(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]);
    else
      v = (float8)(c < cols ? s[0] : 0.0f, c + 1 < cols ? s[1] : 0.0f,
                   c + 2 < cols ? s[2] : 0.0f, c + 3 < cols ? s[3] : 0.0f,
                   c + 4 < cols ? s[4] : 0.0f, c + 5 < cols ? s[5] : 0.0f,
                   c + 6 < cols ? s[6] : 0.0f, c + 7 < cols ? s[7] : 0.0f);
  }
#if MMA_WG_TF32
  if (c < cols_p)
    mma_store8_split(v, dst + ((long)(r0 + row) * 2 * cols_p + c) / 4,
                     cols_p / 4);
#else
  if (c < cols_p) mma_store8(v, dst + ((long)(r0 + row) * cols_p + c) / 8);
#endif
}

/* Both operands of a product in one launch: batches_a batches of op(A)
 * (rows_a x cols of it, rows_pa x cols_p packed) at dst, then the
 * batches of op(B) from uint4 b_at on (the _b arguments), each batch
 * packed as mma_pack_block's blocks (a stride of 0: one batch for all).
 * Over (ceil(cols_p / 64) 32, max(rows_pa, rows_pb) / 32 x 8, batches_a
 * + batches_b); rows_p are multiples of 32. */
__kernel __attribute__((reqd_work_group_size(32, 8, 1))) void
mma_pack(int batches_a, int cols, int cols_p, int trans_a, int vec_a,
         int rows_a, int rows_pa, __global const float *src_a, int src_a_off,
         int ld_a, int stride_a, int trans_b, int vec_b, int rows_b,
         int rows_pb, __global const float *src_b, int src_b_off, int ld_b,
         int stride_b, __global uint4 *dst, int dst_off, int b_at) {
  __local float tile[32 * 65];
  int c0 = get_group_id(0) * 64, r0 = get_group_id(1) * 32;
  int z = get_group_id(2), is_b = z >= batches_a;
  long batch = is_b ? z - batches_a : z;
  int rows_p = is_b ? rows_pb : rows_pa;
  /* a block past this operand's rows (the other one's are more) */
  if (r0 >= rows_p) return;
  __global const float *src =
      is_b ? src_b + src_b_off + batch * stride_b
           : src_a + src_a_off + batch * stride_a;
  /* dst_off counts f32 words (the buffer is an f32 tensor), multiples of
   * 16: uint4s of 8 halves */
  dst += dst_off / 4 + (is_b ? b_at : 0) +
         batch * (long)rows_p * (MMA_WG_TF32 ? cols_p / 2 : cols_p / 8);
  mma_pack_block(tile, is_b ? trans_b : trans_a, is_b ? vec_b : vec_a,
                 is_b ? rows_b : rows_a, cols, src, is_b ? ld_b : ld_a, dst,
                 cols_p, r0, c0);
}

#if CLT_MMA_PTX
/* 16 bytes from global to local memory by cp.async (the ring's and the
 * warpgroup form's copies), and the end of a group of them. */
/* The local address as the .shared state space has it: a __local
 * pointer's value on NVIDIA's compiler (not something OpenCL promises:
 * the measured plans compare every configuration's numbers with SGEMM's
 * before choosing it, and selftest checks each one). */
#define MMA_COPY16(dst, src)                                                   \
  MMA_ASM("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(                  \
              (uint)(ulong)(dst)),                                             \
          "l"((ulong)(src))                                                    \
          : "memory")
#define MMA_COMMIT() MMA_ASM("cp.async.commit_group;" ::: "memory")
#endif

#if !MMA_WGMMA

/* Where chunk c (16 bytes) of row r of a k-block sits, in uint4s. */
#define MMA_CHUNK(r, c) ((r) * 4 + ((c) ^ (((r) >> 1) & 3)))

#if CLT_MMA_PTX && CLT_MMA_ASYNC
/* cp.async.wait_group's operand: all but the newest STAGES - 2 groups. */
#if MMA_STAGES == 2
#define MMA_WAIT_GROUPS "0"
#elif MMA_STAGES == 3
#define MMA_WAIT_GROUPS "1"
#elif MMA_STAGES == 4
#define MMA_WAIT_GROUPS "2"
#else
#error "MMA_STAGES: 2, 3 or 4 with CLT_MMA_ASYNC"
#endif
#if CLT_MMA_LDMATRIX
/* Four 8 x 8 matrices of halves from local memory, lanes 8 j .. 8 j + 7
 * giving the rows of matrix j, lane 4 g + t receiving row g's halves 2 t
 * and 2 t + 1 of each: a whole A fragment, or two B fragments, in one
 * instruction instead of four 32-bit loads. */
#define MMA_LDMATRIX4(d0, d1, d2, d3, p)                                        \
  MMA_ASM("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"      \
          : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3)                             \
          : "r"((uint)(ulong)(p))                                              \
          : "memory")
#endif
#define MMA_WAIT() MMA_ASM("cp.async.wait_group " MMA_WAIT_GROUPS ";" ::: "memory")
#endif

/* This work-item's chunks of k-block kb: row e / 4 of the ring's A rows
 * then B rows, chunk e % 4, consecutive items on consecutive chunks. */
#define MMA_CHUNK_SRC(e, kb)                                                   \
  ((e) / 4 < MMA_BM ? pa + (long)((e) / 4) * kq + (kb) * 4 + (e) % 4          \
                    : pb + (long)((e) / 4 - MMA_BM) * kq + (kb) * 4 + (e) % 4)

/* C = alpha A B^T + beta C on packed operands (above): a is [M'][K'] and
 * b is [N'][K'] halves as uint4s (8 halves), from a_off and b_off f32
 * words on, kq = K' / 8 of them a row,
 * a_stride and b_stride uint4s between batches (0: one operand for all). */
__kernel __attribute__((reqd_work_group_size(MMA_THREADS, 1, 1))) void
gemm_mma_staged(int m, int n, int kq, float alpha, __global const uint4 *a,
                int a_off, long a_stride, __global const uint4 *b, int b_off,
                long b_stride, float beta, __global float *c, int c_off,
                int ldc, int stride_c) {
  __local uint4 ring[MMA_STAGES * MMA_ROWS * 4];
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
  /* the offsets count f32 words, multiples of 4 */
  __global const uint4 *pa = a + a_off / 4 + batch * a_stride + (long)m0 * kq;
  __global const uint4 *pb = b + b_off / 4 + batch * b_stride + (long)n0 * kq;
  c += c_off + batch * stride_c;
  int blocks = kq / 4;

  float acc[MMA_TM][MMA_TN][4];
#pragma unroll
  for (int i = 0; i < MMA_TM; i++)
#pragma unroll
    for (int j = 0; j < MMA_TN; j++)
#pragma unroll
      for (int q = 0; q < 4; q++) acc[i][j][q] = 0.0f;

  /* The first STAGES - 1 blocks. */
  for (int s = 0; s < MMA_STAGES - 1; s++) {
#pragma unroll
    for (int i = 0; i < MMA_CHUNKS; i++) {
      int e = lid + i * MMA_THREADS;
      __local uint4 *to = ring + s * MMA_ROWS * 4 + MMA_CHUNK(e / 4, e % 4);
      if (s < blocks) {
#if CLT_MMA_PTX && CLT_MMA_ASYNC
        MMA_COPY16(to, MMA_CHUNK_SRC(e, s));
#else
        *to = *MMA_CHUNK_SRC(e, s);
#endif
      }
    }
#if CLT_MMA_PTX && CLT_MMA_ASYNC
    MMA_COMMIT();
#endif
  }

  for (int kb = 0; kb < blocks; kb++) {
#if CLT_MMA_PTX && CLT_MMA_ASYNC
    MMA_WAIT(); /* this item's copies of block kb have landed */
#endif
    /* Everyone's copies of block kb have landed, and everyone is done
     * with block kb - 1, whose stage the next block takes. */
    barrier(CLK_LOCAL_MEM_FENCE);
    int next = kb + MMA_STAGES - 1;
    __local uint4 *next_stage = ring + (next % MMA_STAGES) * MMA_ROWS * 4;
#if CLT_MMA_PTX && CLT_MMA_ASYNC
    if (next < blocks) {
#pragma unroll
      for (int i = 0; i < MMA_CHUNKS; i++) {
        int e = lid + i * MMA_THREADS;
        MMA_COPY16(next_stage + MMA_CHUNK(e / 4, e % 4),
                   MMA_CHUNK_SRC(e, next));
      }
    }
    MMA_COMMIT(); /* empty past the end: the wait above counts groups */
#else
    uint4 held[MMA_CHUNKS];
    if (next < blocks) {
#pragma unroll
      for (int i = 0; i < MMA_CHUNKS; i++) {
        int e = lid + i * MMA_THREADS;
        held[i] = *MMA_CHUNK_SRC(e, next);
      }
    }
#endif
    __local const uint *as =
        (__local const uint *)(ring + (kb % MMA_STAGES) * MMA_ROWS * 4);
    __local const uint *bs = as + MMA_BM * 16;
    /* Unrolled for the tensor cores; as loops when emulated, whose
     * barriers inside each product make POCL's compile time grow with
     * every copy (minutes for 64 copies). */
#if CLT_MMA_PTX
#pragma unroll
#else
#pragma unroll 1
#endif
    for (int ks = 0; ks < 2; ks++) {
      uint fa[MMA_TM][4], fb[MMA_TN][2];
#if CLT_MMA_LDMATRIX
      int q = lane >> 3;
      __local const uint4 *as4 = (__local const uint4 *)as,
                          *bs4 = (__local const uint4 *)bs;
#pragma unroll
      for (int i = 0; i < MMA_TM; i++) {
        /* matrices: rows 0-7 and 8-15 of k 0-7, then of k 8-15 */
        int r = wm * (MMA_BM / MMA_WM) + i * 16 + (q & 1) * 8 + (lane & 7);
        MMA_LDMATRIX4(fa[i][0], fa[i][1], fa[i][2], fa[i][3],
                      as4 + MMA_CHUNK(r, 2 * ks + (q >> 1)));
      }
#pragma unroll
      for (int j = 0; j < MMA_TN; j += 2) {
        /* matrices: k 0-7 and 8-15 of columns 0-7, then of 8-15 */
        int r = wn * (MMA_BN / MMA_WN) + j * 8 + (q >> 1) * 8 + (lane & 7);
        MMA_LDMATRIX4(fb[j][0], fb[j][1], fb[j + 1][0], fb[j + 1][1],
                      bs4 + MMA_CHUNK(r, 2 * ks + (q & 1)));
      }
#else
      /* words t and t + 4 of the k-step: chunks 2 ks and 2 ks + 1 */
#pragma unroll
      for (int i = 0; i < MMA_TM; i++) {
        int r = wm * (MMA_BM / MMA_WM) + i * 16 + g;
        /* rows r and r + 8 share their swizzle */
        __local const uint *lo = as + MMA_CHUNK(r, 2 * ks) * 4 + t;
        __local const uint *hi = as + MMA_CHUNK(r, 2 * ks + 1) * 4 + t;
        fa[i][0] = lo[0];
        fa[i][1] = lo[8 * 16];
        fa[i][2] = hi[0];
        fa[i][3] = hi[8 * 16];
      }
#pragma unroll
      for (int j = 0; j < MMA_TN; j++) {
        int r = wn * (MMA_BN / MMA_WN) + j * 8 + g;
        fb[j][0] = bs[MMA_CHUNK(r, 2 * ks) * 4 + t];
        fb[j][1] = bs[MMA_CHUNK(r, 2 * ks + 1) * 4 + t];
      }
#endif
#if CLT_MMA_PTX
#pragma unroll
#else
#pragma unroll 1
#endif
      for (int i = 0; i < MMA_TM; i++)
#if CLT_MMA_PTX
#pragma unroll
#else
#pragma unroll 1
#endif
        for (int j = 0; j < MMA_TN; j++)
          MMA_16816(acc[i][j], fa[i], fb[j], scratch, lane);
    }
#if !(CLT_MMA_PTX && CLT_MMA_ASYNC)
    if (next < blocks) {
#pragma unroll
      for (int i = 0; i < MMA_CHUNKS; i++) {
        int e = lid + i * MMA_THREADS;
        next_stage[MMA_CHUNK(e / 4, e % 4)] = held[i];
      }
    }
#endif
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
#endif /* !MMA_WGMMA */
#endif /* MMA_STAGES > 0 */

/* ---- the warpgroup form: Hopper's wgmma on packed operands ----------------
 *
 * -DMMA_WGMMA=1 (with MMA_STAGES, MMA_BM, MMA_BN and the MMA_WG_ options
 * below): gemm_wgmma multiplies mma_pack's operands as gemm_mma_staged
 * does, but with wgmma.mma_async (sm_90a): each warpgroup of 128
 * work-items owns 64 rows of the tile and multiplies them by MMA_WG_N
 * columns of B at a time, both operands read by the tensor cores straight
 * from local memory through descriptors (no fragments in registers), the
 * product running while the next k-block's copies are issued.
 *
 * NVIDIA's OpenCL compiler builds for sm_90, where wgmma does not exist,
 * so with CLT_MMA_PTX=1 the kernel is built with placeholders ("// CLT_WG
 * ..." comments in inline assembly, which name the registers the compiler
 * gave their operands), and src/ops/wgmma_ptx.c replaces them in the
 * program's PTX by the instructions and its target by sm_90a before the
 * driver builds it again (src/runtime/program.c). With CLT_MMA_PTX=0 the
 * instruction is done in OpenCL C by each work-item from the descriptors'
 * strides (as the PTX ISA lays the operands and accumulators out), for
 * every other line of the kernel to be checked on any device.
 *
 *   MMA_WG_N     the instruction's n: 64, 128 or 256 (MMA_BN a multiple)
 *   MMA_WG_BK    the k-block: 16, 32 or 64 halves a row (8, 16 or 32
 *                tf32: 32, 64 or 128 bytes)
 *   MMA_WG_TF32  1: an fp32 product as 3xTF32, each operand packed as
 *                tf32 big and small parts (x = big + small) and
 *                A B = Ab Bb + Ab Bs + As Bb by wgmma's m64nNk8 on tf32,
 *                accurate as f32 (the dropped As Bs is below f32's
 *                rounding); 0: fp16 operands
 *   MMA_WG_DEPTH 0: each k-block's products finished before the next is
 *                started; 1: one k-block's products left running
 *   MMA_WG_SWIZZLE 0: the layout without swizzle; 1: the swizzled one of
 *                the k-block's row width (32, 64 or 128 bytes)
 *   MMA_WG_CTAS  n > 0: asks the compiler for registers that let n blocks
 *                share a multiprocessor (.minnctapersm)
 *
 * Local memory holds a k-block of A's rows then B's (3xTF32: A's big
 * parts, A's small parts, B's big, B's small), as wgmma's operand
 * layouts for k-major operands have it (PTX ISA, "Shared Memory Matrix
 * Layout"). Without swizzle: "core matrices" of 8 rows of 16 bytes (8
 * halves or 4 tf32), 128 contiguous bytes, the one of rows 8 i.. and
 * chunk j at (i * W / 16 + j) * 128 bytes for rows of W bytes (the
 * descriptor's leading byte offset, 128, steps along k, its stride byte
 * offset, 8 W, along the rows). Swizzled: rows of W bytes one after the
 * other, the 16-byte chunk c of row r at c ^ r & 7 (W = 128),
 * c ^ (r >> 1) & 3 (W = 64) or c ^ (r >> 2) & 1 (W = 32): the address
 * bits 4.. XORed with bits 7..,
 * which spreads the 8 rows of a fragment over every bank (the stride byte
 * offset 8 W; the ring aligned so that absolute and relative addresses
 * swizzle alike). */
#if MMA_WGMMA
#ifndef MMA_WG_N
#define MMA_WG_N 128
#endif
#ifndef MMA_WG_BK
#define MMA_WG_BK 32
#endif
#ifndef MMA_WG_DEPTH
#define MMA_WG_DEPTH 0
#endif
#ifndef MMA_WG_SWIZZLE
#define MMA_WG_SWIZZLE 0
#endif
#ifndef MMA_WG_CTAS
#define MMA_WG_CTAS 0
#endif
#if MMA_WG_TF32
#define WG_EB 4    /* bytes an element: tf32 */
#define WG_PARTS 2 /* each operand's rows twice: big parts, small parts */
#else
#define WG_EB 2
#define WG_PARTS 1
#endif
#define WG_THREADS (MMA_BM / 64 * 128)
#define WG_ROWB (MMA_WG_BK * WG_EB)    /* bytes a row of a k-block */
#define WG_KC (WG_ROWB / 16)           /* 16-byte chunks a row of a block */
#define WG_KSTEPS (WG_ROWB / 32)       /* instructions along k a block */
#define WG_NI (MMA_BN / MMA_WG_N)      /* instructions a k-step, each warpgroup */
#define WG_ACC (MMA_WG_N / 2)          /* accumulators an instruction, each item */
#define WG_STAGE (WG_PARTS * (MMA_BM + MMA_BN) * WG_KC) /* uint4s a k-block */
#define WG_CHUNKS (WG_STAGE / WG_THREADS)
/* k-blocks copied ahead of the one multiplied */
#define WG_AHEAD (MMA_STAGES - 1 - MMA_WG_DEPTH)
#if MMA_BM % 64 || MMA_BN % MMA_WG_N || WG_STAGE % WG_THREADS ||             \
    WG_AHEAD < 1 || WG_ROWB % 32 || MMA_WG_DEPTH < 0 || MMA_WG_DEPTH > 1
#error "gemm_wgmma: MMA_BM a multiple of 64, MMA_BN of MMA_WG_N, one k-block ahead at least"
#endif

#if MMA_WG_SWIZZLE
/* the descriptor's layout type: 1 the 128-byte swizzle, 2 the 64-byte
 * one, 3 the 32-byte one; the rows' chunk index XORed with row >> shift */
#if WG_ROWB == 128
#define WG_LAYOUT 1
#define WG_SWZ_SHIFT 0
#elif WG_ROWB == 64
#define WG_LAYOUT 2
#define WG_SWZ_SHIFT 1
#elif WG_ROWB == 32
#define WG_LAYOUT 3
#define WG_SWZ_SHIFT 2
#else
#error "MMA_WG_SWIZZLE: k-blocks of 32, 64 or 128 bytes a row"
#endif
#define WG_LBO 16
#define WG_SBO (WG_ROWB * 8)
#else
#define WG_LAYOUT 0
#define WG_LBO 128
#define WG_SBO (WG_ROWB * 8)
#endif

/* The descriptor of the operand that starts at p. */
static ulong wg_desc(__local const uint4 *p) {
  uint addr = (uint)(ulong)p;
  return (ulong)((addr & 0x3ffff) >> 4) | ((ulong)(WG_LBO >> 4) << 16) |
         ((ulong)(WG_SBO >> 4) << 32) | ((ulong)WG_LAYOUT << 62);
}

/* Chunk e of a k-block, copied by consecutive work-items so that they
 * write consecutive addresses: row WG_ROW(e), chunk WG_COL(e), at uint4
 * WG_DST(e) of the stage. */
#if MMA_WG_SWIZZLE
#define WG_ROW(e) ((e) / WG_KC)
#define WG_COL(e) ((e) % WG_KC)
#define WG_DST(e)                                                              \
  (WG_ROW(e) * WG_KC + (WG_COL(e) ^ ((WG_ROW(e) >> WG_SWZ_SHIFT) & (WG_KC - 1))))
#else
/* core matrix (i, j): rows 8 i .. 8 i + 7, chunk j of each */
#define WG_ROW(e) ((e) / (8 * WG_KC) * 8 + (e) % 8)
#define WG_COL(e) ((e) / 8 % WG_KC)
#define WG_DST(e) (e)
#endif
#if MMA_WG_TF32
/* the stage's rows: A's big parts, A's small parts, B's big, B's small;
 * a packed row: kq uint4s of big parts, then kq of small ones */
#define WG_SRC_OF(p, rows, r, kb)                                              \
  ((p) + (long)((r) % (rows)) * 2 * kq + ((r) / (rows)) * kq + (kb) * WG_KC)
#else
#define WG_SRC_OF(p, rows, r, kb) ((p) + (long)(r) * kq + (kb) * WG_KC)
#endif
#define WG_SRC(e, kb)                                                          \
  (WG_ROW(e) < WG_PARTS * MMA_BM                                               \
       ? WG_SRC_OF(pa, MMA_BM, WG_ROW(e), kb) + WG_COL(e)                     \
       : WG_SRC_OF(pb, MMA_BN, WG_ROW(e) - WG_PARTS * MMA_BM, kb) +           \
             WG_COL(e))

/* The accumulators as operands of the placeholders. */
#define WG_F4(a, i) "+f"(a[i]), "+f"(a[i + 1]), "+f"(a[i + 2]), "+f"(a[i + 3])
#define WG_F16(a, i)                                                           \
  WG_F4(a, i), WG_F4(a, i + 4), WG_F4(a, i + 8), WG_F4(a, i + 12)
#define WG_F32(a, i) WG_F16(a, i), WG_F16(a, i + 16)
#define WG_F64(a, i) WG_F32(a, i), WG_F32(a, i + 32)
#define WG_F128(a, i) WG_F64(a, i), WG_F64(a, i + 64)
/* "%0 %1 ...": the operands a placeholder names, in tens. */
#define WG_UNITS " %0 %1 %2 %3 %4 %5 %6 %7 %8 %9"
#define WG_TEN(d)                                                              \
  " %" #d "0 %" #d "1 %" #d "2 %" #d "3 %" #d "4 %" #d "5 %" #d "6 %" #d     \
  "7 %" #d "8 %" #d "9"
#if MMA_WG_N == 64
#define WG_FACC(a) WG_F32(a, 0)
#define WG_NAMES WG_UNITS WG_TEN(1) WG_TEN(2) " %30 %31 %32 %33"
#elif MMA_WG_N == 128
#define WG_FACC(a) WG_F64(a, 0)
#define WG_NAMES                                                               \
  WG_UNITS WG_TEN(1) WG_TEN(2) WG_TEN(3) WG_TEN(4) WG_TEN(5)                   \
      " %60 %61 %62 %63 %64 %65"
#elif MMA_WG_N == 256
#define WG_FACC(a) WG_F128(a, 0)
#define WG_NAMES                                                               \
  WG_UNITS WG_TEN(1) WG_TEN(2) WG_TEN(3) WG_TEN(4) WG_TEN(5) WG_TEN(6)         \
      WG_TEN(7) WG_TEN(8) WG_TEN(9) WG_TEN(10) WG_TEN(11) WG_TEN(12)
#else
#error "MMA_WG_N: 64, 128 or 256"
#endif
#define WG_STR2(x) #x
#define WG_STR(x) WG_STR2(x)

#if CLT_MMA_PTX
/* Placeholders, replaced in the PTX (src/ops/wgmma_ptx.c):
 *   mma N  acc... da db   wgmma.mma_async m64nNk16, D += A B (the mov
 *                         after it goes too)
 *   tf32 N acc... da db   the same, m64nNk8 on tf32 operands
 *   hold                  nothing: ties the accumulators to its place, so
 *                         that the compiler moves no use of them across
 *                         the asynchronous product
 *   arrive / commit / wait D / proxy   wgmma.fence, wgmma.commit_group,
 *                         wgmma.wait_group D, fence.proxy.async */
#if MMA_WG_TF32
#define WG_KIND "tf32 "
#else
#define WG_KIND "mma "
#endif
#define WG_MMA(acc, sa, sb)                                                    \
  MMA_ASM("// CLT_WG " WG_KIND WG_STR(MMA_WG_N) WG_NAMES "\n\tmov.f32 %0, %0;" \
          : WG_FACC(acc)                                                       \
          : "l"(wg_desc(sa)), "l"(wg_desc(sb))                                 \
          : "memory")
#define WG_HOLD(acc) MMA_ASM("// CLT_WG hold" : WG_FACC(acc)::"memory")
#define WG_ARRIVE() MMA_ASM("// CLT_WG arrive" ::: "memory")
#define WG_COMMIT() MMA_ASM("// CLT_WG commit" ::: "memory")
#define WG_WAIT(d) MMA_ASM("// CLT_WG wait " #d ::: "memory")
#define WG_PROXY() MMA_ASM("// CLT_WG proxy" ::: "memory")
#define WG_COPY(dst, src) MMA_COPY16(dst, src)
#define WG_COPY_COMMIT() MMA_COMMIT()
#define WG_CTAS() MMA_ASM("// CLT_WG ctas " WG_STR(MMA_WG_CTAS) ::: "memory")
#define WG_COPY_WAIT()                                                         \
  MMA_ASM("cp.async.wait_group " WG_STR(WG_AHEAD_LESS1) ";" ::: "memory")
#if WG_AHEAD == 1
#define WG_AHEAD_LESS1 0
#elif WG_AHEAD == 2
#define WG_AHEAD_LESS1 1
#elif WG_AHEAD == 3
#define WG_AHEAD_LESS1 2
#elif WG_AHEAD == 4
#define WG_AHEAD_LESS1 3
#elif WG_AHEAD == 5
#define WG_AHEAD_LESS1 4
#else
#error "gemm_wgmma: 1 to 5 k-blocks ahead"
#endif
#else
/* The instruction in OpenCL C: item t of the warpgroup (lane l of warp w)
 * holds D[16 w + l / 4 + 8 ((i >> 1) & 1)][8 (i >> 2) + 2 (l % 4) + (i & 1)]
 * in acc[i]. The operands are read as the descriptors say: their layout
 * type and strides decoded, without swizzle row r, k kk at (r / 8) SBO +
 * (kk / E) LBO + (r % 8) 16 + (kk % E) B bytes from the start (B bytes an
 * element, E = 16 / B of them a core matrix's row); swizzled at
 * (r / 8) SBO + (r % 8) W + kk B, W = SBO / 8, with the bits 4.. of
 * the address (from the ring's start, aligned as the swizzle's period)
 * XORed with its bits 7... */
static float wg_operand(ulong desc, __local const uint4 *p,
                        __local const uint4 *ring, int r, int kk) {
  uint lbo = (uint)((desc >> 16) & 0x3fff) << 4,
       sbo = (uint)((desc >> 32) & 0x3fff) << 4;
  int layout = (int)(desc >> 62);
  uint at = (uint)(p - ring) * 16;
  /* elements a core matrix's row (16 bytes) */
  const int ce = 16 / WG_EB;
  if (layout == 0)
    at += (r / 8) * sbo + (kk / ce) * lbo + (r % 8) * 16 + (kk % ce) * WG_EB;
  else {
    at += (r / 8) * sbo + (r % 8) * (sbo / 8) + kk * WG_EB;
    uint mask = layout == 1 ? 7 : layout == 2 ? 3 : 1;
    at ^= ((at >> 7) & mask) << 4;
  }
#if MMA_WG_TF32
  /* tf32: the float's top 19 bits */
  return as_float(((__local const uint *)ring)[at / 4] & 0xffffe000u);
#else
  return vload_half(at / 2, (__local const half *)ring);
#endif
}

/* The emulated instruction's sums are written out, not loops: llvmpipe
 * (rusticl, Mesa 22.3) ends a work-item's loops after 65535 iterations
 * counted over all of them (wrong sums, no error), which a product of k
 * in the thousands passed with loops over k and every accumulator. One
 * call a loop iteration: POCL 3.1's LLVM 15 crashes on two (or on three
 * copies of the emulation in a k-step). */
#define WG_TERM(a, b, kk)                                                      \
  (wg_operand(d##a, a, ring, r, kk) * wg_operand(d##b, b, ring, c, kk))
#define WG_SUM8(a, b)                                                          \
  (WG_TERM(a, b, 0) + WG_TERM(a, b, 1) + WG_TERM(a, b, 2) +                    \
   WG_TERM(a, b, 3) + WG_TERM(a, b, 4) + WG_TERM(a, b, 5) +                    \
   WG_TERM(a, b, 6) + WG_TERM(a, b, 7))

#if MMA_WG_TF32
/* acc + the three products of 3xTF32 (big A at sa, its small parts at
 * sas; B's at sb and sbs) in the instructions' order, as the tensor
 * cores add them: As Bb, Ab Bs, Ab Bb, 8 of k each. */
static float wg_dot(float acc, ulong dsa, ulong dsas, ulong dsb, ulong dsbs,
                    __local const uint4 *sa, __local const uint4 *sas,
                    __local const uint4 *sb, __local const uint4 *sbs,
                    __local const uint4 *ring, int r, int c) {
  acc += WG_SUM8(sas, sb);
  acc += WG_SUM8(sa, sbs);
  return acc + WG_SUM8(sa, sb);
}

static void wg_mma_emulated(float *acc, __local const uint4 *sa,
                            __local const uint4 *sb,
                            __local const uint4 *ring, int t) {
  __local const uint4 *sas = sa + MMA_BM * WG_KC, *sbs = sb + MMA_BN * WG_KC;
  ulong dsa = wg_desc(sa), dsas = wg_desc(sas), dsb = wg_desc(sb),
        dsbs = wg_desc(sbs);
  int w = t / 32, l = t % 32;
  for (int i = 0; i < WG_ACC; i++) {
    int r = 16 * w + l / 4 + 8 * ((i >> 1) & 1);
    int c = 8 * (i >> 2) + 2 * (l % 4) + (i & 1);
    acc[i] = wg_dot(acc[i], dsa, dsas, dsb, dsbs, sa, sas, sb, sbs, ring, r,
                    c);
  }
}
#else
/* One accumulator's sum over the instruction's 16 halves of k. */
static float wg_dot(ulong dsa, ulong dsb, __local const uint4 *sa,
                    __local const uint4 *sb, __local const uint4 *ring, int r,
                    int c) {
  float s = WG_SUM8(sa, sb);
#define WG_TERM8(a, b, kk) WG_TERM(a, b, (kk) + 8)
  s += WG_TERM8(sa, sb, 0) + WG_TERM8(sa, sb, 1) + WG_TERM8(sa, sb, 2) +
       WG_TERM8(sa, sb, 3) + WG_TERM8(sa, sb, 4) + WG_TERM8(sa, sb, 5) +
       WG_TERM8(sa, sb, 6) + WG_TERM8(sa, sb, 7);
#undef WG_TERM8
  return s;
}

static void wg_mma_emulated(float *acc, __local const uint4 *sa,
                            __local const uint4 *sb,
                            __local const uint4 *ring, int t) {
  ulong dsa = wg_desc(sa), dsb = wg_desc(sb);
  int w = t / 32, l = t % 32;
  for (int i = 0; i < WG_ACC; i++) {
    int r = 16 * w + l / 4 + 8 * ((i >> 1) & 1);
    int c = 8 * (i >> 2) + 2 * (l % 4) + (i & 1);
    acc[i] += wg_dot(dsa, dsb, sa, sb, ring, r, c);
  }
}
#endif
#undef WG_SUM8
#undef WG_TERM
#define WG_MMA(acc, sa, sb) wg_mma_emulated(acc, sa, sb, ring, t)
#define WG_HOLD(acc)
#define WG_ARRIVE()
#define WG_COMMIT()
#define WG_WAIT(d)
#define WG_PROXY()
#define WG_COPY(dst, src) (*(dst) = *(src))
#define WG_COPY_COMMIT()
#define WG_COPY_WAIT()
#define WG_CTAS()
#endif

/* C = alpha A B^T + beta C on packed operands: the arguments of
 * gemm_mma_staged. */
__kernel __attribute__((reqd_work_group_size(WG_THREADS, 1, 1))) void
gemm_wgmma(int m, int n, int kq, float alpha, __global const uint4 *a,
           int a_off, long a_stride, __global const uint4 *b, int b_off,
           long b_stride, float beta, __global float *c, int c_off, int ldc,
           int stride_c) {
  /* aligned beyond the swizzle's period (512 bytes) */
  __local uint4 ring[MMA_STAGES * WG_STAGE] __attribute__((aligned(1024)));
  int lid = get_local_id(0), wg = lid / 128, t = lid % 128;
#if MMA_WG_CTAS
  WG_CTAS();
#endif
  int m0 = get_group_id(1) * MMA_BM, n0 = get_group_id(0) * MMA_BN;
  long batch = get_group_id(2);
  /* the offsets count f32 words, multiples of 4 */
  __global const uint4 *pa =
      a + a_off / 4 + batch * a_stride + (long)m0 * WG_PARTS * kq;
  __global const uint4 *pb =
      b + b_off / 4 + batch * b_stride + (long)n0 * WG_PARTS * kq;
  c += c_off + batch * stride_c;
  int blocks = kq / WG_KC;

  float acc[WG_NI][WG_ACC];
#pragma unroll
  for (int j = 0; j < WG_NI; j++)
#pragma unroll
    for (int i = 0; i < WG_ACC; i++) acc[j][i] = 0.0f;

  /* The first WG_AHEAD blocks, a copy group each. */
  for (int s = 0; s < WG_AHEAD; s++) {
    if (s < blocks) {
#pragma unroll
      for (int i = 0; i < WG_CHUNKS; i++) {
        int e = lid + i * WG_THREADS;
        WG_COPY(ring + s * WG_STAGE + WG_DST(e), WG_SRC(e, s));
      }
    }
    WG_COPY_COMMIT();
  }

  for (int kb = 0; kb < blocks; kb++) {
    WG_COPY_WAIT(); /* this item's copies of block kb have landed */
    WG_PROXY();     /* and are visible to the tensor cores' reads */
    /* Everyone's copies of block kb have landed, and everyone's products
     * of block kb - 1 - DEPTH are done: its stage takes the next block. */
    barrier(CLK_LOCAL_MEM_FENCE);
    int next = kb + WG_AHEAD;
    if (next < blocks) {
      __local uint4 *to = ring + (next % MMA_STAGES) * WG_STAGE;
#pragma unroll
      for (int i = 0; i < WG_CHUNKS; i++) {
        int e = lid + i * WG_THREADS;
        WG_COPY(to + WG_DST(e), WG_SRC(e, next));
      }
    }
    WG_COPY_COMMIT(); /* empty past the end: the wait above counts groups */
    __local const uint4 *sa = ring + (kb % MMA_STAGES) * WG_STAGE +
                              wg * 64 * WG_KC;
    __local const uint4 *sb = ring + (kb % MMA_STAGES) * WG_STAGE +
                              WG_PARTS * MMA_BM * WG_KC;
#pragma unroll
    for (int j = 0; j < WG_NI; j++) WG_HOLD(acc[j]);
    WG_ARRIVE();
#if CLT_MMA_PTX
#pragma unroll
#else
#pragma unroll 1
#endif
    for (int ks = 0; ks < WG_KSTEPS; ks++)
#if CLT_MMA_PTX
#pragma unroll
#else
#pragma unroll 1
#endif
      for (int j = 0; j < WG_NI; j++) {
        /* 32 bytes along k a step (two core matrices without swizzle,
         * a part of the row with); instruction j's columns */
        __local const uint4 *opa = sa + ks * (MMA_WG_SWIZZLE ? 2 : 16),
                            *opb = sb + j * MMA_WG_N * WG_KC +
                                   ks * (MMA_WG_SWIZZLE ? 2 : 16);
#if MMA_WG_TF32 && CLT_MMA_PTX
        /* 3xTF32: A B = As Bb + Ab Bs + Ab Bb (+ As Bs, below f32's
         * rounding), the small products first (emulated: the three in
         * one, wg_mma_emulated) */
#pragma unroll
        for (int part = 0; part < 3; part++)
          WG_MMA(acc[j], opa + (part == 0 ? MMA_BM * WG_KC : 0),
                 opb + (part == 1 ? MMA_BN * WG_KC : 0));
#else
        WG_MMA(acc[j], opa, opb);
#endif
      }
    WG_COMMIT();
#if MMA_WG_DEPTH == 1
    WG_WAIT(1);
#else
    WG_WAIT(0);
#endif
#pragma unroll
    for (int j = 0; j < WG_NI; j++) WG_HOLD(acc[j]);
  }
  WG_WAIT(0);
#pragma unroll
  for (int j = 0; j < WG_NI; j++) WG_HOLD(acc[j]);

  int r0 = m0 + wg * 64 + 16 * (t / 32) + (t % 32) / 4;
#pragma unroll
  for (int j = 0; j < WG_NI; j++)
#pragma unroll
    for (int i = 0; i < WG_ACC; i++) {
      int row = r0 + 8 * ((i >> 1) & 1);
      int col = n0 + j * MMA_WG_N + 8 * (i >> 2) + 2 * (t % 4) + (i & 1);
      if (row >= m || col >= n) continue;
      __global float *out = c + (long)row * ldc + col;
      float v = alpha * acc[j][i];
      *out = beta == 0.0f ? v : v + beta * *out;
    }
}
#endif /* MMA_WGMMA */
