/* Shared pieces of the cltrain command. */
#ifndef CLT_CLI_CLI_H
#define CLT_CLI_CLI_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <stdarg.h>

#include "cltrain.h"
#include "cltrain_image.h" /* PNG and JPEG: libcltrain-image */

/* An error of the command's own code: a status and what went wrong. */
typedef struct cli_err {
  clt_status status;
  char msg[2048];
} cli_err;

/* Sets *e (when not NULL) and returns status. */
__attribute__((format(printf, 3, 4))) static inline clt_status
cli_err_set(cli_err *e, clt_status status, const char *fmt, ...) {
  if (e) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->status = status;
  }
  return status;
}

/* A regular file of at most max_bytes, whole, into *bytes (malloc'ed, a
 * 0 byte after its *size bytes, so that text reads as a string); errors
 * name the file. */
clt_status cli_read_file(const char *path, int64_t max_bytes, uint8_t **bytes,
                         size_t *size, cli_err *err);

/* Upper bounds of options whose value sizes an allocation: a typo of a few
 * digits gets a clear error instead of an attempt to allocate it. */
#define CLI_MAX_EPOCHS 1000000
#define CLI_MAX_PAD_CROP 1024
/* "s" after a count other than 1: "%d epoch%s", n, CLI_PLURAL(n) */
#define CLI_PLURAL(n) ((n) == 1 ? "" : "s")

/* Each command: argc/argv start at the command's own arguments. Returns
 * the process exit status. */
int cli_devices(int argc, char **argv);
int cli_selftest(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_train(int argc, char **argv);
int cli_eval(int argc, char **argv);
int cli_predict(int argc, char **argv);
int cli_tune(int argc, char **argv);
int cli_summary(int argc, char **argv);

/* The --precision choices, in clt_precision's order (CLT_PRECISION_FP32,
 * CLT_PRECISION_MIXED), NULL-terminated (options.h CLI_CHOICE). */
extern const char *const cli_precision_names[];

/* The --csv-values choices, in clt_csv_values' order (CLT_CSV_BYTES,
 * CLT_CSV_FLOATS), NULL-terminated. */
extern const char *const cli_csv_values_names[];

/* The help text of train's and eval's --csv-values. */
#define CLI_CSV_VALUES_HELP                                                    \
  "CSV data: bytes (default: whole numbers 0-255, scaled\n"                   \
  "to [0, 1] as images) or floats (any number, as it is:\n"                  \
  "tabular data); with --resume, and in eval, the default\n"                 \
  "is what the checkpoint was trained on"

/* The --csv-separator choices, NULL-terminated, and the character each
 * means (clt_data_options.csv_separator; 0: found from the first line). */
extern const char *const cli_csv_separator_names[];
extern const char cli_csv_separator_chars[];

/* The help text of --csv-separator. */
#define CLI_CSV_SEPARATOR_HELP                                                 \
  "CSV data: what separates the values: auto (default:\n"                    \
  "found from the first line), comma, tab, semicolon,\n"                     \
  "pipe or space (runs of spaces and tabs); or , ; |"

/* The help text of train's and eval's --label-column. */
#define CLI_LABEL_COLUMN_HELP                                                  \
  "CSV data: the column of the label (or of the first\n"                      \
  "target): first (default), last, a number from 1, or\n"                     \
  "a name in the header line; with --resume, and in\n"                       \
  "eval, the default is what the checkpoint was trained on"

/* The label column of CSV data: --label-column where given, else the
 * checkpoint's record (NULL: the first column). */
const char *cli_label_column(const char *given,
                             const clt_checkpoint_info *trained);

/* How CSV data is read: --csv-values where given (choice), else as the
 * checkpoint described by trained was (floats where it recorded them),
 * else bytes. */
clt_csv_values cli_csv_values(bool given, int choice,
                              const clt_checkpoint_info *trained);

/* Reads class names, one a line (blank lines and trailing spaces ignored,
 * '#' comments not: a name may hold any character). Returns a malloc'd
 * array of *count malloc'd strings, freed with cli_labels_free, or NULL
 * after printing why. */
char **cli_labels_read(const char *path, int *count);
void cli_labels_free(char **labels, int count);

/* Creates a context on `device` (NULL: $CLT_DEVICE or the default),
 * printing the error to stderr on failure. */
clt_context *cli_open_context(const char *device, bool profiling);

/* Whether a file can be written at path (its folder exists and is
 * writable, and path is not a folder), checked before any work so that a
 * long run does not end by losing its result; prints why not, naming opt. */
bool cli_check_output_path(const char *opt, const char *path);

/* A growable text buffer (an SVG chart, predict's CSV): cli_put appends
 * printf-style; a failed allocation sticks in `failed` and later puts do
 * nothing. Free s. */
typedef struct cli_text {
  char *s;
  size_t len, cap;
  bool failed;
} cli_text;
void cli_put(cli_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

double cli_now(void);

/* A line on a terminal that says a long call is alive: its thread takes
 * the lock four times a second and, once `last` is two seconds old,
 * redraws the line with draw(t, seconds since last) (user is the
 * caller's). Whoever else draws on that line takes the lock and sets
 * last = cli_now(). Off a terminal the thread does not start (running
 * false). */
typedef struct cli_ticker {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  pthread_t thread;
  bool running, stop;
  bool drawn; /* the ticker drew at least once */
  double last;
  void (*draw)(struct cli_ticker *t, double quiet);
  void *user;
} cli_ticker;
void cli_ticker_start(cli_ticker *t, void (*draw)(cli_ticker *, double),
                      void *user);
/* Stops and joins the thread (the line is left as it is). */
void cli_ticker_stop(cli_ticker *t);

/* clt_graph_compile, with a terminal line that counts the seconds
 * meanwhile (from the third on) and, where plans were measured (a first
 * run on the device, CLT_PLAN=remeasure), a line on stderr saying how
 * many and how long; quiet: neither. */
clt_status cli_compile_graph(clt_graph *g, int64_t batch, uint64_t seed,
                             bool quiet);

/* --freeze LAYERS or --train-only LAYERS (names, comma-separated; at
 * most one of the two not NULL) of command cmd ("train"): those layers
 * frozen, or every layer with weights but those; errors on stderr naming
 * cmd and the option (an unknown name, a layer without weights), and a
 * run with nothing left to train is refused (CLT_ERR_INVALID_ARGUMENT). */
clt_status cli_freeze_layers(clt_context *ctx, clt_graph *g, const char *cmd,
                             const char *freeze, const char *train_only);
/* What train, bench train and tune say when given both. */
#define CLI_FREEZE_EXCLUSIVE                                                   \
  "--freeze and --train-only exclude each other (--train-only LAYERS "         \
  "freezes every other layer)"

/* Returns from the calling function with the status of expr unless it is
 * CLT_OK. */
#define CLI_TRY(expr)                                                          \
  do {                                                                         \
    clt_status cli_try_status_ = (expr);                                       \
    if (cli_try_status_ != CLT_OK) return cli_try_status_;                     \
  } while (0)

/* n floats uniform in [lo, hi) from seed (splitmix64), for benchmarks. */
void cli_random_fill(float *x, int64_t n, uint64_t seed, float lo, float hi);

/* The ranks mpirun launched (Open MPI's or a PMI launcher's environment),
 * as its text; NULL when not launched by mpirun. */
const char *cli_launched_ranks(void);

/* Under mpirun (Open MPI's or a PMI launcher's environment): joins the job
 * (*dist, NULL for one process) and returns 0; prints why not and returns
 * non-zero when the launch asks for several ranks and MPI cannot be had. */
int cli_dist_open(clt_dist **dist);

/* The device spec of this rank (into buf): spec (or $CLT_DEVICE) with
 * "%r" replaced by the rank; "TYPE:%r", or with several ranks no spec or
 * a TYPE ("gpu", "cpu", "accelerator"): the (rank mod count)-th device of
 * that type, rank counted on this machine where the launcher says (no
 * spec: GPUs if there are any, else CPUs); else spec. */
const char *cli_rank_device(const char *spec, const clt_dist *dist,
                            char *buf, size_t len);

/* Under mpirun: where this rank runs on a CPU device but may use fewer
 * cores than the device has compute units (Open MPI binds each rank to
 * one core when it starts two or fewer, to a socket beyond; POCL still
 * starts a thread per compute unit, all on those cores), says so on
 * stderr, naming the rank and mpirun's --bind-to none. */
void cli_warn_rank_cores(const clt_context *ctx, const clt_dist *dist);

/* The context's log callback of the commands: warnings and errors to
 * stderr, the rest dropped. */
void cli_print_warnings(clt_log_level level, const char *message, void *user);

/* Probes the context's fp16 route (clt_fp16_route_get) and prints it on a
 * line "fp16 products: ..."; *has whether there is one (not SGEMM); 1
 * (error printed) when the probe fails. */
int cli_print_mma_route(clt_context *ctx, bool *has);

#endif
