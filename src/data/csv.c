/* CSV datasets: one sample per line, parsed field by field with file:line
 * errors. Rows are appended to arrays that double as they fill. */
#include "data/csv.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct csv_reader {
  const char *path;
  long line; /* 1-based number of the line being parsed */
  const clt_data_options *o;
  int64_t heads;  /* leading fields: 1 label, o->targets targets, or none
                     (o->unlabelled) */
  int64_t pixels; /* fields after them: C * H * W */
  int64_t cap;    /* rows the arrays have room for */
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

static clt_status csv_not_number(csv_reader *r, int64_t column,
                                 const char *text) {
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

static clt_status csv_head(csv_reader *r, int64_t column, const char *text) {
  clt_dataset *ds = r->ds;
  if (r->o->targets > 0)
    return csv_float(r, column, text,
                     &ds->targets[ds->count * r->heads + column - 1]);
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

static clt_status csv_pixel(csv_reader *r, int64_t column, const char *text) {
  int64_t at = r->ds->count * r->pixels + column - 1 - r->heads;
  if (r->floats) return csv_float(r, column, text, &r->ds->fpixels[at]);
  long v;
  if (!csv_integral(text, &v) || v < 0 || v > 255) {
    double d;
    if (!csv_number(text, &d)) return csv_not_number(r, column, text);
    return clt_err_set(r->err, CLT_ERR_FORMAT,
                       "%s:%ld: column %lld (pixel %lld) is %.40s; pixels "
                       "must be whole numbers from 0 to 255 (values of any "
                       "size are read as floats with --csv-values floats, "
                       "CLT_CSV_FLOATS)",
                       r->path, r->line, (long long)column,
                       (long long)(column - r->heads), text);
  }
  r->ds->pixels[at] = (uint8_t)v;
  return CLT_OK;
}

/* The message for a row of `fields` values where heads + pixels belong. */
static clt_status csv_wrong_length(csv_reader *r, int64_t fields) {
  const clt_data_options *o = r->o;
  char what[64];
  if (r->heads == 0)
    snprintf(what, sizeof what, "no label (values to predict on) and ");
  else if (o->targets > 0)
    snprintf(what, sizeof what, "%lld targets and ", (long long)o->targets);
  else
    snprintf(what, sizeof what, "a label and ");
  return clt_err_set(r->err, CLT_ERR_FORMAT,
                     "%s:%ld: the row has %lld values, it needs %lld: %s%lld "
                     "%s for the model's %dx%dx%d input",
                     r->path, r->line, (long long)fields,
                     (long long)(r->heads + r->pixels), what,
                     (long long)r->pixels, r->floats ? "values" : "pixels",
                     o->channels, o->height, o->width);
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
  for (int64_t column = 1; (text = csv_field(&p, &more)); column++) {
    if (column <= r->heads)
      CLT_TRY(csv_head(r, column, text));
    else
      CLT_TRY(csv_pixel(r, column, text));
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
  return CLT_OK;
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
      continue;
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
  csv_reader r = {path,
                  0,
                  o,
                  o->unlabelled ? 0 : o->targets > 0 ? o->targets : 1,
                  (int64_t)o->channels * o->height * o->width,
                  0,
                  o->csv_values == CLT_CSV_FLOATS,
                  out,
                  err};
  bool header = false;
  clt_status st = csv_lines(&r, f, &header);
  fclose(f);
  if (st == CLT_OK && out->count == 0)
    st = clt_err_set(err, CLT_ERR_FORMAT, "%s holds no data rows", path);
  if (st != CLT_OK) {
    clt_dataset_free(out);
    return st;
  }
  snprintf(out->source, sizeof out->source, "%s (CSV, %lld rows%s%s%s)",
           path, (long long)out->count, header ? " after a header line" : "",
           r.heads == 0 ? ", values only" : "",
           r.floats ? ", values as floats" : "");
  return CLT_OK;
}
