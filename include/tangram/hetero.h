/* Heterogeneous realisation: the plans of every memory space (tangram/placement.h) made real
 * on one device, with device memory for GPU-only tensors, plain host memory for CPU-only
 * tensors and shared memory (CPU-mappable without a copy) for the tensors at the boundary; and
 * an on-device check that runs GPU ops as kernels and CPU ops on the host, through mapped
 * memory, so that a missing wait between the processors shows up as corruption. */
#ifndef TANGRAM_HETERO_H
#define TANGRAM_HETERO_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/backend.h"
#include "tangram/graph.h"
#include "tangram/placement.h"
#include "tangram/planner.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* One planned record set and the space it lives in. Read only during the call. */
typedef struct tg_hetero_set_desc {
  tg_space space;
  const tg_plan *plan;                    /* objects or offsets; NULL only for an empty set */
  const tg_usage_record *records;         /* the records the plan was made for */
  size_t record_count;
  uint32_t dims;
  const tg_tensor_resource *resources;    /* per record; host and shared sets: buffers only */
  const uint32_t *tensor_of;              /* per record: graph tensor (for the check) */
} tg_hetero_set_desc;

/* What to realise. Records are numbered across sets: set 0's first, then set 1's, ... */
typedef struct tg_hetero_realize_desc {
  const tg_hetero_set_desc *sets;
  size_t set_count;
  tg_precision precision;
  int skip_validation;                    /* tests only: realise plans the validator rejects */
} tg_hetero_realize_desc;

/* A heterogeneous realisation (opaque). Use from one thread at a time, like its device. */
typedef struct tg_hetero_realization tg_hetero_realization;

/* What a realisation allocated, per space. */
typedef struct tg_hetero_stats {
  uint64_t allocations[TG_SPACE_COUNT];     /* objects, or one arena per set */
  uint64_t allocated_bytes[TG_SPACE_COUNT];
  uint64_t views;                           /* per-tensor device views (device and shared) */
} tg_hetero_stats;

/* Create every allocation of every set: device sets with the device's memory (as
 * tg_realization_create), shared sets in memory the host maps without a copy (OpenCL
 * CL_MEM_ALLOC_HOST_PTR, Vulkan a HOST_VISIBLE type, the host backend's plain memory) with a
 * device view per tensor, host sets in host memory from `alloc` (64-byte aligned). Each plan is
 * validated first unless skip_validation. TG_ERROR_UNSUPPORTED when a host or shared set holds
 * images (no API maps an image without a copy: plan shared tensors as buffers, as tg_spaces
 * does) or the device has no shared memory. On any failure everything made so far is released
 * and `*out` is NULL; fault injection (TANGRAM_FAIL_DEVICE_ALLOC_AT, failing allocators) covers
 * every device and host allocation. */
tg_status tg_hetero_realization_create(tg_device *device, const tg_hetero_realize_desc *desc,
                                       const tg_allocator *alloc, tg_hetero_realization **out,
                                       tg_error_info *err);

/* Release everything (unmapping shared memory first). NULL is a no-op. */
void tg_hetero_realization_destroy(tg_hetero_realization *realization);

/* Fill `*out` (zeros for NULL). Cheap. */
void tg_hetero_realization_get_stats(const tg_hetero_realization *realization,
                                     tg_hetero_stats *out);

/* Map every shared allocation for the host (OpenCL: a blocking map; Vulkan: invalidate when the
 * memory is not coherent). The device must not be using it. Until tg_hetero_realization_unmap,
 * tg_hetero_realization_get_tensor gives shared tensors' host pointers. */
tg_status tg_hetero_realization_map(tg_hetero_realization *realization, tg_error_info *err);
/* Unmap (OpenCL: unmap; Vulkan: flush when not coherent): the host's writes become visible to
 * device work submitted afterwards. No-op when not mapped. */
tg_status tg_hetero_realization_unmap(tg_hetero_realization *realization, tg_error_info *err);

/* Where record `record` (numbered across sets) lives: `*space`, its device handle (device and
 * shared records; zeroed for host records) and its host pointer (host records always; shared
 * records while mapped; else NULL). Any output may be NULL. TG_ERROR_INVALID_ARGUMENT for a
 * record out of range. Cheap. */
tg_status tg_hetero_realization_get_tensor(const tg_hetero_realization *realization,
                                           size_t record, tg_space *space,
                                           tg_tensor_handle *handle, void **host);

/* The check over both processors. Ops run in order, or out of order in an order the waits
 * allow, taking the highest-numbered ready op first (so ops that nothing orders run in the
 * opposite of program order, deterministically). GPU ops verify and write signatures with the
 * device's kernels (their device waits: those on GPU ops started since the device last
 * drained), in op order among themselves when the device cannot run ops out of order; CPU ops
 * do it on the host through plain or mapped memory, one at a time, in op order among
 * themselves. Before a CPU op, every GPU op started so far finishes and the shared memory it
 * touches is mapped; before the next GPU op it is unmapped. Records no op writes (graph
 * inputs) are written before the first op: by the host in host and shared memory, by a first
 * device step in device memory. A plan, or waits, that let one processor write memory the
 * other still needs therefore show up as corrupted records. */
typedef struct tg_hetero_check_desc {
  const tg_graph *graph;                  /* required */
  const tg_processor *processor_of;       /* per op; NULL = every op on the GPU */
  int out_of_order;
  /* Out of order: per op, the ops it waits for (tg_spaces_waits: graph edges and reuse edges;
   * each below the op). NULL: the graph's edges alone. The CPU's op order is always kept. */
  const size_t *wait_start;
  const uint32_t *waits;
} tg_hetero_check_desc;

/* Run the check. TG_OK when it ran (look at out->corrupted_records; out->mismatches, when set,
 * has one entry per record numbered across sets); TG_ERROR_INVALID_ARGUMENT when an op touches
 * a record its processor cannot reach (a GPU op and host memory, a CPU op and device memory) or
 * a wait is not below its op; a device or host-memory error otherwise. Cost: every record's
 * bytes written once and read once per consumer, plus a device drain per switch from GPU to
 * CPU ops. */
tg_status tg_hetero_realization_check(tg_hetero_realization *realization,
                                      const tg_hetero_check_desc *desc, tg_check_result *out,
                                      tg_error_info *err);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
