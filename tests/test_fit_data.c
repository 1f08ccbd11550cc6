/* Training on the data a user brings, on the device: a dataset from
 * memory, the mse loss through clt_fit (a regression whose loss falls),
 * class names into checkpoints, and an image-folder dataset made here
 * (PNG, and JPEG where built with it) that trains end to end. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkdtemp, nftw */
#endif
#include <math.h>
#include <unistd.h>

#include "cltrain_image.h"
#include "common.h"
#include "graph/graph.h"
#include "image_writer.h"
#include "remove_tree.h"

static char g_dir[] = "/tmp/clt_fit_data_XXXXXX";

static const char *tmp_path(const char *name) {
  static char buf[4][512];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 512, "%s/%s", g_dir, name);
  return p;
}

static clt_optimizer *adam(clt_graph *g, float lr) {
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_ADAM);
  oo.lr = lr;
  clt_optimizer *opt = NULL;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  return opt;
}

/* input [in_size], dense 5, ReLU, dense 3, softmax cross-entropy, on
 * ctx, compiled for batch with seed. */
static clt_graph *small_classifier(clt_context *ctx, int64_t in_size,
                                   int64_t batch, uint64_t seed) {
  clt_graph *g = NULL;
  clt_node in, h, out;
  clt_status st = clt_graph_create(ctx, &g);
  if (st == CLT_OK) st = clt_graph_input(g, 1, &in_size, &in);
  if (st == CLT_OK) st = clt_graph_dense(g, in, 5, &h);
  if (st == CLT_OK) st = clt_graph_activation(g, h, CLT_ACT_RELU, &h);
  if (st == CLT_OK) st = clt_graph_dense(g, h, 3, &out);
  if (st == CLT_OK) st = clt_graph_softmax_cross_entropy(g, out, NULL);
  if (st == CLT_OK) st = clt_graph_compile(g, batch, seed);
  ck_assert_msg(st == CLT_OK, "small classifier: %s: %s",
                clt_status_string(st), clt_context_last_error(ctx));
  return g;
}

/* clt_fit on u8 pixels sends bytes and scales them on the device: after
 * an epoch (no shuffle, a last batch of 5) the model answers every sample
 * as one trained by a loop of our own that uploads the pixels / 255 as
 * floats, to the bit. */
START_TEST(test_fit_bytes_equal_floats) {
  enum { N = 37, IN = 12, B = 8 };
  static uint8_t px[N * IN];
  static float xf[N * IN];
  static int32_t labels[N];
  for (int i = 0; i < N * IN; i++) {
    px[i] = (uint8_t)((i * 97 + 13) % 256);
    xf[i] = (float)px[i] / 255.0f;
  }
  for (int i = 0; i < N; i++) labels[i] = i % 3;
  clt_dataset_desc d = {0};
  d.count = N;
  d.channels = d.height = 1;
  d.width = IN;
  d.pixels_u8 = px;
  d.labels = labels;
  d.num_classes = 3;
  clt_dataset *ds = NULL;
  ck_assert_ok(clt_dataset_from_memory(g_ctx, &d, &ds));
  float *w[2];
  int64_t nw = 0;
  for (int run = 0; run < 2; run++) {
    clt_graph *g = small_classifier(g_ctx, IN, B, 9);
    clt_optimizer *opt = adam(g, 0.01f);
    if (run == 0) {
      clt_fit_options fo;
      clt_fit_options_init(&fo);
      fo.epochs = 1;
      fo.batch = B;
      fo.shuffle = false;
      clt_epoch_stats hist[1];
      ck_assert_ok(clt_fit(g, opt, ds, NULL, &fo, hist));
    } else {
      for (int at = 0; at < N; at += B) {
        int n = N - at < B ? N - at : B;
        ck_assert_ok(clt_graph_set_batch(g, xf + at * IN, labels + at, n));
        ck_assert_ok(clt_graph_forward(g, true));
        ck_assert_ok(clt_graph_backward(g));
        ck_assert_ok(clt_optimizer_step(opt));
      }
    }
    /* The trained model's outputs for every sample: equal weights give
     * equal bits. */
    nw = N * 3;
    w[run] = malloc((size_t)nw * sizeof(float));
    for (int at = 0; at < N; at += B) {
      int n = N - at < B ? N - at : B;
      int64_t outputs = 0;
      ck_assert_ok(clt_graph_set_batch(g, xf + at * IN, labels + at, n));
      ck_assert_ok(clt_graph_forward(g, false));
      ck_assert_ok(clt_graph_predictions(g, w[run] + at * 3, &outputs));
      ck_assert_int_eq(outputs, 3);
    }
    clt_optimizer_destroy(opt);
    clt_graph_destroy(g);
  }
  ck_assert_mem_eq(w[0], w[1], (size_t)nw * sizeof(float));
  free(w[0]);
  free(w[1]);
  clt_dataset_destroy(ds);
}
END_TEST

/* clt_evaluate_regression against sums made here from the model's own
 * outputs (scikit-learn's definitions), and the device's mean absolute
 * error (device_mae, clt_evaluate's) against them. */
static void check_regression_scores(clt_graph *g, const clt_dataset *ds,
                                    const float *x, const float *y, int n,
                                    int in, int out, double device_mae) {
  double abs[4] = {0}, sq[4] = {0}, mean[4] = {0}, dev[4] = {0};
  float pred[32 * 4];
  ck_assert(out <= 4);
  for (int i0 = 0; i0 < n; i0 += 32) {
    int b = n - i0 < 32 ? n - i0 : 32;
    int64_t got = 0;
    ck_assert_ok(clt_graph_set_batch(g, x + (size_t)i0 * in, NULL, b));
    ck_assert_ok(clt_graph_forward(g, false));
    ck_assert_ok(clt_graph_predictions(g, pred, &got));
    ck_assert_int_eq(got, out); /* per sample */
    for (int i = 0; i < b * out; i++) {
      double d = (double)pred[i] - y[(size_t)i0 * out + i];
      abs[i % out] += fabs(d);
      sq[i % out] += d * d;
    }
  }
  for (int i = 0; i < n * out; i++) mean[i % out] += y[i] / (double)n;
  for (int i = 0; i < n * out; i++)
    dev[i % out] += (y[i] - mean[i % out]) * (y[i] - mean[i % out]);
  clt_regression_scores per[4], all;
  clt_metrics m;
  ck_assert_ok(clt_evaluate_regression(g, ds, 32, per, &all, &m));
  double abs_all = 0, sq_all = 0, r2_sum = 0;
  for (int k = 0; k < out; k++) {
    ck_assert_double_eq_tol(per[k].mae, abs[k] / n, 1e-9);
    ck_assert_double_eq_tol(per[k].mse, sq[k] / n, 1e-9);
    ck_assert_double_eq_tol(per[k].rmse, sqrt(sq[k] / n), 1e-9);
    ck_assert_double_eq_tol(per[k].r2, 1.0 - sq[k] / dev[k], 1e-9);
    abs_all += abs[k];
    sq_all += sq[k];
    r2_sum += 1.0 - sq[k] / dev[k];
  }
  ck_assert_double_eq_tol(all.mae, abs_all / (n * out), 1e-9);
  ck_assert_double_eq_tol(all.mse, sq_all / (n * out), 1e-9);
  ck_assert_double_eq_tol(all.rmse, sqrt(sq_all / (n * out)), 1e-9);
  ck_assert_double_eq_tol(all.r2, r2_sum / out, 1e-9);
  ck_assert(all.r2 > 0.9); /* the fit is good */
  /* the loss is the mse, the device's sums in float */
  ck_assert_double_eq_tol(m.loss, all.mse, 1e-5 * (1 + all.mse));
  ck_assert_double_eq_tol(m.mae, all.mae, 1e-5 * (1 + all.mae));
  ck_assert_double_eq_tol(device_mae, all.mae, 1e-5 * (1 + all.mae));
  /* NULL for either array is allowed. */
  ck_assert_ok(clt_evaluate_regression(g, ds, 32, NULL, NULL, &m));
}

/* y = (2 x0 - x1 + 0.5 x2 x3 ... as a linear map) + 0.3: two targets of
 * four inputs, learnt by one dense layer. */
START_TEST(test_mse_regression_through_fit) {
  enum { N = 256, IN = 4, OUT = 2 };
  static float x[N * IN], y[N * OUT];
  for (int i = 0; i < N; i++) {
    float *xi = x + i * IN;
    for (int k = 0; k < IN; k++)
      xi[k] = (float)((i * 7 + k * 13) % 17) / 8.0f - 1.0f;
    y[i * OUT] = 2.0f * xi[0] - xi[1] + 0.3f;
    y[i * OUT + 1] = 0.5f * xi[2] - 1.5f * xi[3];
  }
  clt_dataset_desc d = {0};
  d.count = N;
  d.channels = d.height = 1;
  d.width = IN;
  d.values_f32 = x;
  d.targets = y;
  d.target_size = OUT;
  clt_dataset *ds = NULL;
  ck_assert_ok(clt_dataset_from_memory(g_ctx, &d, &ds));
  memset(x, 0, sizeof x); /* the dataset holds its own copy */
  ck_assert_int_eq(clt_dataset_count(ds), N);
  for (int i = 0; i < N * IN; i++) /* again, for the scores' check */
    x[i] = (float)(((i / IN) * 7 + (i % IN) * 13) % 17) / 8.0f - 1.0f;
  ck_assert_int_eq(clt_dataset_num_classes(ds), 0);

  clt_graph *g = NULL;
  ck_assert_ok(clt_graph_create(g_ctx, &g));
  clt_node in, out;
  ck_assert_ok(clt_graph_input(g, 1, (int64_t[]){IN}, &in));
  ck_assert_ok(clt_graph_dense(g, in, OUT, &out));
  ck_assert_ok(clt_graph_mse(g, out, NULL));
  ck_assert_ok(clt_graph_compile(g, 32, 3));
  clt_data_options o;
  clt_data_options_init(&o);
  ck_assert_ok(clt_data_options_from_graph(g, &o));
  ck_assert_int_eq(o.targets, OUT);
  ck_assert_int_eq(o.width, IN);
  clt_optimizer *opt = adam(g, 0.05f);
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.epochs = 8;
  fo.batch = 32;
  fo.checkpoint_path = tmp_path("mse.safetensors");
  clt_epoch_stats hist[8];
  ck_assert_ok(clt_fit(g, opt, ds, ds, &fo, hist));
  /* The checkpoint says the inputs were floats, as they are (eval and
   * --resume read CSV data the same way then). */
  clt_checkpoint_info info;
  ck_assert_ok(clt_checkpoint_read_info(g_ctx, fo.checkpoint_path, &info));
  ck_assert_str_eq(info.input_values, "floats");
  ck_assert(isnan(hist[0].train_acc));
  ck_assert_msg(hist[7].train_loss < 0.2 * hist[0].train_loss,
                "mse loss %g -> %g did not fall", hist[0].train_loss,
                hist[7].train_loss);
  ck_assert_msg(hist[7].test_loss < 0.05, "test mse %g", hist[7].test_loss);
  clt_metrics m;
  ck_assert_ok(clt_evaluate(g, ds, 32, &m));
  ck_assert_double_eq_tol(m.loss, hist[7].test_loss, 1e-5);
  ck_assert(isnan(m.accuracy));
  ck_assert_double_eq_tol(m.mae, hist[7].test_mae, 1e-6);
  ck_assert(hist[7].train_mae > 0 && hist[7].train_mae < hist[0].train_mae);
  ck_assert(isnan(hist[7].val_mae)); /* no validation set */
  check_regression_scores(g, ds, x, y, N, IN, OUT, m.mae);
  /* An output whose targets do not vary has no R^2: NaN, left out of the
   * mean. */
  for (int i = 0; i < N; i++) y[i * OUT + 1] = 0.25f;
  d.targets = y;
  clt_dataset *flat = NULL;
  ck_assert_ok(clt_dataset_from_memory(g_ctx, &d, &flat));
  clt_regression_scores per[OUT], all;
  ck_assert_ok(clt_evaluate_regression(g, flat, 32, per, &all, &m));
  ck_assert(isnan(per[1].r2) && per[1].mae > 0 && !isnan(per[0].r2));
  ck_assert_double_eq(all.r2, per[0].r2);
  clt_dataset_destroy(flat);
  /* Rows read to predict on (no targets) are refused for training and
   * evaluation, with the reason. */
  const char *rows = tmp_path("rows.csv");
  FILE *f = fopen(rows, "w");
  ck_assert_ptr_nonnull(f);
  fputs("0.5,1,-2,3\n", f);
  fclose(f);
  o.unlabelled = true;
  o.csv_values = CLT_CSV_FLOATS;
  clt_dataset *un = NULL;
  ck_assert_ok(clt_dataset_load_csv(g_ctx, rows, &o, &un));
  ck_assert_int_eq(clt_fit(g, opt, un, NULL, &fo, hist),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(clt_context_last_error(g_ctx), "no labels or targets"),
                "%s", clt_context_last_error(g_ctx));
  ck_assert_int_eq(clt_evaluate(g, un, 32, &m), CLT_ERR_INVALID_ARGUMENT);
  clt_dataset_destroy(un);
  /* Where a CSV file held the targets goes into the checkpoint (data in
   * memory has no such place: not recorded). */
  ck_assert_str_eq(info.label_column, "");
  const char *named = tmp_path("named.csv");
  f = fopen(named, "w");
  ck_assert_ptr_nonnull(f);
  fputs("a,b,y1,y2,c,d\n0.5,1,2,-1,-2,3\n1,2,0,0.5,3,4\n", f);
  fclose(f);
  o.unlabelled = false;
  o.label_column = "y1";
  clt_dataset *csv = NULL;
  ck_assert_ok(clt_dataset_load_csv(g_ctx, named, &o, &csv));
  /* the targets' names: their columns in the header line, kept by a
   * split and by the checkpoint */
  ck_assert_str_eq(clt_dataset_target_name(csv, 0), "y1");
  ck_assert_str_eq(clt_dataset_target_name(csv, 1), "y2");
  ck_assert_ptr_null(clt_dataset_target_name(csv, 2));
  ck_assert_ptr_null(clt_dataset_class_name(csv, 0));
  clt_dataset *rest = NULL, *part = NULL;
  ck_assert_ok(clt_dataset_split(g_ctx, csv, 0.5, 3, &rest, &part));
  ck_assert_str_eq(clt_dataset_target_name(rest, 1), "y2");
  ck_assert_str_eq(clt_dataset_target_name(part, 0), "y1");
  clt_dataset_destroy(rest);
  clt_dataset_destroy(part);
  fo.epochs = 1;
  ck_assert_ok(clt_fit(g, opt, csv, NULL, &fo, hist));
  ck_assert_ok(clt_checkpoint_read_info(g_ctx, fo.checkpoint_path, &info));
  ck_assert_str_eq(info.label_column, "y1");
  ck_assert_str_eq(info.input_values, "floats");
  char **saved = NULL;
  int n_saved = 0;
  ck_assert_ok(clt_checkpoint_class_names(g_ctx, fo.checkpoint_path, &saved,
                                          &n_saved));
  ck_assert_int_eq(n_saved, 2);
  ck_assert_str_eq(saved[1], "y2");
  clt_class_names_free(saved, n_saved);
  /* no header line: no names; from memory, the names given */
  ck_assert_ptr_null(clt_dataset_target_name(ds, 0));
  const char *const target_names[] = {"up", NULL};
  d.target_names = target_names;
  clt_dataset *named_ds = NULL;
  ck_assert_ok(clt_dataset_from_memory(g_ctx, &d, &named_ds));
  ck_assert_str_eq(clt_dataset_target_name(named_ds, 0), "up");
  ck_assert_str_eq(clt_dataset_target_name(named_ds, 1), "");
  clt_dataset_destroy(named_ds);
  d.targets = NULL; /* names without targets */
  d.labels = (const int32_t[N]){0};
  ck_assert_int_eq(clt_dataset_from_memory(g_ctx, &d, &named_ds),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx),
                               "target names without targets"));
  clt_dataset_destroy(csv);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_dataset_destroy(ds);
}
END_TEST

START_TEST(test_mismatched_data_is_refused) {
  float v[4] = {0};
  int32_t labels[1] = {1};
  clt_dataset_desc d = {0};
  d.count = 1;
  d.channels = d.height = 1;
  d.width = 4;
  d.values_f32 = v;
  d.labels = labels;
  clt_dataset *ds = NULL;
  ck_assert_ok(clt_dataset_from_memory(g_ctx, &d, &ds));
  clt_graph *g = NULL;
  ck_assert_ok(clt_graph_create(g_ctx, &g));
  clt_node in, out;
  ck_assert_ok(clt_graph_input(g, 1, (int64_t[]){4}, &in));
  ck_assert_ok(clt_graph_dense(g, in, 2, &out));
  ck_assert_ok(clt_graph_mse(g, out, NULL));
  ck_assert_ok(clt_graph_compile(g, 4, 1));
  clt_optimizer *opt = adam(g, 0.01f);
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.batch = 4;
  ck_assert_int_eq(clt_fit(g, opt, ds, NULL, &fo, NULL), CLT_ERR_SHAPE);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx),
                               "has class labels, but the "
                               "model's loss is mse"));
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_dataset_destroy(ds);
  /* Bad descriptions. */
  d.values_f32 = NULL;
  ck_assert_int_eq(clt_dataset_from_memory(g_ctx, &d, &ds),
                   CLT_ERR_INVALID_ARGUMENT);
  d.values_f32 = v;
  d.num_classes = 1;
  ck_assert_int_eq(clt_dataset_from_memory(g_ctx, &d, &ds),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx), "label 0 is 1"));
}
END_TEST

/* n 4x4 grey images of bytes px, labels of 3 classes (names may be
 * NULL), as a dataset from memory. */
static clt_dataset *three_class_set(const uint8_t *px, const int32_t *labels,
                                    int n, const char *const *names) {
  clt_dataset_desc d = {0};
  d.count = n;
  d.channels = 1;
  d.height = d.width = 4;
  d.pixels_u8 = px;
  d.labels = labels;
  d.num_classes = 3;
  d.class_names = names;
  clt_dataset *ds = NULL;
  ck_assert_ok(clt_dataset_from_memory(g_ctx, &d, &ds));
  return ds;
}

/* A classifier from u8 arrays with class names, which the checkpoint
 * keeps. */
START_TEST(test_memory_classifier_names_in_checkpoint) {
  enum { N = 64 };
  static uint8_t px[N * 16];
  int32_t labels[N];
  for (int i = 0; i < N; i++) {
    labels[i] = i % 3;
    for (int k = 0; k < 16; k++)
      px[i * 16 + k] = (uint8_t)(k / 5 == labels[i] ? 250 : (i * k) % 30);
  }
  const char *names[] = {"left", "middle", "right"};
  clt_dataset *ds = three_class_set(px, labels, N, names);
  ck_assert_str_eq(clt_dataset_class_name(ds, 2), "right");
  ck_assert_ptr_null(clt_dataset_class_name(ds, 3));

  clt_graph *g = NULL;
  ck_assert_ok(clt_graph_create(g_ctx, &g));
  clt_node in, flat, out;
  ck_assert_ok(clt_graph_input(g, 3, (int64_t[]){1, 4, 4}, &in));
  ck_assert_ok(clt_graph_flatten(g, in, &flat));
  ck_assert_ok(clt_graph_dense(g, flat, 3, &out));
  ck_assert_ok(clt_graph_softmax_cross_entropy(g, out, NULL));
  ck_assert_ok(clt_graph_compile(g, 16, 2));
  clt_optimizer *opt = adam(g, 0.05f);
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.epochs = 5;
  fo.batch = 16;
  fo.checkpoint_path = tmp_path("mem.safetensors");
  clt_epoch_stats hist[5];
  ck_assert_ok(clt_fit(g, opt, ds, ds, &fo, hist));
  ck_assert_msg(hist[4].test_acc > 0.9, "accuracy %g", hist[4].test_acc);
  char **saved = NULL;
  int n = 0;
  ck_assert_ok(
      clt_checkpoint_class_names(g_ctx, fo.checkpoint_path, &saved, &n));
  ck_assert_int_eq(n, 3);
  ck_assert_str_eq(saved[1], "middle");
  clt_class_names_free(saved, n);
  /* Byte pixels, scaled to [0, 1]; clt_checkpoint_save knows no data. */
  clt_checkpoint_info info;
  ck_assert_ok(clt_checkpoint_read_info(g_ctx, fo.checkpoint_path, &info));
  ck_assert_str_eq(info.input_values, "bytes");
  ck_assert_ok(clt_checkpoint_save(g, opt, 5, hist, fo.checkpoint_path));
  ck_assert_ok(clt_checkpoint_read_info(g_ctx, fo.checkpoint_path, &info));
  ck_assert_str_eq(info.input_values, "");
  ck_assert_str_eq(info.label_column, "");
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_dataset_destroy(ds);
}
END_TEST

static const char *write_model(const char *name, const char *text) {
  const char *path = tmp_path(name);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  return path;
}

/* Folders of 16x16 PNG (grey and colour) and JPEG images in 4 classes:
 * train/ and test/, opened as the command does, trained for two epochs. */
START_TEST(test_image_folders_train_end_to_end) {
  if (!tw_can_write()) {
    printf("image folders: skipped, this build has no libpng\n");
    return;
  }
  char root[512];
  snprintf(root, sizeof root, "%s", tmp_path("images"));
  ck_assert(tw_mkdir(root));
  char train_dir[600], test_dir[600];
  snprintf(train_dir, sizeof train_dir, "%s/train", root);
  snprintf(test_dir, sizeof test_dir, "%s/test", root);
  ck_assert(tw_write_folder(train_dir, 4, 12, 16, 16, true));
  ck_assert(tw_write_folder(test_dir, 4, 4, 16, 16, true));
  const char *model = write_model("img.model",
                                  "input shape=3x16x16\n"
                                  "conv2d name=c1 filters=4 kernel=3 "
                                  "activation=relu\n"
                                  "maxpool kernel=2\n"
                                  "flatten\n"
                                  "dense name=fc units=4\n"
                                  "softmax_cross_entropy\n");
  clt_graph *g = NULL;
  ck_assert_ok(clt_graph_load_model(g_ctx, model, &g));
  ck_assert_ok(clt_graph_compile(g, 8, 4));
  clt_data_options o;
  clt_data_options_init(&o);
  ck_assert_ok(clt_data_options_from_graph(g, &o));
  ck_assert_int_eq(o.channels, 3);
  ck_assert_int_eq(o.num_classes, 4);
  o.cache_dir = tmp_path("cache");
  clt_dataset *train = NULL, *test = NULL;
  ck_assert_ok(clt_dataset_open(g_ctx, root, NULL, &o, &train, &test));
  ck_assert_int_eq(clt_dataset_count(train), 48);
  ck_assert_int_eq(clt_dataset_count(test), 16);
  ck_assert_str_eq(clt_dataset_class_name(test, 3), "class_d");
  ck_assert_ptr_nonnull(strstr(clt_dataset_source(train), "/train (image"));
  clt_optimizer *opt = adam(g, 0.01f);
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.epochs = 2;
  fo.batch = 8;
  fo.checkpoint_path = tmp_path("img.safetensors");
  clt_epoch_stats hist[2];
  ck_assert_ok(clt_fit(g, opt, train, test, &fo, hist));
  ck_assert(isfinite(hist[1].test_loss));
  char **saved = NULL;
  int n = 0;
  ck_assert_ok(
      clt_checkpoint_class_names(g_ctx, fo.checkpoint_path, &saved, &n));
  ck_assert_int_eq(n, 4);
  ck_assert_str_eq(saved[0], "class_a");
  clt_class_names_free(saved, n);
  clt_dataset_destroy(train);
  clt_dataset_destroy(test);

  /* Without test/: the tail of train/ is held out, and says so. */
  ck_assert_int_eq(rename(test_dir, tmp_path("elsewhere")), 0);
  o.holdout = 0.25;
  ck_assert_ok(clt_dataset_open(g_ctx, root, NULL, &o, &train, &test));
  ck_assert_int_eq(clt_dataset_count(train), 36);
  ck_assert_int_eq(clt_dataset_count(test), 12);
  ck_assert_ptr_nonnull(strstr(clt_dataset_source(test), "held out"));
  ck_assert_ptr_nonnull(strstr(clt_dataset_source(train), "packed cache"));
  fo.epochs = 1;
  fo.checkpoint_path = NULL;
  ck_assert_ok(clt_fit(g, opt, train, test, &fo, hist));
  clt_dataset_destroy(train);
  clt_dataset_destroy(test);

  /* A corrupt image stops it, naming the file. */
  char bad[700];
  snprintf(bad, sizeof bad, "%s/class_c/img04.png", train_dir);
  FILE *f = fopen(bad, "w");
  fputs("\x89PNG\r\n\x1a\n broken", f);
  fclose(f);
  ck_assert_int_eq(clt_dataset_open(g_ctx, root, NULL, &o, &train, &test),
                   CLT_ERR_FORMAT);
  ck_assert_ptr_null(train);
  ck_assert_ptr_nonnull(
      strstr(clt_context_last_error(g_ctx), "class_c/img04.png"));
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
}
END_TEST

/* CSV labels that are names: the test split's map to the training
 * split's classes, though it lacks one; clt_fit saves the classes. */
START_TEST(test_open_csv_class_names) {
  const char *dir = tmp_path("csv_names");
  ck_assert(tw_mkdir(dir));
  char path[700];
  snprintf(path, sizeof path, "%s/train.csv", dir);
  FILE *f = fopen(path, "w");
  fputs("species,a,b,c\n", f);
  static const char *const kinds[] = {"virginica", "setosa", "versicolor"};
  for (int i = 0; i < 30; i++)
    fprintf(f, "%s,%d,%d,%d\n", kinds[i % 3], i % 3, 3 - i % 3, i % 2);
  fclose(f);
  snprintf(path, sizeof path, "%s/test.csv", dir);
  f = fopen(path, "w");
  fputs("species,a,b,c\nvirginica,0,3,0\nversicolor,2,1,1\n", f);
  fclose(f);
  clt_graph *g = NULL;
  ck_assert_ok(clt_graph_load_model(
      g_ctx,
      write_model("names.model", "input shape=3\ndense units=3\n"
                                 "softmax_cross_entropy\n"),
      &g));
  ck_assert_ok(clt_graph_compile(g, 8, 4));
  clt_data_options o;
  clt_data_options_init(&o);
  ck_assert_ok(clt_data_options_from_graph(g, &o));
  clt_dataset *train = NULL, *test = NULL;
  ck_assert_ok(clt_dataset_open(g_ctx, dir, NULL, &o, &train, &test));
  ck_assert_int_eq(clt_dataset_num_classes(test), 3);
  ck_assert_str_eq(clt_dataset_class_name(train, 0), "setosa");
  ck_assert_str_eq(clt_dataset_class_name(test, 2), "virginica");
  int32_t labels[2];
  float values[6];
  ck_assert_ok(clt_dataset_samples(test, 0, 2, values, labels));
  ck_assert_int_eq(labels[0], 2); /* virginica */
  ck_assert_int_eq(labels[1], 1); /* versicolor, not 0 */
  clt_optimizer *opt = adam(g, 0.01f);
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.epochs = 1;
  fo.batch = 8;
  fo.checkpoint_path = tmp_path("names.safetensors");
  clt_epoch_stats hist[1];
  ck_assert_ok(clt_fit(g, opt, train, test, &fo, hist));
  char **saved = NULL;
  int n = 0;
  ck_assert_ok(
      clt_checkpoint_class_names(g_ctx, fo.checkpoint_path, &saved, &n));
  ck_assert_int_eq(n, 3);
  ck_assert_str_eq(saved[1], "versicolor");
  clt_class_names_free(saved, n);
  clt_dataset_destroy(train);
  clt_dataset_destroy(test);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
}
END_TEST

START_TEST(test_open_csv_folder) {
  const char *dir = tmp_path("csv");
  ck_assert(tw_mkdir(dir));
  char path[700];
  snprintf(path, sizeof path, "%s/train.csv", dir);
  FILE *f = fopen(path, "w");
  fputs("label,p1,p2,p3,p4\n", f);
  for (int i = 0; i < 40; i++)
    fprintf(f, "%d,%d,%d,%d,%d\n", i % 2, i % 2 ? 200 : 10, 30, 40,
            i % 2 ? 10 : 200);
  fclose(f);
  clt_data_options o;
  clt_data_options_init(&o);
  o.channels = 1;
  o.height = o.width = 2;
  o.num_classes = 2;
  o.train_limit = 30;
  clt_dataset *train = NULL, *test = NULL;
  ck_assert_ok(clt_dataset_open(g_ctx, dir, NULL, &o, &train, &test));
  ck_assert_int_eq(clt_dataset_count(train), 30);
  ck_assert_int_eq(clt_dataset_count(test), 4);
  ck_assert_ptr_nonnull(strstr(clt_dataset_source(test), "last 10%"));
  clt_dataset_destroy(train);
  clt_dataset_destroy(test);
  /* Only the test split, from a file of its own. */
  ck_assert_ok(clt_dataset_open(g_ctx, NULL, path, &o, NULL, &test));
  ck_assert_int_eq(clt_dataset_count(test), 40);
  clt_dataset_destroy(test);
  ck_assert_int_eq(
      clt_dataset_open(g_ctx, tmp_path("nothing"), NULL, &o, &train, &test),
      CLT_ERR_IO);
}
END_TEST

/* --val-split: the same seed gives the same split, another seed another;
 * the two parts are disjoint and together the whole, each in file order. */
START_TEST(test_split_is_seeded_and_disjoint) {
  enum { N = 200 };
  static float x[N];
  int32_t labels[N];
  for (int i = 0; i < N; i++) {
    x[i] = (float)i; /* each sample names itself */
    labels[i] = i % 4;
  }
  clt_dataset_desc d = {0};
  d.count = N;
  d.channels = d.height = d.width = 1;
  d.values_f32 = x;
  d.labels = labels;
  clt_dataset *ds = NULL;
  ck_assert_ok(clt_dataset_from_memory(g_ctx, &d, &ds));
  float seen[3][N];
  int32_t lab[N];
  int64_t first_val[3];
  for (int run = 0; run < 3; run++) {
    uint64_t seed = run == 2 ? 99 : 5;
    clt_dataset *rest = NULL, *val = NULL;
    ck_assert_ok(clt_dataset_split(g_ctx, ds, 0.15, seed, &rest, &val));
    ck_assert_int_eq(clt_dataset_count(val), 30);
    ck_assert_int_eq(clt_dataset_count(rest), N - 30);
    ck_assert_int_eq(clt_dataset_count(ds), N); /* unchanged */
    float *vv = seen[run], rv[N];
    ck_assert_ok(clt_dataset_samples(val, 0, 30, vv, lab));
    for (int i = 0; i < 30; i++)
      ck_assert_int_eq(lab[i], (int)vv[i] % 4); /* labels travel along */
    ck_assert_ok(clt_dataset_samples(rest, 0, N - 30, rv, NULL));
    int count[N] = {0};
    for (int i = 0; i < 30; i++) count[(int)vv[i]]++;
    for (int i = 0; i < N - 30; i++) count[(int)rv[i]]++;
    for (int i = 0; i < N; i++) ck_assert_int_eq(count[i], 1);
    for (int i = 1; i < 30; i++) ck_assert(vv[i] > vv[i - 1]); /* in order */
    first_val[run] = (int64_t)vv[0];
    clt_dataset_destroy(rest);
    clt_dataset_destroy(val);
  }
  ck_assert(memcmp(seen[0], seen[1], 30 * sizeof(float)) == 0);
  ck_assert(memcmp(seen[0], seen[2], 30 * sizeof(float)) != 0);
  (void)first_val;
  clt_dataset *a = NULL, *b = NULL;
  ck_assert_int_eq(clt_dataset_split(g_ctx, ds, 1.0, 1, &a, &b),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(clt_dataset_split(g_ctx, ds, 0.0, 1, &a, &b),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(a);
  clt_dataset_destroy(ds);
}
END_TEST

/* A 16-pixel, 3-class problem the model learns fast, and a validation set
 * of the same images with shuffled labels: its loss rises as training
 * fits, so early stopping stops and puts back the best epoch's weights;
 * the checkpoint holds them too (reloaded and evaluated here). In fp32,
 * and (_i 1) in mixed precision, whose fp16 copy of the weights must be
 * made again from those put back. */
START_TEST(test_early_stop_keeps_the_best_weights) {
  clt_precision p = _i ? CLT_PRECISION_MIXED : CLT_PRECISION_FP32;
  enum { N = 96 };
  static uint8_t px[N * 16];
  int32_t labels[N], wrong[N];
  for (int i = 0; i < N; i++) {
    labels[i] = i % 3;
    wrong[i] = (i * 7 + i / 3) % 3;
    for (int k = 0; k < 16; k++)
      px[i * 16 + k] = (uint8_t)(k / 5 == labels[i] ? 240 : (i * k) % 40);
  }
  clt_dataset *train = three_class_set(px, labels, N, NULL);
  clt_dataset *val = three_class_set(px, wrong, N, NULL);

  const char *model = write_model("es.model",
                                  "input shape=1x4x4\nflatten\n"
                                  "dense units=3\nsoftmax_cross_entropy\n");
  clt_graph *g = NULL;
  ck_assert_ok(clt_graph_load_model(g_ctx, model, &g));
  ck_assert_ok(clt_graph_set_precision(g, p));
  ck_assert_ok(clt_graph_compile(g, 16, 3));
  clt_optimizer *opt = adam(g, 0.05f);
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.epochs = 30;
  fo.batch = 16;
  fo.validation = val;
  fo.early_stop = 2;
  fo.checkpoint_path = tmp_path("best.safetensors");
  clt_fit_result r;
  fo.result = &r;
  clt_epoch_stats hist[30];
  for (int e = 0; e < 30; e++) hist[e].epoch = 0;
  ck_assert_ok(clt_fit(g, opt, train, NULL, &fo, hist));
  ck_assert_str_eq(r.monitor, "validation");
  ck_assert_msg(r.stopped_early && r.last_epoch < 30, "ran %d epochs",
                r.last_epoch);
  ck_assert_int_eq(r.last_epoch, r.best_epoch + 2);
  ck_assert(r.restored_best);
  double lowest = INFINITY;
  for (int e = 0; e < r.last_epoch; e++) {
    ck_assert(!isnan(hist[e].val_loss));
    ck_assert_int_eq(hist[e].best, hist[e].val_loss < lowest);
    if (hist[e].val_loss < lowest) lowest = hist[e].val_loss;
  }
  ck_assert_double_eq(r.best_loss, hist[r.best_epoch - 1].val_loss);
  /* The weights in the graph, and those saved, are the best epoch's. */
  clt_metrics m;
  ck_assert_ok(clt_evaluate(g, val, 16, &m));
  ck_assert_double_eq_tol(m.loss, r.best_loss, 1e-5);
  ck_assert(isnan(m.mae) && isnan(hist[0].val_mae)); /* a classifier */
  ck_assert_int_eq(clt_evaluate_regression(g, val, 16, NULL, NULL, &m),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(
      strstr(clt_context_last_error(g_ctx), "regression model"));
  clt_graph *g2 = NULL;
  ck_assert_ok(clt_graph_load_model(g_ctx, model, &g2));
  ck_assert_ok(clt_graph_set_precision(g2, p));
  ck_assert_ok(clt_graph_compile(g2, 16, 9));
  ck_assert_ok(clt_checkpoint_load_weights(g2, fo.checkpoint_path));
  ck_assert_ok(clt_evaluate(g2, val, 16, &m));
  ck_assert_double_eq_tol(m.loss, r.best_loss, 1e-5);
  clt_checkpoint_info info;
  ck_assert_ok(clt_checkpoint_read_info(g_ctx, fo.checkpoint_path, &info));
  ck_assert_int_eq(info.epoch, r.best_epoch);
  /* checkpoint_every with early stopping is refused. */
  fo.checkpoint_every = 1;
  ck_assert_int_eq(clt_fit(g, opt, train, NULL, &fo, hist),
                   CLT_ERR_INVALID_ARGUMENT);
  clt_graph_destroy(g2);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_dataset_destroy(train);
  clt_dataset_destroy(val);
}
END_TEST

/* A stop function's script (clt_fit_options.stop): GO_ON but at call
 * `at`, which answers `ask`; the calls counted. */
typedef struct stop_script {
  int calls, at;
  clt_fit_stop ask;
} stop_script;

static clt_fit_stop scripted_stop(void *user) {
  stop_script *s = user;
  return ++s->calls == s->at ? s->ask : CLT_FIT_GO_ON;
}

/* The epochs reported ended (CLT_PHASE_EPOCH) and evaluated
 * (CLT_PHASE_EVAL), as bit masks. */
typedef struct seen_epochs {
  unsigned ended, evaluated;
} seen_epochs;

static void epochs_seen(const clt_progress *p, void *user) {
  seen_epochs *s = user;
  if (p->phase == CLT_PHASE_EPOCH) s->ended |= 1u << p->epoch;
  if (p->phase == CLT_PHASE_EVAL) s->evaluated |= 1u << p->epoch;
}

enum { STOP_N = 96, STOP_B = 16, STOP_IN = 16 };

/* The trained model's outputs for every sample (equal weights give equal
 * bits), and a fresh model of the sample net (seed 3). */
static float *stop_outputs(clt_graph *g, const float *xf,
                           const int32_t *labels) {
  float *out = malloc(STOP_N * 3 * sizeof(float));
  for (int at = 0; at < STOP_N; at += STOP_B) {
    int64_t outputs = 0;
    ck_assert_ok(clt_graph_set_batch(g, xf + at * STOP_IN, labels + at,
                                     STOP_B));
    ck_assert_ok(clt_graph_forward(g, false));
    ck_assert_ok(clt_graph_predictions(g, out + at * 3, &outputs));
  }
  return out;
}

static clt_graph *stop_net(const char *model) {
  clt_graph *g = NULL;
  ck_assert_ok(clt_graph_load_model(g_ctx, model, &g));
  ck_assert_ok(clt_graph_compile(g, STOP_B, 3));
  return g;
}

/* Stopping a run from outside. Six batches an epoch, so the stop function
 * is asked 7 times an epoch (each batch, then after the evaluation).
 * CLT_FIT_STOP_EPOCH in epoch 2's second batch: the run ends after epoch
 * 2, which is reported and checkpointed although checkpoint_every is 0,
 * with the bits of a run of 2 epochs; that checkpoint, resumed to 4
 * epochs, gives the bits of a run of 4. CLT_FIT_STOP_NOW in epoch 2's
 * third batch: nothing more is asked, evaluated or reported, the
 * checkpoint stays epoch 1's, and the weights are those of epoch 1 and
 * three more steps (no shuffling: a loop of our own over the first three
 * batches); with early stopping, the best epoch's weights instead. */
START_TEST(test_stop_function_ends_the_run) {
  static uint8_t px[STOP_N * STOP_IN];
  static float xf[STOP_N * STOP_IN];
  static int32_t labels[STOP_N];
  for (int i = 0; i < STOP_N; i++) {
    labels[i] = i % 3;
    for (int k = 0; k < STOP_IN; k++) {
      int v = k / 5 == labels[i] ? 200 + (i * k) % 50 : (i * k * 7) % 90;
      px[i * STOP_IN + k] = (uint8_t)v;
      xf[i * STOP_IN + k] = (float)v / 255.0f;
    }
  }
  clt_dataset *ds = three_class_set(px, labels, STOP_N, NULL);
  const char *model = write_model("stop.model",
                                  "input shape=1x4x4\nflatten\n"
                                  "dense units=8 activation=relu\n"
                                  "dense units=3\nsoftmax_cross_entropy\n");
  const char *ckpt = tmp_path("stop.safetensors");
  clt_epoch_stats hist[10];
  float *want[5] = {NULL};
  /* Uninterrupted runs of 2 and 4 epochs. */
  for (int epochs = 2; epochs <= 4; epochs += 2) {
    clt_graph *g = stop_net(model);
    clt_optimizer *opt = adam(g, 0.01f);
    clt_fit_options fo;
    clt_fit_options_init(&fo);
    fo.epochs = epochs;
    fo.batch = STOP_B;
    ck_assert_ok(clt_fit(g, opt, ds, ds, &fo, hist));
    want[epochs] = stop_outputs(g, xf, labels);
    clt_optimizer_destroy(opt);
    clt_graph_destroy(g);
  }
  /* Asked to stop when epoch 2 ends. */
  clt_graph *g = stop_net(model);
  clt_optimizer *opt = adam(g, 0.01f);
  stop_script script = {0, 7 + 2, CLT_FIT_STOP_EPOCH};
  seen_epochs reported = {0, 0};
  clt_fit_result r;
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.epochs = 10;
  fo.batch = STOP_B;
  fo.checkpoint_path = ckpt;
  fo.stop = scripted_stop;
  fo.stop_user = &script;
  fo.progress = epochs_seen;
  fo.progress_user = &reported;
  fo.result = &r;
  ck_assert_ok(clt_fit(g, opt, ds, ds, &fo, hist));
  ck_assert(r.interrupted && !r.unfinished && !r.stopped_early);
  ck_assert_int_eq(r.last_epoch, 2);
  ck_assert_int_eq(r.checkpoint_epoch, 2);
  ck_assert_int_eq(script.calls, 14);
  ck_assert_uint_eq(reported.ended, (1u << 1) | (1u << 2));
  ck_assert_uint_eq(reported.evaluated, (1u << 1) | (1u << 2));
  ck_assert_int_eq(hist[1].epoch, 2);
  ck_assert(!isnan(hist[1].test_loss));
  float *got = stop_outputs(g, xf, labels);
  ck_assert_mem_eq(got, want[2], STOP_N * 3 * sizeof(float));
  free(got);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  /* Resumed from that checkpoint to 4 epochs: a run of 4. */
  g = stop_net(model);
  opt = adam(g, 0.01f);
  clt_checkpoint_info info;
  ck_assert_ok(clt_checkpoint_resume(g, opt, ckpt, &info, hist, 10));
  ck_assert_int_eq(info.epoch, 2);
  clt_fit_options_init(&fo);
  fo.epochs = 4;
  fo.batch = STOP_B;
  fo.first_epoch = info.epoch + 1;
  fo.seed = info.data_seed;
  ck_assert_ok(clt_fit(g, opt, ds, ds, &fo, hist));
  got = stop_outputs(g, xf, labels);
  ck_assert_mem_eq(got, want[4], STOP_N * 3 * sizeof(float));
  free(got);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);

  /* Asked to stop at once in epoch 2's third batch, without shuffling. */
  for (int run = 0; run < 2; run++) {
    g = stop_net(model);
    opt = adam(g, 0.01f);
    clt_fit_options_init(&fo);
    fo.epochs = run == 0 ? 10 : 1;
    fo.batch = STOP_B;
    fo.shuffle = false;
    fo.checkpoint_path = run == 0 ? ckpt : NULL;
    fo.checkpoint_every = 1;
    fo.result = &r;
    reported = (seen_epochs){0, 0};
    script = (stop_script){0, 7 + 3, CLT_FIT_STOP_NOW};
    if (run == 0) {
      fo.stop = scripted_stop;
      fo.stop_user = &script;
      fo.progress = epochs_seen;
      fo.progress_user = &reported;
    }
    ck_assert_ok(clt_fit(g, opt, ds, ds, &fo, hist));
    if (run == 0) {
      ck_assert(r.interrupted && r.unfinished);
      ck_assert_int_eq(r.last_epoch, 1);
      ck_assert_int_eq(r.checkpoint_epoch, 1);
      ck_assert_int_eq(script.calls, 10);
      ck_assert_uint_eq(reported.ended, 1u << 1);
      ck_assert_uint_eq(reported.evaluated, 1u << 1); /* not the cut one */
      ck_assert_ok(clt_checkpoint_read_info(g_ctx, ckpt, &info));
      ck_assert_int_eq(info.epoch, 1);
    } else { /* epoch 1, then the three steps by hand */
      ck_assert(!r.interrupted && !r.unfinished);
      for (int at = 0; at < 3 * STOP_B; at += STOP_B) {
        ck_assert_ok(clt_graph_set_batch(g, xf + at * STOP_IN, labels + at,
                                         STOP_B));
        ck_assert_ok(clt_graph_forward(g, true));
        ck_assert_ok(clt_graph_backward(g));
        ck_assert_ok(clt_optimizer_step(opt));
      }
    }
    want[run] = stop_outputs(g, xf, labels);
    clt_optimizer_destroy(opt);
    clt_graph_destroy(g);
  }
  ck_assert_mem_eq(want[0], want[1], STOP_N * 3 * sizeof(float));
  for (int i = 0; i < 5; i++) free(want[i]);

  /* With early stopping, a cut epoch's weights give way to the best. */
  g = stop_net(model);
  opt = adam(g, 0.01f);
  clt_fit_options_init(&fo);
  fo.epochs = 10;
  fo.batch = STOP_B;
  fo.validation = ds;
  fo.early_stop = 5;
  fo.result = &r;
  script = (stop_script){0, 2 * 7 + 2, CLT_FIT_STOP_NOW};
  fo.stop = scripted_stop;
  fo.stop_user = &script;
  ck_assert_ok(clt_fit(g, opt, ds, NULL, &fo, hist));
  ck_assert(r.interrupted && r.unfinished && r.restored_best);
  ck_assert_int_eq(r.last_epoch, 2);
  ck_assert_int_ge(r.best_epoch, 1);
  clt_metrics m;
  ck_assert_ok(clt_evaluate(g, ds, STOP_B, &m));
  ck_assert_double_eq_tol(m.loss, r.best_loss, 1e-5);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_dataset_destroy(ds);
}
END_TEST

/* Reduce on plateau and warm-up, against scripted losses and steps. */
START_TEST(test_plateau_and_warmup_schedules) {
  clt_graph *g = NULL;
  ck_assert_ok(clt_graph_create(g_ctx, &g));
  clt_node in, out;
  ck_assert_ok(clt_graph_input(g, 1, (int64_t[]){2}, &in));
  ck_assert_ok(clt_graph_dense(g, in, 2, &out));
  ck_assert_ok(clt_graph_softmax_cross_entropy(g, out, NULL));
  ck_assert_ok(clt_graph_compile(g, 4, 1));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_SGD);
  ck_assert_int_eq(oo.patience, 10);
  oo.lr = 0.1f;
  oo.schedule = CLT_SCHEDULE_PLATEAU;
  oo.patience = 2;
  oo.gamma = 0.5f;
  oo.min_lr = 0.02f;
  clt_optimizer *opt = NULL;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  const double losses[] = {1.0, 0.9, 0.95, 0.91, 0.8, NAN, 0.85, 0.82,
                           0.9, 0.9, 0.9, 0.9, 0.9, 0.9};
  /* Two epochs in a row without a better loss halve the rate (the NaN
   * counts for nothing), never below min_lr. */
  const float want[] = {0.1f,  0.1f,  0.1f,   0.1f,   0.05f, 0.05f, 0.05f,
                        0.05f, 0.025f, 0.025f, 0.02f, 0.02f, 0.02f, 0.02f};
  for (int e = 0; e < 14; e++) {
    ck_assert_float_eq_tol(clt_optimizer_set_epoch(opt, e), want[e], 1e-7);
    clt_optimizer_observe(opt, losses[e]);
  }
  clt_optimizer_destroy(opt);
  oo.patience = 0;
  ck_assert_int_eq(clt_optimizer_create(g, &oo, &opt),
                   CLT_ERR_INVALID_ARGUMENT);
  /* Warm-up over 2 epochs, by epochs (no clt_fit) and by steps. */
  clt_optimizer_options_init(&oo, CLT_OPT_SGD);
  oo.lr = 0.1f;
  oo.warmup_epochs = 2;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  ck_assert_float_eq_tol(clt_optimizer_set_epoch(opt, 0), 0.05f, 1e-7);
  ck_assert_float_eq_tol(clt_optimizer_set_epoch(opt, 1), 0.1f, 1e-7);
  ck_assert_float_eq_tol(clt_optimizer_set_epoch(opt, 2), 0.1f, 1e-7);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
}
END_TEST

/* clt_fit drives warm-up step by step: the rate of epoch 1 starts at
 * lr / (2 epochs x 4 steps) and the one of epoch 2 at 5/8 of it. */
START_TEST(test_warmup_steps_through_fit) {
  enum { N = 16 };
  static float x[N * 2];
  int32_t labels[N];
  for (int i = 0; i < N; i++) {
    x[2 * i] = (float)(i % 2);
    x[2 * i + 1] = 1.0f - (float)(i % 2);
    labels[i] = i % 2;
  }
  clt_dataset_desc d = {0};
  d.count = N;
  d.channels = d.height = 1;
  d.width = 2;
  d.values_f32 = x;
  d.labels = labels;
  clt_dataset *ds = NULL;
  ck_assert_ok(clt_dataset_from_memory(g_ctx, &d, &ds));
  clt_graph *g = NULL;
  ck_assert_ok(clt_graph_create(g_ctx, &g));
  clt_node in, out;
  ck_assert_ok(clt_graph_input(g, 1, (int64_t[]){2}, &in));
  ck_assert_ok(clt_graph_dense(g, in, 2, &out));
  ck_assert_ok(clt_graph_softmax_cross_entropy(g, out, NULL));
  ck_assert_ok(clt_graph_compile(g, 4, 1));
  clt_optimizer_options oo;
  clt_optimizer_options_init(&oo, CLT_OPT_SGD);
  oo.lr = 0.8f;
  oo.warmup_epochs = 2;
  clt_optimizer *opt = NULL;
  ck_assert_ok(clt_optimizer_create(g, &oo, &opt));
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.epochs = 3;
  fo.batch = 4;
  clt_epoch_stats hist[3];
  ck_assert_ok(clt_fit(g, opt, ds, NULL, &fo, hist));
  ck_assert_float_eq_tol(hist[0].lr, 0.1f, 1e-6);
  ck_assert_float_eq_tol(hist[1].lr, 0.5f, 1e-6);
  ck_assert_float_eq_tol(hist[2].lr, 0.8f, 1e-6);
  ck_assert_float_eq_tol(clt_optimizer_lr(opt), 0.8f, 1e-6);
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_dataset_destroy(ds);
}
END_TEST

/* A first run's kernel builds inside an epoch are told apart: on a
 * context of its own (no kernel cache, fixed plans) the first epoch
 * builds the programs its steps use and says how long that took, its
 * images/s leaving that out; the second epoch builds nothing. */
START_TEST(test_epoch_tells_compile_time_apart) {
  enum { N = 64, IN = 6, B = 16 };
  clt_context_options co;
  clt_context_options_init(&co);
  co.cache = 0;
  co.plan = CLT_PLAN_OFF;
  clt_context *ctx = NULL;
  char err[4096];
  ck_assert_msg(clt_context_create(&co, &ctx, err, sizeof err) == CLT_OK,
                "%s", err);
  static float x[N * IN];
  static int32_t labels[N];
  for (int i = 0; i < N * IN; i++) x[i] = (float)((i * 31) % 19) / 9.0f - 1;
  for (int i = 0; i < N; i++) labels[i] = i % 3;
  clt_dataset_desc d = {0};
  d.count = N;
  d.channels = d.height = 1;
  d.width = IN;
  d.values_f32 = x;
  d.labels = labels;
  d.num_classes = 3;
  clt_dataset *ds = NULL;
  ck_assert_int_eq(clt_dataset_from_memory(ctx, &d, &ds), CLT_OK);
  clt_graph *g = small_classifier(ctx, IN, B, 1);
  clt_optimizer *opt = adam(g, 0.01f);
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.epochs = 2;
  fo.batch = B;
  clt_epoch_stats hist[2];
  clt_kernel_stats k0, k1;
  clt_context_kernel_stats(ctx, &k0);
  ck_assert_msg(clt_fit(g, opt, ds, NULL, &fo, hist) == CLT_OK, "%s",
                clt_context_last_error(ctx));
  clt_context_kernel_stats(ctx, &k1);
  ck_assert_int_gt(k1.programs, k0.programs);
  ck_assert_msg(hist[0].compile_seconds > 0 &&
                    hist[0].compile_seconds <= hist[0].seconds &&
                    hist[0].compile_seconds <=
                        k1.build_seconds - k0.build_seconds + 1e-9,
                "epoch 1: %g s compiling of %g s (built %g s in all)",
                hist[0].compile_seconds, hist[0].seconds,
                k1.build_seconds - k0.build_seconds);
  ck_assert_double_eq(hist[1].compile_seconds, 0.0);
  /* no cache: nothing was loaded */
  ck_assert_double_eq(hist[0].load_seconds, 0.0);
  for (int e = 0; e < 2; e++) {
    double want = N / (hist[e].seconds - hist[e].compile_seconds);
    ck_assert_double_eq_tol(hist[e].images_per_sec, want, 1e-9 * want);
  }
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_dataset_destroy(ds);
  clt_context_destroy(ctx);
}
END_TEST

/* The evaluations clt_fit runs after each epoch (two sets, each with a
 * loader made at its first evaluation and kept for the run) give, epoch
 * after epoch, what clt_evaluate gives with that epoch's weights, to the
 * bit: every batch of each set, the partial last one included, is seen
 * once each time. The weights of each epoch are saved by the progress
 * report. */
typedef struct epoch_saver {
  clt_graph *g;
  int saved;
} epoch_saver;

static void save_each_epoch(const clt_progress *p, void *user) {
  epoch_saver *s = user;
  if (p->phase != CLT_PHASE_EPOCH) return;
  char name[32];
  snprintf(name, sizeof name, "every%d.safetensors", p->epoch);
  if (clt_checkpoint_save(s->g, NULL, p->epoch, NULL, tmp_path(name)) ==
      CLT_OK)
    s->saved++;
}

/* clt_evaluate of ds (n samples) gives loss and accuracy, to the bit. */
static void expect_evaluation(clt_graph *g, const clt_dataset *ds,
                              int64_t batch, int64_t n, double loss,
                              double accuracy, const char *what, int epoch) {
  clt_metrics m;
  ck_assert_ok(clt_evaluate(g, ds, batch, &m));
  ck_assert_int_eq(m.samples, n);
  ck_assert_msg(m.loss == loss && m.accuracy == accuracy,
                "epoch %d: %s %.9g %.9g in fit, %.9g %.9g after", epoch, what,
                loss, accuracy, m.loss, m.accuracy);
}

START_TEST(test_evaluations_every_epoch_match_evaluate) {
  enum { NT = 50, NV = 23, NE = 37, B = 16, EPOCHS = 3 };
  static uint8_t px[NT * 16];
  static int32_t labels[NT], flipped[NT];
  for (int i = 0; i < NT; i++) {
    labels[i] = i % 3;
    flipped[i] = (i * 7) % 3;
    for (int k = 0; k < 16; k++)
      px[i * 16 + k] = (uint8_t)(k / 5 == labels[i] ? 200 + i : (i * k) % 50);
  }
  clt_dataset *train = three_class_set(px, labels, NT, NULL);
  clt_dataset *val = three_class_set(px + 16 * 5, flipped, NV, NULL);
  clt_dataset *test = three_class_set(px + 16 * 9, labels + 9, NE, NULL);
  clt_graph *g = small_classifier(g_ctx, 16, B, 3);
  clt_optimizer *opt = adam(g, 0.05f);
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.epochs = EPOCHS;
  fo.batch = B;
  fo.validation = val;
  epoch_saver saver = {g, 0};
  fo.progress = save_each_epoch;
  fo.progress_user = &saver;
  clt_epoch_stats hist[EPOCHS];
  ck_assert_ok(clt_fit(g, opt, train, test, &fo, hist));
  ck_assert_int_eq(saver.saved, EPOCHS);
  ck_assert_msg(hist[0].test_loss != hist[EPOCHS - 1].test_loss,
                "the weights did not change: nothing to tell epochs apart");
  for (int e = 1; e <= EPOCHS; e++) {
    char name[32];
    snprintf(name, sizeof name, "every%d.safetensors", e);
    ck_assert_ok(clt_checkpoint_load_weights(g, tmp_path(name)));
    expect_evaluation(g, val, B, NV, hist[e - 1].val_loss,
                      hist[e - 1].val_acc, "validation", e);
    expect_evaluation(g, test, B, NE, hist[e - 1].test_loss,
                      hist[e - 1].test_acc, "test", e);
  }
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  clt_dataset_destroy(test);
  clt_dataset_destroy(val);
  clt_dataset_destroy(train);
}
END_TEST

/* The mean a normalize node holds (its first feature). */
static float norm_mean0(clt_graph *g) {
  for (int i = 0; i < g->n_nodes; i++)
    if (!strcmp(g->nodes[i].ops->type, "normalize")) {
      float m[3];
      ck_assert_ok(clt_tensor_download(&g->nodes[i].params[0].value, m));
      return m[0];
    }
  ck_abort_msg("no normalize node");
  return 0.0f;
}

static clt_graph *normalized_regression(void) {
  clt_graph *g = NULL;
  clt_node in, norm, out;
  ck_assert_ok(clt_graph_create(g_ctx, &g));
  ck_assert_ok(clt_graph_input(g, 1, (int64_t[]){3}, &in));
  ck_assert_ok(clt_graph_add(g, "normalize", "norm", &in, 1, NULL, &norm));
  ck_assert_ok(clt_graph_dense(g, norm, 1, &out));
  ck_assert_ok(clt_graph_mse(g, out, NULL));
  ck_assert_ok(clt_graph_compile(g, 16, 4));
  return g;
}

/* Features of very different scales (around 1000, 1 and 0.001): clt_fit
 * learns the normalize layer's statistics from the training data before
 * the first step, and only then: a second fit, a resumed model and one
 * whose checkpoint is loaded keep them; clt_graph_adapt replaces them.
 * With the layer, 20 epochs reach a loss the raw features do not. */
START_TEST(test_fit_adapts_normalize) {
  enum { N = 64 };
  float x[N * 3], x2[N * 3], y[N];
  for (int i = 0; i < N; i++) {
    x[i * 3] = 1000.0f + 37.0f * (float)(i % 11);
    x[i * 3 + 1] = (float)(i % 7) - 3.0f;
    x[i * 3 + 2] = 0.001f * (float)(i % 5);
    y[i] = (x[i * 3] - 1185.0f) / 120.0f + 0.5f * x[i * 3 + 1] +
           400.0f * x[i * 3 + 2];
    for (int k = 0; k < 3; k++) x2[i * 3 + k] = 2.0f * x[i * 3 + k] + 5.0f;
  }
  double want = 0;
  for (int i = 0; i < N; i++) want += x[i * 3] / N;
  clt_dataset_desc d = {0};
  d.count = N;
  d.channels = d.height = 1;
  d.width = 3;
  d.values_f32 = x;
  d.targets = y;
  d.target_size = 1;
  clt_dataset *a = NULL, *b = NULL;
  ck_assert_ok(clt_dataset_from_memory(g_ctx, &d, &a));
  d.values_f32 = x2;
  ck_assert_ok(clt_dataset_from_memory(g_ctx, &d, &b));
  clt_fit_options fo;
  clt_fit_options_init(&fo);
  fo.epochs = 20;
  fo.batch = 16;
  fo.checkpoint_path = tmp_path("norm.safetensors");
  clt_epoch_stats hist[20];
  double losses[2];
  for (int with = 0; with < 2; with++) {
    clt_graph *g = NULL;
    if (with) {
      g = normalized_regression();
      ck_assert_float_eq(norm_mean0(g), 0.0f); /* not adapted yet */
    } else {
      clt_node in, out;
      ck_assert_ok(clt_graph_create(g_ctx, &g));
      ck_assert_ok(clt_graph_input(g, 1, (int64_t[]){3}, &in));
      ck_assert_ok(clt_graph_dense(g, in, 1, &out));
      ck_assert_ok(clt_graph_mse(g, out, NULL));
      ck_assert_ok(clt_graph_compile(g, 16, 4));
    }
    clt_optimizer *opt = adam(g, 0.05f);
    ck_assert_ok(clt_fit(g, opt, a, NULL, &fo, hist));
    losses[with] = hist[19].train_loss;
    if (with) {
      ck_assert_msg(fabs(norm_mean0(g) - want) < 1e-3, "mean %g, want %g",
                    norm_mean0(g), want);
      /* a second fit, on other data, keeps them */
      fo.epochs = 1;
      ck_assert_ok(clt_fit(g, opt, b, NULL, &fo, hist));
      ck_assert_msg(fabs(norm_mean0(g) - want) < 1e-3, "refit: mean %g",
                    norm_mean0(g));
      /* clt_graph_adapt replaces them */
      ck_assert_ok(clt_graph_adapt(g, b));
      ck_assert_msg(fabs(norm_mean0(g) - (2.0 * want + 5.0)) < 1e-2,
                    "adapted to b: mean %g", norm_mean0(g));
      fo.epochs = 20;
    }
    clt_optimizer_destroy(opt);
    clt_graph_destroy(g);
  }
  ck_assert_msg(losses[1] < 0.1 * losses[0],
                "normalized loss %g against raw features' %g", losses[1],
                losses[0]);
  /* The checkpoint (written after the second fit: statistics of a) holds
   * them: resumed, and loaded as weights, a model keeps them through a
   * fit on other data. */
  clt_graph *g = normalized_regression();
  clt_optimizer *opt = adam(g, 0.05f);
  clt_checkpoint_info info;
  ck_assert_ok(clt_checkpoint_resume(g, opt, fo.checkpoint_path, &info, NULL,
                                     0));
  ck_assert_msg(fabs(norm_mean0(g) - want) < 1e-3, "resumed: mean %g",
                norm_mean0(g));
  fo.epochs = 1;
  fo.checkpoint_path = NULL;
  ck_assert_ok(clt_fit(g, opt, b, NULL, &fo, hist));
  ck_assert_msg(fabs(norm_mean0(g) - want) < 1e-3, "resumed, fit: mean %g",
                norm_mean0(g));
  clt_optimizer_destroy(opt);
  clt_graph_destroy(g);
  g = normalized_regression();
  ck_assert_ok(clt_checkpoint_load_weights(g, tmp_path("norm.safetensors")));
  ck_assert_msg(fabs(norm_mean0(g) - want) < 1e-3, "loaded: mean %g",
                norm_mean0(g));
  clt_graph_destroy(g);
  clt_dataset_destroy(a);
  clt_dataset_destroy(b);
}
END_TEST

/* The pairs' count of an AUC: positives scoring above negatives, ties
 * half; NaN without both. */
static double pairwise_auc(const float *score, const bool *present, int n,
                           int stride) {
  double won = 0, pos = 0, neg = 0;
  for (int i = 0; i < n; i++) {
    pos += present[i * stride];
    neg += !present[i * stride];
    for (int j = 0; j < n; j++)
      if (present[i * stride] && !present[j * stride])
        won += score[i * stride] > score[j * stride]     ? 1.0
               : score[i * stride] == score[j * stride] ? 0.5
                                                        : 0.0;
  }
  return pos > 0 && neg > 0 ? won / (pos * neg) : NAN;
}

/* clt_evaluate_roc_auc against the pairs counted on the model's own
 * outputs: a softmax over the inputs themselves (so the scores are
 * chosen: ties, a class no sample has), and sigmoids with soft targets. */
START_TEST(test_roc_auc) {
  enum { N = 9, K = 3 };
  static const float x[N * K] = {
      2, 0, 1,  0.5f, 0.5f, 0,  0.5f, 0.5f, 0, /* two alike: a tie */
      0, 3, 1,  1, 1, 1,  -1, 2, 0,  3, -2, 0,  0, 0, 0.25f,  1, -1, 2};
  static const int32_t labels[N] = {0, 0, 1, 1, 0, 1, 0, 1, 0}; /* no 2 */
  clt_dataset_desc d = {0};
  d.count = N;
  d.channels = d.height = 1;
  d.width = K;
  d.values_f32 = x;
  d.labels = labels;
  d.num_classes = K;
  clt_dataset *ds = NULL;
  ck_assert_ok(clt_dataset_from_memory(g_ctx, &d, &ds));
  clt_graph *g = NULL;
  clt_node in;
  ck_assert_ok(clt_graph_create(g_ctx, &g));
  ck_assert_ok(clt_graph_input(g, 1, (int64_t[]){K}, &in));
  ck_assert_ok(clt_graph_softmax_cross_entropy(g, in, NULL));
  ck_assert_ok(clt_graph_compile(g, N, 1));
  float p[N * K];
  int64_t outputs = 0;
  ck_assert_ok(clt_graph_set_batch(g, x, labels, N));
  ck_assert_ok(clt_graph_forward(g, false));
  ck_assert_ok(clt_graph_predictions(g, p, &outputs));
  bool present[N * K];
  for (int i = 0; i < N * K; i++) present[i] = labels[i / K] == i % K;
  double auc[K], micro = 0;
  clt_metrics m;
  ck_assert_ok(clt_evaluate_roc_auc(g, ds, 4, auc, &micro, &m)); /* 4+4+1 */
  ck_assert_int_eq(m.samples, N);
  for (int k = 0; k < 2; k++) {
    double want = pairwise_auc(p + k, present + k, N, K);
    ck_assert_msg(fabs(auc[k] - want) < 1e-12, "class %d: %.12g, pairs %.12g",
                  k, auc[k], want);
  }
  ck_assert(auc[0] > 0 && auc[0] < 1); /* neither all right nor all wrong */
  ck_assert(isnan(auc[2]));            /* no sample of class 2 */
  ck_assert_double_eq_tol(micro, pairwise_auc(p, present, N * K, 1), 1e-12);
  /* Top-k: the label with fewer than k classes strictly above it, so the
   * rows tied at the top (rows 1 and 2, and row 4, all three alike) are
   * top-1 hits though argmax may pick another class. */
  for (int k = 1; k <= K; k++) {
    int64_t hits = -1, want = 0;
    ck_assert_ok(clt_evaluate_top_k(g, ds, 4, k, &hits, &m));
    for (int i = 0; i < N; i++) {
      int above = 0;
      for (int c = 0; c < K; c++) above += p[i * K + c] > p[i * K + labels[i]];
      want += above < k;
    }
    ck_assert_int_eq(hits, want);
    if (k == K) ck_assert_int_eq(hits, N);
  }
  int64_t hits1 = 0;
  ck_assert_ok(clt_evaluate_top_k(g, ds, 4, 1, &hits1, &m));
  ck_assert_int_ge(hits1, 3); /* rows 1, 2 (label 0 tied top) and 4 */
  ck_assert_int_eq(clt_evaluate_top_k(g, ds, 4, 0, &hits1, &m),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_int_eq(clt_evaluate_top_k(g, ds, 4, K + 1, &hits1, &m),
                   CLT_ERR_INVALID_ARGUMENT);
  clt_graph_destroy(g);
  clt_dataset_destroy(ds);

  /* Multi-label: present from a target of 0.5; a label every sample has
   * gets NaN. */
  float t[N * K];
  for (int i = 0; i < N; i++) {
    t[i * K] = i % 3 == 0 ? 0.5f : 0.49f;
    t[i * K + 1] = (float)(labels[i]);
    t[i * K + 2] = 1.0f;
  }
  d.labels = NULL;
  d.num_classes = 0;
  d.targets = t;
  d.target_size = K;
  ck_assert_ok(clt_dataset_from_memory(g_ctx, &d, &ds));
  ck_assert_ok(clt_graph_create(g_ctx, &g));
  ck_assert_ok(clt_graph_input(g, 1, (int64_t[]){K}, &in));
  ck_assert_ok(clt_graph_add(g, "sigmoid_cross_entropy", NULL, &in, 1, NULL,
                             NULL));
  ck_assert_ok(clt_graph_compile(g, N, 1));
  ck_assert_ok(clt_graph_set_batch(g, x, t, N));
  ck_assert_ok(clt_graph_forward(g, false));
  ck_assert_ok(clt_graph_predictions(g, p, &outputs));
  for (int i = 0; i < N * K; i++) present[i] = t[i] >= 0.5f;
  ck_assert_ok(clt_evaluate_roc_auc(g, ds, 2, auc, NULL, &m));
  for (int k = 0; k < 2; k++)
    ck_assert_double_eq_tol(auc[k], pairwise_auc(p + k, present + k, N, K),
                            1e-12);
  ck_assert(isnan(auc[2]));
  clt_graph_destroy(g);
  clt_dataset_destroy(ds);

  /* A regression has none. */
  float y[N];
  for (int i = 0; i < N; i++) y[i] = (float)i;
  d.targets = y;
  d.target_size = 1;
  ck_assert_ok(clt_dataset_from_memory(g_ctx, &d, &ds));
  ck_assert_ok(clt_graph_create(g_ctx, &g));
  ck_assert_ok(clt_graph_input(g, 1, (int64_t[]){K}, &in));
  clt_node out;
  ck_assert_ok(clt_graph_dense(g, in, 1, &out));
  ck_assert_ok(clt_graph_mse(g, out, NULL));
  ck_assert_ok(clt_graph_compile(g, N, 1));
  ck_assert_int_eq(clt_evaluate_roc_auc(g, ds, 4, auc, NULL, &m),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx), "ROC AUC"));
  clt_graph_destroy(g);
  clt_dataset_destroy(ds);
}
END_TEST

static Suite *fit_data_suite(void) {
  Suite *s = suite_create("fit_data");
  TCase *tc = tcase_create("fit_data");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_mse_regression_through_fit);
  tcase_add_test(tc, test_roc_auc);
  tcase_add_test(tc, test_fit_adapts_normalize);
  tcase_add_test(tc, test_fit_bytes_equal_floats);
  tcase_add_test(tc, test_mismatched_data_is_refused);
  tcase_add_test(tc, test_memory_classifier_names_in_checkpoint);
  tcase_add_test(tc, test_image_folders_train_end_to_end);
  tcase_add_test(tc, test_open_csv_folder);
  tcase_add_test(tc, test_open_csv_class_names);
  tcase_add_test(tc, test_split_is_seeded_and_disjoint);
  tcase_add_loop_test(tc, test_early_stop_keeps_the_best_weights, 0, 2);
  tcase_add_test(tc, test_plateau_and_warmup_schedules);
  tcase_add_test(tc, test_warmup_steps_through_fit);
  tcase_add_test(tc, test_stop_function_ends_the_run);
  tcase_add_test(tc, test_epoch_tells_compile_time_apart);
  tcase_add_test(tc, test_evaluations_every_epoch_match_evaluate);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  if (!mkdtemp(g_dir)) return EXIT_FAILURE;
  /* Image folders decode through libcltrain-image, as a program's do. */
  clt_image_init();
  int rc = test_run_suite("fit_data", fit_data_suite);
  test_remove_tree(g_dir);
  return rc;
}
