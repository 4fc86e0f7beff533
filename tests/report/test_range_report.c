/* Range plans reported size by size (tg_range_report_compute_size) and drawn against size
 * (tg_report_render_range_svg): known answers for the plan, the own best, the upper-bound plan,
 * the run-time pool's peak and the bound on a hand-made range; texels turned into bytes; parts
 * summed; the instance returned is the plan at that size and passes the validator; bad
 * arguments are refused. */
#include <stdlib.h>
#include <string.h>

#include "support/tg_test.h"
#include "support/tg_tools_test.h"
#include "tangram/range_plan.h"
#include "tangram/report.h"

/* A [0,1] 100 bytes, B [1,2] 10 W, C [2,3] 50 over W = lo..hi: every size's best is 100 + 10 W
 * (the peak live: B meets both); the pool allocates A, then B beside it (A still lives when B
 * is born), then C in A's block, freed: 100 + 10 W at its peak. */
static tg_range_records *abc(int64_t lo, int64_t hi, uint32_t dims) {
  tg_size_range range = {1, {{lo, hi, 1}}};
  uint64_t points = tg_size_range_point_count(&range);
  tg_extent *sizes = calloc(points * 3, sizeof *sizes);
  assert_non_null(sizes);
  for (uint64_t p = 0; p < points; ++p) {
    uint64_t w = (uint64_t)(lo + (int64_t)p);
    /* Texels: the same volumes as 2D extents (width x 1). */
    sizes[p * 3 + 0] = (tg_extent){100, 1, 1};
    sizes[p * 3 + 1] = (tg_extent){10 * w, 1, 1};
    sizes[p * 3 + 2] = (tg_extent){50, 1, 1};
  }
  const uint32_t first[3] = {0, 1, 2}, last[3] = {1, 2, 3};
  tg_range_records_desc d = {range, dims, 3, first, last, sizes, NULL};
  tg_range_records *rr = NULL;
  assert_int_equal(tg_range_records_create(&d, NULL, &rr), TG_OK);
  free(sizes);
  return rr;
}

static tg_range_plan *plan_of(const tg_range_records *rr, const tg_plan_options *o) {
  tg_range_plan *plan = NULL;
  assert_int_equal(tg_range_plan_compute(rr, o, NULL, NULL, &plan, NULL), TG_OK);
  return plan;
}

static void known_answers(void **state) {
  (void)state;
  tg_range_records *rr = abc(1, 40, 1);
  for (int mode = 0; mode < 2; ++mode) {
    tg_plan_options o = {0};
    o.mode = (tg_mode)mode;
    o.strategy = TG_STRATEGY_BEST;
    tg_range_plan *plan = plan_of(rr, &o);
    tg_range_report_part part = {rr, plan, &o, NULL};
    tg_plan *inst = NULL;
    assert_int_equal(tg_range_plan_create_instance(plan, NULL, &inst), TG_OK);
    tg_usage_record recs[3];
    for (uint64_t p = 0; p < 40; ++p) {
      const uint64_t w = p + 1, best = 100 + 10 * w;
      tg_range_report_size z;
      tg_plan *insts[1] = {inst};
      assert_int_equal(tg_range_report_compute_size(&part, 1, TG_PRECISION_FP32, p, insts, NULL, &z, NULL), TG_OK);
      assert_int_equal(z.point, p);
      assert_int_equal(z.dims[0], (int64_t)w);
      assert_int_equal(z.bytes, best);
      assert_int_equal(z.own_bytes, best);
      assert_int_equal(z.alone_bytes, best);
      assert_int_equal(z.upper_bound_bytes, 100 + 10 * 40);
      assert_int_equal(z.lower_bound, best);
      if (z.pool_bytes != best) fail_msg("W %llu: pool %llu, not %llu", (unsigned long long)w,
                                         (unsigned long long)z.pool_bytes, (unsigned long long)best);
      /* The instance holds the plan at that size. */
      assert_int_equal(inst->total, best);
      int64_t dims[1] = {(int64_t)w};
      assert_int_equal(tg_range_plan_instantiate(plan, dims, recs, inst), TG_OK);
      tg_test_assert_valid(recs, 3, 1, inst, 0, NULL);
    }
    tg_plan_destroy(inst);
    tg_range_plan_destroy(plan);
  }
  tg_range_records_destroy(rr);
}

/* Texel records are texel bytes each (16 at fp32, 8 at fp16); a byte part made of them pools
 * their images; parts add up. */
static void texels_bytes_and_parts(void **state) {
  (void)state;
  tg_range_records *tex = abc(1, 8, 2), *buf = abc(1, 8, 1);
  tg_plan_options o = {0};
  o.mode = TG_MODE_OBJECTS;
  o.strategy = TG_STRATEGY_GREEDY_BY_SIZE;
  tg_range_plan *pt = plan_of(tex, &o), *pb = plan_of(buf, &o);
  for (int prec = 0; prec < 2; ++prec) {
    const uint64_t texel = prec == 0 ? 16 : 8;
    tg_range_report_part parts[2] = {{tex, pt, &o, NULL}, {buf, pb, &o, NULL}};
    for (uint64_t p = 0; p < 8; ++p) {
      const uint64_t best = 100 + 10 * (p + 1);
      tg_range_report_size one, two;
      assert_int_equal(tg_range_report_compute_size(parts, 1, (tg_precision)prec, p, NULL, NULL, &one, NULL), TG_OK);
      assert_int_equal(one.bytes, best * texel);
      assert_int_equal(one.own_bytes, best * texel);
      assert_int_equal(one.lower_bound, best * texel);
      assert_int_equal(one.upper_bound_bytes, 180 * texel);
      /* Images are blocks of their own: the peak holds all three at task 1..2 at most. */
      assert_true(one.pool_bytes >= best * texel && one.pool_bytes <= (best + 50) * texel);
      assert_int_equal(tg_range_report_compute_size(parts, 2, (tg_precision)prec, p, NULL, NULL, &two, NULL), TG_OK);
      assert_int_equal(two.bytes, best * texel + best);
      assert_int_equal(two.own_bytes, best * texel + best);
      assert_int_equal(two.upper_bound_bytes, 180 * texel + 180);
      assert_true(two.pool_bytes >= one.pool_bytes + best);
    }
  }
  /* Byte records made of texels (one arena of textures): pooled as the images. */
  tg_plan_options off = {0};
  off.mode = TG_MODE_OFFSETS;
  off.strategy = TG_STRATEGY_GREEDY_BY_SIZE;
  tg_range_plan *po = plan_of(buf, &off);
  tg_range_report_part as_images = {buf, po, &off, tex}, as_buffers = {buf, po, &off, NULL};
  tg_range_report_size a, b;
  assert_int_equal(tg_range_report_compute_size(&as_images, 1, TG_PRECISION_FP32, 3, NULL, NULL, &a, NULL), TG_OK);
  assert_int_equal(tg_range_report_compute_size(&as_buffers, 1, TG_PRECISION_FP32, 3, NULL, NULL, &b, NULL), TG_OK);
  assert_int_equal(a.bytes, b.bytes);
  assert_int_equal(b.pool_bytes, 140);
  assert_true(a.pool_bytes >= 140 * 16);
  tg_range_plan_destroy(po);
  tg_range_plan_destroy(pt);
  tg_range_plan_destroy(pb);
  tg_range_records_destroy(tex);
  tg_range_records_destroy(buf);
}

static void refuses_bad_arguments(void **state) {
  (void)state;
  tg_range_records *rr = abc(1, 8, 1), *other = abc(2, 9, 1);
  tg_plan_options o = {0};
  o.strategy = TG_STRATEGY_GREEDY_BY_SIZE;
  tg_range_plan *plan = plan_of(rr, &o), *plan2 = plan_of(other, &o);
  tg_range_report_part part = {rr, plan, &o, NULL};
  tg_range_report_size z;
  tg_error_info err = {{0}};
  assert_int_equal(tg_range_report_compute_size(&part, 1, TG_PRECISION_FP32, 8, NULL, NULL, &z, &err),
                   TG_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "past the range"));
  assert_int_equal(tg_range_report_compute_size(NULL, 1, TG_PRECISION_FP32, 0, NULL, NULL, &z, NULL),
                   TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_range_report_compute_size(&part, 1, TG_PRECISION_COUNT, 0, NULL, NULL, &z, NULL),
                   TG_ERROR_INVALID_ARGUMENT);
  tg_range_report_part two[2] = {{rr, plan, &o, NULL}, {other, plan2, &o, NULL}};
  assert_int_equal(tg_range_report_compute_size(two, 2, TG_PRECISION_FP32, 0, NULL, NULL, &z, &err),
                   TG_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "another range"));
  assert_int_equal(tg_range_report_compute_size(&part, 1, TG_PRECISION_FP32, 0, NULL, NULL, NULL, NULL),
                   TG_ERROR_INVALID_ARGUMENT);
  tg_range_plan_destroy(plan);
  tg_range_plan_destroy(plan2);
  tg_range_records_destroy(rr);
  tg_range_records_destroy(other);
}

static size_t count_of(const char *text, const char *what) {
  size_t n = 0;
  for (const char *p = strstr(text, what); p; p = strstr(p + 1, what)) ++n;
  return n;
}

/* The chart: a polyline per figure with a point per size, a tooltip per size, the worst ratio
 * marked and named; two dimensions label sizes HxW. */
static void chart(void **state) {
  (void)state;
  tg_range_report_size sizes[4];
  memset(sizes, 0, sizeof sizes);
  for (int i = 0; i < 4; ++i) {
    sizes[i].dims[0] = 32 * (i + 1);
    sizes[i].dims[1] = 64;
    sizes[i].own_bytes = sizes[i].lower_bound = 1000u * (uint64_t)(i + 1);
    sizes[i].bytes = sizes[i].own_bytes + (i == 2 ? 300 : 0);
    sizes[i].upper_bound_bytes = 4300;
    sizes[i].pool_bytes = 2 * sizes[i].bytes;
  }
  char *svg = NULL;
  size_t len = 0;
  assert_int_equal(tg_report_render_range_svg(sizes, 4, 2, "a <title>", NULL, &svg, &len), TG_OK);
  assert_int_equal(strlen(svg), len);
  assert_int_equal(count_of(svg, "<polyline"), 5);
  assert_int_equal(count_of(svg, "<rect class=\"size\""), 4);
  tg_expect_all(svg, "a &lt;title&gt;", "worst ratio 1.1000 at 96x64",
                "<title>96x64\nplan 3300 bytes (1.1000 x own best)", "</svg>", NULL);
  tg_report_free(NULL, svg);
  assert_int_equal(tg_report_render_range_svg(sizes, 0, 1, NULL, NULL, &svg, NULL), TG_ERROR_INVALID_ARGUMENT);
  assert_null(svg);
  assert_int_equal(tg_report_render_range_svg(sizes, 4, 3, NULL, NULL, &svg, NULL), TG_ERROR_INVALID_ARGUMENT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(known_answers),
      cmocka_unit_test(texels_bytes_and_parts),
      cmocka_unit_test(refuses_bad_arguments),
      cmocka_unit_test(chart),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
