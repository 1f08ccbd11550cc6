/* Dynamic loss scaling, as torch.amp.GradScaler: the loss (so every
 * gradient) is multiplied by the scale before backward; before the step
 * the gradients are divided by it and checked; a step with an infinite or
 * NaN gradient is skipped and the scale halved, and after growth_interval
 * clean steps in a row the scale doubles. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "optim/optimizer.h"
#include "runtime/runtime.h"
#include "tensor/tensor.h"

struct clt_loss_scaler {
  clt_context *ctx;
  clt_loss_scaler_options opts;
  float scale;
  int clean; /* steps since the last overflow or growth */
  int64_t steps, skipped;
  clt_tensor *found; /* i32 [1]: set by the check kernel */
};

CLT_API void clt_loss_scaler_options_init(clt_loss_scaler_options *o) {
  o->init_scale = 65536.0f;
  o->growth_factor = 2.0f;
  o->backoff_factor = 0.5f;
  o->growth_interval = 2000;
}

CLT_API clt_status clt_loss_scaler_create(clt_context *ctx,
                                          const clt_loss_scaler_options *o,
                                          clt_loss_scaler **out) {
  *out = NULL;
  if (!(o->init_scale > 0.0f) || !isfinite(o->init_scale) ||
      !(o->growth_factor > 1.0f) || !(o->backoff_factor > 0.0f) ||
      !(o->backoff_factor < 1.0f) || o->growth_interval < 1)
    return clt_ctx_fail(ctx, CLT_ERR_INVALID_ARGUMENT,
                        "loss scaler: init_scale %g must be positive, "
                        "growth_factor %g above 1, backoff_factor %g in "
                        "(0, 1), growth_interval %d at least 1",
                        (double)o->init_scale, (double)o->growth_factor,
                        (double)o->backoff_factor, o->growth_interval);
  clt_loss_scaler *s = calloc(1, sizeof *s);
  if (!s) return clt_ctx_fail(ctx, CLT_ERR_HOST_MEMORY, "loss scaler");
  s->ctx = ctx;
  s->opts = *o;
  s->scale = o->init_scale;
  clt_status st =
      clt_tensor_create(ctx, CLT_I32, 1, (int64_t[]){1}, &s->found);
  if (st != CLT_OK) {
    free(s);
    return st;
  }
  *out = s;
  return CLT_OK;
}

CLT_API void clt_loss_scaler_destroy(clt_loss_scaler *s) {
  if (!s) return;
  clt_tensor_destroy(s->found);
  free(s);
}

CLT_API float clt_loss_scaler_scale(const clt_loss_scaler *s) {
  return s->scale;
}

CLT_API int64_t clt_loss_scaler_skipped(const clt_loss_scaler *s) {
  return s->skipped;
}

CLT_API clt_status clt_loss_scaler_unscale(clt_loss_scaler *s,
                                           clt_tensor *grads, bool *skip) {
  *skip = false;
  if (grads->dtype != CLT_F32)
    return clt_ctx_fail(s->ctx, CLT_ERR_UNSUPPORTED,
                        "loss scaler: gradients must be f32 (the master "
                        "copy)");
  CLT_TRY(clt_tensor_fill(s->found, 0.0));
  CLT_TRY(CLT_RUN_1D(s->ctx, CLT_K_unscale_check_f32, (size_t)grads->numel,
                     KT(grads), KI(grads->numel), KF(1.0f / s->scale),
                     KT(s->found)));
  int32_t found = 0;
  CLT_TRY(clt_tensor_download(s->found, &found));
  s->steps++;
  if (found) {
    *skip = true;
    s->skipped++;
    s->scale *= s->opts.backoff_factor;
    s->clean = 0;
  } else if (++s->clean >= s->opts.growth_interval) {
    float grown = s->scale * s->opts.growth_factor;
    if (isfinite(grown)) s->scale = grown;
    s->clean = 0;
  }
  return CLT_OK;
}

CLT_API int64_t clt_loss_scaler_steps(const clt_loss_scaler *s) {
  return s->steps;
}

void clt_loss_scaler_get_state(const clt_loss_scaler *s,
                               clt_loss_scaler_state *out) {
  *out = (clt_loss_scaler_state){s->scale, s->clean, s->steps, s->skipped};
}

clt_status clt_loss_scaler_set_state(clt_loss_scaler *s,
                                     const clt_loss_scaler_state *in) {
  if (!(in->scale > 0.0) || !isfinite(in->scale) || in->scale > FLT_MAX ||
      in->clean < 0 || in->steps < 0 || in->skipped < 0 || in->skipped > in->steps)
    return clt_ctx_fail(s->ctx, CLT_ERR_FORMAT,
                        "loss scaler state: scale %g, %lld clean steps, "
                        "%lld skipped of %lld steps",
                        in->scale, (long long)in->clean,
                        (long long)in->skipped, (long long)in->steps);
  s->scale = (float)in->scale;
  /* A run resumed with a shorter growth interval grows at its next step. */
  s->clean = in->clean < s->opts.growth_interval
                 ? (int)in->clean
                 : s->opts.growth_interval - 1;
  s->steps = in->steps;
  s->skipped = in->skipped;
  return CLT_OK;
}
