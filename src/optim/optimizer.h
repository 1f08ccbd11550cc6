/* The optimizer's state, for checkpoints that save and restore it. */
#ifndef CLT_OPTIM_OPTIMIZER_H
#define CLT_OPTIM_OPTIMIZER_H

#include "graph/graph.h"

/* Steps the host may enqueue ahead of the device. */
#define CLT_STEPS_IN_FLIGHT 3

struct clt_optimizer {
  clt_graph *g;
  clt_optimizer_options opts;
  float lr;
  int64_t step;
  clt_tensor params, grads; /* the trainable prefix of the graph's buffers */
  clt_tensor *m, *v;        /* Adam moments, or v = SGD momentum */
  clt_tensor *norm_sq;      /* [1]: the squared global norm when clipping */
  /* Markers of the last CLT_STEPS_IN_FLIGHT steps (see clt_optimizer_step). */
  cl_event in_flight[CLT_STEPS_IN_FLIGHT];
};

#endif
