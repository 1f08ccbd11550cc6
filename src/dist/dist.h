/* Data-parallel training's collective steps, for the fit loop (the only
 * file that knows MPI is dist.c). With d NULL every function is a no-op
 * that returns CLT_OK, so the fit loop calls them unconditionally.
 *
 * Per training step:
 *   clt_dist_step_begin(d, mine, total);  before the forward pass
 *   forward, backward: the graph's hook (installed by clt_dist_attach)
 *                      reads finished gradient buckets to the host;
 *   clt_dist_step_end(d, st);             reduces, uploads, agrees
 *   optimizer step. */
#ifndef CLT_DIST_DIST_H
#define CLT_DIST_DIST_H

#include "graph/graph.h"

/* Collective: checks that every rank has the same parameter count, batch
 * and batches per epoch (else CLT_ERR_INVALID_ARGUMENT on every rank),
 * allocates the host buckets, installs the backward hook, gives rank r > 0
 * its own dropout stream, and broadcasts rank 0's parameters. */
clt_status clt_dist_attach(clt_dist *d, clt_graph *g, int64_t batch,
                           int64_t batches);
/* Waits for the device, removes the hook and restores the graph's seed. */
void clt_dist_detach(clt_dist *d, clt_graph *g);

/* This rank trains on `mine` of the `total` images of the global batch. */
void clt_dist_step_begin(clt_dist *d, int64_t mine, int64_t total);
/* Collective: finishes the gradient allreduce (contributing zeros where
 * this rank failed or had no images), uploads the averaged gradients, and
 * agrees on st (see clt_dist_agree). */
clt_status clt_dist_step_end(clt_dist *d, clt_graph *g, clt_status st);

/* Collective: sums loss and accuracy (weighted by samples) and samples. */
clt_status clt_dist_reduce_metrics(clt_dist *d, clt_graph *g, clt_metrics *m);
/* Adds an epoch's training wall time to the counters. */
void clt_dist_add_train_time(clt_dist *d, double seconds);

/* Collective: rank 0's n doubles to every rank. */
clt_status clt_dist_broadcast(clt_dist *d, clt_graph *g, double *v, int n);

#endif
