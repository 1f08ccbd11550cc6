/* Deterministic random numbers from one seed.
 *
 * Host side: splitmix64 streams (parameter init, shuffling, augmentation).
 * Every consumer derives its own stream with clt_rng_derive(seed, purpose,
 * index), so adding a consumer never shifts another's numbers. The device
 * side (dropout) uses the same clt_hash64 mix, counter-based, in cl/. */
#ifndef CLT_COMMON_RNG_H
#define CLT_COMMON_RNG_H

#include <stdint.h>

typedef struct clt_rng {
  uint64_t state;
} clt_rng;

static inline uint64_t clt_hash64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static inline clt_rng clt_rng_derive(uint64_t seed, uint64_t purpose,
                                     uint64_t index) {
  clt_rng r;
  r.state = clt_hash64(clt_hash64(seed ^ clt_hash64(purpose)) + index);
  return r;
}

static inline uint64_t clt_rng_next(clt_rng *r) {
  r->state += 0x9e3779b97f4a7c15ULL;
  uint64_t z = r->state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double clt_rng_uniform(clt_rng *r) {
  return (double)(clt_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n), n > 0 (Lemire's multiply, no modulo bias
 * worth caring about at these sizes). */
static inline uint64_t clt_rng_below(clt_rng *r, uint64_t n) {
  return (uint64_t)(((unsigned __int128)clt_rng_next(r) * n) >> 64);
}

/* Fills host[n] with values uniform in [lo, hi) from a stream of its own
 * for seed (test data, benchmark inputs, the checks' operands). */
static inline void clt_random_fill(float *host, int64_t n, uint64_t seed,
                                   float lo, float hi) {
  clt_rng r = clt_rng_derive(seed, 99, 0);
  for (int64_t i = 0; i < n; i++)
    host[i] = lo + (hi - lo) * (float)clt_rng_uniform(&r);
}

/* Purposes for clt_rng_derive: one constant per consumer. */
enum {
  CLT_RNG_INIT = 1,    /* parameter initialisation, index = node */
  CLT_RNG_SHUFFLE = 2, /* per-epoch shuffle, index = epoch */
  CLT_RNG_AUGMENT = 3, /* augmentation, index = epoch */
  CLT_RNG_DROPOUT = 4, /* dropout masks, index = node */
  CLT_RNG_DATA_ORDER = 5, /* the fixed order of an image folder's files */
};

#endif
