/* The public calls of tangram/vulkan.h. They sit above the generic layer (they open a device
 * through it) and call the Vulkan backend for what only it knows, so that neither of those
 * calls the other. Built whenever the Vulkan headers are found; without the backend itself
 * (no volk or glslc) they report TG_ERROR_UNSUPPORTED. */
#include <string.h>

#include "backends/backend_internal.h"
#include "backends/vulkan/vulkan_internal.h"
#include "tangram/vulkan.h"

static tg_status entry_device_wrap_vulkan(const tg_vulkan_device_desc *desc, const tg_allocator *alloc,
                                tg_device **out, tg_error_info *err) {
  if (out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "tg_device_wrap_vulkan: out is NULL");
  *out = NULL;
#ifdef TANGRAM_HAVE_VULKAN
  tg_device_options options = {0};
  options.backend = TG_BACKEND_VULKAN;
  options.fail_device_alloc_at = desc ? desc->fail_device_alloc_at : 0;
  return tg__device_open_with(TG_BACKEND_VULKAN, tg__vulkan_wrap, desc, &options, alloc, out, err);
#else
  (void)desc;
  (void)alloc;
  return tg__error(err, TG_ERROR_UNSUPPORTED,
                   "tg_device_wrap_vulkan: this build of Tangram has no Vulkan backend");
#endif
}

tg_status tg_vulkan_get_tensor(const tg_realization *realization, size_t record,
                               tg_vulkan_tensor *out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  const tg_device *device = NULL;
  void *memory = NULL, *view = NULL;
  tg_status st = tg__realization_parts(realization, record, &device, &memory, &view);
  if (st != TG_OK) return st;
  if (tg_device_get_info(device)->backend != TG_BACKEND_VULKAN) return TG_ERROR_UNSUPPORTED;
#ifdef TANGRAM_HAVE_VULKAN
  tg__vulkan_describe_tensor(tg__device_impl(device), memory, view, out);
  return TG_OK;
#else
  memset(out, 0, sizeof *out);
  return TG_ERROR_UNSUPPORTED;
#endif
}

tg_status tg_device_wrap_vulkan(const tg_vulkan_device_desc *desc, const tg_allocator *alloc, tg_device **out,
                                tg_error_info *err) {
  tg__error_begin(err);
  return tg__error_entry(err, entry_device_wrap_vulkan(desc, alloc, out, err), "tg_device_wrap_vulkan", NULL);
}
