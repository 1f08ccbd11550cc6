/* cltrain eval: loss, accuracy and the confusion matrix of trained
 * weights on a dataset. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "data/loader.h"
#include "graph/graph.h"

typedef struct eval_args {
  const char *model, *weights, *data, *test_data, *device, *labels, *split;
  const char *holdout;
  long long batch, limit;
  bool resize;
} eval_args;

static void eval_usage(FILE *out) {
  fprintf(out,
          "usage: cltrain eval MODEL --weights FILE --data DATA [options]\n"
          "  prints the loss, the accuracy and the confusion matrix\n"
          "  --weights FILE      trained weights (a checkpoint from "
          "train --save)\n"
          "  --data D            as for train: fashion-mnist, IDX folder, "
          "FILE.csv,\n"
          "                      a folder with train.csv/test.csv or "
          "train/ and test/\n"
          "  --test-data T       the test data (then --data may be left "
          "out)\n"
          "  --holdout F         the fraction train held out without test "
          "data (0.1)\n"
          "  --resize            resize images of another size\n"
          "  --split S           test (default) or train\n"
          "  --batch B           batch size (default 100)\n"
          "  --test-limit N      the first N images only\n"
          "  --labels FILE       class names, one a line\n"
          "  --device D          device (see `cltrain devices`)\n");
}

static int parse_eval_args(int argc, char **argv, eval_args *a) {
  memset(a, 0, sizeof *a);
  a->batch = 100;
  a->split = "test";
  bool bad = false;
  const char *v;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--help")) {
      eval_usage(stdout);
      return 0;
    }
    if (cli_opt_value(argc, argv, &i, "--weights", &a->weights, &bad) ||
        cli_opt_value(argc, argv, &i, "--data", &a->data, &bad) ||
        cli_opt_value(argc, argv, &i, "--test-data", &a->test_data, &bad) ||
        cli_opt_value(argc, argv, &i, "--holdout", &a->holdout, &bad) ||
        cli_opt_value(argc, argv, &i, "--device", &a->device, &bad) ||
        cli_opt_value(argc, argv, &i, "--labels", &a->labels, &bad) ||
        cli_opt_value(argc, argv, &i, "--split", &a->split, &bad)) {
      if (bad) return 2;
    } else if (cli_opt_value(argc, argv, &i, "--batch", &v, &bad)) {
      if (bad || !cli_parse_int("--batch", v, 1, INT_MAX, &a->batch)) return 2;
    } else if (cli_opt_value(argc, argv, &i, "--test-limit", &v, &bad)) {
      if (bad || !cli_parse_int("--test-limit", v, 1, LLONG_MAX, &a->limit)) return 2;
    } else if (!strcmp(argv[i], "--resize")) {
      a->resize = true;
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "cltrain eval: unknown option '%s' (see --help)\n",
              argv[i]);
      return 2;
    } else if (!a->model) {
      a->model = argv[i];
    } else {
      fprintf(stderr, "cltrain eval: unexpected argument '%s'\n", argv[i]);
      return 2;
    }
  }
  const char *missing = !a->model     ? "no MODEL file given"
                        : !a->weights ? "--weights FILE is required"
                        : !a->data && !a->test_data
                            ? "--data (or --test-data) is required"
                            : NULL;
  if (!missing && strcmp(a->split, "test") && strcmp(a->split, "train"))
    missing = "--split must be test or train";
  if (!missing && !a->data && !strcmp(a->split, "train"))
    missing = "--split train needs --data";
  if (missing) {
    fprintf(stderr, "cltrain eval: %s\n", missing);
    eval_usage(stderr);
    return 2;
  }
  return -1;
}

/* Runs every batch, adding each prediction to confusion[true][predicted];
 * the loss and accuracy gather on the device. */
static clt_status run_eval(clt_graph *g, const clt_dataset *ds, int batch,
                           int64_t classes, int64_t *confusion,
                           clt_metrics *m) {
  clt_loader_options lo;
  clt_loader_options_init(&lo);
  lo.batch = batch;
  lo.shuffle = false;
  clt_loader *l = NULL;
  clt_err err = {0};
  if (clt_loader_create(ds, &lo, &l, &err) != CLT_OK)
    return clt_ctx_fail(g->ctx, err.status, "%s", err.msg);
  float *probs = malloc((size_t)(batch * classes) * sizeof(float));
  clt_status st = probs ? clt_graph_metrics(g, m, true) : CLT_ERR_HOST_MEMORY;
  if (st == CLT_OK) st = clt_loader_start_epoch(l, 0);
  clt_host_batch b;
  while (st == CLT_OK && clt_loader_next(l, &b)) {
    int64_t outputs = 0;
    st = clt_graph_set_batch(g, b.images, b.labels, b.n);
    if (st == CLT_OK) st = clt_graph_forward(g, false);
    if (st == CLT_OK) st = clt_graph_predictions(g, probs, &outputs);
    for (int64_t i = 0; st == CLT_OK && i < b.n; i++) {
      const float *p = probs + i * classes;
      int64_t best = 0;
      for (int64_t c = 1; c < classes; c++)
        if (p[c] > p[best]) best = c;
      int64_t truth = b.labels[i];
      if (truth >= 0 && truth < classes) confusion[truth * classes + best]++;
    }
    clt_loader_release(l, &b);
  }
  if (st == CLT_OK) st = clt_graph_metrics(g, m, true);
  free(probs);
  clt_loader_destroy(l);
  return st;
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
      clt_graph_compile(g, a.batch, 1) != CLT_OK ||
      clt_checkpoint_load_weights(g, a.weights) != CLT_OK ||
      clt_checkpoint_read_info(ctx, a.weights, &info) != CLT_OK ||
      clt_checkpoint_class_names(ctx, a.weights, &saved, &n_saved) != CLT_OK ||
      clt_data_options_from_graph(g, &dopt) != CLT_OK) {
    rc = fail(ctx);
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
  if (a.holdout && (!cli_parse_double("--holdout", a.holdout, &dopt.holdout) ||
                    dopt.holdout < 0 || dopt.holdout >= 1)) {
    fprintf(stderr, "cltrain: --holdout takes a fraction from 0 to below 1\n");
    goto done;
  }
  bool on_train = !strcmp(a.split, "train");
  if (clt_dataset_open(ctx, a.data, a.test_data, &dopt, on_train ? &ds : NULL,
                       on_train ? NULL : &ds) != CLT_OK) {
    rc = fail(ctx);
    goto done;
  }
  if (!ds) {
    fprintf(stderr, "cltrain: %s has no test split (--holdout 0)\n", a.data);
    goto done;
  }
  if (g->loss_node < 0 || g->labels->dtype != CLT_I32) {
    fprintf(stderr, "cltrain: %s: eval needs a classifier "
                    "(softmax_cross_entropy)\n",
            a.model);
    goto done;
  }
  int64_t classes = g->nodes[g->loss_node].size;
  int64_t sample = (int64_t)ds->channels * ds->height * ds->width;
  if (sample != g->nodes[g->input_node].size || ds->num_classes > classes) {
    fprintf(stderr,
            "cltrain: %s: the data has %dx%dx%d images in %d classes, the "
            "model takes %lld values and has %lld classes\n",
            a.data, ds->channels, ds->height, ds->width, ds->num_classes,
            (long long)g->nodes[g->input_node].size, (long long)classes);
    goto done;
  }
  if (labels && n_labels < classes)
    fprintf(stderr, "cltrain: warning: %s names %d classes, the model has "
                    "%lld\n",
            a.labels ? a.labels : a.weights, n_labels, (long long)classes);
  cm = calloc((size_t)(classes * classes), sizeof *cm);
  clt_metrics m;
  if (!cm || run_eval(g, ds, (int)a.batch, classes, cm, &m) != CLT_OK) {
    rc = fail(ctx);
    goto done;
  }
  int64_t correct = 0;
  for (int64_t c = 0; c < classes; c++) correct += cm[c * classes + c];
  printf("model: %s  weights: %s (epoch %d)\n", a.model, a.weights,
         info.epoch);
  printf("data: %lld %s samples: %s\n", (long long)m.samples, a.split,
         clt_dataset_source(ds));
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
