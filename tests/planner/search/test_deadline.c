/* What `best` does under an explicit time limit, piece by piece, with deadlines that have
 * already passed (so that nothing depends on the machine's speed): every strategy that stops
 * at the deadline still gives a valid plan or a clean TG_ERROR_TIMEOUT, the records greedy-by-size
 * did not place go right above what they meet in time, and `best` with tiny limits on large
 * inputs still plans validly. Timings themselves are checked by bench_planner (every search
 * row within the limit plus a tenth plus 20 ms), never here. */
#include <stdlib.h>
#include <string.h>

#include "support/tg_test.h"

#include "planner/base/base.h"
#include "planner/strategies/offsets_common.h"

static tg_usage_record *random_set(tg_test_rng *g, size_t n, int long_lived) {
  tg_usage_record *r = calloc(n ? n : 1, sizeof *r);
  assert_non_null(r);
  uint32_t tasks = (uint32_t)(n / 4 + 4);
  for (size_t i = 0; i < n; ++i) {
    uint32_t f = (uint32_t)tg_test_rng_range(g, 0, tasks);
    uint32_t len = long_lived && i % 50 == 0 ? (uint32_t)tg_test_rng_range(g, tasks / 4, tasks)
                                             : (uint32_t)tg_test_rng_range(g, 0, 6);
    r[i].size = (tg_extent){tg_test_rng_range(g, 0, 9) == 0 ? 0 : tg_test_rng_range(g, 1, 5000), 1, 1};
    r[i].first_task = f;
    r[i].last_task = f + len;
    if (i % 7 == 0) r[i].alignment = 16;
  }
  return r;
}

typedef struct input_buf {
  tg_plan_options o;
  uint64_t *vol;
  tg__plan_input in;
} input_buf;

static void input_make(input_buf *b, const tg_usage_record *r, size_t n, tg_mode mode,
                       uint64_t alignment, uint64_t deadline) {
  memset(&b->o, 0, sizeof b->o);
  b->o.mode = mode;
  b->o.alignment = alignment;
  b->vol = calloc(n ? n : 1, sizeof *b->vol);
  assert_non_null(b->vol);
  for (size_t i = 0; i < n; ++i) b->vol[i] = r[i].size.w;
  b->in = (tg__plan_input){r, n, 1, &b->o, tg_allocator_default(), b->vol, deadline, NULL, NULL};
}

/* Completing any partial plan: valid, and each record at most the top of what it meets. */
static void complete_on_top_is_valid(void **state) {
  (void)state;
  tg_test_rng g = {401};
  for (int round = 0; round < 300; ++round) {
    size_t n = (size_t)tg_test_rng_range(&g, 0, 300);
    tg_usage_record *r = random_set(&g, n, round % 2);
    input_buf b;
    input_make(&b, r, n, TG_MODE_OFFSETS, round % 3 == 0 ? 8 : 0, 0);
    tg_plan *p = NULL;
    assert_int_equal(tg__offsets_greedy_by_size(&b.in, &p), TG_OK);
    /* Drop a random part of the plan and complete it again. */
    size_t *rest = calloc(n ? n : 1, sizeof *rest), m = 0;
    assert_non_null(rest);
    for (size_t i = 0; i < n; ++i)
      if (tg_test_rng_range(&g, 0, 2) == 0) rest[m++] = i;
    assert_int_equal(tg__offsets_complete_on_top(&b.in, rest, m, p->offset_of), TG_OK);
    assert_int_equal(tg__plan_finish_offsets(&b.in, p), TG_OK);
    tg_test_assert_valid(r, n, 1, p, b.o.alignment, NULL);
    /* Known answer: a record completed goes at (aligned) the highest end of what it meets. */
    for (size_t k = 0; k < m; ++k) {
      size_t x = rest[k];
      if (r[x].size.w == 0) continue;
      uint64_t top = 0;
      for (size_t y = 0; y < n; ++y) {
        if (y == x || r[y].size.w == 0) continue;
        int placed_before = 1;
        for (size_t j = k; j < m; ++j) placed_before &= rest[j] != y;
        if (!placed_before) continue;
        if (r[y].first_task <= r[x].last_task && r[x].first_task <= r[y].last_task &&
            p->offset_of[y] + r[y].size.w > top)
          top = p->offset_of[y] + r[y].size.w;
      }
      uint64_t a = r[x].alignment > b.o.alignment ? r[x].alignment : b.o.alignment;
      if (a < 1) a = 1;
      assert_int_equal(p->offset_of[x], (top + a - 1) / a * a);
    }
    free(rest);
    tg_plan_destroy(p);
    free(b.vol);
    free(r);
  }
}

/* `strategy` on b's input gives a valid plan of r[0 .. n) (1D, no relation). */
static void expect_valid_plan(tg_status (*strategy)(const tg__plan_input *, tg_plan **),
                              const input_buf *b, const tg_usage_record *r, size_t n) {
  tg_plan *p = NULL;
  assert_int_equal(strategy(&b->in, &p), TG_OK);
  tg_test_assert_valid(r, n, 1, p, 0, NULL);
  tg_plan_destroy(p);
}

/* Strategies handed a deadline that has passed. */
static void strategies_at_a_passed_deadline(void **state) {
  (void)state;
  tg_test_rng g = {402};
  for (int round = 0; round < 40; ++round) {
    size_t n = 300 + (size_t)tg_test_rng_range(&g, 0, 2000);
    tg_usage_record *r = random_set(&g, n, 1);
    input_buf b;
    input_make(&b, r, n, TG_MODE_OFFSETS, 0, 1);
    /* Offsets greedy-by-size: 255 records placed, the rest completed on top. */
    expect_valid_plan(tg__offsets_greedy_by_size, &b, r, n);
    /* Beam goes on with one state, hill-climb keeps its start. */
    b.o.strategy = TG_STRATEGY_BEAM;
    expect_valid_plan(tg__offsets_beam, &b, r, n);
    expect_valid_plan(tg__offsets_hill_climb, &b, r, n);
    /* Objects: beam valid; greedy-by-size (fast variant) and greedy-coloring give no plan. */
    b.o.mode = TG_MODE_OBJECTS;
    expect_valid_plan(tg__objects_beam, &b, r, n);
    tg_plan *p = NULL;
    assert_int_equal(tg__objects_greedy_coloring(&b.in, &p), TG_ERROR_TIMEOUT);
    assert_null(p);
    tg_status st = tg__objects_greedy_by_size(&b.in, &p);
    assert_true(st == TG_OK || st == TG_ERROR_TIMEOUT); /* small inputs: the exact variant */
    if (st == TG_OK) tg_test_assert_valid(r, n, 1, p, 0, NULL);
    else assert_null(p);
    tg_plan_destroy(p);
    free(b.vol);
    free(r);
  }
}

/* `best` with tiny limits on inputs large enough for every shortcut: valid plans, no worse
 * than naive, in both modes. */
static void best_with_tiny_limits(void **state) {
  (void)state;
  tg_test_rng g = {403};
  const size_t sizes[] = {1500, 20000, 60000};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
    size_t n = sizes[k];
    tg_usage_record *r = random_set(&g, n, 1);
    tg_bounds bounds;
    assert_int_equal(tg_bounds_compute(r, n, 1, NULL, &bounds), TG_OK);
    for (int mode = 0; mode < 2; ++mode)
      for (uint32_t limit = 1; limit <= 100; limit *= 10) {
        tg_plan_options o;
        memset(&o, 0, sizeof o);
        o.mode = (tg_mode)mode;
        o.strategy = TG_STRATEGY_NAIVE;
        tg_plan *naive = NULL;
        assert_int_equal(tg_plan_compute(r, n, 1, &o, NULL, &naive), TG_OK);
        o.strategy = TG_STRATEGY_BEST;
        o.time_limit_ms = limit;
        tg_plan *p = NULL;
        assert_int_equal(tg_plan_compute(r, n, 1, &o, NULL, &p), TG_OK);
        tg_test_assert_valid(r, n, 1, p, 0, NULL);
        assert_true(p->total >= bounds.peak_live);
        assert_true(p->total <= naive->total);
        tg_plan_destroy(p);
        tg_plan_destroy(naive);
      }
    free(r);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(complete_on_top_is_valid),
      cmocka_unit_test(strategies_at_a_passed_deadline),
      cmocka_unit_test(best_with_tiny_limits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
