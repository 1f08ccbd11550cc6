/* cltrain summary MODEL [--device D]: the layers of a model file, their
 * output shapes and parameters, as Keras's model.summary() prints them,
 * without training anything. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/options.h"

int cli_summary(int argc, char **argv) {
  const char *device = NULL;
  const cli_option options[] = {
      {"device", CLI_STRING, &device, "D", "device (see `cltrain devices`)", 0,
       0, 0, 0, 0},
  };
  const cli_command cmd = {
      "summary", "MODEL [--device D]",
      "  prints the model's layers, each one's output shape (per sample)\n"
      "  and parameters, the totals, and what its loss asks of the data,\n"
      "  as Keras's model.summary(); nothing is trained or compiled\n",
      options, 1, 1, 1, "MODEL file"};
  const char *model = NULL;
  int npos = 0;
  int rc = cli_parse(&cmd, argc, argv, &model, &npos);
  if (rc >= 0) return rc;
  clt_context *ctx = cli_open_context(device, false);
  if (!ctx) return 1;
  clt_graph *g = NULL;
  if (clt_graph_load_model(ctx, model, &g) != CLT_OK) {
    fprintf(stderr, "cltrain: %s\n", clt_context_last_error(ctx));
    clt_context_destroy(ctx);
    return 1;
  }
  size_t cap = 1 << 20;
  char *text = malloc(cap);
  if (!text) {
    fprintf(stderr, "cltrain: out of memory\n");
    rc = 1;
  } else {
    clt_graph_summary(g, text, cap);
    printf("model: %s\n%s", model, text);
    double bytes = 4.0 * (double)clt_graph_parameter_count(g);
    if (bytes < 1024)
      printf("trainable parameters: %.0f bytes as fp32 weights\n", bytes);
    else
      printf("trainable parameters: %.1f %s as fp32 weights\n",
             bytes < 1048576 ? bytes / 1024 : bytes / 1048576,
             bytes < 1048576 ? "KiB" : "MiB");
    int64_t in = clt_graph_input_size(g), out = clt_graph_output_size(g);
    switch (clt_graph_loss_kind(g)) {
    case CLT_LOSS_CLASSIFIER:
      printf("data: %lld values a sample, labels 0 to %lld (%lld classes)\n",
             (long long)in, (long long)out - 1, (long long)out);
      break;
    case CLT_LOSS_MULTILABEL:
      printf("data: %lld values a sample, %lld target%s of 0 to 1 (%s: "
             "each label present or not)\n",
             (long long)in, (long long)out, CLI_PLURAL(out),
             clt_graph_loss_name(g));
      break;
    case CLT_LOSS_REGRESSION:
      printf("data: %lld values a sample, %lld target%s (%s)\n",
             (long long)in, (long long)out, CLI_PLURAL(out),
             clt_graph_loss_name(g));
      break;
    default:
      printf("data: %lld values a sample, %lld outputs (no loss layer: "
             "inference only)\n",
             (long long)in, (long long)out);
    }
    rc = 0;
  }
  free(text);
  clt_graph_destroy(g);
  clt_context_destroy(ctx);
  return rc;
}
