/* The device buffer pool: plain cl_mem buffers, kept when freed and handed
 * out again for any request that fits. tensor/ allocates through it; the
 * context returns every buffer to OpenCL when it is destroyed. */
#include <stdlib.h>

#include "runtime/runtime.h"

/* A device buffer; pooled when free, reused for any request that fits and
 * wastes at most half of it. */
struct clt_pool_block {
  cl_mem buffer;
  size_t bytes;
  bool in_use;
  clt_pool_block *next;
};

static clt_pool_block *pool_take(clt_context *ctx, size_t bytes) {
  clt_pool_block *best = NULL;
  for (clt_pool_block *b = ctx->pool; b; b = b->next)
    if (!b->in_use && b->bytes >= bytes && b->bytes / 2 <= bytes &&
        (!best || b->bytes < best->bytes))
      best = b;
  if (best) {
    best->in_use = true;
    ctx->memory_stats.pool_reuses++;
  }
  return best;
}

static clt_status pool_new(clt_context *ctx, size_t bytes,
                           clt_pool_block **out) {
  if (bytes > ctx->info.max_alloc_bytes || bytes > ctx->info.global_mem_bytes)
    return clt_ctx_fail(ctx, CLT_ERR_DEVICE_MEMORY,
                        "out of device memory: a tensor of %zu bytes "
                        "(%.1f MiB) is larger than %s allows in one buffer "
                        "(%.1f MiB)",
                        bytes, (double)bytes / 1048576.0, ctx->info.name,
                        (double)ctx->info.max_alloc_bytes / 1048576.0);
  if (ctx->memory_stats.device_bytes_live + bytes > ctx->info.global_mem_bytes)
    return clt_ctx_fail(ctx, CLT_ERR_DEVICE_MEMORY,
                        "out of device memory: a tensor of %zu bytes "
                        "(%.1f MiB) does not fit; %s has %.1f MiB, of which "
                        "%.1f MiB are held",
                        bytes, (double)bytes / 1048576.0, ctx->info.name,
                        (double)ctx->info.global_mem_bytes / 1048576.0,
                        (double)ctx->memory_stats.device_bytes_live /
                            1048576.0);
  clt_pool_block *b = calloc(1, sizeof *b);
  if (!b) return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "pool block");
  cl_int rc;
  b->buffer = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, bytes, NULL, &rc);
  if (rc != CL_SUCCESS) {
    free(b);
    clt_ctx_cl_fail(ctx, rc, "clCreateBuffer");
    return clt_ctx_fail(ctx, CLT_ERR_DEVICE_MEMORY,
                        "out of device memory: could not allocate %zu bytes "
                        "(%.1f MiB) on %s (%s)",
                        bytes, (double)bytes / 1048576.0, ctx->info.name,
                        clt_cl_error_name(rc));
  }
  b->bytes = bytes;
  b->in_use = true;
  b->next = ctx->pool;
  ctx->pool = b;
  ctx->memory_stats.device_allocations++;
  ctx->memory_stats.device_bytes_live += bytes;
  if (ctx->memory_stats.device_bytes_live >
      ctx->memory_stats.device_bytes_peak)
    ctx->memory_stats.device_bytes_peak = ctx->memory_stats.device_bytes_live;
  *out = b;
  return CLT_OK;
}

void clt_pool_release_all(clt_context *ctx) {
  clt_pool_block *b = ctx->pool;
  while (b) {
    clt_pool_block *next = b->next;
    clReleaseMemObject(b->buffer);
    free(b);
    b = next;
  }
  ctx->pool = NULL;
}

clt_status clt_pool_acquire(clt_context *ctx, size_t bytes,
                            clt_pool_block **out) {
  *out = pool_take(ctx, bytes);
  return *out ? CLT_OK : pool_new(ctx, bytes, out);
}

void clt_pool_give_back(clt_pool_block *b) {
  if (b) b->in_use = false;
}

cl_mem clt_pool_buffer(const clt_pool_block *b) { return b->buffer; }
