/* Checkpoints in safetensors: parameters under PyTorch's names and
 * layouts, the training state under "__" names no layer can have. Loading
 * checks the whole file against the graph before it changes anything, so
 * a bad file leaves the model as it was. */
#include "io/checkpoint.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/words.h"
#include "io/class_names.h"
#include "io/safetensors.h"
#include "optim/optimizer.h"
#include "runtime/runtime.h"
#include "tensor/tensor.h"

#define NAME_LEN (CLT_NAME_MAX + 32)
#define STATE_LEN 6
enum { ST_FORMAT, ST_EPOCH, ST_STEP, ST_SEED, ST_DATA_SEED, ST_OPT_KIND };
/* epoch, train loss and accuracy, test loss and accuracy, validation loss
 * and accuracy, then mse's mean absolute errors (train, test, validation;
 * NaN for a classifier); files of cltrain 0.1 before validation hold the
 * first 5, those before the mean absolute errors the first 7. */
#define HISTORY_COLS 10
#define HISTORY_COLS_7 7 /* before the mean absolute errors (2026-12-05) */
#define HISTORY_COLS_OLD 5

static const char *const kind_names[] = {"sgd", "adam", "adamw", "rmsprop"};
#define N_KINDS ((int)(sizeof kind_names / sizeof kind_names[0]))
static const char *const schedule_names[] = {"constant", "step", "cosine",
                                             "plateau", "onecycle"};
#define N_SCHEDULES ((int)(sizeof schedule_names / sizeof schedule_names[0]))

static const char *kind_name(int kind) {
  return kind >= 0 && kind < N_KINDS ? kind_names[kind] : "none";
}

/* Batch norm's batch counter is an integer in PyTorch (I64, shape []);
 * the graph keeps it as one float. */
static bool is_counter(const clt_param *p) {
  return strcmp(p->suffix, "num_batches_tracked") == 0;
}

static clt_status need_compiled(clt_graph *g, const char *what) {
  if (!g->compiled || !g->initialised || !g->params)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "%s: compile the graph first (clt_graph_compile)",
                        what);
  return CLT_OK;
}

static int64_t trainable_count(const clt_graph *g) {
  int64_t n = 0;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_params; k++)
      if (g->nodes[i].params[k].trainable) n += g->nodes[i].params[k].numel;
  return n;
}

static clt_status fail_err(clt_context *ctx, const clt_err *err) {
  return clt_ctx_fail(ctx, err->status ? err->status : CLT_ERR_INTERNAL, "%s",
                      err->msg);
}

/* The graph's whole parameter buffer on the host; the caller frees it. */
static clt_status download_params(clt_graph *g, float **out) {
  size_t n = (size_t)(g->param_count > 0 ? g->param_count : 1);
  *out = malloc(n * sizeof(float));
  if (!*out) return clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "checkpoint");
  clt_status st = clt_tensor_download(g->params, *out);
  if (st != CLT_OK) {
    free(*out);
    *out = NULL;
  }
  return st;
}

/* ---- writing ------------------------------------------------------------ */

static clt_status add_params(clt_st_writer *w, const clt_graph *g,
                             const float *host, clt_err *err) {
  for (int i = 0; i < g->n_nodes; i++) {
    const clt_graph_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_params; k++) {
      const clt_param *p = &n->params[k];
      char name[NAME_LEN];
      clt_param_name(n, p, name, sizeof name);
      if (is_counter(p)) {
        int64_t count = (int64_t)host[p->offset];
        CLT_TRY(clt_st_writer_add(w, name, CLT_ST_I64, 0, NULL, &count, err));
      } else {
        CLT_TRY(clt_st_writer_add(w, name, CLT_ST_F32, p->ndim, p->shape,
                                  host + p->offset, err));
      }
    }
  }
  return CLT_OK;
}

/* Adds the first n values of a device state tensor as F32 [n]. */
static clt_status add_device_vector(clt_st_writer *w, clt_graph *g,
                                    const char *name, const clt_tensor *t,
                                    int64_t n, clt_err *err) {
  float *buf = malloc((size_t)n * sizeof(float));
  if (!buf)
    return clt_err_set(err, CLT_ERR_HOST_MEMORY, "checkpoint: %s", name);
  clt_tensor slice = clt_tensor_slice_1d(t, 0, n);
  clt_status st = clt_tensor_download(&slice, buf);
  if (st != CLT_OK)
    clt_err_set(err, st, "%s", clt_context_last_error(g->ctx));
  else
    st = clt_st_writer_add(w, name, CLT_ST_F32, 1, &n, buf, err);
  free(buf);
  return st;
}

static clt_status add_train_state(clt_st_writer *w, clt_graph *g,
                                  const clt_optimizer *opt,
                                  const clt_checkpoint_train *t, clt_err *err) {
  int64_t n = trainable_count(g);
  clt_optimizer_saved os;
  clt_optimizer_saved_state(opt, &os);
  if (os.m && n > 0)
    CLT_TRY(add_device_vector(w, g, "__optim__.m", os.m, n, err));
  if (os.v && n > 0)
    CLT_TRY(add_device_vector(w, g, "__optim__.v", os.v, n, err));
  if (os.avg && n > 0)
    CLT_TRY(add_device_vector(w, g, "__optim__.grad_avg", os.avg, n, err));
  for (int i = 0; i < g->n_nodes; i++) {
    uint64_t *counter = clt_node_saved_counter(&g->nodes[i]);
    if (!counter) continue;
    char name[NAME_LEN];
    snprintf(name, sizeof name, "__rng__.%s", g->nodes[i].name);
    int64_t value = (int64_t)*counter;
    CLT_TRY(clt_st_writer_add(w, name, CLT_ST_I64, 0, NULL, &value, err));
  }
  if (os.scaler) {
    /* Mixed precision's loss scale, so that --resume goes on from it. */
    clt_loss_scaler_state ls;
    clt_loss_scaler_get_state(os.scaler, &ls);
    double v[4] = {ls.scale, (double)ls.clean, (double)ls.steps,
                   (double)ls.skipped};
    int64_t four = 4;
    CLT_TRY(clt_st_writer_add(w, "__scaler__.state", CLT_ST_F64, 1, &four, v,
                              err));
  }
  int64_t state[STATE_LEN] = {CLT_CHECKPOINT_FORMAT, t->epoch, os.step,
                              (int64_t)g->seed, (int64_t)t->data_seed,
                              (int64_t)os.opts->kind};
  int64_t len = STATE_LEN;
  CLT_TRY(clt_st_writer_add(w, "__train__.state", CLT_ST_I64, 1, &len, state,
                            err));
  if (!t->history || t->epoch < 1) return CLT_OK;
  double *h = malloc((size_t)t->epoch * HISTORY_COLS * sizeof *h);
  if (!h) return clt_err_set(err, CLT_ERR_HOST_MEMORY, "checkpoint history");
  for (int e = 0; e < t->epoch; e++) {
    const clt_epoch_stats *s = &t->history[e];
    double row[HISTORY_COLS] = {e + 1,         s->train_loss, s->train_acc,
                                s->test_loss,  s->test_acc,   s->val_loss,
                                s->val_acc,    s->train_mae,  s->test_mae,
                                s->val_mae};
    memcpy(h + (size_t)e * HISTORY_COLS, row, sizeof row);
  }
  int64_t shape[2] = {t->epoch, HISTORY_COLS};
  clt_status st =
      clt_st_writer_add(w, "__train__.history", CLT_ST_F64, 2, shape, h, err);
  free(h);
  return st;
}

static clt_status add_metadata(clt_st_writer *w, const clt_graph *g,
                               const clt_optimizer *opt,
                               const clt_checkpoint_train *t, clt_err *err) {
  char buf[1024];
  CLT_TRY(clt_st_writer_set_metadata(w, "format", "pt", err));
  CLT_TRY(clt_st_writer_set_metadata(w, "cltrain_version", CLT_VERSION_STRING,
                                     err));
  if (g->source_hash[0])
    CLT_TRY(clt_st_writer_set_metadata(w, "model_sha256", g->source_hash, err));
  snprintf(buf, sizeof buf, "%d", t->epoch);
  CLT_TRY(clt_st_writer_set_metadata(w, "epoch", buf, err));
  snprintf(buf, sizeof buf, "%" PRIu64, g->seed);
  CLT_TRY(clt_st_writer_set_metadata(w, "seed", buf, err));
  if (t->class_names && t->n_class_names > 0) {
    char *json = NULL;
    CLT_TRY(clt_class_names_encode((const char *const *)t->class_names,
                                   t->n_class_names, &json, err));
    clt_status st =
        clt_st_writer_set_metadata(w, CLT_CLASS_NAMES_KEY, json, err);
    free(json);
    CLT_TRY(st);
  }
  if (t->input_values)
    CLT_TRY(clt_st_writer_set_metadata(w, "input_values", t->input_values,
                                       err));
  if (t->label_column && t->label_column[0])
    CLT_TRY(clt_st_writer_set_metadata(w, "label_column", t->label_column,
                                       err));
  int n_frozen = clt_graph_frozen_layers(g, NULL, 0);
  if (n_frozen > 0) {
    const char **frozen = malloc((size_t)n_frozen * sizeof *frozen);
    if (!frozen)
      return clt_err_set(err, CLT_ERR_HOST_MEMORY, "checkpoint metadata");
    clt_graph_frozen_layers(g, frozen, n_frozen);
    char *json = NULL;
    clt_status st = clt_class_names_encode(frozen, n_frozen, &json, err);
    free(frozen);
    if (st == CLT_OK)
      st = clt_st_writer_set_metadata(w, CLT_FROZEN_LAYERS_KEY, json, err);
    free(json);
    CLT_TRY(st);
  }
  if (!opt) return CLT_OK;
  clt_optimizer_saved os;
  clt_optimizer_saved_state(opt, &os);
  snprintf(buf, sizeof buf, "%" PRId64, os.step);
  CLT_TRY(clt_st_writer_set_metadata(w, "step", buf, err));
  CLT_TRY(clt_st_writer_set_metadata(w, "optimizer", kind_name(os.opts->kind),
                                     err));
  const clt_optimizer_options *o = os.opts;
  snprintf(buf, sizeof buf,
           "lr=%.7g momentum=%.7g dampening=%.7g nesterov=%d "
           "weight_decay=%.7g beta1=%.7g beta2=%.7g eps=%.7g clip_norm=%.7g "
           "schedule=%s step_epochs=%d gamma=%.7g total_epochs=%d "
           "min_lr=%.7g patience=%d min_delta=%.7g warmup_epochs=%d "
           "alpha=%.7g centered=%d pct_start=%.7g div_factor=%.7g "
           "final_div_factor=%.7g cycle_momentum=%d base_momentum=%.7g "
           "max_momentum=%.7g",
           (double)o->lr, (double)o->momentum, (double)o->dampening,
           o->nesterov ? 1 : 0, (double)o->weight_decay, (double)o->beta1,
           (double)o->beta2, (double)o->eps, (double)o->clip_norm,
           (unsigned)o->schedule < N_SCHEDULES ? schedule_names[o->schedule]
                                               : "?",
           o->step_epochs, (double)o->gamma, o->total_epochs,
           (double)o->min_lr, o->patience, (double)o->min_delta,
           o->warmup_epochs, (double)o->alpha, o->centered ? 1 : 0,
           (double)o->pct_start, (double)o->div_factor,
           (double)o->final_div_factor, o->cycle_momentum ? 1 : 0,
           (double)o->base_momentum, (double)o->max_momentum);
  return clt_st_writer_set_metadata(w, "optimizer_options", buf, err);
}

clt_status clt_checkpoint_write(clt_graph *g, const clt_optimizer *opt,
                                const clt_checkpoint_train *t,
                                const char *path) {
  CLT_TRY(need_compiled(g, "checkpoint save"));
  clt_optimizer_saved os = {0};
  if (opt) clt_optimizer_saved_state(opt, &os);
  if (!path || !*path || t->epoch < 0 || (opt && os.g != g))
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "checkpoint save: needs a path, epoch >= 0 and the "
                        "graph's own optimizer");
  if (opt) CLT_TRY(clt_optimizer_check_layout(opt, "checkpoint save"));
  float *host = NULL;
  CLT_TRY(download_params(g, &host));
  clt_err err = {0};
  clt_st_writer *w = NULL;
  clt_status st = clt_st_writer_create(&w, &err);
  if (st == CLT_OK) st = add_params(w, g, host, &err);
  if (st == CLT_OK && opt) st = add_train_state(w, g, opt, t, &err);
  if (st == CLT_OK) st = add_metadata(w, g, opt, t, &err);
  if (st == CLT_OK) st = clt_st_writer_save(w, path, &err);
  clt_st_writer_destroy(w);
  free(host);
  return st == CLT_OK ? CLT_OK : fail_err(g->ctx, &err);
}

CLT_API clt_status clt_checkpoint_save(clt_graph *g, const clt_optimizer *opt,
                                       int epoch,
                                       const clt_epoch_stats *history,
                                       const char *path) {
  clt_checkpoint_train t = {epoch, g->seed, history, NULL, 0, NULL, NULL};
  return clt_checkpoint_write(g, opt, &t, path);
}

/* ---- reading ------------------------------------------------------------- */

static clt_status open_checkpoint(clt_context *ctx, const char *path,
                                  clt_st_file *f) {
  clt_err err = {0};
  if (!path || !*path)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT, "checkpoint: no path");
  if (clt_st_read_file(path, f, &err) != CLT_OK) return fail_err(ctx, &err);
  return CLT_OK;
}

static clt_status expect(clt_context *ctx, const clt_st_file *f,
                         const char *name, clt_st_dtype dtype, int ndim,
                         const int64_t *shape, const clt_st_tensor **out) {
  clt_err err = {0};
  if (clt_st_expect(f, name, dtype, ndim, shape, out, &err) != CLT_OK)
    return fail_err(ctx, &err);
  return CLT_OK;
}

static int64_t read_i64(const clt_st_file *f, const clt_st_tensor *t,
                        int64_t index) {
  int64_t v;
  memcpy(&v, (const uint8_t *)clt_st_tensor_data(f, t) + index * 8, 8);
  return v;
}

/* A counter saved as I64 [] (PyTorch) or I64 [1]. */
static clt_status read_counter(clt_context *ctx, const clt_st_file *f,
                               const char *name, int64_t *value) {
  const clt_st_tensor *t = clt_st_find(f, name);
  if (!(t && t->dtype == CLT_ST_I64 &&
        (t->ndim == 0 || (t->ndim == 1 && t->shape[0] == 1))))
    CLT_TRY(expect(ctx, f, name, CLT_ST_I64, 0, NULL, &t));
  *value = read_i64(f, t, 0);
  if (*value < 0)
    return clt_ctx_fail(ctx, CLT_ERR_FORMAT,
                        "%s: tensor '%s' holds %" PRId64
                        ", a count cannot be negative",
                        f->source, name, *value);
  return CLT_OK;
}

static bool graph_has_param(const clt_graph *g, const char *name) {
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_params; k++) {
      char own[NAME_LEN];
      clt_param_name(&g->nodes[i], &g->nodes[i].params[k], own, sizeof own);
      if (strcmp(own, name) == 0) return true;
    }
  return false;
}

/* Checks every parameter of g against f and copies the values into host
 * (the graph's buffer layout); a parameter-named tensor of f that g lacks
 * is an error, as in PyTorch's strict load_state_dict. */
static clt_status read_params(clt_graph *g, const clt_st_file *f,
                              float *host) {
  for (int i = 0; i < g->n_nodes; i++) {
    clt_graph_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_params; k++) {
      const clt_param *p = &n->params[k];
      char name[NAME_LEN];
      clt_param_name(n, p, name, sizeof name);
      if (is_counter(p)) {
        int64_t count;
        CLT_TRY(read_counter(g->ctx, f, name, &count));
        host[p->offset] = (float)count;
        continue;
      }
      const clt_st_tensor *t = NULL;
      CLT_TRY(expect(g->ctx, f, name, CLT_ST_F32, p->ndim, p->shape, &t));
      memcpy(host + p->offset, clt_st_tensor_data(f, t),
             (size_t)p->numel * sizeof(float));
    }
  }
  for (size_t i = 0; i < f->count; i++) {
    const char *name = f->tensors[i].name;
    if (strncmp(name, "__", 2) == 0 || graph_has_param(g, name)) continue;
    return clt_ctx_fail(g->ctx, CLT_ERR_FORMAT,
                        "%s: tensor '%s' is not a parameter of the model "
                        "(a checkpoint of a different model?)",
                        f->source, name);
  }
  return CLT_OK;
}

static void fill_info(const clt_st_file *f, const clt_st_tensor *state,
                      clt_checkpoint_info *info) {
  memset(info, 0, sizeof *info);
  const char *v = clt_st_metadata(f, "model_sha256");
  if (v) snprintf(info->model_sha256, sizeof info->model_sha256, "%s", v);
  v = clt_st_metadata(f, "cltrain_version");
  if (v) snprintf(info->version, sizeof info->version, "%s", v);
  v = clt_st_metadata(f, "input_values");
  if (v && (!strcmp(v, "bytes") || !strcmp(v, "floats")))
    snprintf(info->input_values, sizeof info->input_values, "%s", v);
  v = clt_st_metadata(f, "label_column");
  if (v && strlen(v) < sizeof info->label_column)
    snprintf(info->label_column, sizeof info->label_column, "%s", v);
  if (state) {
    info->epoch = (int)read_i64(f, state, ST_EPOCH);
    info->step = read_i64(f, state, ST_STEP);
    info->seed = (uint64_t)read_i64(f, state, ST_SEED);
    info->data_seed = (uint64_t)read_i64(f, state, ST_DATA_SEED);
    int64_t kind = read_i64(f, state, ST_OPT_KIND);
    if (kind >= 0 && kind < N_KINDS)
      snprintf(info->optimizer, sizeof info->optimizer, "%s", kind_names[kind]);
    return;
  }
  /* A weights-only file: what the metadata says. */
  if ((v = clt_st_metadata(f, "epoch"))) info->epoch = atoi(v);
  if ((v = clt_st_metadata(f, "seed")))
    info->seed = info->data_seed = strtoull(v, NULL, 10);
}

/* The training state tensor, checked; *out NULL when f has none. */
static clt_status find_state(clt_context *ctx, const clt_st_file *f,
                             const clt_st_tensor **out) {
  *out = NULL;
  if (!clt_st_find(f, "__train__.state")) return CLT_OK;
  int64_t len = STATE_LEN;
  const clt_st_tensor *t = NULL;
  CLT_TRY(expect(ctx, f, "__train__.state", CLT_ST_I64, 1, &len, &t));
  int64_t format = read_i64(f, t, ST_FORMAT);
  if (format != CLT_CHECKPOINT_FORMAT)
    return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED,
                        "%s: training state of format %" PRId64
                        "; this cltrain reads format %d",
                        f->source, format, CLT_CHECKPOINT_FORMAT);
  int64_t epoch = read_i64(f, t, ST_EPOCH), step = read_i64(f, t, ST_STEP);
  int64_t kind = read_i64(f, t, ST_OPT_KIND);
  if (epoch < 0 || epoch > INT32_MAX || step < 0 || kind < -1 ||
      kind >= N_KINDS)
    return clt_ctx_fail(ctx, CLT_ERR_FORMAT,
                        "%s: training state [epoch %" PRId64 ", step %" PRId64
                        ", optimizer %" PRId64 "] is out of range",
                        f->source, epoch, step, kind);
  *out = t;
  return CLT_OK;
}

CLT_API clt_status clt_checkpoint_read_info(clt_context *ctx, const char *path,
                                            clt_checkpoint_info *info) {
  clt_st_file f;
  CLT_TRY(open_checkpoint(ctx, path, &f));
  const clt_st_tensor *state = NULL;
  clt_status st = find_state(ctx, &f, &state);
  if (st == CLT_OK) fill_info(&f, state, info);
  clt_st_file_free(&f);
  return st;
}

CLT_API clt_status clt_checkpoint_load_weights(clt_graph *g, const char *path) {
  CLT_TRY(need_compiled(g, "checkpoint load"));
  clt_st_file f;
  CLT_TRY(open_checkpoint(g->ctx, path, &f));
  float *host = NULL;
  clt_status st = download_params(g, &host);
  if (st == CLT_OK) st = read_params(g, &f, host);
  if (st == CLT_OK) st = clt_tensor_upload(g->params, host);
  clt_graph_params_written(g); /* a failed upload may have written some */
  free(host);
  clt_st_file_free(&f);
  return st;
}

/* ---- resuming ------------------------------------------------------------ */

/* What a resume will write, gathered and checked before anything is. */
typedef struct resume_plan {
  float *params;
  const clt_st_tensor *m, *v, *avg, *state, *history;
  const clt_st_tensor *scaler; /* a mixed-precision run's loss scaler */
} resume_plan;

static clt_status check_model_hash(clt_graph *g, const clt_st_file *f) {
  const char *saved = clt_st_metadata(f, "model_sha256");
  if (!saved || !g->source_hash[0] || strcmp(saved, g->source_hash) == 0)
    return CLT_OK;
  return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                      "%s: saved from a model file with SHA-256 %s, but this "
                      "model file has SHA-256 %s: resuming needs the same "
                      "model file (to start from these weights with a "
                      "changed model, load them with --init / "
                      "clt_checkpoint_load_weights)",
                      f->source, saved, g->source_hash);
}

static clt_status check_moment(clt_graph *g, const clt_st_file *f,
                               const char *name, const clt_tensor *have,
                               int64_t n, const clt_st_tensor **out) {
  bool in_file = clt_st_find(f, name) != NULL;
  *out = NULL;
  if (n == 0) return CLT_OK;
  if (have && !in_file)
    return clt_ctx_fail(g->ctx, CLT_ERR_FORMAT,
                        "%s: missing tensor '%s': the optimizer here keeps "
                        "that state, the one saved did not (momentum or "
                        "centered changed?)",
                        f->source, name);
  if (!have && in_file)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "%s: holds optimizer state '%s' that the optimizer "
                        "here does not keep (momentum or centered changed?)",
                        f->source, name);
  if (!have) return CLT_OK;
  return expect(g->ctx, f, name, CLT_ST_F32, 1, &n, out);
}

/* "a, b" (or "no layer"): a NULL-terminated list of names for a
 * message. */
static void names_for_message(const char *const *names, char *buf,
                              size_t len) {
  buf[0] = '\0';
  if (names[0]) clt_join_words(names, ", ", buf, len);
  else snprintf(buf, len, "no layer");
}

/* The layers frozen when the file was saved are the ones frozen now: the
 * optimizer's state covers the trainable parameters only. */
static clt_status check_frozen(clt_graph *g, const clt_st_file *f) {
  char **saved = NULL;
  int n_saved = 0;
  const char *json = clt_st_metadata(f, CLT_FROZEN_LAYERS_KEY);
  clt_err err = {0};
  if (json && clt_names_decode(json, f->source, CLT_FROZEN_LAYERS_KEY, &saved,
                               &n_saved, &err) != CLT_OK)
    return fail_err(g->ctx, &err);
  /* Both lists NULL-terminated, for the message. */
  int n_now = clt_graph_frozen_layers(g, NULL, 0);
  const char **now = calloc((size_t)n_now + 1, sizeof *now);
  const char **then = calloc((size_t)n_saved + 1, sizeof *then);
  if (!now || !then) {
    free(now);
    free(then);
    clt_class_names_free(saved, n_saved);
    return clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "resume");
  }
  clt_graph_frozen_layers(g, now, n_now);
  for (int i = 0; i < n_saved; i++) then[i] = saved[i];
  bool same = n_now == n_saved;
  for (int i = 0; same && i < n_now; i++)
    same = strcmp(now[i], then[i]) == 0;
  clt_status st = CLT_OK;
  if (!same) {
    char was[512], is[512];
    names_for_message(then, was, sizeof was);
    names_for_message(now, is, sizeof is);
    st = clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                      "%s: trained with %s frozen, resuming with %s frozen: "
                      "freeze the same layers (--freeze, "
                      "clt_graph_set_trainable)",
                      f->source, was, is);
  }
  free(now);
  free(then);
  clt_class_names_free(saved, n_saved);
  return st;
}

static clt_status plan_resume(clt_graph *g, clt_optimizer *opt,
                              const clt_st_file *f, resume_plan *p) {
  CLT_TRY(check_model_hash(g, f));
  CLT_TRY(find_state(g->ctx, f, &p->state));
  if (!p->state)
    return clt_ctx_fail(g->ctx, CLT_ERR_FORMAT,
                        "%s: holds weights only, no training state "
                        "('__train__.state'), so training cannot resume from "
                        "it; load it with --init to start a new run from "
                        "these weights",
                        f->source);
  clt_optimizer_saved os;
  clt_optimizer_saved_state(opt, &os);
  int64_t kind = read_i64(f, p->state, ST_OPT_KIND);
  if (kind != (int64_t)os.opts->kind)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "%s: trained with the %s optimizer, resuming with %s: "
                        "use the same optimizer",
                        f->source, kind_name((int)kind),
                        kind_name(os.opts->kind));
  CLT_TRY(check_frozen(g, f));
  CLT_TRY(clt_optimizer_check_layout(opt, "checkpoint resume"));
  CLT_TRY(download_params(g, &p->params));
  CLT_TRY(read_params(g, f, p->params));
  int64_t n = trainable_count(g);
  CLT_TRY(check_moment(g, f, "__optim__.m", os.m, n, &p->m));
  CLT_TRY(check_moment(g, f, "__optim__.v", os.v, n, &p->v));
  CLT_TRY(check_moment(g, f, "__optim__.grad_avg", os.avg, n, &p->avg));
  for (int i = 0; i < g->n_nodes; i++) {
    if (!clt_node_saved_counter(&g->nodes[i])) continue;
    char name[NAME_LEN];
    int64_t count;
    snprintf(name, sizeof name, "__rng__.%s", g->nodes[i].name);
    CLT_TRY(read_counter(g->ctx, f, name, &count));
  }
  if (clt_st_find(f, "__scaler__.state")) {
    int64_t four = 4;
    CLT_TRY(expect(g->ctx, f, "__scaler__.state", CLT_ST_F64, 1, &four,
                   &p->scaler));
  }
  const clt_st_tensor *h = clt_st_find(f, "__train__.history");
  if (h) {
    int64_t cols = h->ndim == 2 ? h->shape[1] : 0;
    int64_t shape[2] = {h->ndim == 2 ? h->shape[0] : 0,
                        cols == HISTORY_COLS_OLD || cols == HISTORY_COLS_7
                            ? cols
                            : HISTORY_COLS};
    CLT_TRY(expect(g->ctx, f, "__train__.history", CLT_ST_F64, 2, shape,
                   &p->history));
  }
  return CLT_OK;
}

static clt_status upload_moment(clt_graph *g, const clt_st_file *f,
                                const clt_st_tensor *t, clt_tensor *dst) {
  if (!t) return CLT_OK;
  clt_tensor slice = clt_tensor_slice_1d(dst, 0, t->shape[0]);
  if (((uintptr_t)clt_st_tensor_data(f, t) & 3) == 0)
    return clt_tensor_upload(&slice, clt_st_tensor_data(f, t));
  float *copy = malloc(clt_st_tensor_nbytes(t));
  if (!copy) return clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "resume");
  memcpy(copy, clt_st_tensor_data(f, t), clt_st_tensor_nbytes(t));
  clt_status st = clt_tensor_upload(&slice, copy);
  free(copy);
  return st;
}

static void read_history(const clt_st_file *f, const clt_st_tensor *t,
                         clt_epoch_stats *history, int cap) {
  if (!t || !history) return;
  const uint8_t *data = clt_st_tensor_data(f, t);
  int64_t cols = t->shape[1];
  for (int64_t e = 0; e < t->shape[0] && e < cap; e++) {
    double row[HISTORY_COLS] = {0, 0, 0, 0, 0, NAN, NAN, NAN, NAN, NAN};
    memcpy(row, data + (size_t)(e * cols) * sizeof(double),
           (size_t)cols * sizeof(double));
    clt_epoch_stats *s = &history[e];
    memset(s, 0, sizeof *s);
    s->epoch = (int)row[0];
    s->train_loss = row[1];
    s->train_acc = row[2];
    s->test_loss = row[3];
    s->test_acc = row[4];
    s->val_loss = row[5];
    s->val_acc = row[6];
    s->train_mae = row[7];
    s->test_mae = row[8];
    s->val_mae = row[9];
  }
}

static clt_status apply_resume(clt_graph *g, clt_optimizer *opt,
                               const clt_st_file *f, const resume_plan *p) {
  clt_status st = clt_tensor_upload(g->params, p->params);
  clt_graph_params_written(g);
  CLT_TRY(st);
  clt_optimizer_saved os;
  clt_optimizer_saved_state(opt, &os);
  if (p->m) CLT_TRY(upload_moment(g, f, p->m, os.m));
  if (p->v) CLT_TRY(upload_moment(g, f, p->v, os.v));
  if (p->avg) CLT_TRY(upload_moment(g, f, p->avg, os.avg));
  for (int i = 0; i < g->n_nodes; i++) {
    uint64_t *counter = clt_node_saved_counter(&g->nodes[i]);
    if (!counter) continue;
    char name[NAME_LEN];
    int64_t count = 0;
    snprintf(name, sizeof name, "__rng__.%s", g->nodes[i].name);
    CLT_TRY(read_counter(g->ctx, f, name, &count));
    *counter = (uint64_t)count;
  }
  /* A mixed run resumed in fp32 has no scaler to restore; an fp32 run
   * resumed in mixed precision starts from the scaler's initial scale. */
  if (p->scaler && os.scaler) {
    double v[4];
    memcpy(v, clt_st_tensor_data(f, p->scaler), sizeof v);
    if (!(v[1] >= 0 && v[1] < 9e18 && v[2] >= 0 && v[2] < 9e18 &&
          v[3] >= 0 && v[3] < 9e18))
      return clt_ctx_fail(g->ctx, CLT_ERR_FORMAT,
                          "%s: '__scaler__.state' holds counts out of range",
                          f->source);
    clt_loss_scaler_state ls = {v[0], (int64_t)v[1], (int64_t)v[2],
                                (int64_t)v[3]};
    CLT_TRY(clt_loss_scaler_set_state(os.scaler, &ls));
    clt_graph_set_loss_scale(g, clt_loss_scaler_scale(os.scaler));
  }
  clt_optimizer_restore_step(opt, read_i64(f, p->state, ST_STEP));
  g->seed = (uint64_t)read_i64(f, p->state, ST_SEED);
  return CLT_OK;
}

CLT_API clt_status clt_checkpoint_resume(clt_graph *g, clt_optimizer *opt,
                                         const char *path,
                                         clt_checkpoint_info *info,
                                         clt_epoch_stats *history,
                                         int history_cap) {
  CLT_TRY(need_compiled(g, "checkpoint resume"));
  clt_optimizer_saved os = {0};
  if (opt) clt_optimizer_saved_state(opt, &os);
  if (!opt || os.g != g)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "checkpoint resume: needs the graph's optimizer");
  clt_st_file f;
  CLT_TRY(open_checkpoint(g->ctx, path, &f));
  resume_plan plan = {0};
  clt_status st = plan_resume(g, opt, &f, &plan);
  if (st == CLT_OK) st = apply_resume(g, opt, &f, &plan);
  if (st == CLT_OK) {
    read_history(&f, plan.history, history, history_cap);
    if (info) fill_info(&f, plan.state, info);
  }
  free(plan.params);
  clt_st_file_free(&f);
  return st;
}
