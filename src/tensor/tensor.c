/* Tensors: typed device buffers (from the runtime's pool) and views. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor.h"

CLT_API size_t clt_dtype_size(clt_dtype dtype) {
  switch (dtype) {
  case CLT_F32: return 4;
  case CLT_F16: return 2;
  case CLT_I32: return 4;
  case CLT_U8: return 1;
  }
  return 0;
}

static const char *dtype_name(clt_dtype dtype) {
  switch (dtype) {
  case CLT_F32: return "f32";
  case CLT_F16: return "f16";
  case CLT_I32: return "i32";
  case CLT_U8: return "u8";
  }
  return "?";
}

static clt_status check_shape(clt_context *ctx, int ndim, const int64_t *shape,
                              int64_t *numel) {
  if (ndim < 1 || ndim > CLT_MAX_DIMS)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "tensor: %d dimensions, expected 1 to %d", ndim,
                        CLT_MAX_DIMS);
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 1)
      return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                          "tensor: dimension %d is %lld, must be positive", i,
                          (long long)shape[i]);
    if (n > INT32_MAX / shape[i])
      return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED,
                          "tensor: more than 2^31 elements");
    n *= shape[i];
  }
  *numel = n;
  return CLT_OK;
}

CLT_API clt_status clt_tensor_create(clt_context *ctx, clt_dtype dtype,
                                     int ndim, const int64_t *shape,
                                     clt_tensor **out) {
  *out = NULL;
  int64_t numel;
  CLT_TRY(check_shape(ctx, ndim, shape, &numel));
  clt_tensor *t = calloc(1, sizeof *t);
  if (!t) return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "tensor");
  ctx->memory_stats.host_allocations++;
  size_t bytes = (size_t)numel * clt_dtype_size(dtype);
  clt_pool_block *b = NULL;
  clt_status st = clt_pool_acquire(ctx, bytes, &b);
  if (st != CLT_OK) {
    free(t);
    return st;
  }
  t->ctx = ctx;
  t->dtype = dtype;
  t->ndim = ndim;
  memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
  t->numel = numel;
  t->buffer = clt_pool_buffer(b);
  t->block = b;
  *out = t;
  return CLT_OK;
}

CLT_API clt_status clt_tensor_view(clt_tensor *base, int64_t offset, int ndim,
                                   const int64_t *shape, clt_tensor **out) {
  clt_context *ctx = base->ctx;
  *out = NULL;
  int64_t numel;
  CLT_TRY(check_shape(ctx, ndim, shape, &numel));
  if (offset < 0 || offset + numel > base->numel)
    return clt_ctx_fail(ctx, CLT_ERR_SHAPE,
                        "tensor view: elements [%lld, %lld) outside a tensor "
                        "of %lld",
                        (long long)offset, (long long)(offset + numel),
                        (long long)base->numel);
  clt_tensor *t = calloc(1, sizeof *t);
  if (!t) return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "tensor view");
  ctx->memory_stats.host_allocations++;
  *t = *base;
  t->ndim = ndim;
  memset(t->shape, 0, sizeof t->shape);
  memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
  t->numel = numel;
  t->offset = base->offset + offset;
  t->block = NULL;
  t->base = base;
  *out = t;
  return CLT_OK;
}

clt_tensor clt_tensor_slice_1d(const clt_tensor *t, int64_t offset,
                               int64_t numel) {
  clt_tensor s = *t;
  s.ndim = 1;
  memset(s.shape, 0, sizeof s.shape);
  s.shape[0] = numel;
  s.numel = numel;
  s.offset = t->offset + offset;
  s.block = NULL;
  s.base = t;
  return s;
}

CLT_API void clt_tensor_destroy(clt_tensor *t) {
  if (!t) return;
  clt_pool_give_back(t->block); /* views have none */
  free(t);
}

CLT_API clt_dtype clt_tensor_dtype(const clt_tensor *t) { return t->dtype; }
CLT_API int clt_tensor_ndim(const clt_tensor *t) { return t->ndim; }
CLT_API int64_t clt_tensor_dim(const clt_tensor *t, int dim) {
  return dim >= 0 && dim < t->ndim ? t->shape[dim] : 1;
}
CLT_API int64_t clt_tensor_numel(const clt_tensor *t) { return t->numel; }

CLT_API clt_status clt_tensor_upload(clt_tensor *t, const void *host) {
  size_t esize = clt_dtype_size(t->dtype);
  cl_int rc = clEnqueueWriteBuffer(t->ctx->queue, t->buffer, CL_TRUE,
                                   (size_t)t->offset * esize,
                                   clt_tensor_bytes(t), host, 0, NULL,
                                   clt_profile_slot(t->ctx, "upload"));
  if (rc != CL_SUCCESS) return clt_ctx_cl_fail(t->ctx, rc, "tensor upload");
  return CLT_OK;
}

clt_status clt_tensor_upload_async(clt_tensor *t, const void *host,
                                   cl_event *done) {
  size_t esize = clt_dtype_size(t->dtype);
  /* Profiled as "upload" where profiling is on: *done is then the
   * profile's event, retained. */
  cl_event *slot = clt_profile_slot(t->ctx, "upload");
  cl_int rc = clEnqueueWriteBuffer(t->ctx->queue, t->buffer, CL_FALSE,
                                   (size_t)t->offset * esize,
                                   clt_tensor_bytes(t), host, 0, NULL,
                                   slot ? slot : done);
  if (rc == CL_SUCCESS && slot && done) {
    rc = clRetainEvent(*slot);
    if (rc == CL_SUCCESS) *done = *slot;
  }
  if (rc != CL_SUCCESS) return clt_ctx_cl_fail(t->ctx, rc, "tensor upload");
  return CLT_OK;
}

CLT_API clt_status clt_tensor_download(const clt_tensor *t, void *host) {
  size_t esize = clt_dtype_size(t->dtype);
  cl_int rc = clEnqueueReadBuffer(t->ctx->queue, t->buffer, CL_TRUE,
                                  (size_t)t->offset * esize,
                                  clt_tensor_bytes(t), host, 0, NULL,
                                  clt_profile_slot(t->ctx, "download"));
  if (rc != CL_SUCCESS) return clt_ctx_cl_fail(t->ctx, rc, "tensor download");
  return CLT_OK;
}

CLT_API clt_status clt_tensor_fill(clt_tensor *t, double value) {
  clt_context *ctx = t->ctx;
  switch (t->dtype) {
  case CLT_F32:
    return CLT_RUN_ELEMS(ctx, CLT_K_fill_f32, (size_t)t->numel, KT(t),
                         KI(t->numel), KF(value));
  case CLT_I32:
    return CLT_RUN_1D(ctx, CLT_K_fill_i32, (size_t)t->numel, KT(t),
                      KI(t->numel), KI((int)value));
  case CLT_U8:
    return CLT_RUN_1D(ctx, CLT_K_fill_u8, (size_t)t->numel, KT(t),
                      KI(t->numel), KI((int)value));
  case CLT_F16:
    return CLT_RUN_1D(ctx, CLT_K_fill_f16, (size_t)t->numel, KT(t),
                      KI(t->numel), KF(value));
  }
  return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED, "tensor fill: dtype %s",
                      dtype_name(t->dtype));
}

CLT_API clt_status clt_tensor_convert(clt_tensor *dst, const clt_tensor *src) {
  clt_context *ctx = dst->ctx;
  if (dst->numel != src->numel)
    return clt_ctx_fail(ctx, CLT_ERR_SHAPE,
                        "tensor convert: %lld elements into %lld",
                        (long long)src->numel, (long long)dst->numel);
  if (dst->dtype == src->dtype) return clt_tensor_copy(dst, src);
  if (dst->dtype == CLT_F16 && src->dtype == CLT_F32)
    return CLT_RUN_ELEMS(ctx, CLT_K_f32_to_f16, (size_t)dst->numel, KT(dst),
                         KT(src), KI(dst->numel));
  if (dst->dtype == CLT_F32 && src->dtype == CLT_F16)
    return CLT_RUN_ELEMS(ctx, CLT_K_f16_to_f32, (size_t)dst->numel, KT(dst),
                         KT(src), KI(dst->numel));
  return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED,
                      "tensor convert: %s to %s (f32 and f16 convert)",
                      dtype_name(src->dtype), dtype_name(dst->dtype));
}

CLT_API clt_status clt_tensor_copy(clt_tensor *dst, const clt_tensor *src) {
  clt_context *ctx = dst->ctx;
  if (dst->dtype != src->dtype || dst->numel != src->numel)
    return clt_ctx_fail(ctx, CLT_ERR_SHAPE,
                        "tensor copy: %lld %s elements into %lld %s",
                        (long long)src->numel, dtype_name(src->dtype),
                        (long long)dst->numel, dtype_name(dst->dtype));
  size_t esize = clt_dtype_size(dst->dtype);
  cl_int rc = clEnqueueCopyBuffer(ctx->queue, src->buffer, dst->buffer,
                                  (size_t)src->offset * esize,
                                  (size_t)dst->offset * esize,
                                  clt_tensor_bytes(dst), 0, NULL,
                                  clt_profile_slot(ctx, "copy"));
  if (rc != CL_SUCCESS) return clt_ctx_cl_fail(ctx, rc, "tensor copy");
  return CLT_OK;
}
