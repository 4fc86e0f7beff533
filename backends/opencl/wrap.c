/* tg_device_wrap_opencl: a device on the engine's OpenCL objects. The generic layer opens it
 * (fault injection, realisation, checks as for any device) through the backend's wrap
 * function; this file sits above both so that neither calls the other. */
#include "backends/backend_internal.h"
#include "backends/opencl/opencl_internal.h"
#include "tangram/opencl.h"

static tg_status entry_device_wrap_opencl(const tg_opencl_device_desc *desc, const tg_allocator *alloc,
                                tg_device **out, tg_error_info *err) {
  if (out == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "tg_device_wrap_opencl: `out` is NULL");
  *out = NULL;
  if (desc == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "tg_device_wrap_opencl: `desc` is NULL");
  const char *missing = desc->context == NULL  ? "context"
                        : desc->device == NULL ? "device"
                        : desc->queue == NULL  ? "queue"
                                               : NULL;
  if (missing)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "tg_device_wrap_opencl: desc->%s is NULL",
                     missing);
  tg_device_options options = {0};
  options.backend = TG_BACKEND_OPENCL;
  options.fail_device_alloc_at = desc->fail_device_alloc_at;
  return tg__device_open_with(TG_BACKEND_OPENCL, tg__opencl_wrap, desc, &options, alloc, out, err);
}

tg_status tg_device_wrap_opencl(const tg_opencl_device_desc *desc, const tg_allocator *alloc, tg_device **out,
                                tg_error_info *err) {
  tg__error_begin(err);
  return tg__error_entry(err, entry_device_wrap_opencl(desc, alloc, out, err), "tg_device_wrap_opencl", NULL);
}
