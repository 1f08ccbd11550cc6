/* cltrain tune MODEL --batch B [--device D] [--cached]: measures the plan
 * of every product of a model compiled for batch B (as training does on
 * its first run), prints each candidate's time and GFLOP/s and the one
 * chosen, and stores the plans for later runs. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

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
      printf("  %-16s %12s %10s  rejected (failed or gave other numbers)\n",
             c->name, "-", "-");
    else if (c->seconds > 0)
      printf("  %-16s %9.3f ms %10.2f%s\n", c->name, c->seconds * 1e3,
             c->gflops, i == p->chosen ? "  <- chosen" : "");
    else
      printf("  %-16s %12s %10s%s\n", c->name, "-", "-",
             i == p->chosen ? "  <- chosen" : "");
  }
}

static int usage(FILE *out, int rc) {
  fprintf(out,
          "usage: cltrain tune MODEL --batch B [--device D] [--cached]\n"
          "  measures every product of MODEL compiled for batch B on the "
          "device,\n"
          "  prints each way to run it (time, GFLOP/s) and the one chosen, "
          "and\n"
          "  stores the plans beside the kernel cache for later runs\n"
          "  --cached  show the stored plans, measuring only those missing\n");
  return rc;
}

int cli_tune(int argc, char **argv) {
  const char *model = NULL, *device = NULL, *batch_s = NULL;
  bool bad = false, cached = false;
  long long batch = 0;
  for (int i = 0; i < argc; i++) {
    if (cli_opt_value(argc, argv, &i, "--device", &device, &bad)) {
      if (bad) return 2;
    } else if (cli_opt_value(argc, argv, &i, "--batch", &batch_s, &bad)) {
      if (bad || !cli_parse_int("--batch", batch_s, 1, INT_MAX, &batch)) return 2;
    } else if (!strcmp(argv[i], "--cached")) {
      cached = true;
    } else if (!strcmp(argv[i], "--help")) {
      return usage(stdout, 0);
    } else if (argv[i][0] == '-' || model) {
      fprintf(stderr, "cltrain tune: unexpected argument '%s'\n", argv[i]);
      return usage(stderr, 2);
    } else {
      model = argv[i];
    }
  }
  if (!model || batch < 1) return usage(stderr, 2);
  clt_context_options opts;
  clt_context_options_init(&opts);
  opts.device = device;
  opts.plan = cached ? CLT_PLAN_ON : CLT_PLAN_REMEASURE;
  clt_context *ctx = NULL;
  char err[8192];
  clt_status st = clt_context_create(&opts, &ctx, err, sizeof err);
  if (st != CLT_OK) {
    fprintf(stderr, "cltrain: %s\n", err[0] ? err : clt_status_string(st));
    return 1;
  }
  const clt_device_info *d = clt_context_device(ctx);
  printf("device: %s (%s, driver %s)\n", d->name, d->platform_name,
         d->driver_version);
  clt_graph *g = NULL;
  double t0 = cli_now();
  st = clt_graph_load_model(ctx, model, &g);
  if (st == CLT_OK) st = clt_graph_compile(g, batch, 1);
  double compile_s = cli_now() - t0;
  if (st != CLT_OK) {
    fprintf(stderr, "cltrain: %s\n", clt_context_last_error(ctx));
    clt_graph_destroy(g);
    clt_context_destroy(ctx);
    return 1;
  }
  printf("%s at batch %lld: %d products with a choice\n", model, batch,
         clt_graph_plan_count(g));
  printf("  %-16s %12s %10s\n", "candidate", "time", "GFLOP/s");
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
