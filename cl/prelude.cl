/* Helpers shared by the programs of cl/; tools/embed_cl.py puts this file
 * in front of each of them. */

/* The sum of v over a work-group of exactly CLT_WG items (a power of two,
 * set by the host in the build options), returned to every item. Each tree
 * step is fenced by a barrier: POCL runs a group's items as a loop, so a
 * missing barrier gives wrong sums deterministically. */
static float group_sum(__local float *scratch, float v) {
  int lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = CLT_WG / 2; step > 0; step /= 2) {
    if (lid < step) scratch[lid] += scratch[lid + step];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float total = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE); /* scratch may be reused right after */
  return total;
}

/* The sum of a vector's 16 lanes, pairwise (the reductions that read runs
 * with vload16 keep 16 partial sums). */
static float sum16(float16 v) {
  float8 a = v.lo + v.hi;
  float4 b = a.lo + a.hi;
  return (b.x + b.y) + (b.z + b.w);
}

/* The tensor-core instruction for the programs built with -DCLT_MMA_PTX
 * (cl/mma.cl, and cl/igemm.cl's fp16 configurations): 1, inline PTX; 0,
 * the same done in OpenCL C by the warp's work-items (see cl/mma.cl). */
#ifdef CLT_MMA_PTX
#if CLT_MMA_PTX
/* The inline assembly's spelling: `asm` is what NVIDIA's OpenCL compiler
 * was seen to take; a clang in strict OpenCL mode knows only `__asm__`.
 * The probe tries CLT_MMA_ASM=1, then 2. */
#if CLT_MMA_ASM == 2
#define MMA_ASM __asm__ __volatile__
#else
#define MMA_ASM asm volatile
#endif
/* d = a b + c on one 16 x 8 x 16 tile, the warp's 32 work-items together. */
#define MMA_16816(d, a, b, scratch, lane)                                      \
  MMA_ASM("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "           \
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"     \
               : "=f"((d)[0]), "=f"((d)[1]), "=f"((d)[2]), "=f"((d)[3])        \
               : "r"((a)[0]), "r"((a)[1]), "r"((a)[2]), "r"((a)[3]),           \
                 "r"((b)[0]), "r"((b)[1]), "f"((d)[0]), "f"((d)[1]),           \
                 "f"((d)[2]), "f"((d)[3]))
#else
/* The instruction in OpenCL C. Lane l = 4 g + t of a warp holds
 *   a[0] = A[g][2t, 2t+1]     a[1] = A[g+8][2t, 2t+1]
 *   a[2] = A[g][2t+8, 2t+9]   a[3] = A[g+8][2t+8, 2t+9]
 *   b[0] = B[2t, 2t+1][g]     b[1] = B[2t+8, 2t+9][g]
 *   d[0..3] = D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1]
 * two halves a word, the lower index in the low 16 bits. Every lane
 * publishes its words, then computes its four sums from the whole tile. */
static void mma_emulated(float *d, const uint *a, const uint *b,
                         __local uint *scratch, int lane) {
  __local uint *mine = scratch + lane * 6;
  for (int i = 0; i < 4; i++) mine[i] = a[i];
  mine[4] = b[0];
  mine[5] = b[1];
  barrier(CLK_LOCAL_MEM_FENCE);
  __local const half *h = (__local const half *)scratch;
  int g = lane >> 2, t = lane & 3;
  for (int q = 0; q < 4; q++) {
    int row = g + (q >> 1) * 8, col = 2 * t + (q & 1);
    float s = d[q];
    for (int kk = 0; kk < 16; kk++) {
      int a_lane = (row & 7) * 4 + ((kk & 7) >> 1);
      int a_word = (row >> 3) + 2 * (kk >> 3);
      int b_lane = col * 4 + ((kk & 7) >> 1);
      int b_word = 4 + (kk >> 3);
      s += vload_half((a_lane * 6 + a_word) * 2 + (kk & 1), h) *
           vload_half((b_lane * 6 + b_word) * 2 + (kk & 1), h);
    }
    d[q] = s;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}
#define MMA_16816(d, a, b, scratch, lane) mma_emulated(d, a, b, scratch, lane)
#endif

/* A warp's fragments from local tiles of halves, k along each row (ld
 * words a row): lane l = 4 g + t loads the A piece whose row g word t p
 * points at (rows g and g+8, words t and t+4) and the B piece likewise
 * (row g, words t and t+4), as MMA_16816 takes them. */
static void mma_load_a(uint *fa, __local const uint *p, int ld) {
  fa[0] = p[0];
  fa[1] = p[8 * ld];
  fa[2] = p[4];
  fa[3] = p[8 * ld + 4];
}
static void mma_load_b(uint *fb, __local const uint *p) {
  fb[0] = p[0];
  fb[1] = p[4];
}
#endif
