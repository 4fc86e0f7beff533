#define _POSIX_C_SOURCE 200809L
/* Heterogeneous realisations on OpenCL (PoCL on CI): shared memory is CL_MEM_ALLOC_HOST_PTR
 * buffers (sub-buffers of one in offsets mode), mapped for the CPU; every cl_mem is released
 * whatever fails, and both modes check clean in order and out of order.
 *
 * Outside CI a machine without an OpenCL platform skips; under CI (CI=true) it fails. */
#include "support/tg_test.h"
#include "support/tg_opencl_live.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/hetero_case.h"
#ifdef TANGRAM_TEST_HAVE_OPENCL
#include "backends/opencl/opencl_debug.h"
#endif

static tg_device *open_device(uint64_t fail_at) {
  tg_device_options opt;
  memset(&opt, 0, sizeof opt);
  opt.backend = TG_BACKEND_OPENCL;
  opt.fail_device_alloc_at = fail_at;
  tg_device *d = NULL;
  tg_error_info err = {{0}};
  if (tg_device_open(&opt, NULL, &d, NULL, NULL, &err) != TG_OK) {
    if (tg_test_in_ci()) fail_msg("no usable OpenCL device under CI: %s", err.message);
    return NULL;
  }
  return d;
}

static void modes_and_rollback(void **state) {
  (void)state;
  tg_device *probe = open_device(0);
  if (probe == NULL) skip();
  for (int mode = 0; mode < 2; ++mode) {
    case_data c;
    mixed_case_checks_clean(&c, probe, (tg_mode)mode);
    assert_int_equal(tg_test_opencl_live(probe), 0);
    /* Every creation point; under TANGRAM_TEST_QUICK=1 (sanitizers, valgrind: each device
     * open costs seconds there) the first, a middle and the last one. */
    tg_hetero_stats stats;
    {
      tg_hetero_realize_desc rd = {c.sets, TG_SET_COUNT, TG_PRECISION_FP32, 0};
      tg_hetero_realization *z = NULL;
      tg_error_info err = {{0}};
      assert_int_equal(tg_hetero_realization_create(probe, &rd, NULL, &z, &err), TG_OK);
      tg_hetero_realization_get_stats(z, &stats);
      tg_hetero_realization_destroy(z);
    }
    uint64_t points = stats.allocations[TG_SPACE_DEVICE] + stats.allocations[TG_SPACE_SHARED] + stats.views;
    int quick = tg_test_quick();
    size_t creations = 0;
    for (uint64_t n = 1;; ++n) {
      if (quick && n > 1 && n < points && n != points / 2) continue;
      tg_device *d = open_device(n);
      assert_non_null(d);
      tg_hetero_realize_desc rd = {c.sets, TG_SET_COUNT, TG_PRECISION_FP32, 0};
      tg_hetero_realization *z = NULL;
      tg_error_info err = {{0}};
      tg_status st = tg_hetero_realization_create(d, &rd, NULL, &z, &err);
      if (st != TG_OK) {
        assert_int_equal(st, TG_ERROR_OUT_OF_DEVICE_MEMORY);
        assert_null(z);
        assert_int_equal(tg_test_opencl_live(d), 0);
      }
      tg_hetero_realization_destroy(z);
      assert_int_equal(tg_test_opencl_live(d), 0);
      tg_device_close(d);
      if (st == TG_OK) {
        creations = (size_t)n - 1;
        assert_int_equal(creations, points); /* every allocation and view counted */
        break;
      }
    }
    print_message("%s mode: %zu device object creations failed in turn, nothing left behind\n",
                  tg_mode_name((tg_mode)mode), creations);
    assert_true(creations >= 4);
    case_free(&c);
  }
  tg_device_close(probe);
}

TG_TEST_MAIN(cmocka_unit_test(modes_and_rollback))
