/* The harness every check runs in: what all checks of device ops share,
 * so that a check (one file per kernel family, named as in cl/) declares
 * only its operands, the op and the host reference.
 *
 * A check is a body run by check_run:
 *
 *   static clt_status add_body(check_set *s, const void *arg) {
 *     const add_args *a = arg;
 *     check_f32 *x, *y, *out;
 *     CLT_TRY(check_operand(s, a->n, -1.0f, 1.0f, &x));   operands
 *     ...
 *     CLT_TRY(clt_add_forward(s->ctx, out->t, x->t, y->t, a->n, false));
 *     for (...) out->host[i] = x->host[i] + y->host[i];   the reference
 *     return CLT_OK;
 *   }
 *
 * The harness then downloads every operand and compares it with what the
 * body left in its host copy: the largest error relative to
 * max(1, |reference|) is the check's error (a NaN or infinity where the
 * reference is finite is an infinite one; an i32 element that differs
 * counts as 1). It frees everything, whatever failed.
 *
 * Every operand is a view at an odd offset (CHECK_GUARD elements) into a
 * larger buffer whose guard elements on both sides hold random canaries,
 * so a kernel that ignores an offset or writes past its range is caught:
 * a changed canary is not an error measure but a failure of the check,
 * CLT_ERR_INTERNAL with a message on the context naming the operand and
 * the element. The context's message is the one place a failure is
 * described; `cltrain selftest` and the test suites print it. */
#ifndef CLT_CHECK_HARNESS_H
#define CLT_CHECK_HARNESS_H

#include <stddef.h>

#include "check/check.h"
#include "common/rng.h"

/* Elements kept on each side of every operand: odd, so that offsets are
 * not aligned to anything a kernel might assume. */
#define CHECK_GUARD 3
#define CHECK_MAX_F32 12
#define CHECK_MAX_I32 2
#define CHECK_MAX_SCRATCH 4

/* An f32 operand: t is a view of n elements at offset CHECK_GUARD into
 * base (n + 2 * CHECK_GUARD). `all` mirrors the whole base on the host;
 * host = all + CHECK_GUARD is where the body reads inputs and writes the
 * expected outputs. */
typedef struct check_f32 {
  clt_tensor *base, *t;
  float *all, *host;
  int64_t n;
  int index; /* its number among the operands, for messages */
} check_f32;

/* The same for an i32 operand (labels, pooling's argmax). */
typedef struct check_i32 {
  clt_tensor *base, *t;
  int32_t *all, *host;
  int64_t n;
  int index;
} check_i32;

/* The operands of one check, freed together. */
typedef struct check_set {
  clt_context *ctx;
  uint64_t seed;
  check_f32 f32[CHECK_MAX_F32];
  int f32_count;
  check_i32 i32[CHECK_MAX_I32];
  int i32_count;
  void *scratch[CHECK_MAX_SCRATCH];
  int scratch_count;
  clt_tensor *extra[CHECK_MAX_SCRATCH]; /* check_plain, check_view */
  int extra_count;
  double err;
  bool compared; /* the body compared already (check_compare) */
  /* check_run_rounded: the rounding mode this run asks of the op (0 in
   * its plain run), the operand the body said the op rounds
   * (check_round), what check_round handed out, the fp16 copy (mode 2:
   * a view of n halves at CHECK_GUARD into copy_base, whose guards hold
   * canaries) and the plain run's device values of that operand, which
   * the rounded run's must equal once rounded. */
  int round16;
  check_f32 *rounded;
  clt_round16 round;
  clt_tensor *copy_base, *copy;
  uint16_t *copy_all;
  float *plain;
} check_set;

typedef clt_status (*check_body)(check_set *s, const void *arg);

/* Runs body on a fresh set whose random streams start at seed, compares
 * the operands (unless the body did, last), frees everything and stores
 * the error in *max_err (infinite when the status is not CLT_OK). */
clt_status check_run(clt_context *ctx, uint64_t seed, check_body body,
                     const void *arg, double *max_err);

/* Mixed precision's rounding done by the kernel that writes an op's
 * output (ops.h clt_round16): check_run, then, where round16 is 1 or 2,
 * the same body again on the same inputs (same seed) with the op asked to
 * round (check_round) in that mode. The rounded run's output must be the
 * plain run's device output rounded to fp16 on the host (IEEE, ties to
 * even), bit for bit, and in mode 2 its fp16 copy those halves' bits,
 * canaries untouched; every other operand is compared with the body's
 * reference as in the plain run. A bit that differs counts as an error
 * of 1. */
clt_status check_run_rounded(clt_context *ctx, uint64_t seed, check_body body,
                             const void *arg, int round16, double *max_err);
/* The rounding for the op whose output is y: NULL in a plain run (so
 * check_run's bodies give the op NULL), else the mode the run asks for,
 * with a fresh fp16 copy in mode 2. A body calls it once, for the one
 * operand the op writes last. */
clt_status check_round(check_set *s, check_f32 *y, const clt_round16 **out);

/* A new operand of n elements uniform in [lo, hi) (canaries too),
 * uploaded. */
clt_status check_operand(check_set *s, int64_t n, float lo, float hi,
                         check_f32 **out);
/* A new i32 operand of n elements uniform in [-99, 99] (canaries too),
 * uploaded. */
clt_status check_operand_i32(check_set *s, int64_t n, check_i32 **out);
/* Uploads what the body changed in an operand's host copy (an input it
 * shaped, a reference it computed before the op). */
clt_status check_upload(check_f32 *b);
clt_status check_upload_i32(check_i32 *b);

/* A plain tensor of n f32 at offset 0 holding random values in [-1, 1)
 * (the op's buffers in a second run, say), not compared, freed with the
 * set. */
clt_status check_plain(check_set *s, int64_t n, clt_tensor **out);

/* A plain u8 tensor of the n bytes at host, not compared, freed with the
 * set. */
clt_status check_bytes(check_set *s, const uint8_t *host, int64_t n,
                       clt_tensor **out);

/* A 1-d view of n elements at offset into t, freed with the set. */
clt_status check_view(check_set *s, clt_tensor *t, int64_t offset, int64_t n,
                      clt_tensor **out);

/* n zeroed doubles (floats) of host memory for the reference, freed with
 * the set. */
clt_status check_doubles(check_set *s, int64_t n, double **out);
clt_status check_floats(check_set *s, int64_t n, float **out);

/* Compares every operand now (a body that goes on with more tests after
 * the op's outputs are checked); the harness does it after the body
 * otherwise. Returns CLT_ERR_INTERNAL for a changed canary. */
clt_status check_compare(check_set *s);

/* Folds err into the check's error (a statistical or determinism test
 * that failed counts as 1). */
void check_worse(check_set *s, double err);

/* A copy of `in` with OH and OW set by PyTorch's formula (pooling reads
 * no dilation, and its padding must be at most half the window);
 * CLT_ERR_INVALID_ARGUMENT for sizes that are not positive or a window
 * that does not fit. Shared by the convolution and pooling checks. */
clt_status check_window(check_set *s, const clt_window *in, bool pool,
                        clt_window *w);

/* Error of got against want, relative to max(1, |want|); a NaN on one
 * side only is infinite. */
double check_rel_err(double got, double want);
double check_max_rel_err(const float *got, const float *want, int64_t n);

#endif
