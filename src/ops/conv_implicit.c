/* Convolutions as implicit GEMMs (conv_implicit.h, cl/igemm.cl). */
#include "ops/conv_implicit.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "ops/gemm_mma.h"
#include "ops/gemm_tuning.h"

/* cl/igemm.cl's IG_BM, IG_BN and IG_TM, IG_TN (fp32) or IG_WM, IG_WN
 * (fp16: warps, cl/mma.cl's configurations). */
static const struct {
  const char *name;
  int bm, bn, tm, tn, wm, wn;
} configs[CLT_IGEMM_CONFIGS] = {
    {"64x64", 64, 64, 4, 4, 0, 0},
    {"16x64", 16, 64, 2, 4, 0, 0},
    {"128x128", 128, 128, 8, 8, 0, 0},
    {"fp16 64x64", 64, 64, 0, 0, 2, 2},
    {"fp16 128x64", 128, 64, 0, 0, 2, 2},
    {"fp16 128x128", 128, 128, 0, 0, 2, 4},
};

/* cl/igemm.cl's k block in the fp32 configurations (the fp16 ones: 32);
 * a weight gradient's chunks are multiples of it. */
#define IG_BK 16

enum { K_FWD, K_DX, K_DW, K_COUNT };
static const char *const kernel_names[K_COUNT] = {"igemm_fwd", "igemm_dx",
                                                  "igemm_dw"};

typedef struct igemm_state {
  cl_program programs[CLT_IGEMM_CONFIGS];
  cl_kernel kernels[CLT_IGEMM_CONFIGS][K_COUNT];
} igemm_state;

const char *clt_igemm_config_name(int config) {
  return config >= 0 && config < CLT_IGEMM_CONFIGS ? configs[config].name
                                                   : "?";
}

bool clt_igemm_config_fp16(int config) {
  return config >= 0 && config < CLT_IGEMM_CONFIGS && configs[config].wm > 0;
}

/* Work-items per group. */
static size_t threads_of(int config) {
  if (configs[config].wm > 0)
    return (size_t)configs[config].wm * (size_t)configs[config].wn * 32;
  return (size_t)(configs[config].bm / configs[config].tm) *
         (size_t)(configs[config].bn / configs[config].tn);
}

static void state_free(void *p) {
  igemm_state *st = p;
  if (!st) return;
  for (int i = 0; i < CLT_IGEMM_CONFIGS; i++) {
    for (int k = 0; k < K_COUNT; k++)
      if (st->kernels[i][k]) clReleaseKernel(st->kernels[i][k]);
    if (st->programs[i]) clReleaseProgram(st->programs[i]);
  }
  free(st);
}

/* Kernel `which` of configuration `config`, its program built on first
 * use. */
static clt_status kernel_of(clt_context *ctx, int config, int which,
                            cl_kernel *out) {
  if (config < 0 || config >= CLT_IGEMM_CONFIGS)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "implicit convolution: no tile configuration %d",
                        config);
  clt_gemm_state *gs = clt_gemm_state_get(ctx);
  if (!gs)
    return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "implicit convolution");
  if (!gs->igemm) {
    gs->igemm = calloc(1, sizeof(igemm_state));
    if (!gs->igemm)
      return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "implicit convolution");
    gs->igemm_free = state_free;
  }
  igemm_state *st = gs->igemm;
  if (!st->programs[config]) {
    char extra[256], mma[96] = "";
    if (configs[config].wm > 0) /* the fp16 route's instruction */
      CLT_TRY(clt_fp16_build_flags(ctx, mma, sizeof mma));
    if (configs[config].wm > 0)
      snprintf(extra, sizeof extra,
               "%s -DIG_BK=32 -DIG_BM=%d -DIG_BN=%d -DIG_WM=%d -DIG_WN=%d",
               mma, configs[config].bm, configs[config].bn,
               configs[config].wm, configs[config].wn);
    else
      snprintf(extra, sizeof extra,
               "-DIG_BM=%d -DIG_BN=%d -DIG_TM=%d -DIG_TN=%d",
               configs[config].bm, configs[config].bn, configs[config].tm,
               configs[config].tn);
    CLT_TRY(clt_program_build_extra(ctx, "igemm", extra,
                                    &st->programs[config]));
  }
  if (!st->kernels[config][which]) {
    cl_int rc;
    cl_kernel k =
        clCreateKernel(st->programs[config], kernel_names[which], &rc);
    if (rc != CL_SUCCESS)
      return clt_ctx_cl_fail(ctx, rc, kernel_names[which]);
    st->kernels[config][which] = k;
  }
  *out = st->kernels[config][which];
  return CLT_OK;
}

/* The kernels take int sizes and offsets. */
static bool fits_int(const clt_tensor *t) {
  return t->offset + t->numel <= INT_MAX;
}

/* Every tensor holds what the geometry needs and stays within ints. */
static clt_status check(clt_context *ctx, const char *what,
                        const clt_tensor *const *t, const int64_t *need,
                        const char *const *names, int count) {
  for (int i = 0; i < count; i++) {
    if (!t[i]) continue;
    if (t[i]->dtype != CLT_F32)
      return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT, "%s: %s must be f32",
                          what, names[i]);
    if (t[i]->numel < need[i])
      return clt_ctx_fail(ctx, CLT_ERR_SHAPE,
                          "%s: %s holds %lld floats, the shape needs %lld",
                          what, names[i], (long long)t[i]->numel,
                          (long long)need[i]);
    if (!fits_int(t[i]))
      return clt_ctx_fail(ctx, CLT_ERR_UNSUPPORTED,
                          "%s: %s reaches past 2^31 elements", what,
                          names[i]);
  }
  return CLT_OK;
}

#define GEOMETRY(w)                                                           \
  KI((w)->C), KI((w)->H), KI((w)->W), KI((w)->KH), KI((w)->KW), KI((w)->OH),  \
      KI((w)->OW), KI((w)->pad_h), KI((w)->pad_w), KI((w)->stride_h),         \
      KI((w)->stride_w), KI((w)->dil_h), KI((w)->dil_w)

/* C [m, n] in tiles of configuration `config`, `chunks` slices deep. */
static clt_status launch(clt_context *ctx, int config, int which, int64_t m,
                         int64_t n, int64_t chunks, const clt_karg *args,
                         int nargs) {
  cl_kernel kernel = NULL;
  CLT_TRY(kernel_of(ctx, config, which, &kernel));
  int bm = configs[config].bm, bn = configs[config].bn;
  size_t threads = threads_of(config);
  size_t global[3] = {(size_t)((n + bn - 1) / bn) * threads,
                      (size_t)((m + bm - 1) / bm), (size_t)chunks};
  size_t local[3] = {threads, 1, 1};
  return clt_kernel_run_named(ctx, kernel, kernel_names[which], 3, global,
                              local, args, nargs);
}

static bool window_ok(const clt_window *w, int64_t batch, int64_t filters) {
  return batch > 0 && filters > 0 && w->C > 0 && w->H > 0 && w->W > 0 &&
         w->KH > 0 && w->KW > 0 && w->OH > 0 && w->OW > 0 &&
         w->stride_h > 0 && w->stride_w > 0 && w->dil_h > 0 && w->dil_w > 0;
}

clt_status clt_conv_implicit_forward(clt_context *ctx, int config,
                                     clt_tensor *y, const clt_tensor *x,
                                     const clt_tensor *weight,
                                     const clt_tensor *bias, int64_t batch,
                                     int64_t filters, const clt_window *w,
                                     bool relu, const clt_round16 *round) {
  const char *what = "implicit convolution (forward)";
  if (!window_ok(w, batch, filters))
    return clt_ctx_fail(ctx, CLT_ERR_SHAPE, "%s: empty geometry", what);
  const clt_tensor *t[] = {y, x, weight, bias};
  const int64_t need[] = {batch * filters * w->OH * w->OW,
                          batch * w->C * w->H * w->W,
                          filters * w->C * w->KH * w->KW, filters};
  const char *const names[] = {"y", "x", "the weight", "the bias"};
  CLT_TRY(check(ctx, what, t, need, names, 4));
  const clt_karg args[] = {KT(y),      KT(x),    KT(weight),
                           KT(bias ? bias : weight), KI(bias != NULL),
                           KI(relu),   KI(batch), KI(filters), GEOMETRY(w),
                           KR(round, y), KI(clt_round16_mode(round))};
  return launch(ctx, config, K_FWD, filters, batch * w->OH * w->OW, 1, args,
                (int)(sizeof args / sizeof args[0]));
}

clt_status clt_conv_implicit_dgrad(clt_context *ctx, int config,
                                   clt_tensor *dx, const clt_tensor *dy,
                                   const clt_tensor *weight, int64_t batch,
                                   int64_t filters, const clt_window *w,
                                   bool accumulate, const clt_round16 *round) {
  const char *what = "implicit convolution (data gradient)";
  if (!window_ok(w, batch, filters))
    return clt_ctx_fail(ctx, CLT_ERR_SHAPE, "%s: empty geometry", what);
  const clt_tensor *t[] = {dx, dy, weight};
  const int64_t need[] = {batch * w->C * w->H * w->W,
                          batch * filters * w->OH * w->OW,
                          filters * w->C * w->KH * w->KW};
  const char *const names[] = {"dx", "dy", "the weight"};
  CLT_TRY(check(ctx, what, t, need, names, 3));
  const clt_karg args[] = {KT(dx),          KT(dy),   KT(weight),
                           KI(accumulate),  KI(batch), KI(filters),
                           GEOMETRY(w),     KR(round, dx),
                           KI(clt_round16_mode(round))};
  return launch(ctx, config, K_DX, w->C, batch * w->H * w->W, 1, args,
                (int)(sizeof args / sizeof args[0]));
}

/* The k range's chunks: *kchunk (a multiple of the kernel's k block) and
 * how many there are. */
static int64_t chunks_of(int splits, int64_t batch, const clt_window *w,
                         int64_t *kchunk) {
  int64_t k = batch * w->OH * w->OW;
  if (splits < 1) splits = 1;
  int64_t c = (k + splits - 1) / splits;
  c = (c + IG_BK - 1) / IG_BK * IG_BK;
  *kchunk = c;
  return (k + c - 1) / c;
}

int64_t clt_conv_implicit_workspace(int splits, int64_t batch,
                                    int64_t filters, const clt_window *w) {
  int64_t kchunk, chunks = chunks_of(splits, batch, w, &kchunk);
  return chunks > 1 ? chunks * filters * w->C * w->KH * w->KW : 0;
}

int64_t clt_conv_implicit_wgrad_tiles(int config, int64_t filters,
                                      const clt_window *w) {
  if (config < 0 || config >= CLT_IGEMM_CONFIGS) return 0;
  int64_t bm = configs[config].bm, bn = configs[config].bn;
  return ((filters + bm - 1) / bm) * ((w->C * w->KH * w->KW + bn - 1) / bn);
}

clt_status clt_conv_implicit_wgrad(clt_context *ctx, int config, int splits,
                                   clt_tensor *dw, clt_tensor *work,
                                   const clt_tensor *x, const clt_tensor *dy,
                                   int64_t batch, int64_t filters,
                                   const clt_window *w) {
  const char *what = "implicit convolution (weight gradient)";
  if (!window_ok(w, batch, filters) || splits < 1 || splits > 65535)
    return clt_ctx_fail(ctx, CLT_ERR_SHAPE,
                        "%s: empty geometry or %d chunks", what, splits);
  int64_t kchunk, chunks = chunks_of(splits, batch, w, &kchunk);
  int64_t n = w->C * w->KH * w->KW;
  if (chunks > 1 && !work)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "%s: %lld chunks need a workspace", what,
                        (long long)chunks);
  const clt_tensor *t[] = {dw, x, dy, chunks > 1 ? work : NULL};
  const int64_t need[] = {filters * n, batch * w->C * w->H * w->W,
                          batch * filters * w->OH * w->OW,
                          chunks * filters * n};
  const char *const names[] = {"dW", "x", "dy", "the workspace"};
  CLT_TRY(check(ctx, what, t, need, names, 4));
  clt_tensor *out = chunks > 1 ? work : dw;
  const clt_karg args[] = {KT(out),    KT(x),       KT(dy), KI(kchunk),
                           KI(batch),  KI(filters), GEOMETRY(w)};
  CLT_TRY(launch(ctx, config, K_DW, filters, n, chunks, args,
                 (int)(sizeof args / sizeof args[0])));
  if (chunks == 1) return CLT_OK;
  return clt_sum_slices(ctx, dw, work, filters * n, chunks, 1.0f, 0.0f);
}
