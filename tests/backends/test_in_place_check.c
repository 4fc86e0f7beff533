/* In-place plans on the device: the on-device check verifies an input before its op writes
 * over it (0 corrupted on host, OpenCL and Vulkan), and catches a kernel that writes its
 * output before reading its input. */
#include "support/tg_test.h"

#include <stdlib.h>
#include <string.h>

#include "support/tg_models.h"
#include "tangram/backend.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/schedule.h"

/* The tensors of both graphs and their first two ops. */
#define K_TENSORS \
    "tensor x 1x8x8x4 float32 input\n" \
    "tensor w 4x1x1x4 float32 constant\n" \
    "tensor b 1x8x8x4 float32\n" \
    "tensor a2 1x8x8x4 float32\n" \
    "tensor c 1x8x8x4 float32\n" \
    "tensor d 1x8x8x4 float32\n" \
    "tensor e 1x64x4 float32\n" \
    "tensor f 1x64x4 float32 output\n" \
    "op CONV_2D inputs=x,w outputs=b\n" \
    "op CONV_2D inputs=x,w outputs=a2\n"

/* b + a2 -> c over b (op 2), relu(c) -> d over c (op 3), d reshaped -> e (a view, op 4). */
static const char k_graph[] =
    K_TENSORS
    "op ADD inputs=b,a2 outputs=c\n"
    "op RELU inputs=c outputs=d\n"
    "op RESHAPE inputs=d outputs=e\n"
    "op CONV_2D inputs=e,w outputs=f\n";

/* The same tensors, but the ADD kernel writes c before it reads b: op 2 writes c (reading
 * only a2) and b is read at op 3. */
static const char k_writes_first[] =
    K_TENSORS
    "op ADD inputs=a2 outputs=c\n"
    "op RELU inputs=c,b outputs=d\n"
    "op RESHAPE inputs=d outputs=e\n"
    "op CONV_2D inputs=e,w outputs=f\n";

static tg_graph *parse(const char *text) {
  tg_graph *g = NULL;
  tg_error_info err = {{0}};
  if (tg_graph_parse_text(text, strlen(text), "g", NULL, &g, &err) != TG_OK) fail_msg("%s", err.message);
  return g;
}

static uint64_t check(tg_device *d, const tg_record_set *set, const tg_plan *plan, const tg_tensor_resource *res,
                      const tg_graph *g, const uint32_t *tensor_of) {
  tg_realize_desc desc = {plan, set->records, set->count, set->dims, res, TG_PRECISION_FP32, 0};
  tg_realization *z = NULL;
  tg_error_info err = {{0}};
  if (tg_realization_create(d, &desc, NULL, &z, &err) != TG_OK) fail_msg("realise: %s", err.message);
  tg_check_desc cd = {g, tensor_of, 0, 0, NULL, NULL};
  tg_check_result result = {0, NULL, 0};
  if (tg_realization_check(z, &cd, &result, &err) != TG_OK) fail_msg("check: %s", err.message);
  tg_realization_destroy(z);
  return result.corrupted_records;
}

static void on_backend(tg_backend_kind backend) {
  tg_device_options opt = {0};
  opt.backend = backend;
  tg_device *d = NULL;
  tg_error_info err = {{0}};
  if (tg_device_open(&opt, NULL, &d, NULL, NULL, &err) != TG_OK) {
    if (tg_test_in_ci()) fail_msg("%s: %s", tg_backend_name(backend), err.message);
    print_message("%s: not available (%s)\n", tg_backend_name(backend), err.message);
    return;
  }
  tg_graph *g = parse(k_graph), *g2 = parse(k_writes_first);
  tg_lifetimes *lt = NULL;
  assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &lt, &err), TG_OK);
  tg_model_records *mr = NULL;
  assert_int_equal(tg_model_records_create(g, lt, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL, NULL, &mr, &err), TG_OK);
  tg_in_place_pair *pairs = NULL;
  size_t np = 0;
  assert_int_equal(tg_model_in_place_pairs(g, lt, mr, 0, NULL, &pairs, &np), TG_OK);
  assert_int_equal(np, 3); /* ADD over b, RELU over c, RESHAPE a view of d */
  const tg_record_set *set = mr->records;
  tg_tensor_resource *res = tg_test_resources_for(set, TG_STORAGE_BUFFER, TG_PRECISION_FP32);
  for (int mode = 0; mode < 2; ++mode) {
    const tg_record_set *planned = set;
    tg_record_set *arena = NULL;
    if (mode == TG_MODE_OFFSETS) {
      assert_int_equal(tg_device_compute_arena_records(d, res, set->records, set->count, TG_PRECISION_FP32, NULL,
                                                       &arena),
                       TG_OK);
      planned = arena;
    }
    for (int with = 0; with < 2; ++with) {
      tg_plan_options o = {0};
      o.mode = (tg_mode)mode;
      o.strategy = TG_STRATEGY_BEST;
      o.in_place = with ? pairs : NULL;
      o.in_place_count = with ? np : 0;
      tg_plan *plan = NULL;
      assert_int_equal(tg_plan_compute(planned->records, planned->count, 1, &o, NULL, &plan), TG_OK);
      tg_test_assert_valid(planned->records, planned->count, 1, plan, 0, NULL);
      if (with) assert_true(plan->in_place_count >= 2);
      /* The kernels as declared: every input verified before its op writes over it. */
      assert_int_equal(check(d, planned, plan, res, g, mr->tensor_of), 0);
      /* A kernel that writes before it reads: caught only where c is written over b. */
      const uint64_t bad = check(d, planned, plan, res, g2, mr->tensor_of);
      if (with) assert_true(bad >= 1);
      else assert_int_equal(bad, 0);
      print_message("%s %s, %s pairs: %llu corrupted when ADD writes first\n", tg_backend_name(backend),
                    tg_mode_name((tg_mode)mode), with ? "with" : "without", (unsigned long long)bad);
      tg_plan_destroy(plan);
    }
    tg_record_set_destroy(arena);
  }
  free(res);
  free(pairs);
  tg_model_records_destroy(mr);
  tg_lifetimes_destroy(lt);
  tg_graph_destroy(g);
  tg_graph_destroy(g2);
  tg_device_close(d);
}

/* The public models x storages x modes x policies with their in-place pairs: every plan valid
 * under its policy, never above the plan without pairs, and 0 corrupted on the device. */
static void public_models(tg_backend_kind backend) {
  /* bench/bench_in_place covers every public model; here two keep the test at a few seconds. */
  static const char *const k_names[] = {"face_detection_short_range", "selfie_segmentation"};
  static const tg_storage k_storages[] = {TG_STORAGE_BUFFER, TG_STORAGE_TEXTURE_2D};
  tg_device_options opt = {0};
  opt.backend = backend;
  tg_device *d = NULL;
  tg_error_info err = {{0}};
  if (tg_device_open(&opt, NULL, &d, NULL, NULL, &err) != TG_OK) {
    if (tg_test_in_ci()) fail_msg("%s: %s", tg_backend_name(backend), err.message);
    return;
  }
  const tg_device_info *info = tg_device_get_info(d);
  const size_t models = tg_test_quick() ? 1 : sizeof k_names / sizeof *k_names;
  size_t runs = 0, used = 0;
  for (size_t m = 0; m < models; ++m) {
    tg_test_model tm;
    if (!tg_test_model_open(k_names[m], &tm)) continue;
    for (size_t si = 0; si < sizeof k_storages / sizeof *k_storages; ++si) {
      const tg_storage storage = k_storages[si];
      const int image = storage != TG_STORAGE_BUFFER;
      if (image && !info->images) continue;
      tg_model_records *mr = NULL;
      tg_device_limits limits = info->limits;
      assert_int_equal(tg_model_records_create(tm.model->graph, tm.lifetimes, storage, TG_PRECISION_FP32, &limits,
                                               NULL, &mr, &err),
                       TG_OK);
      const tg_record_set *set = mr->records;
      tg_in_place_pair *pairs = NULL;
      size_t np = 0;
      /* One kernel may read and write one image on Vulkan (and the host), not on OpenCL 1.2. */
      assert_int_equal(tg_model_in_place_pairs(tm.model->graph, tm.lifetimes, mr, backend != TG_BACKEND_OPENCL, NULL,
                                               &pairs, &np),
                       TG_OK);
      tg_tensor_resource *res = tg_test_resources_for(set, storage, TG_PRECISION_FP32);
      for (int mode = 0; mode < 2; ++mode) {
        if (mode == TG_MODE_OFFSETS && image && !info->arena_images) continue;
        const tg_record_set *planned = set;
        tg_record_set *arena = NULL;
        size_t kept = np;
        if (mode == TG_MODE_OFFSETS) {
          assert_int_equal(tg_device_compute_arena_records(d, res, set->records, set->count, TG_PRECISION_FP32, NULL,
                                                           &arena),
                           TG_OK);
          planned = arena;
          kept = 0; /* pairs whose device sizes differ are left out, as tangram run does */
          for (size_t i = 0; i < np; ++i) {
            tg_extent a = arena->records[pairs[i].input].size, b = arena->records[pairs[i].output].size;
            if (a.w == b.w) pairs[kept++] = pairs[i];
          }
        }
        for (int pol = 0; pol < TG_POLICY_COUNT; ++pol) {
          tg_policy_relation *rel = NULL;
          assert_int_equal(tg_policy_relation_create(tm.schedule, (tg_policy)pol, mr->tensor_of, set->count, NULL, &rel),
                           TG_OK);
          const tg_share_relation *r = tg_policy_relation_get(rel);
          tg_plan_options o = {0};
          o.mode = (tg_mode)mode;
          o.strategy = TG_STRATEGY_BEST;
          o.time_limit_ms = TG_TIME_LIMIT_NONE;
          o.relation = r;
          tg_plan *plain = NULL, *plan = NULL;
          assert_int_equal(tg_plan_compute(planned->records, planned->count, planned->dims, &o, NULL, &plain), TG_OK);
          o.in_place = pairs;
          o.in_place_count = kept;
          assert_int_equal(tg_plan_compute(planned->records, planned->count, planned->dims, &o, NULL, &plan), TG_OK);
          tg_test_assert_valid(planned->records, planned->count, planned->dims, plan, 0, r);
          assert_true(plan->total <= plain->total);
          const uint64_t bad = check(d, planned, plan, res, tm.model->graph, mr->tensor_of);
          if (bad) fail_msg("%s %s %s %s %s: %llu corrupted", tg_backend_name(backend), k_names[m],
                            tg_storage_name(storage), tg_mode_name((tg_mode)mode), tg_policy_name((tg_policy)pol),
                            (unsigned long long)bad);
          used += plan->in_place_count;
          ++runs;
          tg_plan_destroy(plain);
          tg_plan_destroy(plan);
          tg_policy_relation_destroy(rel);
        }
        tg_record_set_destroy(arena);
      }
      free(res);
      free(pairs);
      tg_model_records_destroy(mr);
    }
    tg_test_model_close(&tm);
  }
  print_message("%s: %zu plans with in-place pairs (%zu pairs used), 0 corrupted\n", tg_backend_name(backend), runs,
                used);
  tg_device_close(d);
}

static void host(void **state) {
  (void)state;
  on_backend(TG_BACKEND_HOST);
  public_models(TG_BACKEND_HOST);
}
static void opencl(void **state) {
  (void)state;
  on_backend(TG_BACKEND_OPENCL);
  public_models(TG_BACKEND_OPENCL);
}
static void vulkan(void **state) {
  (void)state;
  on_backend(TG_BACKEND_VULKAN);
  public_models(TG_BACKEND_VULKAN);
}

TG_TEST_MAIN(cmocka_unit_test(host), cmocka_unit_test(opencl), cmocka_unit_test(vulkan))
