/* dropout rate=P: in training, zeroes each element with probability P and
 * scales the rest by 1/(1-P); in evaluation, passes the input through.
 * Masks come from a counter-based generator on the device, from the
 * graph's seed, the node and a per-forward counter. */
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "graph/graph.h"

static const char *const keys[] = {"rate", "name", "input", "inputs", NULL};

typedef struct dropout_state {
  float rate;
  uint64_t calls; /* training forwards so far: the generator's counter */
  clt_tensor *mask; /* planned by the graph, which owns it */
  bool trained;
} dropout_state;

static clt_status dropout_configure(clt_graph *g, clt_graph_node *n,
                                    clt_layer_args *a) {
  clt_err err = {0};
  double rate = 0.5;
  if (clt_args_get_float(a, "rate", false, 0.5, &rate, &err) != CLT_OK)
    return clt_graph_err(g, &err);
  if (rate < 0.0 || rate >= 1.0)
    return clt_node_fail(g, n, CLT_ERR_FORMAT,
                         "rate must be in [0, 1), got %g", rate);
  dropout_state *s = calloc(1, sizeof *s);
  if (!s) return clt_node_fail(g, n, CLT_ERR_HOST_MEMORY, "state");
  s->rate = (float)rate;
  n->state = s;
  clt_graph_node *in = clt_graph_in(g, n, 0);
  n->ndim = in->ndim;
  memcpy(n->shape, in->shape, sizeof n->shape);
  return CLT_OK;
}

static clt_status dropout_reserve(clt_graph *g, clt_graph_node *n) {
  dropout_state *s = n->state;
  return clt_graph_workspace(g, n, CLT_F32, g->max_batch * n->size,
                             CLT_LIVE_SAVED, &s->mask);
}

static clt_status dropout_forward(clt_graph *g, clt_graph_node *n) {
  dropout_state *s = n->state;
  const clt_tensor *x = clt_graph_in(g, n, 0)->out;
  int64_t count = g->batch * n->size;
  s->trained = g->training && s->rate > 0.0f;
  if (!s->trained)
    return clt_scale_forward(g->ctx, n->out, x, count, 1.0f, false,
                             clt_graph_out_round(g, n));
  clt_rng r = clt_rng_derive(g->seed, CLT_RNG_DROPOUT, (uint64_t)n->index);
  return clt_dropout_forward(g->ctx, n->out, s->mask, x, count, s->rate,
                             clt_rng_next(&r), s->calls++);
}

static clt_status dropout_backward(clt_graph *g, clt_graph_node *n) {
  dropout_state *s = n->state;
  bool acc = false;
  clt_tensor *dx = clt_graph_input_grad(g, n, 0, &acc);
  if (!dx) return CLT_OK;
  int64_t count = g->batch * n->size;
  if (!s->trained)
    return clt_scale_forward(g->ctx, dx, n->grad, count, 1.0f, acc,
                             clt_graph_grad_round(g, n, 0, acc));
  return clt_mul_forward(g->ctx, dx, n->grad, s->mask, count, acc);
}

static void dropout_destroy(clt_graph_node *n) { free(n->state); }

/* The counter that drives the random masks (training forwards so far),
 * which checkpoints save and restore. */
static uint64_t *dropout_counter(clt_graph_node *n) {
  return n->state ? &((dropout_state *)n->state)->calls : NULL;
}

const clt_layer_ops clt_layer_dropout = {
    .type = "dropout",
    .min_inputs = 1,
    .max_inputs = 1,
    .option_keys = keys,
    .configure = dropout_configure,
    .reserve = dropout_reserve,
    .forward = dropout_forward,
    .backward = dropout_backward,
    .destroy = dropout_destroy,
    .saved_counter = dropout_counter,
};
