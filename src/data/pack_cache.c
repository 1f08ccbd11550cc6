/* Packed datasets: "CLTPACK1", then count, channels, height, width as
 * little-endian i64, then count i32 labels (in the host's byte order: the
 * cache belongs to one machine), then the u8 pixels. The cache
 * layer checks the entry's integrity; this checks that it holds what the
 * caller expects. */
#include "data/pack_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache.h"

#define PACK_MAGIC "CLTPACK1"
#define PACK_HEADER (8 + 4 * 8)

bool clt_pack_cache_dir(const char *cache_dir, int cache, char *out,
                        size_t len) {
  if (cache == 0 || (cache < 0 && !clt_cache_enabled_by_env())) return false;
  const char *env = getenv("CLT_DATA_CACHE_DIR");
  if (!cache_dir && env && *env) {
    int n = snprintf(out, len, "%s", env);
    return n > 0 && (size_t)n < len;
  }
  char root[CLT_CACHE_PATH_MAX];
  if (clt_cache_dir_resolve(cache_dir, root, sizeof root, NULL) != CLT_OK)
    return false;
  int n = snprintf(out, len, "%s/data", root);
  return n > 0 && (size_t)n < len;
}

static void put_i64(uint8_t *p, int64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)((uint64_t)v >> (8 * i));
}

static int64_t get_i64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return (int64_t)v;
}

bool clt_pack_cache_load(const char *dir, const uint8_t key[32],
                         clt_dataset *ds) {
  uint8_t *data = NULL;
  size_t len = 0;
  if (clt_cache_load(dir, key, &data, &len) != CLT_CACHE_HIT) return false;
  int64_t size = clt_dataset_sample_size(ds);
  size_t want = PACK_HEADER + (size_t)ds->count * (4 + (size_t)size);
  bool ok = len == want && memcmp(data, PACK_MAGIC, 8) == 0 &&
            get_i64(data + 8) == ds->count &&
            get_i64(data + 16) == ds->channels &&
            get_i64(data + 24) == ds->height && get_i64(data + 32) == ds->width;
  int32_t *labels = ok ? malloc((size_t)ds->count * 4) : NULL;
  uint8_t *pixels = ok ? malloc((size_t)(ds->count * size)) : NULL;
  ok = ok && labels && pixels;
  if (ok) {
    memcpy(labels, data + PACK_HEADER, (size_t)ds->count * 4);
    memcpy(pixels, data + PACK_HEADER + (size_t)ds->count * 4,
           (size_t)(ds->count * size));
    for (int64_t i = 0; i < ds->count; i++)
      ok = ok && labels[i] >= 0 && labels[i] < ds->num_classes;
  }
  free(data);
  if (!ok) {
    free(labels);
    free(pixels);
    return false;
  }
  ds->labels = labels;
  ds->pixels = pixels;
  return true;
}

clt_status clt_pack_cache_store(const char *dir, const uint8_t key[32],
                                const clt_dataset *ds, clt_err *err) {
  int64_t size = clt_dataset_sample_size(ds);
  size_t len = PACK_HEADER + (size_t)ds->count * (4 + (size_t)size);
  uint8_t *data = malloc(len);
  if (!data)
    return clt_err_set(err, CLT_ERR_HOST_MEMORY,
                       "no memory for a packed dataset of %zu bytes", len);
  memcpy(data, PACK_MAGIC, 8);
  put_i64(data + 8, ds->count);
  put_i64(data + 16, ds->channels);
  put_i64(data + 24, ds->height);
  put_i64(data + 32, ds->width);
  memcpy(data + PACK_HEADER, ds->labels, (size_t)ds->count * 4);
  memcpy(data + PACK_HEADER + (size_t)ds->count * 4, ds->pixels,
         (size_t)(ds->count * size));
  clt_status st = clt_cache_store(dir, key, data, len, err);
  free(data);
  return st;
}
