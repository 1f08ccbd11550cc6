/* The runtime: devices on this machine, the --device / CLT_DEVICE grammar
 * on a hand-built device list, the kernel binary cache seen through
 * contexts (misses, hits, damaged entries rebuilt, cache off, the marks
 * left for a driver that keeps its compiled kernels), every
 * kernel program compiling without a warning and holding the kernels
 * taken from it, status strings and the context's last error. */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "common/clock.h"
#include "ops/gemm_mma.h"
#include "ops/ops.h"
#include "runtime/embedded.h"
#include "runtime/runtime.h"
#include "tensor/tensor.h"
#include "remove_tree.h"

#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

/* A context made with opts, failing the test with the reason where none
 * can be. */
static clt_context *context_created(const clt_context_options *opts) {
  clt_context *ctx = NULL;
  char err[8192] = "";
  ck_assert_msg(clt_context_create(opts, &ctx, err, sizeof err) == CLT_OK,
                "%s", err);
  return ctx;
}

/* ------------------------------------------------------------------------ */
/* Devices on this machine                                                   */

START_TEST(device_list_on_this_machine) {
  clt_device_list list;
  char err[1024] = "";
  ck_assert_msg(clt_device_list_get(&list, err, sizeof err) == CLT_OK, "%s",
                err);
  ck_assert_uint_ge(list.count, 1);
  ck_assert_uint_ge(list.platform_count, 1);
  bool found_ours = false;
  const clt_device_info *ours = clt_context_device(g_ctx);
  for (size_t i = 0; i < list.count; i++) {
    const clt_device_info *d = &list.devices[i];
    ck_assert_int_eq(d->index, (int)i);
    ck_assert_int_ge(d->platform_index, 0);
    ck_assert_int_lt(d->platform_index, (int)list.platform_count);
    ck_assert_int_ge(d->device_index, 0);
    ck_assert_str_ne(d->name, "");
    ck_assert_str_ne(d->platform_name, "");
    ck_assert_str_ne(d->platform_version, "");
    ck_assert_str_ne(d->driver_version, "");
    ck_assert_msg(strncmp(d->opencl_c_version, "OpenCL C ", 9) == 0,
                  "device %s: OpenCL C version '%s'", d->name,
                  d->opencl_c_version);
    ck_assert_uint_gt(d->compute_units, 0);
    ck_assert_uint_gt(d->global_mem_bytes, 0);
    ck_assert_uint_gt(d->local_mem_bytes, 0);
    ck_assert_uint_gt(d->max_alloc_bytes, 0);
    ck_assert_uint_le(d->max_alloc_bytes, d->global_mem_bytes);
    ck_assert_uint_gt(d->max_work_group_size, 0);
    if (d->platform_index == ours->platform_index &&
        d->device_index == ours->device_index) {
      ck_assert_str_eq(d->name, ours->name);
      found_ours = true;
    }
  }
  ck_assert_msg(found_ours, "the suite's device %s is not in the list",
                ours->name);
  clt_device_list_free(&list);
  ck_assert_ptr_null(list.devices);
  ck_assert_uint_eq(list.count, 0);
  clt_device_list_free(NULL); /* allowed */
}
END_TEST

START_TEST(context_reports_its_kernels) {
  clt_kernel_stats ks;
  ck_assert_ok(clt_context_build_kernels(g_ctx));
  clt_context_kernel_stats(g_ctx, &ks);
  ck_assert_int_ge(ks.programs, 1);
  ck_assert_int_eq(ks.kernels, CLT_KERNEL_COUNT);
  ck_assert_int_ge(ks.cache_hits + ks.cache_misses, ks.programs);
  ck_assert(ks.build_seconds >= 0.0);
  /* again: everything is built already */
  clt_kernel_stats again;
  ck_assert_ok(clt_context_build_kernels(g_ctx));
  clt_context_kernel_stats(g_ctx, &again);
  ck_assert_int_eq(again.programs, ks.programs);
  ck_assert_int_eq(again.kernels, ks.kernels);
  ck_assert_ok(clt_context_finish(g_ctx));
}
END_TEST

/* A context builds nothing until a kernel is needed, then only that
 * kernel's program: a fill needs cl/tensor.cl alone. */
START_TEST(programs_built_on_first_use) {
  clt_context_options opts;
  clt_context_options_init(&opts);
  clt_context *ctx = context_created(&opts);
  clt_kernel_stats ks;
  clt_context_kernel_stats(ctx, &ks);
  ck_assert_int_eq(ks.programs, 0);
  ck_assert_int_eq(ks.kernels, 0);
  ck_assert_int_eq(ks.cache_hits + ks.cache_misses, 0);
  int64_t shape[1] = {5};
  clt_tensor *t;
  float host[5];
  ck_assert_int_eq(clt_tensor_create(ctx, CLT_F32, 1, shape, &t), CLT_OK);
  ck_assert_int_eq(clt_tensor_fill(t, -2.0), CLT_OK);
  ck_assert_int_eq(clt_tensor_download(t, host), CLT_OK);
  for (int i = 0; i < 5; i++) ck_assert_float_eq(host[i], -2.0f);
  clt_context_kernel_stats(ctx, &ks);
  ck_assert_int_eq(ks.programs, 1);
  ck_assert_int_ge(ks.kernels, 1);
  ck_assert_int_lt(ks.kernels, CLT_KERNEL_COUNT);
  ck_assert_int_eq(ks.cache_hits + ks.cache_misses, 1);
  /* the same fill again builds nothing more */
  int kernels = ks.kernels;
  ck_assert_int_eq(clt_tensor_fill(t, 3.0), CLT_OK);
  clt_context_kernel_stats(ctx, &ks);
  ck_assert_int_eq(ks.programs, 1);
  ck_assert_int_eq(ks.kernels, kernels);
  clt_tensor_destroy(t);
  clt_context_destroy(ctx);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Device selection on a hand-built list                                     */

static clt_device_info fake_device(int index, int platform, int device,
                                   const char *platform_name, const char *name,
                                   clt_device_type type) {
  clt_device_info d;
  memset(&d, 0, sizeof d);
  d.index = index;
  d.platform_index = platform;
  d.device_index = device;
  snprintf(d.platform_name, sizeof d.platform_name, "%s", platform_name);
  snprintf(d.name, sizeof d.name, "%s", name);
  d.type = type;
  return d;
}

/* 0: POCL CPU (0:0), 1: rusticl llvmpipe CPU (1:0), 2: NVIDIA GPU (2:0),
 * 3: NVIDIA GPU (2:1), 4: an accelerator (3:0). */
static clt_device_info g_fake[5];

static void fake_setup(void) {
  g_fake[0] = fake_device(0, 0, 0, "Portable Computing Language",
                          "pthread-skylake-avx512-AMD EPYC", CLT_DEVICE_CPU);
  /* As POCL 3.1 reports itself: "pocl" is only in the platform version
   * (and the platform vendor, "The pocl project"), which also names LLVM. */
  snprintf(g_fake[0].platform_version, sizeof g_fake[0].platform_version,
           "OpenCL 3.0 PoCL 3.1+debian  Linux, None+Asserts, RELOC, SPIR, "
           "LLVM 15.0.6, SLEEF, DISTRO, POCL_DEBUG");
  snprintf(g_fake[0].vendor, sizeof g_fake[0].vendor, "AuthenticAMD");
  g_fake[1] = fake_device(1, 1, 0, "rusticl",
                          "llvmpipe (LLVM 15.0.6, 256 bits)", CLT_DEVICE_CPU);
  g_fake[2] = fake_device(2, 2, 0, "NVIDIA CUDA", "NVIDIA H100 80GB HBM3",
                          CLT_DEVICE_GPU);
  g_fake[3] = fake_device(3, 2, 1, "NVIDIA CUDA", "NVIDIA A100-SXM4-40GB",
                          CLT_DEVICE_GPU);
  g_fake[4] =
      fake_device(4, 3, 0, "Intel(R) FPGA Emulation Platform",
                  "Intel(R) FPGA Emulation Device", CLT_DEVICE_ACCELERATOR);
}

static clt_device_list fake_list(size_t first, size_t count) {
  clt_device_list list = {&g_fake[first], count, 4};
  return list;
}

/* Selects spec on list; returns the index or -1 for CLT_ERR_NO_DEVICE. */
static long select_on(const clt_device_list *list, const char *spec) {
  size_t chosen = 12345;
  char err[2048];
  clt_status st = clt_device_select(list, spec, &chosen, err, sizeof err);
  if (st == CLT_ERR_NO_DEVICE) return -1;
  ck_assert_int_eq(st, CLT_OK);
  ck_assert_uint_lt(chosen, list->count);
  return (long)chosen;
}

START_TEST(select_by_flat_index) {
  clt_device_list list = fake_list(0, 5);
  ck_assert_int_eq(select_on(&list, "0"), 0);
  ck_assert_int_eq(select_on(&list, "1"), 1);
  ck_assert_int_eq(select_on(&list, "4"), 4);
  ck_assert_int_eq(select_on(&list, "5"), -1);
  ck_assert_int_eq(select_on(&list, "99"), -1);
  ck_assert_int_eq(select_on(&list, "-1"), -1);
}
END_TEST

START_TEST(select_by_platform_and_device) {
  clt_device_list list = fake_list(0, 5);
  ck_assert_int_eq(select_on(&list, "0:0"), 0);
  ck_assert_int_eq(select_on(&list, "1:0"), 1);
  ck_assert_int_eq(select_on(&list, "2:1"), 3);
  ck_assert_int_eq(select_on(&list, "3:0"), 4);
  ck_assert_int_eq(select_on(&list, "0:1"), -1);
  ck_assert_int_eq(select_on(&list, "2:2"), -1);
  ck_assert_int_eq(select_on(&list, "9:0"), -1);
}
END_TEST

START_TEST(select_by_type) {
  clt_device_list list = fake_list(0, 5);
  ck_assert_int_eq(select_on(&list, "gpu"), 2);
  ck_assert_int_eq(select_on(&list, "GPU"), 2);
  ck_assert_int_eq(select_on(&list, "cpu"), 0);
  ck_assert_int_eq(select_on(&list, "Cpu"), 0);
  ck_assert_int_eq(select_on(&list, "accelerator"), 4);
  /* A type that no device has is no match, not a name search. */
  clt_device_list cpus = fake_list(0, 2);
  ck_assert_int_eq(select_on(&cpus, "gpu"), -1);
  ck_assert_int_eq(select_on(&cpus, "accelerator"), -1);
}
END_TEST

START_TEST(select_by_name_part) {
  clt_device_list list = fake_list(0, 5);
  ck_assert_int_eq(select_on(&list, "portable"), 0);
  ck_assert_int_eq(select_on(&list, "Skylake"), 0);
  ck_assert_int_eq(select_on(&list, "llvm"), 1);
  ck_assert_int_eq(select_on(&list, "LLVMPIPE"), 1);
  ck_assert_int_eq(select_on(&list, "rusticl"), 1);
  ck_assert_int_eq(select_on(&list, "nvidia"), 2);
  ck_assert_int_eq(select_on(&list, "a100"), 3);
  ck_assert_int_eq(select_on(&list, "fpga"), 4);
}
END_TEST

/* "pocl" (the documented example) must find POCL, whose platform and
 * device names do not contain it; "llvm" must still find llvmpipe by name
 * before POCL by its version string. */
START_TEST(select_pocl_by_name) {
  clt_device_list list = fake_list(0, 5);
  ck_assert_int_eq(select_on(&list, "llvm"), 1);
  ck_assert_msg(select_on(&list, "pocl") == 0,
                "device spec 'pocl' does not select POCL (platform '%s', "
                "device '%s', version '%s')",
                g_fake[0].platform_name, g_fake[0].name,
                g_fake[0].platform_version);
  ck_assert_int_eq(select_on(&list, "POCL"), 0);
}
END_TEST

START_TEST(select_default) {
  clt_device_list list = fake_list(0, 5);
  /* The first GPU... */
  ck_assert_int_eq(select_on(&list, NULL), 2);
  ck_assert_int_eq(select_on(&list, "default"), 2);
  ck_assert_int_eq(select_on(&list, "DEFAULT"), 2);
  /* ...else the first CPU... */
  clt_device_list no_gpu = {
      (clt_device_info[]){g_fake[4], g_fake[1], g_fake[0]}, 3, 3};
  ck_assert_int_eq(select_on(&no_gpu, NULL), 1);
  /* ...else the first device. */
  clt_device_list accel = fake_list(4, 1);
  ck_assert_int_eq(select_on(&accel, NULL), 0);
}
END_TEST

START_TEST(select_no_match_lists_devices) {
  clt_device_list list = fake_list(0, 5);
  size_t chosen = 77;
  char err[2048] = "";
  ck_assert_int_eq(clt_device_select(&list, "radeon", &chosen, err, sizeof err),
                   CLT_ERR_NO_DEVICE);
  ck_assert_uint_eq(chosen, 77);
  ck_assert_ptr_nonnull(strstr(err, "radeon"));
  for (int i = 0; i < 5; i++)
    ck_assert_msg(strstr(err, g_fake[i].name) != NULL,
                  "message lacks device %s: %s", g_fake[i].name, err);
  /* Out of range indexes say the same. */
  ck_assert_int_eq(clt_device_select(&list, "7", &chosen, err, sizeof err),
                   CLT_ERR_NO_DEVICE);
  ck_assert_ptr_nonnull(strstr(err, "llvmpipe"));
  /* A short buffer is cut, terminated; NULL is allowed. */
  char small[16];
  memset(small, 'x', sizeof small);
  ck_assert_int_eq(
      clt_device_select(&list, "radeon", &chosen, small, sizeof small),
      CLT_ERR_NO_DEVICE);
  ck_assert_uint_lt(strlen(small), sizeof small);
  ck_assert_int_eq(clt_device_select(&list, "radeon", &chosen, NULL, 0),
                   CLT_ERR_NO_DEVICE);
}
END_TEST

/* An empty spec is a mistake (`--device ''`, a variable that expanded to
 * nothing), never a quiet way to say "the default". */
START_TEST(select_empty_spec_is_an_error) {
  clt_device_list list = fake_list(0, 5);
  size_t chosen = 77;
  char err[2048] = "";
  ck_assert_int_eq(clt_device_select(&list, "", &chosen, err, sizeof err),
                   CLT_ERR_NO_DEVICE);
  ck_assert_uint_eq(chosen, 77);
  ck_assert_ptr_nonnull(strstr(err, "empty device name"));
  ck_assert_ptr_nonnull(strstr(err, g_fake[2].name));
}
END_TEST

START_TEST(context_with_unknown_device_fails) {
  clt_context_options opts;
  clt_context_options_init(&opts);
  opts.device = "no-such-device-anywhere";
  clt_context *ctx = g_ctx; /* must be reset to NULL */
  char err[4096] = "";
  ck_assert_int_eq(clt_context_create(&opts, &ctx, err, sizeof err),
                   CLT_ERR_NO_DEVICE);
  ck_assert_ptr_null(ctx);
  ck_assert_ptr_nonnull(strstr(err, "no-such-device-anywhere"));
  ck_assert_ptr_nonnull(strstr(err, clt_context_device(g_ctx)->name));
}
END_TEST

START_TEST(context_with_empty_device_fails) {
  clt_context_options opts;
  clt_context_options_init(&opts);
  opts.device = "";
  opts.cache = 0;
  clt_context *ctx = g_ctx;
  char err[4096] = "";
  ck_assert_int_eq(clt_context_create(&opts, &ctx, err, sizeof err),
                   CLT_ERR_NO_DEVICE);
  ck_assert_ptr_null(ctx);
  ck_assert_ptr_nonnull(strstr(err, "empty device name"));
  /* An empty CLT_DEVICE is unset: the same device as no variable at all. */
  char *saved = getenv("CLT_DEVICE") ? strdup(getenv("CLT_DEVICE")) : NULL;
  clt_device_list list;
  ck_assert_int_eq(clt_device_list_get(&list, err, sizeof err), CLT_OK);
  size_t want = 0;
  ck_assert_int_eq(clt_device_select(&list, NULL, &want, err, sizeof err),
                   CLT_OK);
  test_setenv("CLT_DEVICE", "");
  opts.device = NULL;
  ck_assert_int_eq(clt_context_create(&opts, &ctx, err, sizeof err), CLT_OK);
  ck_assert_str_eq(clt_context_device(ctx)->name, list.devices[want].name);
  clt_context_destroy(ctx);
  clt_device_list_free(&list);
  if (saved) test_setenv("CLT_DEVICE", saved);
  free(saved);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The kernel binary cache, through contexts                                 */

static void make_temp_dir(char *dir, size_t len) {
  snprintf(dir, len, "/tmp/clt_runtime_test_XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

static int compare_names(const void *a, const void *b) { return strcmp(a, b); }

/* Names of the .clbin files in dir (up to max), sorted; returns how many
 * files of any kind the folder holds. */
static int list_entries(const char *dir, char names[][80], int max,
                        int *clbin) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int all = 0;
  *clbin = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    all++;
    size_t len = strlen(e->d_name);
    if (len > 6 && strcmp(e->d_name + len - 6, ".clbin") == 0 && *clbin < max &&
        len < 80)
      snprintf(names[(*clbin)++], 80, "%s", e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)*clbin, 80, compare_names);
  return all;
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Fills a tensor of 37 values with value on ctx and checks them. */
static void fills(clt_context *ctx, float value) {
  int64_t shape[1] = {37};
  clt_tensor *t;
  float host[37];
  ck_assert_int_eq(clt_tensor_create(ctx, CLT_F32, 1, shape, &t), CLT_OK);
  ck_assert_int_eq(clt_tensor_fill(t, value), CLT_OK);
  ck_assert_int_eq(clt_tensor_download(t, host), CLT_OK);
  for (int i = 0; i < 37; i++) ck_assert_float_eq(host[i], value);
  clt_tensor_destroy(t);
}

/* Creates a context on the suite's device with the given cache settings,
 * checks it runs a fill, and returns its kernel stats. */
static clt_kernel_stats context_with_cache(const char *dir, int cache) {
  clt_context_options opts;
  clt_context_options_init(&opts);
  opts.cache_dir = dir;
  opts.cache = cache;
  clt_context *ctx = context_created(&opts);
  ck_assert_msg(clt_context_build_kernels(ctx) == CLT_OK, "%s",
                clt_context_last_error(ctx));
  clt_kernel_stats ks;
  clt_context_kernel_stats(ctx, &ks);
  fills(ctx, 1.5f);
  clt_context_destroy(ctx);
  return ks;
}

START_TEST(cache_miss_hit_reject_rebuild) {
  char dir[64];
  make_temp_dir(dir, sizeof dir);
  enum { MAX = 64 };
  char names[MAX][80];
  int clbin;

  /* A fresh folder: every program is compiled and stored. */
  clt_kernel_stats first = context_with_cache(dir, 1);
  ck_assert_int_ge(first.programs, 2);
  ck_assert_int_eq(first.cache_misses, first.programs);
  ck_assert_int_eq(first.cache_hits, 0);
  ck_assert_int_eq(first.cache_rejected, 0);
  int files = list_entries(dir, names, MAX, &clbin);
  ck_assert_int_eq(clbin, first.programs);
  ck_assert_int_eq(files, clbin); /* no temporary files left */

  /* Again: every program comes from the cache. */
  clt_kernel_stats second = context_with_cache(dir, 1);
  ck_assert_int_eq(second.cache_hits, second.programs);
  ck_assert_int_eq(second.cache_misses, 0);
  ck_assert_int_eq(second.cache_rejected, 0);

  /* Truncate one entry and flip a byte in the middle of another. */
  char path[2][256];
  long size[2];
  for (int i = 0; i < 2; i++) {
    snprintf(path[i], sizeof path[i], "%.63s/%.79s", dir, names[i]);
    size[i] = file_size(path[i]);
    ck_assert_int_gt(size[i], 100);
  }
  ck_assert_int_eq(truncate(path[0], size[0] / 2), 0);
  FILE *f = fopen(path[1], "r+b");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fseek(f, size[1] / 2, SEEK_SET), 0);
  int byte = fgetc(f);
  ck_assert_int_ne(byte, EOF);
  ck_assert_int_eq(fseek(f, size[1] / 2, SEEK_SET), 0);
  ck_assert_int_ne(fputc(byte ^ 0x5a, f), EOF);
  ck_assert_int_eq(fclose(f), 0);

  /* The damaged entries are rejected and rebuilt; the context works. */
  clt_kernel_stats third = context_with_cache(dir, 1);
  ck_assert_int_eq(third.cache_rejected, 2);
  ck_assert_int_eq(third.cache_misses, 2);
  ck_assert_int_eq(third.cache_hits, third.programs - 2);
  files = list_entries(dir, names, MAX, &clbin);
  ck_assert_int_eq(clbin, third.programs);
  ck_assert_int_eq(files, clbin);
  /* The truncated entry is whole again (the fourth context proves both
   * rewritten entries load). */
  ck_assert_int_gt(file_size(path[0]), size[0] / 2);

  /* The rewritten entries are good: all hits again. */
  clt_kernel_stats fourth = context_with_cache(dir, 1);
  ck_assert_int_eq(fourth.cache_hits, fourth.programs);
  ck_assert_int_eq(fourth.cache_rejected, 0);
  test_remove_tree(dir);
}
END_TEST

START_TEST(cache_off_writes_nothing) {
  char dir[64];
  char names[4][80];
  int clbin;
  make_temp_dir(dir, sizeof dir);
  clt_kernel_stats ks = context_with_cache(dir, 0);
  ck_assert_int_eq(ks.cache_hits, 0);
  ck_assert_int_eq(ks.cache_misses, ks.programs);
  ck_assert_int_eq(list_entries(dir, names, 4, &clbin), 0);

  /* cache = -1 follows $CLT_CACHE. */
  const char *old = getenv("CLT_CACHE");
  char *saved = old ? strdup(old) : NULL;
  test_setenv("CLT_CACHE", "0");
  ks = context_with_cache(dir, -1);
  if (saved)
    test_setenv("CLT_CACHE", saved);
  else
    test_setenv("CLT_CACHE", NULL);
  free(saved);
  ck_assert_int_eq(ks.cache_hits, 0);
  ck_assert_int_eq(list_entries(dir, names, 4, &clbin), 0);
  test_remove_tree(dir);
}
END_TEST

/* A context on the suite's device with its cache in dir that fills a
 * tensor (one program, tensor's, built on first use) and returns its
 * stats; *keeps: whether its driver keeps the kernels it compiles.
 * Checks the fill's launch no longer counts as compiling and, where the
 * program was compiled here by such a driver, that a kernel of it not
 * launched yet still does. */
static clt_kernel_stats context_filling(const char *dir, bool *keeps) {
  clt_context_options opts;
  clt_context_options_init(&opts);
  opts.cache_dir = dir;
  opts.cache = 1;
  clt_context *ctx = context_created(&opts);
  *keeps = ctx->driver_keeps_kernels;
  fills(ctx, 2.5f);
  ck_assert(!ctx->launch_compiles[CLT_K_fill_f32]);
  cl_kernel k;
  ck_assert_int_eq(clt_kernel_get(ctx, CLT_K_fill_i32, &k), CLT_OK);
  ck_assert_int_eq(clt_kernel_program(CLT_K_fill_i32, NULL),
                   clt_kernel_program(CLT_K_fill_f32, NULL));
  clt_kernel_stats ks;
  clt_context_kernel_stats(ctx, &ks);
  ck_assert(ctx->launch_compiles[CLT_K_fill_i32] ==
            (ctx->driver_keeps_kernels && ks.cache_misses > 0));
  clt_context_destroy(ctx);
  return ks;
}

/* How many of the entries in dir (*all of them) are the mark left for a
 * driver that keeps its compiled kernels (the cache's header and a short
 * line) rather than a binary. */
static int count_marks(const char *dir, int *all) {
  enum { MAX = 64 };
  char names[MAX][80];
  list_entries(dir, names, MAX, all);
  ck_assert_int_ge(*all, 1);
  int marks = 0;
  for (int i = 0; i < *all; i++) {
    char path[256];
    snprintf(path, sizeof path, "%.63s/%.79s", dir, names[i]);
    marks += file_size(path) < 200;
  }
  return marks;
}

/* True when every entry in dir is a mark, false when none is. */
static bool entries_are_marks(const char *dir) {
  int all, marks = count_marks(dir, &all);
  ck_assert_msg(marks == 0 || marks == all, "%d of %d entries are marks",
                marks, all);
  return marks > 0;
}

/* On a driver that compiles each kernel at its first launch and keeps it
 * (POCL), the cache keeps a mark for a program instead of its binary
 * (asking for the binary compiles every kernel of it); a mark is a hit
 * while POCL's cache holds anything, a miss where POCL's cache is gone,
 * and CLT_POCL_LAZY=0 stores binaries instead, which a later run loads.
 * On other drivers the cache holds binaries. */
START_TEST(driver_kept_kernels_leave_a_mark) {
  char dir[64], empty[64];
  make_temp_dir(dir, sizeof dir);
  make_temp_dir(empty, sizeof empty);
  bool keeps;
  clt_kernel_stats first = context_filling(dir, &keeps);
  ck_assert_int_eq(first.programs, 1);
  ck_assert_int_eq(first.cache_misses, 1);
  ck_assert_int_eq(first.cache_stored, 1);
  ck_assert(entries_are_marks(dir) == keeps);
  ck_assert_double_eq(first.load_seconds, 0.0);

  clt_kernel_stats again = context_filling(dir, &keeps);
  ck_assert_int_eq(again.cache_hits, 1);
  ck_assert_int_eq(again.cache_misses, 0);
  ck_assert_int_eq(again.cache_rejected, 0);
  /* the hit's build is loading, all of it */
  ck_assert(again.load_seconds > 0.0);
  ck_assert_double_le(again.load_seconds, again.build_seconds);

  if (keeps) {
    /* POCL's cache empty (as our check sees it; the driver keeps its
     * own): the mark is not trusted, the program compiled again. */
    char *pocl = getenv("POCL_CACHE_DIR");
    char *saved = pocl ? strdup(pocl) : NULL;
    test_setenv("POCL_CACHE_DIR", empty);
    clt_kernel_stats gone = context_filling(dir, &keeps);
    test_setenv("POCL_CACHE_DIR", saved);
    free(saved);
    ck_assert_int_eq(gone.cache_hits, 0);
    ck_assert_int_eq(gone.cache_misses, 1);
    ck_assert(entries_are_marks(dir));

    /* Binaries asked for: the mark is replaced by one, which loads. */
    test_setenv("CLT_POCL_LAZY", "0");
    clt_kernel_stats binary = context_filling(dir, &keeps);
    ck_assert(!keeps);
    ck_assert_int_eq(binary.cache_misses, 1);
    ck_assert(!entries_are_marks(dir));
    binary = context_filling(dir, &keeps);
    test_setenv("CLT_POCL_LAZY", NULL);
    ck_assert_int_eq(binary.cache_hits, 1);
    /* and a binary in the cache is loaded where marks are left too */
    clt_kernel_stats loaded = context_filling(dir, &keeps);
    ck_assert(keeps);
    ck_assert_int_eq(loaded.cache_hits, 1);
    ck_assert(!entries_are_marks(dir));
  }
  /* clt_context_build_kernels compiles every kernel and keeps binaries,
   * over a mark too: a mark it finds is a miss, and its next call loads
   * every program. */
  test_remove_tree(dir);
  make_temp_dir(dir, sizeof dir);
  context_filling(dir, &keeps);
  clt_kernel_stats all = context_with_cache(dir, 1);
  ck_assert_int_eq(all.cache_misses, all.programs - (keeps ? 0 : 1));
  ck_assert(!entries_are_marks(dir));
  all = context_with_cache(dir, 1);
  ck_assert_int_eq(all.cache_hits, all.programs);
  test_remove_tree(dir);
  test_remove_tree(empty);
}
END_TEST

/* The build_progress callback: each program the context builds, on first
 * use, reported once (compiled from source on an empty cache, loaded on a
 * full one) and numbered in the order built; variants with other options
 * (clt_program_build_extra: an implicit convolution's tiles, the fp16
 * kernel) are not reported. The callback lives as long as the context:
 * programs are built long after clt_context_create returns. */
typedef struct progress_seen {
  int calls, compiled, last_index, total;
} progress_seen;

static void count_progress(const clt_device_info *device, const char *program,
                           int index, int total, bool compiling, void *user) {
  progress_seen *seen = user;
  ck_assert_ptr_nonnull(device);
  ck_assert_ptr_nonnull(program);
  ck_assert_int_eq(index, seen->last_index + 1);
  ck_assert_int_le(index, total);
  seen->last_index = index;
  seen->total = total;
  seen->calls++;
  seen->compiled += compiling;
}

static void progress_of_context(const char *dir, progress_seen *seen,
                                clt_kernel_stats *ks) {
  clt_context_options opts;
  clt_context_options_init(&opts);
  opts.cache_dir = dir;
  opts.cache = 1;
  opts.build_progress = count_progress;
  opts.build_progress_user = seen;
  clt_context *ctx = context_created(&opts);
  ck_assert_int_eq(seen->calls, 0); /* nothing built yet */
  /* a fill: the one program it needs */
  int64_t shape[1] = {3};
  clt_tensor *t;
  ck_assert_int_eq(clt_tensor_create(ctx, CLT_F32, 1, shape, &t), CLT_OK);
  ck_assert_int_eq(clt_tensor_fill(t, 1.0), CLT_OK);
  clt_tensor_destroy(t);
  ck_assert_int_eq(seen->calls, 1);
  /* A variant built from source, with options no other build has: counted
   * among the programs, not reported. */
  cl_program prog = NULL;
  ck_assert_int_eq(clt_program_build_extra(ctx, "tensor",
                                           "-DCLT_TEST_ON_DEMAND=1", &prog),
                   CLT_OK);
  ck_assert_ptr_nonnull(prog);
  clReleaseProgram(prog);
  ck_assert_int_eq(seen->calls, 1);
  /* the rest, all at once */
  ck_assert_msg(clt_context_build_kernels(ctx) == CLT_OK, "%s",
                clt_context_last_error(ctx));
  clt_context_kernel_stats(ctx, ks);
  ck_assert_int_eq(seen->calls, ks->programs - 1);
  ck_assert_int_eq(seen->last_index, seen->total);
  clt_context_destroy(ctx);
}

START_TEST(build_progress_reports_each_program_once) {
  char dir[64];
  make_temp_dir(dir, sizeof dir);
  /* an empty cache: every program compiled */
  progress_seen seen = {0};
  clt_kernel_stats ks;
  progress_of_context(dir, &seen, &ks);
  ck_assert_int_gt(seen.calls, 1);
  ck_assert_int_eq(seen.compiled, seen.calls);
  ck_assert_int_eq(ks.cache_misses, ks.programs);
  /* binaries, the fill's program too (on POCL marked by the fill, then
   * stored whole by clt_context_build_kernels); the variant built before
   * it, on POCL, a mark (not one of the programs it builds) */
  int all, marks = count_marks(dir, &all);
  ck_assert_int_eq(all, ks.programs);
  ck_assert_int_eq(marks, g_ctx->driver_keeps_kernels ? 1 : 0);
  /* again: every program loaded, the variant's too (it was stored) */
  progress_seen again = {0};
  progress_of_context(dir, &again, &ks);
  ck_assert_int_eq(again.compiled, 0);
  ck_assert_int_eq(again.calls, seen.calls);
  ck_assert_int_eq(ks.cache_hits, ks.programs);
  test_remove_tree(dir);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Status codes and errors                                                   */

START_TEST(status_strings) {
  const char *seen[CLT_ERR_INTERNAL + 1];
  for (int s = CLT_OK; s <= CLT_ERR_INTERNAL; s++) {
    const char *text = clt_status_string((clt_status)s);
    ck_assert_ptr_nonnull(text);
    ck_assert_msg(text[0] != '\0', "status %d has an empty string", s);
    for (int t = CLT_OK; t < s; t++)
      ck_assert_msg(strcmp(text, seen[t]) != 0,
                    "statuses %d and %d are both "
                    "'%s'",
                    t, s, text);
    seen[s] = text;
  }
  ck_assert_str_eq(clt_status_string((clt_status)999), "unknown status");
}
END_TEST

START_TEST(last_error_names_the_problem) {
  clt_tensor *t = NULL;
  int64_t shape[1] = {4};
  ck_assert_int_eq(clt_tensor_create(g_ctx, CLT_F32, 0, shape, &t),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(t);
  const char *msg = clt_context_last_error(g_ctx);
  ck_assert_msg(strstr(msg, "tensor") && strstr(msg, "0 dimensions"),
                "message: %s", msg);

  int64_t bad[2] = {3, 0};
  ck_assert_int_eq(clt_tensor_create(g_ctx, CLT_F32, 2, bad, &t),
                   CLT_ERR_INVALID_ARGUMENT);
  msg = clt_context_last_error(g_ctx);
  ck_assert_msg(strstr(msg, "dimension 1"), "message: %s", msg);
  ck_assert_str_eq(clt_context_last_error(NULL), "no context");
}
END_TEST

/* A log callback sees the context's start and its errors. */
typedef struct log_record {
  int infos, debugs;
  char last[512];
} log_record;

static void record_log(clt_log_level level, const char *message, void *user) {
  log_record *r = user;
  if (level == CLT_LOG_INFO) r->infos++;
  if (level == CLT_LOG_DEBUG) r->debugs++;
  snprintf(r->last, sizeof r->last, "%s", message);
}

START_TEST(log_callback_and_profiling) {
  log_record rec = {0};
  clt_context_options opts;
  clt_context_options_init(&opts);
  opts.log = record_log;
  opts.log_user = &rec;
  opts.profiling = true;
  clt_context *ctx = context_created(&opts);
  ck_assert_int_ge(rec.infos, 1);
  int64_t shape[1] = {5};
  clt_tensor *t;
  ck_assert_int_eq(clt_tensor_create(ctx, CLT_U8, 5, shape, &t),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_int_ge(rec.debugs, 1);
  ck_assert_ptr_nonnull(strstr(rec.last, "dimensions"));

  ck_assert_int_eq(clt_tensor_create(ctx, CLT_F32, 1, shape, &t), CLT_OK);
  ck_assert_int_eq(clt_tensor_fill(t, 2.0), CLT_OK);
  ck_assert_int_eq(clt_tensor_fill(t, 3.0), CLT_OK);
  clt_profile_row *rows;
  size_t count;
  ck_assert_int_eq(clt_profile_summary(ctx, &rows, &count), CLT_OK);
  bool found = false;
  for (size_t i = 0; i < count; i++)
    if (strcmp(rows[i].op, "fill_f32") == 0) {
      ck_assert_uint_eq(rows[i].calls, 2);
      /* A time, or none where the device's clock does not run. */
      if (clt_profile_timed(ctx))
        ck_assert(rows[i].seconds >= 0.0);
      else
        ck_assert(isnan(rows[i].seconds));
      found = true;
    }
  ck_assert(found);
  free(rows);
  clt_profile_reset(ctx);
  ck_assert_int_eq(clt_profile_summary(ctx, &rows, &count), CLT_OK);
  ck_assert_uint_eq(count, 0);
  free(rows);
  clt_tensor_destroy(t);
  clt_context_destroy(ctx);

  /* Without profiling the summary is an error, and nothing is timed. */
  ck_assert(!clt_profile_timed(g_ctx));
  ck_assert_int_eq(clt_profile_summary(g_ctx, &rows, &count),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx), "profiling"));
}
END_TEST

/* clt_profile_timed against a check of our own on the same queue: a
 * command whose wait the host timed at 1 ms or more must span some of
 * that by its events (Mesa's rusticl 22.3 gives every command the times
 * 0 to 3 ns: untimed there). POCL's clock runs. */
START_TEST(profiling_clock_is_checked) {
  clt_context_options opts;
  clt_context_options_init(&opts);
  opts.profiling = true;
  clt_context *ctx = context_created(&opts);
  enum { BYTES = 32 << 20 };
  char *host = calloc(1, BYTES);
  ck_assert_ptr_nonnull(host);
  cl_int rc;
  cl_mem m = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, BYTES, NULL, &rc);
  ck_assert_int_eq(rc, CL_SUCCESS);
  double host_s = 0.0, device_s = 0.0;
  /* Writes of 32 MiB until the host has waited 1 ms for one; not the
   * first, which finds the buffer's memory to be made (POCL: 90 ms, of
   * which its events span 3). */
  ck_assert_int_eq(clEnqueueWriteBuffer(ctx->queue, m, CL_TRUE, 0, BYTES,
                                        host, 0, NULL, NULL),
                   CL_SUCCESS);
  for (int i = 0; i < 50 && host_s < 1e-3; i++) {
    cl_event ev;
    double t0 = clt_now_seconds();
    ck_assert_int_eq(clEnqueueWriteBuffer(ctx->queue, m, CL_TRUE, 0, BYTES,
                                          host, 0, NULL, &ev),
                     CL_SUCCESS);
    host_s = clt_now_seconds() - t0;
    cl_ulong queued = 0, end = 0;
    if (clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_QUEUED,
                                sizeof queued, &queued, NULL) == CL_SUCCESS &&
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end,
                                &end, NULL) == CL_SUCCESS &&
        end > queued)
      device_s = (double)(end - queued) * 1e-9;
    clReleaseEvent(ev);
  }
  ck_assert_msg(host_s >= 1e-3, "no write of 32 MiB took 1 ms here");
  bool runs = device_s >= 0.1 * host_s;
  ck_assert_msg(clt_profile_timed(ctx) == runs,
                "clt_profile_timed %d, but a write the host waited %.3f ms "
                "for spans %.6f ms by its events",
                clt_profile_timed(ctx), host_s * 1e3, device_s * 1e3);
  if (strstr(clt_context_device(ctx)->platform_name, "Portable Computing"))
    ck_assert(runs);
  clReleaseMemObject(m);
  free(host);
  clt_context_destroy(ctx);
}
END_TEST

/* clt_program_build_patched (the wgmma route's build: compile, rewrite
 * the binary, build that): a rewriting that refuses is a build error that
 * says why, and a program that does not exist an internal one. A binary
 * the driver refuses is not tried here: rusticl (Mesa 22.3.6) panics
 * ("unknown version", program.rs) instead of returning
 * CL_INVALID_BINARY. The success path needs NVIDIA's PTX (test_wgmma_ptx
 * checks the rewriting itself; selftest the kernels on the GPU). */
static char *refuse_patch(const char *binary, char *why, size_t why_len) {
  (void)binary;
  snprintf(why, why_len, "no placeholder in this test's program");
  return NULL;
}

START_TEST(patched_build_refusals) {
  cl_program prog = NULL;
  const char *opts = "-DCLT_MMA_PTX=0 -DCLT_MMA_ASM=0";
  ck_assert_int_eq(clt_program_build_patched(g_ctx, "mma", opts, "test",
                                             refuse_patch, &prog),
                   CLT_ERR_BUILD);
  ck_assert_ptr_null(prog);
  const char *msg = clt_context_last_error(g_ctx);
  ck_assert_msg(strstr(msg, "cl/mma.cl") && strstr(msg, "rewriting") &&
                    strstr(msg, "no placeholder in this test's program"),
                "%s", msg);
  ck_assert_int_eq(clt_program_build_patched(g_ctx, "no_such_program", "",
                                             "test", refuse_patch, &prog),
                   CLT_ERR_INTERNAL);
  ck_assert_ptr_null(prog);
}
END_TEST

/* Every kernel program compiles without a warning on this device. POCL
 * printed "21 warnings generated." (a loop LLVM would not unroll in
 * cl/gemm.cl) on the terminal of every fresh machine's first run; a
 * warning can also be a real bug. The programs are built from source in a
 * context without our cache (nothing stored), with a define of their own:
 * a driver that caches builds (POCL) compiles them, and so writes a log,
 * the first time after a kernel, an option or the driver changed, which is
 * when a warning can appear; later it may give an empty log. The fp16
 * kernels (cl/mma.cl) in the device's route, else emulated. */
START_TEST(programs_build_without_warnings) {
  clt_context_options opts;
  clt_context_options_init(&opts);
  opts.cache = 0;
  clt_context *ctx = context_created(&opts);
  char mma[96] = "";
  if (clt_fp16_build_flags(ctx, mma, sizeof mma) != CLT_OK) {
    clt_err_clear(&ctx->err);
    snprintf(mma, sizeof mma, "-DCLT_MMA_PTX=0 -DCLT_MMA_ASM=0");
  }
  for (int i = 0; i < clt_embedded_program_count; i++) {
    const char *name = clt_embedded_programs[i].name;
    char extra[160];
    snprintf(extra, sizeof extra, "-DCLT_BUILD_LOG_CHECK=1%s%s",
             strcmp(name, "mma") == 0 ? " " : "",
             strcmp(name, "mma") == 0 ? mma : "");
    cl_program prog = NULL;
    ck_assert_msg(clt_program_build_extra(ctx, name, extra, &prog) == CLT_OK,
                  "cl/%s.cl: %s", name, clt_context_last_error(ctx));
    char *log = clt_program_build_log(ctx, prog);
    ck_assert_ptr_nonnull(log);
    ck_assert_msg(!strcasestr(log, "warning"),
                  "cl/%s.cl built with warnings on %s:\n%.4000s", name,
                  clt_context_device(ctx)->name, log);
    free(log);
    cl_program prog16 = NULL;
    if (clt_program_has_round16(i)) {
      /* its round16 program */
      snprintf(extra, sizeof extra,
               "-DCLT_BUILD_LOG_CHECK=1 -DCLT_ROUND16_PROGRAM=1");
      ck_assert_msg(clt_program_build_extra(ctx, name, extra, &prog16) ==
                        CLT_OK,
                    "cl/%s.cl, round16: %s", name, clt_context_last_error(ctx));
      log = clt_program_build_log(ctx, prog16);
      ck_assert_ptr_nonnull(log);
      ck_assert_msg(!strcasestr(log, "warning"),
                    "cl/%s.cl's round16 program built with warnings on "
                    "%s:\n%.4000s",
                    name, clt_context_device(ctx)->name, log);
      free(log);
    }
    /* Each of the file's listed kernels is in the one program the runtime
     * takes it from, and not in the other (a kernel left out of #if
     * !CLT_ROUND16_PROGRAM would be compiled twice for mixed precision). */
    for (int k = 0; k < CLT_KERNEL_COUNT; k++) {
      bool r16 = false;
      if (clt_kernel_program((clt_kernel_id)k, &r16) != i) continue;
      const char *kname = clt_kernel_name((clt_kernel_id)k);
      ck_assert_msg(!r16 || prog16, "%s: no round16 program", kname);
      cl_program in[2] = {r16 ? prog16 : prog, r16 ? prog : prog16};
      for (int j = 0; j < 2; j++) {
        if (!in[j]) continue;
        cl_int rc;
        cl_kernel kern = clCreateKernel(in[j], kname, &rc);
        ck_assert_msg((rc == CL_SUCCESS) == (j == 0),
                      "cl/%s.cl: kernel %s %s its %sprogram (%s)", name, kname,
                      j == 0 ? "missing from" : "also in",
                      (j == 0) == r16 ? "round16 " : "",
                      clt_cl_error_name(rc));
        if (kern) clReleaseKernel(kern);
      }
    }
    clReleaseProgram(prog);
    if (prog16) clReleaseProgram(prog16);
  }
  clt_context_destroy(ctx);
}
END_TEST

/* A file's rounding variants (mixed precision's NAME_r16 and NAME_s16)
 * are a program of their own, built only where one of them runs: an fp32
 * sum builds cl/elementwise.cl's program and not its round16 program
 * (whose binary POCL would compile kernel by kernel, for nothing); a
 * rounded sum builds that, and gives fp16 values. (Which kernels each
 * program holds: programs_build_without_warnings.) */
START_TEST(round16_variants_built_apart) {
  clt_context_options opts;
  clt_context_options_init(&opts);
  clt_context *ctx = context_created(&opts);
  int64_t n = 7;
  clt_tensor *a, *b, *out;
  ck_assert_ok(clt_tensor_create(ctx, CLT_F32, 1, &n, &a));
  ck_assert_ok(clt_tensor_create(ctx, CLT_F32, 1, &n, &b));
  ck_assert_ok(clt_tensor_create(ctx, CLT_F32, 1, &n, &out));
  ck_assert_ok(clt_tensor_fill(a, 1.0));
  ck_assert_ok(clt_tensor_fill(b, 1.0 / 3.0));
  clt_kernel_stats ks;
  clt_context_kernel_stats(ctx, &ks);
  int before = ks.programs;
  ck_assert_ok(clt_add_forward(ctx, out, a, b, n, false, NULL));
  float host[7];
  ck_assert_ok(clt_tensor_download(out, host));
  ck_assert_float_eq(host[0], 1.0f + 1.0f / 3.0f);
  clt_context_kernel_stats(ctx, &ks);
  ck_assert_int_eq(ks.programs, before + 1);
  int e = -1;
  for (int i = 0; i < clt_embedded_program_count; i++)
    if (strcmp(clt_embedded_programs[i].name, "elementwise") == 0) e = i;
  ck_assert_int_ge(e, 0);
  ck_assert_ptr_nonnull(ctx->programs[e]);
  ck_assert_ptr_null(ctx->programs16[e]);
  ck_assert(clt_program_has_round16(e));
  clt_round16 r = {.mode = 1};
  ck_assert_ok(clt_add_forward(ctx, out, a, b, n, false, &r));
  ck_assert_ok(clt_tensor_download(out, host));
  /* 4/3 to the nearest fp16: 1 + 341/1024 */
  ck_assert_float_eq(host[6], 1.0f + 341.0f / 1024.0f);
  clt_context_kernel_stats(ctx, &ks);
  ck_assert_int_eq(ks.programs, before + 2);
  ck_assert_ptr_nonnull(ctx->programs16[e]);
  clt_tensor_destroy(a);
  clt_tensor_destroy(b);
  clt_tensor_destroy(out);
  clt_context_destroy(ctx);
}
END_TEST

/* Pinned host memory takes what the host writes, an upload from it (the
 * loader's, without waiting) gives the device the same bytes, and it is
 * given back; a zeroed one is freed as nothing. */
START_TEST(pinned_memory_uploads) {
  int64_t n = 4099; /* not a multiple of anything */
  clt_pinned p;
  ck_assert_msg(clt_pinned_alloc(g_ctx, (size_t)n, &p),
                "no pinned host memory on %s", clt_context_device(g_ctx)->name);
  ck_assert_ptr_nonnull(p.ptr);
  uint8_t *host = p.ptr;
  for (int64_t i = 0; i < n; i++) host[i] = (uint8_t)(i * 7 + 3);
  clt_tensor *t = NULL;
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_U8, 1, &n, &t));
  cl_event done = NULL;
  ck_assert_ok(clt_tensor_upload_async(t, p.ptr, &done));
  ck_assert_int_eq(clWaitForEvents(1, &done), CL_SUCCESS);
  clReleaseEvent(done);
  for (int64_t i = 0; i < n; i++) host[i] = 0; /* after the upload ran */
  uint8_t *back = malloc((size_t)n);
  ck_assert_ok(clt_tensor_download(t, back));
  for (int64_t i = 0; i < n; i++)
    ck_assert_uint_eq(back[i], (uint8_t)(i * 7 + 3));
  free(back);
  clt_tensor_destroy(t);
  clt_pinned_free(g_ctx, &p);
  ck_assert_ptr_null(p.ptr);
  clt_pinned zero = {0};
  clt_pinned_free(g_ctx, &zero);
  ck_assert_ok(clt_context_finish(g_ctx));
}
END_TEST

/* ------------------------------------------------------------------------ */

static Suite *runtime_suite(void) {
  Suite *s = suite_create("runtime");

  TCase *dev = tcase_create("devices");
  tcase_add_test(dev, device_list_on_this_machine);
  tcase_add_test(dev, context_reports_its_kernels);
  tcase_add_test(dev, round16_variants_built_apart);
  tcase_add_test(dev, programs_built_on_first_use);
  tcase_add_test(dev, context_with_unknown_device_fails);
  tcase_add_test(dev, context_with_empty_device_fails);
  tcase_add_test(dev, pinned_memory_uploads);
  suite_add_tcase(s, dev);

  TCase *sel = tcase_create("select");
  tcase_add_checked_fixture(sel, fake_setup, NULL);
  tcase_add_test(sel, select_by_flat_index);
  tcase_add_test(sel, select_by_platform_and_device);
  tcase_add_test(sel, select_by_type);
  tcase_add_test(sel, select_by_name_part);
  tcase_add_test(sel, select_pocl_by_name);
  tcase_add_test(sel, select_default);
  tcase_add_test(sel, select_no_match_lists_devices);
  tcase_add_test(sel, select_empty_spec_is_an_error);
  suite_add_tcase(s, sel);

  TCase *cache = tcase_create("cache");
  tcase_add_test(cache, cache_miss_hit_reject_rebuild);
  tcase_add_test(cache, cache_off_writes_nothing);
  tcase_add_test(cache, driver_kept_kernels_leave_a_mark);
  tcase_add_test(cache, patched_build_refusals);
  tcase_add_test(cache, build_progress_reports_each_program_once);
  tcase_add_test(cache, programs_build_without_warnings);
  suite_add_tcase(s, cache);

  TCase *err = tcase_create("errors");
  tcase_add_test(err, status_strings);
  tcase_add_test(err, last_error_names_the_problem);
  tcase_add_test(err, log_callback_and_profiling);
  tcase_add_test(err, profiling_clock_is_checked);
  suite_add_tcase(s, err);
  return s;
}

int main(void) { return test_run_suite("runtime", runtime_suite); }
