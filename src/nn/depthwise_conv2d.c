/* depthwise_conv2d kernel=K[xK] [multiplier=1] [stride=S]
 *                  [padding=P|same|valid] [dilation=D] [bias=true]
 *                  [init=glorot|he] [activation=...]
 * Keras's DepthwiseConv2D (depth_multiplier), PyTorch's Conv2d with
 * groups = in_channels and out_channels = multiplier * in_channels:
 * every input channel c convolved on its own by `multiplier` filters,
 * output channel c * multiplier + m. NCHW; weight [C M, 1, KH, KW] and
 * bias [C M] as PyTorch's. A 1x1 conv2d after it makes the separable
 * convolution of MobileNet and Xception. The products are too small for
 * GEMMs (KH KW taps an output): the kernels compute them directly
 * (ops/depthwise.c), a work-item per value or per row, the layout
 * measured at compile, forward and backward apart. Glorot and He take the
 * window's own fans: KH KW inputs an output, multiplier KH KW outputs an
 * input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

static const char *const keys[] = {
    "kernel", "multiplier", "stride", "padding", "dilation", "bias", "init",
    "activation", "name", "input", "inputs", NULL};
static const char *const inits[] = {"glorot", "he", NULL};

typedef struct dw_state {
  clt_window w;
  int64_t M;
  bool bias;
  clt_dw_layout fwd_layout, bwd_layout; /* the layouts chosen */
  clt_tensor *work; /* the rows' weight gradient partial sums (graph's) */
  /* With a batchnorm folded in (clt_graph_node.bn_fold): the weights and
   * bias it folds into, made again where the parameters were written
   * since fold_version (clt_graph.params_version; 0: never made), as
   * conv2d's. */
  clt_tensor *fold_w, *fold_b;
  uint64_t fold_version;
} dw_state;

static void release_fold(dw_state *s) {
  clt_tensor_destroy(s->fold_w);
  clt_tensor_destroy(s->fold_b);
  s->fold_w = s->fold_b = NULL;
  s->fold_version = 0;
}

static clt_status dw_configure(clt_graph *g, clt_graph_node *n,
                               clt_layer_args *a) {
  clt_err err = {0};
  dw_state *s = calloc(1, sizeof *s);
  if (!s) return clt_node_fail(g, n, CLT_ERR_HOST_MEMORY, "state");
  n->state = s;
  int init = 0;
  if (clt_args_get_int(a, "multiplier", false, 1, 1, &s->M, &err) !=
          CLT_OK ||
      clt_args_get_bool(a, "bias", true, &s->bias, &err) != CLT_OK ||
      clt_args_get_choice(a, "init", inits, "glorot", &init, &err) !=
          CLT_OK)
    return clt_graph_err(g, &err);
  CLT_TRY(clt_layer_check_count(g, n, "multiplier", s->M));
  clt_window *w = &s->w;
  CLT_TRY(clt_layer_get_conv_window(g, n, a, w));
  int64_t F = w->C * s->M;
  n->ndim = 3;
  n->shape[0] = F;
  n->shape[1] = w->OH;
  n->shape[2] = w->OW;
  int64_t wshape[4] = {F, 1, w->KH, w->KW};
  clt_param *p = clt_node_add_param(n, "weight", 4, wshape);
  if (!p) return clt_node_fail(g, n, CLT_ERR_HOST_MEMORY, "parameters");
  p->init = CLT_INIT_UNIFORM;
  p->bound = clt_init_bound(init, w->KH * w->KW, s->M * w->KH * w->KW);
  if (s->bias && !clt_node_add_param(n, "bias", 1, &F))
    return clt_node_fail(g, n, CLT_ERR_HOST_MEMORY, "parameters");
  return CLT_OK;
}

static clt_status dw_reserve(clt_graph *g, clt_graph_node *n) {
  dw_state *s = n->state;
  if (!clt_node_param_grad(n, 0)) return CLT_OK; /* frozen: no dW */
  return clt_graph_workspace(g, n, CLT_F32,
                             clt_dw_work_floats(g->max_batch, s->M, &s->w),
                             CLT_LIVE_BACKWARD, &s->work);
}

static clt_status dw_run(clt_graph *g, clt_graph_node *n, int64_t batch,
                         clt_dw_layout layout) {
  dw_state *s = n->state;
  return clt_dw_forward(g->ctx, n->out, clt_graph_in(g, n, 0)->out,
                        &n->params[0].value,
                        s->bias ? &n->params[1].value : NULL, batch, s->M,
                        &s->w, layout, false);
}

/* Evaluation with the batchnorm bn folded in: the folded weights and bias
 * (made again where the parameters changed; under mixed precision fp16
 * values, as the parameters they stand for), then the forward by them
 * into bn's output, with bn's ReLU. Under mixed precision the graph
 * rounds bn's output after (this layer's own output is not made). */
static clt_status dw_run_folded(clt_graph *g, clt_graph_node *n,
                                clt_graph_node *bn) {
  dw_state *s = n->state;
  CLT_TRY(clt_batchnorm_fold(g, bn, &n->params[0].value,
                             s->bias ? &n->params[1].value : NULL,
                             s->w.C * s->M, s->fold_w, s->fold_b,
                             &s->fold_version));
  n->out_rounded = true;
  return clt_dw_forward(g->ctx, bn->out, clt_graph_in(g, n, 0)->out,
                        s->fold_w, s->fold_b, g->batch, s->M, &s->w,
                        s->fwd_layout, bn->fused_relu);
}

static clt_status dw_run_backward(clt_graph *g, clt_graph_node *n,
                                  int64_t batch, clt_tensor *dx, bool acc,
                                  clt_dw_layout layout) {
  dw_state *s = n->state;
  return clt_dw_backward(g->ctx, dx, clt_node_param_grad(n, 0),
                         s->bias ? clt_node_param_grad(n, 1) : NULL, n->grad,
                         clt_graph_in(g, n, 0)->out, &n->params[0].value,
                         batch, s->M, &s->w, acc, layout, s->work);
}

typedef struct dw_work {
  clt_graph *g;
  clt_graph_node *n;
  bool backward;
} dw_work;

/* Way `way` (a clt_dw_layout) of the forward, or of the backward (the
 * input gradient written, not added), at the compiled batch. */
static clt_status run_dw_way(void *user, int way) {
  dw_work *w = user;
  if (!w->backward)
    return dw_run(w->g, w->n, w->g->max_batch, (clt_dw_layout)way);
  return dw_run_backward(w->g, w->n, w->g->max_batch,
                         clt_graph_in(w->g, w->n, 0)->grad, false,
                         (clt_dw_layout)way);
}

/* Picks the layouts (issue 8's kernels laid out for the device): the
 * forward on fixed inputs, then the backward on fixed output gradients;
 * rows only where their loops fit the device's limit. Rows eight columns
 * at a time are a layout of their own: on POCL 3.1 mostly 1.7-3.6x faster
 * than four at a time (not a stride-2 forward into rows of 7: 1.5x
 * slower), on llvmpipe (its private arrays) up to 1.7x slower. */
static clt_status dw_compile(clt_graph *g, clt_graph_node *n) {
  dw_state *s = n->state;
  const clt_window *w = &s->w;
  release_fold(s);
  if (n->bn_fold >= 0) {
    int64_t nw = n->params[0].value.numel, F = w->C * s->M;
    CLT_TRY(clt_tensor_create(g->ctx, CLT_F32, 1, &nw, &s->fold_w));
    CLT_TRY(clt_tensor_create(g->ctx, CLT_F32, 1, &F, &s->fold_b));
  }
  clt_graph_node *in = clt_graph_in(g, n, 0);
  int64_t b = g->max_batch;
  char key[200], shape[96];
  snprintf(key, sizeof key,
           "depthwise %lldx%lldx%lld k%lldx%lld s%lldx%lld p%lldx%lld "
           "d%lldx%lld x%lld bias %d, batch %lld",
           (long long)w->C, (long long)w->H, (long long)w->W,
           (long long)w->KH, (long long)w->KW, (long long)w->stride_h,
           (long long)w->stride_w, (long long)w->pad_h, (long long)w->pad_w,
           (long long)w->dil_h, (long long)w->dil_w, (long long)s->M,
           s->bias ? 1 : 0, (long long)b);
  snprintf(shape, sizeof shape, "depthwise %lldx%lldx%lld k%lld",
           (long long)(b * w->C * s->M), (long long)w->OH, (long long)w->OW,
           (long long)w->KH);
  bool no_rows = !clt_dw_rows_fit(g->ctx, s->M, w);
  bool skip[3] = {false, no_rows, no_rows};
  clt_tensor out = clt_tensor_slice_1d(n->out, 0, b * n->size);
  dw_work dw = {g, n, false};
  clt_graph_ways ways = {
      .what = "layout",
      .shape = shape,
      .m = w->C * s->M,
      .n = b * w->OH * w->OW,
      .k = w->KH * w->KW,
      .key = key,
      .flops = 2.0 * (double)(b * n->size) * (double)(w->KH * w->KW),
      /* "per 4 rows" since the rows kernels took four rows an item (a
       * new name: plans measured on the kernels of a row an item miss);
       * the ways in the order of clt_dw_layout */
      .names = {"per element", "per 4 rows", "per 4 rows, eights"},
      .work = {.count = 3, .skip = skip, .run = run_dw_way, .user = &dw,
               .check_count = 1}};
  ways.work.checks[0] = &out;
  bool measuring = clt_graph_plans_measure(g);
  if (measuring) CLT_TRY(clt_graph_plan_fill(g, in->out));
  int chosen = 0;
  CLT_TRY(clt_graph_plan_ways(g, n, &ways, &chosen));
  s->fwd_layout = skip[chosen] ? CLT_DW_PER_VALUE : (clt_dw_layout)chosen;
  s->bwd_layout = CLT_DW_PER_VALUE;
  if (!n->grad) return CLT_OK;
  if (measuring) CLT_TRY(clt_graph_plan_fill(g, n->grad));
  dw.backward = true;
  clt_tensor dx;
  int c = 0;
  if (in->grad) {
    dx = clt_tensor_slice_1d(in->grad, 0, b * in->size);
    ways.work.checks[c++] = &dx;
  }
  /* A frozen layer's backward makes dx alone (clt_node_param_grad): a
   * plan of its own. */
  bool frozen = !clt_node_param_grad(n, 0);
  if (!frozen) ways.work.checks[c++] = &n->params[0].grad;
  if (s->bias && !frozen) ways.work.checks[c++] = &n->params[1].grad;
  ways.work.check_count = c;
  ways.what = "backward layout";
  if (frozen)
    snprintf(key + strlen(key), sizeof key - strlen(key), ", frozen");
  else
    ways.flops *= in->grad ? 2.0 : 1.0;
  CLT_TRY(clt_graph_plan_ways(g, n, &ways, &chosen));
  s->bwd_layout = skip[chosen] ? CLT_DW_PER_VALUE : (clt_dw_layout)chosen;
  return CLT_OK;
}

static clt_status dw_forward(clt_graph *g, clt_graph_node *n) {
  dw_state *s = n->state;
  if (n->bn_fold >= 0 && !g->training)
    return dw_run_folded(g, n, &g->nodes[n->bn_fold]);
  return dw_run(g, n, g->batch, s->fwd_layout);
}

static clt_status dw_backward(clt_graph *g, clt_graph_node *n) {
  dw_state *s = n->state;
  bool acc = false;
  clt_tensor *dx = clt_graph_input_grad(g, n, 0, &acc);
  return dw_run_backward(g, n, g->batch, dx, acc, s->bwd_layout);
}

static void dw_destroy(clt_graph_node *n) {
  if (n->state) release_fold(n->state);
  free(n->state);
}

const clt_layer_ops clt_layer_depthwise_conv2d = {
    .type = "depthwise_conv2d",
    .min_inputs = 1,
    .max_inputs = 1,
    .option_keys = keys,
    .configure = dw_configure,
    .reserve = dw_reserve,
    .compile = dw_compile,
    .forward = dw_forward,
    .backward = dw_backward,
    .destroy = dw_destroy,
};
