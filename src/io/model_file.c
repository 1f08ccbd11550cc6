#include "io/model_file.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_SOURCE_NAME "<model>"
/* How much of a value a message shows, and the buffer that holds it once
 * escaped (each byte may become "\xNN"). */
#define QUOTE_MAX 80
#define QUOTE_BUF (QUOTE_MAX * 4 + 8)
/* Edits allowed between a typo and the word it is taken for. */
#define SUGGEST_MAX_DISTANCE 2

/* ---- small helpers ------------------------------------------------------ */

static char *dup_range(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

/* Character classes by hand: <ctype.h> depends on the C locale. */
static bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || c == '_'; }
static bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
static char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static bool equal_ignoring_case(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (ascii_lower(*a) != ascii_lower(*b)) return false;
  return *a == *b;
}

/* s[0..n) made safe to print inside quotes: bytes that are not printable
 * ASCII become \xNN, and a long value is cut with "...". */
static const char *quote(const char *s, size_t n, char buf[QUOTE_BUF]) {
  size_t out = 0;
  size_t shown = n < QUOTE_MAX ? n : QUOTE_MAX;
  for (size_t i = 0; i < shown; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c < 0x7f) {
      buf[out++] = (char)c;
    } else {
      snprintf(buf + out, 5, "\\x%02x", c);
      out += 4;
    }
  }
  if (shown < n) {
    memcpy(buf + out, "...", 3);
    out += 3;
  }
  buf[out] = '\0';
  return buf;
}

static const char *quote_str(const char *s, char buf[QUOTE_BUF]) {
  return quote(s, strlen(s), buf);
}

/* One character for a message: 'c' when printable, else its code. */
static const char *describe_char(unsigned char c, char buf[16]) {
  if (c > 0x20 && c < 0x7f)
    snprintf(buf, 16, "'%c'", (char)c);
  else
    snprintf(buf, 16, "0x%02x", c);
  return buf;
}

/* "<file>:<line>: <message>" */
__attribute__((format(printf, 4, 5))) static clt_status line_error(
    clt_err *err, const char *source, int line, const char *fmt, ...) {
  char msg[CLT_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return clt_err_set(err, CLT_ERR_FORMAT, "%s:%d: %s", source, line, msg);
}

/* "<file>:<line>: <type>: <message>" */
__attribute__((format(printf, 5, 6))) static clt_status layer_error(
    const clt_model_desc *d, const clt_model_layer *l, clt_err *err,
    clt_status status, const char *fmt, ...) {
  char msg[CLT_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *source =
      d && d->source_name ? d->source_name : DEFAULT_SOURCE_NAME;
  return clt_err_set(err, status, "%s:%d: %s: %s", source, l->line, l->type,
                     msg);
}

/* ---- edit distance ------------------------------------------------------ */

/* Optimal-string-alignment distance: insertions, deletions, substitutions
 * and swaps of neighbours each cost one, so "untis" is one edit from
 * "units". Case is ignored, so "ReLU" is close to "relu". Returns limit + 1
 * when the lengths alone differ by more than limit (candidates are short words,
 * so the full table is cheap). */
static int edit_distance(const char *a, const char *b, int limit) {
  size_t la = strlen(a), lb = strlen(b);
  size_t diff = la > lb ? la - lb : lb - la;
  if (diff > (size_t)limit) return limit + 1;
  int *rows = malloc(3 * (lb + 1) * sizeof *rows);
  if (!rows) return limit + 1; /* no hint is better than no error */
  int *before = rows, *prev = rows + lb + 1, *cur = rows + 2 * (lb + 1);
  for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int cost = ascii_lower(a[i - 1]) == ascii_lower(b[j - 1]) ? 0 : 1;
      int best = prev[j - 1] + cost;
      if (prev[j] + 1 < best) best = prev[j] + 1;
      if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
      if (i > 1 && j > 1 && ascii_lower(a[i - 1]) == ascii_lower(b[j - 2]) &&
          ascii_lower(a[i - 2]) == ascii_lower(b[j - 1]) &&
          before[j - 2] + 1 < best)
        best = before[j - 2] + 1;
      cur[j] = best;
    }
    int *t = before;
    before = prev;
    prev = cur;
    cur = t;
  }
  int result = prev[lb];
  free(rows);
  return result;
}

const char *clt_model_closest(const char *word, const char *const *candidates,
                              int max_distance) {
  if (!word || !candidates || max_distance < 0) return NULL;
  /* Replacing every letter of a short word is not a typo of it. */
  size_t word_len = strlen(word);
  if ((size_t)max_distance >= word_len)
    max_distance = word_len > 0 ? (int)word_len - 1 : 0;
  const char *best = NULL;
  int best_distance = max_distance + 1;
  for (const char *const *c = candidates; *c; c++) {
    int dist = edit_distance(word, *c, max_distance);
    if (dist < best_distance && strcmp(word, *c) != 0) {
      best = *c;
      best_distance = dist;
    }
  }
  return best;
}

/* Appends "a, b, c" (choices joined by sep) to buf without overflowing. */
static void join_words(const char *const *words, const char *sep, char *buf,
                       size_t size) {
  size_t len = strlen(buf);
  for (const char *const *w = words; *w; w++) {
    int n = snprintf(buf + len, size - len, "%s%s", w == words ? "" : sep, *w);
    if (n < 0 || (size_t)n >= size - len) return;
    len += (size_t)n;
  }
}

/* ---- parsing ------------------------------------------------------------ */

typedef struct parser {
  const char *source;
  clt_model_desc *desc;
  size_t layer_capacity;
  clt_err *err;
  int line;
} parser;

static clt_status out_of_memory(clt_err *err) {
  return clt_err_set(err, CLT_ERR_HOST_MEMORY,
                     "out of host memory while reading a model file");
}

/* Checks that s[0..n) is a type or key: [a-z_][a-z0-9_]*. */
static clt_status check_name(parser *p, const char *what, const char *s,
                             size_t n) {
  for (size_t i = 0; i < n; i++) {
    bool ok = i == 0 ? is_name_start(s[i]) : is_name_char(s[i]);
    if (ok) continue;
    char cbuf[16], qbuf[QUOTE_BUF];
    const char *why = s[i] >= 'A' && s[i] <= 'Z'
                          ? "; names are lowercase"
                          : " (names use a-z, 0-9 and '_' and do not start "
                            "with a digit)";
    return line_error(
        p->err, p->source, p->line, "bad character %s in %s '%s'%s",
        describe_char((unsigned char)s[i], cbuf), what, quote(s, n, qbuf), why);
  }
  return CLT_OK;
}

static clt_status add_layer(parser *p, const char *type, size_t n) {
  clt_model_desc *d = p->desc;
  if ((size_t)d->layer_count == p->layer_capacity) {
    size_t cap = p->layer_capacity ? p->layer_capacity * 2 : 16;
    clt_model_layer *grown = realloc(d->layers, cap * sizeof *grown);
    if (!grown) return out_of_memory(p->err);
    d->layers = grown;
    p->layer_capacity = cap;
  }
  clt_model_layer *l = &d->layers[d->layer_count];
  memset(l, 0, sizeof *l);
  l->line = p->line;
  l->type = dup_range(type, n);
  if (!l->type) return out_of_memory(p->err);
  d->layer_count++;
  return CLT_OK;
}

/* Index of the first non-blank byte of line[i..n), or n. */
static size_t skip_blanks(const char *line, size_t i, size_t n) {
  while (i < n && is_blank(line[i])) i++;
  return i;
}

/* Parses token tok[0..len) as key=value for layer l; rest_start is where
 * the line goes on after the token (for the "no spaces around '='" hint). */
static clt_status parse_option(parser *p, clt_model_layer *l, const char *tok,
                               size_t len, const char *line, size_t rest_start,
                               size_t line_len) {
  char qbuf[QUOTE_BUF];
  size_t next = skip_blanks(line, rest_start, line_len);
  bool more_follows = next < line_len;
  const char *spaces_hint = " (write key=value with no spaces around '=')";

  const char *eq = memchr(tok, '=', len);
  if (!eq) {
    bool hint = more_follows && line[next] == '=';
    return line_error(p->err, p->source, p->line,
                      "expected key=value, got '%s'%s", quote(tok, len, qbuf),
                      hint ? spaces_hint : "");
  }
  if (eq == tok)
    return line_error(p->err, p->source, p->line,
                      "expected key=value, got '%s' (the key is missing)%s",
                      quote(tok, len, qbuf), len == 1 ? spaces_hint : "");

  size_t key_len = (size_t)(eq - tok);
  const char *value = eq + 1;
  size_t value_len = len - key_len - 1;
  CLT_TRY(check_name(p, "option name", tok, key_len));

  char key[CLT_MODEL_MAX_LINE + 1];
  memcpy(key, tok, key_len);
  key[key_len] = '\0';
  if (value_len == 0)
    return line_error(p->err, p->source, p->line,
                      "%s: option '%s' has an empty value%s", l->type, key,
                      more_follows ? spaces_hint : "");
  if (memchr(value, '=', value_len))
    return line_error(p->err, p->source, p->line,
                      "%s: bad character '=' in the value of option '%s': "
                      "'%s'",
                      l->type, key, quote(value, value_len, qbuf));

  for (int i = 0; i < l->option_count; i++)
    if (strcmp(l->options[i].key, key) == 0)
      return line_error(p->err, p->source, p->line,
                        "%s: duplicate option '%s' (given twice on one line)",
                        l->type, key);
  if (l->option_count >= CLT_MODEL_MAX_OPTIONS)
    return line_error(p->err, p->source, p->line,
                      "%s: too many options (the most is %d)", l->type,
                      CLT_MODEL_MAX_OPTIONS);

  if (l->option_count % 8 == 0) {
    size_t cap = (size_t)l->option_count + 8;
    clt_model_option *grown = realloc(l->options, cap * sizeof *grown);
    if (!grown) return out_of_memory(p->err);
    l->options = grown;
  }
  clt_model_option *o = &l->options[l->option_count];
  o->key = dup_range(key, key_len);
  o->value = dup_range(value, value_len);
  o->line = p->line;
  o->used = false;
  if (!o->key || !o->value) {
    free(o->key);
    free(o->value);
    return out_of_memory(p->err);
  }
  l->option_count++;
  return CLT_OK;
}

/* Parses one line (without its '\n' and comment). */
static clt_status parse_line(parser *p, const char *line, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)line[i];
    if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) {
      char cbuf[16];
      return line_error(p->err, p->source, p->line,
                        "bad character %s (a control character) at column %zu",
                        describe_char(c, cbuf), i + 1);
    }
  }

  size_t i = skip_blanks(line, 0, n);
  if (i == n) return CLT_OK; /* blank or comment only */

  size_t start = i;
  while (i < n && !is_blank(line[i])) i++;
  const char *type = line + start;
  size_t type_len = i - start;
  if (memchr(type, '=', type_len)) {
    char qbuf[QUOTE_BUF];
    return line_error(p->err, p->source, p->line,
                      "expected a layer type at the start of the line, got "
                      "'%s'",
                      quote(type, type_len, qbuf));
  }
  CLT_TRY(check_name(p, "layer type", type, type_len));
  CLT_TRY(add_layer(p, type, type_len));
  clt_model_layer *l = &p->desc->layers[p->desc->layer_count - 1];

  for (;;) {
    i = skip_blanks(line, i, n);
    if (i == n) break;
    start = i;
    while (i < n && !is_blank(line[i])) i++;
    CLT_TRY(parse_option(p, l, line + start, i - start, line, i, n));
  }
  return CLT_OK;
}

/* Parses text[0..len) (NUL-free) into p->desc. */
static clt_status parse_all(parser *p, const char *text, size_t len) {
  size_t pos = 0;
  /* Editors on Windows may start a UTF-8 file with a byte-order mark. */
  if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) pos = 3;
  p->line = 0;
  while (pos < len) {
    p->line++;
    const char *line = text + pos;
    const char *nl = memchr(line, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - line) : len - pos;
    pos += n + (nl ? 1 : 0);
    if (n > CLT_MODEL_MAX_LINE)
      return line_error(p->err, p->source, p->line,
                        "line is %zu characters long; the most is %d", n,
                        CLT_MODEL_MAX_LINE);
    const char *hash = memchr(line, '#', n);
    if (hash) n = (size_t)(hash - line);
    CLT_TRY(parse_line(p, line, n));
  }
  if (p->desc->layer_count == 0)
    return clt_err_set(p->err, CLT_ERR_FORMAT,
                       "%s: no layers (the file is empty or holds only "
                       "comments)",
                       p->source);
  return CLT_OK;
}

/* Takes ownership of text (len bytes plus a NUL); fills *out. */
static clt_status parse_owned(char *text, size_t len, const char *source_name,
                              clt_model_desc *out, clt_err *err) {
  out->text = text;
  out->source_name = dup_range(source_name, strlen(source_name));
  if (!out->source_name) {
    clt_model_desc_free(out);
    return out_of_memory(err);
  }
  const char *nul = memchr(text, '\0', len);
  if (nul) {
    int line = 1;
    for (const char *c = text; c < nul; c++)
      if (*c == '\n') line++;
    clt_status st = line_error(err, source_name, line,
                               "NUL byte in the file (is it a binary file?)");
    clt_model_desc_free(out);
    return st;
  }
  if (len > CLT_MODEL_MAX_FILE_BYTES) {
    clt_status st = clt_err_set(err, CLT_ERR_FORMAT,
                                "%s: the file is larger than %d bytes; "
                                "a model file is a few lines of text",
                                source_name, CLT_MODEL_MAX_FILE_BYTES);
    clt_model_desc_free(out);
    return st;
  }
  parser p = {.source = out->source_name, .desc = out, .err = err};
  clt_status st = parse_all(&p, text, len);
  if (st != CLT_OK) clt_model_desc_free(out);
  return st;
}

clt_status clt_model_parse_text(const char *text, const char *source_name,
                                clt_model_desc *out, clt_err *err) {
  if (!out)
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "clt_model_parse_text: out is NULL");
  memset(out, 0, sizeof *out);
  if (!text)
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "clt_model_parse_text: text is NULL");
  if (!source_name) source_name = DEFAULT_SOURCE_NAME;
  size_t len = strlen(text);
  char *copy = dup_range(text, len);
  if (!copy) return out_of_memory(err);
  return parse_owned(copy, len, source_name, out, err);
}

/* Reads the whole file (at most CLT_MODEL_MAX_FILE_BYTES + 1 bytes, so that
 * a larger one is recognised) into a NUL-terminated buffer. */
static clt_status read_file(const char *path, char **text, size_t *len,
                            clt_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return clt_err_set(err, CLT_ERR_IO, "cannot open model file '%s': %s", path,
                       strerror(errno));
  size_t cap = 4096, used = 0;
  char *buf = malloc(cap);
  if (!buf) {
    fclose(f);
    return out_of_memory(err);
  }
  for (;;) {
    if (used + 1 == cap) {
      if (used > CLT_MODEL_MAX_FILE_BYTES) break;
      char *grown = realloc(buf, cap * 2);
      if (!grown) {
        free(buf);
        fclose(f);
        return out_of_memory(err);
      }
      buf = grown;
      cap *= 2;
    }
    size_t got = fread(buf + used, 1, cap - 1 - used, f);
    used += got;
    if (got == 0) {
      if (ferror(f)) {
        int e = errno;
        free(buf);
        fclose(f);
        return clt_err_set(err, CLT_ERR_IO, "cannot read model file '%s': %s",
                           path, strerror(e));
      }
      break;
    }
  }
  fclose(f);
  buf[used] = '\0';
  *text = buf;
  *len = used;
  return CLT_OK;
}

clt_status clt_model_parse_file(const char *path, clt_model_desc *out,
                                clt_err *err) {
  if (!out)
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "clt_model_parse_file: out is NULL");
  memset(out, 0, sizeof *out);
  if (!path)
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "clt_model_parse_file: path is NULL");
  char *text = NULL;
  size_t len = 0;
  CLT_TRY(read_file(path, &text, &len, err));
  return parse_owned(text, len, path, out, err);
}

void clt_model_desc_free(clt_model_desc *d) {
  if (!d) return;
  for (int i = 0; i < d->layer_count; i++) {
    clt_model_layer *l = &d->layers[i];
    for (int j = 0; j < l->option_count; j++) {
      free(l->options[j].key);
      free(l->options[j].value);
    }
    free(l->options);
    free(l->type);
  }
  free(d->layers);
  free(d->source_name);
  free(d->text);
  memset(d, 0, sizeof *d);
}

/* ---- getters ------------------------------------------------------------ */

/* The option named key, marked used; NULL when absent. */
static clt_model_option *take_option(clt_model_layer *l, const char *key) {
  for (int i = 0; i < l->option_count; i++) {
    if (strcmp(l->options[i].key, key) == 0) {
      l->options[i].used = true;
      return &l->options[i];
    }
  }
  return NULL;
}

static clt_status bad_arguments(clt_err *err, const char *fn) {
  return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
}

static clt_status missing(const clt_model_desc *d, const clt_model_layer *l,
                          const char *key, clt_err *err) {
  return layer_error(d, l, err, CLT_ERR_FORMAT, "missing required option '%s'",
                     key);
}

/* Parses a whole decimal integer with optional sign. Sets *overflow when
 * the digits are fine but the number does not fit in int64_t. */
static bool parse_int64(const char *s, int64_t *out, bool *overflow) {
  *overflow = false;
  bool negative = false;
  if (*s == '+' || *s == '-') negative = *s++ == '-';
  if (!is_digit(*s)) return false;
  uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  uint64_t v = 0;
  for (; *s; s++) {
    if (!is_digit(*s)) return false;
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

clt_status clt_model_get_int(const clt_model_desc *d, clt_model_layer *l,
                             const char *key, bool required,
                             int64_t default_value, int64_t min_value,
                             int64_t *out, clt_err *err) {
  if (!l || !key || !out) return bad_arguments(err, "clt_model_get_int");
  clt_model_option *o = take_option(l, key);
  if (!o) {
    if (required) return missing(d, l, key, err);
    *out = default_value;
    return CLT_OK;
  }
  int64_t v = 0;
  bool overflow = false;
  bool ok = parse_int64(o->value, &v, &overflow);
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
  char qbuf[QUOTE_BUF];
  return layer_error(
      d, l, err, CLT_ERR_FORMAT, "option '%s' expects %s, got '%s'%s", key,
      what, quote_str(o->value, qbuf), overflow ? " (out of range)" : "");
}

/* Accepts [+-]? (digits [. digits*] | . digits) ([eE] [+-]? digits)? only,
 * which rules out inf, nan, hexadecimal and stray text. */
static bool is_decimal_number(const char *s) {
  if (*s == '+' || *s == '-') s++;
  int mantissa_digits = 0;
  while (is_digit(*s)) s++, mantissa_digits++;
  if (*s == '.') {
    s++;
    while (is_digit(*s)) s++, mantissa_digits++;
  }
  if (mantissa_digits == 0) return false;
  if (*s == 'e' || *s == 'E') {
    s++;
    if (*s == '+' || *s == '-') s++;
    if (!is_digit(*s)) return false;
    while (is_digit(*s)) s++;
  }
  return *s == '\0';
}

/* strtod of a string already checked by is_decimal_number, reading '.' as
 * the decimal point even when the program has set a locale that uses ','. */
static bool convert_decimal(const char *s, double *out) {
  const char *point = localeconv()->decimal_point;
  size_t point_len = point ? strlen(point) : 0;
  size_t len = strlen(s);
  if (point_len == 0 || point_len > 8 || len > CLT_MODEL_MAX_LINE) {
    point = ".";
    point_len = 1;
  }
  char buf[CLT_MODEL_MAX_LINE + 16];
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

clt_status clt_model_get_float(const clt_model_desc *d, clt_model_layer *l,
                               const char *key, bool required,
                               double default_value, double *out,
                               clt_err *err) {
  if (!l || !key || !out) return bad_arguments(err, "clt_model_get_float");
  clt_model_option *o = take_option(l, key);
  if (!o) {
    if (required) return missing(d, l, key, err);
    *out = default_value;
    return CLT_OK;
  }
  double v = 0.0;
  if (is_decimal_number(o->value) && convert_decimal(o->value, &v) &&
      isfinite(v)) {
    *out = v;
    return CLT_OK;
  }
  char qbuf[QUOTE_BUF];
  return layer_error(d, l, err, CLT_ERR_FORMAT,
                     "option '%s' expects a finite number such as 0.001 or "
                     "1e-3, got '%s'",
                     key, quote_str(o->value, qbuf));
}

clt_status clt_model_get_string(const clt_model_desc *d, clt_model_layer *l,
                                const char *key, bool required,
                                const char *default_value, const char **out,
                                clt_err *err) {
  if (!l || !key || !out) return bad_arguments(err, "clt_model_get_string");
  clt_model_option *o = take_option(l, key);
  if (!o) {
    if (required) return missing(d, l, key, err);
    *out = default_value;
    return CLT_OK;
  }
  *out = o->value;
  return CLT_OK;
}

clt_status clt_model_get_choice(const clt_model_desc *d, clt_model_layer *l,
                                const char *key, const char *const *choices,
                                const char *default_value, int *index_out,
                                clt_err *err) {
  if (!l || !key || !choices || !index_out)
    return bad_arguments(err, "clt_model_get_choice");
  int default_index = -1;
  if (default_value) {
    for (int i = 0; choices[i]; i++)
      if (strcmp(choices[i], default_value) == 0) default_index = i;
    if (default_index < 0)
      return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                         "clt_model_get_choice: default '%s' of option '%s' "
                         "is not one of its choices",
                         default_value, key);
  }
  clt_model_option *o = take_option(l, key);
  if (!o) {
    if (!default_value) return missing(d, l, key, err);
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
  join_words(choices, ", ", list, sizeof list);
  char hint[256] = "";
  const char *near = clt_model_closest(o->value, choices, SUGGEST_MAX_DISTANCE);
  if (near) snprintf(hint, sizeof hint, "; did you mean '%s'?", near);
  char qbuf[QUOTE_BUF];
  return layer_error(d, l, err, CLT_ERR_FORMAT,
                     "option '%s' expects one of %s, got '%s'%s", key, list,
                     quote_str(o->value, qbuf), hint);
}

clt_status clt_model_get_bool(const clt_model_desc *d, clt_model_layer *l,
                              const char *key, bool default_value, bool *out,
                              clt_err *err) {
  if (!l || !key || !out) return bad_arguments(err, "clt_model_get_bool");
  clt_model_option *o = take_option(l, key);
  if (!o) {
    *out = default_value;
    return CLT_OK;
  }
  static const char *const truths[] = {"true", "1", "yes"};
  static const char *const falsehoods[] = {"false", "0", "no"};
  for (size_t i = 0; i < sizeof truths / sizeof truths[0]; i++) {
    if (equal_ignoring_case(o->value, truths[i])) {
      *out = true;
      return CLT_OK;
    }
    if (equal_ignoring_case(o->value, falsehoods[i])) {
      *out = false;
      return CLT_OK;
    }
  }
  char qbuf[QUOTE_BUF];
  return layer_error(d, l, err, CLT_ERR_FORMAT,
                     "option '%s' expects true or false (or 1/0, yes/no), "
                     "got '%s'",
                     key, quote_str(o->value, qbuf));
}

/* Parses "AxBxC" into dims (when not NULL). Returns the number of
 * dimensions, or -1 with *why set to a short reason ("" when the syntax
 * itself is wrong). */
static int parse_dims(const char *s, int max_dims, int64_t *dims,
                      const char **why) {
  int n = 0;
  *why = "";
  for (;;) {
    if (!is_digit(*s)) return -1;
    int64_t v = 0;
    for (; is_digit(*s); s++) {
      v = v * 10 + (*s - '0');
      if (v > CLT_MODEL_MAX_DIM) {
        *why = " (a dimension is too large)";
        return -1;
      }
    }
    if (v == 0) {
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

clt_status clt_model_get_dims(const clt_model_desc *d, clt_model_layer *l,
                              const char *key, bool required, int max_dims,
                              int64_t *dims, int *ndim, clt_err *err) {
  if (!l || !key || !dims || !ndim || max_dims < 1)
    return bad_arguments(err, "clt_model_get_dims");
  clt_model_option *o = take_option(l, key);
  if (!o) {
    if (required) return missing(d, l, key, err);
    *ndim = 0;
    return CLT_OK;
  }
  const char *why = "";
  /* Validate first so that dims is untouched on failure. */
  int n = parse_dims(o->value, max_dims, NULL, &why);
  if (n > 0) {
    parse_dims(o->value, max_dims, dims, &why);
    *ndim = n;
    return CLT_OK;
  }
  char what[128];
  if (max_dims == 1)
    snprintf(what, sizeof what, "a positive integer");
  else
    snprintf(what, sizeof what,
             "1 to %d positive integers joined by 'x' (like 1x28x28)",
             max_dims);
  char qbuf[QUOTE_BUF];
  return layer_error(d, l, err, CLT_ERR_FORMAT,
                     "option '%s' expects %s, got '%s'%s", key, what,
                     quote_str(o->value, qbuf), why);
}

void clt_model_list_free(char **items, int count) {
  if (!items) return;
  for (int i = 0; i < count; i++) free(items[i]);
  free(items);
}

clt_status clt_model_get_list(const clt_model_desc *d, clt_model_layer *l,
                              const char *key, char ***items, int *count,
                              clt_err *err) {
  if (!l || !key || !items || !count)
    return bad_arguments(err, "clt_model_get_list");
  *items = NULL;
  *count = 0;
  clt_model_option *o = take_option(l, key);
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
    char qbuf[QUOTE_BUF];
    return layer_error(d, l, err, CLT_ERR_FORMAT,
                       "option '%s' expects a comma-separated list such as "
                       "a,b, got '%s' (an empty item)",
                       key, quote_str(v, qbuf));
  }
  char **list = calloc((size_t)n, sizeof *list);
  if (!list) return out_of_memory(err);
  const char *start = v;
  for (int i = 0; i < n; i++) {
    const char *end = strchr(start, ',');
    size_t len = end ? (size_t)(end - start) : strlen(start);
    list[i] = dup_range(start, len);
    if (!list[i]) {
      clt_model_list_free(list, i);
      return out_of_memory(err);
    }
    start += len + 1;
  }
  *items = list;
  *count = n;
  return CLT_OK;
}

clt_status clt_model_check_all_used(const clt_model_desc *d,
                                    const clt_model_layer *l,
                                    const char *const *known_keys,
                                    clt_err *err) {
  if (!l) return bad_arguments(err, "clt_model_check_all_used");
  for (int i = 0; i < l->option_count; i++) {
    const clt_model_option *o = &l->options[i];
    if (o->used) continue;
    if (known_keys) {
      for (const char *const *k = known_keys; *k; k++)
        if (strcmp(*k, o->key) == 0)
          return layer_error(d, l, err, CLT_ERR_INTERNAL,
                             "option '%s' is known but was never read "
                             "(a bug in cltrain)",
                             o->key);
    }
    char known[1024] = "";
    if (known_keys && known_keys[0]) {
      snprintf(known, sizeof known, " (known: ");
      join_words(known_keys, ", ", known, sizeof known - 2);
      strcat(known, ")");
    } else if (known_keys) {
      snprintf(known, sizeof known, " (%s takes no options)", l->type);
    }
    char hint[256] = "";
    const char *near =
        clt_model_closest(o->key, known_keys, SUGGEST_MAX_DISTANCE);
    if (near) snprintf(hint, sizeof hint, "; did you mean '%s'?", near);
    return layer_error(d, l, err, CLT_ERR_FORMAT, "unknown option '%s'%s%s",
                       o->key, known, hint);
  }
  return CLT_OK;
}
