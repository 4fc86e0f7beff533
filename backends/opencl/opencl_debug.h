/* Test hooks of the OpenCL backend. Not installed; not part of the public API. */
#ifndef TANGRAM_BACKENDS_OPENCL_DEBUG_H
#define TANGRAM_BACKENDS_OPENCL_DEBUG_H

#include <stdint.h>

#include "tangram/backend.h"

/* The cl_mem objects of realisations on an OpenCL device: `live` = created and not yet
 * released (0 once every realisation is destroyed, whatever failed on the way), `created` =
 * created since the device was opened. Either pointer may be NULL. TG_ERROR_INVALID_ARGUMENT
 * for a device of another backend. */
tg_status tg__opencl_debug_counts(const tg_device *device, uint64_t *live, uint64_t *created);

#endif
