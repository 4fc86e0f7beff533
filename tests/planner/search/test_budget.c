/* The search's budget (planner/search/search.h): its arithmetic; every stage charges what it
 * spends and no more than it was given; `best` under a work limit gives the same plan call
 * after call, in both modes, with and without a relation, in the exact mode too, where the
 * plan is best's and the stats say why the search ended (the deadlines: test_rounds). */
#include <stdlib.h>
#include <string.h>

#include "support/tg_test.h"

#include "planner/search/exact_objects.h"
#include "planner/search/search.h"

static void budget_arithmetic(void **state) {
  (void)state;
  tg__budget b = tg__budget_make(10, 0);
  assert_int_equal(b.cap, 10 * TG__MILLI);
  assert_int_equal(tg__budget_left(&b), 10000);
  assert_int_equal(tg__budget_count(&b, TG__SKYLINE_NODES_PER_UNIT), 10 * TG__SKYLINE_NODES_PER_UNIT);
  tg__budget half = tg__budget_share(&b, 1, 2);
  assert_int_equal(half.cap, 5000);
  assert_int_equal(half.deadline_us, b.deadline_us);
  tg__budget_spend(&half, 3, 2); /* 3 items at 2 a unit: 1.5 units */
  assert_int_equal(half.spent, 1500);
  tg__budget_spend(&half, 1, 3); /* a third of a unit, rounded up */
  assert_int_equal(half.spent, 1834);
  tg__budget_charge(&b, &half);
  assert_int_equal(tg__budget_left(&b), 10000 - 1834);
  /* A share never exceeds what is left. */
  tg__budget sub = tg__budget_sub(&b, 1000000);
  assert_int_equal(sub.cap, 10000 - 1834);
  tg__budget_spend(&b, 1000, 1);
  assert_int_equal(tg__budget_left(&b), 0);
  assert_true(tg__budget_done(&b));
  assert_int_equal(tg__budget_count(&b, 1000), 0);
  /* No cap: counts are unbounded, shares too; a passed deadline ends it. */
  tg__budget none = tg__budget_make(TG__BUDGET_NONE, 0);
  assert_int_equal(tg__budget_left(&none), TG__BUDGET_NONE);
  assert_int_equal(tg__budget_count(&none, 7), UINT64_MAX);
  assert_int_equal(tg__budget_share(&none, 1, 3).cap, TG__BUDGET_NONE);
  assert_false(tg__budget_done(&none));
  none.deadline_us = 1;
  assert_true(tg__budget_expired(&none));
  assert_true(tg__budget_done(&none));
  assert_int_equal(tg__budget_deadline(&b), UINT64_MAX);
}

typedef struct input_buf {
  tg_plan_options o;
  uint64_t *vol;
  tg__plan_input in;
} input_buf;

static void input_make(input_buf *b, const tg_usage_record *r, size_t n, tg_mode mode) {
  memset(&b->o, 0, sizeof b->o);
  b->o.mode = mode;
  b->o.strategy = TG_STRATEGY_BEST;
  b->o.time_limit_ms = TG_TIME_LIMIT_NONE;
  b->vol = calloc(n ? n : 1, sizeof *b->vol);
  assert_non_null(b->vol);
  for (size_t i = 0; i < n; ++i) b->vol[i] = r[i].size.w;
  b->in = (tg__plan_input){r, n, 1, &b->o, tg_allocator_default(), b->vol, 0, NULL, NULL};
}

static tg_plan *greedy_plan(const input_buf *b) {
  tg_plan *p = NULL;
  assert_int_equal(tg_plan_compute(b->in.records, b->in.count, 1, &b->o, NULL, &p), TG_OK);
  return p;
}

/* A stage run twice from the same plan with the same budget: the same plan, valid, no larger,
 * and charged at most its cap (plus one item's rounding). */
typedef tg_status (*stage_fn)(const tg__plan_input *in, uint64_t bound, tg__budget *b, tg_plan **best);

static tg_status stage_skyline(const tg__plan_input *in, uint64_t bound, tg__budget *b, tg_plan **best) {
  tg_exact_stats st;
  memset(&st, 0, sizeof st);
  tg_status s = tg__skyline_improve(in, bound, b, 0, best, &st);
  return s == TG_ERROR_OVERFLOW ? TG_OK : s;
}

static tg_status stage_dive(const tg__plan_input *in, uint64_t bound, tg__budget *b, tg_plan **best) {
  return tg__search_dive(in, bound, TG__DIVE_MAX_LIST, b, best);
}

static tg_status stage_lns(const tg__plan_input *in, uint64_t bound, tg__budget *b, tg_plan **best) {
  return tg__search_offsets_lns(in, bound, b, 0, NULL, best);
}

static tg_status stage_order(const tg__plan_input *in, uint64_t bound, tg__budget *b, tg_plan **best) {
  tg_exact_stats st;
  memset(&st, 0, sizeof st);
  return tg__exact_order_improve(in, bound, b, best, &st);
}

static tg_status stage_objects_bb(const tg__plan_input *in, uint64_t bound, tg__budget *b, tg_plan **best) {
  (void)bound;
  tg_exact_stats st;
  memset(&st, 0, sizeof st);
  return tg__exact_objects_improve(in, b, best, &st);
}

static tg_status stage_lp_dive(const tg__plan_input *in, uint64_t bound, tg__budget *b, tg_plan **best) {
  (void)bound;
  uint64_t proved = 0;
  return tg__search_lp_dive(in, b, best, &proved);
}

static tg_status stage_subset_bound(const tg__plan_input *in, uint64_t bound, tg__budget *b, tg_plan **best) {
  (void)bound;
  (void)best;
  uint64_t lb = 0;
  return tg__offsets_subset_bound(in, b, &lb, NULL);
}

static int parity_share(void *user, size_t a, size_t b) {
  (void)user;
  return (a & 1) == (b & 1);
}

static void stages_keep_their_budget(void **state) {
  (void)state;
  static const struct {
    stage_fn fn;
    tg_mode mode;
    int relation;
    uint64_t item_mu; /* thousandths of a unit one item (node, step, candidate) may add */
    const char *name;
  } k_stages[] = {
      {stage_skyline, TG_MODE_OFFSETS, 0, 1, "skyline"},
      {stage_dive, TG_MODE_OFFSETS, 0, 2, "dive"},
      {stage_lns, TG_MODE_OFFSETS, 0, 5, "neighbourhoods"},
      /* (a capacity's set-up reads every neighbour list once, and a move up to 2 x degree^2) */
      {tg__search_overlap, TG_MODE_OFFSETS, 0, 250, "overlap minimisation"},
      {tg__search_improve, TG_MODE_OFFSETS, 0, 1000, "iterated greedy"},
      {tg__search_improve, TG_MODE_OBJECTS, 0, 1000, "iterated greedy (objects)"},
      {stage_order, TG_MODE_OFFSETS, 1, 5, "placement orders"},
      {stage_objects_bb, TG_MODE_OBJECTS, 0, 1, "objects branch-and-bound"},
      /* (an LP stops between steps: one refactorisation, up to n^3 inner steps, past its cap) */
      {stage_lp_dive, TG_MODE_OBJECTS, 0, 5000, "LP dive"},
      {stage_subset_bound, TG_MODE_OFFSETS, 0, 2, "subset bound"},
  };
  const tg_share_relation rel = {parity_share, NULL, NULL, 0, NULL};
  tg_test_rng g = {4301};
  for (size_t k = 0; k < sizeof k_stages / sizeof *k_stages; ++k) {
    for (int round = 0; round < 4; ++round) {
      size_t n = (size_t)tg_test_rng_range(&g, 20, k_stages[k].relation ? 40 : 160);
      tg_usage_record *r = tg_test_long_lived_set(&g, n, (uint32_t)(n / 3 + 4), 9, 5, 3000);
      input_buf b;
      input_make(&b, r, n, k_stages[k].mode);
      if (k_stages[k].relation) b.o.relation = &rel;
      uint64_t bound = 0;
      assert_int_equal(tg__search_bound(&b.in, &bound), TG_OK);
      const uint64_t units = 1 + (uint64_t)round * 3;
      tg_plan *runs[2];
      uint64_t spent[2];
      for (int twice = 0; twice < 2; ++twice) {
        runs[twice] = greedy_plan(&b);
        tg__budget budget = tg__budget_make(units, 0);
        assert_int_equal(k_stages[k].fn(&b.in, bound, &budget, &runs[twice]), TG_OK);
        spent[twice] = budget.spent;
        tg_test_assert_valid(r, n, 1, runs[twice], 0, b.o.relation);
        if (budget.spent > budget.cap + k_stages[k].item_mu)
          fail_msg("%s: spent %llu of %llu", k_stages[k].name, (unsigned long long)budget.spent,
                   (unsigned long long)budget.cap);
      }
      if (!tg_test_same_plan(runs[0], runs[1]) || spent[0] != spent[1])
        fail_msg("%s differs between two runs (%zu records, %llu units)", k_stages[k].name, n,
                 (unsigned long long)units);
      tg_plan *greedy = greedy_plan(&b);
      assert_true(runs[0]->total <= greedy->total);
      tg_plan_destroy(greedy);
      tg_plan_destroy(runs[0]);
      tg_plan_destroy(runs[1]);
      free(b.vol);
      free(r);
    }
  }
}

static tg_plan *plan_opts(const tg_usage_record *r, size_t n, const tg_plan_options *o) {
  tg_plan *p = NULL;
  assert_int_equal(tg_plan_compute(r, n, 1, o, NULL, &p), TG_OK);
  tg_test_assert_valid(r, n, 1, p, o->alignment, o->relation);
  return p;
}

/* `best` and the exact mode under work limits, no clock: the same plan and the same stats call
 * after call; the exact mode's plan is best's (serial) or no worse (a relation: the placement
 * orders' search runs beside the rounds), and its stats say why it ended. Records up to a
 * few thousand (the large inputs' stages too). */
static void work_limits_are_deterministic(void **state) {
  (void)state;
  const tg_share_relation rel = {parity_share, NULL, NULL, 0, NULL};
  const int sets = getenv("TANGRAM_TEST_DEEP") ? 24 : 8;
  tg_test_rng g = {4302};
  for (int s = 0; s < sets; ++s) {
    size_t n = s == 3 ? 1400 : (size_t)tg_test_rng_range(&g, 10, 200);
    tg_usage_record *r = tg_test_long_lived_set(&g, n, (uint32_t)(n / 3 + 4), 11, 6, 5000);
    for (size_t i = 0; i < n; i += 7) r[i].alignment = 16;
    for (int variant = 0; variant < 3; ++variant) {
      tg_plan_options o;
      memset(&o, 0, sizeof o);
      o.mode = variant == 1 ? TG_MODE_OBJECTS : TG_MODE_OFFSETS;
      o.strategy = TG_STRATEGY_BEST;
      o.relation = variant == 2 && n <= 200 ? &rel : NULL;
      o.seed = (uint64_t)s;
      o.work_limit = (uint32_t)(6 + 20 * (s % 3));
      tg_plan *a = plan_opts(r, n, &o), *b = plan_opts(r, n, &o);
      if (!tg_test_same_plan(a, b)) fail_msg("set %d, variant %d: best differs between two runs", s, variant);
      tg_exact_stats e1, e2;
      memset(&e1, 0, sizeof e1);
      memset(&e2, 0, sizeof e2);
      o.exact = 1;
      o.exact_stats = &e1;
      tg_plan *x = plan_opts(r, n, &o);
      o.exact_stats = &e2;
      tg_plan *y = plan_opts(r, n, &o);
      if (!tg_test_same_plan(x, y) || e1.nodes != e2.nodes || e1.lower_bound != e2.lower_bound ||
          e1.ended != e2.ended || e1.proved_optimal != e2.proved_optimal)
        fail_msg("set %d, variant %d: the exact mode differs between two runs", s, variant);
      if (o.relation == NULL ? x->total != a->total : x->total > a->total)
        fail_msg("set %d, variant %d: exact %llu, best %llu", s, variant, (unsigned long long)x->total,
                 (unsigned long long)a->total);
      assert_int_equal(e1.total, x->total);
      assert_true(e1.lower_bound <= x->total);
      assert_int_equal(e1.proved_optimal, e1.lower_bound == x->total);
      assert_int_equal(e1.ended, e1.proved_optimal ? TG_EXACT_PROVED_OPTIMAL : TG_EXACT_WORK_LIMIT);
      tg_plan_destroy(a);
      tg_plan_destroy(b);
      tg_plan_destroy(x);
      tg_plan_destroy(y);
    }
    free(r);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(budget_arithmetic),
      cmocka_unit_test(stages_keep_their_budget),
      cmocka_unit_test(work_limits_are_deterministic),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
