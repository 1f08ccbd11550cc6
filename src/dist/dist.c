/* Data-parallel training over MPI: the one file that includes mpi.h.
 *
 * The trainable part of the gradient buffer (g->grads: the trained
 * parameters first, in node order, then frozen layers' and statistics,
 * which have no gradient to share) is cut into buckets from its end,
 * because the backward pass finishes the last layers' gradients first.
 * The graph's hook enqueues a non-blocking read of each bucket as soon
 * as the nodes covering it have enqueued their backward;
 * clt_dist_step_end then starts an MPI_Iallreduce per bucket, in bucket
 * order on every rank, as each read completes, while the device is still
 * computing the earlier layers' gradients. */
#include "dist/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/rng.h"
#include "tensor/tensor.h"

#ifdef CLT_HAVE_MPI
#include <mpi.h>
#endif

/* Elements per bucket: 1 MiB of floats, small enough that the first
 * buckets start early, large enough that MPI's per-call cost is lost. */
#define DIST_BUCKET_ELEMS (256 * 1024)

enum { BUCKET_WAITING, BUCKET_READING, BUCKET_REDUCING, BUCKET_DONE };

typedef struct dist_bucket {
  int64_t start, n; /* elements of g->grads */
  int state;
  cl_event read; /* BUCKET_READING: the read's event, or NULL (zeros) */
#ifdef CLT_HAVE_MPI
  MPI_Request req;
#endif
} dist_bucket;

struct clt_dist {
#ifdef CLT_HAVE_MPI
  MPI_Comm comm;
  bool owns_mpi; /* we called MPI_Init_thread: we finalise */
#endif
  int rank, size;
  bool failed_together;
  /* Attached graph's state. */
  clt_graph *g;
  float *host;   /* host copy of g->grads (the weights' too: param_count) */
  int64_t reduced; /* the elements shared: the trainable prefix */
  dist_bucket *buckets;
  int nbuckets, next_read;
  uint64_t saved_seed;
  bool idle;      /* no images this step: contributes zeros */
  double t_begin; /* this step's start */
  clt_dist_stats stats;
};

CLT_API int clt_dist_rank(const clt_dist *d) { return d ? d->rank : 0; }
CLT_API int clt_dist_size(const clt_dist *d) { return d ? d->size : 1; }

CLT_API bool clt_dist_failed_together(const clt_dist *d) {
  return d && d->failed_together;
}

void clt_dist_add_epoch(clt_dist *d, const clt_epoch_stats *es) {
  if (!d)
    return;
  d->stats.train_seconds += es->seconds - es->compile_seconds;
  d->stats.device_seconds += es->device_seconds;
  d->stats.wait_data_seconds += es->wait_data_seconds;
  d->stats.wait_device_seconds += es->wait_device_seconds;
}

CLT_API void clt_dist_stats_get(const clt_dist *d, clt_dist_stats *s) {
  if (d)
    *s = d->stats;
  else
    memset(s, 0, sizeof *s);
}

#ifndef CLT_HAVE_MPI

CLT_API bool clt_dist_available(void) { return false; }

CLT_API clt_status clt_dist_create(void *mpi_comm, clt_dist **out, char *err,
                                   size_t errlen) {
  (void)mpi_comm;
  *out = NULL;
  if (err && errlen)
    snprintf(err, errlen,
             "this cltrain was built without MPI (meson "
             "-Dmpi=enabled, with Debian's libopenmpi-dev)");
  return CLT_ERR_UNSUPPORTED;
}

CLT_API clt_status clt_dist_agree(clt_dist *d, clt_context *ctx,
                                  clt_status st) {
  (void)d;
  (void)ctx;
  return st;
}

CLT_API void clt_dist_abort(clt_dist *d, int code) {
  (void)d;
  (void)code;
}

CLT_API void clt_dist_destroy(clt_dist *d) { free(d); }

clt_status clt_dist_attach(clt_dist *d, clt_graph *g, int64_t batch,
                           int64_t batches) {
  (void)d, (void)g, (void)batch, (void)batches;
  return CLT_OK;
}
void clt_dist_detach(clt_dist *d, clt_graph *g) { (void)d, (void)g; }
void clt_dist_step_begin(clt_dist *d, int64_t mine, int64_t total) {
  (void)d, (void)mine, (void)total;
}
clt_status clt_dist_step_end(clt_dist *d, clt_graph *g, clt_status st) {
  (void)d, (void)g;
  return st;
}
clt_status clt_dist_step_end_stop(clt_dist *d, clt_graph *g, clt_status st,
                                  int *stop) {
  (void)d, (void)g, (void)stop;
  return st;
}
CLT_API clt_status clt_dist_stats_gather(clt_dist *d, clt_dist_stats *all) {
  clt_dist_stats_get(d, all);
  return CLT_OK;
}
clt_status clt_dist_reduce_metrics(clt_dist *d, clt_graph *g, clt_metrics *m) {
  (void)d, (void)g, (void)m;
  return CLT_OK;
}
clt_status clt_dist_broadcast(clt_dist *d, clt_graph *g, double *v, int n) {
  (void)d, (void)g, (void)v, (void)n;
  return CLT_OK;
}
clt_status clt_dist_sync_params(clt_dist *d, clt_graph *g) {
  (void)d, (void)g;
  return CLT_OK;
}

#else /* CLT_HAVE_MPI */

CLT_API bool clt_dist_available(void) { return true; }

static void mpi_message(int code, char *buf, size_t len) {
  char s[MPI_MAX_ERROR_STRING];
  int n = 0;
  if (MPI_Error_string(code, s, &n) != MPI_SUCCESS)
    n = 0;
  s[n] = '\0';
  snprintf(buf, len, "%s", n ? s : "unknown MPI error");
}

/* Turns an MPI error code into CLT_ERR_INTERNAL on ctx. (MPI's default
 * handler aborts the job; the communicator gets MPI_ERRORS_RETURN.) */
static clt_status mpi_fail(clt_context *ctx, int code, const char *what) {
  char m[MPI_MAX_ERROR_STRING + 1];
  mpi_message(code, m, sizeof m);
  return clt_ctx_fail(ctx, CLT_ERR_INTERNAL, "MPI: %s: %s", what, m);
}

#define MPI_TRY(ctx, call, what)                                               \
  do {                                                                         \
    int mpi_rc_ = (call);                                                      \
    if (mpi_rc_ != MPI_SUCCESS)                                                \
      return mpi_fail((ctx), mpi_rc_, (what));                                 \
  } while (0)

CLT_API clt_status clt_dist_create(void *mpi_comm, clt_dist **out, char *err,
                                   size_t errlen) {
  *out = NULL;
  clt_dist *d = calloc(1, sizeof *d);
  if (!d)
    return CLT_ERR_HOST_MEMORY;
  int inited = 0, rc = MPI_SUCCESS;
  MPI_Initialized(&inited);
  if (!inited) {
    if (mpi_comm) {
      free(d);
      if (err && errlen)
        snprintf(err, errlen,
                 "clt_dist_create: a communicator was given but "
                 "MPI is not initialised");
      return CLT_ERR_INVALID_ARGUMENT;
    }
    /* One thread at a time calls MPI: the one in clt_fit (which need not
     * be the main thread). */
    int provided = 0;
    rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    d->owns_mpi = rc == MPI_SUCCESS;
  }
  if (rc == MPI_SUCCESS)
    rc = MPI_Comm_dup(mpi_comm ? *(MPI_Comm *)mpi_comm : MPI_COMM_WORLD,
                      &d->comm);
  if (rc == MPI_SUCCESS) {
    MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(d->comm, &d->rank);
    MPI_Comm_size(d->comm, &d->size);
  }
  if (rc != MPI_SUCCESS) {
    if (err && errlen) {
      char m[MPI_MAX_ERROR_STRING + 1];
      mpi_message(rc, m, sizeof m);
      snprintf(err, errlen, "MPI could not start: %s", m);
    }
    if (d->owns_mpi)
      MPI_Finalize();
    free(d);
    return CLT_ERR_UNSUPPORTED;
  }
  *out = d;
  return CLT_OK;
}

CLT_API void clt_dist_destroy(clt_dist *d) {
  if (!d)
    return;
  MPI_Comm_free(&d->comm);
  if (d->owns_mpi) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Finalize();
  }
  free(d);
}

CLT_API void clt_dist_abort(clt_dist *d, int code) {
  if (!d)
    return;
  MPI_Abort(d->comm, code);
}

/* clt_dist_agree, and where stop is not NULL the largest of the ranks'
 * *stop in the same allreduce (the minimum of their negatives). */
static clt_status agree(clt_dist *d, clt_context *ctx, clt_status st,
                        int *stop) {
  d->failed_together = false;
  /* The lowest failing rank, or size when none failed. */
  int mine[2] = {st != CLT_OK ? d->rank : d->size, stop ? -*stop : 0};
  int all[2] = {d->size, 0};
  MPI_TRY(ctx, MPI_Allreduce(mine, all, stop ? 2 : 1, MPI_INT, MPI_MIN,
                             d->comm),
          "agreeing on errors");
  if (stop)
    *stop = -all[1];
  int first = all[0];
  if (first == d->size)
    return CLT_OK;
  struct {
    int status;
    char msg[CLT_ERR_MSG_MAX - 32];
  } e = {0};
  if (d->rank == first) {
    e.status = (int)st;
    snprintf(e.msg, sizeof e.msg, "%s", clt_context_last_error(ctx));
  }
  MPI_TRY(ctx, MPI_Bcast(&e, (int)sizeof e, MPI_BYTE, first, d->comm),
          "sending an error");
  e.msg[sizeof e.msg - 1] = '\0';
  d->failed_together = true;
  /* The failing rank's own message gets the prefix too: every rank then
   * prints the same line. */
  if (strncmp(e.msg, "rank ", 5) == 0)
    return clt_ctx_fail(ctx, (clt_status)e.status, "%s", e.msg);
  return clt_ctx_fail(ctx, (clt_status)e.status, "rank %d: %s", first, e.msg);
}

CLT_API clt_status clt_dist_agree(clt_dist *d, clt_context *ctx,
                                  clt_status st) {
  if (!d)
    return st;
  return agree(d, ctx, st, NULL);
}

/* ---- the gradient buckets ----------------------------------------------- */

static clt_status grads_final(clt_graph *g, int64_t final_from, void *user);

static void release_reads(clt_dist *d) {
  for (int b = 0; b < d->nbuckets; b++) {
    if (d->buckets[b].read)
      clReleaseEvent(d->buckets[b].read);
    d->buckets[b].read = NULL;
  }
}

clt_status clt_dist_attach(clt_dist *d, clt_graph *g, int64_t batch,
                           int64_t batches) {
  if (!d)
    return CLT_OK;
  clt_context *ctx = g->ctx;
  int64_t n = clt_graph_parameter_count(g); /* the trainable prefix */
  long long mine[4] = {(long long)g->param_count, (long long)n,
                       (long long)batch, (long long)batches};
  long long lo[4], hi[4];
  MPI_TRY(ctx, MPI_Allreduce(mine, lo, 4, MPI_LONG_LONG, MPI_MIN, d->comm),
          "comparing ranks");
  MPI_TRY(ctx, MPI_Allreduce(mine, hi, 4, MPI_LONG_LONG, MPI_MAX, d->comm),
          "comparing ranks");
  if (memcmp(lo, hi, sizeof lo) != 0)
    return clt_ctx_fail(
        ctx, CLT_ERR_INVALID_ARGUMENT,
        "the ranks differ: parameters %lld to %lld, trainable %lld to %lld "
        "(frozen layers), batch %lld to %lld, batches per epoch %lld to "
        "%lld (every rank needs the same model, options and data)",
        lo[0], hi[0], lo[1], hi[1], lo[2], hi[2], lo[3], hi[3]);
  d->reduced = n;
  d->nbuckets =
      n > 0 ? (int)((n + DIST_BUCKET_ELEMS - 1) / DIST_BUCKET_ELEMS) : 0;
  int64_t all = g->param_count; /* the weights' broadcast uses host too */
  d->host = malloc((size_t)(all > 0 ? all : 1) * sizeof *d->host);
  d->buckets =
      calloc((size_t)(d->nbuckets > 0 ? d->nbuckets : 1), sizeof *d->buckets);
  if (!d->host || !d->buckets) {
    free(d->host);
    free(d->buckets);
    d->host = NULL;
    d->buckets = NULL;
    return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "gradient buckets");
  }
  /* Bucket 0 holds the last elements: the first to be final. */
  for (int b = 0; b < d->nbuckets; b++) {
    int64_t end = n - (int64_t)b * DIST_BUCKET_ELEMS;
    int64_t start = end > DIST_BUCKET_ELEMS ? end - DIST_BUCKET_ELEMS : 0;
    d->buckets[b].start = start;
    d->buckets[b].n = end - start;
    d->buckets[b].state = BUCKET_DONE;
  }
  d->g = g;
  snprintf(d->stats.device, sizeof d->stats.device, "%.*s",
           (int)sizeof d->stats.device - 1, ctx->info.name);
  g->grads_final = grads_final;
  g->grads_final_user = d;
  /* Dropout: rank 0 keeps the graph's stream, the others draw their own
   * (the same masks on every rank would correlate the replicas). */
  d->saved_seed = g->seed;
  if (d->rank > 0) {
    clt_rng r = clt_rng_derive(g->seed, CLT_RNG_DROPOUT,
                               0x100000000ull + (uint64_t)d->rank);
    g->seed = clt_rng_next(&r);
  }
  /* Rank 0's weights (and batch-norm statistics) everywhere. */
  return clt_dist_sync_params(d, g);
}

clt_status clt_dist_sync_params(clt_dist *d, clt_graph *g) {
  if (!d || g->param_count == 0)
    return CLT_OK;
  if (d->g != g)
    return clt_ctx_fail(g->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "sharing the weights: the graph is not attached");
  /* The download waits for the queue, so for any upload still reading
   * d->host too. A rank whose download fails must not leave the others
   * waiting in the broadcast: they agree first. */
  CLT_TRY(clt_dist_agree(d, g->ctx, clt_tensor_download(g->params, d->host)));
  MPI_TRY(g->ctx,
          MPI_Bcast(d->host, (int)g->param_count, MPI_FLOAT, 0, d->comm),
          "broadcasting the weights");
  if (d->rank == 0)
    return CLT_OK;
  clt_status st = clt_tensor_upload(g->params, d->host);
  clt_graph_params_written(g);
  return st;
}

void clt_dist_detach(clt_dist *d, clt_graph *g) {
  if (!d || d->g != g)
    return;
  clt_context_finish(g->ctx); /* the last upload reads d->host */
  release_reads(d);
  g->grads_final = NULL;
  g->grads_final_user = NULL;
  g->grad_batch = 0;
  g->seed = d->saved_seed;
  free(d->host);
  free(d->buckets);
  d->host = NULL;
  d->buckets = NULL;
  d->nbuckets = 0;
  d->g = NULL;
}

void clt_dist_step_begin(clt_dist *d, int64_t mine, int64_t total) {
  if (!d || !d->g)
    return;
  d->t_begin = clt_now_seconds();
  /* The loss's gradient averages over the global batch, so a rank's
   * gradients are its share of the global mean already: summed, they are
   * one process's (up to the order of the sums), at the scale a loss scaler
   * sees in one process. */
  d->g->grad_batch = total;
  d->idle = mine == 0;
  d->next_read = 0;
  for (int b = 0; b < d->nbuckets; b++)
    d->buckets[b].state = BUCKET_WAITING;
  d->stats.images += mine;
}

/* Enqueues the read of bucket b (without waiting). */
static clt_status read_bucket(clt_dist *d, int b) {
  clt_graph *g = d->g;
  dist_bucket *k = &d->buckets[b];
  size_t at = (size_t)(g->grads->offset + k->start) * sizeof(float);
  cl_int rc = clEnqueueReadBuffer(g->ctx->queue, g->grads->buffer, CL_FALSE, at,
                                  (size_t)k->n * sizeof(float),
                                  d->host + k->start, 0, NULL, &k->read);
  if (rc != CL_SUCCESS) {
    k->read = NULL;
    return clt_ctx_fail(g->ctx, CLT_ERR_OPENCL,
                        "reading gradients for the allreduce: OpenCL error "
                        "%d",
                        (int)rc);
  }
  k->state = BUCKET_READING;
  return CLT_OK;
}

/* The backward hook: everything from final_from on is final. */
static clt_status grads_final(clt_graph *g, int64_t final_from, void *user) {
  clt_dist *d = user;
  bool any = false;
  while (d->next_read < d->nbuckets &&
         d->buckets[d->next_read].start >= final_from) {
    CLT_TRY(read_bucket(d, d->next_read++));
    any = true;
  }
  /* Have the device start the reads after what it is computing. */
  if (any)
    clFlush(g->ctx->queue);
  return CLT_OK;
}

/* 1: the read of bucket k has completed; 0: not yet; -1: it failed. */
static int read_done(const dist_bucket *k) {
  if (!k->read)
    return 1;
  cl_int s = CL_QUEUED;
  if (clGetEventInfo(k->read, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s,
                     NULL) != CL_SUCCESS)
    return -1;
  return s == CL_COMPLETE ? 1 : s < 0 ? -1 : 0;
}

clt_status clt_dist_step_end(clt_dist *d, clt_graph *g, clt_status st) {
  return clt_dist_step_end_stop(d, g, st, NULL);
}

clt_status clt_dist_step_end_stop(clt_dist *d, clt_graph *g, clt_status st,
                                  int *stop) {
  if (!d || !d->g)
    return st;
  clt_context *ctx = g->ctx;
  bool zeros = st != CLT_OK || d->idle;
  /* What the hook has not read yet: every node's backward is enqueued now
   * (or failed, or never ran). */
  while (st == CLT_OK && !d->idle && d->next_read < d->nbuckets) {
    st = read_bucket(d, d->next_read++);
    if (st != CLT_OK)
      zeros = true;
  }
  if (d->nbuckets > 0)
    clFlush(ctx->queue);
  /* Start each bucket's allreduce, in order, once its read is done. */
  double t_local_done = 0.0;
  int started = 0, finished = 0;
  int mpi_rc = MPI_SUCCESS;
  while (finished < d->nbuckets && mpi_rc == MPI_SUCCESS) {
    bool progress = false;
    if (started < d->nbuckets) {
      dist_bucket *k = &d->buckets[started];
      int done = k->state == BUCKET_READING ? read_done(k) : 1;
      if (zeros && k->read) {
        clWaitForEvents(1, &k->read); /* before the memset below */
        done = 1;
      }
      if (done != 0) {
        if (done < 0 && st == CLT_OK) {
          st = clt_ctx_fail(ctx, CLT_ERR_OPENCL,
                            "reading gradients for the allreduce failed");
          zeros = true;
        }
        float *v = d->host + k->start;
        if (zeros)
          memset(v, 0, (size_t)k->n * sizeof *v);
        mpi_rc = MPI_Iallreduce(MPI_IN_PLACE, v, (int)k->n, MPI_FLOAT, MPI_SUM,
                                d->comm, &k->req);
        k->state = BUCKET_REDUCING;
        started++;
        progress = true;
        if (started == d->nbuckets)
          t_local_done = clt_now_seconds();
        continue;
      }
    }
    /* Once every bucket is in flight there is nothing left to overlap:
     * MPI_Wait runs the collectives' rounds back to back (Test between
     * naps took 0.5 ms for a 900 KB sum that MPI_Allreduce does in 0.12
     * between two ranks here). */
    bool all_started = started == d->nbuckets;
    for (int b = finished; b < started && mpi_rc == MPI_SUCCESS; b++) {
      int flag = 0;
      if (all_started) {
        mpi_rc = MPI_Wait(&d->buckets[b].req, MPI_STATUS_IGNORE);
        flag = 1;
      } else {
        mpi_rc = MPI_Test(&d->buckets[b].req, &flag, MPI_STATUS_IGNORE);
      }
      if (!flag)
        break;
      d->buckets[b].state = BUCKET_DONE;
      finished = b + 1;
      progress = true;
    }
    if (!progress) {
      if (started == finished && started < d->nbuckets) {
        /* Nothing in flight: sleep on the device instead of spinning. */
        clWaitForEvents(1, &d->buckets[started].read);
      } else {
        struct timespec nap = {0, 50000};
        nanosleep(&nap, NULL);
      }
    }
  }
  release_reads(d);
  if (mpi_rc != MPI_SUCCESS)
    return mpi_fail(ctx, mpi_rc, "gradient allreduce");
  double t_end = clt_now_seconds();
  if (d->nbuckets > 0) {
    d->stats.wait_seconds += t_end - t_local_done;
    if (st == CLT_OK) {
      cl_int rc = clEnqueueWriteBuffer(ctx->queue, g->grads->buffer, CL_FALSE,
                                       (size_t)g->grads->offset * sizeof(float),
                                       (size_t)d->reduced * sizeof(float),
                                       d->host, 0, NULL, NULL);
      if (rc != CL_SUCCESS)
        st = clt_ctx_fail(ctx, CLT_ERR_OPENCL,
                          "uploading the reduced gradients: OpenCL error %d",
                          (int)rc);
    }
  }
  d->stats.steps++;
  d->stats.step_seconds += t_end - d->t_begin;
  return agree(d, ctx, st, stop);
}

clt_status clt_dist_reduce_metrics(clt_dist *d, clt_graph *g, clt_metrics *m) {
  if (!d)
    return CLT_OK;
  /* NaN (the accuracy of mse, the mae of a classifier) stays NaN */
  double v[4] = {m->loss * (double)m->samples, m->accuracy * (double)m->samples,
                 m->mae * (double)m->samples, (double)m->samples};
  MPI_TRY(g->ctx,
          MPI_Allreduce(MPI_IN_PLACE, v, 4, MPI_DOUBLE, MPI_SUM, d->comm),
          "summing the metrics");
  double count = v[3] > 0 ? v[3] : 1.0;
  m->loss = v[0] / count;
  m->accuracy = v[1] / count;
  m->mae = v[2] / count;
  m->samples = (int64_t)v[3];
  return CLT_OK;
}

CLT_API clt_status clt_dist_stats_gather(clt_dist *d, clt_dist_stats *all) {
  if (!d) {
    clt_dist_stats_get(d, all);
    return CLT_OK;
  }
  enum { NAME = sizeof d->stats.device, NV = 8 };
  double mine[NV] = {(double)d->stats.steps, (double)d->stats.images,
                     d->stats.step_seconds, d->stats.wait_seconds,
                     d->stats.train_seconds, d->stats.device_seconds,
                     d->stats.wait_data_seconds,
                     d->stats.wait_device_seconds};
  double *v = malloc((size_t)d->size * sizeof mine);
  char *names = malloc((size_t)d->size * NAME);
  if (!v || !names) {
    free(v);
    free(names);
    return CLT_ERR_HOST_MEMORY;
  }
  int rc = MPI_Allgather(mine, NV, MPI_DOUBLE, v, NV, MPI_DOUBLE, d->comm);
  if (rc == MPI_SUCCESS)
    rc = MPI_Allgather(d->stats.device, NAME, MPI_CHAR, names, NAME, MPI_CHAR,
                       d->comm);
  for (int r = 0; rc == MPI_SUCCESS && r < d->size; r++) {
    const double *w = v + (size_t)NV * r;
    all[r] = (clt_dist_stats){.steps = (int64_t)w[0],
                              .images = (int64_t)w[1],
                              .step_seconds = w[2],
                              .wait_seconds = w[3],
                              .train_seconds = w[4],
                              .device_seconds = w[5],
                              .wait_data_seconds = w[6],
                              .wait_device_seconds = w[7]};
    memcpy(all[r].device, names + (size_t)r * NAME, NAME);
    all[r].device[NAME - 1] = '\0';
  }
  free(v);
  free(names);
  return rc == MPI_SUCCESS ? CLT_OK : CLT_ERR_INTERNAL;
}

clt_status clt_dist_broadcast(clt_dist *d, clt_graph *g, double *v, int n) {
  if (!d)
    return CLT_OK;
  MPI_TRY(g->ctx, MPI_Bcast(v, n, MPI_DOUBLE, 0, d->comm),
          "broadcasting rank 0's results");
  return CLT_OK;
}

#endif /* CLT_HAVE_MPI */
