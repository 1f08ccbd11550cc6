/* Image classification datasets held in host memory as raw bytes.
 *
 * Pixels stay u8 (a quarter of the memory of floats); the loader scales
 * them to [0, 1] one batch at a time. */
#ifndef CLT_DATA_DATASET_H
#define CLT_DATA_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef struct clt_dataset {
  int64_t count; /* images */
  int channels, height, width;
  uint8_t *pixels; /* count * channels * height * width, NCHW */
  int32_t *labels; /* count, each in [0, num_classes) */
  int num_classes; /* max label + 1 */
} clt_dataset;

/* Loads images and labels from two IDX files (plain or gzip). Images are
 * u8 with 3 dimensions (N, H, W; one channel) or 4 (N, C, H, W); labels
 * have 1 dimension, u8 (or i8/i16/i32 holding values 0..255). Both files
 * must hold the same count, and at least one image. limit <= 0 keeps every
 * image, otherwise only the first `limit`. On success the caller owns *out
 * and frees it with clt_dataset_free; on failure *out is empty and err
 * names the file and what is wrong (CLT_ERR_IO, CLT_ERR_FORMAT,
 * CLT_ERR_HOST_MEMORY). */
clt_status clt_dataset_load_idx(const char *images_path,
                                const char *labels_path, int64_t limit,
                                clt_dataset *out, clt_err *err);

/* Frees the arrays and empties *ds. Accepts NULL. */
void clt_dataset_free(clt_dataset *ds);

/* Finds the IDX files of a dataset. spec "fashion-mnist" (any case) means
 * /usr/share/datasets/fashion-mnist; any other spec is a folder holding the
 * standard names (train-images-idx3-ubyte, train-labels-idx1-ubyte,
 * t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte), each plain or with .gz
 * (the plain file wins when both exist). train picks the training files,
 * otherwise the test files. Writes the two paths (pathlen bytes each).
 * CLT_ERR_IO names the missing folder or file (and, for fashion-mnist, the
 * Debian package that installs it); CLT_ERR_INVALID_ARGUMENT for an empty
 * spec or paths longer than pathlen. */
clt_status clt_dataset_resolve(const char *spec, bool train, char *images_path,
                               char *labels_path, size_t pathlen, clt_err *err);

#endif
