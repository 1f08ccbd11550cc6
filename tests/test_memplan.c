/* The memory plan (graph/memplan.c): a compiled graph's outputs, gradients
 * and workspaces share device buffers, no two buffers that live at the
 * same time overlap, and training gives the same numbers, bit for bit, as
 * a graph whose every buffer has memory of its own. */
#include "graph_helpers.h"

#define CNN                                                                    \
  "input shape=2x9x9\n"                                                        \
  "conv2d filters=4 kernel=3 activation=relu\n"                                \
  "maxpool kernel=2\n"                                                         \
  "conv2d filters=6 kernel=3 padding=1 activation=tanh\n"                      \
  "avgpool kernel=2\n"                                                         \
  "flatten\n"                                                                  \
  "dense units=12 activation=relu\n"                                           \
  "dropout rate=0.25\n"                                                        \
  "dense units=5\n"                                                            \
  "softmax_cross_entropy\n"

/* Residual blocks with batch norm, a strided projection, a concat and a
 * node read by three consumers. */
#define RESNET                                                                 \
  "input shape=1x8x8\n"                                                        \
  "conv2d name=stem filters=4 kernel=3 padding=1 bias=false\n"                 \
  "batchnorm name=stem_bn\n"                                                   \
  "relu name=stem_relu\n"                                                      \
  "conv2d name=c1 filters=4 kernel=3 padding=1 bias=false\n"                   \
  "batchnorm name=bn1\n"                                                       \
  "relu name=r1\n"                                                             \
  "conv2d name=c2 filters=4 kernel=3 padding=1 bias=false\n"                   \
  "batchnorm name=bn2\n"                                                       \
  "add name=add1 inputs=bn2,stem_relu\n"                                       \
  "relu name=out1\n"                                                           \
  "conv2d name=d1 filters=6 kernel=3 stride=2 padding=1 bias=false\n"          \
  "batchnorm name=dbn1\n"                                                      \
  "relu name=dr1\n"                                                            \
  "conv2d name=proj filters=6 kernel=1 stride=2 bias=false input=out1\n"       \
  "add name=add2 inputs=dr1,proj\n"                                            \
  "conv2d name=side filters=2 kernel=1 input=stem_relu\n"                      \
  "maxpool name=sp kernel=2 input=side\n"                                      \
  "concat name=cat inputs=add2,sp\n"                                           \
  "relu name=out2\n"                                                           \
  "global_avgpool name=gap\n"                                                  \
  "dense name=fc units=5\n"                                                    \
  "softmax_cross_entropy\n"

/* An mse model whose loss reads a reshape of a dense layer. */
#define MSE_RESHAPE                                                            \
  "input shape=3x4\n"                                                          \
  "flatten\n"                                                                  \
  "dense units=16 activation=sigmoid\n"                                        \
  "dense units=6\n"                                                            \
  "reshape shape=2x3\n"                                                        \
  "mse\n"

static clt_graph *compiled(const char *model, int64_t batch, bool share) {
  clt_graph *g = NULL;
  ck_assert_ok(graph_from_text(model, &g));
  g->share_buffers = share;
  ck_assert_ok(clt_graph_compile(g, batch, 7));
  return g;
}

/* No two buffers that live at a common step share an element, and the
 * ones read between steps share nothing at all. */
static void check_no_overlap(const clt_graph *g) {
  for (int i = 0; i < g->n_requests; i++)
    for (int j = i + 1; j < g->n_requests; j++) {
      const clt_buffer_request *a = &g->requests[i], *b = &g->requests[j];
      if (a->partner == j && b->merged) {
        /* A kept pair: one buffer, alive from the forward to the
         * backward. */
        ck_assert(a->arena == b->arena && a->offset == b->offset);
        ck_assert(a->first <= b->first && b->last <= a->last);
        continue;
      }
      if (a->arena != b->arena) continue;
      bool same_time = a->first <= b->last && b->first <= a->last;
      bool same_memory = a->offset < b->offset + b->numel &&
                         b->offset < a->offset + a->numel;
      ck_assert_msg(!(same_time && same_memory),
                    "buffers %d (node %d, steps %d-%d) and %d (node %d, "
                    "steps %d-%d) overlap",
                    i, a->node, a->first, a->last, j, b->node, b->first,
                    b->last);
    }
}

START_TEST(test_buffers_are_shared) {
  const char *models[] = {CNN, RESNET, MSE_RESHAPE};
  for (int m = 0; m < 3; m++) {
    clt_graph *g = compiled(models[m], 16, true);
    check_no_overlap(g);
    /* The CNN's convolutions keep their im2col from the forward to the
     * backward: it costs the plan less than an eighth more. */
    int kept = 0;
    for (int i = 0; i < g->n_requests; i++) kept += g->requests[i].merged;
    if (m == 0) ck_assert_int_gt(kept, 0);
    ck_assert_int_gt(g->n_arenas, 0);
    /* The sum of what every node and layer asked for, and what they got
     * (the small mse model keeps most of its buffers: its input and the
     * loss's input are never shared; each of its buffers may be padded
     * to the plan's alignment). */
    int64_t most = m < 2 ? g->requested_bytes * 3 / 4
                         : g->requested_bytes + (int64_t)g->n_requests *
                                                    clt_graph_plan_align(g->ctx) *
                                                    4;
    ck_assert_msg(g->arena_bytes < most,
                  "model %d: %lld bytes planned for %lld asked", m,
                  (long long)g->arena_bytes, (long long)g->requested_bytes);
    clt_graph *u = compiled(models[m], 16, false);
    check_no_overlap(u);
    ck_assert_int_eq(u->requested_bytes, g->requested_bytes);
    ck_assert_int_ge(u->arena_bytes, u->requested_bytes);
    clt_graph_destroy(u);
    clt_graph_destroy(g);
  }
}
END_TEST

/* The public counter: the peak of a context that trains the residual
 * model is below that of one where no buffer is shared. */
static uint64_t training_peak(bool share) {
  char err[4096];
  clt_context *saved = g_ctx, *ctx = NULL;
  ck_assert_int_eq(clt_context_create(NULL, &ctx, err, sizeof err), CLT_OK);
  g_ctx = ctx; /* graph_from_text and ck_assert_ok use it */
  clt_graph *g = compiled(RESNET, 64, share);
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_SGD);
  clt_optimizer *opt = NULL;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  random_batch(g, 64, 3, false);
  ck_assert_ok(clt_graph_forward(g, true));
  ck_assert_ok(clt_graph_backward(g));
  ck_assert_ok(clt_optimizer_step(opt));
  ck_assert_ok(clt_context_finish(ctx));
  clt_memory_stats ms;
  clt_context_memory_stats(ctx, &ms);
  ck_assert_uint_ge(ms.device_bytes_peak, ms.device_bytes_live);
  ck_assert_uint_ge(ms.device_bytes_peak, (uint64_t)g->arena_bytes);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_context_destroy(ctx);
  g_ctx = saved;
  return ms.device_bytes_peak;
}

START_TEST(test_peak_memory_drops) {
  uint64_t shared = training_peak(true), own = training_peak(false);
  ck_assert_msg(shared < own, "peak %llu shared, %llu unshared",
                (unsigned long long)shared, (unsigned long long)own);
}
END_TEST

typedef struct run_record {
  float losses[6];
  float predictions[6][16 * 6];
  float *params;
  int64_t param_count;
} run_record;

/* Trains g `steps` Adam steps on a fixed batch, reading the loss and the
 * predictions after every step (after the backward and the update, when
 * only what the plan keeps alive may be read); destroys g. */
static void train_graph(clt_graph *g, bool float_targets, int steps,
                        run_record *r) {
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  clt_optimizer *opt = NULL;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  random_batch(g, 16, 5, float_targets);
  for (int s = 0; s < steps; s++) {
    ck_assert_ok(clt_graph_forward(g, true));
    ck_assert_ok(clt_graph_backward(g));
    ck_assert_ok(clt_optimizer_step(opt));
    clt_metrics m;
    ck_assert_ok(clt_graph_metrics(g, &m, true));
    r->losses[s] = (float)m.loss;
    int64_t outputs = 0;
    ck_assert_ok(clt_graph_predictions(g, r->predictions[s], &outputs));
    ck_assert_int_le(outputs, 6);
  }
  r->param_count = g->param_count;
  r->params = malloc((size_t)g->param_count * sizeof(float));
  clt_tensor p = clt_tensor_slice_1d(g->params, 0, g->param_count);
  ck_assert_ok(clt_tensor_download(&p, r->params));
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
}

static void train_record(const char *model, bool share, bool float_targets,
                         int steps, run_record *r) {
  clt_plan_mode saved = g_ctx->plan_option;
  g_ctx->plan_option = CLT_PLAN_OFF; /* the same products in both runs */
  clt_graph *g = compiled(model, 16, share);
  g_ctx->plan_option = saved;
  train_graph(g, float_targets, steps, r);
}

static void check_same_training(const char *model, bool float_targets) {
  static run_record a, b;
  train_record(model, true, float_targets, 6, &a);
  train_record(model, false, float_targets, 6, &b);
  ck_assert_mem_eq(a.losses, b.losses, sizeof a.losses);
  ck_assert_mem_eq(a.predictions, b.predictions, sizeof a.predictions);
  ck_assert_int_eq(a.param_count, b.param_count);
  ck_assert_mem_eq(a.params, b.params, (size_t)a.param_count * sizeof(float));
  free(a.params);
  free(b.params);
}

START_TEST(test_cnn_trains_the_same) { check_same_training(CNN, false); }
END_TEST

START_TEST(test_residual_trains_the_same) {
  check_same_training(RESNET, false);
}
END_TEST

START_TEST(test_mse_reshape_trains_the_same) {
  check_same_training(MSE_RESHAPE, true);
}
END_TEST

/* Gradients through shared buffers, checked by finite differences on the
 * residual model (batch norm, three consumers of one node, concat), with
 * tanh for relu: central differences across relu's kink at batch 3 are
 * off by more than the check allows, with or without a plan. */
START_TEST(test_fd_residual_shared) {
  char model[sizeof RESNET];
  memcpy(model, RESNET, sizeof model);
  for (char *p = model; (p = strstr(p, "relu")) != NULL; p += 4)
    if (p[4] == ' ') memcpy(p, "tanh", 4);
  check_gradients(model, 3, false);
}
END_TEST

/* ReLU fusion (clt_graph_compile): conv2d and dense layers with and
 * without a bias, batch norm and sums of two and of three apply the ReLU
 * after them; c3's output is read by its ReLU and by the add, so that
 * ReLU stays a layer of its own (and a3, read by the pool, has none). */
#define FUSABLE                                                                \
  "input shape=2x9x9\n"                                                        \
  "conv2d name=c1 filters=4 kernel=3 activation=relu\n"                        \
  "conv2d name=c2 filters=4 kernel=3 padding=1 bias=false\n"                   \
  "relu name=r2\n"                                                             \
  "conv2d name=c3 filters=4 kernel=3 padding=1\n"                              \
  "relu name=r3\n"                                                             \
  "add name=a3 inputs=c3,r3\n"                                                 \
  "maxpool kernel=2\n"                                                         \
  "conv2d name=c5 filters=4 kernel=3 padding=1 bias=false\n"                   \
  "batchnorm name=b5\n"                                                        \
  "relu name=r5\n"                                                             \
  "conv2d name=c6 filters=4 kernel=3 padding=1 bias=false\n"                   \
  "batchnorm name=b6\n"                                                        \
  "add name=a6 inputs=b6,r5\n"                                                 \
  "relu name=r6\n"                                                             \
  "add name=a7 inputs=r6,b6,c6\n"                                              \
  "relu name=r7\n"                                                             \
  "flatten\n"                                                                  \
  "dense name=d1 units=12 activation=relu\n"                                   \
  "dense name=d2 units=8 bias=false\n"                                         \
  "relu name=r4\n"                                                             \
  "dense units=5\n"                                                            \
  "softmax_cross_entropy\n"

/* train_record's run of FUSABLE, with ReLU fusion on or off (CLT_FUSE),
 * every layer's layout forced to `way` (0: as measured; 5 and 6: the
 * direct kernels, per row and per element, where offered) and the
 * precision given; *bytes: the memory plan's. */
static void train_fusion(bool fuse, int way, clt_precision precision,
                         run_record *r, int64_t *bytes) {
  clt_plan_mode saved = g_ctx->plan_option;
  g_ctx->plan_option = CLT_PLAN_OFF;
  test_setenv("CLT_FUSE", fuse ? "1" : "0");
  clt_graph *g = NULL;
  ck_assert_ok(graph_from_text(FUSABLE, &g));
  g->save_f16_option = fuse ? 1 : 0; /* as train_rounding */
  static const char *const direct[] = {"direct", "direct per element"};
  g->test_way = way <= 4 ? way : 0;
  g->test_way_name = way > 4 ? direct[way - 5] : NULL;
  ck_assert_ok(clt_graph_set_precision(g, precision));
  ck_assert_ok(clt_graph_compile(g, 16, 7));
  test_setenv("CLT_FUSE", NULL);
  g_ctx->plan_option = saved;
  check_no_overlap(g);
  const char *fused[] = {"c1", "c2", "d1", "d2", "b5", "a6", "a7"};
  for (int i = 0; i < 7; i++)
    ck_assert_msg(node_named(g, fused[i])->fused_relu == fuse, "%s",
                  fused[i]);
  const char *away[] = {"r2", "r5", "r6", "r7"};
  for (int i = 0; i < 4; i++)
    ck_assert_msg(node_named(g, away[i])->fused_away == fuse, "%s", away[i]);
  ck_assert(!node_named(g, "c3")->fused_relu);
  ck_assert(!node_named(g, "r3")->fused_away);
  ck_assert(!node_named(g, "a3")->fused_relu);
  ck_assert(!node_named(g, "b6")->fused_relu);
  *bytes = g->arena_bytes;
  train_graph(g, false, 6, r);
}

/* The fused layers give the unfused pair's bits, in fp32 and in mixed
 * precision (ReLU is exact in fp16), in every convolution layout
 * (_i: 1 gemm + swap, 2 NCHW direct, 3 its column-major form, 4 rows
 * backward, 5 and 6 the direct kernels), in less memory. */
START_TEST(test_relu_fusion_trains_the_same) {
  static run_record a, b;
  for (int mixed = 0; mixed < 2; mixed++) {
    clt_precision p = mixed ? CLT_PRECISION_MIXED : CLT_PRECISION_FP32;
    int64_t fused_bytes = 0, plain_bytes = 0;
    train_fusion(true, _i, p, &a, &fused_bytes);
    train_fusion(false, _i, p, &b, &plain_bytes);
    ck_assert_mem_eq(a.losses, b.losses, sizeof a.losses);
    ck_assert_mem_eq(a.predictions, b.predictions, sizeof a.predictions);
    ck_assert_int_eq(a.param_count, b.param_count);
    ck_assert_mem_eq(a.params, b.params,
                     (size_t)a.param_count * sizeof(float));
    ck_assert_msg(fused_bytes < plain_bytes, "%lld bytes fused, %lld not",
                  (long long)fused_bytes, (long long)plain_bytes);
    free(a.params);
    free(b.params);
  }
}
END_TEST

/* Layer normalisation doing the ReLU after it: the pair's bits, in fp32
 * and mixed precision, in each layout (forced by name; plans off: the
 * third is n3's alone, over each pixel's channels). */
#define LN_FUSABLE                                                             \
  "input shape=3x6x6\n"                                                        \
  "conv2d name=c1 filters=4 kernel=3\n"                                        \
  "layernorm name=n1\n"                                                        \
  "relu name=r1\n"                                                             \
  "flatten\n"                                                                  \
  "dense units=9\n"                                                            \
  "layernorm name=n2 eps=0.01\n"                                               \
  "relu name=r2\n"                                                             \
  "reshape shape=1x3x3\n"                                                      \
  "conv2d filters=3 kernel=1\n"                                                \
  "layernorm name=n3 over=channels\n"                                          \
  "relu name=r3\n"                                                             \
  "flatten\n"                                                                  \
  "dense units=6\n"                                                            \
  "softmax_cross_entropy\n"

static void train_ln_fusion(bool fuse, const char *way,
                            clt_precision precision, run_record *r) {
  clt_plan_mode saved = g_ctx->plan_option;
  g_ctx->plan_option = CLT_PLAN_OFF;
  test_setenv("CLT_FUSE", fuse ? "1" : "0");
  clt_graph *g = NULL;
  ck_assert_ok(graph_from_text(LN_FUSABLE, &g));
  g->test_way_name = way;
  g->save_f16_option = fuse ? 1 : 0; /* as train_fusion: both kinds */
  ck_assert_ok(clt_graph_set_precision(g, precision));
  ck_assert_ok(clt_graph_compile(g, 16, 7));
  test_setenv("CLT_FUSE", NULL);
  g_ctx->plan_option = saved;
  check_no_overlap(g);
  ck_assert(node_named(g, "n1")->fused_relu == fuse);
  ck_assert(node_named(g, "n2")->fused_relu == fuse);
  ck_assert(node_named(g, "r1")->fused_away == fuse);
  ck_assert(node_named(g, "r2")->fused_away == fuse);
  ck_assert(node_named(g, "n3")->fused_relu == fuse);
  ck_assert(node_named(g, "r3")->fused_away == fuse);
  train_graph(g, false, 6, r);
}

START_TEST(test_layernorm_relu_fusion) {
  static run_record a, b;
  static const char *const ways[] = {"per element", "runs of 16",
                                     "runs of 16, sums in one pass"};
  for (int w = 0; w < 3; w++)
    for (int mixed = 0; mixed < 2; mixed++) {
      clt_precision p = mixed ? CLT_PRECISION_MIXED : CLT_PRECISION_FP32;
      train_ln_fusion(true, ways[w], p, &a);
      train_ln_fusion(false, ways[w], p, &b);
      ck_assert_mem_eq(a.losses, b.losses, sizeof a.losses);
      ck_assert_mem_eq(a.predictions, b.predictions, sizeof a.predictions);
      ck_assert_int_eq(a.param_count, b.param_count);
      ck_assert_mem_eq(a.params, b.params,
                       (size_t)a.param_count * sizeof(float));
      free(a.params);
      free(b.params);
    }
}
END_TEST

/* Mixed precision's rounding in the layers' own kernels
 * (clt_graph_out_round, clt_graph_grad_round): every layer type that
 * takes it, a three-input sum, a gradient with two writers (t3's output
 * feeds a3 and c4, so it is summed, then rounded by the graph), a
 * dropout that is trained and evaluated. */
#define ROUNDABLE                                                              \
  "input shape=2x9x9\n"                                                        \
  "conv2d name=c1 filters=4 kernel=3 padding=1 activation=relu\n"              \
  "batchnorm name=b1\n"                                                        \
  "leaky_relu name=l1 alpha=0.1\n"                                             \
  "conv2d name=c2 filters=4 kernel=3 padding=1 bias=false\n"                   \
  "sigmoid name=s2\n"                                                          \
  "add name=a2 inputs=l1,s2,c2\n"                                              \
  "avgpool name=p2 kernel=2 padding=1\n"                                       \
  "conv2d name=c3 filters=4 kernel=3 padding=1\n"                              \
  "tanh name=t3\n"                                                             \
  "add name=a3 inputs=t3,p2\n"                                                 \
  "conv2d name=c4 filters=4 kernel=1 input=t3\n"                               \
  "add name=a4 inputs=a3,c4\n"                                                 \
  "maxpool name=p4 kernel=2\n"                                                 \
  "flatten\n"                                                                  \
  "dense name=d1 units=12 activation=gelu\n"                                   \
  "dropout name=dr rate=0.25\n"                                                \
  "dense name=d2 units=8 bias=false activation=relu\n"                         \
  "dense units=5\n"                                                            \
  "softmax_cross_entropy\n"

/* ROUNDABLE trained in mixed precision with fusion on or off, every
 * layer's way forced to `way` (a name, or NULL: the defaults); the
 * losses, the predictions of an evaluation after training (dropout off)
 * and the weights into r; how many outputs and gradients the layers'
 * kernels rounded in the last step into *outs and *grads. */
static void train_rounding(bool fuse, const char *way, run_record *r,
                           int *outs, int *grads) {
  clt_plan_mode saved = g_ctx->plan_option;
  g_ctx->plan_option = CLT_PLAN_OFF;
  test_setenv("CLT_FUSE", fuse ? "1" : "0");
  clt_graph *g = NULL;
  ck_assert_ok(graph_from_text(ROUNDABLE, &g));
  g->test_way_name = way;
  /* Saved outputs in fp16 with fusion, in f32 without: the two hold the
   * same values, and each run covers one. */
  g->save_f16_option = fuse ? 1 : 0;
  ck_assert_ok(clt_graph_set_precision(g, CLT_PRECISION_MIXED));
  ck_assert_ok(clt_graph_compile(g, 16, 11));
  test_setenv("CLT_FUSE", NULL);
  g_ctx->plan_option = saved;
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  clt_optimizer *opt = NULL;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  clt_graph_set_loss_scale(g, 64.0f);
  random_batch(g, 16, 5, false);
  for (int s = 0; s < 4; s++) {
    ck_assert_ok(clt_graph_forward(g, true));
    ck_assert_ok(clt_graph_backward(g));
    ck_assert_ok(clt_optimizer_step(opt));
    clt_metrics m;
    ck_assert_ok(clt_graph_metrics(g, &m, true));
    r->losses[s] = (float)m.loss;
  }
  *outs = *grads = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    *outs += g->nodes[i].out_rounded;
    *grads += g->nodes[i].grad_rounded;
  }
  random_batch(g, 13, 6, false);
  ck_assert_ok(clt_graph_forward(g, false));
  int64_t outputs = 0;
  ck_assert_ok(clt_graph_predictions(g, r->predictions[0], &outputs));
  r->param_count = g->param_count;
  r->params = malloc((size_t)g->param_count * sizeof(float));
  clt_tensor p = clt_tensor_slice_1d(g->params, 0, g->param_count);
  ck_assert_ok(clt_tensor_download(&p, r->params));
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
}

/* Rounded where made or by a pass of its own: the same bits, in every
 * convolution layout (_i: the defaults, NCHW direct's bias kernel, the
 * direct kernels by row and by element, the implicit GEMMs, the tiled
 * kernels in blocks of 16 and 8 and the small tiles in blocks of 8:
 * c1-c3's forward, weight and data
 * gradients, c2's added into l1's) and batch
 * norm's split and per-plane reductions and its passes in runs of 16 (b1's
 * planes of 81: five runs and a tail); with fusion on, the layers' kernels
 * do it for most outputs and gradients, with it off for none. */
START_TEST(test_rounding_in_kernels_trains_the_same) {
  static const char *const ways[] = {NULL,
                                     "nchw direct",
                                     "direct",
                                     "direct per element",
                                     "implicit 16x64",
                                     "split 8",
                                     "per plane",
                                     "runs of 16",
                                     "tiled 16",
                                     "tiled 8",
                                     "tiled 8 small"};
  static run_record a, b;
  int outs_on, grads_on, outs_off, grads_off;
  train_rounding(true, ways[_i], &a, &outs_on, &grads_on);
  train_rounding(false, ways[_i], &b, &outs_off, &grads_off);
  ck_assert_mem_eq(a.losses, b.losses, 4 * sizeof(float));
  ck_assert_mem_eq(a.predictions[0], b.predictions[0], 13 * 5 * sizeof(float));
  ck_assert_int_eq(a.param_count, b.param_count);
  ck_assert_mem_eq(a.params, b.params, (size_t)a.param_count * sizeof(float));
  ck_assert_int_eq(outs_off + grads_off, 0);
  ck_assert_msg(outs_on >= 12 && grads_on >= 8,
                "%d outputs and %d gradients rounded in the kernels", outs_on,
                grads_on);
  free(a.params);
  free(b.params);
}
END_TEST

/* A bad CLT_FUSE is an error, not a guess. */
START_TEST(test_fuse_env_checked) {
  clt_graph *g = NULL;
  ck_assert_ok(graph_from_text(FUSABLE, &g));
  test_setenv("CLT_FUSE", "yes");
  ck_assert_int_eq(clt_graph_compile(g, 4, 7), CLT_ERR_INVALID_ARGUMENT);
  test_setenv("CLT_FUSE", NULL);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx), "CLT_FUSE"));
  ck_assert_ok(clt_graph_compile(g, 4, 7));
  clt_graph_destroy(g);
}
END_TEST

/* Evaluation between training steps and a recompile for another batch
 * size leave training as it was. (Unmeasured plans: measured ones may
 * pick another kernel for 4 rows than for 16, summing in another order.) */
START_TEST(test_recompile_and_evaluate) {
  clt_plan_mode saved = g_ctx->plan_option;
  g_ctx->plan_option = CLT_PLAN_OFF;
  clt_graph *g = compiled(CNN, 16, true);
  random_batch(g, 16, 9, false);
  ck_assert_ok(clt_graph_forward(g, false));
  float before[16 * 5], after[16 * 5];
  int64_t outputs = 0;
  ck_assert_ok(clt_graph_predictions(g, before, &outputs));
  ck_assert_int_eq(outputs, 5);
  ck_assert_ok(clt_graph_forward(g, true));
  ck_assert_ok(clt_graph_backward(g));
  ck_assert_ok(clt_graph_forward(g, false));
  ck_assert_ok(clt_graph_predictions(g, after, &outputs));
  ck_assert_mem_eq(before, after, sizeof before);
  ck_assert_ok(clt_graph_compile(g, 4, 7));
  check_no_overlap(g);
  random_batch(g, 4, 9, false);
  ck_assert_ok(clt_graph_forward(g, false));
  ck_assert_ok(clt_graph_predictions(g, after, &outputs));
  ck_assert_mem_eq(before, after, 4 * 5 * sizeof(float));
  clt_graph_destroy(g);
  g_ctx->plan_option = saved;
}
END_TEST

static Suite *memplan_suite(void) {
  Suite *s = suite_create("memplan");
  TCase *tc = tcase_create("plan");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_buffers_are_shared);
  tcase_add_test(tc, test_peak_memory_drops);
  tcase_add_test(tc, test_cnn_trains_the_same);
  tcase_add_test(tc, test_residual_trains_the_same);
  tcase_add_test(tc, test_mse_reshape_trains_the_same);
  tcase_add_test(tc, test_fd_residual_shared);
  tcase_add_test(tc, test_recompile_and_evaluate);
  tcase_add_loop_test(tc, test_relu_fusion_trains_the_same, 1, 7);
  tcase_add_test(tc, test_layernorm_relu_fusion);
  tcase_add_loop_test(tc, test_rounding_in_kernels_trains_the_same, 0, 11);
  tcase_add_test(tc, test_fuse_env_checked);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return test_run_suite("memplan", memplan_suite); }
