/* IEEE 754 binary16 on the host: the reference the device's
 * vstore_half_rte and vload_half are tested against. */
#include <string.h>

#include "cltrain.h"

static uint16_t to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) /* NaN: quiet, keeping the payload's top bits */
    return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x47800000u) return (uint16_t)(sign | 0x7c00u); /* >= 2^16: inf */
  uint32_t e = a >> 23, m = a & 0x7fffffu, h, rem, halfway;
  if (e >= 113) { /* a normal half: 2^-14 and up */
    h = ((e - 112) << 10) | (m >> 13);
    rem = m & 0x1fffu;
    halfway = 0x1000u;
  } else { /* subnormal or zero: m_h = value / 2^-24 */
    if (e < 102) return sign; /* below 2^-25: rounds to zero */
    m |= 0x800000u;
    uint32_t shift = 126 - e; /* 14 to 24 */
    h = m >> shift;
    rem = m & ((1u << shift) - 1);
    halfway = 1u << (shift - 1);
  }
  /* Round to nearest, ties to even; a carry may reach the exponent (the
   * largest values round up to infinity, as IEEE says). */
  if (rem > halfway || (rem == halfway && (h & 1))) h++;
  return (uint16_t)(sign | h);
}

static float to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
  if (e == 0) {
    float v = (float)m * 0x1p-24f; /* exact: subnormals and zero */
    memcpy(&x, &v, sizeof x);
    x |= sign;
  } else if (e == 31) {
    x = sign | 0x7f800000u | (m << 13);
  } else {
    x = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

CLT_API void clt_f32_to_f16(const float *src, uint16_t *dst, int64_t n) {
  for (int64_t i = 0; i < n; i++) dst[i] = to_half(src[i]);
}

CLT_API void clt_f16_to_f32(const uint16_t *src, float *dst, int64_t n) {
  for (int64_t i = 0; i < n; i++) dst[i] = to_float(src[i]);
}
