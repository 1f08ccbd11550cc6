/* Sub-buffers for library calls that copy an operand which does not start
 * at the beginning of its cl_mem (see runtime.h, clt_sub_buffer_get). */
#include <stdlib.h>

#include "runtime/runtime.h"

struct clt_sub_buffer {
  cl_mem parent;
  size_t origin, bytes;
  cl_mem mem;
};

#define SUB_BUFFER_MAX 512

cl_mem clt_sub_buffer_get(clt_context *ctx, cl_mem parent, size_t origin,
                          size_t bytes) {
  if (origin == 0 || bytes == 0 || ctx->base_align_bytes == 0 ||
      origin % ctx->base_align_bytes != 0)
    return NULL;
  for (size_t i = 0; i < ctx->sub_count; i++) {
    clt_sub_buffer *s = &ctx->subs[i];
    if (s->parent == parent && s->origin == origin && s->bytes == bytes) {
      clRetainMemObject(s->mem); /* the caller's reference */
      return s->mem;
    }
  }
  if (!ctx->subs) {
    ctx->subs = calloc(SUB_BUFFER_MAX, sizeof *ctx->subs);
    if (!ctx->subs) return NULL;
  }
  cl_buffer_region region = {origin, bytes};
  cl_int rc;
  cl_mem mem = clCreateSubBuffer(parent, CL_MEM_READ_WRITE,
                                 CL_BUFFER_CREATE_TYPE_REGION, &region, &rc);
  if (rc != CL_SUCCESS || !mem) return NULL;
  /* Full: all go, newest first (see clt_sub_buffers_drop); OpenCL
   * keeps those that commands or a caller still use. */
  if (ctx->sub_count == SUB_BUFFER_MAX) clt_sub_buffers_drop(ctx);
  ctx->subs[ctx->sub_count++] = (clt_sub_buffer){parent, origin, bytes, mem};
  clRetainMemObject(mem); /* the caller's reference */
  return mem;
}

/* Releases the cached sub-buffers in the reverse order of their making.
 * NVIDIA's driver 580 crashed (SIGSEGV inside clReleaseMemObject) when a
 * context released the 24 sub-buffers of a ResNet in the order they were
 * made, every time, at the eleventh; newest first it never did. */
void clt_sub_buffers_drop(clt_context *ctx) {
  while (ctx->sub_count > 0)
    clReleaseMemObject(ctx->subs[--ctx->sub_count].mem);
}

void clt_sub_buffers_release(clt_context *ctx) {
  clt_sub_buffers_drop(ctx);
  free(ctx->subs);
  ctx->subs = NULL;
}
