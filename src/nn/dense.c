/* dense units=N [bias=true] [init=glorot|he] [activation=...]:
 * y = x W^T + b, with W [units, in] and b [units] as in PyTorch's Linear.
 *
 * Three products, each run by the plan measured for it when the graph is
 * compiled (graph/plan.c): the forward y = x W^T, the weight gradient
 * dW = dy^T x (k is the batch: split-K may cut it) and the data gradient
 * dx = dy W. */
#include <stdlib.h>

#include "graph/graph.h"

static const char *const keys[] = {"units", "bias", "init", "activation",
                                   "name", "input", "inputs", NULL};
static const char *const inits[] = {"glorot", "he", NULL};

typedef struct dense_state {
  int64_t in, units;
  bool bias;
  /* Plans for the products over max_batch (forward, dW, dx). */
  clt_gemm_plan plan_fwd, plan_dw, plan_dx;
  clt_tensor *work; /* backward: split-K partials of dW (the graph's), or
                       NULL */
} dense_state;

/* The three products over `batch` rows (the header comment). */
static clt_gemm_product forward_product(const dense_state *s, int64_t batch) {
  return (clt_gemm_product){CLT_NO_TRANS, CLT_TRANS, batch, s->units, s->in,
                            1, false};
}

static clt_gemm_product wgrad_product(const dense_state *s, int64_t batch) {
  return (clt_gemm_product){CLT_TRANS, CLT_NO_TRANS, s->units, s->in, batch,
                            1, true};
}

static clt_gemm_product dgrad_product(const dense_state *s, int64_t batch) {
  return (clt_gemm_product){CLT_NO_TRANS, CLT_NO_TRANS, batch, s->in,
                            s->units, 1, false};
}

typedef clt_gemm_product (*product_fn)(const dense_state *, int64_t);

/* The product over the current batch (*run) and the plan to run it by:
 * the one chosen for the compiled batch, as far as it fits. */
static clt_gemm_plan plan_now(const clt_graph *g, const dense_state *s,
                              product_fn make, const clt_gemm_plan *chosen,
                              clt_gemm_product *run) {
  clt_gemm_product planned = make(s, g->max_batch);
  *run = make(s, g->batch);
  return clt_gemm_plan_for(chosen, &planned, run);
}

/* Runs one product over the current batch with the plan chosen for the
 * compiled one. */
static clt_status run_product(clt_graph *g, const dense_state *s,
                              product_fn make, const clt_gemm_plan *chosen,
                              const clt_tensor *a, const clt_tensor *b,
                              float beta, clt_tensor *c) {
  clt_gemm_product run;
  clt_gemm_plan plan = plan_now(g, s, make, chosen, &run);
  return clt_gemm_plan_run(g->ctx, &run, &plan, 1.0f, a, b, beta, c,
                           s->work);
}

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
  CLT_TRY(clt_layer_check_count(g, n, "units", units));
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
  clt_gemm_product run;
  clt_gemm_plan plan = plan_now(g, s, forward_product, &s->plan_fwd, &run);
  const clt_round16 *round = s->bias ? clt_graph_out_round(g, n) : NULL;
  /* The bias and a fused ReLU in the product's launch where its kernel
   * takes them (not where mixed precision rounds the output) */
  if (s->bias && !round && clt_gemm_plan_takes_bias(&plan))
    return clt_gemm_plan_run_bias(g->ctx, &run, &plan, 1.0f, in->out,
                                  &n->params[0].value, n->out,
                                  &n->params[1].value, n->fused_relu);
  CLT_TRY(clt_gemm_plan_run(g->ctx, &run, &plan, 1.0f, in->out,
                            &n->params[0].value, 0.0f, n->out, s->work));
  if (s->bias)
    return clt_bias_rows_forward(g->ctx, n->out, &n->params[1].value,
                                 g->batch, s->units, n->fused_relu, round);
  /* A fused ReLU (clt_graph_node.fused_relu) in place. */
  return n->fused_relu ? clt_activation_forward(
                             g->ctx, n->out, n->out, g->batch * s->units,
                             CLT_ACT_RELU, 0.0f, clt_graph_out_round(g, n))
                       : CLT_OK;
}

static clt_status dense_backward(clt_graph *g, clt_graph_node *n) {
  dense_state *s = n->state;
  clt_graph_node *in = clt_graph_in(g, n, 0);
  /* Frozen (clt_node_param_grad): no dW, no db. */
  clt_tensor *dw = clt_node_param_grad(n, 0);
  clt_tensor *db = s->bias ? clt_node_param_grad(n, 1) : NULL;
  /* The gradient through a fused ReLU, in place: dy times out > 0; with a
   * bias, its gradient (dy's column sums) in the same pass. */
  if (n->fused_relu && db)
    CLT_TRY(clt_sum_columns_relu(g->ctx, db, n->grad, n->out, g->batch,
                                 s->units));
  else if (n->fused_relu)
    CLT_TRY(clt_activation_backward(g->ctx, n->grad, n->grad, n->out, n->out,
                                    g->batch * s->units, CLT_ACT_RELU, 0.0f,
                                    false, NULL));
  else if (db)
    CLT_TRY(clt_sum_channels_forward(g->ctx, db, n->grad, g->batch, s->units,
                                     1, false));
  /* dW = dy^T x: [units, batch] [batch, in] */
  if (dw)
    CLT_TRY(run_product(g, s, wgrad_product, &s->plan_dw, n->grad, in->out,
                        0.0f, dw));
  bool acc = false;
  clt_tensor *dx = clt_graph_input_grad(g, n, 0, &acc);
  if (dx) /* dx = dy W: [batch, units] [units, in] */
    CLT_TRY(run_product(g, s, dgrad_product, &s->plan_dx, n->grad,
                        &n->params[0].value, acc ? 1.0f : 0.0f, dx));
  return CLT_OK;
}

/* Chooses the plans, measuring on the layer's own buffers (nothing runs
 * while the graph compiles): the input and the output's gradient hold a
 * fixed spread of values; the output, dW and the input's gradient are
 * overwritten. Then asks for the workspace of a split dW. */
static clt_status dense_compile(clt_graph *g, clt_graph_node *n) {
  dense_state *s = n->state;
  clt_graph_node *in = clt_graph_in(g, n, 0);
  int64_t b = g->max_batch;
  clt_gemm_product fwd = forward_product(s, b), dw = wgrad_product(s, b),
                   dx = dgrad_product(s, b);
  const clt_gemm_plan one = {CLT_GEMM_ONE, 1, 0, false, 0};
  s->plan_fwd = s->plan_dw = s->plan_dx = one;
  s->work = NULL;
  bool measuring = clt_graph_plans_measure(g);
  if (measuring) CLT_TRY(clt_graph_plan_fill(g, in->out));
  CLT_TRY(clt_graph_plan_product(g, n, "forward", &fwd, in->out,
                                 &n->params[0].value, n->out, &s->plan_fwd));
  if (!n->grad) return CLT_OK; /* no backward */
  if (measuring) CLT_TRY(clt_graph_plan_fill(g, n->grad));
  if (clt_node_param_grad(n, 0)) /* not where frozen */
    CLT_TRY(clt_graph_plan_product(g, n, "weight gradient", &dw, n->grad,
                                   in->out, &n->params[0].grad, &s->plan_dw));
  if (in->needs_grad && in->grad)
    CLT_TRY(clt_graph_plan_product(g, n, "data gradient", &dx, n->grad,
                                   &n->params[0].value, in->grad,
                                   &s->plan_dx));
  int64_t need = clt_gemm_plan_workspace(&dw, &s->plan_dw);
  return need > 0 ? clt_graph_workspace(g, n, CLT_F32, need,
                                        CLT_LIVE_BACKWARD, &s->work)
                  : CLT_OK;
}

static void dense_destroy(clt_graph_node *n) { free(n->state); }

const clt_layer_ops clt_layer_dense = {
    .type = "dense",
    .min_inputs = 1,
    .max_inputs = 1,
    .option_keys = keys,
    .configure = dense_configure,
    .compile = dense_compile,
    .forward = dense_forward,
    .backward = dense_backward,
    .destroy = dense_destroy,
    .fuses_relu = true,
};
