/* `best`'s search in rounds: under a work limit (no clock) a larger limit never gives a larger
 * plan, the same seed and work limit give the same plan, every plan is valid and at or above
 * the lower bounds; under a time limit the call returns within the limit plus a tenth plus
 * 20 ms. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "support/tg_test.h"
#include "support/tg_planner_test.h"

/* Random 1D records: short-lived ones, some long-lived, a few aligned. */
static tg_usage_record *random_set(tg_test_rng *g, size_t n) {
  tg_usage_record *r = tg_test_long_lived_set(g, n, (uint32_t)(n / 3 + 4), 17, 5, 4000);
  for (size_t i = 0; i < n; i += 5) r[i].alignment = 8;
  return r;
}

/* Work limits 0 (no search: the strategies' plan), then growing (whole rounds of 2, 4, 8, ...
 * units: 2, 6, 14, 30, 62, and values between): every plan no larger than the one before. */
static void work_limit_is_monotone(void **state) {
  (void)state;
  const int sets = getenv("TANGRAM_TEST_QUICK") ? 4 : 12;
  static const uint32_t works[] = {1, 2, 5, 6, 14, 30};
  const size_t nworks = sizeof works / sizeof works[0];
  tg_test_rng g = {3601};
  size_t improved = 0;
  for (int s = 0; s < sets; ++s) {
    size_t n = (size_t)tg_test_rng_range(&g, 8, s % 4 == 0 ? 250 : 120);
    tg_usage_record *r = random_set(&g, n);
    tg_bounds b;
    assert_int_equal(tg_bounds_compute(r, n, 1, NULL, &b), TG_OK);
    for (int mode = 0; mode < 2; ++mode) {
      tg_plan_options o;
      memset(&o, 0, sizeof o);
      o.mode = (tg_mode)mode;
      o.strategy = TG_STRATEGY_BEST;
      o.time_limit_ms = TG_TIME_LIMIT_NONE;
      o.seed = (uint64_t)s; /* hill-climb draws from it too */
      tg_plan *prev = NULL;
      assert_int_equal(tg_plan_compute(r, n, 1, &o, NULL, &prev), TG_OK);
      uint64_t greedy = prev->total;
      for (size_t w = 0; w < nworks; ++w) {
        tg_plan *p = tg_test_best_work(r, n, 1, (tg_mode)mode, works[w], (uint64_t)s, NULL);
        assert_true(p->total >= (mode == TG_MODE_OFFSETS ? b.peak_live : b.positional_max));
        if (p->total > prev->total) print_message("set %d n %zu mode %d work %u: %llu (%s) > %llu (%s)\n", s, n, mode, works[w], (unsigned long long)p->total, tg_strategy_name(p->strategy), (unsigned long long)prev->total, tg_strategy_name(prev->strategy));
        assert_true(p->total <= prev->total);
        tg_plan_destroy(prev);
        prev = p;
      }
      improved += prev->total < greedy;
      tg_plan_destroy(prev);
    }
    free(r);
  }
  assert_true(improved > 0); /* the rounds do search */
}

/* The same records, seed and work limit: the same plan, call after call. */
static void work_limit_is_deterministic(void **state) {
  (void)state;
  tg_test_rng g = {3602};
  for (int s = 0; s < 4; ++s) {
    size_t n = (size_t)tg_test_rng_range(&g, 50, s == 0 ? 400 : 150);
    tg_usage_record *r = random_set(&g, n);
    for (int mode = 0; mode < 2; ++mode) {
      tg_plan *a = tg_test_best_work(r, n, 1, (tg_mode)mode, 14, 77, NULL);
      tg_plan *b = tg_test_best_work(r, n, 1, (tg_mode)mode, 14, 77, NULL);
      assert_true(tg_test_same_plan(a, b));
      tg_plan_destroy(a);
      tg_plan_destroy(b);
    }
    free(r);
  }
}

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Under a time limit the rounds stop at the deadline: the fastest of three calls returns
 * within limit + limit/10 + 20 ms (the slower ones may have shared the machine), in both modes
 * and in the exact mode, which keeps the same budget. */
static void time_limit_is_kept(void **state) {
  (void)state;
  tg_test_rng g = {3603};
  static const size_t sizes[] = {300, 3000};
  for (size_t k = 0; k < 2; ++k) {
    size_t n = sizes[k];
    tg_usage_record *r = random_set(&g, n);
    for (int variant = 0; variant < 3; ++variant) { /* objects, offsets, offsets exact */
      const uint32_t limit = 60;
      uint64_t fastest = UINT64_MAX;
      for (int rep = 0; rep < 3; ++rep) {
        tg_plan_options o;
        memset(&o, 0, sizeof o);
        o.mode = variant == 0 ? TG_MODE_OBJECTS : TG_MODE_OFFSETS;
        o.strategy = TG_STRATEGY_BEST;
        o.time_limit_ms = limit;
        tg_exact_stats es;
        memset(&es, 0, sizeof es);
        o.exact = variant == 2;
        o.exact_stats = &es;
        tg_plan *p = NULL;
        uint64_t t0 = now_us();
        assert_int_equal(tg_plan_compute(r, n, 1, &o, NULL, &p), TG_OK);
        uint64_t took = now_us() - t0;
        if (took < fastest) fastest = took;
        tg_test_assert_valid(r, n, 1, p, 0, NULL);
        if (o.exact) { /* the exact mode that ran out of time says so */
          assert_int_equal(es.total, p->total);
          assert_int_equal(es.ended, es.proved_optimal ? TG_EXACT_PROVED_OPTIMAL : TG_EXACT_TIME_LIMIT);
        }
        tg_plan_destroy(p);
      }
      if (fastest > tg_test_limit_allowance_us(limit))
        fail_msg("%zu records, variant %d: %llu us for a %u ms limit", n, variant,
                 (unsigned long long)fastest, (unsigned)limit);
    }
    free(r);
  }
}

/* Large serial offsets inputs start from greedy passes that stop at the deadline and put the
 * records left on top (30k records: greedy-by-conflicts first; 70k: greedy-by-size first):
 * at limits that cut them, and at limits that let some finish, every plan is valid. */
static void cut_passes_give_valid_plans(void **state) {
  (void)state;
  tg_test_rng g = {3604};
  static const size_t sizes[] = {30000, 70000};
  static const uint32_t limits[] = {1, 4, 15, 40};
  for (size_t k = 0; k < 2; ++k) {
    tg_usage_record *r = random_set(&g, sizes[k]);
    for (size_t l = 0; l < 4; ++l) {
      tg_plan_options o;
      memset(&o, 0, sizeof o);
      o.mode = TG_MODE_OFFSETS;
      o.strategy = TG_STRATEGY_BEST;
      o.time_limit_ms = limits[l];
      tg_plan *p = NULL;
      assert_int_equal(tg_plan_compute(r, sizes[k], 1, &o, NULL, &p), TG_OK);
      tg_test_assert_valid(r, sizes[k], 1, p, 0, NULL);
      tg_plan_destroy(p);
    }
    free(r);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(work_limit_is_monotone),
      cmocka_unit_test(work_limit_is_deterministic),
      cmocka_unit_test(time_limit_is_kept),
      cmocka_unit_test(cut_passes_give_valid_plans),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
