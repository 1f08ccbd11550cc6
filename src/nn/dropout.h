/* What checkpoints need from the dropout layer: its generator counter. */
#ifndef CLT_NN_DROPOUT_H
#define CLT_NN_DROPOUT_H

#include "graph/graph.h"

/* The counter that drives n's random masks (training forwards so far), to
 * save and restore with a checkpoint; NULL if n is not a dropout layer or
 * has no state yet. */
uint64_t *clt_dropout_counter(clt_graph_node *n);

#endif
