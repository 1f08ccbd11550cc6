/* batchnorm [momentum=0.1] [eps=1e-5]: over [C, H, W] (BatchNorm2d) or
 * [C] (BatchNorm1d) inputs. Training uses the batch's statistics and
 * updates running averages (momentum and the unbiased variance as PyTorch
 * defines them); evaluation uses the running averages. Parameters as
 * PyTorch names them: weight, bias, running_mean, running_var,
 * num_batches_tracked. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

static const char *const keys[] = {"momentum", "eps", "name", "input",
                                   "inputs", NULL};

typedef struct bn_state {
  int64_t C, HW;
  float momentum, eps;
  clt_tensor *mean, *var; /* this batch's statistics [C] */
  bool trained;           /* the last forward used batch statistics */
} bn_state;

enum { BN_WEIGHT, BN_BIAS, BN_RMEAN, BN_RVAR, BN_TRACKED };

static clt_status bn_configure(clt_graph *g, clt_graph_node *n,
                               clt_layer_args *a) {
  clt_err err = {0};
  double momentum = 0.1, eps = 1e-5;
  if (clt_args_get_float(a, "momentum", false, 0.1, &momentum, &err) !=
          CLT_OK ||
      clt_args_get_float(a, "eps", false, 1e-5, &eps, &err) != CLT_OK)
    return clt_graph_err(g, &err);
  if (momentum < 0.0 || momentum > 1.0 || eps <= 0.0)
    return clt_node_fail(g, n, CLT_ERR_FORMAT,
                         "momentum must be in [0, 1] and eps positive");
  clt_graph_node *in = clt_graph_in(g, n, 0);
  if (in->ndim != 1 && in->ndim != 3) {
    char s[96];
    return clt_node_fail(g, n, CLT_ERR_SHAPE,
                         "expects [channels] or [channels, height, width], "
                         "but '%s' gives %s",
                         in->name, clt_shape_str(in->ndim, in->shape, s,
                                                 sizeof s));
  }
  bn_state *s = calloc(1, sizeof *s);
  if (!s) return clt_node_fail(g, n, CLT_ERR_HOST_MEMORY, "state");
  n->state = s;
  s->C = in->shape[0];
  s->HW = in->ndim == 3 ? in->shape[1] * in->shape[2] : 1;
  s->momentum = (float)momentum;
  s->eps = (float)eps;
  n->ndim = in->ndim;
  memcpy(n->shape, in->shape, sizeof n->shape);
  int64_t one = 1;
  clt_node_add_param(n, "weight", 1, &s->C)->init = CLT_INIT_ONE;
  clt_node_add_param(n, "bias", 1, &s->C)->init = CLT_INIT_ZERO;
  clt_param *rm = clt_node_add_param(n, "running_mean", 1, &s->C);
  clt_param *rv = clt_node_add_param(n, "running_var", 1, &s->C);
  clt_param *nt = clt_node_add_param(n, "num_batches_tracked", 1, &one);
  rm->trainable = rv->trainable = nt->trainable = false;
  rm->init = CLT_INIT_ZERO;
  rv->init = CLT_INIT_ONE;
  nt->init = CLT_INIT_ZERO;
  return CLT_OK;
}

static void bn_release(bn_state *s) {
  clt_tensor_destroy(s->mean);
  clt_tensor_destroy(s->var);
  s->mean = s->var = NULL;
}

static clt_status bn_compile(clt_graph *g, clt_graph_node *n) {
  bn_state *s = n->state;
  bn_release(s);
  CLT_TRY(clt_tensor_create(g->ctx, CLT_F32, 1, &s->C, &s->mean));
  return clt_tensor_create(g->ctx, CLT_F32, 1, &s->C, &s->var);
}

static clt_status bn_forward(clt_graph *g, clt_graph_node *n) {
  bn_state *s = n->state;
  clt_param *p = n->params;
  const clt_tensor *x = clt_graph_in(g, n, 0)->out;
  const clt_tensor *mean = &p[BN_RMEAN].value, *var = &p[BN_RVAR].value;
  s->trained = g->training;
  if (g->training) {
    CLT_TRY(clt_bn_stats(g->ctx, s->mean, s->var, x, g->batch, s->C, s->HW));
    CLT_TRY(clt_bn_update_running(g->ctx, &p[BN_RMEAN].value,
                                  &p[BN_RVAR].value, &p[BN_TRACKED].value,
                                  s->mean, s->var, s->C, g->batch * s->HW,
                                  s->momentum));
    mean = s->mean;
    var = s->var;
  }
  return clt_bn_forward(g->ctx, n->out, x, mean, var, &p[BN_WEIGHT].value,
                        &p[BN_BIAS].value, g->batch, s->C, s->HW, s->eps);
}

static clt_status bn_backward(clt_graph *g, clt_graph_node *n) {
  bn_state *s = n->state;
  clt_param *p = n->params;
  bool acc = false;
  clt_tensor *dx = clt_graph_input_grad(g, n, 0, &acc);
  const clt_tensor *mean = s->trained ? s->mean : &p[BN_RMEAN].value;
  const clt_tensor *var = s->trained ? s->var : &p[BN_RVAR].value;
  return clt_bn_backward(g->ctx, dx, &p[BN_WEIGHT].grad, &p[BN_BIAS].grad,
                         n->grad, clt_graph_in(g, n, 0)->out, mean, var,
                         &p[BN_WEIGHT].value, g->batch, s->C, s->HW, s->eps,
                         s->trained, acc);
}

static void bn_destroy(clt_graph_node *n) {
  if (n->state) bn_release(n->state);
  free(n->state);
}

const clt_layer_ops clt_layer_batchnorm = {
    .type = "batchnorm",
    .min_inputs = 1,
    .max_inputs = 1,
    .option_keys = keys,
    .configure = bn_configure,
    .compile = bn_compile,
    .forward = bn_forward,
    .backward = bn_backward,
    .destroy = bn_destroy,
};
