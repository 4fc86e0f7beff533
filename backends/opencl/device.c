/* The OpenCL backend: choosing, opening, describing, wrapping and closing a device, and the
 * backend's vtable. libOpenCL is opened at run time (loader.c), so a machine without a driver
 * simply reports TG_ERROR_NO_LOADER / TG_ERROR_NO_DEVICE.
 *
 * The backend's other files: loader.c (entry points, errors), memory.c (realisation: device
 * memory, the tensors bound in it, shared memory), check.c (the shadow run), speed.c (speed
 * proxies and their timing); their shared state is opencl_state.h.
 *
 * Borrowed devices (tangram/opencl.h, tg__opencl_wrap): the engine's context, device and
 * queue take the place of created ones and are never released. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl_internal.h"
#include "backends/opencl/opencl_state.h"

/* ------------------------------------------------------------------------------------------ */
/* Opening a device. */

static cl_int device_info(ocl_device *d, cl_device_info what, void *out, size_t size) {
  return d->api.GetDeviceInfo(d->device, what, size, out, NULL);
}

static uint64_t device_ulong(ocl_device *d, cl_device_info what) {
  cl_ulong v = 0;
  return device_info(d, what, &v, sizeof v) == CL_SUCCESS ? (uint64_t)v : 0;
}

static uint64_t device_size(ocl_device *d, cl_device_info what) {
  size_t v = 0;
  return device_info(d, what, &v, sizeof v) == CL_SUCCESS ? (uint64_t)v : 0;
}

static uint64_t device_uint(ocl_device *d, cl_device_info what) {
  cl_uint v = 0;
  return device_info(d, what, &v, sizeof v) == CL_SUCCESS ? (uint64_t)v : 0;
}

/* Does the space-separated extension list `list` name `ext` exactly? */
static int has_extension(const char *list, const char *ext) {
  size_t n = strlen(ext);
  for (const char *p = list; (p = strstr(p, ext)) != NULL; p += n) {
    int start = p == list || p[-1] == ' ';
    int end = p[n] == '\0' || p[n] == ' ';
    if (start && end) return 1;
  }
  return 0;
}

static int contains_nocase(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  if (n == 0) return 1;
  for (; *hay; ++hay) {
    size_t i = 0;
    while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
      ++i;
    if (i == n) return 1;
  }
  return 0;
}

/* "OpenCL 1.2 ..." -> 102. */
static int parse_version(const char *s) {
  int major = 0, minor = 0;
  if (sscanf(s, "OpenCL %d.%d", &major, &minor) != 2) return 0;
  return major * 100 + minor;
}

typedef struct ocl_candidate {
  cl_platform_id platform;
  cl_device_id device;
  cl_device_type type;
  char name[256];
} ocl_candidate;

#define OCL_MAX_CANDIDATES 64

static int all_digits(const char *s) {
  if (*s == '\0') return 0;
  for (; *s; ++s)
    if (*s < '0' || *s > '9') return 0;
  return 1;
}

/* Find the device to use: by index or name substring when asked, else the first GPU, else the
 * first device. Devices older than OpenCL 1.2 are skipped (sub-buffers, clCreateImage). */
static tg_status choose_device(ocl_device *d, const char *want, tg_error_info *err) {
  const ocl_api *a = &d->api;
  cl_uint np = 0;
  cl_int e = a->GetPlatformIDs(0, NULL, &np);
  if (e == OCL_PLATFORM_NOT_FOUND_KHR || (e == CL_SUCCESS && np == 0)) {
    d->last_error = e;
    return tg__error(err, TG_ERROR_NO_DEVICE, "no OpenCL platform (%d)", (int)e);
  }
  if (e != CL_SUCCESS) {
    d->last_error = e;
    return tg__error(err, TG_ERROR_NO_DEVICE, "clGetPlatformIDs failed (%d)", (int)e);
  }
  cl_platform_id platforms[16];
  if (np > 16) np = 16;
  if ((e = a->GetPlatformIDs(np, platforms, NULL)) != CL_SUCCESS) {
    d->last_error = e;
    return tg__error(err, TG_ERROR_NO_DEVICE, "clGetPlatformIDs failed (%d)", (int)e);
  }
  ocl_candidate *cands = tg__calloc(&d->alloc, OCL_MAX_CANDIDATES, sizeof *cands);
  if (cands == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  size_t nc = 0;
  for (cl_uint p = 0; p < np && nc < OCL_MAX_CANDIDATES; ++p) {
    /* Ask for ALL: some drivers (PoCL) fail a GPU-only query instead of returning none. */
    cl_device_id devs[OCL_MAX_CANDIDATES];
    cl_uint nd = 0;
    if (a->GetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, OCL_MAX_CANDIDATES, devs, &nd) !=
        CL_SUCCESS)
      continue;
    if (nd > OCL_MAX_CANDIDATES) nd = OCL_MAX_CANDIDATES;
    for (cl_uint i = 0; i < nd && nc < OCL_MAX_CANDIDATES; ++i) {
      char version[256] = {0};
      cl_bool available = CL_FALSE;
      if (a->GetDeviceInfo(devs[i], CL_DEVICE_VERSION, sizeof version - 1, version, NULL) !=
              CL_SUCCESS ||
          parse_version(version) < 102)
        continue;
      if (a->GetDeviceInfo(devs[i], CL_DEVICE_AVAILABLE, sizeof available, &available, NULL) !=
              CL_SUCCESS ||
          !available)
        continue;
      ocl_candidate *c = &cands[nc];
      c->platform = platforms[p];
      c->device = devs[i];
      if (a->GetDeviceInfo(devs[i], CL_DEVICE_TYPE, sizeof c->type, &c->type, NULL) != CL_SUCCESS)
        c->type = CL_DEVICE_TYPE_DEFAULT;
      if (a->GetDeviceInfo(devs[i], CL_DEVICE_NAME, sizeof c->name - 1, c->name, NULL) !=
          CL_SUCCESS)
        snprintf(c->name, sizeof c->name, "device %zu", nc);
      ++nc;
    }
  }
  tg_status st = TG_OK;
  size_t pick = nc;
  if (nc == 0) {
    st = tg__error(err, TG_ERROR_NO_DEVICE, "no OpenCL 1.2 device on %u platform(s)", (unsigned)np);
  } else if (want && *want) {
    if (all_digits(want)) {
      unsigned long idx = strtoul(want, NULL, 10);
      if (idx < nc) pick = (size_t)idx;
    } else {
      for (size_t i = 0; i < nc && pick == nc; ++i)
        if (contains_nocase(cands[i].name, want)) pick = i;
    }
    if (pick == nc)
      st =
          tg__error(err, TG_ERROR_NO_DEVICE, "no OpenCL device matches '%s' (%zu device(s), 0: %s)",
                    want, nc, cands[0].name);
  } else {
    for (size_t i = 0; i < nc && pick == nc; ++i)
      if (cands[i].type & CL_DEVICE_TYPE_GPU) pick = i;
    if (pick == nc) pick = 0;
  }
  if (st == TG_OK) {
    d->platform = cands[pick].platform;
    d->device = cands[pick].device;
  }
  tg__free(&d->alloc, cands);
  return st;
}

/* 1 when RGBA images of `channel` exist for `type`, 0 when not, -1 when out of host memory. */
static int format_supported(ocl_device *d, cl_mem_object_type type, cl_channel_type channel) {
  cl_uint n = 0;
  if (d->api.GetSupportedImageFormats(d->context, CL_MEM_READ_WRITE, type, 0, NULL, &n) !=
          CL_SUCCESS ||
      n == 0)
    return 0;
  cl_image_format *f = tg__calloc(&d->alloc, n, sizeof *f);
  if (f == NULL) return -1;
  int ok = 0;
  if (d->api.GetSupportedImageFormats(d->context, CL_MEM_READ_WRITE, type, n, f, NULL) ==
      CL_SUCCESS)
    for (cl_uint i = 0; i < n && !ok; ++i)
      ok = f[i].image_channel_order == CL_RGBA && f[i].image_channel_data_type == channel;
  tg__free(&d->alloc, f);
  return ok;
}

static void opencl_close(void *impl);
static tg_status describe(ocl_device *d, tg_device_info *info, tg_error_info *err);

static tg_status opencl_open(const tg_device_options *options, const tg_allocator *alloc,
                             void **impl, tg_device_info *info, tg_error_info *err) {
  ocl_device *d = tg__calloc(alloc, 1, sizeof *d);
  if (d == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  d->alloc = *alloc;
  tg_status st = tg__ocl_api_load(&d->api, NULL, err);
  if (st != TG_OK) {
    tg__free(alloc, d);
    return st;
  }
  const ocl_api *a = &d->api;
  if ((st = choose_device(d, options ? options->device : NULL, err)) != TG_OK) goto fail;

  cl_int e = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform, 0};
  d->context = a->CreateContext(props, 1, &d->device, NULL, NULL, &e);
  if (d->context == NULL || e != CL_SUCCESS) {
    /* The device exists but cannot be used: report it as unusable unless memory ran out. */
    st = tg__ocl_fail_cl(d, e != CL_SUCCESS ? e : CL_INVALID_CONTEXT);
    if (st != TG_ERROR_OUT_OF_HOST_MEMORY) st = TG_ERROR_NO_DEVICE;
    tg__error(err, st, "clCreateContext failed (%d)", (int)e);
    goto fail;
  }
  d->queue = a->CreateCommandQueue(d->context, d->device, 0, &e);
  if (d->queue == NULL || e != CL_SUCCESS) {
    st = tg__ocl_fail_cl(d, e != CL_SUCCESS ? e : CL_INVALID_COMMAND_QUEUE);
    if (st != TG_ERROR_OUT_OF_HOST_MEMORY) st = TG_ERROR_NO_DEVICE;
    tg__error(err, st, "clCreateCommandQueue failed (%d)", (int)e);
    goto fail;
  }
  cl_command_queue_properties qprops = 0;
  device_info(d, CL_DEVICE_QUEUE_PROPERTIES, &qprops, sizeof qprops);
  if (qprops & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
    d->ooo_queue =
        a->CreateCommandQueue(d->context, d->device, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &e);
    if (e != CL_SUCCESS) d->ooo_queue = NULL; /* not fatal: checks then run in order */
  }
  if ((st = describe(d, info, err)) != TG_OK) goto fail;
  *impl = d;
  return TG_OK;

fail:
  opencl_close(d);
  return st;
}

/* Fill `info` and the device's capabilities from d->device and d->context. */
static tg_status describe(ocl_device *d, tg_device_info *info, tg_error_info *err) {
  const ocl_api *a = &d->api;

  /* Description. */
  cl_device_type type = 0;
  cl_bool unified = CL_FALSE, image_support = CL_FALSE;
  device_info(d, CL_DEVICE_TYPE, &type, sizeof type);
  device_info(d, CL_DEVICE_HOST_UNIFIED_MEMORY, &unified, sizeof unified);
  device_info(d, CL_DEVICE_IMAGE_SUPPORT, &image_support, sizeof image_support);
  memset(info->name, 0, sizeof info->name);
  device_info(d, CL_DEVICE_NAME, info->name, sizeof info->name - 1);
  if (type & CL_DEVICE_TYPE_GPU)
    snprintf(info->kind, sizeof info->kind, "%s", unified ? "integrated-gpu" : "gpu");
  else if (type & CL_DEVICE_TYPE_CPU)
    snprintf(info->kind, sizeof info->kind, "cpu");
  else
    snprintf(info->kind, sizeof info->kind, "other");
  char pname[96] = {0}, pversion[128] = {0}, dversion[64] = {0};
  a->GetPlatformInfo(d->platform, CL_PLATFORM_NAME, sizeof pname - 1, pname, NULL);
  a->GetPlatformInfo(d->platform, CL_PLATFORM_VERSION, sizeof pversion - 1, pversion, NULL);
  device_info(d, CL_DRIVER_VERSION, dversion, sizeof dversion - 1);
  /* A driver string longer than the field is cut, visibly: it ends in "...". */
  if (snprintf(info->driver, sizeof info->driver, "%s, %s, driver %s", pname, pversion,
               dversion) >= (int)sizeof info->driver)
    memcpy(info->driver + sizeof info->driver - 4, "...", 4);

  char *extensions = NULL;
  size_t ext_len = 0;
  if (a->GetDeviceInfo(d->device, CL_DEVICE_EXTENSIONS, 0, NULL, &ext_len) == CL_SUCCESS &&
      ext_len > 0) {
    extensions = tg__calloc(&d->alloc, ext_len + 1, 1);
    if (extensions == NULL)
      return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    if (device_info(d, CL_DEVICE_EXTENSIONS, extensions, ext_len) != CL_SUCCESS)
      extensions[0] = '\0';
  }
  const char *ext = extensions ? extensions : "";

  d->base_alignment = device_uint(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8;
  if (d->base_alignment == 0) d->base_alignment = 1;
  d->images = image_support == CL_TRUE;
  static const cl_mem_object_type k_types[IMG_COUNT] = {
      CL_MEM_OBJECT_IMAGE2D, CL_MEM_OBJECT_IMAGE2D_ARRAY, CL_MEM_OBJECT_IMAGE3D};
  if (d->images)
    for (int t = 0; t < IMG_COUNT; ++t) {
      d->formats[t][TG_PRECISION_FP32] = format_supported(d, k_types[t], CL_FLOAT);
      d->formats[t][TG_PRECISION_FP16] = format_supported(d, k_types[t], CL_HALF_FLOAT);
      if (d->formats[t][TG_PRECISION_FP32] < 0 || d->formats[t][TG_PRECISION_FP16] < 0) {
        tg__free(&d->alloc, extensions);
        return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
      }
    }
  d->images = d->images && d->formats[IMG_2D][TG_PRECISION_FP32];
  d->image_3d_writes = has_extension(ext, "cl_khr_3d_image_writes");
  d->image2d_from_buffer = d->images && has_extension(ext, "cl_khr_image2d_from_buffer");
  if (d->image2d_from_buffer) {
    d->pitch_alignment = device_uint(d, OCL_DEVICE_IMAGE_PITCH_ALIGNMENT);
    d->image_base_alignment = device_uint(d, OCL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT);
    /* A driver that names the extension but reports no alignment cannot be used safely. */
    if (d->pitch_alignment == 0) d->image2d_from_buffer = 0;
    if (d->image_base_alignment == 0) d->image_base_alignment = 1;
  }
  tg__free(&d->alloc, extensions);

  info->limits.max_buffer_bytes = device_ulong(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  if (d->images) {
    info->limits.max_image_buffer_texels = device_size(d, CL_DEVICE_IMAGE_MAX_BUFFER_SIZE);
    d->max_image_buffer_texels = info->limits.max_image_buffer_texels;
    info->limits.max_texture_2d_width = device_size(d, CL_DEVICE_IMAGE2D_MAX_WIDTH);
    info->limits.max_texture_2d_height = device_size(d, CL_DEVICE_IMAGE2D_MAX_HEIGHT);
    info->limits.max_texture_3d_width = device_size(d, CL_DEVICE_IMAGE3D_MAX_WIDTH);
    info->limits.max_texture_3d_height = device_size(d, CL_DEVICE_IMAGE3D_MAX_HEIGHT);
    info->limits.max_texture_3d_depth = device_size(d, CL_DEVICE_IMAGE3D_MAX_DEPTH);
    info->limits.max_texture_array_layers = device_size(d, CL_DEVICE_IMAGE_MAX_ARRAY_SIZE);
  }
  d->limits = info->limits;
  info->memory_budget = device_ulong(d, CL_DEVICE_GLOBAL_MEM_SIZE);
  info->max_allocation = info->limits.max_buffer_bytes;
  info->buffer_alignment = d->base_alignment;
  {
    uint64_t ia = d->base_alignment;
    /* Arena images start at multiples of the image base alignment (in texels of up to 16 bytes). */
    if (d->image2d_from_buffer && d->image_base_alignment * 16 > ia)
      ia = d->image_base_alignment * 16;
    info->image_alignment = ia;
  }
  info->buffer_image_granularity = 1;
  info->images = d->images;
  info->fp16_images = d->images && d->formats[IMG_2D][TG_PRECISION_FP16] &&
                      d->formats[IMG_ARRAY][TG_PRECISION_FP16] &&
                      d->formats[IMG_3D][TG_PRECISION_FP16];
  info->image2d_from_buffer = d->image2d_from_buffer;
  info->arena_images = d->image2d_from_buffer;
  info->out_of_order = d->ooo_queue != NULL;
  info->read_write_images = 0; /* OpenCL 1.2: an image is read_only or write_only in a kernel */
  return TG_OK;
}

/* A device on the engine's objects (tangram/opencl.h): the same state as opencl_open's, with
 * the engine's context, device and queue in place of created ones, after checking that they
 * belong together. */
/* A refusal of the engine's objects in tg__opencl_wrap: the driver's code `e` (CL_SUCCESS:
 * none) kept for native_error(), `err` saying why, then the cleanup at `fail`. */
#define REFUSE(status, e, ...)                       \
  do {                                               \
    if ((e) != CL_SUCCESS) d->last_error = (e);      \
    st = tg__error(err, (status), __VA_ARGS__);      \
    goto fail;                                       \
  } while (0)

tg_status tg__opencl_wrap(const void *borrowed, const tg_device_options *options,
                          const tg_allocator *alloc, void **impl, tg_device_info *info,
                          tg_error_info *err) {
  (void)options;
  const tg_opencl_device_desc *desc = borrowed;
  if (desc == NULL || desc->context == NULL || desc->device == NULL || desc->queue == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                     "OpenCL device: the context, device and queue are all required");
  ocl_device *d = tg__calloc(alloc, 1, sizeof *d);
  if (d == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  d->alloc = *alloc;
  d->borrowed = 1; /* from here on, close() releases nothing borrowed */
  tg_status st = tg__ocl_api_load(&d->api, desc->library, err);
  if (st != TG_OK) {
    tg__free(alloc, d);
    return st;
  }
  const ocl_api *a = &d->api;
  cl_device_id *devices = NULL;
  cl_int e;
  /* The device must be one of the context's. */
  size_t bytes = 0;
  e = a->GetContextInfo(desc->context, CL_CONTEXT_DEVICES, 0, NULL, &bytes);
  if (e != CL_SUCCESS || bytes < sizeof *devices)
    REFUSE(TG_ERROR_INVALID_ARGUMENT, e,
           "OpenCL device: desc->context is not a usable cl_context (clGetContextInfo: %d)", (int)e);
  size_t ndev = bytes / sizeof *devices, found = 0;
  devices = tg__calloc(alloc, ndev, sizeof *devices);
  if (devices == NULL) REFUSE(TG_ERROR_OUT_OF_HOST_MEMORY, CL_SUCCESS, "out of host memory");
  if ((e = a->GetContextInfo(desc->context, CL_CONTEXT_DEVICES, ndev * sizeof *devices, devices,
                             NULL)) != CL_SUCCESS)
    REFUSE(TG_ERROR_INVALID_ARGUMENT, e,
           "OpenCL device: desc->context is not a usable cl_context "
           "(clGetContextInfo: %d)", (int)e);
  for (size_t i = 0; i < ndev && !found; ++i) found = devices[i] == desc->device;
  tg__free(alloc, devices);
  devices = NULL;
  if (!found)
    REFUSE(TG_ERROR_INVALID_ARGUMENT, CL_SUCCESS,
           "OpenCL device: desc->device is not one of the %zu device(s) of desc->context", ndev);
  /* The queue must be a host queue of that context, on that device. */
  cl_context qcontext = NULL;
  cl_device_id qdevice = NULL;
  cl_command_queue_properties qprops = 0;
  if ((e = a->GetCommandQueueInfo(desc->queue, CL_QUEUE_CONTEXT, sizeof qcontext, &qcontext,
                                  NULL)) != CL_SUCCESS ||
      (e = a->GetCommandQueueInfo(desc->queue, CL_QUEUE_DEVICE, sizeof qdevice, &qdevice, NULL)) !=
          CL_SUCCESS ||
      (e = a->GetCommandQueueInfo(desc->queue, CL_QUEUE_PROPERTIES, sizeof qprops, &qprops,
                                  NULL)) != CL_SUCCESS)
    REFUSE(TG_ERROR_INVALID_ARGUMENT, e,
           "OpenCL device: desc->queue is not a usable cl_command_queue "
           "(clGetCommandQueueInfo: %d)", (int)e);
  if (qcontext != desc->context)
    REFUSE(TG_ERROR_INVALID_ARGUMENT, CL_SUCCESS,
           "OpenCL device: desc->queue belongs to another cl_context than desc->context");
  if (qdevice != desc->device)
    REFUSE(TG_ERROR_INVALID_ARGUMENT, CL_SUCCESS,
           "OpenCL device: desc->queue is on another device of the context than desc->device");
  if (qprops & OCL_QUEUE_ON_DEVICE)
    REFUSE(TG_ERROR_INVALID_ARGUMENT, CL_SUCCESS,
           "OpenCL device: desc->queue is an on-device queue; a host queue is needed");
  char version[256] = {0};
  if ((e = a->GetDeviceInfo(desc->device, CL_DEVICE_VERSION, sizeof version - 1, version, NULL)) !=
      CL_SUCCESS)
    REFUSE(TG_ERROR_INVALID_ARGUMENT, e,
           "OpenCL device: desc->device is not a usable cl_device_id (clGetDeviceInfo: %d)",
           (int)e);
  if (parse_version(version) < 102)
    REFUSE(TG_ERROR_UNSUPPORTED, CL_SUCCESS,
           "OpenCL device: desc->device is '%s'; OpenCL 1.2 or later is needed", version);
  if ((e = a->GetDeviceInfo(desc->device, CL_DEVICE_PLATFORM, sizeof d->platform, &d->platform,
                            NULL)) != CL_SUCCESS)
    REFUSE(TG_ERROR_INVALID_ARGUMENT, e,
           "OpenCL device: desc->device has no platform (clGetDeviceInfo: %d)", (int)e);
  d->context = desc->context;
  d->device = desc->device;
  d->queue = desc->queue;
  if (qprops & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
    /* One queue for both kinds of check: in order, a barrier follows each command. */
    d->ooo_queue = desc->queue;
    d->queue_ooo = 1;
  }
  if ((st = describe(d, info, err)) != TG_OK) goto fail;
  *impl = d;
  return TG_OK;

fail:
  tg__free(alloc, devices);
  opencl_close(d);
  return st;
}
#undef REFUSE

static void opencl_close(void *impl) {
  ocl_device *d = impl;
  if (d == NULL) return;
  const ocl_api *a = &d->api;
  if (a->library) {
    /* A borrowed queue is the engine's: drained only if a check was left running. */
    if (!d->borrowed || d->checking) {
      if (d->queue) a->Finish(d->queue);
      if (d->ooo_queue && d->ooo_queue != d->queue) a->Finish(d->ooo_queue);
    }
    tg__ocl_check_reset(d);
    if (d->profiling_queue) a->Finish(d->profiling_queue);
    for (size_t i = 0; i < d->proxy_event_count; ++i) a->ReleaseEvent(d->proxy_events[i]);
    tg__ocl_proxy_release(d);
    if (d->profiling_queue) a->ReleaseCommandQueue(d->profiling_queue);
    if (d->dummy) a->ReleaseMemObject(d->dummy);
    if (d->counters) a->ReleaseMemObject(d->counters);
    for (int k = 0; k < K_COUNT; ++k)
      if (d->kernels[k]) a->ReleaseKernel(d->kernels[k]);
    if (d->program) a->ReleaseProgram(d->program);
    if (!d->borrowed) { /* what was borrowed is never released */
      if (d->ooo_queue) a->ReleaseCommandQueue(d->ooo_queue);
      if (d->queue) a->ReleaseCommandQueue(d->queue);
      if (d->context) a->ReleaseContext(d->context);
    }
    dlclose(a->library);
  }
  tg_allocator alloc = d->alloc;
  tg__free(&alloc, d->op_access_start);
  tg__free(&alloc, d->op_wait_start);
  tg__free(&alloc, d->accesses);
  tg__free(&alloc, d->waits);
  tg__free(&alloc, d->events);
  tg__free(&alloc, d->scratch_events);
  tg__free(&alloc, d->proxy_events);
  tg__free(&alloc, d->proxy_event_ops);
  tg__free(&alloc, d);
}

static int64_t opencl_native_error(void *impl) { return ((ocl_device *)impl)->last_error; }

/* ------------------------------------------------------------------------------------------ */

static const tg__backend_vtable k_opencl = {
    TG_BACKEND_OPENCL,
    opencl_open,
    opencl_close,
    opencl_native_error,
    NULL,
    tg__ocl_requirements,
    tg__ocl_allocate,
    tg__ocl_release,
    tg__ocl_bind,
    tg__ocl_unbind,
    tg__ocl_handle,
    tg__ocl_check_begin,
    tg__ocl_check_op,
    tg__ocl_check_end,
    tg__ocl_check_abort,
    tg__ocl_allocate_shared,
    tg__ocl_map,
    tg__ocl_unmap,
    tg__ocl_check_sync,
    tg__ocl_speed_begin,
    tg__ocl_speed_dispatch,
    tg__ocl_speed_end,
    tg__ocl_speed_abort,
};

const tg__backend_vtable *tg__opencl_backend(void) { return &k_opencl; }

tg_status tg__opencl_debug_counts_impl(const void *impl, uint64_t *live, uint64_t *created) {
  const ocl_device *d = impl;
  if (d == NULL) return TG_ERROR_INVALID_ARGUMENT;
  if (live) *live = d->live_mem_objects;
  if (created) *created = d->mem_objects_created;
  return TG_OK;
}

tg_status tg__opencl_debug_hide_images_impl(void *impl) {
  ocl_device *d = impl;
  if (d == NULL) return TG_ERROR_INVALID_ARGUMENT;
  d->images = d->image2d_from_buffer = d->image_3d_writes = 0;
  d->max_image_buffer_texels = 0;
  memset(d->formats, 0, sizeof d->formats);
  return TG_OK;
}
