/* Files replaced atomically: written to a temporary file in the same
 * folder, synced, then renamed over the real name, so that a crash, a full
 * disk or a kill -9 leaves either the old file or the new one, never half a
 * file. Where the file system allows (Linux's O_TMPFILE), the new file has
 * no name until it is complete and synced, so a kill -9 while writing
 * leaves nothing; only one between naming it and the rename leaves a
 * temporary "<path>.tmp-<pid>-<tag>" (the name a file system without
 * O_TMPFILE uses throughout), and the next writer of the same path removes
 * those of writers that no longer run. The kernel cache, checkpoints and
 * charts all write this way.
 *
 *   clt_atomic_file f;
 *   CLT_TRY(clt_atomic_open(&f, path, err));
 *   if (!clt_atomic_write(&f, bytes, n)) ...;   (errno says why)
 *   return clt_atomic_commit(&f, 0644, err);    (or clt_atomic_abort(&f))
 */
#ifndef CLT_COMMON_ATOMIC_FILE_H
#define CLT_COMMON_ATOMIC_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

typedef struct clt_atomic_file {
  int fd;
  char *path; /* where the file goes */
  char *tmp;  /* where it is written first */
  int write_errno; /* the first failed write's errno, 0 if none */
  bool anonymous;  /* O_TMPFILE: no name until the commit */
} clt_atomic_file;

/* Creates a new temporary file next to path (a name no other writer has:
 * O_EXCL). On failure f is empty and err says "<path>: cannot create a
 * temporary file next to it: <reason>". */
clt_status clt_atomic_open(clt_atomic_file *f, const char *path, clt_err *err);

/* Appends n bytes; false (errno set, and remembered for the commit's
 * message) on failure. Writing after a failure does nothing. */
bool clt_atomic_write(clt_atomic_file *f, const void *data, size_t n);

/* Finishes the file: mode (if >= 0) as its permissions, fsync, close,
 * rename over path, then a best-effort sync of the folder. On any failure
 * the temporary is removed, path is untouched, and err says which step
 * failed and why ("<path>: write failed: No space left on device"). f is
 * empty afterwards either way. */
clt_status clt_atomic_commit(clt_atomic_file *f, int mode, clt_err *err);

/* Drops the file: closes and removes the temporary; path is untouched. */
void clt_atomic_abort(clt_atomic_file *f);

/* The whole sequence for bytes already in memory. */
clt_status clt_atomic_write_file(const char *path, const void *data,
                                 size_t n, int mode, clt_err *err);

#endif
