/* Embedding cltrain: classify images from a C program.
 *
 *   embed_predict MODEL WEIGHTS [IMAGES.idx]
 *
 * loads a model file and the weights `cltrain train --save` wrote, runs the
 * first 8 images of an IDX file (default: the Fashion-MNIST test set) and
 * prints each one's most likely class. */
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#include "cltrain.h"

#define N 8

/* The first n images of an IDX file (gzip or plain) as floats in [0, 1]. */
static int read_images(const char *path, float *x, int64_t size) {
  unsigned char header[16], px;
  gzFile f = gzopen(path, "rb");
  if (!f || gzread(f, header, 16) != 16) return -1;
  for (int64_t i = 0; i < N * size; i++) {
    if (gzread(f, &px, 1) != 1) return -1;
    x[i] = px / 255.0f;
  }
  gzclose(f);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL WEIGHTS [IMAGES.idx]\n", argv[0]);
    return 2;
  }
  const char *images = argc > 3 ? argv[3]
      : "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
  char err[4096];
  clt_context *ctx = NULL;
  clt_model *model = NULL;
  if (clt_context_create(NULL, &ctx, err, sizeof err) != CLT_OK) {
    fprintf(stderr, "no OpenCL device: %s\n", err);
    return 1;
  }
  int rc = 1;
  if (clt_model_load(ctx, argv[1], argv[2], &model) != CLT_OK) goto fail;
  int64_t size = clt_model_input_size(model);
  int64_t classes = clt_model_output_size(model);
  float *x = malloc((size_t)(N * size) * sizeof *x);
  float *probs = malloc((size_t)(N * classes) * sizeof *probs);
  if (x && probs && read_images(images, x, size) == 0 &&
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
    fprintf(stderr, "cannot read %s or predict\n", images);
  }
  free(x);
  free(probs);
fail:
  if (rc != 0 && clt_context_last_error(ctx)[0])
    fprintf(stderr, "%s\n", clt_context_last_error(ctx));
  clt_model_destroy(model);
  clt_context_destroy(ctx);
  return rc;
}
