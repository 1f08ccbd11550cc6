/* The PTX rewriting for wgmma (wgmma_ptx.h). */
#include "ops/wgmma_ptx.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct text {
  char *s;
  size_t len, cap;
  bool failed;
} text;

static void put(text *t, const char *s, size_t n) {
  if (t->failed) return;
  if (t->len + n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->len + n + 1) cap *= 2;
    char *grown = realloc(t->s, cap);
    if (!grown) {
      t->failed = true;
      return;
    }
    t->s = grown;
    t->cap = cap;
  }
  memcpy(t->s + t->len, s, n);
  t->len += n;
  t->s[t->len] = '\0';
}

static void putf(text *t, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof buf)
    t->failed = true;
  else
    put(t, buf, (size_t)n);
}

/* The whitespace-separated words of s (up to its end or a newline) into
 * words[], at most max; their count. Each word ends at a space. */
static int split(const char *s, const char *end, const char **words,
                 size_t *lens, int max) {
  int count = 0;
  while (s < end) {
    while (s < end && (*s == ' ' || *s == '\t' || *s == '\r')) s++;
    if (s >= end) break;
    const char *w = s;
    while (s < end && *s != ' ' && *s != '\t' && *s != '\r') s++;
    if (count < max) {
      words[count] = w;
      lens[count] = (size_t)(s - w);
    }
    count++;
  }
  return count;
}

static bool word_is(const char *w, size_t len, const char *lit) {
  return strlen(lit) == len && memcmp(w, lit, len) == 0;
}

/* The mma placeholder's words after "mma" (fp16 operands) or "tf32":
 * N, N/2 accumulators, two descriptors. */
static bool put_mma(text *t, bool tf32, const char **w, const size_t *l,
                    int count, char *why, size_t why_len) {
  int n = count > 0 ? atoi(w[0]) : 0;
  if ((n != 64 && n != 128 && n != 256) || count != 1 + n / 2 + 2) {
    snprintf(why, why_len,
             "a wgmma placeholder with %d words for n = %d (want n of 64, "
             "128 or 256 and n/2 + 2 registers)",
             count - 1, n);
    return false;
  }
  putf(t, "\t{\n\t.reg .pred p;\n\t.reg .b32 s;\n\tmov.b32 s, 1;\n"
          "\tsetp.ne.b32 p, s, 0;\n"
          "\twgmma.mma_async.sync.aligned.m64n%d%s {",
       n, tf32 ? "k8.f32.tf32.tf32" : "k16.f32.f16.f16");
  for (int i = 0; i < n / 2; i++) {
    if (i) put(t, ", ", 2);
    put(t, w[1 + i], l[1 + i]);
  }
  put(t, "}, ", 3);
  put(t, w[1 + n / 2], l[1 + n / 2]);
  put(t, ", ", 2);
  put(t, w[2 + n / 2], l[2 + n / 2]);
  /* scale-d, A and B's scales; fp16 also their transposes (none: k-major;
   * tf32 operands are k-major only) */
  putf(t, tf32 ? ", p, 1, 1;\n\t}\n" : ", p, 1, 1, 0, 0;\n\t}\n");
  return true;
}

/* The kernels that ask for n blocks a multiprocessor ("// CLT_WG ctas n"
 * in their body): the name of the `.entry` before each such line. */
typedef struct ctas_ask {
  char entry[128];
  int n;
  bool placed;
} ctas_ask;

/* The entry name on a line ".entry NAME(" (after leading blanks and
 * ".visible"), or false. */
static bool entry_name(const char *s, const char *end, char *out,
                       size_t len) {
  while (s < end && (*s == ' ' || *s == '\t')) s++;
  if (end - s > 9 && memcmp(s, ".visible ", 9) == 0) s += 9;
  if (end - s < 7 || memcmp(s, ".entry ", 7) != 0) return false;
  s += 7;
  size_t n = 0;
  while (s + n < end && s[n] != '(' && s[n] != ' ' && s[n] != '\r') n++;
  snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), s);
  return n > 0;
}

static int find_ctas(const char *ptx, ctas_ask *asks, int max) {
  int count = 0;
  char entry[128] = "";
  for (const char *s = ptx; *s;) {
    const char *e = strchr(s, '\n');
    const char *end = e ? e : s + strlen(s);
    char name[128];
    if (entry_name(s, end, name, sizeof name))
      snprintf(entry, sizeof entry, "%s", name);
    const char *m = strstr(s, "// CLT_WG ctas ");
    if (m && m < end && count < max) {
      snprintf(asks[count].entry, sizeof asks[count].entry, "%s", entry);
      asks[count].n = atoi(m + 15);
      asks[count].placed = false;
      count++;
    }
    s = e ? e + 1 : end;
  }
  return count;
}

char *clt_wgmma_patch_ptx(const char *ptx, char *why, size_t why_len) {
  text t = {0};
  int placeholders = 0;
  bool target = false;
  ctas_ask asks[8];
  int nasks = find_ctas(ptx, asks, 8);
  char entry[128] = "";
  /* the mma placeholder's first register: its mov on the next line goes */
  char drop[64] = "";
  const char *s = ptx;
  while (*s) {
    const char *e = strchr(s, '\n');
    const char *end = e ? e : s + strlen(s);
    const char *next = e ? e + 1 : end;
    size_t n = (size_t)(next - s);
    /* the line's first word */
    const char *w0 = s;
    while (w0 < end && (*w0 == ' ' || *w0 == '\t')) w0++;
    const char *mark = NULL;
    for (const char *p = s; p + 9 <= end; p++)
      if (memcmp(p, "// CLT_WG", 9) == 0) {
        mark = p + 9;
        break;
      }
    char name[128];
    if (entry_name(s, end, name, sizeof name))
      snprintf(entry, sizeof entry, "%s", name);
    if (drop[0]) {
      char want[160];
      snprintf(want, sizeof want, "mov.f32 %s, %s;", drop, drop);
      size_t wl = strlen(want);
      drop[0] = '\0';
      if ((size_t)(end - w0) >= wl && memcmp(w0, want, wl) == 0) {
        s = next;
        continue;
      }
    }
    if (mark) {
      const char *w[140];
      size_t l[140];
      int count = split(mark, end, w, l, 140);
      if (count < 1 || count > 140) {
        snprintf(why, why_len, "a placeholder with %d words: '%.*s'", count,
                 (int)(end - s > 200 ? 200 : end - s), s);
        free(t.s);
        return NULL;
      }
      placeholders++;
      bool tf32 = word_is(w[0], l[0], "tf32");
      if (tf32 || word_is(w[0], l[0], "mma")) {
        if (!put_mma(&t, tf32, w + 1, l + 1, count - 1, why, why_len)) {
          free(t.s);
          return NULL;
        }
        snprintf(drop, sizeof drop, "%.*s", (int)(l[2] < 63 ? l[2] : 63),
                 w[2]);
      } else if (word_is(w[0], l[0], "hold") ||
                 (word_is(w[0], l[0], "ctas") && count == 2)) {
        /* nothing (ctas: placed with the entry's .reqntid) */
      } else if (word_is(w[0], l[0], "arrive") && count == 1) {
        putf(&t, "\twgmma.fence.sync.aligned;\n");
      } else if (word_is(w[0], l[0], "commit") && count == 1) {
        putf(&t, "\twgmma.commit_group.sync.aligned;\n");
      } else if (word_is(w[0], l[0], "proxy") && count == 1) {
        putf(&t, "\tfence.proxy.async.shared::cta;\n");
      } else if (word_is(w[0], l[0], "wait") && count == 2 && l[1] == 1 &&
                 w[1][0] >= '0' && w[1][0] <= '7') {
        putf(&t, "\twgmma.wait_group.sync.aligned %c;\n", w[1][0]);
      } else {
        snprintf(why, why_len, "an unknown placeholder: '%.*s'",
                 (int)(end - s > 200 ? 200 : end - s), s);
        free(t.s);
        return NULL;
      }
    } else if (word_is(w0, end - w0 < 7 ? 0 : 7, ".target")) {
      /* ".target sm_90, texmode_independent" */
      const char *sm = w0 + 7;
      while (sm < end && *sm == ' ') sm++;
      size_t sl = 0;
      while (sm + sl < end && sm[sl] != ',' && sm[sl] != ' ' &&
             sm[sl] != '\r')
        sl++;
      if (!word_is(sm, sl, "sm_90") && !word_is(sm, sl, "sm_90a")) {
        snprintf(why, why_len,
                 "the driver's PTX targets %.*s; wgmma needs sm_90a", (int)sl,
                 sm);
        free(t.s);
        return NULL;
      }
      put(&t, s, (size_t)(sm - s));
      put(&t, "sm_90a", 6);
      put(&t, sm + sl, (size_t)(next - (sm + sl)));
      target = true;
    } else if (word_is(w0, end - w0 < 8 ? 0 : 8, ".version")) {
      int major = 0, minor = 0;
      if (sscanf(w0, ".version %d.%d", &major, &minor) == 2 && major < 8)
        putf(&t, ".version 8.0\n");
      else
        put(&t, s, n);
    } else {
      put(&t, s, n);
      if (word_is(w0, end - w0 < 8 ? 0 : 8, ".reqntid") ||
          word_is(w0, end - w0 < 8 ? 0 : 8, ".maxntid"))
        for (int i = 0; i < nasks; i++)
          if (!asks[i].placed && strcmp(asks[i].entry, entry) == 0) {
            putf(&t, ".minnctapersm %d\n", asks[i].n);
            asks[i].placed = true;
          }
    }
    s = next;
  }
  for (int i = 0; i < nasks; i++)
    if (!asks[i].placed || asks[i].n < 1) {
      free(t.s);
      snprintf(why, why_len,
               "entry %s asks for %d blocks a multiprocessor but %s",
               asks[i].entry, asks[i].n,
               asks[i].n < 1 ? "that is no count"
                             : "has no .reqntid or .maxntid line");
      return NULL;
    }
  if (t.failed) {
    free(t.s);
    snprintf(why, why_len, "out of memory rewriting the PTX");
    return NULL;
  }
  if (!placeholders || !target) {
    free(t.s);
    snprintf(why, why_len, "the PTX has %s",
             !target ? "no .target line" : "no CLT_WG placeholder");
    return NULL;
  }
  return t.s;
}
