/* Tensors: typed n-dimensional device buffers and views. */
#ifndef CLT_TENSOR_TENSOR_H
#define CLT_TENSOR_TENSOR_H

#include "runtime/runtime.h"

struct clt_tensor {
  clt_context *ctx;
  clt_dtype dtype;
  int ndim;
  int64_t shape[CLT_MAX_DIMS];
  int64_t numel;
  cl_mem buffer;
  int64_t offset;          /* in elements, into buffer */
  clt_pool_block *block;   /* NULL for views */
  const clt_tensor *base;  /* the tensor a view looks into */
};

/* Size in bytes of t's elements. */
static inline size_t clt_tensor_bytes(const clt_tensor *t) {
  return (size_t)t->numel * clt_dtype_size(t->dtype);
}

/* A tensor struct on the stack describing elements [offset, offset+numel)
 * of t's buffer as a flat 1-D tensor; nothing is allocated. */
clt_tensor clt_tensor_slice_1d(const clt_tensor *t, int64_t offset,
                               int64_t numel);

/* Enqueues a copy of t's elements from host without waiting (profiled as
 * "upload", as clt_tensor_upload is); *done (not NULL) signals when host
 * may be reused. The caller releases *done. */
clt_status clt_tensor_upload_async(clt_tensor *t, const void *host,
                                   cl_event *done);

#endif
