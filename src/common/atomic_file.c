#include "common/atomic_file.h"

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_TMPFILE */
#endif
#include <dirent.h>
#include <errno.h>
#include <signal.h>
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

/* The folder part of path ("." for a bare name), malloc'd. */
static char *folder_of(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? strndup(path, (size_t)(slash - path) + (slash == path))
               : strdup(".");
}

/* Removes what writers of path that were killed mid-write left:
 * "<name>.tmp-<pid>-<tag>" whose process no longer exists. */
static void sweep_dead_temporaries(const char *path) {
  char *dir = folder_of(path);
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  size_t blen = strlen(base);
  DIR *d = dir ? opendir(dir) : NULL;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, base, blen) != 0 ||
        strncmp(e->d_name + blen, ".tmp-", 5) != 0)
      continue;
    char *end = NULL;
    long pid = strtol(e->d_name + blen + 5, &end, 10);
    if (pid <= 0 || !end || *end != '-' || pid == (long)getpid()) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    char victim[4096];
    if (snprintf(victim, sizeof victim, "%s/%s", dir, e->d_name) <
        (int)sizeof victim)
      unlink(victim);
  }
  if (d) closedir(d);
  free(dir);
}

/* Fills f->tmp with a name next to path that nothing has yet; the pid
 * names the writer (see sweep_dead_temporaries), the salt avoids clashes.
 * With create, also creates the file (O_EXCL) into f->fd. */
static bool pick_temp_name(clt_atomic_file *f, bool create) {
  size_t n = strlen(f->path) + 64;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t salt = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                  (uint64_t)(uintptr_t)f;
  for (int attempt = 0; attempt < 100; attempt++) {
    uint32_t tag = (uint32_t)(salt + (uint64_t)attempt * 0x9e3779b97f4a7c15u);
    snprintf(f->tmp, n, "%s.tmp-%ld-%08" PRIx32, f->path, (long)getpid(), tag);
    if (!create) {
      if (access(f->tmp, F_OK) != 0 && errno == ENOENT) return true;
      continue;
    }
    f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (f->fd >= 0) return true;
    if (errno != EEXIST) return false;
  }
  return false;
}

clt_status clt_atomic_open(clt_atomic_file *f, const char *path,
                           clt_err *err) {
  memset(f, 0, sizeof *f);
  f->fd = -1;
  f->path = strdup(path);
  f->tmp = malloc(strlen(path) + 64);
  char *dir = folder_of(path);
  if (!f->path || !f->tmp || !dir) {
    free(dir);
    reset(f);
    return clt_err_set(err, CLT_ERR_HOST_MEMORY, "%.200s: out of memory",
                       path);
  }
  sweep_dead_temporaries(path);
  /* Best: a file with no name until it is complete, so a kill -9 while it
   * is written leaves nothing behind (Linux's O_TMPFILE). Where the file
   * system cannot, a named temporary. */
#ifdef O_TMPFILE
  f->fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  f->anonymous = f->fd >= 0;
#endif
  free(dir);
  if (f->fd >= 0 || pick_temp_name(f, true)) return CLT_OK;
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
  /* An anonymous file gets its temporary name only now, complete and
   * synced: from here to the rename is the only moment a kill leaves it. */
  if (!step && f->anonymous) {
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", f->fd);
    if (!pick_temp_name(f, false) ||
        linkat(AT_FDCWD, proc, AT_FDCWD, f->tmp, AT_SYMLINK_FOLLOW) != 0) {
      step = "naming the new file";
      saved = errno;
    }
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
  if (st != CLT_OK && !(f->anonymous && step))
    unlink(f->tmp); /* (an anonymous file that got no name is just gone) */
  else if (st == CLT_OK)
    sync_parent_folder(f->path);
  reset(f);
  return st;
}

void clt_atomic_abort(clt_atomic_file *f) {
  if (f->fd >= 0) close(f->fd);
  if (f->tmp && !f->anonymous) unlink(f->tmp);
  reset(f);
}

clt_status clt_atomic_write_file(const char *path, const void *data,
                                 size_t n, int mode, clt_err *err) {
  clt_atomic_file f;
  CLT_TRY(clt_atomic_open(&f, path, err));
  clt_atomic_write(&f, data, n);
  return clt_atomic_commit(&f, mode, err);
}
