#define _POSIX_C_SOURCE 200809L
/* Speed proxies on a real OpenCL driver (PoCL on CI): tests/backends/speed_case.h. */
#include "support/tg_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "tangram/backend.h"
#ifdef TANGRAM_TEST_HAVE_OPENCL
#include "backends/opencl/opencl_debug.h"
#endif

/* cl_mem objects alive on the device (0 without the backend's test hooks). */
static int64_t live_objects(const tg_device *d) {
  uint64_t live = 0;
#ifdef TANGRAM_TEST_HAVE_OPENCL
  if (tg__opencl_debug_counts(d, &live, NULL) != TG_OK) return -1;
#else
  (void)d;
#endif
  return (int64_t)live;
}

#define SPEED_BACKEND TG_BACKEND_OPENCL
#define SPEED_NAME "opencl"
#define SPEED_LIVE_OBJECTS live_objects
#ifdef TANGRAM_TEST_HAVE_OPENCL
static void image_buffers_without_images_are_a_named_skip(void **state);
#define SPEED_EXTRA_TESTS cmocka_unit_test(image_buffers_without_images_are_a_named_skip),
#endif
#include "backends/speed_case.h"

#ifdef TANGRAM_TEST_HAVE_OPENCL
/* A device without images: image_buffer proxies are refused as unsupported, naming the storage
 * (evaluate --speed shows the reason as the row's skip). */
static void image_buffers_without_images_are_a_named_skip(void **state) {
  suite *s = *state;
  if (s->device == NULL) skip();
  suite t = *s;
  tg_device_options opt = {0};
  opt.backend = TG_BACKEND_OPENCL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_device_open(&opt, NULL, &t.device, NULL, NULL, &err), TG_OK);
  assert_int_equal(tg__opencl_debug_hide_images(t.device), TG_OK);
  tg_model_records *mr = records_for(&t, TG_STORAGE_IMAGE_BUFFER, TG_PRECISION_FP32);
  tg_tensor_resource *res = resources_for(mr->records, TG_STORAGE_IMAGE_BUFFER, TG_PRECISION_FP32);
  tg_plan *plan = NULL;
  tg_realization *z = realise_naive(&t, mr->records, res, &plan);
  tg_speed_part part = {z, mr->tensor_of};
  tg_speed_desc d = {0};
  d.graph = s->model->graph;
  d.parts = &part;
  d.part_count = 1;
  d.repeats = 1;
  tg_speed_result r;
  assert_int_equal(tg_realization_time(&d, &r, &err), TG_ERROR_UNSUPPORTED);
  if (strstr(err.message, "no") == NULL || strstr(err.message, "image_buffer") == NULL)
    fail_msg("unexpected reason: %s", err.message);
  uint64_t live = 1;
  tg_realization_destroy(z);
  assert_int_equal(tg__opencl_debug_counts(t.device, &live, NULL), TG_OK);
  assert_int_equal(live, 0);
  tg_plan_destroy(plan);
  free(res);
  tg_model_records_destroy(mr);
  tg_device_close(t.device);
}
#endif

int main(void) {
  /* PoCL caches compiled kernels; keep its cache in the build tree, not in $HOME. */
  if (getenv("POCL_CACHE_DIR") == NULL) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/pocl-cache", TG_BINARY_DIR);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) perror(dir);
    setenv("POCL_CACHE_DIR", dir, 1);
  }
  return speed_main();
}
