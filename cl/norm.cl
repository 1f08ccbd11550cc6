/* Batch normalisation over N and the spatial size, per channel, as
 * PyTorch's BatchNorm1d/2d define it. Reductions run one group of CLT_WG
 * items per channel. */

#define BN_AT(n, c, s) (((n) * C + (c)) * HW + (s))

/* mean[c] and the biased variance var[c] of x over n and s; two passes
 * (mean, then squared deviations) for accuracy. */
__kernel void bn_stats(__global float *mean, int mean_off,
                       __global float *var, int var_off,
                       __global const float *x, int x_off, int N, int C,
                       int HW) {
  __local float scratch[CLT_WG];
  int c = get_group_id(0), lid = get_local_id(0);
  int M = N * HW;
  float s = 0.0f;
  for (int j = lid; j < M; j += CLT_WG)
    s += x[x_off + BN_AT(j / HW, c, j % HW)];
  float mu = group_sum(scratch, s) / (float)M;
  float q = 0.0f;
  for (int j = lid; j < M; j += CLT_WG) {
    float d = x[x_off + BN_AT(j / HW, c, j % HW)] - mu;
    q += d * d;
  }
  float v = group_sum(scratch, q) / (float)M;
  if (lid == 0) {
    mean[mean_off + c] = mu;
    var[var_off + c] = v;
  }
}

/* running = (1 - momentum) running + momentum batch, with the unbiased
 * variance (M / (M - 1)), and num_batches_tracked + 1. */
__kernel void bn_update_running(__global float *rmean, int rmean_off,
                                __global float *rvar, int rvar_off,
                                __global float *tracked, int tracked_off,
                                __global const float *mean, int mean_off,
                                __global const float *var, int var_off, int C,
                                int M, float momentum) {
  int c = get_global_id(0);
  if (c >= C) return;
  float unbiased = M > 1 ? var[var_off + c] * (float)M / (float)(M - 1)
                         : var[var_off + c];
  rmean[rmean_off + c] =
      (1.0f - momentum) * rmean[rmean_off + c] + momentum * mean[mean_off + c];
  rvar[rvar_off + c] = (1.0f - momentum) * rvar[rvar_off + c] +
                       momentum * unbiased;
  if (c == 0) tracked[tracked_off] += 1.0f;
}

__kernel void bn_apply(__global float *y, int y_off,
                       __global const float *x, int x_off,
                       __global const float *mean, int mean_off,
                       __global const float *var, int var_off,
                       __global const float *gamma, int gamma_off,
                       __global const float *beta, int beta_off, int N, int C,
                       int HW, float eps) {
  int i = get_global_id(0);
  if (i >= N * C * HW) return;
  int c = (i / HW) % C;
  float inv = rsqrt(var[var_off + c] + eps);
  y[y_off + i] = (x[x_off + i] - mean[mean_off + c]) * inv *
                     gamma[gamma_off + c] +
                 beta[beta_off + c];
}

/* dgamma[c] = sum dy * xhat, dbeta[c] = sum dy. */
__kernel void bn_backward_reduce(__global float *dgamma, int dgamma_off,
                                 __global float *dbeta, int dbeta_off,
                                 __global const float *dy, int dy_off,
                                 __global const float *x, int x_off,
                                 __global const float *mean, int mean_off,
                                 __global const float *var, int var_off,
                                 int N, int C, int HW, float eps) {
  __local float scratch[CLT_WG];
  int c = get_group_id(0), lid = get_local_id(0);
  int M = N * HW;
  float mu = mean[mean_off + c], inv = rsqrt(var[var_off + c] + eps);
  float sg = 0.0f, sb = 0.0f;
  for (int j = lid; j < M; j += CLT_WG) {
    int at = BN_AT(j / HW, c, j % HW);
    float g = dy[dy_off + at];
    sb += g;
    sg += g * (x[x_off + at] - mu) * inv;
  }
  float tg = group_sum(scratch, sg);
  float tb = group_sum(scratch, sb);
  if (lid == 0) {
    dgamma[dgamma_off + c] = tg;
    dbeta[dbeta_off + c] = tb;
  }
}

/* Training mode: dx = gamma inv / M (M dy - dbeta - xhat dgamma).
 * Evaluation mode (batch statistics not used): dx = gamma inv dy. */
__kernel void bn_backward_apply(__global float *dx, int dx_off,
                                __global const float *dy, int dy_off,
                                __global const float *x, int x_off,
                                __global const float *mean, int mean_off,
                                __global const float *var, int var_off,
                                __global const float *gamma, int gamma_off,
                                __global const float *dgamma, int dgamma_off,
                                __global const float *dbeta, int dbeta_off,
                                int N, int C, int HW, float eps, int training,
                                int accumulate) {
  int i = get_global_id(0);
  if (i >= N * C * HW) return;
  int c = (i / HW) % C;
  float inv = rsqrt(var[var_off + c] + eps);
  float k = gamma[gamma_off + c] * inv;
  float g;
  if (training) {
    float M = (float)(N * HW);
    float xhat = (x[x_off + i] - mean[mean_off + c]) * inv;
    g = k / M *
        (M * dy[dy_off + i] - dbeta[dbeta_off + c] - xhat * dgamma[dgamma_off + c]);
  } else {
    g = k * dy[dy_off + i];
  }
  dx[dx_off + i] = accumulate ? dx[dx_off + i] + g : g;
}
