/* maxpool / avgpool kernel=K[xK] [stride=S (default K)] [padding=P], and
 * global_avgpool and global_maxpool (output [channels], as Keras's
 * GlobalAveragePooling2D and GlobalMaxPooling2D): the window the whole
 * plane. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

static const char *const keys[] = {"kernel", "stride", "padding", "name",
                                   "input",  "inputs", NULL};
static const char *const global_keys[] = {"name", "input", "inputs", NULL};

typedef struct pool_state {
  clt_window w; /* w.C: channels per sample; w.per_element, w.vectors:
                   the forward's layout (max pooling, measured) */
  clt_tensor *argmax; /* maxpool; planned by the graph, which owns it */
  bool is_max;
  bool bwd_elems; /* the backward's layout (max pooling, measured) */
} pool_state;

static clt_status pool_input(clt_graph *g, clt_graph_node *n, pool_state **s) {
  clt_graph_node *in = clt_graph_in(g, n, 0);
  if (in->ndim != 3) {
    char b[96];
    return clt_node_fail(g, n, CLT_ERR_SHAPE,
                         "expects [channels, height, width], but '%s' gives %s",
                         in->name, clt_shape_str(in->ndim, in->shape, b,
                                                 sizeof b));
  }
  *s = calloc(1, sizeof **s);
  if (!*s) return clt_node_fail(g, n, CLT_ERR_HOST_MEMORY, "state");
  n->state = *s;
  (*s)->w.C = in->shape[0];
  (*s)->w.H = in->shape[1];
  (*s)->w.W = in->shape[2];
  (*s)->w.dil_h = (*s)->w.dil_w = 1;
  (*s)->is_max = !strcmp(n->ops->type, "maxpool") ||
                 !strcmp(n->ops->type, "global_maxpool");
  return CLT_OK;
}

static clt_status pool_configure(clt_graph *g, clt_graph_node *n,
                                 clt_layer_args *a) {
  pool_state *s;
  CLT_TRY(pool_input(g, n, &s));
  clt_window *w = &s->w;
  CLT_TRY(clt_layer_get_pair(g, a, "kernel", true, 1, 0, &w->KH, &w->KW));
  CLT_TRY(clt_layer_get_pair(g, a, "stride", false, 1, 0, &w->stride_h, &w->stride_w));
  if (w->stride_h == 0) w->stride_h = w->KH;
  if (w->stride_w == 0) w->stride_w = w->KW;
  CLT_TRY(clt_layer_get_pair(g, a, "padding", false, 0, 0, &w->pad_h, &w->pad_w));
  CLT_TRY(clt_layer_check_window(g, n, w));
  if (2 * w->pad_h > w->KH || 2 * w->pad_w > w->KW)
    return clt_node_fail(g, n, CLT_ERR_FORMAT,
                         "padding must be at most half the kernel (as "
                         "PyTorch)");
  w->OH = clt_window_out(w->H, w->KH, w->pad_h, w->stride_h, 1);
  w->OW = clt_window_out(w->W, w->KW, w->pad_w, w->stride_w, 1);
  if (w->OH < 1 || w->OW < 1)
    return clt_node_fail(g, n, CLT_ERR_SHAPE,
                         "a %lldx%lld window does not fit a %lldx%lld input",
                         (long long)w->KH, (long long)w->KW, (long long)w->H,
                         (long long)w->W);
  n->ndim = 3;
  n->shape[0] = w->C;
  n->shape[1] = w->OH;
  n->shape[2] = w->OW;
  return CLT_OK;
}

static clt_status global_configure(clt_graph *g, clt_graph_node *n,
                                   clt_layer_args *a) {
  (void)a;
  pool_state *s;
  CLT_TRY(pool_input(g, n, &s));
  clt_window *w = &s->w;
  w->KH = w->stride_h = w->H;
  w->KW = w->stride_w = w->W;
  w->OH = w->OW = 1;
  n->ndim = 1;
  n->shape[0] = w->C;
  return CLT_OK;
}

static clt_status pool_reserve(clt_graph *g, clt_graph_node *n) {
  pool_state *s = n->state;
  if (!s->is_max) return CLT_OK;
  return clt_graph_workspace(g, n, CLT_I32, g->max_batch * n->size,
                             CLT_LIVE_SAVED, &s->argmax);
}

/* The window over this batch's planes. */
static clt_window planes(const pool_state *s, int64_t batch) {
  clt_window w = s->w;
  w.C *= batch;
  return w;
}

/* Max pooling measured with a work-item per row, per element, and (the
 * forward of 2x2 windows of stride 2) per row in vectors. */
typedef struct pool_work {
  clt_graph *g;
  pool_state *s;
  clt_graph_node *n;
  bool backward;
} pool_work;

static clt_status run_pool(void *user, int way) {
  pool_work *p = user;
  clt_window w = planes(p->s, p->g->max_batch);
  w.per_element = way == 1;
  w.vectors = way == 2;
  clt_graph_node *in = clt_graph_in(p->g, p->n, 0);
  if (p->backward)
    return clt_maxpool_backward(p->g->ctx, in->grad, p->n->grad, p->s->argmax,
                                &w, false, NULL);
  return clt_maxpool_forward(p->g->ctx, p->n->out, p->s->argmax, in->out, &w,
                             NULL);
}

/* Picks max pooling's layouts (issue 8's kernels laid out for the
 * device): forward on fixed input values, then backward on the argmax
 * that forward left and fixed output gradients. */
static clt_status pool_compile(clt_graph *g, clt_graph_node *n) {
  pool_state *s = n->state;
  if (!s->is_max) return CLT_OK;
  clt_graph_node *in = clt_graph_in(g, n, 0);
  bool measuring = clt_graph_plans_measure(g);
  const clt_window *w = &s->w;
  int64_t b = g->max_batch;
  char key[256], shape[64];
  snprintf(key, sizeof key,
           "maxpool %lldx%lldx%lld, kernel %lldx%lld, padding %lldx%lld, "
           "stride %lldx%lld, batch %lld",
           (long long)w->C, (long long)w->H, (long long)w->W,
           (long long)w->KH, (long long)w->KW, (long long)w->pad_h,
           (long long)w->pad_w, (long long)w->stride_h, (long long)w->stride_w,
           (long long)b);
  snprintf(shape, sizeof shape, "maxpool %lldx%lld",
           (long long)(b * w->C), (long long)(w->OH * w->OW));
  pool_work pw = {g, s, n, false};
  clt_tensor y = clt_tensor_slice_1d(n->out, 0, b * n->size);
  clt_graph_ways ways = {
      .what = "maxpool layout",
      .shape = shape,
      .m = b * w->C,
      .n = w->OH * w->OW,
      .k = w->KH * w->KW,
      .key = key,
      .names = {"per row", "per element", "per row, vectors"},
      .work = {.count = clt_maxpool_vectors_fit(w) ? 3 : 2,
               .run = run_pool,
               .user = &pw,
               .check_count = 1}};
  ways.work.checks[0] = &y;
  if (measuring) CLT_TRY(clt_graph_plan_fill(g, in->out));
  int chosen = 0;
  CLT_TRY(clt_graph_plan_ways(g, n, &ways, &chosen));
  s->w.per_element = chosen == 1;
  s->w.vectors = chosen == 2;
  if (!in->needs_grad || !in->grad || !n->grad) return CLT_OK;
  if (measuring) {
    CLT_TRY(run_pool(&pw, 0)); /* the argmax the backward reads */
    CLT_TRY(clt_graph_plan_fill(g, n->grad));
  }
  pw.backward = true;
  ways.work.count = 2;
  clt_tensor dx = clt_tensor_slice_1d(in->grad, 0, b * in->size);
  ways.what = "maxpool backward layout";
  ways.work.checks[0] = &dx;
  CLT_TRY(clt_graph_plan_ways(g, n, &ways, &chosen));
  s->bwd_elems = chosen == 1;
  return CLT_OK;
}

static clt_status pool_forward(clt_graph *g, clt_graph_node *n) {
  pool_state *s = n->state;
  clt_window w = planes(s, g->batch);
  const clt_tensor *x = clt_graph_in(g, n, 0)->out;
  const clt_round16 *round = clt_graph_out_round(g, n);
  if (s->is_max)
    return clt_maxpool_forward(g->ctx, n->out, s->argmax, x, &w, round);
  return clt_avgpool_forward(g->ctx, n->out, x, &w, round);
}

static clt_status pool_backward(clt_graph *g, clt_graph_node *n) {
  pool_state *s = n->state;
  bool acc = false;
  clt_tensor *dx = clt_graph_input_grad(g, n, 0, &acc);
  if (!dx) return CLT_OK;
  clt_window w = planes(s, g->batch);
  w.per_element = s->bwd_elems;
  const clt_round16 *round = clt_graph_grad_round(g, n, 0, acc);
  if (s->is_max)
    return clt_maxpool_backward(g->ctx, dx, n->grad, s->argmax, &w, acc,
                                round);
  return clt_avgpool_backward(g->ctx, dx, n->grad, &w, acc, round);
}

static void pool_destroy(clt_graph_node *n) { free(n->state); }

#define POOL_LAYER(var, name, k, conf)                                         \
  const clt_layer_ops var = {                                                  \
      .type = name,                                                            \
      .min_inputs = 1,                                                         \
      .max_inputs = 1,                                                         \
      .option_keys = k,                                                        \
      .configure = conf,                                                       \
      .reserve = pool_reserve,                                                 \
      .compile = pool_compile,                                                 \
      .forward = pool_forward,                                                 \
      .backward = pool_backward,                                               \
      .destroy = pool_destroy,                                                 \
  };

POOL_LAYER(clt_layer_maxpool, "maxpool", keys, pool_configure)
POOL_LAYER(clt_layer_avgpool, "avgpool", keys, pool_configure)
POOL_LAYER(clt_layer_global_avgpool, "global_avgpool", global_keys,
           global_configure)
POOL_LAYER(clt_layer_global_maxpool, "global_maxpool", global_keys,
           global_configure)
