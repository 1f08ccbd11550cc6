/* Datasets from arrays in memory (clt_dataset_from_memory): checked, then
 * copied, so the caller's arrays may go away. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"
#include "runtime/runtime.h"

static clt_status memory_check(clt_context *ctx, const clt_dataset_desc *d) {
  if (!d || d->count < 1 || d->channels < 1 || d->height < 1 || d->width < 1)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "clt_dataset_from_memory: needs at least one sample "
                        "and a shape of at least 1x1x1");
  if (!d->pixels_u8 == !d->values_f32)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "clt_dataset_from_memory: give exactly one of "
                        "pixels_u8 and values_f32");
  if (!d->labels == !d->targets)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "clt_dataset_from_memory: give exactly one of labels "
                        "(a classifier) and targets (regression)");
  if (d->targets && d->target_size < 1)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "clt_dataset_from_memory: target_size is %lld, it "
                        "must be at least 1 with targets",
                        (long long)d->target_size);
  if (d->target_names && !d->targets)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "clt_dataset_from_memory: target names without "
                        "targets");
  if (d->num_classes < 0 || (d->class_names && d->num_classes < 1))
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "clt_dataset_from_memory: num_classes is %d (class "
                        "names need num_classes)",
                        d->num_classes);
  for (int64_t i = 0; d->labels && i < d->count; i++) {
    int32_t v = d->labels[i];
    if (v < 0 || (d->num_classes > 0 && v >= d->num_classes))
      return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                          "clt_dataset_from_memory: label %lld is %d, labels "
                          "must be 0 to %d",
                          (long long)i, v,
                          d->num_classes > 0 ? d->num_classes - 1 : INT32_MAX);
  }
  return CLT_OK;
}

static void *memory_copy(const void *src, size_t bytes, bool *ok) {
  if (!src || !*ok) return NULL;
  void *dst = malloc(bytes);
  if (dst)
    memcpy(dst, src, bytes);
  else
    *ok = false;
  return dst;
}

static int memory_classes(const clt_dataset_desc *d) {
  if (d->num_classes > 0 || !d->labels) return d->num_classes;
  int32_t max = 0;
  for (int64_t i = 0; i < d->count; i++)
    if (d->labels[i] > max) max = d->labels[i];
  return max + 1;
}

/* n names (a NULL one: "") into a new array at *to; NULL none. */
static bool memory_copy_list(const char *const *from, int64_t n,
                             char ***to) {
  if (!from) return true;
  if (!(*to = calloc((size_t)n, sizeof **to))) return false;
  for (int64_t i = 0; i < n; i++)
    if (!((*to)[i] = strdup(from[i] ? from[i] : ""))) return false;
  return true;
}

static bool memory_copy_names(const clt_dataset_desc *d, clt_dataset *ds) {
  return memory_copy_list(d->class_names, ds->num_classes, &ds->class_names) &&
         memory_copy_list(d->target_names, ds->target_size,
                          &ds->target_names);
}

CLT_API clt_status clt_dataset_from_memory(clt_context *ctx,
                                           const clt_dataset_desc *d,
                                           clt_dataset **out) {
  *out = NULL;
  CLT_TRY(memory_check(ctx, d));
  clt_dataset *ds = calloc(1, sizeof *ds);
  if (!ds) return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "dataset");
  size_t values = (size_t)d->count * (size_t)d->channels * (size_t)d->height *
                  (size_t)d->width;
  bool ok = true;
  ds->count = d->count;
  ds->channels = d->channels;
  ds->height = d->height;
  ds->width = d->width;
  ds->pixels = memory_copy(d->pixels_u8, values, &ok);
  ds->fpixels = memory_copy(d->values_f32, values * sizeof(float), &ok);
  ds->labels = memory_copy(d->labels, (size_t)d->count * sizeof(int32_t), &ok);
  ds->target_size = d->targets ? d->target_size : 0;
  ds->targets = memory_copy(
      d->targets, (size_t)d->count * (size_t)ds->target_size * sizeof(float),
      &ok);
  ds->num_classes = memory_classes(d);
  if (ok) ok = memory_copy_names(d, ds);
  if (!ok) {
    clt_dataset_free(ds);
    free(ds);
    return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY,
                        "clt_dataset_from_memory: no memory for a copy of "
                        "%lld samples",
                        (long long)d->count);
  }
  snprintf(ds->source, sizeof ds->source, "memory (%lld samples of %dx%dx%d)",
           (long long)d->count, d->channels, d->height, d->width);
  *out = ds;
  return CLT_OK;
}
