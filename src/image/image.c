/* libcltrain-image: the decoder it installs into libcltrain, and the
 * image functions of cltrain_image.h. */
#include "cltrain_image.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "image/codecs.h"

clt_status clt_image_fail(char *err, size_t errlen, clt_status status,
                          const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return status;
}

clt_status clt_image_check_size(const char *path, const char *format,
                                unsigned w, unsigned h, char *err,
                                size_t errlen) {
  if (w < 1 || h < 1 || w > CLT_IMAGE_MAX_SIDE || h > CLT_IMAGE_MAX_SIDE)
    return clt_image_fail(err, errlen, CLT_ERR_FORMAT,
                          "%s: a %s of %ux%u pixels (1 to %d a side are read)",
                          path, format, w, h, CLT_IMAGE_MAX_SIDE);
  return CLT_OK;
}

/* The decoder installed into libcltrain: format is what the file's first
 * bytes say. */
static clt_status image_decode(const char *path, clt_image_format format,
                               clt_image_pixels *out, char *err,
                               size_t errlen) {
  memset(out, 0, sizeof *out);
  switch (format) {
  case CLT_IMAGE_FORMAT_PNG:
#ifdef CLT_HAVE_PNG
    return clt_image_decode_png(path, out, err, errlen);
#else
    return clt_image_fail(err, errlen, CLT_ERR_UNSUPPORTED,
                          "%s: a PNG file, but this libcltrain-image was built "
                          "without libpng (install libpng-dev and rebuild)",
                          path);
#endif
  case CLT_IMAGE_FORMAT_JPEG:
#ifdef CLT_HAVE_JPEG
    return clt_image_decode_jpeg(path, out, err, errlen);
#else
    return clt_image_fail(err, errlen, CLT_ERR_UNSUPPORTED,
                          "%s: a JPEG file, but this libcltrain-image was built "
                          "without libjpeg (install libjpeg62-turbo-dev and "
                          "rebuild)",
                          path);
#endif
  default:
    break;
  }
  FILE *f = fopen(path, "rb");
  if (!f)
    return clt_image_fail(err, errlen, CLT_ERR_IO, "cannot open %s: %s", path,
                          strerror(errno));
  fclose(f);
  return clt_image_fail(err, errlen, CLT_ERR_FORMAT,
                        "%s: neither a PNG nor a JPEG file (corrupt, or "
                        "another format?)",
                        path);
}

static const clt_image_decoder image_decoder = {.decode = image_decode};

CLT_API clt_status clt_image_init(void) {
  /* One atomic store of a pointer to a constant: idempotent, and safe from
   * any thread. */
  return clt_image_decoder_install(&image_decoder);
}

CLT_API bool clt_image_format_supported(const char *format) {
  if (!format) return false;
#ifdef CLT_HAVE_PNG
  if (!strcasecmp(format, "png")) return true;
#endif
#ifdef CLT_HAVE_JPEG
  if (!strcasecmp(format, "jpeg") || !strcasecmp(format, "jpg")) return true;
#endif
  return false;
}

/* The file at path decoded by this library (no decoder need be
 * installed). */
static clt_status image_decode_file(const char *path, clt_image_pixels *out,
                                    char *err, size_t errlen) {
  return image_decode(path, clt_image_format_of(path), out, err, errlen);
}

CLT_API clt_status clt_image_info(const char *path, int *channels,
                                  int *height, int *width, char *err,
                                  size_t errlen) {
  clt_image_pixels img;
  clt_status st = image_decode_file(path, &img, err, errlen);
  if (st != CLT_OK) return st;
  *channels = img.channels;
  *height = img.height;
  *width = img.width;
  free(img.pixels);
  return CLT_OK;
}

CLT_API clt_status clt_image_load(const char *path, int channels, int height,
                                  int width, bool resize, float *chw,
                                  char *err, size_t errlen) {
  if ((channels != 1 && channels != 3) || height < 1 || width < 1 || !chw)
    return clt_image_fail(err, errlen, CLT_ERR_INVALID_ARGUMENT,
                          "%s: an image of %d channels, %dx%d pixels (1 or 3 "
                          "channels, a positive size)",
                          path, channels, width, height);
  clt_image_pixels img;
  clt_status st = image_decode_file(path, &img, err, errlen);
  if (st != CLT_OK) return st;
  size_t n = (size_t)channels * (size_t)height * (size_t)width;
  uint8_t *u8 = malloc(n);
  st = u8 ? clt_image_to_chw(&img, path, channels, height, width, resize, u8,
                             err, errlen)
          : clt_image_fail(err, errlen, CLT_ERR_HOST_MEMORY,
                           "%s: %zu values", path, n);
  for (size_t i = 0; st == CLT_OK && i < n; i++) chw[i] = u8[i] / 255.0f;
  free(u8);
  free(img.pixels);
  return st;
}
