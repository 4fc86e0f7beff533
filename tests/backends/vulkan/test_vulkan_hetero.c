#define _POSIX_C_SOURCE 200809L
/* Heterogeneous realisations on Vulkan (lavapipe on CI), with the validation and
 * synchronization validation layers: shared memory is a HOST_VISIBLE memory type, mapped for
 * its life, flushed and invalidated when not coherent; the check submits the GPU's work in
 * segments between CPU ops. Clean in order and out of order in both modes, no validation
 * message, and every driver call failing in turn leaves no Vulkan object behind.
 *
 * Outside CI a machine without Vulkan skips; under CI (CI=true) it fails. */
#include "support/tg_test.h"
#include "support/tg_vulkan_leaks.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "backends/hetero_case.h"
#ifdef TANGRAM_TEST_HAVE_VULKAN
#include "backends/backend_internal.h"
#include "backends/vulkan/vulkan_internal.h"
#endif

static void modes_and_rollback(void **state) {
  (void)state;
  tg_device_options opt;
  memset(&opt, 0, sizeof opt);
  opt.backend = TG_BACKEND_VULKAN;
  opt.validation = 1;
  tg_device *d = NULL;
  tg_error_info err = {{0}};
  if (tg_device_open(&opt, NULL, &d, NULL, NULL, &err) != TG_OK) {
    if (tg_test_in_ci()) fail_msg("no usable Vulkan device (with validation) under CI: %s", err.message);
    skip();
  }
  for (int mode = 0; mode < 2; ++mode) {
    case_data c;
    mixed_case_checks_clean(&c, d, (tg_mode)mode);
    assert_int_equal(tg_test_vulkan_live(d), 0);
    if (tg_device_get_validation_messages(d))
      fail_msg("%s mode: %llu validation messages", tg_mode_name((tg_mode)mode),
               (unsigned long long)tg_device_get_validation_messages(d));
#ifdef TANGRAM_TEST_HAVE_VULKAN
    /* Every driver call creating or binding a realisation object failing in turn. */
    size_t points = 0;
    for (uint64_t n = 1;; ++n) {
      tg__vulkan_fail_call_at(tg__device_impl(d), n);
      tg_hetero_realize_desc rd = {c.sets, TG_SET_COUNT, TG_PRECISION_FP32, 0};
      tg_hetero_realization *z = NULL;
      tg_status st = tg_hetero_realization_create(d, &rd, NULL, &z, &err);
      tg_hetero_realization_destroy(z);
      assert_int_equal(tg_test_vulkan_live(d), 0);
      if (st == TG_OK) break;
      assert_int_equal(st, TG_ERROR_OUT_OF_DEVICE_MEMORY);
      ++points;
    }
    tg__vulkan_fail_call_at(tg__device_impl(d), 0);
    print_message("%s mode: %zu driver calls failed in turn, no object left\n", tg_mode_name((tg_mode)mode), points);
    assert_true(points >= 4);
#endif
    case_free(&c);
  }
  uint64_t messages = tg_device_get_validation_messages(d);
  tg_device_close(d);
  if (messages) fail_msg("%llu validation messages", (unsigned long long)messages);
}

int main(void) {
  tg_test_keep_vulkan_loaded();
  const struct CMUnitTest tests[] = {cmocka_unit_test(modes_and_rollback)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
