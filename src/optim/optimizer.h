/* The optimizer's state, for checkpoints that save and restore it, and
 * what clt_fit tells it. */
#ifndef CLT_OPTIM_OPTIMIZER_H
#define CLT_OPTIM_OPTIMIZER_H

#include "graph/graph.h"

/* What checkpoints save of an optimizer, and restore (io/checkpoint.c):
 * read through these, the optimizer's own structure stays its own. */
typedef struct clt_optimizer_saved {
  const clt_graph *g;
  const clt_optimizer_options *opts;
  int64_t step;      /* updates done */
  clt_tensor *m, *v; /* Adam's moments, or v = SGD's momentum, or
                        RMSprop's mean square (v) and momentum (m); NULL
                        where the optimizer keeps none */
  clt_tensor *avg;   /* RMSprop centered: the mean gradient, else NULL */
  clt_loss_scaler *scaler; /* attached (mixed precision), else NULL */
} clt_optimizer_saved;

void clt_optimizer_saved_state(const clt_optimizer *o,
                               clt_optimizer_saved *out);
/* Sets the count of updates done (a resumed run). */
void clt_optimizer_restore_step(clt_optimizer *o, int64_t step);
/* CLT_ERR_INVALID_ARGUMENT (what: the caller) when clt_graph_set_trainable
 * changed the graph's trainable parameters after o was made. */
clt_status clt_optimizer_check_layout(const clt_optimizer *o,
                                      const char *what);

/* Steps in an epoch, so that warm-up rises step by step (clt_fit). */
void clt_optimizer_set_steps_per_epoch(clt_optimizer *o, int64_t steps);

/* A loss scaler's state, as checkpoints save it. */
typedef struct clt_loss_scaler_state {
  double scale;
  int64_t clean, steps, skipped;
} clt_loss_scaler_state;

void clt_loss_scaler_get_state(const clt_loss_scaler *s,
                               clt_loss_scaler_state *out);
/* CLT_ERR_FORMAT for a state no scaler can be in (a corrupt file). */
clt_status clt_loss_scaler_set_state(clt_loss_scaler *s,
                                     const clt_loss_scaler_state *in);

#endif
