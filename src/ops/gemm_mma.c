/* fp16 products with fp32 sums on tensor cores (gemm_mma.h, cl/mma.cl). */
#include "ops/gemm_mma.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "ops/gemm_tuning.h"
#include "ops/wgmma_ptx.h"

/* The block's tile of C and its warps (cl/mma.cl's MMA_BM, MMA_BN, MMA_WM,
 * MMA_WN): small tiles for the small products of split-K and narrow
 * layers, larger ones for wide products. stages > 0: the staged form
 * (gemm_mma_staged, its operands packed first) with a ring of up to that
 * many k-blocks, fewer where the device's local memory is smaller.
 * wg_n > 0: the warpgroup form (gemm_wgmma, Hopper only: a warpgroup of
 * 128 work-items a 64-row slice of the tile; wm and wn only build the
 * program's other kernels) with
 * instructions m64 x wg_n x 16, k-blocks of wg_bk, `depth` k-blocks'
 * products left running while the next starts, its local memory swizzled
 * or not, registers for `ctas` blocks a multiprocessor asked for ("x2").
 * tf32: the warpgroup form's 3xTF32 (fp32 products, cl/mma.cl's
 * MMA_WG_TF32; k-blocks of wg_bk tf32, each operand twice: big and small
 * parts), the entries from CLT_FP16_CONFIGS on. */
static const struct {
  const char *name;
  int bm, bn, wm, wn, stages;
  bool ldm; /* fragments by ldmatrix where the ring travels by cp.async */
  int wg_n, wg_bk, depth;
  bool swizzle; /* the warpgroup form's swizzled layout ("plain": without) */
  int ctas;     /* the warpgroup form's blocks a multiprocessor asked for */
  bool tf32;
} configs[CLT_MMA_CONFIGS] = {
    {"64x64", 64, 64, 2, 2, 0, false, 0, 0, 0, false, 0, false},
    {"128x64", 128, 64, 2, 2, 0, false, 0, 0, 0, false, 0, false},
    {"128x128", 128, 128, 2, 4, 0, false, 0, 0, 0, false, 0, false},
    {"64x128 ring", 64, 128, 2, 2, 3, false, 0, 0, 0, false, 0, false},
    {"128x128 ring", 128, 128, 2, 2, 3, false, 0, 0, 0, false, 0, false},
    {"128x128x8 ring", 128, 128, 2, 4, 3, false, 0, 0, 0, false, 0, false},
    {"64x128 ring ldm", 64, 128, 2, 2, 3, true, 0, 0, 0, false, 0, false},
    {"128x128 ring ldm", 128, 128, 2, 2, 3, true, 0, 0, 0, false, 0, false},
    {"128x256 ring ldm", 128, 256, 2, 4, 3, true, 0, 0, 0, false, 0, false},
    {"128x128 wgmma plain", 128, 128, 2, 2, 3, false, 128, 32, 0, false, 0, false},
    {"64x128 wgmma", 64, 128, 2, 2, 4, false, 128, 32, 1, true, 0, false},
    {"128x128 wgmma", 128, 128, 2, 2, 3, false, 128, 32, 0, true, 0, false},
    {"128x128 wgmma k16", 128, 128, 2, 2, 6, false, 128, 16, 1, true, 0, false},
    {"128x128 wgmma k16 x2", 128, 128, 2, 2, 6, false, 128, 16, 1, true, 2, false},
    {"64x256 wgmma k16", 64, 256, 2, 2, 4, false, 256, 16, 1, true, 0, false},
    {"128x256 wgmma k16", 128, 256, 2, 2, 4, false, 256, 16, 1, true, 0, false},
    {"64x128 wgmma k64", 64, 128, 2, 2, 2, false, 128, 64, 0, true, 0, false},
    /* 3xTF32 (CLT_TF32X3_CONFIGS): 48 KB rings */
    {"3xtf32 128x128", 128, 128, 2, 2, 3, false, 128, 8, 0, true, 0, true},
    {"3xtf32 128x128 d1", 128, 128, 2, 2, 3, false, 128, 8, 1, true, 0, true},
    {"3xtf32 64x128", 64, 128, 2, 2, 4, false, 128, 8, 1, true, 0, true},
    {"3xtf32 64x128 k16", 64, 128, 2, 2, 2, false, 128, 16, 0, true, 0, true},
    {"3xtf32 128x256", 128, 256, 2, 2, 2, false, 256, 8, 0, true, 0, true},
    {"3xtf32 64x64", 64, 64, 2, 2, 6, false, 64, 8, 1, true, 0, true},
};

/* Work-items a block of configuration i. */
static int config_threads(int i) {
  return configs[i].wg_n ? configs[i].bm / 64 * 128
                         : configs[i].wm * configs[i].wn * 32;
}

/* A k-block of the staged form: 32 halves a row of A and B. */
#define RING_ROW_BYTES 64
/* The staged form's k-block (cl/mma.cl) and the tiles the packed
 * operands are rounded up to (the warpgroup form's k-block where larger). */
#define STAGED_BK 32

typedef struct clt_mma_state {
  clt_fp16_route route;
  int asm_form; /* cl/mma.cl's CLT_MMA_ASM: the spelling that built */
  char why[512];
  cl_program programs[CLT_MMA_CONFIGS];
  cl_kernel kernels[CLT_MMA_CONFIGS];
  cl_kernel packs[CLT_MMA_CONFIGS]; /* the staged form's mma_pack */
  int async[CLT_MMA_CONFIGS];       /* built with cp.async (PTX) */
  bool failed[CLT_MMA_CONFIGS];     /* a staged form that did not build */
  char failed_why[CLT_MMA_CONFIGS][256];
  bool checked[CLT_MMA_CONFIGS]; /* a 3xTF32 one's accuracy checked */
  clt_tensor *packed; /* the staged form's fp16 operands, grown on demand */
  int wgmma;          /* 0 not asked yet, 1 yes, 2 no (why in wgmma_why) */
  char wgmma_why[160];
} clt_mma_state;

CLT_API const char *clt_fp16_config_name(int config) {
  return config >= 0 && config < CLT_FP16_CONFIGS ? configs[config].name : "?";
}

CLT_API const char *clt_tf32x3_config_name(int config) {
  return config >= 0 && config < CLT_TF32X3_CONFIGS
             ? configs[CLT_MMA_TF32X3(config)].name
             : "?";
}

const char *clt_mma_config_name(int config) {
  return config >= 0 && config < CLT_MMA_CONFIGS ? configs[config].name : "?";
}

bool clt_mma_config_is_tf32x3(int config) {
  return config >= 0 && config < CLT_MMA_CONFIGS && configs[config].tf32;
}

/* The GEMM state's destructor for ours (gemm_tuning.h). */
static void state_free(void *p) {
  clt_mma_state *state = p;
  if (!state) return;
  for (int i = 0; i < CLT_MMA_CONFIGS; i++) {
    if (state->kernels[i]) clReleaseKernel(state->kernels[i]);
    if (state->packs[i]) clReleaseKernel(state->packs[i]);
    if (state->programs[i]) clReleaseProgram(state->programs[i]);
  }
  clt_tensor_destroy(state->packed);
  free(state);
}

/* The local memory configuration i needs with `stages` k-blocks in its
 * ring (the staged form; the emulated instruction's scratch included). */
static uint64_t ring_bytes(const clt_mma_state *st, int i, int stages) {
  if (configs[i].wg_n) /* halves, or tf32 big and small parts */
    return (uint64_t)stages * (configs[i].bm + configs[i].bn) *
           configs[i].wg_bk * (configs[i].tf32 ? 8 : 2);
  uint64_t scratch = st->route == CLT_FP16_MMA_PTX
                         ? 0
                         : (uint64_t)configs[i].wm * configs[i].wn * 32 * 6 * 4;
  return (uint64_t)stages * (configs[i].bm + configs[i].bn) * RING_ROW_BYTES +
         scratch;
}

/* The ring's k-blocks for configuration i on this device: as many as the
 * configuration asks that fit its local memory; 0 where two do not. */
static int ring_stages(const clt_context *ctx, const clt_mma_state *st,
                       int i) {
  /* the warpgroup form copies stages - 1 - depth blocks ahead, one at least */
  for (int s = configs[i].stages; s >= 2 + configs[i].depth; s--)
    if (ring_bytes(st, i, s) <= ctx->info.local_mem_bytes) return s;
  return 0;
}

#define CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001

/* Whether the warpgroup form can run here: emulated anywhere; as PTX only
 * on compute capability 9.0 (sm_90a, the one target with wgmma). */
static bool wgmma_allowed(const clt_context *ctx, clt_mma_state *st) {
  if (st->wgmma == 0) {
    cl_uint major = 0, minor = 0;
    st->wgmma = 1;
    if (st->route == CLT_FP16_MMA_PTX &&
        (clGetDeviceInfo(ctx->device, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV,
                         sizeof major, &major, NULL) != CL_SUCCESS ||
         clGetDeviceInfo(ctx->device, CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV,
                         sizeof minor, &minor, NULL) != CL_SUCCESS)) {
      st->wgmma = 2;
      snprintf(st->wgmma_why, sizeof st->wgmma_why,
               "wgmma needs an NVIDIA GPU of compute capability 9.0, and "
               "this device reports none");
    } else if (st->route == CLT_FP16_MMA_PTX && (major != 9 || minor != 0)) {
      st->wgmma = 2;
      snprintf(st->wgmma_why, sizeof st->wgmma_why,
               "wgmma needs compute capability 9.0 (sm_90a), this device "
               "has %u.%u",
               (unsigned)major, (unsigned)minor);
    }
  }
  return st->wgmma == 1;
}

bool clt_mma_config_usable(clt_context *ctx, int config) {
  clt_fp16_route route;
  if (config < 0 || config >= CLT_MMA_CONFIGS ||
      clt_fp16_route_get(ctx, &route, NULL) != CLT_OK ||
      route == CLT_FP16_SGEMM)
    return false;
  clt_mma_state *st = clt_gemm_state_get(ctx)->mma;
  return !st->failed[config] &&
         (!configs[config].wg_n || wgmma_allowed(ctx, st)) &&
         (configs[config].stages == 0 || ring_stages(ctx, st, config) > 0);
}

static void config_form(clt_context *ctx, int config, char *buf,
                        size_t len) {
  clt_fp16_route route;
  snprintf(buf, len, "%s", "?");
  if (config < 0 || config >= CLT_MMA_CONFIGS ||
      clt_fp16_route_get(ctx, &route, NULL) != CLT_OK ||
      route == CLT_FP16_SGEMM)
    return;
  const clt_mma_state *st = clt_gemm_state_get(ctx)->mma;
  if (configs[config].stages == 0)
    snprintf(buf, len, "tiles through registers, one k-block");
  else if (st->failed[config])
    snprintf(buf, len, "not usable: %s", st->failed_why[config]);
  else if (!st->kernels[config])
    snprintf(buf, len, "not built yet");
  else if (configs[config].wg_n)
    snprintf(buf, len,
             "%swgmma m64n%dk%d%s%s from a ring of %d %sk-blocks of %d, "
             "copied by %s, %s",
             configs[config].tf32 ? "3x " : "", configs[config].wg_n,
             configs[config].tf32 ? 8 : 16,
             configs[config].tf32 ? " on tf32 pairs" : "",
             st->route == CLT_FP16_MMA_PTX ? "" : " (emulated)",
             ring_stages(ctx, st, config),
             configs[config].swizzle ? "swizzled " : "",
             configs[config].wg_bk,
             st->async[config] ? "cp.async" : "registers",
             configs[config].depth ? "one block's products left running"
                                   : "each block's products finished first");
  else
    snprintf(buf, len, "a ring of %d k-blocks, copied by %s%s",
             ring_stages(ctx, st, config),
             st->async[config] ? "cp.async" : "registers",
             configs[config].ldm && st->async[config]
                 ? ", fragments by ldmatrix"
                 : "");
}

CLT_API void clt_fp16_config_form(clt_context *ctx, int config, char *buf,
                                  size_t len) {
  if (config < 0 || config >= CLT_FP16_CONFIGS)
    snprintf(buf, len, "%s", "?");
  else
    config_form(ctx, config, buf, len);
}

CLT_API void clt_tf32x3_config_form(clt_context *ctx, int config, char *buf,
                                    size_t len) {
  if (config < 0 || config >= CLT_TF32X3_CONFIGS)
    snprintf(buf, len, "%s", "?");
  else
    config_form(ctx, CLT_MMA_TF32X3(config), buf, len);
}

static clt_status build_one(clt_context *ctx, clt_mma_state *st, int i,
                            int stages, int async) {
  char extra[300];
  int n = snprintf(extra, sizeof extra,
                   "-DCLT_MMA_PTX=%d -DCLT_MMA_ASM=%d -DMMA_BM=%d -DMMA_BN=%d "
                   "-DMMA_WM=%d -DMMA_WN=%d -DMMA_STAGES=%d -DCLT_MMA_ASYNC=%d "
                   "-DCLT_MMA_LDMATRIX=%d",
                   st->route == CLT_FP16_MMA_PTX ? 1 : 0, st->asm_form,
                   configs[i].bm, configs[i].bn, configs[i].wm, configs[i].wn,
                   stages, async, configs[i].ldm && async);
  bool wg = configs[i].wg_n > 0;
  if (wg)
    snprintf(extra + n, sizeof extra - (size_t)n,
             " -DMMA_WGMMA=1 -DMMA_WG_N=%d -DMMA_WG_BK=%d -DMMA_WG_DEPTH=%d "
             "-DMMA_WG_SWIZZLE=%d -DMMA_WG_CTAS=%d -DMMA_WG_TF32=%d",
             configs[i].wg_n, configs[i].wg_bk, configs[i].depth,
             configs[i].swizzle, configs[i].ctas, configs[i].tf32);
  if (wg && st->route == CLT_FP16_MMA_PTX)
    CLT_TRY(clt_program_build_patched(ctx, "mma", extra, CLT_WGMMA_PATCH_TAG,
                                      clt_wgmma_patch_ptx, &st->programs[i]));
  else
    CLT_TRY(clt_program_build_extra(ctx, "mma", extra, &st->programs[i]));
  const char *names[2] = {wg           ? "gemm_wgmma"
                          : stages > 0 ? "gemm_mma_staged"
                                       : "gemm_mma",
                          "mma_pack"};
  cl_kernel *out[2] = {&st->kernels[i], &st->packs[i]};
  for (int j = 0; j < (stages > 0 ? 2 : 1); j++) {
    cl_int rc;
    *out[j] = clCreateKernel(st->programs[i], names[j], &rc);
    if (rc != CL_SUCCESS) {
      *out[j] = NULL;
      return clt_ctx_cl_fail(ctx, rc, names[j]);
    }
  }
  st->async[i] = async;
  return CLT_OK;
}

/* Builds configuration i of the route's kernel (once). The staged form
 * tries cp.async first on the tensor-core route, then copies through
 * registers; one that builds neither way, or whose ring does not fit the
 * device's local memory, is refused from then on (CLT_ERR_UNSUPPORTED). */
static clt_status build_config(clt_context *ctx, clt_mma_state *st, int i) {
  if (st->kernels[i]) return CLT_OK;
  if (configs[i].stages == 0) return build_one(ctx, st, i, 0, 0);
  if (configs[i].wg_n && !wgmma_allowed(ctx, st) && !st->failed[i]) {
    st->failed[i] = true;
    snprintf(st->failed_why[i], sizeof st->failed_why[i], "%s",
             st->wgmma_why);
  }
  int stages = ring_stages(ctx, st, i);
  if (stages == 0 && !st->failed[i]) {
    st->failed[i] = true;
    snprintf(st->failed_why[i], sizeof st->failed_why[i],
             "its ring of two k-blocks needs %llu bytes of local memory, the "
             "device has %llu",
             (unsigned long long)ring_bytes(st, i, 2),
             (unsigned long long)ctx->info.local_mem_bytes);
  }
  /* the warpgroup form has no copies through registers on the GPU */
  int last = configs[i].wg_n && st->route == CLT_FP16_MMA_PTX ? 1 : 0;
  for (int async = st->route == CLT_FP16_MMA_PTX;
       !st->failed[i] && async >= last; async--) {
    clt_status s = build_one(ctx, st, i, stages, async);
    if (s == CLT_OK) return CLT_OK;
    if (st->kernels[i]) clReleaseKernel(st->kernels[i]);
    if (st->packs[i]) clReleaseKernel(st->packs[i]);
    if (st->programs[i]) clReleaseProgram(st->programs[i]);
    st->kernels[i] = st->packs[i] = NULL;
    st->programs[i] = NULL;
    if (s != CLT_ERR_BUILD) return s;
    if (async == last) {
      char line[200];
      snprintf(line, sizeof line, "%s", clt_context_last_error(ctx));
      char *nl = strchr(line, '\n');
      if (nl) *nl = '\0';
      st->failed[i] = true;
      snprintf(st->failed_why[i], sizeof st->failed_why[i],
               "it did not build: %s", line);
    }
    clt_err_clear(&ctx->err);
  }
  return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED,
                      "gemm_mma: tile configuration %s is not usable on %s: %s",
                      configs[i].name, ctx->info.name, st->failed_why[i]);
}

static clt_status launch(clt_context *ctx, cl_kernel kernel, int config,
                         clt_transpose ta, clt_transpose tb, int64_t m,
                         int64_t n, int64_t k, float alpha,
                         const clt_tensor *a, int64_t lda, int64_t stride_a,
                         const clt_tensor *b, int64_t ldb, int64_t stride_b,
                         float beta, clt_tensor *c, int64_t ldc,
                         int64_t stride_c, int64_t batch) {
  int threads = configs[config].wm * configs[config].wn * 32;
  size_t global[3] = {
      (size_t)((n + configs[config].bn - 1) / configs[config].bn) * threads,
      (size_t)((m + configs[config].bm - 1) / configs[config].bm),
      (size_t)batch};
  size_t local[3] = {(size_t)threads, 1, 1};
  const clt_karg args[] = {
      KI(ta == CLT_TRANS), KI(tb == CLT_TRANS), KI(m), KI(n), KI(k),
      KF(alpha), KT(a), KI(lda), KI(stride_a), KT(b), KI(ldb), KI(stride_b),
      KF(beta), KT(c), KI(ldc), KI(stride_c)};
  return clt_kernel_run_named(ctx, kernel, "gemm_mma", 3, global, local, args,
                              (int)(sizeof args / sizeof args[0]));
}

static int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/* One operand of a pack: `rows` x `cols` of op(src) (trans: src stored
 * cols x rows), rows_p rows packed, `batches` of them. */
typedef struct pack_operand {
  bool trans;
  int64_t rows, rows_p;
  const clt_tensor *src;
  int64_t ld, stride, batches;
} pack_operand;

/* Whether an operand's stored rows all start at multiples of 4 floats
 * (mma_pack's 16-byte loads; buffers start aligned). */
static bool rows_aligned(const pack_operand *o) {
  return o->ld % 4 == 0 && o->stride % 4 == 0 && o->src->offset % 4 == 0;
}

/* Both operands into the packed buffer, in one launch: a's batches at 0,
 * b's at `b_at` halves, each batch rows_p x cols_p halves (3xTF32: twice
 * as many). */
static clt_status pack(clt_context *ctx, cl_kernel kernel, const pack_operand *a,
                       const pack_operand *b, int64_t cols, int64_t cols_p,
                       clt_tensor *packed, int64_t b_at) {
  int64_t rows_p = a->rows_p > b->rows_p ? a->rows_p : b->rows_p;
  size_t global[3] = {(size_t)(cols_p + 63) / 64 * 32, (size_t)rows_p / 32 * 8,
                      (size_t)(a->batches + b->batches)};
  size_t local[3] = {32, 8, 1};
  const clt_karg args[] = {
      KI(a->batches), KI(cols), KI(cols_p),
      KI(a->trans), KI(rows_aligned(a)), KI(a->rows), KI(a->rows_p),
      KT(a->src), KI(a->ld), KI(a->stride),
      KI(b->trans), KI(rows_aligned(b)), KI(b->rows), KI(b->rows_p),
      KT(b->src), KI(b->ld), KI(b->stride),
      KT(packed), KI(b_at / 8)};
  return clt_kernel_run_named(ctx, kernel, "mma_pack", 3, global, local, args,
                              (int)(sizeof args / sizeof args[0]));
}

/* The staged form: op(A) and op(B)^T packed as fp16 into the state's
 * buffer, then the ring kernel. */
static clt_status launch_staged(clt_context *ctx, clt_mma_state *st,
                                int config, clt_transpose ta, clt_transpose tb,
                                int64_t m, int64_t n, int64_t k, float alpha,
                                const clt_tensor *a, int64_t lda,
                                int64_t stride_a, const clt_tensor *b,
                                int64_t ldb, int64_t stride_b, float beta,
                                clt_tensor *c, int64_t ldc, int64_t stride_c,
                                int64_t batch) {
  int bm = configs[config].bm, bn = configs[config].bn;
  int64_t mp = round_up(m, bm), np = round_up(n, bn),
          kp = round_up(k, configs[config].wg_bk > STAGED_BK
                               ? configs[config].wg_bk
                               : STAGED_BK);
  /* halves a packed element takes: 3xTF32's two floats are 4 */
  int64_t hpe = configs[config].tf32 ? 4 : 1;
  /* a stride of 0 (one operand for every batch) is packed once */
  int64_t batches_a = stride_a ? batch : 1, batches_b = stride_b ? batch : 1;
  int64_t halves_a = batches_a * mp * kp * hpe,
          halves = halves_a + batches_b * np * kp * hpe;
  if (halves > INT_MAX || (uint64_t)halves * 2 > ctx->info.max_alloc_bytes)
    return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED,
                        "gemm_mma: tile configuration %s would pack %lld "
                        "halves (more than one buffer may hold)",
                        configs[config].name, (long long)halves);
  if (!st->packed || st->packed->numel * 2 < halves) {
    clt_tensor_destroy(st->packed);
    st->packed = NULL;
    int64_t words = halves / 2;
    CLT_TRY(clt_tensor_create(ctx, CLT_F32, 1, &words, &st->packed));
  }
  const pack_operand pa_op = {ta == CLT_TRANS, m, mp, a, lda, stride_a,
                              batches_a},
                     pb_op = {tb == CLT_NO_TRANS, n, np, b, ldb, stride_b,
                              batches_b};
  CLT_TRY(pack(ctx, st->packs[config], &pa_op, &pb_op, k, kp, st->packed,
               halves_a));
  int threads = config_threads(config);
  size_t global[3] = {(size_t)(np / bn) * threads, (size_t)(mp / bm),
                      (size_t)batch};
  size_t local[3] = {(size_t)threads, 1, 1};
  /* the operands as uint4s (8 halves) */
  clt_tensor pa = clt_tensor_slice_1d(st->packed, 0, halves_a / 2);
  clt_tensor pb = clt_tensor_slice_1d(st->packed, halves_a / 2,
                                      (halves - halves_a) / 2);
  /* kq: uint4s a packed row (3xTF32: of its big parts, then as many of
   * small ones) */
  const clt_karg args[] = {
      KI(m), KI(n), KI(configs[config].tf32 ? kp / 4 : kp / 8), KF(alpha),
      KT(&pa), KU(stride_a ? mp * kp * hpe / 8 : 0), KT(&pb),
      KU(stride_b ? np * kp * hpe / 8 : 0), KF(beta), KT(c), KI(ldc),
      KI(stride_c)};
  return clt_kernel_run_named(ctx, st->kernels[config],
                              configs[config].wg_n ? "gemm_wgmma"
                                                   : "gemm_mma_staged",
                              3,
                              global, local, args,
                              (int)(sizeof args / sizeof args[0]));
}

/* The probe's product: odd sizes that cut every tile, both transposes of
 * B (NN and NT are the forward's and the weight gradient's). */
#define PROBE_M 70
#define PROBE_N 45
#define PROBE_K 77

static clt_status probe_product(clt_context *ctx, clt_mma_state *st,
                                int config, double *error);

/* 3xTF32 within this of the products' magnitudes on the probe's product:
 * f32's rounding of 77 sums (the emulated kernel: 1.2e-7 here); one tf32
 * product alone (the small parts lost) gives 1e-4 and more. */
#define TF32X3_PROBE_TOL 2e-6

/* A 3xTF32 configuration's first run checks its numbers on this device:
 * a tensor core that rounds otherwise than the PTX ISA says would make
 * it less accurate than f32, and then it is refused from then on. */
static clt_status check_tf32x3(clt_context *ctx, clt_mma_state *st,
                               int config) {
  if (!configs[config].tf32) return CLT_OK;
  if (!st->checked[config]) {
    double error = 0.0;
    CLT_TRY(probe_product(ctx, st, config, &error));
    st->checked[config] = true;
    if (!(error <= TF32X3_PROBE_TOL)) {
      st->failed[config] = true;
      snprintf(st->failed_why[config], sizeof st->failed_why[config],
               "its error on a %dx%dx%d check, %.3g of the products' "
               "magnitudes, is above f32's (%.0e)",
               PROBE_M, PROBE_N, PROBE_K, error, TF32X3_PROBE_TOL);
      clt_ctx_log(ctx, CLT_LOG_WARN, "%s: %s", configs[config].name,
                  st->failed_why[config]);
    }
  }
  if (!st->failed[config]) return CLT_OK;
  return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED,
                      "gemm_mma: tile configuration %s is not usable on %s: "
                      "%s",
                      configs[config].name, ctx->info.name,
                      st->failed_why[config]);
}

/* The kernel takes int sizes and offsets. */
static bool fits_int(const clt_tensor *t, int64_t stride, int64_t batch) {
  return t->offset + t->numel <= INT_MAX && stride * batch <= INT_MAX;
}

clt_status clt_gemm_mma_ld(clt_context *ctx, int config, clt_transpose ta,
                           clt_transpose tb, int64_t m, int64_t n, int64_t k,
                           float alpha, const clt_tensor *a, int64_t lda,
                           int64_t stride_a, const clt_tensor *b, int64_t ldb,
                           int64_t stride_b, float beta, clt_tensor *c,
                           int64_t ldc, int64_t stride_c, int64_t batch) {
  const char *routine = "gemm_mma";
  CLT_TRY(clt_gemm_check_args(ctx, routine, ta, tb, m, n, k, a, lda, stride_a,
                              b, ldb, stride_b, c, ldc, stride_c, batch));
  if (config < 0 || config >= CLT_MMA_CONFIGS)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "%s: no tile configuration %d", routine, config);
  if (!fits_int(a, stride_a, batch) || !fits_int(b, stride_b, batch) ||
      !fits_int(c, stride_c, batch) || batch > 65535)
    return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED,
                        "%s: operands beyond 2^31 elements or %lld batches",
                        routine, (long long)batch);
  clt_fp16_route route;
  CLT_TRY(clt_fp16_route_get(ctx, &route, NULL));
  clt_mma_state *st = clt_gemm_state_get(ctx)->mma;
  if (route == CLT_FP16_SGEMM)
    return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED, "%s: %s", routine, st->why);
  CLT_TRY(build_config(ctx, st, config));
  CLT_TRY(check_tf32x3(ctx, st, config));
  if (configs[config].stages > 0)
    return launch_staged(ctx, st, config, ta, tb, m, n, k, alpha, a, lda,
                         stride_a, b, ldb, stride_b, beta, c, ldc, stride_c,
                         batch);
  return launch(ctx, st->kernels[config], config, ta, tb, m, n, k, alpha, a,
                lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c,
                batch);
}

/* ---- the probe -------------------------------------------------------- */

/* launch and launch_staged with one signature, for the probes. */
static clt_status launch_plain(clt_context *ctx, clt_mma_state *st,
                               int config, clt_transpose ta, clt_transpose tb,
                               int64_t m, int64_t n, int64_t k, float alpha,
                               const clt_tensor *a, int64_t lda,
                               int64_t stride_a, const clt_tensor *b,
                               int64_t ldb, int64_t stride_b, float beta,
                               clt_tensor *c, int64_t ldc, int64_t stride_c,
                               int64_t batch) {
  return launch(ctx, st->kernels[config], config, ta, tb, m, n, k, alpha, a,
                lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c,
                batch);
}

static double probe_error(const float *a, const float *b, const float *c,
                          bool tb) {
  double worst = 0.0;
  for (int i = 0; i < PROBE_M; i++)
    for (int j = 0; j < PROBE_N; j++) {
      double s = 0.0, mag = 0.0;
      for (int p = 0; p < PROBE_K; p++) {
        double t = (double)a[i * PROBE_K + p] *
                   (tb ? b[j * PROBE_K + p] : b[p * PROBE_N + j]);
        s += t;
        mag += fabs(t);
      }
      double e = fabs(c[i * PROBE_N + j] - s) / (mag > 1.0 ? mag : 1.0);
      if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
    }
  return worst;
}

/* Runs the built kernel of configuration `config` on a product of fp16
 * values (3xTF32: of full f32 values) and compares with the host: *error
 * the worst error relative to the sum of the products' magnitudes (NaN
 * counts as infinite). Device errors are returned. */
static clt_status probe_product(clt_context *ctx, clt_mma_state *st,
                                int config, double *error) {
  int64_t na = PROBE_M * PROBE_K, nb = PROBE_K * PROBE_N,
          nc = PROBE_M * PROBE_N;
  float *host = malloc((size_t)(na + nb + nc) * sizeof(float));
  uint16_t *half = malloc((size_t)(na + nb) * sizeof(uint16_t));
  clt_tensor *ta = NULL, *tb = NULL, *tc = NULL;
  clt_status s = host && half ? CLT_OK
                              : clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "probe");
  if (s == CLT_OK) {
    clt_random_fill(host, na + nb, 16, -2.0f, 2.0f);
    /* fp16 values, as mixed precision gives the kernel; 3xTF32 is for
     * f32's, all 24 bits of them */
    if (!configs[config].tf32) {
      clt_f32_to_f16(host, half, na + nb);
      clt_f16_to_f32(half, host, na + nb);
    }
    s = clt_tensor_create(ctx, CLT_F32, 1, &na, &ta);
  }
  if (s == CLT_OK) s = clt_tensor_create(ctx, CLT_F32, 1, &nb, &tb);
  if (s == CLT_OK) s = clt_tensor_create(ctx, CLT_F32, 1, &nc, &tc);
  if (s == CLT_OK) s = clt_tensor_upload(ta, host);
  if (s == CLT_OK) s = clt_tensor_upload(tb, host + na);
  *error = 0.0;
  for (int t = 0; s == CLT_OK && t < 2; t++) {
    bool trans = t == 1;
    s = (configs[config].stages > 0 ? launch_staged : launch_plain)(
        ctx, st, config, CLT_NO_TRANS, trans ? CLT_TRANS : CLT_NO_TRANS,
        PROBE_M, PROBE_N, PROBE_K, 1.0f, ta, PROBE_K, 0, tb,
        trans ? PROBE_K : PROBE_N, 0, 0.0f, tc, PROBE_N, 0, 1);
    if (s == CLT_OK) s = clt_tensor_download(tc, host + na + nb);
    if (s == CLT_OK) {
      double e = probe_error(host, host + na, host + na + nb, trans);
      if (!(e <= *error)) *error = e;
    }
  }
  clt_tensor_destroy(ta);
  clt_tensor_destroy(tb);
  clt_tensor_destroy(tc);
  free(host);
  free(half);
  return s;
}

/* A build failure's message on one line: its headline ("building
 * cl/mma.cl for ... failed (...):") and the build log's first line. */
static void first_line(const char *msg, char *out, size_t len) {
  snprintf(out, len, "%s", msg);
  char *nl = strchr(out, '\n');
  if (nl && nl[1]) {
    /* "building cl/mma.cl ... failed (...):" then the log's first line */
    char *next = strchr(nl + 1, '\n');
    if (next) *next = '\0';
    *nl = ' ';
  }
}

static clt_status probe(clt_context *ctx, clt_mma_state *st) {
  const char *env = getenv("CLT_MMA");
  if (env && *env && strcmp(env, "auto") != 0 && strcmp(env, "off") != 0 &&
      strcmp(env, "emulate") != 0 && strcmp(env, "ptx") != 0)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "CLT_MMA=%s: use auto, off, ptx or emulate", env);
  if (env && strcmp(env, "off") == 0) {
    snprintf(st->why, sizeof st->why, "turned off (CLT_MMA=off)");
    return CLT_OK;
  }
  bool emulate = env && strcmp(env, "emulate") == 0;
  bool forced = env && strcmp(env, "ptx") == 0;
  if (!emulate && !forced && !ctx->info.ptx) {
    snprintf(st->why, sizeof st->why,
             "no tensor-core route: the compiler does not take NVIDIA PTX%s",
             ctx->info.fp16 ? " (CLBlast HGEMM is not a route yet)" : "");
    return CLT_OK;
  }
  st->route = emulate ? CLT_FP16_MMA_EMULATED : CLT_FP16_MMA_PTX;
  st->asm_form = 1;
  clt_status s = build_config(ctx, st, 0);
  if (s == CLT_ERR_BUILD && !emulate) {
    clt_err_clear(&ctx->err);
    st->asm_form = 2;
    s = build_config(ctx, st, 0);
  }
  if (s == CLT_ERR_BUILD) {
    char line[400];
    first_line(clt_context_last_error(ctx), line, sizeof line);
    clt_err_clear(&ctx->err);
    st->route = CLT_FP16_SGEMM;
    snprintf(st->why, sizeof st->why,
             "the tensor-core kernel did not build: %s", line);
    clt_ctx_log(ctx, CLT_LOG_INFO, "fp16 products: %s", st->why);
    return CLT_OK;
  }
  CLT_TRY(s);
  double error = 0.0;
  CLT_TRY(probe_product(ctx, st, 0, &error));
  /* f32 sums of exact fp16 products in another order: far below this. */
  if (!(error <= 1e-5)) {
    st->route = CLT_FP16_SGEMM;
    snprintf(st->why, sizeof st->why,
             "the tensor-core kernel gave wrong numbers (relative error %.3g "
             "on a %dx%dx%d check); not used",
             error, PROBE_M, PROBE_N, PROBE_K);
    clt_ctx_log(ctx, CLT_LOG_WARN, "fp16 products: %s", st->why);
    return CLT_OK;
  }
  snprintf(st->why, sizeof st->why, "%s",
           emulate ? "the kernel emulated in OpenCL C (CLT_MMA=emulate)"
                   : "mma.sync through inline PTX (checked on this device)");
  return CLT_OK;
}

CLT_API clt_status clt_fp16_route_get(clt_context *ctx,
                                      clt_fp16_route *route,
                                      const char **why) {
  *route = CLT_FP16_SGEMM;
  if (why) *why = "";
  clt_gemm_state *gs = clt_gemm_state_get(ctx);
  if (!gs) return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "GEMM state");
  if (!gs->mma) {
    clt_mma_state *st = calloc(1, sizeof *st);
    if (!st) return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "fp16 route");
    clt_status s = probe(ctx, st);
    if (s != CLT_OK) {
      state_free(st);
      return s;
    }
    gs->mma = st;
    gs->mma_free = state_free;
  }
  const clt_mma_state *st = gs->mma;
  *route = st->route;
  if (why) *why = st->why;
  return CLT_OK;
}

clt_status clt_fp16_build_flags(clt_context *ctx, char *buf, size_t len) {
  clt_fp16_route route;
  CLT_TRY(clt_fp16_route_get(ctx, &route, NULL));
  const clt_mma_state *st = clt_gemm_state_get(ctx)->mma;
  if (route == CLT_FP16_SGEMM)
    return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED, "fp16 products: %s",
                        st->why);
  snprintf(buf, len, "-DCLT_MMA_PTX=%d -DCLT_MMA_ASM=%d",
           route == CLT_FP16_MMA_PTX ? 1 : 0, st->asm_form);
  return CLT_OK;
}

/* The public entry points: configuration `config` of `count`, which is
 * `first + config` of CLT_MMA_CONFIGS, on whole row-major operands (the
 * leading dimensions are the stored row lengths). */
static clt_status strided_batched(
    clt_context *ctx, const char *routine, int first, int count, int config,
    clt_transpose trans_a, clt_transpose trans_b, int64_t m, int64_t n,
    int64_t k, float alpha, const clt_tensor *a, int64_t stride_a,
    const clt_tensor *b, int64_t stride_b, float beta, clt_tensor *c,
    int64_t stride_c, int64_t batch) {
  if (config < 0 || config >= count)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "%s: no configuration %d (%d of them)", routine,
                        config, count);
  return clt_gemm_mma_ld(ctx, first + config, trans_a, trans_b, m, n, k,
                         alpha, a, trans_a == CLT_TRANS ? m : k, stride_a, b,
                         trans_b == CLT_TRANS ? k : n, stride_b, beta, c, n,
                         stride_c, batch);
}

CLT_API clt_status clt_gemm_f16_strided_batched(
    clt_context *ctx, int config, clt_transpose trans_a, clt_transpose trans_b,
    int64_t m, int64_t n, int64_t k, float alpha, const clt_tensor *a,
    int64_t stride_a, const clt_tensor *b, int64_t stride_b, float beta,
    clt_tensor *c, int64_t stride_c, int64_t batch) {
  return strided_batched(ctx, "gemm_mma", 0, CLT_FP16_CONFIGS, config,
                         trans_a, trans_b, m, n, k, alpha, a, stride_a, b,
                         stride_b, beta, c, stride_c, batch);
}

CLT_API clt_status clt_gemm_tf32x3_strided_batched(
    clt_context *ctx, int config, clt_transpose trans_a, clt_transpose trans_b,
    int64_t m, int64_t n, int64_t k, float alpha, const clt_tensor *a,
    int64_t stride_a, const clt_tensor *b, int64_t stride_b, float beta,
    clt_tensor *c, int64_t stride_c, int64_t batch) {
  return strided_batched(ctx, "gemm_tf32x3", CLT_MMA_TF32X3(0),
                         CLT_TF32X3_CONFIGS, config, trans_a, trans_b, m, n,
                         k, alpha, a, stride_a, b, stride_b, beta, c,
                         stride_c, batch);
}
