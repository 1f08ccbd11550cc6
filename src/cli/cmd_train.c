/* cltrain train and cltrain bench train. */
#include <stdio.h>

#include "cli/cli.h"

int cli_train(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "cltrain train: not built yet\n");
  return 1;
}

int cli_bench_train(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "cltrain bench train: not built yet\n");
  return 1;
}
