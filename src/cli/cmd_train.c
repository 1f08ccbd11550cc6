/* cltrain train and cltrain bench train. */
#include <errno.h>
#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <strings.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "cli/plot.h"

typedef struct train_args {
  const char *model, *data, *test_data, *val_data, *device, *log_path;
  const char *save, *resume, *init, *plot;
  const char *freeze, *train_only; /* layer names, comma-separated */
  long long epochs, batch, seed, train_limit, test_limit, save_every;
  long long pad_crop, early_stop, patience, warmup_epochs, step_epochs;
  clt_optimizer_options opt;
  bool quiet, no_shuffle, seed_given, hflip, resize, nesterov, json;
  bool lr_given, wd_given, profile, alpha_given, centered, pct_start_given;
  double holdout, val_split, lr, momentum, weight_decay, clip_norm, gamma;
  double min_delta, loss_scale, alpha, pct_start;
  double progress_seconds; /* CLT_PROGRESS_SECONDS (print_plain_progress) */
  long long scale_growth;
  int optimizer, schedule, precision;
  int csv_values; /* clt_csv_values */
  bool csv_values_given;
  const char *label_column; /* NULL: not given */
  int csv_separator;        /* cli_csv_separator_names' index */
} train_args;

static const char *const optimizer_names[] = {"sgd", "adam", "adamw",
                                              "rmsprop", NULL};
static const char *const schedule_names[] = {"constant", "step", "cosine",
                                             "plateau", "onecycle", NULL};

#define TRAIN_OPTIONS(a)                                                       \
  {"data", CLI_STRING, &(a)->data, "DATA",                                     \
   "fashion-mnist, a folder of IDX files, FILE.csv, a folder\n"                \
   "holding train.csv (and test.csv), or a folder holding\n"                   \
   "train/<class>/<images> (and test/<class>/...)", 0, 0, 0, 0, 0},            \
  {"test-data", CLI_STRING, &(a)->test_data, "TEST",                           \
   "test data: a CSV file or a folder of class folders", 0, 0, 0, 0, 0},       \
  {"val-data", CLI_STRING, &(a)->val_data, "VAL",                              \
   "validation data, as TEST (a CSV file or a folder of class\n"               \
   "folders): its loss drives --early-stop and --schedule\n"                   \
   "plateau", 0, 0, 0, 0, 0},                                                  \
  {"val-split", CLI_DOUBLE, &(a)->val_split, "F",                              \
   "hold out a random fraction F of the training data (seeded\n"               \
   "by --seed) as the validation set: its loss drives\n"                       \
   "--early-stop and --schedule plateau (default 0: none)",                    \
   0, 0.99, 0, 0, 0},                                                          \
  {"holdout", CLI_DOUBLE, &(a)->holdout, "F",                                  \
   "without test data: the last fraction F of the training\n"                  \
   "data is the test set (default 0.1; 0: none)", 0, 0.99, 0, 0, 0},           \
  {"resize", CLI_FLAG, &(a)->resize, NULL,                                     \
   "resize images of another size than the model's input", 0, 0, 0, 0, 0},     \
  {"csv-values", CLI_CHOICE, &(a)->csv_values, "V", CLI_CSV_VALUES_HELP, 0,    \
   0, 0, cli_csv_values_names, &(a)->csv_values_given},                        \
  {"label-column", CLI_STRING, &(a)->label_column, "C",                        \
   CLI_LABEL_COLUMN_HELP, 0, 0, 0, 0, 0},                                      \
  {"csv-separator", CLI_CHOICE, &(a)->csv_separator, "S",                      \
   CLI_CSV_SEPARATOR_HELP, 0, 0, 0, cli_csv_separator_names, 0},               \
  {"epochs", CLI_INT, &(a)->epochs, "N", "epochs (default 5)", 1,              \
   CLI_MAX_EPOCHS, 0, 0, 0},                                                   \
  {"batch", CLI_INT, &(a)->batch, "B", "batch size (default 32)", 1,           \
   INT_MAX, 0, 0, 0},                                                          \
  {"optimizer", CLI_CHOICE, &(a)->optimizer, "NAME",                           \
   "sgd, adam (default), adamw or rmsprop", 0, 0, 0, optimizer_names, 0},      \
  {"lr", CLI_DOUBLE, &(a)->lr, "X",                                            \
   "learning rate (default: 0.01 sgd, 0.001 adam, adamw\n"                    \
   "and rmsprop)", 0, 1e6, 1, 0, &(a)->lr_given},                              \
  {"momentum", CLI_DOUBLE, &(a)->momentum, "M",                                \
   "sgd and rmsprop momentum (default 0)", 0, 1, 0, 0, 0},                     \
  {"nesterov", CLI_FLAG, &(a)->nesterov, NULL, "SGD with Nesterov momentum",   \
   0, 0, 0, 0, 0},                                                             \
  {"alpha", CLI_DOUBLE, &(a)->alpha, "A",                                      \
   "rmsprop: the mean square's smoothing constant, PyTorch's\n"               \
   "alpha, Keras's rho (default 0.99; 0 to under 1)", 0, 1, 0, 0,             \
   &(a)->alpha_given},                                                         \
  {"centered", CLI_FLAG, &(a)->centered, NULL,                                 \
   "rmsprop: divide by the gradient's variance instead of\n"                  \
   "its mean square", 0, 0, 0, 0, 0},                                         \
  {"weight-decay", CLI_DOUBLE, &(a)->weight_decay, "W",                        \
   "L2 (sgd, adam, rmsprop) or decoupled (adamw; default\n"                   \
   "0.01)", 0, 1e6, 0, 0, &(a)->wd_given},                                     \
  {"clip-norm", CLI_DOUBLE, &(a)->clip_norm, "X",                              \
   "clip gradients by global norm X (default 0: off)", 0, HUGE_VAL, 0, 0, 0},  \
  {"schedule", CLI_CHOICE, &(a)->schedule, "S",                                \
   "constant (default), step, cosine, plateau (multiply\n"                    \
   "the rate by --gamma after --patience epochs without a\n"                   \
   "better validation, else test, loss) or onecycle\n"                         \
   "(PyTorch's OneCycleLR: up to --lr and down, step by\n"                      \
   "step, the momentum or beta1 the other way)", 0, 0, 0,                      \
   schedule_names, 0},                                                         \
  {"pct-start", CLI_DOUBLE, &(a)->pct_start, "P",                              \
   "onecycle: the fraction of the steps spent rising\n"                        \
   "(default 0.3)", 0, 1, 1, 0, &(a)->pct_start_given},                        \
  {"step-epochs", CLI_INT, &(a)->step_epochs, "N",                             \
   "step schedule: epochs between decays (default 1)", 1, INT_MAX, 0, 0, 0},   \
  {"gamma", CLI_DOUBLE, &(a)->gamma, "G",                                      \
   "step and plateau: decay factor (default 0.1)", 0, 1, 1, 0, 0},             \
  {"patience", CLI_INT, &(a)->patience, "N",                                   \
   "plateau: epochs without improvement before a decay\n"                      \
   "(default 10)", 1, INT_MAX, 0, 0, 0},                                        \
  {"warmup-epochs", CLI_INT, &(a)->warmup_epochs, "N",                         \
   "raise the rate linearly from near 0 over the first N\n"                    \
   "epochs, step by step (default 0)", 0, CLI_MAX_EPOCHS, 0, 0, 0},            \
  {"early-stop", CLI_INT, &(a)->early_stop, "N",                               \
   "stop after N epochs without a better validation (else\n"                   \
   "test) loss, and keep the best weights (--save writes\n"                    \
   "them at each improvement)", 1, CLI_MAX_EPOCHS, 0, 0, 0},                   \
  {"min-delta", CLI_DOUBLE, &(a)->min_delta, "D",                              \
   "--early-stop, plateau: an improvement is a loss lower by\n"                \
   "more than D (default 0)", 0, HUGE_VAL, 0, 0, 0},                           \
  {"precision", CLI_CHOICE, &(a)->precision, "P",                              \
   "fp32 (default) or mixed: fp16 values with f32 master\n"                     \
   "weights and dynamic loss scaling (README \"Mixed precision\")",              \
   0, 0, 0, cli_precision_names, 0},                                           \
  {"loss-scale", CLI_DOUBLE, &(a)->loss_scale, "S",                            \
   "mixed: the initial loss scale (default 65536)", 1, 1e38, 0, 0, 0},          \
  {"scale-growth", CLI_INT, &(a)->scale_growth, "N",                           \
   "mixed: double the loss scale after N steps in a row\n"                     \
   "without an overflow (default 2000)", 1, INT_MAX, 0, 0, 0},                  \
  {"seed", CLI_INT, &(a)->seed, "S",                                           \
   "seed for initialisation, shuffling and --val-split\n(default 1)", 0,       \
   (double)LLONG_MAX, 0, 0, &(a)->seed_given},                                 \
  {"device", CLI_STRING, &(a)->device, "D",                                    \
   "device (see `cltrain devices`)", 0, 0, 0, 0, 0},                           \
  {"train-limit", CLI_INT, &(a)->train_limit, "N",                             \
   "train on the first N samples only", 1, (double)LLONG_MAX, 0, 0, 0},        \
  {"test-limit", CLI_INT, &(a)->test_limit, "N",                               \
   "test on the first N samples only", 1, (double)LLONG_MAX, 0, 0, 0},         \
  {"no-shuffle", CLI_FLAG, &(a)->no_shuffle, NULL, "keep the file order", 0,   \
   0, 0, 0, 0},                                                                \
  {"pad-crop", CLI_INT, &(a)->pad_crop, "N",                                   \
   "augment: random crop after zero padding by N pixels", 0,                   \
   CLI_MAX_PAD_CROP, 0, 0, 0},                                                 \
  {"hflip", CLI_FLAG, &(a)->hflip, NULL, "augment: random horizontal flips",   \
   0, 0, 0, 0, 0},                                                             \
  {"log", CLI_STRING, &(a)->log_path, "FILE.csv",                              \
   "one row per epoch (appended to when resuming)", 0, 0, 0, 0, 0},            \
  {"save", CLI_STRING, &(a)->save, "FILE",                                     \
   "checkpoint (safetensors) after the last epoch, atomically", 0, 0, 0, 0,    \
   0},                                                                         \
  {"save-every", CLI_INT, &(a)->save_every, "N", "... and after every N epochs",\
   1, INT_MAX, 0, 0, 0},                                                       \
  {"resume", CLI_STRING, &(a)->resume, "FILE",                                 \
   "continue from a checkpoint (same model file, optimizer\n"                  \
   "and data): --epochs is the total to reach", 0, 0, 0, 0, 0},                \
  {"init", CLI_STRING, &(a)->init, "FILE",                                     \
   "start from a checkpoint's weights only (fine-tuning)", 0, 0, 0, 0, 0},     \
  {"freeze", CLI_STRING, &(a)->freeze, "LAYERS",                              \
   "freeze these layers (names, comma-separated): their\n"                     \
   "weights keep their values (fine-tuning after --init);\n"                   \
   "with --resume, the default is the checkpoint's", 0, 0, 0, 0, 0},           \
  {"train-only", CLI_STRING, &(a)->train_only, "LAYERS",                       \
   "freeze every layer with weights but these", 0, 0, 0, 0, 0},               \
  {"plot", CLI_STRING, &(a)->plot, "FILE.svg",                                 \
   "chart of loss and accuracy per epoch, updated each epoch", 0, 0, 0, 0, 0}, \
  {"json", CLI_FLAG, &(a)->json, NULL,                                         \
   "print the result as one JSON object on stdout (the\n"                      \
   "epoch lines go to stderr)", 0, 0, 0, 0, 0},                                \
  {"profile", CLI_FLAG, &(a)->profile, NULL,                                   \
   "after each epoch, how busy the device was (OpenCL event\n"                 \
   "profiling) and how long the host waited for data and for\n"                \
   "the device; at the end, the last epoch's device time by op",               \
   0, 0, 0, 0, 0},                                                             \
  {"quiet", CLI_FLAG, &(a)->quiet, NULL, "only the final line", 0, 0, 0, 0, 0}

static int parse_train_args(int argc, char **argv, train_args *a) {
  memset(a, 0, sizeof *a);
  a->epochs = 5;
  a->batch = 32;
  a->seed = 1;
  a->holdout = 0.1;
  a->optimizer = CLT_OPT_ADAM;
  a->schedule = CLT_SCHEDULE_CONSTANT;
  a->gamma = 0.1;
  a->step_epochs = 1;
  a->patience = 10;
  const cli_option options[] = {TRAIN_OPTIONS(a)};
  const cli_command cmd = {
      "train", "MODEL --data DATA [--test-data TEST] [options]",
      "  trains MODEL (a model file, see samples/) on DATA; see README.md\n"
      "  \"Your own data\" for the layouts DATA may have. Ctrl-C ends the run\n"
      "  when the epoch in progress has ended (saved as a last epoch, so\n"
      "  --resume goes on from it); twice, after the batch in progress\n",
      options, (int)(sizeof options / sizeof options[0]), 1, 1, "MODEL file"};
  const char *pos[1];
  int npos = 0;
  int rc = cli_parse(&cmd, argc, argv, pos, &npos);
  if (rc >= 0) return rc;
  a->model = pos[0];
  bool adam = a->optimizer == CLT_OPT_ADAM || a->optimizer == CLT_OPT_ADAMW;
  bool rmsprop = a->optimizer == CLT_OPT_RMSPROP;
  const char *bad = !a->data ? "--data is required"
                    : adam && a->momentum > 0
                        ? "--momentum is for sgd and rmsprop; adam and adamw "
                          "keep their own (beta1 0.9)"
                    : a->nesterov && a->optimizer != CLT_OPT_SGD
                        ? "--nesterov is for --optimizer sgd"
                    : (a->alpha_given || a->centered) && !rmsprop
                        ? "--alpha and --centered are for --optimizer rmsprop"
                    : a->alpha_given && a->alpha >= 1.0
                        ? "--alpha must be under 1 (the mean square would "
                          "never move)"
                    : a->val_data && a->val_split > 0
                        ? "--val-data and --val-split exclude each other (one "
                          "validation set)"
                    : a->resume && a->init
                        ? "--resume and --init exclude each other (--resume "
                          "continues a run, --init starts a new one from its "
                          "weights)"
                    : a->pct_start_given &&
                            a->schedule != CLT_SCHEDULE_ONECYCLE
                        ? "--pct-start is for --schedule onecycle"
                    : a->warmup_epochs > 0 &&
                            a->schedule == CLT_SCHEDULE_ONECYCLE
                        ? "--warmup-epochs and --schedule onecycle exclude "
                          "each other (onecycle warms up itself: "
                          "--pct-start)"
                    : a->freeze && a->train_only ? CLI_FREEZE_EXCLUSIVE
                    : (a->loss_scale > 0 || a->scale_growth > 0) &&
                            a->precision != CLT_PRECISION_MIXED
                        ? "--loss-scale and --scale-growth need --precision "
                          "mixed"
                    : a->save_every && !a->save ? "--save-every needs --save FILE"
                    : a->save_every && a->early_stop
                        ? "--save-every and --early-stop exclude each other "
                          "(with --early-stop, --save writes the best "
                          "weights at each improvement)"
                        : NULL;
  if (bad) {
    fprintf(stderr, "cltrain train: %s\n", bad);
    return 2;
  }
  clt_optimizer_options_init(&a->opt, (clt_optimizer_kind)a->optimizer);
  if (a->lr_given) a->opt.lr = (float)a->lr;
  if (a->wd_given) a->opt.weight_decay = (float)a->weight_decay;
  a->opt.momentum = (float)a->momentum;
  a->opt.nesterov = a->nesterov;
  if (a->alpha_given) a->opt.alpha = (float)a->alpha;
  a->opt.centered = a->centered;
  a->opt.clip_norm = (float)a->clip_norm;
  a->opt.schedule = (clt_schedule)a->schedule;
  a->opt.gamma = (float)a->gamma;
  a->opt.step_epochs = (int)a->step_epochs;
  a->opt.patience = (int)a->patience;
  a->opt.min_delta = (float)a->min_delta;
  a->opt.warmup_epochs = (int)a->warmup_epochs;
  a->opt.total_epochs = (int)a->epochs;
  if (a->pct_start_given) a->opt.pct_start = (float)a->pct_start;
  a->progress_seconds = 60.0;
  const char *every = getenv("CLT_PROGRESS_SECONDS");
  if (every && *every) {
    char *end = NULL;
    double v = strtod(every, &end);
    if (*end || !(v >= 0.0)) {
      fprintf(stderr, "cltrain: CLT_PROGRESS_SECONDS=%s: not a number of "
                      "seconds (0: no progress lines off a terminal)\n",
              every);
      return 1;
    }
    a->progress_seconds = v;
  }
  return -1;
}

typedef struct watchdog watchdog;

/* --profile: the last epoch's device time by op (the library's rows are
 * valid only during its report), and the epoch's figures. */
typedef struct epoch_profile {
  clt_profile_row *rows;
  size_t count;
  clt_epoch_stats stats;
} epoch_profile;

static void print_profile_rows(FILE *out, const clt_profile_row *rows,
                               size_t n, bool by_layer, long long steps,
                               double secs);

/* What --profile says where the device's profiling clock does not run
 * (clt_profile_timed). */
#define UNTIMED_DEVICE                                                        \
  "device time unknown: this device's OpenCL driver gives no usable "        \
  "command times"

/* The device's busy share ("device busy 0.216 s of 0.255 s (84%)") and
 * the host's waits, as --profile prints them after each epoch, and over
 * MPI for each rank at the end. */
static void print_busy(FILE *out, double device, double run, double data,
                       double wait) {
  if (isnan(device))
    fprintf(out, UNTIMED_DEVICE);
  else
    fprintf(out, "device busy %.3f s of %.3f s (%.0f%%)", device, run,
            run > 0 ? 100.0 * device / run : 0.0);
  fprintf(out, "; the host waited %.3f s for data, %.3f s for the device\n",
          data, wait);
}

/* --profile's line after an epoch's. */
static void print_epoch_profile(FILE *out, const clt_epoch_stats *s) {
  fprintf(out, "  profile: ");
  print_busy(out, s->device_seconds, s->seconds - s->compile_seconds,
             s->wait_data_seconds, s->wait_device_seconds);
}

/* Keeps the epoch's rows (their names are the library's, kept for the
 * context's life). */
static void keep_epoch_profile(epoch_profile *p, const clt_epoch_stats *s) {
  clt_profile_row *rows =
      s->profile_rows ? malloc(s->profile_rows * sizeof *rows) : NULL;
  if (s->profile_rows && !rows) return; /* the earlier epoch's stay */
  if (rows) memcpy(rows, s->profile, s->profile_rows * sizeof *rows);
  free(p->rows);
  p->rows = rows;
  p->count = s->profile_rows;
  p->stats = *s;
  p->stats.profile = NULL;
}

typedef struct progress_out {
  bool tty, quiet;
  FILE *log;
  const char *plot, *title;
  clt_epoch_stats *hist; /* every epoch so far, resumed ones included */
  int last_epoch;
  /* The phase on the progress line and when it began (for its ETA). */
  int phase_epoch;
  clt_progress_phase phase;
  double phase_start;
  watchdog *dog; /* NULL unless on a terminal */
  bool regression; /* mse, mae, huber: a loss and a mae, no accuracy */
  const char *unit; /* what the speed counts: "images" (a C x H x W input)
                       or "samples" (flat data) */
  bool early_stop;  /* mark the best epochs */
  FILE *out;        /* the epoch lines: stdout, or stderr under --json */
  /* Off a terminal: seconds between progress lines, when the last was. */
  double plain_every, plain_last;
  epoch_profile *prof; /* --profile, else NULL */
  /* The graph, for the class weights clt_fit learnt (said once, at the
   * first report); NULL once said. */
  clt_graph *learnt;
} progress_out;

/* On a terminal, a line that says the run is alive when the library has
 * not reported for a while: above all the first steps on a new device,
 * where CLBlast compiles its GEMM kernels (tens of seconds each on a small
 * CPU) inside the first training step. The progress callback and the
 * ticker draw under the ticker's lock. */
struct watchdog {
  cli_ticker ticker;
  bool reported;
  int epoch, epochs;
};

static void draw_watchdog(cli_ticker *t, double quiet) {
  watchdog *w = t->user;
  if (!w->reported)
    fprintf(stderr, "epoch %d/%d: first steps, %.0f s (CLBlast compiles its "
                    "GEMM kernels for this device once)",
            w->epoch, w->epochs, quiet);
  else
    fprintf(stderr, "epoch %d/%d: working, %.0f s since the last report "
                    "(new shapes compile GEMM kernels once)",
            w->epoch, w->epochs, quiet);
}

static void watchdog_start(watchdog *w, int first_epoch, int epochs) {
  memset(w, 0, sizeof *w);
  w->epoch = first_epoch;
  w->epochs = epochs;
  cli_ticker_start(&w->ticker, draw_watchdog, w);
}

/* Columns of the terminal on stderr: its window size, else $COLUMNS, else
 * 80. A line one column short of it never wraps, so \r redraws in place. */
static int terminal_columns(void) {
  struct winsize ws;
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  const char *env = getenv("COLUMNS");
  int c = env ? atoi(env) : 0;
  return c > 0 ? c : 80;
}

/* "1:02:03", "2:03" or "7s". */
static void format_duration(double seconds, char *out, size_t len) {
  long s = seconds > 0 && seconds < 1e8 ? (long)(seconds + 0.5) : 0;
  if (s >= 3600)
    snprintf(out, len, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else if (s >= 60)
    snprintf(out, len, "%ld:%02ld", s / 60, s % 60);
  else
    snprintf(out, len, "%lds", s);
}

/* One line, Keras-style: where the epoch is, a bar that takes the columns
 * the rest leaves (none on a narrow terminal or off one), time spent and
 * to go. */
static void format_progress_line(const progress_out *po,
                                 const clt_progress *p, int columns,
                                 char *line, size_t len) {
  double elapsed = cli_now() - po->phase_start;
  char spent[32], left[32] = "?";
  format_duration(elapsed, spent, sizeof spent);
  if (p->batch > 0 && p->batches >= p->batch)
    format_duration(elapsed * (double)(p->batches - p->batch) /
                        (double)p->batch,
                    left, sizeof left);
  char head[64], tail[160], metrics[64];
  if (po->regression) /* as the epoch line: 4 significant digits */
    snprintf(metrics, sizeof metrics, "loss %.4g mae %.4g", p->loss, p->mae);
  else
    snprintf(metrics, sizeof metrics, "loss %.4f acc %.4f", p->loss,
             p->accuracy);
  snprintf(head, sizeof head, "epoch %d/%d %s ", p->epoch, p->epochs,
           p->phase == CLT_PHASE_TRAIN ? "train" : "test ");
  snprintf(tail, sizeof tail, " %lld/%lld %s ETA %s %s %.0f %s/s",
           (long long)p->batch, (long long)p->batches, spent, left, metrics,
           p->images_per_sec,
           strcmp(po->unit, "images") == 0 ? "img" : po->unit);
  int room = columns - 1 - (int)strlen(head) - (int)strlen(tail);
  int width = room - 2 < 30 ? room - 2 : 30; /* 2: the brackets */
  char bar[40] = "";
  if (width >= 6) {
    int filled = p->batches ? (int)(width * p->batch / p->batches) : 0;
    bar[0] = '[';
    for (int i = 0; i < width; i++)
      bar[1 + i] = i < filled ? '=' : (i == filled ? '>' : '.');
    bar[width + 1] = ']';
    bar[width + 2] = '\0';
  }
  snprintf(line, len, "%s%s%s", head, bar, bar[0] ? tail : tail + 1);
}

static void draw_progress_line(const progress_out *po,
                               const clt_progress *p) {
  char line[320];
  int cols = terminal_columns();
  format_progress_line(po, p, cols, line, sizeof line);
  if (cols - 1 > 0 && (int)strlen(line) > cols - 1) line[cols - 1] = '\0';
  fprintf(stderr, "\r\033[K%s", line);
  fflush(stderr);
}

/* Off a terminal (a log file, a batch job), the same line without its bar,
 * as a line of its own every po->plain_every seconds (CLT_PROGRESS_SECONDS,
 * default 60; 0: never): short runs print nothing more than their epoch
 * lines, an epoch of an hour shows where it is. */
static void print_plain_progress(progress_out *po, const clt_progress *p) {
  double now = cli_now();
  if (po->plain_every <= 0.0) return;
  if (po->plain_last == 0.0) po->plain_last = now;
  if (now - po->plain_last < po->plain_every) return;
  po->plain_last = now;
  char line[320];
  format_progress_line(po, p, 0, line, sizeof line);
  fprintf(stderr, "%s\n", line);
  fflush(stderr);
}

/* Redraws the chart after each epoch, so a long run can be watched. A
 * chart that cannot be written costs a warning, not the training. */
static void update_plot(progress_out *po) {
  if (!po->plot) return;
  cli_err err = {0};
  if (clt_plot_history_svg(po->hist, po->last_epoch, po->title, po->plot,
                           &err) != CLT_OK) {
    fprintf(stderr, "\ncltrain: warning: no plot: %s\n", err.msg);
    po->plot = NULL;
  }
}

static void print_progress_locked(const clt_progress *p, progress_out *po);

static void print_progress(const clt_progress *p, void *user) {
  progress_out *po = user;
  if (!po->dog) {
    print_progress_locked(p, po);
    return;
  }
  pthread_mutex_lock(&po->dog->ticker.lock);
  po->dog->ticker.last = cli_now();
  po->dog->epoch = p->epoch;
  po->dog->reported = true;
  print_progress_locked(p, po);
  pthread_mutex_unlock(&po->dog->ticker.lock);
}

/* Balanced class weights, which clt_fit learns before the first step
 * (<loss>.class_weights, with a <loss>.count beside them where learnt):
 * what they came to. */
static void print_learnt_weights(progress_out *po) {
  clt_graph *g = po->learnt;
  po->learnt = NULL;
  for (int i = 0; i < clt_graph_param_tensors(g); i++) {
    clt_param_info w;
    if (clt_graph_param_info(g, i, &w) != CLT_OK) return;
    char *dot = strrchr(w.name, '.');
    if (!dot || strcmp(dot, ".class_weights")) continue;
    char count_name[CLT_PARAM_NAME_MAX];
    snprintf(count_name, sizeof count_name, "%.*s.count", (int)(dot - w.name),
             w.name);
    bool learnt = false; /* given weights have no count: the user wrote them */
    for (int j = 0; j < clt_graph_param_tensors(g) && !learnt; j++) {
      clt_param_info c;
      learnt = clt_graph_param_info(g, j, &c) == CLT_OK &&
               !strcmp(c.name, count_name);
    }
    if (!learnt) continue;
    float count = 0.0f, *v = malloc((size_t)w.numel * sizeof *v);
    if (v && clt_graph_get_param(g, count_name, &count, 1) == CLT_OK &&
        clt_graph_get_param(g, w.name, v, w.numel) == CLT_OK) {
      fprintf(po->out,
              "class weights (balanced, from %.0f training samples):",
              (double)count);
      for (int64_t k = 0; k < w.numel && k < 12; k++)
        fprintf(po->out, "%s %lld: %.4g", k ? "," : "", (long long)k,
                (double)v[k]);
      fprintf(po->out, "%s\n", w.numel > 12 ? ", ..." : "");
      fflush(po->out);
    }
    free(v);
  }
}

static void print_progress_locked(const clt_progress *p, progress_out *po) {
  if (po->learnt) {
    if (po->tty) fprintf(stderr, "\r\033[K");
    print_learnt_weights(po);
  }
  if (p->phase == CLT_PHASE_EPOCH) {
    const clt_epoch_stats *s = p->stats;
    if (po->tty) fprintf(stderr, "\r\033[K");
    if (!po->quiet) {
      FILE *out = po->out;
      /* the second metric: the accuracy, or a regression's mean absolute
       * error; a regression's figures to 4 significant digits (a loss of
       * 2e-5 is not 0.0000) */
      bool r = po->regression;
      const char *form = r ? "%s loss %.4g mae %.4g" : "%s loss %.4f acc %.4f";
      fprintf(out, "epoch %d/%d  ", s->epoch, p->epochs);
      fprintf(out, form, "train", s->train_loss,
              r ? s->train_mae : s->train_acc);
      if (!isnan(s->val_loss)) {
        fprintf(out, "  ");
        fprintf(out, form, "val", s->val_loss, r ? s->val_mae : s->val_acc);
      }
      if (!isnan(s->test_loss)) {
        fprintf(out, "  ");
        fprintf(out, form, "test", s->test_loss,
                r ? s->test_mae : s->test_acc);
      }
      fprintf(out, "  %.1f s", s->seconds);
      /* a first run's kernel builds inside the epoch, which its speed
       * leaves out */
      if (s->compile_seconds >= 0.05)
        fprintf(out, " (%.1f s of it %s kernels)", s->compile_seconds,
                s->compile_seconds - s->load_seconds >= 0.05 ? "compiling"
                                                             : "loading");
      fprintf(out, "  %.0f %s/s  lr %g", s->images_per_sec, po->unit,
              (double)s->lr);
      if (s->loss_scale > 0)
        fprintf(out, "  loss scale %g (%lld skipped step%s)",
                (double)s->loss_scale, (long long)s->skipped_steps,
                s->skipped_steps == 1 ? "" : "s");
      fprintf(out, "%s\n", s->best && po->early_stop ? "  (best)" : "");
      if (po->prof) print_epoch_profile(out, s);
      fflush(out);
    }
    if (po->prof) keep_epoch_profile(po->prof, s);
    if (po->log) {
      bool r = po->regression;
      fprintf(po->log, "%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.3f,%.1f,%g\n",
              s->epoch, s->train_loss, r ? s->train_mae : s->train_acc,
              s->test_loss, r ? s->test_mae : s->test_acc, s->val_loss,
              r ? s->val_mae : s->val_acc, s->seconds, s->images_per_sec,
              (double)s->lr);
      fflush(po->log); /* a crash later keeps the epochs done */
    }
    po->hist[s->epoch - 1] = *s;
    po->hist[s->epoch - 1].profile = NULL; /* valid during the report only */
    po->last_epoch = s->epoch;
    update_plot(po);
    return;
  }
  if (po->quiet) return;
  if (p->epoch != po->phase_epoch || p->phase != po->phase) {
    po->phase_epoch = p->epoch;
    po->phase = p->phase;
    po->phase_start = cli_now();
  }
  if (po->tty)
    draw_progress_line(po, p);
  else
    print_plain_progress(po, p);
}

/* Ctrl-C while training (README "Stopping a run"): the first asks the
 * run to end when the current epoch has ended (evaluated, logged and
 * saved as a last epoch is), the second after the current batch; after
 * that SIGINT ends the process as usual. The handler only counts; the
 * fit loop asks stop_on_interrupt after every batch, which tells the
 * user once per request. */
static volatile sig_atomic_t g_interrupts;

static void on_sigint(int sig) {
  (void)sig;
  if (g_interrupts < 2) g_interrupts++;
  if (g_interrupts >= 2) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGINT, &dfl, NULL);
  }
}

typedef struct stop_out {
  progress_out *po;
  bool lead;        /* rank 0 (or alone): tells the user */
  const char *save; /* --save, or NULL */
  bool early_stop;  /* --early-stop: --save holds the best epoch */
  int told;         /* the requests told so far */
} stop_out;

static void tell_stop(stop_out *so, int n) {
  if (so->po->tty) fprintf(stderr, "\r\033[K");
  if (n == 1)
    fprintf(stderr,
            "cltrain: interrupted: the run ends when this epoch has "
            "ended%s%s%s; Ctrl-C again to stop after this batch\n",
            !so->save         ? ""
            : so->early_stop ? " (" : " and is saved to ",
            so->save ? so->save : "",
            so->save && so->early_stop ? " keeps the best epoch's weights)"
                                       : "");
  else
    fprintf(stderr, "cltrain: interrupted again: stopping after this batch; "
                    "this epoch is not finished and not saved\n");
  fflush(stderr);
}

static clt_fit_stop stop_on_interrupt(void *user) {
  stop_out *so = user;
  int n = g_interrupts;
  if (n > so->told && so->lead) {
    watchdog *dog = so->po->dog;
    if (dog) pthread_mutex_lock(&dog->ticker.lock);
    for (int i = so->told + 1; i <= n; i++) tell_stop(so, i);
    if (dog) pthread_mutex_unlock(&dog->ticker.lock);
  }
  so->told = n;
  return n >= 2 ? CLT_FIT_STOP_NOW : n == 1 ? CLT_FIT_STOP_EPOCH
                                            : CLT_FIT_GO_ON;
}

static int fail(clt_context *ctx, const char *what) {
  fprintf(stderr, "cltrain: %s%s%s\n", what ? what : "", what ? ": " : "",
          clt_context_last_error(ctx));
  return 1;
}

/* --freeze, --train-only, or with --resume the checkpoint's frozen layers;
 * a run with nothing left to train is refused. */
static clt_status freeze_layers(clt_context *ctx, clt_graph *g,
                                const train_args *a) {
  if (a->freeze || a->train_only)
    return cli_freeze_layers(ctx, g, "train", a->freeze, a->train_only);
  if (!a->resume) return CLT_OK;
  char **names = NULL;
  int n = 0;
  clt_status st = clt_checkpoint_frozen_layers(ctx, a->resume, &names, &n);
  for (int i = 0; st == CLT_OK && i < n; i++)
    st = clt_graph_set_trainable(g, names[i], false);
  clt_class_names_free(names, n);
  if (st != CLT_OK) fail(ctx, a->resume);
  return st;
}

/* An epoch's losses and accuracies as JSON members (accuracies null for
 * a regression, which has its mean absolute errors instead; the ones not
 * measured null). */
static void print_json_metrics(const clt_epoch_stats *s, bool regression) {
  const char *names[] = {"train_loss",      "train_accuracy",
                         "validation_loss", "validation_accuracy",
                         "test_loss",       "test_accuracy"};
  double v[] = {s->train_loss, s->train_acc, s->val_loss,
                s->val_acc,    s->test_loss, s->test_acc};
  for (int i = 0; i < 6; i++) {
    printf(", \"%s\": ", names[i]);
    cli_json_number(stdout, regression && i % 2 ? NAN : v[i]);
  }
  if (!regression) return;
  const char *mae_names[] = {"train_mae", "validation_mae", "test_mae"};
  double mae[] = {s->train_mae, s->val_mae, s->test_mae};
  for (int i = 0; i < 3; i++) {
    printf(", \"%s\": ", mae_names[i]);
    cli_json_number(stdout, mae[i]);
  }
}

/* The final result as one JSON object (--json). */
static void print_json_result(const train_args *a, const clt_context *ctx,
                              const clt_epoch_stats *hist,
                              const clt_epoch_stats *last,
                              const clt_fit_result *r, bool regression,
                              int64_t train_n, int64_t val_n, int64_t test_n,
                              int first) {
  printf("{\"model\": ");
  cli_json_string(stdout, a->model);
  printf(", \"device\": ");
  cli_json_string(stdout, clt_context_device(ctx)->name);
  printf(", \"epochs\": %d, \"batch\": %lld, \"training_samples\": %lld, "
         "\"validation_samples\": %lld, \"test_samples\": %lld",
         r->last_epoch, a->batch, (long long)train_n, (long long)val_n,
         (long long)test_n);
  printf(", \"regression\": %s, \"kept_epoch\": %d",
         regression ? "true" : "false", last->epoch);
  print_json_metrics(last, regression);
  printf(", \"monitor\": ");
  cli_json_string(stdout, r->monitor);
  printf(", \"best_epoch\": %d, \"best_loss\": ", r->best_epoch);
  cli_json_number(stdout, r->best_loss);
  printf(", \"stopped_early\": %s, \"restored_best\": %s, "
         "\"interrupted\": %s, \"unfinished\": %s, \"saved\": ",
         r->stopped_early ? "true" : "false",
         r->restored_best ? "true" : "false",
         r->interrupted ? "true" : "false", r->unfinished ? "true" : "false");
  /* Where a checkpoint was written: stopped early, a run may end before
   * its first (--save-every). */
  if (a->save && (!r->interrupted || r->checkpoint_epoch > 0))
    cli_json_string(stdout, a->save);
  else
    printf("null");
  printf(", \"saved_epoch\": %d", a->save ? r->checkpoint_epoch : 0);
  printf(", \"precision\": \"%s\"", cli_precision_names[a->precision]);
  if (a->precision == CLT_PRECISION_MIXED)
    printf(", \"loss_scale\": %g, \"skipped_steps\": %lld",
           (double)hist[r->last_epoch - 1].loss_scale,
           (long long)hist[r->last_epoch - 1].skipped_steps);
  printf(", \"history\": [");
  for (int e = 0; e < r->last_epoch; e++) {
    const clt_epoch_stats *s = &hist[e];
    printf("%s{\"epoch\": %d", e ? ", " : "", s->epoch);
    print_json_metrics(s, regression);
    printf(", \"lr\": ");
    cli_json_number(stdout, s->lr);
    /* --profile: the epochs this run trained (not those resumed from) */
    if (a->profile && s->epoch >= first) {
      printf(", \"seconds\": ");
      cli_json_number(stdout, s->seconds);
      printf(", \"device_seconds\": ");
      cli_json_number(stdout, s->device_seconds);
      printf(", \"wait_data_seconds\": ");
      cli_json_number(stdout, s->wait_data_seconds);
      printf(", \"wait_device_seconds\": ");
      cli_json_number(stdout, s->wait_device_seconds);
    }
    printf("}");
  }
  printf("]}\n");
}

/* Over MPI (collective): images/s of each rank and in total, and the
 * share of the step each rank spent waiting for the gradient allreduce
 * once its own backward pass had finished; with profile, each rank's
 * --profile line over all its epochs; printed by rank 0. */
static int print_rank_stats(clt_dist *dist, FILE *out, bool quiet,
                            bool profile) {
  int n = clt_dist_size(dist);
  clt_dist_stats *all = calloc((size_t)n, sizeof *all);
  if (!all || clt_dist_stats_gather(dist, all) != CLT_OK) {
    free(all);
    fprintf(stderr, "cltrain: could not gather the ranks' statistics\n");
    return 1;
  }
  if (clt_dist_rank(dist) == 0 && !quiet) {
    double total = 0;
    for (int r = 0; r < n; r++) {
      double secs = all[r].train_seconds;
      double ips = secs > 0 ? (double)all[r].images / secs : 0;
      total += ips;
      fprintf(out, "rank %d: %.1f images/s, %lld steps, allreduce wait "
                   "%.1f%% of the step (%s)\n",
              r, ips, (long long)all[r].steps,
              secs > 0 ? 100.0 * all[r].wait_seconds / secs : 0.0,
              all[r].device);
    }
    for (int r = 0; profile && r < n; r++) {
      fprintf(out, "rank %d: profile: ", r);
      print_busy(out, all[r].device_seconds, all[r].train_seconds,
                 all[r].wait_data_seconds, all[r].wait_device_seconds);
    }
    fprintf(out, "ranks: %d, total %.1f images/s\n", n, total);
    fflush(out);
  }
  free(all);
  return 0;
}

int cli_train(int argc, char **argv) {
  train_args a;
  int rc = parse_train_args(argc, argv, &a);
  if (rc >= 0) return rc;
  /* Under mpirun: one replica per rank; rank 0 alone prints and writes. */
  clt_dist *dist = NULL;
  if (cli_dist_open(&dist) != 0) return 1;
  bool lead = clt_dist_rank(dist) == 0;
  if (!lead) a.quiet = true;
  if (lead && ((a.save && !cli_check_output_path("--save", a.save)) ||
               (a.plot && !cli_check_output_path("--plot", a.plot)) ||
               (a.log_path && !cli_check_output_path("--log", a.log_path)))) {
    rc = 2;
    goto stop_ranks;
  }
  FILE *out = a.json ? stderr : stdout;
  FILE *log = NULL;
  if (a.log_path && lead) {
    /* A resumed run goes on with the log of the run it continues. */
    log = fopen(a.log_path, a.resume ? "a" : "w");
    if (!log) {
      fprintf(stderr, "cltrain: cannot write %s: %s\n", a.log_path,
              strerror(errno));
      rc = 1;
      goto stop_ranks;
    }
  }
  char device[64];
  clt_context *ctx = cli_open_context(
      cli_rank_device(a.device, dist, device, sizeof device), a.profile);
  if (!ctx) {
    if (log) fclose(log);
    rc = 1;
    goto stop_ranks;
  }
  cli_warn_rank_cores(ctx, dist);
  clt_graph *g = NULL;
  clt_optimizer *opt = NULL;
  clt_loss_scaler *scaler = NULL;
  clt_fp16_route fp16_route = CLT_FP16_SGEMM; /* --precision mixed */
  const char *fp16_why = "";
  clt_dataset *train = NULL, *test = NULL, *val = NULL;
  const char **val_names = NULL; /* the training data's, for --val-data */
  char **resumed_names = NULL; /* --resume: the checkpoint's classes */
  int n_resumed_names = 0;
  clt_epoch_stats *hist = NULL;
  epoch_profile prof = {0};
  rc = 1;
  if (clt_graph_load_model(ctx, a.model, &g) != CLT_OK) {
    fail(ctx, NULL);
    goto done;
  }
  clt_data_options dopt;
  clt_data_options_init(&dopt);
  if (clt_data_options_from_graph(g, &dopt) != CLT_OK) {
    fail(ctx, a.model);
    goto done;
  }
  dopt.train_limit = a.train_limit;
  dopt.test_limit = a.test_limit;
  dopt.holdout = a.holdout;
  dopt.resize = a.resize;
  /* --resume: CSV data read as the run it continues read it (the
   * checkpoint's info, read again by clt_checkpoint_resume below: the
   * data must be open before the graph compiles). */
  clt_checkpoint_info trained = {0};
  if ((!a.csv_values_given || !a.label_column) && a.resume &&
      clt_checkpoint_read_info(ctx, a.resume, &trained) != CLT_OK) {
    fail(ctx, NULL);
    goto done;
  }
  dopt.csv_values = cli_csv_values(a.csv_values_given, a.csv_values, &trained);
  dopt.label_column = cli_label_column(a.label_column, &trained);
  dopt.csv_separator = cli_csv_separator_chars[a.csv_separator];
  /* --resume: class names (image folders, CSV labels that are names) map
   * to the labels the run it continues learnt, whatever classes the data
   * now holds. */
  if (a.resume && (clt_checkpoint_class_names(ctx, a.resume, &resumed_names,
                                              &n_resumed_names) != CLT_OK)) {
    fail(ctx, NULL);
    goto done;
  }
  dopt.class_names = (const char *const *)resumed_names;
  dopt.n_class_names = n_resumed_names;
  if (clt_dataset_open(ctx, a.data, a.test_data, &dopt, &train, &test) !=
      CLT_OK) {
    fail(ctx, NULL);
    goto done;
  }
  if (a.val_data) {
    /* Its class names map to the training data's classes, as the test
     * data's do. */
    int n = clt_dataset_num_classes(train);
    val_names = n > 0 && clt_dataset_class_name(train, 0)
                    ? calloc((size_t)n, sizeof *val_names)
                    : NULL;
    for (int c = 0; val_names && c < n; c++)
      val_names[c] = clt_dataset_class_name(train, c);
    clt_data_options vopt = dopt;
    if (val_names) {
      vopt.class_names = val_names;
      vopt.n_class_names = n;
    }
    if (clt_dataset_open(ctx, NULL, a.val_data, &vopt, NULL, &val) !=
        CLT_OK) {
      fail(ctx, "--val-data");
      goto done;
    }
  }
  if (a.val_split > 0) {
    clt_dataset *rest = NULL;
    if (clt_dataset_split(ctx, train, a.val_split, (uint64_t)a.seed, &rest,
                          &val) != CLT_OK) {
      fail(ctx, "--val-split");
      goto done;
    }
    clt_dataset_destroy(train);
    train = rest;
  }
  /* Frozen layers before compiling (clt_graph_set_trainable would compile
   * again after): --resume goes on with the checkpoint's unless told. */
  if (freeze_layers(ctx, g, &a) != CLT_OK) goto done;
  /* Mixed precision before compiling: the memory plan keeps outputs in
   * fp16 then. */
  if (clt_graph_set_precision(g, (clt_precision)a.precision) != CLT_OK ||
      cli_compile_graph(g, a.batch, (uint64_t)a.seed, a.quiet) != CLT_OK ||
      clt_optimizer_create(g, &a.opt, &opt) != CLT_OK) {
    fail(ctx, a.model);
    goto done;
  }
  if (a.precision == CLT_PRECISION_MIXED) {
    clt_loss_scaler_options so;
    clt_loss_scaler_options_init(&so);
    if (a.loss_scale > 0) so.init_scale = (float)a.loss_scale;
    if (a.scale_growth > 0) so.growth_interval = (int)a.scale_growth;
    /* The fp16 route (compiling a graph with convolutions probed it
     * already): a bad CLT_MMA is an error for any model. */
    if (clt_loss_scaler_create(ctx, &so, &scaler) != CLT_OK ||
        clt_fp16_route_get(ctx, &fp16_route, &fp16_why) != CLT_OK) {
      fail(ctx, "--precision mixed");
      goto done;
    }
    clt_optimizer_set_loss_scaler(opt, scaler); /* before --resume */
  }
  hist = calloc((size_t)a.epochs, sizeof *hist);
  if (!hist) goto done;
  for (long long e = 0; e < a.epochs; e++) { /* unknown until run or read */
    hist[e].epoch = (int)e + 1;
    hist[e].train_loss = hist[e].train_acc = hist[e].train_mae = NAN;
    hist[e].test_loss = hist[e].test_acc = hist[e].test_mae = NAN;
    hist[e].val_loss = hist[e].val_acc = hist[e].val_mae = NAN;
  }
  int64_t in_shape[CLT_MAX_DIMS];
  progress_out po = {.tty = isatty(STDERR_FILENO) != 0,
                     .quiet = a.quiet,
                     .log = log,
                     .plot = a.plot,
                     .title = a.model,
                     .hist = hist,
                     .regression = clt_graph_loss_kind(g) ==
                                   CLT_LOSS_REGRESSION,
                     .unit = clt_graph_input_shape(g, in_shape) == 3
                                 ? "images"
                                 : "samples",
                     .early_stop = a.early_stop > 0,
                     .out = out,
                     .plain_every = a.progress_seconds,
                     .prof = a.profile ? &prof : NULL,
                     .learnt = a.quiet ? NULL : g};
  /* The header, unless a resumed run's log has one: the second metric
   * is the accuracy, or a regression's mean absolute error (Keras's
   * CSVLogger writes the model's metrics). */
  if (log && ftell(log) == 0) {
    const char *m = po.regression ? "mae" : "acc";
    fprintf(log, "epoch,train_loss,train_%s,test_loss,test_%s,val_loss,val_%s,"
                 "seconds,images_per_sec,lr\n",
            m, m, m);
    fflush(log);
  }
  clt_checkpoint_info info = {0};
  if (a.init && clt_checkpoint_load_weights(g, a.init) != CLT_OK) {
    fail(ctx, NULL);
    goto done;
  }
  if (a.resume) {
    if (clt_checkpoint_resume(g, opt, a.resume, &info, hist, (int)a.epochs) !=
        CLT_OK) {
      fail(ctx, NULL);
      goto done;
    }
    if (a.seed_given && (uint64_t)a.seed != info.seed)
      fprintf(stderr, "cltrain: note: %s was trained with --seed %llu, which "
                      "the resumed run keeps (not %lld)\n",
              a.resume, (unsigned long long)info.seed, a.seed);
    if (info.epoch >= a.epochs) {
      if (lead)
        fprintf(out, "nothing to do: %s holds %d epoch%s, --epochs %lld "
                     "asks for no more\n",
                a.resume, info.epoch, CLI_PLURAL(info.epoch), a.epochs);
      rc = 0;
      goto done;
    }
    po.last_epoch = info.epoch;
  }
  if (!a.quiet) {
    char summary[8192];
    clt_graph_summary(g, summary, sizeof summary);
    fprintf(out, "device: %s (%s)\n%s", clt_context_device(ctx)->name,
            clt_context_device(ctx)->platform_name, summary);
    fprintf(out, "training data: %s\n", clt_dataset_source(train));
    if (val) fprintf(out, "validation data: %s\n", clt_dataset_source(val));
    fprintf(out, "test data: %s\n",
            test ? clt_dataset_source(test) : "none (--holdout 0)");
    fprintf(out, "data: %lld training, %lld validation and %lld test "
                 "samples; batch %lld, %s lr %g\n",
            (long long)clt_dataset_count(train),
            (long long)(val ? clt_dataset_count(val) : 0),
            (long long)(test ? clt_dataset_count(test) : 0), a.batch,
            optimizer_names[a.opt.kind], (double)a.opt.lr);
    if (scaler)
      fprintf(out, "precision: mixed (fp16 values, f32 master weights, loss "
                   "scale from %g; products: SGEMM%s%s)\n",
              (double)clt_loss_scaler_scale(scaler),
              fp16_route == CLT_FP16_SGEMM ? "" : ", or where measured faster ",
              fp16_route == CLT_FP16_SGEMM ? "" : fp16_why);
    if (clt_dist_size(dist) > 1)
      fprintf(out, "data parallel: %d ranks of batch %lld (global batch "
                   "%lld)\n",
              clt_dist_size(dist), a.batch, a.batch * clt_dist_size(dist));
    fflush(out);
  }
  clt_fit_result result = {0};
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.epochs = (int)a.epochs;
  fo.batch = a.batch;
  fo.seed = (uint64_t)a.seed;
  fo.shuffle = !a.no_shuffle;
  fo.pad_crop = (int)a.pad_crop;
  fo.hflip = a.hflip;
  fo.progress = lead ? print_progress : NULL;
  fo.progress_user = &po;
  fo.dist = dist;
  fo.progress_every = 20;
  fo.checkpoint_path = a.save;
  fo.checkpoint_every = (int)a.save_every;
  fo.validation = val;
  fo.early_stop = (int)a.early_stop;
  fo.min_delta = a.min_delta;
  fo.result = &result;
  if (a.resume) {
    fo.first_epoch = info.epoch + 1;
    fo.seed = info.data_seed;
    if (!a.quiet)
      fprintf(out, "resuming from %s: %d epoch%s and %lld step%s done\n",
              a.resume, info.epoch, CLI_PLURAL(info.epoch),
              (long long)info.step, CLI_PLURAL(info.step));
  }
  watchdog dog;
  if (po.tty && !po.quiet && lead) {
    watchdog_start(&dog, fo.first_epoch > 1 ? fo.first_epoch : 1, fo.epochs);
    if (dog.ticker.running) po.dog = &dog;
  }
  stop_out so = {.po = &po, .lead = lead, .save = a.save,
                 .early_stop = a.early_stop > 0};
  fo.stop = stop_on_interrupt;
  fo.stop_user = &so;
  g_interrupts = 0;
  struct sigaction on_int, old_int;
  memset(&on_int, 0, sizeof on_int);
  on_int.sa_handler = on_sigint;
  /* Calls the signal lands in on other threads (the loader reading files)
   * go on instead of failing with EINTR. */
  on_int.sa_flags = SA_RESTART;
  sigemptyset(&on_int.sa_mask);
  sigaction(SIGINT, &on_int, &old_int);
  clt_status fit_status = clt_fit(g, opt, train, test, &fo, hist);
  sigaction(SIGINT, &old_int, NULL);
  if (po.dog) {
    cli_ticker_stop(&dog.ticker);
    po.dog = NULL;
  }
  if (fit_status != CLT_OK) {
    /* An error every rank agreed on: rank 0 tells it. */
    if (lead || !clt_dist_failed_together(dist)) {
      if (po.tty) fprintf(stderr, "\n");
      fail(ctx, NULL);
    }
    goto done;
  }
  if (clt_dist_size(dist) > 1 &&
      print_rank_stats(dist, out, a.quiet, a.profile) != 0)
    goto done;
  /* Stopped by Ctrl-C: 130, the shell's code for it, on every rank (they
   * agreed on it). */
  int ok_rc = result.interrupted ? 130 : 0;
  if (!lead) {
    rc = ok_rc;
    goto done;
  }
  int first = fo.first_epoch > 1 ? fo.first_epoch : 1;
  if (result.last_epoch < first && result.unfinished) {
    if (a.json) {
      printf("{\"model\": ");
      cli_json_string(stdout, a.model);
      printf(", \"epochs\": %d, \"interrupted\": true, \"unfinished\": "
             "true, \"saved\": null, \"saved_epoch\": 0, \"history\": "
             "[]}\n",
             result.last_epoch);
    }
    fprintf(stderr,
            "cltrain: stopped during epoch %d of %d: no epoch of this run "
            "finished%s\n",
            first, fo.epochs,
            a.save && !a.resume ? ", nothing saved"
            : a.resume          ? "; the checkpoint resumed from is unchanged"
                                : "");
    rc = ok_rc;
    goto done;
  }
  if (result.stopped_early && !a.quiet)
    fprintf(out, "early stop: the %s loss has not improved for %lld "
                 "epoch%s (best %.4f after epoch %d)\n",
            result.monitor, a.early_stop, CLI_PLURAL(a.early_stop),
            result.best_loss,
            result.best_epoch);
  if (result.restored_best && !a.quiet)
    fprintf(out, "kept the weights of epoch %d, the best %s loss%s\n",
            result.best_epoch, result.monitor,
            a.save ? " (as saved)" : "");
  const clt_epoch_stats *last = &hist[result.last_epoch - 1];
  if (a.early_stop > 0 && result.best_epoch > 0)
    last = &hist[result.best_epoch - 1]; /* the weights kept */
  const char *kept =
      last->epoch != result.last_epoch ? " (the best epoch's weights)" : "";
  if (prof.stats.epoch > 0) {
    fprintf(out, "device time by op, epoch %d's training:\n",
            prof.stats.epoch);
    print_profile_rows(out, prof.rows, prof.count, false, 0,
                       prof.stats.seconds - prof.stats.compile_seconds);
    fflush(out);
  }
  if (a.json) {
    print_json_result(&a, ctx, hist, last, &result, po.regression,
                      clt_dataset_count(train),
                      val ? clt_dataset_count(val) : 0,
                      test ? clt_dataset_count(test) : 0, first);
  } else if (!test) { /* --holdout 0 and no test data: no test figures */
    if (po.regression)
      printf("final: train loss %.6g, train mae %.6g after %d epoch%s%s (no "
             "test set)\n",
             last->train_loss, last->train_mae, result.last_epoch,
             CLI_PLURAL(result.last_epoch), kept);
    else
      printf("final: train accuracy %.4f, train loss %.4f after %d "
             "epoch%s%s (no test set)\n",
             last->train_acc, last->train_loss, result.last_epoch,
             CLI_PLURAL(result.last_epoch), kept);
  } else if (po.regression) {
    printf("final: test loss %.6g, test mae %.6g, train loss %.6g after %d "
           "epoch%s%s\n",
           last->test_loss, last->test_mae, last->train_loss,
           result.last_epoch, CLI_PLURAL(result.last_epoch), kept);
  } else {
    printf("final: test accuracy %.4f, test loss %.4f after %d epoch%s%s\n",
           last->test_acc, last->test_loss, result.last_epoch,
           CLI_PLURAL(result.last_epoch), kept);
  }
  if (result.interrupted) {
    if (result.unfinished)
      fprintf(out, "interrupted: stopped during epoch %d of %d (the "
                   "weights are as its last batch left them%s)\n",
              result.last_epoch + 1, fo.epochs,
              result.restored_best ? "; the best epoch's were put back" : "");
    else
      fprintf(out, "interrupted: stopped after epoch %d of %d\n",
              result.last_epoch, fo.epochs);
    if (a.save && result.checkpoint_epoch > 0)
      fprintf(out, "saved %s: epoch %d%s (`--resume %s --epochs %d` goes "
                   "on from it)\n",
              a.save, result.checkpoint_epoch,
              a.early_stop > 0 ? ", the best epoch's weights" : "", a.save,
              fo.epochs);
    else if (a.save)
      fprintf(out, "nothing saved to %s by this run (--save-every N writes "
                   "a checkpoint every N epochs)\n",
              a.save);
  } else if (a.save && !a.quiet) {
    fprintf(out, "saved %s%s\n", a.save,
            a.early_stop > 0 ? " (the best epoch's weights)" : "");
  }
  rc = ok_rc;
done:
  free(hist);
  free(prof.rows);
  if (log && fclose(log) != 0) {
    fprintf(stderr, "cltrain: writing %s failed\n", a.log_path);
    rc = 1;
  }
  clt_optimizer_destroy(opt);
  clt_loss_scaler_destroy(scaler);
  clt_graph_destroy(g);
  clt_dataset_destroy(train);
  clt_dataset_destroy(val);
  free(val_names);
  clt_dataset_destroy(test);
  clt_context_destroy(ctx);
  clt_class_names_free(resumed_names, n_resumed_names);
stop_ranks:
  /* A failure the other ranks do not know of would leave them waiting. */
  if (rc != 0 && rc != 130 && clt_dist_size(dist) > 1 &&
      !clt_dist_failed_together(dist)) {
    fprintf(stderr, "cltrain: rank %d of %d failed: stopping every rank\n",
            clt_dist_rank(dist), clt_dist_size(dist));
    fflush(stderr);
    clt_dist_abort(dist, rc);
  }
  clt_dist_destroy(dist);
  return rc;
}

/* ---- bench train -------------------------------------------------------- */

/* Distinct batches kept on the device and cycled by device-side copies:
 * the data is already there, as the benchmark promises, but the model does
 * not train on one batch over and over. (A batch seen hundreds of times is
 * memorised; its gradients shrink into denormal floats, which CPU devices
 * process many times slower, a state real training never reaches.) The
 * whole Fashion-MNIST training set when it fits the model and Debian's
 * package is there; else BENCH_RANDOM_BATCHES of uniform random pixels. */
#define BENCH_RANDOM_BATCHES 16

typedef struct bench_data {
  clt_tensor *x, *y;
  clt_tensor **xs, **ys; /* the batches: views of x and y */
  int64_t batch, size, batches;
  int64_t targets; /* float targets a sample (a regression's,
                      sigmoid_cross_entropy's), all 0;
                      0: a classifier, ys its labels */
} bench_data;

static void bench_data_free(bench_data *d) {
  for (int64_t k = 0; d->xs && k < d->batches; k++) {
    clt_tensor_destroy(d->xs[k]);
    clt_tensor_destroy(d->ys[k]);
  }
  free(d->xs);
  free(d->ys);
  clt_tensor_destroy(d->x);
  clt_tensor_destroy(d->y);
}

static clt_status bench_data_upload(clt_context *ctx, bench_data *d,
                                    const float *x, const int32_t *y) {
  int64_t n = d->batches * d->batch, per = d->targets ? d->targets : 1;
  CLI_TRY(clt_tensor_create(ctx, CLT_F32, 1, (int64_t[]){n * d->size}, &d->x));
  CLI_TRY(clt_tensor_create(ctx, d->targets ? CLT_F32 : CLT_I32, 1,
                            (int64_t[]){n * per}, &d->y));
  CLI_TRY(clt_tensor_upload(d->x, x));
  if (d->targets)
    CLI_TRY(clt_tensor_fill(d->y, 0.0));
  else
    CLI_TRY(clt_tensor_upload(d->y, y));
  d->xs = calloc((size_t)d->batches, sizeof *d->xs);
  d->ys = calloc((size_t)d->batches, sizeof *d->ys);
  if (!d->xs || !d->ys) return CLT_ERR_HOST_MEMORY;
  for (int64_t k = 0; k < d->batches; k++) {
    int64_t nx = d->batch * d->size, ny = d->batch * per;
    CLI_TRY(clt_tensor_view(d->x, k * nx, 1, &nx, &d->xs[k]));
    CLI_TRY(clt_tensor_view(d->y, k * ny, 1, &ny, &d->ys[k]));
  }
  return CLT_OK;
}

static clt_status bench_data_make(clt_context *ctx, clt_graph *g,
                                  int64_t batch, bench_data *d) {
  int64_t classes = clt_graph_loss_kind(g) == CLT_LOSS_CLASSIFIER
                        ? clt_graph_output_size(g)
                        : 1;
  d->batch = batch;
  d->size = clt_graph_input_size(g);
  clt_loss_kind kind = clt_graph_loss_kind(g);
  d->targets = kind == CLT_LOSS_REGRESSION || kind == CLT_LOSS_MULTILABEL
                   ? clt_graph_output_size(g)
                   : 0;
  clt_dataset *ds = NULL;
  bool real = clt_dataset_load(ctx, "fashion-mnist", true, 0, &ds) == CLT_OK &&
              clt_dataset_sample_values(ds) == d->size &&
              clt_dataset_num_classes(ds) <= classes &&
              clt_dataset_count(ds) >= batch;
  d->batches = real ? clt_dataset_count(ds) / batch : BENCH_RANDOM_BATCHES;
  int64_t n = d->batches * batch;
  float *x = malloc((size_t)(n * d->size) * sizeof(float));
  int32_t *y = malloc((size_t)n * sizeof(int32_t));
  clt_status st = CLT_OK;
  if (!x || !y) {
    st = CLT_ERR_HOST_MEMORY;
    fprintf(stderr, "cltrain: no memory for the bench data\n");
  } else if (real) {
    st = clt_dataset_samples(ds, 0, n, x, y);
  } else {
    cli_random_fill(x, n * d->size, 7, 0.0f, 1.0f);
    for (int64_t i = 0; i < n; i++) y[i] = (int32_t)(i % classes);
  }
  clt_dataset_destroy(ds);
  if (st == CLT_OK) st = bench_data_upload(ctx, d, x, y);
  free(x);
  free(y);
  return st;
}

/* Training steps, or without an optimizer (bench infer) forward passes
 * in evaluation mode with no labels, as clt_model_predict runs them. */
static clt_status bench_steps(clt_graph *g, clt_optimizer *opt,
                              const bench_data *d, int steps) {
  for (int i = 0; i < steps; i++) {
    int64_t k = i % d->batches;
    CLI_TRY(clt_graph_set_batch_device(g, d->xs[k], opt ? d->ys[k] : NULL,
                                       d->batch));
    CLI_TRY(clt_graph_forward(g, opt != NULL));
    if (!opt) continue;
    CLI_TRY(clt_graph_backward(g));
    CLI_TRY(clt_optimizer_step(opt));
  }
  return CLT_OK;
}

/* --precision mixed for a bench: a loss scaler on the optimizer, as train
 * sets it (the graph's precision is set before it is compiled). */
static clt_status bench_precision(clt_context *ctx, clt_optimizer *opt,
                                  int precision,
                                  clt_loss_scaler **scaler) {
  if (precision != CLT_PRECISION_MIXED) return CLT_OK;
  clt_loss_scaler_options so;
  clt_loss_scaler_options_init(&so);
  CLI_TRY(clt_loss_scaler_create(ctx, &so, scaler));
  clt_optimizer_set_loss_scaler(opt, *scaler);
  return CLT_OK;
}

/* A profile's table: per op, or per layer and op; with the ms a step where
 * steps > 0. secs: the wall time the rows ran in. */
static void print_profile_rows(FILE *out, const clt_profile_row *rows,
                               size_t n, bool by_layer, long long steps,
                               double secs) {
  double total = 0;
  int width = 24; /* the layer column's */
  for (size_t i = 0; i < n; i++) {
    total += rows[i].seconds;
    if (by_layer && (int)strlen(rows[i].layer) > width)
      width = (int)strlen(rows[i].layer);
  }
  if (by_layer) fprintf(out, "%-*s ", width, "layer");
  fprintf(out, "%-24s %8s %12s", "op", "calls", "total ms");
  if (steps > 0) fprintf(out, " %10s", "ms/step");
  fprintf(out, " %7s\n", "share");
  for (size_t i = 0; i < n; i++) {
    if (by_layer)
      fprintf(out, "%-*s ", width, rows[i].layer[0] ? rows[i].layer : "-");
    fprintf(out, "%-24s %8llu", rows[i].op, (unsigned long long)rows[i].calls);
    if (isnan(rows[i].seconds)) { /* the device gives no times */
      fprintf(out, " %12s", "-");
      if (steps > 0) fprintf(out, " %10s", "-");
      fprintf(out, " %7s\n", "-");
      continue;
    }
    fprintf(out, " %12.3f", rows[i].seconds * 1e3);
    if (steps > 0)
      fprintf(out, " %10.4f", rows[i].seconds * 1e3 / (double)steps);
    fprintf(out, " %6.1f%%\n",
            total > 0 ? 100.0 * rows[i].seconds / total : 0.0);
  }
  if (isnan(total))
    fprintf(out, UNTIMED_DEVICE " (the calls are counted)\n");
  else if (steps > 0)
    fprintf(out, "device time %.3f ms/step of %.3f ms/step wall\n",
            total * 1e3 / (double)steps, secs * 1e3 / (double)steps);
  else
    fprintf(out, "device time %.3f s of %.3f s wall\n", total, secs);
}

/* bench train --profile's table: per op, or per layer and op. */
static int print_profile(clt_context *ctx, bool by_layer, long long steps,
                         double secs) {
  clt_profile_row *rows = NULL;
  size_t n = 0;
  if ((by_layer ? clt_profile_summary_by_layer(ctx, &rows, &n)
                : clt_profile_summary(ctx, &rows, &n)) != CLT_OK) {
    fail(ctx, "profile");
    return 1;
  }
  print_profile_rows(stdout, rows, n, by_layer, steps, secs);
  free(rows);
  return 0;
}

/* --profile-by's values, in the order of their names. */
static const char *const profile_by_names[] = {"op", "layer", NULL};
enum { PROFILE_BY_OP, PROFILE_BY_LAYER };

/* What bench train and bench infer were asked for. */
typedef struct bench_args {
  const char *model, *device;
  bool infer; /* bench infer */
  long long batch, steps;
  bool profile;
  int profile_by, precision;
  const char *freeze, *train_only; /* layer names (bench train), or NULL */
} bench_args;

/* One device's steady-state images/s: training steps, or with infer
 * (bench infer) forward passes of a forward-only graph in evaluation mode. */
static int bench_train_one(const bench_args *b, const char *device,
                           double *images_per_sec) {
  const char *model = b->model;
  bool infer = b->infer, profile = b->profile;
  long long batch = b->batch, steps = b->steps;
  int precision = b->precision, profile_by = b->profile_by;
  clt_context *ctx = cli_open_context(device, profile);
  if (!ctx) return 1;
  clt_graph *g = NULL;
  clt_optimizer *opt = NULL;
  clt_loss_scaler *scaler = NULL;
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  int rc = 1;
  double secs = 0.0;
  bench_data data = {0};
  if (clt_graph_load_model(ctx, model, &g) != CLT_OK) {
    fail(ctx, model);
    goto done;
  }
  if (cli_freeze_layers(ctx, g, "bench train", b->freeze, b->train_only) !=
      CLT_OK)
    goto done;
  if (clt_graph_set_precision(g, (clt_precision)precision) != CLT_OK ||
      clt_graph_set_forward_only(g, infer) != CLT_OK ||
      cli_compile_graph(g, batch, 1, false) != CLT_OK ||
      (!infer && clt_optimizer_create(g, &oo, &opt) != CLT_OK) ||
      (!infer && bench_precision(ctx, opt, precision, &scaler) != CLT_OK) ||
      bench_data_make(ctx, g, batch, &data) != CLT_OK ||
      bench_steps(g, opt, &data, 3) != CLT_OK || /* warm-up: CLBlast builds */
      clt_context_finish(ctx) != CLT_OK) {
    fail(ctx, model);
    goto done;
  }
  if (profile) clt_profile_reset(ctx);
  double t0 = cli_now();
  if (bench_steps(g, opt, &data, (int)steps) != CLT_OK ||
      clt_context_finish(ctx) != CLT_OK) {
    fail(ctx, model);
    goto done;
  }
  secs = cli_now() - t0;
  *images_per_sec = (double)(batch * steps) / secs;
  clt_memory_stats mem;
  clt_context_memory_stats(ctx, &mem);
  printf("cltrain model=%s batch=%lld device=\"%s\" steps=%lld "
         "images_per_sec=%.1f step_ms=%.3f peak_device_mib=%.1f%s%s",
         model, batch, clt_context_device(ctx)->name, steps,
         (double)(batch * steps) / secs, secs * 1e3 / (double)steps,
         (double)mem.device_bytes_peak / 1048576.0,
         precision == CLT_PRECISION_MIXED ? " precision=mixed" : "",
         infer ? " mode=infer" : "");
  int frozen = clt_graph_frozen_layers(g, NULL, 0);
  if (frozen > 0)
    printf(" frozen_layers=%d trainable_params=%lld", frozen,
           (long long)clt_graph_parameter_count(g));
  printf("\n");
  /* The figure is out before anything else can fail (into a pipe stdout
   * is held back, and a driver that crashed while the context was torn
   * down took it along). */
  fflush(stdout);
  if (profile &&
      print_profile(ctx, profile_by == PROFILE_BY_LAYER, steps, secs) != 0)
    goto done;
  rc = 0;
done:
  bench_data_free(&data);
  clt_optimizer_destroy(opt);
  clt_loss_scaler_destroy(scaler);
  clt_graph_destroy(g);
  clt_context_destroy(ctx);
  return rc;
}

/* bench_steps of one rank under mpirun: the step of clt_fit over MPI,
 * the gradients averaged over the ranks. Rank r starts r batches on, so
 * that the ranks train on different images. */
static clt_status bench_steps_dist(clt_dist *dist, clt_graph *g,
                                   clt_optimizer *opt, const bench_data *d,
                                   int steps) {
  int ranks = clt_dist_size(dist);
  for (int i = 0; i < steps; i++) {
    int64_t k = (i + clt_dist_rank(dist)) % d->batches;
    clt_dist_step_begin(dist, d->batch, d->batch * ranks);
    clt_status st =
        clt_graph_set_batch_device(g, d->xs[k], d->ys[k], d->batch);
    if (st == CLT_OK) st = clt_graph_forward(g, true);
    if (st == CLT_OK) st = clt_graph_backward(g);
    CLI_TRY(clt_dist_step_end(dist, g, st));
    CLI_TRY(clt_optimizer_step(opt));
  }
  return CLT_OK;
}

/* cltrain bench train under mpirun: every rank times the same steps,
 * with the allreduce; rank 0 prints each rank's images/s, the total and
 * the share of the step spent waiting for the allreduce. */
static int bench_train_ranks(clt_dist *dist, const bench_args *b) {
  const char *model = b->model, *device = b->device;
  long long batch = b->batch, steps = b->steps;
  int precision = b->precision;
  char spec[64];
  clt_context *ctx =
      cli_open_context(cli_rank_device(device, dist, spec, sizeof spec), false);
  if (!ctx) return 1;
  cli_warn_rank_cores(ctx, dist);
  clt_graph *g = NULL;
  clt_optimizer *opt = NULL;
  clt_loss_scaler *scaler = NULL;
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  bench_data data = {0};
  int n = clt_dist_size(dist), rc = 1;
  clt_dist_stats *all = calloc((size_t)n, sizeof *all);
  clt_dist_stats *before = calloc((size_t)n, sizeof *before);
  clt_status st = all && before ? CLT_OK : CLT_ERR_HOST_MEMORY;
  if (st == CLT_OK) st = clt_graph_load_model(ctx, model, &g);
  if (st == CLT_OK)
    st = cli_freeze_layers(ctx, g, "bench train", b->freeze, b->train_only);
  if (st == CLT_OK)
    st = clt_graph_set_precision(g, (clt_precision)precision);
  if (st == CLT_OK) st = cli_compile_graph(g, batch, 1, false);
  if (st == CLT_OK) st = clt_optimizer_create(g, &oo, &opt);
  if (st == CLT_OK) st = bench_precision(ctx, opt, precision, &scaler);
  if (st == CLT_OK) st = bench_data_make(ctx, g, batch, &data);
  st = clt_dist_agree(dist, ctx, st);
  if (st == CLT_OK) st = clt_dist_attach(dist, g, batch, steps);
  st = clt_dist_agree(dist, ctx, st);
  /* Warm-up (CLBlast builds), then every rank starts the clock together. */
  if (st == CLT_OK) st = bench_steps_dist(dist, g, opt, &data, 3);
  if (st == CLT_OK) st = clt_dist_agree(dist, ctx, clt_context_finish(ctx));
  if (st == CLT_OK) st = clt_dist_stats_gather(dist, before);
  double t0 = cli_now();
  if (st == CLT_OK) st = bench_steps_dist(dist, g, opt, &data, (int)steps);
  if (st == CLT_OK) st = clt_context_finish(ctx);
  double secs = cli_now() - t0;
  clt_dist_detach(dist, g);
  st = clt_dist_agree(dist, ctx, st);
  if (st == CLT_OK) st = clt_dist_stats_gather(dist, all);
  if (st != CLT_OK) {
    if (clt_dist_rank(dist) == 0 || !clt_dist_failed_together(dist))
      fail(ctx, model);
    goto done;
  }
  if (clt_dist_rank(dist) == 0) {
    double total = 0;
    printf("cltrain model=%s batch=%lld per rank, ranks=%d device=\"%s\" "
           "steps=%lld%s",
           model, batch, n, clt_context_device(ctx)->name, steps,
           precision == CLT_PRECISION_MIXED ? " precision=mixed" : "");
    int frozen = clt_graph_frozen_layers(g, NULL, 0);
    if (frozen > 0) /* as one process's line (bench_train_one) */
      printf(" frozen_layers=%d trainable_params=%lld", frozen,
             (long long)clt_graph_parameter_count(g));
    printf("\n");
    for (int r = 0; r < n; r++) {
      /* The timed steps alone: the counters less the warm-up's. The
       * ranks go in step, so their images/s are the same. */
      double wait_s = all[r].wait_seconds - before[r].wait_seconds;
      double ips = (double)(batch * steps) / secs;
      total += ips;
      printf("rank %d: images_per_sec=%.1f allreduce_wait=%.1f%% of the "
             "step device=\"%s\"\n",
             r, ips, 100.0 * wait_s / secs, all[r].device);
    }
    printf("ranks=%d total_images_per_sec=%.1f step_ms=%.3f\n", n, total,
           secs * 1e3 / (double)steps);
  }
  rc = 0;
done:
  free(all);
  free(before);
  bench_data_free(&data);
  clt_optimizer_destroy(opt);
  clt_loss_scaler_destroy(scaler);
  clt_graph_destroy(g);
  clt_context_destroy(ctx);
  return rc;
}

/* Trains the model on every device present and prints a table: the
 * answer to "do I need a GPU?" on this machine. */
static int bench_all_devices(const bench_args *b) {
  clt_device_list list;
  char err[8192];
  if (clt_device_list_get(&list, err, sizeof err) != CLT_OK) {
    fprintf(stderr, "cltrain: %s\n", err);
    return 1;
  }
  double *ips = calloc(list.count, sizeof *ips);
  if (!ips) {
    clt_device_list_free(&list);
    return 1;
  }
  int failures = 0;
  for (size_t i = 0; i < list.count; i++) {
    char spec[32];
    snprintf(spec, sizeof spec, "%d", list.devices[i].index);
    bench_args one = *b;
    one.profile = false;
    if (bench_train_one(&one, spec, &ips[i]) != 0) {
      ips[i] = 0.0;
      failures++;
    }
  }
  double slowest = 0.0;
  for (size_t i = 0; i < list.count; i++)
    if (ips[i] > 0.0 && (slowest == 0.0 || ips[i] < slowest)) slowest = ips[i];
  printf("\n%-5s %-40s %-24s %6s %12s %9s\n", "index", "device", "platform",
         "batch", "images/s", "speed-up");
  for (size_t i = 0; i < list.count; i++) {
    const clt_device_info *d = &list.devices[i];
    if (ips[i] > 0.0)
      printf("%-5d %-40.40s %-24.24s %6lld %12.1f %8.2fx\n", d->index, d->name,
             d->platform_name, b->batch, ips[i], ips[i] / slowest);
    else
      printf("%-5d %-40.40s %-24.24s %6lld %12s %9s\n", d->index, d->name,
             d->platform_name, b->batch, "failed", "-");
  }
  free(ips);
  clt_device_list_free(&list);
  return failures ? 1 : 0;
}

/* bench train, or with infer bench infer. */
static int bench_model(int argc, char **argv, bool infer) {
  bench_args b = {.infer = infer, .batch = 32, .steps = 200,
                  .profile_by = PROFILE_BY_OP,
                  .precision = CLT_PRECISION_FP32};
  bool by_given = false;
  const cli_option options[] = {
      {"batch", CLI_INT, &b.batch, "B", "batch size (default 32)", 1, INT_MAX,
       0, 0, 0},
      {"steps", CLI_INT, &b.steps, "N", "timed steps (default 200)", 1,
       INT_MAX, 0, 0, 0},
      {"device", CLI_STRING, &b.device, "D|all",
       "device (see `cltrain devices`); all: every device,\n"
       "compared in a table",
       0, 0, 0, 0, 0},
      {"profile", CLI_FLAG, &b.profile, NULL,
       "add the device time of each op", 0, 0, 0, 0, 0},
      {"profile-by", CLI_CHOICE, &b.profile_by, "op|layer",
       "--profile's rows: per op (default), or per layer\n"
       "(its forward or backward) and op; implies --profile",
       0, 0, 0, profile_by_names, &by_given},
      {"precision", CLI_CHOICE, &b.precision, "P",
       "fp32 (default) or mixed (as train --precision)", 0, 0, 0,
       cli_precision_names, 0},
      /* bench train only (the last two) */
      {"freeze", CLI_STRING, &b.freeze, "LAYERS",
       "freeze these layers (as train --freeze): fine-tuning's\n"
       "steps, which make no weight gradient for them",
       0, 0, 0, 0, 0},
      {"train-only", CLI_STRING, &b.train_only, "LAYERS",
       "freeze every layer with weights but these", 0, 0, 0, 0, 0},
  };
  int count = (int)(sizeof options / sizeof options[0]) - (infer ? 2 : 0);
  const cli_command cmd = {
      infer ? "bench infer" : "bench train",
      infer ? "MODEL [--batch B] [--steps N] [--device D|all] [--profile] "
              "[--profile-by op|layer] [--precision P]"
            : "MODEL [--batch B] [--steps N] [--device D|all] [--profile] "
              "[--profile-by op|layer] [--precision P] [--freeze LAYERS | "
              "--train-only LAYERS]",
      infer ? "  steady-state images/s of inference: forward passes in evaluation\n"
              "  mode (batch-norm's running statistics, no dropout) of a graph\n"
              "  compiled for forward passes only, to the softmax's probabilities,\n"
              "  as `predict` and clt_model_predict run them (`eval` adds the\n"
              "  loss); the data already on the device\n"
            : "  steady-state images/s of forward + backward + Adam update, the data\n"
              "  already on the device\n",
      options, count, 1, 1, "MODEL file"};
  int npos = 0;
  int rc = cli_parse(&cmd, argc, argv, &b.model, &npos);
  if (rc >= 0) return rc;
  if (b.freeze && b.train_only) {
    fprintf(stderr, "cltrain bench train: " CLI_FREEZE_EXCLUSIVE "\n");
    return 2;
  }
  b.profile = b.profile || by_given;
  if (b.device && !strcasecmp(b.device, "all")) return bench_all_devices(&b);
  double ips;
  if (infer) {
    const char *ranks = cli_launched_ranks();
    if (ranks && atoi(ranks) > 1) {
      fprintf(stderr, "cltrain bench infer: runs in one process (inference "
                      "has no gradients to share); run it without mpirun, "
                      "with --device D for each device\n");
      return 2;
    }
    return bench_train_one(&b, b.device, &ips);
  }
  clt_dist *dist = NULL;
  if (cli_dist_open(&dist) != 0) return 1;
  if (dist && clt_dist_size(dist) > 1) {
    rc = bench_train_ranks(dist, &b);
    if (rc != 0 && !clt_dist_failed_together(dist)) clt_dist_abort(dist, rc);
    clt_dist_destroy(dist);
    return rc;
  }
  clt_dist_destroy(dist);
  return bench_train_one(&b, b.device, &ips);
}

int cli_bench_train(int argc, char **argv) {
  return bench_model(argc, argv, false);
}

int cli_bench_infer(int argc, char **argv) {
  return bench_model(argc, argv, true);
}
