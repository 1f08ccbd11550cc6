/* fp32 GEMM by cltrain's own register-blocked kernels (cl/gemm.cl): the
 * measured plans' candidates beside CLBlast's SGEMM for products whose
 * shapes CLBlast's tiles fit badly on a device (on POCL, a CPU: n = 10,
 * k = 9, widths that are not multiples of its tile, where it pads, copies
 * and runs at a third of OpenBLAS). A plan takes one only where it
 * measures faster and its numbers match one SGEMM's (graph/plan.c).
 *
 * Configurations (clt_gemm_blocked_config_name):
 *   "rows 4x32", "rows 8x32", "rows 4x8": op(B) not transposed (B stored
 *     [k, n]), A either way; a work-item computes 4 or 8 rows by 32 or 8
 *     columns of C; n at least the width;
 *   "dot 4x4", "dot 8x2": A [m, k] and B [n, k] (NT), both read along k
 *     in vectors of 16, 4x4 or 8x2 dot products a work-item;
 *   "rows 4x32 c^T", "rows 8x32 c^T": the rows kernels on C^T = op(B)^T
 *     op(A)^T, for A transposed (stored [k, m], read along m), m >= 32,
 *     and B transposed or n < 32 (TT, and TN too narrow for the others);
 *   "rows 6x16", "rows 4x16" (n >= 16), "dot 4x2 v8", "dot 3x3 v8",
 *     "dot 2x4 v8", "rows 6x16 c^T" (m >= 16): the same in vectors of 8,
 *     for CPUs with sixteen 8-float registers (AVX2), where the 16-wide
 *     tiles' partial sums alone fill every register and spill.
 * Their indices are 32-bit: operands beyond 2^31 elements are refused. */
#ifndef CLT_OPS_GEMM_BLOCKED_H
#define CLT_OPS_GEMM_BLOCKED_H

#include "ops/ops.h"

/* Whether configuration `config` can run a product of these transposes
 * and sizes (m x n x k, one matrix). */
bool clt_gemm_blocked_fits(int config, clt_transpose ta, clt_transpose tb,
                           int64_t m, int64_t n, int64_t k);

/* C = alpha op(A) op(B) + beta C by configuration `config`, with explicit
 * leading dimensions and strided batches as clt_gemm_ld (row-major). A
 * configuration that does not fit the product is CLT_ERR_UNSUPPORTED. */
clt_status clt_gemm_blocked_ld(clt_context *ctx, int config, clt_transpose ta,
                               clt_transpose tb, int64_t m, int64_t n,
                               int64_t k, float alpha, const clt_tensor *a,
                               int64_t lda, int64_t stride_a,
                               const clt_tensor *b, int64_t ldb,
                               int64_t stride_b, float beta, clt_tensor *c,
                               int64_t ldc, int64_t stride_c, int64_t batch);

/* Whether configuration `config` can add a bias in its product's launch
 * (clt_gemm_blocked_bias): the dot kernels. */
bool clt_gemm_blocked_takes_bias(int config);

/* C = alpha op(A) op(B) (one matrix, beta 0) by configuration `config`,
 * then C[i, j] += bias[j] and, where relu, C = max(C, 0), in the same
 * launch (k's last part where the device's loop cap cuts k): a dense
 * layer's forward with its bias and fused ReLU, the numbers
 * clt_bias_rows_forward gives after the product. A configuration that
 * does not take a bias (clt_gemm_blocked_takes_bias) is
 * CLT_ERR_INVALID_ARGUMENT. */
clt_status clt_gemm_blocked_bias(clt_context *ctx, int config,
                                 clt_transpose ta, clt_transpose tb, int64_t m,
                                 int64_t n, int64_t k, float alpha,
                                 const clt_tensor *a, int64_t lda,
                                 const clt_tensor *b, int64_t ldb,
                                 clt_tensor *c, int64_t ldc,
                                 const clt_tensor *bias, bool relu);

#endif
