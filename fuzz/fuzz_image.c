/* libFuzzer target for the image readers of `cltrain predict`: PGM parsed
 * from memory, and the whole dispatch (IDX, PGM, PNG through libpng where
 * built) through a file. An accepted image set has positive sizes and
 * pixels in [0, 1]; a rejected one is empty with a message naming the
 * source. Build: see fuzz/README.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/image.h"

static void require(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "broken promise: %s\n", what);
    abort();
  }
}

static void check(clt_status st, const clt_image_set *s, const cli_err *err,
                  const char *source) {
  if (st == CLT_OK) {
    require(s->count >= 1 && s->channels >= 1 && s->height >= 1 &&
                s->width >= 1,
            "positive sizes");
    size_t n = (size_t)s->count * (size_t)s->channels * (size_t)s->height *
               (size_t)s->width;
    for (size_t i = 0; i < n; i++)
      require(s->pixels[i] >= 0.0f && s->pixels[i] <= 1.0f, "pixel range");
  } else {
    require(s->pixels == NULL, "empty on failure");
    require(strstr(err->msg, source) != NULL, "message names the source");
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  clt_image_set s;
  cli_err err;
  memset(&err, 0, sizeof err);
  check(clt_image_parse_pgm(data, size, "fuzz.pgm", &s, &err), &s, &err,
        "fuzz.pgm");
  clt_image_set_free(&s);

  char path[64];
  snprintf(path, sizeof path, "/tmp/fuzz_image_%ld", (long)getpid());
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  fclose(f);
  check(clt_image_read(path, &s, &err), &s, &err, path);
  clt_image_set_free(&s);
  unlink(path);
  return 0;
}
