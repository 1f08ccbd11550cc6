/* The graph: gradients by finite differences through whole models, shape
 * and model-file errors, no allocation in a steady-state step, the
 * profile per layer,
 * determinism by seed, and short training runs. */
#include <math.h>
#include <unistd.h>

#include "graph_helpers.h"
#include "ops/ops.h"
#include "optim/optimizer.h"

#define MLP(act)                                                               \
  "input shape=7\n"                                                            \
  "dense units=5\n" act "\n"                                                   \
  "dense units=3\n"                                                            \
  "softmax_cross_entropy\n"

START_TEST(test_fd_relu) { check_gradients(MLP("relu"), 3, false); }
END_TEST
START_TEST(test_fd_leaky_relu) {
  check_gradients(MLP("leaky_relu alpha=0.2"), 3, false);
}
END_TEST
START_TEST(test_fd_sigmoid) { check_gradients(MLP("sigmoid"), 3, false); }
END_TEST
START_TEST(test_fd_tanh) { check_gradients(MLP("tanh"), 1, false); }
END_TEST
START_TEST(test_fd_gelu) { check_gradients(MLP("gelu"), 7, false); }
END_TEST
START_TEST(test_fd_silu) { check_gradients(MLP("silu"), 5, false); }
END_TEST
START_TEST(test_fd_elu) { check_gradients(MLP("elu alpha=0.7"), 3, false); }
END_TEST
START_TEST(test_fd_softplus) {
  /* dense's activation=: the layer after it, as Keras's */
  check_gradients("input shape=6\ndense units=5 activation=softplus\n"
                  "dense units=4 activation=swish\nsoftmax_cross_entropy\n",
                  2, false);
}
END_TEST
START_TEST(test_fd_image_input) {
  check_gradients("input shape=1x3x5\nflatten\ndense units=4 activation=tanh\n"
                  "dense units=10 bias=false\nsoftmax_cross_entropy\n",
                  5, false);
}
END_TEST
START_TEST(test_fd_mse_softmax) {
  check_gradients("input shape=6\ndense units=4 activation=sigmoid\n"
                  "dense units=3\nsoftmax\nmse\n",
                  3, true);
}
END_TEST
/* targets in [-1, 1] here (the math holds outside [0, 1] too) */
START_TEST(test_fd_sigmoid_xent) {
  check_gradients("input shape=6\ndense units=4 activation=tanh\n"
                  "dense units=3\nsigmoid_cross_entropy\n",
                  3, true);
}
END_TEST
START_TEST(test_fd_mae) {
  check_gradients("input shape=6\ndense units=4 activation=tanh\n"
                  "dense units=3\nmae\n",
                  3, true);
}
END_TEST
/* delta 0.2: elements on both sides of it */
START_TEST(test_fd_huber) {
  check_gradients("input shape=6\ndense units=4 activation=tanh\n"
                  "dense units=3\nhuber delta=0.2\n",
                  3, true);
}
END_TEST
START_TEST(test_fd_mse_reshape) {
  check_gradients("input shape=2x3\nreshape shape=6\ndense units=2\nmse\n", 4,
                  true);
}
END_TEST

/* g's parameter gradients after a forward and backward pass on its batch,
 * into a new array. */
static float *step_gradients(clt_graph *g) {
  float *grads = malloc((size_t)g->param_count * sizeof(float));
  ck_assert_ptr_nonnull(grads);
  ck_assert_ok(clt_graph_forward(g, true));
  ck_assert_ok(clt_graph_backward(g));
  clt_tensor t = clt_tensor_slice_1d(g->grads, 0, g->param_count);
  ck_assert_ok(clt_tensor_download(&t, grads));
  return grads;
}

/* The loss writes its input's gradient during its forward where it is
 * that gradient's one writer (clt_graph_loss_grad), else into a buffer of
 * its own that its backward copies from; either way a loss scale
 * multiplies every gradient (in place on the first way): a scale of 8
 * gives exactly 8 times the gradients of 1, on both ways, and the scale
 * back at 1 the same bits as at first. */
START_TEST(test_loss_gradient_in_place_or_copied) {
  static const struct {
    const char *model;
    bool mse, in_place;
  } cases[] = {
      {MLP("relu"), false, true},
      /* a second consumer of the logits: two writers of their gradient */
      {"input shape=7\ndense name=a units=3\ntanh name=side input=a\n"
       "softmax_cross_entropy input=a\n",
       false, false},
      /* through a reshape, whose gradient is a view of its input's */
      {"input shape=6\ndense units=6\nreshape shape=2x3\nmse\n", true,
       true},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    clt_graph *g = NULL;
    ck_assert_ok(graph_from_text(cases[k].model, &g));
    ck_assert_ok(clt_graph_compile(g, 5, 1));
    random_batch(g, 5, 2, cases[k].mse);
    clt_graph_node *loss = &g->nodes[g->loss_node];
    ck_assert_msg((clt_graph_loss_grad(g, loss) != NULL) == cases[k].in_place,
                  "case %zu: in place %d", k, !cases[k].in_place);
    float *one = step_gradients(g);
    clt_graph_set_loss_scale(g, 8.0f);
    float *eight = step_gradients(g);
    clt_graph_set_loss_scale(g, 1.0f);
    float *again = step_gradients(g);
    bool nonzero = false;
    for (int64_t i = 0; i < g->param_count; i++) {
      ck_assert_msg(eight[i] == 8.0f * one[i],
                    "case %zu: gradient %lld: %g at scale 8, %g at 1", k,
                    (long long)i, eight[i], one[i]);
      nonzero |= one[i] != 0.0f;
    }
    ck_assert_msg(nonzero, "case %zu: every gradient 0", k);
    ck_assert_mem_eq(again, one, (size_t)g->param_count * sizeof(float));
    free(one);
    free(eight);
    free(again);
    clt_graph_destroy(g);
  }
}
END_TEST

/* A graph's error message for a model-file text, with its status. */
static void expect_model_error(const char *text, clt_status want,
                               const char *needle) {
  clt_graph *g = NULL;
  clt_status st = graph_from_text(text, &g);
  ck_assert_msg(st == want, "status %s, expected %s (%s)",
                clt_status_string(st), clt_status_string(want),
                clt_context_last_error(g_ctx));
  ck_assert_ptr_null(g);
  ck_assert_msg(strstr(clt_context_last_error(g_ctx), needle),
                "message '%s' lacks '%s'", clt_context_last_error(g_ctx),
                needle);
}

START_TEST(test_shape_errors) {
  expect_model_error("input shape=1x28x28\ndense name=fc units=10\n",
                     CLT_ERR_SHAPE, "layer 'fc' (dense)");
  expect_model_error("input shape=1x28x28\ndense name=fc units=10\n",
                     CLT_ERR_SHAPE, "[1, 28, 28]");
  expect_model_error("input shape=4x5\nreshape shape=3x7\n", CLT_ERR_SHAPE,
                     "[3, 7]");
  expect_model_error("input shape=2x2\nsoftmax_cross_entropy\n", CLT_ERR_SHAPE,
                     "logits");
}
END_TEST

/* An op's refusal while a layer runs names the layer and the pass:
 * llvmpipe refuses a global max pooling over a large plane (its loop
 * cap, forced small here). */
START_TEST(test_op_error_names_layer) {
  clt_graph *g = NULL;
  ck_assert_ok(graph_from_text("input shape=1x40x40\n"
                               "global_maxpool name=gmp\n"
                               "dense units=3\nsoftmax_cross_entropy\n",
                               &g));
  ck_assert_ok(clt_graph_compile(g, 2, 1));
  random_batch(g, 2, 3, false);
  ck_assert_ok(clt_graph_forward(g, true));
  int64_t cap;
  ck_assert_ok(clt_device_loop_cap(g_ctx, &cap));
  int64_t saved = g_ctx->loop_cap;
  g_ctx->loop_cap = 2000; /* a budget of 1,000 iterations: 40 x 42 past it */
  clt_status st = clt_graph_forward(g, true);
  g_ctx->loop_cap = saved;
  const char *msg = clt_context_last_error(g_ctx);
  ck_assert_msg(st == CLT_ERR_UNSUPPORTED, "status %s (%s)",
                clt_status_string(st), msg);
  ck_assert_msg(strncmp(msg, "layer 'gmp' (global_maxpool) forward: ", 38) == 0,
                "message '%s'", msg);
  ck_assert_msg(strstr(msg, "40x40"), "message '%s' lacks the window", msg);
  /* the same graph runs again once the device takes it */
  ck_assert_ok(clt_graph_forward(g, true));
  ck_assert_ok(clt_graph_backward(g));
  clt_graph_destroy(g);
}
END_TEST

START_TEST(test_model_file_errors) {
  expect_model_error("input shape=4\ndense untis=3\n", CLT_ERR_FORMAT,
                     ":2:");
  expect_model_error("input shape=4\ndense untis=3\n", CLT_ERR_FORMAT,
                     "unknown option 'untis'");
  expect_model_error("input shape=4\ndense untis=3\n", CLT_ERR_FORMAT,
                     "did you mean 'units'?");
  expect_model_error("input shape=4\ndense units=abc\n", CLT_ERR_FORMAT,
                     "units");
  expect_model_error("input shape=4\nconvolution units=3\n", CLT_ERR_FORMAT,
                     "unknown layer type 'convolution'");
  expect_model_error("dense units=3\n", CLT_ERR_FORMAT, "input");
  expect_model_error("input shape=4\ndense units=3 input=nowhere\n",
                     CLT_ERR_FORMAT, "nowhere");
  expect_model_error("input shape=4\ndense units=3 activation=mish\n",
                     CLT_ERR_FORMAT, "activation");
  expect_model_error("input shape=4\nmse\ndense units=2\n", CLT_ERR_FORMAT,
                     "loss must be the last");
  expect_model_error("input shape=4\ndense name=a units=2\ndense name=a "
                     "units=2\n",
                     CLT_ERR_FORMAT, "named 'a'");
}
END_TEST

/* The typed builders hand the graph values, not text: a bad one is named
 * as the model file's getters name it; the list of layer types comes from
 * the registry. */
START_TEST(test_typed_builders_checked) {
  clt_graph *g = NULL;
  ck_assert_ok(clt_graph_create(g_ctx, &g));
  clt_node in, out;
  ck_assert_int_eq(clt_graph_input(g, 0, (int64_t[]){1}, &in),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_ok(clt_graph_input(g, 3, (int64_t[]){1, 5, 3}, &in));
  ck_assert_int_eq(clt_graph_dense(g, in, 4, &out), CLT_ERR_SHAPE);
  ck_assert_ok(clt_graph_flatten(g, in, &in));
  ck_assert_int_eq(clt_graph_dense(g, in, 0, &out), CLT_ERR_FORMAT);
  ck_assert_msg(strstr(clt_context_last_error(g_ctx),
                       "dense:1: dense: option 'units' expects a positive "
                       "integer, got '0'"),
                "%s", clt_context_last_error(g_ctx));
  ck_assert_ok(clt_graph_dense(g, in, 4, &out));
  int ndim;
  int64_t shape[CLT_MAX_DIMS];
  ck_assert_ok(clt_graph_node_shape(g, out, &ndim, shape));
  ck_assert(ndim == 1 && shape[0] == 4);
  ck_assert_int_eq(clt_graph_add(g, "conv3d", NULL, &out, 1, NULL, NULL),
                   CLT_ERR_FORMAT);
  const char *msg = clt_context_last_error(g_ctx);
  ck_assert_msg(strstr(msg, "(known: input, flatten, reshape, dense, conv2d") &&
                    strstr(msg, "softmax_cross_entropy, sigmoid_cross_entropy, "
                                "mse, mae, huber)"),
                "%s", msg);
  clt_graph_destroy(g);
}
END_TEST

START_TEST(test_c_api_shapes) {
  clt_graph *g = NULL;
  clt_node x, h;
  int64_t shape[3] = {1, 4, 4};
  ck_assert_ok(clt_graph_create(g_ctx, &g));
  ck_assert_ok(clt_graph_input(g, 3, shape, &x));
  ck_assert_int_eq(clt_graph_dense(g, x, 3, &h), CLT_ERR_SHAPE);
  ck_assert_ok(clt_graph_flatten(g, x, &h));
  ck_assert_ok(clt_graph_dense(g, h, 3, &h));
  int ndim;
  int64_t out[CLT_MAX_DIMS];
  ck_assert_ok(clt_graph_node_shape(g, h, &ndim, out));
  ck_assert_int_eq(ndim, 1);
  ck_assert_int_eq(out[0], 3);
  ck_assert_int_eq(clt_graph_parameter_count(g), 16 * 3 + 3);
  ck_assert_int_eq(clt_graph_add(g, "dense", NULL, &h, 1, "units=0", NULL),
                   CLT_ERR_FORMAT);
  clt_graph_destroy(g);
}
END_TEST

static void train_steps(clt_graph *g, clt_optimizer *opt, int steps) {
  for (int i = 0; i < steps; i++) {
    ck_assert_ok(clt_graph_forward(g, true));
    ck_assert_ok(clt_graph_backward(g));
    ck_assert_ok(clt_optimizer_step(opt));
  }
}

START_TEST(test_steady_state_allocates_nothing) {
  clt_graph *g = NULL;
  clt_optimizer *opt = NULL;
  ck_assert_ok(graph_from_text(MLP("relu"), &g));
  ck_assert_ok(clt_graph_compile(g, 8, 1));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  oo.clip_norm = 1.0f;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  random_batch(g, 8, 3, false);
  train_steps(g, opt, 2); /* first calls may build CLBlast kernels */
  clt_memory_stats before, after;
  clt_context_memory_stats(g_ctx, &before);
  train_steps(g, opt, 10);
  random_batch(g, 5, 4, false); /* a partial batch, too */
  train_steps(g, opt, 3);
  ck_assert_ok(clt_context_finish(g_ctx));
  clt_context_memory_stats(g_ctx, &after);
  ck_assert_int_eq(after.device_allocations, before.device_allocations);
  ck_assert_int_eq(after.pool_reuses, before.pool_reuses);
  ck_assert_int_eq(after.host_allocations, before.host_allocations);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
}
END_TEST

/* A context of its own on the tests' device, with profiling on or off. */
static clt_context *context_profiling(bool on) {
  clt_context_options opts;
  clt_context_options_init(&opts);
  opts.profiling = on;
  clt_context *ctx = NULL;
  char err[4096];
  ck_assert_msg(clt_context_create(&opts, &ctx, err, sizeof err) == CLT_OK,
                "%s", err);
  return ctx;
}

/* The profile per layer: each layer's forward and backward and the
 * optimizer's update apart, adding up to the profile per op. */
START_TEST(test_profile_by_layer) {
  clt_context *ctx = context_profiling(true);
  clt_graph *g = NULL;
  clt_optimizer *opt = NULL;
  ck_assert_ok(graph_from_text_on(ctx,
                                  "input shape=1x6x6\n"
                                  "conv2d name=c1 filters=3 kernel=3\n"
                                  "flatten\n"
                                  "dense name=d1 units=4 activation=relu\n"
                                  "softmax_cross_entropy name=loss\n",
                                  &g));
  g->test_way = 1; /* the convolution's GEMMs and swaps (not the direct
                      kernels its few taps are offered) */
  ck_assert_ok(clt_graph_compile(g, 5, 1));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  float x[5 * 36];
  int32_t y[5] = {0, 1, 2, 3, 0};
  clt_random_fill(x, 5 * 36, 3, -1.0f, 1.0f);
  ck_assert_ok(clt_graph_set_batch(g, x, y, 5));
  clt_profile_reset(ctx);
  for (int i = 0; i < 3; i++) {
    ck_assert_ok(clt_graph_forward(g, true));
    ck_assert_ok(clt_graph_backward(g));
    ck_assert_ok(clt_optimizer_step(opt));
  }
  clt_profile_row *ops = NULL, *layers = NULL;
  size_t n_ops = 0, n_layers = 0;
  ck_assert_ok(clt_profile_summary(ctx, &ops, &n_ops));
  ck_assert_ok(clt_profile_summary_by_layer(ctx, &layers, &n_layers));
  ck_assert_uint_gt(n_layers, n_ops);
  /* Every op's calls and time are its rows' per layer, summed. */
  for (size_t i = 0; i < n_ops; i++) {
    ck_assert_ptr_null(ops[i].layer);
    uint64_t calls = 0;
    double seconds = 0.0;
    for (size_t j = 0; j < n_layers; j++)
      if (strcmp(layers[j].op, ops[i].op) == 0) {
        calls += layers[j].calls;
        seconds += layers[j].seconds;
      }
    ck_assert_uint_eq(calls, ops[i].calls);
    if (!clt_profile_timed(ctx)) { /* no times: NaN both ways */
      ck_assert(isnan(seconds) && isnan(ops[i].seconds));
      continue;
    }
    ck_assert_double_eq_tol(seconds, ops[i].seconds, 1e-9 + 1e-9 * seconds);
  }
  /* The products of each layer's passes, and the update, apart (a
   * product's op is "gemm", CLBlast's, or its own kernel's,
   * "gemm_rows_4x32"). */
  static const char *const want[][2] = {
      {"c1 forward", "gemm"},   {"c1 backward", "gemm"},
      {"d1 forward", "gemm"},   {"d1 backward", "gemm"},
      {"optimizer", "adam_step"}};
  for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
    bool found = false;
    for (size_t j = 0; j < n_layers; j++) {
      ck_assert_ptr_nonnull(layers[j].layer);
      if (strcmp(layers[j].layer, want[w][0]) == 0 &&
          strncmp(layers[j].op, want[w][1], strlen(want[w][1])) == 0) {
        ck_assert_uint_ge(layers[j].calls, 3);
        found = true;
      }
    }
    ck_assert_msg(found, "no row for %s / %s", want[w][0], want[w][1]);
  }
  free(ops);
  free(layers);
  /* A reset forgets them; commands outside any layer have layer "". */
  clt_profile_reset(ctx);
  ck_assert_ok(clt_tensor_fill(g->params, 0.0));
  ck_assert_ok(clt_profile_summary_by_layer(ctx, &layers, &n_layers));
  ck_assert_uint_eq(n_layers, 1);
  ck_assert_str_eq(layers[0].layer, "");
  free(layers);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_context_destroy(ctx);
}
END_TEST

/* Losses of `steps` Adam steps on fixed data from seed. */
static void seeded_losses(uint64_t seed, float *losses, int steps) {
  clt_graph *g = NULL;
  clt_optimizer *opt = NULL;
  ck_assert_ok(graph_from_text(MLP("gelu"), &g));
  ck_assert_ok(clt_graph_compile(g, 9, seed));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAMW);
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  random_batch(g, 9, 21, false);
  for (int i = 0; i < steps; i++) {
    train_steps(g, opt, 1);
    clt_metrics m;
    ck_assert_ok(clt_graph_metrics(g, &m, true));
    losses[i] = (float)m.loss;
  }
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
}

START_TEST(test_same_seed_same_losses) {
  float a[12], b[12], c[12];
  seeded_losses(42, a, 12);
  seeded_losses(42, b, 12);
  seeded_losses(43, c, 12);
  ck_assert_mem_eq(a, b, sizeof a);
  ck_assert_msg(memcmp(a, c, sizeof a) != 0, "another seed, same losses");
  ck_assert_msg(a[11] < a[0], "loss did not fall: %g -> %g", a[0], a[11]);
}
END_TEST

/* An MLP for Fashion-MNIST's images (a hidden layer of `units`) on ctx,
 * compiled for batches of 32, with Adam. */
static void fashion_mlp(clt_context *ctx, int units, clt_graph **g,
                        clt_optimizer **opt) {
  char text[160];
  snprintf(text, sizeof text,
           "input shape=1x28x28\nflatten\ndense units=%d activation=relu\n"
           "dense units=10\nsoftmax_cross_entropy\n",
           units);
  ck_assert_ok(graph_from_text_on(ctx, text, g));
  ck_assert_ok(clt_graph_compile(*g, 32, 1));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  ck_assert_ok(clt_optimizer_create(*g, &oo, opt));
}

START_TEST(test_fit_2000_images) {
  clt_dataset *train = NULL, *test = NULL;
  ck_assert_ok(clt_dataset_load(g_ctx, "fashion-mnist", true, 2000, &train));
  ck_assert_ok(clt_dataset_load(g_ctx, "fashion-mnist", false, 1000, &test));
  /* The same bits however many steps the host may enqueue ahead of the
   * device (CLT_FIT_AHEAD: 1, the default 2, the most, 8), and without
   * the flush after each step (CLT_FIT_FLUSH=0). */
  const char *ahead[4] = {"1", NULL, "8", NULL};
  float runs[4][3];
  for (int r = 0; r < 4; r++) {
    if (ahead[r])
      test_setenv("CLT_FIT_AHEAD", ahead[r]);
    else
      test_setenv("CLT_FIT_AHEAD", NULL);
    if (r == 3) test_setenv("CLT_FIT_FLUSH", "0");
    clt_graph *g = NULL;
    clt_optimizer *opt = NULL;
    fashion_mlp(g_ctx, 128, &g, &opt);
    clt_fit_options fo;
    clt_fit_options_init(&fo);
    fo.epochs = 3; /* 2000 = 62 full batches and one of 16 */
    clt_epoch_stats hist[3];
    ck_assert_ok(clt_fit(g, opt, train, test, &fo, hist));
    for (int e = 0; e < 3; e++) runs[r][e] = (float)hist[e].train_loss;
    /* Stated accuracy for 3 epochs on 2,000 images: at least 0.70. */
    ck_assert_msg(hist[2].test_acc >= 0.70, "test accuracy %.4f",
                  hist[2].test_acc);
    ck_assert(hist[2].train_loss < hist[0].train_loss);
    clt_metrics m;
    ck_assert_ok(clt_evaluate(g, test, 32, &m));
    ck_assert_int_eq(m.samples, 1000);
    ck_assert(fabs(m.accuracy - hist[2].test_acc) < 1e-9);
    clt_optimizer_destroy(opt);
    clt_graph_destroy(g);
  }
  test_setenv("CLT_FIT_AHEAD", NULL);
  test_setenv("CLT_FIT_FLUSH", NULL);
  for (int r = 1; r < 4; r++)
    ck_assert_mem_eq(runs[0], runs[r], sizeof runs[0]);
  clt_dataset_destroy(train);
  clt_dataset_destroy(test);
}
END_TEST

/* What an epoch reports of its time (clt_epoch_stats): the host's waits
 * always, and with profiling on the device time of its training by op,
 * given during the epoch's report only; profiling changes no bit. */
typedef struct profile_seen {
  int epochs;
  bool rows_add_up, has_upload, has_unit;
} profile_seen;

static void on_epoch_profile(const clt_progress *p, void *user) {
  profile_seen *seen = user;
  if (p->phase != CLT_PHASE_EPOCH) return;
  const clt_epoch_stats *s = p->stats;
  seen->epochs++;
  double sum = 0.0;
  for (size_t i = 0; i < s->profile_rows; i++) {
    sum += s->profile[i].seconds;
    if (strcmp(s->profile[i].op, "upload") == 0)
      seen->has_upload = s->profile[i].calls == 2 * 10; /* labels, bytes */
    if (strcmp(s->profile[i].op, "unit_u8_f32") == 0)
      seen->has_unit = s->profile[i].calls == 10;
  }
  /* Untimed (clt_profile_timed): every row's time and their sum NaN. */
  seen->rows_add_up = s->profile_rows > 0 &&
                      (isnan(sum) ? isnan(s->device_seconds)
                                  : fabs(sum - s->device_seconds) <=
                                        1e-9 + 1e-9 * sum);
}

START_TEST(test_fit_profile) {
  clt_dataset *train = NULL;
  ck_assert_ok(clt_dataset_load(g_ctx, "fashion-mnist", true, 300, &train));
  float losses[2][2];
  for (int profiling = 0; profiling < 2; profiling++) {
    clt_context *ctx = context_profiling(profiling);
    clt_graph *g = NULL;
    clt_optimizer *opt = NULL;
    fashion_mlp(ctx, 16, &g, &opt);
    clt_fit_options fo;
    clt_fit_options_init(&fo);
    fo.epochs = 2; /* 300 = 9 batches of 32 and one of 12 */
    profile_seen seen = {0};
    fo.progress = on_epoch_profile;
    fo.progress_user = &seen;
    clt_epoch_stats hist[2];
    ck_assert_ok(clt_fit(g, opt, train, NULL, &fo, hist));
    ck_assert_int_eq(seen.epochs, 2);
    for (int e = 0; e < 2; e++) {
      const clt_epoch_stats *s = &hist[e];
      losses[profiling][e] = (float)s->train_loss;
      ck_assert_ptr_null(s->profile); /* the report's only */
      ck_assert_uint_eq(s->profile_rows, 0);
      ck_assert(s->wait_data_seconds >= 0.0 && s->wait_device_seconds >= 0.0);
      ck_assert(s->wait_data_seconds + s->wait_device_seconds <= s->seconds);
      if (!profiling) {
        ck_assert(s->device_seconds == 0.0);
        continue;
      }
      /* A device whose profiling clock does not run (Mesa's rusticl
       * 22.3) has no busy time to tell: unknown, not 0. */
      if (!clt_profile_timed(ctx)) {
        ck_assert(isnan(s->device_seconds));
        continue;
      }
      /* An in-order queue's busy time, within the epoch (the device's
       * clock against the host's: 10 ms of slack). */
      ck_assert_msg(s->device_seconds > 0.0 &&
                        s->device_seconds <= s->seconds + 0.01,
                    "device %g s of %g s", s->device_seconds, s->seconds);
    }
    ck_assert(seen.rows_add_up == (bool)profiling);
    ck_assert(seen.has_upload == (bool)profiling);
    ck_assert(seen.has_unit == (bool)profiling);
    clt_optimizer_destroy(opt);
    clt_graph_destroy(g);
    clt_context_destroy(ctx);
  }
  ck_assert_mem_eq(losses[0], losses[1], sizeof losses[0]);
  clt_dataset_destroy(train);
}
END_TEST

START_TEST(test_fit_rejects_bad_data) {
  clt_dataset *test = NULL;
  ck_assert_ok(clt_dataset_load(g_ctx, "fashion-mnist", false, 100, &test));
  clt_graph *g = NULL;
  clt_optimizer *opt = NULL;
  ck_assert_ok(graph_from_text("input shape=1x10x10\nflatten\ndense units=10\n"
                               "softmax_cross_entropy\n",
                               &g));
  ck_assert_ok(clt_graph_compile(g, 16, 1));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_SGD);
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.batch = 16;
  ck_assert_int_eq(clt_fit(g, opt, test, NULL, &fo, NULL), CLT_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx), "28"));
  fo.batch = 64; /* more than compiled for */
  ck_assert_int_eq(clt_fit(g, opt, test, NULL, &fo, NULL),
                   CLT_ERR_INVALID_ARGUMENT);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  /* The fit loop's measuring switches refuse what they cannot mean,
   * naming the variable, before any step. */
  ck_assert_ok(graph_from_text("input shape=1x28x28\nflatten\ndense units=10\n"
                               "softmax_cross_entropy\n",
                               &g));
  ck_assert_ok(clt_graph_compile(g, 16, 1));
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  fo.batch = 16;
  const char *bad[][2] = {{"CLT_FIT_AHEAD", "9"}, {"CLT_FIT_AHEAD", "two"},
                          {"CLT_PINNED", "yes"}, {"CLT_FIT_FLUSH", "no"}};
  for (int i = 0; i < 4; i++) {
    test_setenv(bad[i][0], bad[i][1]);
    ck_assert_int_eq(clt_fit(g, opt, test, NULL, &fo, NULL),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx), bad[i][0]));
    test_setenv(bad[i][0], NULL);
  }
  ck_assert_ok(clt_fit(g, opt, test, NULL, &fo, NULL));
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_dataset_destroy(test);
}
END_TEST

START_TEST(test_nan_stops_training) {
  clt_dataset *train = NULL;
  ck_assert_ok(clt_dataset_load(g_ctx, "fashion-mnist", false, 256, &train));
  clt_graph *g = NULL;
  clt_optimizer *opt = NULL;
  ck_assert_ok(graph_from_text("input shape=1x28x28\nflatten\n"
                               "dense units=10\nsoftmax_cross_entropy\n",
                               &g));
  ck_assert_ok(clt_graph_compile(g, 32, 1));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_SGD);
  oo.lr = 1e38f; /* logits overflow at once */
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.epochs = 2;
  ck_assert_int_eq(clt_fit(g, opt, train, NULL, &fo, NULL), CLT_ERR_NAN);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx), "epoch 1"));
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_dataset_destroy(train);
}
END_TEST

START_TEST(test_schedules) {
  clt_graph *g = NULL;
  clt_optimizer *opt = NULL;
  ck_assert_ok(graph_from_text(MLP("relu"), &g));
  ck_assert_ok(clt_graph_compile(g, 4, 1));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_SGD);
  oo.lr = 0.1f;
  oo.schedule = CLT_SCHEDULE_STEP;
  oo.step_epochs = 2;
  oo.gamma = 0.5f;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  ck_assert_float_eq_tol(clt_optimizer_set_epoch(opt, 1), 0.1f, 1e-7f);
  ck_assert_float_eq_tol(clt_optimizer_set_epoch(opt, 2), 0.05f, 1e-7f);
  ck_assert_float_eq_tol(clt_optimizer_set_epoch(opt, 5), 0.025f, 1e-7f);
  clt_optimizer_destroy(opt);
  oo.schedule = CLT_SCHEDULE_COSINE;
  oo.total_epochs = 4;
  oo.min_lr = 0.0f;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  ck_assert_float_eq_tol(clt_optimizer_set_epoch(opt, 0), 0.1f, 1e-7f);
  ck_assert_float_eq_tol(clt_optimizer_set_epoch(opt, 2), 0.05f, 1e-6f);
  ck_assert_float_eq_tol(clt_optimizer_set_epoch(opt, 4), 0.0f, 1e-7f);
  clt_optimizer_destroy(opt);
  oo.nesterov = true; /* without momentum */
  ck_assert_int_eq(clt_optimizer_create(g, &oo, &opt),
                   CLT_ERR_INVALID_ARGUMENT);
  /* What belongs to another optimizer is refused, not ignored. */
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  oo.momentum = 0.9f;
  ck_assert_int_eq(clt_optimizer_create(g, &oo, &opt),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g->ctx), "momentum"));
  clt_optimizer_options_init(&oo, CLT_OPT_RMSPROP);
  ck_assert_float_eq(oo.alpha, 0.99f);
  ck_assert_float_eq(oo.lr, 0.001f);
  oo.momentum = 0.9f;
  oo.nesterov = true;
  ck_assert_int_eq(clt_optimizer_create(g, &oo, &opt),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g->ctx), "Nesterov"));
  oo.nesterov = false;
  oo.alpha = 1.0f;
  ck_assert_int_eq(clt_optimizer_create(g, &oo, &opt),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g->ctx), "alpha"));
  oo.alpha = NAN;
  ck_assert_int_eq(clt_optimizer_create(g, &oo, &opt),
                   CLT_ERR_INVALID_ARGUMENT);
  oo.alpha = 0.0f; /* the last gradient's square alone */
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  clt_optimizer_destroy(opt);
  oo.kind = (clt_optimizer_kind)7;
  ck_assert_int_eq(clt_optimizer_create(g, &oo, &opt),
                   CLT_ERR_INVALID_ARGUMENT);
  clt_graph_destroy(g);
}
END_TEST

/* PyTorch's OneCycleLR, written from its documentation: the rate and the
 * momentum at step k of total. */
static void onecycle_ref(double k, double total, double max_lr, double *lr,
                         double *mom) {
  double first = max_lr / 25.0, last = first / 1e4;
  double up = 0.3 * total - 1.0, end = total - 1.0;
  double t = k <= up ? k / up : (k - up) / (end - up);
  double a = k <= up ? first : max_lr, b = k <= up ? max_lr : last;
  double ma = k <= up ? 0.95 : 0.85, mb = k <= up ? 0.85 : 0.95;
  *lr = b + (a - b) / 2.0 * (1.0 + cos(M_PI * t));
  *mom = mb + (ma - mb) / 2.0 * (1.0 + cos(M_PI * t));
}

/* The one-cycle schedule step by step: each step's rate and beta1 as
 * PyTorch's, and Adam's update with that beta1 against a host Adam on the
 * same gradients; the schedule's options checked. */
START_TEST(test_onecycle) {
  clt_graph *g = NULL;
  clt_optimizer *opt = NULL;
  ck_assert_ok(graph_from_text(MLP("relu"), &g));
  ck_assert_ok(clt_graph_compile(g, 4, 1));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  ck_assert_float_eq(oo.pct_start, 0.3f);
  oo.lr = 0.05f;
  oo.schedule = CLT_SCHEDULE_ONECYCLE;
  oo.total_epochs = 2;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  const int per_epoch = 7, total = 2 * per_epoch;
  clt_optimizer_set_steps_per_epoch(opt, per_epoch);
  int64_t n = clt_graph_parameter_count(g);
  double *m = calloc((size_t)n, sizeof *m), *v = calloc((size_t)n, sizeof *v);
  float *p = malloc((size_t)n * sizeof *p), *gr = malloc((size_t)n * sizeof *gr);
  float *after = malloc((size_t)n * sizeof *after);
  clt_tensor pre = clt_tensor_slice_1d(g->params, 0, n);
  clt_tensor gpre = clt_tensor_slice_1d(g->grads, 0, n);
  double b2_power = 1.0;
  for (int e = 0; e < 2; e++) {
    double lr0, mom0;
    onecycle_ref(e * per_epoch, total, 0.05, &lr0, &mom0);
    ck_assert_float_eq_tol(clt_optimizer_set_epoch(opt, e), lr0, 1e-7);
    for (int s = 0; s < per_epoch; s++) {
      int k = e * per_epoch + s;
      double lr, mom;
      onecycle_ref(k, total, 0.05, &lr, &mom);
      random_batch(g, 4, 100 + (uint64_t)k, false);
      ck_assert_ok(clt_graph_forward(g, true));
      ck_assert_ok(clt_graph_backward(g));
      ck_assert_ok(clt_tensor_download(&pre, p));
      ck_assert_ok(clt_tensor_download(&gpre, gr));
      ck_assert_ok(clt_optimizer_step(opt));
      ck_assert_msg(fabs(clt_optimizer_lr(opt) - lr) <= 1e-6 * lr,
                    "step %d: rate %g, PyTorch's %g", k,
                    (double)clt_optimizer_lr(opt), lr);
      ck_assert_msg(fabs(clt_optimizer_momentum(opt) - mom) <= 1e-6,
                    "step %d: beta1 %g, PyTorch's %g", k,
                    (double)clt_optimizer_momentum(opt), mom);
      ck_assert_ok(clt_tensor_download(&pre, after));
      /* torch.optim.Adam with this step's beta1 (bias correction with it
       * too, as PyTorch computes 1 - beta1^step from the current one). */
      b2_power *= 0.999;
      double bias1 = 1.0 - pow(mom, k + 1), bias2 = 1.0 - b2_power;
      for (int64_t i = 0; i < n; i++) {
        m[i] = mom * m[i] + (1.0 - mom) * gr[i];
        v[i] = 0.999 * v[i] + 0.001 * (double)gr[i] * gr[i];
        double want = p[i] - lr * (m[i] / bias1) /
                                 (sqrt(v[i] / bias2) + 1e-8);
        ck_assert_msg(fabs(after[i] - want) <= 2e-6 * fmax(1.0, fabs(want)),
                      "step %d, parameter %lld: %.9g, host Adam %.9g", k,
                      (long long)i, (double)after[i], want);
      }
    }
  }
  clt_optimizer_destroy(opt);
  /* SGD without momentum gets the cycled one (PyTorch's default), unless
   * cycle_momentum is off. */
  clt_optimizer_options_init(&oo, CLT_OPT_SGD);
  oo.schedule = CLT_SCHEDULE_ONECYCLE;
  oo.total_epochs = 10; /* by epochs: the rise ends at epoch 2 */
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  ck_assert_float_eq_tol(clt_optimizer_momentum(opt), 0.95f, 1e-7f);
  ck_assert_float_eq_tol(clt_optimizer_lr(opt), 0.01f / 25.0f, 1e-9f);
  clt_optimizer_destroy(opt);
  oo.cycle_momentum = false;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  ck_assert_float_eq(clt_optimizer_momentum(opt), 0.0f);
  clt_optimizer_destroy(opt);
  const char *bad[] = {"warmup", "pct_start", "total"};
  for (int b = 0; b < 3; b++) {
    clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
    oo.schedule = CLT_SCHEDULE_ONECYCLE;
    oo.total_epochs = b == 2 ? 0 : 3;
    oo.warmup_epochs = b == 0;
    if (b == 1) oo.pct_start = 1.0f;
    ck_assert_int_eq(clt_optimizer_create(g, &oo, &opt),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clt_context_last_error(g->ctx), bad[b]), "%s",
                  clt_context_last_error(g->ctx));
  }
  free(m);
  free(v);
  free(p);
  free(gr);
  free(after);
  clt_graph_destroy(g);
}
END_TEST

/* ---- freezing layers (clt_graph_set_trainable) ---------------------------- */

/* A conv net with a batch norm, a conv in the middle and a dense head:
 * freezing any of them leaves trainable layers on both sides. */
#define FREEZE_MODEL                                                           \
  "input shape=2x7x7\n"                                                        \
  "conv2d name=c1 filters=3 kernel=3 activation=relu\n"                        \
  "batchnorm name=bn\n"                                                        \
  "conv2d name=c2 filters=4 kernel=3 padding=1\n"                              \
  "relu name=r2\n"                                                             \
  "flatten name=flat\n"                                                        \
  "dense name=fc units=5\n"                                                    \
  "softmax_cross_entropy\n"

static const char *const freeze_params[] = {
    "c1.weight", "c1.bias", "bn.weight", "bn.bias", "bn.running_mean",
    "bn.running_var", "c2.weight", "c2.bias", "fc.weight", "fc.bias"};
#define N_FREEZE_PARAMS 10

static int64_t numel_of(clt_graph *g, const char *name) {
  clt_param_info info;
  for (int i = 0; i < clt_graph_param_tensors(g); i++) {
    ck_assert_ok(clt_graph_param_info(g, i, &info));
    if (!strcmp(info.name, name)) return info.numel;
  }
  ck_abort_msg("no tensor %s", name);
  return 0;
}

/* Every tensor of g, by name, into one malloc'd buffer (in the order of
 * freeze_params; offsets into it in at[], the total in at[N]). */
static float *params_by_name(clt_graph *g, int64_t *at) {
  int64_t total = 0;
  for (int i = 0; i < N_FREEZE_PARAMS; i++) {
    at[i] = total;
    total += numel_of(g, freeze_params[i]);
  }
  at[N_FREEZE_PARAMS] = total;
  float *v = malloc((size_t)total * sizeof(float));
  for (int i = 0; i < N_FREEZE_PARAMS; i++)
    ck_assert_ok(clt_graph_get_param(g, freeze_params[i], v + at[i],
                                     at[i + 1] - at[i]));
  return v;
}

/* A parameter's gradient, downloaded (by node and index). */
static float *grad_of(clt_graph *g, const char *node, int k) {
  clt_param *p = &node_named(g, node)->params[k];
  float *v = malloc((size_t)p->numel * sizeof(float));
  ck_assert_ok(clt_tensor_download(&p->grad, v));
  return v;
}

static void expect_close(const float *a, const float *b, int64_t n,
                         const char *what) {
  for (int64_t i = 0; i < n; i++)
    ck_assert_msg(fabsf(a[i] - b[i]) <= 1e-5f * fmaxf(1.0f, fabsf(a[i])),
                  "%s[%lld]: %g against %g", what, (long long)i, a[i], b[i]);
}

/* Freezing keeps every value where a compiled graph moves them, takes the
 * frozen weights out of the trainable count, skips the backward of
 * layers with nothing trainable upstream, and leaves the other gradients
 * as the unfrozen graph's. */
START_TEST(test_freeze_gradients) {
  clt_graph *a = NULL, *b = NULL;
  ck_assert_ok(graph_from_text(FREEZE_MODEL, &a));
  ck_assert_ok(graph_from_text(FREEZE_MODEL, &b));
  ck_assert_ok(clt_graph_compile(a, 3, 9));
  ck_assert_ok(clt_graph_compile(b, 3, 9));
  int64_t at[N_FREEZE_PARAMS + 1], at2[N_FREEZE_PARAMS + 1];
  float *before = params_by_name(b, at);
  int64_t all = clt_graph_parameter_count(a);
  /* the one in the middle, after compiling: the values move */
  ck_assert_ok(clt_graph_set_trainable(b, "c2", false));
  int64_t c2 = 4 * 3 * 3 * 3 + 4;
  ck_assert_int_eq(clt_graph_parameter_count(b), all - c2);
  float *after = params_by_name(b, at2);
  ck_assert_mem_eq(before, after, (size_t)at[N_FREEZE_PARAMS] * 4);
  const char *names[4] = {NULL};
  ck_assert_int_eq(clt_graph_frozen_layers(b, names, 4), 1);
  ck_assert_str_eq(names[0], "c2");
  clt_param_info info;
  for (int i = 0; i < clt_graph_param_tensors(b); i++) {
    ck_assert_ok(clt_graph_param_info(b, i, &info));
    if (!strncmp(info.name, "c2.", 3)) ck_assert(!info.trainable);
    if (!strncmp(info.name, "fc.", 3)) ck_assert(info.trainable);
  }
  char summary[2048];
  clt_graph_summary(b, summary, sizeof summary);
  ck_assert_msg(strstr(summary, "frozen") && strstr(summary, "non-trainable"),
                "%s", summary);

  random_batch(a, 3, 21, false);
  random_batch(b, 3, 21, false);
  ck_assert_ok(clt_graph_forward(a, true));
  ck_assert_ok(clt_graph_backward(a));
  ck_assert_ok(clt_graph_forward(b, true));
  ck_assert_ok(clt_graph_backward(b));
  /* The gradient passes through the frozen c2 to c1 and bn. */
  const char *trained[][2] = {{"c1", "0"}, {"c1", "1"}, {"bn", "0"},
                              {"bn", "1"}, {"fc", "0"}, {"fc", "1"}};
  for (int i = 0; i < 6; i++) {
    int k = trained[i][1][0] - '0';
    float *ga = grad_of(a, trained[i][0], k), *gb = grad_of(b, trained[i][0], k);
    expect_close(ga, gb, node_named(a, trained[i][0])->params[k].numel,
                 trained[i][0]);
    free(ga);
    free(gb);
  }

  /* Freezing what lies below c2 instead: c1 and bn run no backward.
   * (The forward moved bn's running statistics: the values from here.) */
  free(before);
  before = params_by_name(b, at);
  ck_assert_ok(clt_graph_set_trainable(b, "c2", true));
  ck_assert_int_eq(clt_graph_parameter_count(b), all);
  ck_assert_ok(clt_graph_set_trainable(b, "c1", false));
  ck_assert_ok(clt_graph_set_trainable(b, "bn", false));
  ck_assert(!node_named(b, "c1")->needs_grad);
  ck_assert(!node_named(b, "bn")->needs_grad);
  ck_assert(node_named(b, "c2")->needs_grad);
  ck_assert_int_eq(clt_graph_frozen_layers(b, names, 4), 2);
  ck_assert_str_eq(names[0], "c1");
  ck_assert_str_eq(names[1], "bn");
  float *again = params_by_name(b, at2);
  ck_assert_mem_eq(before, again, (size_t)at[N_FREEZE_PARAMS] * 4);
  random_batch(b, 3, 21, false);
  ck_assert_ok(clt_graph_forward(b, true));
  ck_assert_ok(clt_graph_backward(b));
  for (int k = 0; k < 2; k++) {
    float *ga = grad_of(a, "c2", k), *gb = grad_of(b, "c2", k);
    expect_close(ga, gb, node_named(a, "c2")->params[k].numel, "c2");
    free(ga);
    free(gb);
  }
  free(before);
  free(after);
  free(again);
  clt_graph_destroy(a);
  clt_graph_destroy(b);
}
END_TEST

/* Steps leave frozen weights as they are, in fp32 and mixed precision,
 * with weight decay and clipping; the batch norm's running statistics
 * still move. An optimizer made before a change refuses to step; with
 * every layer frozen a step changes nothing. */
START_TEST(test_freeze_training) {
  for (int mixed = 0; mixed < 2; mixed++) {
    clt_graph *g = NULL;
    ck_assert_ok(graph_from_text(FREEZE_MODEL, &g));
    ck_assert_ok(clt_graph_set_trainable(g, "bn", false)); /* before */
    if (mixed) ck_assert_ok(clt_graph_set_precision(g, CLT_PRECISION_MIXED));
    ck_assert_ok(clt_graph_compile(g, 5, 3));
    clt_optimizer_options oo;
    clt_optimizer_options_init(&oo, CLT_OPT_ADAMW);
    oo.weight_decay = 0.1f;
    oo.clip_norm = 0.5f;
    clt_optimizer *stale = NULL, *opt = NULL;
    ck_assert_ok(clt_optimizer_create(g, &oo, &stale));
    ck_assert_ok(clt_graph_set_trainable(g, "c2", false)); /* after */
    int64_t at[N_FREEZE_PARAMS + 1];
    float *start = params_by_name(g, at);
    random_batch(g, 5, 4, false);
    ck_assert_ok(clt_graph_forward(g, true));
    ck_assert_ok(clt_graph_backward(g));
    ck_assert_int_eq(clt_optimizer_step(stale), CLT_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clt_context_last_error(g_ctx), "make the optimizer "
                                                        "again"),
                  "%s", clt_context_last_error(g_ctx));
    clt_optimizer_destroy(stale);
    ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
    for (int s = 0; s < 3; s++) {
      random_batch(g, 5, 4 + (uint64_t)s, false);
      ck_assert_ok(clt_graph_forward(g, true));
      ck_assert_ok(clt_graph_backward(g));
      ck_assert_ok(clt_optimizer_step(opt));
    }
    float *end = params_by_name(g, at);
    for (int i = 0; i < N_FREEZE_PARAMS; i++) {
      const char *n = freeze_params[i];
      int64_t len = at[i + 1] - at[i];
      bool same = !memcmp(start + at[i], end + at[i], (size_t)len * 4);
      bool frozen = !strcmp(n, "bn.weight") || !strcmp(n, "bn.bias") ||
                    !strncmp(n, "c2.", 3);
      ck_assert_msg(same == frozen, "%s %s (mixed %d)", n,
                    same ? "unchanged" : "changed", mixed);
    }
    if (mixed) { /* a frozen weight is read as fp16 too, as a trained one */
      clt_param *w = &node_named(g, "c2")->params[0];
      float *seen = malloc((size_t)w->numel * sizeof *seen);
      ck_assert_ok(clt_tensor_download(&w->value, seen));
      for (int64_t i = 0; i < w->numel; i++)
        ck_assert_msg(is_half_value(seen[i]), "c2.weight[%lld] %a", (long long)i,
                      (double)seen[i]);
      free(seen);
    }
    clt_optimizer_destroy(opt);

    /* Every layer frozen: nothing to update. */
    ck_assert_ok(clt_graph_set_trainable(g, NULL, false));
    ck_assert_int_eq(clt_graph_parameter_count(g), 0);
    ck_assert_int_eq(clt_graph_frozen_layers(g, NULL, 0), 4);
    ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
    free(start);
    start = params_by_name(g, at);
    random_batch(g, 5, 8, false);
    ck_assert_ok(clt_graph_forward(g, false)); /* statistics stay */
    ck_assert_ok(clt_optimizer_step(opt));
    free(end);
    end = params_by_name(g, at);
    ck_assert_mem_eq(start, end, (size_t)at[N_FREEZE_PARAMS] * 4);
    clt_optimizer_destroy(opt);
    free(start);
    free(end);
    clt_graph_destroy(g);
  }
}
END_TEST

/* Frozen layers between trainable ones, in every way of working their
 * backward has: a 3x3 conv2d, a layer norm over each pixel's channels (99
 * pixels: runs of 16 and a tail), a depthwise and a 1x1 conv2d, and a
 * dense layer. Their backward makes the input's gradient only: their
 * weight gradients keep what they held (NaN here), and c1's and f2's are
 * the unfrozen graph's in the same way. */
#define MIDDLE_MODEL                                                           \
  "input shape=3x9x11\n"                                                       \
  "conv2d name=c1 filters=5 kernel=3 padding=1 activation=relu\n"             \
  "conv2d name=c2 filters=7 kernel=3 padding=1 activation=relu\n"             \
  "layernorm name=ln over=channels\n"                                         \
  "depthwise_conv2d name=d kernel=3 padding=1\n"                              \
  "conv2d name=c3 filters=3 kernel=1\n"                                       \
  "flatten\n"                                                                 \
  "dense name=f1 units=6 activation=relu\n"                                   \
  "dense name=f2 units=4\n"                                                   \
  "softmax_cross_entropy\n"

static const char *const middle_ways[] = {
    "gemm + swap",       "nchw direct",    "nchw direct c^T",
    "rows",              "direct",         "direct per element",
    "tiled 16",          "tiled 8",        "tiled 16 small",
    "tiled 8 small",     "pointwise",      "implicit 64x64",
    "implicit 16x64",    "implicit 128x128", "per element",
    "per 4 rows",        "per 4 rows, eights", "per pixel",
    "runs of 16",        "runs of 16, sums in one pass"};

START_TEST(test_freeze_middle_every_way) {
  const char *way = middle_ways[_i];
  static const char *const frozen[] = {"c2", "ln", "d", "c3", "f1"};
  const int n_frozen = (int)(sizeof frozen / sizeof *frozen);
  clt_graph *g[2] = {NULL, NULL};
  for (int k = 0; k < 2; k++) {
    ck_assert_ok(graph_from_text(MIDDLE_MODEL, &g[k]));
    for (int f = 0; k == 1 && f < n_frozen; f++)
      ck_assert_ok(clt_graph_set_trainable(g[k], frozen[f], false));
    g[k]->test_way_name = way;
    ck_assert_ok(clt_graph_compile(g[k], 3, 5));
    random_batch(g[k], 3, 23, false);
    ck_assert_ok(clt_graph_forward(g[k], true));
  }
  /* Where a frozen layer offers the way, it took it for its backward. */
  int taken = 0;
  for (int i = 0; i < clt_graph_plan_count(g[1]); i++) {
    clt_plan_info p;
    ck_assert_ok(clt_graph_plan_info(g[1], i, &p));
    if (strcmp(p.product, "backward layout")) continue;
    for (int c = 0; c < p.candidate_count; c++)
      if (!strcmp(p.candidates[c].name, way)) {
        ck_assert_str_eq(p.candidates[p.chosen].name, way);
        taken++;
      }
  }
  ck_assert_msg(taken > 0, "no frozen layer offers '%s'", way);
  for (int f = 0; f < n_frozen; f++) {
    clt_graph_node *n = node_named(g[1], frozen[f]);
    for (int k = 0; k < n->n_params; k++)
      ck_assert_ok(clt_tensor_fill(&n->params[k].grad, NAN));
  }
  ck_assert_ok(clt_graph_backward(g[0]));
  ck_assert_ok(clt_graph_backward(g[1]));
  for (int f = 0; f < n_frozen; f++) {
    clt_graph_node *n = node_named(g[1], frozen[f]);
    for (int k = 0; k < n->n_params; k++) {
      float *v = grad_of(g[1], frozen[f], k);
      for (int64_t i = 0; i < n->params[k].numel; i++)
        ck_assert_msg(isnan(v[i]), "%s (%s): %s gradient [%lld] written",
                      way, frozen[f], n->params[k].suffix, (long long)i);
      free(v);
    }
  }
  const char *trained[] = {"c1", "f2"};
  for (int t = 0; t < 2; t++)
    for (int k = 0; k < 2; k++) {
      float *want = grad_of(g[0], trained[t], k),
            *got = grad_of(g[1], trained[t], k);
      expect_close(want, got, node_named(g[0], trained[t])->params[k].numel,
                   trained[t]);
      free(want);
      free(got);
    }
  clt_graph_destroy(g[0]);
  clt_graph_destroy(g[1]);
}
END_TEST

/* Calls of the weights' tiling made for the forward of layer L since the
 * profile's last reset. */
static uint64_t tilings(clt_context *ctx, const char *layer) {
  clt_profile_row *rows = NULL;
  size_t n = 0;
  ck_assert_ok(clt_profile_summary_by_layer(ctx, &rows, &n));
  char pass[80];
  snprintf(pass, sizeof pass, "%s forward", layer);
  uint64_t calls = 0;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(rows[i].layer, pass) &&
        !strcmp(rows[i].op, "conv_tile_weights"))
      calls += rows[i].calls;
  free(rows);
  return calls;
}

/* A frozen convolution in a tiled way tiles its weights once, not at
 * every step as the trained c1 must; a write from outside
 * (clt_graph_set_param) tiles them again, and the forward reads the new
 * tiles. Both precisions (mixed: the tiles of the weights' fp16 copy,
 * made again after each step). */
START_TEST(test_freeze_tiles_kept) {
  bool mixed = _i == 1;
  clt_context *ctx = context_profiling(true);
  clt_graph *g = NULL;
  clt_optimizer *opt = NULL;
  ck_assert_ok(graph_from_text_on(ctx, MIDDLE_MODEL, &g));
  if (mixed) ck_assert_ok(clt_graph_set_precision(g, CLT_PRECISION_MIXED));
  ck_assert_ok(clt_graph_set_trainable(g, "c2", false));
  g->test_way_name = "tiled 8 small";
  ck_assert_ok(clt_graph_compile(g, 3, 5));
  int tiled = 0;
  for (int i = 0; i < clt_graph_plan_count(g); i++) {
    clt_plan_info p;
    ck_assert_ok(clt_graph_plan_info(g, i, &p));
    if (!strcmp(p.product, "forward layout") &&
        (!strcmp(p.layer, "c1") || !strcmp(p.layer, "c2"))) {
      ck_assert_str_eq(p.candidates[p.chosen].name, "tiled 8 small");
      tiled++;
    }
  }
  ck_assert_int_eq(tiled, 2);
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  clt_profile_reset(ctx);
  for (int step = 0; step < 3; step++) {
    random_batch(g, 3, 40 + (uint64_t)step, false);
    train_steps(g, opt, 1);
  }
  ck_assert_uint_eq(tilings(ctx, "c1"), 3);
  ck_assert_uint_eq(tilings(ctx, "c2"), 1);

  /* New weights from outside: tiled again at the next forward, which
   * gives the output of a new graph (same way) given the same weights. */
  clt_param *w = &node_named(g, "c2")->params[0];
  float *host = malloc((size_t)w->numel * sizeof *host);
  clt_random_fill(host, w->numel, 77, -0.5f, 0.5f);
  ck_assert_ok(clt_graph_set_param(g, "c2.weight", host, w->numel));
  free(host);
  clt_graph *fresh = NULL;
  ck_assert_ok(graph_from_text_on(ctx, MIDDLE_MODEL, &fresh));
  if (mixed)
    ck_assert_ok(clt_graph_set_precision(fresh, CLT_PRECISION_MIXED));
  ck_assert_ok(clt_graph_set_trainable(fresh, "c2", false));
  fresh->test_way_name = "tiled 8 small";
  ck_assert_ok(clt_graph_compile(fresh, 3, 6));
  ck_assert_int_eq(fresh->params->numel, g->params->numel);
  ck_assert_ok(clt_tensor_copy(fresh->params, g->params));
  clt_graph_params_written(fresh);
  float got[2][3 * 4];
  clt_graph *both[2] = {g, fresh};
  for (int k = 0; k < 2; k++) {
    random_batch(both[k], 3, 60, false);
    ck_assert_ok(clt_graph_forward(both[k], false));
    int64_t outputs = 0;
    ck_assert_ok(clt_graph_predictions(both[k], got[k], &outputs));
    ck_assert_int_eq(outputs, 4);
  }
  ck_assert_mem_eq(got[0], got[1], sizeof got[0]);
  clt_graph_destroy(fresh);
  ck_assert_uint_eq(tilings(ctx, "c2"), 3); /* once more, and fresh's */
  /* Trained again: tiled at every step, as c1. */
  ck_assert_ok(clt_graph_set_trainable(g, "c2", true));
  clt_optimizer_destroy(opt);
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  clt_profile_reset(ctx);
  for (int step = 0; step < 2; step++) {
    random_batch(g, 3, 50 + (uint64_t)step, false);
    train_steps(g, opt, 1);
  }
  ck_assert_uint_eq(tilings(ctx, "c2"), 2);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_context_destroy(ctx);
}
END_TEST

START_TEST(test_freeze_errors) {
  clt_graph *g = NULL;
  ck_assert_ok(graph_from_text(FREEZE_MODEL, &g));
  ck_assert_int_eq(clt_graph_set_trainable(g, "c3", false),
                   CLT_ERR_INVALID_ARGUMENT);
  const char *msg = clt_context_last_error(g_ctx);
  ck_assert_msg(strstr(msg, "'c3'") && strstr(msg, "c1, bn, c2, fc"), "%s",
                msg);
  ck_assert_int_eq(clt_graph_set_trainable(g, "flat", false),
                   CLT_ERR_INVALID_ARGUMENT);
  msg = clt_context_last_error(g_ctx);
  ck_assert_msg(strstr(msg, "flatten layer has no weights"), "%s", msg);
  ck_assert_int_eq(clt_graph_frozen_layers(g, NULL, 0), 0);
  /* Frozen before compiling: the weights are the same as unfrozen. */
  clt_graph *h = NULL;
  ck_assert_ok(graph_from_text(FREEZE_MODEL, &h));
  ck_assert_ok(clt_graph_set_trainable(h, "fc", false));
  ck_assert_ok(clt_graph_set_trainable(h, "fc", false)); /* no change */
  ck_assert_ok(clt_graph_compile(g, 2, 5));
  ck_assert_ok(clt_graph_compile(h, 2, 5));
  int64_t at[N_FREEZE_PARAMS + 1];
  float *a = params_by_name(g, at), *b = params_by_name(h, at);
  ck_assert_mem_eq(a, b, (size_t)at[N_FREEZE_PARAMS] * 4);
  free(a);
  free(b);
  clt_graph_destroy(g);
  clt_graph_destroy(h);
}
END_TEST

static Suite *graph_suite(void) {
  Suite *s = suite_create("graph");
  TCase *fd = tcase_create("finite differences");
  tcase_add_test(fd, test_fd_relu);
  tcase_add_test(fd, test_typed_builders_checked);
  tcase_add_test(fd, test_fd_leaky_relu);
  tcase_add_test(fd, test_fd_sigmoid);
  tcase_add_test(fd, test_fd_tanh);
  tcase_add_test(fd, test_fd_gelu);
  tcase_add_test(fd, test_fd_silu);
  tcase_add_test(fd, test_fd_elu);
  tcase_add_test(fd, test_fd_softplus);
  tcase_add_test(fd, test_fd_image_input);
  tcase_add_test(fd, test_fd_mse_softmax);
  tcase_add_test(fd, test_fd_mse_reshape);
  tcase_add_test(fd, test_fd_sigmoid_xent);
  tcase_add_test(fd, test_fd_mae);
  tcase_add_test(fd, test_fd_huber);
  tcase_add_test(fd, test_loss_gradient_in_place_or_copied);
  suite_add_tcase(s, fd);
  TCase *err = tcase_create("errors");
  tcase_add_test(err, test_shape_errors);
  tcase_add_test(err, test_op_error_names_layer);
  tcase_add_test(err, test_model_file_errors);
  tcase_add_test(err, test_c_api_shapes);
  suite_add_tcase(s, err);
  TCase *train = tcase_create("training");
  tcase_set_timeout(train, 300);
  tcase_add_test(train, test_steady_state_allocates_nothing);
  tcase_add_test(train, test_profile_by_layer);
  tcase_add_test(train, test_same_seed_same_losses);
  tcase_add_test(train, test_fit_2000_images);
  tcase_add_test(train, test_fit_profile);
  tcase_add_test(train, test_fit_rejects_bad_data);
  tcase_add_test(train, test_nan_stops_training);
  tcase_add_test(train, test_schedules);
  tcase_add_test(train, test_onecycle);
  suite_add_tcase(s, train);
  TCase *freeze = tcase_create("freezing");
  tcase_add_test(freeze, test_freeze_gradients);
  tcase_add_test(freeze, test_freeze_training);
  tcase_add_test(freeze, test_freeze_errors);
  tcase_add_loop_test(freeze, test_freeze_middle_every_way, 0,
                      (int)(sizeof middle_ways / sizeof *middle_ways));
  tcase_add_loop_test(freeze, test_freeze_tiles_kept, 0, 2);
  suite_add_tcase(s, freeze);
  return s;
}

int main(void) { return test_run_suite("graph", graph_suite); }
