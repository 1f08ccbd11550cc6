/* Tests of the safetensors reader and writer and of the JSON reader under
 * them: round trips bit for bit, the layout of what the writer produces,
 * atomic saves, and every malformed file the reader must refuse. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/rng.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "run_checks.h"

/* ------------------------------------------------------------------------ */
/* A temporary folder per test                                               */

static char tmp_dir[256];

static void make_tmp_dir(void) {
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/clt_st_test_XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmp_dir));
}

/* Removes the folder and what the test left in it (one level, plus one
 * level of subfolders, which is all the tests make). */
static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    chmod(p, 0700);
    if (unlink(p) != 0) remove_tree(p);
  }
  closedir(d);
  rmdir(dir);
}

static void remove_tmp_dir(void) {
  chmod(tmp_dir, 0700);
  remove_tree(tmp_dir);
}

static const char *tmp_path(const char *name) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
  return path;
}

/* Entries of the folder other than . and .., one name per line. */
static void list_dir(const char *dir, char *out, size_t n) {
  out[0] = '\0';
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    strncat(out, e->d_name, n - strlen(out) - 2);
    strcat(out, "\n");
  }
  closedir(d);
}

static void write_bytes(const char *path, const void *bytes, size_t n) {
  FILE *fp = fopen(path, "wb");
  ck_assert_ptr_nonnull(fp);
  ck_assert_uint_eq(fwrite(bytes, 1, n, fp), n);
  ck_assert_int_eq(fclose(fp), 0);
}

static uint8_t *read_bytes(const char *path, size_t *n) {
  FILE *fp = fopen(path, "rb");
  ck_assert_ptr_nonnull(fp);
  fseek(fp, 0, SEEK_END);
  long size = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)size + 1);
  ck_assert_uint_eq(fread(b, 1, (size_t)size, fp), (size_t)size);
  fclose(fp);
  *n = (size_t)size;
  return b;
}

static uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* A file image: the length of header, header, then data_size bytes 0xab. */
static uint8_t *make_image(const char *header, size_t data_size, size_t *size) {
  size_t h = strlen(header);
  *size = 8 + h + data_size;
  uint8_t *b = malloc(*size + 1);
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)h >> (8 * i));
  memcpy(b + 8, header, h);
  memset(b + 8 + h, 0xab, data_size);
  return b;
}

/* ------------------------------------------------------------------------ */
/* Round trips                                                               */

static const clt_st_dtype all_dtypes[] = {CLT_ST_F32, CLT_ST_F16, CLT_ST_I32,
                                          CLT_ST_U8,  CLT_ST_I64, CLT_ST_F64};
#define DTYPE_N 6

typedef struct test_shape {
  int ndim;
  int64_t dims[4];
} test_shape;

static const test_shape odd_shapes[] = {
    {0, {0}},       {1, {1}},    {1, {7}},           {2, {3, 5}},
    {3, {2, 1, 3}}, {2, {0, 4}}, {4, {1, 3, 1, 33}},
};
#define SHAPE_N 7

static int64_t numel_of(const test_shape *s) {
  int64_t n = 1;
  for (int i = 0; i < s->ndim; i++) n *= s->dims[i];
  return n;
}

/* Deterministic bytes, all 256 values likely, NaN payloads included. */
static uint8_t *pattern(size_t n, uint64_t seed) {
  uint8_t *b = malloc(n ? n : 1);
  for (size_t i = 0; i < n; i++) b[i] = (uint8_t)clt_hash64(seed * 7919 + i);
  return b;
}

/* F32 bit patterns that a careless copy through float would change. */
static const uint32_t special_f32[] = {
    0x7fc00001u, /* quiet NaN with a payload */
    0x7f800001u, /* signalling NaN */
    0xffc12345u, /* negative NaN with a payload */
    0x80000000u, /* -0.0 */
    0x00000001u, /* smallest denormal */
    0x7f800000u, /* +inf */
    0xff800000u, /* -inf */
};
static const uint64_t special_f64[] = {
    0x8000000000000000ull, 0x7ff0000000000001ull, 0xfff8000000000badull};

static void add_all(clt_st_writer *w) {
  clt_err err = {0};
  for (int d = 0; d < DTYPE_N; d++) {
    for (int s = 0; s < SHAPE_N; s++) {
      char name[64];
      snprintf(name, sizeof name, "%s.t%d", clt_st_dtype_name(all_dtypes[d]),
               s);
      size_t n =
          (size_t)numel_of(&odd_shapes[s]) * clt_st_dtype_size(all_dtypes[d]);
      uint8_t *data = pattern(n, (uint64_t)(d * 100 + s));
      ck_assert_int_eq(clt_st_writer_add(w, name, all_dtypes[d],
                                         odd_shapes[s].ndim, odd_shapes[s].dims,
                                         data, &err),
                       CLT_OK);
      free(data); /* the writer copied it */
    }
  }
  int64_t n32 = 7, n64 = 3;
  ck_assert_int_eq(clt_st_writer_add(w, "special.f32", CLT_ST_F32, 1, &n32,
                                     special_f32, &err),
                   CLT_OK);
  ck_assert_int_eq(clt_st_writer_add(w, "special.f64", CLT_ST_F64, 1, &n64,
                                     special_f64, &err),
                   CLT_OK);
}

static void check_all(const clt_st_file *f) {
  ck_assert_uint_eq(f->count, DTYPE_N * SHAPE_N + 2);
  for (int d = 0; d < DTYPE_N; d++) {
    for (int s = 0; s < SHAPE_N; s++) {
      char name[64];
      snprintf(name, sizeof name, "%s.t%d", clt_st_dtype_name(all_dtypes[d]),
               s);
      const clt_st_tensor *t = NULL;
      clt_err err = {0};
      ck_assert_msg(clt_st_expect(f, name, all_dtypes[d], odd_shapes[s].ndim,
                                  odd_shapes[s].dims, &t, &err) == CLT_OK,
                    "%s", err.msg);
      size_t n =
          (size_t)numel_of(&odd_shapes[s]) * clt_st_dtype_size(all_dtypes[d]);
      ck_assert_uint_eq(clt_st_tensor_nbytes(t), n);
      uint8_t *want = pattern(n, (uint64_t)(d * 100 + s));
      ck_assert_int_eq(memcmp(clt_st_tensor_data(f, t), want, n), 0);
      free(want);
    }
  }
  const clt_st_tensor *t = clt_st_find(f, "special.f32");
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(
      memcmp(clt_st_tensor_data(f, t), special_f32, sizeof special_f32), 0);
  t = clt_st_find(f, "special.f64");
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(
      memcmp(clt_st_tensor_data(f, t), special_f64, sizeof special_f64), 0);
}

START_TEST(test_round_trip_every_dtype) {
  clt_st_writer *w = NULL;
  clt_err err = {0};
  ck_assert_int_eq(clt_st_writer_create(&w, &err), CLT_OK);
  add_all(w);
  const char *path = tmp_path("all.safetensors");
  ck_assert_int_eq(clt_st_writer_save(w, path, &err), CLT_OK);
  clt_st_writer_destroy(w);

  clt_st_file f;
  ck_assert_msg(clt_st_read_file(path, &f, &err) == CLT_OK, "%s", err.msg);
  check_all(&f);
  /* Sorted by name, so that lookups can bisect. */
  for (size_t i = 1; i < f.count; i++)
    ck_assert_int_lt(strcmp(f.tensors[i - 1].name, f.tensors[i].name), 0);
  ck_assert_ptr_null(clt_st_find(&f, "nope"));
  ck_assert_str_eq(f.source, path);
  clt_st_file_free(&f);
  clt_st_file_free(&f); /* freeing twice is harmless: it was zeroed */
}
END_TEST

START_TEST(test_round_trip_in_memory) {
  clt_st_writer *w = NULL;
  clt_err err = {0};
  ck_assert_int_eq(clt_st_writer_create(&w, &err), CLT_OK);
  add_all(w);
  uint8_t *image = NULL;
  size_t size = 0;
  ck_assert_int_eq(clt_st_writer_serialize(w, &image, &size, &err), CLT_OK);
  const char *path = tmp_path("same.safetensors");
  ck_assert_int_eq(clt_st_writer_save(w, path, &err), CLT_OK);
  clt_st_writer_destroy(w);

  size_t n = 0;
  uint8_t *on_disk = read_bytes(path, &n);
  ck_assert_uint_eq(n, size);
  ck_assert_int_eq(memcmp(on_disk, image, n), 0);
  free(on_disk);

  clt_st_file f;
  ck_assert_int_eq(clt_st_parse(image, size, "mem", &f, &err), CLT_OK);
  memset(image, 0, size); /* the file holds its own copy */
  free(image);
  check_all(&f);
  clt_st_file_free(&f);
}
END_TEST

START_TEST(test_metadata_round_trip) {
  static const char *const kv[][2] = {
      {"format", "pt"},
      {"epoch", "12"},
      {"quote\"back\\slash", "line\nfeed\ttab\rret\x01\x1f\x7f"},
      {"unicode", "Gr\xc3\xb6\xc3\x9f"
                  "e \xf0\x9f\x98\x80 \xe2\x82\xac"},
      {"empty", ""},
      {"", "empty key"},
  };
  size_t n = sizeof kv / sizeof kv[0];
  clt_st_writer *w = NULL;
  clt_err err = {0};
  ck_assert_int_eq(clt_st_writer_create(&w, &err), CLT_OK);
  ck_assert_int_eq(clt_st_writer_set_metadata(w, "epoch", "11", &err), CLT_OK);
  for (size_t i = 0; i < n; i++)
    ck_assert_int_eq(clt_st_writer_set_metadata(w, kv[i][0], kv[i][1], &err),
                     CLT_OK);
  ck_assert_int_eq(clt_st_writer_set_metadata(w, "bad", "\xff", &err),
                   CLT_ERR_INVALID_ARGUMENT);
  const char *path = tmp_path("meta.safetensors");
  ck_assert_int_eq(clt_st_writer_save(w, path, &err), CLT_OK);
  clt_st_writer_destroy(w);

  clt_st_file f;
  ck_assert_msg(clt_st_read_file(path, &f, &err) == CLT_OK, "%s", err.msg);
  ck_assert_uint_eq(f.count, 0);
  ck_assert_uint_eq(f.meta_count, n);
  for (size_t i = 0; i < n; i++) {
    const char *v = clt_st_metadata(&f, kv[i][0]);
    ck_assert_ptr_nonnull(v);
    ck_assert_str_eq(v, kv[i][1]);
  }
  ck_assert_ptr_null(clt_st_metadata(&f, "missing"));
  clt_st_file_free(&f);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The layout of written files                                               */

typedef struct range {
  uint64_t begin, end;
} range;

static int compare_range(const void *a, const void *b) {
  const range *x = a, *y = b;
  return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* Walks the header with the JSON reader alone, not with the safetensors
 * reader under test, collecting every data_offsets pair. */
static size_t collect_offsets(const char *header, size_t n, range *out,
                              size_t max) {
  clt_json_reader r;
  clt_json_reader_init(&r, header, n, 0);
  size_t count = 0;
  char *key;
  ck_assert(clt_json_enter_object(&r));
  while (clt_json_next_key(&r, &key, NULL)) {
    bool meta = strcmp(key, "__metadata__") == 0;
    free(key);
    if (meta) {
      ck_assert(clt_json_skip_value(&r));
      continue;
    }
    ck_assert(clt_json_enter_object(&r));
    while (clt_json_next_key(&r, &key, NULL)) {
      bool offsets = strcmp(key, "data_offsets") == 0;
      free(key);
      if (!offsets) {
        ck_assert(clt_json_skip_value(&r));
        continue;
      }
      int64_t b = -1, e = -1;
      ck_assert(clt_json_enter_array(&r));
      ck_assert(clt_json_next_item(&r) && clt_json_read_int64(&r, &b));
      ck_assert(clt_json_next_item(&r) && clt_json_read_int64(&r, &e));
      ck_assert(!clt_json_next_item(&r));
      ck_assert_uint_lt(count, max);
      out[count++] = (range){(uint64_t)b, (uint64_t)e};
    }
  }
  ck_assert_msg(!r.failed, "%s", r.error);
  ck_assert(clt_json_finish(&r));
  return count;
}

START_TEST(test_header_is_json_and_offsets_tile_the_data) {
  clt_st_writer *w = NULL;
  clt_err err = {0};
  ck_assert_int_eq(clt_st_writer_create(&w, &err), CLT_OK);
  add_all(w);
  ck_assert_int_eq(clt_st_writer_set_metadata(w, "k", "v", &err), CLT_OK);
  const char *path = tmp_path("layout.safetensors");
  ck_assert_int_eq(clt_st_writer_save(w, path, &err), CLT_OK);
  clt_st_writer_destroy(w);

  size_t size = 0;
  uint8_t *b = read_bytes(path, &size);
  uint64_t n = le64(b);
  ck_assert_uint_le(8 + n, size);
  ck_assert_uint_eq((8 + n) % 8, 0); /* data starts 8-byte aligned */
  const char *header = (const char *)b + 8;
  char why[192];
  ck_assert_msg(clt_json_validate(header, n, 0, NULL, why, sizeof why), "%s",
                why);
  /* Only spaces pad the header after its closing brace. */
  size_t last = n;
  while (last > 0 && header[last - 1] == ' ') last--;
  ck_assert_int_eq(header[last - 1], '}');
  ck_assert_uint_lt(n - last, 8);
  ck_assert(strncmp(header, "{\"__metadata__\":{\"k\":\"v\"}", 24) == 0);

  range ranges[64];
  size_t count = collect_offsets(header, n, ranges, 64);
  ck_assert_uint_eq(count, DTYPE_N * SHAPE_N + 2);
  qsort(ranges, count, sizeof *ranges, compare_range);
  uint64_t at = 0;
  for (size_t i = 0; i < count; i++) {
    ck_assert_uint_eq(ranges[i].begin, at);
    ck_assert_uint_ge(ranges[i].end, ranges[i].begin);
    at = ranges[i].end;
  }
  ck_assert_uint_eq(at, size - 8 - n);
  free(b);
}
END_TEST

START_TEST(test_data_alignment) {
  clt_st_writer *w = NULL;
  clt_err err = {0};
  ck_assert_int_eq(clt_st_writer_create(&w, &err), CLT_OK);
  add_all(w);
  const char *path = tmp_path("align.safetensors");
  ck_assert_int_eq(clt_st_writer_save(w, path, &err), CLT_OK);
  clt_st_writer_destroy(w);
  clt_st_file f;
  ck_assert_int_eq(clt_st_read_file(path, &f, &err), CLT_OK);
  ck_assert_uint_eq((uintptr_t)f.data % CLT_ST_DATA_ALIGN, 0);
  for (size_t i = 0; i < f.count; i++) {
    const clt_st_tensor *t = &f.tensors[i];
    size_t es = clt_st_dtype_size(t->dtype);
    ck_assert_msg(t->begin % es == 0, "%s begins at %llu", t->name,
                  (unsigned long long)t->begin);
    ck_assert_uint_eq((uintptr_t)clt_st_tensor_data(&f, t) % es, 0);
  }
  clt_st_file_free(&f);
}
END_TEST

/* A file with an odd header length still gets its data aligned in memory;
 * the tensors keep their offsets relative to it. */
START_TEST(test_reader_aligns_foreign_files) {
  const char *h = "{\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":"
                  "[0,8]}}";
  size_t size;
  uint8_t *img = make_image(h, 8, &size);
  clt_st_file f;
  clt_err err = {0};
  ck_assert_int_eq(clt_st_parse(img, size, NULL, &f, &err), CLT_OK);
  ck_assert_uint_eq((uintptr_t)f.data % CLT_ST_DATA_ALIGN, 0);
  ck_assert_str_eq(f.source, "<memory>");
  free(img);
  clt_st_file_free(&f);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Atomic saves                                                              */

static clt_st_writer *writer_with_one(float value) {
  clt_st_writer *w = NULL;
  clt_err err = {0};
  ck_assert_int_eq(clt_st_writer_create(&w, &err), CLT_OK);
  int64_t shape[1] = {1};
  ck_assert_int_eq(
      clt_st_writer_add(w, "x", CLT_ST_F32, 1, shape, &value, &err), CLT_OK);
  return w;
}

static float read_x(const char *path) {
  clt_st_file f;
  clt_err err = {0};
  ck_assert_msg(clt_st_read_file(path, &f, &err) == CLT_OK, "%s", err.msg);
  float v;
  memcpy(&v, clt_st_tensor_data(&f, clt_st_find(&f, "x")), sizeof v);
  clt_st_file_free(&f);
  return v;
}

START_TEST(test_save_over_existing_file) {
  const char *path = tmp_path("ckpt.safetensors");
  clt_err err = {0};
  clt_st_writer *a = writer_with_one(1.0f), *b = writer_with_one(2.0f);
  ck_assert_int_eq(clt_st_writer_save(a, path, &err), CLT_OK);
  ck_assert(read_x(path) == 1.0f);
  ck_assert_int_eq(clt_st_writer_save(b, path, &err), CLT_OK);
  ck_assert(read_x(path) == 2.0f);
  char listing[1024];
  list_dir(tmp_dir, listing, sizeof listing);
  ck_assert_str_eq(listing, "ckpt.safetensors\n"); /* no temporary left */
  clt_st_writer_destroy(a);
  clt_st_writer_destroy(b);
}
END_TEST

START_TEST(test_failed_save_leaves_nothing) {
  clt_err err = {0};
  clt_st_writer *w = writer_with_one(3.0f);
  char listing[1024];

  /* A folder that does not exist. */
  char path[600];
  snprintf(path, sizeof path, "%s/missing/ckpt.safetensors", tmp_dir);
  ck_assert_int_eq(clt_st_writer_save(w, path, &err), CLT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err.msg, path));
  ck_assert_ptr_nonnull(strstr(err.msg, "No such file"));
  list_dir(tmp_dir, listing, sizeof listing);
  ck_assert_str_eq(listing, "");

  /* The rename fails when the target is a folder: the data was written,
   * so this checks that the temporary file is removed. */
  const char *folder = tmp_path("taken");
  ck_assert_int_eq(mkdir(folder, 0700), 0);
  ck_assert_int_eq(clt_st_writer_save(w, folder, &err), CLT_ERR_IO);
  ck_assert_ptr_nonnull(strstr(err.msg, "cannot replace"));
  list_dir(tmp_dir, listing, sizeof listing);
  ck_assert_str_eq(listing, "taken\n");

  /* A folder without write permission (root ignores permissions). */
  if (geteuid() != 0) {
    const char *ro = tmp_path("readonly");
    ck_assert_int_eq(mkdir(ro, 0500), 0);
    snprintf(path, sizeof path, "%s/ckpt.safetensors", ro);
    ck_assert_int_eq(clt_st_writer_save(w, path, &err), CLT_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.msg, "Permission denied"));
    list_dir(ro, listing, sizeof listing);
    ck_assert_str_eq(listing, "");
  }
  clt_st_writer_destroy(w);
}
END_TEST

/* A failed save over a good checkpoint keeps the good one. */
START_TEST(test_failed_save_keeps_old_file) {
  clt_err err = {0};
  const char *path = tmp_path("good.safetensors");
  clt_st_writer *a = writer_with_one(5.0f);
  ck_assert_int_eq(clt_st_writer_save(a, path, &err), CLT_OK);
  clt_st_writer_destroy(a);
  /* Writing a file into a "folder" that is a regular file fails. */
  char bad[600];
  snprintf(bad, sizeof bad, "%s/sub", path);
  clt_st_writer *b = writer_with_one(6.0f);
  ck_assert_int_eq(clt_st_writer_save(b, bad, &err), CLT_ERR_IO);
  clt_st_writer_destroy(b);
  ck_assert(read_x(path) == 5.0f);
}
END_TEST

START_TEST(test_writer_rejects_bad_tensors) {
  clt_st_writer *w = NULL;
  clt_err err = {0};
  ck_assert_int_eq(clt_st_writer_create(&w, &err), CLT_OK);
  int64_t shape[9] = {2, 2, 1, 1, 1, 1, 1, 1, 1};
  float data[4] = {0};
  clt_status bad = CLT_ERR_INVALID_ARGUMENT;
  ck_assert_int_eq(clt_st_writer_add(w, "a", CLT_ST_F32, 2, shape, data, &err),
                   CLT_OK);
  ck_assert_int_eq(clt_st_writer_add(w, "a", CLT_ST_F32, 2, shape, data, &err),
                   bad);
  ck_assert_ptr_nonnull(strstr(err.msg, "'a' added twice"));
  ck_assert_int_eq(
      clt_st_writer_add(w, "__metadata__", CLT_ST_F32, 2, shape, data, &err),
      bad);
  ck_assert_int_eq(
      clt_st_writer_add(w, "bad\xc3", CLT_ST_F32, 2, shape, data, &err), bad);
  ck_assert_ptr_nonnull(strstr(err.msg, "not UTF-8"));
  ck_assert_int_eq(clt_st_writer_add(w, "b", CLT_ST_F32, 9, shape, data, &err),
                   bad);
  ck_assert_int_eq(clt_st_writer_add(w, "b", CLT_ST_F32, -1, shape, data, &err),
                   bad);
  int64_t negative[2] = {2, -2};
  ck_assert_int_eq(
      clt_st_writer_add(w, "b", CLT_ST_F32, 2, negative, data, &err), bad);
  int64_t huge[2] = {INT64_MAX / 2, 3};
  ck_assert_int_eq(clt_st_writer_add(w, "b", CLT_ST_F32, 2, huge, data, &err),
                   bad);
  ck_assert_int_eq(clt_st_writer_add(w, "b", CLT_ST_F32, 2, shape, NULL, &err),
                   bad);
  ck_assert_int_eq(
      clt_st_writer_add(w, "b", (clt_st_dtype)99, 2, shape, data, &err), bad);
  int64_t empty[2] = {0, 5};
  ck_assert_int_eq(clt_st_writer_add(w, "e", CLT_ST_F32, 2, empty, NULL, &err),
                   CLT_OK);
  ck_assert_int_eq(clt_st_writer_add(w, "s", CLT_ST_F64, 0, NULL, data, &err),
                   CLT_OK);
  /* Only the good ones made it. */
  uint8_t *img;
  size_t size;
  ck_assert_int_eq(clt_st_writer_serialize(w, &img, &size, &err), CLT_OK);
  clt_st_file f;
  ck_assert_int_eq(clt_st_parse(img, size, "w", &f, &err), CLT_OK);
  ck_assert_uint_eq(f.count, 3);
  ck_assert_int_eq(clt_st_find(&f, "s")->ndim, 0);
  ck_assert_uint_eq(clt_st_tensor_nbytes(clt_st_find(&f, "s")), 8);
  clt_st_file_free(&f);
  free(img);
  clt_st_writer_destroy(w);
}
END_TEST

START_TEST(test_empty_writer) {
  clt_st_writer *w = NULL;
  clt_err err = {0};
  ck_assert_int_eq(clt_st_writer_create(&w, &err), CLT_OK);
  const char *path = tmp_path("empty.safetensors");
  ck_assert_int_eq(clt_st_writer_save(w, path, &err), CLT_OK);
  clt_st_writer_destroy(w);
  size_t n;
  uint8_t *b = read_bytes(path, &n);
  ck_assert_uint_eq(n, 16);
  ck_assert_int_eq(memcmp(b + 8, "{}      ", 8), 0);
  free(b);
  clt_st_file f;
  ck_assert_int_eq(clt_st_read_file(path, &f, &err), CLT_OK);
  ck_assert_uint_eq(f.count, 0);
  ck_assert_uint_eq(f.data_size, 0);
  clt_st_file_free(&f);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* clt_st_expect                                                             */

START_TEST(test_expect_messages) {
  clt_st_writer *w = NULL;
  clt_err err = {0};
  ck_assert_int_eq(clt_st_writer_create(&w, &err), CLT_OK);
  int64_t shape[2] = {128, 784};
  float *zeros = calloc(128 * 784, sizeof *zeros);
  ck_assert_int_eq(
      clt_st_writer_add(w, "fc1.weight", CLT_ST_F32, 2, shape, zeros, &err),
      CLT_OK);
  double d = 1;
  ck_assert_int_eq(clt_st_writer_add(w, "step", CLT_ST_F64, 0, NULL, &d, &err),
                   CLT_OK);
  free(zeros);
  const char *path = tmp_path("checkpoint.safetensors");
  ck_assert_int_eq(clt_st_writer_save(w, path, &err), CLT_OK);
  clt_st_writer_destroy(w);

  clt_st_file f;
  ck_assert_int_eq(clt_st_read_file(path, &f, &err), CLT_OK);
  const clt_st_tensor *t = NULL;
  ck_assert_int_eq(
      clt_st_expect(&f, "fc1.weight", CLT_ST_F32, 2, shape, &t, &err), CLT_OK);
  ck_assert_ptr_eq(t, clt_st_find(&f, "fc1.weight"));

  char want[1024];
  int64_t other[2] = {64, 784};
  ck_assert_int_eq(
      clt_st_expect(&f, "fc1.weight", CLT_ST_F32, 2, other, &t, &err),
      CLT_ERR_SHAPE);
  ck_assert_ptr_null(t);
  snprintf(want, sizeof want,
           "%s: tensor 'fc1.weight' has shape [128, 784], "
           "the model expects [64, 784]",
           path);
  ck_assert_str_eq(err.msg, want);

  ck_assert_int_eq(
      clt_st_expect(&f, "fc1.bias", CLT_ST_F32, 1, other, NULL, &err),
      CLT_ERR_FORMAT);
  snprintf(want, sizeof want, "%s: missing tensor 'fc1.bias'", path);
  ck_assert_str_eq(err.msg, want);

  ck_assert_int_eq(clt_st_expect(&f, "step", CLT_ST_F32, 0, NULL, NULL, &err),
                   CLT_ERR_FORMAT);
  snprintf(want, sizeof want, "%s: tensor 'step' has dtype F64, expected F32",
           path);
  ck_assert_str_eq(err.msg, want);
  /* shape NULL checks the dtype only; a NULL err is allowed. */
  ck_assert_int_eq(clt_st_expect(&f, "step", CLT_ST_F64, 5, NULL, NULL, NULL),
                   CLT_OK);
  clt_st_file_free(&f);
}
END_TEST

START_TEST(test_dtype_helpers) {
  for (int d = 0; d < DTYPE_N; d++) {
    clt_st_dtype back;
    ck_assert(clt_st_dtype_from_name(clt_st_dtype_name(all_dtypes[d]), &back));
    ck_assert_int_eq(back, all_dtypes[d]);
  }
  static const size_t sizes[DTYPE_N] = {4, 2, 4, 1, 8, 8};
  for (int d = 0; d < DTYPE_N; d++)
    ck_assert_uint_eq(clt_st_dtype_size(all_dtypes[d]), sizes[d]);
  clt_st_dtype x;
  ck_assert(!clt_st_dtype_from_name("BF16", &x));
  ck_assert_uint_eq(clt_st_dtype_size((clt_st_dtype)42), 0);
  ck_assert_str_eq(clt_st_dtype_name((clt_st_dtype)42), "?");
  clt_dtype c;
  ck_assert_int_eq(clt_st_dtype_to_clt(CLT_ST_F16, &c), CLT_OK);
  ck_assert_int_eq(c, CLT_F16);
  ck_assert_int_eq(clt_st_dtype_to_clt(CLT_ST_F64, &c), CLT_ERR_UNSUPPORTED);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Malformed files                                                           */

typedef struct bad_case {
  const char *header;
  size_t data_size;
  clt_status status;
  const char *needle; /* must appear in the message */
} bad_case;

#define T(name, dtype, shape, offsets)                                         \
  "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape                     \
  ",\"data_offsets\":" offsets "}"

static const bad_case bad_cases[] = {
    /* Syntax, with positions. */
    {"{\"a\": {\"dtype\": \"F32\",, }}", 0, CLT_ERR_FORMAT,
     "not valid JSON: line 1, column 23 (header byte 22): expected a string "
     "key, found ','"},
    {"{\n  \"a\": 1\n  \"b\": 2\n}", 0, CLT_ERR_FORMAT,
     "line 3, column 3 (header byte 13): expected ',' or '}' after an object "
     "member, found '\"'"},
    {"", 0, CLT_ERR_FORMAT, "expected a value, found end of input"},
    {"{\"a\":", 0, CLT_ERR_FORMAT, "expected a value, found end of input"},
    {"{\"a", 0, CLT_ERR_FORMAT,
     "line 1, column 2 (header byte 1): "
     "unterminated string"},
    {"{} x", 0, CLT_ERR_FORMAT, "unexpected 'x' after the end"},
    {"{\"a\":tru}", 0, CLT_ERR_FORMAT, "invalid literal"},
    {"{\"a\":01}", 0, CLT_ERR_FORMAT, "leading zero"},
    {"{\"a\":1.}", 0, CLT_ERR_FORMAT, "a digit must follow '.'"},
    {"{\"a\":-}", 0, CLT_ERR_FORMAT, "a digit must follow '-'"},
    {"{\"a\":1e+}", 0, CLT_ERR_FORMAT, "the exponent has no digits"},
    {"{\"a\":[1,]}", 0, CLT_ERR_FORMAT, "expected a value, found ']'"},
    {"{\"a\":{},}", 0, CLT_ERR_FORMAT, "expected a string key, found '}'"},
    {"{'a':1}", 0, CLT_ERR_FORMAT, "expected a string key, found '''"},
    {"{\"\\q\":1}", 0, CLT_ERR_FORMAT, "invalid escape: backslash before 'q'"},
    {"{\"\\u12\":1}", 0, CLT_ERR_FORMAT, "invalid \\u escape"},
    {"{\"\\ud800\":1}", 0, CLT_ERR_FORMAT, "unpaired surrogate \\uD800"},
    {"{\"\\udc00\\ud800\":1}", 0, CLT_ERR_FORMAT, "unpaired surrogate"},
    {"{\"a\tb\":1}", 0, CLT_ERR_FORMAT, "control character 0x09"},
    {"{\"\xc0\xaf\":1}", 0, CLT_ERR_FORMAT, "invalid UTF-8"},
    {"{\"\xed\xa0\x80\":1}", 0, CLT_ERR_FORMAT, "invalid UTF-8"},
    {"{\"\xf4\x90\x80\x80\":1}", 0, CLT_ERR_FORMAT, "invalid UTF-8"},
    {"{\"a\":[[[[[[[[[[1]]]]]]]]]]}", 0, CLT_ERR_FORMAT,
     "nesting deeper than 8 levels"},
    {"\xef\xbb\xbf{}", 0, CLT_ERR_FORMAT, "expected a value, found byte 0xef"},
    /* Structure. */
    {"[1,2]", 0, CLT_ERR_FORMAT,
     "the header is an array, expected a JSON "
     "object"},
    {"\"x\"", 0, CLT_ERR_FORMAT, "the header is a string"},
    {"{\"a\":5}", 0, CLT_ERR_FORMAT,
     "tensor 'a': expected an object with dtype, shape and data_offsets, "
     "found a number"},
    {"{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, CLT_ERR_FORMAT,
     "tensor 'a': missing 'dtype'"},
    {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, CLT_ERR_FORMAT,
     "tensor 'a': missing 'shape'"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, CLT_ERR_FORMAT,
     "tensor 'a': missing 'data_offsets'"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offset\":[0,4]}}", 4,
     CLT_ERR_FORMAT, "tensor 'a': unknown field 'data_offset'"},
    {"{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],"
     "\"data_offsets\":[0,4]}}",
     4, CLT_ERR_FORMAT, "tensor 'a': 'dtype' appears twice"},
    {"{" T("a", "F32", "[1]", "[0,4]") "," T("a", "F32", "[1]", "[4,8]") "}", 8,
     CLT_ERR_FORMAT, "duplicate tensor name 'a'"},
    {"{\"a\\u0000b\":{}}", 0, CLT_ERR_FORMAT, "NUL character"},
    /* Field types. */
    {"{\"a\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     CLT_ERR_FORMAT, "tensor 'a': 'dtype' must be a string, found a number"},
    {"{" T("a", "F32", "\"1\"", "[0,4]") "}", 4, CLT_ERR_FORMAT,
     "tensor 'a': 'shape' must be an array of integers, found a string"},
    {"{" T("a", "F32", "[1,null]", "[0,4]") "}", 4, CLT_ERR_FORMAT,
     "'shape' must be an array of integers, found null in it"},
    {"{" T("a", "F32", "[1.5]", "[0,4]") "}", 4, CLT_ERR_FORMAT,
     "tensor 'a': 'shape': expected an integer, found 1.5"},
    {"{" T("a", "F32", "[1e2]", "[0,4]") "}", 4, CLT_ERR_FORMAT,
     "expected an integer, found 1e2"},
    {"{" T("a", "F32", "[1]", "[0]") "}", 4, CLT_ERR_FORMAT,
     "'data_offsets' must be two integers [begin, end], found 1"},
    {"{" T("a", "F32", "[1]", "[0,4,8]") "}", 8, CLT_ERR_FORMAT,
     "'data_offsets' has more than 2 entries"},
    {"{" T("a", "F32", "[1]", "{}") "}", 4, CLT_ERR_FORMAT,
     "'data_offsets' must be an array of integers, found an object"},
    {"{" T("a", "F32", "[1]", "[-4,0]") "}", 4, CLT_ERR_FORMAT,
     "'data_offsets' holds the negative number -4"},
    /* Dtypes. */
    {"{" T("a", "F17", "[1]", "[0,4]") "}", 4, CLT_ERR_FORMAT,
     "tensor 'a' has unknown dtype 'F17'"},
    {"{" T("a", "f32", "[1]", "[0,4]") "}", 4, CLT_ERR_FORMAT,
     "unknown dtype 'f32'"},
    {"{" T("a", "BF16", "[2]", "[0,4]") "}", 4, CLT_ERR_UNSUPPORTED,
     "tensor 'a' has dtype BF16, which cltrain does not support"},
    /* Shapes. */
    {"{" T("a", "F32", "[-1,4]", "[0,4]") "}", 4, CLT_ERR_FORMAT,
     "tensor 'a': 'shape' holds the negative number -1"},
    {"{" T("a", "U8", "[4294967296,4294967296]", "[0,4]") "}", 4,
     CLT_ERR_FORMAT, "shape [4294967296, 4294967296] has too many elements"},
    {"{" T("a", "F64", "[2305843009213693952]", "[0,4]") "}", 4, CLT_ERR_FORMAT,
     "has too many elements"},
    {"{" T("a", "U8", "[99999999999999999999]", "[0,4]") "}", 4, CLT_ERR_FORMAT,
     "integer 99999999999999999999 is out of range"},
    {"{" T("a", "U8", "[1,1,1,1,1,1,1,1,1]", "[0,1]") "}", 1, CLT_ERR_FORMAT,
     "'shape' has more than 8 entries"},
    {"{" T("a", "F32", "[2,3]", "[0,20]") "}", 20, CLT_ERR_FORMAT,
     "tensor 'a': shape [2, 3] of F32 needs 24 bytes, but data_offsets "
     "[0, 20] hold 20"},
    {"{" T("a", "F32", "[]", "[0,8]") "}", 8, CLT_ERR_FORMAT,
     "shape [] of F32 needs 4 bytes"},
    /* Offsets. */
    {"{" T("a", "U8", "[0]", "[8,4]") "}", 8, CLT_ERR_FORMAT,
     "tensor 'a': data_offsets [8, 4] begin after they end"},
    {"{" T("a", "F32", "[100]", "[0,400]") "}", 4, CLT_ERR_FORMAT,
     "tensor 'a': data_offsets [0, 400] reach outside the data buffer (4 "
     "bytes)"},
    {"{" T("a", "U8", "[1]", "[9223372036854775806,9223372036854775807]") "}",
     4, CLT_ERR_FORMAT, "reach outside the data buffer"},
    {"{" T("a", "F32", "[2]", "[0,8]") "," T("b", "F32", "[2]", "[4,12]") "}",
     12, CLT_ERR_FORMAT,
     "tensors 'a' [0, 8) and 'b' [4, 12) overlap in the data buffer"},
    {"{" T("a", "F32", "[2]", "[0,8]") "," T("e", "F32", "[0]", "[4,4]") "}", 8,
     CLT_ERR_FORMAT, "overlap"},
    {"{" T("a", "F32", "[1]", "[0,4]") "," T("b", "F32", "[1]", "[8,12]") "}",
     12, CLT_ERR_FORMAT,
     "bytes [4, 8) of the data buffer (12 bytes) belong to no tensor"},
    {"{" T("a", "F32", "[1]", "[4,8]") "}", 8, CLT_ERR_FORMAT,
     "bytes [0, 4) of the data buffer"},
    {"{" T("a", "F32", "[1]", "[0,4]") "}", 8, CLT_ERR_FORMAT,
     "bytes [4, 8) of the data buffer (8 bytes) belong to no tensor"},
    {"{}", 3, CLT_ERR_FORMAT, "bytes [0, 3) of the data buffer"},
    /* Metadata. */
    {"{\"__metadata__\":{\"k\":1}}", 0, CLT_ERR_FORMAT,
     "metadata value for key 'k' is a number, expected a string"},
    {"{\"__metadata__\":{\"k\":{\"x\":\"y\"}}}", 0, CLT_ERR_FORMAT,
     "metadata value for key 'k' is an object, expected a string"},
    {"{\"__metadata__\":[\"k\"]}", 0, CLT_ERR_FORMAT,
     "__metadata__ is an array, expected an object of strings"},
    {"{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, CLT_ERR_FORMAT,
     "duplicate metadata key 'k'"},
    {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, CLT_ERR_FORMAT,
     "__metadata__ appears twice"},
    {"{\"__metadata__\":{\"k\":\"a\\u0000\"}}", 0, CLT_ERR_FORMAT,
     "metadata value for key 'k' contains a NUL character"},
    /* Inputs the fuzzer finds go here (none so far). */
};
#define BAD_N ((int)(sizeof bad_cases / sizeof bad_cases[0]))

/* Checks one failure: the status, the file name first, the needle. */
static void check_failure(clt_status got, const clt_st_file *f,
                          const clt_err *err, clt_status want_status,
                          const char *source, const char *needle) {
  ck_assert_msg(got == want_status, "status %d, want %d; message: %s", (int)got,
                (int)want_status, err->msg);
  ck_assert_msg(strncmp(err->msg, source, strlen(source)) == 0,
                "message does not start with '%s': %s", source, err->msg);
  ck_assert_msg(strstr(err->msg, needle) != NULL, "message lacks '%s': %s",
                needle, err->msg);
  clt_st_file zero;
  memset(&zero, 0, sizeof zero);
  ck_assert(memcmp(f, &zero, sizeof zero) == 0); /* zeroed on failure */
}

START_TEST(test_malformed_header) {
  const bad_case *c = &bad_cases[_i];
  size_t size;
  uint8_t *img = make_image(c->header, c->data_size, &size);
  const char *path = tmp_path("bad.safetensors");
  write_bytes(path, img, size);
  clt_st_file f;
  clt_err err = {0};
  clt_status st = clt_st_read_file(path, &f, &err);
  check_failure(st, &f, &err, c->status, path, c->needle);
  /* From memory, the same verdict. */
  memset(&err, 0, sizeof err);
  st = clt_st_parse(img, size, "mem.safetensors", &f, &err);
  check_failure(st, &f, &err, c->status, "mem.safetensors", c->needle);
  free(img);
}
END_TEST

START_TEST(test_too_short) {
  const char *path = tmp_path("short.safetensors");
  clt_st_file f;
  clt_err err = {0};
  write_bytes(path, "", 0);
  check_failure(clt_st_read_file(path, &f, &err), &f, &err, CLT_ERR_FORMAT,
                path, "the file is 0 bytes, too short");
  write_bytes(path, "\x02\0\0\0\0", 5);
  check_failure(clt_st_read_file(path, &f, &err), &f, &err, CLT_ERR_FORMAT,
                path, "the file is 5 bytes, too short");
  check_failure(clt_st_parse(NULL, 0, "x", &f, &err), &f, &err, CLT_ERR_FORMAT,
                "x", "too short");
}
END_TEST

START_TEST(test_header_length_past_end) {
  const char *path = tmp_path("long.safetensors");
  clt_st_file f;
  clt_err err = {0};
  uint8_t b[18] = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
  write_bytes(path, b, sizeof b);
  check_failure(clt_st_read_file(path, &f, &err), &f, &err, CLT_ERR_FORMAT,
                path,
                "the header length 100 is larger than the file "
                "(18 bytes)");
  memset(b, 0xff, 8);
  write_bytes(path, b, sizeof b);
  check_failure(clt_st_read_file(path, &f, &err), &f, &err, CLT_ERR_FORMAT,
                path, "the header length 18446744073709551615 is larger");
  /* One byte short of the header it announces. */
  size_t size;
  uint8_t *img = make_image("{}", 0, &size);
  check_failure(clt_st_parse(img, size - 1, "cut", &f, &err), &f, &err,
                CLT_ERR_FORMAT, "cut", "larger than the file");
  free(img);
}
END_TEST

START_TEST(test_header_over_limit) {
  /* A sparse file just over the cap, whose length field claims it all:
   * refused from its first 8 bytes, before the file is read. */
  const char *path = tmp_path("huge.safetensors");
  uint64_t n = CLT_ST_MAX_HEADER_BYTES + 1;
  uint8_t head[8];
  for (int i = 0; i < 8; i++) head[i] = (uint8_t)(n >> (8 * i));
  write_bytes(path, head, 8);
  ck_assert_int_eq(truncate(path, (off_t)(n + 8)), 0);
  clt_st_file f;
  clt_err err = {0};
  check_failure(clt_st_read_file(path, &f, &err), &f, &err, CLT_ERR_FORMAT,
                path,
                "the header length 104857601 exceeds the limit of "
                "104857600 bytes");
}
END_TEST

START_TEST(test_unreadable_paths) {
  clt_st_file f;
  clt_err err = {0};
  const char *path = tmp_path("none.safetensors");
  check_failure(clt_st_read_file(path, &f, &err), &f, &err, CLT_ERR_IO, path,
                "cannot open: No such file or directory");
  check_failure(clt_st_read_file(tmp_dir, &f, &err), &f, &err, CLT_ERR_IO,
                tmp_dir, "not a regular file");
}
END_TEST

START_TEST(test_valid_edge_cases) {
  static const char *const good[] = {
      "{}",
      "  \r\n\t{ }  \n ",
      "{\"caf\\u00e9 \\ud83d\\ude00\\/\\\"\":"
      "{\"data_offsets\":[0,4],"
      "\"shape\":[1],\"dtype\":\"I32\"}}",
      "{" T("z", "F32", "[]", "[4,8]") "," T("e", "U8", "[0,3]", "[4,4]") "," T(
          "e2", "U8", "[0]", "[0,0]") "," T("a", "U8", "[4]",
                                            "[0,4]") ",\"__metadata__\":{}}",
  };
  static const size_t data[] = {0, 0, 4, 8};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    size_t size;
    uint8_t *img = make_image(good[i], data[i], &size);
    clt_st_file f;
    clt_err err = {0};
    ck_assert_msg(clt_st_parse(img, size, "good", &f, &err) == CLT_OK,
                  "case %zu: %s", i, err.msg);
    if (i == 2)
      ck_assert_ptr_nonnull(clt_st_find(&f, "caf\xc3\xa9 \xf0\x9f\x98\x80/\""));
    if (i == 3) {
      ck_assert_uint_eq(f.count, 4);
      ck_assert_int_eq(clt_st_find(&f, "z")->ndim, 0);
      ck_assert_int_eq(clt_st_find(&f, "e")->shape[1], 3);
    }
    clt_st_file_free(&f);
    free(img);
  }
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The JSON reader and writer helpers directly                               */

START_TEST(test_json_escape_round_trip) {
  /* Every byte 1..127 plus multi-byte UTF-8 survives escaping. */
  char raw[200];
  size_t n = 0;
  for (int c = 1; c < 128; c++) raw[n++] = (char)c;
  memcpy(raw + n, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9);
  n += 9;
  clt_json_buf b = {0};
  clt_json_buf_append_string(&b, raw, n);
  ck_assert(!b.failed);
  ck_assert(clt_json_validate(b.data, b.len, 0, NULL, NULL, 0));
  clt_json_reader r;
  clt_json_reader_init(&r, b.data, b.len, 0);
  char *back = NULL;
  size_t len = 0;
  ck_assert(clt_json_read_string(&r, &back, &len));
  ck_assert_uint_eq(len, n);
  ck_assert_int_eq(memcmp(back, raw, n), 0);
  free(back);
  clt_json_buf_free(&b);
  /* A NUL inside is escaped too, and comes back. */
  clt_json_buf_append_string(&b, "a\0b", 3);
  ck_assert_str_eq(b.data, "\"a\\u0000b\"");
  clt_json_buf_free(&b);
}
END_TEST

static bool int_of(const char *text, int64_t *v, char *why, size_t n) {
  clt_json_reader r;
  clt_json_reader_init(&r, text, strlen(text), 0);
  bool ok = clt_json_read_int64(&r, v) && clt_json_finish(&r);
  snprintf(why, n, "%s", r.error);
  return ok;
}

START_TEST(test_json_integers) {
  int64_t v;
  char why[192];
  ck_assert(int_of("9223372036854775807", &v, why, sizeof why));
  ck_assert_int_eq(v, INT64_MAX);
  ck_assert(int_of("-9223372036854775808", &v, why, sizeof why));
  ck_assert_int_eq(v, INT64_MIN);
  ck_assert(int_of(" -0 ", &v, why, sizeof why));
  ck_assert_int_eq(v, 0);
  ck_assert(!int_of("9223372036854775808", &v, why, sizeof why));
  ck_assert_ptr_nonnull(strstr(why, "out of range"));
  ck_assert(!int_of("-9223372036854775809", &v, why, sizeof why));
  ck_assert(!int_of("1.0", &v, why, sizeof why));
  ck_assert(!int_of("\"1\"", &v, why, sizeof why));
  ck_assert_str_eq(why, "expected an integer, found a string");
  const char *mixed = "[-0.5e-3, 1E+2, 0, true, false, null, {}, []]";
  ck_assert(clt_json_validate(mixed, strlen(mixed), 0, NULL, NULL, 0));
}
END_TEST

START_TEST(test_json_positions) {
  const char *text = "{\n  \"\xc3\xa9\xc3\xa9\": x}";
  size_t pos = 0;
  char why[192];
  ck_assert(!clt_json_validate(text, strlen(text), 0, &pos, why, sizeof why));
  int line, column;
  clt_json_line_column(text, strlen(text), pos, &line, &column);
  ck_assert_int_eq(line, 2);
  ck_assert_int_eq(column, 9); /* characters, not bytes */
  ck_assert_str_eq(why, "expected a value, found 'x'");
  /* The depth limit is a limit, not an approximation. */
  ck_assert(clt_json_validate("[[1]]", 5, 2, NULL, NULL, 0));
  ck_assert(!clt_json_validate("[[[1]]]", 7, 2, NULL, why, sizeof why));
  ck_assert_str_eq(why, "nesting deeper than 2 levels");
}
END_TEST

/* ------------------------------------------------------------------------ */

static Suite *safetensors_suite(void) {
  Suite *s = suite_create("safetensors");
  TCase *io = tcase_create("io");
  tcase_add_checked_fixture(io, make_tmp_dir, remove_tmp_dir);
  tcase_add_test(io, test_round_trip_every_dtype);
  tcase_add_test(io, test_round_trip_in_memory);
  tcase_add_test(io, test_metadata_round_trip);
  tcase_add_test(io, test_header_is_json_and_offsets_tile_the_data);
  tcase_add_test(io, test_data_alignment);
  tcase_add_test(io, test_reader_aligns_foreign_files);
  tcase_add_test(io, test_save_over_existing_file);
  tcase_add_test(io, test_failed_save_leaves_nothing);
  tcase_add_test(io, test_failed_save_keeps_old_file);
  tcase_add_test(io, test_writer_rejects_bad_tensors);
  tcase_add_test(io, test_empty_writer);
  tcase_add_test(io, test_expect_messages);
  tcase_add_test(io, test_dtype_helpers);
  suite_add_tcase(s, io);

  TCase *bad = tcase_create("malformed");
  tcase_add_checked_fixture(bad, make_tmp_dir, remove_tmp_dir);
  tcase_add_loop_test(bad, test_malformed_header, 0, BAD_N);
  tcase_add_test(bad, test_too_short);
  tcase_add_test(bad, test_header_length_past_end);
  tcase_add_test(bad, test_header_over_limit);
  tcase_add_test(bad, test_unreadable_paths);
  tcase_add_test(bad, test_valid_edge_cases);
  suite_add_tcase(s, bad);

  TCase *json = tcase_create("json");
  tcase_add_test(json, test_json_escape_round_trip);
  tcase_add_test(json, test_json_integers);
  tcase_add_test(json, test_json_positions);
  suite_add_tcase(s, json);
  return s;
}

int main(void) {
  int failed = test_run_checks(safetensors_suite(), CK_FORK_GETENV);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
