/* Datasets from IDX files: shape checks, label conversion, file lookup. */
#include "data/dataset.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "data/idx.h"

#define DATASET_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#define DATASET_FASHION_MNIST_HINT \
  "; install it with `apt-get install dataset-fashion-mnist`"

void clt_dataset_free(clt_dataset *ds) {
  if (!ds) return;
  free(ds->pixels);
  free(ds->fpixels);
  free(ds->labels);
  free(ds->targets);
  if (ds->class_names)
    for (int i = 0; i < ds->num_classes; i++) free(ds->class_names[i]);
  free(ds->class_names);
  if (ds->target_names)
    for (int64_t i = 0; i < ds->target_size; i++) free(ds->target_names[i]);
  free(ds->target_names);
  memset(ds, 0, sizeof *ds);
}

static clt_status dataset_check_images(const char *path, const clt_idx *img,
                                       clt_err *err) {
  if (img->type != CLT_IDX_U8) {
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s: images must be of type u8 (0x08), the file holds "
                       "%s",
                       path, clt_idx_type_name(img->type));
  }
  if (img->ndim != 3 && img->ndim != 4) {
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s: images must have 3 dimensions (N, H, W) or 4 "
                       "(N, C, H, W), the file has %d",
                       path, img->ndim);
  }
  if (img->dims[0] == 0) {
    return clt_err_set(err, CLT_ERR_FORMAT, "%s holds no images", path);
  }
  for (int i = 1; i < img->ndim; i++) {
    if (img->dims[i] == 0 || img->dims[i] > INT_MAX) {
      return clt_err_set(err, CLT_ERR_FORMAT,
                         "%s: image dimension %d is %lld, not a usable size",
                         path, i, (long long)img->dims[i]);
    }
  }
  return CLT_OK;
}

static bool dataset_label_type_ok(uint8_t type) {
  return type == CLT_IDX_U8 || type == CLT_IDX_I8 || type == CLT_IDX_I16 ||
         type == CLT_IDX_I32;
}

static clt_status dataset_check_labels(const char *images_path,
                                       const clt_idx *img,
                                       const char *labels_path,
                                       const clt_idx *lab, clt_err *err) {
  if (!dataset_label_type_ok(lab->type) || lab->ndim != 1) {
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s: labels must be integers (u8, i8, i16 or i32) "
                       "with 1 dimension, the file holds %s with %d",
                       labels_path, clt_idx_type_name(lab->type), lab->ndim);
  }
  if (lab->dims[0] != img->dims[0]) {
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s holds %lld images but %s holds %lld labels",
                       images_path, (long long)img->dims[0], labels_path,
                       (long long)lab->dims[0]);
  }
  return CLT_OK;
}

static int64_t dataset_label_at(const clt_idx *lab, int64_t i) {
  switch (lab->type) {
    case CLT_IDX_U8:
      return ((const uint8_t *)lab->data)[i];
    case CLT_IDX_I8:
      return ((const int8_t *)lab->data)[i];
    case CLT_IDX_I16:
      return ((const int16_t *)lab->data)[i];
    default:
      return ((const int32_t *)lab->data)[i];
  }
}

/* Converts the first ds->count labels to int32 and sets num_classes. */
static clt_status dataset_take_labels(const char *path, const clt_idx *lab,
                                      clt_dataset *ds, clt_err *err) {
  ds->labels = malloc((size_t)ds->count * sizeof *ds->labels);
  if (!ds->labels) {
    return clt_err_set(err, CLT_ERR_HOST_MEMORY,
                       "out of memory for %lld labels of %s",
                       (long long)ds->count, path);
  }
  int32_t max = 0;
  for (int64_t i = 0; i < ds->count; i++) {
    int64_t v = dataset_label_at(lab, i);
    if (v < 0 || v > 255) {
      return clt_err_set(err, CLT_ERR_FORMAT,
                         "%s: label %lld is %lld, labels must be 0 to 255",
                         path, (long long)i, (long long)v);
    }
    ds->labels[i] = (int32_t)v;
    if (v > max) max = (int32_t)v;
  }
  ds->num_classes = max + 1;
  return CLT_OK;
}

/* Moves the pixel buffer out of img (no copy), shrunk to ds->count. */
static void dataset_take_pixels(clt_idx *img, clt_dataset *ds) {
  size_t keep = (size_t)ds->count * (size_t)ds->channels * (size_t)ds->height *
                (size_t)ds->width;
  uint8_t *pixels = img->data;
  img->data = NULL;
  if (keep < img->nbytes) {
    uint8_t *smaller = realloc(pixels, keep);
    if (smaller) pixels = smaller; /* else keep the larger block */
  }
  ds->pixels = pixels;
}

static void dataset_set_shape(const clt_idx *img, int64_t limit,
                              clt_dataset *ds) {
  bool nchw = img->ndim == 4;
  ds->count = limit > 0 && limit < img->dims[0] ? limit : img->dims[0];
  ds->channels = nchw ? (int)img->dims[1] : 1;
  ds->height = (int)img->dims[nchw ? 2 : 1];
  ds->width = (int)img->dims[nchw ? 3 : 2];
}

static clt_status dataset_build(const char *images_path, clt_idx *img,
                                const char *labels_path, const clt_idx *lab,
                                int64_t limit, clt_dataset *ds, clt_err *err) {
  CLT_TRY(dataset_check_images(images_path, img, err));
  CLT_TRY(dataset_check_labels(images_path, img, labels_path, lab, err));
  dataset_set_shape(img, limit, ds);
  CLT_TRY(dataset_take_labels(labels_path, lab, ds, err));
  dataset_take_pixels(img, ds);
  return CLT_OK;
}

clt_status clt_dataset_load_idx(const char *images_path,
                                const char *labels_path, int64_t limit,
                                clt_dataset *out, clt_err *err) {
  if (!images_path || !labels_path || !out) {
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "clt_dataset_load_idx: NULL argument");
  }
  memset(out, 0, sizeof *out);
  clt_idx img, lab;
  CLT_TRY(clt_idx_read(images_path, &img, err));
  clt_status status = clt_idx_read(labels_path, &lab, err);
  if (status == CLT_OK) {
    status =
        dataset_build(images_path, &img, labels_path, &lab, limit, out, err);
    clt_idx_free(&lab);
  }
  clt_idx_free(&img);
  if (status != CLT_OK) clt_dataset_free(out);
  else
    snprintf(out->source, sizeof out->source, "%s (IDX, %lld images)",
             images_path, (long long)out->count);
  return status;
}

/* Writes dir/name or dir/name.gz, whichever exists, into out. */
static clt_status dataset_find_file(const char *dir, const char *name,
                                    const char *hint, char *out, size_t len,
                                    clt_err *err) {
  static const char *const suffixes[] = {"", ".gz"};
  size_t dirlen = strlen(dir);
  const char *sep = dirlen && dir[dirlen - 1] == '/' ? "" : "/";
  for (size_t i = 0; i < 2; i++) {
    int n = snprintf(out, len, "%s%s%s%s", dir, sep, name, suffixes[i]);
    if (n < 0 || (size_t)n >= len) {
      return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                         "dataset path %s%s%s%s is longer than %zu bytes", dir,
                         sep, name, suffixes[i], len - 1);
    }
    struct stat st;
    if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) return CLT_OK;
  }
  return clt_err_set(err, CLT_ERR_IO,
                     "dataset file %s%s%s not found (neither plain nor .gz)%s",
                     dir, sep, name, hint);
}

clt_status clt_dataset_resolve(const char *spec, bool train, char *images_path,
                               char *labels_path, size_t pathlen,
                               clt_err *err) {
  if (!spec || !*spec || !images_path || !labels_path || pathlen == 0) {
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "clt_dataset_resolve: empty dataset spec or no room "
                       "for the paths");
  }
  bool fashion = strcasecmp(spec, "fashion-mnist") == 0;
  const char *dir = fashion ? DATASET_FASHION_MNIST_DIR : spec;
  const char *hint = fashion ? DATASET_FASHION_MNIST_HINT : "";
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return clt_err_set(err, CLT_ERR_IO, "dataset folder %s not found%s", dir,
                       hint);
  }
  const char *split = train ? "train" : "t10k";
  char name[64];
  snprintf(name, sizeof name, "%s-images-idx3-ubyte", split);
  CLT_TRY(dataset_find_file(dir, name, hint, images_path, pathlen, err));
  snprintf(name, sizeof name, "%s-labels-idx1-ubyte", split);
  return dataset_find_file(dir, name, hint, labels_path, pathlen, err);
}
