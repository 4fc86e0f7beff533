#define _POSIX_C_SOURCE 200809L
/* The OpenCL backend on a real driver (PoCL on CI): device description, realising the best
 * plans of every public model in every storage, mode and policy with an on-device check,
 * out-of-order checks with the scheduler's waits, a broken plan caught and named, and
 * rollback of every device object creation of a full realisation.
 *
 * Outside CI a machine without any OpenCL platform skips these tests loudly; under CI
 * (CI=true) a missing platform fails them. */
#include "support/tg_test.h"
#include "support/tg_opencl_live.h"
#include "support/tg_backend_cases.h"
#include "support/tg_models.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tangram/backend.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/schedule.h"
#ifdef TANGRAM_TEST_HAVE_OPENCL
#include "backends/opencl/opencl_debug.h"
#endif

extern char **environ;

typedef struct suite {
  tg_device *device;
  const tg_device_info *info;
  char self[1024]; /* this executable, for probes in a fresh process */
} suite;

static char g_self[1024];

/* ------------------------------------------------------------------------------------------ */
/* Helpers. */

static tg_status open_opencl(const tg_device_options *base, const tg_allocator *alloc,
                             tg_device **out, tg_error_info *err) {
  tg_device_options opt = base ? *base : (tg_device_options){0};
  opt.backend = TG_BACKEND_OPENCL;
  return tg_device_open(&opt, alloc, out, NULL, NULL, err);
}

typedef struct case_result {
  tg_status realize_status;
  uint64_t allocations, bytes, corrupted, checked_bytes;
  uint64_t ooo_corrupted; /* out of order with the waits the policy needs */
  int unsafe_outcome;     /* serial plan without reuse edges: 0 none needed, 1 caught, 2 refused */
  size_t reuse_edges;
  size_t fallback_records;
  uint64_t fallback_corrupted;
} case_result;

/* Realise `plan` and check it in order, then out of order. */
static void realise_and_check(tg_device *d, const tg_test_model *m, const tg_record_set *set,
                              const uint32_t *tensor_of, const tg_tensor_resource *res,
                              tg_precision precision, const tg_plan *plan, int serial,
                              case_result *out, int fallback) {
  tg_error_info err = {{0}};
  tg_realize_desc desc = {plan, set->records, set->count, set->dims, res, precision, 0};
  tg_realization *z = NULL;
  tg_status st = tg_realization_create(d, &desc, NULL, &z, &err);
  if (st != TG_OK) fail_msg("%s: realize: %s", m->name, err.message);
  const tg_realization_stats stats = tg_test_realization_counts(z, plan, set->count);
  assert_int_equal(stats.allocated_bytes, tg_test_expected_bytes(plan, set, precision));
  /* Every tensor has a handle inside its memory. */
  for (size_t r = 0; r < set->count; ++r) {
    tg_tensor_handle h;
    assert_int_equal(tg_realization_get_tensor(z, r, &h), TG_OK);
    if (res[r].bytes > 0) assert_true(h.native != 0 && h.memory != 0);
  }

  uint64_t *mism = calloc(set->count + 1, sizeof *mism);
  assert_non_null(mism);
  tg_check_desc cd = {m->model->graph, tensor_of, 0, 0, NULL, NULL};
  tg_check_result res_in = {0, mism, 0};
  st = tg_realization_check(z, &cd, &res_in, &err);
  if (st != TG_OK) fail_msg("%s: check: %s", m->name, err.message);
  for (size_t r = 0; r < set->count; ++r)
    if (mism[r])
      print_error("%s: record %zu (%s) corrupted: %llu mismatches\n", m->name, r,
                  tg_test_record_name(set, r), (unsigned long long)mism[r]);
  if (fallback) {
    out->fallback_corrupted = res_in.corrupted_records;
    assert_int_equal(res_in.corrupted_records, 0);
    free(mism);
    tg_realization_destroy(z);
    return;
  }
  out->allocations = stats.allocations;
  out->bytes = stats.allocated_bytes;
  out->corrupted = res_in.corrupted_records;
  out->checked_bytes = res_in.checked_bytes;
  assert_int_equal(res_in.corrupted_records, 0);
  assert_true(res_in.checked_bytes > 0);

  /* Out of order with the scheduler's waits. The plan's records index the primary set; the
   * waits need them (arena records carry the same intervals). */
  tg_waits *w = NULL;
  st = tg_schedule_compute_waits(m->schedule, set->records, tensor_of, set->count, plan, NULL, &w,
                                 &err);
  if (st != TG_OK) fail_msg("%s: waits: %s", m->name, err.message);
  out->reuse_edges = w->reuse_edge_count;
  if (!serial) assert_int_equal(w->reuse_edge_count, 0);
  tg_test_op_waits ow;
  tg_test_op_waits_build(w, 1, &ow);
  tg_check_desc od = {m->model->graph, tensor_of, 1, ow.op_count, ow.counts, ow.lists};
  tg_check_result res_ooo = {0, mism, 0};
  memset(mism, 0, (set->count + 1) * sizeof *mism);
  st = tg_realization_check(z, &od, &res_ooo, &err);
  if (st != TG_OK) fail_msg("%s: out-of-order check: %s", m->name, err.message);
  out->ooo_corrupted = res_ooo.corrupted_records;
  assert_int_equal(res_ooo.corrupted_records, 0);
  assert_int_equal(res_ooo.checked_bytes, res_in.checked_bytes);
  tg_test_op_waits_free(&ow);

  /* A serial plan out of order without its reuse edges: the check must catch the corruption
   * or refuse the run up front. */
  out->unsafe_outcome = 0;
  if (serial && w->reuse_edge_count > 0) {
    tg_test_op_waits_build(w, 0, &ow);
    od.wait_counts = ow.counts;
    od.waits = ow.lists;
    memset(mism, 0, (set->count + 1) * sizeof *mism);
    tg_check_result res_bad = {0, mism, 0};
    err.message[0] = '\0';
    st = tg_realization_check(z, &od, &res_bad, &err);
    if (st == TG_ERROR_INVALID_PLAN) {
      out->unsafe_outcome = 2;
      assert_non_null(strstr(err.message, "reuses the memory"));
    } else {
      assert_int_equal(st, TG_OK);
      if (res_bad.corrupted_records == 0)
        fail_msg("%s: serial plan without its %zu reuse edges ran out of order undetected", m->name,
                 w->reuse_edge_count);
      out->unsafe_outcome = 1;
    }
    tg_test_op_waits_free(&ow);
  }
  tg_waits_destroy(w);
  free(mism);
  tg_realization_destroy(z);
  assert_int_equal(tg_test_opencl_live(d), 0);
}

/* One model x storage x mode x policy at `precision`. */
static void run_case(tg_device *d, const tg_test_model *m, tg_storage storage, tg_mode mode,
                     tg_policy policy, tg_precision precision, case_result *out) {
  memset(out, 0, sizeof *out);
  const tg_device_info *info = tg_device_get_info(d);
  tg_error_info err = {{0}};
  tg_model_records *mr = tg_test_model_records(m, storage, precision, &info->limits);
  const tg_record_set *set = mr->records;
  tg_policy_relation *rel = NULL;
  assert_int_equal(
      tg_policy_relation_create(m->schedule, policy, mr->tensor_of, set->count, NULL, &rel), TG_OK);
  int image = tg_storage_dims(storage) > 1;
  tg_tensor_resource *res = tg_test_resources_for(set, storage, precision);
  tg_mode real_mode = mode;
  if (image && mode == TG_MODE_OFFSETS && !info->arena_images) {
    /* The device cannot place images in an arena: the realisation says so and names the way
     * out; the images are then realised as objects. */
    tg_plan *offsets_plan = NULL;
    tg_usage_record *flat = calloc(set->count + 1, sizeof *flat);
    assert_non_null(flat);
    for (size_t r = 0; r < set->count; ++r) {
      flat[r] = set->records[r];
      flat[r].size = (tg_extent){res[r].bytes, 1, 1};
    }
    tg_plan_options po = {0};
    po.mode = TG_MODE_OFFSETS;
    po.strategy = TG_STRATEGY_GREEDY_BY_SIZE;
    po.alignment = info->buffer_alignment;
    assert_int_equal(tg_plan_compute(flat, set->count, 1, &po, NULL, &offsets_plan), TG_OK);
    tg_realize_desc desc = {offsets_plan, flat, set->count, 1, res, precision, 0};
    tg_realization *z = NULL;
    out->realize_status = tg_realization_create(d, &desc, NULL, &z, &err);
    assert_int_equal(out->realize_status, TG_ERROR_UNSUPPORTED);
    assert_null(z);
    assert_non_null(strstr(err.message, "objects mode"));
    tg_plan_destroy(offsets_plan);
    free(flat);
    real_mode = TG_MODE_OBJECTS;
  }
  tg_record_set *arena = NULL;
  tg_plan *plan = tg_test_plan_for_device(d, set, res, precision, real_mode, tg_policy_relation_get(rel), 1, &arena);
  realise_and_check(d, m, set, mr->tensor_of, res, precision, plan, policy == TG_POLICY_SERIAL, out,
                    0);
  tg_plan_destroy(plan);
  tg_record_set_destroy(arena);

  /* Tensors that did not fit the texture storage live in buffers of their own plan. */
  out->fallback_records = mr->fallback->count;
  if (mr->fallback->count) {
    tg_tensor_resource *fres = tg_test_resources_for(mr->fallback, TG_STORAGE_BUFFER, precision);
    tg_record_set *farena = NULL;
    tg_plan *fplan = tg_test_plan_for_device(d, mr->fallback, fres, precision, mode, NULL, 1, &farena);
    realise_and_check(d, m, mr->fallback, mr->fallback_tensor_of, fres, precision, fplan, 1, out,
                      1);
    tg_plan_destroy(fplan);
    tg_record_set_destroy(farena);
    free(fres);
  }
  free(res);
  tg_policy_relation_destroy(rel);
  tg_model_records_destroy(mr);
}

/* ------------------------------------------------------------------------------------------ */
/* Setup. */

static int suite_setup(void **state) {
  suite *s = calloc(1, sizeof *s);
  if (s == NULL) return -1;
  snprintf(s->self, sizeof s->self, "%s", g_self);
  tg_error_info err = {{0}};
  tg_status st = open_opencl(NULL, NULL, &s->device, &err);
  if (st != TG_OK) {
    if (tg_test_in_ci()) {
      fprintf(stderr, "FAILURE: no usable OpenCL device under CI: %s (%s)\n", err.message,
              tg_status_name(st));
      free(s);
      return -1;
    }
    fprintf(stderr,
            "\n*** SKIPPING the OpenCL tests: %s (%s). Install an OpenCL driver "
            "(scripts/setup.sh installs PoCL) to run them. ***\n\n",
            err.message, tg_status_name(st));
  } else {
    s->info = tg_device_get_info(s->device);
  }
  *state = s;
  return 0;
}

static int suite_teardown(void **state) {
  suite *s = *state;
  if (s) {
    tg_device_close(s->device);
    free(s);
  }
  return 0;
}

#define REQUIRE_DEVICE(s)            \
  do {                               \
    if ((s)->device == NULL) skip(); \
  } while (0)

/* ------------------------------------------------------------------------------------------ */
/* Tests. */

static void device_info_is_sane(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  const tg_device_info *i = s->info;
  print_message("device: %s (%s), %s\n", i->name, i->kind, i->driver);
  print_message("budget %llu, max allocation %llu, buffer alignment %llu, image alignment %llu\n",
                (unsigned long long)i->memory_budget, (unsigned long long)i->max_allocation,
                (unsigned long long)i->buffer_alignment, (unsigned long long)i->image_alignment);
  print_message(
      "images %d, fp16 images %d, image2d_from_buffer %d, arena images %d, out of order %d\n",
      i->images, i->fp16_images, i->image2d_from_buffer, i->arena_images, i->out_of_order);
  print_message(
      "limits: buffer %llu, image buffer %llu texels, 2D %llux%llu, 3D %llux%llux%llu, "
      "%llu layers\n",
      (unsigned long long)i->limits.max_buffer_bytes,
      (unsigned long long)i->limits.max_image_buffer_texels,
      (unsigned long long)i->limits.max_texture_2d_width,
      (unsigned long long)i->limits.max_texture_2d_height,
      (unsigned long long)i->limits.max_texture_3d_width,
      (unsigned long long)i->limits.max_texture_3d_height,
      (unsigned long long)i->limits.max_texture_3d_depth,
      (unsigned long long)i->limits.max_texture_array_layers);
  assert_int_equal(i->backend, TG_BACKEND_OPENCL);
  assert_true(i->name[0] != '\0');
  assert_true(strcmp(i->kind, "gpu") == 0 || strcmp(i->kind, "integrated-gpu") == 0 ||
              strcmp(i->kind, "cpu") == 0 || strcmp(i->kind, "other") == 0);
  assert_non_null(strstr(i->driver, "OpenCL"));
  assert_true(i->memory_budget > 0);
  assert_true(i->max_allocation > 0 && i->max_allocation <= i->memory_budget);
  assert_int_equal(i->limits.max_buffer_bytes, i->max_allocation);
  /* A power of two, at least one 32-bit word (the spec's minimum is the size of a long16). */
  assert_true(i->buffer_alignment >= 4 && (i->buffer_alignment & (i->buffer_alignment - 1)) == 0);
  assert_true(i->image_alignment >= i->buffer_alignment);
  assert_int_equal(i->arena_images, i->image2d_from_buffer);
  if (i->images) {
    /* OpenCL 1.2 full-profile minimums. */
    assert_true(i->limits.max_texture_2d_width >= 2048 && i->limits.max_texture_2d_height >= 2048);
    assert_true(i->limits.max_texture_3d_width >= 2048 && i->limits.max_texture_3d_depth >= 2048);
    assert_true(i->limits.max_texture_array_layers >= 256);
    assert_true(i->limits.max_image_buffer_texels >= 65536);
  }
  assert_int_equal(tg_device_get_native_error(s->device), 0);
  assert_int_equal(tg_device_get_validation_messages(s->device), 0);

  /* Selection by index and by name. */
  tg_device_options opt = {0};
  tg_device *d = NULL;
  tg_error_info err = {{0}};
  opt.device = "0";
  assert_int_equal(open_opencl(&opt, NULL, &d, &err), TG_OK);
  tg_device_close(d);
  char part[8];
  snprintf(part, sizeof part, "%.4s", i->name);
  opt.device = part;
  assert_int_equal(open_opencl(&opt, NULL, &d, &err), TG_OK);
  assert_string_equal(tg_device_get_info(d)->name, i->name);
  tg_device_close(d);
  opt.device = "no such device anywhere";
  assert_int_equal(open_opencl(&opt, NULL, &d, &err), TG_ERROR_NO_DEVICE);
  assert_null(d);
  assert_non_null(strstr(err.message, "no such device anywhere"));
  opt.device = "999";
  assert_int_equal(open_opencl(&opt, NULL, &d, &err), TG_ERROR_NO_DEVICE);

  /* Requirements: buffers at the base alignment; images not placeable in an arena report
   * their texels' bytes. */
  tg_tensor_resource buf = {TG_STORAGE_BUFFER, {1000, 1, 1}, 1000};
  tg_resource_requirements req;
  assert_int_equal(tg_device_compute_requirements(s->device, &buf, TG_PRECISION_FP32, &req), TG_OK);
  assert_int_equal(req.size, 1000);
  assert_int_equal(req.alignment, i->buffer_alignment);
  assert_int_equal(req.linear, 1);
  tg_tensor_resource img = {TG_STORAGE_TEXTURE_3D, {5, 7, 3}, 5 * 7 * 3 * 8};
  assert_int_equal(tg_device_compute_requirements(s->device, &img, TG_PRECISION_FP16, &req), TG_OK);
  assert_true(req.size >= 5 * 7 * 3 * 8);
  assert_int_equal(req.linear, 0);
}

static void missing_driver_is_reported(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  char out[4096];
  /* No loader. */
  char *no_loader[] = {(char *)"TANGRAM_OPENCL_LIBRARY=/nonexistent/libOpenCL.so.1", NULL};
  tg_test_probe(s->self, "--probe", "opencl", no_loader, out, sizeof out);
  print_message("%s", out);
  assert_non_null(strstr(out, "status=TG_ERROR_NO_LOADER"));
  assert_non_null(strstr(out, "/nonexistent/libOpenCL.so.1"));
  /* A loader without any platform; `auto` passes over OpenCL and says why. */
  char *no_platform[] = {(char *)"OCL_ICD_VENDORS=/nonexistent-icd-dir",
                         (char *)"OCL_ICD_FILENAMES=",
                         (char *)"VK_ICD_FILENAMES=/nonexistent.json",
                         (char *)"VK_DRIVER_FILES=/nonexistent.json",
                         (char *)"TANGRAM_BACKEND=",
                         NULL};
  tg_test_probe(s->self, "--probe", "opencl", no_platform, out, sizeof out);
  print_message("%s", out);
  assert_non_null(strstr(out, "status=TG_ERROR_NO_DEVICE"));
  assert_non_null(strstr(out, "no OpenCL platform (-1001)"));
  tg_test_probe(s->self, "--probe", "auto", no_platform, out, sizeof out);
  print_message("%s", out);
  assert_non_null(strstr(out, "status=TG_OK"));
  assert_non_null(strstr(out, "skipped opencl TG_ERROR_NO_DEVICE: no OpenCL platform (-1001)"));
}

/* Graph-less checks of the shipped record sets: written at first_task, read at last_task. */
static void record_sets_realise_clean(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  static const char *const kinds[] = {"buffer", "tex2", "tex3"};
  for (size_t m = 0; m < TG_TEST_GPU_MODEL_COUNT; ++m)
    for (size_t k = 0; k < 3; ++k) {
      char file[256], path[1024];
      snprintf(file, sizeof file, "records/%s.%s.csv", tg_test_gpu_models[m], kinds[k]);
      tg_record_set *set = NULL;
      tg_error_info err = {{0}};
      if (tg_records_read_csv(tg_test_data_path(path, sizeof path, file), NULL, &set, &err) !=
          TG_OK)
        fail_msg("%s: %s", file, err.message);
      tg_storage storages[2] = {k == 0   ? TG_STORAGE_BUFFER
                                : k == 1 ? TG_STORAGE_TEXTURE_2D
                                         : TG_STORAGE_TEXTURE_3D,
                                k == 2 ? TG_STORAGE_TEXTURE_ARRAY : TG_STORAGE_COUNT};
      for (int si = 0; si < 2 && storages[si] != TG_STORAGE_COUNT; ++si)
        for (int mode = 0; mode < (k == 0 ? 2 : 1); ++mode)
          for (int p = 0; p < 2; ++p) {
            tg_precision prec = (tg_precision)p;
            tg_tensor_resource *res = tg_test_resources_for(set, storages[si], prec);
            tg_record_set *arena = NULL;
            tg_plan *plan = tg_test_plan_for_device(s->device, set, res, prec, (tg_mode)mode, NULL, 1, &arena);
            tg_realize_desc desc = {plan, set->records, set->count, set->dims, res, prec, 0};
            tg_realization *z = NULL;
            if (tg_realization_create(s->device, &desc, NULL, &z, &err) != TG_OK)
              fail_msg("%s: realize: %s", file, err.message);
            tg_realization_stats stats;
            tg_realization_get_stats(z, &stats);
            assert_int_equal(stats.allocations, plan->object_count);
            assert_int_equal(stats.allocated_bytes, tg_test_expected_bytes(plan, set, prec));
            tg_check_result r = {0, NULL, 0};
            if (tg_realization_check(z, NULL, &r, &err) != TG_OK)
              fail_msg("%s: check: %s", file, err.message);
            assert_int_equal(r.corrupted_records, 0);
            assert_true(r.checked_bytes > 0);
            tg_realization_destroy(z);
            assert_int_equal(tg_test_opencl_live(s->device), 0);
            tg_plan_destroy(plan);
            tg_record_set_destroy(arena);
            free(res);
          }
      tg_record_set_destroy(set);
    }
}

/* Every public model x storage x mode x policy. */
static void models_realise_clean(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  static const tg_policy policies[] = {TG_POLICY_SERIAL, TG_POLICY_PARALLEL_SAFE};
  print_message("%-28s %-13s %-7s %-13s %5s %10s %4s %4s %5s %s\n", "model", "storage", "mode",
                "policy", "alloc", "bytes", "corr", "ooo", "reuse", "unsafe-serial");
  size_t cases = 0;
  for (size_t m = 0; m < TG_TEST_GPU_MODEL_COUNT; ++m) {
    tg_test_model md;
    if (!tg_test_model_open(tg_test_gpu_models[m], &md)) continue;
    for (size_t si = 0; si < TG_TEST_GPU_STORAGE_COUNT; ++si)
      for (int mode = 0; mode < 2; ++mode)
        for (size_t pi = 0; pi < 2; ++pi) {
          case_result r;
          run_case(s->device, &md, tg_test_gpu_storages[si], (tg_mode)mode, policies[pi], TG_PRECISION_FP32,
                   &r);
          const char *mode_text = mode == TG_MODE_OBJECTS                    ? "objects"
                                  : r.realize_status == TG_ERROR_UNSUPPORTED ? "off->obj"
                                                                             : "offsets";
          print_message("%-28s %-13s %-7s %-13s %5llu %10llu %4llu %4llu %5zu %s%s\n", tg_test_gpu_models[m],
                        tg_storage_name(tg_test_gpu_storages[si]), mode_text, tg_policy_name(policies[pi]),
                        (unsigned long long)r.allocations, (unsigned long long)r.bytes,
                        (unsigned long long)r.corrupted, (unsigned long long)r.ooo_corrupted,
                        r.reuse_edges,
                        r.unsafe_outcome == 2   ? "refused"
                        : r.unsafe_outcome == 1 ? "caught"
                                                : "-",
                        r.fallback_records ? " (+fallback buffers)" : "");
          ++cases;
        }
    tg_test_model_close(&md);
  }
  print_message("%zu cases\n", cases);
}

/* Half-float images of every model in every texture storage. */
static void models_realise_clean_fp16(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  if (!s->info->fp16_images) skip();
  for (size_t m = 0; m < TG_TEST_GPU_MODEL_COUNT; ++m) {
    tg_test_model md;
    if (!tg_test_model_open(tg_test_gpu_models[m], &md)) continue;
    for (size_t si = 1; si < TG_TEST_GPU_STORAGE_COUNT; ++si) {
      case_result r;
      run_case(s->device, &md, tg_test_gpu_storages[si], TG_MODE_OBJECTS, TG_POLICY_SERIAL, TG_PRECISION_FP16,
               &r);
      print_message("%-28s %-13s fp16: %llu objects, %llu bytes, %llu corrupted\n", tg_test_gpu_models[m],
                    tg_storage_name(tg_test_gpu_storages[si]), (unsigned long long)r.allocations,
                    (unsigned long long)r.bytes, (unsigned long long)r.corrupted);
    }
    tg_test_model_close(&md);
  }
}

/* Two tensors alive at once put in the same memory (bypassing the validator): the check finds
 * the victim and names it, in every storage and mode. */
static void broken_plan_is_caught_and_named(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  tg_test_model md;
  if (!tg_test_model_open("face_detection_short_range", &md)) skip();
  for (size_t si = 0; si < TG_TEST_GPU_STORAGE_COUNT; ++si)
    for (int mode = 0; mode < 2; ++mode) {
      tg_storage storage = tg_test_gpu_storages[si];
      if (mode == TG_MODE_OFFSETS && storage != TG_STORAGE_BUFFER && !s->info->arena_images)
        continue;
      tg_model_records *mr = NULL;
      tg_error_info err = {{0}};
      mr = tg_test_model_records(&md, storage, TG_PRECISION_FP32, &s->info->limits);
      const tg_record_set *set = mr->records;
      tg_tensor_resource *res = tg_test_resources_for(set, storage, TG_PRECISION_FP32);
      tg_record_set *arena = NULL;
      tg_plan *plan = tg_test_plan_for_device(s->device, set, res, TG_PRECISION_FP32, (tg_mode)mode, NULL, 1, &arena);
      size_t victim, intruder;
      tg_test_break_plan(plan, set, arena, &victim, &intruder);
      tg_realize_desc desc = {plan, set->records, set->count, set->dims, res, TG_PRECISION_FP32, 0};
      tg_realization *z = NULL;
      assert_int_equal(tg_realization_create(s->device, &desc, NULL, &z, &err),
                       TG_ERROR_INVALID_PLAN);
      desc.skip_validation = 1;
      if (tg_realization_create(s->device, &desc, NULL, &z, &err) != TG_OK)
        fail_msg("realize: %s", err.message);
      uint64_t *mism = calloc(set->count, sizeof *mism);
      assert_non_null(mism);
      tg_check_desc cd = {md.model->graph, mr->tensor_of, 0, 0, NULL, NULL};
      tg_check_result r = {0, mism, 0};
      assert_int_equal(tg_realization_check(z, &cd, &r, &err), TG_OK);
      assert_true(r.corrupted_records >= 1);
      assert_true(mism[victim] > 0);
      print_message(
          "%s %s: record %zu (%s) overwritten by record %zu (%s): %llu mismatches, "
          "%llu record(s) corrupted\n",
          tg_storage_name(storage), tg_mode_name((tg_mode)mode), victim, tg_test_record_name(set, victim),
          intruder, tg_test_record_name(set, intruder), (unsigned long long)mism[victim],
          (unsigned long long)r.corrupted_records);
      free(mism);
      tg_realization_destroy(z);
      assert_int_equal(tg_test_opencl_live(s->device), 0);
      tg_plan_destroy(plan);
      tg_record_set_destroy(arena);
      free(res);
      tg_model_records_destroy(mr);
    }
  tg_test_model_close(&md);
}

/* A tensor smaller than its shared image uses the object's pitch: a narrow tensor written
 * after a wide one overwrites the wide one's first rows, exactly as on the host backend. */
static void shared_image_regions_use_the_object_pitch(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  uint64_t mismatches[2] = {0, 0};
  tg_test_shared_image_regions(s->device, mismatches);
  assert_int_equal(mismatches[1], 0);
}

/* Buffers whose size is not a multiple of 4 (tail bytes) and empty tensors check clean; a
 * tensor read before anything in the run wrote it is reported, on every run (each check
 * starts from memory no signature matches, whatever an earlier check left there). */
static void odd_sizes_and_unwritten_reads(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  uint64_t a = s->info->buffer_alignment;
  /* Tensors 0..3 are the records; op 0 reads tensor 0, which nothing writes, and writes 1 and
   * 2; op 1 reads 1 and 2 and writes 3; op 2 reads 3. */
  tg_usage_record recs[4] = {
      {{13, 1, 1}, 0, 0, 0}, {{0, 1, 1}, 0, 1, 0}, {{7, 1, 1}, 0, 1, 0}, {{1001, 1, 1}, 1, 2, 0}};
  tg_graph *g = NULL;
  assert_int_equal(tg_graph_create(4, 3, NULL, &g), TG_OK);
  static const int32_t in0[] = {0}, out0[] = {1, 2}, in1[] = {1, 2}, out1[] = {3}, in2[] = {3};
  static const int64_t shape[1] = {4};
  for (size_t t = 0; t < 4; ++t) {
    char name[8];
    snprintf(name, sizeof name, "t%zu", t);
    assert_int_equal(tg_graph_set_tensor(g, t, name, 1, shape, TG_DTYPE_FLOAT32, 0), TG_OK);
  }
  assert_int_equal(tg_graph_set_op(g, 0, "OP", 1, in0, 2, out0), TG_OK);
  assert_int_equal(tg_graph_set_op(g, 1, "OP", 2, in1, 1, out1), TG_OK);
  assert_int_equal(tg_graph_set_op(g, 2, "OP", 1, in2, 0, NULL), TG_OK);
  const uint32_t tensor_of[4] = {0, 1, 2, 3};
  for (int mode = 0; mode < 2; ++mode) {
    tg_plan *plan = NULL;
    tg_plan_options po = {0};
    po.mode = (tg_mode)mode;
    po.strategy = TG_STRATEGY_BEST;
    po.alignment = mode ? a : 0;
    assert_int_equal(tg_plan_compute(recs, 4, 1, &po, NULL, &plan), TG_OK);
    tg_tensor_resource res[4];
    tg_test_buffer_resources(recs, 4, res);
    tg_realize_desc desc = {plan, recs, 4, 1, res, TG_PRECISION_FP32, 0};
    tg_realization *z = NULL;
    tg_error_info err = {{0}};
    assert_int_equal(tg_realization_create(s->device, &desc, NULL, &z, &err), TG_OK);
    /* Graph-less: each record written at first_task, read at last_task: clean. */
    uint64_t mism[4] = {0};
    tg_check_result r = {0, mism, 0};
    assert_int_equal(tg_realization_check(z, NULL, &r, &err), TG_OK);
    assert_int_equal(r.corrupted_records, 0);
    /* Written once, and read once unless written and last used by the same task. */
    assert_int_equal(r.checked_bytes, 13 + 2 * (0 + 7 + 1001));
    /* With the graph, tensor 0 is read and never written: all 13 bytes (3 words + 1 tail
     * byte) mismatch, on a second run too, in order and out of order. */
    for (int run = 0; run < 3; ++run) {
      static const uint32_t w1[] = {0}, w2[] = {1};
      const uint32_t *lists[3] = {NULL, w1, w2};
      uint32_t counts[3] = {0, 1, 1};
      int ooo = run == 2;
      tg_check_desc cd = {g, tensor_of, ooo, 3, ooo ? counts : NULL, ooo ? lists : NULL};
      memset(mism, 0, sizeof mism);
      assert_int_equal(tg_realization_check(z, &cd, &r, &err), TG_OK);
      assert_int_equal(r.corrupted_records, 1);
      assert_int_equal(mism[0], 4);
      assert_int_equal(mism[1] + mism[2] + mism[3], 0);
    }
    tg_realization_destroy(z);
    tg_plan_destroy(plan);
  }
  tg_graph_destroy(g);
}

/* An offsets plan made without the device's alignment is refused with a clear status. */
static void misaligned_offsets_are_refused(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  if (s->info->buffer_alignment <= 4) skip();
  tg_usage_record recs[2] = {{{100, 1, 1}, 0, 1, 0}, {{100, 1, 1}, 0, 1, 0}};
  tg_plan *plan = NULL;
  assert_int_equal(tg_plan_create(TG_MODE_OFFSETS, 1, 2, 1, NULL, &plan), TG_OK);
  plan->offset_of[0] = 0;
  plan->offset_of[1] = 100; /* not a multiple of the base alignment */
  plan->total = 200;
  tg_tensor_resource res[2] = {{TG_STORAGE_BUFFER, {100, 1, 1}, 100},
                               {TG_STORAGE_BUFFER, {100, 1, 1}, 100}};
  tg_realize_desc desc = {plan, recs, 2, 1, res, TG_PRECISION_FP32, 0};
  tg_realization *z = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_realization_create(s->device, &desc, NULL, &z, &err);
  print_message("misaligned: %s: %s\n", tg_status_name(st), err.message);
  assert_int_equal(st, TG_ERROR_INVALID_PLAN);
  assert_null(z);
  assert_int_equal(tg_test_opencl_live(s->device), 0);
  tg_plan_destroy(plan);
}

/* Allocations beyond the device's limits fail cleanly with the driver's code kept. */
static void oversized_allocations_fail_cleanly(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  const tg_device_info *i = s->info;
  struct {
    tg_storage storage;
    tg_extent size;
  } cases[2] = {{TG_STORAGE_BUFFER, {i->max_allocation + 4096, 1, 1}},
                {TG_STORAGE_TEXTURE_2D, {i->limits.max_texture_2d_width + 1, 4, 1}}};
  for (int c = 0; c < (i->images ? 2 : 1); ++c) {
    tg_storage st_kind = cases[c].storage;
    uint32_t dims = st_kind == TG_STORAGE_BUFFER ? 1 : 2;
    tg_usage_record recs[2] = {{{256, 1, 1}, 0, 1, 0}, {cases[c].size, 0, 1, 0}};
    tg_plan_options po = {0};
    tg_plan *plan = NULL;
    assert_int_equal(tg_plan_compute(recs, 2, dims, &po, NULL, &plan), TG_OK);
    tg_tensor_resource res[2];
    for (int r = 0; r < 2; ++r) {
      const tg_extent *e = &recs[r].size;
      res[r] = (tg_tensor_resource){st_kind, *e, dims == 1 ? e->w : e->w * e->h * 16};
    }
    tg_realize_desc desc = {plan, recs, 2, dims, res, TG_PRECISION_FP32, 0};
    tg_realization *z = NULL;
    tg_error_info err = {{0}};
    tg_status st = tg_realization_create(s->device, &desc, NULL, &z, &err);
    print_message("%s: %s: %s\n", tg_storage_name(st_kind), tg_status_name(st), err.message);
    assert_true(st == TG_ERROR_LIMIT || st == TG_ERROR_OUT_OF_DEVICE_MEMORY);
    assert_null(z);
    assert_true(tg_device_get_native_error(s->device) != 0);
    assert_int_equal(tg_test_opencl_live(s->device), 0);
    tg_plan_destroy(plan);
  }
}

/* Walk the failure point over every device object creation of a full realisation of a real
 * model: each run fails cleanly with TG_ERROR_OUT_OF_DEVICE_MEMORY, or succeeds past the last;
 * no cl_mem and no host block outlives it. */
static void walk_failures(const suite *s, const tg_test_model *md, tg_storage storage, tg_mode mode,
                          uint64_t *points) {
  tg_model_records *mr = NULL;
  tg_error_info err = {{0}};
  mr = tg_test_model_records(md, storage, TG_PRECISION_FP16, &s->info->limits);
  const tg_record_set *set = mr->records;
  tg_tensor_resource *res = tg_test_resources_for(set, storage, TG_PRECISION_FP16);
  tg_record_set *arena = NULL;
  tg_plan *plan = tg_test_plan_for_device(s->device, set, res, TG_PRECISION_FP16, mode, NULL, 1, &arena);
  uint64_t n;
  for (n = 1;; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, 0);
    tg_device_options opt = {0};
    opt.fail_device_alloc_at = n;
    tg_device *d = NULL;
    assert_int_equal(open_opencl(&opt, &fa.base, &d, &err), TG_OK);
    tg_realize_desc desc = {plan, set->records, set->count, set->dims, res, TG_PRECISION_FP16, 0};
    tg_realization *z = NULL;
    tg_status st = tg_realization_create(d, &desc, &fa.base, &z, &err);
    if (st == TG_OK) {
      /* Past the last creation: the realisation works. */
      tg_test_check_clean(z);
      assert_int_equal(tg_test_opencl_live(d), 0);
      tg_device_close(d);
      assert_int_equal(fa.live_blocks, 0);
      break;
    }
    if (st != TG_ERROR_OUT_OF_DEVICE_MEMORY)
      fail_msg("N=%llu: %s", (unsigned long long)n, err.message);
    assert_null(z);
    assert_non_null(strstr(err.message, "TANGRAM_FAIL_DEVICE_ALLOC_AT"));
    if (tg_test_opencl_live(d) != 0)
      fail_msg("N=%llu: %llu cl_mem leaked", (unsigned long long)n,
               (unsigned long long)tg_test_opencl_live(d));
    tg_device_close(d);
    assert_int_equal(fa.live_blocks, 0);
  }
  assert_int_equal(n - 1, plan->object_count * (mode == TG_MODE_OBJECTS) +
                              (mode == TG_MODE_OFFSETS) + set->count);
  print_message("%s %s %s: %llu failure points, each rolled back\n", md->name,
                tg_storage_name(storage), tg_mode_name(mode), (unsigned long long)(n - 1));
  *points += n - 1;
  tg_plan_destroy(plan);
  tg_record_set_destroy(arena);
  free(res);
  tg_model_records_destroy(mr);
}

static void device_alloc_failures_roll_back(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  tg_test_model md;
  if (!tg_test_model_open("pose_landmark_lite", &md)) skip();
  uint64_t points = 0;
  walk_failures(s, &md, TG_STORAGE_BUFFER, TG_MODE_OBJECTS, &points);
  walk_failures(s, &md, TG_STORAGE_BUFFER, TG_MODE_OFFSETS, &points);
  walk_failures(s, &md, TG_STORAGE_TEXTURE_2D, TG_MODE_OBJECTS, &points);
  walk_failures(s, &md, TG_STORAGE_TEXTURE_ARRAY, TG_MODE_OBJECTS, &points);
  walk_failures(s, &md, TG_STORAGE_TEXTURE_3D, TG_MODE_OBJECTS, &points);
  print_message("%llu failure points in all\n", (unsigned long long)points);
  tg_test_model_close(&md);
}

/* Every host allocation of open + realise + check fails once: clean status, nothing leaks. */
static void host_alloc_failures_roll_back(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  tg_usage_record recs[4];
  tg_tensor_resource res[4];
  tg_test_walk_buffers(recs, res);
  for (int mode = 0; mode < 2; ++mode) {
    tg_plan_options po = {0};
    po.mode = (tg_mode)mode;
    po.strategy = TG_STRATEGY_BEST;
    po.alignment = mode ? s->info->buffer_alignment : 0;
    tg_plan *plan = NULL;
    assert_int_equal(tg_plan_compute(recs, 4, 1, &po, NULL, &plan), TG_OK);
    uint64_t n;
    for (n = 1;; ++n) {
      tg_failing_allocator fa;
      tg_failing_allocator_init(&fa, NULL, n);
      tg_device *d = NULL;
      tg_status st = open_opencl(NULL, &fa.base, &d, NULL);
      if (st == TG_OK) st = tg_test_walk_realise_check(d, plan, recs, res, &fa.base);
      if (d) assert_int_equal(tg_test_opencl_live(d), 0);
      tg_device_close(d);
      assert_int_equal(fa.live_blocks, 0);
      if (fa.failures == 0) break;
      if (st != TG_ERROR_OUT_OF_HOST_MEMORY && st != TG_ERROR_OUT_OF_DEVICE_MEMORY)
        fail_msg("host allocation %llu failed: status %s", (unsigned long long)n,
                 tg_status_name(st));
    }
    print_message("%s: host allocation failure injected at %llu points\n",
                  tg_mode_name((tg_mode)mode), (unsigned long long)(n - 1));
    tg_plan_destroy(plan);
  }
}

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "--probe") == 0) return tg_test_run_probe(TG_BACKEND_OPENCL, argv[2]);
  snprintf(g_self, sizeof g_self, "%s", argv[0]);
  if (strchr(g_self, '/') == NULL) {
    char buf[1024];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) {
      buf[n] = '\0';
      snprintf(g_self, sizeof g_self, "%s", buf);
    }
  }
  /* PoCL caches compiled kernels; keep its cache in the build tree, not in $HOME. */
  if (getenv("POCL_CACHE_DIR") == NULL) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/pocl-cache", TG_BINARY_DIR);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) perror(dir);
    setenv("POCL_CACHE_DIR", dir, 1);
  }
  /* TG_TEST_FILTER=name runs only the matching tests (cmocka's pattern). */
  if (getenv("TG_TEST_FILTER")) cmocka_set_test_filter(getenv("TG_TEST_FILTER"));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(device_info_is_sane),
      cmocka_unit_test(missing_driver_is_reported),
      cmocka_unit_test(record_sets_realise_clean),
      cmocka_unit_test(models_realise_clean),
      cmocka_unit_test(models_realise_clean_fp16),
      cmocka_unit_test(broken_plan_is_caught_and_named),
      cmocka_unit_test(shared_image_regions_use_the_object_pitch),
      cmocka_unit_test(odd_sizes_and_unwritten_reads),
      cmocka_unit_test(misaligned_offsets_are_refused),
      cmocka_unit_test(oversized_allocations_fail_cleanly),
      cmocka_unit_test(device_alloc_failures_roll_back),
      cmocka_unit_test(host_alloc_failures_roll_back),
  };
  return cmocka_run_group_tests_name("opencl", tests, suite_setup, suite_teardown);
}
