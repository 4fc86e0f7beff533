#define _POSIX_C_SOURCE 200809L
/* The backend protocol through the host backend: realising plans, the shadow run, naming
 * corrupted records, rollback under device and host allocation failures, backend choice. */
#include "support/tg_test.h"
#include "support/tg_backend_cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend_internal.h"
#include "tangram/backend.h"

static tg_device *open_host(void) {
  tg_device_options opt = {0};
  opt.backend = TG_BACKEND_HOST;
  tg_device *d = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_device_open(&opt, NULL, &d, NULL, NULL, &err), TG_OK);
  return d;
}

static tg_record_set *read_records(const char *file) {
  char path[1024];
  tg_record_set *set = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_records_read_csv(tg_test_data_path(path, sizeof path, file), NULL, &set, &err);
  if (st != TG_OK) fail_msg("%s: %s", file, err.message);
  return set;
}

/* Resources for a record set: 1D records are buffers of that many bytes; 2D are 2D textures;
 * 3D are 3D textures (or arrays). */
static tg_tensor_resource *resources_for(const tg_record_set *set, tg_storage image_storage) {
  tg_tensor_resource *res = calloc(set->count ? set->count : 1, sizeof *res);
  assert_non_null(res);
  for (size_t r = 0; r < set->count; ++r) {
    if (set->dims == 1) {
      res[r].storage = TG_STORAGE_BUFFER;
      res[r].bytes = set->records[r].size.w;
      res[r].extent = (tg_extent){res[r].bytes, 1, 1};
    } else {
      res[r].storage = image_storage;
      res[r].extent = set->records[r].size;
      res[r].bytes = set->records[r].size.w * set->records[r].size.h * set->records[r].size.d * 16;
    }
  }
  return res;
}

static void realize_and_check(tg_device *d, const tg_record_set *set, tg_mode mode,
                              tg_storage image_storage, tg_precision precision) {
  tg_plan_options opt = {0};
  opt.mode = mode;
  opt.strategy = TG_STRATEGY_BEST;
  opt.alignment = mode == TG_MODE_OFFSETS ? tg_device_get_info(d)->buffer_alignment : 0;
  tg_plan *plan = NULL;
  assert_int_equal(tg_plan_compute(set->records, set->count, set->dims, &opt, NULL, &plan), TG_OK);
  tg_test_assert_valid(set->records, set->count, set->dims, plan, opt.alignment, NULL);
  tg_tensor_resource *res = resources_for(set, image_storage);
  if (precision == TG_PRECISION_FP16)
    for (size_t r = 0; r < set->count; ++r)
      if (set->dims > 1) res[r].bytes /= 2;
  tg_realize_desc desc = {plan, set->records, set->count, set->dims, res, precision, 0};
  tg_realization *z = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_realization_create(d, &desc, NULL, &z, &err);
  if (st != TG_OK) fail_msg("realize: %s", err.message);
  tg_realization_stats stats;
  tg_realization_get_stats(z, &stats);
  assert_int_equal(stats.allocations, plan->object_count);
  if (set->dims == 1) assert_int_equal(stats.allocated_bytes, plan->total);
  else assert_int_equal(stats.allocated_bytes, plan->total * (precision == TG_PRECISION_FP16 ? 8 : 16));
  uint64_t *mismatches = calloc(set->count + 1, sizeof *mismatches);
  tg_check_result result = {0, mismatches, 0};
  st = tg_realization_check(z, NULL, &result, &err);
  if (st != TG_OK) fail_msg("check: %s", err.message);
  assert_int_equal(result.corrupted_records, 0);
  assert_true(result.checked_bytes > 0);
  free(mismatches);
  tg_realization_destroy(z);
  free(res);
  tg_plan_destroy(plan);
}

static void host_realises_model_records(void **state) {
  (void)state;
  tg_device *d = open_host();
  const tg_device_info *info = tg_device_get_info(d);
  assert_int_equal(info->backend, TG_BACKEND_HOST);
  assert_string_equal(info->kind, "host");
  static const char *const models[] = {"selfie_segmentation", "face_detection_short_range",
                                        "hand_landmark_lite", "pose_landmark_lite"};
  for (size_t m = 0; m < 4; ++m) {
    char file[256];
    snprintf(file, sizeof file, "records/%s.buffer.csv", models[m]);
    tg_record_set *set = read_records(file);
    realize_and_check(d, set, TG_MODE_OBJECTS, TG_STORAGE_BUFFER, TG_PRECISION_FP32);
    realize_and_check(d, set, TG_MODE_OFFSETS, TG_STORAGE_BUFFER, TG_PRECISION_FP32);
    tg_record_set_destroy(set);
    snprintf(file, sizeof file, "records/%s.tex2.csv", models[m]);
    set = read_records(file);
    realize_and_check(d, set, TG_MODE_OBJECTS, TG_STORAGE_TEXTURE_2D, TG_PRECISION_FP32);
    realize_and_check(d, set, TG_MODE_OBJECTS, TG_STORAGE_TEXTURE_2D, TG_PRECISION_FP16);
    tg_record_set_destroy(set);
    snprintf(file, sizeof file, "records/%s.tex3.csv", models[m]);
    set = read_records(file);
    realize_and_check(d, set, TG_MODE_OBJECTS, TG_STORAGE_TEXTURE_3D, TG_PRECISION_FP32);
    realize_and_check(d, set, TG_MODE_OBJECTS, TG_STORAGE_TEXTURE_ARRAY, TG_PRECISION_FP16);
    tg_record_set_destroy(set);
  }
  tg_device_close(d);
}

/* Records 0 and 1 overlap in time; a plan that puts them in one object (bypassing the
 * validator) must be caught, and the victim named: record 0 is written at task 0, record 1
 * overwrites the shared memory at task 1, record 0 is read at task 2. */
static void broken_plan_is_caught_and_named(void **state) {
  (void)state;
  tg_device *d = open_host();
  tg_usage_record recs[3] = {
      {{256, 1, 1}, 0, 2, 0}, {{256, 1, 1}, 1, 3, 0}, {{64, 1, 1}, 0, 3, 0}};
  for (int mode = 0; mode < 2; ++mode) {
    tg_plan *plan = NULL;
    assert_int_equal(tg_plan_create((tg_mode)mode, 1, 3, 2, NULL, &plan), TG_OK);
    if (mode == TG_MODE_OBJECTS) {
      plan->object_of[0] = 0;
      plan->object_of[1] = 0;
      plan->object_of[2] = 1;
      plan->object_sizes[0] = (tg_extent){256, 1, 1};
      plan->object_sizes[1] = (tg_extent){64, 1, 1};
      plan->total = 320;
    } else {
      plan->offset_of[0] = 0;
      plan->offset_of[1] = 128; /* half of record 0 */
      plan->offset_of[2] = 384;
      plan->total = 448;
    }
    tg_error_info err = {{0}};
    assert_int_equal(tg_plan_validate(recs, 3, 1, plan, 0, NULL, NULL, &err), TG_ERROR_INVALID_PLAN);
    tg_tensor_resource res[3];
    tg_test_buffer_resources(recs, 3, res);
    tg_realize_desc desc = {plan, recs, 3, 1, res, TG_PRECISION_FP32, 0};
    tg_realization *z = NULL;
    /* Without skip_validation the generic layer refuses it, the entry point named first. */
    assert_int_equal(tg_realization_create(d, &desc, NULL, &z, &err), TG_ERROR_INVALID_PLAN);
    assert_null(z);
    assert_true(strncmp(err.message, "tg_realization_create: ", 23) == 0);
    /* Every refusal of one entry point has its prefix, also where the call wrote no message,
     * and a message left from an earlier call is never taken for this one's. */
    tg_realize_desc none = desc;
    none.plan = NULL;
    strcpy(err.message, "stale");
    assert_int_equal(tg_realization_create(d, &none, NULL, &z, &err), TG_ERROR_INVALID_ARGUMENT);
    assert_string_equal(err.message, "tg_realization_create: plan, records and resources disagree");
    assert_int_equal(tg_realization_create(NULL, &desc, NULL, &z, &err), TG_ERROR_INVALID_ARGUMENT);
    assert_string_equal(err.message, "tg_realization_create: plan, records and resources disagree");
    tg_check_result nothing = {0, NULL, 0};
    assert_int_equal(tg_realization_check(NULL, NULL, &nothing, &err), TG_ERROR_INVALID_ARGUMENT);
    assert_string_equal(err.message, "tg_realization_check: invalid argument");
    desc.skip_validation = 1;
    assert_int_equal(tg_realization_create(d, &desc, NULL, &z, &err), TG_OK);
    uint64_t mismatches[3] = {0, 0, 0};
    tg_check_result result = {0, mismatches, 0};
    assert_int_equal(tg_realization_check(z, NULL, &result, &err), TG_OK);
    assert_int_equal(result.corrupted_records, 1);
    assert_true(mismatches[0] > 0);
    assert_int_equal(mismatches[1], 0);
    assert_int_equal(mismatches[2], 0);
    if (mode == TG_MODE_OFFSETS) assert_int_equal(mismatches[0], 32); /* the 128 overwritten bytes */
    tg_realization_destroy(z);
    tg_plan_destroy(plan);
  }
  tg_device_close(d);
}

/* Two images of different extents sharing one object: each uses its region with the object's
 * pitch, so a narrower tensor written after a wider one corrupts the wider one's first rows. */
static void shared_image_regions(void **state) {
  (void)state;
  tg_device *d = open_host();
  uint64_t mismatches[2] = {0, 0};
  tg_test_shared_image_regions(d, mismatches);
  tg_device_close(d);
}

/* Every device object creation of a full realisation fails once; each time everything made so
 * far is released (the failing host allocator sees no live block) and the status is clean. */
static void device_alloc_failures_roll_back(void **state) {
  (void)state;
  tg_record_set *set = read_records("records/pose_landmark_lite.buffer.csv");
  tg_plan_options popt = {0};
  popt.strategy = TG_STRATEGY_BEST;
  tg_plan *plan = NULL;
  assert_int_equal(tg_plan_compute(set->records, set->count, 1, &popt, NULL, &plan), TG_OK);
  tg_tensor_resource *res = resources_for(set, TG_STORAGE_BUFFER);
  uint64_t tried = 0;
  for (uint64_t n = 1;; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, 0);
    tg_device_options opt = {0};
    opt.backend = TG_BACKEND_HOST;
    opt.fail_device_alloc_at = n;
    tg_device *d = NULL;
    assert_int_equal(tg_device_open(&opt, &fa.base, &d, NULL, NULL, NULL), TG_OK);
    tg_realize_desc desc = {plan, set->records, set->count, 1, res, TG_PRECISION_FP32, 0};
    tg_realization *z = NULL;
    tg_error_info err = {{0}};
    tg_status st = tg_realization_create(d, &desc, &fa.base, &z, &err);
    ++tried;
    if (st == TG_OK) {
      tg_realization_destroy(z);
      tg_device_close(d);
      assert_int_equal(fa.live_blocks, 0);
      break;
    }
    assert_int_equal(st, TG_ERROR_OUT_OF_DEVICE_MEMORY);
    assert_null(z);
    assert_non_null(strstr(err.message, "TANGRAM_FAIL_DEVICE_ALLOC_AT"));
    tg_device_close(d);
    assert_int_equal(fa.live_blocks, 0);
  }
  /* objects + one view per record */
  assert_int_equal(tried, plan->object_count + set->count + 1);
  print_message("device allocation failure injected at %llu points\n", (unsigned long long)(tried - 1));
  free(res);
  tg_plan_destroy(plan);
  tg_record_set_destroy(set);
}

/* Every host allocation of open + realise + check fails once: clean status, no leak. */
static void host_alloc_failures_roll_back(void **state) {
  (void)state;
  tg_record_set *set = read_records("records/face_detection_short_range.tex2.csv");
  tg_plan_options popt = {0};
  popt.strategy = TG_STRATEGY_GREEDY_IN_ORDER;
  tg_plan *plan = NULL;
  assert_int_equal(tg_plan_compute(set->records, set->count, 2, &popt, NULL, &plan), TG_OK);
  tg_tensor_resource *res = resources_for(set, TG_STORAGE_TEXTURE_2D);
  uint64_t n;
  for (n = 1;; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, n);
    tg_device_options opt = {0};
    opt.backend = TG_BACKEND_HOST;
    tg_device *d = NULL;
    tg_status st = tg_device_open(&opt, &fa.base, &d, NULL, NULL, NULL);
    tg_realization *z = NULL;
    if (st == TG_OK) {
      tg_realize_desc desc = {plan, set->records, set->count, 2, res, TG_PRECISION_FP32, 0};
      st = tg_realization_create(d, &desc, &fa.base, &z, NULL);
    }
    if (st == TG_OK) {
      tg_check_result result = {0, NULL, 0};
      st = tg_realization_check(z, NULL, &result, NULL);
      if (st == TG_OK) assert_int_equal(result.corrupted_records, 0);
    }
    tg_realization_destroy(z);
    tg_device_close(d);
    assert_int_equal(fa.live_blocks, 0);
    if (fa.failures == 0) break; /* ran past the last allocation */
    assert_true(st == TG_ERROR_OUT_OF_HOST_MEMORY || st == TG_ERROR_OUT_OF_DEVICE_MEMORY);
  }
  print_message("host allocation failure injected at %llu points\n", (unsigned long long)(n - 1));
  assert_true(n > 10);
  free(res);
  tg_plan_destroy(plan);
  tg_record_set_destroy(set);
}

/* Out of order, waits that do not order two records sharing memory are refused up front. */
static void unordered_reuse_is_refused(void **state) {
  (void)state;
  tg_device *d = open_host();
  /* Chain 0->1->2 as records written at first_task, read at last_task. A and C share. */
  tg_usage_record recs[3] = {{{64, 1, 1}, 0, 1, 0}, {{64, 1, 1}, 1, 2, 0}, {{64, 1, 1}, 2, 3, 0}};
  tg_plan *plan = NULL;
  assert_int_equal(tg_plan_create(TG_MODE_OBJECTS, 1, 3, 2, NULL, &plan), TG_OK);
  plan->object_of[0] = 0;
  plan->object_of[1] = 1;
  plan->object_of[2] = 0;
  plan->object_sizes[0] = plan->object_sizes[1] = (tg_extent){64, 1, 1};
  plan->total = 128;
  tg_tensor_resource res[3];
  for (int r = 0; r < 3; ++r) res[r] = (tg_tensor_resource){TG_STORAGE_BUFFER, {64, 1, 1}, 64};
  tg_realize_desc desc = {plan, recs, 3, 1, res, TG_PRECISION_FP32, 0};
  tg_realization *z = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_realization_create(d, &desc, NULL, &z, &err), TG_OK);
  /* Ops 0..3. Full chain waits: fine. Op 2 (writes record 2) not waiting on op 1 (reads
   * record 0): refused. */
  static const uint32_t w1[] = {0}, w2[] = {1}, w3[] = {2};
  const uint32_t *chain[4] = {NULL, w1, w2, w3};
  uint32_t chain_counts[4] = {0, 1, 1, 1};
  tg_check_desc cd = {NULL, NULL, 1, 4, chain_counts, chain};
  tg_check_result result = {0, NULL, 0};
  assert_int_equal(tg_realization_check(z, &cd, &result, &err), TG_OK);
  assert_int_equal(result.corrupted_records, 0);
  uint32_t loose_counts[4] = {0, 1, 0, 1};
  cd.wait_counts = loose_counts;
  assert_int_equal(tg_realization_check(z, &cd, &result, &err), TG_ERROR_INVALID_PLAN);
  assert_non_null(strstr(err.message, "record 2 reuses the memory of record 0"));
  tg_realization_destroy(z);
  tg_plan_destroy(plan);
  tg_device_close(d);
}

static void backend_choice(void **state) {
  (void)state;
  assert_string_equal(tg_backend_name(TG_BACKEND_VULKAN), "vulkan");
  tg_backend_kind k;
  assert_int_equal(tg_backend_from_name("opencl", &k), TG_OK);
  assert_int_equal(k, TG_BACKEND_OPENCL);
  assert_int_equal(tg_backend_from_name("cuda", &k), TG_ERROR_INVALID_ARGUMENT);
  /* auto always ends somewhere (host at worst) and explains every skip. */
  tg_device *d = NULL;
  tg_backend_skip skipped[TG_BACKEND_COUNT];
  size_t nskipped = 0;
  unsetenv("TANGRAM_BACKEND");
  assert_int_equal(tg_device_open(NULL, NULL, &d, skipped, &nskipped, NULL), TG_OK);
  for (size_t i = 0; i < nskipped; ++i) {
    assert_true(skipped[i].reason[0] != '\0');
    print_message("auto skipped %s: %s\n", tg_backend_name(skipped[i].backend), skipped[i].reason);
  }
  print_message("auto chose %s (%s)\n", tg_backend_name(tg_device_get_info(d)->backend),
                tg_device_get_info(d)->name);
  tg_device_close(d);
  setenv("TANGRAM_BACKEND", "host", 1);
  assert_int_equal(tg_device_open(NULL, NULL, &d, skipped, &nskipped, NULL), TG_OK);
  assert_int_equal(tg_device_get_info(d)->backend, TG_BACKEND_HOST);
  assert_int_equal(nskipped, 0);
  tg_device_close(d);
  setenv("TANGRAM_BACKEND", "metal", 1);
  tg_error_info err = {{0}};
  assert_int_equal(tg_device_open(NULL, NULL, &d, NULL, NULL, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_null(d);
  assert_non_null(strstr(err.message, "metal"));
  unsetenv("TANGRAM_BACKEND");
}

static void signatures_are_exact_in_half(void **state) {
  (void)state;
  for (uint32_t id = 1; id < 50; ++id)
    for (uint32_t i = 0; i < 4000; ++i) {
      float v = tg_signature_texel(id, i);
      assert_true(v >= 0.0f && v < 1024.0f);
      assert_true(tg__half_to_float(tg__float_to_half_exact(v)) == v);
    }
  /* Different records give different patterns. */
  assert_true(tg_signature_word(1, 0) != tg_signature_word(2, 0));
}

TG_TEST_MAIN(cmocka_unit_test(host_realises_model_records),
             cmocka_unit_test(broken_plan_is_caught_and_named),
             cmocka_unit_test(shared_image_regions),
             cmocka_unit_test(device_alloc_failures_roll_back),
             cmocka_unit_test(host_alloc_failures_roll_back),
             cmocka_unit_test(unordered_reuse_is_refused), cmocka_unit_test(backend_choice),
             cmocka_unit_test(signatures_are_exact_in_half))
