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
  size_t slot = ctx->sub_count;
  if (slot == SUB_BUFFER_MAX) {
    /* Full: the oldest goes (OpenCL keeps it while commands use it). */
    slot = ctx->sub_next;
    ctx->sub_next = (ctx->sub_next + 1) % SUB_BUFFER_MAX;
    clReleaseMemObject(ctx->subs[slot].mem);
  } else {
    ctx->sub_count++;
  }
  ctx->subs[slot] = (clt_sub_buffer){parent, origin, bytes, mem};
  clRetainMemObject(mem); /* the caller's reference */
  return mem;
}

void clt_sub_buffers_release(clt_context *ctx) {
  for (size_t i = 0; i < ctx->sub_count; i++)
    clReleaseMemObject(ctx->subs[i].mem);
  free(ctx->subs);
  ctx->subs = NULL;
  ctx->sub_count = ctx->sub_next = 0;
}
