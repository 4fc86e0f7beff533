/* In-place pairs and views: the op table, planning with and without the pairs (never above the
 * plan without them, always valid), the in-place bounds, and the validator accepting exactly
 * the declared pairs. */
#include <stdlib.h>
#include <string.h>

#include "support/tg_test.h"
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

/* A relation from a seed: pairs of records whose mixed index hashes to 0 mod 4 may not share. */
static int hashed_relation(void *user, size_t a, size_t b) {
  uint64_t s = *(const uint64_t *)user, lo = a < b ? a : b, hi = a < b ? b : a;
  uint64_t x = s ^ (lo * 0x9E3779B97F4A7C15ull) ^ (hi * 0xC2B2AE3D27D4EB4Full);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return x % 4 != 0;
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
    const tg_share_relation rel = {hashed_relation, &seed, NULL, 0};
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

TG_TEST_MAIN(cmocka_unit_test(known_answers), cmocka_unit_test(bad_pairs_refused),
             cmocka_unit_test(validator_exactly_the_declared_pairs),
             cmocka_unit_test(random_graphs), cmocka_unit_test(op_table))
