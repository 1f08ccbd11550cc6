/* The cltrain command. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
          "  train MODEL --data DATA [options]\n"
          "                                DATA: fashion-mnist, an IDX "
          "folder, a CSV file,\n"
          "                                or a folder of CSV files or class "
          "folders\n"
          "  eval MODEL --weights FILE --data DATA [options]\n"
          "                                loss, accuracy, confusion matrix\n"
          "  predict MODEL --weights FILE [--labels FILE] [--top K] INPUT...\n"
          "                                classify IDX, PGM, PNG or JPEG "
          "images\n"
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

/* The library's warnings (a kernel cache that cannot be written, ...) are
 * for the user; its information and debug lines are not. */
static void print_warnings(clt_log_level level, const char *message,
                           void *user) {
  (void)user;
  if (level >= CLT_LOG_WARN)
    fprintf(stderr, "cltrain: %s: %s\n",
            level == CLT_LOG_WARN ? "warning" : "error", message);
}

/* What a first run on a device says while it compiles (tens of seconds on
 * a small CPU), so that it never sits silent. */
typedef struct build_report {
  bool tty;
  int compiled;
  double start;
} build_report;

static void print_build_progress(const clt_device_info *device,
                                 const char *program, int index, int total,
                                 bool compiling, void *user) {
  build_report *r = user;
  if (!compiling) return;
  if (r->compiled++ == 0) {
    r->start = cli_now();
    if (!r->tty)
      fprintf(stderr, "cltrain: compiling kernels for %s (first run on this "
                      "device and driver)...\n",
              device->name);
  }
  if (r->tty) {
    fprintf(stderr, "\r\033[Kcompiling kernels for %.40s: %d/%d (%s)",
            device->name, index, total, program);
    fflush(stderr);
  }
}

clt_context *cli_open_context(const char *device, bool profiling) {
  build_report report = {.tty = isatty(STDERR_FILENO) != 0};
  clt_context_options opts;
  clt_context_options_init(&opts);
  opts.device = device;
  opts.profiling = profiling;
  opts.log = print_warnings;
  opts.build_progress = print_build_progress;
  opts.build_progress_user = &report;
  clt_context *ctx = NULL;
  char err[8192];
  clt_status st = clt_context_create(&opts, &ctx, err, sizeof err);
  if (report.compiled && report.tty) fprintf(stderr, "\r\033[K");
  if (report.compiled && st == CLT_OK) {
    clt_kernel_stats ks;
    clt_context_kernel_stats(ctx, &ks);
    fprintf(stderr, "cltrain: compiled %d kernel program%s in %.1f s%s\n",
            report.compiled, report.compiled == 1 ? "" : "s",
            cli_now() - report.start,
            ks.cache_stored == report.compiled
                ? "; later runs load them from the cache"
                : " (not cached: later runs compile them again)");
  }
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
  } else if (arg[len] != '\0') {
    return false;
  } else if (*i + 1 >= argc) {
    fprintf(stderr, "cltrain: option %s needs a value\n", name);
    *bad = true;
    return true;
  } else {
    *value = argv[++*i];
  }
  /* An empty value (`--device ''`, a variable that expanded to nothing)
   * never means the default: every option's default is its absence. */
  if (!**value) {
    fprintf(stderr, "cltrain: option %s needs a value, got an empty one\n",
            name);
    *bad = true;
  }
  return true;
}

bool cli_parse_int(const char *opt, const char *s, long long min,
                   long long max, long long *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  bool number = *s && !*end && !isspace((unsigned char)*s);
  if (!number) {
    fprintf(stderr, "cltrain: %s expects a whole number, got '%s'\n", opt, s);
    return false;
  }
  if (errno == ERANGE || v < min || v > max) {
    fprintf(stderr,
            "cltrain: %s must be between %lld and %lld, got '%s'%s\n", opt,
            min, max, s, errno == ERANGE ? " (too large to represent)" : "");
    return false;
  }
  *out = v;
  return true;
}

bool cli_parse_double(const char *opt, const char *s, double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (!*s || *end || isspace((unsigned char)*s) || v != v) {
    fprintf(stderr, "cltrain: %s expects a number, got '%s'\n", opt, s);
    return false;
  }
  if (isinf(v) || (errno == ERANGE && v != 0.0)) {
    fprintf(stderr, "cltrain: %s is out of range, got '%s'\n", opt, s);
    return false;
  }
  *out = v;
  return true;
}

bool cli_check_output_path(const char *opt, const char *path) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    fprintf(stderr, "cltrain: %s %s: that is a folder; give a file name\n",
            opt, path);
    return false;
  }
  char dir[4096];
  const char *slash = strrchr(path, '/');
  int n = slash ? snprintf(dir, sizeof dir, "%.*s",
                           slash == path ? 1 : (int)(slash - path), path)
                : snprintf(dir, sizeof dir, ".");
  if (n < 0 || (size_t)n >= sizeof dir) {
    fprintf(stderr, "cltrain: %s: path too long\n", opt);
    return false;
  }
  bool exists = stat(dir, &st) == 0;
  if (!exists || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "cltrain: %s %s: %s %s\n", opt, path, dir,
            exists ? "is not a folder" : "does not exist");
    return false;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    fprintf(stderr, "cltrain: %s %s: the folder %s is not writable\n", opt,
            path, dir);
    return false;
  }
  return true;
}

double cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
