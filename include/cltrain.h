/* cltrain: a deep-learning training engine in C on OpenCL.
 *
 * One header, one library. Every function returns a clt_status; a context
 * keeps the message of its last error (clt_context_last_error). The library
 * never prints unless a log callback is set, and never exits.
 *
 * Ownership: whoever creates frees (clt_x_create / clt_x_destroy). Every
 * destroy function accepts NULL.
 *
 * Threads: a context, and everything made on it (tensors, graphs,
 * optimizers, loss scalers, models), is used by one thread at a time; the
 * calls on it are not synchronised, but it may pass from one thread to
 * another between calls. Contexts are independent: several threads may
 * each use a context of their own at the same time, on one device or on
 * several, with one kernel and plan cache folder (its files are written
 * whole, atomically; plans measured by several at once are each stored
 * whole). A dataset is host memory that nothing changes once it is made:
 * several threads may train and evaluate from one dataset at once. The
 * functions that take no context (devices, fp16 conversions, files,
 * images) may be called from any thread. Callbacks run on the thread of
 * the call that reports (the image decoder on the decoding threads). On
 * POCL's CPU device contexts of one process launch their kernels in turns,
 * each after the others' queued work has finished: POCL 3.1 aborts the
 * process when two queues run the same kernel at once (README, "From C",
 * Threads; CLT_POCL_TURNS=0 turns the turns off). */
#ifndef CLTRAIN_H
#define CLTRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(CLT_BUILDING_LIBRARY) && defined(__GNUC__)
#define CLT_API __attribute__((visibility("default")))
#else
#define CLT_API
#endif

#define CLT_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */

typedef enum clt_status {
  CLT_OK = 0,
  CLT_ERR_INVALID_ARGUMENT, /* a caller passed something unusable */
  CLT_ERR_NO_PLATFORM,      /* no OpenCL platform (no ICD installed) */
  CLT_ERR_NO_DEVICE,        /* no device matches the selection */
  CLT_ERR_OPENCL,           /* an OpenCL call failed */
  CLT_ERR_BUILD,            /* a kernel failed to compile; message has log */
  CLT_ERR_CLBLAST,          /* a CLBlast routine failed */
  CLT_ERR_DEVICE_MEMORY,    /* the device is out of memory */
  CLT_ERR_HOST_MEMORY,      /* malloc failed */
  CLT_ERR_IO,               /* a file could not be read or written */
  CLT_ERR_FORMAT,           /* a file's contents are malformed */
  CLT_ERR_SHAPE,            /* shapes that do not fit together */
  CLT_ERR_NAN,              /* a loss or value became NaN or infinite */
  CLT_ERR_UNSUPPORTED,      /* valid, but not supported (yet, or here) */
  CLT_ERR_INTERNAL,         /* a bug in cltrain */
} clt_status;

/* A short constant English description of a status code. */
CLT_API const char *clt_status_string(clt_status status);

/* ------------------------------------------------------------------------ */
/* Devices                                                                   */

typedef enum clt_device_type {
  CLT_DEVICE_GPU,
  CLT_DEVICE_CPU,
  CLT_DEVICE_ACCELERATOR,
  CLT_DEVICE_OTHER,
} clt_device_type;

typedef struct clt_device_info {
  int index;          /* flat index over all platforms' devices */
  int platform_index; /* index of the platform */
  int device_index;   /* index of the device within its platform */
  char platform_name[128];
  char platform_version[128];
  char name[256];
  char vendor[128];
  char driver_version[128];
  char opencl_c_version[64]; /* e.g. "OpenCL C 1.2 pocl" */
  clt_device_type type;
  unsigned compute_units;
  uint64_t global_mem_bytes;
  uint64_t local_mem_bytes;
  uint64_t max_alloc_bytes;
  size_t max_work_group_size;
  bool fp16;
  bool fp64;
  /* Its compiler emits NVIDIA PTX (the device lists
   * cl_nv_device_attribute_query): mixed precision's products may run on
   * tensor cores through inline PTX, where a probe on first use builds and
   * checks that kernel (README "Mixed precision"). */
  bool ptx;
} clt_device_info;

typedef struct clt_device_list {
  clt_device_info *devices;
  size_t count;
  size_t platform_count; /* platforms found, including ones with no device */
} clt_device_list;

/* Enumerates every OpenCL platform and device. On success the caller owns
 * *list and frees it with clt_device_list_free. With no platform at all the
 * status is CLT_ERR_NO_PLATFORM and err (if not NULL, errlen bytes) says
 * which Debian packages provide one. */
CLT_API clt_status clt_device_list_get(clt_device_list *list, char *err,
                                       size_t errlen);
CLT_API void clt_device_list_free(clt_device_list *list);

/* Chooses a device by spec: NULL or "default" (first GPU, else first
 * CPU, else the first device), a flat index "2", "platform:device" "1:0", a
 * type "gpu" / "cpu" / "accelerator", or a case-insensitive part of the
 * platform or device name ("pocl", "llvmpipe", "nvidia"). Sets *chosen to
 * an index into list->devices. CLT_ERR_NO_DEVICE when nothing matches (an
 * empty spec "" matches nothing), with a message in err listing the devices
 * that exist. */
CLT_API clt_status clt_device_select(const clt_device_list *list,
                                     const char *spec, size_t *chosen,
                                     char *err, size_t errlen);

/* ------------------------------------------------------------------------ */
/* Context                                                                   */

typedef struct clt_context clt_context;

typedef enum clt_log_level {
  CLT_LOG_DEBUG,
  CLT_LOG_INFO,
  CLT_LOG_WARN,
  CLT_LOG_ERROR,
} clt_log_level;

typedef void (*clt_log_fn)(clt_log_level level, const char *message,
                           void *user);

/* Called when a context builds one of its kernel programs for device:
 * before a program that must be compiled from source (compiling = true:
 * seconds on a CPU device, the first time) and after one loaded from the
 * binary cache (compiling = false). Programs are built when one of their
 * kernels is first needed (or all at once by clt_context_build_kernels),
 * so the calls come from within whichever call needs one first
 * (clt_graph_compile, a step, an op), on its thread. index: the context's
 * programs built so far, this one included; total: how many it has (a
 * model seldom needs all). program is the kernel file's name ("conv" for
 * cl/conv.cl); a file's rounding variants for mixed precision are a
 * second program of the same name, built only where mixed precision
 * runs. user must live as long as the context. */
typedef void (*clt_build_progress_fn)(const clt_device_info *device,
                                      const char *program, int index,
                                      int total, bool compiling, void *user);
/* Measured plans: where a product has several ways to run (one GEMM,
 * split-K, per image), clt_graph_compile times them on the device and
 * remembers the fastest beside the kernel cache (see README, "Measured
 * plans"). */
typedef enum clt_plan_mode {
  CLT_PLAN_ENV = 0,   /* $CLT_PLAN (off, on, remeasure); unset: on, or off
                         when the kernel cache is off */
  CLT_PLAN_OFF,       /* fixed defaults: one GEMM per product */
  CLT_PLAN_ON,        /* stored plans, measuring the missing ones */
  CLT_PLAN_REMEASURE, /* measure every product again, store the result */
} clt_plan_mode;

typedef struct clt_context_options {
  /* Device spec as for clt_device_select; NULL means $CLT_DEVICE (unset or
   * empty: the default choice). */
  const char *device;
  /* Kernel binary cache folder; NULL means $CLT_CACHE_DIR, else
   * $XDG_CACHE_HOME/cltrain, else ~/.cache/cltrain. */
  const char *cache_dir;
  /* 1 on, 0 off, -1: on unless $CLT_CACHE is "0". */
  int cache;
  /* Measured plans (default CLT_PLAN_ENV). */
  clt_plan_mode plan;
  /* Enables OpenCL event profiling on the queue (clt_profile_*). */
  bool profiling;
  clt_log_fn log; /* NULL: the library prints nothing */
  void *log_user;
  /* NULL: no reports while kernels are built. */
  clt_build_progress_fn build_progress;
  void *build_progress_user;
} clt_context_options;

/* Fills opts with the defaults (device from the environment, cache on
 * unless CLT_CACHE=0, plans as $CLT_PLAN says, no profiling, no log). */
CLT_API void clt_context_options_init(clt_context_options *opts);

/* Creates a context on the chosen device: one in-order queue. Its kernels
 * are built (or loaded from the binary cache) when first needed; a kernel
 * that fails to compile then fails the call that needed it, with
 * CLT_ERR_BUILD and the driver's build log in clt_context_last_error.
 * opts may be NULL for defaults. On failure *out is NULL and err (errlen
 * bytes, may be NULL) holds the message. The caller destroys the context
 * with clt_context_destroy. */
CLT_API clt_status clt_context_create(const clt_context_options *opts,
                                      clt_context **out, char *err,
                                      size_t errlen);
CLT_API void clt_context_destroy(clt_context *ctx);

/* Builds every kernel of the context now, from the binary cache or the
 * source, instead of each program on its first use: for a program that
 * must not pause later (a server's first request), or to learn at once
 * whether the device compiles them all (on POCL, which would compile each
 * kernel at its first launch, every kernel is compiled here, and the
 * programs' binaries kept in the cache for the next call). CLT_ERR_BUILD
 * with the driver's log in clt_context_last_error where one fails. */
CLT_API clt_status clt_context_build_kernels(clt_context *ctx);

/* The message of the last error on this context ("" if none). The string
 * belongs to the context and is valid until the next call on it. */
CLT_API const char *clt_context_last_error(const clt_context *ctx);

/* The device the context runs on. Owned by the context. */
CLT_API const clt_device_info *clt_context_device(const clt_context *ctx);

typedef struct clt_kernel_stats {
  int programs;        /* .cl programs built for this context so far
                          (each on first use), variants included */
  int kernels;         /* kernels created from them (of the fixed list) */
  int cache_hits;      /* programs loaded from the binary cache (on POCL:
                          built before, their kernels in POCL's cache;
                          see README, "The kernel cache") */
  int cache_misses;    /* programs compiled from source */
  int cache_rejected;  /* corrupt / stale / foreign entries rebuilt */
  int cache_stored;    /* compiled programs written to the cache (on
                          POCL: their marks) */
  double build_seconds; /* wall time spent building or loading them (on
                           POCL also the launches that compile a kernel
                           of a program compiled here) */
  double load_seconds;  /* of build_seconds, the programs that were cache
                           hits */
} clt_kernel_stats;

/* The context's kernel build so far (filled into *stats; counts since
 * clt_context_create). */
CLT_API void clt_context_kernel_stats(const clt_context *ctx,
                                      clt_kernel_stats *stats);

/* How many loop iterations one work-item may run on the context's device,
 * measured once (a kernel that loops 2^18 times): 0 where it ran them
 * all (every device seen but one), else how many ran (Mesa's llvmpipe:
 * 65,535, and no error for the rest). Where it is not 0, GEMMs and sums
 * whose work-items would loop past half of it run in several launches
 * (README "Measured plans"). */
CLT_API clt_status clt_context_loop_limit(clt_context *ctx,
                                          int64_t *iterations);

/* Blocks until all work queued on the context's device has finished. */
CLT_API clt_status clt_context_finish(clt_context *ctx);

typedef struct clt_memory_stats {
  uint64_t device_allocations; /* clCreateBuffer calls made so far */
  uint64_t device_bytes_live;  /* bytes in buffers held (pooled included) */
  uint64_t pool_reuses;        /* allocations served from the free pool */
  uint64_t host_allocations;   /* library-internal host allocations */
  uint64_t device_bytes_peak;  /* the most bytes held in buffers at once */
} clt_memory_stats;

/* The context's device memory so far (filled into *stats): buffers made,
 * held, reused from the pool, and the most held at once. */
CLT_API void clt_context_memory_stats(const clt_context *ctx,
                                      clt_memory_stats *stats);

/* ------------------------------------------------------------------------ */
/* Tensors                                                                   */

typedef enum clt_dtype { CLT_F32, CLT_F16, CLT_I32, CLT_U8 } clt_dtype;

#define CLT_MAX_DIMS 4

typedef struct clt_tensor clt_tensor;

/* Size in bytes of one element of dtype. */
CLT_API size_t clt_dtype_size(clt_dtype dtype);

/* Creates a dense tensor of ndim (1..4) dimensions on the context's device.
 * Contents are undefined. The caller destroys it with clt_tensor_destroy;
 * its buffer goes back to the context's pool for reuse. A device that
 * cannot hold it gives CLT_ERR_DEVICE_MEMORY naming the size. */
CLT_API clt_status clt_tensor_create(clt_context *ctx, clt_dtype dtype,
                                     int ndim, const int64_t *shape,
                                     clt_tensor **out);

/* A view of base: `count` elements starting at element `offset` of base,
 * seen with a new shape (whose element count must be `count`). The view
 * shares base's buffer and must be destroyed before base. */
CLT_API clt_status clt_tensor_view(clt_tensor *base, int64_t offset,
                                   int ndim, const int64_t *shape,
                                   clt_tensor **out);

/* Frees the tensor (its buffer goes back to the context's pool; a view
 * frees only itself). NULL is ignored. */
CLT_API void clt_tensor_destroy(clt_tensor *t);

/* The element type, and the number of dimensions (1..4). */
CLT_API clt_dtype clt_tensor_dtype(const clt_tensor *t);
CLT_API int clt_tensor_ndim(const clt_tensor *t);
/* Size of dimension dim (0-based); 1 beyond ndim. */
CLT_API int64_t clt_tensor_dim(const clt_tensor *t, int dim);
CLT_API int64_t clt_tensor_numel(const clt_tensor *t);

/* Copies bytes (numel * dtype size) from host memory to the tensor; the
 * call returns when the host memory may be reused. */
CLT_API clt_status clt_tensor_upload(clt_tensor *t, const void *host);
/* Copies the tensor to host memory; blocks until the data is there. */
CLT_API clt_status clt_tensor_download(const clt_tensor *t, void *host);
/* Sets every element to value (converted to the tensor's dtype). */
CLT_API clt_status clt_tensor_fill(clt_tensor *t, double value);
/* dst = src; both must have the same dtype and element count. */
CLT_API clt_status clt_tensor_copy(clt_tensor *dst, const clt_tensor *src);
/* dst = src converted between f32 and f16 (same element count), rounding
 * to nearest even; the same dtype copies. f16 tensors are storage on every
 * device (vload_half/vstore_half, no cl_khr_fp16 needed). */
CLT_API clt_status clt_tensor_convert(clt_tensor *dst, const clt_tensor *src);

/* IEEE 754 half precision on the host: round to nearest even, subnormals,
 * overflow to infinity, NaN kept NaN (what the device's conversions do). */
CLT_API void clt_f32_to_f16(const float *src, uint16_t *dst, int64_t n);
CLT_API void clt_f16_to_f32(const uint16_t *src, float *dst, int64_t n);

/* ------------------------------------------------------------------------ */
/* GEMM (CLBlast)                                                            */

typedef enum clt_transpose { CLT_NO_TRANS = 0, CLT_TRANS = 1 } clt_transpose;

/* Row-major C[m,n] = alpha * op(A) * op(B) + beta * C, with op(A) [m,k] and
 * op(B) [k,n]. A, B, C are f32 tensors (views allowed) holding at least the
 * elements the shapes need. */
CLT_API clt_status clt_gemm(clt_context *ctx, clt_transpose trans_a,
                            clt_transpose trans_b, int64_t m, int64_t n,
                            int64_t k, float alpha, const clt_tensor *a,
                            const clt_tensor *b, float beta, clt_tensor *c);

/* batch products: matrix i of A starts at element i * stride_a, likewise
 * B and C. */
CLT_API clt_status clt_gemm_strided_batched(
    clt_context *ctx, clt_transpose trans_a, clt_transpose trans_b, int64_t m,
    int64_t n, int64_t k, float alpha, const clt_tensor *a, int64_t stride_a,
    const clt_tensor *b, int64_t stride_b, float beta, clt_tensor *c,
    int64_t stride_c, int64_t batch);

/* clt_gemm_strided_batched with the product asked of CLBlast in
 * column-major order, as C^T = op(B)^T op(A)^T: the same memory and the
 * same numbers (up to the order of the sums). CLBlast does different
 * work for the two (its Xgemm kernel copies a row-major C to a transposed
 * temporary and back), and which is faster depends on the device's
 * kernel parameters and the shape: the measured plans try both (README
 * "Measured plans"); `cltrain bench gemm` prints both. */
CLT_API clt_status clt_gemm_strided_batched_colmajor(
    clt_context *ctx, clt_transpose trans_a, clt_transpose trans_b, int64_t m,
    int64_t n, int64_t k, float alpha, const clt_tensor *a, int64_t stride_a,
    const clt_tensor *b, int64_t stride_b, float beta, clt_tensor *c,
    int64_t stride_c, int64_t batch);

/* fp16 products with f32 sums (mixed precision's route, README "Mixed
 * precision"): on a device whose compiler emits NVIDIA PTX, a kernel on
 * the tensor cores, probed on first use (built, and checked on a product
 * against the host); elsewhere none, and mixed precision's products are
 * SGEMM on fp16 values. CLT_MMA=auto|off|ptx|emulate (README). */
typedef enum clt_fp16_route {
  CLT_FP16_SGEMM = 0,    /* no fp16 kernel: SGEMM on fp16 values */
  CLT_FP16_MMA_PTX,      /* mma.sync through inline PTX */
  CLT_FP16_MMA_EMULATED, /* CLT_MMA=emulate: the same kernel with the
                            instruction done in OpenCL C (slow; tests) */
} clt_fp16_route;

/* The context's route, probing on the first call; *why (may be NULL) gets
 * a line saying why (valid while the context lives). Errors: a bad CLT_MMA
 * value, a device failing during the check. */
CLT_API clt_status clt_fp16_route_get(clt_context *ctx, clt_fp16_route *route,
                                      const char **why);

/* The fp16 kernel's tile configurations (of C per work-group), which the
 * measured plans choose between, and their names ("64x64", ...; those
 * named "... ring" pack A and B as fp16 first, then run through a ring of
 * k-blocks in local memory, "... ldm" loading the tensor cores' operands
 * with ldmatrix where the ring is copied by cp.async, "... wgmma" Hopper's
 * warpgroup instructions on the packed operands, usable on compute
 * capability 9.0 only: README "Mixed precision"). */
#define CLT_FP16_CONFIGS 17
CLT_API const char *clt_fp16_config_name(int config);
/* How tile configuration `config` runs on ctx's device, a line for
 * people into buf: "a ring of 3 k-blocks, copied by cp.async", "not
 * usable: ..." (its ring does not fit the local memory, or it did not
 * build), "not built yet" (built on first use). */
CLT_API void clt_fp16_config_form(clt_context *ctx, int config, char *buf,
                                  size_t len);

/* clt_gemm_strided_batched by the fp16 route's kernel in tile
 * configuration `config`: A and B rounded to fp16 (nearest even) on their
 * way in, the sums in f32. CLT_ERR_UNSUPPORTED where the route is
 * CLT_FP16_SGEMM (the message says why). */
CLT_API clt_status clt_gemm_f16_strided_batched(
    clt_context *ctx, int config, clt_transpose trans_a, clt_transpose trans_b,
    int64_t m, int64_t n, int64_t k, float alpha, const clt_tensor *a,
    int64_t stride_a, const clt_tensor *b, int64_t stride_b, float beta,
    clt_tensor *c, int64_t stride_c, int64_t batch);

/* fp32 products as 3xTF32 on the same route's tensor cores (Hopper's
 * wgmma, where the "... wgmma" fp16 configurations run; README "3xTF32"):
 * each operand split as big + small, both tf32 (10 bits of mantissa), and
 * A B = Ab Bb + Ab Bs + As Bb summed in f32, which is as accurate as f32
 * (the dropped As Bs is below f32's rounding; each configuration checks
 * that on its first run on the device and is refused where it is not).
 * The fp32 graphs' measured plans take them as candidates beside SGEMM's.
 * The configurations' names ("3xtf32 128x128", ...) and how each runs: */
#define CLT_TF32X3_CONFIGS 6
CLT_API const char *clt_tf32x3_config_name(int config);
CLT_API void clt_tf32x3_config_form(clt_context *ctx, int config, char *buf,
                                    size_t len);

/* clt_gemm_strided_batched as 3xTF32 in configuration `config`.
 * CLT_ERR_UNSUPPORTED where the route is CLT_FP16_SGEMM, where the
 * warpgroup form does not run (compute capability other than 9.0), or
 * where the configuration failed its check (the message says why). */
CLT_API clt_status clt_gemm_tf32x3_strided_batched(
    clt_context *ctx, int config, clt_transpose trans_a, clt_transpose trans_b,
    int64_t m, int64_t n, int64_t k, float alpha, const clt_tensor *a,
    int64_t stride_a, const clt_tensor *b, int64_t stride_b, float beta,
    clt_tensor *c, int64_t stride_c, int64_t batch);

/* cltrain's own register-blocked fp32 GEMM kernels (README "Measured
 * plans"), the plans' candidates beside CLBlast's SGEMM: "rows 4x32",
 * "rows 8x32" (B not transposed, n >= 32), "rows 4x8" (B not transposed,
 * 8 <= n < 32), "dot 4x4", "dot 8x2" (A not transposed, B transposed),
 * "rows 4x32 c^T", "rows 8x32 c^T" (A transposed, m >= 32, and B
 * transposed or n < 32: the rows kernels run as C^T); then, in vectors of
 * 8 (a CPU with 16 registers of 8 floats), "rows 6x16", "rows 4x16" (B not
 * transposed, n >= 16), "dot 4x2 v8", "dot 3x3 v8", "dot 2x4 v8" and
 * "rows 6x16 c^T" (m >= 16); then "rows 6x16 kb64" and "rows 4x32 kb64"
 * (as "rows 6x16" and "rows 4x32", a work-group holding a column strip's
 * row blocks, walking k in blocks of 64 together: for a long k). */
#define CLT_GEMM_BLOCKED_CONFIGS 15
CLT_API const char *clt_gemm_blocked_config_name(int config);

/* clt_gemm_strided_batched by configuration `config` of those kernels;
 * CLT_ERR_UNSUPPORTED where it does not run the transposes and n asked
 * for, or an operand reaches past 2^31 elements. */
CLT_API clt_status clt_gemm_blocked_strided_batched(
    clt_context *ctx, int config, clt_transpose trans_a, clt_transpose trans_b,
    int64_t m, int64_t n, int64_t k, float alpha, const clt_tensor *a,
    int64_t stride_a, const clt_tensor *b, int64_t stride_b, float beta,
    clt_tensor *c, int64_t stride_c, int64_t batch);

/* ------------------------------------------------------------------------ */
/* Activations and profiling                                                 */

typedef enum clt_activation {
  CLT_ACT_RELU = 0,
  CLT_ACT_LEAKY_RELU = 1, /* alpha: negative slope (default 0.01) */
  CLT_ACT_SIGMOID = 2,
  CLT_ACT_TANH = 3,
  CLT_ACT_GELU = 4, /* exact (erf), as PyTorch's default */
  CLT_ACT_SILU = 5, /* x sigmoid(x): PyTorch's SiLU, Keras's swish */
  CLT_ACT_ELU = 6,  /* alpha (e^x - 1) below 0 (default alpha 1) */
  CLT_ACT_SOFTPLUS = 7, /* log(1 + e^x); x itself past 20 (PyTorch's) */
} clt_activation;

typedef struct clt_profile_row {
  const char *op;   /* kernel or command name; owned by the library */
  uint64_t calls;
  double seconds;   /* device time from OpenCL event profiling; NaN where
                       the device gives none (clt_profile_timed) */
  /* clt_profile_summary_by_layer: the layer and pass the commands ran for
   * ("conv2 backward", "optimizer"; "" for the rest: uploads, the graph's
   * own copies); NULL from clt_profile_summary. Owned by the context. */
  const char *layer;
} clt_profile_row;

/* With a context created with profiling on: waits for the queue, then sums
 * device time per op since the last reset, largest first. The caller frees
 * *rows with free(). On a device whose profiling clock does not run
 * (clt_profile_timed false) the rows count the calls, the most first,
 * and their seconds are NaN. */
CLT_API clt_status clt_profile_summary(clt_context *ctx, clt_profile_row **rows,
                                       size_t *count);
/* The same per (layer, op): which layer's forward or backward, or the
 * optimizer's update, each op's time went to (as PyTorch's profiler per
 * module). */
CLT_API clt_status clt_profile_summary_by_layer(clt_context *ctx,
                                                clt_profile_row **rows,
                                                size_t *count);
/* Forgets the commands profiled so far. */
CLT_API void clt_profile_reset(clt_context *ctx);
/* Whether ctx profiles with usable times: profiling is on and the
 * device's profiling clock ran over a 2 ms pause when the context was
 * made (Mesa's rusticl 22.3 gives every command the same few
 * nanoseconds: there device time is unknown, not zero). */
CLT_API bool clt_profile_timed(const clt_context *ctx);

/* ------------------------------------------------------------------------ */
/* Files                                                                     */

/* Image file formats, as their first bytes say (never the file's name). */
typedef enum clt_image_format {
  CLT_IMAGE_FORMAT_NONE = 0, /* unreadable, or none of the below */
  CLT_IMAGE_FORMAT_PNG,      /* 89 'PNG' 0d 0a 1a 0a */
  CLT_IMAGE_FORMAT_JPEG,     /* ff d8 ff */
  CLT_IMAGE_FORMAT_PGM,      /* 'P2' (text) or 'P5' (binary) */
} clt_image_format;

/* The format of the file at path, from its first bytes; NONE where the
 * file cannot be read or is none of these (the caller says which, e.g. by
 * opening it). */
CLT_API clt_image_format clt_image_format_of(const char *path);
/* "PNG", "JPEG", "PGM"; NULL for CLT_IMAGE_FORMAT_NONE. Static strings. */
CLT_API const char *clt_image_format_name(clt_image_format format);
/* Decoded pixels: 8-bit, interleaved (HWC). */
typedef struct clt_image_pixels {
  int width, height;
  int channels;    /* 1 (grey) or 3 (RGB); alpha composited onto black */
  uint8_t *pixels; /* height * width * channels, from malloc() */
} clt_image_pixels;

/* What decodes PNG and JPEG files for the library. libcltrain itself links
 * no codec: libcltrain-image (cltrain_image.h, pkg-config cltrain-image)
 * installs its libpng/libjpeg decoder with clt_image_init(); a program may
 * install its own instead. */
typedef struct clt_image_decoder {
  /* Decodes the file at path, whose first bytes say it is `format` (PNG or
   * JPEG), into *out; on success the library frees out->pixels with
   * free(). On failure it leaves out->pixels NULL and writes a message
   * naming the file into err (errlen bytes). Called from several threads
   * at once (image folders decode on a few): it must be reentrant. */
  clt_status (*decode)(const char *path, clt_image_format format,
                       clt_image_pixels *out, char *err, size_t errlen);
} clt_image_decoder;

/* Makes *decoder the one that image folders (clt_dataset_load_folder,
 * clt_dataset_open) decode PNG and JPEG files with, for the whole process
 * (the one process-wide setting of the library: a decoder is code, not
 * state). decoder is kept, not copied: it must live as long as it is
 * installed (a static struct). NULL removes it; then a PNG or JPEG in a
 * folder is CLT_ERR_UNSUPPORTED with a message that says to link
 * libcltrain-image and call clt_image_init(). Safe to call from any thread;
 * installing the one already installed changes nothing.
 * CLT_ERR_INVALID_ARGUMENT: a decoder without a decode function. */
CLT_API clt_status clt_image_decoder_install(const clt_image_decoder *decoder);

/* Decoded pixels as training on image folders makes them: channels x
 * height x width (CHW) bytes into chw; colour made grey by ITU-R 601 luma
 * (0.299 R + 0.587 G + 0.114 B, PIL's convert("L")), grey copied to
 * colour; resized (bilinear, pixel centres aligned: PIL's and PyTorch's
 * align_corners=False) when resize is set, else a size that differs is
 * CLT_ERR_SHAPE naming `name` (the file) and both sizes. Errors go into
 * err (errlen bytes). */
CLT_API clt_status clt_image_to_chw(const clt_image_pixels *img,
                                    const char *name, int channels, int height,
                                    int width, bool resize, uint8_t *chw,
                                    char *err, size_t errlen);
/* (clt_image_load, clt_image_info and clt_image_format_supported, which
 * decode, are in cltrain_image.h: libcltrain-image.) */

/* Every image of an IDX file of u8 values ([H, W], [N, H, W] or
 * [N, C, H, W], plain or gzip) as floats in [0, 1]: *count images of
 * *channels x *height x *width in *pixels, which the caller frees. */
CLT_API clt_status clt_idx_load_images(const char *path, int64_t *count,
                                       int *channels, int *height, int *width,
                                       float **pixels, char *err,
                                       size_t errlen);
/* Writes len bytes to path so that no reader ever sees a partial file and
 * a crash leaves the previous one (the checkpoints' way). */
CLT_API clt_status clt_file_write_atomic(const char *path, const void *data,
                                         size_t len, char *err,
                                         size_t errlen);

/* A 2-D convolution's forward (cross-correlation, as PyTorch's Conv2d):
 * input x [batch, C, H, W], weight [filters, C, KH, KW], bias [filters]
 * (may be NULL), output y [batch, filters, OH, OW], all NCHW f32. */
typedef struct clt_conv2d_shape {
  int64_t batch, C, H, W, filters, KH, KW;
  int64_t stride_h, stride_w; /* 0 means 1 */
  int64_t pad_h, pad_w;
  int64_t dil_h, dil_w;       /* 0 means 1 */
} clt_conv2d_shape;

/* The output's height and width, and the floats of the two workspaces the
 * forward needs (col: C*KH*KW x batch*OH*OW; tmp: filters x batch*OH*OW).
 * CLT_ERR_SHAPE when the window does not fit the padded input. */
CLT_API clt_status clt_conv2d_sizes(const clt_conv2d_shape *s, int64_t *oh,
                                    int64_t *ow, int64_t *col_floats,
                                    int64_t *tmp_floats);
/* y = conv(x, weight) + bias the way the conv2d layer runs it: im2col
 * into col, one GEMM into tmp, an axis swap (with the bias) into y. */
CLT_API clt_status clt_conv2d_forward(clt_context *ctx,
                                      const clt_conv2d_shape *s,
                                      const clt_tensor *x,
                                      const clt_tensor *weight,
                                      const clt_tensor *bias, clt_tensor *col,
                                      clt_tensor *tmp, clt_tensor *y);
/* The same (no bias) through CLBlast's convgemm, for comparison (`cltrain
 * bench conv`); x, weight and y must start at element 0 of their
 * buffers. */
CLT_API clt_status clt_conv2d_forward_convgemm(clt_context *ctx,
                                               const clt_conv2d_shape *s,
                                               const clt_tensor *x,
                                               const clt_tensor *weight,
                                               clt_tensor *y);

/* CLBlast's GEMM kernel parameters, measured on the device (what `cltrain
 * tune --gemm` runs): a handful of parameter sets of its direct
 * (XgemmDirect) and indirect (Xgemm) kernels, each timed on the products
 * the sample models train with, and the size threshold between the two
 * kernels. The fastest are applied at once and stored beside the kernel
 * cache for the device and driver; later contexts apply them (unless
 * measuring is off, CLT_PLAN=off). Takes a compile per set: about a minute
 * on a CPU. Call it before any GEMM of the process: the first set of each
 * kernel is the one in force, which CLBlast cannot restore once changed. */
#define CLT_GEMM_TUNE_MAX_ROWS 32
typedef struct clt_gemm_tune_row {
  char kernel[16]; /* "XgemmDirect" or "Xgemm" */
  char label[48];  /* "in force", "32x32, 4x4 items, vw 8", ... */
  double seconds;  /* the products' total, each its fastest run */
  bool rejected;   /* failed to build or run, or gave other numbers */
  bool chosen;
} clt_gemm_tune_row;

typedef struct clt_gemm_tune_report {
  clt_gemm_tune_row rows[CLT_GEMM_TUNE_MAX_ROWS];
  int count, shapes;
  int64_t indirect_min;    /* the threshold chosen (m*n*k from its cube) */
  double seconds_chosen;   /* the products' total with the choice */
  double seconds_first_direct, seconds_first_indirect; /* in force before */
  double search_seconds;   /* what the search cost, compiles included */
} clt_gemm_tune_report;

CLT_API clt_status clt_gemm_tune(clt_context *ctx,
                                 clt_gemm_tune_report *report);

/* The same search with more candidate sets of your own (`cltrain tune
 * --gemm --sets FILE`), e.g. the best of CLBlast's own tuners run on the
 * device (samples/bench/clblast_sets.py turns their JSON files into
 * this): one set a line, "Xgemm NAME=VALUE ..." (GEMMK KREG KWG KWI MDIMA
 * MDIMC MWG NDIMB NDIMC NWG SA SB STRM STRN VWM VWN) or "XgemmDirect
 * NAME=VALUE ..." (KWID MDIMAD MDIMCD NDIMBD NDIMCD PADA PADB VWMD VWND
 * WGD), every parameter once, an optional "# label" after them; blank
 * lines and "#" lines are skipped. The search's own 10 sets come first,
 * then these (at most CLT_GEMM_TUNE_MAX_ROWS - 10); the fastest of all
 * is chosen and stored as by clt_gemm_tune. Text that does not parse is
 * CLT_ERR_INVALID_ARGUMENT naming the line, before anything runs; a set
 * that parses but does not build or computes other numbers is a rejected
 * row, as any other. NULL or empty: clt_gemm_tune. */
CLT_API clt_status clt_gemm_tune_sets(clt_context *ctx, const char *sets,
                                      clt_gemm_tune_report *report);

/* ------------------------------------------------------------------------ */
/* Graphs: models built from layers                                          */

typedef struct clt_graph clt_graph;
typedef int clt_node; /* a node of a graph; negative means none */

/* Creates an empty graph on ctx. The caller destroys it with
 * clt_graph_destroy (before the context). */
CLT_API clt_status clt_graph_create(clt_context *ctx, clt_graph **out);
CLT_API void clt_graph_destroy(clt_graph *g);

/* Adds a layer by type and options, as written in a model file line:
 * type "dense", options "units=128 activation=relu" (may be NULL or "").
 * name may be NULL (a name like "dense2" is given). inputs: the nodes it
 * reads (n_inputs 0 means the last node added). The output shape is
 * inferred now; a shape that does not fit is CLT_ERR_SHAPE naming the node
 * and both shapes. Layer types: input, flatten, reshape, dense, conv2d,
 * depthwise_conv2d, maxpool, avgpool, global_avgpool, global_maxpool,
 * batchnorm, layernorm, dropout, add, concat, normalize, relu, leaky_relu,
 * sigmoid, tanh, gelu, silu (swish), elu, softplus, softmax,
 * softmax_cross_entropy, sigmoid_cross_entropy, mse, mae, huber (README
 * "Model files" gives their options). */
CLT_API clt_status clt_graph_add(clt_graph *g, const char *type,
                                 const char *name, const clt_node *inputs,
                                 int n_inputs, const char *options,
                                 clt_node *out);

/* Typed shorthands of clt_graph_add (in: the node read; out may be NULL). */
CLT_API clt_status clt_graph_input(clt_graph *g, int ndim,
                                   const int64_t *sample_shape, clt_node *out);
CLT_API clt_status clt_graph_flatten(clt_graph *g, clt_node in, clt_node *out);
CLT_API clt_status clt_graph_dense(clt_graph *g, clt_node in, int64_t units,
                                   clt_node *out);
CLT_API clt_status clt_graph_activation(clt_graph *g, clt_node in,
                                        clt_activation kind, clt_node *out);
CLT_API clt_status clt_graph_softmax(clt_graph *g, clt_node in, clt_node *out);
/* Softmax cross-entropy with integer labels over the logits node `in`:
 * the training loss of a classifier (mean over the batch). With label
 * smoothing E (PyTorch's CrossEntropyLoss(label_smoothing=E)), add it as
 * clt_graph_add(g, "softmax_cross_entropy", NULL, &in, 1,
 * "label_smoothing=0.1", &out). */
CLT_API clt_status clt_graph_softmax_cross_entropy(clt_graph *g, clt_node in,
                                                   clt_node *out);
/* Mean squared error between `in` and a float target of the same shape
 * (PyTorch's MSELoss). The other regression losses are added by name:
 * clt_graph_add(g, "mae", NULL, &in, 1, NULL, &out) (mean absolute error,
 * L1Loss) and clt_graph_add(g, "huber", NULL, &in, 1, "delta=1", &out)
 * (HuberLoss: squared within delta, linear beyond). */
CLT_API clt_status clt_graph_mse(clt_graph *g, clt_node in, clt_node *out);

/* Reads a model file (one layer per line; see README) into a new graph.
 * Errors name the file and line. The caller destroys *out. */
CLT_API clt_status clt_graph_load_model(clt_context *ctx, const char *path,
                                        clt_graph **out);

/* Plans every buffer for batches of up to max_batch samples and
 * initialises the parameters from seed (Glorot uniform by default, or
 * init=he; biases zero), as Keras does. After this, forward, backward and
 * optimizer steps allocate nothing. Layer outputs, their gradients and
 * layers' scratch buffers share device memory wherever they are not
 * needed at the same time in a forward and backward pass; parameters,
 * their gradients and optimizer state are never shared. May be called
 * again (new batch size); parameters are kept. Where a product has
 * several ways to run, picks one per the context's plan mode: from the
 * plan cache, or by timing the candidates on the device (their operands
 * are the graph's buffers: parameter gradients are overwritten, values
 * are not). */
CLT_API clt_status clt_graph_compile(clt_graph *g, int64_t max_batch,
                                     uint64_t seed);

/* Numeric precision of a graph (--precision). */
typedef enum clt_precision {
  CLT_PRECISION_FP32 = 0,
  /* Mixed precision, as torch.amp and Keras's mixed_float16: the
   * parameters stay f32 (the master copy that the optimizer updates and
   * checkpoints save) and every forward pass uses them rounded to fp16;
   * each layer's output and each gradient passed between layers and to
   * the parameters is rounded to fp16 as it is made. The input batch,
   * batch-norm statistics, softmax and the loss, reductions and the
   * products' sums stay f32. Devices without fp16 arithmetic (no
   * cl_khr_fp16: POCL, rusticl, NVIDIA's OpenCL) hold the fp16 values in
   * f32 buffers and compute in f32. Pair it with a loss scaler
   * (clt_optimizer_set_loss_scaler), or small gradients vanish. */
  CLT_PRECISION_MIXED = 1,
} clt_precision;

/* Sets g's precision (CLT_ERR_INVALID_ARGUMENT for an unknown value).
 * Best before clt_graph_compile, whose memory plan depends on it; a
 * compiled graph whose precision changes is compiled again for the same
 * batch size (its parameters kept, the batch set dropped). */
CLT_API clt_status clt_graph_set_precision(clt_graph *g, clt_precision p);
CLT_API clt_precision clt_graph_precision(const clt_graph *g);
/* Whether g will only run forward passes (evaluation, prediction: what
 * torch.no_grad() is to PyTorch). On: clt_graph_compile gives no layer a
 * gradient buffer and measures no backward product or layout (the most of
 * a compile's measuring), and clt_graph_backward and clt_optimizer_step
 * fail with CLT_ERR_INVALID_ARGUMENT. Off by default. Best before clt_graph_compile;
 * a compiled graph whose setting changes is compiled again for the same
 * batch size (its parameters kept, the batch set dropped). */
CLT_API clt_status clt_graph_set_forward_only(clt_graph *g, bool on);
/* The factor the loss layer multiplies every gradient by in backward
 * (default 1). A loss scaler attached to the optimizer sets it. */
CLT_API void clt_graph_set_loss_scale(clt_graph *g, float scale);
CLT_API float clt_graph_loss_scale(const clt_graph *g);

#define CLT_PLAN_MAX_CANDIDATES 64

typedef struct clt_plan_candidate {
  char name[32];  /* "one gemm", "per image 64", "split-k 8", each also
                     as "... c^T" (the column-major form) and by our own
                     kernels ("own dot 4x4 split-k 8"); a conv layout:
                     "gemm + swap", "nchw direct" */
  double seconds; /* best of its timed runs; 0 when not timed */
  double gflops;  /* the work's flops (2 m n k per product) / seconds; 0
                     when not timed */
  bool rejected;  /* failed or gave other numbers: never chosen */
} clt_plan_candidate;

typedef enum clt_plan_source {
  CLT_PLAN_FROM_DEFAULT,  /* measuring off: the default (one GEMM) */
  CLT_PLAN_FROM_MEASURED, /* measured during this compile */
  CLT_PLAN_FROM_CACHE,    /* read from the plan cache (times as stored) */
} clt_plan_source;

/* How one GEMM product of a layer runs (or a conv layer's layout, forward
 * or backward), as clt_graph_compile chose it. */
typedef struct clt_plan_info {
  char layer[64];   /* the node's name */
  char product[24]; /* "forward", "weight gradient", "data gradient";
                       a conv's "forward layout", "backward layout" */
  char shape[64];   /* transposes and m x n x k: "NT 64x288x7744" */
  int64_t m, n, k;
  int candidate_count;
  clt_plan_candidate candidates[CLT_PLAN_MAX_CANDIDATES];
  int chosen; /* index into candidates */
  clt_plan_source source;
  bool cache_rejected; /* a damaged stored entry was found and replaced */
} clt_plan_info;

/* The number of products planned by the last clt_graph_compile (0 before
 * one): every conv2d and dense product, every conv2d layout and copy
 * layout, every max pooling layout. */
CLT_API int clt_graph_plan_count(const clt_graph *g);
/* Copies product `index` (0 .. clt_graph_plan_count - 1) into *out.
 * CLT_ERR_INVALID_ARGUMENT for another index. */
CLT_API clt_status clt_graph_plan_info(const clt_graph *g, int index,
                                       clt_plan_info *out);
/* Wall seconds the last clt_graph_compile spent measuring plans (0 when
 * every plan came from the cache or measuring is off). */
CLT_API double clt_graph_plan_seconds(const clt_graph *g);

/* Shape of a node's output per sample (without the batch dimension). */
CLT_API clt_status clt_graph_node_shape(const clt_graph *g, clt_node node,
                                        int *ndim, int64_t *shape);
CLT_API int64_t clt_graph_parameter_count(const clt_graph *g);

/* The parameter tensors of g one by one (PyTorch's state_dict, Keras's
 * get_weights and set_weights), trainable or not (batch norm's running
 * statistics, normalize's statistics, class weights), in model order,
 * named as checkpoints name them: "<layer>.<what>" ("fc1.weight"). */
#define CLT_PARAM_NAME_MAX 96
typedef struct clt_param_info {
  char name[CLT_PARAM_NAME_MAX];
  int ndim;
  int64_t shape[CLT_MAX_DIMS];
  int64_t numel;
  bool trainable; /* updated by the optimizer */
} clt_param_info;
/* How many tensors (0 before layers with parameters are added). */
CLT_API int clt_graph_param_tensors(const clt_graph *g);
/* Tensor i's name, shape and kind; CLT_ERR_INVALID_ARGUMENT for an i out
 * of range. */
CLT_API clt_status clt_graph_param_info(const clt_graph *g, int i,
                                        clt_param_info *info);
/* Copies the values of the tensor named `name` (numel floats, exactly its
 * size) out of compiled g, or into it. A write changes what the next
 * forward pass uses (mixed precision's fp16 copy is made again) and leaves
 * the optimizer's state as it is; under MPI every rank must write the same
 * values. CLT_ERR_INVALID_ARGUMENT for an unknown name (the message lists
 * a few) or another size, or g not compiled. */
CLT_API clt_status clt_graph_get_param(clt_graph *g, const char *name,
                                       float *host, int64_t numel);
CLT_API clt_status clt_graph_set_param(clt_graph *g, const char *name,
                                       const float *host, int64_t numel);
/* Freezes layer `layer` (trainable false) or trains it again (true):
 * Keras's layer.trainable, PyTorch's requires_grad_(False) on a module's
 * parameters, for fine-tuning (clt_checkpoint_load_weights, then freeze
 * what was learnt). A frozen layer's weights and bias keep their values:
 * the optimizer does not update them (no weight decay either), gradient
 * clipping's norm leaves them out, clt_graph_parameter_count and the
 * summary count them as non-trainable. A frozen batchnorm's gamma and
 * beta are fixed, but in training it still normalises by the batch and
 * updates its running statistics, as PyTorch's does (Keras's also runs
 * it in inference mode). Layers upstream of every trainable one run no
 * backward at all; a frozen layer between trainable ones passes the
 * gradient through but makes no weight gradient of its own (dense,
 * conv2d, depthwise_conv2d: their parameters' gradient slots keep what
 * they held; a batchnorm's and a layernorm's are still made, as part of
 * their data gradient). Call it before clt_optimizer_create: on a
 * compiled graph it keeps the values but compiles again (which layers
 * need gradients, the buffers, the backward's plans), and an optimizer
 * made before it refuses to step. CLT_ERR_INVALID_ARGUMENT for a name
 * that is no layer, or a layer without weights (the message lists the
 * layers that have some). layer NULL: every layer that has weights (to
 * train only a few: freeze all, then train those). */
CLT_API clt_status clt_graph_set_trainable(clt_graph *g, const char *layer,
                                           bool trainable);
/* The frozen layers' names, in model order, into names (room for cap;
 * names may be NULL to count them); returns how many are frozen. The
 * names live as long as g. */
CLT_API int clt_graph_frozen_layers(const clt_graph *g, const char **names,
                                    int cap);
/* Values per sample the input takes (C * H * W); 0 without an input. */
CLT_API int64_t clt_graph_input_size(const clt_graph *g);
/* The shape of one input sample into shape (room for CLT_MAX_DIMS): 3
 * dimensions (C, H, W) for images, 1 for flat data; returns their count,
 * 0 without an input. */
CLT_API int clt_graph_input_shape(const clt_graph *g, int64_t *shape);
/* Outputs per sample the loss reads (classes, or regression targets); 0
 * without a loss. */
CLT_API int64_t clt_graph_output_size(const clt_graph *g);

typedef enum clt_loss_kind {
  CLT_LOSS_NONE,       /* no loss layer: inference only */
  CLT_LOSS_CLASSIFIER, /* softmax_cross_entropy: integer labels */
  /* a regression loss (mse, mae or huber): float targets, a loss and a
   * mean absolute error but no accuracy */
  CLT_LOSS_REGRESSION,
  /* sigmoid_cross_entropy: float targets in [0, 1], one a label, each
   * label present or not (multi-label, or binary with one output); the
   * accuracy is per label */
  CLT_LOSS_MULTILABEL,
  CLT_LOSS_MSE = CLT_LOSS_REGRESSION, /* its first name */
} clt_loss_kind;

/* Which loss the graph ends in (what clt_graph_set_batch's labels must be). */
CLT_API clt_loss_kind clt_graph_loss_kind(const clt_graph *g);
/* The loss layer's type as model files name it ("softmax_cross_entropy",
 * "sigmoid_cross_entropy", "mse", "mae", "huber"), or NULL without one. */
CLT_API const char *clt_graph_loss_name(const clt_graph *g);
/* A one-line-per-node summary (name, type, output shape, parameters) into
 * buf, like Keras's model.summary(): a layer's count holds its parameters
 * that are not trained too (batch norm's and normalize's statistics, class
 * weights), and
 * the last line gives the total, split into trainable and non-trainable
 * where some are not (clt_graph_parameter_count: the trainable ones). Cut
 * short, NUL-terminated, when buflen is too small. */
CLT_API void clt_graph_summary(const clt_graph *g, char *buf, size_t buflen);

/* Uploads a batch of n <= max_batch samples: inputs as float
 * [n, sample...], labels as int32 [n] for a classifier, or float targets
 * for mse; NULL at inference: a batch without labels has no loss (see
 * clt_graph_forward). */
CLT_API clt_status clt_graph_set_batch(clt_graph *g, const float *inputs,
                                       const void *labels, int64_t n);
/* The same from tensors already on the device (n * input size f32 values;
 * labels: n i32 class labels, or n * outputs f32 targets, or NULL at
 * inference), copied on the device: benchmarks, data made on the device. */
CLT_API clt_status clt_graph_set_batch_device(clt_graph *g,
                                              const clt_tensor *inputs,
                                              const clt_tensor *labels,
                                              int64_t n);
/* Forward pass over the current batch. training selects batch statistics
 * and dropout where layers have them. With labels the loss (if any) is
 * computed and added to the metrics; a batch set without labels is
 * inference: the loss layer makes only the prediction (a softmax cross-
 * entropy's probabilities, read by clt_graph_predictions), adds nothing to
 * the metrics, and training true is refused (CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_status clt_graph_forward(clt_graph *g, bool training);
/* Backward pass: gradients of the loss for every parameter, from what
 * the last forward pass left (one backward per forward: it reuses the
 * memory of outputs it has consumed); refused after a forward pass without
 * labels. */
CLT_API clt_status clt_graph_backward(clt_graph *g);
/* Downloads the output of the node before the loss (the model's
 * prediction: probabilities for a softmax cross-entropy model) for the
 * current batch into host [n, outputs]. Valid from a forward pass until
 * the next one (a backward pass and optimizer steps keep it); reading it
 * between a training forward and its backward pass changes nothing the
 * backward pass computes. */
CLT_API clt_status clt_graph_predictions(clt_graph *g, float *host,
                                         int64_t *outputs);

typedef struct clt_metrics {
  double loss;     /* mean loss per sample */
  double accuracy; /* fraction of argmax == label (classifiers; NaN for mse) */
  int64_t samples;
  /* a regression (mse, mae, huber): the mean absolute error over every
   * output of every sample (Keras's "mae"); NaN for a classifier */
  double mae;
} clt_metrics;

/* Reads the loss and accuracy (mse: the mean absolute error) accumulated
 * on the device since the last reset (this is the only place they come
 * down). */
CLT_API clt_status clt_graph_metrics(clt_graph *g, clt_metrics *m, bool reset);

/* ------------------------------------------------------------------------ */
/* Optimizers                                                                */

typedef enum clt_optimizer_kind {
  CLT_OPT_SGD,
  CLT_OPT_ADAM,
  CLT_OPT_ADAMW,
  CLT_OPT_RMSPROP, /* torch.optim.RMSprop: alpha, eps, momentum, centered */
} clt_optimizer_kind;

typedef enum clt_schedule {
  CLT_SCHEDULE_CONSTANT,
  CLT_SCHEDULE_STEP,   /* lr * gamma^floor(epoch / step_epochs) */
  CLT_SCHEDULE_COSINE, /* min_lr + (lr - min_lr)(1 + cos(pi epoch / T)) / 2 */
  /* Reduce on plateau (Keras's ReduceLROnPlateau): lr * gamma after every
   * `patience` epochs in a row whose monitored loss (clt_optimizer_observe;
   * clt_fit passes the validation, else test, else training loss) is not
   * lower than the best so far by more than min_delta; never below
   * min_lr. */
  CLT_SCHEDULE_PLATEAU,
  /* PyTorch's OneCycleLR (Smith's one-cycle policy), step by step over
   * total_epochs epochs when clt_fit drives the optimizer (epoch by epoch
   * otherwise): the rate rises from lr / div_factor to lr over the first
   * pct_start of the steps, then falls to lr / (div_factor *
   * final_div_factor), both along a cosine; with cycle_momentum the
   * momentum (SGD's and RMSprop's, given one even at 0 as PyTorch does)
   * or Adam's beta1 goes the other way, max_momentum -> base_momentum ->
   * max_momentum. No warm-up of its own (warmup_epochs 0). */
  CLT_SCHEDULE_ONECYCLE,
} clt_schedule;

typedef struct clt_optimizer_options {
  clt_optimizer_kind kind;
  float lr;
  float momentum, dampening; /* SGD; momentum also RMSprop's */
  bool nesterov;             /* SGD */
  float weight_decay;        /* L2 for SGD, Adam and RMSprop, decoupled for
                                AdamW */
  float beta1, beta2, eps;   /* Adam, AdamW; eps also RMSprop's */
  float clip_norm;           /* clip by global gradient norm; 0: off */
  clt_schedule schedule;
  int step_epochs;           /* STEP: epochs between decays */
  float gamma;               /* STEP: decay factor */
  int total_epochs;          /* COSINE: T */
  float min_lr;              /* COSINE, PLATEAU: the lowest rate */
  int patience;              /* PLATEAU: default 10 */
  float min_delta;           /* PLATEAU: an improvement is lower by more */
  /* Linear warm-up: over the first warmup_epochs epochs the rate rises
   * from lr / (warmup steps) to the schedule's rate, step by step when
   * clt_fit drives the optimizer (epoch by epoch otherwise). 0: none. */
  int warmup_epochs;
  /* RMSprop: the mean square's smoothing constant (PyTorch's alpha,
   * Keras's rho), in [0, 1); centered divides by the gradient's running
   * variance instead of its mean square. */
  float alpha;
  bool centered;
  /* ONECYCLE (PyTorch's defaults: 0.3, 25, 1e4, true, 0.85, 0.95). */
  float pct_start;        /* the fraction of the steps spent rising */
  float div_factor;       /* the first rate: lr / div_factor */
  float final_div_factor; /* the last: lr / (div_factor * final_div_factor) */
  bool cycle_momentum;
  float base_momentum, max_momentum;
} clt_optimizer_options;

/* PyTorch's defaults for kind: SGD lr 0.01; Adam lr 0.001, betas (0.9,
 * 0.999), eps 1e-8; AdamW likewise with weight decay 0.01; RMSprop alpha
 * 0.99, eps 1e-8, and lr 0.001 (Keras's; PyTorch's 0.01 trains the
 * Fashion-MNIST samples worse); plateau patience 10, gamma 0.1. */
CLT_API void clt_optimizer_options_init(clt_optimizer_options *opts,
                                        clt_optimizer_kind kind);

typedef struct clt_optimizer clt_optimizer;

/* An optimizer over every parameter of a compiled graph; its state lives on
 * the device. Destroy it before the graph. */
CLT_API clt_status clt_optimizer_create(clt_graph *g,
                                        const clt_optimizer_options *opts,
                                        clt_optimizer **out);
CLT_API void clt_optimizer_destroy(clt_optimizer *opt);
/* One update from the gradients of the last backward pass. */
CLT_API clt_status clt_optimizer_step(clt_optimizer *opt);
/* Sets the epoch (0-based) the schedule reads; returns the new rate. */
CLT_API float clt_optimizer_set_epoch(clt_optimizer *opt, int epoch);
CLT_API float clt_optimizer_lr(const clt_optimizer *opt);
/* The momentum of the last step (SGD's and RMSprop's; Adam's and AdamW's
 * beta1): the options', or where a ONECYCLE schedule cycles it, the
 * cycle's. */
CLT_API float clt_optimizer_momentum(const clt_optimizer *opt);
/* Tells a PLATEAU schedule the monitored loss of the epoch just ended (as
 * PyTorch's ReduceLROnPlateau.step(loss)); returns true when the rate was
 * reduced (from the next clt_optimizer_set_epoch on). A NaN is ignored.
 * Other schedules ignore it. */
CLT_API bool clt_optimizer_observe(clt_optimizer *opt, double loss);

/* Dynamic loss scaling for mixed precision (torch.amp.GradScaler): scale
 * the loss by clt_loss_scaler_scale before backward, then call
 * clt_loss_scaler_unscale on the f32 gradients before the step; skip the
 * step when it says so. The scale halves (backoff_factor) at each overflow
 * and doubles (growth_factor) after growth_interval clean steps in a row. */
typedef struct clt_loss_scaler clt_loss_scaler;

typedef struct clt_loss_scaler_options {
  float init_scale;     /* 65536 */
  float growth_factor;  /* 2 */
  float backoff_factor; /* 0.5 */
  int growth_interval;  /* 2000 */
} clt_loss_scaler_options;

/* Fills opts with the defaults above (GradScaler's). */
CLT_API void clt_loss_scaler_options_init(clt_loss_scaler_options *opts);
/* A scaler on ctx with opts (from clt_loss_scaler_options_init, changed
 * as you like: init_scale finite and positive, growth_factor above 1,
 * backoff_factor in (0, 1), growth_interval at least 1, else
 * CLT_ERR_INVALID_ARGUMENT). Destroy it before the context; destroy
 * ignores NULL. */
CLT_API clt_status clt_loss_scaler_create(clt_context *ctx,
                                          const clt_loss_scaler_options *opts,
                                          clt_loss_scaler **out);
CLT_API void clt_loss_scaler_destroy(clt_loss_scaler *s);
/* The scale to multiply the loss by now. */
CLT_API float clt_loss_scaler_scale(const clt_loss_scaler *s);
/* grads /= scale, in place; *skip = true when any gradient is infinite or
 * NaN (the step must be skipped). Updates the scale. Reads one flag back
 * from the device. */
CLT_API clt_status clt_loss_scaler_unscale(clt_loss_scaler *s,
                                           clt_tensor *grads, bool *skip);
/* Steps skipped so far for an overflow. */
CLT_API int64_t clt_loss_scaler_skipped(const clt_loss_scaler *s);
/* Steps the scaler has seen (clt_loss_scaler_unscale calls). */
CLT_API int64_t clt_loss_scaler_steps(const clt_loss_scaler *s);

/* Attaches s to opt (NULL detaches; opt does not own s): each
 * clt_optimizer_step then unscales the gradients, skips the update when
 * one is infinite or NaN (Adam's step count does not advance), updates the
 * scale and sets it on the graph (clt_graph_set_loss_scale) for the next
 * backward: torch.amp.GradScaler's scaler.step(opt) and scaler.update().
 * Checkpoints of opt save s's state and --resume restores it. */
CLT_API void clt_optimizer_set_loss_scaler(clt_optimizer *opt,
                                           clt_loss_scaler *s);

/* ------------------------------------------------------------------------ */
/* Data and training                                                         */

typedef struct clt_dataset clt_dataset;

/* Loads images and labels: spec "fashion-mnist" (Debian's
 * dataset-fashion-mnist package) or a folder holding the four standard IDX
 * files (plain or .gz). train picks the training or the test split; limit
 * > 0 keeps the first limit samples. Errors go to ctx's last error. */
CLT_API clt_status clt_dataset_load(clt_context *ctx, const char *spec,
                                    bool train, int64_t limit,
                                    clt_dataset **out);
/* The same from two IDX files (images, labels). */
CLT_API clt_status clt_dataset_load_files(clt_context *ctx,
                                          const char *images_path,
                                          const char *labels_path,
                                          int64_t limit, clt_dataset **out);
CLT_API void clt_dataset_destroy(clt_dataset *ds);
CLT_API int64_t clt_dataset_count(const clt_dataset *ds);
/* Values per sample (channels x height x width). */
CLT_API int64_t clt_dataset_sample_values(const clt_dataset *ds);
/* Copies samples [first, first + n) into host as floats [n, values] (pixels
 * scaled to [0, 1], as training sees them) and, when labels is not NULL,
 * their labels as int32 [n] (a classifier's dataset only). The caller owns
 * both buffers. CLT_ERR_INVALID_ARGUMENT for a range outside the dataset
 * or labels asked of a regression dataset. */
CLT_API clt_status clt_dataset_samples(const clt_dataset *ds, int64_t first,
                                       int64_t n, float *host,
                                       int32_t *labels);

/* Your own data: CSV files, image folders, arrays in memory. A dataset is
 * held in host memory; clt_fit and clt_evaluate read it. */

/* How a CSV file's values after the label (or targets) are read. */
typedef enum clt_csv_values {
  /* Whole numbers 0 to 255, scaled to [0, 1] as images are (the Fashion-
   * MNIST and MNIST CSV files). */
  CLT_CSV_BYTES = 0,
  /* Any decimal number within a float's range, used as it is (tabular
   * data, or values already scaled). */
  CLT_CSV_FLOATS = 1,
} clt_csv_values;

/* The longest clt_data_options.label_column, its NUL included. */
#define CLT_LABEL_COLUMN_MAX 128

typedef struct clt_data_options {
  /* Each sample's shape, the model's input (1x28x28: channels 1, height
   * 28, width 28; flat inputs of N values: 1x1xN). Required by CSV and
   * image folders: a row or an image of another size is an error. */
  int channels, height, width;
  /* Classifier: labels must lie in [0, num_classes) (0: no upper bound). */
  int num_classes;
  /* > 0: regression (the mse loss) with this many float targets per
   * sample; a CSV row then starts with these targets instead of a label.
   * Image folders always give labels. */
  int64_t targets;
  /* > 0: keep only the first so many samples of the training and the test
   * split (after the hold-out below). */
  int64_t train_limit, test_limit;
  /* clt_dataset_open without a test split: the fraction of the training
   * data held out as the test set (default 0.1; 0: no test set). */
  double holdout;
  /* Image folders: resize (bilinear) images whose size differs from
   * height x width, instead of stopping with an error. */
  bool resize;
  /* Image folders: decoding threads (0: one per online core, at most
   * 4). */
  int threads;
  /* Image folders: decoded datasets are kept as packed files in
   * <cache_dir>/data (NULL: $CLT_DATA_CACHE_DIR itself when set, else the
   * data folder of the kernel cache: $CLT_CACHE_DIR, $XDG_CACHE_HOME/cltrain
   * or ~/.cache/cltrain). cache: 1 on, 0 off, -1 on unless $CLT_CACHE is
   * "0". */
  const char *cache_dir;
  int cache;
  /* Image folders and CSV labels that are names: the classes, in label
   * order, that folder names and label names map to (e.g. a checkpoint's,
   * see clt_checkpoint_class_names); a name not among them is an error.
   * NULL: the names found, in sorted order (clt_dataset_open gives a
   * test split the training split's). */
  const char *const *class_names;
  int n_class_names;
  /* CSV files: how the values are read (CLT_CSV_BYTES). Other data is
   * read as it always is: IDX files and images are bytes. */
  clt_csv_values csv_values;
  /* CSV files: the rows hold the values only, no label or targets (data
   * to predict on, as `cltrain predict FILE.csv` reads it). Such a
   * dataset has neither, and clt_fit and clt_evaluate refuse it. */
  bool unlabelled;
  /* CSV files: the column of each row's label, or of the first of its
   * targets (the others follow it): NULL, "" or "first" the first column
   * (Fashion-MNIST's layout); "last" the last (the last `targets`
   * columns); a whole number N column N, counted from 1; any other text
   * the column of that name in the header line (which the file must
   * then have; names are matched exactly, after trimming and taking off
   * double quotes). At most CLT_LABEL_COLUMN_MAX - 1 characters. The
   * other columns are the values, in their order. Ignored for unlabelled
   * rows. clt_fit's checkpoints record it (clt_checkpoint_info). */
  const char *label_column;
  /* CSV files: what separates the fields: ',', '\t', ';', '|', or ' ' (a
   * run of spaces and tabs, numpy's savetxt). 0 (the default): found from
   * the file's first line, the first of these that splits it into a row's
   * number of columns (so ',' where several do). */
  char csv_separator;
} clt_data_options;

/* Fills o with the defaults: no shape, no bound on labels, no limits,
 * holdout 0.1, no resizing, threads 0, cache -1, no class names, CSV
 * values as bytes, labelled, the label in the first column. */
CLT_API void clt_data_options_init(clt_data_options *o);

/* Sets o's shape from g's input and, from its loss, num_classes
 * (softmax_cross_entropy) or targets (mse). g need not be compiled. */
CLT_API clt_status clt_data_options_from_graph(const clt_graph *g,
                                               clt_data_options *o);

/* A dataset from arrays in memory, for programs that embed cltrain. */
typedef struct clt_dataset_desc {
  int64_t count;               /* samples, >= 1 */
  int channels, height, width; /* each sample's shape */
  /* The samples, count * channels * height * width values in NCHW order:
   * exactly one of pixels_u8 (scaled to [0, 1] as the loader batches
   * them) and values_f32 (used as they are). */
  const uint8_t *pixels_u8;
  const float *values_f32;
  /* Exactly one of labels (count class indices in [0, num_classes)) and
   * targets (count * target_size floats: a regression loss's, or
   * sigmoid_cross_entropy's 0 to 1 a label). */
  const int32_t *labels;
  int num_classes; /* 0: the largest label + 1 */
  const float *targets;
  int64_t target_size;
  /* num_classes names (saved in checkpoints), or NULL. */
  const char *const *class_names;
  /* with targets: target_size names, the outputs' (saved in checkpoints
   * as class_names, as a CSV header line's are), or NULL */
  const char *const *target_names;
} clt_dataset_desc;

/* Copies the arrays of d (and the class names) into a new dataset: the
 * caller keeps owning, and may free, everything d points to. The caller
 * destroys *out with clt_dataset_destroy. A bad description (no samples,
 * both or neither of the sample arrays, a label out of range) is
 * CLT_ERR_INVALID_ARGUMENT with a message on ctx. */
CLT_API clt_status clt_dataset_from_memory(clt_context *ctx,
                                           const clt_dataset_desc *d,
                                           clt_dataset **out);

/* Reads a CSV file of rows `label,pixel1,...,pixelN` (Fashion-MNIST's and
 * MNIST's CSV layout; with o->targets = K, `t1,...,tK,pixel1,...`; the
 * label or targets elsewhere with o->label_column, whose name or number
 * not fitting the file is an error too): N =
 * channels * height * width values in NCHW order, whole numbers 0 to 255
 * (by value: "3", "3.0" and "3e0" alike), or with o->csv_values =
 * CLT_CSV_FLOATS any decimal numbers within a float's range; labels are
 * whole numbers (or class names, below), targets within a float's range.
 * A first line whose first field is not a number is a header and
 * skipped; blank lines are skipped. Fields are separated as
 * o->csv_separator says (by default found from the first line: commas,
 * tabs, semicolons, '|' or spaces); a field in double quotes is read
 * without them. A classifier's labels are class names when the first
 * row's is not a number ("setosa"): the classes are then the names met,
 * sorted, or o->class_names', kept by the dataset (clt_dataset_class_name)
 * and saved by clt_fit's checkpoints. A first line of a name (the label
 * first) and numbers ("label,0,1,2") is a header when the next row's
 * label is a number or its name is no other row's, else a row. Errors
 * name the file and line: a row with too few or too many values
 * (with both sizes), a value that is not a number, a pixel outside 0..255
 * or a float beyond a float's range, a negative label or one >=
 * o->num_classes. */
CLT_API clt_status clt_dataset_load_csv(clt_context *ctx, const char *path,
                                        const clt_data_options *o,
                                        clt_dataset **out);

/* Reads a folder of class folders, dir/<class>/<image>, PNG or JPEG (by
 * their contents), as Keras's image_dataset_from_directory: classes are
 * the folder names in sorted order (or o->class_names). Images become the
 * channels o asks for (colour to grey by ITU-R 601 luma, grey to colour by
 * copying; alpha composited onto black) and must have o's height and
 * width unless o->resize. A corrupt image, or one of the wrong size, is an
 * error naming the file. Samples are ordered by a fixed shuffle of the
 * sorted file list, so a limit or hold-out takes every class. Decoded
 * datasets are cached (see clt_data_options.cache_dir), keyed by the file
 * list with sizes and modification times and the options that shape the
 * pixels; a changed file makes a new entry. PNG and JPEG decode through
 * the installed decoder: link libcltrain-image and call clt_image_init()
 * first (cltrain_image.h); without a decoder such a file is
 * CLT_ERR_UNSUPPORTED, the message naming it and saying so. */
CLT_API clt_status clt_dataset_load_folder(clt_context *ctx, const char *dir,
                                           const clt_data_options *o,
                                           clt_dataset **out);

/* Opens the training and test data a user names, as `cltrain train --data
 * SPEC [--test-data TEST]` does:
 *   "fashion-mnist", or a folder of the four IDX files: those;
 *   FILE.csv (any regular file): CSV training data;
 *   a folder holding train.csv (and test.csv): CSV;
 *   a folder holding train/ (and test/) of class folders: images.
 * The test split comes from test_spec when given (a CSV file or a folder of
 * class folders), else from the folder's test file or folder, else it is
 * the last o->holdout of the training data (the same samples on every run,
 * so eval sees what training did not); clt_dataset_source says which.
 * Either of train and test may be NULL when not wanted; spec may be NULL
 * with a test_spec when only the test data is wanted. The caller destroys
 * what it receives (*test may be NULL: no test data, holdout 0). */
CLT_API clt_status clt_dataset_open(clt_context *ctx, const char *spec,
                                    const char *test_spec,
                                    const clt_data_options *o,
                                    clt_dataset **train, clt_dataset **test);

/* Classes of a classifier dataset (0 for targets), and class i's name
 * (NULL when the data names none; owned by ds). */
CLT_API int clt_dataset_num_classes(const clt_dataset *ds);
CLT_API const char *clt_dataset_class_name(const clt_dataset *ds, int i);
/* Target i's name (a regression's or a multi-label dataset's): its column
 * in the CSV file's header line; NULL without one (owned by ds). */
CLT_API const char *clt_dataset_target_name(const clt_dataset *ds, int i);
/* A line saying where the data came from, for people: the file or folder,
 * its kind and size, "held out" or "from the cache" where so. Owned by
 * ds. */
CLT_API const char *clt_dataset_source(const clt_dataset *ds);

typedef enum clt_progress_phase {
  CLT_PHASE_TRAIN, /* within an epoch's training batches */
  CLT_PHASE_EVAL,  /* evaluating the test set */
  CLT_PHASE_EPOCH, /* an epoch has ended: the stats are final */
} clt_progress_phase;

typedef struct clt_epoch_stats {
  int epoch; /* 1-based */
  double train_loss, train_acc, test_loss, test_acc;
  /* The epoch's training (its evaluations not included), wall time, and
   * the images (samples) a second it ran at. */
  double seconds, images_per_sec;
  float lr;
  double val_loss, val_acc; /* NaN without a validation set */
  bool best; /* early stopping: the best monitored loss so far */
  /* With a loss scaler (mixed precision): the scale at the epoch's end and
   * the steps skipped for an overflow so far; 0 without one. */
  float loss_scale;
  int64_t skipped_steps;
  /* Of `seconds`, the time this context spent building kernel programs
   * on their first use (a first run on a device: the loss's and the
   * optimizer's programs, whatever the graph's compile did not build),
   * and, on a driver that compiles a kernel at its first launch (POCL),
   * those launches; 0 once everything is built. images_per_sec leaves it
   * out. load_seconds (below) says how much of it was loading. */
  double compile_seconds;
  /* Of `seconds`, the time the host spent blocked: waiting for the
   * loader's next batch (the input pipeline is behind the training), and
   * waiting for the device (for an upload to run before its host buffer
   * could go back to the loader, and for the metrics read every
   * progress_every batches and at the end). The rest it spent preparing
   * and enqueuing the steps (over MPI, exchanging the gradients too). */
  double wait_data_seconds, wait_device_seconds;
  /* With profiling on (clt_context_options.profiling), else 0 and NULL:
   * the device time of the epoch's training commands (uploads, kernels,
   * library calls; not its evaluation), summed. An in-order queue runs one
   * command at a time, so device_seconds / (seconds - compile_seconds) is
   * the share of the epoch the device was busy. profile: the same time per
   * op, largest first, profile_rows rows; valid during the epoch's
   * CLT_PHASE_EPOCH report only (NULL in the history). NaN, and the rows'
   * seconds NaN, where the device gives no times (clt_profile_timed). */
  double device_seconds;
  const clt_profile_row *profile;
  size_t profile_rows;
  /* mse: the mean absolute errors of the training batches, the validation
   * and the test set (Keras's "mae", "val_mae"); NaN for a classifier, and
   * where a set is missing. The accuracies are NaN for mse. */
  double train_mae, val_mae, test_mae;
  /* Of compile_seconds, the programs built here before (cache hits),
   * loaded rather than compiled. */
  double load_seconds;
} clt_epoch_stats;

typedef struct clt_progress {
  clt_progress_phase phase;
  int epoch, epochs;
  int64_t batch, batches; /* batches done in this phase, and its total */
  double loss, accuracy;  /* running means so far this phase */
  double images_per_sec;
  const clt_epoch_stats *stats; /* CLT_PHASE_EPOCH only */
  double mae; /* mse: the running mean absolute error (accuracy is NaN) */
} clt_progress;

typedef void (*clt_progress_fn)(const clt_progress *p, void *user);

/* What a stop function (clt_fit_options.stop) asks of clt_fit. */
typedef enum clt_fit_stop {
  CLT_FIT_GO_ON,      /* train on */
  CLT_FIT_STOP_EPOCH, /* end the run when the current epoch has ended */
  CLT_FIT_STOP_NOW,   /* end it after the current batch */
} clt_fit_stop;

typedef clt_fit_stop (*clt_fit_stop_fn)(void *user);

typedef struct clt_fit_options {
  int epochs;
  int64_t batch;
  uint64_t seed;
  bool shuffle;        /* default true */
  int pad_crop;        /* augmentation: random crop after padding; 0 off */
  bool hflip;          /* augmentation: random horizontal flip */
  int progress_every;  /* batches between CLT_PHASE_TRAIN/EVAL reports
                          (and one after the first batch); 0: 50 */
  clt_progress_fn progress;
  void *progress_user;
  /* Resuming: the first epoch to run (1-based; 0 or 1: from the start).
   * Epoch e shuffles and augments the same way whatever epoch the run
   * began at, so epochs 1..k, a checkpoint, then first_epoch k+1 give the
   * same numbers as one run. See clt_checkpoint_resume. */
  int first_epoch;
  /* When not NULL, a checkpoint (as clt_checkpoint_save writes) goes to
   * this path, atomically, after every checkpoint_every epochs (0: none in
   * between) and after the last epoch (or the one a stop request ends the
   * run after: see stop below). A failed write stops the fit with
   * CLT_ERR_IO; the previous checkpoint stays intact. */
  const char *checkpoint_path;
  int checkpoint_every;
  /* A validation set (e.g. from clt_dataset_split), evaluated after each
   * epoch like test; its loss is the one monitored. May be NULL. */
  const clt_dataset *validation;
  /* Early stopping (Keras's EarlyStopping with restore_best_weights): stop
   * after early_stop epochs in a row whose monitored loss (validation,
   * else test, else training) is not lower than the best by more than
   * min_delta, then put back the weights of the best epoch. A checkpoint
   * path then receives the best weights at each improvement (and
   * checkpoint_every must be 0). 0: off. */
  int early_stop;
  double min_delta;
  /* Filled by clt_fit when not NULL: how the run ended. */
  struct clt_fit_result *result;
  /* Data-parallel training (see clt_dist_create), or NULL: one process.
   * Every rank of the job calls clt_fit with the same model, data, options
   * (batch is per rank) and seed; see clt_dist_create for what happens. */
  struct clt_dist *dist;
  /* Stopping from outside (Keras's model.stop_training; `cltrain train`
   * asks it on Ctrl-C): when not NULL, called with stop_user after every
   * training batch and after each epoch's evaluation, on the thread that
   * called clt_fit (a signal handler or another thread may set what it
   * reads: a volatile sig_atomic_t, an atomic). CLT_FIT_STOP_EPOCH ends
   * the run when the current epoch has ended: evaluated, reported and
   * checkpointed as a last epoch is, so that a resumed run goes on from it
   * exactly. CLT_FIT_STOP_NOW ends it after this batch: the epoch stays
   * unfinished (not evaluated, reported or checkpointed: the last
   * checkpoint written stays) and the weights are as that batch left them
   * (early stopping's best are put back). Either way clt_fit returns
   * CLT_OK and sets result->interrupted (where the run ended before its
   * last epoch). Over MPI every rank's function is asked after every
   * step and the ranks agree on the strongest answer with the step's
   * gradients, so that every rank stops after the same step or epoch;
   * after each epoch's evaluation rank 0's answer counts for all. */
  clt_fit_stop_fn stop;
  void *stop_user;
} clt_fit_options;

typedef struct clt_fit_result {
  int last_epoch;      /* the last epoch run (below epochs if stopped) */
  int best_epoch;      /* the epoch of the lowest monitored loss */
  double best_loss;    /* that loss */
  const char *monitor; /* "validation", "test" or "training" */
  bool stopped_early;
  bool restored_best;  /* the weights are the best epoch's, not the last */
  bool interrupted;    /* ended by clt_fit_options.stop */
  bool unfinished;     /* ... after a batch: epoch last_epoch + 1 was cut */
  int checkpoint_epoch; /* the epoch of the last checkpoint this run wrote
                           (0: none) */
} clt_fit_result;

/* Fills opts with the defaults: 1 epoch, batch 32, seed 1, shuffled,
 * progress every 50 batches, everything else off (zero or NULL). */
CLT_API void clt_fit_options_init(clt_fit_options *opts);

/* ---- Data-parallel training over MPI ----------------------------------
 *
 * A clt_dist joins the processes (ranks) of an MPI job. clt_fit with
 * opts->dist trains one replica per rank, DistributedDataParallel-style:
 *   - the weights of rank 0 are broadcast to every rank before training;
 *   - each epoch's shuffled order is the one of a single process with the
 *     same seed; every global batch (batch x ranks images) is cut into
 *     ranks contiguous shards, rank r taking the r-th;
 *   - after the backward pass the gradients are summed over the ranks with
 *     MPI_Iallreduce, in buckets that start as soon as the layers
 *     producing them have finished; the loss's gradient averages over
 *     the global batch, so each rank's gradients are its share of the
 *     global mean (the last, partial batch weighted by sample counts,
 *     exactly as one process would average it, at one process's scale);
 *   - batch-norm statistics stay per rank; loss and accuracy are summed
 *     over the ranks; test and validation results are rank 0's;
 *   - only rank 0 writes checkpoints and calls opts->progress;
 *   - an error on any rank (an OpenCL error, a NaN loss, a failed
 *     checkpoint) ends clt_fit on every rank with that rank's message,
 *     prefixed "rank R: ", at the next step.
 * Without MPI in the build the functions below return
 * CLT_ERR_UNSUPPORTED (clt_dist_create) or act as one rank. */
typedef struct clt_dist clt_dist;

/* True when the library was built with MPI (meson -Dmpi). */
CLT_API bool clt_dist_available(void);

/* Joins the job. mpi_comm: NULL, and the library initialises MPI (with
 * MPI_THREAD_SERIALIZED) unless the program has, uses MPI_COMM_WORLD and
 * finalises MPI in clt_dist_destroy if it initialised it; or a pointer to
 * an MPI_Comm of the caller's (MPI initialised by the caller), which the
 * library duplicates. On success the caller owns *out. Errors go to err
 * (errlen bytes, may be NULL). */
CLT_API clt_status clt_dist_create(void *mpi_comm, clt_dist **out, char *err,
                                   size_t errlen);
/* This process's rank and the number of ranks (0 and 1 for NULL). */
CLT_API int clt_dist_rank(const clt_dist *d);
CLT_API int clt_dist_size(const clt_dist *d);
/* Collective: every rank passes its own status (and ctx holding its
 * message). Returns CLT_OK when every rank passed CLT_OK; else the status
 * of the lowest failing rank, whose message (prefixed "rank R: ") is set on
 * every rank's ctx. A NULL d returns st. */
CLT_API clt_status clt_dist_agree(clt_dist *d, clt_context *ctx,
                                  clt_status st);
/* True when the last error came from clt_dist_agree (every rank knows of
 * it, so every rank can end cleanly); false for an error only this rank
 * knows, after which the program should call clt_dist_abort, since the
 * other ranks may wait for it forever. */
CLT_API bool clt_dist_failed_together(const clt_dist *d);
/* Ends every rank of the job at once (MPI_Abort): what a program calls
 * when this rank cannot go on and the others do not know. Does not return
 * when d is not NULL. */
CLT_API void clt_dist_abort(clt_dist *d, int code);

typedef struct clt_dist_stats {
  int64_t steps;       /* training steps since clt_dist_create */
  int64_t images;      /* images this rank trained on */
  double step_seconds; /* wall time from the start of the forward pass to
                          the reduced gradients' upload, summed */
  double wait_seconds; /* of it, time spent waiting for the allreduce after
                          this rank's backward pass had finished */
  double train_seconds; /* wall time of clt_fit's training epochs (loading,
                           steps and updates; not evaluation, nor kernel
                           builds: clt_epoch_stats.compile_seconds), summed */
  /* Of clt_fit's training epochs, summed (clt_epoch_stats' fields):
   * device_seconds with a profiling context (else 0; NaN where the
   * device gives no times), and the host's waits for data and for the
   * device. */
  double device_seconds, wait_data_seconds, wait_device_seconds;
  char device[64];      /* the device of the graph last attached
                           (clt_dist_attach), cut to fit; "" before */
} clt_dist_stats;

/* This rank's counters. */
CLT_API void clt_dist_stats_get(const clt_dist *d, clt_dist_stats *s);
/* Collective: every rank's counters, all[r] for rank r (all has
 * clt_dist_size(d) entries; for NULL d, this process's one). */
CLT_API clt_status clt_dist_stats_gather(clt_dist *d, clt_dist_stats *all);

/* A program's own training loop over MPI (what clt_fit does per step):
 * clt_dist_attach once after compiling, then per step
 * clt_dist_step_begin, forward, backward, clt_dist_step_end (the averaged
 * gradients are on the device after it), the optimizer step; finally
 * clt_dist_detach. */
/* Collective: checks that every rank has the same parameter count, batch
 * and batches per epoch (else CLT_ERR_INVALID_ARGUMENT on every rank),
 * allocates the host buckets, installs the backward hook, gives rank r > 0
 * its own dropout stream, and broadcasts rank 0's parameters. */
CLT_API clt_status clt_dist_attach(clt_dist *d, clt_graph *g,
                                   int64_t batch, int64_t batches);
/* Waits for the device, removes the hook and restores the graph's seed. */
CLT_API void clt_dist_detach(clt_dist *d, clt_graph *g);

/* This rank trains on `mine` of the `total` images of the global batch. */
CLT_API void clt_dist_step_begin(clt_dist *d, int64_t mine, int64_t total);
/* Collective: finishes the gradient allreduce (contributing zeros where
 * this rank failed or had no images), uploads the averaged gradients, and
 * agrees on st (see clt_dist_agree). */
CLT_API clt_status clt_dist_step_end(clt_dist *d, clt_graph *g, clt_status st);

/* Frees d (finalising MPI if clt_dist_create initialised it). Accepts
 * NULL. */
CLT_API void clt_dist_destroy(clt_dist *d);

/* Learns the statistics of every normalize layer of compiled g (the mean
 * and variance of its input, per feature or per channel) from ds's
 * samples, as Keras's Normalization.adapt, and the class weights of a
 * softmax_cross_entropy with class_weights=balanced from ds's labels
 * (scikit-learn's: samples / (classes present * the class's samples)),
 * replacing any it had. clt_fit does this itself for a layer that has
 * none yet (a new model; not one resumed or loaded from a checkpoint,
 * which holds them). ds's samples must have the model's input size
 * (CLT_ERR_SHAPE), and labels for balanced weights. A graph without such
 * a layer is left as it is. */
CLT_API clt_status clt_graph_adapt(clt_graph *g, const clt_dataset *ds);

/* Trains g (compiled for opts->batch or more) with opt for opts->epochs on
 * train, evaluating on test (may be NULL) after each epoch. history (may be
 * NULL) has room for opts->epochs entries; entry e-1 receives epoch e for
 * every epoch run (from opts->first_epoch on), and the entries before it
 * are read, as clt_checkpoint_resume filled them, for checkpoints and to
 * replay their monitored losses into a PLATEAU schedule and early stopping
 * (so a resumed run goes on as one would have). Stops with CLT_ERR_NAN,
 * naming the epoch and batch, if the loss becomes NaN or infinite. */
CLT_API clt_status clt_fit(clt_graph *g, clt_optimizer *opt,
                           const clt_dataset *train, const clt_dataset *test,
                           const clt_fit_options *opts,
                           clt_epoch_stats *history);

/* clt_evaluate of a classifier that also counts confusion[true * classes
 * + predicted] (classes = clt_graph_output_size; the array is zeroed
 * first) over ds in batches of `batch`. */
CLT_API clt_status clt_evaluate_confusion(clt_graph *g, const clt_dataset *ds,
                                          int64_t batch, int64_t *confusion,
                                          clt_metrics *m);

/* A regression's scores, over one output or over all of them
 * (scikit-learn's metrics). */
typedef struct clt_regression_scores {
  double mae;  /* mean absolute error */
  double mse;  /* mean squared error */
  double rmse; /* its square root */
  /* the coefficient of determination, 1 - (sum of squared errors) / (sum
   * of the targets' squared deviations from their mean): 1 for a perfect
   * fit, 0 for predicting the mean; NaN where the targets do not vary */
  double r2;
} clt_regression_scores;

/* clt_evaluate of a regression model (mse) that also scores its outputs
 * over ds in batches of `batch`: per_output[k] for each of the
 * clt_graph_output_size outputs (may be NULL), and *overall (may be
 * NULL): mae and mse over every value, rmse the root of that mse, r2 the
 * mean of the outputs' R^2 where defined (scikit-learn's r2_score,
 * "uniform_average"), NaN where none is. Sums in double on the host, from
 * the model's outputs. */
CLT_API clt_status clt_evaluate_regression(clt_graph *g, const clt_dataset *ds,
                                           int64_t batch,
                                           clt_regression_scores *per_output,
                                           clt_regression_scores *overall,
                                           clt_metrics *m);

/* clt_evaluate of a multi-label model (sigmoid_cross_entropy) that also
 * counts, per label k (clt_graph_output_size of them), where a probability
 * of 0.5 or more (predicted present) meets a target of 0.5 or more
 * (present): counts[4k] true positives, [4k+1] false positives, [4k+2]
 * false negatives, [4k+3] true negatives; and *exact (may be NULL) the
 * samples whose every label is right (scikit-learn's accuracy_score of
 * multi-label data). */
CLT_API clt_status clt_evaluate_multilabel(clt_graph *g, const clt_dataset *ds,
                                           int64_t batch, int64_t *counts,
                                           int64_t *exact, clt_metrics *m);

/* clt_evaluate of a classifier that also counts in *hits the samples
 * whose class is among the k likeliest (Keras's
 * SparseTopKCategoricalAccuracy, torchmetrics' Accuracy(top_k=k)): fewer
 * than k classes score strictly above it, so ties at the edge count in,
 * as TensorFlow's in_top_k; a NaN score is a miss. k from 1 to
 * clt_graph_output_size, else CLT_ERR_INVALID_ARGUMENT. */
CLT_API clt_status clt_evaluate_top_k(clt_graph *g, const clt_dataset *ds,
                                      int64_t batch, int k, int64_t *hits,
                                      clt_metrics *m);

/* The area under the ROC curve (scikit-learn's roc_auc_score) of each
 * output of a classifier (its class against the rest, on the softmax's
 * probabilities) or of a multi-label model (its label, present where the
 * target is 0.5 or more, on its probability) over ds in batches of
 * `batch`: auc[k] for each of the clt_graph_output_size outputs, the
 * chance that a sample of class (label) k scores above one without it,
 * ties counting half; NaN where no sample has it or every sample does.
 * *micro (may be NULL): the same over every (sample, output) pair pooled.
 * Keeps every sample's outputs on the host (samples x outputs floats). */
CLT_API clt_status clt_evaluate_roc_auc(clt_graph *g, const clt_dataset *ds,
                                        int64_t batch, double *auc,
                                        double *micro, clt_metrics *m);

/* Splits ds into *rest and *part: a random `fraction` of its samples
 * (at least one, chosen by seed, the same for the same seed), and the rest,
 * both in the original order (Keras's validation_split, but shuffled).
 * ds is unchanged; destroy all three. */
CLT_API clt_status clt_dataset_split(clt_context *ctx, const clt_dataset *ds,
                                     double fraction, uint64_t seed,
                                     clt_dataset **rest, clt_dataset **part);

/* Loss and accuracy of g over ds, in batches of `batch`. */
CLT_API clt_status clt_evaluate(clt_graph *g, const clt_dataset *ds,
                                int64_t batch, clt_metrics *out);

/* ------------------------------------------------------------------------ */
/* Checkpoints (safetensors)                                                 */
/*
 * A checkpoint is a safetensors file that PyTorch's
 * `model.load_state_dict(safetensors.torch.load_file(path), strict=False)`
 * reads for a model with the same layer names (strict=True too for a file
 * saved without optimizer, which holds parameters only): every parameter is
 * "<layer>.<name>" in PyTorch's layout (dense weight [out, in], conv2d
 * weight [out, in, kh, kw], batchnorm weight, bias, running_mean,
 * running_var as F32, num_batches_tracked as an I64 scalar). The training
 * state lies under names that no layer can have (layer names hold no '.'
 * and those below start with "__"):
 *   __optim__.m, __optim__.v  F32 [n]: the optimizer's moments (Adam m, v;
 *                             SGD momentum in v) over the n trainable values
 *                             in model order
 *   __rng__.<layer>           I64 []: a dropout layer's generator counter
 *   __train__.state           I64 [6]: format version (1), epochs done,
 *                             optimizer steps, seed, data seed, optimizer
 *                             kind (-1: none)
 *   __train__.history         F64 [epochs, 10]: epoch, train loss, train
 *                             accuracy, test loss, test accuracy,
 *                             validation loss, validation accuracy, and
 *                             a regression's train, test and validation
 *                             mean absolute errors (NaN where unknown;
 *                             files of [epochs, 5] and [epochs, 7] from
 *                             before validation and the mae are read too)
 * (the training state only when an optimizer was given) and __metadata__
 * holds "format": "pt", "cltrain_version", "class_names" (a JSON array of
 * strings, when the training data named its classes),
 * "model_sha256" (of the model file, when the graph came from one),
 * "input_values" ("bytes" or "floats", when saved by clt_fit),
 * "label_column" (when clt_fit's training data was a CSV file whose label
 * was not in the first column: clt_data_options.label_column),
 * "frozen_layers" (a JSON array of the layers frozen by
 * clt_graph_set_trainable, when some were), "optimizer",
 * "optimizer_options", "epoch", "step", "seed". */

typedef struct clt_checkpoint_info {
  int epoch;          /* epochs done when it was saved */
  int64_t step;       /* optimizer steps done */
  uint64_t seed;      /* the graph's seed (initialisation, dropout) */
  uint64_t data_seed; /* the seed of shuffling and augmentation */
  char model_sha256[65]; /* "" when unknown */
  char optimizer[16];    /* "sgd", "adam", "adamw", "rmsprop"; "" without
                            state */
  char version[32];      /* cltrain version that wrote it */
  /* The training data's values: "bytes" (scaled to [0, 1]: IDX, images,
   * CSV read as bytes) or "floats" (used as they are: CSV read as floats,
   * values_f32 in memory): metadata "input_values". "" when not recorded
   * (clt_checkpoint_save knows no data; older files). */
  char input_values[8];
  /* Where the training data's CSV rows held the label or targets
   * (clt_data_options.label_column, metadata "label_column"): "" when in
   * the first column, or not recorded. */
  char label_column[CLT_LABEL_COLUMN_MAX];
} clt_checkpoint_info;

/* Writes g's parameters and, if opt is not NULL, its state, atomically
 * (temporary file, fsync, rename: a crash leaves the old file intact), as
 * a checkpoint of `epoch` epochs done. history (may be NULL) holds `epoch`
 * entries, kept in the file for plots of resumed runs. g must be
 * compiled. CLT_ERR_IO names the path. */
CLT_API clt_status clt_checkpoint_save(clt_graph *g, const clt_optimizer *opt,
                                       int epoch,
                                       const clt_epoch_stats *history,
                                       const char *path);

/* Loads only the parameters (and batch-norm statistics) from a checkpoint
 * into compiled g: fine-tuning, or inference. Every parameter of g must be
 * in the file with its shape; a parameter-named tensor that g lacks is an
 * error too (as PyTorch's strict load). On any error g is unchanged and
 * the message names the file and, where it applies, the tensor and both
 * shapes ("w.safetensors: tensor 'fc1.weight' has shape [128, 784], the
 * model expects [64, 784]"). */
CLT_API clt_status clt_checkpoint_load_weights(clt_graph *g, const char *path);

/* Restores everything clt_checkpoint_save wrote into compiled g and opt
 * (created with the same kind), to continue training from info->epoch + 1
 * (set clt_fit_options.first_epoch and seed from *info). A checkpoint of a
 * different model file (SHA-256 mismatch) or optimizer kind is an error
 * naming both. history (may be NULL; room for history_cap entries)
 * receives the epochs recorded. info may be NULL. On error nothing is
 * changed. */
CLT_API clt_status clt_checkpoint_resume(clt_graph *g, clt_optimizer *opt,
                                         const char *path,
                                         clt_checkpoint_info *info,
                                         clt_epoch_stats *history,
                                         int history_cap);

/* Reads the training state and metadata of a checkpoint, without a graph.
 * Errors go to ctx. */
CLT_API clt_status clt_checkpoint_read_info(clt_context *ctx, const char *path,
                                            clt_checkpoint_info *info);

/* The class names a checkpoint was trained with (saved by clt_fit from a
 * dataset that has them, e.g. image folders), in label order. *names is
 * NULL and *count 0 when it has none. The caller frees *names with
 * clt_class_names_free. Errors go to ctx. */
CLT_API clt_status clt_checkpoint_class_names(clt_context *ctx,
                                              const char *path, char ***names,
                                              int *count);
CLT_API void clt_class_names_free(char **names, int count);
/* The layers that were frozen (clt_graph_set_trainable) in the graph a
 * checkpoint was saved from (metadata "frozen_layers"), in model order;
 * *names NULL and *count 0 when none was. clt_checkpoint_resume needs the
 * same layers frozen. Free with clt_class_names_free. Errors go to ctx. */
CLT_API clt_status clt_checkpoint_frozen_layers(clt_context *ctx,
                                                const char *path,
                                                char ***names, int *count);

/* ------------------------------------------------------------------------ */
/* Inference                                                                 */

typedef struct clt_model clt_model;

/* Loads a model file and its trained weights (a checkpoint; NULL keeps the
 * initialisation of seed 1) for inference in batches of up to 64 samples
 * (larger calls are split). The caller destroys *out with
 * clt_model_destroy, before ctx. Errors go to ctx's last error. */
CLT_API clt_status clt_model_load(clt_context *ctx, const char *model_path,
                                  const char *weights_path, clt_model **out);
CLT_API void clt_model_destroy(clt_model *m);

/* The shape of one input sample (e.g. 1, 28, 28) and its value count. */
CLT_API int clt_model_input_shape(const clt_model *m, int64_t *shape);
CLT_API int64_t clt_model_input_size(const clt_model *m);
/* Values per sample of the prediction (classes for a classifier). */
CLT_API int64_t clt_model_output_size(const clt_model *m);

/* Runs the model on n samples (inputs: n * input_size floats, as in
 * training: pixels scaled to [0, 1]) and writes n * output_size values to
 * out: class probabilities for a softmax cross-entropy model. */
CLT_API clt_status clt_model_predict(clt_model *m, const float *inputs,
                                     int64_t n, float *out);

/* The graph inside (owned by m), e.g. for clt_evaluate. */
CLT_API clt_graph *clt_model_graph(clt_model *m);

#ifdef __cplusplus
}
#endif

#endif
