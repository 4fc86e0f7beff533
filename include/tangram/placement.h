/* Heterogeneous graphs: each op runs on the GPU (the device) or the CPU (the host), and each
 * planned tensor lives in one of three memory spaces: device memory (touched only by GPU ops),
 * host memory (only by CPU ops) or shared memory that both processors use without a copy (the
 * tensors at the boundary). Each space is planned on its own, in one tg_plan_compute call per
 * record set, with a may-share relation that accounts for both processors' timelines.
 * docs/heterogeneous.md describes the model. */
#ifndef TANGRAM_PLACEMENT_H
#define TANGRAM_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/planner.h"
#include "tangram/records.h"
#include "tangram/schedule.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* ------------------------------------------------------------------------------------------ */
/* Placement: a processor per op. */

/* Where an op runs. A placement is an array of `graph->op_count` tg_processor values, indexed
 * like graph->ops, passed alongside the graph (NULL where a placement is optional means every
 * op on the GPU). Folded ops (they only compute constants, at load time) keep their entry but
 * touch no planned tensor, so it changes nothing. */
typedef enum tg_processor {
  TG_PROCESSOR_GPU = 0,  /* the device the plan is realised on */
  TG_PROCESSOR_CPU = 1,  /* the host */
  TG_PROCESSOR_COUNT
} tg_processor;

/* "gpu" / "cpu"; NULL when out of range. Static string. */
const char *tg_processor_name(tg_processor processor);
/* Parse "gpu" / "cpu". TG_ERROR_INVALID_ARGUMENT if unknown (`*out` untouched). */
tg_status tg_processor_from_name(const char *name, tg_processor *out);

/* The default profile ("auto"): 1 when `op_name` is a TFLite builtin op that a mobile GPU path
 * runs (the GPU delegate's builtin set, listed in docs/heterogeneous.md), 0 otherwise: custom
 * ops (MediaPipe's Convolution2DTransposeBias, MaxPoolingWithArgmax2D, ...) and builtins
 * without a GPU kernel (ARG_MAX, CAST, GATHER_ND, NON_MAX_SUPPRESSION_V4, TOPK_V2, ...) run on
 * the CPU. Names compare exactly (case-sensitive). NULL gives 0. */
int tg_placement_gpu_supports(const char *op_name);

/* Set every op of `graph` from a placement spec (`processor_of`: graph->op_count entries):
 *   "auto"              the default profile (tg_placement_gpu_supports)
 *   "gpu"               every op on the GPU (the placement of a graph without one)
 *   "cpu:TYPE[,TYPE]"   ops whose name is one of the TYPEs on the CPU, every other op on the
 *                       GPU; "cpu:*" puts every op on the CPU
 * TG_ERROR_INVALID_ARGUMENT (with `err` naming the problem) for another spec, an empty TYPE,
 * or a TYPE no op of the graph has (a misspelt type would otherwise change nothing);
 * `processor_of` is then untouched. O(ops x TYPEs). */
tg_status tg_placement_apply_spec(const tg_graph *graph, const char *spec,
                                  tg_processor *processor_of, tg_error_info *err);

/* Apply a place file on top of `processor_of` (graph->op_count entries, already set: by
 * tg_placement_apply_spec or to TG_PROCESSOR_GPU). One entry per line, later lines winning:
 *   OP PROCESSOR          OP is an op index (decimal) or an op name (every op with that name;
 *                         the rest of the line before PROCESSOR, so names may hold spaces);
 *                         PROCESSOR is gpu or cpu; "OP -> PROCESSOR", "OP=PROCESSOR" and
 *                         "OP,PROCESSOR" are accepted too
 *   # comment             blank lines and comments are skipped
 * `text` need not be NUL-terminated; `source` names it in messages ("place.txt:3: ..."). On
 * failure (TG_ERROR_PARSE: an index out of range, a name no op has, an unknown processor, a
 * line without one, a NUL byte) `processor_of` is untouched and `err` says where. Linear in
 * `length` plus the ops matched by name. */
tg_status tg_placement_parse(const tg_graph *graph, const char *text, size_t length,
                             const char *source, tg_processor *processor_of,
                             tg_error_info *err);

/* tg_placement_parse on the contents of the file at `path` (TG_ERROR_IO when it cannot be
 * read). Host memory for the text comes from `alloc`. */
tg_status tg_placement_read_file(const tg_graph *graph, const char *path,
                                 const tg_allocator *alloc, tg_processor *processor_of,
                                 tg_error_info *err);

/* ------------------------------------------------------------------------------------------ */
/* Memory spaces. */

/* Where a planned tensor lives, from the processors of the ops touching it (its producer and
 * consumers): only GPU ops -> device memory; only CPU ops -> host memory; both -> shared memory,
 * which both processors use without a copy (OpenCL: CL_MEM_ALLOC_HOST_PTR, mapped for the CPU;
 * Vulkan: a HOST_VISIBLE memory type, flushed/invalidated when not coherent; host backend:
 * plain memory). A planned tensor no op touches (a graph input or output nothing reads or
 * writes, with plan_io) is in device memory. Graph inputs are written and outputs read by the
 * engine around the run, by neither processor. */
typedef enum tg_space {
  TG_SPACE_DEVICE = 0,
  TG_SPACE_HOST = 1,
  TG_SPACE_SHARED = 2,
  TG_SPACE_COUNT
} tg_space;

/* "device", "host", "shared"; NULL when out of range. Static string. */
const char *tg_space_name(tg_space space);

/* The record sets of a heterogeneous plan, in this fixed order. */
enum {
  TG_SET_DEVICE = 0,          /* device tensors in the device storage */
  TG_SET_DEVICE_FALLBACK = 1, /* device tensors that do not fit that storage, as buffers */
  TG_SET_HOST = 2,            /* host tensors, as buffers */
  TG_SET_SHARED = 3,          /* shared tensors, as buffers */
  TG_SET_COUNT = 4
};

/* One record set: every record lives in `space`. Host and shared records are buffers in the
 * device's buffer layout (tg_storage_extent with TG_STORAGE_BUFFER: B*H*W*ceil(C/4)*4 elements
 * of the precision), so a CPU op reads the layout a GPU kernel writes: no conversion, no copy.
 * Shared tensors are buffers even when the storage is a texture: an image is not mappable by the
 * CPU without a copy on every API (Vulkan images use optimal tiling; OpenCL may copy on map). */
typedef struct tg_space_set {
  tg_space space;
  tg_storage storage;            /* the records' storage (TG_STORAGE_BUFFER but for TG_SET_DEVICE) */
  tg_record_set *records;        /* never NULL; count may be 0 */
  uint32_t *tensor_of;           /* records->count tensor indices */
} tg_space_set;

/* The spaces of one graph under one placement. Read-only after creation; owns everything. */
typedef struct tg_spaces {
  size_t op_count;
  size_t tensor_count;
  tg_processor *processor_of;    /* per op: a copy of the placement */
  tg_space *space_of_tensor;     /* per tensor; TG_SPACE_COUNT when the tensor is not planned */
  /* Per processor, per tensor: the last op of that processor touching it (producer or
   * consumer), -1 when none does. */
  int32_t *last_op_on[TG_PROCESSOR_COUNT];
  tg_space_set sets[TG_SET_COUNT];
  /* Every planned tensor once, in the order of tg_model_records_create (producer op order;
   * graph inputs first with plan_io): its set and its index there. */
  size_t record_count;
  uint32_t *tensor_of;           /* record_count tensor indices */
  uint8_t *set_of;               /* record_count TG_SET_* values */
  size_t *index_in_set;          /* record_count indices into sets[set_of[r]] */
  /* Shared tensors the device storage would have made images (texture storages): they are
   * buffers in shared memory instead. */
  size_t images_as_buffers;
  tg_storage storage;            /* the device storage */
  tg_precision precision;
  tg_allocator alloc;
} tg_spaces;

/* The spaces of `graph` (with `lifetimes` from tg_graph_compute_lifetimes on it) under
 * `processor_of` (graph->op_count entries; NULL = every op on the GPU). `device_records` are the
 * graph's records for the device storage (tg_model_records_create on the same graph and
 * lifetimes); device-space tensors keep their record there (primary or fallback), host and
 * shared tensors get buffer records of the same precision (no device limit applies to host
 * memory; shared buffers meet the device's when realised). Intervals are the lifetimes'.
 * TG_ERROR_INVALID_ARGUMENT for mismatched inputs or a processor out of range (naming the op),
 * TG_ERROR_OVERFLOW for a buffer size beyond 64 bits, TG_ERROR_OUT_OF_HOST_MEMORY. `*out` is
 * NULL on failure. Linear in the graph. */
tg_status tg_spaces_create(const tg_graph *graph, const tg_lifetimes *lifetimes,
                           const tg_model_records *device_records,
                           const tg_processor *processor_of, const tg_allocator *alloc,
                           tg_spaces **out, tg_error_info *err);

/* Free spaces. NULL is a no-op. */
void tg_spaces_destroy(tg_spaces *spaces);

/* Number of records in `space` (its sets together). */
size_t tg_spaces_count(const tg_spaces *spaces, tg_space space);

/* ------------------------------------------------------------------------------------------ */
/* Planning each space. */

/* The execution model the relations assume: each processor is a timeline. The CPU runs its
 * ops one at a time in op order. The GPU runs its ops in op order (an in-order queue) when a
 * set is planned under the serial policy, and concurrently where the waits allow under
 * parallel-safe and branch-local. Across processors, an op waits for the ops of the other
 * processor whose outputs it reads (the cross-processor waits). Two records of a set may share
 * memory when their intervals are disjoint and, for the earlier one A and the later one B,
 * every op touching A happens before B's producer in that model (graph edges plus each
 * in-order timeline): then no processor writes memory the other may still be reading, whatever
 * the processors' relative speed. For device and host sets under the serial policy (one
 * in-order timeline each) this is interval disjointness alone. */

/* The relation for set `set` (TG_SET_*) under `policy`, for the planner (tg_plan_options.
 * relation) and the validator: pass tg_policy_relation_get(*out), which is NULL when interval
 * disjointness is exact (device and host sets under serial, host sets always).
 * `schedule` is the graph's (tg_schedule_create with default options). Cost: the closure of the
 * model's happens-before (n^2/16 bytes for n ops, freed before returning) plus
 * tg_policy_relation_create's. `*out` is NULL on failure (TG_ERROR_INVALID_ARGUMENT for a set
 * out of range or a schedule of another graph, TG_ERROR_OUT_OF_HOST_MEMORY). */
tg_status tg_spaces_relation_create(const tg_spaces *spaces, const tg_schedule *schedule,
                                    size_t set, tg_policy policy, const tg_allocator *alloc,
                                    tg_policy_relation **out);

/* How to plan one set. A zeroed struct: objects mode, naive strategy, serial policy, no
 * budget. */
typedef struct tg_space_options {
  tg_plan_options plan;          /* mode, strategy, fit, alignment, search; `relation` is
                                  * ignored: the set's relation under `policy` is used */
  tg_policy policy;
  uint64_t budget;               /* bytes the set's plan may take; 0 = no budget */
} tg_space_options;

/* One set's plan. */
typedef struct tg_space_plan {
  tg_plan *plan;                 /* NULL for an empty set */
  uint64_t bytes;                /* the plan's total in bytes (texels x texel bytes for images) */
  uint64_t lower_bound_bytes;    /* offsets: peak live; objects: tg_bounds_objects_shape */
  uint64_t naive_bytes;          /* one allocation per record */
  size_t allocations;            /* what realising it allocates: objects, or 1 arena (0 if empty) */
} tg_space_plan;

/* Plan set `set` in one tg_plan_compute call and validate the plan with the set's relation.
 * `planned` replaces the set's records when not NULL (the same records with a device's real
 * sizes and alignments, from tg_device_compute_arena_records, for offsets mode): same count,
 * same intervals, dims 1. Statuses of tg_plan_compute and tg_spaces_relation_create;
 * TG_ERROR_INVALID_PLAN (with `err`) if the plan fails validation; TG_ERROR_BUDGET (with
 * `err` naming the space, the bytes and the budget) when the plan exceeds options->budget,
 * `*out` then holding the plan (free it). On other failures `*out` is zeroed. */
tg_status tg_spaces_plan_set(const tg_spaces *spaces, const tg_schedule *schedule, size_t set,
                             const tg_record_set *planned, const tg_space_options *options,
                             const tg_allocator *alloc, tg_space_plan *out, tg_error_info *err);

/* Free a set's plan and zero it. NULL is a no-op. */
void tg_space_plan_free(tg_space_plan *plan);

/* ------------------------------------------------------------------------------------------ */
/* Waits across processors. */

/* A wait between processors: op `op` starts only after op `after`, which runs on the other
 * processor. Data: `op` reads `tensor`, which `after` writes. Reuse: `op` writes `tensor` into
 * memory of the same space that `after` may still use (only sets planned under the serial
 * policy on a GPU that runs out of order need these). At run time a GPU -> CPU wait is an
 * event or fence wait, then the mapping (OpenCL map, Vulkan invalidate) that makes the GPU's
 * writes visible to the CPU; a CPU -> GPU wait is the unmapping (OpenCL unmap, Vulkan flush)
 * that makes the CPU's writes visible, then the GPU work's submission after it. */
typedef struct tg_cross_wait {
  uint32_t op;
  uint32_t after;
  uint32_t tensor;
  int reuse;
} tg_cross_wait;

/* Everything a heterogeneous run waits for. Owns its arrays. */
typedef struct tg_spaces_waits {
  size_t op_count;
  /* Per op: the ops it waits for (graph edges and the reuse edges of every set), ascending,
   * no duplicates: wait[wait_start[i] .. wait_start[i+1]). The CPU's own op order is implied
   * and not listed. */
  size_t *wait_start;            /* op_count + 1 */
  uint32_t *waits;
  size_t reuse_edge_count;       /* reuse edges of all sets (before merging into `waits`) */
  /* The waits between processors that nothing else implies (the graph's edges, the reuse
   * edges and each in-order timeline), sorted by (op, after): what a runtime must add. */
  size_t cross_count;
  tg_cross_wait *cross;
  size_t cross_data_edges;       /* graph edges between processors, before the reduction */
  tg_allocator alloc;
} tg_spaces_waits;

/* The plan of one set as computed by tg_spaces_plan_set (or NULL for an empty set) and the
 * records it was planned for. */
typedef struct tg_space_plan_ref {
  const tg_plan *plan;
  const tg_usage_record *records;  /* the set's records, or the `planned` replacement */
} tg_space_plan_ref;

/* The waits of a heterogeneous run with the plans of every set (`plans`: TG_SET_COUNT
 * entries). `gpu_in_order`: 1 when the GPU runs its ops in op order (reuse edges between GPU
 * ops are then implied and dropped, as between CPU ops always), 0 when it runs them out of
 * order. Reuse edges come from tg_schedule_compute_waits on each set. Statuses: those of
 * tg_schedule_compute_waits (TG_ERROR_INVALID_PLAN names the records), TG_ERROR_INVALID_ARGUMENT,
 * TG_ERROR_OUT_OF_HOST_MEMORY. `*out` is NULL on failure. */
tg_status tg_spaces_compute_waits(const tg_spaces *spaces, const tg_schedule *schedule,
                                  const tg_space_plan_ref *plans, int gpu_in_order,
                                  const tg_allocator *alloc, tg_spaces_waits **out,
                                  tg_error_info *err);

/* Free waits. NULL is a no-op. */
void tg_spaces_waits_destroy(tg_spaces_waits *waits);

/* ------------------------------------------------------------------------------------------ */
/* Every set at once. */

/* The plans of every set of a heterogeneous graph, their totals per space and the waits. */
typedef struct tg_spaces_plan {
  tg_space_plan sets[TG_SET_COUNT];
  uint64_t bytes[TG_SPACE_COUNT];              /* per space: its sets' plans */
  uint64_t lower_bound_bytes[TG_SPACE_COUNT];  /* per space: its sets' lower bounds */
  uint64_t allocations[TG_SPACE_COUNT];        /* per space: what realising it allocates */
  uint64_t total_bytes, total_lower_bound_bytes;
  tg_spaces_waits *waits;
} tg_spaces_plan;

/* Plan every set (tg_spaces_plan_set with options[k] and planned[k]; `planned` may be NULL,
 * and so may its entries), add the plans up per space, and compute the waits
 * (tg_spaces_compute_waits with `gpu_in_order`). `device_budget` (0: none) bounds the device
 * space as a whole, its fallback buffers included: over it, TG_ERROR_BUDGET with `err` naming
 * both numbers. Statuses of those calls. On failure `*out` holds what was computed before it
 * (free it with tg_spaces_plan_free either way). */
tg_status tg_spaces_plan_all(const tg_spaces *spaces, const tg_schedule *schedule,
                             const tg_space_options *options, const tg_record_set *const *planned,
                             uint64_t device_budget, int gpu_in_order, const tg_allocator *alloc,
                             tg_spaces_plan *out, tg_error_info *err);

/* Free every set's plan and the waits, and zero `plan`. NULL is a no-op. */
void tg_spaces_plan_free(tg_spaces_plan *plan);

/* ------------------------------------------------------------------------------------------ */
/* The partition-by-partition baseline (TFLite's and MNN's approach). */

/* Each processor's partition planned alone, every boundary (shared) tensor in both memories:
 * the GPU partition holds the tensors a GPU op touches (device tensors and boundary tensors,
 * in the device storage, with its fallback buffers), the CPU partition those a CPU op touches
 * (host and boundary tensors, as buffers). A boundary tensor is copied from its producer's
 * side to the other as soon as its producer finishes: on each side its interval runs from its
 * producer's task to its last toucher there. */
typedef struct tg_partition_baseline {
  uint64_t gpu_bytes;            /* the GPU partition's plans (storage records + fallback) */
  uint64_t cpu_bytes;            /* the CPU partition's plan */
  uint64_t total_bytes;          /* gpu_bytes + cpu_bytes */
  uint64_t copies;               /* boundary tensor copies per run: one per shared tensor */
  uint64_t copy_bytes;           /* bytes those copies move per run */
} tg_partition_baseline;

/* Compute the baseline with the same modes and strategies as the heterogeneous plan:
 * `gpu_options` for the GPU partition (its budget is ignored), `cpu_options` for the CPU
 * partition. Each side is planned under the serial rule (interval disjointness), which favours
 * the baseline: it is the smallest either side can be on its own in-order timeline. Statuses of
 * tg_plan_compute; TG_ERROR_INVALID_ARGUMENT for mismatched inputs. */
tg_status tg_spaces_partition_baseline(const tg_spaces *spaces,
                                       const tg_model_records *device_records,
                                       const tg_space_options *gpu_options,
                                       const tg_space_options *cpu_options,
                                       const tg_allocator *alloc, tg_partition_baseline *out,
                                       tg_error_info *err);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
