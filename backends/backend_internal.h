/* The backend protocol: what a backend implements. The generic layer (backends/backend.c)
 * owns all orchestration: backend choice, fault injection, allocation bookkeeping and
 * rollback, arena records, validation, and the shadow run's order and signatures. A backend
 * only makes driver calls. */
#ifndef TANGRAM_BACKENDS_BACKEND_INTERNAL_H
#define TANGRAM_BACKENDS_BACKEND_INTERNAL_H

#include "core/internal.h"
#include "tangram/backend.h"

/* One tensor access in the shadow run. */
typedef struct tg__check_access {
  uint32_t signature_id;               /* record index + 1 */
  size_t record;                       /* index into the realization's records */
  void *view;                          /* what bind() returned for this record */
  const tg_tensor_resource *resource;  /* what the tensor is */
} tg__check_access;

/* One tensor of a proxy dispatch: its view and resource, and its layout in texels of 4
 * channels: w = W*B, h = H, s = slices (ceil(C/4)). Texel (x, y, z) is number
 * L = (z*h + y)*w + x; buffers hold texel L at bytes [L*texel, (L+1)*texel), texture_2d at
 * (x, z*h + y), arrays and 3D textures at (x, y, z). */
typedef struct tg__proxy_tensor {
  void *view;
  const tg_tensor_resource *resource;
  uint32_t w, h, s;
} tg__proxy_tensor;

/* One proxy kernel launch: texels [lo, hi) of `out` written (the signature of record
 * out_id - 1, so the shadow run can verify them), each from reads of the inputs in the
 * access pattern of op class `op_class` (tangram/speed.h; `kernel`: the stencil's k). Inputs
 * are all of one kind (buffer, or one image kind); 0 to 2 of them. */
typedef struct tg__proxy_dispatch {
  size_t op;
  int op_class;
  uint32_t kernel;
  tg__proxy_tensor out;
  uint32_t out_id;
  tg__proxy_tensor in[2];
  uint32_t in_count;
  uint32_t lo, hi;
} tg__proxy_dispatch;

typedef struct tg__backend_vtable {
  tg_backend_kind kind;
  /* Open: fill `info`, return the backend's state in *impl. A missing loader is
   * TG_ERROR_NO_LOADER, no device TG_ERROR_NO_DEVICE, with `err` saying why in one line. */
  tg_status (*open)(const tg_device_options *options, const tg_allocator *alloc, void **impl,
                    tg_device_info *info, tg_error_info *err);
  void (*close)(void *impl);
  int64_t (*native_error)(void *impl);            /* may be NULL: 0 */
  uint64_t (*validation_messages)(void *impl);    /* may be NULL: 0 */
  /* Real size/alignment of a resource on this device (may be NULL: bytes, buffer_alignment). */
  tg_status (*requirements)(void *impl, const tg_tensor_resource *resource,
                            tg_precision precision, tg_resource_requirements *out);
  /* One device allocation. `resource` is the shared object (a buffer of bytes or an image of
   * the object's extent) in objects mode; in arena mode a buffer of `resource->bytes` that
   * will hold every tensor (`arena` = 1; `memory_type_bits` may restrict where). */
  tg_status (*allocate)(void *impl, const tg_tensor_resource *resource, tg_precision precision,
                        int arena, void **memory);
  void (*release)(void *impl, void *memory);
  /* A tensor's view of an allocation: in objects mode `offset` is 0 and the tensor uses the
   * region of its own resource inside the object; in arena mode it starts at `offset`. */
  tg_status (*bind)(void *impl, void *memory, const tg_tensor_resource *object,
                    uint64_t offset, const tg_tensor_resource *tensor, tg_precision precision,
                    int arena, void **view);
  void (*unbind)(void *impl, void *view);
  /* Fill out->memory from `memory` and out->native from `view` (NULL view: memory only). */
  void (*handle)(void *impl, void *memory, void *view, tg_tensor_handle *out);
  /* Shadow run. begin: prepare for `op_count` ops and `record_count` mismatch counters; images
   * hold texels of `precision`.
   * op: verify `reads`, then write `writes`; when out of order, the op may start only after
   * the ops in `waits` finished (ops with no waits may start at once). end: wait for
   * everything and add mismatch counts per record into `mismatches`. abort: drop the run
   * after a failure. */
  tg_status (*check_begin)(void *impl, size_t record_count, size_t op_count, int out_of_order,
                           tg_precision precision);
  tg_status (*check_op)(void *impl, size_t op, const tg__check_access *reads, size_t read_count,
                        const tg__check_access *writes, size_t write_count,
                        const uint32_t *waits, size_t wait_count);
  tg_status (*check_end)(void *impl, uint64_t *mismatches, uint64_t *checked_bytes);
  void (*check_abort)(void *impl);
  /* Shared memory, which the host maps without a copy (may be NULL: the backend has none).
   * allocate_shared: as allocate() for a buffer (`resource->storage` is TG_STORAGE_BUFFER),
   * in memory the host can map (OpenCL CL_MEM_ALLOC_HOST_PTR, Vulkan a HOST_VISIBLE type);
   * views come from bind() and release from release(), as for device memory. The check never
   * resets shared memory: its user fills it through a mapping.
   * map: a host pointer to the whole memory (NULL for an empty one) holding everything the
   * device wrote to it before (the device's work on it has completed: check_sync). unmap: what
   * the host wrote becomes visible to device work submitted afterwards; the pointer is then
   * invalid. Both are cheap when nothing is pending. */
  tg_status (*allocate_shared)(void *impl, const tg_tensor_resource *resource,
                               tg_precision precision, int arena, void **memory);
  tg_status (*map)(void *impl, void *memory, void **host);
  tg_status (*unmap)(void *impl, void *memory);
  /* Shadow run, between check_begin and check_end: wait until every op passed so far has
   * finished on the device, its writes visible to the host after map(); the run continues with
   * later ops. May be NULL when check_op runs each op before returning (host). */
  tg_status (*check_sync)(void *impl);
  /* Proxy runs (tangram/speed.h; may be NULL: the backend has none). speed_begin: prepare for
   * ops numbered below `op_count`, images of `precision`. timed = 1: each dispatch is timed
   * with device timestamps and speed_end adds its device milliseconds into op_ms[op]; timed =
   * 0: dispatches go in order with the shadow run's kernels (called between check_begin and
   * check_end: the proxies then write what the check verifies), and speed_end only waits.
   * speed_dispatch: enqueue one proxy (tg__proxy_dispatch); TG_ERROR_UNSUPPORTED when the
   * device cannot run it (no 3D image writes). speed_abort drops a run after a failure. */
  tg_status (*speed_begin)(void *impl, size_t op_count, size_t dispatch_count, tg_precision precision,
                           int timed);
  tg_status (*speed_dispatch)(void *impl, const struct tg__proxy_dispatch *dispatch);
  tg_status (*speed_end)(void *impl, double *op_ms);
  void (*speed_abort)(void *impl);
} tg__backend_vtable;

/* Backends compiled in. Each returns NULL when the backend is not built. */
const tg__backend_vtable *tg__host_backend(void);
const tg__backend_vtable *tg__opencl_backend(void);
const tg__backend_vtable *tg__vulkan_backend(void);

/* Makes a backend's state from objects the caller owns (a borrowed context, queue or device):
 * what the vtable's open() does, on `borrowed` (a backend-specific descriptor) instead of
 * objects it creates. The backend remembers what it borrowed, and its close() releases only
 * what it created itself. On failure nothing is left behind and nothing borrowed is touched. */
typedef tg_status (*tg__wrap_fn)(const void *borrowed, const tg_device_options *options,
                                 const tg_allocator *alloc, void **impl, tg_device_info *info,
                                 tg_error_info *err);

/* Open a device of backend `kind`: through vt->open when `wrap` is NULL (tg_device_open), or
 * through `wrap(borrowed, ...)` (the tg_device_wrap_* calls, which live in a file of their own
 * above this layer so that no backend calls back into the generic layer). Fault injection and
 * everything after opening work the same for both. `*out` is NULL on failure. */
tg_status tg__device_open_with(tg_backend_kind kind, tg__wrap_fn wrap, const void *borrowed,
                               const tg_device_options *options, const tg_allocator *alloc,
                               tg_device **out, tg_error_info *err);

/* The backend state of an open device (what the vtable's open() returned), for a backend's own
 * test hooks. NULL for NULL. */
void *tg__device_impl(const tg_device *device);

/* What record `record` of a realization is to its backend: its device, and what the device's
 * allocate() and bind() returned for it, for a backend's typed accessors
 * (tg_vulkan_get_tensor). TG_ERROR_INVALID_ARGUMENT for NULL arguments or a record out of
 * range. */
tg_status tg__realization_parts(const tg_realization *realization, size_t record,
                               const tg_device **device, void **memory, void **view);

/* What a realization is, for generic code outside backend.c (backends/speed.c): its device,
 * precision, record count, and per record its resource and view (arrays owned by the
 * realization). TG_ERROR_INVALID_ARGUMENT for NULL. */
typedef struct tg__realization_info {
  tg_device *device;
  tg_precision precision;
  size_t record_count;
  const tg_tensor_resource *resources;
  void *const *views;
  const tg_allocator *alloc;    /* the realization's allocator */
} tg__realization_info;
tg_status tg__realization_describe(const tg_realization *realization, tg__realization_info *out);

/* The device's backend protocol, for generic code outside backend.c (backends/hetero.c). */
const tg__backend_vtable *tg__device_vtable(const tg_device *device);

/* Count one device object creation for fault injection (TANGRAM_FAIL_DEVICE_ALLOC_AT /
 * tg_device_options.fail_device_alloc_at): 1 when this creation must fail. */
int tg__device_inject_failure(tg_device *device);

/* The number of the last device object creation counted (for messages). */
uint64_t tg__device_creations(const tg_device *device);

/* Run-time pools (pool/) make single allocations through these. tg__device_allocate: one
 * driver allocation of `resource` (a buffer block with `arena` = 1, or an image), counted by
 * fault injection like every device object creation; `*memory` is NULL on failure and `err`
 * says why. tg__device_release gives it back (NULL is a no-op). tg__device_memory_native: the
 * driver's handle of an allocation (cl_mem, VkDeviceMemory, host pointer). */
tg_status tg__device_allocate(tg_device *device, const tg_tensor_resource *resource,
                              tg_precision precision, int arena, void **memory, tg_error_info *err);
void tg__device_release(tg_device *device, void *memory);
uint64_t tg__device_memory_native(tg_device *device, void *memory);

/* A realization over allocations the caller owns (a pool's blocks and images): record r is
 * `resources[r]`, placed in memories[memory_of[r]] at offset_of[r]. A memory whose object is
 * a buffer is bound like an arena (a view at the offset); an image like an object (offset 0).
 * tg_realization_destroy unbinds the views and leaves the memories alone; they must outlive
 * the realization. The check runs on it as on any realization (out-of-order waits treat
 * records in one memory as sharing it). On failure every view made is unbound. */
typedef struct tg__placed_desc {
  const tg_usage_record *records;
  const tg_tensor_resource *resources;
  size_t record_count;
  tg_precision precision;
  void *const *memories;
  const tg_tensor_resource *objects;   /* per memory: what was allocated */
  size_t memory_count;
  const uint32_t *memory_of;
  const uint64_t *offset_of;
} tg__placed_desc;
tg_status tg__realization_create_placed(tg_device *device, const tg__placed_desc *desc,
                                        const tg_allocator *alloc, tg_realization **out,
                                        tg_error_info *err);

/* Bytes per texel (4 channels) for a precision. */
static inline uint64_t tg__texel_bytes(tg_precision p) { return p == TG_PRECISION_FP16 ? 8u : 16u; }

/* 1 for image storages (TEXTURE_2D, TEXTURE_ARRAY, TEXTURE_3D, SINGLE_TEXTURE_2D). */
static inline int tg__storage_is_image(tg_storage s) {
  return s == TG_STORAGE_TEXTURE_2D || s == TG_STORAGE_TEXTURE_ARRAY ||
         s == TG_STORAGE_TEXTURE_3D || s == TG_STORAGE_SINGLE_TEXTURE_2D;
}

/* The half-float bits of a signature texel value (exact: values are integers < 1024). */
uint16_t tg__float_to_half_exact(float v);
float tg__half_to_float(uint16_t h);

#endif
