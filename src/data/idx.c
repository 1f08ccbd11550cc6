/* IDX reader: validates the header against the file before trusting it,
 * reads the data plain or through zlib, and converts it to host order. */
#include "data/idx.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

/* gzread takes an unsigned int count; read in pieces well below that. */
#define IDX_READ_CHUNK ((size_t)1 << 30)

/* A gzip header's sizes cannot be checked against the file before
 * decompressing, so its buffer starts here and grows as data arrives. */
#define IDX_GZ_FIRST_ALLOC ((size_t)1 << 20)

/* Counting trailing bytes stops here; the message then says "at least". */
#define IDX_EXTRA_COUNT_MAX ((uint64_t)1 << 20)

/* Where the bytes come from: a plain file or a gzip stream. */
typedef struct idx_source {
  const char *path;
  FILE *file;         /* plain file, or NULL */
  gzFile gz;          /* gzip stream, or NULL */
  uint64_t file_size; /* bytes on disk (compressed, for gzip) */
} idx_source;

size_t clt_idx_type_size(uint8_t type) {
  switch (type) {
    case CLT_IDX_U8:
    case CLT_IDX_I8:
      return 1;
    case CLT_IDX_I16:
      return 2;
    case CLT_IDX_I32:
    case CLT_IDX_F32:
      return 4;
    case CLT_IDX_F64:
      return 8;
    default:
      return 0;
  }
}

const char *clt_idx_type_name(uint8_t type) {
  switch (type) {
    case CLT_IDX_U8:
      return "u8";
    case CLT_IDX_I8:
      return "i8";
    case CLT_IDX_I16:
      return "i16";
    case CLT_IDX_I32:
      return "i32";
    case CLT_IDX_F32:
      return "f32";
    case CLT_IDX_F64:
      return "f64";
    default:
      return "unknown";
  }
}

int64_t clt_idx_count(const clt_idx *idx) {
  /* An empty array may declare huge other dimensions: no product then
   * (found by fuzz/fuzz_idx.c, tests/fuzz_regressions/idx/). */
  for (int i = 0; i < idx->ndim; i++)
    if (idx->dims[i] == 0) return 0;
  int64_t count = 1;
  for (int i = 0; i < idx->ndim; i++) count *= idx->dims[i];
  return count;
}

void clt_idx_free(clt_idx *idx) {
  if (!idx) return;
  free(idx->data);
  memset(idx, 0, sizeof *idx);
}

static clt_status idx_source_open_gzip(idx_source *src, clt_err *err) {
  errno = 0;
  src->gz = gzopen(src->path, "rb");
  if (!src->gz) {
    return clt_err_set(err, CLT_ERR_IO, "cannot open gzip file %s: %s",
                       src->path, errno ? strerror(errno) : "out of memory");
  }
  gzbuffer(src->gz, 1 << 17);
  return CLT_OK;
}

static clt_status idx_source_open(idx_source *src, const char *path,
                                  clt_err *err) {
  memset(src, 0, sizeof *src);
  src->path = path;
  FILE *f = fopen(path, "rb");
  if (!f) {
    return clt_err_set(err, CLT_ERR_IO, "cannot open IDX file %s: %s", path,
                       strerror(errno));
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return clt_err_set(err, CLT_ERR_IO,
                       "cannot read IDX file %s: not a regular file", path);
  }
  src->file_size = (uint64_t)st.st_size;
  unsigned char magic[2];
  if (fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    fclose(f);
    return idx_source_open_gzip(src, err);
  }
  rewind(f);
  src->file = f;
  return CLT_OK;
}

static void idx_source_close(idx_source *src) {
  if (src->file) fclose(src->file);
  if (src->gz) gzclose(src->gz);
  src->file = NULL;
  src->gz = NULL;
}

static clt_status idx_gzip_error(const idx_source *src, clt_err *err) {
  int code = Z_OK;
  const char *what = gzerror(src->gz, &code);
  if (code == Z_OK) return CLT_OK;
  if (code == Z_ERRNO) {
    return clt_err_set(err, CLT_ERR_IO, "error reading %s: %s", src->path,
                       strerror(errno));
  }
  if (code == Z_MEM_ERROR) {
    return clt_err_set(err, CLT_ERR_HOST_MEMORY,
                       "out of memory decompressing %s", src->path);
  }
  return clt_err_set(err, CLT_ERR_FORMAT,
                     "%s: corrupt or truncated gzip stream (zlib: %s)",
                     src->path, what);
}

/* Reads up to n bytes; *got < n only at the end of the data. */
static clt_status idx_source_read(idx_source *src, void *buf, size_t n,
                                  size_t *got, clt_err *err) {
  unsigned char *p = buf;
  *got = 0;
  while (*got < n) {
    size_t want = n - *got < IDX_READ_CHUNK ? n - *got : IDX_READ_CHUNK;
    size_t r;
    if (src->gz) {
      int k = gzread(src->gz, p + *got, (unsigned)want);
      r = k > 0 ? (size_t)k : 0;
    } else {
      r = fread(p + *got, 1, want, src->file);
    }
    *got += r;
    if (r < want) break;
  }
  if (src->gz) return idx_gzip_error(src, err);
  if (ferror(src->file)) {
    return clt_err_set(err, CLT_ERR_IO, "error reading %s: %s", src->path,
                       strerror(errno));
  }
  return CLT_OK;
}

static clt_status idx_read_header_bytes(idx_source *src, void *buf, size_t n,
                                        size_t offset, clt_err *err) {
  size_t got;
  CLT_TRY(idx_source_read(src, buf, n, &got, err));
  if (got < n) {
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s: file ends inside the IDX header (%zu bytes, the "
                       "header needs %zu)",
                       src->path, offset + got, offset + n);
  }
  return CLT_OK;
}

static clt_status idx_read_header(idx_source *src, clt_idx *idx, clt_err *err) {
  unsigned char head[4];
  CLT_TRY(idx_read_header_bytes(src, head, sizeof head, 0, err));
  if (head[0] != 0 || head[1] != 0) {
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s: bad magic: the first two bytes are 0x%02x 0x%02x, "
                       "an IDX file starts with 0x00 0x00",
                       src->path, head[0], head[1]);
  }
  if (clt_idx_type_size(head[2]) == 0) {
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s: unknown IDX data type byte 0x%02x (known: 0x08 "
                       "u8, 0x09 i8, 0x0b i16, 0x0c i32, 0x0d f32, 0x0e f64)",
                       src->path, head[2]);
  }
  if (head[3] == 0 || head[3] > CLT_IDX_MAX_DIMS) {
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s: header declares %d dimensions, an IDX file has 1 "
                       "to %d",
                       src->path, head[3], CLT_IDX_MAX_DIMS);
  }
  idx->type = head[2];
  idx->ndim = head[3];
  unsigned char sizes[4 * CLT_IDX_MAX_DIMS];
  CLT_TRY(idx_read_header_bytes(src, sizes, 4 * (size_t)idx->ndim, 4, err));
  for (int i = 0; i < idx->ndim; i++) {
    const unsigned char *b = sizes + 4 * i;
    idx->dims[i] = (int64_t)((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
                             (uint32_t)b[2] << 8 | (uint32_t)b[3]);
  }
  return CLT_OK;
}

/* "60000 x 28 x 28" */
static const char *idx_format_dims(const clt_idx *idx, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < idx->ndim && used < len; i++) {
    int n = snprintf(buf + used, len - used, "%s%lld", i ? " x " : "",
                     (long long)idx->dims[i]);
    if (n < 0) break;
    used += (size_t)n;
  }
  return buf;
}

/* Sets idx->nbytes from the dimensions, refusing sizes over the limit
 * before the product can overflow. */
static clt_status idx_compute_size(const idx_source *src, clt_idx *idx,
                                   clt_err *err) {
  idx->nbytes = 0;
  for (int i = 0; i < idx->ndim; i++) {
    if (idx->dims[i] == 0) return CLT_OK; /* a legal, empty array */
  }
  uint64_t elem = clt_idx_type_size(idx->type);
  uint64_t limit = CLT_IDX_MAX_BYTES / elem;
  uint64_t count = 1;
  for (int i = 0; i < idx->ndim; i++) {
    uint64_t d = (uint64_t)idx->dims[i];
    if (count > limit / d) {
      char dims[160];
      return clt_err_set(
          err, CLT_ERR_FORMAT,
          "%s: header declares %s elements of type %s, too large (more "
          "than the %llu GiB limit)",
          src->path, idx_format_dims(idx, dims, sizeof dims),
          clt_idx_type_name(idx->type),
          (unsigned long long)(CLT_IDX_MAX_BYTES >> 30));
    }
    count *= d;
  }
  idx->nbytes = (size_t)(count * elem);
  return CLT_OK;
}

static clt_status idx_err_short(const idx_source *src, uint64_t have,
                                uint64_t declared, clt_err *err) {
  return clt_err_set(err, CLT_ERR_FORMAT,
                     "%s: file is truncated: it holds %llu bytes of data, "
                     "header declares %llu",
                     src->path, (unsigned long long)have,
                     (unsigned long long)declared);
}

static clt_status idx_err_extra(const idx_source *src, uint64_t extra,
                                bool at_least, uint64_t declared,
                                clt_err *err) {
  return clt_err_set(err, CLT_ERR_FORMAT,
                     "%s: file has %s%llu extra bytes after the %llu bytes of "
                     "data the header declares",
                     src->path, at_least ? "at least " : "",
                     (unsigned long long)extra, (unsigned long long)declared);
}

/* For a plain file the size on disk tells the data length before anything
 * is allocated. */
static clt_status idx_check_plain_size(const idx_source *src,
                                       const clt_idx *idx, clt_err *err) {
  if (!src->file) return CLT_OK;
  uint64_t header = 4 + 4 * (uint64_t)idx->ndim;
  uint64_t have = src->file_size > header ? src->file_size - header : 0;
  if (have < idx->nbytes) return idx_err_short(src, have, idx->nbytes, err);
  if (have > idx->nbytes) {
    return idx_err_extra(src, have - idx->nbytes, false, idx->nbytes, err);
  }
  return CLT_OK;
}

static clt_status idx_grow(const idx_source *src, unsigned char **buf,
                           size_t cap, clt_err *err) {
  unsigned char *bigger = realloc(*buf, cap ? cap : 1);
  if (!bigger) {
    return clt_err_set(err, CLT_ERR_HOST_MEMORY,
                       "out of memory reading %s (%zu bytes)", src->path, cap);
  }
  *buf = bigger;
  return CLT_OK;
}

/* Reads exactly idx->nbytes into a new idx->data. */
static clt_status idx_read_data(idx_source *src, clt_idx *idx, clt_err *err) {
  size_t want = idx->nbytes;
  size_t cap = src->gz && want > IDX_GZ_FIRST_ALLOC ? IDX_GZ_FIRST_ALLOC : want;
  unsigned char *buf = NULL;
  size_t got = 0;
  clt_status status = idx_grow(src, &buf, cap, err);
  while (status == CLT_OK) {
    size_t n;
    status = idx_source_read(src, buf + got, cap - got, &n, err);
    got += n;
    if (status != CLT_OK || got < cap || cap == want) break;
    cap = cap < want / 2 ? cap * 2 : want;
    status = idx_grow(src, &buf, cap, err);
  }
  if (status == CLT_OK && got < want) {
    status = idx_err_short(src, got, want, err);
  }
  if (status != CLT_OK) {
    free(buf);
    return status;
  }
  idx->data = buf;
  return CLT_OK;
}

/* Reading on past the declared data must find the end of the file. For
 * gzip this also makes zlib check the stream's CRC and length trailer. */
static clt_status idx_check_end(idx_source *src, const clt_idx *idx,
                                clt_err *err) {
  unsigned char scratch[4096];
  uint64_t extra = 0;
  size_t n;
  do {
    CLT_TRY(idx_source_read(src, scratch, sizeof scratch, &n, err));
    extra += n;
  } while (n == sizeof scratch && extra < IDX_EXTRA_COUNT_MAX);
  if (extra == 0) return CLT_OK;
  return idx_err_extra(src, extra, n == sizeof scratch, idx->nbytes, err);
}

static bool idx_host_is_big_endian(void) {
  const uint16_t probe = 1;
  unsigned char first;
  memcpy(&first, &probe, 1);
  return first == 0;
}

/* IDX stores elements big-endian; reverse each one on little-endian hosts. */
static void idx_to_host_order(clt_idx *idx) {
  size_t size = clt_idx_type_size(idx->type);
  if (size == 1 || idx_host_is_big_endian()) return;
  unsigned char *p = idx->data;
  for (size_t i = 0; i + size <= idx->nbytes; i += size) {
    for (size_t a = i, b = i + size - 1; a < b; a++, b--) {
      unsigned char t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
  }
}

static clt_status idx_read_from(idx_source *src, clt_idx *idx, clt_err *err) {
  CLT_TRY(idx_read_header(src, idx, err));
  CLT_TRY(idx_compute_size(src, idx, err));
  CLT_TRY(idx_check_plain_size(src, idx, err));
  CLT_TRY(idx_read_data(src, idx, err));
  CLT_TRY(idx_check_end(src, idx, err));
  idx_to_host_order(idx);
  return CLT_OK;
}

clt_status clt_idx_read(const char *path, clt_idx *out, clt_err *err) {
  if (!out || !path) {
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "clt_idx_read: path and out must not be NULL");
  }
  memset(out, 0, sizeof *out);
  idx_source src;
  CLT_TRY(idx_source_open(&src, path, err));
  clt_idx idx = {0};
  clt_status status = idx_read_from(&src, &idx, err);
  idx_source_close(&src);
  if (status != CLT_OK) {
    clt_idx_free(&idx);
    return status;
  }
  *out = idx;
  return CLT_OK;
}
