/* What a program (and the command line) may ask of a graph without
 * reaching into it: the sizes of its input and output, the kind of its
 * loss, its parameter tensors by name, and evaluations that also count
 * the confusion matrix or score a regression's outputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/loader.h"
#include "graph/graph.h"
#include "runtime/runtime.h"

CLT_API int64_t clt_graph_input_size(const clt_graph *g) {
  return g->input_node >= 0 ? g->nodes[g->input_node].size : 0;
}

CLT_API int clt_graph_input_shape(const clt_graph *g, int64_t *shape) {
  if (g->input_node < 0) return 0;
  const clt_graph_node *in = &g->nodes[g->input_node];
  for (int i = 0; i < in->ndim; i++) shape[i] = in->shape[i];
  return in->ndim;
}

CLT_API int64_t clt_graph_output_size(const clt_graph *g) {
  return g->loss_node >= 0 ? g->nodes[g->loss_node].size : 0;
}

CLT_API clt_loss_kind clt_graph_loss_kind(const clt_graph *g) {
  if (g->loss_node < 0) return CLT_LOSS_NONE;
  return g->nodes[g->loss_node].ops->loss_kind;
}

CLT_API const char *clt_graph_loss_name(const clt_graph *g) {
  return g->loss_node >= 0 ? g->nodes[g->loss_node].ops->type : NULL;
}

/* Parameter tensor i of g in model order, and its node; NULL if none. */
static const clt_param *param_at(const clt_graph *g, int i,
                                 const clt_graph_node **node) {
  for (int k = 0; k < g->n_nodes && i >= 0; k++) {
    const clt_graph_node *n = &g->nodes[k];
    if (i < n->n_params) {
      *node = n;
      return &n->params[i];
    }
    i -= n->n_params;
  }
  return NULL;
}

CLT_API int clt_graph_param_tensors(const clt_graph *g) {
  int total = 0;
  for (int k = 0; k < g->n_nodes; k++) total += g->nodes[k].n_params;
  return total;
}

CLT_API clt_status clt_graph_param_info(const clt_graph *g, int i,
                                        clt_param_info *info) {
  const clt_graph_node *n = NULL;
  const clt_param *p = param_at(g, i, &n);
  if (!p || !info)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "parameter tensor %d: the graph has %d", i,
                        clt_graph_param_tensors(g));
  memset(info, 0, sizeof *info);
  clt_param_name(n, p, info->name, sizeof info->name);
  info->ndim = p->ndim;
  memcpy(info->shape, p->shape, sizeof info->shape);
  info->numel = p->numel;
  info->trainable = p->trainable;
  return CLT_OK;
}

/* The tensor named `name` of compiled g, as the master copy's slice
 * (mixed precision's layers view an fp16-rounded copy), checked against
 * numel. */
static clt_status param_named(clt_graph *g, const char *name, int64_t numel,
                              const char *what, clt_tensor *slice) {
  if (!g->compiled || !g->initialised)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "%s: compile the graph first", what);
  char list[200] = "";
  size_t used = 0;
  for (int i = 0; i < clt_graph_param_tensors(g); i++) {
    const clt_graph_node *n = NULL;
    const clt_param *p = param_at(g, i, &n);
    char own[CLT_PARAM_NAME_MAX];
    clt_param_name(n, p, own, sizeof own);
    if (name && !strcmp(own, name)) {
      if (numel != p->numel)
        return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                            "%s '%s': it holds %lld values, not %lld", what,
                            name, (long long)p->numel, (long long)numel);
      *slice = clt_tensor_slice_1d(g->params, p->offset, p->numel);
      return CLT_OK;
    }
    if (used < sizeof list - 1) {
      int w = snprintf(list + used, sizeof list - used, "%s'%s'",
                       i ? ", " : "", own);
      used = w > 0 && used + (size_t)w < sizeof list ? used + (size_t)w
                                                     : sizeof list - 1;
    }
  }
  return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                      "%s: the model has no parameter '%s' (it has %s%s)",
                      what, name ? name : "(null)", list,
                      used >= sizeof list - 1 ? "..." : "");
}

CLT_API clt_status clt_graph_get_param(clt_graph *g, const char *name,
                                       float *host, int64_t numel) {
  clt_tensor slice;
  CLT_TRY(param_named(g, name, numel, "get parameter", &slice));
  return clt_tensor_download(&slice, host);
}

CLT_API clt_status clt_graph_set_param(clt_graph *g, const char *name,
                                       const float *host, int64_t numel) {
  clt_tensor slice;
  CLT_TRY(param_named(g, name, numel, "set parameter", &slice));
  CLT_TRY(clt_tensor_upload(&slice, host));
  clt_graph_params_written(g);
  return CLT_OK;
}

/* Runs compiled g forward over ds in batches of `batch` (the metrics
 * read into *m) and hands each batch's outputs (clt_graph_predictions:
 * probabilities, or mse's values) with the batch to visit. */
typedef void (*outputs_visit)(void *user, const float *outputs,
                              const clt_host_batch *b);

static clt_status eval_outputs(clt_graph *g, const clt_dataset *ds,
                               int64_t batch, outputs_visit visit, void *user,
                               clt_metrics *m) {
  if (batch < 1 || batch > g->max_batch)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "batch %lld: the graph was compiled for 1 to %lld",
                        (long long)batch, (long long)g->max_batch);
  int64_t outputs = clt_graph_output_size(g);
  clt_loader_options lo;
  clt_loader_options_init(&lo);
  lo.batch = (int)batch;
  lo.shuffle = false;
  clt_loader *l = NULL;
  clt_err err = {0};
  if (clt_loader_create(ds, &lo, &l, &err) != CLT_OK)
    return clt_ctx_fail(g->ctx, err.status, "%s", err.msg);
  float *out = malloc((size_t)(batch * outputs) * sizeof(float));
  clt_status st = out ? clt_graph_metrics(g, m, true)
                      : clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "eval");
  if (st == CLT_OK) st = clt_loader_start_epoch(l, 0);
  clt_host_batch b;
  while (st == CLT_OK && clt_loader_next(l, &b)) {
    int64_t got = 0;
    st = clt_graph_set_batch(g, b.images, b.labels ? (const void *)b.labels
                                                   : (const void *)b.targets,
                             b.n);
    if (st == CLT_OK) st = clt_graph_forward(g, false);
    if (st == CLT_OK) st = clt_graph_predictions(g, out, &got);
    if (st == CLT_OK) visit(user, out, &b);
    clt_loader_release(l, &b);
  }
  if (st == CLT_OK) st = clt_graph_metrics(g, m, true);
  free(out);
  clt_loader_destroy(l);
  return st;
}

/* The model's input and output against ds's samples and labels (targets:
 * a regression's). */
static clt_status eval_fits(clt_graph *g, const clt_dataset *ds,
                            bool targets) {
  int64_t outputs = clt_graph_output_size(g);
  int64_t sample = (int64_t)ds->channels * ds->height * ds->width;
  if (targets && (sample != clt_graph_input_size(g) || !ds->targets ||
                  ds->target_size != outputs))
    return clt_ctx_fail(g->ctx, CLT_ERR_SHAPE,
                        "%s: %dx%dx%d samples with %lld targets; the model "
                        "takes %lld values and has %lld outputs",
                        ds->source, ds->channels, ds->height, ds->width,
                        (long long)(ds->targets ? ds->target_size : 0),
                        (long long)clt_graph_input_size(g),
                        (long long)outputs);
  if (!targets && (sample != clt_graph_input_size(g) || !ds->labels ||
                   ds->num_classes > outputs))
    return clt_ctx_fail(g->ctx, CLT_ERR_SHAPE,
                        "%s: %dx%dx%d samples in %d classes; the model takes "
                        "%lld values and has %lld classes",
                        ds->source, ds->channels, ds->height, ds->width,
                        ds->num_classes, (long long)clt_graph_input_size(g),
                        (long long)outputs);
  return CLT_OK;
}

typedef struct confusion_counts {
  int64_t classes, *confusion;
} confusion_counts;

static void count_confusion(void *user, const float *probs,
                            const clt_host_batch *b) {
  confusion_counts *c = user;
  for (int64_t i = 0; i < b->n; i++) {
    const float *p = probs + i * c->classes;
    int64_t best = 0;
    for (int64_t k = 1; k < c->classes; k++)
      if (p[k] > p[best]) best = k;
    int64_t truth = b->labels[i];
    if (truth >= 0 && truth < c->classes)
      c->confusion[truth * c->classes + best]++;
  }
}

CLT_API clt_status clt_evaluate_confusion(clt_graph *g, const clt_dataset *ds,
                                          int64_t batch, int64_t *confusion,
                                          clt_metrics *m) {
  if (clt_graph_loss_kind(g) != CLT_LOSS_CLASSIFIER || !g->compiled)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "a confusion matrix needs a compiled classifier "
                        "(softmax_cross_entropy)");
  CLT_TRY(eval_fits(g, ds, false));
  confusion_counts c = {clt_graph_output_size(g), confusion};
  memset(confusion, 0, (size_t)(c.classes * c.classes) * sizeof *confusion);
  return eval_outputs(g, ds, batch, count_confusion, &c, m);
}

/* Top-k hits: a sample's class among the k likeliest (fewer than k
 * classes score strictly above it; ties at the edge count in, as
 * TensorFlow's in_top_k). */
typedef struct top_k_hits {
  int64_t classes, k, hits;
} top_k_hits;

static void count_top_k(void *user, const float *probs,
                        const clt_host_batch *b) {
  top_k_hits *t = user;
  for (int64_t i = 0; i < b->n; i++) {
    const float *p = probs + i * t->classes;
    int64_t truth = b->labels[i], above = 0;
    if (truth < 0 || truth >= t->classes || isnan(p[truth])) continue;
    for (int64_t c = 0; c < t->classes; c++) above += p[c] > p[truth];
    t->hits += above < t->k;
  }
}

CLT_API clt_status clt_evaluate_top_k(clt_graph *g, const clt_dataset *ds,
                                      int64_t batch, int k, int64_t *hits,
                                      clt_metrics *m) {
  if (clt_graph_loss_kind(g) != CLT_LOSS_CLASSIFIER || !g->compiled)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "top-k accuracy needs a compiled classifier "
                        "(softmax_cross_entropy)");
  int64_t classes = clt_graph_output_size(g);
  if (k < 1 || k > classes)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "top-k accuracy: k is %d; the model has %lld "
                        "classes (k from 1 to %lld)",
                        k, (long long)classes, (long long)classes);
  CLT_TRY(eval_fits(g, ds, false));
  top_k_hits t = {classes, k, 0};
  CLT_TRY(eval_outputs(g, ds, batch, count_top_k, &t, m));
  *hits = t.hits;
  return CLT_OK;
}

/* ROC AUC: every sample's score for each output, and whether the output's
 * class or label is the sample's (a label: a target of 0.5 or more). */
typedef struct roc_scores {
  int64_t outputs, n, cap;
  bool multilabel;
  float *score;     /* [cap][outputs] */
  uint8_t *present; /* the same */
} roc_scores;

static void keep_scores(void *user, const float *probs,
                        const clt_host_batch *b) {
  roc_scores *r = user;
  for (int64_t i = 0; i < b->n && r->n < r->cap; i++, r->n++)
    for (int64_t k = 0; k < r->outputs; k++) {
      int64_t at = r->n * r->outputs + k;
      r->score[at] = probs[i * r->outputs + k];
      r->present[at] = r->multilabel ? b->targets[i * r->outputs + k] >= 0.5f
                                     : b->labels[i] == k;
    }
}

typedef struct ranked {
  float score;
  uint8_t present;
} ranked;

/* Ascending, a NaN (a model that diverged) below every number. */
static int by_score(const void *a, const void *b) {
  float x = ((const ranked *)a)->score, y = ((const ranked *)b)->score;
  if (isnan(x) || isnan(y)) return !isnan(x) - !isnan(y);
  return (x > y) - (x < y);
}

static bool same_score(float x, float y) {
  return x == y || (isnan(x) && isnan(y));
}

/* The area under the ROC curve of n scored samples: the chance that a
 * present one scores above an absent one, ties counting half (the
 * Mann-Whitney U over average ranks; scikit-learn's roc_auc_score). Sorts
 * v. NaN without both kinds. */
static double roc_auc_of(ranked *v, int64_t n) {
  qsort(v, (size_t)n, sizeof *v, by_score);
  double rank_sum = 0.0, pos = 0.0;
  for (int64_t i = 0; i < n;) {
    int64_t j = i, here = 0;
    for (; j < n && same_score(v[j].score, v[i].score); j++)
      here += v[j].present;
    rank_sum += (double)here * (double)(i + 1 + j) / 2.0; /* ranks i+1..j */
    pos += (double)here;
    i = j;
  }
  double neg = (double)n - pos;
  if (pos == 0.0 || neg == 0.0) return NAN;
  return (rank_sum - pos * (pos + 1.0) / 2.0) / (pos * neg);
}

CLT_API clt_status clt_evaluate_roc_auc(clt_graph *g, const clt_dataset *ds,
                                        int64_t batch, double *auc,
                                        double *micro, clt_metrics *m) {
  clt_loss_kind kind = clt_graph_loss_kind(g);
  if ((kind != CLT_LOSS_CLASSIFIER && kind != CLT_LOSS_MULTILABEL) ||
      !g->compiled)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "ROC AUC needs a compiled classifier "
                        "(softmax_cross_entropy) or multi-label model "
                        "(sigmoid_cross_entropy)");
  bool multilabel = kind == CLT_LOSS_MULTILABEL;
  CLT_TRY(eval_fits(g, ds, multilabel));
  if (multilabel) {
    clt_err err = {0};
    if (clt_dataset_check_unit_targets(ds, &err) != CLT_OK)
      return clt_ctx_fail(g->ctx, err.status, "%s: %s", ds->source, err.msg);
  }
  int64_t outputs = clt_graph_output_size(g), cap = ds->count;
  size_t cells = (size_t)(cap > 0 ? cap : 1) * (size_t)outputs;
  roc_scores r = {outputs, 0, cap, multilabel, malloc(cells * sizeof(float)),
                  malloc(cells)};
  ranked *v = malloc(cells * sizeof *v);
  clt_status st = r.score && r.present && v
                      ? eval_outputs(g, ds, batch, keep_scores, &r, m)
                      : clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY,
                                     "ROC AUC: %lld scores",
                                     (long long)(cap * outputs));
  for (int64_t k = 0; st == CLT_OK && k < outputs; k++) {
    for (int64_t i = 0; i < r.n; i++)
      v[i] = (ranked){r.score[i * outputs + k], r.present[i * outputs + k]};
    auc[k] = roc_auc_of(v, r.n);
  }
  if (st == CLT_OK && micro) { /* every (sample, output) decision pooled */
    for (int64_t i = 0; i < r.n * outputs; i++)
      v[i] = (ranked){r.score[i], r.present[i]};
    *micro = roc_auc_of(v, r.n * outputs);
  }
  free(r.score);
  free(r.present);
  free(v);
  return st;
}

typedef struct label_counts {
  int64_t labels, *counts, exact;
} label_counts;

static void count_labels(void *user, const float *probs,
                         const clt_host_batch *b) {
  label_counts *c = user;
  for (int64_t i = 0; i < b->n; i++) {
    bool all = true;
    for (int64_t k = 0; k < c->labels; k++) {
      bool said = probs[i * c->labels + k] >= 0.5f;
      bool is = b->targets[i * c->labels + k] >= 0.5f;
      c->counts[4 * k + (said ? (is ? 0 : 1) : (is ? 2 : 3))]++;
      all = all && said == is;
    }
    c->exact += all;
  }
}

CLT_API clt_status clt_evaluate_multilabel(clt_graph *g, const clt_dataset *ds,
                                           int64_t batch, int64_t *counts,
                                           int64_t *exact, clt_metrics *m) {
  if (clt_graph_loss_kind(g) != CLT_LOSS_MULTILABEL || !g->compiled)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "label counts need a compiled multi-label model "
                        "(sigmoid_cross_entropy)");
  CLT_TRY(eval_fits(g, ds, true));
  label_counts c = {clt_graph_output_size(g), counts, 0};
  clt_err err = {0};
  if (clt_dataset_check_unit_targets(ds, &err) != CLT_OK)
    return clt_ctx_fail(g->ctx, err.status, "%s: %s", ds->source, err.msg);
  memset(counts, 0, (size_t)(4 * c.labels) * sizeof *counts);
  CLT_TRY(eval_outputs(g, ds, batch, count_labels, &c, m));
  if (exact) *exact = c.exact;
  return CLT_OK;
}

/* Per output: the samples, the sums of absolute and squared errors, and
 * the targets' running mean and sum of squared deviations (Welford's
 * update: exact enough where the targets are large and vary little). */
typedef struct output_sums {
  double n, abs, sq, mean, m2;
} output_sums;

typedef struct regression_sums {
  int64_t outputs;
  output_sums *s;
} regression_sums;

static void sum_errors(void *user, const float *outputs,
                       const clt_host_batch *b) {
  regression_sums *r = user;
  for (int64_t i = 0; i < b->n; i++)
    for (int64_t k = 0; k < r->outputs; k++) {
      output_sums *s = &r->s[k];
      double y = b->targets[i * r->outputs + k];
      double d = (double)outputs[i * r->outputs + k] - y;
      s->abs += fabs(d);
      s->sq += d * d;
      s->n += 1.0;
      double dev = y - s->mean;
      s->mean += dev / s->n;
      s->m2 += dev * (y - s->mean);
    }
}

static clt_regression_scores scores_of(double n, double abs, double sq,
                                       double m2) {
  clt_regression_scores r = {NAN, NAN, NAN, NAN};
  if (n <= 0) return r;
  r.mae = abs / n;
  r.mse = sq / n;
  r.rmse = sqrt(r.mse);
  if (m2 > 0) r.r2 = 1.0 - sq / m2;
  return r;
}

CLT_API clt_status clt_evaluate_regression(clt_graph *g, const clt_dataset *ds,
                                           int64_t batch,
                                           clt_regression_scores *per_output,
                                           clt_regression_scores *overall,
                                           clt_metrics *m) {
  if (clt_graph_loss_kind(g) != CLT_LOSS_REGRESSION || !g->compiled)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "regression scores need a compiled regression model "
                        "(mse, mae or huber)");
  CLT_TRY(eval_fits(g, ds, true));
  regression_sums r = {clt_graph_output_size(g), NULL};
  if (!(r.s = calloc((size_t)r.outputs, sizeof *r.s)))
    return clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "eval");
  clt_status st = eval_outputs(g, ds, batch, sum_errors, &r, m);
  if (st == CLT_OK) {
    double n = 0, abs = 0, sq = 0, r2 = 0, defined = 0;
    for (int64_t k = 0; k < r.outputs; k++) {
      const output_sums *s = &r.s[k];
      clt_regression_scores one = scores_of(s->n, s->abs, s->sq, s->m2);
      if (per_output) per_output[k] = one;
      n += s->n;
      abs += s->abs;
      sq += s->sq;
      if (!isnan(one.r2)) {
        r2 += one.r2;
        defined += 1;
      }
    }
    if (overall) {
      *overall = scores_of(n, abs, sq, 0.0);
      overall->r2 = defined > 0 ? r2 / defined : NAN;
    }
  }
  free(r.s);
  return st;
}

CLT_API clt_status clt_graph_set_batch_device(clt_graph *g,
                                              const clt_tensor *inputs,
                                              const clt_tensor *labels,
                                              int64_t n) {
  if (!g->compiled || g->input_node < 0 || n < 1 || n > g->max_batch)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "set batch: %lld samples for a graph compiled for 1 "
                        "to %lld",
                        (long long)n, (long long)g->max_batch);
  clt_graph_node *in = &g->nodes[g->input_node];
  int64_t per = g->labels && g->labels->dtype == CLT_F32
                    ? g->nodes[g->loss_node].size
                    : 1;
  if (inputs->numel != n * in->size || inputs->dtype != CLT_F32 ||
      (labels && (!g->labels || labels->numel != n * per ||
                  labels->dtype != g->labels->dtype)))
    return clt_ctx_fail(g->ctx, CLT_ERR_SHAPE,
                        "set batch: %lld samples need %lld f32 inputs and "
                        "%lld labels",
                        (long long)n, (long long)(n * in->size),
                        (long long)(n * per));
  clt_tensor x = clt_tensor_slice_1d(in->out, 0, n * in->size);
  CLT_TRY(clt_tensor_copy(&x, inputs));
  if (labels) {
    clt_tensor y = clt_tensor_slice_1d(g->labels, 0, n * per);
    CLT_TRY(clt_tensor_copy(&y, labels));
  }
  clt_graph_batch_is(g, n, labels != NULL);
  return CLT_OK;
}
