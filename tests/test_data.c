/* Tests of the data layer: IDX files (written here, plain and gzip, good
 * and broken), datasets, file lookup and the batch loader. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkdtemp, nftw, truncate, usleep */
#endif
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data/dataset.h"
#include "data/idx.h"
#include "data/loader.h"
#include "remove_tree.h"
#include "run_checks.h"

static char g_dir[256]; /* a fresh mkdtemp folder for this run */

/* ---- writing test files ------------------------------------------------ */

typedef struct bytes {
  unsigned char p[1 << 16];
  size_t n;
} bytes;

static void put_u8(bytes *b, unsigned v) {
  ck_assert_uint_lt(b->n, sizeof b->p);
  b->p[b->n++] = (unsigned char)v;
}

static void put_be(bytes *b, uint64_t v, int size) {
  for (int i = size - 1; i >= 0; i--) put_u8(b, (unsigned)(v >> (8 * i)));
}

/* The IDX header: magic, type, ndim, sizes. */
static void put_header(bytes *b, unsigned type, int ndim,
                       const uint32_t *dims) {
  put_u8(b, 0);
  put_u8(b, 0);
  put_u8(b, type);
  put_u8(b, (unsigned)ndim);
  for (int i = 0; i < ndim; i++) put_be(b, dims[i], 4);
}

static void path_in(char *out, const char *name) {
  snprintf(out, PATH_MAX, "%s/%s", g_dir, name);
}

static void write_plain(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, n, f), n);
  ck_assert_int_eq(fclose(f), 0);
}

static void write_gzip(const char *path, const void *data, size_t n) {
  gzFile gz = gzopen(path, "wb");
  ck_assert_ptr_nonnull(gz);
  ck_assert_int_eq(gzwrite(gz, data, (unsigned)n), (int)n);
  ck_assert_int_eq(gzclose(gz), Z_OK);
}

/* Writes b to g_dir/name, plain or gzip; the full path goes to path. */
static void write_file(char *path, const char *name, const bytes *b, bool gz) {
  path_in(path, name);
  if (gz) {
    write_gzip(path, b->p, b->n);
  } else {
    write_plain(path, b->p, b->n);
  }
}

static size_t file_size(const char *path) {
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  return (size_t)st.st_size;
}

/* A u8 images file of n images of h x w, pixel k of image i = i * 7 + k. */
static void write_images(char *path, const char *name, uint32_t n, uint32_t h,
                         uint32_t w, bool gz) {
  bytes b = {.n = 0};
  uint32_t dims[3] = {n, h, w};
  put_header(&b, CLT_IDX_U8, 3, dims);
  for (uint32_t i = 0; i < n; i++) {
    for (uint32_t k = 0; k < h * w; k++) put_u8(&b, (i * 7 + k) & 0xff);
  }
  write_file(path, name, &b, gz);
}

/* A u8 labels file of n labels, label i = i % classes. */
static void write_labels(char *path, const char *name, uint32_t n,
                         unsigned classes, bool gz) {
  bytes b = {.n = 0};
  put_header(&b, CLT_IDX_U8, 1, &n);
  for (uint32_t i = 0; i < n; i++) put_u8(&b, i % classes);
  write_file(path, name, &b, gz);
}

/* Status is want and the message holds every word (NULL-terminated). */
static void expect_error(clt_status got, clt_status want, const clt_err *err,
                         ...) {
  ck_assert_msg(got == want, "status %d, expected %d (message: %s)", got, want,
                err->msg);
  va_list ap;
  va_start(ap, err);
  for (const char *w = va_arg(ap, const char *); w;
       w = va_arg(ap, const char *)) {
    ck_assert_msg(strstr(err->msg, w), "message \"%s\" lacks \"%s\"", err->msg,
                  w);
  }
  va_end(ap);
}

/* Reads bytes b written as name (plain or gzip) and expects a format
 * error naming the file and holding the words. */
#define EXPECT_BAD_IDX(b, name, gz, ...)                               \
  do {                                                                 \
    char path_[PATH_MAX];                                              \
    write_file(path_, name, b, gz);                                    \
    clt_idx idx_;                                                      \
    clt_err err_ = {0};                                                \
    clt_status s_ = clt_idx_read(path_, &idx_, &err_);                 \
    expect_error(s_, CLT_ERR_FORMAT, &err_, path_, __VA_ARGS__, NULL); \
    ck_assert_ptr_null(idx_.data);                                     \
  } while (0)

/* ---- IDX: good files --------------------------------------------------- */

static void check_u8_roundtrip(bool gz, const char *name) {
  char path[PATH_MAX];
  write_images(path, name, 3, 4, 5, gz);
  clt_idx idx;
  clt_err err = {0};
  ck_assert_int_eq(clt_idx_read(path, &idx, &err), CLT_OK);
  ck_assert_int_eq(idx.type, CLT_IDX_U8);
  ck_assert_int_eq(idx.ndim, 3);
  ck_assert_int_eq(idx.dims[0], 3);
  ck_assert_int_eq(idx.dims[1], 4);
  ck_assert_int_eq(idx.dims[2], 5);
  ck_assert_uint_eq(idx.nbytes, 60);
  ck_assert_int_eq(clt_idx_count(&idx), 60);
  const uint8_t *px = idx.data;
  for (unsigned i = 0; i < 3; i++) {
    for (unsigned k = 0; k < 20; k++) {
      ck_assert_uint_eq(px[i * 20 + k], (i * 7 + k) & 0xff);
    }
  }
  clt_idx_free(&idx);
  ck_assert_ptr_null(idx.data);
}

START_TEST(test_idx_u8_plain) { check_u8_roundtrip(false, "u8-idx3-ubyte"); }
END_TEST

START_TEST(test_idx_u8_gzip) {
  check_u8_roundtrip(true, "u8-idx3-ubyte.gz");
  check_u8_roundtrip(true, "gzip-without-suffix");
}
END_TEST

START_TEST(test_idx_plain_named_gz) {
  check_u8_roundtrip(false, "plain-idx3-ubyte.gz");
}
END_TEST

START_TEST(test_idx_i32_big_endian) {
  const int32_t values[5] = {-2, 0x01020304, INT32_MIN, INT32_MAX, 7};
  for (int gz = 0; gz < 2; gz++) {
    bytes b = {.n = 0};
    uint32_t dims[1] = {5};
    put_header(&b, CLT_IDX_I32, 1, dims);
    for (int i = 0; i < 5; i++) put_be(&b, (uint32_t)values[i], 4);
    char path[PATH_MAX];
    write_file(path, gz ? "i32.gz" : "i32", &b, gz);
    clt_idx idx;
    clt_err err = {0};
    ck_assert_int_eq(clt_idx_read(path, &idx, &err), CLT_OK);
    ck_assert_int_eq(idx.type, CLT_IDX_I32);
    ck_assert_uint_eq(idx.nbytes, 20);
    for (int i = 0; i < 5; i++) {
      ck_assert_int_eq(((int32_t *)idx.data)[i], values[i]);
    }
    clt_idx_free(&idx);
  }
}
END_TEST

START_TEST(test_idx_f32_big_endian) {
  const float values[6] = {1.5f, -0.25f, 3e10f, 0.0f, -1e-20f, 255.0f};
  bytes b = {.n = 0};
  uint32_t dims[2] = {2, 3};
  put_header(&b, CLT_IDX_F32, 2, dims);
  for (int i = 0; i < 6; i++) {
    uint32_t bits;
    memcpy(&bits, &values[i], 4);
    put_be(&b, bits, 4);
  }
  char path[PATH_MAX];
  write_file(path, "f32.gz", &b, true);
  clt_idx idx;
  clt_err err = {0};
  ck_assert_int_eq(clt_idx_read(path, &idx, &err), CLT_OK);
  ck_assert_int_eq(idx.ndim, 2);
  ck_assert_int_eq(idx.dims[1], 3);
  for (int i = 0; i < 6; i++) {
    ck_assert_float_eq(((float *)idx.data)[i], values[i]);
  }
  clt_idx_free(&idx);
}
END_TEST

START_TEST(test_idx_i16_f64_big_endian) {
  bytes b = {.n = 0};
  uint32_t dims[1] = {3};
  put_header(&b, CLT_IDX_I16, 1, dims);
  put_be(&b, (uint16_t)-300, 2);
  put_be(&b, 0x0102, 2);
  put_be(&b, 0x7fff, 2);
  char path[PATH_MAX];
  write_file(path, "i16", &b, false);
  clt_idx idx;
  clt_err err = {0};
  ck_assert_int_eq(clt_idx_read(path, &idx, &err), CLT_OK);
  ck_assert_int_eq(((int16_t *)idx.data)[0], -300);
  ck_assert_int_eq(((int16_t *)idx.data)[1], 0x0102);
  ck_assert_int_eq(((int16_t *)idx.data)[2], 0x7fff);
  clt_idx_free(&idx);

  b.n = 0;
  put_header(&b, CLT_IDX_F64, 1, dims);
  const double values[3] = {-2.5, 1e300, 0.1};
  for (int i = 0; i < 3; i++) {
    uint64_t bits;
    memcpy(&bits, &values[i], 8);
    put_be(&b, bits, 8);
  }
  write_file(path, "f64", &b, false);
  ck_assert_int_eq(clt_idx_read(path, &idx, &err), CLT_OK);
  for (int i = 0; i < 3; i++) {
    ck_assert_double_eq(((double *)idx.data)[i], values[i]);
  }
  clt_idx_free(&idx);
}
END_TEST

/* A zero dimension is a legal, empty array for the reader. */
START_TEST(test_idx_zero_dimension) {
  bytes b = {.n = 0};
  uint32_t dims[3] = {0, 28, 28};
  put_header(&b, CLT_IDX_U8, 3, dims);
  char path[PATH_MAX];
  write_file(path, "empty-idx3-ubyte", &b, false);
  clt_idx idx;
  clt_err err = {0};
  ck_assert_int_eq(clt_idx_read(path, &idx, &err), CLT_OK);
  ck_assert_uint_eq(idx.nbytes, 0);
  ck_assert_int_eq(idx.dims[0], 0);
  clt_idx_free(&idx);
}
END_TEST

/* ---- IDX: bad files ---------------------------------------------------- */

START_TEST(test_idx_missing_file) {
  char path[PATH_MAX];
  path_in(path, "no-such-file");
  clt_idx idx;
  clt_err err = {0};
  expect_error(clt_idx_read(path, &idx, &err), CLT_ERR_IO, &err, path,
               "cannot open", "No such file", NULL);
  ck_assert_ptr_null(idx.data);
}
END_TEST

START_TEST(test_idx_directory) {
  clt_idx idx;
  clt_err err = {0};
  expect_error(clt_idx_read(g_dir, &idx, &err), CLT_ERR_IO, &err, g_dir,
               "not a regular file", NULL);
}
END_TEST

START_TEST(test_idx_bad_magic) {
  bytes b = {.n = 0};
  uint32_t dims[1] = {2};
  put_header(&b, CLT_IDX_U8, 1, dims);
  put_u8(&b, 1);
  put_u8(&b, 2);
  b.p[1] = 0x03;
  EXPECT_BAD_IDX(&b, "magic", false, "bad magic", "0x00 0x03");
  EXPECT_BAD_IDX(&b, "magic.gz", true, "bad magic");
}
END_TEST

START_TEST(test_idx_unknown_type) {
  bytes b = {.n = 0};
  uint32_t dims[1] = {2};
  put_header(&b, 0x0A, 1, dims);
  put_be(&b, 0, 2);
  EXPECT_BAD_IDX(&b, "type", false, "unknown", "type byte 0x0a");
}
END_TEST

START_TEST(test_idx_bad_ndim) {
  bytes b = {.n = 0};
  put_header(&b, CLT_IDX_U8, 0, NULL);
  EXPECT_BAD_IDX(&b, "ndim0", false, "declares 0 dimensions", "1 to 8");
  b.n = 0;
  uint32_t dims[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  put_header(&b, CLT_IDX_U8, 9, dims);
  put_u8(&b, 5);
  EXPECT_BAD_IDX(&b, "ndim9", false, "declares 9 dimensions");
}
END_TEST

START_TEST(test_idx_size_overflow) {
  bytes b = {.n = 0};
  uint32_t huge[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};
  put_header(&b, CLT_IDX_U8, 4, huge);
  EXPECT_BAD_IDX(&b, "overflow", false, "too large", "4294967295 x");
  EXPECT_BAD_IDX(&b, "overflow.gz", true, "too large");
  /* 65537 x 16384 i32 elements are just over 4 GiB ... */
  b.n = 0;
  uint32_t over[2] = {65537, 16384};
  put_header(&b, CLT_IDX_I32, 2, over);
  EXPECT_BAD_IDX(&b, "over-limit", false, "too large", "4 GiB");
  /* ... 65536 x 16384 are exactly 4 GiB: allowed, so the file is short */
  b.n = 0;
  uint32_t at[2] = {65536, 16384};
  put_header(&b, CLT_IDX_I32, 2, at);
  EXPECT_BAD_IDX(&b, "at-limit", false, "holds 0 bytes of data",
                 "header declares 4294967296");
}
END_TEST

START_TEST(test_idx_short_data) {
  bytes b = {.n = 0};
  uint32_t dims[2] = {2, 5};
  put_header(&b, CLT_IDX_U8, 2, dims);
  for (int i = 0; i < 7; i++) put_u8(&b, (unsigned)i);
  EXPECT_BAD_IDX(&b, "short", false, "holds 7 bytes of data",
                 "header declares 10");
  EXPECT_BAD_IDX(&b, "short.gz", true, "holds 7 bytes of data",
                 "header declares 10");
}
END_TEST

START_TEST(test_idx_trailing_bytes) {
  bytes b = {.n = 0};
  uint32_t dims[1] = {4};
  put_header(&b, CLT_IDX_I16, 1, dims);
  for (int i = 0; i < 11; i++) put_u8(&b, 9);
  EXPECT_BAD_IDX(&b, "trailing", false, "3 extra bytes", "the 8 bytes");
  EXPECT_BAD_IDX(&b, "trailing.gz", true, "3 extra bytes", "the 8 bytes");
}
END_TEST

START_TEST(test_idx_truncated_header) {
  bytes b = {.n = 0};
  put_u8(&b, 0);
  put_u8(&b, 0);
  put_u8(&b, CLT_IDX_U8);
  EXPECT_BAD_IDX(&b, "head3", false, "ends inside the IDX header");
  b.n = 0;
  EXPECT_BAD_IDX(&b, "empty", false, "ends inside the IDX header");
  uint32_t dims[3] = {1, 2, 3};
  put_header(&b, CLT_IDX_U8, 3, dims);
  b.n -= 5; /* cut into the second size */
  EXPECT_BAD_IDX(&b, "head-dims", false, "ends inside the IDX header",
                 "11 bytes", "needs 16");
  EXPECT_BAD_IDX(&b, "head-dims.gz", true, "ends inside the IDX header");
}
END_TEST

/* Writes a gzip images file, applies damage to its bytes, expects an error
 * about the gzip stream. */
static void check_damaged_gzip(const char *name, bool truncate) {
  char path[PATH_MAX];
  write_images(path, name, 40, 16, 16, true);
  size_t n = file_size(path);
  unsigned char *raw = malloc(n);
  FILE *f = fopen(path, "rb");
  ck_assert_uint_eq(fread(raw, 1, n, f), n);
  fclose(f);
  if (truncate) {
    n = n / 2;
  } else {
    for (size_t i = n / 2; i < n / 2 + 16; i++) raw[i] ^= 0x5a;
  }
  write_plain(path, raw, n);
  free(raw);
  clt_idx idx;
  clt_err err = {0};
  expect_error(clt_idx_read(path, &idx, &err), CLT_ERR_FORMAT, &err, path,
               "gzip stream", NULL);
  ck_assert_ptr_null(idx.data);
}

START_TEST(test_idx_corrupt_gzip) {
  check_damaged_gzip("corrupt.gz", false);
  check_damaged_gzip("cut.gz", true);
}
END_TEST

/* Data intact but the gzip trailer (CRC, length) cut off. */
START_TEST(test_idx_gzip_missing_trailer) {
  char path[PATH_MAX];
  write_images(path, "notrailer.gz", 3, 4, 5, true);
  size_t n = file_size(path);
  ck_assert_int_eq(truncate(path, (off_t)(n - 8)), 0);
  clt_idx idx;
  clt_err err = {0};
  expect_error(clt_idx_read(path, &idx, &err), CLT_ERR_FORMAT, &err, path,
               "gzip stream", NULL);
}
END_TEST

/* ---- datasets ---------------------------------------------------------- */

START_TEST(test_dataset_load_3d) {
  char img[PATH_MAX], lab[PATH_MAX];
  write_images(img, "ds-images.gz", 12, 3, 2, true);
  write_labels(lab, "ds-labels", 12, 7, false);
  clt_dataset ds;
  clt_err err = {0};
  ck_assert_int_eq(clt_dataset_load_idx(img, lab, 0, &ds, &err), CLT_OK);
  ck_assert_int_eq(ds.count, 12);
  ck_assert_int_eq(ds.channels, 1);
  ck_assert_int_eq(ds.height, 3);
  ck_assert_int_eq(ds.width, 2);
  ck_assert_int_eq(ds.num_classes, 7);
  for (int i = 0; i < 12; i++) {
    ck_assert_int_eq(ds.labels[i], i % 7);
    for (int k = 0; k < 6; k++) {
      ck_assert_uint_eq(ds.pixels[i * 6 + k], (unsigned)(i * 7 + k) & 0xff);
    }
  }
  clt_dataset_free(&ds);
  ck_assert_ptr_null(ds.pixels);
}
END_TEST

START_TEST(test_dataset_load_4d) {
  bytes b = {.n = 0};
  uint32_t dims[4] = {2, 3, 2, 2};
  put_header(&b, CLT_IDX_U8, 4, dims);
  for (int i = 0; i < 24; i++) put_u8(&b, (unsigned)i);
  char img[PATH_MAX], lab[PATH_MAX];
  write_file(img, "nchw-images", &b, false);
  write_labels(lab, "nchw-labels", 2, 2, true);
  clt_dataset ds;
  clt_err err = {0};
  ck_assert_int_eq(clt_dataset_load_idx(img, lab, -1, &ds, &err), CLT_OK);
  ck_assert_int_eq(ds.count, 2);
  ck_assert_int_eq(ds.channels, 3);
  ck_assert_int_eq(ds.height, 2);
  ck_assert_int_eq(ds.width, 2);
  ck_assert_int_eq(ds.num_classes, 2);
  ck_assert_uint_eq(ds.pixels[23], 23);
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(test_dataset_count_mismatch) {
  char img[PATH_MAX], lab[PATH_MAX];
  write_images(img, "mm-images", 5, 2, 2, false);
  write_labels(lab, "mm-labels", 4, 3, false);
  clt_dataset ds;
  clt_err err = {0};
  expect_error(clt_dataset_load_idx(img, lab, 0, &ds, &err), CLT_ERR_FORMAT,
               &err, img, lab, "holds 5 images", "holds 4 labels", NULL);
  ck_assert_ptr_null(ds.pixels);
  ck_assert_ptr_null(ds.labels);
}
END_TEST

START_TEST(test_dataset_limit) {
  char img[PATH_MAX], lab[PATH_MAX];
  write_images(img, "lim-images", 5, 2, 3, false);
  write_labels(lab, "lim-labels", 5, 5, false);
  clt_dataset ds;
  clt_err err = {0};
  ck_assert_int_eq(clt_dataset_load_idx(img, lab, 3, &ds, &err), CLT_OK);
  ck_assert_int_eq(ds.count, 3);
  ck_assert_int_eq(ds.num_classes, 3); /* labels 0, 1, 2 */
  ck_assert_uint_eq(ds.pixels[2 * 6 + 5], 2 * 7 + 5);
  clt_dataset_free(&ds);
  ck_assert_int_eq(clt_dataset_load_idx(img, lab, 100, &ds, &err), CLT_OK);
  ck_assert_int_eq(ds.count, 5);
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(test_dataset_bad_types) {
  char img[PATH_MAX], lab[PATH_MAX], bad[PATH_MAX];
  write_images(img, "ty-images", 3, 2, 2, false);
  write_labels(lab, "ty-labels", 3, 3, false);
  clt_dataset ds;
  clt_err err = {0};
  /* f32 labels */
  bytes b = {.n = 0};
  uint32_t n3 = 3;
  put_header(&b, CLT_IDX_F32, 1, &n3);
  for (int i = 0; i < 3; i++) put_be(&b, 0, 4);
  write_file(bad, "ty-f32-labels", &b, false);
  expect_error(clt_dataset_load_idx(img, bad, 0, &ds, &err), CLT_ERR_FORMAT,
               &err, bad, "labels must be integers", "f32", NULL);
  /* labels given as the images file: 3 dimensions */
  expect_error(clt_dataset_load_idx(img, img, 0, &ds, &err), CLT_ERR_FORMAT,
               &err, img, "1 dimension", NULL);
  /* images given as the labels file: 1 dimension */
  expect_error(clt_dataset_load_idx(lab, lab, 0, &ds, &err), CLT_ERR_FORMAT,
               &err, lab, "3 dimensions", NULL);
  /* i32 labels: in range works, 300 does not */
  b.n = 0;
  put_header(&b, CLT_IDX_I32, 1, &n3);
  put_be(&b, 4, 4);
  put_be(&b, 0, 4);
  put_be(&b, 300, 4);
  write_file(bad, "ty-i32-labels", &b, false);
  expect_error(clt_dataset_load_idx(img, bad, 0, &ds, &err), CLT_ERR_FORMAT,
               &err, bad, "label 2 is 300", "0 to 255", NULL);
  ck_assert_int_eq(clt_dataset_load_idx(img, bad, 2, &ds, &err), CLT_OK);
  ck_assert_int_eq(ds.num_classes, 5);
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(test_dataset_empty) {
  bytes b = {.n = 0};
  uint32_t dims[3] = {0, 2, 2};
  put_header(&b, CLT_IDX_U8, 3, dims);
  char img[PATH_MAX], lab[PATH_MAX];
  write_file(img, "none-images", &b, false);
  write_labels(lab, "none-labels", 0, 1, false);
  clt_dataset ds;
  clt_err err = {0};
  expect_error(clt_dataset_load_idx(img, lab, 0, &ds, &err), CLT_ERR_FORMAT,
               &err, img, "holds no images", NULL);
}
END_TEST

START_TEST(test_dataset_bad_file) {
  char img[PATH_MAX], lab[PATH_MAX];
  write_images(img, "bf-images", 3, 2, 2, false);
  path_in(lab, "bf-missing-labels");
  clt_dataset ds;
  clt_err err = {0};
  expect_error(clt_dataset_load_idx(img, lab, 0, &ds, &err), CLT_ERR_IO, &err,
               lab, NULL);
}
END_TEST

/* ---- resolving dataset folders ----------------------------------------- */

static void make_dir(char *path, const char *name) {
  path_in(path, name);
  ck_assert_int_eq(mkdir(path, 0700), 0);
}

static void ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  ck_assert_msg(n >= m && strcmp(s + n - m, suffix) == 0,
                "%s does not end with %s", s, suffix);
}

START_TEST(test_resolve_gz_dir) {
  char dir[PATH_MAX], p[PATH_MAX];
  make_dir(dir, "gzset");
  write_images(p, "gzset/train-images-idx3-ubyte.gz", 4, 2, 2, true);
  write_labels(p, "gzset/train-labels-idx1-ubyte.gz", 4, 2, true);
  write_images(p, "gzset/t10k-images-idx3-ubyte.gz", 2, 2, 2, true);
  write_labels(p, "gzset/t10k-labels-idx1-ubyte", 2, 2, false);
  char img[PATH_MAX], lab[PATH_MAX];
  clt_err err = {0};
  ck_assert_int_eq(clt_dataset_resolve(dir, true, img, lab, sizeof img, &err),
                   CLT_OK);
  ends_with(img, "/gzset/train-images-idx3-ubyte.gz");
  ends_with(lab, "/gzset/train-labels-idx1-ubyte.gz");
  ck_assert_int_eq(clt_dataset_resolve(dir, false, img, lab, sizeof img, &err),
                   CLT_OK);
  ends_with(img, "/gzset/t10k-images-idx3-ubyte.gz");
  ends_with(lab, "/gzset/t10k-labels-idx1-ubyte");
  clt_dataset ds;
  ck_assert_int_eq(clt_dataset_load_idx(img, lab, 0, &ds, &err), CLT_OK);
  ck_assert_int_eq(ds.count, 2);
  clt_dataset_free(&ds);
  /* the plain file wins when both exist */
  write_images(p, "gzset/t10k-images-idx3-ubyte", 2, 2, 2, false);
  ck_assert_int_eq(clt_dataset_resolve(dir, false, img, lab, sizeof img, &err),
                   CLT_OK);
  ends_with(img, "/gzset/t10k-images-idx3-ubyte");
}
END_TEST

START_TEST(test_resolve_missing) {
  char dir[PATH_MAX], img[PATH_MAX], lab[PATH_MAX], p[PATH_MAX];
  clt_err err = {0};
  path_in(dir, "no-such-dataset");
  expect_error(clt_dataset_resolve(dir, true, img, lab, sizeof img, &err),
               CLT_ERR_IO, &err, dir, "not found", NULL);
  make_dir(dir, "halfset");
  write_images(p, "halfset/train-images-idx3-ubyte", 2, 2, 2, false);
  expect_error(clt_dataset_resolve(dir, true, img, lab, sizeof img, &err),
               CLT_ERR_IO, &err, dir, "train-labels-idx1-ubyte", "not found",
               NULL);
  char small[16];
  expect_error(clt_dataset_resolve(dir, true, small, lab, sizeof small, &err),
               CLT_ERR_INVALID_ARGUMENT, &err, "longer than 15 bytes", NULL);
  expect_error(clt_dataset_resolve("", true, img, lab, sizeof img, &err),
               CLT_ERR_INVALID_ARGUMENT, &err, NULL);
}
END_TEST

#define FASHION_DIR "/usr/share/datasets/fashion-mnist"

static bool fashion_installed(void) {
  struct stat st;
  return stat(FASHION_DIR, &st) == 0 && S_ISDIR(st.st_mode);
}

START_TEST(test_resolve_fashion_name) {
  char img[PATH_MAX], lab[PATH_MAX];
  clt_err err = {0};
  clt_status s =
      clt_dataset_resolve("Fashion-MNIST", true, img, lab, sizeof img, &err);
  if (fashion_installed()) {
    ck_assert_int_eq(s, CLT_OK);
    ck_assert_str_eq(img, FASHION_DIR "/train-images-idx3-ubyte.gz");
  } else {
    expect_error(s, CLT_ERR_IO, &err, FASHION_DIR,
                 "apt-get install dataset-fashion-mnist", NULL);
  }
}
END_TEST

/* The real test set, when the Debian package is installed. */
START_TEST(test_fashion_mnist_test_set) {
  if (!fashion_installed()) return;
  char img[PATH_MAX], lab[PATH_MAX];
  clt_err err = {0};
  ck_assert_int_eq(
      clt_dataset_resolve("fashion-mnist", false, img, lab, sizeof img, &err),
      CLT_OK);
  clt_dataset ds;
  ck_assert_msg(clt_dataset_load_idx(img, lab, 0, &ds, &err) == CLT_OK, "%s",
                err.msg);
  ck_assert_int_eq(ds.count, 10000);
  ck_assert_int_eq(ds.channels, 1);
  ck_assert_int_eq(ds.height, 28);
  ck_assert_int_eq(ds.width, 28);
  ck_assert_int_eq(ds.num_classes, 10);
  int per_class[10] = {0};
  for (int i = 0; i < 10000; i++) per_class[ds.labels[i]]++;
  for (int c = 0; c < 10; c++) ck_assert_int_eq(per_class[c], 1000);
  clt_dataset_free(&ds);
}
END_TEST

/* ---- loader ------------------------------------------------------------ */

/* count images of c x h x w whose first two pixels hold the index (low,
 * high byte); the rest vary; label = index % 10. */
static clt_dataset make_indexed(int64_t count, int c, int h, int w) {
  clt_dataset ds = {.count = count, .channels = c, .height = h, .width = w};
  int64_t size = (int64_t)c * h * w;
  ck_assert_int_ge(size, 2);
  ds.pixels = malloc((size_t)(count * size));
  ds.labels = malloc((size_t)count * sizeof *ds.labels);
  for (int64_t i = 0; i < count; i++) {
    uint8_t *px = ds.pixels + i * size;
    px[0] = (uint8_t)(i & 0xff);
    px[1] = (uint8_t)(i >> 8);
    for (int64_t k = 2; k < size; k++) px[k] = (uint8_t)((i * 31 + k) & 0xff);
    ds.labels[i] = (int32_t)(i % 10);
  }
  ds.num_classes = count < 10 ? (int)count : 10;
  return ds;
}

static int64_t image_index(const float *image) {
  return lroundf(image[0] * 255.0f) + 256 * lroundf(image[1] * 255.0f);
}

static clt_loader *make_loader(const clt_dataset *ds, int batch, bool shuffle,
                               uint64_t seed) {
  clt_loader_options opts;
  clt_loader_options_init(&opts);
  opts.batch = batch;
  opts.shuffle = shuffle;
  opts.seed = seed;
  clt_loader *l = NULL;
  clt_err err = {0};
  ck_assert_msg(clt_loader_create(ds, &opts, &l, &err) == CLT_OK, "%s",
                err.msg);
  return l;
}

/* Runs one epoch; writes the image order into order (ds->count entries)
 * and checks batch sizes, labels and that pixels are copied exactly. */
static void run_epoch(clt_loader *l, const clt_dataset *ds, int batch,
                      int epoch, int64_t *order) {
  ck_assert_int_eq(clt_loader_start_epoch(l, epoch), CLT_OK);
  int64_t size = (int64_t)ds->channels * ds->height * ds->width;
  int64_t seen = 0, batches = 0;
  clt_host_batch b;
  while (clt_loader_next(l, &b)) {
    int64_t want = ds->count - seen < batch ? ds->count - seen : batch;
    ck_assert_int_eq(b.n, want);
    for (int64_t i = 0; i < b.n; i++) {
      const float *image = b.images + i * size;
      int64_t index = image_index(image);
      ck_assert_int_lt(index, ds->count);
      ck_assert_int_eq(b.labels[i], ds->labels[index]);
      for (int64_t k = 0; k < size; k++) {
        ck_assert_float_eq(image[k], ds->pixels[index * size + k] / 255.0f);
      }
      order[seen + i] = index;
    }
    seen += b.n;
    batches++;
    clt_loader_release(l, &b);
  }
  ck_assert_int_eq(seen, ds->count);
  ck_assert_int_eq(batches, clt_loader_batches_per_epoch(l));
  ck_assert(!clt_loader_next(l, &b)); /* stays at the end */
}

static void check_permutation(const int64_t *order, int64_t count) {
  char *hit = calloc((size_t)count, 1);
  for (int64_t i = 0; i < count; i++) {
    ck_assert_int_eq(hit[order[i]], 0);
    hit[order[i]] = 1;
  }
  free(hit);
}

/* Data parallelism: the shards of `shards` loaders, read global batch by
 * global batch, are one loader's epoch of batch * shards: every image
 * once, in the same order, with the same augmentation. */
static void check_shards(int64_t count, int batch, int shards, int pad,
                         bool flip) {
  clt_dataset ds = make_indexed(count, 1, 4, 4);
  int64_t size = 16, global = (int64_t)batch * shards;
  clt_loader_options opts;
  clt_loader_options_init(&opts);
  opts.batch = (int)global;
  opts.seed = 11;
  opts.pad_crop = pad;
  opts.hflip = flip;
  clt_loader *whole = NULL, *part[4] = {NULL};
  clt_err err = {0};
  ck_assert_int_eq(clt_loader_create(&ds, &opts, &whole, &err), CLT_OK);
  opts.batch = batch;
  opts.shard_count = shards;
  for (int r = 0; r < shards; r++) {
    opts.shard_rank = r;
    ck_assert_int_eq(clt_loader_create(&ds, &opts, &part[r], &err), CLT_OK);
    ck_assert_int_eq(clt_loader_batches_per_epoch(part[r]),
                     clt_loader_batches_per_epoch(whole));
  }
  char *hit = calloc((size_t)count, 1);
  for (int epoch = 0; epoch < 2; epoch++) {
    memset(hit, 0, (size_t)count);
    ck_assert_int_eq(clt_loader_start_epoch(whole, epoch), CLT_OK);
    for (int r = 0; r < shards; r++)
      ck_assert_int_eq(clt_loader_start_epoch(part[r], epoch), CLT_OK);
    clt_host_batch w, b;
    int64_t seen = 0;
    while (clt_loader_next(whole, &w)) {
      int64_t at = 0;
      for (int r = 0; r < shards; r++) {
        ck_assert(clt_loader_next(part[r], &b));
        ck_assert_int_eq(b.global_n, w.n);
        ck_assert_int_le(b.n, batch);
        /* the images and labels of this part of the global batch */
        ck_assert_mem_eq(b.images, w.images + at * size,
                         (size_t)(b.n * size) * sizeof(float));
        ck_assert_mem_eq(b.labels, w.labels + at,
                         (size_t)b.n * sizeof(int32_t));
        for (int64_t i = 0; pad == 0 && !flip && i < b.n; i++) {
          int64_t index = image_index(b.images + i * size);
          ck_assert_int_eq(hit[index], 0);
          hit[index] = 1;
        }
        at += b.n;
        clt_loader_release(part[r], &b);
      }
      ck_assert_int_eq(at, w.n);
      seen += w.n;
      clt_loader_release(whole, &w);
    }
    for (int r = 0; r < shards; r++) ck_assert(!clt_loader_next(part[r], &b));
    ck_assert_int_eq(seen, count);
    for (int64_t i = 0; pad == 0 && !flip && i < count; i++)
      ck_assert_int_eq(hit[i], 1);
  }
  free(hit);
  for (int r = 0; r < shards; r++) clt_loader_destroy(part[r]);
  clt_loader_destroy(whole);
  clt_dataset_free(&ds);
}

START_TEST(test_loader_shards_cover_epoch_once) {
  check_shards(1000, 32, 2, 0, false); /* 15 full global batches + 40 */
  check_shards(103, 10, 3, 0, false);  /* last global batch of 13: 4/4/5 */
  check_shards(65, 16, 4, 0, false);   /* last of 1: three empty shards */
}
END_TEST

START_TEST(test_loader_shards_augment_as_one) {
  check_shards(301, 8, 2, 2, true);
  check_shards(50, 5, 3, 1, true);
}
END_TEST

/* Byte mode (fit's: the device scales): the same images, bytes where
 * the floats were, each float the byte / 255 exactly; every crop, flip and
 * shard alike. An f32 dataset stays floats. */
static void check_bytes_match(int64_t count, int batch, int shards, int pad,
                              bool flip) {
  clt_dataset ds = make_indexed(count, 2, 5, 4);
  int64_t size = 40;
  clt_loader_options opts;
  clt_loader_options_init(&opts);
  opts.batch = batch;
  opts.seed = 3;
  opts.pad_crop = pad;
  opts.hflip = flip;
  opts.shard_count = shards;
  opts.shard_rank = shards > 1 ? 1 : 0;
  clt_loader *lf = NULL, *lb = NULL;
  clt_err err = {0};
  ck_assert_int_eq(clt_loader_create(&ds, &opts, &lf, &err), CLT_OK);
  opts.bytes = true;
  ck_assert_int_eq(clt_loader_create(&ds, &opts, &lb, &err), CLT_OK);
  for (int epoch = 0; epoch < 2; epoch++) {
    ck_assert_int_eq(clt_loader_start_epoch(lf, epoch), CLT_OK);
    ck_assert_int_eq(clt_loader_start_epoch(lb, epoch), CLT_OK);
    clt_host_batch f, b;
    int64_t seen = 0;
    while (clt_loader_next(lf, &f)) {
      ck_assert(clt_loader_next(lb, &b));
      ck_assert_int_eq(b.n, f.n);
      ck_assert_ptr_null(b.images);
      ck_assert_ptr_nonnull(b.bytes);
      ck_assert_ptr_null(f.bytes);
      ck_assert_mem_eq(b.labels, f.labels, (size_t)f.n * sizeof(int32_t));
      for (int64_t i = 0; i < f.n * size; i++)
        ck_assert_msg(f.images[i] == (float)b.bytes[i] / 255.0f,
                      "epoch %d value %lld: %g from floats, byte %d", epoch,
                      (long long)i, f.images[i], b.bytes[i]);
      seen += f.n;
      clt_loader_release(lf, &f);
      clt_loader_release(lb, &b);
    }
    ck_assert(!clt_loader_next(lb, &b));
    ck_assert_int_gt(seen, 0);
  }
  clt_loader_destroy(lf);
  clt_loader_destroy(lb);
  clt_dataset_free(&ds);
}

START_TEST(test_loader_bytes_match_floats) {
  check_bytes_match(103, 10, 1, 0, false); /* a last batch of 3 */
  check_bytes_match(103, 10, 1, 2, true);
  check_bytes_match(50, 5, 3, 1, true); /* shard 1 of 3 */
  /* f32 pixels: floats whatever is asked */
  clt_dataset ds = {.count = 3, .channels = 1, .height = 2, .width = 2};
  ds.fpixels = calloc(12, sizeof(float));
  ds.labels = calloc(3, sizeof(int32_t));
  ds.num_classes = 2;
  clt_loader_options opts;
  clt_loader_options_init(&opts);
  opts.batch = 2;
  opts.bytes = true;
  clt_loader *l = NULL;
  clt_err err = {0};
  ck_assert_int_eq(clt_loader_create(&ds, &opts, &l, &err), CLT_OK);
  ck_assert_int_eq(clt_loader_start_epoch(l, 0), CLT_OK);
  clt_host_batch b;
  ck_assert(clt_loader_next(l, &b));
  ck_assert_ptr_nonnull(b.images);
  ck_assert_ptr_null(b.bytes);
  clt_loader_release(l, &b);
  clt_loader_destroy(l);
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(test_loader_bad_shard) {
  clt_dataset ds = make_indexed(10, 1, 2, 2);
  clt_loader_options opts;
  clt_loader_options_init(&opts);
  opts.shard_count = 2;
  opts.shard_rank = 2;
  clt_loader *l = NULL;
  clt_err err = {0};
  ck_assert_int_eq(clt_loader_create(&ds, &opts, &l, &err),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(l);
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(test_loader_batches) {
  clt_dataset ds = make_indexed(103, 1, 3, 3);
  clt_loader *l = make_loader(&ds, 10, true, 1);
  ck_assert_int_eq(clt_loader_batches_per_epoch(l), 11);
  int64_t order[103];
  run_epoch(l, &ds, 10, 0, order); /* checks the last batch holds 3 */
  clt_loader_destroy(l);
  /* a batch larger than the dataset: one partial batch */
  l = make_loader(&ds, 500, true, 1);
  ck_assert_int_eq(clt_loader_batches_per_epoch(l), 1);
  run_epoch(l, &ds, 500, 0, order);
  check_permutation(order, 103);
  clt_loader_destroy(l);
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(test_loader_each_index_once) {
  clt_dataset ds = make_indexed(1000, 1, 2, 2);
  clt_loader *l = make_loader(&ds, 64, true, 42);
  int64_t order[1000];
  for (int epoch = 0; epoch < 3; epoch++) {
    run_epoch(l, &ds, 64, epoch, order);
    check_permutation(order, 1000);
  }
  clt_loader_destroy(l);
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(test_loader_identity_without_shuffle) {
  clt_dataset ds = make_indexed(50, 1, 2, 2);
  clt_loader *l = make_loader(&ds, 7, false, 42);
  int64_t order[50];
  for (int epoch = 0; epoch < 2; epoch++) {
    run_epoch(l, &ds, 7, epoch, order);
    for (int64_t i = 0; i < 50; i++) ck_assert_int_eq(order[i], i);
  }
  clt_loader_destroy(l);
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(test_loader_order_by_seed_and_epoch) {
  enum { N = 300 };
  clt_dataset ds = make_indexed(N, 1, 2, 2);
  clt_loader *a = make_loader(&ds, 16, true, 7);
  clt_loader *b = make_loader(&ds, 16, true, 7);
  clt_loader *c = make_loader(&ds, 16, true, 8);
  int64_t a0[N], b0[N], a1[N], again[N], c0[N];
  run_epoch(a, &ds, 16, 0, a0);
  run_epoch(b, &ds, 16, 0, b0);
  run_epoch(a, &ds, 16, 1, a1);
  run_epoch(c, &ds, 16, 0, c0);
  run_epoch(a, &ds, 16, 0, again);
  ck_assert_mem_eq(a0, b0, sizeof a0);    /* same seed, same order */
  ck_assert_mem_eq(a0, again, sizeof a0); /* epoch 0 is epoch 0 */
  ck_assert(memcmp(a0, a1, sizeof a0) != 0);
  ck_assert(memcmp(a0, c0, sizeof a0) != 0);
  int64_t identity = 0;
  for (int i = 0; i < N; i++) identity += a0[i] == i;
  ck_assert_int_lt(identity, N / 10);
  clt_loader_destroy(a);
  clt_loader_destroy(b);
  clt_loader_destroy(c);
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(test_loader_pixel_scaling) {
  clt_dataset ds = make_indexed(256, 1, 4, 4);
  for (int i = 0; i < 256; i++) ds.pixels[i * 16 + 5] = (uint8_t)i;
  clt_loader *l = make_loader(&ds, 32, true, 3);
  ck_assert_int_eq(clt_loader_start_epoch(l, 0), CLT_OK);
  clt_host_batch b;
  bool saw_zero = false, saw_one = false;
  while (clt_loader_next(l, &b)) {
    for (int64_t i = 0; i < b.n * 16; i++) {
      ck_assert(b.images[i] >= 0.0f && b.images[i] <= 1.0f);
    }
    for (int64_t i = 0; i < b.n; i++) {
      float v = b.images[i * 16 + 5];
      saw_zero |= v == 0.0f;
      saw_one |= v == 1.0f;
      ck_assert_float_eq(v, (float)image_index(b.images + i * 16) / 255.0f);
    }
    clt_loader_release(l, &b);
  }
  ck_assert(saw_zero && saw_one);
  clt_loader_destroy(l);
  clt_dataset_free(&ds);
}
END_TEST

/* Every image holds the same pattern: channel c, pixel (y, x) =
 * 1 + 100 * c + y * W + x, so every value is nonzero and names its place. */
enum { AUG_N = 200, AUG_C = 2, AUG_H = 7, AUG_W = 8 };

static clt_dataset make_patterned(void) {
  clt_dataset ds = {
      .count = AUG_N, .channels = AUG_C, .height = AUG_H, .width = AUG_W};
  int size = AUG_C * AUG_H * AUG_W;
  ds.pixels = malloc((size_t)AUG_N * size);
  ds.labels = calloc(AUG_N, sizeof *ds.labels);
  for (int i = 0; i < AUG_N; i++) {
    for (int c = 0; c < AUG_C; c++) {
      for (int k = 0; k < AUG_H * AUG_W; k++) {
        ds.pixels[i * size + c * AUG_H * AUG_W + k] =
            (uint8_t)(1 + 100 * c + k);
      }
    }
  }
  ds.num_classes = 1;
  return ds;
}

static clt_loader *make_aug_loader(const clt_dataset *ds, int pad, bool flip,
                                   uint64_t seed) {
  clt_loader_options opts;
  clt_loader_options_init(&opts);
  opts.batch = 16;
  opts.seed = seed;
  opts.pad_crop = pad;
  opts.hflip = flip;
  opts.depth = 4;
  clt_loader *l = NULL;
  clt_err err = {0};
  ck_assert_msg(clt_loader_create(ds, &opts, &l, &err) == CLT_OK, "%s",
                err.msg);
  return l;
}

/* Copies a whole epoch of images into out (count * size floats); with
 * slow set the consumer sleeps so that the worker runs ahead. */
static void collect_epoch(clt_loader *l, int epoch, int64_t size, bool slow,
                          float *out) {
  ck_assert_int_eq(clt_loader_start_epoch(l, epoch), CLT_OK);
  clt_host_batch b;
  int64_t at = 0;
  while (clt_loader_next(l, &b)) {
    if (slow) usleep(2000);
    memcpy(out + at * size, b.images, (size_t)(b.n * size) * sizeof(float));
    at += b.n;
    clt_loader_release(l, &b);
  }
  ck_assert_int_eq(at, AUG_N);
}

/* Does image equal the pattern shifted by (dy, dx), mirrored if flip,
 * zero outside? */
static bool matches_shift(const float *image, int dy, int dx, bool flip) {
  for (int c = 0; c < AUG_C; c++) {
    for (int y = 0; y < AUG_H; y++) {
      for (int x = 0; x < AUG_W; x++) {
        int sy = y + dy, sx = (flip ? AUG_W - 1 - x : x) + dx;
        bool inside = sy >= 0 && sy < AUG_H && sx >= 0 && sx < AUG_W;
        int want = inside ? 1 + 100 * c + sy * AUG_W + sx : 0;
        float got = image[(c * AUG_H + y) * AUG_W + x];
        if (lroundf(got * 255.0f) != want) return false;
      }
    }
  }
  return true;
}

/* Checks every image is a crop (|shift| <= pad) of the padded pattern,
 * maybe mirrored; returns how many distinct (dy, dx, flip) were seen. */
static int count_transforms(const float *images, int pad, bool flip) {
  bool seen[11][11][2] = {{{false}}};
  int distinct = 0;
  int64_t size = AUG_C * AUG_H * AUG_W;
  for (int i = 0; i < AUG_N; i++) {
    bool found = false;
    for (int dy = -pad; dy <= pad && !found; dy++) {
      for (int dx = -pad; dx <= pad && !found; dx++) {
        for (int f = 0; f <= (flip ? 1 : 0) && !found; f++) {
          if (!matches_shift(images + i * size, dy, dx, f)) continue;
          found = true;
          if (!seen[dy + 5][dx + 5][f]) distinct++;
          seen[dy + 5][dx + 5][f] = true;
        }
      }
    }
    ck_assert_msg(found, "image %d is no crop/flip of the original", i);
  }
  return distinct;
}

START_TEST(test_loader_augment_deterministic) {
  clt_dataset ds = make_patterned();
  int64_t size = AUG_C * AUG_H * AUG_W;
  size_t bytes_per_epoch = (size_t)(AUG_N * size) * sizeof(float);
  float *a = malloc(bytes_per_epoch), *b = malloc(bytes_per_epoch);
  clt_loader *la = make_aug_loader(&ds, 2, true, 99);
  clt_loader *lb = make_aug_loader(&ds, 2, true, 99);
  collect_epoch(la, 4, size, false, a);
  collect_epoch(lb, 4, size, true, b);
  ck_assert_mem_eq(a, b, bytes_per_epoch);
  collect_epoch(lb, 5, size, false, b);
  ck_assert(memcmp(a, b, bytes_per_epoch) != 0);
  clt_loader_destroy(la);
  clt_loader_destroy(lb);
  free(a);
  free(b);
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(test_loader_crop_keeps_image_or_zero) {
  clt_dataset ds = make_patterned();
  int64_t size = AUG_C * AUG_H * AUG_W;
  float *images = malloc((size_t)(AUG_N * size) * sizeof(float));
  clt_loader *l = make_aug_loader(&ds, 2, true, 5);
  collect_epoch(l, 0, size, false, images);
  /* 5 x 5 shifts x 2 flips = 50 transforms; 200 images meet most */
  ck_assert_int_ge(count_transforms(images, 2, true), 35);
  clt_loader_destroy(l);
  l = make_aug_loader(&ds, 0, true, 5); /* flip only: both outcomes */
  collect_epoch(l, 0, size, false, images);
  ck_assert_int_eq(count_transforms(images, 0, true), 2);
  clt_loader_destroy(l);
  l = make_aug_loader(&ds, 3, false, 5); /* crop only */
  collect_epoch(l, 0, size, false, images);
  ck_assert_int_ge(count_transforms(images, 3, false), 35);
  clt_loader_destroy(l);
  free(images);
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(test_loader_destroy_mid_epoch) {
  clt_dataset ds = make_indexed(500, 1, 4, 4);
  clt_loader *l = make_loader(&ds, 10, true, 1);
  clt_loader_destroy(l); /* never started */
  l = make_loader(&ds, 10, true, 1);
  ck_assert_int_eq(clt_loader_start_epoch(l, 0), CLT_OK);
  clt_loader_destroy(l); /* started, nothing taken */
  l = make_loader(&ds, 10, true, 1);
  ck_assert_int_eq(clt_loader_start_epoch(l, 0), CLT_OK);
  clt_host_batch b;
  ck_assert(clt_loader_next(l, &b));
  ck_assert(clt_loader_next(l, &b)); /* two held, the worker is blocked */
  clt_loader_destroy(l);
  clt_loader_destroy(NULL);
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(test_loader_restart_mid_epoch) {
  clt_dataset ds = make_indexed(200, 1, 2, 2);
  clt_loader *l = make_loader(&ds, 9, true, 11);
  ck_assert_int_eq(clt_loader_start_epoch(l, 0), CLT_OK);
  clt_host_batch b, held;
  ck_assert(clt_loader_next(l, &b));
  clt_loader_release(l, &b);
  ck_assert(clt_loader_next(l, &held));
  int64_t held_index = image_index(held.images);
  int64_t order[200];
  run_epoch(l, &ds, 9, 1, order); /* the old batch is still held */
  check_permutation(order, 200);
  ck_assert_int_eq(image_index(held.images), held_index);
  clt_loader_release(l, &held);
  run_epoch(l, &ds, 9, 2, order);
  check_permutation(order, 200);
  clt_loader_destroy(l);
  clt_dataset_free(&ds);
}
END_TEST

/* Double buffering: the caller holds two batches at a time (depth 3). */
START_TEST(test_loader_hold_two) {
  clt_dataset ds = make_indexed(97, 1, 2, 2);
  clt_loader *l = make_loader(&ds, 8, true, 2);
  ck_assert_int_eq(clt_loader_start_epoch(l, 0), CLT_OK);
  clt_host_batch prev, cur;
  int64_t order[97], seen = 0;
  ck_assert(clt_loader_next(l, &prev));
  for (int64_t i = 0; i < prev.n; i++)
    order[seen++] = image_index(prev.images + i * 4);
  while (clt_loader_next(l, &cur)) {
    ck_assert_int_ne(cur.slot, prev.slot);
    for (int64_t i = 0; i < cur.n; i++) {
      order[seen++] = image_index(cur.images + i * 4);
    }
    clt_loader_release(l, &prev);
    prev = cur;
  }
  clt_loader_release(l, &prev);
  ck_assert_int_eq(seen, 97);
  check_permutation(order, 97);
  clt_loader_destroy(l);
  clt_dataset_free(&ds);
}
END_TEST

/* Holding every slot would wait forever: next says false instead. */
START_TEST(test_loader_all_slots_held) {
  clt_dataset ds = make_indexed(100, 1, 2, 2);
  clt_loader_options opts;
  clt_loader_options_init(&opts);
  opts.batch = 10;
  opts.depth = 2;
  clt_loader *l = NULL;
  clt_err err = {0};
  ck_assert_int_eq(clt_loader_create(&ds, &opts, &l, &err), CLT_OK);
  clt_host_batch a, b, c;
  ck_assert(!clt_loader_next(l, &a)); /* no epoch yet */
  ck_assert_int_eq(clt_loader_start_epoch(l, 0), CLT_OK);
  ck_assert(clt_loader_next(l, &a));
  ck_assert(clt_loader_next(l, &b));
  ck_assert(!clt_loader_next(l, &c));
  clt_loader_release(l, &a);
  ck_assert(clt_loader_next(l, &c)); /* the third batch, after all */
  clt_loader_release(l, &b);
  clt_loader_release(l, &c);
  clt_loader_destroy(l);
  clt_dataset_free(&ds);
}
END_TEST

/* An allocator that counts what it gives out and gives back, and can be
 * told to run dry after `budget` buffers. */
typedef struct counting_alloc {
  int given, taken_back, budget;
  size_t bytes;
} counting_alloc;

static void *counting_buffer(void *user, size_t bytes, void **handle) {
  counting_alloc *c = user;
  if (c->given >= c->budget) return NULL;
  c->given++;
  c->bytes += bytes;
  *handle = c; /* the handle comes back to counting_buffer_free */
  return malloc(bytes);
}

static void counting_buffer_free(void *user, void *ptr, void *handle) {
  counting_alloc *c = user;
  ck_assert_ptr_eq(handle, c);
  c->taken_back++;
  free(ptr);
}

/* A loader whose ring comes from an allocator hands out the same batches
 * as one of malloc, and gives every buffer back; an allocator that runs
 * dry is an out-of-memory error that leaks nothing. */
START_TEST(test_loader_allocator) {
  clt_dataset ds = make_indexed(37, 1, 3, 3);
  int64_t order_plain[37], order_alloc[37];
  clt_loader *plain = make_loader(&ds, 5, true, 9);
  run_epoch(plain, &ds, 5, 1, order_plain);
  clt_loader_destroy(plain);

  counting_alloc c = {.budget = 1000};
  clt_loader_options opts;
  clt_loader_options_init(&opts);
  opts.batch = 5;
  opts.shuffle = true;
  opts.seed = 9;
  opts.depth = 4;
  opts.alloc = counting_buffer;
  opts.free_buffer = counting_buffer_free;
  opts.alloc_user = &c;
  clt_loader *l = NULL;
  clt_err err = {0};
  ck_assert_int_eq(clt_loader_create(&ds, &opts, &l, &err), CLT_OK);
  ck_assert_int_eq(c.given, 4 * 2); /* images and labels per slot */
  ck_assert_uint_eq(c.bytes, 4 * (5 * 9 * sizeof(float) + 5 * sizeof(int32_t)));
  run_epoch(l, &ds, 5, 1, order_alloc);
  for (int i = 0; i < 37; i++) ck_assert_int_eq(order_alloc[i], order_plain[i]);
  clt_loader_destroy(l);
  ck_assert_int_eq(c.taken_back, c.given);

  c = (counting_alloc){.budget = 5};
  l = NULL;
  expect_error(clt_loader_create(&ds, &opts, &l, &err), CLT_ERR_HOST_MEMORY,
               &err, "out of memory", NULL);
  ck_assert_ptr_null(l);
  ck_assert_int_eq(c.given, 5);
  ck_assert_int_eq(c.taken_back, 5);

  opts.free_buffer = NULL;
  expect_error(clt_loader_create(&ds, &opts, &l, &err),
               CLT_ERR_INVALID_ARGUMENT, &err, "free_buffer", NULL);
  clt_dataset_free(&ds);
}
END_TEST

START_TEST(test_loader_bad_options) {
  clt_dataset ds = make_indexed(10, 1, 4, 4);
  clt_loader_options opts;
  clt_loader *l = NULL;
  clt_err err = {0};
  clt_loader_options_init(&opts);
  opts.batch = 0;
  expect_error(clt_loader_create(&ds, &opts, &l, &err),
               CLT_ERR_INVALID_ARGUMENT, &err, "batch", NULL);
  clt_loader_options_init(&opts);
  opts.depth = 1;
  expect_error(clt_loader_create(&ds, &opts, &l, &err),
               CLT_ERR_INVALID_ARGUMENT, &err, "depth", NULL);
  clt_loader_options_init(&opts);
  opts.pad_crop = -1;
  expect_error(clt_loader_create(&ds, &opts, &l, &err),
               CLT_ERR_INVALID_ARGUMENT, &err, "pad_crop", NULL);
  ck_assert_ptr_null(l);
  clt_dataset empty = {0};
  clt_loader_options_init(&opts);
  expect_error(clt_loader_create(&empty, &opts, &l, &err),
               CLT_ERR_INVALID_ARGUMENT, &err, "at least one image", NULL);
  clt_dataset_free(&ds);
}
END_TEST

/* ---- main -------------------------------------------------------------- */

static Suite *data_suite(void) {
  Suite *s = suite_create("data");
  TCase *idx = tcase_create("idx");
  tcase_add_test(idx, test_idx_u8_plain);
  tcase_add_test(idx, test_idx_u8_gzip);
  tcase_add_test(idx, test_idx_plain_named_gz);
  tcase_add_test(idx, test_idx_i32_big_endian);
  tcase_add_test(idx, test_idx_f32_big_endian);
  tcase_add_test(idx, test_idx_i16_f64_big_endian);
  tcase_add_test(idx, test_idx_zero_dimension);
  tcase_add_test(idx, test_idx_missing_file);
  tcase_add_test(idx, test_idx_directory);
  tcase_add_test(idx, test_idx_bad_magic);
  tcase_add_test(idx, test_idx_unknown_type);
  tcase_add_test(idx, test_idx_bad_ndim);
  tcase_add_test(idx, test_idx_size_overflow);
  tcase_add_test(idx, test_idx_short_data);
  tcase_add_test(idx, test_idx_trailing_bytes);
  tcase_add_test(idx, test_idx_truncated_header);
  tcase_add_test(idx, test_idx_corrupt_gzip);
  tcase_add_test(idx, test_idx_gzip_missing_trailer);
  suite_add_tcase(s, idx);

  TCase *dataset = tcase_create("dataset");
  tcase_set_timeout(dataset, 60);
  tcase_add_test(dataset, test_dataset_load_3d);
  tcase_add_test(dataset, test_dataset_load_4d);
  tcase_add_test(dataset, test_dataset_count_mismatch);
  tcase_add_test(dataset, test_dataset_limit);
  tcase_add_test(dataset, test_dataset_bad_types);
  tcase_add_test(dataset, test_dataset_empty);
  tcase_add_test(dataset, test_dataset_bad_file);
  tcase_add_test(dataset, test_resolve_gz_dir);
  tcase_add_test(dataset, test_resolve_missing);
  tcase_add_test(dataset, test_resolve_fashion_name);
  tcase_add_test(dataset, test_fashion_mnist_test_set);
  suite_add_tcase(s, dataset);

  TCase *loader = tcase_create("loader");
  tcase_set_timeout(loader, 60);
  tcase_add_test(loader, test_loader_batches);
  tcase_add_test(loader, test_loader_each_index_once);
  tcase_add_test(loader, test_loader_shards_cover_epoch_once);
  tcase_add_test(loader, test_loader_shards_augment_as_one);
  tcase_add_test(loader, test_loader_bytes_match_floats);
  tcase_add_test(loader, test_loader_bad_shard);
  tcase_add_test(loader, test_loader_identity_without_shuffle);
  tcase_add_test(loader, test_loader_order_by_seed_and_epoch);
  tcase_add_test(loader, test_loader_pixel_scaling);
  tcase_add_test(loader, test_loader_augment_deterministic);
  tcase_add_test(loader, test_loader_crop_keeps_image_or_zero);
  tcase_add_test(loader, test_loader_destroy_mid_epoch);
  tcase_add_test(loader, test_loader_restart_mid_epoch);
  tcase_add_test(loader, test_loader_hold_two);
  tcase_add_test(loader, test_loader_all_slots_held);
  tcase_add_test(loader, test_loader_bad_options);
  tcase_add_test(loader, test_loader_allocator);
  suite_add_tcase(s, loader);
  return s;
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/cltrain-test-data-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  int failed = test_run_checks(data_suite(), CK_FORK_GETENV);
  test_remove_tree(g_dir);
  return failed == 0 ? 0 : 1;
}
