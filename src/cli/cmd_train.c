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
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/cli.h"
#include "data/dataset.h"
#include "graph/graph.h"
#include "io/plot.h"
#include "ops/opcheck.h"

typedef struct train_args {
  const char *model, *data, *test_data, *device, *log_path;
  const char *save, *resume, *init, *plot;
  long long epochs, batch, seed, train_limit, test_limit, save_every;
  clt_optimizer_options opt;
  bool quiet, shuffle, seed_given, hflip, resize;
  long long pad_crop;
  double holdout;
} train_args;

static void train_usage(FILE *out) {
  fprintf(out,
          "usage: cltrain train MODEL --data DATA [--test-data TEST] "
          "[options]\n"
          "  DATA: fashion-mnist, a folder of IDX files, FILE.csv, a folder "
          "holding\n"
          "  train.csv (and test.csv), or a folder holding train/<class>/"
          "<images>\n"
          "  (and test/<class>/...); see README.md \"Your own data\"\n"
          "  --test-data TEST      test data: a CSV file or a folder of "
          "class folders\n"
          "  --holdout F           without test data: hold out this fraction "
          "of the\n"
          "                        training data as the test set (default "
          "0.1; 0: none)\n"
          "  --resize              resize images of another size than the "
          "model's input\n"
          "  --epochs N            epochs (default 5)\n"
          "  --batch B             batch size (default 32)\n"
          "  --optimizer NAME      sgd, adam (default) or adamw\n"
          "  --lr X                learning rate (default: 0.01 sgd, 0.001 "
          "adam/adamw)\n"
          "  --momentum M          SGD momentum (default 0)\n"
          "  --nesterov            SGD with Nesterov momentum\n"
          "  --weight-decay W      L2 (sgd, adam) or decoupled (adamw; "
          "default 0.01)\n"
          "  --clip-norm X         clip gradients by global norm X\n"
          "  --schedule S          constant (default), step or cosine\n"
          "  --step-epochs N       step schedule: epochs between decays "
          "(default 1)\n"
          "  --gamma G             step schedule: decay factor (default "
          "0.1)\n"
          "  --seed S              seed for initialisation and shuffling "
          "(default 1)\n"
          "  --device D            device (see `cltrain devices`)\n"
          "  --train-limit N       train on the first N images only\n"
          "  --test-limit N        test on the first N images only\n"
          "  --no-shuffle          keep the file order\n"
          "  --pad-crop N          augment: random crop after zero padding "
          "by N pixels\n"
          "  --hflip               augment: random horizontal flips\n"
          "  --log FILE.csv        one row per epoch (appended to when "
          "resuming)\n"
          "  --save FILE           checkpoint (safetensors) after the last "
          "epoch, atomically\n"
          "  --save-every N        ... and after every N epochs\n"
          "  --resume FILE         continue from a checkpoint (same model "
          "file, optimizer\n"
          "                        and data): --epochs is the total to "
          "reach\n"
          "  --init FILE           start from a checkpoint's weights only "
          "(fine-tuning)\n"
          "  --plot FILE.svg       chart of loss and accuracy per epoch, "
          "updated each epoch\n"
          "  --quiet               only the final line\n");
}

static const char *optimizer_names[] = {"sgd", "adam", "adamw"};

static int parse_train_args(int argc, char **argv, train_args *a) {
  memset(a, 0, sizeof *a);
  a->epochs = 5;
  a->batch = 32;
  a->seed = 1;
  a->shuffle = true;
  clt_optimizer_options_init(&a->opt, CLT_OPT_ADAM);
  const char *opt_name = "adam", *lr = NULL, *momentum = NULL, *wd = NULL,
             *clip = NULL, *schedule = NULL, *step = NULL, *gamma = NULL,
             *holdout = NULL, *v;
  bool nesterov = false, bad = false;
  for (int i = 0; i < argc; i++) {
    const char *s = argv[i];
    if (!strcmp(s, "--help")) {
      train_usage(stdout);
      return 0;
    }
    if (cli_opt_value(argc, argv, &i, "--data", &a->data, &bad) ||
        cli_opt_value(argc, argv, &i, "--test-data", &a->test_data, &bad) ||
        cli_opt_value(argc, argv, &i, "--holdout", &holdout, &bad) ||
        cli_opt_value(argc, argv, &i, "--device", &a->device, &bad) ||
        cli_opt_value(argc, argv, &i, "--log", &a->log_path, &bad) ||
        cli_opt_value(argc, argv, &i, "--save", &a->save, &bad) ||
        cli_opt_value(argc, argv, &i, "--resume", &a->resume, &bad) ||
        cli_opt_value(argc, argv, &i, "--init", &a->init, &bad) ||
        cli_opt_value(argc, argv, &i, "--plot", &a->plot, &bad) ||
        cli_opt_value(argc, argv, &i, "--optimizer", &opt_name, &bad) ||
        cli_opt_value(argc, argv, &i, "--lr", &lr, &bad) ||
        cli_opt_value(argc, argv, &i, "--momentum", &momentum, &bad) ||
        cli_opt_value(argc, argv, &i, "--weight-decay", &wd, &bad) ||
        cli_opt_value(argc, argv, &i, "--clip-norm", &clip, &bad) ||
        cli_opt_value(argc, argv, &i, "--schedule", &schedule, &bad) ||
        cli_opt_value(argc, argv, &i, "--step-epochs", &step, &bad) ||
        cli_opt_value(argc, argv, &i, "--gamma", &gamma, &bad)) {
      if (bad) return 2;
    } else if (cli_opt_value(argc, argv, &i, "--epochs", &v, &bad)) {
      if (bad || !cli_parse_int("--epochs", v, 1, CLI_MAX_EPOCHS, &a->epochs)) return 2;
    } else if (cli_opt_value(argc, argv, &i, "--batch", &v, &bad)) {
      if (bad || !cli_parse_int("--batch", v, 1, INT_MAX, &a->batch)) return 2;
    } else if (cli_opt_value(argc, argv, &i, "--seed", &v, &bad)) {
      if (bad || !cli_parse_int("--seed", v, 0, LLONG_MAX, &a->seed)) return 2;
      a->seed_given = true;
    } else if (cli_opt_value(argc, argv, &i, "--save-every", &v, &bad)) {
      if (bad || !cli_parse_int("--save-every", v, 1, INT_MAX, &a->save_every))
        return 2;
    } else if (cli_opt_value(argc, argv, &i, "--train-limit", &v, &bad)) {
      if (bad || !cli_parse_int("--train-limit", v, 1, LLONG_MAX, &a->train_limit))
        return 2;
    } else if (cli_opt_value(argc, argv, &i, "--test-limit", &v, &bad)) {
      if (bad || !cli_parse_int("--test-limit", v, 1, LLONG_MAX, &a->test_limit))
        return 2;
    } else if (!strcmp(s, "--nesterov")) {
      nesterov = true;
    } else if (!strcmp(s, "--quiet")) {
      a->quiet = true;
    } else if (!strcmp(s, "--no-shuffle")) {
      a->shuffle = false;
    } else if (!strcmp(s, "--hflip")) {
      a->hflip = true;
    } else if (!strcmp(s, "--resize")) {
      a->resize = true;
    } else if (cli_opt_value(argc, argv, &i, "--pad-crop", &v, &bad)) {
      if (bad || !cli_parse_int("--pad-crop", v, 0, CLI_MAX_PAD_CROP, &a->pad_crop)) return 2;
    } else if (s[0] == '-') {
      fprintf(stderr, "cltrain train: unknown option '%s' (see --help)\n", s);
      return 2;
    } else if (!a->model) {
      a->model = s;
    } else {
      fprintf(stderr, "cltrain train: unexpected argument '%s'\n", s);
      return 2;
    }
  }
  if (!a->model || !a->data) {
    fprintf(stderr, "cltrain train: %s\n",
            !a->model ? "no MODEL file given" : "--data is required");
    train_usage(stderr);
    return 2;
  }
  if ((a->resume && a->init) || (a->save_every && !a->save)) {
    fprintf(stderr, "cltrain train: %s\n",
            a->save_every ? "--save-every needs --save FILE"
                          : "--resume and --init exclude each other (--resume "
                            "continues a run, --init starts a new one from "
                            "its weights)");
    return 2;
  }
  int kind = -1;
  for (int k = 0; k < 3; k++)
    if (!strcmp(opt_name, optimizer_names[k])) kind = k;
  if (kind < 0) {
    fprintf(stderr, "cltrain train: --optimizer must be sgd, adam or adamw, "
                    "got '%s'\n",
            opt_name);
    return 2;
  }
  clt_optimizer_options_init(&a->opt, (clt_optimizer_kind)kind);
  double d;
  a->holdout = 0.1;
  if (holdout) {
    if (!cli_parse_double("--holdout", holdout, &a->holdout)) return 2;
    if (a->holdout < 0 || a->holdout >= 1) {
      fprintf(stderr, "cltrain train: --holdout must be 0 or more and below "
                      "1, got '%s'\n",
              holdout);
      return 2;
    }
  }
  if (lr) {
    if (!cli_parse_double("--lr", lr, &d)) return 2;
    a->opt.lr = (float)d;
  }
  if (momentum) {
    if (!cli_parse_double("--momentum", momentum, &d)) return 2;
    a->opt.momentum = (float)d;
  }
  if (wd) {
    if (!cli_parse_double("--weight-decay", wd, &d)) return 2;
    a->opt.weight_decay = (float)d;
  }
  if (clip) {
    if (!cli_parse_double("--clip-norm", clip, &d)) return 2;
    a->opt.clip_norm = (float)d;
  }
  if (gamma) {
    if (!cli_parse_double("--gamma", gamma, &d)) return 2;
    a->opt.gamma = (float)d;
  }
  if (step) {
    long long n;
    if (!cli_parse_int("--step-epochs", step, 1, INT_MAX, &n)) return 2;
    a->opt.step_epochs = (int)n;
  }
  a->opt.nesterov = nesterov;
  if (schedule) {
    if (!strcmp(schedule, "constant")) a->opt.schedule = CLT_SCHEDULE_CONSTANT;
    else if (!strcmp(schedule, "step")) a->opt.schedule = CLT_SCHEDULE_STEP;
    else if (!strcmp(schedule, "cosine")) a->opt.schedule = CLT_SCHEDULE_COSINE;
    else {
      fprintf(stderr, "cltrain train: --schedule must be constant, step or "
                      "cosine, got '%s'\n",
              schedule);
      return 2;
    }
  }
  a->opt.total_epochs = (int)a->epochs;
  return -1;
}

typedef struct watchdog watchdog;

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
  bool regression; /* mse: a loss, no accuracy */
} progress_out;

/* On a terminal, a line that says the run is alive when the library has
 * not reported for a while: above all the first steps on a new device,
 * where CLBlast compiles its GEMM kernels (tens of seconds each on a small
 * CPU) inside the first training step. The progress callback and this
 * thread draw under one lock. */
struct watchdog {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  pthread_t thread;
  bool running, stop, reported;
  double last; /* when the progress line was last drawn */
  int epoch, epochs;
};

static void *watchdog_main(void *arg) {
  watchdog *w = arg;
  pthread_mutex_lock(&w->lock);
  while (!w->stop) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 250000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&w->wake, &w->lock, &until);
    double quiet = cli_now() - w->last;
    if (w->stop || quiet < 2.0) continue;
    fprintf(stderr, "\r\033[K");
    if (!w->reported)
      fprintf(stderr, "epoch %d/%d: first steps, %.0f s (CLBlast compiles its "
                      "GEMM kernels for this device once)",
              w->epoch, w->epochs, quiet);
    else
      fprintf(stderr, "epoch %d/%d: working, %.0f s since the last report "
                      "(new shapes compile GEMM kernels once)",
              w->epoch, w->epochs, quiet);
    fflush(stderr);
  }
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

static void watchdog_start(watchdog *w, int first_epoch, int epochs) {
  memset(w, 0, sizeof *w);
  pthread_mutex_init(&w->lock, NULL);
  pthread_cond_init(&w->wake, NULL);
  w->last = cli_now();
  w->epoch = first_epoch;
  w->epochs = epochs;
  w->running = pthread_create(&w->thread, NULL, watchdog_main, w) == 0;
}

static void watchdog_stop(watchdog *w) {
  if (!w->running) return;
  pthread_mutex_lock(&w->lock);
  w->stop = true;
  pthread_cond_signal(&w->wake);
  pthread_mutex_unlock(&w->lock);
  pthread_join(w->thread, NULL);
  pthread_cond_destroy(&w->wake);
  pthread_mutex_destroy(&w->lock);
  w->running = false;
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
 * the rest leaves (none on a narrow terminal), time spent and to go. */
static void draw_progress_line(progress_out *po, const clt_progress *p) {
  double now = cli_now();
  if (p->epoch != po->phase_epoch || p->phase != po->phase) {
    po->phase_epoch = p->epoch;
    po->phase = p->phase;
    po->phase_start = now;
  }
  double elapsed = now - po->phase_start;
  char spent[32], left[32] = "?";
  format_duration(elapsed, spent, sizeof spent);
  if (p->batch > 0 && p->batches >= p->batch)
    format_duration(elapsed * (double)(p->batches - p->batch) /
                        (double)p->batch,
                    left, sizeof left);
  char head[64], tail[160], acc[32] = "";
  if (!po->regression) snprintf(acc, sizeof acc, " acc %.4f", p->accuracy);
  snprintf(head, sizeof head, "epoch %d/%d %s ", p->epoch, p->epochs,
           p->phase == CLT_PHASE_TRAIN ? "train" : "test ");
  snprintf(tail, sizeof tail,
           " %lld/%lld %s ETA %s loss %.4f%s %.0f img/s",
           (long long)p->batch, (long long)p->batches, spent, left, p->loss,
           acc, p->images_per_sec);
  int room = terminal_columns() - 1 - (int)strlen(head) - (int)strlen(tail);
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
  char line[320];
  snprintf(line, sizeof line, "%s%s%s", head, bar, tail);
  int cols = terminal_columns() - 1;
  if (cols > 0 && (int)strlen(line) > cols) line[cols] = '\0';
  fprintf(stderr, "\r\033[K%s", line);
  fflush(stderr);
}

/* Redraws the chart after each epoch, so a long run can be watched. A
 * chart that cannot be written costs a warning, not the training. */
static void update_plot(progress_out *po) {
  if (!po->plot) return;
  clt_err err = {0};
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
  pthread_mutex_lock(&po->dog->lock);
  po->dog->last = cli_now();
  po->dog->epoch = p->epoch;
  po->dog->reported = true;
  print_progress_locked(p, po);
  pthread_mutex_unlock(&po->dog->lock);
}

static void print_progress_locked(const clt_progress *p, progress_out *po) {
  if (p->phase == CLT_PHASE_EPOCH) {
    const clt_epoch_stats *s = p->stats;
    if (po->tty) fprintf(stderr, "\r\033[K");
    if (!po->quiet && po->regression)
      printf("epoch %d/%d  train loss %.6g  test loss %.6g  %.1f s  %.0f "
             "samples/s  lr %g\n",
             s->epoch, p->epochs, s->train_loss, s->test_loss, s->seconds,
             s->images_per_sec, (double)s->lr);
    else if (!po->quiet)
      printf("epoch %d/%d  train loss %.4f acc %.4f  test loss %.4f acc %.4f"
             "  %.1f s  %.0f images/s  lr %g\n",
             s->epoch, p->epochs, s->train_loss, s->train_acc, s->test_loss,
             s->test_acc, s->seconds, s->images_per_sec, (double)s->lr);
    fflush(stdout);
    if (po->log) {
      fprintf(po->log, "%d,%.6f,%.6f,%.6f,%.6f,%.3f,%.1f\n", s->epoch,
              s->train_loss, s->train_acc, s->test_loss, s->test_acc,
              s->seconds, s->images_per_sec);
      fflush(po->log); /* a crash later keeps the epochs done */
    }
    po->hist[s->epoch - 1] = *s;
    po->last_epoch = s->epoch;
    update_plot(po);
    return;
  }
  if (!po->tty || po->quiet) return;
  draw_progress_line(po, p);
}

static int fail(clt_context *ctx, const char *what) {
  fprintf(stderr, "cltrain: %s%s%s\n", what ? what : "", what ? ": " : "",
          clt_context_last_error(ctx));
  return 1;
}

int cli_train(int argc, char **argv) {
  train_args a;
  int rc = parse_train_args(argc, argv, &a);
  if (rc >= 0) return rc;
  if ((a.save && !cli_check_output_path("--save", a.save)) ||
      (a.plot && !cli_check_output_path("--plot", a.plot)) ||
      (a.log_path && !cli_check_output_path("--log", a.log_path)))
    return 2;
  FILE *log = NULL;
  if (a.log_path) {
    /* A resumed run goes on with the log of the run it continues. */
    log = fopen(a.log_path, a.resume ? "a" : "w");
    if (!log) {
      fprintf(stderr, "cltrain: cannot write %s: %s\n", a.log_path,
              strerror(errno));
      return 1;
    }
    if (ftell(log) == 0)
      fprintf(log, "epoch,train_loss,train_acc,test_loss,test_acc,seconds,"
                   "images_per_sec\n");
    fflush(log);
  }
  clt_context *ctx = cli_open_context(a.device, false);
  if (!ctx) {
    if (log) fclose(log);
    return 1;
  }
  clt_graph *g = NULL;
  clt_optimizer *opt = NULL;
  clt_dataset *train = NULL, *test = NULL;
  clt_epoch_stats *hist = NULL;
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
  if (clt_dataset_open(ctx, a.data, a.test_data, &dopt, &train, &test) !=
      CLT_OK) {
    fail(ctx, NULL);
    goto done;
  }
  if (clt_graph_compile(g, a.batch, (uint64_t)a.seed) != CLT_OK ||
      clt_optimizer_create(g, &a.opt, &opt) != CLT_OK) {
    fail(ctx, a.model);
    goto done;
  }
  hist = calloc((size_t)a.epochs, sizeof *hist);
  if (!hist) goto done;
  for (long long e = 0; e < a.epochs; e++) { /* unknown until run or read */
    hist[e].epoch = (int)e + 1;
    hist[e].train_loss = hist[e].train_acc = NAN;
    hist[e].test_loss = hist[e].test_acc = NAN;
  }
  progress_out po = {.tty = isatty(STDERR_FILENO) != 0,
                     .quiet = a.quiet,
                     .log = log,
                     .plot = a.plot,
                     .title = a.model,
                     .hist = hist,
                     .regression = dopt.targets > 0};
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
      printf("nothing to do: %s holds %d epochs, --epochs %lld asks for no "
             "more\n",
             a.resume, info.epoch, a.epochs);
      rc = 0;
      goto done;
    }
    po.last_epoch = info.epoch;
  }
  if (!a.quiet) {
    char summary[8192];
    clt_graph_summary(g, summary, sizeof summary);
    printf("device: %s (%s)\n%s", clt_context_device(ctx)->name,
           clt_context_device(ctx)->platform_name, summary);
    printf("training data: %s\ntest data: %s\n", clt_dataset_source(train),
           test ? clt_dataset_source(test) : "none (--holdout 0)");
    printf("data: %lld training and %lld test samples; batch %lld, %s lr "
           "%g\n",
           (long long)clt_dataset_count(train),
           (long long)(test ? clt_dataset_count(test) : 0), a.batch,
           optimizer_names[a.opt.kind], (double)a.opt.lr);
    fflush(stdout);
  }
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.epochs = (int)a.epochs;
  fo.batch = a.batch;
  fo.seed = (uint64_t)a.seed;
  fo.shuffle = a.shuffle;
  fo.pad_crop = (int)a.pad_crop;
  fo.hflip = a.hflip;
  fo.progress = print_progress;
  fo.progress_user = &po;
  fo.progress_every = 20;
  fo.checkpoint_path = a.save;
  fo.checkpoint_every = (int)a.save_every;
  if (a.resume) {
    fo.first_epoch = info.epoch + 1;
    fo.seed = info.data_seed;
    if (!a.quiet)
      printf("resuming from %s: %d epochs and %lld steps done\n", a.resume,
             info.epoch, (long long)info.step);
  }
  watchdog dog;
  if (po.tty && !po.quiet) {
    watchdog_start(&dog, fo.first_epoch > 1 ? fo.first_epoch : 1, fo.epochs);
    if (dog.running) po.dog = &dog;
  }
  clt_status fit_status = clt_fit(g, opt, train, test, &fo, hist);
  if (po.dog) {
    watchdog_stop(&dog);
    po.dog = NULL;
  }
  if (fit_status != CLT_OK) {
    if (po.tty) fprintf(stderr, "\n");
    fail(ctx, NULL);
  } else {
    const clt_epoch_stats *last = &hist[a.epochs - 1];
    if (po.regression)
      printf("final: test loss %.6g, train loss %.6g after %lld epochs\n",
             last->test_loss, last->train_loss, a.epochs);
    else
      printf("final: test accuracy %.4f, test loss %.4f after %lld epochs\n",
             last->test_acc, last->test_loss, a.epochs);
    if (a.save && !a.quiet) printf("saved %s\n", a.save);
    rc = 0;
  }
done:
  free(hist);
  if (log && fclose(log) != 0) {
    fprintf(stderr, "cltrain: writing %s failed\n", a.log_path);
    rc = 1;
  }
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_dataset_destroy(train);
  clt_dataset_destroy(test);
  clt_context_destroy(ctx);
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
  int64_t batch, size, batches;
} bench_data;

static void bench_data_free(bench_data *d) {
  clt_tensor_destroy(d->x);
  clt_tensor_destroy(d->y);
}

static clt_status bench_data_upload(clt_context *ctx, bench_data *d,
                                    const float *x, const int32_t *y) {
  int64_t n = d->batches * d->batch;
  CLT_TRY(clt_tensor_create(ctx, CLT_F32, 1, (int64_t[]){n * d->size}, &d->x));
  CLT_TRY(clt_tensor_create(ctx, CLT_I32, 1, (int64_t[]){n}, &d->y));
  CLT_TRY(clt_tensor_upload(d->x, x));
  return clt_tensor_upload(d->y, y);
}

static clt_status bench_data_make(clt_context *ctx, clt_graph *g,
                                  int64_t batch, bench_data *d) {
  clt_graph_node *in = &g->nodes[g->input_node];
  int64_t classes = g->loss_node >= 0 ? g->nodes[g->loss_node].size : 1;
  d->batch = batch;
  d->size = in->size;
  clt_dataset *ds = NULL;
  bool real = clt_dataset_load(ctx, "fashion-mnist", true, 0, &ds) == CLT_OK &&
              (int64_t)ds->channels * ds->height * ds->width == d->size &&
              ds->num_classes <= classes && ds->count >= batch;
  d->batches = real ? ds->count / batch : BENCH_RANDOM_BATCHES;
  int64_t n = d->batches * batch;
  float *x = malloc((size_t)(n * d->size) * sizeof(float));
  int32_t *y = malloc((size_t)n * sizeof(int32_t));
  clt_status st = CLT_OK;
  if (!x || !y) {
    st = clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "bench data");
  } else if (real) {
    for (int64_t i = 0; i < n * d->size; i++) x[i] = ds->pixels[i] / 255.0f;
    memcpy(y, ds->labels, (size_t)n * sizeof(int32_t));
  } else {
    clt_random_fill(x, n * d->size, 7, 0.0f, 1.0f);
    for (int64_t i = 0; i < n; i++) y[i] = (int32_t)(i % classes);
  }
  clt_dataset_destroy(ds);
  if (st == CLT_OK) st = bench_data_upload(ctx, d, x, y);
  free(x);
  free(y);
  return st;
}

static clt_status bench_steps(clt_graph *g, clt_optimizer *opt,
                              const bench_data *d, int steps) {
  clt_graph_node *in = &g->nodes[g->input_node];
  clt_tensor x_in = clt_tensor_slice_1d(in->out, 0, d->batch * d->size);
  clt_tensor y_in = clt_tensor_slice_1d(g->labels, 0, d->batch);
  for (int i = 0; i < steps; i++) {
    int64_t k = i % d->batches;
    clt_tensor xs = clt_tensor_slice_1d(d->x, k * d->batch * d->size,
                                        d->batch * d->size);
    clt_tensor ys = clt_tensor_slice_1d(d->y, k * d->batch, d->batch);
    CLT_TRY(clt_tensor_copy(&x_in, &xs));
    CLT_TRY(clt_tensor_copy(&y_in, &ys));
    g->batch = d->batch;
    CLT_TRY(clt_graph_forward(g, true));
    CLT_TRY(clt_graph_backward(g));
    CLT_TRY(clt_optimizer_step(opt));
  }
  return CLT_OK;
}

static int bench_train_one(const char *model, const char *device,
                           long long batch, long long steps, bool profile,
                           double *images_per_sec) {
  clt_context *ctx = cli_open_context(device, profile);
  if (!ctx) return 1;
  clt_graph *g = NULL;
  clt_optimizer *opt = NULL;
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  int rc = 1;
  double secs = 0.0;
  bench_data data = {0};
  if (clt_graph_load_model(ctx, model, &g) != CLT_OK ||
      clt_graph_compile(g, batch, 1) != CLT_OK ||
      clt_optimizer_create(g, &oo, &opt) != CLT_OK ||
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
         "images_per_sec=%.1f step_ms=%.3f peak_device_mib=%.1f\n",
         model, batch, clt_context_device(ctx)->name, steps,
         (double)(batch * steps) / secs, secs * 1e3 / (double)steps,
         (double)mem.device_bytes_peak / 1048576.0);
  if (profile) {
    clt_profile_row *rows = NULL;
    size_t n = 0;
    if (clt_profile_summary(ctx, &rows, &n) != CLT_OK) {
      fail(ctx, "profile");
      goto done;
    }
    double total = 0;
    for (size_t i = 0; i < n; i++) total += rows[i].seconds;
    printf("%-24s %8s %12s %10s %7s\n", "op", "calls", "total ms",
           "ms/step", "share");
    for (size_t i = 0; i < n; i++)
      printf("%-24s %8llu %12.3f %10.4f %6.1f%%\n", rows[i].op,
             (unsigned long long)rows[i].calls, rows[i].seconds * 1e3,
             rows[i].seconds * 1e3 / (double)steps,
             total > 0 ? 100.0 * rows[i].seconds / total : 0.0);
    printf("device time %.3f ms/step of %.3f ms/step wall\n",
           total * 1e3 / (double)steps, secs * 1e3 / (double)steps);
    free(rows);
  }
  rc = 0;
done:
  bench_data_free(&data);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_context_destroy(ctx);
  return rc;
}

/* Trains the model on every device present and prints a table: the
 * answer to "do I need a GPU?" on this machine. */
static int bench_all_devices(const char *model, long long batch,
                             long long steps) {
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
    if (bench_train_one(model, spec, batch, steps, false, &ips[i]) != 0) {
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
             d->platform_name, batch, ips[i], ips[i] / slowest);
    else
      printf("%-5d %-40.40s %-24.24s %6lld %12s %9s\n", d->index, d->name,
             d->platform_name, batch, "failed", "-");
  }
  free(ips);
  clt_device_list_free(&list);
  return failures ? 1 : 0;
}

int cli_bench_train(int argc, char **argv) {
  const char *model = NULL, *device = NULL, *v;
  long long batch = 32, steps = 200;
  bool profile = false, bad = false;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--help")) {
      printf("usage: cltrain bench train MODEL [--batch B] [--steps N] "
             "[--device D|all] [--profile]\n"
             "  steady-state images/s of forward + backward + Adam update,\n"
             "  the data already on the device; --profile adds device time "
             "per op;\n  --device all trains on every device and compares "
             "them\n");
      return 0;
    }
    if (cli_opt_value(argc, argv, &i, "--device", &device, &bad)) {
      if (bad) return 2;
    } else if (cli_opt_value(argc, argv, &i, "--batch", &v, &bad)) {
      if (bad || !cli_parse_int("--batch", v, 1, INT_MAX, &batch)) return 2;
    } else if (cli_opt_value(argc, argv, &i, "--steps", &v, &bad)) {
      if (bad || !cli_parse_int("--steps", v, 1, INT_MAX, &steps)) return 2;
    } else if (!strcmp(argv[i], "--profile")) {
      profile = true;
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "cltrain bench train: unknown option '%s'\n", argv[i]);
      return 2;
    } else if (!model) {
      model = argv[i];
    } else {
      fprintf(stderr, "cltrain bench train: unexpected '%s'\n", argv[i]);
      return 2;
    }
  }
  if (!model) {
    fprintf(stderr, "cltrain bench train: no MODEL file given\n");
    return 2;
  }
  if (device && !strcasecmp(device, "all"))
    return bench_all_devices(model, batch, steps);
  double ips;
  return bench_train_one(model, device, batch, steps, profile, &ips);
}
