/* Checks of cl/norm.cl: batch normalisation of x [N, C, HW] as
 * torch.nn.BatchNorm1d/2d. Inputs are uniform in [-1, 1] plus a
 * per-channel offset (up to +-4), so a one-pass variance would lose
 * digits. */
#include <math.h>

#include "check/harness.h"

typedef struct bn_args {
  int64_t N, C, HW;
  float eps;
  bool training, accumulate;
  int64_t want; /* the split's parts asked for (clt_bn_stats) */
  bool relu;    /* the forward's fused ReLU */
  bool runs16;  /* the element-wise passes in runs of 16 */
} bn_args;

/* The split's workspace, where a->want asks for one or the device's loop
 * limit makes one (else NULL). */
static clt_status bn_work(check_set *s, const bn_args *a, clt_tensor **work) {
  *work = NULL;
  int64_t parts = 0;
  for (int backward = 0; backward < 2; backward++) {
    int64_t p, chunk;
    CLT_TRY(clt_bn_parts(s->ctx, a->N, a->HW, backward, a->want, &p, &chunk));
    if (p > parts) parts = p;
  }
  if (parts == 0) return CLT_OK;
  return check_plain(s, 2 * a->C * parts, work);
}

/* The offset of channel c's inputs: -4, -2, 0, 2, 4, -4, ... */
static float bn_offset(int64_t c) { return (float)((c % 5) - 2) * 2.0f; }

/* x [N, C, HW] uniform in [-1, 1] plus its channel's offset. */
static clt_status bn_input(check_set *s, const bn_args *a, check_f32 **x) {
  int64_t n = a->N * a->C * a->HW;
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, x));
  for (int64_t i = 0; i < n; i++)
    (*x)->host[i] += bn_offset((i / a->HW) % a->C);
  return check_upload(*x);
}

/* Per-channel mean and biased variance in double, two passes. */
static void bn_stats_ref(const float *x, const bn_args *a, int64_t c,
                         double *mean, double *var) {
  int64_t N = a->N, C = a->C, HW = a->HW;
  double sum = 0.0, sq = 0.0;
  for (int64_t n = 0; n < N; n++)
    for (int64_t j = 0; j < HW; j++) sum += x[(n * C + c) * HW + j];
  *mean = sum / (double)(N * HW);
  for (int64_t n = 0; n < N; n++)
    for (int64_t j = 0; j < HW; j++) {
      double d = x[(n * C + c) * HW + j] - *mean;
      sq += d * d;
    }
  *var = sq / (double)(N * HW);
}

static clt_status bn_stats_body(check_set *s, const void *arg) {
  const bn_args *a = arg;
  check_f32 *x, *mean, *var;
  CLT_TRY(bn_input(s, a, &x));
  CLT_TRY(check_operand(s, a->C, -1.0f, 1.0f, &mean));
  CLT_TRY(check_operand(s, a->C, -1.0f, 1.0f, &var));
  clt_tensor *work;
  CLT_TRY(bn_work(s, a, &work));
  CLT_TRY(clt_bn_stats(s->ctx, mean->t, var->t, x->t, a->N, a->C, a->HW,
                       a->want, work));
  for (int64_t c = 0; c < a->C; c++) {
    double m, v;
    bn_stats_ref(x->host, a, c, &m, &v);
    mean->host[c] = (float)m;
    var->host[c] = (float)v;
  }
  return CLT_OK;
}

clt_status clt_check_bn_stats(clt_context *ctx, int64_t N, int64_t C,
                              int64_t HW, int64_t want, double *max_err) {
  bn_args a = {.N = N, .C = C, .HW = HW, .want = want};
  return check_run(ctx, 240, bn_stats_body, &a, max_err);
}

typedef struct bn_running_args {
  int64_t C, M;
  float momentum;
} bn_running_args;

static clt_status bn_running_body(check_set *s, const void *arg) {
  const bn_running_args *a = arg;
  int64_t C = a->C, M = a->M;
  if (M < 2)
    return clt_ctx_fail(s->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "check: batch statistics need 2 values per channel "
                        "(PyTorch refuses 1)");
  check_f32 *rmean, *rvar, *tracked, *mean, *var;
  CLT_TRY(check_operand(s, C, -1.0f, 1.0f, &rmean));
  CLT_TRY(check_operand(s, C, 0.5f, 2.0f, &rvar));
  CLT_TRY(check_operand(s, 1, -1.0f, 1.0f, &tracked));
  tracked->host[0] = 3.0f;
  CLT_TRY(check_upload(tracked));
  CLT_TRY(check_operand(s, C, -1.0f, 1.0f, &mean));
  CLT_TRY(check_operand(s, C, 0.0f, 2.0f, &var));
  CLT_TRY(clt_bn_update_running(s->ctx, rmean->t, rvar->t, tracked->t, mean->t,
                                var->t, C, M, a->momentum));
  double m = a->momentum;
  for (int64_t c = 0; c < C; c++) {
    double unbiased = var->host[c] * (double)M / (double)(M - 1);
    rmean->host[c] = (float)((1.0 - m) * rmean->host[c] + m * mean->host[c]);
    rvar->host[c] = (float)((1.0 - m) * rvar->host[c] + m * unbiased);
  }
  tracked->host[0] = 4.0f;
  return CLT_OK;
}

clt_status clt_check_bn_update_running(clt_context *ctx, int64_t C, int64_t M,
                                       float momentum, double *max_err) {
  bn_running_args a = {C, M, momentum};
  return check_run(ctx, 250, bn_running_body, &a, max_err);
}

/* mean[c] near channel c's offset (or its batch mean), var in [0.25, 2]
 * (or the batch variance), both as float. */
static clt_status bn_moments(check_set *s, const check_f32 *x, const bn_args *a,
                             bool batch, check_f32 **mean, check_f32 **var) {
  CLT_TRY(check_operand(s, a->C, -0.5f, 0.5f, mean));
  CLT_TRY(check_operand(s, a->C, 0.25f, 2.0f, var));
  for (int64_t c = 0; c < a->C; c++) {
    if (batch) {
      double m, v;
      bn_stats_ref(x->host, a, c, &m, &v);
      (*mean)->host[c] = (float)m;
      (*var)->host[c] = (float)v;
    } else {
      (*mean)->host[c] += bn_offset(c);
    }
  }
  CLT_TRY(check_upload(*mean));
  return check_upload(*var);
}

static clt_status bn_forward_body(check_set *s, const void *arg) {
  const bn_args *a = arg;
  int64_t C = a->C, HW = a->HW, n = a->N * C * HW;
  check_f32 *x, *mean, *var, *gamma, *beta, *y;
  CLT_TRY(bn_input(s, a, &x));
  CLT_TRY(bn_moments(s, x, a, false, &mean, &var));
  CLT_TRY(check_operand(s, C, -1.5f, 1.5f, &gamma));
  CLT_TRY(check_operand(s, C, -1.0f, 1.0f, &beta));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &y));
  const clt_round16 *round;
  CLT_TRY(check_round(s, y, &round));
  CLT_TRY(clt_bn_forward(s->ctx, y->t, x->t, mean->t, var->t, gamma->t, beta->t,
                         a->N, C, HW, a->eps, a->relu, a->runs16, round));
  for (int64_t i = 0; i < n; i++) {
    int64_t c = (i / HW) % C;
    double inv = 1.0 / sqrt((double)var->host[c] + a->eps);
    double v = ((double)x->host[i] - mean->host[c]) * inv * gamma->host[c] +
               beta->host[c];
    y->host[i] = (float)(a->relu && !(v > 0.0) ? 0.0 : v);
  }
  return CLT_OK;
}

clt_status clt_check_bn_forward(clt_context *ctx, int64_t N, int64_t C,
                                int64_t HW, float eps, bool relu, bool runs16,
                                int round16, double *max_err) {
  bn_args a = {.N = N, .C = C, .HW = HW, .eps = eps, .relu = relu,
               .runs16 = runs16};
  return check_run_rounded(ctx, 260, bn_forward_body, &a, round16, max_err);
}

typedef struct bn_fold_args {
  int64_t F, per;
  float eps;
  bool has_b;
} bn_fold_args;

static clt_status bn_fold_body(check_set *s, const void *arg) {
  const bn_fold_args *a = arg;
  int64_t F = a->F, n = F * a->per;
  check_f32 *w, *b, *mean, *var, *gamma, *beta, *wo, *bo;
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &w));
  CLT_TRY(check_operand(s, F, -1.0f, 1.0f, &b));
  CLT_TRY(check_operand(s, F, -4.0f, 4.0f, &mean));
  CLT_TRY(check_operand(s, F, 0.25f, 2.0f, &var));
  CLT_TRY(check_operand(s, F, -1.5f, 1.5f, &gamma));
  CLT_TRY(check_operand(s, F, -1.0f, 1.0f, &beta));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &wo));
  CLT_TRY(check_operand(s, F, -1.0f, 1.0f, &bo));
  CLT_TRY(clt_bn_fold(s->ctx, wo->t, bo->t, w->t, a->has_b ? b->t : NULL,
                      mean->t, var->t, gamma->t, beta->t, F, a->per, a->eps));
  for (int64_t f = 0; f < F; f++) {
    double k = gamma->host[f] / sqrt((double)var->host[f] + a->eps);
    for (int64_t i = f * a->per; i < (f + 1) * a->per; i++)
      wo->host[i] = (float)(w->host[i] * k);
    double bias = a->has_b ? b->host[f] : 0.0;
    bo->host[f] = (float)((bias - mean->host[f]) * k + beta->host[f]);
  }
  return CLT_OK;
}

clt_status clt_check_bn_fold(clt_context *ctx, int64_t F, int64_t per,
                             float eps, bool has_b, double *max_err) {
  bn_fold_args a = {F, per, eps, has_b};
  return check_run(ctx, 265, bn_fold_body, &a, max_err);
}

static clt_status bn_backward_body(check_set *s, const void *arg) {
  const bn_args *a = arg;
  int64_t N = a->N, C = a->C, HW = a->HW, M = N * HW, n = N * C * HW;
  float eps = a->eps;
  bool training = a->training, accumulate = a->accumulate;
  check_f32 *x, *mean, *var, *gamma, *dy, *dx, *dgamma, *dbeta, *dgamma2,
      *dbeta2;
  CLT_TRY(bn_input(s, a, &x));
  CLT_TRY(bn_moments(s, x, a, training, &mean, &var));
  CLT_TRY(check_operand(s, C, -1.5f, 1.5f, &gamma));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &dy));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &dx));
  CLT_TRY(check_operand(s, C, -1.0f, 1.0f, &dgamma));
  CLT_TRY(check_operand(s, C, -1.0f, 1.0f, &dbeta));
  CLT_TRY(check_operand(s, C, -1.0f, 1.0f, &dgamma2));
  CLT_TRY(check_operand(s, C, -1.0f, 1.0f, &dbeta2));
  clt_tensor *work;
  CLT_TRY(bn_work(s, a, &work));
  const clt_round16 *round;
  CLT_TRY(check_round(s, dx, &round));
  CLT_TRY(clt_bn_backward(s->ctx, dx->t, dgamma->t, dbeta->t, dy->t, x->t,
                          mean->t, var->t, gamma->t, N, C, HW, eps, training,
                          accumulate, a->want, a->runs16, work, round));
  /* Without dx, dgamma and dbeta must come all the same (a rounding asked
   * for dx is then nobody's). */
  CLT_TRY(clt_bn_backward(s->ctx, NULL, dgamma2->t, dbeta2->t, dy->t, x->t,
                          mean->t, var->t, gamma->t, N, C, HW, eps, training,
                          accumulate, a->want, a->runs16, work, round));
  for (int64_t c = 0; c < C; c++) {
    double mu = mean->host[c], inv = 1.0 / sqrt((double)var->host[c] + eps);
    double sg = 0.0, sb = 0.0;
    for (int64_t b = 0; b < N; b++)
      for (int64_t j = 0; j < HW; j++) {
        int64_t i = (b * C + c) * HW + j;
        sb += dy->host[i];
        sg += dy->host[i] * ((x->host[i] - mu) * inv);
      }
    double k = gamma->host[c] * inv;
    for (int64_t b = 0; b < N; b++)
      for (int64_t j = 0; j < HW; j++) {
        int64_t i = (b * C + c) * HW + j;
        double xhat = (x->host[i] - mu) * inv;
        double g = training ? k / (double)M *
                                  ((double)M * dy->host[i] - sb - xhat * sg)
                            : k * dy->host[i];
        dx->host[i] = (float)(accumulate ? dx->host[i] + g : g);
      }
    dgamma->host[c] = dgamma2->host[c] = (float)sg;
    dbeta->host[c] = dbeta2->host[c] = (float)sb;
  }
  return CLT_OK;
}

clt_status clt_check_bn_backward(clt_context *ctx, int64_t N, int64_t C,
                                 int64_t HW, float eps, bool training,
                                 bool accumulate, int64_t want, bool runs16,
                                 int round16, double *max_err) {
  bn_args a = {N, C, HW, eps, training, accumulate, want, false, runs16};
  return check_run_rounded(ctx, 270, bn_backward_body, &a, round16, max_err);
}

typedef struct bn_train_args {
  int64_t N, C, HW;
  float eps, momentum;
  bool relu, accumulate, planes;
} bn_train_args;

static bn_args bn_plain(const bn_train_args *t) {
  bn_args a = {.N = t->N, .C = t->C, .HW = t->HW, .eps = t->eps,
               .training = true};
  return a;
}

static clt_status bn_train_forward_body(check_set *s, const void *arg) {
  const bn_train_args *t = arg;
  bn_args a = bn_plain(t);
  int64_t N = t->N, C = t->C, HW = t->HW, M = N * HW, n = N * C * HW;
  if (M < 2)
    return clt_ctx_fail(s->ctx, CLT_ERR_INVALID_ARGUMENT,
                        "check: batch statistics need 2 values per channel "
                        "(PyTorch refuses 1)");
  check_f32 *x, *y, *mean, *var, *gamma, *beta, *rmean, *rvar, *tracked;
  CLT_TRY(bn_input(s, &a, &x));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &y));
  CLT_TRY(check_operand(s, C, -1.0f, 1.0f, &mean));
  CLT_TRY(check_operand(s, C, -1.0f, 1.0f, &var));
  CLT_TRY(check_operand(s, C, -1.5f, 1.5f, &gamma));
  CLT_TRY(check_operand(s, C, -1.0f, 1.0f, &beta));
  CLT_TRY(check_operand(s, C, -1.0f, 1.0f, &rmean));
  CLT_TRY(check_operand(s, C, 0.5f, 2.0f, &rvar));
  CLT_TRY(check_operand(s, 1, -1.0f, 1.0f, &tracked));
  tracked->host[0] = 3.0f;
  CLT_TRY(check_upload(tracked));
  const clt_round16 *round;
  CLT_TRY(check_round(s, y, &round));
  CLT_TRY(clt_bn_train_forward(s->ctx, y->t, mean->t, var->t, rmean->t,
                               rvar->t, tracked->t, x->t, gamma->t, beta->t,
                               N, C, HW, t->eps, t->momentum, t->relu,
                               t->planes, round));
  double mo = t->momentum;
  for (int64_t c = 0; c < C; c++) {
    double m, v;
    bn_stats_ref(x->host, &a, c, &m, &v);
    mean->host[c] = (float)m;
    var->host[c] = (float)v;
    rmean->host[c] = (float)((1.0 - mo) * rmean->host[c] + mo * m);
    rvar->host[c] = (float)((1.0 - mo) * rvar->host[c] +
                            mo * v * (double)M / (double)(M - 1));
    double k = gamma->host[c] / sqrt(v + t->eps);
    for (int64_t b = 0; b < N; b++)
      for (int64_t j = 0; j < HW; j++) {
        int64_t i = (b * C + c) * HW + j;
        double o = (x->host[i] - m) * k + beta->host[c];
        y->host[i] = (float)(t->relu && !(o > 0.0) ? 0.0 : o);
      }
  }
  tracked->host[0] = 4.0f;
  return CLT_OK;
}

clt_status clt_check_bn_train_forward(clt_context *ctx, int64_t N, int64_t C,
                                      int64_t HW, float eps, float momentum,
                                      bool relu, bool planes, int round16,
                                      double *max_err) {
  bn_train_args t = {.N = N, .C = C, .HW = HW, .eps = eps,
                     .momentum = momentum, .relu = relu, .planes = planes};
  return check_run_rounded(ctx, 280, bn_train_forward_body, &t, round16,
                           max_err);
}

static clt_status bn_train_backward_body(check_set *s, const void *arg) {
  const bn_train_args *t = arg;
  bn_args a = bn_plain(t);
  int64_t N = t->N, C = t->C, HW = t->HW, M = N * HW, n = N * C * HW;
  check_f32 *x, *out, *mean, *var, *gamma, *dy, *dx, *dgamma, *dbeta;
  CLT_TRY(bn_input(s, &a, &x));
  CLT_TRY(bn_moments(s, x, &a, true, &mean, &var));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &out)); /* the ReLU's mask */
  CLT_TRY(check_operand(s, C, -1.5f, 1.5f, &gamma));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &dy));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &dx));
  CLT_TRY(check_operand(s, C, -1.0f, 1.0f, &dgamma));
  CLT_TRY(check_operand(s, C, -1.0f, 1.0f, &dbeta));
  const clt_round16 *round;
  CLT_TRY(check_round(s, dx, &round));
  CLT_TRY(clt_bn_train_backward(s->ctx, dx->t, dgamma->t, dbeta->t, dy->t,
                                x->t, out->t, mean->t, var->t, gamma->t, N,
                                C, HW, t->eps, t->relu, t->accumulate,
                                t->planes, round));
  for (int64_t c = 0; c < C; c++) {
    double mu = mean->host[c], inv = 1.0 / sqrt((double)var->host[c] + t->eps);
    double sg = 0.0, sb = 0.0;
#define BN_G(i) (t->relu && !(out->host[i] > 0.0f) ? 0.0 : (double)dy->host[i])
    for (int64_t b = 0; b < N; b++)
      for (int64_t j = 0; j < HW; j++) {
        int64_t i = (b * C + c) * HW + j;
        sb += BN_G(i);
        sg += BN_G(i) * ((x->host[i] - mu) * inv);
      }
    double k = gamma->host[c] * inv;
    for (int64_t b = 0; b < N; b++)
      for (int64_t j = 0; j < HW; j++) {
        int64_t i = (b * C + c) * HW + j;
        double xhat = (x->host[i] - mu) * inv;
        double g = k / (double)M * ((double)M * BN_G(i) - sb - xhat * sg);
        dx->host[i] = (float)(t->accumulate ? dx->host[i] + g : g);
      }
#undef BN_G
    dgamma->host[c] = (float)sg;
    dbeta->host[c] = (float)sb;
  }
  return CLT_OK;
}

clt_status clt_check_bn_train_backward(clt_context *ctx, int64_t N,
                                       int64_t C, int64_t HW, float eps,
                                       bool relu, bool accumulate,
                                       bool planes, int round16,
                                       double *max_err) {
  bn_train_args t = {.N = N, .C = C, .HW = HW, .eps = eps, .relu = relu,
                     .accumulate = accumulate, .planes = planes};
  return check_run_rounded(ctx, 290, bn_train_backward_body, &t, round16,
                           max_err);
}

/* ---- layer normalisation ------------------------------------------------ */

/* Over each sample's D values (P 0: clt_ln_*), or over each pixel's D
 * channels of x [N, D, P] (P >= 1: clt_lnc_*). Either way G groups of D
 * values are normalised, the group g's value j at at(a, g, j) with the
 * parameters' j-th scale and shift. */
typedef struct ln_args {
  int64_t N, D, P;
  float eps;
  bool relu, accumulate, runs16;
  bool sums; /* the parameter sums in the input gradient's pass */
} ln_args;

static int64_t ln_groups(const ln_args *a) {
  return a->P ? a->N * a->P : a->N;
}
static int64_t ln_values(const ln_args *a) {
  return a->N * a->D * (a->P ? a->P : 1);
}
static int64_t ln_at(const ln_args *a, int64_t g, int64_t j) {
  if (!a->P) return g * a->D + j;
  return (g / a->P) * a->D * a->P + j * a->P + g % a->P;
}

/* x uniform in [-1, 1] plus its sample's offset (bn_offset's). */
static clt_status ln_input(check_set *s, const ln_args *a, check_f32 **x) {
  int64_t per = ln_values(a) / a->N;
  CLT_TRY(check_operand(s, ln_values(a), -1.0f, 1.0f, x));
  for (int64_t i = 0; i < ln_values(a); i++)
    (*x)->host[i] += bn_offset(i / per);
  return check_upload(*x);
}

/* Group g's mean and 1 / sqrt(biased variance + eps), in double. */
static void ln_stats_ref(const float *x, const ln_args *a, int64_t g,
                         double *mean, double *rstd) {
  double sum = 0.0, sq = 0.0;
  for (int64_t j = 0; j < a->D; j++) sum += x[ln_at(a, g, j)];
  *mean = sum / (double)a->D;
  for (int64_t j = 0; j < a->D; j++) {
    double d = x[ln_at(a, g, j)] - *mean;
    sq += d * d;
  }
  *rstd = 1.0 / sqrt(sq / (double)a->D + (double)a->eps);
}

/* The forward's operands, run on the device, and y, the means and rstds
 * of the reference into their host copies; the statistics in double too
 * (m, r), for the backward's reference. */
typedef struct ln_forward_ops {
  check_f32 *x, *gamma, *beta, *y, *mean, *rstd;
  double *m, *r;
} ln_forward_ops;

static clt_status ln_forward_run(check_set *s, const ln_args *a,
                                 ln_forward_ops *f) {
  int64_t D = a->D, G = ln_groups(a);
  CLT_TRY(ln_input(s, a, &f->x));
  CLT_TRY(check_operand(s, D, 0.5f, 2.0f, &f->gamma));
  CLT_TRY(check_operand(s, D, -1.0f, 1.0f, &f->beta));
  CLT_TRY(check_operand(s, ln_values(a), -1.0f, 1.0f, &f->y));
  CLT_TRY(check_operand(s, G, -1.0f, 1.0f, &f->mean));
  CLT_TRY(check_operand(s, G, -1.0f, 1.0f, &f->rstd));
  CLT_TRY(check_doubles(s, 2 * G, &f->m)); /* the harness's scratch is */
  f->r = f->m + G;                          /* scarce: one for both */
  if (a->P)
    CLT_TRY(clt_lnc_forward(s->ctx, f->y->t, f->mean->t, f->rstd->t, f->x->t,
                            f->gamma->t, f->beta->t, a->N, D, a->P, a->eps,
                            a->relu, a->runs16));
  else
    CLT_TRY(clt_ln_forward(s->ctx, f->y->t, f->mean->t, f->rstd->t, f->x->t,
                           f->gamma->t, f->beta->t, a->N, D, a->eps, a->relu,
                           a->runs16));
  for (int64_t g = 0; g < G; g++) {
    ln_stats_ref(f->x->host, a, g, &f->m[g], &f->r[g]);
    double m = f->m[g], r = f->r[g];
    f->mean->host[g] = (float)m;
    f->rstd->host[g] = (float)r;
    for (int64_t j = 0; j < D; j++) {
      int64_t i = ln_at(a, g, j);
      double v = (f->x->host[i] - m) * r * f->gamma->host[j] +
                 f->beta->host[j];
      f->y->host[i] = (float)(a->relu && !(v > 0.0) ? 0.0 : v);
    }
  }
  return CLT_OK;
}

static clt_status ln_forward_body(check_set *s, const void *arg) {
  ln_forward_ops f;
  return ln_forward_run(s, arg, &f);
}

clt_status clt_check_ln_forward(clt_context *ctx, int64_t N, int64_t D,
                                float eps, bool relu, bool runs16,
                                double *max_err) {
  ln_args a = {.N = N, .D = D, .eps = eps, .relu = relu, .runs16 = runs16};
  return check_run(ctx, 260, ln_forward_body, &a, max_err);
}

clt_status clt_check_lnc_forward(clt_context *ctx, int64_t N, int64_t C,
                                 int64_t P, float eps, bool relu, bool runs16,
                                 double *max_err) {
  ln_args a = {.N = N, .D = C, .P = P, .eps = eps, .relu = relu,
               .runs16 = runs16};
  return check_run(ctx, 265, ln_forward_body, &a, max_err);
}

/* The backward from the forward's statistics; where relu, through a
 * ReLU whose output is an operand of its own (out: half of it <= 0), as
 * clt_check_bn_train_backward's. */
static clt_status ln_backward_body(check_set *s, const void *arg) {
  const ln_args *a = arg;
  int64_t D = a->D, G = ln_groups(a), V = ln_values(a);
  ln_forward_ops f;
  check_f32 *out, *dy, *dx, *dgamma, *dbeta;
  clt_tensor *part = NULL; /* a workspace: not compared */
  CLT_TRY(ln_forward_run(s, a, &f));
  if (a->sums)
    CLT_TRY(check_plain(s, clt_lnc_part_floats(a->N, D, a->P), &part));
  CLT_TRY(check_operand(s, V, -1.0f, 1.0f, &out));
  CLT_TRY(check_operand(s, V, -1.0f, 1.0f, &dy));
  CLT_TRY(check_operand(s, V, -1.0f, 1.0f, &dx));
  CLT_TRY(check_operand(s, D, -1.0f, 1.0f, &dgamma));
  CLT_TRY(check_operand(s, D, -1.0f, 1.0f, &dbeta));
  if (a->P)
    CLT_TRY(clt_lnc_backward(s->ctx, dx->t, dgamma->t, dbeta->t, dy->t,
                             f.x->t, out->t, f.mean->t, f.rstd->t,
                             f.gamma->t, a->N, D, a->P, a->relu,
                             a->accumulate, a->runs16,
                             part));
  else
    CLT_TRY(clt_ln_backward(s->ctx, dx->t, dgamma->t, dbeta->t, dy->t,
                            f.x->t, out->t, f.mean->t, f.rstd->t, f.gamma->t,
                            a->N, D, a->relu, a->accumulate, a->runs16));
  double *dg, *db, *gv;
  CLT_TRY(check_doubles(s, D, &dg));
  CLT_TRY(check_doubles(s, D, &db));
  CLT_TRY(check_doubles(s, D, &gv));
  const float *gm = f.gamma->host;
  for (int64_t g = 0; g < G; g++) {
    double m = f.m[g], r = f.r[g], sg = 0.0, sgx = 0.0;
    for (int64_t j = 0; j < D; j++) {
      int64_t i = ln_at(a, g, j);
      double xhat = (f.x->host[i] - m) * r, d = dy->host[i];
      if (a->relu && !(out->host[i] > 0.0f)) d = 0.0;
      gv[j] = d * gm[j];
      dg[j] += d * xhat;
      db[j] += d;
      sg += gv[j];
      sgx += gv[j] * xhat;
    }
    sg /= (double)D;
    sgx /= (double)D;
    for (int64_t j = 0; j < D; j++) {
      int64_t i = ln_at(a, g, j);
      double xhat = (f.x->host[i] - m) * r;
      double v = r * (gv[j] - sg - xhat * sgx);
      float *o = &dx->host[i];
      *o = (float)(a->accumulate ? *o + v : v);
    }
  }
  for (int64_t j = 0; j < D; j++) {
    dgamma->host[j] = (float)dg[j];
    dbeta->host[j] = (float)db[j];
  }
  return CLT_OK;
}

static clt_status ln_backward_limited(clt_context *ctx, const ln_args *a,
                                      int64_t loop_limit, int seed,
                                      double *max_err) {
  int64_t saved = ctx->loop_limit;
  if (loop_limit > 0) ctx->loop_limit = loop_limit;
  clt_status st = check_run(ctx, seed, ln_backward_body, a, max_err);
  ctx->loop_limit = saved;
  return st;
}

clt_status clt_check_ln_backward(clt_context *ctx, int64_t N, int64_t D,
                                 float eps, bool relu, bool accumulate,
                                 bool runs16, int64_t loop_limit,
                                 double *max_err) {
  ln_args a = {.N = N, .D = D, .eps = eps, .relu = relu,
               .accumulate = accumulate, .runs16 = runs16};
  return ln_backward_limited(ctx, &a, loop_limit, 270, max_err);
}

clt_status clt_check_lnc_backward(clt_context *ctx, int64_t N, int64_t C,
                                  int64_t P, float eps, bool relu,
                                  bool accumulate, int layout,
                                  int64_t loop_limit, double *max_err) {
  ln_args a = {.N = N, .D = C, .P = P, .eps = eps, .relu = relu,
               .accumulate = accumulate, .runs16 = layout >= 1,
               .sums = layout == 2};
  return ln_backward_limited(ctx, &a, loop_limit, 275, max_err);
}
