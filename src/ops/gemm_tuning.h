/* CLBlast's kernel parameters per device: a measured search (gemm_search.c)
 * stored beside the kernel cache, else a seed set for devices CLBlast's
 * database serves poorly. */
#ifndef CLT_OPS_GEMM_TUNING_H
#define CLT_OPS_GEMM_TUNING_H

#include "runtime/runtime.h"

/* What ops/ knows about the context's device for GEMM. */
typedef struct clt_gemm_state {
  /* CLBlast's XGEMM_MIN_INDIRECT_SIZE where we set it (0: its default):
   * batched products at or above its cube run one at a time. */
  int64_t indirect_min;
  /* The CLBlast parameters in force, for the keys of the measured plans
   * (a plan measured under other parameters must miss): "database",
   * "pocl seed 2", or "search " and a hash of the stored search. */
  char params[40];
  /* The fp16 route's state (gemm_mma.c's, made on first use; NULL until
   * then) and what frees it with this state. */
  void *mma;
  void (*mma_free)(void *mma);
  /* The implicit-GEMM convolutions' programs (conv_implicit.c's, made on
   * first use) and what frees them. */
  void *igemm;
  void (*igemm_free)(void *igemm);
  /* Products whose plan (measured, or read from the plan cache) found
   * our own kernels far slower than one GEMM (gemm_measure.c): past a
   * few, they are not run on this device any more. */
  int own_slow;
  /* Test hook: "far slower" is more than this many times one GEMM's time
   * where it is above 0 (else OWN_SLOW_RATIO). */
  double own_slow_ratio;
  /* Convolution layouts whose implicit-GEMM ways all ran far slower than
   * the way chosen (nn/conv2d.c): past a few, not offered any more. */
  int implicit_slow;
} clt_gemm_state;

/* One set of CLBlast parameters for one of its kernels ("Xgemm",
 * "XgemmDirect", "GemmRoutine"); count 0: the parameters in force. */
#define CLT_CLBLAST_MAX_PARAMS 16
typedef struct clt_clblast_set {
  const char *label;
  const char *kernel;
  int count;
  const char *names[CLT_CLBLAST_MAX_PARAMS];
  size_t values[CLT_CLBLAST_MAX_PARAMS];
} clt_clblast_set;

/* Overrides CLBlast's parameters of set->kernel on the context's device
 * (nothing for count 0). false, logged, when CLBlast refuses them. */
bool clt_clblast_apply(clt_context *ctx, const clt_clblast_set *set);

/* The context's GEMM state, set up on the first call: the parameters a
 * search stored for this device and driver (unless measuring is off), else
 * the seed sets for CPU devices of the POCL platform, else CLBlast's own.
 * CLBlast stores overrides per cl_device_id, so a second context on the
 * device repeats them harmlessly. Never fails: an override CLBlast rejects
 * is logged and skipped, and without host memory for the state the
 * defaults serve (a static one). */
const clt_gemm_state *clt_gemm_state_of(clt_context *ctx);

/* The same state to change (gemm_mma.c keeps its route in it); NULL
 * without host memory for it. */
clt_gemm_state *clt_gemm_state_get(clt_context *ctx);

/* Sets the context's state (for the search, which sets the parameters
 * itself); search_text: what the search stored (NULL while it runs). */
void clt_gemm_state_set(clt_context *ctx, int64_t indirect_min,
                        const char *search_text);

/* The plan store's name for the stored search result. */
#define CLT_CLBLAST_STORE_KEY "clblast gemm parameters"

#endif
