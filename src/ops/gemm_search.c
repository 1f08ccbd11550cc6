/* The measured search over CLBlast's GEMM parameters, per device (the
 * CLBlast part of the measured plans): its own tuner would take hours, so
 * this times a handful of sets on the products training runs.
 *
 * CLBlast runs a GEMM with one of two kernels: XgemmDirect (one launch, no
 * copies) below XGEMM_MIN_INDIRECT_SIZE^3 = m*n*k, Xgemm (on copies padded
 * to its tiles) above. The search forces each path in turn and times each
 * candidate set of that kernel on every product; the fastest set of each
 * kernel wins, then the threshold that, product by product, takes the
 * faster of the two. Each product is timed in both of its forms (row-major
 * and the column-major C^T, clt_gemm_strided_batched_colmajor), its time
 * the faster's: the measured plans then run it in that form, and the
 * row-major form alone would charge Xgemm for copies of C that the plans
 * avoid. CLBlast compiles a program per parameter set (and keeps it), so
 * each set costs one compile; sets are timed one after the other, the
 * parameters in force first (CLBlast cannot go back to them once
 * overridden). */
#include "ops/gemm_search.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/words.h"
#include "runtime/plan_store.h"
#include "tensor/tensor.h"

#define N CLT_NO_TRANS
#define T CLT_TRANS
static const clt_gemm_search_shape default_shapes[] = {
    /* The MLP (784-128-10) at batch 64 and 256: forward, data and weight
     * gradients. */
    {N, T, 64, 128, 784},   {N, N, 64, 784, 128},   {T, N, 128, 784, 64},
    {N, T, 256, 128, 784},  {N, N, 256, 784, 128},  {T, N, 128, 784, 256},
    /* The CNN's second convolution over a batch of 64 (11x11 outputs). */
    {N, N, 64, 7744, 288},  {N, T, 64, 288, 7744},  {T, N, 288, 7744, 64},
    /* Its first: 32 filters of 3x3 over 26x26 outputs, per image. */
    {N, N, 32, 676, 9},     {N, T, 32, 9, 676},
    {N, N, 256, 256, 256},  {N, N, 512, 512, 512},
};
#undef N
#undef T

/* XgemmDirect: WGD tiles of MDIMCD x NDIMCD work-items, vector widths. */
#define DIRECT_NAME_LIST                                                       \
  "KWID", "MDIMAD", "MDIMCD", "NDIMBD", "NDIMCD", "PADA", "PADB", "VWMD",     \
      "VWND", "WGD"
#define DIRECT_NAMES {DIRECT_NAME_LIST}
static const clt_clblast_set default_direct[] = {
    {"in force", "XgemmDirect", 0, {0}, {0}},
    {"32, 4x4 items, vw 8", "XgemmDirect", 10, DIRECT_NAMES,
     {2, 4, 4, 4, 4, 0, 0, 8, 8, 32}},
    {"16, 4x4 items, vw 4", "XgemmDirect", 10, DIRECT_NAMES,
     {2, 4, 4, 4, 4, 0, 0, 4, 4, 16}},
    {"32, 8x8 items, vw 4", "XgemmDirect", 10, DIRECT_NAMES,
     {2, 8, 8, 8, 8, 1, 1, 4, 4, 32}},
    {"64, 16x16 items, vw 4", "XgemmDirect", 10, DIRECT_NAMES,
     {2, 16, 16, 16, 16, 1, 1, 4, 4, 64}},
};

/* Xgemm: MWG x NWG tiles, MDIMC x NDIMC work-items, local memory (SA, SB)
 * or not, vector widths. */
#define INDIRECT_NAME_LIST                                                     \
  "GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB", "NDIMC",   \
      "NWG", "SA", "SB", "STRM", "STRN", "VWM", "VWN"
#define INDIRECT_NAMES {INDIRECT_NAME_LIST}
static const clt_clblast_set default_indirect[] = {
    {"in force", "Xgemm", 0, {0}, {0}},
    {"32x32, 4x4 items, vw 8", "Xgemm", 16, INDIRECT_NAMES,
     {0, 1, 32, 2, 4, 4, 32, 4, 4, 32, 0, 0, 0, 0, 8, 8}},
    {"64x64, 8x8 items, local, vw 4", "Xgemm", 16, INDIRECT_NAMES,
     {0, 1, 16, 2, 8, 8, 64, 8, 8, 64, 1, 1, 0, 0, 4, 4}},
    {"64x64, 16x16 items, local, vw 2", "Xgemm", 16, INDIRECT_NAMES,
     {0, 1, 32, 2, 16, 16, 64, 16, 16, 64, 1, 1, 0, 0, 2, 2}},
    {"128x128, 16x16 items, local, vw 4", "Xgemm", 16, INDIRECT_NAMES,
     {0, 1, 16, 2, 16, 16, 128, 16, 16, 128, 1, 1, 0, 0, 4, 4}},
};

static const clt_gemm_search_space default_space = {
    default_shapes,
    (int)(sizeof default_shapes / sizeof default_shapes[0]),
    default_direct,
    default_indirect,
    (int)(sizeof default_direct / sizeof default_direct[0]),
    (int)(sizeof default_indirect / sizeof default_indirect[0]),
    3};

const clt_gemm_search_space *clt_gemm_search_default_space(void) {
  return &default_space;
}

/* Thresholds tried between the kernels (XGEMM_MIN_INDIRECT_SIZE): 0 sends
 * everything to Xgemm, the last everything to XgemmDirect. */
static const int64_t thresholds[] = {0,   32,  64,  96,   128,  192,
                                     256, 384, 512, 704, 1024, 65536};

static bool force_path(clt_context *ctx, int64_t threshold) {
  clt_clblast_set s = {"search", "GemmRoutine", 1,
                       {"XGEMM_MIN_INDIRECT_SIZE"}, {(size_t)threshold}};
  return clt_clblast_apply(ctx, &s);
}

typedef struct search_bufs {
  clt_tensor *a, *b, *c;
  float **ref; /* per product: the first set's result */
  float *got;
} search_bufs;

static clt_status run_product(clt_context *ctx, search_bufs *sb,
                              const clt_gemm_search_shape *p, bool colmajor) {
  clt_tensor a = clt_tensor_slice_1d(sb->a, 0, p->m * p->k);
  clt_tensor b = clt_tensor_slice_1d(sb->b, 0, p->k * p->n);
  clt_tensor c = clt_tensor_slice_1d(sb->c, 0, p->m * p->n);
  return (colmajor ? clt_gemm_strided_batched_colmajor
                   : clt_gemm_strided_batched)(ctx, p->ta, p->tb, p->m, p->n,
                                               p->k, 1.0f, &a, 0, &b, 0, 0.0f,
                                               &c, 0, 1);
}

/* Whether the product's result matches the reference (taking it when
 * there is none yet). */
static clt_status check_product(clt_context *ctx, search_bufs *sb, int i,
                                const clt_gemm_search_shape *p, bool *ok) {
  int64_t mn = p->m * p->n;
  clt_tensor c = clt_tensor_slice_1d(sb->c, 0, mn);
  float *dst = sb->ref[i] ? sb->got : malloc((size_t)mn * sizeof(float));
  if (!dst) return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "GEMM search");
  CLT_TRY(clt_tensor_download(&c, dst));
  *ok = true;
  if (!sb->ref[i]) {
    sb->ref[i] = dst;
    return CLT_OK;
  }
  double max = 1.0;
  for (int64_t j = 0; j < mn; j++)
    if (fabs(sb->ref[i][j]) > max) max = fabs(sb->ref[i][j]);
  for (int64_t j = 0; j < mn && *ok; j++)
    *ok = fabs((double)sb->got[j] - sb->ref[i][j]) <= 1e-3 * max;
  return CLT_OK;
}

/* Times one set on every product in both forms: row->seconds, the sum of
 * each product's fastest run in either (into per_product), or
 * row->rejected. */
static clt_status time_set(clt_context *ctx, const clt_gemm_search_space *sp,
                           search_bufs *sb, const clt_clblast_set *set,
                           clt_gemm_tune_row *row, double *per_product) {
  snprintf(row->kernel, sizeof row->kernel, "%s", set->kernel);
  snprintf(row->label, sizeof row->label, "%s", set->label);
  row->seconds = 0.0;
  row->rejected = !clt_clblast_apply(ctx, set);
  for (int i = 0; !row->rejected && i < sp->shape_count; i++) {
    const clt_gemm_search_shape *p = &sp->shapes[i];
    double best = INFINITY;
    for (int form = 0; form < 2 && !row->rejected; form++) {
      bool ok = false;
      /* The first run compiles the set. */
      clt_status st = run_product(ctx, sb, p, form == 1);
      if (st == CLT_OK) st = check_product(ctx, sb, i, p, &ok);
      if (st != CLT_OK || !ok) {
        clt_ctx_log(ctx, CLT_LOG_INFO, "GEMM search: %s '%s'%s %s",
                    set->kernel, set->label, form ? " (column-major)" : "",
                    st != CLT_OK ? clt_context_last_error(ctx)
                                 : "gave other numbers");
        clt_err_clear(&ctx->err);
        row->rejected = true;
        break;
      }
      for (int r = 0; r < sp->repeats; r++) {
        double t0 = clt_now_seconds();
        CLT_TRY(run_product(ctx, sb, p, form == 1));
        CLT_TRY(clt_context_finish(ctx));
        double dt = clt_now_seconds() - t0;
        if (dt < best) best = dt;
      }
    }
    per_product[i] = best;
    row->seconds += best;
  }
  return CLT_OK;
}

static void describe(char *text, size_t len, size_t *w,
                     const clt_clblast_set *set) {
  if (set->count == 0) return;
  *w += (size_t)snprintf(text + *w, len - *w, "%s", set->kernel);
  for (int i = 0; i < set->count && *w < len; i++)
    *w += (size_t)snprintf(text + *w, len - *w, " %s=%zu", set->names[i],
                           set->values[i]);
  if (*w < len) *w += (size_t)snprintf(text + *w, len - *w, "\n");
}

static int best_row(const clt_gemm_tune_row *rows, int first, int count) {
  int best = -1;
  for (int i = first; i < first + count; i++)
    if (!rows[i].rejected && (best < 0 || rows[i].seconds < rows[best].seconds))
      best = i;
  return best;
}

clt_status clt_gemm_search_run(clt_context *ctx,
                               const clt_gemm_search_space *sp,
                               clt_gemm_tune_report *r) {
  memset(r, 0, sizeof *r);
  int sets = sp->direct_count + sp->indirect_count;
  if (sets > CLT_GEMM_TUNE_MAX_ROWS || sp->shape_count < 1 ||
      sp->direct_count < 1 || sp->indirect_count < 1)
    return clt_ctx_fail(ctx, CLT_ERR_INTERNAL, "GEMM search: %d sets", sets);
  double t_start = clt_now_seconds();
  int64_t max_a = 1, max_b = 1, max_c = 1;
  for (int i = 0; i < sp->shape_count; i++) {
    const clt_gemm_search_shape *p = &sp->shapes[i];
    if (p->m * p->k > max_a) max_a = p->m * p->k;
    if (p->k * p->n > max_b) max_b = p->k * p->n;
    if (p->m * p->n > max_c) max_c = p->m * p->n;
  }
  /* The state first: a GEMM must not apply the stored or seed sets now. */
  clt_gemm_state_set(ctx, 0, NULL);
  search_bufs sb = {0};
  double *times = calloc((size_t)(sets * sp->shape_count), sizeof *times);
  sb.ref = calloc((size_t)sp->shape_count, sizeof *sb.ref);
  sb.got = malloc((size_t)max_c * sizeof(float));
  float *fill = malloc((size_t)(max_a > max_b ? max_a : max_b) * sizeof(float));
  clt_status st = times && sb.ref && sb.got && fill
                      ? CLT_OK
                      : clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "GEMM search");
  if (st == CLT_OK) st = clt_tensor_create(ctx, CLT_F32, 1, &max_a, &sb.a);
  if (st == CLT_OK) st = clt_tensor_create(ctx, CLT_F32, 1, &max_b, &sb.b);
  if (st == CLT_OK) st = clt_tensor_create(ctx, CLT_F32, 1, &max_c, &sb.c);
  int64_t nf = max_a > max_b ? max_a : max_b;
  for (int64_t i = 0; st == CLT_OK && i < nf; i++)
    fill[i] = (float)((i * 7919) % 2001) / 1000.0f - 1.0f;
  if (st == CLT_OK) {
    clt_tensor a = clt_tensor_slice_1d(sb.a, 0, max_a);
    clt_tensor b = clt_tensor_slice_1d(sb.b, 0, max_b);
    st = clt_tensor_upload(&a, fill);
    if (st == CLT_OK) st = clt_tensor_upload(&b, fill);
  }
  /* Direct first, then indirect: each path forced by the threshold. */
  if (st == CLT_OK && !force_path(ctx, 65536))
    st = clt_ctx_fail(ctx, CLT_ERR_CLBLAST,
                      "GEMM search: CLBlast refused a GemmRoutine override");
  for (int i = 0; st == CLT_OK && i < sp->direct_count; i++)
    st = time_set(ctx, sp, &sb, &sp->direct[i], &r->rows[i],
                  times + (size_t)i * (size_t)sp->shape_count);
  if (st == CLT_OK && !force_path(ctx, 0))
    st = clt_ctx_fail(ctx, CLT_ERR_CLBLAST,
                      "GEMM search: CLBlast refused a GemmRoutine override");
  for (int i = 0; st == CLT_OK && i < sp->indirect_count; i++) {
    int row = sp->direct_count + i;
    st = time_set(ctx, sp, &sb, &sp->indirect[i], &r->rows[row],
                  times + (size_t)row * (size_t)sp->shape_count);
  }
  r->count = sets;
  r->shapes = sp->shape_count;
  int d = st == CLT_OK ? best_row(r->rows, 0, sp->direct_count) : -1;
  int x = st == CLT_OK ? best_row(r->rows, sp->direct_count,
                                  sp->indirect_count)
                       : -1;
  if (st == CLT_OK && (d < 0 || x < 0))
    st = clt_ctx_fail(ctx, CLT_ERR_CLBLAST,
                      "GEMM search: no parameter set of %s ran correctly",
                      d < 0 ? "XgemmDirect" : "Xgemm");
  if (st == CLT_OK) {
    /* The threshold: each product takes the kernel its size selects. The
     * one chosen makes the products slower than each one's faster kernel
     * by the least factor, on the geometric mean: a sum of seconds would
     * let the largest products decide alone, and a small product (the
     * MLP's, run thousands of times an epoch) pay for them (the first
     * search chose "all direct" on POCL for the convolutions' sake, and
     * the MLP at batch 256 trained 1.6x slower). */
    double best_cost = INFINITY, best_total = INFINITY;
    for (size_t t = 0; t < sizeof thresholds / sizeof thresholds[0]; t++) {
      double total = 0.0, cost = 0.0, cube = (double)thresholds[t];
      cube = cube * cube * cube;
      for (int i = 0; i < sp->shape_count; i++) {
        const clt_gemm_search_shape *p = &sp->shapes[i];
        bool direct = (double)p->m * (double)p->n * (double)p->k < cube;
        double td = times[(size_t)d * (size_t)sp->shape_count + (size_t)i];
        double tx = times[(size_t)x * (size_t)sp->shape_count + (size_t)i];
        double chosen = direct ? td : tx;
        total += chosen;
        cost += log(chosen / fmin(td, tx));
      }
      if (cost < best_cost - 1e-9) {
        best_cost = cost;
        best_total = total;
        r->indirect_min = thresholds[t];
      }
    }
    r->seconds_chosen = best_total;
    r->seconds_first_direct = r->rows[0].seconds;
    r->seconds_first_indirect = r->rows[sp->direct_count].seconds;
    r->rows[d].chosen = r->rows[x].chosen = true;
    const clt_clblast_set *sd = &sp->direct[d];
    const clt_clblast_set *sx = &sp->indirect[x - sp->direct_count];
    clt_clblast_apply(ctx, sd);
    clt_clblast_apply(ctx, sx);
    force_path(ctx, r->indirect_min);
    /* Stored: the sets by value (a set left "in force" is not written, so
     * CLBlast's database applies to it in later runs). */
    char text[2048];
    size_t w = (size_t)snprintf(text, sizeof text, "indirect_min %lld\n",
                                (long long)r->indirect_min);
    describe(text, sizeof text, &w, sd);
    describe(text, sizeof text, &w, sx);
    if (w < sizeof text) clt_plan_store_save(ctx, CLT_CLBLAST_STORE_KEY, text);
    /* Batched products on the indirect path go one by one (gemm.c): with
     * everything indirect (0), all of them. The plans' keys name the
     * search as a later context that loads it will. */
    clt_gemm_state_set(ctx, r->indirect_min > 0 ? r->indirect_min : 1,
                       text);
  }
  r->search_seconds = clt_now_seconds() - t_start;
  for (int i = 0; sb.ref && i < sp->shape_count; i++) free(sb.ref[i]);
  free(sb.ref);
  free(sb.got);
  free(fill);
  free(times);
  clt_tensor_destroy(sb.a);
  clt_tensor_destroy(sb.b);
  clt_tensor_destroy(sb.c);
  return st;
}

/* ---- more candidate sets, from text ------------------------------------- */

/* Each kernel's parameters, NULL-terminated. */
static const char *const direct_names[] = {DIRECT_NAME_LIST, NULL};
static const char *const indirect_names[] = {INDIRECT_NAME_LIST, NULL};
#define DIRECT_COUNT ((int)(sizeof direct_names / sizeof direct_names[0]) - 1)
#define INDIRECT_COUNT                                                         \
  ((int)(sizeof indirect_names / sizeof indirect_names[0]) - 1)

/* The largest value a parameter may be given: CLBlast's tile sizes and
 * work-group dimensions are far below it. */
#define MAX_PARAM_VALUE 4096

/* One line "KERNEL NAME=VALUE ... [# label]" (the comment cut off) into
 * set, its label into label; every parameter of the kernel exactly once. */
static clt_status parse_extra(clt_context *ctx, char *line, int lineno,
                              const char *comment, clt_clblast_set *set,
                              char *label, size_t label_len) {
  memset(set, 0, sizeof *set);
  char *save = NULL, *word = strtok_r(line, " \t\r", &save);
  bool direct = strcmp(word, "XgemmDirect") == 0;
  if (!direct && strcmp(word, "Xgemm") != 0)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "GEMM sets, line %d: '%s' is not a kernel (Xgemm or "
                        "XgemmDirect)",
                        lineno, word);
  const char *const *names = direct ? direct_names : indirect_names;
  int count = direct ? DIRECT_COUNT : INDIRECT_COUNT;
  set->kernel = direct ? "XgemmDirect" : "Xgemm";
  set->count = count;
  bool seen[CLT_CLBLAST_MAX_PARAMS] = {false};
  while ((word = strtok_r(NULL, " \t\r", &save))) {
    char *eq = strchr(word, '=');
    int j = 0;
    if (eq) {
      *eq = '\0';
      while (j < count && strcmp(names[j], word) != 0) j++;
    }
    if (!eq || j == count) {
      char all[200] = "";
      clt_join_words(names, " ", all, sizeof all);
      return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                          "GEMM sets, line %d: '%s' is not NAME=VALUE with a "
                          "parameter of %s (%s)",
                          lineno, word, set->kernel, all);
    }
    char *end = NULL;
    unsigned long v = strtoul(eq + 1, &end, 10);
    if (!eq[1] || *end || eq[1] == '-' || v > MAX_PARAM_VALUE)
      return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                          "GEMM sets, line %d: %s=%s is not a number from 0 "
                          "to %d",
                          lineno, word, eq + 1, MAX_PARAM_VALUE);
    if (seen[j])
      return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                          "GEMM sets, line %d: %s given twice", lineno, word);
    seen[j] = true;
    set->names[j] = names[j];
    set->values[j] = (size_t)v;
  }
  for (int j = 0; j < count; j++)
    if (!seen[j])
      return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                          "GEMM sets, line %d: %s needs all of its %d "
                          "parameters; %s is missing",
                          lineno, set->kernel, count, names[j]);
  if (comment && *comment)
    snprintf(label, label_len, "%s", comment);
  else
    snprintf(label, label_len, "extra set, line %d", lineno);
  set->label = label;
  return CLT_OK;
}

/* Trims spaces off both ends of s, in place. */
static char *trim(char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\r') s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
    s[--n] = '\0';
  return s;
}

clt_status clt_gemm_search_add_sets(clt_context *ctx,
                                    const clt_gemm_search_space *base,
                                    const char *text,
                                    clt_gemm_extra_space *out) {
  memset(out, 0, sizeof *out);
  out->space = *base;
  int room = CLT_GEMM_TUNE_MAX_ROWS - base->direct_count - base->indirect_count;
  if (base->direct_count > CLT_GEMM_TUNE_MAX_ROWS ||
      base->indirect_count > CLT_GEMM_TUNE_MAX_ROWS || room < 0)
    return clt_ctx_fail(ctx, CLT_ERR_INTERNAL, "GEMM search: %d sets",
                        base->direct_count + base->indirect_count);
  memcpy(out->direct, base->direct,
         (size_t)base->direct_count * sizeof *out->direct);
  memcpy(out->indirect, base->indirect,
         (size_t)base->indirect_count * sizeof *out->indirect);
  int nd = base->direct_count, nx = base->indirect_count, extra = 0;
  size_t len = text ? strlen(text) : 0;
  char *copy = malloc(len + 1);
  if (!copy) return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "GEMM sets");
  memcpy(copy, text ? text : "", len + 1);
  clt_status st = CLT_OK;
  int lineno = 0;
  for (char *line = copy; st == CLT_OK && line;) {
    char *next = strchr(line, '\n');
    if (next) *next++ = '\0';
    lineno++;
    char *hash = strchr(line, '#');
    char *comment = NULL;
    if (hash) {
      *hash = '\0';
      comment = trim(hash + 1);
    }
    char *body = trim(line);
    line = next;
    if (!*body) continue;
    if (extra == room) {
      st = clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "GEMM sets, line %d: at most %d sets may be added "
                        "(the search holds %d, %d of them its own)",
                        lineno, room, CLT_GEMM_TUNE_MAX_ROWS,
                        base->direct_count + base->indirect_count);
      break;
    }
    clt_clblast_set set;
    st = parse_extra(ctx, body, lineno, comment, &set, out->labels[extra],
                     sizeof out->labels[extra]);
    if (st != CLT_OK) break;
    if (strcmp(set.kernel, "XgemmDirect") == 0)
      out->direct[nd++] = set;
    else
      out->indirect[nx++] = set;
    extra++;
  }
  free(copy);
  out->space.direct = out->direct;
  out->space.indirect = out->indirect;
  out->space.direct_count = nd;
  out->space.indirect_count = nx;
  out->added = extra;
  return st;
}

CLT_API clt_status clt_gemm_tune(clt_context *ctx,
                                 clt_gemm_tune_report *report) {
  return clt_gemm_search_run(ctx, &default_space, report);
}

CLT_API clt_status clt_gemm_tune_sets(clt_context *ctx, const char *sets,
                                      clt_gemm_tune_report *report) {
  memset(report, 0, sizeof *report);
  clt_gemm_extra_space *x = malloc(sizeof *x);
  if (!x) return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "GEMM sets");
  clt_status st = clt_gemm_search_add_sets(ctx, &default_space, sets, x);
  if (st == CLT_OK) st = clt_gemm_search_run(ctx, &x->space, report);
  free(x);
  return st;
}
