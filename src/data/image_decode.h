/* Image files for training, without a codec: the library recognises PNG
 * and JPEG by their first bytes and decodes them through the decoder
 * installed with clt_image_decoder_install (libcltrain-image's, by
 * clt_image_init), then converts the 8-bit pixels to what the model takes.
 * Pixels stay 8-bit, as the dataset keeps them. */
#ifndef CLT_DATA_IMAGE_DECODE_H
#define CLT_DATA_IMAGE_DECODE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

/* Decodes the PNG or JPEG file at path through the installed decoder. On
 * success the caller frees out->pixels with free(). Errors name the file:
 * CLT_ERR_IO (cannot read), CLT_ERR_FORMAT (corrupt, truncated, or neither
 * PNG nor JPEG), CLT_ERR_UNSUPPORTED (no decoder installed: the message
 * says to link libcltrain-image and call clt_image_init(); a format the
 * decoder lacks, a CMYK JPEG). */
clt_status clt_image_decode_file(const char *path, clt_image_pixels *out,
                                 clt_err *err);

/* clt_image_to_chw (cltrain.h) with its error in a clt_err. */
clt_status clt_image_pixels_to_chw(const clt_image_pixels *img,
                                   const char *path, int channels, int height,
                                   int width, bool resize, uint8_t *dst,
                                   clt_err *err);

#endif
