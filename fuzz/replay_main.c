/* Runs a libFuzzer harness over saved inputs without libFuzzer, so that
 * every build (gcc too) replays the corpus and every crash ever found:
 *   replay_X FILE_OR_FOLDER...
 * Each file is one input; a harness that breaks a promise aborts. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
    fprintf(stderr, "%s: cannot read\n", path);
    fclose(f);
    free(buf);
    return 1;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, (size_t)n);
  free(buf);
  return 0;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files of a folder (not hidden), in name order. */
static int replay_folder(const char *dir, int *count) {
  DIR *d = opendir(dir);
  if (!d) {
    perror(dir);
    return 1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || !strcmp(e->d_name, "README.md")) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      names = realloc(names, cap * sizeof *names);
      if (!names) return 1;
    }
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  if (n > 1) qsort(names, n, sizeof *names, name_cmp);
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      rc |= replay_file(path);
      (*count)++;
    }
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  int rc = 0, count = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      perror(argv[i]);
      rc = 1;
    } else if (S_ISDIR(st.st_mode)) {
      rc |= replay_folder(argv[i], &count);
    } else {
      rc |= replay_file(argv[i]);
      count++;
    }
  }
  printf("replayed %d inputs\n", count);
  return rc;
}
