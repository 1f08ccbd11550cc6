/* Words in messages: the closest of a list (for "did you mean"), a list
 * joined, a value quoted safely. Character classes by hand: <ctype.h>
 * depends on the C locale. */
#ifndef CLT_COMMON_WORDS_H
#define CLT_COMMON_WORDS_H

#include <stdbool.h>
#include <stddef.h>

/* How much of a value a message shows, and the buffer that holds it once
 * escaped (each byte may become "\xNN"). */
#define CLT_QUOTE_MAX 80
#define CLT_QUOTE_BUF (CLT_QUOTE_MAX * 4 + 8)

static inline bool clt_is_digit(char c) { return c >= '0' && c <= '9'; }
static inline char clt_ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}
bool clt_equal_ignoring_case(const char *a, const char *b);

/* The entry of candidates (NULL-terminated) closest to word, counting an
 * insertion, deletion, substitution or swap of neighbours as one edit and
 * ignoring case, if it is at most max_distance edits away (and fewer edits
 * than word has characters); else NULL. An exact match is not returned. */
const char *clt_closest_word(const char *word, const char *const *candidates,
                             int max_distance);

/* Appends "a, b, c" (words joined by sep) to buf without overflowing. */
void clt_join_words(const char *const *words, const char *sep, char *buf,
                    size_t size);

/* s[0..n) made safe to print inside quotes: bytes that are not printable
 * ASCII become \xNN, and a long value is cut with "...". */
const char *clt_quote(const char *s, size_t n, char buf[CLT_QUOTE_BUF]);
const char *clt_quote_str(const char *s, char buf[CLT_QUOTE_BUF]);

#endif
