#include "runtime/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "runtime/sha256.h"

/* Entry layout, all integers little-endian:
 *   offset  0  magic, 8 bytes
 *   offset  8  u32 format version
 *   offset 12  key, 32 bytes
 *   offset 44  u64 payload length
 *   offset 52  SHA-256 of the payload, 32 bytes
 *   offset 84  payload
 * The magic's high first byte and trailing newline, as in PNG, catch files
 * mangled by 7-bit or newline-translating copies. */
static const uint8_t cache_magic[8] = {0x89, 'C', 'L', 'T',
                                       'B',  'I', 'N', '\n'};

enum {
  CACHE_OFF_VERSION = 8,
  CACHE_OFF_KEY = 12,
  CACHE_OFF_LENGTH = 44,
  CACHE_OFF_CHECKSUM = 52,
  CACHE_HEADER_SIZE = 84,
};

static void put_le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static uint64_t get_le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* ------------------------------------------------------------------------ */
/* Key and folder                                                            */

static void key_add_part(clt_sha256 *s, const char *part) {
  if (!part) part = "";
  size_t n = strlen(part);
  uint8_t len[8];
  put_le64(len, (uint64_t)n);
  clt_sha256_update(s, len, sizeof len);
  clt_sha256_update(s, part, n);
}

void clt_cache_key(const clt_cache_key_parts *parts, uint8_t key[32]) {
  clt_sha256 s;
  clt_sha256_init(&s);
  /* A fixed tag keeps these keys apart from any other SHA-256 use. */
  static const char tag[] = "cltrain kernel cache key";
  clt_sha256_update(&s, tag, sizeof tag);
  uint8_t version[4];
  put_le32(version, CLT_CACHE_FORMAT_VERSION);
  clt_sha256_update(&s, version, sizeof version);
  key_add_part(&s, parts->source);
  key_add_part(&s, parts->options);
  key_add_part(&s, parts->device_name);
  key_add_part(&s, parts->driver_version);
  key_add_part(&s, parts->platform_version);
  clt_sha256_final(&s, key);
}

static const char *env_nonempty(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

static clt_status dir_format(char *out, size_t outlen, clt_err *err,
                             const char *base, const char *suffix) {
  int n = snprintf(out, outlen, "%s%s", base, suffix);
  if (n < 0 || (size_t)n >= outlen) {
    if (outlen > 0) out[0] = '\0';
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "cache folder path too long: %s%s", base, suffix);
  }
  return CLT_OK;
}

clt_status clt_cache_dir_resolve(const char *explicit_dir, char *out,
                                 size_t outlen, clt_err *err) {
  if (explicit_dir) return dir_format(out, outlen, err, explicit_dir, "");
  const char *v = env_nonempty("CLT_CACHE_DIR");
  if (v) return dir_format(out, outlen, err, v, "");
  v = env_nonempty("XDG_CACHE_HOME");
  if (v && v[0] == '/') return dir_format(out, outlen, err, v, "/cltrain");
  v = env_nonempty("HOME");
  if (v) return dir_format(out, outlen, err, v, "/.cache/cltrain");
  if (outlen > 0) out[0] = '\0';
  return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                     "no kernel cache folder: set CLT_CACHE_DIR, "
                     "XDG_CACHE_HOME or HOME, or turn the cache off");
}

bool clt_dir_creatable(const char *dir, char *why, size_t whylen) {
  char path[CLT_CACHE_PATH_MAX];
  int n = snprintf(path, sizeof path, "%s", dir);
  if (n < 0 || (size_t)n >= sizeof path) {
    snprintf(why, whylen, "the path is too long");
    return false;
  }
  for (;;) {
    struct stat st;
    if (stat(path, &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        snprintf(why, whylen, "%s is not a folder", path);
        return false;
      }
      if (access(path, W_OK | X_OK) != 0) {
        snprintf(why, whylen, "%s is not writable", path);
        return false;
      }
      return true;
    }
    if (errno != ENOENT && errno != ENOTDIR) {
      snprintf(why, whylen, "%s: %s", path, strerror(errno));
      return false;
    }
    char *slash = strrchr(path, '/');
    if (!slash) return true; /* a relative name in the current folder */
    if (slash == path) {
      path[1] = '\0'; /* "/" */
    } else {
      *slash = '\0';
    }
  }
}

bool clt_pocl_cache_dir(char *out, size_t outlen) {
  const char *v = env_nonempty("POCL_CACHE_DIR");
  int n = -1;
  if (v) {
    n = snprintf(out, outlen, "%s", v);
  } else if ((v = env_nonempty("XDG_CACHE_HOME"))) {
    n = snprintf(out, outlen, "%s/pocl", v);
  } else if ((v = env_nonempty("HOME"))) {
    n = snprintf(out, outlen, "%s/.cache/pocl", v);
  }
  return n >= 0 && (size_t)n < outlen;
}

bool clt_pocl_kernels_kept(void) {
  char dir[CLT_CACHE_PATH_MAX];
  if (!clt_pocl_cache_dir(dir, sizeof dir - 8)) return false;
  /* POCL keeps them in $POCL_CACHE_DIR itself, else in kcache below */
  if (!env_nonempty("POCL_CACHE_DIR")) strcat(dir, "/kcache");
  DIR *d = opendir(dir);
  if (!d) return false;
  bool any = false;
  struct dirent *e;
  while (!any && (e = readdir(d)) != NULL) any = e->d_name[0] != '.';
  closedir(d);
  return any;
}

bool clt_cache_enabled_by_env(void) {
  const char *v = getenv("CLT_CACHE");
  if (!v) return true;
  return !(strcmp(v, "0") == 0 || strcasecmp(v, "off") == 0 ||
           strcasecmp(v, "false") == 0);
}

/* Like clt_cache_entry_path, but says whether the path fit. */
static bool entry_path(const char *dir, const uint8_t key[32], char *out,
                       size_t outlen) {
  char hex[CLT_SHA256_HEX_SIZE];
  clt_sha256_hex(key, hex);
  /* Trailing slashes are dropped so the path reads cleanly in messages. */
  size_t dlen = strlen(dir);
  while (dlen > 1 && dir[dlen - 1] == '/') dlen--;
  if (dlen > (size_t)CLT_CACHE_PATH_MAX) return false;
  int n = snprintf(out, outlen, "%.*s/%s.clbin", (int)dlen, dir, hex);
  return n >= 0 && (size_t)n < outlen;
}

void clt_cache_entry_path(const char *dir, const uint8_t key[32], char *out,
                          size_t outlen) {
  if (!entry_path(dir, key, out, outlen) && outlen > 0) out[outlen - 1] = '\0';
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */

/* Reads exactly n bytes; false on error or end of file. */
static bool read_full(int fd, void *buf, size_t n) {
  uint8_t *p = buf;
  while (n > 0) {
    ssize_t got = read(fd, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= (size_t)got;
  }
  return true;
}

static bool at_end_of_file(int fd) {
  uint8_t extra;
  ssize_t got;
  do {
    got = read(fd, &extra, 1);
  } while (got < 0 && errno == EINTR);
  return got == 0;
}

/* Checks the header against the key and the file's real size; on success
 * *payload_len is the length the rest of the file must have. */
static bool header_valid(const uint8_t *h, const uint8_t key[32],
                         uint64_t file_size, uint64_t *payload_len) {
  if (memcmp(h, cache_magic, sizeof cache_magic) != 0) return false;
  if (get_le32(h + CACHE_OFF_VERSION) != CLT_CACHE_FORMAT_VERSION) return false;
  if (memcmp(h + CACHE_OFF_KEY, key, 32) != 0) return false;
  uint64_t len = get_le64(h + CACHE_OFF_LENGTH);
  /* Compared with the size on disk before anything is allocated, so a
   * bogus length can never ask for a huge buffer. */
  if (len != file_size - CACHE_HEADER_SIZE || len > SIZE_MAX) return false;
  *payload_len = len;
  return true;
}

/* Reads and verifies an open entry of file_size bytes. */
static clt_cache_result read_entry(int fd, uint64_t file_size,
                                   const uint8_t key[32], uint8_t **data,
                                   size_t *len) {
  uint8_t header[CACHE_HEADER_SIZE];
  uint64_t payload_len;
  if (file_size < CACHE_HEADER_SIZE || !read_full(fd, header, sizeof header))
    return CLT_CACHE_REJECTED;
  if (!header_valid(header, key, file_size, &payload_len))
    return CLT_CACHE_REJECTED;
  /* Running out of memory says nothing about the file: keep it. */
  uint8_t *buf = malloc(payload_len > 0 ? (size_t)payload_len : 1);
  if (!buf) return CLT_CACHE_MISS;
  uint8_t digest[32];
  bool ok = read_full(fd, buf, (size_t)payload_len) && at_end_of_file(fd);
  if (ok) {
    clt_sha256_buffer(buf, (size_t)payload_len, digest);
    ok = memcmp(digest, header + CACHE_OFF_CHECKSUM, 32) == 0;
  }
  if (!ok) {
    free(buf);
    return CLT_CACHE_REJECTED;
  }
  *data = buf;
  *len = (size_t)payload_len;
  return CLT_CACHE_HIT;
}

/* Deletes a rejected entry, but only if path still names the file that was
 * read: another process may have renamed a good entry into place since. */
static void remove_rejected(const char *path, const struct stat *read_st) {
  struct stat now;
  if (stat(path, &now) == 0 && now.st_dev == read_st->st_dev &&
      now.st_ino == read_st->st_ino)
    unlink(path);
}

clt_cache_result clt_cache_load(const char *dir, const uint8_t key[32],
                                uint8_t **data, size_t *len) {
  *data = NULL;
  *len = 0;
  char path[CLT_CACHE_PATH_MAX];
  if (!dir || !key || !entry_path(dir, key, path, sizeof path))
    return CLT_CACHE_MISS;
  /* O_NONBLOCK: a FIFO planted under the entry's name must not hang us. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return CLT_CACHE_MISS;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return CLT_CACHE_MISS;
  }
  clt_cache_result r = CLT_CACHE_REJECTED;
  if (S_ISREG(st.st_mode) && st.st_size >= 0)
    r = read_entry(fd, (uint64_t)st.st_size, key, data, len);
  close(fd);
  if (r == CLT_CACHE_REJECTED) remove_rejected(path, &st);
  return r;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

static clt_status io_error(clt_err *err, const char *what, const char *path,
                           int errnum) {
  return clt_err_set(err, CLT_ERR_IO, "kernel cache: cannot %s %s: %s", what,
                     path, strerror(errnum));
}

/* Creates one folder unless a folder is already there. */
static clt_status make_one_dir(const char *path, clt_err *err) {
  if (mkdir(path, 0755) == 0) return CLT_OK;
  int saved = errno;
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return CLT_OK;
  if (saved == EEXIST) saved = ENOTDIR; /* something else has the name */
  return io_error(err, "create folder", path, saved);
}

/* mkdir -p: each prefix of dir in turn, then dir itself. */
static clt_status make_dirs(const char *dir, clt_err *err) {
  char buf[CLT_CACHE_PATH_MAX];
  size_t n = strlen(dir);
  if (n >= sizeof buf)
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "kernel cache: folder path too long: %s", dir);
  memcpy(buf, dir, n + 1);
  for (size_t i = 1; i < n; i++) {
    if (buf[i] != '/' || buf[i - 1] == '/') continue;
    buf[i] = '\0';
    clt_status st = make_one_dir(buf, err);
    buf[i] = '/';
    if (st != CLT_OK) return st;
  }
  return make_one_dir(buf, err);
}

static void header_build(uint8_t h[CACHE_HEADER_SIZE], const uint8_t key[32],
                         const void *data, size_t len) {
  memcpy(h, cache_magic, sizeof cache_magic);
  put_le32(h + CACHE_OFF_VERSION, CLT_CACHE_FORMAT_VERSION);
  memcpy(h + CACHE_OFF_KEY, key, 32);
  put_le64(h + CACHE_OFF_LENGTH, (uint64_t)len);
  clt_sha256_buffer(data, len, h + CACHE_OFF_CHECKSUM);
}

clt_status clt_cache_store(const char *dir, const uint8_t key[32],
                           const void *data, size_t len, clt_err *err) {
  if (!dir || !*dir || !key || (!data && len > 0))
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "kernel cache: store needs a folder, a key and data");
  char path[CLT_CACHE_PATH_MAX];
  if (!entry_path(dir, key, path, sizeof path))
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "kernel cache: folder path too long: %s", dir);
  CLT_TRY(make_dirs(dir, err));
  uint8_t header[CACHE_HEADER_SIZE];
  header_build(header, key, data ? data : "", len);
  clt_atomic_file f;
  if (clt_atomic_open(&f, path, err) != CLT_OK)
    return clt_err_prefix(err, "kernel cache");
  clt_atomic_write(&f, header, sizeof header);
  clt_atomic_write(&f, data ? data : "", len);
  /* 0644: the entries hold nothing private, and a folder shared by several
   * users (CI) should be readable by all of them. */
  if (clt_atomic_commit(&f, 0644, err) != CLT_OK)
    return clt_err_prefix(err, "kernel cache");
  return CLT_OK;
}
