/* The cltrain command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"

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
          "                                [--profile-by op|layer]\n"
          "  bench infer MODEL [--batch B] [--device D|all] [--profile]\n"
          "                                inference images/s\n"
          "  bench conv [--device D]       im2col + GEMM against CLBlast's "
          "convgemm\n"
          "  tune MODEL --batch B [--device D]  measure and store the plans\n"
          "  summary MODEL [--device D]    the layers, output shapes and "
          "parameters\n"
          "  train MODEL --data DATA [options]\n"
          "                                DATA: fashion-mnist, an IDX "
          "folder, a CSV file,\n"
          "                                or a folder of CSV files or class "
          "folders\n"
          "  eval MODEL --weights FILE --data DATA [options]\n"
          "                                loss, accuracy, confusion matrix,\n"
          "                                precision, recall and F1 per class\n"
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

/* POCL compiles, besides a kernel's generic work-group function, one more
 * for every local size, grid-size class and global offset the kernel is
 * launched with (its POCL_WORK_GROUP_SPECIALIZATION, on by default). A
 * first run times several candidates for every product, each launched at
 * its own sizes, so on a 2-core host it spent about half its time in
 * those compiles (the README's MLP command on empty caches: 41.9 s with
 * them, 22.2 s without), while training ran at the same speed either way
 * (bench train, MLP b32 and b256, CNN and ResNet b64, two interleaved
 * rounds, within 6% each way). So the command turns them off, unless the
 * user has set the variable; it only matters to POCL. It is set here,
 * before any thread or OpenCL call, because setenv is not safe beside a
 * running getenv; the library leaves the environment alone (README, "The
 * two commands"). */
static void pocl_generic_work_groups(void) {
  setenv("POCL_WORK_GROUP_SPECIALIZATION", "0", 0);
}

int main(int argc, char **argv) {
  pocl_generic_work_groups();
  /* Image folders decode PNG and JPEG through libcltrain-image. */
  clt_image_init();
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
  if (!strcmp(cmd, "summary")) return cli_summary(argc - 2, argv + 2);
  static const char *const commands[] = {"devices", "selftest", "bench",
                                         "train",   "eval",     "predict",
                                         "tune",    "summary",  "help"};
  const char *near = cli_nearest(cmd, commands, 9);
  fprintf(stderr, "cltrain: unknown command '%s'%s%s%s\n\n", cmd,
          near ? "; did you mean '" : "", near ? near : "",
          near ? "'?" : "");
  usage(stderr);
  return 2;
}
