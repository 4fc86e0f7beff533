#include "support/tg_test.h"

#include "support/tg_planner_test.h"

#define REC(size, first, last) {{(size), 1, 1}, (first), (last), 0}

const tg_usage_record tg_test_tflite_chain[5] = {
    REC(16, 0, 1), REC(8, 1, 2), REC(64, 2, 3), REC(32, 3, 4), REC(8, 4, 5),
};
const tg_usage_record tg_test_tflite_complex[9] = {
    REC(32, 0, 1), REC(32, 1, 4), REC(8, 2, 5), REC(16, 3, 5), REC(8, 4, 5),
    REC(64, 5, 7), REC(8, 6, 8),  REC(8, 7, 8), REC(16, 8, 9),
};

uint64_t tg_test_pair_hash(uint64_t seed, size_t a, size_t b) {
  if (a > b) {
    size_t t = a;
    a = b;
    b = t;
  }
  tg_test_rng h = {seed ^ (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full)};
  return tg_test_rng_next(&h);
}

tg_plan *tg_test_plan_valid(const tg_usage_record *r, size_t n, uint32_t dims,
                            const tg_plan_options *o) {
  tg_plan *p = NULL;
  assert_int_equal(tg_plan_compute(r, n, dims, o, NULL, &p), TG_OK);
  tg_test_assert_valid(r, n, dims, p, o->alignment, o->relation);
  return p;
}

tg_plan_options tg_test_best_work_options(tg_mode mode, uint32_t work, uint64_t seed,
                                          const tg_share_relation *rel) {
  tg_plan_options o = {
      .mode = mode, .strategy = TG_STRATEGY_BEST, .seed = seed, .relation = rel, .work_limit = work
  };
  return o;
}

tg_plan *tg_test_best_work(const tg_usage_record *r, size_t n, uint32_t dims, tg_mode mode,
                           uint32_t work, uint64_t seed, const tg_share_relation *rel) {
  tg_plan_options o = tg_test_best_work_options(mode, work, seed, rel);
  return tg_test_plan_valid(r, n, dims, &o);
}
