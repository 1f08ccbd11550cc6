/* The inference API: a model file and its weights, compiled once for
 * batches of up to CLT_INFER_BATCH samples; predictions in batches. */
#include <stdlib.h>

#include "graph/graph.h"
#include "runtime/runtime.h"

#define CLT_INFER_BATCH 64

struct clt_model {
  clt_context *ctx;
  clt_graph *g;
  int64_t in_size, out_size;
};

CLT_API clt_status clt_model_load(clt_context *ctx, const char *model_path,
                                  const char *weights_path, clt_model **out) {
  *out = NULL;
  clt_model *m = calloc(1, sizeof *m);
  if (!m) return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "model");
  m->ctx = ctx;
  clt_status st = clt_graph_load_model(ctx, model_path, &m->g);
  if (st == CLT_OK && m->g->loss_node < 0)
    st = clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED,
                      "%s: the model has no loss layer; predictions are read "
                      "at the layer before it (softmax_cross_entropy or mse)",
                      model_path);
  if (st == CLT_OK) st = clt_graph_set_forward_only(m->g, true);
  if (st == CLT_OK) st = clt_graph_compile(m->g, CLT_INFER_BATCH, 1);
  if (st == CLT_OK && weights_path)
    st = clt_checkpoint_load_weights(m->g, weights_path);
  if (st != CLT_OK) {
    clt_model_destroy(m);
    return st;
  }
  m->in_size = m->g->nodes[m->g->input_node].size;
  m->out_size = m->g->nodes[m->g->loss_node].size;
  *out = m;
  return CLT_OK;
}

CLT_API void clt_model_destroy(clt_model *m) {
  if (!m) return;
  clt_graph_destroy(m->g);
  free(m);
}

CLT_API int clt_model_input_shape(const clt_model *m, int64_t *shape) {
  return clt_graph_input_shape(m->g, shape);
}

CLT_API int64_t clt_model_input_size(const clt_model *m) { return m->in_size; }

CLT_API int64_t clt_model_output_size(const clt_model *m) {
  return m->out_size;
}

CLT_API clt_graph *clt_model_graph(clt_model *m) { return m->g; }

CLT_API clt_status clt_model_predict(clt_model *m, const float *inputs,
                                     int64_t n, float *out) {
  if (n < 0 || (n > 0 && (!inputs || !out)))
    return clt_ctx_fail(m->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "predict: %lld samples, inputs %p, out %p",
                        (long long)n, (const void *)inputs, (void *)out);
  for (int64_t done = 0; done < n;) {
    int64_t chunk = n - done < m->g->max_batch ? n - done : m->g->max_batch;
    int64_t outputs = 0;
    CLT_TRY(clt_graph_set_batch(m->g, inputs + done * m->in_size, NULL, chunk));
    CLT_TRY(clt_graph_forward(m->g, false));
    CLT_TRY(clt_graph_predictions(m->g, out + done * m->out_size, &outputs));
    done += chunk;
  }
  return CLT_OK;
}
