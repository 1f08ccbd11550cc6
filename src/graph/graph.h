/* The graph: nodes in the order they were added (which is a topological
 * order: a node reads only nodes added before it), their buffers, the
 * parameter registry and the backward pass. */
#ifndef CLT_GRAPH_GRAPH_H
#define CLT_GRAPH_GRAPH_H

#include "graph/layer_args.h"
#include "ops/gemm_measure.h"
#include "ops/gemm_plan.h"
#include "ops/ops.h"

#define CLT_MAX_INPUTS 8
#define CLT_MAX_PARAMS 6
#define CLT_NAME_MAX 64

typedef struct clt_graph_node clt_graph_node;
typedef struct clt_layer_ops clt_layer_ops;

/* When a layer's workspace must hold its contents (graph/memplan.c). A
 * compile runs the graph as 2N steps over its N nodes: node i's forward
 * is step i, its backward step 2N-1-i; buffers whose steps do not overlap
 * share device memory. */
typedef enum clt_live {
  CLT_LIVE_FORWARD,  /* during the node's forward only */
  CLT_LIVE_BACKWARD, /* during the node's backward only */
  CLT_LIVE_SAVED,    /* written in the forward, read in the backward */
  CLT_LIVE_ALWAYS,   /* never shared: read between steps (metrics,
                        predictions) */
} clt_live;

/* A buffer the graph places in its shared device memory: a node's output
 * or gradient, or a layer's workspace. */
typedef struct clt_buffer_request {
  int node;
  enum {
    CLT_REQ_OUT,
    CLT_REQ_GRAD,
    CLT_REQ_WORK,
    CLT_REQ_OUT_BWD, /* mixed precision: the output again, for backward */
    CLT_REQ_OUT16,   /* mixed precision: the output saved in fp16 */
  } kind;
  clt_tensor **slot; /* CLT_REQ_WORK: where the view goes (layer state) */
  clt_dtype dtype;   /* 4- or 2-byte types */
  int64_t numel;     /* in 4-byte units: what placement counts */
  int64_t elems;     /* in elements of dtype: the view's length */
  int first, last;   /* steps it lives over, inclusive */
  int round;         /* 0: before the layers' compile, 1: during it */
  /* A pair (clt_graph_workspace_keep): the forward request names its
   * backward partner; merged when the forward's contents are kept for
   * the backward (the partner then shares its memory). */
  int partner;       /* -1: none */
  bool merged;
  bool *kept;        /* the forward's: told whether they were merged */
  int arena;         /* where it was placed */
  int64_t offset;    /* elements into that arena */
} clt_buffer_request;

/* A parameter (or a buffer saved with the model, like batch-norm running
 * statistics): a slice of the graph's one parameter tensor, so that one
 * optimizer kernel updates every parameter. */
typedef struct clt_param {
  char suffix[24]; /* "weight", "bias", ...: saved as "<node>.<suffix>" */
  int ndim;
  int64_t shape[CLT_MAX_DIMS];
  int64_t numel;   /* -1 from clt_node_add_param where it passes a
                      tensor's 2^31 elements: the layer line is refused */
  int64_t offset;  /* into the graph's parameter (and gradient) tensors */
  bool trainable;  /* false: not updated by the optimizer, no gradient */
  bool learnable;  /* a weight (trainable unless its layer is frozen by
                      clt_graph_set_trainable), not a running statistic */
  /* Initialisation: */
  enum {
    CLT_INIT_ZERO,
    CLT_INIT_ONE,
    CLT_INIT_UNIFORM,
    CLT_INIT_VALUES
  } init;
  double bound; /* CLT_INIT_UNIFORM: U(-bound, bound) */
  const float *values; /* CLT_INIT_VALUES: numel of them (the layer's) */
  clt_tensor value; /* slices, valid after compile */
  clt_tensor grad;
} clt_param;

struct clt_graph_node {
  char name[CLT_NAME_MAX];
  const clt_layer_ops *ops;
  int index;
  int inputs[CLT_MAX_INPUTS];
  int n_inputs;
  int ndim; /* output per sample */
  int64_t shape[CLT_MAX_DIMS];
  int64_t size; /* elements per sample */
  clt_param params[CLT_MAX_PARAMS];
  int n_params;
  bool is_loss;
  bool frozen;       /* clt_graph_set_trainable(false): its weights are
                        not trained (not learnable then) */
  bool needs_grad;   /* some parameter lies upstream: gradients flow here */
  bool grad_written; /* during backward: grad holds a value already */
  clt_tensor *out;   /* [max_batch, size] (a view of the input's for
                        reshapes) */
  clt_tensor *grad;  /* same shape; NULL where no gradient is needed */
  /* Mixed precision with the memory plan (graph/memplan.c): an output
   * that its consumers' backwards read again is held in fp16 (out16)
   * between the forward of its last consumer (index last_reader) and that
   * consumer's backward, and in f32 only around them: out while forwards
   * read it, out_bwd (restored from out16) from that backward to its own.
   * clt_graph_backward exchanges the two (out_swapped); reshapes of such
   * an output have an out_bwd view too. NULL: one f32 buffer throughout. */
  clt_tensor *out16;
  clt_tensor *out_bwd;
  int last_reader;
  bool out_swapped;
  /* ReLU fusion (clt_graph_compile, unless CLT_FUSE=0): a conv2d or dense
   * node whose one consumer is a ReLU applies it itself (fused_relu: its
   * output is the ReLU's, and its backward first multiplies its gradient
   * by out > 0), and the ReLU node is then a view of it, like a reshape
   * (fused_away). Same numbers as the two nodes, one pass fewer each way
   * and one buffer less. */
  bool fused_relu, fused_away;
  /* Batch-norm folding (clt_graph_compile, forward-only graphs, fp32 or
   * mixed, unless CLT_FUSE=0): a batchnorm whose input is a conv2d or a
   * depthwise_conv2d that nothing else reads is folded into it for
   * evaluation (bn_folded on the batchnorm; bn_fold, its index, on the
   * convolution, else -1). An evaluation forward then runs the
   * convolution with its weights and bias scaled by the running
   * statistics (clt_batchnorm_fold; under mixed precision rounded to fp16
   * after), writing the batchnorm's output (with the batchnorm's fused
   * ReLU and, mixed, its rounding: conv2d's kernels round it, the graph
   * after depthwise_conv2d's), and skips the batchnorm: one pass over the
   * activations fewer. A training forward runs both. */
  int bn_fold;
  bool bn_folded;
  /* Mixed precision's rounding done by the layers' own kernels
   * (clt_graph_out_round, clt_graph_grad_round): what the forward's last
   * kernel is to do with the output; whether the forward took it (else
   * the graph rounds afterwards); how many backwards write this node's
   * gradient (set at compile, counted through reshapes); whether the one
   * that wrote it rounded it. */
  clt_round16 out_round;
  bool out_rounded;
  int grad_writers;
  bool grad_rounded;
  void *state;       /* the layer's own options and buffers */
};

struct clt_graph {
  clt_context *ctx;
  clt_graph_node *nodes;
  int n_nodes, cap_nodes;
  int input_node, loss_node;
  int64_t max_batch, batch;
  bool compiled, initialised;
  bool training;
  /* The batch set came with labels (or targets); without them a forward
   * pass is inference: the loss layer makes the prediction only (no loss,
   * no metrics), training and backward refuse. forward_labels: the last
   * forward pass had them. */
  bool batch_labels, forward_labels;
  /* clt_graph_set_forward_only: compiled without gradients or a
   * backward's plans; backward refuses to run. */
  bool forward_only, planned_forward_only;
  uint64_t seed;
  clt_tensor *params;   /* every parameter, one buffer */
  clt_tensor *grads;    /* their gradients, same layout */
  int64_t param_count;  /* elements in params */
  /* Counts the changes of which parameters are trained
   * (clt_graph_set_trainable), which move them in params: an optimizer
   * made before one refuses to step. */
  uint64_t trainable_version;
  /* Mixed precision (clt_graph_set_precision): the weights (trained or
   * frozen) rounded to fp16 before each forward, which the layers'
   * parameter values view (the optimizer and checkpoints use params, the
   * master). */
  clt_precision precision;
  clt_precision planned_precision; /* the one the last compile planned for */
  clt_tensor *work_params;
  /* Counts the writes to params (clt_graph_params_written): what a layer
   * makes from its parameters (a folded batchnorm's weights, the tiled
   * convolution's weight tiles) and the fp16 copy above are made again
   * only when it moved since they were made (work_params_version: the
   * count the fp16 copy was made at; 0: never). Starts at 1. */
  uint64_t params_version, work_params_version;
  /* Counts the writes that may reach frozen weights: every
   * clt_graph_params_written but the optimizer's update (the trainable
   * prefix) and a training forward's running statistics
   * (clt_graph_trained_params_written). What a frozen layer makes from
   * its own weights stays while this stays. */
  uint64_t frozen_params_version;
  float loss_scale; /* the loss layer's gradient factor (loss scaling) */
  /* The batch the loss's gradient averages over: 0 for the current batch;
   * over MPI the global batch (clt_dist_step_begin), so that each rank's
   * gradients are its share of the global mean as they are made (the
   * allreduce then sums), on the scale one process's would have. */
  int64_t grad_batch;
  clt_tensor *labels;   /* i32 [max_batch] or f32 targets */
  clt_tensor *metrics;  /* f32 [4]: loss sum, correct sum */
  /* fit's byte batches (train/fit.c): u8 [max_batch * input size], the
   * uploaded pixels (clt_unit_u8 makes them the input's values); made on
   * first use, released with the buffers. */
  clt_tensor *input_bytes;
  int64_t metric_samples;
  char source_hash[65]; /* SHA-256 of the model file, if loaded from one */
  /* Measured plans of the last compile (graph/plan.c). */
  clt_plan_mode plan_mode; /* resolved: never CLT_PLAN_ENV */
  clt_plan_info *plans;
  int plan_count, plan_cap;
  double plan_seconds;
  bool test_mma; /* tests: every product takes the route's first
                    candidate (one GEMM; mixed: fp16 tile configuration 0,
                    fp32: the first usable 3xTF32 one) where the device
                    has the route */
  bool test_last; /* tests: every product takes its last SGEMM candidate
                     (unmeasured, unstored): the column-major form of its
                     most split plan */
  int test_blocked; /* tests: every product that has candidates by our own
                       fp32 kernels takes the test_blocked-th of them
                       (1: the first; unmeasured, unstored); 0: off */
  int test_way; /* tests: 1 + the way every clt_graph_plan_ways takes
                   (unmeasured, unstored); 0 to choose as the mode says */
  const char *test_way_name; /* tests: the way of this name, where
                                clt_graph_plan_ways offers one (before
                                test_way) */
  /* Shared device buffers of the last compile (graph/memplan.c). */
  bool share_buffers; /* false: every buffer its own memory (tests) */
  /* Mixed precision: whether saved outputs are held in fp16 between their
   * forward and backward use (out16 below; memory for a conversion pass
   * each way) or in f32 throughout (the same bits either way: the values
   * are fp16's). save_f16_option: -1 (default) CLT_SAVE_F16 or, unset,
   * fp16 only where the graph's outputs and gradients in f32 would take
   * more than a quarter of the device's memory; 0 or 1 forces it (tests).
   * save_f16 is the compile's decision. */
  int save_f16_option;
  bool save_f16;
  bool fuse;          /* CLT_FUSE: layers fused, rounding in their kernels */
  int plan_round;
  clt_buffer_request *requests;
  int n_requests, cap_requests;
  clt_tensor **arenas;
  int n_arenas, cap_arenas;
  int64_t requested_bytes; /* sum of every planned buffer */
  int64_t arena_bytes;     /* what they were given: the arenas' sizes */
  /* Called by clt_graph_backward after each node with parameters has
   * enqueued its backward: the gradients from element final_from to the
   * end of grads are final (parameters lie in node order). NULL: none. */
  clt_status (*grads_final)(clt_graph *g, int64_t final_from, void *user);
  void *grads_final_user;
};

/* A layer type: darknet-style table of functions. */
struct clt_layer_ops {
  const char *type;
  int min_inputs, max_inputs;
  /* Known option keys (NULL-terminated), for typo messages. */
  const char *const *option_keys;
  /* Reads options, checks input shapes, sets the output shape and
   * declares parameters. Errors name the node. */
  clt_status (*configure)(clt_graph *g, clt_graph_node *n,
                          clt_layer_args *a);
  /* Declares the layer's workspaces for max_batch with
   * clt_graph_workspace (optional); the graph then places them. */
  clt_status (*reserve)(clt_graph *g, clt_graph_node *n);
  /* Runs once every output, gradient and reserved workspace is in place:
   * measures plans, may ask for more workspace (optional). */
  clt_status (*compile)(clt_graph *g, clt_graph_node *n);
  clt_status (*forward)(clt_graph *g, clt_graph_node *n);
  /* Writes (or adds into, see clt_graph_input_grad) input gradients and
   * parameter gradients. Optional for layers without gradients. */
  clt_status (*backward)(clt_graph *g, clt_graph_node *n);
  void (*destroy)(clt_graph_node *n); /* frees state (optional) */
  /* State that checkpoints save beside the parameters, as a counter (a
   * random stream's position: dropout's masks); NULL where none
   * (optional). */
  uint64_t *(*saved_counter)(clt_graph_node *n);
  /* A loss layer: the model's outputs for the current batch into host
   * (batch x size floats), for clt_graph_predictions (optional). */
  clt_status (*predict)(clt_graph *g, clt_graph_node *n, float *host);
  /* Output reuses the input's buffer (flatten, reshape). */
  bool aliases_input;
  /* Can apply a ReLU that follows it (clt_graph_node.fused_relu). */
  bool fuses_relu;
  /* A loss layer: what it is (clt_graph_loss_kind); CLT_LOSS_NONE (0)
   * for the other layers. */
  clt_loss_kind loss_kind;
};

/* Whether g's loss takes float targets, one an output (a regression, or
 * sigmoid_cross_entropy's labels), instead of class labels. */
static inline bool clt_graph_float_targets(const clt_graph *g) {
  if (g->loss_node < 0) return false;
  clt_loss_kind k = g->nodes[g->loss_node].ops->loss_kind;
  return k == CLT_LOSS_REGRESSION || k == CLT_LOSS_MULTILABEL;
}

/* Whether n's output and gradient are views of its first input's (a
 * reshape, or a ReLU fused into its input). */
static inline bool clt_node_aliases(const clt_graph_node *n) {
  return n->ops->aliases_input || n->fused_away;
}

const clt_layer_ops *clt_layer_find(const char *type);
/* The i-th layer type of the registry (nn/layers.c), NULL past the last. */
const char *clt_layer_type_at(int i);

/* Adds one layer described by a (the model file's lines and the C
 * builders both end here); `activation=` adds an activation node after
 * it. inputs (n_inputs of them) are used when a names none (input=,
 * inputs=); with neither, the last node added. name (NULL: a's name=, else
 * the type and a counter). */
clt_status clt_graph_add_args(clt_graph *g, clt_layer_args *a,
                              const char *name, const clt_node *inputs,
                              int n_inputs, clt_node *out);

static inline clt_graph_node *clt_graph_in(clt_graph *g, clt_graph_node *n,
                                           int i) {
  return &g->nodes[n->inputs[i]];
}

/* The gradient buffer of input i of n, and whether the caller must add
 * into it (it already holds another consumer's contribution). NULL if that
 * input needs no gradient. Marks it written. */
clt_tensor *clt_graph_input_grad(clt_graph *g, clt_graph_node *n, int i,
                                 bool *accumulate);
/* Mixed precision: the rounding of n's output to fp16 (and the saving of
 * its fp16 copy, where a backward reads it again) that the graph would
 * do after n's forward, for the kernel of n's forward that writes the
 * whole output last; calling it tells the graph that this kernel does it.
 * NULL under fp32, for outputs that stay f32 (the input batch's, the
 * loss's, views) and with CLT_FUSE=0. */
const clt_round16 *clt_graph_out_round(clt_graph *g, clt_graph_node *n);
/* Where a loss node's forward may write its input's gradient straight
 * into the gradient's buffer instead of a copy of its own (the backward
 * then only marks it written, scaling it in place where the loss scale is
 * not 1): fp32 training where the loss is the one backward writing that
 * gradient (memplan.c keeps the buffer live from the loss's forward on).
 * That buffer, else NULL. */
clt_tensor *clt_graph_loss_grad(clt_graph *g, clt_graph_node *n);

/* Every way of setting a batch ends here: n samples are in the input's
 * buffer, with labels (or targets) in g->labels or without (inference). */
static inline void clt_graph_batch_is(clt_graph *g, int64_t n, bool labels) {
  g->batch = n;
  g->batch_labels = labels;
}
/* The same for the gradient of n's input i that n's backward writes
 * (after clt_graph_input_grad, with the accumulate it gave): the rounding
 * the graph would do before the input's own backward, where n is the only
 * backward that writes that gradient; else NULL. */
const clt_round16 *clt_graph_grad_round(clt_graph *g, clt_graph_node *n,
                                        int i, bool accumulate);

/* Evaluation's batch norm bn folded into the convolution before it
 * (clt_graph_node.bn_fold): w_out = w scaled per filter (filters of them,
 * w's elements split evenly) and b_out = the bias (b, or 0 where NULL)
 * carried through bn's running statistics, gamma and beta, so that the
 * convolution by w_out plus b_out gives what bn's evaluation forward
 * gives of the convolution by w plus b (to rounding); under mixed
 * precision both rounded to fp16 (as the parameters they stand for).
 * Made only where the parameters were written since *version
 * (clt_graph.params_version when last made; 0: never), which it sets. */
clt_status clt_batchnorm_fold(clt_graph *g, clt_graph_node *bn,
                              const clt_tensor *w, const clt_tensor *b,
                              int64_t filters, clt_tensor *w_out,
                              clt_tensor *b_out, uint64_t *version);

/* A normalize layer's parameters, in n->params' order (nn/normalize.c
 * makes them, train/adapt.c fills them). */
enum { CLT_NORMALIZE_MEAN, CLT_NORMALIZE_VAR, CLT_NORMALIZE_COUNT };
/* softmax_cross_entropy's with class_weights (nn/loss.c): the weights,
 * and with `balanced` the samples they were learnt from (train/adapt.c). */
enum { CLT_LOSS_CLASS_WEIGHTS, CLT_LOSS_WEIGHTS_COUNT };

/* n's saved counter (clt_layer_ops.saved_counter), or NULL. */
uint64_t *clt_node_saved_counter(clt_graph_node *n);

/* Asks for numel elements of dtype (4-byte types) for node n, alive as
 * live says. From reserve, *slot is a view into the graph's shared
 * buffers when compile calls the layers' compile; from compile, when
 * clt_graph_compile returns. The graph owns the view: the layer must not
 * destroy it, and it is NULL again after the next compile's start. */
clt_status clt_graph_workspace(clt_graph *g, const clt_graph_node *n,
                               clt_dtype dtype, int64_t numel, clt_live live,
                               clt_tensor **slot);

/* Two workspaces of numel elements: *fwd alive in n's forward, *bwd in
 * its backward. The graph makes them one buffer, kept from the forward to
 * the backward, where that does not raise the planned memory; *kept then
 * says so when compile returns (and *bwd holds what the forward left in
 * *fwd), else the backward must make its contents again. Only from
 * reserve. */
clt_status clt_graph_workspace_keep(clt_graph *g, const clt_graph_node *n,
                                    clt_dtype dtype, int64_t numel,
                                    clt_tensor **fwd, clt_tensor **bwd,
                                    bool *kept);

/* Plans the outputs and gradients of every node (graph/memplan.c). */
clt_status clt_graph_plan_node_buffers(clt_graph *g);
/* A 0/1 switch from the environment variable name: *on -1 where it is
 * unset or empty; any other value is refused, naming it and saying what
 * (meaning) the switch does. */
clt_status clt_graph_env_switch(clt_graph *g, const char *name,
                                const char *meaning, int *on);

/* Places every request of the current round in shared device buffers and
 * hands out the views, then starts the next round. */
clt_status clt_graph_plan_place(clt_graph *g);

/* Where the plan places a buffer on ctx's device, in elements
 * (clt_graph_plan_align):
 * at least 512 bytes, a cache line or more on every device, and more
 * where the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN asks for more (POCL
 * 128 bytes, rusticl 512), up to 16 KiB, so that every tensor of the plan
 * may be a sub-buffer (ops/gemm.c hands CLBlast those). */
#define CLT_PLAN_ALIGN_ELEMS ((int64_t)128)
#define CLT_PLAN_ALIGN_MAX ((int64_t)4096)
int64_t clt_graph_plan_align(const clt_context *ctx);

/* Destroys every planned view and the shared buffers. */
void clt_graph_plan_release(clt_graph *g);

/* Declares a parameter of n (during configure). */
clt_param *clt_node_add_param(clt_graph_node *n, const char *suffix, int ndim,
                              const int64_t *shape);

/* Where a backward writes parameter k's gradient: NULL where it is not
 * trained (a frozen layer between trainable ones passes its input's
 * gradient on but computes no weight gradient, as PyTorch skips a
 * parameter with requires_grad false). */
static inline clt_tensor *clt_node_param_grad(clt_graph_node *n, int k) {
  return n->params[k].trainable ? &n->params[k].grad : NULL;
}

/* p's name as checkpoints and clt_graph_param_info give it:
 * "<node>.<suffix>" ("fc1.weight"). */
void clt_param_name(const clt_graph_node *n, const clt_param *p, char *buf,
                    size_t len);

/* Records an error naming the node; returns status. */
clt_status clt_node_fail(clt_graph *g, const clt_graph_node *n,
                         clt_status status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Formats "[a, b, c]" (per-sample shape) into buf. */
const char *clt_shape_str(int ndim, const int64_t *shape, char *buf,
                          size_t len);

/* Reports a clt_err (from the option getters) onto the context. */
clt_status clt_graph_err(clt_graph *g, clt_err *err);

/* Reads option key as "3" or "3x5" into (h, w), each at least min (0 or
 * 1: padding takes 0, sizes not); def for both when the option is absent
 * and not required. */
clt_status clt_layer_get_pair(clt_graph *g, clt_layer_args *a,
                              const char *key, bool required, int64_t min,
                              int64_t def, int64_t *h, int64_t *w);

/* CLT_ERR_SHAPE naming n where a count option (units, filters,
 * multiplier) passes 2^31 - 1, what a tensor's dimension holds: the sizes
 * made from it would overflow before the graph could refuse them. */
clt_status clt_layer_check_count(clt_graph *g, clt_graph_node *n,
                                 const char *key, int64_t value);

/* CLT_ERR_SHAPE naming n where w's padded input passes 2^31 - 1 values a
 * side (the kernels index it with int) or its kernel 2^31 - 1 taps (the
 * weight's fans, C KH KW, would overflow): w's sizes, kernel, stride,
 * dilation and padding each at most 2^31 - 1, as clt_args_get_dims
 * gives them. */
clt_status clt_layer_check_window(clt_graph *g, clt_graph_node *n,
                                  const clt_window *w);

/* A convolution's window from its line (conv2d, depthwise_conv2d):
 * kernel=K|KHxKW (required), stride=1, dilation=1, padding=N|HxW|same|
 * valid (same: stride 1 and an odd span, as PyTorch), over n's input
 * [C, H, W], the output size by PyTorch's formula; CLT_ERR_SHAPE naming
 * the node for another input shape or a window that does not fit. */
clt_status clt_layer_get_conv_window(clt_graph *g, clt_graph_node *n,
                                     clt_layer_args *a, clt_window *w);

/* The one-dimensional launches' work-group size (ctx->launch_1d), as a
 * plan of its own (plan.c): measured on the device, stored, recorded as
 * the product CLT_PLAN_LAUNCH_PRODUCT; the default where measuring is off. */
#define CLT_PLAN_LAUNCH_PRODUCT "1-d launches"
/* The element-wise kernels' runs (ctx->element_run), the same way, as the
 * product CLT_PLAN_RUNS_PRODUCT, after the group size. */
#define CLT_PLAN_RUNS_PRODUCT "element runs"
clt_status clt_graph_plan_launch(clt_graph *g);

/* Picks how product p of node n runs (what: "forward", "weight
 * gradient", "data gradient") into *plan, as the graph's plan mode says:
 * one GEMM when off; else the stored plan, or the fastest candidate timed
 * on a, b and c (clt_gemm_measure: a and b must hold finite values, c is
 * overwritten), then stored. Records the choice for clt_graph_plan_info.
 * Call from a layer's compile. */
clt_status clt_graph_plan_product(clt_graph *g, const clt_graph_node *n,
                                  const char *what, const clt_gemm_product *p,
                                  const clt_tensor *a, const clt_tensor *b,
                                  clt_tensor *c, clt_gemm_plan *plan);

/* Ways for a layer to do a larger piece of work than one product (its
 * GEMMs with the copies each needs), for clt_graph_plan_ways. */
typedef struct clt_graph_ways {
  const char *what;  /* "forward layout": the record's product */
  const char *shape; /* the record's shape and m, n, k: its main product */
  int64_t m, n, k;
  const char *key;   /* what else the times depend on (geometry, batch,
                        the plans of the parts), for the plan store */
  double flops;      /* of the work, for GFLOP/s */
  const char *names[CLT_MEASURE_MAX_WAYS]; /* at most 31 characters */
  clt_measure_work work; /* the ways, way 0 the default */
  double *seconds;       /* where not NULL: each way's time, measured or
                            stored (0: not timed, or nothing measured) */
} clt_graph_ways;

/* Picks one of w's ways for node n into *chosen as
 * clt_graph_plan_product picks a plan: way 0 when measuring is off; else
 * the stored choice, or the fastest way timed (clt_measure_ways), then
 * stored; g->test_way, where set and in range, overrides all that.
 * Records the choice for clt_graph_plan_info. */
clt_status clt_graph_plan_ways(clt_graph *g, const clt_graph_node *n,
                               const clt_graph_ways *w, int *chosen);

/* Whether this compile may measure (plan mode not off): a layer then fills
 * the operands it owns with clt_graph_plan_fill before planning. */
bool clt_graph_plans_measure(const clt_graph *g);

/* Fills t with values spread over [-1, 1] (a fixed sequence), so that a
 * measured candidate computing with the wrong operand block shows. */
clt_status clt_graph_plan_fill(clt_graph *g, clt_tensor *t);

/* CLT_OK, or CLT_ERR_INVALID_ARGUMENT ("WHAT: the graph was compiled for
 * forward passes only") where g was compiled forward-only: for the
 * backward and the optimizer's step, which need its gradients. */
clt_status clt_graph_need_backward(clt_graph *g, const char *what);

/* Every write to g->params (or to what the layers' parameter values view)
 * calls this, after enqueuing it: initialisation, loading weights, a
 * checkpoint's resume, a broadcast between ranks, early stopping's
 * restore (the optimizer's update and a training forward's batch-norm
 * statistics call clt_graph_trained_params_written below). Layers that
 * keep something made from their parameters compare g->params_version
 * (or, for a frozen weight, g->frozen_params_version) with the count
 * they made it at. */
void clt_graph_params_written(clt_graph *g);
/* The same for a write that leaves frozen weights as they were: the
 * optimizer's update (the trainable prefix only) and a training forward
 * (batch norms' running statistics). Moves params_version only. */
void clt_graph_trained_params_written(clt_graph *g);

/* Glorot/He bound for a weight with the given fans, per the init option. */
double clt_init_bound(int init_kind, int64_t fan_in, int64_t fan_out);

#endif
