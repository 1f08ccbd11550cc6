/* A user's program that trains on image folders, built by install.sh
 * against the installed tree with `pkg-config --cflags --libs
 * cltrain-image` (not by meson): before clt_image_init() a folder of PNGs
 * is refused with a message saying what to do; after it, the folder loads.
 *   usage: install_folder DIR   (DIR/<class>/<image>.png, 8x8 images) */
#include <stdio.h>
#include <string.h>

#include <cltrain_image.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: install_folder DIR\n");
    return 2;
  }
  char err[1024];
  clt_context *ctx = NULL;
  if (clt_context_create(NULL, &ctx, err, sizeof err) != CLT_OK) {
    fprintf(stderr, "install_folder: %s\n", err);
    return 1;
  }
  clt_data_options o;
  clt_data_options_init(&o);
  o.channels = 1;
  o.height = 8;
  o.width = 8;
  o.cache = 0;
  clt_dataset *ds = NULL;
  int rc = 1;
  clt_status st = clt_dataset_load_folder(ctx, argv[1], &o, &ds);
  const char *msg = clt_context_last_error(ctx);
  if (st != CLT_ERR_UNSUPPORTED || !strstr(msg, "clt_image_init()")) {
    fprintf(stderr, "install_folder: without clt_image_init: %s (%s)\n",
            clt_status_string(st), msg);
    goto done;
  }
  printf("before clt_image_init: %s\n", msg);
  clt_image_init();
  if (clt_dataset_load_folder(ctx, argv[1], &o, &ds) != CLT_OK) {
    fprintf(stderr, "install_folder: %s\n", clt_context_last_error(ctx));
    goto done;
  }
  printf("after clt_image_init: %lld images in %d classes\n",
         (long long)clt_dataset_count(ds), clt_dataset_num_classes(ds));
  rc = 0;
done:
  clt_dataset_destroy(ds);
  clt_context_destroy(ctx);
  return rc;
}
