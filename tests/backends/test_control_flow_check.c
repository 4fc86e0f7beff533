/* Control flow on the device, run as an engine runs it: the check of one execution
 * (tg_graph_run_order: a branch of every If, N iterations of every loop body) on host, OpenCL
 * and Vulkan.
 *  - A scan input is read by every iteration (iteration i takes its slice i): the plan made as
 *    if it died at the Scan's start op puts tensors the body writes into its bytes; the
 *    validator refuses it and the check finds it corrupted from the first iteration on.
 *  - Every hand-made control-flow model (ONNX If, nested or with a condition known when read,
 *    Loop with constant and run-time trip counts, Scan; TFLite IF and WHILE), planned by
 *    several strategies in both modes and in buffers and 2D textures, checks with 0 corrupted
 *    with each branch and 0 to 3 iterations, in order and (OpenCL, Vulkan) out of order: the ops of
 *    an iteration overlapping where the waits allow, the host deciding at every control-flow op. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tflite_builder.h"
#include "support/tg_backend_cases.h"
#include "support/tg_models.h"
#include "tangram/backend.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/schedule.h"

static tg_device *open_backend(const char *name) {
  tg_device_options opt = {0};
  assert_int_equal(tg_backend_from_name(name, &opt.backend), TG_OK);
  return tg_test_open_backend(&opt);
}

/* Realise `plan` (made for `set`) and run the check of one execution: the corrupted records.
 * Out of order (`ooo`): the ops of the execution overlap where the graph's edges and, with
 * `reuse`, the reuse edges of `edges_of` (NULL: `plan`) allow, the host deciding at every
 * control-flow op. */
static uint64_t check_execution_as(tg_device *d, const tg_record_set *set, const tg_plan *plan,
                                   const tg_tensor_resource *res, const tg_graph *g, const uint32_t *tensor_of,
                                   uint32_t branch, uint32_t iterations, int skip_validation, int ooo, int reuse,
                                   const tg_plan *edges_of) {
  tg_realize_desc desc = {plan, set->records, set->count, set->dims, res, TG_PRECISION_FP32, skip_validation};
  tg_realization *z = NULL;
  tg_error_info err = {{0}};
  if (tg_realization_create(d, &desc, NULL, &z, &err) != TG_OK) fail_msg("realise: %s", err.message);
  uint32_t *order = NULL;
  size_t length = 0;
  if (tg_graph_run_order(g, branch, iterations, NULL, &order, &length, &err) != TG_OK)
    fail_msg("run order: %s", err.message);
  tg_check_desc cd = {g, tensor_of, 0, 0, NULL, NULL};
  tg_schedule *sched = NULL;
  tg_waits *waits = NULL;
  tg_wait_lists *lists = NULL;
  if (ooo) {
    if (tg_schedule_create(g, NULL, NULL, &sched, &err) != TG_OK) fail_msg("schedule: %s", err.message);
    if (tg_schedule_compute_waits(sched, set->records, tensor_of, set->count, edges_of ? edges_of : plan, NULL,
                                  &waits, &err) != TG_OK)
      fail_msg("waits: %s", err.message);
    assert_int_equal(tg_wait_lists_create(waits, reuse, NULL, &lists), TG_OK);
    cd.out_of_order = 1;
    tg_check_desc_use_waits(&cd, lists);
  }
  tg_check_result result = {0, NULL, 0};
  if (tg_realization_check_run(z, &cd, order, length, &result, &err) != TG_OK) fail_msg("check: %s", err.message);
  tg_wait_lists_destroy(lists);
  tg_waits_destroy(waits);
  tg_schedule_destroy(sched);
  free(order);
  tg_realization_destroy(z);
  return result.corrupted_records;
}


static size_t op_named(const tg_graph *g, const char *name) {
  for (size_t o = 0; o < g->op_count; ++o)
    if (strcmp(g->ops[o].name, name) == 0) return o;
  fail_msg("%s has no op '%s'", g->source, name);
  return 0;
}

static size_t record_of(const tg_model_records *mr, const tg_graph *g, const char *name) {
  for (size_t r = 0; r < mr->records->count; ++r)
    if (strcmp(g->tensors[mr->tensor_of[r]].name, name) == 0) return r;
  fail_msg("%s: no record for '%s'", g->source, name);
  return 0;
}

/* ---- the hand-made models ---- */

/* The .tflite IF or WHILE model of tflite_builder.h (tt_flow_example). */
static tg_graph *tflite_flow(int flow) {
  static tt_model m;
  static tt_buf buf;
  (void)tt_example;
  tt_flow_example(&m, flow);
  size_t n = tt_build(&m, &buf, NULL);
  tg_graph *g = NULL;
  tg_error_info err = {{0}};
  if (tg_graph_parse_tflite(buf.data, n, flow == TT_IF ? "if.tflite" : "while.tflite", NULL, &g, &err) != TG_OK)
    fail_msg("%s", err.message);
  return g;
}

static tg_graph *load(const char *name) {
  if (strcmp(name, "if.tflite") == 0) return tflite_flow(TT_IF);
  if (strcmp(name, "while.tflite") == 0) return tflite_flow(TT_WHILE);
  char rel[128], path[1024];
  snprintf(rel, sizeof rel, "onnx/control_flow/%s", name);
  tg_graph *g = NULL;
  tg_error_info err = {{0}};
  if (tg_graph_read_onnx(tg_test_data_path(path, sizeof path, rel), NULL, NULL, &g, &err) != TG_OK)
    fail_msg("%s", err.message);
  return g;
}

static const char *const k_models[] = {
    "if.tflite", "while.tflite",
#ifdef TANGRAM_HAVE_ONNX
    "scan.onnx", "loop.onnx", "loop_counted.onnx", "if_nested.onnx", "if_known.onnx",
#endif
};

#ifdef TANGRAM_HAVE_ONNX
/* scan.onnx: e = Exp(x) is Scan's scan input. The plan of the lifetimes in which e ends at the
 * Scan's start op puts the body's s_out or t into e's bytes: refused by the validator, and the
 * check of one or more iterations finds e corrupted. */
static void scan_input_read_every_iteration(const char *backend) {
  tg_device *d = open_backend(backend);
  if (d == NULL) return;
  tg_graph *g = load("scan.onnx");
  tg_lifetimes *lt = NULL;
  tg_model_records *mr = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &lt, &err), TG_OK);
  tg_device_limits limits = tg_device_get_info(d)->limits;
  assert_int_equal(tg_model_records_create(g, lt, TG_STORAGE_BUFFER, TG_PRECISION_FP32, &limits, NULL, &mr, &err),
                   TG_OK);
  const tg_record_set *set = mr->records;
  tg_tensor_resource *res = tg_test_resources_for(set, TG_STORAGE_BUFFER, TG_PRECISION_FP32);
  tg_record_set *arena = NULL;
  assert_int_equal(tg_device_compute_arena_records(d, res, set->records, set->count, TG_PRECISION_FP32, NULL, &arena),
                   TG_OK);
  const size_t e = record_of(mr, g, "e");
  tg_usage_record *early = malloc(arena->count * sizeof *early);
  assert_non_null(early);
  memcpy(early, arena->records, arena->count * sizeof *early);
  early[e].last_task = (uint32_t)op_named(g, "Scan");
  tg_plan_options o = {0};
  o.mode = TG_MODE_OFFSETS;
  o.strategy = TG_STRATEGY_BEST;
  tg_plan *plan = NULL;
  assert_int_equal(tg_plan_compute(early, arena->count, 1, &o, NULL, &plan), TG_OK);
  /* A tensor the body writes lies in e's bytes. */
  size_t inside = 0;
  for (size_t r = 0; r < arena->count; ++r) {
    const int32_t producer = lt->tensors[mr->tensor_of[r]].producer;
    if (r == e || producer < 0 || g->subgraphs[g->ops[producer].subgraph].kind != TG_SUBGRAPH_BODY) continue;
    inside += plan->offset_of[r] < plan->offset_of[e] + arena->records[e].size.w &&
              plan->offset_of[e] < plan->offset_of[r] + arena->records[r].size.w;
  }
  assert_true(inside > 0);
  tg_plan *apart = NULL;
  tg_plan_options naive = {0};
  naive.mode = TG_MODE_OFFSETS;
  naive.strategy = TG_STRATEGY_NAIVE;
  assert_int_equal(tg_plan_compute(arena->records, arena->count, 1, &naive, NULL, &apart), TG_OK);
  for (int ooo = 0; ooo < 2; ++ooo)
    for (uint32_t it = 0; it <= 3; ++it) {
      /* Out of order: the graph's edges only (waits for a plan the validator refuses cannot be
       * computed: the edges of a plan without reuse). */
      const uint64_t bad = check_execution_as(d, arena, plan, res, g, mr->tensor_of, 0, it, 1, ooo, 0, apart);
      print_message("%s: the plan where e ends at the Scan: %llu corrupted with %u iterations%s\n", backend,
                    (unsigned long long)bad, it, ooo ? ", out of order" : "");
      if (it == 0) assert_int_equal(bad, 0);
      else if (bad == 0)
        fail_msg("%s: the plan where e ends at the Scan: 0 corrupted with %u iterations%s", backend, it,
                 ooo ? ", out of order" : "");
    }
  tg_plan_destroy(apart);
  if (tg_plan_validate(arena->records, arena->count, 1, plan, 0, NULL, NULL, &err) != TG_ERROR_INVALID_PLAN)
    fail_msg("%s: the plan where e ends at the Scan validates", backend);
  print_message("%s: validator: %s\n", backend, err.message);
  tg_plan_destroy(plan);
  /* The plan of the lifetimes as they are: valid, 0 corrupted. */
  assert_int_equal(tg_plan_compute(arena->records, arena->count, 1, &o, NULL, &plan), TG_OK);
  tg_test_assert_valid(arena->records, arena->count, 1, plan, 0, NULL);
  for (int ooo = 0; ooo < 2; ++ooo)
    for (uint32_t it = 0; it <= 3; ++it)
      assert_int_equal(check_execution_as(d, arena, plan, res, g, mr->tensor_of, 0, it, 0, ooo, 1, NULL), 0);
  tg_plan_destroy(plan);
  free(early);
  tg_record_set_destroy(arena);
  free(res);
  tg_model_records_destroy(mr);
  tg_lifetimes_destroy(lt);
  tg_graph_destroy(g);
  tg_device_close(d);
}
TG_TEST_ON_BACKENDS(scan_input_read_every_iteration)
#endif

/* Every model x storage x mode x strategy: valid, and 0 corrupted with each branch and 0..3
 * iterations (the GPU backends: 0 and 2 iterations, buffers and best plans only, to keep the
 * test short). */
static void every_construct(const char *backend) {
  tg_device *d = open_backend(backend);
  if (d == NULL) return;
  const tg_device_info *info = tg_device_get_info(d);
  const int host = strcmp(backend, "host") == 0;
  static const tg_strategy k_strategies[] = {TG_STRATEGY_BEST, TG_STRATEGY_GREEDY_BY_SIZE,
                                             TG_STRATEGY_GREEDY_IN_ORDER, TG_STRATEGY_NAIVE};
  static const tg_storage k_storages[] = {TG_STORAGE_BUFFER, TG_STORAGE_TEXTURE_2D};
  size_t checks = 0;
  for (size_t m = 0; m < sizeof k_models / sizeof k_models[0]; ++m) {
    tg_graph *g = load(k_models[m]);
    tg_lifetimes *lt = NULL;
    tg_error_info err = {{0}};
    assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &lt, &err), TG_OK);
    for (size_t si = 0; si < (host ? 2u : 1u); ++si) {
      const tg_storage storage = k_storages[si];
      if (storage != TG_STORAGE_BUFFER && !info->images) continue;
      tg_model_records *mr = NULL;
      tg_device_limits limits = info->limits;
      assert_int_equal(tg_model_records_create(g, lt, storage, TG_PRECISION_FP32, &limits, NULL, &mr, &err), TG_OK);
      const tg_record_set *set = mr->records;
      tg_tensor_resource *res = tg_test_resources_for(set, storage, TG_PRECISION_FP32);
      for (int mode = 0; mode < 2; ++mode) {
        if (mode == TG_MODE_OFFSETS && storage != TG_STORAGE_BUFFER && !info->arena_images) continue;
        tg_record_set *arena = NULL;
        const tg_record_set *planned = tg_test_planned_records(d, set, res, TG_PRECISION_FP32, (tg_mode)mode, &arena);
        for (size_t s = 0; s < (host ? sizeof k_strategies / sizeof k_strategies[0] : 1u); ++s) {
          if (!tg_strategy_applies(k_strategies[s], (tg_mode)mode, planned->dims)) continue;
          tg_plan_options o = {0};
          o.mode = (tg_mode)mode;
          o.strategy = k_strategies[s];
          tg_plan *plan = NULL;
          assert_int_equal(tg_plan_compute(planned->records, planned->count, planned->dims, &o, NULL, &plan), TG_OK);
          tg_test_assert_valid(planned->records, planned->count, planned->dims, plan, 0, NULL);
          for (int ooo = 0; ooo < (info->out_of_order ? 2 : 1); ++ooo)
            for (uint32_t branch = 0; branch < 2; ++branch)
              for (uint32_t it = 0; it <= 3; it += host ? 1 : 2) {
                const uint64_t bad =
                    check_execution_as(d, planned, plan, res, g, mr->tensor_of, branch, it, 0, ooo, 1, NULL);
                if (bad)
                  fail_msg("%s %s %s %s %s, branch %u, %u iterations%s: %llu corrupted", backend, k_models[m],
                           tg_storage_name(storage), tg_mode_name((tg_mode)mode),
                           tg_strategy_name(k_strategies[s]), branch, it, ooo ? ", out of order" : "",
                           (unsigned long long)bad);
                ++checks;
              }
          tg_plan_destroy(plan);
        }
        tg_record_set_destroy(arena);
      }
      free(res);
      tg_model_records_destroy(mr);
    }
    tg_lifetimes_destroy(lt);
    tg_graph_destroy(g);
  }
  print_message("%s: %zu checks of one execution, 0 corrupted\n", backend, checks);
  tg_device_close(d);
}
TG_TEST_ON_BACKENDS(every_construct)

int main(void) {
  const struct CMUnitTest tests[] = {
#ifdef TANGRAM_HAVE_ONNX
      cmocka_unit_test(scan_input_read_every_iteration_host),
      cmocka_unit_test(scan_input_read_every_iteration_opencl),
      cmocka_unit_test(scan_input_read_every_iteration_vulkan),
#endif
      cmocka_unit_test(every_construct_host),
      cmocka_unit_test(every_construct_opencl),
      cmocka_unit_test(every_construct_vulkan),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
