/* Layers that join branches: add inputs=a,b[,...] (residual connections;
 * every input the same shape) and concat inputs=a,b[,...] (along
 * channels, the first dimension of each sample; the rest must match). */
#include <string.h>

#include "graph/graph.h"

static const char *const keys[] = {"name", "input", "inputs", NULL};

static clt_status same_rest(clt_graph *g, clt_graph_node *n, bool all_dims) {
  clt_graph_node *a = clt_graph_in(g, n, 0);
  for (int i = 1; i < n->n_inputs; i++) {
    clt_graph_node *b = clt_graph_in(g, n, i);
    bool ok = a->ndim == b->ndim;
    for (int k = all_dims ? 0 : 1; ok && k < a->ndim; k++)
      ok = a->shape[k] == b->shape[k];
    if (!ok) {
      char s1[96], s2[96];
      return clt_node_fail(g, n, CLT_ERR_SHAPE,
                           "inputs '%s' %s and '%s' %s do not fit %s", a->name,
                           clt_shape_str(a->ndim, a->shape, s1, sizeof s1),
                           b->name,
                           clt_shape_str(b->ndim, b->shape, s2, sizeof s2),
                           all_dims ? "(add needs equal shapes)"
                                    : "(concat needs equal sizes after "
                                      "the channels)");
    }
  }
  return CLT_OK;
}

static clt_status add_configure(clt_graph *g, clt_graph_node *n,
                                clt_layer_args *a) {
  (void)a;
  CLT_TRY(same_rest(g, n, true));
  clt_graph_node *first = clt_graph_in(g, n, 0);
  n->ndim = first->ndim;
  memcpy(n->shape, first->shape, sizeof n->shape);
  return CLT_OK;
}

/* A ReLU fused after the sum (clt_graph_node.fused_relu): two inputs in
 * one kernel; more, the ReLU in place after the last (max(v, 0) rounded
 * is v rounded, or 0: the bits of the ReLU layer after a rounded sum). */
static clt_status add_forward(clt_graph *g, clt_graph_node *n) {
  int64_t count = g->batch * n->size;
  const clt_round16 *round = clt_graph_out_round(g, n);
  if (n->n_inputs == 2 && n->fused_relu)
    return clt_add_relu_forward(g->ctx, n->out, clt_graph_in(g, n, 0)->out,
                                clt_graph_in(g, n, 1)->out, count, round);
  /* The last kernel rounds the sum (mixed precision): the ReLU's, where
   * there is one. */
  const clt_round16 *sum_round = n->fused_relu ? NULL : round;
  bool two = n->n_inputs == 2;
  CLT_TRY(clt_add_forward(g->ctx, n->out, clt_graph_in(g, n, 0)->out,
                          clt_graph_in(g, n, 1)->out, count, false,
                          two ? sum_round : NULL));
  for (int i = 2; i < n->n_inputs; i++)
    CLT_TRY(clt_scale_forward(g->ctx, n->out, clt_graph_in(g, n, i)->out,
                              count, 1.0f, true,
                              i == n->n_inputs - 1 ? sum_round : NULL));
  if (n->fused_relu)
    CLT_TRY(clt_activation_forward(g->ctx, n->out, n->out, count,
                                   CLT_ACT_RELU, 0.0f, round));
  return CLT_OK;
}

/* Each input's gradient is the sum's; through a fused ReLU, dy times
 * out > 0, computed by the ReLU layer's backward straight into each. */
static clt_status add_backward(clt_graph *g, clt_graph_node *n) {
  int64_t count = g->batch * n->size;
  for (int i = 0; i < n->n_inputs; i++) {
    bool acc = false;
    clt_tensor *dx = clt_graph_input_grad(g, n, i, &acc);
    if (!dx) continue;
    const clt_round16 *round = clt_graph_grad_round(g, n, i, acc);
    if (n->fused_relu)
      CLT_TRY(clt_activation_backward(g->ctx, dx, n->grad, n->out, n->out,
                                      count, CLT_ACT_RELU, 0.0f, acc, round));
    else
      CLT_TRY(clt_scale_forward(g->ctx, dx, n->grad, count, 1.0f, acc, round));
  }
  return CLT_OK;
}

static clt_status concat_configure(clt_graph *g, clt_graph_node *n,
                                   clt_layer_args *a) {
  (void)a;
  CLT_TRY(same_rest(g, n, false));
  clt_graph_node *first = clt_graph_in(g, n, 0);
  n->ndim = first->ndim;
  memcpy(n->shape, first->shape, sizeof n->shape);
  n->shape[0] = 0;
  for (int i = 0; i < n->n_inputs; i++)
    n->shape[0] += clt_graph_in(g, n, i)->shape[0];
  return CLT_OK;
}

/* Runs the channel copy of every input, forward or backward. */
static clt_status concat_copy(clt_graph *g, clt_graph_node *n, bool backward) {
  int64_t c_off = 0;
  for (int i = 0; i < n->n_inputs; i++) {
    clt_graph_node *in = clt_graph_in(g, n, i);
    int64_t cx = in->shape[0], spatial = in->size / cx;
    clt_tensor *x = in->out;
    bool acc = false;
    if (backward) x = clt_graph_input_grad(g, n, i, &acc);
    if (x)
      CLT_TRY(clt_channel_slice(g->ctx, backward ? n->grad : n->out, x,
                                g->batch, n->shape[0], cx, c_off, spatial,
                                backward, acc));
    c_off += cx;
  }
  return CLT_OK;
}

static clt_status concat_forward(clt_graph *g, clt_graph_node *n) {
  return concat_copy(g, n, false);
}

static clt_status concat_backward(clt_graph *g, clt_graph_node *n) {
  return concat_copy(g, n, true);
}

const clt_layer_ops clt_layer_add = {
    .type = "add",
    .min_inputs = 2,
    .max_inputs = CLT_MAX_INPUTS,
    .option_keys = keys,
    .configure = add_configure,
    .forward = add_forward,
    .backward = add_backward,
    .fuses_relu = true,
};

const clt_layer_ops clt_layer_concat = {
    .type = "concat",
    .min_inputs = 2,
    .max_inputs = CLT_MAX_INPUTS,
    .option_keys = keys,
    .configure = concat_configure,
    .forward = concat_forward,
    .backward = concat_backward,
};
