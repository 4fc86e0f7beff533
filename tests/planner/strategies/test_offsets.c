/* Offsets-mode strategies and ObjectsToOffsets: TFLite's vectors, a literal port of TFLite's
 * GreedyBySizeAssignment as the reference on random inputs, fits, zero sizes, alignment, the
 * may-share relation (with and without windows), overflow and allocation failures. */
#include "support/tg_test.h"
#include "support/tg_planner_test.h"

#include <stdlib.h>
#include <string.h>

#define REC(size, first, last) {{(size), 1, 1}, (first), (last), 0}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static tg_status plan_offsets(const tg_usage_record *records, size_t count, tg_strategy strategy,
                              tg_fit fit, uint64_t alignment, const tg_share_relation *relation,
                              const tg_allocator *alloc, tg_plan **out) {
  tg_plan_options o = {
      .mode = TG_MODE_OFFSETS, .strategy = strategy, .fit = fit, .alignment = alignment,
      .relation = relation
  };
  o.time_limit_ms = TG_TIME_LIMIT_NONE; /* `best` here: the smallest strategy (search: tests/planner/search) */
  return tg_plan_compute(records, count, 1, &o, alloc, out);
}

static tg_plan *plan_ok(const tg_usage_record *records, size_t count, tg_strategy strategy,
                        tg_fit fit, uint64_t alignment, const tg_share_relation *relation) {
  tg_plan *p = NULL;
  tg_status st = plan_offsets(records, count, strategy, fit, alignment, relation, NULL, &p);
  if (st != TG_OK) fail_msg("%s: %s", tg_strategy_name(strategy), tg_status_name(st));
  assert_non_null(p);
  assert_int_equal(p->mode, TG_MODE_OFFSETS);
  assert_int_equal(p->record_count, count);
  tg_test_assert_valid(records, count, 1, p, alignment, relation);
  return p;
}

static void assert_offsets(const tg_plan *p, const uint64_t *expected, size_t count, uint64_t total) {
  for (size_t i = 0; i < count; ++i)
    if (p->offset_of[i] != expected[i])
      fail_msg("record %zu: offset %llu, expected %llu", i, (unsigned long long)p->offset_of[i],
               (unsigned long long)expected[i]);
  assert_int_equal(p->total, total);
}

/* ---- TFLite's GreedyBySizeAssignment, ported literally (O(n^2)) ---------------------- */

typedef struct ref_item {
  uint64_t size;
  size_t idx;
} ref_item;

static int ref_cmp(const void *pa, const void *pb) { /* size descending, stable by index */
  const ref_item *a = pa, *b = pb;
  if (a->size != b->size) return a->size > b->size ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static uint64_t align_by(uint64_t v, uint64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }

/* TFLite's GreedyBySizeAssignment, O(n^2). With a record alignment (the larger of `align`
 * and the record's own), the running end is aligned to the alignment of the record being
 * placed - the planner's documented rule, which is TFLite's when every record has one. */
static uint64_t ref_greedy_by_size(const tg_usage_record *rec, size_t n, uint64_t align,
                                   uint64_t *offsets) {
  ref_item *order = calloc(n ? n : 1, sizeof *order);
  size_t *allocs = calloc(n ? n : 1, sizeof *allocs);
  size_t na = 0;
  uint64_t total = 0;
  assert_non_null(order);
  assert_non_null(allocs);
  for (size_t i = 0; i < n; ++i) order[i] = (ref_item){rec[i].size.w, i};
  qsort(order, n, sizeof *order, ref_cmp);
  for (size_t k = 0; k < n; ++k) {
    size_t i = order[k].idx;
    uint64_t a = rec[i].alignment > align ? rec[i].alignment : align;
    uint64_t best_diff = UINT64_MAX, best_off = UINT64_MAX, prev = 0;
    for (size_t q = 0; q < na; ++q) {
      size_t j = allocs[q];
      if (rec[j].last_task < rec[i].first_task || rec[j].first_task > rec[i].last_task) continue;
      uint64_t cur = offsets[j];
      if (cur >= prev) {
        uint64_t diff = cur - prev;
        if (diff >= rec[i].size.w && diff < best_diff) {
          best_diff = diff;
          best_off = prev;
        }
      }
      uint64_t end = align_by(cur + rec[j].size.w, a);
      if (end > prev) prev = end;
    }
    if (best_off == UINT64_MAX) best_off = prev;
    size_t pos = 0;
    while (pos < na && offsets[allocs[pos]] <= best_off) ++pos;
    memmove(allocs + pos + 1, allocs + pos, (na - pos) * sizeof *allocs);
    allocs[pos] = i;
    ++na;
    offsets[i] = best_off;
    if (best_off + rec[i].size.w > total) total = best_off + rec[i].size.w;
  }
  free(order);
  free(allocs);
  return total;
}

/* ---- random inputs ------------------------------------------------------------------- */

static void random_1d(tg_test_rng *rng, tg_usage_record *r, size_t n) {
  tg_test_random_spec spec = {1, n, (uint32_t)tg_test_rng_range(rng, 0, 3 * n + 1),
                              (uint32_t)tg_test_rng_range(rng, 0, 12),
                              tg_test_rng_range(rng, 1, 4) == 1 ? 1000000 : 64,
                              (int)tg_test_rng_range(rng, 0, 1), (int)tg_test_rng_range(rng, 0, 1)};
  tg_test_random_records(rng, &spec, r);
}

/* A symmetric, pure, pseudo-random relation: about a third of the pairs may not share. */
typedef struct rel_state {
  uint64_t seed;
  size_t calls;
} rel_state;

static int random_may_share(void *user, size_t a, size_t b) {
  rel_state *s = user;
  s->calls++;
  return tg_test_pair_hash(s->seed, a, b) % 3 != 0;
}

/* ---- TFLite vectors ------------------------------------------------------------------ */

static tg_plan *objects_plan(const uint32_t *ids, size_t n, const uint64_t *sizes, size_t k) {
  tg_plan *p = NULL;
  assert_int_equal(tg_plan_create(TG_MODE_OBJECTS, 1, n, k, NULL, &p), TG_OK);
  for (size_t i = 0; i < n; ++i) p->object_of[i] = ids[i];
  for (size_t i = 0; i < k; ++i) {
    p->object_sizes[i] = (tg_extent){sizes[i], 1, 1};
    p->total += sizes[i];
  }
  return p;
}

static void check_objects_to_offsets(const uint32_t *ids, size_t n, const uint64_t *sizes,
                                     size_t k, uint64_t alignment, const uint64_t *expected,
                                     uint64_t total) {
  tg_plan *objects = objects_plan(ids, n, sizes, k);
  tg_plan *offsets = NULL;
  assert_int_equal(tg_plan_objects_to_offsets(objects, alignment, NULL, &offsets), TG_OK);
  assert_int_equal(offsets->mode, TG_MODE_OFFSETS);
  assert_int_equal(offsets->record_count, n);
  assert_int_equal(offsets->object_count, n ? 1 : 0);
  assert_offsets(offsets, expected, n, total);
  tg_plan_destroy(offsets);
  tg_plan_destroy(objects);
}

static void objects_to_offsets_vectors(void **state) {
  (void)state;
  check_objects_to_offsets(NULL, 0, NULL, 0, 1, NULL, 0);
  {
    const uint32_t ids[] = {0};
    const uint64_t sizes[] = {16}, want[] = {0};
    check_objects_to_offsets(ids, 1, sizes, 1, 1, want, 16);
  }
  {
    const uint32_t ids[] = {0, 0, 0};
    const uint64_t sizes[] = {16}, want[] = {0, 0, 0};
    check_objects_to_offsets(ids, 3, sizes, 1, 1, want, 16);
  }
  {
    /* Object 4 has no record; it still takes its place. */
    const uint32_t ids[] = {2, 0, 2, 1, 3, 3, 1, 5};
    const uint64_t sizes[] = {16, 8, 32, 32, 4, 16};
    const uint64_t want[] = {24, 0, 24, 16, 56, 56, 16, 92};
    check_objects_to_offsets(ids, 8, sizes, 6, 1, want, 108);
    const uint64_t want16[] = {32, 0, 32, 16, 64, 64, 16, 112}; /* each object 16-aligned */
    check_objects_to_offsets(ids, 8, sizes, 6, 16, want16, 128);
  }
}

/* Section 8: object plans of sections 4 and 5 laid out by ObjectsToOffsets. */
static void objects_to_offsets_harness_tables(void **state) {
  (void)state;
  {
    const uint32_t eq_ids[] = {0, 1, 2, 3, 1};
    const uint64_t eq_sizes[] = {16, 8, 64, 32}, eq_want[] = {0, 16, 24, 88, 16};
    check_objects_to_offsets(eq_ids, 5, eq_sizes, 4, 1, eq_want, 120);
    const uint32_t g_ids[] = {0, 1, 0, 1, 0};
    const uint64_t g_sizes[] = {64, 32}, g_want[] = {0, 64, 0, 64, 0};
    check_objects_to_offsets(g_ids, 5, g_sizes, 2, 1, g_want, 96);
  }
  {
    const uint32_t eq_ids[] = {0, 1, 2, 3, 4, 5, 4, 2, 3};
    const uint64_t eq_sizes[] = {32, 32, 8, 16, 8, 64};
    const uint64_t eq_want[] = {0, 32, 64, 72, 88, 96, 88, 64, 72};
    check_objects_to_offsets(eq_ids, 9, eq_sizes, 6, 1, eq_want, 160);
    const uint32_t gio_ids[] = {0, 1, 0, 2, 3, 1, 3, 2, 0};
    const uint64_t gio_sizes[] = {32, 64, 16, 8};
    const uint64_t gio_want[] = {0, 32, 0, 96, 112, 32, 112, 96, 0};
    check_objects_to_offsets(gio_ids, 9, gio_sizes, 4, 1, gio_want, 120);
    const uint32_t gbb_ids[] = {0, 4, 2, 1, 3, 0, 2, 3, 1};
    const uint64_t gbb_sizes[] = {64, 16, 8, 8, 32};
    const uint64_t gbb_want[] = {0, 96, 80, 64, 88, 0, 80, 88, 64};
    check_objects_to_offsets(gbb_ids, 9, gbb_sizes, 5, 1, gbb_want, 128);
    const uint32_t best_ids[] = {1, 0, 2, 1, 3, 0, 1, 2, 0};
    const uint64_t best_sizes[] = {64, 32, 8, 8};
    const uint64_t best_want[] = {64, 0, 96, 64, 104, 0, 64, 96, 0};
    check_objects_to_offsets(best_ids, 9, best_sizes, 4, 1, best_want, 112);
    const uint32_t mcf_ids[] = {0, 1, 2, 0, 3, 1, 3, 2, 0};
    const uint64_t mcf_sizes[] = {32, 64, 8, 8};
    const uint64_t mcf_want[] = {0, 32, 96, 0, 104, 32, 104, 96, 0};
    check_objects_to_offsets(mcf_ids, 9, mcf_sizes, 4, 1, mcf_want, 112);
  }
}

static void objects_to_offsets_errors(void **state) {
  (void)state;
  tg_plan *p = NULL, *out = (tg_plan *)&out;
  assert_int_equal(tg_plan_objects_to_offsets(NULL, 1, NULL, &out), TG_ERROR_INVALID_ARGUMENT);
  assert_null(out);
  assert_int_equal(tg_plan_create(TG_MODE_OBJECTS, 2, 1, 1, NULL, &p), TG_OK);
  p->object_sizes[0] = (tg_extent){4, 4, 1};
  assert_int_equal(tg_plan_objects_to_offsets(p, 1, NULL, &out), TG_ERROR_UNSUPPORTED);
  tg_plan_destroy(p);
  assert_int_equal(tg_plan_create(TG_MODE_OFFSETS, 1, 1, 0, NULL, &p), TG_OK);
  assert_int_equal(tg_plan_objects_to_offsets(p, 1, NULL, &out), TG_ERROR_INVALID_ARGUMENT);
  tg_plan_destroy(p);
  const uint32_t ids[] = {0, 2};
  const uint64_t sizes[] = {8, 8};
  p = objects_plan(ids, 2, sizes, 2);
  assert_int_equal(tg_plan_objects_to_offsets(p, 1, NULL, &out), TG_ERROR_INVALID_ARGUMENT);
  assert_null(out);
  tg_plan_destroy(p);
  const uint32_t ids2[] = {0, 1};
  const uint64_t huge[] = {UINT64_MAX - 4, 8};
  p = objects_plan(ids2, 2, huge, 2);
  assert_int_equal(tg_plan_objects_to_offsets(p, 1, NULL, &out), TG_ERROR_OVERFLOW);
  tg_plan_destroy(p);
}

static void empty_and_one_record(void **state) {
  (void)state;
  const tg_usage_record one[] = {REC(16, 0, 1)};
  for (int s = 0; s < TG_STRATEGY_COUNT; ++s) {
    if (!tg_strategy_applies((tg_strategy)s, TG_MODE_OFFSETS, 1)) continue;
    tg_plan *p = plan_ok(NULL, 0, (tg_strategy)s, TG_FIT_BEST, 1, NULL);
    assert_int_equal(p->total, 0);
    assert_int_equal(p->object_count, 0);
    tg_plan_destroy(p);
    p = plan_ok(one, 1, (tg_strategy)s, TG_FIT_BEST, 1, NULL);
    assert_int_equal(p->offset_of[0], 0);
    assert_int_equal(p->total, 16);
    assert_int_equal(p->object_count, 1);
    tg_plan_destroy(p);
  }
}

static void unsupported_in_offsets_mode(void **state) {
  (void)state;
  tg_plan *p = (tg_plan *)&p;
  assert_int_equal(plan_offsets(tg_test_tflite_chain, 5, TG_STRATEGY_EQUALITY, TG_FIT_BEST, 1, NULL, NULL, &p),
                   TG_ERROR_UNSUPPORTED);
  assert_null(p);
  assert_int_equal(plan_offsets(tg_test_tflite_chain, 5, TG_STRATEGY_MIN_COST_FLOW, TG_FIT_BEST, 1, NULL, NULL, &p),
                   TG_ERROR_UNSUPPORTED);
  tg_plan_options o;
  memset(&o, 0, sizeof o);
  o.mode = TG_MODE_OFFSETS;
  o.strategy = TG_STRATEGY_GREEDY_BY_SIZE;
  const tg_usage_record tex[] = {{{2, 2, 1}, 0, 1, 0}};
  assert_int_equal(tg_plan_compute(tex, 1, 2, &o, NULL, &p), TG_ERROR_UNSUPPORTED);
}

static void greedy_by_size_chain(void **state) {
  (void)state;
  tg_plan *p = plan_ok(tg_test_tflite_chain, 5, TG_STRATEGY_GREEDY_BY_SIZE, TG_FIT_BEST, 1, NULL);
  const uint64_t want[] = {0, 64, 0, 64, 0};
  assert_offsets(p, want, 5, 96);
  tg_plan_destroy(p);
  /* OffsetAssignmentWithAlignment: offsets aligned, total = max(offset + size), not rounded. */
  p = plan_ok(tg_test_tflite_chain, 5, TG_STRATEGY_GREEDY_BY_SIZE, TG_FIT_BEST, 128, NULL);
  const uint64_t want128[] = {0, 128, 0, 128, 0};
  assert_offsets(p, want128, 5, 160);
  tg_plan_destroy(p);
}

static void greedy_by_size_complex(void **state) {
  (void)state;
  tg_plan *p = plan_ok(tg_test_tflite_complex, 9, TG_STRATEGY_GREEDY_BY_SIZE, TG_FIT_BEST, 1, NULL);
  const uint64_t want[] = {0, 32, 80, 64, 88, 0, 64, 72, 0};
  assert_offsets(p, want, 9, 96);
  tg_plan_destroy(p);
  /* The same per-record alignment as a plan alignment gives the same plan. */
  tg_usage_record r[COUNT(tg_test_tflite_chain)];
  memcpy(r, tg_test_tflite_chain, sizeof r);
  for (size_t i = 0; i < COUNT(r); ++i) r[i].alignment = 128;
  p = plan_ok(r, 5, TG_STRATEGY_GREEDY_BY_SIZE, TG_FIT_BEST, 0, NULL);
  const uint64_t want128[] = {0, 128, 0, 128, 0};
  assert_offsets(p, want128, 5, 160);
  tg_plan_destroy(p);
}

static void naive_matches_objects_to_offsets(void **state) {
  (void)state;
  tg_plan *p = plan_ok(tg_test_tflite_complex, 9, TG_STRATEGY_NAIVE, TG_FIT_BEST, 1, NULL);
  const uint64_t want[] = {0, 32, 64, 72, 88, 96, 160, 168, 176};
  assert_offsets(p, want, 9, 192);
  tg_plan_destroy(p);
  p = plan_ok(tg_test_tflite_chain, 5, TG_STRATEGY_NAIVE, TG_FIT_BEST, 1, NULL);
  const uint64_t want_chain[] = {0, 16, 24, 88, 120};
  assert_offsets(p, want_chain, 5, 128);
  tg_plan_destroy(p);
}

static void every_strategy_on_vectors(void **state) {
  (void)state;
  const tg_usage_record *sets[] = {tg_test_tflite_chain, tg_test_tflite_complex};
  const size_t counts[] = {COUNT(tg_test_tflite_chain), COUNT(tg_test_tflite_complex)};
  const uint64_t aligns[] = {0, 1, 8, 24, 128};
  for (size_t k = 0; k < 2; ++k) {
    for (size_t a = 0; a < COUNT(aligns); ++a) {
      for (int s = 0; s < TG_STRATEGY_COUNT; ++s) {
        if (!tg_strategy_applies((tg_strategy)s, TG_MODE_OFFSETS, 1)) continue;
        for (int f = 0; f < 3; ++f) {
          tg_plan *p = plan_ok(sets[k], counts[k], (tg_strategy)s, (tg_fit)f, aligns[a], NULL);
          if (aligns[a] <= 1) assert_true(p->total >= 96); /* peak live of both */
          tg_plan_destroy(p);
        }
      }
    }
  }
  /* `best` reaches the peak-live bound on both. */
  tg_plan *p = plan_ok(tg_test_tflite_complex, 9, TG_STRATEGY_BEST, TG_FIT_BEST, 1, NULL);
  assert_int_equal(p->total, 96);
  tg_plan_destroy(p);
}

/* ---- greedy-by-size against the reference -------------------------------------------- */

static void greedy_by_size_matches_tflite(void **state) {
  (void)state;
  tg_test_rng rng = {20240601};
  const uint64_t aligns[] = {1, 4, 24, 128};
  for (int iter = 0; iter < 600; ++iter) {
    size_t n = (size_t)tg_test_rng_range(&rng, 0, iter < 500 ? 40 : 700);
    tg_usage_record *r = calloc(n ? n : 1, sizeof *r);
    uint64_t *want = calloc(n ? n : 1, sizeof *want);
    assert_non_null(r);
    assert_non_null(want);
    random_1d(&rng, r, n);
    uint64_t align = aligns[tg_test_rng_range(&rng, 0, 3)];
    uint64_t total = ref_greedy_by_size(r, n, align, want);
    tg_plan *p = plan_ok(r, n, TG_STRATEGY_GREEDY_BY_SIZE, TG_FIT_BEST, align, NULL);
    assert_offsets(p, want, n, total);
    tg_plan_destroy(p);
    /* The relation path (every placed record checked) with a relation that allows
     * everything must give the same plan. */
    rel_state unused = {0, 0};
    tg_share_relation all = {tg_test_share_always, &unused, NULL, 0, NULL};
    p = plan_ok(r, n, TG_STRATEGY_GREEDY_BY_SIZE, TG_FIT_BEST, align, &all);
    assert_offsets(p, want, n, total);
    tg_plan_destroy(p);
    free(r);
    free(want);
  }
}

/* Greedy-by-size on r[0..n) with alignment `align` gives the reference's offsets and total. */
static void expect_reference_plan(const tg_usage_record *r, size_t n, uint64_t align) {
  uint64_t *want = calloc(n ? n : 1, sizeof *want);
  assert_non_null(want);
  uint64_t total = ref_greedy_by_size(r, n, align, want);
  tg_plan *p = plan_ok(r, n, TG_STRATEGY_GREEDY_BY_SIZE, TG_FIT_BEST, align, NULL);
  assert_offsets(p, want, n, total);
  tg_plan_destroy(p);
  free(want);
}

/* Records with their own alignments, mixed (powers of two and not, some at the global one)
 * or all equal (the walk then keeps ends aligned in the index). */
static void greedy_by_size_record_alignments(void **state) {
  (void)state;
  tg_test_rng rng = {4242};
  const uint64_t own[] = {0, 1, 8, 64, 24, 4096};
  for (int iter = 0; iter < 400; ++iter) {
    size_t n = (size_t)tg_test_rng_range(&rng, 1, iter < 300 ? 40 : 600);
    tg_usage_record *r = calloc(n, sizeof *r);
    assert_non_null(r);
    random_1d(&rng, r, n);
    int uniform = iter % 2 == 0;
    uint64_t one = own[tg_test_rng_range(&rng, 0, 5)];
    for (size_t i = 0; i < n; ++i) r[i].alignment = uniform ? one : own[tg_test_rng_range(&rng, 0, 5)];
    expect_reference_plan(r, n, tg_test_rng_range(&rng, 0, 1) ? 1 : 16);
    free(r);
  }
}

/* Greedy-by-size keeps offsets in units of the greatest common divisor of the sizes and the
 * alignments above 1, in 32 bits when they provably fit there: sets with large units, sets
 * whose unit one odd size breaks, and sets too large for 32 bits, against the reference. */
static void greedy_by_size_units_and_widths(void **state) {
  (void)state;
  tg_test_rng rng = {515};
  const uint64_t units[] = {1, 3, 48, 256, 4096};
  const uint64_t aligns[] = {1, 16, 24, 128, 4096};
  int wide = 0;
  for (int iter = 0; iter < 300; ++iter) {
    size_t n = (size_t)tg_test_rng_range(&rng, 1, iter < 200 ? 40 : 300);
    tg_usage_record *r = calloc(n, sizeof *r);
    assert_non_null(r);
    random_1d(&rng, r, n);
    uint64_t unit = units[tg_test_rng_range(&rng, 0, 4)];
    /* A third scaled up with one odd size (64-bit lists), some scaled with the unit kept
     * (a large unit), the rest plain, every fifth with one odd size. */
    uint64_t scale = iter % 3 == 0 || iter % 6 == 1 ? UINT64_C(1) << 16 : 1;
    int odd = iter % 3 == 0 || iter % 5 == 0;
    uint64_t align = aligns[tg_test_rng_range(&rng, 0, 4)];
    uint64_t sum = 0, g = align > 1 ? align : 0;
    for (size_t i = 0; i < n; ++i) {
      r[i].size.w = r[i].size.w * unit * scale + (odd && i == n / 2);
      sum += r[i].size.w;
      for (uint64_t a = g, b = r[i].size.w; b != 0;) { /* g = gcd(g, size) */
        uint64_t t = a % b;
        a = b;
        b = t;
        g = a;
      }
    }
    if (g != 0 && sum / g >= (UINT64_C(1) << 32)) wide++; /* too large for 32-bit units */
    expect_reference_plan(r, n, align);
    free(r);
  }
  assert_true(wide > 30); /* the 64-bit lists were exercised */
}

/* Long-lived records among short ones: searches span many time blocks. */
static void greedy_by_size_mixed_lifetimes(void **state) {
  (void)state;
  tg_test_rng rng = {77};
  for (int iter = 0; iter < 20; ++iter) {
    size_t n = 3000;
    tg_usage_record *r = calloc(n, sizeof *r);
    assert_non_null(r);
    for (size_t i = 0; i < n; ++i) {
      uint32_t first = (uint32_t)tg_test_rng_range(&rng, 0, 2000);
      uint64_t kind = tg_test_rng_range(&rng, 0, 20);
      uint32_t len = kind == 0 ? (uint32_t)tg_test_rng_range(&rng, 0, 2000)
                   : kind < 5  ? (uint32_t)tg_test_rng_range(&rng, 0, 200)
                               : (uint32_t)tg_test_rng_range(&rng, 0, 3);
      r[i] = (tg_usage_record){{tg_test_rng_range(&rng, 0, 1u << 20), 1, 1}, first, first + len, 0};
    }
    expect_reference_plan(r, n, 16);
    free(r);
  }
}

/* Input order changes only tie order: with distinct sizes, each record keeps its offset. */
static void shuffled_inputs(void **state) {
  (void)state;
  tg_test_rng rng = {5};
  for (int iter = 0; iter < 100; ++iter) {
    size_t n = (size_t)tg_test_rng_range(&rng, 1, 50);
    tg_usage_record *r = calloc(n, sizeof *r), *s = calloc(n, sizeof *s);
    size_t *perm = calloc(n, sizeof *perm);
    assert_non_null(r);
    assert_non_null(s);
    assert_non_null(perm);
    for (size_t i = 0; i < n; ++i) {
      uint32_t first = (uint32_t)(i * 3 + tg_test_rng_range(&rng, 0, 2)); /* distinct */
      r[i] = (tg_usage_record){{1000 + i * 7 + tg_test_rng_range(&rng, 0, 6), 1, 1}, first,
                               first + (uint32_t)tg_test_rng_range(&rng, 0, 9), 0};
      perm[i] = i;
    }
    for (size_t i = n; i > 1; --i) {
      size_t j = (size_t)tg_test_rng_range(&rng, 0, i - 1), t = perm[i - 1];
      perm[i - 1] = perm[j];
      perm[j] = t;
    }
    for (size_t i = 0; i < n; ++i) s[i] = r[perm[i]];
    const tg_strategy strategies[] = {TG_STRATEGY_GREEDY_BY_SIZE, TG_STRATEGY_GREEDY_IN_ORDER,
                                      TG_STRATEGY_GREEDY_BY_BREADTH};
    for (size_t k = 0; k < COUNT(strategies); ++k) {
      for (int f = 0; f < 3; ++f) {
        tg_plan *a = plan_ok(r, n, strategies[k], (tg_fit)f, 8, NULL);
        tg_plan *b = plan_ok(s, n, strategies[k], (tg_fit)f, 8, NULL);
        assert_int_equal(a->total, b->total);
        for (size_t i = 0; i < n; ++i) assert_int_equal(b->offset_of[i], a->offset_of[perm[i]]);
        tg_plan_destroy(a);
        tg_plan_destroy(b);
      }
    }
    free(r);
    free(s);
    free(perm);
  }
}

/* ---- greedy-in-order: fits, coalescing, the top ---------------------------------------- */

static void in_order_fits(void **state) {
  (void)state;
  /* Three holes at time 2: [0,20), [25,35), [40,70); a record of 8 goes to the lowest (first),
   * the smallest (best) or the largest (worst). */
  const tg_usage_record r[] = {REC(20, 0, 1), REC(5, 0, 3),  REC(10, 0, 1), REC(5, 0, 3),
                               REC(30, 0, 1), REC(5, 0, 3),  REC(8, 2, 3)};
  const uint64_t base[] = {0, 20, 25, 35, 40, 70};
  const uint64_t expect_last[3] = {25, 0, 40}; /* indexed by tg_fit: best, first, worst */
  for (int f = 0; f < 3; ++f) {
    tg_plan *p = plan_ok(r, 7, TG_STRATEGY_GREEDY_IN_ORDER, (tg_fit)f, 1, NULL);
    for (size_t i = 0; i < 6; ++i) assert_int_equal(p->offset_of[i], base[i]);
    assert_int_equal(p->offset_of[6], expect_last[f]);
    assert_int_equal(p->total, 75);
    tg_plan_destroy(p);
  }
}

static void in_order_coalesces_and_grows_the_top(void **state) {
  (void)state;
  /* Two neighbours freed together form one block of 20. */
  const tg_usage_record merge[] = {REC(10, 0, 1), REC(10, 0, 1), REC(20, 2, 3)};
  for (int f = 0; f < 3; ++f) {
    tg_plan *p = plan_ok(merge, 3, TG_STRATEGY_GREEDY_IN_ORDER, (tg_fit)f, 1, NULL);
    assert_int_equal(p->offset_of[2], 0);
    assert_int_equal(p->total, 20);
    tg_plan_destroy(p);
  }
  /* The free block at the top is extended rather than skipped. */
  const tg_usage_record top[] = {REC(10, 0, 3), REC(10, 0, 1), REC(15, 2, 3)};
  tg_plan *p = plan_ok(top, 3, TG_STRATEGY_GREEDY_IN_ORDER, TG_FIT_BEST, 1, NULL);
  assert_int_equal(p->offset_of[2], 10);
  assert_int_equal(p->total, 25);
  tg_plan_destroy(p);
  /* Alignment: padding stays free; a record that does not fit once aligned goes on top. */
  const tg_usage_record al[] = {REC(10, 0, 1), REC(10, 0, 3), REC(6, 0, 3), REC(4, 2, 3)};
  p = plan_ok(al, 4, TG_STRATEGY_GREEDY_IN_ORDER, TG_FIT_FIRST, 16, NULL);
  const uint64_t want[] = {0, 16, 32, 0};
  assert_offsets(p, want, 4, 38);
  tg_plan_destroy(p);
  /* Freed blocks are reused in the Chain vector: the peak-live bound. */
  p = plan_ok(tg_test_tflite_chain, 5, TG_STRATEGY_GREEDY_IN_ORDER, TG_FIT_BEST, 1, NULL);
  assert_true(p->total <= 128);
  tg_plan_destroy(p);
}

/* ---- zero sizes, alignment, overflow --------------------------------------------------- */

static void zero_size_records(void **state) {
  (void)state;
  const tg_usage_record r[] = {REC(0, 0, 5), REC(16, 0, 2), REC(0, 1, 1), REC(8, 1, 3),
                               REC(0, 3, 4), REC(0, 0, 0)};
  uint64_t want[6];
  uint64_t total = ref_greedy_by_size(r, 6, 1, want);
  for (int s = 0; s < TG_STRATEGY_COUNT; ++s) {
    if (!tg_strategy_applies((tg_strategy)s, TG_MODE_OFFSETS, 1)) continue;
    for (int f = 0; f < 3; ++f) {
      tg_plan *p = plan_ok(r, 6, (tg_strategy)s, (tg_fit)f, 1, NULL);
      if (s == TG_STRATEGY_GREEDY_BY_SIZE) assert_offsets(p, want, 6, total);
      if (s == TG_STRATEGY_GREEDY_IN_ORDER || s == TG_STRATEGY_GREEDY_BY_BREADTH) {
        assert_int_equal(p->offset_of[0], 0);
        assert_int_equal(p->offset_of[2], 0);
      }
      tg_plan_destroy(p);
    }
  }
  /* Only zero sizes. */
  const tg_usage_record z[] = {REC(0, 0, 1), REC(0, 0, 1)};
  tg_plan *p = plan_ok(z, 2, TG_STRATEGY_BEST, TG_FIT_BEST, 64, NULL);
  assert_int_equal(p->total, 0);
  tg_plan_destroy(p);
}

static void per_record_alignment(void **state) {
  (void)state;
  tg_test_rng rng = {99};
  const uint64_t aligns[] = {0, 1, 2, 8, 24, 256, 4096};
  for (int iter = 0; iter < 200; ++iter) {
    size_t n = (size_t)tg_test_rng_range(&rng, 1, 60);
    tg_usage_record *r = calloc(n, sizeof *r);
    assert_non_null(r);
    random_1d(&rng, r, n);
    for (size_t i = 0; i < n; ++i) r[i].alignment = aligns[tg_test_rng_range(&rng, 0, 6)];
    uint64_t plan_align = aligns[tg_test_rng_range(&rng, 0, 4)];
    for (int s = 0; s < TG_STRATEGY_COUNT; ++s) {
      if (!tg_strategy_applies((tg_strategy)s, TG_MODE_OFFSETS, 1)) continue;
      for (int f = 0; f < 3; ++f) {
        tg_plan *p = plan_ok(r, n, (tg_strategy)s, (tg_fit)f, plan_align, NULL);
        for (size_t i = 0; i < n; ++i) {
          uint64_t a = r[i].alignment > plan_align ? r[i].alignment : plan_align;
          if (a > 1) assert_int_equal(p->offset_of[i] % a, 0);
        }
        tg_plan_destroy(p);
      }
    }
    free(r);
  }
}

static void overflow_is_reported(void **state) {
  (void)state;
  const uint64_t big = UINT64_C(1) << 63;
  const tg_usage_record r[] = {REC(big, 0, 1), REC(big, 0, 1), REC(16, 0, 1)};
  for (int s = 0; s < TG_STRATEGY_COUNT; ++s) {
    if (!tg_strategy_applies((tg_strategy)s, TG_MODE_OFFSETS, 1)) continue;
    for (int f = 0; f < 3; ++f) {
      tg_failing_allocator fa; /* counts blocks: a failing strategy must free everything */
      tg_failing_allocator_init(&fa, NULL, 0);
      tg_plan *p = (tg_plan *)&p;
      assert_int_equal(plan_offsets(r, 3, (tg_strategy)s, (tg_fit)f, 1, NULL, &fa.base, &p),
                       TG_ERROR_OVERFLOW);
      assert_null(p);
      if (fa.live_blocks != 0)
        fail_msg("%s: %lld blocks leaked on overflow", tg_strategy_name((tg_strategy)s),
                 (long long)fa.live_blocks);
    }
  }
  /* Disjoint in time, they share: no overflow. */
  const tg_usage_record ok[] = {REC(big, 0, 1), REC(big, 2, 3)};
  tg_plan *p = plan_ok(ok, 2, TG_STRATEGY_GREEDY_BY_SIZE, TG_FIT_BEST, 1, NULL);
  assert_int_equal(p->total, big);
  tg_plan_destroy(p);
}

/* ---- the may-share relation ----------------------------------------------------------- */

static void relation_is_honoured(void **state) {
  (void)state;
  tg_test_rng rng = {31337};
  for (int iter = 0; iter < 300; ++iter) {
    size_t n = (size_t)tg_test_rng_range(&rng, 0, iter < 280 ? 50 : 400);
    tg_usage_record *r = calloc(n ? n : 1, sizeof *r);
    assert_non_null(r);
    random_1d(&rng, r, n);
    rel_state rs = {tg_test_rng_next(&rng), 0};
    tg_share_relation rel = {random_may_share, &rs, NULL, 0, NULL};
    uint64_t align = tg_test_rng_range(&rng, 0, 1) ? 1 : 16;
    for (int s = 0; s < TG_STRATEGY_COUNT; ++s) {
      if (!tg_strategy_applies((tg_strategy)s, TG_MODE_OFFSETS, 1)) continue;
      /* The fit matters to greedy-in-order only; hill-climb (500 greedy passes) on a third. */
      if (s == TG_STRATEGY_HILL_CLIMB && iter % 3 != 0) continue;
      for (int f = 0; f < (s == TG_STRATEGY_GREEDY_IN_ORDER ? 3 : 1); ++f) {
        tg_plan *p = plan_ok(r, n, (tg_strategy)s, (tg_fit)f, align, &rel);
        /* Direct check, independent of the validator: every address-overlapping pair either
         * is disjoint in time and allowed, or ... nothing else. */
        for (size_t a = 0; a < n; ++a) {
          for (size_t b = a + 1; b < n; ++b) {
            if (r[a].size.w == 0 || r[b].size.w == 0) continue;
            int addr = p->offset_of[a] < p->offset_of[b] + r[b].size.w &&
                       p->offset_of[b] < p->offset_of[a] + r[a].size.w;
            if (!addr) continue;
            int time = r[a].first_task <= r[b].last_task && r[b].first_task <= r[a].last_task;
            if (time || !random_may_share(&rs, a, b))
              fail_msg("%s: records %zu and %zu overlap", tg_strategy_name((tg_strategy)s), a, b);
          }
        }
        tg_plan_destroy(p);
      }
    }
    free(r);
  }
}

/* A relation with windows, consistent with them by construction: records may share when
 * their windows (as given, which need not contain the intervals: planners widen them) are
 * disjoint, and otherwise when a hash of the pair says so (`refuse_pct` percent refused). */
typedef struct window_rel {
  uint64_t seed;
  unsigned refuse_pct;
  const uint64_t *lo, *hi;
  size_t calls;
} window_rel;

static int window_may_share(void *user, size_t a, size_t b) {
  window_rel *w = user;
  w->calls++;
  if (w->hi[a] < w->lo[b] || w->hi[b] < w->lo[a]) return 1;
  return tg_test_pair_hash(w->seed, a, b) % 100 >= w->refuse_pct;
}

static void window_of(void *user, size_t r, uint64_t *lo, uint64_t *hi) {
  const window_rel *w = user;
  *lo = w->lo[r];
  *hi = w->hi[r];
}

/* Random windows around the records' intervals: mostly a little wider, some exact, some very
 * long or unbounded, some empty or beside the interval (the planner widens those). */
static void random_windows(tg_test_rng *rng, const tg_usage_record *r, size_t n, uint64_t *lo,
                           uint64_t *hi) {
  uint64_t reach = tg_test_rng_range(rng, 0, 40);
  for (size_t i = 0; i < n; ++i) {
    uint64_t f = r[i].first_task, l = r[i].last_task, k = tg_test_rng_range(rng, 0, 19);
    uint64_t below = tg_test_rng_range(rng, 0, reach), above = tg_test_rng_range(rng, 0, reach);
    lo[i] = f > below ? f - below : 0;
    hi[i] = l + above;
    if (k == 0) {
      lo[i] = f;
      hi[i] = l;
    } else if (k == 1) {
      hi[i] = UINT64_MAX;
    } else if (k == 2) {
      lo[i] = 0;
      hi[i] = l + 1000;
    } else if (k == 3) {
      lo[i] = l + 1; /* empty (lo > hi) */
      hi[i] = f;
    } else if (k == 4) {
      lo[i] = l + 2; /* after the interval */
      hi[i] = l + 2 + above;
    }
  }
}

static int same_offsets(const tg_plan *a, const tg_plan *b) {
  if (a->total != b->total || a->record_count != b->record_count) return 0;
  for (size_t i = 0; i < a->record_count; ++i)
    if (a->offset_of[i] != b->offset_of[i]) return 0;
  return 1;
}

/* Windows only speed the search up: with them every offsets strategy returns exactly the plan
 * it returns when it tests every pair (the same relation without windows), and the plan is
 * valid. */
static void window_relation_gives_the_same_plans(void **state) {
  (void)state;
  tg_test_rng rng = {2718281};
  const int iterations = (int)tg_test_scale(400, 600, 3000);
  for (int iter = 0; iter < iterations; ++iter) {
    size_t n = (size_t)tg_test_rng_range(&rng, 0, iter % 50 == 0 ? 600 : 60);
    tg_usage_record *r = calloc(n ? n : 1, sizeof *r);
    uint64_t *lo = calloc(n ? n : 1, sizeof *lo), *hi = calloc(n ? n : 1, sizeof *hi);
    assert_non_null(r);
    assert_non_null(lo);
    assert_non_null(hi);
    random_1d(&rng, r, n);
    if (iter % 7 == 0)
      for (size_t i = 0; i < n; ++i) r[i].alignment = (uint64_t)1 << tg_test_rng_range(&rng, 0, 5);
    random_windows(&rng, r, n, lo, hi);
    window_rel w = {tg_test_rng_next(&rng), (unsigned)tg_test_rng_range(&rng, 0, 100), lo, hi, 0};
    tg_share_relation with = {window_may_share, &w, window_of, 0, NULL};
    tg_share_relation without = {window_may_share, &w, NULL, 0, NULL};
    uint64_t align = tg_test_rng_range(&rng, 0, 2) == 0 ? 16 : 1;
    for (int s = TG_STRATEGY_GREEDY_IN_ORDER; s < TG_STRATEGY_COUNT; ++s) {
      if (!tg_strategy_applies((tg_strategy)s, TG_MODE_OFFSETS, 1)) continue;
      if (s == TG_STRATEGY_HILL_CLIMB && iter % 5 != 0) continue; /* 500 passes: a sample */
      for (int f = 0; f < (s == TG_STRATEGY_GREEDY_IN_ORDER ? 3 : 1); ++f) {
        tg_plan *pw = plan_ok(r, n, (tg_strategy)s, (tg_fit)f, align, &with);
        tg_plan *pn = plan_ok(r, n, (tg_strategy)s, (tg_fit)f, align, &without);
        if (!same_offsets(pw, pn))
          fail_msg("iteration %d, %s fit %s, %zu records: windows changed the plan (total %llu vs %llu)",
                   iter, tg_strategy_name((tg_strategy)s), tg_fit_name((tg_fit)f), n,
                   (unsigned long long)pw->total, (unsigned long long)pn->total);
        tg_plan_destroy(pw);
        tg_plan_destroy(pn);
      }
    }
    free(r);
    free(lo);
    free(hi);
  }
}

/* The windows are used: with short windows over a long run of tasks, the planners ask the
 * relation about far fewer pairs than when they test every pair. */
static void window_relation_prunes_pairs(void **state) {
  (void)state;
  tg_test_rng rng = {99};
  size_t n = 2000;
  tg_usage_record *r = calloc(n, sizeof *r);
  uint64_t *lo = calloc(n, sizeof *lo), *hi = calloc(n, sizeof *hi);
  assert_non_null(r);
  assert_non_null(lo);
  assert_non_null(hi);
  for (size_t i = 0; i < n; ++i) {
    uint32_t f = (uint32_t)tg_test_rng_range(&rng, 0, 4000);
    r[i] = (tg_usage_record){{tg_test_rng_range(&rng, 1, 1000), 1, 1}, f, f + (uint32_t)tg_test_rng_range(&rng, 0, 4), 0};
    lo[i] = f > 10 ? f - 10 : 0;
    hi[i] = r[i].last_task + 10;
  }
  window_rel w = {5, 50, lo, hi, 0};
  tg_share_relation with = {window_may_share, &w, window_of, 0, NULL};
  tg_share_relation without = {window_may_share, &w, NULL, 0, NULL};
  static const tg_strategy k_strategies[] = {TG_STRATEGY_GREEDY_IN_ORDER, TG_STRATEGY_GREEDY_BY_BREADTH,
                                             TG_STRATEGY_GREEDY_BY_SIZE};
  for (size_t k = 0; k < 3; ++k) {
    tg_plan *pw = NULL, *pn = NULL;
    w.calls = 0;
    assert_int_equal(plan_offsets(r, n, k_strategies[k], TG_FIT_BEST, 1, &with, NULL, &pw), TG_OK);
    size_t calls_with = w.calls;
    w.calls = 0;
    assert_int_equal(plan_offsets(r, n, k_strategies[k], TG_FIT_BEST, 1, &without, NULL, &pn), TG_OK);
    size_t calls_without = w.calls;
    assert_true(same_offsets(pw, pn));
    if (calls_with * 20 > calls_without)
      fail_msg("%s: %zu relation calls with windows, %zu without", tg_strategy_name(k_strategies[k]),
               calls_with, calls_without);
    tg_plan_destroy(pw);
    tg_plan_destroy(pn);
  }
  free(r);
  free(lo);
  free(hi);
}

/* A relation that forbids all sharing forces every record apart. */
static void relation_forbidding_everything(void **state) {
  (void)state;
  tg_share_relation rel = {tg_test_share_never, NULL, NULL, 0, NULL};
  for (int s = 0; s < TG_STRATEGY_COUNT; ++s) {
    if (!tg_strategy_applies((tg_strategy)s, TG_MODE_OFFSETS, 1)) continue;
    tg_plan *p = plan_ok(tg_test_tflite_chain, 5, (tg_strategy)s, TG_FIT_BEST, 1, &rel);
    assert_int_equal(p->total, 128);
    tg_plan_destroy(p);
  }
}

/* ---- allocation failures --------------------------------------------------------------- */

static void allocation_failures(void **state) {
  (void)state;
  tg_test_rng rng = {4};
  tg_usage_record r[80];
  random_1d(&rng, r, 80);
  rel_state rs = {1, 0};
  tg_share_relation rel = {random_may_share, &rs, NULL, 0, NULL};
  uint64_t lo[80], hi[80];
  random_windows(&rng, r, 80, lo, hi);
  window_rel w = {3, 30, lo, hi, 0};
  tg_share_relation windowed = {window_may_share, &w, window_of, 0, NULL};
  for (int with_rel = 0; with_rel < 3; ++with_rel) {
    for (int s = 0; s < TG_STRATEGY_COUNT; ++s) {
      if (!tg_strategy_applies((tg_strategy)s, TG_MODE_OFFSETS, 1)) continue;
      tg_plan_options o = {
          .mode = TG_MODE_OFFSETS, .strategy = (tg_strategy)s, .fit = TG_FIT_WORST, .alignment = 8,
          .relation = with_rel == 0 ? NULL : with_rel == 1 ? &rel : &windowed
      };
      tg_test_plan_fault_walk(r, 80, 1, &o);
    }
  }
  /* bounds and the conversion too */
  for (uint64_t k = 1;; ++k) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, k);
    tg_bounds b;
    tg_status st = tg_bounds_compute(r, 80, 1, &fa.base, &b);
    if (tg_test_walk_step(&fa, st, TG_OK)) break;
  }
  const uint32_t ids[] = {0, 1, 0};
  const uint64_t sizes[] = {8, 8};
  tg_plan *objects = objects_plan(ids, 3, sizes, 2);
  for (uint64_t k = 1;; ++k) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, k);
    tg_plan *p = NULL;
    tg_status st = tg_plan_objects_to_offsets(objects, 4, &fa.base, &p);
    if (fa.failures == 0) {
      assert_int_equal(st, TG_OK);
      tg_plan_destroy(p);
      assert_int_equal(fa.live_blocks, 0);
      break;
    }
    assert_int_equal(st, TG_ERROR_OUT_OF_HOST_MEMORY);
    assert_int_equal(fa.live_blocks, 0);
  }
  tg_plan_destroy(objects);
}

TG_TEST_MAIN(cmocka_unit_test(objects_to_offsets_vectors),
             cmocka_unit_test(objects_to_offsets_harness_tables),
             cmocka_unit_test(objects_to_offsets_errors), cmocka_unit_test(empty_and_one_record),
             cmocka_unit_test(unsupported_in_offsets_mode), cmocka_unit_test(greedy_by_size_chain),
             cmocka_unit_test(greedy_by_size_complex),
             cmocka_unit_test(naive_matches_objects_to_offsets),
             cmocka_unit_test(every_strategy_on_vectors),
             cmocka_unit_test(greedy_by_size_matches_tflite),
             cmocka_unit_test(greedy_by_size_mixed_lifetimes),
             cmocka_unit_test(greedy_by_size_record_alignments),
             cmocka_unit_test(greedy_by_size_units_and_widths), cmocka_unit_test(shuffled_inputs),
             cmocka_unit_test(in_order_fits),
             cmocka_unit_test(in_order_coalesces_and_grows_the_top),
             cmocka_unit_test(zero_size_records), cmocka_unit_test(per_record_alignment),
             cmocka_unit_test(overflow_is_reported), cmocka_unit_test(relation_is_honoured),
             cmocka_unit_test(relation_forbidding_everything),
             cmocka_unit_test(window_relation_gives_the_same_plans),
             cmocka_unit_test(window_relation_prunes_pairs), cmocka_unit_test(allocation_failures))
