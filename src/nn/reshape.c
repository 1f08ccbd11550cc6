/* flatten and reshape: the same data seen with another per-sample shape.
 * No copy: the output (and its gradient) is a view of the input's. */
#include "graph/graph.h"

static const char *const flatten_keys[] = {"name", "input", "inputs", NULL};
static const char *const reshape_keys[] = {"shape", "name", "input", "inputs",
                                           NULL};

static clt_status flatten_configure(clt_graph *g, clt_graph_node *n,
                                    clt_layer_args *a) {
  (void)a;
  clt_graph_node *in = clt_graph_in(g, n, 0);
  n->ndim = 1;
  n->shape[0] = 1;
  for (int i = 0; i < in->ndim; i++) n->shape[0] *= in->shape[i];
  return CLT_OK;
}

static clt_status reshape_configure(clt_graph *g, clt_graph_node *n,
                                    clt_layer_args *a) {
  clt_err err = {0};
  if (clt_args_get_dims(a, "shape", true, CLT_MAX_DIMS - 1, n->shape,
                         &n->ndim, &err) != CLT_OK)
    return clt_graph_err(g, &err);
  clt_graph_node *in = clt_graph_in(g, n, 0);
  int64_t from = 1, to = 1;
  for (int i = 0; i < in->ndim; i++) from *= in->shape[i];
  for (int i = 0; i < n->ndim; i++) to *= n->shape[i];
  if (from != to) {
    char s1[96], s2[96];
    return clt_node_fail(g, n, CLT_ERR_SHAPE,
                         "cannot reshape %s (%lld elements) from '%s' to %s "
                         "(%lld elements)",
                         clt_shape_str(in->ndim, in->shape, s1, sizeof s1),
                         (long long)from, in->name,
                         clt_shape_str(n->ndim, n->shape, s2, sizeof s2),
                         (long long)to);
  }
  return CLT_OK;
}

const clt_layer_ops clt_layer_flatten = {
    .type = "flatten",
    .min_inputs = 1,
    .max_inputs = 1,
    .option_keys = flatten_keys,
    .configure = flatten_configure,
    .aliases_input = true,
};

const clt_layer_ops clt_layer_reshape = {
    .type = "reshape",
    .min_inputs = 1,
    .max_inputs = 1,
    .option_keys = reshape_keys,
    .configure = reshape_configure,
    .aliases_input = true,
};
