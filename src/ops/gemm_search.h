/* The measured search over CLBlast's GEMM parameters (see gemm_search.c). */
#ifndef CLT_OPS_GEMM_SEARCH_H
#define CLT_OPS_GEMM_SEARCH_H

#include "ops/gemm_tuning.h"
#include "ops/ops.h"

typedef struct clt_gemm_search_shape {
  clt_transpose ta, tb;
  int64_t m, n, k;
} clt_gemm_search_shape;

/* What to search: the products timed and the candidate sets of the direct
 * (XgemmDirect) and indirect (Xgemm) kernels; each list starts with the
 * parameters in force (count 0). */
typedef struct clt_gemm_search_space {
  const clt_gemm_search_shape *shapes;
  int shape_count;
  const clt_clblast_set *direct, *indirect;
  int direct_count, indirect_count;
  int repeats; /* timed runs per product and set; the fastest counts */
} clt_gemm_search_space;

/* The default space: the products of the sample models and squares, and a
 * handful of sets for CPUs and GPUs. */
const clt_gemm_search_space *clt_gemm_search_default_space(void);

/* Times every set on every product (after a warm-up run that compiles it
 * and a check of its numbers against the first set's), picks the fastest
 * direct set, the fastest indirect set and the threshold between them,
 * applies them and stores them for the device (plan store). */
clt_status clt_gemm_search_run(clt_context *ctx,
                               const clt_gemm_search_space *space,
                               clt_gemm_tune_report *report);

/* A space with more candidate sets: base's, then those of text, one a
 * line, "Xgemm NAME=VALUE ..." or "XgemmDirect NAME=VALUE ..." with every
 * parameter of the kernel exactly once (the names of the default space's
 * sets), a "# comment" its label; blank lines and lines of comment alone
 * are skipped. The sets' labels live in out, which must outlive its space.
 * CLT_ERR_INVALID_ARGUMENT, naming the line, for text that does not parse
 * or more sets than the report has rows for. */
typedef struct clt_gemm_extra_space {
  clt_gemm_search_space space;
  clt_clblast_set direct[CLT_GEMM_TUNE_MAX_ROWS];
  clt_clblast_set indirect[CLT_GEMM_TUNE_MAX_ROWS];
  char labels[CLT_GEMM_TUNE_MAX_ROWS][48];
  int added;
} clt_gemm_extra_space;

clt_status clt_gemm_search_add_sets(clt_context *ctx,
                                    const clt_gemm_search_space *base,
                                    const char *text,
                                    clt_gemm_extra_space *out);

#endif
