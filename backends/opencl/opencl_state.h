/* The OpenCL backend's state and what its files share (device.c, loader.c, memory.c, check.c,
 * speed.c). Private to backends/opencl/: the rest of the library and the tests use
 * opencl_internal.h. */
#ifndef TANGRAM_BACKENDS_OPENCL_STATE_H
#define TANGRAM_BACKENDS_OPENCL_STATE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __APPLE__
#include <OpenCL/cl.h>
#else
#include <CL/cl.h>
#endif

#include "backends/protocol.h"
#include "tangram/opencl.h"

/* Queries from OpenCL 2.0 / extensions, by value so the 1.2 headers suffice. */
#define OCL_PLATFORM_NOT_FOUND_KHR (-1001)
#define OCL_DEVICE_IMAGE_PITCH_ALIGNMENT 0x104A
#define OCL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT 0x104B
#define OCL_QUEUE_ON_DEVICE (1 << 2)

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

/* ---- loader.c: entry points and errors. ---- */

tg_status tg__ocl_api_load(ocl_api *api, const char *library, tg_error_info *err);
tg_status tg__ocl_fail_cl(ocl_device *d, cl_int e);

/* ---- memory.c: realisation and shared memory (the vtable's requirements ... unmap). ---- */

int tg__ocl_image_kind(tg_storage s);
tg_status tg__ocl_requirements(void *impl, const tg_tensor_resource *r, tg_precision p,
                               tg_resource_requirements *out);
tg_status tg__ocl_allocate(void *impl, const tg_tensor_resource *r, tg_precision precision,
                           int arena, void **memory);
void tg__ocl_release(void *impl, void *memory);
tg_status tg__ocl_bind(void *impl, void *memory, const tg_tensor_resource *object,
                       uint64_t offset, const tg_tensor_resource *tensor,
                       tg_precision precision, int arena, void **view);
void tg__ocl_unbind(void *impl, void *view);
void tg__ocl_handle(void *impl, void *memory, void *view, tg_tensor_handle *out);
tg_status tg__ocl_allocate_shared(void *impl, const tg_tensor_resource *r,
                                  tg_precision precision, int arena, void **memory);
tg_status tg__ocl_map(void *impl, void *memory, void **host);
tg_status tg__ocl_unmap(void *impl, void *memory);

/* ---- check.c: the shadow run (the vtable's check_*). ---- */

tg_status tg__ocl_in_order(ocl_device *d);
void tg__ocl_check_reset(ocl_device *d);
tg_status tg__ocl_check_begin(void *impl, size_t record_count, size_t op_count,
                              int out_of_order, tg_precision precision);
tg_status tg__ocl_reset_memory(ocl_device *d, ocl_memory *m);
tg_status tg__ocl_check_op(void *impl, size_t op, const tg__check_access *reads,
                           size_t read_count, const tg__check_access *writes,
                           size_t write_count, const uint32_t *waits, size_t wait_count);
tg_status tg__ocl_check_end(void *impl, uint64_t *mismatches, uint64_t *checked_bytes);
void tg__ocl_check_abort(void *impl);
tg_status tg__ocl_check_sync(void *impl);

/* ---- speed.c: the speed proxies (the vtable's speed_*). ---- */

void tg__ocl_proxy_release(ocl_device *d);
tg_status tg__ocl_speed_begin(void *impl, size_t op_count, size_t dispatch_count, tg_precision precision,
                              int timed);
tg_status tg__ocl_speed_dispatch(void *impl, const tg__proxy_dispatch *x);
tg_status tg__ocl_speed_end(void *impl, double *op_ms);
void tg__ocl_speed_abort(void *impl);

#endif
