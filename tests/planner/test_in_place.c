/* In-place pairs and views: the op table, planning with and without the pairs (never above the
 * plan without them, always valid), the in-place bounds, and the validator accepting exactly
 * the declared pairs. */
#include <stdlib.h>
#include <string.h>

#include "support/tg_test.h"

#include "planner/base/in_place.h"
#include "tangram/layout.h"
#include "tangram/model.h"

/* r0 -> r1 (op 1) -> r2 (op 2), all 100 bytes, and r3 of 50 bytes live throughout. */
static const tg_usage_record k_chain[4] = {
    {{100, 1, 1}, 0, 1, 0}, {{100, 1, 1}, 1, 2, 0}, {{100, 1, 1}, 2, 3, 0}, {{50, 1, 1}, 0, 3, 0}};
static const tg_in_place_pair k_chain_pairs[2] = {{1, 0, 1, 0}, {2, 1, 2, 1}};

static tg_plan *plan_with(const tg_usage_record *rec, size_t n, uint32_t dims, tg_mode mode, tg_strategy s,
                          const tg_in_place_pair *pairs, size_t np, const tg_share_relation *rel) {
  tg_plan_options o = {0};
  o.mode = mode;
  o.strategy = s;
  o.in_place = pairs;
  o.in_place_count = np;
  o.relation = rel;
  o.time_limit_ms = s == TG_STRATEGY_BEST ? TG_TIME_LIMIT_NONE : 0;
  tg_plan *p = NULL;
  tg_status st = tg_plan_compute(rec, n, dims, &o, NULL, &p);
  if (st != TG_OK) fail_msg("plan %s %s: %s", tg_mode_name(mode), tg_strategy_name(s), tg_status_name(st));
  tg_test_assert_valid(rec, n, dims, p, 0, rel);
  return p;
}

static void known_answers(void **state) {
  (void)state;
  for (int mode = 0; mode < 2; ++mode) {
    tg_plan *with = plan_with(k_chain, 4, 1, (tg_mode)mode, TG_STRATEGY_BEST, k_chain_pairs, 2, NULL);
    tg_plan *without = plan_with(k_chain, 4, 1, (tg_mode)mode, TG_STRATEGY_BEST, NULL, 0, NULL);
    assert_int_equal(with->total, 150);     /* one 100-byte allocation for the chain, 50 beside */
    assert_int_equal(without->total, 250);  /* r0 and r2 may share, r1 not */
    assert_int_equal(with->in_place_count, 2);
    assert_int_equal(without->in_place_count, 0);
    if (mode == TG_MODE_OBJECTS) {
      assert_int_equal(with->object_of[0], with->object_of[1]);
      assert_int_equal(with->object_of[1], with->object_of[2]);
    } else {
      assert_int_equal(with->offset_of[0], with->offset_of[1]);
      assert_int_equal(with->offset_of[1], with->offset_of[2]);
    }
    tg_plan_destroy(with);
    tg_plan_destroy(without);
  }
  tg_bounds b;
  uint64_t lp = 0;
  assert_int_equal(tg_bounds_compute_in_place(k_chain, 4, 1, k_chain_pairs, 2, NULL, &b, &lp), TG_OK);
  assert_int_equal(b.peak_live, 150);
  assert_int_equal(b.positional_max, 150);
  assert_int_equal(b.naive, 350);
  assert_int_equal(lp, 150);
  /* Where the pairs cannot help, the plan has none: a chain that would be live longer than
   * its parts while a large record needs the gap. Here r1 (op 5) would merge [0,5] and [5,9]
   * although the peak is elsewhere: the totals tie, and a tie keeps the plan without pairs. */
  const tg_usage_record tie[3] = {{{10, 1, 1}, 0, 5, 0}, {{10, 1, 1}, 5, 9, 0}, {{1000, 1, 1}, 2, 3, 0}};
  const tg_in_place_pair tp = {5, 0, 1, 0};
  tg_plan *p = plan_with(tie, 3, 1, TG_MODE_OFFSETS, TG_STRATEGY_GREEDY_BY_SIZE, &tp, 1, NULL);
  assert_int_equal(p->total, 1010);
  assert_int_equal(p->in_place_count, 0);
  tg_plan_destroy(p);
}

static void bad_pairs_refused(void **state) {
  (void)state;
  tg_plan_options o = {0};
  o.strategy = TG_STRATEGY_GREEDY_BY_SIZE;
  tg_plan *p = NULL;
  const tg_in_place_pair bad[] = {
      {0, 0, 1, 0},  /* r0 dies at 1, not 0 */
      {1, 0, 3, 0},  /* r3 is not born at 1 */
      {1, 0, 0, 0},  /* the same record */
      {1, 0, 9, 0},  /* out of range */
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
    o.in_place = &bad[i];
    o.in_place_count = 1;
    assert_int_equal(tg_plan_compute(k_chain, 4, 1, &o, NULL, &p), TG_ERROR_INVALID_ARGUMENT);
    assert_null(p);
  }
  const tg_usage_record diff[2] = {{{100, 1, 1}, 0, 1, 0}, {{60, 1, 1}, 1, 2, 0}};
  const tg_in_place_pair dp = {1, 0, 1, 0};
  o.in_place = &dp;
  assert_int_equal(tg_plan_compute(diff, 2, 1, &o, NULL, &p), TG_ERROR_INVALID_ARGUMENT);
  const tg_in_place_pair twice[2] = {{1, 0, 1, 0}, {1, 0, 1, 0}};
  o.in_place = twice;
  o.in_place_count = 2;
  assert_int_equal(tg_plan_compute(k_chain, 4, 1, &o, NULL, &p), TG_ERROR_INVALID_ARGUMENT);
}

/* The validator accepts the declared pairs and nothing else. */
static void validator_exactly_the_declared_pairs(void **state) {
  (void)state;
  for (int mode = 0; mode < 2; ++mode) {
    tg_plan *p = plan_with(k_chain, 4, 1, (tg_mode)mode, TG_STRATEGY_BEST, k_chain_pairs, 2, NULL);
    tg_error_info err = {{0}};
    /* Without the declaration the same layout is an overlap. */
    tg_in_place_pair *saved = p->in_place;
    size_t saved_count = p->in_place_count;
    p->in_place = NULL;
    p->in_place_count = 0;
    assert_int_equal(tg_plan_validate(k_chain, 4, 1, p, 0, NULL, NULL, &err), TG_ERROR_INVALID_PLAN);
    p->in_place = saved;
    p->in_place_count = saved_count;
    /* A pair declared wrongly: r3's input is still read after op 2 (r3 lives to 3). */
    tg_usage_record rec[4];
    memcpy(rec, k_chain, sizeof rec);
    rec[0].last_task = 2; /* r0 read again at op 2: it does not die at op 1 */
    err.message[0] = '\0';
    assert_int_equal(tg_plan_validate(rec, 4, 1, p, 0, NULL, NULL, &err), TG_ERROR_INVALID_PLAN);
    assert_non_null(strstr(err.message, "still read after op 1"));
    /* A declared pair whose records are apart. */
    if (mode == TG_MODE_OFFSETS) p->offset_of[1] += 8;
    else p->object_of[1] = p->object_of[3];
    err.message[0] = '\0';
    assert_int_equal(tg_plan_validate(k_chain, 4, 1, p, 0, NULL, NULL, &err), TG_ERROR_INVALID_PLAN);
    assert_non_null(strstr(err.message, mode == TG_MODE_OFFSETS ? "different offsets" : "different objects"));
    tg_plan_destroy(p);
  }
  /* A declared pair does not excuse another record that overlaps it at the op. */
  const tg_usage_record rec[3] = {{{100, 1, 1}, 0, 1, 0}, {{100, 1, 1}, 1, 2, 0}, {{100, 1, 1}, 1, 1, 0}};
  tg_plan *p = NULL;
  assert_int_equal(tg_plan_create(TG_MODE_OFFSETS, 1, 3, 0, NULL, &p), TG_OK);
  const tg_in_place_pair pair = {1, 0, 1, 0};
  assert_int_equal(tg_plan_set_in_place(p, &pair, 1), TG_OK);
  p->total = 100;
  tg_error_info err = {{0}};
  assert_int_equal(tg_plan_validate(rec, 3, 1, p, 0, NULL, NULL, &err), TG_ERROR_INVALID_PLAN);
  p->offset_of[2] = 100;
  p->total = 200;
  assert_int_equal(tg_plan_validate(rec, 3, 1, p, 0, NULL, NULL, &err), TG_OK);
  tg_plan_destroy(p);
}

/* A pair whose input is born at its op (a graph input read first there, say) ties with its
 * output in time: the validator accepts it in either record order, in both modes, and still
 * refuses a third record meeting them there. */
static void validator_pair_input_born_at_its_op(void **state) {
  (void)state;
  /* r0: the output [1, 3]; r1: the input [1, 1] (after its output in index order); r2 another
   * record [1, 2], which a chain r1 -> r0 -> r2 at op 1 would also need to meet. */
  const tg_usage_record rec[3] = {{{100, 1, 1}, 1, 3, 0}, {{100, 1, 1}, 1, 1, 0}, {{100, 1, 1}, 1, 2, 0}};
  const tg_in_place_pair pair = {1, 1, 0, 0};
  for (int mode = 0; mode < 2; ++mode) {
    tg_plan *p = NULL;
    assert_int_equal(tg_plan_create((tg_mode)mode, 1, 3, mode == TG_MODE_OBJECTS ? 2 : 0, NULL, &p), TG_OK);
    if (mode == TG_MODE_OBJECTS) {
      p->object_of[0] = p->object_of[1] = 0;
      p->object_of[2] = 1;
      p->object_sizes[0] = p->object_sizes[1] = (tg_extent){100, 1, 1};
    } else {
      p->offset_of[2] = 100;
      p->object_count = 1;
    }
    p->total = 200;
    assert_int_equal(tg_plan_set_in_place(p, &pair, 1), TG_OK);
    tg_test_assert_valid(rec, 3, 1, p, 0, NULL);
    /* r2 in the pair's place too: it meets them at op 1 and is no pair of theirs. */
    if (mode == TG_MODE_OBJECTS) p->object_of[2] = 0;
    else p->offset_of[2] = 0;
    p->total = mode == TG_MODE_OBJECTS ? 200 : 100;
    tg_error_info err = {{0}};
    assert_int_equal(tg_plan_validate(rec, 3, 1, p, 0, NULL, NULL, &err), TG_ERROR_INVALID_PLAN);
    tg_plan_destroy(p);
  }
}

/* A relation from a seed: pairs of records whose mixed index hashes to 0 mod 4 may not share. */
static int hashed_relation(void *user, size_t a, size_t b) {
  uint64_t s = *(const uint64_t *)user, lo = a < b ? a : b, hi = a < b ? b : a;
  uint64_t x = s ^ (lo * 0x9E3779B97F4A7C15ull) ^ (hi * 0xC2B2AE3D27D4EB4Full);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return x % 4 != 0;
}

/* The same seed decides which pairs the relation lets write in place (a quarter not). */
static int hashed_in_place(void *user, size_t input, size_t output, uint32_t op, uint32_t *other) {
  *other = UINT32_MAX;
  return hashed_relation(user, input, output + ((size_t)op << 20));
}

/* Random records with chains of equal-sized records handed over at ops: every strategy in both
 * modes, with and without a relation, gives a valid plan never above the plan without pairs
 * and never below the in-place bounds. */
static void random_graphs(void **state) {
  (void)state;
  const size_t sets = tg_test_quick() ? 40 : 150;
  tg_test_rng rng = {33};
  size_t used_total = 0, lower_total = 0;
  for (size_t set = 0; set < sets; ++set) {
    const uint32_t dims = set % 3 == 2 ? 2 : 1;
    const size_t base = (size_t)tg_test_rng_range(&rng, 4, 30);
    tg_usage_record rec[90];
    tg_in_place_pair pairs[60];
    size_t n = base, np = 0;
    tg_test_random_spec spec = {dims, base, 40, 10, 64, 0, 1};
    tg_test_random_records(&rng, &spec, rec);
    /* Outputs born where a record dies, with its size: some become pairs. */
    const size_t extra = (size_t)tg_test_rng_range(&rng, 1, 40);
    for (size_t k = 0; k < extra && n < 90; ++k) {
      size_t a = (size_t)tg_test_rng_range(&rng, 0, n - 1);
      tg_usage_record b = rec[a];
      b.first_task = rec[a].last_task;
      b.last_task = b.first_task + (uint32_t)tg_test_rng_range(&rng, 0, 8);
      rec[n] = b;
      int taken = 0;
      for (size_t i = 0; i < np; ++i) taken |= pairs[i].input == a;
      if (!taken && tg_test_rng_range(&rng, 0, 3) != 0)
        pairs[np++] = (tg_in_place_pair){b.first_task, a, n, (int)tg_test_rng_range(&rng, 0, 1)};
      ++n;
    }
    uint64_t seed = tg_test_rng_next(&rng);
    const tg_share_relation rel = {hashed_relation, &seed, NULL, 0, hashed_in_place};
    tg_bounds ib;
    assert_int_equal(tg_bounds_compute_in_place(rec, n, dims, pairs, np, NULL, &ib, NULL), TG_OK);
    for (int mode = 0; mode < 2; ++mode) {
      if (mode == TG_MODE_OFFSETS && dims != 1) continue;
      for (int s = 0; s < TG_STRATEGY_COUNT; ++s) {
        if (!tg_strategy_applies((tg_strategy)s, (tg_mode)mode, dims)) continue;
        for (int r = 0; r < 2; ++r) {
          const tg_share_relation *rp = r ? &rel : NULL;
          tg_plan *with = plan_with(rec, n, dims, (tg_mode)mode, (tg_strategy)s, pairs, np, rp);
          tg_plan *without = plan_with(rec, n, dims, (tg_mode)mode, (tg_strategy)s, NULL, 0, rp);
          if (with->total > without->total)
            fail_msg("set %zu %s %s relation %d: %llu with pairs > %llu without", set, tg_mode_name((tg_mode)mode),
                     tg_strategy_name((tg_strategy)s), r, (unsigned long long)with->total,
                     (unsigned long long)without->total);
          const uint64_t lb = mode == TG_MODE_OBJECTS ? ib.positional_max : ib.peak_live;
          if (with->total < lb) fail_msg("set %zu: total %llu below the in-place bound %llu", set,
                                         (unsigned long long)with->total, (unsigned long long)lb);
          used_total += with->in_place_count;
          lower_total += with->total < without->total;
          tg_plan_destroy(with);
          tg_plan_destroy(without);
        }
      }
    }
  }
  print_message("%zu sets: %zu pairs used, %zu plans smaller with pairs\n", sets, used_total, lower_total);
  assert_true(lower_total > sets);
}

static void op_table(void **state) {
  (void)state;
  assert_int_equal(tg_op_in_place_kind("ADD"), TG_IN_PLACE_ELEMENTWISE);
  assert_int_equal(tg_op_in_place_kind("HARD_SWISH"), TG_IN_PLACE_ELEMENTWISE);
  assert_int_equal(tg_op_in_place_kind("Sigmoid"), TG_IN_PLACE_ELEMENTWISE);
  assert_int_equal(tg_op_in_place_kind("RESHAPE"), TG_IN_PLACE_VIEW);
  assert_int_equal(tg_op_in_place_kind("Unsqueeze"), TG_IN_PLACE_VIEW);
  assert_int_equal(tg_op_in_place_kind("CONV_2D"), TG_IN_PLACE_NONE);
  assert_int_equal(tg_op_in_place_kind(NULL), TG_IN_PLACE_NONE);
  /* a -> conv -> b; b + a2 -> c (b dies here: in place over b); relu(c) -> d, but c is read
   * again by the last op (no pair); reshape(d) -> e is a view; e and c -> f. */
  static const char text[] =
      "tensor x 1x8x8x4 float32 input\n"
      "tensor w 4x1x1x4 float32 constant\n"
      "tensor b 1x8x8x4 float32\n"
      "tensor a2 1x8x8x4 float32\n"
      "tensor c 1x8x8x4 float32\n"
      "tensor d 1x8x8x4 float32\n"
      "tensor e 1x64x4 float32\n"
      "tensor f 1x64x4 float32 output\n"
      "op CONV_2D inputs=x,w outputs=b\n"
      "op CONV_2D inputs=x,w outputs=a2\n"
      "op ADD inputs=b,a2 outputs=c\n"
      "op RELU inputs=c outputs=d\n"
      "op RESHAPE inputs=d outputs=e\n"
      "op ADD inputs=e,c outputs=f\n";
  tg_graph *g = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_graph_parse_text(text, sizeof text - 1, "t", NULL, &g, &err), TG_OK);
  tg_lifetimes *lt = NULL;
  assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &lt, &err), TG_OK);
  for (int st = 0; st < 2; ++st) {
    const tg_storage storage = st ? TG_STORAGE_TEXTURE_2D : TG_STORAGE_BUFFER;
    tg_model_records *mr = NULL;
    assert_int_equal(tg_model_records_create(g, lt, storage, TG_PRECISION_FP32, NULL, NULL, &mr, &err), TG_OK);
    for (int images = 0; images < 2; ++images) {
      tg_in_place_pair *pairs = NULL;
      size_t n = 0;
      assert_int_equal(tg_model_in_place_pairs(g, lt, mr, images, NULL, &pairs, &n), TG_OK);
      /* Buffers (or images allowed): ADD over b (op 2) and the view at op 4. Textures without
       * images: the view only, and only where BHWC is the same: 1x8x8x4 -> 1x64x4 is not. */
      const size_t want = storage == TG_STORAGE_BUFFER ? 2 : images ? 1 : 0;
      assert_int_equal(n, want);
      if (n > 0) {
        assert_int_equal(pairs[0].op, 2);
        assert_string_equal(g->tensors[mr->tensor_of[pairs[0].input]].name, "b");
        assert_string_equal(g->tensors[mr->tensor_of[pairs[0].output]].name, "c");
        assert_int_equal(pairs[0].view, 0);
      }
      if (n > 1) {
        assert_int_equal(pairs[1].op, 4);
        assert_string_equal(g->tensors[mr->tensor_of[pairs[1].input]].name, "d");
        assert_int_equal(pairs[1].view, 1);
      }
      /* Every candidate plans and validates. */
      if (n > 0) {
        tg_plan *p = plan_with(mr->records->records, mr->records->count, mr->records->dims, TG_MODE_OBJECTS,
                               TG_STRATEGY_BEST, pairs, n, NULL);
        tg_plan_destroy(p);
      }
      free(pairs);
    }
    tg_model_records_destroy(mr);
  }
  tg_lifetimes_destroy(lt);
  tg_graph_destroy(g);
}

/* Candidates follow the lifetimes, not the tensor flags: a graph input or output named only in
 * the graph's lists (no TG_TENSOR_INPUT / OUTPUT flag) is persistent and never a pair's input
 * or output. And a buffer view regroups H and W at batch 1 only. */
static void candidates_follow_lifetimes_and_batch(void **state) {
  (void)state;
  static const char text[] =
      "tensor x 1x4x4x8 float32 input\n"
      "tensor a 1x4x4x8 float32\n"
      "tensor v 1x2x8x8 float32\n"
      "tensor b 2x4x4x4 float32\n"
      "tensor w 2x2x8x4 float32\n"
      "tensor y 2x2x8x4 float32 output\n"
      "op RELU inputs=x outputs=a\n"          /* over x: a graph input, never */
      "op RESHAPE inputs=a outputs=v\n"       /* batch 1, H and W regrouped: a buffer view */
      "op CONV_2D inputs=v outputs=b\n"
      "op RESHAPE inputs=b outputs=w\n"       /* batch 2, H and W regrouped: no view */
      "op RELU inputs=w outputs=y\n";        /* y: a graph output, never */
  tg_graph *g = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_graph_parse_text(text, sizeof text - 1, "t", NULL, &g, &err), TG_OK);
  /* The lists say which tensors are the graph's inputs and outputs; the flags are cleared. */
  g->tensors[0].flags &= ~(uint32_t)TG_TENSOR_INPUT;
  g->tensors[5].flags &= ~(uint32_t)TG_TENSOR_OUTPUT;
  const tg_lifetime_options lo = {1}; /* plan_io: x and y get records */
  tg_lifetimes *lt = NULL;
  assert_int_equal(tg_graph_compute_lifetimes(g, &lo, NULL, &lt, &err), TG_OK);
  assert_true(lt->tensors[0].persistent && lt->tensors[5].persistent);
  tg_model_records *mr = NULL;
  assert_int_equal(tg_model_records_create(g, lt, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL, NULL, &mr, &err), TG_OK);
  tg_in_place_pair *pairs = NULL;
  size_t n = 0;
  assert_int_equal(tg_model_in_place_pairs(g, lt, mr, 1, NULL, &pairs, &n), TG_OK);
  for (size_t i = 0; i < n; ++i)
    print_message("candidate: op %u, %s -> %s%s\n", pairs[i].op, g->tensors[mr->tensor_of[pairs[i].input]].name,
                  g->tensors[mr->tensor_of[pairs[i].output]].name, pairs[i].view ? " (view)" : "");
  assert_int_equal(n, 1);
  assert_int_equal(pairs[0].op, 1);
  assert_int_equal(pairs[0].view, 1);
  free(pairs);
  tg_model_records_destroy(mr);
  tg_lifetimes_destroy(lt);
  tg_graph_destroy(g);
}

/* A relation that counts its calls: where work, not the clock, ends the search, the count is
 * a measure of the work done that does not depend on the machine or its load. */
typedef struct counted {
  uint64_t seed, calls;
} counted;

static int counted_may_share(void *user, size_t a, size_t b) {
  counted *c = user;
  c->calls++;
  return hashed_relation(&c->seed, a, b);
}

static int counted_in_place(void *user, size_t input, size_t output, uint32_t op, uint32_t *other) {
  counted *c = user;
  return hashed_in_place(&c->seed, input, output, op, other);
}

/* 300 records with pairs, under a relation that keeps every plan above the lower bound (so the
 * search never ends early). */
static size_t budget_records(tg_usage_record *rec, tg_in_place_pair *pairs, size_t *np) {
  tg_test_rng rng = {77};
  const size_t base = 240;
  tg_test_random_spec spec = {1, base, 400, 30, 4096, 0, 0};
  tg_test_random_records(&rng, &spec, rec);
  size_t n = base;
  *np = 0;
  for (size_t a = 0; a < base && n < 300; a += 4) {
    rec[n] = rec[a];
    rec[n].first_task = rec[a].last_task;
    rec[n].last_task = rec[n].first_task + (uint32_t)tg_test_rng_range(&rng, 0, 20);
    pairs[(*np)++] = (tg_in_place_pair){rec[n].first_task, a, n, 0};
    ++n;
  }
  return n;
}

/* With pairs, `best` plans twice (with and without the chains): the two plans share the call's
 * search budget, so the call's search does about the work of one plan. Measured by work
 * (relation calls under a work limit: the same on every machine, under any load), and the
 * split of every kind of budget checked where the call makes it. */
static void search_budget_shared(void **state) {
  (void)state;
  tg_usage_record rec[300];
  tg_in_place_pair pairs[80];
  size_t np = 0;
  const size_t n = budget_records(rec, pairs, &np);
  int failures = 0;
  for (int mode = 0; mode < 2; ++mode) {
    counted c = {5, 0};
    const tg_share_relation rel = {counted_may_share, &c, NULL, 0, counted_in_place};
    tg_plan_options o = {0};
    o.mode = (tg_mode)mode;
    o.strategy = TG_STRATEGY_BEST;
    o.relation = &rel;
    o.work_limit = 14;
    uint64_t calls[2];
    for (int with = 0; with < 2; ++with) {
      o.in_place = with ? pairs : NULL;
      o.in_place_count = with ? np : 0;
      c.calls = 0;
      tg_plan *p = NULL;
      assert_int_equal(tg_plan_compute(rec, n, 1, &o, NULL, &p), TG_OK);
      tg_test_assert_valid(rec, n, 1, p, 0, &rel);
      calls[with] = c.calls;
      tg_plan_destroy(p);
    }
    const double ratio = (double)calls[1] / (double)calls[0];
    print_message("%s, work limit %u: %llu relation calls without pairs, %llu with (%.2fx)\n",
                  tg_mode_name((tg_mode)mode), o.work_limit, (unsigned long long)calls[0],
                  (unsigned long long)calls[1], ratio);
    if (ratio > 1.5) {
      print_message("%s: with pairs the search did %.2fx the work of one plan\n", tg_mode_name((tg_mode)mode), ratio);
      ++failures;
    }
  }
  assert_int_equal(failures, 0);
  /* Every budget is shared: the default search time (what time_limit_ms 0 stands for, exact
   * or not), an explicit limit and a work limit add up to the call's. */
  static const uint32_t k_limits[] = {0, 1, 7, 250, TG_TIME_LIMIT_NONE};
  static const uint32_t k_works[] = {0, 1, 14, 255};
  for (int exact = 0; exact < 2; ++exact)
    for (size_t li = 0; li < sizeof k_limits / sizeof *k_limits; ++li)
      for (size_t wi = 0; wi < sizeof k_works / sizeof *k_works; ++wi) {
        tg_plan_options o = {0};
        o.strategy = TG_STRATEGY_BEST;
        o.exact = exact;
        o.time_limit_ms = k_limits[li];
        o.work_limit = k_works[wi];
        tg_plan_options part[2];
        uint32_t default_ms[2];
        for (int k = 0; k < 2; ++k) tg__in_place_split_budget(&o, k, &part[k], &default_ms[k]);
        const uint32_t whole_default = exact ? 1000 : TG_DEFAULT_TIME_LIMIT_MS;
        const int is_default = o.time_limit_ms == 0 || (exact && o.time_limit_ms == TG_TIME_LIMIT_NONE);
        if (is_default) {
          assert_int_equal(default_ms[0] + default_ms[1], whole_default);
          assert_int_equal(part[0].time_limit_ms, o.time_limit_ms);
        } else if (o.time_limit_ms == TG_TIME_LIMIT_NONE) {
          assert_int_equal(part[0].time_limit_ms, TG_TIME_LIMIT_NONE);
          assert_int_equal(part[1].time_limit_ms, TG_TIME_LIMIT_NONE);
        } else {
          /* An explicit limit: halves (a half of 0 ms is no search at all). */
          const uint32_t t1 = part[1].time_limit_ms == TG_TIME_LIMIT_NONE ? 0 : part[1].time_limit_ms;
          assert_int_equal(part[0].time_limit_ms + t1, o.time_limit_ms);
        }
        if (o.work_limit > 1) assert_int_equal(part[0].work_limit + part[1].work_limit, o.work_limit);
        else assert_int_equal(part[0].work_limit, o.work_limit);
      }
}

TG_TEST_MAIN(cmocka_unit_test(known_answers),
             cmocka_unit_test(bad_pairs_refused),
             cmocka_unit_test(validator_exactly_the_declared_pairs),
             cmocka_unit_test(validator_pair_input_born_at_its_op),
             cmocka_unit_test(random_graphs),
             cmocka_unit_test(op_table),
             cmocka_unit_test(candidates_follow_lifetimes_and_batch),
             cmocka_unit_test(search_budget_shared))
