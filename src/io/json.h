/* A small strict JSON reader and writer helpers, enough for safetensors
 * headers.
 *
 * The reader is a pull parser over a byte range (not NUL-terminated): the
 * caller walks the document it expects (enter an object, read its keys one
 * by one, read a string or an integer, skip what it does not care about),
 * so nothing but the strings the caller keeps is allocated, whatever the
 * input. It accepts exactly RFC 8259 JSON: UTF-8 text (checked), strings
 * with every escape including \uXXXX surrogate pairs (lone surrogates and
 * raw control characters are errors), numbers by the strict grammar, true,
 * false and null, whitespace between tokens; containers nest at most
 * max_depth deep, which also bounds the recursion of skipping.
 *
 * Errors are sticky: the first one sets r->failed, r->error and
 * r->error_pos (a byte offset into the text), and every later call returns
 * false at once. clt_json_line_column turns the offset into a line and a
 * column for messages.
 *
 * The writer side is a growable byte buffer with an append for quoted,
 * escaped strings. */
#ifndef CLT_IO_JSON_H
#define CLT_IO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Nesting depth clt_json_validate allows when given 0. */
#define CLT_JSON_DEFAULT_MAX_DEPTH 64

typedef enum clt_json_type {
  CLT_JSON_NONE, /* end of input, or a byte that starts no value */
  CLT_JSON_NULL,
  CLT_JSON_BOOL,
  CLT_JSON_NUMBER,
  CLT_JSON_STRING,
  CLT_JSON_ARRAY,
  CLT_JSON_OBJECT,
} clt_json_type;

typedef struct clt_json_reader {
  const char *text;
  size_t len;
  size_t pos; /* next byte to read */
  int depth;  /* containers entered and not yet left */
  int max_depth;
  bool first; /* the container just entered has no member yet */
  bool failed;
  size_t error_pos; /* byte offset of the error in text */
  char error[192];
} clt_json_reader;

/* Starts reading text[0..len). max_depth <= 0 means the default. */
void clt_json_reader_init(clt_json_reader *r, const char *text, size_t len,
                          int max_depth);

/* Skips whitespace and says what kind of value comes next, judged by its
 * first byte (CLT_JSON_NONE at the end or on a stray byte). Never fails. */
clt_json_type clt_json_peek(clt_json_reader *r);

/* A word for a type, for messages: "an object", "a string", ... */
const char *clt_json_type_name(clt_json_type type);

/* Consumes '{'. Then call clt_json_next_key until it returns false. */
bool clt_json_enter_object(clt_json_reader *r);

/* Reads the next key of the current object and its ':'. Returns true with
 * *key (malloc'd, NUL-terminated, the caller frees it) and *key_len (it
 * may hold NUL bytes from \u0000); the caller must then read or skip the
 * value. Returns false when the object ends ('}' consumed) or on an error
 * (r->failed). key_len may be NULL. */
bool clt_json_next_key(clt_json_reader *r, char **key, size_t *key_len);

/* Consumes '['. Then call clt_json_next_item until it returns false. */
bool clt_json_enter_array(clt_json_reader *r);

/* Moves to the next element of the current array. Returns true when one
 * follows (the caller must read or skip it), false when the array ends
 * (']' consumed) or on an error. */
bool clt_json_next_item(clt_json_reader *r);

/* Reads a string value into *out (malloc'd, NUL-terminated, the caller
 * frees it), its length in *len (may be NULL). */
bool clt_json_read_string(clt_json_reader *r, char **out, size_t *len);

/* Reads a number written as an integer (no fraction, no exponent) that
 * fits int64_t. Anything else is an error saying why. */
bool clt_json_read_int64(clt_json_reader *r, int64_t *out);

/* Skips one value of any kind, checking it fully. */
bool clt_json_skip_value(clt_json_reader *r);

/* Checks that only whitespace remains. */
bool clt_json_finish(clt_json_reader *r);

/* Records an error at byte pos (printf-style) unless one is recorded
 * already; returns false so callers can `return clt_json_fail(...)`. */
bool clt_json_fail(clt_json_reader *r, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Checks that text[0..len) is exactly one JSON value and whitespace. On
 * failure fills *error_pos and error (errlen bytes; either may be NULL). */
bool clt_json_validate(const char *text, size_t len, int max_depth,
                       size_t *error_pos, char *error, size_t errlen);

/* 1-based line and column of byte pos in text; the column counts UTF-8
 * characters, so it matches what an editor shows. */
void clt_json_line_column(const char *text, size_t len, size_t pos, int *line,
                          int *column);

/* True when s[0..n) is well-formed UTF-8 (no overlong forms, no
 * surrogates, nothing above U+10FFFF). */
bool clt_json_utf8_valid(const char *s, size_t n);

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

/* A growable byte buffer. Zero-initialise it. After an allocation failure
 * `failed` is set and further appends do nothing, so a writer checks once
 * at the end. data is NUL-terminated whenever len > 0. */
typedef struct clt_json_buf {
  char *data;
  size_t len;
  size_t cap;
  bool failed;
} clt_json_buf;

void clt_json_buf_append(clt_json_buf *b, const char *s, size_t n);
void clt_json_buf_printf(clt_json_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends s[0..n) as a JSON string: quoted, with '"', '\\' and control
 * characters escaped. Other bytes pass through, so s must be UTF-8 (see
 * clt_json_utf8_valid) for the result to be valid JSON. */
void clt_json_buf_append_string(clt_json_buf *b, const char *s, size_t n);
void clt_json_buf_free(clt_json_buf *b);

#endif
