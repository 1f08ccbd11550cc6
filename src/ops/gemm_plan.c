/* The ways one GEMM product of a layer can run (see gemm_plan.h). */
#include "ops/gemm_plan.h"

#include "ops/gemm_blocked.h"
#include "ops/gemm_mma.h"

#include <stdio.h>

#include "tensor/tensor.h"

/* Chunks of split-K hold at least this much of k: below it the partial
 * products are mostly overhead on any device. */
#define SPLIT_K_MIN_CHUNK 16
#define SPLIT_K_MAX 256
/* Most candidates by our own kernels a product gets (the least split
 * plans': room stays for the fp16 route's, clt_gemm_mma_candidates). */
#define BLOCKED_ROOM 24

/* clt_gemm_candidates' list in the row-major form. */
static int row_major_candidates(const clt_gemm_product *p,
                                int64_t max_workspace, int64_t min_split_macs,
                                clt_gemm_plan *out) {
  int count = 0;
  out[count++] = (clt_gemm_plan){CLT_GEMM_ONE, 1, 0, false, 0};
  if (p->images > 1 && !p->images_along_k && p->n % p->images == 0)
    out[count++] = (clt_gemm_plan){CLT_GEMM_SPLIT_N, p->images, 0, false, 0};
  if (!p->images_along_k || p->m * p->n * p->k < min_split_macs)
    return count;
  /* Room for the column-major twins and our own kernels'
   * (clt_gemm_candidates): one, per image and 8 split-K counts. */
  const int room = 10;
  if (p->images > 1 && p->k % p->images == 0 &&
      p->images * p->m * p->n <= max_workspace)
    out[count++] = (clt_gemm_plan){CLT_GEMM_SPLIT_K, p->images, 0, false, 0};
  for (int64_t s = 2; s <= SPLIT_K_MAX && count < room; s *= 2) {
    if (s * SPLIT_K_MIN_CHUNK > p->k || s * p->m * p->n > max_workspace)
      break;
    if (s != p->images || p->k % p->images != 0)
      out[count++] = (clt_gemm_plan){CLT_GEMM_SPLIT_K, s, 0, false, 0};
  }
  return count;
}

int clt_gemm_candidates(const clt_gemm_product *p, int64_t max_workspace,
                        int64_t min_split_macs, clt_gemm_plan *out) {
  int rows = row_major_candidates(p, max_workspace, min_split_macs, out),
      count = rows;
  /* Our own kernels, where they fit each call's n, leaving room for the
   * column-major twins. */
  for (int i = 0; i < rows; i++) {
    int64_t n = out[i].method == CLT_GEMM_SPLIT_N ? p->n / out[i].splits
                                                  : p->n;
    for (int c = 0; c < CLT_GEMM_BLOCKED_CONFIGS; c++)
      if (count < rows + BLOCKED_ROOM &&
          count < CLT_GEMM_MAX_CANDIDATES - rows &&
          clt_gemm_blocked_fits(c, p->ta, p->tb, p->m, n, p->k)) {
        out[count] = out[i];
        out[count++].blocked = c + 1;
      }
  }
  for (int i = 0; i < rows && count < CLT_GEMM_MAX_CANDIDATES; i++) {
    out[count] = out[i];
    out[count++].colmajor = true;
  }
  return count;
}

int clt_gemm_mma_candidates(clt_context *ctx, clt_gemm_plan *out,
                            int count) {
  int fp32 = count;
  for (int c = 0; c < CLT_FP16_CONFIGS && count < CLT_GEMM_MAX_CANDIDATES; c++)
    if (clt_mma_config_usable(ctx, c))
      out[count++] = (clt_gemm_plan){CLT_GEMM_ONE, 1, c + 1, false, 0};
  for (int i = 0; i < fp32 && count < CLT_GEMM_MAX_CANDIDATES; i++)
    if (out[i].method != CLT_GEMM_ONE && !out[i].colmajor && !out[i].blocked)
      out[count++] = (clt_gemm_plan){out[i].method, out[i].splits, 1, false, 0};
  return count;
}

int clt_gemm_tf32x3_candidates(clt_context *ctx, clt_gemm_plan *out,
                                int count) {
  int fp32 = count, smallest = -1;
  for (int c = 0; c < CLT_TF32X3_CONFIGS && count < CLT_GEMM_MAX_CANDIDATES;
       c++)
    if (clt_mma_config_usable(ctx, CLT_MMA_TF32X3(c))) {
      out[count++] =
          (clt_gemm_plan){CLT_GEMM_ONE, 1, CLT_MMA_TF32X3(c) + 1, false, 0};
      /* the table ends with its smallest tiles (64x64), which suit the
       * split products */
      smallest = CLT_MMA_TF32X3(c);
    }
  for (int i = 0; smallest >= 0 && i < fp32 && count < CLT_GEMM_MAX_CANDIDATES;
       i++)
    if (out[i].method != CLT_GEMM_ONE && !out[i].colmajor && !out[i].blocked)
      out[count++] =
          (clt_gemm_plan){out[i].method, out[i].splits, smallest + 1, false, 0};
  return count;
}

int64_t clt_gemm_plan_workspace(const clt_gemm_product *p,
                                const clt_gemm_plan *plan) {
  return plan->method == CLT_GEMM_SPLIT_K ? plan->splits * p->m * p->n : 0;
}

void clt_gemm_plan_name(const clt_gemm_product *p, const clt_gemm_plan *plan,
                        char *buf, size_t len) {
  bool per_image = plan->splits == p->images && p->images > 1 &&
                   (p->images_along_k ? p->k : p->n) % p->images == 0;
  char route[32] = "";
  if (plan->mma > 0)
    snprintf(route, sizeof route, "%s%s ",
             clt_mma_config_is_tf32x3(plan->mma - 1) ? "" : "fp16 ",
             clt_mma_config_name(plan->mma - 1));
  else if (plan->blocked > 0)
    snprintf(route, sizeof route, "own %s ",
             clt_gemm_blocked_config_name(plan->blocked - 1));
  const char *form = plan->colmajor ? " c^T" : "";
  if (plan->method == CLT_GEMM_ONE)
    snprintf(buf, len, "%sone gemm%s", route, form);
  else if (per_image)
    snprintf(buf, len, "%sper image %lld%s", route, (long long)plan->splits,
             form);
  else
    snprintf(buf, len, "%s%s %lld%s", route,
             plan->method == CLT_GEMM_SPLIT_K ? "split-k" : "split-n",
             (long long)plan->splits, form);
}

void clt_gemm_product_str(const clt_gemm_product *p, char *buf, size_t len) {
  snprintf(buf, len, "%c%c %lldx%lldx%lld", p->ta == CLT_TRANS ? 'T' : 'N',
           p->tb == CLT_TRANS ? 'T' : 'N', (long long)p->m, (long long)p->n,
           (long long)p->k);
}

clt_gemm_plan clt_gemm_plan_for(const clt_gemm_plan *plan,
                                const clt_gemm_product *planned,
                                const clt_gemm_product *run) {
  clt_gemm_plan out = *plan;
  if (plan->method != CLT_GEMM_ONE) {
    if (plan->splits == planned->images) out.splits = run->images;
    if (out.method == CLT_GEMM_SPLIT_K && out.splits > run->k)
      out.splits = run->k;
  }
  /* Our own kernel where it runs each call's n, else CLBlast's SGEMM in
   * the same way (a rows kernel 32 wide, chosen for a convolution at batch
   * 64, and one image of 4x4 outputs: n 16). */
  int64_t n = out.method == CLT_GEMM_SPLIT_N && out.splits > 0
                  ? run->n / out.splits
                  : run->n;
  if (out.blocked > 0 && !clt_gemm_blocked_fits(out.blocked - 1, run->ta,
                                                run->tb, run->m, n, run->k))
    out.blocked = 0;
  return out;
}

/* Natural leading dimensions of the whole operands. */
static int64_t ld_a(const clt_gemm_product *p) {
  return p->ta == CLT_TRANS ? p->m : p->k;
}

static int64_t ld_b(const clt_gemm_product *p) {
  return p->tb == CLT_TRANS ? p->k : p->n;
}

clt_status clt_gemm_plan_call(clt_context *ctx, const clt_gemm_plan *plan,
                              clt_transpose ta, clt_transpose tb, int64_t m,
                              int64_t n, int64_t k, float alpha,
                              const clt_tensor *a, int64_t lda,
                              int64_t stride_a, const clt_tensor *b,
                              int64_t ldb, int64_t stride_b, float beta,
                              clt_tensor *c, int64_t ldc, int64_t stride_c,
                              int64_t batch) {
  if (plan->mma > 0)
    return clt_gemm_mma_ld(ctx, plan->mma - 1, ta, tb, m, n, k, alpha, a, lda,
                           stride_a, b, ldb, stride_b, beta, c, ldc, stride_c,
                           batch);
  if (plan->blocked > 0)
    return clt_gemm_blocked_ld(ctx, plan->blocked - 1, ta, tb, m, n, k, alpha,
                               a, lda, stride_a, b, ldb, stride_b, beta, c,
                               ldc, stride_c, batch);
  return clt_gemm_ld(ctx, plan->colmajor, ta, tb, m, n, k, alpha, a, lda,
                     stride_a, b, ldb, stride_b, beta, c, ldc, stride_c,
                     batch);
}

/* The rest of t from element offset on, as a flat tensor. */
static clt_tensor tail_of(const clt_tensor *t, int64_t offset) {
  return clt_tensor_slice_1d(t, offset, t->numel - offset);
}

static clt_status run_split_n(clt_context *ctx, const clt_gemm_product *p,
                              const clt_gemm_plan *plan, float alpha,
                              const clt_tensor *a, const clt_tensor *b,
                              float beta, clt_tensor *c) {
  int64_t splits = plan->splits, nb = p->n / splits;
  /* Column j of op(B) starts at j in a stored [k, n], at j*ldb in [n, k]. */
  int64_t step_b = p->tb == CLT_TRANS ? nb * ld_b(p) : nb;
  return clt_gemm_plan_call(ctx, plan, p->ta, p->tb, p->m, nb, p->k, alpha,
                            a, ld_a(p), 0, b, ld_b(p), step_b, beta, c, p->n,
                            nb, splits);
}

static clt_status run_split_k(clt_context *ctx, const clt_gemm_product *p,
                              const clt_gemm_plan *plan, float alpha,
                              const clt_tensor *a, const clt_tensor *b,
                              float beta, clt_tensor *c, clt_tensor *ws) {
  int64_t splits = plan->splits;
  int64_t chunk = (p->k + splits - 1) / splits;
  int64_t full = p->k / chunk, rest = p->k - full * chunk;
  int64_t mn = p->m * p->n;
  /* k index kk of op(A) is column kk of a stored [m, k] or row kk of a
   * stored [k, m]; of op(B), row kk of [k, n] or column kk of [n, k]. */
  int64_t step_a = p->ta == CLT_TRANS ? chunk * ld_a(p) : chunk;
  int64_t step_b = p->tb == CLT_TRANS ? chunk : chunk * ld_b(p);
  CLT_TRY(clt_gemm_plan_call(ctx, plan, p->ta, p->tb, p->m, p->n, chunk, 1.0f,
                             a, ld_a(p), step_a, b, ld_b(p), step_b, 0.0f, ws,
                             p->n, mn, full));
  if (rest > 0) {
    clt_tensor al = tail_of(a, full * step_a), bl = tail_of(b, full * step_b);
    clt_tensor wl = tail_of(ws, full * mn);
    CLT_TRY(clt_gemm_plan_call(ctx, plan, p->ta, p->tb, p->m, p->n, rest,
                               1.0f, &al, ld_a(p), 0, &bl, ld_b(p), 0, 0.0f,
                               &wl, p->n, 0, 1));
  }
  return clt_sum_slices(ctx, c, ws, mn, full + (rest > 0), alpha, beta);
}

bool clt_gemm_plan_takes_bias(const clt_gemm_plan *plan) {
  return plan->method == CLT_GEMM_ONE && plan->mma == 0 &&
         plan->blocked > 0 && clt_gemm_blocked_takes_bias(plan->blocked - 1);
}

clt_status clt_gemm_plan_run_bias(clt_context *ctx, const clt_gemm_product *p,
                                  const clt_gemm_plan *plan, float alpha,
                                  const clt_tensor *a, const clt_tensor *b,
                                  clt_tensor *c, const clt_tensor *bias,
                                  bool relu) {
  if (!clt_gemm_plan_takes_bias(plan))
    return clt_ctx_fail(ctx, CLT_ERR_INTERNAL,
                        "GEMM plan: its kernel adds no bias");
  return clt_gemm_blocked_bias(ctx, plan->blocked - 1, p->ta, p->tb, p->m,
                               p->n, p->k, alpha, a, ld_a(p), b, ld_b(p), c,
                               p->n, bias, relu);
}

clt_status clt_gemm_plan_run(clt_context *ctx, const clt_gemm_product *p,
                             const clt_gemm_plan *plan, float alpha,
                             const clt_tensor *a, const clt_tensor *b,
                             float beta, clt_tensor *c,
                             clt_tensor *workspace) {
  int64_t s = plan->splits;
  switch (plan->method) {
  case CLT_GEMM_ONE:
    return clt_gemm_plan_call(ctx, plan, p->ta, p->tb, p->m, p->n, p->k,
                              alpha, a, ld_a(p), 0, b, ld_b(p), 0, beta, c,
                              p->n, 0, 1);
  case CLT_GEMM_SPLIT_N:
    if (s < 1 || p->n % s != 0) break;
    return run_split_n(ctx, p, plan, alpha, a, b, beta, c);
  case CLT_GEMM_SPLIT_K:
    if (s < 1 || s > p->k) break;
    if (!workspace || workspace->numel < clt_gemm_plan_workspace(p, plan))
      return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                          "split-k %lld: workspace of %lld floats, it needs "
                          "%lld",
                          (long long)s,
                          (long long)(workspace ? workspace->numel : 0),
                          (long long)clt_gemm_plan_workspace(p, plan));
    return run_split_k(ctx, p, plan, alpha, a, b, beta, c, workspace);
  }
  char shape[64];
  clt_gemm_product_str(p, shape, sizeof shape);
  return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                      "GEMM plan (method %d, %lld splits) does not fit %s",
                      (int)plan->method, (long long)s, shape);
}
