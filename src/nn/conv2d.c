/* conv2d filters=N kernel=K[xK] [stride=S] [padding=P|same|valid]
 *        [dilation=D] [bias=true] [init=glorot|he] [activation=...]
 * NCHW, weight [filters, C, KH, KW] and bias [filters] as PyTorch's Conv2d.
 * Every product covers the whole batch in one CLBlast GEMM: im2col lays the
 * batch side by side, col [C*KH*KW, batch*OH*OW], so
 *   forward  y' [filters, batch*OH*OW] = W col, then y = swap(y') + bias;
 *   backward col = im2col(x) again, dy' = swap(dy), dW = dy' col^T,
 *            db = row sums of dy', dcol = W^T dy', dx = col2im(dcol).
 * col is the largest buffer of a layer (KH*KW times its input), so it is
 * not kept from the forward to the backward but made again there: then
 * every convolution's col and tmp are workspaces of one step, which the
 * graph shares between layers (graph/memplan.c), for the price of one
 * im2col per layer and step.
 * Each product may also run per image (the column blocks of col) and the
 * weight gradient split along k into partial products (ops/gemm_plan.h);
 * which is fastest depends on the device (one GEMM suits POCL, per image
 * an H100's weight gradient 50x better), so compile measures them
 * (graph/plan.c) and the steps run the plans chosen. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

static const char *const keys[] = {
    "filters", "kernel", "stride", "padding", "dilation", "bias",
    "init",    "activation", "name", "input", "inputs", NULL};
static const char *const inits[] = {"glorot", "he", NULL};

typedef struct conv_state {
  clt_window w;
  int64_t filters;
  bool bias;
  /* Workspaces, planned by the graph (which owns them); the forward's
   * and the backward's may share memory with other layers' in between. */
  clt_tensor *col;   /* forward: [C*KH*KW, max_batch*OH*OW] */
  clt_tensor *tmp;   /* forward: [filters, max_batch*OH*OW], y' */
  clt_tensor *bcol;  /* backward: col again (kept from the forward where
                        that costs no memory, else made again), then dcol */
  bool col_kept;
  clt_tensor *btmp;  /* backward: dy' */
  clt_tensor *work;  /* backward: split-K partial products of dW (or NULL) */
  /* Plans for the products over max_batch (forward, dW, dcol). */
  clt_gemm_plan plan_fwd, plan_dw, plan_dcol;
} conv_state;

/* The three products over `batch` images (conv2d's header comment). */
static clt_gemm_product forward_product(const conv_state *s, int64_t batch) {
  const clt_window *w = &s->w;
  return (clt_gemm_product){CLT_NO_TRANS, CLT_NO_TRANS, s->filters,
                            batch * w->OH * w->OW, w->C * w->KH * w->KW,
                            batch, false};
}

static clt_gemm_product wgrad_product(const conv_state *s, int64_t batch) {
  const clt_window *w = &s->w;
  return (clt_gemm_product){CLT_NO_TRANS, CLT_TRANS, s->filters,
                            w->C * w->KH * w->KW, batch * w->OH * w->OW,
                            batch, true};
}

static clt_gemm_product dgrad_product(const conv_state *s, int64_t batch) {
  const clt_window *w = &s->w;
  return (clt_gemm_product){CLT_TRANS, CLT_NO_TRANS, w->C * w->KH * w->KW,
                            batch * w->OH * w->OW, s->filters, batch, false};
}

/* Runs one product over the current batch with the plan chosen for the
 * compiled one. */
static clt_status run_product(clt_graph *g, conv_state *s,
                              clt_gemm_product (*make)(const conv_state *,
                                                       int64_t),
                              const clt_gemm_plan *chosen, const clt_tensor *a,
                              const clt_tensor *b, clt_tensor *c) {
  clt_gemm_product planned = make(s, g->max_batch), run = make(s, g->batch);
  clt_gemm_plan plan = clt_gemm_plan_for(chosen, &planned, &run);
  return clt_gemm_plan_run(g->ctx, &run, &plan, 1.0f, a, b, 0.0f, c, s->work);
}

/* padding=N, HxW, "valid" (0) or "same" (stride 1, odd kernels). */
static clt_status get_padding(clt_graph *g, clt_graph_node *n,
                              clt_layer_args *a,
                              clt_window *w) {
  clt_err err = {0};
  const char *p = "0";
  if (clt_args_get_string(a, "padding", false, "0", &p, &err) != CLT_OK)
    return clt_graph_err(g, &err);
  if (!strcmp(p, "valid")) {
    w->pad_h = w->pad_w = 0;
    return CLT_OK;
  }
  if (!strcmp(p, "same")) {
    int64_t eh = w->dil_h * (w->KH - 1), ew = w->dil_w * (w->KW - 1);
    if (w->stride_h != 1 || w->stride_w != 1 || eh % 2 || ew % 2)
      return clt_node_fail(g, n, CLT_ERR_FORMAT,
                           "padding=same needs stride 1 and an odd kernel "
                           "(as PyTorch); give the padding as a number");
    w->pad_h = eh / 2;
    w->pad_w = ew / 2;
    return CLT_OK;
  }
  return clt_layer_get_pair(g, a, "padding", false, 0, &w->pad_h, &w->pad_w);
}

static clt_status conv_configure(clt_graph *g, clt_graph_node *n,
                                 clt_layer_args *a) {
  clt_err err = {0};
  clt_graph_node *in = clt_graph_in(g, n, 0);
  if (in->ndim != 3) {
    char s[96];
    return clt_node_fail(g, n, CLT_ERR_SHAPE,
                         "expects [channels, height, width], but '%s' gives %s",
                         in->name,
                         clt_shape_str(in->ndim, in->shape, s, sizeof s));
  }
  conv_state *s = calloc(1, sizeof *s);
  if (!s) return clt_node_fail(g, n, CLT_ERR_HOST_MEMORY, "state");
  n->state = s;
  clt_window *w = &s->w;
  int init = 0;
  if (clt_args_get_int(a, "filters", true, 0, 1, &s->filters, &err) !=
          CLT_OK ||
      clt_args_get_bool(a, "bias", true, &s->bias, &err) != CLT_OK ||
      clt_args_get_choice(a, "init", inits, "glorot", &init, &err) !=
          CLT_OK)
    return clt_graph_err(g, &err);
  CLT_TRY(clt_layer_get_pair(g, a, "kernel", true, 0, &w->KH, &w->KW));
  CLT_TRY(clt_layer_get_pair(g, a, "stride", false, 1, &w->stride_h, &w->stride_w));
  CLT_TRY(clt_layer_get_pair(g, a, "dilation", false, 1, &w->dil_h, &w->dil_w));
  CLT_TRY(get_padding(g, n, a, w));
  w->C = in->shape[0];
  w->H = in->shape[1];
  w->W = in->shape[2];
  w->OH = clt_window_out(w->H, w->KH, w->pad_h, w->stride_h, w->dil_h);
  w->OW = clt_window_out(w->W, w->KW, w->pad_w, w->stride_w, w->dil_w);
  if (w->OH < 1 || w->OW < 1) {
    char s1[96];
    return clt_node_fail(g, n, CLT_ERR_SHAPE,
                         "a %lldx%lld kernel (dilation %lld) with padding "
                         "%lld does not fit the input %s from '%s'",
                         (long long)w->KH, (long long)w->KW,
                         (long long)w->dil_h, (long long)w->pad_h,
                         clt_shape_str(in->ndim, in->shape, s1, sizeof s1),
                         in->name);
  }
  n->ndim = 3;
  n->shape[0] = s->filters;
  n->shape[1] = w->OH;
  n->shape[2] = w->OW;
  int64_t wshape[4] = {s->filters, w->C, w->KH, w->KW};
  clt_param *p = clt_node_add_param(n, "weight", 4, wshape);
  p->init = CLT_INIT_UNIFORM;
  p->bound = clt_init_bound(init, w->C * w->KH * w->KW,
                            s->filters * w->KH * w->KW);
  if (s->bias) clt_node_add_param(n, "bias", 1, &s->filters);
  return CLT_OK;
}

/* Chooses the plans, measuring on the backward's workspaces (nothing
 * else lives in them while the graph compiles): col and tmp hold a fixed
 * spread of values, each product writes what the next one reads (y' into
 * tmp, dW from tmp and col, dcol from W and tmp). */
static clt_status plan_products(clt_graph *g, clt_graph_node *n) {
  conv_state *s = n->state;
  clt_tensor *col = s->bcol, *tmp = s->btmp;
  if (clt_graph_plans_measure(g)) {
    CLT_TRY(clt_graph_plan_fill(g, col));
    CLT_TRY(clt_graph_plan_fill(g, tmp));
  }
  clt_gemm_product fwd = forward_product(s, g->max_batch),
                   dw = wgrad_product(s, g->max_batch),
                   dcol = dgrad_product(s, g->max_batch);
  CLT_TRY(clt_graph_plan_product(g, n, "forward", &fwd, &n->params[0].value,
                                 col, tmp, &s->plan_fwd));
  CLT_TRY(clt_graph_plan_product(g, n, "weight gradient", &dw, tmp, col,
                                 &n->params[0].grad, &s->plan_dw));
  s->plan_dcol = (clt_gemm_plan){CLT_GEMM_ONE, 1};
  if (clt_graph_in(g, n, 0)->needs_grad)
    CLT_TRY(clt_graph_plan_product(g, n, "data gradient", &dcol,
                                   &n->params[0].value, tmp, col,
                                   &s->plan_dcol));
  int64_t work = clt_gemm_plan_workspace(&dw, &s->plan_dw);
  return work > 0 ? clt_graph_workspace(g, n, CLT_F32, work,
                                        CLT_LIVE_BACKWARD, &s->work)
                  : CLT_OK;
}

static clt_status conv_reserve(clt_graph *g, clt_graph_node *n) {
  conv_state *s = n->state;
  const clt_window *w = &s->w;
  int64_t cols = g->max_batch * w->OH * w->OW;
  int64_t col = w->C * w->KH * w->KW * cols, tmp = s->filters * cols;
  CLT_TRY(clt_graph_workspace_keep(g, n, CLT_F32, col, &s->col, &s->bcol,
                                   &s->col_kept));
  CLT_TRY(clt_graph_workspace(g, n, CLT_F32, tmp, CLT_LIVE_FORWARD, &s->tmp));
  return clt_graph_workspace(g, n, CLT_F32, tmp, CLT_LIVE_BACKWARD, &s->btmp);
}


typedef struct forward_gemm {
  clt_graph *g;
  clt_graph_node *n;
} forward_gemm;

static clt_status run_forward_gemm(void *user) {
  forward_gemm *f = user;
  conv_state *s = f->n->state;
  return run_product(f->g, s, forward_product, &s->plan_fwd,
                     &f->n->params[0].value, s->col, s->tmp);
}

/* The op clt_conv2d_forward runs, with the measured plan's GEMM. */
static clt_status conv_forward(clt_graph *g, clt_graph_node *n) {
  conv_state *s = n->state;
  forward_gemm f = {g, n};
  return clt_conv2d_forward_with(g->ctx, &s->w, s->filters, g->batch,
                                 clt_graph_in(g, n, 0)->out,
                                 s->bias ? &n->params[1].value : NULL, s->col,
                                 s->tmp, n->out, run_forward_gemm, &f);
}

static clt_status conv_backward(clt_graph *g, clt_graph_node *n) {
  conv_state *s = n->state;
  const clt_window *w = &s->w;
  int64_t ohw = w->OH * w->OW, cols = g->batch * ohw;
  if (!s->col_kept)
    CLT_TRY(clt_im2col_forward(g->ctx, s->bcol, clt_graph_in(g, n, 0)->out,
                               g->batch, w));
  /* dy' [filters, batch*OH*OW] */
  CLT_TRY(clt_swap_axes01(g->ctx, s->btmp, n->grad, NULL, g->batch,
                          s->filters, ohw));
  if (s->bias)
    CLT_TRY(clt_sum_channels_forward(g->ctx, &n->params[1].grad, s->btmp, 1,
                                     s->filters, cols, false));
  CLT_TRY(run_product(g, s, wgrad_product, &s->plan_dw, s->btmp, s->bcol,
                      &n->params[0].grad));
  bool acc = false;
  clt_tensor *dx = clt_graph_input_grad(g, n, 0, &acc);
  if (!dx) return CLT_OK;
  /* dcol = W^T dy', into the col buffer (col is no longer needed). */
  CLT_TRY(run_product(g, s, dgrad_product, &s->plan_dcol,
                      &n->params[0].value, s->btmp, s->bcol));
  return clt_col2im_backward(g->ctx, dx, s->bcol, g->batch, w, acc);
}

static void conv_destroy(clt_graph_node *n) { free(n->state); }

const clt_layer_ops clt_layer_conv2d = {
    .type = "conv2d",
    .min_inputs = 1,
    .max_inputs = 1,
    .option_keys = keys,
    .configure = conv_configure,
    .reserve = conv_reserve,
    .compile = plan_products,
    .forward = conv_forward,
    .backward = conv_backward,
    .destroy = conv_destroy,
};
