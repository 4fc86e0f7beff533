/* The improvement search and the exact mode: never worse than greedy, valid, deterministic for
 * a seed, and optimal where optimality can be checked (brute force, perfect packings). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "support/tg_test.h"
#include "support/tg_planner_test.h"

#include "planner/strategies/offsets_common.h" /* the gap index on its own */
#include "planner/search/search.h" /* the skyline search on its own, from a bad incumbent */
#include "bench/capacity_tight.h"

static tg_usage_record rec1(uint64_t size, uint32_t first, uint32_t last) {
  tg_usage_record r;
  memset(&r, 0, sizeof r);
  r.size = (tg_extent){size, 1, 1};
  r.first_task = first;
  r.last_task = last;
  return r;
}

/* A W x T rectangle cut by random guillotine cuts into n pieces: the optimum is W. */
static uint64_t perfect_packing(tg_test_rng *g, tg_usage_record *r, size_t n) {
  typedef struct piece {
    uint64_t x0, x1, t0, t1;
  } piece;
  piece *p = calloc(n, sizeof *p);
  assert_non_null(p);
  uint64_t w = 100 * (uint64_t)n, t = 4 * (uint64_t)n + 8;
  size_t count = 1;
  p[0] = (piece){0, w, 0, t};
  while (count < n) {
    size_t k = (size_t)tg_test_rng_range(g, 0, count - 1);
    piece q = p[k];
    int by_time = tg_test_rng_next(g) & 1;
    if (q.x1 - q.x0 < 2) by_time = 1;
    if (q.t1 - q.t0 < 2) by_time = 0;
    if (q.x1 - q.x0 < 2 && q.t1 - q.t0 < 2) continue;
    uint64_t c = by_time ? tg_test_rng_range(g, q.t0 + 1, q.t1 - 1)
                         : tg_test_rng_range(g, q.x0 + 1, q.x1 - 1);
    if (by_time) {
      p[k].t1 = c;
      p[count++] = (piece){q.x0, q.x1, c, q.t1};
    } else {
      p[k].x1 = c;
      p[count++] = (piece){c, q.x1, q.t0, q.t1};
    }
  }
  for (size_t i = 0; i < n; ++i)
    r[i] = rec1(p[i].x1 - p[i].x0, (uint32_t)p[i].t0, (uint32_t)(p[i].t1 - 1));
  free(p);
  return w;
}

/* `best` with a limit of limit_ms; 0 here means no search (the greedy strategies' plan, what
 * most tests compare with), not the library's default budget. */
static tg_plan_options best_options(tg_mode mode, uint32_t limit_ms, uint64_t seed,
                                    const tg_share_relation *rel) {
  tg_plan_options o = tg_test_best_work_options(mode, 0, seed, rel);
  o.time_limit_ms = limit_ms ? limit_ms : TG_TIME_LIMIT_NONE;
  return o;
}

static tg_plan *plan_with(const tg_usage_record *r, size_t n, uint32_t dims, tg_mode mode,
                          uint32_t limit_ms, uint64_t seed, const tg_share_relation *rel) {
  tg_plan_options o = best_options(mode, limit_ms, seed, rel);
  return tg_test_plan_valid(r, n, dims, &o);
}

/* The smallest total of the strategies that take about one greedy pass (all but
 * min-cost-flow, allocation-tree, beam and hill-climb): what `best` with a time limit never
 * exceeds on inputs
 * of at most TG__LNS_MIN_RECORDS - 1 records (it runs them in full before anything the
 * deadline can cut short). */
static uint64_t one_pass_total(const tg_usage_record *r, size_t n, uint32_t dims, tg_mode mode,
                               const tg_share_relation *rel) {
  uint64_t best = UINT64_MAX;
  for (int s = 0; s < TG_STRATEGY_COUNT; ++s) {
    if (s == TG_STRATEGY_BEST || s == TG_STRATEGY_MIN_COST_FLOW || s == TG_STRATEGY_BEAM ||
        s == TG_STRATEGY_HILL_CLIMB || s == TG_STRATEGY_ALLOCATION_TREE ||
        !tg_strategy_applies((tg_strategy)s, mode, dims))
      continue;
    for (int f = 0; f < (mode == TG_MODE_OFFSETS && s == TG_STRATEGY_GREEDY_IN_ORDER ? 3 : 1); ++f) {
      tg_plan_options o;
      memset(&o, 0, sizeof o);
      o.mode = mode;
      o.strategy = (tg_strategy)s;
      o.fit = (tg_fit)f;
      o.relation = rel;
      tg_plan *p = NULL;
      assert_int_equal(tg_plan_compute(r, n, dims, &o, NULL, &p), TG_OK);
      if (p->total < best) best = p->total;
      tg_plan_destroy(p);
    }
  }
  return best;
}

/* The exact mode with a time limit (or, work > 0, a work limit and no clock: deterministic,
 * like plan_work) and relation, its plan validated; `st` is the caller's (zeroed, or with a
 * progress callback set). */
static tg_plan *exact_run(const tg_usage_record *r, size_t n, uint32_t limit_ms, uint32_t work,
                          const tg_share_relation *rel, tg_exact_stats *st) {
  tg_plan_options o;
  memset(&o, 0, sizeof o);
  o.time_limit_ms = limit_ms;
  o.work_limit = work;
  o.relation = rel;
  tg_plan *p = NULL;
  assert_int_equal(tg_plan_compute_exact(r, n, &o, NULL, &p, st), TG_OK);
  tg_test_assert_valid(r, n, 1, p, 0, rel);
  return p;
}

static tg_plan *exact_with(const tg_usage_record *r, size_t n, uint32_t limit_ms,
                           const tg_share_relation *rel, tg_exact_stats *st) {
  return exact_run(r, n, limit_ms, 0, rel, st);
}

static tg_plan *exact_work(const tg_usage_record *r, size_t n, uint32_t work,
                           const tg_share_relation *rel, tg_exact_stats *st) {
  return exact_run(r, n, 0, work, rel, st);
}

/* The exact mode's stats agree with its plan `p` of records r[0..n): the total, a lower bound
 * between peak-live and the total, equal to it when proved optimal. */
static void assert_exact_stats(const tg_usage_record *r, size_t n, const tg_exact_stats *st,
                               const tg_plan *p) {
  tg_bounds b;
  assert_int_equal(tg_bounds_compute(r, n, 1, NULL, &b), TG_OK);
  assert_int_equal(st->total, p->total);
  assert_true(st->lower_bound >= b.peak_live);
  assert_true(st->lower_bound <= p->total);
  if (st->proved_optimal) assert_int_equal(st->lower_bound, p->total);
}

static void test_search_never_worse_and_valid(void **state) {
  (void)state;
  tg_test_rng g = {11};
  for (int round = 0; round < 12; ++round) {
    uint32_t dims = round % 3 == 2 ? 2 : 1;
    tg_test_random_spec spec = {dims, 40 + (size_t)round * 20, 60, 12, 1000, 0, round & 1};
    tg_usage_record *r = calloc(spec.count, sizeof *r);
    assert_non_null(r);
    tg_test_random_records(&g, &spec, r);
    for (int mode = 0; mode < 2; ++mode) {
      if (mode == TG_MODE_OFFSETS && dims != 1) continue;
      tg_plan *greedy = plan_with(r, spec.count, dims, (tg_mode)mode, 0, 0, NULL);
      tg_plan *searched = plan_with(r, spec.count, dims, (tg_mode)mode, 15, (uint64_t)round, NULL);
      assert_true(searched->total <= one_pass_total(r, spec.count, dims, (tg_mode)mode, NULL));
      (void)greedy;
      tg_plan_destroy(greedy);
      tg_plan_destroy(searched);
    }
    free(r);
  }
}

/* A relation forbidding sharing between records of different parity. */
static int same_parity(void *user, size_t a, size_t b) {
  (void)user;
  return (a & 1) == (b & 1);
}

static void test_search_honours_relation(void **state) {
  (void)state;
  tg_test_rng g = {5};
  tg_test_random_spec spec = {1, 120, 50, 6, 500, 0, 0};
  tg_usage_record r[120];
  tg_test_random_records(&g, &spec, r);
  tg_share_relation rel = {same_parity, NULL, NULL, 0, NULL};
  for (int mode = 0; mode < 2; ++mode) {
    tg_plan *greedy = plan_with(r, spec.count, 1, (tg_mode)mode, 0, 0, &rel);
    tg_plan *searched = plan_with(r, spec.count, 1, (tg_mode)mode, 15, 3, &rel);
    assert_true(searched->total <= greedy->total); /* with a relation: no beam, no hill-climb */
    tg_plan_destroy(greedy);
    tg_plan_destroy(searched);
  }
}

static void test_search_deterministic(void **state) {
  (void)state;
  tg_test_rng g = {99};
  tg_usage_record r[60];
  perfect_packing(&g, r, 60);
  for (int mode = 0; mode < 2; ++mode) {
    /* 60 records: the iteration cap ends the search well before the clock would. */
    tg_plan *a = tg_test_best_work(r, 60, 1, (tg_mode)mode, 510, 42, NULL);
    tg_plan *b = tg_test_best_work(r, 60, 1, (tg_mode)mode, 510, 42, NULL);
    assert_int_equal(a->total, b->total);
    if (mode == TG_MODE_OFFSETS) {
      assert_memory_equal(a->offset_of, b->offset_of, 60 * sizeof *a->offset_of);
    } else {
      assert_memory_equal(a->object_of, b->object_of, 60 * sizeof *a->object_of);
    }
    tg_plan_destroy(a);
    tg_plan_destroy(b);
  }
}

static void test_search_reaches_bound_small_perfect(void **state) {
  (void)state;
  int reached = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    tg_test_rng g = {seed};
    tg_usage_record r[12];
    uint64_t w = perfect_packing(&g, r, 12);
    tg_plan *p = tg_test_best_work(r, 12, 1, TG_MODE_OFFSETS, 126, seed, NULL);
    reached += p->total == w;
    tg_plan_destroy(p);
  }
  assert_true(reached >= 9);
}

/* Brute force: the smallest first-fit layout over every order (an optimal plan is among
 * them, see planner/search/exact_offsets.c). Alignment = max(align, record's); `parity` adds a relation:
 * records of different index parity never share. */
typedef struct brute {
  const tg_usage_record *r;
  size_t n;
  uint64_t align;
  int parity;
} brute;

static const uint64_t k_aligns[3] = {0, 2, 8};

static uint64_t align_up(uint64_t v, uint64_t a) { return a > 1 ? (v + a - 1) / a * a : v; }

static void permute(const brute *b, size_t *order, size_t k, uint64_t *best) {
  const tg_usage_record *r = b->r;
  size_t n = b->n;
  if (k == n) {
    uint64_t off[8], top = 0;
    for (size_t i = 0; i < n; ++i) {
      size_t u = order[i];
      uint64_t a = r[u].alignment > b->align ? r[u].alignment : b->align;
      uint64_t pos = 0;
      for (int moved = 1; moved;) {
        moved = 0;
        for (size_t j = 0; j < i; ++j) {
          size_t p = order[j];
          int meet = r[u].first_task <= r[p].last_task && r[p].first_task <= r[u].last_task;
          if (b->parity && (u & 1) != (p & 1)) meet = 1;
          if (meet && off[p] < pos + r[u].size.w && pos < off[p] + r[p].size.w) {
            pos = align_up(off[p] + r[p].size.w, a);
            moved = 1;
          }
        }
      }
      off[u] = pos;
      if (pos + r[u].size.w > top) top = pos + r[u].size.w;
    }
    if (top < *best) *best = top;
    return;
  }
  for (size_t i = k; i < n; ++i) {
    size_t t = order[k];
    order[k] = order[i];
    order[i] = t;
    permute(b, order, k + 1, best);
    order[i] = order[k];
    order[k] = t;
  }
}

/* Exact mode against brute force on small random inputs: serial (the skyline search) with
 * plan and record alignments and zero sizes, and with a relation (the generic search). */
static void test_exact_matches_brute_force(void **state) {
  (void)state;
  tg_test_rng g = {2024};
  tg_share_relation rel = {same_parity, NULL, NULL, 0, NULL};
  for (int round = 0; round < 120; ++round) {
    size_t n = 3 + (size_t)(round % 6);
    tg_test_random_spec spec = {1, n, (uint32_t)(4 + round % 5), 4, 40, round % 5 == 4,
                                round & 1};
    tg_usage_record r[8];
    tg_test_random_records(&g, &spec, r);
    brute b = {r, n, 1, round % 7 == 3};
    if (round % 3 == 1) b.align = 4;
    if (round % 3 == 2)
      for (size_t i = 0; i < n; ++i) r[i].alignment = k_aligns[tg_test_rng_range(&g, 0, 2)];
    size_t order[8];
    for (size_t i = 0; i < n; ++i) order[i] = i;
    uint64_t brute_total = UINT64_MAX;
    permute(&b, order, 0, &brute_total);
    tg_plan_options o;
    memset(&o, 0, sizeof o);
    o.work_limit = 254; /* no clock: the proof may not depend on the machine's speed */
    o.seed = (uint64_t)round;
    o.alignment = b.align;
    o.relation = b.parity ? &rel : NULL;
    tg_exact_stats st;
    memset(&st, 0, sizeof st);
    tg_plan *p = NULL;
    assert_int_equal(tg_plan_compute_exact(r, n, &o, NULL, &p, &st), TG_OK);
    tg_test_assert_valid(r, n, 1, p, b.align, o.relation);
    assert_int_equal(st.proved_optimal, 1);
    assert_int_equal(p->total, brute_total);
    assert_int_equal(st.lower_bound, brute_total);
    assert_int_equal(st.total, p->total);
    tg_plan_destroy(p);
  }
}

/* The skyline branch-and-bound on its own (greedy would often hand it the optimum already):
 * from the naive plan (every record in its own slot) it must find the brute-force optimum
 * and prove it, with and without alignments and zero sizes. */
static void test_skyline_complete(void **state) {
  (void)state;
  tg_test_rng g = {77};
  for (int round = 0; round < 300; ++round) {
    size_t n = 3 + (size_t)(round % 6);
    tg_test_random_spec spec = {1, n, (uint32_t)(4 + round % 5), 4, 40, round % 5 == 4,
                                round & 1};
    tg_usage_record r[8];
    tg_test_random_records(&g, &spec, r);
    brute b = {r, n, 1, 0};
    if (round % 3 == 1) b.align = 4;
    if (round % 3 == 2)
      for (size_t i = 0; i < n; ++i) r[i].alignment = k_aligns[tg_test_rng_range(&g, 0, 2)];
    size_t order[8];
    for (size_t i = 0; i < n; ++i) order[i] = i;
    uint64_t brute_total = UINT64_MAX;
    permute(&b, order, 0, &brute_total);
    tg_plan_options o;
    memset(&o, 0, sizeof o);
    o.mode = TG_MODE_OFFSETS;
    o.strategy = TG_STRATEGY_NAIVE;
    o.alignment = b.align;
    o.seed = (uint64_t)round;
    tg_plan *p = NULL;
    assert_int_equal(tg_plan_compute(r, n, 1, &o, NULL, &p), TG_OK);
    uint64_t volumes[8];
    for (size_t i = 0; i < n; ++i) volumes[i] = r[i].size.w;
    tg__plan_input in = {r, n, 1, &o, tg_allocator_default(), volumes, 0, NULL, NULL};
    tg_bounds bounds;
    assert_int_equal(tg_bounds_compute(r, n, 1, NULL, &bounds), TG_OK);
    tg_exact_stats st;
    memset(&st, 0, sizeof st);
    tg__budget nb = {TG__BUDGET_NONE, 0, 0};
    assert_int_equal(tg__skyline_improve(&in, bounds.peak_live, &nb, 0, &p, &st), TG_OK);
    tg_test_assert_valid(r, n, 1, p, b.align, NULL);
    assert_int_equal(p->total, brute_total);
    assert_int_equal(st.proved_optimal, 1);
    assert_int_equal(st.lower_bound, brute_total);
    tg_plan_destroy(p);
  }
}

/* Strategy best under a work limit (no exact mode) reaches the bound on perfect packings too:
 * the skyline search runs inside the search phase. */
static void test_search_perfect_packing(void **state) {
  (void)state;
  static const size_t sizes[] = {40, 60, 80, 100, 120, 150};
  int reached = 0;
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; ++i) {
    size_t n = sizes[i];
    tg_test_rng g = {9100 + n};
    tg_usage_record *r = calloc(n, sizeof *r);
    assert_non_null(r);
    uint64_t w = perfect_packing(&g, r, n);
    tg_plan *greedy = plan_with(r, n, 1, TG_MODE_OFFSETS, 0, 0, NULL);
    tg_plan *p = tg_test_best_work(r, n, 1, TG_MODE_OFFSETS, 254, 1, NULL);
    uint64_t total = p->total, one_pass = one_pass_total(r, n, 1, TG_MODE_OFFSETS, NULL);
    tg_plan_destroy(greedy);
    tg_plan_destroy(p);
    free(r);
    assert_true(total <= one_pass);
    assert_true(total >= w);
    reached += total == w;
  }
  print_message("search (work 254) at the bound on %d of 6 perfect packings\n", reached);
  assert_true(reached >= 5);
}

/* Same records, options and seed: same plan, where the search ends by proof or by its caps
 * (small inputs), not by the clock. Different seeds: still valid and never worse. */
static void test_skyline_deterministic(void **state) {
  (void)state;
  tg_test_rng g = {4242};
  for (int round = 0; round < 6; ++round) {
    tg_test_random_spec spec = {1, 24 + (size_t)round * 4, 30, 8, 500, 0, round & 1};
    tg_usage_record r[48];
    tg_test_random_records(&g, &spec, r);
    tg_plan *greedy = plan_with(r, spec.count, 1, TG_MODE_OFFSETS, 0, 0, NULL);
    tg_plan *a = tg_test_best_work(r, spec.count, 1, TG_MODE_OFFSETS, 510, 7, NULL);
    tg_plan *b = tg_test_best_work(r, spec.count, 1, TG_MODE_OFFSETS, 510, 7, NULL);
    tg_plan *c = tg_test_best_work(r, spec.count, 1, TG_MODE_OFFSETS, 510, 8, NULL);
    assert_int_equal(a->total, b->total);
    assert_memory_equal(a->offset_of, b->offset_of, spec.count * sizeof *a->offset_of);
    uint64_t one_pass = one_pass_total(r, spec.count, 1, TG_MODE_OFFSETS, NULL);
    assert_true(a->total <= one_pass && c->total <= one_pass);
    (void)greedy;
    tg_plan_destroy(greedy);
    tg_plan_destroy(a);
    tg_plan_destroy(b);
    tg_plan_destroy(c);
  }
}

typedef struct progress_log {
  int calls;
  uint64_t last_nodes;
  int monotone;
} progress_log;

static void on_progress(void *user, const tg_exact_stats *s) {
  progress_log *l = user;
  if (s->nodes < l->last_nodes || s->lower_bound > s->total) l->monotone = 0;
  l->last_nodes = s->nodes;
  l->calls++;
}

/* A hard input (a 400-piece perfect packing with every tenth piece grown a little: the bound
 * is out of reach and the tree is huge): the exact mode stops near its time limit, returns a
 * valid plan no worse than greedy and a consistent gap, and reports progress. */
static void test_exact_time_limit(void **state) {
  (void)state;
  tg_test_rng g = {31337};
  const size_t n = 400;
  tg_usage_record *r = calloc(n, sizeof *r);
  assert_non_null(r);
  perfect_packing(&g, r, n);
  for (size_t i = 0; i < n; i += 10) r[i].size.w += 7;
  tg_plan *greedy = plan_with(r, n, 1, TG_MODE_OFFSETS, 0, 0, NULL);
  tg_bounds bounds;
  assert_int_equal(tg_bounds_compute(r, n, 1, NULL, &bounds), TG_OK);
  tg_exact_stats st;
  memset(&st, 0, sizeof st);
  progress_log log = {0, 0, 1};
  st.progress = on_progress;
  st.progress_user = &log;
  tg_plan *p = exact_with(r, n, 300, NULL, &st);
  print_message("exact(300 ms) on 400 records: %.0f ms, %llu nodes, total/bound %.4f, "
                "proved %d\n", (double)st.elapsed_us / 1000.0, (unsigned long long)st.nodes,
                (double)p->total / (double)bounds.peak_live, st.proved_optimal);
  /* The limit covers greedy too; allow for a slow (sanitized, loaded) machine. */
  assert_true(st.elapsed_us < 300000 + 700000);
  assert_true(p->total <= greedy->total);
  assert_exact_stats(r, n, &st, p);
  if (!st.proved_optimal) assert_true(st.lower_bound < p->total);
  assert_true(log.calls >= 1);
  assert_true(log.monotone);
  tg_plan_destroy(greedy);
  tg_plan_destroy(p);
  free(r);
}

/* An improver under a budget. */
typedef tg_status (*budget_improve_fn)(const tg__plan_input *in, uint64_t bound, tg__budget *b,
                                       tg_plan **best);

/* `fn` from greedy-by-size plans of `rounds` random sets (min_n to max_n records over 3 to
 * max_tasks tasks, up to max_long long-lived; per-record alignments, a plan alignment of 64,
 * some zero sizes when `zeros`), with 2 units each: every plan valid, no worse, at or above the
 * bound and the same twice, the budget charged at most `over_mu` thousandths past its cap.
 * Returns how many it improved. */
static size_t improver_property(uint64_t seed, int rounds, size_t min_n, size_t max_n, uint32_t max_tasks,
                                uint32_t max_long, int zeros, budget_improve_fn fn, uint64_t over_mu) {
  tg_test_rng g = {seed};
  size_t improved = 0;
  for (int round = 0; round < rounds; ++round) {
    tg_test_random_spec spec = {1, min_n + (size_t)tg_test_rng_range(&g, 0, max_n - min_n),
                                (uint32_t)tg_test_rng_range(&g, 3, max_tasks),
                                (uint32_t)tg_test_rng_range(&g, 0, max_long), 4096, round % 7 == 0,
                                round % 5 == 0};
    size_t n = spec.count;
    tg_usage_record *r = calloc(n, sizeof *r);
    uint64_t *vol = calloc(n, sizeof *vol);
    assert_non_null(r);
    assert_non_null(vol);
    tg_test_random_records(&g, &spec, r);
    for (size_t i = 0; i < n; ++i) {
      if (round % 3 == 1) r[i].alignment = (uint64_t)1 << tg_test_rng_range(&g, 0, 6);
      if (zeros && round % 11 == 3 && i % 9 == 0) r[i].size.w = 0;
      vol[i] = r[i].size.w;
    }
    tg_plan_options o;
    memset(&o, 0, sizeof o);
    o.mode = TG_MODE_OFFSETS;
    o.strategy = TG_STRATEGY_GREEDY_BY_SIZE;
    o.alignment = round % 4 == 3 ? 64 : 0;
    o.seed = (uint64_t)round;
    tg_plan *start = NULL;
    assert_int_equal(tg_plan_compute(r, n, 1, &o, NULL, &start), TG_OK);
    tg__plan_input in = {r, n, 1, &o, tg_allocator_default(), vol, 0, NULL, NULL};
    uint64_t bound;
    assert_int_equal(tg__search_bound(&in, &bound), TG_OK);
    tg_plan *runs[2] = {NULL, NULL};
    for (int k = 0; k < 2; ++k) {
      assert_int_equal(tg_plan_compute(r, n, 1, &o, NULL, &runs[k]), TG_OK);
      tg__budget b = tg__budget_make(2, 0);
      assert_int_equal(fn(&in, bound, &b, &runs[k]), TG_OK);
      assert_true(b.spent <= b.cap + over_mu);
      tg_test_assert_valid(r, n, 1, runs[k], o.alignment, NULL);
      assert_true(runs[k]->total <= start->total);
      assert_true(runs[k]->total >= bound);
    }
    assert_int_equal(runs[0]->total, runs[1]->total);
    assert_memory_equal(runs[0]->offset_of, runs[1]->offset_of, n * sizeof *runs[0]->offset_of);
    improved += runs[0]->total < start->total;
    tg_plan_destroy(runs[0]);
    tg_plan_destroy(runs[1]);
    tg_plan_destroy(start);
    free(vol);
    free(r);
  }
  return improved;
}

static tg_status lns_budget(const tg__plan_input *in, uint64_t bound, tg__budget *b, tg_plan **best) {
  return tg__search_offsets_lns(in, bound, b, 0, NULL, best);
}

/* The large-neighbourhood search on its own (in `best` it runs only from 1,025 records):
 * from greedy-by-size plans of random sets, with alignments, every result is valid, never
 * worse, and the same for the same seed. */
static void test_lns_valid_never_worse(void **state) {
  (void)state;
  /* 2 units: 400 steps. It does improve plans, not only keep them. */
  assert_true(improver_property(2027, 300, 20, 400, 400, 40, 0, lns_budget, 5) >= 30);
}

/* Through `best` under a work limit: chains (as in bench_planner) of 1,500 to 6,000 records
 * reach the peak-live bound, which greedy alone misses. From 1,025 records the search is the
 * one of large inputs (dive, neighbourhood search); iterated greedy, which ran below 5,000
 * records before, stayed 8-10% above the bound there with 100 ms. */
static void test_lns_chain_reaches_bound(void **state) {
  (void)state;
  static const size_t sizes[] = {1500, 3000, 6000};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
    size_t n = sizes[s];
    tg_usage_record *r = calloc(n, sizeof *r);
    assert_non_null(r);
    tg_test_rng g = {77 + n};
    for (size_t i = 0; i < n; ++i)
      r[i] = rec1(tg_test_rng_range(&g, 1, 1024) * 1024, (uint32_t)i,
                  (uint32_t)(i + tg_test_rng_range(&g, 1, 3)));
    tg_bounds b;
    assert_int_equal(tg_bounds_compute(r, n, 1, NULL, &b), TG_OK);
    tg_plan *greedy = plan_with(r, n, 1, TG_MODE_OFFSETS, 0, 0, NULL);
    tg_plan *searched = tg_test_best_work(r, n, 1, TG_MODE_OFFSETS, 510, 1, NULL);
    uint64_t g_total = greedy->total, s_total = searched->total;
    print_message("chain of %zu: greedy %.4f, search (work 510) %.4f of the bound\n", n,
                  (double)g_total / (double)b.peak_live, (double)s_total / (double)b.peak_live);
    tg_plan_destroy(greedy);
    tg_plan_destroy(searched);
    free(r);
    assert_true(g_total > b.peak_live);
    assert_int_equal(s_total, b.peak_live);
  }
}

/* The exact mode searches serial inputs beyond TG_EXACT_MAX_RECORDS (up to
 * TG_EXACT_MAX_SERIAL_RECORDS): a 1,200-piece perfect packing is searched (nodes counted)
 * and its plan valid, never worse than greedy and consistent with the stats; with a relation
 * the same records are not (the generic branch-and-bound stops at TG_EXACT_MAX_RECORDS). */
static void test_exact_serial_beyond_cap(void **state) {
  (void)state;
  const size_t n = 1200;
  tg_usage_record *r = calloc(n, sizeof *r);
  assert_non_null(r);
  tg_test_rng g = {5150};
  uint64_t w = perfect_packing(&g, r, n);
  tg_plan *greedy = plan_with(r, n, 1, TG_MODE_OFFSETS, 0, 0, NULL);
  tg_exact_stats st;
  memset(&st, 0, sizeof st);
  tg_plan *p = exact_work(r, n, 510, NULL, &st);
  print_message("exact (work 510) on a %zu-piece perfect packing: greedy %.4f, exact %.4f, "
                "nodes %llu, proved %d, %.0f ms\n", n, (double)greedy->total / (double)w,
                (double)p->total / (double)w, (unsigned long long)st.nodes, st.proved_optimal,
                (double)st.elapsed_us / 1000.0);
  /* Searched, unless the merged blocks' plan already met the bound (then proved at once). */
  if (!(st.proved_optimal && p->total == w)) {
    assert_int_equal(st.searched, 1);
    assert_true(st.nodes > 0);
  }
  assert_true(p->total <= greedy->total);
  assert_true(p->total >= w);
  assert_int_equal(st.total, p->total);
  assert_true(st.lower_bound >= w && st.lower_bound <= p->total);
  if (st.proved_optimal) assert_int_equal(p->total, st.lower_bound);
  tg_plan_destroy(p);
  /* With a relation (records of different parity never share): valid, not searched. */
  tg_share_relation rel = {same_parity, NULL, NULL, 0, NULL};
  memset(&st, 0, sizeof st);
  p = exact_with(r, n, 50, &rel, &st);
  assert_int_equal(st.searched, 0);
  assert_int_equal(st.nodes, 0);
  assert_int_equal(st.total, p->total);
  tg_plan_destroy(p);
  tg_plan_destroy(greedy);
  free(r);
}

/* The lookahead test of the skyline search against its definition (sort, then h + S(h) for
 * every sp value h) on random lists: short and long, many ties, limits on both sides of the
 * answer. */
static void test_skyline_fits_above(void **state) {
  (void)state;
  tg_test_rng g = {1618};
  tg__sort_item items[400];
  uint64_t vol[400];
  size_t pass = 0, fail = 0;
  for (int round = 0; round < 20000; ++round) {
    size_t m = (size_t)tg_test_rng_range(&g, 0, round % 10 == 0 ? 400 : 40);
    uint64_t spread = tg_test_rng_range(&g, 1, round % 3 == 0 ? 8 : 100000);
    uint64_t above = tg_test_rng_range(&g, 0, 3) == 0 ? tg_test_rng_range(&g, 0, 1000000) : 0;
    for (size_t i = 0; i < m; ++i) {
      vol[i] = tg_test_rng_range(&g, 1, 10000);
      items[i] = (tg__sort_item){tg_test_rng_range(&g, 0, spread) * 16, i};
    }
    /* The definition: the largest h + S(h). */
    uint64_t worst = 0;
    for (size_t i = 0; i < m; ++i) {
      uint64_t s = above;
      for (size_t j = 0; j < m; ++j) s += items[j].key >= items[i].key ? vol[j] : 0;
      if (items[i].key + s > worst) worst = items[i].key + s;
    }
    uint64_t limit;
    switch (round % 4) {
    case 0: limit = worst; break;
    case 1: limit = worst ? worst - 1 : 0; break;
    default: limit = worst + tg_test_rng_range(&g, 0, 20000) - 10000 * (worst >= 10000); break;
    }
    int expect = m == 0 || worst <= limit;
    int got = tg__skyline_fits_above(items, m, above, vol, limit);
    assert_int_equal(got, expect);
    /* Only reordered: the same items are there. */
    uint64_t seen = 0;
    for (size_t i = 0; i < m; ++i) seen += items[i].idx;
    assert_int_equal(seen, m * (m ? m - 1 : 0) / 2);
    pass += got && m > 0;
    fail += !got;
  }
  assert_true(pass > 5000);
  assert_true(fail > 5000);
}

/* A large perfect packing: the neighbourhood search stalls on it (its pieces live long) and,
 * with a stall limit, gives up by itself rather than at the deadline; through `best` the
 * skyline search then takes over. Every plan valid and never worse than greedy. */
static void test_lns_stall_hands_over(void **state) {
  (void)state;
  size_t n = 6000;
  tg_usage_record *r = calloc(n, sizeof *r);
  uint64_t *vol = calloc(n, sizeof *vol);
  assert_true(r && vol);
  tg_test_rng g = {12};
  uint64_t w = perfect_packing(&g, r, n);
  for (size_t i = 0; i < n; ++i) vol[i] = r[i].size.w;
  tg_plan *p = plan_with(r, n, 1, TG_MODE_OFFSETS, 0, 0, NULL);
  const uint64_t greedy = p->total;
  assert_true(greedy > w);
  tg_plan_options o;
  memset(&o, 0, sizeof o);
  o.mode = TG_MODE_OFFSETS;
  tg__plan_input in = {r, n, 1, &o, tg_allocator_default(), vol, 0, NULL, NULL};
  uint64_t t0 = tg__now_us();
  /* No deadline and a huge step cap: only the stall limit can end it this soon. */
  tg__budget nb = {TG__BUDGET_NONE, 0, 0};
  assert_int_equal(tg__search_offsets_lns(&in, w, &nb, 300, NULL, &p), TG_OK);
  assert_true(tg__now_us() - t0 < 60u * 1000 * 1000);
  tg_test_assert_valid(r, n, 1, p, 0, NULL);
  assert_true(p->total <= greedy);
  tg_plan *searched = plan_with(r, n, 1, TG_MODE_OFFSETS, 400, 1, NULL);
  assert_true(searched->total <= greedy);
  print_message("perfect packing of %zu: greedy %.4f, search(400 ms) %.4f of the optimum\n", n,
                (double)greedy / (double)w, (double)searched->total / (double)w);
  tg_plan_destroy(searched);
  tg_plan_destroy(p);
  free(vol);
  free(r);
}

typedef tg_status (*improve_fn)(const tg__plan_input *in, uint64_t bound, tg_plan **best);

/* An offsets input with its peak-live bound and greedy-by-size's plan (c->plan). */
typedef struct greedy_case {
  tg_plan_options o;
  tg__plan_input in;
  uint64_t bound;
  tg_plan *plan;
} greedy_case;

static void greedy_case_init(greedy_case *c, const tg_usage_record *r, const uint64_t *vol,
                             size_t n) {
  memset(&c->o, 0, sizeof c->o);
  c->o.mode = TG_MODE_OFFSETS;
  c->o.strategy = TG_STRATEGY_GREEDY_BY_SIZE;
  c->in = (tg__plan_input){r, n, 1, &c->o, tg_allocator_default(), vol, 0, NULL, NULL};
  assert_int_equal(tg__search_bound(&c->in, &c->bound), TG_OK);
  c->plan = NULL;
  assert_int_equal(tg_plan_compute(r, n, 1, &c->o, NULL, &c->plan), TG_OK);
}

/* The skyline branch-and-bound on its own, from greedy-by-size's plan, reaches the bound on
 * perfect packings and proves it (in `best` the merged blocks of reduce.c now solve
 * most of these before it runs). */
static void test_skyline_perfect_packing(void **state) {
  (void)state;
  static const size_t sizes[] = {50, 100, 150, 200, 250};
  int searched = 0;
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; ++i) {
    size_t n = sizes[i];
    tg_test_rng g = {7000 + n};
    tg_usage_record *r = calloc(n, sizeof *r);
    uint64_t *vol = calloc(n, sizeof *vol);
    assert_non_null(r);
    assert_non_null(vol);
    uint64_t w = perfect_packing(&g, r, n);
    for (size_t k = 0; k < n; ++k) vol[k] = r[k].size.w;
    greedy_case c;
    greedy_case_init(&c, r, vol, n);
    assert_int_equal(c.bound, w);
    tg_exact_stats st;
    memset(&st, 0, sizeof st);
    tg__budget nb = {TG__BUDGET_NONE, 0, 0};
    assert_int_equal(tg__skyline_improve(&c.in, c.bound, &nb, 0, &c.plan, &st), TG_OK);
    tg_test_assert_valid(r, n, 1, c.plan, 0, NULL);
    print_message("skyline on a perfect packing of %zu: total/W = %.4f, proved %d, nodes %llu\n", n,
                  (double)c.plan->total / (double)w, st.proved_optimal,
                  (unsigned long long)st.nodes);
    assert_int_equal(c.plan->total, w);
    assert_int_equal(st.proved_optimal, 1);
    searched += st.nodes > 0;
    tg_plan_destroy(c.plan);
    free(vol);
    free(r);
  }
  assert_true(searched >= 2);
}

/* `improve` (a search that takes a greedy-by-size plan) with each of its allocations failing
 * in turn: a clean TG_ERROR_OUT_OF_HOST_MEMORY with the incumbent untouched, or the plan of
 * the run without failures; nothing leaks; at least `min_failures` failures. */
static void improve_fault_walk(const tg_usage_record *r, const uint64_t *vol, size_t n,
                               improve_fn improve, int min_failures) {
  greedy_case c;
  greedy_case_init(&c, r, vol, n);
  tg__plan_input in = c.in;
  const tg_plan_options o = c.o;
  const uint64_t bound = c.bound;
  tg_plan *want = c.plan;
  const uint64_t greedy = want->total;
  assert_int_equal(improve(&in, bound, &want), TG_OK);
  assert_true(want->total < greedy); /* it does something here, so failures can matter */
  int failures = 0;
  for (uint64_t at = 1; at < 40; ++at) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, at);
    in.alloc = &fa.base;
    tg_plan *p = NULL;
    assert_int_equal(tg_plan_compute(r, n, 1, &o, NULL, &p), TG_OK);
    tg_status st = improve(&in, bound, &p);
    if (st == TG_OK) {
      assert_int_equal(p->total, want->total);
      assert_memory_equal(p->offset_of, want->offset_of, n * sizeof *p->offset_of);
    } else {
      assert_int_equal(st, TG_ERROR_OUT_OF_HOST_MEMORY);
      assert_int_equal(p->total, greedy);
      ++failures;
    }
    tg_plan_destroy(p);
    assert_int_equal(fa.live_blocks, 0);
  }
  assert_true(failures >= min_failures);
  tg_plan_destroy(want);
}

static tg_status lns_300_steps(const tg__plan_input *in, uint64_t bound, tg_plan **best) {
  tg__budget b = {1500, 0, 0}; /* 300 steps */
  return tg__search_offsets_lns(in, bound, &b, 0, NULL, best);
}

/* The large-neighbourhood search with each of its allocations failing in turn. */
static void test_lns_allocation_failures(void **state) {
  (void)state;
  tg_test_rng g = {3};
  tg_test_random_spec spec = {1, 120, 60, 10, 4096, 0, 0};
  tg_usage_record r[120];
  uint64_t vol[120];
  tg_test_random_records(&g, &spec, r);
  for (size_t i = 0; i < 120; ++i) vol[i] = r[i].size.w;
  improve_fault_walk(r, vol, 120, lns_300_steps, 3);
}

/* Removing records from the gap index: after random inserts and removals, every search
 * answers as an index holding only the records still in. A third of the rounds use an index
 * created for a placement order (offsets in units of the sizes' divisor, here 8, in 32-bit
 * entries), compared with a plain one. */
static void test_gap_index_remove(void **state) {
  (void)state;
  tg_test_rng g = {31};
  for (int round = 0; round < 200; ++round) {
    tg_test_random_spec spec = {1, 10 + (size_t)tg_test_rng_range(&g, 0, 150),
                                (uint32_t)tg_test_rng_range(&g, 3, 200),
                                (uint32_t)tg_test_rng_range(&g, 0, 60), 64, 1, round & 1};
    size_t n = spec.count;
    tg_usage_record *r = calloc(n, sizeof *r);
    uint64_t *vol = calloc(n, sizeof *vol), *off = calloc(n, sizeof *off);
    int *in_ix = calloc(n, sizeof *in_ix);
    assert_true(r && vol && off && in_ix);
    tg_test_random_records(&g, &spec, r);
    const int ordered = round % 3 == 0;
    const uint64_t unit = ordered ? 8 : 1;
    size_t *identity = calloc(n, sizeof *identity);
    assert_non_null(identity);
    for (size_t i = 0; i < n; ++i) {
      if (ordered) r[i].size.w = i == 0 ? 8 : (r[i].size.w + 1) * 8;
      vol[i] = r[i].size.w;
      identity[i] = i;
    }
    tg_plan_options o;
    memset(&o, 0, sizeof o);
    o.mode = TG_MODE_OFFSETS;
    tg__plan_input in = {r, n, 1, &o, tg_allocator_default(), vol, 0, NULL, NULL};
    tg__gap_index *ix = NULL;
    assert_int_equal(tg__gap_index_create_ordered(&in, ordered ? identity : NULL, &ix), TG_OK);
    for (int step = 0; step < 400; ++step) {
      size_t x = (size_t)tg_test_rng_range(&g, 0, n - 1);
      if (in_ix[x]) {
        tg__gap_index_remove(ix, x, off[x]);
        in_ix[x] = 0;
      } else {
        off[x] = tg_test_rng_range(&g, 0, 300) * unit; /* overlaps are fine for the index */
        tg__gap_index_insert(ix, x, off[x]);
        in_ix[x] = 1;
      }
    }
    tg__gap_index *fresh = NULL;
    assert_int_equal(tg__gap_index_create(&in, &fresh), TG_OK);
    for (size_t x = 0; x < n; ++x)
      if (in_ix[x]) tg__gap_index_insert(fresh, x, off[x]);
    for (size_t x = 0; x < n; ++x) {
      for (int fit = 0; fit < 3; ++fit) {
        uint64_t a = 0, c = 0;
        assert_int_equal(tg__gap_index_find(ix, x, (tg_fit)fit, &a), TG_OK);
        assert_int_equal(tg__gap_index_find(fresh, x, (tg_fit)fit, &c), TG_OK);
        assert_int_equal(a, c);
      }
    }
    tg__gap_index_destroy(ix);
    tg__gap_index_destroy(fresh);
    free(identity);
    free(in_ix);
    free(off);
    free(vol);
    free(r);
  }
}

/* The relaxing skyline dive on random inputs (alignments, zero sizes, ties, node caps that stop
 * it early): every plan valid, never worse than the greedy plan it starts from, the same on a
 * second run; and with no cap it does reach plans better than greedy's. */
static void test_skyline_dive_valid(void **state) {
  (void)state;
  tg_test_rng g = {404};
  int improved = 0;
  for (int round = 0; round < 400; ++round) {
    tg_test_random_spec spec = {1, 2 + (size_t)tg_test_rng_range(&g, 0, 250),
                                (uint32_t)tg_test_rng_range(&g, 1, 120),
                                (uint32_t)tg_test_rng_range(&g, 0, 30),
                                (uint64_t)tg_test_rng_range(&g, 1, 4096), round % 5 == 0,
                                round % 7 == 0};
    size_t n = spec.count;
    tg_usage_record *r = calloc(n, sizeof *r);
    uint64_t *vol = calloc(n, sizeof *vol);
    assert_true(r && vol);
    tg_test_random_records(&g, &spec, r);
    for (size_t i = 0; i < n; ++i) {
      if (round % 6 == 1 && i % 3 == 0) r[i].alignment = 16;
      vol[i] = r[i].size.w;
    }
    tg_plan_options o;
    memset(&o, 0, sizeof o);
    o.mode = TG_MODE_OFFSETS;
    o.strategy = TG_STRATEGY_GREEDY_BY_SIZE;
    o.alignment = round % 4 == 3 ? 64 : 0;
    tg__plan_input in = {r, n, 1, &o, tg_allocator_default(), vol, 0, NULL, NULL};
    uint64_t bound;
    assert_int_equal(tg__search_bound(&in, &bound), TG_OK);
    const uint64_t steps[3] = {bound / 100 + 1, bound / 1000 + 1, bound / 10 + 1};
    const uint64_t step = steps[round % 3];
    const uint64_t cap = round % 4 == 0 ? (uint64_t)tg_test_rng_range(&g, 1, 4 * n) : 0;
    tg_plan *runs[2] = {NULL, NULL};
    uint64_t greedy = 0;
    for (int k = 0; k < 2; ++k) {
      assert_int_equal(tg_plan_compute(r, n, 1, &o, NULL, &runs[k]), TG_OK);
      greedy = runs[k]->total;
      uint64_t nodes = 0;
      assert_int_equal(tg__skyline_dive(&in, bound, step, UINT64_MAX, cap, TG__DIVE_MAX_LIST, &nodes, &runs[k]),
                       TG_OK);
      tg_test_assert_valid(r, n, 1, runs[k], o.alignment, NULL);
      assert_true(runs[k]->total <= greedy);
      assert_true(runs[k]->total >= bound);
      if (cap > 0) assert_true(nodes <= cap);
    }
    assert_int_equal(runs[0]->total, runs[1]->total);
    assert_memory_equal(runs[0]->offset_of, runs[1]->offset_of, n * sizeof *runs[0]->offset_of);
    improved += runs[0]->total < greedy;
    tg_plan_destroy(runs[0]);
    tg_plan_destroy(runs[1]);
    free(vol);
    free(r);
  }
  print_message("dive improved %d of 400 greedy plans\n", improved);
  assert_true(improved >= 100);
}

/* A wide DAG of n records: about 100 live at every task, lengths 1-20, sizes 256 B - 1 MiB. */
static void wide_dag(tg_test_rng *g, tg_usage_record *r, uint64_t *vol, size_t n) {
  uint64_t tasks = n / 10 + 1;
  for (size_t i = 0; i < n; ++i) {
    uint64_t f = tg_test_rng_range(g, 0, tasks);
    uint64_t len = tg_test_rng_range(g, 1, 20);
    memset(&r[i], 0, sizeof r[i]);
    r[i].size = (tg_extent){tg_test_rng_range(g, 1, 4096) * 256, 1, 1};
    r[i].first_task = (uint32_t)f;
    r[i].last_task = (uint32_t)(f + len);
    vol[i] = r[i].size.w;
  }
}

/* Wide DAGs: greedy
 * ends 5-10% above the peak-live bound, the dive within 1% (measured: 0.0-0.5%). 6000 records
 * need more than 2 x TG__SKY_COMMIT_DEPTH nodes, so the dive drops part of its undo log. */
static void test_skyline_dive_wide_dag(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    tg_test_rng g = {900 + seed};
    size_t n = seed == 3 ? 6000 : 1500;
    tg_usage_record *r = calloc(n, sizeof *r);
    uint64_t *vol = calloc(n, sizeof *vol);
    assert_true(r && vol);
    wide_dag(&g, r, vol, n);
    greedy_case c;
    greedy_case_init(&c, r, vol, n);
    const uint64_t bound = c.bound;
    tg_plan *p = c.plan;
    const uint64_t greedy = p->total;
    uint64_t nodes = 0;
    assert_int_equal(tg__skyline_dive(&c.in, bound, bound / 1000, UINT64_MAX, 0, TG__DIVE_MAX_LIST, &nodes, &p),
                     TG_OK);
    tg_test_assert_valid(r, n, 1, p, 0, NULL);
    print_message("wide DAG of %zu: greedy %.4f, dive %.4f of the bound, %llu nodes\n", n,
                  (double)greedy / (double)bound, (double)p->total / (double)bound,
                  (unsigned long long)nodes);
    assert_true(greedy > bound + bound / 50);
    assert_true(p->total <= bound + bound / 100);
    if (seed == 3) assert_true(nodes > 2 * TG__SKY_COMMIT_DEPTH);
    /* Stopped by a node cap at a quarter, half and nine tenths of that: what it placed stays,
     * the rest goes greedily - a valid plan, better than greedy's from half the dive on (and
     * past the first commit on 6000 records, whose frames it stops without unwinding). */
    for (int part = 0; part < 3; ++part) {
      static const uint64_t tenths[3] = {25, 50, 90};
      tg_plan *q = NULL;
      assert_int_equal(tg_plan_compute(r, n, 1, &c.o, NULL, &q), TG_OK);
      uint64_t cap = nodes * tenths[part] / 100, used = 0;
      assert_int_equal(tg__skyline_dive(&c.in, bound, bound / 1000, UINT64_MAX, cap, TG__DIVE_MAX_LIST, &used, &q),
                       TG_OK);
      tg_test_assert_valid(r, n, 1, q, 0, NULL);
      print_message("  stopped after %llu nodes: %.4f\n", (unsigned long long)used,
                    (double)q->total / (double)bound);
      assert_true(used <= cap);
      assert_true(q->total <= greedy);
      if (part > 0) assert_true(q->total < greedy);
      tg_plan_destroy(q);
    }
    tg_plan_destroy(p);
    free(vol);
    free(r);
  }
}

/* Records over many task points each. The dive declines (TG_ERROR_OVERFLOW, "not searched",
 * plan untouched) beyond TG__DIVE_MAX_COVER_PER_RECORD list entries per record, where the
 * skyline search still runs (600 records over 1..600 points: 180k entries); the skyline
 * search declines beyond TG__SKYLINE_MAX_COVER (5000 records: 12.5M > 2^23 + 32 n). */
static void test_skyline_dive_cover_cap(void **state) {
  (void)state;
  static const size_t sizes[2] = {600, 5000};
  for (int c = 0; c < 2; ++c) {
    const size_t n = sizes[c];
    tg_usage_record *r = calloc(n, sizeof *r);
    uint64_t *vol = calloc(n, sizeof *vol);
    assert_true(r && vol);
    for (size_t i = 0; i < n; ++i) {
      r[i].size = (tg_extent){1 + i % 7, 1, 1};
      r[i].first_task = (uint32_t)i;
      r[i].last_task = (uint32_t)n;
      vol[i] = r[i].size.w;
    }
    greedy_case k;
    greedy_case_init(&k, r, vol, n);
    const uint64_t before = k.plan->total;
    uint64_t nodes = 1;
    assert_int_equal(tg__skyline_dive(&k.in, before / 2, 1, UINT64_MAX, 0, TG__DIVE_MAX_LIST, &nodes, &k.plan),
                     TG_ERROR_OVERFLOW);
    assert_int_equal(nodes, 0);
    assert_int_equal(k.plan->total, before);
    tg_exact_stats st;
    memset(&st, 0, sizeof st);
    tg__budget nb = {2 * TG__MILLI, 0, 0}; /* 1000 nodes */
    tg_status sst = tg__skyline_improve(&k.in, before / 2, &nb, TG__SKYLINE_NODES_PER_UNIT, &k.plan, &st);
    assert_int_equal(sst, c == 0 ? TG_OK : TG_ERROR_OVERFLOW);
    assert_int_equal(st.searched, c == 0);
    tg_test_assert_valid(r, n, 1, k.plan, 0, NULL);
    tg_plan_destroy(k.plan);
    free(vol);
    free(r);
  }
}

/* Few task points, each under hundreds of records (a few points per record, but long lists):
 * the dive declines beyond TG__DIVE_MAX_LIST entries per list on average, plan untouched. */
static void test_skyline_dive_list_cap(void **state) {
  (void)state;
  tg_test_rng g = {515};
  const size_t n = 1000;
  tg_usage_record r[1000];
  uint64_t vol[1000];
  for (size_t i = 0; i < n; ++i) {
    uint32_t f = (uint32_t)tg_test_rng_range(&g, 0, 9);
    memset(&r[i], 0, sizeof r[i]);
    r[i].size = (tg_extent){tg_test_rng_range(&g, 1, 64), 1, 1};
    r[i].first_task = f;
    r[i].last_task = f + (uint32_t)tg_test_rng_range(&g, 0, 4);
    vol[i] = r[i].size.w;
  }
  greedy_case c;
  greedy_case_init(&c, r, vol, n);
  const uint64_t before = c.plan->total;
  assert_true(before > c.bound); /* something to improve */
  uint64_t nodes = 1;
  assert_int_equal(tg__skyline_dive(&c.in, c.bound, 1, UINT64_MAX, 0, TG__DIVE_MAX_LIST, &nodes, &c.plan),
                   TG_ERROR_OVERFLOW);
  assert_int_equal(nodes, 0);
  assert_int_equal(c.plan->total, before);
  tg_plan_destroy(c.plan);
}

static tg_status dive_thousandths(const tg__plan_input *in, uint64_t bound, tg_plan **best) {
  return tg__skyline_dive(in, bound, bound / 1000 + 1, UINT64_MAX, 0, TG__DIVE_MAX_LIST, NULL, best);
}

/* ...stopped early, so that its partial plan is completed. */
static tg_status dive_stopped(const tg__plan_input *in, uint64_t bound, tg_plan **best) {
  return tg__skyline_dive(in, bound, bound / 1000 + 1, UINT64_MAX, in->count * 3, TG__DIVE_MAX_LIST, NULL, best);
}

/* The dive with each of its allocations failing in turn. */
static void test_skyline_dive_allocation_failures(void **state) {
  (void)state;
  tg_test_rng g = {77};
  tg_usage_record r[150];
  uint64_t vol[150];
  wide_dag(&g, r, vol, 150);
  improve_fault_walk(r, vol, 150, dive_thousandths, 5);
  improve_fault_walk(r, vol, 150, dive_stopped, 8);
}

/* `parts` perfect packings of `each` pieces (widths 100 x each x (1, 1/2, 1/3, ...)) one after
 * another in time, their records interleaved: the input splits into `parts` parts and its
 * optimum is the widest one's width, 100 x each (returned). */
static uint64_t split_packings(uint64_t seed, size_t parts, size_t each, tg_usage_record *r) {
  tg_usage_record *one = calloc(each, sizeof *one);
  assert_non_null(one);
  uint32_t shift = 0;
  uint64_t w = 0;
  for (size_t k = 0; k < parts; ++k) {
    tg_test_rng g = {seed + k};
    uint64_t pw = perfect_packing(&g, one, each);
    uint32_t span = 0;
    for (size_t i = 0; i < each; ++i) {
      one[i].size.w /= k + 1; /* still a packing of the same pieces' times, narrower */
      if (one[i].size.w == 0) one[i].size.w = 1;
      if (one[i].last_task + 1 > span) span = one[i].last_task + 1;
      one[i].first_task += shift;
      one[i].last_task += shift;
      r[i * parts + k] = one[i];
    }
    shift += span + 1 + (uint32_t)k; /* a gap of k tasks after each (none after the first) */
    if (k == 0) w = pw;
  }
  free(one);
  return w;
}

/* An input of four time-separated perfect packings of 300 pieces (1,200 records: the whole
 * would get the search of large inputs) is searched part by part and reaches the bound,
 * set by the widest part: the narrower parts need no search (their greedy plans fit under
 * it). Exact mode proves it optimal, its stats those of the whole input. */
static void test_split_parts_reach_bound(void **state) {
  (void)state;
  enum { PARTS = 4, EACH = 300, N = PARTS * EACH };
  tg_usage_record *r = calloc(N, sizeof *r);
  assert_non_null(r);
  uint64_t w = split_packings(5100, PARTS, EACH, r);
  tg_bounds b;
  assert_int_equal(tg_bounds_compute(r, N, 1, NULL, &b), TG_OK);
  assert_int_equal(b.peak_live, w);
  tg_plan *greedy = plan_with(r, N, 1, TG_MODE_OFFSETS, 0, 0, NULL);
  assert_true(greedy->total > w);
  tg_plan *p = tg_test_best_work(r, N, 1, TG_MODE_OFFSETS, 4094, 1, NULL);
  print_message("split, 4 x 300 records: greedy %.4f, search %.4f of the bound\n",
                (double)greedy->total / (double)w, (double)p->total / (double)w);
  assert_int_equal(p->total, w);
  assert_int_equal(p->strategy, TG_STRATEGY_BEST);
  tg_exact_stats st;
  memset(&st, 0, sizeof st);
  tg_plan *e = exact_work(r, N, 4094, NULL, &st);
  assert_int_equal(e->total, w);
  assert_int_equal(st.proved_optimal, 1);
  assert_int_equal(st.lower_bound, w);
  assert_int_equal(st.total, w);
  assert_true(st.searched && st.nodes > 0);
  tg_plan_destroy(e);
  tg_plan_destroy(p);
  tg_plan_destroy(greedy);
  free(r);
}

/* Random inputs with time gaps (so they split, often into many parts, some of one record):
 * valid, never worse than greedy; exact-mode stats consistent with the plan. */
static void test_split_valid_never_worse(void **state) {
  (void)state;
  tg_test_rng g = {8080};
  int split_inputs = 0;
  for (int round = 0; round < 300; ++round) {
    size_t n = 2 + (size_t)tg_test_rng_range(&g, 0, 120);
    tg_usage_record *r = calloc(n, sizeof *r);
    assert_non_null(r);
    uint32_t max_len = (uint32_t)tg_test_rng_range(&g, 0, 6);
    for (size_t i = 0; i < n; ++i) {
      uint32_t f = (uint32_t)tg_test_rng_range(&g, 0, 3 * n);
      r[i] = rec1(tg_test_rng_range(&g, 0, 5) ? tg_test_rng_range(&g, 1, 900) : 0, f,
                  f + (uint32_t)tg_test_rng_range(&g, 0, max_len));
      r[i].alignment = round % 3 == 0 ? 8 : 0;
    }
    /* Does it split? Some task between two records that no record spans. */
    uint32_t lo = UINT32_MAX, hi = 0;
    for (size_t i = 0; i < n; ++i) {
      if (r[i].first_task < lo) lo = r[i].first_task;
      if (r[i].last_task > hi) hi = r[i].last_task;
    }
    for (uint32_t t = lo; t < hi; ++t) {
      int spanned = 0;
      for (size_t i = 0; i < n && !spanned; ++i)
        spanned = r[i].first_task <= t && t < r[i].last_task;
      if (!spanned) {
        ++split_inputs;
        break;
      }
    }
    tg_plan *greedy = plan_with(r, n, 1, TG_MODE_OFFSETS, 0, 0, NULL);
    tg_plan *p = plan_with(r, n, 1, TG_MODE_OFFSETS, 3, (uint64_t)round, NULL);
    assert_true(p->total <= one_pass_total(r, n, 1, TG_MODE_OFFSETS, NULL));
    if (round % 10 == 0) {
      tg_exact_stats st;
      memset(&st, 0, sizeof st);
      tg_plan *e = exact_with(r, n, 50, NULL, &st);
      assert_true(e->total <= greedy->total);
      assert_exact_stats(r, n, &st, e);
      tg_plan_destroy(e);
    }
    tg_plan_destroy(greedy);
    tg_plan_destroy(p);
    free(r);
  }
  assert_true(split_inputs > 200);
}

/* `best` under a work limit of `work` on records r[0..n) whose run without failures reaches the
 * bound `w`, with each allocation of the run failing in turn: TG_OK with a valid plan at the
 * bound, or a clean TG_ERROR_OUT_OF_HOST_MEMORY; nothing leaks. No clock: the total is the same
 * however fast the run. */
static void best_fault_walk(const tg_usage_record *r, size_t n, uint32_t work, uint64_t w) {
  tg_plan_options o = tg_test_best_work_options(TG_MODE_OFFSETS, work, 0, NULL);
  tg_plan *want = tg_test_best_work(r, n, 1, TG_MODE_OFFSETS, work, 0, NULL);
  assert_int_equal(want->total, w);
  int failures = 0, successes = 0;
  for (uint64_t at = 1; at < 600 && successes < 3; ++at) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, at);
    tg_plan *p = NULL;
    tg_status st = tg_plan_compute(r, n, 1, &o, &fa.base, &p);
    if (st == TG_OK) {
      ++successes;
      tg_test_assert_valid(r, n, 1, p, 0, NULL);
      assert_int_equal(p->total, w);
      tg_plan_destroy(p);
    } else {
      assert_int_equal(st, TG_ERROR_OUT_OF_HOST_MEMORY);
      assert_null(p);
      ++failures;
    }
    assert_int_equal(fa.live_blocks, 0);
  }
  assert_true(successes > 0);
  assert_true(failures > 20);
  tg_plan_destroy(want);
}

/* The split search with each allocation failing in turn (the greedy strategies' included). */
static void test_split_allocation_failures(void **state) {
  (void)state;
  enum { PARTS = 3, EACH = 40, N = PARTS * EACH };
  tg_usage_record r[N];
  const uint64_t w = split_packings(6200, PARTS, EACH, r);
  best_fault_walk(r, N, 254, w);
}

/* ---- merged blocks (reduce.c) ---- */

/* An input's naive plan (every record its own range) as the incumbent, and its bound. */
static tg_plan *naive_case(const tg_usage_record *r, const uint64_t *vol, size_t n,
                           tg_plan_options *o, tg__plan_input *in, uint64_t *bound) {
  o->mode = TG_MODE_OFFSETS;
  o->strategy = TG_STRATEGY_NAIVE;
  *in = (tg__plan_input){r, n, 1, o, tg_allocator_default(), vol, 0, NULL, NULL};
  assert_int_equal(tg__search_bound(in, bound), TG_OK);
  tg_plan *p = NULL;
  assert_int_equal(tg_plan_compute(r, n, 1, o, NULL, &p), TG_OK);
  return p;
}

/* Two records of one interval stack, the stack chains into an equal record after it, the
 * block stacks with a record of its interval, and that chains into the last record: one block
 * over the whole range, planned at the bound from a naive incumbent. Sizes x8 with one
 * record's alignment 8: a record of 3 bytes cannot join (not a multiple of the alignment) and
 * is planned beside the block. */
/* The blocks' planner the search entry hands tg__search_reduced: `best` on 1D records. */
/* The blocks' planner: `best` under a work limit of what the budget has left (no deadline
 * here), or without a search when it has less than a round's. */
static tg_status plan_blocks(const tg_usage_record *records, size_t count,
                             const tg_plan_options *options, tg__budget *b,
                             const tg_allocator *alloc, tg_plan **out) {
  tg_plan_options o = *options;
  uint64_t units = tg__budget_left(b) / TG__MILLI;
  o.work_limit = units < 2 ? 0 : (uint32_t)units;
  o.time_limit_ms = units < 2 ? TG_TIME_LIMIT_NONE : 0;
  tg_status st = tg_plan_compute(records, count, 1, &o, alloc, out);
  if (st == TG_OK && units >= 2) b->spent = b->cap; /* whole rounds: about all of it */
  return st;
}

static void test_reduce_known_answer(void **state) {
  (void)state;
  for (int aligned = 0; aligned < 2; ++aligned) {
    uint64_t k = aligned ? 8 : 1;
    tg_usage_record r[6] = {rec1(10 * k, 0, 3), rec1(20 * k, 0, 3), rec1(30 * k, 4, 6),
                            rec1(5 * k, 0, 6),  rec1(35 * k, 7, 9), rec1(3, 0, 9)};
    size_t n = aligned ? 6 : 5;
    r[0].alignment = aligned ? 8 : 0;
    uint64_t vol[6];
    for (size_t i = 0; i < n; ++i) vol[i] = r[i].size.w;
    tg_plan_options o;
    memset(&o, 0, sizeof o);
    tg__plan_input in;
    uint64_t bound;
    tg_plan *p = naive_case(r, vol, n, &o, &in, &bound);
    assert_int_equal(bound, 35 * k + (aligned ? 3 : 0));
    assert_true(p->total > bound);
    int reduced = 0;
    tg__budget nb = {TG__MILLI, 0, 0}; /* greedy blocks: less than a round */
    assert_int_equal(tg__search_reduced(&in, bound, &nb, plan_blocks, &p, &reduced), TG_OK);
    assert_int_equal(reduced, 1);
    tg_test_assert_valid(r, n, 1, p, 0, NULL);
    assert_int_equal(p->total, bound);
    assert_int_equal(p->offset_of[2], p->offset_of[0] < p->offset_of[1] ? p->offset_of[0]
                                                                        : p->offset_of[1]);
    tg_plan_destroy(p);
  }
}

/* Perfect packings of 200-500 pieces: `best` under a work limit of 126 units reaches the bound
 * on every one (greedy does on none), the exact mode proves it. Without the blocks the search
 * reached it on few of these within 100 ms. Work, not the clock: a loaded machine once left
 * one of these 10 bytes above the bound at 100 ms. */
static void test_reduce_perfect_packings(void **state) {
  (void)state;
  int greedy_at_bound = 0;
  for (size_t n = 200; n <= 500; n += 25) {
    tg_test_rng g = {41000 + n};
    tg_usage_record *r = calloc(n, sizeof *r);
    assert_non_null(r);
    uint64_t w = perfect_packing(&g, r, n);
    for (size_t i = 0; i < n; ++i) r[i].size.w *= 10; /* fewer equal sizes by chance */
    w *= 10;
    tg_plan *greedy = plan_with(r, n, 1, TG_MODE_OFFSETS, 0, 0, NULL);
    tg_plan *p = tg_test_best_work(r, n, 1, TG_MODE_OFFSETS, 126, 0, NULL);
    greedy_at_bound += greedy->total == w;
    const uint64_t total = p->total;
    tg_plan_destroy(greedy);
    tg_plan_destroy(p);
    tg_exact_stats st;
    memset(&st, 0, sizeof st);
    uint64_t exact_total = w;
    if (n % 100 == 0) {
      tg_plan *e = exact_work(r, n, 126, NULL, &st);
      exact_total = e->total;
      tg_plan_destroy(e);
    }
    free(r);
    /* After the frees: a failure leaks nothing. */
    assert_int_equal(total, w);
    if (n % 100 == 0) {
      assert_int_equal(exact_total, w);
      assert_int_equal(st.proved_optimal, 1);
      assert_int_equal(st.total, w);
      assert_int_equal(st.lower_bound, w);
    }
  }
  assert_int_equal(greedy_at_bound, 0);
}

/* `best` under `work` units with search seed `seed` on the capacity-tight set `set` of `n`
 * buffers (tg_test_best_work validates the plan): plan / peak-live, and whether it is at it. */
static double best_capacity_tight(size_t n, uint64_t set, uint32_t work, uint64_t seed, int *at_bound) {
  tg_usage_record *r = calloc(n, sizeof *r);
  assert_non_null(r);
  size_t m = gen_capacity_tight(set, r, n);
  tg_bounds b;
  assert_int_equal(tg_bounds_compute(r, m, 1, NULL, &b), TG_OK);
  tg_plan *p = tg_test_best_work(r, m, 1, TG_MODE_OFFSETS, work, seed, NULL);
  const double ratio = (double)p->total / (double)b.peak_live;
  *at_bound = p->total == b.peak_live;
  print_message("capacity-tight/%zu/%" PRIu64 " at %u units, seed %" PRIu64 ": %.4f of peak-live\n", n, set,
                work, seed, ratio);
  tg_plan_destroy(p);
  free(r);
  return ratio;
}

/* Capacity-tight sets (bench/capacity_tight.h, made as MiniMalloc's challenging set: plans near
 * peak-live exist, and the skyline tree from the empty plan thrashes there): under a work limit
 * of 254 units `best` ends within 3% of peak-live in the mean over five sets (the tree alone:
 * 6.4%; with its neighbourhood steps: 4.6%; with overlap minimisation beside it: 2.0%; with its
 * share back at the first one where a round ended inside its first capacity attempt: 1.7%),
 * every plan valid. */
static void test_best_capacity_tight(void **state) {
  (void)state;
  static const size_t k_sets[][2] = {{300, 3}, {300, 4}, {400, 7}, {450, 8}, {500, 10}};
  double sum = 0;
  int at_bound;
  for (size_t i = 0; i < sizeof k_sets / sizeof *k_sets; ++i)
    sum += best_capacity_tight(k_sets[i][0], k_sets[i][1], 254, 0, &at_bound);
  assert_true(sum / 5 < 1.03);
  /* 350/5 is the tree's (it proves peak-live at about 150 units on its own): at 100 units best
   * reaches it only if overlap minimisation's share leaves the tree its time (a share growing
   * whenever neither stage gained ended at 1.0125). */
  best_capacity_tight(350, 5, 100, 0, &at_bound);
  assert_true(at_bound);
  /* 500/10 with seed 4 at 150 units: overlap minimisation's share, once at 10%, stayed there
   * while neither stage gained, its rounds too short for one capacity attempt: 1.0897 (and
   * 1.1383, greedy's plan, before its moves got cheaper); with the share back at the first one,
   * 1.0661. */
  assert_true(best_capacity_tight(500, 10, 150, 4, &at_bound) < 1.08);
}

/* Overlap minimisation (overlap.c) on its own, from greedy-by-size's plan, under work caps: on
 * random inputs (per-record and plan alignments, zero sizes) every plan is valid, no worse, at
 * or above the bound, and the same twice; it improves many. (Past its cap: a capacity's set-up
 * and the last move.) */
static void test_overlap_valid_never_worse(void **state) {
  (void)state;
  const int rounds = getenv("TANGRAM_TEST_QUICK") ? 60 : 200;
  size_t improved = improver_property(5051, rounds, 10, 260, 200, 30, 1, tg__search_overlap, 250);
  print_message("overlap minimisation improved %zu of %d greedy plans\n", improved, rounds);
  assert_true(improved >= (size_t)rounds / 4);
}

/* Overlap minimisation on its own, from greedy-by-size's plans of the capacity-tight sets
 * (1.06-1.37 of peak-live), with 100 units and seeds 0-3: every plan valid and smaller than
 * greedy's, within 6% of peak-live in the mean of the twenty (measured 3.7%), and 450/8 within
 * 3% in the mean of its four (measured 1.6%; one seed alone ranges from 1.000 to 1.031). */
static void test_overlap_capacity_tight(void **state) {
  (void)state;
  static const size_t k_sets[][2] = {{300, 3}, {300, 4}, {400, 7}, {450, 8}, {500, 10}};
  enum { k_seeds = 4 };
  double sum = 0;
  for (size_t i = 0; i < sizeof k_sets / sizeof *k_sets; ++i) {
    tg_usage_record *r = calloc(k_sets[i][0], sizeof *r);
    uint64_t *vol = calloc(k_sets[i][0], sizeof *vol);
    assert_non_null(r);
    assert_non_null(vol);
    size_t n = gen_capacity_tight(k_sets[i][1], r, k_sets[i][0]);
    for (size_t j = 0; j < n; ++j) vol[j] = r[j].size.w;
    double set_sum = 0;
    for (uint64_t seed = 0; seed < k_seeds; ++seed) {
      greedy_case c;
      greedy_case_init(&c, r, vol, n);
      c.o.seed = seed;
      assert_true(tg__overlap_applies(&c.in));
      const uint64_t greedy = c.plan->total;
      tg__budget ob = tg__budget_make(100, 0);
      assert_int_equal(tg__search_overlap(&c.in, c.bound, &ob, &c.plan), TG_OK);
      tg_test_assert_valid(r, n, 1, c.plan, 0, NULL);
      assert_true(c.plan->total < greedy);
      set_sum += (double)c.plan->total / (double)c.bound;
      tg_plan_destroy(c.plan);
    }
    print_message("capacity-tight/%zu/%zu: %.4f of peak-live (mean of %d seeds)\n", k_sets[i][0],
                  k_sets[i][1], set_sum / k_seeds, k_seeds);
    if (k_sets[i][1] == 8) assert_true(set_sum / k_seeds < 1.03);
    sum += set_sum;
    free(vol);
    free(r);
  }
  print_message("mean %.4f\n", sum / (5 * k_seeds));
  assert_true(sum / (5 * k_seeds) < 1.06);
}

/* Where overlap minimisation runs: offsets, serial, few records live per task point. */
static void test_overlap_applies(void **state) {
  (void)state;
  enum { N = 200 };
  tg_usage_record r[N];
  uint64_t vol[N];
  memset(r, 0, sizeof r);
  for (size_t i = 0; i < N; ++i) {
    r[i].size = (tg_extent){64 + 64 * (i % 7), 1, 1};
    r[i].first_task = (uint32_t)(i / 4); /* about 8 live at a point */
    r[i].last_task = (uint32_t)(i / 4 + 1);
    vol[i] = r[i].size.w;
  }
  greedy_case c;
  greedy_case_init(&c, r, vol, N);
  assert_true(tg__overlap_applies(&c.in));
  c.o.mode = TG_MODE_OBJECTS;
  assert_false(tg__overlap_applies(&c.in));
  c.o.mode = TG_MODE_OFFSETS;
  const tg_share_relation rel = {same_parity, NULL, NULL, 0, NULL};
  c.o.relation = &rel;
  assert_false(tg__overlap_applies(&c.in));
  c.o.relation = NULL;
  for (size_t i = 0; i < N; ++i) r[i].last_task = (uint32_t)(i / 4 + 40); /* about 160 live */
  assert_false(tg__overlap_applies(&c.in));
  for (size_t i = 0; i < N; ++i) { /* about 8 live, over tasks 1000-1050 */
    r[i].first_task = (uint32_t)(1000 + i / 4);
    r[i].last_task = r[i].first_task + 1;
  }
  assert_true(tg__overlap_applies(&c.in));
  for (size_t i = 0; i < N; ++i) r[i].last_task = r[i].first_task + 40; /* about 160 live there */
  assert_false(tg__overlap_applies(&c.in));
  tg_plan_destroy(c.plan);
}

static tg_status overlap_40_units(const tg__plan_input *in, uint64_t bound, tg_plan **best) {
  tg__budget b = tg__budget_make(40, 0);
  return tg__search_overlap(in, bound, &b, best);
}

/* Overlap minimisation with each of its allocations failing in turn. */
static void test_overlap_allocation_failures(void **state) {
  (void)state;
  tg_usage_record r[200];
  uint64_t vol[200];
  size_t n = gen_capacity_tight(1, r, 200);
  for (size_t i = 0; i < n; ++i) vol[i] = r[i].size.w;
  improve_fault_walk(r, vol, n, overlap_40_units, 10);
}

/* Random inputs built to merge (perfect packings, sizes scaled, per-record and plan
 * alignments, zero sizes, records added at random): from the naive incumbent the unfolded
 * plan is valid and never worse; `best` with a little search never worse than greedy. */
static void test_reduce_valid_never_worse(void **state) {
  (void)state;
  static const uint64_t aligns[4] = {0, 4, 8, 16};
  tg_test_rng g = {5150};
  int reduced_count = 0, improved = 0, at_bound = 0;
  for (int round = 0; round < 400; ++round) {
    size_t pieces = 2 + (size_t)tg_test_rng_range(&g, 0, 150);
    size_t extra = (size_t)tg_test_rng_range(&g, 0, 3) == 0 ? (size_t)tg_test_rng_range(&g, 1, 8) : 0;
    size_t n = pieces + extra;
    tg_usage_record *r = calloc(n, sizeof *r);
    uint64_t *vol = calloc(n, sizeof *vol);
    assert_non_null(r);
    assert_non_null(vol);
    perfect_packing(&g, r, pieces);
    /* Thirds: no alignment; sizes x16 with alignments up to 16; sizes x4 with a few records
     * aligned to 16 (the records whose sizes are not multiples of 16 then take no part). */
    int kind = round % 3;
    uint32_t span = 0;
    for (size_t i = 0; i < pieces; ++i) {
      r[i].size.w *= kind == 1 ? 16 : kind == 2 ? 4 : 1;
      if (kind == 1 && tg_test_rng_range(&g, 0, 9) == 0)
        r[i].alignment = aligns[tg_test_rng_range(&g, 0, 3)];
      if (kind == 2 && tg_test_rng_range(&g, 0, 19) == 0) r[i].alignment = 16;
      if (tg_test_rng_range(&g, 0, 29) == 0) r[i].size.w = 0;
      if (r[i].last_task > span) span = r[i].last_task;
    }
    for (size_t i = pieces; i < n; ++i) {
      uint32_t f = (uint32_t)tg_test_rng_range(&g, 0, span);
      r[i] = rec1(tg_test_rng_range(&g, 1, 500), f, f + (uint32_t)tg_test_rng_range(&g, 0, 20));
    }
    for (size_t i = 0; i < n; ++i) vol[i] = r[i].size.w;
    tg_plan_options o;
    memset(&o, 0, sizeof o);
    o.alignment = kind == 1 && round % 2 ? 4 : 0;
    tg__plan_input in;
    uint64_t bound;
    tg_plan *p = naive_case(r, vol, n, &o, &in, &bound);
    uint64_t naive = p->total;
    int reduced = 0;
    tg__budget nb = {(round % 3 == 0 ? 8 : 1) * (uint64_t)TG__MILLI, 0, 0};
    assert_int_equal(tg__search_reduced(&in, bound, &nb, plan_blocks, &p, &reduced), TG_OK);
    tg_test_assert_valid(r, n, 1, p, o.alignment, NULL);
    assert_true(p->total <= naive);
    assert_true(p->total >= bound);
    reduced_count += reduced;
    improved += p->total < naive;
    at_bound += p->total == bound;
    tg_plan_destroy(p);
    if (round % 4 == 0) {
      tg_plan *greedy = plan_with(r, n, 1, TG_MODE_OFFSETS, 0, 0, NULL);
      tg_plan *best = plan_with(r, n, 1, TG_MODE_OFFSETS, 3, (uint64_t)round, NULL);
      assert_true(best->total <= one_pass_total(r, n, 1, TG_MODE_OFFSETS, NULL));
      (void)greedy;
      tg_plan_destroy(greedy);
      tg_plan_destroy(best);
    }
    free(vol);
    free(r);
  }
  print_message("blocks planned on %d of 400 inputs, smaller than naive on %d, at the bound on %d\n",
                reduced_count, improved, at_bound);
  assert_true(reduced_count > 150);
  assert_true(improved > 150);
  assert_true(at_bound > 100);
}

/* `best` on a perfect packing the blocks solve, with each allocation failing in turn: a valid
 * plan at the bound or a clean TG_ERROR_OUT_OF_HOST_MEMORY; nothing leaks. */
static void test_reduce_allocation_failures(void **state) {
  (void)state;
  enum { N = 150 };
  tg_usage_record r[N];
  tg_test_rng g = {7707};
  const uint64_t w = perfect_packing(&g, r, N);
  best_fault_walk(r, N, 126, w);
}

/* The bound the search aims at, computed on its own (peak-live without the positional
 * maximums in offsets mode), equals tg_bounds_compute's over random inputs of 1-3 dims, with
 * zero sizes, ties and huge task indices; and a live sum past 64 bits is an overflow. */
static void test_search_bound_matches_bounds(void **state) {
  (void)state;
  tg_test_rng g = {2026};
  for (int round = 0; round < 3000; ++round) {
    uint32_t dims = 1 + (uint32_t)(round % 3);
    tg_test_random_spec spec = {dims, 1 + tg_test_rng_range(&g, 0, 199),
                                round % 5 == 0 ? 4000000000u : 1 + (uint32_t)tg_test_rng_range(&g, 0, 300),
                                (uint32_t)tg_test_rng_range(&g, 0, 40), dims == 1 ? 4096 : 64,
                                dims == 1 && round % 4 == 0, round % 7 == 0};
    tg_usage_record r[200];
    uint64_t vol[200];
    tg_test_random_records(&g, &spec, r);
    for (size_t i = 0; i < spec.count; ++i)
      assert_int_equal(tg_extent_volume(r[i].size, &vol[i]), TG_OK);
    tg_bounds b;
    assert_int_equal(tg_bounds_compute(r, spec.count, dims, NULL, &b), TG_OK);
    for (int mode = 0; mode < 2; ++mode) {
      tg_plan_options o;
      memset(&o, 0, sizeof o);
      o.mode = mode ? TG_MODE_OBJECTS : TG_MODE_OFFSETS;
      tg__plan_input in = {r, spec.count, dims, &o, tg_allocator_default(), vol, 0, NULL, NULL};
      uint64_t bound = 1;
      assert_int_equal(tg__search_bound(&in, &bound), TG_OK);
      assert_int_equal(bound, mode ? b.positional_max : b.peak_live);
    }
  }
  const tg_usage_record big[] = {{{UINT64_MAX / 2 + 1, 1, 1}, 0, 3, 0},
                                 {{UINT64_MAX / 2 + 1, 1, 1}, 3, 5, 0}};
  uint64_t vol[2] = {UINT64_MAX / 2 + 1, UINT64_MAX / 2 + 1}, bound = 7;
  tg_plan_options o;
  memset(&o, 0, sizeof o);
  o.mode = TG_MODE_OFFSETS;
  tg__plan_input in = {big, 2, 1, &o, tg_allocator_default(), vol, 0, NULL, NULL};
  assert_int_equal(tg__search_bound(&in, &bound), TG_ERROR_OVERFLOW);
  assert_int_equal(bound, 0);
  in.count = 0;
  bound = 7;
  assert_int_equal(tg__search_bound(&in, &bound), TG_OK);
  assert_int_equal(bound, 0);
  tg_bounds b;
  assert_int_equal(tg_bounds_compute(big, 2, 1, NULL, &b), TG_ERROR_OVERFLOW);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_search_never_worse_and_valid),
      cmocka_unit_test(test_search_bound_matches_bounds),
      cmocka_unit_test(test_search_honours_relation),
      cmocka_unit_test(test_search_deterministic),
      cmocka_unit_test(test_search_reaches_bound_small_perfect),
      cmocka_unit_test(test_exact_matches_brute_force),
      cmocka_unit_test(test_skyline_complete),
      cmocka_unit_test(test_skyline_perfect_packing),
      cmocka_unit_test(test_search_perfect_packing),
      cmocka_unit_test(test_best_capacity_tight),
      cmocka_unit_test(test_overlap_valid_never_worse),
      cmocka_unit_test(test_overlap_capacity_tight),
      cmocka_unit_test(test_overlap_applies),
      cmocka_unit_test(test_overlap_allocation_failures),
      cmocka_unit_test(test_skyline_deterministic),
      cmocka_unit_test(test_exact_time_limit),
      cmocka_unit_test(test_lns_valid_never_worse),
      cmocka_unit_test(test_lns_chain_reaches_bound),
      cmocka_unit_test(test_exact_serial_beyond_cap),
      cmocka_unit_test(test_skyline_fits_above),
      cmocka_unit_test(test_lns_stall_hands_over),
      cmocka_unit_test(test_lns_allocation_failures),
      cmocka_unit_test(test_gap_index_remove),
      cmocka_unit_test(test_skyline_dive_valid),
      cmocka_unit_test(test_skyline_dive_wide_dag),
      cmocka_unit_test(test_skyline_dive_cover_cap),
      cmocka_unit_test(test_skyline_dive_list_cap),
      cmocka_unit_test(test_skyline_dive_allocation_failures),
      cmocka_unit_test(test_split_parts_reach_bound),
      cmocka_unit_test(test_split_valid_never_worse),
      cmocka_unit_test(test_split_allocation_failures),
      cmocka_unit_test(test_reduce_known_answer),
      cmocka_unit_test(test_reduce_perfect_packings),
      cmocka_unit_test(test_reduce_valid_never_worse),
      cmocka_unit_test(test_reduce_allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
