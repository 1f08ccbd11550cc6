/* libFuzzer target for the safetensors reader and the JSON reader under it.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *     fuzz/fuzz_safetensors.c src/io/safetensors.c src/io/json.c \
 *     src/common/error.c -o fuzz_st && ./fuzz_st -max_total_time=60
 *
 * An input is a whole file image. As a shortcut for the fuzzer, an input
 * that starts with '{' is a header: the bytes up to the first NUL (or the
 * end) become the header, with its length field made up, and the bytes
 * after the NUL the data buffer; so mutating the JSON does not have to keep
 * an 8-byte length in step.
 *
 * Beyond "no crash, no leak, no undefined behaviour", it checks that an
 * accepted file keeps its promises (ranges inside the data, lookups find
 * every tensor) and that writing it back and reading that gives the same
 * tensors and metadata bit for bit. A failure must carry a message that
 * names the source. Any broken promise aborts, which libFuzzer reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "io/json.h"
#include "io/safetensors.h"

#define SOURCE "fuzz.safetensors"

static void require(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "broken promise: %s\n", what);
    abort();
  }
}

/* Turns a '{'-input into a file image (see the top of the file). */
static uint8_t *image_from_header(const uint8_t *in, size_t n, size_t *size) {
  const uint8_t *nul = memchr(in, 0, n);
  size_t h = nul ? (size_t)(nul - in) : n;
  size_t rest = nul ? n - h - 1 : 0;
  uint8_t *img = malloc(8 + h + rest);
  if (!img) return NULL;
  for (int i = 0; i < 8; i++) img[i] = (uint8_t)((uint64_t)h >> (8 * i));
  memcpy(img + 8, in, h);
  if (rest) memcpy(img + 8 + h, nul + 1, rest);
  *size = 8 + h + rest;
  return img;
}

static void check_accepted(const clt_st_file *f) {
  for (size_t i = 0; i < f->count; i++) {
    const clt_st_tensor *t = &f->tensors[i];
    require(t->begin <= t->end && t->end <= f->data_size, "range inside");
    require(clt_st_find(f, t->name) == t, "find");
    require(clt_st_expect(f, t->name, t->dtype, t->ndim, t->shape, NULL,
                          NULL) == CLT_OK,
            "expect own shape");
    const uint8_t *p = clt_st_tensor_data(f, t);
    volatile uint8_t sum = 0; /* touch every byte, for ASan */
    for (uint64_t k = 0; k < t->end - t->begin; k++) sum ^= p[k];
    (void)sum;
  }
  for (size_t i = 0; i < f->meta_count; i++)
    require(clt_st_metadata(f, f->meta_keys[i]) == f->meta_values[i],
            "metadata lookup");
}

static void compare_files(const clt_st_file *a, const clt_st_file *b) {
  require(a->count == b->count && a->meta_count == b->meta_count, "counts");
  for (size_t i = 0; i < a->count; i++) {
    const clt_st_tensor *x = &a->tensors[i], *y = &b->tensors[i];
    require(strcmp(x->name, y->name) == 0, "names");
    require(x->dtype == y->dtype && x->ndim == y->ndim, "dtype and ndim");
    require(memcmp(x->shape, y->shape, sizeof x->shape) == 0, "shape");
    require(x->end - x->begin == y->end - y->begin, "sizes");
    require(memcmp(clt_st_tensor_data(a, x), clt_st_tensor_data(b, y),
                   x->end - x->begin) == 0,
            "bytes");
  }
  for (size_t i = 0; i < a->meta_count; i++) {
    require(strcmp(a->meta_keys[i], b->meta_keys[i]) == 0, "meta keys");
    require(strcmp(a->meta_values[i], b->meta_values[i]) == 0, "meta values");
  }
}

/* Writes f back through the writer, reads the result, compares. */
static void check_round_trip(const clt_st_file *f) {
  clt_st_writer *w = NULL;
  clt_err err;
  require(clt_st_writer_create(&w, &err) == CLT_OK, "create");
  for (size_t i = 0; i < f->count; i++) {
    const clt_st_tensor *t = &f->tensors[i];
    require(clt_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape,
                              clt_st_tensor_data(f, t), &err) == CLT_OK,
            err.msg);
  }
  for (size_t i = 0; i < f->meta_count; i++)
    require(clt_st_writer_set_metadata(w, f->meta_keys[i], f->meta_values[i],
                                       &err) == CLT_OK,
            err.msg);
  uint8_t *img = NULL;
  size_t size = 0;
  require(clt_st_writer_serialize(w, &img, &size, &err) == CLT_OK, err.msg);
  clt_st_writer_destroy(w);
  clt_st_file back;
  require(clt_st_parse(img, size, "again", &back, &err) == CLT_OK, err.msg);
  compare_files(f, &back);
  clt_st_file_free(&back);
  free(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* The JSON reader on its own, on arbitrary text. */
  size_t pos = 0;
  int line, column;
  if (!clt_json_validate((const char *)data, size, 0, &pos, NULL, 0)) {
    require(pos <= size, "error position inside the text");
    clt_json_line_column((const char *)data, size, pos, &line, &column);
  }

  uint8_t *owned = NULL;
  if (size > 0 && data[0] == '{') {
    owned = image_from_header(data, size, &size);
    if (!owned) return 0;
    data = owned;
  }
  clt_st_file f;
  clt_err err;
  memset(&err, 0, sizeof err);
  if (clt_st_parse(data, size, SOURCE, &f, &err) == CLT_OK) {
    check_accepted(&f);
    check_round_trip(&f);
  } else {
    require(strncmp(err.msg, SOURCE ": ", strlen(SOURCE) + 2) == 0,
            "message names the source");
    require(f.tensors == NULL && f.storage == NULL, "zeroed on failure");
  }
  clt_st_file_free(&f);
  free(owned);
  return 0;
}
