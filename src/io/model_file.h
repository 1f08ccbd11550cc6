/* Model description files: the text a person edits, read into layer lines.
 *
 * One layer per line, `TYPE key=value key=value ...`:
 *
 *     # Keras tutorial MLP
 *     input shape=1x28x28
 *     flatten
 *     dense units=128 activation=relu
 *     dense units=10
 *     softmax_cross_entropy
 *
 * `#` starts a comment anywhere on a line; blank lines are ignored; tabs,
 * spaces and CRLF line ends all work. Types and keys are [a-z_][a-z0-9_]*;
 * values are one word (no spaces, no '=', no '#'), e.g. `shape=1x28x28`,
 * `inputs=a,b`.
 *
 * This module only reads the lines. Mapping types to layers is the graph's
 * job: each line's options are the graph's layer options
 * (graph/layer_args.h), read by its getters, which write errors of the
 * form "<file>:<line>: <type>: option 'units' expects a positive integer,
 * got 'abc'" and make an option no layer reads (a typo such as
 * `untis=128`) an error.
 *
 * Every error carries "<file>:<line>:" so the person can find it; a parse
 * error is CLT_ERR_FORMAT, a file that cannot be read CLT_ERR_IO. */
#ifndef CLT_IO_MODEL_FILE_H
#define CLT_IO_MODEL_FILE_H

#include <stdbool.h>
#include <stdint.h>

#include "cltrain.h"
#include "common/error.h"
#include "graph/layer_args.h"

/* Longest line accepted, in bytes, not counting the line end. */
#define CLT_MODEL_MAX_LINE 4096
/* Most options one layer line may hold. */
#define CLT_MODEL_MAX_OPTIONS 256
/* Largest model file accepted, in bytes. */
#define CLT_MODEL_MAX_FILE_BYTES (16 * 1024 * 1024)

/* An option as written: key, value (text), its 1-based line; `used` is set
 * by the graph's getters. */
typedef clt_layer_arg clt_model_option;

typedef struct clt_model_layer {
  char *type;
  int line;                  /* 1-based */
  clt_model_option *options; /* in the order written */
  int option_count;
} clt_model_layer;

typedef struct clt_model_desc {
  char *source_name; /* the path (or the name given), for messages */
  char *text; /* the whole file as read, NUL-terminated, e.g. for hashing */
  clt_model_layer *layers; /* in file order */
  int layer_count;         /* at least 1 after a successful parse */
} clt_model_desc;

/* Reads and parses the model file at path. On success the caller owns *out
 * and frees it with clt_model_desc_free. On failure *out is zeroed (safe to
 * free) and err says what and where: CLT_ERR_IO naming the path when the
 * file cannot be opened or read, CLT_ERR_FORMAT for a malformed file
 * (including a NUL byte, which means it is not a text file). */
clt_status clt_model_parse_file(const char *path, clt_model_desc *out,
                                clt_err *err);

/* Parses text as a model file; source_name (NULL: "<model>") is used in
 * messages. Ownership and failures as for clt_model_parse_file; *out holds a
 * copy of text. */
clt_status clt_model_parse_text(const char *text, const char *source_name,
                                clt_model_desc *out, clt_err *err);

/* Frees everything d holds and zeroes it. Accepts NULL and a zeroed desc. */
void clt_model_desc_free(clt_model_desc *d);

/* The options of layer l, as the graph's getters read them (a view: the
 * getters mark l's options). */
static inline clt_layer_args clt_model_layer_args(const clt_model_desc *d,
                                                  clt_model_layer *l) {
  clt_layer_args a = {l->type, d && d->source_name ? d->source_name : NULL,
                      l->line, l->options, l->option_count};
  return a;
}

#endif
