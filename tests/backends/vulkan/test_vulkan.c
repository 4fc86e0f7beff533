#define _GNU_SOURCE /* RTLD_NODELETE */
/* The Vulkan backend on a real driver (lavapipe on CI), with the validation layer and
 * synchronization validation on: device description, realising the best plans of every public
 * model in every storage, mode and policy with on-device checks in order and out of order (the
 * scheduler's waits as events), buffers and images mixed in one arena, a broken plan caught
 * and named, a dropped wait caught, and rollback of every device object creation of a full
 * realisation. Any validation message fails a test unless the test provokes it on purpose.
 * TANGRAM_TEST_QUICK=1 (the sanitizer and valgrind runs) takes half of the model sweeps and of
 * the driver-call walks, in turn; the normal build runs them all.
 *
 * Outside CI a machine without a Vulkan device skips these tests loudly; under CI (CI=true) a
 * missing device fails them. */
#include "support/tg_test.h"
#include "support/tg_vulkan_leaks.h"
#include "support/tg_backend_cases.h"
#include "support/tg_models.h"

#include <dlfcn.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend_internal.h"
#include "tangram/backend.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/schedule.h"
#ifdef TANGRAM_TEST_HAVE_VULKAN
#include "backends/vulkan/vulkan_internal.h"
#include "tangram/vulkan.h"
#endif

extern char **environ;

typedef struct suite {
  int have_device;
  tg_device_info info;
} suite;

static char g_self[1024];

/* ------------------------------------------------------------------------------------------ */
/* Helpers. */

static tg_status open_vulkan(const tg_device_options *base, const tg_allocator *alloc,
                             tg_device **out, tg_error_info *err) {
  tg_device_options opt = base ? *base : (tg_device_options){0};
  opt.backend = TG_BACKEND_VULKAN;
  opt.validation = 1;
  return tg_device_open(&opt, alloc, out, NULL, NULL, err);
}

static const char *first_message(tg_device *d) {
#ifdef TANGRAM_TEST_HAVE_VULKAN
  return tg__vulkan_first_message(tg__device_impl(d));
#else
  (void)d;
  return "";
#endif
}

/* Close a device, failing on anything the validation layer says while the VkDevice goes away
 * (objects leaked) or before. */
static void close_clean(tg_device *d) {
#ifdef TANGRAM_TEST_HAVE_VULKAN
  uint64_t messages = tg__vulkan_teardown_device(tg__device_impl(d));
#else
  uint64_t messages = tg_device_get_validation_messages(d);
#endif
  const char *first = first_message(d);
  char id[160];
  snprintf(id, sizeof id, "%s", first);
  tg_device_close(d);
  if (messages) fail_msg("%llu validation message(s), the first: %s", (unsigned long long)messages, id);
}

static void assert_no_messages(tg_device *d, const char *what) {
  uint64_t n = tg_device_get_validation_messages(d);
  if (n) fail_msg("%s: %llu validation message(s), the first: %s", what, (unsigned long long)n,
                  first_message(d));
}

typedef struct case_result {
  uint64_t allocations, bytes, corrupted, ooo_corrupted, checked_bytes;
  size_t reuse_edges, records, fallback_records;
  double realize_ms, check_ms, ooo_ms;
} case_result;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Realise a plan of `set` (records `planned` of the plan: the set itself, or its arena records)
 * and check it in order and out of order with the scheduler's waits. */
static void realise_and_check(tg_device *d, const tg_test_model *m, const tg_record_set *set,
                              const tg_record_set *planned, const uint32_t *tensor_of,
                              const tg_tensor_resource *res, tg_precision precision,
                              const tg_plan *plan, int serial, case_result *out) {
  tg_error_info err = {{0}};
  tg_realize_desc desc = {plan, planned->records, planned->count, planned->dims, res, precision, 0};
  tg_realization *z = NULL;
  double t0 = now_ms();
  tg_status st = tg_realization_create(d, &desc, NULL, &z, &err);
  out->realize_ms += now_ms() - t0;
  if (st != TG_OK) fail_msg("%s: realize: %s", m->name, err.message);
  const tg_realization_stats stats = tg_test_realization_counts(z, plan, set->count);
  assert_int_equal(stats.allocated_bytes, tg_test_expected_bytes(plan, planned, precision));
  for (size_t r = 0; r < set->count; ++r) {
    tg_tensor_handle h;
    assert_int_equal(tg_realization_get_tensor(z, r, &h), TG_OK);
    if (res[r].bytes > 0) assert_true(h.native != 0 && h.memory != 0);
    if (plan->mode == TG_MODE_OFFSETS) assert_int_equal(h.offset, plan->offset_of[r]);
  }
  out->allocations += stats.allocations;
  out->bytes += stats.allocated_bytes;

  uint64_t *mism = calloc(set->count + 1, sizeof *mism);
  assert_non_null(mism);
  tg_check_desc cd = {m->model->graph, tensor_of, 0, 0, NULL, NULL};
  tg_check_result in_order = {0, mism, 0};
  t0 = now_ms();
  st = tg_realization_check(z, &cd, &in_order, &err);
  out->check_ms += now_ms() - t0;
  if (st != TG_OK) fail_msg("%s: check: %s", m->name, err.message);
  for (size_t r = 0; r < set->count; ++r)
    if (mism[r]) print_error("%s: record %zu (%s) corrupted: %llu mismatches\n", m->name, r,
                             tg_test_record_name(set, r), (unsigned long long)mism[r]);
  out->corrupted += in_order.corrupted_records;
  out->checked_bytes += in_order.checked_bytes;
  assert_int_equal(in_order.corrupted_records, 0);
  assert_true(in_order.checked_bytes > 0);
  assert_no_messages(d, m->name);

  /* Out of order: events carry exactly the scheduler's waits (graph and reuse edges). */
  tg_waits *w = NULL;
  st = tg_schedule_compute_waits(m->schedule, planned->records, tensor_of, set->count, plan, NULL,
                                 &w, &err);
  if (st != TG_OK) fail_msg("%s: waits: %s", m->name, err.message);
  out->reuse_edges += w->reuse_edge_count;
  if (!serial) assert_int_equal(w->reuse_edge_count, 0);
  tg_test_op_waits ow;
  tg_test_op_waits_build(w, 1, &ow);
  tg_check_desc od = {m->model->graph, tensor_of, 1, ow.op_count, ow.counts, ow.lists};
  tg_check_result ooo = {0, mism, 0};
  memset(mism, 0, (set->count + 1) * sizeof *mism);
  t0 = now_ms();
  st = tg_realization_check(z, &od, &ooo, &err);
  out->ooo_ms += now_ms() - t0;
  if (st != TG_OK) fail_msg("%s: out-of-order check: %s", m->name, err.message);
  out->ooo_corrupted += ooo.corrupted_records;
  assert_int_equal(ooo.corrupted_records, 0);
  assert_int_equal(ooo.checked_bytes, in_order.checked_bytes);
  assert_no_messages(d, m->name);
  tg_test_op_waits_free(&ow);
  tg_waits_destroy(w);
  free(mism);
  tg_realization_destroy(z);
  assert_int_equal(tg_test_vulkan_live(d), 0);
}

/* The records of a model in `storage`, and one realisation per set: the primary records, and
 * the buffers of tensors that did not fit the texture storage (their own plan in objects mode;
 * in offsets mode the same arena as the images). */
static void run_case(tg_device *d, const tg_test_model *m, tg_storage storage, tg_mode mode,
                     tg_policy policy, tg_precision precision, case_result *out) {
  memset(out, 0, sizeof *out);
  const tg_device_info *info = tg_device_get_info(d);
  tg_model_records *mr = tg_test_model_records(m, storage, precision, &info->limits);
  const tg_record_set *set = mr->records;
  out->records = set->count;
  out->fallback_records = mr->fallback->count;
  tg_tensor_resource *res = tg_test_resources_for(set, storage, precision);
  const uint32_t *tensor_of = mr->tensor_of;
  tg_record_set *all = NULL;
  uint32_t *all_tensor_of = NULL;
  if (mode == TG_MODE_OFFSETS && mr->fallback->count) {
    /* Buffers and images in one arena: append the fallback buffers. */
    size_t n = set->count + mr->fallback->count;
    assert_int_equal(tg_record_set_create(set->dims, n, NULL, &all), TG_OK);
    all_tensor_of = calloc(n, sizeof *all_tensor_of);
    res = realloc(res, n * sizeof *res);
    assert_true(all_tensor_of && res);
    for (size_t r = 0; r < n; ++r) {
      int primary = r < set->count;
      const tg_usage_record *src = primary ? &set->records[r] : &mr->fallback->records[r - set->count];
      all->records[r] = *src;
      all_tensor_of[r] = primary ? mr->tensor_of[r] : mr->fallback_tensor_of[r - set->count];
      if (!primary) res[r] = (tg_tensor_resource){TG_STORAGE_BUFFER, {src->size.w, 1, 1}, src->size.w};
    }
    set = all;
    tensor_of = all_tensor_of;
  }
  tg_policy_relation *rel = NULL;
  assert_int_equal(tg_policy_relation_create(m->schedule, policy, tensor_of, set->count, NULL, &rel),
                   TG_OK);
  tg_record_set *arena = NULL;
  tg_plan *plan = tg_test_plan_for_device(d, set, res, precision, mode, tg_policy_relation_get(rel), 0, &arena);
  realise_and_check(d, m, set, arena ? arena : set, tensor_of, res, precision, plan,
                    policy == TG_POLICY_SERIAL, out);
  tg_plan_destroy(plan);
  tg_record_set_destroy(arena);
  tg_policy_relation_destroy(rel);
  if (mode == TG_MODE_OBJECTS && mr->fallback->count) {
    tg_tensor_resource *fres = tg_test_resources_for(mr->fallback, TG_STORAGE_BUFFER, precision);
    assert_int_equal(tg_policy_relation_create(m->schedule, policy, mr->fallback_tensor_of,
                                               mr->fallback->count, NULL, &rel),
                     TG_OK);
    plan = tg_test_plan_for_device(d, mr->fallback, fres, precision, mode, tg_policy_relation_get(rel), 0, &arena);
    realise_and_check(d, m, mr->fallback, mr->fallback, mr->fallback_tensor_of, fres, precision,
                      plan, policy == TG_POLICY_SERIAL, out);
    tg_plan_destroy(plan);
    tg_policy_relation_destroy(rel);
    free(fres);
  }
  free(res);
  free(all_tensor_of);
  tg_record_set_destroy(all);
  tg_model_records_destroy(mr);
}

/* ------------------------------------------------------------------------------------------ */
/* Setup. */

static int suite_setup(void **state) {
  suite *s = calloc(1, sizeof *s);
  if (s == NULL) return -1;
  tg_error_info err = {{0}};
  tg_device *d = NULL;
  tg_status st = open_vulkan(NULL, NULL, &d, &err);
  if (st != TG_OK) {
    if (tg_test_in_ci()) {
      fprintf(stderr, "FAILURE: no usable Vulkan device (with validation layers) under CI: %s (%s)\n",
              err.message, tg_status_name(st));
      free(s);
      return -1;
    }
    fprintf(stderr,
            "\n*** SKIPPING the Vulkan tests: %s (%s). Install a Vulkan driver and the "
            "validation layers (scripts/setup.sh installs lavapipe and vulkan-validationlayers) "
            "to run them. ***\n\n",
            err.message, tg_status_name(st));
  } else {
    s->have_device = 1;
    s->info = *tg_device_get_info(d);
    tg_device_close(d);
  }
  *state = s;
  return 0;
}

static int suite_teardown(void **state) {
  free(*state);
  return 0;
}

#define REQUIRE_DEVICE(s)        \
  do {                           \
    if (!(s)->have_device) skip(); \
  } while (0)

/* Each test has its own device, so that what one test leaves behind when it fails cannot
 * fail the next, and so that closing it checks the layer's leak report. */
static tg_device *test_device(void) {
  tg_device *d = NULL;
  tg_error_info err = {{0}};
  if (open_vulkan(NULL, NULL, &d, &err) != TG_OK) fail_msg("open: %s", err.message);
  return d;
}

/* ------------------------------------------------------------------------------------------ */
/* Tests. */

static void device_info_is_sane(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  tg_device *dev = test_device();
  const tg_device_info *i = tg_device_get_info(dev);
  print_message("device: %s (%s), %s\n", i->name, i->kind, i->driver);
  print_message("budget %llu, max allocation %llu, buffer alignment %llu, image alignment %llu, "
                "granularity %llu\n",
                (unsigned long long)i->memory_budget, (unsigned long long)i->max_allocation,
                (unsigned long long)i->buffer_alignment, (unsigned long long)i->image_alignment,
                (unsigned long long)i->buffer_image_granularity);
  print_message("images %d, fp16 images %d, arena images %d, out of order %d\n", i->images,
                i->fp16_images, i->arena_images, i->out_of_order);
  print_message("limits: buffer %llu, image buffer %llu texels, 2D %llux%llu, 3D %llux%llux%llu, "
                "%llu layers\n",
                (unsigned long long)i->limits.max_buffer_bytes,
                (unsigned long long)i->limits.max_image_buffer_texels,
                (unsigned long long)i->limits.max_texture_2d_width,
                (unsigned long long)i->limits.max_texture_2d_height,
                (unsigned long long)i->limits.max_texture_3d_width,
                (unsigned long long)i->limits.max_texture_3d_height,
                (unsigned long long)i->limits.max_texture_3d_depth,
                (unsigned long long)i->limits.max_texture_array_layers);
  assert_int_equal(i->backend, TG_BACKEND_VULKAN);
  assert_true(i->name[0] != '\0');
  assert_true(strcmp(i->kind, "gpu") == 0 || strcmp(i->kind, "integrated-gpu") == 0 ||
              strcmp(i->kind, "cpu") == 0 || strcmp(i->kind, "other") == 0);
  assert_non_null(strstr(i->driver, "Vulkan "));
  assert_true(i->memory_budget > 0);
  assert_true(i->max_allocation > 0);
  /* Vulkan's guaranteed minimums. */
  assert_true(i->limits.max_buffer_bytes >= (1u << 27));
  assert_true(i->limits.max_texture_2d_width >= 4096 && i->limits.max_texture_2d_height >= 4096);
  assert_true(i->limits.max_texture_3d_width >= 256 && i->limits.max_texture_3d_depth >= 256);
  assert_true(i->limits.max_texture_array_layers >= 256);
  assert_true(i->buffer_alignment >= 1 && (i->buffer_alignment & (i->buffer_alignment - 1)) == 0);
  assert_true(i->image_alignment >= 1 && (i->image_alignment & (i->image_alignment - 1)) == 0);
  assert_true(i->buffer_image_granularity >= 1);
  assert_true(i->images);
  assert_int_equal(i->arena_images, 1);
  assert_int_equal(i->out_of_order, 1);
  assert_int_equal(i->image2d_from_buffer, 0);
  assert_int_equal(tg_device_get_native_error(dev), 0);
  assert_no_messages(dev, "open");

  /* Requirements come from the driver: at least the bytes, aligned, linear only for buffers. */
  tg_tensor_resource buf = {TG_STORAGE_BUFFER, {1001, 1, 1}, 1001};
  tg_resource_requirements req;
  assert_int_equal(tg_device_compute_requirements(dev, &buf, TG_PRECISION_FP32, &req), TG_OK);
  assert_true(req.size >= 1004 && req.alignment >= 1 && req.alignment <= i->buffer_alignment);
  assert_int_equal(req.linear, 1);
  static const tg_storage images[] = {TG_STORAGE_TEXTURE_2D, TG_STORAGE_TEXTURE_ARRAY,
                                      TG_STORAGE_TEXTURE_3D};
  for (int p = 0; p < 2; ++p)
    for (size_t k = 0; k < 3; ++k) {
      tg_extent e = {5, 7, images[k] == TG_STORAGE_TEXTURE_2D ? 1 : 3};
      uint64_t tb = p ? 8 : 16;
      tg_tensor_resource img = {images[k], e, e.w * e.h * e.d * tb};
      assert_int_equal(tg_device_compute_requirements(dev, &img, (tg_precision)p, &req), TG_OK);
      assert_true(req.size >= img.bytes);
      assert_true(req.alignment >= 1 && req.alignment <= i->image_alignment);
      assert_int_equal(req.linear, 0);
    }
  /* An empty tensor needs nothing. */
  tg_tensor_resource empty = {TG_STORAGE_BUFFER, {0, 1, 1}, 0};
  assert_int_equal(tg_device_compute_requirements(dev, &empty, TG_PRECISION_FP32, &req), TG_OK);
  assert_int_equal(req.size, 0);
  /* Beyond the device's limits. */
  tg_tensor_resource huge = {TG_STORAGE_TEXTURE_2D, {i->limits.max_texture_2d_width + 1, 1, 1}, 0};
  assert_int_equal(tg_device_compute_requirements(dev, &huge, TG_PRECISION_FP32, &req), TG_ERROR_LIMIT);
  assert_int_equal(tg_test_vulkan_live(dev), 0);
  assert_no_messages(dev, "requirements");

  /* Selection by index and by name; a device that does not exist. */
  tg_device_options opt = {0};
  tg_device *d = NULL;
  tg_error_info err = {{0}};
  opt.device = "0";
  assert_int_equal(open_vulkan(&opt, NULL, &d, &err), TG_OK);
  close_clean(d);
  char part[8];
  snprintf(part, sizeof part, "%.4s", i->name);
  opt.device = part;
  assert_int_equal(open_vulkan(&opt, NULL, &d, &err), TG_OK);
  assert_string_equal(tg_device_get_info(d)->name, i->name);
  close_clean(d);
  opt.device = "no such device anywhere";
  assert_int_equal(open_vulkan(&opt, NULL, &d, &err), TG_ERROR_NO_DEVICE);
  assert_null(d);
  assert_non_null(strstr(err.message, "no such device anywhere"));
  opt.device = "999";
  assert_int_equal(open_vulkan(&opt, NULL, &d, &err), TG_ERROR_NO_DEVICE);
  /* Without validation, the same device. */
  tg_device_options plain = {0};
  plain.backend = TG_BACKEND_VULKAN;
  assert_int_equal(tg_device_open(&plain, NULL, &d, NULL, NULL, &err), TG_OK);
  assert_string_equal(tg_device_get_info(d)->name, i->name);
  tg_device_close(d);
  close_clean(dev);
}

static void missing_driver_is_reported(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  char out[4096];
  /* A loader with no driver to load. */
  char *no_driver[] = {(char *)"VK_ICD_FILENAMES=/nonexistent/icd.json",
                       (char *)"VK_DRIVER_FILES=/nonexistent/icd.json",
                       (char *)"TANGRAM_BACKEND=", (char *)"TANGRAM_VULKAN_VALIDATION=", NULL};
  tg_test_probe(g_self, "--probe", "vulkan", no_driver, out, sizeof out);
  print_message("%s", out);
  assert_non_null(strstr(out, "status=TG_ERROR_NO_DEVICE"));
  assert_non_null(strstr(out, "reason="));
  assert_non_null(strstr(out, "driver"));
  /* `auto` passes over Vulkan, says why, and opens something else. */
  tg_test_probe(g_self, "--probe", "auto", no_driver, out, sizeof out);
  print_message("%s", out);
  assert_non_null(strstr(out, "status=TG_OK"));
  assert_non_null(strstr(out, "skipped vulkan TG_ERROR_NO_DEVICE"));
  assert_null(strstr(out, "chose vulkan"));
}

/* Graph-less checks of the shipped record sets: written at first_task, read at last_task. */
static void record_sets_realise_clean(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  tg_device *dev = test_device();
  static const char *const kinds[] = {"buffer", "tex2", "tex3"};
  for (size_t m = 0; m < TG_TEST_GPU_MODEL_COUNT; ++m)
    for (size_t k = 0; k < 3; ++k) {
      char file[256], path[1024];
      snprintf(file, sizeof file, "records/%s.%s.csv", tg_test_gpu_models[m], kinds[k]);
      tg_record_set *set = NULL;
      tg_error_info err = {{0}};
      if (tg_records_read_csv(tg_test_data_path(path, sizeof path, file), NULL, &set, &err) != TG_OK)
        fail_msg("%s: %s", file, err.message);
      tg_storage storages[2] = {k == 0   ? TG_STORAGE_BUFFER
                                : k == 1 ? TG_STORAGE_TEXTURE_2D
                                         : TG_STORAGE_TEXTURE_3D,
                                k == 2 ? TG_STORAGE_TEXTURE_ARRAY : TG_STORAGE_COUNT};
      for (int si = 0; si < 2 && storages[si] != TG_STORAGE_COUNT; ++si)
        for (int mode = 0; mode < 2; ++mode)
          for (int p = 0; p < 2; ++p) {
            tg_precision prec = (tg_precision)p;
            tg_tensor_resource *res = tg_test_resources_for(set, storages[si], prec);
            tg_record_set *arena = NULL;
            tg_plan *plan = tg_test_plan_for_device(dev, set, res, prec, (tg_mode)mode, NULL, 0, &arena);
            const tg_record_set *planned = arena ? arena : set;
            tg_realize_desc desc = {plan, planned->records, planned->count, planned->dims, res, prec, 0};
            tg_realization *z = NULL;
            if (tg_realization_create(dev, &desc, NULL, &z, &err) != TG_OK)
              fail_msg("%s: realize: %s", file, err.message);
            tg_realization_stats stats;
            tg_realization_get_stats(z, &stats);
            assert_int_equal(stats.allocations, plan->object_count);
            assert_int_equal(stats.allocated_bytes, tg_test_expected_bytes(plan, planned, prec));
            tg_check_result r = {0, NULL, 0};
            if (tg_realization_check(z, NULL, &r, &err) != TG_OK) fail_msg("%s: check: %s", file, err.message);
            assert_int_equal(r.corrupted_records, 0);
            assert_true(r.checked_bytes > 0);
            tg_realization_destroy(z);
            assert_int_equal(tg_test_vulkan_live(dev), 0);
            assert_no_messages(dev, file);
            tg_plan_destroy(plan);
            tg_record_set_destroy(arena);
            free(res);
          }
      tg_record_set_destroy(set);
    }
  close_clean(dev);
}

/* Every public model x storage x mode x policy, fp32: clean in order and out of order. */
static void models_realise_clean(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  tg_device *dev = test_device();
  static const tg_policy policies[] = {TG_POLICY_SERIAL, TG_POLICY_PARALLEL_SAFE};
  print_message("%-27s %-13s %-7s %-13s %4s %5s %10s %4s %4s %5s %4s %8s %8s %8s\n", "model",
                "storage", "mode", "policy", "recs", "alloc", "bytes", "corr", "ooo", "reuse",
                "msgs", "real-ms", "chk-ms", "ooo-ms");
  size_t cases = 0;
  uint64_t texture_bytes[2][2] = {{0, 0}, {0, 0}}; /* [policy][mode] over every texture case */
  for (size_t m = 0; m < TG_TEST_GPU_MODEL_COUNT; ++m) {
    tg_test_model md;
    if (!tg_test_model_open(tg_test_gpu_models[m], &md)) continue;
    for (size_t si = 0; si < TG_TEST_GPU_STORAGE_COUNT; ++si) {
      uint64_t bytes[2][2] = {{0, 0}, {0, 0}};
      for (int mode = 0; mode < 2; ++mode)
        for (size_t pi = 0; pi < 2; ++pi) {
          /* TANGRAM_TEST_QUICK (the sanitizer run): one policy per model, storage and mode, in
           * turn; the normal build runs both. */
          if (tg_test_quick() && pi != (m + si + (size_t)mode) % 2) continue;
          case_result r;
          run_case(dev, &md, tg_test_gpu_storages[si], (tg_mode)mode, policies[pi], TG_PRECISION_FP32, &r);
          print_message("%-27s %-13s %-7s %-13s %4zu %5llu %10llu %4llu %4llu %5zu %4llu %8.1f %8.1f %8.1f%s\n",
                        tg_test_gpu_models[m], tg_storage_name(tg_test_gpu_storages[si]), tg_mode_name((tg_mode)mode),
                        tg_policy_name(policies[pi]), r.records, (unsigned long long)r.allocations,
                        (unsigned long long)r.bytes, (unsigned long long)r.corrupted,
                        (unsigned long long)r.ooo_corrupted, r.reuse_edges,
                        (unsigned long long)tg_device_get_validation_messages(dev),
                        r.realize_ms, r.check_ms, r.ooo_ms,
                        r.fallback_records ? " (+fallback buffers)" : "");
          bytes[pi][mode] = r.bytes;
          if (si > 0) texture_bytes[pi][mode] += r.bytes;
          ++cases;
        }
      if (si > 0)
        for (size_t pi = 0; pi < 2; ++pi)
          print_message("  %s %s %s: texture arena %llu bytes vs texture objects %llu bytes (%+.1f%%)\n",
                        tg_test_gpu_models[m], tg_storage_name(tg_test_gpu_storages[si]), tg_policy_name(policies[pi]),
                        (unsigned long long)bytes[pi][1], (unsigned long long)bytes[pi][0],
                        bytes[pi][0] ? 100.0 * ((double)bytes[pi][1] - (double)bytes[pi][0]) /
                                           (double)bytes[pi][0]
                                     : 0.0);
    }
    tg_test_model_close(&md);
  }
  for (size_t pi = 0; pi < 2; ++pi)
    print_message("all textures, %s: arena %llu bytes vs objects %llu bytes\n",
                  tg_policy_name(policies[pi]), (unsigned long long)texture_bytes[pi][1],
                  (unsigned long long)texture_bytes[pi][0]);
  print_message("%zu cases, %llu validation messages\n", cases,
                (unsigned long long)tg_device_get_validation_messages(dev));
  assert_no_messages(dev, "models");
  close_clean(dev);
}

/* Half-float images of every model in every texture storage and mode. */
static void models_realise_clean_fp16(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  if (!s->info.fp16_images) skip();
  tg_device *dev = test_device();
  for (size_t m = 0; m < TG_TEST_GPU_MODEL_COUNT; ++m) {
    tg_test_model md;
    if (!tg_test_model_open(tg_test_gpu_models[m], &md)) continue;
    for (size_t si = 1; si < TG_TEST_GPU_STORAGE_COUNT; ++si)
      for (int mode = 0; mode < 2; ++mode) {
        if (tg_test_quick() && (size_t)mode != (m + si) % 2) continue; /* one mode each, in turn */
        case_result r;
        run_case(dev, &md, tg_test_gpu_storages[si], (tg_mode)mode, TG_POLICY_SERIAL, TG_PRECISION_FP16, &r);
        print_message("%-27s %-13s %-7s fp16: %llu allocations, %llu bytes, %llu corrupted\n",
                      tg_test_gpu_models[m], tg_storage_name(tg_test_gpu_storages[si]), tg_mode_name((tg_mode)mode),
                      (unsigned long long)r.allocations, (unsigned long long)r.bytes,
                      (unsigned long long)r.corrupted);
      }
    tg_test_model_close(&md);
  }
  assert_no_messages(dev, "fp16");
  close_clean(dev);
}

/* Buffers and images of every kind in one arena: each tensor of a model becomes, in turn, a
 * buffer, a 2D texture, a 2D array or a 3D texture; arena records carry each one's real size
 * and alignment, and bufferImageGranularity between the linear and the optimal ones. */
static void mixed_arena_realises_clean(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  tg_device *dev = test_device();
  for (size_t m = 0; m < TG_TEST_GPU_MODEL_COUNT; ++m) {
    tg_test_model md;
    if (!tg_test_model_open(tg_test_gpu_models[m], &md)) continue;
    tg_model_records *mr = tg_test_model_records(&md, TG_STORAGE_BUFFER, TG_PRECISION_FP32, &s->info.limits);
    const tg_record_set *set = mr->records;
    tg_tensor_resource *res = calloc(set->count + 1, sizeof *res);
    assert_non_null(res);
    size_t kinds[4] = {0, 0, 0, 0};
    for (size_t r = 0; r < set->count; ++r) {
      const tg_tensor *t = &md.model->graph->tensors[mr->tensor_of[r]];
      tg_bhwc shape;
      assert_int_equal(tg_shape_to_bhwc(t->shape, t->rank, &shape), TG_OK);
      size_t k = r % 4;
      tg_extent e;
      if (k == 0 || tg_storage_check_fit(shape, tg_test_gpu_storages[k], TG_PRECISION_FP32, &s->info.limits, &e,
                                         NULL, 0) != TG_OK) {
        res[r] = (tg_tensor_resource){TG_STORAGE_BUFFER, set->records[r].size, set->records[r].size.w};
        k = 0;
      } else {
        res[r] = (tg_tensor_resource){tg_test_gpu_storages[k], e, e.w * e.h * e.d * 16};
      }
      kinds[k]++;
    }
    tg_record_set *arena = NULL;
    tg_plan *plan = tg_test_plan_for_device(dev, set, res, TG_PRECISION_FP32, TG_MODE_OFFSETS, NULL, 0, &arena);
    case_result r;
    memset(&r, 0, sizeof r);
    realise_and_check(dev, &md, set, arena, mr->tensor_of, res, TG_PRECISION_FP32, plan, 1, &r);
    print_message("%-27s mixed arena: %zu buffers, %zu 2D, %zu arrays, %zu 3D in %llu bytes, "
                  "%zu reuse edges, clean\n",
                  tg_test_gpu_models[m], kinds[0], kinds[1], kinds[2], kinds[3], (unsigned long long)r.bytes,
                  r.reuse_edges);
    tg_plan_destroy(plan);
    tg_record_set_destroy(arena);
    free(res);
    tg_model_records_destroy(mr);
    tg_test_model_close(&md);
  }
  assert_no_messages(dev, "mixed arena");
  close_clean(dev);
}

/* Two tensors alive at once put in the same memory (bypassing the validator): the check finds
 * the victim and names it, in every storage and mode. */
static void broken_plan_is_caught_and_named(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  tg_test_model md;
  if (!tg_test_model_open("face_detection_short_range", &md)) skip();
  tg_device *d = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(open_vulkan(NULL, NULL, &d, &err), TG_OK);
  for (size_t si = 0; si < TG_TEST_GPU_STORAGE_COUNT; ++si)
    for (int mode = 0; mode < 2; ++mode) {
      tg_storage storage = tg_test_gpu_storages[si];
      tg_model_records *mr = tg_test_model_records(&md, storage, TG_PRECISION_FP32, &s->info.limits);
      const tg_record_set *set = mr->records;
      tg_tensor_resource *res = tg_test_resources_for(set, storage, TG_PRECISION_FP32);
      tg_record_set *arena = NULL;
      tg_plan *plan = tg_test_plan_for_device(d, set, res, TG_PRECISION_FP32, (tg_mode)mode, NULL, 0, &arena);
      const tg_record_set *planned = arena ? arena : set;
      size_t victim, intruder;
      tg_test_break_plan(plan, set, arena, &victim, &intruder);
      tg_realize_desc desc = {plan, planned->records, planned->count, planned->dims, res,
                              TG_PRECISION_FP32, 0};
      tg_realization *z = NULL;
      assert_int_equal(tg_realization_create(d, &desc, NULL, &z, &err), TG_ERROR_INVALID_PLAN);
      desc.skip_validation = 1;
      tg_status st = tg_realization_create(d, &desc, NULL, &z, &err);
      if (st == TG_ERROR_INVALID_PLAN && mode == TG_MODE_OBJECTS) {
        /* The grown object is smaller than the intruder's own image needs in some dimension
         * order: the backend refuses to bind it rather than write outside it. */
        print_message("%s %s: intruder refused at bind: %s\n", tg_storage_name(storage),
                      tg_mode_name((tg_mode)mode), err.message);
      } else {
        if (st != TG_OK) fail_msg("realize: %s", err.message);
        uint64_t *mism = calloc(set->count, sizeof *mism);
        assert_non_null(mism);
        uint64_t before = tg_device_get_validation_messages(d);
        tg_check_desc cd = {md.model->graph, mr->tensor_of, 0, 0, NULL, NULL};
        tg_check_result r = {0, mism, 0};
        assert_int_equal(tg_realization_check(z, &cd, &r, &err), TG_OK);
        assert_true(r.corrupted_records >= 1);
        assert_true(mism[victim] > 0);
        /* The intruder's producer may also read the victim: that op then races with itself
         * on aliased memory, which synchronization validation reports (another buffer or
         * image bound to the same bytes). */
        print_message("%s %s: record %zu (%s) overwritten by record %zu (%s): %llu mismatches, "
                      "%llu record(s) corrupted, %llu validation message(s)\n",
                      tg_storage_name(storage), tg_mode_name((tg_mode)mode), victim,
                      tg_test_record_name(set, victim), intruder, tg_test_record_name(set, intruder),
                      (unsigned long long)mism[victim], (unsigned long long)r.corrupted_records,
                      (unsigned long long)(tg_device_get_validation_messages(d) - before));
        free(mism);
        tg_realization_destroy(z);
      }
      assert_int_equal(tg_test_vulkan_live(d), 0);
      tg_plan_destroy(plan);
      tg_record_set_destroy(arena);
      free(res);
      tg_model_records_destroy(mr);
    }
  tg_device_close(d);
  tg_test_model_close(&md);
}

/* Out of order with one needed wait dropped. A dropped graph edge reaches the device, where
 * the op reads what its producer writes with nothing ordering the two: synchronization
 * validation (or the check) must say so. A dropped reuse edge is refused up front by the
 * generic layer, naming the records. The op is chosen so that nothing else orders it after the
 * dropped one: Vulkan orders everything recorded after a wait after the waited work, so the
 * dropped wait must be the latest of the op's waits and no op in between may wait for it or
 * later. */
static void dropped_wait_is_caught(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  tg_test_model md;
  if (!tg_test_model_open("selfie_segmentation", &md)) skip();
  static const tg_storage storages[] = {TG_STORAGE_BUFFER, TG_STORAGE_TEXTURE_2D};
  for (size_t si = 0; si < 2; ++si)
    for (int kind = 0; kind < 2; ++kind) { /* 0: a graph edge, 1: a reuse edge */
      tg_device *d = test_device();
      tg_error_info err = {{0}};
      tg_model_records *mr = tg_test_model_records(&md, storages[si], TG_PRECISION_FP32, &s->info.limits);
      const tg_record_set *set = mr->records;
      tg_tensor_resource *res = tg_test_resources_for(set, storages[si], TG_PRECISION_FP32);
      /* A graph edge is dropped from a plan without any reuse (naive: the dropped edge then
       * orders nothing else, and the device sees the race); a reuse edge from the best serial
       * plan. */
      tg_plan *plan = NULL;
      if (kind == 0) {
        tg_plan_options po = {0};
        po.strategy = TG_STRATEGY_NAIVE;
        assert_int_equal(tg_plan_compute(set->records, set->count, set->dims, &po, NULL, &plan), TG_OK);
      } else {
        tg_record_set *arena = NULL;
        plan = tg_test_plan_for_device(d, set, res, TG_PRECISION_FP32, TG_MODE_OBJECTS, NULL, 0, &arena);
      }
      tg_realize_desc desc = {plan, set->records, set->count, set->dims, res, TG_PRECISION_FP32, 0};
      tg_realization *z = NULL;
      assert_int_equal(tg_realization_create(d, &desc, NULL, &z, &err), TG_OK);
      tg_waits *w = NULL;
      assert_int_equal(tg_schedule_compute_waits(md.schedule, set->records, mr->tensor_of, set->count,
                                                 plan, NULL, &w, &err),
                       TG_OK);
      tg_test_op_waits ow;
      tg_test_op_waits_build(w, 1, &ow);
      /* latest[o]: the latest op that op o waits for, or -1. */
      int64_t *latest = calloc(ow.op_count + 1, sizeof *latest);
      assert_non_null(latest);
      for (size_t o = 0; o < ow.op_count; ++o) {
        latest[o] = -1;
        for (size_t i = 0; i < ow.counts[o]; ++i)
          if ((int64_t)ow.lists[o][i] > latest[o]) latest[o] = ow.lists[o][i];
      }
      /* Candidates in op order; a drop the generic layer refuses (the dropped edge was also
       * what ordered some memory reuse) is reported, and for a graph edge the next candidate
       * is tried until one reaches the device. */
      int reached = 0, refused = 0;
      for (size_t o = 0; o < ow.op_count && !reached && !(kind == 1 && refused); ++o) {
        if (latest[o] < 0) continue;
        uint32_t after = (uint32_t)latest[o];
        size_t at = 0, copies = 0;
        for (size_t i = 0; i < ow.counts[o]; ++i)
          if (ow.lists[o][i] == after) {
            at = i;
            copies++;
          }
        int graph_edge = 0;
        for (size_t i = w->after_start[o]; i < w->after_start[o + 1]; ++i) graph_edge |= w->after[i] == after;
        if (copies != 1 || graph_edge != (kind == 0)) continue;
        int ordered_otherwise = 0;
        for (size_t m = after + 1; m < o; ++m) ordered_otherwise |= latest[m] >= (int64_t)after;
        if (ordered_otherwise) continue;
        uint32_t *list = (uint32_t *)ow.lists[o];
        size_t last = ow.counts[o] - 1;
        list[at] = list[last];
        list[last] = after;
        ow.counts[o]--;
        tg_check_desc od = {md.model->graph, mr->tensor_of, 1, ow.op_count, ow.counts, ow.lists};
        tg_check_result r = {0, NULL, 0};
        uint64_t before = tg_device_get_validation_messages(d);
        tg_status st = tg_realization_check(z, &od, &r, &err);
        uint64_t messages = tg_device_get_validation_messages(d) - before;
        ow.counts[o]++;
        list[last] = list[at];
        list[at] = after;
        if (st == TG_ERROR_INVALID_PLAN) {
          print_message("%s: op %zu without its %s wait on op %u: refused up front: %s\n",
                        tg_storage_name(storages[si]), o, kind ? "reuse" : "graph", after, err.message);
          assert_non_null(strstr(err.message, "reuses the memory"));
          refused++;
          continue;
        }
        assert_int_equal(st, TG_OK);
        print_message("%s: op %zu without its %s wait on op %u: %llu validation message(s) "
                      "(first: %s), %llu corrupted\n",
                      tg_storage_name(storages[si]), o, kind ? "reuse" : "graph", after,
                      (unsigned long long)messages, first_message(d),
                      (unsigned long long)r.corrupted_records);
        assert_true(messages > 0 || r.corrupted_records > 0);
        if (messages) assert_non_null(strstr(first_message(d), "SYNC-HAZARD"));
        reached = 1;
      }
      if (kind == 0) assert_true(reached); /* a graph edge the device had to see */
      else if (!reached && !refused)
        print_message("%s: no op whose latest wait is a lone reuse edge\n", tg_storage_name(storages[si]));
      free(latest);
      tg_test_op_waits_free(&ow);
      tg_waits_destroy(w);
      tg_realization_destroy(z);
      assert_int_equal(tg_test_vulkan_live(d), 0);
      tg_plan_destroy(plan);
      free(res);
      tg_model_records_destroy(mr);
      tg_device_close(d); /* it reported hazards on purpose */
    }
  tg_test_model_close(&md);
}

/* Buffers whose size is not a multiple of 4, empty tensors, and a tensor read with nothing
 * ordering it after its write. */
static void odd_sizes_and_unordered_reads(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  tg_usage_record recs[4] = {
      {{13, 1, 1}, 0, 1, 0}, {{0, 1, 1}, 0, 2, 0}, {{7, 1, 1}, 1, 2, 0}, {{1001, 1, 1}, 1, 3, 0}};
  tg_tensor_resource res[4];
  tg_test_buffer_resources(recs, 4, res);
  for (int mode = 0; mode < 2; ++mode) {
    tg_device *d = NULL;
    tg_error_info err = {{0}};
    assert_int_equal(open_vulkan(NULL, NULL, &d, &err), TG_OK);
    tg_record_set set = {1, 4, recs, NULL, *tg_allocator_default()};
    tg_record_set *arena = NULL;
    tg_plan *plan = tg_test_plan_for_device(d, &set, res, TG_PRECISION_FP32, (tg_mode)mode, NULL, 0, &arena);
    const tg_usage_record *planned = arena ? arena->records : recs;
    tg_realize_desc desc = {plan, planned, 4, 1, res, TG_PRECISION_FP32, 0};
    tg_realization *z = NULL;
    assert_int_equal(tg_realization_create(d, &desc, NULL, &z, &err), TG_OK);
    uint64_t mism[4] = {0};
    tg_check_result r = {0, mism, 0};
    assert_int_equal(tg_realization_check(z, NULL, &r, &err), TG_OK);
    assert_int_equal(r.corrupted_records, 0);
    assert_int_equal(r.checked_bytes, 2 * (13 + 0 + 7 + 1001));
    assert_no_messages(d, "odd sizes");
    /* Out of order with ops 2 and 3 waiting for nothing: records 2 and 3 are read with
     * nothing ordering the reads after op 1's writes (a wait in op 2 would order op 3 too:
     * Vulkan orders everything recorded after a wait). */
    static const uint32_t w1[] = {0};
    const uint32_t *lists[4] = {NULL, w1, NULL, NULL};
    uint32_t counts[4] = {0, 1, 0, 0};
    tg_check_desc cd = {NULL, NULL, 1, 4, counts, lists};
    memset(mism, 0, sizeof mism);
    assert_int_equal(tg_realization_check(z, &cd, &r, &err), TG_OK);
    uint64_t messages = tg_device_get_validation_messages(d);
    print_message("%s: unordered reads of records 2 and 3: %llu + %llu mismatches, %llu "
                  "validation message(s) (first: %s)\n",
                  tg_mode_name((tg_mode)mode), (unsigned long long)mism[2],
                  (unsigned long long)mism[3], (unsigned long long)messages, first_message(d));
    assert_true((mism[2] > 0 && mism[3] > 0) || messages >= 2);
    if (messages) assert_non_null(strstr(first_message(d), "SYNC-HAZARD-READ-AFTER-WRITE"));
    assert_int_equal(mism[0] + mism[1], 0);
    /* A wait on an op that has not run yet is refused. */
    static const uint32_t later[] = {3};
    const uint32_t *bad_lists[4] = {NULL, later, NULL, NULL};
    uint32_t bad_counts[4] = {0, 1, 0, 0};
    tg_check_desc bad = {NULL, NULL, 1, 4, bad_counts, bad_lists};
    assert_int_equal(tg_realization_check(z, &bad, &r, &err), TG_ERROR_INVALID_ARGUMENT);
    tg_realization_destroy(z);
    assert_int_equal(tg_test_vulkan_live(d), 0);
    tg_plan_destroy(plan);
    tg_record_set_destroy(arena);
    tg_device_close(d);
  }
}

/* An in-place pair of images: the op reads its input's image and writes its output's, two
 * VkImages on the same memory at the same offset. They are created alike with
 * VK_IMAGE_CREATE_ALIAS_BIT, so the texels written through one are those read through the
 * other, and the check keeps the input's texels when it makes the output usable (no transition
 * from UNDEFINED, which may discard them) and writes the output only after it verified the
 * input: no corruption and no validation message (synchronization validation included), in
 * objects and offsets mode; and the same for a pair of buffers. */
static void in_place_images_alias(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
#ifdef TANGRAM_TEST_HAVE_VULKAN
  /* a (tasks 0-1) is read at task 1, where b (1-2) is written over it. */
  tg_usage_record recs[2] = {{{8, 6, 1}, 0, 1, 0}, {{8, 6, 1}, 1, 2, 0}};
  tg_tensor_resource res[2];
  for (int r = 0; r < 2; ++r) res[r] = (tg_tensor_resource){TG_STORAGE_TEXTURE_2D, recs[r].size, 8 * 6 * 16};
  const tg_in_place_pair pair = {1, 0, 1, 0};
  for (int mode = 0; mode < 2; ++mode) {
    tg_device *d = NULL;
    tg_error_info err = {{0}};
    assert_int_equal(open_vulkan(NULL, NULL, &d, &err), TG_OK);
    if (mode == 1 && !tg_device_get_info(d)->arena_images) {
      tg_device_close(d);
      continue;
    }
    tg_record_set *arena = NULL;
    tg_plan *plan = NULL;
    const tg_usage_record *planned = recs;
    if (mode == 0) {
      assert_int_equal(tg_plan_create(TG_MODE_OBJECTS, 2, 2, 1, NULL, &plan), TG_OK);
      plan->object_sizes[0] = recs[0].size;
      plan->total = 8 * 6;
    } else {
      assert_int_equal(tg_device_compute_arena_records(d, res, recs, 2, TG_PRECISION_FP32, NULL, &arena), TG_OK);
      assert_int_equal(tg_plan_create(TG_MODE_OFFSETS, 1, 2, 0, NULL, &plan), TG_OK);
      plan->total = arena->records[0].size.w;
      planned = arena->records;
    }
    assert_int_equal(tg_plan_set_in_place(plan, &pair, 1), TG_OK);
    tg_test_assert_valid(planned, 2, mode ? 1 : 2, plan, 0, NULL);
    tg_realize_desc desc = {plan, planned, 2, mode ? 1u : 2u, res, TG_PRECISION_FP32, 0};
    tg_realization *z = NULL;
    assert_int_equal(tg_realization_create(d, &desc, NULL, &z, &err), TG_OK);
    tg_vulkan_tensor a, b;
    assert_int_equal(tg_vulkan_get_tensor(z, 0, &a), TG_OK);
    assert_int_equal(tg_vulkan_get_tensor(z, 1, &b), TG_OK);
    assert_true(a.image != VK_NULL_HANDLE && b.image != VK_NULL_HANDLE && a.image != b.image);
    assert_true(a.memory == b.memory && a.offset == b.offset);
    if (!(a.image_flags & b.image_flags & VK_IMAGE_CREATE_ALIAS_BIT))
      fail_msg("%s: the images of an in-place pair lack VK_IMAGE_CREATE_ALIAS_BIT (flags 0x%x, 0x%x)",
               tg_mode_name((tg_mode)mode), (unsigned)a.image_flags, (unsigned)b.image_flags);
    uint64_t mism[2] = {0};
    tg_check_result r = {0, mism, 0};
    assert_int_equal(tg_realization_check(z, NULL, &r, &err), TG_OK);
    assert_int_equal(r.corrupted_records, 0);
    assert_int_equal(r.checked_bytes, 2 * 2 * 8 * 6 * 16);
    assert_no_messages(d, "in-place images");
    tg_realization_destroy(z);
    tg_plan_destroy(plan);
    tg_record_set_destroy(arena);
    close_clean(d);
  }
  /* Buffers: a 768-byte pair in one object. */
  tg_usage_record brecs[2] = {{{768, 1, 1}, 0, 1, 0}, {{768, 1, 1}, 1, 2, 0}};
  tg_tensor_resource bres[2];
  for (int r = 0; r < 2; ++r) bres[r] = (tg_tensor_resource){TG_STORAGE_BUFFER, brecs[r].size, 768};
  tg_device *d = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(open_vulkan(NULL, NULL, &d, &err), TG_OK);
  tg_plan *plan = NULL;
  assert_int_equal(tg_plan_create(TG_MODE_OBJECTS, 1, 2, 1, NULL, &plan), TG_OK);
  plan->object_sizes[0] = brecs[0].size;
  plan->total = 768;
  assert_int_equal(tg_plan_set_in_place(plan, &pair, 1), TG_OK);
  tg_realize_desc desc = {plan, brecs, 2, 1, bres, TG_PRECISION_FP32, 0};
  tg_realization *z = NULL;
  assert_int_equal(tg_realization_create(d, &desc, NULL, &z, &err), TG_OK);
  tg_check_result r = {0, NULL, 0};
  assert_int_equal(tg_realization_check(z, NULL, &r, &err), TG_OK);
  assert_int_equal(r.corrupted_records, 0);
  assert_no_messages(d, "in-place buffers");
  tg_realization_destroy(z);
  tg_plan_destroy(plan);
  close_clean(d);
#else
  (void)s;
#endif
}

/* Offsets that ignore the driver's alignment, or a member larger than its object, are refused
 * when binding with a clear status, and nothing is left behind. */
static void misplaced_resources_are_refused(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  tg_device *dev = test_device();
  tg_resource_requirements req;
  tg_tensor_resource one = {TG_STORAGE_BUFFER, {100, 1, 1}, 100};
  assert_int_equal(tg_device_compute_requirements(dev, &one, TG_PRECISION_FP32, &req), TG_OK);
  if (req.alignment > 4) {
    tg_usage_record recs[2] = {{{100, 1, 1}, 0, 1, 0}, {{100, 1, 1}, 0, 1, 0}};
    tg_plan *plan = NULL;
    assert_int_equal(tg_plan_create(TG_MODE_OFFSETS, 1, 2, 1, NULL, &plan), TG_OK);
    plan->offset_of[0] = 0;
    plan->offset_of[1] = 104; /* past record 0 but not aligned for a VkBuffer */
    plan->total = 204;
    tg_tensor_resource res[2] = {one, one};
    tg_realize_desc desc = {plan, recs, 2, 1, res, TG_PRECISION_FP32, 0};
    tg_realization *z = NULL;
    tg_error_info err = {{0}};
    tg_status st = tg_realization_create(dev, &desc, NULL, &z, &err);
    print_message("misaligned: %s: %s\n", tg_status_name(st), err.message);
    assert_int_equal(st, TG_ERROR_INVALID_PLAN);
    assert_non_null(strstr(err.message, "record 1"));
    assert_null(z);
    tg_plan_destroy(plan);
  }
  /* An object smaller than its member (only with skip_validation). */
  const tg_usage_record recs[2] = {{{64, 64, 1}, 0, 0, 0}, {{8, 8, 1}, 1, 1, 0}};
  tg_plan *plan = NULL;
  tg_realization *z = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_test_two_images_in_one_object(dev, recs, &plan, &z, &err);
  print_message("oversized member: %s: %s\n", tg_status_name(st), err.message);
  assert_int_equal(st, TG_ERROR_INVALID_PLAN);
  assert_null(z);
  tg_plan_destroy(plan);
  assert_int_equal(tg_test_vulkan_live(dev), 0);
  assert_no_messages(dev, "misplaced");
  close_clean(dev);
}

/* Walk the failure point over every device object creation of a full realisation of a real
 * model: each run fails cleanly with TG_ERROR_OUT_OF_DEVICE_MEMORY, or succeeds past the last;
 * nothing outlives it (our count, the layer's leak report at vkDestroyDevice, host blocks). */
static void walk_failures(const suite *s, tg_device *dev, const tg_test_model *md, tg_storage storage,
                          tg_mode mode, uint64_t *points) {
  tg_model_records *mr = NULL;
  tg_error_info err = {{0}};
  mr = tg_test_model_records(md, storage, TG_PRECISION_FP32, &s->info.limits);
  const tg_record_set *set = mr->records;
  tg_tensor_resource *res = tg_test_resources_for(set, storage, TG_PRECISION_FP32);
  tg_record_set *arena = NULL;
  tg_plan *plan = tg_test_plan_for_device(dev, set, res, TG_PRECISION_FP32, mode, NULL, 0, &arena);
  const tg_record_set *planned = arena ? arena : set;
  uint64_t n;
  for (n = 1;; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, 0);
    tg_device_options opt = {0};
    opt.fail_device_alloc_at = n;
    tg_device *d = NULL;
    assert_int_equal(open_vulkan(&opt, &fa.base, &d, &err), TG_OK);
    tg_realize_desc desc = {plan, planned->records, planned->count, planned->dims, res,
                            TG_PRECISION_FP32, 0};
    tg_realization *z = NULL;
    tg_status st = tg_realization_create(d, &desc, &fa.base, &z, &err);
    if (st == TG_OK) {
      /* Past the last creation: the realisation works. */
      tg_test_check_clean(z);
      assert_int_equal(tg_test_vulkan_live(d), 0);
      close_clean(d);
      assert_int_equal(fa.live_blocks, 0);
      break;
    }
    if (st != TG_ERROR_OUT_OF_DEVICE_MEMORY) fail_msg("N=%llu: %s", (unsigned long long)n, err.message);
    assert_null(z);
    assert_non_null(strstr(err.message, "TANGRAM_FAIL_DEVICE_ALLOC_AT"));
    if (tg_test_vulkan_live(d) != 0)
      fail_msg("N=%llu: %lld Vulkan objects leaked", (unsigned long long)n, (long long)tg_test_vulkan_live(d));
    close_clean(d);
    assert_int_equal(fa.live_blocks, 0);
  }
  assert_int_equal(n - 1, (mode == TG_MODE_OBJECTS ? plan->object_count : 1) + set->count);
  print_message("%s %s %s: %llu failure points, each rolled back\n", md->name,
                tg_storage_name(storage), tg_mode_name(mode), (unsigned long long)(n - 1));
  *points += n - 1;
  tg_plan_destroy(plan);
  tg_record_set_destroy(arena);
  free(res);
  tg_model_records_destroy(mr);
}

#ifdef TANGRAM_TEST_HAVE_VULKAN
/* The same walk one level down, on one device: the Nth driver call inside allocate and bind
 * (each probe, buffer, image, image view, allocation and memory binding) fails. Every failure
 * leaves nothing behind: our count after each, the layer's leak report when the device is
 * closed at the end. */
static void walk_driver_failures(const suite *s, tg_device *dev, const tg_test_model *md,
                                 tg_storage storage, tg_mode mode, uint64_t *points) {
  tg_model_records *mr = NULL;
  tg_error_info err = {{0}};
  mr = tg_test_model_records(md, storage, TG_PRECISION_FP16, &s->info.limits);
  const tg_record_set *set = mr->records;
  tg_tensor_resource *res = tg_test_resources_for(set, storage, TG_PRECISION_FP16);
  tg_record_set *arena = NULL;
  tg_plan *plan = tg_test_plan_for_device(dev, set, res, TG_PRECISION_FP16, mode, NULL, 0, &arena);
  const tg_record_set *planned = arena ? arena : set;
  tg_realize_desc desc = {plan, planned->records, planned->count, planned->dims, res,
                          TG_PRECISION_FP16, 0};
  /* How many calls a full realisation makes. */
  void *impl = tg__device_impl(dev);
  tg__vulkan_fail_call_at(impl, 0);
  tg_realization *z = NULL;
  assert_int_equal(tg_realization_create(dev, &desc, NULL, &z, &err), TG_OK);
  uint64_t calls = tg__vulkan_calls(impl);
  tg_realization_destroy(z);
  assert_true(calls >= set->count);
  for (uint64_t n = 1; n <= calls; ++n) {
    tg__vulkan_fail_call_at(impl, n);
    tg_status st = tg_realization_create(dev, &desc, NULL, &z, &err);
    if (st != TG_ERROR_OUT_OF_DEVICE_MEMORY)
      fail_msg("call %llu of %llu: %s: %s", (unsigned long long)n, (unsigned long long)calls,
               tg_status_name(st), err.message);
    assert_null(z);
    assert_int_equal(tg_device_get_native_error(dev), -2 /* VK_ERROR_OUT_OF_DEVICE_MEMORY */);
    if (tg_test_vulkan_live(dev) != 0)
      fail_msg("call %llu: %lld Vulkan objects leaked", (unsigned long long)n, (long long)tg_test_vulkan_live(dev));
  }
  tg__vulkan_fail_call_at(impl, 0);
  print_message("%s %s %s: %llu driver calls, each failure rolled back\n", md->name,
                tg_storage_name(storage), tg_mode_name(mode), (unsigned long long)calls);
  *points += calls;
  tg_plan_destroy(plan);
  tg_record_set_destroy(arena);
  free(res);
  tg_model_records_destroy(mr);
}
#endif

static void device_alloc_failures_roll_back(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  tg_test_model md;
  if (!tg_test_model_open("pose_landmark_lite", &md)) skip();
  uint64_t points = 0;
  tg_device *dev = test_device();
  /* A fresh device (with validation) per failure point costs an instance and a device each:
   * two cases here, buffers in objects and images in an arena; the walk below reaches every
   * driver call of every storage and mode. */
  walk_failures(s, dev, &md, TG_STORAGE_BUFFER, TG_MODE_OBJECTS, &points);
  walk_failures(s, dev, &md, TG_STORAGE_TEXTURE_2D, TG_MODE_OFFSETS, &points);
  print_message("%llu failure points in all\n", (unsigned long long)points);
#ifdef TANGRAM_TEST_HAVE_VULKAN
  uint64_t calls = 0;
  for (size_t si = 0; si < TG_TEST_GPU_STORAGE_COUNT; ++si)
    for (int mode = 0; mode < 2; ++mode)
      if (!tg_test_quick() || (size_t)mode == si % 2) /* quick: one mode per storage */
        walk_driver_failures(s, dev, &md, tg_test_gpu_storages[si], (tg_mode)mode, &calls);
  print_message("%llu driver call failures in all\n", (unsigned long long)calls);
#endif
  close_clean(dev);
  tg_test_model_close(&md);
}

/* Every host allocation of open + realise + check fails once: a clean status, nothing leaks. */
static void host_alloc_failures_roll_back(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  tg_usage_record recs[4];
  tg_tensor_resource res[4];
  tg_test_walk_buffers(recs, res);
  tg_record_set set = {1, 4, recs, NULL, *tg_allocator_default()};
  tg_device *dev = test_device();
  for (int mode = 0; mode < 2; ++mode) {
    tg_record_set *arena = NULL;
    tg_plan *plan = tg_test_plan_for_device(dev, &set, res, TG_PRECISION_FP32, (tg_mode)mode, NULL, 0, &arena);
    const tg_usage_record *planned = arena ? arena->records : recs;
    uint64_t n;
    for (n = 1;; ++n) {
      tg_failing_allocator fa;
      tg_failing_allocator_init(&fa, NULL, n);
      tg_device *d = NULL;
      tg_status st = open_vulkan(NULL, &fa.base, &d, NULL);
      if (st == TG_OK) st = tg_test_walk_realise_check(d, plan, planned, res, &fa.base);
      if (d) {
        assert_int_equal(tg_test_vulkan_live(d), 0);
        close_clean(d);
      }
      assert_int_equal(fa.live_blocks, 0);
      if (fa.failures == 0) break;
      assert_true(st == TG_ERROR_OUT_OF_HOST_MEMORY || st == TG_ERROR_OUT_OF_DEVICE_MEMORY);
    }
    print_message("%s: host allocation failure injected at %llu points\n",
                  tg_mode_name((tg_mode)mode), (unsigned long long)(n - 1));
    tg_plan_destroy(plan);
    tg_record_set_destroy(arena);
  }
  close_clean(dev);
}

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "--probe") == 0) return tg_test_run_probe(TG_BACKEND_VULKAN, argv[2]);
  snprintf(g_self, sizeof g_self, "%s", argv[0]);
  if (strchr(g_self, '/') == NULL) {
    char buf[1024];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) {
      buf[n] = '\0';
      snprintf(g_self, sizeof g_self, "%s", buf);
    }
  }
  tg_test_keep_vulkan_loaded();
  /* `test_vulkan PATTERN` runs the tests whose names match (cmocka's * and ? wildcards). */
  if (argc >= 2) cmocka_set_test_filter(argv[1]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(device_info_is_sane),
      cmocka_unit_test(missing_driver_is_reported),
      cmocka_unit_test(record_sets_realise_clean),
      cmocka_unit_test(models_realise_clean),
      cmocka_unit_test(models_realise_clean_fp16),
      cmocka_unit_test(mixed_arena_realises_clean),
      cmocka_unit_test(broken_plan_is_caught_and_named),
      cmocka_unit_test(dropped_wait_is_caught),
      cmocka_unit_test(in_place_images_alias),
      cmocka_unit_test(odd_sizes_and_unordered_reads),
      cmocka_unit_test(misplaced_resources_are_refused),
      cmocka_unit_test(device_alloc_failures_roll_back),
      cmocka_unit_test(host_alloc_failures_roll_back),
  };
  return cmocka_run_group_tests_name("vulkan", tests, suite_setup, suite_teardown);
}
