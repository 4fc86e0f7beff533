/* Speed proxies (tangram/speed.h) on a real driver (PoCL and lavapipe on CI), shared by
 * tests/backends/opencl/test_speed_opencl.c and tests/backends/vulkan/test_speed_vulkan.c,
 * which define SPEED_BACKEND (and SPEED_NAME) before including it: the mechanism, not who
 * wins. Every storage's plans are timed (times > 0, min <= median <= max, every op class
 * measured); the proxies are the writers of a shadow run that finds nothing corrupted; guard
 * tensors placed right against every tensor of an arena stay intact (buffers and image
 * buffers); image_buffer tensors are timed through image buffers (one image1d_buffer or storage
 * texel buffer view per tensor, SPEED_LIVE_OBJECTS counts them); a broken plan is caught; the
 * op classes follow the table.
 *
 * SPEED_EXTRA_TESTS: more cmocka_unit_test entries of the including file (declared before).
 * Vulkan runs with the validation and synchronization validation layers: any message fails.
 * Outside CI a machine without the driver skips these tests loudly; under CI (CI=true) a
 * missing driver fails them. Include after support/tg_test.h. */
#ifndef TG_TESTS_BACKENDS_SPEED_CASE_H
#define TG_TESTS_BACKENDS_SPEED_CASE_H

#include "support/tg_models.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tangram/backend.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/speed.h"

typedef struct suite {
  tg_device *device;
  tg_model *model;
  tg_lifetimes *lifetimes;
} suite;

static tg_model *load_graph(void) {
  char path[1024];
  tg_model *m = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_model_load(tg_test_data_path(path, sizeof path, "graphs/speed.graph"), NULL, &m, &err);
  if (st != TG_OK) fail_msg("speed.graph: %s", err.message);
  return m;
}

static int suite_setup(void **state) {
  suite *s = calloc(1, sizeof *s);
  if (s == NULL) return -1;
  tg_device_options opt = {0};
  opt.backend = SPEED_BACKEND;
  opt.validation = 1;
  tg_error_info err = {{0}};
  tg_status st = tg_device_open(&opt, NULL, &s->device, NULL, NULL, &err);
  if (st != TG_OK) {
    if (tg_test_in_ci()) {
      fprintf(stderr, "FAILURE: no usable %s device under CI: %s\n", SPEED_NAME, err.message);
      free(s);
      return -1;
    }
    fprintf(stderr, "\n*** SKIPPING the %s speed tests: %s ***\n\n", SPEED_NAME, err.message);
  }
  s->model = load_graph();
  if (tg_graph_compute_lifetimes(s->model->graph, NULL, NULL, &s->lifetimes, &err) != TG_OK) return -1;
  *state = s;
  return 0;
}

static int suite_teardown(void **state) {
  suite *s = *state;
  if (s) {
    tg_lifetimes_destroy(s->lifetimes);
    tg_model_destroy(s->model);
    tg_device_close(s->device);
    free(s);
  }
  return 0;
}

/* The records of a storage (no limits: nothing falls back). */
static tg_model_records *records_for(const suite *s, tg_storage storage, tg_precision precision) {
  tg_model_records *mr = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_model_records_create(s->model->graph, s->lifetimes, storage, precision, NULL, NULL, &mr, &err),
                   TG_OK);
  assert_int_equal(mr->fallback ? mr->fallback->count : 0, 0);
  return mr;
}

/* The resources of a record set, image buffers kept as such (as `tangram evaluate` makes them). */
static tg_tensor_resource *resources_for(const tg_record_set *set, tg_storage storage, tg_precision precision) {
  tg_tensor_resource *res = tg_test_resources_for(set, storage, precision);
  if (storage == TG_STORAGE_IMAGE_BUFFER)
    for (size_t r = 0; r < set->count; ++r) res[r].storage = storage;
  return res;
}

/* Time (and verify) one realised plan; checks what every timing must satisfy. */
static void time_and_check(const suite *s, tg_realization *z, const uint32_t *tensor_of, int verify,
                           tg_speed_result *r) {
  const tg_graph *g = s->model->graph;
  double *op_ms = calloc(g->op_count, sizeof *op_ms);
  assert_non_null(op_ms);
  tg_speed_part part = {z, tensor_of};
  tg_speed_desc d = {0};
  d.graph = g;
  d.parts = &part;
  d.part_count = 1;
  d.repeats = 3;
  d.warmup = 1;
  d.verify = verify;
  d.op_ms = op_ms;
  tg_error_info err = {{0}};
  tg_status st = tg_realization_time(&d, r, &err);
  if (st != TG_OK) fail_msg("tg_realization_time: %s (%s)", err.message, tg_status_name(st));
  uint64_t messages = tg_device_get_validation_messages(s->device);
  if (messages) fail_msg("%llu validation message(s)", (unsigned long long)messages);
  assert_int_equal(r->repeats, 3);
  assert_true(r->min_ms > 0.0);
  assert_true(r->min_ms <= r->median_ms);
  assert_true(r->median_ms <= r->max_ms);
  /* The table: GUARD and ADD elementwise; 3x3 conv and depthwise stencil; 1x1 conv and FC
   * channel mixing; pool and MEAN reductions; resize, concat, reshape copies (GUARD_READ
   * writes a graph output, which is not planned: no proxy). */
  static const size_t k_expected[TG_OP_CLASS_COUNT] = {2, 2, 2, 2, 3};
  for (int c = 0; c < TG_OP_CLASS_COUNT; ++c) {
    assert_int_equal(r->class_ops[c], k_expected[c]);
    assert_true(r->class_ms[c] > 0.0);
  }
  for (size_t o = 0; o + 1 < g->op_count; ++o)
    if (op_ms[o] <= 0.0) fail_msg("op %zu (%s) has no time", o, g->ops[o].name);
  assert_true(op_ms[g->op_count - 1] == 0.0);
  free(op_ms);
}

static tg_realization *realise(const suite *s, const tg_record_set *set, const tg_tensor_resource *res,
                               const tg_plan *plan, tg_precision precision, int skip_validation) {
  tg_realize_desc d = {0};
  d.plan = plan;
  d.records = set->records;
  d.record_count = set->count;
  d.dims = set->dims;
  d.resources = res;
  d.precision = precision;
  d.skip_validation = skip_validation;
  tg_realization *z = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_realization_create(s->device, &d, NULL, &z, &err);
  if (st != TG_OK) fail_msg("realise: %s (%s)", err.message, tg_status_name(st));
  return z;
}

/* `set` planned naively in objects mode (one object per record, `*plan` for the caller to
 * destroy) and realised on `s->device` in FP32. */
static tg_realization *realise_naive(const suite *s, const tg_record_set *set, const tg_tensor_resource *res,
                                     tg_plan **plan) {
  tg_plan_options opt = {0};
  opt.mode = TG_MODE_OBJECTS;
  opt.strategy = TG_STRATEGY_NAIVE;
  *plan = NULL;
  assert_int_equal(tg_plan_compute(set->records, set->count, 1, &opt, NULL, plan), TG_OK);
  return realise(s, set, res, *plan, TG_PRECISION_FP32, 0);
}

static void plan_and_time(const suite *s, tg_storage storage, tg_mode mode, tg_strategy strategy,
                          tg_precision precision) {
  tg_model_records *mr = records_for(s, storage, precision);
  tg_tensor_resource *res = resources_for(mr->records, storage, precision);
  tg_record_set *arena = NULL;
  const tg_record_set *planned = mr->records;
  if (mode == TG_MODE_OFFSETS) {
    assert_int_equal(tg_device_compute_arena_records(s->device, res, mr->records->records, mr->records->count,
                                                     precision, NULL, &arena),
                     TG_OK);
    planned = arena;
  }
  tg_plan_options opt = {0};
  opt.mode = mode;
  opt.strategy = strategy;
  tg_plan *plan = NULL;
  assert_int_equal(tg_plan_compute(planned->records, planned->count, planned->dims, &opt, NULL, &plan), TG_OK);
  tg_test_assert_valid(planned->records, planned->count, planned->dims, plan, 0, NULL);
  tg_realization *z = realise(s, planned, res, plan, precision, 0);
  tg_speed_result r;
  int64_t live = SPEED_LIVE_OBJECTS(s->device);
  time_and_check(s, z, mr->tensor_of, 1, &r);
  /* Image buffers: one image (view) per tensor, made by the proxies, kept with the realisation. */
  if (storage == TG_STORAGE_IMAGE_BUFFER && SPEED_LIVE_OBJECTS(s->device) - live != (int64_t)planned->count)
    fail_msg("image_buffer %s: %lld objects made by the proxies, %zu tensors", tg_mode_name(mode),
             (long long)(SPEED_LIVE_OBJECTS(s->device) - live), planned->count);
  if (r.corrupted_records)
    fail_msg("%s %s %s: %llu records corrupted by the proxies", tg_storage_name(storage), tg_mode_name(mode),
             tg_strategy_name(strategy), (unsigned long long)r.corrupted_records);
  tg_realization_destroy(z);
  tg_plan_destroy(plan);
  tg_record_set_destroy(arena);
  free(res);
  tg_model_records_destroy(mr);
}

/* Every storage, objects mode with reuse (greedy-by-size) and without (naive); buffers also in
 * an arena: timed, and the shadow run with the proxies as writers finds nothing corrupted. */
static void every_storage_is_timed_and_clean(void **state) {
  suite *s = *state;
  if (s->device == NULL) skip();
  const tg_device_info *info = tg_device_get_info(s->device);
  static const tg_storage k_storages[] = {TG_STORAGE_BUFFER, TG_STORAGE_IMAGE_BUFFER, TG_STORAGE_TEXTURE_2D,
                                          TG_STORAGE_TEXTURE_ARRAY, TG_STORAGE_TEXTURE_3D};
  for (size_t i = 0; i < sizeof k_storages / sizeof k_storages[0]; ++i) {
    tg_storage st = k_storages[i];
    int image = st != TG_STORAGE_BUFFER && st != TG_STORAGE_IMAGE_BUFFER;
    if (image && !info->images) continue;
    plan_and_time(s, st, TG_MODE_OBJECTS, TG_STRATEGY_GREEDY_BY_SIZE, TG_PRECISION_FP32);
    plan_and_time(s, st, TG_MODE_OBJECTS, TG_STRATEGY_NAIVE, TG_PRECISION_FP32);
    if (!image) plan_and_time(s, st, TG_MODE_OFFSETS, TG_STRATEGY_GREEDY_BY_SIZE, TG_PRECISION_FP32);
  }
  plan_and_time(s, TG_STORAGE_BUFFER, TG_MODE_OFFSETS, TG_STRATEGY_GREEDY_BY_SIZE, TG_PRECISION_FP16);
  plan_and_time(s, TG_STORAGE_IMAGE_BUFFER, TG_MODE_OFFSETS, TG_STRATEGY_GREEDY_BY_SIZE, TG_PRECISION_FP16);
  if (info->images && info->fp16_images)
    plan_and_time(s, TG_STORAGE_TEXTURE_2D, TG_MODE_OBJECTS, TG_STRATEGY_GREEDY_BY_SIZE, TG_PRECISION_FP16);
}

/* Buffers (or image buffers) in one arena, each tensor between two guard tensors that live
 * from the first op to the last (g0 T1 g1 T2 g2 ...), in both address orders: a proxy writing
 * one word outside its tensor, before or after it, changes a guard, which the last op
 * verifies. */
static void guards_stay_intact(const suite *s, tg_storage storage) {
  uint64_t align = tg_device_get_info(s->device)->buffer_alignment;
  tg_model_records *mr = records_for(s, storage, TG_PRECISION_FP32);
  const tg_record_set *set = mr->records;
  tg_tensor_resource *res = resources_for(set, storage, TG_PRECISION_FP32);
  size_t guards[64], tensors[64], ng = 0, nt = 0;
  for (size_t r = 0; r < set->count; ++r) {
    const char *name = s->model->graph->tensors[mr->tensor_of[r]].name;
    if (name[0] == 'g' && name[1] >= '0' && name[1] <= '9') guards[ng++] = r;
    else tensors[nt++] = r;
    if (align > 1 && set->records[r].size.w % align != 0)
      fail_msg("tensor %s: %llu bytes, not a multiple of the alignment %llu: guards would leave a gap", name,
               (unsigned long long)set->records[r].size.w, (unsigned long long)align);
  }
  assert_int_equal(ng, nt + 1);
  for (int reverse = 0; reverse < 2; ++reverse) {
    tg_plan *plan = NULL;
    assert_int_equal(tg_plan_create(TG_MODE_OFFSETS, 1, set->count, 1, NULL, &plan), TG_OK);
    uint64_t at = 0;
    for (size_t k = 0; k < ng + nt; ++k) {
      size_t slot = reverse ? ng + nt - 1 - k : k;
      size_t r = slot % 2 == 0 ? guards[slot / 2] : tensors[slot / 2];
      plan->offset_of[r] = at;
      at += set->records[r].size.w;
    }
    plan->total = at;
    tg_test_assert_valid(set->records, set->count, 1, plan, align, NULL);
    tg_realization *z = realise(s, set, res, plan, TG_PRECISION_FP32, 0);
    tg_speed_result r;
    time_and_check(s, z, mr->tensor_of, 1, &r);
    assert_int_equal(r.corrupted_records, 0);
    tg_realization_destroy(z);
    tg_plan_destroy(plan);
  }
  free(res);
  tg_model_records_destroy(mr);
}

static void guards_around_every_tensor_stay_intact(void **state) {
  suite *s = *state;
  if (s->device == NULL) skip();
  guards_stay_intact(s, TG_STORAGE_BUFFER);
}

static void guards_around_every_image_buffer_stay_intact(void **state) {
  suite *s = *state;
  if (s->device == NULL) skip();
  guards_stay_intact(s, TG_STORAGE_IMAGE_BUFFER);
}

/* Every tensor in one object (tensors alive together share it): the proxies' run finds the
 * corruption, so a clean run means something. */
static void broken_plan_is_caught(void **state) {
  suite *s = *state;
  if (s->device == NULL) skip();
  tg_model_records *mr = records_for(s, TG_STORAGE_BUFFER, TG_PRECISION_FP32);
  const tg_record_set *set = mr->records;
  tg_tensor_resource *res = tg_test_resources_for(set, TG_STORAGE_BUFFER, TG_PRECISION_FP32);
  tg_plan *plan = NULL;
  assert_int_equal(tg_plan_create(TG_MODE_OBJECTS, 1, set->count, 1, NULL, &plan), TG_OK);
  uint64_t largest = 0;
  for (size_t r = 0; r < set->count; ++r) {
    plan->object_of[r] = 0;
    if (set->records[r].size.w > largest) largest = set->records[r].size.w;
  }
  plan->object_sizes[0] = (tg_extent){largest, 1, 1};
  plan->total = largest;
  tg_realization *z = realise(s, set, res, plan, TG_PRECISION_FP32, 1);
  tg_speed_result r;
  time_and_check(s, z, mr->tensor_of, 1, &r);
  assert_true(r.corrupted_records > 0);
  tg_realization_destroy(z);
  tg_plan_destroy(plan);
  free(res);
  tg_model_records_destroy(mr);
}

/* Bad requests are refused with a reason. */
static void bad_requests_are_refused(void **state) {
  suite *s = *state;
  if (s->device == NULL) skip();
  tg_model_records *mr = records_for(s, TG_STORAGE_BUFFER, TG_PRECISION_FP32);
  tg_tensor_resource *res = tg_test_resources_for(mr->records, TG_STORAGE_BUFFER, TG_PRECISION_FP32);
  tg_plan *plan = NULL;
  tg_realization *z = realise_naive(s, mr->records, res, &plan);
  tg_speed_part part = {z, mr->tensor_of};
  tg_speed_desc d = {0};
  d.graph = s->model->graph;
  d.parts = &part;
  d.part_count = 1;
  tg_speed_result r;
  tg_error_info err = {{0}};
  assert_int_equal(tg_realization_time(&d, &r, &err), TG_ERROR_INVALID_ARGUMENT); /* repeats 0 */
  assert_non_null(strstr(err.message, "repeats"));
  /* A record whose resource is not its tensor's layout. */
  res[3].bytes += 16;
  tg_realization *z2 = NULL;
  tg_realize_desc rd = {0};
  rd.plan = plan;
  rd.records = mr->records->records;
  rd.record_count = mr->records->count;
  rd.dims = 1;
  rd.resources = res;
  rd.skip_validation = 1;
  /* The plan's objects are too small for the grown resource: realise a naive plan of it. */
  tg_plan *plan2 = NULL;
  tg_usage_record *recs = calloc(mr->records->count, sizeof *recs);
  memcpy(recs, mr->records->records, mr->records->count * sizeof *recs);
  recs[3].size.w += 16;
  tg_plan_options naive = {0};
  naive.mode = TG_MODE_OBJECTS;
  naive.strategy = TG_STRATEGY_NAIVE;
  assert_int_equal(tg_plan_compute(recs, mr->records->count, 1, &naive, NULL, &plan2), TG_OK);
  rd.plan = plan2;
  rd.records = recs;
  assert_int_equal(tg_realization_create(s->device, &rd, NULL, &z2, &err), TG_OK);
  part.realization = z2;
  d.repeats = 1;
  err.message[0] = '\0';
  assert_int_equal(tg_realization_time(&d, &r, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "layout"));
  tg_realization_destroy(z2);
  tg_plan_destroy(plan2);
  free(recs);
  tg_realization_destroy(z);
  tg_plan_destroy(plan);
  free(res);
  tg_model_records_destroy(mr);
}

static void op_classes_follow_the_table(void **state) {
  suite *s = *state;
  const tg_graph *g = s->model->graph;
  static const tg_op_class k_classes[] = {
      TG_OP_CLASS_ELEMENTWISE, TG_OP_CLASS_STENCIL,        TG_OP_CLASS_STENCIL,   TG_OP_CLASS_CHANNEL_MIXING,
      TG_OP_CLASS_REDUCTION,   TG_OP_CLASS_COPY,           TG_OP_CLASS_ELEMENTWISE, TG_OP_CLASS_COPY,
      TG_OP_CLASS_COPY,        TG_OP_CLASS_REDUCTION,      TG_OP_CLASS_CHANNEL_MIXING, TG_OP_CLASS_ELEMENTWISE};
  assert_int_equal(g->op_count, sizeof k_classes / sizeof k_classes[0]);
  for (size_t o = 0; o < g->op_count; ++o) {
    tg_op_class c;
    uint32_t k = 0;
    assert_int_equal(tg_op_class_of(g, o, &c, &k), TG_OK);
    if (c != k_classes[o])
      fail_msg("op %zu (%s): %s, expected %s", o, g->ops[o].name, tg_op_class_name(c), tg_op_class_name(k_classes[o]));
    if (c == TG_OP_CLASS_STENCIL) assert_int_equal(k, 3);
  }
  tg_op_class c;
  assert_int_equal(tg_op_class_of(g, g->op_count, &c, NULL), TG_ERROR_INVALID_ARGUMENT);
  assert_null(tg_op_class_name(TG_OP_CLASS_COUNT));
  assert_string_equal(tg_op_class_name(TG_OP_CLASS_CHANNEL_MIXING), "channel_mixing");
}

static int speed_main(void) {
  /* TG_TEST_FILTER=name runs only the matching tests (cmocka's pattern). */
  if (getenv("TG_TEST_FILTER")) cmocka_set_test_filter(getenv("TG_TEST_FILTER"));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(op_classes_follow_the_table),
      cmocka_unit_test(every_storage_is_timed_and_clean),
      cmocka_unit_test(guards_around_every_tensor_stay_intact),
      cmocka_unit_test(guards_around_every_image_buffer_stay_intact),
      cmocka_unit_test(broken_plan_is_caught),
      cmocka_unit_test(bad_requests_are_refused),
#ifdef SPEED_EXTRA_TESTS
      SPEED_EXTRA_TESTS
#endif
  };
  return cmocka_run_group_tests_name("speed_" SPEED_NAME, tests, suite_setup, suite_teardown);
}

#endif
