/* fp32 GEMM by cltrain's own register-blocked kernels (gemm_blocked.h,
 * cl/gemm.cl). */
#include "ops/gemm_blocked.h"

#include <limits.h>

#include "tensor/tensor.h"

typedef enum blocked_kind { ROWS, DOT } blocked_kind;

static const struct {
  const char *name;
  clt_kernel_id kernel;
  blocked_kind kind;
  int mr;    /* rows of C a work-item computes */
  int width; /* its columns */
  int vw;    /* the vectors' width */
  /* rows: run as C^T = op(B)^T op(A)^T, its rows along C's columns */
  bool transposed;
  /* rows, k in blocks: a work-group is a column strip's row blocks */
  bool k_blocked;
} configs[CLT_GEMM_BLOCKED_CONFIGS] = {
    {"rows 4x32", CLT_K_gemm_rows_4x32, ROWS, 4, 32, 16, false, false},
    {"rows 8x32", CLT_K_gemm_rows_8x32, ROWS, 8, 32, 16, false, false},
    {"rows 4x8", CLT_K_gemm_rows_4x8, ROWS, 4, 8, 8, false, false},
    {"dot 4x4", CLT_K_gemm_dot_4x4, DOT, 4, 4, 16, false, false},
    {"dot 8x2", CLT_K_gemm_dot_8x2, DOT, 8, 2, 16, false, false},
    {"rows 4x32 c^T", CLT_K_gemm_rows_4x32, ROWS, 4, 32, 16, true, false},
    {"rows 8x32 c^T", CLT_K_gemm_rows_8x32, ROWS, 8, 32, 16, true, false},
    {"rows 6x16", CLT_K_gemm_rows_6x16, ROWS, 6, 16, 8, false, false},
    {"rows 4x16", CLT_K_gemm_rows_4x16, ROWS, 4, 16, 8, false, false},
    {"dot 4x2 v8", CLT_K_gemm_dot_4x2_v8, DOT, 4, 2, 8, false, false},
    {"dot 3x3 v8", CLT_K_gemm_dot_3x3_v8, DOT, 3, 3, 8, false, false},
    {"dot 2x4 v8", CLT_K_gemm_dot_2x4_v8, DOT, 2, 4, 8, false, false},
    {"rows 6x16 c^T", CLT_K_gemm_rows_6x16, ROWS, 6, 16, 8, true, false},
    {"rows 6x16 kb64", CLT_K_gemm_rows_6x16_kb64, ROWS, 6, 16, 8, false, true},
    {"rows 4x32 kb64", CLT_K_gemm_rows_4x32_kb64, ROWS, 4, 32, 16, false, true},
};

CLT_API const char *clt_gemm_blocked_config_name(int config) {
  return config >= 0 && config < CLT_GEMM_BLOCKED_CONFIGS ? configs[config].name
                                                          : "?";
}

bool clt_gemm_blocked_fits(int config, clt_transpose ta, clt_transpose tb,
                           int64_t m, int64_t n, int64_t k) {
  if (config < 0 || config >= CLT_GEMM_BLOCKED_CONFIGS) return false;
  if (m > INT_MAX / k || n > INT_MAX / k || m > INT_MAX / n) return false;
  if (configs[config].kind == DOT)
    return ta == CLT_NO_TRANS && tb == CLT_TRANS;
  /* The narrow strip is offered only where the wide ones cannot run; C^T
   * (whose rows are C's columns: op(A)^T = A stored [k, m] is the operand
   * read along them) where C is narrow or B is transposed. */
  int width = configs[config].width;
  if (configs[config].transposed)
    return ta == CLT_TRANS && m >= width && (tb == CLT_TRANS || n < 32);
  return tb == CLT_NO_TRANS && n >= width && (width >= 16 || n < 32);
}

/* Whether every index the kernel computes into t stays below 2^31. */
static bool fits_int(const clt_tensor *t) {
  return t->offset + t->numel <= INT_MAX;
}

/* How many of k one launch of configuration `config` takes: all of it
 * where the device has no loop cap (clt_device_loop_cap), else as many as
 * keep a work-item's loop iterations within the budget, reckoned from
 * cl/gemm.cl's loops with none unrolled (llvmpipe unrolls none of them;
 * each row of the tile costs one iteration more than its loops show, as
 * counted there: 15, 19, 35 and 27 a k for rows 4x8, 4x32, 8x32 and
 * 6x16). The launches after the first add into C (beta 1). */
static clt_status k_part(clt_context *ctx, int config, int64_t k,
                         int64_t *kc) {
  int64_t cap;
  CLT_TRY(clt_device_loop_cap(ctx, &cap));
  *kc = k;
  if (cap == 0) return CLT_OK;
  int64_t mr = configs[config].mr, vw = configs[config].vw;
  int64_t nv = configs[config].kind == DOT ? configs[config].width
                                          : configs[config].width / vw;
  /* a k (rows) or vw of k (dot): the k loop, the operand loads, the
   * products; before and after: the sums' zeroing and the stores */
  int64_t step = 1 + 2 * nv + mr * (2 + nv);
  if (configs[config].k_blocked) step++; /* the blocks' loop, at most */
  int64_t fixed = 2 * step + mr * nv * (2 + vw);
  int64_t room = clt_loop_budget(cap) - fixed;
  int64_t steps = room > step ? room / step : 1;
  int64_t most = configs[config].kind == DOT ? steps * vw : steps;
  if (most < k) *kc = most;
  return CLT_OK;
}

/* The k-blocked rows kernels' work-group along the row blocks: all of a
 * column strip's (`blocks`) where they are few, else 16 (the range is
 * rounded up to it; the items past m store nothing), within what the
 * kernel can run in one group on this device. */
#define STRIP_GROUP_MOST 64
#define STRIP_GROUP_MANY 16
static clt_status strip_group(clt_context *ctx, clt_kernel_id id,
                              size_t blocks, size_t *out) {
  size_t most = 0;
  cl_kernel kernel;
  CLT_TRY(clt_kernel_get(ctx, id, &kernel));
  cl_int rc = clGetKernelWorkGroupInfo(kernel, ctx->device,
                                       CL_KERNEL_WORK_GROUP_SIZE,
                                       sizeof most, &most, NULL);
  if (rc != CL_SUCCESS)
    return clt_ctx_cl_fail(ctx, rc, "work-group size of a GEMM kernel");
  *out = blocks <= STRIP_GROUP_MOST ? blocks : STRIP_GROUP_MANY;
  if (*out > most) *out = most;
  if (*out < 1) *out = 1;
  return CLT_OK;
}

bool clt_gemm_blocked_takes_bias(int config) {
  return config >= 0 && config < CLT_GEMM_BLOCKED_CONFIGS &&
         configs[config].kind == DOT;
}

/* clt_gemm_blocked_ld, and where epi is not 0 (a dot configuration) the
 * bias (epi 1) and ReLU (2) of clt_gemm_blocked_bias in the launch of k's
 * last part. */
static clt_status blocked_run(clt_context *ctx, int config, clt_transpose ta,
                              clt_transpose tb, int64_t m, int64_t n,
                              int64_t k, float alpha, const clt_tensor *a,
                              int64_t lda, int64_t stride_a,
                              const clt_tensor *b, int64_t ldb,
                              int64_t stride_b, float beta, clt_tensor *c,
                              int64_t ldc, int64_t stride_c, int64_t batch,
                              const clt_tensor *bias, int epi) {
  const char *routine = "gemm_blocked";
  CLT_TRY(clt_gemm_check_args(ctx, routine, ta, tb, m, n, k, a, lda, stride_a,
                              b, ldb, stride_b, c, ldc, stride_c, batch));
  if (!clt_gemm_blocked_fits(config, ta, tb, m, n, k))
    return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED,
                        "%s: configuration \"%s\" does not run %c%c products "
                        "with n = %lld",
                        routine, clt_gemm_blocked_config_name(config),
                        ta == CLT_TRANS ? 'T' : 'N', tb == CLT_TRANS ? 'T' : 'N',
                        (long long)n);
  /* check_args bounded each operand's span by its tensor's size. */
  if (!fits_int(a) || !fits_int(b) || !fits_int(c) || batch > INT_MAX)
    return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED,
                        "%s: operands beyond 2^31 elements", routine);
  int64_t kc;
  CLT_TRY(k_part(ctx, config, k, &kc));
  int mr = configs[config].mr, width = configs[config].width;
  if (configs[config].kind == DOT) {
    size_t global[3] = {(size_t)((n + width - 1) / width),
                        (size_t)((m + mr - 1) / mr), (size_t)batch};
    for (int64_t k0 = 0; k0 < k; k0 += kc) {
      /* A [m, k] and B [n, k]: the part's columns from k0 on */
      clt_tensor ap = clt_tensor_slice_1d(a, k0, a->numel - k0);
      clt_tensor bp = clt_tensor_slice_1d(b, k0, b->numel - k0);
      bool last = k - k0 <= kc;
      CLT_TRY(CLT_RUN(ctx, configs[config].kernel, 3, global, NULL, KI(m),
                      KI(n), KI(last ? k - k0 : kc), KF(alpha),
                      KF(k0 ? 1.0f : beta), KT(&ap), KI(lda), KI(stride_a),
                      KT(&bp), KI(ldb), KI(stride_b), KT(c), KI(ldc),
                      KI(stride_c), KT(epi ? bias : c), KI(last ? epi : 0)));
    }
    return CLT_OK;
  }
  if (epi)
    return clt_ctx_fail(ctx, CLT_ERR_INTERNAL,
                        "%s: configuration \"%s\" adds no bias", routine,
                        clt_gemm_blocked_config_name(config));
  /* The rows kernel computes D = L R, R stored [k, cols] and read along
   * its rows: D is C (L = op(A), R = B) or, transposed, C^T [n, m]
   * (L = op(B)^T, R = A stored [k, m]), whose element (j, i) is C's
   * (i, j). L's element (r, p) lies along r (stride 1) where op(A) is A
   * stored [k, m] or op(B)^T is B stored [k, n]. */
  bool tr = configs[config].transposed;
  int64_t rows = tr ? n : m, cols = tr ? m : n;
  const clt_tensor *left = tr ? b : a, *right = tr ? a : b;
  int64_t l_ld = tr ? ldb : lda, l_stride = tr ? stride_b : stride_a;
  int64_t r_ld = tr ? lda : ldb, r_stride = tr ? stride_a : stride_b;
  bool along_r = tr ? tb == CLT_NO_TRANS : ta == CLT_TRANS;
  int64_t l_sr = along_r ? 1 : l_ld, l_sp = along_r ? l_ld : 1;
  int64_t d_sr = tr ? 1 : ldc, d_sc = tr ? ldc : 1;
  size_t global[3] = {(size_t)((cols + width - 1) / width),
                      (size_t)((rows + mr - 1) / mr), (size_t)batch};
  size_t local[3] = {1, 1, 1};
  if (configs[config].k_blocked)
    CLT_TRY(strip_group(ctx, configs[config].kernel, global[1], &local[1]));
  for (int64_t k0 = 0; k0 < k; k0 += kc) {
    /* the part's k from k0 on: L's element (r, k0), R's row k0 */
    int64_t at_l = k0 * l_sp, at_r = k0 * r_ld;
    clt_tensor lp = clt_tensor_slice_1d(left, at_l, left->numel - at_l);
    clt_tensor rp = clt_tensor_slice_1d(right, at_r, right->numel - at_r);
    CLT_TRY(CLT_RUN(ctx, configs[config].kernel, 3, global,
                    configs[config].k_blocked ? local : NULL, KI(rows),
                    KI(cols), KI(k - k0 < kc ? k - k0 : kc), KF(alpha),
                    KF(k0 ? 1.0f : beta), KT(&lp), KI(l_sr), KI(l_sp),
                    KI(l_stride), KT(&rp), KI(r_ld), KI(r_stride), KT(c),
                    KI(d_sr), KI(d_sc), KI(stride_c)));
  }
  return CLT_OK;
}

clt_status clt_gemm_blocked_ld(clt_context *ctx, int config, clt_transpose ta,
                               clt_transpose tb, int64_t m, int64_t n,
                               int64_t k, float alpha, const clt_tensor *a,
                               int64_t lda, int64_t stride_a,
                               const clt_tensor *b, int64_t ldb,
                               int64_t stride_b, float beta, clt_tensor *c,
                               int64_t ldc, int64_t stride_c, int64_t batch) {
  return blocked_run(ctx, config, ta, tb, m, n, k, alpha, a, lda, stride_a, b,
                     ldb, stride_b, beta, c, ldc, stride_c, batch, NULL, 0);
}

clt_status clt_gemm_blocked_bias(clt_context *ctx, int config,
                                 clt_transpose ta, clt_transpose tb, int64_t m,
                                 int64_t n, int64_t k, float alpha,
                                 const clt_tensor *a, int64_t lda,
                                 const clt_tensor *b, int64_t ldb,
                                 clt_tensor *c, int64_t ldc,
                                 const clt_tensor *bias, bool relu) {
  if (!clt_gemm_blocked_takes_bias(config))
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "gemm_blocked: configuration \"%s\" adds no bias",
                        clt_gemm_blocked_config_name(config));
  if (!bias || bias->numel < n || !fits_int(bias))
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "gemm_blocked: a bias of %lld for %lld columns",
                        (long long)(bias ? bias->numel : 0), (long long)n);
  return blocked_run(ctx, config, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0,
                     0.0f, c, ldc, 0, 1, bias, relu ? 2 : 1);
}

CLT_API clt_status clt_gemm_blocked_strided_batched(
    clt_context *ctx, int config, clt_transpose trans_a, clt_transpose trans_b,
    int64_t m, int64_t n, int64_t k, float alpha, const clt_tensor *a,
    int64_t stride_a, const clt_tensor *b, int64_t stride_b, float beta,
    clt_tensor *c, int64_t stride_c, int64_t batch) {
  return clt_gemm_blocked_ld(ctx, config, trans_a, trans_b, m, n, k, alpha, a,
                             trans_a == CLT_TRANS ? m : k, stride_a, b,
                             trans_b == CLT_TRANS ? k : n, stride_b, beta, c, n,
                             stride_c, batch);
}
