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
#include "backends/speed_case.h"

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
