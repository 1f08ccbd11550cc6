/* cltrain-image: PNG and JPEG decoding for cltrain, in a library of its
 * own (libcltrain-image, pkg-config cltrain-image), as torchvision sits
 * beside torch: libcltrain links no image codec, this library links libpng
 * and libjpeg-turbo (each where the build found it).
 *
 * A program that trains on image folders links both and calls
 * clt_image_init() once before it loads one:
 *
 *   cc app.c $(pkg-config --cflags --libs cltrain-image)
 *
 *   clt_image_init();
 *   clt_dataset_load_folder(ctx, "photos/train", &opts, &ds);
 *
 * Every function returns a clt_status or a plain answer; nothing prints,
 * nothing exits. */
#ifndef CLTRAIN_IMAGE_H
#define CLTRAIN_IMAGE_H

#include "cltrain.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Installs this library's PNG and JPEG decoder into libcltrain
 * (clt_image_decoder_install), so that image folders decode. Call it once
 * at start; calling it again, from any thread, changes nothing. A codec
 * this build lacks gives, for such a file, CLT_ERR_UNSUPPORTED saying so.
 * Returns CLT_OK. */
CLT_API clt_status clt_image_init(void);

/* Whether this build decodes "png" (libpng) or "jpeg" (libjpeg-turbo; "jpg"
 * too), case-insensitive. */
CLT_API bool clt_image_format_supported(const char *format);

/* The channels (1 grey, 3 colour; alpha is dropped) and size of a PNG or
 * JPEG file, recognised by its contents (clt_image_format_of). Errors name
 * the file into err (errlen bytes). Needs no clt_image_init(). */
CLT_API clt_status clt_image_info(const char *path, int *channels,
                                  int *height, int *width, char *err,
                                  size_t errlen);

/* A PNG or JPEG file as training on image folders makes it: channels x
 * height x width floats in [0, 1] (CHW) into chw; colour made grey by
 * ITU-R 601 luma, grey copied to colour, alpha composited onto black;
 * resized (bilinear) when resize is set, else a size that differs is
 * CLT_ERR_SHAPE naming the file and both sizes (clt_image_to_chw). Needs
 * no clt_image_init(). */
CLT_API clt_status clt_image_load(const char *path, int channels, int height,
                                  int width, bool resize, float *chw,
                                  char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
