/* Measured plans of a graph's products: chosen when the graph is compiled
 * for a batch size, from the plan cache or by timing the candidates on the
 * device (DESIGN.md: "Choices are measured on the device, then
 * remembered"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "graph/graph.h"
#include "ops/gemm_measure.h"
#include "ops/gemm_mma.h"
#include "ops/gemm_tuning.h"
#include "runtime/plan_store.h"
#include "tensor/tensor.h"

/* Split-K partial products may use this many floats of workspace at most
 * (and never more than a quarter of the device's largest buffer). */
#define MAX_WORKSPACE_FLOATS ((int64_t)16 << 20)

CLT_API int clt_graph_plan_count(const clt_graph *g) { return g->plan_count; }

CLT_API clt_status clt_graph_plan_info(const clt_graph *g, int index,
                                       clt_plan_info *out) {
  if (index < 0 || index >= g->plan_count)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "graph: no planned product %d (%d planned)", index,
                        g->plan_count);
  *out = g->plans[index];
  return CLT_OK;
}

CLT_API double clt_graph_plan_seconds(const clt_graph *g) {
  return g->plan_seconds;
}

bool clt_graph_plans_measure(const clt_graph *g) {
  return g->plan_mode != CLT_PLAN_OFF;
}

clt_status clt_graph_plan_fill(clt_graph *g, clt_tensor *t) {
  float *host = malloc((size_t)t->numel * sizeof(float));
  if (!host) return clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "plan operands");
  uint32_t x = 0x9e3779b9u;
  for (int64_t i = 0; i < t->numel; i++) {
    x = x * 1664525u + 1013904223u; /* LCG: values only need to differ */
    /* Multiples of 2^-10 in [-1, 1): fp16 values, so that the fp16
     * route's products are compared with SGEMM's on the same inputs. */
    host[i] = (float)((int32_t)(x >> 21) - 1024) * (1.0f / 1024.0f);
  }
  clt_status st = clt_tensor_upload(t, host);
  free(host);
  return st;
}

/* A zeroed record appended to g's plans; NULL (error on the context) when
 * the host is out of memory. */
static clt_plan_info *new_record(clt_graph *g) {
  if (g->plan_count == g->plan_cap) {
    int cap = g->plan_cap ? 2 * g->plan_cap : 8;
    clt_plan_info *grown = realloc(g->plans, (size_t)cap * sizeof *grown);
    if (!grown) {
      clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "plans");
      return NULL;
    }
    g->plans = grown;
    g->plan_cap = cap;
  }
  clt_plan_info *r = &g->plans[g->plan_count++];
  memset(r, 0, sizeof *r);
  return r;
}

/* What every key starts with: the graph's precision and the CLBlast
 * parameters in force (gemm_tuning.h), which the times depend on: a new
 * `tune --gemm` search, or mixed precision's fp16 inputs, measure
 * again. Returns the length written. */
static size_t describe_setting(clt_graph *g, char *buf, size_t len) {
  int w = snprintf(buf, len, "%s, clblast %s;",
                   g->precision == CLT_PRECISION_MIXED ? "mixed" : "fp32",
                   clt_gemm_state_of(g->ctx)->params);
  return w < 0 ? 0 : (size_t)w < len ? (size_t)w : len - 1;
}

/* What the key covers: the product, how images lie in it, and the
 * candidates in order (a change to the list is a different plan). "gemm2":
 * entries stored before mixed precision measured on filled parameters may
 * hold valid candidates rejected (see clt_graph_compile's plan_buffers),
 * for fp32 too (the keys did not tell the precisions apart then); the new
 * name makes those entries miss. */
static void describe(clt_graph *g, const clt_gemm_product *p,
                     const clt_plan_info *r, char *buf, size_t len) {
  size_t w = describe_setting(g, buf, len);
  w += (size_t)snprintf(buf + w, len - w, " gemm2 %s images %lld along %c:",
                        r->shape, (long long)p->images,
                        p->images_along_k ? 'k' : 'n');
  for (int i = 0; i < r->candidate_count && w < len; i++)
    w += (size_t)snprintf(buf + w, len - w, " %s;", r->candidates[i].name);
}

/* "chosen I" then one line per candidate: "seconds rejected name". */
static void format_plan(const clt_plan_info *r, char *buf, size_t len) {
  size_t w = (size_t)snprintf(buf, len, "chosen %d\n", r->chosen);
  for (int i = 0; i < r->candidate_count && w < len; i++)
    w += (size_t)snprintf(buf + w, len - w, "%.9g %d %s\n",
                          r->candidates[i].seconds,
                          r->candidates[i].rejected ? 1 : 0,
                          r->candidates[i].name);
}

/* Reads format_plan's text back into r; false if it does not describe r's
 * candidates (then the entry is measured again). */
static bool parse_plan(const char *text, clt_plan_info *r) {
  int chosen = -1, used = 0;
  if (sscanf(text, "chosen %d\n%n", &chosen, &used) != 1 || used == 0)
    return false;
  const char *s = text + used;
  for (int i = 0; i < r->candidate_count; i++) {
    double secs = 0.0;
    int rejected = 0, n = 0;
    if (sscanf(s, "%lf %d %n", &secs, &rejected, &n) != 2 || n == 0)
      return false;
    s += n;
    const char *eol = strchr(s, '\n');
    size_t name_len = strlen(r->candidates[i].name);
    if (!eol || (size_t)(eol - s) != name_len ||
        strncmp(s, r->candidates[i].name, name_len) != 0 || secs < 0 ||
        (rejected != 0 && rejected != 1))
      return false;
    r->candidates[i].seconds = secs;
    r->candidates[i].rejected = rejected;
    s = eol + 1;
  }
  if (*s != '\0' || chosen < 0 || chosen >= r->candidate_count ||
      r->candidates[chosen].rejected)
    return false;
  r->chosen = chosen;
  return true;
}

static void set_gflops(const clt_gemm_product *p, clt_plan_info *r) {
  double flops = 2.0 * (double)p->m * (double)p->n * (double)p->k;
  for (int i = 0; i < r->candidate_count; i++) {
    clt_plan_candidate *c = &r->candidates[i];
    c->gflops = c->seconds > 0 ? flops / c->seconds * 1e-9 : 0.0;
  }
}

static clt_status measure(clt_graph *g, const clt_gemm_product *p,
                          const clt_gemm_plan *cands, clt_plan_info *r,
                          const clt_tensor *a, const clt_tensor *b,
                          clt_tensor *c) {
  clt_gemm_timing t[CLT_GEMM_MAX_CANDIDATES];
  for (int i = 0; i < r->candidate_count; i++) t[i].plan = cands[i];
  double t0 = clt_now_seconds();
  CLT_TRY(clt_gemm_measure(g->ctx, p, t, r->candidate_count, a, b, c,
                           &r->chosen));
  g->plan_seconds += clt_now_seconds() - t0;
  for (int i = 0; i < r->candidate_count; i++) {
    r->candidates[i].seconds = t[i].seconds;
    r->candidates[i].rejected = t[i].rejected;
  }
  r->source = CLT_PLAN_FROM_MEASURED;
  return CLT_OK;
}

/* A record for node n's product `what`, its candidates named, as the
 * default (candidate 0) until chosen otherwise; NULL when out of memory. */
static clt_plan_info *start_record(clt_graph *g, const clt_graph_node *n,
                                   const char *what, const char *shape) {
  clt_plan_info *r = new_record(g);
  if (!r) return NULL;
  snprintf(r->layer, sizeof r->layer, "%s", n->name);
  snprintf(r->product, sizeof r->product, "%s", what);
  snprintf(r->shape, sizeof r->shape, "%s", shape);
  r->source = CLT_PLAN_FROM_DEFAULT;
  return r;
}

/* Reads the stored plan for desc into r, as the plan mode allows: true
 * when it was there and describes r's candidates; an unusable entry is
 * noted on r (then measured again and replaced). */
static bool load_stored(clt_graph *g, const char *desc, clt_plan_info *r) {
  if (g->plan_mode != CLT_PLAN_ON) return false;
  char *stored = NULL;
  clt_cache_result got = clt_plan_store_load(g->ctx, desc, &stored);
  bool have = got == CLT_CACHE_HIT && parse_plan(stored, r);
  r->cache_rejected =
      got == CLT_CACHE_REJECTED || (got == CLT_CACHE_HIT && !have);
  free(stored);
  if (r->cache_rejected)
    clt_ctx_log(g->ctx, CLT_LOG_WARN,
                "plan cache: the entry for %s %s (%s) was unusable; "
                "measuring again",
                r->layer, r->product, r->shape);
  if (have) r->source = CLT_PLAN_FROM_CACHE;
  return have;
}

/* load_stored for desc, else where `also`, for apart (a plan measured
 * without some candidates); an unusable entry of either stays noted. */
static bool load_either(clt_graph *g, const char *desc, bool also,
                        const char *apart, clt_plan_info *r) {
  if (load_stored(g, desc, r)) return true;
  if (!also) return false;
  bool rejected = r->cache_rejected;
  bool have = load_stored(g, apart, r);
  r->cache_rejected |= rejected;
  return have;
}

static void store_plan(clt_graph *g, const char *desc,
                       const clt_plan_info *r) {
  char text[4096];
  format_plan(r, text, sizeof text);
  clt_plan_store_save(g->ctx, desc, text);
}

static void log_choice(clt_graph *g, const clt_plan_info *r) {
  clt_ctx_log(g->ctx, CLT_LOG_INFO, "plan: %s %s (%s): %s%s", r->layer,
              r->product, r->shape, r->candidates[r->chosen].name,
              r->source == CLT_PLAN_FROM_CACHE ? " (stored)" : "");
}

clt_status clt_graph_plan_product(clt_graph *g, const clt_graph_node *n,
                                  const char *what, const clt_gemm_product *p,
                                  const clt_tensor *a, const clt_tensor *b,
                                  clt_tensor *c, clt_gemm_plan *plan) {
  *plan = (clt_gemm_plan){CLT_GEMM_ONE, 1, 0, false, 0};
  char shape[64];
  clt_gemm_product_str(p, shape, sizeof shape);
  clt_plan_info *r = start_record(g, n, what, shape);
  if (!r) return CLT_ERR_HOST_MEMORY;
  r->m = p->m;
  r->n = p->n;
  r->k = p->k;
  int64_t max_ws = (int64_t)(g->ctx->info.max_alloc_bytes / 4 / sizeof(float));
  if (max_ws > MAX_WORKSPACE_FLOATS) max_ws = MAX_WORKSPACE_FLOATS;
  /* The test hooks that force a candidate keep split-K on the tests'
   * small models. */
  bool forced = g->test_last || g->test_blocked > 0;
  clt_gemm_plan cands[CLT_GEMM_MAX_CANDIDATES];
  r->candidate_count = clt_gemm_candidates(
      p, max_ws, forced ? 0 : CLT_GEMM_SPLIT_K_MIN_MACS, cands);
  int fp32_count = r->candidate_count;
  clt_fp16_route route;
  CLT_TRY(clt_fp16_route_get(g->ctx, &route, NULL));
  if (route != CLT_FP16_SGEMM)
    r->candidate_count =
        g->precision == CLT_PRECISION_MIXED
            ? clt_gemm_mma_candidates(g->ctx, cands, r->candidate_count)
            : clt_gemm_tf32x3_candidates(g->ctx, cands, r->candidate_count);
  for (int i = 0; i < r->candidate_count; i++)
    clt_gemm_plan_name(p, &cands[i], r->candidates[i].name,
                       sizeof r->candidates[i].name);
  if (g->test_mma && r->candidate_count > fp32_count) {
    r->chosen = fp32_count;
    *plan = cands[fp32_count];
    return CLT_OK;
  }
  for (int i = 0, seen = 0; g->test_blocked > 0 && i < fp32_count; i++)
    if (cands[i].blocked && ++seen == g->test_blocked) {
      r->chosen = i;
      *plan = cands[i];
      return CLT_OK;
    }
  if (g->test_last) {
    r->chosen = fp32_count - 1;
    *plan = cands[fp32_count - 1];
    return CLT_OK;
  }
  if (g->plan_mode == CLT_PLAN_OFF || r->candidate_count == 1) return CLT_OK;
  char desc[4096], apart[4200];
  describe(g, p, r, desc, sizeof desc);
  /* A plan measured while our own kernels were off in the context (a
   * process that found them slow on a few products: a test's odd shapes,
   * llvmpipe) has no times for them: it is stored apart, taken only where
   * they are off again, so that a run with them on measures them (POCL: a
   * test's plan without them made the MLP at batch 32 2x slower). A
   * complete plan serves either way. */
  bool own = false;
  for (int i = 0; i < fp32_count; i++) own |= cands[i].blocked > 0;
  bool own_off = own && clt_gemm_own_off(g->ctx);
  snprintf(apart, sizeof apart, "%s own kernels off;", desc);
  if (!load_either(g, desc, own_off, apart, r)) {
    CLT_TRY(measure(g, p, cands, r, a, b, c));
    store_plan(g, own_off ? apart : desc, r);
  }
  double seconds[CLT_GEMM_MAX_CANDIDATES];
  for (int i = 0; i < r->candidate_count; i++)
    seconds[i] = r->candidates[i].seconds;
  clt_gemm_note_own_slow(g->ctx, cands, seconds, r->candidate_count);
  set_gflops(p, r);
  *plan = cands[r->chosen];
  log_choice(g, r);
  return CLT_OK;
}

clt_status clt_graph_plan_ways(clt_graph *g, const clt_graph_node *n,
                               const clt_graph_ways *w, int *chosen) {
  *chosen = 0;
  /* 0 (nothing measured) where a test hook or the plan mode picks */
  for (int i = 0; w->seconds && i < w->work.count; i++) w->seconds[i] = 0.0;
  clt_plan_info *r = start_record(g, n, w->what, w->shape);
  if (!r) return CLT_ERR_HOST_MEMORY;
  r->m = w->m;
  r->n = w->n;
  r->k = w->k;
  r->candidate_count = w->work.count;
  for (int i = 0; i < w->work.count; i++)
    snprintf(r->candidates[i].name, sizeof r->candidates[i].name, "%s",
             w->names[i]);
  for (int i = 0; g->test_way_name && i < w->work.count; i++)
    if (!strcmp(w->names[i], g->test_way_name)) {
      *chosen = r->chosen = i;
      return CLT_OK;
    }
  if (g->test_way > 0 && g->test_way <= w->work.count) {
    *chosen = r->chosen = g->test_way - 1;
    return CLT_OK;
  }
  if (g->plan_mode == CLT_PLAN_OFF || w->work.count == 1) return CLT_OK;
  char desc[4096];
  /* "ways2": as "gemm2" in describe(). */
  size_t len = describe_setting(g, desc, sizeof desc);
  len += (size_t)snprintf(desc + len, sizeof desc - len, " ways2 %s %s:",
                          w->what, w->key);
  for (int i = 0; i < w->work.count && len < sizeof desc; i++)
    len += (size_t)snprintf(desc + len, sizeof desc - len, " %s;",
                            w->names[i]);
  /* Ways skipped (not run: over the device's loop limit, or the implicit
   * GEMMs once a context found them slow, nn/conv2d.c): a plan measured
   * without them is stored apart, as a GEMM's without our own kernels is;
   * a complete one serves either way. */
  char apart[4200];
  size_t alen = (size_t)snprintf(apart, sizeof apart, "%s skipped", desc);
  bool skipped = false;
  for (int i = 1; w->work.skip && i < w->work.count; i++)
    if (w->work.skip[i] && alen < sizeof apart) {
      alen += (size_t)snprintf(apart + alen, sizeof apart - alen, " %d", i);
      skipped = true;
    }
  if (!load_either(g, desc, skipped, apart, r)) {
    double secs[CLT_MEASURE_MAX_WAYS];
    bool rejected[CLT_MEASURE_MAX_WAYS];
    double t0 = clt_now_seconds();
    clt_measure_work work = w->work;
    char what[160];
    snprintf(what, sizeof what, "%s %s", n->name, w->what);
    work.what = what;
    work.names = w->names;
    CLT_TRY(clt_measure_ways(g->ctx, &work, secs, rejected, &r->chosen));
    g->plan_seconds += clt_now_seconds() - t0;
    for (int i = 0; i < w->work.count; i++) {
      r->candidates[i].seconds = secs[i];
      r->candidates[i].rejected = rejected[i];
    }
    r->source = CLT_PLAN_FROM_MEASURED;
    store_plan(g, skipped ? apart : desc, r);
  }
  for (int i = 0; i < r->candidate_count; i++) {
    clt_plan_candidate *c = &r->candidates[i];
    c->gflops = c->seconds > 0 ? w->flops / c->seconds * 1e-9 : 0.0;
    if (w->seconds) w->seconds[i] = c->rejected ? 0.0 : c->seconds;
  }
  *chosen = r->chosen;
  log_choice(g, r);
  return CLT_OK;
}

/* ---- the one-dimensional launches' work-group size ----------------------
 *
 * clt_kernel_run_1d runs the elementwise kernels (activations, the fp16
 * roundings and conversions, optimizer steps, ...) in groups of
 * ctx->launch_1d items, one item an element (or a run of them: the
 * element runs below). Groups of 64 were chosen on
 * POCL; on NVIDIA's H200 a conversion of 12.8 M elements in groups of 64
 * took 0.125 ms whatever it moved (6 or 10 bytes an element, 0.6-1 TB/s of
 * 4.8): the rate at which the GPU starts groups, not its memory, set the
 * pace. So the size is measured on the device, as a plan: f16_to_f32 on
 * LAUNCH_ELEMS elements in groups of 64, 128, ... up to ctx->work_group,
 * twice each, interleaved; another size than 64 only where it takes at
 * most LAUNCH_MARGIN of 64's time (a CPU's sizes are within noise of each
 * other, and every new size costs POCL a compile of each kernel: under
 * the CI's AddressSanitizer, seconds each). With 0.9, a fresh cache on a
 * noisy 2-core EPYC chose 256 in one tune of four (3.02 against 3.2-3.5
 * ms); the H200's 256 took 0.35 of 64's time. */
#define LAUNCH_ELEMS (1 << 23)
#define LAUNCH_MARGIN 0.75
#define LAUNCH_MAX_SIZES 6

/* Seconds a conversion takes with the settings in force: a warm-up call,
 * then calls in fours until 20 ms have passed. */
static clt_status time_conversion(clt_context *ctx, clt_tensor *y,
                                  const clt_tensor *x, double *secs) {
  CLT_TRY(clt_tensor_convert(y, x));
  CLT_TRY(clt_context_finish(ctx));
  int reps = 0;
  double t0 = clt_now_seconds(), elapsed = 0.0;
  while (reps < 8 || elapsed < 0.02) {
    for (int i = 0; i < 4; i++) CLT_TRY(clt_tensor_convert(y, x));
    CLT_TRY(clt_context_finish(ctx));
    reps += 4;
    elapsed = clt_now_seconds() - t0;
  }
  *secs = elapsed / reps;
  return CLT_OK;
}

/* A setting of the device's measured as a plan (the groups' size, the
 * runs): candidate i puts *field = values[i] in force, the first being
 * the default (*field 0 gives it too). The conversion on LAUNCH_ELEMS
 * elements (fewer where the device's allocations are smaller) is timed
 * under each, twice, interleaved; the fastest is chosen where it takes
 * at most `margin` of the default's time. */
static clt_status measure_setting(clt_graph *g, size_t *field,
                                  const size_t *values, double margin,
                                  clt_plan_info *r) {
  clt_context *ctx = g->ctx;
  int64_t n = LAUNCH_ELEMS;
  while (n > 4096 && (uint64_t)n * 4 > ctx->info.max_alloc_bytes / 4) n /= 2;
  clt_tensor *x = NULL, *y = NULL;
  clt_status st = clt_tensor_create(ctx, CLT_F16, 1, &n, &x);
  if (st == CLT_OK) st = clt_tensor_create(ctx, CLT_F32, 1, &n, &y);
  if (st == CLT_OK) st = clt_tensor_fill(y, 1.5);
  if (st == CLT_OK) st = clt_tensor_convert(x, y);
  double t0 = clt_now_seconds();
  for (int round = 0; st == CLT_OK && round < 2; round++)
    for (int i = 0; st == CLT_OK && i < r->candidate_count; i++) {
      double secs = 0.0;
      *field = values[i];
      st = time_conversion(ctx, y, x, &secs);
      if (round == 0 || secs < r->candidates[i].seconds)
        r->candidates[i].seconds = secs;
    }
  g->plan_seconds += clt_now_seconds() - t0;
  *field = 0;
  clt_tensor_destroy(x);
  clt_tensor_destroy(y);
  CLT_TRY(st);
  r->chosen = 0;
  for (int i = 1; i < r->candidate_count; i++)
    if (r->candidates[i].seconds < r->candidates[r->chosen].seconds)
      r->chosen = i;
  if (r->candidates[r->chosen].seconds > margin * r->candidates[0].seconds)
    r->chosen = 0;
  r->source = CLT_PLAN_FROM_MEASURED;
  return CLT_OK;
}

/* The plan record `product` of such a setting, its candidates "`unit`
 * values[i]": the default where measuring is off, else stored or measured
 * (the key: `key`, the conversion, `also` and the candidates); *field is
 * left at the choice, or 0 for the default. */
static clt_status plan_setting(clt_graph *g, const char *product,
                               const char *key, const char *also,
                               const char *unit, size_t *field,
                               const size_t *values, int count,
                               double margin) {
  *field = 0;
  clt_plan_info *r = new_record(g);
  if (!r) return CLT_ERR_HOST_MEMORY;
  snprintf(r->layer, sizeof r->layer, "-");
  snprintf(r->product, sizeof r->product, "%s", product);
  snprintf(r->shape, sizeof r->shape, "f16_to_f32 of %d", LAUNCH_ELEMS);
  r->candidate_count = count;
  for (int i = 0; i < count; i++)
    snprintf(r->candidates[i].name, sizeof r->candidates[i].name, "%s %zu",
             unit, values[i]);
  r->source = CLT_PLAN_FROM_DEFAULT;
  if (g->plan_mode == CLT_PLAN_OFF) return CLT_OK;
  char desc[512];
  size_t len = (size_t)snprintf(desc, sizeof desc, "%s %s%s:", key, r->shape,
                                also);
  for (int i = 0; i < count && len < sizeof desc; i++)
    len += (size_t)snprintf(desc + len, sizeof desc - len, " %s;",
                            r->candidates[i].name);
  if (!load_stored(g, desc, r)) {
    CLT_TRY(measure_setting(g, field, values, margin, r));
    store_plan(g, desc, r);
  }
  for (int i = 0; i < count; i++) /* elements per second, in GFLOP/s's place */
    r->candidates[i].gflops = r->candidates[i].seconds > 0
                                  ? LAUNCH_ELEMS / r->candidates[i].seconds * 1e-9
                                  : 0.0;
  *field = values[r->chosen];
  log_choice(g, r);
  return CLT_OK;
}

static clt_status plan_groups(clt_graph *g) {
  clt_context *ctx = g->ctx;
  size_t sizes[LAUNCH_MAX_SIZES];
  int count = 0;
  for (size_t s = CLT_LAUNCH_1D_DEFAULT;
       s <= ctx->work_group && count < LAUNCH_MAX_SIZES; s *= 2)
    sizes[count++] = s;
  ctx->launch_1d = 0;
  if (count < 2) return CLT_OK;
  return plan_setting(g, CLT_PLAN_LAUNCH_PRODUCT, "launch1d", "", "groups of",
                      &ctx->launch_1d, sizes, count, LAUNCH_MARGIN);
}

/* ---- the element-wise kernels' runs -------------------------------------
 *
 * clt_kernel_run_elems gives each work-item of an element-wise kernel
 * (activations, sums, the fp16 roundings and conversions) a run of
 * ctx->element_run consecutive elements (cl/prelude.cl FOR_RUN). On POCL
 * (2-core EPYC, POCL 3.1) an item an element left the ConvNeXt sample's
 * gelu forward and backward at 2.38 and 2.85 ms a step, its sums 0.41 and
 * 0.59; runs of 64, 1.21, 1.35, 0.16 and 0.23 (the step 31.0 -> 27.1
 * ms); on a GPU neighbouring items must read neighbouring addresses, so
 * runs of one are expected there. Measured like the group size, at the
 * size chosen: the same conversion with the device type's default run
 * first (clt_element_run: 64 on a CPU, else 1), then runs of 1, 4, ...
 * RUNS_MOST, twice each, interleaved; another run only where it takes at
 * most RUNS_MARGIN of the default's time (no compile is at stake, only
 * the noise). */
#define RUNS_MOST 256
#define RUNS_MARGIN 0.9

static clt_status plan_runs(clt_graph *g) {
  clt_context *ctx = g->ctx;
  ctx->element_run = 0;
  size_t runs[8];
  int count = 0;
  runs[count++] = clt_element_run(ctx);
  for (size_t run = 1; run <= RUNS_MOST; run *= 4)
    if (run != runs[0]) runs[count++] = run;
  /* A new group size measures again (the key names it). */
  char also[64];
  snprintf(also, sizeof also, ", groups of %zu", clt_launch_items(ctx));
  return plan_setting(g, CLT_PLAN_RUNS_PRODUCT, "runs1d", also, "runs of",
                      &ctx->element_run, runs, count, RUNS_MARGIN);
}

clt_status clt_graph_plan_launch(clt_graph *g) {
  g->ctx->element_run = 0;
  CLT_TRY(plan_groups(g));
  return plan_runs(g);
}

