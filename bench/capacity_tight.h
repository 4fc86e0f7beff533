/* The benches' capacity-tight instances, made as MiniMalloc's paper describes its challenging
 * set: buffers of random lifetimes and sizes packed into a memory of fixed capacity, each at a
 * place where it fits among the buffers placed before it that meet it in time, the buffers that
 * fit nowhere left out, until the set has its records or the memory is full. The packing is a
 * plan at the capacity, so the optimum is at most the capacity (the `known` plan of the bench
 * rows); with large buffers and random places it is often well above peak-live, and the greedy
 * strategies end several percent above both. Seeded: the same (n, seed) gives the same records
 * in every bench and on every compiler (one draw per statement). */
#ifndef TANGRAM_BENCH_CAPACITY_TIGHT_H
#define TANGRAM_BENCH_CAPACITY_TIGHT_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_rng.h"
#include "tangram/records.h"

/* The memory the buffers are packed into. */
#define CAPACITY_TIGHT_BYTES ((uint64_t)1 << 20)

/* A draw log-uniform in [lo, hi] (lo >= 1). */
static uint64_t ct_log_uniform(uint64_t *state, uint64_t lo, uint64_t hi) {
  double a = log((double)lo), b = log((double)hi + 1.0);
  double u = (double)(rng_next(state) >> 11) / 9007199254740992.0;
  uint64_t v = (uint64_t)exp(a + u * (b - a));
  return v < lo ? lo : v > hi ? hi : v;
}

typedef struct ct_span {
  uint64_t lo, hi; /* address range [lo, hi) */
} ct_span;

static int ct_span_cmp(const void *a, const void *b) {
  const ct_span *x = a, *y = b;
  return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Up to n records of capacity-tight instance `seed` into r; returns how many. The instance's
 * kind comes from the seed: sizes from a 64th to a quarter of the capacity, from a sixteenth
 * to a third, or from a 200th to a half (log-uniform, multiples of 64 bytes), lifetimes
 * log-uniform from 1 task to a third of n/2 + 16 tasks; each buffer at a random place where it
 * fits, or (seeds 3-5 mod 6) at the lowest one. */
static size_t gen_capacity_tight(uint64_t seed, tg_usage_record *r, size_t n) {
  static const uint64_t k_div[3][2] = {{4, 64}, {3, 16}, {2, 200}};
  uint64_t g = 0xCA9AC17700000000ull + seed * 7919u + n;
  const uint64_t cap = CAPACITY_TIGHT_BYTES, tasks = n / 2 + 16;
  const int kind = (int)(seed % 3), lowest = (int)((seed / 3) % 2);
  uint64_t *off = malloc((n ? n : 1) * sizeof *off);
  ct_span *busy = malloc((n + 1) * sizeof *busy);
  if (off == NULL || busy == NULL) abort();
  size_t k = 0, misses = 0;
  while (k < n && misses < 20 * n) {
    uint64_t first = rng_next(&g) % tasks;
    uint64_t len = ct_log_uniform(&g, 1, tasks / 3);
    uint64_t units = ct_log_uniform(&g, cap / 64 / k_div[kind][1], cap / 64 / k_div[kind][0]);
    uint64_t last = first + len - 1 < tasks - 1 ? first + len - 1 : tasks - 1, size = units * 64;
    /* The address ranges taken, over the new buffer's lifetime, merged. */
    size_t m = 0;
    for (size_t j = 0; j < k; ++j)
      if (r[j].first_task <= last && first <= r[j].last_task)
        busy[m++] = (ct_span){off[j], off[j] + r[j].size.w};
    qsort(busy, m, sizeof *busy, ct_span_cmp);
    size_t u = 0;
    for (size_t j = 0; j < m; ++j) {
      if (u > 0 && busy[j].lo <= busy[u - 1].hi) {
        if (busy[j].hi > busy[u - 1].hi) busy[u - 1].hi = busy[j].hi;
      } else {
        busy[u++] = busy[j];
      }
    }
    busy[u] = (ct_span){cap, cap};
    /* The places where it fits: the start of every gap that holds it (a reservoir draw). */
    uint64_t pick = UINT64_MAX, seen = 0, at = 0;
    for (size_t j = 0; j <= u; at = busy[j].hi, ++j) {
      if (busy[j].lo < at || busy[j].lo - at < size) continue;
      ++seen;
      if (lowest) {
        pick = at;
        break;
      }
      uint64_t draw = rng_next(&g) % seen;
      if (draw == 0) pick = at;
    }
    if (pick == UINT64_MAX) {
      ++misses;
      continue;
    }
    memset(&r[k], 0, sizeof r[k]);
    r[k].size = (tg_extent){size, 1, 1};
    r[k].first_task = (uint32_t)first;
    r[k].last_task = (uint32_t)last;
    off[k++] = pick;
  }
  for (size_t i = k; i > 1; --i) { /* records in random order */
    size_t j = (size_t)(rng_next(&g) % i);
    tg_usage_record t = r[i - 1];
    r[i - 1] = r[j];
    r[j] = t;
  }
  free(off);
  free(busy);
  return k;
}

#endif
