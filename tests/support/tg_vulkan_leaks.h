/* The tests that open Vulkan devices, under LeakSanitizer: include this once, in the test's
 * own file, and call tg_test_keep_vulkan_loaded() first thing in main(). lavapipe (and its
 * LLVM) and the validation layer keep some allocations past their own teardown. They are not
 * ours: the hook below suppresses them, and keeping those libraries loaded (the loader unloads
 * drivers and layers with their instance) lets the reports name them so that the suppressions
 * match. Both do nothing in other builds. Also: a device's live Vulkan objects. */
#ifndef TG_TESTS_SUPPORT_TG_VULKAN_LEAKS_H
#define TG_TESTS_SUPPORT_TG_VULKAN_LEAKS_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#include "tangram/backend.h"
#ifdef TANGRAM_TEST_HAVE_VULKAN
#include "backends/backend_internal.h"
#include "backends/vulkan/vulkan_internal.h"
#endif

#if defined(__SANITIZE_ADDRESS__)
#define TG_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TG_TEST_ASAN 1
#endif
#endif

#ifdef TG_TEST_ASAN
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:libLLVM\nleak:libvulkan_lvp.so\nleak:libVkLayer_khronos_validation.so\n";
}
#endif

static inline void tg_test_keep_vulkan_loaded(void) {
#ifdef TG_TEST_ASAN
  static const char *const keep[] = {"libvulkan_lvp.so", "libVkLayer_khronos_validation.so"};
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; ++i)
    (void)dlopen(keep[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE); /* missing ones: not loaded */
#endif
}

/* The Vulkan objects alive on a Vulkan device (tg__vulkan_live_objects); 0 in a build without
 * the backend. */
static inline int64_t tg_test_vulkan_live(const tg_device *d) {
#ifdef TANGRAM_TEST_HAVE_VULKAN
  return tg__vulkan_live_objects(tg__device_impl(d));
#else
  (void)d;
  return 0;
#endif
}

#endif
