#include "io/model_file.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/words.h"

#define DEFAULT_SOURCE_NAME "<model>"

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
static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

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
    char cbuf[16], qbuf[CLT_QUOTE_BUF];
    const char *why = s[i] >= 'A' && s[i] <= 'Z'
                          ? "; names are lowercase"
                          : " (names use a-z, 0-9 and '_' and do not start "
                            "with a digit)";
    return line_error(
        p->err, p->source, p->line, "bad character %s in %s '%s'%s",
        describe_char((unsigned char)s[i], cbuf), what, clt_quote(s, n, qbuf), why);
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
  char qbuf[CLT_QUOTE_BUF];
  size_t next = skip_blanks(line, rest_start, line_len);
  bool more_follows = next < line_len;
  const char *spaces_hint = " (write key=value with no spaces around '=')";

  const char *eq = memchr(tok, '=', len);
  if (!eq) {
    bool hint = more_follows && line[next] == '=';
    return line_error(p->err, p->source, p->line,
                      "expected key=value, got '%s'%s", clt_quote(tok, len, qbuf),
                      hint ? spaces_hint : "");
  }
  if (eq == tok)
    return line_error(p->err, p->source, p->line,
                      "expected key=value, got '%s' (the key is missing)%s",
                      clt_quote(tok, len, qbuf), len == 1 ? spaces_hint : "");

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
                      l->type, key, clt_quote(value, value_len, qbuf));

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
  memset(o, 0, sizeof *o); /* text (CLT_ARG_TEXT), not yet read */
  o->key = dup_range(key, key_len);
  o->value = dup_range(value, value_len);
  o->line = p->line;
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
    char qbuf[CLT_QUOTE_BUF];
    return line_error(p->err, p->source, p->line,
                      "expected a layer type at the start of the line, got "
                      "'%s'",
                      clt_quote(type, type_len, qbuf));
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

