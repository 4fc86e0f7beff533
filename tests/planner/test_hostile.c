/* Hostile numbers through the public planner API: sizes near 2^64, totals and extents that
 * overflow 64 bits, huge and odd alignments, tasks near the top of the range, zero sizes,
 * malformed records, every host allocation failing once, and a very large record set. The
 * planner must answer with a clean error (never a wrapped total, never a crash) or a plan the
 * validator accepts; nothing may leak.
 *
 * TG_HOSTILE_RECORDS sets the size of the large set. The default is 10^6 (about 4 s in a
 * RelWithDebInfo build, 7 s under ASan). 10^7 passes too, but takes about 55 s and 1.7 GB,
 * which is too much for every CI run:  TG_HOSTILE_RECORDS=10000000 test_hostile */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define P2(k) ((uint64_t)1 << (k))

/* A strategy of a mode, with the fit where it matters. */
typedef struct combo {
  tg_strategy strategy;
  tg_fit fit;
} combo;

static const combo k_objects[] = {
    {TG_STRATEGY_NAIVE, TG_FIT_BEST},         {TG_STRATEGY_EQUALITY, TG_FIT_BEST},
    {TG_STRATEGY_GREEDY_IN_ORDER, TG_FIT_BEST}, {TG_STRATEGY_GREEDY_BY_BREADTH, TG_FIT_BEST},
    {TG_STRATEGY_GREEDY_BY_SIZE, TG_FIT_BEST},  {TG_STRATEGY_MIN_COST_FLOW, TG_FIT_BEST},
    {TG_STRATEGY_BEST, TG_FIT_BEST}};
static const combo k_offsets[] = {
    {TG_STRATEGY_NAIVE, TG_FIT_BEST},           {TG_STRATEGY_GREEDY_IN_ORDER, TG_FIT_BEST},
    {TG_STRATEGY_GREEDY_IN_ORDER, TG_FIT_FIRST}, {TG_STRATEGY_GREEDY_IN_ORDER, TG_FIT_WORST},
    {TG_STRATEGY_GREEDY_BY_BREADTH, TG_FIT_BEST}, {TG_STRATEGY_GREEDY_BY_SIZE, TG_FIT_BEST},
    {TG_STRATEGY_BEST, TG_FIT_BEST}};
#define COMBOS 7

static const combo *combos(tg_mode mode) { return mode == TG_MODE_OBJECTS ? k_objects : k_offsets; }

typedef struct outcome {
  tg_status st;
  uint64_t total;
} outcome;

/* Plan once, with a leak-counting allocator. A successful plan must pass the validator (with
 * the same alignment); a failure must leave `*out` NULL. The plan is returned through `keep`
 * when it is not NULL, else freed. */
static outcome plan_one(const tg_usage_record *r, size_t n, uint32_t dims, tg_mode mode, combo c,
                        uint64_t alignment, tg_plan **keep) {
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 0);
  tg_plan_options o = {.mode = mode, .strategy = c.strategy, .fit = c.fit, .alignment = alignment};
  tg_plan *p = (tg_plan *)1;
  outcome out = {tg_plan_compute(r, n, dims, &o, &fa.base, &p), 0};
  if (out.st != TG_OK) {
    assert_null(p);
  } else {
    assert_non_null(p);
    tg_test_assert_valid(r, n, dims, p, mode == TG_MODE_OFFSETS ? alignment : 0, NULL);
    out.total = p->total;
  }
  if (keep != NULL) {
    /* The plan refers to the counting allocator on this stack frame: hand out the same plan
     * made with the default allocator instead. */
    *keep = NULL;
    if (p != NULL) {
      tg_plan_options again = o;
      assert_int_equal(tg_plan_compute(r, n, dims, &again, NULL, keep), TG_OK);
    }
  }
  tg_plan_destroy(p);
  assert_int_equal(fa.live_blocks, 0);
  return out;
}

/* Every strategy of `mode` must give the status `expected`. */
static void expect_all(const tg_usage_record *r, size_t n, uint32_t dims, tg_mode mode,
                       uint64_t alignment, tg_status expected) {
  for (int i = 0; i < COMBOS; ++i) {
    combo c = combos(mode)[i];
    outcome o = plan_one(r, n, dims, mode, c, alignment, NULL);
    if (o.st != expected)
      fail_msg("%s %s/%s: %s, expected %s", tg_mode_name(mode), tg_strategy_name(c.strategy),
               tg_fit_name(c.fit), tg_status_name(o.st), tg_status_name(expected));
  }
}

/* Every strategy of `mode` succeeds with exactly `total`. */
static void expect_total(const tg_usage_record *r, size_t n, uint32_t dims, tg_mode mode,
                         uint64_t alignment, uint64_t total) {
  for (int i = 0; i < COMBOS; ++i) {
    combo c = combos(mode)[i];
    outcome o = plan_one(r, n, dims, mode, c, alignment, NULL);
    if (o.st != TG_OK || o.total != total)
      fail_msg("%s %s/%s: %s total %llu, expected TG_OK %llu", tg_mode_name(mode),
               tg_strategy_name(c.strategy), tg_fit_name(c.fit), tg_status_name(o.st),
               (unsigned long long)o.total, (unsigned long long)total);
  }
}

static tg_status bounds(const tg_usage_record *r, size_t n, uint32_t dims, tg_bounds *b) {
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 0);
  tg_status st = tg_bounds_compute(r, n, dims, &fa.base, b);
  assert_int_equal(fa.live_blocks, 0);
  if (st != TG_OK) assert_true(b->peak_live == 0 && b->positional_max == 0 && b->naive == 0);
  return st;
}

static tg_usage_record rec(uint64_t w, uint64_t h, uint64_t d, uint32_t first, uint32_t last) {
  tg_usage_record r = {.size = (tg_extent){w, h, d}, .first_task = first, .last_task = last};
  return r;
}

static void sizes_near_2_64(void **state) {
  (void)state;
  tg_bounds b;
  /* One record of UINT64_MAX bytes fits exactly, in every mode and dimensionality. */
  tg_usage_record one = rec(UINT64_MAX, 1, 1, 0, 3);
  expect_total(&one, 1, 1, TG_MODE_OBJECTS, 0, UINT64_MAX);
  expect_total(&one, 1, 1, TG_MODE_OFFSETS, 0, UINT64_MAX);
  expect_total(&one, 1, 1, TG_MODE_OFFSETS, 3, UINT64_MAX); /* offset 0 is aligned to anything */
  expect_total(&one, 1, 2, TG_MODE_OBJECTS, 0, UINT64_MAX);
  tg_usage_record deep = rec(1, 1, UINT64_MAX, 0, 0);
  expect_total(&deep, 1, 3, TG_MODE_OBJECTS, 0, UINT64_MAX);
  assert_int_equal(bounds(&one, 1, 1, &b), TG_OK);
  assert_true(b.peak_live == UINT64_MAX && b.positional_max == UINT64_MAX && b.naive == UINT64_MAX);

  /* Two live records summing past 2^64: no plan exists, and none may wrap around. */
  tg_usage_record both[2] = {rec(P2(63), 1, 1, 0, 1), rec(P2(63), 1, 1, 1, 2)};
  expect_all(both, 2, 1, TG_MODE_OFFSETS, 0, TG_ERROR_OVERFLOW);
  expect_all(both, 2, 1, TG_MODE_OBJECTS, 0, TG_ERROR_OVERFLOW);
  assert_int_equal(bounds(both, 2, 1, &b), TG_ERROR_OVERFLOW);
  tg_usage_record plus_one[2] = {rec(UINT64_MAX, 1, 1, 0, 0), rec(1, 1, 1, 0, 0)};
  expect_all(plus_one, 2, 1, TG_MODE_OFFSETS, 0, TG_ERROR_OVERFLOW);
  expect_all(plus_one, 2, 1, TG_MODE_OBJECTS, 0, TG_ERROR_OVERFLOW);
  /* Zero-size records add nothing, even next to UINT64_MAX. */
  tg_usage_record plus_zero[2] = {rec(UINT64_MAX, 1, 1, 0, 0), rec(0, 1, 1, 0, 0)};
  expect_total(plus_zero, 2, 1, TG_MODE_OFFSETS, 0, UINT64_MAX);
  expect_total(plus_zero, 2, 1, TG_MODE_OBJECTS, 0, UINT64_MAX);

  /* The same sizes one after the other fit when shared: the naive layout overflows, the
   * sharing strategies and `best` (which skips layouts that overflow) do not. */
  tg_usage_record seq[2] = {rec(P2(63), 1, 1, 0, 0), rec(P2(63), 1, 1, 1, 1)};
  for (int m = 0; m <= 1; ++m) {
    for (int i = 0; i < COMBOS; ++i) {
      combo c = combos((tg_mode)m)[i];
      outcome o = plan_one(seq, 2, 1, (tg_mode)m, c, 0, NULL);
      if (c.strategy == TG_STRATEGY_NAIVE) {
        assert_int_equal(o.st, TG_ERROR_OVERFLOW);
      } else {
        if (o.st != TG_OK || o.total != P2(63))
          fail_msg("%s %s/%s: %s total %llu on two sequential 2^63 records",
                   tg_mode_name((tg_mode)m), tg_strategy_name(c.strategy), tg_fit_name(c.fit),
                   tg_status_name(o.st), (unsigned long long)o.total);
      }
    }
  }
  /* The naive sum overflows, so the bounds do too (they report it rather than wrap). */
  assert_int_equal(bounds(seq, 2, 1, &b), TG_ERROR_OVERFLOW);

  /* Many records of 2^62 bytes, all live at once: the fourth one no longer fits. */
  tg_usage_record four[4];
  for (int i = 0; i < 4; ++i) four[i] = rec(P2(62), 1, 1, 0, 9);
  expect_total(four, 3, 1, TG_MODE_OFFSETS, 0, 3 * P2(62));
  expect_all(four, 4, 1, TG_MODE_OFFSETS, 0, TG_ERROR_OVERFLOW);
  expect_all(four, 4, 1, TG_MODE_OBJECTS, 0, TG_ERROR_OVERFLOW);
}

static void extents_overflow(void **state) {
  (void)state;
  tg_bounds b;
  uint64_t v = 1;
  assert_int_equal(tg_extent_volume((tg_extent){P2(32), P2(32), 1}, &v), TG_ERROR_OVERFLOW);
  assert_int_equal(tg_extent_volume((tg_extent){P2(22), P2(21), P2(21)}, &v), TG_ERROR_OVERFLOW);
  assert_int_equal(tg_extent_volume((tg_extent){P2(21), P2(21), P2(21)}, &v), TG_OK);
  assert_true(v == P2(63));
  /* A zero dimension makes the volume 0, however large the others. */
  assert_int_equal(tg_extent_volume((tg_extent){0, UINT64_MAX, UINT64_MAX}, &v), TG_OK);
  assert_true(v == 0);

  tg_usage_record r2 = rec(P2(32), P2(32), 1, 0, 1);
  expect_all(&r2, 1, 2, TG_MODE_OBJECTS, 0, TG_ERROR_OVERFLOW);
  expect_all(&r2, 1, 2, TG_MODE_OFFSETS, 0, TG_ERROR_UNSUPPORTED); /* offsets mode is 1D only */
  assert_int_equal(bounds(&r2, 1, 2, &b), TG_ERROR_OVERFLOW);
  tg_usage_record wide = rec(UINT64_MAX, 2, 1, 0, 0);
  expect_all(&wide, 1, 2, TG_MODE_OBJECTS, 0, TG_ERROR_OVERFLOW);
  tg_usage_record r3[2] = {rec(P2(22), P2(21), P2(21), 0, 0), rec(1, 1, 1, 0, 0)};
  expect_all(r3, 2, 3, TG_MODE_OBJECTS, 0, TG_ERROR_OVERFLOW);
  assert_int_equal(bounds(r3, 2, 3, &b), TG_ERROR_OVERFLOW);
  /* Each volume fits but the live ones sum past 2^64: every strategy, including 2D/3D
   * greedy-by-size (which once reported TG_ERROR_INTERNAL here), reports the overflow. */
  tg_usage_record sum2[2] = {rec(P2(32), P2(32) - 1, 1, 0, 1), rec(P2(32), 1, 1, 0, 0)};
  expect_all(sum2, 2, 2, TG_MODE_OBJECTS, 0, TG_ERROR_OVERFLOW);
  tg_usage_record sum3[2] = {rec(P2(32), P2(32) - 1, 1, 0, 1), rec(1, 1, P2(32), 0, 0)};
  expect_all(sum3, 2, 3, TG_MODE_OBJECTS, 0, TG_ERROR_OVERFLOW);
  assert_int_equal(bounds(sum3, 2, 3, &b), TG_ERROR_OVERFLOW);
  tg_usage_record fits3 = rec(P2(21), P2(21), P2(21), 0, 0);
  expect_total(&fits3, 1, 3, TG_MODE_OBJECTS, 0, P2(63));
  tg_usage_record flat = rec(0, UINT64_MAX, UINT64_MAX, 0, 0);
  expect_total(&flat, 1, 3, TG_MODE_OBJECTS, 0, 0);

  /* Each record fits, but an object holding both (per-dimension maxima: 2^32 x 2^32) would
   * not: every strategy either keeps them apart or reports the overflow, and `best` finds the
   * plan that fits. */
  tg_usage_record cross[2] = {rec(P2(32), 1, 1, 0, 0), rec(1, P2(32), 1, 1, 1)};
  for (int i = 0; i < COMBOS; ++i) {
    outcome o = plan_one(cross, 2, 2, TG_MODE_OBJECTS, k_objects[i], 0, NULL);
    assert_true(o.st == TG_OK || o.st == TG_ERROR_OVERFLOW);
    if (k_objects[i].strategy == TG_STRATEGY_BEST || k_objects[i].strategy == TG_STRATEGY_NAIVE) {
      assert_int_equal(o.st, TG_OK);
      assert_true(o.total == P2(33));
    }
  }
  assert_int_equal(bounds(cross, 2, 2, &b), TG_OK);
  assert_true(b.peak_live == P2(32) && b.naive == P2(33));
  /* 3D, with a third record of a different shape. */
  tg_usage_record cross3[3] = {rec(P2(32), 1, 1, 0, 0), rec(1, P2(32), 1, 1, 1),
                               rec(1, 1, P2(32), 2, 2)};
  outcome o = plan_one(cross3, 3, 3, TG_MODE_OBJECTS, (combo){TG_STRATEGY_BEST, TG_FIT_BEST}, 0, NULL);
  assert_int_equal(o.st, TG_OK);
  assert_true(o.total <= 3 * P2(32));
}

static double seconds_since(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* A model-like set of n records: short lifetimes along a long chain of tasks (a few records
 * live at once), some long-lived ones, sizes from 1 byte to 16 MiB, some ties. */
static void large_set(tg_usage_record *r, size_t n) {
  tg_test_rng rng = {20240607};
  for (size_t i = 0; i < n; ++i) {
    uint32_t first = (uint32_t)(i / 2);
    uint64_t kind = tg_test_rng_range(&rng, 0, 99);
    uint32_t len = kind < 90 ? (uint32_t)tg_test_rng_range(&rng, 0, 4)
                             : kind < 99 ? (uint32_t)tg_test_rng_range(&rng, 5, 200)
                                         : (uint32_t)tg_test_rng_range(&rng, 200, 5000);
    uint64_t size = tg_test_rng_range(&rng, 0, 3) == 0 ? 4096 : tg_test_rng_range(&rng, 1, P2(24));
    r[i] = rec(size, 1, 1, first, first + len);
  }
}

static void many_records(void **state) {
  (void)state;
  size_t n = 1000000;
  const char *env = getenv("TG_HOSTILE_RECORDS");
  if (env != NULL && *env != '\0') n = (size_t)strtoull(env, NULL, 10);
  tg_usage_record *r = malloc(n * sizeof *r);
  assert_non_null(r);
  large_set(r, n);

  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  tg_bounds b;
  assert_int_equal(tg_bounds_compute(r, n, 1, NULL, &b), TG_OK);
  double t_bounds = seconds_since(&t0);

  tg_plan_options o = {.mode = TG_MODE_OFFSETS, .strategy = TG_STRATEGY_GREEDY_BY_SIZE, .alignment = 64};
  tg_plan *p = NULL;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  assert_int_equal(tg_plan_compute(r, n, 1, &o, NULL, &p), TG_OK);
  double t_plan = seconds_since(&t0);

  clock_gettime(CLOCK_MONOTONIC, &t0);
  tg_test_assert_valid(r, n, 1, p, 64, NULL);
  double t_valid = seconds_since(&t0);
  assert_true(p->total >= b.peak_live);
  assert_true(b.peak_live <= b.positional_max && b.positional_max <= b.naive);
  print_message("%zu records: bounds %.2f s, offsets greedy-by-size %.2f s, validation %.2f s; "
                "total %llu, peak live %llu (%.3fx)\n",
                n, t_bounds, t_plan, t_valid, (unsigned long long)p->total,
                (unsigned long long)b.peak_live, (double)p->total / (double)b.peak_live);
  tg_plan_destroy(p);
  free(r);
}

static void zero_sizes(void **state) {
  (void)state;
  tg_bounds b;
  tg_usage_record zeros[4] = {rec(0, 1, 1, 0, 5), rec(0, 1, 1, 0, 5), rec(0, 1, 1, 3, 3),
                              rec(0, 1, 1, 5, 9)};
  expect_total(zeros, 4, 1, TG_MODE_OBJECTS, 0, 0);
  expect_total(zeros, 4, 1, TG_MODE_OFFSETS, 0, 0);
  expect_total(zeros, 4, 1, TG_MODE_OFFSETS, 24, 0);
  assert_int_equal(bounds(zeros, 4, 1, &b), TG_OK);
  assert_true(b.peak_live == 0 && b.positional_max == 0 && b.naive == 0);
  /* Mixed with real tensors, zero-size ones take no room. */
  tg_usage_record mixed[4] = {rec(16, 1, 1, 0, 5), rec(0, 1, 1, 0, 5), rec(8, 1, 1, 2, 3),
                              rec(0, 1, 1, 3, 9)};
  expect_total(mixed, 4, 1, TG_MODE_OFFSETS, 0, 24);
  for (int i = 0; i < COMBOS; ++i) {
    outcome o = plan_one(mixed, 4, 1, TG_MODE_OBJECTS, k_objects[i], 0, NULL);
    assert_int_equal(o.st, TG_OK);
    assert_true(o.total == 24);
  }
  /* 2D and 3D textures with a zero dimension have no texels. */
  tg_usage_record tex[2] = {rec(0, 5, 1, 0, 1), rec(7, 0, 1, 1, 2)};
  expect_total(tex, 2, 2, TG_MODE_OBJECTS, 0, 0);
  tg_usage_record tex3[2] = {rec(2, 2, 0, 0, 1), rec(2, 2, 2, 1, 2)};
  for (int i = 0; i < COMBOS; ++i) {
    outcome o = plan_one(tex3, 2, 3, TG_MODE_OBJECTS, k_objects[i], 0, NULL);
    assert_int_equal(o.st, TG_OK);
    assert_true(o.total == 8);
  }
  /* No records at all. */
  expect_total(NULL, 0, 1, TG_MODE_OBJECTS, 0, 0);
  expect_total(NULL, 0, 1, TG_MODE_OFFSETS, 0, 0);
  assert_int_equal(bounds(NULL, 0, 3, &b), TG_OK);
}

/* A plan and records that do not match it in shape: the validator must reject the records. */
static void expect_invalid_records(const tg_usage_record *r, size_t n, uint32_t dims) {
  tg_bounds b;
  expect_all(r, n, dims, TG_MODE_OBJECTS, 0, TG_ERROR_INVALID_ARGUMENT);
  if (dims == 1) expect_all(r, n, dims, TG_MODE_OFFSETS, 0, TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(bounds(r, n, dims, &b), TG_ERROR_INVALID_ARGUMENT);
  for (int m = 0; m <= 1; ++m) {
    if (m == TG_MODE_OFFSETS && dims != 1) continue;
    tg_plan *p = NULL;
    assert_int_equal(tg_plan_create((tg_mode)m, dims, n, n, NULL, &p), TG_OK);
    if (m == TG_MODE_OBJECTS) {
      for (size_t i = 0; i < n; ++i) {
        p->object_of[i] = (uint32_t)i;
        p->object_sizes[i] = r[i].size;
      }
    }
    tg_error_info err = {{0}};
    assert_int_equal(tg_plan_validate(r, n, dims, p, 0, NULL, NULL, &err),
                     TG_ERROR_INVALID_ARGUMENT);
    assert_true(err.message[0] != '\0');
    tg_plan_destroy(p);
  }
}

static void malformed_records(void **state) {
  (void)state;
  /* first > last, alone and after valid records. */
  tg_usage_record backwards = rec(4, 1, 1, 5, 1);
  expect_invalid_records(&backwards, 1, 1);
  tg_usage_record later[3] = {rec(4, 1, 1, 0, 1), rec(8, 1, 1, 1, 2), rec(4, 1, 1, TG_MAX_TASK, 0)};
  expect_invalid_records(later, 3, 1);
  tg_usage_record backwards2 = rec(4, 4, 1, 2, 1);
  expect_invalid_records(&backwards2, 1, 2);
  /* Unused dimensions must be exactly 1: neither 0 nor 2. */
  tg_usage_record tall = rec(4, 2, 1, 0, 1);
  expect_invalid_records(&tall, 1, 1);
  tg_usage_record flat = rec(4, 0, 1, 0, 1);
  expect_invalid_records(&flat, 1, 1);
  tg_usage_record deep1 = rec(4, 1, 0, 0, 1);
  expect_invalid_records(&deep1, 1, 1);
  tg_usage_record deep2[2] = {rec(4, 4, 1, 0, 1), rec(4, 4, 2, 0, 1)};
  expect_invalid_records(deep2, 2, 2);
  tg_usage_record deep0 = rec(4, 4, 0, 0, 1);
  expect_invalid_records(&deep0, 1, 2);
  /* Both at once, with an overflowing size: some clean error, never a plan. */
  tg_usage_record worst = rec(UINT64_MAX, UINT64_MAX, 1, 9, 0);
  for (int i = 0; i < COMBOS; ++i) {
    outcome o = plan_one(&worst, 1, 1, TG_MODE_OFFSETS, k_offsets[i], 0, NULL);
    assert_true(o.st == TG_ERROR_INVALID_ARGUMENT || o.st == TG_ERROR_OVERFLOW);
  }
  /* Bad dimensionality and a missing array. */
  tg_usage_record ok = rec(4, 1, 1, 0, 1);
  tg_plan *p = (tg_plan *)1;
  assert_int_equal(tg_plan_compute(&ok, 1, 0, NULL, NULL, &p), TG_ERROR_INVALID_ARGUMENT);
  assert_null(p);
  assert_int_equal(tg_plan_compute(&ok, 1, 4, NULL, NULL, &p), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_plan_compute(NULL, 3, 1, NULL, NULL, &p), TG_ERROR_INVALID_ARGUMENT);
  tg_plan_options bad;
  memset(&bad, 0, sizeof bad);
  bad.strategy = TG_STRATEGY_COUNT;
  assert_int_equal(tg_plan_compute(&ok, 1, 1, &bad, NULL, &p), TG_ERROR_INVALID_ARGUMENT);
  tg_bounds b;
  assert_int_equal(tg_bounds_compute(NULL, 2, 1, NULL, &b), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_bounds_compute(&ok, 1, 0, NULL, &b), TG_ERROR_INVALID_ARGUMENT);
}

static void huge_alignment(void **state) {
  (void)state;
  /* Alignment 2^63: only offsets 0 and 2^63 exist. Two live records fit, a third does not. */
  tg_usage_record two[2] = {rec(5, 1, 1, 0, 1), rec(7, 1, 1, 1, 2)};
  for (int i = 0; i < COMBOS; ++i) {
    tg_plan *p = NULL;
    outcome o = plan_one(two, 2, 1, TG_MODE_OFFSETS, k_offsets[i], P2(63), &p);
    assert_int_equal(o.st, TG_OK);
    assert_true(p->offset_of[0] % P2(63) == 0 && p->offset_of[1] % P2(63) == 0);
    assert_true(p->offset_of[0] != p->offset_of[1]);
    assert_true(o.total == P2(63) + 5 || o.total == P2(63) + 7);
    tg_plan_destroy(p);
  }
  tg_usage_record three[3] = {rec(5, 1, 1, 0, 1), rec(7, 1, 1, 1, 2), rec(1, 1, 1, 1, 1)};
  expect_all(three, 3, 1, TG_MODE_OFFSETS, P2(63), TG_ERROR_OVERFLOW);
  /* Records apart in time share offset 0. */
  tg_usage_record apart[3] = {rec(5, 1, 1, 0, 0), rec(7, 1, 1, 1, 1), rec(9, 1, 1, 2, 2)};
  for (int i = 1; i < COMBOS; ++i) { /* every strategy but naive */
    outcome o = plan_one(apart, 3, 1, TG_MODE_OFFSETS, k_offsets[i], P2(63), NULL);
    assert_int_equal(o.st, TG_OK);
    assert_true(o.total == 9);
  }
  /* The same through per-record alignments, and the largest alignment there is. */
  tg_usage_record per[2] = {rec(5, 1, 1, 0, 1), rec(7, 1, 1, 1, 2)};
  per[0].alignment = per[1].alignment = P2(63);
  for (int i = 0; i < COMBOS; ++i)
    assert_int_equal(plan_one(per, 2, 1, TG_MODE_OFFSETS, k_offsets[i], 0, NULL).st, TG_OK);
  expect_total(two, 1, 1, TG_MODE_OFFSETS, UINT64_MAX, 5);
  expect_all(two, 2, 1, TG_MODE_OFFSETS, UINT64_MAX, TG_ERROR_OVERFLOW);
  /* More than 2^63 bytes cannot sit at 2^63, and at 0 it covers 2^63 too: no room for a
   * second live record anywhere. */
  tg_usage_record big[2] = {rec(1, 1, 1, 0, 1), rec(P2(63) + 1, 1, 1, 0, 1)};
  expect_all(big, 2, 1, TG_MODE_OFFSETS, P2(63), TG_ERROR_OVERFLOW);

  /* tg_plan_objects_to_offsets with the same alignment: two objects fit, three do not. */
  for (size_t n = 2; n <= 3; ++n) {
    tg_plan *objects = NULL, *offsets = (tg_plan *)1;
    assert_int_equal(plan_one(three, n, 1, TG_MODE_OBJECTS, k_objects[0], 0, &objects).st, TG_OK);
    tg_status st = tg_plan_objects_to_offsets(objects, P2(63), NULL, &offsets);
    if (n == 2) {
      assert_int_equal(st, TG_OK);
      tg_test_assert_valid(three, n, 1, offsets, P2(63), NULL);
    } else {
      assert_int_equal(st, TG_ERROR_OVERFLOW);
      assert_null(offsets);
    }
    tg_plan_destroy(offsets);
    tg_plan_destroy(objects);
  }
}

static void odd_alignment(void **state) {
  (void)state;
  enum { N = 300 };
  tg_usage_record r[N];
  tg_test_rng rng = {99};
  tg_test_random_spec spec = {1, N, 80, 6, 5000, 1, 0};
  tg_test_random_records(&rng, &spec, r);
  static const uint64_t aligns[] = {3, 24, 7, 1000};
  for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; ++a) {
    for (int i = 0; i < COMBOS; ++i) {
      tg_plan *p = NULL;
      outcome o = plan_one(r, N, 1, TG_MODE_OFFSETS, k_offsets[i], aligns[a], &p);
      assert_int_equal(o.st, TG_OK);
      for (size_t k = 0; k < N; ++k) assert_true(p->offset_of[k] % aligns[a] == 0);
      tg_plan_destroy(p);
    }
  }
  /* Per-record alignments 3 and 24 under a plan alignment of 16: each offset is a multiple
   * of the larger of the two. */
  for (size_t k = 0; k < N; ++k) r[k].alignment = k % 3 == 0 ? 3 : k % 3 == 1 ? 24 : 0;
  for (int i = 0; i < COMBOS; ++i) {
    tg_plan *p = NULL;
    assert_int_equal(plan_one(r, N, 1, TG_MODE_OFFSETS, k_offsets[i], 16, &p).st, TG_OK);
    for (size_t k = 0; k < N; ++k) {
      uint64_t want = r[k].alignment > 16 ? r[k].alignment : 16;
      assert_true(p->offset_of[k] % want == 0);
    }
    tg_plan_destroy(p);
  }
}

static void tasks_near_the_top(void **state) {
  (void)state;
  const uint32_t M = TG_MAX_TASK;
  tg_usage_record r[6] = {rec(16, 1, 1, M - 2, M),          rec(8, 1, 1, M, M),
                          rec(4, 1, 1, 0, M),               rec(32, 1, 1, UINT32_MAX, UINT32_MAX),
                          rec(64, 1, 1, M + 1, UINT32_MAX), rec(2, 1, 1, 0, UINT32_MAX)};
  for (int m = 0; m <= 1; ++m)
    for (int i = 0; i < COMBOS; ++i)
      assert_int_equal(plan_one(r, 6, 1, (tg_mode)m, combos((tg_mode)m)[i], 8, NULL).st, TG_OK);
  tg_bounds b;
  assert_int_equal(bounds(r, 6, 1, &b), TG_OK);
  /* At UINT32_MAX: 32 + 64 + 2; at M: 16 + 8 + 4 + 2. */
  assert_true(b.peak_live == 98);
  assert_true(b.naive == 126);
  /* 2D, many records spread over the whole task range. */
  enum { N = 200 };
  tg_usage_record t[N];
  tg_test_rng rng = {7};
  for (size_t i = 0; i < N; ++i) {
    uint32_t first = (uint32_t)tg_test_rng_range(&rng, (uint64_t)UINT32_MAX - 50, UINT32_MAX);
    if (i % 4 == 0) first = (uint32_t)tg_test_rng_range(&rng, 0, UINT32_MAX);
    uint32_t last = (uint32_t)tg_test_rng_range(&rng, first, UINT32_MAX);
    t[i] = rec(tg_test_rng_range(&rng, 1, 64), tg_test_rng_range(&rng, 1, 64), 1, first, last);
  }
  for (int i = 0; i < COMBOS; ++i)
    assert_int_equal(plan_one(t, N, 2, TG_MODE_OBJECTS, k_objects[i], 0, NULL).st, TG_OK);
  assert_int_equal(bounds(t, N, 2, &b), TG_OK);
}

/* Every host allocation of planning, bounds and validation fails once, for every strategy of
 * both modes: TG_ERROR_OUT_OF_HOST_MEMORY and nothing leaked, or (past the last allocation)
 * the same plan as without failures. */
static void allocation_failures(void **state) {
  (void)state;
  static const char *const files[2] = {"records/hand_landmark_lite.buffer.csv",
                                       "records/hand_landmark_lite.tex2.csv"};
  uint64_t points = 0;
  for (int f = 0; f < 2; ++f) {
    char path[1024];
    tg_record_set *set = NULL;
    tg_error_info err = {{0}};
    assert_int_equal(tg_records_read_csv(tg_test_data_path(path, sizeof path, files[f]), NULL, &set,
                                         &err), TG_OK);
    for (int m = 0; m <= 1; ++m) {
      if (m == TG_MODE_OFFSETS && set->dims != 1) continue;
      for (int i = 0; i < COMBOS; ++i) {
        tg_plan_options o = {
            .mode = (tg_mode)m, .strategy = combos((tg_mode)m)[i].strategy, .fit = combos((tg_mode)m)[i].fit,
            .alignment = m == TG_MODE_OFFSETS ? 64 : 0
        };
        tg_plan *ref = NULL;
        assert_int_equal(tg_plan_compute(set->records, set->count, set->dims, &o, NULL, &ref), TG_OK);
        for (uint64_t n = 1;; ++n) {
          tg_failing_allocator fa;
          tg_failing_allocator_init(&fa, NULL, n);
          tg_plan *p = (tg_plan *)1;
          tg_status st = tg_plan_compute(set->records, set->count, set->dims, &o, &fa.base, &p);
          int done = fa.failures == 0;
          if (done) {
            assert_int_equal(st, TG_OK);
            assert_true(p->total == ref->total && p->object_count == ref->object_count);
          } else {
            if (st != TG_ERROR_OUT_OF_HOST_MEMORY)
              fail_msg("%s %s: allocation %llu failed, status %s", tg_mode_name(o.mode),
                       tg_strategy_name(o.strategy), (unsigned long long)n, tg_status_name(st));
            assert_null(p);
            ++points;
          }
          tg_plan_destroy(p);
          assert_int_equal(fa.live_blocks, 0);
          if (done) break;
        }
        /* Validation of the reference plan. */
        for (uint64_t n = 1;; ++n) {
          tg_failing_allocator fa;
          tg_failing_allocator_init(&fa, NULL, n);
          tg_status st = tg_plan_validate(set->records, set->count, set->dims, ref, o.alignment,
                                          NULL, &fa.base, NULL);
          if (tg_test_walk_step(&fa, st, TG_OK)) break;
          ++points;
        }
        tg_plan_destroy(ref);
      }
    }
    tg_bounds ref_bounds, b;
    assert_int_equal(tg_bounds_compute(set->records, set->count, set->dims, NULL, &ref_bounds), TG_OK);
    for (uint64_t n = 1;; ++n) {
      tg_failing_allocator fa;
      tg_failing_allocator_init(&fa, NULL, n);
      tg_status st = tg_bounds_compute(set->records, set->count, set->dims, &fa.base, &b);
      assert_int_equal(fa.live_blocks, 0);
      if (fa.failures == 0) {
        assert_int_equal(st, TG_OK);
        assert_memory_equal(&b, &ref_bounds, sizeof b);
        break;
      }
      assert_int_equal(st, TG_ERROR_OUT_OF_HOST_MEMORY);
      ++points;
    }
    tg_record_set_destroy(set);
  }
  print_message("planner: host allocation failure injected at %llu points\n",
                (unsigned long long)points);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sizes_near_2_64),   cmocka_unit_test(extents_overflow),
      cmocka_unit_test(zero_sizes),        cmocka_unit_test(malformed_records),
      cmocka_unit_test(huge_alignment),    cmocka_unit_test(odd_alignment),
      cmocka_unit_test(tasks_near_the_top), cmocka_unit_test(allocation_failures),
      cmocka_unit_test(many_records),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
