/* Cutting datasets: the held-out tail (a test set where the user gave
 * none, as Keras's validation_split) and limits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"

clt_status clt_dataset_set_class_names(clt_dataset *ds,
                                       const char *const *names, int count,
                                       clt_err *err) {
  char **copy = calloc((size_t)(count > 0 ? count : 1), sizeof *copy);
  bool ok = copy != NULL;
  for (int i = 0; ok && i < count; i++) ok = (copy[i] = strdup(names[i]));
  if (!ok) {
    for (int i = 0; copy && i < count; i++) free(copy[i]);
    free(copy);
    return clt_err_set(err, CLT_ERR_HOST_MEMORY, "class names");
  }
  if (ds->class_names)
    for (int i = 0; i < ds->num_classes; i++) free(ds->class_names[i]);
  free(ds->class_names);
  ds->class_names = copy;
  ds->num_classes = count;
  return CLT_OK;
}

/* Copies samples [first, first + n) of src's arrays into dst's. */
static bool split_copy(const clt_dataset *src, int64_t first, int64_t n,
                       clt_dataset *dst) {
  int64_t size = clt_dataset_sample_size(src);
  int64_t ts = src->target_size;
  bool ok = true;
  if (src->pixels && (dst->pixels = malloc((size_t)(n * size))))
    memcpy(dst->pixels, src->pixels + first * size, (size_t)(n * size));
  else if (src->pixels)
    ok = false;
  if (src->fpixels && (dst->fpixels = malloc((size_t)(n * size) * 4)))
    memcpy(dst->fpixels, src->fpixels + first * size, (size_t)(n * size) * 4);
  else if (src->fpixels)
    ok = false;
  if (src->labels && (dst->labels = malloc((size_t)n * 4)))
    memcpy(dst->labels, src->labels + first, (size_t)n * 4);
  else if (src->labels)
    ok = false;
  if (src->targets && (dst->targets = malloc((size_t)(n * ts) * 4)))
    memcpy(dst->targets, src->targets + first * ts, (size_t)(n * ts) * 4);
  else if (src->targets)
    ok = false;
  return ok;
}

clt_status clt_dataset_split_tail(clt_dataset *ds, double fraction,
                                  clt_dataset *held, clt_err *err) {
  memset(held, 0, sizeof *held);
  if (!(fraction >= 0.0 && fraction < 1.0) || (fraction > 0 && ds->count < 2))
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "%s: cannot hold out %g of %lld samples (the fraction "
                       "must be 0 or more and below 1)",
                       ds->source, fraction, (long long)ds->count);
  int64_t n = (int64_t)llround(fraction * (double)ds->count);
  if (fraction > 0 && n < 1) n = 1;
  if (n > ds->count - 1) n = ds->count - 1;
  held->count = n;
  held->channels = ds->channels;
  held->height = ds->height;
  held->width = ds->width;
  held->target_size = ds->target_size;
  held->num_classes = ds->num_classes;
  bool ok = split_copy(ds, ds->count - n, n, held);
  if (ok && ds->class_names)
    ok = clt_dataset_set_class_names(held, (const char *const *)ds->class_names,
                                     ds->num_classes, err) == CLT_OK;
  if (!ok) {
    clt_dataset_free(held);
    return clt_err_set(err, CLT_ERR_HOST_MEMORY,
                       "%s: no memory to hold out %lld samples", ds->source,
                       (long long)n);
  }
  ds->count -= n;
  return CLT_OK;
}

void clt_dataset_truncate(clt_dataset *ds, int64_t limit) {
  if (limit > 0 && limit < ds->count) ds->count = limit;
}
