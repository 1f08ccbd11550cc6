/* fp16 products with fp32 sums on tensor cores (cl/mma.cl): mixed
 * precision's products where the device has them and CLBlast cannot reach
 * them (NVIDIA's OpenCL: no cl_khr_fp16, so no HGEMM; inline PTX instead).
 *
 * The route is probed once per context: on a device whose compiler emits
 * PTX (NVIDIA's: the extension cl_nv_device_attribute_query), cl/mma.cl
 * is built with the tensor-core instruction and its result on a small
 * product checked against the host; where it builds and is right, the
 * products of a mixed-precision graph get its tile configurations as
 * candidates beside CLBlast's SGEMM, and the measured plans choose
 * (graph/plan.c), where each candidate's numbers are compared with
 * SGEMM's before it may be chosen (so a tile configuration that the probe
 * did not run is checked too). Elsewhere the products stay SGEMM on the
 * fp16 values.
 * CLT_MMA=off turns the probe off; CLT_MMA=ptx probes on any device (a
 * compiler that does not emit PTX refuses the kernel: the CPU stacks say
 * "invalid output constraint"); CLT_MMA=emulate builds the same kernel
 * with the instruction done in OpenCL C, on any device (slow: for tests,
 * which see every line of the kernel but the instruction itself). */
#ifndef CLT_OPS_GEMM_MMA_H
#define CLT_OPS_GEMM_MMA_H

#include "ops/ops.h"

/* clt_fp16_route_get (cltrain.h) probes the route on its first call:
 * building the kernel and checking one product; a kernel that does not
 * build or gives wrong numbers is no error, only CLT_FP16_SGEMM with the
 * reason. clt_fp16_config_name names the tile configurations. */

/* C = alpha op(A) op(B) + beta C with A and B rounded to fp16 and f32
 * sums (or as 3xTF32, below), by the route's kernel in configuration
 * `config` (of CLT_MMA_CONFIGS), with
 * explicit leading dimensions and strided batches as clt_gemm_ld. The
 * route must not be CLT_FP16_SGEMM (CLT_ERR_UNSUPPORTED). */
clt_status clt_gemm_mma_ld(clt_context *ctx, int config, clt_transpose ta,
                           clt_transpose tb, int64_t m, int64_t n, int64_t k,
                           float alpha, const clt_tensor *a, int64_t lda,
                           int64_t stride_a, const clt_tensor *b, int64_t ldb,
                           int64_t stride_b, float beta, clt_tensor *c,
                           int64_t ldc, int64_t stride_c, int64_t batch);

/* The route's kernels: the fp16 tile configurations (0 ..
 * CLT_FP16_CONFIGS - 1), then 3xTF32's (CLT_MMA_TF32X3(c) for c of
 * cltrain.h's clt_tf32x3_config_name): fp32 products on the same tensor
 * cores, as accurate as f32 (cl/mma.cl's MMA_WG_TF32), on the devices
 * where the warpgroup form runs. clt_gemm_mma_ld takes either; a 3xTF32
 * configuration checks its numbers on its first run (CLT_ERR_UNSUPPORTED
 * from then on where they are less accurate than f32). */
#define CLT_MMA_CONFIGS (CLT_FP16_CONFIGS + CLT_TF32X3_CONFIGS)
#define CLT_MMA_TF32X3(c) (CLT_FP16_CONFIGS + (c))
const char *clt_mma_config_name(int config);
bool clt_mma_config_is_tf32x3(int config);

/* Whether configuration `config` (of CLT_MMA_CONFIGS) can run here: the
 * route is not SGEMM, and a "ring" configuration's ring of k-blocks fits
 * the device's local memory and its kernel built (false after a build
 * that failed, or a 3xTF32 check that did). */
bool clt_mma_config_usable(clt_context *ctx, int config);

/* The build options that give another program the route's instruction
 * (cl/prelude.cl's MMA_16816: "-DCLT_MMA_PTX=... -DCLT_MMA_ASM=..."),
 * probing the route first; CLT_ERR_UNSUPPORTED where it is SGEMM. */
clt_status clt_fp16_build_flags(clt_context *ctx, char *buf, size_t len);

#endif
