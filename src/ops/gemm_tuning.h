/* CLBlast tuning overrides for devices its database serves poorly. */
#ifndef CLT_OPS_GEMM_TUNING_H
#define CLT_OPS_GEMM_TUNING_H

#include "runtime/runtime.h"

/* Installs CLBlast parameter overrides suited to the context's device, if
 * any are known (today: CPU devices of the POCL platform). Call once per
 * context, before its first GEMM; the overrides are stored by CLBlast per
 * cl_device_id, so calling it again is harmless. Never fails: an override
 * CLBlast rejects is logged and skipped, leaving its defaults in place. */
void clt_gemm_tune_for_device(clt_context *ctx);

#endif
