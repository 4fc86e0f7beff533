#define _POSIX_C_SOURCE 200809L
/* Speed proxies on a real OpenCL driver (PoCL on CI): tests/backends/speed_case.h. */
#include "support/tg_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define SPEED_BACKEND TG_BACKEND_OPENCL
#define SPEED_NAME "opencl"
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
