/* PNG and JPEG decoding to 8-bit grey or RGB, channel conversion and
 * bilinear resizing. */
#include "data/image_decode.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CLT_HAVE_PNG
#include <png.h>
#endif
#ifdef CLT_HAVE_JPEG
#include <jpeglib.h>
#endif

/* Sides above this are refused before anything is allocated. */
#define DECODE_MAX_SIDE 16384

bool clt_image_decode_png_supported(void) {
#ifdef CLT_HAVE_PNG
  return true;
#else
  return false;
#endif
}

bool clt_image_decode_jpeg_supported(void) {
#ifdef CLT_HAVE_JPEG
  return true;
#else
  return false;
#endif
}

#if defined(CLT_HAVE_PNG) || defined(CLT_HAVE_JPEG)
static clt_status decode_size_check(const char *path, const char *format,
                                    unsigned w, unsigned h, clt_err *err) {
  if (w < 1 || h < 1 || w > DECODE_MAX_SIDE || h > DECODE_MAX_SIDE)
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s: a %s of %ux%u pixels (1 to %d a side are read)",
                       path, format, w, h, DECODE_MAX_SIDE);
  return CLT_OK;
}
#endif

/* ---- PNG ----------------------------------------------------------------- */

#ifdef CLT_HAVE_PNG
static clt_status decode_png(const char *path, clt_decoded_image *out,
                             clt_err *err) {
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, path))
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s: not a readable PNG (truncated or corrupt?): %s",
                       path, img.message);
  bool color = (img.format & PNG_FORMAT_FLAG_COLOR) != 0;
  clt_status st = decode_size_check(path, "PNG", img.width, img.height, err);
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
    return clt_err_set(err, CLT_ERR_HOST_MEMORY, "%s: %zu pixels", path, n);
  }
  if (!png_image_finish_read(&img, NULL, buf, 0, NULL)) {
    st = clt_err_set(err, CLT_ERR_FORMAT,
                     "%s: not a readable PNG (truncated or corrupt?): %s", path,
                     img.message);
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
#endif

/* ---- JPEG ---------------------------------------------------------------- */

#ifdef CLT_HAVE_JPEG
typedef struct jpeg_failure {
  struct jpeg_error_mgr mgr;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
} jpeg_failure;

/* libjpeg's default error handler exits the process: jump back instead. */
static void jpeg_on_error(j_common_ptr cinfo) {
  jpeg_failure *f = (jpeg_failure *)cinfo->err;
  f->mgr.format_message(cinfo, f->message);
  longjmp(f->jump, 1);
}

static void jpeg_on_message(j_common_ptr cinfo) { (void)cinfo; }

/* The part of decode_jpeg after the header, where a longjmp may land. The
 * volatile pointer survives the jump so that it can be freed. */
static clt_status decode_jpeg_body(struct jpeg_decompress_struct *cinfo,
                                   jpeg_failure *fail, const char *path,
                                   uint8_t *volatile *px, clt_err *err) {
  if (setjmp(fail->jump))
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s: not a readable JPEG (truncated or corrupt?): %s",
                       path, fail->message);
  jpeg_read_header(cinfo, TRUE);
  if (cinfo->jpeg_color_space == JCS_CMYK ||
      cinfo->jpeg_color_space == JCS_YCCK)
    return clt_err_set(err, CLT_ERR_UNSUPPORTED,
                       "%s: a CMYK JPEG; save it as RGB or greyscale", path);
  cinfo->out_color_space =
      cinfo->jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(cinfo);
  CLT_TRY(decode_size_check(path, "JPEG", cinfo->output_width,
                            cinfo->output_height, err));
  size_t row = (size_t)cinfo->output_width * (size_t)cinfo->output_components;
  *px = malloc(row * cinfo->output_height);
  if (!*px) return clt_err_set(err, CLT_ERR_HOST_MEMORY, "%s", path);
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW line = *px + row * cinfo->output_scanline;
    jpeg_read_scanlines(cinfo, &line, 1);
  }
  jpeg_finish_decompress(cinfo);
  /* A truncated file decodes as grey rows after a warning: refuse it. */
  if (fail->mgr.num_warnings > 0)
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s: a damaged JPEG (truncated or corrupt?)", path);
  return CLT_OK;
}

static clt_status decode_jpeg(const char *path, clt_decoded_image *out,
                              clt_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return clt_err_set(err, CLT_ERR_IO, "cannot open %s: %s", path,
                       strerror(errno));
  struct jpeg_decompress_struct cinfo;
  jpeg_failure fail;
  memset(&fail, 0, sizeof fail);
  cinfo.err = jpeg_std_error(&fail.mgr);
  fail.mgr.error_exit = jpeg_on_error;
  fail.mgr.output_message = jpeg_on_message;
  jpeg_create_decompress(&cinfo);
  jpeg_stdio_src(&cinfo, f);
  uint8_t *volatile px = NULL;
  clt_status st = decode_jpeg_body(&cinfo, &fail, path, &px, err);
  if (st == CLT_OK) {
    out->width = (int)cinfo.output_width;
    out->height = (int)cinfo.output_height;
    out->channels = cinfo.output_components;
    out->pixels = px;
  } else {
    free(px);
  }
  jpeg_destroy_decompress(&cinfo);
  fclose(f);
  return st;
}
#endif

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

clt_status clt_image_decode_file(const char *path, clt_decoded_image *out,
                                 clt_err *err) {
  memset(out, 0, sizeof *out);
  clt_image_format format = clt_image_format_of(path);
  if (format == CLT_IMAGE_FORMAT_PNG) {
#ifdef CLT_HAVE_PNG
    return decode_png(path, out, err);
#else
    return clt_err_set(err, CLT_ERR_UNSUPPORTED,
                       "%s: a PNG file, but this cltrain was built without "
                       "libpng (install libpng-dev and rebuild)",
                       path);
#endif
  }
  if (format == CLT_IMAGE_FORMAT_JPEG) {
#ifdef CLT_HAVE_JPEG
    return decode_jpeg(path, out, err);
#else
    return clt_err_set(err, CLT_ERR_UNSUPPORTED,
                       "%s: a JPEG file, but this cltrain was built without "
                       "libjpeg (install libjpeg62-turbo-dev and rebuild)",
                       path);
#endif
  }
  /* Not one of ours: say whether it could be read at all. */
  FILE *f = fopen(path, "rb");
  if (!f)
    return clt_err_set(err, CLT_ERR_IO, "cannot open %s: %s", path,
                       strerror(errno));
  fclose(f);
  return clt_err_set(err, CLT_ERR_FORMAT,
                     "%s: neither a PNG nor a JPEG file (corrupt, or another "
                     "format?)",
                     path);
}

/* ---- conversion ---------------------------------------------------------- */

/* Channel c of pixel i of img, as `channels` channels. */
static inline float convert_at(const clt_decoded_image *img, size_t i, int c,
                               int channels) {
  const uint8_t *p = img->pixels + i * (size_t)img->channels;
  if (img->channels == channels) return p[c];
  if (channels == 1)
    return (float)((299u * p[0] + 587u * p[1] + 114u * p[2] + 500u) / 1000u);
  return p[0];
}

/* Bilinear sample of channel c at output (y, x). */
static uint8_t bilinear(const clt_decoded_image *img, int c, int channels,
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

clt_status clt_image_to_chw(const clt_decoded_image *img, const char *path,
                            int channels, int height, int width, bool resize,
                            uint8_t *dst, clt_err *err) {
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
