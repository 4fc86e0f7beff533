/* The OpenCL backend's entry points and errors. libOpenCL (the ICD loader, or a vendor library
 * on Android) is opened at run time, so the library links nothing from OpenCL and a machine
 * without a driver simply reports TG_ERROR_NO_LOADER. One table of entry points per device: no
 * process-wide state. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl_state.h"

_Static_assert(sizeof(void *) == sizeof(void (*)(void)),
               "dlsym results are copied into function pointers");

/* clang-format off */
#define OCL_SYM(field) {"cl" #field, offsetof(ocl_api, field)}
static const struct {
  const char *name;
  size_t offset;
} k_symbols[] = {
    OCL_SYM(GetPlatformIDs),       OCL_SYM(GetPlatformInfo),
    OCL_SYM(GetDeviceIDs),         OCL_SYM(GetDeviceInfo),
    OCL_SYM(CreateContext),        OCL_SYM(ReleaseContext),
    OCL_SYM(GetContextInfo),
    OCL_SYM(CreateCommandQueue),   OCL_SYM(ReleaseCommandQueue),
    OCL_SYM(GetCommandQueueInfo),
    OCL_SYM(GetSupportedImageFormats),
    OCL_SYM(CreateBuffer),         OCL_SYM(CreateSubBuffer),
    OCL_SYM(CreateImage),          OCL_SYM(ReleaseMemObject),
    OCL_SYM(CreateProgramWithSource), OCL_SYM(BuildProgram),
    OCL_SYM(GetProgramBuildInfo),  OCL_SYM(ReleaseProgram),
    OCL_SYM(CreateKernel),         OCL_SYM(ReleaseKernel),
    OCL_SYM(SetKernelArg),         OCL_SYM(GetKernelWorkGroupInfo),
    OCL_SYM(EnqueueNDRangeKernel),
    OCL_SYM(EnqueueMarkerWithWaitList), OCL_SYM(EnqueueBarrierWithWaitList),
    OCL_SYM(EnqueueFillBuffer),
    OCL_SYM(EnqueueFillImage),     OCL_SYM(EnqueueReadBuffer),
    OCL_SYM(Flush),                OCL_SYM(Finish),
    OCL_SYM(ReleaseEvent),         OCL_SYM(GetEventProfilingInfo),
    OCL_SYM(EnqueueMapBuffer),     OCL_SYM(EnqueueUnmapMemObject),
};
#undef OCL_SYM
/* clang-format on */

/* Where libOpenCL lives: the ICD loader on desktops, vendor libraries on Android. */
static const char *const k_library_paths[] = {
    "libOpenCL.so.1",
    "libOpenCL.so",
    "/system/vendor/lib64/libOpenCL.so",
    "/system/lib64/libOpenCL.so",
    "/vendor/lib64/libOpenCL.so",
    "/system/vendor/lib64/libOpenCL-pixel.so",
    "/vendor/lib64/libOpenCL-pixel.so",
    "libOpenCL-pixel.so",
    "/system/vendor/lib64/libOpenCL-car.so",
    "libOpenCL-car.so",
    "/system/vendor/lib64/egl/libGLES_mali.so",
    "/system/vendor/lib64/libPVROCL.so",
    "/system/vendor/lib/libOpenCL.so",
    "/system/lib/libOpenCL.so",
    "/vendor/lib/libOpenCL.so",
};

static int dl_flags(void) {
  int flags = RTLD_NOW | RTLD_LOCAL;
#ifdef RTLD_NODELETE
  /* Keep the driver mapped after dlclose: drivers leave threads and atexit handlers behind,
   * and LeakSanitizer suppressions by library name only match a library still mapped. */
  flags |= RTLD_NODELETE;
#endif
  return flags;
}

/* `library`: the library to use (a borrowed device names the one its objects come from);
 * NULL = $TANGRAM_OPENCL_LIBRARY, else the usual places. */
tg_status tg__ocl_api_load(ocl_api *api, const char *library, tg_error_info *err) {
  memset(api, 0, sizeof *api);
  const char *forced = library && *library ? library : getenv("TANGRAM_OPENCL_LIBRARY");
  const char *forced_by = library && *library ? "the OpenCL library" : "TANGRAM_OPENCL_LIBRARY";
  const char *used = NULL;
  if (forced && *forced) {
    api->library = dlopen(forced, dl_flags());
    if (api->library == NULL) {
      const char *why = dlerror();
      return tg__error(err, TG_ERROR_NO_LOADER, "%s=%s cannot be loaded: %s", forced_by, forced,
                       why ? why : "unknown reason");
    }
    used = forced;
  } else {
    for (size_t i = 0; i < sizeof k_library_paths / sizeof k_library_paths[0]; ++i) {
      api->library = dlopen(k_library_paths[i], dl_flags());
      if (api->library) {
        used = k_library_paths[i];
        break;
      }
    }
    if (api->library == NULL)
      return tg__error(err, TG_ERROR_NO_LOADER,
                       "libOpenCL.so.1 not found (nor libOpenCL.so or a vendor libOpenCL)");
  }
  for (size_t i = 0; i < sizeof k_symbols / sizeof k_symbols[0]; ++i) {
    void *sym = dlsym(api->library, k_symbols[i].name);
    if (sym == NULL) {
      tg_status st = tg__error(err, TG_ERROR_NO_LOADER, "%s has no %s (OpenCL 1.2 is needed)", used,
                               k_symbols[i].name);
      dlclose(api->library);
      api->library = NULL;
      return st;
    }
    /* ISO C has no conversion from void * to a function pointer; copy the bits. */
    memcpy((char *)api + k_symbols[i].offset, &sym, sizeof sym);
  }
  return TG_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Errors. */

static tg_status map_cl(cl_int e) {
  switch (e) {
    case CL_SUCCESS:
      return TG_OK;
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES:
      return TG_ERROR_OUT_OF_DEVICE_MEMORY;
    case CL_OUT_OF_HOST_MEMORY:
      return TG_ERROR_OUT_OF_HOST_MEMORY;
    case CL_INVALID_BUFFER_SIZE:
    case CL_INVALID_IMAGE_SIZE:
      return TG_ERROR_LIMIT;
    case CL_IMAGE_FORMAT_NOT_SUPPORTED:
    case CL_INVALID_IMAGE_FORMAT_DESCRIPTOR:
    case CL_INVALID_OPERATION:
      return TG_ERROR_UNSUPPORTED;
    case CL_MISALIGNED_SUB_BUFFER_OFFSET:
      return TG_ERROR_INVALID_PLAN;
    case CL_DEVICE_NOT_FOUND:
    case CL_DEVICE_NOT_AVAILABLE:
    case OCL_PLATFORM_NOT_FOUND_KHR:
      return TG_ERROR_NO_DEVICE;
    default:
      return TG_ERROR_DEVICE;
  }
}

/* Remember a driver failure for native_error() and turn it into a status. */
tg_status tg__ocl_fail_cl(ocl_device *d, cl_int e) {
  d->last_error = e;
  return map_cl(e);
}
