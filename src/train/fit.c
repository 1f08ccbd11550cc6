/* The fit loop: epochs of shuffled mini-batches prepared by the loader
 * thread, uploaded without waiting, forward, backward, update; metrics come
 * down from the device only when reported. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "data/loader.h"
#include "dist/dist.h"
#include "graph/graph.h"
#include "io/checkpoint.h"
#include "optim/optimizer.h"
#include "runtime/runtime.h"
#include "train/adapt.h"

CLT_API void clt_fit_options_init(clt_fit_options *o) {
  memset(o, 0, sizeof *o);
  o->epochs = 1;
  o->batch = 32;
  o->seed = 1;
  o->shuffle = true;
  o->progress_every = 50;
}

static clt_status check_data(clt_graph *g, const clt_dataset *ds,
                             const char *which) {
  clt_graph_node *in = &g->nodes[g->input_node];
  int64_t sample = (int64_t)ds->channels * ds->height * ds->width;
  if (sample != in->size) {
    char s[96];
    return clt_ctx_fail(g->ctx, CLT_ERR_SHAPE,
                        "%s data has samples of %dx%dx%d = %lld values, the "
                        "model's input '%s' takes %s",
                        which, ds->channels, ds->height, ds->width,
                        (long long)sample, in->name,
                        clt_shape_str(in->ndim, in->shape, s, sizeof s));
  }
  if (g->loss_node < 0) return CLT_OK;
  if (!ds->labels && !ds->targets)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "%s data has no labels or targets (read to predict "
                        "on: clt_data_options.unlabelled)",
                        which);
  int64_t outputs = g->nodes[g->loss_node].size;
  if (g->labels->dtype == CLT_F32) {
    if (!ds->targets)
      return clt_ctx_fail(g->ctx, CLT_ERR_SHAPE,
                          "%s data has class labels, but the model's loss is "
                          "%s, which needs %lld float targets per sample",
                          which, g->nodes[g->loss_node].ops->type,
                          (long long)outputs);
    if (ds->target_size != outputs)
      return clt_ctx_fail(g->ctx, CLT_ERR_SHAPE,
                          "%s data has %lld targets per sample, the model "
                          "has %lld outputs",
                          which, (long long)ds->target_size,
                          (long long)outputs);
    clt_err err = {0};
    if (clt_graph_loss_kind(g) == CLT_LOSS_MULTILABEL &&
        clt_dataset_check_unit_targets(ds, &err) != CLT_OK)
      return clt_ctx_fail(g->ctx, err.status, "%s data: %s", which, err.msg);
    return CLT_OK;
  }
  if (!ds->labels)
    return clt_ctx_fail(g->ctx, CLT_ERR_SHAPE,
                        "%s data has float targets, but the model's loss is "
                        "softmax_cross_entropy, which needs class labels",
                        which);
  if (ds->num_classes > outputs)
    return clt_ctx_fail(g->ctx, CLT_ERR_SHAPE,
                        "%s data has labels up to %d, but the model has %lld "
                        "outputs",
                        which, ds->num_classes - 1, (long long)outputs);
  return CLT_OK;
}

/* Float targets (a regression, sigmoid_cross_entropy's labels) instead of
 * class labels. */
static bool float_targets(const clt_graph *g) {
  return g->labels && g->labels->dtype == CLT_F32;
}

/* The graph's byte staging, made on first use. */
static clt_status byte_staging(clt_graph *g, int64_t numel) {
  if (g->input_bytes && g->input_bytes->numel >= numel) return CLT_OK;
  clt_tensor_destroy(g->input_bytes);
  g->input_bytes = NULL;
  return clt_tensor_create(g->ctx, CLT_U8, 1, &numel, &g->input_bytes);
}

/* Uploads a host batch into the graph without waiting: pixel bytes (the
 * loader's byte mode) go up as they are, a quarter of the floats, and
 * become the input's values on the device (clt_unit_u8: the loader's
 * floats, bit for bit). */
static clt_status upload_batch(clt_graph *g, const clt_host_batch *b,
                               cl_event *done) {
  clt_graph_node *in = &g->nodes[g->input_node];
  int64_t numel = b->n * in->size;
  clt_tensor x = clt_tensor_slice_1d(in->out, 0, numel);
  bool targets = float_targets(g);
  int64_t per = targets ? g->nodes[g->loss_node].size : 1;
  clt_tensor y = clt_tensor_slice_1d(g->labels, 0, b->n * per);
  CLT_TRY(clt_tensor_upload_async(
      &y, targets ? (const void *)b->targets : (const void *)b->labels, NULL));
  if (b->bytes) {
    CLT_TRY(byte_staging(g, g->max_batch * in->size));
    clt_tensor xb = clt_tensor_slice_1d(g->input_bytes, 0, numel);
    CLT_TRY(clt_tensor_upload_async(&xb, b->bytes, done));
    CLT_TRY(clt_unit_u8(g->ctx, &x, &xb, numel));
  } else {
    CLT_TRY(clt_tensor_upload_async(&x, b->images, done));
  }
  clt_graph_batch_is(g, b->n, true);
  return CLT_OK;
}

/* The batches whose uploads have been enqueued, oldest first, each with
 * its upload's event (the labels go up before the images on the in-order
 * queue, so the images' event covers both). A slot goes back to the loader
 * once its upload has run. Holding `ahead` of them lets the host enqueue
 * that many steps before the device has run them: waiting for each upload
 * before the next step (one step ahead) left the device idle whenever the
 * host was slow to come back, and on an H200 an MLP epoch ran at 0.72 of
 * bench train. The loader's ring has ahead + 2 slots: the held ones, one
 * ready and one being filled. */
#define FIT_AHEAD_DEFAULT 2
#define FIT_AHEAD_MAX 8

typedef struct held_ring {
  clt_host_batch b[FIT_AHEAD_MAX + 1];
  cl_event ev[FIT_AHEAD_MAX + 1];
  int first, count;
  int ahead; /* hold at most this many between steps */
} held_ring;

/* The steps the host may run ahead: CLT_FIT_AHEAD (1 to FIT_AHEAD_MAX;
 * for measuring; another value is refused, as clt_graph_env_switch
 * refuses a bad switch), else FIT_AHEAD_DEFAULT. */
static clt_status fit_ahead(clt_graph *g, int *ahead) {
  const char *env = getenv("CLT_FIT_AHEAD");
  *ahead = FIT_AHEAD_DEFAULT;
  if (!env || !*env) return CLT_OK;
  char *end;
  long v = strtol(env, &end, 10);
  if (*end != '\0' || v < 1 || v > FIT_AHEAD_MAX)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "CLT_FIT_AHEAD=%s: expected 1 to %d (the steps the "
                        "host may run ahead of the device)",
                        env, FIT_AHEAD_MAX);
  *ahead = (int)v;
  return CLT_OK;
}

/* A ring for loader l: ahead is what its depth allows (make_loader asked
 * for fit_ahead's + 2 slots; before clt_loader_next at most depth - 1
 * may be held, and one ready slot keeps the loader a batch ahead). */
static held_ring held_ring_for(const clt_loader *l) {
  int ahead = clt_loader_depth(l) - 2;
  if (ahead > FIT_AHEAD_MAX) ahead = FIT_AHEAD_MAX;
  return (held_ring){.ahead = ahead < 1 ? 1 : ahead};
}

static void held_push(held_ring *h, const clt_host_batch *b, cl_event ev) {
  int i = (h->first + h->count) % (FIT_AHEAD_MAX + 1);
  h->b[i] = *b;
  h->ev[i] = ev;
  h->count++;
}

/* Whether an upload has run (or failed: the wait will not block). */
static bool upload_ran(cl_event ev) {
  cl_int state = CL_COMPLETE;
  if (!ev) return true;
  if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state,
                     &state, NULL) != CL_SUCCESS)
    return true;
  return state <= CL_COMPLETE;
}

/* Gives back every held slot whose upload has run, waiting for the oldest
 * while more than keep are held. Every slot the loader handed out goes
 * back, an empty shard's (n 0) too. */
static void held_release(clt_loader *l, held_ring *h, int keep) {
  while (h->count > 0 && (h->count > keep || upload_ran(h->ev[h->first]))) {
    int i = h->first;
    if (h->ev[i]) {
      clWaitForEvents(1, &h->ev[i]);
      clReleaseEvent(h->ev[i]);
      h->ev[i] = NULL;
    }
    clt_loader_release(l, &h->b[i]);
    h->first = (i + 1) % (FIT_AHEAD_MAX + 1);
    h->count--;
  }
}

/* The loader's ring in pinned host memory, so that a GPU reads each upload
 * by DMA; malloc where the device gives none (handle NULL). */
static void *pinned_buffer(void *user, size_t bytes, void **handle) {
  clt_pinned *p = malloc(sizeof *p);
  *handle = NULL;
  if (!p) return NULL;
  if (clt_pinned_alloc(user, bytes, p)) {
    *handle = p;
    return p->ptr;
  }
  free(p);
  return malloc(bytes);
}

static void pinned_buffer_free(void *user, void *ptr, void *handle) {
  if (!handle) {
    free(ptr);
    return;
  }
  clt_pinned_free(user, handle);
  free(handle);
}

static clt_status nan_check(clt_graph *g, const clt_metrics *m, int epoch,
                            int64_t batch) {
  if (isfinite(m->loss)) return CLT_OK;
  return clt_ctx_fail(g->ctx, CLT_ERR_NAN,
                      "the training loss became %s in epoch %d by batch %lld: "
                      "training stopped. Try a lower learning rate, or "
                      "gradient clipping",
                      isnan(m->loss) ? "NaN" : "infinite", epoch,
                      (long long)batch);
}

/* What clt_fit_options.stop asked during a run. */
typedef struct stop_state {
  bool epoch_end; /* end the run when this epoch has ended */
  bool now;       /* the epoch was cut after a batch */
} stop_state;

typedef struct run_state {
  clt_graph *g;
  clt_optimizer *opt; /* NULL: evaluation */
  const clt_fit_options *fo;
  int epoch;
  clt_dist *dist;   /* training over MPI, else NULL */
  stop_state *stop; /* training: the stop function's requests */
  /* The host's time blocked (clt_epoch_stats.wait_*_seconds). */
  double wait_data, wait_device;
  /* The evaluation sets' loaders (validation, test), made at their first
   * evaluation and kept for the run: clt_fit's to destroy. */
  clt_loader **eval_loaders;
} run_state;

/* run_state.eval_loaders' entries. */
enum { EVAL_VALIDATION, EVAL_TEST, EVAL_SETS };

/* clt_loader_next, its wait counted. */
static bool next_batch(run_state *rs, clt_loader *l, clt_host_batch *b) {
  double t0 = clt_now_seconds();
  bool got = clt_loader_next(l, b);
  rs->wait_data += clt_now_seconds() - t0;
  return got;
}

/* held_release, its wait counted. */
static void release_held(run_state *rs, clt_loader *l, held_ring *h,
                         int keep) {
  double t0 = clt_now_seconds();
  held_release(l, h, keep);
  rs->wait_device += clt_now_seconds() - t0;
}

/* clt_graph_metrics; a wait for the device, counted. */
static clt_status read_metrics(run_state *rs, clt_metrics *m, bool reset) {
  double t0 = clt_now_seconds();
  clt_status st = clt_graph_metrics(rs->g, m, reset);
  rs->wait_device += clt_now_seconds() - t0;
  return st;
}

/* Asks the stop function after a training batch (over MPI
 * run_batches_dist asks it instead, with every rank); true: end the
 * epoch now. */
static bool poll_stop(run_state *rs) {
  const clt_fit_options *fo = rs->fo;
  if (!rs->stop || !fo || !fo->stop || rs->dist) return false;
  clt_fit_stop ask = fo->stop(fo->stop_user);
  if (ask == CLT_FIT_STOP_EPOCH) rs->stop->epoch_end = true;
  if (ask == CLT_FIT_STOP_NOW) rs->stop->now = true;
  return rs->stop->now;
}

static clt_status run_batches(run_state *rs, clt_loader *l, int64_t batches,
                              clt_metrics *out) {
  clt_graph *g = rs->g;
  bool training = rs->opt != NULL;
  clt_host_batch b;
  held_ring held = held_ring_for(l);
  int64_t done = 0, images = 0;
  int every = rs->fo && rs->fo->progress_every > 0 ? rs->fo->progress_every : 50;
  /* CLT_FIT_FLUSH=0: no flush after each step, the driver submits when it
   * will (as in bench train's loop; for measuring what the flush costs). */
  int flush;
  CLT_TRY(clt_graph_env_switch(g, "CLT_FIT_FLUSH",
                               "0: no clFlush after each step", &flush));
  double t0 = clt_now_seconds();
  clt_status st = read_metrics(rs, out, true);
  while (st == CLT_OK && next_batch(rs, l, &b)) {
    cl_event ev = NULL;
    if (b.n > 0) st = upload_batch(g, &b, &ev);
    held_push(&held, &b, ev);
    /* A shard with no image of this batch (evaluation over MPI: the last
     * batch split among more ranks than it has images). */
    if (b.n == 0) {
      release_held(rs, l, &held, held.ahead);
      continue;
    }
    if (st == CLT_OK) st = clt_graph_forward(g, training);
    if (st == CLT_OK && training) st = clt_graph_backward(g);
    if (st == CLT_OK && training) st = clt_optimizer_step(rs->opt);
    /* The step goes to the device now, not when a wait would send it. */
    if (flush != 0) clFlush(g->ctx->queue);
    release_held(rs, l, &held, held.ahead);
    done++;
    images += b.n;
    /* The first batch too: on a new device it is the one that waits for
     * CLBlast to compile its kernels, and the user should see it end. */
    bool report =
        rs->fo && rs->fo->progress && (done % every == 0 || done == 1);
    if (st == CLT_OK && (report || (training && done % every == 0))) {
      st = read_metrics(rs, out, false);
      if (st == CLT_OK && training) st = nan_check(g, out, rs->epoch, done);
      if (st == CLT_OK && report) {
        double el = clt_now_seconds() - t0;
        clt_progress p = {training ? CLT_PHASE_TRAIN : CLT_PHASE_EVAL,
                          rs->epoch, rs->fo->epochs, done, batches,
                          out->loss, out->accuracy,
                          el > 0 ? (double)images / el : 0.0, NULL,
                          out->mae};
        rs->fo->progress(&p, rs->fo->progress_user);
      }
    }
    if (st == CLT_OK && training && poll_stop(rs)) break;
  }
  release_held(rs, l, &held, 0);
  if (st == CLT_OK) st = read_metrics(rs, out, true);
  if (st == CLT_OK && training) st = nan_check(g, out, rs->epoch, done);
  return st;
}

/* run_batches of a training epoch over MPI. Every rank must make the
 * same collective calls in the same order, so nothing local ends the loop:
 * a rank's error waits for the next step's agreement (clt_dist_step_end)
 * or the one at the end, and the loop stops on every rank together. */
static clt_status run_batches_dist(run_state *rs, clt_loader *l,
                                   int64_t batches, clt_metrics *out) {
  clt_graph *g = rs->g;
  clt_dist *d = rs->dist;
  const clt_fit_options *fo = rs->fo;
  clt_host_batch b;
  held_ring held = held_ring_for(l);
  int64_t done = 0;
  int every = fo->progress_every > 0 ? fo->progress_every : 50;
  double t0 = clt_now_seconds();
  clt_status pending = read_metrics(rs, out, true), st = CLT_OK;
  while (st == CLT_OK && next_batch(rs, l, &b)) {
    cl_event ev = NULL;
    clt_dist_step_begin(d, b.n, b.global_n);
    if (pending == CLT_OK && b.n > 0) pending = upload_batch(g, &b, &ev);
    held_push(&held, &b, ev);
    release_held(rs, l, &held, held.ahead);
    if (pending == CLT_OK && b.n > 0) pending = clt_graph_forward(g, true);
    if (pending == CLT_OK && b.n > 0) pending = clt_graph_backward(g);
    /* Every rank's stop function is asked after every step; the ranks
     * agree on the strongest request with the step's status, so that all
     * stop after the same step. */
    int ask = fo->stop ? (int)fo->stop(fo->stop_user) : CLT_FIT_GO_ON;
    st = clt_dist_step_end_stop(d, g, pending, &ask);
    if (st != CLT_OK) break;
    pending = clt_optimizer_step(rs->opt);
    done++;
    if (ask >= CLT_FIT_STOP_EPOCH) rs->stop->epoch_end = true;
    if (ask == CLT_FIT_STOP_NOW) {
      rs->stop->now = true;
      break;
    }
    if (done % every != 0 && done != 1) continue;
    clt_status m_st = read_metrics(rs, out, false);
    if (pending == CLT_OK) pending = m_st;
    st = clt_dist_reduce_metrics(d, g, out);
    /* The same on every rank: agreed, so that rank 0 alone reports it. */
    if (st == CLT_OK && done % every == 0 &&
        nan_check(g, out, rs->epoch, done) != CLT_OK)
      st = clt_dist_agree(d, g->ctx, CLT_ERR_NAN);
    if (st == CLT_OK && pending == CLT_OK && rs->fo->progress) {
      double el = clt_now_seconds() - t0;
      clt_progress p = {CLT_PHASE_TRAIN, rs->epoch, rs->fo->epochs, done,
                        batches, out->loss, out->accuracy,
                        el > 0 ? (double)out->samples / el : 0.0, NULL,
                        out->mae};
      rs->fo->progress(&p, rs->fo->progress_user);
    }
  }
  release_held(rs, l, &held, 0);
  if (st != CLT_OK) return st; /* every rank stopped at the same point */
  clt_status m_st = read_metrics(rs, out, true);
  if (pending == CLT_OK) pending = m_st;
  st = clt_dist_reduce_metrics(d, g, out);
  if (st == CLT_OK) st = clt_dist_agree(d, g->ctx, pending);
  if (st == CLT_OK && nan_check(g, out, rs->epoch, done) != CLT_OK)
    st = clt_dist_agree(d, g->ctx, CLT_ERR_NAN);
  return st;
}

/* pinned: the ring in pinned host memory (the loaders of clt_fit, made
 * once a run; clt_evaluate's, made for one pass, keeps plain memory and
 * pays no pinning). */
static clt_status make_loader(clt_graph *g, const clt_dataset *ds,
                              int64_t batch, bool shuffle, uint64_t seed,
                              const clt_fit_options *fo, bool pinned,
                              clt_loader **out) {
  clt_loader_options lo;
  clt_loader_options_init(&lo);
  lo.batch = (int)batch;
  lo.shuffle = shuffle;
  lo.seed = seed;
  lo.bytes = true; /* u8 datasets: bytes up, scaled on the device */
  int ahead, pin;
  CLT_TRY(fit_ahead(g, &ahead));
  lo.depth = ahead + 2;
  /* CLT_PINNED=0: the ring in plain malloc'd memory (for measuring). */
  CLT_TRY(clt_graph_env_switch(g, "CLT_PINNED",
                               "0: the loader's buffers in plain memory",
                               &pin));
  if (pinned && pin != 0) {
    lo.alloc = pinned_buffer;
    lo.free_buffer = pinned_buffer_free;
    lo.alloc_user = g->ctx;
  }
  if (fo && shuffle) {
    lo.pad_crop = fo->pad_crop;
    lo.hflip = fo->hflip;
  }
  if (fo && fo->dist) {
    lo.shard_rank = clt_dist_rank(fo->dist);
    lo.shard_count = clt_dist_size(fo->dist);
  }
  clt_err err = {0};
  if (clt_loader_create(ds, &lo, out, &err) != CLT_OK)
    return clt_ctx_fail(g->ctx, err.status, "%s", err.msg);
  return CLT_OK;
}

static clt_status check_batch(clt_graph *g, int64_t batch) {
  if (!g->compiled || g->loss_node < 0)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "fit/evaluate: the graph needs a loss layer and must "
                        "be compiled");
  if (batch < 1 || batch > g->max_batch || batch > INT32_MAX)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "batch %lld: the graph was compiled for 1 to %lld",
                        (long long)batch, (long long)g->max_batch);
  return CLT_OK;
}

CLT_API clt_status clt_evaluate(clt_graph *g, const clt_dataset *ds,
                                int64_t batch, clt_metrics *out) {
  CLT_TRY(check_batch(g, batch));
  CLT_TRY(check_data(g, ds, "evaluation"));
  clt_loader *l = NULL;
  CLT_TRY(make_loader(g, ds, batch, false, 0, NULL, false, &l));
  run_state rs = {.g = g};
  clt_status st = clt_loader_start_epoch(l, 0);
  if (st == CLT_OK) st = run_batches(&rs, l, clt_loader_batches_per_epoch(l), out);
  clt_loader_destroy(l);
  return st;
}

/* Loss and accuracy of ds after an epoch (reported as CLT_PHASE_EVAL);
 * over MPI (rs->dist), of this rank's shard of each batch. which: the
 * set's loader in rs->eval_loaders (made here the first time: its thread
 * and pinned ring serve every epoch's evaluation). */
static clt_status eval_set(run_state *rs, const clt_dataset *ds, int which,
                           clt_metrics *m) {
  clt_loader **l = &rs->eval_loaders[which];
  if (!*l)
    CLT_TRY(make_loader(rs->g, ds, rs->g->max_batch, false, 0,
                        rs->dist ? rs->fo : NULL, true, l));
  run_state ers = {.g = rs->g, .fo = rs->fo, .epoch = rs->epoch};
  CLT_TRY(clt_loader_start_epoch(*l, 0));
  return run_batches(&ers, *l, clt_loader_batches_per_epoch(*l), m);
}

/* Over MPI the ranks evaluate rank 0's model (its batch-norm statistics,
 * the ones it saves, sent to all first) on a shard each of every batch,
 * agree, and sum: the whole set once, in 1/N of the time. Rank 0's sums
 * are then everyone's, so early stopping and the schedule decide the same
 * way. */
static clt_status eval_sets_dist(run_state *rs, const clt_dataset *test,
                                 clt_epoch_stats *es) {
  const clt_fit_options *fo = rs->fo;
  clt_metrics val = {0}, tm = {0};
  clt_status st = clt_dist_sync_params(rs->dist, rs->g);
  if (st == CLT_OK && fo->validation)
    st = eval_set(rs, fo->validation, EVAL_VALIDATION, &val);
  if (st == CLT_OK && test) st = eval_set(rs, test, EVAL_TEST, &tm);
  CLT_TRY(clt_dist_agree(rs->dist, rs->g->ctx, st));
  if (fo->validation) {
    CLT_TRY(clt_dist_reduce_metrics(rs->dist, rs->g, &val));
    es->val_loss = val.loss;
    es->val_acc = val.accuracy;
    es->val_mae = val.mae;
  }
  if (test) {
    CLT_TRY(clt_dist_reduce_metrics(rs->dist, rs->g, &tm));
    es->test_loss = tm.loss;
    es->test_acc = tm.accuracy;
    es->test_mae = tm.mae;
  }
  double v[6] = {es->val_loss,  es->val_acc,  es->val_mae,
                 es->test_loss, es->test_acc, es->test_mae};
  CLT_TRY(clt_dist_broadcast(rs->dist, rs->g, v, 6));
  es->val_loss = v[0];
  es->val_acc = v[1];
  es->val_mae = v[2];
  es->test_loss = v[3];
  es->test_acc = v[4];
  es->test_mae = v[5];
  return CLT_OK;
}

/* With profiling on: the epoch's training commands by op into es
 * (es->profile is the caller's to free, after the report), and forgotten,
 * so that the evaluation after them is not counted, and the profile holds
 * no more than an epoch's commands. */
static clt_status epoch_profile(clt_context *ctx, clt_epoch_stats *es) {
  clt_profile_row *rows = NULL;
  size_t n = 0;
  CLT_TRY(clt_profile_summary(ctx, &rows, &n));
  for (size_t i = 0; i < n; i++) es->device_seconds += rows[i].seconds;
  es->profile = rows;
  es->profile_rows = n;
  clt_profile_reset(ctx);
  return CLT_OK;
}

static clt_status fit_epoch(run_state *rs, clt_loader *train_l,
                            const clt_dataset *test, clt_epoch_stats *es) {
  const clt_fit_options *fo = rs->fo;
  clt_context *ctx = rs->g->ctx;
  memset(es, 0, sizeof *es);
  es->epoch = rs->epoch;
  es->lr = clt_optimizer_set_epoch(rs->opt, rs->epoch - 1);
  clt_kernel_stats k0, k1;
  clt_context_kernel_stats(ctx, &k0);
  /* The compile's measuring and the last evaluation are not the epoch's. */
  if (ctx->profiling) {
    CLT_TRY(clt_context_finish(ctx));
    clt_profile_reset(ctx);
  }
  double t0 = clt_now_seconds();
  CLT_TRY(clt_loader_start_epoch(train_l, rs->epoch - 1));
  clt_metrics m;
  int64_t batches = clt_loader_batches_per_epoch(train_l);
  CLT_TRY(rs->dist ? run_batches_dist(rs, train_l, batches, &m)
                   : run_batches(rs, train_l, batches, &m));
  es->seconds = clt_now_seconds() - t0;
  es->wait_data_seconds = rs->wait_data;
  es->wait_device_seconds = rs->wait_device;
  if (ctx->profiling) CLT_TRY(epoch_profile(ctx, es));
  /* A first run builds the programs the graph's compile did not need
   * (the loss's, the optimizer's) in the first steps: told apart, so that
   * the epoch's speed is the training's. */
  clt_context_kernel_stats(ctx, &k1);
  es->compile_seconds = k1.build_seconds - k0.build_seconds;
  if (es->compile_seconds > es->seconds) es->compile_seconds = es->seconds;
  es->load_seconds = k1.load_seconds - k0.load_seconds;
  if (es->load_seconds > es->compile_seconds)
    es->load_seconds = es->compile_seconds;
  /* The ranks' counters take a cut epoch too (its steps are counted). */
  clt_dist_add_epoch(rs->dist, es);
  if (rs->stop->now) return CLT_OK; /* cut: nothing of it is reported */
  double run = es->seconds - es->compile_seconds;
  es->images_per_sec = run > 0 ? (double)m.samples / run : 0;
  es->train_loss = m.loss;
  es->train_acc = m.accuracy;
  es->train_mae = m.mae;
  clt_optimizer_saved os;
  clt_optimizer_saved_state(rs->opt, &os);
  if (os.scaler) {
    es->loss_scale = clt_loss_scaler_scale(os.scaler);
    es->skipped_steps = clt_loss_scaler_skipped(os.scaler);
  }
  es->test_loss = es->test_acc = es->test_mae = NAN;
  es->val_loss = es->val_acc = es->val_mae = NAN;
  if (rs->dist) return eval_sets_dist(rs, test, es);
  clt_metrics m_eval;
  if (fo->validation) {
    CLT_TRY(eval_set(rs, fo->validation, EVAL_VALIDATION, &m_eval));
    es->val_loss = m_eval.loss;
    es->val_acc = m_eval.accuracy;
    es->val_mae = m_eval.mae;
  }
  if (test) {
    CLT_TRY(eval_set(rs, test, EVAL_TEST, &m_eval));
    es->test_loss = m_eval.loss;
    es->test_acc = m_eval.accuracy;
    es->test_mae = m_eval.mae;
  }
  return CLT_OK;
}

static void report_epoch(const clt_fit_options *fo, const clt_epoch_stats *es) {
  if (!fo->progress) return;
  clt_progress p = {CLT_PHASE_EPOCH, es->epoch, fo->epochs, 0, 0,
                    es->train_loss, es->train_acc, es->images_per_sec, es,
                    es->train_mae};
  fo->progress(&p, fo->progress_user);
}

/* The loss early stopping and the plateau schedule watch. */
static double monitored(const clt_fit_options *fo, const clt_dataset *test,
                        const clt_epoch_stats *es) {
  return fo->validation ? es->val_loss : test ? es->test_loss : es->train_loss;
}

/* After epoch e: a checkpoint every checkpoint_every epochs and at the
 * end (the last epoch, or `last`: the one a stop request ends the run
 * after), when a path is set; *written: e where one was written. With
 * early stopping, at each improvement only. */
static clt_status maybe_checkpoint(clt_graph *g, clt_optimizer *opt,
                                   const clt_fit_options *fo, int e,
                                   bool last, const clt_epoch_stats *history,
                                   const clt_dataset *train, int *written) {
  if (!fo->checkpoint_path || clt_dist_rank(fo->dist) != 0) return CLT_OK;
  bool due = fo->early_stop > 0
                 ? history[e - 1].best
                 : e == fo->epochs || last ||
                       (fo->checkpoint_every > 0 &&
                        e % fo->checkpoint_every == 0);
  if (!due) return CLT_OK;
  /* the outputs' names: the classes, or the targets' columns */
  char **names = train->class_names ? train->class_names
                                    : train->target_names;
  int n_names = train->class_names    ? train->num_classes
                : train->target_names ? (int)train->target_size
                                      : 0;
  clt_checkpoint_train t = {e,
                            fo->seed,
                            history,
                            names,
                            n_names,
                            train->fpixels ? "floats" : "bytes",
                            train->label_column};
  CLT_TRY(clt_checkpoint_write(g, opt, &t, fo->checkpoint_path));
  *written = e;
  return CLT_OK;
}

/* After each epoch, its evaluation included: a request made since its
 * last batch ends the run now. Over MPI rank 0's stop function decides
 * for every rank (each calls this, with or without a function). */
static clt_status stop_at_epoch_end(clt_graph *g, const clt_fit_options *fo,
                                    stop_state *stop) {
  if (!fo->dist) {
    if (fo->stop && fo->stop(fo->stop_user) != CLT_FIT_GO_ON)
      stop->epoch_end = true;
    return CLT_OK;
  }
  double v = 0.0;
  if (clt_dist_rank(fo->dist) == 0 && fo->stop)
    v = fo->stop(fo->stop_user) != CLT_FIT_GO_ON ? 1.0 : 0.0;
  CLT_TRY(clt_dist_broadcast(fo->dist, g, &v, 1));
  if (v != 0.0) stop->epoch_end = true;
  return CLT_OK;
}

/* Early stopping's state: the best monitored loss, its epoch, and the
 * weights then (one device copy of the graph's parameter buffer, batch-norm
 * statistics included). */
typedef struct best_state {
  double loss;
  int epoch, wait;
  clt_tensor *weights;
} best_state;

/* Epochs done before a resumed run: the schedule and early stopping see
 * their losses again, so that they go on as if the run had not stopped. */
static void replay_history(clt_optimizer *opt, const clt_fit_options *fo,
                           const clt_dataset *test,
                           const clt_epoch_stats *history, int first,
                           best_state *b) {
  for (int e = 1; history && e < first; e++) {
    double loss = monitored(fo, test, &history[e - 1]);
    if (isnan(loss)) continue;
    clt_optimizer_observe(opt, loss);
    if (loss < b->loss - fo->min_delta) {
      b->loss = loss;
      b->epoch = e;
      b->wait = 0;
    } else {
      b->wait++;
    }
  }
}

/* What clt_fit checks before it begins. */
static clt_status check_fit(clt_graph *g, const clt_dataset *train,
                            const clt_dataset *test,
                            const clt_fit_options *fo, int first) {
  CLT_TRY(check_batch(g, fo->batch));
  if (fo->epochs < 1 || first > fo->epochs || fo->checkpoint_every < 0 ||
      fo->early_stop < 0 || !(fo->min_delta >= 0) ||
      (fo->early_stop > 0 && fo->checkpoint_every > 0))
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "fit: epochs %d to %d, checkpoint every %d, early stop "
                        "%d, min delta %g (early stopping writes checkpoints "
                        "at improvements: checkpoint_every must be 0)",
                        first, fo->epochs, fo->checkpoint_every,
                        fo->early_stop, fo->min_delta);
  CLT_TRY(check_data(g, train, "training"));
  if (test) CLT_TRY(check_data(g, test, "test"));
  if (fo->validation) CLT_TRY(check_data(g, fo->validation, "validation"));
  return CLT_OK;
}

CLT_API clt_status clt_fit(clt_graph *g, clt_optimizer *opt,
                           const clt_dataset *train, const clt_dataset *test,
                           const clt_fit_options *fo,
                           clt_epoch_stats *history) {
  int first = fo->first_epoch > 1 ? fo->first_epoch : 1;
  clt_status checked = check_fit(g, train, test, fo, first);
  /* Over MPI a rank that cannot begin must not leave the others waiting. */
  if (fo->dist) checked = clt_dist_agree(fo->dist, g->ctx, checked);
  CLT_TRY(checked);
  /* A normalize layer without statistics learns them from the training
   * data first (every rank alike: each holds the whole data). */
  checked = clt_graph_adapt_new(g, train, true, NULL);
  if (fo->dist) checked = clt_dist_agree(fo->dist, g->ctx, checked);
  CLT_TRY(checked);
  /* Over MPI only rank 0 reports. */
  clt_fit_options quiet_rank;
  if (fo->dist && clt_dist_rank(fo->dist) != 0) {
    quiet_rank = *fo;
    quiet_rank.progress = NULL;
    fo = &quiet_rank;
  }
  /* Checkpoints and early stopping read the history; without the
   * caller's, keep our own (epochs before `first` then read as unknown). */
  clt_epoch_stats *own = NULL;
  if ((fo->checkpoint_path || fo->early_stop > 0) && !history) {
    own = calloc((size_t)fo->epochs, sizeof *own);
    if (!own) return clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "fit history");
    for (int e = 0; e < fo->epochs; e++) {
      own[e].epoch = e + 1;
      own[e].train_loss = own[e].train_acc = own[e].train_mae = NAN;
      own[e].test_loss = own[e].test_acc = own[e].test_mae = NAN;
      own[e].val_loss = own[e].val_acc = own[e].val_mae = NAN;
    }
    history = own;
  }
  best_state best = {INFINITY, 0, 0, NULL};
  replay_history(opt, fo, test, history, first, &best);
  clt_loader *l = NULL;
  clt_status st =
      make_loader(g, train, fo->batch, fo->shuffle, fo->seed, fo, true, &l);
  if (st == CLT_OK)
    clt_optimizer_set_steps_per_epoch(opt, clt_loader_batches_per_epoch(l));
  if (st == CLT_OK && fo->early_stop > 0 && g->param_count > 0) {
    st = clt_tensor_create(g->ctx, CLT_F32, 1, &g->param_count, &best.weights);
    /* A resumed run starts from the best weights its checkpoint holds. */
    if (st == CLT_OK) st = clt_tensor_copy(best.weights, g->params);
  }
  if (fo->dist) {
    /* A rank whose loader or copy failed must not leave the others waiting. */
    st = clt_dist_agree(fo->dist, g->ctx, st);
    if (st == CLT_OK)
      st = clt_dist_attach(fo->dist, g, fo->batch,
                           clt_loader_batches_per_epoch(l));
    st = clt_dist_agree(fo->dist, g->ctx, st);
  }
  int e = first, written = 0;
  bool stopped = false;
  stop_state stop = {false, false};
  clt_loader *eval_loaders[EVAL_SETS] = {NULL};
  for (; st == CLT_OK && e <= fo->epochs; e++) {
    clt_epoch_stats es;
    run_state rs = {.g = g, .opt = opt, .fo = fo, .epoch = e,
                    .dist = fo->dist, .stop = &stop,
                    .eval_loaders = eval_loaders};
    st = fit_epoch(&rs, l, test, &es);
    /* the profile's rows: the report's to read, then freed */
    clt_profile_row *rows = (clt_profile_row *)es.profile;
    if (st == CLT_OK && !stop.now) st = stop_at_epoch_end(g, fo, &stop);
    if (st != CLT_OK || stop.now) { /* e unfinished */
      free(rows);
      break;
    }
    double loss = monitored(fo, test, &es);
    clt_optimizer_observe(opt, loss);
    if (!isnan(loss) && loss < best.loss - fo->min_delta) {
      best.loss = loss;
      best.epoch = e;
      best.wait = 0;
      es.best = true;
      if (best.weights) st = clt_tensor_copy(best.weights, g->params);
    } else {
      best.wait++;
    }
    if (history) {
      history[e - 1] = es;
      history[e - 1].profile = NULL;
      history[e - 1].profile_rows = 0;
    }
    report_epoch(fo, &es);
    free(rows);
    if (st == CLT_OK)
      st = maybe_checkpoint(g, opt, fo, e, stop.epoch_end, history, train,
                            &written);
    if (fo->dist) st = clt_dist_agree(fo->dist, g->ctx, st);
    if (fo->early_stop > 0 && best.wait >= fo->early_stop) {
      stopped = e < fo->epochs;
      e++;
      break;
    }
    if (stop.epoch_end) {
      e++;
      break;
    }
  }
  int last = e - 1;
  bool restored = false;
  /* A cut epoch leaves the weights of no epoch: the best go back. */
  if (st == CLT_OK && best.weights && best.epoch > 0 &&
      (best.epoch != last || stop.now)) {
    st = clt_tensor_copy(g->params, best.weights);
    clt_graph_params_written(g);
    restored = st == CLT_OK;
  }
  if (st == CLT_OK) st = clt_context_finish(g->ctx);
  clt_dist_detach(fo->dist, g);
  if (fo->result) {
    *fo->result = (clt_fit_result){
        .last_epoch = last,
        .best_epoch = best.epoch,
        .best_loss = best.epoch > 0 ? best.loss : NAN,
        .monitor = fo->validation ? "validation" : test ? "test" : "training",
        .stopped_early = stopped,
        .restored_best = restored,
        .interrupted = stop.now || (stop.epoch_end && last < fo->epochs),
        .unfinished = stop.now,
        .checkpoint_epoch = written};
  }
  clt_tensor_destroy(best.weights);
  for (int i = 0; i < EVAL_SETS; i++) clt_loader_destroy(eval_loaders[i]);
  clt_loader_destroy(l);
  free(own);
  return st;
}
