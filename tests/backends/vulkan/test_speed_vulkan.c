#define _POSIX_C_SOURCE 200809L
/* Speed proxies on a real Vulkan driver (lavapipe on CI), with the validation and
 * synchronization validation layers on: tests/backends/speed_case.h. */
#include "support/tg_test.h"
#include "support/tg_vulkan_leaks.h"

#include <stdio.h>
#include <stdlib.h>

#define SPEED_BACKEND TG_BACKEND_VULKAN
#define SPEED_NAME "vulkan"
#define SPEED_LIVE_OBJECTS tg_test_vulkan_live
#include "backends/speed_case.h"

int main(void) { return speed_main(); }
