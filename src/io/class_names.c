/* Class names as a JSON array in a checkpoint's metadata. */
#include "io/class_names.h"

#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "io/safetensors.h"
#include "runtime/runtime.h"

CLT_API void clt_class_names_free(char **names, int count) {
  if (!names) return;
  for (int i = 0; i < count; i++) free(names[i]);
  free(names);
}

clt_status clt_class_names_encode(const char *const *names, int count,
                                  char **out, clt_err *err) {
  *out = NULL;
  clt_json_buf b = {0};
  clt_json_buf_append(&b, "[", 1);
  for (int i = 0; i < count; i++) {
    size_t len = strlen(names[i]);
    if (!clt_json_utf8_valid(names[i], len)) {
      clt_json_buf_free(&b);
      return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                         "class name %d is not UTF-8 text", i);
    }
    if (i) clt_json_buf_append(&b, ", ", 2);
    clt_json_buf_append_string(&b, names[i], len);
  }
  clt_json_buf_append(&b, "]", 1);
  if (b.failed) {
    clt_json_buf_free(&b);
    return clt_err_set(err, CLT_ERR_HOST_MEMORY, "class names");
  }
  *out = b.data;
  return CLT_OK;
}

static bool names_push(char ***names, int *count, int *cap, char *name) {
  if (*count == *cap) {
    int grown = *cap ? 2 * *cap : 16;
    char **more = realloc(*names, (size_t)grown * sizeof *more);
    if (!more) return false;
    *names = more;
    *cap = grown;
  }
  (*names)[(*count)++] = name;
  return true;
}

clt_status clt_names_decode(const char *json, const char *source,
                            const char *key, char ***names, int *count,
                            clt_err *err) {
  *names = NULL;
  *count = 0;
  clt_json_reader r;
  clt_json_reader_init(&r, json, strlen(json), 0);
  char **list = NULL;
  int n = 0, cap = 0;
  bool ok = clt_json_peek(&r) == CLT_JSON_ARRAY && clt_json_enter_array(&r);
  while (ok && clt_json_next_item(&r)) {
    char *name = NULL;
    size_t len = 0;
    ok = clt_json_peek(&r) == CLT_JSON_STRING &&
         clt_json_read_string(&r, &name, &len) && strlen(name) == len;
    if (ok && !names_push(&list, &n, &cap, name)) ok = false;
    if (!ok) free(name);
  }
  ok = ok && !r.failed && clt_json_finish(&r) && n > 0;
  if (!ok) {
    clt_class_names_free(list, n);
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s: metadata '%s' is not a JSON array of names",
                       source, key);
  }
  *names = list;
  *count = n;
  return CLT_OK;
}

clt_status clt_class_names_decode(const char *json, const char *source,
                                  char ***names, int *count, clt_err *err) {
  return clt_names_decode(json, source, CLT_CLASS_NAMES_KEY, names, count,
                          err);
}

/* The names in metadata entry `key` of the checkpoint at path. */
static clt_status checkpoint_names(clt_context *ctx, const char *path,
                                   const char *key, char ***names,
                                   int *count) {
  *names = NULL;
  *count = 0;
  clt_err err = {0};
  clt_st_file f;
  if (!path || clt_st_read_file(path, &f, &err) != CLT_OK)
    return clt_ctx_fail(ctx, path ? err.status : CLT_ERR_INVALID_ARGUMENT, "%s",
                        path ? err.msg : "checkpoint: no path");
  const char *json = clt_st_metadata(&f, key);
  clt_status st = CLT_OK;
  if (json) st = clt_names_decode(json, path, key, names, count, &err);
  clt_st_file_free(&f);
  if (st != CLT_OK) return clt_ctx_fail(ctx, st, "%s", err.msg);
  return CLT_OK;
}

CLT_API clt_status clt_checkpoint_class_names(clt_context *ctx,
                                              const char *path, char ***names,
                                              int *count) {
  return checkpoint_names(ctx, path, CLT_CLASS_NAMES_KEY, names, count);
}

CLT_API clt_status clt_checkpoint_frozen_layers(clt_context *ctx,
                                                const char *path,
                                                char ***names, int *count) {
  return checkpoint_names(ctx, path, CLT_FROZEN_LAYERS_KEY, names, count);
}
