/* JPEG through libjpeg(-turbo), its errors caught with a longjmp. */
#include <errno.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* After stdio.h: jpeglib.h uses FILE and size_t without including them. */
#include <jpeglib.h>

#include "image/codecs.h"

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

/* The part of decoding after the header, where a longjmp may land. The
 * volatile pointer survives the jump so that it can be freed. */
static clt_status decode_jpeg_body(struct jpeg_decompress_struct *cinfo,
                                   jpeg_failure *fail, const char *path,
                                   uint8_t *volatile *px, char *err,
                                   size_t errlen) {
  if (setjmp(fail->jump))
    return clt_image_fail(err, errlen, CLT_ERR_FORMAT,
                          "%s: not a readable JPEG (truncated or corrupt?): "
                          "%s",
                          path, fail->message);
  jpeg_read_header(cinfo, TRUE);
  if (cinfo->jpeg_color_space == JCS_CMYK ||
      cinfo->jpeg_color_space == JCS_YCCK)
    return clt_image_fail(err, errlen, CLT_ERR_UNSUPPORTED,
                          "%s: a CMYK JPEG; save it as RGB or greyscale",
                          path);
  cinfo->out_color_space =
      cinfo->jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(cinfo);
  clt_status st =
      clt_image_check_size(path, "JPEG", cinfo->output_width,
                           cinfo->output_height, err, errlen);
  if (st != CLT_OK) return st;
  size_t row = (size_t)cinfo->output_width * (size_t)cinfo->output_components;
  *px = malloc(row * cinfo->output_height);
  if (!*px) return clt_image_fail(err, errlen, CLT_ERR_HOST_MEMORY, "%s", path);
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW line = *px + row * cinfo->output_scanline;
    jpeg_read_scanlines(cinfo, &line, 1);
  }
  jpeg_finish_decompress(cinfo);
  /* A truncated file decodes as grey rows after a warning: refuse it. */
  if (fail->mgr.num_warnings > 0)
    return clt_image_fail(err, errlen, CLT_ERR_FORMAT,
                          "%s: a damaged JPEG (truncated or corrupt?)", path);
  return CLT_OK;
}

clt_status clt_image_decode_jpeg(const char *path, clt_image_pixels *out,
                                 char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return clt_image_fail(err, errlen, CLT_ERR_IO, "cannot open %s: %s", path,
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
  clt_status st = decode_jpeg_body(&cinfo, &fail, path, &px, err, errlen);
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
