/* In-place pairs under every execution a plan is made for: serial, serial with the waits (a
 * serial plan run out of order), parallel-safe and branch-local, in objects and offsets modes
 * over buffer and image storages. Every plan goes through the validator under its policy's
 * relation, then through an independent oracle (support/tg_in_place_oracle.h) that derives the
 * order from the graph alone and finds any execution in which a record is overwritten while an
 * op may still read it. */
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/tg_in_place_oracle.h"
#include "support/tg_models.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/schedule.h"

enum { EXEC_SERIAL, EXEC_SERIAL_WAITS, EXEC_PARALLEL_SAFE, EXEC_BRANCH_LOCAL, EXEC_COUNT };
static const char *const k_exec_names[EXEC_COUNT] = {"serial", "serial with waits", "parallel-safe",
                                                     "branch-local"};

static const tg_storage k_storages[] = {TG_STORAGE_BUFFER, TG_STORAGE_IMAGE_BUFFER, TG_STORAGE_TEXTURE_2D,
                                        TG_STORAGE_TEXTURE_3D};
#define STORAGES (sizeof k_storages / sizeof *k_storages)

typedef struct tally {
  size_t plans[EXEC_COUNT];
  size_t pairs[EXEC_COUNT]; /* pairs the judged plans use */
  size_t bad[EXEC_COUNT];   /* plans the oracle convicts */
  size_t violations;
  char first[600];
} tally;

/* What one graph derives, independently of the storage. */
typedef struct graph_case {
  const tg_graph *graph;
  tg_lifetimes *lifetimes;
  tg_schedule *schedule;
  tg_oracle_order serial, dataflow;
} graph_case;

static graph_case case_open(const tg_graph *g) {
  graph_case c = {g, NULL, NULL, {0, 0, NULL}, {0, 0, NULL}};
  tg_error_info err = {{0}};
  if (tg_graph_compute_lifetimes(g, NULL, NULL, &c.lifetimes, &err) != TG_OK) fail_msg("lifetimes: %s", err.message);
  if (tg_schedule_create(g, NULL, NULL, &c.schedule, &err) != TG_OK) fail_msg("schedule: %s", err.message);
  c.serial = tg_oracle_order_serial(g->op_count);
  c.dataflow = tg_oracle_order_dataflow(g);
  return c;
}

static void case_close(graph_case *c) {
  tg_oracle_order_free(&c->serial);
  tg_oracle_order_free(&c->dataflow);
  tg_schedule_destroy(c->schedule);
  tg_lifetimes_destroy(c->lifetimes);
}

static void judge(tally *t, int exec, const graph_case *c, const tg_model_records *mr, const tg_plan *plan,
                  const tg_oracle_order *order, const char *label) {
  const tg_record_set *set = mr->records;
  char why[400];
  t->plans[exec]++;
  t->pairs[exec] += plan->in_place_count;
  if (!tg_oracle_find_corruption(c->graph, set->records, mr->tensor_of, set->count, plan, order, why, sizeof why))
    return;
  t->bad[exec]++;
  if (t->violations++ == 0)
    snprintf(t->first, sizeof t->first, "%s, %s, %s %s: %s", label, k_exec_names[exec],
             tg_storage_name(mr->storage), tg_mode_name(plan->mode), why);
}

/* The order a runtime gets from tg_wait_lists (with or without the reuse edges). */
static tg_oracle_order waits_order(const graph_case *c, const tg_model_records *mr, const tg_plan *plan,
                                   int with_reuse, size_t *reuse_edges) {
  const tg_record_set *set = mr->records;
  tg_waits *w = NULL;
  tg_wait_lists *l = NULL;
  tg_error_info err = {{0}};
  if (tg_schedule_compute_waits(c->schedule, set->records, mr->tensor_of, set->count, plan, NULL, &w, &err) != TG_OK)
    fail_msg("waits: %s", err.message);
  assert_int_equal(tg_wait_lists_create(w, with_reuse, NULL, &l), TG_OK);
  tg_oracle_order o = tg_oracle_order_waits(l->op_count, l->counts, l->lists);
  *reuse_edges = w->reuse_edge_count;
  tg_wait_lists_destroy(l);
  tg_waits_destroy(w);
  return o;
}

/* Plan the graph's records in `storage` with their in-place candidates under every policy, in
 * every mode and with each strategy given; validate each plan under its relation and judge it
 * in the executions it is made for. */
static void judge_storage(const graph_case *c, tg_storage storage, const tg_strategy *strategies, size_t nstrat,
                          const char *label, tally *t) {
  tg_error_info err = {{0}};
  tg_model_records *mr = NULL;
  if (tg_model_records_create(c->graph, c->lifetimes, storage, TG_PRECISION_FP32, NULL, NULL, &mr, &err) != TG_OK)
    fail_msg("records: %s", err.message);
  const tg_record_set *set = mr->records;
  tg_in_place_pair *pairs = NULL;
  size_t np = 0;
  assert_int_equal(tg_model_in_place_pairs(c->graph, c->lifetimes, mr, 1, NULL, &pairs, &np), TG_OK);
  for (int pol = 0; pol < TG_POLICY_COUNT; ++pol) {
    tg_policy_relation *rel = NULL;
    assert_int_equal(tg_policy_relation_create(c->schedule, (tg_policy)pol, mr->tensor_of, set->count, NULL, &rel),
                     TG_OK);
    const tg_share_relation *r = tg_policy_relation_get(rel);
    for (int mode = 0; mode < 2; ++mode) {
      if (mode == TG_MODE_OFFSETS && set->dims != 1) continue;
      for (size_t si = 0; si < nstrat; ++si) {
        if (!tg_strategy_applies(strategies[si], (tg_mode)mode, set->dims)) continue;
        tg_plan_options o = {0};
        o.mode = (tg_mode)mode;
        o.strategy = strategies[si];
        o.time_limit_ms = strategies[si] == TG_STRATEGY_BEST ? TG_TIME_LIMIT_NONE : 0;
        o.relation = r;
        o.in_place = pairs;
        o.in_place_count = np;
        tg_plan *plan = NULL;
        assert_int_equal(tg_plan_compute(set->records, set->count, set->dims, &o, NULL, &plan), TG_OK);
        tg_test_assert_valid(set->records, set->count, set->dims, plan, 0, r);
        size_t reuse = 0;
        if (pol == TG_POLICY_SERIAL) {
          judge(t, EXEC_SERIAL, c, mr, plan, &c->serial, label);
          tg_oracle_order w = waits_order(c, mr, plan, 1, &reuse);
          judge(t, EXEC_SERIAL_WAITS, c, mr, plan, &w, label);
          tg_oracle_order_free(&w);
        } else {
          /* A parallel plan runs on the graph's edges alone (tg_schedule_compute_waits: it
           * needs no reuse edge), in any order they allow. */
          tg_oracle_order w = waits_order(c, mr, plan, 0, &reuse);
          tg_oracle_order_free(&w);
          if (reuse != 0 && t->violations++ == 0)
            snprintf(t->first, sizeof t->first, "%s, %s %s %s: a %s plan needs %zu reuse edges", label,
                     tg_storage_name(storage), tg_mode_name((tg_mode)mode), tg_strategy_name(strategies[si]),
                     tg_policy_name((tg_policy)pol), reuse);
          judge(t, pol == TG_POLICY_PARALLEL_SAFE ? EXEC_PARALLEL_SAFE : EXEC_BRANCH_LOCAL, c, mr, plan, &c->dataflow,
                label);
        }
        tg_plan_destroy(plan);
      }
    }
    tg_policy_relation_destroy(rel);
  }
  free(pairs);
  tg_model_records_destroy(mr);
}

static const tg_strategy k_strategies[] = {TG_STRATEGY_BEST, TG_STRATEGY_GREEDY_BY_SIZE, TG_STRATEGY_NAIVE};
#define STRATEGIES (sizeof k_strategies / sizeof *k_strategies)

static void print_tally(const char *what, size_t graphs, const tally *t) {
  size_t plans = 0;
  for (int e = 0; e < EXEC_COUNT; ++e) plans += t->plans[e];
  print_message("%s: %zu graphs x %d executions x 2 modes x %zu storages x %zu strategies: %zu plans judged, "
                "%zu violations\n",
                what, graphs, EXEC_COUNT, STORAGES, STRATEGIES, plans, t->violations);
  for (int e = 0; e < EXEC_COUNT; ++e)
    print_message("  %-18s %6zu plans, %6zu pairs used, %zu corrupting\n", k_exec_names[e], t->plans[e], t->pairs[e],
                  t->bad[e]);
}

/* One plan of the records of `g` (buffer) under `policy`, with the candidates. */
static tg_plan *plan_race(const graph_case *c, tg_policy policy, tg_mode mode, tg_model_records **mr_out) {
  tg_error_info err = {{0}};
  tg_model_records *mr = NULL;
  assert_int_equal(tg_model_records_create(c->graph, c->lifetimes, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL, NULL,
                                           &mr, &err),
                   TG_OK);
  tg_in_place_pair *pairs = NULL;
  size_t np = 0;
  assert_int_equal(tg_model_in_place_pairs(c->graph, c->lifetimes, mr, 1, NULL, &pairs, &np), TG_OK);
  tg_plan *p = tg_test_plan_in_place(c->schedule, policy, mode, mr->records, mr->tensor_of, pairs, np);
  free(pairs);
  *mr_out = mr;
  return p;
}

static int uses_pair_at(const tg_plan *p, uint32_t op) {
  for (size_t i = 0; i < p->in_place_count; ++i)
    if (p->in_place[i].op == op) return 1;
  return 0;
}

/* The two race graphs: serial plans use every pair, parallel ones leave out the pair whose
 * input another op may still read, and the oracle finds nothing in any execution. */
static void race_graphs(void **state) {
  (void)state;
  for (int chained = 0; chained < 2; ++chained) {
    tg_graph *g = tg_oracle_race_graph(chained);
    graph_case c = case_open(g);
    const uint32_t racy_op = chained ? 3 : 2;
    for (int mode = 0; mode < 2; ++mode) {
      for (int pol = 0; pol < TG_POLICY_COUNT; ++pol) {
        tg_model_records *mr = NULL;
        tg_plan *p = plan_race(&c, (tg_policy)pol, (tg_mode)mode, &mr);
        if (pol == TG_POLICY_SERIAL) {
          assert_true(uses_pair_at(p, racy_op));
          assert_int_equal(p->total, 2048);
        } else if (uses_pair_at(p, racy_op)) {
          fail_msg("%s graph, %s %s: the plan writes over a tensor at op %u while op %u may still read it",
                   chained ? "chained" : "race", tg_policy_name((tg_policy)pol), tg_mode_name((tg_mode)mode), racy_op,
                   racy_op - 1);
        } else {
          assert_int_equal(p->total, 3072);
        }
        tg_plan_destroy(p);
        tg_model_records_destroy(mr);
      }
    }
    tally t;
    memset(&t, 0, sizeof t);
    for (size_t s = 0; s < STORAGES; ++s)
      judge_storage(&c, k_storages[s], k_strategies, STRATEGIES, chained ? "chained race graph" : "race graph", &t);
    print_tally(chained ? "chained race graph" : "race graph", 1, &t);
    if (t.violations) fail_msg("%zu violations; the first: %s", t.violations, t.first);
    case_close(&c);
    tg_graph_destroy(g);
  }
}

/* The validator checks every declared pair against the relation it is given: a hand-made plan
 * that writes c over a at op 2 is fine in serial order and refused under both parallel
 * policies, with the op that may still read a named. So is a chain whose second pair races. */
static void validator_checks_pairs_against_the_relation(void **state) {
  (void)state;
  for (int chained = 0; chained < 2; ++chained) {
    tg_graph *g = tg_oracle_race_graph(chained);
    graph_case c = case_open(g);
    tg_error_info err = {{0}};
    tg_model_records *mr = NULL;
    assert_int_equal(tg_model_records_create(g, c.lifetimes, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL, NULL, &mr,
                                             &err),
                     TG_OK);
    const tg_record_set *set = mr->records;
    /* Records follow their producers: race a, b, c; chained a, c, e, d. */
    const size_t n = set->count;
    const tg_in_place_pair race_pair = {2, 0, 2, 0};
    const tg_in_place_pair chain_pairs[2] = {{1, 0, 1, 0}, {3, 1, 3, 0}};
    for (int mode = 0; mode < 2; ++mode) {
      tg_plan *p = NULL;
      assert_int_equal(tg_plan_create((tg_mode)mode, 1, n, mode == TG_MODE_OBJECTS ? 2 : 0, NULL, &p), TG_OK);
      /* The pairs' records in one place (object 0 / offset 0); the other record beside. */
      const size_t other = chained ? 2 : 1;
      for (size_t r = 0; r < n; ++r) {
        if (mode == TG_MODE_OBJECTS) p->object_of[r] = r == other ? 1 : 0;
        else p->offset_of[r] = r == other ? 1024 : 0;
      }
      if (mode == TG_MODE_OBJECTS) {
        p->object_sizes[0] = p->object_sizes[1] = (tg_extent){1024, 1, 1};
      } else {
        p->object_count = 1;
      }
      p->total = 2048;
      if (chained) assert_int_equal(tg_plan_set_in_place(p, chain_pairs, 2), TG_OK);
      else assert_int_equal(tg_plan_set_in_place(p, &race_pair, 1), TG_OK);
      tg_test_assert_valid(set->records, n, 1, p, 0, NULL);
      for (int pol = 1; pol < TG_POLICY_COUNT; ++pol) {
        tg_policy_relation *rel = NULL;
        assert_int_equal(tg_policy_relation_create(c.schedule, (tg_policy)pol, mr->tensor_of, n, NULL, &rel), TG_OK);
        memset(&err, 0, sizeof err);
        const tg_status st = tg_plan_validate(set->records, n, 1, p, 0, tg_policy_relation_get(rel), NULL, &err);
        print_message("%s graph, %s, %s: %s\n", chained ? "chained" : "race", tg_mode_name((tg_mode)mode),
                      tg_policy_name((tg_policy)pol), st == TG_OK ? "accepted" : err.message);
        if (st != TG_ERROR_INVALID_PLAN)
          fail_msg("%s graph, %s, %s: the validator accepts a pair whose input another op may still read",
                   chained ? "chained" : "race", tg_mode_name((tg_mode)mode), tg_policy_name((tg_policy)pol));
        /* Both ops named: the pair's and the other reader. */
        char want_pair[32], want_other[32];
        snprintf(want_pair, sizeof want_pair, "op %d", chained ? 3 : 2);
        snprintf(want_other, sizeof want_other, "op %d", chained ? 2 : 1);
        if (strstr(err.message, want_pair) == NULL || strstr(err.message, want_other) == NULL)
          fail_msg("the message should name %s and %s: %s", want_pair, want_other, err.message);
        tg_policy_relation_destroy(rel);
      }
      tg_plan_destroy(p);
    }
    tg_model_records_destroy(mr);
    case_close(&c);
    tg_graph_destroy(g);
  }
}

/* A serial plan that writes c over a at op 2 runs out of order only if op 2 waits for op 1,
 * the other reader of a: the waits add that edge (and the oracle agrees with them). */
static void waits_order_other_readers_before_the_pair(void **state) {
  (void)state;
  for (int chained = 0; chained < 2; ++chained) {
    tg_graph *g = tg_oracle_race_graph(chained);
    graph_case c = case_open(g);
    for (int mode = 0; mode < 2; ++mode) {
      tg_model_records *mr = NULL;
      tg_plan *p = plan_race(&c, TG_POLICY_SERIAL, (tg_mode)mode, &mr);
      const tg_record_set *set = mr->records;
      tg_waits *w = NULL;
      tg_error_info err = {{0}};
      assert_int_equal(tg_schedule_compute_waits(c.schedule, set->records, mr->tensor_of, set->count, p, NULL, &w, &err),
                       TG_OK);
      const uint32_t op = chained ? 3 : 2;
      int found = 0;
      for (size_t e = 0; e < w->reuse_edge_count; ++e)
        found |= w->reuse_edges[e].after == op - 1 && w->reuse_edges[e].op == op;
      if (!found)
        fail_msg("%s graph, %s: no wait orders op %u (reading the pair's input) before op %u (%zu reuse edges)",
                 chained ? "chained" : "race", tg_mode_name((tg_mode)mode), op - 1, op, w->reuse_edge_count);
      tg_waits_destroy(w);
      tg_plan_destroy(p);
      tg_model_records_destroy(mr);
    }
    case_close(&c);
    tg_graph_destroy(g);
  }
}

/* Random graphs rich in candidates: every storage, policy, mode and strategy, 0 violations. */
static void random_graphs(void **state) {
  (void)state;
  const size_t graphs = getenv("TANGRAM_TEST_DEEP") ? 20000 : getenv("TANGRAM_TEST_QUICK") ? 50 : 600;
  tg_test_rng rng = {0x1A5E};
  tally t;
  memset(&t, 0, sizeof t);
  for (size_t i = 0; i < graphs; ++i) {
    tg_graph *g = tg_oracle_random_graph(&rng, (size_t)tg_test_rng_range(&rng, 3, 24));
    graph_case c = case_open(g);
    char label[32];
    snprintf(label, sizeof label, "graph %zu", i);
    for (size_t s = 0; s < STORAGES; ++s) judge_storage(&c, k_storages[s], k_strategies, STRATEGIES, label, &t);
    case_close(&c);
    tg_graph_destroy(g);
  }
  print_tally("random graphs", graphs, &t);
  if (t.violations) fail_msg("%zu violations; the first: %s", t.violations, t.first);
  /* The property is about pairs: every execution must have used many. */
  for (int e = 0; e < EXEC_COUNT; ++e)
    if (t.pairs[e] < graphs / 2) fail_msg("%s: only %zu pairs used", k_exec_names[e], t.pairs[e]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(race_graphs),
      cmocka_unit_test(validator_checks_pairs_against_the_relation),
      cmocka_unit_test(waits_order_other_readers_before_the_pair),
      cmocka_unit_test(random_graphs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
