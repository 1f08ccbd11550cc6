/* normalize [per=feature|channel]: Keras's Normalization layer. Scales
 * the model's input to mean 0 and variance 1 with statistics learnt from
 * the training data before training (clt_graph_adapt; clt_fit does it for
 * a layer not yet adapted), kept as parameters that are not trained:
 * <name>.mean, <name>.var and <name>.count (the samples they came from; 0:
 * not adapted, the layer then passes its input through). per=feature
 * (the default) has a mean and variance for each value of a sample, as
 * Keras's default axis does for tabular data; per=channel one per channel
 * of an image, over its pixels (one for an HxW input; flat data has
 * features only). A variance of 0 (a constant feature)
 * leaves the feature only shifted. The layer reads the input layer: its
 * statistics are the data's. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

static const char *const keys[] = {"per", "name", "input", "inputs", NULL};
static const char *const per_names[] = {"feature", "channel", NULL};

static clt_status norm_configure(clt_graph *g, clt_graph_node *n,
                                 clt_layer_args *a) {
  clt_err err = {0};
  int per = 0;
  if (clt_args_get_choice(a, "per", per_names, "feature", &per, &err) != CLT_OK)
    return clt_graph_err(g, &err);
  clt_graph_node *in = clt_graph_in(g, n, 0);
  if (in->index != g->input_node)
    return clt_node_fail(g, n, CLT_ERR_FORMAT,
                         "normalize learns its statistics from the data: it "
                         "must read the input layer, not '%s'",
                         in->name);
  n->ndim = in->ndim;
  memcpy(n->shape, in->shape, sizeof n->shape);
  int64_t size = 1;
  for (int d = 0; d < in->ndim; d++) size *= in->shape[d];
  /* per channel: the first dimension of [C, H, W], one for [H, W] (one
   * channel); flat data [N] has features only */
  int64_t stats = size, one = 1;
  if (per == 1 && in->ndim >= 2) stats = in->ndim == 3 ? in->shape[0] : 1;
  clt_param *mean = clt_node_add_param(n, "mean", 1, &stats);
  clt_param *var = clt_node_add_param(n, "var", 1, &stats);
  clt_param *count = clt_node_add_param(n, "count", 1, &one);
  mean->trainable = var->trainable = count->trainable = false;
  mean->learnable = var->learnable = count->learnable = false;
  mean->init = CLT_INIT_ZERO;
  var->init = CLT_INIT_ONE;
  count->init = CLT_INIT_ZERO;
  return CLT_OK;
}

static clt_status norm_forward(clt_graph *g, clt_graph_node *n) {
  const clt_param *p = n->params;
  int64_t channels = p[CLT_NORMALIZE_MEAN].numel;
  return clt_normalize_forward(
      g->ctx, n->out, clt_graph_in(g, n, 0)->out, &p[CLT_NORMALIZE_MEAN].value,
      &p[CLT_NORMALIZE_VAR].value, g->batch * n->size, channels,
      n->size / channels, clt_graph_out_round(g, n));
}

const clt_layer_ops clt_layer_normalize = {
    .type = "normalize",
    .min_inputs = 1,
    .max_inputs = 1,
    .option_keys = keys,
    .configure = norm_configure,
    .forward = norm_forward,
};
