/* Images for `cltrain predict`: IDX files (every image in them), PGM (P2,
 * P5) and, when built with libpng, PNG. The format comes from the file's
 * first bytes, not its name. Pixels become floats in [0, 1] as in training
 * (value / maximum: / 255 for 8-bit files). PNGs are decoded by the
 * library (clt_image_load) and made grey as image folders are for a grey
 * model: composited onto black where they have alpha, then
 * ITU-R 601 luma (0.299 R + 0.587 G + 0.114 B, as PIL's convert("L")).
 * Nothing is resized. (The command's own: not part of the library.) */
#ifndef CLT_CLI_IMAGE_H
#define CLT_CLI_IMAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "cli/cli.h"

/* Largest image file read, in bytes (an IDX file may be larger; its own
 * reader bounds it). */
#define CLT_IMAGE_MAX_FILE_BYTES ((int64_t)256 << 20)

typedef struct clt_image_set {
  int64_t count; /* images */
  int channels, height, width;
  float *pixels; /* count * channels * height * width, NCHW, in [0, 1] */
  const char *format; /* "IDX", "PGM", "PNG" */
} clt_image_set;

/* Reads the images of the file at path. On success the caller owns *out
 * and frees it with clt_image_set_free; on failure *out is empty and err
 * names the file and what is wrong: CLT_ERR_IO (cannot read),
 * CLT_ERR_FORMAT (malformed, or not IDX, PGM or PNG), CLT_ERR_UNSUPPORTED
 * (a PNG when built without libpng; an IDX of a type other than u8). */
clt_status clt_image_read(const char *path, clt_image_set *out, cli_err *err);

/* As clt_image_read for PGM bytes in memory; name begins messages. */
clt_status clt_image_parse_pgm(const uint8_t *bytes, size_t size,
                               const char *name, clt_image_set *out,
                               cli_err *err);

void clt_image_set_free(clt_image_set *s);

#endif
