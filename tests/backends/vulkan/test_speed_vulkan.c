#define _POSIX_C_SOURCE 200809L
/* Speed proxies on a real Vulkan driver (lavapipe on CI), with the validation and
 * synchronization validation layers on: tests/backends/speed_case.h. */
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>

#define SPEED_BACKEND TG_BACKEND_VULKAN
#define SPEED_NAME "vulkan"
#include "backends/speed_case.h"

#ifdef TG_TEST_ASAN
/* LeakSanitizer: lavapipe, its LLVM and the validation layer keep some allocations past their
 * own teardown (as in test_vulkan.c). */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:libLLVM\nleak:libvulkan_lvp.so\nleak:libVkLayer_khronos_validation.so\n";
}
#endif

int main(void) { return speed_main(); }
