/* Lower bounds: TFLite's vectors, a brute-force reference built from task profiles as TFLite
 * does, huge task indices, overflow and bad input; the shape-aware objects bound against
 * brute-force optima and every strategy's plans. */
#include "support/tg_test.h"
#include "support/tg_planner_test.h"

#include <stdlib.h>
#include <string.h>

#define REC(size, first, last) {{(size), 1, 1}, (first), (last), 0}

static tg_bounds bounds_ok(const tg_usage_record *r, size_t n, uint32_t dims) {
  tg_bounds b;
  memset(&b, 0xAB, sizeof b);
  tg_status st = tg_bounds_compute(r, n, dims, NULL, &b);
  if (st != TG_OK) fail_msg("tg_bounds_compute: %s", tg_status_name(st));
  return b;
}

static void tflite_vectors(void **state) {
  (void)state;
  tg_bounds b = bounds_ok(NULL, 0, 1);
  assert_int_equal(b.peak_live, 0);
  assert_int_equal(b.positional_max, 0);
  assert_int_equal(b.naive, 0);
  const tg_usage_record one[] = {REC(16, 0, 1)};
  b = bounds_ok(one, 1, 1);
  assert_int_equal(b.peak_live, 16);
  assert_int_equal(b.positional_max, 16);
  assert_int_equal(b.naive, 16);
  b = bounds_ok(tg_test_tflite_chain, 5, 1);
  assert_int_equal(b.peak_live, 96);
  assert_int_equal(b.positional_max, 96);
  assert_int_equal(b.naive, 128);
  b = bounds_ok(tg_test_tflite_complex, 9, 1);
  assert_int_equal(b.peak_live, 96);
  assert_int_equal(b.positional_max, 112);
  assert_int_equal(b.naive, 192);
}

/* Section 7: texture records; bounds are in texels. */
static void texture_vectors(void **state) {
  (void)state;
  const tg_usage_record u2[] = {
      {{2, 8, 1}, 0, 1, 0}, {{2, 8, 1}, 1, 2, 0}, {{1, 12, 1}, 2, 4, 0},
      {{2, 8, 1}, 3, 5, 0}, {{8, 2, 1}, 4, 5, 0}, {{2, 8, 1}, 5, 7, 0},
      {{1, 8, 1}, 6, 8, 0}, {{2, 8, 1}, 7, 8, 0}, {{4, 1, 1}, 8, 9, 0},
  };
  tg_bounds b = bounds_ok(u2, 9, 2);
  assert_int_equal(b.naive, 120);
  /* live at task 5: three records of 16 texels */
  assert_int_equal(b.peak_live, 48);
  assert_int_equal(b.positional_max, 48);
  assert_true(b.positional_max <= 60); /* TFLite's GREEDY_IN_ORDER total */
  const tg_usage_record u3[] = {
      {{1, 2, 8}, 0, 1, 0}, {{4, 3, 2}, 1, 2, 0}, {{1, 1, 1}, 2, 4, 0},
      {{2, 4, 1}, 3, 5, 0}, {{2, 2, 2}, 4, 5, 0}, {{8, 1, 2}, 5, 7, 0},
      {{1, 2, 1}, 6, 8, 0}, {{1, 1, 1}, 7, 8, 0}, {{2, 2, 2}, 8, 9, 0},
  };
  b = bounds_ok(u3, 9, 3);
  assert_int_equal(b.naive, 84);
  assert_true(b.positional_max <= 64);
  assert_true(b.peak_live <= b.positional_max);
}

/* TFLite's way: a profile per task (live volumes, non-increasing), positional maximums. */
static void brute_force(const tg_usage_record *r, size_t n, uint64_t *peak, uint64_t *posmax) {
  uint32_t max_task = 0;
  for (size_t i = 0; i < n; ++i)
    if (r[i].last_task > max_task) max_task = r[i].last_task;
  uint64_t *prof = calloc(n ? n : 1, sizeof *prof), *pm = calloc(n ? n : 1, sizeof *pm);
  assert_non_null(prof);
  assert_non_null(pm);
  *peak = 0;
  for (uint32_t t = 0; n > 0 && t <= max_task; ++t) {
    size_t k = 0;
    uint64_t live = 0;
    for (size_t i = 0; i < n; ++i) {
      if (r[i].first_task <= t && t <= r[i].last_task) {
        uint64_t v = r[i].size.w * r[i].size.h * r[i].size.d;
        size_t j = k++;
        while (j > 0 && prof[j - 1] < v) {
          prof[j] = prof[j - 1];
          --j;
        }
        prof[j] = v;
        live += v;
      }
    }
    if (live > *peak) *peak = live;
    for (size_t j = 0; j < k; ++j)
      if (prof[j] > pm[j]) pm[j] = prof[j];
  }
  *posmax = 0;
  for (size_t j = 0; j < n; ++j) *posmax += pm[j];
  free(prof);
  free(pm);
}

static void matches_brute_force(void **state) {
  (void)state;
  tg_test_rng rng = {8675309};
  for (int iter = 0; iter < 2000; ++iter) {
    uint32_t dims = (uint32_t)tg_test_rng_range(&rng, 1, 3);
    size_t n = (size_t)tg_test_rng_range(&rng, 0, 40);
    tg_test_random_spec spec = {dims, n, (uint32_t)tg_test_rng_range(&rng, 0, 30),
                                (uint32_t)tg_test_rng_range(&rng, 0, 10),
                                dims == 1 ? 100000 : 40, dims == 1, (int)tg_test_rng_range(&rng, 0, 1)};
    tg_usage_record *r = calloc(n ? n : 1, sizeof *r);
    assert_non_null(r);
    tg_test_random_records(&rng, &spec, r);
    uint64_t peak, posmax, naive = 0;
    brute_force(r, n, &peak, &posmax);
    for (size_t i = 0; i < n; ++i) naive += r[i].size.w * r[i].size.h * r[i].size.d;
    tg_bounds b = bounds_ok(r, n, dims);
    assert_int_equal(b.peak_live, peak);
    assert_int_equal(b.positional_max, posmax);
    assert_int_equal(b.naive, naive);
    assert_true(b.peak_live <= b.positional_max);
    assert_true(b.positional_max <= b.naive);
    free(r);
  }
}

/* Task indices up to TG_MAX_TASK with few records: no per-task work. */
static void huge_task_indices(void **state) {
  (void)state;
  const tg_usage_record r[] = {
      REC(10, 0, TG_MAX_TASK), REC(20, TG_MAX_TASK - 5, TG_MAX_TASK),
      REC(5, 1000000000u, 3000000000u), REC(7, 0xFFFFFFFFu, 0xFFFFFFFFu),
  };
  tg_bounds b = bounds_ok(r, 4, 1);
  assert_int_equal(b.peak_live, 30);
  assert_int_equal(b.positional_max, 30);
  assert_int_equal(b.naive, 42);
}

static void overflow_and_bad_input(void **state) {
  (void)state;
  const uint64_t big = UINT64_C(1) << 63;
  tg_bounds b;
  const tg_usage_record live[] = {REC(big, 0, 1), REC(big, 1, 2)};
  assert_int_equal(tg_bounds_compute(live, 2, 1, NULL, &b), TG_ERROR_OVERFLOW);
  const tg_usage_record apart[] = {REC(big, 0, 1), REC(big, 2, 3)};
  assert_int_equal(tg_bounds_compute(apart, 2, 1, NULL, &b), TG_ERROR_OVERFLOW); /* naive */
  const tg_usage_record vol[] = {{{UINT64_C(1) << 40, UINT64_C(1) << 30, 1}, 0, 0, 0}};
  assert_int_equal(tg_bounds_compute(vol, 1, 2, NULL, &b), TG_ERROR_OVERFLOW);
  const tg_usage_record backwards[] = {REC(8, 3, 2)};
  assert_int_equal(tg_bounds_compute(backwards, 1, 1, NULL, &b), TG_ERROR_INVALID_ARGUMENT);
  const tg_usage_record ok[] = {REC(8, 0, 2)};
  assert_int_equal(tg_bounds_compute(ok, 1, 0, NULL, &b), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_bounds_compute(ok, 1, 4, NULL, &b), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_bounds_compute(NULL, 1, 1, NULL, &b), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_bounds_compute(ok, 1, 1, NULL, NULL), TG_ERROR_INVALID_ARGUMENT);
  const tg_usage_record flat[] = {{{4, 2, 1}, 0, 1, 0}}; /* h != 1 in 1D */
  assert_int_equal(tg_bounds_compute(flat, 1, 1, NULL, &b), TG_ERROR_INVALID_ARGUMENT);
}

/* O(n log n): 200k records finish quickly even with tasks spread over 32 bits. */
static void large_input(void **state) {
  (void)state;
  size_t n = 200000;
  tg_usage_record *r = calloc(n, sizeof *r);
  assert_non_null(r);
  tg_test_rng rng = {1};
  for (size_t i = 0; i < n; ++i) {
    uint32_t f = (uint32_t)tg_test_rng_range(&rng, 0, 4000000000u);
    r[i] = (tg_usage_record){{tg_test_rng_range(&rng, 1, 1000), 1, 1}, f,
                             f + (uint32_t)tg_test_rng_range(&rng, 0, 100000), 0};
  }
  tg_bounds b = bounds_ok(r, n, 1);
  assert_true(b.peak_live > 0 && b.peak_live <= b.positional_max && b.positional_max <= b.naive);
  free(r);
}

/* ---- the shape-aware objects bound ------------------------------------------------------ */

/* The optimum objects total of a tiny set, by enumerating set partitions (restricted growth
 * strings): blocks of pairwise disjoint intervals, each costing its per-dimension maximum. */
static uint64_t brute_objects_optimum(const tg_usage_record *r, size_t n) {
  size_t block[8] = {0};
  uint64_t best = UINT64_MAX;
  for (;;) {
    size_t nb = 0;
    for (size_t i = 0; i < n; ++i)
      if (block[i] + 1 > nb) nb = block[i] + 1;
    uint64_t total = 0;
    int ok = 1;
    for (size_t b = 0; b < nb && ok; ++b) {
      tg_extent e = {0, 0, 0};
      for (size_t i = 0; i < n && ok; ++i) {
        if (block[i] != b) continue;
        for (size_t j = i + 1; j < n; ++j)
          if (block[j] == b && r[i].first_task <= r[j].last_task && r[j].first_task <= r[i].last_task)
            ok = 0;
        if (r[i].size.w > e.w) e.w = r[i].size.w;
        if (r[i].size.h > e.h) e.h = r[i].size.h;
        if (r[i].size.d > e.d) e.d = r[i].size.d;
      }
      uint64_t v;
      assert_int_equal(tg_extent_volume(e, &v), TG_OK);
      total += v;
    }
    if (ok && total < best) best = total;
    /* Next restricted growth string. */
    size_t i = n;
    while (i-- > 1) {
      size_t mx = 0;
      for (size_t j = 0; j < i; ++j)
        if (block[j] > mx) mx = block[j];
      if (block[i] <= mx) {
        block[i]++;
        for (size_t j = i + 1; j < n; ++j) block[j] = 0;
        break;
      }
    }
    if (i == 0 || i == (size_t)-1) break;
  }
  return best;
}

/* Set `round` of a run of tiny sets for brute force: 1D, 2D, 3D in turn, min_count plus up to
 * `spread` records (8 at most) into r, many ties every fourth round; *dims its dimensions. */
static tg_test_random_spec tiny_set(tg_test_rng *g, int round, size_t min_count, uint64_t spread,
                                    tg_usage_record r[8], uint32_t *dims) {
  *dims = 1 + (uint32_t)(round % 3);
  tg_test_random_spec spec = {*dims, min_count + (size_t)tg_test_rng_range(g, 0, spread), 8, 4, 8,
                              0, round % 4 == 0};
  tg_test_random_records(g, &spec, r);
  return spec;
}

/* Set `round` of a run of sets larger than the subsets: 1D, 2D, 3D in turn, 12-62 records
 * (freed by the caller), many ties every third round; its spec and dimensions out. */
static tg_usage_record *medium_set(tg_test_rng *g, int round, tg_test_random_spec *spec,
                                   uint32_t *dims) {
  *dims = 1 + (uint32_t)(round % 3);
  *spec = (tg_test_random_spec){*dims, 12 + (size_t)tg_test_rng_range(g, 0, 50), 30, 8, 64, 0,
                                round % 3 == 0};
  tg_usage_record *r = calloc(spec->count, sizeof *r);
  assert_non_null(r);
  tg_test_random_records(g, spec, r);
  return r;
}

/* positional max <= shape bound <= the optimum, on thousands of tiny 1D/2D/3D sets; and the
 * shape bound is strictly tighter on many of them (it is not the positional maximum again). */
static void shape_bound_brute_force(void **state) {
  (void)state;
  tg_test_rng g = {4242};
  size_t tighter = 0, exact = 0, sets = 0;
  for (int round = 0; round < 3000; ++round) {
    tg_usage_record r[8];
    uint32_t dims;
    tg_test_random_spec spec = tiny_set(&g, round, 2, 5, r, &dims);
    tg_bounds b = bounds_ok(r, spec.count, dims);
    uint64_t shape = 0;
    assert_int_equal(tg_bounds_objects_shape(r, spec.count, dims, NULL, &shape), TG_OK);
    uint64_t opt = brute_objects_optimum(r, spec.count);
    assert_true(b.positional_max <= shape);
    assert_true(shape <= opt);
    tighter += shape > b.positional_max;
    exact += shape == opt;
    ++sets;
  }
  print_message("shape bound: tighter than the positional maximum on %zu of %zu sets, equal to "
                "the optimum on %zu\n", tighter, sets, exact);
  assert_true(tighter >= sets / 10);
  /* Tiny sets are mostly two cliques: the bound is usually the optimum itself. */
  assert_true(exact >= sets * 9 / 10);
}

/* A 64x64 and a 16x256 texture at different times: the positional maximum says 4096 texels
 * (one object), but any shared object is 64x256 = 16384, so two objects (8192) are optimal. */
static void shape_bound_known_answer(void **state) {
  (void)state;
  const tg_usage_record r[] = {{{64, 64, 1}, 0, 1, 0}, {{16, 256, 1}, 2, 3, 0}};
  tg_bounds b = bounds_ok(r, 2, 2);
  assert_int_equal(b.positional_max, 4096);
  uint64_t shape = 0;
  assert_int_equal(tg_bounds_objects_shape(r, 2, 2, NULL, &shape), TG_OK);
  assert_int_equal(shape, 8192);
  /* 1D, the same sizes as bytes: sharing costs the larger, 4096 is optimal and the bound. */
  const tg_usage_record one[] = {{{4096, 1, 1}, 0, 1, 0}, {{4096, 1, 1}, 2, 3, 0}};
  assert_int_equal(tg_bounds_objects_shape(one, 2, 1, NULL, &shape), TG_OK);
  assert_int_equal(shape, 4096);
}

/* Every strategy's objects plan of r is valid and totals at least `bound` (the `what` bound). */
static void every_objects_plan_at_least(const tg_usage_record *r, size_t n, uint32_t dims,
                                        uint64_t bound, const char *what) {
  for (int s = 0; s <= TG_STRATEGY_BEST; ++s) {
    tg_plan_options o;
    memset(&o, 0, sizeof o);
    o.mode = TG_MODE_OBJECTS;
    o.strategy = (tg_strategy)s;
    tg_plan *p = NULL;
    assert_int_equal(tg_plan_compute(r, n, dims, &o, NULL, &p), TG_OK);
    tg_test_assert_valid(r, n, dims, p, 0, NULL);
    if (p->total < bound)
      fail_msg("%s total %llu below the %s bound %llu", tg_strategy_name((tg_strategy)s),
               (unsigned long long)p->total, what, (unsigned long long)bound);
    tg_plan_destroy(p);
  }
}

/* Every strategy's objects plan, on random 2D/3D sets, totals at least the shape bound. */
static void shape_bound_below_every_plan(void **state) {
  (void)state;
  tg_test_rng g = {808};
  for (int round = 0; round < 600; ++round) {
    uint32_t dims = 2 + (uint32_t)(round & 1);
    tg_test_random_spec spec = {dims, 5 + (size_t)tg_test_rng_range(&g, 0, 80), 40, 10, 64, 0,
                                round % 3 == 0};
    tg_usage_record *r = calloc(spec.count, sizeof *r);
    assert_non_null(r);
    tg_test_random_records(&g, &spec, r);
    uint64_t shape = 0;
    assert_int_equal(tg_bounds_objects_shape(r, spec.count, dims, NULL, &shape), TG_OK);
    every_objects_plan_at_least(r, spec.count, dims, shape, "shape");
    free(r);
  }
}

/* A lower bound computed with an allocator (the shape bound, or the subset bound of at most 8). */
typedef tg_status (*bound_fn)(const tg_usage_record *, size_t, uint32_t, const tg_allocator *,
                              uint64_t *);

static tg_status shape_bound(const tg_usage_record *r, size_t n, uint32_t dims,
                             const tg_allocator *a, uint64_t *out) {
  return tg_bounds_objects_shape(r, n, dims, a, out);
}

static tg_status subset_bound8(const tg_usage_record *r, size_t n, uint32_t dims,
                               const tg_allocator *a, uint64_t *out) {
  return tg_bounds_objects_subset(r, n, dims, 8, a, out);
}

/* Fails the 1st, 2nd, ... allocation (up to `points`): each run either gives the bound
 * computed without failures or fails cleanly (TG_ERROR_OUT_OF_HOST_MEMORY, *out = 0), and
 * leaks nothing. Returns how many runs failed. */
static int bound_fault_walk(bound_fn fn, const tg_usage_record *r, size_t n, uint32_t dims,
                            uint64_t points) {
  uint64_t want = 0;
  assert_int_equal(fn(r, n, dims, NULL, &want), TG_OK);
  int failures = 0;
  for (uint64_t at = 1; at < points; ++at) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, at);
    uint64_t got = 1;
    tg_status st = fn(r, n, dims, &fa.base, &got);
    if (st == TG_OK) assert_int_equal(got, want);
    else {
      assert_int_equal(st, TG_ERROR_OUT_OF_HOST_MEMORY);
      assert_int_equal(got, 0);
      ++failures;
    }
    assert_int_equal(fa.live_blocks, 0);
  }
  return failures;
}

/* bound_fault_walk on `n` (at most 40) random records of `dims` dimensions from `seed`. */
static int random_fault_walk(bound_fn fn, uint64_t seed, size_t n, uint32_t dims, uint64_t points) {
  tg_test_rng g = {seed};
  tg_test_random_spec spec = {dims, n, 20, 6, 32, 0, 0};
  tg_usage_record r[40];
  assert_true(n <= 40);
  tg_test_random_records(&g, &spec, r);
  return bound_fault_walk(fn, r, n, dims, points);
}

/* Bad input as tg_bounds_compute; allocation failures fail cleanly, with nothing leaked. */
static void shape_bound_errors(void **state) {
  (void)state;
  uint64_t v = 7;
  const tg_usage_record bad[] = {{{4, 1, 1}, 3, 1, 0}, {{4, 1, 1}, 0, 1, 0}};
  assert_int_equal(tg_bounds_objects_shape(bad, 2, 1, NULL, &v), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(v, 0);
  assert_int_equal(tg_bounds_objects_shape(bad, 2, 1, NULL, NULL), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_bounds_objects_shape(NULL, 0, 2, NULL, &v), TG_OK);
  assert_int_equal(v, 0);
  assert_true(random_fault_walk(shape_bound, 5, 40, 3, 64) >= 5);
}

/* ---- the subset bound ------------------------------------------------------------------- */

/* On sets of at most 8 records the subset is every record, so the bound is the optimum
 * itself; it is never below the positional maximum. */
static void subset_bound_exact_on_small_sets(void **state) {
  (void)state;
  tg_test_rng g = {9191};
  size_t above_shape = 0;
  for (int round = 0; round < 2000; ++round) {
    tg_usage_record r[8];
    uint32_t dims;
    tg_test_random_spec spec = tiny_set(&g, round, 1, 7, r, &dims);
    tg_bounds b = bounds_ok(r, spec.count, dims);
    uint64_t sub = 0, shape = 0;
    assert_int_equal(tg_bounds_objects_subset(r, spec.count, dims, 20, NULL, &sub), TG_OK);
    assert_int_equal(tg_bounds_objects_shape(r, spec.count, dims, NULL, &shape), TG_OK);
    assert_int_equal(sub, brute_objects_optimum(r, spec.count));
    assert_true(sub >= b.positional_max);
    above_shape += sub > shape;
  }
  /* Some sets need more than two cliques to show their cost. */
  assert_true(above_shape > 0);
}

/* Every strategy's objects plan, on random 1D/2D/3D sets larger than the subsets, totals at
 * least the bound; the bound exceeds the positional maximum on many of them. */
static void subset_bound_below_every_plan(void **state) {
  (void)state;
  tg_test_rng g = {31337};
  int tighter = 0, rounds = 120;
  for (int round = 0; round < rounds; ++round) {
    uint32_t dims;
    tg_test_random_spec spec;
    tg_usage_record *r = medium_set(&g, round, &spec, &dims);
    tg_bounds b = bounds_ok(r, spec.count, dims);
    uint64_t sub = 0;
    assert_int_equal(tg_bounds_objects_subset(r, spec.count, dims, 10, NULL, &sub), TG_OK);
    assert_true(sub >= b.positional_max);
    tighter += sub > b.positional_max;
    every_objects_plan_at_least(r, spec.count, dims, sub, "subset");
    free(r);
  }
  assert_true(tighter >= rounds / 4);
}

/* Known answers, bad input, allocation failures. */
static void subset_bound_errors(void **state) {
  (void)state;
  const tg_usage_record r2[] = {{{64, 64, 1}, 0, 1, 0}, {{16, 256, 1}, 2, 3, 0}};
  uint64_t v = 0;
  assert_int_equal(tg_bounds_objects_subset(r2, 2, 2, 0, NULL, &v), TG_OK);
  assert_int_equal(v, 8192);
  assert_int_equal(tg_bounds_objects_subset(r2, 2, 2, 21, NULL, &v), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(v, 0);
  const tg_usage_record bad[] = {{{4, 1, 1}, 3, 1, 0}, {{4, 1, 1}, 0, 1, 0}};
  assert_int_equal(tg_bounds_objects_subset(bad, 2, 1, 0, NULL, &v), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_bounds_objects_subset(r2, 2, 2, 0, NULL, NULL), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_bounds_objects_subset(NULL, 0, 2, 0, NULL, &v), TG_OK);
  assert_int_equal(v, 0);
  assert_true(random_fault_walk(subset_bound8, 77, 30, 2, 16) >= 1);
}

/* ---- the LP bound ------------------------------------------------------------------------ */

/* Against brute force on 2000 random sets of at most 8 records (1D/2D/3D): never above the
 * optimum, never below the positional maximum, and equal to the optimum on most of them. */
static void lp_bound_brute_force(void **state) {
  (void)state;
  tg_test_rng g = {4242};
  int sets = 2000, exact = 0, above_shape = 0;
  for (int round = 0; round < sets; ++round) {
    tg_usage_record r[8];
    uint32_t dims;
    tg_test_random_spec spec = tiny_set(&g, round, 1, 7, r, &dims);
    tg_bounds b = bounds_ok(r, spec.count, dims);
    uint64_t lp = 0, shape = 0, opt = brute_objects_optimum(r, spec.count);
    assert_int_equal(tg_bounds_objects_lp(r, spec.count, dims, 0, 0, NULL, &lp), TG_OK);
    assert_int_equal(tg_bounds_objects_shape(r, spec.count, dims, NULL, &shape), TG_OK);
    if (lp > opt || lp < b.positional_max)
      fail_msg("set %d: LP bound %llu, optimum %llu, positional maximum %llu", round,
               (unsigned long long)lp, (unsigned long long)opt, (unsigned long long)b.positional_max);
    exact += lp == opt;
    above_shape += lp > shape;
  }
  print_message("LP bound: %d of %d sets at the optimum, %d above the shape bound\n", exact, sets,
                above_shape);
  assert_true(exact >= sets * 9 / 10);
  assert_true(above_shape >= sets / 20);
}

/* Every strategy's objects plan on 80 random sets of 12-62 records totals at least the bound, and
 * the bound reaches best's greedy plan (no search) on many of them (a proof of optimality); a
 * target stops it there and a tiny work cap still gives a valid bound. */
static void lp_bound_below_every_plan(void **state) {
  (void)state;
  tg_test_rng g = {2718};
  int rounds = 80, proved = 0;
  for (int round = 0; round < rounds; ++round) {
    uint32_t dims;
    tg_test_random_spec spec;
    tg_usage_record *r = medium_set(&g, round, &spec, &dims);
    tg_bounds b = bounds_ok(r, spec.count, dims);
    uint64_t lp = 0, capped = 0, targeted = 0;
    assert_int_equal(tg_bounds_objects_lp(r, spec.count, dims, 0, 0, NULL, &lp), TG_OK);
    assert_true(lp >= b.positional_max);
    every_objects_plan_at_least(r, spec.count, dims, lp, "LP");
    assert_int_equal(tg_bounds_objects_lp(r, spec.count, dims, 0, 1000, NULL, &capped), TG_OK);
    assert_true(capped >= b.positional_max && capped <= lp);
    tg_plan_options o;
    memset(&o, 0, sizeof o);
    o.mode = TG_MODE_OBJECTS;
    o.strategy = TG_STRATEGY_BEST;
    o.time_limit_ms = TG_TIME_LIMIT_NONE; /* the greedy strategies only: no clock */
    tg_plan *p = NULL;
    assert_int_equal(tg_plan_compute(r, spec.count, dims, &o, NULL, &p), TG_OK);
    proved += p->total == lp;
    assert_int_equal(tg_bounds_objects_lp(r, spec.count, dims, p->total, 0, NULL, &targeted), TG_OK);
    assert_true(targeted <= p->total && targeted >= b.positional_max);
    if (p->total == lp) assert_int_equal(targeted, lp);
    tg_plan_destroy(p);
    free(r);
  }
  print_message("LP bound: best's greedy plan proved optimal on %d of %d sets\n", proved, rounds);
  assert_true(proved >= rounds / 3); /* 37 of 80: deterministic (no search) */
}

static tg_status lp_bound(const tg_usage_record *r, size_t n, uint32_t dims, const tg_allocator *a,
                          uint64_t *out) {
  return tg_bounds_objects_lp(r, n, dims, 0, 0, a, out);
}

/* Known answers, bad input, allocation failures. */
static void lp_bound_errors(void **state) {
  (void)state;
  /* a 64x64 and a 16x256 texture, never live together: two objects of 4096 beat one 64x256 */
  const tg_usage_record r2[] = {{{64, 64, 1}, 0, 1, 0}, {{16, 256, 1}, 2, 3, 0}};
  uint64_t v = 0;
  assert_int_equal(tg_bounds_objects_lp(r2, 2, 2, 0, 0, NULL, &v), TG_OK);
  assert_int_equal(v, 8192);
  /* seed 004's four tensors (1D, sizes 32/28/36/16, lifetimes [0,1] [1,2] [2,3] [3,4]):
   * two objects, 36 + 28 */
  const tg_usage_record s4[] = {{{32, 1, 1}, 0, 1, 0}, {{28, 1, 1}, 1, 2, 0},
                                {{36, 1, 1}, 2, 3, 0}, {{16, 1, 1}, 3, 4, 0}};
  assert_int_equal(tg_bounds_objects_lp(s4, 4, 1, 0, 0, NULL, &v), TG_OK);
  assert_int_equal(v, brute_objects_optimum(s4, 4));
  const tg_usage_record bad[] = {{{4, 1, 1}, 3, 1, 0}, {{4, 1, 1}, 0, 1, 0}};
  assert_int_equal(tg_bounds_objects_lp(bad, 2, 1, 0, 0, NULL, &v), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(v, 0);
  assert_int_equal(tg_bounds_objects_lp(r2, 2, 2, 0, 0, NULL, NULL), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_bounds_objects_lp(NULL, 0, 2, 0, 0, NULL, &v), TG_OK);
  assert_int_equal(v, 0);
  assert_true(random_fault_walk(lp_bound, 78, 30, 2, 40) >= 10);
}

TG_TEST_MAIN(cmocka_unit_test(tflite_vectors), cmocka_unit_test(texture_vectors),
             cmocka_unit_test(matches_brute_force), cmocka_unit_test(huge_task_indices),
             cmocka_unit_test(overflow_and_bad_input), cmocka_unit_test(large_input),
             cmocka_unit_test(shape_bound_brute_force), cmocka_unit_test(shape_bound_known_answer),
             cmocka_unit_test(shape_bound_below_every_plan), cmocka_unit_test(shape_bound_errors),
             cmocka_unit_test(subset_bound_exact_on_small_sets),
             cmocka_unit_test(subset_bound_below_every_plan), cmocka_unit_test(subset_bound_errors),
             cmocka_unit_test(lp_bound_brute_force), cmocka_unit_test(lp_bound_below_every_plan),
             cmocka_unit_test(lp_bound_errors))
