/* Mini-batch loader: a background thread shuffles, augments and scales the
 * next batches into a ring of host buffers while the caller trains on the
 * current one.
 *
 * Use per epoch:
 *   clt_loader_start_epoch(l, epoch);
 *   while (clt_loader_next(l, &b)) { upload b.images, b.labels;
 *                                    clt_loader_release(l, &b); train; }
 *
 * Results depend only on the dataset, the options and the epoch number,
 * never on thread timing. Every buffer is allocated by clt_loader_create;
 * an epoch allocates nothing. One thread drives a loader; the loader
 * borrows the dataset, which must outlive it. */
#ifndef CLT_DATA_LOADER_H
#define CLT_DATA_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "data/dataset.h"

typedef struct clt_loader_options {
  int batch;     /* images per batch, >= 1 */
  bool shuffle;  /* a new permutation every epoch */
  uint64_t seed; /* for shuffling and augmentation */
  int pad_crop;  /* random crop after zero padding by this many pixels;
                    0 = off */
  bool hflip;    /* random horizontal flip, probability 1/2 */
  int depth;     /* ring size, >= 2; 0 means the default, 3 */
  /* Data parallelism: the epoch's order is cut into global batches of
   * batch * shard_count images, and this loader hands out shard
   * shard_rank of each: images [r*m/S, (r+1)*m/S) of a global batch of m
   * (so the last, partial one is split as evenly as can be, and a shard
   * may be empty). Augmentation draws as one loader of the global batch
   * would. shard_count 0 or 1: no sharding. */
  int shard_rank, shard_count;
  /* A dataset of u8 pixels is handed out as those bytes (clt_host_batch
   * .bytes, .images NULL), for a device to scale: a quarter of the upload
   * and no per-pixel work on the host. f32 datasets stay floats. */
  bool bytes;
  /* Where the ring's buffers (images or bytes, labels, targets) come
   * from: alloc returns bytes of memory, or NULL when it has none, and
   * may set *handle for free_buffer, which gives it back. NULL: malloc
   * and free. The fit loop hands out pinned host memory, which a GPU
   * reads by DMA; a loader of any allocator gives the same batches. */
  void *(*alloc)(void *user, size_t bytes, void **handle);
  void (*free_buffer)(void *user, void *ptr, void *handle);
  void *alloc_user;
} clt_loader_options;

typedef struct clt_host_batch {
  int slot;        /* ring slot, for clt_loader_release */
  int64_t n;       /* images in this batch (the last may be partial) */
  /* Images in the global batch this is a shard of (n without sharding). */
  int64_t global_n;
  float *images;   /* n * C * H * W: u8 pixels / 255 in [0, 1], f32 as is;
                      NULL where bytes holds them */
  /* n * C * H * W pixel bytes as the dataset holds them (after the same
   * augmentation; 0 outside a crop), where options.bytes asked and the
   * dataset is u8; else NULL. The buffer has room for a multiple of 4. */
  uint8_t *bytes;
  int32_t *labels; /* n, or NULL for a dataset of targets */
  float *targets;  /* n * target_size, or NULL for a dataset of labels */
} clt_host_batch;

typedef struct clt_loader clt_loader;

/* The float a pixel byte v becomes, v / 255 in [0, 1], for every v: what
 * the loader hands out, and what a device given the bytes must make. */
void clt_loader_byte_values(float values[256]);

/* Fills opts with the defaults: batch 32, shuffle on, seed 0, no
 * augmentation, depth 3. */
void clt_loader_options_init(clt_loader_options *opts);

/* Allocates the ring (depth buffers of one batch each) and starts the
 * thread, which idles until the first epoch. On success the caller owns
 * *out and destroys it with clt_loader_destroy. CLT_ERR_INVALID_ARGUMENT
 * for a bad option or an empty dataset, CLT_ERR_HOST_MEMORY when the ring
 * or the thread cannot be had. */
clt_status clt_loader_create(const clt_dataset *ds,
                             const clt_loader_options *opts, clt_loader **out,
                             clt_err *err);

/* Begins epoch `epoch`: the order is the identity without shuffle, else a
 * Fisher-Yates permutation from clt_rng_derive(seed, CLT_RNG_SHUFFLE,
 * epoch); augmentation draws from clt_rng_derive(seed, CLT_RNG_AUGMENT,
 * epoch) image by image in batch order. Batches of an unfinished epoch are
 * discarded; batches the caller still holds stay valid until released.
 * Waits at most for the batch the thread is preparing. */
clt_status clt_loader_start_epoch(clt_loader *l, int epoch);

/* Blocks until the next batch of the epoch is ready and hands it over in
 * *out; the caller may read its memory until clt_loader_release. Returns
 * false at the end of the epoch (after batches_per_epoch batches), before
 * the first epoch, and when the caller holds every slot of the ring (hold
 * at most depth - 1 batches, or it would wait forever). */
bool clt_loader_next(clt_loader *l, clt_host_batch *out);

/* Gives the batch's slot back for refilling: call once the caller is done
 * with its host memory (uploaded it). */
void clt_loader_release(clt_loader *l, const clt_host_batch *b);

/* The ring's slots (options.depth, or the default). */
int clt_loader_depth(const clt_loader *l);

/* ceil(count / (batch * shard_count)). */
int64_t clt_loader_batches_per_epoch(const clt_loader *l);

/* Stops and joins the thread and frees the ring; safe mid-epoch. Batches
 * still held become invalid. Accepts NULL. */
void clt_loader_destroy(clt_loader *l);

#endif
