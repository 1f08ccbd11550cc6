/* The codecs of libcltrain-image: each decodes one format to 8-bit grey or
 * RGB (alpha composited onto black), with errors written, naming the file,
 * into err (errlen bytes) as the public API writes them. Built only where
 * the build found the codec's library (CLT_HAVE_PNG, CLT_HAVE_JPEG). */
#ifndef CLT_IMAGE_CODECS_H
#define CLT_IMAGE_CODECS_H

#include <stddef.h>

#include "cltrain.h"

/* Sides above this are refused before anything is allocated. */
#define CLT_IMAGE_MAX_SIDE 16384

/* Writes the printf-style message into err (errlen bytes; err may be NULL)
 * and returns status. */
clt_status clt_image_fail(char *err, size_t errlen, clt_status status,
                          const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* CLT_ERR_FORMAT naming path unless w and h are in 1..CLT_IMAGE_MAX_SIDE. */
clt_status clt_image_check_size(const char *path, const char *format,
                                unsigned w, unsigned h, char *err,
                                size_t errlen);

/* On success the caller frees out->pixels with free(). */
clt_status clt_image_decode_png(const char *path, clt_image_pixels *out,
                                char *err, size_t errlen);
clt_status clt_image_decode_jpeg(const char *path, clt_image_pixels *out,
                                 char *err, size_t errlen);

#endif
