/* Cutting datasets: the held-out tail (a test set where the user gave
 * none, as Keras's validation_split) and limits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "data/dataset.h"

clt_status clt_dataset_copy_target_names(clt_dataset *dst,
                                         const clt_dataset *src,
                                         clt_err *err) {
  if (!src->target_names) return CLT_OK;
  char **copy = calloc((size_t)src->target_size, sizeof *copy);
  bool ok = copy != NULL;
  for (int64_t i = 0; ok && i < src->target_size; i++)
    ok = (copy[i] = strdup(src->target_names[i])) != NULL;
  if (!ok) {
    for (int64_t i = 0; copy && i < src->target_size; i++) free(copy[i]);
    free(copy);
    return clt_err_set(err, CLT_ERR_HOST_MEMORY, "%s: target names",
                       src->source);
  }
  dst->target_names = copy;
  return CLT_OK;
}

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
  if (ok) ok = clt_dataset_copy_target_names(held, ds, err) == CLT_OK;
  if (!ok) {
    clt_dataset_free(held);
    return clt_err_set(err, CLT_ERR_HOST_MEMORY,
                       "%s: no memory to hold out %lld samples", ds->source,
                       (long long)n);
  }
  ds->count -= n;
  return CLT_OK;
}

/* Copies sample `from` of src into slot `to` of dst (same layout). */
static void copy_sample(const clt_dataset *src, int64_t from,
                        clt_dataset *dst, int64_t to) {
  int64_t size = clt_dataset_sample_size(src), ts = src->target_size;
  if (src->pixels)
    memcpy(dst->pixels + to * size, src->pixels + from * size, (size_t)size);
  if (src->fpixels)
    memcpy(dst->fpixels + to * size, src->fpixels + from * size,
           (size_t)size * 4);
  if (src->labels) dst->labels[to] = src->labels[from];
  if (src->targets)
    memcpy(dst->targets + to * ts, src->targets + from * ts, (size_t)ts * 4);
}

static bool alloc_like(const clt_dataset *src, int64_t n, clt_dataset *dst,
                       clt_err *err) {
  memset(dst, 0, sizeof *dst);
  int64_t size = clt_dataset_sample_size(src);
  dst->count = n;
  dst->channels = src->channels;
  dst->height = src->height;
  dst->width = src->width;
  dst->target_size = src->target_size;
  dst->num_classes = src->num_classes;
  memcpy(dst->label_column, src->label_column, sizeof dst->label_column);
  size_t k = (size_t)(n > 0 ? n : 1);
  bool ok = (!src->pixels || (dst->pixels = malloc(k * (size_t)size))) &&
            (!src->fpixels || (dst->fpixels = malloc(k * (size_t)size * 4))) &&
            (!src->labels || (dst->labels = malloc(k * 4))) &&
            (!src->targets ||
             (dst->targets = malloc(k * (size_t)src->target_size * 4)));
  if (ok && src->class_names)
    ok = clt_dataset_set_class_names(dst, (const char *const *)src->class_names,
                                     src->num_classes, err) == CLT_OK;
  if (ok) ok = clt_dataset_copy_target_names(dst, src, err) == CLT_OK;
  return ok;
}

clt_status clt_dataset_split_random(const clt_dataset *ds, double fraction,
                                    uint64_t seed, clt_dataset *rest,
                                    clt_dataset *part, clt_err *err) {
  memset(rest, 0, sizeof *rest);
  memset(part, 0, sizeof *part);
  if (!(fraction > 0.0 && fraction < 1.0) || ds->count < 2)
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "%s: cannot split %g of %lld samples off (the "
                       "fraction must be above 0 and below 1, and the data "
                       "hold two samples or more)",
                       ds->source, fraction, (long long)ds->count);
  int64_t n = (int64_t)llround(fraction * (double)ds->count);
  if (n < 1) n = 1;
  if (n > ds->count - 1) n = ds->count - 1;
  /* The first n of a seeded Fisher-Yates shuffle, marked, then both sides
   * taken in file order. */
  int64_t *idx = malloc((size_t)ds->count * sizeof *idx);
  uint8_t *chosen = calloc((size_t)ds->count, 1);
  bool ok = idx && chosen;
  if (ok) {
    for (int64_t i = 0; i < ds->count; i++) idx[i] = i;
    clt_rng r = clt_rng_derive(seed, 0x76616c73706c6974ULL /* "valsplit" */,
                               0);
    for (int64_t i = 0; i < n; i++) {
      int64_t j = i + (int64_t)clt_rng_below(&r, (uint64_t)(ds->count - i));
      int64_t t = idx[i];
      idx[i] = idx[j];
      idx[j] = t;
      chosen[idx[i]] = 1;
    }
    ok = alloc_like(ds, ds->count - n, rest, err) &&
         alloc_like(ds, n, part, err);
  }
  if (ok) {
    int64_t a = 0, b = 0;
    for (int64_t i = 0; i < ds->count; i++) {
      if (chosen[i]) copy_sample(ds, i, part, b++);
      else copy_sample(ds, i, rest, a++);
    }
    snprintf(rest->source, sizeof rest->source, "%.900s (%lld not split off)",
             ds->source, (long long)rest->count);
    snprintf(part->source, sizeof part->source,
             "%.900s (%lld split off at random, seed %llu)", ds->source,
             (long long)n, (unsigned long long)seed);
  }
  free(idx);
  free(chosen);
  if (!ok) {
    clt_dataset_free(rest);
    clt_dataset_free(part);
    return clt_err_set(err, CLT_ERR_HOST_MEMORY, "%s: no memory to split",
                       ds->source);
  }
  return CLT_OK;
}

clt_status clt_dataset_check_unit_targets(const clt_dataset *ds,
                                          clt_err *err) {
  int64_t k = ds->target_size;
  for (int64_t i = 0; ds->targets && i < ds->count * k; i++)
    if (!(ds->targets[i] >= 0.0f && ds->targets[i] <= 1.0f))
      return clt_err_set(err, CLT_ERR_FORMAT,
                         "sample %lld's target %lld is %g; "
                         "sigmoid_cross_entropy's targets are 0 (the label "
                         "is absent) to 1 (present)",
                         (long long)(i / k) + 1, (long long)(i % k) + 1,
                         (double)ds->targets[i]);
  return CLT_OK;
}

void clt_dataset_truncate(clt_dataset *ds, int64_t limit) {
  if (limit > 0 && limit < ds->count) ds->count = limit;
}
