/* The packed cache of decoded image folders: one file per dataset in
 * <cache dir>/data, through the kernel cache's atomic, checked entries
 * (runtime/cache.h), so the second run reads one file instead of
 * decoding thousands. The key is a SHA-256 the caller builds over
 * everything that decides the pixels (the file list with sizes and
 * modification times, the classes, the shape, resizing): a changed file
 * gives a new key, and the stale entry is never read again. */
#ifndef CLT_DATA_PACK_CACHE_H
#define CLT_DATA_PACK_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "data/dataset.h"

/* The folder into out (len bytes): cache_dir/data when cache_dir is
 * given, else $CLT_DATA_CACHE_DIR when set, else <the kernel cache
 * folder>/data; or
 * false when caching is off (cache 0, or -1 and $CLT_CACHE=0) or no
 * folder can be named. */
bool clt_pack_cache_dir(const char *cache_dir, int cache, char *out,
                        size_t len);

/* Fills ds's count, labels and pixels from the entry for key when it
 * exists and matches the shape ds already has (count, C, H, W); returns
 * false otherwise (nothing allocated). */
bool clt_pack_cache_load(const char *dir, const uint8_t key[32],
                         clt_dataset *ds);

/* Writes ds's labels and pixels as the entry for key. */
clt_status clt_pack_cache_store(const char *dir, const uint8_t key[32],
                                const clt_dataset *ds, clt_err *err);

#endif
