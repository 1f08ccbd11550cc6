/* Contexts on every device of the machine at once, in one process: each
 * trains a step, and they are destroyed in either order, again and again.
 *
 * DESIGN.md promises no global state: two contexts on two devices side by
 * side in one process. Mesa's rusticl and POCL in one process crashed at
 * exit (1 run in 4 of `bench train --device all`) until context teardown
 * waited for rusticl's queue thread; a crash at exit is exactly what these
 * tests catch, because each runs in its own forked process (Check's default
 * mode, unlike the other device suites: nothing of OpenCL exists in the
 * parent, so nothing crosses the fork) and Check reports a child that dies
 * of a signal after its last assertion as an error.
 *
 * Where the caller has not set RUSTICL_ENABLE, main() enables llvmpipe, so
 * the two CPU stacks of this machine meet here whatever CLT_DEVICE says. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cltrain.h"
#include "run_checks.h"

#define MAX_DEVICES 16
#define ROUNDS 3
#define BATCH 8

typedef struct replica {
  clt_context *ctx;
  clt_graph *g;
  clt_optimizer *opt;
} replica;

#define ck_assert_ok_on(r, expr)                                               \
  do {                                                                         \
    clt_status st_ = (expr);                                                   \
    ck_assert_msg(st_ == CLT_OK, "%s on %s: %s", #expr,                       \
                  clt_context_device((r)->ctx)->name,                          \
                  clt_context_last_error((r)->ctx));                           \
  } while (0)

static size_t device_count(void) {
  clt_device_list list;
  char err[4096];
  ck_assert_msg(clt_device_list_get(&list, err, sizeof err) == CLT_OK, "%s",
                err);
  size_t n = list.count < MAX_DEVICES ? list.count : MAX_DEVICES;
  clt_device_list_free(&list);
  return n;
}

/* A context on device `index` with a small MLP compiled for BATCH and an
 * Adam optimizer over it. */
static void replica_open(replica *r, size_t index) {
  char spec[16], err[8192];
  snprintf(spec, sizeof spec, "%zu", index);
  clt_context_options opts;
  clt_context_options_init(&opts);
  opts.device = spec;
  memset(r, 0, sizeof *r);
  ck_assert_msg(clt_context_create(&opts, &r->ctx, err, sizeof err) == CLT_OK,
                "device %s: %s", spec, err);
  clt_node x, h;
  int64_t shape[3] = {1, 6, 6};
  ck_assert_ok_on(r, clt_graph_create(r->ctx, &r->g));
  ck_assert_ok_on(r, clt_graph_input(r->g, 3, shape, &x));
  ck_assert_ok_on(r, clt_graph_flatten(r->g, x, &h));
  ck_assert_ok_on(r, clt_graph_dense(r->g, h, 12, &h));
  ck_assert_ok_on(r, clt_graph_activation(r->g, h, CLT_ACT_RELU, &h));
  ck_assert_ok_on(r, clt_graph_dense(r->g, h, 3, &h));
  ck_assert_ok_on(r, clt_graph_softmax_cross_entropy(r->g, h, NULL));
  ck_assert_ok_on(r, clt_graph_compile(r->g, BATCH, 7));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  ck_assert_ok_on(r, clt_optimizer_create(r->g, &oo, &r->opt));
}

/* Enqueues `steps` training steps on a fixed batch and returns without
 * waiting for them: a context destroyed right after must still finish its
 * work before it lets go (the rusticl crash needed kernels in flight). */
static void replica_enqueue_steps(replica *r, int steps) {
  float x[BATCH * 36];
  int32_t y[BATCH];
  for (int i = 0; i < BATCH * 36; i++) x[i] = (float)((i * 37) % 11) / 11.0f;
  for (int i = 0; i < BATCH; i++) y[i] = i % 3;
  ck_assert_ok_on(r, clt_graph_set_batch(r->g, x, y, BATCH));
  for (int s = 0; s < steps; s++) {
    ck_assert_ok_on(r, clt_graph_forward(r->g, true));
    ck_assert_ok_on(r, clt_graph_backward(r->g));
    ck_assert_ok_on(r, clt_optimizer_step(r->opt));
  }
}

/* One training step; returns its loss, read back and checked finite. */
static double replica_step(replica *r) {
  replica_enqueue_steps(r, 1);
  clt_metrics m;
  ck_assert_ok_on(r, clt_graph_metrics(r->g, &m, true));
  ck_assert_msg(isfinite(m.loss) && m.loss > 0.0, "loss %g on %s", m.loss,
                clt_context_device(r->ctx)->name);
  return m.loss;
}

static void replica_close(replica *r) {
  clt_optimizer_destroy(r->opt);
  clt_graph_destroy(r->g);
  clt_context_destroy(r->ctx);
  memset(r, 0, sizeof *r);
}

/* Opens every device, trains a step on each, leaves four more in flight and
 * destroys them first to last (reverse = false) or last to first; ROUNDS
 * times, the process exiting right after the last. */
static void open_train_close_all(bool reverse) {
  size_t n = device_count();
  printf("%zu device(s), destroyed %s\n", n,
         reverse ? "last to first" : "first to last");
  replica r[MAX_DEVICES];
  for (int round = 0; round < ROUNDS; round++) {
    for (size_t i = 0; i < n; i++) replica_open(&r[i], i);
    for (size_t i = 0; i < n; i++) replica_step(&r[i]);
    for (size_t i = 0; i < n; i++) replica_enqueue_steps(&r[i], 4);
    for (size_t k = 0; k < n; k++) replica_close(&r[reverse ? n - 1 - k : k]);
  }
}

START_TEST(every_device_destroyed_first_to_last) {
  open_train_close_all(false);
}
END_TEST

START_TEST(every_device_destroyed_last_to_first) {
  open_train_close_all(true);
}
END_TEST

/* Contexts live side by side: steps interleave across devices, and one
 * context goes away while the others keep training. The same model and
 * seed give the same first loss on every device (to float rounding). */
START_TEST(contexts_train_side_by_side) {
  size_t n = device_count();
  replica r[MAX_DEVICES];
  double first[MAX_DEVICES];
  for (size_t i = 0; i < n; i++) replica_open(&r[i], i);
  for (size_t i = 0; i < n; i++) first[i] = replica_step(&r[i]);
  for (size_t i = 1; i < n; i++)
    ck_assert_msg(fabs(first[i] - first[0]) < 1e-4 * first[0],
                  "first loss %.7g on %s but %.7g on %s", first[i],
                  clt_context_device(r[i].ctx)->name, first[0],
                  clt_context_device(r[0].ctx)->name);
  double before = replica_step(&r[n - 1]);
  size_t live = 0;
  if (n > 1) { /* the first goes; the rest train on */
    replica_close(&r[0]);
    live = 1;
  }
  for (size_t i = live; i < n; i++) replica_step(&r[i]);
  double after = replica_step(&r[n - 1]);
  /* More Adam steps on the same batch lower its loss. */
  ck_assert_msg(after < before, "loss %g then %g", before, after);
  for (size_t i = live; i < n; i++) replica_close(&r[i]);
}
END_TEST

static Suite *devices_suite(void) {
  Suite *s = suite_create("devices");
  TCase *tc = tcase_create("side_by_side");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, every_device_destroyed_first_to_last);
  tcase_add_test(tc, every_device_destroyed_last_to_first);
  tcase_add_test(tc, contexts_train_side_by_side);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  /* Before the first OpenCL call: rusticl reads it when the ICD loader
   * initialises the platforms. */
  setenv("RUSTICL_ENABLE", "llvmpipe", 0);
  int failed = test_run_checks(devices_suite(), CK_FORK);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
