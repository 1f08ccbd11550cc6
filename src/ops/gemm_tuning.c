/* CLBlast tuning overrides for devices its database serves poorly.
 *
 * CLBlast 1.5 has no database entry for POCL's CPU device, so it falls back
 * to parameters chosen for GPUs: tiny 16x16 work-group tiles, padding of the
 * local-memory tiles, scalar loads. On POCL's CPU device that runs SGEMM at a
 * few GFLOP/s. The parameters below were measured on POCL 3.1 (AVX-512, 2
 * cores) against the training shapes (row-major NT, NN, TN, batch 32..256 on
 * a 784-128-10 MLP, the im2col products of the sample CNN, and 512^3); see
 * the table in the comment of each set.
 *
 * CLBlastSgemm and CLBlastSgemmStridedBatched both pick the direct kernel
 * (XgemmDirect*, one launch, no restrictions) when m*n*k of one product is
 * below XGEMM_MIN_INDIRECT_SIZE^3 (database default 704^3; no CPU entry
 * matches this device), and otherwise the indirect one (Xgemm /
 * XgemmStridedBatched on copies padded to the tile sizes). The direct
 * kernel falls back to scalar loads when a leading dimension is not a
 * multiple of its vector width and to bounds-checked code on partial
 * tiles, which odd shapes (the CNN's 121-wide 11x11 products) hit
 * everywhere; the indirect kernel pads instead, and from 96^3 up it is the
 * faster one here. */
#include "ops/gemm_tuning.h"

#include <clblast_c.h>
#include <stdlib.h>
#include <string.h>

/* m*n*k from which POCL's CPU device gets the indirect kernel: this^3. */
#define POCL_INDIRECT_MIN 96

typedef struct tuning_set {
  const char *kernel;
  size_t count;
  const char *names[16];
  size_t values[16];
} tuning_set;

/* XgemmDirect on a POCL CPU device: 32x32 work-group tiles, 4x4 work items
 * each computing an 8x8 block with float8 loads, unpadded local tiles.
 * Measured (GFLOP/s, best of 5; CLBlast defaults -> this set):
 *   256x128x784 NT 3.3 -> 14-20, 256x784x128 NN 2.9 -> 18,
 *   128x784x256 TN 2.6 -> 41, 32x128x784 NT 6.3 -> 10-20,
 *   32x784x128 NN 3.2 -> 22-25, 512^3 NN 3.6 -> 19-22.
 * Also tried, all slower: WGD=32 8x8 items VW 1 or 4; WGD=64 8x8 items VW 4
 * or 8; WGD=64 16x16 items VW 4; WGD=32 4x4 items VW 8 with KWID=8.
 *
 * The indirect Xgemm kernel from m*n*k >= 96^3 (GemmRoutine
 * XGEMM_MIN_INDIRECT_SIZE=96; Xgemm GEMMK 0, KREG 1, KWG 32, KWI 2,
 * MDIMA=MDIMC=NDIMB=NDIMC 4, MWG=NWG 32, SA=SB=0, STRM=STRN=0, VWM=VWN 8,
 * i.e. the direct set's micro-structure without local memory). Measured
 * against the direct set above in two sessions under different load
 * (GFLOP/s, best of 5, a training process and builds on the 2 cores, so
 * +-30%; "direct s1 / s2 -> indirect s1 / s2"):
 *   conv2 fwd NN 64x121x288 batch 64:  7.2 / 13.5 -> 21 / 28
 *   conv2 dW  NT 64x288x121 batch 64:  6.1 / 11.2 -> 12 / 21
 *   conv2 dcol TN 288x121x64 batch 64: 9.3 / 19.0 -> 15 / 20
 *   256x128x784 NT 5.5 / 14 -> 32 / 39, 256x784x128 NN 8.6 / 19 -> 23 / 32,
 *   128x784x256 TN 32 / 29 -> 25 / 46, 32x128x784 NT 4.7 / 9.7 -> 18 / 21,
 *   32x784x128 NN 9.3 / 13 -> 16 / 23, 128x784x32 TN 22 / 16 -> 11 / 16,
 *   64x128x784 NT 8.8 / 10 -> 12 / 29, 128x784x64 TN 18 / 30 -> 16 / 37;
 *   conv1 32x676x9 batch 64 (k padded to 32): 3.2 -> 1.7, so direct there.
 * Slower indirect sets: 64x64 tiles 8x8 items VW 4 or 8; 64x32 8x4 VW 8;
 * 64x64 4x4 VW 16; 32x32 4x4 VW 8 with KWI 8 or KWG 16. Direct WGD=16 4x4
 * items VW 4: conv1 3.2 -> 3.8, everything else slower.
 *
 * A CLBlast 1.5.3 bug this must steer around: the indirect *strided
 * batched* path skips the padding copy of an operand whose sizes are
 * multiples of the tiles, and then indexes it as batch * rows * cols,
 * ignoring its stride and offset (288x121x64 TN batch 64 with stride_a 0
 * gave errors of 1e36; upstream CLBlast issue #346 reports stride-0
 * batches computing wrong results). The threshold is one value for
 * CLBlastSgemm and CLBlastSgemmStridedBatched, so the state's indirect_min
 * records it and clt_gemm_strided_batched runs products at or above it one
 * CLBlastSgemm at a time (whose offsets are handled). conv2d makes one
 * product per layer over the whole batch anyway. */
static const tuning_set pocl_cpu_sets[] = {
    {"XgemmDirect",
     10,
     {"KWID", "MDIMAD", "MDIMCD", "NDIMBD", "NDIMCD", "PADA", "PADB", "VWMD",
      "VWND", "WGD"},
     {2, 4, 4, 4, 4, 0, 0, 8, 8, 32}},
    {"Xgemm",
     16,
     {"GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB", "NDIMC",
      "NWG", "SA", "SB", "STRM", "STRN", "VWM", "VWN"},
     {0, 1, 32, 2, 4, 4, 32, 4, 4, 32, 0, 0, 0, 0, 8, 8}},
    {"GemmRoutine", 1, {"XGEMM_MIN_INDIRECT_SIZE"}, {POCL_INDIRECT_MIN}},
};

static bool is_pocl_cpu(const clt_context *ctx) {
  return ctx->info.type == CLT_DEVICE_CPU &&
         strstr(ctx->info.platform_name, "Portable Computing Language") != NULL;
}

static void tune_for_device(clt_context *ctx, clt_gemm_state *state) {
  if (!ctx->device || !is_pocl_cpu(ctx)) return;
  size_t n = sizeof pocl_cpu_sets / sizeof pocl_cpu_sets[0];
  for (size_t i = 0; i < n; i++) {
    const tuning_set *set = &pocl_cpu_sets[i];
    const char *names[16];
    memcpy(names, set->names, sizeof names);
    CLBlastStatusCode code = CLBlastOverrideParameters(
        ctx->device, set->kernel, CLBlastPrecisionSingle, set->count, names,
        set->values);
    if (code != CLBlastSuccess) {
      clt_ctx_log(ctx, CLT_LOG_INFO,
                  "CLBlast: override of %s for %s rejected (%d); keeping its "
                  "defaults",
                  set->kernel, ctx->info.name, (int)code);
    } else {
      clt_ctx_log(ctx, CLT_LOG_INFO,
                  "CLBlast: %s tuned for POCL CPU device %s", set->kernel,
                  ctx->info.name);
    }
  }
  /* Batched products from here on go one by one (see above); even where an
   * override failed, staying careful costs little. */
  state->indirect_min = POCL_INDIRECT_MIN;
}

const clt_gemm_state *clt_gemm_state_of(clt_context *ctx) {
  static const clt_gemm_state defaults = {0};
  if (ctx->ops_state) return ctx->ops_state;
  clt_gemm_state *state = calloc(1, sizeof *state);
  if (!state) return &defaults;
  tune_for_device(ctx, state);
  ctx->ops_state = state;
  ctx->ops_state_free = free;
  return state;
}
