/* Checks of device ops against host references on random inputs. Each
 * returns the largest error found (relative to max(1, |reference|)) in
 * *max_err. Shared by `cltrain selftest` and the test suites. */
#ifndef CLT_OPS_OPCHECK_H
#define CLT_OPS_OPCHECK_H

#include "ops/ops.h"

clt_status clt_check_fill(clt_context *ctx, int64_t n, double *max_err);
clt_status clt_check_copy_view(clt_context *ctx, int64_t n, double *max_err);
clt_status clt_check_gemm(clt_context *ctx, clt_transpose ta, clt_transpose tb,
                          int64_t m, int64_t n, int64_t k, float alpha,
                          float beta, int64_t batch, double *max_err);

/* One self-test case: a name and a check on small fixed shapes. */
typedef struct clt_selftest_case {
  const char *name;
  clt_status (*run)(clt_context *ctx, double *max_err);
  double tolerance;
} clt_selftest_case;

extern const clt_selftest_case clt_selftest_cases[];
extern const int clt_selftest_case_count;

/* Fills host[n] with uniform values in [lo, hi) from a seeded stream. */
void clt_random_fill(float *host, int64_t n, uint64_t seed, float lo,
                     float hi);

#endif
