/* The benches' seeded generator (splitmix64): the same seed gives the same instances in every
 * bench and on every compiler. */
#ifndef TANGRAM_BENCH_RNG_H
#define TANGRAM_BENCH_RNG_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t rng_next(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static inline size_t rng_below(uint64_t *state, size_t n) {
  return n ? (size_t)(rng_next(state) % n) : 0;
}

#endif
