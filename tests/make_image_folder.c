/* Writes an image-folder dataset for cli_data.sh:
 *   make_image_folder DIR CLASSES PER_CLASS WIDTH HEIGHT [jpeg]
 * (see tests/image_writer.h for what the images hold). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_writer.h"

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr,
            "usage: make_image_folder DIR CLASSES PER_CLASS W H [jpeg]\n");
    return 2;
  }
  bool jpeg = argc > 6 && !strcmp(argv[6], "jpeg");
  if (!tw_write_folder(argv[1], atoi(argv[2]), atoi(argv[3]), atoi(argv[4]),
                       atoi(argv[5]), jpeg)) {
    fprintf(stderr, "make_image_folder: cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
