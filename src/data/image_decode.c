/* Image files by their first bytes, decoding through the installed
 * decoder, channel conversion and bilinear resizing. */
#include "data/image_decode.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The decoder of the process (clt_image_decoder_install). The library's
 * one global: which code decodes PNG and JPEG, not the state of any
 * context, so that two contexts still train side by side. */
static _Atomic(const clt_image_decoder *) installed_decoder;

/* ---- dispatch ------------------------------------------------------------ */

CLT_API clt_image_format clt_image_format_of(const char *path) {
  uint8_t magic[8] = {0};
  FILE *f = path ? fopen(path, "rb") : NULL;
  if (!f) return CLT_IMAGE_FORMAT_NONE;
  size_t got = fread(magic, 1, sizeof magic, f);
  fclose(f);
  static const uint8_t png_magic[8] = {0x89, 'P',  'N',  'G',
                                       '\r', '\n', 0x1a, '\n'};
  if (got == 8 && memcmp(magic, png_magic, 8) == 0) return CLT_IMAGE_FORMAT_PNG;
  if (got >= 3 && magic[0] == 0xff && magic[1] == 0xd8 && magic[2] == 0xff)
    return CLT_IMAGE_FORMAT_JPEG;
  if (got >= 2 && magic[0] == 'P' && (magic[1] == '2' || magic[1] == '5'))
    return CLT_IMAGE_FORMAT_PGM;
  return CLT_IMAGE_FORMAT_NONE;
}

CLT_API const char *clt_image_format_name(clt_image_format format) {
  switch (format) {
  case CLT_IMAGE_FORMAT_PNG: return "PNG";
  case CLT_IMAGE_FORMAT_JPEG: return "JPEG";
  case CLT_IMAGE_FORMAT_PGM: return "PGM";
  case CLT_IMAGE_FORMAT_NONE: break;
  }
  return NULL;
}

CLT_API clt_status clt_image_decoder_install(const clt_image_decoder *decoder) {
  if (decoder && !decoder->decode) return CLT_ERR_INVALID_ARGUMENT;
  atomic_store_explicit(&installed_decoder, decoder, memory_order_release);
  return CLT_OK;
}

clt_status clt_image_decode_file(const char *path, clt_image_pixels *out,
                                 clt_err *err) {
  memset(out, 0, sizeof *out);
  clt_image_format format = clt_image_format_of(path);
  if (format != CLT_IMAGE_FORMAT_PNG && format != CLT_IMAGE_FORMAT_JPEG) {
    /* Not one of ours: say whether it could be read at all. */
    FILE *f = fopen(path, "rb");
    if (!f)
      return clt_err_set(err, CLT_ERR_IO, "cannot open %s: %s", path,
                         strerror(errno));
    fclose(f);
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s: neither a PNG nor a JPEG file (corrupt, or "
                       "another format?)",
                       path);
  }
  const clt_image_decoder *decoder =
      atomic_load_explicit(&installed_decoder, memory_order_acquire);
  if (!decoder)
    return clt_err_set(err, CLT_ERR_UNSUPPORTED,
                       "%s: decoding %s needs libcltrain-image: link it "
                       "(pkg-config cltrain-image) and call clt_image_init() "
                       "first",
                       path, clt_image_format_name(format));
  clt_err local;
  clt_err *e = err ? err : &local;
  e->msg[0] = '\0';
  clt_status st = decoder->decode(path, format, out, e->msg, sizeof e->msg);
  if (st == CLT_OK && (!out->pixels || out->width < 1 || out->height < 1 ||
                       (out->channels != 1 && out->channels != 3))) {
    free(out->pixels);
    memset(out, 0, sizeof *out);
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s: the installed decoder gave no 1- or 3-channel "
                       "image",
                       path);
  }
  if (st != CLT_OK) {
    free(out->pixels);
    memset(out, 0, sizeof *out);
    e->status = st;
    if (!e->msg[0])
      clt_err_set(err, st, "%s: the %s decoder failed", path,
                  clt_image_format_name(format));
  }
  return st;
}

/* ---- conversion ---------------------------------------------------------- */

/* Channel c of pixel i of img, as `channels` channels. */
static inline float convert_at(const clt_image_pixels *img, size_t i, int c,
                               int channels) {
  const uint8_t *p = img->pixels + i * (size_t)img->channels;
  if (img->channels == channels) return p[c];
  if (channels == 1)
    return (float)((299u * p[0] + 587u * p[1] + 114u * p[2] + 500u) / 1000u);
  return p[0];
}

/* Bilinear sample of channel c at output (y, x). */
static uint8_t bilinear(const clt_image_pixels *img, int c, int channels,
                        double sy, double sx) {
  int h = img->height, w = img->width;
  if (sy < 0) sy = 0;
  if (sx < 0) sx = 0;
  int y0 = (int)sy, x0 = (int)sx;
  if (y0 > h - 1) y0 = h - 1;
  if (x0 > w - 1) x0 = w - 1;
  int y1 = y0 + 1 < h ? y0 + 1 : y0, x1 = x0 + 1 < w ? x0 + 1 : x0;
  double fy = sy - y0, fx = sx - x0;
  if (fy > 1) fy = 1;
  if (fx > 1) fx = 1;
  double top = (1 - fx) * convert_at(img, (size_t)y0 * w + x0, c, channels) +
               fx * convert_at(img, (size_t)y0 * w + x1, c, channels);
  double bot = (1 - fx) * convert_at(img, (size_t)y1 * w + x0, c, channels) +
               fx * convert_at(img, (size_t)y1 * w + x1, c, channels);
  double v = (1 - fy) * top + fy * bot;
  return (uint8_t)lround(v < 0 ? 0 : v > 255 ? 255 : v);
}

clt_status clt_image_pixels_to_chw(const clt_image_pixels *img,
                                   const char *path, int channels, int height,
                                   int width, bool resize, uint8_t *dst,
                                   clt_err *err) {
  if (channels != 1 && channels != 3)
    return clt_err_set(err, CLT_ERR_SHAPE,
                       "%s: the model takes %d channels; images give 1 "
                       "(grey) or 3 (RGB)",
                       path, channels);
  bool same = img->height == height && img->width == width;
  if (!same && !resize)
    return clt_err_set(err, CLT_ERR_SHAPE,
                       "%s: the image is %dx%d pixels (width x height), the "
                       "model's input is %dx%d; pass --resize to resize "
                       "images",
                       path, img->width, img->height, width, height);
  double ky = (double)img->height / height, kx = (double)img->width / width;
  for (int c = 0; c < channels; c++) {
    uint8_t *plane = dst + (size_t)c * height * width;
    for (int y = 0; y < height; y++)
      for (int x = 0; x < width; x++) {
        size_t o = (size_t)y * width + x;
        plane[o] = same ? (uint8_t)convert_at(img, o, c, channels)
                        : bilinear(img, c, channels, (y + 0.5) * ky - 0.5,
                                   (x + 0.5) * kx - 0.5);
      }
  }
  return CLT_OK;
}
