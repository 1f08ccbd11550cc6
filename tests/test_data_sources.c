/* Tests of the data a user brings (host only, no device): CSV files, image
 * folders (PNG and JPEG, grey and colour, corrupt and wrong-sized files),
 * the packed cache, hold-out splits and class names in JSON. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkdtemp, nftw */
#endif
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/csv.h"
#include "data/dataset.h"
#include "data/folder.h"
#include "cltrain_image.h"
#include "data/image_decode.h"
#include "image_writer.h"
#include "io/class_names.h"
#include "remove_tree.h"
#include "run_checks.h"

static char g_dir[256];

static void path_in(char *out, size_t len, const char *name) {
  snprintf(out, len, "%s/%s", g_dir, name);
}

static void write_text(const char *name, const char *text, char *path,
                       size_t len) {
  path_in(path, len, name);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
}

/* Samples of 1x2x2: a label and 4 pixels per row. */
static clt_data_options opts_2x2(int classes) {
  clt_data_options o;
  clt_data_options_init(&o);
  o.channels = 1;
  o.height = 2;
  o.width = 2;
  o.num_classes = classes;
  return o;
}

/* Reads the CSV text with options o, expecting a format error with every
 * needle in the message and nothing kept. */
static void csv_expect_error_with(const clt_data_options *o, const char *text,
                                  const char *needle1, const char *needle2) {
  char path[512];
  write_text("bad.csv", text, path, sizeof path);
  clt_dataset ds;
  clt_err err = {0};
  ck_assert_int_eq(clt_csv_read(path, o, &ds, &err), CLT_ERR_FORMAT);
  ck_assert_msg(strstr(err.msg, needle1), "'%s' not in: %s", needle1, err.msg);
  if (needle2)
    ck_assert_msg(strstr(err.msg, needle2), "'%s' not in: %s", needle2,
                  err.msg);
  ck_assert_ptr_null(ds.pixels);
  ck_assert_ptr_null(ds.fpixels);
  ck_assert_ptr_null(ds.labels);
  ck_assert_ptr_null(ds.targets);
}

/* csv_expect_error_with samples of 1x2x2 labelled below classes. */
static void csv_expect_error(const char *text, int classes, const char *needle1,
                             const char *needle2) {
  clt_data_options o = opts_2x2(classes);
  csv_expect_error_with(&o, text, needle1, needle2);
}

START_TEST(csv_with_header) {
  char path[512];
  write_text("h.csv",
             "label,pixel1,pixel2,pixel3,pixel4\n"
             "2,0,1,2,255\r\n"
             "0, 10 ,20,30,40\n"
             "\n"
             "1,5,6,7,8.0\n",
             path, sizeof path);
  clt_data_options o = opts_2x2(3);
  clt_dataset ds;
  clt_err err = {0};
  ck_assert_msg(clt_csv_read(path, &o, &ds, &err) == CLT_OK, "%s", err.msg);
  ck_assert_int_eq(ds.count, 3);
  ck_assert_int_eq(ds.num_classes, 3);
  ck_assert_int_eq(ds.labels[0], 2);
  ck_assert_int_eq(ds.labels[2], 1);
  ck_assert_int_eq(ds.pixels[3], 255);
  ck_assert_int_eq(ds.pixels[5], 20);
  ck_assert_int_eq(ds.pixels[11], 8);
  ck_assert_ptr_nonnull(strstr(ds.source, "after a header line"));
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(csv_without_header) {
  char path[512];
  write_text("n.csv", "\xef\xbb\xbf"
             "1,1,2,3,4\n0,5,6,7,8", path, sizeof path);
  clt_data_options o = opts_2x2(0);
  clt_dataset ds;
  clt_err err = {0};
  ck_assert_msg(clt_csv_read(path, &o, &ds, &err) == CLT_OK, "%s", err.msg);
  ck_assert_int_eq(ds.count, 2);
  ck_assert_int_eq(ds.labels[0], 1);
  ck_assert_int_eq(ds.pixels[7], 8);
  ck_assert_ptr_null(strstr(ds.source, "header"));
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(csv_short_row) {
  csv_expect_error("label,a,b,c,d\n1,1,2,3,4\n0,5,6,7\n", 10, "bad.csv:3:",
                   "the row has 4 values, it needs 5: a label and 4 pixels "
                   "for the model's 1x2x2 input");
  csv_expect_error("1,1,2,3,4,5\n", 10, "bad.csv:1:", "has 6 values");
}
END_TEST

START_TEST(csv_label_out_of_range) {
  csv_expect_error("1,1,2,3,4\n3,5,6,7,8\n", 3, "bad.csv:2:",
                   "the label is 3, out of range: the model has 3 classes");
  csv_expect_error("1,1,2,3,4\n-1,5,6,7,8\n", 3,
                   "bad.csv:2:", "cannot be negative");
  csv_expect_error("1.5,1,2,3,4\n", 3, "bad.csv:1:", "whole numbers");
  /* Whole in another form: the value counts, not how it is written. */
  csv_expect_error("1e1,1,2,3,4\n", 3, "bad.csv:1:",
                   "the label is 10, out of range: the model has 3 classes");
  /* Beyond what a label can be: out of range, not "not whole". */
  csv_expect_error("1,1,2,3,4\n3000000000,5,6,7,8\n", 0, "bad.csv:2:",
                   "the label is 3000000000, out of range: labels are class "
                   "numbers from 0");
  csv_expect_error("-5e9,1,2,3,4\n", 0, "bad.csv:1:", "cannot be negative");
}
END_TEST

/* Whole numbers written as "2.0", "1e1" or "2.55e2" are read as such. */
START_TEST(csv_whole_in_any_form) {
  char path[512];
  write_text("w.csv", "2.0,1e1,2.55e2,0.0,-0\n1e0,+7,007,25.000,3\n", path,
             sizeof path);
  clt_data_options o = opts_2x2(3);
  clt_dataset ds;
  clt_err err = {0};
  ck_assert_msg(clt_csv_read(path, &o, &ds, &err) == CLT_OK, "%s", err.msg);
  ck_assert_int_eq(ds.count, 2);
  ck_assert_int_eq(ds.labels[0], 2);
  ck_assert_int_eq(ds.labels[1], 1);
  const uint8_t want[8] = {10, 255, 0, 0, 7, 7, 25, 3};
  ck_assert_mem_eq(ds.pixels, want, sizeof want);
  clt_dataset_free(&ds);
  csv_expect_error("0,1,2,2.56e2,4\n", 3, "bad.csv:1:",
                   "column 4 (pixel 3) is 2.56e2; pixels must be whole");
  /* Decimal only: strtod would read 0x10 as 16. */
  csv_expect_error("0,1,2,0x10,4\n", 3, "bad.csv:1:",
                   "column 4 is '0x10', not a number");
}
END_TEST

START_TEST(csv_bad_values) {
  csv_expect_error("1,1,2,3,4\n1,1,x2,3,4\n", 3,
                   "bad.csv:2:", "column 3 is 'x2', not a number");
  csv_expect_error("1,1,2,300,4\n", 3,
                   "bad.csv:1:", "column 4 (pixel 3) is 300");
  csv_expect_error("1,1,2,-3,4\n", 3, "bad.csv:1:", "0 to 255");
  csv_expect_error("label,a,b,c,d\n", 3, "bad.csv holds no data rows", NULL);
  /* Missing values, as pandas, numpy, R and databases write them. */
  csv_expect_error("1,1,,3,4\n", 3, "bad.csv:1: column 3 is empty, a missing "
                   "value: every value must be a number (fill in or drop",
                   NULL);
  csv_expect_error("1,1,2,3, \n", 3, "column 5 is empty, a missing value",
                   NULL);
  const char *marks[] = {"nan", "NaN", "NA", "n/a", "NULL", "None", "?"};
  for (int i = 0; i < 7; i++) {
    char text[64], says[64];
    snprintf(text, sizeof text, "0,1,2,3,4\n%s,1,2,3,4\n", marks[i]);
    snprintf(says, sizeof says, "column 1 is '%s', a missing value", marks[i]);
    csv_expect_error(text, 3, says, NULL);
  }
  clt_data_options o = opts_2x2(3);
  o.csv_values = CLT_CSV_FLOATS;
  csv_expect_error_with(&o, "1,1.5,nan,3,4\n", "column 3 is 'nan', a missing",
                        NULL);
}
END_TEST

START_TEST(csv_targets) {
  char path[512];
  write_text("t.csv", "y1,y2,a,b,c,d\n0.5,-2e-1,1,2,3,4\n", path, sizeof path);
  clt_data_options o = opts_2x2(0);
  o.targets = 2;
  clt_dataset ds;
  clt_err err = {0};
  ck_assert_msg(clt_csv_read(path, &o, &ds, &err) == CLT_OK, "%s", err.msg);
  ck_assert_int_eq(ds.count, 1);
  ck_assert_ptr_null(ds.labels);
  ck_assert_int_eq(ds.target_size, 2);
  ck_assert_float_eq_tol(ds.targets[1], -0.2f, 1e-6f);
  ck_assert_int_eq(ds.pixels[0], 1);
  clt_dataset_free(&ds);
  /* A target beyond a float's range would train on infinity. */
  csv_expect_error_with(&o, "0.5,1e39,1,2,3,4\n",
                        "bad.csv:1: column 2 is 1e39, beyond a float's range",
                        NULL);
  write_text("t.csv", "-3e38,1e-50,1,2,3,4\n", path, sizeof path);
  ck_assert_msg(clt_csv_read(path, &o, &ds, &err) == CLT_OK, "%s", err.msg);
  ck_assert_float_eq(ds.targets[0], -3e38f);
  ck_assert_float_eq(ds.targets[1], 0.0f);
  clt_dataset_free(&ds);
}
END_TEST

/* CLT_CSV_FLOATS: any decimal number, as it is, with the labels or the
 * targets as before; a value beyond a float, or not a number, named. */
START_TEST(csv_floats) {
  char path[512];
  clt_data_options o = opts_2x2(3);
  o.csv_values = CLT_CSV_FLOATS;
  csv_expect_error_with(&o, "label,a,b,c,d\n2,300,-1.5,2.5e-3,0x1\n",
                        "bad.csv:2: column 5 is '0x1', not a number", NULL);
  clt_dataset ds;
  clt_err err = {0};
  write_text("f.csv", "label,a,b,c,d\n2,300,-1.5,2.5e-3,0\n1e0,1,2,3,4\n",
             path, sizeof path);
  ck_assert_msg(clt_csv_read(path, &o, &ds, &err) == CLT_OK, "%s", err.msg);
  ck_assert_int_eq(ds.count, 2);
  ck_assert_ptr_null(ds.pixels);
  ck_assert_ptr_nonnull(ds.fpixels);
  const float want[8] = {300.0f, -1.5f, 2.5e-3f, 0.0f, 1, 2, 3, 4};
  ck_assert_mem_eq(ds.fpixels, want, sizeof want);
  ck_assert_int_eq(ds.labels[0], 2);
  ck_assert_int_eq(ds.labels[1], 1);
  ck_assert_msg(strstr(ds.source, "values as floats"), "%s", ds.source);
  clt_dataset_free(&ds);
  /* Too small for a double is nearly 0; too large, out of range; inf and
   * nan are not numbers. */
  write_text("f.csv", "0,1e-400,1,1,1\n", path, sizeof path);
  ck_assert_msg(clt_csv_read(path, &o, &ds, &err) == CLT_OK, "%s", err.msg);
  ck_assert_float_eq(ds.fpixels[0], 0.0f);
  clt_dataset_free(&ds);
  csv_expect_error_with(&o, "0,1,1e400,1,1\n",
                        "column 3 is 1e400, beyond a float", NULL);
  csv_expect_error_with(&o, "0,1,1,inf,1\n", "column 4 is 'inf', not a number",
                        NULL);
  csv_expect_error_with(&o, "0,1,2,-4e38,4\n",
                        "bad.csv:1: column 4 is -4e38, beyond a float", NULL);
  /* A row of the wrong length counts values, not pixels. */
  csv_expect_error_with(&o, "0,1,2\n",
                        "it needs 5: a label and 4 values for the model's "
                        "1x2x2 input",
                        NULL);
  /* Bytes, the default, say how to read such a file. */
  o.csv_values = CLT_CSV_BYTES;
  csv_expect_error_with(&o, "0,1,2,-4e38,4\n", "--csv-values floats", NULL);
  o.csv_values = (clt_csv_values)7;
  ck_assert_int_eq(clt_csv_read(path, &o, &ds, &err), CLT_ERR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.msg, "csv_values 7"), "%s", err.msg);
}
END_TEST

/* Rows to predict on: the values only, no label or targets. */
START_TEST(csv_unlabelled) {
  char path[512];
  write_text("u.csv", "a,b,c,d\n1,2,3,4\n5,6,7,8\n", path, sizeof path);
  clt_data_options o = opts_2x2(3);
  o.unlabelled = true;
  clt_dataset ds;
  clt_err err = {0};
  ck_assert_msg(clt_csv_read(path, &o, &ds, &err) == CLT_OK, "%s", err.msg);
  ck_assert_int_eq(ds.count, 2);
  ck_assert_ptr_null(ds.labels);
  ck_assert_ptr_null(ds.targets);
  ck_assert_int_eq(ds.num_classes, 0);
  const uint8_t want[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ck_assert_mem_eq(ds.pixels, want, sizeof want);
  ck_assert_msg(strstr(ds.source, "values only"), "%s", ds.source);
  clt_dataset_free(&ds);
  o.targets = 2; /* a regression model's rows hold no targets either */
  ck_assert_msg(clt_csv_read(path, &o, &ds, &err) == CLT_OK, "%s", err.msg);
  ck_assert_ptr_null(ds.targets);
  ck_assert_int_eq(ds.target_size, 0);
  clt_dataset_free(&ds);
  csv_expect_error_with(&o, "0,1,2,3,4\n",
                        "bad.csv:1: the row has 5 values, it needs 4: no label",
                        NULL);
}
END_TEST

/* Reads text with options o, which must succeed. */
static void csv_read_ok(const clt_data_options *o, const char *text,
                        clt_dataset *ds) {
  char path[512];
  write_text("lc.csv", text, path, sizeof path);
  clt_err err = {0};
  ck_assert_msg(clt_csv_read(path, o, ds, &err) == CLT_OK, "%s", err.msg);
}

/* The same rows with the label elsewhere (o.label_column: last, a column
 * number, a header name) give the same dataset as label-first rows. */
START_TEST(csv_label_column) {
  clt_data_options o = opts_2x2(0);
  clt_dataset first, ds;
  csv_read_ok(&o, "2,0,1,2,255\n0,10,20,30,40\n1,5,6,7,8\n", &first);
  ck_assert_str_eq(first.label_column, "");
  const struct {
    const char *spec, *text, *says;
  } cases[] = {
      {"last", "0,1,2,255,2\n10,20,30,40,0\n5,6,7,8,1\n",
       "label in column 5)"},
      {"3", "0,1,2,2,255\n10,20,0,30,40\n5,6,1,7,8\n", "label in column 3)"},
      {"+3", "0,1,2,2,255\n10,20,0,30,40\n5,6,1,7,8\n", "label in column 3)"},
      /* quoted, with a comma, a doubled quote, spaces around */
      {"the \"class\", y",
       "a,b, \"the \"\"class\"\", y\" ,c,d\n0,1,2,2,255\n10,20,0,30,40\n"
       "5,6,1,7,8\n",
       "label in column 3 ('the \"class\", y'))"},
      {"class", "a, class ,b,c,d\n0,2,1,2,255\n10,0,20,30,40\n5,1,6,7,8\n",
       "label in column 2 ('class'))"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    o.label_column = cases[i].spec;
    csv_read_ok(&o, cases[i].text, &ds);
    ck_assert_int_eq(ds.count, 3);
    ck_assert_int_eq(ds.num_classes, 3);
    ck_assert_mem_eq(ds.labels, first.labels, 3 * sizeof *ds.labels);
    ck_assert_mem_eq(ds.pixels, first.pixels, 12);
    ck_assert_msg(strstr(ds.source, cases[i].says), "%s: %s", cases[i].spec,
                  ds.source);
    ck_assert_str_eq(ds.label_column, cases[i].spec);
    clt_dataset_free(&ds);
  }
  /* The first column, said in any way, is the default: not recorded. */
  const char *firsts[] = {"first", "1", "", "label"};
  for (size_t i = 0; i < 4; i++) {
    o.label_column = firsts[i];
    csv_read_ok(&o, "label,a,b,c,d\n2,0,1,2,255\n0,10,20,30,40\n1,5,6,7,8\n",
                &ds);
    ck_assert_mem_eq(ds.labels, first.labels, 3 * sizeof *ds.labels);
    ck_assert_mem_eq(ds.pixels, first.pixels, 12);
    /* a name is said where it was found */
    ck_assert_msg(i == 3 ? strstr(ds.source, "label in column 1 ('label')") != NULL
                         : strstr(ds.source, "column") == NULL,
                  "%s", ds.source);
    ck_assert_str_eq(ds.label_column, i == 3 ? "label" : "");
    clt_dataset_free(&ds);
  }
  clt_dataset_free(&first);
  /* A random split keeps the record, for the checkpoint of its rest. */
  o.label_column = "last";
  csv_read_ok(&o, "0,1,2,255,2\n10,20,30,40,0\n5,6,7,8,1\n", &ds);
  clt_dataset rest, part;
  clt_err err = {0};
  ck_assert_int_eq(clt_dataset_split_random(&ds, 0.34, 1, &rest, &part, &err),
                   CLT_OK);
  ck_assert_str_eq(rest.label_column, "last");
  clt_dataset_free(&rest);
  clt_dataset_free(&part);
  clt_dataset_free(&ds);
  /* Rows to predict on have no label: the option has nothing to find. */
  o.unlabelled = true;
  o.label_column = "nowhere";
  csv_read_ok(&o, "1,2,3,4\n", &ds);
  ck_assert_int_eq(ds.count, 1);
  ck_assert_str_eq(ds.label_column, "");
  clt_dataset_free(&ds);
}
END_TEST

/* Targets from the last columns, or from a named one on. */
/* Tabs, semicolons, '|' and runs of spaces separate fields as commas do,
 * found from the first line or as asked; quoted values are read; a
 * decimal comma and a row no separator splits are called what they are. */
START_TEST(csv_separators) {
  clt_data_options o = opts_2x2(0);
  clt_dataset first, ds;
  csv_read_ok(&o, "2,0,1,2,255\n0,10,20,30,40\n", &first);
  const struct {
    const char *text, *says;
  } cases[] = {
      {"label\ta\tb\tc\td\n2\t0\t1\t2\t255\n0\t 10 \t20\t30\t40\n",
       "after a header line, separated by tabs)"},
      {"2;0;1;2;255\r\n0;10;20;30;40\n", "separated by semicolons)"},
      {"2|0|1|2|255\n0|10|20|30|40\n", "separated by '|')"},
      /* numpy's savetxt: its header after '#', %.18e, padding anywhere */
      {"# y a b c d\n2.000000000000000000e+00 0.0e+00   1 2 255 \n"
       "  0\t10 20 30  4e1\n",
       "after a header line, separated by spaces)"},
      {"\"label\",\"a\",\"b\",\"c\",\"d\"\n\"2\",\"0\", \"1\" ,2,\"255\"\n"
       "0,10,20,30,40\n",
       "(CSV, 2 rows after a header line)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    csv_read_ok(&o, cases[i].text, &ds);
    ck_assert_int_eq(ds.count, 2);
    ck_assert_mem_eq(ds.labels, first.labels, 2 * sizeof *ds.labels);
    ck_assert_mem_eq(ds.pixels, first.pixels, 8);
    ck_assert_msg(strstr(ds.source, cases[i].says), "case %zu: %s", i,
                  ds.source);
    clt_dataset_free(&ds);
  }
  /* a header name after numpy's '#' */
  o.label_column = "y";
  csv_read_ok(&o, "# a b y c d\n0 1 2 2 255\n10 20 0 30 40\n", &ds);
  ck_assert_mem_eq(ds.labels, first.labels, 2 * sizeof *ds.labels);
  ck_assert_mem_eq(ds.pixels, first.pixels, 8);
  clt_dataset_free(&ds);
  o.label_column = NULL;
  /* as asked: the first line is not looked at */
  o.csv_separator = '\t';
  csv_read_ok(&o, "2\t0\t1\t2\t255\n0\t10\t20\t30\t40\n", &ds);
  ck_assert_mem_eq(ds.pixels, first.pixels, 8);
  clt_dataset_free(&ds);
  /* (its first line, no number in tab-separated terms, is a header) */
  csv_expect_error_with(&o, "2,0,1,2,255\n2,0,1,2,255\n", "bad.csv:2:",
                        "the row has 1 value separated by tabs, it needs 5");
  o.csv_separator = 'x';
  char path[512];
  write_text("x.csv", "2,0,1,2,255\n", path, sizeof path);
  clt_err err = {0};
  ck_assert_int_eq(clt_csv_read(path, &o, &ds, &err),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.msg, "csv_separator"), "%s", err.msg);
  o.csv_separator = 0;
  /* a quoted separator is a value's; here a decimal comma */
  o.csv_values = CLT_CSV_FLOATS;
  csv_expect_error_with(&o, "1,\"0,5\",2,3,4\n", "bad.csv:1:",
                        "column 2 is '0,5', not a number (a decimal comma");
  csv_expect_error_with(&o, "1;0,5;2;3;4\n", "bad.csv:1:",
                        "column 2 is '0,5', not a number (a decimal comma");
  csv_expect_error_with(&o, "1,2,3,4,5\n1;2;3;4;5\n", "bad.csv:2:",
                        "the row has 1 value (no comma, tab, ';', '|' or "
                        "space separates values), it needs 5");
  /* no separator fits: the one that splits the most, said */
  csv_expect_error_with(&o, "1\t2\t3\n", "bad.csv:1:",
                        "the row has 3 values separated by tabs, it needs 5");
  csv_expect_error_with(&o, "1,2,3\n", "bad.csv:1:",
                        "the row has 3 values, it needs 5");
  clt_dataset_free(&first);
}
END_TEST

/* Labels that are class names: classes in sorted order (as image
 * folders'), or mapped to given names; the errors of a name too many, a
 * name not given, and a name after numbers. */
START_TEST(csv_class_names) {
  clt_data_options o = opts_2x2(0);
  clt_dataset ds;
  const char *rows = "species,a,b,c,d\ndog,1,2,3,4\n\"cat\",5,6,7,8\n"
                     "bird,9,9,9,9\ncat,0,0,0,0\n\"a, b\",1,1,1,1\n3,2,2,2,2\n";
  csv_read_ok(&o, rows, &ds);
  ck_assert_int_eq(ds.count, 6);
  ck_assert_int_eq(ds.num_classes, 5);
  /* sorted: "3" < "a, b" < "bird" < "cat" < "dog" */
  const char *want[] = {"3", "a, b", "bird", "cat", "dog"};
  for (int i = 0; i < 5; i++) ck_assert_str_eq(ds.class_names[i], want[i]);
  const int32_t labels[] = {4, 3, 2, 3, 1, 0};
  ck_assert_mem_eq(ds.labels, labels, sizeof labels);
  ck_assert_int_eq(ds.pixels[4], 5);
  ck_assert_msg(strstr(ds.source, "after a header line, 5 classes by name)"),
                "%s", ds.source);
  clt_dataset_free(&ds);
  /* with the label last, in a file separated by tabs */
  o.label_column = "last";
  csv_read_ok(&o, "1\t2\t3\t4\tdog\n5\t6\t7\t8\tcat\n", &ds);
  ck_assert_int_eq(ds.num_classes, 2);
  ck_assert_str_eq(ds.class_names[0], "cat");
  ck_assert_int_eq(ds.labels[0], 1);
  clt_dataset_free(&ds);
  o.label_column = NULL;
  /* no header: the first row is data (its class is met again) */
  csv_read_ok(&o, "dog,1,2,3,4\ncat,5,6,7,8\ndog,0,0,0,0\n", &ds);
  ck_assert_int_eq(ds.count, 3);
  ck_assert_int_eq(ds.labels[0], 1);
  ck_assert_int_eq(ds.pixels[0], 1);
  ck_assert_ptr_null(strstr(ds.source, "header"));
  clt_dataset_free(&ds);
  /* the columns named by numbers (pandas' header for an array's columns):
   * a header, its label's name no other row's */
  csv_read_ok(&o, "label,0,1,2,3\ndog,1,2,3,4\ncat,5,6,7,8\n", &ds);
  ck_assert_int_eq(ds.count, 2);
  ck_assert_int_eq(ds.num_classes, 2);
  ck_assert_str_eq(ds.class_names[0], "cat");
  const int32_t after[] = {1, 0};
  ck_assert_mem_eq(ds.labels, after, sizeof after);
  ck_assert_int_eq(ds.pixels[0], 1);
  ck_assert_int_eq(ds.pixels[4], 5);
  ck_assert_msg(strstr(ds.source, "2 rows after a header line, 2 classes"),
                "%s", ds.source);
  clt_dataset_free(&ds);
  /* ... and with numbers for labels after it: a header, numbers stay
   * numbers (12 is class 12, not the name "12" sorted before "5") */
  csv_read_ok(&o, "label,0,1,2,3\n5,1,2,3,4\n12,5,6,7,8\n", &ds);
  ck_assert_int_eq(ds.count, 2);
  ck_assert_int_eq(ds.labels[0], 5);
  ck_assert_int_eq(ds.labels[1], 12);
  ck_assert_int_eq(ds.num_classes, 13);
  ck_assert_ptr_null(ds.class_names);
  ck_assert_msg(strstr(ds.source, "(CSV, 2 rows after a header line)"), "%s",
                ds.source);
  clt_dataset_free(&ds);
  /* a file of one such line: its header, as pandas reads it (the name
   * is no other row's label), so no data */
  csv_expect_error_with(&o, "label,0,1,2,3\n", "bad.csv holds no data rows",
                        "(only a header line)");
  csv_expect_error_with(&o, "dog,1,2,3,4\n", "holds no data rows", NULL);
  /* ... but a row where the classes are given (a test file of one row) */
  const char *given[] = {"dog", "cat", "bird"};
  o.class_names = given;
  o.n_class_names = 3;
  csv_read_ok(&o, "bird,1,2,3,4\n", &ds);
  ck_assert_int_eq(ds.count, 1);
  ck_assert_int_eq(ds.labels[0], 2);
  clt_dataset_free(&ds);
  csv_read_ok(&o, "cat,1,2,3,4\nbird,5,6,7,8\n", &ds);
  ck_assert_int_eq(ds.num_classes, 3);
  ck_assert_int_eq(ds.labels[0], 1);
  ck_assert_int_eq(ds.labels[1], 2);
  ck_assert_str_eq(ds.class_names[0], "dog");
  clt_dataset_free(&ds);
  csv_read_ok(&o, "label,0,1,2,3\ncat,1,2,3,4\n", &ds); /* a header */
  ck_assert_int_eq(ds.count, 1);
  ck_assert_int_eq(ds.labels[0], 1);
  clt_dataset_free(&ds);
  csv_expect_error_with(&o, "cat,1,2,3,4\nfish,5,6,7,8\n", "bad.csv:2:",
                        "the label 'fish' is not a class of the model or of "
                        "the training data (3: 'dog', 'cat', 'bird')");
  o.num_classes = 2; /* names beyond the model's classes */
  csv_expect_error_with(&o, "cat,1,2,3,4\nbird,5,6,7,8\n", "bad.csv:2:",
                        "the label 'bird' is class 2 of the names given, "
                        "beyond the model's 2 classes");
  o.num_classes = 0;
  /* numbers stay numbers */
  csv_read_ok(&o, "2,1,2,3,4\n0,5,6,7,8\n", &ds);
  ck_assert_int_eq(ds.labels[0], 2);
  ck_assert_ptr_null(ds.class_names);
  clt_dataset_free(&ds);
  o.class_names = NULL;
  o.n_class_names = 0;

  o.num_classes = 2;
  csv_expect_error_with(&o, "dog,1,2,3,4\ncat,1,2,3,4\ndog,1,2,3,4\n"
                        "bird,5,6,7,8\nbird,1,1,1,1\n",
                        "bad.csv:4:",
                        "the label 'bird' is one class more than the model's "
                        "2 (the labels before it: 'dog', 'cat')");
  o.num_classes = 0;
  csv_expect_error_with(&o, "1,1,2,3,4\ncat,5,6,7,8\n", "bad.csv:2:",
                        "the label is 'cat', a name, but the first row's is "
                        "a number");
  csv_expect_error_with(&o, "dog,1,2,3,4\nNA,5,6,7,8\n", "bad.csv:2:",
                        "column 1 is 'NA', a missing value");
  csv_expect_error_with(&o, "dog,1,2,3,4\ncaf\xe9,5,6,7,8\n", "bad.csv:2:",
                        "is not UTF-8 text: class names are kept as UTF-8");
}
END_TEST

START_TEST(csv_target_columns) {
  clt_data_options o = opts_2x2(0);
  o.targets = 2;
  o.csv_values = CLT_CSV_FLOATS;
  o.label_column = "last";
  clt_dataset ds;
  csv_read_ok(&o, "1,2,3,4,0.5,-7\n5,6,7,8,1e3,2\n", &ds);
  const float want_t[4] = {0.5f, -7.0f, 1e3f, 2.0f};
  const float want_x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ck_assert_mem_eq(ds.targets, want_t, sizeof want_t);
  ck_assert_mem_eq(ds.fpixels, want_x, sizeof want_x);
  ck_assert_msg(strstr(ds.source, "targets in columns 5 to 6"), "%s",
                ds.source);
  clt_dataset_free(&ds);
  o.label_column = "y1";
  csv_read_ok(&o, "a,y1,y2,b,c,d\n1,0.5,-7,2,3,4\n5,1e3,2,6,7,8\n", &ds);
  ck_assert_mem_eq(ds.targets, want_t, sizeof want_t);
  ck_assert_mem_eq(ds.fpixels, want_x, sizeof want_x);
  ck_assert_msg(strstr(ds.source, "targets in columns 2 to 3 ('y1')"), "%s",
                ds.source);
  clt_dataset_free(&ds);
  /* A value's message counts the file's columns, and the value's own. */
  o.csv_values = CLT_CSV_BYTES;
  o.label_column = "2";
  csv_expect_error_with(&o, "1,0.5,-7,2,300,4\n",
                        "bad.csv:1: column 5 (pixel 3) is 300", NULL);
  csv_expect_error_with(&o, "1,0.5,x,2,3,4\n", "column 3 is 'x', not a number",
                        NULL);
  /* the named target runs past the row's end */
  o.label_column = "y2";
  csv_expect_error_with(&o, "a,b,c,d,y1,y2\n1,2,3,4,5,6\n",
                        "bad.csv:1: the 2 target columns cannot start at "
                        "column 6 ('y2'): a row has 6 columns (2 targets and 4 "
                        "pixels",
                        NULL);
  o.targets = 1;
  o.label_column = "e";
  csv_expect_error_with(&o, "a,b,c,d,f\n", "no column of the header line is "
                        "named 'e' (the target column)", NULL);
}
END_TEST

/* What cannot be found or does not fit, named. */
START_TEST(csv_label_column_errors) {
  clt_data_options o = opts_2x2(3);
  o.label_column = "y";
  csv_expect_error_with(&o, "a,b,c,d,e\n0,1,2,3,4\n",
                        "bad.csv:1: no column of the header line is named 'y' "
                        "(the label column); it has 5: 'a', 'b', 'c', 'd', 'e'",
                        NULL);
  csv_expect_error_with(&o, "a,y,c,y,e\n0,1,2,3,4\n",
                        "bad.csv:1: the header line names two columns 'y' (2 "
                        "and 4)",
                        NULL);
  csv_expect_error_with(&o, "\n0,1,2,3,4\n",
                        "bad.csv:2: the label column is named 'y', but the "
                        "file has no header line",
                        NULL);
  /* A long header is listed in part. */
  char text[2048] = "";
  for (int i = 0; i < 100; i++)
    snprintf(text + strlen(text), sizeof text - strlen(text), "%scolumn_%d",
             i ? "," : "", i);
  strcat(text, "\n");
  csv_expect_error_with(&o, text, "it has 100: 'column_0', 'column_1'", "...");
  /* The label's own checks count the file's columns. */
  o.label_column = "last";
  csv_expect_error_with(&o, "0,1,2,3,7\n", "bad.csv:1: the label is 7, out of "
                        "range", NULL);
  csv_expect_error_with(&o, "0,1,2,256,1\n",
                        "bad.csv:1: column 4 (pixel 4) is 256", NULL);
  csv_expect_error_with(&o, "0,1,2,1\n", "the row has 4 values, it needs 5",
                        NULL);
  /* Numbers that name no column, and a name too long to record, are bad
   * options whatever the file holds. */
  char path[512];
  write_text("ok.csv", "0,1,2,3,4\n", path, sizeof path);
  char longname[CLT_LABEL_COLUMN_MAX + 1];
  memset(longname, 'n', CLT_LABEL_COLUMN_MAX);
  longname[CLT_LABEL_COLUMN_MAX] = '\0';
  const struct {
    const char *spec, *says;
  } bad[] = {
      {"6", "the label column cannot start at column 6: a row has 5 columns "
            "(a label and 4 pixels for the model's 1x2x2 input)"},
      {"123456789012345678901", "cannot start at column 12345678901234567890"},
      {"0", "label column 0: columns count from 1 (the last is 'last')"},
      {"-2", "label column -2: columns count from 1"},
      {longname, "the label column's name is 128 characters long; at most "
                 "127"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    clt_dataset ds;
    clt_err err = {0};
    o.label_column = bad[i].spec;
    ck_assert_int_eq(clt_csv_read(path, &o, &ds, &err),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err.msg, bad[i].says), "'%s' not in: %s", bad[i].says,
                  err.msg);
    ck_assert_ptr_null(ds.labels);
  }
}
END_TEST

START_TEST(split_tail_holds_out_the_last) {
  char path[512];
  write_text("s.csv", "0,0,0,0,0\n1,1,1,1,1\n2,2,2,2,2\n0,3,3,3,3\n1,4,4,4,4\n",
             path, sizeof path);
  clt_data_options o = opts_2x2(3);
  clt_dataset ds, held;
  clt_err err = {0};
  ck_assert_int_eq(clt_csv_read(path, &o, &ds, &err), CLT_OK);
  ck_assert_int_eq(clt_dataset_split_tail(&ds, 0.4, &held, &err), CLT_OK);
  ck_assert_int_eq(ds.count, 3);
  ck_assert_int_eq(held.count, 2);
  ck_assert_int_eq(held.labels[0], 0);
  ck_assert_int_eq(held.pixels[4], 4);
  clt_dataset_truncate(&ds, 1);
  ck_assert_int_eq(ds.count, 1);
  clt_dataset_free(&held);
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(class_names_round_trip) {
  const char *names[] = {"cat", "dog \"big\"", "caf\xc3\xa9"};
  char *json = NULL;
  clt_err err = {0};
  ck_assert_int_eq(clt_class_names_encode(names, 3, &json, &err), CLT_OK);
  char **back = NULL;
  int n = 0;
  ck_assert_int_eq(clt_class_names_decode(json, "x", &back, &n, &err), CLT_OK);
  ck_assert_int_eq(n, 3);
  for (int i = 0; i < 3; i++) ck_assert_str_eq(back[i], names[i]);
  clt_class_names_free(back, n);
  free(json);
  ck_assert_int_eq(clt_class_names_decode("[1]", "x", &back, &n, &err),
                   CLT_ERR_FORMAT);
}
END_TEST

/* ---- image folders ------------------------------------------------------- */

static clt_data_options opts_images(int c, int h, int w) {
  clt_data_options o;
  clt_data_options_init(&o);
  o.channels = c;
  o.height = h;
  o.width = w;
  static char cache[512];
  path_in(cache, sizeof cache, "cache");
  o.cache_dir = cache;
  o.cache = 1;
  return o;
}

static bool with_jpeg(void) { return clt_image_format_supported("jpeg"); }

START_TEST(folder_reads_grey_and_colour) {
  char dir[512];
  path_in(dir, sizeof dir, "f1");
  ck_assert(tw_write_folder(dir, 3, 6, 8, 8, with_jpeg()));
  clt_data_options o = opts_images(1, 8, 8);
  o.cache = 0;
  clt_dataset ds;
  clt_err err = {0};
  ck_assert_msg(clt_folder_read(dir, &o, &ds, &err) == CLT_OK, "%s", err.msg);
  ck_assert_int_eq(ds.count, 18);
  ck_assert_int_eq(ds.num_classes, 3);
  ck_assert_str_eq(ds.class_names[0], "class_a");
  ck_assert_str_eq(ds.class_names[2], "class_c");
  /* Every class is there, in a shuffled order. */
  int seen[3] = {0};
  for (int64_t i = 0; i < ds.count; i++) seen[ds.labels[i]]++;
  ck_assert_int_eq(seen[0] + seen[1] + seen[2], 18);
  ck_assert_int_eq(seen[1], 6);
  ck_assert(ds.labels[0] != ds.labels[1] || ds.labels[1] != ds.labels[2] ||
            ds.labels[2] != ds.labels[3]);
  /* The lit quarter of each image says its class (grey, RGB or JPEG). */
  for (int64_t i = 0; i < ds.count; i++) {
    int label = ds.labels[i];
    const uint8_t *px = ds.pixels + i * 64;
    int lx = (label % 2) * 4 + 1, ly = (label / 2) * 4 + 1;
    ck_assert_int_gt(px[ly * 8 + lx], 150);
  }
  clt_dataset_free(&ds);
  /* As colour: grey images are copied to the three channels. */
  o = opts_images(3, 8, 8);
  o.cache = 0;
  ck_assert_msg(clt_folder_read(dir, &o, &ds, &err) == CLT_OK, "%s", err.msg);
  for (int i = 0; i < 64; i++) {
    ck_assert_int_eq(ds.pixels[i], ds.pixels[64 + i]);
    ck_assert_int_eq(ds.pixels[i], ds.pixels[128 + i]);
  }
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(folder_colour_to_grey_by_luma) {
  char dir[512], path[600];
  path_in(dir, sizeof dir, "f2");
  ck_assert(tw_mkdir(dir));
  snprintf(path, sizeof path, "%s/red", dir);
  ck_assert(tw_mkdir(path));
  snprintf(path, sizeof path, "%s/red/r.png", dir);
  uint8_t px[4 * 3];
  for (int i = 0; i < 4; i++)
    px[3 * i] = 255, px[3 * i + 1] = 0, px[3 * i + 2] = 0;
  ck_assert(tw_write_png(path, px, 2, 2, 3));
  clt_data_options o = opts_images(1, 2, 2);
  o.cache = 0;
  clt_dataset ds;
  clt_err err = {0};
  ck_assert_msg(clt_folder_read(dir, &o, &ds, &err) == CLT_OK, "%s", err.msg);
  ck_assert_int_eq(ds.pixels[0], 76); /* 0.299 * 255, PIL's convert("L") */
  clt_dataset_free(&ds);
}
END_TEST

static void folder_expect_error(const char *dir, clt_data_options *o,
                                clt_status want, const char *n1,
                                const char *n2) {
  clt_dataset ds;
  clt_err err = {0};
  ck_assert_int_eq(clt_folder_read(dir, o, &ds, &err), want);
  ck_assert_msg(strstr(err.msg, n1), "'%s' not in: %s", n1, err.msg);
  if (n2) ck_assert_msg(strstr(err.msg, n2), "'%s' not in: %s", n2, err.msg);
}

START_TEST(folder_corrupt_image_is_named) {
  char dir[512], path[600];
  path_in(dir, sizeof dir, "f3");
  ck_assert(tw_write_folder(dir, 2, 5, 8, 8, false));
  /* A PNG cut short: the header is there, the pixels are not. */
  snprintf(path, sizeof path, "%s/class_b/img03.png", dir);
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_int_eq(truncate(path, st.st_size / 2), 0);
  clt_data_options o = opts_images(1, 8, 8);
  folder_expect_error(dir, &o, CLT_ERR_FORMAT, "class_b/img03.png",
                      "not a readable PNG");
  /* Bytes of no image format at all. */
  ck_assert_int_eq(truncate(path, 0), 0);
  FILE *f = fopen(path, "w");
  fputs("this is not an image", f);
  fclose(f);
  folder_expect_error(dir, &o, CLT_ERR_FORMAT, "class_b/img03.png",
                      "neither a PNG nor a JPEG");
}
END_TEST

START_TEST(folder_corrupt_jpeg_is_named) {
  if (!with_jpeg()) return;
  char dir[512], path[600];
  path_in(dir, sizeof dir, "f3j");
  ck_assert(tw_write_folder(dir, 2, 6, 16, 16, true));
  snprintf(path, sizeof path, "%s/class_a/img05.jpg", dir);
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_int_eq(truncate(path, st.st_size / 2), 0);
  clt_data_options o = opts_images(1, 16, 16);
  folder_expect_error(dir, &o, CLT_ERR_FORMAT, "class_a/img05.jpg", "JPEG");
}
END_TEST

START_TEST(folder_wrong_size_without_resize) {
  char dir[512], path[600];
  path_in(dir, sizeof dir, "f4");
  ck_assert(tw_write_folder(dir, 2, 4, 8, 8, false));
  uint8_t px[10 * 6];
  memset(px, 100, sizeof px);
  snprintf(path, sizeof path, "%s/class_a/wide.png", dir);
  ck_assert(tw_write_png(path, px, 10, 6, 1));
  clt_data_options o = opts_images(1, 8, 8);
  folder_expect_error(dir, &o, CLT_ERR_SHAPE, "class_a/wide.png",
                      "the image is 10x6 pixels (width x height), the "
                      "model's input is 8x8; pass --resize");
  o.resize = true;
  clt_dataset ds;
  clt_err err = {0};
  ck_assert_msg(clt_folder_read(dir, &o, &ds, &err) == CLT_OK, "%s", err.msg);
  ck_assert_int_eq(ds.count, 9);
  /* The uniform image stays uniform through bilinear resizing. */
  bool found = false;
  for (int64_t i = 0; i < ds.count; i++) {
    const uint8_t *p = ds.pixels + i * 64;
    bool uniform = true;
    for (int k = 0; k < 64; k++) uniform = uniform && p[k] == 100;
    found = found || uniform;
  }
  ck_assert(found);
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(folder_classes_beyond_the_model) {
  char dir[512];
  path_in(dir, sizeof dir, "f5");
  ck_assert(tw_write_folder(dir, 3, 2, 4, 4, false));
  clt_data_options o = opts_images(1, 4, 4);
  o.num_classes = 2;
  folder_expect_error(dir, &o, CLT_ERR_FORMAT, "holds 3 class folders",
                      "the model has 2 classes");
  /* Mapped to a trained model's classes: an unknown folder is named. */
  const char *names[] = {"class_c", "class_a"};
  o.num_classes = 0;
  o.class_names = names;
  o.n_class_names = 2;
  folder_expect_error(dir, &o, CLT_ERR_FORMAT, "class 'class_b' is not one",
                      NULL);
  const char *all[] = {"class_c", "class_b", "class_a"};
  o.class_names = all;
  o.n_class_names = 3;
  clt_dataset ds;
  clt_err err = {0};
  ck_assert_int_eq(clt_folder_read(dir, &o, &ds, &err), CLT_OK);
  ck_assert_str_eq(ds.class_names[0], "class_c");
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(folder_cache_used_then_rebuilt) {
  char dir[512], path[600];
  path_in(dir, sizeof dir, "f6");
  ck_assert(tw_write_folder(dir, 2, 5, 8, 8, with_jpeg()));
  clt_data_options o = opts_images(1, 8, 8);
  clt_dataset a, b, c;
  clt_err err = {0};
  ck_assert_msg(clt_folder_read(dir, &o, &a, &err) == CLT_OK, "%s", err.msg);
  ck_assert(!a.from_cache);
  ck_assert_ptr_nonnull(strstr(a.source, "packed into the cache"));
  ck_assert_int_eq(clt_folder_read(dir, &o, &b, &err), CLT_OK);
  ck_assert(b.from_cache);
  ck_assert_ptr_nonnull(strstr(b.source, "read from the packed cache"));
  ck_assert_int_eq(b.count, a.count);
  ck_assert_mem_eq(a.pixels, b.pixels, (size_t)(a.count * 64));
  ck_assert_mem_eq(a.labels, b.labels, (size_t)a.count * 4);
  /* A file changes: its pixels are new, so is the key. */
  snprintf(path, sizeof path, "%s/class_a/img00.png", dir);
  uint8_t px[64];
  memset(px, 7, sizeof px);
  ck_assert(tw_write_png(path, px, 8, 8, 1));
  ck_assert_int_eq(clt_folder_read(dir, &o, &c, &err), CLT_OK);
  ck_assert(!c.from_cache);
  bool changed = memcmp(a.pixels, c.pixels, (size_t)(a.count * 64)) != 0;
  ck_assert(changed);
  clt_dataset_free(&a);
  clt_dataset_free(&b);
  clt_dataset_free(&c);
  /* The same options with a different shape make another entry. */
  clt_data_options o2 = opts_images(3, 8, 8);
  ck_assert_int_eq(clt_folder_read(dir, &o2, &a, &err), CLT_OK);
  ck_assert(!a.from_cache);
  clt_dataset_free(&a);
}
END_TEST

/* One thread or four: the same dataset, whatever the timing. */
START_TEST(folder_threads_agree) {
  char dir[512];
  path_in(dir, sizeof dir, "f7");
  ck_assert(tw_write_folder(dir, 3, 7, 8, 8, with_jpeg()));
  clt_data_options o = opts_images(3, 8, 8);
  o.cache = 0;
  o.threads = 1;
  clt_dataset a, b;
  clt_err err = {0};
  ck_assert_int_eq(clt_folder_read(dir, &o, &a, &err), CLT_OK);
  o.threads = 4;
  ck_assert_int_eq(clt_folder_read(dir, &o, &b, &err), CLT_OK);
  ck_assert_ptr_nonnull(strstr(b.source, "decoded on 4 threads"));
  ck_assert_mem_eq(a.pixels, b.pixels, (size_t)(a.count * 3 * 64));
  ck_assert_mem_eq(a.labels, b.labels, (size_t)a.count * 4);
  clt_dataset_free(&a);
  clt_dataset_free(&b);
}
END_TEST

/* A build without libjpeg says so for a JPEG, naming the file. */
START_TEST(folder_jpeg_without_libjpeg) {
  if (with_jpeg()) return;
  char dir[512], path[600];
  path_in(dir, sizeof dir, "nojpeg");
  ck_assert(tw_mkdir(dir));
  snprintf(path, sizeof path, "%s/a", dir);
  ck_assert(tw_mkdir(path));
  snprintf(path, sizeof path, "%s/a/photo.jpg", dir);
  FILE *f = fopen(path, "wb");
  fputs("\xff\xd8\xff\xe0 a jpeg", f);
  fclose(f);
  clt_data_options o = opts_images(1, 8, 8);
  folder_expect_error(dir, &o, CLT_ERR_UNSUPPORTED, "a/photo.jpg",
                      "built without libjpeg");
}
END_TEST

/* Writes dir/a/<name> holding the text (e.g. a format's first bytes). */
static void write_in_class(const char *dir, const char *name,
                           const char *text) {
  char path[700];
  ck_assert(tw_mkdir(dir));
  snprintf(path, sizeof path, "%s/a", dir);
  ck_assert(tw_mkdir(path));
  snprintf(path, sizeof path, "%s/a/%s", dir, name);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
}

START_TEST(image_format_by_first_bytes) {
  char dir[512], path[700];
  path_in(dir, sizeof dir, "formats");
  write_in_class(dir, "p.png", "\x89PNG\r\n\x1a\n and more");
  write_in_class(dir, "j.jpg", "\xff\xd8\xff\xe0");
  write_in_class(dir, "g.png", "P5 2 2 255\n");
  write_in_class(dir, "t.png", "not an image");
  const struct {
    const char *name;
    clt_image_format want;
  } cases[] = {{"p.png", CLT_IMAGE_FORMAT_PNG},
               {"j.jpg", CLT_IMAGE_FORMAT_JPEG},
               {"g.png", CLT_IMAGE_FORMAT_PGM}, /* contents, not the name */
               {"t.png", CLT_IMAGE_FORMAT_NONE},
               {"missing.png", CLT_IMAGE_FORMAT_NONE}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(path, sizeof path, "%s/a/%s", dir, cases[i].name);
    ck_assert_int_eq(clt_image_format_of(path), cases[i].want);
  }
  ck_assert_str_eq(clt_image_format_name(CLT_IMAGE_FORMAT_JPEG), "JPEG");
  ck_assert_ptr_null(clt_image_format_name(CLT_IMAGE_FORMAT_NONE));
}
END_TEST

/* A program that links libcltrain alone: a PNG or JPEG in a folder says
 * what to link and what to call, naming the file. */
START_TEST(folder_without_decoder_says_what_to_do) {
  char dir[512];
  path_in(dir, sizeof dir, "nodecoder");
  write_in_class(dir, "img.png", "\x89PNG\r\n\x1a\n not decoded");
  ck_assert_int_eq(clt_image_decoder_install(NULL), CLT_OK);
  clt_data_options o = opts_images(1, 8, 8);
  o.cache = 0;
  clt_dataset ds;
  clt_err err = {0};
  ck_assert_int_eq(clt_folder_read(dir, &o, &ds, &err), CLT_ERR_UNSUPPORTED);
  ck_assert_ptr_null(ds.pixels);
  const char *needles[] = {"a/img.png", "decoding PNG needs libcltrain-image",
                           "pkg-config cltrain-image", "clt_image_init()"};
  for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++)
    ck_assert_msg(strstr(err.msg, needles[i]), "'%s' not in: %s", needles[i],
                  err.msg);
  /* Once initialised (twice: nothing changes), libcltrain-image decodes it
   * (here: finds it corrupt, or says its build lacks libpng). */
  ck_assert_int_eq(clt_image_init(), CLT_OK);
  ck_assert_int_eq(clt_image_init(), CLT_OK);
  ck_assert_int_ne(clt_folder_read(dir, &o, &ds, &err), CLT_OK);
  ck_assert_msg(!strstr(err.msg, "needs libcltrain-image"), "%s", err.msg);
  ck_assert_msg(strstr(err.msg, "a/img.png"), "%s", err.msg);
}
END_TEST

/* A program's own decoder: every file becomes one grey pixel of 200. */
static clt_status one_pixel_decode(const char *path, clt_image_format format,
                                   clt_image_pixels *out, char *err,
                                   size_t errlen) {
  (void)path, (void)format, (void)err, (void)errlen;
  out->width = out->height = out->channels = 1;
  out->pixels = malloc(1);
  if (!out->pixels) return CLT_ERR_HOST_MEMORY;
  out->pixels[0] = 200;
  return CLT_OK;
}

START_TEST(folder_decodes_through_an_installed_decoder) {
  static const clt_image_decoder mine = {.decode = one_pixel_decode};
  static const clt_image_decoder none = {.decode = NULL};
  ck_assert_int_eq(clt_image_decoder_install(&none),
                   CLT_ERR_INVALID_ARGUMENT);
  char dir[512];
  path_in(dir, sizeof dir, "mine");
  write_in_class(dir, "x.jpg", "\xff\xd8\xff\xe0 whatever");
  ck_assert_int_eq(clt_image_decoder_install(&mine), CLT_OK);
  clt_data_options o = opts_images(3, 2, 2);
  o.cache = 0;
  o.resize = 1;
  clt_dataset ds;
  clt_err err = {0};
  ck_assert_msg(clt_folder_read(dir, &o, &ds, &err) == CLT_OK, "%s", err.msg);
  ck_assert_int_eq(ds.count, 1);
  for (int i = 0; i < 3 * 2 * 2; i++) ck_assert_int_eq(ds.pixels[i], 200);
  clt_dataset_free(&ds);
  ck_assert_int_eq(clt_image_init(), CLT_OK);
}
END_TEST

START_TEST(folder_needs_class_folders) {
  char dir[512];
  path_in(dir, sizeof dir, "empty");
  ck_assert(tw_mkdir(dir));
  clt_data_options o = opts_images(1, 8, 8);
  folder_expect_error(dir, &o, CLT_ERR_FORMAT, "holds no class folders", NULL);
  /* a class folder whose name a checkpoint could not keep */
  char bad[600];
  snprintf(bad, sizeof bad, "%s/caf\xe9", dir);
  ck_assert(tw_mkdir(bad));
  folder_expect_error(dir, &o, CLT_ERR_FORMAT,
                      "class folder's name is not UTF-8 text", NULL);
}
END_TEST

static Suite *data_sources_suite(void) {
  Suite *s = suite_create("data_sources");
  TCase *csv = tcase_create("csv");
  tcase_add_test(csv, csv_with_header);
  tcase_add_test(csv, csv_without_header);
  tcase_add_test(csv, csv_short_row);
  tcase_add_test(csv, csv_label_out_of_range);
  tcase_add_test(csv, csv_whole_in_any_form);
  tcase_add_test(csv, csv_floats);
  tcase_add_test(csv, csv_unlabelled);
  tcase_add_test(csv, csv_bad_values);
  tcase_add_test(csv, csv_targets);
  tcase_add_test(csv, csv_label_column);
  tcase_add_test(csv, csv_target_columns);
  tcase_add_test(csv, csv_label_column_errors);
  tcase_add_test(csv, csv_separators);
  tcase_add_test(csv, csv_class_names);
  tcase_add_test(csv, split_tail_holds_out_the_last);
  tcase_add_test(csv, class_names_round_trip);
  suite_add_tcase(s, csv);
  TCase *img = tcase_create("folders");
  tcase_set_timeout(img, 60);
  tcase_add_test(img, folder_jpeg_without_libjpeg);
  tcase_add_test(img, folder_needs_class_folders);
  tcase_add_test(img, image_format_by_first_bytes);
  tcase_add_test(img, folder_without_decoder_says_what_to_do);
  tcase_add_test(img, folder_decodes_through_an_installed_decoder);
  suite_add_tcase(s, img);
  /* The rest writes PNG files: not in a build without libpng. */
  if (!tw_can_write()) return s;
  tcase_add_test(img, folder_reads_grey_and_colour);
  tcase_add_test(img, folder_colour_to_grey_by_luma);
  tcase_add_test(img, folder_corrupt_image_is_named);
  tcase_add_test(img, folder_corrupt_jpeg_is_named);
  tcase_add_test(img, folder_wrong_size_without_resize);
  tcase_add_test(img, folder_classes_beyond_the_model);
  tcase_add_test(img, folder_cache_used_then_rebuilt);
  tcase_add_test(img, folder_threads_agree);
  return s;
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/clt_data_sources_XXXXXX");
  if (!mkdtemp(g_dir)) return EXIT_FAILURE;
  printf("data_sources: PNG %s, JPEG %s\n",
         clt_image_format_supported("png") ? "yes" : "no (skipped)",
         clt_image_format_supported("jpeg") ? "yes" : "no (skipped)");
  /* Image folders decode through libcltrain-image, as a program's do. */
  clt_image_init();
  int failed = test_run_checks(data_sources_suite(), CK_FORK_GETENV);
  test_remove_tree(g_dir);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
