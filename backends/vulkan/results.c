/* The Vulkan backend's driver results: a VkResult as a tg_status, the last failure kept for
 * native_error(), and the fault injection of tests that walks a failure over every driver call
 * making a realisation object. */
#include "backends/vulkan/vulkan_state.h"

tg_status tg__vk_status_of(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return TG_OK;
    case VK_ERROR_OUT_OF_HOST_MEMORY: return TG_ERROR_OUT_OF_HOST_MEMORY;
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_TOO_MANY_OBJECTS:
    case VK_ERROR_OUT_OF_POOL_MEMORY: return TG_ERROR_OUT_OF_DEVICE_MEMORY;
    case VK_ERROR_INCOMPATIBLE_DRIVER: return TG_ERROR_NO_DEVICE;
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return TG_ERROR_UNSUPPORTED;
    case VK_TIMEOUT: return TG_ERROR_TIMEOUT;
    default: return TG_ERROR_DEVICE;
  }
}

/* Tests walk a failure over every driver call that creates or binds a realisation object
 * (the generic layer's injection fails whole allocate/bind steps; this reaches the steps
 * inside them). */
VkResult tg__vk_injected(vk_device *v) {
  ++v->calls;
  return v->calls == v->fail_call_at ? VK_ERROR_OUT_OF_DEVICE_MEMORY : VK_SUCCESS;
}

/* Remember a failure for native_error() and map it. */
tg_status tg__vk_fail(vk_device *v, VkResult r) {
  v->last_error = r;
  return tg__vk_status_of(r);
}
