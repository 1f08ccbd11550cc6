/* Batch loader: one worker thread fills ring slots in batch order.
 *
 * A slot goes FREE -> FILLING (worker, outside the lock) -> READY ->
 * HELD (caller) -> FREE (clt_loader_release). Because a single thread fills
 * batches strictly in order, the augmentation stream is consumed in batch
 * order and the results never depend on timing. The order array and the
 * augmentation stream change only in clt_loader_start_epoch, which first
 * waits for the worker to finish the slot it is filling. */
#include "data/loader.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"

#define LOADER_DEFAULT_DEPTH 3

typedef enum loader_slot_state {
  LOADER_SLOT_FREE,
  LOADER_SLOT_FILLING,
  LOADER_SLOT_READY,
  LOADER_SLOT_HELD,
} loader_slot_state;

typedef struct loader_slot {
  loader_slot_state state;
  int64_t batch; /* index within the epoch, while FILLING or READY */
  int64_t n;     /* images filled */
  int64_t global_n;
  float *images;
  uint8_t *bytes;
  int32_t *labels;
  float *targets;
  /* opts.alloc's handles of images, bytes, labels and targets. */
  void *handles[4];
} loader_slot;

struct clt_loader {
  const clt_dataset *ds; /* borrowed */
  clt_loader_options opts;
  int64_t image_size; /* C * H * W */
  int64_t nbatches;
  int64_t *order;   /* dataset index of each position in the epoch */
  bool bytes;       /* slots hold pixel bytes, not floats */
  float scale[256]; /* pixel byte -> [0, 1] */
  loader_slot *slots;
  clt_rng augment; /* used by the worker while it fills a slot */

  pthread_t thread;
  bool thread_started;
  pthread_mutex_t mutex;
  pthread_cond_t work; /* to the worker: slot freed, epoch begun, stop */
  pthread_cond_t done; /* from the worker: slot ready, or worker idle */
  int64_t fill_next;   /* next batch the worker prepares */
  int64_t take_next;   /* next batch clt_loader_next hands out */
  bool busy;           /* the worker is filling a slot outside the lock */
  bool stop;
};

void clt_loader_options_init(clt_loader_options *opts) {
  memset(opts, 0, sizeof *opts);
  opts->batch = 32;
  opts->shuffle = true;
  opts->depth = LOADER_DEFAULT_DEPTH;
}

int clt_loader_depth(const clt_loader *l) { return l->opts.depth; }

int64_t clt_loader_batches_per_epoch(const clt_loader *l) {
  return l ? l->nbatches : 0;
}

void clt_loader_byte_values(float values[256]) {
  for (int v = 0; v < 256; v++) values[v] = (float)v / 255.0f;
}

/* ---- worker ------------------------------------------------------------ */

/* Value i of sample `index`, as the model sees it. */
static inline float loader_value(const clt_loader *l, int64_t index,
                                 int64_t i) {
  const clt_dataset *ds = l->ds;
  if (ds->fpixels) return ds->fpixels[index * l->image_size + i];
  return l->scale[ds->pixels[index * l->image_size + i]];
}

/* Copies sample `index` to dst (u8 scaled to [0, 1], f32 as is), or where
 * dst is NULL its bytes to bdst, shifted by a random crop of the
 * zero-padded image and possibly mirrored. The draws per image are fixed
 * (crop y, crop x, flip) so the stream stays aligned. */
static void loader_copy_image(clt_loader *l, int64_t index, float *dst,
                              uint8_t *bdst) {
  const clt_dataset *ds = l->ds;
  int pad = l->opts.pad_crop;
  int64_t dy = 0, dx = 0;
  if (pad > 0) {
    dy = (int64_t)clt_rng_below(&l->augment, 2 * (uint64_t)pad + 1) - pad;
    dx = (int64_t)clt_rng_below(&l->augment, 2 * (uint64_t)pad + 1) - pad;
  }
  bool flip = l->opts.hflip && clt_rng_below(&l->augment, 2) == 1;
  if (pad == 0 && !flip) {
    int64_t first = index * l->image_size;
    if (!dst)
      memcpy(bdst, ds->pixels + first, (size_t)l->image_size);
    else if (ds->fpixels)
      memcpy(dst, ds->fpixels + first, (size_t)l->image_size * sizeof *dst);
    else
      for (int64_t i = 0; i < l->image_size; i++)
        dst[i] = l->scale[ds->pixels[first + i]];
    return;
  }
  int64_t h = ds->height, w = ds->width;
  for (int64_t c = 0; c < ds->channels; c++) {
    for (int64_t y = 0; y < h; y++) {
      int64_t sy = y + dy, row = (c * h + y) * w;
      for (int64_t x = 0; x < w; x++) {
        int64_t sx = (flip ? w - 1 - x : x) + dx;
        bool inside = sy >= 0 && sy < h && sx >= 0 && sx < w;
        int64_t at = (c * h + sy) * w + sx;
        if (dst)
          dst[row + x] = inside ? loader_value(l, index, at) : 0.0f;
        else
          bdst[row + x] = inside ? ds->pixels[index * l->image_size + at] : 0;
      }
    }
  }
}

/* Makes the augmentation draws of one image without copying it: what
 * another shard's loader copies, so that the stream stays aligned. */
static void loader_skip_image(clt_loader *l) {
  int pad = l->opts.pad_crop;
  if (pad > 0) {
    clt_rng_below(&l->augment, 2 * (uint64_t)pad + 1);
    clt_rng_below(&l->augment, 2 * (uint64_t)pad + 1);
  }
  if (l->opts.hflip) clt_rng_below(&l->augment, 2);
}

static void loader_fill(clt_loader *l, loader_slot *slot) {
  const clt_dataset *ds = l->ds;
  int64_t shards = l->opts.shard_count > 1 ? l->opts.shard_count : 1;
  int64_t rank = shards > 1 ? l->opts.shard_rank : 0;
  int64_t global = (int64_t)l->opts.batch * shards;
  int64_t first = slot->batch * global;
  int64_t left = ds->count - first;
  int64_t m = left < global ? left : global;
  int64_t lo = first + rank * m / shards, hi = first + (rank + 1) * m / shards;
  int64_t tsize = ds->target_size;
  bool draws = l->opts.pad_crop > 0 || l->opts.hflip;
  for (int64_t i = first; draws && i < lo; i++) loader_skip_image(l);
  slot->global_n = m;
  slot->n = hi - lo;
  for (int64_t i = 0; i < slot->n; i++) {
    int64_t index = l->order[lo + i];
    if (ds->labels) slot->labels[i] = ds->labels[index];
    if (ds->targets)
      memcpy(slot->targets + i * tsize, ds->targets + index * tsize,
             (size_t)tsize * sizeof(float));
    if (l->bytes)
      loader_copy_image(l, index, NULL, slot->bytes + i * l->image_size);
    else
      loader_copy_image(l, index, slot->images + i * l->image_size, NULL);
  }
  for (int64_t i = hi; draws && i < first + m; i++) loader_skip_image(l);
}

/* Under the lock: a free slot for the next batch, or NULL. */
static loader_slot *loader_claim(clt_loader *l) {
  if (l->fill_next >= l->nbatches) return NULL;
  for (int i = 0; i < l->opts.depth; i++) {
    loader_slot *slot = &l->slots[i];
    if (slot->state == LOADER_SLOT_FREE) {
      slot->state = LOADER_SLOT_FILLING;
      slot->batch = l->fill_next++;
      l->busy = true;
      return slot;
    }
  }
  return NULL;
}

static void *loader_main(void *arg) {
  clt_loader *l = arg;
  pthread_mutex_lock(&l->mutex);
  for (;;) {
    loader_slot *slot = NULL;
    while (!l->stop && !(slot = loader_claim(l))) {
      pthread_cond_wait(&l->work, &l->mutex);
    }
    if (l->stop) break;
    pthread_mutex_unlock(&l->mutex);
    loader_fill(l, slot);
    pthread_mutex_lock(&l->mutex);
    slot->state = LOADER_SLOT_READY;
    l->busy = false;
    pthread_cond_broadcast(&l->done);
  }
  pthread_mutex_unlock(&l->mutex);
  return NULL;
}

/* ---- create / destroy -------------------------------------------------- */

static clt_status loader_check(const clt_dataset *ds,
                               const clt_loader_options *opts, clt_err *err) {
  if (!ds || !opts || ds->count <= 0 || !(ds->pixels || ds->fpixels) ||
      !(ds->labels || (ds->targets && ds->target_size > 0))) {
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "clt_loader_create: needs options and a dataset "
                       "holding at least one image, with labels or "
                       "targets");
  }
  if (opts->batch < 1) {
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "loader batch size is %d, it must be at least 1",
                       opts->batch);
  }
  if (opts->depth != 0 && opts->depth < 2) {
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "loader depth is %d, it must be at least 2 (or 0 for "
                       "the default)",
                       opts->depth);
  }
  if (!opts->alloc != !opts->free_buffer) {
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "loader: alloc and free_buffer go together (both or "
                       "neither)");
  }
  if (opts->pad_crop < 0 || opts->pad_crop > ds->height ||
      opts->pad_crop > ds->width) {
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "loader pad_crop is %d, it must be 0 to the image "
                       "size (%dx%d)",
                       opts->pad_crop, ds->height, ds->width);
  }
  return CLT_OK;
}

/* A ring buffer of bytes, from opts.alloc where given. */
static void *loader_buffer(clt_loader *l, size_t bytes, void **handle) {
  *handle = NULL;
  if (!l->opts.alloc) return malloc(bytes);
  return l->opts.alloc(l->opts.alloc_user, bytes, handle);
}

static void loader_buffer_free(clt_loader *l, void *ptr, void *handle) {
  if (!ptr) return;
  if (l->opts.alloc)
    l->opts.free_buffer(l->opts.alloc_user, ptr, handle);
  else
    free(ptr);
}

static void loader_free(clt_loader *l) {
  if (l->slots) {
    for (int i = 0; i < l->opts.depth; i++) {
      loader_slot *s = &l->slots[i];
      loader_buffer_free(l, s->images, s->handles[0]);
      loader_buffer_free(l, s->bytes, s->handles[1]);
      loader_buffer_free(l, s->labels, s->handles[2]);
      loader_buffer_free(l, s->targets, s->handles[3]);
    }
  }
  free(l->slots);
  free(l->order);
  free(l);
}

/* Every buffer an epoch needs, so that epochs allocate nothing. */
static clt_status loader_alloc(clt_loader *l, clt_err *err) {
  int64_t count = l->ds->count;
  int64_t capacity = l->opts.batch < count ? l->opts.batch : count;
  l->order = malloc((size_t)count * sizeof *l->order);
  l->slots = calloc((size_t)l->opts.depth, sizeof *l->slots);
  bool ok = l->order && l->slots;
  for (int i = 0; ok && i < l->opts.depth; i++) {
    loader_slot *slot = &l->slots[i];
    void **h = slot->handles;
    if (l->bytes)
      /* Room for a whole number of 4-byte words (uploaded as such). */
      slot->bytes = loader_buffer(
          l, (size_t)((capacity * l->image_size + 3) / 4 * 4), &h[1]);
    else
      slot->images = loader_buffer(
          l, (size_t)(capacity * l->image_size) * sizeof(float), &h[0]);
    if (l->ds->labels)
      slot->labels =
          loader_buffer(l, (size_t)capacity * sizeof *slot->labels, &h[2]);
    if (l->ds->targets)
      slot->targets = loader_buffer(
          l,
          (size_t)(capacity * l->ds->target_size) * sizeof *slot->targets,
          &h[3]);
    ok = (slot->images || slot->bytes) && (slot->labels || !l->ds->labels) &&
         (slot->targets || !l->ds->targets);
  }
  if (ok) return CLT_OK;
  return clt_err_set(err, CLT_ERR_HOST_MEMORY,
                     "out of memory for a loader ring of %d batches of %lld "
                     "images",
                     l->opts.depth, (long long)capacity);
}

static clt_status loader_start_thread(clt_loader *l, clt_err *err) {
  int rc = pthread_create(&l->thread, NULL, loader_main, l);
  if (rc != 0) {
    return clt_err_set(err, CLT_ERR_HOST_MEMORY,
                       "cannot start the loader thread: %s", strerror(rc));
  }
  l->thread_started = true;
  return CLT_OK;
}

clt_status clt_loader_create(const clt_dataset *ds,
                             const clt_loader_options *opts, clt_loader **out,
                             clt_err *err) {
  if (!out) {
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "clt_loader_create: out is NULL");
  }
  *out = NULL;
  CLT_TRY(loader_check(ds, opts, err));
  if (opts->shard_count < 0 || opts->shard_rank < 0 ||
      (opts->shard_count > 1 && opts->shard_rank >= opts->shard_count))
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "loader: shard %d of %d", opts->shard_rank,
                       opts->shard_count);
  clt_loader *l = calloc(1, sizeof *l);
  if (!l) return clt_err_set(err, CLT_ERR_HOST_MEMORY, "out of memory");
  pthread_mutex_init(&l->mutex, NULL);
  pthread_cond_init(&l->work, NULL);
  pthread_cond_init(&l->done, NULL);
  l->ds = ds;
  l->opts = *opts;
  if (l->opts.depth == 0) l->opts.depth = LOADER_DEFAULT_DEPTH;
  l->image_size = (int64_t)ds->channels * ds->height * ds->width;
  l->bytes = opts->bytes && ds->pixels && !ds->fpixels;
  int64_t global = (int64_t)opts->batch *
                   (opts->shard_count > 1 ? opts->shard_count : 1);
  l->nbatches = (ds->count + global - 1) / global;
  /* No epoch yet: nothing to fill, nothing to take. */
  l->fill_next = l->take_next = l->nbatches;
  clt_loader_byte_values(l->scale);
  clt_status status = loader_alloc(l, err);
  if (status == CLT_OK) status = loader_start_thread(l, err);
  if (status != CLT_OK) {
    clt_loader_destroy(l);
    return status;
  }
  *out = l;
  return CLT_OK;
}

void clt_loader_destroy(clt_loader *l) {
  if (!l) return;
  if (l->thread_started) {
    pthread_mutex_lock(&l->mutex);
    l->stop = true;
    pthread_cond_signal(&l->work);
    pthread_mutex_unlock(&l->mutex);
    pthread_join(l->thread, NULL);
  }
  pthread_cond_destroy(&l->done);
  pthread_cond_destroy(&l->work);
  pthread_mutex_destroy(&l->mutex);
  loader_free(l);
}

/* ---- epochs ------------------------------------------------------------ */

/* Identity, then Fisher-Yates when shuffling: the order depends on the
 * epoch number alone, not on earlier epochs. */
static void loader_set_order(clt_loader *l, int epoch) {
  int64_t count = l->ds->count;
  for (int64_t i = 0; i < count; i++) l->order[i] = i;
  if (!l->opts.shuffle) return;
  clt_rng rng =
      clt_rng_derive(l->opts.seed, CLT_RNG_SHUFFLE, (uint64_t)(int64_t)epoch);
  for (int64_t i = count - 1; i > 0; i--) {
    int64_t j = (int64_t)clt_rng_below(&rng, (uint64_t)i + 1);
    int64_t t = l->order[i];
    l->order[i] = l->order[j];
    l->order[j] = t;
  }
}

clt_status clt_loader_start_epoch(clt_loader *l, int epoch) {
  if (!l) return CLT_ERR_INVALID_ARGUMENT;
  pthread_mutex_lock(&l->mutex);
  l->fill_next = l->nbatches; /* the worker claims nothing new ... */
  while (l->busy) pthread_cond_wait(&l->done, &l->mutex); /* ... or has */
  for (int i = 0; i < l->opts.depth; i++) {
    if (l->slots[i].state == LOADER_SLOT_READY) {
      l->slots[i].state = LOADER_SLOT_FREE;
    }
  }
  loader_set_order(l, epoch);
  l->augment =
      clt_rng_derive(l->opts.seed, CLT_RNG_AUGMENT, (uint64_t)(int64_t)epoch);
  l->fill_next = 0;
  l->take_next = 0;
  pthread_cond_signal(&l->work);
  pthread_mutex_unlock(&l->mutex);
  return CLT_OK;
}

/* Under the lock: the ready slot holding batch take_next, or NULL. */
static loader_slot *loader_find_next(clt_loader *l, bool *all_held) {
  *all_held = true;
  for (int i = 0; i < l->opts.depth; i++) {
    loader_slot *slot = &l->slots[i];
    if (slot->state == LOADER_SLOT_READY && slot->batch == l->take_next) {
      return slot;
    }
    if (slot->state != LOADER_SLOT_HELD) *all_held = false;
  }
  return NULL;
}

bool clt_loader_next(clt_loader *l, clt_host_batch *out) {
  if (!l || !out) return false;
  pthread_mutex_lock(&l->mutex);
  loader_slot *slot = NULL;
  while (l->take_next < l->nbatches) {
    bool all_held;
    slot = loader_find_next(l, &all_held);
    if (slot || all_held) break;
    pthread_cond_wait(&l->done, &l->mutex);
  }
  if (slot) {
    slot->state = LOADER_SLOT_HELD;
    l->take_next++;
    out->slot = (int)(slot - l->slots);
    out->n = slot->n;
    out->global_n = slot->global_n;
    out->images = slot->images;
    out->bytes = slot->bytes;
    out->labels = slot->labels;
    out->targets = slot->targets;
  }
  pthread_mutex_unlock(&l->mutex);
  return slot != NULL;
}

void clt_loader_release(clt_loader *l, const clt_host_batch *b) {
  if (!l || !b || b->slot < 0 || b->slot >= l->opts.depth) return;
  pthread_mutex_lock(&l->mutex);
  loader_slot *slot = &l->slots[b->slot];
  if (slot->state == LOADER_SLOT_HELD) {
    slot->state = LOADER_SLOT_FREE;
    pthread_cond_signal(&l->work);
  }
  pthread_mutex_unlock(&l->mutex);
}
