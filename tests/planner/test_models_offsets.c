/* Offsets-mode strategies on the buffer records of four MediaPipe models: every plan valid,
 * greedy-by-size and `best` reach the peak-live bound (as TFLite's GreedyBySizeAssignment
 * does on these models). Totals per strategy are printed. */
#include "support/tg_test.h"

#include <stdio.h>
#include <string.h>

static const struct {
  const char *name;
  uint64_t peak_live;
} k_models[] = {
    {"selfie_segmentation", 3670016},
    {"face_detection_short_range", 1376256},
    {"hand_landmark_lite", 4214784},
    {"pose_landmark_lite", 6963200},
};

static tg_record_set *load(const char *model) {
  char rel[256];
  snprintf(rel, sizeof rel, "records/%s.buffer.csv", model);
  tg_record_set *set = tg_test_load_records(rel);
  assert_int_equal(set->dims, 1);
  return set;
}

static tg_plan *plan(const tg_record_set *set, tg_strategy s, tg_fit fit, uint64_t alignment) {
  tg_plan_options o = {.mode = TG_MODE_OFFSETS, .strategy = s, .fit = fit, .alignment = alignment};
  tg_plan *p = NULL;
  tg_status st = tg_plan_compute(set->records, set->count, 1, &o, NULL, &p);
  if (st != TG_OK) fail_msg("%s: %s", tg_strategy_name(s), tg_status_name(st));
  tg_test_assert_valid(set->records, set->count, 1, p, alignment, NULL);
  return p;
}

static void model_offsets(void **state) {
  (void)state;
  for (size_t m = 0; m < sizeof k_models / sizeof k_models[0]; ++m) {
    tg_record_set *set = load(k_models[m].name);
    tg_bounds b;
    assert_int_equal(tg_bounds_compute(set->records, set->count, 1, NULL, &b), TG_OK);
    assert_int_equal(b.peak_live, k_models[m].peak_live);
    char line[512];
    int len = snprintf(line, sizeof line, "%s (%zu records, peak-live %llu):", k_models[m].name,
                       set->count, (unsigned long long)b.peak_live);
    const struct {
      tg_strategy s;
      tg_fit fit;
      const char *label;
    } runs[] = {
        {TG_STRATEGY_NAIVE, TG_FIT_BEST, "naive"},
        {TG_STRATEGY_GREEDY_IN_ORDER, TG_FIT_BEST, "in-order/best"},
        {TG_STRATEGY_GREEDY_IN_ORDER, TG_FIT_FIRST, "in-order/first"},
        {TG_STRATEGY_GREEDY_IN_ORDER, TG_FIT_WORST, "in-order/worst"},
        {TG_STRATEGY_GREEDY_BY_BREADTH, TG_FIT_BEST, "by-breadth"},
        {TG_STRATEGY_GREEDY_BY_SIZE, TG_FIT_BEST, "by-size"},
        {TG_STRATEGY_BEST, TG_FIT_BEST, "best"},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; ++i) {
      tg_plan *p = plan(set, runs[i].s, runs[i].fit, 0);
      assert_true(p->total >= b.peak_live);
      if (runs[i].s == TG_STRATEGY_GREEDY_BY_SIZE || runs[i].s == TG_STRATEGY_BEST)
        assert_int_equal(p->total, b.peak_live);
      if (len > 0 && (size_t)len < sizeof line)
        len += snprintf(line + len, sizeof line - (size_t)len, " %s=%llu", runs[i].label,
                        (unsigned long long)p->total);
      tg_plan_destroy(p);
      /* With a device-like alignment the plans stay valid. */
      p = plan(set, runs[i].s, runs[i].fit, 256);
      tg_plan_destroy(p);
    }
    print_message("%s\n", line);
    tg_record_set_destroy(set);
  }
}

/* An objects plan laid out back to back is a valid offsets plan. */
static void model_objects_to_offsets(void **state) {
  (void)state;
  for (size_t m = 0; m < sizeof k_models / sizeof k_models[0]; ++m) {
    tg_record_set *set = load(k_models[m].name);
    tg_plan_options o;
    memset(&o, 0, sizeof o);
    o.mode = TG_MODE_OBJECTS;
    o.strategy = TG_STRATEGY_GREEDY_IN_ORDER;
    tg_plan *objects = NULL, *offsets = NULL;
    assert_int_equal(tg_plan_compute(set->records, set->count, 1, &o, NULL, &objects), TG_OK);
    assert_int_equal(tg_plan_objects_to_offsets(objects, 64, NULL, &offsets), TG_OK);
    tg_test_assert_valid(set->records, set->count, 1, offsets, 64, NULL);
    assert_true(offsets->total >= objects->total);
    print_message("%s: objects greedy-in-order %llu -> offsets %llu (aligned 64)\n", k_models[m].name,
                  (unsigned long long)objects->total, (unsigned long long)offsets->total);
    tg_plan_destroy(objects);
    tg_plan_destroy(offsets);
    tg_record_set_destroy(set);
  }
}

TG_TEST_MAIN(cmocka_unit_test(model_offsets), cmocka_unit_test(model_objects_to_offsets))
