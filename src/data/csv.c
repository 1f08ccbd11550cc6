/* CSV datasets: one sample per line, parsed field by field with file:line
 * errors. Rows are appended to arrays that double as they fill. */
#include "data/csv.h"
#include "data/name_table.h"
#include "io/json.h"

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
  /* Between fields: ',', '\t', ';', '|', or ' ' for a run of spaces and
   * tabs; 0 until the first line is read (o->csv_separator 0). */
  char sep;
  /* Labels as class names (the first row's label is not a number): the
   * names met, in that order, or o->class_names (names_given: no other
   * name is a class). names: -1 until the first row, 0 numbers, 1 names. */
  int names;
  bool names_given;
  clt_name_table classes;
  int64_t *class_rows; /* each class's rows so far */
  long *class_line;    /* the line each was first met on */
  int class_cap;       /* room in both */
  /* The first line's label is a name and its values numbers: a data row,
   * or a header whose other columns are named by numbers ("label,0,1").
   * A header if the next row's label is a number; else read as data, and
   * dropped as a header at the end if its name is no other row's label
   * (maybe_header). */
  bool maybe_header;
  char **fields;  /* a row's fields, heads + pixels of them */
  char *scratch;  /* a copy of a line, to look at without cutting it */
  size_t scratch_size;
  clt_dataset *ds;
  clt_err *err;
} csv_reader;

static bool csv_space(char c) { return c == ' ' || c == '\t'; }

/* c ends a field: the separator, or any space or tab when the separator
 * is a run of them. */
static bool csv_is_sep(char sep, char c) {
  return sep == ' ' ? csv_space(c) : c == sep;
}

/* c is padding around a field: a space or tab that is not the separator. */
static bool csv_pad(char sep, char c) {
  return csv_space(c) && (sep == ' ' || c != sep);
}

/* The next field of the line at *p, cut out in place as a NUL-terminated
 * string: trimmed, its double quotes taken off ("1,5" holds a comma, ""
 * is a quote, spaces inside quotes are kept); *p moves past the
 * separator. Returns NULL after the last field. Runs of spaces as the
 * separator (sep ' '): spaces at either end of the line start or end no
 * field. */
static char *csv_next(char sep, char **p, bool *more) {
  if (!*more) return NULL;
  char *s = *p;
  while (csv_pad(sep, *s)) s++;
  char *out = s, *w = s;
  size_t kept = 0; /* the quoted text, never trimmed */
  if (*s == '"') {
    for (s++; *s; *w++ = *s++)
      if (*s == '"' && *++s != '"') break;
    kept = (size_t)(w - out);
  }
  while (*s && !csv_is_sep(sep, *s)) *w++ = *s++; /* the rest, as it is */
  *more = *s != '\0';
  *p = *s ? s + 1 : s;
  while (w > out + kept && csv_pad(sep, w[-1])) w--;
  *w = '\0';
  if (sep == ' ' && *more) {
    while (csv_space(**p)) ++*p;
    *more = **p != '\0';
  }
  return out;
}

/* A line's text after a leading '#' (numpy's savetxt writes its header
 * as "# a b c"). */
static char *csv_after_hash(char *line) {
  char *s = line;
  while (csv_space(*s)) s++;
  if (*s != '#') return line;
  for (s++; csv_space(*s); s++) {
  }
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

/* text would be a number with its comma a point ("1,5", as spreadsheets
 * write numbers in much of Europe). */
static bool csv_decimal_comma(const char *text) {
  const char *comma = strchr(text, ',');
  if (!comma || strchr(comma + 1, ',') || strlen(text) >= 64) return false;
  char point[64];
  snprintf(point, sizeof point, "%s", text);
  point[comma - text] = '.';
  double v;
  return csv_number(point, &v);
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
                     "%s:%ld: column %lld is '%.40s', not a number%s", r->path,
                     r->line, (long long)column, text,
                     csv_decimal_comma(text)
                         ? " (a decimal comma: numbers are read with a "
                           "point, 1.5)"
                         : "");
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

/* Names for a message, quoted and joined: "'cat', 'dog'", cut short
 * when the text fills (csv_list_more then gives "..."). */
typedef struct csv_list {
  char text[160];
  size_t used;
  int count;
} csv_list;

static void csv_list_add(csv_list *l, const char *name) {
  if (l->used >= sizeof l->text - 1) return;
  int w = snprintf(l->text + l->used, sizeof l->text - l->used, "%s'%.40s'",
                   l->count++ ? ", " : "", name);
  l->used = w > 0 && l->used + (size_t)w < sizeof l->text
                ? l->used + (size_t)w
                : sizeof l->text - 1;
}

static const char *csv_list_more(const csv_list *l) {
  return l->used >= sizeof l->text - 1 ? "..." : "";
}

/* The label of a row whose labels are class names: the name's index in
 * the classes (a new one where the names are not given). */
static clt_status csv_name_label(csv_reader *r, int64_t column,
                                 const char *text) {
  if (csv_missing(text)) return csv_not_number(r, column, text);
  int at = clt_name_table_find(&r->classes, text);
  if (at < 0 && r->names_given) {
    csv_list names = {0};
    for (int i = 0; i < r->classes.count; i++)
      csv_list_add(&names, r->classes.names[i]);
    return clt_err_set(r->err, CLT_ERR_FORMAT,
                       "%s:%ld: the label '%.60s' is not a class of the "
                       "model or of the training data (%d: %s%s)",
                       r->path, r->line, text, r->classes.count, names.text,
                       csv_list_more(&names));
  }
  if (r->names_given && r->o->num_classes > 0 && at >= r->o->num_classes)
    return clt_err_set(r->err, CLT_ERR_FORMAT,
                       "%s:%ld: the label '%.60s' is class %d of the names "
                       "given, beyond the model's %d classes",
                       r->path, r->line, text, at, r->o->num_classes);
  if (at < 0 && r->classes.count == r->class_cap) {
    int cap = r->class_cap ? 2 * r->class_cap : 16;
    int64_t *rows = realloc(r->class_rows, (size_t)cap * sizeof *rows);
    if (rows) r->class_rows = rows;
    long *line = rows ? realloc(r->class_line, (size_t)cap * sizeof *line)
                      : NULL;
    if (line) r->class_line = line;
    if (!rows || !line)
      return clt_err_set(r->err, CLT_ERR_HOST_MEMORY,
                         "%s:%ld: out of memory for %d class names", r->path,
                         r->line, cap);
    r->class_cap = cap;
  }
  if (at < 0) {
    if (!clt_json_utf8_valid(text, strlen(text)))
      return clt_err_set(r->err, CLT_ERR_FORMAT,
                         "%s:%ld: the label '%.60s' is not UTF-8 text: "
                         "class names are kept as UTF-8 (save the file as "
                         "UTF-8)",
                         r->path, r->line, text);
    if ((at = clt_name_table_add(&r->classes, text)) < 0)
      return clt_err_set(r->err, CLT_ERR_HOST_MEMORY,
                         "%s:%ld: out of memory for %d class names", r->path,
                         r->line, r->classes.count + 1);
    r->class_rows[at] = 0;
    r->class_line[at] = r->line;
  }
  if (!r->names_given) r->class_rows[at]++;
  r->ds->labels[r->ds->count] = at;
  return CLT_OK;
}

/* Head h (0-based: the label, or target h) from the file's column. */
static clt_status csv_head(csv_reader *r, int64_t h, int64_t column,
                           const char *text) {
  clt_dataset *ds = r->ds;
  if (r->o->targets > 0)
    return csv_float(r, column, text, &ds->targets[ds->count * r->heads + h]);
  double v;
  if (r->names < 0) /* the first row's label says which */
    r->names = !csv_number(text, &v) && !csv_missing(text);
  if (r->names) return csv_name_label(r, column, text);
  long label;
  if (!csv_integral(text, &label)) {
    if (!csv_missing(text) && !csv_number(text, &v))
      return clt_err_set(r->err, CLT_ERR_FORMAT,
                         "%s:%ld: the label is '%.40s', a name, but the "
                         "first row's is a number: labels are all class "
                         "numbers (0, 1, ...) or all class names",
                         r->path, r->line, text);
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

/* What separates the fields, for messages: "tabs". */
static const char *csv_sep_name(char sep) {
  switch (sep) {
  case '\t': return "tabs";
  case ';': return "semicolons";
  case '|': return "'|'";
  case ' ': return "spaces";
  default: return "commas";
  }
}

/* The message for a row of `fields` values where heads + pixels belong. */
static clt_status csv_wrong_length(csv_reader *r, int64_t fields) {
  char holds[160];
  csv_row_holds(r, holds, sizeof holds);
  char sep[64] = "";
  if (r->sep != ',')
    snprintf(sep, sizeof sep, " separated by %s", csv_sep_name(r->sep));
  else if (fields == 1)
    snprintf(sep, sizeof sep, " (no comma, tab, ';', '|' or space "
                              "separates values)");
  return clt_err_set(r->err, CLT_ERR_FORMAT,
                     "%s:%ld: the row has %lld value%s%s, it needs %lld: %s",
                     r->path, r->line, (long long)fields,
                     fields == 1 ? "" : "s", sep,
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

/* Finds r->label_name among the header line's fields. */
static clt_status csv_find_name(csv_reader *r, char *line) {
  char *p = csv_after_hash(line), *field;
  bool more = true;
  char heads[64];
  csv_list names = {0};
  int64_t found = -1, i = 0;
  csv_heads_name(r, heads, sizeof heads);
  for (; (field = csv_next(r->sep, &p, &more)); i++) {
    if (!strcmp(field, r->label_name)) {
      if (found >= 0)
        return clt_err_set(r->err, CLT_ERR_FORMAT,
                           "%s:%ld: the header line names two columns "
                           "'%.100s' (%lld and %lld): which is %s?",
                           r->path, r->line, r->label_name,
                           (long long)(found + 1), (long long)(i + 1), heads);
      found = i;
    }
    csv_list_add(&names, field);
  }
  if (found < 0)
    return clt_err_set(r->err, CLT_ERR_FORMAT,
                       "%s:%ld: no column of the header line is named "
                       "'%.100s' (%s); it has %lld: %s%s",
                       r->path, r->line, r->label_name, heads, (long long)i,
                       names.text, csv_list_more(&names));
  char given[CLT_LABEL_COLUMN_MAX + 48];
  snprintf(given, sizeof given, "column %lld ('%s')", (long long)(found + 1),
           r->label_name);
  return csv_place_at(r, found, given, CLT_ERR_FORMAT);
}

/* The fields of line, cut out in place into r->fields (as many as fit);
 * their count. */
static int64_t csv_split(csv_reader *r, char *line) {
  int64_t n = 0, cap = r->heads + r->pixels;
  bool more = true;
  char *p = line, *text;
  for (; (text = csv_next(r->sep, &p, &more)); n++)
    if (n < cap) r->fields[n] = text;
  return n;
}

static clt_status csv_row(csv_reader *r, char *line) {
  int64_t fields = csv_split(r, line);
  if (fields != r->heads + r->pixels) return csv_wrong_length(r, fields);
  CLT_TRY(csv_grow(r));
  for (int64_t i = 0; i < fields; i++) {
    int64_t h = i - r->head_at;
    if (h >= 0 && h < r->heads)
      CLT_TRY(csv_head(r, h, i + 1, r->fields[i]));
    else
      CLT_TRY(csv_pixel(r, h < 0 ? i : i - r->heads, i + 1, r->fields[i]));
  }
  r->ds->count++;
  return CLT_OK;
}

/* line copied into r->scratch, to be cut there; NULL if out of memory. */
static char *csv_copy(csv_reader *r, const char *line) {
  size_t n = strlen(line) + 1;
  if (n > r->scratch_size) {
    char *s = realloc(r->scratch, n);
    if (!s) {
      clt_err_set(r->err, CLT_ERR_HOST_MEMORY,
                  "%s:%ld: out of memory for a line of %zu bytes", r->path,
                  r->line, n);
      return NULL;
    }
    r->scratch = s;
    r->scratch_size = n;
  }
  return memcpy(r->scratch, line, n);
}

/* The fields line splits into at sep (after a leading '#'), or -1 if out
 * of memory. */
static int64_t csv_count_at(csv_reader *r, const char *line, char sep) {
  char *copy = csv_copy(r, line);
  if (!copy) return -1;
  char *p = csv_after_hash(copy);
  bool more = true;
  int64_t n = 0;
  while (csv_next(sep, &p, &more)) n++;
  return n;
}

/* The separator, from the file's first line when o->csv_separator is 0:
 * the first of ',', '\t', ';', '|' and runs of spaces that splits it into
 * a row's columns; if none does, ',' unless the line holds no comma, then
 * the one that splits it into the most (its row's length error will say
 * how many). */
static clt_status csv_find_sep(csv_reader *r, const char *line) {
  static const char seps[] = {',', '\t', ';', '|', ' '};
  int64_t want = r->heads + r->pixels, n[sizeof seps];
  for (size_t i = 0; i < sizeof seps; i++) {
    n[i] = csv_count_at(r, line, seps[i]);
    if (n[i] < 0) return CLT_ERR_HOST_MEMORY;
    if (n[i] == want) {
      r->sep = seps[i];
      return CLT_OK;
    }
  }
  r->sep = ',';
  for (size_t i = 1, best = 0; n[0] <= 1 && i < sizeof seps; i++)
    if (n[i] > n[best]) r->sep = seps[best = i];
  return CLT_OK;
}

/* Whether line is a header: its first field is not a number ("label",
 * "pixel1"), unless that field is the label, every other field a number
 * (or missing) and the model a classifier: then the label may be a class
 * name (*maybe: csv_reader.maybe_header says what is made of it). */
static clt_status csv_is_header(csv_reader *r, const char *line,
                                bool *header, bool *maybe) {
  char *copy = csv_copy(r, line);
  if (!copy) return CLT_ERR_HOST_MEMORY;
  int64_t n = csv_split(r, copy);
  double v;
  *maybe = false;
  *header = !csv_number(r->fields[0], &v);
  if (!*header || n != r->heads + r->pixels || r->head_at != 0 ||
      r->heads == 0 || r->o->targets > 0 || csv_missing(r->fields[0]))
    return CLT_OK;
  for (int64_t i = 1; i < n; i++)
    if (!csv_number(r->fields[i], &v) && !csv_missing(r->fields[i]))
      return CLT_OK;
  *header = false;
  *maybe = true;
  return CLT_OK;
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
  if (o->csv_separator && !strchr(",\t;| ", o->csv_separator))
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "%s: csv_separator %d is none of ',', '\\t', ';', "
                       "'|' and ' ' (0: found from the first line)",
                       path, (int)o->csv_separator);
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

/* The classes o->class_names gives (a trained model's, or the training
 * split's): label names map to their indices. */
static clt_status csv_given_names(csv_reader *r) {
  r->names_given = true;
  for (int i = 0; i < r->o->n_class_names; i++)
    if (clt_name_table_find(&r->classes, r->o->class_names[i]) < 0 &&
        clt_name_table_add(&r->classes, r->o->class_names[i]) != i)
      return clt_err_set(r->err, CLT_ERR_HOST_MEMORY,
                         "%s: out of memory for %d class names", r->path,
                         r->o->n_class_names);
  return CLT_OK;
}

typedef struct csv_ranked {
  const char *name;
  int met; /* its index in the order met */
} csv_ranked;

static int csv_rank_cmp(const void *a, const void *b) {
  return strcmp(((const csv_ranked *)a)->name, ((const csv_ranked *)b)->name);
}

/* A first row read as data that was a header: its label's name is no
 * other row's (csv_reader.maybe_header). Dropped; *header set. */
static void csv_drop_first(csv_reader *r, bool *header) {
  clt_dataset *ds = r->ds;
  int32_t first = ds->labels[0];
  if (!r->maybe_header || r->names_given || ds->count < 2 ||
      r->class_rows[first] != 1)
    return;
  int64_t n = --ds->count;
  if (ds->pixels)
    memmove(ds->pixels, ds->pixels + r->pixels, (size_t)(n * r->pixels));
  else
    memmove(ds->fpixels, ds->fpixels + r->pixels,
            (size_t)(n * r->pixels) * sizeof *ds->fpixels);
  memmove(ds->labels, ds->labels + 1, (size_t)n * sizeof *ds->labels);
  r->class_rows[first] = 0;
  *header = true;
}

/* The dataset's classes from names: the given ones, or those of the rows
 * sorted (as image folders', and scikit-learn's LabelEncoder), the labels
 * renumbered to match; more than the model's classes is an error at the
 * line that met the first one too many. */
static clt_status csv_name_classes(csv_reader *r, bool *header) {
  clt_dataset *ds = r->ds;
  if (r->names_given)
    return clt_dataset_set_class_names(
        ds, (const char *const *)r->o->class_names, r->o->n_class_names,
        r->err);
  csv_drop_first(r, header);
  int met = r->classes.count, n = 0, bound = r->o->num_classes;
  csv_ranked *rank = malloc((size_t)met * sizeof *rank);
  int32_t *to = malloc((size_t)met * sizeof *to);
  const char **sorted = malloc((size_t)met * sizeof *sorted);
  clt_status st = CLT_OK;
  if (!rank || !to || !sorted) {
    st = clt_err_set(r->err, CLT_ERR_HOST_MEMORY,
                     "%s: out of memory for %d class names", r->path, met);
    goto done;
  }
  for (int i = 0; i < met; i++) {
    if (r->class_rows[i] == 0) continue; /* the header's */
    if (bound > 0 && n == bound) {
      csv_list names = {0};
      for (int j = 0; j < i; j++)
        if (r->class_rows[j] > 0) csv_list_add(&names, r->classes.names[j]);
      st = clt_err_set(r->err, CLT_ERR_FORMAT,
                       "%s:%ld: the label '%.60s' is one class more than "
                       "the model's %d (the labels before it: %s%s)",
                       r->path, r->class_line[i], r->classes.names[i], bound,
                       names.text, csv_list_more(&names));
      goto done;
    }
    rank[n++] = (csv_ranked){r->classes.names[i], i};
  }
  qsort(rank, (size_t)n, sizeof *rank, csv_rank_cmp);
  for (int i = 0; i < n; i++) {
    to[rank[i].met] = i;
    sorted[i] = rank[i].name;
  }
  for (int64_t i = 0; i < ds->count; i++) ds->labels[i] = to[ds->labels[i]];
  st = clt_dataset_set_class_names(ds, sorted, n, r->err);
done:
  free(rank);
  free(to);
  free(sorted);
  return st;
}

/* The targets' names from the header line (a regression's, a multi-label
 * model's): the fields where the targets are, kept where the line has a
 * field a column and each is non-empty UTF-8 (else none are: the outputs
 * then go by number). Out of memory: none either. */
static void csv_target_names(csv_reader *r, char *line) {
  int64_t n = csv_split(r, csv_after_hash(line)), k = r->heads;
  if (k <= 0 || n != k + r->pixels || r->head_at < 0 || r->ds->target_names)
    return;
  for (int64_t i = 0; i < k; i++) {
    const char *f = r->fields[r->head_at + i];
    if (!*f || !clt_json_utf8_valid(f, strlen(f))) return;
  }
  char **names = calloc((size_t)k, sizeof *names);
  bool ok = names != NULL;
  for (int64_t i = 0; ok && i < k; i++)
    ok = (names[i] = strdup(r->fields[r->head_at + i])) != NULL;
  if (!ok) {
    for (int64_t i = 0; names && i < k; i++) free(names[i]);
    free(names);
    return;
  }
  r->ds->target_names = names;
}

/* The first line held back (maybe a header, csv_reader.maybe_header),
 * now that the next row is in `line` (NULL: none): a header if that row's
 * label is a number, else a row of names read now. The file's only line
 * is a header, as pandas reads it: no data follow. */
static clt_status csv_settle_first(csv_reader *r, char **pending,
                                   long pending_line, const char *line,
                                   bool *had_header) {
  bool header = true;
  if (line) {
    char *copy = csv_copy(r, line);
    if (!copy) return CLT_ERR_HOST_MEMORY;
    double v;
    header = csv_split(r, copy) > 0 && csv_number(r->fields[0], &v);
  }
  clt_status st = CLT_OK;
  if (header) {
    *had_header = true;
  } else {
    long at = r->line;
    r->line = pending_line;
    r->maybe_header = true;
    st = csv_row(r, *pending);
    r->line = at;
  }
  free(*pending);
  *pending = NULL;
  return st;
}

static clt_status csv_lines(csv_reader *r, FILE *f, bool *had_header) {
  char *line = NULL, *pending = NULL;
  long pending_line = 0;
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
    if (pending) {
      st = csv_settle_first(r, &pending, pending_line, line, had_header);
      if (st != CLT_OK) break;
    }
    bool header = false, maybe = false;
    if (first && !r->sep && (st = csv_find_sep(r, line)) != CLT_OK) break;
    if (first && (st = csv_is_header(r, line, &header, &maybe)) != CLT_OK)
      break;
    /* given classes: a label that is none of them names the column */
    if (maybe && r->names_given)
      header = clt_name_table_find(&r->classes, r->fields[0]) < 0;
    if (maybe && !r->names_given) { /* the next row tells */
      if (!(pending = strdup(line))) {
        st = clt_err_set(r->err, CLT_ERR_HOST_MEMORY,
                         "%s:%ld: out of memory for a line", r->path,
                         r->line);
        break;
      }
      pending_line = r->line;
      first = false;
      continue;
    }
    if (header) {
      *had_header = true;
      first = false;
      char *names = r->o->targets > 0 ? strdup(line) : NULL;
      if (r->label_name) st = csv_find_name(r, line);
      if (st == CLT_OK && names) csv_target_names(r, names);
      free(names);
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
  if (st == CLT_OK && pending) /* a file of one line: its header */
    st = csv_settle_first(r, &pending, pending_line, NULL, had_header);
  free(pending);
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
                  .sep = o->csv_separator,
                  .names = -1,
                  .ds = out,
                  .err = err};
  clt_status st = csv_label_place(&r);
  if (st == CLT_OK && r.heads > 0 && o->targets <= 0 && o->class_names)
    st = csv_given_names(&r);
  bool header = false;
  r.fields = malloc((size_t)(r.heads + r.pixels) * sizeof *r.fields);
  if (st == CLT_OK && !r.fields)
    st = clt_err_set(err, CLT_ERR_HOST_MEMORY,
                     "%s: out of memory for a row of %lld fields", path,
                     (long long)(r.heads + r.pixels));
  if (st == CLT_OK) st = csv_lines(&r, f, &header);
  fclose(f);
  free(r.fields);
  free(r.scratch);
  if (st == CLT_OK && out->count > 0 && r.names == 1)
    st = csv_name_classes(&r, &header);
  clt_name_table_free(&r.classes);
  free(r.class_rows);
  free(r.class_line);
  if (st == CLT_OK && out->count == 0)
    st = clt_err_set(err, CLT_ERR_FORMAT, "%s holds no data rows%s", path,
                     header ? " (only a header line)" : "");
  if (st != CLT_OK) {
    clt_dataset_free(out);
    return st;
  }
  char place[CLT_LABEL_COLUMN_MAX + 64];
  csv_place_text(&r, place, sizeof place);
  char sep[40] = "";
  if (r.sep != ',')
    snprintf(sep, sizeof sep, ", separated by %s", csv_sep_name(r.sep));
  char classes[48] = "";
  if (r.names == 1)
    snprintf(classes, sizeof classes, ", %d classes by name",
             out->num_classes);
  snprintf(out->source, sizeof out->source,
           "%s (CSV, %lld row%s%s%s%s%s%s%s)", path, (long long)out->count,
           out->count == 1 ? "" : "s", header ? " after a header line" : "",
           sep, place, classes, r.heads == 0 ? ", values only" : "",
           r.floats ? ", values as floats" : "");
  /* the place as asked, for checkpoints (the first column: not said) */
  if (r.heads > 0 && (r.head_at != 0 || r.label_name))
    snprintf(out->label_column, sizeof out->label_column, "%s",
             o->label_column);
  return CLT_OK;
}
