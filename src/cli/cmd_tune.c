/* cltrain tune MODEL --batch B [--freeze LAYERS | --train-only LAYERS]
 * [--device D] [--cached]: measures the plan of every product of a model
 * compiled for batch B (as training does on its first run, with those
 * layers frozen), prints each candidate's time and GFLOP/s and the one
 * chosen, and stores the plans for later runs. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"

static const char *source_name(clt_plan_source s) {
  switch (s) {
  case CLT_PLAN_FROM_MEASURED: return "measured";
  case CLT_PLAN_FROM_CACHE: return "stored";
  default: break;
  }
  return "default (measuring off)";
}

static void print_plan(const clt_plan_info *p) {
  printf("%s %s (%s), %s%s\n", p->layer, p->product, p->shape,
         source_name(p->source),
         p->cache_rejected ? "; a damaged stored entry was replaced" : "");
  for (int i = 0; i < p->candidate_count; i++) {
    const clt_plan_candidate *c = &p->candidates[i];
    if (c->rejected)
      printf("  %-28s %12s %10s  rejected (failed or gave other numbers)\n",
             c->name, "-", "-");
    else if (c->seconds > 0)
      printf("  %-28s %9.3f ms %10.2f%s\n", c->name, c->seconds * 1e3,
             c->gflops, i == p->chosen ? "  <- chosen" : "");
    else
      printf("  %-28s %12s %10s%s\n", c->name, "-", "-",
             i == p->chosen ? "  <- chosen" : "");
  }
}

/* The file of --sets, whole; NULL (said why) where it cannot be read or
 * is not a text of sets (binary, or too long to be one). */
static char *read_sets(const char *path) {
  uint8_t *bytes = NULL;
  size_t n = 0;
  cli_err err = {0};
  if (cli_read_file(path, 1 << 16, &bytes, &n, &err) != CLT_OK) {
    fprintf(stderr, "cltrain tune: --sets: %s\n", err.msg);
    return NULL;
  }
  if (memchr(bytes, '\0', n)) {
    fprintf(stderr, "cltrain tune: --sets %s is not text\n", path);
    free(bytes);
    return NULL;
  }
  return (char *)bytes;
}

/* The CLBlast parameter search, as a table (sets: more candidates, or
 * NULL). */
static int tune_gemm(clt_context *ctx, const char *sets) {
  printf("searching CLBlast's GEMM parameters (a compile per set)...\n");
  fflush(stdout);
  clt_gemm_tune_report r;
  if (clt_gemm_tune_sets(ctx, sets, &r) != CLT_OK) {
    fprintf(stderr, "cltrain: %s\n", clt_context_last_error(ctx));
    return 1;
  }
  printf("  %-12s %-36s %12s\n", "kernel", "parameters", "total");
  for (int i = 0; i < r.count; i++) {
    const clt_gemm_tune_row *row = &r.rows[i];
    if (row->rejected)
      printf("  %-12s %-36s %12s  rejected (failed or gave other numbers)\n",
             row->kernel, row->label, "-");
    else
      printf("  %-12s %-36s %9.3f ms%s\n", row->kernel, row->label,
             row->seconds * 1e3, row->chosen ? "  <- chosen" : "");
  }
  double before = r.seconds_first_direct < r.seconds_first_indirect
                      ? r.seconds_first_direct
                      : r.seconds_first_indirect;
  printf("chosen: XgemmDirect below m*n*k = %lld^3, Xgemm from there; %d "
         "products in %.3f ms (the parameters in force: %.3f ms on the "
         "faster kernel alone); search %.1f s, stored for this device\n",
         (long long)r.indirect_min, r.shapes, r.seconds_chosen * 1e3,
         before * 1e3, r.search_seconds);
  return 0;
}

int cli_tune(int argc, char **argv) {
  const char *device = NULL, *sets_path = NULL;
  const char *freeze = NULL, *train_only = NULL;
  bool cached = false, gemm = false;
  long long batch = 0;
  int precision = CLT_PRECISION_FP32;
  const cli_option options[] = {
      {"batch", CLI_INT, &batch, "B", "the batch to plan for (required)", 1,
       INT_MAX, 0, 0, 0},
      {"device", CLI_STRING, &device, "D", "device (see `cltrain devices`)", 0,
       0, 0, 0, 0},
      {"precision", CLI_CHOICE, &precision, "P",
       "fp32 (default) or mixed: plan as train --precision\n"
       "mixed runs (with the fp16 route's candidates where\n"
       "the device has it)",
       0, 0, 0, cli_precision_names, 0},
      {"cached", CLI_FLAG, &cached, NULL,
       "show the stored plans, measuring only those missing", 0, 0, 0, 0, 0},
      {"gemm", CLI_FLAG, &gemm, NULL,
       "first search CLBlast's GEMM parameters for the device\n"
       "(about a minute on a CPU; MODEL may then be left out)",
       0, 0, 0, 0, 0},
      {"sets", CLI_STRING, &sets_path, "FILE",
       "--gemm: more parameter sets to time, one a line\n"
       "(README \"Measured plans\"; clblast_sets.py makes them\n"
       "from CLBlast's own tuners)",
       0, 0, 0, 0, 0},
      {"freeze", CLI_STRING, &freeze, "LAYERS",
       "plan as train --freeze LAYERS runs (a frozen layer's\n"
       "backward makes no weight gradient: plans of its own)",
       0, 0, 0, 0, 0},
      {"train-only", CLI_STRING, &train_only, "LAYERS",
       "plan as train --train-only LAYERS runs", 0, 0, 0, 0, 0},
  };
  const cli_command cmd = {
      "tune",
      "[MODEL --batch B] [--precision P] [--freeze LAYERS | --train-only "
      "LAYERS] [--gemm [--sets FILE]] [--device D] [--cached]",
      "  measures every product of MODEL compiled for batch B on the device,\n"
      "  prints each way to run it (time, GFLOP/s) and the one chosen, and\n"
      "  stores the plans beside the kernel cache for later runs; --gemm\n"
      "  first measures CLBlast's kernel parameters for the device\n",
      options, (int)(sizeof options / sizeof options[0]), 0, 1,
      "MODEL file"};
  const char *model = NULL;
  int npos = 0; /* model stays NULL without one */
  int rc = cli_parse(&cmd, argc, argv, &model, &npos);
  if (rc >= 0) return rc;
  if (sets_path && !gemm) {
    fprintf(stderr, "cltrain tune: --sets adds to the --gemm search; give "
                    "--gemm too\n");
    return 2;
  }
  if (npos == 0 && !gemm) {
    fprintf(stderr, "cltrain tune: no MODEL file given (or --gemm)\n");
    return 2;
  }
  if (npos == 1 && batch < 1) {
    fprintf(stderr, "cltrain tune: --batch B is required\n");
    return 2;
  }
  if (freeze && train_only) {
    fprintf(stderr, "cltrain tune: " CLI_FREEZE_EXCLUSIVE "\n");
    return 2;
  }
  if ((freeze || train_only) && !model) {
    fprintf(stderr, "cltrain tune: --%s needs a MODEL file\n",
            freeze ? "freeze" : "train-only");
    return 2;
  }
  char *sets = NULL;
  if (sets_path && !(sets = read_sets(sets_path))) return 2;
  clt_context_options opts;
  clt_context_options_init(&opts);
  opts.device = device;
  opts.plan = cached ? CLT_PLAN_ON : CLT_PLAN_REMEASURE;
  opts.log = cli_print_warnings;
  clt_context *ctx = NULL;
  char err[8192];
  clt_status st = clt_context_create(&opts, &ctx, err, sizeof err);
  if (st != CLT_OK) {
    fprintf(stderr, "cltrain: %s\n", err[0] ? err : clt_status_string(st));
    free(sets);
    return 1;
  }
  const clt_device_info *d = clt_context_device(ctx);
  printf("device: %s (%s, driver %s)\n", d->name, d->platform_name,
         d->driver_version);
  int gemm_rc = gemm ? tune_gemm(ctx, sets) : 0;
  free(sets);
  if (gemm_rc != 0) {
    clt_context_destroy(ctx);
    return 1;
  }
  if (!model) {
    clt_context_destroy(ctx);
    return 0;
  }
  clt_graph *g = NULL;
  double t0 = cli_now();
  st = clt_graph_load_model(ctx, model, &g);
  bool told = false; /* cli_freeze_layers printed its error */
  if (st == CLT_OK) {
    st = cli_freeze_layers(ctx, g, "tune", freeze, train_only);
    told = st != CLT_OK;
  }
  if (st == CLT_OK) st = clt_graph_set_precision(g, (clt_precision)precision);
  if (st == CLT_OK) st = clt_graph_compile(g, batch, 1);
  double compile_s = cli_now() - t0;
  if (st != CLT_OK) {
    if (!told) fprintf(stderr, "cltrain: %s\n", clt_context_last_error(ctx));
    clt_graph_destroy(g);
    clt_context_destroy(ctx);
    return 1;
  }
  printf("%s at batch %lld: %d products with a choice\n", model, batch,
         clt_graph_plan_count(g));
  printf("  %-28s %12s %10s\n", "candidate", "time", "GFLOP/s");
  for (int i = 0; i < clt_graph_plan_count(g); i++) {
    clt_plan_info p;
    if (clt_graph_plan_info(g, i, &p) == CLT_OK) print_plan(&p);
  }
  printf("measuring: %.2f s (compile in all: %.2f s)\n",
         clt_graph_plan_seconds(g), compile_s);
  clt_graph_destroy(g);
  clt_context_destroy(ctx);
  return 0;
}
