/* clt_dataset_open: from what a user names (--data, --test-data) to a
 * training and a test dataset, saying where each came from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <dirent.h>
#include <sys/stat.h>

#include "data/csv.h"
#include "data/folder.h"
#include "runtime/runtime.h"

typedef enum open_kind {
  OPEN_IDX,     /* fashion-mnist, or a folder of the four IDX files */
  OPEN_CSV,     /* a CSV file */
  OPEN_FOLDERS, /* a folder of class folders */
} open_kind;

typedef struct open_source {
  open_kind kind;
  char path[4096]; /* the CSV file, the class folders, or the IDX spec */
  bool idx_train;  /* OPEN_IDX: which split */
} open_source;

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* path = dir/name, false if it does not fit. */
static bool join(char *out, size_t len, const char *dir, const char *name) {
  size_t n = strlen(dir);
  const char *sep = n && dir[n - 1] == '/' ? "" : "/";
  int w = snprintf(out, len, "%s%s%s", dir, sep, name);
  return w > 0 && (size_t)w < len;
}

static bool has_idx(const char *dir) {
  char p[4096];
  return (join(p, sizeof p, dir, "train-images-idx3-ubyte") && is_file(p)) ||
         (join(p, sizeof p, dir, "train-images-idx3-ubyte.gz") && is_file(p));
}

/* Whether dir holds a folder (a class folder: dir is then one image-folder
 * dataset, split by --holdout / --val-split). Hidden entries do not
 * count. */
static bool has_subdir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return false;
  bool found = false;
  struct dirent *e;
  char p[4096];
  while (!found && (e = readdir(d)))
    found = e->d_name[0] != '.' && join(p, sizeof p, dir, e->d_name) &&
            is_dir(p);
  closedir(d);
  return found;
}

/* What spec names, for the training split; *test_found says whether the
 * folder holds its own test split too (written to test). */
static clt_status open_resolve(const char *spec, open_source *train,
                               open_source *test, bool *test_found,
                               clt_err *err) {
  *test_found = false;
  snprintf(train->path, sizeof train->path, "%s", spec);
  snprintf(test->path, sizeof test->path, "%s", spec);
  if (!strcasecmp(spec, "fashion-mnist") || (is_dir(spec) && has_idx(spec))) {
    train->kind = test->kind = OPEN_IDX;
    train->idx_train = true;
    test->idx_train = false;
    *test_found = true;
    return CLT_OK;
  }
  if (is_file(spec)) {
    train->kind = OPEN_CSV;
    return CLT_OK;
  }
  if (!is_dir(spec))
    return clt_err_set(err, CLT_ERR_IO, "dataset %s not found", spec);
  char a[4096], b[4096];
  if (join(a, sizeof a, spec, "train.csv") && is_file(a)) {
    train->kind = test->kind = OPEN_CSV;
    snprintf(train->path, sizeof train->path, "%s", a);
    *test_found = join(b, sizeof b, spec, "test.csv") && is_file(b);
    snprintf(test->path, sizeof test->path, "%s", b);
    return CLT_OK;
  }
  if (join(a, sizeof a, spec, "train") && is_dir(a)) {
    train->kind = test->kind = OPEN_FOLDERS;
    snprintf(train->path, sizeof train->path, "%s", a);
    *test_found = join(b, sizeof b, spec, "test") && is_dir(b);
    snprintf(test->path, sizeof test->path, "%s", b);
    return CLT_OK;
  }
  if (has_subdir(spec)) { /* spec/<class>/<image>: one split */
    train->kind = OPEN_FOLDERS;
    return CLT_OK;
  }
  return clt_err_set(err, CLT_ERR_FORMAT,
                     "%s: no dataset found in this folder: cltrain reads the "
                     "four IDX files (train-images-idx3-ubyte, ...), "
                     "train.csv (and test.csv), train/<class>/<image> "
                     "folders (and test/<class>/...), or <class>/<image> "
                     "folders",
                     spec);
}

static clt_status open_test_spec(const char *test_spec, open_source *test,
                                 clt_err *err) {
  snprintf(test->path, sizeof test->path, "%s", test_spec);
  if (is_file(test_spec))
    test->kind = OPEN_CSV;
  else if (is_dir(test_spec))
    test->kind = OPEN_FOLDERS;
  else
    return clt_err_set(err, CLT_ERR_IO,
                       "test data %s not found (a CSV file or a folder of "
                       "class folders)",
                       test_spec);
  return CLT_OK;
}

static clt_status open_load(const open_source *s, const clt_data_options *o,
                            clt_dataset *ds, clt_err *err) {
  if (s->kind == OPEN_CSV) return clt_csv_read(s->path, o, ds, err);
  if (s->kind == OPEN_FOLDERS) return clt_folder_read(s->path, o, ds, err);
  char images[4096], labels[4096];
  CLT_TRY(clt_dataset_resolve(s->path, s->idx_train, images, labels,
                              sizeof images, err));
  return clt_dataset_load_idx(images, labels, 0, ds, err);
}

/* The test split of image folders maps folder names to the training
 * folders' classes, so that a class missing from one split cannot shift
 * the labels of the others. */
static clt_status open_class_names(const open_source *train,
                                   clt_data_options *o, char ***names,
                                   int *count, clt_err *err) {
  *names = NULL;
  *count = 0;
  if (o->class_names || train->kind != OPEN_FOLDERS) return CLT_OK;
  CLT_TRY(clt_folder_classes(train->path, names, count, err));
  o->class_names = (const char *const *)*names;
  o->n_class_names = *count;
  return CLT_OK;
}

typedef struct open_plan {
  open_source train, test;
  bool have_train, have_test; /* sources named */
  bool holdout;               /* the test split is the training data's tail */
} open_plan;

static clt_status open_plan_make(const char *spec, const char *test_spec,
                                 const clt_data_options *o, open_plan *p,
                                 clt_err *err) {
  memset(p, 0, sizeof *p);
  bool test_found = false;
  if (spec) {
    CLT_TRY(open_resolve(spec, &p->train, &p->test, &test_found, err));
    p->have_train = true;
  }
  if (test_spec) {
    CLT_TRY(open_test_spec(test_spec, &p->test, err));
    test_found = true;
  }
  p->have_test = test_found;
  p->holdout = !test_found && o->holdout > 0;
  return CLT_OK;
}

static clt_status open_run(const open_plan *p, const clt_data_options *o,
                           bool want_train, bool want_test, clt_dataset *tr,
                           clt_dataset *te, clt_err *err) {
  if ((want_train || p->holdout) && p->have_train)
    CLT_TRY(open_load(&p->train, o, tr, err));
  /* CSV labels that are names: the test split's map to the training
   * split's classes, so that a class missing from one cannot shift the
   * labels of the others. */
  clt_data_options to = *o;
  if (!o->class_names && tr->class_names) {
    to.class_names = (const char *const *)tr->class_names;
    to.n_class_names = tr->num_classes;
  }
  if (want_test && p->have_test) CLT_TRY(open_load(&p->test, &to, te, err));
  if (want_test && p->holdout && p->have_train) {
    char from[CLT_DATASET_SOURCE_MAX];
    snprintf(from, sizeof from, "%s", tr->source);
    CLT_TRY(clt_dataset_split_tail(tr, o->holdout, te, err));
    snprintf(te->source, sizeof te->source,
             "the last %g%% (%lld sample%s) of %.900s, held out: no test "
             "split was given",
             100.0 * o->holdout, (long long)te->count,
             te->count == 1 ? "" : "s", from);
    snprintf(tr->source, sizeof tr->source, "%.900s, less %lld held out", from,
             (long long)te->count);
  }
  clt_dataset_truncate(tr, o->train_limit);
  clt_dataset_truncate(te, o->test_limit);
  return CLT_OK;
}

static clt_status open_finish(clt_context *ctx, clt_status st, clt_err *err,
                              clt_dataset *ds, bool keep, clt_dataset **out) {
  if (st != CLT_OK || !keep || ds->count == 0) {
    clt_dataset_free(ds);
    free(ds);
    return st == CLT_OK ? CLT_OK : clt_ctx_fail(ctx, st, "%s", err->msg);
  }
  *out = ds;
  return CLT_OK;
}

CLT_API clt_status clt_dataset_open(clt_context *ctx, const char *spec,
                                    const char *test_spec,
                                    const clt_data_options *o,
                                    clt_dataset **train, clt_dataset **test) {
  if (train) *train = NULL;
  if (test) *test = NULL;
  if (!o || (!spec && !test_spec) || (!spec && train))
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "clt_dataset_open: needs options and the data to "
                        "open (spec; test_spec alone gives only test data)");
  clt_err err = {0};
  open_plan p;
  clt_data_options opts = *o;
  char **names = NULL;
  int n_names = 0;
  clt_dataset *tr = calloc(1, sizeof *tr), *te = calloc(1, sizeof *te);
  clt_status st = tr && te ? open_plan_make(spec, test_spec, o, &p, &err)
                           : clt_err_set(&err, CLT_ERR_HOST_MEMORY, "dataset");
  if (st == CLT_OK && p.have_train)
    st = open_class_names(&p.train, &opts, &names, &n_names, &err);
  if (st == CLT_OK)
    st = open_run(&p, &opts, train != NULL, test != NULL, tr, te, &err);
  clt_class_names_free(names, n_names);
  clt_status st_tr = open_finish(ctx, st, &err, tr, train != NULL, train);
  clt_status st_te = open_finish(ctx, st, &err, te, test != NULL, test);
  return st_tr != CLT_OK ? st_tr : st_te;
}
