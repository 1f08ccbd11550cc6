/* Pinned host memory: what a device reads by DMA, without a copy. */
#include <stdbool.h>
#include <string.h>

#include "runtime/runtime.h"

bool clt_pinned_alloc(clt_context *ctx, size_t bytes, clt_pinned *out) {
  memset(out, 0, sizeof *out);
  if (bytes == 0) bytes = 1;
  cl_int rc = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(ctx->cl, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE,
                              bytes, NULL, &rc);
  if (rc != CL_SUCCESS) {
    clt_ctx_log(ctx, CLT_LOG_DEBUG, "no pinned host buffer of %zu bytes: %s",
                bytes, clt_cl_error_name(rc));
    return false;
  }
  clt_turn_begin(ctx);
  void *ptr = clEnqueueMapBuffer(ctx->queue, mem, CL_TRUE,
                                 CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL,
                                 NULL, &rc);
  clt_turn_end(ctx);
  if (rc != CL_SUCCESS || !ptr) {
    clt_ctx_log(ctx, CLT_LOG_DEBUG, "cannot map a pinned host buffer: %s",
                clt_cl_error_name(rc));
    clReleaseMemObject(mem);
    return false;
  }
  out->mem = mem;
  out->ptr = ptr;
  return true;
}

void clt_pinned_free(clt_context *ctx, clt_pinned *p) {
  if (!p || !p->mem) return;
  clt_turn_begin(ctx);
  cl_int rc = clEnqueueUnmapMemObject(ctx->queue, p->mem, p->ptr, 0, NULL, NULL);
  /* The unmap runs before the buffer is released: no mapping outlives
   * its buffer, whatever a driver does with a released one still mapped. */
  if (rc == CL_SUCCESS) clFinish(ctx->queue);
  clt_turn_end(ctx);
  clReleaseMemObject(p->mem);
  p->mem = NULL;
  p->ptr = NULL;
}
