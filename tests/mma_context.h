/* A context whose fp16 route is the emulated kernel (CLT_MMA=emulate, see
 * ops/gemm_mma.h): the tests of the tensor-core kernel's every line but
 * the instruction itself, on any device. */
#ifndef CLT_TESTS_MMA_CONTEXT_H
#define CLT_TESTS_MMA_CONTEXT_H

#include <stdlib.h>
#include <string.h>

#include "check/check.h"
#include "common.h"
#include "ops/gemm_mma.h"

/* Creates the context (opts may be NULL) and probes its route while
 * CLT_MMA says emulate; fails the test unless the route is emulated. */
static inline clt_context *open_emulated_mma(const clt_context_options *opts) {
  test_setenv("CLT_MMA", "emulate");
  clt_context *ctx = NULL;
  char err[4096];
  clt_status st = clt_context_create(opts, &ctx, err, sizeof err);
  clt_fp16_route route = CLT_FP16_SGEMM;
  if (st == CLT_OK) st = clt_fp16_route_get(ctx, &route, NULL);
  test_setenv("CLT_MMA", NULL);
  ck_assert_msg(st == CLT_OK && route == CLT_FP16_MMA_EMULATED,
                "context with the emulated fp16 route: %s",
                ctx ? clt_context_last_error(ctx) : err);
  return ctx;
}

/* clt_check_gemm_mma or clt_check_gemm_tf32x3, as configuration `config`
 * of CLT_MMA_CONFIGS is an fp16 or a 3xTF32 one. */
static inline clt_status check_mma_config(clt_context *ctx, int config,
                                          clt_transpose ta, clt_transpose tb,
                                          int64_t m, int64_t n, int64_t k,
                                          float alpha, float beta,
                                          int64_t batch, double *e) {
  return clt_mma_config_is_tf32x3(config)
             ? clt_check_gemm_tf32x3(ctx, config - CLT_FP16_CONFIGS, ta, tb, m,
                                     n, k, alpha, beta, batch, e)
             : clt_check_gemm_mma(ctx, config, ta, tb, m, n, k, alpha, beta,
                                  batch, e);
}

/* True where configuration `config` (of CLT_MMA_CONFIGS) cannot run on
 * ctx's device (a
 * ring configuration whose ring is larger than the local memory:
 * llvmpipe's 32 KB), after checking that it is refused as documented:
 * CLT_ERR_UNSUPPORTED, naming the local memory. */
static inline bool mma_config_refused(clt_context *ctx, int config) {
  if (clt_mma_config_usable(ctx, config)) return false;
  double e = 0.0;
  clt_status st = check_mma_config(ctx, config, CLT_NO_TRANS, CLT_NO_TRANS,
                                   9, 9, 9, 1.0f, 0.0f, 1, &e);
  ck_assert_msg(st == CLT_ERR_UNSUPPORTED &&
                    strstr(clt_context_last_error(ctx), "local memory"),
                "%s: refused with %s: %s", clt_mma_config_name(config),
                clt_status_string(st), clt_context_last_error(ctx));
  return true;
}

#endif
