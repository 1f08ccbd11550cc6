/* Batch normalisation over N and the spatial size, per channel, as
 * PyTorch's BatchNorm1d/2d define it. Reductions run one group per channel
 * (no division per element), in one of two ways chosen
 * by measurement (nn/batchnorm.c): plane by plane, each item adding runs
 * of 16 with vload16 (one vector on a CPU device; neighbours read
 * neighbouring memory on a GPU) and then the tail; or, where `planes`,
 * each item whole planes of its own, start to end (POCL 3.1 on a 2-core
 * Xeon: a ResNet's 16-channel statistics at batch 64 in 0.14 against
 * 0.34 ms). The element-wise kernels run over (spatial position, plane),
 * so the channel is found once per item, not by two divisions per
 * element. */

/* The sums of plane[0..n) (as 16 lanes and a scalar tail) for the item
 * that takes runs first, first + step, ... */
#define BN_RUNS(n, first, step, BODY16, BODY1)                                \
  do {                                                                        \
    int body_ = (n) / 16 * 16;                                                \
    for (int s_ = (first) * 16; s_ < body_; s_ += (step) * 16) BODY16(s_);    \
    for (int s_ = body_ + (first); s_ < (n); s_ += (step)) BODY1(s_);         \
  } while (0)

/* Item lid's share of a channel's N planes: every plane, runs lid,
 * lid + GROUP_ITEMS, ... of each; or where planes, the whole planes lid,
 * lid + GROUP_ITEMS, ... (the host sizes these groups to the runs or
 * planes there are: ops/norm.c channel_group). */
#define BN_PLANE_LOOP(n, planes, lid, N)                                      \
  for (int n = (planes) ? (lid) : 0; n < (N); n += (planes) ? GROUP_ITEMS : 1)
#define BN_ITEM_RUNS(HW, planes, lid, BODY16, BODY1)                          \
  BN_RUNS(HW, (planes) ? 0 : (lid), (planes) ? 1 : GROUP_ITEMS, BODY16, BODY1)

/* Channel c's mean (.x) and biased variance (.y) of x over n and s, to
 * every item of its group; two passes (mean, then squared deviations) for
 * accuracy. */
static inline __attribute__((always_inline)) float2
bn_moments(__local float *scratch, __global const float *x, int x_off, int N,
           int C, int HW, int planes, int c, int lid) {
  float16 s16 = 0.0f;
  float s = 0.0f;
  BN_PLANE_LOOP(n, planes, lid, N) {
    __global const float *plane = x + x_off + (n * C + c) * HW;
#define ADD16(at) s16 += vload16(0, plane + (at))
#define ADD1(at) s += plane[at]
    BN_ITEM_RUNS(HW, planes, lid, ADD16, ADD1);
#undef ADD16
#undef ADD1
  }
  float mu = group_sum(scratch, s + sum16(s16)) / (float)(N * HW);
  float16 q16 = 0.0f;
  float q = 0.0f;
  BN_PLANE_LOOP(n, planes, lid, N) {
    __global const float *plane = x + x_off + (n * C + c) * HW;
#define ADD16(at)                                                             \
  {                                                                           \
    float16 d = vload16(0, plane + (at)) - mu;                                \
    q16 += d * d;                                                             \
  }
#define ADD1(at)                                                              \
  {                                                                           \
    float d = plane[at] - mu;                                                 \
    q += d * d;                                                               \
  }
    BN_ITEM_RUNS(HW, planes, lid, ADD16, ADD1);
#undef ADD16
#undef ADD1
  }
  return (float2)(mu, group_sum(scratch, q + sum16(q16)) / (float)(N * HW));
}

#if !CLT_ROUND16_PROGRAM
/* mean[c] and the biased variance var[c] of x (bn_moments). */
__kernel void bn_stats(__global float *mean, int mean_off,
                       __global float *var, int var_off,
                       __global const float *x, int x_off, int N, int C,
                       int HW, int planes) {
  __local float scratch[CLT_WG];
  int c = get_group_id(0), lid = get_local_id(0);
  float2 m = bn_moments(scratch, x, x_off, N, C, HW, planes, c, lid);
  if (lid == 0) {
    mean[mean_off + c] = m.x;
    var[var_off + c] = m.y;
  }
}
#endif

/* running = (1 - momentum) running + momentum batch, with the unbiased
 * variance (M / (M - 1)), for channel c; num_batches_tracked + 1 with
 * channel 0's. */
static void bn_running(__global float *rmean, int rmean_off,
                       __global float *rvar, int rvar_off,
                       __global float *tracked, int tracked_off, int c,
                       float mu, float v, int M, float momentum) {
  float unbiased = M > 1 ? v * (float)M / (float)(M - 1) : v;
  rmean[rmean_off + c] =
      (1.0f - momentum) * rmean[rmean_off + c] + momentum * mu;
  rvar[rvar_off + c] = (1.0f - momentum) * rvar[rvar_off + c] +
                       momentum * unbiased;
  if (c == 0) tracked[tracked_off] += 1.0f;
}

#if !CLT_ROUND16_PROGRAM
__kernel void bn_update_running(__global float *rmean, int rmean_off,
                                __global float *rvar, int rvar_off,
                                __global float *tracked, int tracked_off,
                                __global const float *mean, int mean_off,
                                __global const float *var, int var_off, int C,
                                int M, float momentum) {
  int c = get_global_id(0);
  if (c >= C) return;
  bn_running(rmean, rmean_off, rvar, rvar_off, tracked, tracked_off, c,
             mean[mean_off + c], var[var_off + c], M, momentum);
}
#endif

/* The element-wise passes come in two layouts, measured per device by the
 * layer (nn/batchnorm.c): work-item (s, p) for position s of plane
 * p = n * C + c, neighbouring items on neighbouring values (a GPU's
 * coalesced loads), or work-item (r, p) for the run of 16 positions
 * 16 r .. 16 r + 15 of plane p, one vector where the plane holds them all
 * (POCL leaves the first's two-dimensional item loops scalar: a ResNet's
 * 64x16x784 forward in 0.79 ms against 0.17 ms in runs, on a 2-core
 * Xeon). Both compute each value by the same expression. */

/* The forward's value of x in channel c, a fused ReLU's select after it
 * (relu && !(v > 0) gives 0, as the ReLU layer's select: NaN too); relu:
 * a ReLU fused after the layer (nn/batchnorm.c; layer normalisation's
 * kernels below use it too). */
#define BN_APPLY(xv) (((xv) - mu) * k + be)
#define BN_RELU(v) (relu && !((v) > 0.0f) ? 0.0f : (v))

#define BN_APPLY_PARAMS                                                       \
  (__global float *y, int y_off, __global const float *x, int x_off,          \
   __global const float *mean, int mean_off, __global const float *var,       \
   int var_off, __global const float *gamma, int gamma_off,                   \
   __global const float *beta, int beta_off, int N, int C, int HW, float eps, \
   int relu, ROUND16_PARAMS)
#define BN_APPLY_ARGS                                                         \
  (y, y_off, x, x_off, mean, mean_off, var, var_off, gamma, gamma_off, beta,  \
   beta_off, N, C, HW, eps, relu, ROUND16_ARGS)

/* Channel c's factors, for BN_APPLY. */
#define BN_APPLY_FACTORS(c)                                                   \
  float k = rsqrt(var[var_off + (c)] + eps) * gamma[gamma_off + (c)];        \
  float mu = mean[mean_off + (c)], be = beta[beta_off + (c)]

ROUND16_BODY bn_apply_body(__global float *y, int y_off,
                           __global const float *x, int x_off,
                           __global const float *mean, int mean_off,
                           __global const float *var, int var_off,
                           __global const float *gamma, int gamma_off,
                           __global const float *beta, int beta_off, int N,
                           int C, int HW, float eps, int relu, ROUND16_PARAMS,
                           int round16) {
  int s = get_global_id(0), p = get_global_id(1);
  if (s >= HW || p >= N * C) return;
  int c = p % C, i = p * HW + s;
  BN_APPLY_FACTORS(c);
  float v = BN_APPLY(x[x_off + i]);
  STORE16(y, y_off, i, BN_RELU(v));
}
ROUND16_VARIANTS(bn_apply, BN_APPLY_PARAMS, BN_APPLY_ARGS)

#if !CLT_ROUND16_PROGRAM
/* Evaluation's batch norm folded into the convolution before it
 * (ops.h clt_bn_fold): a work-item per weight, wo = w k of its filter,
 * then one per filter, bo = (b - mean) k + beta (b 0 where has_b is 0),
 * k as BN_APPLY_FACTORS computes it. */
__kernel void bn_fold(__global float *wo, int wo_off, __global float *bo,
                      int bo_off, __global const float *w, int w_off,
                      __global const float *b, int b_off,
                      __global const float *mean, int mean_off,
                      __global const float *var, int var_off,
                      __global const float *gamma, int gamma_off,
                      __global const float *beta, int beta_off, int F,
                      int per, int has_b, float eps) {
  int i = get_global_id(0);
  if (i >= F * per + F) return;
  int f = i < F * per ? i / per : i - F * per;
  BN_APPLY_FACTORS(f);
  if (i < F * per) {
    wo[wo_off + i] = w[w_off + i] * k;
    return;
  }
  bo[bo_off + f] = BN_APPLY(has_b ? b[b_off + f] : 0.0f);
}
#endif

/* The same in runs of 16. */
ROUND16_BODY bn_apply16_body(__global float *y, int y_off,
                             __global const float *x, int x_off,
                             __global const float *mean, int mean_off,
                             __global const float *var, int var_off,
                             __global const float *gamma, int gamma_off,
                             __global const float *beta, int beta_off, int N,
                             int C, int HW, float eps, int relu,
                             ROUND16_PARAMS, int round16) {
  int s = get_global_id(0) * 16, p = get_global_id(1);
  if (s >= HW || p >= N * C) return;
  int c = p % C, i = p * HW + s;
  BN_APPLY_FACTORS(c);
  if (s + 16 <= HW) {
    float16 v = BN_APPLY(vload16(0, x + x_off + i));
    if (relu) v = select((float16)0.0f, v, v > 0.0f);
    vstore16(v, 0, y + y_off + i);
    ROUND16_RUN(y + y_off + i, 16, i);
    return;
  }
  for (int t = i; t < (p + 1) * HW; t++) {
    float v = BN_APPLY(x[x_off + t]);
    STORE16(y, y_off, t, BN_RELU(v));
  }
}
ROUND16_VARIANTS(bn_apply16, BN_APPLY_PARAMS, BN_APPLY_ARGS)

/* The training forward in one kernel (a way the layer measures against
 * bn_stats, bn_update_running and an apply kernel, nn/batchnorm.c): group
 * c computes channel c's statistics as bn_stats does, in the same
 * partition of its planes (planes: whole planes an item), writes them and
 * the running averages' update, then normalises the values each item
 * summed, while they are still in its core's cache on a CPU. One launch
 * instead of three, and one pass over x fewer from memory. */
ROUND16_BODY bn_train_forward_body(
    __local float *scratch, __global float *y, int y_off,
    __global const float *x, int x_off, __global float *mean, int mean_off,
    __global float *var, int var_off, __global const float *gamma,
    int gamma_off, __global const float *beta, int beta_off,
    __global float *rmean, int rmean_off, __global float *rvar,
    int rvar_off, __global float *tracked, int tracked_off, int N, int C,
    int HW, float eps, float momentum, int relu, int planes, ROUND16_PARAMS,
    int round16) {
  int c = get_group_id(0), lid = get_local_id(0);
  float2 m = bn_moments(scratch, x, x_off, N, C, HW, planes, c, lid);
  if (lid == 0) {
    mean[mean_off + c] = m.x;
    var[var_off + c] = m.y;
    bn_running(rmean, rmean_off, rvar, rvar_off, tracked, tracked_off, c, m.x,
               m.y, N * HW, momentum);
  }
  /* BN_APPLY_FACTORS' values, from the statistics just computed */
  float k = rsqrt(m.y + eps) * gamma[gamma_off + c];
  float mu = m.x, be = beta[beta_off + c];
  BN_PLANE_LOOP(n, planes, lid, N) {
    int at = (n * C + c) * HW;
#define APPLY16(s)                                                            \
  {                                                                           \
    float16 v = BN_APPLY(vload16(0, x + x_off + at + (s)));                   \
    if (relu) v = select((float16)0.0f, v, v > 0.0f);                         \
    vstore16(v, 0, y + y_off + at + (s));                                     \
    ROUND16_RUN(y + y_off + at + (s), 16, at + (s));                          \
  }
#define APPLY1(s)                                                             \
  {                                                                           \
    float v = BN_APPLY(x[x_off + at + (s)]);                                  \
    STORE16(y, y_off, at + (s), BN_RELU(v));                                  \
  }
    BN_ITEM_RUNS(HW, planes, lid, APPLY16, APPLY1);
#undef APPLY16
#undef APPLY1
  }
}
ROUND16_GROUP_VARIANTS(
    bn_train_forward,
    (__global float *y, int y_off, __global const float *x, int x_off,
     __global float *mean, int mean_off, __global float *var, int var_off,
     __global const float *gamma, int gamma_off, __global const float *beta,
     int beta_off, __global float *rmean, int rmean_off, __global float *rvar,
     int rvar_off, __global float *tracked, int tracked_off, int N, int C,
     int HW, float eps, float momentum, int relu, int planes, ROUND16_PARAMS),
    (scratch, y, y_off, x, x_off, mean, mean_off, var, var_off, gamma,
     gamma_off, beta, beta_off, rmean, rmean_off, rvar, rvar_off, tracked,
     tracked_off, N, C, HW, eps, momentum, relu, planes, ROUND16_ARGS))
#undef BN_APPLY
#undef BN_APPLY_PARAMS
#undef BN_APPLY_ARGS
#undef BN_APPLY_FACTORS

/* dy through a fused ReLU whose output is o: dy where o > 0, else 0 (as
 * the ReLU layer's backward: dy times 1 or 0); layer normalisation's
 * kernels below use them too. */
#define BN_MASK16(g, o)                                                       \
  ((g) * select((float16)0.0f, (float16)1.0f, (o) > 0.0f))
#define BN_MASK1(g, o) ((g) * ((o) > 0.0f ? 1.0f : 0.0f))

/* Channel c's sum of dy * xhat (.x: dgamma) and of dy (.y: dbeta), to
 * every item of its group; where relu, dy through the fused ReLU whose
 * output is out. */
static inline __attribute__((always_inline)) float2
bn_grad_sums(__local float *scratch, __global const float *dy, int dy_off,
             __global const float *x, int x_off, __global const float *out,
             int out_off, float mu, float inv, int N, int C, int HW,
             int relu, int planes, int c, int lid) {
  float16 sg16 = 0.0f, sb16 = 0.0f;
  float sg = 0.0f, sb = 0.0f;
  BN_PLANE_LOOP(n, planes, lid, N) {
    int at = (n * C + c) * HW;
    __global const float *gp = dy + dy_off + at, *xp = x + x_off + at;
    __global const float *op = out + out_off + at;
#define ADD16(s)                                                              \
  {                                                                           \
    float16 g = vload16(0, gp + (s));                                         \
    if (relu) g = BN_MASK16(g, vload16(0, op + (s)));                         \
    sb16 += g;                                                                \
    sg16 += g * ((vload16(0, xp + (s)) - mu) * inv);                          \
  }
#define ADD1(s)                                                               \
  {                                                                           \
    float g = gp[s];                                                          \
    if (relu) g = BN_MASK1(g, op[s]);                                         \
    sb += g;                                                                  \
    sg += g * ((xp[s] - mu) * inv);                                           \
  }
    BN_ITEM_RUNS(HW, planes, lid, ADD16, ADD1);
#undef ADD16
#undef ADD1
  }
  float tg = group_sum(scratch, sg + sum16(sg16));
  return (float2)(tg, group_sum(scratch, sb + sum16(sb16)));
}

#if !CLT_ROUND16_PROGRAM
/* dgamma[c] = sum dy * xhat, dbeta[c] = sum dy. */
__kernel void bn_backward_reduce(__global float *dgamma, int dgamma_off,
                                 __global float *dbeta, int dbeta_off,
                                 __global const float *dy, int dy_off,
                                 __global const float *x, int x_off,
                                 __global const float *mean, int mean_off,
                                 __global const float *var, int var_off,
                                 int N, int C, int HW, float eps,
                                 int planes) {
  __local float scratch[CLT_WG];
  int c = get_group_id(0), lid = get_local_id(0);
  float mu = mean[mean_off + c], inv = rsqrt(var[var_off + c] + eps);
  float2 t = bn_grad_sums(scratch, dy, dy_off, x, x_off, x, x_off, mu, inv, N,
                          C, HW, 0, planes, c, lid);
  if (lid == 0) {
    dgamma[dgamma_off + c] = t.x;
    dbeta[dbeta_off + c] = t.y;
  }
}
#endif

/* Training mode: dx = gamma inv / M (M dy - dbeta - xhat dgamma).
 * Evaluation mode (batch statistics not used): dx = gamma inv dy. In both
 * layouts (above); selects, not branches: the modes stay out of POCL's
 * vectorised item loops. */
#define BN_GRAD(xv, d)                                                        \
  (training ? k / M * (M * (d) - db - ((xv) - mu) * inv * dg) : k * (d))

#define BN_BACKWARD_PARAMS                                                    \
  (__global float *dx, int dx_off, __global const float *dy, int dy_off,      \
   __global const float *x, int x_off, __global const float *mean,            \
   int mean_off, __global const float *var, int var_off,                      \
   __global const float *gamma, int gamma_off, __global const float *dgamma,  \
   int dgamma_off, __global const float *dbeta, int dbeta_off, int N, int C,  \
   int HW, float eps, int training, int accumulate, ROUND16_PARAMS)
#define BN_BACKWARD_ARGS                                                      \
  (dx, dx_off, dy, dy_off, x, x_off, mean, mean_off, var, var_off, gamma,     \
   gamma_off, dgamma, dgamma_off, dbeta, dbeta_off, N, C, HW, eps, training,  \
   accumulate, ROUND16_ARGS)

/* Channel c's factors, for BN_GRAD. */
#define BN_GRAD_FACTORS(c)                                                    \
  float inv = rsqrt(var[var_off + (c)] + eps);                                \
  float k = gamma[gamma_off + (c)] * inv;                                     \
  float M = (float)(N * HW);                                                  \
  float mu = mean[mean_off + (c)], db = dbeta[dbeta_off + (c)];               \
  float dg = dgamma[dgamma_off + (c)]

ROUND16_BODY bn_backward_apply_body(__global float *dx, int dx_off,
                                    __global const float *dy, int dy_off,
                                    __global const float *x, int x_off,
                                    __global const float *mean, int mean_off,
                                    __global const float *var, int var_off,
                                    __global const float *gamma, int gamma_off,
                                    __global const float *dgamma,
                                    int dgamma_off, __global const float *dbeta,
                                    int dbeta_off, int N, int C, int HW,
                                    float eps, int training, int accumulate,
                                    ROUND16_PARAMS, int round16) {
  int s = get_global_id(0), p = get_global_id(1);
  if (s >= HW || p >= N * C) return;
  int c = p % C, i = p * HW + s;
  BN_GRAD_FACTORS(c);
  float g = BN_GRAD(x[x_off + i], dy[dy_off + i]);
  STORE16(dx, dx_off, i, accumulate ? dx[dx_off + i] + g : g);
}
ROUND16_VARIANTS(bn_backward_apply, BN_BACKWARD_PARAMS, BN_BACKWARD_ARGS)

/* The same in runs of 16. */
ROUND16_BODY bn_backward_apply16_body(
    __global float *dx, int dx_off, __global const float *dy, int dy_off,
    __global const float *x, int x_off, __global const float *mean,
    int mean_off, __global const float *var, int var_off,
    __global const float *gamma, int gamma_off, __global const float *dgamma,
    int dgamma_off, __global const float *dbeta, int dbeta_off, int N, int C,
    int HW, float eps, int training, int accumulate, ROUND16_PARAMS,
    int round16) {
  int s = get_global_id(0) * 16, p = get_global_id(1);
  if (s >= HW || p >= N * C) return;
  int c = p % C, i = p * HW + s;
  BN_GRAD_FACTORS(c);
  if (s + 16 <= HW) {
    float16 g = BN_GRAD(vload16(0, x + x_off + i), vload16(0, dy + dy_off + i));
    if (accumulate) g += vload16(0, dx + dx_off + i);
    vstore16(g, 0, dx + dx_off + i);
    ROUND16_RUN(dx + dx_off + i, 16, i);
    return;
  }
  for (int t = i; t < (p + 1) * HW; t++) {
    float g = BN_GRAD(x[x_off + t], dy[dy_off + t]);
    STORE16(dx, dx_off, t, accumulate ? dx[dx_off + t] + g : g);
  }
}
ROUND16_VARIANTS(bn_backward_apply16, BN_BACKWARD_PARAMS, BN_BACKWARD_ARGS)

/* The training backward in one kernel (measured as bn_train_forward):
 * group c sums channel c's dgamma and dbeta as bn_backward_reduce does,
 * writes them, then computes dx from the values each item summed. relu:
 * the forward's fused ReLU, its gradient taken here (dy where out > 0,
 * else 0, as the ReLU layer's backward: dy times 1 or 0) instead of by a
 * pass of its own that rewrites dy. */
ROUND16_BODY bn_train_backward_body(
    __local float *scratch, __global float *dx, int dx_off,
    __global float *dgamma, int dgamma_off, __global float *dbeta,
    int dbeta_off, __global const float *dy, int dy_off,
    __global const float *x, int x_off, __global const float *out,
    int out_off, __global const float *mean, int mean_off,
    __global const float *var, int var_off, __global const float *gamma,
    int gamma_off, int N, int C, int HW, float eps, int relu, int accumulate,
    int planes, ROUND16_PARAMS, int round16) {
  int c = get_group_id(0), lid = get_local_id(0);
  float mu = mean[mean_off + c], inv = rsqrt(var[var_off + c] + eps);
  float2 t = bn_grad_sums(scratch, dy, dy_off, x, x_off, out, out_off, mu,
                          inv, N, C, HW, relu, planes, c, lid);
  float dg = t.x, db = t.y;
  if (lid == 0) {
    dgamma[dgamma_off + c] = dg;
    dbeta[dbeta_off + c] = db;
  }
  /* BN_GRAD_FACTORS' values, training */
  float k = gamma[gamma_off + c] * inv;
  float M = (float)(N * HW);
  const int training = 1;
  BN_PLANE_LOOP(n, planes, lid, N) {
    int at = (n * C + c) * HW;
    __global const float *gp = dy + dy_off + at, *xp = x + x_off + at;
    __global const float *op = out + out_off + at;
#define APPLY16(s)                                                            \
  {                                                                           \
    float16 g = vload16(0, gp + (s));                                         \
    if (relu) g = BN_MASK16(g, vload16(0, op + (s)));                         \
    g = BN_GRAD(vload16(0, xp + (s)), g);                                     \
    if (accumulate) g += vload16(0, dx + dx_off + at + (s));                  \
    vstore16(g, 0, dx + dx_off + at + (s));                                   \
    ROUND16_RUN(dx + dx_off + at + (s), 16, at + (s));                        \
  }
#define APPLY1(s)                                                             \
  {                                                                           \
    float g = gp[s];                                                          \
    if (relu) g = BN_MASK1(g, op[s]);                                         \
    g = BN_GRAD(xp[s], g);                                                    \
    STORE16(dx, dx_off, at + (s), accumulate ? dx[dx_off + at + (s)] + g : g); \
  }
    BN_ITEM_RUNS(HW, planes, lid, APPLY16, APPLY1);
#undef APPLY16
#undef APPLY1
  }
}
ROUND16_GROUP_VARIANTS(
    bn_train_backward,
    (__global float *dx, int dx_off, __global float *dgamma, int dgamma_off,
     __global float *dbeta, int dbeta_off, __global const float *dy,
     int dy_off, __global const float *x, int x_off,
     __global const float *out, int out_off, __global const float *mean,
     int mean_off, __global const float *var, int var_off,
     __global const float *gamma, int gamma_off, int N, int C, int HW,
     float eps, int relu, int accumulate, int planes, ROUND16_PARAMS),
    (scratch, dx, dx_off, dgamma, dgamma_off, dbeta, dbeta_off, dy, dy_off, x,
     x_off, out, out_off, mean, mean_off, var, var_off, gamma, gamma_off, N,
     C, HW, eps, relu, accumulate, planes, ROUND16_ARGS))
#undef BN_GRAD
#undef BN_GRAD_FACTORS
#undef BN_BACKWARD_PARAMS
#undef BN_BACKWARD_ARGS

#if !CLT_ROUND16_PROGRAM
/* The split reductions (a way measured against the kernels above, which
 * run one group per channel: on a GPU a ResNet's 16 channels kept 16 of
 * 132 multiprocessors busy and took half the step). Group (c, j) of a
 * C x J range reduces planes [j chunk, min(N, (j + 1) chunk)) of channel
 * c, item lid the elements lid, lid + CLT_WG, ... of those planes taken
 * as one run (neighbouring items read neighbouring memory); a second
 * kernel combines the J parts of each channel. */

/* Element e of the run: plane n, position s; the next item's e + CLT_WG
 * found by adding, not dividing. */
#define BN_SPLIT_LOOP(n0, n1, HW, lid, BODY)                                  \
  do {                                                                        \
    int n_ = (n0) + (lid) / (HW), s_ = (lid) % (HW);                          \
    while (n_ < (n1)) {                                                       \
      BODY(n_, s_);                                                           \
      s_ += CLT_WG;                                                           \
      while (s_ >= (HW)) {                                                    \
        s_ -= (HW);                                                           \
        n_++;                                                                 \
      }                                                                       \
    }                                                                         \
  } while (0)

/* part[c J + j]: the mean of channel c over the chunk, part[(C + c) J + j]
 * the sum of squared deviations from it (two passes, as bn_stats). */
__kernel void bn_stats_part(__global float *part, int part_off,
                            __global const float *x, int x_off, int N, int C,
                            int HW, int chunk) {
  __local float scratch[CLT_WG];
  int c = get_group_id(0), j = get_group_id(1), J = get_num_groups(1);
  int lid = get_local_id(0);
  int n0 = j * chunk, n1 = min(N, n0 + chunk);
  __global const float *xc = x + x_off + c * HW;
  float s = 0.0f;
#define ADD(n, at) s += xc[(n) * C * HW + (at)]
  BN_SPLIT_LOOP(n0, n1, HW, lid, ADD);
#undef ADD
  float count = (float)((n1 - n0) * HW);
  float mu = group_sum(scratch, s) / count;
  float q = 0.0f;
#define ADD(n, at)                                                            \
  {                                                                           \
    float d = xc[(n) * C * HW + (at)] - mu;                                   \
    q += d * d;                                                               \
  }
  BN_SPLIT_LOOP(n0, n1, HW, lid, ADD);
#undef ADD
  float m2 = group_sum(scratch, q);
  if (lid == 0) {
    part[part_off + c * J + j] = mu;
    part[part_off + (C + c) * J + j] = m2;
  }
}

/* Item c: the mean and biased variance of channel c from its J parts
 * (Chan et al.: the squared deviations of each part from its own mean,
 * plus each part's count times its mean's squared deviation). */
__kernel void bn_stats_combine(__global float *mean, int mean_off,
                               __global float *var, int var_off,
                               __global const float *part, int part_off,
                               int N, int C, int HW, int chunk, int J) {
  int c = get_global_id(0);
  if (c >= C) return;
  __global const float *pm = part + part_off + c * J;
  __global const float *pq = part + part_off + (C + c) * J;
  float total = (float)(N * HW), mu = 0.0f;
  for (int j = 0; j < J; j++)
    mu += pm[j] * (float)((min(N, (j + 1) * chunk) - j * chunk) * HW);
  mu /= total;
  float q = 0.0f;
  for (int j = 0; j < J; j++) {
    float d = pm[j] - mu;
    q += pq[j] + d * d * (float)((min(N, (j + 1) * chunk) - j * chunk) * HW);
  }
  mean[mean_off + c] = mu;
  var[var_off + c] = q / total;
}

/* part[c J + j] = sum over the chunk of dy * xhat, part[(C + c) J + j] =
 * sum of dy. */
__kernel void bn_backward_part(__global float *part, int part_off,
                               __global const float *dy, int dy_off,
                               __global const float *x, int x_off,
                               __global const float *mean, int mean_off,
                               __global const float *var, int var_off, int N,
                               int C, int HW, float eps, int chunk) {
  __local float scratch[CLT_WG];
  int c = get_group_id(0), j = get_group_id(1), J = get_num_groups(1);
  int lid = get_local_id(0);
  int n0 = j * chunk, n1 = min(N, n0 + chunk);
  float mu = mean[mean_off + c], inv = rsqrt(var[var_off + c] + eps);
  __global const float *gc = dy + dy_off + c * HW, *xc = x + x_off + c * HW;
  float sg = 0.0f, sb = 0.0f;
#define ADD(n, at)                                                            \
  {                                                                           \
    int i_ = (n) * C * HW + (at);                                             \
    float g = gc[i_];                                                         \
    sb += g;                                                                  \
    sg += g * ((xc[i_] - mu) * inv);                                          \
  }
  BN_SPLIT_LOOP(n0, n1, HW, lid, ADD);
#undef ADD
  float tg = group_sum(scratch, sg), tb = group_sum(scratch, sb);
  if (lid == 0) {
    part[part_off + c * J + j] = tg;
    part[part_off + (C + c) * J + j] = tb;
  }
}

/* Item c: dgamma[c] and dbeta[c], the sums of channel c's J parts. */
__kernel void bn_backward_combine(__global float *dgamma, int dgamma_off,
                                  __global float *dbeta, int dbeta_off,
                                  __global const float *part, int part_off,
                                  int C, int J) {
  int c = get_global_id(0);
  if (c >= C) return;
  float tg = 0.0f, tb = 0.0f;
  for (int j = 0; j < J; j++) {
    tg += part[part_off + c * J + j];
    tb += part[part_off + (C + c) * J + j];
  }
  dgamma[dgamma_off + c] = tg;
  dbeta[dbeta_off + c] = tb;
}
#endif

#if !CLT_ROUND16_PROGRAM
/* Layer normalisation (nn/layernorm.c) as torch.nn.LayerNorm over a
 * sample's every value: sample n's D values x[n, 0..D) normalised by
 * their own mean and biased variance, then scaled and shifted element by
 * element, y = (x - mean) * rstd * gamma + beta, rstd = 1 / sqrt(var +
 * eps). One group per sample, of CLT_WG items or (ops/norm.c ln_group)
 * as many as have values or runs; two passes for the statistics, as
 * bn_moments. The mean and rstd are kept for the backward. Two layouts,
 * chosen by measurement (nn/layernorm.c): each item taking the values
 * lid, lid + GROUP_ITEMS, ... (runs16 0: neighbouring items read
 * neighbouring memory on a GPU), or runs of 16 values with vload16, lid,
 * lid + GROUP_ITEMS, ... and then the tail (runs16 1: one vector on a CPU
 * device, where POCL leaves the first layout's strided loops scalar). The
 * layouts' sums differ in order, so their last bits may. relu: a ReLU
 * after the layer done by it (nn/layernorm.c's fused_relu): the forward
 * writes max(y, 0) (BN_RELU), the backward takes dy through it from the
 * output it wrote (BN_MASK16, BN_MASK1), as the ReLU layer would. */
#define LN_LOOP(D, lid, runs16, BODY16, BODY1)                                \
  do {                                                                        \
    if (runs16)                                                               \
      BN_RUNS(D, lid, GROUP_ITEMS, BODY16, BODY1);                            \
    else                                                                      \
      for (int i_ = (lid); i_ < (D); i_ += GROUP_ITEMS) BODY1(i_);            \
  } while (0)

static inline __attribute__((always_inline)) void
ln_forward_body(__local float *scratch, __global float *y, int y_off,
                __global float *mean, int mean_off, __global float *rstd,
                int rstd_off, __global const float *x, int x_off,
                __global const float *gamma, int gamma_off,
                __global const float *beta, int beta_off, int D, float eps,
                int relu, const int runs16) {
  int n = get_group_id(0), lid = get_local_id(0);
  __global const float *row = x + x_off + n * D;
  __global const float *gm = gamma + gamma_off, *bt = beta + beta_off;
  __global float *out = y + y_off + n * D;
  float16 s16 = 0.0f;
  float s = 0.0f;
#define ADD16(at) s16 += vload16(0, row + (at))
#define ADD1(at) s += row[at]
  LN_LOOP(D, lid, runs16, ADD16, ADD1);
#undef ADD16
#undef ADD1
  float mu = group_sum(scratch, s + sum16(s16)) / (float)D;
  float16 q16 = 0.0f;
  float q = 0.0f;
#define ADD16(at)                                                             \
  {                                                                           \
    float16 d = vload16(0, row + (at)) - mu;                                  \
    q16 += d * d;                                                             \
  }
#define ADD1(at)                                                              \
  {                                                                           \
    float d = row[at] - mu;                                                   \
    q += d * d;                                                               \
  }
  LN_LOOP(D, lid, runs16, ADD16, ADD1);
#undef ADD16
#undef ADD1
  float r = rsqrt(group_sum(scratch, q + sum16(q16)) / (float)D + eps);
#define PUT16(at)                                                             \
  {                                                                           \
    float16 v = (vload16(0, row + (at)) - mu) * r * vload16(0, gm + (at)) +   \
                vload16(0, bt + (at));                                        \
    if (relu) v = select((float16)0.0f, v, v > 0.0f);                         \
    vstore16(v, 0, out + (at));                                               \
  }
#define PUT1(at) out[at] = BN_RELU((row[at] - mu) * r * gm[at] + bt[at])
  LN_LOOP(D, lid, runs16, PUT16, PUT1);
#undef PUT16
#undef PUT1
  if (lid == 0) {
    mean[mean_off + n] = mu;
    rstd[rstd_off + n] = r;
  }
}

#define LN_FORWARD_PARAMS                                                     \
  (__global float *y, int y_off, __global float *mean, int mean_off,          \
   __global float *rstd, int rstd_off, __global const float *x, int x_off,    \
   __global const float *gamma, int gamma_off, __global const float *beta,    \
   int beta_off, int D, float eps, int relu)
#define LN_FORWARD_ARGS                                                       \
  (scratch, y, y_off, mean, mean_off, rstd, rstd_off, x, x_off, gamma,        \
   gamma_off, beta, beta_off, D, eps, relu, runs16)
__kernel void ln_forward LN_FORWARD_PARAMS {
  __local float scratch[CLT_WG];
  const int runs16 = 0;
  ln_forward_body LN_FORWARD_ARGS;
}
__kernel void ln_forward16 LN_FORWARD_PARAMS {
  __local float scratch[CLT_WG];
  const int runs16 = 1;
  ln_forward_body LN_FORWARD_ARGS;
}

/* dy at value `at` of the sample (gr, its output yr), through the fused
 * ReLU where relu. */
#define LN_DY16(at)                                                           \
  (relu ? BN_MASK16(vload16(0, gr + (at)), vload16(0, yr + (at)))             \
        : vload16(0, gr + (at)))
#define LN_DY1(at) (relu ? BN_MASK1(gr[at], yr[at]) : gr[at])

/* Sample n's input gradient: with g = dy * gamma and xhat = (x - mean) *
 * rstd, dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), written or
 * (accumulate) added. One group per sample, in ln_forward's layouts. */
static inline __attribute__((always_inline)) void
ln_backward_data_body(__local float *scratch, __global float *dx, int dx_off,
                      __global const float *dy, int dy_off,
                      __global const float *x, int x_off,
                      __global const float *mean, int mean_off,
                      __global const float *rstd, int rstd_off,
                      __global const float *gamma, int gamma_off,
                      __global const float *y, int y_off, int D, int relu,
                      int accumulate, const int runs16) {
  int n = get_group_id(0), lid = get_local_id(0);
  __global const float *xr = x + x_off + n * D, *gr = dy + dy_off + n * D;
  __global const float *yr = y + y_off + n * D;
  __global const float *gm = gamma + gamma_off;
  __global float *out = dx + dx_off + n * D;
  float mu = mean[mean_off + n], r = rstd[rstd_off + n];
  float16 sg16 = 0.0f, sgx16 = 0.0f;
  float sg = 0.0f, sgx = 0.0f;
#define ADD16(at)                                                             \
  {                                                                           \
    float16 g = LN_DY16(at) * vload16(0, gm + (at));                          \
    sg16 += g;                                                                \
    sgx16 += g * ((vload16(0, xr + (at)) - mu) * r);                          \
  }
#define ADD1(at)                                                              \
  {                                                                           \
    float g = LN_DY1(at) * gm[at];                                            \
    sg += g;                                                                  \
    sgx += g * ((xr[at] - mu) * r);                                           \
  }
  LN_LOOP(D, lid, runs16, ADD16, ADD1);
#undef ADD16
#undef ADD1
  float a = group_sum(scratch, sg + sum16(sg16)) / (float)D;
  float b = group_sum(scratch, sgx + sum16(sgx16)) / (float)D;
#define PUT16(at)                                                             \
  {                                                                           \
    float16 g = LN_DY16(at) * vload16(0, gm + (at));                          \
    float16 v = r * (g - a - (vload16(0, xr + (at)) - mu) * r * b);           \
    if (accumulate) v += vload16(0, out + (at));                              \
    vstore16(v, 0, out + (at));                                               \
  }
#define PUT1(at)                                                              \
  {                                                                           \
    float g = LN_DY1(at) * gm[at];                                            \
    float v = r * (g - a - (xr[at] - mu) * r * b);                            \
    out[at] = accumulate ? out[at] + v : v;                                   \
  }
  LN_LOOP(D, lid, runs16, PUT16, PUT1);
#undef PUT16
#undef PUT1
}

#define LN_BACKWARD_PARAMS                                                    \
  (__global float *dx, int dx_off, __global const float *dy, int dy_off,      \
   __global const float *x, int x_off, __global const float *mean,            \
   int mean_off, __global const float *rstd, int rstd_off,                    \
   __global const float *gamma, int gamma_off, __global const float *y,       \
   int y_off, int D, int relu, int accumulate)
#define LN_BACKWARD_ARGS                                                      \
  (scratch, dx, dx_off, dy, dy_off, x, x_off, mean, mean_off, rstd, rstd_off, \
   gamma, gamma_off, y, y_off, D, relu, accumulate, runs16)
__kernel void ln_backward_data LN_BACKWARD_PARAMS {
  __local float scratch[CLT_WG];
  const int runs16 = 0;
  ln_backward_data_body LN_BACKWARD_ARGS;
}
__kernel void ln_backward_data16 LN_BACKWARD_PARAMS {
  __local float scratch[CLT_WG];
  const int runs16 = 1;
  ln_backward_data_body LN_BACKWARD_ARGS;
}

/* Value i's dgamma and dbeta: the sums over samples n0..n1 of dy * xhat
 * and of dy at element i, written or (accumulate) added: the launches
 * that cut the batch into parts where the device's loops are capped add
 * into the first's. ln_backward_params' item, and ln_backward_params16's
 * values past the last whole run. */
#define LN_PARAM_PARAMS                                                       \
  __global float *dgamma, int dgamma_off, __global float *dbeta,              \
      int dbeta_off, __global const float *dy, int dy_off,                    \
      __global const float *x, int x_off, __global const float *mean,         \
      int mean_off, __global const float *rstd, int rstd_off,                 \
      __global const float *y, int y_off, int D, int relu, int n0, int n1,    \
      int accumulate
static inline __attribute__((always_inline)) void
ln_param_sums(LN_PARAM_PARAMS, int i) {
  float sg = 0.0f, sb = 0.0f;
  for (int n = n0; n < n1; n++) {
    __global const float *gr = dy + dy_off + n * D, *yr = y + y_off + n * D;
    float g = LN_DY1(i);
    sb += g;
    sg += g * ((x[x_off + n * D + i] - mean[mean_off + n]) *
               rstd[rstd_off + n]);
  }
  if (accumulate) {
    sg += dgamma[dgamma_off + i];
    sb += dbeta[dbeta_off + i];
  }
  dgamma[dgamma_off + i] = sg;
  dbeta[dbeta_off + i] = sb;
}
#define LN_PARAM_ARGS                                                         \
  dgamma, dgamma_off, dbeta, dbeta_off, dy, dy_off, x, x_off, mean, mean_off, \
      rstd, rstd_off, y, y_off, D, relu, n0, n1, accumulate

/* Item i: value i's sums (ln_param_sums). */
__kernel void ln_backward_params(LN_PARAM_PARAMS) {
  int i = get_global_id(0);
  if (i < D) ln_param_sums(LN_PARAM_ARGS, i);
}

/* The same in runs of 16: item j the values 16 j .. 16 j + 15 (those
 * below D where the last run is short). */
__kernel void ln_backward_params16(LN_PARAM_PARAMS) {
  int at = get_global_id(0) * 16;
  if (at >= D) return;
  __global float *dg = dgamma + dgamma_off + at, *db = dbeta + dbeta_off + at;
  if (at + 16 <= D) {
    float16 sg = 0.0f, sb = 0.0f;
    for (int n = n0; n < n1; n++) {
      __global const float *gr = dy + dy_off + n * D, *yr = y + y_off + n * D;
      float16 g = LN_DY16(at);
      sb += g;
      sg += g * ((vload16(0, x + x_off + n * D + at) - mean[mean_off + n]) *
                 rstd[rstd_off + n]);
    }
    if (accumulate) {
      sg += vload16(0, dg);
      sb += vload16(0, db);
    }
    vstore16(sg, 0, dg);
    vstore16(sb, 0, db);
    return;
  }
  for (int e = 0; e < D - at; e++) ln_param_sums(LN_PARAM_ARGS, at + e);
}

/* Layer normalisation over each pixel's channels (layernorm over=channels:
 * Keras's LayerNormalization on an image, ConvNeXt's channels-first
 * LayerNorm): x [N, C, P] with P = H W, pixel (n, p)'s C values x[n, c,
 * p] normalised by their own mean and biased variance, then scaled and
 * shifted by channel, y = (x - mean) * rstd * gamma[c] + beta[c]; two
 * passes for the statistics, kept (N P each, at n P + p) for the
 * backward; relu as ln_forward's. Two layouts, chosen by measurement
 * (nn/layernorm.c): an item a pixel, its channels P apart (neighbouring
 * items on neighbouring pixels: coalesced on a GPU), or (the kernels
 * named ...16) an item a run of 16 neighbouring pixels of a sample in
 * float16s (one vector on a CPU device), the pixels past a sample's last
 * whole run one by one. Each pixel's operations are the same in both.
 *
 * LNC_FORWARD_PIXELS(T, LOAD, STORE, at, st): the forward of the T
 * (float or float16) of pixels at `at` in x and y, their statistics at
 * `st`. */
#define LNC_FORWARD_PIXELS(T, LOAD, STORE, at, st)                            \
  {                                                                           \
    __global const float *v = x + x_off + (at);                               \
    __global float *out = y + y_off + (at);                                   \
    T s = 0.0f;                                                               \
    for (int c = 0; c < C; c++) s += LOAD(v + c * P);                         \
    T mu = s / (float)C, q = 0.0f;                                            \
    for (int c = 0; c < C; c++) {                                             \
      T d = LOAD(v + c * P) - mu;                                             \
      q += d * d;                                                             \
    }                                                                         \
    T r = rsqrt(q / (float)C + eps);                                          \
    for (int c = 0; c < C; c++) {                                             \
      T o = (LOAD(v + c * P) - mu) * r * gamma[gamma_off + c] +               \
            beta[beta_off + c];                                               \
      if (relu) o = select((T)0.0f, o, o > 0.0f);                             \
      STORE(o, out + c * P);                                                  \
    }                                                                         \
    STORE(mu, mean + mean_off + (st));                                        \
    STORE(r, rstd + rstd_off + (st));                                         \
  }
#define LNC_LOAD1(p) (*(p))
#define LNC_STORE1(v, p) (*(p) = (v))
#define LNC_LOAD16(p) vload16(0, p)
#define LNC_STORE16(v, p) vstore16(v, 0, p)

#define LNC_FORWARD_PARAMS                                                    \
  (__global float *y, int y_off, __global float *mean, int mean_off,          \
   __global float *rstd, int rstd_off, __global const float *x, int x_off,    \
   __global const float *gamma, int gamma_off, __global const float *beta,    \
   int beta_off, int N, int C, int P, float eps, int relu)

/* A kernel's body in the two layouts, PIXELS(T, LOAD, STORE, at, st) the
 * work on T's pixels: item i = n P + p a pixel (LNC_PIXEL_ITEM), or item
 * j run j % R of sample j / R, R = ceil(P / 16) (LNC_RUN_ITEM). */
#define LNC_PIXEL_ITEM(PIXELS)                                                \
  {                                                                           \
    int i = get_global_id(0);                                                 \
    if (i >= N * P) return;                                                   \
    PIXELS(float, LNC_LOAD1, LNC_STORE1, (i / P) * C * P + i % P, i);         \
  }
#define LNC_RUN_ITEM(PIXELS)                                                  \
  {                                                                           \
    int R = (P + 15) / 16, j = get_global_id(0);                              \
    if (j >= N * R) return;                                                   \
    int n = j / R, p0 = j % R * 16;                                           \
    if (p0 + 16 <= P) {                                                       \
      PIXELS(float16, LNC_LOAD16, LNC_STORE16, n * C * P + p0, n * P + p0);   \
      return;                                                                 \
    }                                                                         \
    for (int p = p0; p < P; p++)                                              \
      PIXELS(float, LNC_LOAD1, LNC_STORE1, n * C * P + p, n * P + p);         \
  }

__kernel void lnc_forward LNC_FORWARD_PARAMS
LNC_PIXEL_ITEM(LNC_FORWARD_PIXELS)
__kernel void lnc_forward16 LNC_FORWARD_PARAMS
LNC_RUN_ITEM(LNC_FORWARD_PIXELS)

/* The input gradient of the T of pixels at `at` (statistics at `st`):
 * with g = dy * gamma[c] and xhat = (x - mean) * rstd over a pixel's
 * channels, dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), written or
 * (accumulate) added; dy through the fused ReLU (its output y > 0) where
 * relu (times 1 or 0, as BN_MASK1: an infinite dy stays visible).
 * SUMS(T, d, xhat, st): what else is done with each channel's dy (through
 * the ReLU) d and xhat (LNC_NO_SUMS: nothing). */
#define LNC_BACKWARD_BODY(T, LOAD, STORE, at, st, SUMS)                       \
  {                                                                           \
    __global const float *xr = x + x_off + (at), *gr = dy + dy_off + (at);    \
    __global const float *yr = y + y_off + (at);                              \
    __global float *out = dx + dx_off + (at);                                 \
    T mu = LOAD(mean + mean_off + (st)), r = LOAD(rstd + rstd_off + (st));    \
    T sg = 0.0f, sgx = 0.0f;                                                  \
    for (int c = 0; c < C; c++) {                                             \
      T g = LOAD(gr + c * P);                                                 \
      if (relu) g *= select((T)0.0f, (T)1.0f, LOAD(yr + c * P) > 0.0f);      \
      T xh = (LOAD(xr + c * P) - mu) * r;                                     \
      SUMS(T, g, xh, st)                                                      \
      g *= gamma[gamma_off + c];                                              \
      sg += g;                                                                \
      sgx += g * xh;                                                          \
    }                                                                         \
    T a = sg / (float)C, b = sgx / (float)C;                                  \
    for (int c = 0; c < C; c++) {                                             \
      T g = LOAD(gr + c * P);                                                 \
      if (relu) g *= select((T)0.0f, (T)1.0f, LOAD(yr + c * P) > 0.0f);      \
      g *= gamma[gamma_off + c];                                              \
      T v = r * (g - a - (LOAD(xr + c * P) - mu) * r * b);                    \
      if (accumulate) v += LOAD(out + c * P);                                 \
      STORE(v, out + c * P);                                                  \
    }                                                                         \
  }
#define LNC_NO_SUMS(T, d, xhat, st)
#define LNC_BACKWARD_PIXELS(T, LOAD, STORE, at, st)                           \
  LNC_BACKWARD_BODY(T, LOAD, STORE, at, st, LNC_NO_SUMS)

#define LNC_BACKWARD_PARAMS                                                   \
  (__global float *dx, int dx_off, __global const float *dy, int dy_off,      \
   __global const float *x, int x_off, __global const float *mean,            \
   int mean_off, __global const float *rstd, int rstd_off,                    \
   __global const float *gamma, int gamma_off, __global const float *y,       \
   int y_off, int N, int C, int P, int relu, int accumulate)

__kernel void lnc_backward_data LNC_BACKWARD_PARAMS
LNC_PIXEL_ITEM(LNC_BACKWARD_PIXELS)
__kernel void lnc_backward_data16 LNC_BACKWARD_PARAMS
LNC_RUN_ITEM(LNC_BACKWARD_PIXELS)

/* lnc_backward_data16 with the parameter sums in the same pass, where the
 * data is read once instead of twice (a layout of the backward of its
 * own, measured): item j of J = N R (its run of 16 pixels, or the sample's
 * short last run one pixel after the other) also writes its pixels' sums
 * of d xhat and of d for each channel c (d: dy through the fused ReLU) to
 * part[c J + j] and part[(C + c) J + j]; clt_lnc_backward then sums them
 * over j (sum_channels: neighbouring items wrote neighbouring values). */
#define LNC_TOTAL_float(v) (v)
#define LNC_TOTAL_float16(v) sum16(v)
#define LNC_PART_SUMS(T, d, xhat, st)                                         \
  {                                                                           \
    __global float *pg = part + part_off + c * J + j, *pb = pg + C * J;       \
    float sgx_ = LNC_TOTAL_##T((d) * (xhat)), sb_ = LNC_TOTAL_##T(d);         \
    if ((st) == n * P + p0) { /* the item's first pixel */                    \
      *pg = sgx_;                                                             \
      *pb = sb_;                                                              \
    } else {                                                                  \
      *pg += sgx_;                                                            \
      *pb += sb_;                                                             \
    }                                                                         \
  }
#define LNC_BACKWARD_SUMS_PIXELS(T, LOAD, STORE, at, st)                      \
  LNC_BACKWARD_BODY(T, LOAD, STORE, at, st, LNC_PART_SUMS)

__kernel void lnc_backward_data16_sums(
    __global float *dx, int dx_off, __global const float *dy, int dy_off,
    __global const float *x, int x_off, __global const float *mean,
    int mean_off, __global const float *rstd, int rstd_off,
    __global const float *gamma, int gamma_off, __global const float *y,
    int y_off, int N, int C, int P, int relu, int accumulate,
    __global float *part, int part_off) {
  const int J = N * ((P + 15) / 16);
  LNC_RUN_ITEM(LNC_BACKWARD_SUMS_PIXELS)
}

/* Group c, a channel: dgamma[c] and dbeta[c], the sums over samples
 * n0..n1 and their pixels of dy * xhat and of dy (through the fused ReLU
 * where relu), written or (accumulate) added: the launches that cut the
 * batch into parts where the device's loops are capped add into the
 * first's. The group's CLT_WG items take the part's pixels lid, lid +
 * CLT_WG, ... (runs16 0), or its runs of 16 pixels (each sample's last,
 * where short, pixel by pixel) lid, lid + CLT_WG, ... (runs16 1). */
#define LNC_PARAM_SUMS(T, LOAD, at, st)                                       \
  {                                                                           \
    T g = LOAD(dy + dy_off + (at));                                           \
    if (relu) g *= select((T)0.0f, (T)1.0f, LOAD(y + y_off + (at)) > 0.0f);  \
    T xhat = (LOAD(x + x_off + (at)) - LOAD(mean + mean_off + (st))) *        \
             LOAD(rstd + rstd_off + (st));                                    \
    sb_##T += g;                                                              \
    sg_##T += g * xhat;                                                       \
  }

static inline __attribute__((always_inline)) void
lnc_backward_params_body(__global float *dgamma, int dgamma_off,
                         __global float *dbeta, int dbeta_off,
                         __global const float *dy, int dy_off,
                         __global const float *x, int x_off,
                         __global const float *mean, int mean_off,
                         __global const float *rstd, int rstd_off,
                         __global const float *y, int y_off, int C, int P,
                         int relu, int n0, int n1, int accumulate,
                         __local float *scratch, const int runs16) {
  int c = get_group_id(0), lid = get_local_id(0);
  float sg_float = 0.0f, sb_float = 0.0f;
  float16 sg_float16 = 0.0f, sb_float16 = 0.0f;
  if (runs16) {
    int R = (P + 15) / 16;
    for (int u = n0 * R + lid; u < n1 * R; u += CLT_WG) {
      int n = u / R, p0 = u % R * 16;
      if (p0 + 16 <= P)
        LNC_PARAM_SUMS(float16, LNC_LOAD16, (n * C + c) * P + p0, n * P + p0)
      else
        for (int p = p0; p < P; p++)
          LNC_PARAM_SUMS(float, LNC_LOAD1, (n * C + c) * P + p, n * P + p)
    }
  } else {
    for (int q = n0 * P + lid; q < n1 * P; q += CLT_WG)
      LNC_PARAM_SUMS(float, LNC_LOAD1, ((q / P) * C + c) * P + q % P, q)
  }
  float sg = group_sum(scratch, sg_float + sum16(sg_float16));
  float sb = group_sum(scratch, sb_float + sum16(sb_float16));
  if (lid == 0) {
    dgamma[dgamma_off + c] = accumulate ? dgamma[dgamma_off + c] + sg : sg;
    dbeta[dbeta_off + c] = accumulate ? dbeta[dbeta_off + c] + sb : sb;
  }
}

#define LNC_PARAMS_PARAMS                                                     \
  (__global float *dgamma, int dgamma_off, __global float *dbeta,             \
   int dbeta_off, __global const float *dy, int dy_off,                       \
   __global const float *x, int x_off, __global const float *mean,            \
   int mean_off, __global const float *rstd, int rstd_off,                    \
   __global const float *y, int y_off, int C, int P, int relu, int n0,        \
   int n1, int accumulate)
#define LNC_PARAMS_ARGS                                                       \
  (dgamma, dgamma_off, dbeta, dbeta_off, dy, dy_off, x, x_off, mean,          \
   mean_off, rstd, rstd_off, y, y_off, C, P, relu, n0, n1, accumulate,        \
   scratch, runs16)
__kernel void lnc_backward_params LNC_PARAMS_PARAMS {
  __local float scratch[CLT_WG];
  const int runs16 = 0;
  lnc_backward_params_body LNC_PARAMS_ARGS;
}
__kernel void lnc_backward_params16 LNC_PARAMS_PARAMS {
  __local float scratch[CLT_WG];
  const int runs16 = 1;
  lnc_backward_params_body LNC_PARAMS_ARGS;
}
#endif
