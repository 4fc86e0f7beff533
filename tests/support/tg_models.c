#include "tg_models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tg_test.h"

int tg_test_model_open(const char *name, tg_test_model *m) {
  memset(m, 0, sizeof *m);
  m->name = name;
  char file[256], path[1024];
  snprintf(file, sizeof file, "%s.tflite", name);
  if (tg_test_model_path(path, sizeof path, file) == NULL) return 0;
  tg_error_info err = {{0}};
  if (tg_model_load(path, NULL, &m->model, &err) != TG_OK) fail_msg("%s: %s", path, err.message);
  assert_int_equal(m->model->kind, TG_MODEL_GRAPH);
  if (tg_graph_compute_lifetimes(m->model->graph, NULL, NULL, &m->lifetimes, &err) != TG_OK)
    fail_msg("%s: lifetimes: %s", name, err.message);
  if (tg_schedule_create(m->model->graph, NULL, NULL, &m->schedule, &err) != TG_OK)
    fail_msg("%s: schedule: %s", name, err.message);
  return 1;
}

void tg_test_model_close(tg_test_model *m) {
  tg_schedule_destroy(m->schedule);
  tg_lifetimes_destroy(m->lifetimes);
  tg_model_destroy(m->model);
  memset(m, 0, sizeof *m);
}

tg_tensor_resource *tg_test_resources_for(const tg_record_set *set, tg_storage storage, tg_precision precision) {
  tg_tensor_resource *res = calloc(set->count ? set->count : 1, sizeof *res);
  assert_non_null(res);
  uint64_t tb = tg_precision_texel_bytes(precision);
  for (size_t r = 0; r < set->count; ++r) {
    const tg_extent *s = &set->records[r].size;
    if (set->dims == 1) res[r] = (tg_tensor_resource){TG_STORAGE_BUFFER, {s->w, 1, 1}, s->w};
    else res[r] = (tg_tensor_resource){storage, *s, s->w * s->h * s->d * tb};
  }
  return res;
}

tg_plan *tg_test_plan_in_place(const tg_schedule *schedule, tg_policy policy, tg_mode mode, const tg_record_set *set,
                               const uint32_t *tensor_of, const tg_in_place_pair *pairs, size_t pair_count) {
  tg_policy_relation *rel = NULL;
  assert_int_equal(tg_policy_relation_create(schedule, policy, tensor_of, set->count, NULL, &rel), TG_OK);
  tg_plan_options o = {0};
  o.mode = mode;
  o.strategy = TG_STRATEGY_BEST;
  o.time_limit_ms = TG_TIME_LIMIT_NONE;
  o.relation = tg_policy_relation_get(rel);
  o.in_place = pairs;
  o.in_place_count = pair_count;
  tg_plan *p = NULL;
  assert_int_equal(tg_plan_compute(set->records, set->count, set->dims, &o, NULL, &p), TG_OK);
  tg_test_assert_valid(set->records, set->count, set->dims, p, 0, o.relation);
  tg_policy_relation_destroy(rel);
  return p;
}
