/* The generic layer's internal interface (backends/backend.c): opening devices on a backend,
 * the device's bookkeeping, placed realizations. The protocol a backend implements is
 * backends/protocol.h. */
#ifndef TANGRAM_BACKENDS_BACKEND_INTERNAL_H
#define TANGRAM_BACKENDS_BACKEND_INTERNAL_H

#include "backends/protocol.h"
#include "core/internal.h"
#include "tangram/backend.h"

/* Open a device of backend `kind`: through vt->open when `wrap` is NULL (tg_device_open), or
 * through `wrap(borrowed, ...)` (the tg_device_wrap_* calls, which live in a file of their own
 * above this layer so that no backend calls back into the generic layer). Fault injection and
 * everything after opening work the same for both. `*out` is NULL on failure. */
tg_status tg__device_open_with(tg_backend_kind kind, tg__wrap_fn wrap, const void *borrowed,
                               const tg_device_options *options, const tg_allocator *alloc,
                               tg_device **out, tg_error_info *err);

/* A realization (tangram/backend.h): made by backends/backend.c, re-offset by
 * backends/reoffset.c. */
struct tg_realization {
  tg_device *device;
  tg_allocator alloc;
  tg_mode mode;
  tg_precision precision;
  uint32_t dims;                   /* of the records */
  size_t record_count;
  size_t memory_count;
  void **memories;                 /* memory_count allocations */
  tg_tensor_resource *objects;     /* the resource allocated per memory (arenas: a buffer) */
  uint32_t *memory_of;             /* per record: which memory */
  uint64_t *offset_of;             /* per record: offset in its memory */
  void **views;                    /* per record */
  tg_tensor_resource *resources;   /* per record (copy) */
  tg_usage_record *records;        /* per record (copy) */
  tg_realization_stats stats;
  int borrowed;                    /* memories belong to the caller (tg__realization_create_placed) */
};

/* The checks tg_realization_create makes of a description before creating anything: arrays
 * that agree, the validator (unless skip_validation), images only on a device with image
 * support, and in an arena only where it can place them. */
tg_status tg__realize_desc_check(tg_device *device, const tg_realize_desc *desc, const tg_allocator *alloc,
                                 tg_error_info *err);

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
 * tg_device_options.fail_device_alloc_at): TG_ERROR_OUT_OF_DEVICE_MEMORY, with the creation's
 * number in `err`, when this creation must fail; TG_OK otherwise. */
tg_status tg__device_inject_failure(tg_device *device, tg_error_info *err);

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

#endif
