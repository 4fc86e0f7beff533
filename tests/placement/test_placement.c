#define _POSIX_C_SOURCE 200809L
/* Placements, memory spaces, the relation over both processors' timelines, the waits between
 * processors and the partition-by-partition baseline; and a property test over random DAGs and
 * random placements, checked by a routine of its own (reachability over an explicit edge list):
 * no two records sharing memory in any space are ever touched at overlapping times. */
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/placement.h"
#include "tangram/schedule.h"

/* ---- helpers ---- */

typedef struct built {
  tg_graph *graph;
  tg_lifetimes *lifetimes;
  tg_schedule *schedule;
  tg_model_records *records;
} built;

static void build_from_graph(tg_graph *g, tg_storage storage, int plan_io, built *b) {
  memset(b, 0, sizeof *b);
  b->graph = g;
  tg_error_info err = {{0}};
  tg_lifetime_options lo = {plan_io};
  if (tg_graph_compute_lifetimes(g, &lo, NULL, &b->lifetimes, &err) != TG_OK) fail_msg("%s", err.message);
  if (tg_schedule_create(g, NULL, NULL, &b->schedule, &err) != TG_OK) fail_msg("%s", err.message);
  tg_device_limits lim = tg_device_limits_default();
  if (tg_model_records_create(g, b->lifetimes, storage, TG_PRECISION_FP32, &lim, NULL, &b->records, &err) != TG_OK)
    fail_msg("%s", err.message);
}

static void build_text(const char *text, built *b) {
  tg_graph *g = NULL;
  tg_error_info err = {{0}};
  if (tg_graph_parse_text(text, strlen(text), "test.graph", NULL, &g, &err) != TG_OK) fail_msg("%s", err.message);
  build_from_graph(g, TG_STORAGE_BUFFER, 0, b);
}

static void built_free(built *b) {
  tg_model_records_destroy(b->records);
  tg_schedule_destroy(b->schedule);
  tg_lifetimes_destroy(b->lifetimes);
  tg_graph_destroy(b->graph);
  memset(b, 0, sizeof *b);
}

static size_t tensor_index(const tg_graph *g, const char *name) {
  for (size_t t = 0; t < g->tensor_count; ++t)
    if (strcmp(g->tensors[t].name, name) == 0) return t;
  fail_msg("no tensor %s", name);
  return 0;
}

/* ---- names and specs ---- */

static void names(void **state) {
  (void)state;
  for (int p = 0; p < TG_PROCESSOR_COUNT; ++p) {
    tg_processor back;
    assert_int_equal(tg_processor_from_name(tg_processor_name((tg_processor)p), &back), TG_OK);
    assert_int_equal(back, p);
  }
  tg_processor x = TG_PROCESSOR_CPU;
  assert_int_equal(tg_processor_from_name("GPU", &x), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(x, TG_PROCESSOR_CPU);
  assert_null(tg_processor_name(TG_PROCESSOR_COUNT));
  assert_string_equal(tg_space_name(TG_SPACE_DEVICE), "device");
  assert_string_equal(tg_space_name(TG_SPACE_HOST), "host");
  assert_string_equal(tg_space_name(TG_SPACE_SHARED), "shared");
  assert_null(tg_space_name(TG_SPACE_COUNT));
  /* The profile: builtins a mobile GPU path runs, not custom ops or builtins it lacks. */
  assert_true(tg_placement_gpu_supports("CONV_2D"));
  assert_true(tg_placement_gpu_supports("DEPTHWISE_CONV_2D"));
  assert_true(tg_placement_gpu_supports("RESIZE_BILINEAR"));
  assert_true(tg_placement_gpu_supports("HARD_SWISH"));
  assert_false(tg_placement_gpu_supports("Convolution2DTransposeBias"));
  assert_false(tg_placement_gpu_supports("MaxPoolingWithArgmax2D"));
  assert_false(tg_placement_gpu_supports("ARG_MAX"));
  assert_false(tg_placement_gpu_supports("NON_MAX_SUPPRESSION_V4"));
  assert_false(tg_placement_gpu_supports("conv_2d"));
  assert_false(tg_placement_gpu_supports(NULL));
}

static const char k_chain[] =
    "tensor x 1x8x8x4 float32 input\n"
    "tensor a 1x8x8x4 float32\n"
    "tensor b 1x8x8x4 float32\n"
    "tensor c 1x8x8x4 float32\n"
    "tensor e 1x8x8x4 float32 output\n"
    "op CONV_2D inputs=x outputs=a\n"
    "op MyCustom inputs=a outputs=b\n"
    "op ADD inputs=b outputs=c\n"
    "op MyCustom inputs=c outputs=e\n";

static void specs(void **state) {
  (void)state;
  built b;
  build_text(k_chain, &b);
  tg_processor p[4];
  tg_error_info err = {{0}};
  assert_int_equal(tg_placement_apply_spec(b.graph, "auto", p, &err), TG_OK);
  tg_processor want_auto[4] = {TG_PROCESSOR_GPU, TG_PROCESSOR_CPU, TG_PROCESSOR_GPU, TG_PROCESSOR_CPU};
  assert_memory_equal(p, want_auto, sizeof p);
  assert_int_equal(tg_placement_apply_spec(b.graph, "gpu", p, &err), TG_OK);
  for (int i = 0; i < 4; ++i) assert_int_equal(p[i], TG_PROCESSOR_GPU);
  assert_int_equal(tg_placement_apply_spec(b.graph, "cpu:*", p, &err), TG_OK);
  for (int i = 0; i < 4; ++i) assert_int_equal(p[i], TG_PROCESSOR_CPU);
  assert_int_equal(tg_placement_apply_spec(b.graph, "cpu:ADD,CONV_2D", p, &err), TG_OK);
  tg_processor want_list[4] = {TG_PROCESSOR_CPU, TG_PROCESSOR_GPU, TG_PROCESSOR_CPU, TG_PROCESSOR_GPU};
  assert_memory_equal(p, want_list, sizeof p);
  /* Failures leave the placement as it was and say why. */
  static const char *const bad[] = {"cpu:", "cpu:ADD,,CONV_2D", "cpu:ADDD", "CPU:ADD", "everything", ""};
  static const char *const says[] = {"empty op type", "empty op type", "no op of the graph has type 'ADDD'",
                                     "expected auto", "expected auto", "expected auto"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    err.message[0] = '\0';
    assert_int_equal(tg_placement_apply_spec(b.graph, bad[i], p, &err), TG_ERROR_INVALID_ARGUMENT);
    if (strstr(err.message, says[i]) == NULL) fail_msg("'%s': %s", bad[i], err.message);
    assert_memory_equal(p, want_list, sizeof p);
  }
  built_free(&b);
}

static void place_files(void **state) {
  (void)state;
  built b;
  build_text(k_chain, &b);
  tg_processor p[4] = {TG_PROCESSOR_GPU, TG_PROCESSOR_GPU, TG_PROCESSOR_GPU, TG_PROCESSOR_GPU};
  tg_error_info err = {{0}};
  const char ok[] = "# a comment\n"
                    "\n"
                    "0 cpu   # op zero\n"
                    "MyCustom -> cpu\r\n"
                    "  3=gpu\n"
                    "ADD,cpu\n"
                    "0\tgpu";
  assert_int_equal(tg_placement_parse(b.graph, ok, sizeof ok - 1, "p.txt", p, &err), TG_OK);
  tg_processor want[4] = {TG_PROCESSOR_GPU, TG_PROCESSOR_CPU, TG_PROCESSOR_CPU, TG_PROCESSOR_GPU};
  assert_memory_equal(p, want, sizeof p);
  static const struct {
    const char *text;
    const char *says;
  } bad[] = {
      {"0 cpu\n4 cpu\n", "p.txt:2: op 4 is out of range (the graph has 4 ops)"},
      {"99999999999999999999999 cpu\n", "p.txt:1: op 99999999999999999999999 is out of range"},
      {"CONV cpu\n", "p.txt:1: no op of the graph is named 'CONV'"},
      {"0 tpu\n", "p.txt:1: unknown processor 'tpu'"},
      {"\n\ncpu\n", "p.txt:3: expected 'OP PROCESSOR'"},
      {"-> cpu\n", "p.txt:1: no op before the processor"},
      {"0 CPU\n", "p.txt:1: unknown processor 'CPU'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    err.message[0] = '\0';
    assert_int_equal(tg_placement_parse(b.graph, bad[i].text, strlen(bad[i].text), "p.txt", p, &err), TG_ERROR_PARSE);
    if (strstr(err.message, bad[i].says) == NULL) fail_msg("%zu: %s", i, err.message);
    assert_memory_equal(p, want, sizeof p);
  }
  const char nul[] = "0 cpu\n1 c\0u\n";
  assert_int_equal(tg_placement_parse(b.graph, nul, sizeof nul - 1, "p.txt", p, &err), TG_ERROR_PARSE);
  assert_non_null(strstr(err.message, "p.txt:2: NUL byte"));
  assert_memory_equal(p, want, sizeof p);
  /* Files. */
  assert_int_equal(tg_placement_read_file(b.graph, "/nonexistent/place.txt", NULL, p, &err), TG_ERROR_IO);
  char path[] = "/tmp/tg_place_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs("1 gpu\n2 gpu\n", f);
  fclose(f);
  assert_int_equal(tg_placement_read_file(b.graph, path, NULL, p, &err), TG_OK);
  remove(path);
  for (int i = 0; i < 4; ++i) assert_int_equal(p[i], TG_PROCESSOR_GPU);
  /* A processor out of range in the input is refused, not used. */
  p[2] = (tg_processor)7;
  assert_int_equal(tg_placement_parse(b.graph, "", 0, "p.txt", p, &err), TG_ERROR_INVALID_ARGUMENT);
  built_free(&b);
}

/* ---- spaces, relation, waits, baseline: known answers ---- */

/* a: GPU writes, CPU reads (shared). b: GPU writes (after the CPU op in op order, but not after
 * it in any timeline), CPU reads (shared). c: GPU only (device). h: CPU only (host). */
static const char k_race[] =
    "tensor x 1x8x8x4 float32 input\n"
    "tensor a 1x8x8x4 float32\n"
    "tensor h 1x8x8x4 float32\n"
    "tensor b 1x8x8x4 float32\n"
    "tensor c 1x8x8x4 float32\n"
    "tensor y 1x8x8x4 float32 output\n"
    "op CONV_2D inputs=x outputs=a\n"          /* 0 gpu */
    "op Custom inputs=a outputs=h\n"           /* 1 cpu */
    "op CONV_2D inputs=x outputs=b\n"          /* 2 gpu */
    "op CONV_2D inputs=b outputs=c\n"          /* 3 gpu */
    "op Custom inputs=h,b,c outputs=y\n";      /* 4 cpu */

static void spaces_known(void **state) {
  (void)state;
  built b;
  build_text(k_race, &b);
  const tg_graph *g = b.graph;
  tg_processor p[5];
  tg_error_info err = {{0}};
  assert_int_equal(tg_placement_apply_spec(g, "auto", p, &err), TG_OK);
  tg_spaces *sp = NULL;
  assert_int_equal(tg_spaces_create(g, b.lifetimes, b.records, p, NULL, &sp, &err), TG_OK);
  assert_int_equal(sp->space_of_tensor[tensor_index(g, "a")], TG_SPACE_SHARED);
  assert_int_equal(sp->space_of_tensor[tensor_index(g, "b")], TG_SPACE_SHARED);
  assert_int_equal(sp->space_of_tensor[tensor_index(g, "c")], TG_SPACE_SHARED);
  assert_int_equal(sp->space_of_tensor[tensor_index(g, "h")], TG_SPACE_HOST);
  assert_int_equal(sp->space_of_tensor[tensor_index(g, "x")], TG_SPACE_COUNT); /* not planned */
  assert_int_equal(sp->record_count, 4);
  assert_int_equal(tg_spaces_count(sp, TG_SPACE_SHARED), 3);
  assert_int_equal(tg_spaces_count(sp, TG_SPACE_HOST), 1);
  assert_int_equal(tg_spaces_count(sp, TG_SPACE_DEVICE), 0);
  assert_int_equal(sp->last_op_on[TG_PROCESSOR_GPU][tensor_index(g, "b")], 3);
  assert_int_equal(sp->last_op_on[TG_PROCESSOR_CPU][tensor_index(g, "b")], 4);
  assert_int_equal(sp->last_op_on[TG_PROCESSOR_CPU][tensor_index(g, "c")], 4);
  /* a [0,1] and b [2,4] have disjoint intervals, but the CPU may still read a when the GPU
   * writes b: nothing orders op 1 before op 2. Serial execution alone would let them share. */
  const tg_space_set *shared = &sp->sets[TG_SET_SHARED];
  assert_int_equal(shared->records->count, 3);
  size_t ia = SIZE_MAX, ib = SIZE_MAX;
  for (size_t r = 0; r < 3; ++r) {
    if (shared->tensor_of[r] == tensor_index(g, "a")) ia = r;
    if (shared->tensor_of[r] == tensor_index(g, "b")) ib = r;
  }
  assert_true(ia < 3 && ib < 3);
  tg_policy_relation *rel = NULL;
  assert_int_equal(tg_spaces_relation_create(sp, b.schedule, TG_SET_SHARED, TG_POLICY_SERIAL, NULL, &rel), TG_OK);
  const tg_share_relation *r = tg_policy_relation_get(rel);
  assert_non_null(r);
  assert_false(r->may_share(r->user, ia, ib));
  assert_false(r->may_share(r->user, ib, ia));
  tg_policy_relation_destroy(rel);
  /* Host sets (one in-order timeline) use interval disjointness: no relation. */
  assert_int_equal(tg_spaces_relation_create(sp, b.schedule, TG_SET_HOST, TG_POLICY_PARALLEL_SAFE, NULL, &rel), TG_OK);
  assert_null(tg_policy_relation_get(rel));
  tg_policy_relation_destroy(rel);
  assert_int_equal(tg_spaces_relation_create(sp, b.schedule, TG_SET_COUNT, TG_POLICY_SERIAL, NULL, &rel),
                   TG_ERROR_INVALID_ARGUMENT);
  assert_null(rel);
  /* The shared plan keeps a and b apart; plain serial planning would put them together. */
  tg_space_options o;
  memset(&o, 0, sizeof o);
  o.plan.strategy = TG_STRATEGY_GREEDY_BY_SIZE;
  tg_space_plan plans[TG_SET_COUNT];
  memset(plans, 0, sizeof plans);
  for (size_t k = 0; k < TG_SET_COUNT; ++k)
    assert_int_equal(tg_spaces_plan_set(sp, b.schedule, k, NULL, &o, NULL, &plans[k], &err), TG_OK);
  assert_non_null(plans[TG_SET_SHARED].plan);
  assert_int_not_equal(plans[TG_SET_SHARED].plan->object_of[ia], plans[TG_SET_SHARED].plan->object_of[ib]);
  tg_plan *serial = NULL;
  tg_plan_options so = {0};
  so.strategy = TG_STRATEGY_GREEDY_BY_SIZE;
  assert_int_equal(tg_plan_compute(shared->records->records, 3, 1, &so, NULL, &serial), TG_OK);
  assert_int_equal(serial->object_of[ia], serial->object_of[ib]);
  tg_plan_destroy(serial);
  assert_null(plans[TG_SET_DEVICE].plan);
  assert_int_equal(plans[TG_SET_SHARED].bytes, 3 * 1024);
  assert_int_equal(plans[TG_SET_HOST].bytes, 1024);
  assert_int_equal(plans[TG_SET_SHARED].allocations, 3);
  /* A budget the plan exceeds: TG_ERROR_BUDGET naming the space, with the plan kept. */
  tg_space_plan over;
  o.budget = 2048;
  assert_int_equal(tg_spaces_plan_set(sp, b.schedule, TG_SET_SHARED, NULL, &o, NULL, &over, &err), TG_ERROR_BUDGET);
  assert_non_null(strstr(err.message, "shared space: the plan needs 3072 bytes, the budget is 2048"));
  assert_non_null(over.plan);
  tg_space_plan_free(&over);
  tg_space_plan_free(&over); /* zeroed: a second free is harmless */
  /* Waits: 1 after 0 (a), 4 after 2 (b) and 3 (c); 4 after 2 is implied by 2 -> 3 -> 4. */
  tg_space_plan_ref refs[TG_SET_COUNT];
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    refs[k].plan = plans[k].plan;
    refs[k].records = sp->sets[k].records->records;
  }
  tg_spaces_waits *w = NULL;
  assert_int_equal(tg_spaces_compute_waits(sp, b.schedule, refs, 1, NULL, &w, &err), TG_OK);
  assert_int_equal(w->cross_data_edges, 3);
  assert_int_equal(w->cross_count, 2);
  assert_int_equal(w->cross[0].op, 1);
  assert_int_equal(w->cross[0].after, 0);
  assert_int_equal(w->cross[0].tensor, tensor_index(g, "a"));
  assert_false(w->cross[0].reuse);
  assert_int_equal(w->cross[1].op, 4);
  assert_int_equal(w->cross[1].after, 3);
  assert_int_equal(w->cross[1].tensor, tensor_index(g, "c"));
  /* Per-op waits are the graph's edges here (no reuse). */
  assert_int_equal(w->wait_start[5] - w->wait_start[4], 3); /* 1, 2, 3 */
  assert_int_equal(w->waits[w->wait_start[4]], 1);
  tg_spaces_waits_destroy(w);
  /* The baseline: the GPU side holds a, b, c (a until op 0, b until 3, c until 3), the CPU side
   * a, b, c, h; three copies of 1024 bytes. */
  tg_partition_baseline bl;
  assert_int_equal(tg_spaces_partition_baseline(sp, b.records, &o, &o, NULL, &bl, &err), TG_OK);
  assert_int_equal(bl.copies, 3);
  assert_int_equal(bl.copy_bytes, 3 * 1024);
  assert_int_equal(bl.gpu_bytes, 2 * 1024); /* a [0,0] shares with c [3,3]; b [2,3] */
  assert_int_equal(bl.total_bytes, bl.gpu_bytes + bl.cpu_bytes);
  /* Every set at once: the same plans, added up per space, and the same waits; over a device
   * budget, the space as a whole is refused. */
  tg_space_options all[TG_SET_COUNT] = {o, o, o, o};
  for (int k = 0; k < TG_SET_COUNT; ++k) all[k].budget = 0;
  tg_spaces_plan sp_plan;
  assert_int_equal(tg_spaces_plan_all(sp, b.schedule, all, NULL, 0, 1, NULL, &sp_plan, &err), TG_OK);
  for (int k = 0; k < TG_SET_COUNT; ++k) assert_int_equal(sp_plan.sets[k].bytes, plans[k].bytes);
  assert_int_equal(sp_plan.bytes[TG_SPACE_SHARED], 3 * 1024);
  assert_int_equal(sp_plan.bytes[TG_SPACE_HOST], 1024);
  assert_int_equal(sp_plan.allocations[TG_SPACE_SHARED], 3);
  assert_int_equal(sp_plan.total_bytes, sp_plan.bytes[0] + sp_plan.bytes[1] + sp_plan.bytes[2]);
  assert_true(sp_plan.total_lower_bound_bytes <= sp_plan.total_bytes);
  assert_int_equal(sp_plan.waits->cross_count, 2);
  assert_int_equal(sp_plan.waits->cross[1].op, 4);
  assert_int_equal(sp_plan.waits->cross[1].after, 3);
  tg_spaces_plan_free(&sp_plan);
  tg_spaces_plan_free(&sp_plan); /* zeroed: a second free is harmless */
  assert_int_equal(tg_spaces_plan_all(sp, b.schedule, NULL, NULL, 0, 1, NULL, &sp_plan, &err), TG_ERROR_INVALID_ARGUMENT);
  for (int k = 0; k < TG_SET_COUNT; ++k) tg_space_plan_free(&plans[k]);
  tg_spaces_destroy(sp);
  built_free(&b);
}

/* Everything on the GPU: the device set is the model's records, and its plans are exactly the
 * plans of the same records without a placement. */
static void all_gpu_is_unchanged(void **state) {
  (void)state;
  static const char *const models[] = {"selfie_segmentation.tflite", "pose_landmark_lite.tflite"};
  static const tg_storage storages[] = {TG_STORAGE_BUFFER, TG_STORAGE_TEXTURE_2D};
  for (size_t m = 0; m < 2; ++m) {
    char path[1024];
    if (tg_test_model_path(path, sizeof path, models[m]) == NULL) continue;
    for (size_t s = 0; s < 2; ++s) {
      tg_model *model = NULL;
      tg_error_info err = {{0}};
      assert_int_equal(tg_model_load(path, NULL, &model, &err), TG_OK);
      built b;
      tg_graph *g = model->graph;
      model->graph = NULL;
      build_from_graph(g, storages[s], 0, &b);
      tg_model_destroy(model);
      tg_spaces *sp = NULL;
      assert_int_equal(tg_spaces_create(g, b.lifetimes, b.records, NULL, NULL, &sp, &err), TG_OK);
      assert_int_equal(sp->sets[TG_SET_DEVICE].records->count, b.records->records->count);
      assert_int_equal(tg_spaces_count(sp, TG_SPACE_HOST) + tg_spaces_count(sp, TG_SPACE_SHARED), 0);
      for (tg_policy pol = TG_POLICY_SERIAL; pol < TG_POLICY_COUNT; ++pol) {
        tg_space_options o;
        memset(&o, 0, sizeof o);
        o.plan.strategy = TG_STRATEGY_BEST;
        /* No search: the two plans compared below must not depend on the clock. */
        o.plan.time_limit_ms = TG_TIME_LIMIT_NONE;
        o.policy = pol;
        tg_space_plan sp_plan;
        assert_int_equal(tg_spaces_plan_set(sp, b.schedule, TG_SET_DEVICE, NULL, &o, NULL, &sp_plan, &err), TG_OK);
        tg_policy_relation *rel = NULL;
        assert_int_equal(tg_policy_relation_create(b.schedule, pol, b.records->tensor_of,
                                                   b.records->records->count, NULL, &rel), TG_OK);
        tg_plan_options po = {0};
        po.strategy = TG_STRATEGY_BEST;
        po.time_limit_ms = TG_TIME_LIMIT_NONE;
        po.relation = tg_policy_relation_get(rel);
        tg_plan *plain = NULL;
        const tg_record_set *rs = b.records->records;
        assert_int_equal(tg_plan_compute(rs->records, rs->count, rs->dims, &po, NULL, &plain), TG_OK);
        /* With every op on the GPU the timelines add nothing under parallel-safe either: the
         * CPU has no op. */
        assert_int_equal(sp_plan.plan->total, plain->total);
        assert_memory_equal(sp_plan.plan->object_of, plain->object_of, rs->count * sizeof *plain->object_of);
        /* Every set at once: the device space is that plan; one byte less of budget refuses it. */
        tg_space_options all[TG_SET_COUNT] = {o, o, o, o};
        tg_spaces_plan every;
        assert_int_equal(tg_spaces_plan_all(sp, b.schedule, all, NULL, 0, 0, NULL, &every, &err), TG_OK);
        assert_int_equal(every.bytes[TG_SPACE_DEVICE], sp_plan.bytes);
        assert_int_equal(every.total_bytes, sp_plan.bytes);
        tg_spaces_plan_free(&every);
        assert_int_equal(tg_spaces_plan_all(sp, b.schedule, all, NULL, sp_plan.bytes - 1, 0, NULL, &every, &err),
                         TG_ERROR_BUDGET);
        assert_non_null(strstr(err.message, "device space: the plans need"));
        tg_spaces_plan_free(&every);
        tg_plan_destroy(plain);
        tg_policy_relation_destroy(rel);
        tg_space_plan_free(&sp_plan);
      }
      tg_spaces_destroy(sp);
      built_free(&b);
    }
  }
}

static void bad_inputs(void **state) {
  (void)state;
  built b;
  build_text(k_chain, &b);
  tg_spaces *sp = NULL;
  tg_error_info err = {{0}};
  tg_processor p[4] = {TG_PROCESSOR_GPU, (tg_processor)3, TG_PROCESSOR_GPU, TG_PROCESSOR_GPU};
  assert_int_equal(tg_spaces_create(b.graph, b.lifetimes, b.records, p, NULL, &sp, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_null(sp);
  assert_non_null(strstr(err.message, "op 1 has processor 3"));
  assert_int_equal(tg_spaces_create(NULL, b.lifetimes, b.records, NULL, NULL, &sp, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_spaces_create(b.graph, b.lifetimes, b.records, NULL, NULL, NULL, &err), TG_ERROR_INVALID_ARGUMENT);
  /* Records of another graph. */
  built other;
  build_text(k_race, &other);
  assert_int_equal(tg_spaces_create(b.graph, b.lifetimes, other.records, NULL, NULL, &sp, &err),
                   TG_ERROR_INVALID_ARGUMENT);
  assert_null(sp);
  /* A schedule of another graph. */
  assert_int_equal(tg_spaces_create(b.graph, b.lifetimes, b.records, NULL, NULL, &sp, &err), TG_OK);
  tg_space_options o;
  memset(&o, 0, sizeof o);
  tg_space_plan pl;
  assert_int_equal(tg_spaces_plan_set(sp, other.schedule, TG_SET_DEVICE, NULL, &o, NULL, &pl, &err),
                   TG_ERROR_INVALID_ARGUMENT);
  assert_null(pl.plan);
  /* Replacement records that do not match. */
  tg_record_set *wrong = NULL;
  assert_int_equal(tg_record_set_create(1, 1, NULL, &wrong), TG_OK);
  assert_int_equal(tg_spaces_plan_set(sp, b.schedule, TG_SET_DEVICE, wrong, &o, NULL, &pl, &err),
                   TG_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "replacement records do not match"));
  tg_record_set_destroy(wrong);
  tg_spaces_destroy(sp);
  tg_spaces_destroy(NULL);
  tg_spaces_waits_destroy(NULL);
  tg_space_plan_free(NULL);
  built_free(&other);
  built_free(&b);
}

/* Every host allocation of spaces, planning, waits and baseline failing in turn. */
static void allocation_failures(void **state) {
  (void)state;
  built b;
  build_text(k_race, &b);
  tg_processor p[5];
  assert_int_equal(tg_placement_apply_spec(b.graph, "auto", p, NULL), TG_OK);
  for (uint64_t n = 1;; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, n);
    tg_error_info err = {{0}};
    tg_spaces *sp = NULL;
    tg_space_plan plans[TG_SET_COUNT];
    memset(plans, 0, sizeof plans);
    tg_spaces_waits *w = NULL;
    tg_partition_baseline bl;
    tg_space_options o;
    memset(&o, 0, sizeof o);
    o.plan.strategy = TG_STRATEGY_BEST;
    o.policy = TG_POLICY_PARALLEL_SAFE;
    tg_status st = tg_spaces_create(b.graph, b.lifetimes, b.records, p, &fa.base, &sp, &err);
    for (size_t k = 0; k < TG_SET_COUNT && st == TG_OK; ++k)
      st = tg_spaces_plan_set(sp, b.schedule, k, NULL, &o, &fa.base, &plans[k], &err);
    if (st == TG_OK) {
      tg_space_plan_ref refs[TG_SET_COUNT];
      for (int k = 0; k < TG_SET_COUNT; ++k) {
        refs[k].plan = plans[k].plan;
        refs[k].records = sp->sets[k].records->records;
      }
      st = tg_spaces_compute_waits(sp, b.schedule, refs, 0, &fa.base, &w, &err);
    }
    if (st == TG_OK) st = tg_spaces_partition_baseline(sp, b.records, &o, &o, &fa.base, &bl, &err);
    int failed = fa.failures > 0;
    tg_spaces_waits_destroy(w);
    for (int k = 0; k < TG_SET_COUNT; ++k) tg_space_plan_free(&plans[k]);
    tg_spaces_destroy(sp);
    assert_int_equal(fa.live_blocks, 0);
    if (!failed) {
      assert_int_equal(st, TG_OK);
      break;
    }
    assert_int_equal(st, TG_ERROR_OUT_OF_HOST_MEMORY);
    if (err.message[0] == '\0') fail_msg("allocation %llu failed without a message", (unsigned long long)n);
  }
  built_free(&b);
}

/* ---- the property test ---- */

#define MAX_OPS 40
#define MAX_T (MAX_OPS * 2 + 4)

/* A random DAG: one input, a few constants, each op reading 1-3 earlier tensors (mostly recent
 * ones) and writing 1-2 tensors; the last op's output is a graph output. */
static tg_graph *random_graph(tg_test_rng *rng, size_t nops) {
  size_t nconst = 2, nt = 1 + nconst;
  int32_t ins[MAX_OPS][3], outs[MAX_OPS][2];
  uint32_t nin[MAX_OPS], nout[MAX_OPS];
  for (size_t i = 0; i < nops; ++i) {
    nin[i] = (uint32_t)tg_test_rng_range(rng, 1, 3);
    for (uint32_t k = 0; k < nin[i]; ++k) {
      size_t pick;
      uint64_t roll = tg_test_rng_range(rng, 0, 9);
      if (roll == 0) pick = 1 + (size_t)tg_test_rng_range(rng, 0, nconst - 1); /* a constant */
      else if (roll < 7 && nt > 1 + nconst) pick = nt - 1 - (size_t)tg_test_rng_range(rng, 0, nt - 2 - nconst < 3 ? nt - 2 - nconst : 3);
      else {
        pick = (size_t)tg_test_rng_range(rng, 0, nt - 1);
        if (pick >= 1 && pick <= nconst && nt > 1 + nconst) pick = 0;
      }
      ins[i][k] = (int32_t)pick;
    }
    /* Mostly ops reading at least one activation; now and then one computing constants only
     * (folded at load time). */
    if (tg_test_rng_range(rng, 0, 19) != 0) {
      int any = 0;
      for (uint32_t k = 0; k < nin[i]; ++k) any |= ins[i][k] == 0 || ins[i][k] > (int32_t)nconst;
      if (!any) ins[i][0] = nt > 1 + nconst ? (int32_t)(nt - 1) : 0;
    }
    nout[i] = (uint32_t)tg_test_rng_range(rng, 1, 2);
    for (uint32_t k = 0; k < nout[i]; ++k) outs[i][k] = (int32_t)nt++;
  }
  tg_graph *g = NULL;
  assert_int_equal(tg_graph_create(nt, nops, NULL, &g), TG_OK);
  for (size_t t = 0; t < nt; ++t) {
    char name[32];
    snprintf(name, sizeof name, "t%zu", t);
    int64_t shape[4] = {1, (int64_t)tg_test_rng_range(rng, 1, 8), (int64_t)tg_test_rng_range(rng, 1, 8),
                        (int64_t)tg_test_rng_range(rng, 1, 12)};
    uint32_t flags = (t >= 1 && t <= nconst) ? TG_TENSOR_CONSTANT : 0;
    assert_int_equal(tg_graph_set_tensor(g, t, name, 4, shape, TG_DTYPE_FLOAT32, flags), TG_OK);
  }
  static const char *const types[] = {"CONV_2D", "ADD", "Custom"};
  for (size_t i = 0; i < nops; ++i)
    assert_int_equal(tg_graph_set_op(g, i, types[tg_test_rng_range(rng, 0, 2)], nin[i], ins[i], nout[i], outs[i]),
                     TG_OK);
  uint32_t in = 0, out = (uint32_t)outs[nops - 1][0];
  assert_int_equal(tg_graph_set_io(g, 1, &in, 1, &out), TG_OK);
  return g;
}

/* The independent routine: the ops that write and read each tensor, and reachability over an
 * explicit edge list (graph edges from the graph itself, each in-order processor's op order,
 * the waits given), by a plain depth-first search. */
typedef struct model_check {
  size_t n;
  uint8_t reach[MAX_OPS][MAX_OPS]; /* reach[a][b]: a path a -> b of length >= 1 */
  uint8_t edge[MAX_OPS][MAX_OPS];
} model_check;

static int producer_of(const tg_graph *g, size_t t) {
  for (size_t i = 0; i < g->op_count; ++i)
    for (uint32_t k = 0; k < g->ops[i].output_count; ++k)
      if ((size_t)g->ops[i].outputs[k] == t) return (int)i;
  return -1;
}

static int reads(const tg_graph *g, size_t op, size_t t) {
  for (uint32_t k = 0; k < g->ops[op].input_count; ++k)
    if (g->ops[op].inputs[k] == (int32_t)t) return 1;
  return 0;
}

static void dfs(model_check *m, size_t from, size_t at) {
  for (size_t b = 0; b < m->n; ++b)
    if (m->edge[at][b] && !m->reach[from][b]) {
      m->reach[from][b] = 1;
      dfs(m, from, b);
    }
}

static void model_build(model_check *m, const tg_graph *g, const tg_processor *proc, uint8_t *op_folded,
                        int gpu_chain, const tg_spaces_waits *w) {
  memset(m, 0, sizeof *m);
  m->n = g->op_count;
  for (size_t i = 0; i < m->n; ++i)
    for (uint32_t k = 0; k < g->ops[i].input_count; ++k) {
      int p = producer_of(g, (size_t)g->ops[i].inputs[k]);
      if (p >= 0) m->edge[p][i] = 1;
    }
  for (int pr = 0; pr < TG_PROCESSOR_COUNT; ++pr) {
    if (pr == TG_PROCESSOR_GPU && !gpu_chain) continue;
    int last = -1;
    for (size_t i = 0; i < m->n; ++i) {
      if (op_folded[i] || proc[i] != (tg_processor)pr) continue;
      if (last >= 0) m->edge[last][i] = 1;
      last = (int)i;
    }
  }
  for (size_t i = 0; i < m->n; ++i)
    for (size_t e = w->wait_start[i]; e < w->wait_start[i + 1]; ++e) {
      assert_true(w->waits[e] < i);
      m->edge[w->waits[e]][i] = 1;
    }
  for (size_t a = 0; a < m->n; ++a) dfs(m, a, a);
}

static uint64_t volume(tg_extent e) { return e.w * e.h * e.d; }

/* No two records of one set sharing memory are touched at overlapping times: every op
 * touching the earlier one reaches the later one's producer. Returns the pairs checked. */
static size_t check_sets(const model_check *m, const tg_graph *g, const tg_spaces *sp,
                         const tg_space_plan *plans, const char *what) {
  size_t pairs = 0;
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    const tg_space_set *ss = &sp->sets[k];
    const tg_plan *p = plans[k].plan;
    size_t n = ss->records->count;
    for (size_t x = 0; x < n; ++x)
      for (size_t y = 0; y < n; ++y) {
        if (x == y) continue;
        const tg_usage_record *A = &ss->records->records[x], *B = &ss->records->records[y];
        int share = p->mode == TG_MODE_OBJECTS
                        ? p->object_of[x] == p->object_of[y]
                        : (volume(A->size) && volume(B->size) && p->offset_of[x] < p->offset_of[y] + volume(B->size) &&
                           p->offset_of[y] < p->offset_of[x] + volume(A->size));
        if (!share || A->last_task >= B->first_task) continue;
        ++pairs;
        size_t ta = ss->tensor_of[x], tb = ss->tensor_of[y];
        int pb = producer_of(g, tb);
        if (pb < 0) fail_msg("%s: record %zu shares memory after %zu but has no producer", what, y, x);
        int pa = producer_of(g, ta);
        for (size_t op = 0; op < g->op_count; ++op) {
          if (!((int)op == pa || reads(g, op, ta))) continue;
          if (!m->reach[op][pb])
            fail_msg("%s: %s set: tensor %s (touched by op %zu on the %s) and tensor %s (written by op %d on the "
                     "%s) share memory, but nothing orders op %zu before op %d",
                     what, tg_space_name(ss->space), g->tensors[ta].name, op, tg_processor_name(sp->processor_of[op]),
                     g->tensors[tb].name, pb, tg_processor_name(sp->processor_of[pb]), op, pb);
        }
      }
  }
  return pairs;
}

static void random_dags(void **state) {
  (void)state;
  tg_test_rng rng = {2024};
  size_t instances = tg_test_quick() ? 600 : 3000;
  size_t pairs = 0, cross_pairs = 0, shared_records = 0, refused = 0;
  for (size_t it = 0; it < instances; ++it) {
    size_t nops = (size_t)tg_test_rng_range(&rng, 2, MAX_OPS);
    tg_graph *g = random_graph(&rng, nops);
    built b;
    tg_storage storage = tg_test_rng_range(&rng, 0, 3) == 0 ? TG_STORAGE_TEXTURE_2D : TG_STORAGE_BUFFER;
    build_from_graph(g, storage, (int)tg_test_rng_range(&rng, 0, 1), &b);
    tg_processor proc[MAX_OPS];
    uint64_t cpu_share = tg_test_rng_range(&rng, 0, 4); /* 0, 25, 50, 75, 100 % */
    for (size_t i = 0; i < nops; ++i)
      proc[i] = tg_test_rng_range(&rng, 1, 4) <= cpu_share ? TG_PROCESSOR_CPU : TG_PROCESSOR_GPU;
    /* Folded ops, independently: all present inputs constant (transitively). */
    uint8_t is_const_t[MAX_T] = {0}, op_folded[MAX_OPS] = {0};
    for (size_t t = 0; t < g->tensor_count; ++t) is_const_t[t] = (g->tensors[t].flags & TG_TENSOR_CONSTANT) != 0;
    for (size_t i = 0; i < nops; ++i) {
      int all = 1;
      for (uint32_t k = 0; k < g->ops[i].input_count; ++k) all &= is_const_t[g->ops[i].inputs[k]];
      op_folded[i] = (uint8_t)all;
      if (all)
        for (uint32_t k = 0; k < g->ops[i].output_count; ++k) is_const_t[g->ops[i].outputs[k]] = 1;
    }
    tg_error_info err = {{0}};
    tg_spaces *sp = NULL;
    if (tg_spaces_create(g, b.lifetimes, b.records, proc, NULL, &sp, &err) != TG_OK) fail_msg("%s", err.message);
    /* Spaces against the placement, from the graph alone. */
    for (size_t r = 0; r < sp->record_count; ++r) {
      size_t t = sp->tensor_of[r];
      int p = producer_of(g, t), gpu = 0, cpu = 0;
      if (p >= 0) {
        if (proc[p] == TG_PROCESSOR_CPU) cpu = 1;
        else gpu = 1;
      }
      for (size_t op = 0; op < nops; ++op)
        if (reads(g, op, t)) {
          if (proc[op] == TG_PROCESSOR_CPU) cpu = 1;
          else gpu = 1;
        }
      tg_space want = gpu && cpu ? TG_SPACE_SHARED : cpu ? TG_SPACE_HOST : TG_SPACE_DEVICE;
      assert_int_equal(sp->space_of_tensor[t], want);
      shared_records += want == TG_SPACE_SHARED;
    }
    tg_policy policy = (tg_policy)tg_test_rng_range(&rng, 0, TG_POLICY_COUNT - 1);
    tg_space_plan plans[TG_SET_COUNT];
    memset(plans, 0, sizeof plans);
    for (size_t k = 0; k < TG_SET_COUNT; ++k) {
      tg_space_options o;
      memset(&o, 0, sizeof o);
      o.policy = policy;
      o.plan.mode = (sp->sets[k].records->dims == 1 && tg_test_rng_range(&rng, 0, 1)) ? TG_MODE_OFFSETS : TG_MODE_OBJECTS;
      static const tg_strategy obj[] = {TG_STRATEGY_NAIVE, TG_STRATEGY_EQUALITY, TG_STRATEGY_GREEDY_IN_ORDER,
                                        TG_STRATEGY_GREEDY_BY_BREADTH, TG_STRATEGY_GREEDY_BY_SIZE,
                                        TG_STRATEGY_MIN_COST_FLOW, TG_STRATEGY_BEST};
      static const tg_strategy off[] = {TG_STRATEGY_NAIVE, TG_STRATEGY_GREEDY_IN_ORDER, TG_STRATEGY_GREEDY_BY_BREADTH,
                                        TG_STRATEGY_GREEDY_BY_SIZE, TG_STRATEGY_BEST};
      o.plan.strategy = o.plan.mode == TG_MODE_OBJECTS ? obj[tg_test_rng_range(&rng, 0, 6)] : off[tg_test_rng_range(&rng, 0, 4)];
      if (tg_spaces_plan_set(sp, b.schedule, k, NULL, &o, NULL, &plans[k], &err) != TG_OK)
        fail_msg("instance %zu set %zu: %s", it, k, err.message);
      if (plans[k].plan) {
        /* The validator, with the relation, too. */
        tg_policy_relation *rel = NULL;
        assert_int_equal(tg_spaces_relation_create(sp, b.schedule, k, policy, NULL, &rel), TG_OK);
        const tg_record_set *rs = sp->sets[k].records;
        tg_test_assert_valid(rs->records, rs->count, rs->dims, plans[k].plan, 0, tg_policy_relation_get(rel));
        /* The shared relation refuses pairs serial execution would accept, sometimes. */
        const tg_share_relation *r = tg_policy_relation_get(rel);
        if (r && k == TG_SET_SHARED)
          for (size_t x = 0; x < rs->count; ++x)
            for (size_t y = 0; y < rs->count; ++y)
              if (rs->records[x].last_task < rs->records[y].first_task && !r->may_share(r->user, x, y)) ++refused;
        tg_policy_relation_destroy(rel);
      }
    }
    tg_space_plan_ref refs[TG_SET_COUNT];
    for (int k = 0; k < TG_SET_COUNT; ++k) {
      refs[k].plan = plans[k].plan;
      refs[k].records = sp->sets[k].records->records;
    }
    /* Two execution models: the GPU in order (an in-order queue), or out of order. */
    for (int gpu_in_order = 0; gpu_in_order <= 1; ++gpu_in_order) {
      tg_spaces_waits *w = NULL;
      if (tg_spaces_compute_waits(sp, b.schedule, refs, gpu_in_order, NULL, &w, &err) != TG_OK)
        fail_msg("instance %zu: waits: %s", it, err.message);
      model_check *m = calloc(1, sizeof *m);
      assert_non_null(m);
      model_build(m, g, proc, op_folded, gpu_in_order, w);
      char what[64];
      snprintf(what, sizeof what, "instance %zu (%s, gpu %s)", it, tg_policy_name(policy),
               gpu_in_order ? "in order" : "out of order");
      pairs += check_sets(m, g, sp, plans, what);
      /* Each wait between processors joins ops of different processors, and nothing else in
       * the model implies it. The relation covers both timelines: with the GPU in order no
       * set needs a reuse wait between processors. */
      for (size_t e = 0; e < w->cross_count; ++e) {
        const tg_cross_wait *c = &w->cross[e];
        assert_int_not_equal(proc[c->op], proc[c->after]);
        assert_true(c->after < c->op);
        ++cross_pairs;
        if (gpu_in_order && policy == TG_POLICY_SERIAL && c->reuse)
          fail_msg("%s: a reuse wait between processors (op %u after %u) under in-order timelines", what, c->op,
                   c->after);
      }
      /* Every graph edge between processors is implied by the reduced waits and the model. */
      model_check *reduced = calloc(1, sizeof *reduced);
      assert_non_null(reduced);
      reduced->n = nops;
      memcpy(reduced->edge, m->edge, sizeof m->edge);
      for (size_t i = 0; i < nops; ++i)
        for (size_t j = 0; j < nops; ++j)
          if (proc[i] != proc[j]) reduced->edge[i][j] = 0; /* cross edges: only the reduced ones */
      for (size_t e = 0; e < w->cross_count; ++e) reduced->edge[w->cross[e].after][w->cross[e].op] = 1;
      for (size_t a = 0; a < nops; ++a) dfs(reduced, a, a);
      for (size_t i = 0; i < nops; ++i)
        for (size_t j = 0; j < nops; ++j)
          if (m->edge[i][j] && proc[i] != proc[j] && !op_folded[i] && !op_folded[j] && !reduced->reach[i][j])
            fail_msg("%s: the edge %zu -> %zu between processors is lost in the reduction", what, i, j);
      free(reduced);
      free(m);
      tg_spaces_waits_destroy(w);
    }
    for (int k = 0; k < TG_SET_COUNT; ++k) tg_space_plan_free(&plans[k]);
    tg_spaces_destroy(sp);
    built_free(&b);
  }
  print_message("%zu random DAGs: %zu sharing pairs checked, %zu shared records, %zu waits between processors, "
                "%zu pairs the shared relation refused\n",
                instances, pairs, shared_records, cross_pairs, refused);
  assert_true(pairs > instances);
  assert_true(shared_records > instances);
  assert_true(refused > 0);
}

TG_TEST_MAIN(cmocka_unit_test(names), cmocka_unit_test(specs), cmocka_unit_test(place_files),
             cmocka_unit_test(spaces_known), cmocka_unit_test(all_gpu_is_unchanged),
             cmocka_unit_test(bad_inputs), cmocka_unit_test(allocation_failures),
             cmocka_unit_test(random_dags))
