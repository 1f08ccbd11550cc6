/* batchnorm [momentum=0.1] [eps=1e-5]: over [C, H, W] (BatchNorm2d) or
 * [C] (BatchNorm1d) inputs. Training uses the batch's statistics and
 * updates running averages (momentum and the unbiased variance as PyTorch
 * defines them); evaluation uses the running averages. Parameters as
 * PyTorch names them: weight, bias, running_mean, running_var,
 * num_batches_tracked. */
#include <stdio.h>
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
  /* The reductions' ways (clt_bn_stats): the parts asked for, 1 or
   * CLT_BN_PER_PLANE for one group per channel, measured at compile; work
   * their partial sums. */
  int64_t stats_parts, grad_parts;
  clt_tensor *work;
  /* The element-wise passes' layouts (clt_bn_forward's runs16), forward
   * and backward, measured at compile. */
  bool apply16, grad16;
  /* Training's passes in one kernel each way (clt_bn_train_forward,
   * _backward), measured at compile against the separate kernels: 0 the
   * separate ones, 1 one kernel whose items share each plane's runs, 2
   * one whose items take whole planes. */
  int fwd_fused, bwd_fused;
} bn_state;

/* The ways of both reductions, and the parts each asks for (at most
 * BN_MOST_PARTS, which the work buffer is sized for). */
#define BN_MOST_PARTS 128
static const char *const way_names[] = {"per channel", "split 8", "split 32",
                                        "split 128", "per plane"};
static const int64_t way_parts[] = {1, 8, 32, BN_MOST_PARTS,
                                    CLT_BN_PER_PLANE};
#define BN_WAYS 5

/* The ways of training's passes (bn_state.fwd_fused, bwd_fused). */
static const char *const fused_names[] = {"separate", "fused per channel",
                                          "fused per plane"};
#define BN_FUSED_WAYS 3

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
  rm->learnable = rv->learnable = nt->learnable = false;
  rm->init = CLT_INIT_ZERO;
  rv->init = CLT_INIT_ONE;
  nt->init = CLT_INIT_ZERO;
  return CLT_OK;
}

clt_status clt_batchnorm_fold(clt_graph *g, clt_graph_node *bn,
                              const clt_tensor *w, const clt_tensor *b,
                              int64_t filters, clt_tensor *w_out,
                              clt_tensor *b_out, uint64_t *version) {
  bn_state *s = bn->state;
  clt_param *p = bn->params;
  if (*version == g->params_version) return CLT_OK; /* made already */
  if (filters != s->C || w->numel % filters != 0)
    return clt_node_fail(g, bn, CLT_ERR_INTERNAL,
                         "folding %lld filters of %lld weights into %lld "
                         "channels",
                         (long long)filters, (long long)w->numel,
                         (long long)s->C);
  *version = 0;
  CLT_TRY(clt_bn_fold(g->ctx, w_out, b_out, w, b, &p[BN_RMEAN].value,
                      &p[BN_RVAR].value, &p[BN_WEIGHT].value,
                      &p[BN_BIAS].value, filters, w->numel / filters,
                      s->eps));
  /* Mixed precision: fp16 values, as the parameters they stand for
   * (folded from those fp16 values and the f32 running statistics). */
  if (g->precision == CLT_PRECISION_MIXED) {
    CLT_TRY(clt_round_f16(g->ctx, w_out, w_out, w_out->numel));
    CLT_TRY(clt_round_f16(g->ctx, b_out, b_out, b_out->numel));
  }
  *version = g->params_version;
  return CLT_OK;
}

static void bn_release(bn_state *s) {
  clt_tensor_destroy(s->mean);
  clt_tensor_destroy(s->var);
  clt_tensor_destroy(s->work);
  s->mean = s->var = s->work = NULL;
}

typedef struct bn_work {
  clt_graph *g;
  clt_graph_node *n;
  bool backward;
  bool apply; /* the element-wise pass's layouts, else the reductions' */
} bn_work;

/* Way `way` of the reductions (the statistics, or the backward's gradient
 * sums alone), or of the element-wise passes (way 1 in runs of 16; the
 * backward's timed with its gradient sums, in the way chosen for them). */
static clt_status run_bn_way(void *user, int way) {
  bn_work *w = user;
  bn_state *s = w->n->state;
  clt_param *p = w->n->params;
  clt_graph_node *in = clt_graph_in(w->g, w->n, 0);
  int64_t b = w->g->max_batch;
  if (!w->backward && !w->apply)
    return clt_bn_stats(w->g->ctx, s->mean, s->var, in->out, b, s->C, s->HW,
                        way_parts[way], s->work);
  if (!w->backward)
    return clt_bn_forward(w->g->ctx, w->n->out, in->out, s->mean, s->var,
                          &p[BN_WEIGHT].value, &p[BN_BIAS].value, b, s->C,
                          s->HW, s->eps, w->n->fused_relu, way == 1, NULL);
  return clt_bn_backward(
      w->g->ctx, w->apply ? in->grad : NULL, &p[BN_WEIGHT].grad,
      &p[BN_BIAS].grad, w->n->grad, in->out, s->mean, s->var,
      &p[BN_WEIGHT].value, b, s->C, s->HW, s->eps, true, false,
      w->apply ? s->grad_parts : way_parts[way], w->apply && way == 1,
      s->work, NULL);
}

/* Picks the element-wise passes' layouts: a work-item per value or per run
 * of 16 values (issue 8's kernels laid out for the device; only planes of
 * 16 values or more have runs), on the statistics, input and output
 * gradient bn_plan left (key and shape: its records'). */
static clt_status bn_plan_apply(clt_graph *g, clt_graph_node *n,
                                const char *key, const char *shape) {
  bn_state *s = n->state;
  clt_graph_node *in = clt_graph_in(g, n, 0);
  int64_t b = g->max_batch, count = b * s->C * s->HW;
  s->apply16 = s->grad16 = false;
  if (s->HW < 16) return CLT_OK;
  char fkey[200];
  snprintf(fkey, sizeof fkey, "%s, relu %d", key, n->fused_relu ? 1 : 0);
  bn_work bw = {g, n, false, true};
  clt_tensor check = clt_tensor_slice_1d(n->out, 0, count);
  clt_graph_ways ways = {
      .what = "apply layout",
      .shape = shape,
      .m = s->C,
      .n = b * s->HW,
      .k = 1,
      .key = fkey,
      .names = {"per element", "runs of 16"},
      .work = {.count = 2, .run = run_bn_way, .user = &bw,
               .check_count = 1}};
  ways.work.checks[0] = &check;
  int chosen = 0;
  CLT_TRY(clt_graph_plan_ways(g, n, &ways, &chosen));
  s->apply16 = chosen == 1;
  if (!n->grad || !in->grad) return CLT_OK;
  bw.backward = true;
  check = clt_tensor_slice_1d(in->grad, 0, count);
  ways.what = "apply backward layout";
  ways.key = key;
  CLT_TRY(clt_graph_plan_ways(g, n, &ways, &chosen));
  s->grad16 = chosen == 1;
  return CLT_OK;
}

/* Training's forward over batch in way `way` (bn_state.fwd_fused's
 * values): the batch's statistics, the running averages in rm, rv and nt
 * moved, y normalised (rounded as `round` asks). bn_forward's, and the
 * fusion's measurement on scratch running averages. */
static clt_status bn_train_pass(clt_graph *g, clt_graph_node *n, int way,
                                int64_t batch, clt_tensor *rm, clt_tensor *rv,
                                clt_tensor *nt, const clt_round16 *round) {
  bn_state *s = n->state;
  clt_param *p = n->params;
  const clt_tensor *x = clt_graph_in(g, n, 0)->out;
  if (way > 0)
    return clt_bn_train_forward(g->ctx, n->out, s->mean, s->var, rm, rv, nt,
                                x, &p[BN_WEIGHT].value, &p[BN_BIAS].value,
                                batch, s->C, s->HW, s->eps, s->momentum,
                                n->fused_relu, way == 2, round);
  CLT_TRY(clt_bn_stats(g->ctx, s->mean, s->var, x, batch, s->C, s->HW,
                       s->stats_parts, s->work));
  CLT_TRY(clt_bn_update_running(g->ctx, rm, rv, nt, s->mean, s->var, s->C,
                                batch * s->HW, s->momentum));
  return clt_bn_forward(g->ctx, n->out, x, s->mean, s->var,
                        &p[BN_WEIGHT].value, &p[BN_BIAS].value, batch, s->C,
                        s->HW, s->eps, n->fused_relu, s->apply16, round);
}

/* The backward over batch from the statistics mean and var (the batch's
 * where trained) in way `way` (bn_state.bwd_fused's values; a fused way
 * only in training and with dx): dgamma, dbeta and, where dx, dx (added
 * into where acc, rounded as `round` asks). bn_backward's, and the
 * fusion's measurement. */
static clt_status bn_grad_pass(clt_graph *g, clt_graph_node *n, int way,
                               int64_t batch, clt_tensor *dx,
                               const clt_tensor *mean, const clt_tensor *var,
                               bool trained, bool acc,
                               const clt_round16 *round) {
  bn_state *s = n->state;
  clt_param *p = n->params;
  const clt_tensor *x = clt_graph_in(g, n, 0)->out;
  if (way > 0)
    return clt_bn_train_backward(g->ctx, dx, &p[BN_WEIGHT].grad,
                                 &p[BN_BIAS].grad, n->grad, x, n->out, mean,
                                 var, &p[BN_WEIGHT].value, batch, s->C, s->HW,
                                 s->eps, n->fused_relu, acc, way == 2, round);
  /* The gradient through a fused ReLU (clt_graph_node.fused_relu), in
   * place: dy times out > 0, as the ReLU layer's backward computes it (the
   * same values again on a second run: the measurement's). */
  if (n->fused_relu)
    CLT_TRY(clt_activation_backward(g->ctx, n->grad, n->grad, n->out, n->out,
                                    batch * n->size, CLT_ACT_RELU, 0.0f,
                                    false, NULL));
  return clt_bn_backward(g->ctx, dx, &p[BN_WEIGHT].grad, &p[BN_BIAS].grad,
                         n->grad, x, mean, var, &p[BN_WEIGHT].value, batch,
                         s->C, s->HW, s->eps, trained, acc, s->grad_parts,
                         s->grad16, s->work, round);
}

typedef struct bn_fused_work {
  clt_graph *g;
  clt_graph_node *n;
  bool backward;
  clt_tensor *running; /* forward: where the running averages' updates go
                          while measuring (2 C + 1 floats) */
} bn_fused_work;

/* Way `way` of training's forward or backward (without accumulating), on
 * the plans chosen for the separate kernels (way 0). */
static clt_status run_bn_fused(void *user, int way) {
  bn_fused_work *w = user;
  clt_graph_node *n = w->n;
  bn_state *s = n->state;
  int64_t b = w->g->max_batch;
  if (w->backward)
    return bn_grad_pass(w->g, n, way, b, clt_graph_in(w->g, n, 0)->grad,
                        s->mean, s->var, true, false, NULL);
  clt_tensor rm = clt_tensor_slice_1d(w->running, 0, s->C);
  clt_tensor rv = clt_tensor_slice_1d(w->running, s->C, s->C);
  clt_tensor nt = clt_tensor_slice_1d(w->running, 2 * s->C, 1);
  return bn_train_pass(w->g, n, way, b, &rm, &rv, &nt, NULL);
}

/* skip[way]: the fused ways whose loops pass the device's budget at the
 * compiled batch (the separate kernels, way 0, always run). */
static clt_status fused_skips(clt_graph *g, const bn_state *s, bool backward,
                              bool skip[BN_FUSED_WAYS]) {
  skip[0] = false;
  for (int way = 1; way < BN_FUSED_WAYS; way++) {
    bool fits;
    CLT_TRY(clt_bn_fused_fits(g->ctx, g->max_batch, s->HW, backward,
                              way == 2, &fits));
    skip[way] = !fits;
  }
  return CLT_OK;
}

/* Picks training's ways (one kernel or the separate ones, forward and
 * backward) on the statistics and gradients bn_plan left, after the
 * separate kernels' own plans; a fused way whose loops pass the device's
 * budget is not offered. Only for graphs that train (n->grad), the
 * backward only where the input has a gradient. */
static clt_status bn_plan_fused(clt_graph *g, clt_graph_node *n,
                                const char *key, const char *shape) {
  bn_state *s = n->state;
  clt_graph_node *in = clt_graph_in(g, n, 0);
  int64_t b = g->max_batch, count = b * s->C * s->HW;
  s->fwd_fused = s->bwd_fused = 0;
  if (!n->grad) return CLT_OK;
  char fkey[240];
  snprintf(fkey, sizeof fkey, "%s, relu %d, stats %lld, apply16 %d", key,
           n->fused_relu ? 1 : 0, (long long)s->stats_parts,
           s->apply16 ? 1 : 0);
  bool skip[BN_FUSED_WAYS];
  CLT_TRY(fused_skips(g, s, false, skip));
  int64_t rn = 2 * s->C + 1;
  bn_fused_work fw = {g, n, false, NULL};
  CLT_TRY(clt_tensor_create(g->ctx, CLT_F32, 1, &rn, &fw.running));
  clt_status st = CLT_OK;
  if (clt_graph_plans_measure(g)) st = clt_graph_plan_fill(g, fw.running);
  clt_tensor check = clt_tensor_slice_1d(n->out, 0, count);
  clt_graph_ways ways = {
      .what = "fusion",
      .shape = shape,
      .m = s->C,
      .n = b * s->HW,
      .k = 1,
      .key = fkey,
      .work = {.count = BN_FUSED_WAYS, .skip = skip, .run = run_bn_fused,
               .user = &fw, .check_count = 3}};
  for (int i = 0; i < BN_FUSED_WAYS; i++) ways.names[i] = fused_names[i];
  ways.work.checks[0] = &check;
  ways.work.checks[1] = s->mean;
  ways.work.checks[2] = s->var;
  int chosen = 0;
  if (st == CLT_OK) st = clt_graph_plan_ways(g, n, &ways, &chosen);
  clt_tensor_destroy(fw.running);
  CLT_TRY(st);
  s->fwd_fused = skip[chosen] ? 0 : chosen; /* a test's forced way too */
  if (!in->grad) return CLT_OK;
  snprintf(fkey, sizeof fkey, "%s, relu %d, grad %lld, grad16 %d", key,
           n->fused_relu ? 1 : 0, (long long)s->grad_parts,
           s->grad16 ? 1 : 0);
  CLT_TRY(fused_skips(g, s, true, skip));
  fw.backward = true;
  check = clt_tensor_slice_1d(in->grad, 0, count);
  ways.what = "backward fusion";
  ways.work.checks[1] = &n->params[BN_WEIGHT].grad;
  ways.work.checks[2] = &n->params[BN_BIAS].grad;
  CLT_TRY(clt_graph_plan_ways(g, n, &ways, &chosen));
  s->bwd_fused = skip[chosen] ? 0 : chosen;
  return CLT_OK;
}

/* Picks the reductions' ways (issue 8's kernels laid out for the device):
 * the statistics on fixed input values, then the gradient sums on those
 * statistics and fixed output gradients. */
static clt_status bn_plan(clt_graph *g, clt_graph_node *n) {
  bn_state *s = n->state;
  clt_graph_node *in = clt_graph_in(g, n, 0);
  int64_t b = g->max_batch;
  char key[160], shape[64];
  /* ", fitted groups": the per-channel kernels' groups as wide as their
   * planes or runs (ops/norm.c channel_group) since 2026-12-07; choices
   * stored before were timed with groups of ctx->work_group items */
  snprintf(key, sizeof key,
           "batchnorm %lld channels of %lld, batch %lld, fitted groups",
           (long long)s->C, (long long)s->HW, (long long)b);
  snprintf(shape, sizeof shape, "batchnorm %lldx%lld", (long long)s->C,
           (long long)(b * s->HW));
  bn_work bw = {g, n, false, false};
  clt_graph_ways ways = {
      .what = "stats layout",
      .shape = shape,
      .m = s->C,
      .n = b * s->HW,
      .k = 1,
      .key = key,
      .work = {.count = BN_WAYS, .run = run_bn_way, .user = &bw,
               .check_count = 2}};
  for (int i = 0; i < BN_WAYS; i++) ways.names[i] = way_names[i];
  ways.work.checks[0] = s->mean;
  ways.work.checks[1] = s->var;
  bool measuring = clt_graph_plans_measure(g);
  if (measuring) CLT_TRY(clt_graph_plan_fill(g, in->out));
  int chosen = 0;
  CLT_TRY(clt_graph_plan_ways(g, n, &ways, &chosen));
  s->stats_parts = way_parts[chosen];
  if (measuring) CLT_TRY(run_bn_way(&bw, 0)); /* the statistics applied */
  if (!n->grad) return bn_plan_apply(g, n, key, shape);
  if (measuring) CLT_TRY(clt_graph_plan_fill(g, n->grad));
  bw.backward = true;
  ways.what = "stats backward layout";
  ways.work.checks[0] = &n->params[BN_WEIGHT].grad;
  ways.work.checks[1] = &n->params[BN_BIAS].grad;
  CLT_TRY(clt_graph_plan_ways(g, n, &ways, &chosen));
  s->grad_parts = way_parts[chosen];
  CLT_TRY(bn_plan_apply(g, n, key, shape));
  return bn_plan_fused(g, n, key, shape);
}

static clt_status bn_compile(clt_graph *g, clt_graph_node *n) {
  bn_state *s = n->state;
  bn_release(s);
  CLT_TRY(clt_tensor_create(g->ctx, CLT_F32, 1, &s->C, &s->mean));
  CLT_TRY(clt_tensor_create(g->ctx, CLT_F32, 1, &s->C, &s->var));
  int64_t work;
  CLT_TRY(clt_bn_work_floats(g->ctx, g->max_batch, s->C, s->HW,
                             BN_MOST_PARTS, &work));
  CLT_TRY(clt_tensor_create(g->ctx, CLT_F32, 1, &work, &s->work));
  return bn_plan(g, n);
}

static clt_status bn_forward(clt_graph *g, clt_graph_node *n) {
  bn_state *s = n->state;
  clt_param *p = n->params;
  s->trained = g->training;
  if (g->training)
    return bn_train_pass(g, n, s->fwd_fused, g->batch, &p[BN_RMEAN].value,
                         &p[BN_RVAR].value, &p[BN_TRACKED].value,
                         clt_graph_out_round(g, n));
  return clt_bn_forward(g->ctx, n->out, clt_graph_in(g, n, 0)->out,
                        &p[BN_RMEAN].value, &p[BN_RVAR].value,
                        &p[BN_WEIGHT].value, &p[BN_BIAS].value, g->batch,
                        s->C, s->HW, s->eps, n->fused_relu, s->apply16,
                        clt_graph_out_round(g, n));
}

static clt_status bn_backward(clt_graph *g, clt_graph_node *n) {
  bn_state *s = n->state;
  clt_param *p = n->params;
  bool acc = false;
  clt_tensor *dx = clt_graph_input_grad(g, n, 0, &acc);
  const clt_tensor *mean = s->trained ? s->mean : &p[BN_RMEAN].value;
  const clt_tensor *var = s->trained ? s->var : &p[BN_RVAR].value;
  return bn_grad_pass(g, n, s->trained && dx ? s->bwd_fused : 0, g->batch,
                      dx, mean, var, s->trained, acc,
                      dx ? clt_graph_grad_round(g, n, 0, acc) : NULL);
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
    .fuses_relu = true,
};
