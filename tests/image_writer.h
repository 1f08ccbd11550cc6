/* Writes small image files and image-folder datasets for the data tests
 * (the suites and the make_image_folder helper of cli_data.sh).
 *
 * Image k of a class is a deterministic pattern whose brightness says its
 * class, so that a model can learn the classes in an epoch or two. */
#ifndef CLT_TESTS_IMAGE_WRITER_H
#define CLT_TESTS_IMAGE_WRITER_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef CLT_HAVE_PNG
#include <png.h>
#endif
#ifdef CLT_HAVE_JPEG
#include <jpeglib.h>
#endif

/* channels 1 (grey) or 3 (RGB), interleaved. Returns false on failure. */
static inline bool tw_write_png(const char *path, const uint8_t *px, int w,
                                int h, int channels) {
#ifdef CLT_HAVE_PNG
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  img.width = (png_uint_32)w;
  img.height = (png_uint_32)h;
  img.format = channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  return png_image_write_to_file(&img, path, 0, px, 0, NULL) != 0;
#else
  (void)path, (void)px, (void)w, (void)h, (void)channels;
  return false;
#endif
}

static inline bool tw_write_jpeg(const char *path, const uint8_t *px, int w,
                                 int h, int channels) {
#ifdef CLT_HAVE_JPEG
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr e;
  c.err = jpeg_std_error(&e);
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, f);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = channels;
  c.in_color_space = channels == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 95, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = (JSAMPROW)(px + (size_t)c.next_scanline * w * channels);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  return fclose(f) == 0;
#else
  (void)path, (void)px, (void)w, (void)h, (void)channels;
  return false;
#endif
}

/* The pattern of image k of class `label`: a bright square whose place
 * says the class, over a faint texture. */
static inline void tw_pattern(uint8_t *px, int w, int h, int channels,
                              int label, int k) {
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      int qx = x * 2 / w, qy = y * 2 / h;
      bool lit = qy * 2 + qx == label % 4;
      int v = lit ? 220 - (k * 7) % 30 : (x * 13 + y * 7 + k * 5) % 40;
      for (int c = 0; c < channels; c++)
        px[((size_t)y * w + x) * channels + c] = (uint8_t)v;
    }
}

/* Whether this build can write the images tw_write_folder makes. */
static inline bool tw_can_write(void) {
#ifdef CLT_HAVE_PNG
  return true;
#else
  return false;
#endif
}

static inline bool tw_mkdir(const char *path) {
  return mkdir(path, 0755) == 0 || errno == EEXIST;
}

/* Writes dir/<class>/img<k>.<ext> for `classes` classes named
 * "class_a", "class_b", ... with per_class images of w x h: even images
 * grey PNG, odd ones colour PNG, every third a JPEG when with_jpeg (and
 * the build has libjpeg). */
static inline bool tw_write_folder(const char *dir, int classes, int per_class,
                                   int w, int h, bool with_jpeg) {
  if (!tw_mkdir(dir)) return false;
  uint8_t *px = malloc((size_t)w * h * 3);
  bool ok = px != NULL;
  for (int c = 0; ok && c < classes; c++) {
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/class_%c", dir, 'a' + c);
    ok = tw_mkdir(sub);
    for (int k = 0; ok && k < per_class; k++) {
      int channels = k % 2 ? 3 : 1;
#ifdef CLT_HAVE_JPEG
      bool jpeg = with_jpeg && k % 3 == 2;
#else
      bool jpeg = false;
      (void)with_jpeg;
#endif
      char path[1200];
      snprintf(path, sizeof path, "%s/img%02d.%s", sub, k,
               jpeg ? "jpg" : "png");
      tw_pattern(px, w, h, channels, c, k);
      ok = jpeg ? tw_write_jpeg(path, px, w, h, channels)
                : tw_write_png(path, px, w, h, channels);
    }
  }
  free(px);
  return ok;
}

#endif
