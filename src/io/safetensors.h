/* The safetensors format: checkpoints that PyTorch, JAX and Hugging Face
 * tools read and write.
 *
 * A file is an 8-byte little-endian unsigned header length N, then N bytes
 * of UTF-8 JSON, then the data buffer:
 *
 *     {"__metadata__": {"epoch": "3"},
 *      "fc1.weight": {"dtype": "F32", "shape": [128, 784],
 *                     "data_offsets": [0, 401408]}, ...}
 *
 * Offsets are bytes relative to the start of the data buffer; each tensor
 * is stored row-major, little-endian, and the tensors cover the buffer
 * exactly, with no gap and no overlap. Metadata values are strings.
 *
 * The reader trusts nothing in the file: every malformed file gives
 * CLT_ERR_FORMAT (CLT_ERR_UNSUPPORTED for a dtype the format knows but
 * cltrain does not) with a message that starts with the file's name and
 * says what is wrong and where, and nothing is read outside the file or
 * allocated beyond its size. It checks, in this order: the length field,
 * the header's JSON syntax (with line and column), the header's structure
 * (tensor entries with exactly dtype, shape and data_offsets; metadata of
 * strings), each tensor's dtype, shape and byte range, duplicate names,
 * and that the tensors tile the data buffer.
 *
 * The writer lays the data buffer out so that every tensor starts at a
 * multiple of its element size: the header is padded with spaces (which
 * JSON allows) to make the buffer start at a multiple of 8 bytes, and the
 * tensors are placed by element size, largest first. */
#ifndef CLT_IO_SAFETENSORS_H
#define CLT_IO_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cltrain.h"
#include "common/error.h"

/* Most dimensions a tensor may have. */
#define CLT_ST_MAX_DIMS 8
/* Largest header accepted, as in the reference implementation: far above
 * any real header, and it bounds what a hostile length field can cost. */
#define CLT_ST_MAX_HEADER_BYTES ((uint64_t)100 * 1024 * 1024)
/* The reader places the data buffer at this alignment in memory. */
#define CLT_ST_DATA_ALIGN 64

typedef enum clt_st_dtype {
  CLT_ST_F32,
  CLT_ST_F16,
  CLT_ST_I32,
  CLT_ST_U8,
  CLT_ST_I64,
  CLT_ST_F64,
} clt_st_dtype;

/* The format's name of a dtype ("F32"); "?" for a value out of range. */
const char *clt_st_dtype_name(clt_st_dtype dtype);
/* Bytes per element; 0 for a value out of range. */
size_t clt_st_dtype_size(clt_st_dtype dtype);
/* Looks a format name up; false if cltrain does not support it. */
bool clt_st_dtype_from_name(const char *name, clt_st_dtype *out);
/* The engine's dtype for a file dtype; CLT_ERR_UNSUPPORTED for I64 and F64,
 * which the engine's tensors do not have. */
clt_status clt_st_dtype_to_clt(clt_st_dtype dtype, clt_dtype *out);

typedef struct clt_st_tensor {
  char *name; /* NUL-terminated UTF-8; never holds a NUL */
  clt_st_dtype dtype;
  int ndim;                       /* 0 (a scalar) .. CLT_ST_MAX_DIMS */
  int64_t shape[CLT_ST_MAX_DIMS]; /* entries past ndim are 1 */
  uint64_t begin, end;            /* byte range in the data buffer */
} clt_st_tensor;

typedef struct clt_st_file {
  char *source;         /* the path or source name, for messages */
  const uint8_t *bytes; /* the whole file: length field, header, data */
  size_t size;
  const uint8_t *data; /* the data buffer, CLT_ST_DATA_ALIGN-aligned */
  size_t data_size;
  clt_st_tensor *tensors; /* sorted by name (strcmp order) */
  size_t count;
  char **meta_keys; /* sorted by key; values at the same index */
  char **meta_values;
  size_t meta_count;
  void *storage; /* private: the allocation that holds bytes */
} clt_st_file;

/* Reads and checks the safetensors file at path. On success the caller
 * owns *out (the whole file in memory) and frees it with
 * clt_st_file_free. On failure *out is zeroed (safe to free) and err says
 * why: CLT_ERR_IO naming the path and the system's reason when it cannot
 * be read, CLT_ERR_FORMAT / CLT_ERR_UNSUPPORTED for its contents. */
clt_status clt_st_read_file(const char *path, clt_st_file *out, clt_err *err);

/* As clt_st_read_file for a file image in memory. bytes is copied (the
 * caller keeps its buffer); source_name (NULL: "<memory>") begins every
 * message. */
clt_status clt_st_parse(const uint8_t *bytes, size_t size,
                        const char *source_name, clt_st_file *out,
                        clt_err *err);

/* The tensor called name, or NULL. Binary search: O(log count). */
const clt_st_tensor *clt_st_find(const clt_st_file *f, const char *name);

/* The first byte of t's data inside f (valid while f is). It is aligned to
 * the element size whenever t->begin is a multiple of it, as the writer
 * here always makes it; otherwise read the bytes through memcpy. */
const void *clt_st_tensor_data(const clt_st_file *f, const clt_st_tensor *t);

/* Bytes of t's data: end - begin. */
size_t clt_st_tensor_nbytes(const clt_st_tensor *t);

/* The value stored under key in __metadata__, or NULL. Owned by f. */
const char *clt_st_metadata(const clt_st_file *f, const char *key);

/* Checks that f holds a tensor called name with the given dtype and, if
 * shape is not NULL, the given ndim and shape; on success sets *out (may
 * be NULL) to it. Errors name the file and the tensor:
 *   CLT_ERR_FORMAT "ckpt.safetensors: missing tensor 'fc1.bias'"
 *   CLT_ERR_FORMAT "ckpt.safetensors: tensor 'fc1.weight' has dtype F64,
 *                   expected F32"
 *   CLT_ERR_SHAPE  "ckpt.safetensors: tensor 'fc1.weight' has shape
 *                   [128, 784], the model expects [64, 784]" */
clt_status clt_st_expect(const clt_st_file *f, const char *name,
                         clt_st_dtype dtype, int ndim, const int64_t *shape,
                         const clt_st_tensor **out, clt_err *err);

/* Frees everything f holds and zeroes it. Accepts NULL and a zeroed file. */
void clt_st_file_free(clt_st_file *f);

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

typedef struct clt_st_writer clt_st_writer;

/* An empty writer; the caller destroys it with clt_st_writer_destroy. */
clt_status clt_st_writer_create(clt_st_writer **out, clt_err *err);
void clt_st_writer_destroy(clt_st_writer *w);

/* Adds a tensor. data (numel * element size bytes, row-major, in the
 * host's byte order, which cltrain requires to be little-endian) is
 * COPIED, so the caller may reuse its buffer at once; it may be NULL only
 * when the tensor has no element. ndim 0 is a scalar (shape may be NULL).
 * Errors, all CLT_ERR_INVALID_ARGUMENT: a name that is reserved by the
 * format ("__metadata__"), not UTF-8, or already added; ndim outside
 * 0..CLT_ST_MAX_DIMS; a negative dimension; a size that overflows. */
clt_status clt_st_writer_add(clt_st_writer *w, const char *name,
                             clt_st_dtype dtype, int ndim, const int64_t *shape,
                             const void *data, clt_err *err);

/* Sets __metadata__[key] = value (both copied, both UTF-8), replacing an
 * earlier value of key. */
clt_status clt_st_writer_set_metadata(clt_st_writer *w, const char *key,
                                      const char *value, clt_err *err);

/* Writes the file atomically: a new temporary file next to path (same
 * folder, so the rename cannot cross file systems) named
 * "<path>.tmp-<pid>-<tag>", the whole content, fsync, then rename over
 * path, then fsync of the folder. A crash at any point leaves path as it
 * was (the old file or nothing; at worst a stray temporary file beside
 * it); an error also removes the temporary file. CLT_ERR_IO names the
 * path and the reason.
 * The header lists __metadata__ first (keys sorted), then the tensors
 * sorted by name; the data buffer holds them by element size, largest
 * first, then by name, so each is aligned to its element size. */
clt_status clt_st_writer_save(const clt_st_writer *w, const char *path,
                              clt_err *err);

/* The same bytes clt_st_writer_save would write, in a new malloc'd buffer
 * that the caller frees. */
clt_status clt_st_writer_serialize(const clt_st_writer *w, uint8_t **out,
                                   size_t *size, clt_err *err);

#endif
