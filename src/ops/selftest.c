/* The cases `cltrain selftest` runs: every op on small random inputs. */
#include "ops/opcheck.h"

static clt_status st_fill(clt_context *ctx, double *e) {
  return clt_check_fill(ctx, 1000, e);
}
static clt_status st_copy_view(clt_context *ctx, double *e) {
  return clt_check_copy_view(ctx, 1001, e);
}
static clt_status st_gemm_nn(clt_context *ctx, double *e) {
  return clt_check_gemm(ctx, CLT_NO_TRANS, CLT_NO_TRANS, 33, 17, 65, 1.0f,
                        0.0f, 1, e);
}
static clt_status st_gemm_tn(clt_context *ctx, double *e) {
  return clt_check_gemm(ctx, CLT_TRANS, CLT_NO_TRANS, 31, 7, 19, 0.5f, 1.0f, 1,
                        e);
}
static clt_status st_gemm_nt(clt_context *ctx, double *e) {
  return clt_check_gemm(ctx, CLT_NO_TRANS, CLT_TRANS, 64, 10, 127, 1.0f, 0.0f,
                        1, e);
}
static clt_status st_gemm_tt(clt_context *ctx, double *e) {
  return clt_check_gemm(ctx, CLT_TRANS, CLT_TRANS, 3, 33, 7, -1.0f, 0.5f, 1, e);
}
static clt_status st_gemm_batched(clt_context *ctx, double *e) {
  return clt_check_gemm(ctx, CLT_NO_TRANS, CLT_TRANS, 9, 13, 27, 1.0f, 0.0f, 5,
                        e);
}

const clt_selftest_case clt_selftest_cases[] = {
    {"tensor fill", st_fill, 0.0},
    {"tensor copy (views)", st_copy_view, 0.0},
    {"gemm nn 33x17x65", st_gemm_nn, 1e-5},
    {"gemm tn 31x7x19 beta=1", st_gemm_tn, 1e-5},
    {"gemm nt 64x10x127", st_gemm_nt, 1e-5},
    {"gemm tt 3x33x7 alpha=-1", st_gemm_tt, 1e-5},
    {"gemm strided batched 5x9x13x27", st_gemm_batched, 1e-5},
};
const int clt_selftest_case_count =
    (int)(sizeof clt_selftest_cases / sizeof clt_selftest_cases[0]);
