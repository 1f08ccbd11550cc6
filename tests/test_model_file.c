/* Model description files: good files in the shapes people write them,
 * every parse error with its "file:line", every getter's success and
 * failure, typo hints, and random input that must never crash. */
#include <check.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/model_file.h"
#include "common/words.h"
#include "run_checks.h"

/* The graph's view of layer l's options (the getters mark l's options). */
#define ARGS(d, l) (&(clt_layer_args){(l)->type, (d)->source_name, (l)->line, \
                                      (l)->options, (l)->option_count})

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static const char *const DENSE_KEYS[] = {"units", "activation", "bias",
                                         "name",  "input",      NULL};

static clt_model_desc parse_ok(const char *text) {
  clt_model_desc d;
  clt_err err = {0};
  clt_status st = clt_model_parse_text(text, "net.model", &d, &err);
  ck_assert_msg(st == CLT_OK, "parse failed (%d): %s", st, err.msg);
  return d;
}

/* Parses text, expects status st and a message holding every string given
 * (NULL-terminated); returns nothing, leaves nothing allocated. */
static void expect_parse_error(const char *text, clt_status st, ...) {
  clt_model_desc d;
  clt_err err = {0};
  clt_status got = clt_model_parse_text(text, "net.model", &d, &err);
  ck_assert_msg(got == st, "status %d, expected %d; message: %s", got, st,
                err.msg);
  ck_assert_int_eq(err.status, st);
  ck_assert_ptr_null(d.layers);
  ck_assert_int_eq(d.layer_count, 0);
  ck_assert_ptr_null(d.text);
  va_list ap;
  va_start(ap, st);
  for (const char *want; (want = va_arg(ap, const char *));)
    ck_assert_msg(strstr(err.msg, want), "message '%s' lacks '%s'", err.msg,
                  want);
  va_end(ap);
  clt_model_desc_free(&d); /* zeroed on failure: must be harmless */
}

static void expect_msg(const clt_err *err, const char *want) {
  ck_assert_msg(strstr(err->msg, want), "message '%s' lacks '%s'", err->msg,
                want);
}

/* Writes bytes to a fresh temporary file; the caller unlinks path. */
static void write_temp(char path[64], const void *bytes, size_t n) {
  snprintf(path, 64, "/tmp/clt_model_test_XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, bytes, n), (ssize_t)n);
  close(fd);
}

/* A one-layer desc "dense <options>" for the getter tests. */
static clt_model_desc one_layer(const char *options) {
  char text[1024];
  snprintf(text, sizeof text, "# header\n\ndense %s\n", options);
  return parse_ok(text);
}

/* ------------------------------------------------------------------------ */
/* Good files                                                                */

START_TEST(test_tutorial_mlp) {
  clt_model_desc d = parse_ok(
      "# Keras tutorial MLP\n"
      "input shape=1x28x28\n"
      "flatten\n"
      "dense units=128 activation=relu\n"
      "dense units=10\n"
      "softmax_cross_entropy\n");
  ck_assert_str_eq(d.source_name, "net.model");
  ck_assert_int_eq(d.layer_count, 5);
  const char *types[] = {"input", "flatten", "dense", "dense",
                         "softmax_cross_entropy"};
  const int lines[] = {2, 3, 4, 5, 6};
  const int counts[] = {1, 0, 2, 1, 0};
  for (int i = 0; i < 5; i++) {
    ck_assert_str_eq(d.layers[i].type, types[i]);
    ck_assert_int_eq(d.layers[i].line, lines[i]);
    ck_assert_int_eq(d.layers[i].option_count, counts[i]);
  }
  ck_assert_str_eq(d.layers[0].options[0].key, "shape");
  ck_assert_str_eq(d.layers[0].options[0].value, "1x28x28");
  ck_assert_str_eq(d.layers[2].options[0].key, "units");
  ck_assert_str_eq(d.layers[2].options[0].value, "128");
  ck_assert_str_eq(d.layers[2].options[1].key, "activation");
  ck_assert_str_eq(d.layers[2].options[1].value, "relu");
  ck_assert_int_eq(d.layers[2].options[1].line, 4);
  ck_assert(!d.layers[2].options[1].used);
  ck_assert_str_eq(d.text,
                   "# Keras tutorial MLP\n"
                   "input shape=1x28x28\n"
                   "flatten\n"
                   "dense units=128 activation=relu\n"
                   "dense units=10\n"
                   "softmax_cross_entropy\n");
  clt_model_desc_free(&d);
  ck_assert_ptr_null(d.layers);
  clt_model_desc_free(&d); /* twice is harmless */
  clt_model_desc_free(NULL);
}
END_TEST

START_TEST(test_comments_blank_lines_and_whitespace) {
  clt_model_desc d = parse_ok(
      "\n"
      "   \n"
      "\t# indented comment\n"
      "input shape=3 # trailing comment\n"
      "dense\tunits=10#no space before it\n"
      "  \t dense   units=4 \t name=out   \n"
      "concat inputs=a,b\n"
      "#dense units=99\n"
      "relu"); /* no final newline */
  ck_assert_int_eq(d.layer_count, 5);
  ck_assert_int_eq(d.layers[0].line, 4);
  ck_assert_str_eq(d.layers[0].options[0].value, "3");
  ck_assert_int_eq(d.layers[1].option_count, 1);
  ck_assert_str_eq(d.layers[1].options[0].value, "10");
  ck_assert_int_eq(d.layers[2].line, 6);
  ck_assert_int_eq(d.layers[2].option_count, 2);
  ck_assert_str_eq(d.layers[2].options[1].key, "name");
  ck_assert_str_eq(d.layers[2].options[1].value, "out");
  ck_assert_str_eq(d.layers[3].options[0].value, "a,b");
  ck_assert_str_eq(d.layers[4].type, "relu");
  ck_assert_int_eq(d.layers[4].line, 9);
  clt_model_desc_free(&d);
}
END_TEST

START_TEST(test_crlf_and_bom) {
  clt_model_desc d = parse_ok(
      "\xef\xbb\xbf# made on Windows\r\n"
      "input shape=1x28x28\r\n"
      "\r\n"
      "dense units=10 activation=relu\r\n");
  ck_assert_int_eq(d.layer_count, 2);
  ck_assert_int_eq(d.layers[0].line, 2);
  ck_assert_str_eq(d.layers[0].options[0].value, "1x28x28");
  ck_assert_int_eq(d.layers[1].line, 4);
  ck_assert_str_eq(d.layers[1].options[1].value, "relu");
  clt_model_desc_free(&d);
}
END_TEST

START_TEST(test_values_may_hold_punctuation_and_utf8) {
  clt_model_desc d = parse_ok(
      "load path=weights/v1.2_final-b.safetensors lr=-1e-3 "
      "label=caf\xc3\xa9\n");
  ck_assert_str_eq(d.layers[0].options[0].value,
                   "weights/v1.2_final-b.safetensors");
  ck_assert_str_eq(d.layers[0].options[1].value, "-1e-3");
  ck_assert_str_eq(d.layers[0].options[2].value, "caf\xc3\xa9");
  clt_model_desc_free(&d);
}
END_TEST

START_TEST(test_longest_line_accepted) {
  /* "dense name=" + padding: exactly CLT_MODEL_MAX_LINE bytes, then CRLF. */
  char *text = malloc(CLT_MODEL_MAX_LINE + 3);
  memset(text, 'a', CLT_MODEL_MAX_LINE);
  memcpy(text, "dense name=", 11);
  memcpy(text + CLT_MODEL_MAX_LINE, "\n", 2);
  clt_model_desc d = parse_ok(text);
  ck_assert_int_eq(strlen(d.layers[0].options[0].value),
                   CLT_MODEL_MAX_LINE - 11);
  clt_model_desc_free(&d);
  free(text);
}
END_TEST

START_TEST(test_parse_file) {
  const char text[] = "input shape=1x28x28\ndense units=10\n";
  char path[64];
  write_temp(path, text, sizeof text - 1);
  clt_model_desc d;
  clt_err err = {0};
  ck_assert_int_eq(clt_model_parse_file(path, &d, &err), CLT_OK);
  ck_assert_str_eq(d.source_name, path);
  ck_assert_str_eq(d.text, text);
  ck_assert_int_eq(d.layer_count, 2);
  ck_assert_str_eq(d.layers[1].type, "dense");
  clt_model_desc_free(&d);
  unlink(path);
}
END_TEST

START_TEST(test_default_source_name) {
  clt_model_desc d;
  ck_assert_int_eq(clt_model_parse_text("dense units=x\n", NULL, &d, NULL),
                   CLT_OK);
  clt_err err = {0};
  int64_t v;
  ck_assert_int_eq(
      clt_args_get_int(ARGS(&d, &d.layers[0]), "units", true, 0, 1, &v, &err),
      CLT_ERR_FORMAT);
  expect_msg(&err, "<model>:1: dense:");
  clt_model_desc_free(&d);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Parse errors                                                              */

START_TEST(test_error_expected_key_value) {
  expect_parse_error("input shape=3\ndense units128\n", CLT_ERR_FORMAT,
                     "net.model:2:", "expected key=value, got 'units128'",
                     NULL);
  expect_parse_error("dense units = 128\n", CLT_ERR_FORMAT,
                     "net.model:1:", "'units'", "no spaces around '='", NULL);
  expect_parse_error("dense units =128\n", CLT_ERR_FORMAT,
                     "net.model:1:", "no spaces around '='", NULL);
  expect_parse_error("dense =128\n", CLT_ERR_FORMAT,
                     "net.model:1:", "got '=128'", "key is missing", NULL);
}
END_TEST

START_TEST(test_error_type_first) {
  expect_parse_error("\nunits=128\n", CLT_ERR_FORMAT,
                     "net.model:2:", "expected a layer type", "'units=128'",
                     NULL);
}
END_TEST

START_TEST(test_error_duplicate_key) {
  expect_parse_error("input shape=3\n\ndense units=1 name=a units=2\n",
                     CLT_ERR_FORMAT, "net.model:3:", "dense",
                     "duplicate option 'units'", NULL);
}
END_TEST

START_TEST(test_error_empty_value) {
  expect_parse_error("dense units=\n", CLT_ERR_FORMAT, "net.model:1:", "dense",
                     "option 'units' has an empty value", NULL);
  expect_parse_error("dense units= 128\n", CLT_ERR_FORMAT,
                     "net.model:1:", "empty value", "no spaces around '='",
                     NULL);
}
END_TEST

START_TEST(test_error_bad_characters) {
  expect_parse_error("Dense units=1\n", CLT_ERR_FORMAT,
                     "net.model:1:", "bad character 'D'", "layer type 'Dense'",
                     "lowercase", NULL);
  expect_parse_error("dense learning-rate=1\n", CLT_ERR_FORMAT,
                     "net.model:1:", "bad character '-'",
                     "option name 'learning-rate'", NULL);
  expect_parse_error("dense 2units=1\n", CLT_ERR_FORMAT,
                     "net.model:1:", "bad character '2'", "'2units'", NULL);
  expect_parse_error("dense units=1=2\n", CLT_ERR_FORMAT,
                     "net.model:1:", "bad character '='", "'units'", NULL);
  expect_parse_error("flatten\ndense units=1\x07\n", CLT_ERR_FORMAT,
                     "net.model:2:", "bad character 0x07", "control character",
                     NULL);
  expect_parse_error("caf\xc3\xa9 units=1\n", CLT_ERR_FORMAT,
                     "net.model:1:", "bad character 0xc3", "'caf\\xc3\\xa9'",
                     NULL);
  expect_parse_error("dense\vunits=1\n", CLT_ERR_FORMAT,
                     "net.model:1:", "bad character 0x0b", NULL);
}
END_TEST

START_TEST(test_error_line_too_long) {
  size_t n = CLT_MODEL_MAX_LINE + 1;
  char *text = malloc(n + 32);
  strcpy(text, "input shape=3\n");
  size_t start = strlen(text);
  memset(text + start, 'a', n);
  memcpy(text + start, "dense name=", 11);
  strcpy(text + start + n, "\n");
  expect_parse_error(text, CLT_ERR_FORMAT, "net.model:2:", "line is 4097",
                     "4096", NULL);
  free(text);
}
END_TEST

START_TEST(test_error_too_many_options) {
  char text[CLT_MODEL_MAX_LINE];
  size_t len = (size_t)snprintf(text, sizeof text, "dense");
  for (int i = 0; i <= CLT_MODEL_MAX_OPTIONS; i++)
    len += (size_t)snprintf(text + len, sizeof text - len, " k%d=1", i);
  expect_parse_error(text, CLT_ERR_FORMAT, "net.model:1:", "too many options",
                     NULL);
}
END_TEST

START_TEST(test_error_no_layers) {
  expect_parse_error("", CLT_ERR_FORMAT, "net.model", "no layers", NULL);
  expect_parse_error("# only a comment\n\n   \n\t# another\r\n", CLT_ERR_FORMAT,
                     "net.model", "no layers", NULL);
  expect_parse_error("\xef\xbb\xbf", CLT_ERR_FORMAT, "no layers", NULL);
}
END_TEST

START_TEST(test_error_missing_file) {
  clt_model_desc d;
  clt_err err = {0};
  ck_assert_int_eq(clt_model_parse_file("/nonexistent/dir/mlp.model", &d, &err),
                   CLT_ERR_IO);
  expect_msg(&err, "/nonexistent/dir/mlp.model");
  expect_msg(&err, "No such file");
  ck_assert_ptr_null(d.layers);
  /* A folder opens but does not read. */
  ck_assert_int_eq(clt_model_parse_file("/tmp", &d, &err), CLT_ERR_IO);
  expect_msg(&err, "'/tmp'");
  clt_model_desc_free(&d);
}
END_TEST

START_TEST(test_error_nul_byte) {
  const char bytes[] = "input shape=3\n# fine\ndense un\0its=1\n";
  char path[64];
  write_temp(path, bytes, sizeof bytes - 1);
  clt_model_desc d;
  clt_err err = {0};
  ck_assert_int_eq(clt_model_parse_file(path, &d, &err), CLT_ERR_FORMAT);
  char where[80];
  snprintf(where, sizeof where, "%s:3:", path);
  expect_msg(&err, where);
  expect_msg(&err, "NUL byte");
  ck_assert_ptr_null(d.text);
  unlink(path);
}
END_TEST

START_TEST(test_error_empty_file_on_disk) {
  char path[64];
  write_temp(path, "", 0);
  clt_model_desc d;
  clt_err err = {0};
  ck_assert_int_eq(clt_model_parse_file(path, &d, &err), CLT_ERR_FORMAT);
  expect_msg(&err, path);
  expect_msg(&err, "no layers");
  unlink(path);
}
END_TEST

START_TEST(test_error_file_too_large) {
  size_t n = (size_t)CLT_MODEL_MAX_FILE_BYTES + 1;
  char *bytes = malloc(n);
  memset(bytes, '\n', n);
  memcpy(bytes, "dense units=1", 13);
  char path[64];
  write_temp(path, bytes, n);
  free(bytes);
  clt_model_desc d;
  clt_err err = {0};
  ck_assert_int_eq(clt_model_parse_file(path, &d, &err), CLT_ERR_FORMAT);
  expect_msg(&err, path);
  expect_msg(&err, "larger than");
  ck_assert_ptr_null(d.text);
  unlink(path);
}
END_TEST

START_TEST(test_error_null_arguments) {
  clt_model_desc d;
  clt_err err = {0};
  ck_assert_int_eq(clt_model_parse_text(NULL, "x", &d, &err),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(clt_model_parse_text("dense", "x", NULL, &err),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(clt_model_parse_file(NULL, &d, &err),
                   CLT_ERR_INVALID_ARGUMENT);
  /* A NULL err is allowed: only the message is lost. */
  ck_assert_int_eq(clt_model_parse_text("dense units\n", "x", &d, NULL),
                   CLT_ERR_FORMAT);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Getters                                                                   */

START_TEST(test_get_int) {
  clt_model_desc d = one_layer("units=128 neg=-7 plus=+5 zero=0");
  clt_model_layer *l = &d.layers[0];
  clt_err err = {0};
  int64_t v = 0;
  ck_assert_int_eq(clt_args_get_int(ARGS(&d, l), "units", true, 0, 1, &v, &err),
                   CLT_OK);
  ck_assert_int_eq(v, 128);
  ck_assert(l->options[0].used);
  ck_assert_int_eq(
      clt_args_get_int(ARGS(&d, l), "neg", true, 0, INT64_MIN, &v, &err), CLT_OK);
  ck_assert_int_eq(v, -7);
  ck_assert_int_eq(clt_args_get_int(ARGS(&d, l), "plus", true, 0, 1, &v, &err),
                   CLT_OK);
  ck_assert_int_eq(v, 5);
  ck_assert_int_eq(clt_args_get_int(ARGS(&d, l), "zero", true, 0, 0, &v, &err),
                   CLT_OK);
  ck_assert_int_eq(v, 0);
  ck_assert_int_eq(clt_args_get_int(ARGS(&d, l), "groups", false, 3, 1, &v, &err),
                   CLT_OK);
  ck_assert_int_eq(v, 3);
  ck_assert_int_eq(clt_args_check_all_used(ARGS(&d, l), NULL, &err), CLT_OK);
  clt_model_desc_free(&d);
}
END_TEST

START_TEST(test_get_int_errors) {
  clt_model_desc d = one_layer(
      "units=abc zero=0 big=99999999999999999999 "
      "tail=12abc low=-3 min=-9223372036854775808");
  clt_model_layer *l = &d.layers[0];
  clt_err err = {0};
  int64_t v = 42;
  ck_assert_int_eq(clt_args_get_int(ARGS(&d, l), "units", true, 0, 1, &v, &err),
                   CLT_ERR_FORMAT);
  ck_assert_str_eq(err.msg,
                   "net.model:3: dense: option 'units' expects a "
                   "positive integer, got 'abc'");
  ck_assert_int_eq(v, 42);
  ck_assert_int_eq(clt_args_get_int(ARGS(&d, l), "zero", true, 0, 1, &v, &err),
                   CLT_ERR_FORMAT);
  expect_msg(&err, "positive integer, got '0'");
  ck_assert_int_eq(clt_args_get_int(ARGS(&d, l), "big", true, 0, 1, &v, &err),
                   CLT_ERR_FORMAT);
  expect_msg(&err, "out of range");
  ck_assert_int_eq(clt_args_get_int(ARGS(&d, l), "tail", true, 0, 0, &v, &err),
                   CLT_ERR_FORMAT);
  expect_msg(&err, "non-negative integer, got '12abc'");
  ck_assert_int_eq(clt_args_get_int(ARGS(&d, l), "low", true, 0, -2, &v, &err),
                   CLT_ERR_FORMAT);
  expect_msg(&err, "an integer >= -2, got '-3'");
  ck_assert_int_eq(
      clt_args_get_int(ARGS(&d, l), "min", true, 0, INT64_MIN, &v, &err), CLT_OK);
  ck_assert(v == INT64_MIN);
  ck_assert_int_eq(clt_args_get_int(ARGS(&d, l), "filters", true, 0, 1, &v, &err),
                   CLT_ERR_FORMAT);
  ck_assert_str_eq(err.msg,
                   "net.model:3: dense: missing required option 'filters'");
  ck_assert_int_eq(clt_args_get_int(NULL, "x", true, 0, 1, &v, &err),
                   CLT_ERR_INVALID_ARGUMENT);
  clt_model_desc_free(&d);
}
END_TEST

START_TEST(test_get_float) {
  clt_model_desc d =
      one_layer("a=0.001 b=1e-3 c=-2.5 d=3 e=.5 f=2. g=+1E+2 h=1e-400");
  clt_model_layer *l = &d.layers[0];
  clt_err err = {0};
  const char *keys[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
  const double want[] = {0.001, 1e-3, -2.5, 3.0, 0.5, 2.0, 100.0, 0.0};
  for (int i = 0; i < 8; i++) {
    double v = -1;
    ck_assert_int_eq(clt_args_get_float(ARGS(&d, l), keys[i], true, 0, &v, &err),
                     CLT_OK);
    ck_assert_double_eq_tol(v, want[i], 1e-12);
  }
  double v = 0;
  ck_assert_int_eq(clt_args_get_float(ARGS(&d, l), "lr", false, 0.01, &v, &err),
                   CLT_OK);
  ck_assert_double_eq(v, 0.01);
  ck_assert_int_eq(clt_args_get_float(ARGS(&d, l), "lr", true, 0.01, &v, &err),
                   CLT_ERR_FORMAT);
  expect_msg(&err, "missing required option 'lr'");
  clt_model_desc_free(&d);
}
END_TEST

START_TEST(test_get_float_errors) {
  const char *bad[] = {"nan", "inf", "-inf", "1e999", "0x10", "1.2.3",
                       "abc", "1e",  ".",    "-",     "1,5",  "e5"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char options[64];
    snprintf(options, sizeof options, "lr=%s", bad[i]);
    clt_model_desc d = one_layer(options);
    clt_err err = {0};
    double v = 7;
    ck_assert_int_eq(
        clt_args_get_float(ARGS(&d, &d.layers[0]), "lr", true, 0, &v, &err),
        CLT_ERR_FORMAT);
    ck_assert_double_eq(v, 7);
    expect_msg(&err,
               "net.model:3: dense: option 'lr' expects a finite "
               "number");
    char got[64];
    snprintf(got, sizeof got, "got '%s'", bad[i]);
    expect_msg(&err, got);
    clt_model_desc_free(&d);
  }
}
END_TEST

START_TEST(test_get_float_ignores_locale) {
  const char *names[] = {"de_DE.UTF-8", "fr_FR.UTF-8", "de_DE", NULL};
  const char *set = NULL;
  for (int i = 0; names[i] && !set; i++) set = setlocale(LC_NUMERIC, names[i]);
  clt_model_desc d = one_layer("lr=0.25");
  double v = 0;
  ck_assert_int_eq(
      clt_args_get_float(ARGS(&d, &d.layers[0]), "lr", true, 0, &v, NULL), CLT_OK);
  ck_assert_double_eq(v, 0.25);
  clt_model_desc_free(&d);
  setlocale(LC_NUMERIC, "C");
}
END_TEST

START_TEST(test_get_string) {
  clt_model_desc d = one_layer("name=encoder");
  clt_model_layer *l = &d.layers[0];
  clt_err err = {0};
  const char *s = NULL;
  ck_assert_int_eq(clt_args_get_string(ARGS(&d, l), "name", true, NULL, &s, &err),
                   CLT_OK);
  ck_assert_str_eq(s, "encoder");
  ck_assert_ptr_eq(s, l->options[0].value);
  ck_assert_int_eq(
      clt_args_get_string(ARGS(&d, l), "input", false, "prev", &s, &err), CLT_OK);
  ck_assert_str_eq(s, "prev");
  ck_assert_int_eq(clt_args_get_string(ARGS(&d, l), "input", false, NULL, &s, &err),
                   CLT_OK);
  ck_assert_ptr_null(s);
  ck_assert_int_eq(clt_args_get_string(ARGS(&d, l), "input", true, NULL, &s, &err),
                   CLT_ERR_FORMAT);
  expect_msg(&err, "net.model:3: dense: missing required option 'input'");
  clt_model_desc_free(&d);
}
END_TEST

START_TEST(test_get_choice) {
  static const char *const acts[] = {"none", "relu", "sigmoid", "tanh", NULL};
  clt_model_desc d = one_layer("activation=tanh");
  clt_model_layer *l = &d.layers[0];
  clt_err err = {0};
  int i = -1;
  ck_assert_int_eq(
      clt_args_get_choice(ARGS(&d, l), "activation", acts, "none", &i, &err),
      CLT_OK);
  ck_assert_int_eq(i, 3);
  ck_assert_int_eq(
      clt_args_get_choice(ARGS(&d, l), "padding_act", acts, "relu", &i, &err),
      CLT_OK);
  ck_assert_int_eq(i, 1);
  ck_assert_int_eq(clt_args_get_choice(ARGS(&d, l), "other", acts, NULL, &i, &err),
                   CLT_ERR_FORMAT);
  expect_msg(&err, "missing required option 'other'");
  ck_assert_int_eq(clt_args_get_choice(ARGS(&d, l), "other", acts, "gelu", &i, &err),
                   CLT_ERR_INVALID_ARGUMENT);
  expect_msg(&err, "'gelu'");
  clt_model_desc_free(&d);
}
END_TEST

START_TEST(test_get_choice_errors) {
  static const char *const acts[] = {"none", "relu", "sigmoid", "tanh", NULL};
  clt_model_desc d = one_layer("activation=rleu a2=ReLU a3=softmax");
  clt_model_layer *l = &d.layers[0];
  clt_err err = {0};
  int i = 99;
  ck_assert_int_eq(
      clt_args_get_choice(ARGS(&d, l), "activation", acts, "none", &i, &err),
      CLT_ERR_FORMAT);
  ck_assert_str_eq(err.msg,
                   "net.model:3: dense: option 'activation' expects "
                   "one of none, relu, sigmoid, tanh, got 'rleu'; "
                   "did you mean 'relu'?");
  ck_assert_int_eq(i, 99);
  ck_assert_int_eq(clt_args_get_choice(ARGS(&d, l), "a2", acts, NULL, &i, &err),
                   CLT_ERR_FORMAT);
  expect_msg(&err, "did you mean 'relu'?");
  ck_assert_int_eq(clt_args_get_choice(ARGS(&d, l), "a3", acts, NULL, &i, &err),
                   CLT_ERR_FORMAT);
  expect_msg(&err, "got 'softmax'");
  ck_assert_ptr_null(strstr(err.msg, "did you mean"));
  clt_model_desc_free(&d);
}
END_TEST

START_TEST(test_get_bool) {
  clt_model_desc d =
      one_layer("a=true b=false c=1 d=0 e=yes f=no g=True h=NO x=maybe");
  clt_model_layer *l = &d.layers[0];
  clt_err err = {0};
  const char *keys[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
  const bool want[] = {true, false, true, false, true, false, true, false};
  for (int i = 0; i < 8; i++) {
    bool v = !want[i];
    ck_assert_int_eq(clt_args_get_bool(ARGS(&d, l), keys[i], false, &v, &err),
                     CLT_OK);
    ck_assert(v == want[i]);
  }
  bool v = false;
  ck_assert_int_eq(clt_args_get_bool(ARGS(&d, l), "bias", true, &v, &err), CLT_OK);
  ck_assert(v);
  ck_assert_int_eq(clt_args_get_bool(ARGS(&d, l), "x", true, &v, &err),
                   CLT_ERR_FORMAT);
  expect_msg(&err, "net.model:3: dense: option 'x' expects true or false");
  expect_msg(&err, "got 'maybe'");
  clt_model_desc_free(&d);
}
END_TEST

START_TEST(test_get_dims) {
  clt_model_desc d = one_layer("shape=1x28x28 kernel=3 big=2147483647x1");
  clt_model_layer *l = &d.layers[0];
  clt_err err = {0};
  int64_t dims[4] = {0};
  int n = -1;
  ck_assert_int_eq(clt_args_get_dims(ARGS(&d, l), "shape", true, 4, dims, &n, &err),
                   CLT_OK);
  ck_assert_int_eq(n, 3);
  ck_assert_int_eq(dims[0], 1);
  ck_assert_int_eq(dims[1], 28);
  ck_assert_int_eq(dims[2], 28);
  ck_assert_int_eq(clt_args_get_dims(ARGS(&d, l), "kernel", true, 2, dims, &n, &err),
                   CLT_OK);
  ck_assert_int_eq(n, 1);
  ck_assert_int_eq(dims[0], 3);
  ck_assert_int_eq(clt_args_get_dims(ARGS(&d, l), "big", true, 2, dims, &n, &err),
                   CLT_OK);
  ck_assert_int_eq(dims[0], 2147483647);
  ck_assert_int_eq(
      clt_args_get_dims(ARGS(&d, l), "stride", false, 2, dims, &n, &err), CLT_OK);
  ck_assert_int_eq(n, 0);
  ck_assert_int_eq(clt_args_get_dims(ARGS(&d, l), "stride", true, 2, dims, &n, &err),
                   CLT_ERR_FORMAT);
  expect_msg(&err, "missing required option 'stride'");
  clt_model_desc_free(&d);
}
END_TEST

START_TEST(test_get_dims_errors) {
  struct {
    const char *value;
    const char *why;
  } bad[] = {{"1x28x28x3", "too many"}, {"0x28", "is 0"},
             {"28X28", "got '28X28'"},  {"1xx2", "got '1xx2'"},
             {"28x", "got '28x'"},      {"x28", "got 'x28'"},
             {"-1", "got '-1'"},        {"3000000000", "too large"},
             {"2.5", "got '2.5'"},      {"abc", "like 1x28x28"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char options[64];
    snprintf(options, sizeof options, "shape=%s", bad[i].value);
    clt_model_desc d = one_layer(options);
    clt_err err = {0};
    int64_t dims[3] = {-5, -5, -5};
    int n = -5;
    ck_assert_int_eq(
        clt_args_get_dims(ARGS(&d, &d.layers[0]), "shape", true, 3, dims, &n, &err),
        CLT_ERR_FORMAT);
    expect_msg(&err,
               "net.model:3: dense: option 'shape' expects 1 to 3 "
               "positive integers");
    expect_msg(&err, bad[i].why);
    ck_assert_int_eq(n, -5);
    ck_assert_int_eq(dims[0], -5);
    clt_model_desc_free(&d);
  }
  clt_model_desc d = one_layer("kernel=3x3");
  clt_err err = {0};
  int64_t dims[1];
  int n;
  ck_assert_int_eq(
      clt_args_get_dims(ARGS(&d, &d.layers[0]), "kernel", true, 1, dims, &n, &err),
      CLT_ERR_FORMAT);
  expect_msg(&err, "option 'kernel' expects a positive integer, got '3x3'");
  clt_model_desc_free(&d);
}
END_TEST

START_TEST(test_get_list) {
  clt_model_desc d = one_layer("inputs=a,b,conv_1 one=x");
  clt_model_layer *l = &d.layers[0];
  clt_err err = {0};
  char **items = NULL;
  int count = 0;
  ck_assert_int_eq(clt_args_get_list(ARGS(&d, l), "inputs", &items, &count, &err),
                   CLT_OK);
  ck_assert_int_eq(count, 3);
  ck_assert_str_eq(items[0], "a");
  ck_assert_str_eq(items[1], "b");
  ck_assert_str_eq(items[2], "conv_1");
  clt_args_list_free(items, count);
  ck_assert_int_eq(clt_args_get_list(ARGS(&d, l), "one", &items, &count, &err),
                   CLT_OK);
  ck_assert_int_eq(count, 1);
  ck_assert_str_eq(items[0], "x");
  clt_args_list_free(items, count);
  ck_assert_int_eq(clt_args_get_list(ARGS(&d, l), "absent", &items, &count, &err),
                   CLT_OK);
  ck_assert_ptr_null(items);
  ck_assert_int_eq(count, 0);
  clt_args_list_free(NULL, 0);
  clt_model_desc_free(&d);
}
END_TEST

START_TEST(test_get_list_errors) {
  const char *bad[] = {",a", "a,", "a,,b", ","};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char options[64];
    snprintf(options, sizeof options, "inputs=%s", bad[i]);
    clt_model_desc d = one_layer(options);
    clt_err err = {0};
    char **items = (char **)1;
    int count = 5;
    ck_assert_int_eq(
        clt_args_get_list(ARGS(&d, &d.layers[0]), "inputs", &items, &count, &err),
        CLT_ERR_FORMAT);
    expect_msg(&err,
               "net.model:3: dense: option 'inputs' expects a "
               "comma-separated list");
    expect_msg(&err, "empty item");
    ck_assert_ptr_null(items);
    ck_assert_int_eq(count, 0);
    clt_model_desc_free(&d);
  }
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Unknown options and hints                                                 */

START_TEST(test_unknown_option_did_you_mean) {
  clt_model_desc d = one_layer("untis=128 activation=relu");
  clt_model_layer *l = &d.layers[0];
  clt_err err = {0};
  int64_t units;
  /* The layer reads "units" (absent, so the default) and "activation". */
  ck_assert_int_eq(
      clt_args_get_int(ARGS(&d, l), "units", false, 10, 1, &units, &err), CLT_OK);
  const char *act;
  ck_assert_int_eq(
      clt_args_get_string(ARGS(&d, l), "activation", false, "none", &act, &err),
      CLT_OK);
  ck_assert_int_eq(clt_args_check_all_used(ARGS(&d, l), DENSE_KEYS, &err),
                   CLT_ERR_FORMAT);
  ck_assert_str_eq(err.msg,
                   "net.model:3: dense: unknown option 'untis' (known: units, "
                   "activation, bias, name, input); did you mean 'units'?");
  clt_model_desc_free(&d);
}
END_TEST

START_TEST(test_unknown_option_without_hint) {
  clt_model_desc d = one_layer("units=3 momentum=0.9");
  clt_model_layer *l = &d.layers[0];
  clt_err err = {0};
  int64_t units;
  ck_assert_int_eq(clt_args_get_int(ARGS(&d, l), "units", true, 0, 1, &units, &err),
                   CLT_OK);
  ck_assert_int_eq(clt_args_check_all_used(ARGS(&d, l), DENSE_KEYS, &err),
                   CLT_ERR_FORMAT);
  expect_msg(&err,
             "net.model:3: dense: unknown option 'momentum' (known: "
             "units, activation, bias, name, input)");
  ck_assert_ptr_null(strstr(err.msg, "did you mean"));

  static const char *const none[] = {NULL};
  ck_assert_int_eq(clt_args_check_all_used(ARGS(&d, l), none, &err), CLT_ERR_FORMAT);
  expect_msg(&err, "unknown option 'momentum' (dense takes no options)");
  ck_assert_int_eq(clt_args_check_all_used(ARGS(&d, l), NULL, &err), CLT_ERR_FORMAT);
  expect_msg(&err, "unknown option 'momentum'");
  clt_model_desc_free(&d);
}
END_TEST

START_TEST(test_known_but_unread_is_a_bug) {
  clt_model_desc d = one_layer("bias=false");
  clt_err err = {0};
  ck_assert_int_eq(clt_args_check_all_used(ARGS(&d, &d.layers[0]), DENSE_KEYS, &err),
                   CLT_ERR_INTERNAL);
  expect_msg(&err, "'bias'");
  expect_msg(&err, "never read");
  clt_model_desc_free(&d);
}
END_TEST

START_TEST(test_closest) {
  static const char *const types[] = {"input",  "flatten",   "dense",
                                      "conv2d", "maxpool2d", NULL};
  ck_assert_str_eq(clt_closest_word("dens", types, 2), "dense");
  ck_assert_str_eq(clt_closest_word("denes", types, 2), "dense");
  ck_assert_str_eq(clt_closest_word("flaten", types, 2), "flatten");
  ck_assert_str_eq(clt_closest_word("conv_2d", types, 2), "conv2d");
  ck_assert_str_eq(clt_closest_word("maxpool", types, 2), "maxpool2d");
  ck_assert_ptr_null(clt_closest_word("softmax", types, 2));
  ck_assert_ptr_null(clt_closest_word("dense", types, 2)); /* exact */
  ck_assert_ptr_null(clt_closest_word("x", types, 2));
  ck_assert_ptr_null(clt_closest_word("dens", NULL, 2));
  ck_assert_ptr_null(clt_closest_word(NULL, types, 2));
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Never crash                                                               */

static uint64_t next_random(uint64_t *state) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return *state >> 33;
}

/* Every getter on every layer, then check_all_used: must not crash. */
static void exercise_getters(clt_model_desc *d) {
  static const char *const choices[] = {"a", "relu", NULL};
  for (int i = 0; i < d->layer_count; i++) {
    clt_model_layer *l = &d->layers[i];
    clt_err err;
    for (int j = 0; j < l->option_count; j++) {
      const char *key = l->options[j].key;
      int64_t iv, dims[4];
      double fv;
      bool bv;
      int n;
      const char *sv;
      char **items;
      clt_args_get_int(ARGS(d, l), key, true, 0, INT64_MIN, &iv, &err);
      clt_args_get_float(ARGS(d, l), key, true, 0, &fv, &err);
      clt_args_get_bool(ARGS(d, l), key, false, &bv, &err);
      clt_args_get_dims(ARGS(d, l), key, true, 4, dims, &n, &err);
      clt_args_get_string(ARGS(d, l), key, true, NULL, &sv, &err);
      clt_args_get_choice(ARGS(d, l), key, choices, NULL, &n, &err);
      if (clt_args_get_list(ARGS(d, l), key, &items, &n, &err) == CLT_OK)
        clt_args_list_free(items, n);
    }
    clt_args_check_all_used(ARGS(d, l), DENSE_KEYS, &err);
  }
}

START_TEST(test_random_bytes_never_crash) {
  /* Bytes drawn mostly from the characters the format cares about. */
  static const char alphabet[] = "ab_z09=#, \t\r\n\nx.-+eE\x01\x80\xff";
  uint64_t state = 12345;
  char text[600];
  for (int round = 0; round < 3000; round++) {
    size_t n = next_random(&state) % (sizeof text - 1);
    for (size_t i = 0; i < n; i++) {
      char c = alphabet[next_random(&state) % (sizeof alphabet - 1)];
      text[i] = c ? c : 'q';
    }
    text[n] = '\0';
    clt_model_desc d;
    clt_err err = {0};
    clt_status st = clt_model_parse_text(text, "fuzz", &d, &err);
    if (st == CLT_OK) {
      ck_assert_int_gt(d.layer_count, 0);
      exercise_getters(&d);
    } else {
      ck_assert_int_eq(st, CLT_ERR_FORMAT);
      ck_assert_msg(strncmp(err.msg, "fuzz", 4) == 0, "%s", err.msg);
    }
    clt_model_desc_free(&d);
  }
}
END_TEST

START_TEST(test_mutated_model_never_crashes) {
  static const char good[] =
      "# mlp\ninput shape=1x28x28\nflatten\n"
      "dense units=128 activation=relu bias=true\n"
      "dropout rate=0.25\nconcat inputs=a,b\n";
  uint64_t state = 99;
  char text[sizeof good];
  for (int round = 0; round < 3000; round++) {
    memcpy(text, good, sizeof good);
    int flips = 1 + (int)(next_random(&state) % 4);
    for (int f = 0; f < flips; f++) {
      size_t at = next_random(&state) % (sizeof good - 1);
      char c = (char)(next_random(&state) % 255 + 1); /* never NUL */
      text[at] = c;
    }
    clt_model_desc d;
    clt_status st = clt_model_parse_text(text, "m", &d, NULL);
    if (st == CLT_OK) exercise_getters(&d);
    clt_model_desc_free(&d);
  }
}
END_TEST

/* ------------------------------------------------------------------------ */

static Suite *model_file_suite(void) {
  Suite *s = suite_create("model_file");
  TCase *good = tcase_create("good files");
  tcase_add_test(good, test_tutorial_mlp);
  tcase_add_test(good, test_comments_blank_lines_and_whitespace);
  tcase_add_test(good, test_crlf_and_bom);
  tcase_add_test(good, test_values_may_hold_punctuation_and_utf8);
  tcase_add_test(good, test_longest_line_accepted);
  tcase_add_test(good, test_parse_file);
  tcase_add_test(good, test_default_source_name);
  suite_add_tcase(s, good);

  TCase *bad = tcase_create("parse errors");
  tcase_add_test(bad, test_error_expected_key_value);
  tcase_add_test(bad, test_error_type_first);
  tcase_add_test(bad, test_error_duplicate_key);
  tcase_add_test(bad, test_error_empty_value);
  tcase_add_test(bad, test_error_bad_characters);
  tcase_add_test(bad, test_error_line_too_long);
  tcase_add_test(bad, test_error_too_many_options);
  tcase_add_test(bad, test_error_no_layers);
  tcase_add_test(bad, test_error_missing_file);
  tcase_add_test(bad, test_error_nul_byte);
  tcase_add_test(bad, test_error_empty_file_on_disk);
  tcase_add_test(bad, test_error_file_too_large);
  tcase_add_test(bad, test_error_null_arguments);
  suite_add_tcase(s, bad);

  TCase *get = tcase_create("getters");
  tcase_add_test(get, test_get_int);
  tcase_add_test(get, test_get_int_errors);
  tcase_add_test(get, test_get_float);
  tcase_add_test(get, test_get_float_errors);
  tcase_add_test(get, test_get_float_ignores_locale);
  tcase_add_test(get, test_get_string);
  tcase_add_test(get, test_get_choice);
  tcase_add_test(get, test_get_choice_errors);
  tcase_add_test(get, test_get_bool);
  tcase_add_test(get, test_get_dims);
  tcase_add_test(get, test_get_dims_errors);
  tcase_add_test(get, test_get_list);
  tcase_add_test(get, test_get_list_errors);
  suite_add_tcase(s, get);

  TCase *hints = tcase_create("unknown options");
  tcase_add_test(hints, test_unknown_option_did_you_mean);
  tcase_add_test(hints, test_unknown_option_without_hint);
  tcase_add_test(hints, test_known_but_unread_is_a_bug);
  tcase_add_test(hints, test_closest);
  suite_add_tcase(s, hints);

  TCase *fuzz = tcase_create("never crash");
  tcase_set_timeout(fuzz, 60);
  tcase_add_test(fuzz, test_random_bytes_never_crash);
  tcase_add_test(fuzz, test_mutated_model_never_crashes);
  suite_add_tcase(s, fuzz);
  return s;
}

int main(void) {
  int failed = test_run_checks(model_file_suite(), CK_FORK_GETENV);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
