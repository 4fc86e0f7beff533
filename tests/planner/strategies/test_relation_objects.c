/* Objects-mode strategies under transitive may-share relations (tg_share_relation.transitive):
 * on thousands of random record sets, with random relations that really are transitive along
 * time (colour classes, a random happens-before order over tasks, both), every strategy gives
 * plans the validator accepts, and the strategies whose decisions must not depend on the flag
 * (equality, greedy-in-order, greedy-by-breadth, min-cost-flow, and greedy-by-size where it
 * runs TFLite's algorithm) give the same plan with transitive = 1 as with 0. Also: the
 * relations are checked to be transitive, the fast greedy-by-size path with a relation on
 * large sets, and allocation failures with a transitive relation. */
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const tg_strategy k_strategies[] = {
    TG_STRATEGY_NAIVE,           TG_STRATEGY_EQUALITY,       TG_STRATEGY_GREEDY_IN_ORDER,
    TG_STRATEGY_GREEDY_BY_BREADTH, TG_STRATEGY_GREEDY_BY_SIZE, TG_STRATEGY_MIN_COST_FLOW,
    TG_STRATEGY_BEST,
};

/* Above this many 1D records greedy-by-size leaves TFLite's algorithm for its fast variant,
 * which uses transitivity (planner/objects_greedy_by_size.c, FAITHFUL_MAX). */
#define BY_SIZE_FAITHFUL_MAX 512

/* ---- a random relation, transitive along time -------------------------------------------- */

/* may_share(a, b) for a before b in time (a.last < b.first):
 *   colour[a] == colour[b]            (when colours are used), and
 *   task a.last reaches task b.first  (when the order is used)
 * where "reaches" is the reflexive-transitive closure of random forward edges between tasks
 * plus an edge first -> last for every record. For a, b, c disjoint and in that order, a.last
 * reaches b.first, which reaches b.last (its own edge), which reaches c.first: so the relation
 * is transitive along time, as the flag promises. Colours are an equivalence, and an
 * intersection of relations transitive along time is one too. */
typedef struct relation {
  const tg_usage_record *records;
  size_t count;
  uint32_t *colour;  /* NULL: colours not used */
  uint64_t *reach;   /* NULL: order not used; else tasks rows of `words` words */
  size_t tasks, words;
  uint64_t *win_hi;  /* per record: the last task a.last does not reach (window's end) */
  uint64_t calls;
} relation;

static int reaches(const relation *rl, uint32_t from, uint32_t to) {
  return (int)((rl->reach[(size_t)from * rl->words + to / 64] >> (to % 64)) & 1u);
}

static int may_share_rel(void *user, size_t a, size_t b) {
  relation *rl = user;
  rl->calls++;
  if (a >= rl->count || b >= rl->count) fail_msg("may_share(%zu, %zu): out of range", a, b);
  const tg_usage_record *ra = &rl->records[a], *rb = &rl->records[b];
  if (ra->first_task <= rb->last_task && rb->first_task <= ra->last_task)
    fail_msg("may_share(%zu, %zu) called for intersecting intervals", a, b);
  if (rb->last_task < ra->first_task) {
    const tg_usage_record *t = ra;
    ra = rb;
    rb = t;
  }
  if (rl->colour != NULL && rl->colour[a] != rl->colour[b]) return 0;
  return rl->reach == NULL || reaches(rl, ra->last_task, rb->first_task);
}

/* Windows for the order-only relation: [first, the last task that the record's last task
 * does not reach]. If a's window ends before b's starts, b.first is reached from a.last. */
static void window_rel(void *user, size_t r, uint64_t *lo, uint64_t *hi) {
  const relation *rl = user;
  *lo = rl->records[r].first_task;
  *hi = rl->win_hi[r];
}

/* kind: 1 colours, 2 order, 3 both. */
static void relation_make(relation *rl, tg_test_rng *rng, const tg_usage_record *r, size_t n,
                          int kind) {
  memset(rl, 0, sizeof *rl);
  rl->records = r;
  rl->count = n;
  if (kind & 1) {
    const uint64_t colours = tg_test_rng_range(rng, 1, 4);
    rl->colour = malloc((n ? n : 1) * sizeof *rl->colour);
    assert_non_null(rl->colour);
    for (size_t i = 0; i < n; ++i) rl->colour[i] = (uint32_t)tg_test_rng_range(rng, 1, colours);
  }
  if (kind & 2) {
    uint32_t max_task = 0;
    for (size_t i = 0; i < n; ++i)
      if (r[i].last_task > max_task) max_task = r[i].last_task;
    rl->tasks = (size_t)max_task + 1;
    rl->words = (rl->tasks + 63) / 64;
    rl->reach = calloc(rl->tasks * rl->words, sizeof *rl->reach);
    unsigned char *edge = calloc(rl->tasks * rl->tasks, 1);
    assert_non_null(rl->reach);
    assert_non_null(edge);
    /* Sparse random forward edges, mostly short: many tasks stay unordered (parallel). */
    const unsigned percent = (unsigned)tg_test_rng_range(rng, 5, 60);
    for (size_t u = 0; u + 1 < rl->tasks; ++u)
      for (size_t k = 0; k < 3; ++k) {
        if (tg_test_rng_range(rng, 1, 100) > percent) continue;
        size_t span = (size_t)tg_test_rng_range(rng, 1, k == 2 ? rl->tasks : 4);
        size_t v = u + span < rl->tasks ? u + span : rl->tasks - 1;
        edge[u * rl->tasks + v] = 1;
      }
    for (size_t i = 0; i < n; ++i) edge[(size_t)r[i].first_task * rl->tasks + r[i].last_task] = 1;
    for (size_t u = rl->tasks; u-- > 0;) {
      uint64_t *row = rl->reach + u * rl->words;
      row[u / 64] |= (uint64_t)1 << (u % 64);
      for (size_t v = u + 1; v < rl->tasks; ++v)
        if (edge[u * rl->tasks + v])
          for (size_t w = 0; w < rl->words; ++w) row[w] |= rl->reach[v * rl->words + w];
    }
    free(edge);
    rl->win_hi = malloc((n ? n : 1) * sizeof *rl->win_hi);
    assert_non_null(rl->win_hi);
    for (size_t i = 0; i < n; ++i) {
      uint64_t hi = r[i].last_task;
      for (size_t t = rl->tasks; t-- > r[i].last_task;)
        if (!reaches(rl, r[i].last_task, (uint32_t)t)) {
          hi = t;
          break;
        }
      rl->win_hi[i] = hi;
    }
  }
}

static void relation_free(relation *rl) {
  free(rl->colour);
  free(rl->reach);
  free(rl->win_hi);
  memset(rl, 0, sizeof *rl);
}

static tg_share_relation share_of(relation *rl, int transitive) {
  tg_share_relation s;
  memset(&s, 0, sizeof s);
  s.may_share = may_share_rel;
  s.user = rl;
  /* Windows only where they hold: colours refuse at any distance. */
  s.window = rl->colour == NULL && rl->reach != NULL ? window_rel : NULL;
  s.transitive = transitive;
  return s;
}

/* The relation really is transitive along time, and symmetric (checked on all triples of a
 * small set): if this failed, equal plans below would prove nothing. */
static void check_transitive(const tg_usage_record *r, size_t n, relation *rl) {
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b < n; ++b) {
      if (r[a].last_task >= r[b].first_task) continue;
      int ab = may_share_rel(rl, a, b);
      if (ab != may_share_rel(rl, b, a)) fail_msg("relation not symmetric on %zu, %zu", a, b);
      if (!ab) continue;
      for (size_t c = 0; c < n; ++c)
        if (r[b].last_task < r[c].first_task && may_share_rel(rl, b, c) &&
            !may_share_rel(rl, a, c))
          fail_msg("relation not transitive on %zu, %zu, %zu", a, b, c);
    }
}

/* ---- helpers ----------------------------------------------------------------------------- */

/* Plan and validate. `calls` (may be NULL) receives the relation calls the planning made (the
 * validator's not counted). */
static tg_plan *plan_ok(const tg_usage_record *r, size_t n, uint32_t dims, tg_strategy strategy,
                        const tg_share_relation *rel, uint64_t *calls) {
  tg_plan_options o = {.mode = TG_MODE_OBJECTS, .strategy = strategy, .relation = rel};
  o.time_limit_ms = TG_TIME_LIMIT_NONE; /* `best` here: the smallest strategy, no clock */
  tg_plan *p = NULL;
  relation *rl = rel != NULL && rel->may_share == may_share_rel ? rel->user : NULL;
  const uint64_t before = rl != NULL ? rl->calls : 0;
  tg_status st = tg_plan_compute(r, n, dims, &o, NULL, &p);
  if (calls != NULL) *calls += rl != NULL ? rl->calls - before : 0;
  if (st != TG_OK)
    fail_msg("%s %uD, %zu records: %s", tg_strategy_name(strategy), (unsigned)dims, n,
             tg_status_name(st));
  assert_non_null(p);
  tg_test_assert_valid(r, n, dims, p, 0, rel);
  return p;
}

/* Must the plan be the same with the flag set as without? */
static int must_match(tg_strategy s, size_t n, uint32_t dims) {
  if (s == TG_STRATEGY_GREEDY_BY_SIZE || s == TG_STRATEGY_BEST)
    return dims > 1 || n <= BY_SIZE_FAITHFUL_MAX;
  return 1;
}

static void random_spec(tg_test_rng *rng, size_t n, uint32_t dims, tg_test_random_spec *spec) {
  memset(spec, 0, sizeof *spec);
  spec->dims = dims;
  spec->count = n;
  spec->max_task = (uint32_t)tg_test_rng_range(rng, 1, 2 * n + 4);
  spec->max_length = (uint32_t)tg_test_rng_range(rng, 0, 8);
  spec->max_size = dims == 1 ? 64 : 6;
  spec->few_distinct_sizes = (int)tg_test_rng_range(rng, 0, 1);
}

/* ---- tests ------------------------------------------------------------------------------- */

/* The relations built here are transitive (so the comparisons below mean something). */
static void relations_are_transitive(void **state) {
  (void)state;
  tg_test_rng rng = {11};
  tg_usage_record r[40];
  for (int round = 0; round < 200; ++round) {
    tg_test_random_spec spec;
    const size_t n = (size_t)tg_test_rng_range(&rng, 2, COUNT(r));
    random_spec(&rng, n, 1, &spec);
    tg_test_random_records(&rng, &spec, r);
    relation rl;
    relation_make(&rl, &rng, r, n, 1 + round % 3);
    check_transitive(r, n, &rl);
    relation_free(&rl);
  }
}

/* Thousands of random sets: valid plans, and the same plans with and without the flag; and a
 * relation allowing everything gives the serial plan either way (which pins the order in
 * which strategies test candidates: the first one allowed must be the serial choice). */
static void transitive_matches_full_scan(void **state) {
  (void)state;
  tg_test_rng rng = {2024};
  size_t sets = 0, differing_by_size = 0;
  uint64_t calls[2] = {0, 0};
  const int rounds = (int)tg_test_scale(600, 800, 2400);
  for (int round = 0; round < rounds; ++round) {
    const uint32_t dims = round % 4 == 3 ? (uint32_t)tg_test_rng_range(&rng, 2, 3) : 1;
    const size_t n = round % 50 == 0 ? (size_t)tg_test_rng_range(&rng, 0, 3)
                                     : (size_t)tg_test_rng_range(&rng, 4, round % 7 ? 60 : 220);
    tg_test_random_spec spec;
    random_spec(&rng, n, dims, &spec);
    tg_usage_record *r = malloc((n ? n : 1) * sizeof *r);
    assert_non_null(r);
    tg_test_random_records(&rng, &spec, r);
    relation rl;
    relation_make(&rl, &rng, r, n, 1 + round % 3);
    tg_share_relation full = share_of(&rl, 0), fast = share_of(&rl, 1);
    for (size_t s = 0; s < COUNT(k_strategies); ++s) {
      /* Calls counted for the strategies that test records against objects' members. */
      const int counted = k_strategies[s] == TG_STRATEGY_EQUALITY ||
                          k_strategies[s] == TG_STRATEGY_GREEDY_IN_ORDER ||
                          k_strategies[s] == TG_STRATEGY_GREEDY_BY_BREADTH;
      tg_plan *a = plan_ok(r, n, dims, k_strategies[s], &full, counted ? &calls[0] : NULL);
      tg_plan *b = plan_ok(r, n, dims, k_strategies[s], &fast, counted ? &calls[1] : NULL);
      const int same = a->object_count == b->object_count && a->total == b->total &&
                       (n == 0 || memcmp(a->object_of, b->object_of, n * sizeof *a->object_of) == 0);
      if (!same && must_match(k_strategies[s], n, dims))
        fail_msg("round %d: %s %uD, %zu records: the plan changes with transitive = 1 "
                 "(%llu vs %llu)",
                 round, tg_strategy_name(k_strategies[s]), (unsigned)dims, n,
                 (unsigned long long)a->total, (unsigned long long)b->total);
      if (!same) ++differing_by_size;
      tg_plan_destroy(a);
      tg_plan_destroy(b);
      if (round % 3 != 0) continue;
      tg_plan *serial = plan_ok(r, n, dims, k_strategies[s], NULL, NULL);
      for (int t = 0; t < 2; ++t) {
        tg_share_relation always = {tg_test_share_always, NULL, NULL, t, NULL};
        tg_plan *c = plan_ok(r, n, dims, k_strategies[s], &always, NULL);
        if (c->total != serial->total ||
            (n > 0 && memcmp(c->object_of, serial->object_of, n * sizeof *c->object_of) != 0))
          fail_msg("round %d: %s %uD, %zu records: a relation allowing everything "
                   "(transitive = %d) changes the plan",
                   round, tg_strategy_name(k_strategies[s]), (unsigned)dims, n, t);
        tg_plan_destroy(c);
      }
      tg_plan_destroy(serial);
    }
    ++sets;
    relation_free(&rl);
    free(r);
  }
  /* The flag must save relation calls overall (members are tested two at a time). */
  print_message("%zu record sets; relation calls of equality, greedy-in-order and "
                "greedy-by-breadth: %llu full scan, %llu transitive\n", sets,
                (unsigned long long)calls[0], (unsigned long long)calls[1]);
  assert_true(calls[1] < calls[0]);
  assert_int_equal(differing_by_size, 0); /* no set here is large enough for the fast path */
}

/* Large 1D sets take greedy-by-size's fast variant with the relation: valid plans, totals close
 * to TFLite's algorithm (which the flag-less relation still gets), and the serial fast plan
 * when the relation allows everything. */

static void by_size_fast_path(void **state) {
  (void)state;
  tg_test_rng rng = {77};
  uint64_t total_full = 0, total_fast = 0;
  for (int round = 0; round < 24; ++round) {
    const size_t n = (size_t)tg_test_rng_range(&rng, BY_SIZE_FAITHFUL_MAX + 1, 1500);
    tg_test_random_spec spec;
    random_spec(&rng, n, 1, &spec);
    spec.max_task = (uint32_t)(n + tg_test_rng_range(&rng, 0, n));
    spec.max_length = (uint32_t)tg_test_rng_range(&rng, 2, 30);
    tg_usage_record *r = malloc(n * sizeof *r);
    assert_non_null(r);
    tg_test_random_records(&rng, &spec, r);
    relation rl;
    relation_make(&rl, &rng, r, n, 1 + round % 3);
    tg_share_relation full = share_of(&rl, 0), fast = share_of(&rl, 1);
    tg_plan *a = plan_ok(r, n, 1, TG_STRATEGY_GREEDY_BY_SIZE, &full, NULL);
    tg_plan *b = plan_ok(r, n, 1, TG_STRATEGY_GREEDY_BY_SIZE, &fast, NULL);
    total_full += a->total;
    total_fast += b->total;
    if (getenv("TG_TEST_VERBOSE"))
      print_message("n %zu kind %d: %llu %llu objects %zu %zu\n", n, 1 + round % 3,
                    (unsigned long long)a->total, (unsigned long long)b->total, a->object_count,
                    b->object_count);
    tg_plan_destroy(a);
    tg_plan_destroy(b);
    /* best keeps the smallest of the strategies: never above greedy-by-size's plan. */
    tg_plan *c = plan_ok(r, n, 1, TG_STRATEGY_BEST, &fast, NULL);
    tg_plan *d = plan_ok(r, n, 1, TG_STRATEGY_GREEDY_BY_SIZE, &fast, NULL);
    assert_true(c->total <= d->total);
    tg_plan_destroy(c);
    tg_plan_destroy(d);
    /* Allowing everything, transitively: the serial plan. */
    tg_share_relation always = {tg_test_share_always, NULL, NULL, 1, NULL};
    tg_plan *e = plan_ok(r, n, 1, TG_STRATEGY_GREEDY_BY_SIZE, NULL, NULL);
    tg_plan *f = plan_ok(r, n, 1, TG_STRATEGY_GREEDY_BY_SIZE, &always, NULL);
    assert_int_equal(e->total, f->total);
    assert_memory_equal(e->object_of, f->object_of, n * sizeof *e->object_of);
    tg_plan_destroy(e);
    tg_plan_destroy(f);
    relation_free(&rl);
    free(r);
  }
  print_message("greedy-by-size totals over the large sets: %llu TFLite's algorithm, %llu fast\n",
                (unsigned long long)total_full, (unsigned long long)total_fast);
  /* Within 10% of TFLite's algorithm in sum (measured: about 1% either way). */
  assert_true(total_fast <= total_full + total_full / 10);
}

/* Allocation failures with a transitive relation (members kept in sorted arrays, windows, the
 * fast greedy-by-size path): every failure is reported and nothing leaks. */
static void allocation_failures(void **state) {
  (void)state;
  tg_test_rng rng = {5};
  static tg_usage_record r[600];
  for (uint32_t dims = 1; dims <= 2; ++dims)
    for (int kind = 1; kind <= 3; ++kind)
      for (size_t s = 0; s < COUNT(k_strategies); ++s) {
        const tg_strategy strategy = k_strategies[s];
        const int large = dims == 1 && kind == 2 &&
                          (strategy == TG_STRATEGY_GREEDY_BY_SIZE || strategy == TG_STRATEGY_BEST);
        tg_test_random_spec spec;
        random_spec(&rng, large ? 600 : 80, dims, &spec);
        spec.max_length = 20;
        tg_test_random_records(&rng, &spec, r);
        relation rl;
        relation_make(&rl, &rng, r, spec.count, kind);
        tg_share_relation rel = share_of(&rl, 1);
        tg_plan_options o = {.mode = TG_MODE_OBJECTS, .strategy = strategy, .relation = &rel};
        o.time_limit_ms = TG_TIME_LIMIT_NONE; /* the same plan however fast the run */
        tg_test_plan_fault_walk(r, spec.count, dims, &o);
        relation_free(&rl);
      }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(relations_are_transitive),
      cmocka_unit_test(transitive_matches_full_scan),
      cmocka_unit_test(by_size_fast_path),
      cmocka_unit_test(allocation_failures),
  };
  const char *filter = getenv("TG_TEST_FILTER");
  if (filter != NULL) cmocka_set_test_filter(filter);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
