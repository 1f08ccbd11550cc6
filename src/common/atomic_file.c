#include "common/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void reset(clt_atomic_file *f) {
  free(f->path);
  free(f->tmp);
  memset(f, 0, sizeof *f);
  f->fd = -1;
}

clt_status clt_atomic_open(clt_atomic_file *f, const char *path,
                           clt_err *err) {
  memset(f, 0, sizeof *f);
  f->fd = -1;
  size_t n = strlen(path) + 64;
  f->path = strdup(path);
  f->tmp = malloc(n);
  if (!f->path || !f->tmp) {
    reset(f);
    return clt_err_set(err, CLT_ERR_HOST_MEMORY, "%.200s: out of memory",
                       path);
  }
  /* The pid names the writer; the salt makes a clash with a leftover of a
   * killed run unlikely, and O_EXCL turns one into another try. */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t salt = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                  (uint64_t)(uintptr_t)f->tmp;
  for (int attempt = 0; attempt < 100; attempt++) {
    uint32_t tag = (uint32_t)(salt + (uint64_t)attempt * 0x9e3779b97f4a7c15u);
    snprintf(f->tmp, n, "%s.tmp-%ld-%08" PRIx32, path, (long)getpid(), tag);
    f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (f->fd >= 0) return CLT_OK;
    if (errno != EEXIST) break;
  }
  int saved = errno;
  reset(f);
  return clt_err_set(err, CLT_ERR_IO,
                     "%.200s: cannot create a temporary file next to it: %s",
                     path, strerror(saved));
}

bool clt_atomic_write(clt_atomic_file *f, const void *data, size_t n) {
  if (f->write_errno) {
    errno = f->write_errno;
    return false;
  }
  const uint8_t *p = data;
  while (n > 0) {
    ssize_t k = write(f->fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      f->write_errno = k < 0 ? errno : ENOSPC;
      errno = f->write_errno;
      return false;
    }
    p += k;
    n -= (size_t)k;
  }
  return true;
}

/* Best effort: makes the rename itself survive a crash. A folder that
 * cannot be synced (some file systems) still holds the new file. */
static void sync_parent_folder(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path))
                    : strdup(".");
  if (!dir) return;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  free(dir);
}

clt_status clt_atomic_commit(clt_atomic_file *f, int mode, clt_err *err) {
  const char *step = NULL;
  int saved = 0;
  if (f->write_errno) {
    step = "write";
    saved = f->write_errno;
  } else if (mode >= 0 && fchmod(f->fd, (mode_t)mode) != 0) {
    step = "setting the mode";
    saved = errno;
  } else if (fsync(f->fd) != 0) {
    /* Without it a crash after the rename could leave an empty file. */
    step = "sync";
    saved = errno;
  }
  if (close(f->fd) != 0 && !step) {
    step = "close";
    saved = errno;
  }
  f->fd = -1;
  clt_status st = CLT_OK;
  if (step)
    st = clt_err_set(err, CLT_ERR_IO, "%.200s: %s failed: %s", f->path, step,
                     strerror(saved));
  else if (rename(f->tmp, f->path) != 0)
    st = clt_err_set(err, CLT_ERR_IO,
                     "%.200s: cannot replace it with the new file: %s",
                     f->path, strerror(errno));
  if (st != CLT_OK)
    unlink(f->tmp);
  else
    sync_parent_folder(f->path);
  reset(f);
  return st;
}

void clt_atomic_abort(clt_atomic_file *f) {
  if (f->fd >= 0) close(f->fd);
  if (f->tmp) unlink(f->tmp);
  reset(f);
}

clt_status clt_atomic_write_file(const char *path, const void *data,
                                 size_t n, int mode, clt_err *err) {
  clt_atomic_file f;
  CLT_TRY(clt_atomic_open(&f, path, err));
  clt_atomic_write(&f, data, n);
  return clt_atomic_commit(&f, mode, err);
}
