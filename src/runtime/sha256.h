/* SHA-256 (FIPS 180-4), used to key and checksum the kernel binary cache.
 *
 * Streaming use: init, any number of updates, final. The state lives in the
 * caller's struct; nothing is allocated and nothing is global. */
#ifndef CLT_RUNTIME_SHA256_H
#define CLT_RUNTIME_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define CLT_SHA256_DIGEST_SIZE 32
#define CLT_SHA256_HEX_SIZE 65 /* 64 hex digits and the terminating NUL */

typedef struct clt_sha256 {
  uint32_t h[8];      /* chaining value */
  uint64_t total_len; /* bytes hashed so far */
  uint8_t block[64];  /* bytes waiting for a full block */
  size_t block_len;   /* how many of block[] are in use */
} clt_sha256;

void clt_sha256_init(clt_sha256 *s);
void clt_sha256_update(clt_sha256 *s, const void *data, size_t n);
/* Writes the digest and wipes s; call init again before reusing it. */
void clt_sha256_final(clt_sha256 *s, uint8_t digest[32]);

/* Lower-case hex of a digest, NUL-terminated. */
void clt_sha256_hex(const uint8_t digest[32], char out[65]);

/* One-shot digest of n bytes at data. */
void clt_sha256_buffer(const void *data, size_t n, uint8_t digest[32]);

#endif
