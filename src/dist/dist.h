/* Data-parallel training's collective steps, for the fit loop (the only
 * file that knows MPI is dist.c). With d NULL every function is a no-op
 * that returns CLT_OK, so the fit loop calls them unconditionally.
 *
 * Per training step:
 *   clt_dist_step_begin(d, mine, total);  before the forward pass
 *   forward, backward: the graph's hook (installed by clt_dist_attach)
 *                      reads finished gradient buckets to the host;
 *   clt_dist_step_end(d, st);             reduces, uploads, agrees
 *   optimizer step.
 * (clt_dist_attach, clt_dist_detach, clt_dist_step_begin and
 * clt_dist_step_end are public: a program's own loop uses them too.) */
#ifndef CLT_DIST_DIST_H
#define CLT_DIST_DIST_H

#include "graph/graph.h"

/* clt_dist_step_end, agreeing on a stop request too: *stop is this
 * rank's (a clt_fit_stop value) on entry and the largest any rank made on
 * return, the same on every rank (with d NULL, unchanged). */
clt_status clt_dist_step_end_stop(clt_dist *d, clt_graph *g, clt_status st,
                                  int *stop);
/* Collective: sums loss and accuracy (weighted by samples) and samples. */
clt_status clt_dist_reduce_metrics(clt_dist *d, clt_graph *g, clt_metrics *m);
/* Adds a training epoch's figures (its wall time less kernel builds, its
 * device time and the host's waits) to the counters. */
void clt_dist_add_epoch(clt_dist *d, const clt_epoch_stats *es);

/* Collective: rank 0's n doubles to every rank. */
clt_status clt_dist_broadcast(clt_dist *d, clt_graph *g, double *v, int n);
/* Collective, on an attached graph: rank 0's parameters (the weights,
 * which every rank holds the same already, and the batch-norm running
 * statistics, which differ) to every rank, so that all evaluate rank 0's
 * model (as DistributedDataParallel's broadcast_buffers). */
clt_status clt_dist_sync_params(clt_dist *d, clt_graph *g);

#endif
