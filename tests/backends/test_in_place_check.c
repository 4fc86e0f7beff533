/* In-place plans on the device: the on-device check verifies an input before its op writes
 * over it (0 corrupted on host, OpenCL and Vulkan), catches a kernel that writes its output
 * before reading its input, and, out of order, a pair whose input another op may still read;
 * random graphs under every policy then run out of order with 0 corrupted. */
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/tg_backend_cases.h"
#include "support/tg_in_place_oracle.h"
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

/* The backend's device, or NULL (a failure in CI) when it is not available. */
static tg_device *open_device(tg_backend_kind backend) {
  tg_device_options opt = {0};
  opt.backend = backend;
  return tg_test_open_backend(&opt);
}

static void on_backend(tg_backend_kind backend) {
  tg_device *d = open_device(backend);
  if (d == NULL) return;
  tg_error_info err = {{0}};
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
    tg_record_set *arena = NULL;
    const tg_record_set *planned = tg_test_planned_records(d, set, res, TG_PRECISION_FP32, (tg_mode)mode, &arena);
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
  tg_device *d = open_device(backend);
  if (d == NULL) return;
  tg_error_info err = {{0}};
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

/* Out of order: plan `g`'s records in `storage` with their in-place candidates under `policy`
 * in `mode`, realise the plan and run the check with the waits a runtime gets (the reuse edges
 * for serial plans unless `no_reuse`). The check's status; corrupted records in `*bad`, pairs
 * used in `*used`; the check's error in `*why`. */
static tg_status out_of_order(tg_device *d, const tg_graph *g, tg_storage storage, tg_policy policy, tg_mode mode,
                              int no_reuse, uint64_t *bad, size_t *used, tg_error_info *why) {
  tg_error_info err = {{0}};
  tg_lifetimes *lt = NULL;
  tg_schedule *s = NULL;
  assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &lt, &err), TG_OK);
  assert_int_equal(tg_schedule_create(g, NULL, NULL, &s, &err), TG_OK);
  tg_model_records *mr = NULL;
  assert_int_equal(tg_model_records_create(g, lt, storage, TG_PRECISION_FP32, NULL, NULL, &mr, &err), TG_OK);
  const tg_record_set *set = mr->records;
  tg_in_place_pair *pairs = NULL;
  size_t np = 0;
  assert_int_equal(tg_model_in_place_pairs(g, lt, mr, tg_device_get_info(d)->backend != TG_BACKEND_OPENCL, NULL,
                                           &pairs, &np),
                   TG_OK);
  tg_tensor_resource *res = tg_test_resources_for(set, storage, TG_PRECISION_FP32);
  const tg_record_set *planned = set;
  tg_record_set *arena = NULL;
  if (mode == TG_MODE_OFFSETS) {
    assert_int_equal(tg_device_compute_arena_records(d, res, set->records, set->count, TG_PRECISION_FP32, NULL, &arena),
                     TG_OK);
    planned = arena;
    size_t kept = 0; /* pairs whose device sizes differ are left out, as tangram run does */
    for (size_t i = 0; i < np; ++i)
      if (arena->records[pairs[i].input].size.w == arena->records[pairs[i].output].size.w) pairs[kept++] = pairs[i];
    np = kept;
  }
  tg_plan *plan = tg_test_plan_in_place(s, policy, mode, planned, mr->tensor_of, pairs, np);
  *used = plan->in_place_count;
  tg_waits *w = NULL;
  tg_wait_lists *l = NULL;
  assert_int_equal(tg_schedule_compute_waits(s, planned->records, mr->tensor_of, planned->count, plan, NULL, &w, &err),
                   TG_OK);
  assert_int_equal(tg_wait_lists_create(w, policy == TG_POLICY_SERIAL && !no_reuse, NULL, &l), TG_OK);
  tg_realize_desc desc = {plan, planned->records, planned->count, planned->dims, res, TG_PRECISION_FP32, 0};
  tg_realization *z = NULL;
  if (tg_realization_create(d, &desc, NULL, &z, &err) != TG_OK) fail_msg("realise: %s", err.message);
  tg_check_desc cd = {g, mr->tensor_of, 1, 0, NULL, NULL};
  tg_check_desc_use_waits(&cd, l);
  tg_check_result result = {0, NULL, 0};
  const tg_status st = tg_realization_check(z, &cd, &result, &err);
  *bad = result.corrupted_records;
  *why = err;
  tg_realization_destroy(z);
  tg_wait_lists_destroy(l);
  tg_waits_destroy(w);
  tg_plan_destroy(plan);
  tg_record_set_destroy(arena);
  free(res);
  free(pairs);
  tg_model_records_destroy(mr);
  tg_schedule_destroy(s);
  tg_lifetimes_destroy(lt);
  return st;
}

static tg_device *open_ooo(tg_backend_kind backend) {
  tg_device *d = open_device(backend);
  if (d != NULL && !tg_device_get_info(d)->out_of_order)
    fail_msg("%s: no out-of-order queue", tg_backend_name(backend));
  return d;
}

/* The race graphs out of order: a serial plan writes c over a at op 2 (chained: d over c at op
 * 3) and, without the reuse edges, nothing orders op 1 (op 2), which also reads the input,
 * before it: the check must refuse or catch it. With the waits, and under both parallel
 * policies, 0 corrupted. */
static void race_out_of_order(tg_backend_kind backend) {
  tg_device *d = open_ooo(backend);
  if (d == NULL) return;
  for (int chained = 0; chained < 2; ++chained) {
    tg_graph *g = tg_oracle_race_graph(chained);
    for (int mode = 0; mode < 2; ++mode) {
      uint64_t bad = 0;
      size_t used = 0;
      tg_error_info why;
      tg_status st = out_of_order(d, g, TG_STORAGE_BUFFER, TG_POLICY_SERIAL, (tg_mode)mode, 1, &bad, &used, &why);
      print_message("%s, %s graph, %s, serial plan without reuse edges: %s, %llu corrupted\n",
                    tg_backend_name(backend), chained ? "chained" : "race", tg_mode_name((tg_mode)mode),
                    st == TG_OK ? "checked" : why.message, (unsigned long long)bad);
      assert_true(used > 0);
      if (st == TG_OK && bad == 0)
        fail_msg("%s: out of order, a pair whose input op %d still reads went unnoticed", tg_backend_name(backend),
                 chained ? 2 : 1);
      for (int pol = 0; pol < TG_POLICY_COUNT; ++pol) {
        st = out_of_order(d, g, TG_STORAGE_BUFFER, (tg_policy)pol, (tg_mode)mode, 0, &bad, &used, &why);
        if (st != TG_OK || bad != 0)
          fail_msg("%s, %s graph, %s %s: %s, %llu corrupted", tg_backend_name(backend), chained ? "chained" : "race",
                   tg_mode_name((tg_mode)mode), tg_policy_name((tg_policy)pol),
                   st == TG_OK ? "checked" : why.message, (unsigned long long)bad);
      }
    }
    tg_graph_destroy(g);
  }
  tg_device_close(d);
}

/* Random graphs rich in candidates, out of order under every policy (serial with its waits),
 * buffers in both modes and 2D textures: 0 corrupted. */
static void random_out_of_order(tg_backend_kind backend) {
  tg_device *d = open_ooo(backend);
  if (d == NULL) return;
  const tg_device_info *info = tg_device_get_info(d);
  const size_t graphs = getenv("TANGRAM_TEST_DEEP") ? 200 : getenv("TANGRAM_TEST_QUICK") ? 3 : 12;
  tg_test_rng rng = {0x00D};
  size_t runs = 0, used_total = 0;
  for (size_t i = 0; i < graphs; ++i) {
    tg_graph *g = tg_oracle_random_graph(&rng, (size_t)tg_test_rng_range(&rng, 4, 16));
    for (int si = 0; si < 2; ++si) {
      const tg_storage storage = si ? TG_STORAGE_TEXTURE_2D : TG_STORAGE_BUFFER;
      if (si && !info->images) continue;
      for (int mode = 0; mode < 2; ++mode) {
        if (mode == TG_MODE_OFFSETS && si && !info->arena_images) continue;
        if (mode == TG_MODE_OFFSETS && si) continue; /* 2D records: objects only */
        for (int pol = 0; pol < TG_POLICY_COUNT; ++pol) {
          uint64_t bad = 0;
          size_t used = 0;
          tg_error_info why;
          tg_status st = out_of_order(d, g, storage, (tg_policy)pol, (tg_mode)mode, 0, &bad, &used, &why);
          if (st != TG_OK || bad != 0)
            fail_msg("%s, graph %zu, %s %s %s: %s, %llu corrupted", tg_backend_name(backend), i,
                     tg_storage_name(storage), tg_mode_name((tg_mode)mode), tg_policy_name((tg_policy)pol),
                     st == TG_OK ? "checked" : why.message, (unsigned long long)bad);
          used_total += used;
          ++runs;
        }
      }
    }
    tg_graph_destroy(g);
  }
  print_message("%s: %zu random graphs, %zu out-of-order runs (%zu pairs used), 0 corrupted\n",
                tg_backend_name(backend), graphs, runs, used_total);
  assert_true(used_total > graphs);
  tg_device_close(d);
}

/* `tangram run --in-place --out-of-order` on the race graph: the parallel policies leave the
 * racy pair out and the check passes; a serial plan without its reuse edges is refused with
 * both ops named. */
static void race_cli(const char *backend) {
  char path[512];
  tg_test_data_path(path, sizeof path, "graphs/in_place_race.graph");
  for (int pol = 0; pol < TG_POLICY_COUNT; ++pol) {
    cli_result r = cli("run '%s' --backend %s --storage buffer --in-place --out-of-order --policy %s --json", path,
                       backend, tg_policy_name((tg_policy)pol));
    if (r.code != 0) fail_msg("%s %s: exit %d: %s", backend, tg_policy_name((tg_policy)pol), r.code, r.err);
    assert_int_equal(tg_test_json_u64(r.out, "corrupted_tensors"), 0);
    /* Serial: the pair (2 KiB); parallel: no pair (3 KiB). */
    assert_int_equal(tg_test_json_u64(r.out, "planned_bytes"), pol == TG_POLICY_SERIAL ? 2048 : 3072);
    cli_free(&r);
  }
  cli_result r = cli("run '%s' --backend %s --storage buffer --in-place --out-of-order --no-reuse-edges", path,
                     backend);
  if (r.code == 0 || strstr(r.err, "op 1") == NULL || strstr(r.err, "op 2") == NULL)
    fail_msg("%s: a serial in-place plan without its waits: exit %d: %s", backend, r.code, r.err);
  cli_free(&r);
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
static void opencl_out_of_order(void **state) {
  (void)state;
  race_out_of_order(TG_BACKEND_OPENCL);
  random_out_of_order(TG_BACKEND_OPENCL);
  race_cli("opencl");
}
static void vulkan_out_of_order(void **state) {
  (void)state;
  race_out_of_order(TG_BACKEND_VULKAN);
  random_out_of_order(TG_BACKEND_VULKAN);
  race_cli("vulkan");
}

TG_TEST_MAIN(cmocka_unit_test(host), cmocka_unit_test(opencl), cmocka_unit_test(vulkan),
             cmocka_unit_test(opencl_out_of_order), cmocka_unit_test(vulkan_out_of_order))
