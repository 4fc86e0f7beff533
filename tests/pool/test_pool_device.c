#define _POSIX_C_SOURCE 200809L
/* Run-time pools on real drivers (host, OpenCL through PoCL, Vulkan through lavapipe): seed
 * 004's example in real device memory, the public models' tensors run through every policy
 * (buffers and images) and proved uncorrupted by the on-device check, a run that frees too
 * early caught by it, the placements of buffer runs accepted by the plan validator, and
 * every device object creation failing in turn with nothing leaked.
 *
 * Outside CI a backend that cannot open is skipped loudly; under CI (CI=true) that fails. */
#include "support/tg_test.h"
#include "support/tg_vulkan_leaks.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool/pool_internal.h"
#include "pool/pool_run.h"
#include "tangram/backend.h"
#include "tangram/layout.h"
#include "tangram/pool.h"
#ifdef TANGRAM_TEST_HAVE_OPENCL
#include "backends/opencl/opencl_debug.h"
#endif
#ifdef TANGRAM_TEST_HAVE_VULKAN
#include "backends/vulkan/vulkan_internal.h"
#endif

#define MiB (1024ull * 1024ull)


/* Open a backend with fault injection at `fail_at` (0: none). NULL when it cannot open
 * outside CI (skipped with a note); a failure under CI. */
static tg_device *open_backend_with(tg_backend_kind kind, uint64_t fail_at, int validation) {
  tg_device_options o = {0};
  o.backend = kind;
  o.fail_device_alloc_at = fail_at;
  o.validation = validation && kind == TG_BACKEND_VULKAN;
  tg_device *d = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_device_open(&o, NULL, &d, NULL, NULL, &err);
  if (st == TG_OK) return d;
  if (tg_test_in_ci()) fail_msg("%s: cannot open under CI: %s (%s)", tg_backend_name(kind), err.message, tg_status_name(st));
  fprintf(stderr, "*** SKIPPING the %s pool tests: %s (%s)\n", tg_backend_name(kind), err.message, tg_status_name(st));
  return NULL;
}

static tg_device *open_backend(tg_backend_kind kind, uint64_t fail_at) {
  return open_backend_with(kind, fail_at, 1);
}

/* Driver objects still alive on the device (0 after every pool and realization is gone). */
static int64_t live_objects(tg_device *d) {
  switch (tg_device_get_info(d)->backend) {
#ifdef TANGRAM_TEST_HAVE_OPENCL
    case TG_BACKEND_OPENCL: {
      uint64_t live = 0;
      assert_int_equal(tg__opencl_debug_counts(d, &live, NULL), TG_OK);
      return (int64_t)live;
    }
#endif
#ifdef TANGRAM_TEST_HAVE_VULKAN
    case TG_BACKEND_VULKAN:
      return tg__vulkan_live_objects(tg__device_impl(d));
#endif
    default:
      return 0;
  }
}

static void close_device(tg_device *d) {
  assert_int_equal(live_objects(d), 0);
  assert_int_equal(tg_device_get_validation_messages(d), 0);
  tg_device_close(d);
}

/* After a broken run on purpose (opened without validation: aliasing live images draws
 * synchronisation messages too). */
static void close_device_after_broken_run(tg_device *d) {
  assert_int_equal(live_objects(d), 0);
  tg_device_close(d);
}

static tg_backend_kind k_backends[] = {TG_BACKEND_HOST, TG_BACKEND_OPENCL, TG_BACKEND_VULKAN};
static size_t k_backend_count = 3;

/* ---- seed 004 in device memory ---- */

static void seed_004_on_every_device(void **state) {
  (void)state;
  for (size_t b = 0; b < k_backend_count; ++b) {
    tg_device *d = open_backend(k_backends[b], 0);
    if (d == NULL) continue;
    for (int less = 0; less < 2; ++less) {
      tg_pool_options o = {TG_POOL_EXACT, 300 * MiB - (uint64_t)less, 0, 0, TG_PRECISION_FP32, 0};
      tg_pool *p = NULL;
      assert_int_equal(tg_pool_create(d, &o, NULL, &p, NULL), TG_OK);
      static const uint64_t sizes[4] = {100 * MiB, 150 * MiB, 50 * MiB, 100 * MiB};
      tg_pool_allocation a[4];
      tg_status st[4] = {TG_OK, TG_OK, TG_OK, TG_OK};
      tg_error_info err = {{0}};
      for (int t = 0; t < 4; ++t) {
        st[t] = tg_pool_alloc(p, sizes[t], &a[t], &err);
        if (st[t] != TG_OK) break;
        assert_int_not_equal(a[t].memory, 0);
        if (t > 0) assert_int_equal(tg_pool_free(p, a[t - 1].id), TG_OK);
      }
      tg_pool_stats s;
      tg_pool_get_stats(p, &s);
      if (!less) {
        assert_int_equal(st[3], TG_OK);
        assert_int_equal(a[3].block, a[0].block);
        assert_int_equal(a[3].memory, a[0].memory); /* the same driver object */
        assert_int_equal(s.peak_reserved, 300 * MiB);
        assert_int_equal(s.driver_allocations, 3);
      } else {
        assert_int_equal(st[2], TG_ERROR_POOL_CAPACITY);
        assert_non_null(strstr(err.message, "required 52428800 bytes"));
        assert_int_equal(s.driver_allocations, 2);
        assert_int_equal(s.reserved, 250 * MiB);
        if (k_backends[b] != TG_BACKEND_HOST) assert_int_equal(live_objects(d), 2);
      }
      tg_pool_destroy(p);
      assert_int_equal(live_objects(d), 0);
    }
    close_device(d);
  }
}

/* ---- models through the pool ---- */

typedef struct pooled_input {
  tg_record_set *set;
  tg_tensor_resource *res;
  uint64_t *bytes;
  uint64_t alignment;
} pooled_input;

static void input_load(tg_device *d, const char *csv, tg_storage storage, pooled_input *in) {
  in->set = tg_test_load_records(csv);
  size_t n = in->set->count;
  in->res = calloc(n, sizeof *in->res);
  in->bytes = calloc(n, sizeof *in->bytes);
  assert_true(in->res && in->bytes);
  in->alignment = 1;
  for (size_t r = 0; r < n; ++r) {
    const tg_extent *e = &in->set->records[r].size;
    if (in->set->dims == 1) in->res[r] = (tg_tensor_resource){TG_STORAGE_BUFFER, {e->w, 1, 1}, e->w};
    else in->res[r] = (tg_tensor_resource){storage, *e, e->w * e->h * e->d * 16};
    tg_resource_requirements req;
    assert_int_equal(tg_device_compute_requirements(d, &in->res[r], TG_PRECISION_FP32, &req), TG_OK);
    in->bytes[r] = req.size;
    if (req.alignment > in->alignment) in->alignment = req.alignment;
  }
}

static void input_free(pooled_input *in) {
  tg_record_set_destroy(in->set);
  free(in->res);
  free(in->bytes);
}

/* The run's buffer placements as one offsets plan (blocks laid end to end, each at an
 * aligned base), for the validator: no two records alive together may overlap. */
static void assert_run_valid(const pooled_input *in, const tg__pool_run *run) {
  size_t n = in->set->count;
  tg_usage_record *recs = calloc(n, sizeof *recs);
  uint64_t *base = calloc(run->memory_count, sizeof *base);
  assert_true(recs && base);
  uint64_t end = 0;
  for (size_t k = 0; k < run->memory_count; ++k) {
    end = (end + in->alignment - 1) / in->alignment * in->alignment;
    base[k] = end;
    end += run->objects[k].bytes;
  }
  tg_plan *plan = NULL;
  assert_int_equal(tg_plan_create(TG_MODE_OFFSETS, 1, n, 1, NULL, &plan), TG_OK);
  uint64_t total = 0;
  for (size_t r = 0; r < n; ++r) {
    recs[r] = in->set->records[r];
    recs[r].size = (tg_extent){run->size_of[r], 1, 1};
    recs[r].alignment = in->alignment;
    plan->offset_of[r] = base[run->memory_of[r]] + run->offset_of[r];
    if (plan->offset_of[r] + run->size_of[r] > total) total = plan->offset_of[r] + run->size_of[r];
  }
  plan->total = total;
  tg_test_assert_valid(recs, n, 1, plan, 0, NULL);
  tg_plan_destroy(plan);
  free(recs);
  free(base);
}

/* Run `csv` through a pool of `policy` on `d`, realise the placements and check them.
 * Returns the corrupted records. */
static uint64_t pooled_check(tg_device *d, const char *csv, tg_storage storage, tg_pool_policy policy,
                             int free_after_producer, tg_pool_stats *stats_out) {
  pooled_input in;
  input_load(d, csv, storage, &in);
  tg_pool_options o = {policy, 0, 0, in.alignment, TG_PRECISION_FP32, 0};
  tg_pool *p = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_pool_create(d, &o, NULL, &p, &err), TG_OK);
  tg__pool_run run;
  tg_status st = tg__pool_run_records(p, in.set->records, in.res, in.bytes, in.set->count, free_after_producer, NULL,
                                      &run, &err);
  if (st != TG_OK) fail_msg("%s: pooled run: %s", csv, err.message);
  if (in.set->dims == 1 && !free_after_producer) assert_run_valid(&in, &run);
  tg_realization *z = NULL;
  st = tg__pool_run_realize(d, &run, in.set->records, in.res, TG_PRECISION_FP32, NULL, &z, &err);
  if (st != TG_OK) fail_msg("%s: realise: %s", csv, err.message);
  tg_check_result result = {0, NULL, 0};
  assert_int_equal(tg_realization_check(z, NULL, &result, &err), TG_OK);
  assert_true(result.checked_bytes > 0);
  tg_realization_destroy(z);
  tg_pool_get_stats(p, stats_out);
  assert_int_equal(stats_out->in_use, 0);
  tg__pool_run_free(&run);
  tg_pool_destroy(p);
  input_free(&in);
  return result.corrupted_records;
}

static void models_run_clean_through_every_policy(void **state) {
  (void)state;
  static const char *const models[] = {"selfie_segmentation", "hand_landmark_lite", "face_detection_short_range",
                                       "pose_landmark_lite"};
  for (size_t b = 0; b < k_backend_count; ++b) {
    tg_device *d = open_backend(k_backends[b], 0);
    if (d == NULL) continue;
    size_t nmodels = tg_test_quick() && k_backends[b] != TG_BACKEND_HOST ? 1 : 4;
    for (size_t m = 0; m < nmodels; ++m)
      for (int kind = 0; kind < 2; ++kind) {
        if (kind == 1 && !tg_device_get_info(d)->images) continue;
        char csv[256];
        snprintf(csv, sizeof csv, "records/%s.%s.csv", models[m], kind ? "tex2" : "buffer");
        for (int pol = 0; pol < TG_POOL_POLICY_COUNT; ++pol) {
          tg_pool_stats s;
          uint64_t bad = pooled_check(d, csv, TG_STORAGE_TEXTURE_2D, (tg_pool_policy)pol, 0, &s);
          if (bad) fail_msg("%s %s %s: %llu corrupted", tg_backend_name(k_backends[b]), csv,
                            tg_pool_policy_name((tg_pool_policy)pol), (unsigned long long)bad);
          assert_true(s.peak_reserved >= s.peak_in_use && s.peak_in_use > 0);
          assert_true(s.frees == s.allocs);
        }
      }
    close_device(d);
  }
}

static void freeing_too_early_is_caught(void **state) {
  (void)state;
  for (size_t b = 0; b < k_backend_count; ++b) {
    tg_device *d = open_backend_with(k_backends[b], 0, 0);
    if (d == NULL) continue;
    tg_pool_stats s;
    uint64_t bad = pooled_check(d, "records/selfie_segmentation.buffer.csv", TG_STORAGE_BUFFER, TG_POOL_BEST_FIT, 1, &s);
    if (bad == 0) fail_msg("%s: a pool that frees every tensor after its producer went unnoticed", tg_backend_name(k_backends[b]));
    if (tg_device_get_info(d)->images) {
      bad = pooled_check(d, "records/selfie_segmentation.tex2.csv", TG_STORAGE_TEXTURE_2D, TG_POOL_EXACT, 1, &s);
      assert_true(bad > 0);
    }
    close_device_after_broken_run(d);
  }
}

/* Views: a record that views another takes over its allocation (no allocation of its own),
 * and a view breaking the rules of in-place pairs (its input still read later, or an image of
 * another extent with the same bytes) is refused. */
static void views_take_over_their_input(void **state) {
  (void)state;
  tg_device *d = open_backend(TG_BACKEND_HOST, 0);
  assert_non_null(d);
  /* a: ops 0-1; b views a at op 1 (a dies there); c: op 2, after b. */
  tg_usage_record rec[3] = {{{256, 1, 1}, 0, 1, 0}, {{256, 1, 1}, 1, 2, 0}, {{256, 1, 1}, 2, 3, 0}};
  tg_tensor_resource res[3];
  uint64_t bytes[3];
  for (int r = 0; r < 3; ++r) {
    res[r] = (tg_tensor_resource){TG_STORAGE_BUFFER, {256, 1, 1}, 256};
    bytes[r] = 256;
  }
  const tg_in_place_pair view = {1, 0, 1, 1};
  tg_pool_options o = {TG_POOL_TLSF, 0, 0, 0, TG_PRECISION_FP32, 0};
  tg_pool *p = NULL;
  assert_int_equal(tg_pool_create(d, &o, NULL, &p, NULL), TG_OK);
  tg__pool_run run;
  tg_error_info err = {{0}};
  uint64_t views = 0;
  assert_int_equal(tg__pool_run_records_views(p, rec, res, bytes, 3, &view, 1, NULL, &run, &views, &err), TG_OK);
  assert_int_equal(views, 1);
  assert_int_equal(run.block_of[1], run.block_of[0]);
  assert_int_equal(run.offset_of[1], run.offset_of[0]);
  tg_pool_stats s;
  tg_pool_get_stats(p, &s);
  assert_int_equal(s.allocs, 2);
  assert_int_equal(s.allocs, s.frees);
  tg__pool_run_free(&run);
  /* b views a, but a is read until op 2: refused, nothing allocated. */
  rec[0].last_task = 2;
  assert_int_equal(tg__pool_run_records_views(p, rec, res, bytes, 3, &view, 1, NULL, &run, &views, &err),
                   TG_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "record 0 is still read after op 1"));
  tg_pool_get_stats(p, &s);
  assert_int_equal(s.allocs, 2);
  /* Images of the same bytes but other extents (4x2 and 2x4 texels): not a view. */
  rec[0].last_task = 1;
  rec[0].size = (tg_extent){4, 2, 1};
  rec[1].size = (tg_extent){2, 4, 1};
  res[0] = (tg_tensor_resource){TG_STORAGE_TEXTURE_2D, {4, 2, 1}, 128};
  res[1] = (tg_tensor_resource){TG_STORAGE_TEXTURE_2D, {2, 4, 1}, 128};
  bytes[0] = bytes[1] = 128;
  assert_int_equal(tg__pool_run_records_views(p, rec, res, bytes, 3, &view, 1, NULL, &run, &views, &err),
                   TG_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "records 0 and 1 differ in size"));
  tg_pool_get_stats(p, &s);
  assert_int_equal(s.allocs, 2);
  tg_pool_destroy(p);
  tg_device_close(d);
}

/* ---- every device object creation failing in turn ---- */

static void device_failures_roll_back(void **state) {
  (void)state;
  for (size_t b = 0; b < k_backend_count; ++b) {
    tg_device *probe = open_backend(k_backends[b], 0);
    if (probe == NULL) continue;
    int images = tg_device_get_info(probe)->images;
    tg_device_close(probe);
    const char *csv = images ? "records/hand_landmark_lite.tex2.csv" : "records/hand_landmark_lite.buffer.csv";
    for (int pol = 0; pol < TG_POOL_POLICY_COUNT; ++pol) {
      int failed = 1;
      uint64_t step = (tg_test_quick() || k_backends[b] != TG_BACKEND_HOST) ? 7 : 1;
      for (uint64_t at = 1; failed; at += (at < 8 ? 1 : step)) {
        tg_device *d = open_backend(k_backends[b], at);
        assert_non_null(d);
        pooled_input in;
        input_load(d, csv, TG_STORAGE_TEXTURE_2D, &in);
        tg_pool_options o = {(tg_pool_policy)pol, 0, pol == TG_POOL_EXACT ? 0 : 256 * 1024, in.alignment,
                             TG_PRECISION_FP32, 0};
        tg_pool *p = NULL;
        assert_int_equal(tg_pool_create(d, &o, NULL, &p, NULL), TG_OK);
        tg__pool_run run;
        tg_error_info err = {{0}};
        tg_status st = tg__pool_run_records(p, in.set->records, in.res, in.bytes, in.set->count, 0, NULL, &run, &err);
        failed = st != TG_OK;
        tg_pool_stats s;
        if (st == TG_OK) {
          tg_realization *z = NULL;
          st = tg__pool_run_realize(d, &run, in.set->records, in.res, TG_PRECISION_FP32, NULL, &z, &err);
          failed = st != TG_OK;
          if (st == TG_OK) {
            assert_non_null(z);
            tg_realization_destroy(z);
          } else {
            assert_null(z);
          }
          tg__pool_run_free(&run);
        } else {
          assert_int_not_equal(run.failed_record, SIZE_MAX);
        }
        if (failed) {
          assert_int_equal(st, TG_ERROR_OUT_OF_DEVICE_MEMORY);
          assert_non_null(strstr(err.message, "TANGRAM_FAIL_DEVICE_ALLOC_AT"));
        }
        tg_pool_get_stats(p, &s);
        assert_int_equal(s.in_use, 0); /* a failed run frees what it took */
        tg_error_info cerr = {{0}};
        if (tg_pool_check(p, &cerr) != TG_OK) fail_msg("%s", cerr.message);
        tg_pool_destroy(p);
        input_free(&in);
        close_device(d);
      }
    }
  }
}

/* `test_pool_device [CASE]`: one case by name; TG_TEST_BACKEND=host|opencl|vulkan: one backend. */
int main(int argc, char **argv) {
  const char *only = getenv("TG_TEST_BACKEND");
  tg_backend_kind kind;
  if (only && *only && tg_backend_from_name(only, &kind) == TG_OK) {
    k_backends[0] = kind;
    k_backend_count = 1;
  }
  tg_test_keep_vulkan_loaded();
  if (argc >= 2) cmocka_set_test_filter(argv[1]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(seed_004_on_every_device),
      cmocka_unit_test(models_run_clean_through_every_policy),
      cmocka_unit_test(freeing_too_early_is_caught),
      cmocka_unit_test(views_take_over_their_input),
      cmocka_unit_test(device_failures_roll_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
