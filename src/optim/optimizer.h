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
  /* Schedules: the rate of the epoch before warm-up, and where in it. */
  float epoch_lr;
  int epoch;
  int64_t epoch_step, steps_per_epoch; /* 0: warm up by epochs */
  /* PLATEAU: the factor reached, the best loss, epochs since it. */
  float plateau_scale;
  double plateau_best;
  int plateau_wait;
};

/* Steps in an epoch, so that warm-up rises step by step (clt_fit). */
void clt_optimizer_set_steps_per_epoch(clt_optimizer *o, int64_t steps);

#endif
