/* Embedding cltrain: classify images from a C program.
 *
 *   cc embed_predict.c $(pkg-config --cflags --libs cltrain) -o embed_predict
 *   embed_predict MODEL WEIGHTS [DATA]
 *
 * loads a model file and the weights `cltrain train --save` wrote, runs the
 * first 8 test images of DATA (as `cltrain train --data` names it; default:
 * Debian's Fashion-MNIST) and prints each one's most likely class. */
#include <stdio.h>
#include <stdlib.h>

#include "cltrain.h"

#define N 8

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL WEIGHTS [DATA]\n", argv[0]);
    return 2;
  }
  const char *data = argc > 3 ? argv[3] : "fashion-mnist";
  char err[4096];
  clt_context *ctx = NULL;
  clt_model *model = NULL;
  clt_dataset *test = NULL;
  if (clt_context_create(NULL, &ctx, err, sizeof err) != CLT_OK) {
    fprintf(stderr, "no OpenCL device: %s\n", err);
    return 1;
  }
  int rc = 1;
  if (clt_model_load(ctx, argv[1], argv[2], &model) != CLT_OK ||
      clt_dataset_load(ctx, data, false, N, &test) != CLT_OK)
    goto fail;
  int64_t size = clt_model_input_size(model);
  int64_t classes = clt_model_output_size(model);
  float *x = malloc((size_t)(N * size) * sizeof *x);
  float *probs = malloc((size_t)(N * classes) * sizeof *probs);
  if (x && probs && clt_dataset_sample_values(test) == size &&
      clt_dataset_count(test) >= N &&
      clt_dataset_samples(test, 0, N, x, NULL) == CLT_OK &&
      clt_model_predict(model, x, N, probs) == CLT_OK) {
    for (int i = 0; i < N; i++) {
      const float *p = probs + i * classes;
      int best = 0;
      for (int c = 1; c < classes; c++)
        if (p[c] > p[best]) best = c;
      printf("image %d: class %d (probability %.3f)\n", i, best, p[best]);
    }
    rc = 0;
  } else if (x && probs) {
    fprintf(stderr, "%s does not fit the model, or prediction failed\n",
            data);
  }
  free(x);
  free(probs);
fail:
  if (rc != 0 && clt_context_last_error(ctx)[0])
    fprintf(stderr, "%s\n", clt_context_last_error(ctx));
  clt_dataset_destroy(test);
  clt_model_destroy(model);
  clt_context_destroy(ctx);
  return rc;
}
