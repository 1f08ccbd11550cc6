/* Cutting a row kernel's work-item into parts (ops.h clt_loop_per). */
#include "ops/ops.h"

int64_t clt_loop_per(const clt_context *ctx, int64_t units, clt_loop_cost cost,
                     const void *arg) {
  int64_t limit = ctx->loop_limit;
  if (units <= 1 || cost(units, arg) <= limit) return units < 1 ? 1 : units;
  /* The most units within the limit (cost grows with them), at least 1. */
  int64_t lo = 1, hi = units - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (cost(mid, arg) <= limit)
      lo = mid;
    else
      hi = mid - 1;
  }
  /* As many parts as that needs, their units evened out (no more each). */
  int64_t parts = (units + lo - 1) / lo;
  return (units + parts - 1) / parts;
}
