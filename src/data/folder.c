/* Image folders: list the class folders and their images, put the files in
 * a fixed shuffled order, then read the packed cache or decode the images
 * on a few threads (and fill the cache). */
#include "data/folder.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/rng.h"
#include "data/image_decode.h"
#include "data/pack_cache.h"
#include "io/json.h"
#include "runtime/sha256.h"

#define FOLDER_MAX_THREADS 4
#define FOLDER_KEY_VERSION "cltrain image folder v1"

typedef struct folder_file {
  char *path; /* dir/class/name */
  int32_t label;
  int64_t size;
  int64_t mtime_ns;
} folder_file;

typedef struct folder_list {
  char **classes; /* folder names, sorted */
  int n_classes;
  folder_file *files;
  int64_t n_files, cap_files;
} folder_list;

static void folder_list_free(folder_list *l) {
  for (int i = 0; i < l->n_classes; i++) free(l->classes[i]);
  free(l->classes);
  for (int64_t i = 0; i < l->n_files; i++) free(l->files[i].path);
  free(l->files);
  memset(l, 0, sizeof *l);
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool folder_is_image_name(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") ||
                 !strcasecmp(dot, ".jpeg"));
}

/* The sorted names of dir's entries that are folders (want_dirs) or image
 * files; names starting with '.' are skipped. */
static clt_status folder_names(const char *dir, bool want_dirs, char ***out,
                               int *count, clt_err *err) {
  *out = NULL;
  *count = 0;
  DIR *d = opendir(dir);
  if (!d)
    return clt_err_set(err, CLT_ERR_IO, "cannot open folder %s: %s", dir,
                       strerror(errno));
  char **names = NULL;
  int n = 0, cap = 0;
  bool ok = true;
  struct dirent *e;
  while (ok && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    struct stat st;
    int w = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (w < 0 || (size_t)w >= sizeof path || stat(path, &st) != 0) continue;
    bool keep = want_dirs
                    ? S_ISDIR(st.st_mode)
                    : S_ISREG(st.st_mode) && folder_is_image_name(e->d_name);
    if (!keep) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      char **more = realloc(names, (size_t)cap * sizeof *more);
      if (!more) {
        ok = false;
        break;
      }
      names = more;
    }
    if (!(names[n] = strdup(e->d_name)))
      ok = false;
    else
      n++;
  }
  closedir(d);
  if (!ok) {
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    return clt_err_set(err, CLT_ERR_HOST_MEMORY, "listing %s", dir);
  }
  if (n > 1) qsort(names, (size_t)n, sizeof *names, compare_names);
  *out = names;
  *count = n;
  return CLT_OK;
}

clt_status clt_folder_classes(const char *dir, char ***names, int *count,
                              clt_err *err) {
  return folder_names(dir, true, names, count, err);
}

static clt_status folder_add_file(folder_list *l, const char *path,
                                  int32_t label, clt_err *err) {
  struct stat st;
  if (stat(path, &st) != 0)
    return clt_err_set(err, CLT_ERR_IO, "cannot read %s: %s", path,
                       strerror(errno));
  if (l->n_files == l->cap_files) {
    int64_t cap = l->cap_files ? 2 * l->cap_files : 256;
    folder_file *more = realloc(l->files, (size_t)cap * sizeof *more);
    if (!more) return clt_err_set(err, CLT_ERR_HOST_MEMORY, "file list");
    l->files = more;
    l->cap_files = cap;
  }
  folder_file *f = &l->files[l->n_files];
  if (!(f->path = strdup(path)))
    return clt_err_set(err, CLT_ERR_HOST_MEMORY, "file list");
  f->label = label;
  f->size = (int64_t)st.st_size;
  f->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  l->n_files++;
  return CLT_OK;
}

/* The label of class folder `name`: its index in o->class_names, or in
 * the sorted folder list. */
static clt_status folder_label(const char *dir, const char *name, int index,
                               const clt_data_options *o, int32_t *label,
                               clt_err *err) {
  if (!o->class_names) {
    *label = index;
    return CLT_OK;
  }
  for (int i = 0; i < o->n_class_names; i++)
    if (!strcmp(o->class_names[i], name)) {
      *label = i;
      return CLT_OK;
    }
  return clt_err_set(err, CLT_ERR_FORMAT,
                     "%s/%s: class '%s' is not one of the %d classes the "
                     "model was trained on",
                     dir, name, name, o->n_class_names);
}

static clt_status folder_list_files(const char *dir, const clt_data_options *o,
                                    folder_list *l, clt_err *err) {
  CLT_TRY(folder_names(dir, true, &l->classes, &l->n_classes, err));
  for (int c = 0; c < l->n_classes; c++) /* checkpoints keep them */
    if (!clt_json_utf8_valid(l->classes[c], strlen(l->classes[c])))
      return clt_err_set(err, CLT_ERR_FORMAT,
                         "%s/%s: the class folder's name is not UTF-8 "
                         "text: class names are kept as UTF-8",
                         dir, l->classes[c]);
  if (l->n_classes == 0)
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s holds no class folders (expected %s/<class>/"
                       "<image>.png or .jpg)",
                       dir, dir);
  int limit = o->class_names ? o->n_class_names : o->num_classes;
  if (!o->class_names && limit > 0 && l->n_classes > limit)
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s holds %d class folders, but the model has %d "
                       "classes",
                       dir, l->n_classes, limit);
  for (int c = 0; c < l->n_classes; c++) {
    int32_t label = 0;
    CLT_TRY(folder_label(dir, l->classes[c], c, o, &label, err));
    char sub[4096];
    int w = snprintf(sub, sizeof sub, "%s/%s", dir, l->classes[c]);
    if (w < 0 || (size_t)w >= sizeof sub)
      return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT, "%s/%s: path too long",
                         dir, l->classes[c]);
    char **names = NULL;
    int n = 0;
    CLT_TRY(folder_names(sub, false, &names, &n, err));
    clt_status st = CLT_OK;
    for (int i = 0; st == CLT_OK && i < n; i++) {
      char path[4096];
      int w = snprintf(path, sizeof path, "%s/%s", sub, names[i]);
      st = w > 0 && (size_t)w < sizeof path
               ? folder_add_file(l, path, label, err)
               : clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                             "%s/%s: path too long", sub, names[i]);
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    CLT_TRY(st);
  }
  if (l->n_files == 0)
    return clt_err_set(err, CLT_ERR_FORMAT,
                       "%s: its class folders hold no .png or .jpg files", dir);
  return CLT_OK;
}

/* A fixed Fisher-Yates shuffle (not the training seed's), so that a limit
 * or a hold-out takes every class and is the same on every run. */
static void folder_shuffle(folder_list *l) {
  clt_rng rng = clt_rng_derive(0, CLT_RNG_DATA_ORDER, 0);
  for (int64_t i = l->n_files - 1; i > 0; i--) {
    int64_t j = (int64_t)clt_rng_below(&rng, (uint64_t)i + 1);
    folder_file t = l->files[i];
    l->files[i] = l->files[j];
    l->files[j] = t;
  }
}

static void key_add(clt_sha256 *s, const void *p, size_t n) {
  uint64_t len = n;
  clt_sha256_update(s, &len, sizeof len);
  clt_sha256_update(s, p, n);
}

static void key_add_i64(clt_sha256 *s, int64_t v) { key_add(s, &v, sizeof v); }

static void folder_key(const folder_list *l, const clt_data_options *o,
                       const char *const *classes, int n_classes,
                       uint8_t key[32]) {
  clt_sha256 s;
  clt_sha256_init(&s);
  key_add(&s, FOLDER_KEY_VERSION, strlen(FOLDER_KEY_VERSION));
  key_add_i64(&s, o->channels);
  key_add_i64(&s, o->height);
  key_add_i64(&s, o->width);
  key_add_i64(&s, o->resize);
  key_add_i64(&s, n_classes);
  for (int i = 0; i < n_classes; i++)
    key_add(&s, classes[i], strlen(classes[i]));
  key_add_i64(&s, l->n_files);
  for (int64_t i = 0; i < l->n_files; i++) {
    const folder_file *f = &l->files[i];
    key_add(&s, f->path, strlen(f->path));
    key_add_i64(&s, f->label);
    key_add_i64(&s, f->size);
    key_add_i64(&s, f->mtime_ns);
  }
  clt_sha256_final(&s, key);
}

/* ---- decoding on threads ------------------------------------------------- */

typedef struct folder_job {
  const folder_list *l;
  const clt_data_options *o;
  clt_dataset *ds;
  pthread_mutex_t mutex;
  int64_t next;      /* next file to take */
  int64_t first_bad; /* lowest failed file so far (n_files: none) */
  clt_err err;       /* its message */
} folder_job;

static void folder_decode_one(folder_job *job, int64_t i, clt_err *err) {
  const folder_file *f = &job->l->files[i];
  clt_dataset *ds = job->ds;
  clt_image_pixels img;
  clt_status st = clt_image_decode_file(f->path, &img, err);
  if (st == CLT_OK) {
    st = clt_image_pixels_to_chw(
        &img, f->path, ds->channels, ds->height, ds->width, job->o->resize,
        ds->pixels + i * clt_dataset_sample_size(ds), err);
    free(img.pixels);
  }
  ds->labels[i] = f->label;
  if (st == CLT_OK) return;
  pthread_mutex_lock(&job->mutex);
  if (i < job->first_bad) {
    job->first_bad = i;
    job->err = *err;
  }
  pthread_mutex_unlock(&job->mutex);
}

static void *folder_worker(void *arg) {
  folder_job *job = arg;
  clt_err *err = malloc(sizeof *err);
  for (;;) {
    pthread_mutex_lock(&job->mutex);
    /* Files after a failed one need not be decoded: the lowest failure is
     * the one reported, whatever the threads' timing. */
    int64_t i = job->next < job->first_bad ? job->next++ : -1;
    pthread_mutex_unlock(&job->mutex);
    if (i < 0) break;
    clt_err local;
    folder_decode_one(job, i, err ? err : &local);
  }
  free(err);
  return NULL;
}

/* The threads asked for, else one per core the machine has online, at
 * most FOLDER_MAX_THREADS; never more than the files. */
static int folder_threads(const clt_data_options *o, int64_t files) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int n = o->threads > 0 ? o->threads
          : cores >= 1 && cores < FOLDER_MAX_THREADS ? (int)cores
                                                     : FOLDER_MAX_THREADS;
  return files < n ? (int)files : n;
}

static clt_status folder_decode(const folder_list *l, const clt_data_options *o,
                                clt_dataset *ds, int *threads_used,
                                clt_err *err) {
  folder_job job = {
      .l = l, .o = o, .ds = ds, .next = 0, .first_bad = l->n_files};
  pthread_mutex_init(&job.mutex, NULL);
  int n = folder_threads(o, l->n_files);
  pthread_t tids[64];
  int started = 0;
  for (; started < n && started < 64; started++)
    if (pthread_create(&tids[started], NULL, folder_worker, &job) != 0) break;
  if (started == 0) folder_worker(&job); /* no thread to be had: decode here */
  for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
  pthread_mutex_destroy(&job.mutex);
  *threads_used = started > 0 ? started : 1;
  if (job.first_bad < l->n_files) {
    *err = job.err;
    return job.err.status;
  }
  return CLT_OK;
}

/* ---- the whole ----------------------------------------------------------- */

static clt_status folder_check_options(const char *dir,
                                       const clt_data_options *o,
                                       clt_err *err) {
  if (o->channels < 1 || o->height < 1 || o->width < 1)
    return clt_err_set(err, CLT_ERR_INVALID_ARGUMENT,
                       "%s: reading images needs the model's input shape, "
                       "got %dx%dx%d",
                       dir, o->channels, o->height, o->width);
  if (o->targets > 0)
    return clt_err_set(err, CLT_ERR_UNSUPPORTED,
                       "%s: image folders give class labels; the model's "
                       "regression loss wants float targets (use a CSV file)",
                       dir);
  return CLT_OK;
}

static clt_status folder_alloc(clt_dataset *ds, clt_err *err) {
  size_t n = (size_t)ds->count * (size_t)clt_dataset_sample_size(ds);
  ds->pixels = malloc(n);
  ds->labels = malloc((size_t)ds->count * sizeof *ds->labels);
  if (!ds->pixels || !ds->labels)
    return clt_err_set(err, CLT_ERR_HOST_MEMORY,
                       "no memory for %lld decoded images (%zu bytes)",
                       (long long)ds->count, n);
  return CLT_OK;
}

static clt_status folder_fill(const char *dir, const folder_list *l,
                              const clt_data_options *o, clt_dataset *ds,
                              clt_err *err) {
  const char *const *classes =
      o->class_names ? o->class_names : (const char *const *)l->classes;
  int n_classes = o->class_names ? o->n_class_names : l->n_classes;
  CLT_TRY(clt_dataset_set_class_names(ds, classes, n_classes, err));
  uint8_t key[32];
  folder_key(l, o, classes, n_classes, key);
  char cache[4096];
  bool caching =
      clt_pack_cache_dir(o->cache_dir, o->cache, cache, sizeof cache);
  if (caching && clt_pack_cache_load(cache, key, ds)) {
    ds->from_cache = true;
    snprintf(ds->source, sizeof ds->source,
             "%s (image folders: %lld images in %d classes, read from the "
             "packed cache)",
             dir, (long long)ds->count, l->n_classes);
    return CLT_OK;
  }
  CLT_TRY(folder_alloc(ds, err));
  int threads = 1;
  CLT_TRY(folder_decode(l, o, ds, &threads, err));
  clt_err store_err = {0};
  const char *cached = "not cached";
  if (caching)
    cached = clt_pack_cache_store(cache, key, ds, &store_err) == CLT_OK
                 ? "packed into the cache"
                 : "could not be cached";
  snprintf(ds->source, sizeof ds->source,
           "%s (image folders: %lld images in %d classes, decoded on %d "
           "thread%s, %s)",
           dir, (long long)ds->count, l->n_classes, threads,
           threads == 1 ? "" : "s", cached);
  return CLT_OK;
}

clt_status clt_folder_read(const char *dir, const clt_data_options *o,
                           clt_dataset *out, clt_err *err) {
  memset(out, 0, sizeof *out);
  CLT_TRY(folder_check_options(dir, o, err));
  folder_list l = {0};
  clt_status st = folder_list_files(dir, o, &l, err);
  if (st == CLT_OK) {
    folder_shuffle(&l);
    out->count = l.n_files;
    out->channels = o->channels;
    out->height = o->height;
    out->width = o->width;
    st = folder_fill(dir, &l, o, out, err);
  }
  folder_list_free(&l);
  if (st != CLT_OK) clt_dataset_free(out);
  return st;
}
