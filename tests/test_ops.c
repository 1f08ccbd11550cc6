/* Every device op (src/ops/ops.h, except GEMM: test_gemm.c) against its
 * host reference from ops/opcheck.h, on odd shapes: rows 1, 3, 7, 33,
 * columns 1, 10, 127, lengths 1 to 1000 around the work-group sizes. The
 * backward ops are also compared with finite differences of the device's
 * own forward ops.
 *
 * CLT_TEST_TINY=1 keeps to tiny shapes (for the oclgrind simulator); the
 * suite never calls CLBlast. */
#include <math.h>

#include "common.h"
#include "ops/opcheck.h"

/* ------------------------------------------------------------------------ */
/* Shapes                                                                    */

static const int64_t full_rows[] = {1, 3, 7, 33};
static const int64_t full_cols[] = {1, 10, 127};
static const int64_t full_lengths[] = {1,  2,   7,   63,  64,
                                       65, 255, 256, 257, 1000};
static const int64_t tiny_rows[] = {1, 2};
static const int64_t tiny_cols[] = {1, 3};
static const int64_t tiny_lengths[] = {1, 5};

#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

typedef struct shape_list {
  const int64_t *v;
  int count;
} shape_list;

static shape_list rows_list(void) {
  return test_tiny() ? (shape_list){tiny_rows, COUNT(tiny_rows)}
                     : (shape_list){full_rows, COUNT(full_rows)};
}
static shape_list cols_list(void) {
  return test_tiny() ? (shape_list){tiny_cols, COUNT(tiny_cols)}
                     : (shape_list){full_cols, COUNT(full_cols)};
}
static shape_list lengths_list(void) {
  return test_tiny() ? (shape_list){tiny_lengths, COUNT(tiny_lengths)}
                     : (shape_list){full_lengths, COUNT(full_lengths)};
}

/* Loop index i over the grid rows x cols. */
static void grid_at(int i, int64_t *rows, int64_t *cols) {
  shape_list r = rows_list(), c = cols_list();
  *rows = r.v[i / c.count];
  *cols = c.v[i % c.count];
}
static int grid_count(void) { return rows_list().count * cols_list().count; }

/* Exact arithmetic: a rounding or two of float. */
#define TOL_EXACT 1e-6
/* Sums, the device's exp / tanh / erf, optimizer updates. */
#define TOL 1e-5

/* ------------------------------------------------------------------------ */
/* Element-wise ops and bias                                                 */

START_TEST(add_lengths) {
  shape_list n = lengths_list();
  double e;
  for (int k = 0; k < n.count; k++) {
    ck_assert_check(clt_check_add(g_ctx, n.v[k], false, &e), e, TOL_EXACT,
                    "n=%lld", (long long)n.v[k]);
    ck_assert_check(clt_check_add(g_ctx, n.v[k], true, &e), e, TOL_EXACT,
                    "n=%lld accumulate", (long long)n.v[k]);
  }
}
END_TEST

START_TEST(scale_lengths) {
  static const float alphas[] = {1.0f, -0.75f, 0.0f, 3.5f};
  shape_list n = lengths_list();
  double e;
  for (int k = 0; k < n.count; k++)
    for (int a = 0; a < COUNT(alphas); a++) {
      ck_assert_check(clt_check_scale(g_ctx, n.v[k], alphas[a], false, &e), e,
                      TOL_EXACT, "n=%lld alpha=%g", (long long)n.v[k],
                      alphas[a]);
      ck_assert_check(clt_check_scale(g_ctx, n.v[k], alphas[a], true, &e), e,
                      TOL_EXACT, "n=%lld alpha=%g accumulate",
                      (long long)n.v[k], alphas[a]);
    }
}
END_TEST

START_TEST(bias_rows_grid) {
  int64_t rows, cols;
  grid_at(_i, &rows, &cols);
  double e;
  ck_assert_check(clt_check_bias_rows(g_ctx, rows, cols, &e), e, TOL_EXACT,
                  "%lldx%lld", (long long)rows, (long long)cols);
}
END_TEST

START_TEST(bias_channels_shapes) {
  static const int64_t full[][3] = {{1, 1, 1},  {1, 3, 1},  {3, 1, 7},
                                    {2, 7, 49}, {3, 10, 1}, {1, 33, 10}};
  static const int64_t tiny[][3] = {{1, 1, 1}, {2, 3, 2}};
  int count = test_tiny() ? COUNT(tiny) : COUNT(full);
  double e;
  for (int k = 0; k < count; k++) {
    const int64_t *s = test_tiny() ? tiny[k] : full[k];
    ck_assert_check(clt_check_bias_channels(g_ctx, s[0], s[1], s[2], &e), e,
                    TOL_EXACT, "%lldx%lldx%lld", (long long)s[0],
                    (long long)s[1], (long long)s[2]);
  }
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Activations                                                               */

static const struct {
  clt_activation kind;
  float alpha;
  const char *name;
} activations[] = {
    {CLT_ACT_RELU, 0.0f, "relu"},
    {CLT_ACT_LEAKY_RELU, 0.01f, "leaky relu 0.01"},
    {CLT_ACT_LEAKY_RELU, 0.2f, "leaky relu 0.2"},
    {CLT_ACT_SIGMOID, 0.0f, "sigmoid"},
    {CLT_ACT_TANH, 0.0f, "tanh"},
    {CLT_ACT_GELU, 0.0f, "gelu"},
};

START_TEST(activation_forward_lengths) {
  shape_list n = lengths_list();
  double e;
  for (int k = 0; k < n.count; k++)
    ck_assert_check(
        clt_check_activation_forward(g_ctx, activations[_i].kind, n.v[k],
                                     activations[_i].alpha, &e),
        e, TOL, "%s n=%lld", activations[_i].name, (long long)n.v[k]);
}
END_TEST

START_TEST(activation_backward_lengths) {
  shape_list n = lengths_list();
  double e;
  for (int k = 0; k < n.count; k++)
    for (int acc = 0; acc < 2; acc++)
      ck_assert_check(
          clt_check_activation_backward(g_ctx, activations[_i].kind, n.v[k],
                                        activations[_i].alpha, acc, &e),
          e, TOL, "%s n=%lld accumulate=%d", activations[_i].name,
          (long long)n.v[k], acc);
}
END_TEST

/* A host array on the device as a fresh 1-D tensor. */
static clt_tensor *upload_new(const float *host, int64_t n) {
  clt_tensor *t;
  int64_t shape[1] = {n};
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_F32, 1, shape, &t));
  ck_assert_ok(clt_tensor_upload(t, host));
  return t;
}

static float *download_new(const clt_tensor *t) {
  float *host = malloc((size_t)clt_tensor_numel(t) * sizeof(float));
  ck_assert_ptr_nonnull(host);
  ck_assert_ok(clt_tensor_download(t, host));
  return host;
}

/* The backward with dy = 1 against central differences of the device's
 * forward, (f(x + h) - f(x - h)) / 2h, away from relu's kink. */
START_TEST(activation_backward_finite_differences) {
  enum { N = 64 };
  const float h = 1e-2f;
  clt_activation kind = activations[_i].kind;
  float alpha = activations[_i].alpha;
  float x[N], xp[N], xm[N], ones[N];
  clt_random_fill(x, N, 7, -3.0f, 3.0f);
  for (int i = 0; i < N; i++) {
    if (fabsf(x[i]) < 2 * h) x[i] = 0.5f;
    xp[i] = x[i] + h;
    xm[i] = x[i] - h;
    ones[i] = 1.0f;
  }
  clt_tensor *tx = upload_new(x, N), *tp = upload_new(xp, N),
             *tm = upload_new(xm, N), *tone = upload_new(ones, N);
  clt_tensor *ty = upload_new(ones, N), *typ = upload_new(ones, N),
             *tym = upload_new(ones, N), *tdx = upload_new(ones, N);
  ck_assert_ok(clt_activation_forward(g_ctx, ty, tx, N, kind, alpha));
  ck_assert_ok(clt_activation_forward(g_ctx, typ, tp, N, kind, alpha));
  ck_assert_ok(clt_activation_forward(g_ctx, tym, tm, N, kind, alpha));
  ck_assert_ok(
      clt_activation_backward(g_ctx, tdx, tone, tx, ty, N, kind, alpha, false));
  float *yp = download_new(typ), *ym = download_new(tym),
        *dx = download_new(tdx);
  for (int i = 0; i < N; i++) {
    double fd = ((double)yp[i] - ym[i]) / (2.0 * h);
    ck_assert_msg(fabs(fd - dx[i]) < 2e-3,
                  "%s at x=%g: backward %g, finite "
                  "difference %g",
                  activations[_i].name, x[i], dx[i], fd);
  }
  free(yp);
  free(ym);
  free(dx);
  clt_tensor *all[] = {tx, tp, tm, tone, ty, typ, tym, tdx};
  for (int i = 0; i < COUNT(all); i++) clt_tensor_destroy(all[i]);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Softmax and losses                                                        */

START_TEST(softmax_forward_grid) {
  int64_t rows, cols;
  grid_at(_i, &rows, &cols);
  double e;
  ck_assert_check(clt_check_softmax_forward(g_ctx, rows, cols, &e), e, TOL,
                  "%lldx%lld", (long long)rows, (long long)cols);
}
END_TEST

START_TEST(softmax_backward_grid) {
  int64_t rows, cols;
  grid_at(_i, &rows, &cols);
  double e;
  ck_assert_check(clt_check_softmax_backward(g_ctx, rows, cols, false, &e), e,
                  TOL, "%lldx%lld", (long long)rows, (long long)cols);
  ck_assert_check(clt_check_softmax_backward(g_ctx, rows, cols, true, &e), e,
                  TOL, "%lldx%lld accumulate", (long long)rows,
                  (long long)cols);
}
END_TEST

/* The softmax backward of a random dy against central differences of
 * sum(dy * softmax(x)): one row, each column perturbed in its own row. */
START_TEST(softmax_backward_finite_differences) {
  enum { C = 10 };
  const float h = 1e-2f;
  float x[C], dy[C], xs[2 * C * C];
  clt_random_fill(x, C, 8, -2.0f, 2.0f);
  clt_random_fill(dy, C, 9, -1.0f, 1.0f);
  for (int j = 0; j < C; j++)
    for (int c = 0; c < C; c++) {
      xs[(2 * j) * C + c] = x[c] + (c == j ? h : 0.0f);
      xs[(2 * j + 1) * C + c] = x[c] - (c == j ? h : 0.0f);
    }
  clt_tensor *tx = upload_new(x, C), *tdy = upload_new(dy, C);
  clt_tensor *ty = upload_new(x, C), *tdx = upload_new(x, C);
  clt_tensor *txs = upload_new(xs, 2 * C * C), *tys = upload_new(xs, 2 * C * C);
  ck_assert_ok(clt_softmax_forward(g_ctx, ty, tx, 1, C));
  ck_assert_ok(clt_softmax_backward(g_ctx, tdx, tdy, ty, 1, C, false));
  ck_assert_ok(clt_softmax_forward(g_ctx, tys, txs, 2 * C, C));
  float *dx = download_new(tdx), *ys = download_new(tys);
  for (int j = 0; j < C; j++) {
    double fd = 0.0;
    for (int c = 0; c < C; c++)
      fd += dy[c] * ((double)ys[(2 * j) * C + c] - ys[(2 * j + 1) * C + c]);
    fd /= 2.0 * h;
    ck_assert_msg(fabs(fd - dx[j]) < 1e-3,
                  "softmax column %d: backward %g, finite difference %g", j,
                  dx[j], fd);
  }
  free(dx);
  free(ys);
  clt_tensor *all[] = {tx, tdy, ty, tdx, txs, tys};
  for (int i = 0; i < COUNT(all); i++) clt_tensor_destroy(all[i]);
}
END_TEST

START_TEST(softmax_xent_grid) {
  static const float scales[] = {1.0f, 5.0f, 30.0f, 1e4f};
  int64_t rows, cols;
  grid_at(_i, &rows, &cols);
  double e;
  for (int s = 0; s < COUNT(scales); s++)
    ck_assert_check(clt_check_softmax_xent(g_ctx, rows, cols, scales[s], &e), e,
                    TOL, "%lldx%lld logits +-%g", (long long)rows,
                    (long long)cols, scales[s]);
}
END_TEST

/* The fused gradient against central differences of the device's loss. */
START_TEST(softmax_xent_finite_differences) {
  enum { C = 7 };
  const float h = 1e-2f;
  float x[C], xs[2 * C * C];
  int32_t label = 3, labels[2 * C * C];
  clt_random_fill(x, C, 10, -2.0f, 2.0f);
  for (int j = 0; j < C; j++)
    for (int c = 0; c < C; c++) {
      xs[(2 * j) * C + c] = x[c] + (c == j ? h : 0.0f);
      xs[(2 * j + 1) * C + c] = x[c] - (c == j ? h : 0.0f);
    }
  for (int i = 0; i < 2 * C; i++) labels[i] = label;
  int64_t lshape[1] = {2 * C};
  clt_tensor *tl, *tls;
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_I32, 1, lshape, &tls));
  ck_assert_ok(clt_tensor_upload(tls, labels));
  ck_assert_ok(clt_tensor_view(tls, 0, 1, (int64_t[]){1}, &tl));
  clt_tensor *tx = upload_new(x, C), *tgrad = upload_new(x, C);
  clt_tensor *tloss = upload_new(xs, 2 * C), *tcorr = upload_new(xs, 2 * C);
  clt_tensor *txs = upload_new(xs, 2 * C * C), *tgs = upload_new(xs, 2 * C * C);
  ck_assert_ok(clt_softmax_xent_forward_backward(g_ctx, tloss, tcorr, tgrad, tx,
                                                 tl, 1, C, 1.0f));
  float *grad = download_new(tgrad);
  ck_assert_ok(clt_softmax_xent_forward_backward(g_ctx, tloss, tcorr, tgs, txs,
                                                 tls, 2 * C, C, 1.0f));
  float *loss = download_new(tloss);
  for (int j = 0; j < C; j++) {
    double fd = ((double)loss[2 * j] - loss[2 * j + 1]) / (2.0 * h);
    ck_assert_msg(fabs(fd - grad[j]) < 1e-3,
                  "cross-entropy logit %d: gradient %g, finite difference %g",
                  j, grad[j], fd);
  }
  free(grad);
  free(loss);
  clt_tensor_destroy(tl);
  clt_tensor *all[] = {tls, tx, tgrad, tloss, tcorr, txs, tgs};
  for (int i = 0; i < COUNT(all); i++) clt_tensor_destroy(all[i]);
}
END_TEST

/* A label outside [0, cols) gives a NaN loss (reported by the caller) and
 * never counts as correct; labels must be i32. */
START_TEST(softmax_xent_bad_labels) {
  enum { R = 3, C = 4 };
  float x[R * C];
  clt_random_fill(x, R * C, 11, -1.0f, 1.0f);
  int32_t labels[R] = {-1, 2, 4};
  clt_tensor *tx = upload_new(x, R * C), *tgrad = upload_new(x, R * C);
  clt_tensor *tloss = upload_new(x, R), *tcorr = upload_new(x, R), *tlab;
  ck_assert_ok(clt_tensor_create(g_ctx, CLT_I32, 1, (int64_t[]){R}, &tlab));
  ck_assert_ok(clt_tensor_upload(tlab, labels));
  ck_assert_ok(clt_softmax_xent_forward_backward(g_ctx, tloss, tcorr, tgrad, tx,
                                                 tlab, R, C, 1.0f));
  float *loss = download_new(tloss), *corr = download_new(tcorr);
  ck_assert(isnan(loss[0]));
  ck_assert(isfinite(loss[1]) && loss[1] > 0.0f);
  ck_assert(isnan(loss[2]));
  ck_assert(corr[0] == 0.0f && corr[2] == 0.0f);
  free(loss);
  free(corr);
  /* Float labels are refused, with a message naming the op. */
  ck_assert_int_eq(clt_softmax_xent_forward_backward(g_ctx, tloss, tcorr, tgrad,
                                                     tx, tx, R, C, 1.0f),
                   CLT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(clt_context_last_error(g_ctx), "i32"));
  clt_tensor *all[] = {tx, tgrad, tloss, tcorr, tlab};
  for (int i = 0; i < COUNT(all); i++) clt_tensor_destroy(all[i]);
}
END_TEST

START_TEST(mse_grid) {
  int64_t rows, cols;
  grid_at(_i, &rows, &cols);
  double e;
  ck_assert_check(clt_check_mse(g_ctx, rows, cols, &e), e, TOL, "%lldx%lld",
                  (long long)rows, (long long)cols);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Reductions                                                                */

/* Dense bias gradients: [rows, cols] summed over rows (inner 1). */
START_TEST(sum_channels_dense_grid) {
  int64_t rows, cols;
  grid_at(_i, &rows, &cols);
  double e;
  for (int acc = 0; acc < 2; acc++)
    ck_assert_check(clt_check_sum_channels(g_ctx, rows, cols, 1, acc, &e), e,
                    TOL, "%lldx%lldx1 accumulate=%d", (long long)rows,
                    (long long)cols, acc);
}
END_TEST

/* Convolution bias gradients: [outer, channels, inner], inner = H * W,
 * including counts per channel above the work-group size. */
START_TEST(sum_channels_conv_shapes) {
  static const int64_t full[][3] = {{1, 1, 1},   {1, 3, 49},  {1, 10, 300},
                                    {3, 7, 1},   {3, 7, 49},  {33, 3, 49},
                                    {7, 1, 127}, {2, 33, 10}, {1, 1, 1000}};
  static const int64_t tiny[][3] = {{1, 1, 1}, {2, 3, 5}};
  int count = test_tiny() ? COUNT(tiny) : COUNT(full);
  double e;
  for (int k = 0; k < count; k++) {
    const int64_t *s = test_tiny() ? tiny[k] : full[k];
    for (int acc = 0; acc < 2; acc++)
      ck_assert_check(clt_check_sum_channels(g_ctx, s[0], s[1], s[2], acc, &e),
                      e, TOL, "%lldx%lldx%lld accumulate=%d", (long long)s[0],
                      (long long)s[1], (long long)s[2], acc);
  }
}
END_TEST

START_TEST(sum_into_lengths) {
  shape_list n = lengths_list();
  double e;
  for (int k = 0; k < n.count; k++) {
    long long len = (long long)n.v[k];
    ck_assert_check(clt_check_sum_into(g_ctx, n.v[k], 0, 1.0f, &e), e, TOL,
                    "n=%lld", len);
    ck_assert_check(clt_check_sum_into(g_ctx, n.v[k], 4, -0.5f, &e), e, TOL,
                    "n=%lld", len);
    ck_assert_check(clt_check_sumsq_into(g_ctx, n.v[k], 0, &e), e, TOL,
                    "n=%lld", len);
    ck_assert_check(clt_check_sumsq_into(g_ctx, n.v[k], 3, &e), e, TOL,
                    "n=%lld", len);
  }
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Optimizer updates                                                         */

static const struct {
  const char *name;
  clt_sgd_params hp;
} sgd_variants[] = {
    {"plain", {.lr = 0.1f}},
    {"weight decay", {.lr = 0.1f, .weight_decay = 0.05f}},
    {"momentum", {.lr = 0.1f, .momentum = 0.9f}},
    {"momentum dampening", {.lr = 0.1f, .momentum = 0.9f, .dampening = 0.5f}},
    {"nesterov", {.lr = 0.05f, .momentum = 0.8f, .nesterov = true}},
    {"nesterov weight decay",
     {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 0.01f, .nesterov = true}},
    /* max_norm 0.05 clips every gradient here, 100 none. */
    {"clipped", {.lr = 0.1f, .max_norm = 0.05f}},
    {"momentum clipped",
     {.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f, .max_norm = 0.05f}},
    {"momentum clip inactive",
     {.lr = 0.1f, .momentum = 0.9f, .max_norm = 100.0f}},
};

START_TEST(sgd_variants_steps) {
  static const int64_t full[] = {1, 7, 257, 1000}, tiny[] = {1, 5};
  const int64_t *n = test_tiny() ? tiny : full;
  int count = test_tiny() ? COUNT(tiny) : COUNT(full);
  double e;
  for (int k = 0; k < count; k++)
    for (int steps = 1; steps <= 3; steps += 2)
      ck_assert_check(
          clt_check_sgd_step(g_ctx, n[k], &sgd_variants[_i].hp, steps, &e), e,
          TOL, "sgd %s n=%lld steps=%d", sgd_variants[_i].name, (long long)n[k],
          steps);
}
END_TEST

static const struct {
  const char *name;
  clt_adam_params hp;
} adam_variants[] = {
    {"adam", {.lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f}},
    {"adam betas", {.lr = 0.1f, .beta1 = 0.5f, .beta2 = 0.9f, .eps = 1e-3f}},
    {"adam weight decay",
     {.lr = 0.01f,
      .beta1 = 0.9f,
      .beta2 = 0.999f,
      .eps = 1e-8f,
      .weight_decay = 0.1f}},
    {"adamw",
     {.lr = 0.01f,
      .beta1 = 0.9f,
      .beta2 = 0.999f,
      .eps = 1e-8f,
      .weight_decay = 0.1f,
      .decoupled = true}},
    {"adamw clipped",
     {.lr = 0.01f,
      .beta1 = 0.9f,
      .beta2 = 0.999f,
      .eps = 1e-8f,
      .weight_decay = 0.01f,
      .decoupled = true,
      .max_norm = 0.05f}},
    {"adam clipped",
     {.lr = 0.01f,
      .beta1 = 0.9f,
      .beta2 = 0.999f,
      .eps = 1e-8f,
      .weight_decay = 0.01f,
      .max_norm = 0.05f}},
};

START_TEST(adam_variants_steps) {
  static const int64_t full[] = {1, 7, 257, 1000}, tiny[] = {1, 5};
  const int64_t *n = test_tiny() ? tiny : full;
  int count = test_tiny() ? COUNT(tiny) : COUNT(full);
  double e;
  for (int k = 0; k < count; k++)
    for (int steps = 1; steps <= 3; steps += 2)
      ck_assert_check(
          clt_check_adam_step(g_ctx, n[k], &adam_variants[_i].hp, steps, &e), e,
          TOL, "%s n=%lld steps=%d", adam_variants[_i].name, (long long)n[k],
          steps);
}
END_TEST

/* ------------------------------------------------------------------------ */

static Suite *ops_suite(void) {
  Suite *s = suite_create("ops");

  TCase *ew = tcase_create("elementwise");
  tcase_add_test(ew, add_lengths);
  tcase_add_test(ew, scale_lengths);
  tcase_add_loop_test(ew, bias_rows_grid, 0, grid_count());
  tcase_add_test(ew, bias_channels_shapes);
  suite_add_tcase(s, ew);

  TCase *act = tcase_create("activation");
  tcase_add_loop_test(act, activation_forward_lengths, 0, COUNT(activations));
  tcase_add_loop_test(act, activation_backward_lengths, 0, COUNT(activations));
  tcase_add_loop_test(act, activation_backward_finite_differences, 0,
                      COUNT(activations));
  suite_add_tcase(s, act);

  TCase *loss = tcase_create("loss");
  tcase_add_loop_test(loss, softmax_forward_grid, 0, grid_count());
  tcase_add_loop_test(loss, softmax_backward_grid, 0, grid_count());
  tcase_add_test(loss, softmax_backward_finite_differences);
  tcase_add_loop_test(loss, softmax_xent_grid, 0, grid_count());
  tcase_add_test(loss, softmax_xent_finite_differences);
  tcase_add_test(loss, softmax_xent_bad_labels);
  tcase_add_loop_test(loss, mse_grid, 0, grid_count());
  suite_add_tcase(s, loss);

  TCase *red = tcase_create("reduce");
  tcase_add_loop_test(red, sum_channels_dense_grid, 0, grid_count());
  tcase_add_test(red, sum_channels_conv_shapes);
  tcase_add_test(red, sum_into_lengths);
  suite_add_tcase(s, red);

  TCase *opt = tcase_create("optim");
  tcase_add_loop_test(opt, sgd_variants_steps, 0, COUNT(sgd_variants));
  tcase_add_loop_test(opt, adam_variants_steps, 0, COUNT(adam_variants));
  suite_add_tcase(s, opt);
  return s;
}

int main(void) { return test_run_suite("ops", ops_suite); }
