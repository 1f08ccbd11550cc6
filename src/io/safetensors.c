#include "io/safetensors.h"

#include "common/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "io/json.h"

/* The header is an object of objects of arrays: nothing legitimate nests
 * deeper than 3, and the limit bounds the work a hostile header causes. */
#define ST_MAX_DEPTH 8
/* Longest piece of a name quoted in a message. */
#define ST_NAME_SHOWN 200

/* ------------------------------------------------------------------------ */
/* Dtypes                                                                    */

static const struct {
  const char *name;
  size_t size;
} dtype_table[] = {
    [CLT_ST_F32] = {"F32", 4}, [CLT_ST_F16] = {"F16", 2},
    [CLT_ST_I32] = {"I32", 4}, [CLT_ST_U8] = {"U8", 1},
    [CLT_ST_I64] = {"I64", 8}, [CLT_ST_F64] = {"F64", 8},
};
#define DTYPE_COUNT (sizeof dtype_table / sizeof dtype_table[0])

/* Dtypes the format defines that cltrain does not read: these get
 * CLT_ERR_UNSUPPORTED, anything else an "unknown dtype" format error. */
static const char *const foreign_dtypes[] = {
    "BOOL",    "I8",      "I16",     "U16",     "U32",     "U64", "BF16",
    "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4",  "C64",
};

const char *clt_st_dtype_name(clt_st_dtype dtype) {
  return (unsigned)dtype < DTYPE_COUNT ? dtype_table[dtype].name : "?";
}

size_t clt_st_dtype_size(clt_st_dtype dtype) {
  return (unsigned)dtype < DTYPE_COUNT ? dtype_table[dtype].size : 0;
}

bool clt_st_dtype_from_name(const char *name, clt_st_dtype *out) {
  for (size_t i = 0; name && i < DTYPE_COUNT; i++) {
    if (strcmp(name, dtype_table[i].name) == 0) {
      *out = (clt_st_dtype)i;
      return true;
    }
  }
  return false;
}

clt_status clt_st_dtype_to_clt(clt_st_dtype dtype, clt_dtype *out) {
  switch (dtype) {
  case CLT_ST_F32: *out = CLT_F32; return CLT_OK;
  case CLT_ST_F16: *out = CLT_F16; return CLT_OK;
  case CLT_ST_I32: *out = CLT_I32; return CLT_OK;
  case CLT_ST_U8: *out = CLT_U8; return CLT_OK;
  case CLT_ST_I64:
  case CLT_ST_F64: break;
  }
  return CLT_ERR_UNSUPPORTED;
}

static bool is_foreign_dtype(const char *name) {
  size_t n = sizeof foreign_dtypes / sizeof foreign_dtypes[0];
  for (size_t i = 0; i < n; i++)
    if (strcmp(name, foreign_dtypes[i]) == 0) return true;
  return false;
}

/* ------------------------------------------------------------------------ */
/* Small helpers                                                             */

static uint64_t load_le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static void store_le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static char *dup_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* "[2, 3]" into buf (room for CLT_ST_MAX_DIMS dimensions of any size). */
static const char *format_shape(char *buf, size_t n, int ndim,
                                const int64_t *shape) {
  size_t used = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < ndim && used < n; i++)
    used += (size_t)snprintf(buf + used, n - used, "%s%" PRId64, i ? ", " : "",
                             shape[i]);
  if (used < n) snprintf(buf + used, n - used, "]");
  return buf;
}

/* Elements of a shape, or -1 when the dimensions are negative or their
 * product (zeros left out, so that every partial product a caller may
 * form also fits) exceeds INT64_MAX. */
static int64_t shape_numel(int ndim, const int64_t *shape) {
  int64_t numel = 1;
  bool empty = false;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) return -1;
    if (shape[i] == 0) {
      empty = true;
      continue;
    }
    if (numel > INT64_MAX / shape[i]) return -1;
    numel *= shape[i];
  }
  return empty ? 0 : numel;
}

/* Sets err to "<source>: <message>". */
static clt_status fail(const char *source, clt_err *err, clt_status status,
                       const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static clt_status fail(const char *source, clt_err *err, clt_status status,
                       const char *fmt, ...) {
  char msg[CLT_ERR_MSG_MAX - 256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return clt_err_set(err, status, "%.200s: %s", source, msg);
}

/* ------------------------------------------------------------------------ */
/* Reading the header                                                        */

typedef struct st_parser {
  clt_st_file *f;
  clt_err *err;
  clt_json_reader r;
  size_t tensor_cap;
  size_t meta_cap;
  bool have_metadata;
} st_parser;

static clt_status parse_fail(st_parser *p, clt_status status, const char *fmt,
                             ...) __attribute__((format(printf, 3, 4)));

static clt_status parse_fail(st_parser *p, clt_status status, const char *fmt,
                             ...) {
  char msg[CLT_ERR_MSG_MAX - 256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fail(p->f->source, p->err, status, "%s", msg);
}

/* A failure the JSON reader recorded while reading a field of tensor t. */
static clt_status reader_fail(st_parser *p, const char *what) {
  return parse_fail(p, CLT_ERR_FORMAT, "%s: %s", what, p->r.error);
}

/* Checks the header's syntax alone first, so that a broken header is
 * reported as such, with its position, before anything it says. */
static clt_status check_syntax(const clt_st_file *f, const char *header,
                               size_t n, clt_err *err) {
  size_t pos = 0;
  char why[192];
  if (clt_json_validate(header, n, ST_MAX_DEPTH, &pos, why, sizeof why))
    return CLT_OK;
  int line, column;
  clt_json_line_column(header, n, pos, &line, &column);
  return fail(f->source, err, CLT_ERR_FORMAT,
              "the header is not valid JSON: line %d, column %d (header "
              "byte %zu): %s",
              line, column, pos, why);
}

static clt_st_tensor *new_tensor(st_parser *p) {
  clt_st_file *f = p->f;
  if (f->count == p->tensor_cap) {
    size_t cap = p->tensor_cap ? 2 * p->tensor_cap : 16;
    clt_st_tensor *t = realloc(f->tensors, cap * sizeof *t);
    if (!t) return NULL;
    f->tensors = t;
    p->tensor_cap = cap;
  }
  clt_st_tensor *t = &f->tensors[f->count++];
  memset(t, 0, sizeof *t);
  for (int i = 0; i < CLT_ST_MAX_DIMS; i++) t->shape[i] = 1;
  return t;
}

static clt_status read_dtype(st_parser *p, clt_st_tensor *t) {
  clt_json_type type = clt_json_peek(&p->r);
  if (type != CLT_JSON_STRING)
    return parse_fail(p, CLT_ERR_FORMAT,
                      "tensor '%.*s': 'dtype' must be a string, found %s",
                      ST_NAME_SHOWN, t->name, clt_json_type_name(type));
  char *name = NULL;
  if (!clt_json_read_string(&p->r, &name, NULL)) return reader_fail(p, "dtype");
  clt_status st = CLT_OK;
  if (clt_st_dtype_from_name(name, &t->dtype))
    st = CLT_OK;
  else if (is_foreign_dtype(name))
    st = parse_fail(p, CLT_ERR_UNSUPPORTED,
                    "tensor '%.*s' has dtype %s, which cltrain does not "
                    "support (it reads F32, F16, I32, U8, I64 and F64)",
                    ST_NAME_SHOWN, t->name, name);
  else
    st = parse_fail(p, CLT_ERR_FORMAT,
                    "tensor '%.*s' has unknown dtype "
                    "'%.40s'",
                    ST_NAME_SHOWN, t->name, name);
  free(name);
  return st;
}

/* Reads an array of non-negative integers into out (at most max of them);
 * `what` names the field in messages. */
static clt_status read_counts(st_parser *p, const clt_st_tensor *t,
                              const char *what, int64_t *out, int max, int *n) {
  clt_json_type type = clt_json_peek(&p->r);
  if (type != CLT_JSON_ARRAY)
    return parse_fail(p, CLT_ERR_FORMAT,
                      "tensor '%.*s': '%s' must be an array of integers, "
                      "found %s",
                      ST_NAME_SHOWN, t->name, what, clt_json_type_name(type));
  clt_json_enter_array(&p->r);
  *n = 0;
  while (clt_json_next_item(&p->r)) {
    type = clt_json_peek(&p->r);
    if (*n == max)
      return parse_fail(p, CLT_ERR_FORMAT,
                        "tensor '%.*s': '%s' has more than %d entries",
                        ST_NAME_SHOWN, t->name, what, max);
    if (type != CLT_JSON_NUMBER)
      return parse_fail(p, CLT_ERR_FORMAT,
                        "tensor '%.*s': '%s' must be an array of integers, "
                        "found %s in it",
                        ST_NAME_SHOWN, t->name, what, clt_json_type_name(type));
    int64_t v = 0;
    if (!clt_json_read_int64(&p->r, &v))
      return parse_fail(p, CLT_ERR_FORMAT, "tensor '%.*s': '%s': %s",
                        ST_NAME_SHOWN, t->name, what, p->r.error);
    if (v < 0)
      return parse_fail(
          p, CLT_ERR_FORMAT,
          "tensor '%.*s': '%s' holds the negative number %" PRId64,
          ST_NAME_SHOWN, t->name, what, v);
    out[(*n)++] = v;
  }
  return p->r.failed ? reader_fail(p, what) : CLT_OK;
}

static clt_status read_shape(st_parser *p, clt_st_tensor *t) {
  return read_counts(p, t, "shape", t->shape, CLT_ST_MAX_DIMS, &t->ndim);
}

static clt_status read_offsets(st_parser *p, clt_st_tensor *t) {
  int64_t v[2];
  int n = 0;
  CLT_TRY(read_counts(p, t, "data_offsets", v, 2, &n));
  if (n != 2)
    return parse_fail(p, CLT_ERR_FORMAT,
                      "tensor '%.*s': 'data_offsets' must be two integers "
                      "[begin, end], found %d",
                      ST_NAME_SHOWN, t->name, n);
  t->begin = (uint64_t)v[0];
  t->end = (uint64_t)v[1];
  return CLT_OK;
}

/* Which of the three fields key is (0..2), or -1. */
static int field_index(const char *key, size_t len) {
  static const char *const fields[] = {"dtype", "shape", "data_offsets"};
  for (int i = 0; i < 3; i++)
    if (len == strlen(fields[i]) && memcmp(key, fields[i], len) == 0) return i;
  return -1;
}

static clt_status read_field(st_parser *p, clt_st_tensor *t, int field) {
  switch (field) {
  case 0: return read_dtype(p, t);
  case 1: return read_shape(p, t);
  default: return read_offsets(p, t);
  }
}

/* Reads {"dtype": ..., "shape": ..., "data_offsets": ...} and nothing
 * else: an unknown field is more likely a typo ("data_offset") than an
 * extension, and the format defines none. */
static clt_status read_tensor_fields(st_parser *p, clt_st_tensor *t) {
  static const char *const fields[] = {"dtype", "shape", "data_offsets"};
  bool seen[3] = {false, false, false};
  char *key;
  size_t len;
  clt_json_enter_object(&p->r);
  while (clt_json_next_key(&p->r, &key, &len)) {
    int field = field_index(key, len);
    if (field < 0) {
      clt_status st = parse_fail(p, CLT_ERR_FORMAT,
                                 "tensor '%.*s': unknown field '%.40s' (a "
                                 "tensor has dtype, shape and data_offsets)",
                                 ST_NAME_SHOWN, t->name, key);
      free(key);
      return st;
    }
    free(key);
    if (seen[field])
      return parse_fail(p, CLT_ERR_FORMAT, "tensor '%.*s': '%s' appears twice",
                        ST_NAME_SHOWN, t->name, fields[field]);
    seen[field] = true;
    CLT_TRY(read_field(p, t, field));
  }
  if (p->r.failed) return reader_fail(p, "header");
  for (int i = 0; i < 3; i++)
    if (!seen[i])
      return parse_fail(p, CLT_ERR_FORMAT, "tensor '%.*s': missing '%s'",
                        ST_NAME_SHOWN, t->name, fields[i]);
  return CLT_OK;
}

/* Checks that t's byte range lies in the data buffer and holds exactly
 * its shape's elements. */
static clt_status check_tensor_range(st_parser *p, const clt_st_tensor *t) {
  char shape[256];
  size_t esize = clt_st_dtype_size(t->dtype);
  int64_t numel = shape_numel(t->ndim, t->shape);
  if (numel < 0 || (uint64_t)numel > (uint64_t)INT64_MAX / esize)
    return parse_fail(p, CLT_ERR_FORMAT,
                      "tensor '%.*s': shape %s has too many elements",
                      ST_NAME_SHOWN, t->name,
                      format_shape(shape, sizeof shape, t->ndim, t->shape));
  uint64_t bytes = (uint64_t)numel * esize;
  if (t->begin > t->end)
    return parse_fail(p, CLT_ERR_FORMAT,
                      "tensor '%.*s': data_offsets [%" PRIu64 ", %" PRIu64
                      "] begin after they end",
                      ST_NAME_SHOWN, t->name, t->begin, t->end);
  if (t->end > p->f->data_size)
    return parse_fail(p, CLT_ERR_FORMAT,
                      "tensor '%.*s': data_offsets [%" PRIu64 ", %" PRIu64
                      "] reach outside the data buffer (%zu bytes)",
                      ST_NAME_SHOWN, t->name, t->begin, t->end,
                      p->f->data_size);
  if (t->end - t->begin != bytes)
    return parse_fail(p, CLT_ERR_FORMAT,
                      "tensor '%.*s': shape %s of %s needs %" PRIu64
                      " bytes, but data_offsets [%" PRIu64 ", %" PRIu64
                      "] hold %" PRIu64,
                      ST_NAME_SHOWN, t->name,
                      format_shape(shape, sizeof shape, t->ndim, t->shape),
                      clt_st_dtype_name(t->dtype), bytes, t->begin, t->end,
                      t->end - t->begin);
  return CLT_OK;
}

/* Reads one tensor entry; takes ownership of name. */
static clt_status read_tensor(st_parser *p, char *name, size_t len) {
  clt_st_tensor *t = new_tensor(p);
  if (!t) {
    free(name);
    return parse_fail(p, CLT_ERR_HOST_MEMORY, "out of memory");
  }
  t->name = name;
  /* \u0000 decodes to a NUL, which a C string cannot carry. */
  if (strlen(name) != len)
    return parse_fail(p, CLT_ERR_FORMAT,
                      "a tensor name contains a NUL character ('%.*s...')",
                      ST_NAME_SHOWN, name);
  clt_json_type type = clt_json_peek(&p->r);
  if (type != CLT_JSON_OBJECT)
    return parse_fail(p, CLT_ERR_FORMAT,
                      "tensor '%.*s': expected an object with dtype, shape "
                      "and data_offsets, found %s",
                      ST_NAME_SHOWN, name, clt_json_type_name(type));
  CLT_TRY(read_tensor_fields(p, t));
  return check_tensor_range(p, t);
}

static clt_status add_metadata(st_parser *p, char *key, char *value) {
  clt_st_file *f = p->f;
  if (f->meta_count == p->meta_cap) {
    size_t cap = p->meta_cap ? 2 * p->meta_cap : 8;
    char **k = realloc(f->meta_keys, cap * sizeof *k);
    if (k) f->meta_keys = k;
    char **v = k ? realloc(f->meta_values, cap * sizeof *v) : NULL;
    if (v) f->meta_values = v;
    if (!k || !v) {
      free(key);
      free(value);
      return parse_fail(p, CLT_ERR_HOST_MEMORY, "out of memory");
    }
    p->meta_cap = cap;
  }
  f->meta_keys[f->meta_count] = key;
  f->meta_values[f->meta_count++] = value;
  return CLT_OK;
}

/* Reads one "key": "value" pair of __metadata__; takes ownership of key. */
static clt_status read_metadata_value(st_parser *p, char *key, size_t len) {
  clt_json_type type = clt_json_peek(&p->r);
  char *value = NULL;
  size_t vlen = 0;
  clt_status st = CLT_OK;
  if (strlen(key) != len)
    st = parse_fail(p, CLT_ERR_FORMAT,
                    "a metadata key contains a NUL character");
  else if (type != CLT_JSON_STRING)
    st = parse_fail(p, CLT_ERR_FORMAT,
                    "metadata value for key '%.*s' is %s, expected a string",
                    ST_NAME_SHOWN, key, clt_json_type_name(type));
  else if (!clt_json_read_string(&p->r, &value, &vlen))
    st = reader_fail(p, "__metadata__");
  else if (strlen(value) != vlen)
    st = parse_fail(p, CLT_ERR_FORMAT,
                    "metadata value for key '%.*s' contains a NUL character",
                    ST_NAME_SHOWN, key);
  if (st != CLT_OK) {
    free(key);
    free(value);
    return st;
  }
  return add_metadata(p, key, value);
}

static clt_status read_metadata(st_parser *p) {
  if (p->have_metadata)
    return parse_fail(p, CLT_ERR_FORMAT, "__metadata__ appears twice");
  p->have_metadata = true;
  clt_json_type type = clt_json_peek(&p->r);
  if (type != CLT_JSON_OBJECT)
    return parse_fail(p, CLT_ERR_FORMAT,
                      "__metadata__ is %s, expected an object of strings",
                      clt_json_type_name(type));
  clt_json_enter_object(&p->r);
  char *key;
  size_t len;
  while (clt_json_next_key(&p->r, &key, &len))
    CLT_TRY(read_metadata_value(p, key, len));
  return p->r.failed ? reader_fail(p, "__metadata__") : CLT_OK;
}

static bool is_metadata_key(const char *key, size_t len) {
  return len == 12 && memcmp(key, "__metadata__", 12) == 0;
}

static clt_status read_header(clt_st_file *f, const char *header, size_t n,
                              clt_err *err) {
  st_parser p = {.f = f, .err = err};
  clt_json_reader_init(&p.r, header, n, ST_MAX_DEPTH);
  clt_json_type type = clt_json_peek(&p.r);
  if (type != CLT_JSON_OBJECT)
    return parse_fail(&p, CLT_ERR_FORMAT,
                      "the header is %s, expected a JSON object",
                      clt_json_type_name(type));
  clt_json_enter_object(&p.r);
  char *key;
  size_t len;
  while (clt_json_next_key(&p.r, &key, &len)) {
    if (is_metadata_key(key, len)) {
      free(key);
      CLT_TRY(read_metadata(&p));
    } else {
      CLT_TRY(read_tensor(&p, key, len));
    }
  }
  return p.r.failed ? reader_fail(&p, "header") : CLT_OK;
}

/* ------------------------------------------------------------------------ */
/* Checks across entries                                                     */

static int compare_tensor_names(const void *a, const void *b) {
  return strcmp(((const clt_st_tensor *)a)->name,
                ((const clt_st_tensor *)b)->name);
}

/* Sorts the tensors by name (for clt_st_find) and finds duplicates, which
 * then sit side by side. */
static clt_status sort_tensors(clt_st_file *f, clt_err *err) {
  if (f->count > 1)
    qsort(f->tensors, f->count, sizeof *f->tensors, compare_tensor_names);
  for (size_t i = 1; i < f->count; i++)
    if (strcmp(f->tensors[i - 1].name, f->tensors[i].name) == 0)
      return fail(f->source, err, CLT_ERR_FORMAT,
                  "duplicate tensor name '%.*s'", ST_NAME_SHOWN,
                  f->tensors[i].name);
  return CLT_OK;
}

typedef struct meta_pair {
  char *key;
  char *value;
} meta_pair;

static int compare_meta_pairs(const void *a, const void *b) {
  return strcmp(((const meta_pair *)a)->key, ((const meta_pair *)b)->key);
}

/* Sorts the metadata by key (for clt_st_metadata), keeping each value with
 * its key, and finds duplicate keys. */
static clt_status sort_metadata(clt_st_file *f, clt_err *err) {
  size_t n = f->meta_count;
  if (n < 2) return CLT_OK;
  meta_pair *pairs = malloc(n * sizeof *pairs);
  if (!pairs) return fail(f->source, err, CLT_ERR_HOST_MEMORY, "out of memory");
  for (size_t i = 0; i < n; i++)
    pairs[i] = (meta_pair){f->meta_keys[i], f->meta_values[i]};
  qsort(pairs, n, sizeof *pairs, compare_meta_pairs);
  for (size_t i = 0; i < n; i++) {
    f->meta_keys[i] = pairs[i].key;
    f->meta_values[i] = pairs[i].value;
  }
  free(pairs);
  for (size_t i = 1; i < n; i++)
    if (strcmp(f->meta_keys[i - 1], f->meta_keys[i]) == 0)
      return fail(f->source, err, CLT_ERR_FORMAT,
                  "duplicate metadata key '%.*s'", ST_NAME_SHOWN,
                  f->meta_keys[i]);
  return CLT_OK;
}

static int compare_ranges(const void *a, const void *b) {
  const clt_st_tensor *x = *(const clt_st_tensor *const *)a;
  const clt_st_tensor *y = *(const clt_st_tensor *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return 0;
}

/* Walks the ranges in order; `reach` is the end of the data covered so
 * far and `last` the tensor that reached it. */
static clt_status check_tiling(const clt_st_file *f,
                               const clt_st_tensor *const *order,
                               clt_err *err) {
  uint64_t reach = 0;
  const clt_st_tensor *last = NULL;
  for (size_t i = 0; i < f->count; i++) {
    const clt_st_tensor *t = order[i];
    if (t->begin < reach)
      return fail(f->source, err, CLT_ERR_FORMAT,
                  "tensors '%.*s' [%" PRIu64 ", %" PRIu64
                  ") and '%.*s' [%" PRIu64 ", %" PRIu64
                  ") overlap in the data buffer",
                  ST_NAME_SHOWN, last->name, last->begin, last->end,
                  ST_NAME_SHOWN, t->name, t->begin, t->end);
    if (t->begin > reach) break;
    if (t->end > reach) {
      reach = t->end;
      last = t;
    }
  }
  if (reach == f->data_size) return CLT_OK;
  uint64_t gap_end = f->data_size;
  for (size_t i = 0; i < f->count; i++)
    if (order[i]->begin > reach) {
      gap_end = order[i]->begin;
      break;
    }
  return fail(f->source, err, CLT_ERR_FORMAT,
              "bytes [%" PRIu64 ", %" PRIu64 ") of the data buffer (%zu "
              "bytes) belong to no tensor; the format requires the tensors "
              "to cover it exactly",
              reach, gap_end, f->data_size);
}

/* The format requires the tensors to tile the data buffer: no byte shared,
 * no byte unused. That makes every byte of the file accounted for. */
static clt_status check_coverage(const clt_st_file *f, clt_err *err) {
  const clt_st_tensor **order = malloc((f->count + 1) * sizeof *order);
  if (!order) return fail(f->source, err, CLT_ERR_HOST_MEMORY, "out of memory");
  for (size_t i = 0; i < f->count; i++) order[i] = &f->tensors[i];
  if (f->count > 1) qsort(order, f->count, sizeof *order, compare_ranges);
  clt_status st = check_tiling(f, order, err);
  free(order);
  return st;
}

/* ------------------------------------------------------------------------ */
/* Whole files                                                               */

/* Checks the length field of a size-byte file whose first 8 bytes are
 * head (when size >= 8). */
static clt_status check_length(const char *source, size_t size,
                               const uint8_t *head, clt_err *err) {
  if (size < 8)
    return fail(source, err, CLT_ERR_FORMAT,
                "the file is %zu bytes, too short for the 8-byte header "
                "length of a safetensors file",
                size);
  uint64_t n = load_le64(head);
  if (n > size - 8)
    return fail(source, err, CLT_ERR_FORMAT,
                "the header length %" PRIu64 " is larger than the file (%zu "
                "bytes): truncated, or not a safetensors file",
                n, size);
  if (n > CLT_ST_MAX_HEADER_BYTES)
    return fail(source, err, CLT_ERR_FORMAT,
                "the header length %" PRIu64 " exceeds the limit of %" PRIu64
                " bytes",
                n, CLT_ST_MAX_HEADER_BYTES);
  return CLT_OK;
}

/* Checks the length field and locates the header and the data buffer. */
static clt_status split_image(clt_st_file *f, uint64_t *header_len,
                              clt_err *err) {
  CLT_TRY(check_length(f->source, f->size, f->bytes, err));
  uint64_t n = load_le64(f->bytes);
  f->data = f->bytes + 8 + n;
  f->data_size = f->size - 8 - (size_t)n;
  *header_len = n;
  return CLT_OK;
}

static clt_status parse_image(clt_st_file *f, clt_err *err) {
  uint64_t n = 0;
  CLT_TRY(split_image(f, &n, err));
  const char *header = (const char *)f->bytes + 8;
  CLT_TRY(check_syntax(f, header, (size_t)n, err));
  CLT_TRY(read_header(f, header, (size_t)n, err));
  CLT_TRY(sort_tensors(f, err));
  CLT_TRY(sort_metadata(f, err));
  return check_coverage(f, err);
}

/* Allocates room for a size-byte file image placed so that its data
 * buffer (which begins 8 + header_len bytes in) is aligned, and sets
 * *image to where the image goes. The length may be bogus; the placement
 * then does not matter, as parsing will fail. */
static clt_status alloc_image(clt_st_file *f, size_t size, uint64_t header_len,
                              uint8_t **image, clt_err *err) {
  if (size > SIZE_MAX - CLT_ST_DATA_ALIGN)
    return fail(f->source, err, CLT_ERR_HOST_MEMORY, "the file is too large");
  uint8_t *storage = malloc(size + CLT_ST_DATA_ALIGN);
  if (!storage)
    return fail(f->source, err, CLT_ERR_HOST_MEMORY,
                "out of memory allocating %zu bytes for the file", size);
  /* Unsigned arithmetic wraps modulo 2^64, a multiple of the alignment,
   * so the remainder is right even for a huge header_len. */
  uintptr_t data_at = (uintptr_t)storage + 8 + (uintptr_t)header_len;
  size_t shift =
      (CLT_ST_DATA_ALIGN - data_at % CLT_ST_DATA_ALIGN) % CLT_ST_DATA_ALIGN;
  f->storage = storage;
  f->bytes = storage + shift;
  f->size = size;
  *image = storage + shift;
  return CLT_OK;
}

static clt_status start_file(clt_st_file *f, const char *source, clt_err *err) {
  memset(f, 0, sizeof *f);
  f->source = dup_string(source);
  if (!f->source)
    return clt_err_set(err, CLT_ERR_HOST_MEMORY, "%.200s: out of memory",
                       source);
  return CLT_OK;
}

static clt_status finish_file(clt_st_file *f, clt_status st) {
  if (st != CLT_OK) clt_st_file_free(f);
  return st;
}

clt_status clt_st_parse(const uint8_t *bytes, size_t size,
                        const char *source_name, clt_st_file *out,
                        clt_err *err) {
  if (!out) return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT, "out is NULL");
  if (!source_name) source_name = "<memory>";
  CLT_TRY(finish_file(out, start_file(out, source_name, err)));
  if (!bytes && size)
    return finish_file(
        out, fail(source_name, err, CLT_ERR_INVALID_ARGUMENT, "bytes is NULL"));
  uint64_t header_len = size >= 8 ? load_le64(bytes) : 0;
  uint8_t *image = NULL;
  CLT_TRY(finish_file(out, alloc_image(out, size, header_len, &image, err)));
  if (size) memcpy(image, bytes, size);
  return finish_file(out, parse_image(out, err));
}

/* Reads the open file fp of the given size into a new image of f. */
static clt_status read_image(clt_st_file *f, FILE *fp, size_t size,
                             clt_err *err) {
  uint8_t head[8];
  size_t want = size < 8 ? size : 8;
  if (fread(head, 1, want, fp) != want)
    return fail(f->source, err, CLT_ERR_IO, "read failed: %s",
                ferror(fp) ? strerror(errno) : "the file shrank");
  /* Refuse a file that is not safetensors before allocating its size. */
  CLT_TRY(check_length(f->source, size, head, err));
  uint8_t *image = NULL;
  CLT_TRY(alloc_image(f, size, load_le64(head), &image, err));
  memcpy(image, head, want);
  if (fread(image + want, 1, size - want, fp) != size - want)
    return fail(f->source, err, CLT_ERR_IO, "read failed: %s",
                ferror(fp) ? strerror(errno) : "the file shrank");
  return CLT_OK;
}

static clt_status read_whole_file(clt_st_file *f, const char *path,
                                  clt_err *err) {
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return fail(path, err, CLT_ERR_IO, "cannot open: %s", strerror(errno));
  struct stat st;
  clt_status status = CLT_OK;
  if (fstat(fileno(fp), &st) != 0)
    status = fail(path, err, CLT_ERR_IO, "cannot stat: %s", strerror(errno));
  else if (!S_ISREG(st.st_mode))
    status = fail(path, err, CLT_ERR_IO, "not a regular file");
  else if ((uint64_t)st.st_size > SIZE_MAX)
    status = fail(path, err, CLT_ERR_HOST_MEMORY, "the file is too large");
  else
    status = read_image(f, fp, (size_t)st.st_size, err);
  fclose(fp);
  return status;
}

clt_status clt_st_read_file(const char *path, clt_st_file *out, clt_err *err) {
  if (!out) return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT, "out is NULL");
  if (!path) {
    memset(out, 0, sizeof *out);
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT, "path is NULL");
  }
  CLT_TRY(finish_file(out, start_file(out, path, err)));
  CLT_TRY(finish_file(out, read_whole_file(out, path, err)));
  return finish_file(out, parse_image(out, err));
}

void clt_st_file_free(clt_st_file *f) {
  if (!f) return;
  for (size_t i = 0; i < f->count; i++) free(f->tensors[i].name);
  for (size_t i = 0; i < f->meta_count; i++) {
    free(f->meta_keys[i]);
    free(f->meta_values[i]);
  }
  free(f->tensors);
  free(f->meta_keys);
  free(f->meta_values);
  free(f->storage);
  free(f->source);
  memset(f, 0, sizeof *f);
}

/* ------------------------------------------------------------------------ */
/* Lookups                                                                   */

static int compare_name_to_tensor(const void *key, const void *elem) {
  return strcmp(key, ((const clt_st_tensor *)elem)->name);
}

const clt_st_tensor *clt_st_find(const clt_st_file *f, const char *name) {
  if (!f || !name || f->count == 0) return NULL;
  return bsearch(name, f->tensors, f->count, sizeof *f->tensors,
                 compare_name_to_tensor);
}

const void *clt_st_tensor_data(const clt_st_file *f, const clt_st_tensor *t) {
  if (!f || !t || !f->data) return NULL;
  return f->data + t->begin;
}

size_t clt_st_tensor_nbytes(const clt_st_tensor *t) {
  return t ? (size_t)(t->end - t->begin) : 0;
}

static int compare_name_to_key(const void *key, const void *elem) {
  return strcmp(key, *(char *const *)elem);
}

const char *clt_st_metadata(const clt_st_file *f, const char *key) {
  if (!f || !key || f->meta_count == 0) return NULL;
  char **found = bsearch(key, f->meta_keys, f->meta_count, sizeof *f->meta_keys,
                         compare_name_to_key);
  return found ? f->meta_values[found - f->meta_keys] : NULL;
}

static bool same_shape(const clt_st_tensor *t, int ndim, const int64_t *shape) {
  if (t->ndim != ndim) return false;
  for (int i = 0; i < ndim; i++)
    if (t->shape[i] != shape[i]) return false;
  return true;
}

clt_status clt_st_expect(const clt_st_file *f, const char *name,
                         clt_st_dtype dtype, int ndim, const int64_t *shape,
                         const clt_st_tensor **out, clt_err *err) {
  if (out) *out = NULL;
  if (!f || !name)
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT, "file or name is NULL");
  const char *source = f->source ? f->source : "<safetensors>";
  const clt_st_tensor *t = clt_st_find(f, name);
  if (!t)
    return fail(source, err, CLT_ERR_FORMAT, "missing tensor '%.*s'",
                ST_NAME_SHOWN, name);
  if (t->dtype != dtype)
    return fail(source, err, CLT_ERR_FORMAT,
                "tensor '%.*s' has dtype %s, expected %s", ST_NAME_SHOWN, name,
                clt_st_dtype_name(t->dtype), clt_st_dtype_name(dtype));
  if (shape && !same_shape(t, ndim, shape)) {
    char have[256], want[256];
    int shown = ndim < 0 ? 0 : ndim > CLT_ST_MAX_DIMS ? CLT_ST_MAX_DIMS : ndim;
    return fail(source, err, CLT_ERR_SHAPE,
                "tensor '%.*s' has shape %s, the model expects %s",
                ST_NAME_SHOWN, name,
                format_shape(have, sizeof have, t->ndim, t->shape),
                format_shape(want, sizeof want, shown, shape));
  }
  if (out) *out = t;
  return CLT_OK;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

typedef struct st_entry {
  char *name;
  clt_st_dtype dtype;
  int ndim;
  int64_t shape[CLT_ST_MAX_DIMS];
  uint8_t *data;
  size_t nbytes;
} st_entry;

struct clt_st_writer {
  st_entry *entries; /* in the order added */
  size_t count, cap;
  meta_pair *meta;
  size_t meta_count, meta_cap;
};

static bool host_is_little_endian(void) {
  uint16_t one = 1;
  uint8_t low;
  memcpy(&low, &one, 1);
  return low == 1;
}

clt_status clt_st_writer_create(clt_st_writer **out, clt_err *err) {
  if (!out) return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = NULL;
  /* The format is little-endian and the writer copies host memory as it
   * is; a big-endian host would need byte swapping, which nobody asked
   * for yet. */
  if (!host_is_little_endian())
    return clt_err_set(err, CLT_ERR_UNSUPPORTED,
                       "safetensors: big-endian hosts are not supported");
  *out = calloc(1, sizeof **out);
  if (!*out)
    return clt_err_set(err, CLT_ERR_HOST_MEMORY, "safetensors: out of memory");
  return CLT_OK;
}

void clt_st_writer_destroy(clt_st_writer *w) {
  if (!w) return;
  for (size_t i = 0; i < w->count; i++) {
    free(w->entries[i].name);
    free(w->entries[i].data);
  }
  for (size_t i = 0; i < w->meta_count; i++) {
    free(w->meta[i].key);
    free(w->meta[i].value);
  }
  free(w->entries);
  free(w->meta);
  free(w);
}

/* Checks a tensor's name and shape; sets *nbytes. */
static clt_status check_new_tensor(const clt_st_writer *w, const char *name,
                                   clt_st_dtype dtype, int ndim,
                                   const int64_t *shape, size_t *nbytes,
                                   clt_err *err) {
  clt_status bad = CLT_ERR_INVALID_ARGUMENT;
  if (!name) return clt_err_set(err, bad, "safetensors: tensor name is NULL");
  if (is_metadata_key(name, strlen(name)))
    return clt_err_set(err, bad,
                       "safetensors: '__metadata__' is reserved "
                       "and cannot name a tensor");
  if (!clt_json_utf8_valid(name, strlen(name)))
    return clt_err_set(err, bad,
                       "safetensors: tensor name '%.*s' is not "
                       "UTF-8",
                       ST_NAME_SHOWN, name);
  for (size_t i = 0; i < w->count; i++)
    if (strcmp(w->entries[i].name, name) == 0)
      return clt_err_set(err, bad, "safetensors: tensor '%.*s' added twice",
                         ST_NAME_SHOWN, name);
  if (clt_st_dtype_size(dtype) == 0)
    return clt_err_set(err, bad, "safetensors: tensor '%.*s': bad dtype %d",
                       ST_NAME_SHOWN, name, (int)dtype);
  if (ndim < 0 || ndim > CLT_ST_MAX_DIMS || (ndim > 0 && !shape))
    return clt_err_set(err, bad,
                       "safetensors: tensor '%.*s': ndim %d is "
                       "not in 0..%d (or shape is NULL)",
                       ST_NAME_SHOWN, name, ndim, CLT_ST_MAX_DIMS);
  int64_t numel = shape_numel(ndim, shape);
  size_t esize = clt_st_dtype_size(dtype);
  if (numel < 0 || (uint64_t)numel > (uint64_t)INT64_MAX / esize ||
      (uint64_t)numel > SIZE_MAX / esize)
    return clt_err_set(err, bad,
                       "safetensors: tensor '%.*s': negative or "
                       "too large dimensions",
                       ST_NAME_SHOWN, name);
  *nbytes = (size_t)numel * esize;
  return CLT_OK;
}

static bool grow_entries(clt_st_writer *w) {
  if (w->count < w->cap) return true;
  size_t cap = w->cap ? 2 * w->cap : 16;
  st_entry *e = realloc(w->entries, cap * sizeof *e);
  if (!e) return false;
  w->entries = e;
  w->cap = cap;
  return true;
}

clt_status clt_st_writer_add(clt_st_writer *w, const char *name,
                             clt_st_dtype dtype, int ndim, const int64_t *shape,
                             const void *data, clt_err *err) {
  if (!w) return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT, "writer is NULL");
  size_t nbytes = 0;
  CLT_TRY(check_new_tensor(w, name, dtype, ndim, shape, &nbytes, err));
  if (nbytes && !data)
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "safetensors: tensor '%.*s': data is NULL",
                       ST_NAME_SHOWN, name);
  st_entry e = {.dtype = dtype, .ndim = ndim, .nbytes = nbytes};
  for (int i = 0; i < CLT_ST_MAX_DIMS; i++)
    e.shape[i] = i < ndim ? shape[i] : 1;
  e.name = dup_string(name);
  e.data = malloc(nbytes ? nbytes : 1);
  if (!e.name || !e.data || !grow_entries(w)) {
    free(e.name);
    free(e.data);
    return clt_err_set(err, CLT_ERR_HOST_MEMORY,
                       "safetensors: out of memory adding tensor '%.*s' "
                       "(%zu bytes)",
                       ST_NAME_SHOWN, name, nbytes);
  }
  if (nbytes) memcpy(e.data, data, nbytes);
  w->entries[w->count++] = e;
  return CLT_OK;
}

static clt_status check_metadata_text(const char *what, const char *s,
                                      clt_err *err) {
  if (!s)
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "safetensors: metadata %s is NULL", what);
  if (!clt_json_utf8_valid(s, strlen(s)))
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "safetensors: metadata %s is not UTF-8", what);
  return CLT_OK;
}

/* The slot of key in w->meta, making a new empty one if needed. */
static meta_pair *metadata_slot(clt_st_writer *w, const char *key) {
  for (size_t i = 0; i < w->meta_count; i++)
    if (strcmp(w->meta[i].key, key) == 0) return &w->meta[i];
  if (w->meta_count == w->meta_cap) {
    size_t cap = w->meta_cap ? 2 * w->meta_cap : 8;
    meta_pair *m = realloc(w->meta, cap * sizeof *m);
    if (!m) return NULL;
    w->meta = m;
    w->meta_cap = cap;
  }
  meta_pair *slot = &w->meta[w->meta_count];
  slot->key = dup_string(key);
  slot->value = NULL;
  if (!slot->key) return NULL;
  w->meta_count++;
  return slot;
}

clt_status clt_st_writer_set_metadata(clt_st_writer *w, const char *key,
                                      const char *value, clt_err *err) {
  if (!w) return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT, "writer is NULL");
  CLT_TRY(check_metadata_text("key", key, err));
  CLT_TRY(check_metadata_text("value", value, err));
  char *copy = dup_string(value);
  meta_pair *slot = copy ? metadata_slot(w, key) : NULL;
  if (!slot) {
    free(copy);
    return clt_err_set(err, CLT_ERR_HOST_MEMORY, "safetensors: out of memory");
  }
  free(slot->value);
  slot->value = copy;
  return CLT_OK;
}

/* The order of the tensors in the header and in the data buffer, and each
 * one's offset (indexed like w->entries). */
typedef struct st_layout {
  const st_entry **by_name;
  const st_entry **by_place;
  uint64_t *begin;
  size_t count;
  uint64_t data_size;
  clt_json_buf header;
} st_layout;

static int compare_entry_names(const void *a, const void *b) {
  return strcmp((*(const st_entry *const *)a)->name,
                (*(const st_entry *const *)b)->name);
}

/* Largest elements first: every tensor then starts at a multiple of its
 * own element size, since all sizes are powers of two and all before it
 * are multiples of a larger one. */
static int compare_entry_places(const void *a, const void *b) {
  const st_entry *x = *(const st_entry *const *)a;
  const st_entry *y = *(const st_entry *const *)b;
  size_t sx = clt_st_dtype_size(x->dtype), sy = clt_st_dtype_size(y->dtype);
  if (sx != sy) return sx > sy ? -1 : 1;
  return strcmp(x->name, y->name);
}

static void append_metadata(clt_json_buf *b, const clt_st_writer *w) {
  meta_pair *sorted = malloc(w->meta_count * sizeof *sorted);
  if (!sorted) {
    b->failed = true;
    return;
  }
  memcpy(sorted, w->meta, w->meta_count * sizeof *sorted);
  qsort(sorted, w->meta_count, sizeof *sorted, compare_meta_pairs);
  clt_json_buf_append(b, "\"__metadata__\":{", 16);
  for (size_t i = 0; i < w->meta_count; i++) {
    if (i) clt_json_buf_append(b, ",", 1);
    clt_json_buf_append_string(b, sorted[i].key, strlen(sorted[i].key));
    clt_json_buf_append(b, ":", 1);
    clt_json_buf_append_string(b, sorted[i].value, strlen(sorted[i].value));
  }
  clt_json_buf_append(b, "}", 1);
  free(sorted);
}

static void append_entry(clt_json_buf *b, const st_entry *e, uint64_t begin) {
  clt_json_buf_append_string(b, e->name, strlen(e->name));
  clt_json_buf_printf(b, ":{\"dtype\":\"%s\",\"shape\":[",
                      clt_st_dtype_name(e->dtype));
  for (int i = 0; i < e->ndim; i++)
    clt_json_buf_printf(b, "%s%" PRId64, i ? "," : "", e->shape[i]);
  clt_json_buf_printf(b, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", begin,
                      begin + e->nbytes);
}

/* Builds the header, padded with spaces so that the data buffer starts at
 * a multiple of 8 bytes in the file. */
static void build_header(st_layout *l, const clt_st_writer *w) {
  clt_json_buf *b = &l->header;
  clt_json_buf_append(b, "{", 1);
  if (w->meta_count) append_metadata(b, w);
  for (size_t i = 0; i < w->count; i++) {
    if (i || w->meta_count) clt_json_buf_append(b, ",", 1);
    append_entry(b, l->by_name[i], l->begin[l->by_name[i] - w->entries]);
  }
  clt_json_buf_append(b, "}", 1);
  while ((8 + b->len) % 8 != 0 && !b->failed) clt_json_buf_append(b, " ", 1);
}

static void layout_free(st_layout *l) {
  free(l->by_name);
  free(l->by_place);
  free(l->begin);
  clt_json_buf_free(&l->header);
}

static clt_status plan_layout(const clt_st_writer *w, st_layout *l,
                              clt_err *err) {
  memset(l, 0, sizeof *l);
  l->count = w->count;
  size_t n = w->count ? w->count : 1;
  l->by_name = malloc(n * sizeof *l->by_name);
  l->by_place = malloc(n * sizeof *l->by_place);
  l->begin = malloc(n * sizeof *l->begin);
  if (!l->by_name || !l->by_place || !l->begin) goto oom;
  for (size_t i = 0; i < w->count; i++)
    l->by_name[i] = l->by_place[i] = &w->entries[i];
  qsort(l->by_name, w->count, sizeof *l->by_name, compare_entry_names);
  qsort(l->by_place, w->count, sizeof *l->by_place, compare_entry_places);
  for (size_t i = 0; i < w->count; i++) {
    l->begin[l->by_place[i] - w->entries] = l->data_size;
    l->data_size += l->by_place[i]->nbytes;
  }
  build_header(l, w);
  if (l->header.failed) goto oom;
  return CLT_OK;
oom:
  layout_free(l);
  return clt_err_set(err, CLT_ERR_HOST_MEMORY,
                     "safetensors: out of memory "
                     "building the header");
}

/* Where serialised bytes go: a file descriptor or a memory buffer. */
typedef struct st_sink {
  clt_atomic_file *file; /* NULL for memory */
  uint8_t *mem;
  size_t used;
} st_sink;

static bool sink_write(st_sink *s, const void *p, size_t n) {
  if (!s->file) {
    if (n) memcpy(s->mem + s->used, p, n);
    s->used += n;
    return true;
  }
  return clt_atomic_write(s->file, p, n);
}

static bool emit_file(const st_layout *l, st_sink *s) {
  uint8_t len[8];
  store_le64(len, l->header.len);
  if (!sink_write(s, len, 8)) return false;
  if (!sink_write(s, l->header.data, l->header.len)) return false;
  for (size_t i = 0; i < l->count; i++)
    if (!sink_write(s, l->by_place[i]->data, l->by_place[i]->nbytes))
      return false;
  return true;
}

clt_status clt_st_writer_serialize(const clt_st_writer *w, uint8_t **out,
                                   size_t *size, clt_err *err) {
  if (!w || !out || !size)
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "writer, out or size is NULL");
  *out = NULL;
  *size = 0;
  st_layout l;
  CLT_TRY(plan_layout(w, &l, err));
  size_t total = 8 + l.header.len + (size_t)l.data_size;
  st_sink sink = {.file = NULL, .mem = malloc(total)};
  if (!sink.mem) {
    layout_free(&l);
    return clt_err_set(err, CLT_ERR_HOST_MEMORY,
                       "safetensors: out of memory (%zu bytes)", total);
  }
  emit_file(&l, &sink);
  layout_free(&l);
  *out = sink.mem;
  *size = total;
  return CLT_OK;
}

clt_status clt_st_writer_save(const clt_st_writer *w, const char *path,
                              clt_err *err) {
  if (!w || !path || !*path)
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "writer or path is NULL or empty");
  st_layout l;
  CLT_TRY(plan_layout(w, &l, err));
  clt_atomic_file f;
  clt_status st = clt_atomic_open(&f, path, err);
  if (st == CLT_OK) {
    st_sink sink = {.file = &f};
    emit_file(&l, &sink); /* a failed write is reported by the commit */
    /* -1: the umask decides the mode, as for any new file. */
    st = clt_atomic_commit(&f, -1, err);
  }
  layout_free(&l);
  return st;
}
