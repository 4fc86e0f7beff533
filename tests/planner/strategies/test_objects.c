/* Objects-mode strategies: TFLite's test vectors (object ids, sizes and totals), the same
 * vectors shuffled, random record sets in 1D/2D/3D (validity, determinism, `best` = the
 * smallest), the may-share relation, allocation failures, and the real models' records with
 * totals per strategy printed. */
#include "support/tg_test.h"
#include "support/tg_planner_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REC(size, first, last) {{(size), 1, 1}, (first), (last), 0}
#define REC2(w, h, first, last) {{(w), (h), 1}, (first), (last), 0}
#define REC3(w, h, d, first, last) {{(w), (h), (d)}, (first), (last), 0}
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const tg_strategy k_object_strategies[] = {
    TG_STRATEGY_NAIVE,          TG_STRATEGY_EQUALITY,      TG_STRATEGY_GREEDY_IN_ORDER,
    TG_STRATEGY_GREEDY_BY_BREADTH, TG_STRATEGY_GREEDY_BY_SIZE, TG_STRATEGY_MIN_COST_FLOW,
    TG_STRATEGY_BEST,
};

/* ---- helpers -------------------------------------------------------------------------- */

static tg_status plan_objects(const tg_usage_record *records, size_t count, uint32_t dims,
                              tg_strategy strategy, const tg_share_relation *relation,
                              const tg_allocator *alloc, tg_plan **out) {
  tg_plan_options o = {.mode = TG_MODE_OBJECTS, .strategy = strategy, .relation = relation};
  o.time_limit_ms = TG_TIME_LIMIT_NONE; /* `best` here: the smallest strategy (search: tests/planner/search) */
  return tg_plan_compute(records, count, dims, &o, alloc, out);
}

static uint64_t volume(tg_extent e) { return e.w * e.h * e.d; }

/* A check of the plan's own, independent of the validator: ids in range, objects exactly the
 * per-dimension max of their records, total the sum of volumes, and no two records of one
 * object intersecting in time or forbidden by the relation. */
static void check_plan(const tg_usage_record *r, size_t n, uint32_t dims, const tg_plan *p,
                       const tg_share_relation *rel) {
  assert_int_equal(p->mode, TG_MODE_OBJECTS);
  assert_int_equal(p->dims, dims);
  assert_int_equal(p->record_count, n);
  tg_extent *ext = calloc(p->object_count ? p->object_count : 1, sizeof *ext);
  assert_non_null(ext);
  for (size_t i = 0; i < n; ++i) {
    uint32_t o = p->object_of[i];
    if (o >= p->object_count) fail_msg("record %zu: object %u out of range", i, o);
    tg_extent *e = &ext[o];
    if (r[i].size.w > e->w) e->w = r[i].size.w;
    if (r[i].size.h > e->h) e->h = r[i].size.h;
    if (r[i].size.d > e->d) e->d = r[i].size.d;
  }
  uint64_t total = 0;
  for (size_t k = 0; k < p->object_count; ++k) {
    const tg_extent *a = &ext[k], *b = &p->object_sizes[k];
    if (a->w != b->w || a->h != b->h || a->d != b->d)
      fail_msg("object %zu: size is not the max of its records", k);
    total += volume(*b);
  }
  assert_int_equal(total, p->total);
  /* Records by first task, then each against the later-starting ones that overlap it. */
  size_t *idx = malloc((n ? n : 1) * sizeof *idx);
  assert_non_null(idx);
  for (size_t i = 0; i < n; ++i) idx[i] = i;
  for (size_t i = 1; i < n; ++i) /* insertion sort: n is at most a few thousand here */
    for (size_t j = i; j > 0 && r[idx[j - 1]].first_task > r[idx[j]].first_task; --j) {
      size_t t = idx[j];
      idx[j] = idx[j - 1];
      idx[j - 1] = t;
    }
  for (size_t a = 0; a < n; ++a) {
    size_t i = idx[a];
    for (size_t b = a + 1; b < n && r[idx[b]].first_task <= r[i].last_task; ++b)
      if (p->object_of[idx[b]] == p->object_of[i])
        fail_msg("records %zu and %zu overlap in time but share object %u", i, idx[b],
                 p->object_of[i]);
  }
  if (rel != NULL)
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n; ++j)
        if (p->object_of[i] == p->object_of[j] && !rel->may_share(rel->user, i, j))
          fail_msg("records %zu and %zu share object %u against the relation", i, j,
                   p->object_of[i]);
  free(idx);
  free(ext);
}

static tg_plan *plan_ok(const tg_usage_record *records, size_t count, uint32_t dims,
                        tg_strategy strategy, const tg_share_relation *relation) {
  tg_plan *p = NULL;
  tg_status st = plan_objects(records, count, dims, strategy, relation, NULL, &p);
  if (st != TG_OK)
    fail_msg("%s %uD: %s", tg_strategy_name(strategy), (unsigned)dims, tg_status_name(st));
  assert_non_null(p);
  check_plan(records, count, dims, p, relation);
  tg_test_assert_valid(records, count, dims, p, 0, relation);
  return p;
}

static void expect_plan(const tg_usage_record *records, size_t count, uint32_t dims,
                        tg_strategy strategy, const uint32_t *ids, const tg_extent *sizes,
                        size_t objects, uint64_t total) {
  tg_plan *p = plan_ok(records, count, dims, strategy, NULL);
  const char *name = tg_strategy_name(strategy);
  if (ids != NULL)
    for (size_t i = 0; i < count; ++i)
      if (p->object_of[i] != ids[i])
        fail_msg("%s: record %zu has object %u, TFLite %u", name, i, p->object_of[i], ids[i]);
  if (sizes != NULL) {
    if (p->object_count != objects)
      fail_msg("%s: %zu objects, TFLite %zu", name, p->object_count, objects);
    for (size_t k = 0; k < objects; ++k) {
      const tg_extent *a = &p->object_sizes[k], *b = &sizes[k];
      if (a->w != b->w || a->h != b->h || a->d != b->d)
        fail_msg("%s: object %zu is (%llu,%llu,%llu), TFLite (%llu,%llu,%llu)", name, k,
                 (unsigned long long)a->w, (unsigned long long)a->h, (unsigned long long)a->d,
                 (unsigned long long)b->w, (unsigned long long)b->h, (unsigned long long)b->d);
    }
  }
  if (p->total != total)
    fail_msg("%s: total %llu, TFLite %llu", name, (unsigned long long)p->total,
             (unsigned long long)total);
  tg_plan_destroy(p);
}

#define E1(s) {(s), 1, 1}
#define E2(w, h) {(w), (h), 1}
#define E3(w, h, d) {(w), (h), (d)}

/* ---- sections 2-5: 1D vectors ------------------------------------------------------- */

static void empty_records(void **state) {
  (void)state;
  for (uint32_t dims = 1; dims <= 3; ++dims)
    for (size_t s = 0; s < COUNT(k_object_strategies); ++s) {
      tg_plan *p = NULL;
      assert_int_equal(plan_objects(NULL, 0, dims, k_object_strategies[s], NULL, NULL, &p), TG_OK);
      assert_int_equal(p->object_count, 0);
      assert_int_equal(p->total, 0);
      tg_plan_destroy(p);
    }
}

static void one_record(void **state) {
  (void)state;
  const tg_usage_record r[] = {REC(16, 0, 1)};
  const uint32_t ids[] = {0};
  const tg_extent sizes[] = {E1(16)};
  for (size_t s = 0; s < COUNT(k_object_strategies); ++s)
    expect_plan(r, 1, 1, k_object_strategies[s], ids, sizes, 1, 16);
}

static void chain_records(void **state) {
  (void)state;
  const tg_usage_record *r = tg_test_tflite_chain;
  const size_t n = COUNT(tg_test_tflite_chain);
  expect_plan(r, n, 1, TG_STRATEGY_NAIVE, (const uint32_t[]){0, 1, 2, 3, 4},
              (const tg_extent[]){E1(16), E1(8), E1(64), E1(32), E1(8)}, 5, 128);
  expect_plan(r, n, 1, TG_STRATEGY_EQUALITY, (const uint32_t[]){0, 1, 2, 3, 1},
              (const tg_extent[]){E1(16), E1(8), E1(64), E1(32)}, 4, 120);
  const uint32_t shared[] = {0, 1, 0, 1, 0};
  const tg_extent two[] = {E1(64), E1(32)};
  expect_plan(r, n, 1, TG_STRATEGY_MIN_COST_FLOW, shared, two, 2, 96);
  expect_plan(r, n, 1, TG_STRATEGY_GREEDY_IN_ORDER, shared, two, 2, 96);
  expect_plan(r, n, 1, TG_STRATEGY_GREEDY_BY_BREADTH, shared, two, 2, 96);
  expect_plan(r, n, 1, TG_STRATEGY_GREEDY_BY_SIZE, shared, two, 2, 96);
  /* TFLite's GREEDY_BEST gives the same plan (section 8). */
  expect_plan(r, n, 1, TG_STRATEGY_BEST, shared, two, 2, 96);
}

static void complex_records(void **state) {
  (void)state;
  const tg_usage_record *r = tg_test_tflite_complex;
  const size_t n = COUNT(tg_test_tflite_complex);
  expect_plan(r, n, 1, TG_STRATEGY_NAIVE, (const uint32_t[]){0, 1, 2, 3, 4, 5, 6, 7, 8},
              (const tg_extent[]){E1(32), E1(32), E1(8), E1(16), E1(8), E1(64), E1(8), E1(8),
                                  E1(16)},
              9, 192);
  expect_plan(r, n, 1, TG_STRATEGY_EQUALITY, (const uint32_t[]){0, 1, 2, 3, 4, 5, 4, 2, 3},
              (const tg_extent[]){E1(32), E1(32), E1(8), E1(16), E1(8), E1(64)}, 6, 160);
  /* Min-cost flow: TFLite's optimum cost, sizes and total; which of two equally cheap chains
   * gets which record differs (TFLite: 0,1,2,0,3,1,3,2,0). */
  expect_plan(r, n, 1, TG_STRATEGY_MIN_COST_FLOW, NULL,
              (const tg_extent[]){E1(32), E1(64), E1(8), E1(8)}, 4, 112);
  expect_plan(r, n, 1, TG_STRATEGY_GREEDY_IN_ORDER, (const uint32_t[]){0, 1, 0, 2, 3, 1, 3, 2, 0},
              (const tg_extent[]){E1(32), E1(64), E1(16), E1(8)}, 4, 120);
  expect_plan(r, n, 1, TG_STRATEGY_GREEDY_BY_BREADTH,
              (const uint32_t[]){0, 4, 2, 1, 3, 0, 2, 3, 1},
              (const tg_extent[]){E1(64), E1(16), E1(8), E1(8), E1(32)}, 5, 128);
  const uint32_t by_size[] = {1, 0, 2, 1, 3, 0, 1, 2, 0};
  const tg_extent by_size_sizes[] = {E1(64), E1(32), E1(8), E1(8)};
  expect_plan(r, n, 1, TG_STRATEGY_GREEDY_BY_SIZE, by_size, by_size_sizes, 4, 112);
  /* TFLite's GREEDY_BEST keeps greedy-by-size here (section 8); so does ours. */
  expect_plan(r, n, 1, TG_STRATEGY_BEST, by_size, by_size_sizes, 4, 112);
}

/* ---- section 6: BHWC shapes, EQUALITY ---------------------------------------------------
 * TFLite runs its hash variant for BHWC, which is our 1D EQUALITY. Equality only compares
 * sizes, so each distinct shape is given a distinct byte size (equal element counts would
 * otherwise merge (1,1,2,8) and (1,1,8,2), which TFLite keeps apart). */
#define BHWC(b, h, w, c) ((b) * 1000000ull + (h) * 10000ull + (w) * 100ull + (c))

static void bhwc_records(void **state) {
  (void)state;
  const uint64_t a = BHWC(1, 1, 2, 8), b = BHWC(1, 1, 1, 16), c = BHWC(1, 1, 8, 2),
                 d = BHWC(1, 16, 1, 1), e = BHWC(16, 1, 1, 1);
  const tg_usage_record r[] = {REC(a, 0, 1), REC(a, 1, 2), REC(b, 2, 4), REC(a, 3, 5), REC(c, 4, 5),
                               REC(a, 5, 7), REC(d, 6, 8), REC(e, 7, 8), REC(b, 8, 9)};
  expect_plan(r, COUNT(r), 1, TG_STRATEGY_NAIVE, (const uint32_t[]){0, 1, 2, 3, 4, 5, 6, 7, 8},
              NULL, 0, 4 * a + 2 * b + c + d + e);
  expect_plan(r, COUNT(r), 1, TG_STRATEGY_EQUALITY, (const uint32_t[]){0, 1, 2, 1, 3, 0, 4, 5, 2},
              (const tg_extent[]){E1(a), E1(a), E1(b), E1(c), E1(d), E1(e)}, 6,
              2 * a + b + c + d + e);
}

/* ---- section 7: textures ------------------------------------------------------------------ */

static const tg_usage_record k_uint2[] = {
    REC2(2, 8, 0, 1), REC2(2, 8, 1, 2), REC2(1, 12, 2, 4), REC2(2, 8, 3, 5), REC2(8, 2, 4, 5),
    REC2(2, 8, 5, 7), REC2(1, 8, 6, 8), REC2(2, 8, 7, 8),  REC2(4, 1, 8, 9),
};

static const tg_usage_record k_uint3[] = {
    REC3(1, 2, 8, 0, 1), REC3(4, 3, 2, 1, 2), REC3(1, 1, 1, 2, 4),
    REC3(2, 4, 1, 3, 5), REC3(2, 2, 2, 4, 5), REC3(8, 1, 2, 5, 7),
    REC3(1, 2, 1, 6, 8), REC3(1, 1, 1, 7, 8), REC3(2, 2, 2, 8, 9),
};

/* TFLite's texture vectors of nine records: naive (an object a record, `naive_total`),
 * equality and greedy-in-order give TFLite's plans; the strategies TFLite lacks for textures
 * are valid, and `best` is no worse than TFLite's best (greedy-in-order) here. */
static void texture_vector(const tg_usage_record *r, uint32_t dims, uint64_t naive_total,
                           const uint32_t *eq_ids, const tg_extent *eq_sizes, size_t eq_objects,
                           uint64_t eq_total, const uint32_t *io_ids, const tg_extent *io_sizes,
                           size_t io_objects, uint64_t io_total) {
  const size_t n = 9;
  expect_plan(r, n, dims, TG_STRATEGY_NAIVE, (const uint32_t[]){0, 1, 2, 3, 4, 5, 6, 7, 8}, NULL,
              0, naive_total);
  expect_plan(r, n, dims, TG_STRATEGY_EQUALITY, eq_ids, eq_sizes, eq_objects, eq_total);
  expect_plan(r, n, dims, TG_STRATEGY_GREEDY_IN_ORDER, io_ids, io_sizes, io_objects, io_total);
  for (size_t s = 0; s < COUNT(k_object_strategies); ++s) {
    tg_plan *p = plan_ok(r, n, dims, k_object_strategies[s], NULL);
    if (k_object_strategies[s] == TG_STRATEGY_BEST) assert_true(p->total <= io_total);
    tg_plan_destroy(p);
  }
}

static void uint2_records(void **state) {
  (void)state;
  assert_int_equal(COUNT(k_uint2), 9);
  texture_vector(k_uint2, 2, 120, (const uint32_t[]){0, 1, 2, 0, 3, 1, 4, 0, 5},
                 (const tg_extent[]){E2(2, 8), E2(2, 8), E2(1, 12), E2(8, 2), E2(1, 8), E2(4, 1)},
                 6, 72, (const uint32_t[]){0, 1, 2, 0, 3, 1, 2, 0, 3},
                 (const tg_extent[]){E2(2, 8), E2(2, 8), E2(1, 12), E2(8, 2)}, 4, 60);
}

static void uint3_records(void **state) {
  (void)state;
  assert_int_equal(COUNT(k_uint3), 9);
  texture_vector(k_uint3, 3, 84, (const uint32_t[]){0, 1, 2, 3, 4, 5, 6, 2, 4},
                 (const tg_extent[]){E3(1, 2, 8), E3(4, 3, 2), E3(1, 1, 1), E3(2, 4, 1),
                                     E3(2, 2, 2), E3(8, 1, 2), E3(1, 2, 1)},
                 7, 75, (const uint32_t[]){0, 1, 0, 2, 1, 3, 2, 0, 1},
                 (const tg_extent[]){E3(1, 2, 8), E3(4, 3, 2), E3(2, 4, 1), E3(8, 1, 2)}, 4, 64);
}

/* ---- the vectors shuffled ----------------------------------------------------------------- */

static void shuffled_vectors(void **state) {
  (void)state;
  static const struct {
    const tg_usage_record *r;
    size_t n;
    uint32_t dims;
  } sets[] = {{tg_test_tflite_chain, COUNT(tg_test_tflite_chain), 1},
              {tg_test_tflite_complex, COUNT(tg_test_tflite_complex), 1},
              {k_uint2, COUNT(k_uint2), 2},
              {k_uint3, COUNT(k_uint3), 3}};
  tg_test_rng rng = {20240611};
  for (size_t v = 0; v < COUNT(sets); ++v) {
    const size_t n = sets[v].n;
    uint64_t in_order_total = 0, equality_total = 0;
    for (int round = 0; round < 8; ++round) {
      tg_usage_record r[16];
      memcpy(r, sets[v].r, n * sizeof *r);
      for (size_t i = n - 1; round > 0 && i > 0; --i) {
        size_t j = (size_t)tg_test_rng_range(&rng, 0, i);
        tg_usage_record t = r[i];
        r[i] = r[j];
        r[j] = t;
      }
      for (size_t s = 0; s < COUNT(k_object_strategies); ++s) {
        tg_plan *p = plan_ok(r, n, sets[v].dims, k_object_strategies[s], NULL);
        /* Records are visited by first task (all distinct here), so the in-order strategies
         * do not depend on the input order. */
        if (k_object_strategies[s] == TG_STRATEGY_GREEDY_IN_ORDER) {
          if (round == 0) in_order_total = p->total;
          assert_int_equal(p->total, in_order_total);
        }
        if (k_object_strategies[s] == TG_STRATEGY_EQUALITY) {
          if (round == 0) equality_total = p->total;
          assert_int_equal(p->total, equality_total);
        }
        tg_plan_destroy(p);
      }
    }
  }
}

/* ---- random record sets ------------------------------------------------------------------- */

static void random_records(void **state) {
  (void)state;
  tg_test_rng rng = {7};
  static const size_t counts[] = {1, 2, 3, 10, 60, 300, 700, 1500};
  for (size_t c = 0; c < COUNT(counts); ++c)
    for (uint32_t dims = 1; dims <= 3; ++dims)
      for (int variant = 0; variant < 3; ++variant) {
        const size_t n = counts[c];
        tg_test_random_spec spec = {
            .dims = dims, .count = n, .max_task = (uint32_t)(variant == 2 ? n / 4 + 1 : 2 * n + 5),
            .max_length = variant == 0 ? 4 : (uint32_t)(n / 5 + 1), .max_size = dims == 1 ? 1u << 20 : 64,
            .allow_zero_size = variant == 1, .few_distinct_sizes = variant == 2
        };
        tg_usage_record *r = malloc(n * sizeof *r);
        assert_non_null(r);
        tg_test_random_records(&rng, &spec, r);
        uint64_t smallest = UINT64_MAX, best = 0;
        for (size_t s = 0; s < COUNT(k_object_strategies); ++s) {
          tg_plan *p = plan_ok(r, n, dims, k_object_strategies[s], NULL);
          tg_plan *again = plan_ok(r, n, dims, k_object_strategies[s], NULL);
          assert_memory_equal(p->object_of, again->object_of, n * sizeof *p->object_of);
          /* `best` runs min-cost-flow only up to TG_DEFAULT_MCF_MAX_RECORDS records. */
          int in_best = !(k_object_strategies[s] == TG_STRATEGY_MIN_COST_FLOW && n > TG_DEFAULT_MCF_MAX_RECORDS);
          if (k_object_strategies[s] == TG_STRATEGY_BEST) best = p->total;
          else if (in_best && p->total < smallest) smallest = p->total;
          tg_plan_destroy(again);
          tg_plan_destroy(p);
        }
        assert_int_equal(best, smallest);
        free(r);
      }
}

/* Huge task indices and sizes, and records sharing every task. */
static void extreme_records(void **state) {
  (void)state;
  const tg_usage_record r[] = {
      REC(UINT64_MAX / 8, 0xFFFFFFF0u, 0xFFFFFFFFu), REC(5, 0, 0xFFFFFFFFu),
      REC(UINT64_MAX / 8, 0, 0xFFFFFFEFu),          REC(0, 7, 7),
      REC(UINT64_MAX / 8, 0, 0),                    REC(1, 0xFFFFFFFFu, 0xFFFFFFFFu),
  };
  for (size_t s = 0; s < COUNT(k_object_strategies); ++s) {
    tg_plan *p = plan_ok(r, COUNT(r), 1, k_object_strategies[s], NULL);
    tg_plan_destroy(p);
  }
  tg_usage_record same[40];
  for (size_t i = 0; i < COUNT(same); ++i) same[i] = (tg_usage_record)REC(i % 3 + 1, 3, 9);
  for (size_t s = 0; s < COUNT(k_object_strategies); ++s) {
    tg_plan *p = plan_ok(same, COUNT(same), 1, k_object_strategies[s], NULL);
    assert_int_equal(p->object_count, COUNT(same));
    tg_plan_destroy(p);
  }
  /* Extents whose per-dimension max overflows 64 bits must not share. */
  const tg_usage_record wide[] = {REC2(1ull << 40, 1, 0, 1), REC2(1, 1ull << 40, 2, 3)};
  for (size_t s = 0; s < COUNT(k_object_strategies); ++s) {
    tg_plan *p = plan_ok(wide, COUNT(wide), 2, k_object_strategies[s], NULL);
    assert_int_equal(p->object_count, 2);
    tg_plan_destroy(p);
  }
}

/* ---- the may-share relation ----------------------------------------------------------------- */

typedef struct pair_hash {
  uint64_t seed;
  unsigned percent_allowed;
} pair_hash;

static int may_share_hash(void *user, size_t a, size_t b) {
  const pair_hash *h = user;
  uint64_t lo = a < b ? a : b, hi = a < b ? b : a;
  uint64_t z = h->seed ^ (lo * 0x9E3779B97F4A7C15ull) ^ (hi * 0xC2B2AE3D27D4EB4Full);
  z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
  z ^= z >> 29;
  return (unsigned)(z % 100) < h->percent_allowed;
}

static void relation_is_honoured(void **state) {
  (void)state;
  tg_test_rng rng = {99};
  static const size_t counts[] = {9, 40, 200, 700};
  static const unsigned allowed[] = {0, 30, 70, 100};
  for (size_t c = 0; c < COUNT(counts); ++c)
    for (uint32_t dims = 1; dims <= 3; ++dims)
      for (size_t k = 0; k < COUNT(allowed); ++k) {
        const size_t n = counts[c];
        tg_test_random_spec spec = {
            .dims = dims, .count = n, .max_task = (uint32_t)(n + 5), .max_length = 6,
            .max_size = dims == 1 ? 4096 : 16, .few_distinct_sizes = (c + k) % 2
        };
        tg_usage_record *r = malloc(n * sizeof *r);
        assert_non_null(r);
        tg_test_random_records(&rng, &spec, r);
        pair_hash h = {tg_test_rng_next(&rng), allowed[k]};
        tg_share_relation rel = {may_share_hash, &h, NULL, 0, NULL};
        for (size_t s = 0; s < COUNT(k_object_strategies); ++s) {
          tg_plan *p = plan_ok(r, n, dims, k_object_strategies[s], &rel);
          if (allowed[k] == 0 && k_object_strategies[s] != TG_STRATEGY_NAIVE)
            assert_int_equal(p->object_count, n);
          tg_plan_destroy(p);
        }
        free(r);
      }
}

/* An always-yes relation gives the serial plans. */
static void permissive_relation_changes_nothing(void **state) {
  (void)state;
  tg_share_relation rel = {tg_test_share_always, NULL, NULL, 0, NULL};
  const tg_usage_record *sets[] = {tg_test_tflite_chain, tg_test_tflite_complex};
  const size_t sizes[] = {COUNT(tg_test_tflite_chain), COUNT(tg_test_tflite_complex)};
  for (size_t v = 0; v < 2; ++v)
    for (size_t s = 0; s < COUNT(k_object_strategies); ++s) {
      tg_plan *a = plan_ok(sets[v], sizes[v], 1, k_object_strategies[s], NULL);
      tg_plan *b = plan_ok(sets[v], sizes[v], 1, k_object_strategies[s], &rel);
      assert_memory_equal(a->object_of, b->object_of, sizes[v] * sizeof *a->object_of);
      tg_plan_destroy(a);
      tg_plan_destroy(b);
    }
}

/* ---- allocation failures ---------------------------------------------------------------- */

static void allocation_failures(void **state) {
  (void)state;
  tg_test_rng rng = {5};
  pair_hash h = {3, 60};
  tg_share_relation rel = {may_share_hash, &h, NULL, 0, NULL};
  static tg_usage_record r[600];
  for (uint32_t dims = 1; dims <= 3; ++dims)
    for (int with_rel = 0; with_rel < 2; ++with_rel)
      for (size_t s = 0; s < COUNT(k_object_strategies); ++s) {
        /* 600 records take greedy-by-size past its quadratic limit; 80 cover the rest. */
        const tg_strategy strategy = k_object_strategies[s];
        const int large = dims == 1 && !with_rel &&
                          (strategy == TG_STRATEGY_GREEDY_BY_SIZE || strategy == TG_STRATEGY_BEST);
        tg_test_random_spec spec = {
            .dims = dims, .count = large ? 600 : 80, .max_task = (uint32_t)spec.count + 100,
            .max_length = 20, .max_size = 32
        };
        tg_test_random_records(&rng, &spec, r);
        tg_plan_options o = {
            .mode = TG_MODE_OBJECTS, .strategy = strategy, .relation = with_rel ? &rel : NULL
        };
        o.time_limit_ms = TG_TIME_LIMIT_NONE; /* the same plan however fast the run */
        tg_test_plan_fault_walk(r, spec.count, dims, &o);
      }
}

/* ---- the real models ------------------------------------------------------------------------ */

static const char *const k_models[] = {"selfie_segmentation", "face_detection_short_range",
                                       "hand_landmark_lite", "pose_landmark_lite"};
/* tflite-on-mediapipe.md: TFLite's GREEDY_BEST objects total (1D) and its best texture plans
 * (GREEDY_IN_ORDER) in texels. */
static const uint64_t k_tflite_1d[] = {4030560, 1409024, 4816896, 7635456};
static const uint64_t k_tflite_2d[] = {450566, 164224, 476672, 1285348};
static const uint64_t k_tflite_3d[] = {583742, 333184, 713048, 1528692};
static tg_record_set *load(const char *model, const char *kind) {
  char rel[256];
  snprintf(rel, sizeof rel, "records/%s.%s.csv", model, kind);
  return tg_test_load_records(rel);
}

/* Plans every strategy on each model's records of one kind; returns the mean of best/TFLite.
 * With `ceiling`, also the most any objects plan could save against TFLite on average: 1 -
 * (lower bound / TFLite's total), the lower bound being the larger of the shape-aware bound
 * and the subset bound (tg_bounds_objects_subset: the exact optimum of a subset of the records
 * bounds every plan of them all). */
static double run_models(const char *kind, uint32_t dims, const uint64_t *tflite, double *ceiling) {
  double ratio_sum = 0, ceiling_sum = 0;
  for (size_t m = 0; m < COUNT(k_models); ++m) {
    tg_record_set *set = load(k_models[m], kind);
    assert_int_equal(set->dims, dims);
    char line[512];
    int len = snprintf(line, sizeof line, "%-27s %s:", k_models[m], kind);
    uint64_t best = 0;
    for (size_t s = 0; s < COUNT(k_object_strategies); ++s) {
      tg_plan *p = plan_ok(set->records, set->count, dims, k_object_strategies[s], NULL);
      len += snprintf(line + len, sizeof line - (size_t)len, " %s=%llu",
                      tg_strategy_name(k_object_strategies[s]), (unsigned long long)p->total);
      if (k_object_strategies[s] == TG_STRATEGY_BEST) best = p->total;
      tg_plan_destroy(p);
    }
    tg_bounds b;
    assert_int_equal(tg_bounds_compute(set->records, set->count, dims, NULL, &b), TG_OK);
    print_message("%s\n", line);
    print_message("%-27s %s: tflite=%llu best/tflite=%.3f positional-max=%llu\n", "", kind,
                  (unsigned long long)tflite[m], (double)best / (double)tflite[m],
                  (unsigned long long)b.positional_max);
    assert_true(best >= b.positional_max);
    if (ceiling != NULL) {
      uint64_t shape = 0, sub = 0;
      assert_int_equal(tg_bounds_objects_shape(set->records, set->count, dims, NULL, &shape), TG_OK);
      assert_int_equal(tg_bounds_objects_subset(set->records, set->count, dims, 12, NULL, &sub), TG_OK);
      uint64_t lb = shape > sub ? shape : sub;
      print_message("%-27s %s: shape bound=%llu subset bound=%llu (%.3f of tflite)\n", "", kind,
                    (unsigned long long)shape, (unsigned long long)sub, (double)lb / (double)tflite[m]);
      assert_true(best >= lb);
      ceiling_sum += 1 - (double)lb / (double)tflite[m];
    }
    ratio_sum += (double)best / (double)tflite[m];
    tg_record_set_destroy(set);
  }
  if (ceiling != NULL) *ceiling = ceiling_sum / (double)COUNT(k_models);
  return ratio_sum / (double)COUNT(k_models);
}

static void models_buffer(void **state) {
  (void)state;
  for (size_t m = 0; m < COUNT(k_models); ++m) {
    tg_record_set *set = load(k_models[m], "buffer");
    tg_plan *p = plan_ok(set->records, set->count, 1, TG_STRATEGY_BEST, NULL);
    if (p->total > k_tflite_1d[m])
      fail_msg("%s: best %llu > TFLite's GREEDY_BEST %llu", k_models[m],
               (unsigned long long)p->total, (unsigned long long)k_tflite_1d[m]);
    tg_plan_destroy(p);
    tg_record_set_destroy(set);
  }
  double mean = run_models("buffer", 1, k_tflite_1d, NULL);
  print_message("buffer: best/TFLite GREEDY_BEST, mean over the models: %.3f\n", mean);
}

/* Saving 30% (2D) or 40% (3D) against TFLite on average is out of reach on these records:
 * the bounds computed here leave at most about 29% (2D) and 36% (3D), which these tests
 * check. The last thresholds guard what `best` itself achieves without a search. */
static void models_textures(const char *kind, uint32_t dims, const uint64_t *tflite,
                            double max_ceiling, double max_mean) {
  double ceiling = 0, mean = run_models(kind, dims, tflite, &ceiling);
  print_message("%s: best/TFLite mean %.3f (saving %.1f%%; no plan can save more than %.1f%%)\n",
                kind, mean, 100 * (1 - mean), 100 * ceiling);
  assert_true(ceiling < max_ceiling);
  assert_true(mean <= max_mean);
}

static void models_tex2(void **state) {
  (void)state;
  models_textures("tex2", 2, k_tflite_2d, 0.30, 0.74);
}

static void models_tex3(void **state) {
  (void)state;
  models_textures("tex3", 3, k_tflite_3d, 0.40, 0.69);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(empty_records),
      cmocka_unit_test(one_record),
      cmocka_unit_test(chain_records),
      cmocka_unit_test(complex_records),
      cmocka_unit_test(bhwc_records),
      cmocka_unit_test(uint2_records),
      cmocka_unit_test(uint3_records),
      cmocka_unit_test(shuffled_vectors),
      cmocka_unit_test(random_records),
      cmocka_unit_test(extreme_records),
      cmocka_unit_test(relation_is_honoured),
      cmocka_unit_test(permissive_relation_changes_nothing),
      cmocka_unit_test(allocation_failures),
      cmocka_unit_test(models_buffer),
      cmocka_unit_test(models_tex2),
      cmocka_unit_test(models_tex3),
  };
  const char *filter = getenv("TG_TEST_FILTER");
  if (filter != NULL) cmocka_set_test_filter(filter);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
