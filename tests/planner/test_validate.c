/* The validator: hand-made broken plans of every kind are rejected with a message naming the
 * records and the rule; valid plans, including edge cases, are accepted. */
#include "support/tg_test.h"
#include "support/tg_planner_test.h"

#include <stdlib.h>
#include <string.h>

#define REC(size, first, last) {{(size), 1, 1}, (first), (last), 0}
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static tg_plan *objects(uint32_t dims, const uint32_t *ids, size_t n, const tg_extent *sizes,
                        size_t k) {
  tg_plan *p = NULL;
  assert_int_equal(tg_plan_create(TG_MODE_OBJECTS, dims, n, k, NULL, &p), TG_OK);
  for (size_t i = 0; i < n; ++i) p->object_of[i] = ids[i];
  p->total = 0;
  for (size_t i = 0; i < k; ++i) {
    p->object_sizes[i] = sizes[i];
    p->total += sizes[i].w * sizes[i].h * sizes[i].d;
  }
  return p;
}

static tg_plan *offsets(const uint64_t *offs, size_t n, uint64_t total) {
  tg_plan *p = NULL;
  assert_int_equal(tg_plan_create(TG_MODE_OFFSETS, 1, n, 0, NULL, &p), TG_OK);
  for (size_t i = 0; i < n; ++i) p->offset_of[i] = offs[i];
  p->total = total;
  return p;
}

static void expect_valid(const tg_usage_record *r, size_t n, uint32_t dims, const tg_plan *p,
                         uint64_t alignment, const tg_share_relation *rel) {
  tg_test_assert_valid(r, n, dims, p, alignment, rel);
}

/* Rejected with TG_ERROR_INVALID_PLAN, and the message contains each of `words` (NULL-ended). */
static void expect_invalid(const tg_usage_record *r, size_t n, uint32_t dims, const tg_plan *p,
                           uint64_t alignment, const tg_share_relation *rel, const char *w1,
                           const char *w2) {
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_status st = tg_plan_validate(r, n, dims, p, alignment, rel, NULL, &err);
  if (st != TG_ERROR_INVALID_PLAN) fail_msg("expected INVALID_PLAN, got %s", tg_status_name(st));
  if (w1 && !strstr(err.message, w1)) fail_msg("message \"%s\" lacks \"%s\"", err.message, w1);
  if (w2 && !strstr(err.message, w2)) fail_msg("message \"%s\" lacks \"%s\"", err.message, w2);
}

static tg_extent e1(uint64_t w) { return (tg_extent){w, 1, 1}; }

/* ---- objects mode ---------------------------------------------------------------------- */

static void objects_valid(void **state) {
  (void)state;
  const uint32_t ids[] = {0, 1, 0, 1, 0};
  const tg_extent sizes[] = {e1(64), e1(32)};
  tg_plan *p = objects(1, ids, 5, sizes, 2);
  expect_valid(tg_test_tflite_chain, 5, 1, p, 0, NULL);
  /* A bigger object than needed, and an object with no records, are still valid. */
  p->object_sizes[1] = e1(40);
  p->total = 104;
  expect_valid(tg_test_tflite_chain, 5, 1, p, 0, NULL);
  tg_plan_destroy(p);
  const tg_extent sizes3[] = {e1(64), e1(32), e1(5)};
  p = objects(1, ids, 5, sizes3, 3);
  expect_valid(tg_test_tflite_chain, 5, 1, p, 0, NULL);
  tg_plan_destroy(p);
  /* first == last records and intervals that touch without intersecting. */
  const tg_usage_record pts[] = {REC(4, 3, 3), REC(4, 4, 4), REC(4, 0, 2), REC(4, 5, 9)};
  const uint32_t one[] = {0, 0, 0, 0};
  const tg_extent s4[] = {e1(4)};
  p = objects(1, one, 4, s4, 1);
  expect_valid(pts, 4, 1, p, 0, NULL);
  tg_plan_destroy(p);
  /* No records. */
  p = objects(1, NULL, 0, NULL, 0);
  expect_valid(NULL, 0, 1, p, 0, NULL);
  tg_plan_destroy(p);
}

static void objects_rejected(void **state) {
  (void)state;
  /* Records 0 and 1 intersect at task 1 (inclusive intervals). */
  const uint32_t share01[] = {0, 0, 1, 2, 3};
  const tg_extent sizes[] = {e1(16), e1(64), e1(32), e1(8)};
  tg_plan *p = objects(1, share01, 5, sizes, 4);
  expect_invalid(tg_test_tflite_chain, 5, 1, p, 0, NULL, "records 0 and 1", "intersect");
  tg_plan_destroy(p);
  /* A long record hides behind a short one: 0 [0,10], 1 [1,1], 2 [5,6] in one object. */
  const tg_usage_record hidden[] = {REC(4, 0, 10), REC(4, 1, 1), REC(4, 5, 6)};
  const uint32_t all0[] = {0, 0, 0};
  const tg_extent s4[] = {e1(4)};
  p = objects(1, all0, 3, s4, 1);
  expect_invalid(hidden, 3, 1, p, 0, NULL, "records 0 and 1", NULL);
  tg_plan_destroy(p);
  /* Id out of range. */
  const uint32_t bad_id[] = {0, 1, 0, 1, 2};
  const tg_extent two[] = {e1(64), e1(32)};
  p = objects(1, bad_id, 5, two, 2);
  expect_invalid(tg_test_tflite_chain, 5, 1, p, 0, NULL, "record 4", "out of range");
  tg_plan_destroy(p);
  /* Object too small. */
  const uint32_t ids[] = {0, 1, 0, 1, 0};
  const tg_extent small[] = {e1(63), e1(32)};
  p = objects(1, ids, 5, small, 2);
  expect_invalid(tg_test_tflite_chain, 5, 1, p, 0, NULL, "record 2", "width");
  tg_plan_destroy(p);
  /* Total wrong. */
  p = objects(1, ids, 5, two, 2);
  p->total = 95;
  expect_invalid(tg_test_tflite_chain, 5, 1, p, 0, NULL, "total", NULL);
  tg_plan_destroy(p);
  /* Total overflows. */
  const tg_extent huge[] = {e1(UINT64_MAX), e1(32)};
  p = objects(1, ids, 5, huge, 2);
  expect_invalid(tg_test_tflite_chain, 5, 1, p, 0, NULL, "overflow", NULL);
  tg_plan_destroy(p);
}

static void objects_too_small_in_one_dimension(void **state) {
  (void)state;
  const tg_usage_record r2[] = {{{4, 8, 1}, 0, 1, 0}, {{8, 4, 1}, 2, 3, 0}};
  const uint32_t ids[] = {0, 0};
  const tg_extent ok[] = {{8, 8, 1}};
  tg_plan *p = objects(2, ids, 2, ok, 1);
  expect_valid(r2, 2, 2, p, 0, NULL);
  tg_plan_destroy(p);
  const tg_extent shallow[] = {{8, 7, 1}};
  p = objects(2, ids, 2, shallow, 1);
  expect_invalid(r2, 2, 2, p, 0, NULL, "record 0", "height");
  tg_plan_destroy(p);
  const tg_usage_record r3[] = {{{2, 2, 5}, 0, 1, 0}, {{2, 2, 2}, 2, 3, 0}};
  const tg_extent flat[] = {{2, 2, 4}};
  p = objects(3, ids, 2, flat, 1);
  expect_invalid(r3, 2, 3, p, 0, NULL, "record 0", "depth");
  tg_plan_destroy(p);
}

static int forbid_0_2(void *user, size_t a, size_t b) {
  (void)user;
  return !((a == 0 && b == 2) || (a == 2 && b == 0));
}

static void objects_and_relation(void **state) {
  (void)state;
  const uint32_t ids[] = {0, 1, 0, 1, 0};
  const tg_extent sizes[] = {e1(64), e1(32)};
  tg_plan *p = objects(1, ids, 5, sizes, 2);
  tg_share_relation rel = {forbid_0_2, NULL, NULL, 0, NULL};
  expect_invalid(tg_test_tflite_chain, 5, 1, p, 0, &rel, "records 0 and 2", "relation");
  /* Records 0 and 2 apart: fine. */
  p->object_of[0] = 2;
  p->object_count = 2; /* id 2 out of range now */
  expect_invalid(tg_test_tflite_chain, 5, 1, p, 0, &rel, "record 0", "out of range");
  tg_plan_destroy(p);
  const uint32_t ids2[] = {2, 1, 0, 1, 0};
  const tg_extent sizes2[] = {e1(64), e1(32), e1(16)};
  p = objects(1, ids2, 5, sizes2, 3);
  expect_valid(tg_test_tflite_chain, 5, 1, p, 0, &rel);
  tg_plan_destroy(p);
}

/* ---- offsets mode ---------------------------------------------------------------------- */

static void offsets_valid(void **state) {
  (void)state;
  const uint64_t offs[] = {0, 64, 0, 64, 0};
  tg_plan *p = offsets(offs, 5, 96);
  expect_valid(tg_test_tflite_chain, 5, 1, p, 0, NULL);
  expect_valid(tg_test_tflite_chain, 5, 1, p, 64, NULL);
  tg_plan_destroy(p);
  /* Touching address ranges at the same time; zero-size records anywhere; first == last. */
  const tg_usage_record r[] = {REC(10, 0, 5), REC(10, 0, 5), REC(0, 0, 5), REC(0, 2, 2),
                               REC(5, 3, 3), REC(5, 4, 4)};
  const uint64_t o2[] = {0, 10, 5, 12, 20, 20};
  p = offsets(o2, 6, 25);
  expect_valid(r, 6, 1, p, 0, NULL);
  tg_plan_destroy(p);
  /* Only zero sizes: the total is still max(offset + size). */
  const tg_usage_record z[] = {REC(0, 0, 1), REC(0, 0, 1)};
  const uint64_t oz[] = {0, 16};
  p = offsets(oz, 2, 16);
  expect_valid(z, 2, 1, p, 0, NULL);
  tg_plan_destroy(p);
  p = offsets(NULL, 0, 0);
  expect_valid(NULL, 0, 1, p, 0, NULL);
  tg_plan_destroy(p);
  /* Near the top of the address space. */
  const tg_usage_record hi[] = {REC(UINT64_C(1) << 62, 0, 1), REC(16, 0, 1)};
  const uint64_t ohi[] = {UINT64_MAX - (UINT64_C(1) << 62) - 16, UINT64_MAX - 16};
  p = offsets(ohi, 2, UINT64_MAX);
  expect_valid(hi, 2, 1, p, 0, NULL);
  tg_plan_destroy(p);
}

static void offsets_rejected(void **state) {
  (void)state;
  /* Records 2 and 3 meet at task 3 and overlap in [63, 64). */
  const uint64_t overlap[] = {0, 64, 0, 63, 0};
  tg_plan *p = offsets(overlap, 5, 95);
  expect_invalid(tg_test_tflite_chain, 5, 1, p, 0, NULL, "records 2 and 3", "overlap");
  tg_plan_destroy(p);
  /* Same offset, both sized, same time. */
  const uint64_t same[] = {0, 64, 0, 0, 0};
  p = offsets(same, 5, 72);
  expect_invalid(tg_test_tflite_chain, 5, 1, p, 0, NULL, "records 2 and 3", NULL);
  tg_plan_destroy(p);
  /* A long record overlapping one that is not its offset neighbour. */
  const tg_usage_record r[] = {REC(100, 0, 9), REC(10, 1, 2), REC(10, 3, 4)};
  const uint64_t o[] = {0, 100, 50};
  p = offsets(o, 3, 110);
  expect_invalid(r, 3, 1, p, 0, NULL, "records 0 and 2", NULL);
  tg_plan_destroy(p);
  /* Misaligned (plan alignment, then record alignment). */
  const uint64_t offs[] = {0, 64, 0, 64, 0};
  p = offsets(offs, 5, 96);
  expect_invalid(tg_test_tflite_chain, 5, 1, p, 128, NULL, "record 1", "alignment 128");
  tg_usage_record ra[5];
  memcpy(ra, tg_test_tflite_chain, sizeof ra);
  ra[3].alignment = 48;
  expect_invalid(ra, 5, 1, p, 16, NULL, "record 3", "alignment 48");
  /* Total wrong either way. */
  p->total = 97;
  expect_invalid(tg_test_tflite_chain, 5, 1, p, 0, NULL, "total 97", NULL);
  p->total = 95;
  expect_invalid(tg_test_tflite_chain, 5, 1, p, 0, NULL, "total 95", NULL);
  tg_plan_destroy(p);
  /* Overflow near 2^64. */
  const tg_usage_record big[] = {REC(32, 0, 1)};
  const uint64_t ob[] = {UINT64_MAX - 16};
  p = offsets(ob, 1, UINT64_MAX);
  expect_invalid(big, 1, 1, p, 0, NULL, "record 0", "overflow");
  tg_plan_destroy(p);
}

static void offsets_and_relation(void **state) {
  (void)state;
  /* Records 0 [0,1] and 2 [2,3] share address 0 without meeting in time. */
  const uint64_t offs[] = {0, 64, 0, 64, 0};
  tg_plan *p = offsets(offs, 5, 96);
  tg_share_relation rel = {forbid_0_2, NULL, NULL, 0, NULL};
  expect_invalid(tg_test_tflite_chain, 5, 1, p, 0, &rel, "records 0 and 2", "relation");
  p->offset_of[0] = 96;
  p->total = 112;
  expect_valid(tg_test_tflite_chain, 5, 1, p, 0, &rel);
  tg_plan_destroy(p);
}

static void mismatches_and_bad_arguments(void **state) {
  (void)state;
  const uint64_t offs[] = {0, 64, 0, 64, 0};
  tg_plan *p = offsets(offs, 5, 96);
  expect_invalid(tg_test_tflite_chain, 4, 1, p, 0, NULL, "records", NULL); /* record count */
  const tg_usage_record tex[] = {{{2, 2, 1}, 0, 1, 0}, {{2, 2, 1}, 0, 1, 0}, {{2, 2, 1}, 0, 1, 0},
                                 {{2, 2, 1}, 0, 1, 0}, {{2, 2, 1}, 0, 1, 0}};
  expect_invalid(tex, 5, 2, p, 0, NULL, "1D", NULL); /* dims */
  p->mode = (tg_mode)7;
  expect_invalid(tg_test_tflite_chain, 5, 1, p, 0, NULL, "mode", NULL);
  p->mode = TG_MODE_OFFSETS;
  p->dims = 2;
  expect_invalid(tex, 5, 2, p, 0, NULL, "1D", NULL); /* offsets plans are 1D */
  p->dims = 1;
  tg_error_info err;
  assert_int_equal(tg_plan_validate(tg_test_tflite_chain, 5, 1, NULL, 0, NULL, NULL, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_plan_validate(NULL, 5, 1, p, 0, NULL, NULL, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_plan_validate(tg_test_tflite_chain, 5, 0, p, 0, NULL, NULL, &err), TG_ERROR_INVALID_ARGUMENT);
  const tg_usage_record backwards[] = {REC(16, 1, 0), REC(8, 1, 2), REC(64, 2, 3), REC(32, 3, 4),
                                       REC(8, 4, 5)};
  assert_int_equal(tg_plan_validate(backwards, 5, 1, p, 0, NULL, NULL, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "record 0"));
  /* The mode the plan claims decides which arrays it needs. */
  p->mode = TG_MODE_OBJECTS;
  expect_invalid(tg_test_tflite_chain, 5, 1, p, 0, NULL, "object", NULL);
  tg_plan_destroy(p);
}

/* ---- plans from the planner, and random breakage ------------------------------------------ */

static void planner_output_is_valid_and_breakage_is_caught(void **state) {
  (void)state;
  tg_test_rng rng = {2718};
  for (int iter = 0; iter < 300; ++iter) {
    size_t n = (size_t)tg_test_rng_range(&rng, 2, 50);
    tg_usage_record *r = calloc(n, sizeof *r);
    assert_non_null(r);
    tg_test_random_spec spec = {1, n, (uint32_t)n, 6, 1000, 0, 0};
    tg_test_random_records(&rng, &spec, r);
    tg_plan_options o = {.mode = TG_MODE_OFFSETS, .strategy = TG_STRATEGY_GREEDY_BY_SIZE, .alignment = 8};
    tg_plan *p = NULL;
    assert_int_equal(tg_plan_compute(r, n, 1, &o, NULL, &p), TG_OK);
    expect_valid(r, n, 1, p, 8, NULL);
    /* Move one record onto another that meets it in time. */
    size_t a = 0, b = 0;
    int found = 0;
    for (a = 0; a < n && !found; ++a)
      for (b = 0; b < n && !found; ++b)
        if (a != b && r[a].first_task <= r[b].last_task && r[b].first_task <= r[a].last_task) found = 1;
    if (found) {
      --a;
      --b;
      p->offset_of[a] = p->offset_of[b];
      uint64_t total = 0;
      for (size_t i = 0; i < n; ++i)
        if (p->offset_of[i] + r[i].size.w > total) total = p->offset_of[i] + r[i].size.w;
      p->total = total;
      expect_invalid(r, n, 1, p, 8, NULL, "overlap", NULL);
    }
    tg_plan_destroy(p);
    free(r);
  }
}

static void allocation_failures(void **state) {
  (void)state;
  const uint64_t offs[] = {0, 64, 0, 64, 0};
  tg_plan *p = offsets(offs, 5, 96);
  tg_share_relation rel = {forbid_0_2, NULL, NULL, 0, NULL};
  for (uint64_t k = 1;; ++k) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, k);
    tg_error_info err;
    tg_status st = tg_plan_validate(tg_test_tflite_chain, 5, 1, p, 0, &rel, &fa.base, &err);
    if (tg_test_walk_step(&fa, st, TG_ERROR_INVALID_PLAN)) break;
  }
  tg_plan_destroy(p);
}

TG_TEST_MAIN(cmocka_unit_test(objects_valid), cmocka_unit_test(objects_rejected),
             cmocka_unit_test(objects_too_small_in_one_dimension),
             cmocka_unit_test(objects_and_relation), cmocka_unit_test(offsets_valid),
             cmocka_unit_test(offsets_rejected), cmocka_unit_test(offsets_and_relation),
             cmocka_unit_test(mismatches_and_bad_arguments),
             cmocka_unit_test(planner_output_is_valid_and_breakage_is_caught),
             cmocka_unit_test(allocation_failures))
