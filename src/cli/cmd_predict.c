/* cltrain predict: classify image files (or CSV rows) with a trained
 * model; print the likeliest classes, or write every prediction to a CSV
 * file (--output). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "cli/image.h"

void cli_labels_free(char **labels, int count) {
  if (!labels) return;
  for (int i = 0; i < count; i++) free(labels[i]);
  free(labels);
}

char **cli_labels_read(const char *path, int *count) {
  *count = 0;
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "cltrain: cannot open labels file %s: %s\n", path,
            strerror(errno));
    return NULL;
  }
  char **labels = NULL;
  int n = 0, cap = 0;
  /* Lines of any length: a name cut in two would shift every later one. */
  char *line = NULL;
  size_t size = 0;
  bool ok = true;
  while (ok && getline(&line, &size, f) >= 0) {
    size_t len = strlen(line);
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' ||
                       line[len - 1] == ' ' || line[len - 1] == '\t'))
      line[--len] = '\0';
    if (len == 0) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      char **grown = realloc(labels, (size_t)cap * sizeof *grown);
      if (!grown) {
        ok = false;
        break;
      }
      labels = grown;
    }
    if (!(labels[n] = strdup(line))) ok = false;
    else n++;
  }
  if (ferror(f)) ok = false;
  free(line);
  fclose(f);
  if (!ok || n == 0) {
    fprintf(stderr, "cltrain: %s: %s\n", path,
            ok ? "no class names in it (one a line)" : "cannot read it");
    cli_labels_free(labels, n);
    return NULL;
  }
  *count = n;
  return labels;
}

typedef struct predict_args {
  const char *model, *weights, *labels, *device;
  const char *output; /* --output FILE.csv */
  long long top, limit;
  bool limit_given;
  int precision;  /* clt_precision */
  int csv_values; /* clt_csv_values: --csv-values, then what is used */
  int csv_separator; /* cli_csv_separator_names' index */
  bool resize, json, csv_values_given;
  bool regression; /* a regression loss (mse, mae, huber): print outputs */
  /* sigmoid_cross_entropy: the labels said present (a probability of 0.5
   * or more), unless --top asks for the K likeliest */
  bool multilabel, top_given;
  const char **inputs;
  int n_inputs;
  int printed; /* --json: predictions written so far */
  struct csv_out *out; /* --output: the rows so far */
} predict_args;

/* --output's file, made in memory and written at the end atomically (no
 * half file after an error). */
typedef struct csv_out {
  cli_text text;
  int64_t rows;
} csv_out;

/* text with each double quote doubled (inside a quoted field). */
static void put_doubling_quotes(csv_out *o, const char *text) {
  for (const char *c = text; *c; c++)
    if (*c == '"') cli_put(&o->text, "\"\"");
    else cli_put(&o->text, "%c", *c);
}

/* A field as RFC 4180 (and pandas) read it: in double quotes, doubled
 * inside, where it holds a comma, a quote or a line break. */
static void out_field(csv_out *o, const char *text) {
  if (!strpbrk(text, ",\"\r\n")) {
    cli_put(&o->text, "%s", text);
    return;
  }
  cli_put(&o->text, "\"");
  put_doubling_quotes(o, text);
  cli_put(&o->text, "\"");
}

/* Output k's name: a label, or its number. */
static void out_name(csv_out *o, int64_t k, char **labels, int n_labels) {
  if (labels && k < n_labels) out_field(o, labels[k]);
  else cli_put(&o->text, "%lld", (long long)k);
}

/* The header: file, index, then the predicted class (a classifier), the
 * labels present (multi-label), and one column an output. */
static void out_header(const predict_args *a, int64_t outputs, char **labels,
                       int n_labels) {
  cli_put(&a->out->text, "file,index%s",
          a->regression   ? ""
          : a->multilabel ? ",present"
                          : ",predicted");
  for (int64_t k = 0; k < outputs; k++) {
    cli_put(&a->out->text, ",");
    out_name(a->out, k, labels, n_labels);
  }
  cli_put(&a->out->text, "\n");
}

static void out_row(const predict_args *a, const char *path, int64_t i,
                    const float *out, int64_t outputs, char **labels,
                    int n_labels) {
  csv_out *o = a->out;
  out_field(o, path);
  cli_put(&o->text, ",%lld", (long long)i);
  if (a->multilabel) { /* "cat;dog": the labels at 0.5 or more */
    cli_put(&o->text, ",");
    char name[32];
    bool any = false, quote = false;
    for (int64_t k = 0; k < outputs; k++)
      if (out[k] >= 0.5f && labels && k < n_labels &&
          strpbrk(labels[k], ",\"\r\n"))
        quote = true;
    if (quote) cli_put(&o->text, "\"");
    for (int64_t k = 0; k < outputs; k++) {
      if (!(out[k] >= 0.5f)) continue;
      const char *n = labels && k < n_labels ? labels[k] : NULL;
      if (!n) {
        snprintf(name, sizeof name, "%lld", (long long)k);
        n = name;
      }
      cli_put(&o->text, "%s", any ? ";" : "");
      if (quote) put_doubling_quotes(o, n);
      else cli_put(&o->text, "%s", n);
      any = true;
    }
    if (quote) cli_put(&o->text, "\"");
  } else if (!a->regression) {
    int64_t best = 0;
    for (int64_t k = 1; k < outputs; k++)
      if (out[k] > out[best]) best = k;
    cli_put(&o->text, ",");
    out_name(o, best, labels, n_labels);
  }
  for (int64_t k = 0; k < outputs; k++)
    cli_put(&o->text, ",%.9g", (double)out[k]);
  cli_put(&o->text, "\n");
  o->rows++;
}

static int parse_predict_args(int argc, char **argv, predict_args *a) {
  memset(a, 0, sizeof *a);
  a->top = 3;
  a->limit = 10;
  a->inputs = calloc((size_t)argc + 1, sizeof *a->inputs);
  if (!a->inputs) return 1;
  const cli_option options[] = {
      {"weights", CLI_STRING, &a->weights, "FILE",
       "trained weights (a checkpoint from train --save)", 0, 0, 0, 0, 0},
      {"labels", CLI_STRING, &a->labels, "FILE",
       "class names, one a line (e.g. samples/fashion_labels.txt);\n"
       "default: those saved in the checkpoint, if any",
       0, 0, 0, 0, 0},
      {"top", CLI_INT, &a->top, "K",
       "classes shown per image (default 3; a multi-label\n"
       "model: the labels at 0.5 or more)",
       1, INT_MAX, 0, 0, &a->top_given},
      {"limit", CLI_INT, &a->limit, "N",
       "at most N images of an IDX file, rows of a CSV file\n"
       "(default 10; with --output, all)",
       1, (double)LLONG_MAX, 0, 0, &a->limit_given},
      {"output", CLI_STRING, &a->output, "FILE.csv",
       "write every prediction to FILE.csv instead: a row a\n"
       "sample (file, index, the predicted class, each class's\n"
       "probability; a regression's outputs), written atomically",
       0, 0, 0, 0, 0},
      {"resize", CLI_FLAG, &a->resize, NULL,
       "resize (bilinear) PNG/JPEG images to the model's input", 0, 0, 0, 0,
       0},
      {"csv-values", CLI_CHOICE, &a->csv_values, "V",
       "CSV rows: bytes (whole numbers 0-255, scaled to [0, 1])\n"
       "or floats (as they are); default: what the checkpoint\n"
       "was trained on",
       0, 0, 0, cli_csv_values_names, &a->csv_values_given},
      {"csv-separator", CLI_CHOICE, &a->csv_separator, "S",
       CLI_CSV_SEPARATOR_HELP, 0, 0, 0, cli_csv_separator_names, 0},
      {"device", CLI_STRING, &a->device, "D", "device (see `cltrain devices`)",
       0, 0, 0, 0, 0},
      {"precision", CLI_CHOICE, &a->precision, "P",
       "fp32 (default) or mixed: the forward pass in fp16\n"
       "values, as train --precision mixed evaluates",
       0, 0, 0, cli_precision_names, 0},
      {"json", CLI_FLAG, &a->json, NULL,
       "print the predictions as one JSON object", 0, 0, 0, 0, 0},
  };
  char about[512];
  snprintf(about, sizeof about,
           "  classifies each image of each INPUT: an IDX file (every image "
           "in it),\n  a PGM (P2 or P5), a PNG or a JPEG%s; or each row of "
           "a FILE.csv\n  (or .tsv, .txt: the values only, no label). PNG "
           "and JPEG are made grey or\n  colour as the model's input asks; "
           "sizes must match unless --resize. A\n  multi-label model "
           "(sigmoid_cross_entropy) gives each label's own\n  probability; "
           "a regression model (mse, mae, huber) its outputs.\n",
           !clt_image_format_supported("png")    ? " (this build lacks libpng)"
           : !clt_image_format_supported("jpeg") ? " (this build lacks JPEG)"
                                                : "");
  const cli_command cmd = {
      "predict", "MODEL --weights FILE [options] INPUT...", about, options,
      (int)(sizeof options / sizeof options[0]), 2, -1, "MODEL file and INPUT"};
  const char **pos = calloc((size_t)argc + 1, sizeof *pos);
  if (!pos) return 1;
  int npos = 0;
  int rc = cli_parse(&cmd, argc, argv, pos, &npos);
  if (rc < 0) {
    a->model = pos[0];
    for (int i = 1; i < npos; i++) a->inputs[a->n_inputs++] = pos[i];
    if (!a->weights) {
      fprintf(stderr, "cltrain predict: --weights FILE is required (see "
                      "cltrain predict --help)\n");
      rc = 2;
    } else if (a->output && a->json) {
      fprintf(stderr, "cltrain predict: --output and --json exclude each "
                      "other (--output writes the predictions as CSV)\n");
      rc = 2;
    } else if (a->output && a->top_given) {
      fprintf(stderr, "cltrain predict: --top is for the printed list; "
                      "--output writes every class's probability\n");
      rc = 2;
    }
    if (a->output && !a->limit_given) a->limit = LLONG_MAX;
  }
  free(pos);
  return rc;
}

/* Whether the images fit the model's input; prints why not. */
static bool images_fit(const clt_image_set *s, const char *path,
                       clt_model *m, const char *model_path) {
  int64_t shape[CLT_MAX_DIMS];
  int ndim = clt_model_input_shape(m, shape);
  int64_t size = (int64_t)s->channels * s->height * s->width;
  bool fits = ndim == 3 ? shape[0] == s->channels && shape[1] == s->height &&
                              shape[2] == s->width
                        : size == clt_model_input_size(m);
  if (fits) return true;
  char want[96] = "";
  for (int i = 0, w = 0; i < ndim && w < (int)sizeof want; i++)
    w += snprintf(want + w, sizeof want - (size_t)w, "%s%lld", i ? "x" : "",
                  (long long)shape[i]);
  fprintf(stderr,
          "cltrain: %s: the %s image is %dx%d pixels with %d channel%s "
          "(%dx%dx%d), but %s takes %s inputs; predict does not resize, "
          "so resize the image first\n",
          path, s->format, s->width, s->height, s->channels,
          s->channels == 1 ? "" : "s", s->channels, s->height, s->width,
          model_path, want);
  return false;
}

static void print_top(const float *probs, int64_t classes, long long top,
                      char **labels, int n_labels, bool json) {
  bool *used = calloc((size_t)classes, sizeof *used);
  if (!used) return;
  for (long long k = 0; k < top && k < classes; k++) {
    int64_t best = -1;
    for (int64_t c = 0; c < classes; c++)
      if (!used[c] && (best < 0 || probs[c] > probs[best])) best = c;
    used[best] = true;
    if (json) {
      printf("%s{\"class\": %lld, \"label\": ", k ? ", " : "",
             (long long)best);
      if (labels && best < n_labels) cli_json_string(stdout, labels[best]);
      else printf("null");
      printf(", \"probability\": ");
      cli_json_number(stdout, probs[best]);
      printf("}");
    } else if (labels && best < n_labels)
      printf("  %lld. %-14s %.4f", k + 1, labels[best], (double)probs[best]);
    else
      printf("  %lld. class %-8lld %.4f", k + 1, (long long)best,
             (double)probs[best]);
  }
  if (!json) printf("\n");
  free(used);
}

/* How many of a multi-label model's labels are said present: a
 * probability of 0.5 or more. */
static int64_t count_present(const float *probs, int64_t labels) {
  int64_t present = 0;
  for (int64_t k = 0; k < labels; k++) present += probs[k] >= 0.5f;
  return present;
}

/* A multi-label model's labels said present, likeliest first; none: the
 * likeliest, said to be under 0.5. */
static void print_present(const float *probs, int64_t labels, char **names,
                          int n_names) {
  int64_t present = count_present(probs, labels), best = 0;
  for (int64_t k = 0; k < labels; k++)
    if (probs[k] > probs[best]) best = k;
  if (present > 0) {
    print_top(probs, labels, present, names, n_names, false);
    return;
  }
  printf("  no label at 0.5 or more (the likeliest: ");
  if (names && best < n_names) printf("%s", names[best]);
  else printf("label %lld", (long long)best);
  printf(" %.4f)\n", (double)probs[best]);
}

/* A PNG or JPEG made what the model takes: its channels (grey or colour,
 * as training made them), its size (resized only when asked). */
static clt_status read_for_model(const char *path, clt_model *m, bool resize,
                                 clt_image_set *s, cli_err *err) {
  memset(s, 0, sizeof *s);
  int64_t shape[CLT_MAX_DIMS];
  if (clt_model_input_shape(m, shape) != 3) return clt_image_read(path, s, err);
  size_t size = (size_t)(shape[0] * shape[1] * shape[2]);
  s->pixels = malloc(size * sizeof(float));
  if (!s->pixels) return cli_err_set(err, CLT_ERR_HOST_MEMORY, "%s", path);
  clt_status st = clt_image_load(path, (int)shape[0], (int)shape[1],
                                 (int)shape[2], resize, s->pixels, err->msg,
                                 sizeof err->msg);
  if (st != CLT_OK) {
    err->status = st;
    free(s->pixels);
    s->pixels = NULL;
    return st;
  }
  /* Made what the model takes, so images_fit holds; named as made (no
   * second decode to learn the file's own channels). */
  s->count = 1;
  s->channels = (int)shape[0];
  s->height = (int)shape[1];
  s->width = (int)shape[2];
  s->format = shape[0] == 1 ? "grey image" : "colour image";
  return CLT_OK;
}

/* Prints sample i of path (count of them in the file): the top classes,
 * or a regression model's outputs. */
static void print_sample(predict_args *a, const char *path, int64_t i,
                         int64_t count, const float *out, int64_t outputs,
                         char **labels, int n_labels) {
  if (a->out) {
    out_row(a, path, i, out, outputs, labels, n_labels);
    return;
  }
  if (a->json) {
    printf("%s{\"file\": ", a->printed++ ? ",\n  " : "\n  ");
    cli_json_string(stdout, path);
    printf(", \"index\": %lld, \"%s\": [", (long long)i,
           a->regression ? "outputs" : "top");
    if (a->regression)
      for (int64_t k = 0; k < outputs; k++) {
        printf("%s", k ? ", " : "");
        cli_json_number(stdout, out[k]);
      }
    else
      print_top(out, outputs, a->top, labels, n_labels, true);
    printf("]");
    if (a->multilabel) { /* the text's list: likeliest first, maybe none */
      printf(", \"present\": [");
      print_top(out, outputs, count_present(out, outputs), labels, n_labels,
                true);
      printf("]");
    }
    printf("}");
    return;
  }
  if (count > 1) printf("%s[%lld]:", path, (long long)i);
  else printf("%s:", path);
  if (a->multilabel && !a->top_given) {
    print_present(out, outputs, labels, n_labels);
    return;
  }
  if (!a->regression) {
    print_top(out, outputs, a->top, labels, n_labels, false);
    return;
  }
  for (int64_t k = 0; k < outputs; k++) /* named: as the targets' columns */
    if (labels && k < n_labels)
      printf("%s %s %.6g", k ? "," : "", labels[k], (double)out[k]);
    else
      printf(" %.6g", (double)out[k]);
  printf("\n");
}

/* "(12 more images in f; --limit N shows more)", to stderr under --json. */
static void print_more(const predict_args *a, const char *path, int64_t more,
                       const char *what) {
  if (more <= 0 || (a->out && a->limit_given)) return;
  fprintf(a->json ? stderr : stdout, "%s%lld more %s in %s; --limit N shows "
                                     "more%s\n",
          a->json ? "cltrain: " : "(", (long long)more, what, path,
          a->json ? "" : ")");
}

/* CSV rows read and predicted at a time. */
#define PREDICT_CHUNK 4096

/* Rows of values: .csv, .tsv, or numpy's savetxt's .txt. */
static bool is_csv(const char *path) {
  size_t n = strlen(path);
  return n >= 4 && (!strcasecmp(path + n - 4, ".csv") ||
                    !strcasecmp(path + n - 4, ".tsv") ||
                    !strcasecmp(path + n - 4, ".txt"));
}

/* Each row of a CSV file of values (no label), read as the checkpoint's
 * data was (or as --csv-values says). */
static int predict_csv(clt_context *ctx, clt_model *m, predict_args *a,
                       const char *path, char **labels, int n_labels) {
  clt_data_options o;
  clt_data_options_init(&o);
  clt_dataset *ds = NULL;
  float *x = NULL, *out = NULL;
  int rc = 1;
  if (clt_data_options_from_graph(clt_model_graph(m), &o) != CLT_OK)
    goto fail;
  o.unlabelled = true;
  o.csv_values = (clt_csv_values)a->csv_values;
  o.csv_separator = cli_csv_separator_chars[a->csv_separator];
  if (clt_dataset_load_csv(ctx, path, &o, &ds) != CLT_OK) goto fail;
  int64_t count = clt_dataset_count(ds);
  int64_t n = count < a->limit ? count : a->limit;
  int64_t in = clt_model_input_size(m), outputs = clt_model_output_size(m);
  /* A chunk of rows at a time: a whole file's values need not fit. */
  int64_t chunk = n < PREDICT_CHUNK ? n : PREDICT_CHUNK;
  x = malloc((size_t)(chunk * in) * sizeof *x);
  out = malloc((size_t)(chunk * outputs) * sizeof *out);
  if (!x || !out) {
    fprintf(stderr, "cltrain: %s: out of memory for %lld rows\n", path,
            (long long)chunk);
    goto done;
  }
  for (int64_t first = 0; first < n; first += chunk) {
    int64_t k = n - first < chunk ? n - first : chunk;
    if (clt_dataset_samples(ds, first, k, x, NULL) != CLT_OK ||
        clt_model_predict(m, x, k, out) != CLT_OK)
      goto fail;
    for (int64_t i = 0; i < k; i++)
      print_sample(a, path, first + i, count, out + i * outputs, outputs,
                   labels, n_labels);
  }
  print_more(a, path, count - n, "rows");
  rc = 0;
  goto done;
fail:
  fprintf(stderr, "cltrain: %s\n", clt_context_last_error(ctx));
done:
  free(x);
  free(out);
  clt_dataset_destroy(ds);
  return rc;
}

static int predict_file(clt_context *ctx, clt_model *m, predict_args *a,
                        const char *path, char **labels, int n_labels) {
  if (is_csv(path)) return predict_csv(ctx, m, a, path, labels, n_labels);
  clt_image_set s;
  cli_err err = {0};
  clt_image_format format = clt_image_format_of(path);
  clt_status read = format == CLT_IMAGE_FORMAT_PNG ||
                            format == CLT_IMAGE_FORMAT_JPEG
                        ? read_for_model(path, m, a->resize, &s, &err)
                        : clt_image_read(path, &s, &err);
  if (read != CLT_OK) {
    fprintf(stderr, "cltrain: %s\n", err.msg);
    return 1;
  }
  int rc = 1;
  int64_t n = s.count < a->limit ? s.count : a->limit;
  int64_t classes = clt_model_output_size(m);
  float *probs = malloc((size_t)(n * classes) * sizeof(float));
  if (!images_fit(&s, path, m, a->model) || !probs) goto done;
  if (clt_model_predict(m, s.pixels, n, probs) != CLT_OK) {
    fprintf(stderr, "cltrain: %s: %s\n", path, clt_context_last_error(ctx));
    goto done;
  }
  for (int64_t i = 0; i < n; i++)
    print_sample(a, path, i, s.count, probs + i * classes, classes, labels,
                 n_labels);
  print_more(a, path, s.count - n, "images");
  rc = 0;
done:
  free(probs);
  clt_image_set_free(&s);
  return rc;
}

int cli_predict(int argc, char **argv) {
  predict_args a;
  int rc = parse_predict_args(argc, argv, &a);
  if (rc >= 0) {
    free(a.inputs);
    return rc;
  }
  char **labels = NULL;
  int n_labels = 0;
  if (a.labels && !(labels = cli_labels_read(a.labels, &n_labels))) {
    free(a.inputs);
    return 1;
  }
  clt_context *ctx = cli_open_context(a.device, false);
  clt_model *m = NULL;
  rc = 1;
  if (!ctx) goto done;
  /* A mixed model is compiled again for the same batch, its weights
   * kept (clt_graph_set_precision). */
  if (clt_model_load(ctx, a.model, a.weights, &m) != CLT_OK ||
      clt_graph_set_precision(clt_model_graph(m),
                              (clt_precision)a.precision) != CLT_OK ||
      (!labels && clt_checkpoint_class_names(ctx, a.weights, &labels,
                                             &n_labels) != CLT_OK)) {
    fprintf(stderr, "cltrain: %s\n", clt_context_last_error(ctx));
    goto done;
  }
  a.regression = clt_graph_loss_kind(clt_model_graph(m)) == CLT_LOSS_REGRESSION;
  a.multilabel = clt_graph_loss_kind(clt_model_graph(m)) == CLT_LOSS_MULTILABEL;
  /* CSV rows are read as the checkpoint's data was, unless told; images
   * are pixels, which a model trained on other values may not expect. */
  clt_checkpoint_info trained = {0};
  bool csv = false, images = false;
  for (int i = 0; i < a.n_inputs; i++) {
    csv = csv || is_csv(a.inputs[i]);
    images = images || !is_csv(a.inputs[i]);
  }
  if (((csv && !a.csv_values_given) || images) &&
      clt_checkpoint_read_info(ctx, a.weights, &trained) != CLT_OK) {
    fprintf(stderr, "cltrain: %s\n", clt_context_last_error(ctx));
    goto done;
  }
  a.csv_values = cli_csv_values(a.csv_values_given, a.csv_values, &trained);
  if (images && !strcmp(trained.input_values, "floats"))
    fprintf(stderr, "cltrain: warning: %s was trained on values used as "
                    "they are (CSV read as floats, or floats from C), and "
                    "images are given as pixels scaled to [0, 1]: right "
                    "only if its data was scaled so\n",
            a.weights);
  if (labels && n_labels < clt_model_output_size(m) && !a.regression)
    fprintf(stderr, "cltrain: warning: %s names %d classes, the model has "
                    "%lld outputs\n",
            a.labels ? a.labels : a.weights, n_labels, (long long)clt_model_output_size(m));
  rc = 0;
  if (a.json) {
    printf("{\"model\": ");
    cli_json_string(stdout, a.model);
    printf(", \"weights\": ");
    cli_json_string(stdout, a.weights);
    printf(", \"precision\": \"%s\", \"predictions\": [",
           cli_precision_names[a.precision]);
  }
  csv_out out = {0};
  /* The folder, asked before the work (the file is written after every
   * prediction). */
  if (a.output && !cli_check_output_path("--output", a.output)) {
    rc = 1;
    goto done;
  }
  if (a.output) {
    a.out = &out;
    out_header(&a, clt_model_output_size(m), labels, n_labels);
  }
  for (int i = 0; i < a.n_inputs; i++)
    if (predict_file(ctx, m, &a, a.inputs[i], labels, n_labels) != 0) rc = 1;
  if (a.json) printf("%s]}\n", a.printed ? "\n" : "");
  if (a.output && rc == 0) {
    char msg[512];
    if (out.text.failed) {
      fprintf(stderr, "cltrain: %s: out of memory for the predictions\n",
              a.output);
      rc = 1;
    } else if (clt_file_write_atomic(a.output, out.text.s, out.text.len,
                                     msg, sizeof msg) != CLT_OK) {
      fprintf(stderr, "cltrain: %s\n", msg);
      rc = 1;
    } else {
      printf("wrote %lld prediction%s to %s\n", (long long)out.rows,
             out.rows == 1 ? "" : "s", a.output);
    }
  } else if (a.output) {
    fprintf(stderr, "cltrain: %s not written (an input failed)\n",
            a.output);
  }
  free(out.text.s);
done:
  clt_model_destroy(m);
  clt_context_destroy(ctx);
  cli_labels_free(labels, n_labels);
  free(a.inputs);
  return rc;
}
