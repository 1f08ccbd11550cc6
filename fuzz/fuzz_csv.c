/* libFuzzer target for the CSV dataset reader (`--data FILE.csv`).
 *
 * The reader takes a path, so each input is written to one temporary file
 * per process and read back. The input's first two bytes choose the
 * options (the samples' shape 1..2 x 1..3 x 1..3, a label bound or none,
 * or 1..2 regression targets; values as bytes or as floats; rows with
 * their label or targets, or values only; the label or targets in the
 * first column, the last, column 2, or the header's column "y"; the
 * separator, found or given; class names given or not); the rest is the
 * file. Beyond "no crash, no leak, no undefined behaviour":
 *   - an accepted file gives at least one sample of the options' shape,
 *     labels in [0, the bound) with num_classes the largest + 1 (labels
 *     that were names: the classes given, or those met, sorted), finite
 *     float targets, or neither (values only), and every value readable
 *     (finite, as floats); written
 *     back as CSV (labels and bytes as integers, floats with %.9g, which a
 *     float survives) and read again, it gives the same samples bit for
 *     bit (written label first, the label's place recorded as asked, with
 *     the separator given, else with a comma, a tab, a semicolon or
 *     spaces, to be found again);
 *   - a rejected one leaves the dataset empty and a message that names the
 *     file.
 * Build: see fuzz/README.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "data/csv.h"
#include "data/dataset.h"

static void require(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "broken promise: %s\n", what);
    abort();
  }
}

static char g_path[64], g_again[64];

/* Bits 4-6 of the second byte: the separator given (0: found), and the
 * one the rows are written back with. */
static const char g_given[8] = {0, ',', '\t', ';', ' ', 0, 0, 0};
static const char g_written[8] = {',', ',', '\t', ';', ' ', '\t', ';', ' '};
static char g_sep; /* this input's g_written */
static const char *const g_names[] = {"a", "b", "c"};

static void write_file(const char *path, const uint8_t *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  fclose(f);
}

/* The options of the input's first two bytes: b's bits 0 channels 1..2,
 * 1-2 height 1..3, 3-4 width 1..3, 5-7 the heads: 0 labels with no bound,
 * 1..5 labels below 2, 3, 5, 10, 256, 6..7 one or two targets; c's bit 0
 * the values as floats, bit 1 values only (unlabelled), bits 2-3 the
 * label column: first, last, 2, "y", bits 4-6 the separator (g_given,
 * g_written), bit 7 the classes named (g_names: labels that are names
 * map to them). */
static clt_data_options options_of(uint8_t b, uint8_t c) {
  static const int bounds[] = {0, 2, 3, 5, 10, 256};
  clt_data_options o;
  memset(&o, 0, sizeof o);
  o.channels = 1 + (b & 1);
  o.height = 1 + ((b >> 1) & 3) % 3;
  o.width = 1 + ((b >> 3) & 3) % 3;
  int heads = b >> 5;
  if (heads <= 5)
    o.num_classes = bounds[heads];
  else
    o.targets = heads - 5;
  o.csv_values = c & 1 ? CLT_CSV_FLOATS : CLT_CSV_BYTES;
  o.unlabelled = (c & 2) != 0;
  if (c & 128) {
    o.class_names = g_names;
    o.n_class_names = 3;
  }
  static const char *const columns[] = {NULL, "last", "2", "y"};
  o.label_column = columns[(c >> 2) & 3];
  o.csv_separator = g_given[(c >> 4) & 7];
  return o;
}

static bool empty(const clt_dataset *ds) {
  return ds->count == 0 && !ds->pixels && !ds->fpixels && !ds->labels &&
         !ds->targets && !ds->class_names;
}

static void check_accepted(const clt_data_options *o, const clt_dataset *ds) {
  int64_t size = (int64_t)o->channels * o->height * o->width;
  require(ds->count >= 1, "a sample");
  require(ds->channels == o->channels && ds->height == o->height &&
              ds->width == o->width,
          "the options' shape");
  if (o->csv_values == CLT_CSV_FLOATS) {
    require(ds->fpixels && !ds->pixels, "float values");
    for (int64_t i = 0; i < ds->count * size; i++)
      require(isfinite(ds->fpixels[i]), "finite values");
  } else {
    require(ds->pixels && !ds->fpixels, "byte pixels");
    volatile uint8_t sum = 0; /* touch every pixel, for ASan */
    for (int64_t i = 0; i < ds->count * size; i++) sum ^= ds->pixels[i];
    (void)sum;
  }
  require(strstr(ds->source, g_path) && strstr(ds->source, "CSV"),
          "source names the file");
  if (o->unlabelled) {
    require(!ds->labels && !ds->targets && ds->target_size == 0 &&
                ds->num_classes == 0 && !ds->label_column[0],
            "values only");
    return;
  }
  require(!strcmp(ds->label_column, o->label_column ? o->label_column : ""),
          "the label column recorded as asked");
  if (o->targets > 0) {
    require(ds->targets && !ds->labels, "targets, no labels");
    require(ds->target_size == o->targets, "target count");
    for (int64_t i = 0; i < ds->count * o->targets; i++)
      require(isfinite(ds->targets[i]), "finite targets");
    return;
  }
  require(ds->labels && !ds->targets && ds->target_size == 0,
          "labels, no targets");
  int32_t top = -1;
  for (int64_t i = 0; i < ds->count; i++) {
    require(ds->labels[i] >= 0, "labels >= 0");
    require(o->num_classes == 0 || ds->labels[i] < o->num_classes,
            "labels below the bound");
    if (ds->labels[i] > top) top = ds->labels[i];
  }
  if (!ds->class_names) {
    require(ds->num_classes == top + 1, "num_classes is the largest + 1");
    return;
  }
  /* labels that were names: the classes given, or those met, sorted */
  if (o->class_names) {
    require(ds->num_classes == 3, "the classes given");
    for (int i = 0; i < 3; i++)
      require(!strcmp(ds->class_names[i], g_names[i]), "their names");
    return;
  }
  require(ds->num_classes == top + 1, "each class met");
  for (int i = 0; i + 1 < ds->num_classes; i++)
    require(strcmp(ds->class_names[i], ds->class_names[i + 1]) < 0,
            "classes sorted, each once");
}

/* ds as a CSV file at g_again: its heads, then its pixels, a row each. */
static void write_back(const clt_data_options *o, const clt_dataset *ds) {
  int64_t size = (int64_t)o->channels * o->height * o->width;
  FILE *f = fopen(g_again, "w");
  if (!f) abort();
  for (int64_t i = 0; i < ds->count; i++) {
    const char comma[2] = {g_sep, '\0'}, *sep = comma;
    if (o->unlabelled)
      sep = ""; /* the first value starts the row */
    else if (o->targets > 0)
      for (int64_t t = 0; t < o->targets; t++)
        fprintf(f, "%s%.9g", t ? comma : "",
                (double)ds->targets[i * o->targets + t]);
    else
      fprintf(f, "%d", ds->labels[i]);
    for (int64_t p = 0; p < size; p++, sep = comma)
      if (ds->fpixels)
        fprintf(f, "%s%.9g", sep, (double)ds->fpixels[i * size + p]);
      else
        fprintf(f, "%s%u", sep, ds->pixels[i * size + p]);
    fputc('\n', f);
  }
  if (fclose(f) != 0) abort();
}

static void check_round_trip(const clt_data_options *asked,
                             const clt_dataset *ds) {
  clt_data_options first = *asked; /* written back label first */
  first.label_column = NULL;
  const clt_data_options *o = &first;
  write_back(o, ds);
  clt_dataset again;
  clt_err err;
  memset(&err, 0, sizeof err);
  require(clt_csv_read(g_again, o, &again, &err) == CLT_OK,
          "its own rows read again");
  int64_t size = (int64_t)o->channels * o->height * o->width;
  require(again.count == ds->count, "the same count");
  if (ds->fpixels)
    require(!memcmp(again.fpixels, ds->fpixels,
                    (size_t)(ds->count * size) * sizeof(float)),
            "the same values, bit for bit");
  else
    require(!memcmp(again.pixels, ds->pixels, (size_t)(ds->count * size)),
            "the same pixels");
  if (o->unlabelled)
    require(!again.labels && !again.targets, "values only again");
  else if (o->targets > 0)
    require(!memcmp(again.targets, ds->targets,
                    (size_t)(ds->count * o->targets) * sizeof(float)),
            "the same targets, bit for bit");
  else
    require(!memcmp(again.labels, ds->labels,
                    (size_t)ds->count * sizeof(int32_t)) &&
                (ds->class_names ? again.num_classes <= ds->num_classes
                                 : again.num_classes == ds->num_classes),
            "the same labels");
  clt_dataset_free(&again);
  unlink(g_again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  if (!g_path[0]) {
    snprintf(g_path, sizeof g_path, "/tmp/fuzz_csv_%ld.csv", (long)getpid());
    snprintf(g_again, sizeof g_again, "/tmp/fuzz_csv_%ld_again.csv",
             (long)getpid());
  }
  clt_data_options o = options_of(data[0], data[1]);
  g_sep = g_written[(data[1] >> 4) & 7];
  write_file(g_path, data + 2, size - 2);
  clt_dataset ds;
  clt_err err;
  memset(&err, 0, sizeof err);
  if (clt_csv_read(g_path, &o, &ds, &err) == CLT_OK) {
    check_accepted(&o, &ds);
    check_round_trip(&o, &ds);
  } else {
    require(empty(&ds), "empty on failure");
    require(strstr(err.msg, g_path) != NULL, "message names the file");
  }
  clt_dataset_free(&ds);
  unlink(g_path);
  return 0;
}
