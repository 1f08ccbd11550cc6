/* Image files for `cltrain predict`: IDX, PGM and (with libpng) PNG. */
#include "cli/image.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void clt_image_set_free(clt_image_set *s) {
  if (!s) return;
  free(s->pixels);
  memset(s, 0, sizeof *s);
}

static clt_status alloc_pixels(clt_image_set *s, const char *name,
                               cli_err *err) {
  size_t n = (size_t)s->count * (size_t)s->channels * (size_t)s->height *
             (size_t)s->width;
  s->pixels = malloc((n > 0 ? n : 1) * sizeof(float));
  if (!s->pixels)
    return cli_err_set(err, CLT_ERR_HOST_MEMORY, "%s: %zu pixels", name, n);
  return CLT_OK;
}

/* ---- PGM ----------------------------------------------------------------- */

typedef struct pgm_reader {
  const uint8_t *p, *end;
  const char *name;
} pgm_reader;

static bool pgm_space(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}

/* Skips whitespace and '#' comments (to the end of the line). */
static void pgm_skip(pgm_reader *r) {
  while (r->p < r->end) {
    if (pgm_space(*r->p)) {
      r->p++;
    } else if (*r->p == '#') {
      while (r->p < r->end && *r->p != '\n' && *r->p != '\r') r->p++;
    } else {
      break;
    }
  }
}

/* A decimal number in [1, max] (or [0, max] with allow_zero). */
static clt_status pgm_number(pgm_reader *r, const char *what, long max,
                             bool allow_zero, long *out, cli_err *err) {
  pgm_skip(r);
  long v = 0;
  int digits = 0;
  while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
    v = v * 10 + (*r->p - '0');
    r->p++;
    if (++digits > 9) break;
  }
  if (digits == 0 || digits > 9 || v > max || (v == 0 && !allow_zero))
    return cli_err_set(err, CLT_ERR_FORMAT,
                       "%s: PGM %s must be a number from %d to %ld", r->name,
                       what, allow_zero ? 0 : 1, max);
  *out = v;
  return CLT_OK;
}

clt_status clt_image_parse_pgm(const uint8_t *bytes, size_t size,
                               const char *name, clt_image_set *out,
                               cli_err *err) {
  memset(out, 0, sizeof *out);
  pgm_reader r = {bytes, bytes + size, name};
  if (size < 2 || bytes[0] != 'P' || (bytes[1] != '2' && bytes[1] != '5'))
    return cli_err_set(err, CLT_ERR_FORMAT,
                       "%s: not a PGM file (P2 or P5 expected)", name);
  bool binary = bytes[1] == '5';
  r.p += 2;
  long w, h, maxval;
  CLI_TRY(pgm_number(&r, "width", 1 << 16, false, &w, err));
  CLI_TRY(pgm_number(&r, "height", 1 << 16, false, &h, err));
  CLI_TRY(pgm_number(&r, "maximum value", 65535, false, &maxval, err));
  int bpp = maxval > 255 ? 2 : 1;
  size_t n = (size_t)w * (size_t)h;
  if (binary) {
    /* Exactly one whitespace byte separates the header from the pixels. */
    if (r.p >= r.end || !pgm_space(*r.p))
      return cli_err_set(err, CLT_ERR_FORMAT,
                         "%s: PGM header does not end in whitespace", name);
    r.p++;
    size_t have = (size_t)(r.end - r.p);
    if (have < n * (size_t)bpp)
      return cli_err_set(err, CLT_ERR_FORMAT,
                         "%s: truncated PGM: %ldx%ld pixels need %zu bytes, "
                         "the file has %zu",
                         name, w, h, n * (size_t)bpp, have);
  } else {
    /* Each ASCII pixel takes a digit and a separator (the last one none):
     * a header that promises more than the file can hold is refused
     * before the pixels are allocated. */
    size_t have = (size_t)(r.end - r.p);
    if (have < 2 * n - 1)
      return cli_err_set(err, CLT_ERR_FORMAT,
                         "%s: truncated PGM: %ldx%ld pixels need at least "
                         "%zu bytes of text, the file has %zu",
                         name, w, h, 2 * n - 1, have);
  }
  out->count = 1;
  out->channels = 1;
  out->height = (int)h;
  out->width = (int)w;
  out->format = "PGM";
  CLI_TRY(alloc_pixels(out, name, err));
  for (size_t i = 0; i < n; i++) {
    long v;
    if (binary) {
      v = bpp == 2 ? (long)r.p[2 * i] << 8 | r.p[2 * i + 1] : r.p[i];
    } else if (pgm_number(&r, "pixel", 65535, true, &v, err) != CLT_OK) {
      clt_image_set_free(out);
      return cli_err_set(err, CLT_ERR_FORMAT,
                         "%s: pixel %zu of %zu is missing or not a number",
                         name, i + 1, n);
    }
    if (v > maxval) {
      clt_image_set_free(out);
      return cli_err_set(err, CLT_ERR_FORMAT,
                         "%s: pixel %zu is %ld, above the maximum value %ld",
                         name, i + 1, v, maxval);
    }
    out->pixels[i] = (float)v / (float)maxval;
  }
  return CLT_OK;
}

/* ---- IDX ----------------------------------------------------------------- */

static clt_status read_idx(const char *path, clt_image_set *out,
                           cli_err *err) {
  char msg[sizeof err->msg];
  clt_status st =
      clt_idx_load_images(path, &out->count, &out->channels, &out->height,
                          &out->width, &out->pixels, msg, sizeof msg);
  if (st != CLT_OK) return cli_err_set(err, st, "%s", msg);
  out->format = "IDX";
  return CLT_OK;
}

/* ---- PNG ----------------------------------------------------------------- */

/* Through the library's decoder (data/image_decode.h), made grey the way
 * image folders are for a grey model. */
static clt_status read_png(const char *path, clt_image_set *out,
                           cli_err *err) {
  char msg[sizeof err->msg];
  int channels = 0;
  clt_status st = clt_image_info(path, &channels, &out->height, &out->width,
                                 msg, sizeof msg);
  if (st != CLT_OK) return cli_err_set(err, st, "%s", msg);
  out->count = 1;
  out->channels = 1;
  out->format = "PNG";
  CLI_TRY(alloc_pixels(out, path, err));
  st = clt_image_load(path, 1, out->height, out->width, false, out->pixels,
                      msg, sizeof msg);
  if (st != CLT_OK) {
    cli_err_set(err, st, "%s", msg);
    clt_image_set_free(out);
  }
  return st;
}

/* ---- dispatch ------------------------------------------------------------ */

clt_status clt_image_read(const char *path, clt_image_set *out, cli_err *err) {
  memset(out, 0, sizeof *out);
  clt_image_format format = clt_image_format_of(path);
  if (format == CLT_IMAGE_FORMAT_PNG) {
    if (!clt_image_format_supported("png"))
      return cli_err_set(err, CLT_ERR_UNSUPPORTED,
                         "%s: a PNG file, but this cltrain was built without "
                         "libpng (install libpng-dev and rebuild; PGM and IDX "
                         "work without it)",
                         path);
    return read_png(path, out, err);
  }
  if (format == CLT_IMAGE_FORMAT_PGM) {
    uint8_t *bytes = NULL;
    size_t size = 0;
    CLI_TRY(cli_read_file(path, CLT_IMAGE_MAX_FILE_BYTES, &bytes, &size, err));
    clt_status st = clt_image_parse_pgm(bytes, size, path, out, err);
    free(bytes);
    return st;
  }
  /* IDX: a gzip stream, or the two zero bytes of an IDX header. */
  uint8_t magic[4] = {0};
  FILE *f = fopen(path, "rb");
  if (!f)
    return cli_err_set(err, CLT_ERR_IO, "cannot open %s: %s", path,
                       strerror(errno));
  size_t got = fread(magic, 1, sizeof magic, f);
  fclose(f);
  if (format == CLT_IMAGE_FORMAT_NONE && got >= 4 &&
      ((magic[0] == 0x1f && magic[1] == 0x8b) ||
       (magic[0] == 0 && magic[1] == 0)))
    return read_idx(path, out, err);
  return cli_err_set(err, CLT_ERR_FORMAT,
                     "%s: not an IDX, PGM (P2/P5) or PNG file", path);
}
