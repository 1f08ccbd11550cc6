/* Convolutional layers through whole graphs: every gradient by finite
 * differences on odd shapes (odd sizes, stride 2 with padding, 1x1 and 5x5
 * kernels, dilation 2, one and three input channels, batch 1), batch norm
 * in training and evaluation, dropout's keep rate and determinism, and a
 * residual graph's gradients. */
#include "graph_helpers.h"

/* A convolutional model's gradients in each conv layout (conv2d.c): the
 * GEMMs with swaps, NCHW direct, the direct kernels in both of their
 * layouts (every window here has few enough taps to be offered them), and
 * the implicit GEMMs in two tile configurations. */
static void check_conv_gradients(const char *model, int64_t batch) {
  check_gradients_way(model, batch, false, 1);
  check_gradients_way(model, batch, false, 2);
  check_gradients_named(model, batch, false, 0, "direct");
  check_gradients_named(model, batch, false, 0, "direct per element");
  check_gradients_named(model, batch, false, 0, "implicit 16x64");
  check_gradients_named(model, batch, false, 0, "implicit 128x128");
}

START_TEST(test_fd_conv_stride2_pad) {
  check_conv_gradients("input shape=3x7x6\n"
                       "conv2d filters=4 kernel=3 stride=2 padding=1 "
                       "activation=tanh\n"
                       "flatten\ndense units=3\nsoftmax_cross_entropy\n",
                       2);
}
END_TEST

START_TEST(test_fd_conv_5x5_dilated_maxpool) {
  const char *model = "input shape=1x9x9\n"
                      "conv2d filters=2 kernel=5 dilation=2 padding=2\n"
                      "sigmoid\nmaxpool kernel=2\n"
                      "flatten\ndense units=3\nsoftmax_cross_entropy\n";
  check_conv_gradients(model, 3);
  /* max pooling's forward in vectors: rows of 2 windows, one at a time */
  check_gradients_named(model, 3, false, 0, "per row, vectors");
}
END_TEST

/* Max pooling's forward in vectors of 8 windows (rows of 9: the last
 * block overlaps the first) and of 4 (rows of 5), odd heights. */
START_TEST(test_fd_maxpool_vectors) {
  check_gradients_named("input shape=2x7x19\n"
                        "conv2d filters=2 kernel=3 padding=1\n"
                        "maxpool kernel=2\n"
                        "conv2d filters=2 kernel=3 padding=1 activation=relu\n"
                        "maxpool kernel=2 stride=2\n"
                        "flatten\ndense units=3\nsoftmax_cross_entropy\n",
                        2, false, 0, "per row, vectors");
}
END_TEST

START_TEST(test_fd_conv_1x1_batch1) {
  check_conv_gradients("input shape=3x5x3\n"
                       "conv2d filters=2 kernel=1 bias=false\n"
                       "avgpool kernel=3 stride=2 padding=1\n"
                       "flatten\ndense units=4\nsoftmax_cross_entropy\n",
                       1);
}
END_TEST

START_TEST(test_fd_conv_same_rect) {
  check_conv_gradients("input shape=2x5x7\n"
                       "conv2d filters=3 kernel=3x5 padding=same init=he\n"
                       "gelu\nmaxpool kernel=3 stride=2 padding=1\n"
                       "global_avgpool\ndense units=3\nsoftmax_cross_entropy\n",
                       2);
}
END_TEST

START_TEST(test_fd_batchnorm_2d) {
  const char *model = "input shape=3x5x5\n"
                      "conv2d filters=4 kernel=3\nbatchnorm\nrelu\n"
                      "global_avgpool\ndense units=3\nsoftmax_cross_entropy\n";
  check_conv_gradients(model, 3);
  /* training's passes in one kernel each way, the ReLU fused into them */
  check_gradients_named(model, 3, false, 0, "fused per channel");
  check_gradients_named(model, 3, false, 0, "fused per plane");
}
END_TEST

START_TEST(test_fd_batchnorm_1d) {
  const char *model = "input shape=6\ndense units=5\nbatchnorm momentum=0.2\n"
                      "tanh\ndense units=3\nsoftmax_cross_entropy\n";
  check_gradients(model, 4, false);
  /* The split reductions, one of them with a shorter last chunk (9 in
   * chunks of 2). */
  check_gradients_named(model, 4, false, 0, "split 32");
  check_gradients_named(model, 9, false, 0, "split 8");
  check_gradients_named(model, 5, false, 0, "fused per channel");
  check_gradients_named(model, 5, false, 0, "fused per plane");
}
END_TEST

/* Depthwise convolutions: a multiplier of 2 with stride 2 and padding,
 * a dilated one, and a separable block (depthwise, then 1x1) feeding a
 * residual sum, so that the input gradient is added into. */
START_TEST(test_fd_depthwise) {
  const char *model = "input shape=3x7x6\n"
                      "depthwise_conv2d kernel=3 multiplier=2 stride=2 "
                      "padding=1\ntanh\n"
                      "depthwise_conv2d kernel=3 dilation=2 padding=same "
                      "bias=false init=he\n"
                      "global_avgpool\ndense units=3\n"
                      "softmax_cross_entropy\n";
  /* the three layouts, forced */
  check_gradients_named(model, 2, false, 0, "per element");
  check_gradients_named(model, 2, false, 0, "per 4 rows");
  check_gradients_named(model, 2, false, 0, "per 4 rows, eights");
  check_conv_gradients("input shape=2x5x5\n"
                       "conv2d name=c1 filters=3 kernel=3 padding=1\n"
                       "tanh name=t1\n"
                       "depthwise_conv2d name=d kernel=3 padding=1\n"
                       "conv2d name=p filters=3 kernel=1\n"
                       "add inputs=p,t1\nflatten\ndense units=3\n"
                       "softmax_cross_entropy\n",
                       3);
}
END_TEST

/* Layer normalisation over a flat sample and over a whole [C, H, W]
 * one, and one reading two consumers' gradients (accumulated into). */
START_TEST(test_fd_layernorm) {
  check_gradients("input shape=6\ndense units=5\nlayernorm\n"
                  "tanh\ndense units=3\nsoftmax_cross_entropy\n",
                  4, false);
  check_gradients("input shape=6\ndense units=7\nlayernorm name=ln eps=0.1\n"
                  "dense name=a units=3 input=ln\n"
                  "dense name=b units=3 input=ln\nadd inputs=a,b\nmse\n",
                  3, true);
  const char *conv = "input shape=3x5x5\n"
                     "conv2d filters=4 kernel=3\nlayernorm\nrelu\n"
                     "global_avgpool\ndense units=3\n"
                     "softmax_cross_entropy\n";
  check_conv_gradients(conv, 3);
  /* both layouts, forced (36 values: two runs of 16 and a tail) */
  check_gradients_named(conv, 3, false, 0, "per element");
  check_gradients_named(conv, 3, false, 0, "runs of 16");
  /* over each pixel's channels: its ReLU fused, its input read by a
   * residual sum too (its gradient added into), odd planes */
  const char *channels = "input shape=3x5x4\n"
                         "conv2d name=c filters=4 kernel=3 padding=1\n"
                         "layernorm name=ln over=channels\nrelu name=r\n"
                         "add inputs=c,r\nglobal_avgpool\ndense units=3\n"
                         "softmax_cross_entropy\n";
  check_conv_gradients(channels, 3);
  /* each layout, forced (20 pixels: a run of 16 and 4 one by one; the
   * backward's third takes the parameter sums in the data pass) */
  check_gradients_named(channels, 3, false, 0, "per pixel");
  check_gradients_named(channels, 3, false, 0, "runs of 16");
  check_gradients_named(channels, 3, false, 0, "runs of 16, sums in one pass");
  check_gradients("input shape=2x3x3\nlayernorm over=channels eps=0.01\n"
                  "tanh\nflatten\ndense units=2\nmse\n",
                  2, true);
}
END_TEST

/* Global max pooling (the window the whole plane), in every max pooling
 * layout. */
START_TEST(test_fd_global_maxpool) {
  const char *model = "input shape=2x5x6\n"
                      "conv2d filters=3 kernel=3 padding=1\n"
                      "global_maxpool\ndense units=3\n"
                      "softmax_cross_entropy\n";
  check_conv_gradients(model, 3);
  check_gradients_named(model, 3, false, 0, "per row");
  check_gradients_named(model, 3, false, 0, "per element");
}
END_TEST

START_TEST(test_fd_residual_and_concat) {
  check_conv_gradients("input shape=2x5x5\n"
                       "conv2d name=c1 filters=3 kernel=3 padding=1\n"
                       "tanh name=t1\n"
                       "conv2d name=c2 filters=3 kernel=3 padding=1\n"
                       "add name=res inputs=c2,t1\n"
                       "conv2d name=c3 filters=2 kernel=1 input=t1\n"
                       "concat inputs=res,c3\n"
                       "maxpool kernel=2\nflatten\ndense units=3\n"
                       "softmax_cross_entropy\n",
                       2);
}
END_TEST

/* Batch norm in evaluation uses the running statistics, which training
 * moved toward the batch's (momentum 0.1, unbiased variance). */
START_TEST(test_batchnorm_running_stats) {
  clt_graph *g = NULL;
  ck_assert_ok(graph_from_text("input shape=2x3x3\nbatchnorm name=bn\nmse\n",
                               &g));
  ck_assert_ok(clt_graph_compile(g, 4, 1));
  random_batch(g, 4, 9, true);
  int64_t n = 4 * 18;
  float x[72];
  clt_tensor *xin = g->nodes[g->input_node].out;
  clt_tensor xs = clt_tensor_slice_1d(xin, 0, n);
  ck_assert_ok(clt_tensor_download(&xs, x));
  ck_assert_ok(clt_graph_forward(g, true));
  float params[4 * 2 + 1], y[72];
  clt_graph_node *bn = &g->nodes[1];
  ck_assert_ok(clt_tensor_download(g->params, params));
  for (int c = 0; c < 2; c++) {
    double mean = 0, var = 0;
    for (int b = 0; b < 4; b++)
      for (int s = 0; s < 9; s++) mean += x[(b * 2 + c) * 9 + s];
    mean /= 36;
    for (int b = 0; b < 4; b++)
      for (int s = 0; s < 9; s++) {
        double d = x[(b * 2 + c) * 9 + s] - mean;
        var += d * d;
      }
    double unbiased = var / 35;
    ck_assert_double_eq_tol(params[bn->params[2].offset + c], 0.1 * mean,
                            1e-5);
    ck_assert_double_eq_tol(params[bn->params[3].offset + c],
                            0.9 + 0.1 * unbiased, 1e-5);
  }
  ck_assert_float_eq(params[bn->params[4].offset], 1.0f);
  /* Evaluation: y = (x - running_mean) / sqrt(running_var + eps). */
  ck_assert_ok(clt_graph_forward(g, false));
  clt_tensor ys = clt_tensor_slice_1d(bn->out, 0, n);
  ck_assert_ok(clt_tensor_download(&ys, y));
  for (int i = 0; i < n; i++) {
    int c = (i / 9) % 2;
    double want = (x[i] - params[bn->params[2].offset + c]) /
                  sqrt(params[bn->params[3].offset + c] + 1e-5);
    ck_assert_double_eq_tol(y[i], want, 1e-4);
  }
  clt_graph_destroy(g);
}
END_TEST

static void dropout_outputs(uint64_t seed, float *y, int64_t n, bool train) {
  clt_graph *g = NULL;
  ck_assert_ok(graph_from_text("input shape=1000\ndropout rate=0.3\nmse\n",
                               &g));
  ck_assert_ok(clt_graph_compile(g, 2, seed));
  float *x = malloc((size_t)n * sizeof(float));
  for (int64_t i = 0; i < n; i++) x[i] = 1.0f;
  ck_assert_ok(clt_graph_set_batch(g, x, x, 2));
  ck_assert_ok(clt_graph_forward(g, train));
  clt_tensor o = clt_tensor_slice_1d(g->nodes[1].out, 0, n);
  ck_assert_ok(clt_tensor_download(&o, y));
  /* The backward pass runs with the mask it drew. */
  if (train) ck_assert_ok(clt_graph_backward(g));
  free(x);
  clt_graph_destroy(g);
}

START_TEST(test_dropout_rate_and_seed) {
  int64_t n = 2000;
  float a[2000], b[2000], c[2000], e[2000];
  dropout_outputs(5, a, n, true);
  dropout_outputs(5, b, n, true);
  dropout_outputs(6, c, n, true);
  dropout_outputs(5, e, n, false);
  int zeros = 0;
  for (int64_t i = 0; i < n; i++) {
    ck_assert(a[i] == 0.0f || fabsf(a[i] - 1.0f / 0.7f) < 1e-6f);
    zeros += a[i] == 0.0f;
    ck_assert_float_eq(e[i], 1.0f); /* evaluation: identity */
  }
  /* 2000 draws at p = 0.3: 600 expected, sd about 20. */
  ck_assert_msg(zeros > 520 && zeros < 680, "%d of 2000 dropped", zeros);
  ck_assert_mem_eq(a, b, sizeof a);
  ck_assert_msg(memcmp(a, c, sizeof a) != 0, "another seed, same mask");
}
END_TEST

/* softmax_cross_entropy label_smoothing=E: the batch's loss is PyTorch's
 * CrossEntropyLoss(label_smoothing=E) of the model's probabilities, the
 * accuracy unchanged; bad values are refused. */
/* sigmoid_cross_entropy: the graph's loss against PyTorch's
 * BCEWithLogitsLoss (the mean over every element) and its accuracy
 * against Keras's binary_accuracy, on the model's own probabilities (the
 * sigmoid of its logits), soft and hard targets; targets outside [0, 1]
 * refused by clt_fit and clt_evaluate, with the sample. */
START_TEST(test_sigmoid_cross_entropy) {
  enum { N = 7, IN = 4, K = 3 };
  float x[N * IN], y[N * K];
  clt_random_fill(x, N * IN, 31, -3.0f, 3.0f);
  clt_random_fill(y, N * K, 37, 0.0f, 1.0f);
  for (int i = 0; i < N * K; i += 2) y[i] = (float)(i % 4 == 0);
  clt_graph *g = NULL;
  ck_assert_ok(graph_from_text("input shape=4\ndense units=3\n"
                               "sigmoid_cross_entropy\n",
                               &g));
  ck_assert_int_eq(clt_graph_loss_kind(g), CLT_LOSS_MULTILABEL);
  ck_assert_str_eq(clt_graph_loss_name(g), "sigmoid_cross_entropy");
  ck_assert_ok(clt_graph_compile(g, N, 3));
  ck_assert_ok(clt_graph_set_batch(g, x, y, N));
  ck_assert_ok(clt_graph_forward(g, true));
  float p[N * K];
  int64_t outputs = 0;
  ck_assert_ok(clt_graph_predictions(g, p, &outputs));
  ck_assert_int_eq(outputs, K);
  ck_assert_ok(clt_graph_backward(g)); /* the gradient kept (predict) */
  clt_metrics m;
  ck_assert_ok(clt_graph_metrics(g, &m, true));
  double want = 0.0, right = 0.0;
  for (int i = 0; i < N * K; i++) {
    ck_assert(p[i] > 0.0f && p[i] < 1.0f);
    want -= (y[i] * log(p[i]) + (1.0 - y[i]) * log(1.0 - p[i])) / (N * K);
    right += (p[i] > 0.5f) == (y[i] >= 0.5f);
  }
  ck_assert_msg(fabs(m.loss - want) < 1e-5 * fmax(1.0, want),
                "loss %.8g, PyTorch's %.8g", m.loss, want);
  ck_assert_double_eq_tol(m.accuracy, right / (N * K), 1e-6);
  ck_assert(isnan(m.mae));
  /* Without targets: the probabilities, no loss. */
  float q[N * K];
  ck_assert_ok(clt_graph_set_batch(g, x, NULL, N));
  ck_assert_ok(clt_graph_forward(g, false));
  ck_assert_ok(clt_graph_predictions(g, q, &outputs));
  for (int i = 0; i < N * K; i++) ck_assert_float_eq_tol(q[i], p[i], 1e-6f);
  /* Targets outside [0, 1]. */
  y[5] = 1.5f;
  clt_dataset_desc d = {0};
  d.count = N;
  d.channels = d.height = 1;
  d.width = IN;
  d.values_f32 = x;
  d.targets = y;
  d.target_size = K;
  clt_dataset *ds = NULL;
  ck_assert_ok(clt_dataset_from_memory(g_ctx, &d, &ds));
  ck_assert_int_eq(clt_evaluate(g, ds, N, &m), CLT_ERR_FORMAT);
  ck_assert_msg(strstr(clt_context_last_error(g_ctx),
                       "sample 2's target 3 is 1.5; sigmoid_cross_entropy's "
                       "targets are 0"),
                "%s", clt_context_last_error(g_ctx));
  int64_t counts[4 * K];
  ck_assert_int_eq(clt_evaluate_multilabel(g, ds, N, counts, NULL, &m),
                   CLT_ERR_FORMAT);
  ck_assert_msg(strstr(clt_context_last_error(g_ctx), "sample 2's target 3"),
                "%s", clt_context_last_error(g_ctx));
  clt_dataset_destroy(ds);
  clt_graph_destroy(g);
  /* No smoothing or weights there. */
  ck_assert_int_eq(graph_from_text("input shape=3\nsigmoid_cross_entropy "
                                   "label_smoothing=0.1\n",
                                   &g),
                   CLT_ERR_FORMAT);
}
END_TEST

/* mse, mae and huber: the graph's training loss and mean absolute error
 * against PyTorch's formulas (MSELoss, L1Loss, HuberLoss: the mean over
 * every element) on the model's own outputs; huber's delta errors. */
START_TEST(test_regression_losses) {
  enum { N = 6, IN = 4, K = 3 };
  float x[N * IN], y[N * K];
  clt_random_fill(x, N * IN, 23, -2.0f, 2.0f);
  clt_random_fill(y, N * K, 29, -1.5f, 1.5f);
  static const char *const losses[] = {"mse", "mae", "huber",
                                       "huber delta=0.3"};
  for (int k = 0; k < 4; k++) {
    char text[160];
    snprintf(text, sizeof text, "input shape=%d\ndense units=%d\n%s\n", IN, K,
             losses[k]);
    clt_graph *g = NULL;
    ck_assert_ok(graph_from_text(text, &g));
    ck_assert_int_eq(clt_graph_loss_kind(g), CLT_LOSS_REGRESSION);
    ck_assert_str_eq(clt_graph_loss_name(g), k < 2 ? losses[k] : "huber");
    ck_assert_ok(clt_graph_compile(g, N, 3));
    ck_assert_ok(clt_graph_set_batch(g, x, y, N));
    ck_assert_ok(clt_graph_forward(g, true));
    float p[N * K];
    int64_t outputs = 0;
    ck_assert_ok(clt_graph_predictions(g, p, &outputs));
    ck_assert_int_eq(outputs, K);
    clt_metrics m;
    ck_assert_ok(clt_graph_metrics(g, &m, true));
    double delta = k == 3 ? 0.3 : 1.0, want = 0.0, mae = 0.0;
    int linear = 0; /* huber's elements past delta */
    for (int i = 0; i < N * K; i++) {
      double d = (double)p[i] - y[i], a = fabs(d);
      mae += a / (N * K);
      linear += a > delta;
      want += (k == 0   ? d * d
               : k == 1 ? a
               : a <= delta ? 0.5 * d * d
                            : delta * (a - 0.5 * delta)) /
              (N * K);
    }
    if (k == 3) ck_assert(linear > 0 && linear < N * K); /* both sides */
    ck_assert_msg(fabs(m.loss - want) < 1e-5 * fmax(1.0, want),
                  "%s: loss %.8g, PyTorch's %.8g", losses[k], m.loss, want);
    ck_assert_msg(fabs(m.mae - mae) < 1e-5 * fmax(1.0, mae),
                  "%s: mae %.8g, expected %.8g", losses[k], m.mae, mae);
    ck_assert(isnan(m.accuracy));
    clt_graph_destroy(g);
  }
  static const char *const bad[] = {"0", "-1", "nan", "inf", "x"};
  for (int i = 0; i < 5; i++) {
    char text[160];
    snprintf(text, sizeof text,
             "input shape=3\ndense units=2\nhuber delta=%s\n", bad[i]);
    clt_graph *g = NULL;
    ck_assert_int_eq(graph_from_text(text, &g), CLT_ERR_FORMAT);
    ck_assert_msg(strstr(clt_context_last_error(g_ctx), "delta"), "%s",
                  clt_context_last_error(g_ctx));
  }
  clt_graph *g = NULL; /* delta is huber's alone */
  ck_assert_int_eq(graph_from_text("input shape=3\nmae delta=1\n", &g),
                   CLT_ERR_FORMAT);
}
END_TEST

/* silu (and its Keras name swish), elu and softplus layers give PyTorch's
 * SiLU, ELU(alpha) and Softplus on inputs past softplus's threshold too;
 * elu's alpha is checked; the C builder takes the kinds. */
START_TEST(test_more_activations) {
  enum { N = 3, IN = 8 };
  float x[N * IN], y[N * IN] = {0};
  clt_random_fill(x, N * IN, 31, -3.0f, 3.0f);
  x[0] = 24.0f;
  x[1] = -24.0f;
  x[2] = 0.0f;
  static const char *const acts[] = {"silu", "swish", "elu", "elu alpha=0.5",
                                     "softplus"};
  for (int k = 0; k < 5; k++) {
    char text[160];
    snprintf(text, sizeof text, "input shape=%d\n%s\nmse\n", IN, acts[k]);
    clt_graph *g = NULL;
    ck_assert_ok(graph_from_text(text, &g));
    ck_assert_ok(clt_graph_compile(g, N, 3));
    ck_assert_ok(clt_graph_set_batch(g, x, y, N));
    ck_assert_ok(clt_graph_forward(g, false));
    float p[N * IN];
    int64_t outputs = 0;
    ck_assert_ok(clt_graph_predictions(g, p, &outputs));
    ck_assert_int_eq(outputs, IN);
    for (int i = 0; i < N * IN; i++) {
      double v = x[i];
      double want = k < 2    ? v / (1.0 + exp(-v))
                    : k == 2 ? (v > 0 ? v : expm1(v))
                    : k == 3 ? (v > 0 ? v : 0.5 * expm1(v))
                             : (v > 20 ? v : log1p(exp(v)));
      ck_assert_msg(fabs(p[i] - want) <= 1e-6 * fmax(1.0, fabs(want)),
                    "%s(%g) = %.9g, PyTorch's %.9g", acts[k], v, (double)p[i],
                    want);
    }
    clt_graph_destroy(g);
  }
  clt_graph *g = NULL;
  ck_assert_int_eq(graph_from_text("input shape=3\nelu alpha=nan\n", &g),
                   CLT_ERR_FORMAT);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx), "alpha"));
  ck_assert_int_eq(graph_from_text("input shape=3\nsilu alpha=1\n", &g),
                   CLT_ERR_FORMAT);
  ck_assert_ptr_nonnull(
      strstr(clt_context_last_error(g_ctx), "unknown option 'alpha'"));
  /* the builder: each kind, and no more */
  ck_assert_ok(clt_graph_create(g_ctx, &g));
  clt_node in, out;
  int64_t shape[1] = {4};
  ck_assert_ok(clt_graph_input(g, 1, shape, &in));
  ck_assert_ok(clt_graph_activation(g, in, CLT_ACT_SILU, &out));
  ck_assert_ok(clt_graph_activation(g, out, CLT_ACT_ELU, &out));
  ck_assert_ok(clt_graph_activation(g, out, CLT_ACT_SOFTPLUS, &out));
  ck_assert_int_eq(clt_graph_activation(g, out, (clt_activation)8, &out),
                   CLT_ERR_INVALID_ARGUMENT);
  clt_graph_destroy(g);
}
END_TEST

START_TEST(test_label_smoothing) {
  enum { N = 5, IN = 4, K = 3 };
  static const double eps[] = {0.0, 0.25, 1.0};
  float x[N * IN];
  int32_t labels[N] = {0, 2, 1, 2, 0};
  clt_random_fill(x, N * IN, 17, -2.0f, 2.0f);
  for (int k = 0; k < 3; k++) {
    char text[160];
    snprintf(text, sizeof text,
             "input shape=%d\ndense units=%d\n"
             "softmax_cross_entropy label_smoothing=%g\n",
             IN, K, eps[k]);
    clt_graph *g = NULL;
    ck_assert_ok(graph_from_text(text, &g));
    ck_assert_ok(clt_graph_compile(g, N, 3));
    ck_assert_ok(clt_graph_set_batch(g, x, labels, N));
    ck_assert_ok(clt_graph_forward(g, true));
    float p[N * K];
    int64_t outputs = 0;
    ck_assert_ok(clt_graph_predictions(g, p, &outputs));
    ck_assert_int_eq(outputs, K);
    ck_assert_ok(clt_graph_backward(g));
    clt_metrics m;
    ck_assert_ok(clt_graph_metrics(g, &m, true));
    double want = 0.0;
    int right = 0;
    for (int r = 0; r < N; r++) {
      double all = 0.0;
      int arg = 0;
      for (int c = 0; c < K; c++) {
        all += -log(p[r * K + c]) / K;
        if (p[r * K + c] > p[r * K + arg]) arg = c;
      }
      want += (1.0 - eps[k]) * -log(p[r * K + labels[r]]) + eps[k] * all;
      right += arg == labels[r];
    }
    ck_assert_msg(fabs(m.loss - want / N) < 1e-5 * fmax(1.0, want / N),
                  "label smoothing %g: loss %.8g, PyTorch's %.8g", eps[k],
                  m.loss, want / N);
    ck_assert_double_eq_tol(m.accuracy, (double)right / N, 1e-12);
    clt_graph_destroy(g);
  }
  static const char *const bad[] = {"1.5", "-0.1", "nan", "x"};
  for (int i = 0; i < 4; i++) {
    char text[160];
    snprintf(text, sizeof text,
             "input shape=3\ndense units=2\n"
             "softmax_cross_entropy label_smoothing=%s\n",
             bad[i]);
    clt_graph *g = NULL;
    ck_assert_int_eq(graph_from_text(text, &g), CLT_ERR_FORMAT);
    ck_assert_msg(strstr(clt_context_last_error(g_ctx), "label_smoothing"),
                  "%s", clt_context_last_error(g_ctx));
  }
  clt_graph *g = NULL; /* mse has no labels to smooth */
  ck_assert_int_eq(graph_from_text("input shape=3\nmse label_smoothing=0.1\n",
                                   &g),
                   CLT_ERR_FORMAT);
}
END_TEST

/* normalize: the identity until adapted; clt_graph_adapt learns each
 * feature's (or channel's) mean and population variance from a dataset,
 * bytes scaled as the loader scales them; the forward then gives
 * (x - mean) / sqrt(var), a constant feature only shifted. */
static void normalize_case(const char *per, bool bytes) {
  enum { N = 6, C = 2, HW = 3, SIZE = C * HW };
  float xf[N * SIZE];
  uint8_t xb[N * SIZE];
  int32_t labels[N] = {0};
  clt_random_fill(xf, N * SIZE, 23, -40.0f, 90.0f);
  for (int i = 0; i < N * SIZE; i++) xb[i] = (uint8_t)((i * 97 + 13) % 256);
  for (int i = 0; i < N; i++) { /* feature 4 constant */
    xf[i * SIZE + 4] = 2.5f;
    xb[i * SIZE + 4] = 9;
  }
  float x[N * SIZE]; /* what the model gets */
  for (int i = 0; i < N * SIZE; i++)
    x[i] = bytes ? (float)xb[i] / 255.0f : xf[i];
  char text[160];
  snprintf(text, sizeof text,
           "input shape=%dx1x%d\nnormalize name=norm per=%s\nflatten\n"
           "mse\n",
           C, HW, per);
  clt_graph *g = NULL;
  ck_assert_ok(graph_from_text(text, &g));
  ck_assert_ok(clt_graph_compile(g, N, 1));
  clt_graph_node *norm = &g->nodes[1];
  float y[N * SIZE];
  /* not adapted: the input as it is */
  ck_assert_ok(clt_graph_set_batch(g, x, NULL, N));
  ck_assert_ok(clt_graph_forward(g, false));
  clt_tensor ys = clt_tensor_slice_1d(norm->out, 0, N * SIZE);
  ck_assert_ok(clt_tensor_download(&ys, y));
  ck_assert_mem_eq(y, x, sizeof x);
  clt_dataset_desc d = {0};
  d.count = N;
  d.channels = C;
  d.height = 1;
  d.width = HW;
  if (bytes)
    d.pixels_u8 = xb;
  else
    d.values_f32 = xf;
  d.labels = labels;
  clt_dataset *ds = NULL;
  ck_assert_ok(clt_dataset_from_memory(g_ctx, &d, &ds));
  ck_assert_ok(clt_graph_adapt(g, ds));
  bool channel = !strcmp(per, "channel");
  int stats = channel ? C : SIZE, spatial = SIZE / stats;
  float mean[SIZE], var[SIZE], count;
  ck_assert_int_eq(norm->params[0].numel, stats);
  ck_assert_ok(clt_tensor_download(&norm->params[0].value, mean));
  ck_assert_ok(clt_tensor_download(&norm->params[1].value, var));
  ck_assert_ok(clt_tensor_download(&norm->params[2].value, &count));
  ck_assert_float_eq(count, (float)N);
  for (int c = 0; c < stats; c++) {
    double m = 0, v = 0, k = (double)N * spatial;
    for (int i = 0; i < N; i++)
      for (int j = 0; j < spatial; j++) m += x[i * SIZE + c * spatial + j] / k;
    for (int i = 0; i < N; i++)
      for (int j = 0; j < spatial; j++) {
        double e = x[i * SIZE + c * spatial + j] - m;
        v += e * e / k;
      }
    ck_assert_msg(fabs(mean[c] - m) <= 1e-6 * fmax(1.0, fabs(m)),
                  "%s: mean %d %g, want %g", per, c, mean[c], m);
    ck_assert_msg(fabs(var[c] - v) <= 1e-5 * fmax(1e-6, v),
                  "%s: var %d %g, want %g", per, c, var[c], v);
  }
  if (!channel) ck_assert_float_eq(var[4], 0.0f);
  ck_assert_ok(clt_graph_forward(g, false));
  ck_assert_ok(clt_tensor_download(&ys, y));
  for (int i = 0; i < N * SIZE; i++) {
    int c = (i % SIZE) / spatial;
    double want = var[c] > 0 ? (x[i] - mean[c]) / sqrt(var[c]) : x[i] - mean[c];
    ck_assert_msg(fabs(y[i] - want) <= 1e-5 * fmax(1.0, fabs(want)),
                  "%s: y[%d] %g, want %g", per, i, y[i], want);
  }
  clt_dataset_destroy(ds);
  /* A dataset of another sample size is refused. */
  d.width = HW + 1;
  float wide[N * C * (HW + 1)];
  memset(wide, 0, sizeof wide);
  d.pixels_u8 = NULL;
  d.values_f32 = wide;
  ck_assert_ok(clt_dataset_from_memory(g_ctx, &d, &ds));
  ck_assert_int_eq(clt_graph_adapt(g, ds), CLT_ERR_SHAPE);
  ck_assert_msg(strstr(clt_context_last_error(g_ctx), "normalize 'norm'"),
                "%s", clt_context_last_error(g_ctx));
  clt_dataset_destroy(ds);
  clt_graph_destroy(g);
}

START_TEST(test_normalize) {
  normalize_case("feature", false);
  normalize_case("feature", true);
  normalize_case("channel", false);
  normalize_case("channel", true);
  /* per=channel: one for an HxW input; flat data has features only */
  static const struct {
    const char *text;
    int64_t stats;
  } sizes[] = {
      {"input shape=3x4\nnormalize per=channel\nflatten\nmse\n", 1},
      {"input shape=5\nnormalize per=channel\nmse\n", 5},
      {"input shape=2x3x4\nnormalize per=channel\nflatten\nmse\n", 2},
      {"input shape=2x3x4\nnormalize\nflatten\nmse\n", 24},
  };
  for (int i = 0; i < 4; i++) {
    clt_graph *g = NULL;
    ck_assert_ok(graph_from_text(sizes[i].text, &g));
    ck_assert_int_eq(g->nodes[1].params[0].numel, sizes[i].stats);
    ck_assert_int_eq(g->nodes[1].params[1].numel, sizes[i].stats);
    clt_graph_destroy(g);
  }
  clt_graph *g = NULL;
  ck_assert_int_eq(graph_from_text("input shape=3\ndense units=2\n"
                                   "normalize\nmse\n",
                                   &g),
                   CLT_ERR_FORMAT);
  ck_assert_msg(strstr(clt_context_last_error(g_ctx), "must read the input"),
                "%s", clt_context_last_error(g_ctx));
  ck_assert_int_eq(graph_from_text("input shape=3\nnormalize per=pixel\nmse\n",
                                   &g),
                   CLT_ERR_FORMAT);
  ck_assert_msg(strstr(clt_context_last_error(g_ctx), "channel"), "%s",
                clt_context_last_error(g_ctx));
}
END_TEST

/* The last number on the summary's line of layer `name`; -1 if none. */
static long long summary_params(const char *summary, const char *name) {
  for (const char *line = summary; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t n = strlen(name);
    if (!strncmp(line, name, n) && line[n] == ' ') {
      const char *p = end ? end : line + strlen(line);
      while (p > line && p[-1] >= '0' && p[-1] <= '9') p--;
      return strtoll(p, NULL, 10);
    }
    line = end ? end + 1 : NULL;
  }
  return -1;
}

/* The summary counts every parameter of a layer, its statistics too, and
 * splits the total where some are not trained; cut short, it stays a
 * string. */
START_TEST(test_summary_counts) {
  clt_graph *g = NULL;
  ck_assert_ok(graph_from_text("input shape=3\nnormalize\ndense units=4\n"
                               "batchnorm\ndense units=2\n"
                               "softmax_cross_entropy\n",
                               &g));
  char buf[2048];
  clt_graph_summary(g, buf, sizeof buf);
  /* normalize: mean, var (3 each) and count; dense 3*4+4; batchnorm
   * gamma, beta (trained) and mean, var, count (not); dense 4*2+2 */
  const int64_t trained = 16 + 8 + 10, stats = 7 + 9;
  ck_assert_int_eq(clt_graph_parameter_count(g), trained);
  char want[160];
  snprintf(want, sizeof want,
           "total parameters: %lld (%lld trainable, %lld non-trainable",
           (long long)(trained + stats), (long long)trained,
           (long long)stats);
  ck_assert_msg(strstr(buf, want), "%s", buf);
  ck_assert_int_eq(summary_params(buf, "normalize1"), 7);
  ck_assert_int_eq(summary_params(buf, "batchnorm1"), 17);
  ck_assert_int_eq(summary_params(buf, "dense1"), 16);
  char small[40];
  memset(small, 'x', sizeof small);
  clt_graph_summary(g, small, sizeof small);
  ck_assert_int_eq(strlen(small), sizeof small - 1);
  clt_graph_destroy(g);

  ck_assert_ok(graph_from_text("input shape=3\ndense units=2\nmse\n", &g));
  clt_graph_summary(g, buf, sizeof buf);
  ck_assert_msg(strstr(buf, "total trainable parameters: 8\n"), "%s", buf);
  clt_graph_destroy(g);
}
END_TEST

/* class_weights: training's loss is the mean of each sample's loss times
 * its label's weight (Keras's class_weight), evaluation's the plain mean;
 * the weights are a parameter that is not trained; `balanced` learns
 * scikit-learn's from the labels (a class the data lacks keeps 1); the
 * option's errors. */
START_TEST(test_class_weights) {
  enum { N = 6, IN = 4, K = 3 };
  static const double w[K] = {1.0, 2.0, 0.5};
  float x[N * IN];
  int32_t labels[N] = {0, 2, 1, 2, 0, 1};
  clt_random_fill(x, N * IN, 19, -2.0f, 2.0f);
  clt_graph *g = NULL;
  ck_assert_ok(graph_from_text("input shape=4\ndense units=3\n"
                               "softmax_cross_entropy class_weights=1,2,0.5\n",
                               &g));
  ck_assert_int_eq(clt_graph_parameter_count(g), IN * K + K);
  ck_assert_ok(clt_graph_compile(g, N, 3));
  clt_graph_node *loss = node_named(g, "softmax_cross_entropy1");
  float got[K];
  ck_assert_ok(clt_tensor_download(&loss->params[0].value, got));
  for (int c = 0; c < K; c++) ck_assert_float_eq(got[c], (float)w[c]);
  ck_assert_ok(clt_graph_set_batch(g, x, labels, N));
  for (int training = 1; training >= 0; training--) {
    clt_metrics m;
    ck_assert_ok(clt_graph_metrics(g, &m, true));
    ck_assert_ok(clt_graph_forward(g, training));
    float p[N * K];
    int64_t outputs = 0;
    ck_assert_ok(clt_graph_predictions(g, p, &outputs));
    ck_assert_ok(clt_graph_metrics(g, &m, true));
    double want = 0.0;
    for (int r = 0; r < N; r++)
      want += (training ? w[labels[r]] : 1.0) * -log(p[r * K + labels[r]]);
    want /= N;
    ck_assert_msg(fabs(m.loss - want) < 1e-5 * fmax(1.0, want),
                  "%s: loss %.8g, want %.8g",
                  training ? "training" : "evaluation", m.loss, want);
  }
  clt_graph_destroy(g);

  /* balanced: 6 of class 0, 2 of class 1, none of class 2 */
  ck_assert_ok(graph_from_text("input shape=4\ndense units=3\n"
                               "softmax_cross_entropy "
                               "class_weights=balanced\n",
                               &g));
  ck_assert_ok(clt_graph_compile(g, N, 3));
  loss = node_named(g, "softmax_cross_entropy1");
  float count = -1.0f;
  ck_assert_ok(clt_tensor_download(&loss->params[1].value, &count));
  ck_assert_float_eq(count, 0.0f); /* not learnt: ones */
  enum { M = 8 };
  static uint8_t px[M * IN];
  static int32_t y[M] = {0, 0, 1, 0, 0, 1, 0, 0};
  clt_dataset_desc d = {0};
  d.count = M;
  d.channels = d.height = 1;
  d.width = IN;
  d.pixels_u8 = px;
  d.labels = y;
  d.num_classes = K;
  clt_dataset *ds = NULL;
  ck_assert_ok(clt_dataset_from_memory(g_ctx, &d, &ds));
  ck_assert_ok(clt_graph_adapt(g, ds));
  ck_assert_ok(clt_tensor_download(&loss->params[0].value, got));
  ck_assert_float_eq_tol(got[0], 8.0f / 12.0f, 1e-7f);
  ck_assert_float_eq(got[1], 2.0f);
  ck_assert_float_eq(got[2], 1.0f);
  ck_assert_ok(clt_tensor_download(&loss->params[1].value, &count));
  ck_assert_float_eq(count, (float)M);
  char summary[2048];
  clt_graph_summary(g, summary, sizeof summary);
  ck_assert_int_eq(summary_params(summary, "softmax_cross_entropy1"), K + 1);
  clt_dataset_destroy(ds);
  clt_graph_destroy(g);

  static const struct {
    const char *weights, *says;
  } bad[] = {
      {"1,2", "2 weights for 3 classes"},
      {"1,-1,2", "weight 2 is '-1'"},
      {"1,x,2", "weight 2 is 'x'"},
      {"1,,2", "weight 2 is ''"},
      {"0,0,0", "every weight is 0"},
      {"1,2,3,4", "4 weights for 3 classes"},
  };
  for (int i = 0; i < 6; i++) {
    char text[160];
    snprintf(text, sizeof text,
             "input shape=3\ndense units=3\n"
             "softmax_cross_entropy class_weights=%s\n",
             bad[i].weights);
    ck_assert_int_eq(graph_from_text(text, &g), CLT_ERR_FORMAT);
    ck_assert_msg(strstr(clt_context_last_error(g_ctx), bad[i].says), "%s",
                  clt_context_last_error(g_ctx));
  }
  ck_assert_int_eq(
      graph_from_text("input shape=3\nmse class_weights=balanced\n", &g),
      CLT_ERR_FORMAT);
}
END_TEST

/* The weighted loss's gradients, with label smoothing too. */
START_TEST(test_fd_class_weights) {
  check_gradients("input shape=4\ndense units=3 activation=tanh\n"
                  "dense units=3\n"
                  "softmax_cross_entropy class_weights=0.5,3,1.25 "
                  "label_smoothing=0.1\n",
                  5, false);
}
END_TEST

/* Parameters by name: their list, values out and in (a write changes the
 * next forward, under mixed precision too), and the errors. */
START_TEST(test_param_access) {
  clt_graph *g = NULL;
  ck_assert_ok(graph_from_text("input shape=3\ndense name=fc units=4\n"
                               "batchnorm name=bn\ndense name=out units=2\n"
                               "softmax_cross_entropy name=loss "
                               "class_weights=1,3\n",
                               &g));
  static const char *const names[] = {
      "fc.weight", "fc.bias",         "bn.weight",   "bn.bias",
      "bn.running_mean", "bn.running_var", "bn.num_batches_tracked",
      "out.weight", "out.bias", "loss.class_weights"};
  ck_assert_int_eq(clt_graph_param_tensors(g), 10);
  clt_param_info info;
  for (int i = 0; i < 10; i++) {
    ck_assert_ok(clt_graph_param_info(g, i, &info));
    ck_assert_str_eq(info.name, names[i]);
  }
  ck_assert_ok(clt_graph_param_info(g, 0, &info));
  ck_assert_int_eq(info.ndim, 2);
  ck_assert_int_eq(info.numel, 12);
  ck_assert(info.trainable);
  ck_assert_ok(clt_graph_param_info(g, 9, &info));
  ck_assert(!info.trainable);
  ck_assert_int_eq(clt_graph_param_info(g, 10, &info),
                   CLT_ERR_INVALID_ARGUMENT);
  float w[8];
  ck_assert_int_eq(clt_graph_get_param(g, "out.weight", w, 8),
                   CLT_ERR_INVALID_ARGUMENT); /* not compiled */
  ck_assert_ok(clt_graph_compile(g, 4, 3));
  float cw[2];
  ck_assert_ok(clt_graph_get_param(g, "loss.class_weights", cw, 2));
  ck_assert(cw[0] == 1.0f && cw[1] == 3.0f);
  for (int mixed = 0; mixed < 2; mixed++) {
    if (mixed) {
      ck_assert_ok(clt_graph_set_precision(g, CLT_PRECISION_MIXED));
      ck_assert_ok(clt_graph_compile(g, 4, 3));
    }
    /* the output layer's weights and bias zero: every prediction 1/2 */
    float x[4 * 3], p[4 * 2], before[8];
    clt_random_fill(x, 12, 5, -1.0f, 1.0f);
    ck_assert_ok(clt_graph_get_param(g, "out.weight", before, 8));
    ck_assert_ok(clt_graph_set_batch(g, x, NULL, 4));
    ck_assert_ok(clt_graph_forward(g, false));
    int64_t outputs = 0;
    ck_assert_ok(clt_graph_predictions(g, p, &outputs));
    ck_assert(fabsf(p[0] - 0.5f) > 1e-4f || fabsf(p[2] - 0.5f) > 1e-4f);
    float zero[8] = {0};
    ck_assert_ok(clt_graph_set_param(g, "out.weight", zero, 8));
    ck_assert_ok(clt_graph_set_param(g, "out.bias", zero, 2));
    ck_assert_ok(clt_graph_get_param(g, "out.weight", w, 8));
    ck_assert_mem_eq(w, zero, sizeof zero);
    ck_assert_ok(clt_graph_forward(g, false));
    ck_assert_ok(clt_graph_predictions(g, p, &outputs));
    for (int i = 0; i < 8; i++)
      ck_assert_msg(p[i] == 0.5f, "%s: prediction %d is %g",
                    mixed ? "mixed" : "fp32", i, p[i]);
    ck_assert_ok(clt_graph_set_param(g, "out.weight", before, 8));
  }
  ck_assert_int_eq(clt_graph_get_param(g, "out.weight", w, 7),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(clt_context_last_error(g_ctx),
                       "'out.weight': it holds 8 values, not 7"),
                "%s", clt_context_last_error(g_ctx));
  ck_assert_int_eq(clt_graph_set_param(g, "out.weights", w, 8),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(clt_context_last_error(g_ctx),
                       "no parameter 'out.weights' (it has 'fc.weight', "
                       "'fc.bias'"),
                "%s", clt_context_last_error(g_ctx));
  clt_graph_destroy(g);
}
END_TEST

START_TEST(test_layer_shape_errors) {
  clt_graph *g = NULL;
  ck_assert_int_eq(graph_from_text("input shape=1x4x4\nconv2d filters=2 "
                                   "kernel=5\n",
                                   &g),
                   CLT_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx), "conv2d"));
  ck_assert_int_eq(graph_from_text("input shape=16\nconv2d filters=2 "
                                   "kernel=3\n",
                                   &g),
                   CLT_ERR_SHAPE);
  ck_assert_int_eq(graph_from_text("input shape=1x4x4\nconv2d name=a "
                                   "filters=2 kernel=3\nconv2d name=b "
                                   "filters=3 kernel=3 input=input1\n"
                                   "add inputs=a,b\n",
                                   &g),
                   CLT_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx), "'a'"));
  ck_assert_int_eq(graph_from_text("input shape=1x4x4\nconv2d filters=2 "
                                   "kernel=2 stride=2 padding=same\n",
                                   &g),
                   CLT_ERR_FORMAT);
  ck_assert_int_eq(graph_from_text("input shape=3\ndropout rate=1\n", &g),
                   CLT_ERR_FORMAT);
}
END_TEST

/* layernorm and depthwise_conv2d lines: their parameters as PyTorch's,
 * their errors, and conv2d's groups= pointing to depthwise_conv2d. */
START_TEST(test_norm_and_depthwise_lines) {
  clt_graph *g = NULL;
  ck_assert_ok(graph_from_text("input shape=3x6x5\n"
                               "depthwise_conv2d name=dw kernel=3x1 "
                               "multiplier=2 padding=1\n"
                               "layernorm name=ln\nflatten\ndense units=2\n"
                               "mse\n",
                               &g));
  clt_graph_node *dw = node_named(g, "dw"), *ln = node_named(g, "ln");
  ck_assert_int_eq(dw->n_params, 2);
  ck_assert_int_eq(dw->params[0].ndim, 4);
  int64_t want_w[4] = {6, 1, 3, 1};
  for (int d = 0; d < 4; d++)
    ck_assert_int_eq(dw->params[0].shape[d], want_w[d]);
  ck_assert_int_eq(dw->params[1].numel, 6);
  ck_assert_int_eq(dw->shape[0], 6);
  ck_assert_int_eq(dw->shape[1], 6);
  ck_assert_int_eq(dw->shape[2], 7);
  ck_assert_int_eq(ln->n_params, 2);
  ck_assert_int_eq(ln->params[0].ndim, 3);
  ck_assert_int_eq(ln->params[0].numel, 6 * 6 * 7);
  ck_assert_int_eq(ln->params[1].numel, 6 * 6 * 7);
  clt_graph_destroy(g);
  g = NULL;
  /* over=channels: a scale and a shift a channel, PyTorch's
   * LayerNorm(C)'s [C] */
  ck_assert_ok(graph_from_text("input shape=5x3x2\n"
                               "layernorm name=ln over=channels\nflatten\n"
                               "mse\n",
                               &g));
  ln = node_named(g, "ln");
  ck_assert_int_eq(ln->ndim, 3);
  for (int p = 0; p < 2; p++) {
    ck_assert_int_eq(ln->params[p].ndim, 1);
    ck_assert_int_eq(ln->params[p].shape[0], 5);
  }
  clt_graph_destroy(g);
  g = NULL;
  static const struct {
    const char *model;
    clt_status status;
    const char *says;
  } bad[] = {
      {"input shape=12\ndepthwise_conv2d kernel=3\n", CLT_ERR_SHAPE,
       "expects [channels, height, width]"},
      {"input shape=2x5x5\ndepthwise_conv2d kernel=3 multiplier=0\n",
       CLT_ERR_FORMAT, "multiplier"},
      {"input shape=2x2x2\ndepthwise_conv2d kernel=3\n", CLT_ERR_SHAPE,
       "does not fit"},
      {"input shape=4x8x8\nconv2d filters=8 kernel=3 groups=4\n",
       CLT_ERR_FORMAT, "write 'depthwise_conv2d kernel=3 multiplier=2'"},
      {"input shape=4x8x8\nconv2d filters=8 kernel=3 groups=2\n",
       CLT_ERR_FORMAT, "only 1 is supported"},
      {"input shape=4\nlayernorm eps=0\n", CLT_ERR_FORMAT,
       "eps must be positive"},
      {"input shape=4\nlayernorm over=channels\n", CLT_ERR_SHAPE,
       "over=channels normalises each pixel of an image over its channels: "
       "it expects [channels, height, width], but 'input1' gives [4]"},
      {"input shape=4x2x2\nlayernorm over=pixels\n", CLT_ERR_FORMAT,
       "over"},
      /* sizes past a tensor's 2^31 elements, or whose products overflow
       * (they crashed at compile) */
      {"input shape=3x8x8\ndepthwise_conv2d kernel=3 "
       "multiplier=9223372036854775807\n",
       CLT_ERR_SHAPE, "multiplier=9223372036854775807: more than 2^31 - 1"},
      {"input shape=3x8x8\ndepthwise_conv2d kernel=3 "
       "multiplier=1000000000\n",
       CLT_ERR_SHAPE, "[3000000000, 6, 6] holds more than 2^31 values"},
      {"input shape=3x8x8\nconv2d filters=9223372036854775807 kernel=3\n",
       CLT_ERR_SHAPE, "filters=9223372036854775807: more than 2^31 - 1"},
      {"input shape=3x3x3\nconv2d filters=100000000 kernel=3\n",
       CLT_ERR_SHAPE,
       "its parameter 'weight' [100000000, 3, 3, 3] holds more than 2^31"},
      {"input shape=4\ndense units=4611686018427387904\n", CLT_ERR_SHAPE,
       "units=4611686018427387904: more than 2^31 - 1"},
      {"input shape=400000\ndense units=100000\n", CLT_ERR_SHAPE,
       "its parameter 'weight' [100000, 400000] holds more than 2^31"},
      /* windows whose products overflowed in the layer's own configure
       * (the init's fans: UBSan) or whose padded input passes the
       * kernels' int indices */
      {"input shape=1000x28x28\nconv2d filters=1000 kernel=2000000000 "
       "padding=1000000000\n",
       CLT_ERR_SHAPE, "kernel=2000000000x2000000000: more than 2^31 - 1 taps"},
      {"input shape=1000x28x28\ndepthwise_conv2d multiplier=1000 "
       "kernel=2000000000 padding=1000000000\n",
       CLT_ERR_SHAPE, "kernel=2000000000x2000000000: more than 2^31 - 1 taps"},
      {"input shape=1x28x28\nconv2d filters=1 kernel=3 "
       "padding=2147483647 stride=2147483647\n",
       CLT_ERR_SHAPE,
       "padding=2147483647x2147483647: the padded input "
       "(4294967322x4294967322) is more than 2^31 - 1 values a side"},
      {"input shape=1x28x28\nconv2d filters=1 kernel=3x2147483647 "
       "dilation=1073741824 padding=same\n",
       CLT_ERR_SHAPE, "the padded input (2147483676x2305843007066210332)"},
      {"input shape=1x28x28\nmaxpool kernel=65536\n",
       CLT_ERR_SHAPE, "more than 2^31 - 1 taps"},
      {"input shape=1x28x28\nmaxpool kernel=2147483646x1 "
       "padding=1073741823x0\n",
       CLT_ERR_SHAPE, "the padded input (2147483674x28)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq(graph_from_text(bad[i].model, &g), bad[i].status);
    ck_assert_msg(strstr(clt_context_last_error(g_ctx), bad[i].says),
                  "%s: %s", bad[i].model, clt_context_last_error(g_ctx));
  }
  ck_assert_ok(graph_from_text("input shape=4x8x8\nconv2d filters=8 "
                               "kernel=3 groups=1\nflatten\nmse\n",
                               &g));
  clt_graph_destroy(g);
  g = NULL;
  /* padding takes 0, alone (the documented default, written out) or on one
   * axis (a 3x1 kernel padded 1x0, as PyTorch's padding=(1, 0)) */
  ck_assert_ok(graph_from_text("input shape=2x8x6\nconv2d name=c "
                               "filters=3 kernel=3x1 padding=1x0\n"
                               "depthwise_conv2d name=d kernel=1x3 "
                               "padding=0x1\nmaxpool name=p kernel=2 "
                               "padding=0\navgpool name=q kernel=3x1 "
                               "stride=1 padding=1x0\nflatten\nmse\n",
                               &g));
  static const struct {
    const char *name;
    int64_t shape[3];
  } want[] = {{"c", {3, 8, 6}}, {"d", {3, 8, 6}}, {"p", {3, 4, 3}},
              {"q", {3, 4, 3}}};
  for (int i = 0; i < 4; i++)
    for (int d = 0; d < 3; d++)
      ck_assert_int_eq(node_named(g, want[i].name)->shape[d],
                       want[i].shape[d]);
  clt_graph_destroy(g);
  g = NULL;
  ck_assert_int_eq(graph_from_text("input shape=1x8x8\nconv2d filters=1 "
                                   "kernel=3 padding=1x-1\n",
                                   &g),
                   CLT_ERR_FORMAT);
  ck_assert_msg(strstr(clt_context_last_error(g_ctx),
                       "option 'padding' expects 1 to 2 whole numbers (0 or "
                       "more) joined by 'x' (like 1x0), got '1x-1'"),
                "%s", clt_context_last_error(g_ctx));
  ck_assert_int_eq(graph_from_text("input shape=1x8x8\nconv2d filters=1 "
                                   "kernel=3 stride=0\n",
                                   &g),
                   CLT_ERR_FORMAT);
  ck_assert_msg(strstr(clt_context_last_error(g_ctx), "(a dimension is 0)"),
                "%s", clt_context_last_error(g_ctx));
}
END_TEST

/* Layer normalisation does not depend on the batch: each sample's output
 * alone equals its row in a batch of three, in training and evaluation
 * forwards alike (no running statistics). */
START_TEST(test_layernorm_batch_independent) {
  clt_graph *g = NULL;
  ck_assert_ok(graph_from_text("input shape=2x3x3\n"
                               "conv2d filters=3 kernel=3 padding=1\n"
                               "layernorm name=ln\ntanh\nflatten\n"
                               "dense units=4\nsoftmax_cross_entropy\n",
                               &g));
  ck_assert_ok(clt_graph_compile(g, 3, 5));
  clt_graph_node *ln = node_named(g, "ln");
  float x[3 * 18];
  clt_random_fill(x, 3 * 18, 9, -2.0f, 3.0f);
  for (int i = 0; i < 18; i++) x[18 + i] *= 10.0f; /* another scale */
  int32_t y[3] = {0, 1, 2};
  float all[3 * 27], one[27];
  for (int training = 0; training < 2; training++) {
    ck_assert_ok(clt_graph_set_batch(g, x, y, 3));
    ck_assert_ok(clt_graph_forward(g, training));
    clt_tensor out = clt_tensor_slice_1d(ln->out, 0, 3 * 27);
    ck_assert_ok(clt_tensor_download(&out, all));
    for (int n = 0; n < 3; n++) {
      ck_assert_ok(clt_graph_set_batch(g, x + 18 * n, y + n, 1));
      ck_assert_ok(clt_graph_forward(g, training));
      clt_tensor o1 = clt_tensor_slice_1d(ln->out, 0, 27);
      ck_assert_ok(clt_tensor_download(&o1, one));
      for (int i = 0; i < 27; i++)
        ck_assert_float_eq_tol(one[i], all[27 * n + i], 1e-6f);
    }
  }
  clt_graph_destroy(g);
}
END_TEST

static Suite *layers_suite(void) {
  Suite *s = suite_create("layers");
  TCase *fd = tcase_create("finite differences");
  tcase_set_timeout(fd, 600);
  tcase_add_test(fd, test_fd_conv_stride2_pad);
  tcase_add_test(fd, test_fd_conv_5x5_dilated_maxpool);
  tcase_add_test(fd, test_fd_maxpool_vectors);
  tcase_add_test(fd, test_fd_conv_1x1_batch1);
  tcase_add_test(fd, test_fd_conv_same_rect);
  tcase_add_test(fd, test_fd_batchnorm_2d);
  tcase_add_test(fd, test_fd_batchnorm_1d);
  tcase_add_test(fd, test_fd_layernorm);
  tcase_add_test(fd, test_fd_depthwise);
  tcase_add_test(fd, test_fd_global_maxpool);
  tcase_add_test(fd, test_fd_residual_and_concat);
  tcase_add_test(fd, test_fd_class_weights);
  suite_add_tcase(s, fd);
  TCase *beh = tcase_create("behaviour");
  tcase_add_test(beh, test_batchnorm_running_stats);
  tcase_add_test(beh, test_dropout_rate_and_seed);
  tcase_add_test(beh, test_layer_shape_errors);
  tcase_add_test(beh, test_norm_and_depthwise_lines);
  tcase_add_test(beh, test_layernorm_batch_independent);
  tcase_add_test(beh, test_label_smoothing);
  tcase_add_test(beh, test_more_activations);
  tcase_add_test(beh, test_regression_losses);
  tcase_add_test(beh, test_sigmoid_cross_entropy);
  tcase_add_test(beh, test_normalize);
  tcase_add_test(beh, test_summary_counts);
  tcase_add_test(beh, test_class_weights);
  tcase_add_test(beh, test_param_access);
  suite_add_tcase(s, beh);
  return s;
}

int main(void) { return test_run_suite("layers", layers_suite); }
