/* input shape=CxHxW: where a batch is uploaded. */
#include "graph/graph.h"

static const char *const keys[] = {"shape", "name", NULL};

static clt_status input_configure(clt_graph *g, clt_graph_node *n,
                                  clt_layer_args *a) {
  clt_err err = {0};
  if (g->input_node >= 0)
    return clt_node_fail(g, n, CLT_ERR_FORMAT,
                         "a graph has one input layer ('%s' exists)",
                         g->nodes[g->input_node].name);
  if (clt_args_get_dims(a, "shape", true, CLT_MAX_DIMS - 1, n->shape,
                         &n->ndim, &err) != CLT_OK)
    return clt_graph_err(g, &err);
  return CLT_OK;
}

const clt_layer_ops clt_layer_input = {
    .type = "input",
    .min_inputs = 0,
    .max_inputs = 0,
    .option_keys = keys,
    .configure = input_configure,
};
