/* The normalize layers' statistics (nn/normalize.c) from a dataset. */
#ifndef CLT_TRAIN_ADAPT_H
#define CLT_TRAIN_ADAPT_H

#include "graph/graph.h"

/* Learns every normalize layer's mean and variance from ds, or with
 * only_new only those of layers not adapted yet (their count 0: a new
 * model, not one resumed or loaded); *adapted (may be NULL) counts the
 * layers done. clt_graph_adapt is (g, ds, false, NULL). */
clt_status clt_graph_adapt_new(clt_graph *g, const clt_dataset *ds,
                               bool only_new, int *adapted);

#endif
