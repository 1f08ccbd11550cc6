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
 * job: it reads each option with the clt_model_get_* getters below, which
 * mark the option used and write errors of the form
 * "<file>:<line>: <type>: option 'units' expects a positive integer, got
 * 'abc'", then calls clt_model_check_all_used so that a typo such as
 * `untis=128` is an error rather than silently ignored.
 *
 * Every error carries "<file>:<line>:" so the person can find it; a parse
 * error is CLT_ERR_FORMAT, a file that cannot be read CLT_ERR_IO. */
#ifndef CLT_IO_MODEL_FILE_H
#define CLT_IO_MODEL_FILE_H

#include <stdbool.h>
#include <stdint.h>

#include "cltrain.h"
#include "common/error.h"

/* Longest line accepted, in bytes, not counting the line end. */
#define CLT_MODEL_MAX_LINE 4096
/* Most options one layer line may hold. */
#define CLT_MODEL_MAX_OPTIONS 256
/* Largest model file accepted, in bytes. */
#define CLT_MODEL_MAX_FILE_BYTES (16 * 1024 * 1024)
/* Largest single dimension clt_model_get_dims accepts. */
#define CLT_MODEL_MAX_DIM INT32_MAX

typedef struct clt_model_option {
  char *key;
  char *value;
  int line;  /* 1-based line of the file it came from */
  bool used; /* set by the getters; see clt_model_check_all_used */
} clt_model_option;

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

/* ---- getters --------------------------------------------------------------
 *
 * Each looks up key on layer l of d and marks the option used. A missing
 * option gives the default when required is false, else CLT_ERR_FORMAT
 * "<file>:<line>: <type>: missing required option '<key>'". A value that does
 * not parse gives CLT_ERR_FORMAT saying what was expected and what was
 * found. *out is written only on success. */

/* A decimal integer (optional sign) >= min_value. */
clt_status clt_model_get_int(const clt_model_desc *d, clt_model_layer *l,
                             const char *key, bool required,
                             int64_t default_value, int64_t min_value,
                             int64_t *out, clt_err *err);

/* A finite decimal number such as 0.001, 1e-3, -2.5 or 3 (no inf, nan or
 * hexadecimal). Reads '.' as the decimal point whatever the C locale. */
clt_status clt_model_get_float(const clt_model_desc *d, clt_model_layer *l,
                               const char *key, bool required,
                               double default_value, double *out, clt_err *err);

/* The value as written. *out points into d (or is default_value) and lives
 * as long as d. */
clt_status clt_model_get_string(const clt_model_desc *d, clt_model_layer *l,
                                const char *key, bool required,
                                const char *default_value, const char **out,
                                clt_err *err);

/* One of choices (a NULL-terminated list); *index_out is its index. With
 * default_value NULL the option is required; otherwise default_value must
 * be one of choices (else CLT_ERR_INVALID_ARGUMENT). The error lists the
 * choices and suggests the closest one. */
clt_status clt_model_get_choice(const clt_model_desc *d, clt_model_layer *l,
                                const char *key, const char *const *choices,
                                const char *default_value, int *index_out,
                                clt_err *err);

/* true/false, 1/0, yes/no (any case). */
clt_status clt_model_get_bool(const clt_model_desc *d, clt_model_layer *l,
                              const char *key, bool default_value, bool *out,
                              clt_err *err);

/* Dimensions written "1x28x28", or a single "3": 1 to max_dims positive
 * integers, each at most CLT_MODEL_MAX_DIM. Writes dims[0..*ndim). When the
 * option is missing and not required, *ndim is 0 and dims is untouched. */
clt_status clt_model_get_dims(const clt_model_desc *d, clt_model_layer *l,
                              const char *key, bool required, int max_dims,
                              int64_t *dims, int *ndim, clt_err *err);

/* A comma-separated list "a,b,c" of non-empty items. On success the caller
 * owns *items (count malloc'd strings in a malloc'd array) and frees it
 * with clt_model_list_free. A missing option is not an error: *items is
 * NULL and *count 0. */
clt_status clt_model_get_list(const clt_model_desc *d, clt_model_layer *l,
                              const char *key, char ***items, int *count,
                              clt_err *err);

void clt_model_list_free(char **items, int count);

/* Fails on the first option of l that no getter has read: CLT_ERR_FORMAT
 * "<file>:<line>: dense: unknown option 'untis' (known: units, activation);
 * did you mean 'units'?". known_keys (NULL-terminated, may be NULL) is only
 * used for the message. An unread option that IS in known_keys is a bug in
 * the caller and gives CLT_ERR_INTERNAL. */
clt_status clt_model_check_all_used(const clt_model_desc *d,
                                    const clt_model_layer *l,
                                    const char *const *known_keys,
                                    clt_err *err);

/* The entry of candidates (NULL-terminated) closest to word, counting an
 * insertion, deletion, substitution or swap of neighbours as one edit and
 * ignoring case, if it is at most max_distance edits away (and fewer edits
 * than word has characters); else NULL. An exact match is not returned. For
 * "did you mean" hints, e.g. on an unknown layer type. */
const char *clt_model_closest(const char *word, const char *const *candidates,
                              int max_distance);

#endif
