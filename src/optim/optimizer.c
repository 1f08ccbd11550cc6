/* Optimizers: SGD (momentum, Nesterov, weight decay), Adam, AdamW, RMSprop
 * (momentum, centered), with
 * learning-rate schedules and clipping by global gradient norm. Every
 * trainable parameter lives in one buffer, so a step is one kernel (plus
 * one reduction when clipping). */
#include <math.h>
#include <stdlib.h>

#include "optim/optimizer.h"

/* Steps the host may enqueue ahead of the device. */
#define CLT_STEPS_IN_FLIGHT 3

struct clt_optimizer {
  clt_graph *g;
  clt_optimizer_options opts;
  float lr;
  int64_t step;
  clt_tensor params, grads; /* the trainable prefix of the graph's buffers */
  int64_t n;                /* its length (0: nothing is trained) */
  uint64_t trainable_version; /* the graph's when made (graph.h) */
  clt_tensor *m, *v;        /* Adam moments, or v = SGD momentum; RMSprop:
                               v the mean square, m the momentum buffer */
  clt_tensor *avg;          /* RMSprop centered: the mean gradient */
  clt_tensor *norm_sq;      /* [1]: the squared global norm when clipping */
  /* Markers of the last CLT_STEPS_IN_FLIGHT steps (see clt_optimizer_step). */
  cl_event in_flight[CLT_STEPS_IN_FLIGHT];
  /* Schedules: the rate of the epoch before warm-up, and where in it. */
  float epoch_lr;
  int epoch;
  int64_t epoch_step, steps_per_epoch; /* 0: warm up by epochs */
  /* PLATEAU: the factor reached, the best loss, epochs since it. */
  float plateau_scale;
  double plateau_best;
  int plateau_wait;
  clt_loss_scaler *scaler; /* NULL: no loss scaling */
  /* The momentum (SGD, RMSprop) or beta1 (Adam) of the coming step: the
   * options', or the one-cycle schedule's. */
  float momentum;
};

void clt_optimizer_saved_state(const clt_optimizer *o,
                               clt_optimizer_saved *out) {
  *out = (clt_optimizer_saved){o->g,    &o->opts, o->step, o->m,
                               o->v,    o->avg,   o->scaler};
}

void clt_optimizer_restore_step(clt_optimizer *o, int64_t step) {
  o->step = step;
}


CLT_API void clt_optimizer_options_init(clt_optimizer_options *o,
                                        clt_optimizer_kind kind) {
  *o = (clt_optimizer_options){0};
  o->kind = kind;
  /* RMSprop: Keras's 0.001, not PyTorch's 0.01 (the Fashion-MNIST MLP,
   * 3 epochs: test accuracy 0.83 at 0.01, 0.86 at 0.001, Adam's). */
  o->lr = kind == CLT_OPT_SGD ? 0.01f : 0.001f;
  o->beta1 = 0.9f;
  o->beta2 = 0.999f;
  o->eps = 1e-8f;
  o->weight_decay = kind == CLT_OPT_ADAMW ? 0.01f : 0.0f;
  o->schedule = CLT_SCHEDULE_CONSTANT;
  o->step_epochs = 1;
  o->gamma = 0.1f;
  o->patience = 10;
  o->alpha = 0.99f;
  o->pct_start = 0.3f;
  o->div_factor = 25.0f;
  o->final_div_factor = 1e4f;
  o->cycle_momentum = true;
  o->base_momentum = 0.85f;
  o->max_momentum = 0.95f;
}

static clt_status check_options(clt_context *ctx,
                                const clt_optimizer_options *o) {
  const char *bad = NULL;
  bool adam = o->kind == CLT_OPT_ADAM || o->kind == CLT_OPT_ADAMW;
  if (o->kind < CLT_OPT_SGD || o->kind > CLT_OPT_RMSPROP)
    bad = "unknown optimizer kind";
  else if (!(o->lr > 0.0f) || !isfinite(o->lr)) bad = "lr must be positive";
  else if (!(o->momentum >= 0.0f)) bad = "momentum must be >= 0";
  else if (adam && o->momentum != 0.0f)
    bad = "Adam and AdamW take no momentum (their beta1 is one)";
  else if (o->kind != CLT_OPT_SGD && (o->nesterov || o->dampening != 0.0f))
    bad = "Nesterov momentum and dampening are SGD's";
  else if (o->kind == CLT_OPT_RMSPROP &&
           !(o->alpha >= 0.0f && o->alpha < 1.0f))
    bad = "RMSprop's alpha must be in [0, 1)";
  else if (o->nesterov && (o->momentum <= 0.0f || o->dampening != 0.0f))
    bad = "Nesterov momentum needs momentum > 0 and dampening 0";
  else if (o->weight_decay < 0.0f) bad = "weight decay must be >= 0";
  else if (o->beta1 < 0.0f || o->beta1 >= 1.0f || o->beta2 < 0.0f ||
           o->beta2 >= 1.0f)
    bad = "betas must be in [0, 1)";
  else if (!(o->eps > 0.0f)) bad = "eps must be positive";
  else if (o->clip_norm < 0.0f) bad = "clip norm must be >= 0";
  else if (o->schedule == CLT_SCHEDULE_STEP && o->step_epochs < 1)
    bad = "step schedule needs step_epochs >= 1";
  else if (o->schedule == CLT_SCHEDULE_COSINE && o->total_epochs < 1)
    bad = "cosine schedule needs total_epochs >= 1";
  else if (o->schedule == CLT_SCHEDULE_PLATEAU &&
           (o->patience < 1 || !(o->gamma > 0.0f && o->gamma < 1.0f)))
    bad = "plateau schedule needs patience >= 1 and gamma in (0, 1)";
  else if (o->schedule == CLT_SCHEDULE_ONECYCLE &&
           (o->total_epochs < 1 ||
            !(o->pct_start > 0.0f && o->pct_start < 1.0f) ||
            !(o->div_factor > 0.0f) || !(o->final_div_factor > 0.0f)))
    bad = "onecycle schedule needs total_epochs >= 1, pct_start in (0, 1) "
          "and div factors > 0";
  else if (o->schedule == CLT_SCHEDULE_ONECYCLE && o->cycle_momentum &&
           !(o->base_momentum >= 0.0f && o->base_momentum <= o->max_momentum &&
             o->max_momentum < 1.0f))
    bad = "onecycle momentum needs 0 <= base_momentum <= max_momentum < 1";
  else if (o->schedule == CLT_SCHEDULE_ONECYCLE && o->warmup_epochs > 0)
    bad = "the onecycle schedule warms up itself (pct_start): no "
          "warmup_epochs";
  else if (o->schedule > CLT_SCHEDULE_ONECYCLE || o->schedule < 0)
    bad = "unknown schedule";
  else if (o->warmup_epochs < 0) bad = "warmup_epochs must be >= 0";
  else if (!(o->min_delta >= 0.0f)) bad = "min_delta must be >= 0";
  else if (!(o->min_lr >= 0.0f)) bad = "min_lr must be >= 0";
  if (bad)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT, "optimizer: %s", bad);
  return CLT_OK;
}

static clt_status zeroed(clt_context *ctx, int64_t n, clt_tensor **out) {
  int64_t len = n > 0 ? n : 1;
  CLT_TRY(clt_tensor_create(ctx, CLT_F32, 1, &len, out));
  return clt_tensor_fill(*out, 0.0);
}

static bool cycles_momentum(const clt_optimizer_options *p) {
  return p->schedule == CLT_SCHEDULE_ONECYCLE && p->cycle_momentum;
}

/* From start (pct 0) to end (pct 1) along half a cosine. */
static double anneal_cos(double start, double end, double pct) {
  return end + (start - end) / 2.0 * (1.0 + cos(M_PI * pct));
}

/* The one-cycle schedule at step k (0-based; an epoch when no steps per
 * epoch are known), as PyTorch's OneCycleLR computes it: the rate, and
 * the momentum where cycled. */
static void onecycle_at(clt_optimizer *o, double k) {
  const clt_optimizer_options *p = &o->opts;
  double total = (double)p->total_epochs *
                 (double)(o->steps_per_epoch > 0 ? o->steps_per_epoch : 1);
  double first = p->lr / p->div_factor, last = first / p->final_div_factor;
  double up_end = p->pct_start * total - 1.0, end = total - 1.0;
  double lr, mom;
  if (k <= up_end) {
    double pct = up_end > 0.0 ? k / up_end : 1.0;
    lr = anneal_cos(first, p->lr, pct);
    mom = anneal_cos(p->max_momentum, p->base_momentum, pct);
  } else {
    double pct = end > up_end ? (k - up_end) / (end - up_end) : 1.0;
    if (pct > 1.0) pct = 1.0; /* past the steps planned: the last rate */
    lr = anneal_cos(p->lr, last, pct);
    mom = anneal_cos(p->base_momentum, p->max_momentum, pct);
  }
  o->lr = (float)lr;
  if (p->cycle_momentum) o->momentum = (float)mom;
}

CLT_API clt_status clt_optimizer_create(clt_graph *g,
                                        const clt_optimizer_options *opts,
                                        clt_optimizer **out) {
  *out = NULL;
  if (!g->compiled)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "optimizer: compile the graph first");
  CLT_TRY(check_options(g->ctx, opts));
  clt_optimizer *o = calloc(1, sizeof *o);
  if (!o) return clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "optimizer");
  o->g = g;
  o->opts = *opts;
  o->lr = o->epoch_lr = opts->lr;
  o->plateau_scale = 1.0f;
  o->plateau_best = INFINITY;
  bool adam_kind = opts->kind == CLT_OPT_ADAM || opts->kind == CLT_OPT_ADAMW;
  o->momentum = adam_kind ? opts->beta1 : opts->momentum;
  int64_t n = clt_graph_parameter_count(g);
  o->n = n;
  o->trainable_version = g->trainable_version;
  /* Trainable parameters come first in the graph's buffer. */
  o->params = clt_tensor_slice_1d(g->params, 0, n > 0 ? n : 1);
  o->grads = clt_tensor_slice_1d(g->grads, 0, n > 0 ? n : 1);
  clt_status st = zeroed(g->ctx, 1, &o->norm_sq);
  bool sgd = opts->kind == CLT_OPT_SGD, rms = opts->kind == CLT_OPT_RMSPROP;
  /* A cycled momentum is never 0: SGD and RMSprop keep its buffer. */
  bool moving = opts->momentum != 0.0f || cycles_momentum(opts);
  if (st == CLT_OK && (!sgd || moving)) st = zeroed(g->ctx, n, &o->v);
  if (st == CLT_OK && !sgd && (!rms || moving)) st = zeroed(g->ctx, n, &o->m);
  if (opts->schedule == CLT_SCHEDULE_ONECYCLE) onecycle_at(o, 0.0);
  if (st == CLT_OK && rms && opts->centered) st = zeroed(g->ctx, n, &o->avg);
  if (st != CLT_OK) {
    clt_optimizer_destroy(o);
    return st;
  }
  *out = o;
  return CLT_OK;
}

CLT_API void clt_optimizer_destroy(clt_optimizer *o) {
  if (!o) return;
  for (int i = 0; i < CLT_STEPS_IN_FLIGHT; i++)
    if (o->in_flight[i]) clReleaseEvent(o->in_flight[i]);
  clt_tensor_destroy(o->m);
  clt_tensor_destroy(o->v);
  clt_tensor_destroy(o->avg);
  clt_tensor_destroy(o->norm_sq);
  free(o);
}

/* The warm-up factor at the optimizer's position: step k of W epochs of
 * S steps gets (k + 1) / (W S); without S, epoch e gets (e + 1) / W. */
static float warmup_factor(const clt_optimizer *o) {
  int w = o->opts.warmup_epochs;
  if (w <= 0 || o->epoch >= w) return 1.0f;
  double f = o->steps_per_epoch > 0
                 ? (double)(o->epoch * o->steps_per_epoch + o->epoch_step + 1) /
                       (double)(w * o->steps_per_epoch)
                 : (double)(o->epoch + 1) / w;
  return f < 1.0 ? (float)f : 1.0f;
}

CLT_API float clt_optimizer_set_epoch(clt_optimizer *o, int epoch) {
  const clt_optimizer_options *p = &o->opts;
  switch (p->schedule) {
  case CLT_SCHEDULE_STEP:
    o->epoch_lr = p->lr * powf(p->gamma, (float)(epoch / p->step_epochs));
    break;
  case CLT_SCHEDULE_COSINE: {
    double t = epoch < p->total_epochs ? epoch : p->total_epochs;
    o->epoch_lr = (float)(p->min_lr + (p->lr - p->min_lr) *
                                          (1.0 + cos(M_PI * t / p->total_epochs)) /
                                          2.0);
    break;
  }
  case CLT_SCHEDULE_PLATEAU:
    o->epoch_lr = fmaxf(p->lr * o->plateau_scale, p->min_lr);
    break;
  case CLT_SCHEDULE_CONSTANT: o->epoch_lr = p->lr; break;
  case CLT_SCHEDULE_ONECYCLE: break;
  }
  o->epoch = epoch;
  o->epoch_step = 0;
  if (p->schedule == CLT_SCHEDULE_ONECYCLE) {
    /* the rate of the epoch's first step */
    onecycle_at(o, (double)epoch * (double)(o->steps_per_epoch > 0
                                               ? o->steps_per_epoch
                                               : 1));
    o->epoch_lr = o->lr;
    return o->lr;
  }
  o->lr = o->epoch_lr * warmup_factor(o);
  return o->lr;
}

CLT_API bool clt_optimizer_observe(clt_optimizer *o, double loss) {
  const clt_optimizer_options *p = &o->opts;
  if (p->schedule != CLT_SCHEDULE_PLATEAU || isnan(loss)) return false;
  if (loss < o->plateau_best - p->min_delta) {
    o->plateau_best = loss;
    o->plateau_wait = 0;
    return false;
  }
  if (++o->plateau_wait < p->patience) return false;
  o->plateau_wait = 0;
  if (p->lr * o->plateau_scale <= p->min_lr) return false;
  o->plateau_scale *= p->gamma;
  return true;
}

void clt_optimizer_set_steps_per_epoch(clt_optimizer *o, int64_t steps) {
  o->steps_per_epoch = steps > 0 ? steps : 0;
}

CLT_API float clt_optimizer_lr(const clt_optimizer *o) { return o->lr; }

CLT_API float clt_optimizer_momentum(const clt_optimizer *o) {
  return o->momentum;
}

/* Lets the host run at most CLT_STEPS_IN_FLIGHT steps ahead of the device:
 * waits for the end of the step that many steps back (the device still has
 * the steps since then queued, so it never idles). Without a bound a loop
 * that reads nothing back queues thousands of commands, and POCL's
 * scheduling cost grows with the queue: measured 7x slower steps after
 * 2000 unsynchronised MLP steps. */
static clt_status throttle(clt_optimizer *o) {
  clt_context *ctx = o->g->ctx;
  cl_event done = NULL;
  cl_int rc = clEnqueueMarkerWithWaitList(ctx->queue, 0, NULL, &done);
  if (rc != CL_SUCCESS) return clt_ctx_cl_fail(ctx, rc, "optimizer marker");
  int slot = (int)(o->step % CLT_STEPS_IN_FLIGHT);
  cl_event old = o->in_flight[slot];
  o->in_flight[slot] = done;
  if (!old) return CLT_OK;
  rc = clWaitForEvents(1, &old);
  clReleaseEvent(old);
  if (rc != CL_SUCCESS) return clt_ctx_cl_fail(ctx, rc, "optimizer wait");
  return CLT_OK;
}

static clt_status enqueue_update(clt_optimizer *o) {
  clt_context *ctx = o->g->ctx;
  const clt_optimizer_options *p = &o->opts;
  if (p->clip_norm > 0.0f) {
    CLT_TRY(clt_tensor_fill(o->norm_sq, 0.0));
    CLT_TRY(clt_sumsq_into(ctx, o->norm_sq, 0, &o->grads, o->grads.numel));
  }
  if (p->kind == CLT_OPT_SGD) {
    clt_sgd_params hp = {.lr = o->lr,
                         .momentum = o->momentum,
                         .dampening = p->dampening,
                         .weight_decay = p->weight_decay,
                         .max_norm = p->clip_norm,
                         .nesterov = p->nesterov,
                         .first = o->step == 1};
    return clt_sgd_step(ctx, &o->params, &o->grads, o->v, o->norm_sq, &hp);
  }
  if (p->kind == CLT_OPT_RMSPROP) {
    clt_rmsprop_params hp = {.lr = o->lr,
                             .alpha = p->alpha,
                             .eps = p->eps,
                             .weight_decay = p->weight_decay,
                             .momentum = o->momentum,
                             .max_norm = p->clip_norm,
                             .centered = p->centered};
    return clt_rmsprop_step(ctx, &o->params, &o->grads, o->v, o->m, o->avg,
                            o->norm_sq, &hp);
  }
  clt_adam_params hp = {.lr = o->lr,
                        .beta1 = o->momentum,
                        .beta2 = p->beta2,
                        .eps = p->eps,
                        .weight_decay = p->weight_decay,
                        .max_norm = p->clip_norm,
                        .decoupled = p->kind == CLT_OPT_ADAMW,
                        .step = o->step};
  return clt_adam_step(ctx, &o->params, &o->grads, o->m, o->v, o->norm_sq,
                       &hp);
}

CLT_API void clt_optimizer_set_loss_scaler(clt_optimizer *o,
                                           clt_loss_scaler *s) {
  o->scaler = s;
  clt_graph_set_loss_scale(o->g, s ? clt_loss_scaler_scale(s) : 1.0f);
}

static clt_status step(clt_optimizer *o);

clt_status clt_optimizer_check_layout(const clt_optimizer *o,
                                      const char *what) {
  if (o->trainable_version == o->g->trainable_version) return CLT_OK;
  return clt_ctx_fail(o->g->ctx, CLT_ERR_INVALID_ARGUMENT,
                      "%s: which layers are trained changed after the "
                      "optimizer was made (clt_graph_set_trainable): make "
                      "the optimizer again",
                      what);
}

CLT_API clt_status clt_optimizer_step(clt_optimizer *o) {
  CLT_TRY(clt_graph_need_backward(o->g, "optimizer step"));
  CLT_TRY(clt_optimizer_check_layout(o, "optimizer step"));
  clt_profile_scope(o->g->ctx, "optimizer", NULL);
  clt_status st = step(o);
  clt_profile_scope(o->g->ctx, NULL, NULL);
  return st;
}

/* clt_optimizer_step: the loss scaler's check, then the update. */
static clt_status step(clt_optimizer *o) {
  if (o->n == 0) { /* every layer frozen: nothing to update */
    o->step++;
    o->epoch_step++;
    return CLT_OK;
  }
  if (o->scaler) {
    /* GradScaler's step and update: unscale, skip on overflow. */
    bool skip = false;
    CLT_TRY(clt_loss_scaler_unscale(o->scaler, &o->grads, &skip));
    clt_graph_set_loss_scale(o->g, clt_loss_scaler_scale(o->scaler));
    if (skip) {
      o->epoch_step++;
      return CLT_OK;
    }
  }
  o->step++;
  if (o->opts.warmup_epochs > 0 && o->steps_per_epoch > 0)
    o->lr = o->epoch_lr * warmup_factor(o);
  if (o->opts.schedule == CLT_SCHEDULE_ONECYCLE && o->steps_per_epoch > 0)
    onecycle_at(o, (double)(o->epoch * o->steps_per_epoch + o->epoch_step));
  o->epoch_step++;
  clt_status st = enqueue_update(o);
  clt_graph_trained_params_written(o->g);
  CLT_TRY(st);
  return throttle(o);
}
