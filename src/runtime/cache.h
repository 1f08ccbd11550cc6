/* The on-disk kernel binary cache.
 *
 * One file per compiled program, "<dir>/<64 hex digits of the key>.clbin":
 * its binary, or on POCL a mark saying it was built before (program.c).
 * The key is a SHA-256 over everything that decides what the compiler
 * produces, so a new driver or a changed kernel simply misses. Entries are
 * written atomically (temporary file, fsync, rename) and checked in full
 * when read: a file that fails any check is deleted and reported as
 * rejected, so the caller rebuilds it and never runs a damaged binary.
 *
 * Host-only: no OpenCL here. Nothing is global; concurrent processes may
 * share one folder (the worst case is that both build the same entry). */
#ifndef CLT_RUNTIME_CACHE_H
#define CLT_RUNTIME_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Bump whenever the entry layout or the key derivation changes: old
 * entries then miss (different key) or are rejected (different version). */
#define CLT_CACHE_FORMAT_VERSION 1

/* Size of the buffers this module fills with paths. */
#define CLT_CACHE_PATH_MAX 4096

/* What an entry's key is derived from. A NULL part hashes like "". */
typedef struct clt_cache_key_parts {
  const char *source;           /* the full program source */
  const char *options;          /* the build options */
  const char *device_name;      /* CL_DEVICE_NAME */
  const char *driver_version;   /* CL_DRIVER_VERSION */
  const char *platform_version; /* CL_PLATFORM_VERSION */
} clt_cache_key_parts;

/* SHA-256 over the format version and each part, each prefixed by its
 * length so that no two different part lists give the same byte stream. */
void clt_cache_key(const clt_cache_key_parts *parts, uint8_t key[32]);

/* Picks the cache folder: explicit_dir if not NULL, else $CLT_CACHE_DIR,
 * else $XDG_CACHE_HOME/cltrain, else $HOME/.cache/cltrain. Empty variables
 * count as unset, and so does a relative $XDG_CACHE_HOME (the XDG spec says
 * to ignore it). Writes the path to out (outlen bytes). Returns
 * CLT_ERR_INVALID_ARGUMENT when nothing is set or the path does not fit. */
clt_status clt_cache_dir_resolve(const char *explicit_dir, char *out,
                                 size_t outlen, clt_err *err);

/* False only when $CLT_CACHE is "0", "off" or "false" (any case). */
bool clt_cache_enabled_by_env(void);

/* Whether this process could create (or already write in) folder dir: true
 * if it exists as a writable folder or its nearest existing ancestor is one.
 * Otherwise false with the reason in why ("/home/u is not writable",
 * "/tmp/f is not a folder"). Creates nothing. */
bool clt_dir_creatable(const char *dir, char *why, size_t whylen);

/* The folder where POCL keeps its kernel cache, as POCL 3 chooses it:
 * $POCL_CACHE_DIR, else $XDG_CACHE_HOME/pocl, else ~/.cache/pocl. False if
 * none of these is set. POCL offers no device at all when it cannot
 * create this folder. */
bool clt_pocl_cache_dir(char *out, size_t outlen);

/* Whether the folder where POCL keeps the kernels it compiled holds
 * anything: $POCL_CACHE_DIR itself, else $XDG_CACHE_HOME/pocl/kcache,
 * else ~/.cache/pocl/kcache (POCL's pocl_cache_init_topdir). */
bool clt_pocl_kernels_kept(void);

typedef enum clt_cache_result {
  CLT_CACHE_MISS,     /* no usable file (absent, unreadable, out of memory) */
  CLT_CACHE_HIT,      /* *data and *len hold the verified payload */
  CLT_CACHE_REJECTED, /* a damaged, foreign or stale file; now deleted */
} clt_cache_result;

/* Looks up key in dir. On HIT the caller owns *data (malloc'd; free it);
 * otherwise *data is NULL and *len is 0. Any file contents are safe to
 * read: lengths are checked against the file's size before allocating. */
clt_cache_result clt_cache_load(const char *dir, const uint8_t key[32],
                                uint8_t **data, size_t *len);

/* Writes len bytes at data as the entry for key, creating dir (and its
 * parents, mode 0755) first. Atomic: readers see the old entry or the new
 * one, never a part; on failure no temporary file is left behind. Returns
 * CLT_ERR_IO with the path and the system's reason in err. */
clt_status clt_cache_store(const char *dir, const uint8_t key[32],
                           const void *data, size_t len, clt_err *err);

/* "<dir>/<hex key>.clbin" into out (outlen bytes, CLT_CACHE_PATH_MAX is
 * always enough for a dir shorter than 4000 bytes); truncated if it does
 * not fit. */
void clt_cache_entry_path(const char *dir, const uint8_t key[32], char *out,
                          size_t outlen);

#endif
