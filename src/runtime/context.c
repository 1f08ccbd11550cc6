/* Context: device choice, OpenCL context and queue, kernels, errors. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "runtime/cache.h"
#include "runtime/runtime.h"

CLT_API void clt_context_options_init(clt_context_options *opts) {
  memset(opts, 0, sizeof *opts);
  opts->cache = -1;
}

void clt_ctx_log(const clt_context *ctx, clt_log_level level, const char *fmt,
                 ...) {
  if (!ctx || !ctx->log) return;
  char msg[CLT_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ctx->log(level, msg, ctx->log_user);
}

clt_status clt_ctx_fail(clt_context *ctx, clt_status status, const char *fmt,
                        ...) {
  if (!ctx) return status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->err.msg, sizeof ctx->err.msg, fmt, ap);
  va_end(ap);
  ctx->err.status = status;
  clt_ctx_log(ctx, CLT_LOG_DEBUG, "error: %s", ctx->err.msg);
  return status;
}

clt_status clt_ctx_cl_fail(clt_context *ctx, cl_int code, const char *what) {
  clt_status st = (code == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
                   code == CL_OUT_OF_RESOURCES)
                      ? CLT_ERR_DEVICE_MEMORY
                      : CLT_ERR_OPENCL;
  return clt_ctx_fail(ctx, st, "%s: %s (%d)", what, clt_cl_error_name(code),
                      (int)code);
}

void *clt_malloc(clt_context *ctx, size_t bytes) {
  if (ctx) ctx->memory_stats.host_allocations++;
  return malloc(bytes);
}

static clt_status pick_device(const clt_context_options *opts,
                              clt_device_info *info, char *err,
                              size_t errlen) {
  clt_device_list list;
  clt_status st = clt_device_list_get(&list, err, errlen);
  if (st != CLT_OK) return st;
  const char *spec = opts->device;
  if (!spec) {
    /* An empty CLT_DEVICE counts as unset (`CLT_DEVICE= cmd`); an empty
     * opts->device is an error, like any name that matches nothing. */
    const char *env = getenv("CLT_DEVICE");
    if (env && *env) spec = env;
  }
  size_t chosen = 0;
  st = clt_device_select(&list, spec, &chosen, err, errlen);
  if (st == CLT_OK) *info = list.devices[chosen];
  clt_device_list_free(&list);
  return st;
}

/* Finds the cl ids behind an info's platform and device indexes. */
static clt_status find_cl_ids(clt_context *ctx) {
  cl_uint np = 0;
  clGetPlatformIDs(0, NULL, &np);
  if ((cl_uint)ctx->info.platform_index >= np)
    return clt_ctx_fail(ctx, CLT_ERR_NO_DEVICE, "platform vanished");
  cl_platform_id plats[64];
  clGetPlatformIDs(np < 64 ? np : 64, plats, NULL);
  ctx->platform = plats[ctx->info.platform_index];
  cl_device_id devs[64];
  cl_uint nd = 0;
  cl_int rc = clGetDeviceIDs(ctx->platform, CL_DEVICE_TYPE_ALL, 64, devs, &nd);
  if (rc != CL_SUCCESS || (cl_uint)ctx->info.device_index >= nd)
    return clt_ctx_fail(ctx, CLT_ERR_NO_DEVICE, "device vanished");
  ctx->device = devs[ctx->info.device_index];
  return CLT_OK;
}

static clt_status open_queue(clt_context *ctx) {
  cl_int rc;
  ctx->cl = clCreateContext(NULL, 1, &ctx->device, NULL, NULL, &rc);
  if (rc != CL_SUCCESS) return clt_ctx_cl_fail(ctx, rc, "clCreateContext");
  cl_command_queue_properties props =
      ctx->profiling ? CL_QUEUE_PROFILING_ENABLE : 0;
  ctx->queue = clCreateCommandQueue(ctx->cl, ctx->device, props, &rc);
  if (rc != CL_SUCCESS)
    return clt_ctx_cl_fail(ctx, rc, "clCreateCommandQueue");
  cl_uint align_bits = 0;
  if (clGetDeviceInfo(ctx->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN,
                      sizeof align_bits, &align_bits, NULL) == CL_SUCCESS)
    ctx->base_align_bytes = align_bits / 8;
  return CLT_OK;
}

/* Whether the device's profiling clock runs: two one-float writes about
 * 2 ms apart must end at least 1 ms apart by their events. Mesa's rusticl
 * 22.3 gives every command the times 0, 1, 2 and 3 ns, which would read as
 * a device that is never busy. */
static bool profile_clock_runs(clt_context *ctx) {
  cl_int rc;
  cl_mem m =
      clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, sizeof(float), NULL, &rc);
  if (rc != CL_SUCCESS) return false;
  float v = 0.0f;
  cl_event ev[2] = {NULL, NULL};
  cl_ulong end[2] = {0, 0};
  bool ok = true;
  for (int i = 0; i < 2 && ok; i++) {
    if (i) nanosleep(&(struct timespec){0, 2000000}, NULL);
    ok = clEnqueueWriteBuffer(ctx->queue, m, CL_TRUE, 0, sizeof v, &v, 0,
                              NULL, &ev[i]) == CL_SUCCESS &&
         clGetEventProfilingInfo(ev[i], CL_PROFILING_COMMAND_END,
                                 sizeof end[i], &end[i], NULL) == CL_SUCCESS;
  }
  for (int i = 0; i < 2; i++)
    if (ev[i]) clReleaseEvent(ev[i]);
  clReleaseMemObject(m);
  return ok && end[1] > end[0] && end[1] - end[0] >= 1000000;
}

/* Whether contexts on the device take turns (see clt_turn_begin in
 * runtime.h): POCL's CPU drivers, unless CLT_POCL_TURNS=0. Found in POCL
 * 3.1 ("OpenCL 3.0 PoCL 3.1+debian ..."); POCL's later source releases
 * the entry a command holds, but which release changed it is not pinned
 * down here, so every version takes turns; CLT_POCL_TURNS=0 lets one
 * check a POCL with tests/test_threads. */
static bool env_is_zero(const char *name) {
  const char *v = getenv(name);
  return v && strcmp(v, "0") == 0;
}

static bool needs_turns(const clt_device_info *d) {
  if (d->type != CLT_DEVICE_CPU || !strstr(d->platform_version, "PoCL"))
    return false;
  return !env_is_zero("CLT_POCL_TURNS");
}

/* Whether the driver compiles each kernel at its first launch, keeping
 * what it compiled in a cache of its own (runtime.h, driver_keeps_kernels):
 * POCL's CPU drivers, unless POCL's kernel cache is off
 * (POCL_KERNEL_CACHE=0) or CLT_POCL_LAZY=0 asks for binaries in our cache
 * as on other drivers. */
static bool keeps_kernels(const clt_device_info *d) {
  if (d->type != CLT_DEVICE_CPU || !strstr(d->platform_version, "PoCL"))
    return false;
  return !env_is_zero("POCL_KERNEL_CACHE") && !env_is_zero("CLT_POCL_LAZY");
}

/* The process's turns: the lock, and the context that enqueued last on a
 * device that takes turns (NULL before the first, or when it is gone). The one piece of mutable state the library
 * keeps outside a context, for POCL's sake. */
static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static clt_context *turn_holder;

void clt_turn_begin(clt_context *ctx) {
  if (!ctx->takes_turns) return;
  pthread_mutex_lock(&turn_lock);
  if (turn_holder && turn_holder != ctx) {
    /* Its commands may still run: wait for them (from this thread; the
     * other is either waiting for this lock or not enqueueing). A queue
     * that cannot finish has failed its own context, which will say so;
     * this one goes on. */
    cl_int rc = clFinish(turn_holder->queue);
    if (rc != CL_SUCCESS)
      clt_ctx_log(ctx, CLT_LOG_WARN,
                  "taking turns: another context's queue failed: %s (%d)",
                  clt_cl_error_name(rc), (int)rc);
  }
  turn_holder = ctx;
}

void clt_turn_end(clt_context *ctx) {
  if (ctx->takes_turns) pthread_mutex_unlock(&turn_lock);
}

static clt_status resolve_cache(const clt_context_options *opts,
                                clt_context *ctx, char *dir, size_t dirlen,
                                bool *on) {
  *on = opts->cache < 0 ? clt_cache_enabled_by_env() : opts->cache != 0;
  if (!*on) return CLT_OK;
  if (clt_cache_dir_resolve(opts->cache_dir, dir, dirlen, &ctx->err) !=
      CLT_OK) {
    /* No usable folder is not fatal: build every time, and say so. */
    clt_ctx_log(ctx, CLT_LOG_WARN, "kernel cache off: %s", ctx->err.msg);
    clt_err_clear(&ctx->err);
    *on = false;
  }
  return CLT_OK;
}

CLT_API clt_status clt_context_create(const clt_context_options *opts_in,
                                      clt_context **out, char *err,
                                      size_t errlen) {
  *out = NULL;
  if (err && errlen) err[0] = '\0';
  clt_context_options opts;
  if (opts_in)
    opts = *opts_in;
  else
    clt_context_options_init(&opts);
  clt_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return CLT_ERR_HOST_MEMORY;
  ctx->log = opts.log;
  ctx->log_user = opts.log_user;
  ctx->build_progress = opts.build_progress;
  ctx->build_progress_user = opts.build_progress_user;
  ctx->profiling = opts.profiling;
  clt_status st = pick_device(&opts, &ctx->info, err, errlen);
  if (st == CLT_OK) st = find_cl_ids(ctx);
  if (st == CLT_OK) st = open_queue(ctx);
  ctx->profile_timed =
      st == CLT_OK && ctx->profiling && profile_clock_runs(ctx);
  ctx->takes_turns = st == CLT_OK && needs_turns(&ctx->info);
  ctx->driver_keeps_kernels = st == CLT_OK && keeps_kernels(&ctx->info);
  char cache_dir[4096] = "";
  bool cache_on = false;
  if (st == CLT_OK) st = resolve_cache(&opts, ctx, cache_dir, sizeof cache_dir,
                                       &cache_on);
  if (st == CLT_OK && cache_on)
    snprintf(ctx->cache_dir, sizeof ctx->cache_dir, "%s", cache_dir);
  ctx->cache_on = cache_on;
  ctx->plan_option = opts.plan;
  ctx->loop_limit = CLT_LOOP_LIMIT;
  ctx->loop_cap = -1;
  /* The kernels' programs are built on first use (program.c). */
  if (st == CLT_OK) st = clt_programs_init(ctx);
  if (st != CLT_OK) {
    if (err && errlen && ctx->err.msg[0])
      snprintf(err, errlen, "%s", ctx->err.msg);
    clt_context_destroy(ctx);
    return st;
  }
  clt_ctx_log(ctx, CLT_LOG_INFO, "device %s (%s); kernel cache %s",
              ctx->info.name, ctx->info.platform_name,
              ctx->cache_on ? ctx->cache_dir : "off");
  *out = ctx;
  return CLT_OK;
}

/* Waits until every command enqueued so far has run. clFinish alone is not
 * enough everywhere: Mesa 22.3's rusticl returned from clFinish (and from
 * the releases after it) while its queue thread was still JIT-compiling and
 * running our last kernels. A process that exited then ran LLVM's static
 * destructors under that thread, which crashed one `bench train --device
 * all` in four (POCL and rusticl in one process). A marker event that we
 * hold ourselves is complete only when everything before it is, on every
 * implementation, so the wait is real. */
static cl_int drain_queue(cl_command_queue queue) {
  cl_event done = NULL;
  cl_int rc = clEnqueueMarkerWithWaitList(queue, 0, NULL, &done);
  if (rc == CL_SUCCESS) {
    rc = clWaitForEvents(1, &done);
    clReleaseEvent(done);
  }
  cl_int fin = clFinish(queue);
  return rc != CL_SUCCESS ? rc : fin;
}

CLT_API void clt_context_destroy(clt_context *ctx) {
  if (!ctx) return;
  if (ctx->queue) drain_queue(ctx->queue);
  if (ctx->takes_turns) { /* no turn may wait on a queue that is gone */
    pthread_mutex_lock(&turn_lock);
    if (turn_holder == ctx) turn_holder = NULL;
    pthread_mutex_unlock(&turn_lock);
  }
  clt_profile_release(ctx);
  if (ctx->ops_state_free) ctx->ops_state_free(ctx->ops_state);
  clt_sub_buffers_release(ctx);
  clt_pool_release_all(ctx);
  clt_programs_release(ctx);
  if (ctx->queue) clReleaseCommandQueue(ctx->queue);
  if (ctx->cl) clReleaseContext(ctx->cl);
  free(ctx);
}

CLT_API const char *clt_context_last_error(const clt_context *ctx) {
  return ctx ? ctx->err.msg : "no context";
}

CLT_API const clt_device_info *clt_context_device(const clt_context *ctx) {
  return &ctx->info;
}

CLT_API void clt_context_kernel_stats(const clt_context *ctx,
                                      clt_kernel_stats *stats) {
  *stats = ctx->kernel_stats;
}

CLT_API void clt_context_memory_stats(const clt_context *ctx,
                                      clt_memory_stats *stats) {
  *stats = ctx->memory_stats;
}

CLT_API clt_status clt_context_finish(clt_context *ctx) {
  cl_int rc = drain_queue(ctx->queue);
  if (rc != CL_SUCCESS) return clt_ctx_cl_fail(ctx, rc, "clFinish");
  return CLT_OK;
}

static clt_status set_args(clt_context *ctx, cl_kernel k, const char *name,
                           const clt_karg *args, int nargs) {
  cl_uint slot = 0;
  for (int i = 0; i < nargs; i++) {
    const clt_karg *a = &args[i];
    cl_int rc = CL_SUCCESS;
    switch (a->kind) {
    case CLT_KARG_TENSOR: {
      cl_mem mem = a->mem;
      cl_int off = (cl_int)a->offset;
      rc = clSetKernelArg(k, slot++, sizeof mem, &mem);
      if (rc == CL_SUCCESS) rc = clSetKernelArg(k, slot++, sizeof off, &off);
      break;
    }
    case CLT_KARG_INT: rc = clSetKernelArg(k, slot++, sizeof(cl_int), &a->i); break;
    case CLT_KARG_FLOAT:
      rc = clSetKernelArg(k, slot++, sizeof(cl_float), &a->f);
      break;
    case CLT_KARG_ULONG:
      rc = clSetKernelArg(k, slot++, sizeof(cl_ulong), &a->ul);
      break;
    case CLT_KARG_LOCAL: rc = clSetKernelArg(k, slot++, a->local_bytes, NULL); break;
    }
    if (rc != CL_SUCCESS) {
      char what[160];
      snprintf(what, sizeof what, "kernel %s: argument %u", name, slot - 1);
      return clt_ctx_cl_fail(ctx, rc, what);
    }
  }
  return CLT_OK;
}

static const char *kernel_names[] = {
#define CLT_KERNEL(name, file) #name,
    CLT_KERNEL_LIST(CLT_KERNEL)
#undef CLT_KERNEL
};

clt_status clt_kernel_run(clt_context *ctx, clt_kernel_id id, int dims,
                          const size_t *global, const size_t *local,
                          const clt_karg *args, int nargs) {
  cl_kernel k;
  CLT_TRY(clt_kernel_get(ctx, id, &k));
  if (!ctx->launch_compiles[id])
    return clt_kernel_run_named(ctx, k, kernel_names[id], dims, global,
                                local, args, nargs);
  /* The launch that compiles the kernel (a driver that compiles at first
   * launch, runtime.h): timed alone, as the build of a program is, so that
   * a first epoch's speed leaves it out (clt_epoch_stats). */
  ctx->launch_compiles[id] = false;
  CLT_TRY(clt_context_finish(ctx));
  double t0 = clt_now_seconds();
  CLT_TRY(clt_kernel_run_named(ctx, k, kernel_names[id], dims, global, local,
                               args, nargs));
  clt_status st = clt_context_finish(ctx);
  ctx->kernel_stats.build_seconds += clt_now_seconds() - t0;
  return st;
}

clt_status clt_kernel_run_named(clt_context *ctx, cl_kernel k,
                                const char *name, int dims,
                                const size_t *global, const size_t *local,
                                const clt_karg *args, int nargs) {
  CLT_TRY(set_args(ctx, k, name, args, nargs));
  size_t rounded[3];
  for (int d = 0; d < dims; d++) {
    size_t l = local ? local[d] : 1;
    rounded[d] = (global[d] + l - 1) / l * l;
    if (rounded[d] == 0) return CLT_OK; /* nothing to do */
  }
  clt_turn_begin(ctx);
  cl_int rc = clEnqueueNDRangeKernel(ctx->queue, k, (cl_uint)dims, NULL,
                                     rounded, local, 0, NULL,
                                     clt_profile_slot(ctx, name));
  clt_turn_end(ctx);
  if (rc != CL_SUCCESS) {
    char what[160];
    snprintf(what, sizeof what, "enqueue kernel %s", name);
    return clt_ctx_cl_fail(ctx, rc, what);
  }
  return CLT_OK;
}

size_t clt_launch_items(const clt_context *ctx) {
  if (ctx->launch_1d) return ctx->launch_1d;
  return ctx->work_group < CLT_LAUNCH_1D_DEFAULT ? ctx->work_group
                                                 : CLT_LAUNCH_1D_DEFAULT;
}

clt_status clt_kernel_run_1d(clt_context *ctx, clt_kernel_id id, size_t n,
                             const clt_karg *args, int nargs) {
  size_t local = clt_launch_items(ctx);
  return clt_kernel_run(ctx, id, 1, &n, &local, args, nargs);
}

size_t clt_element_run(const clt_context *ctx) {
  if (ctx->element_run) return ctx->element_run;
  return ctx->info.type == CLT_DEVICE_CPU ? CLT_ELEMENT_RUN_CPU : 1;
}

clt_status clt_kernel_run_elems(clt_context *ctx, clt_kernel_id id, size_t n,
                                const clt_karg *args, int nargs) {
  clt_karg all[CLT_ELEMS_MAX_ARGS + 1];
  if (nargs > CLT_ELEMS_MAX_ARGS)
    return clt_ctx_fail(ctx, CLT_ERR_INTERNAL,
                        "element-wise kernel: %d arguments, at most %d",
                        nargs, CLT_ELEMS_MAX_ARGS);
  size_t run = clt_element_run(ctx);
  memcpy(all, args, (size_t)nargs * sizeof *args);
  all[nargs] = KI(run);
  return clt_kernel_run_1d(ctx, id, (n + run - 1) / run, all, nargs + 1);
}
