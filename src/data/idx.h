/* Reader for IDX files, the format of MNIST and Fashion-MNIST.
 *
 * Layout: two zero bytes, a type byte, a dimension count, that many
 * big-endian u32 sizes, then the elements in big-endian order. Files may be
 * plain or gzip-compressed; the gzip magic (1f 8b) decides, not the name.
 *
 * A zero dimension is accepted here: it describes a legal, empty array
 * (nbytes 0). Whoever needs elements (the dataset) rejects it with a message
 * of its own. */
#ifndef CLT_DATA_IDX_H
#define CLT_DATA_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

enum {
  CLT_IDX_U8 = 0x08,
  CLT_IDX_I8 = 0x09,
  CLT_IDX_I16 = 0x0B,
  CLT_IDX_I32 = 0x0C,
  CLT_IDX_F32 = 0x0D,
  CLT_IDX_F64 = 0x0E,
};

#define CLT_IDX_MAX_DIMS 8

/* Larger arrays are refused: no dataset this engine reads comes close, and
 * the bound keeps a corrupt header from asking for absurd allocations. */
#define CLT_IDX_MAX_BYTES ((uint64_t)4 << 30)

typedef struct clt_idx {
  uint8_t type; /* one of CLT_IDX_* */
  int ndim;
  int64_t dims[CLT_IDX_MAX_DIMS];
  void *data;    /* elements, row-major, in host byte order */
  size_t nbytes; /* bytes in data */
} clt_idx;

/* Bytes per element of an IDX type byte; 0 for an unknown type. */
size_t clt_idx_type_size(uint8_t type);

/* A short name of an IDX type byte ("u8", "f32"; "unknown" otherwise). */
const char *clt_idx_type_name(uint8_t type);

/* Elements in the array (the product of its dimensions). */
int64_t clt_idx_count(const clt_idx *idx);

/* Reads the whole file at path into *out. On success the caller owns
 * out->data and frees it with clt_idx_free. On failure *out is left empty
 * (data NULL) and the status is CLT_ERR_IO when the file cannot be opened
 * or read, CLT_ERR_FORMAT when its contents are malformed (bad magic, type
 * or dimension count, a size over CLT_IDX_MAX_BYTES, fewer or more data
 * bytes than the header declares, a corrupt gzip stream), or
 * CLT_ERR_HOST_MEMORY; err says which file and what is wrong. */
clt_status clt_idx_read(const char *path, clt_idx *out, clt_err *err);

/* Frees idx->data and empties *idx. Accepts NULL and empty arrays. */
void clt_idx_free(clt_idx *idx);

#endif
