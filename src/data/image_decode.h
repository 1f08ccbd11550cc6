/* Decoding image files for training: PNG (libpng) and JPEG (libjpeg-turbo),
 * each optional at build time, recognised by their first bytes. Pixels
 * stay 8-bit, as the dataset keeps them. */
#ifndef CLT_DATA_IMAGE_DECODE_H
#define CLT_DATA_IMAGE_DECODE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

typedef struct clt_decoded_image {
  int width, height;
  int channels;    /* 1 (grey) or 3 (RGB); alpha is composited onto black */
  uint8_t *pixels; /* height * width * channels, interleaved (HWC) */
} clt_decoded_image;

/* Decodes the PNG or JPEG file at path. On success the caller frees
 * out->pixels with free(). Errors name the file: CLT_ERR_IO (cannot
 * read), CLT_ERR_FORMAT (corrupt, truncated, or neither PNG nor JPEG),
 * CLT_ERR_UNSUPPORTED (a format this build lacks, a CMYK JPEG). */
clt_status clt_image_decode_file(const char *path, clt_decoded_image *out,
                                 clt_err *err);

/* Writes img as channels x height x width (CHW) into dst: colour to grey
 * by ITU-R 601 luma (0.299 R + 0.587 G + 0.114 B, PIL's convert("L")),
 * grey to colour by copying, then, when the size differs and resize is
 * set, bilinear resampling with pixel centres aligned (PIL's and
 * PyTorch's align_corners=False). A size that differs without resize is
 * CLT_ERR_SHAPE naming path and both sizes. */
clt_status clt_image_to_chw(const clt_decoded_image *img, const char *path,
                            int channels, int height, int width, bool resize,
                            uint8_t *dst, clt_err *err);

/* Whether this build decodes PNG / JPEG. */
bool clt_image_decode_png_supported(void);
bool clt_image_decode_jpeg_supported(void);

#endif
