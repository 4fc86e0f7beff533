/* The backend protocol: what a backend implements (the vtable), and the small helpers every
 * backend shares. A backend (host/, opencl/, vulkan/) includes this header alone: it never
 * reaches the generic layer (backends/backend.c, backend_internal.h), which owns all
 * orchestration: backend choice, fault injection, allocation bookkeeping and rollback, arena
 * records, validation, and the shadow run's order and signatures. A backend only makes driver
 * calls. */
#ifndef TANGRAM_BACKENDS_PROTOCOL_H
#define TANGRAM_BACKENDS_PROTOCOL_H

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

/* Bytes per texel (4 channels) for a precision. */
static inline uint64_t tg__texel_bytes(tg_precision p) { return p == TG_PRECISION_FP16 ? 8u : 16u; }

/* Verify (write = 0) or write the signature of record `id` over the `bytes` of a buffer at
 * `base`, as the backends' buffer kernels do: 32-bit words, then the tail bytes. Returns the
 * mismatches (0 when writing). */
uint64_t tg__signature_buffer_access(uint8_t *base, uint64_t bytes, uint32_t id, int write);

/* The half-float bits of a signature texel value (exact: values are integers < 1024). */
uint16_t tg__float_to_half_exact(float v);
float tg__half_to_float(uint16_t h);


#endif
