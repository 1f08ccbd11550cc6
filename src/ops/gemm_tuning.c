/* CLBlast tuning overrides for devices its database serves poorly.
 *
 * CLBlast 1.5 has no database entry for POCL's CPU device, so it falls back
 * to parameters chosen for GPUs: tiny 16x16 work-group tiles, padding of the
 * local-memory tiles, scalar loads. On POCL's CPU device that runs SGEMM at a
 * few GFLOP/s. The parameters below were measured on POCL 3.1 (AVX-512, 2
 * cores) against the training shapes (row-major NT, NN, TN, batch 32..256 on
 * a 784-128-10 MLP, and 512^3); see the table in the comment of each set.
 * Every size those shapes reach stays below XGEMM_MIN_INDIRECT_SIZE, so the
 * direct kernel is the one that matters. */
#include "ops/gemm_tuning.h"

#include <clblast_c.h>
#include <string.h>

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
 * or 8; WGD=64 16x16 items VW 4; WGD=32 4x4 items VW 8 with KWID=8. */
static const tuning_set pocl_cpu_sets[] = {
    {"XgemmDirect",
     10,
     {"KWID", "MDIMAD", "MDIMCD", "NDIMBD", "NDIMCD", "PADA", "PADB", "VWMD",
      "VWND", "WGD"},
     {2, 4, 4, 4, 4, 0, 0, 8, 8, 32}},
};

static bool is_pocl_cpu(const clt_context *ctx) {
  return ctx->info.type == CLT_DEVICE_CPU &&
         strstr(ctx->info.platform_name, "Portable Computing Language") != NULL;
}

void clt_gemm_tune_for_device(clt_context *ctx) {
  if (!ctx || !ctx->device || !is_pocl_cpu(ctx)) return;
  size_t n = sizeof pocl_cpu_sets / sizeof pocl_cpu_sets[0];
  for (size_t i = 0; i < n; i++) {
    const tuning_set *set = &pocl_cpu_sets[i];
    const char *names[16];
    memcpy(names, set->names, sizeof names);
    CLBlastStatusCode code = CLBlastOverrideParameters(
        ctx->device, set->kernel, CLBlastPrecisionSingle, set->count, names,
        set->values);
    if (code != CLBlastSuccess)
      clt_ctx_log(ctx, CLT_LOG_INFO,
                  "CLBlast: override of %s for %s rejected (%d); keeping its "
                  "defaults",
                  set->kernel, ctx->info.name, (int)code);
    else
      clt_ctx_log(ctx, CLT_LOG_INFO,
                  "CLBlast: %s tuned for POCL CPU device %s", set->kernel,
                  ctx->info.name);
  }
}
