/* Register-blocked fp32 GEMM kernels for devices where CLBlast's tiles
 * fit the products badly (src/ops/gemm_blocked.c): candidates of the
 * measured plans beside CLBlast's SGEMM, chosen only where they measure
 * faster and give the same numbers.
 *
 * C = alpha op(A) op(B) + beta C, a strided batch along dimension 2 of the
 * range; beta 0 does not read C. Two shapes of work:
 *
 * gemm_rows_MRxW (op(B) = B stored [k, n], contiguous along n; A either
 * way, as element strides): a work-item computes MR rows by W columns of
 * C, walking k with one row of B as W/VW vectors and each A value
 * broadcast: the product a CPU vectorises as its BLAS does. The last strip
 * of a row is moved back to end at n (its columns already written by the
 * strip before are skipped), so every load is a whole vector; n >= W. C
 * has a stride for its rows and one for its columns (vector stores where
 * the columns are adjacent), so that C^T = op(B)^T op(A)^T can be run
 * instead where op(A)^T is the operand stored along its rows (A [k, m]).
 * A's pointer steps by its k stride and the rows' offsets stay fixed: an
 * index computed from p each step was vectorised by POCL's LLVM into
 * 64-bit vector arithmetic and lane extracts inside the k loop (rows 6x16
 * on AVX2: 12 FMAs among ~30 other instructions; now 2 loads, 6
 * broadcasts, 12 FMAs and the pointer steps), 1.2-1.7x slower.
 *
 * gemm_dot_MRxNR (C = A B^T, A [m, k] and B [n, k], both contiguous along
 * k): a work-item computes MR x NR dot products VW (16 or 8: _v8) of k at
 * a time in vectors, summed across at the end; the last VW are loaded
 * ending at k with the lanes already summed masked out (k < VW: scalars).
 * epi 1 then adds bias[j] to C's column j, epi 2 also applies a ReLU, as
 * bias_add_rows would after it (a dense layer's forward: one launch
 * instead of two); epi 0 reads no bias.
 *
 * Both in vectors of 16 and of 8: a CPU whose registers hold 8 floats
 * (AVX2, 16 of them) keeps a 4x32 tile's partial sums in 16 registers and
 * spills the operands; 6x16 leaves room (the usual AVX2 SGEMM tile).
 *
 * Rows and columns past m or n are clamped for the loads (their results
 * are never stored). */

#define GEMM_STORE(ptr, value)                                                 \
  (*(ptr) = beta == 0.0f ? alpha * (value) : alpha * (value) + beta * *(ptr))

/* One body for gemm_rows_MRxW (KB past any k: the whole of k in one
 * walk) and for the k-blocked kernels below (blocks of KB, SYNC a barrier
 * after each). Items past m or n (a range rounded up to a work-group)
 * compute clamped values and store nothing. */
#define GEMM_ROWS_KERNEL(NAME, MR, NV, VW, KB, SYNC)                          \
  __kernel void NAME(int m, int n, int k, float alpha, float beta,             \
                     __global const float *a, int a_off, int a_si, int a_sp,   \
                     int a_batch, __global const float *b, int b_off, int ldb, \
                     int b_batch, __global float *c, int c_off, int c_si,      \
                     int c_sj, int c_batch) {                                  \
    int jw = get_global_id(0) * (NV * VW), i0 = get_global_id(1) * MR;         \
    int bi = get_global_id(2);                                                 \
    int j0 = min(jw, n - NV * VW);                                             \
    a += a_off + bi * a_batch;                                                 \
    b += b_off + bi * b_batch + j0;                                            \
    c += c_off + bi * c_batch + j0 * c_sj;                                     \
    float##VW acc[MR][NV];                                                     \
    int row[MR];                                                               \
    _Pragma("unroll") for (int r = 0; r < MR; r++) {                           \
      row[r] = min(i0 + r, m - 1) * a_si;                                      \
      _Pragma("unroll") for (int v = 0; v < NV; v++) acc[r][v] = 0.0f;         \
    }                                                                          \
    for (int p0 = 0; p0 < k; p0 += KB) {                                       \
      int steps = min(KB, k - p0);                                             \
      for (int p = 0; p < steps; p++) {                                        \
        float##VW bv[NV];                                                      \
        _Pragma("unroll") for (int v = 0; v < NV; v++) bv[v] =                 \
            vload##VW(v, b);                                                   \
        b += ldb;                                                              \
        _Pragma("unroll") for (int r = 0; r < MR; r++) {                       \
          float##VW av = (float##VW)(a[row[r]]);                               \
          _Pragma("unroll") for (int v = 0; v < NV; v++) acc[r][v] =           \
              fma(av, bv[v], acc[r][v]);                                       \
        }                                                                      \
        a += a_sp;                                                             \
      }                                                                        \
      SYNC;                                                                    \
    }                                                                          \
    if (jw >= n) return;                                                       \
    int skip = jw - j0; /* columns the strip before wrote */                   \
    _Pragma("unroll") for (int r = 0; r < MR; r++) {                           \
      if (i0 + r >= m) break;                                                  \
      __global float *cr = c + (i0 + r) * c_si;                                \
      if (skip == 0 && beta == 0.0f && c_sj == 1) {                            \
        _Pragma("unroll") for (int v = 0; v < NV; v++)                         \
            vstore##VW(alpha * acc[r][v], v, cr);                              \
      } else {                                                                 \
        float out[NV * VW];                                                    \
        _Pragma("unroll") for (int v = 0; v < NV; v++)                         \
            vstore##VW(acc[r][v], v, out);                                     \
        for (int j = skip; j < NV * VW; j++) GEMM_STORE(cr + j * c_sj, out[j]);\
      }                                                                        \
    }                                                                          \
  }

#define GEMM_ROWS(NAME, MR, NV, VW)                                            \
  GEMM_ROWS_KERNEL(NAME, MR, NV, VW, 0x40000000, )

GEMM_ROWS(gemm_rows_4x32, 4, 2, 16)
GEMM_ROWS(gemm_rows_8x32, 8, 2, 16)
GEMM_ROWS(gemm_rows_4x8, 4, 1, 8)
GEMM_ROWS(gemm_rows_6x16, 6, 2, 8)
GEMM_ROWS(gemm_rows_4x16, 4, 2, 8)

/* gemm_rows_MRxW_kbKB: gemm_rows for a long k. A work-group holds the row
 * blocks of one column strip (all of them where they are few, else 16;
 * src/ops/gemm_blocked.c) and walks k in blocks of KB with a barrier
 * after each: a CPU runtime runs a work-group's items one after another
 * between barriers, so the block of B's strip and of A that the group's
 * items read stays in the core's cache instead of being streamed from
 * memory again for each row block (POCL 3.1 on a 2-core Zen 3, TN 64 x
 * 288 x 7744: rows 6x16 12-29 GFLOP/s with POCL's own work-groups, as
 * slow as with the whole range as one group; rows 6x16 kb64 84-95). No
 * item returns early: the barrier needs them all. */
#define GEMM_ROWS_KB(NAME, MR, NV, VW, KB)                                     \
  GEMM_ROWS_KERNEL(NAME, MR, NV, VW, KB, barrier(CLK_LOCAL_MEM_FENCE))

GEMM_ROWS_KB(gemm_rows_6x16_kb64, 6, 2, 8, 64)
GEMM_ROWS_KB(gemm_rows_4x32_kb64, 4, 2, 16, 64)

#define GEMM_LANES16                                                           \
  (float16)(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, \
            11.0f, 12.0f, 13.0f, 14.0f, 15.0f)
#define GEMM_LANES8 (float8)(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f)
static float sum8(float8 v) {
  float4 b = v.lo + v.hi;
  return (b.x + b.y) + (b.z + b.w);
}

#define GEMM_DOT(NAME, MR, NR, VW)                                                 \
  __kernel void NAME(int m, int n, int k, float alpha, float beta,             \
                     __global const float *a, int a_off, int lda, int a_batch, \
                     __global const float *b, int b_off, int ldb, int b_batch, \
                     __global float *c, int c_off, int ldc, int c_batch,       \
                     __global const float *bias, int bias_off, int epi) {      \
    int j0 = get_global_id(0) * NR, i0 = get_global_id(1) * MR;                \
    int bi = get_global_id(2);                                                 \
    if (j0 >= n || i0 >= m) return;                                            \
    a += a_off + bi * a_batch;                                                 \
    b += b_off + bi * b_batch;                                                 \
    c += c_off + bi * c_batch;                                                 \
    __global const float *ar[MR], *br[NR];                                     \
    float##VW acc[MR][NR];                                                     \
    _Pragma("unroll") for (int r = 0; r < MR; r++) {                           \
      ar[r] = a + min(i0 + r, m - 1) * lda;                                    \
      _Pragma("unroll") for (int s = 0; s < NR; s++) acc[r][s] = 0.0f;         \
    }                                                                          \
    _Pragma("unroll") for (int s = 0; s < NR; s++) br[s] =                     \
        b + min(j0 + s, n - 1) * ldb;                                          \
    int p = 0;                                                                 \
    for (; p + VW <= k; p += VW) {                                             \
      float##VW av[MR], bv[NR];                                                \
      _Pragma("unroll") for (int r = 0; r < MR; r++) av[r] =                   \
          vload##VW(0, ar[r] + p);                                             \
      _Pragma("unroll") for (int s = 0; s < NR; s++) bv[s] =                   \
          vload##VW(0, br[s] + p);                                             \
      _Pragma("unroll") for (int r = 0; r < MR; r++)                           \
          _Pragma("unroll") for (int s = 0; s < NR; s++) acc[r][s] =           \
              fma(av[r], bv[s], acc[r][s]);                                    \
    }                                                                          \
    if (p < k && k >= VW) { /* the last VW, lanes before p masked */           \
      int##VW keep =                                                           \
          isgreaterequal(GEMM_LANES##VW, (float##VW)(float)(p - (k - VW)));    \
      float##VW bv[NR];                                                        \
      _Pragma("unroll") for (int s = 0; s < NR; s++) bv[s] =                   \
          vload##VW(0, br[s] + k - VW);                                        \
      _Pragma("unroll") for (int r = 0; r < MR; r++) {                         \
        float##VW av =                                                         \
            select((float##VW)0.0f, vload##VW(0, ar[r] + k - VW), keep);       \
        _Pragma("unroll") for (int s = 0; s < NR; s++) acc[r][s] =             \
            fma(av, bv[s], acc[r][s]);                                         \
      }                                                                        \
      p = k;                                                                   \
    }                                                                          \
    _Pragma("unroll") for (int r = 0; r < MR; r++) {                           \
      if (i0 + r >= m) break;                                                  \
      _Pragma("unroll") for (int s = 0; s < NR; s++) {                         \
        if (j0 + s < n) {                                                      \
          float t = sum##VW(acc[r][s]);                                        \
          for (int q = p; q < k; q++) t = fma(ar[r][q], br[s][q], t);          \
          __global float *cp = c + (i0 + r) * ldc + j0 + s;                    \
          GEMM_STORE(cp, t);                                                   \
          if (epi) { /* bias_add_rows' numbers, from the stored value */       \
            float v = *cp + bias[bias_off + j0 + s];                           \
            *cp = epi == 2 && !(v > 0.0f) ? 0.0f : v;                          \
          }                                                                    \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }

GEMM_DOT(gemm_dot_4x4, 4, 4, 16)
GEMM_DOT(gemm_dot_8x2, 8, 2, 16)
GEMM_DOT(gemm_dot_4x2_v8, 4, 2, 8)
GEMM_DOT(gemm_dot_3x3_v8, 3, 3, 8)
GEMM_DOT(gemm_dot_2x4_v8, 2, 4, 8)
