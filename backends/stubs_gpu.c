/* GPU backends not built in this configuration. */
#include "backends/protocol.h"
#ifndef TANGRAM_HAVE_OPENCL
const tg__backend_vtable *tg__opencl_backend(void) { return NULL; }
/* tangram/opencl.h's entry point exists in every build, so an engine links against any
 * configuration and learns at run time that OpenCL is missing. */
struct tg_opencl_device_desc;
tg_status tg_device_wrap_opencl(const struct tg_opencl_device_desc *desc,
                                const tg_allocator *alloc, tg_device **out, tg_error_info *err);
tg_status tg_device_wrap_opencl(const struct tg_opencl_device_desc *desc,
                                const tg_allocator *alloc, tg_device **out, tg_error_info *err) {
  (void)desc;
  (void)alloc;
  if (out) *out = NULL;
  return tg__error(err, TG_ERROR_UNSUPPORTED,
                   "tg_device_wrap_opencl: this build of Tangram has no OpenCL backend");
}
#endif
#ifndef TANGRAM_HAVE_VULKAN
const tg__backend_vtable *tg__vulkan_backend(void) { return NULL; }
#endif
