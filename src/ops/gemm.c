/* GEMM through CLBlast: row-major, either transpose, single and
 * strided-batched, on whole matrices or on blocks of wider ones (explicit
 * leading dimensions). */
#include <clblast_c.h>
#include <stdio.h>

#include "ops/gemm_tuning.h"
#include "ops/ops.h"
#include "tensor/tensor.h"

static const char *clblast_name(CLBlastStatusCode code) {
  switch (code) {
  case CLBlastNotImplemented: return "not implemented";
  case CLBlastInvalidMatrixA: return "invalid matrix A";
  case CLBlastInvalidMatrixB: return "invalid matrix B";
  case CLBlastInvalidMatrixC: return "invalid matrix C";
  case CLBlastInvalidDimension: return "invalid dimension";
  case CLBlastInvalidLeadDimA: return "invalid leading dimension of A";
  case CLBlastInvalidLeadDimB: return "invalid leading dimension of B";
  case CLBlastInvalidLeadDimC: return "invalid leading dimension of C";
  case CLBlastInsufficientMemoryA: return "buffer of A too small";
  case CLBlastInsufficientMemoryB: return "buffer of B too small";
  case CLBlastInsufficientMemoryC: return "buffer of C too small";
  case CLBlastInvalidBatchCount: return "invalid batch count";
  case CLBlastInvalidLocalMemUsage: return "not enough local memory";
  case CLBlastDatabaseError: return "no tuning database entry";
  case CLBlastTempBufferAllocFailure: return "temporary buffer allocation failed";
  case CLBlastOpenCLBuildProgramFailure: return "kernel build failed";
  default: break;
  }
  return code > -1000 ? clt_cl_error_name((cl_int)code) : "CLBlast error";
}

static clt_status clblast_fail(clt_context *ctx, const char *routine,
                               CLBlastStatusCode code, int64_t m, int64_t n,
                               int64_t k) {
  clt_status st = (code == CLBlastTempBufferAllocFailure ||
                   code == CLBlastOpenCLOutOfResources)
                      ? CLT_ERR_DEVICE_MEMORY
                      : CLT_ERR_CLBLAST;
  return clt_ctx_fail(ctx, st, "%s (m=%lld n=%lld k=%lld): %s (%d)", routine,
                      (long long)m, (long long)n, (long long)k,
                      clblast_name(code), (int)code);
}

static clt_status check_operand(clt_context *ctx, const char *routine,
                                const char *which, const clt_tensor *t,
                                int64_t needed) {
  if (!t || t->dtype != CLT_F32)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "%s: %s must be an f32 tensor", routine, which);
  if (t->numel < needed)
    return clt_ctx_fail(ctx, CLT_ERR_SHAPE,
                        "%s: %s holds %lld elements, the product needs %lld",
                        routine, which, (long long)t->numel, (long long)needed);
  return CLT_OK;
}

static clt_status check_dims(clt_context *ctx, const char *routine, int64_t m,
                             int64_t n, int64_t k) {
  if (m < 1 || n < 1 || k < 1)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "%s: m=%lld n=%lld k=%lld, all must be positive",
                        routine, (long long)m, (long long)n, (long long)k);
  return CLT_OK;
}

static CLBlastTranspose to_clblast(clt_transpose t) {
  return t == CLT_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;
}

CLT_API clt_status clt_gemm(clt_context *ctx, clt_transpose ta,
                            clt_transpose tb, int64_t m, int64_t n, int64_t k,
                            float alpha, const clt_tensor *a,
                            const clt_tensor *b, float beta, clt_tensor *c) {
  return clt_gemm_strided_batched(ctx, ta, tb, m, n, k, alpha, a, 0, b, 0,
                                  beta, c, 0, 1);
}

/* Either form with the natural leading dimensions (the stored row
 * lengths). */
static clt_status gemm_natural(clt_context *ctx, bool colmajor,
                               clt_transpose ta, clt_transpose tb, int64_t m,
                               int64_t n, int64_t k, float alpha,
                               const clt_tensor *a, int64_t stride_a,
                               const clt_tensor *b, int64_t stride_b,
                               float beta, clt_tensor *c, int64_t stride_c,
                               int64_t batch) {
  int64_t lda = ta == CLT_TRANS ? m : k;
  int64_t ldb = tb == CLT_TRANS ? k : n;
  return clt_gemm_ld(ctx, colmajor, ta, tb, m, n, k, alpha, a, lda, stride_a,
                     b, ldb, stride_b, beta, c, n, stride_c, batch);
}

CLT_API clt_status clt_gemm_strided_batched(
    clt_context *ctx, clt_transpose ta, clt_transpose tb, int64_t m, int64_t n,
    int64_t k, float alpha, const clt_tensor *a, int64_t stride_a,
    const clt_tensor *b, int64_t stride_b, float beta, clt_tensor *c,
    int64_t stride_c, int64_t batch) {
  return gemm_natural(ctx, false, ta, tb, m, n, k, alpha, a, stride_a, b,
                      stride_b, beta, c, stride_c, batch);
}

CLT_API clt_status clt_gemm_strided_batched_colmajor(
    clt_context *ctx, clt_transpose ta, clt_transpose tb, int64_t m, int64_t n,
    int64_t k, float alpha, const clt_tensor *a, int64_t stride_a,
    const clt_tensor *b, int64_t stride_b, float beta, clt_tensor *c,
    int64_t stride_c, int64_t batch) {
  return gemm_natural(ctx, true, ta, tb, m, n, k, alpha, a, stride_a, b,
                      stride_b, beta, c, stride_c, batch);
}

/* Elements an operand of rows x cols stored with leading dimension ld
 * spans, over batch matrices stride apart. */
static int64_t operand_span(int64_t rows, int64_t cols, int64_t ld,
                            int64_t stride, int64_t batch) {
  return stride * (batch - 1) + (rows - 1) * ld + cols;
}

static clt_status check_ld(clt_context *ctx, const char *routine,
                           const char *which, int64_t ld, int64_t cols) {
  if (ld < cols)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "%s: leading dimension of %s is %lld, its rows hold "
                        "%lld",
                        routine, which, (long long)ld, (long long)cols);
  return CLT_OK;
}

clt_status clt_gemm_check_args(clt_context *ctx, const char *routine,
                               clt_transpose ta, clt_transpose tb, int64_t m,
                               int64_t n, int64_t k, const clt_tensor *a,
                               int64_t lda, int64_t stride_a,
                               const clt_tensor *b, int64_t ldb,
                               int64_t stride_b, const clt_tensor *c,
                               int64_t ldc, int64_t stride_c, int64_t batch) {
  CLT_TRY(check_dims(ctx, routine, m, n, k));
  if (batch < 1)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT, "%s: batch %lld",
                        routine, (long long)batch);
  int64_t a_rows = ta == CLT_TRANS ? k : m, a_cols = ta == CLT_TRANS ? m : k;
  int64_t b_rows = tb == CLT_TRANS ? n : k, b_cols = tb == CLT_TRANS ? k : n;
  CLT_TRY(check_ld(ctx, routine, "A", lda, a_cols));
  CLT_TRY(check_ld(ctx, routine, "B", ldb, b_cols));
  CLT_TRY(check_ld(ctx, routine, "C", ldc, n));
  CLT_TRY(check_operand(ctx, routine, "A", a,
                        operand_span(a_rows, a_cols, lda, stride_a, batch)));
  CLT_TRY(check_operand(ctx, routine, "B", b,
                        operand_span(b_rows, b_cols, ldb, stride_b, batch)));
  return check_operand(ctx, routine, "C", c,
                       operand_span(m, n, ldc, stride_c, batch));
}

/* An operand as CLBlast gets it: its own sub-buffer at offset 0 where the
 * device allows one (CLBlast's Xgemm copies an operand with a non-zero
 * offset to a temporary before it runs, and graph tensors are views into
 * arenas), else the tensor's buffer and element offset. */
typedef struct clblast_operand {
  cl_mem mem;
  size_t offset;
  bool own; /* a sub-buffer reference of ours, released after the call */
} clblast_operand;

static clblast_operand operand_at(clt_context *ctx, const clt_tensor *t,
                                  int64_t span) {
  cl_mem sub = clt_sub_buffer_get(ctx, t->buffer, (size_t)t->offset * 4,
                                  (size_t)span * 4);
  return sub ? (clblast_operand){sub, 0, true}
             : (clblast_operand){t->buffer, (size_t)t->offset, false};
}

static void operand_done(clblast_operand *o) {
  if (o->own) clReleaseMemObject(o->mem);
}

/* On a device that ends a work-item's loops early (clt_device_loop_cap),
 * products with k above this many caps run in parts along k: CLBlast's
 * kernels ran 16 (Xgemm) and 32 (XgemmDirect) of k a counted loop
 * iteration on llvmpipe (products of ones stopped at 1,048,529 and
 * 2,097,120 of k with a cap of 65,535), so parts of 2 caps leave 8x. */
#define CLBLAST_K_PER_CAP 2

clt_status clt_gemm_ld(clt_context *ctx, bool colmajor, clt_transpose ta,
                       clt_transpose tb,
                       int64_t m, int64_t n, int64_t k, float alpha,
                       const clt_tensor *a, int64_t lda, int64_t stride_a,
                       const clt_tensor *b, int64_t ldb, int64_t stride_b,
                       float beta, clt_tensor *c, int64_t ldc,
                       int64_t stride_c, int64_t batch) {
  const char *routine = batch == 1 ? "CLBlastSgemm" : "CLBlastSgemmStridedBatched";
  CLT_TRY(clt_gemm_check_args(ctx, routine, ta, tb, m, n, k, a, lda, stride_a,
                              b, ldb, stride_b, c, ldc, stride_c, batch));
  int64_t cap;
  CLT_TRY(clt_device_loop_cap(ctx, &cap));
  if (cap > 0 && k > CLBLAST_K_PER_CAP * cap) {
    /* in parts along k, the later ones adding into C */
    int64_t part = CLBLAST_K_PER_CAP * cap;
    for (int64_t k0 = 0; k0 < k; k0 += part) {
      int64_t at_a = ta == CLT_TRANS ? k0 * lda : k0;
      int64_t at_b = tb == CLT_TRANS ? k0 : k0 * ldb;
      clt_tensor ap = clt_tensor_slice_1d(a, at_a, a->numel - at_a);
      clt_tensor bp = clt_tensor_slice_1d(b, at_b, b->numel - at_b);
      CLT_TRY(clt_gemm_ld(ctx, colmajor, ta, tb, m, n,
                          k - k0 < part ? k - k0 : part, alpha, &ap, lda,
                          stride_a, &bp, ldb, stride_b, k0 ? 1.0f : beta, c,
                          ldc, stride_c, batch));
    }
    return CLT_OK;
  }
  int64_t a_rows = ta == CLT_TRANS ? k : m, a_cols = ta == CLT_TRANS ? m : k;
  int64_t b_rows = tb == CLT_TRANS ? n : k, b_cols = tb == CLT_TRANS ? k : n;
  /* CLBlast 1.5.3's indirect batched kernel ignores operand strides and
   * offsets in some cases (see gemm_tuning.c): where we moved its
   * threshold, such products go one by one. */
  int64_t lim = clt_gemm_state_of(ctx)->indirect_min;
  if (batch > 1 && lim > 0 && m * n * k >= lim * lim * lim) {
    for (int64_t i = 0; i < batch; i++) {
      clt_tensor ai = clt_tensor_slice_1d(
          a, i * stride_a, operand_span(a_rows, a_cols, lda, 0, 1));
      clt_tensor bi = clt_tensor_slice_1d(
          b, i * stride_b, operand_span(b_rows, b_cols, ldb, 0, 1));
      clt_tensor ci =
          clt_tensor_slice_1d(c, i * stride_c, operand_span(m, n, ldc, 0, 1));
      CLT_TRY(clt_gemm_ld(ctx, colmajor, ta, tb, m, n, k, alpha, &ai, lda, 0,
                          &bi, ldb, 0, beta, &ci, ldc, 0, 1));
    }
    return CLT_OK;
  }
  /* CLBlast sets the event of its last kernel only; the span covers the
   * copies and padding it may enqueue first. */
  cl_event *ev = clt_profile_span(ctx, "gemm");
  /* Column-major: C^T [n, m] = op(B)^T [n, k] op(A)^T [k, m], where a
   * row-major operand is its transpose in column-major order with the same
   * leading dimension, so only the operands, sizes and flags swap. */
  CLBlastLayout layout = colmajor ? CLBlastLayoutColMajor
                                  : CLBlastLayoutRowMajor;
  const clt_tensor *first = colmajor ? b : a, *second = colmajor ? a : b;
  clt_transpose t1 = colmajor ? tb : ta, t2 = colmajor ? ta : tb;
  int64_t d1 = colmajor ? n : m, d2 = colmajor ? m : n;
  int64_t ld1 = colmajor ? ldb : lda, ld2 = colmajor ? lda : ldb;
  int64_t s1 = colmajor ? stride_b : stride_a,
          s2 = colmajor ? stride_a : stride_b;
  int64_t span_a = operand_span(a_rows, a_cols, lda, stride_a, batch);
  int64_t span_b = operand_span(b_rows, b_cols, ldb, stride_b, batch);
  clblast_operand o1 = operand_at(ctx, first, colmajor ? span_b : span_a);
  clblast_operand o2 = operand_at(ctx, second, colmajor ? span_a : span_b);
  clblast_operand oc =
      operand_at(ctx, c, operand_span(m, n, ldc, stride_c, batch));
  CLBlastStatusCode rc;
  clt_turn_begin(ctx);
  if (batch == 1)
    rc = CLBlastSgemm(layout, to_clblast(t1), to_clblast(t2), (size_t)d1,
                      (size_t)d2, (size_t)k, alpha, o1.mem, o1.offset,
                      (size_t)ld1, o2.mem, o2.offset, (size_t)ld2, beta,
                      oc.mem, oc.offset, (size_t)ldc, &ctx->queue, ev);
  else
    rc = CLBlastSgemmStridedBatched(
        layout, to_clblast(t1), to_clblast(t2), (size_t)d1, (size_t)d2,
        (size_t)k, alpha, o1.mem, o1.offset, (size_t)ld1, (size_t)s1, o2.mem,
        o2.offset, (size_t)ld2, (size_t)s2, beta, oc.mem, oc.offset,
        (size_t)ldc, (size_t)stride_c, (size_t)batch, &ctx->queue, ev);
  clt_turn_end(ctx);
  operand_done(&o1);
  operand_done(&o2);
  operand_done(&oc);
  if (rc != CLBlastSuccess) return clblast_fail(ctx, routine, rc, m, n, k);
  return CLT_OK;
}
