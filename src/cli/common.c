/* What the commands share: a context that reports its first-run
 * compilation, output paths checked before work, the clock. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

/* The library's warnings (a kernel cache that cannot be written, ...) are
 * for the user; its information and debug lines are not. */
void cli_print_warnings(clt_log_level level, const char *message,
                        void *user) {
  (void)user;
  if (level >= CLT_LOG_WARN)
    fprintf(stderr, "cltrain: %s: %s\n",
            level == CLT_LOG_WARN ? "warning" : "error", message);
}

/* What a first run on a device says when it compiles (tens of seconds on
 * a small CPU), so that it never sits silent: a line when the first
 * program of a device must be compiled, and cli_compile_graph's count of
 * what its compile built. The library calls it whenever a context builds
 * a program (on first use), so it lives as long as the process. */
static struct {
  int compiled;     /* programs compiled from source, all contexts */
  char device[256]; /* the device the last line named */
} build_report;

static void print_build_progress(const clt_device_info *device,
                                 const char *program, int index, int total,
                                 bool compiling, void *user) {
  (void)program, (void)index, (void)total, (void)user;
  if (!compiling) return;
  if (build_report.compiled++ == 0 ||
      strcmp(build_report.device, device->name) != 0) {
    snprintf(build_report.device, sizeof build_report.device, "%s",
             device->name);
    /* cli_open_context leaves the cache to $CLT_CACHE (-1) */
    const char *cache = getenv("CLT_CACHE");
    fprintf(stderr, "%scltrain: compiling kernels for %s (%s)...\n",
            isatty(STDERR_FILENO) ? "\r\033[K" : "", device->name,
            cache && !strcmp(cache, "0")
                ? "CLT_CACHE=0: no kernel cache, every run compiles"
                : "first run on this device and driver");
  }
}

clt_context *cli_open_context(const char *device, bool profiling) {
  clt_context_options opts;
  clt_context_options_init(&opts);
  opts.device = device;
  opts.profiling = profiling;
  opts.log = cli_print_warnings;
  opts.build_progress = print_build_progress;
  clt_context *ctx = NULL;
  char err[8192];
  clt_status st = clt_context_create(&opts, &ctx, err, sizeof err);
  if (st != CLT_OK) {
    fprintf(stderr, "cltrain: %s\n", err[0] ? err : clt_status_string(st));
    return NULL;
  }
  return ctx;
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

void cli_random_fill(float *x, int64_t n, uint64_t seed, float lo, float hi) {
  uint64_t s = seed;
  for (int64_t i = 0; i < n; i++) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    float u = (float)((z ^ (z >> 31)) >> 40) / 16777216.0f;
    x[i] = lo + (hi - lo) * u;
  }
}

const char *const cli_precision_names[] = {"fp32", "mixed", NULL};

const char *const cli_csv_values_names[] = {"bytes", "floats", NULL};

clt_csv_values cli_csv_values(bool given, int choice,
                              const clt_checkpoint_info *trained) {
  if (given) return (clt_csv_values)choice;
  return !strcmp(trained->input_values, "floats") ? CLT_CSV_FLOATS
                                                  : CLT_CSV_BYTES;
}

const char *const cli_csv_separator_names[] = {
    "auto", "comma", "tab", "semicolon", "pipe", "space", ",", ";", "|", NULL};
const char cli_csv_separator_chars[] = {0,   ',', '\t', ';', '|',
                                        ' ', ',', ';',  '|'};

const char *cli_label_column(const char *given,
                             const clt_checkpoint_info *trained) {
  if (given) return given;
  return trained->label_column[0] ? trained->label_column : NULL;
}

const char *cli_launched_ranks(void) {
  const char *n = getenv("OMPI_COMM_WORLD_SIZE");
  return n ? n : getenv("PMI_SIZE");
}

int cli_dist_open(clt_dist **dist) {
  *dist = NULL;
  const char *n = cli_launched_ranks();
  if (!n) return 0; /* not launched by mpirun: one process, as always */
  if (!clt_dist_available()) {
    if (atoi(n) <= 1) return 0;
    fprintf(stderr, "cltrain: launched as %s ranks, but this cltrain was "
                    "built without MPI (meson -Dmpi=enabled with Debian's "
                    "libopenmpi-dev)\n",
            n);
    return 1;
  }
  char err[1024] = "";
  if (clt_dist_create(NULL, dist, err, sizeof err) != CLT_OK) {
    fprintf(stderr, "cltrain: %s\n", err);
    return 1;
  }
  return 0;
}

void cli_warn_rank_cores(const clt_context *ctx, const clt_dist *dist) {
  if (!dist || !ctx) return;
  const clt_device_info *d = clt_context_device(ctx);
  if (d->type != CLT_DEVICE_CPU || d->compute_units < 2) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  int cores = CPU_COUNT(&set);
  if (cores <= 0 || (unsigned)cores >= d->compute_units) return;
  fprintf(stderr,
          "cltrain: warning: rank %d runs on %s (%u compute units) but may "
          "use only %d core%s: mpirun binds each rank to one core when it "
          "starts two or fewer; give CPU ranks their cores with mpirun "
          "--bind-to none (or --map-by slot:PE=N)\n",
          clt_dist_rank(dist), d->name, d->compute_units, cores,
          cores == 1 ? "" : "s");
}

const char *cli_rank_device(const char *spec, const clt_dist *dist,
                            char *buf, size_t len) {
  if (!spec || !*spec) spec = getenv("CLT_DEVICE");
  if (spec && !*spec) spec = NULL;
  int rank = clt_dist_rank(dist), size = clt_dist_size(dist);
  const char *mark = spec ? strstr(spec, "%r") : NULL;
  /* "gpu:%r": the rank-th GPU, wrapping round, as without a spec. */
  bool typed = mark && mark > spec && mark[-1] == ':' && mark[2] == '\0' &&
               (!strncasecmp(spec, "gpu:", 4) || !strncasecmp(spec, "cpu:", 4) ||
                !strncasecmp(spec, "accelerator:", 12));
  if (typed) {
    snprintf(buf, len, "%.*s", (int)(mark - 1 - spec), spec);
    spec = buf; /* the type's name; buf then receives the index */
    size = 2; /* choose by type even for one rank */
  } else if (mark) {
    snprintf(buf, len, "%.*s%d%s", (int)(mark - spec), spec, rank, mark + 2);
    return buf;
  }
  if (size <= 1) return spec;
  int type = -1; /* -1: GPUs if any, else CPUs */
  if (spec && strcasecmp(spec, "default") == 0) spec = NULL;
  if (!spec) type = -1;
  else if (strcasecmp(spec, "gpu") == 0) type = CLT_DEVICE_GPU;
  else if (strcasecmp(spec, "cpu") == 0) type = CLT_DEVICE_CPU;
  else if (strcasecmp(spec, "accelerator") == 0) type = CLT_DEVICE_ACCELERATOR;
  else return spec; /* a name or an index: the same device on every rank */
  clt_device_list list;
  if (clt_device_list_get(&list, NULL, 0) != CLT_OK) return spec;
  if (type < 0) {
    type = CLT_DEVICE_CPU;
    for (size_t i = 0; i < list.count; i++)
      if (list.devices[i].type == CLT_DEVICE_GPU) type = CLT_DEVICE_GPU;
  }
  int count = 0;
  for (size_t i = 0; i < list.count; i++)
    if ((int)list.devices[i].type == type) count++;
  /* Across machines: the rank among this machine's ranks, where the
   * launcher says (Open MPI, else PMI). */
  const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (!local) local = getenv("PMI_LOCAL_RANK");
  if (local && *local) rank = atoi(local);
  const char *out = spec;
  for (size_t i = 0, k = 0; count > 0 && i < list.count; i++) {
    if ((int)list.devices[i].type != type) continue;
    if ((int)k++ == rank % count) {
      snprintf(buf, len, "%d", list.devices[i].index);
      out = buf;
      break;
    }
  }
  clt_device_list_free(&list);
  return out;
}

int cli_print_mma_route(clt_context *ctx, bool *has) {
  const char *why = NULL;
  clt_fp16_route route;
  *has = false;
  if (clt_fp16_route_get(ctx, &route, &why) != CLT_OK) {
    fprintf(stderr, "cltrain: %s\n", clt_context_last_error(ctx));
    return 1;
  }
  printf("fp16 products: %s\n", why);
  *has = route != CLT_FP16_SGEMM;
  return 0;
}

static void *ticker_main(void *arg) {
  cli_ticker *t = arg;
  pthread_mutex_lock(&t->lock);
  while (!t->stop) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 250000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&t->wake, &t->lock, &until);
    double quiet = cli_now() - t->last;
    if (t->stop || quiet < 2.0) continue;
    fprintf(stderr, "\r\033[K");
    t->draw(t, quiet);
    fflush(stderr);
    t->drawn = true;
  }
  pthread_mutex_unlock(&t->lock);
  return NULL;
}

void cli_ticker_start(cli_ticker *t, void (*draw)(cli_ticker *, double),
                      void *user) {
  memset(t, 0, sizeof *t);
  t->last = cli_now();
  t->draw = draw;
  t->user = user;
  if (!isatty(STDERR_FILENO)) return;
  pthread_mutex_init(&t->lock, NULL);
  pthread_cond_init(&t->wake, NULL);
  t->running = pthread_create(&t->thread, NULL, ticker_main, t) == 0;
  if (!t->running) {
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
  }
}

void cli_ticker_stop(cli_ticker *t) {
  if (!t->running) return;
  pthread_mutex_lock(&t->lock);
  t->stop = true;
  pthread_cond_signal(&t->wake);
  pthread_mutex_unlock(&t->lock);
  pthread_join(t->thread, NULL);
  pthread_cond_destroy(&t->wake);
  pthread_mutex_destroy(&t->lock);
  t->running = false;
}

static void draw_preparing(cli_ticker *t, double quiet) {
  (void)t;
  fprintf(stderr, "preparing the model (a first run on a device compiles "
                  "kernels and times products): %.0f s",
          quiet);
}

clt_status cli_compile_graph(clt_graph *g, int64_t batch, uint64_t seed,
                             bool quiet) {
  if (quiet) return clt_graph_compile(g, batch, seed);
  cli_ticker t;
  double start = cli_now();
  int compiled = build_report.compiled;
  cli_ticker_start(&t, draw_preparing, NULL);
  clt_status st = clt_graph_compile(g, batch, seed);
  cli_ticker_stop(&t);
  if (t.drawn) fprintf(stderr, "\r\033[K");
  if (st != CLT_OK) return st;
  compiled = build_report.compiled - compiled;
  int measured = 0;
  for (int i = 0; i < clt_graph_plan_count(g); i++) {
    clt_plan_info p;
    if (clt_graph_plan_info(g, i, &p) == CLT_OK &&
        p.source == CLT_PLAN_FROM_MEASURED)
      measured++;
  }
  if (compiled == 0 && measured == 0) return CLT_OK;
  char what[160] = "";
  size_t len = 0;
  if (compiled > 0)
    len = (size_t)snprintf(what, sizeof what, "compiled %d kernel program%s",
                           compiled, compiled == 1 ? "" : "s");
  if (measured > 0)
    snprintf(what + len, sizeof what - len,
             "%smeasured the plans of %d product%s",
             compiled > 0 ? " and " : "", measured, measured == 1 ? "" : "s");
  fprintf(stderr, "cltrain: %s in %.1f s%s\n", what, cli_now() - start,
          measured > 0 ? "; later runs at this batch size load them" : "");
  return CLT_OK;
}

/* Each name of a comma-separated list (spaces around names ignored),
 * trained or frozen; errors name the command (`cmd`) and option. */
static clt_status set_layers(clt_context *ctx, clt_graph *g, const char *cmd,
                             const char *list, const char *option,
                             bool trainable) {
  char name[256];
  const char *p = list;
  for (;;) {
    while (*p == ' ') p++;
    size_t len = strcspn(p, ",");
    while (len > 0 && p[len - 1] == ' ') len--;
    if (len == 0 || len >= sizeof name) {
      fprintf(stderr, "cltrain %s: %s '%s': %s\n", cmd, option, list,
              len == 0 ? "an empty layer name (names are separated by commas)"
                       : "a layer name too long");
      return CLT_ERR_INVALID_ARGUMENT;
    }
    memcpy(name, p, len);
    name[len] = '\0';
    if (clt_graph_set_trainable(g, name, trainable) != CLT_OK) {
      fprintf(stderr, "cltrain %s: %s: %s\n", cmd, option,
              clt_context_last_error(ctx));
      return CLT_ERR_INVALID_ARGUMENT;
    }
    p += strcspn(p, ",");
    if (!*p) return CLT_OK;
    p++;
  }
}

clt_status cli_freeze_layers(clt_context *ctx, clt_graph *g, const char *cmd,
                             const char *freeze, const char *train_only) {
  clt_status st = CLT_OK;
  if (freeze) {
    st = set_layers(ctx, g, cmd, freeze, "--freeze", false);
  } else if (train_only) {
    st = clt_graph_set_trainable(g, NULL, false);
    if (st == CLT_OK)
      st = set_layers(ctx, g, cmd, train_only, "--train-only", true);
  }
  if (st != CLT_OK) return st;
  if (clt_graph_frozen_layers(g, NULL, 0) > 0 &&
      clt_graph_parameter_count(g) == 0) {
    fprintf(stderr, "cltrain %s: %s: every layer with weights is frozen; "
                    "nothing is left to train\n",
            cmd, freeze ? "--freeze" : "--train-only");
    return CLT_ERR_INVALID_ARGUMENT;
  }
  return CLT_OK;
}
