/* cltrain eval: loss, accuracy and the confusion matrix of trained
 * weights on a dataset. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"

typedef struct eval_args {
  const char *model, *weights, *data, *test_data, *device, *labels;
  long long batch, limit;
  double holdout;
  int split;     /* 0 test, 1 train */
  int precision; /* clt_precision */
  int csv_values; /* clt_csv_values */
  bool resize, json, csv_values_given;
  const char *label_column; /* NULL: not given */
  int csv_separator;        /* cli_csv_separator_names' index */
} eval_args;

static const char *const split_names[] = {"test", "train", NULL};

static int parse_eval_args(int argc, char **argv, eval_args *a) {
  memset(a, 0, sizeof *a);
  a->batch = 100;
  a->holdout = 0.1;
  const cli_option options[] = {
      {"weights", CLI_STRING, &a->weights, "FILE",
       "trained weights (a checkpoint from train --save)", 0, 0, 0, 0, 0},
      {"data", CLI_STRING, &a->data, "D",
       "as for train: fashion-mnist, IDX folder, FILE.csv,\n"
       "a folder with train.csv/test.csv or train/ and test/",
       0, 0, 0, 0, 0},
      {"test-data", CLI_STRING, &a->test_data, "T",
       "the test data (then --data may be left out)", 0, 0, 0, 0, 0},
      {"holdout", CLI_DOUBLE, &a->holdout, "F",
       "the fraction train held out without test data (0.1)", 0, 0.99, 0, 0,
       0},
      {"resize", CLI_FLAG, &a->resize, NULL, "resize images of another size",
       0, 0, 0, 0, 0},
      {"csv-values", CLI_CHOICE, &a->csv_values, "V", CLI_CSV_VALUES_HELP, 0, 0,
       0, cli_csv_values_names, &a->csv_values_given},
      {"label-column", CLI_STRING, &a->label_column, "C",
       CLI_LABEL_COLUMN_HELP, 0, 0, 0, 0, 0},
      {"csv-separator", CLI_CHOICE, &a->csv_separator, "S",
       CLI_CSV_SEPARATOR_HELP, 0, 0, 0, cli_csv_separator_names, 0},
      {"split", CLI_CHOICE, &a->split, "S", "test (default) or train", 0, 0, 0,
       split_names, 0},
      {"batch", CLI_INT, &a->batch, "B", "batch size (default 100)", 1,
       INT_MAX, 0, 0, 0},
      {"test-limit", CLI_INT, &a->limit, "N", "the first N samples only", 1,
       (double)LLONG_MAX, 0, 0, 0},
      {"labels", CLI_STRING, &a->labels, "FILE", "class names, one a line", 0,
       0, 0, 0, 0},
      {"device", CLI_STRING, &a->device, "D", "device (see `cltrain devices`)",
       0, 0, 0, 0, 0},
      {"precision", CLI_CHOICE, &a->precision, "P",
       "fp32 (default) or mixed: the forward passes in fp16\n"
       "values, as train --precision mixed evaluates",
       0, 0, 0, cli_precision_names, 0},
      {"json", CLI_FLAG, &a->json, NULL,
       "print the result as one JSON object", 0, 0, 0, 0, 0},
  };
  const cli_command cmd = {
      "eval", "MODEL --weights FILE --data DATA [options]",
      "  prints the loss, the accuracy and the confusion matrix (a\n"
      "  regression model, mse: the loss)\n",
      options, (int)(sizeof options / sizeof options[0]), 1, 1, "MODEL file"};
  const char *pos[1];
  int npos = 0;
  int rc = cli_parse(&cmd, argc, argv, pos, &npos);
  if (rc >= 0) return rc;
  a->model = pos[0];
  const char *missing = !a->weights ? "--weights FILE is required"
                        : !a->data && !a->test_data
                            ? "--data (or --test-data) is required"
                        : !a->data && a->split == 1
                            ? "--split train needs --data"
                            : NULL;
  if (missing) {
    fprintf(stderr, "cltrain eval: %s (see cltrain eval --help)\n", missing);
    return 2;
  }
  return -1;
}

static void print_confusion(const int64_t *cm, int64_t classes, char **labels,
                            int n_labels) {
  int name_w = 2;
  for (int i = 0; labels && i < n_labels && i < classes; i++)
    if ((int)strlen(labels[i]) > name_w) name_w = (int)strlen(labels[i]);
  int64_t biggest = 0;
  for (int64_t i = 0; i < classes * classes; i++)
    if (cm[i] > biggest) biggest = cm[i];
  int cell = snprintf(NULL, 0, "%lld", (long long)biggest) + 1;
  if (cell < 4) cell = 4;
  printf("confusion matrix (rows: true class, columns: predicted class):\n");
  printf("%*s", 4 + name_w, "");
  for (int64_t c = 0; c < classes; c++) printf("%*lld", cell, (long long)c);
  printf("  recall\n");
  for (int64_t t = 0; t < classes; t++) {
    int64_t row = 0;
    for (int64_t c = 0; c < classes; c++) row += cm[t * classes + c];
    const char *name = labels && t < n_labels ? labels[t] : "";
    printf("%3lld %-*s", (long long)t, name_w, name);
    for (int64_t c = 0; c < classes; c++)
      printf("%*lld", cell, (long long)cm[t * classes + c]);
    if (row > 0) printf("  %.4f\n", (double)cm[t * classes + t] / (double)row);
    else printf("  -\n");
  }
}

static int fail(clt_context *ctx) {
  fprintf(stderr, "cltrain: %s\n", clt_context_last_error(ctx));
  return 1;
}

static void print_json(const eval_args *a, const clt_dataset *ds,
                       const clt_metrics *m, const int64_t *cm,
                       int64_t classes, char **labels, int n_labels,
                       int epoch) {
  printf("{\"model\": ");
  cli_json_string(stdout, a->model);
  printf(", \"weights\": ");
  cli_json_string(stdout, a->weights);
  printf(", \"epoch\": %d, \"split\": \"%s\", \"precision\": \"%s\", "
         "\"data\": ",
         epoch, split_names[a->split],
         cli_precision_names[a->precision]);
  cli_json_string(stdout, clt_dataset_source(ds));
  printf(", \"samples\": %lld, \"loss\": ", (long long)m->samples);
  cli_json_number(stdout, m->loss);
  printf(", \"accuracy\": ");
  cli_json_number(stdout, cm ? m->accuracy : NAN);
  if (cm) {
    printf(", \"classes\": [");
    for (int64_t c = 0; c < classes; c++) {
      printf("%s", c ? ", " : "");
      if (labels && c < n_labels) cli_json_string(stdout, labels[c]);
      else printf("\"%lld\"", (long long)c);
    }
    printf("], \"confusion\": [");
    for (int64_t t = 0; t < classes; t++) {
      printf("%s[", t ? ", " : "");
      for (int64_t c = 0; c < classes; c++)
        printf("%s%lld", c ? ", " : "", (long long)cm[t * classes + c]);
      printf("]");
    }
    printf("]");
  }
  printf("}\n");
}

int cli_eval(int argc, char **argv) {
  eval_args a;
  int rc = parse_eval_args(argc, argv, &a);
  if (rc >= 0) return rc;
  char **labels = NULL;
  int n_labels = 0;
  if (a.labels && !(labels = cli_labels_read(a.labels, &n_labels))) return 1;
  clt_context *ctx = cli_open_context(a.device, false);
  if (!ctx) {
    cli_labels_free(labels, n_labels);
    return 1;
  }
  clt_graph *g = NULL;
  clt_dataset *ds = NULL;
  int64_t *cm = NULL;
  clt_checkpoint_info info;
  rc = 1;
  char **saved = NULL;
  int n_saved = 0;
  clt_data_options dopt;
  clt_data_options_init(&dopt);
  if (clt_graph_load_model(ctx, a.model, &g) != CLT_OK ||
      clt_graph_set_forward_only(g, true) != CLT_OK ||
      clt_graph_set_precision(g, (clt_precision)a.precision) != CLT_OK ||
      cli_compile_graph(g, a.batch, 1, false) != CLT_OK ||
      clt_checkpoint_load_weights(g, a.weights) != CLT_OK ||
      clt_checkpoint_read_info(ctx, a.weights, &info) != CLT_OK ||
      clt_checkpoint_class_names(ctx, a.weights, &saved, &n_saved) != CLT_OK ||
      clt_data_options_from_graph(g, &dopt) != CLT_OK) {
    rc = fail(ctx);
    goto done;
  }
  clt_loss_kind kind = clt_graph_loss_kind(g);
  if (kind == CLT_LOSS_NONE) {
    fprintf(stderr, "cltrain: %s: eval needs a model with a loss layer "
                    "(softmax_cross_entropy or mse)\n",
            a.model);
    goto done;
  }
  /* The checkpoint's classes map image folders to the labels the model
   * learnt, and name the rows unless --labels does. */
  const char *const *trained = (const char *const *)(saved ? saved : labels);
  dopt.class_names = trained;
  dopt.n_class_names = saved ? n_saved : n_labels;
  if (!labels) {
    labels = saved;
    n_labels = n_saved;
  }
  dopt.test_limit = dopt.train_limit = a.limit;
  dopt.resize = a.resize;
  dopt.holdout = a.holdout;
  dopt.csv_values = cli_csv_values(a.csv_values_given, a.csv_values, &info);
  dopt.label_column = cli_label_column(a.label_column, &info);
  dopt.csv_separator = cli_csv_separator_chars[a.csv_separator];
  bool on_train = a.split == 1;
  if (clt_dataset_open(ctx, a.data, a.test_data, &dopt, on_train ? &ds : NULL,
                       on_train ? NULL : &ds) != CLT_OK) {
    rc = fail(ctx);
    goto done;
  }
  if (!ds) {
    fprintf(stderr, "cltrain: %s has no test split (--holdout 0)\n", a.data);
    goto done;
  }
  int64_t classes = clt_graph_output_size(g);
  clt_metrics m;
  if (kind == CLT_LOSS_MSE) {
    if (clt_evaluate(g, ds, a.batch, &m) != CLT_OK) {
      rc = fail(ctx);
      goto done;
    }
  } else {
    if (labels && n_labels < classes)
      fprintf(stderr, "cltrain: warning: %s names %d classes, the model has "
                      "%lld\n",
              a.labels ? a.labels : a.weights, n_labels, (long long)classes);
    cm = calloc((size_t)(classes * classes), sizeof *cm);
    if (!cm || clt_evaluate_confusion(g, ds, a.batch, cm, &m) != CLT_OK) {
      if (cm) rc = fail(ctx);
      else fprintf(stderr, "cltrain: out of memory\n");
      goto done;
    }
  }
  if (a.json) {
    print_json(&a, ds, &m, cm, classes, labels, n_labels, info.epoch);
    rc = 0;
    goto done;
  }
  printf("model: %s  weights: %s (epoch %d)%s\n", a.model, a.weights,
         info.epoch,
         a.precision == CLT_PRECISION_MIXED ? "  precision: mixed" : "");
  printf("data: %lld %s samples: %s\n", (long long)m.samples,
         split_names[a.split], clt_dataset_source(ds));
  if (!cm) {
    printf("loss %.6g (mse, %lld outputs)\n", m.loss, (long long)classes);
    rc = 0;
    goto done;
  }
  int64_t correct = 0;
  for (int64_t c = 0; c < classes; c++) correct += cm[c * classes + c];
  printf("loss %.4f  accuracy %.4f (%lld/%lld)\n", m.loss, m.accuracy,
         (long long)correct, (long long)m.samples);
  print_confusion(cm, classes, labels, n_labels);
  rc = 0;
done:
  free(cm);
  clt_dataset_destroy(ds);
  clt_graph_destroy(g);
  clt_context_destroy(ctx);
  if (labels != saved) clt_class_names_free(labels, n_labels);
  clt_class_names_free(saved, n_saved);
  return rc;
}
