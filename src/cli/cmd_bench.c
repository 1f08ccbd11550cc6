/* cltrain bench gemm: CLBlast GFLOP/s on square and model shapes, next to
 * OpenBLAS's cblas_sgemm on the same shapes in the same run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "ops/opcheck.h"

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
};

static clt_status make_random(clt_context *ctx, int64_t n, uint64_t seed,
                              clt_tensor **t, float **host) {
  *host = malloc((size_t)n * sizeof(float));
  if (!*host) return CLT_ERR_HOST_MEMORY;
  clt_random_fill(*host, n, seed, -1.0f, 1.0f);
  CLT_TRY(clt_tensor_create(ctx, CLT_F32, 1, &n, t));
  return clt_tensor_upload(*t, *host);
}

static clt_status time_clblast(clt_context *ctx, const gemm_shape *s,
                               clt_tensor *a, clt_tensor *b, clt_tensor *c,
                               double *seconds) {
  int reps = 0;
  double t0 = 0.0, elapsed = 0.0;
  /* Two untimed calls: the first compiles CLBlast's kernel. */
  for (int i = -2; elapsed < 0.5 || reps < 3; i++) {
    if (i == 0) {
      CLT_TRY(clt_context_finish(ctx));
      t0 = cli_now();
    }
    CLT_TRY(clt_gemm_strided_batched(ctx, s->ta, s->tb, s->m, s->n, s->k, 1.0f,
                                     a, s->m * s->k, b, s->k * s->n, 0.0f, c,
                                     s->m * s->n, s->batch));
    if (i >= 0) {
      reps++;
      if (reps % 4 == 0 || reps < 4) {
        CLT_TRY(clt_context_finish(ctx));
        elapsed = cli_now() - t0;
      }
    }
  }
  CLT_TRY(clt_context_finish(ctx));
  *seconds = (cli_now() - t0) / reps;
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

static clt_status bench_one(clt_context *ctx, const gemm_shape *s) {
  clt_tensor *a = NULL, *b = NULL, *c = NULL;
  float *ha = NULL, *hb = NULL, *hc = NULL;
  int64_t na = s->batch * s->m * s->k, nb = s->batch * s->k * s->n,
          nc = s->batch * s->m * s->n;
  double secs = 0.0;
  clt_status st = make_random(ctx, na, 1, &a, &ha);
  if (st == CLT_OK) st = make_random(ctx, nb, 2, &b, &hb);
  if (st == CLT_OK) st = make_random(ctx, nc, 3, &c, &hc);
  if (st == CLT_OK) st = time_clblast(ctx, s, a, b, c, &secs);
  if (st == CLT_OK) {
    double flops = 2.0 * (double)s->m * (double)s->n * (double)s->k *
                   (double)s->batch;
    double gf = flops / secs * 1e-9;
    printf("%-20s %5lld %5lld %5lld %5lld %10.2f", s->name, (long long)s->m,
           (long long)s->n, (long long)s->k, (long long)s->batch, gf);
#ifdef CLT_HAVE_OPENBLAS
    double ref = flops / time_openblas(s, ha, hb, hc) * 1e-9;
    printf(" %10.2f %7.2f", ref, gf / ref);
#endif
    printf("\n");
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
  const char *device = NULL, *max_size = NULL, *only = NULL;
  bool bad = false;
  long long limit = 2048;
  for (int i = 0; i < argc; i++) {
    if (cli_opt_value(argc, argv, &i, "--device", &device, &bad)) {
      if (bad) return 2;
    } else if (cli_opt_value(argc, argv, &i, "--max-size", &max_size, &bad)) {
      if (bad || !cli_parse_int("--max-size", max_size, 1, &limit)) return 2;
    } else if (cli_opt_value(argc, argv, &i, "--only", &only, &bad)) {
      if (bad) return 2;
    } else if (!strcmp(argv[i], "--help")) {
      printf("usage: cltrain bench gemm [--device D] [--max-size N] "
             "[--only TEXT]\n"
             "  --max-size N  skip square sizes above N (default 2048)\n"
             "  --only TEXT   only the shapes whose name contains TEXT\n");
      return 0;
    } else {
      fprintf(stderr, "cltrain bench gemm: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
  clt_context *ctx = cli_open_context(device, false);
  if (!ctx) return 1;
  printf("device: %s (%s)\n", clt_context_device(ctx)->name,
         clt_context_device(ctx)->platform_name);
  printf("%-20s %5s %5s %5s %5s %10s", "shape", "m", "n", "k", "batch",
         "GFLOP/s");
#ifdef CLT_HAVE_OPENBLAS
  printf(" %10s %7s", "OpenBLAS", "ratio");
#else
  printf("  (OpenBLAS not built in: no reference column)");
#endif
  printf("\n");
  int rc = 0;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    if (shapes[i].m > limit && shapes[i].n > limit) continue;
    if (only && !strstr(shapes[i].name, only)) continue;
    if (bench_one(ctx, &shapes[i]) != CLT_OK) {
      fprintf(stderr, "cltrain: %s: %s\n", shapes[i].name,
              clt_context_last_error(ctx));
      rc = 1;
      break;
    }
  }
  clt_context_destroy(ctx);
  return rc;
}

int cli_bench_train(int argc, char **argv);

int cli_bench(int argc, char **argv) {
  if (argc >= 1 && !strcmp(argv[0], "gemm"))
    return bench_gemm(argc - 1, argv + 1);
  if (argc >= 1 && !strcmp(argv[0], "train"))
    return cli_bench_train(argc - 1, argv + 1);
  fprintf(stderr, "usage: cltrain bench gemm|train ...\n");
  return 2;
}
