/* softmax over the features of each sample (for inference outputs; for
 * training a classifier use softmax_cross_entropy on the logits). */
#include <string.h>

#include "graph/graph.h"

static const char *const keys[] = {"name", "input", "inputs", NULL};

static clt_status softmax_configure(clt_graph *g, clt_graph_node *n,
                                    clt_layer_args *a) {
  (void)a;
  clt_graph_node *in = clt_graph_in(g, n, 0);
  n->ndim = in->ndim;
  memcpy(n->shape, in->shape, sizeof n->shape);
  return CLT_OK;
}

static clt_status softmax_forward(clt_graph *g, clt_graph_node *n) {
  return clt_softmax_forward(g->ctx, n->out, clt_graph_in(g, n, 0)->out,
                             g->batch, n->size);
}

static clt_status softmax_backward(clt_graph *g, clt_graph_node *n) {
  bool acc = false;
  clt_tensor *dx = clt_graph_input_grad(g, n, 0, &acc);
  if (!dx) return CLT_OK;
  return clt_softmax_backward(g->ctx, dx, n->grad, n->out, g->batch, n->size,
                              acc);
}

const clt_layer_ops clt_layer_softmax = {
    .type = "softmax",
    .min_inputs = 1,
    .max_inputs = 1,
    .option_keys = keys,
    .configure = softmax_configure,
    .forward = softmax_forward,
    .backward = softmax_backward,
};
