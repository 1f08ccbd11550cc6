/* cltrain bench gemm: CLBlast GFLOP/s on square and model shapes (with
 * --precision mixed, the fp16 route's kernel's too), next to OpenBLAS's
 * cblas_sgemm on the same shapes in the same run. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"

#ifdef CLT_HAVE_OPENBLAS
#include <cblas.h>
#endif

typedef struct gemm_shape {
  const char *name;
  clt_transpose ta, tb;
  int64_t m, n, k, batch;
} gemm_shape;

#define NN CLT_NO_TRANS, CLT_NO_TRANS
#define NT CLT_NO_TRANS, CLT_TRANS
#define TN CLT_TRANS, CLT_NO_TRANS

/* The model shapes: dense 784-128-10 (forward, and the two backward
 * products of the first layer) and the im2col GEMMs of 3x3 convolutions,
 * 1->32 channels on 28x28 and 32->64 on 14x14, one product per image. */
static const gemm_shape shapes[] = {
    {"square 128", NN, 128, 128, 128, 1},
    {"square 256", NN, 256, 256, 256, 1},
    {"square 512", NN, 512, 512, 512, 1},
    {"square 1024", NN, 1024, 1024, 1024, 1},
    {"square 2048", NN, 2048, 2048, 2048, 1},
    {"square 4096", NN, 4096, 4096, 4096, 1},
    {"mlp fc1 fwd b64", NT, 64, 128, 784, 1},
    {"mlp fc1 dX b64", NN, 64, 784, 128, 1},
    {"mlp fc1 dW b64", TN, 128, 784, 64, 1},
    {"mlp fc2 fwd b64", NT, 64, 10, 128, 1},
    {"mlp fc1 fwd b256", NT, 256, 128, 784, 1},
    {"mlp fc1 dX b256", NN, 256, 784, 128, 1},
    {"mlp fc1 dW b256", TN, 128, 784, 256, 1},
    {"mlp fc2 fwd b256", NT, 256, 10, 128, 1},
    {"conv1 im2col b64", NN, 32, 784, 9, 64},
    {"conv2 im2col b64", NN, 64, 196, 288, 64},
    {"conv1 im2col b256", NN, 32, 784, 9, 256},
    {"conv2 im2col b256", NN, 64, 196, 288, 256},
    /* The sample CNN's second convolution (valid, 11x11 output) at batch
     * 64: per image (batched) against one product over the whole batch. */
    {"cnn conv2 fwd b64", NN, 64, 121, 288, 64},
    {"cnn conv2 fwd 1 gemm", NN, 64, 7744, 288, 1},
    {"cnn conv2 dW b64", NT, 64, 288, 121, 64},
    {"cnn conv2 dW 1 gemm", NT, 64, 288, 7744, 1},
    {"cnn conv2 dcol b64", TN, 288, 121, 64, 64},
    {"cnn conv2 dcol 1 gemm", TN, 288, 7744, 64, 1},
    {"cnn conv1 fwd 1 gemm", NN, 32, 43264, 9, 1},
    {"cnn conv1 dW 1 gemm", NT, 32, 9, 43264, 1},
    {"cnn conv1 dW b64", NT, 32, 9, 676, 64},
    /* The rows backward's (nn/conv2d.c): the weight gradients as TN
     * products, one GEMM and per image (what split-K with S = the batch
     * runs), and the data gradient. */
    {"cnn conv2 dW rows 1 gemm", TN, 64, 288, 7744, 1},
    {"cnn conv2 dW rows b64", TN, 64, 288, 121, 64},
    {"cnn conv2 drow 1 gemm", NN, 7744, 288, 64, 1},
    {"cnn conv1 dW rows 1 gemm", TN, 32, 9, 43264, 1},
    {"cnn conv1 dW rows b64", TN, 32, 9, 676, 64},
};

static clt_status make_random(clt_context *ctx, int64_t n, uint64_t seed,
                              clt_tensor **t, float **host) {
  *host = malloc((size_t)n * sizeof(float));
  if (!*host) return CLT_ERR_HOST_MEMORY;
  cli_random_fill(*host, n, seed, -1.0f, 1.0f);
  CLI_TRY(clt_tensor_create(ctx, CLT_F32, 1, &n, t));
  return clt_tensor_upload(*t, *host);
}

/* run_product's config for CLBlast's SGEMM, in either form, and for our
 * own fp32 kernels (BLOCKED + their configuration). */
#define SGEMM_ROW_MAJOR (-1)
#define SGEMM_COL_MAJOR (-2)
#define BLOCKED 1000
#define TF32X3 2000

/* One product of shape s: CLBlast's SGEMM (config SGEMM_*), our own fp32
 * kernel (BLOCKED + configuration), 3xTF32 (TF32X3 + configuration) or
 * the fp16 route's kernel in tile configuration config. */
static clt_status run_product(clt_context *ctx, const gemm_shape *s,
                              int config, clt_tensor *a, clt_tensor *b,
                              clt_tensor *c) {
  if (config < 0)
    return (config == SGEMM_COL_MAJOR ? clt_gemm_strided_batched_colmajor
                                      : clt_gemm_strided_batched)(
        ctx, s->ta, s->tb, s->m, s->n, s->k, 1.0f, a, s->m * s->k, b,
        s->k * s->n, 0.0f, c, s->m * s->n, s->batch);
  if (config >= TF32X3)
    return clt_gemm_tf32x3_strided_batched(
        ctx, config - TF32X3, s->ta, s->tb, s->m, s->n, s->k, 1.0f, a,
        s->m * s->k, b, s->k * s->n, 0.0f, c, s->m * s->n, s->batch);
  if (config >= BLOCKED)
    return clt_gemm_blocked_strided_batched(
        ctx, config - BLOCKED, s->ta, s->tb, s->m, s->n, s->k, 1.0f, a,
        s->m * s->k, b, s->k * s->n, 0.0f, c, s->m * s->n, s->batch);
  return clt_gemm_f16_strided_batched(ctx, config, s->ta, s->tb, s->m, s->n,
                                      s->k, 1.0f, a, s->m * s->k, b,
                                      s->k * s->n, 0.0f, c, s->m * s->n,
                                      s->batch);
}

/* Products run by the last time_product, the untimed ones included;
 * --profile (the route's kernels). */
static int g_runs;
static bool g_profile;

/* A product's time as a training step pays it: the products queued one
 * after another and waited for in batches (1, 2, 4, ... up to
 * MAX_QUEUED between waits) until half a second has passed, the total
 * over the runs. Waiting after each run would add the host's round trip
 * to the device to every product: on POCL that wakes its worker threads,
 * 50-70 us on a 2-core virtual machine, more than a small product costs
 * (the MLP's last layer: 5 us in OpenBLAS), where a step waits once for
 * dozens of launches. */
#define MAX_QUEUED 256
static clt_status time_product(clt_context *ctx, const gemm_shape *s,
                               int config, clt_tensor *a, clt_tensor *b,
                               clt_tensor *c, double *seconds) {
  g_runs = 0;
  /* Two untimed calls: the first compiles CLBlast's kernel. */
  for (int i = 0; i < 2; i++) {
    CLI_TRY(run_product(ctx, s, config, a, b, c));
    g_runs++;
  }
  CLI_TRY(clt_context_finish(ctx));
  int reps = 0, queued = 1;
  double t0 = cli_now(), elapsed = 0.0;
  while (elapsed < 0.5 || reps < 3) {
    for (int i = 0; i < queued; i++) {
      CLI_TRY(run_product(ctx, s, config, a, b, c));
      g_runs++;
      reps++;
    }
    CLI_TRY(clt_context_finish(ctx));
    elapsed = cli_now() - t0;
    if (queued < MAX_QUEUED) queued *= 2;
  }
  *seconds = elapsed / reps;
  return CLT_OK;
}

#ifdef CLT_HAVE_OPENBLAS
static double time_openblas(const gemm_shape *s, const float *a,
                            const float *b, float *c) {
  int reps = 0;
  double t0 = cli_now(), elapsed = 0.0;
  int lda = (int)(s->ta == CLT_TRANS ? s->m : s->k);
  int ldb = (int)(s->tb == CLT_TRANS ? s->k : s->n);
  while (elapsed < 0.5 || reps < 3) {
    for (int64_t i = 0; i < s->batch; i++)
      cblas_sgemm(CblasRowMajor, s->ta == CLT_TRANS ? CblasTrans : CblasNoTrans,
                  s->tb == CLT_TRANS ? CblasTrans : CblasNoTrans, (int)s->m,
                  (int)s->n, (int)s->k, 1.0f, a + i * s->m * s->k, lda,
                  b + i * s->k * s->n, ldb, 0.0f, c + i * s->m * s->n,
                  (int)s->n);
    reps++;
    elapsed = cli_now() - t0;
  }
  return elapsed / reps;
}
#endif

/* --profile: a configuration's device time a product, by kernel
 * ("mma_pack 0.051 + gemm_wgmma 0.389 ms a product (0.440 ms)"), from the
 * context's profile of the runs just timed. */
static void profile_line(clt_context *ctx, char *out, size_t len) {
  clt_profile_row *rows = NULL;
  size_t count = 0;
  out[0] = '\0';
  if (!clt_profile_timed(ctx)) {
    snprintf(out, len, "device time unknown (the device gives no times)");
    return;
  }
  if (clt_profile_summary(ctx, &rows, &count) != CLT_OK || g_runs == 0)
    return;
  size_t at = 0;
  double total = 0.0;
  for (size_t r = 0; r < count && at < len; r++) {
    double ms = rows[r].seconds * 1e3 / g_runs;
    total += ms;
    /* the first run's transfers (a 3xTF32 configuration's check) round
     * to nothing a product */
    if (ms < 0.0005) continue;
    at += (size_t)snprintf(out + at, len - at, "%s%s %.3f", at ? " + " : "",
                           rows[r].op, ms);
  }
  if (at < len)
    snprintf(out + at, len - at, " ms a product (%.3f ms)", total);
  free(rows);
}

/* The fastest of `count` configurations of the route's kernels on s
 * (run_product's base + i: the fp16 tiles, or TF32X3's): its time and
 * index; with --profile each one's device time by kernel (prof[i]). */
static clt_status time_mma(clt_context *ctx, const gemm_shape *s, int base,
                           int count, clt_tensor *a, clt_tensor *b,
                           clt_tensor *c, double *seconds, int *config,
                           double *each, char (*prof)[240]) {
  *seconds = 0.0;
  for (int i = 0; i < count; i++) {
    double t = 0.0;
    each[i] = 0.0;
    prof[i][0] = '\0';
    if (g_profile) clt_profile_reset(ctx);
    clt_status st = time_product(ctx, s, base + i, a, b, c, &t);
    if (st == CLT_OK && g_profile) profile_line(ctx, prof[i], sizeof prof[i]);
    if (st == CLT_ERR_UNSUPPORTED) {
      /* a configuration this device cannot run: said once, left out */
      static bool said[CLT_FP16_CONFIGS + CLT_TF32X3_CONFIGS];
      int at = base == TF32X3 ? CLT_FP16_CONFIGS + i : i;
      if (!said[at])
        fprintf(stderr, "note: %s\n", clt_context_last_error(ctx));
      said[at] = true;
      continue;
    }
    CLI_TRY(st);
    each[i] = t;
    if (*seconds == 0.0 || t < *seconds) {
      *seconds = t;
      *config = i;
    }
  }
  return CLT_OK;
}

/* The fastest of our own fp32 kernels that run s (0 seconds: none). */
static clt_status time_blocked(clt_context *ctx, const gemm_shape *s,
                               clt_tensor *a, clt_tensor *b, clt_tensor *c,
                               double *seconds, int *config) {
  *seconds = 0.0;
  for (int i = 0; i < CLT_GEMM_BLOCKED_CONFIGS; i++) {
    double t = 0.0;
    clt_status st = time_product(ctx, s, BLOCKED + i, a, b, c, &t);
    if (st == CLT_ERR_UNSUPPORTED) continue; /* not for these transposes */
    CLI_TRY(st);
    if (*seconds == 0.0 || t < *seconds) {
      *seconds = t;
      *config = i;
    }
  }
  return CLT_OK;
}

/* The launch floor: our own kernel (dot 4x4, whose argument list is the
 * model products') on a 1x1x1 product, timed as time_product queues it:
 * what one launch costs on this device, however little it computes (POCL
 * 3.1 on a 2-core Xeon: 4.6-5.7 us, where OpenBLAS computes the MLP's
 * 64x10x128 output layer in 1.3 us; Mesa 22.3's rusticl on llvmpipe:
 * about 4 ms); 0 where it cannot run. */
static double g_floor;
static bool g_near_floor; /* a line was marked */
static int g_floor_config;
static clt_status time_floor(clt_context *ctx) {
  static const gemm_shape one = {"1x1x1", NT, 1, 1, 1, 1};
  clt_tensor *t[3] = {NULL, NULL, NULL};
  float *h[3] = {NULL, NULL, NULL};
  g_floor = 0.0;
  g_floor_config = -1;
  for (int i = 0; i < CLT_GEMM_BLOCKED_CONFIGS; i++)
    if (!strcmp(clt_gemm_blocked_config_name(i), "dot 4x4")) g_floor_config = i;
  if (g_floor_config < 0) return CLT_OK;
  clt_status st = CLT_OK;
  for (int i = 0; i < 3 && st == CLT_OK; i++)
    st = make_random(ctx, 1, (uint64_t)(i + 1), &t[i], &h[i]);
  if (st == CLT_OK)
    st = time_product(ctx, &one, BLOCKED + g_floor_config, t[0], t[1], t[2],
                      &g_floor);
  for (int i = 0; i < 3; i++) {
    clt_tensor_destroy(t[i]);
    free(h[i]);
  }
  /* time_product sets g_floor only on success: it stays 0 otherwise */
  return st == CLT_ERR_UNSUPPORTED ? CLT_OK : st;
}

static clt_status bench_one(clt_context *ctx, const gemm_shape *s,
                            bool mixed, bool tf32, bool all_tiles) {
  clt_tensor *a = NULL, *b = NULL, *c = NULL;
  float *ha = NULL, *hb = NULL, *hc = NULL;
  int64_t na = s->batch * s->m * s->k, nb = s->batch * s->k * s->n,
          nc = s->batch * s->m * s->n;
  double row = 0.0, col = 0.0;
  clt_status st = make_random(ctx, na, 1, &a, &ha);
  if (st == CLT_OK) st = make_random(ctx, nb, 2, &b, &hb);
  if (st == CLT_OK) st = make_random(ctx, nc, 3, &c, &hc);
  if (st == CLT_OK) st = time_product(ctx, s, SGEMM_ROW_MAJOR, a, b, c, &row);
  if (st == CLT_OK) st = time_product(ctx, s, SGEMM_COL_MAJOR, a, b, c, &col);
  double own = 0.0;
  int own_config = 0;
  if (st == CLT_OK) st = time_blocked(ctx, s, a, b, c, &own, &own_config);
  double x3 = 0.0;
  int x3_config = 0;
  double x3_each[CLT_TF32X3_CONFIGS];
  char x3_prof[CLT_TF32X3_CONFIGS][240];
  if (st == CLT_OK && tf32)
    st = time_mma(ctx, s, TF32X3, CLT_TF32X3_CONFIGS, a, b, c, &x3,
                  &x3_config, x3_each, x3_prof);
  /* as the measured plans choose */
  double secs = row < col ? row : col;
  if (own > 0.0 && own < secs) secs = own;
  if (x3 > 0.0 && x3 < secs) secs = x3;
  double mma_secs = 0.0;
  int config = 0;
  double each[CLT_FP16_CONFIGS];
  char prof[CLT_FP16_CONFIGS][240];
  if (st == CLT_OK && mixed)
    st = time_mma(ctx, s, 0, CLT_FP16_CONFIGS, a, b, c, &mma_secs, &config,
                  each, prof);
  if (st == CLT_OK) {
    double flops = 2.0 * (double)s->m * (double)s->n * (double)s->k *
                   (double)s->batch;
    printf("%-24s %5lld %5lld %5lld %5lld %10.2f %10.2f", s->name,
           (long long)s->m, (long long)s->n, (long long)s->k,
           (long long)s->batch, flops / row * 1e-9, flops / col * 1e-9);
    if (own > 0.0)
      printf(" %10.2f %-13s", flops / own * 1e-9,
             clt_gemm_blocked_config_name(own_config));
    else
      printf(" %10s %-13s", "-", "");
    if (tf32 && x3 > 0.0)
      printf(" %10.2f %-18s", flops / x3 * 1e-9,
             clt_tf32x3_config_name(x3_config) + 7);
    else if (tf32)
      printf(" %10s %-18s", "-", "");
    if (mixed)
      printf(" %10.2f %6.2fx %-8s", flops / mma_secs * 1e-9, secs / mma_secs,
             clt_fp16_config_name(config));
#ifdef CLT_HAVE_OPENBLAS
    double ref = flops / time_openblas(s, ha, hb, hc) * 1e-9;
    printf(" %10.2f %7.2f", ref, flops / secs * 1e-9 / ref);
#endif
    /* within twice the launch floor: the launch sets the product's pace */
    if (g_floor > 0.0 && secs < 2.0 * g_floor) {
      printf(" *");
      g_near_floor = true;
    }
    printf("\n");
    if (tf32 && x3 > 0.0 && !all_tiles && g_profile)
      printf("  %-25s %s\n", clt_tf32x3_config_name(x3_config),
             x3_prof[x3_config]);
    for (int i = 0; tf32 && all_tiles && i < CLT_TF32X3_CONFIGS; i++)
      if (x3_each[i] > 0.0)
        printf("  %-25s %10.2f GFLOP/s%s%s\n", clt_tf32x3_config_name(i),
               flops / x3_each[i] * 1e-9, x3_prof[i][0] ? "  " : "",
               x3_prof[i]);
    if (mixed && !all_tiles && g_profile)
      printf("  fp16 %-20s %s\n", clt_fp16_config_name(config), prof[config]);
    for (int i = 0; mixed && all_tiles && i < CLT_FP16_CONFIGS; i++)
      if (each[i] > 0.0)
        printf("  fp16 %-20s %10.2f GFLOP/s%s%s\n", clt_fp16_config_name(i),
               flops / each[i] * 1e-9, prof[i][0] ? "  " : "", prof[i]);
    fflush(stdout);
  }
  clt_tensor_destroy(a);
  clt_tensor_destroy(b);
  clt_tensor_destroy(c);
  free(ha);
  free(hb);
  free(hc);
  return st;
}

static int bench_gemm(int argc, char **argv) {
  const char *device = NULL, *only = NULL;
  long long limit = 2048;
  bool all_tiles = false, profile = false;
  int precision = CLT_PRECISION_FP32;
  const cli_option options[] = {
      {"all-tiles", CLI_FLAG, &all_tiles, NULL,
       "a line for each 3xTF32 and (with --precision mixed)\n"
       "fp16 tile configuration under each shape, not only\n"
       "the fastest",
       0, 0, 0, 0, 0},
      {"device", CLI_STRING, &device, "D", "device (see `cltrain devices`)", 0,
       0, 0, 0, 0},
      {"max-size", CLI_INT, &limit, "N",
       "skip square sizes above N (default 2048)", 1, 65536, 0, 0, 0},
      {"only", CLI_STRING, &only, "TEXT",
       "only the shapes whose name contains TEXT", 0, 0, 0, 0, 0},
      {"profile", CLI_FLAG, &profile, NULL,
       "the tensor-core kernels' device time a product by\n"
       "kernel (packing, product): the fastest 3xTF32 and fp16\n"
       "configurations', or each one's with --all-tiles",
       0, 0, 0, 0, 0},
      {"precision", CLI_CHOICE, &precision, "P",
       "fp32 (default); mixed: also the fp16 route's kernel\n"
       "(fp16 inputs, f32 sums; its fastest tile configuration)\n"
       "where the device has one",
       0, 0, 0, cli_precision_names, 0},
  };
  const cli_command cmd = {
      "bench gemm",
      "[--device D] [--max-size N] [--only TEXT] [--precision P] "
      "[--all-tiles] [--profile]",
      "  GFLOP/s of CLBlast's SGEMM on the shapes the samples use and on\n"
      "  squares, row-major and as the column-major C^T (README \"Measured\n"
      "  plans\"), of cltrain's own fp32 kernels (the fastest that runs the\n"
      "  shape), of 3xTF32 on the tensor cores where the device has them\n"
      "  (README \"3xTF32\"), and OpenBLAS's on the CPU (where built with\n"
      "  it) against the fastest\n",
      options, (int)(sizeof options / sizeof options[0]), 0, 0, NULL};
  int npos = 0;
  int rc = cli_parse(&cmd, argc, argv, NULL, &npos);
  if (rc >= 0) return rc;
  g_profile = profile;
  clt_context *ctx = cli_open_context(device, g_profile);
  if (!ctx) return 1;
  printf("device: %s (%s)\n", clt_context_device(ctx)->name,
         clt_context_device(ctx)->platform_name);
#ifdef CLT_HAVE_OPENBLAS
  /* Which kernels the reference runs: OpenBLAS picks them by CPU model and
   * falls back to old generic ones on a CPU it does not know (a virtual
   * machine's "Xeon Processor" gets Prescott's, 4-5x slower than
   * SkylakeX's on AVX-512); OPENBLAS_CORETYPE chooses. */
  printf("OpenBLAS: %s kernels, %d threads\n", openblas_get_corename(),
         openblas_get_num_threads());
#endif
  bool mixed = precision == CLT_PRECISION_MIXED, has = false;
  if (cli_print_mma_route(ctx, &has) != 0) {
    clt_context_destroy(ctx);
    return 1;
  }
  if (mixed && !has) {
    printf("(mixed precision runs its products as the SGEMM below)\n");
    mixed = false;
  }
  if (profile && !has)
    printf("(--profile: no tensor-core kernels here to profile)\n");
  if (time_floor(ctx) != CLT_OK) {
    fprintf(stderr, "cltrain: launch floor: %s\n", clt_context_last_error(ctx));
    clt_context_destroy(ctx);
    return 1;
  }
  if (g_floor > 0.0)
    printf("launch floor: %.1f us a product (own kernel %s on 1x1x1, "
           "queued)\n",
           g_floor * 1e6, clt_gemm_blocked_config_name(g_floor_config));
  /* SGEMM in both forms (row-major, and the column-major C^T), our own
   * fp32 kernels (the fastest configuration that runs the shape) and
   * 3xTF32 where the route is; the fp16 kernel and OpenBLAS against the
   * fastest, which the plans would run. */
  printf("%-24s %5s %5s %5s %5s %10s %10s %10s %-13s", "shape", "m", "n", "k",
         "batch", "GFLOP/s", "c^T", "own", "kernel");
  if (has) printf(" %10s %-18s", "3xtf32", "tiles");
  if (mixed) printf(" %10s %7s %-8s", "fp16", "vs fp32", "tiles");
#ifdef CLT_HAVE_OPENBLAS
  printf(" %10s %7s", "OpenBLAS", "ratio");
#else
  printf("  (OpenBLAS not built in: no reference column)");
#endif
  printf("\n");
  rc = 0;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    if (shapes[i].m > limit && shapes[i].n > limit) continue;
    if (only && !strstr(shapes[i].name, only)) continue;
    if (bench_one(ctx, &shapes[i], mixed, has, all_tiles) != CLT_OK) {
      fprintf(stderr, "cltrain: %s: %s\n", shapes[i].name,
              clt_context_last_error(ctx));
      rc = 1;
      break;
    }
  }
  if (g_near_floor)
    printf("* the fastest under twice the launch floor: the launch, not the "
           "arithmetic,\n  sets its pace\n");
  clt_context_destroy(ctx);
  return rc;
}

/* ---- bench conv: im2col + GEMM against CLBlast's convgemm ------------- */

typedef struct conv_case {
  const char *name;
  int64_t C, H, W, K, filters, batch;
} conv_case;

/* The sample CNN's two convolutions (3x3, valid) at batch 64. */
static const conv_case conv_cases[] = {
    {"cnn conv1", 1, 28, 28, 3, 32, 64},
    {"cnn conv2", 32, 13, 13, 3, 64, 64},
};

/* Seconds per call of fn(ctx, user), after two untimed calls. */
static clt_status time_calls(clt_context *ctx,
                             clt_status (*fn)(clt_context *, void *),
                             void *user, double *seconds) {
  CLI_TRY(fn(ctx, user));
  CLI_TRY(fn(ctx, user));
  CLI_TRY(clt_context_finish(ctx));
  int reps = 0;
  double t0 = cli_now();
  while (reps < 3 || cli_now() - t0 < 0.5) {
    CLI_TRY(fn(ctx, user));
    CLI_TRY(clt_context_finish(ctx));
    reps++;
  }
  *seconds = (cli_now() - t0) / reps;
  return CLT_OK;
}

typedef struct conv_bufs {
  clt_conv2d_shape shape;
  clt_tensor *x, *weight, *col, *tmp, *y;
} conv_bufs;

/* cltrain's forward path (the conv2d layer's): im2col, one GEMM, the axis
 * swap. */
static clt_status run_im2col_gemm(clt_context *ctx, void *user) {
  conv_bufs *b = user;
  return clt_conv2d_forward(ctx, &b->shape, b->x, b->weight, NULL, b->col,
                            b->tmp, b->y);
}

static clt_status run_convgemm(clt_context *ctx, void *user) {
  conv_bufs *b = user;
  return clt_conv2d_forward_convgemm(ctx, &b->shape, b->x, b->weight, b->y);
}

static clt_status bench_conv_case(clt_context *ctx, const conv_case *c) {
  conv_bufs b = {0};
  b.shape = (clt_conv2d_shape){.batch = c->batch, .C = c->C, .H = c->H,
                               .W = c->W, .filters = c->filters, .KH = c->K,
                               .KW = c->K};
  int64_t oh = 0, ow = 0, ncol = 0, ntmp = 0;
  clt_status st = clt_conv2d_sizes(&b.shape, &oh, &ow, &ncol, &ntmp);
  int64_t ckk = c->C * c->K * c->K, cols = c->batch * oh * ow;
  int64_t nx = c->batch * c->C * c->H * c->W, nw = c->filters * ckk;
  if (st == CLT_OK) st = clt_tensor_create(ctx, CLT_F32, 1, &nx, &b.x);
  if (st == CLT_OK) st = clt_tensor_create(ctx, CLT_F32, 1, &nw, &b.weight);
  if (st == CLT_OK) st = clt_tensor_create(ctx, CLT_F32, 1, &ncol, &b.col);
  if (st == CLT_OK) st = clt_tensor_create(ctx, CLT_F32, 1, &ntmp, &b.tmp);
  if (st == CLT_OK) st = clt_tensor_create(ctx, CLT_F32, 1, &ntmp, &b.y);
  if (st == CLT_OK) st = clt_tensor_fill(b.x, 0.5);
  if (st == CLT_OK) st = clt_tensor_fill(b.weight, 0.25);
  double ours = 0, theirs = 0;
  if (st == CLT_OK) st = time_calls(ctx, run_im2col_gemm, &b, &ours);
  if (st == CLT_OK) st = time_calls(ctx, run_convgemm, &b, &theirs);
  if (st == CLT_OK) {
    double gf = 2.0 * (double)c->filters * (double)ckk * (double)cols * 1e-9;
    printf("%-12s %4lld %3lldx%-3lld %7lld %6lld %12.2f %12.2f %7.2f\n",
           c->name, (long long)c->C, (long long)c->H, (long long)c->W,
           (long long)c->filters, (long long)c->batch, gf / ours,
           gf / theirs, theirs / ours);
  }
  clt_tensor *all[] = {b.x, b.weight, b.col, b.tmp, b.y};
  for (int i = 0; i < 5; i++) clt_tensor_destroy(all[i]);
  return st;
}

/* The forward convolution both ways; the figures that chose conv2d's
 * path (im2col + one GEMM; the backward passes need im2col/col2im
 * anyway, and convgemm has no backward). */
static int bench_conv(int argc, char **argv) {
  const char *device = NULL;
  const cli_option options[] = {
      {"device", CLI_STRING, &device, "D", "device (see `cltrain devices`)", 0,
       0, 0, 0, 0},
  };
  const cli_command cmd = {
      "bench conv", "[--device D]",
      "  the forward convolution as im2col + GEMM against CLBlast's "
      "convgemm\n",
      options, 1, 0, 0, NULL};
  int npos = 0;
  int rc = cli_parse(&cmd, argc, argv, NULL, &npos);
  if (rc >= 0) return rc;
  clt_context *ctx = cli_open_context(device, false);
  if (!ctx) return 1;
  printf("device: %s (%s)\n", clt_context_device(ctx)->name,
         clt_context_device(ctx)->platform_name);
  printf("%-12s %4s %7s %7s %6s %12s %12s %7s\n", "forward", "C", "HxW",
         "filters", "batch", "im2col+GEMM", "convgemm", "speed-up");
  printf("%-12s %4s %7s %7s %6s %12s %12s %7s\n", "", "", "", "", "",
         "GFLOP/s", "GFLOP/s", "");
  rc = 0;
  for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++)
    if (bench_conv_case(ctx, &conv_cases[i]) != CLT_OK) {
      fprintf(stderr, "cltrain: %s: %s\n", conv_cases[i].name,
              clt_context_last_error(ctx));
      rc = 1;
      break;
    }
  clt_context_destroy(ctx);
  return rc;
}

int cli_bench_train(int argc, char **argv);
int cli_bench_infer(int argc, char **argv);

int cli_bench(int argc, char **argv) {
  static const char *const what[] = {"gemm", "train", "infer", "conv"};
  if (argc >= 1 && !strcmp(argv[0], "gemm"))
    return bench_gemm(argc - 1, argv + 1);
  if (argc >= 1 && !strcmp(argv[0], "train"))
    return cli_bench_train(argc - 1, argv + 1);
  if (argc >= 1 && !strcmp(argv[0], "infer"))
    return cli_bench_infer(argc - 1, argv + 1);
  if (argc >= 1 && !strcmp(argv[0], "conv")) return bench_conv(argc - 1, argv + 1);
  bool help = argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"));
  FILE *out = help ? stdout : stderr;
  if (argc >= 1 && !help) {
    const char *near = cli_nearest(argv[0], what, 4);
    fprintf(stderr, "cltrain bench: unknown benchmark '%s'%s%s%s\n", argv[0],
            near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
  }
  fprintf(out, "usage: cltrain bench gemm|train|infer|conv [options]\n"
               "  gemm   GEMM GFLOP/s (and OpenBLAS's)\n"
               "  train  steady-state training images/s of a model file\n"
               "  infer  steady-state inference images/s of a model file\n"
               "  conv   im2col + GEMM against CLBlast's convgemm\n"
               "run `cltrain bench WHICH --help` for its options\n");
  return help ? 0 : 2;
}
