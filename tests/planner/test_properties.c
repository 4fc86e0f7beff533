/* Seeded property test: many random record sets (1D/2D/3D, shuffled, ties, zero-length
 * lifetimes, zero sizes, odd alignments, sizes from 1 to ~2^40, sometimes a may-share relation)
 * through every strategy of both modes (beam also at widths 1 and 3) and the validator.
 * Properties: every plan is valid; every bound is at most every result it bounds; `best`
 * without a search is the smallest of the strategies it runs, and its default search never
 * makes it larger; offsets beam of width 1 is greedy-in-order with best fit (serial,
 * unaligned); planning twice gives the same plan; bounds do not depend on record
 * order.
 *
 * Set TG_PROPERTY_SETS to change the number of sets (default 3000; 2000 with
 * TANGRAM_TEST_QUICK, 10000 with TANGRAM_TEST_DEEP). A failure names the set index, which
 * reproduces it. */
#include "support/tg_test.h"
#include "support/tg_planner_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rel_state {
  uint64_t seed;
} rel_state;

static int random_may_share(void *user, size_t a, size_t b) {
  const rel_state *s = user;
  return tg_test_pair_hash(s->seed, a, b) % 4 != 0;
}

/* One dimension's size: tiny to ~2^40 overall, with ties from a small palette. */
static uint64_t random_dim(tg_test_rng *rng, uint32_t dims, int ties) {
  static const uint64_t palette[] = {1, 3, 4, 16, 24, 64, 1000};
  if (ties) return palette[tg_test_rng_range(rng, 0, 6)];
  unsigned max_bits = dims == 1 ? 40 : dims == 2 ? 20 : 13;
  unsigned bits = (unsigned)tg_test_rng_range(rng, 0, max_bits);
  return tg_test_rng_range(rng, 1, (UINT64_C(1) << bits));
}

typedef struct set_spec {
  uint32_t dims;
  size_t count;
  uint64_t alignment;
  int relation;
} set_spec;

static void random_set(tg_test_rng *rng, size_t index, set_spec *spec, tg_usage_record **out) {
  uint64_t pick = tg_test_rng_range(rng, 0, 99);
  spec->dims = pick < 50 ? 1 : pick < 75 ? 2 : 3;
  if (index % 500 == 499) spec->count = (size_t)tg_test_rng_range(rng, 300, 800);
  else if (index % 25 == 24) spec->count = (size_t)tg_test_rng_range(rng, 61, 200);
  else spec->count = (size_t)tg_test_rng_range(rng, 0, 60);
  static const uint64_t aligns[] = {0, 1, 4, 128, 24};
  spec->alignment = aligns[tg_test_rng_range(rng, 0, 4)];
  spec->relation = tg_test_rng_range(rng, 0, 7) == 0;
  size_t n = spec->count;
  tg_usage_record *r = calloc(n ? n : 1, sizeof *r);
  assert_non_null(r);
  int ties = tg_test_rng_range(rng, 0, 2) == 0;
  uint32_t horizon = (uint32_t)tg_test_rng_range(rng, 0, 2 * (uint64_t)n + 2);
  uint32_t base = tg_test_rng_range(rng, 0, 9) == 0 ? 4000000000u : 0; /* big task numbers */
  int per_record_alignment = spec->dims == 1 && tg_test_rng_range(rng, 0, 9) == 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t kind = tg_test_rng_range(rng, 0, 9);
    uint32_t len = kind < 2   ? 0 /* first == last */
                   : kind < 8 ? (uint32_t)tg_test_rng_range(rng, 1, 4)
                              : (uint32_t)tg_test_rng_range(rng, 0, horizon);
    uint32_t first = base + (uint32_t)tg_test_rng_range(rng, 0, horizon);
    r[i].first_task = first;
    r[i].last_task = first + len;
    r[i].size.w = random_dim(rng, spec->dims, ties);
    r[i].size.h = spec->dims >= 2 ? random_dim(rng, spec->dims, ties) : 1;
    r[i].size.d = spec->dims >= 3 ? random_dim(rng, spec->dims, ties) : 1;
    if (spec->dims == 1 && tg_test_rng_range(rng, 0, 11) == 0) r[i].size.w = 0;
    if (per_record_alignment) {
      static const uint64_t ra[] = {0, 4, 16, 24};
      r[i].alignment = ra[tg_test_rng_range(rng, 0, 3)];
    }
  }
  *out = r;
}

static int same_plan(const tg_plan *a, const tg_plan *b) {
  if (a->mode != b->mode || a->total != b->total || a->object_count != b->object_count ||
      a->record_count != b->record_count || a->strategy != b->strategy)
    return 0;
  size_t n = a->record_count;
  if (a->mode == TG_MODE_OFFSETS) return n == 0 || memcmp(a->offset_of, b->offset_of, n * sizeof *a->offset_of) == 0;
  return (n == 0 || memcmp(a->object_of, b->object_of, n * sizeof *a->object_of) == 0) &&
         (a->object_count == 0 ||
          memcmp(a->object_sizes, b->object_sizes, a->object_count * sizeof *a->object_sizes) == 0);
}

typedef struct run_ctx {
  size_t index;
  const tg_usage_record *records;
  const set_spec *spec;
  const tg_share_relation *relation;
  const tg_bounds *bounds;
  uint64_t offsets_bound; /* tg_bounds_offsets (offsets mode, 1D), else 0 */
} run_ctx;

/* Plan with one strategy, check validity, bounds and determinism; return the total. `limit`:
 * time_limit_ms (`best`); `width`: beam_width. Plans of a clock-bounded search (the default
 * budget) are checked for everything but determinism. */
static uint64_t run_with(const run_ctx *c, tg_mode mode, tg_strategy s, tg_fit fit, uint32_t limit,
                         uint32_t width) {
  tg_plan_options o = {
      .mode = mode, .strategy = s, .fit = fit, .time_limit_ms = limit, .beam_width = width,
      .alignment = mode == TG_MODE_OFFSETS ? c->spec->alignment : 0, .relation = c->relation
  };
  const size_t n = c->spec->count;
  const uint32_t dims = c->spec->dims;
  tg_plan *p = NULL, *q = NULL;
  tg_status st = tg_plan_compute(c->records, n, dims, &o, NULL, &p);
  if (st != TG_OK)
    fail_msg("set %zu (%zu records, %uD): %s %s/%s: %s", c->index, n, dims, tg_mode_name(mode),
             tg_strategy_name(s), tg_fit_name(fit), tg_status_name(st));
  tg_error_info err;
  memset(&err, 0, sizeof err);
  st = tg_plan_validate(c->records, n, dims, p, o.alignment, c->relation, NULL, &err);
  if (st != TG_OK)
    fail_msg("set %zu: %s %s/%s invalid: %s", c->index, tg_mode_name(mode), tg_strategy_name(s),
             tg_fit_name(fit), err.message);
  if (p->total < c->bounds->peak_live ||
      (mode == TG_MODE_OBJECTS && p->total < c->bounds->positional_max))
    fail_msg("set %zu: %s %s total %llu below a bound (peak %llu, posmax %llu)", c->index,
             tg_mode_name(mode), tg_strategy_name(s), (unsigned long long)p->total,
             (unsigned long long)c->bounds->peak_live, (unsigned long long)c->bounds->positional_max);
  if (mode == TG_MODE_OFFSETS && p->total < c->offsets_bound)
    fail_msg("set %zu: offsets %s total %llu below the subset-exact bound %llu", c->index,
             tg_strategy_name(s), (unsigned long long)p->total, (unsigned long long)c->offsets_bound);
  if (mode == TG_MODE_OBJECTS && s == TG_STRATEGY_NAIVE && p->total != c->bounds->naive)
    fail_msg("set %zu: objects naive total %llu != naive bound %llu", c->index,
             (unsigned long long)p->total, (unsigned long long)c->bounds->naive);
  /* Determinism: every set for the strategies that cost about a greedy pass, every fifth for
   * those that cost many (min-cost-flow, beam, hill-climb, and `best`, which runs them). */
  int costly = s == TG_STRATEGY_MIN_COST_FLOW || s == TG_STRATEGY_BEAM ||
               s == TG_STRATEGY_HILL_CLIMB || s == TG_STRATEGY_BEST;
  int again = !(s == TG_STRATEGY_BEST && limit != TG_TIME_LIMIT_NONE) && (!costly || c->index % 5 == 0);
  if (again) assert_int_equal(tg_plan_compute(c->records, n, dims, &o, NULL, &q), TG_OK);
  if (again && !same_plan(p, q))
    fail_msg("set %zu: %s %s/%s differs between two runs", c->index, tg_mode_name(mode),
             tg_strategy_name(s), tg_fit_name(fit));
  uint64_t total = p->total;
  tg_plan_destroy(p);
  tg_plan_destroy(q);
  return total;
}

static uint64_t run(const run_ctx *c, tg_mode mode, tg_strategy s, tg_fit fit) {
  return run_with(c, mode, s, fit, TG_TIME_LIMIT_NONE, 0);
}

/* Does `best` run strategy s on n records (beside applying to the mode)? */
static int in_best(tg_strategy s, size_t n, int relation) {
  if (s == TG_STRATEGY_MIN_COST_FLOW) return n <= TG_DEFAULT_MCF_MAX_RECORDS;
  if (s == TG_STRATEGY_BEAM || s == TG_STRATEGY_ALLOCATION_TREE) return n <= TG_BEST_PEERS_MAX_RECORDS;
  if (s == TG_STRATEGY_HILL_CLIMB) return n <= TG_BEST_PEERS_MAX_RECORDS && !relation;
  return 1;
}

/* Every strategy `best` may run, in one mode: the smallest total of those it runs. Beam also
 * runs with widths 1 and 3 (offsets: width 1 must be greedy-in-order with best fit, whose
 * total goes to `greedy_in_order`). */
static uint64_t every_strategy(const run_ctx *c, tg_mode mode, uint64_t *greedy_in_order,
                               uint64_t *beam1) {
  uint64_t smallest = UINT64_MAX;
  const size_t n = c->spec->count;
  for (int s = 0; s < TG_STRATEGY_COUNT; ++s) {
    if (s == TG_STRATEGY_BEST || !tg_strategy_applies((tg_strategy)s, mode, c->spec->dims)) continue;
    int fits = mode == TG_MODE_OFFSETS && s == TG_STRATEGY_GREEDY_IN_ORDER ? 3 : 1;
    for (int f = 0; f < fits; ++f) {
      uint64_t t = run(c, mode, (tg_strategy)s, (tg_fit)f);
      if (s == TG_STRATEGY_GREEDY_IN_ORDER && f == TG_FIT_BEST) *greedy_in_order = t;
      if (in_best((tg_strategy)s, n, c->relation != NULL) && t < smallest) smallest = t;
    }
  }
  *beam1 = run_with(c, mode, TG_STRATEGY_BEAM, TG_FIT_BEST, TG_TIME_LIMIT_NONE, 1);
  if (c->index % 3 == 0) (void)run_with(c, mode, TG_STRATEGY_BEAM, TG_FIT_BEST, TG_TIME_LIMIT_NONE, 3);
  return smallest;
}

static void one_set(size_t index) {
  tg_test_rng rng = {0xC0FFEEull + index * 0x9E3779B97F4A7C15ull};
  set_spec spec;
  tg_usage_record *r = NULL;
  random_set(&rng, index, &spec, &r);
  const size_t n = spec.count;
  tg_bounds b;
  tg_status st = tg_bounds_compute(r, n, spec.dims, NULL, &b);
  if (st != TG_OK) fail_msg("set %zu: bounds: %s", index, tg_status_name(st));
  assert_true(b.peak_live <= b.positional_max);
  assert_true(b.positional_max <= b.naive);

  /* Bounds do not depend on record order. */
  tg_usage_record *shuffled = calloc(n ? n : 1, sizeof *shuffled);
  assert_non_null(shuffled);
  memcpy(shuffled, r, n * sizeof *r);
  for (size_t i = n; i > 1; --i) {
    size_t j = (size_t)tg_test_rng_range(&rng, 0, i - 1);
    tg_usage_record t = shuffled[i - 1];
    shuffled[i - 1] = shuffled[j];
    shuffled[j] = t;
  }
  tg_bounds b2;
  assert_int_equal(tg_bounds_compute(shuffled, n, spec.dims, NULL, &b2), TG_OK);
  assert_true(b2.peak_live == b.peak_live && b2.positional_max == b.positional_max &&
              b2.naive == b.naive);
  free(shuffled);

  rel_state rs = {tg_test_rng_next(&rng)};
  tg_share_relation rel = {random_may_share, &rs, NULL, 0, NULL};
  run_ctx c = {index, r, &spec, spec.relation ? &rel : NULL, &b, 0};

  /* Objects mode: every strategy; `best` without a search is the smallest of those it runs,
   * and with the default budget no larger (checked on every tenth set: the search may take
   * its whole budget). */
  uint64_t in_order = 0, beam1 = 0;
  uint64_t min_objects = every_strategy(&c, TG_MODE_OBJECTS, &in_order, &beam1);
  uint64_t best = run(&c, TG_MODE_OBJECTS, TG_STRATEGY_BEST, TG_FIT_BEST);
  if (best != min_objects)
    fail_msg("set %zu: objects best %llu != smallest strategy %llu", index,
             (unsigned long long)best, (unsigned long long)min_objects);
  if (index % 10 == 0 && run_with(&c, TG_MODE_OBJECTS, TG_STRATEGY_BEST, TG_FIT_BEST, 0, 0) > best)
    fail_msg("set %zu: objects best with the default search above best without", index);

  /* Offsets mode (1D): every strategy, greedy-in-order with each fit. */
  if (spec.dims == 1) {
    /* Every offsets plan at or above the subset-exact bound (a small work cap: these sets are
     * small, most are searched whole). */
    tg_offsets_bound ob;
    assert_int_equal(tg_bounds_offsets(r, n, 1, spec.alignment, 2000, NULL, &ob), TG_OK);
    assert_true(ob.bytes >= b.peak_live);
    c.offsets_bound = ob.bytes;
    uint64_t min_offsets = every_strategy(&c, TG_MODE_OFFSETS, &in_order, &beam1);
    int unaligned = spec.alignment <= 1;
    for (size_t i = 0; i < n; ++i) unaligned = unaligned && r[i].alignment <= 1;
    if (!spec.relation && unaligned && beam1 != in_order)
      fail_msg("set %zu: offsets beam width 1 %llu != greedy-in-order best fit %llu", index,
               (unsigned long long)beam1, (unsigned long long)in_order);
    best = run(&c, TG_MODE_OFFSETS, TG_STRATEGY_BEST, TG_FIT_BEST);
    if (best != min_offsets)
      fail_msg("set %zu: offsets best %llu != smallest strategy %llu", index,
               (unsigned long long)best, (unsigned long long)min_offsets);
    if (index % 10 == 0 && run_with(&c, TG_MODE_OFFSETS, TG_STRATEGY_BEST, TG_FIT_BEST, 0, 0) > best)
      fail_msg("set %zu: offsets best with the default search above best without", index);
  }
  free(r);
}

static void random_sets(void **state) {
  (void)state;
  /* 3000 sets; TANGRAM_TEST_QUICK (the sanitizer runs): 2000; TANGRAM_TEST_DEEP: 10000. */
  size_t sets = tg_test_scale(2000, 3000, 10000);
  const char *env = getenv("TG_PROPERTY_SETS");
  if (env != NULL && *env != '\0') sets = (size_t)strtoull(env, NULL, 10);
  for (size_t i = 0; i < sets; ++i) one_set(i);
  print_message("%zu random record sets checked\n", sets);
}

TG_TEST_MAIN(cmocka_unit_test(random_sets))
