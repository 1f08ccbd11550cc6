/* Words in messages (see words.h). */
#include "common/words.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool clt_equal_ignoring_case(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (clt_ascii_lower(*a) != clt_ascii_lower(*b)) return false;
  return *a == *b;
}

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
      int cost = clt_ascii_lower(a[i - 1]) == clt_ascii_lower(b[j - 1]) ? 0 : 1;
      int best = prev[j - 1] + cost;
      if (prev[j] + 1 < best) best = prev[j] + 1;
      if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
      if (i > 1 && j > 1 && clt_ascii_lower(a[i - 1]) == clt_ascii_lower(b[j - 2]) &&
          clt_ascii_lower(a[i - 2]) == clt_ascii_lower(b[j - 1]) &&
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

const char *clt_closest_word(const char *word, const char *const *candidates,
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
void clt_join_words(const char *const *words, const char *sep, char *buf,
                       size_t size) {
  size_t len = strlen(buf);
  for (const char *const *w = words; *w; w++) {
    int n = snprintf(buf + len, size - len, "%s%s", w == words ? "" : sep, *w);
    if (n < 0 || (size_t)n >= size - len) return;
    len += (size_t)n;
  }
}

/* s[0..n) made safe to print inside quotes: bytes that are not printable
 * ASCII become \xNN, and a long value is cut with "...". */
const char *clt_quote(const char *s, size_t n, char buf[CLT_QUOTE_BUF]) {
  size_t out = 0;
  size_t shown = n < CLT_QUOTE_MAX ? n : CLT_QUOTE_MAX;
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

const char *clt_quote_str(const char *s, char buf[CLT_QUOTE_BUF]) {
  return clt_quote(s, strlen(s), buf);
}
