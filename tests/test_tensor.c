/* Tensors: create / upload / download round trips for every dtype at odd
 * sizes and 4-D shapes, fills, views (offsets, reshapes, bounds), copies
 * between views, dtype sizes, the buffer pool, and the errors for a
 * tensor too large for the device and for f16 where it is missing. */
#include <stdint.h>

#include "common.h"
#include "common/rng.h"

#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

static const int64_t sizes[] = {1, 3, 7, 33, 127, 300};
static const clt_dtype dtypes[] = {CLT_F32, CLT_I32, CLT_U8};
static const char *const dtype_names[] = {"f32", "i32", "u8"};

/* n random elements of dtype in host memory (caller frees). */
static void *random_bytes(clt_dtype dtype, int64_t n, uint64_t seed) {
  size_t bytes = (size_t)n * clt_dtype_size(dtype);
  uint8_t *p = malloc(bytes ? bytes : 1);
  ck_assert_ptr_nonnull(p);
  clt_rng r = clt_rng_derive(seed, 97, (uint64_t)n);
  for (size_t i = 0; i < bytes; i++) p[i] = (uint8_t)clt_rng_next(&r);
  if (dtype == CLT_F32) /* keep them ordinary numbers, NaN != NaN */
    for (int64_t i = 0; i < n; i++)
      ((float *)p)[i] = (float)clt_rng_uniform(&r) * 200.0f - 100.0f;
  return p;
}

static clt_tensor *create_1d(clt_dtype dtype, int64_t n) {
  clt_tensor *t = NULL;
  int64_t shape[1] = {n};
  ck_assert_ok(clt_tensor_create(g_ctx, dtype, 1, shape, &t));
  ck_assert_ptr_nonnull(t);
  return t;
}

/* ------------------------------------------------------------------------ */
/* Round trips and fills                                                     */

START_TEST(dtype_sizes) {
  ck_assert_uint_eq(clt_dtype_size(CLT_F32), 4);
  ck_assert_uint_eq(clt_dtype_size(CLT_F16), 2);
  ck_assert_uint_eq(clt_dtype_size(CLT_I32), 4);
  ck_assert_uint_eq(clt_dtype_size(CLT_U8), 1);
}
END_TEST

/* _i: dtype. Upload random bytes, download, compare byte for byte. */
START_TEST(round_trip_sizes) {
  clt_dtype dtype = dtypes[_i];
  size_t esize = clt_dtype_size(dtype);
  for (int k = 0; k < COUNT(sizes); k++) {
    int64_t n = sizes[k];
    void *in = random_bytes(dtype, n, 1);
    void *out = calloc((size_t)n, esize);
    ck_assert_ptr_nonnull(out);
    clt_tensor *t = create_1d(dtype, n);
    ck_assert_int_eq(clt_tensor_dtype(t), dtype);
    ck_assert_int_eq(clt_tensor_ndim(t), 1);
    ck_assert_int_eq(clt_tensor_numel(t), n);
    ck_assert_ok(clt_tensor_upload(t, in));
    ck_assert_ok(clt_tensor_download(t, out));
    ck_assert_msg(memcmp(in, out, (size_t)n * esize) == 0,
                  "%s round trip of %lld elements differs", dtype_names[_i],
                  (long long)n);
    clt_tensor_destroy(t);
    free(in);
    free(out);
  }
}
END_TEST

START_TEST(round_trip_4d) {
  static const int64_t shapes[][4] = {
      {1, 1, 1, 1}, {2, 3, 5, 7}, {3, 1, 7, 1}, {1, 33, 1, 3}, {5, 3, 4, 5}};
  clt_dtype dtype = dtypes[_i];
  size_t esize = clt_dtype_size(dtype);
  for (int k = 0; k < COUNT(shapes); k++) {
    const int64_t *s = shapes[k];
    int64_t n = s[0] * s[1] * s[2] * s[3];
    clt_tensor *t;
    ck_assert_ok(clt_tensor_create(g_ctx, dtype, 4, s, &t));
    ck_assert_int_eq(clt_tensor_ndim(t), 4);
    ck_assert_int_eq(clt_tensor_numel(t), n);
    for (int d = 0; d < 4; d++) ck_assert_int_eq(clt_tensor_dim(t, d), s[d]);
    ck_assert_int_eq(clt_tensor_dim(t, 4), 1); /* beyond ndim */
    ck_assert_int_eq(clt_tensor_dim(t, -1), 1);
    void *in = random_bytes(dtype, n, 2), *out = calloc((size_t)n, esize);
    ck_assert_ptr_nonnull(out);
    ck_assert_ok(clt_tensor_upload(t, in));
    ck_assert_ok(clt_tensor_download(t, out));
    ck_assert(memcmp(in, out, (size_t)n * esize) == 0);
    clt_tensor_destroy(t);
    free(in);
    free(out);
  }
}
END_TEST

/* _i: dtype. Fill a view in the middle of a tensor; the rest keeps its
 * values. */
START_TEST(fill_odd_sizes) {
  static const double values[] = {0.25, -3.5, 200.0, 7.0};
  clt_dtype dtype = dtypes[_i];
  size_t esize = clt_dtype_size(dtype);
  for (int k = 0; k < COUNT(sizes); k++) {
    int64_t n = sizes[k], total = n + 6;
    double value = values[k % COUNT(values)];
    if (dtype != CLT_F32) value = 1.0 + (double)k * 37.0; /* 1 .. 186 */
    uint8_t *before = random_bytes(dtype, total, 3);
    uint8_t *after = malloc((size_t)total * esize);
    ck_assert_ptr_nonnull(after);
    clt_tensor *base = create_1d(dtype, total), *view;
    ck_assert_ok(clt_tensor_upload(base, before));
    ck_assert_ok(clt_tensor_view(base, 3, 1, (int64_t[]){n}, &view));
    ck_assert_ok(clt_tensor_fill(view, value));
    ck_assert_ok(clt_tensor_download(base, after));
    for (int64_t i = 0; i < total; i++) {
      bool inside = i >= 3 && i < 3 + n;
      if (!inside) {
        ck_assert(memcmp(after + i * esize, before + i * esize, esize) == 0);
        continue;
      }
      double got = dtype == CLT_F32   ? ((float *)after)[i]
                   : dtype == CLT_I32 ? ((int32_t *)after)[i]
                                      : ((uint8_t *)after)[i];
      ck_assert_msg(got == value, "%s fill of %lld: element %lld is %g, not %g",
                    dtype_names[_i], (long long)n, (long long)i, got, value);
    }
    clt_tensor_destroy(view);
    clt_tensor_destroy(base);
    free(before);
    free(after);
  }
}
END_TEST

START_TEST(fill_negative_i32) {
  clt_tensor *t = create_1d(CLT_I32, 5);
  int32_t out[5];
  ck_assert_ok(clt_tensor_fill(t, -7));
  ck_assert_ok(clt_tensor_download(t, out));
  for (int i = 0; i < 5; i++) ck_assert_int_eq(out[i], -7);
  clt_tensor_destroy(t);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Views and copies                                                          */

START_TEST(view_offset_and_reshape) {
  float in[24], out[24];
  for (int i = 0; i < 24; i++) in[i] = (float)i;
  clt_tensor *base = create_1d(CLT_F32, 24), *v, *vv;
  ck_assert_ok(clt_tensor_upload(base, in));

  /* Elements 5..16 seen as [2, 3, 2]. */
  ck_assert_ok(clt_tensor_view(base, 5, 3, (int64_t[]){2, 3, 2}, &v));
  ck_assert_int_eq(clt_tensor_ndim(v), 3);
  ck_assert_int_eq(clt_tensor_dim(v, 1), 3);
  ck_assert_int_eq(clt_tensor_dim(v, 3), 1);
  ck_assert_int_eq(clt_tensor_numel(v), 12);
  ck_assert_ok(clt_tensor_download(v, out));
  for (int i = 0; i < 12; i++) ck_assert_float_eq(out[i], (float)(5 + i));

  /* A view of a view adds the offsets. */
  ck_assert_ok(clt_tensor_view(v, 4, 2, (int64_t[]){2, 2}, &vv));
  ck_assert_ok(clt_tensor_download(vv, out));
  for (int i = 0; i < 4; i++) ck_assert_float_eq(out[i], (float)(9 + i));

  /* Upload through the inner view lands at element 9 of the base. */
  float four[4] = {-1, -2, -3, -4};
  ck_assert_ok(clt_tensor_upload(vv, four));
  ck_assert_ok(clt_tensor_download(base, out));
  for (int i = 0; i < 24; i++)
    ck_assert_float_eq(out[i], i >= 9 && i < 13 ? four[i - 9] : (float)i);
  clt_tensor_destroy(vv);
  clt_tensor_destroy(v);

  /* The whole tensor, reshaped to 4-D. */
  ck_assert_ok(clt_tensor_view(base, 0, 4, (int64_t[]){2, 3, 2, 2}, &v));
  ck_assert_int_eq(clt_tensor_numel(v), 24);
  clt_tensor_destroy(v);
  clt_tensor_destroy(base);
}
END_TEST

START_TEST(view_out_of_range) {
  clt_tensor *base = create_1d(CLT_F32, 10), *v = base;
  ck_assert_int_eq(clt_tensor_view(base, 8, 1, (int64_t[]){3}, &v),
                   CLT_ERR_SHAPE);
  ck_assert_ptr_null(v);
  const char *msg = clt_context_last_error(g_ctx);
  ck_assert_msg(strstr(msg, "view") && strstr(msg, "11"), "message: %s", msg);
  ck_assert_int_eq(clt_tensor_view(base, -1, 1, (int64_t[]){2}, &v),
                   CLT_ERR_SHAPE);
  ck_assert_int_eq(clt_tensor_view(base, 0, 2, (int64_t[]){3, 4}, &v),
                   CLT_ERR_SHAPE);
  ck_assert_int_eq(clt_tensor_view(base, 10, 1, (int64_t[]){1}, &v),
                   CLT_ERR_SHAPE);
  /* Exactly the end is fine. */
  ck_assert_ok(clt_tensor_view(base, 9, 1, (int64_t[]){1}, &v));
  clt_tensor_destroy(v);
  /* Bad shapes are argument errors. */
  ck_assert_int_eq(clt_tensor_view(base, 0, 0, (int64_t[]){1}, &v),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(clt_tensor_view(base, 0, 1, (int64_t[]){0}, &v),
                   CLT_ERR_INVALID_ARGUMENT);
  clt_tensor_destroy(base);
}
END_TEST

START_TEST(create_bad_shapes) {
  clt_tensor *t = NULL;
  ck_assert_int_eq(clt_tensor_create(g_ctx, CLT_F32, 0, (int64_t[]){1}, &t),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(
      clt_tensor_create(g_ctx, CLT_F32, 5, (int64_t[]){1, 1, 1, 1, 1}, &t),
      CLT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(clt_tensor_create(g_ctx, CLT_F32, 2, (int64_t[]){4, -2}, &t),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(t);
}
END_TEST

/* Copies between views of one tensor and of two, for each dtype. */
START_TEST(copy_between_views) {
  clt_dtype dtype = dtypes[_i];
  size_t esize = clt_dtype_size(dtype);
  int64_t n = 127;
  uint8_t *a = random_bytes(dtype, n, 4), *b = random_bytes(dtype, n, 5);
  uint8_t *out = malloc((size_t)n * esize);
  ck_assert_ptr_nonnull(out);
  clt_tensor *ta = create_1d(dtype, n), *tb = create_1d(dtype, n), *src, *dst;
  ck_assert_ok(clt_tensor_upload(ta, a));
  ck_assert_ok(clt_tensor_upload(tb, b));

  /* a[94..127) -> b[7..40), as [3, 11] into [33]. */
  ck_assert_ok(clt_tensor_view(ta, 94, 2, (int64_t[]){3, 11}, &src));
  ck_assert_ok(clt_tensor_view(tb, 7, 1, (int64_t[]){33}, &dst));
  ck_assert_ok(clt_tensor_copy(dst, src));
  ck_assert_ok(clt_tensor_download(tb, out));
  memcpy(b + 7 * esize, a + 94 * esize, 33 * esize);
  ck_assert(memcmp(out, b, (size_t)n * esize) == 0);
  clt_tensor_destroy(src);
  clt_tensor_destroy(dst);

  /* Within one tensor, non-overlapping: a[0..20) -> a[50..70). */
  ck_assert_ok(clt_tensor_view(ta, 0, 1, (int64_t[]){20}, &src));
  ck_assert_ok(clt_tensor_view(ta, 50, 1, (int64_t[]){20}, &dst));
  ck_assert_ok(clt_tensor_copy(dst, src));
  ck_assert_ok(clt_tensor_download(ta, out));
  memcpy(a + 50 * esize, a, 20 * esize);
  ck_assert(memcmp(out, a, (size_t)n * esize) == 0);
  clt_tensor_destroy(src);
  clt_tensor_destroy(dst);
  clt_tensor_destroy(ta);
  clt_tensor_destroy(tb);
  free(a);
  free(b);
  free(out);
}
END_TEST

START_TEST(copy_mismatch) {
  clt_tensor *f = create_1d(CLT_F32, 8), *g = create_1d(CLT_F32, 9),
             *i = create_1d(CLT_I32, 8);
  ck_assert_int_eq(clt_tensor_copy(f, g), CLT_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx), "9"));
  ck_assert_int_eq(clt_tensor_copy(f, i), CLT_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx), "i32"));
  clt_tensor_destroy(f);
  clt_tensor_destroy(g);
  clt_tensor_destroy(i);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The pool and memory errors                                                */

START_TEST(pool_reuses_freed_buffer) {
  /* A size no other test uses, so the first buffer is a new one. */
  const int64_t n = 54321;
  clt_memory_stats s0, s1, s2, s3;
  clt_context_memory_stats(g_ctx, &s0);
  clt_tensor *t = create_1d(CLT_F32, n);
  clt_context_memory_stats(g_ctx, &s1);
  ck_assert_uint_eq(s1.device_allocations, s0.device_allocations + 1);
  ck_assert_uint_eq(s1.device_bytes_live, s0.device_bytes_live + 4 * n);
  clt_tensor_destroy(t);

  /* The same size, and a slightly smaller one, reuse it. */
  t = create_1d(CLT_F32, n);
  clt_context_memory_stats(g_ctx, &s2);
  ck_assert_uint_eq(s2.device_allocations, s1.device_allocations);
  ck_assert_uint_eq(s2.pool_reuses, s1.pool_reuses + 1);
  ck_assert_uint_eq(s2.device_bytes_live, s1.device_bytes_live);
  clt_tensor_destroy(t);
  t = create_1d(CLT_U8, 4 * n - 5);
  clt_context_memory_stats(g_ctx, &s3);
  ck_assert_uint_eq(s3.device_allocations, s1.device_allocations);
  ck_assert_uint_eq(s3.pool_reuses, s2.pool_reuses + 1);

  /* While it is in use, another of the same size needs a new buffer. */
  clt_tensor *u = create_1d(CLT_F32, n);
  clt_memory_stats s4;
  clt_context_memory_stats(g_ctx, &s4);
  ck_assert_uint_eq(s4.device_allocations, s3.device_allocations + 1);
  clt_tensor_destroy(u);
  clt_tensor_destroy(t);
}
END_TEST

START_TEST(too_large_for_the_device) {
  const clt_device_info *d = clt_context_device(g_ctx);
  clt_tensor *t = NULL;
  /* One element more than the largest buffer the device allows. */
  uint64_t numel = d->max_alloc_bytes / 4 + 1;
  if (numel <= INT32_MAX) {
    ck_assert_int_eq(
        clt_tensor_create(g_ctx, CLT_F32, 1, (int64_t[]){(int64_t)numel}, &t),
        CLT_ERR_DEVICE_MEMORY);
    ck_assert_ptr_null(t);
    char bytes[32];
    snprintf(bytes, sizeof bytes, "%llu bytes", (unsigned long long)numel * 4);
    const char *msg = clt_context_last_error(g_ctx);
    ck_assert_msg(strstr(msg, bytes) != NULL, "message lacks '%s': %s", bytes,
                  msg);
  } else {
    printf("too_large_for_the_device: %s allows buffers of %llu bytes, more "
           "than 2^31 floats; only the element limit is checked\n",
           d->name, (unsigned long long)d->max_alloc_bytes);
  }
  /* 2^30 x 4 floats (16 GiB): more elements than the kernels index. */
  ck_assert_int_eq(
      clt_tensor_create(g_ctx, CLT_F32, 2, (int64_t[]){1LL << 30, 4}, &t),
      CLT_ERR_UNSUPPORTED);
  ck_assert_ptr_null(t);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx), "2^31"));
  /* Nothing was lost: the context still works. */
  float one = 0.0f;
  t = create_1d(CLT_F32, 1);
  ck_assert_ok(clt_tensor_fill(t, 1.0));
  ck_assert_ok(clt_tensor_download(t, &one));
  ck_assert_float_eq(one, 1.0f);
  clt_tensor_destroy(t);
}
END_TEST

/* f16 is storage on every device (vload_half/vstore_half are core
 * OpenCL 1.2), with or without cl_khr_fp16: bits go up and come back. */
START_TEST(f16_storage_everywhere) {
  clt_tensor *t = NULL;
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_F16, 1, (int64_t[]){8}, &t));
  uint16_t in[8] = {0x3c00, 0xc000, 0, 1, 0x7bff, 0x8000, 0x3555, 0x4248};
  uint16_t out[8];
  ck_assert_ok(clt_tensor_upload(t, in));
  ck_assert_ok(clt_tensor_download(t, out));
  ck_assert(memcmp(in, out, sizeof in) == 0);
  ck_assert_ok(clt_tensor_fill(t, -2.0));
  ck_assert_ok(clt_tensor_download(t, out));
  for (int i = 0; i < 8; i++) ck_assert_uint_eq(out[i], 0xc000);
  clt_tensor_destroy(t);
}
END_TEST

/* ------------------------------------------------------------------------ */

static Suite *tensor_suite(void) {
  Suite *s = suite_create("tensor");

  TCase *io = tcase_create("round trip");
  tcase_add_test(io, dtype_sizes);
  tcase_add_loop_test(io, round_trip_sizes, 0, COUNT(dtypes));
  tcase_add_loop_test(io, round_trip_4d, 0, COUNT(dtypes));
  tcase_add_loop_test(io, fill_odd_sizes, 0, COUNT(dtypes));
  tcase_add_test(io, fill_negative_i32);
  suite_add_tcase(s, io);

  TCase *views = tcase_create("views");
  tcase_add_test(views, view_offset_and_reshape);
  tcase_add_test(views, view_out_of_range);
  tcase_add_test(views, create_bad_shapes);
  tcase_add_loop_test(views, copy_between_views, 0, COUNT(dtypes));
  tcase_add_test(views, copy_mismatch);
  suite_add_tcase(s, views);

  TCase *mem = tcase_create("memory");
  tcase_add_test(mem, pool_reuses_freed_buffer);
  tcase_add_test(mem, too_large_for_the_device);
  tcase_add_test(mem, f16_storage_everywhere);
  suite_add_tcase(s, mem);
  return s;
}

int main(void) { return test_run_suite("tensor", tensor_suite); }
