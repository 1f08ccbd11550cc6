/* Threads (include/cltrain.h, "Threads"): contexts used from several
 * threads at once, each its own, sharing one read-only dataset and one
 * cache folder. The same training gives the same bits on every thread as
 * on one thread alone; plans measured by several threads at once into one
 * fresh folder are stored whole, and later contexts read them back (the
 * second without measuring anything); a checkpoint served by models on three
 * threads at once predicts the bits of one thread alone. Runs on the
 * device of $CLT_DEVICE; on POCL the contexts take turns (runtime/
 * runtime.h, clt_turn_begin), and without them (CLT_POCL_TURNS=0) POCL
 * 3.1 aborts now and then. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkdtemp, nftw */
#endif
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cltrain.h"
#include "remove_tree.h"
#include "run_checks.h"

#define THREADS 3
#define BATCH 16
#define SAMPLES 96

/* Conv, batch norm, a fused ReLU, pooling, two dense layers: the conv
 * products, the norm's reductions and the dense products each build
 * their kernels (CLBlast's among them) on first use. */
static const char *const model_text =
    "input shape=2x9x9\n"
    "conv2d name=conv filters=6 kernel=3 padding=1 bias=false\n"
    "batchnorm name=bn\n"
    "relu\n"
    "maxpool kernel=2\n"
    "flatten\n"
    "dense name=fc1 units=24 activation=relu\n"
    "dense name=fc2 units=5\n"
    "softmax_cross_entropy\n";

static char g_dir[128];        /* this run's folder */
static char g_model[192];      /* the model file in it */
static clt_dataset *g_data;    /* shared by every thread, read-only */
static clt_context *g_data_ctx; /* the context g_data was made with */
static float g_inputs[BATCH * 2 * 9 * 9]; /* the batch predicted after */
#define MANY 70 /* samples a model predicts at once: two of its batches */
static float g_many[MANY * 2 * 9 * 9];

/* A thread's own context on $CLT_DEVICE: plans as asked, kernels and
 * plans cached in cache_dir (NULL: no cache); NULL with the reason in
 * msg (JOB_MSG bytes) when none can be made. */
#define JOB_MSG 1024
static clt_context *open_context(clt_plan_mode plan, const char *cache_dir,
                                 char *msg) {
  clt_context_options o;
  clt_context_options_init(&o);
  o.plan = plan;
  o.cache = cache_dir != NULL;
  o.cache_dir = cache_dir;
  clt_context *ctx = NULL;
  char err[JOB_MSG];
  if (clt_context_create(&o, &ctx, err, sizeof err) != CLT_OK)
    snprintf(msg, JOB_MSG, "context: %.900s", err);
  return ctx;
}

/* One training run: its own context (plans as asked, kernels and plans in
 * cache_dir or not cached), the model from g_model, two epochs of Adam
 * on g_data, then the predictions for g_inputs. */
typedef struct job {
  int batch; /* training batch (compiled for BATCH) */
  clt_plan_mode plan;
  const char *cache_dir; /* NULL: no cache */
  const char *save;      /* a checkpoint to write after training, or NULL */
  bool ok;
  char msg[JOB_MSG];
  double loss;
  float pred[BATCH * 5];
  int plans;           /* products planned */
  int plans_cached;    /* of them, read from the cache */
  int plans_rejected;  /* damaged stored entries found */
  double plan_seconds; /* time spent measuring */
} job;

static void job_fail(job *j, clt_context *ctx, const char *what) {
  snprintf(j->msg, sizeof j->msg, "%s: %.900s", what,
           ctx ? clt_context_last_error(ctx) : "no context");
}

static void *job_run(void *arg) {
  job *j = arg;
  clt_context *ctx = open_context(j->plan, j->cache_dir, j->msg);
  if (!ctx) return NULL;
  clt_graph *g = NULL;
  clt_optimizer *opt = NULL;
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.epochs = 2;
  fo.batch = j->batch;
  fo.seed = 7;
  clt_epoch_stats hist[2];
  int64_t outputs = 0;
  if (clt_graph_load_model(ctx, g_model, &g) != CLT_OK)
    job_fail(j, ctx, "load the model");
  else if (clt_graph_compile(g, BATCH, 3) != CLT_OK)
    job_fail(j, ctx, "compile");
  else if (clt_optimizer_create(g, &oo, &opt) != CLT_OK)
    job_fail(j, ctx, "optimizer");
  else if (clt_fit(g, opt, g_data, NULL, &fo, hist) != CLT_OK)
    job_fail(j, ctx, "fit");
  else if (clt_graph_set_batch(g, g_inputs, NULL, BATCH) != CLT_OK ||
           clt_graph_forward(g, false) != CLT_OK ||
           clt_graph_predictions(g, j->pred, &outputs) != CLT_OK)
    job_fail(j, ctx, "predict");
  else if (outputs != 5)
    snprintf(j->msg, sizeof j->msg, "%lld outputs, not 5",
             (long long)outputs);
  else if (j->save && clt_checkpoint_save(g, opt, 2, hist, j->save) != CLT_OK)
    job_fail(j, ctx, "save");
  else {
    j->ok = true;
    j->loss = hist[1].train_loss;
    j->plans = clt_graph_plan_count(g);
    j->plan_seconds = clt_graph_plan_seconds(g);
    for (int i = 0; i < j->plans; i++) {
      clt_plan_info info;
      if (clt_graph_plan_info(g, i, &info) != CLT_OK) continue;
      j->plans_cached += info.source == CLT_PLAN_FROM_CACHE;
      j->plans_rejected += info.cache_rejected;
    }
  }
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_context_destroy(ctx);
  return NULL;
}

/* Runs jobs[0..n) each on a thread of its own, all at once. */
static void run_on_threads(job *jobs, int n) {
  pthread_t t[THREADS];
  for (int i = 0; i < n; i++)
    ck_assert_int_eq(pthread_create(&t[i], NULL, job_run, &jobs[i]), 0);
  for (int i = 0; i < n; i++) ck_assert_int_eq(pthread_join(t[i], NULL), 0);
  for (int i = 0; i < n; i++)
    ck_assert_msg(jobs[i].ok, "thread %d: %s", i, jobs[i].msg);
}

static void expect_same_bits(const job *want, const job *got, int thread) {
  ck_assert_msg(isfinite(want->loss), "the loss is %g", want->loss);
  ck_assert_msg(memcmp(&want->loss, &got->loss, sizeof got->loss) == 0,
                "thread %d: loss %.9g, alone %.9g", thread, got->loss,
                want->loss);
  for (int i = 0; i < BATCH * 5; i++)
    ck_assert_msg(memcmp(&want->pred[i], &got->pred[i], sizeof(float)) == 0,
                  "thread %d: prediction %d is %.9g, alone %.9g", thread, i,
                  (double)got->pred[i], (double)want->pred[i]);
}

/* Fixed plans (measuring off): the threads' runs have one set of kernels,
 * so each gives the bits of the same run on one thread. Two batch sizes,
 * so that the same kernels run over grids of two sizes at once (what
 * POCL 3 mixes up without turns, runtime.h). */
START_TEST(contexts_on_threads_train_alike) {
  static const int batches[THREADS] = {BATCH, 5, BATCH};
  job alone[2] = {{.batch = BATCH, .plan = CLT_PLAN_OFF},
                  {.batch = 5, .plan = CLT_PLAN_OFF}};
  for (int i = 0; i < 2; i++) {
    job_run(&alone[i]);
    ck_assert_msg(alone[i].ok, "alone, batch %d: %s", alone[i].batch,
                  alone[i].msg);
  }
  ck_assert_msg(memcmp(alone[0].pred, alone[1].pred, sizeof alone[0].pred),
                "batches of %d and 5 trained to the same bits", BATCH);
  job jobs[THREADS];
  for (int i = 0; i < THREADS; i++)
    jobs[i] = (job){.batch = batches[i], .plan = CLT_PLAN_OFF};
  run_on_threads(jobs, THREADS);
  for (int i = 0; i < THREADS; i++)
    expect_same_bits(&alone[batches[i] == BATCH ? 0 : 1], &jobs[i], i);
}
END_TEST

/* Inference, as a program serving predictions would run it: a context and
 * a model loaded from a checkpoint, MANY samples predicted three times
 * (each the same bits). */
typedef struct predict_job {
  const char *weights;
  bool ok;
  char msg[JOB_MSG];
  float out[MANY * 5];
} predict_job;

static void *predict_run(void *arg) {
  predict_job *j = arg;
  clt_context *ctx = open_context(CLT_PLAN_OFF, NULL, j->msg);
  if (!ctx) return NULL;
  clt_model *m = NULL;
  float *other = malloc(sizeof j->out);
  if (!other)
    snprintf(j->msg, sizeof j->msg, "out of memory");
  else if (clt_model_load(ctx, g_model, j->weights, &m) != CLT_OK)
    snprintf(j->msg, sizeof j->msg, "load: %.900s",
             clt_context_last_error(ctx));
  else if (clt_model_output_size(m) != 5)
    snprintf(j->msg, sizeof j->msg, "%lld outputs, not 5",
             (long long)clt_model_output_size(m));
  else {
    j->ok = clt_model_predict(m, g_many, MANY, j->out) == CLT_OK;
    for (int rep = 0; j->ok && rep < 2; rep++) {
      j->ok = clt_model_predict(m, g_many, MANY, other) == CLT_OK;
      if (j->ok && memcmp(other, j->out, sizeof j->out) != 0) {
        snprintf(j->msg, sizeof j->msg, "run %d predicted other bits",
                 rep + 2);
        j->ok = false;
      }
    }
    if (!j->ok && !j->msg[0])
      snprintf(j->msg, sizeof j->msg, "predict: %.900s",
               clt_context_last_error(ctx));
  }
  free(other);
  clt_model_destroy(m);
  clt_context_destroy(ctx);
  return NULL;
}

/* A checkpoint trained here, then served on three threads at once, each
 * with its own context: each prediction the bits of the same one made on
 * one thread, and rows that sum to 1. */
START_TEST(models_predict_on_threads_alike) {
  char weights[256];
  snprintf(weights, sizeof weights, "%s/small.safetensors", g_dir);
  job train = {.batch = BATCH, .plan = CLT_PLAN_OFF, .save = weights};
  job_run(&train);
  ck_assert_msg(train.ok, "training: %s", train.msg);
  predict_job alone = {.weights = weights};
  predict_run(&alone);
  ck_assert_msg(alone.ok, "alone: %s", alone.msg);
  for (int i = 0; i < MANY; i++) {
    double sum = 0.0;
    for (int c = 0; c < 5; c++) sum += alone.out[i * 5 + c];
    ck_assert_msg(fabs(sum - 1.0) < 1e-5, "sample %d: probabilities sum to %g",
                  i, sum);
  }
  predict_job jobs[THREADS];
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) {
    jobs[i] = (predict_job){.weights = weights};
    ck_assert_int_eq(pthread_create(&t[i], NULL, predict_run, &jobs[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) ck_assert_int_eq(pthread_join(t[i], NULL), 0);
  for (int i = 0; i < THREADS; i++) {
    ck_assert_msg(jobs[i].ok, "thread %d: %s", i, jobs[i].msg);
    ck_assert_msg(memcmp(jobs[i].out, alone.out, sizeof alone.out) == 0,
                  "thread %d predicted other bits than one thread alone", i);
  }
  remove(weights);
}
END_TEST

/* Every thread measures the plans at once into one fresh cache folder
 * (and builds its kernels into it): each run succeeds; a context made
 * afterwards finds no entry damaged and trains; one more after it reads
 * every plan from the cache, measuring nothing. (The first may measure a
 * few again: a context whose own GEMM kernels timed slow on a few
 * products stops running them and stores its later plans apart, for
 * contexts in the same state only (graph/plan.c), and times taken while
 * other contexts share the device, on POCL waiting for their turns, are
 * noisy: one of 21 in a CI run under ASan.) */
START_TEST(plans_measured_on_threads_are_stored_whole) {
  char cache[256];
  snprintf(cache, sizeof cache, "%s/cache", g_dir);
  job jobs[THREADS];
  for (int i = 0; i < THREADS; i++)
    jobs[i] = (job){.batch = BATCH, .plan = CLT_PLAN_ON, .cache_dir = cache};
  run_on_threads(jobs, THREADS);
  for (int i = 0; i < THREADS; i++) {
    ck_assert_msg(jobs[i].plans > 0, "thread %d planned nothing", i);
    ck_assert_msg(isfinite(jobs[i].loss), "thread %d: loss %g", i,
                  jobs[i].loss);
  }
  job after = {.batch = BATCH, .plan = CLT_PLAN_ON, .cache_dir = cache};
  job_run(&after);
  ck_assert_msg(after.ok, "after: %s", after.msg);
  ck_assert_int_eq(after.plans, jobs[0].plans);
  ck_assert_int_eq(after.plans_rejected, 0);
  ck_assert_msg(isfinite(after.loss), "loss %g", after.loss);
  job again = {.batch = BATCH, .plan = CLT_PLAN_ON, .cache_dir = cache};
  job_run(&again);
  ck_assert_msg(again.ok, "again: %s", again.msg);
  ck_assert_int_eq(again.plans, jobs[0].plans);
  ck_assert_msg(again.plans_cached == again.plans,
                "%d of %d plans read from the cache (%d after the threads)",
                again.plans_cached, again.plans, after.plans_cached);
  ck_assert_int_eq(again.plans_rejected, 0);
  ck_assert_msg(again.plan_seconds == 0.0, "measured again for %.3f s",
                again.plan_seconds);
  test_remove_tree(cache);
}
END_TEST

static Suite *threads_suite(void) {
  Suite *s = suite_create("threads");
  TCase *tc = tcase_create("bits");
  tcase_add_test(tc, contexts_on_threads_train_alike);
  suite_add_tcase(s, tc);
  tc = tcase_create("predict");
  tcase_add_test(tc, models_predict_on_threads_alike);
  suite_add_tcase(s, tc);
  tc = tcase_create("plans");
  tcase_add_test(tc, plans_measured_on_threads_are_stored_whole);
  suite_add_tcase(s, tc);
  return s;
}

/* The folder, the model file and the shared dataset (from memory:
 * SAMPLES samples of 2x9x9 values, labels 0..4). */
static bool setup(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/clt_threads_XXXXXX");
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return false;
  }
  snprintf(g_model, sizeof g_model, "%s/small.model", g_dir);
  FILE *f = fopen(g_model, "w");
  if (!f || fputs(model_text, f) == EOF || fclose(f) != 0) {
    perror(g_model);
    return false;
  }
  static float values[SAMPLES * 2 * 9 * 9];
  static int32_t labels[SAMPLES];
  uint32_t r = 12345;
  for (int i = 0; i < SAMPLES * 2 * 9 * 9; i++) {
    r = r * 1664525u + 1013904223u;
    values[i] = (float)(r >> 8) / 16777216.0f - 0.5f;
  }
  for (int i = 0; i < SAMPLES; i++) {
    labels[i] = i % 5;
    values[i * 162 + labels[i] * 9] += 2.0f; /* something to learn */
  }
  memcpy(g_inputs, values, sizeof g_inputs);
  memcpy(g_many, values + SAMPLES * 162 - MANY * 162, sizeof g_many);
  char err[1024];
  if (clt_context_create(NULL, &g_data_ctx, err, sizeof err) != CLT_OK) {
    fprintf(stderr, "threads: no context: %s\n", err);
    return false;
  }
  const clt_device_info *d = clt_context_device(g_data_ctx);
  printf("threads: running on %s (%s, %s), %d threads\n", d->name,
         d->platform_name, d->driver_version, THREADS);
  fflush(stdout);
  clt_dataset_desc desc = {.count = SAMPLES,
                           .channels = 2,
                           .height = 9,
                           .width = 9,
                           .values_f32 = values,
                           .labels = labels,
                           .num_classes = 5};
  if (clt_dataset_from_memory(g_data_ctx, &desc, &g_data) != CLT_OK) {
    fprintf(stderr, "threads: dataset: %s\n",
            clt_context_last_error(g_data_ctx));
    return false;
  }
  return true;
}

int main(void) {
  bool ready = setup();
  int failed = 1;
  if (ready) {
    failed = test_run_checks(threads_suite(), CK_NOFORK);
  }
  clt_dataset_destroy(g_data);
  clt_context_destroy(g_data_ctx);
  if (g_dir[0]) test_remove_tree(g_dir);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
