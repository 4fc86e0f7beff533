/* GPU backends not built in this configuration. */
#include "backends/backend_internal.h"
#ifndef TANGRAM_HAVE_OPENCL
const tg__backend_vtable *tg__opencl_backend(void) { return NULL; }
#endif
#ifndef TANGRAM_HAVE_VULKAN
const tg__backend_vtable *tg__vulkan_backend(void) { return NULL; }
#endif
