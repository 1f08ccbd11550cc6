#include "io/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deeper nesting than this is refused even if asked for: skipping recurses
 * once per level, and the stack must stay small. */
#define JSON_DEPTH_CAP 1024

static bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static void skip_space(clt_json_reader *r) {
  while (r->pos < r->len && is_space(r->text[r->pos])) r->pos++;
}

static bool at_byte(const clt_json_reader *r, size_t pos, char c) {
  return pos < r->len && r->text[pos] == c;
}

/* What sits at pos, for messages: "'x'", "byte 0x0a" or "end of input". */
static void describe_at(const clt_json_reader *r, size_t pos, char *out,
                        size_t n) {
  if (pos >= r->len) {
    snprintf(out, n, "end of input");
    return;
  }
  unsigned char c = (unsigned char)r->text[pos];
  if (c > 0x20 && c < 0x7f)
    snprintf(out, n, "'%c'", c);
  else
    snprintf(out, n, "byte 0x%02x", c);
}

void clt_json_reader_init(clt_json_reader *r, const char *text, size_t len,
                          int max_depth) {
  memset(r, 0, sizeof *r);
  r->text = text;
  r->len = text ? len : 0;
  if (max_depth <= 0) max_depth = CLT_JSON_DEFAULT_MAX_DEPTH;
  r->max_depth = max_depth < JSON_DEPTH_CAP ? max_depth : JSON_DEPTH_CAP;
}

bool clt_json_fail(clt_json_reader *r, size_t pos, const char *fmt, ...) {
  if (r->failed) return false;
  r->failed = true;
  r->error_pos = pos;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->error, sizeof r->error, fmt, ap);
  va_end(ap);
  return false;
}

clt_json_type clt_json_peek(clt_json_reader *r) {
  if (r->failed) return CLT_JSON_NONE;
  skip_space(r);
  if (r->pos >= r->len) return CLT_JSON_NONE;
  char c = r->text[r->pos];
  switch (c) {
  case '{': return CLT_JSON_OBJECT;
  case '[': return CLT_JSON_ARRAY;
  case '"': return CLT_JSON_STRING;
  case 't':
  case 'f': return CLT_JSON_BOOL;
  case 'n': return CLT_JSON_NULL;
  default: return c == '-' || is_digit(c) ? CLT_JSON_NUMBER : CLT_JSON_NONE;
  }
}

const char *clt_json_type_name(clt_json_type type) {
  switch (type) {
  case CLT_JSON_NULL: return "null";
  case CLT_JSON_BOOL: return "a boolean";
  case CLT_JSON_NUMBER: return "a number";
  case CLT_JSON_STRING: return "a string";
  case CLT_JSON_ARRAY: return "an array";
  case CLT_JSON_OBJECT: return "an object";
  case CLT_JSON_NONE: break;
  }
  return "nothing";
}

/* Fails unless the next value is of the given type; `what` names what was
 * expected ("a string key"). */
static bool expect_type(clt_json_reader *r, clt_json_type type,
                        const char *what) {
  clt_json_type found = clt_json_peek(r);
  if (r->failed) return false;
  if (found == type) return true;
  char desc[32];
  if (found == CLT_JSON_NONE)
    describe_at(r, r->pos, desc, sizeof desc);
  else
    snprintf(desc, sizeof desc, "%s", clt_json_type_name(found));
  return clt_json_fail(r, r->pos, "expected %s, found %s", what, desc);
}

static bool enter(clt_json_reader *r, clt_json_type type) {
  if (!expect_type(r, type, clt_json_type_name(type))) return false;
  if (r->depth >= r->max_depth)
    return clt_json_fail(r, r->pos, "nesting deeper than %d levels",
                         r->max_depth);
  r->pos++;
  r->depth++;
  r->first = true;
  return true;
}

bool clt_json_enter_object(clt_json_reader *r) {
  return enter(r, CLT_JSON_OBJECT);
}

bool clt_json_enter_array(clt_json_reader *r) {
  return enter(r, CLT_JSON_ARRAY);
}

/* Consumes the ',' before a member, or the closing byte. True when a
 * member follows. `first` is per reader, not per level: any nested
 * container a member holds has been closed (clearing it) by the time the
 * caller asks for the next member, and a scalar never sets it. */
static bool next_member(clt_json_reader *r, char close, const char *what) {
  if (r->failed) return false;
  if (r->depth == 0)
    return clt_json_fail(r, r->pos, "not inside an object or array");
  skip_space(r);
  if (at_byte(r, r->pos, close)) {
    r->pos++;
    r->depth--;
    r->first = false;
    return false;
  }
  if (!r->first) {
    if (!at_byte(r, r->pos, ',')) {
      char desc[32];
      describe_at(r, r->pos, desc, sizeof desc);
      return clt_json_fail(r, r->pos, "expected ',' or '%c' after %s, found %s",
                           close, what, desc);
    }
    r->pos++;
  }
  r->first = false;
  return true;
}

bool clt_json_next_item(clt_json_reader *r) {
  return next_member(r, ']', "an array element");
}

/* ------------------------------------------------------------------------ */
/* Strings                                                                   */

/* Length of the well-formed UTF-8 sequence at s (n bytes available), 0 if
 * it is not one. The ranges are those of RFC 3629's table, which exclude
 * overlong forms, surrogates and code points above U+10FFFF. */
static size_t utf8_sequence(const unsigned char *s, size_t n) {
  unsigned char c = s[0], lo = 0x80, hi = 0xbf;
  size_t k;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    k = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    k = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    k = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (n < k || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < k; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  return k;
}

bool clt_json_utf8_valid(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    size_t k = utf8_sequence(u + i, n - i);
    if (k == 0) return false;
    i += k;
  }
  return true;
}

static size_t utf8_encode(uint32_t cp, char *out) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xc0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xe0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  out[0] = (char)(0xf0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  out[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* Reads the four hex digits at pos; false if they are not there. */
static bool read_hex4(const clt_json_reader *r, size_t pos, uint32_t *out) {
  if (pos > r->len || r->len - pos < 4) return false;
  uint32_t v = 0;
  for (size_t i = 0; i < 4; i++) {
    char c = r->text[pos + i];
    uint32_t d;
    if (is_digit(c))
      d = (uint32_t)(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = (uint32_t)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      d = (uint32_t)(c - 'A' + 10);
    else
      return false;
    v = v * 16 + d;
  }
  *out = v;
  return true;
}

/* Decodes the \u escape at *p (the backslash) into out, advancing *p. */
static bool scan_unicode_escape(clt_json_reader *r, size_t *p, char *out,
                                size_t *nout) {
  size_t at = *p;
  uint32_t cp, low;
  if (!read_hex4(r, at + 2, &cp))
    return clt_json_fail(r, at,
                         "invalid \\u escape (four hex digits "
                         "expected)");
  size_t used = 6;
  if (cp >= 0xdc00 && cp <= 0xdfff)
    return clt_json_fail(r, at, "unpaired surrogate \\u%04X", (unsigned)cp);
  if (cp >= 0xd800 && cp <= 0xdbff) {
    /* UTF-16 surrogate pair: JSON's only way to escape U+10000 and up. */
    if (!at_byte(r, at + 6, '\\') || !at_byte(r, at + 7, 'u') ||
        !read_hex4(r, at + 8, &low) || low < 0xdc00 || low > 0xdfff)
      return clt_json_fail(r, at, "unpaired surrogate \\u%04X", (unsigned)cp);
    cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    used = 12;
  }
  *nout = utf8_encode(cp, out);
  *p = at + used;
  return true;
}

/* Decodes the escape at *p (the backslash) into out (up to 4 bytes). */
static bool scan_escape(clt_json_reader *r, size_t *p, char *out,
                        size_t *nout) {
  size_t at = *p;
  if (at + 1 >= r->len) return clt_json_fail(r, at, "unterminated string");
  char e = r->text[at + 1], c;
  switch (e) {
  case '"':
  case '\\':
  case '/': c = e; break;
  case 'b': c = '\b'; break;
  case 'f': c = '\f'; break;
  case 'n': c = '\n'; break;
  case 'r': c = '\r'; break;
  case 't': c = '\t'; break;
  case 'u': return scan_unicode_escape(r, p, out, nout);
  default: {
    char desc[32];
    describe_at(r, at + 1, desc, sizeof desc);
    return clt_json_fail(r, at, "invalid escape: backslash before %s", desc);
  }
  }
  out[0] = c;
  *nout = 1;
  *p = at + 2;
  return true;
}

/* Scans the string whose opening quote is at r->pos without moving r->pos.
 * Writes the decoded bytes to out unless it is NULL; sets *decoded_len and
 * *end (the byte after the closing quote). */
static bool scan_string(clt_json_reader *r, char *out, size_t *decoded_len,
                        size_t *end) {
  size_t p = r->pos + 1, n = 0;
  const unsigned char *u = (const unsigned char *)r->text;
  for (;;) {
    if (p >= r->len) return clt_json_fail(r, r->pos, "unterminated string");
    unsigned char c = u[p];
    char buf[4];
    size_t k = 0;
    if (c == '"') break;
    if (c < 0x20)
      return clt_json_fail(r, p, "control character 0x%02x inside a string", c);
    if (c == '\\') {
      if (!scan_escape(r, &p, buf, &k)) return false;
      if (out) memcpy(out + n, buf, k);
      n += k;
      continue;
    }
    k = utf8_sequence(u + p, r->len - p);
    if (k == 0) return clt_json_fail(r, p, "invalid UTF-8 inside a string");
    if (out) memcpy(out + n, u + p, k);
    n += k;
    p += k;
  }
  *decoded_len = n;
  *end = p + 1;
  return true;
}

/* Reads the string at r->pos; out NULL skips it without allocating. */
static bool take_string(clt_json_reader *r, char **out, size_t *len) {
  size_t n, end;
  if (out) *out = NULL;
  if (!scan_string(r, NULL, &n, &end)) return false;
  if (out) {
    /* An escape never decodes to more bytes than it takes, so n is at
     * most the input's length: no size taken from the input can make
     * this allocation larger than the input itself. */
    char *s = malloc(n + 1);
    if (!s) return clt_json_fail(r, r->pos, "out of memory");
    (void)scan_string(r, s, &n, &end); /* cannot fail: it just passed */
    s[n] = '\0';
    *out = s;
  }
  if (len) *len = n;
  r->pos = end;
  return true;
}

bool clt_json_read_string(clt_json_reader *r, char **out, size_t *len) {
  if (out) *out = NULL;
  if (!expect_type(r, CLT_JSON_STRING, "a string")) return false;
  return take_string(r, out, len);
}

/* Object keys; key NULL skips the key without allocating. */
static bool next_key(clt_json_reader *r, char **key, size_t *key_len) {
  if (key) *key = NULL;
  if (!next_member(r, '}', "an object member")) return false;
  if (!expect_type(r, CLT_JSON_STRING, "a string key")) return false;
  if (!take_string(r, key, key_len)) return false;
  skip_space(r);
  if (!at_byte(r, r->pos, ':')) {
    char desc[32];
    describe_at(r, r->pos, desc, sizeof desc);
    if (key) {
      free(*key);
      *key = NULL;
    }
    return clt_json_fail(r, r->pos, "expected ':' after the key, found %s",
                         desc);
  }
  r->pos++;
  return true;
}

bool clt_json_next_key(clt_json_reader *r, char **key, size_t *key_len) {
  if (!key) return clt_json_fail(r, r->pos, "next_key: key is NULL");
  return next_key(r, key, key_len);
}

/* ------------------------------------------------------------------------ */
/* Numbers and literals                                                      */

static size_t skip_digits(const clt_json_reader *r, size_t p) {
  while (p < r->len && is_digit(r->text[p])) p++;
  return p;
}

/* Scans the number at r->pos by RFC 8259's grammar without moving r->pos;
 * sets *end and whether it was written as an integer. */
static bool scan_number(clt_json_reader *r, size_t *end, bool *integer) {
  size_t p = r->pos;
  if (at_byte(r, p, '-')) p++;
  if (p >= r->len || !is_digit(r->text[p]))
    return clt_json_fail(r, r->pos,
                         "invalid number: a digit must follow "
                         "'-'");
  if (r->text[p] == '0' && p + 1 < r->len && is_digit(r->text[p + 1]))
    return clt_json_fail(r, r->pos, "invalid number: leading zero");
  p = skip_digits(r, p);
  *integer = true;
  if (at_byte(r, p, '.')) {
    if (p + 1 >= r->len || !is_digit(r->text[p + 1]))
      return clt_json_fail(r, p, "invalid number: a digit must follow '.'");
    p = skip_digits(r, p + 1);
    *integer = false;
  }
  if (at_byte(r, p, 'e') || at_byte(r, p, 'E')) {
    p++;
    if (at_byte(r, p, '+') || at_byte(r, p, '-')) p++;
    if (p >= r->len || !is_digit(r->text[p]))
      return clt_json_fail(r, p,
                           "invalid number: the exponent has no "
                           "digits");
    p = skip_digits(r, p);
    *integer = false;
  }
  *end = p;
  return true;
}

bool clt_json_read_int64(clt_json_reader *r, int64_t *out) {
  size_t end;
  bool integer;
  if (!expect_type(r, CLT_JSON_NUMBER, "an integer")) return false;
  if (!scan_number(r, &end, &integer)) return false;
  const char *s = r->text + r->pos;
  int shown = end - r->pos > 40 ? 40 : (int)(end - r->pos);
  if (!integer)
    return clt_json_fail(r, r->pos, "expected an integer, found %.*s", shown,
                         s);
  bool negative = s[0] == '-';
  /* The magnitude limit differs by one between the two signs. */
  uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  uint64_t v = 0;
  for (const char *c = s + negative; c < r->text + end; c++) {
    uint64_t d = (uint64_t)(*c - '0');
    if (v > (limit - d) / 10)
      return clt_json_fail(r, r->pos, "integer %.*s is out of range", shown, s);
    v = v * 10 + d;
  }
  if (!negative)
    *out = (int64_t)v;
  else
    *out = v > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)v;
  r->pos = end;
  return true;
}

static bool skip_literal(clt_json_reader *r) {
  static const char *const words[] = {"true", "false", "null"};
  for (size_t i = 0; i < 3; i++) {
    size_t n = strlen(words[i]);
    if (r->len - r->pos >= n && memcmp(r->text + r->pos, words[i], n) == 0) {
      r->pos += n;
      return true;
    }
  }
  return clt_json_fail(r, r->pos,
                       "invalid literal (true, false or null "
                       "expected)");
}

static bool skip_container(clt_json_reader *r, clt_json_type type) {
  if (!enter(r, type)) return false;
  if (type == CLT_JSON_OBJECT) {
    while (next_key(r, NULL, NULL))
      if (!clt_json_skip_value(r)) return false;
  } else {
    while (clt_json_next_item(r))
      if (!clt_json_skip_value(r)) return false;
  }
  return !r->failed;
}

bool clt_json_skip_value(clt_json_reader *r) {
  size_t end;
  bool integer;
  clt_json_type type = clt_json_peek(r);
  switch (type) {
  case CLT_JSON_OBJECT:
  case CLT_JSON_ARRAY: return skip_container(r, type);
  case CLT_JSON_STRING: return take_string(r, NULL, NULL);
  case CLT_JSON_NUMBER:
    if (!scan_number(r, &end, &integer)) return false;
    r->pos = end;
    return true;
  case CLT_JSON_BOOL:
  case CLT_JSON_NULL: return skip_literal(r);
  case CLT_JSON_NONE: break;
  }
  if (r->failed) return false;
  char desc[32];
  describe_at(r, r->pos, desc, sizeof desc);
  return clt_json_fail(r, r->pos, "expected a value, found %s", desc);
}

bool clt_json_finish(clt_json_reader *r) {
  if (r->failed) return false;
  skip_space(r);
  if (r->pos < r->len) {
    char desc[32];
    describe_at(r, r->pos, desc, sizeof desc);
    return clt_json_fail(r, r->pos,
                         "unexpected %s after the end of the "
                         "JSON value",
                         desc);
  }
  return true;
}

bool clt_json_validate(const char *text, size_t len, int max_depth,
                       size_t *error_pos, char *error, size_t errlen) {
  clt_json_reader r;
  clt_json_reader_init(&r, text, len, max_depth);
  if (clt_json_skip_value(&r) && clt_json_finish(&r)) return true;
  if (error_pos) *error_pos = r.error_pos;
  if (error && errlen) snprintf(error, errlen, "%s", r.error);
  return false;
}

void clt_json_line_column(const char *text, size_t len, size_t pos, int *line,
                          int *column) {
  int l = 1, c = 1;
  for (size_t i = 0; i < pos && i < len; i++) {
    unsigned char b = (unsigned char)text[i];
    if (b == '\n') {
      l++;
      c = 1;
    } else if ((b & 0xc0) != 0x80) {
      c++; /* continuation bytes belong to the character before */
    }
  }
  *line = l;
  *column = c;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

static bool buf_reserve(clt_json_buf *b, size_t extra) {
  if (b->failed) return false;
  if (extra < b->cap - b->len) return true; /* room for the NUL too */
  if (extra > SIZE_MAX / 2 - b->len) {
    b->failed = true;
    return false;
  }
  size_t cap = b->cap ? b->cap : 256;
  while (cap - b->len <= extra) cap *= 2;
  char *data = realloc(b->data, cap);
  if (!data) {
    b->failed = true;
    return false;
  }
  b->data = data;
  b->cap = cap;
  return true;
}

void clt_json_buf_append(clt_json_buf *b, const char *s, size_t n) {
  if (!buf_reserve(b, n)) return;
  if (n) memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void clt_json_buf_printf(clt_json_buf *b, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->failed = true;
    return;
  }
  if ((size_t)n < sizeof small) {
    clt_json_buf_append(b, small, (size_t)n);
    return;
  }
  if (!buf_reserve(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

/* The escape for byte c, or NULL when it goes out as it is. */
static const char *escape_for(unsigned char c, char tmp[8]) {
  switch (c) {
  case '"': return "\\\"";
  case '\\': return "\\\\";
  case '\n': return "\\n";
  case '\r': return "\\r";
  case '\t': return "\\t";
  case '\b': return "\\b";
  case '\f': return "\\f";
  default: break;
  }
  if (c >= 0x20) return NULL;
  snprintf(tmp, 8, "\\u%04x", c);
  return tmp;
}

void clt_json_buf_append_string(clt_json_buf *b, const char *s, size_t n) {
  clt_json_buf_append(b, "\"", 1);
  size_t run = 0; /* start of the bytes not yet appended */
  for (size_t i = 0; i < n; i++) {
    char tmp[8];
    const char *esc = escape_for((unsigned char)s[i], tmp);
    if (!esc) continue;
    clt_json_buf_append(b, s + run, i - run);
    clt_json_buf_append(b, esc, strlen(esc));
    run = i + 1;
  }
  clt_json_buf_append(b, s + run, n - run);
  clt_json_buf_append(b, "\"", 1);
}

void clt_json_buf_free(clt_json_buf *b) {
  if (!b) return;
  free(b->data);
  memset(b, 0, sizeof *b);
}
