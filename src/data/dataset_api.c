/* The public face of datasets: loading by name, by files, CSV and image
 * folders, and what a dataset says about itself. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/csv.h"
#include "data/dataset.h"
#include "data/folder.h"
#include "graph/graph.h"
#include "runtime/runtime.h"

static clt_status finish_load(clt_context *ctx, clt_status st, clt_err *err,
                              clt_dataset *ds, clt_dataset **out) {
  if (st != CLT_OK) {
    free(ds);
    return clt_ctx_fail(ctx, st, "%s", err->msg);
  }
  *out = ds;
  return CLT_OK;
}

CLT_API clt_status clt_dataset_load_files(clt_context *ctx,
                                          const char *images_path,
                                          const char *labels_path,
                                          int64_t limit, clt_dataset **out) {
  *out = NULL;
  clt_dataset *ds = calloc(1, sizeof *ds);
  if (!ds) return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "dataset");
  clt_err err = {0};
  clt_status st = clt_dataset_load_idx(images_path, labels_path, limit, ds, &err);
  return finish_load(ctx, st, &err, ds, out);
}

CLT_API clt_status clt_dataset_load(clt_context *ctx, const char *spec,
                                    bool train, int64_t limit,
                                    clt_dataset **out) {
  *out = NULL;
  char images[4096], labels[4096];
  clt_err err = {0};
  if (clt_dataset_resolve(spec, train, images, labels, sizeof images, &err) !=
      CLT_OK)
    return clt_ctx_fail(ctx, err.status, "%s", err.msg);
  return clt_dataset_load_files(ctx, images, labels, limit, out);
}

CLT_API clt_status clt_dataset_split(clt_context *ctx, const clt_dataset *ds,
                                     double fraction, uint64_t seed,
                                     clt_dataset **rest, clt_dataset **part) {
  *rest = *part = NULL;
  clt_dataset *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
  if (!a || !b) {
    free(a);
    free(b);
    return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "dataset split");
  }
  clt_err err = {0};
  if (clt_dataset_split_random(ds, fraction, seed, a, b, &err) != CLT_OK) {
    free(a);
    free(b);
    return clt_ctx_fail(ctx, err.status, "%s", err.msg);
  }
  *rest = a;
  *part = b;
  return CLT_OK;
}

CLT_API void clt_dataset_destroy(clt_dataset *ds) {
  if (!ds) return;
  clt_dataset_free(ds);
  free(ds);
}

CLT_API int64_t clt_dataset_count(const clt_dataset *ds) { return ds->count; }

CLT_API int64_t clt_dataset_sample_values(const clt_dataset *ds) {
  return clt_dataset_sample_size(ds);
}

CLT_API clt_status clt_dataset_samples(const clt_dataset *ds, int64_t first,
                                       int64_t n, float *host,
                                       int32_t *labels) {
  if (!ds || !host || first < 0 || n < 0 || first > ds->count - n ||
      (labels && !ds->labels))
    return CLT_ERR_INVALID_ARGUMENT;
  int64_t size = clt_dataset_sample_size(ds);
  for (int64_t i = 0; i < n * size; i++) {
    int64_t j = first * size + i;
    host[i] = ds->fpixels ? ds->fpixels[j] : ds->pixels[j] / 255.0f;
  }
  if (labels)
    memcpy(labels, ds->labels + first, (size_t)n * sizeof *labels);
  return CLT_OK;
}

/* ---- your own data ------------------------------------------------------- */

CLT_API void clt_data_options_init(clt_data_options *o) {
  memset(o, 0, sizeof *o);
  o->holdout = 0.1;
  o->cache = -1;
}

CLT_API clt_status clt_data_options_from_graph(const clt_graph *g,
                                               clt_data_options *o) {
  if (!g || g->input_node < 0)
    return clt_ctx_fail(g ? g->ctx : NULL, CLT_ERR_INVALID_ARGUMENT,
                        "data options: the graph has no input layer");
  const clt_graph_node *in = &g->nodes[g->input_node];
  int64_t c = 1, h = 1, w = in->shape[in->ndim - 1];
  if (in->ndim >= 2) h = in->shape[in->ndim - 2];
  if (in->ndim >= 3) c = in->shape[in->ndim - 3];
  if (in->ndim > 3 || c > INT32_MAX || h > INT32_MAX || w > INT32_MAX)
    return clt_ctx_fail(g->ctx, CLT_ERR_UNSUPPORTED,
                        "data options: input '%s' has %d dimensions; data "
                        "files give samples of up to 3 (CxHxW)",
                        in->name, in->ndim);
  o->channels = (int)c;
  o->height = (int)h;
  o->width = (int)w;
  o->num_classes = 0;
  o->targets = 0;
  if (g->loss_node >= 0) {
    const clt_graph_node *loss = &g->nodes[g->loss_node];
    if (clt_graph_float_targets(g)) o->targets = loss->size;
    else if (loss->size <= INT32_MAX) o->num_classes = (int)loss->size;
  }
  return CLT_OK;
}

static clt_status load_with(clt_context *ctx, const char *path,
                            const clt_data_options *o, bool csv,
                            clt_dataset **out) {
  *out = NULL;
  if (!path || !o)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "dataset: NULL path or options");
  clt_dataset *ds = calloc(1, sizeof *ds);
  if (!ds) return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "dataset");
  clt_err err = {0};
  clt_status st = csv ? clt_csv_read(path, o, ds, &err)
                      : clt_folder_read(path, o, ds, &err);
  if (st == CLT_OK) clt_dataset_truncate(ds, o->train_limit);
  return finish_load(ctx, st, &err, ds, out);
}

CLT_API clt_status clt_dataset_load_csv(clt_context *ctx, const char *path,
                                        const clt_data_options *o,
                                        clt_dataset **out) {
  return load_with(ctx, path, o, true, out);
}

CLT_API clt_status clt_dataset_load_folder(clt_context *ctx, const char *dir,
                                           const clt_data_options *o,
                                           clt_dataset **out) {
  return load_with(ctx, dir, o, false, out);
}

CLT_API int clt_dataset_num_classes(const clt_dataset *ds) {
  return ds->targets ? 0 : ds->num_classes;
}

CLT_API const char *clt_dataset_class_name(const clt_dataset *ds, int i) {
  if (!ds->class_names || i < 0 || i >= ds->num_classes) return NULL;
  return ds->class_names[i];
}

CLT_API const char *clt_dataset_target_name(const clt_dataset *ds, int i) {
  if (!ds->target_names || i < 0 || i >= ds->target_size) return NULL;
  return ds->target_names[i];
}

CLT_API const char *clt_dataset_source(const clt_dataset *ds) {
  return ds->source;
}
