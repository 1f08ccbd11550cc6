/* Hopper's warpgroup tensor-core instructions (wgmma) in a program that
 * NVIDIA's OpenCL compiler built for the baseline target sm_90, where they
 * do not exist: cl/mma.cl's gemm_wgmma is built with placeholders, inline
 * assembly whose text is a "// CLT_WG ..." comment naming the registers of
 * its operands, and clt_wgmma_patch_ptx rewrites the program's PTX (what
 * the driver returns as the program's binary) into what the driver then
 * builds for sm_90a (src/runtime/program.c, clt_program_build_patched).
 * samples/bench/ptx_probe.c showed the route on an H200 (driver 580). */
#ifndef CLT_OPS_WGMMA_PTX_H
#define CLT_OPS_WGMMA_PTX_H

#include <stddef.h>

/* The version of the rewriting, part of the kernel cache's key. */
#define CLT_WGMMA_PATCH_TAG "wgmma-patch-3"

/* The PTX `ptx` with:
 *   `.target sm_90` -> `.target sm_90a` (any other target is refused:
 *     wgmma exists on sm_90a only), `.version` raised to 8.0 if lower;
 *   `// CLT_WG mma N acc... da db` (N/2 accumulator registers, then the
 *     two descriptors) and the `mov.f32` on the line after it ->
 *     wgmma.mma_async.sync.aligned.m64nNk16.f32.f16.f16, D += A B;
 *   `// CLT_WG tf32 N ...` the same on tf32 operands (m64nNk8.f32.tf32.tf32);
 *   `// CLT_WG arrive`, `commit`, `wait D`, `proxy` -> wgmma.fence,
 *     wgmma.commit_group, wgmma.wait_group D, fence.proxy.async.shared::cta;
 *   `// CLT_WG hold ...` -> nothing;
 *   `// CLT_WG ctas N` -> `.minnctapersm N` after the `.reqntid` (or
 *     `.maxntid`) line of the `.entry` it is in (refused where there is
 *     none): registers for N blocks on each multiprocessor.
 * Returns a new string (the caller frees it), or NULL with the reason in
 * why: no placeholder, a malformed one, no target line, or no memory. */
char *clt_wgmma_patch_ptx(const char *ptx, char *why, size_t why_len);

#endif
