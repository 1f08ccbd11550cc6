/* The C inference API: a model file and a checkpoint loaded the way an
 * embedding program does, predictions that match the graph's own, in
 * batches larger than the model's, clear errors for bad input, and
 * batches without labels. */
#include <math.h>
#include <unistd.h>

#include "graph_helpers.h"

#define MODEL                                                                  \
  "input shape=1x6x6\n"                                                        \
  "conv2d name=conv1 filters=2 kernel=3\n"                                     \
  "batchnorm name=bn1\n"                                                       \
  "relu\n"                                                                     \
  "flatten\n"                                                                  \
  "dense name=fc1 units=7 activation=tanh\n"                                   \
  "dropout name=drop rate=0.5\n"                                               \
  "dense name=fc2 units=5\n"                                                   \
  "softmax_cross_entropy\n"

static char g_dir[] = "/tmp/clt_infer_XXXXXX";

static const char *tmp_path(const char *name) {
  static char buf[4][256];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 256, "%s/%s", g_dir, name);
  return p;
}

static const char *write_text(const char *name, const char *text) {
  const char *path = tmp_path(name);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  return path;
}

/* Trains MODEL a little and saves its weights; returns the graph. */
static clt_graph *trained(const char *model_path, const char *weights) {
  clt_graph *g = NULL;
  ck_assert_ok(clt_graph_load_model(g_ctx, model_path, &g));
  ck_assert_ok(clt_graph_compile(g, 64, 5));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  oo.lr = 0.05f;
  clt_optimizer *opt = NULL;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  for (int i = 0; i < 4; i++) {
    random_batch(g, 16, 40 + (uint64_t)i, false);
    ck_assert_ok(clt_graph_forward(g, true));
    ck_assert_ok(clt_graph_backward(g));
    ck_assert_ok(clt_optimizer_step(opt));
  }
  ck_assert_ok(clt_checkpoint_save(g, opt, 1, NULL, weights));
  clt_optimizer_destroy(opt);
  return g;
}

START_TEST(test_predict_matches_graph) {
  const char *model_path = write_text("m.model", MODEL);
  const char *weights = tmp_path("m.safetensors");
  clt_graph *g = trained(model_path, weights);

  clt_model *m = NULL;
  ck_assert_ok(clt_model_load(g_ctx, model_path, weights, &m));
  int64_t shape[CLT_MAX_DIMS];
  ck_assert_int_eq(clt_model_input_shape(m, shape), 3);
  ck_assert(shape[0] == 1 && shape[1] == 6 && shape[2] == 6);
  ck_assert_int_eq(clt_model_input_size(m), 36);
  ck_assert_int_eq(clt_model_output_size(m), 5);

  /* 70 samples: more than one batch of the model (64). */
  enum { N = 70 };
  float *x = malloc(N * 36 * sizeof *x), *got = malloc(N * 5 * sizeof *got);
  float *want = malloc(N * 5 * sizeof *want);
  clt_random_fill(x, N * 36, 3, 0.0f, 1.0f);
  ck_assert_ok(clt_model_predict(m, x, N, got));
  /* The same, batch by batch, through the trained graph (evaluation mode:
   * running statistics, no dropout). */
  for (int64_t done = 0; done < N; done += 64) {
    int64_t n = N - done < 64 ? N - done : 64, outputs = 0;
    ck_assert_ok(clt_graph_set_batch(g, x + done * 36, NULL, n));
    ck_assert_ok(clt_graph_forward(g, false));
    ck_assert_ok(clt_graph_predictions(g, want + done * 5, &outputs));
    ck_assert_int_eq(outputs, 5);
  }
  for (int i = 0; i < N; i++) {
    double sum = 0.0;
    for (int c = 0; c < 5; c++) {
      ck_assert_msg(fabsf(got[i * 5 + c] - want[i * 5 + c]) <= 1e-6f,
                    "sample %d class %d: %g vs %g", i, c,
                    (double)got[i * 5 + c], (double)want[i * 5 + c]);
      sum += got[i * 5 + c];
    }
    ck_assert_msg(fabs(sum - 1.0) < 1e-5, "sample %d sums to %g", i, sum);
  }
  /* Deterministic: the same call gives the same bits. */
  float *again = malloc(N * 5 * sizeof *again);
  ck_assert_ok(clt_model_predict(m, x, N, again));
  ck_assert_mem_eq(got, again, N * 5 * sizeof *got);
  ck_assert_ok(clt_model_predict(m, x, 0, NULL));
  ck_assert_int_eq(clt_model_predict(m, x, -1, got), CLT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_eq(clt_model_graph(m)->ctx, g_ctx);
  free(x);
  free(got);
  free(want);
  free(again);
  clt_model_destroy(m);
  clt_graph_destroy(g);
}
END_TEST

START_TEST(test_load_errors) {
  const char *model_path = write_text("e.model", MODEL);
  const char *weights = tmp_path("e.safetensors");
  clt_graph_destroy(trained(model_path, weights));
  clt_model *m = NULL;

  ck_assert_int_eq(clt_model_load(g_ctx, tmp_path("none.model"), weights, &m),
                   CLT_ERR_IO);
  ck_assert_ptr_null(m);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx), "none.model"));

  ck_assert_int_eq(clt_model_load(g_ctx, model_path, tmp_path("none.st"), &m),
                   CLT_ERR_IO);
  ck_assert_ptr_null(m);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx), "none.st"));

  const char *wider = write_text(
      "w.model", "input shape=1x6x6\nconv2d name=conv1 filters=3 kernel=3\n"
                 "batchnorm name=bn1\nrelu\nflatten\n"
                 "dense name=fc1 units=7 activation=tanh\n"
                 "dropout name=drop rate=0.5\ndense name=fc2 units=5\n"
                 "softmax_cross_entropy\n");
  ck_assert_int_eq(clt_model_load(g_ctx, wider, weights, &m), CLT_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx),
                               "'conv1.weight' has shape [2, 1, 3, 3], the "
                               "model expects [3, 1, 3, 3]"));

  const char *no_loss = write_text("n.model", "input shape=4\ndense units=2\n");
  ck_assert_int_eq(clt_model_load(g_ctx, no_loss, NULL, &m),
                   CLT_ERR_UNSUPPORTED);

  /* No weights: the initialisation, still a working model. */
  ck_assert_ok(clt_model_load(g_ctx, model_path, NULL, &m));
  float x[36] = {0}, p[5];
  ck_assert_ok(clt_model_predict(m, x, 1, p));
  clt_model_destroy(m);
  clt_model_destroy(NULL);
}
END_TEST

/* One forward pass of n samples in evaluation mode, with labels or
 * targets (y) or without (NULL), set from the host or (device) from
 * tensors; its predictions into p. */
static void forward_eval(clt_graph *g, const float *x, const void *y,
                         int64_t n, bool device, float *p) {
  if (device) {
    int64_t nx = n * clt_graph_input_size(g);
    int64_t ny = clt_graph_loss_kind(g) == CLT_LOSS_MSE
                     ? n * clt_graph_output_size(g)
                     : n;
    clt_tensor *tx = NULL, *ty = NULL;
    ck_assert_ok(clt_tensor_create(g_ctx, CLT_F32, 1, &nx, &tx));
    ck_assert_ok(clt_tensor_upload(tx, x));
    if (y) {
      clt_dtype t = clt_graph_loss_kind(g) == CLT_LOSS_MSE ? CLT_F32 : CLT_I32;
      ck_assert_ok(clt_tensor_create(g_ctx, t, 1, &ny, &ty));
      ck_assert_ok(clt_tensor_upload(ty, y));
    }
    ck_assert_ok(clt_graph_set_batch_device(g, tx, ty, n));
    clt_tensor_destroy(tx);
    clt_tensor_destroy(ty);
  } else {
    ck_assert_ok(clt_graph_set_batch(g, x, y, n));
  }
  ck_assert_ok(clt_graph_forward(g, false));
  int64_t outputs = 0;
  ck_assert_ok(clt_graph_predictions(g, p, &outputs));
  ck_assert_int_eq(outputs, clt_graph_output_size(g));
}

/* A batch set without labels is inference: the forward pass makes the
 * prediction only (the same bits as after a pass with labels), adds
 * nothing to the metrics, and training or a backward pass on it is
 * refused with the reason; from the host and from device tensors alike,
 * for a classifier and a regression. */
START_TEST(test_batch_without_labels) {
  static const char *const models[] = {
      MODEL, "input shape=3\ndense units=4 activation=tanh\n"
             "dense units=2\nmse\n"};
  enum { N = 5 };
  for (int k = 0; k < 2; k++) {
    clt_graph *g = NULL;
    ck_assert_ok(graph_from_text(models[k], &g));
    ck_assert_ok(clt_graph_compile(g, 8, 3));
    int64_t in = clt_graph_input_size(g), out = clt_graph_output_size(g);
    float x[N * 36], targets[N * 2], want[N * 5], got[N * 5];
    int32_t labels[N] = {0, 4, 2, 1, 3};
    clt_random_fill(x, N * in, 9, 0.0f, 1.0f);
    clt_random_fill(targets, N * 2, 10, -1.0f, 1.0f);
    const void *y = k == 0 ? (const void *)labels : (const void *)targets;
    for (int device = 0; device < 2; device++) {
      clt_metrics m;
      forward_eval(g, x, y, N, device, want);
      ck_assert_ok(clt_graph_metrics(g, &m, true));
      ck_assert_int_eq(m.samples, N);
      ck_assert(m.loss > 0.0);
      forward_eval(g, x, NULL, N, device, got);
      ck_assert_mem_eq(got, want, (size_t)(N * out) * sizeof *got);
      ck_assert_ok(clt_graph_metrics(g, &m, true));
      ck_assert_int_eq(m.samples, 0);
      ck_assert_int_eq(clt_graph_backward(g), CLT_ERR_INVALID_ARGUMENT);
      ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx),
                                   "the last forward pass had no labels"));
      ck_assert_int_eq(clt_graph_forward(g, true), CLT_ERR_INVALID_ARGUMENT);
      ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx),
                                   "training needs labels"));
      /* Labels again: training goes on. */
      ck_assert_ok(clt_graph_set_batch(g, x, y, N));
      ck_assert_ok(clt_graph_forward(g, true));
      ck_assert_ok(clt_graph_backward(g));
      ck_assert_ok(clt_graph_metrics(g, &m, true));
      ck_assert_int_eq(m.samples, N);
    }
    clt_graph_destroy(g);
  }
}
END_TEST

/* Predictions read between a training forward and its backward pass
 * leave the gradients as they were (the same bits as without them), in
 * fp32, where the loss writes the gradient into its input's, and in mixed
 * precision, where the prediction and the gradient share one buffer. */
START_TEST(test_predictions_keep_gradients) {
  static const char *const model = "input shape=2x5x5\n"
                                   "conv2d filters=3 kernel=3\n"
                                   "relu\n"
                                   "flatten\n"
                                   "dense units=4\n"
                                   "softmax_cross_entropy\n";
  enum { N = 6 };
  for (int mixed = 0; mixed < 2; mixed++) {
    clt_graph *g = NULL;
    ck_assert_ok(graph_from_text(model, &g));
    ck_assert_ok(clt_graph_set_precision(
        g, mixed ? CLT_PRECISION_MIXED : CLT_PRECISION_FP32));
    ck_assert_ok(clt_graph_compile(g, 8, 3));
    int64_t np = g->param_count;
    float x[N * 50], probs[N * 4], again[N * 4];
    int32_t labels[N] = {0, 3, 2, 1, 3, 0};
    clt_random_fill(x, N * 50, 12, -1.0f, 1.0f);
    float *want = malloc((size_t)np * sizeof *want);
    float *got = malloc((size_t)np * sizeof *got);
    ck_assert_ok(clt_graph_set_batch(g, x, labels, N));
    ck_assert_ok(clt_graph_forward(g, true));
    ck_assert_ok(clt_graph_backward(g));
    ck_assert_ok(clt_tensor_download(g->grads, want));
    clt_metrics m;
    ck_assert_ok(clt_graph_metrics(g, &m, true));
    double loss = m.loss;

    ck_assert_ok(clt_graph_forward(g, true));
    int64_t outputs = 0;
    ck_assert_ok(clt_graph_predictions(g, probs, &outputs));
    ck_assert_int_eq(outputs, 4);
    for (int64_t i = 0; i < N; i++) {
      double sum = 0.0;
      for (int c = 0; c < 4; c++) sum += probs[i * 4 + c];
      ck_assert_double_eq_tol(sum, 1.0, 1e-5);
    }
    ck_assert_ok(clt_graph_predictions(g, again, &outputs));
    ck_assert_mem_eq(again, probs, sizeof probs);
    ck_assert_ok(clt_graph_backward(g));
    ck_assert_ok(clt_tensor_download(g->grads, got));
    ck_assert_msg(!memcmp(got, want, (size_t)np * sizeof *got),
                  "%s: predictions changed the gradients",
                  mixed ? "mixed" : "fp32");
    /* After the backward pass the predictions are still there, and the
     * metrics hold the one forward pass's loss. */
    ck_assert_ok(clt_graph_predictions(g, again, &outputs));
    ck_assert_mem_eq(again, probs, sizeof probs);
    ck_assert_ok(clt_graph_metrics(g, &m, true));
    ck_assert_int_eq(m.samples, N);
    ck_assert_double_eq_tol(m.loss, loss, 1e-6);
    free(want);
    free(got);
    clt_graph_destroy(g);
  }
}
END_TEST

/* A model with batch norms after convolutions: with and without a conv
 * bias, a ReLU after the batch norm, a strided convolution, and a 1x1
 * convolution that the add reads too. */
#define FOLD_MODEL                                                             \
  "input shape=3x7x7\n"                                                        \
  "conv2d name=c1 filters=5 kernel=3 padding=1 bias=false\n"                   \
  "batchnorm name=bn1\n"                                                       \
  "relu name=r1\n"                                                             \
  "conv2d name=c2 filters=6 kernel=3 stride=2 padding=1\n"                     \
  "batchnorm name=bn2\n"                                                       \
  "conv2d name=c3 filters=6 kernel=1\n"                                        \
  "batchnorm name=bn3\n"                                                       \
  "add name=sum inputs=bn3,c3\n"                                               \
  "flatten\n"                                                                  \
  "dense name=fc units=5\n"                                                    \
  "softmax_cross_entropy\n"

/* n's output for the batch just run, downloaded (count floats). */
static float *node_output(clt_graph *g, const char *name, int64_t count) {
  clt_graph_node *n = node_named(g, name);
  ck_assert_int_eq(count, g->batch * n->size);
  float *all = malloc((size_t)n->out->numel * sizeof(float));
  ck_assert_ok(clt_tensor_download(n->out, all));
  return all;
}

/* Within tol of want, relative to 1 + |want|. */
static void assert_within(const float *got, const float *want, int64_t n,
                          float tol, const char *what) {
  for (int64_t i = 0; i < n; i++)
    ck_assert_msg(fabsf(got[i] - want[i]) <= tol * (1.0f + fabsf(want[i])),
                  "%s [%lld]: %.9g against %.9g", what, (long long)i,
                  (double)got[i], (double)want[i]);
}

static void assert_close(const float *got, const float *want, int64_t n,
                         const char *what) {
  assert_within(got, want, n, 1e-5f, what);
}

/* Every value an fp16 value: what mixed precision's layers write. */
static void assert_fp16_values(const float *v, int64_t n, const char *what) {
  for (int64_t i = 0; i < n; i++)
    ck_assert_msg(is_half_value(v[i]), "%s [%lld]: %.9g is not an fp16 value",
                  what, (long long)i, (double)v[i]);
}

enum { FOLD_N = 19 };

/* The tolerance between a folded evaluation and the layers apart: float
 * rounding in fp32; under mixed precision the fp16 rounding of the
 * folded weights and bias, and of the output once where the layers
 * apart round it twice (before and after the batch norm), carried on
 * through the next layers: a few units of fp16 rounding (2^-11 =
 * 4.9e-4; POCL 3.1 gave at most 2.9e-3, in the sum after loading other
 * weights). */
#define FOLD_TOL_MIXED 8e-3f

/* fg's and g's forward on x, in training mode or evaluation, through each
 * of three layers and the probabilities: the same within float rounding,
 * under mixed precision within FOLD_TOL_MIXED (in training mode too: the
 * two graphs' plans may take other product ways, and a sum that differs in
 * its last f32 bit can round to the next fp16 value). fg's probabilities
 * into probs where it is not NULL. Under mixed precision fg's layers'
 * outputs are fp16 values, the folded ones too. */
typedef struct fold_layers {
  const char *names[3];
  int64_t sizes[3];
} fold_layers;
static const fold_layers fold_model_layers = {{"r1", "bn2", "sum"},
                                              {5 * 49, 6 * 16, 6 * 16}};

static void assert_layers_agree(clt_graph *fg, clt_graph *g, const float *x,
                                bool training, const char *when,
                                float *probs, const fold_layers *fl) {
  int32_t labels[FOLD_N];
  for (int i = 0; i < FOLD_N; i++) labels[i] = i % 5;
  const char *const *layers = fl->names;
  const int64_t *sizes = fl->sizes;
  float *out[2][3];
  float got[2][FOLD_N * 5];
  clt_graph *gs[2] = {fg, g};
  for (int k = 0; k < 2; k++) {
    ck_assert_ok(clt_graph_set_batch(gs[k], x, labels, FOLD_N));
    ck_assert_ok(clt_graph_forward(gs[k], training));
    for (int l = 0; l < 3; l++)
      out[k][l] = node_output(gs[k], layers[l], FOLD_N * sizes[l]);
    int64_t outputs = 0;
    ck_assert_ok(clt_graph_predictions(gs[k], got[k], &outputs));
    ck_assert_int_eq(outputs, 5);
  }
  char what[160];
  bool mixed = fg->precision == CLT_PRECISION_MIXED;
  float tol = mixed ? FOLD_TOL_MIXED : 1e-5f;
  for (int l = 0; l < 3; l++) {
    snprintf(what, sizeof what, "%s (%s, %s, %s)", layers[l],
             training ? "training" : "evaluation", mixed ? "mixed" : "fp32",
             when);
    assert_within(out[0][l], out[1][l], FOLD_N * sizes[l], tol, what);
    if (mixed) assert_fp16_values(out[0][l], FOLD_N * sizes[l], what);
    free(out[0][l]);
    free(out[1][l]);
  }
  snprintf(what, sizeof what, "probabilities (%s)", when);
  assert_within(got[0], got[1], FOLD_N * 5, tol, what);
  if (probs) memcpy(probs, got[0], sizeof got[0]);
}

/* assert_layers_agree through FOLD_MODEL's r1, bn2 and sum */
static void assert_graphs_agree(clt_graph *fg, clt_graph *g, const float *x,
                                bool training, const char *when,
                                float *probs) {
  assert_layers_agree(fg, g, x, training, when, probs, &fold_model_layers);
}

/* Two runs' probabilities (FOLD_N x 5) differ somewhere: what came
 * between them moved the numbers. */
static void assert_moved(const float *before, const float *after,
                         const char *what) {
  bool differ = false;
  for (int i = 0; i < FOLD_N * 5; i++) differ |= before[i] != after[i];
  ck_assert_msg(differ, "%s: the probabilities did not move", what);
}

/* A trained graph (trained()) and, in *m, its weights loaded as a model
 * (a forward-only graph, batch norms folded); under mixed precision both
 * set to it (each compiled again for the same batch: the weights stay). */
static clt_graph *trained_and_loaded(const char *model_path,
                                     const char *weights, bool mixed,
                                     clt_model **m) {
  clt_graph *g = trained(model_path, weights);
  ck_assert_ok(clt_model_load(g_ctx, model_path, weights, m));
  if (mixed) {
    ck_assert_ok(clt_graph_set_precision(g, CLT_PRECISION_MIXED));
    ck_assert_ok(
        clt_graph_set_precision(clt_model_graph(*m), CLT_PRECISION_MIXED));
  }
  return g;
}

/* Other weights: a step of SGD on g (on x, FOLD_N samples), saved to
 * path and loaded into fg. */
static void step_and_load(clt_graph *g, clt_graph *fg, const float *x,
                          const char *path) {
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_SGD);
  oo.lr = 0.5f;
  clt_optimizer *opt = NULL;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  int32_t labels[FOLD_N];
  for (int i = 0; i < FOLD_N; i++) labels[i] = i % 3;
  ck_assert_ok(clt_graph_set_batch(g, x, labels, FOLD_N));
  ck_assert_ok(clt_graph_forward(g, true));
  ck_assert_ok(clt_graph_backward(g));
  ck_assert_ok(clt_optimizer_step(opt));
  ck_assert_ok(clt_checkpoint_save(g, opt, 2, NULL, path));
  clt_optimizer_destroy(opt);
  ck_assert_ok(clt_checkpoint_load_weights(fg, path));
}

/* The forward layout c1 took in fg's last compile. */
static const char *c1_forward_layout(const clt_graph *fg) {
  static clt_plan_info info;
  for (int i = 0; i < clt_graph_plan_count(fg); i++) {
    ck_assert_ok(clt_graph_plan_info(fg, i, &info));
    if (!strcmp(info.layer, "c1") && !strcmp(info.product, "forward layout"))
      return info.candidates[info.chosen].name;
  }
  ck_abort_msg("c1 has no forward layout");
  return NULL;
}

/* A forward-only graph folds each batch norm into the convolution before
 * it (graph.h bn_fold) where nothing else reads that convolution: after
 * training moved the running statistics, gamma and beta, its evaluation
 * gives the training graph's (which runs every batch norm) within float
 * rounding, through each layer; a training forward on it still runs the
 * batch norms on the batch's statistics, as the training graph does. The
 * folded weights (and the tiled way's weight tiles) are kept between
 * evaluations and made again after whatever writes the parameters: a
 * training forward (the running statistics), loading other weights. In
 * the layout the plans choose, and in the tiled way, which keeps its
 * weight tiles; in fp32 and in mixed precision, where the folded
 * evaluation's outputs are fp16 values and agree with the layers apart
 * to fp16 rounding (FOLD_TOL_MIXED). */
START_TEST(test_batchnorm_folded_for_evaluation) {
  const char *fuse = getenv("CLT_FUSE");
  if (fuse && !strcmp(fuse, "0")) return; /* nothing is folded */
  const char *model_path = write_text("fold.model", FOLD_MODEL);
  const char *weights = tmp_path("fold.safetensors");
  const char *moved = tmp_path("fold_moved.safetensors");
  for (int c = 0; c < 4; c++) {
    bool tiled = c & 1, mixed = c & 2;
    clt_model *m = NULL;
    clt_graph *g = trained_and_loaded(model_path, weights, mixed, &m);
    clt_graph *fg = clt_model_graph(m);
    if (tiled) {
      fg->test_way_name = "tiled 8";
      ck_assert_ok(clt_graph_compile(fg, fg->max_batch, fg->seed));
      ck_assert_str_eq(c1_forward_layout(fg), "tiled 8");
    }
    ck_assert_int_eq(node_named(fg, "c1")->bn_fold,
                     node_named(fg, "bn1")->index);
    ck_assert_int_eq(node_named(fg, "c2")->bn_fold,
                     node_named(fg, "bn2")->index);
    ck_assert_int_eq(node_named(fg, "c3")->bn_fold, -1); /* the add reads it */
    ck_assert(!node_named(fg, "bn3")->bn_folded);
    ck_assert(node_named(fg, "bn1")->fused_relu);
    /* The training graph folds nothing. */
    ck_assert_int_eq(node_named(g, "c1")->bn_fold, -1);

    float *x = malloc(FOLD_N * 147 * sizeof *x);
    clt_random_fill(x, FOLD_N * 147, 9, -1.0f, 1.0f);
    float first[FOLD_N * 5], again[FOLD_N * 5];
    assert_graphs_agree(fg, g, x, false, "first", first);
    /* A training forward moves both graphs' running statistics alike. */
    assert_graphs_agree(fg, g, x, true, "first", NULL);
    assert_graphs_agree(fg, g, x, false, "after a training forward", again);
    assert_moved(first, again, "the running statistics");
    /* Evaluated again with nothing written: the same bits. */
    assert_graphs_agree(fg, g, x, false, "once more", first);
    ck_assert_mem_eq(first, again, sizeof first);

    step_and_load(g, fg, x, moved);
    assert_graphs_agree(fg, g, x, false, "after loading other weights",
                        again);
    assert_moved(first, again, "the loaded weights");
    free(x);
    clt_model_destroy(m);
    clt_graph_destroy(g);
  }
}
END_TEST

/* Depthwise convolutions (MobileNet's blocks): one with a multiplier
 * and a bias whose batchnorm has a ReLU (folded, the ReLU with it), one
 * of stride 2 without a bias (folded), one whose output a residual add
 * reads too (not folded). */
#define DW_FOLD_MODEL                                                          \
  "input shape=3x9x11\n"                                                       \
  "depthwise_conv2d name=d1 kernel=3 padding=1 multiplier=2\n"                 \
  "batchnorm name=bn1\n"                                                       \
  "relu name=r1\n"                                                             \
  "depthwise_conv2d name=d2 kernel=3 stride=2 bias=false\n"                    \
  "batchnorm name=bn2\n"                                                       \
  "depthwise_conv2d name=d3 kernel=3 padding=1\n"                              \
  "batchnorm name=bn3\n"                                                       \
  "add name=sum inputs=bn3,d3\n"                                               \
  "flatten\n"                                                                  \
  "dense name=fc units=5\n"                                                    \
  "softmax_cross_entropy\n"

/* The batch norms after depthwise convolutions fold into them as into a
 * conv2d (test_batchnorm_folded_for_evaluation): the evaluation of the
 * forward-only graph gives the training graph's through each layer,
 * after a training forward moved the running statistics and after other
 * weights were loaded, in fp32 and in mixed precision. */
START_TEST(test_batchnorm_folded_into_depthwise) {
  const char *fuse = getenv("CLT_FUSE");
  if (fuse && !strcmp(fuse, "0")) return; /* nothing is folded */
  const char *model_path = write_text("dwfold.model", DW_FOLD_MODEL);
  const char *weights = tmp_path("dwfold.safetensors");
  const char *moved = tmp_path("dwfold_moved.safetensors");
  static const fold_layers layers = {{"r1", "bn2", "sum"},
                                     {6 * 99, 6 * 20, 6 * 20}};
  for (int mixed = 0; mixed < 2; mixed++) {
    clt_model *m = NULL;
    clt_graph *g = trained_and_loaded(model_path, weights, mixed, &m);
    clt_graph *fg = clt_model_graph(m);
    ck_assert_int_eq(node_named(fg, "d1")->bn_fold,
                     node_named(fg, "bn1")->index);
    ck_assert_int_eq(node_named(fg, "d2")->bn_fold,
                     node_named(fg, "bn2")->index);
    ck_assert_int_eq(node_named(fg, "d3")->bn_fold, -1);
    ck_assert(!node_named(fg, "bn3")->bn_folded);
    ck_assert(node_named(fg, "bn1")->fused_relu);
    ck_assert_int_eq(node_named(g, "d1")->bn_fold, -1);

    float *x = malloc(FOLD_N * 297 * sizeof *x);
    clt_random_fill(x, FOLD_N * 297, 19, -1.0f, 1.0f);
    float first[FOLD_N * 5], again[FOLD_N * 5];
    assert_layers_agree(fg, g, x, false, "first", first, &layers);
    assert_layers_agree(fg, g, x, true, "first", NULL, &layers);
    assert_layers_agree(fg, g, x, false, "after a training forward", again,
                        &layers);
    assert_moved(first, again, "the running statistics");

    step_and_load(g, fg, x, moved);
    assert_layers_agree(fg, g, x, false, "after loading other weights", first,
                        &layers);
    assert_moved(again, first, "the loaded weights");
    free(x);
    clt_model_destroy(m);
    clt_graph_destroy(g);
  }
}
END_TEST

/* A graph (training and evaluating, as fit does) in fp32 and in mixed
 * precision, in the layout the plans choose and in the tiled way: its
 * evaluation after an optimizer step runs on the new weights (the
 * fp16 copy of mixed precision and the weight tiles are made again), as
 * a graph given those weights from a checkpoint does, loaded or resumed
 * from, after an evaluation of its own first weights. */
START_TEST(test_evaluation_after_step) {
  const char *model_path = write_text("step.model", FOLD_MODEL);
  const char *moved = tmp_path("step.safetensors");
  float *x = malloc(FOLD_N * 147 * sizeof *x);
  clt_random_fill(x, FOLD_N * 147, 12, -1.0f, 1.0f);
  int32_t labels[FOLD_N];
  for (int i = 0; i < FOLD_N; i++) labels[i] = i % 5;
  for (int c = 0; c < 4; c++) {
    clt_precision p = c & 1 ? CLT_PRECISION_MIXED : CLT_PRECISION_FP32;
    const char *way = c & 2 ? "tiled 8" : NULL;
    clt_graph *gs[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; k++) {
      ck_assert_ok(clt_graph_load_model(g_ctx, model_path, &gs[k]));
      gs[k]->test_way_name = way;
      ck_assert_ok(clt_graph_set_precision(gs[k], p));
      ck_assert_ok(clt_graph_compile(gs[k], FOLD_N, 5));
    }
    clt_graph *g = gs[0];
    if (way) {
      ck_assert_str_eq(c1_forward_layout(g), way);
    }
    float before[FOLD_N * 5], after[FOLD_N * 5], want[FOLD_N * 5];
    int64_t outputs = 0;
    ck_assert_ok(clt_graph_set_batch(g, x, labels, FOLD_N));
    ck_assert_ok(clt_graph_forward(g, false));
    ck_assert_ok(clt_graph_predictions(g, before, &outputs));
    clt_optimizer_options oo;
    clt_optimizer_options_init(&oo, CLT_OPT_SGD);
    oo.lr = 0.5f;
    clt_optimizer *opt = NULL;
    ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
    ck_assert_ok(clt_graph_forward(g, true));
    ck_assert_ok(clt_graph_backward(g));
    ck_assert_ok(clt_optimizer_step(opt));
    ck_assert_ok(clt_graph_forward(g, false));
    ck_assert_ok(clt_graph_predictions(g, after, &outputs));
    ck_assert_ok(clt_checkpoint_save(g, opt, 1, NULL, moved));
    clt_optimizer_destroy(opt);
    char what[96];
    for (int k = 1; k < 3; k++) {
      ck_assert_ok(clt_graph_set_batch(gs[k], x, labels, FOLD_N));
      ck_assert_ok(clt_graph_forward(gs[k], false));
      ck_assert_ok(clt_graph_predictions(gs[k], want, &outputs));
      /* the same seed: the same weights */
      assert_close(want, before, FOLD_N * 5, "the first weights");
      if (k == 1) {
        ck_assert_ok(clt_checkpoint_load_weights(gs[k], moved));
      } else {
        ck_assert_ok(clt_optimizer_create(gs[k], &oo, &opt));
        ck_assert_ok(clt_checkpoint_resume(gs[k], opt, moved, NULL, NULL, 0));
        clt_optimizer_destroy(opt);
      }
      ck_assert_ok(clt_graph_forward(gs[k], false));
      ck_assert_ok(clt_graph_predictions(gs[k], want, &outputs));
      snprintf(what, sizeof what, "probabilities after a step (%s, %s, %s)",
               p == CLT_PRECISION_MIXED ? "mixed" : "fp32",
               way ? way : "planned", k == 1 ? "loaded" : "resumed");
      assert_close(after, want, FOLD_N * 5, what);
    }
    assert_moved(before, after, what);
    for (int k = 0; k < 3; k++) clt_graph_destroy(gs[k]);
  }
  free(x);
}
END_TEST

static Suite *infer_suite(void) {
  Suite *s = suite_create("infer");
  TCase *tc = tcase_create("inference API");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_predict_matches_graph);
  tcase_add_test(tc, test_load_errors);
  tcase_add_test(tc, test_batch_without_labels);
  tcase_add_test(tc, test_predictions_keep_gradients);
  tcase_add_test(tc, test_batchnorm_folded_for_evaluation);
  tcase_add_test(tc, test_batchnorm_folded_into_depthwise);
  tcase_add_test(tc, test_evaluation_after_step);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return EXIT_FAILURE;
  }
  int rc = test_run_suite("infer", infer_suite);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) rc = EXIT_FAILURE;
  return rc;
}
