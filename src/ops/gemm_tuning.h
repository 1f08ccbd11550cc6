/* CLBlast tuning overrides for devices its database serves poorly. */
#ifndef CLT_OPS_GEMM_TUNING_H
#define CLT_OPS_GEMM_TUNING_H

#include "runtime/runtime.h"

/* What ops/ knows about the context's device for GEMM. */
typedef struct clt_gemm_state {
  /* CLBlast's XGEMM_MIN_INDIRECT_SIZE where we set it (0: its default):
   * batched products at or above its cube run one at a time. */
  int64_t indirect_min;
} clt_gemm_state;

/* The context's GEMM state, set up on the first call: CLBlast parameter
 * overrides suited to the device, if any are known (today: CPU devices of
 * the POCL platform; CLBlast stores them per cl_device_id, so a second
 * context on the device repeats them harmlessly). Never fails: an override
 * CLBlast rejects is logged and skipped, leaving its defaults, and without
 * host memory for the state the defaults serve (a static one). */
const clt_gemm_state *clt_gemm_state_of(clt_context *ctx);

#endif
