/* Measured plans on disk, beside the kernel cache.
 *
 * A plan is the choice among the ways to run something (a GEMM product's
 * candidates), measured on the device. It is stored as a small text under
 * "<kernel cache folder>/plans/", one entry per description, with the
 * kernel cache's entry format (cache.h): keyed by SHA-256 over the
 * description (what is run and which candidates were measured), the plan
 * format version, the device name, the driver version and the platform
 * version; written atomically; checked in full when read, a damaged entry
 * deleted and reported, so the caller measures again. */
#ifndef CLT_RUNTIME_PLAN_STORE_H
#define CLT_RUNTIME_PLAN_STORE_H

#include "runtime/cache.h"
#include "runtime/runtime.h"

/* Bump when the stored text or the candidates' meaning changes: old
 * entries then miss. 2: GEMM operands reach CLBlast as sub-buffers (no
 * copies of views), which changes what each candidate costs. 3: a small
 * product's candidates are timed over runs queued back to back
 * (gemm_measure.c), not one run and a wait each. 4: the tiled
 * convolutions take 3 output rows a work-item and their weight gradient 8
 * filters (cl/conv.cl), up to 1.7x faster on POCL than the plans of 3
 * measured them. 5: a plan measured without some candidates (our own
 * kernels or the implicit GEMMs switched off in the measuring process) is
 * stored apart from a complete one (graph/plan.c); entries of 4 may be
 * such plans under a complete plan's key. */
#define CLT_PLAN_FORMAT_VERSION 5

/* The mode in force for ctx: its options' plan field, else $CLT_PLAN
 * ("off", "on" or "remeasure", any case; unset or empty: on). With the
 * kernel cache off and neither set, off: a plan that cannot be remembered
 * would cost its measurement at every start, and two runs could choose
 * differently and so differ in their last bits. Any other $CLT_PLAN is
 * CLT_ERR_INVALID_ARGUMENT, naming the value. Never returns
 * CLT_PLAN_ENV. */
clt_status clt_plan_mode_get(clt_context *ctx, clt_plan_mode *mode);

/* The stored text for description: on CLT_CACHE_HIT *text is a malloc'd
 * NUL-terminated string the caller frees; otherwise NULL (a rejected entry
 * has been deleted). Always a miss when the kernel cache is off. */
clt_cache_result clt_plan_store_load(clt_context *ctx, const char *description,
                                     char **text);

/* Stores text for description (when the kernel cache is on). A failure
 * only costs a measurement next time: it is logged, not returned. */
void clt_plan_store_save(clt_context *ctx, const char *description,
                         const char *text);

#endif
