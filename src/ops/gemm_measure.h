/* Timing the candidate plans of one GEMM product on the device. */
#ifndef CLT_OPS_GEMM_MEASURE_H
#define CLT_OPS_GEMM_MEASURE_H

#include "ops/gemm_plan.h"

typedef struct clt_gemm_timing {
  clt_gemm_plan plan;
  double seconds; /* best of the timed repetitions; 0 when not timed */
  bool rejected;  /* it failed, or its numbers differ from one GEMM's */
} clt_gemm_timing;

/* Times every plan in t[0..count) (t[0] must be one GEMM; count at most
 * CLT_GEMM_MAX_CANDIDATES) for p on the
 * operands a, b, c as C = op(A) op(B): one untimed call first (CLBlast
 * compiles its kernels on a routine's first call), then rounds that time
 * every candidate once each (waiting for it), keeping each one's fastest;
 * a candidate far slower than the best after a round is timed no more
 * (its time stays as measured). The contents of a and b must be finite;
 * c is overwritten. Each candidate's result is compared with one GEMM's,
 * and one that differs by more than reordered sums can explain (a driver
 * or CLBlast bug with strides) is rejected, never chosen; so is one that
 * fails (logged). A workspace for the largest candidate is allocated for
 * the measurement and released. *best receives the index of the fastest
 * candidate not rejected. Errors: those of one GEMM itself, or of the
 * device. */
clt_status clt_gemm_measure(clt_context *ctx, const clt_gemm_product *p,
                            clt_gemm_timing *t, int count,
                            const clt_tensor *a, const clt_tensor *b,
                            clt_tensor *c, int *best);

#endif
