/* Backends: open a device, realise a plan as real device memory, and prove with an on-device
 * check ("shadow run") that the plan corrupts nothing. One protocol; the host, OpenCL and
 * Vulkan backends differ only in their driver calls. */
#ifndef TANGRAM_BACKEND_H
#define TANGRAM_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/planner.h"
#include "tangram/schedule.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* Which driver API a device is opened through. */
typedef enum tg_backend_kind {
  TG_BACKEND_AUTO = 0,   /* $TANGRAM_BACKEND if set, else the first that opens: vulkan, opencl, host */
  TG_BACKEND_HOST = 1,   /* aligned host memory; the reference implementation */
  TG_BACKEND_OPENCL = 2, /* OpenCL through the ICD loader, loaded at run time */
  TG_BACKEND_VULKAN = 3, /* Vulkan through volk, loaded at run time */
  TG_BACKEND_COUNT
} tg_backend_kind;

/* "auto", "host", "opencl", "vulkan"; NULL when out of range. Static string. */
const char *tg_backend_name(tg_backend_kind kind);
/* Parse a backend name as above. TG_ERROR_INVALID_ARGUMENT if unknown (`*out` untouched). */
tg_status tg_backend_from_name(const char *name, tg_backend_kind *out);

/* What a device is and what it can do. Filled by tg_device_open. */
typedef struct tg_device_info {
  tg_backend_kind backend;
  char name[256];                 /* the driver's device name */
  char kind[32];                  /* "gpu", "integrated-gpu", "cpu", "host", "other" */
  char driver[256];               /* platform / driver / API version */
  tg_device_limits limits;        /* image extents, layers, max buffer */
  uint64_t memory_budget;         /* bytes the device says are available */
  uint64_t max_allocation;        /* largest single allocation in bytes */
  uint64_t buffer_alignment;      /* offset alignment of a buffer inside an allocation */
  uint64_t image_alignment;       /* offset alignment of an image inside an allocation */
  uint64_t buffer_image_granularity; /* Vulkan: separation of linear and optimal resources */
  int images;                     /* images (textures) supported */
  int fp16_images;                /* half-float images supported */
  int image2d_from_buffer;        /* OpenCL cl_khr_image2d_from_buffer */
  int arena_images;               /* images can be placed at offsets inside one allocation */
  int out_of_order;               /* ops can run concurrently (out-of-order queue / events) */
  /* One kernel may read and write the same image or image buffer: Vulkan storage images and
   * texel buffers, the host; not OpenCL 1.2 images. Where it is 0, in-place elementwise pairs
   * on image storages are not for this device (tg_model_in_place_pairs' `images`). */
  int read_write_images;
} tg_device_info;

/* Options for tg_device_open. Zero-initialised = defaults. */
typedef struct tg_device_options {
  tg_backend_kind backend;
  const char *device;             /* device index ("0") or name substring; NULL = prefer a GPU */
  /* Fault injection: the Nth device object creation (allocation, sub-buffer, image, bound
   * resource) fails with TG_ERROR_OUT_OF_DEVICE_MEMORY. 0 = read TANGRAM_FAIL_DEVICE_ALLOC_AT. */
  uint64_t fail_device_alloc_at;
  int validation;                 /* Vulkan: validation + synchronization validation layers */
} tg_device_options;

/* A backend that `auto` passed over, and why (e.g. "libOpenCL.so.1 not found"). */
typedef struct tg_backend_skip {
  tg_backend_kind backend;
  tg_status status;
  char reason[256];
} tg_backend_skip;

/* An open device (opaque). Use from one thread at a time. */
typedef struct tg_device tg_device;

/* Open a device. With TG_BACKEND_AUTO, tries Vulkan, OpenCL, then host, and records each one
 * passed over in `skipped` (capacity TG_BACKEND_COUNT; may be NULL) and `*skipped_count`.
 * An explicit backend that cannot open is an error (no fallback). The caller owns the device
 * (tg_device_close); `*out` is NULL on failure. */
tg_status tg_device_open(const tg_device_options *options, const tg_allocator *alloc,
                         tg_device **out, tg_backend_skip *skipped, size_t *skipped_count,
                         tg_error_info *err);
/* Close a device. Every realization made on it must be destroyed first. NULL is a no-op. */
void tg_device_close(tg_device *device);
/* The device's description (valid while the device is open). Cheap. */
const tg_device_info *tg_device_get_info(const tg_device *device);
/* The driver's own code for the last failure (cl_int or VkResult), 0 if none. Cheap. */
int64_t tg_device_get_native_error(const tg_device *device);
/* Vulkan with validation: messages reported by the layers so far; else 0. Cheap. */
uint64_t tg_device_get_validation_messages(const tg_device *device);

/* What one tensor is on the device: a linear buffer (BUFFER, IMAGE_BUFFER; `bytes`) or an
 * image (TEXTURE_*; `extent` in texels: 2D (w,h,1); array (w,h,layers); 3D (w,h,d)). */
typedef struct tg_tensor_resource {
  tg_storage storage;
  tg_extent extent;
  uint64_t bytes;
} tg_tensor_resource;

/* The byte size and alignment a device really needs for a resource (Vulkan asks the driver;
 * others compute it). `linear` is 1 for buffers and linear images, 0 for optimal-tiling
 * images (matters for bufferImageGranularity). */
typedef struct tg_resource_requirements {
  uint64_t size;
  uint64_t alignment;
  int linear;
} tg_resource_requirements;

/* Fill `*out` with what `resource` needs on `device` at `precision`. TG_ERROR_INVALID_ARGUMENT
 * for NULL arguments; TG_ERROR_OVERFLOW when the size does not fit 64 bits; a driver
 * failure's status otherwise. May call the driver (Vulkan creates and destroys a resource to
 * ask). */
tg_status tg_device_compute_requirements(tg_device *device, const tg_tensor_resource *resource,
                                         tg_precision precision, tg_resource_requirements *out);

/* Byte records for an arena (offsets mode) holding these resources: each record gets the
 * device's real size and alignment (and granularity between linear and optimal resources),
 * with the task intervals of `records`. The result is a 1D record set to plan in offsets
 * mode and realise with the same resources, in the same order: its record i is resources[i]
 * and records[i] (so a record -> tensor map of `records` holds for it too, for
 * tg_policy_relation_create and the check). The caller owns the set; `*out` is NULL on
 * failure (statuses of tg_device_compute_requirements, TG_ERROR_OVERFLOW when rounding to
 * the granularity overflows, TG_ERROR_OUT_OF_HOST_MEMORY). */
tg_status tg_device_compute_arena_records(tg_device *device, const tg_tensor_resource *resources,
                                          const tg_usage_record *records, size_t count,
                                          tg_precision precision, const tg_allocator *alloc,
                                          tg_record_set **out);

/* What to realise. Read only during tg_realization_create (the realization copies what it
 * keeps). */
typedef struct tg_realize_desc {
  const tg_plan *plan;                    /* objects or offsets */
  const tg_usage_record *records;         /* the records the plan was made for */
  size_t record_count;
  uint32_t dims;                          /* of `records` */
  const tg_tensor_resource *resources;    /* per record: what the tensor is on the device */
  tg_precision precision;
  int skip_validation;                    /* tests only: realise a plan the validator rejects */
} tg_realize_desc;

/* Statistics of a realization. Cheap. */
typedef struct tg_realization_stats {
  uint64_t allocations;       /* device allocations made (objects, or 1 per arena) */
  uint64_t allocated_bytes;   /* bytes requested from the driver for those allocations */
  uint64_t views;             /* per-tensor views (sub-buffers, bound buffers/images) */
  uint64_t reoffsets;         /* tg_realization_reoffset calls that succeeded */
  uint64_t views_remade;      /* views those calls made again (tensors whose place changed) */
} tg_realization_stats;

/* A tensor's place on the device. `native` is a cl_mem, VkBuffer/VkImage (as uint64), or a
 * host pointer; `offset` is where the tensor starts inside `memory` (arena) else 0. */
typedef struct tg_tensor_handle {
  uint64_t native;
  uint64_t memory;
  uint64_t offset;
  tg_extent region;           /* images: the texels the tensor uses; buffers: (bytes,1,1) */
} tg_tensor_handle;

/* A plan made real on one device (opaque). Use from one thread at a time, like its device. */
typedef struct tg_realization tg_realization;

/* Create every allocation the plan needs (objects: one per shared object; offsets: one arena)
 * and a view per tensor. The plan is validated first unless desc->skip_validation. On any
 * failure everything created so far is released and `*out` is NULL. */
tg_status tg_realization_create(tg_device *device, const tg_realize_desc *desc,
                                const tg_allocator *alloc, tg_realization **out,
                                tg_error_info *err);
/* Room for the tensors of other sizes of the same model (plans over a range of input sizes,
 * tangram/range_plan.h): each allocation made at least this large, so that
 * tg_realization_reoffset places those sizes without allocating. */
typedef struct tg_realize_capacity {
  /* Offsets mode: per arena (at most the plan's arenas), its bytes as (bytes, 1, 1). Objects
   * mode: per object, its extent: texels for images (per axis), (bytes, 1, 1) for buffers;
   * entries past the plan's objects are objects the plan does not use yet (other sizes' plans
   * may), made with the storage of the first tensor. An entry below the plan's own size counts
   * as the plan's. */
  const tg_extent *extent;
  size_t count;
} tg_realize_capacity;

/* tg_realization_create, with every allocation at least as large as `capacity` asks (NULL: as
 * tg_realization_create). The same failures, and TG_ERROR_INVALID_ARGUMENT for a capacity of
 * more arenas than the plan has. Cost: as tg_realization_create, with the larger allocations. */
tg_status tg_realization_create_with_capacity(tg_device *device, const tg_realize_desc *desc,
                                              const tg_realize_capacity *capacity, const tg_allocator *alloc,
                                              tg_realization **out, tg_error_info *err);

/* Place the realization's tensors as `desc` says: the same model's records at another size,
 * its plan there (typically tg_range_plan_instantiate's) and its resources; the plan's mode,
 * the record count, dims, precision and each tensor's storage must be the realization's.
 * What stays: every allocation (no memory is allocated, released or moved), and the view of
 * each tensor whose allocation, offset and resource are unchanged. What is made again: the
 * view of each other tensor (host: a pointer and pitch; OpenCL: a sub-buffer in an arena, none
 * in an object; Vulkan: the VkBuffer or VkImage bound to the memory at its offset), counted in
 * views_remade. Handles from tg_realization_get_tensor of those tensors become invalid.
 * The plan is validated first unless desc->skip_validation (an instance of a range plan is
 * valid by construction: an engine may skip the validator's O(n log n)). Fails with
 * TG_ERROR_LIMIT, naming the allocation and the tensor, when a tensor does not fit the
 * allocation it is placed in (an arena's bytes, an object's bytes or extent per axis): make a
 * realization with more capacity (tg_realization_create_with_capacity, e.g. twice the size);
 * TG_ERROR_INVALID_ARGUMENT when desc does not match the realization; the validator's and the
 * driver's failures. On any failure the realization is as it was (its tensors at the previous
 * size, every handle valid). Cost: O(records) plus one view per tensor that moved. */
tg_status tg_realization_reoffset(tg_realization *realization, const tg_realize_desc *desc, tg_error_info *err);

/* Release all device memory of a realization. NULL is a no-op. */
void tg_realization_destroy(tg_realization *realization);
/* Fill `*out` with the realization's statistics (zeros for a NULL realization). Cheap. */
void tg_realization_get_stats(const tg_realization *realization, tg_realization_stats *out);
/* Where record `record` lives. The handles stay owned by the realization and are valid until
 * it is destroyed. TG_ERROR_INVALID_ARGUMENT for a record out of range. Cheap. */
tg_status tg_realization_get_tensor(const tg_realization *realization, size_t record,
                                    tg_tensor_handle *out);

/* The shadow run. Ops are visited in order. For each op, every input record is verified to
 * still hold the signature its producer wrote (a pattern derived from the record's index over
 * its whole extent), then every output record's signature is written. Without a graph, record
 * r is written at first_task and verified at last_task (when last_task > first_task). With `out_of_order`, ops run
 * concurrently except where `waits` orders them (graph edges, plus reuse edges for serial
 * plans): a plan that needs more ordering than given shows up as corruption. */
/* What the check runs (NULL or a zeroed struct: records in task order, in order). Read only
 * during tg_realization_check. */
typedef struct tg_check_desc {
  const tg_graph *graph;                  /* may be NULL */
  const uint32_t *tensor_of_record;       /* with a graph: record -> tensor index */
  int out_of_order;
  size_t op_count;                        /* with waits: number of ops (tasks) */
  const uint32_t *wait_counts;            /* per op: how many ops it waits for (NULL = in order) */
  const uint32_t *const *waits;           /* per op: the ops it waits for */
} tg_check_desc;

/* Point `desc`'s op_count, wait_counts and waits at `lists` (schedule.h), which must outlive
 * the check: the out-of-order check then orders ops exactly as `lists` does. Cheap. A NULL
 * argument leaves `desc` as it was. */
void tg_check_desc_use_waits(tg_check_desc *desc, const tg_wait_lists *lists);

/* What the check found. `mismatches` is set by the caller before the call; the rest is
 * output. */
typedef struct tg_check_result {
  uint64_t corrupted_records;   /* records with at least one mismatching word/texel */
  uint64_t *mismatches;         /* caller array of record_count entries, or NULL */
  uint64_t checked_bytes;       /* bytes verified */
} tg_check_result;

/* Run the check. TG_OK when it ran (look at out->corrupted_records); an error when the device
 * failed or host memory ran out (`err` says which). Writes and reads every record's whole
 * extent once per producer and consumer: cost grows with the realised bytes. */
tg_status tg_realization_check(tg_realization *realization, const tg_check_desc *desc,
                               tg_check_result *out, tg_error_info *err);
/* The check of one execution of a graph with control flow: the ops run in `run_order`
 * (`length` op indices, from tg_graph_run_order: a chosen branch of every If, a chosen number
 * of loop iterations) instead of every op once (desc->graph required, else
 * TG_ERROR_INVALID_ARGUMENT). A record whose producer has not run yet in the sequence (an
 * output of the branch not taken, of a body run zero times) is not verified where it is read.
 * With `out_of_order` (and waits), as an engine with an out-of-order queue runs it: each entry
 * is a task of its own that waits for the latest run of each op its op waits for; where the
 * host decides (an op marked TG_OP_CONTROL_FLOW, the first op of a branch or of a loop's
 * subgraph: which branch, whether another iteration) a task waits for every task before it
 * and every task after it waits for it. */
tg_status tg_realization_check_run(tg_realization *realization, const tg_check_desc *desc,
                                   const uint32_t *run_order, size_t length,
                                   tg_check_result *out, tg_error_info *err);

/* The signature word `index` of record `id` (what buffers hold), and the value of texel
 * channel `index` (what images hold: exact in fp16 and fp32). Every backend's kernels compute
 * exactly these. Pure functions. */
uint32_t tg_signature_word(uint32_t id, uint32_t index);
float tg_signature_texel(uint32_t id, uint32_t index);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
