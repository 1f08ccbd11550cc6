/* Files a program (and the command line) may read and write through the
 * public header: decoded pixels made what a model takes, the images of an
 * IDX file, and an atomic write. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic_file.h"
#include "data/idx.h"
#include "data/image_decode.h"

static clt_status report(const clt_err *e, char *err, size_t errlen) {
  if (err && errlen) snprintf(err, errlen, "%s", e->msg);
  return e->status;
}

CLT_API clt_status clt_image_to_chw(const clt_image_pixels *img,
                                    const char *name, int channels, int height,
                                    int width, bool resize, uint8_t *chw,
                                    char *err, size_t errlen) {
  clt_err e = {0};
  if (!img || !img->pixels || img->width < 1 || img->height < 1 ||
      (img->channels != 1 && img->channels != 3) || height < 1 ||
      width < 1 || !chw) {
    clt_err_set(&e, CLT_ERR_INVALID_ARGUMENT,
                "%s: clt_image_to_chw needs pixels of 1 or 3 channels and a "
                "positive size",
                name ? name : "image");
    return report(&e, err, errlen);
  }
  if (clt_image_pixels_to_chw(img, name ? name : "image", channels, height,
                              width, resize, chw, &e) != CLT_OK)
    return report(&e, err, errlen);
  return CLT_OK;
}

CLT_API clt_status clt_idx_load_images(const char *path, int64_t *count,
                                       int *channels, int *height, int *width,
                                       float **pixels, char *err,
                                       size_t errlen) {
  *pixels = NULL;
  clt_err e = {0};
  clt_idx idx;
  if (clt_idx_read(path, &idx, &e) != CLT_OK) return report(&e, err, errlen);
  int64_t n = 1, c = 1, h = 0, w = 0;
  clt_status st = CLT_OK;
  if (idx.ndim == 2) {
    h = idx.dims[0];
    w = idx.dims[1];
  } else if (idx.ndim == 3) {
    n = idx.dims[0];
    h = idx.dims[1];
    w = idx.dims[2];
  } else if (idx.ndim == 4) {
    n = idx.dims[0];
    c = idx.dims[1];
    h = idx.dims[2];
    w = idx.dims[3];
  } else {
    st = clt_err_set(&e, CLT_ERR_FORMAT,
                     "%s: an IDX file of images has 2 (H, W), 3 (N, H, W) or "
                     "4 (N, C, H, W) dimensions, this one %d (labels?)",
                     path, idx.ndim);
  }
  if (st == CLT_OK && idx.type != CLT_IDX_U8)
    st = clt_err_set(&e, CLT_ERR_UNSUPPORTED,
                     "%s: IDX images must be u8, this file holds %s", path,
                     clt_idx_type_name(idx.type));
  if (st == CLT_OK && (n < 1 || c < 1 || h < 1 || w < 1 || c > 4096 ||
                       h > 65536 || w > 65536))
    st = clt_err_set(&e, CLT_ERR_FORMAT, "%s: IDX holds no image", path);
  float *px = NULL;
  if (st == CLT_OK && !(px = malloc(idx.nbytes * sizeof(float))))
    st = clt_err_set(&e, CLT_ERR_HOST_MEMORY, "%s: %zu pixels", path,
                     idx.nbytes);
  for (size_t i = 0; st == CLT_OK && i < idx.nbytes; i++)
    px[i] = (float)((const uint8_t *)idx.data)[i] / 255.0f;
  clt_idx_free(&idx);
  if (st != CLT_OK) {
    free(px);
    return report(&e, err, errlen);
  }
  *count = n;
  *channels = (int)c;
  *height = (int)h;
  *width = (int)w;
  *pixels = px;
  return CLT_OK;
}

CLT_API clt_status clt_file_write_atomic(const char *path, const void *data,
                                         size_t len, char *err,
                                         size_t errlen) {
  clt_err e = {0};
  if (clt_atomic_write_file(path, data, len, 0644, &e) != CLT_OK)
    return report(&e, err, errlen);
  return CLT_OK;
}
