/* The on-device check's signatures and their half-float form: shared by the generic layer
 * (backend.c) and every backend, below both. */
#include "backends/protocol.h"

#include <string.h>

uint32_t tg_signature_word(uint32_t id, uint32_t index) {
  uint32_t x = id * 0x9E3779B1u + index * 0x85EBCA77u + 0x27D4EB2Fu;
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  x *= 0x297A2D39u;
  x ^= x >> 15;
  return x;
}

uint64_t tg__signature_buffer_access(uint8_t *base, uint64_t bytes, uint32_t id, int write) {
  uint64_t words = bytes / 4, tail = bytes % 4, bad = 0;
  for (uint64_t i = 0; i < words; ++i) {
    uint32_t want = tg_signature_word(id, (uint32_t)i), have;
    if (write) memcpy(base + 4 * i, &want, 4);
    else {
      memcpy(&have, base + 4 * i, 4);
      bad += have != want;
    }
  }
  for (uint64_t j = 0; j < tail; ++j) {
    uint8_t want = (uint8_t)tg_signature_word(id, (uint32_t)(words + j));
    if (write) base[4 * words + j] = want;
    else bad += base[4 * words + j] != want;
  }
  return bad;
}

float tg_signature_texel(uint32_t id, uint32_t index) {
  return (float)(tg_signature_word(id, index) & 0x3FFu);
}

uint16_t tg__float_to_half_exact(float v) {
  /* v is a non-negative integer below 1024: exact in binary16. */
  uint32_t n = (uint32_t)v;
  if (n == 0) return 0;
  int e = 31 - __builtin_clz(n);
  uint32_t mant = (n << (10 - e)) & 0x3FFu;
  return (uint16_t)(((uint32_t)(e + 15) << 10) | mant);
}

float tg__half_to_float(uint16_t h) {
  uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  float v;
  if (e == 0) v = (float)m / 16777216.0f; /* subnormal: m * 2^-24 */
  else if (e == 31) v = m ? 0.0f / 0.0f : 1.0f / 0.0f;
  else {
    v = (float)(m | 0x400u);
    int sh = (int)e - 25;
    while (sh > 0) { v *= 2.0f; --sh; }
    while (sh < 0) { v *= 0.5f; ++sh; }
  }
  return (h & 0x8000u) ? -v : v;
}
