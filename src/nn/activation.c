/* Activation layers: relu, leaky_relu [alpha=0.01], sigmoid, tanh, gelu,
 * silu (swish), elu [alpha=1], softplus. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

static const char *const keys[] = {"name", "input", "inputs", NULL};
static const char *const alpha_keys[] = {"alpha", "name", "input", "inputs",
                                         NULL};

typedef struct act_state {
  clt_activation kind;
  float alpha;
} act_state;

static clt_status act_configure(clt_graph *g, clt_graph_node *n,
                                clt_layer_args *a) {
  act_state *s = calloc(1, sizeof *s);
  if (!s) return clt_node_fail(g, n, CLT_ERR_HOST_MEMORY, "state");
  n->state = s;
  const char *t = n->ops->type;
  s->kind = !strcmp(t, "relu")         ? CLT_ACT_RELU
            : !strcmp(t, "leaky_relu") ? CLT_ACT_LEAKY_RELU
            : !strcmp(t, "sigmoid")    ? CLT_ACT_SIGMOID
            : !strcmp(t, "tanh")       ? CLT_ACT_TANH
            : !strcmp(t, "silu") || !strcmp(t, "swish") ? CLT_ACT_SILU
            : !strcmp(t, "elu")        ? CLT_ACT_ELU
            : !strcmp(t, "softplus")   ? CLT_ACT_SOFTPLUS
                                       : CLT_ACT_GELU;
  if (s->kind == CLT_ACT_LEAKY_RELU || s->kind == CLT_ACT_ELU) {
    clt_err err = {0};
    double fallback = s->kind == CLT_ACT_ELU ? 1.0 : 0.01, alpha = fallback;
    if (clt_args_get_float(a, "alpha", false, fallback, &alpha, &err) !=
        CLT_OK)
      return clt_graph_err(g, &err);
    if (!isfinite(alpha))
      return clt_node_fail(g, n, CLT_ERR_FORMAT, "alpha must be finite, not %g",
                           alpha);
    s->alpha = (float)alpha;
  }
  clt_graph_node *in = clt_graph_in(g, n, 0);
  n->ndim = in->ndim;
  memcpy(n->shape, in->shape, sizeof n->shape);
  return CLT_OK;
}

static clt_status act_forward(clt_graph *g, clt_graph_node *n) {
  act_state *s = n->state;
  return clt_activation_forward(g->ctx, n->out, clt_graph_in(g, n, 0)->out,
                                g->batch * n->size, s->kind, s->alpha,
                                clt_graph_out_round(g, n));
}

static clt_status act_backward(clt_graph *g, clt_graph_node *n) {
  act_state *s = n->state;
  bool acc = false;
  clt_tensor *dx = clt_graph_input_grad(g, n, 0, &acc);
  if (!dx) return CLT_OK;
  return clt_activation_backward(g->ctx, dx, n->grad,
                                 clt_graph_in(g, n, 0)->out, n->out,
                                 g->batch * n->size, s->kind, s->alpha, acc,
                                 clt_graph_grad_round(g, n, 0, acc));
}

static void act_destroy(clt_graph_node *n) { free(n->state); }

#define ACTIVATION_LAYER(var, name, k)                                         \
  const clt_layer_ops var = {                                                  \
      .type = name,                                                            \
      .min_inputs = 1,                                                         \
      .max_inputs = 1,                                                         \
      .option_keys = k,                                                        \
      .configure = act_configure,                                              \
      .forward = act_forward,                                                  \
      .backward = act_backward,                                                \
      .destroy = act_destroy,                                                  \
  };

ACTIVATION_LAYER(clt_layer_relu, "relu", keys)
ACTIVATION_LAYER(clt_layer_leaky_relu, "leaky_relu", alpha_keys)
ACTIVATION_LAYER(clt_layer_sigmoid, "sigmoid", keys)
ACTIVATION_LAYER(clt_layer_tanh, "tanh", keys)
ACTIVATION_LAYER(clt_layer_gelu, "gelu", keys)
ACTIVATION_LAYER(clt_layer_silu, "silu", keys)
ACTIVATION_LAYER(clt_layer_swish, "swish", keys) /* Keras's name of silu */
ACTIVATION_LAYER(clt_layer_elu, "elu", alpha_keys)
ACTIVATION_LAYER(clt_layer_softplus, "softplus", keys)
