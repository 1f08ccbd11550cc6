/* Helpers shared by the programs of cl/; tools/embed_cl.py puts this file
 * in front of each of them. */

/* POCL on an x86 CPU without AVX-512 (it names the device
 * pthread-haswell-...) warns at every float16 passed to or returned from
 * a function that is not inlined (vload16, select and our own helpers):
 * "AVX vector argument of type 'float16' ... without 'avx512f' enabled
 * changes the ABI". Every caller and callee of a program is compiled
 * together for the one target, so no ABI is crossed: the warning says
 * nothing about the kernels, but it filled the build log of every program
 * that uses float16 (tests/test_runtime.c fails on any warning). Only
 * clang's x86 builds see this pragma. */
#if defined(__clang__) && defined(__x86_64__)
#pragma clang diagnostic ignored "-Wpsabi"
#endif

/* The items of the work-group: a power of two, CLT_WG (set by the host
 * in the build options) at most. Kernels whose host sizes their groups to
 * the work (ops.h clt_group_items) stride by it, not by CLT_WG. */
#define GROUP_ITEMS ((int)get_local_size(0))

/* The elements 0..n-1 of an element-wise kernel (runtime/runtime.h
 * clt_kernel_run_elems, which passes `run` as the kernel's last
 * argument): each work-item takes a run of `run` consecutive ones. One on
 * a GPU, whose neighbouring items must read neighbouring addresses; more
 * where the device's plan found runs faster (graph/plan.c "element
 * runs"): POCL runs a group's items as a loop, and with an item an
 * element gelu over 1.6 M floats took 1.8 times as long as with runs of
 * 64 (2-core EPYC, POCL 3.1). The same numbers either way: each element
 * is computed alone. */
#define FOR_RUN(i, n)                                                          \
  for (int i = run_start(n, run), i##_end = i + min(n - i, run); i < i##_end;  \
       i++)
static int run_start(int n, int run) {
  return (int)min((size_t)n, get_global_id(0) * (size_t)run);
}

/* The sum of v over the work-group (GROUP_ITEMS items, scratch CLT_WG
 * floats), returned to every item. Each tree step is fenced by a barrier:
 * POCL runs a group's items as a loop, so a missing barrier gives wrong
 * sums deterministically. */
static float group_sum(__local float *scratch, float v) {
  int lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = GROUP_ITEMS / 2; step > 0; step /= 2) {
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

/* Mixed precision's fp16 values kept in fp32 buffers (graph.c): x rounded
 * to the nearest half, ties to even, as vstore_half_rte then vload_half
 * would give, with no half buffer (a private half is not OpenCL C 1.2
 * without cl_khr_fp16). In the halves' normal range, the float's mantissa
 * keeps its top 10 bits, rounded to nearest even on the 13 dropped (a carry
 * moves into the exponent, as it should); below 2^-14 the halves are
 * multiples of 2^-24, and scaling by a power of two is exact; from 65520
 * on, a half overflows to infinity. Integer steps: libm's ilogb and ldexp
 * cost a CPU device a quarter of a mixed-precision step. Every case is
 * computed and one selected, no branch, so that CPU devices can vectorise
 * across work-items. */
static float round_to_half(float v) {
  uint u = as_uint(v), a = u & 0x7fffffffu, sign = u & 0x80000000u;
  uint normal = (a + 0xfffu + ((a >> 13) & 1u)) & ~0x1fffu;
  /* Below 2^-14: |v| 2^24 < 1024 rounded to an integer by adding and
   * taking away 1.5 2^23 (round to nearest even, as rint, which POCL
   * calls in libm one element at a time: the passes 2-4x slower). */
  float t = (as_float(a) * 0x1p24f + 0x1.8p23f) - 0x1.8p23f;
  uint small = as_uint(t * 0x1p-24f);
  float r = as_float(sign | (a >= 0x38800000u ? normal : small));
  r = a >= 0x477ff000u ? as_float(sign | 0x7f800000u) : r;
  return a >= 0x7f800000u ? v : r; /* infinity, NaN */
}

/* The bits of r as a half, r being one already (round_to_half's result):
 * integer steps and selects too (vstore_half_rte is slow on CPU
 * devices); the subnormals' scaling capped so that no case converts an
 * out-of-range float. */
static ushort half_bits(float r) {
  uint u = as_uint(r), a = u & 0x7fffffffu, sign = (u >> 16) & 0x8000u;
  uint small = (uint)(fmin(as_float(a), 0x1p-14f) * 0x1p24f);
  uint h = a >= 0x38800000u ? (a - 0x38000000u) >> 13 : small;
  h = a == 0x7f800000u ? 0x7c00u : h;
  h = a > 0x7f800000u ? 0x7e00u | ((a >> 13) & 0x3ffu) : h;
  return (ushort)(sign | h);
}

/* The value of the half whose bits are h, exactly (what vload_half
 * gives), in integer steps and selects: POCL converts vload_half one
 * element at a time, and turning mixed precision's fp16 copies back into
 * f32 took 13% of the CNN's step there. Normal halves move their exponent
 * and mantissa into place; subnormals are h's mantissa times 2^-24 (exact
 * in a float); infinities and NaNs keep their mantissa. */
static float half_value(ushort h) {
  uint sign = (uint)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu,
       m = h & 0x3ffu;
  uint normal = ((uint)(h & 0x7fffu) << 13) + 0x38000000u;
  uint small = as_uint((float)m * 0x1p-24f);
  uint bits = e == 0x1fu ? 0x7f800000u | (m << 13) : normal;
  return as_float(sign | (e == 0 ? small : bits));
}

/* The last store of a layer's output or of a gradient under mixed
 * precision (graph.c's clt_graph_out_round and clt_graph_grad_round):
 * the kernels that write one take ROUND16_PARAMS after their other
 * arguments and store through STORE16 with round16: 0 stores v as it is
 * (fp32, or the graph rounds afterwards); 1 stores v rounded to the
 * nearest half; 2 also writes the half's bits into h16 (the fp16 copy
 * kept for the backward pass, element for element). The same numbers as
 * a separate round_f16 or round_save_f16 pass, one pass over memory
 * fewer.
 *
 * round16 is a constant in each kernel: ROUND16_VARIANTS(NAME, (params),
 * (arguments, ROUND16_ARGS)) makes the kernels NAME, NAME_r16 and
 * NAME_s16 (modes 0, 1, 2; the host adds the mode to NAME's id), each
 * calling NAME_body, a ROUND16_BODY function taking the kernel's
 * parameters and round16. A mode passed at run time left POCL's
 * work-item loops scalar (batch norm's apply 1.4x slower in fp32, every
 * fused kernel slower than the separate passes in mixed precision).
 * ROUND16_ARGS ends the arguments with the round16 each kernel declares
 * (no variadic macro: OpenCL C 1.2 has none, and NVIDIA's compiler
 * refuses them).
 *
 * NAME is in the file's program; NAME_r16 and NAME_s16 are in its round16
 * program, the same file built with CLT_ROUND16_PROGRAM=1 (which leaves
 * out every other kernel: the rest of the file is within #if
 * !CLT_ROUND16_PROGRAM), built only when one of them is first used
 * (runtime/program.c). POCL compiles every kernel of a program when its
 * binary is taken for the cache (a third of a second each on a 2-core
 * EPYC): the fp32 sample CNN's first run compiled 86 variants it never
 * ran, 19 s of the 55 it spent compiling kernels. */
#ifndef CLT_ROUND16_PROGRAM
#define CLT_ROUND16_PROGRAM 0
#endif
#define ROUND16_PARAMS __global ushort *h16, int h16_off
#define ROUND16_ARGS h16, h16_off, round16
#define ROUND16_BODY static inline __attribute__((always_inline)) void
/* One kernel of the family: KNAME, its round16 MODE; DECL what it
 * declares first (ROUND16_SCRATCH or ROUND16_NO_SCRATCH), CALL its body's
 * call. */
#define ROUND16_KERNEL(KNAME, MODE, PARAMS, DECL, CALL)                        \
  __kernel void KNAME PARAMS {                                                 \
    DECL const int round16 = MODE;                                             \
    CALL;                                                                      \
  }
#if CLT_ROUND16_PROGRAM
#define ROUND16_FAMILY(NAME, PARAMS, DECL, CALL)                               \
  ROUND16_KERNEL(NAME##_r16, 1, PARAMS, DECL, CALL)                            \
  ROUND16_KERNEL(NAME##_s16, 2, PARAMS, DECL, CALL)
#else
#define ROUND16_FAMILY(NAME, PARAMS, DECL, CALL)                               \
  ROUND16_KERNEL(NAME, 0, PARAMS, DECL, CALL)
#endif
#define ROUND16_NO_SCRATCH
#define ROUND16_SCRATCH __local float scratch[CLT_WG];
#define ROUND16_VARIANTS(NAME, PARAMS, ARGS)                                   \
  ROUND16_FAMILY(NAME, PARAMS, ROUND16_NO_SCRATCH, NAME##_body ARGS)

/* ROUND16_VARIANTS for a kernel whose parameters include `int
 * accumulate` (add into the output instead of writing it): each kernel
 * runs its body in one of two branches, each declaring its own
 * `accumulate` constant (shadowing the parameter, so that ARGS pass it
 * on unchanged), so that the body sees 0 or 1 at compile time. POCL then
 * builds a work-item loop for each branch: with `accumulate ? dx[i] + g :
 * g` taken at run time its vectorised loop loaded dx whether or not it
 * was added (a select, not a branch), and a branch around the load inside
 * the loop was no faster (gelu's backward on the ConvNeXt sample, 2-core
 * EPYC, POCL 3.1: 3.3 ms a step, 3.1 with that branch, 2.5 with the
 * constant; ReLU's, a pass over memory, 4.7 and 4.5 ms on the wide
 * ResNet sample). The body is compiled twice, so only the activations'
 * backward use it, and add_f32 and scale_f32 (one operation each, cheap
 * to compile twice: scale_f32 0.60 against 0.66 ms a step in two rounds
 * of three); col2im, the pooling and batch-norm backward passes were
 * within 6% either way with it, and keep the select. */
#define ACC_BRANCHES(CALL)                                                     \
  if (accumulate) {                                                            \
    const int accumulate = 1;                                                  \
    CALL;                                                                      \
  } else {                                                                     \
    const int accumulate = 0;                                                  \
    CALL;                                                                      \
  }
#define ROUND16_ACC_VARIANTS(NAME, PARAMS, ARGS)                               \
  ROUND16_FAMILY(NAME, PARAMS, ROUND16_NO_SCRATCH,                             \
                 ACC_BRANCHES(NAME##_body ARGS))

/* The same for a body that reduces over its group (group_sum): each
 * kernel declares the scratch that OpenCL C allows in kernels only and
 * passes it on; ARGS begins with `scratch`. */
#define ROUND16_GROUP_VARIANTS(NAME, PARAMS, ARGS)                             \
  ROUND16_FAMILY(NAME, PARAMS, ROUND16_SCRATCH, NAME##_body ARGS)
#define STORE16(y, y_off, i, v)                                                \
  store16((y) + (y_off) + (i), (v), h16 + h16_off + (i), round16)
static void store16(__global float *y, float v, __global ushort *h,
                    int mode) {
  if (mode) {
    v = round_to_half(v);
    if (mode == 2) *h = half_bits(v);
  }
  *y = v;
}
/* The same over the n elements from y (from h in the copy) that a
 * work-item owns, once it has written them all (the kernels that add
 * into what they write, or store vectors): in its cache still. */
#define ROUND16_RUN(y, n, at)                                                  \
  round16_run((y), (n), h16 + h16_off + (at), round16)
static void round16_run(__global float *y, int n, __global ushort *h,
                        int mode) {
  if (!mode) return;
  for (int e = 0; e < n; e++) store16(y + e, y[e], h + e, mode);
}
