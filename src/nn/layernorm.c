/* layernorm [eps=1e-5]: torch.nn.LayerNorm over each sample's every value
 * (normalized_shape the input's shape: [F] for flat data, as Keras's
 * LayerNormalization on its last axis; [C, H, W] for an image), in
 * training and evaluation alike: the sample's own mean and biased
 * variance, then a scale and a shift per value, PyTorch's weight (ones)
 * and bias (zeros), of the input's shape. The mean and 1 / sqrt(var +
 * eps) of each sample are kept from the forward for the backward. The
 * kernels' layout (a value per work-item, or runs of 16) is measured at
 * compile, forward and backward apart. A ReLU after it that nothing else
 * reads is done by its kernels (fused_relu): max(y, 0) on the way out,
 * and the gradient through it from the output in the backward.
 *
 * over=channels: each pixel of an image [C, H, W] normalised over its C
 * channels instead, with a scale and shift per channel ([C]): Keras's
 * LayerNormalization() on a channels-last image, ConvNeXt's
 * channels-first LayerNorm, torch.nn.LayerNorm(C) on the input permuted
 * to [H, W, C]. Its kernels (clt_lnc_*) take a pixel per work-item or
 * runs of 16 pixels, measured as the other form's layouts; the statistics
 * kept are a pixel's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

static const char *const keys[] = {"eps", "over", "name", "input", "inputs",
                                   NULL};
static const char *const overs[] = {"all", "channels", NULL};

enum { LN_WEIGHT, LN_BIAS };

typedef struct ln_state {
  float eps;
  /* over=channels: channels and pixels a sample (0 0 over all values) */
  int64_t C, P;
  /* [2, max_batch * groups]: means, then rstds, of the samples (or of
   * their pixels, over=channels); graph-owned */
  clt_tensor *stats;
  /* over=channels, trained: the backward's partial parameter sums
   * (clt_lnc_backward's part); graph-owned */
  clt_tensor *part;
  bool fwd16; /* the forward's layout chosen: runs of 16 */
  int bwd;    /* the backward's: 0 a value or pixel per item, 1 runs of
                 16, 2 (over=channels) runs of 16 with the parameter sums
                 in the input gradient's pass */
} ln_state;

static clt_status ln_configure(clt_graph *g, clt_graph_node *n,
                               clt_layer_args *a) {
  clt_err err = {0};
  double eps = 1e-5;
  int over = 0;
  if (clt_args_get_float(a, "eps", false, 1e-5, &eps, &err) != CLT_OK ||
      clt_args_get_choice(a, "over", overs, "all", &over, &err) != CLT_OK)
    return clt_graph_err(g, &err);
  if (!(eps > 0.0))
    return clt_node_fail(g, n, CLT_ERR_FORMAT, "eps must be positive, got %g",
                         eps);
  clt_graph_node *in = clt_graph_in(g, n, 0);
  if (over == 1 && in->ndim != 3) {
    char sh[96];
    return clt_node_fail(
        g, n, CLT_ERR_SHAPE,
        "over=channels normalises each pixel of an image over its channels: "
        "it expects [channels, height, width], but '%s' gives %s (flat "
        "data: over=all, the default, is Keras's LayerNormalization())",
        in->name, clt_shape_str(in->ndim, in->shape, sh, sizeof sh));
  }
  ln_state *s = calloc(1, sizeof *s);
  if (!s) return clt_node_fail(g, n, CLT_ERR_HOST_MEMORY, "state");
  n->state = s;
  s->eps = (float)eps;
  if (over == 1) {
    s->C = in->shape[0];
    s->P = in->shape[1] * in->shape[2];
  }
  n->ndim = in->ndim;
  memcpy(n->shape, in->shape, sizeof n->shape);
  /* over all: a scale and shift a value, of the input's shape; over
   * channels: a channel */
  int pdim = s->P ? 1 : in->ndim;
  clt_param *w = clt_node_add_param(n, "weight", pdim, in->shape);
  clt_param *b = clt_node_add_param(n, "bias", pdim, in->shape);
  if (!w || !b) return clt_node_fail(g, n, CLT_ERR_HOST_MEMORY, "parameters");
  w->init = CLT_INIT_ONE;
  b->init = CLT_INIT_ZERO;
  return CLT_OK;
}

/* The groups of values normalised apart in a sample: 1, or its pixels
 * (over=channels). */
static int64_t ln_groups(const ln_state *s) { return s->P ? s->P : 1; }

static clt_status ln_reserve(clt_graph *g, clt_graph_node *n) {
  ln_state *s = n->state;
  CLT_TRY(clt_graph_workspace(g, n, CLT_F32, 2 * g->max_batch * ln_groups(s),
                              CLT_LIVE_SAVED, &s->stats));
  if (!s->P || g->planned_forward_only || !clt_node_param_grad(n, LN_WEIGHT))
    return CLT_OK;
  return clt_graph_workspace(g, n, CLT_F32,
                             clt_lnc_part_floats(g->max_batch, s->C, s->P),
                             CLT_LIVE_BACKWARD, &s->part);
}

/* The means and rstds of the batch's samples (or pixels): views of the
 * workspace. */
static void ln_stats(clt_graph *g, ln_state *s, clt_tensor *mean,
                     clt_tensor *rstd) {
  int64_t count = g->max_batch * ln_groups(s);
  *mean = clt_tensor_slice_1d(s->stats, 0, count);
  *rstd = clt_tensor_slice_1d(s->stats, count, count);
}

typedef struct ln_work {
  clt_graph *g;
  clt_graph_node *n;
  bool backward;
} ln_work;

static clt_status ln_run(clt_graph *g, clt_graph_node *n, int64_t batch,
                         bool runs16) {
  ln_state *s = n->state;
  clt_param *p = n->params;
  clt_tensor mean, rstd;
  ln_stats(g, s, &mean, &rstd);
  if (s->P)
    return clt_lnc_forward(g->ctx, n->out, &mean, &rstd,
                           clt_graph_in(g, n, 0)->out, &p[LN_WEIGHT].value,
                           &p[LN_BIAS].value, batch, s->C, s->P, s->eps,
                           n->fused_relu, runs16);
  return clt_ln_forward(g->ctx, n->out, &mean, &rstd,
                        clt_graph_in(g, n, 0)->out, &p[LN_WEIGHT].value,
                        &p[LN_BIAS].value, batch, n->size, s->eps,
                        n->fused_relu, runs16);
}

/* The backward in layout `way` (ln_state.bwd). */
static clt_status ln_run_backward(clt_graph *g, clt_graph_node *n,
                                  int64_t batch, clt_tensor *dx, bool acc,
                                  int way) {
  ln_state *s = n->state;
  clt_tensor mean, rstd;
  ln_stats(g, s, &mean, &rstd);
  /* frozen: no gamma and beta sums (the input gradient needs none) */
  clt_tensor *dgamma = clt_node_param_grad(n, LN_WEIGHT);
  clt_tensor *dbeta = clt_node_param_grad(n, LN_BIAS);
  const clt_tensor *gamma = &n->params[LN_WEIGHT].value;
  if (s->P)
    return clt_lnc_backward(g->ctx, dx, dgamma, dbeta, n->grad,
                            clt_graph_in(g, n, 0)->out, n->out, &mean, &rstd,
                            gamma, batch, s->C, s->P, n->fused_relu, acc,
                            way >= 1, way == 2 ? s->part : NULL);
  return clt_ln_backward(g->ctx, dx, dgamma, dbeta, n->grad,
                         clt_graph_in(g, n, 0)->out, n->out, &mean, &rstd,
                         gamma, batch, n->size, n->fused_relu, acc,
                         way == 1);
}

/* Way `way` (1: runs of 16) of the forward, or of the backward (the input
 * gradient written, not added), at the compiled batch. */
static clt_status run_ln_way(void *user, int way) {
  ln_work *w = user;
  if (!w->backward) return ln_run(w->g, w->n, w->g->max_batch, way == 1);
  return ln_run_backward(w->g, w->n, w->g->max_batch,
                         clt_graph_in(w->g, w->n, 0)->grad, false, way);
}

/* Picks the layouts (issue 8's kernels laid out for the device): the
 * forward on fixed inputs, then the backward on its statistics and fixed
 * output gradients. */
static clt_status ln_compile(clt_graph *g, clt_graph_node *n) {
  ln_state *s = n->state;
  clt_graph_node *in = clt_graph_in(g, n, 0);
  int64_t b = g->max_batch, count = b * n->size;
  char key[160], shape[64];
  if (s->P) {
    snprintf(key, sizeof key,
             "layernorm over %lld channels of %lld pixels, batch %lld, "
             "relu %d",
             (long long)s->C, (long long)s->P, (long long)b,
             n->fused_relu ? 1 : 0);
    snprintf(shape, sizeof shape, "layernorm over channels %lldx%lldx%lld",
             (long long)b, (long long)s->C, (long long)s->P);
  } else {
    /* ", fitted groups": the choices stored before were timed with
     * groups of ctx->work_group items (ops/norm.c ln_group) */
    snprintf(key, sizeof key,
             "layernorm %lld values, batch %lld, relu %d, fitted groups",
             (long long)n->size, (long long)b, n->fused_relu ? 1 : 0);
    snprintf(shape, sizeof shape, "layernorm %lldx%lld", (long long)b,
             (long long)n->size);
  }
  clt_tensor mean, rstd;
  ln_stats(g, s, &mean, &rstd);
  clt_tensor out = clt_tensor_slice_1d(n->out, 0, count);
  ln_work w = {g, n, false};
  clt_graph_ways ways = {
      .what = "layout",
      .shape = shape,
      .m = b,
      .n = n->size,
      .k = 1,
      .key = key,
      .names = {s->P ? "per pixel" : "per element", "runs of 16"},
      .work = {.count = 2, .run = run_ln_way, .user = &w, .check_count = 3}};
  ways.work.checks[0] = &out;
  ways.work.checks[1] = &mean;
  ways.work.checks[2] = &rstd;
  bool measuring = clt_graph_plans_measure(g);
  if (measuring) CLT_TRY(clt_graph_plan_fill(g, in->out));
  int chosen = 0;
  CLT_TRY(clt_graph_plan_ways(g, n, &ways, &chosen));
  s->fwd16 = chosen == 1;
  s->bwd = 0;
  if (!n->grad) return CLT_OK;
  if (measuring) {
    CLT_TRY(ln_run(g, n, b, s->fwd16)); /* the statistics of the inputs */
    CLT_TRY(clt_graph_plan_fill(g, n->grad));
  }
  w.backward = true;
  clt_tensor dx;
  int c = 0;
  if (in->grad) {
    dx = clt_tensor_slice_1d(in->grad, 0, count);
    ways.work.checks[c++] = &dx;
  }
  bool trained = clt_node_param_grad(n, LN_WEIGHT) != NULL;
  if (trained) {
    ways.work.checks[c++] = &n->params[LN_WEIGHT].grad;
    ways.work.checks[c++] = &n->params[LN_BIAS].grad;
  }
  ways.work.check_count = c;
  ways.what = "backward layout";
  /* a frozen layer's backward (no parameter sums) measured apart; over
   * channels a third layout, the parameter sums in the input gradient's
   * pass (where there is one: an input gradient, and a workspace for a
   * trained layer's sums) */
  char bkey[200];
  snprintf(bkey, sizeof bkey, "%s%s", key,
           !trained ? ", frozen" : s->P ? ", sums in the data pass" : "");
  ways.key = bkey;
  if (s->P) {
    ways.names[2] = "runs of 16, sums in one pass";
    ways.work.count = 3;
  }
  bool skip[3] = {false, false, !in->grad || !s->part};
  ways.work.skip = skip;
  CLT_TRY(clt_graph_plan_ways(g, n, &ways, &chosen));
  s->bwd = chosen;
  return CLT_OK;
}

static clt_status ln_forward(clt_graph *g, clt_graph_node *n) {
  ln_state *s = n->state;
  return ln_run(g, n, g->batch, s->fwd16);
}

static clt_status ln_backward(clt_graph *g, clt_graph_node *n) {
  ln_state *s = n->state;
  bool acc = false;
  clt_tensor *dx = clt_graph_input_grad(g, n, 0, &acc);
  return ln_run_backward(g, n, g->batch, dx, acc, s->bwd);
}

static void ln_destroy(clt_graph_node *n) { free(n->state); }

const clt_layer_ops clt_layer_layernorm = {
    .type = "layernorm",
    .min_inputs = 1,
    .max_inputs = 1,
    .option_keys = keys,
    .configure = ln_configure,
    .reserve = ln_reserve,
    .compile = ln_compile,
    .forward = ln_forward,
    .backward = ln_backward,
    .destroy = ln_destroy,
    .fuses_relu = true,
};
