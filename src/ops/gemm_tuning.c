/* CLBlast's parameters per device. `cltrain tune --gemm` (clt_gemm_tune)
 * measures candidate sets on the device and stores the fastest beside the
 * kernel cache; later contexts apply what was stored. Without a stored
 * search, POCL's CPU device gets the seed sets below (the best of the
 * search on POCL 3.1, AVX-512, 2 cores, kept as its starting point) and
 * every other device CLBlast's database.
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
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/plan_store.h"

/* m*n*k from which POCL's CPU device gets the indirect kernel: this^3. */
#define POCL_INDIRECT_MIN 96


/* XgemmDirect on a POCL CPU device: 16x16 work-group tiles, 4x4 work items
 * each computing a 4x4 block with float4 loads, unpadded local tiles
 * (the search's "16, 4x4 items, vw 4", gemm_search.c). Chosen for what it
 * costs to compile, not for speed: POCL 3.1 compiles CLBlast's four
 * XgemmDirect kernels twice on a first run (for CLBlast's binary cache,
 * then for the size they run with), and the set below that held this
 * place (32x32 tiles of 8x8 blocks, float8) took 51.6 s to a first call on
 * an empty POCL cache against 13.6 s for this one (2-core Xeon VM,
 * 2026-12-03); a first `tune samples/fashion_mlp.model --batch 32` on
 * empty caches went 152 -> 105 s, a first CLT_PLAN=off `bench train` of
 * the MLP 88 -> 71 s. Measured plans never chose XgemmDirect on POCL for
 * the sample models (our own kernels win its small products), so the
 * cost falls on CLT_PLAN=off runs: three interleaved rounds of
 * `CLT_PLAN=off bench train` (images/s, old -> new) CNN b64 1,265 ->
 * 1,192, CNN b32 1,396 -> 1,316, MLP b32 33.6k -> 33.8k, ResNet b32 268
 * -> 275, within this VM's noise. The faster set, for a stored search
 * (`tune --gemm` measures both):
 *   {2, 4, 4, 4, 4, 0, 0, 8, 8, 32}, with the names below.
 * Measured for it (GFLOP/s, best of 5; CLBlast defaults -> that set):
 *   256x128x784 NT 3.3 -> 14-20, 256x784x128 NN 2.9 -> 18,
 *   128x784x256 TN 2.6 -> 41, 32x128x784 NT 6.3 -> 10-20,
 *   32x784x128 NN 3.2 -> 22-25, 512^3 NN 3.6 -> 19-22.
 * Also tried, all slower: WGD=32 8x8 items VW 1 or 4; WGD=64 8x8 items VW 4
 * or 8; WGD=64 16x16 items VW 4; WGD=32 4x4 items VW 8 with KWID=8.
 *
 * The indirect Xgemm kernel from m*n*k >= 96^3 (GemmRoutine
 * XGEMM_MIN_INDIRECT_SIZE=96; Xgemm GEMMK 0, KREG 1, KWG 32, KWI 2,
 * MDIMA=MDIMC=NDIMB=NDIMC 4, MWG=NWG 32, SA=SB=0, STRM=STRN=0, VWM=VWN 8,
 * i.e. the 32x32 direct set's micro-structure without local memory).
 * Measured against that 32x32 direct set in two sessions under different
 * load (GFLOP/s, best of 5, a training process and builds on the 2 cores,
 * so +-30%; "direct s1 / s2 -> indirect s1 / s2"):
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
static const clt_clblast_set pocl_cpu_sets[] = {
    {"pocl seed", "XgemmDirect",
     10,
     {"KWID", "MDIMAD", "MDIMCD", "NDIMBD", "NDIMCD", "PADA", "PADB", "VWMD",
      "VWND", "WGD"},
     {2, 4, 4, 4, 4, 0, 0, 4, 4, 16}},
    {"pocl seed", "Xgemm",
     16,
     {"GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB", "NDIMC",
      "NWG", "SA", "SB", "STRM", "STRN", "VWM", "VWN"},
     {0, 1, 32, 2, 4, 4, 32, 4, 4, 32, 0, 0, 0, 0, 8, 8}},
    {"pocl seed", "GemmRoutine", 1, {"XGEMM_MIN_INDIRECT_SIZE"},
     {POCL_INDIRECT_MIN}},
};

static bool is_pocl_cpu(const clt_context *ctx) {
  return ctx->info.type == CLT_DEVICE_CPU &&
         strstr(ctx->info.platform_name, "Portable Computing Language") != NULL;
}

bool clt_clblast_apply(clt_context *ctx, const clt_clblast_set *set) {
  if (set->count == 0 || !ctx->device) return true;
  const char *names[CLT_CLBLAST_MAX_PARAMS];
  size_t values[CLT_CLBLAST_MAX_PARAMS];
  memcpy(names, set->names, sizeof names);
  memcpy(values, set->values, sizeof values);
  CLBlastStatusCode code = CLBlastOverrideParameters(
      ctx->device, set->kernel, CLBlastPrecisionSingle, (size_t)set->count,
      names, values);
  if (code != CLBlastSuccess) {
    clt_ctx_log(ctx, CLT_LOG_INFO,
                "CLBlast: parameters '%s' of %s rejected for %s (%d)",
                set->label, set->kernel, ctx->info.name, (int)code);
    return false;
  }
  clt_ctx_log(ctx, CLT_LOG_INFO, "CLBlast: %s set to '%s' for %s",
              set->kernel, set->label, ctx->info.name);
  return true;
}

/* Parses one stored line "KERNEL NAME=VALUE ..." into set (names point
 * into line, which it cuts). */
static bool parse_set(char *line, clt_clblast_set *set) {
  memset(set, 0, sizeof *set);
  set->label = "stored search";
  char *save = NULL, *word = strtok_r(line, " ", &save);
  if (!word) return false;
  set->kernel = word;
  while ((word = strtok_r(NULL, " ", &save))) {
    char *eq = strchr(word, '=');
    if (!eq || eq == word || set->count == CLT_CLBLAST_MAX_PARAMS) return false;
    *eq = '\0';
    for (char *c = word; *c; c++)
      if (!isalnum((unsigned char)*c) && *c != '_') return false;
    char *end = NULL;
    unsigned long long v = strtoull(eq + 1, &end, 10);
    if (!eq[1] || *end) return false;
    set->names[set->count] = word;
    set->values[set->count++] = (size_t)v;
  }
  return strcmp(set->kernel, "Xgemm") == 0 ||
         strcmp(set->kernel, "XgemmDirect") == 0 ||
         strcmp(set->kernel, "GemmRoutine") == 0;
}

/* state->params for a stored search's text: FNV-1a over it. */
static void name_search(clt_gemm_state *state, const char *text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char *c = text; *c; c++) {
    h ^= (unsigned char)*c;
    h *= 0x100000001b3ull;
  }
  snprintf(state->params, sizeof state->params, "search %016llx",
           (unsigned long long)h);
}

/* Applies a stored search result: lines of sets, and "indirect_min T".
 * false (nothing applied) when none is stored or it does not parse. */
static bool apply_stored(clt_context *ctx, clt_gemm_state *state) {
  clt_plan_mode mode;
  if (clt_plan_mode_get(ctx, &mode) != CLT_OK) {
    clt_err_clear(&ctx->err);
    return false;
  }
  char *text = NULL;
  if (mode == CLT_PLAN_OFF ||
      clt_plan_store_load(ctx, CLT_CLBLAST_STORE_KEY, &text) != CLT_CACHE_HIT)
    return false;
  name_search(state, text); /* before strtok_r cuts it */
  clt_clblast_set sets[4];
  int n = 0;
  long long indirect_min = -1;
  bool ok = true;
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); ok && line;
       line = strtok_r(NULL, "\n", &save)) {
    if (sscanf(line, "indirect_min %lld", &indirect_min) == 1) continue;
    ok = n < 4 && parse_set(line, &sets[n]);
    n++;
  }
  ok = ok && indirect_min >= 0;
  if (ok) {
    clt_clblast_set threshold = {"stored search", "GemmRoutine", 1,
                                 {"XGEMM_MIN_INDIRECT_SIZE"},
                                 {(size_t)indirect_min}};
    clt_clblast_apply(ctx, &threshold);
    for (int i = 0; i < n; i++) clt_clblast_apply(ctx, &sets[i]);
    /* Batched products on the indirect path go one by one (gemm.c). */
    state->indirect_min = indirect_min > 0 ? indirect_min : 1;
  }
  else {
    snprintf(state->params, sizeof state->params, "database");
    clt_ctx_log(ctx, CLT_LOG_WARN,
                "CLBlast: the stored parameter search for %s is damaged; "
                "run `cltrain tune --gemm` again",
                ctx->info.name);
  }
  free(text);
  return ok;
}

static void tune_for_device(clt_context *ctx, clt_gemm_state *state) {
  snprintf(state->params, sizeof state->params, "database");
  if (!ctx->device || apply_stored(ctx, state) || !is_pocl_cpu(ctx)) return;
  /* In the plans' keys: "2" since the XgemmDirect seed changed (plans
   * measured with the old one are measured again). */
  snprintf(state->params, sizeof state->params, "pocl seed 2");
  size_t n = sizeof pocl_cpu_sets / sizeof pocl_cpu_sets[0];
  for (size_t i = 0; i < n; i++) clt_clblast_apply(ctx, &pocl_cpu_sets[i]);
  /* Batched products from here on go one by one (see above); even where an
   * override failed, staying careful costs little. */
  state->indirect_min = POCL_INDIRECT_MIN;
}

static void state_free(void *p) {
  clt_gemm_state *state = p;
  if (state->mma_free) state->mma_free(state->mma);
  if (state->igemm_free) state->igemm_free(state->igemm);
  free(state);
}

/* The context's state, made on the first call (tuned for the device
 * when `tune`); NULL without host memory. */
static clt_gemm_state *state_made(clt_context *ctx, bool tune) {
  if (ctx->ops_state) return ctx->ops_state;
  clt_gemm_state *state = calloc(1, sizeof *state);
  if (!state) return NULL;
  if (tune) tune_for_device(ctx, state);
  ctx->ops_state = state;
  ctx->ops_state_free = state_free;
  return state;
}

clt_gemm_state *clt_gemm_state_get(clt_context *ctx) {
  return state_made(ctx, true);
}

void clt_gemm_state_set(clt_context *ctx, int64_t indirect_min,
                        const char *search_text) {
  clt_gemm_state *state = state_made(ctx, false);
  if (!state) return;
  state->indirect_min = indirect_min;
  if (search_text)
    name_search(state, search_text);
  else
    snprintf(state->params, sizeof state->params, "searching");
}

const clt_gemm_state *clt_gemm_state_of(clt_context *ctx) {
  static const clt_gemm_state defaults = {.params = "database"};
  const clt_gemm_state *state = state_made(ctx, true);
  return state ? state : &defaults;
}
