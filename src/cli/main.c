/* The cltrain command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: cltrain COMMAND [options]\n"
          "\n"
          "commands:\n"
          "  devices [--json]              list OpenCL platforms and devices\n"
          "  selftest [--device D]         check every kernel and op on a "
          "device\n"
          "  bench gemm [--device D]       GEMM GFLOP/s (and OpenBLAS's)\n"
          "  bench train MODEL [--batch B] [--device D|all] [--profile]\n"
          "  bench conv [--device D]       im2col + GEMM against CLBlast's "
          "convgemm\n"
          "  tune MODEL --batch B [--device D]  measure and store the plans\n"
          "  train MODEL --data DIR|fashion-mnist [options]\n"
          "  eval MODEL --weights FILE --data DIR|fashion-mnist [options]\n"
          "                                loss, accuracy, confusion matrix\n"
          "  predict MODEL --weights FILE [--labels FILE] [--top K] INPUT...\n"
          "                                classify IDX, PGM or PNG images\n"
          "  help                          this text\n"
          "\n"
          "Device choice everywhere: --device or CLT_DEVICE: an index (0, "
          "or 1:0 for\nplatform:device), a type (gpu, cpu) or part of a "
          "platform or device name\n(pocl, llvmpipe, nvidia). Default: the "
          "first GPU, else the first CPU.\n"
          "Run `cltrain COMMAND --help` for a command's options.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version")) {
    printf("cltrain %s\n", CLT_VERSION_STRING);
    return 0;
  }
  if (!strcmp(cmd, "devices")) return cli_devices(argc - 2, argv + 2);
  if (!strcmp(cmd, "selftest")) return cli_selftest(argc - 2, argv + 2);
  if (!strcmp(cmd, "bench")) return cli_bench(argc - 2, argv + 2);
  if (!strcmp(cmd, "train")) return cli_train(argc - 2, argv + 2);
  if (!strcmp(cmd, "eval")) return cli_eval(argc - 2, argv + 2);
  if (!strcmp(cmd, "predict")) return cli_predict(argc - 2, argv + 2);
  if (!strcmp(cmd, "tune")) return cli_tune(argc - 2, argv + 2);
  fprintf(stderr, "cltrain: unknown command '%s'\n\n", cmd);
  usage(stderr);
  return 2;
}

clt_context *cli_open_context(const char *device, bool profiling) {
  clt_context_options opts;
  clt_context_options_init(&opts);
  opts.device = device;
  opts.profiling = profiling;
  clt_context *ctx = NULL;
  char err[8192];
  clt_status st = clt_context_create(&opts, &ctx, err, sizeof err);
  if (st != CLT_OK) {
    fprintf(stderr, "cltrain: %s\n", err[0] ? err : clt_status_string(st));
    return NULL;
  }
  return ctx;
}

bool cli_opt_value(int argc, char **argv, int *i, const char *name,
                   const char **value, bool *bad) {
  const char *arg = argv[*i];
  size_t len = strlen(name);
  if (strncmp(arg, name, len) != 0) return false;
  if (arg[len] == '=') {
    *value = arg + len + 1;
    return true;
  }
  if (arg[len] != '\0') return false;
  if (*i + 1 >= argc) {
    fprintf(stderr, "cltrain: option %s needs a value\n", name);
    *bad = true;
    return true;
  }
  *value = argv[++*i];
  return true;
}

bool cli_parse_int(const char *opt, const char *s, long long min,
                   long long *out) {
  char *end = NULL;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || v < min) {
    fprintf(stderr, "cltrain: %s expects an integer >= %lld, got '%s'\n", opt,
            min, s);
    return false;
  }
  *out = v;
  return true;
}

bool cli_parse_double(const char *opt, const char *s, double *out) {
  char *end = NULL;
  double v = strtod(s, &end);
  if (!*s || *end || v != v) {
    fprintf(stderr, "cltrain: %s expects a number, got '%s'\n", opt, s);
    return false;
  }
  *out = v;
  return true;
}

double cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
