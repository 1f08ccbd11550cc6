/* The ways one GEMM product of a layer can run, and running it one way.
 *
 * A product C[m,n] = alpha op(A) op(B) + beta C over whole, contiguous
 * matrices (natural leading dimensions) may span a batch of images side by
 * side, along n (the im2col columns of a convolution's forward and data
 * gradient) or along k (its weight gradient). Besides one GEMM over the
 * whole product, that structure allows:
 *   - per image, along n: one strided-batched GEMM over the images' column
 *     blocks (the shared operand with stride 0);
 *   - split-K, along k: k cut into S chunks of ceil(k/S), the full chunks
 *     as one strided-batched GEMM writing S partial products into a
 *     workspace, a shorter last chunk as one more GEMM, then the partials
 *     summed in order by cl/reduce.cl's sum_slices. Per image is split-K
 *     with S = images.
 * Which is fastest depends on the device (one GEMM with a huge k runs at
 * 13 GFLOP/s on an H100, per image at 714), so the graph measures them
 * (gemm_measure.h) and remembers the choice. Each of these runs through
 * CLBlast (in either form) or through one of cltrain's own fp32 kernels
 * (gemm_blocked.h) that fits the product's transposes and widths. */
#ifndef CLT_OPS_GEMM_PLAN_H
#define CLT_OPS_GEMM_PLAN_H

#include "ops/ops.h"

typedef enum clt_gemm_method {
  CLT_GEMM_ONE = 0, /* one GEMM over the whole product: the default */
  CLT_GEMM_SPLIT_N, /* n in `splits` equal blocks, one batched GEMM */
  CLT_GEMM_SPLIT_K, /* k in `splits` chunks, partials summed */
} clt_gemm_method;

typedef struct clt_gemm_plan {
  clt_gemm_method method;
  int64_t splits; /* 1 for CLT_GEMM_ONE */
  /* 0: CLBlast's SGEMM; c + 1: the fp16 route's kernel in configuration
   * c of CLT_MMA_CONFIGS (gemm_mma.h): an fp16 one for mixed precision,
   * a 3xTF32 one for fp32, where the device has the route. */
  int mma;
  /* SGEMM asked of CLBlast in column-major order, as C^T (clt_gemm_ld's
   * colmajor: the same product without CLBlast's copies of C where its
   * kernel wants C that way); false for the fp16 route. */
  bool colmajor;
  /* 0: as above; c + 1: our own fp32 kernel in configuration c
   * (gemm_blocked.h) instead of CLBlast. */
  int blocked;
} clt_gemm_plan;

typedef struct clt_gemm_product {
  clt_transpose ta, tb;
  int64_t m, n, k;
  int64_t images;      /* images side by side in the product (1: none) */
  bool images_along_k; /* their blocks cut k (else n) into equal parts */
} clt_gemm_product;

/* Most candidates one product has. */
#define CLT_GEMM_MAX_CANDIDATES CLT_PLAN_MAX_CANDIDATES

/* Split-K (per image included) is a candidate only for products of at
 * least this many multiply-adds (clt_gemm_candidates' min_split_macs, as
 * the graph passes it but for its test hooks). It pays where a long k
 * leaves a device's threads idle; it adds a launch (the sum) and S partial
 * products, so a product this small (2 MFLOP: a fraction of a launch's
 * cost on a GPU, tens of microseconds on a CPU) has little to win, and
 * that little goes to the extra launch (on POCL split-K lost on every
 * product of the MLP at batch 32). Measuring it is not free: on POCL its
 * first run compiles CLBlast's strided-batched routine, 59 s on a 2-core
 * Xeon for the MLP's last weight gradient (TN 10x128x32 at batch 32),
 * where it ran at half one GEMM's speed. */
#define CLT_GEMM_SPLIT_K_MIN_MACS ((int64_t)1 << 20)

/* Lists the plans worth measuring for p into out (room for
 * CLT_GEMM_MAX_CANDIDATES), one GEMM first; split-K counts (on products
 * of min_split_macs multiply-adds and more) are powers of two from 2 whose
 * chunks hold at least 16 of k and whose partials fit in max_workspace
 * floats, plus the per-image split; then those by each of
 * our own kernels that fits them (the least split first, as room allows
 * beside the next); then each of the first ones in the column-major form
 * (colmajor), the most split last. Returns the count. */
int clt_gemm_candidates(const clt_gemm_product *p, int64_t max_workspace,
                        int64_t min_split_macs, clt_gemm_plan *out);

/* Appends to out[0..count) the fp16 route's candidates for mixed
 * precision: one GEMM in each tile configuration usable on ctx's device
 * (clt_mma_config_usable), and every other plan
 * of the list in the first (the small tiles suit split products), as
 * room allows up to CLT_GEMM_MAX_CANDIDATES. Returns the new count. */
int clt_gemm_mma_candidates(clt_context *ctx, clt_gemm_plan *out,
                            int count);

/* Appends to out[0..count) an fp32 product's 3xTF32 candidates (as
 * accurate as SGEMM, gemm_mma.h): one GEMM in each 3xTF32 configuration
 * usable on ctx's device, and every other plan of the list in the last
 * usable one (the table ends with 64x64: the split products are small),
 * as room allows.
 * Returns the new count. */
int clt_gemm_tf32x3_candidates(clt_context *ctx, clt_gemm_plan *out,
                               int count);

/* Floats of workspace the plan needs (0 but for split-K). */
int64_t clt_gemm_plan_workspace(const clt_gemm_product *p,
                                const clt_gemm_plan *plan);

/* A short name: "one gemm", "per image 64", "split-k 8", the
 * column-major form's with " c^T" after ("split-k 8 c^T"); our own
 * kernels' and the fp16 route's with the kernel first: "own dot 4x4
 * split-k 8", "fp16 64x64 split-k 8". */
void clt_gemm_plan_name(const clt_gemm_product *p, const clt_gemm_plan *plan,
                        char *buf, size_t len);

/* "NT 64x288x7744": transposes and m x n x k, for keys and reports. */
void clt_gemm_product_str(const clt_gemm_product *p, char *buf, size_t len);

/* The plan chosen for `planned` (a product over the compiled batch) as
 * it applies to `run`, the same product over a smaller last batch: per
 * image stays per image (splits = run's images), split-K keeps its count
 * up to run's k, and our own kernel becomes CLBlast's SGEMM where it does
 * not run run's shape (a strip wider than run's n). */
clt_gemm_plan clt_gemm_plan_for(const clt_gemm_plan *plan,
                                const clt_gemm_product *planned,
                                const clt_gemm_product *run);

/* Runs p with the plan: C = alpha op(A) op(B) + beta C. workspace holds at
 * least clt_gemm_plan_workspace floats (may be NULL when that is 0). A
 * plan that does not fit p (splits out of range, blocks that do not
 * divide n) is CLT_ERR_INVALID_ARGUMENT. */
clt_status clt_gemm_plan_run(clt_context *ctx, const clt_gemm_product *p,
                             const clt_gemm_plan *plan, float alpha,
                             const clt_tensor *a, const clt_tensor *b,
                             float beta, clt_tensor *c, clt_tensor *workspace);

/* One call of the plan's kernel, whatever the plan's method: C =
 * alpha op(A) op(B) + beta C with explicit leading dimensions and strided
 * batches as clt_gemm_ld, by CLBlast's SGEMM (in the plan's form), our
 * own fp32 kernel or the fp16 route's kernel. The caller sees that the
 * kernel runs the shape (clt_gemm_blocked_fits). */
clt_status clt_gemm_plan_call(clt_context *ctx, const clt_gemm_plan *plan,
                              clt_transpose ta, clt_transpose tb, int64_t m,
                              int64_t n, int64_t k, float alpha,
                              const clt_tensor *a, int64_t lda,
                              int64_t stride_a, const clt_tensor *b,
                              int64_t ldb, int64_t stride_b, float beta,
                              clt_tensor *c, int64_t ldc, int64_t stride_c,
                              int64_t batch);

/* Whether the plan's kernel can add a bias (and a ReLU) to C in its own
 * launch: one GEMM by our own dot kernels (clt_gemm_blocked_takes_bias). */
bool clt_gemm_plan_takes_bias(const clt_gemm_plan *plan);
/* Runs p with such a plan as C = alpha op(A) op(B), then C[i, j] +=
 * bias[j] and a ReLU where relu, in the same launch
 * (clt_gemm_blocked_bias); another plan is CLT_ERR_INTERNAL. */
clt_status clt_gemm_plan_run_bias(clt_context *ctx, const clt_gemm_product *p,
                                  const clt_gemm_plan *plan, float alpha,
                                  const clt_tensor *a, const clt_tensor *b,
                                  clt_tensor *c, const clt_tensor *bias,
                                  bool relu);

#endif
