/* The optimizer's state, for checkpoints that save and restore it. */
#ifndef CLT_OPTIM_OPTIMIZER_H
#define CLT_OPTIM_OPTIMIZER_H

#include "graph/graph.h"

struct clt_optimizer {
  clt_graph *g;
  clt_optimizer_options opts;
  float lr;
  int64_t step;
  clt_tensor params, grads; /* the trainable prefix of the graph's buffers */
  clt_tensor *m, *v;        /* Adam moments, or v = SGD momentum */
  clt_tensor *norm_sq;      /* [1]: the squared global norm when clipping */
};

#endif
