/* Trains the Keras tutorial MLP on Fashion-MNIST with the C API:
 * Flatten -> Dense 128 relu -> Dense 10, softmax cross-entropy, Adam.
 *
 *   cc train_mlp.c $(pkg-config --cflags --libs cltrain) -o train_mlp
 *   ./train_mlp [DATA [EPOCHS [TRAIN_LIMIT]]]   (DATA: fashion-mnist or a
 *                                                folder of IDX files) */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include <cltrain.h>
#include <stdio.h>
#include <stdlib.h>

static int check(clt_status st, clt_context *ctx) {
  if (st != CLT_OK)
    fprintf(stderr, "error: %s\n",
            ctx ? clt_context_last_error(ctx) : clt_status_string(st));
  return st != CLT_OK;
}

static void on_epoch(const clt_progress *p, void *user) {
  (void)user;
  if (p->phase == CLT_PHASE_EPOCH)
    printf("epoch %d: loss %.4f, test accuracy %.4f, %.0f images/s\n",
           p->stats->epoch, p->stats->train_loss, p->stats->test_acc,
           p->stats->images_per_sec);
}

int main(int argc, char **argv) {
  const char *data = argc > 1 ? argv[1] : "fashion-mnist";
  int epochs = argc > 2 ? atoi(argv[2]) : 5;
  long limit = argc > 3 ? atol(argv[3]) : 0;

  /* On POCL, one compiled work-group function per kernel instead of one
   * per launch size: a first run in half the time, training at the same
   * speed (README, "The two commands"). Set before any OpenCL call or
   * thread; a value already in the environment wins. */
  setenv("POCL_WORK_GROUP_SPECIALIZATION", "0", 0);

  char err[4096];
  clt_context *ctx = NULL; /* device: $CLT_DEVICE, else the first GPU/CPU */
  if (clt_context_create(NULL, &ctx, err, sizeof err) != CLT_OK) {
    fprintf(stderr, "error: %s\n", err);
    return 1;
  }
  clt_graph *g = NULL;
  clt_dataset *train = NULL, *test = NULL;
  clt_optimizer *opt = NULL;
  clt_node x, h;
  int64_t image[3] = {1, 28, 28};
  int failed =
      check(clt_graph_create(ctx, &g), ctx) ||
      check(clt_graph_input(g, 3, image, &x), ctx) ||
      check(clt_graph_flatten(g, x, &h), ctx) ||
      check(clt_graph_dense(g, h, 128, &h), ctx) ||
      check(clt_graph_activation(g, h, CLT_ACT_RELU, &h), ctx) ||
      check(clt_graph_dense(g, h, 10, &h), ctx) ||
      check(clt_graph_softmax_cross_entropy(g, h, NULL), ctx) ||
      check(clt_graph_compile(g, 32, 1), ctx) ||
      check(clt_dataset_load(ctx, data, true, limit, &train), ctx) ||
      check(clt_dataset_load(ctx, data, false, 0, &test), ctx);
  if (!failed) {
    clt_optimizer_options oo;
    clt_optimizer_options_init(&oo, CLT_OPT_ADAM); /* lr 0.001 */
    clt_fit_options fo;
    clt_fit_options_init(&fo); /* batch 32, seed 1, shuffled */
    fo.epochs = epochs;
    fo.progress = on_epoch;
    clt_metrics m;
    failed = check(clt_optimizer_create(g, &oo, &opt), ctx) ||
             check(clt_fit(g, opt, train, test, &fo, NULL), ctx) ||
             check(clt_evaluate(g, test, 32, &m), ctx);
    if (!failed) printf("test accuracy %.4f\n", m.accuracy);
  }
  clt_optimizer_destroy(opt);
  clt_dataset_destroy(train);
  clt_dataset_destroy(test);
  clt_graph_destroy(g);
  clt_context_destroy(ctx);
  return failed;
}
