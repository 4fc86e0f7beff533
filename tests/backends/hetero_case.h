/* What the heterogeneous backend tests share: a graph's spaces, plans, waits and set
 * descriptions, and one realise-and-check. Include after support/tg_test.h. */
#ifndef TG_TESTS_BACKENDS_HETERO_CASE_H
#define TG_TESTS_BACKENDS_HETERO_CASE_H

#include <stdlib.h>
#include <string.h>

#include "tangram/backend.h"
#include "tangram/hetero.h"
#include "tangram/model.h"
#include "tangram/placement.h"
#include "tangram/schedule.h"

/* A small mixed graph: two Custom ops (the CPU's under "auto") among GPU ops, with tensors
 * of every space (the GPU backends' modes and rollback tests). */
static inline const char *hetero_mixed_graph(void) {
  return "tensor x 1x8x8x4 float32 input\n"
         "tensor a 1x8x8x4 float32\n"
         "tensor h 1x16x8x4 float32\n"
         "tensor b 1x8x8x7 float32\n"
         "tensor c 1x8x8x4 float32\n"
         "tensor d 1x8x8x4 float32\n"
         "tensor y 1x8x8x4 float32 output\n"
         "op CONV_2D inputs=x outputs=a\n"
         "op Custom inputs=a outputs=h\n"
         "op CONV_2D inputs=x outputs=b\n"
         "op CONV_2D inputs=b outputs=c\n"
         "op ADD inputs=c outputs=d\n"
         "op Custom inputs=h,b,d outputs=y\n";
}

/* ---- everything a heterogeneous run needs ---- */

typedef struct case_data {
  tg_graph *graph;
  tg_lifetimes *lifetimes;
  tg_schedule *schedule;
  tg_model_records *records;
  tg_processor *proc;
  tg_spaces *spaces;
  tg_space_plan plans[TG_SET_COUNT];
  tg_tensor_resource *resources[TG_SET_COUNT];
  tg_hetero_set_desc sets[TG_SET_COUNT];
  tg_spaces_waits *waits;
  tg_record_set *arena[TG_SET_COUNT]; /* plan_case_device, offsets: the device's sizes */
} case_data;

static inline void case_free(case_data *c) {
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    tg_record_set_destroy(c->arena[k]);
    tg_space_plan_free(&c->plans[k]);
    free(c->resources[k]);
  }
  tg_spaces_waits_destroy(c->waits);
  tg_spaces_destroy(c->spaces);
  free(c->proc);
  tg_model_records_destroy(c->records);
  tg_schedule_destroy(c->schedule);
  tg_lifetimes_destroy(c->lifetimes);
  tg_graph_destroy(c->graph);
  memset(c, 0, sizeof *c);
}

static inline void make_resources(case_data *c, tg_precision precision) {
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    const tg_space_set *ss = &c->spaces->sets[k];
    free(c->resources[k]);
    size_t n = ss->records->count;
    c->resources[k] = calloc(n ? n : 1, sizeof *c->resources[k]);
    assert_non_null(c->resources[k]);
    for (size_t r = 0; r < n; ++r) {
      const tg_extent e = ss->records->records[r].size;
      if (ss->records->dims == 1) c->resources[k][r] = (tg_tensor_resource){TG_STORAGE_BUFFER, {e.w, 1, 1}, e.w};
      else
        c->resources[k][r] = (tg_tensor_resource){ss->storage, e, e.w * e.h * e.d * tg_precision_texel_bytes(precision)};
    }
    c->sets[k] = (tg_hetero_set_desc){ss->space, c->plans[k].plan, ss->records->records, n, ss->records->dims,
                                      c->resources[k], ss->tensor_of};
  }
}

/* Plan every set (objects, `strategy`, `policy`) and compute the waits. */
static inline void plan_case(case_data *c, tg_strategy strategy, tg_policy policy, int gpu_in_order) {
  tg_error_info err = {{0}};
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    tg_space_plan_free(&c->plans[k]);
    tg_space_options o;
    memset(&o, 0, sizeof o);
    o.plan.strategy = strategy;
    o.policy = policy;
    if (tg_spaces_plan_set(c->spaces, c->schedule, (size_t)k, NULL, &o, NULL, &c->plans[k], &err) != TG_OK)
      fail_msg("plan: %s", err.message);
  }
  tg_space_plan_ref refs[TG_SET_COUNT];
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    refs[k].plan = c->plans[k].plan;
    refs[k].records = c->spaces->sets[k].records->records;
  }
  tg_spaces_waits_destroy(c->waits);
  c->waits = NULL;
  if (tg_spaces_compute_waits(c->spaces, c->schedule, refs, gpu_in_order, NULL, &c->waits, &err) != TG_OK)
    fail_msg("waits: %s", err.message);
}

static inline void case_build(case_data *c, tg_graph *g, tg_storage storage, const char *place) {
  memset(c, 0, sizeof *c);
  c->graph = g;
  tg_error_info err = {{0}};
  if (tg_graph_compute_lifetimes(g, NULL, NULL, &c->lifetimes, &err) != TG_OK) fail_msg("%s", err.message);
  if (tg_schedule_create(g, NULL, NULL, &c->schedule, &err) != TG_OK) fail_msg("%s", err.message);
  tg_device_limits lim = tg_device_limits_default();
  if (tg_model_records_create(g, c->lifetimes, storage, TG_PRECISION_FP32, &lim, NULL, &c->records, &err) != TG_OK)
    fail_msg("%s", err.message);
  c->proc = calloc(g->op_count ? g->op_count : 1, sizeof *c->proc);
  assert_non_null(c->proc);
  if (tg_placement_apply_spec(g, place, c->proc, &err) != TG_OK) fail_msg("%s", err.message);
  if (tg_spaces_create(g, c->lifetimes, c->records, c->proc, NULL, &c->spaces, &err) != TG_OK)
    fail_msg("%s", err.message);
  plan_case(c, TG_STRATEGY_BEST, TG_POLICY_SERIAL, 0);
  make_resources(c, TG_PRECISION_FP32);
}

static inline void case_text(case_data *c, const char *text, const char *place) {
  tg_graph *g = NULL;
  tg_error_info err = {{0}};
  if (tg_graph_parse_text(text, strlen(text), "test.graph", NULL, &g, &err) != TG_OK) fail_msg("%s", err.message);
  case_build(c, g, TG_STORAGE_BUFFER, place);
}

/* Realise and check; returns the corrupted records. `waits`: 1 the case's waits, 0 the graph's
 * edges alone. */
static inline uint64_t realise_check(tg_device *d, case_data *c, int out_of_order, const size_t *wait_start,
                              const uint32_t *waits) {
  tg_error_info err = {{0}};
  tg_hetero_realize_desc rd = {c->sets, TG_SET_COUNT, TG_PRECISION_FP32, 0};
  tg_hetero_realization *z = NULL;
  if (tg_hetero_realization_create(d, &rd, NULL, &z, &err) != TG_OK) fail_msg("realise: %s", err.message);
  tg_hetero_check_desc cd = {c->graph, c->proc, out_of_order, wait_start, waits};
  tg_check_result res = {0, NULL, 0};
  if (tg_hetero_realization_check(z, &cd, &res, &err) != TG_OK) fail_msg("check: %s", err.message);
  assert_true(res.checked_bytes > 0);
  tg_hetero_realization_destroy(z);
  return res.corrupted_records;
}

/* Plan every set in `mode` on device `d` (offsets: device and shared sets with the device's
 * real sizes and alignments, one arena per set), serial, and point the set descriptions at the
 * records planned. */
static inline void plan_case_device(case_data *c, tg_device *d, tg_mode mode) {
  tg_error_info err = {{0}};
  make_resources(c, TG_PRECISION_FP32);
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    const tg_space_set *ss = &c->spaces->sets[k];
    tg_space_plan_free(&c->plans[k]);
    tg_record_set_destroy(c->arena[k]);
    c->arena[k] = NULL;
    tg_space_options o;
    memset(&o, 0, sizeof o);
    o.plan.mode = ss->records->dims == 1 ? mode : TG_MODE_OBJECTS;
    o.plan.strategy = TG_STRATEGY_BEST;
    if (o.plan.mode == TG_MODE_OFFSETS && ss->space != TG_SPACE_HOST && ss->records->count)
      assert_int_equal(tg_device_compute_arena_records(d, c->resources[k], ss->records->records, ss->records->count,
                                                       TG_PRECISION_FP32, NULL, &c->arena[k]), TG_OK);
    if (tg_spaces_plan_set(c->spaces, c->schedule, (size_t)k, c->arena[k], &o, NULL, &c->plans[k], &err) != TG_OK)
      fail_msg("plan: %s", err.message);
    const tg_record_set *planned = c->arena[k] ? c->arena[k] : ss->records;
    c->sets[k].plan = c->plans[k].plan;
    c->sets[k].records = planned->records;
  }
}

/* The mixed graph (hetero_mixed_graph) placed "auto" and planned on `d` in `mode` into `c`
 * (case_free frees it): 0 corrupted in order, and out of order with its waits. */
static inline void mixed_case_checks_clean(case_data *c, tg_device *d, tg_mode mode) {
  case_text(c, hetero_mixed_graph(), "auto");
  plan_case_device(c, d, mode);
  assert_int_equal(realise_check(d, c, 0, NULL, NULL), 0);
  assert_int_equal(realise_check(d, c, 1, c->waits->wait_start, c->waits->waits), 0);
}

#endif
