/* Cutting a row kernel's work-item into parts (ops.h clt_loop_per), and
 * the device's own limit on a work-item's loops (clt_device_loop_cap). */
#include "ops/ops.h"

#include <stdint.h>

/* The probe's loop: more than any limit seen (llvmpipe's 65,535), short
 * enough for one work-item anywhere (a fraction of a millisecond). */
#define LOOP_PROBE_N (1 << 18)

clt_status clt_device_loop_cap(clt_context *ctx, int64_t *cap) {
  if (ctx->loop_cap < 0) {
    int64_t two = 2;
    size_t one = 1;
    uint32_t got[2] = {0, 0};
    clt_tensor *out = NULL;
    clt_status st = clt_tensor_create(ctx, CLT_I32, 1, &two, &out);
    if (st == CLT_OK)
      st = CLT_RUN(ctx, CLT_K_loop_probe, 1, &one, &one, KT(out),
                   KI(LOOP_PROBE_N));
    if (st == CLT_OK) st = clt_tensor_download(out, got);
    clt_tensor_destroy(out);
    if (st != CLT_OK) return st;
    ctx->loop_cap = got[0] >= LOOP_PROBE_N ? 0 : got[0] > 0 ? got[0] : 1;
    if (ctx->loop_cap)
      clt_ctx_log(ctx, CLT_LOG_INFO,
                  "%s ends a work-item's loops after %lld iterations (without "
                  "an error): long products and sums run in parts",
                  ctx->info.name, (long long)ctx->loop_cap);
  }
  *cap = ctx->loop_cap;
  return CLT_OK;
}

int64_t clt_loop_most(int64_t units, int64_t limit, clt_loop_cost cost,
                      const void *arg) {
  int64_t lo = 1, hi = units;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (cost(mid, arg) <= limit)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

int64_t clt_loop_per(const clt_context *ctx, int64_t units, clt_loop_cost cost,
                     const void *arg) {
  int64_t limit = ctx->loop_limit;
  if (units <= 1 || cost(units, arg) <= limit) return units < 1 ? 1 : units;
  int64_t lo = clt_loop_most(units - 1, limit, cost, arg);
  /* As many parts as that needs, their units evened out (no more each). */
  int64_t parts = (units + lo - 1) / lo;
  return (units + parts - 1) / parts;
}

CLT_API clt_status clt_context_loop_limit(clt_context *ctx,
                                          int64_t *iterations) {
  return clt_device_loop_cap(ctx, iterations);
}
