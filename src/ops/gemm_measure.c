/* Timing the candidate plans of one GEMM product on the device. */
#include "ops/gemm_measure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/clock.h"
#include "ops/gemm_tuning.h"
#include "tensor/tensor.h"

/* Timed rounds: each round times every candidate once, so that a change
 * in the machine's load (other processes on shared cores) falls on all of
 * them alike; each keeps its fastest run. At least MIN_ROUNDS, then more
 * up to MAX_ROUNDS while the timed runs of this product have cost less
 * than BUDGET_SECONDS: a slow device (rusticl's llvmpipe runs these
 * products at 1 GFLOP/s) then pays a few seconds, not a minute. After
 * each round a candidate slower than DROP_RATIO times the fastest one so
 * far is timed no more: it cannot win. */
#define MIN_ROUNDS 2
#define MAX_ROUNDS 5
#define BUDGET_SECONDS 0.5
#define DROP_RATIO 1.5
/* Our own kernels get one timed run right after their first (untimed:
 * POCL builds a kernel's work-group function for each new range on its
 * first call, hundreds of ms), as one GEMM does: one that takes this many
 * times one GEMM's is timed no more, and the product's other own
 * candidates are not run at all (untimed: seconds 0); after
 * OWN_SLOW_PRODUCTS products in a context whose plans (measured or
 * stored) hold an own candidate that many times slower than one GEMM
 * (clt_gemm_note_own_slow), no own candidate is run there any more. On a
 * device they do not suit (llvmpipe: 4-100x slower than CLBlast) running
 * each would cost many times what measuring CLBlast's plans does (the
 * sample CNN's evaluation at batch 100 on llvmpipe: 212 s against 99 s). */
#define OWN_SLOW_RATIO 3.0
#define OWN_SLOW_PRODUCTS 3

typedef struct measure_bufs {
  const clt_gemm_product *p;
  const clt_tensor *a, *b;
  clt_tensor *c, *ws;
  float *ref, *got; /* [m*n] on the host */
  double tol;
} measure_bufs;

static clt_status run_once(clt_context *ctx, measure_bufs *mb,
                           const clt_gemm_plan *plan) {
  return clt_gemm_plan_run(ctx, mb->p, plan, 1.0f, mb->a, mb->b, 0.0f, mb->c,
                           mb->ws);
}

/* A run timed alone pays the host's wait for the device, which on POCL
 * wakes its worker threads: 30-70 us on a 2-core virtual machine, more
 * than a small product costs (the MLP's last layer: 5-10 us), where a
 * training step waits once for dozens of launches; its candidates then
 * differed by that wait's noise only. In the timed rounds a product whose
 * one GEMM took less than QUEUED_SECONDS has each candidate run `runs`
 * times back to back (up to MAX_QUEUED) before one wait, the time a run
 * kept; a larger product is timed one run at a time, as before. */
#define QUEUED_SECONDS 1e-3
#define MAX_QUEUED 32

static int queued_runs(double one_gemm_seconds) {
  if (one_gemm_seconds <= 0.0 || one_gemm_seconds >= QUEUED_SECONDS) return 1;
  double runs = QUEUED_SECONDS / one_gemm_seconds;
  return runs >= MAX_QUEUED ? MAX_QUEUED : (int)runs;
}

static clt_status time_plan(clt_context *ctx, measure_bufs *mb,
                            clt_gemm_timing *t, int runs) {
  double t0 = clt_now_seconds();
  for (int i = 0; i < runs; i++) CLT_TRY(run_once(ctx, mb, &t->plan));
  CLT_TRY(clt_context_finish(ctx));
  double dt = (clt_now_seconds() - t0) / runs;
  if (t->seconds == 0.0 || dt < t->seconds) t->seconds = dt;
  return CLT_OK;
}

/* Sums in another order differ by rounding only: relative to the largest
 * value, far below this. A stride bug gives errors of order 1 or 1e36. */
static bool matches(const measure_bufs *mb) {
  int64_t n = mb->p->m * mb->p->n;
  for (int64_t i = 0; i < n; i++)
    if (!(fabs((double)mb->got[i] - mb->ref[i]) <= mb->tol)) return false;
  return true;
}

static double reference_tolerance(const float *ref, int64_t n) {
  double max = 1.0;
  for (int64_t i = 0; i < n; i++)
    if (fabs(ref[i]) > max) max = fabs(ref[i]);
  return 1e-3 * max;
}

/* A candidate other than one GEMM that fails is only rejected (logged):
 * the others may still run. */
static clt_status reject_failed(clt_context *ctx, clt_gemm_timing *t,
                                clt_status st, bool is_reference) {
  if (st == CLT_OK || is_reference) return st;
  clt_ctx_log(ctx, CLT_LOG_WARN, "GEMM plan: a candidate failed: %s",
              clt_context_last_error(ctx));
  clt_err_clear(&ctx->err);
  t->rejected = true;
  t->seconds = 0.0;
  return CLT_OK;
}

/* round < 0: the warm-up call and the check against the reference (or
 * taking it, for one GEMM); else one timing of `runs` runs. */
static clt_status measure_one(clt_context *ctx, measure_bufs *mb,
                              clt_gemm_timing *t, bool is_reference,
                              int round, int runs) {
  if (t->rejected) return CLT_OK;
  if (round >= 0)
    return reject_failed(ctx, t, time_plan(ctx, mb, t, runs), is_reference);
  clt_tensor c = clt_tensor_slice_1d(mb->c, 0, mb->p->m * mb->p->n);
  clt_status st = run_once(ctx, mb, &t->plan);
  if (st == CLT_OK)
    st = clt_tensor_download(&c, is_reference ? mb->ref : mb->got);
  if (st == CLT_OK && is_reference)
    mb->tol = reference_tolerance(mb->ref, mb->p->m * mb->p->n);
  if (st == CLT_OK && !is_reference && !matches(mb)) {
    char name[64], shape[64];
    clt_gemm_plan_name(mb->p, &t->plan, name, sizeof name);
    clt_gemm_product_str(mb->p, shape, sizeof shape);
    clt_ctx_log(ctx, CLT_LOG_WARN,
                "GEMM plan: candidate \"%s\" gave other numbers than one "
                "GEMM on this device for %s; not used",
                name, shape);
    t->rejected = true;
    return CLT_OK;
  }
  return reject_failed(ctx, t, st, is_reference);
}

bool clt_gemm_own_off(clt_context *ctx) {
  return clt_gemm_state_of(ctx)->own_slow >= OWN_SLOW_PRODUCTS;
}

static double own_slow_ratio(const clt_gemm_state *gs) {
  return gs && gs->own_slow_ratio > 0 ? gs->own_slow_ratio : OWN_SLOW_RATIO;
}

void clt_gemm_note_own_slow(clt_context *ctx, const clt_gemm_plan *plans,
                            const double *seconds, int count) {
  if (count < 1 || !(seconds[0] > 0.0) || clt_gemm_own_off(ctx)) return;
  clt_gemm_state *gs = clt_gemm_state_get(ctx); /* NULL: no memory */
  if (!gs) return;
  bool slow = false;
  for (int i = 1; i < count; i++)
    slow |= plans[i].blocked > 0 &&
            seconds[i] > own_slow_ratio(gs) * seconds[0];
  if (slow && ++gs->own_slow == OWN_SLOW_PRODUCTS)
    clt_ctx_log(ctx, CLT_LOG_INFO,
                "GEMM plan: our own kernels ran far slower than CLBlast on %d "
                "products; not measured further on this device",
                OWN_SLOW_PRODUCTS);
}

clt_status clt_gemm_measure(clt_context *ctx, const clt_gemm_product *p,
                            clt_gemm_timing *t, int count,
                            const clt_tensor *a, const clt_tensor *b,
                            clt_tensor *c, int *best) {
  *best = 0;
  if (count < 1 || count > CLT_GEMM_MAX_CANDIDATES ||
      t[0].plan.method != CLT_GEMM_ONE)
    return clt_ctx_fail(ctx, CLT_ERR_INTERNAL,
                        "GEMM plan: %d candidates, the first must be one GEMM",
                        count);
  int64_t ws_len = 1;
  for (int i = 0; i < count; i++) {
    int64_t need = clt_gemm_plan_workspace(p, &t[i].plan);
    if (need > ws_len) ws_len = need;
    t[i].seconds = 0.0;
    t[i].rejected = false;
  }
  measure_bufs mb = {.p = p, .a = a, .b = b, .c = c};
  int64_t mn = p->m * p->n;
  mb.ref = malloc((size_t)mn * sizeof(float));
  mb.got = malloc((size_t)mn * sizeof(float));
  clt_status st = mb.ref && mb.got
                      ? clt_tensor_create(ctx, CLT_F32, 1, &ws_len, &mb.ws)
                      : clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY,
                                     "GEMM plan: %lld floats", (long long)mn);
  bool timing[CLT_GEMM_MAX_CANDIDATES];
  for (int i = 0; i < count; i++) timing[i] = true;
  double t0 = 0.0;
  clt_gemm_state *gs = clt_gemm_state_get(ctx); /* NULL: no memory */
  bool own_slow = gs && gs->own_slow >= OWN_SLOW_PRODUCTS;
  for (int round = -1; st == CLT_OK && round < MAX_ROUNDS; round++) {
    if (round == 0) t0 = clt_now_seconds();
    if (round >= MIN_ROUNDS && clt_now_seconds() - t0 > BUDGET_SECONDS) break;
    /* the same for every candidate of a round, from one GEMM's first
     * timing (a run alone, taken in the warm-up round) */
    int runs = round < 0 ? 1 : queued_runs(t[0].seconds);
    for (int i = 0; st == CLT_OK && i < count; i++) {
      bool own = t[i].plan.blocked > 0;
      if (round < 0 && own && own_slow) timing[i] = false;
      if (!timing[i]) continue;
      st = measure_one(ctx, &mb, &t[i], i == 0, round, runs);
      /* One GEMM and each own kernel: a timed run at once. */
      if (st == CLT_OK && round < 0 && (i == 0 || own) && !t[i].rejected)
        st = measure_one(ctx, &mb, &t[i], i == 0, 0, 1);
      if (st == CLT_OK && round < 0 && own && !t[i].rejected &&
          t[i].seconds > own_slow_ratio(gs) * t[0].seconds) {
        timing[i] = false;
        own_slow = true;
      }
    }
    if (round < 0) continue;
    *best = 0;
    for (int i = 1; st == CLT_OK && i < count; i++)
      if (!t[i].rejected && t[i].seconds > 0 &&
          t[i].seconds < t[*best].seconds)
        *best = i;
    for (int i = 0; i < count; i++)
      if (t[i].seconds > DROP_RATIO * t[*best].seconds) timing[i] = false;
  }
  clt_tensor_destroy(mb.ws);
  free(mb.ref);
  free(mb.got);
  return st;
}

/* ---- ways of doing a layer's work ---------------------------------------- */

/* A way other than way 0 (the default) is chosen only where it takes at
 * most 1 - WAYS_MARGIN of the default's time. On the CPU stacks the conv
 * layouts often differ by a few percent, less than timings on a shared
 * host move between runs: two layers of one shape chose differently in
 * one compile, and the step as a whole was no faster. */
#define WAYS_MARGIN 0.10

typedef struct ways_state {
  const clt_measure_work *w;
  float *ref[CLT_MEASURE_MAX_CHECKS], *got[CLT_MEASURE_MAX_CHECKS];
  double tol[CLT_MEASURE_MAX_CHECKS];
} ways_state;

static clt_status time_way(clt_context *ctx, const clt_measure_work *w, int i,
                           double *seconds) {
  double t0 = clt_now_seconds();
  CLT_TRY(w->run(w->user, i));
  CLT_TRY(clt_context_finish(ctx));
  double dt = clt_now_seconds() - t0;
  if (*seconds == 0.0 || dt < *seconds) *seconds = dt;
  return CLT_OK;
}

/* Way i's first run, its results downloaded and compared with way 0's. */
static clt_status check_way(ways_state *ws, int i, bool *differs) {
  const clt_measure_work *w = ws->w;
  *differs = false;
  if (w->prepare) CLT_TRY(w->prepare(w->user));
  CLT_TRY(w->run(w->user, i));
  for (int j = 0; j < w->check_count; j++) {
    const clt_tensor *t = w->checks[j];
    float *dst = i == 0 ? ws->ref[j] : ws->got[j];
    CLT_TRY(clt_tensor_download(t, dst));
    if (i == 0) {
      ws->tol[j] = reference_tolerance(dst, t->numel);
      continue;
    }
    for (int64_t e = 0; e < t->numel; e++)
      if (!(fabs((double)dst[e] - ws->ref[j][e]) <= ws->tol[j]))
        *differs = true;
  }
  return CLT_OK;
}

/* Way i's name for messages (buf: room for a number). */
static const char *way_name(const clt_measure_work *w, int i, char *buf,
                            size_t len) {
  if (w->names && w->names[i]) return w->names[i];
  snprintf(buf, len, "way %d", i);
  return buf;
}

/* A way other than the reference that fails is rejected, not an error. */
static clt_status reject_way(clt_context *ctx, const clt_measure_work *w,
                             int i, clt_status st, double *seconds,
                             bool *rejected) {
  if (st == CLT_OK || i == 0) return st;
  char buf[32];
  clt_ctx_log(ctx, CLT_LOG_WARN, "plan: %s: %s failed: %s",
              w->what ? w->what : "ways", way_name(w, i, buf, sizeof buf),
              clt_context_last_error(ctx));
  clt_err_clear(&ctx->err);
  *rejected = true;
  *seconds = 0.0;
  return CLT_OK;
}

/* A group's first way, timed at once, that runs more than this many times
 * longer than way 0 keeps the group's other ways from running at all (as
 * our own GEMM kernels against one GEMM). */
#define GROUP_SLOW_RATIO 3.0

/* The first way of way i's group (w->group), or -1: in none. */
static int group_leader(const clt_measure_work *w, int i) {
  if (!w->group || w->group[i] <= 0) return -1;
  for (int j = 0; j < i; j++)
    if (w->group[j] == w->group[i]) return j;
  return i;
}

clt_status clt_measure_ways(clt_context *ctx, const clt_measure_work *w,
                            double *seconds, bool *rejected, int *best) {
  *best = 0;
  if (w->count < 1 || w->count > CLT_MEASURE_MAX_WAYS ||
      w->check_count < 0 || w->check_count > CLT_MEASURE_MAX_CHECKS)
    return clt_ctx_fail(ctx, CLT_ERR_INTERNAL, "plan: %d ways, %d checks",
                        w->count, w->check_count);
  ways_state ws = {.w = w};
  clt_status st = CLT_OK;
  for (int j = 0; j < w->check_count; j++) {
    size_t bytes = (size_t)w->checks[j]->numel * sizeof(float);
    ws.ref[j] = malloc(bytes);
    ws.got[j] = malloc(bytes);
    if (!ws.ref[j] || !ws.got[j])
      st = clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "plan: %zu bytes", bytes);
  }
  bool timing[CLT_MEASURE_MAX_WAYS];
  for (int i = 0; i < w->count; i++) {
    seconds[i] = 0.0;
    rejected[i] = false;
    timing[i] = i == 0 || !w->skip || !w->skip[i];
  }
  double t0 = 0.0;
  for (int round = -1; st == CLT_OK && round < MAX_ROUNDS; round++) {
    if (round == 0) t0 = clt_now_seconds();
    if (round >= MIN_ROUNDS && clt_now_seconds() - t0 > BUDGET_SECONDS) break;
    for (int i = 0; st == CLT_OK && i < w->count; i++) {
      if (rejected[i] || !timing[i]) continue;
      if (round >= 0) {
        st = reject_way(ctx, w, i, time_way(ctx, w, i, &seconds[i]),
                        &seconds[i], &rejected[i]);
        continue;
      }
      /* A group's later ways are not run where its first ran far slower
       * than way 0. */
      int lead = group_leader(w, i);
      if (lead >= 0 && lead != i && seconds[lead] > GROUP_SLOW_RATIO *
                                                       seconds[0]) {
        timing[i] = false;
        continue;
      }
      bool differs = false;
      st = reject_way(ctx, w, i, check_way(&ws, i, &differs), &seconds[i],
                      &rejected[i]);
      if (st == CLT_OK && differs) {
        char a[32], b[32];
        clt_ctx_log(ctx, CLT_LOG_WARN,
                    "plan: %s: %s gave other numbers than %s on this device; "
                    "not used",
                    w->what ? w->what : "ways", way_name(w, i, a, sizeof a),
                    way_name(w, 0, b, sizeof b));
        rejected[i] = true;
      }
      /* Way 0 and each group's first: a timed run at once. */
      if (st == CLT_OK && !rejected[i] && (i == 0 || lead == i))
        st = reject_way(ctx, w, i, time_way(ctx, w, i, &seconds[i]),
                        &seconds[i], &rejected[i]);
    }
    if (round < 0) continue;
    *best = 0;
    for (int i = 1; st == CLT_OK && i < w->count; i++)
      if (!rejected[i] && seconds[i] > 0.0 && seconds[i] < seconds[*best])
        *best = i;
    for (int i = 0; i < w->count; i++)
      if (seconds[i] > DROP_RATIO * seconds[*best]) timing[i] = false;
  }
  /* Another way replaces the default only where it is clearly faster. */
  if (*best != 0 && seconds[*best] > (1.0 - WAYS_MARGIN) * seconds[0])
    *best = 0;
  for (int j = 0; j < w->check_count; j++) {
    free(ws.ref[j]);
    free(ws.got[j]);
  }
  return st;
}
