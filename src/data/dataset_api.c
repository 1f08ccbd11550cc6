/* The public face of datasets: loading by name or by files. */
#include <stdlib.h>

#include "data/dataset.h"
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

CLT_API void clt_dataset_destroy(clt_dataset *ds) {
  if (!ds) return;
  clt_dataset_free(ds);
  free(ds);
}

CLT_API int64_t clt_dataset_count(const clt_dataset *ds) { return ds->count; }
