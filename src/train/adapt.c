/* What layers learn from the training data before the first step: the
 * normalize layers' statistics (Keras's Normalization.adapt) and
 * softmax_cross_entropy's class_weights=balanced (scikit-learn's
 * compute_class_weight): clt_graph_adapt, and clt_fit for the layers that
 * have none yet. */
#include "train/adapt.h"

#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"

static bool is_normalize(const clt_graph_node *n) {
  return !strcmp(n->ops->type, "normalize");
}

/* A loss with class_weights=balanced: its weights, then the count of
 * samples they were learnt from (given weights have no count). */
static bool is_balanced(const clt_graph_node *n) {
  return !strcmp(n->ops->type, "softmax_cross_entropy") &&
         n->n_params > CLT_LOSS_WEIGHTS_COUNT &&
         !strcmp(n->params[CLT_LOSS_WEIGHTS_COUNT].suffix, "count");
}

/* The count parameter of a layer that learns (0: not learnt yet). */
static const clt_param *learnt_count(const clt_graph_node *n) {
  return is_normalize(n) ? &n->params[CLT_NORMALIZE_COUNT]
                         : &n->params[CLT_LOSS_WEIGHTS_COUNT];
}

/* scikit-learn's balanced weights: samples / (classes present * the
 * class's samples), so that each class present weighs the same in all;
 * a class the data lacks keeps 1. */
static clt_status adapt_weights(clt_graph *g, clt_graph_node *n,
                                const clt_dataset *ds) {
  int64_t classes = n->params[CLT_LOSS_CLASS_WEIGHTS].numel, present = 0;
  int64_t *count = calloc((size_t)classes, sizeof *count);
  float *w = malloc((size_t)classes * sizeof *w);
  clt_status st = CLT_OK;
  if (!count || !w) {
    st = clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY,
                      "class weights of %lld classes", (long long)classes);
    goto done;
  }
  for (int64_t i = 0; i < ds->count; i++) {
    int32_t l = ds->labels[i];
    if (l < 0 || l >= classes) {
      st = clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "%s: class_weights=balanced: sample %lld has label "
                        "%d, the model %lld classes",
                        n->name, (long long)i, (int)l, (long long)classes);
      goto done;
    }
    present += count[l]++ == 0;
  }
  for (int64_t c = 0; c < classes; c++)
    w[c] = count[c] ? (float)((double)ds->count /
                              ((double)present * (double)count[c]))
                    : 1.0f;
  float samples = (float)ds->count;
  st = clt_tensor_upload(&n->params[CLT_LOSS_CLASS_WEIGHTS].value, w);
  if (st == CLT_OK)
    st = clt_tensor_upload(&n->params[CLT_LOSS_WEIGHTS_COUNT].value,
                           &samples);
done:
  free(count);
  free(w);
  return st;
}

/* Element j of sample i as the model gets it: a byte scaled as the loader
 * scales it ((float)b / 255.0f), or the float itself. */
static double sample_value(const clt_dataset *ds, int64_t at) {
  return ds->pixels ? (double)((float)ds->pixels[at] / 255.0f)
                    : (double)ds->fpixels[at];
}

/* The mean and population variance of ds for node n's channels (each of
 * `channels` covering `spatial` consecutive values of a sample), in
 * double, the same on every MPI rank (each holds the whole data). */
static clt_status adapt_node(clt_graph *g, clt_graph_node *n,
                             const clt_dataset *ds) {
  clt_param *p = n->params;
  int64_t channels = p[CLT_NORMALIZE_MEAN].numel, size = n->size, spatial = size / channels;
  double *sum = calloc((size_t)channels, sizeof *sum);
  double *sq = calloc((size_t)channels, sizeof *sq);
  float *mean = malloc((size_t)channels * sizeof *mean);
  float *var = malloc((size_t)channels * sizeof *var);
  clt_status st = CLT_OK;
  if (!sum || !sq || !mean || !var) {
    st = clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY,
                      "normalize '%s': statistics of %lld values", n->name,
                      (long long)channels);
    goto done;
  }
  double per = (double)ds->count * (double)spatial;
  for (int64_t i = 0; i < ds->count; i++)
    for (int64_t j = 0; j < size; j++)
      sum[j / spatial] += sample_value(ds, i * size + j);
  for (int64_t c = 0; c < channels; c++) sum[c] /= per;
  for (int64_t i = 0; i < ds->count; i++)
    for (int64_t j = 0; j < size; j++) {
      double d = sample_value(ds, i * size + j) - sum[j / spatial];
      sq[j / spatial] += d * d;
    }
  for (int64_t c = 0; c < channels; c++) {
    mean[c] = (float)sum[c];
    var[c] = (float)(sq[c] / per);
  }
  float count = (float)ds->count;
  st = clt_tensor_upload(&p[CLT_NORMALIZE_MEAN].value, mean);
  if (st == CLT_OK) st = clt_tensor_upload(&p[CLT_NORMALIZE_VAR].value, var);
  if (st == CLT_OK)
    st = clt_tensor_upload(&p[CLT_NORMALIZE_COUNT].value, &count);
done:
  free(sum);
  free(sq);
  free(mean);
  free(var);
  return st;
}

clt_status clt_graph_adapt_new(clt_graph *g, const clt_dataset *ds,
                               bool only_new, int *adapted) {
  if (adapted) *adapted = 0;
  if (!g || !ds)
    return clt_ctx_fail(g ? g->ctx : NULL, CLT_ERR_INVALID_ARGUMENT,
                        "adapt: a graph and a dataset are needed");
  int wanted = 0;
  for (int i = 0; i < g->n_nodes; i++)
    wanted += is_normalize(&g->nodes[i]) || is_balanced(&g->nodes[i]);
  if (wanted == 0) return CLT_OK;
  if (!g->compiled)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "adapt: compile the graph first");
  if (ds->count < 1 || (!ds->pixels && !ds->fpixels))
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "adapt: %s has no samples to learn statistics from",
                        ds->source);
  for (int i = 0; i < g->n_nodes; i++) {
    clt_graph_node *n = &g->nodes[i];
    if (!is_normalize(n) && !is_balanced(n)) continue;
    if (is_normalize(n) && clt_dataset_sample_size(ds) != n->size)
      return clt_ctx_fail(g->ctx, CLT_ERR_SHAPE,
                          "normalize '%s': %s has samples of %lld values, "
                          "the model's input %lld",
                          n->name, ds->source,
                          (long long)clt_dataset_sample_size(ds),
                          (long long)n->size);
    if (is_balanced(n) && !ds->labels)
      return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                          "%s: class_weights=balanced counts the labels "
                          "of the training data, and %s has none",
                          n->name, ds->source);
    if (only_new) {
      float count = 0.0f;
      CLT_TRY(clt_tensor_download(&learnt_count(n)->value, &count));
      if (count > 0.0f) continue;
    }
    CLT_TRY(is_normalize(n) ? adapt_node(g, n, ds) : adapt_weights(g, n, ds));
    clt_graph_params_written(g);
    if (adapted) (*adapted)++;
  }
  return CLT_OK;
}

CLT_API clt_status clt_graph_adapt(clt_graph *g, const clt_dataset *ds) {
  return clt_graph_adapt_new(g, ds, false, NULL);
}
