/* `tangram run` of a real model with the Nth device allocation failing, for every N, on every
 * backend this machine has: each run ends with a clean error (exit 1, a message naming the
 * failure) and, in sanitizer builds, no leak (LeakSanitizer would fail the process). */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void walk_backend(const char *backend, const char *mode, const char *storage) {
  const char *model = tg_test_cached_model("face_detection_short_range.tflite");
  if (!tg_test_backend_usable(backend)) return;
  int n;
  char *err = malloc(1 << 16);
  for (n = 1; n < 2000; ++n) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "TANGRAM_FAIL_DEVICE_ALLOC_AT=%d %s run %s --backend %s --mode %s --storage %s --time-limit 10 --json",
             n, tg_test_cli(), model, backend, mode, storage);
    int code = tg_test_run(cmd, NULL, 0, err, 1 << 16);
    if (code == 0) break;
    if (code != 1 || strstr(err, "TANGRAM_FAIL_DEVICE_ALLOC_AT") == NULL)
      fail_msg("%s %s %s, failure at %d: exit %d: %s", backend, mode, storage, n, code, err);
  }
  free(err);
  assert_true(n > 1 && n < 2000);
  print_message("%s %s %s: %d device allocation failure points, each a clean error\n", backend,
                mode, storage, n - 1);
}

/* The host walks two storages and modes; a GPU backend one, and its second only under
 * TANGRAM_TEST_DEEP=1 (scripts/test-deep.sh): every walk runs the CLI once per failure point,
 * a hundred runs, each opening the device. */

static void host_backend(void **state) {
  (void)state;
  walk_backend("host", "objects", "buffer");
  walk_backend("host", "offsets", "texture_2d");
}

static void opencl_backend(void **state) {
  (void)state;
  walk_backend("opencl", "objects", "texture_2d");
  if (tg_test_deep()) walk_backend("opencl", "offsets", "buffer");
}

static void vulkan_backend(void **state) {
  (void)state;
  walk_backend("vulkan", "offsets", "texture_2d");
  if (tg_test_deep()) walk_backend("vulkan", "objects", "texture_3d");
}

TG_TEST_MAIN(cmocka_unit_test(host_backend), cmocka_unit_test(opencl_backend),
             cmocka_unit_test(vulkan_backend))
