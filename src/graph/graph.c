/* Graph building, compiling (buffer planning, initialisation), forward and
 * backward. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "common/words.h"
#include "graph/graph.h"
#include "runtime/plan_store.h"

CLT_API clt_status clt_graph_create(clt_context *ctx, clt_graph **out) {
  *out = NULL;
  clt_graph *g = calloc(1, sizeof *g);
  if (!g) return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "graph");
  g->ctx = ctx;
  g->input_node = g->loss_node = -1;
  g->share_buffers = true;
  g->save_f16_option = -1;
  g->loss_scale = 1.0f;
  g->params_version = 1;
  *out = g;
  return CLT_OK;
}

static void release_buffers(clt_graph *g) {
  for (int i = 0; i < g->n_nodes; i++) {
    clt_graph_node *n = &g->nodes[i];
    clt_tensor_destroy(n->out);
    clt_tensor_destroy(n->grad);
    clt_tensor_destroy(n->out16);
    clt_tensor_destroy(n->out_bwd);
    n->out = n->grad = n->out16 = n->out_bwd = NULL;
    n->out_swapped = false;
  }
  clt_graph_plan_release(g);
  clt_tensor_destroy(g->labels);
  clt_tensor_destroy(g->metrics);
  clt_tensor_destroy(g->input_bytes);
  g->labels = g->metrics = g->input_bytes = NULL;
  g->compiled = false;
}

CLT_API void clt_graph_destroy(clt_graph *g) {
  if (!g) return;
  release_buffers(g);
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].ops->destroy) g->nodes[i].ops->destroy(&g->nodes[i]);
  clt_tensor_destroy(g->params);
  clt_tensor_destroy(g->grads);
  clt_tensor_destroy(g->work_params);
  free(g->plans);
  free(g->requests);
  free(g->arenas);
  free(g->nodes);
  free(g);
}

const char *clt_shape_str(int ndim, const int64_t *shape, char *buf,
                          size_t len) {
  size_t w = (size_t)snprintf(buf, len, "[");
  for (int i = 0; i < ndim && w < len; i++)
    w += (size_t)snprintf(buf + w, len - w, "%s%lld", i ? ", " : "",
                          (long long)shape[i]);
  if (w < len) snprintf(buf + w, len - w, "]");
  return buf;
}

clt_status clt_node_fail(clt_graph *g, const clt_graph_node *n,
                         clt_status status, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return clt_ctx_fail(g->ctx, status, "layer '%s' (%s): %s", n->name,
                      n->ops->type, msg);
}

clt_status clt_graph_err(clt_graph *g, clt_err *err) {
  return clt_ctx_fail(g->ctx, err->status, "%s", err->msg);
}

void clt_param_name(const clt_graph_node *n, const clt_param *p, char *buf,
                    size_t len) {
  snprintf(buf, len, "%s.%s", n->name, p->suffix);
}

/* The product of shape[0..ndim) into *out, false where a dimension is
 * not positive or the product passes what a tensor holds (2^31 elements:
 * the kernels index with int; tensor.c refuses more). */
static bool elements_fit(int ndim, const int64_t *shape, int64_t *out) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 1 || n > INT32_MAX / shape[i]) return false;
    n *= shape[i];
  }
  *out = n;
  return true;
}

clt_param *clt_node_add_param(clt_graph_node *n, const char *suffix, int ndim,
                              const int64_t *shape) {
  if (n->n_params == CLT_MAX_PARAMS) return NULL;
  clt_param *p = &n->params[n->n_params++];
  memset(p, 0, sizeof *p);
  snprintf(p->suffix, sizeof p->suffix, "%s", suffix);
  p->ndim = ndim;
  for (int i = 0; i < ndim; i++) p->shape[i] = shape[i];
  /* -1 where the count passes a tensor's: check_layer_sizes refuses it */
  if (!elements_fit(ndim, shape, &p->numel)) p->numel = -1;
  p->learnable = true;
  p->trainable = !n->frozen;
  return p;
}

uint64_t *clt_node_saved_counter(clt_graph_node *n) {
  return n->ops && n->ops->saved_counter ? n->ops->saved_counter(n) : NULL;
}

double clt_init_bound(int init_kind, int64_t fan_in, int64_t fan_out) {
  if (init_kind == 1) return sqrt(6.0 / (double)fan_in); /* He uniform */
  return sqrt(6.0 / (double)(fan_in + fan_out));         /* Glorot */
}

clt_status clt_layer_get_pair(clt_graph *g, clt_layer_args *a,
                              const char *key, bool required, int64_t min,
                              int64_t def, int64_t *h, int64_t *w) {
  clt_err err = {0};
  int64_t dims[2] = {def, def};
  int nd = 0;
  bool present = false;
  for (int i = 0; i < a->count; i++)
    if (!strcmp(a->args[i].key, key)) present = true;
  if (present || required) {
    if (clt_args_get_dims_min(a, key, true, 2, min, dims, &nd, &err) !=
        CLT_OK)
      return clt_graph_err(g, &err);
    if (nd == 1) dims[1] = dims[0];
  }
  *h = dims[0];
  *w = dims[1];
  return CLT_OK;
}

clt_status clt_layer_check_count(clt_graph *g, clt_graph_node *n,
                                 const char *key, int64_t value) {
  if (value <= INT32_MAX) return CLT_OK;
  return clt_node_fail(g, n, CLT_ERR_SHAPE,
                       "%s=%lld: more than 2^31 - 1, what a tensor holds",
                       key, (long long)value);
}

clt_status clt_layer_check_window(clt_graph *g, clt_graph_node *n,
                                  const clt_window *w) {
  /* each value is at most 2^31 - 1 (clt_args_get_dims), so these sums and
   * products cannot overflow */
  if (w->H + 2 * w->pad_h > INT32_MAX || w->W + 2 * w->pad_w > INT32_MAX)
    return clt_node_fail(g, n, CLT_ERR_SHAPE,
                         "padding=%lldx%lld: the padded input (%lldx%lld) "
                         "is more than 2^31 - 1 values a side",
                         (long long)w->pad_h, (long long)w->pad_w,
                         (long long)(w->H + 2 * w->pad_h),
                         (long long)(w->W + 2 * w->pad_w));
  if (w->KH * w->KW > INT32_MAX)
    return clt_node_fail(g, n, CLT_ERR_SHAPE,
                         "kernel=%lldx%lld: more than 2^31 - 1 taps",
                         (long long)w->KH, (long long)w->KW);
  return CLT_OK;
}

/* padding=N, HxW, same or valid into w (its window and dilation read). */
static clt_status get_padding(clt_graph *g, clt_graph_node *n,
                              clt_layer_args *a, clt_window *w) {
  clt_err err = {0};
  const char *p = "0";
  if (clt_args_get_string(a, "padding", false, "0", &p, &err) != CLT_OK)
    return clt_graph_err(g, &err);
  if (!strcmp(p, "valid")) {
    w->pad_h = w->pad_w = 0;
    return CLT_OK;
  }
  if (!strcmp(p, "same")) {
    int64_t eh = w->dil_h * (w->KH - 1), ew = w->dil_w * (w->KW - 1);
    if (w->stride_h != 1 || w->stride_w != 1 || eh % 2 || ew % 2)
      return clt_node_fail(g, n, CLT_ERR_FORMAT,
                           "padding=same needs stride 1 and an odd kernel "
                           "(as PyTorch); give the padding as a number");
    w->pad_h = eh / 2;
    w->pad_w = ew / 2;
    return CLT_OK;
  }
  return clt_layer_get_pair(g, a, "padding", false, 0, 0, &w->pad_h,
                            &w->pad_w);
}

clt_status clt_layer_get_conv_window(clt_graph *g, clt_graph_node *n,
                                     clt_layer_args *a, clt_window *w) {
  clt_graph_node *in = clt_graph_in(g, n, 0);
  if (in->ndim != 3) {
    char s[96];
    return clt_node_fail(g, n, CLT_ERR_SHAPE,
                         "expects [channels, height, width], but '%s' gives %s",
                         in->name,
                         clt_shape_str(in->ndim, in->shape, s, sizeof s));
  }
  memset(w, 0, sizeof *w);
  CLT_TRY(clt_layer_get_pair(g, a, "kernel", true, 1, 0, &w->KH,
                             &w->KW));
  CLT_TRY(clt_layer_get_pair(g, a, "stride", false, 1, 1, &w->stride_h,
                             &w->stride_w));
  CLT_TRY(clt_layer_get_pair(g, a, "dilation", false, 1, 1, &w->dil_h,
                             &w->dil_w));
  CLT_TRY(get_padding(g, n, a, w));
  w->C = in->shape[0];
  w->H = in->shape[1];
  w->W = in->shape[2];
  CLT_TRY(clt_layer_check_window(g, n, w));
  w->OH = clt_window_out(w->H, w->KH, w->pad_h, w->stride_h, w->dil_h);
  w->OW = clt_window_out(w->W, w->KW, w->pad_w, w->stride_w, w->dil_w);
  if (w->OH < 1 || w->OW < 1) {
    char s1[96];
    return clt_node_fail(g, n, CLT_ERR_SHAPE,
                         "a %lldx%lld kernel (dilation %lld) with padding "
                         "%lld does not fit the input %s from '%s'",
                         (long long)w->KH, (long long)w->KW,
                         (long long)w->dil_h, (long long)w->pad_h,
                         clt_shape_str(in->ndim, in->shape, s1, sizeof s1),
                         in->name);
  }
  return CLT_OK;
}

static int find_node(const clt_graph *g, const char *name) {
  for (int i = 0; i < g->n_nodes; i++)
    if (strcmp(g->nodes[i].name, name) == 0) return i;
  return -1;
}

/* Input nodes named by the line's input=/inputs= option, else the given
 * ones, else the last node added. */
static clt_status resolve_inputs(clt_graph *g, clt_graph_node *n,
                                 clt_layer_args *a,
                                 const clt_node *inputs, int n_inputs) {
  clt_err err = {0};
  char **names = NULL;
  int count = 0;
  const char *key = NULL;
  for (int i = 0; i < a->count; i++)
    if (!strcmp(a->args[i].key, "input") || !strcmp(a->args[i].key, "inputs"))
      key = a->args[i].key;
  if (key) {
    if (clt_args_get_list(a, key, &names, &count, &err) != CLT_OK)
      return clt_graph_err(g, &err);
    if (count > CLT_MAX_INPUTS) {
      clt_args_list_free(names, count);
      return clt_ctx_fail(g->ctx, CLT_ERR_FORMAT,
                          "%s:%d: %s: at most %d inputs", a->source,
                          a->line, a->type, CLT_MAX_INPUTS);
    }
    for (int i = 0; i < count; i++) {
      int idx = find_node(g, names[i]);
      if (idx < 0) {
        clt_status st = clt_ctx_fail(
            g->ctx, CLT_ERR_FORMAT,
            "%s:%d: %s: input '%s' is not the name of an earlier layer",
            a->source, a->line, a->type, names[i]);
        clt_args_list_free(names, count);
        return st;
      }
      n->inputs[i] = idx;
    }
    n->n_inputs = count;
    clt_args_list_free(names, count);
  } else if (n_inputs > 0) {
    if (n_inputs > CLT_MAX_INPUTS)
      return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT, "too many inputs");
    for (int i = 0; i < n_inputs; i++) {
      if (inputs[i] < 0 || inputs[i] >= g->n_nodes)
        return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                            "%s: input node %d does not exist", a->type,
                            inputs[i]);
      n->inputs[i] = inputs[i];
    }
    n->n_inputs = n_inputs;
  } else if (n->ops->min_inputs > 0) {
    if (g->n_nodes == 0)
      return clt_ctx_fail(g->ctx, CLT_ERR_FORMAT,
                          "%s:%d: %s has no input: the first layer must be "
                          "'input shape=...'",
                          a->source, a->line, a->type);
    n->inputs[0] = g->n_nodes - 1;
    n->n_inputs = 1;
  }
  if (n->n_inputs < n->ops->min_inputs || n->n_inputs > n->ops->max_inputs)
    return clt_ctx_fail(g->ctx, CLT_ERR_FORMAT,
                        "%s:%d: %s takes %d to %d inputs, got %d",
                        a->source, a->line, a->type, n->ops->min_inputs,
                        n->ops->max_inputs, n->n_inputs);
  for (int i = 0; i < n->n_inputs; i++)
    if (g->nodes[n->inputs[i]].is_loss)
      return clt_ctx_fail(g->ctx, CLT_ERR_FORMAT,
                          "%s:%d: %s reads the loss '%s'", a->source,
                          a->line, a->type, g->nodes[n->inputs[i]].name);
  return CLT_OK;
}

static clt_status name_node(clt_graph *g, clt_graph_node *n,
                            clt_layer_args *a,
                            const char *name) {
  clt_err err = {0};
  const char *given = NULL;
  if (clt_args_get_string(a, "name", false, name, &given, &err) != CLT_OK)
    return clt_graph_err(g, &err);
  if (given) {
    if (strlen(given) >= CLT_NAME_MAX || strchr(given, '.'))
      return clt_ctx_fail(g->ctx, CLT_ERR_FORMAT,
                          "%s:%d: layer name '%s' must be under %d characters "
                          "without '.'",
                          a->source, a->line, given, CLT_NAME_MAX);
    if (find_node(g, given) >= 0)
      return clt_ctx_fail(g->ctx, CLT_ERR_FORMAT,
                          "%s:%d: a layer named '%s' exists already",
                          a->source, a->line, given);
    snprintf(n->name, sizeof n->name, "%s", given);
    return CLT_OK;
  }
  /* PyTorch-like default names: the type and a counter. */
  for (int k = 1;; k++) {
    snprintf(n->name, sizeof n->name, "%s%d", a->type, k);
    if (find_node(g, n->name) < 0) return CLT_OK;
  }
}

static clt_status grow_nodes(clt_graph *g) {
  if (g->n_nodes < g->cap_nodes) return CLT_OK;
  int cap = g->cap_nodes ? 2 * g->cap_nodes : 16;
  clt_graph_node *nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
  if (!nodes) return clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "graph nodes");
  g->nodes = nodes;
  g->cap_nodes = cap;
  return CLT_OK;
}

static bool known_key(const char *const *keys, const char *key) {
  for (; *keys; keys++)
    if (!strcmp(*keys, key)) return true;
  return false;
}

/* Reports an option the layer does not know (a typo, with a suggestion)
 * before the layer reads its options, so that "untis=3" is named as such
 * rather than as a missing "units". */
static clt_status check_option_names(clt_graph *g, clt_layer_args *a,
                                     const clt_layer_ops *ops) {
  bool unknown = false;
  for (int i = 0; i < a->count; i++)
    if (!known_key(ops->option_keys, a->args[i].key)) unknown = true;
  if (!unknown) return CLT_OK;
  bool *saved = malloc((size_t)a->count * sizeof *saved);
  if (!saved) return clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "options");
  for (int i = 0; i < a->count; i++) {
    saved[i] = a->args[i].used;
    if (known_key(ops->option_keys, a->args[i].key)) a->args[i].used = true;
  }
  clt_err err = {0};
  clt_status st = clt_args_check_all_used(a, ops->option_keys, &err);
  for (int i = 0; i < a->count; i++) a->args[i].used = saved[i];
  free(saved);
  return st == CLT_OK ? CLT_OK : clt_graph_err(g, &err);
}

/* n's output size (n->size, per sample) and its parameters' counts, each
 * within what a tensor holds: a line with absurd sizes (filters or a
 * multiplier of 10^18) is an error naming the layer here, where the
 * products would otherwise overflow into a crash at compile. */
static clt_status check_layer_sizes(clt_graph *g, clt_graph_node *n) {
  char s[96];
  if (!elements_fit(n->ndim, n->shape, &n->size))
    return clt_node_fail(g, n, CLT_ERR_SHAPE,
                         "its output %s holds more than 2^31 values a sample",
                         clt_shape_str(n->ndim, n->shape, s, sizeof s));
  for (int k = 0; k < n->n_params; k++) {
    const clt_param *p = &n->params[k];
    if (p->numel < 0)
      return clt_node_fail(g, n, CLT_ERR_SHAPE,
                           "its parameter '%s' %s holds more than 2^31 "
                           "values",
                           p->suffix,
                           clt_shape_str(p->ndim, p->shape, s, sizeof s));
  }
  return CLT_OK;
}

/* Indexed by clt_activation, then the choices that are no kind. */
static const char *const activation_names[] = {
    "relu", "leaky_relu", "sigmoid", "tanh",  "gelu",    "silu",
    "elu",  "softplus",   "none",    "swish", "softmax", NULL};
#define ACT_NONE 8 /* activation_names' "none" */

/* Adds one layer line; `activation=` on a layer adds an activation node
 * after it (Keras's Dense(128, activation='relu')). */
clt_status clt_graph_add_args(clt_graph *g, clt_layer_args *a, const char *name,
                            const clt_node *inputs, int n_inputs,
                            clt_node *out) {
  if (g->compiled)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "graph: layers cannot be added after compiling");
  const clt_layer_ops *ops = clt_layer_find(a->type);
  if (!ops) {
    char known[1024] = "";
    size_t w = 0;
    for (int i = 0; clt_layer_type_at(i) && w < sizeof known; i++)
      w += (size_t)snprintf(known + w, sizeof known - w, "%s%s",
                            i ? ", " : "", clt_layer_type_at(i));
    return clt_ctx_fail(g->ctx, CLT_ERR_FORMAT,
                        "%s:%d: unknown layer type '%s' (known: %s)",
                        a->source, a->line, a->type, known);
  }
  if (g->loss_node >= 0)
    return clt_ctx_fail(g->ctx, CLT_ERR_FORMAT,
                        "%s:%d: %s after the loss: the loss must be the last "
                        "layer",
                        a->source, a->line, a->type);
  CLT_TRY(grow_nodes(g));
  clt_graph_node *n = &g->nodes[g->n_nodes];
  memset(n, 0, sizeof *n);
  n->ops = ops;
  n->index = g->n_nodes;
  CLT_TRY(name_node(g, n, a, name));
  CLT_TRY(resolve_inputs(g, n, a, inputs, n_inputs));
  int act = ACT_NONE;
  bool has_act = false;
  for (int i = 0; i < a->count; i++)
    if (!strcmp(a->args[i].key, "activation")) has_act = true;
  clt_err err = {0};
  if (has_act && clt_args_get_choice(a, "activation", activation_names,
                                      "none", &act, &err) != CLT_OK)
    return clt_graph_err(g, &err);
  CLT_TRY(check_option_names(g, a, ops));
  clt_status st = ops->configure(g, n, a);
  if (st == CLT_OK &&
      clt_args_check_all_used(a, ops->option_keys, &err) != CLT_OK)
    st = clt_graph_err(g, &err);
  if (st != CLT_OK) {
    if (ops->destroy) ops->destroy(n);
    return st;
  }
  st = check_layer_sizes(g, n);
  if (st != CLT_OK) {
    if (ops->destroy) ops->destroy(n);
    return st;
  }
  g->n_nodes++;
  if (ops->min_inputs == 0) g->input_node = n->index;
  if (n->is_loss) g->loss_node = n->index;
  if (out) *out = n->index;
  if (act == ACT_NONE) return CLT_OK;
  char act_name[CLT_NAME_MAX + 8];
  snprintf(act_name, sizeof act_name, "%s_%s", n->name, activation_names[act]);
  clt_node from = n->index;
  clt_layer_args follow = {activation_names[act], a->source, a->line, NULL, 0};
  return clt_graph_add_args(g, &follow, act_name, &from, 1, out);
}

/* ---- shorthands ---------------------------------------------------------- */
/* The typed builders set their options as values: no text in between.
 * Messages name the type as their source ("dense:1: dense: ..."). */

static clt_status add_typed(clt_graph *g, const char *type,
                            const clt_node *inputs, int n_inputs,
                            clt_layer_arg *args, int count, clt_node *out) {
  for (int i = 0; i < count; i++) args[i].line = 1;
  clt_layer_args a = {type, type, 1, args, count};
  return clt_graph_add_args(g, &a, NULL, inputs, n_inputs, out);
}

CLT_API clt_status clt_graph_input(clt_graph *g, int ndim,
                                   const int64_t *sample_shape, clt_node *out) {
  clt_layer_arg shape = {.key = (char *)"shape", .kind = CLT_ARG_DIMS};
  if (ndim < 1 || ndim > CLT_MAX_DIMS - 1 || !sample_shape)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "graph: an input of %d dimensions (1 to %d)", ndim,
                        CLT_MAX_DIMS - 1);
  shape.ndim = ndim;
  memcpy(shape.dims, sample_shape, (size_t)ndim * sizeof *sample_shape);
  return add_typed(g, "input", NULL, 0, &shape, 1, out);
}

CLT_API clt_status clt_graph_flatten(clt_graph *g, clt_node in, clt_node *out) {
  return add_typed(g, "flatten", &in, 1, NULL, 0, out);
}

CLT_API clt_status clt_graph_dense(clt_graph *g, clt_node in, int64_t units,
                                   clt_node *out) {
  clt_layer_arg arg = {.key = (char *)"units", .kind = CLT_ARG_INT,
                       .i = units};
  return add_typed(g, "dense", &in, 1, &arg, 1, out);
}

CLT_API clt_status clt_graph_activation(clt_graph *g, clt_node in,
                                        clt_activation kind, clt_node *out) {
  if ((int)kind < 0 || kind > CLT_ACT_SOFTPLUS)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "graph: unknown activation %d", (int)kind);
  return add_typed(g, activation_names[kind], &in, 1, NULL, 0, out);
}

CLT_API clt_status clt_graph_softmax(clt_graph *g, clt_node in, clt_node *out) {
  return add_typed(g, "softmax", &in, 1, NULL, 0, out);
}

CLT_API clt_status clt_graph_softmax_cross_entropy(clt_graph *g, clt_node in,
                                                   clt_node *out) {
  return add_typed(g, "softmax_cross_entropy", &in, 1, NULL, 0, out);
}

CLT_API clt_status clt_graph_mse(clt_graph *g, clt_node in, clt_node *out) {
  return add_typed(g, "mse", &in, 1, NULL, 0, out);
}

CLT_API clt_status clt_graph_predictions(clt_graph *g, float *host,
                                         int64_t *outputs) {
  if (!g->compiled || g->loss_node < 0 || g->batch < 1)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "predictions: compile, set a batch and run forward "
                        "on a graph with a loss layer first");
  clt_graph_node *n = &g->nodes[g->loss_node];
  if (!n->ops->predict)
    return clt_ctx_fail(g->ctx, CLT_ERR_INTERNAL,
                        "predictions: the loss layer '%s' gives none",
                        n->name);
  *outputs = n->size;
  return n->ops->predict(g, n, host);
}

CLT_API clt_status clt_graph_node_shape(const clt_graph *g, clt_node node,
                                        int *ndim, int64_t *shape) {
  if (node < 0 || node >= g->n_nodes)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "graph: no node %d", node);
  *ndim = g->nodes[node].ndim;
  memcpy(shape, g->nodes[node].shape, sizeof g->nodes[node].shape);
  return CLT_OK;
}

/* The one count of a node's parameters, the trainable ones alone or all
 * (batch norm's running statistics, normalize's statistics and class
 * weights are parameters but not trainable): the summary, the public count
 * and the optimizer's flat buffer all use it. */
static int64_t node_param_count(const clt_graph_node *n, bool trainable_only) {
  int64_t total = 0;
  for (int p = 0; p < n->n_params; p++)
    if (n->params[p].trainable || !trainable_only)
      total += n->params[p].numel;
  return total;
}

CLT_API int64_t clt_graph_parameter_count(const clt_graph *g) {
  int64_t total = 0;
  for (int i = 0; i < g->n_nodes; i++)
    total += node_param_count(&g->nodes[i], true);
  return total;
}

/* Each layer's parameters, trained or not (Keras's "Param #"; "frozen"
 * after a layer clt_graph_set_trainable froze), and the totals: the
 * trainable count alone when every parameter is trained. */
CLT_API void clt_graph_summary(const clt_graph *g, char *buf, size_t buflen) {
  if (!buf || buflen == 0) return;
  size_t w = 0;
  int64_t all = 0;
  w += (size_t)snprintf(buf + w, buflen - w, "%-24s %-22s %-18s %10s\n",
                        "layer", "type", "output", "params");
  for (int i = 0; i < g->n_nodes; i++) {
    const clt_graph_node *n = &g->nodes[i];
    char shape[96];
    int64_t np = node_param_count(n, false);
    all += np;
    if (w < buflen)
      w += (size_t)snprintf(
          buf + w, buflen - w, "%-24s %-22s %-18s %10lld%s\n", n->name,
          n->ops->type, clt_shape_str(n->ndim, n->shape, shape, sizeof shape),
          (long long)np, n->frozen ? "  frozen" : "");
  }
  int64_t trainable = clt_graph_parameter_count(g);
  if (w >= buflen) return;
  if (all == trainable)
    snprintf(buf + w, buflen - w, "total trainable parameters: %lld\n",
             (long long)trainable);
  else
    snprintf(buf + w, buflen - w,
             "total parameters: %lld (%lld trainable, %lld non-trainable)\n",
             (long long)all, (long long)trainable,
             (long long)(all - trainable));
}

/* ---- compile --------------------------------------------------------------- */

static void mark_needs_grad(clt_graph *g) {
  for (int i = 0; i < g->n_nodes; i++) {
    clt_graph_node *n = &g->nodes[i];
    n->needs_grad = false;
    if (g->forward_only) continue; /* no gradient anywhere */
    for (int p = 0; p < n->n_params; p++)
      if (n->params[p].trainable) n->needs_grad = true;
    for (int k = 0; k < n->n_inputs; k++)
      if (g->nodes[n->inputs[k]].needs_grad) n->needs_grad = true;
  }
}

static clt_status init_params(clt_graph *g, float *host) {
  for (int i = 0; i < g->n_nodes; i++) {
    clt_graph_node *n = &g->nodes[i];
    /* One stream per node: adding a layer never changes another's values. */
    clt_rng rng = clt_rng_derive(g->seed, CLT_RNG_INIT, (uint64_t)i);
    for (int k = 0; k < n->n_params; k++) {
      clt_param *p = &n->params[k];
      float *v = host + p->offset;
      for (int64_t j = 0; j < p->numel; j++)
        v[j] = p->init == CLT_INIT_UNIFORM
                   ? (float)((2.0 * clt_rng_uniform(&rng) - 1.0) * p->bound)
               : p->init == CLT_INIT_ONE    ? 1.0f
               : p->init == CLT_INIT_VALUES ? p->values[j]
                                            : 0.0f;
    }
  }
  return clt_tensor_upload(g->params, host);
}

/* The weights' values, trained or frozen (the prefix of params before the
 * running statistics and class weights). */
static int64_t learnable_count(const clt_graph *g) {
  int64_t total = 0;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_params; k++)
      if (g->nodes[i].params[k].learnable) total += g->nodes[i].params[k].numel;
  return total;
}

/* Where the layers read their parameters: the master copy, or under mixed
 * precision (weights only, frozen ones too) its fp16-rounded copy, which
 * clt_graph_forward refreshes; running statistics stay in the master. */
static clt_status bind_param_values(clt_graph *g) {
  int64_t n = learnable_count(g);
  bool mixed = g->precision == CLT_PRECISION_MIXED && n > 0;
  if (mixed && (!g->work_params || g->work_params->numel != n)) {
    clt_tensor_destroy(g->work_params);
    g->work_params = NULL;
    CLT_TRY(clt_tensor_create(g->ctx, CLT_F32, 1, &n, &g->work_params));
    g->work_params_version = 0;
  }
  /* The values may view another tensor now. */
  clt_graph_params_written(g);
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_params; k++) {
      clt_param *p = &g->nodes[i].params[k];
      p->value = clt_tensor_slice_1d(mixed && p->learnable ? g->work_params
                                                           : g->params,
                                     p->offset, p->numel);
    }
  return CLT_OK;
}

CLT_API clt_status clt_graph_set_precision(clt_graph *g, clt_precision p) {
  if (p != CLT_PRECISION_FP32 && p != CLT_PRECISION_MIXED)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "precision %d: fp32 (%d) or mixed (%d)", (int)p,
                        CLT_PRECISION_FP32, CLT_PRECISION_MIXED);
  g->precision = p;
  /* The memory plan depends on it (saved outputs in fp16): a compiled
   * graph is compiled again, for the same batch size. */
  if (g->compiled && p != g->planned_precision)
    return clt_graph_compile(g, g->max_batch, g->seed);
  return g->params ? bind_param_values(g) : CLT_OK;
}

void clt_graph_params_written(clt_graph *g) {
  g->params_version++;
  g->frozen_params_version++;
}

void clt_graph_trained_params_written(clt_graph *g) { g->params_version++; }

clt_status clt_graph_need_backward(clt_graph *g, const char *what) {
  if (!g->planned_forward_only) return CLT_OK;
  return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                      "%s: the graph was compiled for forward passes only "
                      "(clt_graph_set_forward_only)",
                      what);
}

CLT_API clt_status clt_graph_set_forward_only(clt_graph *g, bool on) {
  g->forward_only = on;
  /* The memory plan and the plans measured depend on it. */
  if (g->compiled && on != g->planned_forward_only)
    return clt_graph_compile(g, g->max_batch, g->seed);
  return CLT_OK;
}

CLT_API clt_precision clt_graph_precision(const clt_graph *g) {
  return g->precision;
}

CLT_API void clt_graph_set_loss_scale(clt_graph *g, float scale) {
  g->loss_scale = scale;
}

CLT_API float clt_graph_loss_scale(const clt_graph *g) { return g->loss_scale; }

/* Trainable parameters first, so the optimizer updates one contiguous
 * prefix, then frozen layers' weights (mixed precision's fp16 copy covers
 * both), then the rest (running statistics, class weights); returns the
 * total. */
static int64_t assign_offsets(clt_graph *g) {
  int64_t total = 0;
  for (int pass = 0; pass < 3; pass++)
    for (int i = 0; i < g->n_nodes; i++)
      for (int k = 0; k < g->nodes[i].n_params; k++) {
        clt_param *p = &g->nodes[i].params[k];
        int kind = p->trainable ? 0 : p->learnable ? 1 : 2;
        if (kind != pass) continue;
        p->offset = total;
        total += p->numel;
      }
  return total;
}

static void bind_grads(clt_graph *g) {
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_params; k++) {
      clt_param *p = &g->nodes[i].params[k];
      p->grad = clt_tensor_slice_1d(g->grads, p->offset, p->numel);
    }
}

static clt_status plan_params(clt_graph *g) {
  int64_t total = assign_offsets(g);
  if (g->params && total == g->param_count) { /* kept */
    bind_grads(g);
    return bind_param_values(g);
  }
  int64_t len = total > 0 ? total : 1;
  CLT_TRY(clt_tensor_create(g->ctx, CLT_F32, 1, &len, &g->params));
  CLT_TRY(clt_tensor_create(g->ctx, CLT_F32, 1, &len, &g->grads));
  g->param_count = total;
  bind_grads(g);
  CLT_TRY(bind_param_values(g));
  float *host = calloc((size_t)len, sizeof(float));
  if (!host) return clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "parameters");
  clt_status st = init_params(g, host);
  free(host);
  clt_graph_params_written(g);
  if (st == CLT_OK) st = clt_tensor_fill(g->grads, 0.0);
  g->initialised = st == CLT_OK;
  return st;
}

/* ---- freezing layers ------------------------------------------------------ */

static bool has_weights(const clt_graph_node *n) {
  for (int k = 0; k < n->n_params; k++)
    if (n->params[k].learnable) return true;
  return false;
}

/* "fc1, fc2, ...": the layers that have weights, for messages. */
static void weight_layer_names(const clt_graph *g, char *buf, size_t len) {
  buf[0] = '\0';
  const char **names = calloc((size_t)g->n_nodes + 1, sizeof *names);
  if (!names) return;
  int n = 0;
  for (int i = 0; i < g->n_nodes; i++)
    if (has_weights(&g->nodes[i])) names[n++] = g->nodes[i].name;
  clt_join_words(names, ", ", buf, len);
  free(names);
  if (strlen(buf) + 1 >= len && len > 4) snprintf(buf + len - 4, 4, "...");
}

/* After a change of which parameters are trained: the values (and the
 * gradients, zeroed) move to their new places in the buffers. */
static clt_status move_params(clt_graph *g, const float *old,
                              const int64_t *old_offset) {
  size_t len = (size_t)(g->param_count > 0 ? g->param_count : 1);
  float *moved = calloc(len, sizeof(float));
  if (!moved) return clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "parameters");
  assign_offsets(g);
  int j = 0;
  for (int i = 0; i < g->n_nodes; i++)
    for (int k = 0; k < g->nodes[i].n_params; k++, j++) {
      const clt_param *p = &g->nodes[i].params[k];
      memcpy(moved + p->offset, old + old_offset[j],
             (size_t)p->numel * sizeof(float));
    }
  clt_status st = clt_tensor_upload(g->params, moved);
  free(moved);
  bind_grads(g);
  if (st == CLT_OK) st = clt_tensor_fill(g->grads, 0.0);
  if (st == CLT_OK) st = bind_param_values(g);
  clt_graph_params_written(g);
  return st;
}

CLT_API clt_status clt_graph_set_trainable(clt_graph *g, const char *layer,
                                           bool trainable) {
  char names[256];
  int only = -1; /* the one layer named, or -1: every layer with weights */
  if (layer) {
    only = find_node(g, layer);
    if (only < 0) {
      weight_layer_names(g, names, sizeof names);
      return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                          "%s layer '%s': no layer has that name (the layers "
                          "with weights: %s)",
                          trainable ? "train" : "freeze", layer,
                          names[0] ? names : "none");
    }
    if (!has_weights(&g->nodes[only])) {
      weight_layer_names(g, names, sizeof names);
      return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                          "%s layer '%s': a %s layer has no weights to train "
                          "or freeze (the layers with weights: %s)",
                          trainable ? "train" : "freeze", layer,
                          g->nodes[only].ops->type,
                          names[0] ? names : "none");
    }
  }
  bool change = false;
  for (int i = 0; i < g->n_nodes; i++)
    if ((only < 0 || i == only) && has_weights(&g->nodes[i]) &&
        g->nodes[i].frozen == trainable)
      change = true;
  if (!change) return CLT_OK;
  /* The values as they are placed now, to move them. */
  int n_tensors = 0, j = 0;
  for (int i = 0; i < g->n_nodes; i++) n_tensors += g->nodes[i].n_params;
  float *old = NULL;
  int64_t *old_offset = NULL;
  clt_status st = CLT_OK;
  if (g->params) {
    old = malloc((size_t)(g->param_count > 0 ? g->param_count : 1) *
                 sizeof(float));
    old_offset = malloc((size_t)(n_tensors > 0 ? n_tensors : 1) *
                        sizeof *old_offset);
    if (!old || !old_offset)
      st = clt_ctx_fail(g->ctx, CLT_ERR_HOST_MEMORY, "parameters");
    if (st == CLT_OK) st = clt_tensor_download(g->params, old);
    for (int a = 0; st == CLT_OK && a < g->n_nodes; a++)
      for (int k = 0; k < g->nodes[a].n_params; k++)
        old_offset[j++] = g->nodes[a].params[k].offset;
  }
  if (st == CLT_OK) {
    for (int i = 0; i < g->n_nodes; i++) {
      clt_graph_node *n = &g->nodes[i];
      if ((only >= 0 && i != only) || !has_weights(n)) continue;
      n->frozen = !trainable;
      for (int k = 0; k < n->n_params; k++)
        if (n->params[k].learnable) n->params[k].trainable = trainable;
    }
    g->trainable_version++;
    if (g->params) st = move_params(g, old, old_offset);
  }
  free(old);
  free(old_offset);
  CLT_TRY(st);
  /* Which layers need gradients, the buffers and the backward's plans
   * change with it. */
  return g->compiled ? clt_graph_compile(g, g->max_batch, g->seed) : CLT_OK;
}

CLT_API int clt_graph_frozen_layers(const clt_graph *g, const char **names,
                                    int cap) {
  int count = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    if (!g->nodes[i].frozen) continue;
    if (names && count < cap) names[count] = g->nodes[i].name;
    count++;
  }
  return count;
}

/* A reshape's output and gradient: views of its input's, once those are
 * placed. */
static clt_status alias_node(clt_graph *g, clt_graph_node *n) {
  int64_t len = g->max_batch * n->size;
  clt_graph_node *in = clt_graph_in(g, n, 0);
  CLT_TRY(clt_tensor_view(in->out, 0, 1, &len, &n->out));
  if (in->out_bwd) /* mixed precision's backward copy (graph.h) */
    CLT_TRY(clt_tensor_view(in->out_bwd, 0, 1, &len, &n->out_bwd));
  if (n->needs_grad && in->grad)
    CLT_TRY(clt_tensor_view(in->grad, 0, 1, &len, &n->grad));
  return CLT_OK;
}

/* Under mixed precision, the fp16 copy of the trainable parameters the
 * layers read, made again where params were written since. */
static clt_status round_work_params(clt_graph *g) {
  if (g->precision != CLT_PRECISION_MIXED || !g->work_params ||
      g->work_params_version == g->params_version)
    return CLT_OK;
  CLT_TRY(clt_round_f16(g->ctx, g->work_params, g->params,
                        g->work_params->numel));
  g->work_params_version = g->params_version;
  return CLT_OK;
}

/* Every output, gradient and workspace goes into shared device buffers
 * planned by liveness (graph/memplan.c): first what is known before the
 * layers measure their plans, then what those plans need. */
static clt_status plan_buffers(clt_graph *g) {
  CLT_TRY(clt_graph_plan_node_buffers(g));
  for (int i = 0; i < g->n_nodes; i++) {
    clt_graph_node *n = &g->nodes[i];
    if (n->ops->reserve) CLT_TRY(n->ops->reserve(g, n));
  }
  CLT_TRY(clt_graph_plan_place(g));
  for (int i = 0; i < g->n_nodes; i++)
    if (clt_node_aliases(&g->nodes[i])) CLT_TRY(alias_node(g, &g->nodes[i]));
  /* The layers measure their products on their parameters: under mixed
   * precision the fp16 copy, which holds nothing before a forward. */
  CLT_TRY(round_work_params(g));
  for (int i = 0; i < g->n_nodes; i++) {
    clt_graph_node *n = &g->nodes[i];
    if (n->ops->compile) CLT_TRY(n->ops->compile(g, n));
  }
  return clt_graph_plan_place(g);
}

clt_status clt_graph_env_switch(clt_graph *g, const char *name,
                                const char *meaning, int *on) {
  const char *v = getenv(name);
  *on = -1;
  if (!v || !*v) return CLT_OK;
  if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "%s=%s: expected 0 or 1 (%s)", name, v, meaning);
  *on = v[0] == '1';
  return CLT_OK;
}

/* CLT_FUSE: 1 (default) or 0 (every layer runs on its own: for comparing
 * and for finding a fault). */
static clt_status fusion_wanted(clt_graph *g, bool *on) {
  int v;
  CLT_TRY(clt_graph_env_switch(g, "CLT_FUSE", "0: every layer on its own",
                               &v));
  *on = v != 0;
  return CLT_OK;
}

/* A ReLU whose input is a node that can apply it (conv2d, dense) and that
 * nothing else reads is done by that node (clt_graph_node.fused_relu).
 * Only ReLU: its derivative is a function of its output, and it is exact
 * in fp16, so the fused pair gives the pair's bits under either
 * precision. */
static clt_status fuse_relus(clt_graph *g) {
  bool on;
  CLT_TRY(fusion_wanted(g, &on));
  g->fuse = on;
  for (int i = 0; i < g->n_nodes; i++)
    g->nodes[i].fused_relu = g->nodes[i].fused_away = false;
  if (!on) return CLT_OK;
  for (int i = 0; i < g->n_nodes; i++) {
    clt_graph_node *a = &g->nodes[i];
    if (strcmp(a->ops->type, "relu") != 0 || a->n_inputs != 1) continue;
    clt_graph_node *p = clt_graph_in(g, a, 0);
    if (!p->ops->fuses_relu || p->index == g->input_node) continue;
    int readers = 0;
    for (int j = 0; j < g->n_nodes; j++)
      for (int k = 0; k < g->nodes[j].n_inputs; k++)
        if (g->nodes[j].inputs[k] == p->index) readers++;
    if (readers != 1) continue;
    p->fused_relu = true;
    a->fused_away = true;
  }
  return CLT_OK;
}

/* clt_graph_node.bn_fold: in a graph compiled for forward passes only,
 * with fusion on, each batchnorm whose input is a conv2d or a
 * depthwise_conv2d (not the input, applying no ReLU of its own) that
 * nothing else reads; in fp32 and in mixed precision (there the folded
 * weights are rounded to fp16, as the parameters they replace: conv2d.c,
 * depthwise_conv2d.c). After fuse_relus, so that a ReLU after the
 * batchnorm is the batchnorm's (fused_relu) and goes with it into the
 * convolution. */
static void fold_batchnorms(clt_graph *g) {
  for (int i = 0; i < g->n_nodes; i++) {
    g->nodes[i].bn_fold = -1;
    g->nodes[i].bn_folded = false;
  }
  if (!g->fuse || !g->planned_forward_only) return;
  for (int i = 0; i < g->n_nodes; i++) {
    clt_graph_node *bn = &g->nodes[i];
    if (strcmp(bn->ops->type, "batchnorm") != 0 || bn->n_inputs != 1)
      continue;
    clt_graph_node *c = clt_graph_in(g, bn, 0);
    if ((strcmp(c->ops->type, "conv2d") != 0 &&
         strcmp(c->ops->type, "depthwise_conv2d") != 0) ||
        c->index == g->input_node || c->fused_relu)
      continue;
    int readers = 0;
    for (int j = 0; j < g->n_nodes; j++)
      for (int k = 0; k < g->nodes[j].n_inputs; k++)
        if (g->nodes[j].inputs[k] == c->index) readers++;
    if (readers != 1) continue;
    c->bn_fold = bn->index;
    bn->bn_folded = true;
  }
}

static clt_graph_node *grad_owner(clt_graph *g, clt_graph_node *n);

/* clt_graph_node.grad_writers: every input of a node with a backward
 * (reshapes and fused ReLUs write nothing: their gradient is a view). */
static void count_grad_writers(clt_graph *g) {
  for (int i = 0; i < g->n_nodes; i++) g->nodes[i].grad_writers = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    clt_graph_node *n = &g->nodes[i];
    if (!n->ops->backward || clt_node_aliases(n)) continue;
    for (int k = 0; k < n->n_inputs; k++)
      grad_owner(g, clt_graph_in(g, n, k))->grad_writers++;
  }
}

CLT_API clt_status clt_graph_compile(clt_graph *g, int64_t max_batch,
                                     uint64_t seed) {
  if (max_batch < 1)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "graph compile: batch size %lld",
                        (long long)max_batch);
  if (g->input_node < 0)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "graph compile: the graph has no input layer");
  CLT_TRY(clt_plan_mode_get(g->ctx, &g->plan_mode));
  g->plan_count = 0;
  g->plan_seconds = 0.0;
  CLT_TRY(clt_graph_plan_launch(g));
  release_buffers(g);
  g->max_batch = max_batch;
  g->batch = 0;
  if (!g->initialised) g->seed = seed;
  g->planned_forward_only = g->forward_only;
  mark_needs_grad(g);
  CLT_TRY(fuse_relus(g));
  count_grad_writers(g);
  g->planned_precision = g->precision;
  fold_batchnorms(g);
  CLT_TRY(plan_params(g));
  CLT_TRY(plan_buffers(g));
  int64_t nb = max_batch, four = 4;
  bool float_targets = clt_graph_float_targets(g);
  if (float_targets) nb = max_batch * g->nodes[g->loss_node].size;
  CLT_TRY(clt_tensor_create(g->ctx, float_targets ? CLT_F32 : CLT_I32, 1, &nb,
                            &g->labels));
  CLT_TRY(clt_tensor_create(g->ctx, CLT_F32, 1, &four, &g->metrics));
  CLT_TRY(clt_tensor_fill(g->metrics, 0.0));
  g->metric_samples = 0;
  g->compiled = true;
  return CLT_OK;
}

/* ---- running ----------------------------------------------------------------- */

static clt_status need_compiled(clt_graph *g, const char *what) {
  if (!g->compiled)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "%s: compile the graph first (clt_graph_compile)",
                        what);
  return CLT_OK;
}

CLT_API clt_status clt_graph_set_batch(clt_graph *g, const float *inputs,
                                       const void *labels, int64_t n) {
  CLT_TRY(need_compiled(g, "set batch"));
  if (n < 1 || n > g->max_batch)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "set batch: %lld samples; the graph was compiled for "
                        "1 to %lld",
                        (long long)n, (long long)g->max_batch);
  clt_graph_node *in = &g->nodes[g->input_node];
  clt_tensor x = clt_tensor_slice_1d(in->out, 0, n * in->size);
  CLT_TRY(clt_tensor_upload(&x, inputs));
  if (labels && g->loss_node >= 0) {
    int64_t per = g->labels->dtype == CLT_F32 ? g->nodes[g->loss_node].size : 1;
    clt_tensor y = clt_tensor_slice_1d(g->labels, 0, n * per);
    CLT_TRY(clt_tensor_upload(&y, labels));
  }
  clt_graph_batch_is(g, n, labels != NULL);
  return CLT_OK;
}

/* The node whose buffer a reshape's gradient really lives in. */
static clt_graph_node *grad_owner(clt_graph *g, clt_graph_node *n) {
  while (clt_node_aliases(n)) n = clt_graph_in(g, n, 0);
  return n;
}

/* Mixed precision's saved outputs (graph.h): out is the backward's copy
 * when to_backward, else the forward's. */
static void swap_saved_output(clt_graph_node *n, bool to_backward) {
  if (!n->out_bwd || n->out_swapped == to_backward) return;
  clt_tensor *t = n->out;
  n->out = n->out_bwd;
  n->out_bwd = t;
  n->out_swapped = to_backward;
}

/* Before the backward of node c: the outputs whose last reader c is come
 * back from fp16 into their backward copies, which every node reading
 * them from here on sees (reshapes of them included). */
static clt_status restore_saved_outputs(clt_graph *g, int c) {
  for (int i = 0; i < c; i++) {
    clt_graph_node *x = &g->nodes[i];
    if (!x->out16 || x->last_reader != c) continue;
    clt_tensor dst = clt_tensor_slice_1d(x->out_bwd, 0, g->batch * x->size);
    clt_tensor src = clt_tensor_slice_1d(x->out16, 0, g->batch * x->size);
    CLT_TRY(clt_tensor_convert(&dst, &src));
    swap_saved_output(x, true);
    for (int j = i + 1; j < g->n_nodes; j++) {
      clt_graph_node *a = &g->nodes[j];
      if (clt_node_aliases(a) && grad_owner(g, a) == x)
        swap_saved_output(a, true);
    }
  }
  return CLT_OK;
}

/* Under mixed precision, the outputs rounded to fp16 as they are made
 * (their gradients too): every layer's but the input batch's, the loss's
 * and reshapes' (views of their input's). */
static bool rounds_output(const clt_graph *g, const clt_graph_node *n) {
  return n->index != g->input_node && !n->is_loss && !clt_node_aliases(n);
}

const clt_round16 *clt_graph_out_round(clt_graph *g, clt_graph_node *n) {
  if (g->precision != CLT_PRECISION_MIXED || !g->fuse || !rounds_output(g, n))
    return NULL;
  n->out_round.mode = n->out16 ? 2 : 1;
  n->out_round.copy = n->out16;
  n->out_rounded = true;
  return &n->out_round;
}

const clt_round16 *clt_graph_grad_round(clt_graph *g, clt_graph_node *n,
                                        int i, bool accumulate) {
  static const clt_round16 to_half = {1, NULL};
  clt_graph_node *in = clt_graph_in(g, n, i), *owner = grad_owner(g, in);
  if (g->precision != CLT_PRECISION_MIXED || !g->fuse || accumulate ||
      !in->needs_grad || !in->grad || !rounds_output(g, owner) ||
      owner->grad_writers != 1)
    return NULL;
  owner->grad_rounded = true;
  return &to_half;
}

clt_tensor *clt_graph_loss_grad(clt_graph *g, clt_graph_node *n) {
  clt_graph_node *in = clt_graph_in(g, n, 0);
  if (!n->is_loss || g->planned_precision != CLT_PRECISION_FP32 ||
      g->planned_forward_only || !in->needs_grad || !in->grad ||
      grad_owner(g, in)->grad_writers != 1)
    return NULL;
  return in->grad;
}

/* An op's error in a layer's pass names the layer and the pass (as
 * clt_node_fail's messages do), unless it names a layer already: "layer
 * 'gmp' (global_maxpool) forward: maxpool: a window of ...". */
static clt_status in_layer(clt_graph *g, const clt_graph_node *n,
                           const char *pass, clt_status st) {
  if (st == CLT_OK) return st;
  const char *msg = clt_context_last_error(g->ctx);
  if (strncmp(msg, "layer '", 7) == 0) return st;
  char copy[sizeof g->ctx->err.msg];
  snprintf(copy, sizeof copy, "%s", msg);
  return clt_ctx_fail(g->ctx, st, "layer '%s' (%s) %s: %s", n->name,
                      n->ops->type, pass, copy);
}

CLT_API clt_status clt_graph_forward(clt_graph *g, bool training) {
  CLT_TRY(need_compiled(g, "forward"));
  if (g->batch < 1)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "forward: no batch set (clt_graph_set_batch)");
  if (training && g->loss_node >= 0 && !g->batch_labels)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "forward: training needs labels, but the batch was "
                        "set without them (inference: clt_graph_forward "
                        "with training false)");
  g->training = training;
  g->forward_labels = g->batch_labels;
  bool mixed = g->precision == CLT_PRECISION_MIXED;
  /* A training forward moves batch norms' running statistics. */
  if (training) clt_graph_trained_params_written(g);
  CLT_TRY(round_work_params(g));
  /* Cleared before the walk: a conv2d with a batchnorm folded in rounds
   * the batchnorm's output, which comes later. */
  for (int i = 0; i < g->n_nodes; i++) {
    swap_saved_output(&g->nodes[i], false);
    g->nodes[i].out_rounded = false;
  }
  clt_status st = CLT_OK;
  for (int i = 0; i < g->n_nodes; i++) {
    clt_graph_node *n = &g->nodes[i];
    clt_profile_scope(g->ctx, n->name, "forward");
    /* a folded batchnorm's evaluation: its conv2d's forward did it */
    if (n->ops->forward && !n->fused_away && !(n->bn_folded && !training))
      st = in_layer(g, n, "forward", n->ops->forward(g, n));
    if (st != CLT_OK) break;
    bool round = mixed && rounds_output(g, n) && !n->out_rounded;
    if (round && n->out16)
      st = clt_round_save_f16(g->ctx, n->out, n->out16, g->batch * n->size);
    else if (round)
      st = clt_round_f16(g->ctx, n->out, n->out, g->batch * n->size);
    if (st != CLT_OK) break;
  }
  clt_profile_scope(g->ctx, NULL, NULL);
  CLT_TRY(st);
  if (g->loss_node >= 0 && g->forward_labels) g->metric_samples += g->batch;
  return CLT_OK;
}

clt_tensor *clt_graph_input_grad(clt_graph *g, clt_graph_node *n, int i,
                                 bool *accumulate) {
  clt_graph_node *in = clt_graph_in(g, n, i);
  if (!in->needs_grad || !in->grad) return NULL;
  clt_graph_node *owner = grad_owner(g, in);
  *accumulate = owner->grad_written;
  owner->grad_written = true;
  return in->grad;
}

/* clt_graph_backward's walk over the nodes, last to first. */
static clt_status backward_nodes(clt_graph *g) {
  bool mixed = g->precision == CLT_PRECISION_MIXED;
  for (int i = g->n_nodes - 1; i >= 0; i--) {
    clt_graph_node *n = &g->nodes[i];
    clt_profile_scope(g->ctx, n->name, "backward");
    if (mixed) CLT_TRY(restore_saved_outputs(g, i));
    if (!n->needs_grad || !n->ops->backward || clt_node_aliases(n)) continue;
    if (!n->is_loss && !grad_owner(g, n)->grad_written) {
      /* Nothing downstream reaches the loss: its parameters get zero. */
      for (int k = 0; k < n->n_params; k++)
        if (n->params[k].trainable)
          CLT_TRY(clt_tensor_fill(&n->params[k].grad, 0.0));
    } else {
      /* The gradient of n's output is whole now: fp16 from here on
       * (rounded already where its one writer did it). */
      if (mixed && rounds_output(g, n) && n->grad && !n->grad_rounded)
        CLT_TRY(clt_round_f16(g->ctx, n->grad, n->grad, g->batch * n->size));
      CLT_TRY(in_layer(g, n, "backward", n->ops->backward(g, n)));
      /* Parameter gradients: here where a hook reads them as they are
       * made, else all in one pass at the end. */
      for (int k = 0; mixed && g->grads_final && k < n->n_params; k++)
        if (n->params[k].trainable)
          CLT_TRY(clt_round_f16(g->ctx, &n->params[k].grad,
                                &n->params[k].grad, n->params[k].numel));
    }
    if (g->grads_final && n->n_params > 0)
      CLT_TRY(g->grads_final(g, n->params[0].offset, g->grads_final_user));
  }
  if (mixed && !g->grads_final && g->param_count > 0)
    CLT_TRY(clt_round_f16(g->ctx, g->grads, g->grads, g->param_count));
  return CLT_OK;
}

CLT_API clt_status clt_graph_backward(clt_graph *g) {
  CLT_TRY(need_compiled(g, "backward"));
  CLT_TRY(clt_graph_need_backward(g, "backward"));
  if (g->loss_node < 0)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "backward: the graph has no loss layer");
  if (!g->forward_labels)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "backward: the last forward pass had no labels "
                        "(a batch set without them), so no loss to "
                        "differentiate");
  for (int i = 0; i < g->n_nodes; i++)
    g->nodes[i].grad_written = g->nodes[i].grad_rounded = false;
  clt_status st = backward_nodes(g);
  clt_profile_scope(g->ctx, NULL, NULL);
  return st;
}

CLT_API clt_status clt_graph_metrics(clt_graph *g, clt_metrics *m, bool reset) {
  CLT_TRY(need_compiled(g, "metrics"));
  float sums[4];
  CLT_TRY(clt_tensor_download(g->metrics, sums));
  m->samples = g->metric_samples;
  double count = g->metric_samples > 0 ? (double)g->metric_samples : 1.0;
  m->loss = sums[0] / count;
  bool regression =
      g->loss_node >= 0 &&
      g->nodes[g->loss_node].ops->loss_kind == CLT_LOSS_REGRESSION;
  m->accuracy = regression ? NAN : sums[1] / count;
  m->mae = regression ? sums[1] / count : NAN;
  if (reset) {
    CLT_TRY(clt_tensor_fill(g->metrics, 0.0));
    g->metric_samples = 0;
  }
  return CLT_OK;
}
