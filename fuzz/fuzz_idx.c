/* libFuzzer target for the IDX reader (plain and gzip).
 *
 * The reader takes a path (it streams gzip through zlib), so each input is
 * written to one temporary file per process and read back. Beyond "no
 * crash, no leak, no undefined behaviour": an accepted array has a known
 * type, 1..CLT_IDX_MAX_DIMS dimensions and exactly count * element size
 * bytes, all readable; a rejected one leaves *out empty and a message that
 * names the file. Build: see fuzz/README.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "data/idx.h"

static void require(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "broken promise: %s\n", what);
    abort();
  }
}

static char g_path[64];

static const char *input_file(const uint8_t *data, size_t size) {
  if (!g_path[0]) {
    snprintf(g_path, sizeof g_path, "/tmp/fuzz_idx_%ld.idx", (long)getpid());
  }
  FILE *f = fopen(g_path, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  fclose(f);
  return g_path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = input_file(data, size);
  clt_idx idx;
  clt_err err;
  memset(&err, 0, sizeof err);
  if (clt_idx_read(path, &idx, &err) == CLT_OK) {
    size_t esize = clt_idx_type_size(idx.type);
    require(esize > 0, "known type");
    require(idx.ndim >= 1 && idx.ndim <= CLT_IDX_MAX_DIMS, "dimension count");
    require((uint64_t)clt_idx_count(&idx) * esize == idx.nbytes, "byte count");
    volatile uint8_t sum = 0; /* touch every byte, for ASan */
    const uint8_t *bytes = idx.data;
    for (size_t i = 0; i < idx.nbytes; i++) sum ^= bytes[i];
    (void)sum;
  } else {
    require(idx.data == NULL && idx.nbytes == 0, "empty on failure");
    require(strstr(err.msg, path) != NULL, "message names the file");
  }
  clt_idx_free(&idx);
  unlink(path);
  return 0;
}
