/* cltrain eval: loss, accuracy, the confusion matrix and the per-class
 * scores (ROC AUC among them) of trained weights on a dataset; a
 * regression's errors and R^2. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"

typedef struct eval_args {
  const char *model, *weights, *data, *test_data, *device, *labels;
  long long batch, limit, top_k; /* top_k 0: not asked */
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
      {"top-k", CLI_INT, &a->top_k, "K",
       "a classifier: also the top-K accuracy (the class among\n"
       "the K likeliest)", 1, INT_MAX, 0, 0, 0},
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
      "  prints the loss, the accuracy, the confusion matrix and each\n"
      "  class's precision, recall, F1 and ROC AUC (one class against the\n"
      "  rest) with their macro and weighted averages (a multi-label\n"
      "  model, sigmoid_cross_entropy: the accuracy per label, the exact\n"
      "  match and each label's scores; a regression model, mse, mae or\n"
      "  huber: the loss, the mean absolute and root mean squared errors\n"
      "  and R^2, per output too)\n",
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

/* One class's scores from the confusion matrix, scikit-learn's
 * classification_report: precision (of the samples predicted c, those
 * that are c), recall (of the samples of c, those predicted c), F1 (their
 * harmonic mean) and support (the samples of c). NaN where undefined: no
 * sample predicted c, no sample of c; F1 then 0 where the other is
 * defined (a class predicted but never present, or present but never
 * predicted). */
typedef struct class_score {
  double precision, recall, f1;
  int64_t support, predicted;
  double auc; /* ROC AUC (clt_evaluate_roc_auc), NaN where undefined */
} class_score;

/* The scores' columns: precision, recall, F1, ROC AUC. */
#define SCORES 4

static class_score score_of(const int64_t *cm, int64_t classes, int64_t c) {
  class_score s = {NAN, NAN, NAN, 0, 0, NAN};
  for (int64_t i = 0; i < classes; i++) {
    s.support += cm[c * classes + i];
    s.predicted += cm[i * classes + c];
  }
  double hit = (double)cm[c * classes + c];
  if (s.predicted > 0) s.precision = hit / (double)s.predicted;
  if (s.support > 0) s.recall = hit / (double)s.support;
  if (s.predicted > 0 || s.support > 0)
    s.f1 = hit > 0 ? 2.0 * hit / (double)(s.predicted + s.support) : 0.0;
  return s;
}

/* The ROC AUC's macro and weighted (by support) averages over the rows
 * where it is defined (scikit-learn refuses the others). */
static void auc_averages(const class_score *rows, int64_t n, double *macro,
                         double *weighted) {
  double sum = 0, wsum = 0, count = 0, support = 0;
  for (int64_t k = 0; k < n; k++) {
    if (isnan(rows[k].auc)) continue;
    sum += rows[k].auc;
    wsum += rows[k].auc * (double)rows[k].support;
    count += 1;
    support += (double)rows[k].support;
  }
  *macro = count > 0 ? sum / count : NAN;
  *weighted = support > 0 ? wsum / support : NAN;
}

/* The macro (each class alike) and weighted (by support) averages over
 * the classes that occur in the truth or the predictions, an undefined
 * score counted as 0, as scikit-learn does: avg[0] macro, avg[1]
 * weighted, each precision, recall, F1 (and the ROC AUC's, as
 * auc_averages). */
static void score_averages(const int64_t *cm, int64_t classes,
                           const class_score *rows, double avg[2][SCORES],
                           int64_t *total) {
  double sum[2][3] = {{0}}, n = 0;
  *total = 0;
  for (int64_t c = 0; c < classes; c++) {
    class_score s = score_of(cm, classes, c);
    if (s.support == 0 && s.predicted == 0) continue;
    double v[3] = {isnan(s.precision) ? 0 : s.precision,
                   isnan(s.recall) ? 0 : s.recall, s.f1};
    for (int k = 0; k < 3; k++) {
      sum[0][k] += v[k];
      sum[1][k] += v[k] * (double)s.support;
    }
    n += 1;
    *total += s.support;
  }
  for (int k = 0; k < 3; k++) {
    avg[0][k] = n > 0 ? sum[0][k] / n : NAN;
    avg[1][k] = *total > 0 ? sum[1][k] / (double)*total : NAN;
  }
  auc_averages(rows, classes, &avg[0][3], &avg[1][3]);
}

static void print_score(double v) {
  if (isnan(v)) printf("  %9s", "-");
  else printf("  %9.4f", v);
}

/* A table of scores, a row each (a class's or a label's precision,
 * recall, F1, support and ROC AUC), then the averages' rows over all of
 * them. */
static void print_scores(const char *what, const class_score *rows,
                         int64_t n, char **names, int n_names,
                         const char *const *avg_names, double (*avg)[SCORES],
                         int n_avg, int64_t total) {
  int name_w = 12;
  for (int i = 0; names && i < n_names && i < n; i++)
    if ((int)strlen(names[i]) + 4 > name_w) name_w = (int)strlen(names[i]) + 4;
  printf("%-*s  %9s  %9s  %9s  %9s  %9s\n", name_w, what, "precision",
         "recall", "f1-score", "support", "roc auc");
  for (int64_t c = 0; c < n; c++) {
    char name[160];
    snprintf(name, sizeof name, "%3lld %s", (long long)c,
             names && c < n_names ? names[c] : "");
    printf("%-*s", name_w, name);
    print_score(rows[c].precision);
    print_score(rows[c].recall);
    print_score(rows[c].f1);
    printf("  %9lld", (long long)rows[c].support);
    print_score(rows[c].auc);
    printf("\n");
  }
  for (int k = 0; k < n_avg; k++) {
    printf("%-*s", name_w, avg_names[k]);
    for (int j = 0; j < 3; j++) print_score(avg[k][j]);
    printf("  %9lld", (long long)total);
    print_score(avg[k][3]);
    printf("\n");
  }
}

/* A classifier's rows: each class's scores, its ROC AUC from auc. */
static class_score *class_rows(const int64_t *cm, const double *auc,
                               int64_t classes) {
  class_score *rows = malloc((size_t)classes * sizeof *rows);
  for (int64_t c = 0; rows && c < classes; c++) {
    rows[c] = score_of(cm, classes, c);
    rows[c].auc = auc[c];
  }
  return rows;
}

/* The per-class table under the matrix: precision, recall, F1, support,
 * ROC AUC, then the macro and weighted averages. */
static void print_report(const int64_t *cm, const double *auc,
                         int64_t classes, char **labels, int n_labels) {
  class_score *rows = class_rows(cm, auc, classes);
  if (!rows) return;
  double avg[2][SCORES];
  int64_t total;
  score_averages(cm, classes, rows, avg, &total);
  static const char *const names[] = {"macro avg", "weighted avg"};
  print_scores("class", rows, classes, labels, n_labels, names, avg, 2,
               total);
  free(rows);
}

static void json_scores(const double v[SCORES]) {
  printf("{\"precision\": ");
  cli_json_number(stdout, v[0]);
  printf(", \"recall\": ");
  cli_json_number(stdout, v[1]);
  printf(", \"f1\": ");
  cli_json_number(stdout, v[2]);
  printf(", \"roc_auc\": ");
  cli_json_number(stdout, v[3]);
}

/* A regression's scores: one line over all outputs, then, with more than
 * one, a line each (scikit-learn's mean_absolute_error, mean_squared_error,
 * its root and r2_score; "-" where R^2 is undefined: targets that do not
 * vary). */
static void print_regression(const clt_regression_scores *per_output,
                             const clt_regression_scores *all,
                             int64_t outputs, char **names, int n_names) {
  printf("mae %.6g  rmse %.6g  r2 ", all->mae, all->rmse);
  if (isnan(all->r2)) printf("- (the targets do not vary)\n");
  else printf("%.4f\n", all->r2);
  if (outputs < 2) return;
  int name_w = 8;
  for (int i = 0; names && i < n_names && i < outputs; i++)
    if ((int)strlen(names[i]) + 4 > name_w) name_w = (int)strlen(names[i]) + 4;
  printf("%-*s  %12s  %12s  %12s  %9s\n", name_w, "output", "mae", "mse",
         "rmse", "r2");
  for (int64_t k = 0; k < outputs; k++) {
    const clt_regression_scores *r = &per_output[k];
    char name[160];
    snprintf(name, sizeof name, "%-3lld %s", (long long)k,
             names && k < n_names ? names[k] : "");
    printf("%-*s  %12.6g  %12.6g  %12.6g", name_w, name, r->mae, r->mse,
           r->rmse);
    print_score(r->r2);
    printf("\n");
  }
}

/* A label's scores from its counts (clt_evaluate_multilabel: true and
 * false positives, false negatives, true negatives), as score_of gives a
 * class's: support, the samples where the label is present. */
static class_score label_score(const int64_t *c) {
  class_score s = {NAN, NAN, NAN, c[0] + c[2], c[0] + c[1], NAN};
  if (s.predicted > 0) s.precision = (double)c[0] / (double)s.predicted;
  if (s.support > 0) s.recall = (double)c[0] / (double)s.support;
  if (s.predicted > 0 || s.support > 0)
    s.f1 = 2.0 * (double)c[0] / (double)(s.predicted + s.support);
  return s;
}

/* A multi-label model's rows: each label's scores, its ROC AUC from
 * auc. */
static class_score *label_rows(const int64_t *counts, const double *auc,
                               int64_t labels) {
  class_score *rows = malloc((size_t)labels * sizeof *rows);
  for (int64_t k = 0; rows && k < labels; k++) {
    rows[k] = label_score(counts + 4 * k);
    rows[k].auc = auc[k];
  }
  return rows;
}

/* A multi-label model's report: each label's precision, recall, F1,
 * support and ROC AUC, then the micro (every decision pooled: micro_auc),
 * macro and weighted averages (scikit-learn's classification_report of
 * multi-label data; an undefined score is 0 in the averages, but for the
 * ROC AUC's, over the labels where it is defined); avg[k] filled for
 * --json. */
static void multilabel_averages(const int64_t *counts, const class_score *rows,
                                int64_t labels, double micro_auc,
                                double avg[3][SCORES], int64_t *total) {
  int64_t pooled[4] = {0};
  double sum[2][3] = {{0}};
  *total = 0;
  for (int64_t k = 0; k < labels; k++) {
    class_score s = label_score(counts + 4 * k);
    double v[3] = {isnan(s.precision) ? 0 : s.precision,
                   isnan(s.recall) ? 0 : s.recall, isnan(s.f1) ? 0 : s.f1};
    for (int j = 0; j < 3; j++) {
      sum[0][j] += v[j];
      sum[1][j] += v[j] * (double)s.support;
    }
    for (int j = 0; j < 4; j++) pooled[j] += counts[4 * k + j];
    *total += s.support;
  }
  class_score micro = label_score(pooled);
  double m[3] = {micro.precision, micro.recall, micro.f1};
  for (int j = 0; j < 3; j++) {
    avg[0][j] = m[j];
    avg[1][j] = labels > 0 ? sum[0][j] / (double)labels : NAN;
    avg[2][j] = *total > 0 ? sum[1][j] / (double)*total : NAN;
  }
  avg[0][3] = micro_auc;
  auc_averages(rows, labels, &avg[1][3], &avg[2][3]);
}

static void print_multilabel(const int64_t *counts, const double *auc,
                             double micro_auc, int64_t labels, char **names,
                             int n_names) {
  class_score *rows = label_rows(counts, auc, labels);
  if (!rows) return;
  double avg[3][SCORES];
  int64_t total;
  multilabel_averages(counts, rows, labels, micro_auc, avg, &total);
  static const char *const kinds[] = {"micro avg", "macro avg",
                                      "weighted avg"};
  print_scores("label", rows, labels, names, n_names, kinds, avg, 3, total);
  free(rows);
}

static int fail(clt_context *ctx) {
  fprintf(stderr, "cltrain: %s\n", clt_context_last_error(ctx));
  return 1;
}

/* A regression's scores as JSON members. */
static void json_regression(const clt_regression_scores *r) {
  const char *names[] = {"mae", "mse", "rmse", "r2"};
  double v[] = {r->mae, r->mse, r->rmse, r->r2};
  for (int i = 0; i < 4; i++) {
    printf("%s\"%s\": ", i ? ", " : "", names[i]);
    cli_json_number(stdout, v[i]);
  }
}

/* ", \"key\": [names]": the classes' or labels' names, a number where
 * none is given. */
static void json_names(const char *key, int64_t n, char **names,
                       int n_names) {
  printf(", \"%s\": [", key);
  for (int64_t c = 0; c < n; c++) {
    printf("%s", c ? ", " : "");
    if (names && c < n_names) cli_json_string(stdout, names[c]);
    else printf("\"%lld\"", (long long)c);
  }
  printf("]");
}

/* print_scores' table as JSON members: "key": each row's scores and
 * support, then each average under its key. */
static void json_score_rows(const char *key, const class_score *rows,
                            int64_t n, const char *const *avg_keys,
                            double (*avg)[SCORES], int n_avg) {
  printf(", \"%s\": [", key);
  for (int64_t c = 0; c < n; c++) {
    printf("%s", c ? ", " : "");
    json_scores((double[SCORES]){rows[c].precision, rows[c].recall,
                                 rows[c].f1, rows[c].auc});
    printf(", \"support\": %lld}", (long long)rows[c].support);
  }
  printf("]");
  for (int k = 0; k < n_avg; k++) {
    printf(", \"%s\": ", avg_keys[k]);
    json_scores(avg[k]);
    printf("}");
  }
}

static void print_json(const eval_args *a, const clt_dataset *ds,
                       const clt_metrics *m, const int64_t *cm,
                       const clt_regression_scores *per_output,
                       const clt_regression_scores *overall,
                       const int64_t *lc, int64_t exact, const double *auc,
                       double micro_auc, int64_t top_hits, int64_t classes,
                       char **labels, int n_labels, int epoch) {
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
  cli_json_number(stdout, cm || lc ? m->accuracy : NAN);
  if (top_hits >= 0) {
    printf(", \"top_k\": %lld, \"top_k_accuracy\": ", a->top_k);
    cli_json_number(stdout, m->samples > 0 ? (double)top_hits /
                                                 (double)m->samples
                                           : NAN);
  }
  if (lc) {
    printf(", \"exact_match\": ");
    cli_json_number(stdout, m->samples > 0 ? (double)exact / (double)m->samples
                                           : NAN);
    json_names("labels", classes, labels, n_labels);
    class_score *rows = label_rows(lc, auc, classes);
    double avg[3][SCORES];
    int64_t total;
    static const char *const keys[] = {"micro_avg", "macro_avg",
                                       "weighted_avg"};
    if (rows) {
      multilabel_averages(lc, rows, classes, micro_auc, avg, &total);
      json_score_rows("per_label", rows, classes, keys, avg, 3);
    }
    free(rows);
  }
  if (per_output) {
    printf(", ");
    json_regression(overall);
    printf(", \"per_output\": [");
    for (int64_t k = 0; k < classes; k++) {
      printf("%s{", k ? ", " : "");
      if (labels && k < n_labels) {
        printf("\"name\": ");
        cli_json_string(stdout, labels[k]);
        printf(", ");
      }
      json_regression(&per_output[k]);
      printf("}");
    }
    printf("]");
  }
  if (cm) {
    json_names("classes", classes, labels, n_labels);
    printf(", \"confusion\": [");
    for (int64_t t = 0; t < classes; t++) {
      printf("%s[", t ? ", " : "");
      for (int64_t c = 0; c < classes; c++)
        printf("%s%lld", c ? ", " : "", (long long)cm[t * classes + c]);
      printf("]");
    }
    printf("]");
    class_score *rows = class_rows(cm, auc, classes);
    double avg[2][SCORES];
    int64_t total;
    static const char *const keys[] = {"macro_avg", "weighted_avg"};
    if (rows) {
      score_averages(cm, classes, rows, avg, &total);
      json_score_rows("per_class", rows, classes, keys, avg, 2);
    }
    free(rows);
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
  int64_t *cm = NULL, *lc = NULL, exact = 0;
  double *auc = NULL, micro_auc = NAN;
  clt_regression_scores *per_output = NULL, overall;
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
                    "(softmax_cross_entropy, mse, mae or huber)\n",
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
  int64_t top_hits = -1; /* --top-k's count */
  if (a.top_k > 0 && kind != CLT_LOSS_CLASSIFIER) {
    fprintf(stderr, "cltrain eval: --top-k is for a classifier "
                    "(softmax_cross_entropy); this model's loss is %s\n",
            clt_graph_loss_name(g));
    rc = 2;
    goto done;
  }
  if (kind == CLT_LOSS_MULTILABEL) {
    lc = calloc((size_t)(4 * classes), sizeof *lc);
    auc = calloc((size_t)classes, sizeof *auc);
    if (!lc || !auc ||
        clt_evaluate_multilabel(g, ds, a.batch, lc, &exact, &m) != CLT_OK ||
        clt_evaluate_roc_auc(g, ds, a.batch, auc, &micro_auc, &m) != CLT_OK) {
      if (lc && auc) rc = fail(ctx);
      else fprintf(stderr, "cltrain: out of memory\n");
      goto done;
    }
  } else if (kind == CLT_LOSS_REGRESSION) {
    per_output = calloc((size_t)classes, sizeof *per_output);
    if (!per_output ||
        clt_evaluate_regression(g, ds, a.batch, per_output, &overall, &m) !=
            CLT_OK) {
      if (per_output) rc = fail(ctx);
      else fprintf(stderr, "cltrain: out of memory\n");
      goto done;
    }
  } else {
    if (labels && n_labels < classes)
      fprintf(stderr, "cltrain: warning: %s names %d classes, the model has "
                      "%lld\n",
              a.labels ? a.labels : a.weights, n_labels, (long long)classes);
    cm = calloc((size_t)(classes * classes), sizeof *cm);
    auc = calloc((size_t)classes, sizeof *auc);
    if (!cm || !auc ||
        clt_evaluate_confusion(g, ds, a.batch, cm, &m) != CLT_OK ||
        clt_evaluate_roc_auc(g, ds, a.batch, auc, &micro_auc, &m) != CLT_OK ||
        (a.top_k > 0 && clt_evaluate_top_k(g, ds, a.batch, (int)a.top_k,
                                           &top_hits, &m) != CLT_OK)) {
      if (cm && auc) rc = fail(ctx);
      else fprintf(stderr, "cltrain: out of memory\n");
      goto done;
    }
  }
  if (a.json) {
    print_json(&a, ds, &m, cm, per_output, &overall, lc, exact, auc,
               micro_auc, top_hits, classes, labels, n_labels, info.epoch);
    rc = 0;
    goto done;
  }
  printf("model: %s  weights: %s (epoch %d)%s\n", a.model, a.weights,
         info.epoch,
         a.precision == CLT_PRECISION_MIXED ? "  precision: mixed" : "");
  printf("data: %lld %s samples: %s\n", (long long)m.samples,
         split_names[a.split], clt_dataset_source(ds));
  if (lc) {
    printf("loss %.4f  accuracy %.4f (per label)  exact match %.4f "
           "(%lld/%lld samples with every label right)\n",
           m.loss, m.accuracy,
           m.samples > 0 ? (double)exact / (double)m.samples : NAN,
           (long long)exact, (long long)m.samples);
    print_multilabel(lc, auc, micro_auc, classes, labels, n_labels);
    rc = 0;
    goto done;
  }
  if (!cm) {
    printf("loss %.6g (%s, %lld output%s)\n", m.loss, clt_graph_loss_name(g),
           (long long)classes, CLI_PLURAL(classes));
    print_regression(per_output, &overall, classes, labels, n_labels);
    rc = 0;
    goto done;
  }
  int64_t correct = 0;
  for (int64_t c = 0; c < classes; c++) correct += cm[c * classes + c];
  printf("loss %.4f  accuracy %.4f (%lld/%lld)\n", m.loss, m.accuracy,
         (long long)correct, (long long)m.samples);
  if (top_hits >= 0)
    printf("top-%lld accuracy %.4f (%lld/%lld)\n", a.top_k,
           m.samples > 0 ? (double)top_hits / (double)m.samples : NAN,
           (long long)top_hits, (long long)m.samples);
  print_confusion(cm, classes, labels, n_labels);
  print_report(cm, auc, classes, labels, n_labels);
  rc = 0;
done:
  free(cm);
  free(lc);
  free(auc);
  free(per_output);
  clt_dataset_destroy(ds);
  clt_graph_destroy(g);
  clt_context_destroy(ctx);
  if (labels != saved) clt_class_names_free(labels, n_labels);
  clt_class_names_free(saved, n_saved);
  return rc;
}
