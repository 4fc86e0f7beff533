/* Every .tflite the four MediaPipe npm packages ship (scripts/fetch-models.sh), not only the
 * four public lite models the other tests use: each loads, and its records in buffers, 2D and
 * 3D textures are planned by `best` (default search budget) as objects and, for buffers, as
 * offsets. Every plan passes the validator, no plan is larger than TFLite's (GREEDY_IN_ORDER
 * objects, GREEDY_BY_SIZE offsets), and none is below the lower bound Tangram proves (objects:
 * tg_bounds_objects_shape; offsets: peak live). Each plan's ratio to its bound is printed. */
#include "support/tg_test.h"

#include <stdio.h>
#include <string.h>

#include "tangram/layout.h"
#include "tangram/model.h"

static const char *const k_models[] = {
    "face_detection_short_range", "face_detection_full_range", "face_detection_full_range_sparse",
    "hand_landmark_lite",         "hand_landmark_full",        "pose_landmark_lite",
    "pose_landmark_full",         "pose_landmark_heavy",       "selfie_segmentation",
    "selfie_segmentation_landscape"};

static uint64_t plan_total(const tg_record_set *set, tg_mode mode, tg_strategy strategy) {
  tg_plan_options o;
  memset(&o, 0, sizeof o);
  o.mode = mode;
  o.strategy = strategy;
  tg_plan *p = NULL;
  tg_status st = tg_plan_compute(set->records, set->count, set->dims, &o, NULL, &p);
  if (st != TG_OK) fail_msg("%s: %s", tg_strategy_name(strategy), tg_status_name(st));
  tg_test_assert_valid(set->records, set->count, set->dims, p, 0, NULL);
  uint64_t total = p->total;
  tg_plan_destroy(p);
  return total;
}

static void every_model_every_storage(void **state) {
  (void)state;
  static const struct {
    tg_storage storage;
    const char *name;
  } kinds[] = {{TG_STORAGE_BUFFER, "buffer"}, {TG_STORAGE_TEXTURE_2D, "tex2"}, {TG_STORAGE_TEXTURE_3D, "tex3"}};
  tg_device_limits lim = tg_device_limits_default();
  size_t models = 0, plans = 0;
  for (size_t m = 0; m < sizeof k_models / sizeof k_models[0]; ++m) {
    char file[256], path[1024];
    snprintf(file, sizeof file, "%s.tflite", k_models[m]);
    if (tg_test_model_path(path, sizeof path, file) == NULL) continue;
    ++models;
    tg_error_info err;
    memset(&err, 0, sizeof err);
    tg_model *model = NULL;
    tg_lifetimes *life = NULL;
    if (tg_model_load(path, NULL, &model, &err) != TG_OK) fail_msg("%s: %s", path, err.message);
    assert_int_equal(model->kind, TG_MODEL_GRAPH);
    if (tg_graph_compute_lifetimes(model->graph, NULL, NULL, &life, &err) != TG_OK)
      fail_msg("%s: lifetimes: %s", path, err.message);
    char line[512];
    int len = snprintf(line, sizeof line, "%-30s", k_models[m]);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; ++k) {
      tg_model_records *mr = NULL;
      if (tg_model_records_create(model->graph, life, kinds[k].storage, TG_PRECISION_FP32, &lim, NULL, &mr, &err) !=
          TG_OK)
        fail_msg("%s %s: %s", k_models[m], kinds[k].name, err.message);
      const tg_record_set *set = mr->records;
      assert_true(set->count > 0);
      uint64_t shape = 0;
      assert_int_equal(tg_bounds_objects_shape(set->records, set->count, set->dims, NULL, &shape), TG_OK);
      uint64_t best = plan_total(set, TG_MODE_OBJECTS, TG_STRATEGY_BEST);
      uint64_t tflite = plan_total(set, TG_MODE_OBJECTS, TG_STRATEGY_GREEDY_IN_ORDER);
      if (best < shape || best > tflite)
        fail_msg("%s %s objects: best %llu outside [bound %llu, TFLite %llu]", k_models[m], kinds[k].name,
                 (unsigned long long)best, (unsigned long long)shape, (unsigned long long)tflite);
      plans += 2;
      len += snprintf(line + len, sizeof line - (size_t)len, "  %s objects x%.4f", kinds[k].name,
                      (double)best / (double)shape);
      if (set->dims == 1) {
        tg_bounds b;
        assert_int_equal(tg_bounds_compute(set->records, set->count, 1, NULL, &b), TG_OK);
        uint64_t off = plan_total(set, TG_MODE_OFFSETS, TG_STRATEGY_BEST);
        uint64_t by_size = plan_total(set, TG_MODE_OFFSETS, TG_STRATEGY_GREEDY_BY_SIZE);
        if (off < b.peak_live || off > by_size)
          fail_msg("%s offsets: best %llu outside [peak live %llu, TFLite %llu]", k_models[m],
                   (unsigned long long)off, (unsigned long long)b.peak_live, (unsigned long long)by_size);
        plans += 2;
        len += snprintf(line + len, sizeof line - (size_t)len, "  offsets x%.4f", (double)off / (double)b.peak_live);
      }
      tg_model_records_destroy(mr);
    }
    print_message("%s\n", line);
    tg_lifetimes_destroy(life);
    tg_model_destroy(model);
  }
  print_message("%zu models, %zu plans validated\n", models, plans);
  if (models == 0) skip();
}

TG_TEST_MAIN(cmocka_unit_test(every_model_every_storage))
