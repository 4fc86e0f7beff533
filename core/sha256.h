/* SHA-256 (FIPS 180-4), for fingerprints and checksums. Not installed; not part of the public
 * API. Streaming: init, any number of updates, final. No allocation; no global state. */
#ifndef TANGRAM_CORE_SHA256_H
#define TANGRAM_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define TG__SHA256_BYTES 32

typedef struct tg__sha256 {
  uint32_t h[8];
  uint64_t length;      /* bytes hashed so far */
  uint8_t block[64];
  size_t used;          /* bytes waiting in `block` */
} tg__sha256;

void tg__sha256_init(tg__sha256 *s);
void tg__sha256_update(tg__sha256 *s, const void *data, size_t size);
/* Writes the digest; `s` must be initialised again before reuse. */
void tg__sha256_final(tg__sha256 *s, uint8_t out[TG__SHA256_BYTES]);
/* One call: the digest of `size` bytes at `data`. */
void tg__sha256_digest(const void *data, size_t size, uint8_t out[TG__SHA256_BYTES]);

#endif
