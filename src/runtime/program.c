/* Kernel programs: the embedded cl/ sources built for the context's
 * device, through the on-disk binary cache. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "runtime/cache.h"
#include "runtime/embedded.h"
#include "runtime/runtime.h"

static const struct {
  const char *name;
  const char *file;
} kernel_table[] = {
#define CLT_KERNEL(name, file) {#name, file},
    CLT_KERNEL_LIST(CLT_KERNEL)
#undef CLT_KERNEL
};

/* -cl-std comes from the device's OpenCL C version, never the platform's:
 * POCL 3.1 reports a 3.0 platform with a 1.2 compiler. Our kernels are
 * OpenCL C 1.2, so newer compilers are asked for 1.2 too. */
static const char *cl_std_option(const clt_device_info *info) {
  int major = 1, minor = 0;
  if (sscanf(info->opencl_c_version, "OpenCL C %d.%d", &major, &minor) != 2)
    return "-cl-std=CL1.1";
  if (major > 1 || minor >= 2) return "-cl-std=CL1.2";
  return minor >= 1 ? "-cl-std=CL1.1" : "";
}

/* Programs built where they are used, not at start-up. */
static const char *const on_demand[] = {"mma"};

static bool is_on_demand(const char *name) {
  for (size_t i = 0; i < sizeof on_demand / sizeof on_demand[0]; i++)
    if (strcmp(on_demand[i], name) == 0) return true;
  return false;
}

static void build_options(const clt_context *ctx, const char *extra,
                          char *out, size_t outlen) {
  snprintf(out, outlen,
           "%s -DCLT_HAS_FP16=%d -DCLT_HAS_FP64=%d -DCLT_LOCAL_MEM=%llu "
           "-DCLT_WG=%zu%s%s",
           cl_std_option(&ctx->info), ctx->info.fp16 ? 1 : 0,
           ctx->info.fp64 ? 1 : 0, (unsigned long long)ctx->info.local_mem_bytes,
           ctx->work_group, extra[0] ? " " : "", extra);
}

char *clt_program_build_log(const clt_context *ctx, cl_program prog) {
  size_t size = 0;
  if (clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL,
                            &size) != CL_SUCCESS)
    return NULL;
  char *log = calloc(1, size + 1);
  if (log && clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG,
                                   size, log, NULL) != CL_SUCCESS) {
    free(log);
    return NULL;
  }
  return log;
}

static clt_status build_failed(clt_context *ctx, cl_program prog,
                               const char *name, cl_int rc) {
  char *log = clt_program_build_log(ctx, prog);
  clt_ctx_fail(ctx, CLT_ERR_BUILD, "building cl/%s.cl for %s failed (%s):\n%s",
               name, ctx->info.name, clt_cl_error_name(rc), log ? log : "");
  free(log);
  return CLT_ERR_BUILD;
}

static clt_status build_from_source(clt_context *ctx, const char *name,
                                    const char *source, const char *options,
                                    cl_program *out) {
  cl_int rc;
  cl_program prog =
      clCreateProgramWithSource(ctx->cl, 1, &source, NULL, &rc);
  if (rc != CL_SUCCESS)
    return clt_ctx_cl_fail(ctx, rc, "clCreateProgramWithSource");
  rc = clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL);
  if (rc != CL_SUCCESS) {
    build_failed(ctx, prog, name, rc);
    clReleaseProgram(prog);
    return CLT_ERR_BUILD;
  }
  *out = prog;
  return CLT_OK;
}

/* A binary from the cache that the driver refuses is treated as a miss. */
static bool build_from_binary(clt_context *ctx, const uint8_t *bin, size_t len,
                              const char *options, cl_program *out) {
  cl_int rc, bin_rc;
  cl_program prog = clCreateProgramWithBinary(
      ctx->cl, 1, &ctx->device, &len, &bin, &bin_rc, &rc);
  if (rc != CL_SUCCESS || bin_rc != CL_SUCCESS) {
    if (prog) clReleaseProgram(prog);
    return false;
  }
  if (clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL) !=
      CL_SUCCESS) {
    clReleaseProgram(prog);
    return false;
  }
  *out = prog;
  return true;
}

/* Stores a compiled program's binary: 1 when stored, 0 when there was no
 * binary to store, -1 when the cache folder cannot be written, after saying
 * so once: a cache that cannot be written only costs time, but every run
 * then compiles again, so the user should hear why and what to do. */
/* A program's one binary, with a NUL after it (PTX is text); NULL where
 * the driver gives none. In turns (clt_turn_begin): POCL 3.1 compiles the
 * kernels' work-group functions for the binary into the list of loaded
 * kernels that another context's running commands use. */
static char *program_binary(clt_context *ctx, cl_program prog, size_t *len) {
  size_t size = 0;
  unsigned char *bin = NULL;
  clt_turn_begin(ctx);
  /* Programs are built on first use, when this context's own commands may
   * be running; its queue is finished first, so that POCL compiles the
   * binary's work-group functions with none of ours in flight either, as
   * when every program was built in clt_context_create (a cache miss
   * only: later runs never wait here). */
  if (ctx->takes_turns) clFinish(ctx->queue);
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size,
                       NULL) == CL_SUCCESS &&
      size > 0)
    bin = calloc(size + 1, 1);
  if (bin && clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin,
                              NULL) != CL_SUCCESS) {
    free(bin);
    bin = NULL;
  }
  clt_turn_end(ctx);
  if (bin) *len = size;
  return (char *)bin;
}

static int store_entry(clt_context *ctx, const char *dir,
                       const uint8_t key[32], const void *data, size_t size) {
  clt_err err = {0};
  if (clt_cache_store(dir, key, data, size, &err) == CLT_OK) return 1;
  clt_ctx_log(ctx, CLT_LOG_WARN,
              "%s; kernels will be compiled again on every run (set "
              "CLT_CACHE_DIR to a writable folder, or CLT_CACHE=0 to "
              "silence this)",
              err.msg);
  return -1;
}

static int store_binary(clt_context *ctx, cl_program prog, const char *dir,
                        const uint8_t key[32]) {
  size_t size = 0;
  char *bin = program_binary(ctx, prog, &size);
  if (!bin) return 0;
  int stored = store_entry(ctx, dir, key, bin, size);
  free(bin);
  return stored;
}

/* CLT_PTX_DUMP=DIR: a rewritten program's text before and after, as
 * DIR/NAME-KEY.ptx and NAME-KEY.patched.ptx, and the driver's log of its
 * build (asked to be verbose: registers, local memory, the assembler's
 * warnings) as DIR/NAME-KEY.log; to read what the driver got (best
 * effort). */
static void dump_text(const char *name, const uint8_t key[32],
                      const char *suffix, const char *text) {
  const char *dir = getenv("CLT_PTX_DUMP");
  if (!dir || !*dir || !text) return;
  char path[4200];
  snprintf(path, sizeof path, "%s/%s-%02x%02x%02x%02x%s", dir, name, key[0],
           key[1], key[2], key[3], suffix);
  FILE *f = fopen(path, "w");
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

/* The rewritten build (clt_program_build_patched): the program built from
 * source, its binary passed to `patch`, the result built from binary. */
static clt_status build_rewritten(clt_context *ctx,
                                  const clt_embedded_program *p,
                                  const char *options, const uint8_t key[32],
                                  clt_binary_patch_fn patch, cl_program *out) {
  cl_program first;
  CLT_TRY(build_from_source(ctx, p->name, p->source, options, &first));
  size_t len = 0;
  char *bin = program_binary(ctx, first, &len);
  clReleaseProgram(first);
  if (!bin)
    return clt_ctx_fail(ctx, CLT_ERR_BUILD,
                        "building cl/%s.cl for %s: the driver gives no "
                        "binary to rewrite",
                        p->name, ctx->info.name);
  char why[400] = "";
  char *patched = patch(bin, why, sizeof why);
  dump_text(p->name, key, ".ptx", bin);
  dump_text(p->name, key, ".patched.ptx", patched);
  free(bin);
  if (!patched)
    return clt_ctx_fail(ctx, CLT_ERR_BUILD,
                        "building cl/%s.cl for %s: rewriting its binary "
                        "failed:\n%s",
                        p->name, ctx->info.name, why);
  /* the text and its NUL, as the driver gave it */
  size_t plen = strlen(patched) + 1;
  const unsigned char *pbin = (const unsigned char *)patched;
  cl_int rc, bin_rc = CL_SUCCESS;
  cl_program prog = clCreateProgramWithBinary(ctx->cl, 1, &ctx->device, &plen,
                                              &pbin, &bin_rc, &rc);
  free(patched);
  if (rc != CL_SUCCESS || bin_rc != CL_SUCCESS) {
    if (prog) clReleaseProgram(prog);
    return clt_ctx_fail(ctx, CLT_ERR_BUILD,
                        "building cl/%s.cl for %s: the driver refuses the "
                        "rewritten binary (%s)",
                        p->name, ctx->info.name,
                        clt_cl_error_name(rc != CL_SUCCESS ? rc : bin_rc));
  }
  const char *dump = getenv("CLT_PTX_DUMP");
  bool verbose = dump && *dump;
  rc = verbose ? clBuildProgram(prog, 1, &ctx->device, "-cl-nv-verbose", NULL,
                                NULL)
               : CL_INVALID_BUILD_OPTIONS;
  if (rc != CL_SUCCESS)
    rc = clBuildProgram(prog, 1, &ctx->device, "", NULL, NULL);
  if (verbose) {
    char *log = clt_program_build_log(ctx, prog);
    dump_text(p->name, key, ".log", log);
    free(log);
  }
  if (rc != CL_SUCCESS) {
    build_failed(ctx, prog, p->name, rc);
    clReleaseProgram(prog);
    return CLT_ERR_BUILD;
  }
  *out = prog;
  return CLT_OK;
}

/* Which builds build_progress hears of: none (the variants built with
 * other options: clt_program_build_extra), a file's program, its round16
 * program. */
typedef enum report_kind {
  REPORT_NONE,
  REPORT_PROGRAM,
  REPORT_ROUND16
} report_kind;

static bool has_round16(int program);

/* Tells the context's build_progress callback about one of its programs.
 * index: the programs built so far, this one included (one loaded from
 * the cache is in its slot already); total: the context's programs, the
 * round16 ones included. */
static void report_build(clt_context *ctx, const clt_embedded_program *p,
                         report_kind kind, bool compiling) {
  if (!ctx->build_progress || kind == REPORT_NONE) return;
  int total = 0, built = 0;
  for (int i = 0; i < clt_embedded_program_count; i++) {
    if (is_on_demand(clt_embedded_programs[i].name)) continue;
    bool self = &clt_embedded_programs[i] == p;
    total++;
    if (ctx->programs[i] && !(self && kind == REPORT_PROGRAM)) built++;
    if (!has_round16(i)) continue;
    total++;
    if (ctx->programs16[i] && !(self && kind == REPORT_ROUND16)) built++;
  }
  ctx->build_progress(&ctx->info, p->name, built + 1, total, compiling,
                      ctx->build_progress_user);
}

/* What the cache holds for a program that a driver which keeps its own
 * compiled kernels built (ctx->driver_keeps_kernels): this mark, not the
 * binary. Asking POCL for a program's binary compiles every kernel in it
 * at once, a quarter to half a second each on a 2-core CPU, most of them
 * never run by the model at hand (the other activations, optimizers,
 * losses: 50 of the 105 kernels of ours that the CNN sample's first run
 * compiled); left alone, POCL compiles each kernel at its first launch and
 * keeps it in its own cache, from which the next run's build from source
 * takes it. The mark says that this program was built here before, so
 * that the next run neither says it compiles nor times launches as
 * compiling. */
static const char driver_mark[] =
    "cltrain: built before; the driver keeps its compiled kernels\n";

static bool is_driver_mark(const uint8_t *bin, size_t len) {
  return len == sizeof driver_mark - 1 &&
         memcmp(bin, driver_mark, sizeof driver_mark - 1) == 0;
}

/* With `patch` (and its version, `tag`, in the cache's key) the program
 * is rewritten before it is built (build_rewritten), and what the cache
 * holds is the rewritten binary, built with no options. In
 * clt_context_build_kernels (ctx->building_all) a program is stored whole,
 * a mark found is taken as a miss. *lb: what is left for a driver that
 * keeps its compiled kernels (struct clt_program_mark, runtime.h). */
static clt_status build_through_cache(clt_context *ctx,
                                      const clt_embedded_program *p,
                                      const char *extra, const char *tag,
                                      clt_binary_patch_fn patch,
                                      const char *dir, bool *cache_on,
                                      report_kind report, cl_program *out,
                                      struct clt_program_mark *lb) {
  char options[1024], keyed[1200];
  build_options(ctx, extra, options, sizeof options);
  snprintf(keyed, sizeof keyed, "%s%s%s", options, patch ? " patched:" : "",
           patch ? tag : "");
  uint8_t key[32];
  clt_cache_key_parts parts = {p->source, keyed, ctx->info.name,
                               ctx->info.driver_version,
                               ctx->info.platform_version};
  clt_cache_key(&parts, key);
  bool lazy = ctx->driver_keeps_kernels && !patch && !ctx->building_all;
  lb->at_launch = lb->marked = false;
  memcpy(lb->key, key, sizeof lb->key);
  if (*cache_on) {
    uint8_t *bin = NULL;
    size_t len = 0;
    clt_cache_result r = clt_cache_load(dir, key, &bin, &len);
    bool mark = r == CLT_CACHE_HIT && is_driver_mark(bin, len);
    /* A mark: built here before, the driver's cache has its kernels,
     * unless it is gone (or binaries are wanted now: CLT_POCL_LAZY=0,
     * clt_context_build_kernels): then it is compiled as on a first run. */
    if (mark) {
      free(bin);
      bin = NULL;
      if (!(lazy && clt_pocl_kernels_kept())) r = CLT_CACHE_MISS;
    }
    if (r == CLT_CACHE_HIT) {
      bool ok = true;
      if (mark) {
        CLT_TRY(build_from_source(ctx, p->name, p->source, options, out));
      } else {
        ok = build_from_binary(ctx, bin, len, patch ? "" : options, out);
        free(bin);
      }
      lb->marked = mark;
      if (ok) {
        ctx->kernel_stats.cache_hits++;
        ctx->kernel_stats.programs++;
        report_build(ctx, p, report, false);
        return CLT_OK;
      }
      r = CLT_CACHE_REJECTED;
    }
    if (r == CLT_CACHE_REJECTED) {
      ctx->kernel_stats.cache_rejected++;
      clt_ctx_log(ctx, CLT_LOG_WARN,
                  "kernel cache: entry for cl/%s.cl was unusable; rebuilding",
                  p->name);
    }
  }
  ctx->kernel_stats.cache_misses++;
  report_build(ctx, p, report, true);
  if (patch)
    CLT_TRY(build_rewritten(ctx, p, options, key, patch, out));
  else
    CLT_TRY(build_from_source(ctx, p->name, p->source, options, out));
  ctx->kernel_stats.programs++;
  lb->at_launch = lb->marked = lazy;
  if (*cache_on) {
    int stored = lazy ? store_entry(ctx, dir, key, driver_mark,
                                    sizeof driver_mark - 1)
                      : store_binary(ctx, *out, dir, key);
    if (stored > 0) ctx->kernel_stats.cache_stored++;
    if (stored < 0) *cache_on = false;
  }
  return CLT_OK;
}

/* build_through_cache with the context's cache folder, timed into its
 * stats. A folder that refuses a binary is warned about once, then left
 * alone for the context's later programs (cache_unwritable). */
static clt_status build_program(clt_context *ctx, const clt_embedded_program *p,
                                const char *extra, const char *tag,
                                clt_binary_patch_fn patch, report_kind report,
                                cl_program *out, int slot) {
  bool cache_on = ctx->cache_on && !ctx->cache_unwritable;
  double t0 = clt_now_seconds();
  int hits = ctx->kernel_stats.cache_hits;
  struct clt_program_mark lb;
  clt_status st = build_through_cache(ctx, p, extra, tag, patch,
                                      ctx->cache_dir, &cache_on, report, out,
                                      &lb);
  if (st == CLT_OK && slot >= 0) ctx->marks[slot] = lb;
  double dt = clt_now_seconds() - t0;
  ctx->kernel_stats.build_seconds += dt;
  if (ctx->kernel_stats.cache_hits > hits) ctx->kernel_stats.load_seconds += dt;
  if (ctx->cache_on && !cache_on) ctx->cache_unwritable = true;
  return st;
}

static size_t pick_work_group(const clt_device_info *info) {
  size_t wg = info->max_work_group_size;
  if (wg > 256) wg = 256;
  /* Round down to a power of two: the reduction kernels halve it. */
  size_t p = 1;
  while (p * 2 <= wg) p *= 2;
  return p;
}

/* Each kernel's program (an index into clt_embedded_programs), found once;
 * -1 where the table names a file that is not embedded (a bug); and
 * whether it is in that file's round16 program (its file named after
 * CLT_ROUND16_FILE). */
static int kernel_program[CLT_KERNEL_COUNT];
static bool kernel_round16[CLT_KERNEL_COUNT];
static pthread_once_t kernel_program_once = PTHREAD_ONCE_INIT;

static void find_kernel_programs(void) {
  size_t plen = strlen(CLT_ROUND16_FILE);
  for (int k = 0; k < CLT_KERNEL_COUNT; k++) {
    const char *file = kernel_table[k].file;
    kernel_round16[k] = strncmp(file, CLT_ROUND16_FILE, plen) == 0;
    if (kernel_round16[k]) file += plen;
    kernel_program[k] = -1;
    for (int i = 0; i < clt_embedded_program_count; i++)
      if (strcmp(clt_embedded_programs[i].name, file) == 0)
        kernel_program[k] = i;
  }
}

/* Whether program i has kernels in a round16 program. */
static bool has_round16(int program) {
  pthread_once(&kernel_program_once, find_kernel_programs);
  for (int k = 0; k < CLT_KERNEL_COUNT; k++)
    if (kernel_program[k] == program && kernel_round16[k]) return true;
  return false;
}

clt_status clt_programs_init(clt_context *ctx) {
  ctx->work_group = pick_work_group(&ctx->info);
  ctx->programs = calloc((size_t)clt_embedded_program_count, sizeof(cl_program));
  if (!ctx->programs)
    return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "allocating programs");
  ctx->programs16 =
      calloc((size_t)clt_embedded_program_count, sizeof(cl_program));
  if (!ctx->programs16)
    return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "allocating programs");
  ctx->program_count = clt_embedded_program_count;
  ctx->marks = calloc(2 * (size_t)clt_embedded_program_count,
                      sizeof *ctx->marks);
  if (!ctx->marks)
    return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "allocating programs");
  pthread_once(&kernel_program_once, find_kernel_programs);
  for (int k = 0; k < CLT_KERNEL_COUNT; k++)
    if (kernel_program[k] < 0)
      return clt_ctx_fail(ctx, CLT_ERR_INTERNAL, "kernel %s: no cl/%s.cl",
                          kernel_table[k].name, kernel_table[k].file);
  return CLT_OK;
}

/* Builds program i of clt_embedded_programs for the context, once: from
 * the binary cache or the source. */
static clt_status program_made(clt_context *ctx, int i) {
  if (ctx->programs[i]) return CLT_OK;
  return build_program(ctx, &clt_embedded_programs[i], "", NULL, NULL,
                       REPORT_PROGRAM, &ctx->programs[i], i);
}

/* The same for its round16 program (mixed precision's rounding variants:
 * cl/prelude.cl), built only where one of them runs. */
static clt_status program16_made(clt_context *ctx, int i) {
  if (ctx->programs16[i]) return CLT_OK;
  return build_program(ctx, &clt_embedded_programs[i],
                       "-DCLT_ROUND16_PROGRAM=1", NULL, NULL, REPORT_ROUND16,
                       &ctx->programs16[i], ctx->program_count + i);
}

clt_status clt_kernel_get(clt_context *ctx, clt_kernel_id id,
                          cl_kernel *out) {
  if (!ctx->kernels[id]) {
    int i = kernel_program[id];
    CLT_TRY(kernel_round16[id] ? program16_made(ctx, i)
                               : program_made(ctx, i));
    double t0 = clt_now_seconds();
    cl_int rc;
    cl_kernel k = clCreateKernel(kernel_round16[id] ? ctx->programs16[i]
                                                    : ctx->programs[i],
                                 kernel_table[id].name, &rc);
    ctx->kernel_stats.build_seconds += clt_now_seconds() - t0;
    if (rc != CL_SUCCESS) {
      char what[160];
      snprintf(what, sizeof what, "clCreateKernel %s", kernel_table[id].name);
      return clt_ctx_cl_fail(ctx, rc, what);
    }
    ctx->kernels[id] = k;
    ctx->kernel_stats.kernels++;
    ctx->launch_compiles[id] =
        ctx->marks[kernel_round16[id] ? ctx->program_count + i : i]
            .at_launch;
  }
  *out = ctx->kernels[id];
  return CLT_OK;
}

/* Programs built marked before clt_context_build_kernels (by a driver
 * that compiles at first launch) are compiled whole now, asked for their
 * binary, which replaces the mark: a later context that builds every
 * kernel loads them, as it loads the programs built in the call. */
static void store_marked_whole(clt_context *ctx) {
  bool cache_on = ctx->cache_on && !ctx->cache_unwritable;
  double t0 = clt_now_seconds();
  for (int i = 0; i < 2 * ctx->program_count; i++) {
    if (!ctx->marks[i].marked) continue;
    cl_program prog = i < ctx->program_count
                          ? ctx->programs[i]
                          : ctx->programs16[i - ctx->program_count];
    size_t size = 0;
    char *bin = program_binary(ctx, prog, &size);
    if (bin && cache_on &&
        store_entry(ctx, ctx->cache_dir, ctx->marks[i].key, bin, size) < 0) {
      ctx->cache_unwritable = true;
      cache_on = false;
    }
    free(bin);
    ctx->marks[i].marked = ctx->marks[i].at_launch = false;
  }
  for (int k = 0; k < CLT_KERNEL_COUNT; k++) ctx->launch_compiles[k] = false;
  ctx->kernel_stats.build_seconds += clt_now_seconds() - t0;
}

CLT_API clt_status clt_context_build_kernels(clt_context *ctx) {
  /* Programs first, in file order: igemm's kernels are in no list (only
   * its variants run), and it is built here all the same. Stored whole
   * (binaries) on every driver: a later call loads them. */
  ctx->building_all = true;
  clt_status st = CLT_OK;
  for (int i = 0; st == CLT_OK && i < clt_embedded_program_count; i++)
    if (!is_on_demand(clt_embedded_programs[i].name))
      st = program_made(ctx, i);
  for (int k = 0; st == CLT_OK && k < CLT_KERNEL_COUNT; k++) {
    cl_kernel unused;
    st = clt_kernel_get(ctx, (clt_kernel_id)k, &unused);
  }
  ctx->building_all = false;
  if (st == CLT_OK) store_marked_whole(ctx);
  return st;
}

void clt_programs_release(clt_context *ctx) {
  for (int k = 0; k < CLT_KERNEL_COUNT; k++)
    if (ctx->kernels[k]) clReleaseKernel(ctx->kernels[k]);
  for (int i = 0; i < ctx->program_count; i++) {
    if (ctx->programs && ctx->programs[i]) clReleaseProgram(ctx->programs[i]);
    if (ctx->programs16 && ctx->programs16[i])
      clReleaseProgram(ctx->programs16[i]);
  }
  free(ctx->programs);
  free(ctx->programs16);
  free(ctx->marks);
  ctx->programs = NULL;
  ctx->programs16 = NULL;
  ctx->marks = NULL;
}

clt_status clt_program_build_patched(clt_context *ctx, const char *name,
                                     const char *extra, const char *tag,
                                     clt_binary_patch_fn patch,
                                     cl_program *out) {
  for (int i = 0; i < clt_embedded_program_count; i++) {
    if (strcmp(clt_embedded_programs[i].name, name) != 0) continue;
    return build_program(ctx, &clt_embedded_programs[i], extra, tag, patch,
                         REPORT_NONE, out, -1);
  }
  return clt_ctx_fail(ctx, CLT_ERR_INTERNAL, "no program cl/%s.cl", name);
}

clt_status clt_program_build_extra(clt_context *ctx, const char *name,
                                   const char *extra, cl_program *out) {
  return clt_program_build_patched(ctx, name, extra, NULL, NULL, out);
}

bool clt_program_has_round16(int program) {
  return program >= 0 && program < clt_embedded_program_count &&
         has_round16(program);
}

const char *clt_kernel_name(clt_kernel_id id) { return kernel_table[id].name; }

int clt_kernel_program(clt_kernel_id id, bool *round16) {
  pthread_once(&kernel_program_once, find_kernel_programs);
  if (round16) *round16 = kernel_round16[id];
  return kernel_program[id];
}
