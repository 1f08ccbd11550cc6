/* Checkpoints: every parameter survives a save and a load bit for bit;
 * 2 epochs + resume for 2 more equals 4 epochs straight; the file is
 * valid safetensors whose JSON header's offsets tile the data exactly;
 * every kind of bad file gets an error that names the file (and the
 * tensor and both shapes where it applies) and leaves the model as it
 * was; the SVG chart and the PGM reader (the command's, src/cli/). */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/image.h"
#include "cli/plot.h"
#include "graph_helpers.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "optim/optimizer.h"

/* Conv, 2-D batch norm, dense, 1-D batch norm and dropout: every kind of
 * saved state, on 8x8 images so that POCL runs it in moments. */
#define SMALL_CNN                                                              \
  "input shape=1x8x8\n"                                                        \
  "conv2d name=conv1 filters=3 kernel=3 activation=relu\n"                     \
  "batchnorm name=bn1\n"                                                       \
  "maxpool kernel=2\n"                                                         \
  "flatten\n"                                                                  \
  "dense name=fc1 units=6\n"                                                   \
  "batchnorm name=bn2\n"                                                       \
  "relu\n"                                                                     \
  "dropout name=drop1 rate=0.25\n"                                             \
  "dense name=fc2 units=4\n"                                                   \
  "softmax_cross_entropy\n"

/* A Fashion-MNIST-shaped model for fit (the datasets are 28x28). */
#define FIT_MODEL                                                              \
  "input shape=1x28x28\n"                                                      \
  "conv2d name=conv1 filters=2 kernel=3 stride=2\n"                            \
  "batchnorm name=bn1\n"                                                       \
  "relu\n"                                                                     \
  "flatten\n"                                                                  \
  "dense name=fc1 units=12\n"                                                  \
  "dropout name=drop1 rate=0.3\n"                                              \
  "dense name=fc2 units=10\n"                                                  \
  "softmax_cross_entropy\n"

#define TINY "input shape=3\ndense name=fc units=2\nsoftmax_cross_entropy\n"

static char g_dir[] = "/tmp/clt_ckpt_XXXXXX";

static const char *tmp_path(const char *name) {
  static char buf[8][256];
  static int k;
  char *p = buf[k++ % 8];
  snprintf(p, 256, "%s/%s", g_dir, name);
  return p;
}

/* A graph from model text written to a named file, so that its hash is
 * that of the text. */
static clt_graph *graph_from_file(const char *name, const char *text) {
  const char *path = tmp_path(name);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  clt_graph *g = NULL;
  ck_assert_ok(clt_graph_load_model(g_ctx, path, &g));
  return g;
}

static float *params_of(clt_graph *g) {
  float *p = malloc((size_t)g->param_count * sizeof *p);
  ck_assert_ok(clt_tensor_download(g->params, p));
  return p;
}

/* The optimizer's state, as checkpoints read it. */
static clt_optimizer_saved saved_of(clt_optimizer *o) {
  clt_optimizer_saved s;
  clt_optimizer_saved_state(o, &s);
  return s;
}

/* Moment m (1) or v (0) of the optimizer, over its trainable values. */
static float *moment_of(clt_optimizer *o, int which) {
  clt_optimizer_saved os = saved_of(o);
  clt_tensor *t = which == 2 ? os.avg : which ? os.m : os.v;
  int64_t n = clt_graph_parameter_count(os.g);
  float *p = malloc((size_t)n * sizeof *p);
  clt_tensor s = clt_tensor_slice_1d(t, 0, n);
  ck_assert_ok(clt_tensor_download(&s, p));
  return p;
}

static void train_steps(clt_graph *g, clt_optimizer *opt, int steps) {
  for (int i = 0; i < steps; i++) {
    random_batch(g, 5, 100 + (uint64_t)i, false);
    ck_assert_ok(clt_graph_forward(g, true));
    ck_assert_ok(clt_graph_backward(g));
    ck_assert_ok(clt_optimizer_step(opt));
  }
}

static void expect_message(const char *needle) {
  const char *msg = clt_context_last_error(g_ctx);
  ck_assert_msg(strstr(msg, needle), "message '%s' lacks '%s'", msg, needle);
}

/* ---- save and load ------------------------------------------------------- */

START_TEST(test_every_parameter_survives) {
  clt_graph *g = graph_from_file("cnn.model", SMALL_CNN);
  ck_assert_ok(clt_graph_compile(g, 5, 3));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  clt_optimizer *opt = NULL;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  train_steps(g, opt, 3); /* running statistics and counters move */
  const char *path = tmp_path("all.safetensors");
  ck_assert_ok(clt_checkpoint_save(g, opt, 1, NULL, path));

  /* Another seed: every value differs until loaded. */
  clt_graph *h = graph_from_file("cnn.model", SMALL_CNN);
  ck_assert_ok(clt_graph_compile(h, 7, 99));
  float *want = params_of(g), *before = params_of(h);
  ck_assert(memcmp(want, before, (size_t)g->param_count * 4) != 0);
  ck_assert_ok(clt_checkpoint_load_weights(h, path));
  float *got = params_of(h);
  ck_assert_int_eq(g->param_count, h->param_count);
  for (int64_t i = 0; i < g->param_count; i++)
    ck_assert_msg(memcmp(&want[i], &got[i], 4) == 0,
                  "value %lld: saved %a, loaded %a", (long long)i,
                  (double)want[i], (double)got[i]);

  /* The file in PyTorch's terms. */
  clt_st_file f;
  clt_err err = {0};
  ck_assert_int_eq(clt_st_read_file(path, &f, &err), CLT_OK);
  const clt_st_tensor *t = NULL;
  int64_t conv[4] = {3, 1, 3, 3}, dense[2] = {6, 27}, three = 3;
  ck_assert_int_eq(clt_st_expect(&f, "conv1.weight", CLT_ST_F32, 4, conv, &t,
                                 &err), CLT_OK);
  ck_assert_int_eq(clt_st_expect(&f, "fc1.weight", CLT_ST_F32, 2, dense, &t,
                                 &err), CLT_OK);
  ck_assert_int_eq(clt_st_expect(&f, "bn1.running_var", CLT_ST_F32, 1, &three,
                                 &t, &err), CLT_OK);
  ck_assert_int_eq(clt_st_expect(&f, "bn2.num_batches_tracked", CLT_ST_I64, 0,
                                 NULL, &t, &err), CLT_OK);
  int64_t tracked;
  memcpy(&tracked, clt_st_tensor_data(&f, t), 8);
  ck_assert_int_eq(tracked, 3);
  ck_assert_int_eq(clt_st_expect(&f, "__rng__.drop1", CLT_ST_I64, 0, NULL, &t,
                                 &err), CLT_OK);
  memcpy(&tracked, clt_st_tensor_data(&f, t), 8);
  ck_assert_int_eq(tracked, 3);
  ck_assert_str_eq(clt_st_metadata(&f, "format"), "pt");
  ck_assert_str_eq(clt_st_metadata(&f, "optimizer"), "adam");
  ck_assert_str_eq(clt_st_metadata(&f, "model_sha256"), g->source_hash);
  ck_assert_str_eq(clt_st_metadata(&f, "cltrain_version"), CLT_VERSION_STRING);
  clt_st_file_free(&f);

  /* Without an optimizer: parameters only, no "__" tensor, as a PyTorch
   * strict load_state_dict wants. */
  const char *weights = tmp_path("weights.safetensors");
  ck_assert_ok(clt_checkpoint_save(g, NULL, 1, NULL, weights));
  ck_assert_int_eq(clt_st_read_file(weights, &f, &err), CLT_OK);
  int n_params = 0;
  for (int i = 0; i < g->n_nodes; i++) n_params += g->nodes[i].n_params;
  ck_assert_int_eq(f.count, n_params);
  for (size_t i = 0; i < f.count; i++)
    ck_assert(strncmp(f.tensors[i].name, "__", 2) != 0);
  clt_st_file_free(&f);
  free(want);
  free(before);
  free(got);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_graph_destroy(h);
}
END_TEST

START_TEST(test_header_is_json_tiling_the_data) {
  clt_graph *g = graph_from_file("cnn.model", SMALL_CNN);
  ck_assert_ok(clt_graph_compile(g, 5, 3));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_SGD);
  oo.momentum = 0.9f;
  clt_optimizer *opt = NULL;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  clt_epoch_stats hist[2] = {
      {1, 2.0, 0.25, 1.9, 0.3, 0, 0, 0, NAN, NAN, false, 0, 0, 0, 0, 0, 0,
       NULL, 0, NAN, NAN, NAN, 0},
      {2, 1.5, 0.5, 1.4, 0.55, 0, 0, 0, NAN, NAN, false, 0, 0, 0, 0, 0, 0,
       NULL, 0, 0.75, NAN, 0.5, 0}};
  const char *path = tmp_path("header.safetensors");
  ck_assert_ok(clt_checkpoint_save(g, opt, 2, hist, path));

  FILE *fp = fopen(path, "rb");
  ck_assert_ptr_nonnull(fp);
  fseek(fp, 0, SEEK_END);
  size_t size = (size_t)ftell(fp);
  rewind(fp);
  uint8_t *bytes = malloc(size);
  ck_assert_uint_eq(fread(bytes, 1, size, fp), size);
  fclose(fp);
  uint64_t n = 0;
  for (int i = 0; i < 8; i++) n |= (uint64_t)bytes[i] << (8 * i);
  ck_assert_uint_le(8 + n, size);
  ck_assert_uint_eq((8 + n) % 8, 0); /* data aligned for every dtype */
  char why[256];
  size_t pos = 0;
  ck_assert_msg(clt_json_validate((const char *)bytes + 8, n, 0, &pos, why,
                                  sizeof why),
                "header is not JSON: %s at %zu", why, pos);
  ck_assert_int_eq(bytes[8], '{');

  /* Sorted by offset, the tensors cover [0, data size) with no gap and no
   * overlap, and each holds numel * element size bytes. */
  clt_st_file f;
  clt_err err = {0};
  ck_assert_int_eq(clt_st_parse(bytes, size, path, &f, &err), CLT_OK);
  size_t data_size = size - 8 - (size_t)n;
  ck_assert_uint_eq(f.data_size, data_size);
  uint8_t *covered = calloc(data_size, 1);
  uint64_t total = 0;
  for (size_t i = 0; i < f.count; i++) {
    const clt_st_tensor *t = &f.tensors[i];
    int64_t numel = 1;
    for (int d = 0; d < t->ndim; d++) numel *= t->shape[d];
    ck_assert_uint_eq(t->end - t->begin,
                      (uint64_t)numel * clt_st_dtype_size(t->dtype));
    ck_assert_uint_eq(t->begin % clt_st_dtype_size(t->dtype), 0);
    for (uint64_t b = t->begin; b < t->end; b++) {
      ck_assert_msg(!covered[b], "byte %llu covered twice",
                    (unsigned long long)b);
      covered[b] = 1;
    }
    total += t->end - t->begin;
  }
  ck_assert_uint_eq(total, data_size);
  /* The history went in as written. */
  /* + validation loss and accuracy, + the mean absolute errors */
  int64_t hshape[2] = {2, 10};
  const clt_st_tensor *t = NULL;
  ck_assert_int_eq(clt_st_expect(&f, "__train__.history", CLT_ST_F64, 2,
                                 hshape, &t, &err), CLT_OK);
  double row[10];
  memcpy(row, (const uint8_t *)clt_st_tensor_data(&f, t) + 80, 80);
  ck_assert(row[0] == 2.0 && row[1] == 1.5 && row[4] == 0.55);
  /* train, test, validation (the struct: train, validation, test) */
  ck_assert(row[7] == 0.75 && row[8] == 0.5 && isnan(row[9]));
  /* ... and comes back on resuming. */
  clt_epoch_stats back[2];
  ck_assert_ok(clt_checkpoint_resume(g, opt, path, NULL, back, 2));
  ck_assert(back[1].epoch == 2 && back[1].test_acc == 0.55);
  ck_assert(back[1].train_mae == 0.75 && back[1].test_mae == 0.5 &&
            isnan(back[1].val_mae) && isnan(back[0].train_mae));
  ck_assert_ptr_null(clt_st_find(&f, "__optim__.m")); /* SGD keeps only v */
  ck_assert_ptr_nonnull(clt_st_find(&f, "__optim__.v"));
  clt_st_file_free(&f);
  free(covered);
  free(bytes);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
}
END_TEST

/* ---- resume ------------------------------------------------------------- */

typedef struct run_result {
  float *params, *m, *v, *avg;
  uint64_t dropout_calls;
  int64_t step;
  clt_epoch_stats hist[4];
} run_result;

static void free_result(run_result *r) {
  free(r->params);
  free(r->m);
  free(r->v);
  free(r->avg);
}

static const char *const variant_kinds[] = {"adam", "sgd", "rmsprop",
                                            "adam", "sgd"};

/* Variant 3 trains with the batch norm and the first dense layer frozen
 * (one frozen layer between trainable ones), set after compiling. */
static void freeze_for(int variant, clt_graph *g) {
  if (variant != 3) return;
  ck_assert_ok(clt_graph_set_trainable(g, "bn1", false));
  ck_assert_ok(clt_graph_set_trainable(g, "fc1", false));
}

static clt_optimizer_options options_for(int variant) {
  static const clt_optimizer_kind kinds[] = {CLT_OPT_ADAM, CLT_OPT_SGD,
                                             CLT_OPT_RMSPROP, CLT_OPT_ADAM,
                                             CLT_OPT_SGD};
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, kinds[variant]);
  if (variant == 1) {
    oo.lr = 0.05f;
    oo.momentum = 0.9f;
    oo.nesterov = true;
    oo.schedule = CLT_SCHEDULE_STEP; /* the rate changes at the resume */
    oo.step_epochs = 2;
    oo.gamma = 0.5f;
  }
  if (variant == 4) { /* one-cycle: rate and momentum step by step */
    oo.lr = 0.05f;
    oo.schedule = CLT_SCHEDULE_ONECYCLE;
    oo.total_epochs = 4;
  }
  if (variant == 2) { /* every buffer RMSprop keeps */
    oo.momentum = 0.5f;
    oo.centered = true;
    oo.alpha = 0.9f;
    oo.schedule = CLT_SCHEDULE_COSINE;
    oo.total_epochs = 4;
  }
  return oo;
}

/* Trains epochs [first, last] of FIT_MODEL; with first > 1 it resumes
 * from `from`; with save, checkpoints there after every epoch. */
static void run_epochs(int variant, int first, int last, const char *from,
                       const char *save, const clt_dataset *train,
                       const clt_dataset *test, run_result *r) {
  memset(r, 0, sizeof *r);
  clt_graph *g = graph_from_file("fit.model", FIT_MODEL);
  /* A different seed at compile: the checkpoint's must win. */
  ck_assert_ok(clt_graph_compile(g, 32, first > 1 ? 777 : 7));
  freeze_for(variant, g);
  clt_optimizer_options oo = options_for(variant);
  clt_optimizer *opt = NULL;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.epochs = last;
  fo.batch = 32;
  fo.seed = 7;
  fo.pad_crop = 2; /* augmentation draws from the epoch's stream too */
  fo.checkpoint_path = save;
  fo.checkpoint_every = 1;
  if (first > 1) {
    clt_checkpoint_info info;
    ck_assert_ok(clt_checkpoint_resume(g, opt, from, &info, r->hist, 4));
    ck_assert_int_eq(info.epoch, first - 1);
    ck_assert_uint_eq(info.seed, 7);
    ck_assert_uint_eq(info.data_seed, 7);
    ck_assert_str_eq(info.optimizer, variant_kinds[variant]);
    fo.first_epoch = info.epoch + 1;
    fo.seed = info.data_seed;
  }
  ck_assert_ok(clt_fit(g, opt, train, test, &fo, r->hist));
  r->params = params_of(g);
  r->v = moment_of(opt, 0);
  if (saved_of(opt).m) r->m = moment_of(opt, 1);
  if (saved_of(opt).avg) r->avg = moment_of(opt, 2);
  r->step = saved_of(opt).step;
  for (int i = 0; i < g->n_nodes; i++)
    if (clt_node_saved_counter(&g->nodes[i]))
      r->dropout_calls = *clt_node_saved_counter(&g->nodes[i]);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
}

START_TEST(test_resume_equals_straight_run) {
  /* 0: Adam; 1: SGD, Nesterov, step schedule; 2: RMSprop, centered, with
   * momentum, cosine schedule; 3: Adam with bn1 and fc1 frozen; 4: SGD
   * with the one-cycle schedule (its momentum cycled) */
  int variant = _i;
  clt_dataset *train = NULL, *test = NULL;
  ck_assert_ok(clt_dataset_load(g_ctx, "fashion-mnist", true, 200, &train));
  ck_assert_ok(clt_dataset_load(g_ctx, "fashion-mnist", false, 64, &test));
  const char *ckpt = tmp_path("resume.safetensors");
  run_result straight, part, resumed;
  run_epochs(variant, 1, 4, NULL, NULL, train, test, &straight);
  run_epochs(variant, 1, 2, NULL, ckpt, train, test, &part);
  run_epochs(variant, 3, 4, ckpt, NULL, train, test, &resumed);
  int64_t n = 0;
  {
    clt_graph *g = graph_from_file("fit.model", FIT_MODEL);
    ck_assert_ok(clt_graph_compile(g, 1, 1));
    n = g->param_count;
    clt_graph_destroy(g);
  }
  /* The partial run really is different from the full one ... */
  ck_assert(memcmp(part.params, straight.params, (size_t)n * 4) != 0);
  /* ... and the resumed one the same, bit for bit. */
  for (int64_t i = 0; i < n; i++)
    ck_assert_msg(memcmp(&straight.params[i], &resumed.params[i], 4) == 0,
                  "parameter %lld: straight %a, resumed %a", (long long)i,
                  (double)straight.params[i], (double)resumed.params[i]);
  ck_assert_int_eq(straight.step, resumed.step);
  ck_assert_uint_eq(straight.dropout_calls, resumed.dropout_calls);
  ck_assert_uint_eq(straight.dropout_calls, (uint64_t)straight.step);
  ck_assert_int_eq(straight.step, 4 * 7); /* ceil(200 / 32) batches */
  int64_t trainable = 0;
  {
    clt_graph *g = graph_from_file("fit.model", FIT_MODEL);
    ck_assert_ok(clt_graph_compile(g, 1, 1));
    freeze_for(variant, g);
    trainable = clt_graph_parameter_count(g);
    clt_graph_destroy(g);
  }
  ck_assert_mem_eq(straight.v, resumed.v, (size_t)trainable * 4);
  if (straight.m) /* Adam's first moment, RMSprop's momentum */
    ck_assert_mem_eq(straight.m, resumed.m, (size_t)trainable * 4);
  if (variant == 2)
    ck_assert_mem_eq(straight.avg, resumed.avg, (size_t)trainable * 4);
  for (int e = 0; e < 4; e++) {
    ck_assert_msg(straight.hist[e].train_loss == resumed.hist[e].train_loss &&
                      straight.hist[e].test_acc == resumed.hist[e].test_acc,
                  "epoch %d: straight %.9g/%.9g, resumed %.9g/%.9g", e + 1,
                  straight.hist[e].train_loss, straight.hist[e].test_acc,
                  resumed.hist[e].train_loss, resumed.hist[e].test_acc);
  }
  free_result(&straight);
  free_result(&part);
  free_result(&resumed);
  clt_dataset_destroy(train);
  clt_dataset_destroy(test);
}
END_TEST

/* With checkpoint_every 2 over 5 epochs, the file holds epoch 2 while
 * epochs 3 and 4 run, then 4, and 5 at the end. The progress report of
 * epoch e comes before that epoch's checkpoint. */
typedef struct save_watch {
  const char *path;
  int seen[6];
} save_watch;

static void watch_saves(const clt_progress *p, void *user) {
  save_watch *w = user;
  if (p->phase != CLT_PHASE_EPOCH) return;
  clt_checkpoint_info info;
  w->seen[p->epoch] = access(w->path, F_OK) != 0 ? 0
                      : clt_checkpoint_read_info(g_ctx, w->path, &info) ==
                              CLT_OK
                          ? info.epoch
                          : -1;
}

START_TEST(test_save_every) {
  clt_dataset *train = NULL;
  ck_assert_ok(clt_dataset_load(g_ctx, "fashion-mnist", true, 64, &train));
  clt_graph *g = graph_from_file("fit.model", FIT_MODEL);
  ck_assert_ok(clt_graph_compile(g, 32, 1));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_SGD);
  clt_optimizer *opt = NULL;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  save_watch w = {tmp_path("every.safetensors"), {0}};
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.epochs = 5;
  fo.batch = 32;
  fo.checkpoint_path = w.path;
  fo.checkpoint_every = 2;
  fo.progress = watch_saves;
  fo.progress_user = &w;
  ck_assert_ok(clt_fit(g, opt, train, NULL, &fo, NULL));
  int want[6] = {0, 0, 0, 2, 2, 4};
  for (int e = 1; e <= 5; e++)
    ck_assert_msg(w.seen[e] == want[e], "after epoch %d the file holds %d",
                  e, w.seen[e]);
  clt_checkpoint_info info;
  ck_assert_ok(clt_checkpoint_read_info(g_ctx, w.path, &info));
  ck_assert_int_eq(info.epoch, 5);
  ck_assert_int_eq(info.step, 10);
  /* Without a history from the caller, the test columns read unknown. */
  clt_epoch_stats hist[5];
  clt_optimizer *again = NULL;
  ck_assert_ok(clt_optimizer_create(g, &oo, &again));
  ck_assert_ok(clt_checkpoint_resume(g, again, w.path, NULL, hist, 5));
  ck_assert_int_eq(hist[4].epoch, 5);
  ck_assert(isfinite(hist[4].train_loss) && isnan(hist[4].test_loss));
  /* An unwritable path stops the fit with an I/O error naming it. */
  fo.checkpoint_path = tmp_path("no/such/folder.safetensors");
  fo.progress = NULL;
  ck_assert_int_eq(clt_fit(g, opt, train, NULL, &fo, NULL), CLT_ERR_IO);
  expect_message("no/such/folder.safetensors");
  clt_optimizer_destroy(again);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_dataset_destroy(train);
}
END_TEST

START_TEST(test_resume_refuses_another_model) {
  clt_graph *g = graph_from_file("a.model", TINY);
  ck_assert_ok(clt_graph_compile(g, 4, 1));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  clt_optimizer *opt = NULL;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  const char *path = tmp_path("a.safetensors");
  ck_assert_ok(clt_checkpoint_save(g, opt, 1, NULL, path));

  /* Same shapes, another file (a comment more): resume refuses, naming
   * both hashes; --init-style loading of the weights works. */
  clt_graph *h = graph_from_file("b.model", "# changed\n" TINY);
  ck_assert_ok(clt_graph_compile(h, 4, 1));
  clt_optimizer *hopt = NULL;
  ck_assert_ok(clt_optimizer_create(h, &oo, &hopt));
  ck_assert_int_eq(clt_checkpoint_resume(h, hopt, path, NULL, NULL, 0),
                   CLT_ERR_INVALID_ARGUMENT);
  expect_message(g->source_hash);
  expect_message(h->source_hash);
  expect_message(path);
  ck_assert_ok(clt_checkpoint_load_weights(h, path));

  /* Another optimizer kind. */
  clt_optimizer *sgd = NULL;
  clt_optimizer_options so;
  clt_optimizer_options_init(&so, CLT_OPT_SGD);
  so.momentum = 0.5f;
  clt_optimizer_destroy(opt);
  ck_assert_ok(clt_optimizer_create(g, &so, &sgd));
  ck_assert_int_eq(clt_checkpoint_resume(g, sgd, path, NULL, NULL, 0),
                   CLT_ERR_INVALID_ARGUMENT);
  expect_message("adam");
  expect_message("sgd");

  /* RMSprop centered, resumed without centering (or the other way): the
   * mean gradient is state one side keeps and the other does not. */
  clt_optimizer *rms = NULL, *plain = NULL;
  clt_optimizer_options ro;
  clt_optimizer_options_init(&ro, CLT_OPT_RMSPROP);
  ro.centered = true;
  ck_assert_ok(clt_optimizer_create(g, &ro, &rms));
  ck_assert_ok(clt_checkpoint_save(g, rms, 1, NULL, path));
  ro.centered = false;
  ck_assert_ok(clt_optimizer_create(g, &ro, &plain));
  ck_assert_int_eq(clt_checkpoint_resume(g, plain, path, NULL, NULL, 0),
                   CLT_ERR_INVALID_ARGUMENT);
  expect_message("__optim__.grad_avg");
  expect_message("centered changed?");
  ck_assert_ok(clt_checkpoint_save(g, plain, 1, NULL, path));
  ck_assert_int_eq(clt_checkpoint_resume(g, rms, path, NULL, NULL, 0),
                   CLT_ERR_FORMAT);
  expect_message("missing tensor '__optim__.grad_avg'");
  ck_assert_ok(clt_checkpoint_resume(g, plain, path, NULL, NULL, 0));
  clt_optimizer_destroy(rms);
  clt_optimizer_destroy(plain);

  /* A weights-only file cannot be resumed from. */
  const char *weights = tmp_path("a_weights.safetensors");
  ck_assert_ok(clt_checkpoint_save(g, NULL, 1, NULL, weights));
  ck_assert_int_eq(clt_checkpoint_resume(g, sgd, weights, NULL, NULL, 0),
                   CLT_ERR_FORMAT);
  expect_message("--init");
  clt_checkpoint_info info;
  ck_assert_ok(clt_checkpoint_read_info(g_ctx, weights, &info));
  ck_assert_int_eq(info.epoch, 1);
  ck_assert_str_eq(info.optimizer, "");
  clt_optimizer_destroy(sgd);
  clt_optimizer_destroy(hopt);
  clt_graph_destroy(g);
  clt_graph_destroy(h);
}
END_TEST

/* The frozen layers are saved with the checkpoint; resuming needs the
 * same ones (the optimizer's state covers the trainable parameters), and
 * an optimizer made before a change is refused. The weights load into a
 * graph frozen otherwise (fine-tuning). */
START_TEST(test_resume_keeps_frozen_layers) {
  clt_graph *g = graph_from_file("fit.model", FIT_MODEL);
  ck_assert_ok(clt_graph_set_trainable(g, "conv1", false));
  ck_assert_ok(clt_graph_set_trainable(g, "fc1", false));
  ck_assert_ok(clt_graph_compile(g, 4, 1));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  clt_optimizer *opt = NULL;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  const char *path = tmp_path("frozen.safetensors");
  ck_assert_ok(clt_checkpoint_save(g, opt, 1, NULL, path));
  char **names = NULL;
  int n = 0;
  ck_assert_ok(clt_checkpoint_frozen_layers(g_ctx, path, &names, &n));
  ck_assert_int_eq(n, 2);
  ck_assert_str_eq(names[0], "conv1");
  ck_assert_str_eq(names[1], "fc1");
  clt_class_names_free(names, n);

  clt_graph *h = graph_from_file("fit.model", FIT_MODEL);
  ck_assert_ok(clt_graph_compile(h, 4, 1));
  clt_optimizer *hopt = NULL;
  ck_assert_ok(clt_optimizer_create(h, &oo, &hopt));
  ck_assert_int_eq(clt_checkpoint_resume(h, hopt, path, NULL, NULL, 0),
                   CLT_ERR_INVALID_ARGUMENT);
  expect_message("trained with conv1, fc1 frozen, resuming with no layer "
                 "frozen");
  ck_assert_ok(clt_checkpoint_load_weights(h, path)); /* --init */
  ck_assert_ok(clt_graph_set_trainable(h, "conv1", false));
  ck_assert_int_eq(clt_checkpoint_resume(h, hopt, path, NULL, NULL, 0),
                   CLT_ERR_INVALID_ARGUMENT);
  expect_message("conv1 frozen");
  ck_assert_ok(clt_graph_set_trainable(h, "fc1", false));
  /* the same layers now, but the optimizer was made before */
  ck_assert_int_eq(clt_checkpoint_resume(h, hopt, path, NULL, NULL, 0),
                   CLT_ERR_INVALID_ARGUMENT);
  expect_message("make the optimizer again");
  ck_assert_int_eq(clt_checkpoint_save(h, hopt, 1, NULL, path),
                   CLT_ERR_INVALID_ARGUMENT);
  clt_optimizer_destroy(hopt);
  ck_assert_ok(clt_optimizer_create(h, &oo, &hopt));
  ck_assert_ok(clt_checkpoint_resume(h, hopt, path, NULL, NULL, 0));

  /* A file from an unfrozen graph names none. */
  const char *plain = tmp_path("unfrozen.safetensors");
  clt_graph *u = graph_from_file("fit.model", FIT_MODEL);
  ck_assert_ok(clt_graph_compile(u, 4, 1));
  ck_assert_ok(clt_checkpoint_save(u, NULL, 1, NULL, plain));
  ck_assert_ok(clt_checkpoint_frozen_layers(g_ctx, plain, &names, &n));
  ck_assert_int_eq(n, 0);
  ck_assert_ptr_null(names);
  clt_optimizer_destroy(opt);
  clt_optimizer_destroy(hopt);
  clt_graph_destroy(g);
  clt_graph_destroy(h);
  clt_graph_destroy(u);
}
END_TEST

/* ---- bad files ----------------------------------------------------------- */

/* Writes a safetensors file: the length field (len_field, or the header's
 * real length when 0), the header, then `data`. */
static const char *write_raw(const char *name, const char *header,
                             const void *data, size_t data_len,
                             uint64_t len_field) {
  const char *path = tmp_path(name);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  uint64_t n = len_field ? len_field : strlen(header);
  uint8_t le[8];
  for (int i = 0; i < 8; i++) le[i] = (uint8_t)(n >> (8 * i));
  fwrite(le, 1, 8, f);
  fwrite(header, 1, strlen(header), f);
  if (data_len) fwrite(data, 1, data_len, f);
  fclose(f);
  return path;
}

#define W_OK_ENTRY                                                             \
  "\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}"
#define B_OK_ENTRY                                                             \
  "\"fc.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[24,32]}"

/* Loading path must fail with status, a message naming the file and
 * holding each needle, and leave g's parameters as they were. */
static void expect_load_fails(clt_graph *g, const char *path, clt_status want,
                              const char *needle1, const char *needle2) {
  float *before = params_of(g);
  clt_status st = clt_checkpoint_load_weights(g, path);
  ck_assert_msg(st == want, "%s: status %s, expected %s (%s)", path,
                clt_status_string(st), clt_status_string(want),
                clt_context_last_error(g_ctx));
  expect_message(path);
  if (needle1) expect_message(needle1);
  if (needle2) expect_message(needle2);
  float *after = params_of(g);
  ck_assert_mem_eq(before, after, (size_t)g->param_count * 4);
  free(before);
  free(after);
}

START_TEST(test_bad_files) {
  clt_graph *g = graph_from_file("tiny.model", TINY);
  ck_assert_ok(clt_graph_compile(g, 4, 1));
  float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const char *good = write_raw("good.st", "{" W_OK_ENTRY "," B_OK_ENTRY "}",
                               data, sizeof data, 0);
  ck_assert_ok(clt_checkpoint_load_weights(g, good));
  float *p = params_of(g);
  ck_assert(p[0] == 1.0f && p[5] == 6.0f && p[7] == 8.0f);
  free(p);

  /* Truncated: the data stops short of the last tensor. */
  expect_load_fails(g, write_raw("trunc.st", "{" W_OK_ENTRY "," B_OK_ENTRY "}",
                                 data, 20, 0),
                    CLT_ERR_FORMAT, NULL, NULL);
  /* Cut inside the length field. */
  {
    const char *path = tmp_path("short.st");
    FILE *f = fopen(path, "wb");
    fwrite("\x10\x00\x00", 1, 3, f);
    fclose(f);
    expect_load_fails(g, path, CLT_ERR_FORMAT, NULL, NULL);
  }
  /* Malformed JSON: a missing quote; the message gives line and column. */
  expect_load_fails(g, write_raw("json.st", "{\"fc.weight:{}}", data,
                                 sizeof data, 0),
                    CLT_ERR_FORMAT, "line 1", NULL);
  /* A missing tensor. */
  expect_load_fails(g, write_raw("missing.st", "{" W_OK_ENTRY "}", data, 24, 0),
                    CLT_ERR_FORMAT, "missing tensor 'fc.bias'", NULL);
  /* A shape mismatch names the tensor and both shapes. */
  expect_load_fails(
      g,
      write_raw("shape.st",
                "{\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[3,2],"
                "\"data_offsets\":[0,24]}," B_OK_ENTRY "}",
                data, sizeof data, 0),
      CLT_ERR_SHAPE, "'fc.weight' has shape [3, 2]", "expects [2, 3]");
  /* Dtypes: one the format has but a weight cannot be, one cltrain does not
   * read at all. */
  expect_load_fails(
      g,
      write_raw("dtype.st",
                "{\"fc.weight\":{\"dtype\":\"I32\",\"shape\":[2,3],"
                "\"data_offsets\":[0,24]}," B_OK_ENTRY "}",
                data, sizeof data, 0),
      CLT_ERR_FORMAT, "fc.weight", "I32");
  {
    clt_status st = clt_checkpoint_load_weights(
        g, write_raw("bf16.st",
                     "{\"fc.weight\":{\"dtype\":\"BF16\",\"shape\":[2,3],"
                     "\"data_offsets\":[0,12]},"
                     "\"fc.bias\":{\"dtype\":\"F32\",\"shape\":[2],"
                     "\"data_offsets\":[12,20]}}",
                     data, 20, 0));
    ck_assert_msg(st == CLT_ERR_UNSUPPORTED || st == CLT_ERR_FORMAT, "%s",
                  clt_status_string(st));
    expect_message("BF16");
  }
  /* Offsets outside the file. */
  expect_load_fails(
      g,
      write_raw("offsets.st",
                "{" W_OK_ENTRY ",\"fc.bias\":{\"dtype\":\"F32\",\"shape\":[2],"
                "\"data_offsets\":[24,4000]}}",
                data, sizeof data, 0),
      CLT_ERR_FORMAT, "fc.bias", NULL);
  /* A header length larger than the file. */
  expect_load_fails(g, write_raw("hlen.st", "{" W_OK_ENTRY "," B_OK_ENTRY "}",
                                 data, sizeof data, 1u << 20),
                    CLT_ERR_FORMAT, NULL, NULL);
  /* A huge header length (a hostile or random file). */
  expect_load_fails(g, write_raw("hhuge.st", "{}", NULL, 0, UINT64_MAX / 2),
                    CLT_ERR_FORMAT, NULL, NULL);
  /* A tensor the model does not have (PyTorch's "unexpected key"). */
  expect_load_fails(
      g,
      write_raw("extra.st",
                "{" W_OK_ENTRY "," B_OK_ENTRY
                ",\"fc9.weight\":{\"dtype\":\"F32\",\"shape\":[1],"
                "\"data_offsets\":[32,36]}}",
                (float[9]){0}, 36, 0),
      CLT_ERR_FORMAT, "'fc9.weight' is not a parameter", NULL);
  /* An empty file, and a path that does not exist. */
  expect_load_fails(g, write_raw("empty.st", "", NULL, 0, 0), CLT_ERR_FORMAT,
                    NULL, NULL);
  {
    const char *path = tmp_path("empty0.st");
    fclose(fopen(path, "wb"));
    expect_load_fails(g, path, CLT_ERR_FORMAT, NULL, NULL);
  }
  expect_load_fails(g, tmp_path("no_such_file.st"), CLT_ERR_IO, NULL, NULL);
  clt_graph_destroy(g);
}
END_TEST

/* Loading into a model with other shapes: the message names the tensor
 * and both shapes; resuming from a damaged checkpoint changes nothing. */
START_TEST(test_shape_mismatch_and_damaged_resume) {
  clt_graph *g = graph_from_file("cnn.model", SMALL_CNN);
  ck_assert_ok(clt_graph_compile(g, 5, 3));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAMW);
  clt_optimizer *opt = NULL;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  train_steps(g, opt, 2);
  const char *path = tmp_path("cnn.safetensors");
  ck_assert_ok(clt_checkpoint_save(g, opt, 1, NULL, path));

  char other[sizeof SMALL_CNN + 8];
  snprintf(other, sizeof other, "%s", SMALL_CNN);
  char *units = strstr(other, "units=6");
  units[6] = '9';
  clt_graph *h = graph_from_file("other.model", other);
  ck_assert_ok(clt_graph_compile(h, 5, 3));
  expect_load_fails(h, path, CLT_ERR_SHAPE, "'fc1.weight' has shape [6, 27]",
                    "the model expects [9, 27]");

  /* Cut the file short: resume fails and neither the parameters nor the
   * optimizer state nor the step move. */
  FILE *f = fopen(path, "rb");
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  rewind(f);
  char *bytes = malloc((size_t)size);
  ck_assert_int_eq(fread(bytes, 1, (size_t)size, f), size);
  fclose(f);
  const char *cut = tmp_path("cut.safetensors");
  f = fopen(cut, "wb");
  fwrite(bytes, 1, (size_t)size - 5, f);
  fclose(f);
  float *before = params_of(g), *m_before = moment_of(opt, 1);
  int64_t step = saved_of(opt).step;
  train_steps(g, opt, 1);
  free(before);
  free(m_before);
  before = params_of(g);
  m_before = moment_of(opt, 1);
  ck_assert_int_eq(clt_checkpoint_resume(g, opt, cut, NULL, NULL, 0),
                   CLT_ERR_FORMAT);
  expect_message(cut);
  float *after = params_of(g), *m_after = moment_of(opt, 1);
  ck_assert_mem_eq(before, after, (size_t)g->param_count * 4);
  ck_assert_mem_eq(m_before, m_after,
                   (size_t)clt_graph_parameter_count(g) * 4);
  ck_assert_int_eq(saved_of(opt).step, step + 1);
  /* The intact file resumes the state it holds. */
  ck_assert_ok(clt_checkpoint_resume(g, opt, path, NULL, NULL, 0));
  ck_assert_int_eq(saved_of(opt).step, step);
  free(before);
  free(after);
  free(m_before);
  free(m_after);
  free(bytes);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_graph_destroy(h);
}
END_TEST

START_TEST(test_save_is_atomic) {
  clt_graph *g = graph_from_file("tiny.model", TINY);
  ck_assert_ok(clt_graph_compile(g, 4, 1));
  const char *path = tmp_path("atomic/w.safetensors");
  /* No folder: an I/O error naming the path, nothing written. */
  ck_assert_int_eq(clt_checkpoint_save(g, NULL, 0, NULL, path), CLT_ERR_IO);
  expect_message(path);
  ck_assert_int_eq(mkdir(tmp_path("atomic"), 0755), 0);
  ck_assert_ok(clt_checkpoint_save(g, NULL, 0, NULL, path));
  ck_assert_ok(clt_checkpoint_save(g, NULL, 1, NULL, path));
  /* Only the file itself: no temporary left behind. */
  DIR *d = opendir(tmp_path("atomic"));
  int entries = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') entries++;
  closedir(d);
  ck_assert_int_eq(entries, 1);
  /* A failed save (not compiled) leaves the last good file in place. */
  clt_graph *raw = graph_from_file("tiny.model", TINY);
  ck_assert_int_eq(clt_checkpoint_save(raw, NULL, 2, NULL, path),
                   CLT_ERR_INVALID_ARGUMENT);
  clt_checkpoint_info info;
  ck_assert_ok(clt_checkpoint_read_info(g_ctx, path, &info));
  ck_assert_int_eq(info.epoch, 1);
  clt_graph_destroy(raw);
  clt_graph_destroy(g);
}
END_TEST

/* ---- plot and images ----------------------------------------------------- */

START_TEST(test_plot_svg) {
  clt_epoch_stats h[5];
  for (int i = 0; i < 5; i++) {
    h[i] = (clt_epoch_stats){i + 1, 2.0 / (i + 1), 0.5 + 0.08 * i,
                             2.2 / (i + 1), 0.45 + 0.08 * i, 1, 1, 0.001f,
                             NAN, NAN, false, 0, 0, 0, 0, 0, 0, NULL, 0,
                             NAN, NAN, NAN, 0};
  }
  h[1].test_loss = h[1].test_acc = NAN; /* a gap */
  const char *path = tmp_path("plot & <chart>.svg");
  cli_err err = {0};
  ck_assert_int_eq(clt_plot_history_svg(h, 5, "a <model> & \"more\"", path,
                                        &err), CLT_OK);
  char *svg = NULL;
  ck_assert_int_eq(clt_plot_history_render(h, 5, "t", &svg, &err), CLT_OK);
  ck_assert_ptr_nonnull(
      strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
  ck_assert_ptr_nonnull(strstr(svg, ">loss<"));
  ck_assert_ptr_nonnull(strstr(svg, ">accuracy<"));
  ck_assert_ptr_nonnull(strstr(svg, ">train<"));
  ck_assert_ptr_nonnull(strstr(svg, ">test<"));
  ck_assert_ptr_nonnull(strstr(svg, ">epoch<"));
  int polylines = 0;
  for (const char *s = svg; (s = strstr(s, "<polyline")); s++) polylines++;
  /* train loss, train acc: one line each; test: split by the gap. */
  ck_assert_int_eq(polylines, 2 + 2 * 2);
  ck_assert_ptr_null(strstr(svg, "nan"));
  free(svg);
  /* One epoch, every value unknown: still a valid chart. */
  clt_epoch_stats one = {1, NAN, NAN, NAN, NAN, 0,   0,   0,   NAN, NAN,
                         false, 0, 0, 0, 0, 0, 0, NULL, 0, NAN, NAN, NAN, 0};
  ck_assert_int_eq(clt_plot_history_svg(&one, 1, NULL, tmp_path("one.svg"),
                                        &err), CLT_OK);
  /* A regression (no accuracy): its mean absolute error instead. */
  for (int i = 0; i < 5; i++) {
    h[i].train_acc = h[i].test_acc = NAN;
    h[i].train_mae = 1.0 / (i + 1);
    h[i].test_mae = 1.1 / (i + 1);
  }
  ck_assert_int_eq(clt_plot_history_render(h, 5, "r", &svg, &err), CLT_OK);
  ck_assert_ptr_nonnull(strstr(svg, ">mean absolute error<"));
  ck_assert_ptr_null(strstr(svg, ">accuracy<"));
  free(svg);
  /* Both files parse as XML (python3 is a build requirement already). */
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import sys, xml.dom.minidom as m; "
           "[m.parse(p) for p in sys.argv[1:]]' '%s' '%s'",
           path, tmp_path("one.svg"));
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_pgm) {
  clt_image_set s;
  cli_err err = {0};
  static const char p5[] = "P5\n# made by hand\n3 2\n255\n"
                           "\x00\x80\xff\x01\x02\x03";
  ck_assert_int_eq(clt_image_parse_pgm((const uint8_t *)p5, sizeof p5 - 1,
                                       "a.pgm", &s, &err), CLT_OK);
  ck_assert_int_eq(s.width, 3);
  ck_assert_int_eq(s.height, 2);
  ck_assert(s.pixels[0] == 0.0f && s.pixels[1] == 128.0f / 255.0f &&
            s.pixels[2] == 1.0f);
  clt_image_set_free(&s);
  const char *p2 = "P2 2 2 15\n0 15\n 3 7\n";
  ck_assert_int_eq(clt_image_parse_pgm((const uint8_t *)p2, strlen(p2),
                                       "b.pgm", &s, &err), CLT_OK);
  ck_assert(s.pixels[1] == 1.0f && s.pixels[3] == 7.0f / 15.0f);
  clt_image_set_free(&s);
  const char *bad[] = {"P5\n3 2\n255\n\x01\x02", "P2 2 2 15\n0 16 1 1\n",
                       "P2 2 2 15\n0 1 1\n", "P5 0 2 255\n", "P6 1 1 255\n\x01",
                       "P2 2 2 70000\n1 1 1 1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq(clt_image_parse_pgm((const uint8_t *)bad[i],
                                         strlen(bad[i]), "bad.pgm", &s, &err),
                     CLT_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.msg, "bad.pgm"));
    ck_assert_ptr_null(s.pixels);
  }
}
END_TEST

static Suite *checkpoint_suite(void) {
  Suite *s = suite_create("checkpoint");
  TCase *io = tcase_create("save and load");
  tcase_set_timeout(io, 300);
  tcase_add_test(io, test_every_parameter_survives);
  tcase_add_test(io, test_header_is_json_tiling_the_data);
  tcase_add_test(io, test_bad_files);
  tcase_add_test(io, test_shape_mismatch_and_damaged_resume);
  tcase_add_test(io, test_save_is_atomic);
  suite_add_tcase(s, io);
  TCase *resume = tcase_create("resume");
  tcase_set_timeout(resume, 600);
  tcase_add_loop_test(resume, test_resume_equals_straight_run, 0, 5);
  tcase_add_test(resume, test_resume_keeps_frozen_layers);
  tcase_add_test(resume, test_resume_refuses_another_model);
  tcase_add_test(resume, test_save_every);
  suite_add_tcase(s, resume);
  TCase *other = tcase_create("plot and images");
  tcase_add_test(other, test_plot_svg);
  tcase_add_test(other, test_pgm);
  suite_add_tcase(s, other);
  return s;
}

int main(void) {
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return EXIT_FAILURE;
  }
  int rc = test_run_suite("checkpoint", checkpoint_suite);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) rc = EXIT_FAILURE;
  return rc;
}
