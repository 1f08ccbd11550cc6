/* PNG through libpng's simplified API. */
#include <png.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "image/codecs.h"

clt_status clt_image_decode_png(const char *path, clt_image_pixels *out,
                                char *err, size_t errlen) {
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, path))
    return clt_image_fail(err, errlen, CLT_ERR_FORMAT,
                          "%s: not a readable PNG (truncated or corrupt?): %s",
                          path, img.message);
  bool color = (img.format & PNG_FORMAT_FLAG_COLOR) != 0;
  clt_status st =
      clt_image_check_size(path, "PNG", img.width, img.height, err, errlen);
  if (st != CLT_OK) {
    png_image_free(&img);
    return st;
  }
  img.format = color ? PNG_FORMAT_RGBA : PNG_FORMAT_GA;
  int comps = color ? 4 : 2;
  size_t n = (size_t)img.width * img.height;
  uint8_t *buf = malloc(n * (size_t)comps);
  uint8_t *px = malloc(n * (size_t)(comps - 1));
  if (!buf || !px) {
    free(buf);
    free(px);
    png_image_free(&img);
    return clt_image_fail(err, errlen, CLT_ERR_HOST_MEMORY, "%s: %zu pixels",
                          path, n);
  }
  if (!png_image_finish_read(&img, NULL, buf, 0, NULL)) {
    st = clt_image_fail(err, errlen, CLT_ERR_FORMAT,
                        "%s: not a readable PNG (truncated or corrupt?): %s",
                        path, img.message);
    free(buf);
    free(px);
    png_image_free(&img);
    return st;
  }
  /* Composited onto black, as cltrain predict does. */
  for (size_t i = 0; i < n; i++) {
    const uint8_t *s = buf + i * (size_t)comps;
    unsigned alpha = s[comps - 1];
    for (int c = 0; c < comps - 1; c++)
      px[i * (size_t)(comps - 1) + (size_t)c] =
          (uint8_t)((s[c] * alpha + 127u) / 255u);
  }
  free(buf);
  out->width = (int)img.width;
  out->height = (int)img.height;
  out->channels = comps - 1;
  out->pixels = px;
  png_image_free(&img);
  return CLT_OK;
}
