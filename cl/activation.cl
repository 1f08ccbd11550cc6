/* Activations, forward and backward. `kind`: 0 relu, 1 leaky relu (alpha),
 * 2 sigmoid, 3 tanh, 4 gelu (exact, with erf, as PyTorch's default; the
 * erf our own, normal_cdf), 5 silu
 * (swish: x sigmoid(x)), 6 elu (alpha), 7 softplus (log(1 + e^x), x itself
 * past 20, as PyTorch's threshold). The backward reads the forward's input
 * x and output y, whichever it needs. */

#define ACT_RELU 0
#define ACT_LEAKY 1
#define ACT_SIGMOID 2
#define ACT_TANH 3
#define ACT_GELU 4
#define ACT_SILU 5
#define ACT_ELU 6
#define ACT_SOFTPLUS 7

/* e^a for -81 <= a <= 0, normal_cdf's exp(-z^2) (POCL's exp took 40% of
 * gelu's kernels' time; this with n rounded by rint() was no faster, with
 * the addition below the kernels are 20% faster): a = n ln 2 + r, n an
 * integer (rounded by adding 1.5 2^23, which leaves n in the sum's low
 * bits), r = a - n ln 2 in two parts (n ln2_hi exact: ln2_hi has 16
 * significant bits, |n| <= 117), |r| <= ln 2 / 2; e^r by its Taylor
 * polynomial of degree 7 (relative error 5e-9 there), times 2^n by adding
 * n to its exponent bits (the result stays normal). Relative error 9.9e-8
 * at most over [-81, 0] (numpy's float32 exp: 2.1e-7). */
static float exp_neg(float a) {
  float shifted = a * 1.44269504088896341f + 12582912.0f;
  float n = shifted - 12582912.0f;
  float r = (a - n * 0.693145751953125f) - n * 1.42860682030941723e-06f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return as_float(as_uint(p) + (as_uint(shifted) << 23));
}

/* The standard normal distribution's CDF, Phi(x) = (1 + erf(x / sqrt 2))
 * / 2, for gelu, and e = exp(-x^2 / 2) (its density but for the factor)
 * where density: POCL's erf is a scalar call 14 times as slow as exp (a
 * ConvNeXt-style block's gelu was half its step), so erf is ours, from
 * two polynomials fitted for float (tools/fit_erf.py: relative errors
 * 1.6e-8 and 8.5e-9 against double): with z = |x| / sqrt 2, below
 * 0.921875 erf(z) = z P(z^2); above, erfc(z) = exp(-z^2) Q(1 / (1 + z /
 * 2)) up to z = 6 and 0 past it (Phi(-8.5) is 1e-17). The lower tail is
 * taken from erfc directly, not as 1 + erf (which loses the digits
 * PyTorch's 0.5 x (1 + erf) loses there). */
static float normal_cdf(float x, float *density) {
  float z = fabs(x) * 0.70710678118654752f;
  float zc = fmin(z, 9.0f); /* e^-81 = 6.6e-36; past it 0 */
  float e = z < 9.0f ? exp_neg(-zc * zc) : 0.0f;
  if (density) *density = e;
  if (z < 0.921875f) {
    float t = z * z;
    float p = -0.0005990839131041481f;
    p = p * t + 0.004993177161939741f;
    p = p * t - 0.026766613950748044f;
    p = p * t + 0.11281816097769876f;
    p = p * t - 0.37612493679461967f;
    p = p * t + 1.1283791495552093f;
    float half_erf = 0.5f * z * p;
    return x < 0.0f ? 0.5f - half_erf : 0.5f + half_erf;
  }
  float t = 1.0f / (1.0f + 0.5f * z);
  float q = 0.10514875917336991f;
  q = q * t - 0.4229352486808404f;
  q = q * t + 0.4938473842139687f;
  q = q * t - 0.04885235084151188f;
  q = q * t + 0.3222246541936462f;
  q = q * t + 0.26676219650892935f;
  q = q * t + 0.2838396504730252f;
  q = q * t - 8.534854627361385e-05f;
  float tail = z < 6.0f ? 0.5f * e * q : 0.0f; /* Phi(-|x|) */
  return x < 0.0f ? tail : 1.0f - tail;
}

static float act_forward(int kind, float x, float alpha) {
  switch (kind) {
  case ACT_RELU: return x > 0.0f ? x : 0.0f;
  case ACT_LEAKY: return x > 0.0f ? x : alpha * x;
  case ACT_SIGMOID: return 1.0f / (1.0f + exp(-x));
  case ACT_TANH: return tanh(x);
  case ACT_SILU: return x / (1.0f + exp(-x));
  case ACT_ELU: return x > 0.0f ? x : alpha * expm1(x);
  case ACT_SOFTPLUS: return x > 20.0f ? x : log1p(exp(x));
  default: return x * normal_cdf(x, 0);
  }
}

static float act_derivative(int kind, float x, float y, float alpha) {
  switch (kind) {
  case ACT_RELU: return x > 0.0f ? 1.0f : 0.0f;
  case ACT_LEAKY: return x > 0.0f ? 1.0f : alpha;
  case ACT_SIGMOID: return y * (1.0f - y);
  case ACT_TANH: return 1.0f - y * y;
  case ACT_SILU: {
    float s = 1.0f / (1.0f + exp(-x));
    return s * (1.0f + x * (1.0f - s));
  }
  case ACT_ELU: return x > 0.0f ? 1.0f : alpha * exp(x);
  case ACT_SOFTPLUS: return x > 20.0f ? 1.0f : 1.0f / (1.0f + exp(-x));
  default: {
    float e;
    float cdf = normal_cdf(x, &e);
    return cdf + x * 0.3989422804014327f * e;
  }
  }
}

/* One forward and one backward kernel per kind (the host picks by kind):
 * with the kind a constant the switches above fold away and CPU devices
 * vectorise the kernel across work-items; a run-time kind left POCL with
 * scalar code (ReLU forward 4x slower). accumulate is a select, not a
 * branch, for the same reason, and a constant in each of the backward
 * kernel's two branches (ROUND16_ACC_VARIANTS). */
#define ACTIVATION_KERNELS(NAME, KIND)                                        \
  ROUND16_BODY activation_forward_##NAME##_body(                              \
      __global float *y, int y_off, __global const float *x, int x_off,       \
      int n, float alpha, int run, ROUND16_PARAMS, int round16) {             \
    FOR_RUN(i, n)                                                             \
      STORE16(y, y_off, i, act_forward(KIND, x[x_off + i], alpha));           \
  }                                                                           \
  ROUND16_VARIANTS(activation_forward_##NAME,                                 \
                   (__global float *y, int y_off, __global const float *x,    \
                    int x_off, int n, float alpha, ROUND16_PARAMS, int run),  \
                   (y, y_off, x, x_off, n, alpha, run, ROUND16_ARGS))         \
  ROUND16_BODY activation_backward_##NAME##_body(                             \
      __global float *dx, int dx_off, __global const float *dy, int dy_off,   \
      __global const float *x, int x_off, __global const float *y,            \
      int y_off, int n, float alpha, int accumulate, int run, ROUND16_PARAMS, \
      int round16) {                                                          \
    FOR_RUN(i, n) {                                                           \
      float g = dy[dy_off + i] *                                              \
                act_derivative(KIND, x[x_off + i], y[y_off + i], alpha);      \
      STORE16(dx, dx_off, i, accumulate ? dx[dx_off + i] + g : g);            \
    }                                                                         \
  }                                                                           \
  ROUND16_ACC_VARIANTS(                                                       \
      activation_backward_##NAME,                                             \
      (__global float *dx, int dx_off, __global const float *dy, int dy_off,  \
       __global const float *x, int x_off, __global const float *y,           \
       int y_off, int n, float alpha, int accumulate, ROUND16_PARAMS,         \
       int run),                                                              \
      (dx, dx_off, dy, dy_off, x, x_off, y, y_off, n, alpha, accumulate, run, \
       ROUND16_ARGS))

ACTIVATION_KERNELS(relu, ACT_RELU)
ACTIVATION_KERNELS(leaky_relu, ACT_LEAKY)
ACTIVATION_KERNELS(sigmoid, ACT_SIGMOID)
ACTIVATION_KERNELS(tanh, ACT_TANH)
ACTIVATION_KERNELS(gelu, ACT_GELU)
ACTIVATION_KERNELS(silu, ACT_SILU)
ACTIVATION_KERNELS(elu, ACT_ELU)
ACTIVATION_KERNELS(softplus, ACT_SOFTPLUS)
