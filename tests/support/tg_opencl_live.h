/* The OpenCL tests' count of a device's live cl_mem objects, in the tests' own file (it needs
 * the backend's debug entry points, which only a build with the backend has). */
#ifndef TG_TESTS_SUPPORT_TG_OPENCL_LIVE_H
#define TG_TESTS_SUPPORT_TG_OPENCL_LIVE_H

#include <stdint.h>

#include "tangram/backend.h"
#ifdef TANGRAM_TEST_HAVE_OPENCL
#include "backends/opencl/opencl_debug.h"
#endif

/* The cl_mem objects alive on an OpenCL device (tg__opencl_debug_counts; fails the test when it
 * fails); 0 in a build without the backend. */
static inline uint64_t tg_test_opencl_live(tg_device *d) {
#ifdef TANGRAM_TEST_HAVE_OPENCL
  uint64_t live = 0;
  assert_int_equal(tg__opencl_debug_counts(d, &live, NULL), TG_OK);
  return live;
#else
  (void)d;
  return 0;
#endif
}

#endif
