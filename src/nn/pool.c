/* maxpool / avgpool kernel=K[xK] [stride=S (default K)] [padding=P], and
 * global_avgpool (output [channels], as Keras's GlobalAveragePooling2D). */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

static const char *const keys[] = {"kernel", "stride", "padding", "name",
                                   "input",  "inputs", NULL};
static const char *const global_keys[] = {"name", "input", "inputs", NULL};

typedef struct pool_state {
  clt_window w; /* w.C: channels per sample */
  clt_tensor *argmax; /* maxpool; planned by the graph, which owns it */
  bool is_max;
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
  (*s)->is_max = !strcmp(n->ops->type, "maxpool");
  return CLT_OK;
}

static clt_status pool_configure(clt_graph *g, clt_graph_node *n,
                                 clt_layer_args *a) {
  pool_state *s;
  CLT_TRY(pool_input(g, n, &s));
  clt_window *w = &s->w;
  CLT_TRY(clt_layer_get_pair(g, a, "kernel", true, 0, &w->KH, &w->KW));
  CLT_TRY(clt_layer_get_pair(g, a, "stride", false, 0, &w->stride_h, &w->stride_w));
  if (w->stride_h == 0) w->stride_h = w->KH;
  if (w->stride_w == 0) w->stride_w = w->KW;
  CLT_TRY(clt_layer_get_pair(g, a, "padding", false, 0, &w->pad_h, &w->pad_w));
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

static clt_status pool_forward(clt_graph *g, clt_graph_node *n) {
  pool_state *s = n->state;
  clt_window w = planes(s, g->batch);
  const clt_tensor *x = clt_graph_in(g, n, 0)->out;
  if (s->is_max) return clt_maxpool_forward(g->ctx, n->out, s->argmax, x, &w);
  return clt_avgpool_forward(g->ctx, n->out, x, &w);
}

static clt_status pool_backward(clt_graph *g, clt_graph_node *n) {
  pool_state *s = n->state;
  bool acc = false;
  clt_tensor *dx = clt_graph_input_grad(g, n, 0, &acc);
  if (!dx) return CLT_OK;
  clt_window w = planes(s, g->batch);
  if (s->is_max)
    return clt_maxpool_backward(g->ctx, dx, n->grad, s->argmax, &w, acc);
  return clt_avgpool_backward(g->ctx, dx, n->grad, &w, acc);
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
      .forward = pool_forward,                                                 \
      .backward = pool_backward,                                               \
      .destroy = pool_destroy,                                                 \
  };

POOL_LAYER(clt_layer_maxpool, "maxpool", keys, pool_configure)
POOL_LAYER(clt_layer_avgpool, "avgpool", keys, pool_configure)
POOL_LAYER(clt_layer_global_avgpool, "global_avgpool", global_keys,
           global_configure)
