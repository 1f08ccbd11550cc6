/* Optimizer updates, a run of parameter elements per work-item (FOR_RUN,
 * cl/prelude.cl), following PyTorch's definitions (torch.optim.SGD, Adam,
 * AdamW). Where clipping by global norm is on (max_norm > 0), norm_sq[0]
 * holds the sum of squares of every gradient, computed earlier in the
 * same step on the device. */

static float clip_scale(__global const float *norm_sq, int off,
                        float max_norm) {
  if (max_norm <= 0.0f) return 1.0f;
  float norm = sqrt(norm_sq[off]);
  return fmin(1.0f, max_norm / (norm + 1e-6f));
}

/* Each step comes in two kernels, the way ROUND16_VARIANTS makes the
 * rounding ones (cl/prelude.cl): CLIP_VARIANTS(NAME, (params), (arguments,
 * clip)) makes NAME and NAME_clip, which call NAME_body with clip a
 * constant 0 or 1; with 1 the body scales the gradient by clip_scale.
 * Without clipping the kernel reads no norm: a load from one address in
 * every work-item, even one whose value is not used, kept POCL 3.1 from
 * vectorizing the step (scalar sqrt and division: the MLP's Adam step
 * over 101,770 parameters took 0.31-0.41 ms on 2 AMD EPYC cores,
 * 0.14-0.23 ms vectorized); the clipped step multiplies by the same scale
 * as before. */
#define CLIP_BODY static inline __attribute__((always_inline)) void
#define CLIP_VARIANTS(NAME, PARAMS, ARGS)                                      \
  __kernel void NAME PARAMS {                                                  \
    const int clip = 0;                                                        \
    NAME##_body ARGS;                                                          \
  }                                                                            \
  __kernel void NAME##_clip PARAMS {                                           \
    const int clip = 1;                                                        \
    NAME##_body ARGS;                                                          \
  }

/* Each body takes clip_scale once an item, outside its run. first: 1 on
 * the optimizer's first step (the momentum buffer starts as the gradient
 * itself, as in PyTorch). */
CLIP_BODY sgd_step_body(__global float *p, int p_off, __global const float *g,
                        int g_off, __global float *buf, int buf_off,
                        __global const float *norm_sq, int norm_off, int n,
                        float lr, float momentum, float dampening,
                        float weight_decay, int nesterov, int first,
                        float max_norm, int run, int clip) {
  float scale = clip ? clip_scale(norm_sq, norm_off, max_norm) : 1.0f;
  FOR_RUN(i, n) {
    float w = p[p_off + i];
    float d = g[g_off + i];
    if (clip) d *= scale;
    d += weight_decay * w;
    if (momentum != 0.0f) {
      float b =
          first ? d : momentum * buf[buf_off + i] + (1.0f - dampening) * d;
      buf[buf_off + i] = b;
      d = nesterov ? d + momentum * b : b;
    }
    p[p_off + i] = w - lr * d;
  }
}
CLIP_VARIANTS(sgd_step,
              (__global float *p, int p_off, __global const float *g,
               int g_off, __global float *buf, int buf_off,
               __global const float *norm_sq, int norm_off, int n, float lr,
               float momentum, float dampening, float weight_decay,
               int nesterov, int first, float max_norm, int run),
              (p, p_off, g, g_off, buf, buf_off, norm_sq, norm_off, n, lr,
               momentum, dampening, weight_decay, nesterov, first, max_norm,
               run, clip))

/* decoupled: 1 for AdamW (weight decay applied to the weight directly),
 * 0 for Adam (weight decay added to the gradient). bias1 = 1 - beta1^t,
 * bias2 = 1 - beta2^t, from the host's step count. */
CLIP_BODY adam_step_body(__global float *p, int p_off,
                         __global const float *g, int g_off,
                         __global float *m, int m_off, __global float *v,
                         int v_off, __global const float *norm_sq,
                         int norm_off, int n, float lr, float beta1,
                         float beta2, float eps, float weight_decay,
                         int decoupled, float bias1, float bias2,
                         float max_norm, int run, int clip) {
  float scale = clip ? clip_scale(norm_sq, norm_off, max_norm) : 1.0f;
  FOR_RUN(i, n) {
    float w = p[p_off + i];
    float d = g[g_off + i];
    if (clip) d *= scale;
    if (decoupled)
      w *= 1.0f - lr * weight_decay;
    else
      d += weight_decay * w;
    float mi = beta1 * m[m_off + i] + (1.0f - beta1) * d;
    float vi = beta2 * v[v_off + i] + (1.0f - beta2) * d * d;
    m[m_off + i] = mi;
    v[v_off + i] = vi;
    float denom = sqrt(vi) / sqrt(bias2) + eps;
    p[p_off + i] = w - (lr / bias1) * mi / denom;
  }
}
CLIP_VARIANTS(adam_step,
              (__global float *p, int p_off, __global const float *g,
               int g_off, __global float *m, int m_off, __global float *v,
               int v_off, __global const float *norm_sq, int norm_off, int n,
               float lr, float beta1, float beta2, float eps,
               float weight_decay, int decoupled, float bias1, float bias2,
               float max_norm, int run),
              (p, p_off, g, g_off, m, m_off, v, v_off, norm_sq, norm_off, n,
               lr, beta1, beta2, eps, weight_decay, decoupled, bias1, bias2,
               max_norm, run, clip))

/* torch.optim.RMSprop: the gradient's running mean square
 * sq = alpha sq + (1 - alpha) d^2 (and, centered, its running mean
 * avg = alpha avg + (1 - alpha) d, the variance sq - avg^2 taken instead),
 * the step d / (sqrt(...) + eps), through a momentum buffer where
 * momentum > 0. Where momentum is 0 the kernel never touches buf, and
 * avg only when centered. The centered variance is at least 0 in exact
 * arithmetic; its rounding could make it a hair below, so it is clamped
 * where PyTorch would take the root of a negative number. */
CLIP_BODY rmsprop_step_body(__global float *p, int p_off,
                            __global const float *g, int g_off,
                            __global float *sq, int sq_off,
                            __global float *buf, int buf_off,
                            __global float *avg, int avg_off,
                            __global const float *norm_sq, int norm_off,
                            int n, float lr, float alpha, float eps,
                            float weight_decay, float momentum, int centered,
                            float max_norm, int run, int clip) {
  float scale = clip ? clip_scale(norm_sq, norm_off, max_norm) : 1.0f;
  FOR_RUN(i, n) {
    float w = p[p_off + i];
    float d = g[g_off + i];
    if (clip) d *= scale;
    d += weight_decay * w;
    float s = alpha * sq[sq_off + i] + (1.0f - alpha) * d * d;
    sq[sq_off + i] = s;
    if (centered) {
      float a = alpha * avg[avg_off + i] + (1.0f - alpha) * d;
      avg[avg_off + i] = a;
      s = fmax(s - a * a, 0.0f);
    }
    float step = d / (sqrt(s) + eps);
    if (momentum != 0.0f) {
      step += momentum * buf[buf_off + i];
      buf[buf_off + i] = step;
    }
    p[p_off + i] = w - lr * step;
  }
}
CLIP_VARIANTS(rmsprop_step,
              (__global float *p, int p_off, __global const float *g,
               int g_off, __global float *sq, int sq_off, __global float *buf,
               int buf_off, __global float *avg, int avg_off,
               __global const float *norm_sq, int norm_off, int n, float lr,
               float alpha, float eps, float weight_decay, float momentum,
               int centered, float max_norm, int run),
              (p, p_off, g, g_off, sq, sq_off, buf, buf_off, avg, avg_off,
               norm_sq, norm_off, n, lr, alpha, eps, weight_decay, momentum,
               centered, max_norm, run, clip))
