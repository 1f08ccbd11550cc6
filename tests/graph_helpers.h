/* Helpers of the suites that build graphs: models from text, random
 * batches, and the finite-difference check of every gradient. */
#ifndef CLT_TESTS_GRAPH_HELPERS_H
#define CLT_TESTS_GRAPH_HELPERS_H

#include <math.h>
#include <unistd.h>

#include "common.h"
#include "common/rng.h"
#include "graph/graph.h"

/* x rounded to fp16 by the host's IEEE conversion (ties to even). */
static inline float host_round(float x) {
  uint16_t h;
  float y;
  clt_f32_to_f16(&x, &h, 1);
  clt_f16_to_f32(&h, &y, 1);
  return y;
}

/* x is an fp16 value (what mixed precision's rounding writes). */
static inline bool is_half_value(float x) {
  float y = host_round(x);
  return isnan(x) ? isnan(y) : memcmp(&x, &y, sizeof x) == 0;
}

/* A graph on ctx from model-file text written to a temporary file. */
static inline clt_status graph_from_text_on(clt_context *ctx,
                                            const char *text, clt_graph **g) {
  char path[] = "/tmp/clt_model_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  clt_status st = clt_graph_load_model(ctx, path, g);
  unlink(path);
  return st;
}

/* The node of g named name (the test fails where there is none). */
static inline clt_graph_node *node_named(clt_graph *g, const char *name) {
  for (int i = 0; i < g->n_nodes; i++)
    if (!strcmp(g->nodes[i].name, name)) return &g->nodes[i];
  ck_abort_msg("no node %s", name);
  return NULL;
}

/* The same on the suite's context. */
static inline clt_status graph_from_text(const char *text, clt_graph **g) {
  return graph_from_text_on(g_ctx, text, g);
}

static inline void random_batch(clt_graph *g, int64_t batch, uint64_t seed,
                         bool float_targets) {
  int64_t in = g->nodes[g->input_node].size;
  int64_t out = g->nodes[g->loss_node].size;
  float *x = malloc((size_t)(batch * in) * sizeof(float));
  float *t = malloc((size_t)(batch * out) * sizeof(float));
  int32_t *y = malloc((size_t)batch * sizeof(int32_t));
  clt_random_fill(x, batch * in, seed, -1.0f, 1.0f);
  clt_random_fill(t, batch * out, seed + 1, -1.0f, 1.0f);
  for (int64_t i = 0; i < batch; i++) y[i] = (int32_t)((i * 7 + 3) % out);
  ck_assert_ok(clt_graph_set_batch(g, x, float_targets ? (void *)t : y, batch));
  free(x);
  free(t);
  free(y);
}

static inline double loss_now(clt_graph *g) {
  clt_metrics m;
  ck_assert_ok(clt_graph_metrics(g, &m, true));
  ck_assert_ok(clt_graph_forward(g, true));
  ck_assert_ok(clt_graph_metrics(g, &m, true));
  return m.loss;
}

/* Compares every parameter gradient (or a sample of them, for big ones)
 * with central differences of the loss. */
/* Checks the gradients with every layer's way of working forced to `way`
 * (1 + the index of the way in clt_graph_plan_ways; 0: as measured), or
 * where name is not NULL to the way of that name where one is offered. */
static inline void check_gradients_named(const char *model, int64_t batch,
                                         bool float_targets, int way,
                                         const char *name) {
  clt_graph *g = NULL;
  ck_assert_ok(graph_from_text(model, &g));
  g->test_way = way;
  g->test_way_name = name;
  ck_assert_ok(clt_graph_compile(g, batch, 5));
  bool named = false; /* the name was offered somewhere, and taken */
  for (int i = 0; name && i < clt_graph_plan_count(g); i++) {
    clt_plan_info info;
    ck_assert_ok(clt_graph_plan_info(g, i, &info));
    named |= !strcmp(info.candidates[info.chosen].name, name);
  }
  ck_assert_msg(!name || named, "no layer offers the way '%s'", name);
  random_batch(g, batch, 11, float_targets);
  ck_assert_ok(clt_graph_forward(g, true));
  ck_assert_ok(clt_graph_backward(g));
  int64_t n = g->param_count;
  float *p = malloc((size_t)n * sizeof(float));
  float *grad = malloc((size_t)n * sizeof(float));
  ck_assert_ok(clt_tensor_download(g->params, p));
  ck_assert_ok(clt_tensor_download(g->grads, grad));
  const float eps = 2e-3f;
  /* the trainable ones, which come first (graph.c, plan_params); the
   * rest (statistics, class weights) get no gradient */
  n = clt_graph_parameter_count(g);
  int64_t stride = n > 60 ? n / 60 : 1;
  double worst = 0.0;
  for (int64_t i = 0; i < n; i += stride) {
    float keep = p[i];
    p[i] = keep + eps;
    ck_assert_ok(clt_tensor_upload(g->params, p));
    double up = loss_now(g);
    p[i] = keep - eps;
    ck_assert_ok(clt_tensor_upload(g->params, p));
    double down = loss_now(g);
    p[i] = keep;
    double fd = (up - down) / (2.0 * eps);
    double err = fabs(fd - grad[i]) / fmax(1e-2, fabs(fd) + fabs(grad[i]));
    ck_assert_msg(err < 3e-2,
                  "parameter %lld: backward %.6g, finite difference %.6g",
                  (long long)i, grad[i], fd);
    if (err > worst) worst = err;
  }
  ck_assert_ok(clt_tensor_upload(g->params, p));
  free(p);
  free(grad);
  clt_graph_destroy(g);
}

static inline void check_gradients_way(const char *model, int64_t batch,
                                       bool float_targets, int way) {
  check_gradients_named(model, batch, float_targets, way, NULL);
}

static inline void check_gradients(const char *model, int64_t batch,
                                   bool float_targets) {
  check_gradients_way(model, batch, float_targets, 0);
}

#endif
