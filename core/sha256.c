/* SHA-256 as specified in FIPS 180-4, section 6.2. */
#include "core/sha256.h"

#include <string.h>

static const uint32_t k_round[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u,
    0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu,
    0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu,
    0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
    0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
    0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
    0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u,
    0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u,
    0xc67178f2u};

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32u - (n))))
#define S0(x) (ROTR(x, 2) ^ ROTR(x, 13) ^ ROTR(x, 22))
#define S1(x) (ROTR(x, 6) ^ ROTR(x, 11) ^ ROTR(x, 25))
#define G0(x) (ROTR(x, 7) ^ ROTR(x, 18) ^ ((x) >> 3))
#define G1(x) (ROTR(x, 17) ^ ROTR(x, 19) ^ ((x) >> 10))
/* One round; the eight working variables rotate through the macro's arguments. */
#define ROUND(a, b, c, d, e, f, g, h, k, w)                        \
  do {                                                             \
    uint32_t t1_ = (h) + S1(e) + (((e) & (f)) ^ (~(e) & (g))) + (k) + (w); \
    uint32_t t2_ = S0(a) + (((a) & (b)) ^ ((a) & (c)) ^ ((b) & (c)));      \
    (d) += t1_;                                                    \
    (h) = t1_ + t2_;                                               \
  } while (0)

static void compress(uint32_t h[8], const uint8_t block[64]) {
  uint32_t w[16];
  for (int t = 0; t < 16; ++t)
    w[t] = (uint32_t)block[4 * t] << 24 | (uint32_t)block[4 * t + 1] << 16 |
           (uint32_t)block[4 * t + 2] << 8 | (uint32_t)block[4 * t + 3];
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int t = 0; t < 64; t += 8) {
    if (t >= 16)
      for (int i = 0; i < 8; ++i) {
        int j = (t + i) & 15;
        w[j] += G1(w[(j + 14) & 15]) + w[(j + 9) & 15] + G0(w[(j + 1) & 15]);
      }
    const uint32_t *k = k_round + t, *x = w + (t & 15);
    ROUND(a, b, c, d, e, f, g, hh, k[0], x[0]);
    ROUND(hh, a, b, c, d, e, f, g, k[1], x[1]);
    ROUND(g, hh, a, b, c, d, e, f, k[2], x[2]);
    ROUND(f, g, hh, a, b, c, d, e, k[3], x[3]);
    ROUND(e, f, g, hh, a, b, c, d, k[4], x[4]);
    ROUND(d, e, f, g, hh, a, b, c, k[5], x[5]);
    ROUND(c, d, e, f, g, hh, a, b, k[6], x[6]);
    ROUND(b, c, d, e, f, g, hh, a, k[7], x[7]);
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += hh;
}

void tg__sha256_init(tg__sha256 *s) {
  static const uint32_t k_init[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                                     0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
  memcpy(s->h, k_init, sizeof k_init);
  s->length = 0;
  s->used = 0;
}

void tg__sha256_update(tg__sha256 *s, const void *data, size_t size) {
  const uint8_t *p = data;
  if (size == 0) return;
  s->length += size;
  if (s->used) {
    size_t take = 64 - s->used < size ? 64 - s->used : size;
    memcpy(s->block + s->used, p, take);
    s->used += take;
    p += take;
    size -= take;
    if (s->used < 64) return;
    compress(s->h, s->block);
    s->used = 0;
  }
  for (; size >= 64; p += 64, size -= 64) compress(s->h, p);
  if (size) memcpy(s->block, p, size);
  s->used = size;
}

void tg__sha256_final(tg__sha256 *s, uint8_t out[TG__SHA256_BYTES]) {
  uint64_t bits = s->length * 8u;
  s->block[s->used++] = 0x80;
  if (s->used > 56) {
    memset(s->block + s->used, 0, 64 - s->used);
    compress(s->h, s->block);
    s->used = 0;
  }
  memset(s->block + s->used, 0, 56 - s->used);
  for (int i = 0; i < 8; ++i) s->block[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
  compress(s->h, s->block);
  for (int i = 0; i < 8; ++i) {
    out[4 * i] = (uint8_t)(s->h[i] >> 24);
    out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
    out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
    out[4 * i + 3] = (uint8_t)s->h[i];
  }
}

void tg__sha256_digest(const void *data, size_t size, uint8_t out[TG__SHA256_BYTES]) {
  tg__sha256 s;
  tg__sha256_init(&s);
  tg__sha256_update(&s, data, size);
  tg__sha256_final(&s, out);
}
