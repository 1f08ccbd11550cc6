/* cltrain selftest: builds every kernel and checks every op against the
 * host reference on this device. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "check/check.h"

int cli_selftest(int argc, char **argv) {
  const char *device = NULL;
  const cli_option options[] = {
      {"device", CLI_STRING, &device, "D", "device (see `cltrain devices`)", 0,
       0, 0, 0, 0},
  };
  const cli_command cmd = {
      "selftest", "[--device D]",
      "  builds every kernel and checks every op against its host reference\n",
      options, 1, 0, 0, NULL};
  int npos = 0;
  int rc = cli_parse(&cmd, argc, argv, NULL, &npos);
  if (rc >= 0) return rc;
  double t0 = cli_now();
  clt_context *ctx = cli_open_context(device, false);
  if (!ctx) return 1;
  const clt_device_info *d = clt_context_device(ctx);
  if (clt_context_build_kernels(ctx) != CLT_OK) {
    fprintf(stderr, "cltrain: %s\n", clt_context_last_error(ctx));
    clt_context_destroy(ctx);
    return 1;
  }
  clt_kernel_stats ks;
  clt_context_kernel_stats(ctx, &ks);
  printf("device: %s (%s, %s)\n", d->name, d->platform_name,
         d->driver_version);
  printf("kernels: %d programs, %d kernels built in %.3f s (%d from the "
         "cache, %d compiled, %d cache entries rebuilt); context %.3f s\n",
         ks.programs, ks.kernels, ks.build_seconds, ks.cache_hits,
         ks.cache_misses, ks.cache_rejected, cli_now() - t0);
  int64_t loops = 0;
  if (clt_context_loop_limit(ctx, &loops) != CLT_OK) {
    fprintf(stderr, "cltrain: %s\n", clt_context_last_error(ctx));
    clt_context_destroy(ctx);
    return 1;
  }
  if (loops)
    printf("loops: the device ends a work-item's loops after %lld "
           "iterations, without an error: longer GEMMs and sums run in "
           "parts\n",
           (long long)loops);
  else
    printf("loops: no limit on a work-item's loops\n");
  bool has_route = false;
  if (cli_print_mma_route(ctx, &has_route) != 0) {
    clt_context_destroy(ctx);
    return 1;
  }
  int failed = 0, run = 0;
  for (int i = 0; i < clt_selftest_case_count; i++) {
    const clt_selftest_case *c = &clt_selftest_cases[i];
    if (c->fp16_route && !has_route) continue;
    run++;
    double err = 0.0, t = cli_now();
    clt_status st = c->run(ctx, &err);
    if (st == CLT_ERR_UNSUPPORTED && c->fp16_route) {
      /* a tile configuration this device cannot run (its local memory),
       * which the measured plans leave out too */
      printf("n/a  %-40s %s\n", c->name, clt_context_last_error(ctx));
      run--;
    } else if (st != CLT_OK) {
      printf("FAIL %-40s %s\n", c->name, clt_context_last_error(ctx));
      failed++;
    } else if (!(err <= c->tolerance)) {
      printf("FAIL %-40s max error %.3g > %.3g\n", c->name, err, c->tolerance);
      failed++;
    } else {
      printf("ok   %-40s max error %.3g (%.2f s)\n", c->name, err,
             cli_now() - t);
    }
  }
  for (int i = 0; has_route && i < CLT_FP16_CONFIGS; i++) {
    char form[300];
    clt_fp16_config_form(ctx, i, form, sizeof form);
    printf("fp16 tiles %-16s %s\n", clt_fp16_config_name(i), form);
  }
  for (int i = 0; has_route && i < CLT_TF32X3_CONFIGS; i++) {
    char form[300];
    clt_tf32x3_config_form(ctx, i, form, sizeof form);
    printf("%-27s %s\n", clt_tf32x3_config_name(i), form);
  }
  printf("%d of %d ops ok on %s\n", run - failed, run, d->name);
  clt_context_destroy(ctx);
  return failed ? 1 : 0;
}
