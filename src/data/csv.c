/* CSV datasets: one sample per line, parsed field by field with file:line
 * errors. Rows are appended to arrays that double as they fill. */
#include "data/csv.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct csv_reader {
  const char *path;
  long line; /* 1-based number of the line being parsed */
  const clt_data_options *o;
  int64_t heads;  /* leading fields: 1 label, o->targets targets, or none
                     (o->unlabelled) */
  int64_t pixels; /* the other fields: C * H * W */
  /* The heads' first column, 0-based (o->label_column); -1: a name not
   * yet found in the header line. */
  int64_t head_at;
  const char *label_name; /* the name looked for, or NULL */
  int64_t cap;            /* rows the arrays have room for */
  bool floats;    /* values as floats (CLT_CSV_FLOATS), else bytes */
  clt_dataset *ds;
  clt_err *err;
} csv_reader;

static bool csv_space(char c) { return c == ' ' || c == '\t'; }

/* The text of one field [*p, end of field), trimmed, as a NUL-terminated
 * string (the separator is overwritten); *p moves past the separator.
 * Returns NULL after the last field. */
static char *csv_field(char **p, bool *more) {
  if (!*more) return NULL;
  char *s = *p;
  while (csv_space(*s)) s++;
  char *comma = strchr(s, ',');
  char *end = comma ? comma : s + strlen(s);
  *p = comma ? comma + 1 : end;
  *more = comma != NULL;
  while (end > s && csv_space(end[-1])) end--;
  *end = '\0';
  return s;
}

/* A whole decimal number in s (optionally signed); false if s is anything
 * else. Values beyond +-1e9 count as not whole, a bound no label or pixel
 * comes near. */
static bool csv_whole(const char *s, long *out) {
  const char *p = s;
  if (*p == '-' || *p == '+') p++;
  if (*p < '0' || *p > '9') return false;
  long v = 0;
  for (; *p >= '0' && *p <= '9'; p++) {
    v = v * 10 + (*p - '0');
    if (v > 1000000000L) return false;
  }
  /* "12.0" is whole too: files written by pandas look like that. */
  if (*p == '.') {
    for (p++; *p == '0'; p++) {
    }
  }
  if (*p) return false;
  *out = *s == '-' ? -v : v;
  return true;
}

/* A decimal number (strtod's hexadecimal forms, "0x1p3", are not what a
 * CSV file means; nor are "inf" and "nan"). One too small for a double is
 * 0 or nearly; one too large is infinite here, for the callers to call out
 * of range. */
static bool csv_number(const char *s, double *out) {
  if (!*s || strpbrk(s, "xX")) return false;
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (*end || isnan(v) || (isinf(v) && errno != ERANGE)) return false;
  *out = v;
  return true;
}

/* A whole number within +-1e9 in any form: csv_whole's, or a number whose
 * value is whole ("1e3", "2.55e2"), as some programs write them. */
static bool csv_integral(const char *s, long *out) {
  if (csv_whole(s, out)) return true;
  double v;
  if (!csv_number(s, &v) || v != floor(v) || fabs(v) > 1e9) return false;
  *out = (long)v;
  return true;
}

/* How files mark a missing value: pandas writes an empty field, numpy
 * "nan", R "NA", databases "NULL". */
static bool csv_missing(const char *text) {
  static const char *const marks[] = {"", "nan", "na", "n/a", "null", "none",
                                      "?"};
  for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
    if (!strcasecmp(text, marks[i])) return true;
  return false;
}

static clt_status csv_not_number(csv_reader *r, int64_t column,
                                 const char *text) {
  if (csv_missing(text))
    return clt_err_set(r->err, CLT_ERR_FORMAT,
                       "%s:%ld: column %lld is %s%.40s%s, a missing value: "
                       "every value must be a number (fill in or drop the "
                       "rows with missing values first)",
                       r->path, r->line, (long long)column,
                       *text ? "'" : "empty", text, *text ? "'" : "");
  return clt_err_set(r->err, CLT_ERR_FORMAT,
                     "%s:%ld: column %lld is '%.40s', not a number", r->path,
                     r->line, (long long)column, text);
}

/* Makes room for one more row. */
static clt_status csv_grow(csv_reader *r) {
  clt_dataset *ds = r->ds;
  if (ds->count < r->cap) return CLT_OK;
  int64_t cap = r->cap ? 2 * r->cap : 1024;
  bool ok;
  if (r->floats) {
    float *px = realloc(ds->fpixels, (size_t)(cap * r->pixels) * sizeof *px);
    if (px) ds->fpixels = px;
    ok = px != NULL;
  } else {
    uint8_t *px = realloc(ds->pixels, (size_t)(cap * r->pixels));
    if (px) ds->pixels = px;
    ok = px != NULL;
  }
  if (ok && r->heads > 0 && r->o->targets > 0) {
    float *t = realloc(ds->targets, (size_t)(cap * r->heads) * sizeof *t);
    if (t) ds->targets = t;
    ok = t != NULL;
  } else if (ok && r->heads > 0) {
    int32_t *l = realloc(ds->labels, (size_t)cap * sizeof *l);
    if (l) ds->labels = l;
    ok = l != NULL;
  }
  if (!ok)
    return clt_err_set(r->err, CLT_ERR_HOST_MEMORY,
                       "%s:%ld: out of memory for %lld rows", r->path, r->line,
                       (long long)cap);
  r->cap = cap;
  return CLT_OK;
}

/* A target, or a value read as a float: a number within a float's range
 * (1e39 would become infinity, and every loss after it). */
static clt_status csv_float(csv_reader *r, int64_t column, const char *text,
                            float *out) {
  double v;
  if (!csv_number(text, &v)) return csv_not_number(r, column, text);
  if (fabs(v) > FLT_MAX)
    return clt_err_set(r->err, CLT_ERR_FORMAT,
                       "%s:%ld: column %lld is %.40s, beyond a float's range "
                       "(about 3.4e38)",
                       r->path, r->line, (long long)column, text);
  *out = (float)v;
  return CLT_OK;
}

/* Head h (0-based: the label, or target h) from the file's column. */
static clt_status csv_head(csv_reader *r, int64_t h, int64_t column,
                           const char *text) {
  clt_dataset *ds = r->ds;
  if (r->o->targets > 0)
    return csv_float(r, column, text, &ds->targets[ds->count * r->heads + h]);
  long label;
  if (!csv_integral(text, &label)) {
    double v;
    if (!csv_number(text, &v)) return csv_not_number(r, column, text);
    if (v != floor(v))
      return clt_err_set(r->err, CLT_ERR_FORMAT,
                         "%s:%ld: the label is '%.40s', labels are whole "
                         "numbers",
                         r->path, r->line, text);
    return clt_err_set(r->err, CLT_ERR_FORMAT,
                       "%s:%ld: the label is %.40s, out of range: labels "
                       "are class numbers from 0%s",
                       r->path, r->line, text,
                       v < 0 ? "; they cannot be negative" : "");
  }
  if (label < 0)
    return clt_err_set(r->err, CLT_ERR_FORMAT,
                       "%s:%ld: the label is %ld; labels cannot be negative",
                       r->path, r->line, label);
  if (r->o->num_classes > 0 && label >= r->o->num_classes)
    return clt_err_set(r->err, CLT_ERR_FORMAT,
                       "%s:%ld: the label is %ld, out of range: the model "
                       "has %d classes (labels 0 to %d)",
                       r->path, r->line, label, r->o->num_classes,
                       r->o->num_classes - 1);
  ds->labels[ds->count] = (int32_t)label;
  if (label >= ds->num_classes) ds->num_classes = (int)label + 1;
  return CLT_OK;
}

/* Value v (0-based, of C * H * W) from the file's column. */
static clt_status csv_pixel(csv_reader *r, int64_t v, int64_t column,
                            const char *text) {
  int64_t at = r->ds->count * r->pixels + v;
  if (r->floats) return csv_float(r, column, text, &r->ds->fpixels[at]);
  long b;
  if (!csv_integral(text, &b) || b < 0 || b > 255) {
    double d;
    if (!csv_number(text, &d)) return csv_not_number(r, column, text);
    return clt_err_set(r->err, CLT_ERR_FORMAT,
                       "%s:%ld: column %lld (pixel %lld) is %.40s; pixels "
                       "must be whole numbers from 0 to 255 (values of any "
                       "size are read as floats with --csv-values floats, "
                       "CLT_CSV_FLOATS)",
                       r->path, r->line, (long long)column, (long long)(v + 1),
                       text);
  }
  r->ds->pixels[at] = (uint8_t)b;
  return CLT_OK;
}

/* What a row holds, for messages: "a label and 784 pixels for the
 * model's 1x28x28 input". */
static void csv_row_holds(const csv_reader *r, char *buf, size_t len) {
  const clt_data_options *o = r->o;
  char what[64];
  if (r->heads == 0)
    snprintf(what, sizeof what, "no label (values to predict on) and ");
  else if (o->targets > 1)
    snprintf(what, sizeof what, "%lld targets and ", (long long)o->targets);
  else
    snprintf(what, sizeof what, "a %s and ", o->targets ? "target" : "label");
  snprintf(buf, len, "%s%lld %s for the model's %dx%dx%d input", what,
           (long long)r->pixels, r->floats ? "values" : "pixels", o->channels,
           o->height, o->width);
}

/* The message for a row of `fields` values where heads + pixels belong. */
static clt_status csv_wrong_length(csv_reader *r, int64_t fields) {
  char holds[160];
  csv_row_holds(r, holds, sizeof holds);
  return clt_err_set(r->err, CLT_ERR_FORMAT,
                     "%s:%ld: the row has %lld values, it needs %lld: %s",
                     r->path, r->line, (long long)fields,
                     (long long)(r->heads + r->pixels), holds);
}

/* The heads' columns: "the label column", "the 2 target columns". */
static void csv_heads_name(const csv_reader *r, char *buf, size_t len) {
  if (r->o->targets <= 0)
    snprintf(buf, len, "the label column");
  else if (r->heads == 1)
    snprintf(buf, len, "the target column");
  else
    snprintf(buf, len, "the %lld target columns", (long long)r->heads);
}

/* The heads start at column `at` (0-based; `given` as the user said it),
 * if they fit in a row: else error `code`. */
static clt_status csv_place_at(csv_reader *r, int64_t at, const char *given,
                               clt_status code) {
  int64_t columns = r->heads + r->pixels;
  if (at <= columns - r->heads) {
    r->head_at = at;
    return CLT_OK;
  }
  char holds[160], heads[64], where[32] = "";
  csv_row_holds(r, holds, sizeof holds);
  csv_heads_name(r, heads, sizeof heads);
  if (r->label_name) snprintf(where, sizeof where, ":%ld", r->line);
  return clt_err_set(r->err, code,
                     "%s%s: %s cannot start at %s: a row has %lld columns "
                     "(%s)",
                     r->path, where, heads, given, (long long)columns, holds);
}

/* Where the heads are, from o->label_column (cltrain.h): NULL, "" or
 * "first" the first column(s), "last" the last, a whole number N column N
 * (counted from 1), any other text a name the header line must hold
 * (r->head_at is -1 until it is read). */
static clt_status csv_label_place(csv_reader *r) {
  const char *spec = r->o->label_column;
  r->head_at = 0;
  if (r->heads == 0 || !spec || !*spec || !strcmp(spec, "first"))
    return CLT_OK;
  if (!strcmp(spec, "last")) /* always fits */
    return csv_place_at(r, r->pixels, "the last", CLT_ERR_INVALID_ARGUMENT);
  const char *digits = spec + (*spec == '+' || *spec == '-');
  size_t n = strspn(digits, "0123456789");
  if (n == 0 || digits[n]) { /* a name */
    r->label_name = spec;
    r->head_at = -1;
    return CLT_OK;
  }
  /* past any row beyond 12 digits */
  long long column = n > 12 ? 1000000000000LL : strtoll(spec, NULL, 10);
  if (column < 1)
    return clt_err_set(r->err, CLT_ERR_INVALID_ARGUMENT,
                       "%s: label column %s: columns count from 1 (the last "
                       "is 'last')",
                       r->path, spec);
  char given[48];
  snprintf(given, sizeof given, "column %.20s", spec);
  return csv_place_at(r, (int64_t)column - 1, given,
                      CLT_ERR_INVALID_ARGUMENT);
}

/* The next field of a header line into buf (cap bytes), trimmed and
 * unquoted ("a, b" holds a comma, "" is a quote); *p moves past the
 * separator. false after the last field. */
static bool csv_header_field(const char **p, bool *more, char *buf,
                             size_t cap) {
  if (!*more) return false;
  const char *s = *p;
  size_t n = 0;
  while (csv_space(*s)) s++;
  bool quoted = *s == '"';
  if (quoted)
    for (s++; *s; s++) {
      if (*s == '"' && *++s != '"') break;
      if (n + 1 < cap) buf[n++] = *s;
    }
  for (; *s && *s != ','; s++)
    if (!quoted && n + 1 < cap) buf[n++] = *s;
  while (!quoted && n > 0 && csv_space(buf[n - 1])) n--;
  buf[n] = '\0';
  *more = *s == ',';
  *p = *s ? s + 1 : s;
  return true;
}

/* Finds r->label_name among the header line's fields. */
static clt_status csv_find_name(csv_reader *r, const char *line) {
  const char *p = line;
  bool more = true;
  char field[256], names[160] = "", heads[64];
  int64_t found = -1, i = 0;
  size_t used = 0;
  csv_heads_name(r, heads, sizeof heads);
  for (; csv_header_field(&p, &more, field, sizeof field); i++) {
    if (!strcmp(field, r->label_name)) {
      if (found >= 0)
        return clt_err_set(r->err, CLT_ERR_FORMAT,
                           "%s:%ld: the header line names two columns "
                           "'%.100s' (%lld and %lld): which is %s?",
                           r->path, r->line, r->label_name,
                           (long long)(found + 1), (long long)(i + 1), heads);
      found = i;
    }
    if (used < sizeof names - 1) {
      int w = snprintf(names + used, sizeof names - used, "%s'%.40s'",
                       i ? ", " : "", field);
      used = w > 0 && used + (size_t)w < sizeof names ? used + (size_t)w
                                                      : sizeof names - 1;
    }
  }
  if (found < 0)
    return clt_err_set(r->err, CLT_ERR_FORMAT,
                       "%s:%ld: no column of the header line is named "
                       "'%.100s' (%s); it has %lld: %s%s",
                       r->path, r->line, r->label_name, heads, (long long)i,
                       names, used >= sizeof names - 1 ? "..." : "");
  char given[CLT_LABEL_COLUMN_MAX + 48];
  snprintf(given, sizeof given, "column %lld ('%s')", (long long)(found + 1),
           r->label_name);
  return csv_place_at(r, found, given, CLT_ERR_FORMAT);
}

static int64_t csv_count_fields(const char *line) {
  int64_t n = 1;
  for (const char *p = line; *p; p++) n += *p == ',';
  return n;
}

static clt_status csv_row(csv_reader *r, char *line) {
  int64_t fields = csv_count_fields(line);
  if (fields != r->heads + r->pixels) return csv_wrong_length(r, fields);
  CLT_TRY(csv_grow(r));
  bool more = true;
  char *p = line, *text;
  for (int64_t i = 0; (text = csv_field(&p, &more)); i++) {
    int64_t h = i - r->head_at;
    if (h >= 0 && h < r->heads)
      CLT_TRY(csv_head(r, h, i + 1, text));
    else
      CLT_TRY(csv_pixel(r, h < 0 ? i : i - r->heads, i + 1, text));
  }
  r->ds->count++;
  return CLT_OK;
}

/* A header line's first field is not a number ("label", "class"). */
static bool csv_is_header(const char *line) {
  char first[64];
  size_t n = strcspn(line, ",");
  if (n >= sizeof first) return true;
  memcpy(first, line, n);
  first[n] = '\0';
  char *p = first, *text;
  bool more = true;
  double v;
  text = csv_field(&p, &more);
  return !csv_number(text, &v);
}

static void csv_chomp(char *line, ssize_t *len) {
  while (*len > 0 && (line[*len - 1] == '\n' || line[*len - 1] == '\r'))
    line[--*len] = '\0';
}

static bool csv_blank(const char *line) {
  for (; *line; line++)
    if (!csv_space(*line)) return false;
  return true;
}

static clt_status csv_check_options(const char *path, const clt_data_options *o,
                                    clt_err *err) {
  if (o->channels < 1 || o->height < 1 || o->width < 1)
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "%s: reading a CSV needs the samples' shape (the "
                       "model's input), got %dx%dx%d",
                       path, o->channels, o->height, o->width);
  if (o->csv_values != CLT_CSV_BYTES && o->csv_values != CLT_CSV_FLOATS)
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "%s: csv_values %d is neither CLT_CSV_BYTES nor "
                       "CLT_CSV_FLOATS",
                       path, (int)o->csv_values);
  if (o->label_column && strlen(o->label_column) >= CLT_LABEL_COLUMN_MAX)
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "%s: the label column's name is %zu characters long; "
                       "at most %d",
                       path, strlen(o->label_column), CLT_LABEL_COLUMN_MAX - 1);
  return CLT_OK;
}

/* Where the heads were found, for the data's source: "" in the first
 * column(s), else ", label in column 9 ('price')". */
static void csv_place_text(const csv_reader *r, char *buf, size_t len) {
  buf[0] = '\0';
  if (r->heads == 0 || (r->head_at == 0 && !r->label_name)) return;
  char name[CLT_LABEL_COLUMN_MAX + 8] = "";
  if (r->label_name) snprintf(name, sizeof name, " ('%s')", r->label_name);
  long long at = (long long)r->head_at + 1;
  if (r->o->targets <= 0)
    snprintf(buf, len, ", label in column %lld%s", at, name);
  else if (r->heads == 1)
    snprintf(buf, len, ", target in column %lld%s", at, name);
  else
    snprintf(buf, len, ", targets in columns %lld to %lld%s", at,
             at + r->heads - 1, name);
}

static clt_status csv_lines(csv_reader *r, FILE *f, bool *had_header) {
  char *line = NULL;
  size_t size = 0;
  ssize_t len;
  clt_status st = CLT_OK;
  bool first = true;
  while (st == CLT_OK && (len = getline(&line, &size, f)) >= 0) {
    r->line++;
    csv_chomp(line, &len);
    /* Spreadsheets save UTF-8 with a byte-order mark in front. */
    if (r->line == 1 && len >= 3 && !memcmp(line, "\xef\xbb\xbf", 3))
      memmove(line, line + 3, (size_t)len - 2);
    if (csv_blank(line)) continue;
    if (first && csv_is_header(line)) {
      *had_header = true;
      first = false;
      if (r->label_name) st = csv_find_name(r, line);
      continue;
    }
    if (first && r->label_name) {
      char heads[64];
      csv_heads_name(r, heads, sizeof heads);
      st = clt_err_set(r->err, CLT_ERR_FORMAT,
                       "%s:%ld: %s is named '%.100s', but the file has no "
                       "header line to find it in (its first line is data)",
                       r->path, r->line, heads, r->label_name);
      break;
    }
    first = false;
    st = csv_row(r, line);
  }
  if (st == CLT_OK && ferror(f))
    st = clt_err_set(r->err, CLT_ERR_IO, "%s: read error after line %ld",
                     r->path, r->line);
  free(line);
  return st;
}

clt_status clt_csv_read(const char *path, const clt_data_options *o,
                        clt_dataset *out, clt_err *err) {
  memset(out, 0, sizeof *out);
  CLT_TRY(csv_check_options(path, o, err));
  FILE *f = fopen(path, "r");
  if (!f)
    return clt_err_set(err, CLT_ERR_IO, "cannot open %s: %s", path,
                       strerror(errno));
  out->channels = o->channels;
  out->height = o->height;
  out->width = o->width;
  out->target_size = o->targets > 0 && !o->unlabelled ? o->targets : 0;
  csv_reader r = {.path = path,
                  .o = o,
                  .heads = o->unlabelled   ? 0
                           : o->targets > 0 ? o->targets
                                            : 1,
                  .pixels = (int64_t)o->channels * o->height * o->width,
                  .floats = o->csv_values == CLT_CSV_FLOATS,
                  .ds = out,
                  .err = err};
  clt_status st = csv_label_place(&r);
  bool header = false;
  if (st == CLT_OK) st = csv_lines(&r, f, &header);
  fclose(f);
  if (st == CLT_OK && out->count == 0)
    st = clt_err_set(err, CLT_ERR_FORMAT, "%s holds no data rows", path);
  if (st != CLT_OK) {
    clt_dataset_free(out);
    return st;
  }
  char place[CLT_LABEL_COLUMN_MAX + 64];
  csv_place_text(&r, place, sizeof place);
  snprintf(out->source, sizeof out->source, "%s (CSV, %lld rows%s%s%s%s)",
           path, (long long)out->count, header ? " after a header line" : "",
           place, r.heads == 0 ? ", values only" : "",
           r.floats ? ", values as floats" : "");
  /* the place as asked, for checkpoints (the first column: not said) */
  if (r.heads > 0 && (r.head_at != 0 || r.label_name))
    snprintf(out->label_column, sizeof out->label_column, "%s",
             o->label_column);
  return CLT_OK;
}
