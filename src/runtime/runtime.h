/* The runtime layer: the context, its device, queue, kernels and the
 * helpers every op uses to launch a kernel and report an error. */
#ifndef CLT_RUNTIME_RUNTIME_H
#define CLT_RUNTIME_RUNTIME_H

#include <CL/cl.h>

#include "cltrain.h"
#include "common/error.h"

/* Every kernel of cl/, listed once: X(kernel_name, program_file). */
#include "runtime/kernels.h"

typedef enum clt_kernel_id {
#define CLT_KERNEL(name, file) CLT_K_##name,
  CLT_KERNEL_LIST(CLT_KERNEL)
#undef CLT_KERNEL
  CLT_KERNEL_COUNT
} clt_kernel_id;

typedef struct clt_pool_block clt_pool_block;
typedef struct clt_sub_buffer clt_sub_buffer;

/* One profiled command (or span of commands, from a marker `begin` to the
 * end of `event`): its op name and events, read after a finish. */
typedef struct clt_profile_entry {
  const char *op;
  const char *scope; /* the layer and pass it ran for, or NULL */
  cl_event begin; /* NULL: the span is the command of `event` */
  cl_event event;
} clt_profile_entry;

/* clt_context.loop_limit's default: half of llvmpipe's limit, as the
 * counts the ops make are estimates. */
#define CLT_LOOP_LIMIT 32768

struct clt_context {
  clt_device_info info;
  cl_platform_id platform;
  cl_device_id device;
  cl_context cl;
  cl_command_queue queue;
  cl_program *programs;
  cl_program *programs16; /* their round16 programs (program.c) */
  int program_count;
  cl_kernel kernels[CLT_KERNEL_COUNT];
  size_t work_group;         /* size used by kernels with a fixed group */
  size_t launch_1d; /* clt_kernel_run_1d's groups; 0: CLT_LAUNCH_1D_DEFAULT
                       (or work_group where smaller). Measured per device
                       by the graphs' plans (graph/plan.c). */
  size_t element_run; /* clt_kernel_run_elems's elements an item; 0: the
                         device type's default (clt_element_run).
                         Measured per device by the graphs' plans. */
  /* The most loop iterations, inner ones counted, that a kernel which
   * walks a whole row or plane per work-item may run in one: more are cut
   * into parts (clt_loop_parts). Mesa's llvmpipe ends a work-item's loops
   * after 65,535 iterations in all, without an error. Lowered by tests,
   * to cut small shapes too. */
  int64_t loop_limit;
  /* The loop iterations a work-item may run on this device, measured on
   * first need (clt_device_loop_cap, ops/ops.h): 0 none found, -1 not
   * measured yet. Lowered by tests, to cut small products too. */
  int64_t loop_cap;
  /* State a layer above keeps per context (ops/ keeps its GEMM set-up
   * here), made by that layer on first use; runtime only frees it, with
   * the destructor stored beside it, and knows nothing of its contents. */
  void *ops_state;
  void (*ops_state_free)(void *state);
  /* The kernel cache folder ("" when the cache is off): measured plans
   * are kept beside it (plan_store.h). */
  char cache_dir[4096];
  bool cache_on;
  /* The kernel cache folder refused a binary (said once; programs built
   * later are not offered to it). */
  bool cache_unwritable;
  clt_plan_mode plan_option; /* clt_context_options.plan */
  clt_kernel_stats kernel_stats;
  clt_memory_stats memory_stats;
  clt_pool_block *pool;      /* freed device buffers kept for reuse */
  /* CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes, and sub-buffers made for
   * operands handed to CLBlast (clt_sub_buffer_get). */
  size_t base_align_bytes;
  clt_sub_buffer *subs;
  size_t sub_count;
  clt_err err;
  clt_log_fn log;
  void *log_user;
  clt_build_progress_fn build_progress;
  void *build_progress_user;
  bool profiling;
  /* With profiling: the device's command times are usable (its clock
   * ran over a pause: profile_clock_runs in context.c). */
  bool profile_timed;
  clt_profile_entry *profile;
  size_t profile_count, profile_cap;
  /* The scope of the commands enqueued now (clt_profile_scope), and
   * every scope named so far (interned: profile entries point at them). */
  const char *profile_scope;
  char **profile_scopes;
  size_t profile_scope_count;
  /* Kernels are enqueued in turns with the process's other contexts
   * (clt_turn_begin): POCL's CPU drivers. */
  bool takes_turns;
  /* The driver compiles each kernel at its first launch and keeps what it
   * compiled in a cache of its own (context.c keeps_kernels: POCL's CPU
   * drivers with their kernel cache on, unless CLT_POCL_LAZY=0): the
   * kernel cache then holds a mark for a program, not its binary
   * (program.c, build_through_cache). */
  bool driver_keeps_kernels;
  /* Per program (programs, then programs16), what program.c's build says
   * of it on such a driver: compiled from source here (at_launch: each of
   * its kernels compiles at its first launch); built from source at all,
   * compiled or its mark found (marked), with its cache key:
   * clt_context_build_kernels compiles every kernel of such a program and
   * stores its binary under that key. */
  struct clt_program_mark {
    bool at_launch, marked;
    uint8_t key[32];
  } *marks;
  /* In clt_context_build_kernels: programs are stored whole (binaries),
   * not marked. */
  bool building_all;
  /* Per kernel: its first launch is still to come and compiles it;
   * clt_kernel_run times that launch into kernel_stats.build_seconds. */
  bool launch_compiles[CLT_KERNEL_COUNT];
};

/* Records an error on the context (message printf-style) and logs it at
 * CLT_LOG_DEBUG; returns status. */
clt_status clt_ctx_fail(clt_context *ctx, clt_status status, const char *fmt,
                        ...) __attribute__((format(printf, 3, 4)));

/* Turns an OpenCL error into CLT_ERR_OPENCL (or CLT_ERR_DEVICE_MEMORY for
 * allocation failures) with a message naming what failed. */
clt_status clt_ctx_cl_fail(clt_context *ctx, cl_int code, const char *what);

const char *clt_cl_error_name(cl_int code);

void clt_ctx_log(const clt_context *ctx, clt_log_level level,
                 const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Taking turns. POCL's CPU drivers (3.1 here) keep the loaded code of a
 * kernel per local size in one list for the whole process, and find the
 * entry a finished command held by the kernel and local size alone, while
 * a command may have taken another entry of the same pair (one compiled
 * for a larger grid, the first in the list). One queue at a time runs its
 * commands in order, so the two are the same entry; two queues with the
 * same kernel in flight at once (two contexts of one process, on two
 * threads) release each other's entry, and POCL aborts on its assertion
 * `found->ref_count > 0' (pocl_release_dlhandle_cache, lib/CL/devices/
 * common.c; POCL's later source releases the entry the command holds).
 * Asking for a program's binary compiles its kernels into the same list.
 * So on such a device (context.c needs_turns: POCL's CPU drivers, unless
 * CLT_POCL_TURNS=0) every context enqueues its kernels in turns:
 * clt_turn_begin waits until no other context of the process has work in
 * its queue (finishing the queue of the context that enqueued last), and
 * holds a process-wide lock until clt_turn_end, around each launch of
 * ours, each CLBlast call and each request for a program's binary.
 * Contexts on other devices pay nothing; a single context on POCL an
 * uncontended lock. */
void clt_turn_begin(clt_context *ctx);
void clt_turn_end(clt_context *ctx);

/* Kernel arguments: tensors travel as (buffer, element offset) pairs. */
typedef enum clt_karg_kind {
  CLT_KARG_TENSOR,
  CLT_KARG_INT,
  CLT_KARG_FLOAT,
  CLT_KARG_ULONG,
  CLT_KARG_LOCAL,
} clt_karg_kind;

typedef struct clt_karg {
  clt_karg_kind kind;
  cl_mem mem;      /* CLT_KARG_TENSOR: the buffer and the element offset */
  int64_t offset;
  int i;
  float f;
  cl_ulong ul;
  size_t local_bytes;
} clt_karg;

/* KT takes a clt_tensor * (its struct is tensor/'s, so KT is expanded only
 * where tensor/tensor.h is included: in ops/). */
#define KT(x)                                                                  \
  ((clt_karg){.kind = CLT_KARG_TENSOR, .mem = (x)->buffer,                     \
              .offset = (x)->offset})
#define KI(x) ((clt_karg){.kind = CLT_KARG_INT, .i = (int)(x)})
#define KF(x) ((clt_karg){.kind = CLT_KARG_FLOAT, .f = (float)(x)})
#define KU(x) ((clt_karg){.kind = CLT_KARG_ULONG, .ul = (cl_ulong)(x)})
#define KLOCAL(bytes) ((clt_karg){.kind = CLT_KARG_LOCAL, .local_bytes = (bytes)})

/* Sets the arguments and enqueues kernel id over an ND range. local may
 * be NULL (the implementation chooses); global sizes are rounded up to a
 * multiple of local, so kernels check their bounds. */
clt_status clt_kernel_run(clt_context *ctx, clt_kernel_id id, int dims,
                          const size_t *global, const size_t *local,
                          const clt_karg *args, int nargs);

/* The same for a kernel not in the list (a program built on demand:
 * clt_program_build_extra); name is for messages and the profile, a
 * string that outlives the context. */
clt_status clt_kernel_run_named(clt_context *ctx, cl_kernel kernel,
                                const char *name, int dims,
                                const size_t *global, const size_t *local,
                                const clt_karg *args, int nargs);
/* One work-item per element 0..n-1, in groups of ctx->launch_1d (by
 * default CLT_LAUNCH_1D_DEFAULT, until a graph's plans measure it). */
#define CLT_LAUNCH_1D_DEFAULT 64
/* The items of such a group (also the element-wise kernels' of other
 * shapes: batch normalisation's planes). */
size_t clt_launch_items(const clt_context *ctx);
clt_status clt_kernel_run_1d(clt_context *ctx, clt_kernel_id id, size_t n,
                             const clt_karg *args, int nargs);

/* An element-wise kernel over elements 0..n-1 (cl/prelude.cl FOR_RUN):
 * as clt_kernel_run_1d with an item per clt_element_run elements, so that
 * each item takes a run of consecutive ones; the run's length is passed
 * after args (at most CLT_ELEMS_MAX_ARGS of them), as the kernel's last
 * argument. */
#define CLT_ELEMS_MAX_ARGS 16
/* The run: ctx->element_run where the plans measured it (graph/plan.c),
 * else CLT_ELEMENT_RUN_CPU on a CPU device and one on any other (a GPU):
 * POCL's and llvmpipe's loops over a group's items run an item an element
 * about 20 and 2 times as slow as runs of 64 (f16_to_f32 of 8 M elements,
 * 2-core EPYC: 17.2-19.7 against 0.83-0.97 ms, and 23.3 against 12.0; the
 * form before runs, an item an element without a loop, 3.0-4.0 and
 * 18.7). */
#define CLT_ELEMENT_RUN_CPU 64
size_t clt_element_run(const clt_context *ctx);
clt_status clt_kernel_run_elems(clt_context *ctx, clt_kernel_id id, size_t n,
                                const clt_karg *args, int nargs);

#define CLT_NARGS(...) (int)(sizeof((clt_karg[]){__VA_ARGS__}) / sizeof(clt_karg))
#define CLT_RUN_1D(ctx, id, n, ...)                                            \
  clt_kernel_run_1d((ctx), (id), (n), (clt_karg[]){__VA_ARGS__},               \
                    CLT_NARGS(__VA_ARGS__))
#define CLT_RUN_ELEMS(ctx, id, n, ...)                                         \
  clt_kernel_run_elems((ctx), (id), (n), (clt_karg[]){__VA_ARGS__},            \
                       CLT_NARGS(__VA_ARGS__))
#define CLT_RUN(ctx, id, dims, global, local, ...)                             \
  clt_kernel_run((ctx), (id), (dims), (global), (local),                       \
                 (clt_karg[]){__VA_ARGS__}, CLT_NARGS(__VA_ARGS__))

/* Where profiling is on, returns an event slot for a command about to be
 * enqueued under op's name (the name must outlive the context: a string
 * literal); else NULL. */
cl_event *clt_profile_slot(clt_context *ctx, const char *op);
/* The same for a sequence of commands whose last one will set the returned
 * event (a library call such as a CLBlast routine): a marker enqueued now
 * records where the sequence starts. */
cl_event *clt_profile_span(clt_context *ctx, const char *op);
/* Where profiling is on, the commands profiled from now on belong to the
 * scope "name pass" (a layer and "forward" or "backward", or a name
 * alone where pass is NULL: clt_profile_summary_by_layer's layer); name
 * NULL ends it. The text is copied (kept until the context goes). */
void clt_profile_scope(clt_context *ctx, const char *name, const char *pass);

/* The device buffer pool (pool.c). A block is a cl_mem of at least the
 * bytes asked for, either reused from freed ones or created (counted in the
 * context's memory stats, refused with CLT_ERR_DEVICE_MEMORY and a message
 * when the device cannot hold it). */
clt_status clt_pool_acquire(clt_context *ctx, size_t bytes,
                            clt_pool_block **out);
/* Marks b free for reuse (NULL is allowed); the buffer stays allocated. */
void clt_pool_give_back(clt_pool_block *b);
cl_mem clt_pool_buffer(const clt_pool_block *b);
/* Returns every pooled buffer to OpenCL (context destroy). */
void clt_pool_release_all(clt_context *ctx);

/* A sub-buffer of parent for the bytes [origin, origin + bytes), made once
 * and kept by the context, or NULL where none can be made (origin 0 or not
 * aligned as the device requires; OpenCL refused): then use parent with
 * the offset. For libraries (CLBlast) that copy an operand with a non-zero
 * offset to a temporary before their kernels run, where the same operand
 * at offset 0 is used in place. A few hundred are kept; beyond that all
 * are released (newest first) and the cache starts again. The caller gets
 * a reference of its own (release it with clReleaseMemObject once the call
 * that uses it is enqueued): a later get may release the context's, even
 * within one product (a hit, then a new one that empties the cache). */
cl_mem clt_sub_buffer_get(clt_context *ctx, cl_mem parent, size_t origin,
                          size_t bytes);
/* Releases the context's sub-buffers, newest first: _drop keeps the
 * cache for more, _release frees it (context teardown). */
void clt_sub_buffers_drop(clt_context *ctx);
void clt_sub_buffers_release(clt_context *ctx);

/* Profiling (profile.c): drops the events recorded so far. */
void clt_profile_release(clt_context *ctx);

/* Kernel programs (program.c). A context's programs are built when one
 * of their kernels is first needed (clt_kernel_get; all at once:
 * clt_context_build_kernels): a model that uses five of them pays for
 * five; the rounding variants of mixed precision (NAME_r16, NAME_s16)
 * are in a program of their own per file, built the same way.
 * clt_programs_init (clt_context_create) only prepares the table. */
clt_status clt_programs_init(clt_context *ctx);
/* Kernel id of the context, its program built (from the binary cache or
 * the source) and the kernel created on the first call. */
clt_status clt_kernel_get(clt_context *ctx, clt_kernel_id id, cl_kernel *out);
void clt_programs_release(clt_context *ctx);
/* Whether clt_embedded_programs[program] has a round16 program: the file
 * built with -DCLT_ROUND16_PROGRAM=1, holding its kernels' rounding
 * variants (cl/prelude.cl's ROUND16_VARIANTS) and nothing else. */
bool clt_program_has_round16(int program);
/* Kernel id's name, and its program (an index into
 * clt_embedded_programs; *round16: in that file's round16 program). */
const char *clt_kernel_name(clt_kernel_id id);
int clt_kernel_program(clt_kernel_id id, bool *round16);
/* Builds the embedded program cl/NAME.cl with `extra` build options after
 * the usual ones, through the binary cache: for variants of a program
 * (mma, igemm) that ops build where they use them. On failure the
 * build log is in the context's message (CLT_ERR_BUILD). */
clt_status clt_program_build_extra(clt_context *ctx, const char *name,
                                   const char *extra, cl_program *out);
/* The same with the compiled program's binary rewritten before the driver
 * builds it: the program is built from source, its binary (PTX text on
 * NVIDIA's driver) passed to `patch`, which returns the new binary as a
 * string (malloc'd) or NULL with the reason in why, and that is built
 * (clCreateProgramWithBinary) and cached, under a key that includes `tag`
 * (the rewriting's version). A rewriting or rebuild that fails is
 * CLT_ERR_BUILD with the reason or the driver's log. For wgmma
 * (src/ops/wgmma_ptx.h). With patch NULL, clt_program_build_extra. */
typedef char *(*clt_binary_patch_fn)(const char *binary, char *why,
                                     size_t why_len);
clt_status clt_program_build_patched(clt_context *ctx, const char *name,
                                     const char *extra, const char *tag,
                                     clt_binary_patch_fn patch,
                                     cl_program *out);
/* The driver's build log of prog for the context's device, NUL-terminated
 * (malloc'd; NULL where there is none). */
char *clt_program_build_log(const clt_context *ctx, cl_program prog);
/* Whether the device lists an OpenCL extension. */
bool clt_device_has_extension(cl_device_id device, const char *name);

/* Host allocation that the memory stats count. */
void *clt_malloc(clt_context *ctx, size_t bytes);

/* Pinned host memory (pinned.c): a buffer made with CL_MEM_ALLOC_HOST_PTR
 * and mapped for as long as it lives, so that an upload from ptr is a DMA
 * the driver starts without first copying the bytes on the calling thread
 * (NVIDIA's OpenCL stages uploads from pageable memory that way; its
 * guide asks for this form). On a CPU device it is plain host memory.
 * Made outside a step (the loader's ring). false (with a debug log line,
 * no error) where the device gives none: the caller uses malloc instead.
 * clt_pinned_free unmaps and releases it, accepting a zeroed one. */
typedef struct clt_pinned {
  void *ptr;
  cl_mem mem;
} clt_pinned;
bool clt_pinned_alloc(clt_context *ctx, size_t bytes, clt_pinned *out);
void clt_pinned_free(clt_context *ctx, clt_pinned *p);

#endif
