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

/* Whether ctx no longer runs our own kernels' candidates (past a few
 * products where they measured far slower than one GEMM; gemm_measure.c):
 * a plan measured then lacks their times, so graph/plan.c stores it apart
 * from a complete one. */
bool clt_gemm_own_off(clt_context *ctx);

/* Counts, towards clt_gemm_own_off, a product whose plan found our own
 * kernels far slower than one GEMM: where one of the candidates plans[i]
 * on them (blocked > 0) took more than a few times seconds[0] (one GEMM's;
 * 0: not timed). graph/plan.c calls it for a plan it measured and for one
 * it read from the plan cache alike, so that a process whose plans are
 * all stored switches them off where the process that measured them did,
 * and takes the same stored plans after that point (otherwise it measured
 * the products stored apart again, and could choose otherwise: a resumed
 * run then differed from a straight one). */
void clt_gemm_note_own_slow(clt_context *ctx, const clt_gemm_plan *plans,
                            const double *seconds, int count);

/* The most ways clt_measure_ways compares, and results it checks. */
#define CLT_MEASURE_MAX_WAYS 20
#define CLT_MEASURE_MAX_CHECKS 3

/* Several ways to do one piece of work that is more than one product (a
 * layer's GEMMs with the copies and small kernels each way needs), for
 * clt_measure_ways: run(user, i) enqueues way i; prepare(user), if not
 * NULL, restores the inputs before each way's first, checked run (for
 * work that overwrites one of its inputs); checks[0..check_count) are
 * the results every way must give alike (whole tensors). */
typedef struct clt_measure_work {
  int count;
  const bool *skip; /* where not NULL and skip[i] (i > 0): way i is not
                       run (its time stays 0, never chosen) */
  const int *group; /* where not NULL: ways of one group (the same number
                       > 0) are variants of one kind; the first is timed
                       right after its check, and where it takes more than
                       3 times way 0's time the others are not run */
  clt_status (*run)(void *user, int way);
  clt_status (*prepare)(void *user);
  void *user;
  const clt_tensor *checks[CLT_MEASURE_MAX_CHECKS];
  int check_count;
  /* For messages (optional): what is measured ("conv1 backward layout")
   * and each way's name. */
  const char *what;
  const char *const *names;
} clt_measure_work;

/* Times the ways of w as clt_gemm_measure times plans (an untimed first
 * run of each, its results compared with way 0's; then rounds, the slow
 * ones dropped), way 0 the reference: its failure is the error returned,
 * another's only rejects it (logged), as do results that differ by more
 * than rounding. seconds[i] and rejected[i] receive each way's fastest
 * time and verdict, *best the fastest way not rejected, where it beats
 * way 0 by a clear margin (10%); else 0. */
clt_status clt_measure_ways(clt_context *ctx, const clt_measure_work *w,
                            double *seconds, bool *rejected, int *best);

#endif
