/* Class names in checkpoints: the "class_names" entry of __metadata__, a
 * JSON array of strings (["T-shirt", "Trouser", ...]) in label order, so
 * that eval and predict print names, and a Python reader gets them with
 * json.loads(metadata["class_names"]). */
#ifndef CLT_IO_CLASS_NAMES_H
#define CLT_IO_CLASS_NAMES_H

#include "common/error.h"

#define CLT_CLASS_NAMES_KEY "class_names"
/* The layers frozen when the checkpoint was saved (clt_graph_set_trainable),
 * as the same JSON array of names; absent when none was. */
#define CLT_FROZEN_LAYERS_KEY "frozen_layers"

/* Encodes count names as a JSON array into *out (malloc'd, the caller
 * frees it). CLT_ERR_INVALID_ARGUMENT names a name that is not UTF-8. */
clt_status clt_class_names_encode(const char *const *names, int count,
                                  char **out, clt_err *err);

/* Decodes a JSON array of strings (source names the file for messages).
 * On success the caller owns *names (free with clt_class_names_free). */
clt_status clt_names_decode(const char *json, const char *source,
                            const char *key, char ***names, int *count,
                            clt_err *err);
clt_status clt_class_names_decode(const char *json, const char *source,
                                  char ***names, int *count, clt_err *err);

#endif
