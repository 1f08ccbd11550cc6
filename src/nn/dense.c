/* dense units=N [bias=true] [init=glorot|he] [activation=...]:
 * y = x W^T + b, with W [units, in] and b [units] as in PyTorch's Linear. */
#include <stdlib.h>

#include "graph/graph.h"

static const char *const keys[] = {"units", "bias", "init", "activation",
                                   "name", "input", "inputs", NULL};
static const char *const inits[] = {"glorot", "he", NULL};

typedef struct dense_state {
  int64_t in, units;
  bool bias;
} dense_state;

static clt_status dense_configure(clt_graph *g, clt_graph_node *n,
                                  clt_layer_args *a) {
  clt_err err = {0};
  int64_t units = 0;
  bool bias = true;
  int init = 0;
  if (clt_args_get_int(a, "units", true, 0, 1, &units, &err) != CLT_OK ||
      clt_args_get_bool(a, "bias", true, &bias, &err) != CLT_OK ||
      clt_args_get_choice(a, "init", inits, "glorot", &init, &err) !=
          CLT_OK)
    return clt_graph_err(g, &err);
  clt_graph_node *in = clt_graph_in(g, n, 0);
  if (in->ndim != 1) {
    char s[96];
    return clt_node_fail(g, n, CLT_ERR_SHAPE,
                         "expects a flat input [features], but '%s' gives %s "
                         "(add a flatten layer before it)",
                         in->name, clt_shape_str(in->ndim, in->shape, s,
                                                 sizeof s));
  }
  dense_state *s = calloc(1, sizeof *s);
  if (!s) return clt_node_fail(g, n, CLT_ERR_HOST_MEMORY, "state");
  s->in = in->shape[0];
  s->units = units;
  s->bias = bias;
  n->state = s;
  n->ndim = 1;
  n->shape[0] = units;
  int64_t wshape[2] = {units, s->in};
  clt_param *w = clt_node_add_param(n, "weight", 2, wshape);
  w->init = CLT_INIT_UNIFORM;
  w->bound = clt_init_bound(init, s->in, units);
  if (bias) clt_node_add_param(n, "bias", 1, &units)->init = CLT_INIT_ZERO;
  return CLT_OK;
}

static clt_status dense_forward(clt_graph *g, clt_graph_node *n) {
  dense_state *s = n->state;
  clt_graph_node *in = clt_graph_in(g, n, 0);
  CLT_TRY(clt_gemm(g->ctx, CLT_NO_TRANS, CLT_TRANS, g->batch, s->units, s->in,
                   1.0f, in->out, &n->params[0].value, 0.0f, n->out));
  if (s->bias)
    return clt_bias_rows_forward(g->ctx, n->out, &n->params[1].value,
                                 g->batch, s->units, n->fused_relu);
  /* A fused ReLU (clt_graph_node.fused_relu) in place. */
  return n->fused_relu ? clt_activation_forward(g->ctx, n->out, n->out,
                                                g->batch * s->units,
                                                CLT_ACT_RELU, 0.0f)
                       : CLT_OK;
}

static clt_status dense_backward(clt_graph *g, clt_graph_node *n) {
  dense_state *s = n->state;
  clt_graph_node *in = clt_graph_in(g, n, 0);
  /* The gradient through a fused ReLU, in place: dy times out > 0. */
  if (n->fused_relu)
    CLT_TRY(clt_activation_backward(g->ctx, n->grad, n->grad, n->out, n->out,
                                    g->batch * s->units, CLT_ACT_RELU, 0.0f,
                                    false));
  /* dW = dy^T x: [units, batch] [batch, in] */
  CLT_TRY(clt_gemm(g->ctx, CLT_TRANS, CLT_NO_TRANS, s->units, s->in, g->batch,
                   1.0f, n->grad, in->out, 0.0f, &n->params[0].grad));
  if (s->bias)
    CLT_TRY(clt_sum_channels_forward(g->ctx, &n->params[1].grad, n->grad,
                                     g->batch, s->units, 1, false));
  bool acc = false;
  clt_tensor *dx = clt_graph_input_grad(g, n, 0, &acc);
  if (dx) /* dx = dy W: [batch, units] [units, in] */
    CLT_TRY(clt_gemm(g->ctx, CLT_NO_TRANS, CLT_NO_TRANS, g->batch, s->in,
                     s->units, 1.0f, n->grad, &n->params[0].value,
                     acc ? 1.0f : 0.0f, dx));
  return CLT_OK;
}

static void dense_destroy(clt_graph_node *n) { free(n->state); }

const clt_layer_ops clt_layer_dense = {
    .type = "dense",
    .min_inputs = 1,
    .max_inputs = 1,
    .option_keys = keys,
    .configure = dense_configure,
    .forward = dense_forward,
    .backward = dense_backward,
    .destroy = dense_destroy,
    .fuses_relu = true,
};
