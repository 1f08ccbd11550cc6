/* The kernel binary cache: SHA-256, keys, folder choice, and entries that
 * round-trip, survive replacement, and are rejected (and deleted) whenever
 * a file on disk is damaged, foreign or stale. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/cache.h"
#include "runtime/sha256.h"
#include "remove_tree.h"
#include "run_checks.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

/* Each test case gets a root folder, made and removed by the parent process
 * (so it goes even when a failed test's process ends early); each test gets
 * a fresh folder inside it. */
static char g_root[128];
static char g_dir[256];

static void setup_root(void) {
  snprintf(g_root, sizeof g_root, "/tmp/clt_cache_test_XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(g_root));
}

static void teardown_root(void) { test_remove_tree(g_root); }

static void setup_tmpdir(void) {
  snprintf(g_dir, sizeof g_dir, "%s/test_XXXXXX", g_root);
  ck_assert_ptr_nonnull(mkdtemp(g_dir));
}

static void teardown_tmpdir(void) { test_remove_tree(g_dir); }

static void key_from_text(const char *source, uint8_t key[32]) {
  clt_cache_key_parts parts = {source, "-cl-std=CL1.2", "cpu-x86", "6.0+debian",
                               "OpenCL 3.0 PoCL"};
  clt_cache_key(&parts, key);
}

/* Bytes 0..n-1 with a pattern, so a shifted or flipped byte shows. */
static uint8_t *payload_make(size_t n) {
  uint8_t *p = malloc(n);
  ck_assert_ptr_nonnull(p);
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 31 + 7);
  return p;
}

static long file_size(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  return (long)st.st_size;
}

static bool file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static void file_read(const char *path, uint8_t **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  long n = file_size(path);
  ck_assert_int_ge(n, 0);
  *data = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(*data);
  ck_assert_uint_eq(fread(*data, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
}

static void file_write(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
}

/* Entries in g_dir other than "." and "..". */
static int dir_count(const char *dir) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
  closedir(d);
  return n;
}

/* Stores a 1000-byte entry under `key` and returns its path. */
static void store_sample(const uint8_t key[32], char path[CLT_CACHE_PATH_MAX]) {
  uint8_t *payload = payload_make(1000);
  clt_err err;
  ck_assert_int_eq(clt_cache_store(g_dir, key, payload, 1000, &err), CLT_OK);
  free(payload);
  clt_cache_entry_path(g_dir, key, path, CLT_CACHE_PATH_MAX);
  ck_assert_int_eq(file_size(path), 84 + 1000);
}

/* Loads `key` expecting REJECTED and the file at path gone. */
static void assert_rejected(const uint8_t key[32], const char *path) {
  uint8_t *data = (uint8_t *)"not touched";
  size_t len = 123;
  ck_assert_int_eq(clt_cache_load(g_dir, key, &data, &len), CLT_CACHE_REJECTED);
  ck_assert_ptr_null(data);
  ck_assert_uint_eq(len, 0);
  ck_assert(!file_exists(path));
  /* Once deleted, the next look-up is an ordinary miss. */
  ck_assert_int_eq(clt_cache_load(g_dir, key, &data, &len), CLT_CACHE_MISS);
}

/* Rewrites the stored entry at path through `edit`, then expects REJECTED. */
static void corrupt_and_check(void (*edit)(uint8_t **data, size_t *len)) {
  uint8_t key[32];
  char path[CLT_CACHE_PATH_MAX];
  key_from_text("kernel void f() {}", key);
  store_sample(key, path);
  uint8_t *bytes;
  size_t len;
  file_read(path, &bytes, &len);
  edit(&bytes, &len);
  file_write(path, bytes, len);
  free(bytes);
  assert_rejected(key, path);
}

/* ------------------------------------------------------------------------ */
/* SHA-256                                                                   */

static void assert_sha256(const char *msg, const char *expected_hex) {
  uint8_t digest[32];
  char hex[65];
  clt_sha256_buffer(msg, strlen(msg), digest);
  clt_sha256_hex(digest, hex);
  ck_assert_str_eq(hex, expected_hex);
}

START_TEST(sha256_known_vectors) {
  assert_sha256(
      "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  assert_sha256(
      "abc",
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  assert_sha256(
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
END_TEST

/* Lengths around the padding boundary (55 fits one block, 56 spills). */
START_TEST(sha256_padding_boundaries) {
  static const struct {
    size_t n;
    const char *hex;
  } cases[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
  };
  char msg[65];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    memset(msg, 'a', cases[i].n);
    msg[cases[i].n] = '\0';
    assert_sha256(msg, cases[i].hex);
  }
}
END_TEST

START_TEST(sha256_million_a_uneven_chunks) {
  static const size_t chunks[] = {1, 63, 64, 65, 7, 128, 1000, 3, 4097};
  char *a = malloc(5000);
  ck_assert_ptr_nonnull(a);
  memset(a, 'a', 5000);
  clt_sha256 s;
  clt_sha256_init(&s);
  size_t done = 0;
  for (size_t i = 0; done < 1000000; i++) {
    size_t n = chunks[i % (sizeof chunks / sizeof chunks[0])];
    if (n > 1000000 - done) n = 1000000 - done;
    clt_sha256_update(&s, a, n);
    clt_sha256_update(&s, NULL, 0); /* empty updates change nothing */
    done += n;
  }
  free(a);
  uint8_t digest[32];
  char hex[65];
  clt_sha256_final(&s, digest);
  clt_sha256_hex(digest, hex);
  ck_assert_str_eq(
      hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Keys                                                                      */

START_TEST(key_changes_with_every_part) {
  clt_cache_key_parts base = {"src", "-O2", "dev", "drv", "plat"};
  uint8_t k0[32], k1[32];
  clt_cache_key(&base, k0);
  clt_cache_key(&base, k1);
  ck_assert_mem_eq(k0, k1, 32); /* deterministic */

  for (int i = 0; i < 5; i++) {
    clt_cache_key_parts p = base;
    const char **field[] = {&p.source, &p.options, &p.device_name,
                            &p.driver_version, &p.platform_version};
    *field[i] = "changed";
    clt_cache_key(&p, k1);
    ck_assert_msg(memcmp(k0, k1, 32) != 0, "part %d does not affect key", i);
  }
}
END_TEST

START_TEST(key_length_prefix_prevents_ambiguity) {
  clt_cache_key_parts a = {"ab", "c", "d", "e", "f"};
  clt_cache_key_parts b = {"a", "bc", "d", "e", "f"};
  clt_cache_key_parts c = {"abc", "", "d", "e", "f"};
  uint8_t ka[32], kb[32], kc[32];
  clt_cache_key(&a, ka);
  clt_cache_key(&b, kb);
  clt_cache_key(&c, kc);
  ck_assert(memcmp(ka, kb, 32) != 0);
  ck_assert(memcmp(ka, kc, 32) != 0);
  ck_assert(memcmp(kb, kc, 32) != 0);
}
END_TEST

START_TEST(key_null_part_is_empty_string) {
  clt_cache_key_parts a = {"src", NULL, "dev", "drv", "plat"};
  clt_cache_key_parts b = {"src", "", "dev", "drv", "plat"};
  uint8_t ka[32], kb[32];
  clt_cache_key(&a, ka);
  clt_cache_key(&b, kb);
  ck_assert_mem_eq(ka, kb, 32);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Folder and environment                                                    */

START_TEST(dir_resolve_precedence) {
  char out[CLT_CACHE_PATH_MAX];
  clt_err err;
  setenv("CLT_CACHE_DIR", "/env/clt", 1);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  setenv("HOME", "/home/u", 1);

  ck_assert_int_eq(clt_cache_dir_resolve("/explicit", out, sizeof out, &err),
                   CLT_OK);
  ck_assert_str_eq(out, "/explicit");
  ck_assert_int_eq(clt_cache_dir_resolve(NULL, out, sizeof out, &err), CLT_OK);
  ck_assert_str_eq(out, "/env/clt");

  unsetenv("CLT_CACHE_DIR");
  ck_assert_int_eq(clt_cache_dir_resolve(NULL, out, sizeof out, &err), CLT_OK);
  ck_assert_str_eq(out, "/xdg/cltrain");

  /* Empty, or relative (which the XDG spec says to ignore), means unset. */
  setenv("XDG_CACHE_HOME", "relative/xdg", 1);
  ck_assert_int_eq(clt_cache_dir_resolve(NULL, out, sizeof out, &err), CLT_OK);
  ck_assert_str_eq(out, "/home/u/.cache/cltrain");
  setenv("XDG_CACHE_HOME", "", 1);
  setenv("CLT_CACHE_DIR", "", 1);
  ck_assert_int_eq(clt_cache_dir_resolve(NULL, out, sizeof out, &err), CLT_OK);
  ck_assert_str_eq(out, "/home/u/.cache/cltrain");

  unsetenv("XDG_CACHE_HOME");
  unsetenv("CLT_CACHE_DIR");
  unsetenv("HOME");
  ck_assert_int_ne(clt_cache_dir_resolve(NULL, out, sizeof out, &err), CLT_OK);
  ck_assert_ptr_nonnull(strstr(err.msg, "CLT_CACHE_DIR"));
  /* An explicit folder needs no environment at all. */
  ck_assert_int_eq(clt_cache_dir_resolve("rel/dir", out, sizeof out, &err),
                   CLT_OK);
  ck_assert_str_eq(out, "rel/dir");
}
END_TEST

START_TEST(dir_resolve_too_long) {
  char out[16];
  clt_err err;
  ck_assert_int_eq(
      clt_cache_dir_resolve("/a/very/long/cache/folder", out, sizeof out, &err),
      CLT_ERR_INVALID_ARGUMENT);
  ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(enabled_by_env) {
  unsetenv("CLT_CACHE");
  ck_assert(clt_cache_enabled_by_env());
  static const char *off[] = {"0", "off", "OFF", "false", "False"};
  for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
    setenv("CLT_CACHE", off[i], 1);
    ck_assert_msg(!clt_cache_enabled_by_env(), "CLT_CACHE=%s", off[i]);
  }
  static const char *on[] = {"1", "on", "yes", "", "00"};
  for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
    setenv("CLT_CACHE", on[i], 1);
    ck_assert_msg(clt_cache_enabled_by_env(), "CLT_CACHE=%s", on[i]);
  }
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Store and load                                                            */

START_TEST(entry_path_format) {
  uint8_t key[32];
  char hex[65], expected[CLT_CACHE_PATH_MAX], path[CLT_CACHE_PATH_MAX];
  key_from_text("x", key);
  clt_sha256_hex(key, hex);
  snprintf(expected, sizeof expected, "/some/dir/%s.clbin", hex);
  clt_cache_entry_path("/some/dir", key, path, sizeof path);
  ck_assert_str_eq(path, expected);
  clt_cache_entry_path("/some/dir/", key, path, sizeof path);
  ck_assert_str_eq(path, expected);
}
END_TEST

START_TEST(store_then_load_hits) {
  uint8_t key[32];
  key_from_text("kernel void add() {}", key);
  uint8_t *payload = payload_make(100000);
  clt_err err;
  ck_assert_int_eq(clt_cache_store(g_dir, key, payload, 100000, &err), CLT_OK);

  uint8_t *data = NULL;
  size_t len = 0;
  ck_assert_int_eq(clt_cache_load(g_dir, key, &data, &len), CLT_CACHE_HIT);
  ck_assert_uint_eq(len, 100000);
  ck_assert_mem_eq(data, payload, 100000);
  free(data);
  free(payload);
  /* A hit is not consumed: it hits again. */
  ck_assert_int_eq(clt_cache_load(g_dir, key, &data, &len), CLT_CACHE_HIT);
  free(data);
  ck_assert_int_eq(dir_count(g_dir), 1);
}
END_TEST

START_TEST(store_empty_payload) {
  uint8_t key[32];
  key_from_text("empty", key);
  clt_err err;
  ck_assert_int_eq(clt_cache_store(g_dir, key, NULL, 0, &err), CLT_OK);
  uint8_t *data = NULL;
  size_t len = 99;
  ck_assert_int_eq(clt_cache_load(g_dir, key, &data, &len), CLT_CACHE_HIT);
  ck_assert_uint_eq(len, 0);
  free(data);
}
END_TEST

START_TEST(load_absent_misses) {
  uint8_t key[32];
  key_from_text("never stored", key);
  uint8_t *data = (uint8_t *)"x";
  size_t len = 5;
  ck_assert_int_eq(clt_cache_load(g_dir, key, &data, &len), CLT_CACHE_MISS);
  ck_assert_ptr_null(data);
  ck_assert_uint_eq(len, 0);
  /* A folder that does not exist is a miss too, not an error. */
  char missing[512];
  snprintf(missing, sizeof missing, "%s/no/such/folder", g_dir);
  ck_assert_int_eq(clt_cache_load(missing, key, &data, &len), CLT_CACHE_MISS);
}
END_TEST

START_TEST(store_creates_folders) {
  char nested[512];
  snprintf(nested, sizeof nested, "%s/a/b//c/", g_dir);
  uint8_t key[32];
  key_from_text("nested", key);
  clt_err err;
  ck_assert_int_eq(clt_cache_store(nested, key, "bin", 3, &err), CLT_OK);
  struct stat st;
  ck_assert_int_eq(stat(nested, &st), 0);
  ck_assert(S_ISDIR(st.st_mode));
  uint8_t *data;
  size_t len;
  ck_assert_int_eq(clt_cache_load(nested, key, &data, &len), CLT_CACHE_HIT);
  ck_assert_uint_eq(len, 3);
  ck_assert_mem_eq(data, "bin", 3);
  free(data);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Damaged entries                                                           */

static void edit_truncate_payload(uint8_t **b, size_t *len) {
  (void)b;
  *len -= 1;
}

static void edit_truncate_header(uint8_t **b, size_t *len) {
  (void)b;
  *len = 40;
}

static void edit_flip_payload_byte(uint8_t **b, size_t *len) {
  (*b)[*len - 500] ^= 0x01;
}

static void edit_wrong_magic(uint8_t **b, size_t *len) {
  (void)len;
  (*b)[1] = 'X';
}

static void edit_wrong_version(uint8_t **b, size_t *len) {
  (void)len;
  (*b)[8] = CLT_CACHE_FORMAT_VERSION + 1;
}

static void edit_zero_length(uint8_t **b, size_t *len) {
  (void)b;
  *len = 0;
}

static void edit_trailing_garbage(uint8_t **b, size_t *len) {
  uint8_t *grown = realloc(*b, *len + 7);
  ck_assert_ptr_nonnull(grown);
  memcpy(grown + *len, "garbage", 7);
  *b = grown;
  *len += 7;
}

/* A length field that would ask for 2^62 bytes must be refused from the
 * file size alone, before any allocation. */
static void edit_huge_length(uint8_t **b, size_t *len) {
  (void)len;
  memset(*b + 44, 0, 8);
  (*b)[51] = 0x40;
}

static void edit_flip_checksum(uint8_t **b, size_t *len) {
  (void)len;
  (*b)[60] ^= 0x80;
}

START_TEST(reject_truncated_payload) {
  corrupt_and_check(edit_truncate_payload);
}
END_TEST

START_TEST(reject_truncated_header) { corrupt_and_check(edit_truncate_header); }
END_TEST

START_TEST(reject_flipped_payload_byte) {
  corrupt_and_check(edit_flip_payload_byte);
}
END_TEST

START_TEST(reject_wrong_magic) { corrupt_and_check(edit_wrong_magic); }
END_TEST

START_TEST(reject_wrong_version) { corrupt_and_check(edit_wrong_version); }
END_TEST

START_TEST(reject_zero_length_file) { corrupt_and_check(edit_zero_length); }
END_TEST

START_TEST(reject_trailing_garbage) {
  corrupt_and_check(edit_trailing_garbage);
}
END_TEST

START_TEST(reject_huge_length_field) { corrupt_and_check(edit_huge_length); }
END_TEST

START_TEST(reject_flipped_checksum) { corrupt_and_check(edit_flip_checksum); }
END_TEST

/* A valid entry of another key, copied under this key's name. */
START_TEST(reject_foreign_entry) {
  uint8_t key_a[32], key_b[32];
  char path_a[CLT_CACHE_PATH_MAX], path_b[CLT_CACHE_PATH_MAX];
  key_from_text("kernel a", key_a);
  key_from_text("kernel b", key_b);
  store_sample(key_a, path_a);
  store_sample(key_b, path_b);
  uint8_t *bytes;
  size_t len;
  file_read(path_b, &bytes, &len);
  file_write(path_a, bytes, len);
  free(bytes);
  assert_rejected(key_a, path_a);
  /* The genuine entry b is untouched. */
  uint8_t *data;
  ck_assert_int_eq(clt_cache_load(g_dir, key_b, &data, &len), CLT_CACHE_HIT);
  free(data);
}
END_TEST

/* Arbitrary bytes of many sizes under an entry's name: never a hit, never a
 * crash (the sanitizers watch the reads). */
START_TEST(reject_random_contents) {
  uint8_t key[32];
  char path[CLT_CACHE_PATH_MAX];
  key_from_text("fuzz", key);
  clt_cache_entry_path(g_dir, key, path, sizeof path);
  uint8_t buf[300];
  uint32_t x = 12345;
  for (size_t n = 1; n < sizeof buf; n += 13) {
    for (size_t i = 0; i < n; i++) {
      x = x * 1664525u + 1013904223u;
      buf[i] = (uint8_t)(x >> 24);
    }
    file_write(path, buf, n);
    assert_rejected(key, path);
  }
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Replacement and failures                                                  */

START_TEST(store_replaces_atomically) {
  uint8_t key[32];
  char path[CLT_CACHE_PATH_MAX];
  key_from_text("kernel v", key);
  clt_err err;
  ck_assert_int_eq(clt_cache_store(g_dir, key, "first", 5, &err), CLT_OK);
  clt_cache_entry_path(g_dir, key, path, sizeof path);

  /* A reader holding the old file keeps seeing the old bytes: the new entry
   * is a new file renamed into place, not the old one rewritten. */
  int old_fd = open(path, O_RDONLY);
  ck_assert_int_ge(old_fd, 0);
  ck_assert_int_eq(clt_cache_store(g_dir, key, "second!", 7, &err), CLT_OK);
  char old[84 + 5];
  ck_assert_int_eq(read(old_fd, old, sizeof old), (ssize_t)sizeof old);
  ck_assert_mem_eq(old + 84, "first", 5);
  close(old_fd);

  uint8_t *data;
  size_t len;
  ck_assert_int_eq(clt_cache_load(g_dir, key, &data, &len), CLT_CACHE_HIT);
  ck_assert_uint_eq(len, 7);
  ck_assert_mem_eq(data, "second!", 7);
  free(data);
  ck_assert_int_eq(dir_count(g_dir), 1); /* no temporary files left */
}
END_TEST

/* Works as root too: a regular file where a folder should be cannot be
 * written through, whatever the permissions. */
START_TEST(store_unwritable_path_fails_with_io) {
  char blocker[512], dir[600];
  snprintf(blocker, sizeof blocker, "%s/plainfile", g_dir);
  file_write(blocker, "x", 1);
  snprintf(dir, sizeof dir, "%s/sub/cache", blocker);
  uint8_t key[32];
  key_from_text("k", key);
  clt_err err;
  ck_assert_int_eq(clt_cache_store(dir, key, "data", 4, &err), CLT_ERR_IO);
  ck_assert_int_eq(err.status, CLT_ERR_IO);
  ck_assert_msg(strstr(err.msg, blocker) != NULL, "message: %s", err.msg);
  ck_assert_msg(strstr(err.msg, strerror(ENOTDIR)) != NULL, "message: %s",
                err.msg);
  ck_assert_int_eq(dir_count(g_dir), 1);
}
END_TEST

/* The rename fails (a folder holds the entry's name): the error names the
 * path and the temporary file is gone. */
START_TEST(store_failed_rename_leaves_no_temp) {
  uint8_t key[32];
  char path[CLT_CACHE_PATH_MAX], inner[CLT_CACHE_PATH_MAX + 16];
  key_from_text("blocked", key);
  clt_cache_entry_path(g_dir, key, path, sizeof path);
  ck_assert_int_eq(mkdir(path, 0755), 0);
  snprintf(inner, sizeof inner, "%s/keep", path);
  file_write(inner, "x", 1);

  clt_err err;
  ck_assert_int_eq(clt_cache_store(g_dir, key, "data", 4, &err), CLT_ERR_IO);
  ck_assert_msg(strstr(err.msg, path) != NULL, "message: %s", err.msg);
  ck_assert_int_eq(dir_count(g_dir), 1);
  /* And a look-up of that name neither hits nor removes the folder. */
  uint8_t *data;
  size_t len;
  ck_assert_int_ne(clt_cache_load(g_dir, key, &data, &len), CLT_CACHE_HIT);
  ck_assert(file_exists(inner));
}
END_TEST

START_TEST(store_rejects_bad_arguments) {
  uint8_t key[32] = {0};
  clt_err err;
  ck_assert_int_eq(clt_cache_store(NULL, key, "x", 1, &err),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(clt_cache_store("", key, "x", 1, &err),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(clt_cache_store(g_dir, key, NULL, 1, &err),
                   CLT_ERR_INVALID_ARGUMENT);
  /* A NULL clt_err is allowed: only the message is lost. */
  ck_assert_int_eq(clt_cache_store(g_dir, NULL, "x", 1, NULL),
                   CLT_ERR_INVALID_ARGUMENT);
}
END_TEST

/* ------------------------------------------------------------------------ */

static Suite *cache_suite(void) {
  Suite *s = suite_create("cache");

  TCase *sha = tcase_create("sha256");
  tcase_add_test(sha, sha256_known_vectors);
  tcase_add_test(sha, sha256_padding_boundaries);
  tcase_add_test(sha, sha256_million_a_uneven_chunks);
  suite_add_tcase(s, sha);

  TCase *key = tcase_create("key");
  tcase_add_test(key, key_changes_with_every_part);
  tcase_add_test(key, key_length_prefix_prevents_ambiguity);
  tcase_add_test(key, key_null_part_is_empty_string);
  tcase_add_test(key, dir_resolve_precedence);
  tcase_add_test(key, dir_resolve_too_long);
  tcase_add_test(key, enabled_by_env);
  tcase_add_test(key, entry_path_format);
  suite_add_tcase(s, key);

  TCase *io = tcase_create("entries");
  tcase_add_unchecked_fixture(io, setup_root, teardown_root);
  tcase_add_checked_fixture(io, setup_tmpdir, teardown_tmpdir);
  tcase_add_test(io, store_then_load_hits);
  tcase_add_test(io, store_empty_payload);
  tcase_add_test(io, load_absent_misses);
  tcase_add_test(io, store_creates_folders);
  tcase_add_test(io, reject_truncated_payload);
  tcase_add_test(io, reject_truncated_header);
  tcase_add_test(io, reject_flipped_payload_byte);
  tcase_add_test(io, reject_wrong_magic);
  tcase_add_test(io, reject_wrong_version);
  tcase_add_test(io, reject_zero_length_file);
  tcase_add_test(io, reject_trailing_garbage);
  tcase_add_test(io, reject_huge_length_field);
  tcase_add_test(io, reject_flipped_checksum);
  tcase_add_test(io, reject_foreign_entry);
  tcase_add_test(io, reject_random_contents);
  tcase_add_test(io, store_replaces_atomically);
  tcase_add_test(io, store_unwritable_path_fails_with_io);
  tcase_add_test(io, store_failed_rename_leaves_no_temp);
  tcase_add_test(io, store_rejects_bad_arguments);
  suite_add_tcase(s, io);
  return s;
}

int main(void) {
  int failed = test_run_checks(cache_suite(), CK_FORK_GETENV);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
