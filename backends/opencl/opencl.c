/* The OpenCL backend. libOpenCL (the ICD loader, or a vendor library on Android) is opened at
 * run time, so the library links nothing from OpenCL and a machine without a driver simply
 * reports TG_ERROR_NO_LOADER / TG_ERROR_NO_DEVICE.
 *
 * Realisation:
 *   objects mode  one cl_mem per shared object: a buffer of the object's bytes, or an RGBA
 *                 image (2D, 2D array with extent.d layers, 3D) of the object's extent. A tensor
 *                 uses the start of its object (buffers) or the texels [0, extent) of it
 *                 (images, addressed with the object's pitch as on the host backend); it gets a
 *                 view struct but no cl_mem of its own.
 *   offsets mode  one parent buffer; each tensor is a sub-buffer at its planned offset, which
 *                 must be a multiple of CL_DEVICE_MEM_BASE_ADDR_ALIGN. 2D images inside the
 *                 arena only with cl_khr_image2d_from_buffer (an image over a sub-buffer).
 *   image_buffer  treated as a plain buffer (its bytes): a caller that wants an image1d_buffer
 *                 creates one over the tensor's buffer. Drivers differ in whether a 1D image
 *                 may sit on a sub-buffer (PoCL refuses), so the realisation does not depend
 *                 on it. The speed proxies make one when they first touch the tensor: over
 *                 the object (objects mode) or over the arena at the tensor's texel (offsets
 *                 mode), the tensor's texels wide.
 *
 * Shadow run: OpenCL C kernels write and verify tg_signature_word / tg_signature_texel and
 * count mismatches per record with 32-bit atomics into a counter buffer (two words per record
 * make a 64-bit count without needing 64-bit atomics). In order: one in-order queue. Out of
 * order: an out-of-order queue where each op's kernels wait on the events of the ops it must
 * wait for, submitted in a legal order of those waits that starts later ops as early as
 * possible, so a missing wait reorders memory reuse deterministically instead of depending on
 * the driver's thread timing.
 *
 * Borrowed devices (tangram/opencl.h, tg__opencl_wrap): the engine's context, device and
 * queue take the place of created ones and are never released. Its one queue serves both
 * kinds of check: an in-order queue gives in-order checks only; an out-of-order one gives
 * both, with a barrier after each command of an in-order check. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __APPLE__
#include <OpenCL/cl.h>
#else
#include <CL/cl.h>
#endif

#include "backends/protocol.h"
#include "backends/opencl/opencl_internal.h"
#include "tangram/opencl.h"

/* Queries from OpenCL 2.0 / extensions, by value so the 1.2 headers suffice. */
#define OCL_PLATFORM_NOT_FOUND_KHR (-1001)
#define OCL_DEVICE_IMAGE_PITCH_ALIGNMENT 0x104A
#define OCL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT 0x104B
#define OCL_QUEUE_ON_DEVICE (1 << 2)

_Static_assert(sizeof(void *) == sizeof(void (*)(void)),
               "dlsym results are copied into function pointers");

/* ------------------------------------------------------------------------------------------ */
/* Entry points. One table per device: no process-wide state. */

typedef struct ocl_api {
  void *library;
  cl_int(CL_API_CALL *GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
  cl_int(CL_API_CALL *GetPlatformInfo)(cl_platform_id, cl_platform_info, size_t, void *, size_t *);
  cl_int(CL_API_CALL *GetDeviceIDs)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *,
                                    cl_uint *);
  cl_int(CL_API_CALL *GetDeviceInfo)(cl_device_id, cl_device_info, size_t, void *, size_t *);
  cl_context(CL_API_CALL *CreateContext)(
      const cl_context_properties *, cl_uint, const cl_device_id *,
      void(CL_CALLBACK *)(const char *, const void *, size_t, void *), void *, cl_int *);
  cl_int(CL_API_CALL *ReleaseContext)(cl_context);
  cl_int(CL_API_CALL *GetContextInfo)(cl_context, cl_context_info, size_t, void *, size_t *);
  cl_command_queue(CL_API_CALL *CreateCommandQueue)(cl_context, cl_device_id,
                                                    cl_command_queue_properties, cl_int *);
  cl_int(CL_API_CALL *ReleaseCommandQueue)(cl_command_queue);
  cl_int(CL_API_CALL *GetCommandQueueInfo)(cl_command_queue, cl_command_queue_info, size_t, void *,
                                           size_t *);
  cl_int(CL_API_CALL *GetSupportedImageFormats)(cl_context, cl_mem_flags, cl_mem_object_type,
                                                cl_uint, cl_image_format *, cl_uint *);
  cl_mem(CL_API_CALL *CreateBuffer)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
  cl_mem(CL_API_CALL *CreateSubBuffer)(cl_mem, cl_mem_flags, cl_buffer_create_type, const void *,
                                       cl_int *);
  cl_mem(CL_API_CALL *CreateImage)(cl_context, cl_mem_flags, const cl_image_format *,
                                   const cl_image_desc *, void *, cl_int *);
  cl_int(CL_API_CALL *ReleaseMemObject)(cl_mem);
  cl_program(CL_API_CALL *CreateProgramWithSource)(cl_context, cl_uint, const char **,
                                                   const size_t *, cl_int *);
  cl_int(CL_API_CALL *BuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *,
                                    void(CL_CALLBACK *)(cl_program, void *), void *);
  cl_int(CL_API_CALL *GetProgramBuildInfo)(cl_program, cl_device_id, cl_program_build_info, size_t,
                                           void *, size_t *);
  cl_int(CL_API_CALL *ReleaseProgram)(cl_program);
  cl_kernel(CL_API_CALL *CreateKernel)(cl_program, const char *, cl_int *);
  cl_int(CL_API_CALL *ReleaseKernel)(cl_kernel);
  cl_int(CL_API_CALL *SetKernelArg)(cl_kernel, cl_uint, size_t, const void *);
  cl_int(CL_API_CALL *GetKernelWorkGroupInfo)(cl_kernel, cl_device_id, cl_kernel_work_group_info,
                                              size_t, void *, size_t *);
  cl_int(CL_API_CALL *EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t *,
                                            const size_t *, const size_t *, cl_uint,
                                            const cl_event *, cl_event *);
  cl_int(CL_API_CALL *EnqueueMarkerWithWaitList)(cl_command_queue, cl_uint, const cl_event *,
                                                 cl_event *);
  cl_int(CL_API_CALL *EnqueueBarrierWithWaitList)(cl_command_queue, cl_uint, const cl_event *,
                                                  cl_event *);
  cl_int(CL_API_CALL *EnqueueFillBuffer)(cl_command_queue, cl_mem, const void *, size_t, size_t,
                                         size_t, cl_uint, const cl_event *, cl_event *);
  cl_int(CL_API_CALL *EnqueueFillImage)(cl_command_queue, cl_mem, const void *, const size_t *,
                                        const size_t *, cl_uint, const cl_event *, cl_event *);
  cl_int(CL_API_CALL *EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *,
                                         cl_uint, const cl_event *, cl_event *);
  cl_int(CL_API_CALL *Flush)(cl_command_queue);
  cl_int(CL_API_CALL *Finish)(cl_command_queue);
  cl_int(CL_API_CALL *ReleaseEvent)(cl_event);
  cl_int(CL_API_CALL *GetEventProfilingInfo)(cl_event, cl_profiling_info, size_t, void *, size_t *);
  void *(CL_API_CALL *EnqueueMapBuffer)(cl_command_queue, cl_mem, cl_bool, cl_map_flags, size_t,
                                        size_t, cl_uint, const cl_event *, cl_event *, cl_int *);
  cl_int(CL_API_CALL *EnqueueUnmapMemObject)(cl_command_queue, cl_mem, void *, cl_uint,
                                             const cl_event *, cl_event *);
} ocl_api;

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
static tg_status api_load(ocl_api *api, const char *library, tg_error_info *err) {
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
/* State. */

enum {
  K_BUFFER_VERIFY,
  K_BUFFER_WRITE,
  K_IMAGE2D_VERIFY,
  K_IMAGE2D_WRITE,
  K_ARRAY_VERIFY,
  K_ARRAY_WRITE,
  K_IMAGE3D_VERIFY,
  K_IMAGE3D_WRITE,
  K_COUNT
};
static const char *const k_kernel_names[K_COUNT] = {
    "tg_buffer_verify", "tg_buffer_write", "tg_image2d_verify", "tg_image2d_write",
    "tg_array_verify",  "tg_array_write",  "tg_image3d_verify", "tg_image3d_write"};

/* Image kinds, for format support. */
enum { IMG_2D, IMG_ARRAY, IMG_3D, IMG_COUNT };

typedef struct ocl_memory {
  cl_mem mem; /* NULL for an empty allocation */
  tg_storage storage;
  tg_extent extent; /* images: the object's extent */
  uint64_t bytes;
  int arena;
  uint64_t filled_for; /* the check that last reset this memory to the fresh pattern */
  int shared;          /* CL_MEM_ALLOC_HOST_PTR: the host maps it; checks never reset it */
  void *mapped;        /* while mapped: the host pointer */
} ocl_memory;

typedef struct ocl_view {
  ocl_memory *memory;
  cl_mem mem; /* what kernels use: the object itself, a sub-buffer or an image */
  cl_mem sub; /* arena images: the sub-buffer under `mem` */
  int owned;  /* `mem` (and `sub`) were created for this view */
  uint64_t offset;
  cl_mem ib;  /* image_buffer tensors the speed proxies touched: their image1d_buffer */
  cl_int ib_base; /* its texel 0 is this texel of `ib` */
} ocl_view;

/* One access of a deferred out-of-order op. */
typedef struct ocl_access {
  const ocl_view *view;
  const tg_tensor_resource *resource;
  uint32_t record;
  uint32_t signature_id;
  int write;
} ocl_access;

typedef struct ocl_device {
  tg_allocator alloc;
  ocl_api api;
  cl_platform_id platform;
  cl_device_id device;
  cl_context context;
  cl_command_queue queue;     /* in order (borrowed: the engine's queue, maybe out of order) */
  cl_command_queue ooo_queue; /* out of order, when the device has one (borrowed: = queue) */
  int borrowed;               /* context and queue are the engine's: never released */
  int queue_ooo;              /* `queue` is out of order: a barrier follows each command */
  cl_program program;         /* built on first check, kept for the device's life */
  cl_kernel kernels[K_COUNT];
  size_t local[K_COUNT][3]; /* work-group size of each kernel */
  cl_int last_error;
  uint64_t base_alignment;       /* CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes */
  uint64_t pitch_alignment;      /* image2d_from_buffer row pitch alignment in texels */
  uint64_t image_base_alignment; /* image2d_from_buffer base alignment in texels */
  int images;
  int image2d_from_buffer;
  int image_3d_writes;
  uint64_t max_image_buffer_texels; /* CL_DEVICE_IMAGE_MAX_BUFFER_SIZE (0: no images) */
  int formats[IMG_COUNT][TG_PRECISION_COUNT]; /* RGBA of that precision supported */
  tg_device_limits limits;
  uint64_t live_mem_objects; /* cl_mem of realisations not yet released */
  uint64_t mem_objects_created;

  /* Shadow run. */
  tg_precision precision;
  size_t record_count;
  size_t op_count;
  int out_of_order;
  int checking;
  uint64_t check_serial;    /* numbers checks, so each resets its memory once */
  cl_mem counters;          /* 2 uints per record */
  size_t counters_capacity; /* records */
  uint64_t checked_bytes;
  /* Out of order: ops recorded by check_op and submitted by check_end. */
  size_t *op_access_start; /* op_count + 1 */
  size_t *op_wait_start;   /* op_count + 1 */
  size_t ops_seen;         /* ops recorded so far (ops are recorded in increasing order) */
  ocl_access *accesses;
  size_t access_count, access_capacity;
  uint32_t *waits;
  size_t wait_count, wait_capacity;
  cl_event *events; /* op_count: each op's completion (NULL = nothing to wait for) */
  cl_event *scratch_events;
  size_t scratch_capacity;
  size_t submitted; /* out of order: ops [0, submitted) are on the queue (check_sync) */

  /* Proxy runs. */
  cl_program proxy_programs[TG_PRECISION_COUNT];
  cl_kernel proxy_kernels[TG_PRECISION_COUNT][5][5]; /* [precision][output kind][input kind] */
  cl_command_queue profiling_queue;                  /* created on the first timed run */
  cl_mem dummy;                                      /* stands for absent inputs */
  tg_precision proxy_precision;
  int proxy_timed;
  size_t proxy_op_count;
  cl_event *proxy_events;
  size_t *proxy_event_ops;
  size_t proxy_event_count, proxy_event_capacity, proxy_event_op_capacity;
} ocl_device;

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
static tg_status fail_cl(ocl_device *d, cl_int e) {
  d->last_error = e;
  return map_cl(e);
}

/* ------------------------------------------------------------------------------------------ */
/* Kernels. Signatures are those of tg_signature_word / tg_signature_texel, bit for bit: all
 * arithmetic is on 32-bit unsigned integers, which wrap identically on host and device. */

/* clang-format off */
static const char k_kernel_source[] =
    "uint tg_sig(uint id, uint index) {\n"
    "  uint x = id * 0x9E3779B1u + index * 0x85EBCA77u + 0x27D4EB2Fu;\n"
    "  x ^= x >> 15;\n"
    "  x *= 0x2C1B3C6Du;\n"
    "  x ^= x >> 12;\n"
    "  x *= 0x297A2D39u;\n"
    "  x ^= x >> 15;\n"
    "  return x;\n"
    "}\n"
    "float tg_texel(uint id, uint index) { return (float)(tg_sig(id, index) & 0x3FFu); }\n"
    "float4 tg_texel4(uint id, uint base) {\n"
    "  return (float4)(tg_texel(id, base), tg_texel(id, base + 1u), tg_texel(id, base + 2u),\n"
    "                  tg_texel(id, base + 3u));\n"
    "}\n"
    "uint tg_bad4(float4 v, float4 w) {\n"
    "  return (uint)(v.x != w.x) + (uint)(v.y != w.y) + (uint)(v.z != w.z) + (uint)(v.w != w.w);\n"
    "}\n"
    "/* A 64-bit count from two 32-bit words: the high word takes the carry. */\n"
    "void tg_count(__global uint *counts, uint record, uint n) {\n"
    "  if (n == 0u) return;\n"
    "  uint old = atomic_add(&counts[2u * record], n);\n"
    "  if (old + n < old) atomic_inc(&counts[2u * record + 1u]);\n"
    "}\n"
    "__kernel void tg_buffer_verify(__global const uchar *data, uint words, uint tail, uint id,\n"
    "                               uint record, __global uint *counts) {\n"
    "  uint i = (uint)get_global_id(0);\n"
    "  uint bad = 0u;\n"
    "  if (i < words) bad = ((__global const uint *)data)[i] != tg_sig(id, i);\n"
    "  else if (i - words < tail) bad = data[4u * words + (i - words)] != (uchar)tg_sig(id, i);\n"
    "  tg_count(counts, record, bad);\n"
    "}\n"
    "__kernel void tg_buffer_write(__global uchar *data, uint words, uint tail, uint id) {\n"
    "  uint i = (uint)get_global_id(0);\n"
    "  if (i < words) ((__global uint *)data)[i] = tg_sig(id, i);\n"
    "  else if (i - words < tail) data[4u * words + (i - words)] = (uchar)tg_sig(id, i);\n"
    "}\n"
    "#ifdef TG_IMAGES\n"
    "/* Work-groups have a fixed size, so the grid is rounded up: items outside do nothing. */\n"
    "#define TG_XYZ                                                    \\\n"
    "  uint x = (uint)get_global_id(0), y = (uint)get_global_id(1);     \\\n"
    "  uint z = (uint)get_global_id(2);                                 \\\n"
    "  if (x >= w || y >= h || z >= d) return;\n"
    "#define TG_BASE (((z * h + y) * w + x) * 4u)\n"
    "__kernel void tg_image2d_verify(__read_only image2d_t img, uint w, uint h, uint d, uint id,\n"
    "                                uint record, __global uint *counts) {\n"
    "  TG_XYZ\n"
    "  float4 v = read_imagef(img, (int2)((int)x, (int)y));\n"
    "  tg_count(counts, record, tg_bad4(v, tg_texel4(id, TG_BASE)));\n"
    "}\n"
    "__kernel void tg_image2d_write(__write_only image2d_t img, uint w, uint h, uint d,\n"
    "                             uint id) {\n"
    "  TG_XYZ\n"
    "  write_imagef(img, (int2)((int)x, (int)y), tg_texel4(id, TG_BASE));\n"
    "}\n"
    "__kernel void tg_array_verify(__read_only image2d_array_t img, uint w, uint h, uint d,\n"
    "                              uint id, uint record, __global uint *counts) {\n"
    "  TG_XYZ\n"
    "  float4 v = read_imagef(img, (int4)((int)x, (int)y, (int)z, 0));\n"
    "  tg_count(counts, record, tg_bad4(v, tg_texel4(id, TG_BASE)));\n"
    "}\n"
    "__kernel void tg_array_write(__write_only image2d_array_t img, uint w, uint h, uint d,\n"
    "                             uint id) {\n"
    "  TG_XYZ\n"
    "  write_imagef(img, (int4)((int)x, (int)y, (int)z, 0), tg_texel4(id, TG_BASE));\n"
    "}\n"
    "__kernel void tg_image3d_verify(__read_only image3d_t img, uint w, uint h, uint d, uint id,\n"
    "                                uint record, __global uint *counts) {\n"
    "  TG_XYZ\n"
    "  float4 v = read_imagef(img, (int4)((int)x, (int)y, (int)z, 0));\n"
    "  tg_count(counts, record, tg_bad4(v, tg_texel4(id, TG_BASE)));\n"
    "}\n"
    "#ifdef TG_3D_WRITES\n"
    "#pragma OPENCL EXTENSION cl_khr_3d_image_writes : enable\n"
    "__kernel void tg_image3d_write(__write_only image3d_t img, uint w, uint h, uint d,\n"
    "                             uint id) {\n"
    "  TG_XYZ\n"
    "  write_imagef(img, (int4)((int)x, (int)y, (int)z, 0), tg_texel4(id, TG_BASE));\n"
    "}\n"
    "#endif\n"
    "#endif\n";
/* clang-format on */

static tg_status build_program(ocl_device *d) {
  if (d->program) return TG_OK;
  const ocl_api *a = &d->api;
  cl_int e = CL_SUCCESS;
  const char *src = k_kernel_source;
  size_t len = sizeof k_kernel_source - 1;
  cl_program prog = a->CreateProgramWithSource(d->context, 1, &src, &len, &e);
  if (prog == NULL || e != CL_SUCCESS)
    return fail_cl(d, e != CL_SUCCESS ? e : CL_OUT_OF_HOST_MEMORY);
  char options[128];
  snprintf(options, sizeof options, "-cl-std=CL1.2%s%s", d->images ? " -DTG_IMAGES" : "",
           d->images && d->image_3d_writes ? " -DTG_3D_WRITES" : "");
  e = a->BuildProgram(prog, 1, &d->device, options, NULL, NULL);
  if (e != CL_SUCCESS) {
    a->ReleaseProgram(prog);
    return fail_cl(d, e);
  }
  cl_kernel kernels[K_COUNT] = {0};
  for (int k = 0; k < K_COUNT; ++k) {
    int image = k >= K_IMAGE2D_VERIFY;
    if (image && !d->images) continue;
    if (k == K_IMAGE3D_WRITE && !d->image_3d_writes) continue;
    kernels[k] = a->CreateKernel(prog, k_kernel_names[k], &e);
    if (kernels[k] == NULL || e != CL_SUCCESS) {
      for (int j = 0; j < k; ++j)
        if (kernels[j]) a->ReleaseKernel(kernels[j]);
      a->ReleaseProgram(prog);
      return fail_cl(d, e != CL_SUCCESS ? e : CL_INVALID_KERNEL);
    }
  }
  d->program = prog;
  memcpy(d->kernels, kernels, sizeof kernels);
  /* Fixed work-group sizes (64 items: 64, or 8x8x1): a driver that compiles one variant per
   * work-group size (PoCL) then compiles each kernel once, instead of once per tensor shape. */
  size_t items[16] = {0}, device_max = 0; /* 0: not reported, no per-dimension limit */
  if (a->GetDeviceInfo(d->device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, NULL) !=
      CL_SUCCESS)
    memset(items, 0, sizeof items);
  a->GetDeviceInfo(d->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof device_max, &device_max, NULL);
  for (int k = 0; k < K_COUNT; ++k) {
    size_t limit = device_max ? device_max : 1, kmax = 0;
    if (kernels[k] &&
        a->GetKernelWorkGroupInfo(kernels[k], d->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax,
                                  &kmax, NULL) == CL_SUCCESS &&
        kmax > 0 && kmax < limit)
      limit = kmax;
    size_t *l = d->local[k];
    if (k < K_IMAGE2D_VERIFY) {
      l[0] = 64;
      l[1] = l[2] = 1;
    } else {
      l[0] = l[1] = 8;
      l[2] = 1;
    }
    for (int i = 0; i < 3; ++i)
      if (items[i] && l[i] > items[i]) l[i] = items[i];
    while (l[0] * l[1] * l[2] > limit) {
      if (l[1] >= l[0] && l[1] > 1)
        l[1] /= 2;
      else if (l[0] > 1)
        l[0] /= 2;
      else
        break;
    }
  }
  return TG_OK;
}

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
  tg_status st = api_load(&d->api, NULL, err);
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
    st = fail_cl(d, e != CL_SUCCESS ? e : CL_INVALID_CONTEXT);
    if (st != TG_ERROR_OUT_OF_HOST_MEMORY) st = TG_ERROR_NO_DEVICE;
    tg__error(err, st, "clCreateContext failed (%d)", (int)e);
    goto fail;
  }
  d->queue = a->CreateCommandQueue(d->context, d->device, 0, &e);
  if (d->queue == NULL || e != CL_SUCCESS) {
    st = fail_cl(d, e != CL_SUCCESS ? e : CL_INVALID_COMMAND_QUEUE);
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
  tg_status st = api_load(&d->api, desc->library, err);
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
  if (e != CL_SUCCESS || bytes < sizeof *devices) {
    d->last_error = e;
    st = tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                   "OpenCL device: desc->context is not a usable cl_context "
                   "(clGetContextInfo: %d)",
                   (int)e);
    goto fail;
  }
  size_t ndev = bytes / sizeof *devices, found = 0;
  devices = tg__calloc(alloc, ndev, sizeof *devices);
  if (devices == NULL) {
    st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    goto fail;
  }
  if ((e = a->GetContextInfo(desc->context, CL_CONTEXT_DEVICES, ndev * sizeof *devices, devices,
                             NULL)) != CL_SUCCESS) {
    d->last_error = e;
    st = tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                   "OpenCL device: desc->context is not a usable cl_context "
                   "(clGetContextInfo: %d)",
                   (int)e);
    goto fail;
  }
  for (size_t i = 0; i < ndev && !found; ++i) found = devices[i] == desc->device;
  tg__free(alloc, devices);
  devices = NULL;
  if (!found) {
    st = tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                   "OpenCL device: desc->device is not one of the %zu device(s) of desc->context",
                   ndev);
    goto fail;
  }
  /* The queue must be a host queue of that context, on that device. */
  cl_context qcontext = NULL;
  cl_device_id qdevice = NULL;
  cl_command_queue_properties qprops = 0;
  if ((e = a->GetCommandQueueInfo(desc->queue, CL_QUEUE_CONTEXT, sizeof qcontext, &qcontext,
                                  NULL)) != CL_SUCCESS ||
      (e = a->GetCommandQueueInfo(desc->queue, CL_QUEUE_DEVICE, sizeof qdevice, &qdevice, NULL)) !=
          CL_SUCCESS ||
      (e = a->GetCommandQueueInfo(desc->queue, CL_QUEUE_PROPERTIES, sizeof qprops, &qprops,
                                  NULL)) != CL_SUCCESS) {
    d->last_error = e;
    st = tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                   "OpenCL device: desc->queue is not a usable cl_command_queue "
                   "(clGetCommandQueueInfo: %d)",
                   (int)e);
    goto fail;
  }
  if (qcontext != desc->context) {
    st = tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                   "OpenCL device: desc->queue belongs to another cl_context than desc->context");
    goto fail;
  }
  if (qdevice != desc->device) {
    st = tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                   "OpenCL device: desc->queue is on another device of the context than "
                   "desc->device");
    goto fail;
  }
  if (qprops & OCL_QUEUE_ON_DEVICE) {
    st = tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                   "OpenCL device: desc->queue is an on-device queue; a host queue is needed");
    goto fail;
  }
  char version[256] = {0};
  if ((e = a->GetDeviceInfo(desc->device, CL_DEVICE_VERSION, sizeof version - 1, version, NULL)) !=
      CL_SUCCESS) {
    d->last_error = e;
    st = tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                   "OpenCL device: desc->device is not a usable cl_device_id "
                   "(clGetDeviceInfo: %d)",
                   (int)e);
    goto fail;
  }
  if (parse_version(version) < 102) {
    st = tg__error(err, TG_ERROR_UNSUPPORTED,
                   "OpenCL device: desc->device is '%s'; OpenCL 1.2 or later is needed", version);
    goto fail;
  }
  if ((e = a->GetDeviceInfo(desc->device, CL_DEVICE_PLATFORM, sizeof d->platform, &d->platform,
                            NULL)) != CL_SUCCESS) {
    d->last_error = e;
    st = tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                   "OpenCL device: desc->device has no platform (clGetDeviceInfo: %d)", (int)e);
    goto fail;
  }
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

static void check_reset(ocl_device *d);
static void proxy_release(ocl_device *d);

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
    check_reset(d);
    if (d->profiling_queue) a->Finish(d->profiling_queue);
    for (size_t i = 0; i < d->proxy_event_count; ++i) a->ReleaseEvent(d->proxy_events[i]);
    proxy_release(d);
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
/* Resources. */

static int image_kind(tg_storage s) {
  switch (s) {
    case TG_STORAGE_TEXTURE_2D:
    case TG_STORAGE_SINGLE_TEXTURE_2D:
      return IMG_2D;
    case TG_STORAGE_TEXTURE_ARRAY:
      return IMG_ARRAY;
    case TG_STORAGE_TEXTURE_3D:
      return IMG_3D;
    default:
      return -1;
  }
}

/* Row pitch and bytes of a 2D image over a buffer (cl_khr_image2d_from_buffer). */
static int from_buffer_layout(const ocl_device *d, const tg_extent *e, tg_precision p,
                              uint64_t *pitch, uint64_t *bytes) {
  uint64_t tb = tg__texel_bytes(p), row;
  if (!tg__mul_u64(e->w, tb, &row) || !tg__align_up(row, d->pitch_alignment * tb, pitch) ||
      !tg__mul_u64(*pitch, e->h, bytes))
    return 0;
  return 1;
}

static tg_status opencl_requirements(void *impl, const tg_tensor_resource *r, tg_precision p,
                                     tg_resource_requirements *out) {
  ocl_device *d = impl;
  out->alignment = d->base_alignment;
  out->linear = 1;
  int kind = image_kind(r->storage);
  if (kind < 0) {
    out->size = r->bytes;
    return TG_OK;
  }
  out->linear = 0;
  if (kind == IMG_2D && d->image2d_from_buffer && r->extent.d <= 1) {
    uint64_t pitch;
    if (!from_buffer_layout(d, &r->extent, p, &pitch, &out->size)) return TG_ERROR_OVERFLOW;
    uint64_t ia = d->image_base_alignment * tg__texel_bytes(p);
    if (ia > out->alignment) out->alignment = ia;
    return TG_OK;
  }
  /* Not placeable in an arena on this device: report the texels' bytes so arena records can
   * still be built; realising them in offsets mode is refused by the generic layer. */
  uint64_t v;
  if (tg_extent_volume(r->extent, &v) != TG_OK || !tg__mul_u64(v, tg__texel_bytes(p), &out->size))
    return TG_ERROR_OVERFLOW;
  return TG_OK;
}

static void release_mem(ocl_device *d, cl_mem m) {
  if (m == NULL) return;
  d->api.ReleaseMemObject(m);
  d->live_mem_objects--;
}

static tg_status opencl_allocate(void *impl, const tg_tensor_resource *r, tg_precision precision,
                                 int arena, void **memory) {
  ocl_device *d = impl;
  const ocl_api *a = &d->api;
  ocl_memory *m = tg__calloc(&d->alloc, 1, sizeof *m);
  if (m == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  m->storage = arena ? TG_STORAGE_BUFFER : r->storage;
  m->extent = r->extent;
  m->bytes = r->bytes;
  m->arena = arena;
  cl_int e = CL_SUCCESS;
  int kind = image_kind(m->storage);
  if (kind < 0) {
    if (m->bytes > SIZE_MAX) {
      tg__free(&d->alloc, m);
      return fail_cl(d, CL_INVALID_BUFFER_SIZE);
    }
    if (m->bytes > 0)
      m->mem = a->CreateBuffer(d->context, CL_MEM_READ_WRITE, (size_t)m->bytes, NULL, &e);
  } else {
    if (!d->images || !d->formats[kind][precision]) {
      tg__free(&d->alloc, m);
      return fail_cl(d, CL_IMAGE_FORMAT_NOT_SUPPORTED);
    }
    const tg_extent *x = &m->extent;
    /* Check the limits here: drivers disagree on the code for an oversized image. */
    const tg_device_limits *l = &d->limits;
#define OVER(v, limit) ((limit) != 0 && (v) > (limit)) /* a zero limit was not reported */
    int too_big =
        kind == IMG_3D
            ? (OVER(x->w, l->max_texture_3d_width) || OVER(x->h, l->max_texture_3d_height) ||
               OVER(x->d, l->max_texture_3d_depth))
            : (OVER(x->w, l->max_texture_2d_width) || OVER(x->h, l->max_texture_2d_height) ||
               (kind == IMG_ARRAY ? OVER(x->d, l->max_texture_array_layers) : x->d > 1));
#undef OVER
    if (too_big || x->w > SIZE_MAX || x->h > SIZE_MAX || x->d > SIZE_MAX) {
      tg__free(&d->alloc, m);
      return fail_cl(d, CL_INVALID_IMAGE_SIZE);
    }
    if (x->w > 0 && x->h > 0 && x->d > 0) {
      cl_image_format format = {CL_RGBA, precision == TG_PRECISION_FP16 ? CL_HALF_FLOAT : CL_FLOAT};
      cl_image_desc desc;
      memset(&desc, 0, sizeof desc);
      desc.image_width = (size_t)x->w;
      desc.image_height = (size_t)x->h;
      if (kind == IMG_2D)
        desc.image_type = CL_MEM_OBJECT_IMAGE2D;
      else if (kind == IMG_ARRAY) {
        desc.image_type = CL_MEM_OBJECT_IMAGE2D_ARRAY;
        desc.image_array_size = (size_t)x->d;
      } else {
        desc.image_type = CL_MEM_OBJECT_IMAGE3D;
        desc.image_depth = (size_t)x->d;
      }
      m->mem = a->CreateImage(d->context, CL_MEM_READ_WRITE, &format, &desc, NULL, &e);
    }
  }
  if (e != CL_SUCCESS || (m->mem == NULL && m->bytes > 0 && kind < 0)) {
    if (m->mem) a->ReleaseMemObject(m->mem);
    tg__free(&d->alloc, m);
    return fail_cl(d, e != CL_SUCCESS ? e : CL_MEM_OBJECT_ALLOCATION_FAILURE);
  }
  if (m->mem) {
    d->live_mem_objects++;
    d->mem_objects_created++;
  }
  *memory = m;
  return TG_OK;
}

static void opencl_release(void *impl, void *memory) {
  ocl_device *d = impl;
  ocl_memory *m = memory;
  if (m == NULL) return;
  release_mem(d, m->mem);
  tg__free(&d->alloc, m);
}

static tg_status opencl_bind(void *impl, void *memory, const tg_tensor_resource *object,
                             uint64_t offset, const tg_tensor_resource *tensor,
                             tg_precision precision, int arena, void **view) {
  ocl_device *d = impl;
  const ocl_api *a = &d->api;
  ocl_memory *m = memory;
  (void)object;
  ocl_view *v = tg__calloc(&d->alloc, 1, sizeof *v);
  if (v == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  v->memory = m;
  v->offset = offset;
  int kind = image_kind(tensor->storage);
  tg_status st = TG_OK;
  cl_int e = CL_SUCCESS;

  if (!arena) {
    /* The tensor uses the start of its object: no driver object of its own. */
    if (kind < 0) {
      if (tg_storage_is_texture(m->storage) || tensor->bytes > m->bytes) st = TG_ERROR_INVALID_PLAN;
    } else {
      const tg_extent *t = &tensor->extent, *o = &m->extent;
      if (image_kind(m->storage) != kind || t->w > o->w || t->h > o->h || t->d > o->d)
        st = TG_ERROR_INVALID_PLAN;
    }
    v->mem = m->mem;
    if (st != TG_OK)
      tg__free(&d->alloc, v);
    else
      *view = v;
    return st;
  }

  /* Arena: a sub-buffer at the planned offset (and an image over it for 2D images). */
  uint64_t bytes = tensor->bytes, pitch = 0, end;
  if (kind >= 0) {
    if (kind != IMG_2D || !d->image2d_from_buffer || tensor->extent.d > 1) {
      tg__free(&d->alloc, v);
      return fail_cl(d, CL_INVALID_OPERATION);
    }
    if (!from_buffer_layout(d, &tensor->extent, precision, &pitch, &bytes)) {
      tg__free(&d->alloc, v);
      return TG_ERROR_OVERFLOW;
    }
  }
  if (!tg__add_u64(offset, bytes, &end) || end > m->bytes) {
    tg__free(&d->alloc, v);
    return TG_ERROR_INVALID_PLAN;
  }
  if (bytes == 0) { /* an empty tensor needs no memory: nothing to create */
    *view = v;
    return TG_OK;
  }
  uint64_t align = d->base_alignment;
  if (kind >= 0 && d->image_base_alignment * tg__texel_bytes(precision) > align)
    align = d->image_base_alignment * tg__texel_bytes(precision);
  if (offset % align != 0) {
    /* The plan was not made with this device's alignment (plan with alignment =
     * info.buffer_alignment); the driver would refuse with the same code. */
    tg__free(&d->alloc, v);
    return fail_cl(d, CL_MISALIGNED_SUB_BUFFER_OFFSET);
  }
  cl_buffer_region region = {(size_t)offset, (size_t)bytes};
  cl_mem sub =
      a->CreateSubBuffer(m->mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &e);
  if (sub == NULL || e != CL_SUCCESS) {
    if (sub) a->ReleaseMemObject(sub);
    tg__free(&d->alloc, v);
    return fail_cl(d, e != CL_SUCCESS ? e : CL_MEM_OBJECT_ALLOCATION_FAILURE);
  }
  d->live_mem_objects++;
  d->mem_objects_created++;
  v->owned = 1;
  if (kind < 0) {
    v->mem = sub;
    *view = v;
    return TG_OK;
  }
  cl_image_format format = {CL_RGBA, precision == TG_PRECISION_FP16 ? CL_HALF_FLOAT : CL_FLOAT};
  cl_image_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = (size_t)tensor->extent.w;
  desc.image_height = (size_t)tensor->extent.h;
  desc.image_row_pitch = (size_t)pitch;
  desc.buffer = sub;
  cl_mem img = a->CreateImage(d->context, CL_MEM_READ_WRITE, &format, &desc, NULL, &e);
  if (img == NULL || e != CL_SUCCESS) {
    if (img) a->ReleaseMemObject(img);
    release_mem(d, sub);
    tg__free(&d->alloc, v);
    return fail_cl(d, e != CL_SUCCESS ? e : CL_MEM_OBJECT_ALLOCATION_FAILURE);
  }
  d->live_mem_objects++;
  d->mem_objects_created++;
  v->sub = sub;
  v->mem = img;
  *view = v;
  return TG_OK;
}

static void opencl_unbind(void *impl, void *view) {
  ocl_device *d = impl;
  ocl_view *v = view;
  if (v == NULL) return;
  if (v->owned) {
    release_mem(d, v->mem);
    release_mem(d, v->sub);
  }
  release_mem(d, v->ib);
  tg__free(&d->alloc, v);
}

static void opencl_handle(void *impl, void *memory, void *view, tg_tensor_handle *out) {
  (void)impl;
  const ocl_memory *m = memory;
  const ocl_view *v = view;
  out->memory = (uint64_t)(uintptr_t)(m ? m->mem : NULL);
  out->native = (uint64_t)(uintptr_t)(v ? v->mem : NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* Shadow run. */

/* On a borrowed out-of-order queue used in order: a barrier, so that the next command starts
 * only after every command before it finished. A no-op on an in-order queue. */
static tg_status in_order(ocl_device *d) {
  if (!d->queue_ooo) return TG_OK;
  cl_int e = d->api.EnqueueBarrierWithWaitList(d->queue, 0, NULL, NULL);
  return e == CL_SUCCESS ? TG_OK : fail_cl(d, e);
}

/* Forget a run's recorded ops and events. */
static void check_reset(ocl_device *d) {
  if (d->events) {
    for (size_t o = 0; o < d->op_count; ++o)
      if (d->events[o]) d->api.ReleaseEvent(d->events[o]);
    tg__free(&d->alloc, d->events);
    d->events = NULL;
  }
  tg__free(&d->alloc, d->op_access_start);
  tg__free(&d->alloc, d->op_wait_start);
  d->op_access_start = d->op_wait_start = NULL;
  d->access_count = d->wait_count = d->ops_seen = 0;
  d->submitted = 0;
  d->checking = 0;
}

static tg_status opencl_check_begin(void *impl, size_t record_count, size_t op_count,
                                    int out_of_order, tg_precision precision) {
  ocl_device *d = impl;
  const ocl_api *a = &d->api;
  check_reset(d);
  tg_status st = build_program(d);
  if (st != TG_OK) return st;
  if (record_count > UINT32_MAX / 2) return TG_ERROR_LIMIT;
  size_t need = record_count ? record_count : 1;
  cl_int e;
  if (d->counters_capacity < need) {
    if (d->counters) a->ReleaseMemObject(d->counters);
    d->counters_capacity = 0;
    d->counters =
        a->CreateBuffer(d->context, CL_MEM_READ_WRITE, need * 2 * sizeof(cl_uint), NULL, &e);
    if (d->counters == NULL || e != CL_SUCCESS) {
      if (d->counters) a->ReleaseMemObject(d->counters);
      d->counters = NULL;
      return fail_cl(d, e != CL_SUCCESS ? e : CL_MEM_OBJECT_ALLOCATION_FAILURE);
    }
    d->counters_capacity = need;
  }
  const cl_uint zero = 0;
  /* After whatever the engine enqueued before the check (a borrowed out-of-order queue). */
  if ((st = in_order(d)) != TG_OK) return st;
  e = a->EnqueueFillBuffer(d->queue, d->counters, &zero, sizeof zero, 0, need * 2 * sizeof(cl_uint),
                           0, NULL, NULL);
  if (e != CL_SUCCESS) return fail_cl(d, e);
  if ((st = in_order(d)) != TG_OK) return st;
  d->precision = precision;
  d->record_count = record_count;
  d->op_count = op_count;
  d->out_of_order = out_of_order && d->ooo_queue != NULL;
  d->checked_bytes = 0;
  d->check_serial++;
  if (d->out_of_order) {
    d->op_access_start = tg__calloc(&d->alloc, op_count + 1, sizeof *d->op_access_start);
    d->op_wait_start = tg__calloc(&d->alloc, op_count + 1, sizeof *d->op_wait_start);
    d->events = tg__calloc(&d->alloc, op_count ? op_count : 1, sizeof *d->events);
    if (!d->op_access_start || !d->op_wait_start || !d->events) {
      check_reset(d);
      return TG_ERROR_OUT_OF_HOST_MEMORY;
    }
  }
  d->checking = 1;
  return TG_OK;
}

/* Each check starts from memory holding a value no signature matches (0xA5 bytes; -0.5 texels,
 * as signatures are integers), so a tensor read before the check wrote it is reported, even
 * when an earlier check left its signature there. Enqueued on the in-order queue before the
 * memory's first access in this check. */
static tg_status reset_memory(ocl_device *d, ocl_memory *m) {
  if (m == NULL || m->mem == NULL || m->shared || m->filled_for == d->check_serial) return TG_OK;
  cl_int e;
  if (!tg_storage_is_texture(m->storage)) {
    const cl_uchar pattern = 0xA5;
    e = d->api.EnqueueFillBuffer(d->queue, m->mem, &pattern, 1, 0, (size_t)m->bytes, 0, NULL, NULL);
  } else {
    const cl_float color[4] = {-0.5f, -0.5f, -0.5f, -0.5f};
    size_t origin[3] = {0, 0, 0};
    size_t region[3] = {(size_t)m->extent.w, (size_t)m->extent.h, (size_t)m->extent.d};
    e = d->api.EnqueueFillImage(d->queue, m->mem, color, origin, region, 0, NULL, NULL);
  }
  if (e != CL_SUCCESS) return fail_cl(d, e);
  m->filled_for = d->check_serial;
  return in_order(d);
}

/* Set the arguments of and enqueue the kernel for one access. `*skipped` is set when the
 * tensor is empty (nothing enqueued, no event). */
static tg_status enqueue_access(ocl_device *d, cl_command_queue q, const ocl_view *v,
                                const tg_tensor_resource *res, uint32_t record, uint32_t id,
                                int write, cl_uint nwait, const cl_event *wait, cl_event *event,
                                int *skipped) {
  const ocl_api *a = &d->api;
  *skipped = 1;
  cl_int e = CL_SUCCESS;
  int kind = image_kind(res->storage);
  size_t global[3] = {1, 1, 1};
  cl_uint dims;
  cl_kernel k;
  int kid;
  cl_uint arg = 0;
  if (kind < 0) {
    uint64_t words = res->bytes / 4, tail = res->bytes % 4;
    d->checked_bytes += res->bytes;
    if (res->bytes == 0 || v->mem == NULL) return TG_OK;
    if (res->bytes > UINT32_MAX) return fail_cl(d, CL_INVALID_BUFFER_SIZE);
    cl_uint w32 = (cl_uint)words, t32 = (cl_uint)tail;
    kid = write ? K_BUFFER_WRITE : K_BUFFER_VERIFY;
    k = d->kernels[kid];
    e |= a->SetKernelArg(k, arg++, sizeof(cl_mem), &v->mem);
    e |= a->SetKernelArg(k, arg++, sizeof w32, &w32);
    e |= a->SetKernelArg(k, arg++, sizeof t32, &t32);
    global[0] = (size_t)(words + tail);
    dims = 1;
  } else {
    const tg_extent *x = &res->extent;
    uint64_t texels;
    if (tg_extent_volume(*x, &texels) != TG_OK) return TG_ERROR_OVERFLOW;
    d->checked_bytes += texels * tg__texel_bytes(d->precision);
    if (texels == 0 || v->mem == NULL) return TG_OK;
    if (texels > UINT32_MAX / 4) return fail_cl(d, CL_INVALID_IMAGE_SIZE);
    static const int k_kernel[IMG_COUNT][2] = {{K_IMAGE2D_VERIFY, K_IMAGE2D_WRITE},
                                               {K_ARRAY_VERIFY, K_ARRAY_WRITE},
                                               {K_IMAGE3D_VERIFY, K_IMAGE3D_WRITE}};
    kid = k_kernel[kind][write];
    k = d->kernels[kid];
    if (k == NULL) return fail_cl(d, CL_INVALID_OPERATION); /* no 3D image writes */
    cl_uint w32 = (cl_uint)x->w, h32 = (cl_uint)x->h, d32 = (cl_uint)x->d;
    e |= a->SetKernelArg(k, arg++, sizeof(cl_mem), &v->mem);
    e |= a->SetKernelArg(k, arg++, sizeof w32, &w32);
    e |= a->SetKernelArg(k, arg++, sizeof h32, &h32);
    e |= a->SetKernelArg(k, arg++, sizeof d32, &d32);
    global[0] = (size_t)x->w;
    global[1] = (size_t)x->h;
    global[2] = (size_t)x->d;
    dims = kind == IMG_2D ? 2 : 3;
  }
  cl_uint id32 = id, rec32 = record;
  e |= a->SetKernelArg(k, arg++, sizeof id32, &id32);
  if (!write) {
    e |= a->SetKernelArg(k, arg++, sizeof rec32, &rec32);
    e |= a->SetKernelArg(k, arg++, sizeof(cl_mem), &d->counters);
  }
  if (e != CL_SUCCESS) return fail_cl(d, CL_INVALID_KERNEL_ARGS);
  /* OpenCL 1.2 needs the grid to be a multiple of the work-group: round up (the kernels skip
   * items outside the tensor). */
  const size_t *local = d->local[kid];
  for (cl_uint i = 0; i < dims; ++i) {
    size_t r = global[i] % local[i];
    if (r) {
      if (global[i] > SIZE_MAX - (local[i] - r)) return fail_cl(d, CL_INVALID_GLOBAL_WORK_SIZE);
      global[i] += local[i] - r;
    }
  }
  e = a->EnqueueNDRangeKernel(q, k, dims, NULL, global, local, nwait, nwait ? wait : NULL, event);
  if (e != CL_SUCCESS) return fail_cl(d, e);
  *skipped = 0;
  return TG_OK;
}

static int grow(const tg_allocator *al, void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 1;
  size_t n = *cap ? *cap : 16;
  while (n < need) n *= 2;
  void *q = tg__realloc(al, *p, *cap * elem, n * elem);
  if (q == NULL) return 0;
  *p = q;
  *cap = n;
  return 1;
}

static tg_status opencl_check_op(void *impl, size_t op, const tg__check_access *reads,
                                 size_t read_count, const tg__check_access *writes,
                                 size_t write_count, const uint32_t *waits, size_t wait_count) {
  ocl_device *d = impl;
  if (!d->checking) return TG_ERROR_INVALID_ARGUMENT;
  if (!d->out_of_order) {
    int skipped;
    for (size_t i = 0; i < read_count + write_count; ++i) {
      const tg__check_access *x = i < read_count ? &reads[i] : &writes[i - read_count];
      tg_status st = reset_memory(d, ((ocl_view *)x->view)->memory);
      if (st != TG_OK) return st;
    }
    for (size_t i = 0; i < read_count; ++i) {
      tg_status st =
          enqueue_access(d, d->queue, reads[i].view, reads[i].resource, (uint32_t)reads[i].record,
                         reads[i].signature_id, 0, 0, NULL, NULL, &skipped);
      if (st == TG_OK && !skipped) st = in_order(d);
      if (st != TG_OK) return st;
    }
    for (size_t i = 0; i < write_count; ++i) {
      tg_status st = enqueue_access(d, d->queue, writes[i].view, writes[i].resource,
                                    (uint32_t)writes[i].record, writes[i].signature_id, 1, 0, NULL,
                                    NULL, &skipped);
      if (st == TG_OK && !skipped) st = in_order(d);
      if (st != TG_OK) return st;
    }
    return TG_OK;
  }
  /* Out of order: record the op; check_end submits every op once all waits are known. */
  if (op >= d->op_count || op < d->ops_seen) return TG_ERROR_INVALID_ARGUMENT;
  for (size_t i = 0; i < wait_count; ++i)
    if (waits[i] >= d->op_count || waits[i] == op) return TG_ERROR_INVALID_ARGUMENT;
  /* Ops the generic layer did not pass get empty ranges. */
  for (size_t o = d->ops_seen; o <= op; ++o) {
    d->op_access_start[o] = d->access_count;
    d->op_wait_start[o] = d->wait_count;
  }
  if (!grow(&d->alloc, (void **)&d->accesses, &d->access_capacity,
            d->access_count + read_count + write_count, sizeof *d->accesses) ||
      !grow(&d->alloc, (void **)&d->waits, &d->wait_capacity, d->wait_count + wait_count,
            sizeof *d->waits))
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t i = 0; i < read_count; ++i)
    d->accesses[d->access_count++] = (ocl_access){
        reads[i].view, reads[i].resource, (uint32_t)reads[i].record, reads[i].signature_id, 0};
  for (size_t i = 0; i < write_count; ++i)
    d->accesses[d->access_count++] = (ocl_access){
        writes[i].view, writes[i].resource, (uint32_t)writes[i].record, writes[i].signature_id, 1};
  if (wait_count) memcpy(d->waits + d->wait_count, waits, wait_count * sizeof *waits);
  d->wait_count += wait_count;
  d->ops_seen = op + 1;
  d->op_access_start[op + 1] = d->access_count;
  d->op_wait_start[op + 1] = d->wait_count;
  return TG_OK;
}

/* Enqueue one recorded op on the out-of-order queue: reads after the ops it waits for, writes
 * after its reads, and one event standing for the whole op. */
static tg_status submit_op(ocl_device *d, size_t op) {
  const ocl_api *a = &d->api;
  size_t w0 = d->op_wait_start[op], w1 = d->op_wait_start[op + 1];
  size_t a0 = d->op_access_start[op], a1 = d->op_access_start[op + 1];
  size_t cap = (w1 - w0) + 2 * (a1 - a0) + 1;
  if (!grow(&d->alloc, (void **)&d->scratch_events, &d->scratch_capacity, cap,
            sizeof *d->scratch_events))
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  cl_event *ev = d->scratch_events;
  /* ev[0..nw): what the op waits for; then the read events; then the write events. */
  cl_uint nw = 0;
  for (size_t i = w0; i < w1; ++i)
    if (d->events[d->waits[i]]) ev[nw++] = d->events[d->waits[i]];
  cl_uint nr = 0, nwr = 0;
  tg_status st = TG_OK;
  for (int pass = 0; pass < 2 && st == TG_OK; ++pass) {
    cl_uint nwait = pass == 0 ? nw : nw + nr;
    for (size_t i = a0; i < a1 && st == TG_OK; ++i) {
      const ocl_access *x = &d->accesses[i];
      if (x->write != pass) continue;
      cl_event e = NULL;
      int skipped;
      st = enqueue_access(d, d->ooo_queue, x->view, x->resource, x->record, x->signature_id,
                          x->write, nwait, ev, &e, &skipped);
      if (st == TG_OK && !skipped) {
        ev[nw + nr + nwr] = e;
        if (pass == 0)
          ++nr;
        else
          ++nwr;
      }
    }
  }
  /* The op is done when its writes are (they wait for its reads), or its reads if it writes
   * nothing: later ops wait for those events only. */
  cl_event *mine = ev + nw;
  cl_uint nmine = nr + nwr;
  if (st == TG_OK && nwr > 0 && nr > 0) {
    for (cl_uint i = 0; i < nr; ++i) a->ReleaseEvent(mine[i]);
    mine += nr;
    nmine = nwr;
  }
  if (st == TG_OK) {
    cl_event done = NULL;
    if (nmine == 1) {
      done = mine[0];
      nmine = 0; /* ownership moves to events[op] */
    } else if (nmine > 1 || nw > 0) {
      /* A marker stands for the op; with no kernels it still carries the op's waits so that
       * ordering stays transitive through ops that touch no tensor. */
      cl_int e =
          a->EnqueueMarkerWithWaitList(d->ooo_queue, nmine ? nmine : nw, nmine ? mine : ev, &done);
      if (e != CL_SUCCESS) st = fail_cl(d, e);
    }
    d->events[op] = done;
  }
  for (cl_uint i = 0; i < nmine; ++i) a->ReleaseEvent(mine[i]);
  return st;
}

/* Submit recorded ops in an order the waits allow, taking the highest-numbered ready op first:
 * ops not ordered by a wait run in the opposite of program order, so memory reuse that lacks
 * a wait is exercised on every run, not only when the driver's threads happen to race. */
static tg_status submit_range(ocl_device *d, size_t from, size_t to) {
  tg_status st = TG_OK;
  if (to <= from) return TG_OK;
  size_t n = to - from;
  /* Reset the memory of every tensor these ops touch, then let the out-of-order queue start:
   * it is not ordered after the in-order one, so drain that first. Waits for ops before `from`
   * (already submitted) use their events as they are. */
  for (size_t i = d->op_access_start[from]; i < d->op_access_start[to]; ++i)
    if ((st = reset_memory(d, d->accesses[i].view->memory)) != TG_OK) return st;
  cl_int e = d->api.Finish(d->queue);
  if (e != CL_SUCCESS) return fail_cl(d, e);
  uint32_t *pending = tg__calloc(&d->alloc, n, sizeof *pending); /* unfinished waits */
  size_t *succ_start = tg__calloc(&d->alloc, n + 1, sizeof *succ_start);
  uint32_t *succ = tg__calloc(&d->alloc, d->wait_count + 1, sizeof *succ);
  uint32_t *heap = tg__calloc(&d->alloc, n, sizeof *heap);
  if (!pending || !succ_start || !succ || !heap) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  for (size_t o = 0; o < n; ++o)
    for (size_t i = d->op_wait_start[from + o]; i < d->op_wait_start[from + o + 1]; ++i) {
      if (d->waits[i] < from) continue;
      succ_start[d->waits[i] - from + 1]++;
      pending[o]++;
    }
  for (size_t o = 0; o < n; ++o) succ_start[o + 1] += succ_start[o];
  {
    size_t *cursor = tg__calloc(&d->alloc, n, sizeof *cursor);
    if (cursor == NULL) {
      st = TG_ERROR_OUT_OF_HOST_MEMORY;
      goto done;
    }
    for (size_t o = 0; o < n; ++o)
      for (size_t i = d->op_wait_start[from + o]; i < d->op_wait_start[from + o + 1]; ++i) {
        if (d->waits[i] < from) continue;
        uint32_t w = (uint32_t)(d->waits[i] - from);
        succ[succ_start[w] + cursor[w]++] = (uint32_t)o;
      }
    tg__free(&d->alloc, cursor);
  }
  /* Max-heap of ready ops. */
  size_t hn = 0, submitted = 0;
#define HEAP_PUSH(v)                                  \
  do {                                                \
    size_t i_ = hn++;                                 \
    heap[i_] = (v);                                   \
    while (i_ > 0 && heap[(i_ - 1) / 2] < heap[i_]) { \
      uint32_t t_ = heap[i_];                         \
      heap[i_] = heap[(i_ - 1) / 2];                  \
      heap[(i_ - 1) / 2] = t_;                        \
      i_ = (i_ - 1) / 2;                              \
    }                                                 \
  } while (0)
  for (size_t o = 0; o < n; ++o)
    if (pending[o] == 0) HEAP_PUSH((uint32_t)o);
  while (hn > 0 && st == TG_OK) {
    uint32_t op = heap[0];
    heap[0] = heap[--hn];
    for (size_t i = 0;;) {
      size_t l = 2 * i + 1, r = l + 1, m = i;
      if (l < hn && heap[l] > heap[m]) m = l;
      if (r < hn && heap[r] > heap[m]) m = r;
      if (m == i) break;
      uint32_t t = heap[i];
      heap[i] = heap[m];
      heap[m] = t;
      i = m;
    }
    st = submit_op(d, from + op);
    ++submitted;
    for (size_t i = succ_start[op]; i < succ_start[op + 1]; ++i)
      if (--pending[succ[i]] == 0) HEAP_PUSH(succ[i]);
  }
#undef HEAP_PUSH
  if (st == TG_OK && submitted != n) st = TG_ERROR_INVALID_ARGUMENT; /* waits form a cycle */
  if (st == TG_OK) d->submitted = to;
done:
  tg__free(&d->alloc, pending);
  tg__free(&d->alloc, succ_start);
  tg__free(&d->alloc, succ);
  tg__free(&d->alloc, heap);
  return st;
}

/* Every recorded op, once all are known (check_end). */
static tg_status submit_all(ocl_device *d) {
  size_t n = d->op_count;
  for (size_t o = d->ops_seen; o < n; ++o) {
    d->op_access_start[o + 1] = d->access_count;
    d->op_wait_start[o + 1] = d->wait_count;
  }
  d->op_access_start[0] = 0;
  d->op_wait_start[0] = 0;
  return submit_range(d, d->submitted, n);
}

static tg_status opencl_check_end(void *impl, uint64_t *mismatches, uint64_t *checked_bytes) {
  ocl_device *d = impl;
  const ocl_api *a = &d->api;
  if (!d->checking) return TG_ERROR_INVALID_ARGUMENT;
  tg_status st = TG_OK;
  cl_command_queue q = d->out_of_order ? d->ooo_queue : d->queue;
  if (d->out_of_order) st = submit_all(d);
  cl_int e = a->Finish(q);
  if (st == TG_OK && e != CL_SUCCESS) st = fail_cl(d, e);
  cl_uint *counts = NULL;
  if (st == TG_OK && d->record_count) {
    counts = tg__calloc(&d->alloc, d->record_count * 2, sizeof *counts);
    if (counts == NULL)
      st = TG_ERROR_OUT_OF_HOST_MEMORY;
    else {
      /* Blocking read on the in-order queue: every kernel has finished above. */
      e = a->EnqueueReadBuffer(d->queue, d->counters, CL_TRUE, 0,
                               d->record_count * 2 * sizeof *counts, counts, 0, NULL, NULL);
      if (e != CL_SUCCESS) st = fail_cl(d, e);
    }
  }
  if (st == TG_OK) {
    for (size_t r = 0; r < d->record_count; ++r)
      mismatches[r] += (uint64_t)counts[2 * r] | ((uint64_t)counts[2 * r + 1] << 32);
    *checked_bytes = d->checked_bytes;
  }
  tg__free(&d->alloc, counts);
  check_reset(d);
  return st;
}

static void opencl_check_abort(void *impl) {
  ocl_device *d = impl;
  /* Let whatever was enqueued finish before its events and the tensors go away. */
  d->api.Finish(d->queue);
  if (d->ooo_queue) d->api.Finish(d->ooo_queue);
  check_reset(d);
}

/* ------------------------------------------------------------------------------------------ */
/* Shared memory: buffers the host maps without a copy (CL_MEM_ALLOC_HOST_PTR). The host maps
 * them only while no kernel uses them (the generic layer calls check_sync first), on the
 * in-order queue, and unmaps them before kernels use them again; the unmap is finished before
 * returning so that work on the out-of-order queue, which is not ordered after the in-order
 * one, sees the host's writes. */

static tg_status opencl_allocate_shared(void *impl, const tg_tensor_resource *r,
                                        tg_precision precision, int arena, void **memory) {
  ocl_device *d = impl;
  (void)precision;
  if (tg_storage_is_texture(r->storage)) return fail_cl(d, CL_INVALID_OPERATION);
  ocl_memory *m = tg__calloc(&d->alloc, 1, sizeof *m);
  if (m == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  m->storage = TG_STORAGE_BUFFER;
  m->extent = (tg_extent){r->bytes, 1, 1};
  m->bytes = r->bytes;
  m->arena = arena;
  m->shared = 1;
  if (m->bytes > SIZE_MAX) {
    tg__free(&d->alloc, m);
    return fail_cl(d, CL_INVALID_BUFFER_SIZE);
  }
  cl_int e = CL_SUCCESS;
  if (m->bytes > 0)
    m->mem = d->api.CreateBuffer(d->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                                 (size_t)m->bytes, NULL, &e);
  if (e != CL_SUCCESS || (m->mem == NULL && m->bytes > 0)) {
    if (m->mem) d->api.ReleaseMemObject(m->mem);
    tg__free(&d->alloc, m);
    return fail_cl(d, e != CL_SUCCESS ? e : CL_MEM_OBJECT_ALLOCATION_FAILURE);
  }
  if (m->mem) {
    d->live_mem_objects++;
    d->mem_objects_created++;
  }
  *memory = m;
  return TG_OK;
}

static tg_status opencl_map(void *impl, void *memory, void **host) {
  ocl_device *d = impl;
  ocl_memory *m = memory;
  *host = NULL;
  if (m == NULL || !m->shared) return TG_ERROR_INVALID_ARGUMENT;
  if (m->mem == NULL) return TG_OK;
  if (m->mapped == NULL) {
    cl_int e = CL_SUCCESS;
    void *p = d->api.EnqueueMapBuffer(d->queue, m->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                      (size_t)m->bytes, 0, NULL, NULL, &e);
    if (e != CL_SUCCESS || p == NULL) return fail_cl(d, e != CL_SUCCESS ? e : CL_MAP_FAILURE);
    m->mapped = p;
  }
  *host = m->mapped;
  return TG_OK;
}

static tg_status opencl_unmap(void *impl, void *memory) {
  ocl_device *d = impl;
  ocl_memory *m = memory;
  if (m == NULL || !m->shared) return TG_ERROR_INVALID_ARGUMENT;
  if (m->mapped == NULL) return TG_OK;
  cl_int e = d->api.EnqueueUnmapMemObject(d->queue, m->mem, m->mapped, 0, NULL, NULL);
  m->mapped = NULL;
  if (e == CL_SUCCESS) e = d->api.Finish(d->queue);
  return e == CL_SUCCESS ? TG_OK : fail_cl(d, e);
}

static tg_status opencl_check_sync(void *impl) {
  ocl_device *d = impl;
  if (!d->checking) return TG_ERROR_INVALID_ARGUMENT;
  tg_status st = TG_OK;
  if (d->out_of_order) {
    st = submit_range(d, d->submitted, d->ops_seen);
    cl_int e = d->api.Finish(d->ooo_queue);
    if (st == TG_OK && e != CL_SUCCESS) st = fail_cl(d, e);
  }
  cl_int e = d->api.Finish(d->queue);
  if (st == TG_OK && e != CL_SUCCESS) st = fail_cl(d, e);
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* Proxy runs (tangram/speed.h): one kernel per pair of output kind and input kind (buffer,
 * 2D image, 2D array, 3D image), the op class a run-time switch. Each work item is one
 * output texel: it reads the inputs in the class's pattern and writes the output record's
 * signature, with the sum of what it read masked out by `mix` (0 at run time, unknown to the
 * compiler, so every read stays). Timed runs use a queue of their own with profiling. */

/* clang-format off */
/* Three strings: ISO C compilers need support string literals of 4095 characters only. */
static const char k_proxy_source_a[] =
    "uint tg_sig(uint id, uint index) {\n"
    "  uint x = id * 0x9E3779B1u + index * 0x85EBCA77u + 0x27D4EB2Fu;\n"
    "  x ^= x >> 15; x *= 0x2C1B3C6Du; x ^= x >> 12; x *= 0x297A2D39u; x ^= x >> 15;\n"
    "  return x;\n"
    "}\n"
    "float tg_texel(uint id, uint index) { return (float)(tg_sig(id, index) & 0x3FFu); }\n"
    "#ifdef TG_HALF\n"
    "#define TG_ELEM half\n"
    "#define TG_BLOAD(p, i) vload_half4((size_t)(i), (p))\n"
    "#else\n"
    "#define TG_ELEM float\n"
    "#define TG_BLOAD(p, i) vload4((size_t)(i), (p))\n"
    "#endif\n"
    "__constant sampler_t tg_smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE |\n"
    "                              CLK_FILTER_NEAREST;\n"
    "#define TG_IN_B __global const TG_ELEM *\n"
    "#define TG_IN_I2 __read_only image2d_t\n"
    "#define TG_IN_IA __read_only image2d_array_t\n"
    "#define TG_IN_I3 __read_only image3d_t\n"
    "#define TG_IN_IB __read_only image1d_buffer_t\n"
    "#define TG_LD_B(t, g, px, py, pz) TG_BLOAD(t, ((pz) * (g).y + (py)) * (g).x + (px))\n"
    "#define TG_LD_I2(t, g, px, py, pz) read_imagef(t, tg_smp, (int2)((px), (pz) * (g).y + (py)))\n"
    "#define TG_LD_IA(t, g, px, py, pz) read_imagef(t, tg_smp, (int4)((px), (py), (pz), 0))\n"
    "#define TG_LD_I3(t, g, px, py, pz) read_imagef(t, tg_smp, (int4)((px), (py), (pz), 0))\n"
    "#define TG_IB_AT(g, px, py, pz) ((g).w + ((pz) * (g).y + (py)) * (g).x + (px))\n"
    "#ifdef TG_HALF\n"
    "#define TG_LD_IB(t, g, px, py, pz) convert_float4(read_imageui(t, TG_IB_AT(g, px, py, pz)))\n"
    "#else\n"
    "#define TG_LD_IB(t, g, px, py, pz) as_float4(read_imageui(t, TG_IB_AT(g, px, py, pz)))\n"
    "#endif\n"
    "#define TG_OUT_B __global uint *\n"
    "#define TG_OUT_I2 __write_only image2d_t\n"
    "#define TG_OUT_IA __write_only image2d_array_t\n"
    "#define TG_OUT_I3 __write_only image3d_t\n"
    "#define TG_OUT_IB __write_only image1d_buffer_t\n"
    "float4 tg_texel4(uint id, uint L, float4 acc, uint mix) {\n"
    "  float4 v = (float4)(tg_texel(id, 4u * L), tg_texel(id, 4u * L + 1u),\n"
    "                      tg_texel(id, 4u * L + 2u), tg_texel(id, 4u * L + 3u));\n"
    "  return mix ? v + acc : v;\n"
    "}\n"
    "#ifdef TG_HALF\n"
    "#define TG_ST_B(t, g, px, py, pz, L, id, acc, mix) \\\n"
    "  vstore2((uint2)(tg_sig(id, 2u * L), tg_sig(id, 2u * L + 1u)) ^ (as_uint4(acc).xy & (uint2)(mix)), (size_t)L, t)\n"
    "#else\n"
    "#define TG_ST_B(t, g, px, py, pz, L, id, acc, mix) \\\n"
    "  vstore4((uint4)(tg_sig(id, 4u * L), tg_sig(id, 4u * L + 1u), tg_sig(id, 4u * L + 2u), \\\n"
    "                  tg_sig(id, 4u * L + 3u)) ^ (as_uint4(acc) & (uint4)(mix)), (size_t)L, t)\n"
    "#endif\n"
    "#define TG_ST_I2(t, g, px, py, pz, L, id, acc, mix) \\\n"
    "  write_imagef(t, (int2)((px), (pz) * (g).y + (py)), tg_texel4(id, L, acc, mix))\n"
    "#define TG_ST_IA(t, g, px, py, pz, L, id, acc, mix) \\\n"
    "  write_imagef(t, (int4)((px), (py), (pz), 0), tg_texel4(id, L, acc, mix))\n"
    "#define TG_ST_I3 TG_ST_IA\n"
    "#ifdef TG_HALF\n"
    "#define TG_ST_IB(t, g, px, py, pz, L, id, acc, mix) {                               \\\n"
    "    uint2 w_ = (uint2)(tg_sig(id, 2u * L), tg_sig(id, 2u * L + 1u)) ^ (as_uint4(acc).xy & (uint2)(mix)); \\\n"
    "    write_imageui(t, (g).w + (int)(L), (uint4)(w_.x & 0xFFFFu, w_.x >> 16, w_.y & 0xFFFFu, w_.y >> 16)); }\n"
    "#else\n"
    "#define TG_ST_IB(t, g, px, py, pz, L, id, acc, mix)                                  \\\n"
    "  write_imageui(t, (g).w + (int)(L), (uint4)(tg_sig(id, 4u * L), tg_sig(id, 4u * L + 1u), \\\n"
    "                tg_sig(id, 4u * L + 2u), tg_sig(id, 4u * L + 3u)) ^ (as_uint4(acc) & (uint4)(mix)))\n"
    "#endif\n";
static const char k_proxy_source_b[] =
    "int tg_scale(int v, int from, int to) { return (int)(((long)v * to) / (from > 0 ? from : 1)); }\n"
    "/* The reads of one input in the class's pattern, added into acc. */\n"
    "#define TG_READ(I, t, g)                                                            \\\n"
    "  {                                                                                 \\\n"
    "    int cx = min(tg_scale(x, og.x, g.x), g.x - 1), cy = min(tg_scale(y, og.y, g.y), g.y - 1); \\\n"
    "    int cz = min(z, g.z - 1);                                                       \\\n"
    "    if (cls == 0) {                                                                 \\\n"
    "      acc += TG_LD_##I(t, g, min(x, g.x - 1), min(y, g.y - 1), cz);                 \\\n"
    "    } else if (cls == 1) {                                                          \\\n"
    "      int r = k / 2;                                                                \\\n"
    "      for (int dy = -r; dy <= r; ++dy)                                              \\\n"
    "        for (int dx = -r; dx <= r; ++dx)                                            \\\n"
    "          acc += TG_LD_##I(t, g, clamp(cx + dx, 0, g.x - 1), clamp(cy + dy, 0, g.y - 1), cz); \\\n"
    "    } else if (cls == 2) {                                                          \\\n"
    "      for (int c = 0; c < g.z; ++c) acc += TG_LD_##I(t, g, cx, cy, c);              \\\n"
    "    } else if (cls == 3) {                                                          \\\n"
    "      int x1 = max(tg_scale(x + 1, og.x, g.x), cx + 1), y1 = max(tg_scale(y + 1, og.y, g.y), cy + 1); \\\n"
    "      for (int yy = cy; yy < min(y1, g.y); ++yy)                                    \\\n"
    "        for (int xx = cx; xx < min(x1, g.x); ++xx) acc += TG_LD_##I(t, g, xx, yy, cz); \\\n"
    "    } else {                                                                        \\\n"
    "      ulong n = (ulong)g.x * (ulong)g.y * (ulong)g.z;                               \\\n"
    "      ulong S = ((ulong)(L - lo) * n) / (ulong)(hi - lo);                           \\\n"
    "      int sx = (int)(S % (ulong)g.x), sy = (int)((S / (ulong)g.x) % (ulong)g.y);    \\\n"
    "      int sz = (int)(S / ((ulong)g.x * (ulong)g.y));                                \\\n"
    "      acc += TG_LD_##I(t, g, sx, sy, sz);                                           \\\n"
    "    }                                                                               \\\n"
    "  }\n";
static const char k_proxy_source_c[] =
    "#define TG_PROXY(O, I)                                                              \\\n"
    "  __kernel void tg_proxy_##O##_##I(TG_OUT_##O out, int4 og, TG_IN_##I a, int4 ag,   \\\n"
    "                                   TG_IN_##I b, int4 bg, int nin, int cls, int k,    \\\n"
    "                                   uint lo, uint hi, uint id, uint mix) {            \\\n"
    "    uint L = lo + (uint)get_global_id(0);                                           \\\n"
    "    if (L >= hi) return;                                                            \\\n"
    "    int x = (int)(L % (uint)og.x), y = (int)((L / (uint)og.x) % (uint)og.y);        \\\n"
    "    int z = (int)(L / ((uint)og.x * (uint)og.y));                                   \\\n"
    "    float4 acc = (float4)(0.0f);                                                    \\\n"
    "    if (nin > 0) TG_READ(I, a, ag)                                                  \\\n"
    "    if (nin > 1) TG_READ(I, b, bg)                                                  \\\n"
    "    TG_ST_##O(out, og, x, y, z, L, id, acc, mix);                                   \\\n"
    "  }\n"
    "TG_PROXY(B, B)\n"
    "#ifdef TG_IMAGES\n"
    "TG_PROXY(B, IB) TG_PROXY(IB, B) TG_PROXY(IB, IB)\n"
    "TG_PROXY(B, I2) TG_PROXY(B, IA) TG_PROXY(B, I3)\n"
    "TG_PROXY(I2, B) TG_PROXY(I2, I2) TG_PROXY(I2, IA) TG_PROXY(I2, I3)\n"
    "TG_PROXY(IA, B) TG_PROXY(IA, I2) TG_PROXY(IA, IA) TG_PROXY(IA, I3)\n"
    "#ifdef TG_3D_WRITES\n"
    "#pragma OPENCL EXTENSION cl_khr_3d_image_writes : enable\n"
    "TG_PROXY(I3, B) TG_PROXY(I3, I2) TG_PROXY(I3, IA) TG_PROXY(I3, I3)\n"
    "#endif\n"
    "#endif\n";
/* clang-format on */

/* Kinds of proxy operands: buffer, then the image kinds (IMG_2D + 1, ...), then image
 * buffers (read and written as RGBA 32-bit, fp16: 16-bit, unsigned integer texels: the bytes
 * per texel of the float format, and the shadow run's signature words pass bit for bit). */
enum { PK_BUFFER, PK_2D, PK_ARRAY, PK_3D, PK_IMAGE_BUFFER, PK_COUNT };
static const char *const k_proxy_kind_names[PK_COUNT] = {"B", "I2", "IA", "I3", "IB"};

static int proxy_kind(tg_storage s) { return s == TG_STORAGE_IMAGE_BUFFER ? PK_IMAGE_BUFFER : image_kind(s) + 1; }

/* The image1d_buffer of an image_buffer tensor, made on first use (opencl.c's header). */
static tg_status proxy_image_buffer(ocl_device *d, const tg__proxy_tensor *t, cl_mem *mem, cl_int *base) {
  ocl_view *v = t->view;
  if (v->ib == NULL) {
    size_t texel = tg__texel_bytes(d->proxy_precision);
    uint64_t n = (uint64_t)t->w * t->h * t->s, first = v->memory->arena ? v->offset / texel : 0;
    if (v->memory->arena && v->offset % texel) return fail_cl(d, CL_MISALIGNED_SUB_BUFFER_OFFSET);
    if (first + n > (uint64_t)INT32_MAX || first + n > d->max_image_buffer_texels) return TG_ERROR_UNSUPPORTED;
    cl_image_format format = {CL_RGBA, d->proxy_precision == TG_PRECISION_FP16 ? CL_UNSIGNED_INT16
                                                                               : CL_UNSIGNED_INT32};
    cl_image_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.image_type = CL_MEM_OBJECT_IMAGE1D_BUFFER;
    desc.image_width = (size_t)(first + n);
    desc.buffer = v->memory->mem;
    cl_int e = CL_SUCCESS;
    cl_mem img = d->api.CreateImage(d->context, CL_MEM_READ_WRITE, &format, &desc, NULL, &e);
    if (img == NULL || e != CL_SUCCESS) {
      if (img) d->api.ReleaseMemObject(img);
      return fail_cl(d, e != CL_SUCCESS ? e : CL_MEM_OBJECT_ALLOCATION_FAILURE);
    }
    d->live_mem_objects++;
    d->mem_objects_created++;
    v->ib = img;
    v->ib_base = (cl_int)first;
  }
  *mem = v->ib;
  *base = v->ib_base;
  return TG_OK;
}

static void proxy_release(ocl_device *d) {
  for (int p = 0; p < TG_PRECISION_COUNT; ++p) {
    for (int o = 0; o < PK_COUNT; ++o)
      for (int i = 0; i < PK_COUNT; ++i)
        if (d->proxy_kernels[p][o][i]) d->api.ReleaseKernel(d->proxy_kernels[p][o][i]);
    if (d->proxy_programs[p]) d->api.ReleaseProgram(d->proxy_programs[p]);
  }
  memset(d->proxy_kernels, 0, sizeof d->proxy_kernels);
  memset(d->proxy_programs, 0, sizeof d->proxy_programs);
}

static tg_status proxy_build(ocl_device *d, tg_precision precision) {
  if (d->proxy_programs[precision]) return TG_OK;
  const ocl_api *a = &d->api;
  cl_int e = CL_SUCCESS;
  const char *src[3] = {k_proxy_source_a, k_proxy_source_b, k_proxy_source_c};
  size_t len[3] = {sizeof k_proxy_source_a - 1, sizeof k_proxy_source_b - 1, sizeof k_proxy_source_c - 1};
  cl_program prog = a->CreateProgramWithSource(d->context, 3, src, len, &e);
  if (prog == NULL || e != CL_SUCCESS) return fail_cl(d, e != CL_SUCCESS ? e : CL_OUT_OF_HOST_MEMORY);
  char options[128];
  snprintf(options, sizeof options, "-cl-std=CL1.2%s%s%s", d->images ? " -DTG_IMAGES" : "",
           d->images && d->image_3d_writes ? " -DTG_3D_WRITES" : "",
           precision == TG_PRECISION_FP16 ? " -DTG_HALF" : "");
  e = a->BuildProgram(prog, 1, &d->device, options, NULL, NULL);
  if (e != CL_SUCCESS) {
    a->ReleaseProgram(prog);
    return fail_cl(d, e);
  }
  d->proxy_programs[precision] = prog;
  for (int o = 0; o < PK_COUNT; ++o)
    for (int i = 0; i < PK_COUNT; ++i) {
      if ((o || i) && !d->images) continue;
      if (o == PK_3D && !d->image_3d_writes) continue;
      if ((o == PK_IMAGE_BUFFER || i == PK_IMAGE_BUFFER) && o + i != PK_IMAGE_BUFFER && o != i) continue;
      char name[64];
      snprintf(name, sizeof name, "tg_proxy_%s_%s", k_proxy_kind_names[o], k_proxy_kind_names[i]);
      d->proxy_kernels[precision][o][i] = a->CreateKernel(prog, name, &e);
      if (d->proxy_kernels[precision][o][i] == NULL || e != CL_SUCCESS) {
        proxy_release(d);
        return fail_cl(d, e != CL_SUCCESS ? e : CL_INVALID_KERNEL);
      }
    }
  return TG_OK;
}

static void proxy_events_release(ocl_device *d) {
  for (size_t i = 0; i < d->proxy_event_count; ++i)
    if (d->proxy_events[i]) d->api.ReleaseEvent(d->proxy_events[i]);
  d->proxy_event_count = 0;
}

static tg_status opencl_speed_begin(void *impl, size_t op_count, size_t dispatch_count, tg_precision precision,
                                   int timed) {
  ocl_device *d = impl;
  (void)dispatch_count;
  if ((int)precision < 0 || precision >= TG_PRECISION_COUNT) return TG_ERROR_INVALID_ARGUMENT;
  proxy_events_release(d);
  tg_status st = proxy_build(d, precision);
  if (st != TG_OK) return st;
  if (timed && d->profiling_queue == NULL) {
    cl_int e = CL_SUCCESS;
    d->profiling_queue =
        d->api.CreateCommandQueue(d->context, d->device, CL_QUEUE_PROFILING_ENABLE, &e);
    if (d->profiling_queue == NULL || e != CL_SUCCESS) {
      d->profiling_queue = NULL;
      return fail_cl(d, e != CL_SUCCESS ? e : CL_INVALID_COMMAND_QUEUE);
    }
  }
  if (!timed && !d->checking) return TG_ERROR_INVALID_ARGUMENT;
  d->proxy_precision = precision;
  d->proxy_timed = timed;
  d->proxy_op_count = op_count;
  if (d->dummy == NULL) {
    cl_int e = CL_SUCCESS;
    d->dummy = d->api.CreateBuffer(d->context, CL_MEM_READ_WRITE, 64, NULL, &e);
    if (d->dummy == NULL || e != CL_SUCCESS) {
      d->dummy = NULL;
      return fail_cl(d, e != CL_SUCCESS ? e : CL_MEM_OBJECT_ALLOCATION_FAILURE);
    }
  }
  return TG_OK;
}

static tg_status opencl_speed_dispatch(void *impl, const tg__proxy_dispatch *x) {
  ocl_device *d = impl;
  const ocl_api *a = &d->api;
  if (x->hi <= x->lo) return TG_OK;
  if (x->op >= d->proxy_op_count || x->in_count > 2) return TG_ERROR_INVALID_ARGUMENT;
  const ocl_view *ov = x->out.view;
  if (ov == NULL || ov->mem == NULL) return TG_OK; /* an empty tensor */
  int ok = proxy_kind(x->out.resource->storage);
  int ik = x->in_count ? proxy_kind(x->in[0].resource->storage) : PK_BUFFER;
  cl_kernel k = d->proxy_kernels[d->proxy_precision][ok][ik];
  if (k == NULL && (ok == PK_IMAGE_BUFFER || ik == PK_IMAGE_BUFFER)) return TG_ERROR_UNSUPPORTED; /* no images */
  if (k == NULL) return fail_cl(d, CL_INVALID_OPERATION);
  cl_mem in[2] = {d->dummy, d->dummy}, om = ov->mem;
  cl_int g[3][4] = {{(cl_int)x->out.w, (cl_int)x->out.h, (cl_int)x->out.s, 0}, {1, 1, 1, 0}, {1, 1, 1, 0}};
  tg_status ist = TG_OK;
  if (ok == PK_IMAGE_BUFFER && (ist = proxy_image_buffer(d, &x->out, &om, &g[0][3])) != TG_OK) return ist;
  for (uint32_t i = 0; i < x->in_count; ++i) {
    const ocl_view *iv = x->in[i].view;
    if (iv == NULL || iv->mem == NULL) return TG_ERROR_INVALID_ARGUMENT;
    in[i] = iv->mem;
    if (proxy_kind(x->in[i].resource->storage) != ik) return TG_ERROR_INVALID_ARGUMENT;
    if (ik == PK_IMAGE_BUFFER && (ist = proxy_image_buffer(d, &x->in[i], &in[i], &g[i + 1][3])) != TG_OK)
      return ist;
    g[i + 1][0] = (cl_int)x->in[i].w;
    g[i + 1][1] = (cl_int)x->in[i].h;
    g[i + 1][2] = (cl_int)x->in[i].s;
  }
  if (x->in_count == 1) {
    in[1] = in[0];
    memcpy(g[2], g[1], sizeof g[1]);
  }
  cl_int nin = (cl_int)x->in_count, cls = x->op_class, kk = (cl_int)x->kernel;
  cl_uint lo = x->lo, hi = x->hi, id = x->out_id, mix = 0;
  cl_int e = CL_SUCCESS;
  cl_uint arg = 0;
  e |= a->SetKernelArg(k, arg++, sizeof(cl_mem), &om);
  e |= a->SetKernelArg(k, arg++, sizeof g[0], g[0]);
  e |= a->SetKernelArg(k, arg++, sizeof(cl_mem), &in[0]);
  e |= a->SetKernelArg(k, arg++, sizeof g[1], g[1]);
  e |= a->SetKernelArg(k, arg++, sizeof(cl_mem), &in[1]);
  e |= a->SetKernelArg(k, arg++, sizeof g[2], g[2]);
  e |= a->SetKernelArg(k, arg++, sizeof nin, &nin);
  e |= a->SetKernelArg(k, arg++, sizeof cls, &cls);
  e |= a->SetKernelArg(k, arg++, sizeof kk, &kk);
  e |= a->SetKernelArg(k, arg++, sizeof lo, &lo);
  e |= a->SetKernelArg(k, arg++, sizeof hi, &hi);
  e |= a->SetKernelArg(k, arg++, sizeof id, &id);
  e |= a->SetKernelArg(k, arg++, sizeof mix, &mix);
  if (e != CL_SUCCESS) return fail_cl(d, CL_INVALID_KERNEL_ARGS);
  size_t local = 64, global = (size_t)(hi - lo);
  if (global % local) global += local - global % local;
  cl_event ev = NULL;
  if (d->proxy_timed) {
    if (!grow(&d->alloc, (void **)&d->proxy_events, &d->proxy_event_capacity, d->proxy_event_count + 1,
              sizeof *d->proxy_events) ||
        !grow(&d->alloc, (void **)&d->proxy_event_ops, &d->proxy_event_op_capacity,
              d->proxy_event_count + 1, sizeof *d->proxy_event_ops))
      return TG_ERROR_OUT_OF_HOST_MEMORY;
    e = a->EnqueueNDRangeKernel(d->profiling_queue, k, 1, NULL, &global, &local, 0, NULL, &ev);
    if (e != CL_SUCCESS) return fail_cl(d, e);
    d->proxy_events[d->proxy_event_count] = ev;
    d->proxy_event_ops[d->proxy_event_count++] = x->op;
    return TG_OK;
  }
  /* Untimed: in order with the shadow run's kernels. */
  tg_status st = reset_memory(d, ov->memory);
  for (uint32_t i = 0; st == TG_OK && i < x->in_count; ++i)
    st = reset_memory(d, ((const ocl_view *)x->in[i].view)->memory);
  if (st != TG_OK) return st;
  e = a->EnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, &local, 0, NULL, NULL);
  if (e != CL_SUCCESS) return fail_cl(d, e);
  return in_order(d);
}

static tg_status opencl_speed_end(void *impl, double *op_ms) {
  ocl_device *d = impl;
  const ocl_api *a = &d->api;
  if (!d->proxy_timed) return TG_OK; /* the shadow run's end waits */
  cl_int e = a->Finish(d->profiling_queue);
  tg_status st = e == CL_SUCCESS ? TG_OK : fail_cl(d, e);
  for (size_t i = 0; st == TG_OK && i < d->proxy_event_count; ++i) {
    cl_ulong t0 = 0, t1 = 0;
    e = a->GetEventProfilingInfo(d->proxy_events[i], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
    if (e == CL_SUCCESS)
      e = a->GetEventProfilingInfo(d->proxy_events[i], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
    if (e != CL_SUCCESS) st = fail_cl(d, e);
    else if (op_ms && t1 > t0) op_ms[d->proxy_event_ops[i]] += (double)(t1 - t0) / 1e6;
  }
  proxy_events_release(d);
  return st;
}

static void opencl_speed_abort(void *impl) {
  ocl_device *d = impl;
  if (d->profiling_queue) d->api.Finish(d->profiling_queue);
  proxy_events_release(d);
}

/* ------------------------------------------------------------------------------------------ */

static const tg__backend_vtable k_opencl = {
    TG_BACKEND_OPENCL,
    opencl_open,
    opencl_close,
    opencl_native_error,
    NULL,
    opencl_requirements,
    opencl_allocate,
    opencl_release,
    opencl_bind,
    opencl_unbind,
    opencl_handle,
    opencl_check_begin,
    opencl_check_op,
    opencl_check_end,
    opencl_check_abort,
    opencl_allocate_shared,
    opencl_map,
    opencl_unmap,
    opencl_check_sync,
    opencl_speed_begin,
    opencl_speed_dispatch,
    opencl_speed_end,
    opencl_speed_abort,
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
