/* The checks' harness (see harness.h). */
#include "check/harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double check_rel_err(double got, double want) {
  double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
  if (isnan(got) != isnan(want)) return INFINITY;
  if (isnan(got)) return 0.0;
  return fabs(got - want) / scale;
}

double check_max_rel_err(const float *got, const float *want, int64_t n) {
  double worst = 0.0;
  for (int64_t i = 0; i < n; i++) {
    double e = check_rel_err(got[i], want[i]);
    if (e > worst) worst = e;
  }
  return worst;
}

void check_worse(check_set *s, double err) {
  if (err > s->err || isnan(err)) s->err = isnan(err) ? INFINITY : err;
}

clt_status check_upload(check_f32 *b) {
  return clt_tensor_upload(b->base, b->all);
}

clt_status check_upload_i32(check_i32 *b) {
  return clt_tensor_upload(b->base, b->all);
}

clt_status check_operand(check_set *s, int64_t n, float lo, float hi,
                         check_f32 **out) {
  if (s->f32_count == CHECK_MAX_F32)
    return clt_ctx_fail(s->ctx, CLT_ERR_INTERNAL, "check: too many operands");
  check_f32 *b = &s->f32[s->f32_count];
  b->index = s->f32_count + s->i32_count;
  s->f32_count++;
  int64_t total = n + 2 * CHECK_GUARD;
  b->n = n;
  b->all = malloc((size_t)total * sizeof(float));
  if (!b->all) return clt_ctx_fail(s->ctx, CLT_ERR_HOST_MEMORY, "check");
  b->host = b->all + CHECK_GUARD;
  clt_random_fill(b->all, total, s->seed++, lo, hi);
  int64_t base_shape[1] = {total}, shape[1] = {n};
  CLT_TRY(clt_tensor_create(s->ctx, CLT_F32, 1, base_shape, &b->base));
  CLT_TRY(clt_tensor_view(b->base, CHECK_GUARD, 1, shape, &b->t));
  CLT_TRY(check_upload(b));
  *out = b;
  return CLT_OK;
}

clt_status check_operand_i32(check_set *s, int64_t n, check_i32 **out) {
  if (s->i32_count == CHECK_MAX_I32)
    return clt_ctx_fail(s->ctx, CLT_ERR_INTERNAL,
                        "check: too many integer operands");
  check_i32 *b = &s->i32[s->i32_count];
  b->index = s->f32_count + s->i32_count;
  s->i32_count++;
  int64_t total = n + 2 * CHECK_GUARD;
  b->n = n;
  b->all = malloc((size_t)total * sizeof(int32_t));
  if (!b->all) return clt_ctx_fail(s->ctx, CLT_ERR_HOST_MEMORY, "check");
  b->host = b->all + CHECK_GUARD;
  clt_rng r = clt_rng_derive(s->seed++, 97, 0);
  for (int64_t i = 0; i < total; i++)
    b->all[i] = (int32_t)clt_rng_below(&r, 199) - 99;
  int64_t base_shape[1] = {total}, shape[1] = {n};
  CLT_TRY(clt_tensor_create(s->ctx, CLT_I32, 1, base_shape, &b->base));
  CLT_TRY(clt_tensor_view(b->base, CHECK_GUARD, 1, shape, &b->t));
  CLT_TRY(check_upload_i32(b));
  *out = b;
  return CLT_OK;
}

/* Keeps t (or destroys it if the set is full) to be freed with the set. */
static clt_status keep_tensor(check_set *s, clt_status st, clt_tensor *t,
                              clt_tensor **out) {
  if (st != CLT_OK) return st;
  if (s->extra_count == CHECK_MAX_SCRATCH) {
    clt_tensor_destroy(t);
    return clt_ctx_fail(s->ctx, CLT_ERR_INTERNAL, "check: too many tensors");
  }
  s->extra[s->extra_count++] = t;
  *out = t;
  return CLT_OK;
}

clt_status check_plain(check_set *s, int64_t n, clt_tensor **out) {
  int64_t shape[1] = {n};
  clt_tensor *t = NULL;
  float *host = malloc((n > 0 ? (size_t)n : 1) * sizeof(float));
  if (!host) return clt_ctx_fail(s->ctx, CLT_ERR_HOST_MEMORY, "check");
  clt_random_fill(host, n, s->seed++, -1.0f, 1.0f);
  clt_status st = clt_tensor_create(s->ctx, CLT_F32, 1, shape, &t);
  if (st == CLT_OK) st = clt_tensor_upload(t, host);
  free(host);
  if (st != CLT_OK) clt_tensor_destroy(t);
  return keep_tensor(s, st, st == CLT_OK ? t : NULL, out);
}

clt_status check_bytes(check_set *s, const uint8_t *host, int64_t n,
                       clt_tensor **out) {
  int64_t shape[1] = {n};
  clt_tensor *t = NULL;
  clt_status st = clt_tensor_create(s->ctx, CLT_U8, 1, shape, &t);
  if (st == CLT_OK) st = clt_tensor_upload(t, host);
  if (st != CLT_OK) clt_tensor_destroy(t);
  return keep_tensor(s, st, st == CLT_OK ? t : NULL, out);
}

clt_status check_view(check_set *s, clt_tensor *base, int64_t offset, int64_t n,
                      clt_tensor **out) {
  int64_t shape[1] = {n};
  clt_tensor *t = NULL;
  clt_status st = clt_tensor_view(base, offset, 1, shape, &t);
  return keep_tensor(s, st, t, out);
}

static clt_status scratch(check_set *s, int64_t n, size_t elem, void **out) {
  if (s->scratch_count == CHECK_MAX_SCRATCH)
    return clt_ctx_fail(s->ctx, CLT_ERR_INTERNAL, "check: too much scratch");
  void *p = calloc(n > 0 ? (size_t)n : 1, elem);
  if (!p) return clt_ctx_fail(s->ctx, CLT_ERR_HOST_MEMORY, "check");
  s->scratch[s->scratch_count++] = p;
  *out = p;
  return CLT_OK;
}

clt_status check_doubles(check_set *s, int64_t n, double **out) {
  void *p = NULL;
  CLT_TRY(scratch(s, n, sizeof(double), &p));
  *out = p;
  return CLT_OK;
}

clt_status check_floats(check_set *s, int64_t n, float **out) {
  void *p = NULL;
  CLT_TRY(scratch(s, n, sizeof(float), &p));
  *out = p;
  return CLT_OK;
}

/* Output size along one axis, or -1 where the window does not fit (the
 * floor of a negative span, which C's division would round up). */
static int64_t window_out(int64_t in, int64_t k, int64_t pad, int64_t stride,
                          int64_t dil) {
  int64_t span = in + 2 * pad - dil * (k - 1) - 1;
  return span < 0 ? -1 : span / stride + 1;
}

clt_status check_window(check_set *s, const clt_window *in, bool pool,
                        clt_window *w) {
  *w = *in;
  if (pool) w->dil_h = w->dil_w = 1;
  if (w->C < 1 || w->H < 1 || w->W < 1 || w->KH < 1 || w->KW < 1 ||
      w->pad_h < 0 || w->pad_w < 0 || w->stride_h < 1 || w->stride_w < 1 ||
      w->dil_h < 1 || w->dil_w < 1)
    return clt_ctx_fail(s->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "check: window sizes must be positive");
  if (pool && (2 * w->pad_h > w->KH || 2 * w->pad_w > w->KW))
    return clt_ctx_fail(s->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "check: pooling padding above half the window");
  w->OH = window_out(w->H, w->KH, w->pad_h, w->stride_h, w->dil_h);
  w->OW = window_out(w->W, w->KW, w->pad_w, w->stride_w, w->dil_w);
  if (w->OH < 1 || w->OW < 1)
    return clt_ctx_fail(s->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "check: a %lldx%lld window does not fit %lldx%lld",
                        (long long)w->KH, (long long)w->KW, (long long)w->H,
                        (long long)w->W);
  return CLT_OK;
}

/* The first canary of an operand of n elements that differs (got against
 * want, over the whole base), or -1. */
static int64_t changed_canary(const void *got, const void *want, size_t elem,
                              int64_t n) {
  const char *g = got, *w = want;
  for (int64_t i = 0; i < n + 2 * CHECK_GUARD; i++) {
    if (i == CHECK_GUARD) i += n;
    if (i >= n + 2 * CHECK_GUARD) break;
    if (memcmp(g + (size_t)i * elem, w + (size_t)i * elem, elem) != 0) return i;
  }
  return -1;
}

static clt_status canary_fail(check_set *s, int index, int64_t n, int64_t at,
                              double got, double want) {
  int64_t rel = at < CHECK_GUARD ? at - CHECK_GUARD : at - CHECK_GUARD - n;
  return clt_ctx_fail(s->ctx, CLT_ERR_INTERNAL,
                      "check: operand %d (%lld elements) was written outside "
                      "its range: element %lld %s it is %g, was %g",
                      index, (long long)n,
                      (long long)(rel < 0 ? -rel : rel + 1),
                      rel < 0 ? "before its start" : "past its end", got, want);
}

static clt_status compare_i32(check_set *s, check_i32 *b) {
  int64_t total = b->n + 2 * CHECK_GUARD;
  int32_t *got = malloc((size_t)total * sizeof(int32_t));
  if (!got) return clt_ctx_fail(s->ctx, CLT_ERR_HOST_MEMORY, "check");
  clt_status st = clt_tensor_download(b->base, got);
  int64_t bad =
      st == CLT_OK ? changed_canary(got, b->all, sizeof *got, b->n) : -1;
  if (bad >= 0) st = canary_fail(s, b->index, b->n, bad, got[bad], b->all[bad]);
  for (int64_t j = 0; st == CLT_OK && j < b->n; j++)
    if (got[CHECK_GUARD + j] != b->host[j]) check_worse(s, 1.0);
  free(got);
  return st;
}

static clt_status compare_f32(check_set *s, check_f32 *b) {
  int64_t total = b->n + 2 * CHECK_GUARD;
  float *got = malloc((size_t)total * sizeof(float));
  if (!got) return clt_ctx_fail(s->ctx, CLT_ERR_HOST_MEMORY, "check");
  clt_status st = clt_tensor_download(b->base, got);
  int64_t bad =
      st == CLT_OK ? changed_canary(got, b->all, sizeof *got, b->n) : -1;
  if (bad >= 0) st = canary_fail(s, b->index, b->n, bad, got[bad], b->all[bad]);
  if (st == CLT_OK)
    check_worse(s, check_max_rel_err(got + CHECK_GUARD, b->host, b->n));
  free(got);
  return st;
}

static bool same_bits(float a, float b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

/* The rounded run's output against the plain run's, rounded on the host,
 * and mode 2's copy against those halves' bits. */
static clt_status compare_rounded(check_set *s, check_f32 *b) {
  int64_t total = b->n + 2 * CHECK_GUARD;
  float *got = malloc((size_t)total * sizeof(float));
  uint16_t *half = malloc((size_t)total * sizeof(uint16_t));
  clt_status st = got && half
                      ? clt_tensor_download(b->base, got)
                      : clt_ctx_fail(s->ctx, CLT_ERR_HOST_MEMORY, "check");
  int64_t bad =
      st == CLT_OK ? changed_canary(got, b->all, sizeof *got, b->n) : -1;
  if (bad >= 0) st = canary_fail(s, b->index, b->n, bad, got[bad], b->all[bad]);
  if (st == CLT_OK && s->copy) st = clt_tensor_download(s->copy_base, half);
  bad = st == CLT_OK && s->copy
            ? changed_canary(half, s->copy_all, sizeof *half, b->n)
            : -1;
  if (bad >= 0)
    st = canary_fail(s, s->f32_count + s->i32_count, b->n, bad, half[bad],
                     s->copy_all[bad]);
  for (int64_t j = 0; st == CLT_OK && j < b->n; j++) {
    uint16_t h;
    float want;
    clt_f32_to_f16(&s->plain[j], &h, 1);
    clt_f16_to_f32(&h, &want, 1);
    float g = got[CHECK_GUARD + j];
    uint16_t gh = half[CHECK_GUARD + j];
    if (isnan(want)) { /* any NaN, in either */
      if (!isnan(g)) check_worse(s, 1.0);
      if (s->copy && !((gh & 0x7c00) == 0x7c00 && (gh & 0x3ff)))
        check_worse(s, 1.0);
      continue;
    }
    if (!same_bits(g, want)) check_worse(s, 1.0);
    if (s->copy && gh != h) check_worse(s, 1.0);
  }
  free(got);
  free(half);
  return st;
}

clt_status check_compare(check_set *s) {
  s->compared = true;
  for (int i = 0; i < s->i32_count; i++) CLT_TRY(compare_i32(s, &s->i32[i]));
  for (int i = 0; i < s->f32_count; i++) {
    check_f32 *b = &s->f32[i];
    CLT_TRY(s->round16 && b == s->rounded ? compare_rounded(s, b)
                                          : compare_f32(s, b));
  }
  return CLT_OK;
}

clt_status check_round(check_set *s, check_f32 *y, const clt_round16 **out) {
  *out = NULL;
  if (s->rounded)
    return clt_ctx_fail(s->ctx, CLT_ERR_INTERNAL,
                        "check: a second rounded operand");
  s->rounded = y;
  if (!s->round16) return CLT_OK;
  s->round = (clt_round16){s->round16, NULL};
  if (s->round16 == 2) {
    int64_t total = y->n + 2 * CHECK_GUARD, shape[1] = {y->n};
    s->copy_all = malloc((size_t)total * sizeof(uint16_t));
    if (!s->copy_all) return clt_ctx_fail(s->ctx, CLT_ERR_HOST_MEMORY, "check");
    /* Canaries from a stream of their own: the operands the body makes
     * after this call must be the plain run's. */
    clt_rng r = clt_rng_derive(s->seed, 98, 0);
    for (int64_t i = 0; i < total; i++)
      s->copy_all[i] = (uint16_t)clt_rng_below(&r, 0x7c00);
    CLT_TRY(clt_tensor_create(s->ctx, CLT_F16, 1, &total, &s->copy_base));
    CLT_TRY(clt_tensor_view(s->copy_base, CHECK_GUARD, 1, shape, &s->copy));
    CLT_TRY(clt_tensor_upload(s->copy_base, s->copy_all));
    s->round.copy = s->copy;
  }
  *out = &s->round;
  return CLT_OK;
}

static void set_free(check_set *s) {
  /* Views first: they point into the operands' buffers. */
  for (int i = s->extra_count - 1; i >= 0; i--) clt_tensor_destroy(s->extra[i]);
  for (int i = 0; i < s->f32_count; i++) {
    clt_tensor_destroy(s->f32[i].t);
    clt_tensor_destroy(s->f32[i].base);
    free(s->f32[i].all);
  }
  for (int i = 0; i < s->i32_count; i++) {
    clt_tensor_destroy(s->i32[i].t);
    clt_tensor_destroy(s->i32[i].base);
    free(s->i32[i].all);
  }
  for (int i = 0; i < s->scratch_count; i++) free(s->scratch[i]);
  clt_tensor_destroy(s->copy);
  clt_tensor_destroy(s->copy_base);
  free(s->copy_all);
}

/* One run of body in rounding mode round16 (0: plain); plain_out, where
 * not NULL, receives a copy of the rounded operand's device values (n
 * floats, malloc'ed: the caller frees them). */
static clt_status run_once(clt_context *ctx, uint64_t seed, check_body body,
                           const void *arg, int round16, float *plain,
                           float **plain_out, double *max_err) {
  check_set s;
  memset(&s, 0, sizeof s);
  s.ctx = ctx;
  s.seed = seed;
  s.round16 = round16;
  s.plain = plain;
  clt_status st = body(&s, arg);
  if (st == CLT_OK && !s.compared) st = check_compare(&s);
  if (st == CLT_OK && plain_out) {
    check_f32 *y = s.rounded;
    float *all = NULL;
    if (!y)
      st = clt_ctx_fail(ctx, CLT_ERR_INTERNAL,
                        "check: the body named no rounded operand");
    else if (!(all = malloc((size_t)(y->n + 2 * CHECK_GUARD) * sizeof(float))))
      st = clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "check");
    else
      st = clt_tensor_download(y->base, all);
    if (st == CLT_OK) {
      memmove(all, all + CHECK_GUARD, (size_t)y->n * sizeof(float));
      *plain_out = all;
    } else {
      free(all);
    }
  }
  if (st == CLT_OK && round16 && !s.rounded)
    st = clt_ctx_fail(ctx, CLT_ERR_INTERNAL,
                      "check: the body named no rounded operand");
  *max_err = st == CLT_OK ? s.err : INFINITY;
  set_free(&s);
  return st;
}

clt_status check_run(clt_context *ctx, uint64_t seed, check_body body,
                     const void *arg, double *max_err) {
  return run_once(ctx, seed, body, arg, 0, NULL, NULL, max_err);
}

clt_status check_run_rounded(clt_context *ctx, uint64_t seed, check_body body,
                             const void *arg, int round16, double *max_err) {
  *max_err = INFINITY;
  if (round16 < 0 || round16 > 2)
    return clt_ctx_fail(ctx, CLT_ERR_INTERNAL, "check: rounding mode %d",
                        round16);
  if (!round16) return check_run(ctx, seed, body, arg, max_err);
  float *plain = NULL;
  double e_plain = INFINITY;
  clt_status st = run_once(ctx, seed, body, arg, 0, NULL, &plain, &e_plain);
  if (st == CLT_OK)
    st = run_once(ctx, seed, body, arg, round16, plain, NULL, max_err);
  free(plain);
  if (st != CLT_OK)
    *max_err = INFINITY;
  else if (e_plain > *max_err)
    *max_err = e_plain;
  return st;
}
