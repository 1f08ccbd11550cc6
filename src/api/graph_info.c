/* What a program (and the command line) may ask of a graph without
 * reaching into it: the sizes of its input and output, the kind of its
 * loss, and an evaluation that also counts the confusion matrix. */
#include <stdlib.h>
#include <string.h>

#include "data/loader.h"
#include "graph/graph.h"
#include "runtime/runtime.h"

CLT_API int64_t clt_graph_input_size(const clt_graph *g) {
  return g->input_node >= 0 ? g->nodes[g->input_node].size : 0;
}

CLT_API int64_t clt_graph_output_size(const clt_graph *g) {
  return g->loss_node >= 0 ? g->nodes[g->loss_node].size : 0;
}

CLT_API clt_loss_kind clt_graph_loss_kind(const clt_graph *g) {
  if (g->loss_node < 0) return CLT_LOSS_NONE;
  return strcmp(g->nodes[g->loss_node].ops->type, "mse") ? CLT_LOSS_CLASSIFIER
                                                         : CLT_LOSS_MSE;
}

CLT_API clt_status clt_evaluate_confusion(clt_graph *g, const clt_dataset *ds,
                                          int64_t batch, int64_t *confusion,
                                          clt_metrics *m) {
  if (clt_graph_loss_kind(g) != CLT_LOSS_CLASSIFIER || !g->compiled)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "a confusion matrix needs a compiled classifier "
                        "(softmax_cross_entropy)");
  if (batch < 1 || batch > g->max_batch)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "batch %lld: the graph was compiled for 1 to %lld",
                        (long long)batch, (long long)g->max_batch);
  int64_t classes = clt_graph_output_size(g);
  int64_t sample = (int64_t)ds->channels * ds->height * ds->width;
  if (sample != clt_graph_input_size(g) || !ds->labels ||
      ds->num_classes > classes)
    return clt_ctx_fail(g->ctx, CLT_ERR_SHAPE,
                        "%s: %dx%dx%d samples in %d classes; the model takes "
                        "%lld values and has %lld classes",
                        ds->source, ds->channels, ds->height, ds->width,
                        ds->num_classes, (long long)clt_graph_input_size(g),
                        (long long)classes);
  memset(confusion, 0, (size_t)(classes * classes) * sizeof *confusion);
  clt_loader_options lo;
  clt_loader_options_init(&lo);
  lo.batch = (int)batch;
  lo.shuffle = false;
  clt_loader *l = NULL;
  clt_err err = {0};
  if (clt_loader_create(ds, &lo, &l, &err) != CLT_OK)
    return clt_ctx_fail(g->ctx, err.status, "%s", err.msg);
  float *probs = malloc((size_t)(batch * classes) * sizeof(float));
  clt_status st = probs ? clt_graph_metrics(g, m, true)
                        : clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "eval");
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
