/* Test hooks of the OpenCL backend. Not installed; not part of the public API. */
#ifndef TANGRAM_BACKENDS_OPENCL_DEBUG_H
#define TANGRAM_BACKENDS_OPENCL_DEBUG_H

#include <stdint.h>

#include "backends/backend_internal.h"
#include "backends/opencl/opencl_internal.h"
#include "tangram/backend.h"

/* (The library defines the _impl half, opencl_internal.h, on the backend's own state, so that
 * it never calls back into the generic layer.)
 * The cl_mem objects of realisations on an OpenCL device: `live` = created and not yet
 * released (0 once every realisation is destroyed, whatever failed on the way), `created` =
 * created since the device was opened. Either pointer may be NULL. TG_ERROR_INVALID_ARGUMENT
 * for a device of another backend. */
static inline tg_status tg__opencl_debug_counts(const tg_device *device, uint64_t *live,
                                                uint64_t *created) {
  if (device == NULL || tg_device_get_info(device)->backend != TG_BACKEND_OPENCL)
    return TG_ERROR_INVALID_ARGUMENT;
  return tg__opencl_debug_counts_impl(tg__device_impl(device), live, created);
}

/* Make an open OpenCL device behave as one without image support (the device reports
 * images = 0 and the backend creates no image), to test the refusal of texture plans on
 * drivers that all support images. TG_ERROR_INVALID_ARGUMENT for a device of another
 * backend. */
static inline tg_status tg__opencl_debug_hide_images(tg_device *device) {
  if (device == NULL || tg_device_get_info(device)->backend != TG_BACKEND_OPENCL)
    return TG_ERROR_INVALID_ARGUMENT;
  /* The description lives in the device (mutable memory); only this hook writes it. */
  tg_device_info *info = (tg_device_info *)tg_device_get_info(device);
  info->images = info->fp16_images = info->image2d_from_buffer = info->arena_images = 0;
  return tg__opencl_debug_hide_images_impl(tg__device_impl(device));
}

#endif
