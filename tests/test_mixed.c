/* Mixed precision (issue 11): the device's rounding to fp16 against the
 * host's IEEE conversions; every layer in mixed precision against the
 * same graph in fp32 (fp16 tolerance), with every value that mixed
 * precision rounds checked to be an fp16 value; the loss scaler attached
 * to the optimizer (skipped steps leave the weights and Adam's step count
 * alone, the graph's loss scale follows the scaler); switching precision
 * back to fp32 gives fp32's bits again. */
#include "graph_helpers.h"

static float bits_f(uint32_t x) {
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

/* clt_round_f16 (cl/half.cl round_to_half) gives the host's
 * f32 -> f16 -> f32 for every half, the midpoints between neighbours (ties
 * to even), the floats just beside them, the overflow boundary, subnormals,
 * NaN and infinities, and random floats of every exponent. */
START_TEST(device_rounding_matches_the_host) {
  int stride = test_tiny() ? 61 : 1;
  enum { M = 5 * 65536 + 200000 + 16 };
  static float x[M], y[M];
  int m = 0;
  for (int i = 0; i < 65536; i += stride) {
    uint16_t hi = (uint16_t)i, next = (uint16_t)(i + 1);
    if ((hi & 0x7fff) >= 0x7c00) continue;
    float a, b;
    clt_f16_to_f32(&hi, &a, 1);
    clt_f16_to_f32(&next, &b, 1);
    if ((next & 0x7fff) >= 0x7c00) b = 2 * a;
    float mid = a + (b - a) / 2;
    uint32_t mb;
    memcpy(&mb, &mid, 4);
    x[m++] = a;
    x[m++] = mid;
    x[m++] = bits_f(mb + 1); /* just past the tie */
    x[m++] = bits_f(mb - 1); /* just before it */
    x[m++] = a + (b - a) / 4;
  }
  clt_rng rng = clt_rng_derive(3, 0, 0);
  for (int i = 0; i < 200000 / stride; i++)
    x[m++] = bits_f((uint32_t)(clt_rng_next(&rng) >> 32));
  const float edges[] = {65504.0f, 65519.0f, bits_f(0x477fefff), 65520.0f,
                         -65520.0f, 1e30f, bits_f(0x7f7fffff),
                         bits_f(0x00000001), -bits_f(0x33000000),
                         bits_f(0x33000001), 0.0f, -0.0f, INFINITY,
                         -INFINITY, NAN, 0x1p-14f};
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
    x[m++] = edges[i];
  ck_assert_int_le(m, M);
  clt_tensor *t = NULL;
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_F32, 1, (int64_t[]){m}, &t));
  ck_assert_ok(clt_tensor_upload(t, x));
  ck_assert_ok(clt_round_f16(g_ctx, t, t, m));
  ck_assert_ok(clt_tensor_download(t, y));
  for (int i = 0; i < m; i++) {
    float want = host_round(x[i]);
    ck_assert_msg(isnan(want) ? isnan(y[i]) : memcmp(&want, &y[i], 4) == 0,
                  "%a: device %a, host %a", (double)x[i], (double)y[i],
                  (double)want);
  }
  clt_tensor_destroy(t);
}
END_TEST

static float *download_all(const clt_tensor *t, int64_t n) {
  float *h = malloc((size_t)n * sizeof(float));
  clt_tensor s = clt_tensor_slice_1d(t, 0, n);
  ck_assert_ok(clt_tensor_download(&s, h));
  return h;
}

/* |a - b| over the largest |b|, elementwise max: fp16 keeps 11 bits, and
 * a few layers compound it. */
static double rel_error_floor(const float *a, const float *b, int64_t n,
                              double floor) {
  double diff = 0.0, scale = floor;
  for (int64_t i = 0; i < n; i++) {
    diff = fmax(diff, fabs((double)a[i] - b[i]));
    scale = fmax(scale, fabs((double)b[i]));
  }
  return diff / scale;
}

static double rel_error(const float *a, const float *b, int64_t n) {
  return rel_error_floor(a, b, n, 1e-6);
}

static void expect_half_values(const clt_tensor *t, int64_t n,
                               const char *what, const char *node) {
  float *h = download_all(t, n);
  for (int64_t i = 0; i < n; i++)
    ck_assert_msg(is_half_value(h[i]), "%s of %s [%lld] = %a: not an fp16 value",
                  what, node, (long long)i, (double)h[i]);
  free(h);
}

/* One model in fp32 and in mixed precision, same seed and batch: loss,
 * every parameter gradient and the output of every node agree within fp16
 * tolerance, and in the mixed graph every rounded output and gradient
 * holds fp16 values only. */
static void compare_mixed(const char *model, int64_t batch, bool targets) {
  clt_graph *g32 = NULL, *g16 = NULL;
  ck_assert_ok(graph_from_text(model, &g32));
  ck_assert_ok(graph_from_text(model, &g16));
  /* Every buffer its own memory, so that each can be read after the step
   * (the memory plan reuses an output's memory after its backward). */
  g32->share_buffers = g16->share_buffers = false;
  ck_assert_ok(clt_graph_set_precision(g16, CLT_PRECISION_MIXED));
  ck_assert_int_eq(clt_graph_precision(g16), CLT_PRECISION_MIXED);
  ck_assert_ok(clt_graph_compile(g32, batch, 5));
  ck_assert_ok(clt_graph_compile(g16, batch, 5));
  random_batch(g32, batch, 11, targets);
  random_batch(g16, batch, 11, targets);
  /* A loss scale of 1024: mixed gradients come back 1024 times larger. */
  clt_graph_set_loss_scale(g16, 1024.0f);
  ck_assert(clt_graph_loss_scale(g16) == 1024.0f);
  ck_assert_ok(clt_graph_forward(g32, true));
  ck_assert_ok(clt_graph_backward(g32));
  ck_assert_ok(clt_graph_forward(g16, true));
  ck_assert_ok(clt_graph_backward(g16));
  clt_metrics m32, m16;
  ck_assert_ok(clt_graph_metrics(g32, &m32, true));
  ck_assert_ok(clt_graph_metrics(g16, &m16, true));
  ck_assert_msg(fabs(m32.loss - m16.loss) <= 1e-2 * fmax(1.0, fabs(m32.loss)),
                "loss fp32 %.6f, mixed %.6f", m32.loss, m16.loss);
  /* Gradients that should be 0 (a bias before batch norm) are rounding
   * noise in both: parameter gradients are compared on the scale of the
   * largest. */
  float *all = download_all(g32->grads, g32->param_count);
  double largest = 0.0;
  for (int64_t j = 0; j < g32->param_count; j++)
    largest = fmax(largest, fabs((double)all[j]));
  free(all);
  for (int i = 0; i < g32->n_nodes; i++) {
    clt_graph_node *a = &g32->nodes[i], *b = &g16->nodes[i];
    if (a->is_loss || clt_node_aliases(a)) continue;
    int64_t n = batch * a->size;
    float *x = download_all(a->out, n), *y = download_all(b->out, n);
    double e = rel_error(y, x, n);
    ck_assert_msg(e < 2e-2, "%s output: mixed differs from fp32 by %.3g",
                  a->name, e);
    free(x);
    free(y);
    if (i != g16->input_node) expect_half_values(b->out, n, "output", b->name);
    if (b->grad && i != g16->input_node && b->needs_grad)
      expect_half_values(b->grad, n, "gradient", b->name);
    for (int k = 0; k < a->n_params; k++) {
      if (!a->params[k].trainable) continue;
      int64_t pn = a->params[k].numel;
      float *ga = download_all(&a->params[k].grad, pn);
      float *gb = download_all(&b->params[k].grad, pn);
      for (int64_t j = 0; j < pn; j++) {
        ck_assert_msg(is_half_value(gb[j]), "%s.%s gradient [%lld] %a",
                      b->name, b->params[k].suffix, (long long)j,
                      (double)gb[j]);
        gb[j] /= 1024.0f;
      }
      double ge = rel_error_floor(gb, ga, pn, 1e-2 * largest);
      ck_assert_msg(ge < 3e-2, "%s.%s gradient: mixed differs by %.3g",
                    a->name, a->params[k].suffix, ge);
      /* The values the layer used: the master rounded to fp16. */
      float *w = download_all(&b->params[k].value, pn);
      float *master = download_all(&a->params[k].value, pn);
      for (int64_t j = 0; j < pn; j++)
        ck_assert_msg(w[j] == host_round(master[j]), "%s.%s [%lld]",
                      b->name, b->params[k].suffix, (long long)j);
      free(w);
      free(master);
      free(ga);
      free(gb);
    }
  }
  clt_graph_destroy(g32);
  clt_graph_destroy(g16);
}

START_TEST(mixed_dense_activations) {
  compare_mixed("input shape=7\n"
                "dense units=9 activation=relu\n"
                "dense units=8 activation=leaky_relu\n"
                "dense units=6 activation=sigmoid\n"
                "dense units=5 activation=tanh\n"
                "dense units=5 activation=gelu\n"
                "batchnorm\n"
                "dropout rate=0.25\n"
                "dense units=3\nsoftmax_cross_entropy\n",
                7, false);
}
END_TEST

START_TEST(mixed_conv_pool_norm) {
  compare_mixed("input shape=3x9x7\n"
                "conv2d filters=5 kernel=3 stride=2 padding=1\n"
                "batchnorm\nrelu\n"
                "conv2d filters=4 kernel=3x5 padding=same dilation=1\n"
                "maxpool kernel=3 stride=2 padding=1\n"
                "conv2d filters=3 kernel=1 bias=false\n"
                "avgpool kernel=2\n"
                "flatten\ndense units=4\nsoftmax_cross_entropy\n",
                3, false);
}
END_TEST

/* Layer normalisation over a convolution's whole output, over each of
 * its pixels' channels and over a dense layer's features (its sums in f32
 * on fp16 inputs). */
START_TEST(mixed_layernorm) {
  compare_mixed("input shape=3x6x5\n"
                "conv2d filters=4 kernel=3 padding=1\n"
                "layernorm\nrelu\n"
                "layernorm over=channels\ntanh\n"
                "flatten\ndense units=9\nlayernorm eps=0.01\ngelu\n"
                "dense units=4\nsoftmax_cross_entropy\n",
                5, false);
}
END_TEST

/* A separable block: depthwise (a multiplier of 2, stride 2), then 1x1;
 * a global max pooling. */
START_TEST(mixed_depthwise) {
  compare_mixed("input shape=3x9x7\n"
                "depthwise_conv2d kernel=3 multiplier=2 stride=2 padding=1\n"
                "relu\nconv2d filters=4 kernel=1\n"
                "depthwise_conv2d kernel=3 padding=same dilation=1\n"
                "global_maxpool\ndense units=4\nsoftmax_cross_entropy\n",
                3, false);
}
END_TEST

START_TEST(mixed_residual_concat_softmax_mse) {
  compare_mixed("input shape=2x5x5\n"
                "conv2d name=c1 filters=3 kernel=3 padding=1\n"
                "tanh name=t1\n"
                "conv2d name=c2 filters=3 kernel=3 padding=1\n"
                "add name=res inputs=c2,t1\n"
                "conv2d name=c3 filters=2 kernel=1 input=t1\n"
                "concat inputs=res,c3\n"
                "global_avgpool\ndense units=6\nsoftmax\n"
                "reshape shape=2x3\nflatten\nmse\n",
                1, true);
}
END_TEST

/* The scaler on the optimizer: a scale that overflows fp16 gradients
 * skips the update (weights unchanged), backs off, and the graph's scale
 * follows; once the scale fits, steps go through, and Adam's step count
 * has counted only those (same weights as a run without the skips). */
START_TEST(optimizer_scaler_skips_overflow) {
  const char *model = "input shape=6\ndense units=8 activation=relu\n"
                      "dense units=3\nsoftmax_cross_entropy\n";
  clt_graph *g = NULL, *ref = NULL;
  ck_assert_ok(graph_from_text(model, &g));
  ck_assert_ok(graph_from_text(model, &ref));
  ck_assert_ok(clt_graph_set_precision(g, CLT_PRECISION_MIXED));
  ck_assert_ok(clt_graph_set_precision(ref, CLT_PRECISION_MIXED));
  ck_assert_ok(clt_graph_compile(g, 4, 9));
  ck_assert_ok(clt_graph_compile(ref, 4, 9));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  clt_optimizer *opt = NULL, *ref_opt = NULL;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  ck_assert_ok(clt_optimizer_create(ref, &oo, &ref_opt));
  clt_loss_scaler_options so;
  clt_loss_scaler_options_init(&so);
  so.init_scale = 0x1p40f; /* the first gradients overflow fp16 */
  so.growth_interval = 1000;
  clt_loss_scaler *s = NULL, *rs = NULL;
  ck_assert_ok(clt_loss_scaler_create(g_ctx, &so, &s));
  clt_optimizer_set_loss_scaler(opt, s);
  ck_assert(clt_graph_loss_scale(g) == 0x1p40f);
  int64_t n = g->param_count;
  float *before = download_all(g->params, n);
  int skipped = 0;
  float scale = 0;
  for (;;) {
    scale = clt_loss_scaler_scale(s);
    random_batch(g, 4, 21, false);
    ck_assert_ok(clt_graph_forward(g, true));
    ck_assert_ok(clt_graph_backward(g));
    ck_assert_ok(clt_optimizer_step(opt));
    ck_assert(clt_graph_loss_scale(g) == clt_loss_scaler_scale(s));
    if (clt_loss_scaler_skipped(s) == skipped) break;
    skipped++;
    ck_assert(clt_loss_scaler_scale(s) == scale / 2);
    float *now = download_all(g->params, n);
    ck_assert_msg(memcmp(now, before, (size_t)n * sizeof(float)) == 0,
                  "a skipped step changed the weights");
    free(now);
    ck_assert_int_lt(skipped, 40);
  }
  ck_assert_int_ge(skipped, 1);
  /* A run that starts at the scale that went through takes the same first
   * step (Adam's first), then the same steps: the same weights. */
  so.init_scale = scale;
  ck_assert_ok(clt_loss_scaler_create(g_ctx, &so, &rs));
  clt_optimizer_set_loss_scaler(ref_opt, rs);
  random_batch(ref, 4, 21, false);
  ck_assert_ok(clt_graph_forward(ref, true));
  ck_assert_ok(clt_graph_backward(ref));
  ck_assert_ok(clt_optimizer_step(ref_opt));
  for (int step = 0; step < 3; step++) {
    clt_graph *both[2] = {g, ref};
    clt_optimizer *opts[2] = {opt, ref_opt};
    for (int k = 0; k < 2; k++) {
      random_batch(both[k], 4, 30 + (uint64_t)step, false);
      ck_assert_ok(clt_graph_forward(both[k], true));
      ck_assert_ok(clt_graph_backward(both[k]));
      ck_assert_ok(clt_optimizer_step(opts[k]));
    }
  }
  ck_assert_int_eq(clt_loss_scaler_skipped(s), skipped);
  ck_assert_int_eq(clt_loss_scaler_skipped(rs), 0);
  float *a = download_all(g->params, n), *b = download_all(ref->params, n);
  ck_assert_msg(memcmp(a, b, (size_t)n * sizeof(float)) == 0,
                "skipped steps moved Adam's step count");
  free(a);
  free(b);
  free(before);
  clt_optimizer_destroy(opt);
  clt_optimizer_destroy(ref_opt);
  clt_loss_scaler_destroy(s);
  clt_loss_scaler_destroy(rs);
  clt_graph_destroy(g);
  clt_graph_destroy(ref);
}
END_TEST

/* Back to fp32 after mixed: the same bits as a graph never mixed, whether
 * it was compiled in mixed precision (whose plan keeps outputs in fp16:
 * the graph is compiled again) or in fp32. */
START_TEST(precision_switches_back) {
  for (int compiled_mixed = 0; compiled_mixed < 2; compiled_mixed++) {
    const char *model = "input shape=5\ndense units=4 activation=tanh\n"
                        "dense units=4 activation=sigmoid\n"
                        "dense units=3\nsoftmax_cross_entropy\n";
    clt_graph *g = NULL, *ref = NULL;
    ck_assert_ok(graph_from_text(model, &g));
    ck_assert_ok(graph_from_text(model, &ref));
    g->save_f16_option = 1; /* the fp16 copies, made and dropped */
    if (compiled_mixed)
      ck_assert_ok(clt_graph_set_precision(g, CLT_PRECISION_MIXED));
    ck_assert_ok(clt_graph_compile(g, 3, 4));
    ck_assert_ok(clt_graph_compile(ref, 3, 4));
    ck_assert_int_eq(clt_graph_set_precision(g, (clt_precision)7),
                     CLT_ERR_INVALID_ARGUMENT);
    ck_assert_ok(clt_graph_set_precision(g, CLT_PRECISION_MIXED));
    bool saved = false;
    for (int i = 0; i < g->n_nodes; i++) saved |= g->nodes[i].out16 != NULL;
    ck_assert(saved);
    random_batch(g, 3, 2, false);
    ck_assert_ok(clt_graph_forward(g, true));
    ck_assert_ok(clt_graph_set_precision(g, CLT_PRECISION_FP32));
    for (int i = 0; i < g->n_nodes; i++) ck_assert(!g->nodes[i].out16);
    random_batch(g, 3, 2, false);
    random_batch(ref, 3, 2, false);
    clt_graph *both[2] = {g, ref};
    for (int k = 0; k < 2; k++) {
      ck_assert_ok(clt_graph_forward(both[k], true));
      ck_assert_ok(clt_graph_backward(both[k]));
    }
    int64_t n = g->param_count;
    float *a = download_all(g->grads, n), *b = download_all(ref->grads, n);
    ck_assert(memcmp(a, b, (size_t)n * sizeof(float)) == 0);
    free(a);
    free(b);
    clt_graph_destroy(g);
    clt_graph_destroy(ref);
  }
}
END_TEST

/* With the memory plan, mixed precision keeps saved outputs in fp16
 * between their forward and backward use where asked (save_f16): the same
 * bits as a graph whose every buffer has memory of its own, over training
 * steps, in less device memory than fp32's plan. By default a graph this
 * small keeps them in f32 (no conversions): the same bits again. */
START_TEST(mixed_memory_plan_same_bits_less_memory) {
  const char *model = "input shape=2x12x12\n"
                      "conv2d name=c1 filters=6 kernel=3 padding=1\n"
                      "batchnorm\nrelu name=r1\n"
                      "conv2d name=c2 filters=6 kernel=3 padding=1 "
                      "activation=relu\n"
                      "add name=res inputs=c2,r1\n"
                      "maxpool kernel=2\n"
                      "conv2d filters=8 kernel=3 padding=1\n"
                      "dropout rate=0.2\ntanh\n"
                      "flatten\ndense units=16 activation=gelu\n"
                      "dense units=5\nsoftmax_cross_entropy\n";
  /* planned in fp16, own memory, fp32, planned as by default */
  clt_graph *g[4] = {NULL, NULL, NULL, NULL};
  clt_optimizer *opt[4] = {NULL, NULL, NULL, NULL};
  clt_loss_scaler *sc[4] = {NULL, NULL, NULL, NULL};
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  clt_loss_scaler_options so;
  clt_loss_scaler_options_init(&so);
  so.init_scale = 256.0f;
  test_setenv("CLT_SAVE_F16", NULL);
  for (int k = 0; k < 4; k++) {
    ck_assert_ok(graph_from_text(model, &g[k]));
    g[k]->share_buffers = k != 1;
    if (k < 2) g[k]->save_f16_option = 1;
    if (k != 2)
      ck_assert_ok(clt_graph_set_precision(g[k], CLT_PRECISION_MIXED));
    ck_assert_ok(clt_graph_compile(g[k], 8, 3));
    if (k == 2) continue;
    ck_assert_ok(clt_optimizer_create(g[k], &oo, &opt[k]));
    ck_assert_ok(clt_loss_scaler_create(g_ctx, &so, &sc[k]));
    clt_optimizer_set_loss_scaler(opt[k], sc[k]);
  }
  int saved = 0, saved_default = 0;
  for (int i = 0; i < g[0]->n_nodes; i++) {
    saved += g[0]->nodes[i].out16 != NULL;
    saved_default += g[3]->nodes[i].out16 != NULL;
  }
  ck_assert_int_ge(saved, 5);
  ck_assert(g[0]->save_f16 && !g[3]->save_f16);
  ck_assert_int_eq(saved_default, 0);
  ck_assert_msg(g[0]->arena_bytes < g[2]->arena_bytes,
                "mixed plan %lld bytes, fp32 plan %lld",
                (long long)g[0]->arena_bytes, (long long)g[2]->arena_bytes);
  for (int step = 0; step < 4; step++)
    for (int k = 0; k < 4; k++) {
      if (k == 2) continue;
      random_batch(g[k], step == 3 ? 5 : 8, 40 + (uint64_t)step, false);
      ck_assert_ok(clt_graph_forward(g[k], true));
      ck_assert_ok(clt_graph_backward(g[k]));
      ck_assert_ok(clt_optimizer_step(opt[k]));
    }
  int64_t n = g[0]->param_count;
  float *a = download_all(g[0]->params, n);
  for (int k = 1; k < 4; k += 2) {
    float *b = download_all(g[k]->params, n);
    ck_assert_msg(memcmp(a, b, (size_t)n * sizeof(float)) == 0,
                  "mixed precision %s trains differently",
                  k == 1 ? "with every buffer its own" : "holding f32");
    free(b);
  }
  free(a);
  /* Evaluation after training reads the forward's buffers again. */
  clt_metrics m[4];
  for (int k = 0; k < 4; k++) {
    if (k == 2) continue;
    random_batch(g[k], 8, 99, false);
    ck_assert_ok(clt_graph_forward(g[k], false));
    ck_assert_ok(clt_graph_metrics(g[k], &m[k], true));
  }
  ck_assert(m[0].loss == m[1].loss && m[0].loss == m[3].loss);
  for (int k = 0; k < 4; k++) {
    clt_optimizer_destroy(opt[k]);
    clt_loss_scaler_destroy(sc[k]);
    clt_graph_destroy(g[k]);
  }
}
END_TEST

/* CLT_SAVE_F16 chooses where the graph does not: 1 holds saved outputs in
 * fp16, 0 in f32; anything else is refused, naming the variable. */
START_TEST(save_f16_env_checked) {
  const char *model = "input shape=1x6x6\n"
                      "conv2d filters=2 kernel=3 activation=relu\n"
                      "flatten\ndense units=3\nsoftmax_cross_entropy\n";
  const char *values[] = {"1", "0", "yes"};
  for (int v = 0; v < 3; v++) {
    clt_graph *g = NULL;
    ck_assert_ok(graph_from_text(model, &g));
    ck_assert_ok(clt_graph_set_precision(g, CLT_PRECISION_MIXED));
    test_setenv("CLT_SAVE_F16", values[v]);
    clt_status st = clt_graph_compile(g, 4, 3);
    test_setenv("CLT_SAVE_F16", NULL);
    if (v < 2) {
      ck_assert_ok(st);
      ck_assert(g->save_f16 == (v == 0));
    } else {
      ck_assert_int_eq(st, CLT_ERR_INVALID_ARGUMENT);
      ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx),
                                   "CLT_SAVE_F16=yes"));
    }
    clt_graph_destroy(g);
  }
}
END_TEST

static Suite *mixed_suite(void) {
  Suite *s = suite_create("mixed");
  TCase *tc = tcase_create("mixed");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, device_rounding_matches_the_host);
  tcase_add_test(tc, mixed_dense_activations);
  tcase_add_test(tc, mixed_conv_pool_norm);
  tcase_add_test(tc, mixed_layernorm);
  tcase_add_test(tc, mixed_depthwise);
  tcase_add_test(tc, mixed_residual_concat_softmax_mse);
  tcase_add_test(tc, optimizer_scaler_skips_overflow);
  tcase_add_test(tc, precision_switches_back);
  tcase_add_test(tc, mixed_memory_plan_same_bits_less_memory);
  tcase_add_test(tc, save_f16_env_checked);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite("mixed", mixed_suite); }
