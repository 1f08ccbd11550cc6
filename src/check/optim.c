/* Checks of cl/optim.cl: SGD and Adam steps against torch.optim, with
 * clipping by global norm. */
#include <math.h>

#include "check/harness.h"

/* A fresh random gradient for one step, and in norm[0] its sum of squares
 * (what clipping by global norm reads). Returns the clipping factor of
 * torch.nn.utils.clip_grad_norm_ for max_norm, from that float value. */
static clt_status next_gradient(check_set *s, check_f32 *g, check_f32 *norm,
                                float max_norm, double *clip) {
  clt_random_fill(g->host, g->n, s->seed++, -1.0f, 1.0f);
  double sq = 0.0;
  for (int64_t i = 0; i < g->n; i++) sq += (double)g->host[i] * g->host[i];
  norm->host[0] = (float)sq;
  CLT_TRY(check_upload(g));
  CLT_TRY(check_upload(norm));
  *clip = 1.0;
  if (max_norm > 0.0f) {
    double coef = max_norm / (sqrt((double)norm->host[0]) + 1e-6);
    *clip = coef < 1.0 ? coef : 1.0;
  }
  return CLT_OK;
}

static void state_store(check_f32 *b, const double *w) {
  for (int64_t i = 0; i < b->n; i++) b->host[i] = (float)w[i];
}

typedef struct sgd_args {
  int64_t n;
  const clt_sgd_params *hp;
  int steps;
} sgd_args;

/* torch.optim.SGD, step `step` (1-based), on the double state w, buf. */
static void sgd_reference(const clt_sgd_params *hp, int step, const float *g,
                          double clip, int64_t n, double *w, double *buf) {
  for (int64_t i = 0; i < n; i++) {
    double d = g[i] * clip + (double)hp->weight_decay * w[i];
    if (hp->momentum != 0.0f) {
      buf[i] =
          step == 1 ? d : hp->momentum * buf[i] + (1.0 - hp->dampening) * d;
      d = hp->nesterov ? d + hp->momentum * buf[i] : buf[i];
    }
    w[i] -= hp->lr * d;
  }
}

static clt_status sgd_body(check_set *s, const void *arg) {
  const sgd_args *a = arg;
  const clt_sgd_params *hp = a->hp;
  int64_t n = a->n;
  bool momentum = hp->momentum != 0.0f;
  check_f32 *p, *g, *norm, *buf = NULL;
  double *w, *bufd;
  CLT_TRY(check_doubles(s, n, &w));
  CLT_TRY(check_doubles(s, n, &bufd));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &p));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &g));
  CLT_TRY(check_operand(s, 1, -1.0f, 1.0f, &norm));
  if (momentum) {
    CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &buf));
    /* Before the first step the buffer holds nothing meaningful. */
    for (int64_t i = 0; i < n; i++) buf->host[i] = NAN;
    CLT_TRY(check_upload(buf));
  }
  for (int64_t i = 0; i < n; i++) w[i] = p->host[i];
  for (int step = 1; step <= a->steps; step++) {
    double clip;
    CLT_TRY(next_gradient(s, g, norm, hp->max_norm, &clip));
    clt_sgd_params h = *hp;
    h.first = step == 1;
    CLT_TRY(clt_sgd_step(s->ctx, p->t, g->t, momentum ? buf->t : NULL, norm->t,
                         &h));
    sgd_reference(hp, step, g->host, clip, n, w, bufd);
  }
  state_store(p, w);
  if (momentum) state_store(buf, bufd);
  return CLT_OK;
}

clt_status clt_check_sgd_step(clt_context *ctx, int64_t n,
                              const clt_sgd_params *hp, int steps,
                              double *max_err) {
  sgd_args a = {n, hp, steps};
  return check_run(ctx, 150, sgd_body, &a, max_err);
}

typedef struct adam_args {
  int64_t n;
  const clt_adam_params *hp;
  int steps;
} adam_args;

/* torch.optim.Adam / AdamW (amsgrad off), step `step` (1-based). */
static void adam_reference(const clt_adam_params *hp, int step, const float *g,
                           double clip, int64_t n, double *w, double *m,
                           double *v) {
  double lr = hp->lr, b1 = hp->beta1, b2 = hp->beta2, wd = hp->weight_decay;
  double bias1 = 1.0 - pow(b1, step), bias2 = 1.0 - pow(b2, step);
  for (int64_t i = 0; i < n; i++) {
    double d = g[i] * clip;
    if (hp->decoupled)
      w[i] *= 1.0 - lr * wd;
    else
      d += wd * w[i];
    m[i] = b1 * m[i] + (1.0 - b1) * d;
    v[i] = b2 * v[i] + (1.0 - b2) * d * d;
    double denom = sqrt(v[i]) / sqrt(bias2) + hp->eps;
    w[i] -= lr / bias1 * m[i] / denom;
  }
}

static clt_status adam_body(check_set *s, const void *arg) {
  const adam_args *a = arg;
  const clt_adam_params *hp = a->hp;
  int64_t n = a->n;
  double *w, *m, *v; /* zeroed: PyTorch starts both moments at zero */
  check_f32 *p, *g, *norm, *mb, *vb;
  CLT_TRY(check_doubles(s, n, &w));
  CLT_TRY(check_doubles(s, n, &m));
  CLT_TRY(check_doubles(s, n, &v));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &p));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &g));
  CLT_TRY(check_operand(s, 1, -1.0f, 1.0f, &norm));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &mb));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &vb));
  for (int64_t i = 0; i < n; i++) {
    w[i] = p->host[i];
    mb->host[i] = vb->host[i] = 0.0f;
  }
  CLT_TRY(check_upload(mb));
  CLT_TRY(check_upload(vb));
  for (int step = 1; step <= a->steps; step++) {
    double clip;
    CLT_TRY(next_gradient(s, g, norm, hp->max_norm, &clip));
    clt_adam_params h = *hp;
    h.step = step;
    CLT_TRY(clt_adam_step(s->ctx, p->t, g->t, mb->t, vb->t, norm->t, &h));
    adam_reference(hp, step, g->host, clip, n, w, m, v);
  }
  state_store(p, w);
  state_store(mb, m);
  state_store(vb, v);
  return CLT_OK;
}

clt_status clt_check_adam_step(clt_context *ctx, int64_t n,
                               const clt_adam_params *hp, int steps,
                               double *max_err) {
  adam_args a = {n, hp, steps};
  return check_run(ctx, 160, adam_body, &a, max_err);
}

typedef struct rmsprop_args {
  int64_t n;
  const clt_rmsprop_params *hp;
  int steps;
} rmsprop_args;

/* torch.optim.RMSprop (maximize off), one step on the double state: w,
 * sq (square_avg), buf (momentum_buffer), avg (grad_avg), all from zero
 * but w. */
static void rmsprop_reference(const clt_rmsprop_params *hp, const float *g,
                              double clip, int64_t n, double *w, double *sq,
                              double *buf, double *avg) {
  double a = hp->alpha;
  for (int64_t i = 0; i < n; i++) {
    double d = g[i] * clip + (double)hp->weight_decay * w[i];
    sq[i] = a * sq[i] + (1.0 - a) * d * d;
    double var = sq[i];
    if (hp->centered) {
      avg[i] = a * avg[i] + (1.0 - a) * d;
      var -= avg[i] * avg[i];
    }
    double step = d / (sqrt(var) + hp->eps);
    if (hp->momentum != 0.0f) {
      buf[i] = hp->momentum * buf[i] + step;
      step = buf[i];
    }
    w[i] -= hp->lr * step;
  }
}

static clt_status rmsprop_body(check_set *s, const void *arg) {
  const rmsprop_args *a = arg;
  const clt_rmsprop_params *hp = a->hp;
  int64_t n = a->n;
  bool momentum = hp->momentum != 0.0f;
  double *w, *sq, *buf, *avg;
  check_f32 *p, *g, *norm, *sqb, *bufb = NULL, *avgb = NULL;
  CLT_TRY(check_doubles(s, n, &w));
  CLT_TRY(check_doubles(s, n, &sq));
  CLT_TRY(check_doubles(s, n, &buf));
  CLT_TRY(check_doubles(s, n, &avg));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &p));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &g));
  CLT_TRY(check_operand(s, 1, -1.0f, 1.0f, &norm));
  CLT_TRY(check_operand(s, n, -1.0f, 1.0f, &sqb));
  for (int64_t i = 0; i < n; i++) {
    w[i] = p->host[i];
    sqb->host[i] = 0.0f;
  }
  CLT_TRY(check_upload(sqb));
  /* The state the step keeps, from zero as PyTorch's; where the step
   * keeps none, no buffer is passed. */
  check_f32 **kept[2] = {momentum ? &bufb : NULL, hp->centered ? &avgb : NULL};
  for (int k = 0; k < 2; k++) {
    if (!kept[k]) continue;
    CLT_TRY(check_operand(s, n, -1.0f, 1.0f, kept[k]));
    for (int64_t i = 0; i < n; i++) (*kept[k])->host[i] = 0.0f;
    CLT_TRY(check_upload(*kept[k]));
  }
  for (int step = 1; step <= a->steps; step++) {
    double clip;
    CLT_TRY(next_gradient(s, g, norm, hp->max_norm, &clip));
    CLT_TRY(clt_rmsprop_step(s->ctx, p->t, g->t, sqb->t,
                             bufb ? bufb->t : NULL, avgb ? avgb->t : NULL,
                             norm->t, hp));
    rmsprop_reference(hp, g->host, clip, n, w, sq, buf, avg);
  }
  state_store(p, w);
  state_store(sqb, sq);
  if (bufb) state_store(bufb, buf);
  if (avgb) state_store(avgb, avg);
  return CLT_OK;
}

clt_status clt_check_rmsprop_step(clt_context *ctx, int64_t n,
                                  const clt_rmsprop_params *hp, int steps,
                                  double *max_err) {
  rmsprop_args a = {n, hp, steps};
  return check_run(ctx, 170, rmsprop_body, &a, max_err);
}
