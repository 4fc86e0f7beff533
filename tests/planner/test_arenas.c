/* Offsets plans under an allocation cap: every strategy's plan split into arenas of at most the
 * cap, on the models' buffer records at caps from the largest record to the uncapped total and
 * on random records with and without a relation; the validator's arena checks; the arena-count
 * bound; a record above the cap. */
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const k_models[] = {"selfie_segmentation", "face_detection_short_range",
                                       "hand_landmark_lite", "pose_landmark_lite"};

/* Checks every capped plan must pass, whatever the strategy. */
static void check_capped(const tg_usage_record *records, size_t n, const tg_plan *p, uint64_t cap,
                         uint64_t alignment, const tg_share_relation *rel, uint64_t peak_live) {
  tg_test_assert_valid(records, n, 1, p, alignment, rel);
  assert_int_equal(p->max_allocation, cap);
  size_t min_arenas = 0;
  assert_int_equal(tg_bounds_arena_count(records, n, cap, NULL, &min_arenas), TG_OK);
  size_t arenas = p->arena_count;
  assert_true(arenas >= min_arenas);
  assert_true(p->total >= peak_live);
  uint64_t sum = 0;
  for (size_t k = 0; k < arenas; ++k) {
    assert_true(tg_plan_arena_size(p, k) <= cap);
    assert_true(tg_plan_arena_size(p, k) > 0);
    sum += tg_plan_arena_size(p, k);
  }
  assert_int_equal(sum, p->total);
  for (size_t r = 0; r < n; ++r) assert_true(tg_plan_arena_of(p, r) < (arenas ? arenas : 1));
}

static void models_capped(void **state) {
  (void)state;
  static const tg_strategy strategies[] = {
      TG_STRATEGY_NAIVE, TG_STRATEGY_GREEDY_IN_ORDER, TG_STRATEGY_GREEDY_BY_BREADTH,
      TG_STRATEGY_GREEDY_BY_SIZE, TG_STRATEGY_BEAM, TG_STRATEGY_ALLOCATION_TREE,
      TG_STRATEGY_GREEDY_BY_CONFLICTS, TG_STRATEGY_HILL_CLIMB, TG_STRATEGY_BEST};
  for (size_t m = 0; m < sizeof k_models / sizeof k_models[0]; ++m) {
    char rel[256];
    snprintf(rel, sizeof rel, "records/%s.buffer.csv", k_models[m]);
    tg_record_set *set = tg_test_load_records(rel);
    tg_bounds b;
    assert_int_equal(tg_bounds_compute(set->records, set->count, 1, NULL, &b), TG_OK);
    uint64_t largest = 0;
    for (size_t r = 0; r < set->count; ++r)
      if (set->records[r].size.w > largest) largest = set->records[r].size.w;
    for (size_t s = 0; s < sizeof strategies / sizeof strategies[0]; ++s) {
      for (uint64_t alignment = 0; alignment <= 256; alignment += 256) {
        tg_plan_options o = {
            .mode = TG_MODE_OFFSETS, .strategy = strategies[s], .alignment = alignment,
            .time_limit_ms = TG_TIME_LIMIT_NONE
        };
        tg_plan *uncapped = NULL;
        assert_int_equal(tg_plan_compute(set->records, set->count, 1, &o, NULL, &uncapped), TG_OK);
        assert_int_equal(uncapped->arena_count, 1);
        /* Caps from the largest record up to the uncapped total, geometric steps. */
        const int steps = tg_test_quick() ? 4 : 10;
        for (int i = 0; i <= steps; ++i) {
          /* The largest record, twice it, then evenly up to the uncapped total. */
          uint64_t cap = i == 0 ? largest
                         : i == 1 ? 2 * largest
                                  : largest + (uncapped->total - largest) * (uint64_t)i / (uint64_t)steps;
          if (cap < largest) cap = largest;
          o.max_allocation = cap;
          tg_plan *p = NULL;
          tg_status st = tg_plan_compute(set->records, set->count, 1, &o, NULL, &p);
          if (st != TG_OK)
            fail_msg("%s %s cap %llu: %s", k_models[m], tg_strategy_name(strategies[s]),
                     (unsigned long long)cap, tg_status_name(st));
          check_capped(set->records, set->count, p, cap, alignment, NULL, b.peak_live);
          if (cap >= uncapped->total) {
            assert_int_equal(p->arena_count, 1);
            assert_int_equal(p->total, uncapped->total);
          }
          if (getenv("ARENA_DEBUG") && alignment == 0)
            print_message("%s %s cap %llu (largest %llu): %llu -> %llu in %zu\n", k_models[m],
                          tg_strategy_name(strategies[s]), (unsigned long long)cap,
                          (unsigned long long)largest, (unsigned long long)uncapped->total,
                          (unsigned long long)p->total, p->arena_count);
          /* The target: with the cap at least twice the largest record, within 2% of the
           * strategy's own uncapped plan, and at most one arena beyond total / cap. */
          if (cap >= 2 * largest) {
            assert_true((double)p->total <= 1.02 * (double)uncapped->total);
            /* (naive's plan, one slot per record with no reuse, packs its slots into arenas
             * like bins: not held to the count) */
            if (strategies[s] != TG_STRATEGY_NAIVE && p->arena_count > (p->total + cap - 1) / cap + 1)
              fail_msg("%s %s alignment %llu cap %llu: %llu bytes in %zu arenas", k_models[m],
                       tg_strategy_name(strategies[s]), (unsigned long long)alignment,
                       (unsigned long long)cap, (unsigned long long)p->total, p->arena_count);
          }
          tg_plan_destroy(p);
        }
        tg_plan_destroy(uncapped);
      }
    }
    /* Below the largest record: a limit error, in both modes. */
    tg_plan_options o = {
        .mode = TG_MODE_OFFSETS, .strategy = TG_STRATEGY_GREEDY_BY_SIZE, .max_allocation = largest - 1
    };
    tg_plan *p = (tg_plan *)1;
    assert_int_equal(tg_plan_compute(set->records, set->count, 1, &o, NULL, &p), TG_ERROR_LIMIT);
    assert_null(p);
    o.mode = TG_MODE_OBJECTS;
    assert_int_equal(tg_plan_compute(set->records, set->count, 1, &o, NULL, &p), TG_ERROR_LIMIT);
    size_t na = 0;
    assert_int_equal(tg_bounds_arena_count(set->records, set->count, largest - 1, NULL, &na),
                     TG_ERROR_LIMIT);
    /* Objects mode within the cap: the cap is recorded and checked. */
    o.max_allocation = largest;
    assert_int_equal(tg_plan_compute(set->records, set->count, 1, &o, NULL, &p), TG_OK);
    assert_int_equal(p->max_allocation, largest);
    tg_test_assert_valid(set->records, set->count, 1, p, 0, NULL);
    p->max_allocation = largest - 1;
    tg_error_info err;
    assert_int_equal(tg_plan_validate(set->records, set->count, 1, p, 0, NULL, NULL, &err),
                     TG_ERROR_INVALID_PLAN);
    assert_non_null(strstr(err.message, "exceeds the allocation cap"));
    tg_plan_destroy(p);
    tg_record_set_destroy(set);
  }
}

static void random_capped(void **state) {
  (void)state;
  tg_test_rng rng = {32};
  const int rounds = tg_test_quick() ? 60 : 400;
  for (int round = 0; round < rounds; ++round) {
    tg_test_random_spec spec = {1, (size_t)tg_test_rng_range(&rng, 1, 120), 60, 20, 1000,
                                round % 5 == 0, round % 3 == 0};
    tg_usage_record *rec = calloc(spec.count, sizeof *rec);
    assert_non_null(rec);
    tg_test_random_records(&rng, &spec, rec);
    uint64_t largest = 1;
    for (size_t r = 0; r < spec.count; ++r)
      if (rec[r].size.w > largest) largest = rec[r].size.w;
    tg_bounds b;
    assert_int_equal(tg_bounds_compute(rec, spec.count, 1, NULL, &b), TG_OK);
    tg_share_relation never = {tg_test_share_never, NULL, NULL, 0, NULL};
    const tg_share_relation *relation = round % 4 == 1 ? &never : NULL;
    tg_plan_options o = {
        .mode = TG_MODE_OFFSETS,
        .strategy = round % 2 ? TG_STRATEGY_GREEDY_BY_SIZE : TG_STRATEGY_GREEDY_IN_ORDER,
        .alignment = round % 3 == 2 ? 64 : 0, .relation = relation,
        .max_allocation = tg_test_rng_range(&rng, largest, largest * 4)
    };
    tg_plan *p = NULL;
    assert_int_equal(tg_plan_compute(rec, spec.count, 1, &o, NULL, &p), TG_OK);
    check_capped(rec, spec.count, p, o.max_allocation, o.alignment, relation, b.peak_live);
    tg_plan_destroy(p);
    free(rec);
  }
}

/* Arena plans built by hand: the validator accepts the right one and names what is wrong in
 * the others. */
static void validator_arenas(void **state) {
  (void)state;
  tg_usage_record rec[3] = {{{100, 1, 1}, 0, 1, 0}, {{60, 1, 1}, 1, 2, 0}, {{50, 1, 1}, 0, 2, 0}};
  tg_plan *p = NULL;
  assert_int_equal(tg_plan_create(TG_MODE_OFFSETS, 1, 3, 0, NULL, &p), TG_OK);
  p->arena_count = 2;
  p->arena_of = calloc(3, sizeof *p->arena_of);
  p->arena_sizes = calloc(2, sizeof *p->arena_sizes);
  assert_non_null(p->arena_of);
  assert_non_null(p->arena_sizes);
  p->arena_of[0] = 0, p->offset_of[0] = 0;
  p->arena_of[1] = 0, p->offset_of[1] = 100; /* meets record 0 at task 1 */
  p->arena_of[2] = 1, p->offset_of[2] = 0;
  p->arena_sizes[0] = 160, p->arena_sizes[1] = 50;
  p->total = 210;
  p->max_allocation = 160;
  tg_test_assert_valid(rec, 3, 1, p, 0, NULL);
  tg_error_info err;
  /* arena over the cap */
  p->max_allocation = 159;
  assert_int_equal(tg_plan_validate(rec, 3, 1, p, 0, NULL, NULL, &err), TG_ERROR_INVALID_PLAN);
  assert_non_null(strstr(err.message, "arena 0: 160 bytes exceed the allocation cap 159"));
  p->max_allocation = 160;
  /* wrong arena size */
  p->arena_sizes[1] = 60, p->total = 220;
  assert_int_equal(tg_plan_validate(rec, 3, 1, p, 0, NULL, NULL, &err), TG_ERROR_INVALID_PLAN);
  assert_non_null(strstr(err.message, "arena 1: size 60 differs"));
  p->arena_sizes[1] = 50;
  /* wrong total */
  assert_int_equal(tg_plan_validate(rec, 3, 1, p, 0, NULL, NULL, &err), TG_ERROR_INVALID_PLAN);
  assert_non_null(strstr(err.message, "sum of arena sizes 210"));
  p->total = 210;
  /* arena out of range */
  p->arena_of[2] = 2;
  assert_int_equal(tg_plan_validate(rec, 3, 1, p, 0, NULL, NULL, &err), TG_ERROR_INVALID_PLAN);
  assert_non_null(strstr(err.message, "record 2: arena 2 out of range"));
  /* overlap inside one arena: record 2 moved into arena 0 at offset 100 meets record 1 */
  p->arena_of[2] = 0, p->offset_of[2] = 100;
  p->arena_sizes[0] = 160, p->arena_count = 2, p->arena_sizes[1] = 0, p->total = 160;
  assert_int_equal(tg_plan_validate(rec, 3, 1, p, 0, NULL, NULL, &err), TG_ERROR_INVALID_PLAN);
  assert_non_null(strstr(err.message, "records 1 and 2 overlap"));
  /* the same offsets in different arenas do not overlap */
  p->arena_of[2] = 1, p->offset_of[2] = 0, p->arena_sizes[1] = 50, p->total = 210;
  p->arena_of[1] = 1, p->offset_of[1] = 50, p->arena_sizes[0] = 100, p->arena_sizes[1] = 110;
  tg_test_assert_valid(rec, 3, 1, p, 0, NULL);
  /* one arena over the cap */
  tg_plan_destroy(p);
  p = NULL;
  assert_int_equal(tg_plan_create(TG_MODE_OFFSETS, 1, 3, 0, NULL, &p), TG_OK);
  p->offset_of[1] = 100, p->offset_of[2] = 160, p->total = 210, p->max_allocation = 200;
  assert_int_equal(tg_plan_validate(rec, 3, 1, p, 0, NULL, NULL, &err), TG_ERROR_INVALID_PLAN);
  assert_non_null(strstr(err.message, "arena 0: 210 bytes exceed the allocation cap 200"));
  /* split by hand: at a cap of 160, two arenas of 160 and 50 (one of the records moves) */
  assert_int_equal(tg_plan_split_arenas(rec, 3, p, 160, 0, NULL, NULL), TG_OK);
  tg_test_assert_valid(rec, 3, 1, p, 0, NULL);
  assert_int_equal(p->arena_count, 2);
  assert_int_equal(p->total, 210);
  assert_int_equal(tg_plan_split_arenas(rec, 3, p, 160, 0, NULL, NULL), TG_ERROR_INVALID_ARGUMENT);
  tg_plan_destroy(p);
}

static void arena_count_bound(void **state) {
  (void)state;
  /* Live together at task 1: 100, 60 and 50 bytes (210). */
  tg_usage_record rec[3] = {{{100, 1, 1}, 0, 2, 0}, {{60, 1, 1}, 1, 2, 0}, {{50, 1, 1}, 0, 2, 0}};
  size_t n = 0;
  assert_int_equal(tg_bounds_arena_count(rec, 3, 210, NULL, &n), TG_OK);
  assert_int_equal(n, 1);
  assert_int_equal(tg_bounds_arena_count(rec, 3, 209, NULL, &n), TG_OK);
  assert_int_equal(n, 2);
  assert_int_equal(tg_bounds_arena_count(rec, 3, 100, NULL, &n), TG_OK);
  assert_int_equal(n, 3); /* 210/100 -> 3 */
  rec[2].size.w = 40;     /* 100 + 60 + 40 = 200, cap 119: 2 by bytes, 2 above half (60, 100) */
  assert_int_equal(tg_bounds_arena_count(rec, 3, 119, NULL, &n), TG_OK);
  assert_int_equal(n, 2);
  rec[1].size.w = 75, rec[2].size.w = 70; /* three above half of 138: 3 though 245/138 = 2 */
  assert_int_equal(tg_bounds_arena_count(rec, 3, 138, NULL, &n), TG_OK);
  assert_int_equal(n, 3);
  assert_int_equal(tg_bounds_arena_count(rec, 3, 0, NULL, &n), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_bounds_arena_count(rec, 0, 10, NULL, &n), TG_OK);
  assert_int_equal(n, 0);
}

/* A band whose records all move (here the first: its one record straddles the cut, and a
 * zero-size record stays) leaves no empty arena behind, also on one-arena plans with gaps and
 * alignments other than the strategies'. */
static void empty_arenas_dropped(void **state) {
  (void)state;
  tg_usage_record rec[3] = {{{17, 1, 1}, 3, 4, 4}, {{18, 1, 1}, 2, 2, 4}, {{0, 1, 1}, 1, 3, 2}};
  tg_plan *p = NULL;
  assert_int_equal(tg_plan_create(TG_MODE_OFFSETS, 1, 3, 0, NULL, &p), TG_OK);
  p->offset_of[0] = 44, p->offset_of[1] = 48, p->offset_of[2] = 40, p->total = 66;
  tg_test_assert_valid(rec, 3, 1, p, 2, NULL);
  assert_int_equal(tg_plan_split_arenas(rec, 3, p, 48, 2, NULL, NULL), TG_OK);
  check_capped(rec, 3, p, 48, 2, NULL, 18);
  assert_int_equal(p->total, 18);
  tg_plan_destroy(p);
  /* Random one-arena plans (records at random aligned offsets, kept when valid). */
  tg_test_rng rng = {41};
  const int rounds = tg_test_quick() ? 300 : 3000;
  int split = 0;
  for (int round = 0; round < rounds; ++round) {
    size_t n = (size_t)tg_test_rng_range(&rng, 2, 7);
    tg_usage_record r[7];
    uint64_t alignment = tg_test_rng_range(&rng, 0, 1) ? 0 : (uint64_t)1 << tg_test_rng_range(&rng, 0, 3);
    uint64_t largest = 0;
    for (size_t i = 0; i < n; ++i) {
      r[i].size = (tg_extent){tg_test_rng_range(&rng, 0, 3) == 0 ? 0 : tg_test_rng_range(&rng, 1, 20), 1, 1};
      r[i].first_task = (uint32_t)tg_test_rng_range(&rng, 0, 3);
      r[i].last_task = r[i].first_task + (uint32_t)tg_test_rng_range(&rng, 0, 2);
      r[i].alignment = tg_test_rng_range(&rng, 0, 2) == 0 ? (uint64_t)1 << tg_test_rng_range(&rng, 0, 3) : 0;
      if (r[i].size.w > largest) largest = r[i].size.w;
    }
    assert_int_equal(tg_plan_create(TG_MODE_OFFSETS, 1, n, 0, NULL, &p), TG_OK);
    for (size_t i = 0; i < n; ++i) {
      uint64_t a = alignment > r[i].alignment ? alignment : r[i].alignment;
      if (a == 0) a = 1;
      p->offset_of[i] = tg_test_rng_range(&rng, 0, 59) / a * a;
      if (p->offset_of[i] + r[i].size.w > p->total) p->total = p->offset_of[i] + r[i].size.w;
    }
    tg_bounds b;
    assert_int_equal(tg_bounds_compute(r, n, 1, NULL, &b), TG_OK);
    if (largest > 0 && p->total > largest &&
        tg_plan_validate(r, n, 1, p, alignment, NULL, NULL, NULL) == TG_OK) {
      uint64_t cap = tg_test_rng_range(&rng, largest, p->total - 1);
      assert_int_equal(tg_plan_split_arenas(r, n, p, cap, alignment, NULL, NULL), TG_OK);
      check_capped(r, n, p, cap, alignment, NULL, b.peak_live);
      ++split;
    }
    tg_plan_destroy(p);
  }
  assert_true(split > rounds / 10);
}

TG_TEST_MAIN(cmocka_unit_test(models_capped), cmocka_unit_test(random_capped),
             cmocka_unit_test(validator_arenas), cmocka_unit_test(arena_count_bound),
             cmocka_unit_test(empty_arenas_dropped))
