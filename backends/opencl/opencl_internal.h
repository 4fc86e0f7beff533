/* What the OpenCL backend offers the rest of the library besides its vtable. */
#ifndef TANGRAM_BACKENDS_OPENCL_INTERNAL_H
#define TANGRAM_BACKENDS_OPENCL_INTERNAL_H

#include "backends/protocol.h"

/* The backend's tg__wrap_fn: `borrowed` is a `const tg_opencl_device_desc *`
 * (tangram/opencl.h). Checks that the context, device and queue belong together, then builds
 * the same state as the vtable's open() on them; close() never releases them. */
tg_status tg__opencl_wrap(const void *borrowed, const tg_device_options *options,
                          const tg_allocator *alloc, void **impl, tg_device_info *info,
                          tg_error_info *err);

/* The test hooks' halves on the backend's state (opencl_debug.h wraps them for a tg_device):
 * the live and created cl_mem counts, and hiding the device's image support. */
tg_status tg__opencl_debug_counts_impl(const void *impl, uint64_t *live, uint64_t *created);
tg_status tg__opencl_debug_hide_images_impl(void *impl);

#endif
