/* Checks of cl/activation.cl: relu, leaky relu, sigmoid, tanh, gelu, silu,
 * elu, softplus. */
#include <math.h>

#include "check/harness.h"

static double act_ref(clt_activation kind, double x, double alpha) {
  switch (kind) {
  case CLT_ACT_RELU: return x > 0.0 ? x : 0.0;
  case CLT_ACT_LEAKY_RELU: return x > 0.0 ? x : alpha * x;
  case CLT_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
  case CLT_ACT_TANH: return tanh(x);
  case CLT_ACT_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
  case CLT_ACT_SILU: return x / (1.0 + exp(-x));
  case CLT_ACT_ELU: return x > 0.0 ? x : alpha * expm1(x);
  case CLT_ACT_SOFTPLUS: return x > 20.0 ? x : log1p(exp(x));
  }
  return NAN;
}

/* d act / dx at x, as PyTorch defines it (relu and leaky relu at 0 take
 * the left-hand slope). */
static double act_grad_ref(clt_activation kind, double x, double alpha) {
  switch (kind) {
  case CLT_ACT_RELU: return x > 0.0 ? 1.0 : 0.0;
  case CLT_ACT_LEAKY_RELU: return x > 0.0 ? 1.0 : alpha;
  case CLT_ACT_SIGMOID: {
    double s = 1.0 / (1.0 + exp(-x));
    return s * (1.0 - s);
  }
  case CLT_ACT_TANH: {
    double t = tanh(x);
    return 1.0 - t * t;
  }
  case CLT_ACT_GELU: {
    double cdf = 0.5 * (1.0 + erf(x / sqrt(2.0)));
    double pdf = exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
    return cdf + x * pdf;
  }
  case CLT_ACT_SILU: {
    double s = 1.0 / (1.0 + exp(-x));
    return s * (1.0 + x * (1.0 - s));
  }
  case CLT_ACT_ELU: return x > 0.0 ? 1.0 : alpha * exp(x);
  case CLT_ACT_SOFTPLUS: return x > 20.0 ? 1.0 : 1.0 / (1.0 + exp(-x));
  }
  return NAN;
}

typedef struct act_args {
  clt_activation kind;
  int64_t n;
  float alpha;
  bool accumulate;
} act_args;

/* x uniform in [-4, 4] with one exact zero (the kink of relu) and, where
 * there is room, 25 and -25 (softplus is x itself past 20; the
 * exponentials' far ends) and, from 1000 values on, the last 300 a ramp
 * from -10 to 10 (gelu's erf in each of its ranges and at their ends:
 * cl/activation.cl normal_cdf). */
static clt_status act_input(check_set *s, int64_t n, check_f32 **x) {
  CLT_TRY(check_operand(s, n, -4.0f, 4.0f, x));
  (*x)->host[n / 2] = 0.0f;
  if (n >= 5) {
    (*x)->host[1] = 25.0f;
    (*x)->host[n - 2] = -25.0f;
  }
  if (n >= 1000)
    for (int i = 0; i < 300; i++)
      (*x)->host[n - 300 + i] = -10.0f + 20.0f * (float)i / 299.0f;
  return check_upload(*x);
}

static clt_status act_forward_body(check_set *s, const void *arg) {
  const act_args *a = arg;
  check_f32 *x, *y;
  CLT_TRY(act_input(s, a->n, &x));
  CLT_TRY(check_operand(s, a->n, -1.0f, 1.0f, &y));
  const clt_round16 *round;
  CLT_TRY(check_round(s, y, &round));
  CLT_TRY(clt_activation_forward(s->ctx, y->t, x->t, a->n, a->kind, a->alpha,
                                 round));
  for (int64_t i = 0; i < a->n; i++)
    y->host[i] = (float)act_ref(a->kind, x->host[i], a->alpha);
  return CLT_OK;
}

clt_status clt_check_activation_forward(clt_context *ctx, clt_activation kind,
                                        int64_t n, float alpha, int round16,
                                        double *max_err) {
  act_args a = {kind, n, alpha, false};
  return check_run_rounded(ctx, 60, act_forward_body, &a, round16, max_err);
}

static clt_status act_backward_body(check_set *s, const void *arg) {
  const act_args *a = arg;
  check_f32 *x, *y, *dy, *dx;
  CLT_TRY(act_input(s, a->n, &x));
  CLT_TRY(check_operand(s, a->n, -1.0f, 1.0f, &y));
  for (int64_t i = 0; i < a->n; i++)
    y->host[i] = (float)act_ref(a->kind, x->host[i], a->alpha);
  CLT_TRY(check_upload(y));
  CLT_TRY(check_operand(s, a->n, -1.0f, 1.0f, &dy));
  CLT_TRY(check_operand(s, a->n, -1.0f, 1.0f, &dx));
  const clt_round16 *round;
  CLT_TRY(check_round(s, dx, &round));
  CLT_TRY(clt_activation_backward(s->ctx, dx->t, dy->t, x->t, y->t, a->n,
                                  a->kind, a->alpha, a->accumulate, round));
  for (int64_t i = 0; i < a->n; i++) {
    double g = dy->host[i] * act_grad_ref(a->kind, x->host[i], a->alpha);
    dx->host[i] = (float)(a->accumulate ? dx->host[i] + g : g);
  }
  return CLT_OK;
}

clt_status clt_check_activation_backward(clt_context *ctx, clt_activation kind,
                                         int64_t n, float alpha,
                                         bool accumulate, int round16,
                                         double *max_err) {
  act_args a = {kind, n, alpha, accumulate};
  return check_run_rounded(ctx, 70, act_backward_body, &a, round16, max_err);
}
