/* The LP dive of strategy best (objects mode): on the public models' texture records it reaches
 * the LP bound, so `best` proves its plans optimal; on random sets its plans are valid, never
 * below the LP bound and never worse than best without the search. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/tg_test.h"
#include "support/tg_planner_test.h"

#include "tangram/records.h"

/* `best` under a work limit of `work` units (no clock: the plan does not depend on the machine's
 * speed), or without a search (work 0). */
static tg_plan *best_plan(const tg_usage_record *r, size_t n, uint32_t dims, uint32_t work) {
  tg_plan_options o;
  memset(&o, 0, sizeof o);
  o.mode = TG_MODE_OBJECTS;
  o.strategy = TG_STRATEGY_BEST;
  o.time_limit_ms = work ? 0 : TG_TIME_LIMIT_NONE;
  o.work_limit = work;
  return tg_test_plan_valid(r, n, dims, &o);
}

/* Known optima (plan = LP bound), found by the dive and proved by the bound; the work limit is
 * generous because the call ends at the proof (a few hundred ms at most here). */
static void public_models_optimal(void **state) {
  (void)state;
  static const struct {
    const char *file;
    uint32_t dims;
    uint64_t optimum;
  } k_sets[] = {{"records/face_detection_short_range.tex3.csv", 3, 143744},
                {"records/hand_landmark_lite.tex2.csv", 2, 363776},
                {"records/pose_landmark_lite.tex2.csv", 2, 822272},
                {"records/pose_landmark_lite.tex3.csv", 3, 1022840},
                {"records/selfie_segmentation.tex2.csv", 2, 409632},
                {"records/selfie_segmentation.tex3.csv", 3, 475200},
                {"records/face_detection_short_range.buffer.csv", 1, 1406976}};
  for (size_t m = 0; m < sizeof k_sets / sizeof k_sets[0]; ++m) {
    tg_record_set *set = tg_test_load_records(k_sets[m].file);
    assert_int_equal(set->dims, k_sets[m].dims);
    uint64_t lp = 0;
    assert_int_equal(tg_bounds_objects_lp(set->records, set->count, set->dims, 0, 0, NULL, &lp), TG_OK);
    tg_plan *p = best_plan(set->records, set->count, set->dims, 4094);
    if (lp != k_sets[m].optimum || p->total != k_sets[m].optimum)
      fail_msg("%s: plan %llu, LP bound %llu, optimum %llu", k_sets[m].file, (unsigned long long)p->total,
               (unsigned long long)lp, (unsigned long long)k_sets[m].optimum);
    tg_plan_destroy(p);
    tg_record_set_destroy(set);
  }
}

/* 60 random 1D/2D/3D sets of 20-100 records: best under a work limit of 510 units (the dive
 * included, no clock) gives a
 * valid plan, at least the LP bound, never above best without the search; and reaches the LP
 * bound on most sets. */
static void random_sets(void **state) {
  (void)state;
  tg_test_rng g = {6060};
  int rounds = 60, at_bound = 0, improved = 0;
  for (int round = 0; round < rounds; ++round) {
    uint32_t dims = 1 + (uint32_t)(round % 3);
    tg_test_random_spec spec = {dims, 20 + (size_t)tg_test_rng_range(&g, 0, 80), 60, 12, 48, 0,
                                round % 4 == 0};
    tg_usage_record *r = calloc(spec.count, sizeof *r);
    assert_non_null(r);
    tg_test_random_records(&g, &spec, r);
    uint64_t lp = 0;
    assert_int_equal(tg_bounds_objects_lp(r, spec.count, dims, 0, 0, NULL, &lp), TG_OK);
    tg_plan *greedy = best_plan(r, spec.count, dims, 0);
    tg_plan *searched = best_plan(r, spec.count, dims, 510);
    if (searched->total < lp || searched->total > greedy->total)
      fail_msg("set %d: searched %llu, greedy %llu, LP bound %llu", round,
               (unsigned long long)searched->total, (unsigned long long)greedy->total,
               (unsigned long long)lp);
    at_bound += searched->total == lp;
    improved += searched->total < greedy->total;
    tg_plan_destroy(greedy);
    tg_plan_destroy(searched);
    free(r);
  }
  print_message("best+search at the LP bound on %d of %d sets, below the greedy plan on %d\n", at_bound,
                rounds, improved);
  assert_true(at_bound >= rounds / 2);
  assert_true(improved > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(public_models_optimal),
      cmocka_unit_test(random_sets),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
