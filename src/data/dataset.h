/* Datasets held in host memory.
 *
 * Samples are images (C, H, W), as u8 pixels (a quarter of the memory of
 * floats; the loader scales them to [0, 1] one batch at a time) or, for
 * data given as floats, f32 values used as they are. Each sample has an
 * integer label (classification) or target_size float targets
 * (regression, the mse loss). */
#ifndef CLT_DATA_DATASET_H
#define CLT_DATA_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define CLT_DATASET_SOURCE_MAX 1024

typedef struct clt_dataset {
  int64_t count; /* samples */
  int channels, height, width;
  uint8_t *pixels;   /* count * C * H * W, NCHW; NULL when fpixels is set */
  float *fpixels;    /* the same as floats, used as they are */
  int32_t *labels;   /* count, each in [0, num_classes); NULL for targets */
  float *targets;    /* count * target_size floats (regression) or NULL */
  int64_t target_size;
  int num_classes;   /* max label + 1, or the class names' count */
  char **class_names; /* num_classes names (malloc'd) or NULL */
  /* target_size names of the targets' columns in a CSV header line
   * (malloc'd), or NULL */
  char **target_names;
  bool from_cache;   /* image folders: read from the packed cache */
  /* CSV: clt_data_options.label_column as read, "" for the first column
   * (recorded by checkpoints) */
  char label_column[CLT_LABEL_COLUMN_MAX];
  char source[CLT_DATASET_SOURCE_MAX]; /* where it came from, for people */
} clt_dataset;

/* Values per sample: C * H * W. */
static inline int64_t clt_dataset_sample_size(const clt_dataset *ds) {
  return (int64_t)ds->channels * ds->height * ds->width;
}

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

/* Moves the last `fraction` of ds's samples (rounded to the nearest
 * whole sample; at least 1 and at most count - 1 when fraction > 0) into
 * *held (a new dataset the caller frees with clt_dataset_free), keeping
 * the rest in ds. The class names are copied. CLT_ERR_INVALID_ARGUMENT for
 * a fraction outside [0, 1) or a dataset of one sample;
 * CLT_ERR_HOST_MEMORY. */
clt_status clt_dataset_split_tail(clt_dataset *ds, double fraction,
                                  clt_dataset *held, clt_err *err);

/* Copies a random `fraction` of ds's samples (rounded, at least 1 and at
 * most count - 1; chosen by seed) into *part and the others into *rest,
 * each in ds's order; ds is unchanged. CLT_ERR_INVALID_ARGUMENT for a
 * fraction outside (0, 1) or fewer than two samples; CLT_ERR_HOST_MEMORY. */
clt_status clt_dataset_split_random(const clt_dataset *ds, double fraction,
                                    uint64_t seed, clt_dataset *rest,
                                    clt_dataset *part, clt_err *err);

/* Every target of ds in [0, 1] (sigmoid_cross_entropy's: a label's
 * probability), else CLT_ERR_FORMAT naming the first sample and target
 * that is not. */
clt_status clt_dataset_check_unit_targets(const clt_dataset *ds,
                                          clt_err *err);

/* Keeps the first limit samples (limit <= 0 or >= count: all). */
void clt_dataset_truncate(clt_dataset *ds, int64_t limit);

/* Copies src's target names into dst (none where src has none; dst's
 * target_size is src's). */
clt_status clt_dataset_copy_target_names(clt_dataset *dst,
                                         const clt_dataset *src,
                                         clt_err *err);

/* Copies count names into ds->class_names (ds->num_classes = count). */
clt_status clt_dataset_set_class_names(clt_dataset *ds,
                                       const char *const *names, int count,
                                       clt_err *err);

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
