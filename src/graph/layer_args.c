/* The options of one layer (see layer_args.h): the getters read and check
 * them, whatever wrote them, and write errors naming the layer and where
 * it was written. */
#include "graph/layer_args.h"

#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/words.h"

/* Edits allowed between a typo and the word it is taken for. */
#define SUGGEST_MAX_DISTANCE 2

/* "<file>:<line>: <type>: <message>" */
__attribute__((format(printf, 4, 5))) static clt_status layer_error(
    const clt_layer_args *a, clt_err *err, clt_status status,
    const char *fmt, ...) {
  char msg[CLT_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return clt_err_set(err, status, "%s:%d: %s: %s",
                     a->source ? a->source : "<model>", a->line, a->type, msg);
}

static clt_status out_of_memory(clt_err *err) {
  return clt_err_set(err, CLT_ERR_HOST_MEMORY,
                     "out of host memory while reading a model file");
}

/* The option named key, marked used; NULL when absent. */
static clt_layer_arg *take_option(clt_layer_args *a, const char *key) {
  for (int i = 0; i < a->count; i++) {
    if (strcmp(a->args[i].key, key) == 0) {
      a->args[i].used = true;
      return &a->args[i];
    }
  }
  return NULL;
}

static clt_status bad_arguments(clt_err *err, const char *fn) {
  return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
}

static clt_status missing(clt_layer_args *a, const char *key, clt_err *err) {
  return layer_error(a, err, CLT_ERR_FORMAT, "missing required option '%s'",
                     key);
}

/* Parses a whole decimal integer with optional sign. Sets *overflow when
 * the digits are fine but the number does not fit in int64_t. */
static bool parse_int64(const char *s, int64_t *out, bool *overflow) {
  *overflow = false;
  bool negative = false;
  if (*s == '+' || *s == '-') negative = *s++ == '-';
  if (!clt_is_digit(*s)) return false;
  uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  uint64_t v = 0;
  for (; *s; s++) {
    if (!clt_is_digit(*s)) return false;
    unsigned digit = (unsigned)(*s - '0');
    if (v > (limit - digit) / 10) {
      *overflow = true;
      v = limit; /* keep scanning so "9999x" is a syntax error */
    } else if (!*overflow) {
      v = v * 10 + digit;
    }
  }
  if (*overflow) return false;
  if (negative)
    *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
  else
    *out = (int64_t)v;
  return true;
}

clt_status clt_args_get_int(clt_layer_args *a, const char *key, bool required,
                             int64_t default_value, int64_t min_value,
                             int64_t *out, clt_err *err) {
  if (!a || !key || !out) return bad_arguments(err, "clt_args_get_int");
  clt_layer_arg *o = take_option(a, key);
  if (!o) {
    if (required) return missing(a, key, err);
    *out = default_value;
    return CLT_OK;
  }
  int64_t v = 0;
  bool overflow = false;
  char typed[32];
  if (o->kind == CLT_ARG_INT) { /* from a builder: no text in between */
    v = o->i;
    snprintf(typed, sizeof typed, "%lld", (long long)v);
  }
  bool ok = o->kind == CLT_ARG_INT ? true
                                   : parse_int64(o->value, &v, &overflow);
  if (ok && v >= min_value) {
    *out = v;
    return CLT_OK;
  }
  char what[64];
  if (min_value == 1)
    snprintf(what, sizeof what, "a positive integer");
  else if (min_value == 0)
    snprintf(what, sizeof what, "a non-negative integer");
  else if (min_value == INT64_MIN)
    snprintf(what, sizeof what, "an integer");
  else
    snprintf(what, sizeof what, "an integer >= %lld", (long long)min_value);
  char qbuf[CLT_QUOTE_BUF];
  return layer_error(
      a, err, CLT_ERR_FORMAT, "option '%s' expects %s, got '%s'%s", key,
      what, o->kind == CLT_ARG_INT ? typed : clt_quote_str(o->value, qbuf),
      overflow ? " (out of range)" : "");
}

/* Accepts [+-]? (digits [. digits*] | . digits) ([eE] [+-]? digits)? only,
 * which rules out inf, nan, hexadecimal and stray text. */
static bool is_decimal_number(const char *s) {
  if (*s == '+' || *s == '-') s++;
  int mantissa_digits = 0;
  while (clt_is_digit(*s)) s++, mantissa_digits++;
  if (*s == '.') {
    s++;
    while (clt_is_digit(*s)) s++, mantissa_digits++;
  }
  if (mantissa_digits == 0) return false;
  if (*s == 'e' || *s == 'E') {
    s++;
    if (*s == '+' || *s == '-') s++;
    if (!clt_is_digit(*s)) return false;
    while (clt_is_digit(*s)) s++;
  }
  return *s == '\0';
}

/* strtod of a string already checked by is_decimal_number, reading '.' as
 * the decimal point even when the program has set a locale that uses ','. */
static bool convert_decimal(const char *s, double *out) {
  const char *point = localeconv()->decimal_point;
  size_t point_len = point ? strlen(point) : 0;
  size_t len = strlen(s);
  if (point_len == 0 || point_len > 8 || len > CLT_ARGS_MAX_VALUE) {
    point = ".";
    point_len = 1;
  }
  char buf[CLT_ARGS_MAX_VALUE + 16];
  size_t out_len = 0;
  for (const char *c = s; *c && out_len + point_len < sizeof buf - 1; c++) {
    if (*c == '.') {
      memcpy(buf + out_len, point, point_len);
      out_len += point_len;
    } else {
      buf[out_len++] = *c;
    }
  }
  buf[out_len] = '\0';
  char *end = NULL;
  double v = strtod(buf, &end);
  if (end != buf + out_len) return false;
  *out = v;
  return true;
}

bool clt_args_parse_decimal(const char *s, double *out) {
  double v;
  if (!is_decimal_number(s) || !convert_decimal(s, &v) || !isfinite(v))
    return false;
  *out = v;
  return true;
}

clt_status clt_args_get_float(clt_layer_args *a, const char *key, bool required,
                               double default_value, double *out,
                               clt_err *err) {
  if (!a || !key || !out) return bad_arguments(err, "clt_args_get_float");
  clt_layer_arg *o = take_option(a, key);
  if (!o) {
    if (required) return missing(a, key, err);
    *out = default_value;
    return CLT_OK;
  }
  double v = 0.0;
  char typed[48];
  if (o->kind == CLT_ARG_FLOAT || o->kind == CLT_ARG_INT) {
    v = o->kind == CLT_ARG_FLOAT ? o->f : (double)o->i;
    if (isfinite(v)) {
      *out = v;
      return CLT_OK;
    }
    snprintf(typed, sizeof typed, "%g", v);
  } else if (is_decimal_number(o->value) && convert_decimal(o->value, &v) &&
             isfinite(v)) {
    *out = v;
    return CLT_OK;
  }
  char qbuf[CLT_QUOTE_BUF];
  return layer_error(a, err, CLT_ERR_FORMAT,
                     "option '%s' expects a finite number such as 0.001 or "
                     "1e-3, got '%s'",
                     key,
                     o->kind != CLT_ARG_TEXT ? typed
                                             : clt_quote_str(o->value, qbuf));
}

clt_status clt_args_get_string(clt_layer_args *a, const char *key, bool required,
                                const char *default_value, const char **out,
                                clt_err *err) {
  if (!a || !key || !out) return bad_arguments(err, "clt_args_get_string");
  clt_layer_arg *o = take_option(a, key);
  if (!o) {
    if (required) return missing(a, key, err);
    *out = default_value;
    return CLT_OK;
  }
  *out = o->value;
  return CLT_OK;
}

clt_status clt_args_get_choice(clt_layer_args *a, const char *key, const char *const *choices,
                                const char *default_value, int *index_out,
                                clt_err *err) {
  if (!a || !key || !choices || !index_out)
    return bad_arguments(err, "clt_args_get_choice");
  int default_index = -1;
  if (default_value) {
    for (int i = 0; choices[i]; i++)
      if (strcmp(choices[i], default_value) == 0) default_index = i;
    if (default_index < 0)
      return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                         "clt_args_get_choice: default '%s' of option '%s' "
                         "is not one of its choices",
                         default_value, key);
  }
  clt_layer_arg *o = take_option(a, key);
  if (!o) {
    if (!default_value) return missing(a, key, err);
    *index_out = default_index;
    return CLT_OK;
  }
  for (int i = 0; choices[i]; i++) {
    if (strcmp(choices[i], o->value) == 0) {
      *index_out = i;
      return CLT_OK;
    }
  }
  char list[1024] = "";
  clt_join_words(choices, ", ", list, sizeof list);
  char hint[256] = "";
  const char *near = clt_closest_word(o->value, choices, SUGGEST_MAX_DISTANCE);
  if (near) snprintf(hint, sizeof hint, "; did you mean '%s'?", near);
  char qbuf[CLT_QUOTE_BUF];
  return layer_error(a, err, CLT_ERR_FORMAT,
                     "option '%s' expects one of %s, got '%s'%s", key, list,
                     clt_quote_str(o->value, qbuf), hint);
}

clt_status clt_args_get_bool(clt_layer_args *a, const char *key, bool default_value, bool *out,
                              clt_err *err) {
  if (!a || !key || !out) return bad_arguments(err, "clt_args_get_bool");
  clt_layer_arg *o = take_option(a, key);
  if (!o) {
    *out = default_value;
    return CLT_OK;
  }
  if (o->kind == CLT_ARG_BOOL) {
    *out = o->b;
    return CLT_OK;
  }
  static const char *const truths[] = {"true", "1", "yes"};
  static const char *const falsehoods[] = {"false", "0", "no"};
  for (size_t i = 0; i < sizeof truths / sizeof truths[0]; i++) {
    if (clt_equal_ignoring_case(o->value, truths[i])) {
      *out = true;
      return CLT_OK;
    }
    if (clt_equal_ignoring_case(o->value, falsehoods[i])) {
      *out = false;
      return CLT_OK;
    }
  }
  char qbuf[CLT_QUOTE_BUF];
  return layer_error(a, err, CLT_ERR_FORMAT,
                     "option '%s' expects true or false (or 1/0, yes/no), "
                     "got '%s'",
                     key, clt_quote_str(o->value, qbuf));
}

/* Parses "AxBxC" into dims (when not NULL). Returns the number of
 * dimensions, or -1 with *why set to a short reason ("" when the syntax
 * itself is wrong). */
static int parse_dims(const char *s, int max_dims, int64_t min,
                      int64_t *dims, const char **why) {
  int n = 0;
  *why = "";
  for (;;) {
    if (!clt_is_digit(*s)) return -1;
    int64_t v = 0;
    for (; clt_is_digit(*s); s++) {
      v = v * 10 + (*s - '0');
      if (v > CLT_ARGS_MAX_DIM) {
        *why = " (a dimension is too large)";
        return -1;
      }
    }
    if (v < min) {
      *why = " (a dimension is 0)";
      return -1;
    }
    if (n == max_dims) {
      *why = " (too many dimensions)";
      return -1;
    }
    if (dims) dims[n] = v;
    n++;
    if (*s == '\0') return n;
    if (*s != 'x') return -1;
    s++;
  }
}

clt_status clt_args_get_dims(clt_layer_args *a, const char *key, bool required, int max_dims,
                              int64_t *dims, int *ndim, clt_err *err) {
  return clt_args_get_dims_min(a, key, required, max_dims, 1, dims, ndim,
                               err);
}

clt_status clt_args_get_dims_min(clt_layer_args *a, const char *key,
                                 bool required, int max_dims, int64_t min,
                                 int64_t *dims, int *ndim, clt_err *err) {
  if (!a || !key || !dims || !ndim || max_dims < 1 || min < 0 || min > 1)
    return bad_arguments(err, "clt_args_get_dims");
  clt_layer_arg *o = take_option(a, key);
  if (!o) {
    if (required) return missing(a, key, err);
    *ndim = 0;
    return CLT_OK;
  }
  const char *why = "";
  if (o->kind == CLT_ARG_DIMS) {
    bool ok = o->ndim >= 1 && o->ndim <= max_dims;
    for (int i = 0; ok && i < o->ndim; i++)
      ok = o->dims[i] >= min && o->dims[i] <= CLT_ARGS_MAX_DIM;
    if (ok) {
      memcpy(dims, o->dims, (size_t)o->ndim * sizeof *dims);
      *ndim = o->ndim;
      return CLT_OK;
    }
    return layer_error(a, err, CLT_ERR_FORMAT,
                       "option '%s' expects 1 to %d positive dimensions, "
                       "got %d of them",
                       key, max_dims, o->ndim);
  }
  /* Validate first so that dims is untouched on failure. */
  int n = parse_dims(o->value, max_dims, min, NULL, &why);
  if (n > 0) {
    parse_dims(o->value, max_dims, min, dims, &why);
    *ndim = n;
    return CLT_OK;
  }
  char what[128];
  const char *sort = min ? "positive integer" : "whole number (0 or more)";
  if (max_dims == 1)
    snprintf(what, sizeof what, "a %s", sort);
  else if (min)
    snprintf(what, sizeof what,
             "1 to %d positive integers joined by 'x' (like 1x28x28)",
             max_dims);
  else
    snprintf(what, sizeof what,
             "1 to %d whole numbers (0 or more) joined by 'x' (like 1x0)",
             max_dims);
  char qbuf[CLT_QUOTE_BUF];
  return layer_error(a, err, CLT_ERR_FORMAT,
                     "option '%s' expects %s, got '%s'%s", key, what,
                     clt_quote_str(o->value, qbuf), why);
}

void clt_args_list_free(char **items, int count) {
  if (!items) return;
  for (int i = 0; i < count; i++) free(items[i]);
  free(items);
}

clt_status clt_args_get_list(clt_layer_args *a, const char *key, char ***items, int *count,
                              clt_err *err) {
  if (!a || !key || !items || !count)
    return bad_arguments(err, "clt_args_get_list");
  *items = NULL;
  *count = 0;
  clt_layer_arg *o = take_option(a, key);
  if (!o) return CLT_OK;

  const char *v = o->value;
  int n = 1;
  bool empty_item = v[0] == ',';
  for (const char *c = v; *c; c++) {
    if (*c != ',') continue;
    n++;
    if (c[1] == ',' || c[1] == '\0') empty_item = true;
  }
  if (empty_item) {
    char qbuf[CLT_QUOTE_BUF];
    return layer_error(a, err, CLT_ERR_FORMAT,
                       "option '%s' expects a comma-separated list such as "
                       "a,b, got '%s' (an empty item)",
                       key, clt_quote_str(v, qbuf));
  }
  char **list = calloc((size_t)n, sizeof *list);
  if (!list) return out_of_memory(err);
  const char *start = v;
  for (int i = 0; i < n; i++) {
    const char *end = strchr(start, ',');
    size_t len = end ? (size_t)(end - start) : strlen(start);
    list[i] = strndup(start, len);
    if (!list[i]) {
      clt_args_list_free(list, i);
      return out_of_memory(err);
    }
    start += len + 1;
  }
  *items = list;
  *count = n;
  return CLT_OK;
}

clt_status clt_args_check_all_used(clt_layer_args *a, const char *const *known_keys,
                                    clt_err *err) {
  if (!a) return bad_arguments(err, "clt_args_check_all_used");
  for (int i = 0; i < a->count; i++) {
    const clt_layer_arg *o = &a->args[i];
    if (o->used) continue;
    if (known_keys) {
      for (const char *const *k = known_keys; *k; k++)
        if (strcmp(*k, o->key) == 0)
          return layer_error(a, err, CLT_ERR_INTERNAL,
                             "option '%s' is known but was never read "
                             "(a bug in cltrain)",
                             o->key);
    }
    char known[1024] = "";
    if (known_keys && known_keys[0]) {
      snprintf(known, sizeof known, " (known: ");
      clt_join_words(known_keys, ", ", known, sizeof known - 2);
      strcat(known, ")");
    } else if (known_keys) {
      snprintf(known, sizeof known, " (%s takes no options)", a->type);
    }
    char hint[256] = "";
    const char *near =
        clt_closest_word(o->key, known_keys, SUGGEST_MAX_DISTANCE);
    if (near) snprintf(hint, sizeof hint, "; did you mean '%s'?", near);
    return layer_error(a, err, CLT_ERR_FORMAT, "unknown option '%s'%s%s",
                       o->key, known, hint);
  }
  return CLT_OK;
}
