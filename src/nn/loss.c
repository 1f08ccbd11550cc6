/* Losses: softmax_cross_entropy (integer labels, fused and stable),
 * sigmoid_cross_entropy (a target in [0, 1] per output: multi-label, fused
 * and stable) and the regression losses mse, mae and huber (float
 * targets).
 * Each computes the loss and its gradient in one kernel during the forward
 * pass, add the batch's loss (and correct count) to the graph's metrics on
 * the device, and hand the gradient back in the backward pass. A batch set
 * without labels (inference) gets the prediction instead: the softmax's
 * probabilities (sigmoid_cross_entropy: the sigmoid's; a regression:
 * the input as it is), no loss and no metrics.
 *
 * softmax_cross_entropy class_weights=W0,W1,...|balanced weighs each
 * training sample's loss and gradient by its label's weight (Keras's
 * class_weight): the weights are the parameter <name>.class_weights, not
 * trained; `balanced` (scikit-learn's) learns them from the training data
 * before the first step, as normalize learns its statistics (train/adapt.c;
 * <name>.count: the samples they came from, 0 until then, when they are
 * ones). Evaluation's loss is not weighted. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

static const char *const keys[] = {"name", "input", "inputs", NULL};
static const char *const huber_keys[] = {"delta", "name", "input", "inputs",
                                         NULL};
static const char *const xent_keys[] = {"label_smoothing", "class_weights",
                                        "name", "input", "inputs", NULL};

extern const clt_layer_ops clt_layer_mae, clt_layer_huber;

/* Planned by the graph (which owns them), never shared: the metrics and
 * predictions read them between steps. */
typedef struct loss_state {
  /* [max_batch]: each row's loss, and its correct prediction (1 or 0;
   * a regression: its summed absolute error) */
  clt_tensor *loss_rows, *correct_rows;
  clt_tensor *dinput;                   /* [max_batch * input size] */
  bool probabilities; /* dinput holds the last forward's probabilities */
  float smoothing;    /* softmax_cross_entropy's label_smoothing */
  bool weighted;      /* class_weights: params[CLT_LOSS_CLASS_WEIGHTS] */
  float *weights;     /* given weights (CLT_INIT_VALUES), or NULL */
  clt_regression_kind regression; /* mse, mae, huber */
  float delta;                    /* huber's */
} loss_state;

/* class_weights=W0,W1,...: one finite weight >= 0 a class, not all 0,
 * into s->weights; `balanced`: none (learnt). */
static clt_status xent_class_weights(clt_graph *g, clt_graph_node *n,
                                     clt_layer_args *a, int64_t classes,
                                     loss_state *s) {
  clt_err err = {0};
  const char *text = NULL;
  if (clt_args_get_string(a, "class_weights", false, NULL, &text, &err) !=
      CLT_OK)
    return clt_graph_err(g, &err);
  if (!text) return CLT_OK;
  s->weighted = true;
  if (!strcmp(text, "balanced")) return CLT_OK;
  if (!(s->weights = malloc((size_t)classes * sizeof *s->weights)))
    return clt_node_fail(g, n, CLT_ERR_HOST_MEMORY, "class weights");
  int64_t count = 0;
  bool any = false;
  for (const char *p = text;; count++) {
    size_t len = strcspn(p, ",");
    char item[64];
    double v = 0.0;
    bool ok = len < sizeof item;
    if (ok) {
      memcpy(item, p, len);
      item[len] = '\0';
      ok = clt_args_parse_decimal(item, &v) && v >= 0.0 && v <= 1e30;
    }
    if (!ok)
      return clt_node_fail(g, n, CLT_ERR_FORMAT,
                           "class_weights: weight %lld is '%.*s'; weights "
                           "are numbers >= 0, one a class (or 'balanced')",
                           (long long)count + 1, (int)(len < 40 ? len : 40),
                           p);
    if (count < classes) s->weights[count] = (float)v;
    any = any || v > 0.0;
    if (!p[len]) break;
    p += len + 1;
  }
  if (count + 1 != classes)
    return clt_node_fail(g, n, CLT_ERR_FORMAT,
                         "class_weights: %lld weights for %lld classes",
                         (long long)count + 1, (long long)classes);
  if (!any)
    return clt_node_fail(g, n, CLT_ERR_FORMAT,
                         "class_weights: every weight is 0: nothing would be "
                         "learnt");
  return CLT_OK;
}

/* The weights' parameters: given values, or ones and a count to learn. */
static void xent_weight_params(clt_graph_node *n, loss_state *s,
                               int64_t classes) {
  int64_t one = 1;
  clt_param *w = clt_node_add_param(n, "class_weights", 1, &classes);
  w->trainable = w->learnable = false;
  w->init = s->weights ? CLT_INIT_VALUES : CLT_INIT_ONE;
  w->values = s->weights;
  if (s->weights) return;
  clt_param *count = clt_node_add_param(n, "count", 1, &one);
  count->trainable = count->learnable = false;
  count->init = CLT_INIT_ZERO;
}

static clt_status loss_configure(clt_graph *g, clt_graph_node *n,
                                 clt_layer_args *a) {
  clt_graph_node *in = clt_graph_in(g, n, 0);
  bool xent = !strcmp(n->ops->type, "softmax_cross_entropy");
  if (xent && in->ndim != 1) {
    char s[96];
    return clt_node_fail(g, n, CLT_ERR_SHAPE,
                         "expects logits [classes], but '%s' gives %s",
                         in->name,
                         clt_shape_str(in->ndim, in->shape, s, sizeof s));
  }
  double smoothing = 0.0, delta = 1.0;
  clt_err err = {0};
  if (xent) {
    if (clt_args_get_float(a, "label_smoothing", false, 0.0, &smoothing,
                           &err) != CLT_OK)
      return clt_graph_err(g, &err);
    if (!(smoothing >= 0.0 && smoothing <= 1.0))
      return clt_node_fail(g, n, CLT_ERR_FORMAT,
                           "label_smoothing must be in [0, 1], got %g",
                           smoothing);
  }
  bool huber = n->ops == &clt_layer_huber;
  if (huber) { /* PyTorch's and Keras's default: 1 */
    if (clt_args_get_float(a, "delta", false, 1.0, &delta, &err) != CLT_OK)
      return clt_graph_err(g, &err);
    if (!(delta > 0.0 && delta <= 3e38))
      return clt_node_fail(g, n, CLT_ERR_FORMAT,
                           "delta must be a number > 0 (where the loss turns "
                           "from squared to linear), got %g",
                           delta);
  }
  loss_state *s = calloc(1, sizeof *s);
  if (!s) return clt_node_fail(g, n, CLT_ERR_HOST_MEMORY, "state");
  s->smoothing = (float)smoothing;
  s->delta = (float)delta;
  s->regression = n->ops == &clt_layer_mae ? CLT_REGRESSION_MAE
                  : huber                  ? CLT_REGRESSION_HUBER
                                           : CLT_REGRESSION_MSE;
  n->state = s;
  n->is_loss = true;
  /* Per-sample "shape" of the target: the input's. */
  n->ndim = in->ndim;
  memcpy(n->shape, in->shape, sizeof n->shape);
  if (xent) CLT_TRY(xent_class_weights(g, n, a, in->size, s));
  if (s->weighted) xent_weight_params(n, s, in->size);
  return CLT_OK;
}

static clt_status loss_reserve(clt_graph *g, clt_graph_node *n) {
  loss_state *s = n->state;
  int64_t rows = g->max_batch, all = g->max_batch * n->size;
  CLT_TRY(clt_graph_workspace(g, n, CLT_F32, rows, CLT_LIVE_ALWAYS,
                              &s->loss_rows));
  CLT_TRY(clt_graph_workspace(g, n, CLT_F32, rows, CLT_LIVE_ALWAYS,
                              &s->correct_rows));
  return clt_graph_workspace(g, n, CLT_F32, all, CLT_LIVE_ALWAYS, &s->dinput);
}

/* The batch's rows into the graph's metrics: the loss into [0], the
 * second metric (correct predictions; a regression: the absolute error)
 * into [1], each scaled by `scale` (a regression: per element). */
static clt_status add_metrics(clt_graph *g, loss_state *s, float scale) {
  return clt_sum2_into(g->ctx, g->metrics, 0, s->loss_rows, scale, 1,
                       s->correct_rows, scale, g->batch);
}

/* The samples the gradient averages over (graph.h, grad_batch). */
static float grad_samples(const clt_graph *g) {
  return (float)(g->grad_batch > 0 ? g->grad_batch : g->batch);
}

/* Where the forward writes the gradient: the input's gradient itself
 * where the graph allows it (clt_graph_loss_grad: one copy fewer a step),
 * else dinput, which the backward copies from. */
static clt_tensor *grad_target(clt_graph *g, clt_graph_node *n) {
  clt_tensor *direct = clt_graph_loss_grad(g, n);
  return direct ? direct : ((loss_state *)n->state)->dinput;
}

/* The softmax's probabilities of the batch into dinput. */
static clt_status xent_probabilities(clt_graph *g, clt_graph_node *n) {
  loss_state *s = n->state;
  CLT_TRY(clt_softmax_forward(g->ctx, s->dinput, clt_graph_in(g, n, 0)->out,
                              g->batch, n->size));
  s->probabilities = true;
  return CLT_OK;
}

/* The class weights a forward applies: training's, never evaluation's. */
static const clt_tensor *xent_weights(const clt_graph *g,
                                      const clt_graph_node *n) {
  const loss_state *s = n->state;
  return s->weighted && g->training
             ? &n->params[CLT_LOSS_CLASS_WEIGHTS].value
             : NULL;
}

static clt_status xent_forward(clt_graph *g, clt_graph_node *n) {
  loss_state *s = n->state;
  s->probabilities = false;
  if (!g->forward_labels) return xent_probabilities(g, n);
  CLT_TRY(clt_softmax_xent_forward_backward(
      g->ctx, s->loss_rows, s->correct_rows, grad_target(g, n),
      clt_graph_in(g, n, 0)->out, g->labels, xent_weights(g, n), g->batch,
      n->size, 1.0f / grad_samples(g), s->smoothing));
  return add_metrics(g, s, 1.0f);
}

static clt_status regression_forward(clt_graph *g, clt_graph_node *n) {
  loss_state *s = n->state;
  if (!g->forward_labels) return CLT_OK;
  /* PyTorch's MSELoss, L1Loss, HuberLoss: the mean over every element. The
   * metrics are the same mean and the mean absolute error (Keras's
   * "mae"), summed per sample here and divided by samples later. */
  float per_elem = 1.0f / (grad_samples(g) * (float)n->size);
  CLT_TRY(clt_regression_loss_forward_backward(
      g->ctx, s->regression, s->delta, s->loss_rows, s->correct_rows,
      grad_target(g, n), clt_graph_in(g, n, 0)->out, g->labels, g->batch,
      n->size, per_elem));
  return add_metrics(g, s, 1.0f / (float)n->size);
}

static clt_status loss_backward(clt_graph *g, clt_graph_node *n) {
  loss_state *s = n->state;
  bool acc = false;
  clt_tensor *dx = clt_graph_input_grad(g, n, 0, &acc);
  if (!dx) return CLT_OK;
  /* Loss scaling (mixed precision) multiplies every gradient from here. */
  if (dx == clt_graph_loss_grad(g, n)) /* the forward wrote it there */
    return g->loss_scale == 1.0f
               ? CLT_OK
               : clt_scale_forward(g->ctx, dx, dx, g->batch * n->size,
                                   g->loss_scale, false, NULL);
  return clt_scale_forward(g->ctx, dx, s->dinput, g->batch * n->size,
                           g->loss_scale, acc,
                           clt_graph_grad_round(g, n, 0, acc));
}

static void loss_destroy(clt_graph_node *n) {
  loss_state *s = n->state;
  if (s) free(s->weights);
  free(s);
}

/* The model's prediction for the current batch (clt_graph_predictions):
 * softmax probabilities, computed into dinput. Where a training forward
 * left the gradient there (grad_target: mixed precision, or logits with
 * other readers), the fused kernel writes it again afterwards, the same
 * bits, so that predictions between a forward and a backward pass change
 * nothing (the metrics were added by the forward and are not again). */
static clt_status xent_predict(clt_graph *g, clt_graph_node *n, float *host) {
  loss_state *s = n->state;
  bool restore = false;
  if (!s->probabilities) {
    restore = g->forward_labels && grad_target(g, n) == s->dinput;
    CLT_TRY(xent_probabilities(g, n));
  }
  clt_tensor p = clt_tensor_slice_1d(s->dinput, 0, g->batch * n->size);
  CLT_TRY(clt_tensor_download(&p, host));
  if (!restore) return CLT_OK;
  s->probabilities = false;
  return clt_softmax_xent_forward_backward(
      g->ctx, s->loss_rows, s->correct_rows, s->dinput,
      clt_graph_in(g, n, 0)->out, g->labels, xent_weights(g, n), g->batch,
      n->size, 1.0f / grad_samples(g), s->smoothing);
}

/* sigmoid_cross_entropy: the sigmoid's probabilities of the batch into
 * dinput. */
static clt_status sigmoid_probabilities(clt_graph *g, clt_graph_node *n) {
  loss_state *s = n->state;
  CLT_TRY(clt_activation_forward(g->ctx, s->dinput, clt_graph_in(g, n, 0)->out,
                                 g->batch * n->size, CLT_ACT_SIGMOID, 0.0f,
                                 NULL));
  s->probabilities = true;
  return CLT_OK;
}

/* The fused kernel: each element's loss, right predictions and gradient
 * (the mean over every element, as PyTorch's BCEWithLogitsLoss). */
static clt_status sigmoid_xent_run(clt_graph *g, clt_graph_node *n) {
  loss_state *s = n->state;
  return clt_sigmoid_xent_forward_backward(
      g->ctx, s->loss_rows, s->correct_rows, grad_target(g, n),
      clt_graph_in(g, n, 0)->out, g->labels, g->batch, n->size,
      1.0f / (grad_samples(g) * (float)n->size));
}

static clt_status sigmoid_xent_forward(clt_graph *g, clt_graph_node *n) {
  loss_state *s = n->state;
  s->probabilities = false;
  if (!g->forward_labels) return sigmoid_probabilities(g, n);
  CLT_TRY(sigmoid_xent_run(g, n));
  /* the loss and the accuracy per label: the means over every element */
  return add_metrics(g, s, 1.0f / (float)n->size);
}

/* Each label's probability, as xent_predict gives the softmax's (the
 * gradient written again where the probabilities took its place). */
static clt_status sigmoid_xent_predict(clt_graph *g, clt_graph_node *n,
                                       float *host) {
  loss_state *s = n->state;
  bool restore = false;
  if (!s->probabilities) {
    restore = g->forward_labels && grad_target(g, n) == s->dinput;
    CLT_TRY(sigmoid_probabilities(g, n));
  }
  clt_tensor p = clt_tensor_slice_1d(s->dinput, 0, g->batch * n->size);
  CLT_TRY(clt_tensor_download(&p, host));
  if (!restore) return CLT_OK;
  s->probabilities = false;
  return sigmoid_xent_run(g, n);
}

/* A regression: the raw output. */
static clt_status regression_predict(clt_graph *g, clt_graph_node *n,
                                     float *host) {
  clt_graph_node *in = clt_graph_in(g, n, 0);
  clt_tensor x = clt_tensor_slice_1d(in->out, 0, g->batch * n->size);
  return clt_tensor_download(&x, host);
}

const clt_layer_ops clt_layer_softmax_xent = {
    .type = "softmax_cross_entropy",
    .min_inputs = 1,
    .max_inputs = 1,
    .option_keys = xent_keys,
    .configure = loss_configure,
    .reserve = loss_reserve,
    .forward = xent_forward,
    .backward = loss_backward,
    .destroy = loss_destroy,
    .predict = xent_predict,
    .loss_kind = CLT_LOSS_CLASSIFIER,
};

const clt_layer_ops clt_layer_sigmoid_xent = {
    .type = "sigmoid_cross_entropy",
    .min_inputs = 1,
    .max_inputs = 1,
    .option_keys = keys,
    .configure = loss_configure,
    .reserve = loss_reserve,
    .forward = sigmoid_xent_forward,
    .backward = loss_backward,
    .destroy = loss_destroy,
    .predict = sigmoid_xent_predict,
    .loss_kind = CLT_LOSS_MULTILABEL,
};

#define REGRESSION_LOSS(type_name, keys_list)                                  \
  {                                                                            \
    .type = type_name, .min_inputs = 1, .max_inputs = 1,                       \
    .option_keys = keys_list, .configure = loss_configure,                     \
    .reserve = loss_reserve, .forward = regression_forward,                    \
    .backward = loss_backward, .destroy = loss_destroy,                        \
    .predict = regression_predict, .loss_kind = CLT_LOSS_REGRESSION,           \
  }

const clt_layer_ops clt_layer_mse = REGRESSION_LOSS("mse", keys);
const clt_layer_ops clt_layer_mae = REGRESSION_LOSS("mae", keys);
const clt_layer_ops clt_layer_huber = REGRESSION_LOSS("huber", huber_keys);
