/* Dropout with a counter-based generator: element i of call `counter`
 * keeps its value when hash(seed, counter, i) >= p, so masks depend only on
 * the seed and the call, never on scheduling. The kept values are scaled
 * by 1 / (1 - p) (inverted dropout, as PyTorch); mask holds that scale or
 * 0 for the backward pass. */

static ulong mix64(ulong x) {
  x += 0x9e3779b97f4a7c15UL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9UL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebUL;
  return x ^ (x >> 31);
}

__kernel void dropout_forward(__global float *y, int y_off,
                              __global float *mask, int mask_off,
                              __global const float *x, int x_off, int n,
                              float p, ulong seed, ulong counter) {
  int i = get_global_id(0);
  if (i >= n) return;
  ulong h = mix64(mix64(seed ^ mix64(counter)) + (ulong)i);
  float u = (float)(h >> 40) * (1.0f / 16777216.0f); /* 24 bits, [0, 1) */
  float m = u >= p ? 1.0f / (1.0f - p) : 0.0f;
  mask[mask_off + i] = m;
  y[y_off + i] = x[x_off + i] * m;
}

/* dx (+)= dy * mask, elementwise. */
__kernel void mul_f32(__global float *out, int out_off,
                      __global const float *a, int a_off,
                      __global const float *b, int b_off, int n,
                      int accumulate, int run) {
  FOR_RUN(i, n) {
    float v = a[a_off + i] * b[b_off + i];
    out[out_off + i] = accumulate ? out[out_off + i] + v : v;
  }
}
