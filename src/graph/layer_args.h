/* The options of one layer, as the graph reads them, whatever wrote them:
 * a model file line (io/model_file.c makes its options these), the
 * options text of clt_graph_add, or a typed C builder (clt_graph_dense,
 * ...), which sets typed values with no text in between.
 *
 * Each layer reads its options with the getters below, which mark what
 * they read and write errors of the form "<file>:<line>: <type>: option
 * 'units' expects a positive integer, got 'abc'"; then
 * clt_args_check_all_used makes an option no layer read (a typo such as
 * `untis=128`) an error naming it. A missing option gives the default
 * when it is not required, else "missing required option '<key>'". *out is
 * written only on success. */
#ifndef CLT_GRAPH_LAYER_ARGS_H
#define CLT_GRAPH_LAYER_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "cltrain.h"
#include "common/error.h"

/* Longest value accepted as text, in bytes. */
#define CLT_ARGS_MAX_VALUE 4096
/* Largest single dimension clt_args_get_dims accepts. */
#define CLT_ARGS_MAX_DIM INT32_MAX

typedef enum clt_arg_kind {
  CLT_ARG_TEXT = 0, /* value: as written */
  CLT_ARG_INT,      /* i */
  CLT_ARG_FLOAT,    /* f */
  CLT_ARG_BOOL,     /* b */
  CLT_ARG_DIMS,     /* dims[0..ndim) */
} clt_arg_kind;

typedef struct clt_layer_arg {
  char *key;
  char *value; /* CLT_ARG_TEXT */
  int line;    /* where it was written (the layer's line for builders) */
  bool used;   /* set by the getters; see clt_args_check_all_used */
  clt_arg_kind kind;
  int64_t i;
  double f;
  bool b;
  int ndim;
  int64_t dims[CLT_MAX_DIMS];
} clt_layer_arg;

typedef struct clt_layer_args {
  const char *type;
  const char *source; /* the model file, or the type for builders */
  int line;
  clt_layer_arg *args;
  int count;
} clt_layer_args;

/* A decimal integer (optional sign) >= min_value. */
clt_status clt_args_get_int(clt_layer_args *a, const char *key, bool required,
                            int64_t default_value, int64_t min_value,
                            int64_t *out, clt_err *err);

/* A finite decimal number such as 0.001, 1e-3, -2.5 or 3 (no inf, nan or
 * hexadecimal). Reads '.' as the decimal point whatever the C locale. */
clt_status clt_args_get_float(clt_layer_args *a, const char *key,
                              bool required, double default_value,
                              double *out, clt_err *err);

/* s as a finite decimal number, as clt_args_get_float reads one; false
 * for anything else. For options that hold several ("1,0.5,2"). */
bool clt_args_parse_decimal(const char *s, double *out);

/* The value as written. *out points into a's storage (or is
 * default_value). */
clt_status clt_args_get_string(clt_layer_args *a, const char *key,
                               bool required, const char *default_value,
                               const char **out, clt_err *err);

/* One of choices (a NULL-terminated list); *index_out is its index. With
 * default_value NULL the option is required; otherwise default_value must
 * be one of choices (else CLT_ERR_INVALID_ARGUMENT). The error lists the
 * choices and suggests the closest one. */
clt_status clt_args_get_choice(clt_layer_args *a, const char *key,
                               const char *const *choices,
                               const char *default_value, int *index_out,
                               clt_err *err);

/* true/false, 1/0, yes/no (any case). */
clt_status clt_args_get_bool(clt_layer_args *a, const char *key,
                             bool default_value, bool *out, clt_err *err);

/* Dimensions written "1x28x28", or a single "3": 1 to max_dims positive
 * integers, each at most CLT_ARGS_MAX_DIM. Writes dims[0..*ndim). When the
 * option is missing and not required, *ndim is 0 and dims is untouched. */
clt_status clt_args_get_dims(clt_layer_args *a, const char *key,
                             bool required, int max_dims, int64_t *dims,
                             int *ndim, clt_err *err);

/* The same, each value at least min (0 or 1): padding=1x0 takes 0. */
clt_status clt_args_get_dims_min(clt_layer_args *a, const char *key,
                                 bool required, int max_dims, int64_t min,
                                 int64_t *dims, int *ndim, clt_err *err);

/* A comma-separated list "a,b,c" of non-empty items. On success the caller
 * owns *items (count malloc'd strings in a malloc'd array) and frees it
 * with clt_args_list_free. A missing option is not an error: *items is
 * NULL and *count 0. */
clt_status clt_args_get_list(clt_layer_args *a, const char *key,
                             char ***items, int *count, clt_err *err);

void clt_args_list_free(char **items, int count);

/* Fails on the first option of a that no getter has read: CLT_ERR_FORMAT
 * "<file>:<line>: dense: unknown option 'untis' (known: units, activation);
 * did you mean 'units'?". known_keys (NULL-terminated, may be NULL) is only
 * used for the message. An unread option that IS in known_keys is a bug in
 * the caller and gives CLT_ERR_INTERNAL. */
clt_status clt_args_check_all_used(clt_layer_args *a,
                                   const char *const *known_keys,
                                   clt_err *err);

#endif
