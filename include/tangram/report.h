/* Reports: evaluate every storage x mode x strategy for a model and pick the one that needs
 * the least memory; draw a plan as an SVG memory timeline; export a plan as CSV.
 *
 * Memory is always compared in bytes. A texture record's bytes are its texels times the bytes
 * of one texel (16 for fp32, 8 for fp16: four channels per texel). Tensors that do not fit a
 * texture (or image buffer) storage fall back to plain buffers (layout.h); they are planned as
 * a second, 1D record set with the same mode and strategy, and their bytes, objects and bound
 * are added to the storage's. */
#ifndef TANGRAM_REPORT_H
#define TANGRAM_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/planner.h"
#include "tangram/range.h"
#include "tangram/range_plan.h"
#include "tangram/records.h"
#include "tangram/schedule.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* ------------------------------------------------------------------------------------------ */
/* Evaluation. */

/* What to evaluate. A zeroed struct means: fp32, default device limits, serial policy. */
typedef struct tg_evaluation_options {
  tg_precision precision;
  /* Nonzero: no device limits (nothing falls back except single_texture_2d tensors with more
   * than 4 channels). Zero: tg_device_limits_default(). Ignored when `limits` is set. */
  int no_limits;
  const tg_device_limits *limits; /* explicit limits, or NULL */
  /* Reuse policy (schedule.h). Serial plans with the planner's interval rule; the others
   * build a schedule of the graph and plan and validate with the policy's relation. Usage
   * records without a graph support only the serial policy. */
  tg_policy policy;
  size_t mcf_max_records;         /* for min-cost-flow and `best`; 0 = the planner's default */
  /* Nonzero: every plan may use the storage's in-place pairs (tg_model_in_place_pairs, images
   * allowed: image storages assume Vulkan storage images), and the bounds are the in-place
   * ones. Either way each `best` row also reports what `best` with the pairs needs
   * (in_place_bytes). */
  int in_place;
  /* The largest single allocation in bytes (0 = none): offsets rows plan arenas of at most
   * this (tg_plan_options.max_allocation); a row where a tensor or an object is larger is
   * skipped with that reason. */
  uint64_t max_allocation;
  /* Nonzero: a storage where a tensor does not fit (it would fall back) gives skipped rows. */
  int no_fallback;
} tg_evaluation_options;

/* "No such result" in tg_evaluation's indices. */
#define TG_EVALUATION_NONE ((size_t)-1)

/* One storage x mode x strategy. Bytes include the plans of the fallback groups: the tensors
 * that fell to each storage of the chain (tg_model_records_create_chain) planned on their own,
 * in the row's mode and strategy (objects of the group's dimensionality, or its bytes in arenas). */
typedef struct tg_evaluation_result {
  tg_storage storage;
  tg_mode mode;           /* offsets for a texture storage: the arena form (texels x bytes
                           * per texel as 1D byte records in one arena) */
  tg_strategy strategy;   /* as asked; TG_STRATEGY_BEST for the `best` row */
  tg_strategy winner;     /* the strategy that made the primary plan (= strategy unless best) */
  tg_fit fit;             /* offsets greedy-in-order: the fit used */
  int skipped;            /* 1: not run, see skip_reason (static string) */
  const char *skip_reason;
  uint64_t bytes;             /* primary total x unit bytes + fallback total */
  uint64_t lower_bound_bytes; /* objects: tg_bounds_objects_shape; offsets: peak live; incl. fallback */
  size_t objects;             /* primary objects + fallback objects */
  int valid;                  /* both plans passed tg_plan_validate (with the policy) */
  char invalid_reason[TG_ERROR_MESSAGE_MAX]; /* the validator's message when not valid */
  uint64_t plan_us;           /* wall time of both tg_plan_compute calls */
  size_t fallback_tensors;    /* tensors planned in a fallback storage instead */
  /* `best` rows: the bytes of `best` with the storage's in-place pairs (= bytes with
   * options.in_place), the pairs its plan uses and how many of them are views; 0 elsewhere. */
  uint64_t in_place_bytes;
  size_t in_place_pairs, in_place_views;
  size_t arenas;              /* offsets: allocations (arenas) of both plans; objects: 0 */
  /* Offsets: the strongest lower bound (tg_bounds_offsets of both record sets, summed; with
   * in-place pairs their peak live) and which bound gave it (subset-exact when either part's
   * did). Objects: lower_bound_bytes and TG_BOUND_PEAK_LIVE (unused). */
  uint64_t offsets_bound_bytes;
  tg_bound_source offsets_bound_source;
} tg_evaluation_result;

/* A tensor that did not fit a storage and falls back along the chain (tg_storage_fallback_next)
 * to the first storage that fits: `to` (texture_2d, image_buffer or buffer). */
typedef struct tg_evaluation_fallback {
  tg_storage storage;
  tg_storage to;
  uint32_t tensor;        /* graph tensor index */
  const char *name;       /* owned by the evaluation */
  const char *reason;     /* e.g. "C=32 > 4 for single_texture_2d"; owned by the evaluation */
} tg_evaluation_fallback;

/* A plan drawn as bytes: what the chart and the CSV export show. Records are 1D (bytes) in
 * one plan of the result's mode: for textures, record and object sizes are texels x bytes per
 * texel; fallback tensors follow the primary ones, group by group in chain order (texture_2d,
 * image_buffer, buffer), as further objects (objects mode) or in arenas placed right after the
 * ones before (offsets mode). `storage_of[r]` says where record r lives (the storage, or the
 * storage it fell to). Owned by the evaluation. */
typedef struct tg_report_view {
  tg_storage storage;
  tg_mode mode;
  size_t count;
  const tg_usage_record *records;
  const char *const *names;
  const tg_storage *storage_of;
  const tg_plan *plan;          /* 1D; total in bytes */
  uint64_t lower_bound;         /* bytes */
  size_t primary_count;         /* records [0, primary_count) are in `storage` */
  uint64_t primary_bytes;       /* offsets mode: where the fallback arena starts */
} tg_report_view;

/* The evaluation of one model under one precision and policy. Read-only after creation. */
typedef struct tg_evaluation {
  tg_precision precision;
  tg_policy policy;
  int from_records;             /* input was usage records: only their own storage */
  uint32_t input_dims;          /* from_records: the records' dimensionality */
  size_t tensor_count;          /* graph tensors (from_records: records) */
  size_t op_count;              /* graph ops (from_records: tasks = largest last task + 1) */
  size_t record_count;          /* planned tensors (primary + fallback, same for every storage) */
  size_t result_count;
  tg_evaluation_result *results; /* storage-major; per storage objects then offsets; per mode
                                  * the mode's strategies in enum order, best last
                                  * (tg_strategy_origin says whose each one is) */
  /* Index into `results` of the smallest valid result of each storage (fewest bytes; ties keep
   * the earlier row, so objects mode and named strategies win ties), or TG_EVALUATION_NONE when
   * the storage was not evaluated or had no valid result. */
  size_t best_of_storage[TG_STORAGE_COUNT];
  /* The same per storage and mode ([storage][0]: objects, [1]: offsets): the smallest valid
   * result of each (ties keep the earlier row), or TG_EVALUATION_NONE. */
  size_t best_of_mode[TG_STORAGE_COUNT][2];
  size_t recommended;           /* the smallest of best_of_storage (ties: the earlier storage) */
  /* The smallest valid objects-mode result of any storage: the choice when textures cannot be
   * aliased in one arena (ties: the earlier row). */
  size_t recommended_objects;
  size_t fallback_count;
  tg_evaluation_fallback *fallbacks; /* every storage's fallback tensors, storage order */
  struct tg_evaluation_state *state; /* the plans behind the views; opaque */
  tg_allocator alloc;
} tg_evaluation;

/* Evaluate a graph: for every storage, build its records (tg_model_records_create_chain; planned
 * tensors as tg_graph_compute_lifetimes decides with default options), compute lower bounds,
 * and for each mode run every strategy that exists for it plus `best`, validate every plan,
 * and time it. Strategies the planner reports as unsupported, and min-cost-flow beyond
 * `mcf_max_records`, give skipped rows. Fails with the reader's errors (TG_ERROR_GRAPH,
 * TG_ERROR_LIMIT, ...; `err` says why), TG_ERROR_OUT_OF_HOST_MEMORY, or a planner error other
 * than "unsupported". `*out` is NULL on failure. The caller owns the evaluation; free with
 * tg_evaluation_destroy. Cost: one tg_plan_compute (default options: `best` with its default
 * search budget) and one tg_plan_validate per row plus the lower bounds, for every storage. */
tg_status tg_evaluation_create_from_graph(const tg_graph *graph,
                                          const tg_evaluation_options *options,
                                          const tg_allocator *alloc, tg_evaluation **out,
                                          tg_error_info *err);

/* Evaluate usage records whose storage is implied by their dimensionality: 1D records are
 * buffer bytes, 2D records texture_2d texels, 3D records texture_3d texels (texels x bytes per
 * texel of `options->precision`). No fallbacks. Only the serial policy (TG_ERROR_UNSUPPORTED
 * otherwise). */
tg_status tg_evaluation_create_from_records(const tg_record_set *records,
                                            const tg_evaluation_options *options,
                                            const tg_allocator *alloc, tg_evaluation **out,
                                            tg_error_info *err);

/* Free an evaluation. NULL is a no-op. */
void tg_evaluation_destroy(tg_evaluation *evaluation);

/* The plan of result `index` as bytes (see tg_report_view), kept for the best result of each
 * storage (best_of_storage). TG_ERROR_INVALID_ARGUMENT when `index` is not one of those. The
 * view points into the evaluation. */
tg_status tg_evaluation_get_view(const tg_evaluation *evaluation, size_t index,
                                 tg_report_view *out);

/* One record set of a result and its plan: the primary records, or a fallback group. */
typedef struct tg_evaluation_part {
  tg_storage storage;              /* where these tensors live (the group's storage) */
  const tg_record_set *records;    /* their records in that storage (extents for textures) */
  const tg_usage_record *planned;  /* what `plan` was made for: records->records, or for an
                                    * offsets plan of texture records their bytes (1D: texels x
                                    * bytes per texel, same tasks) */
  const uint32_t *tensor_of;       /* record -> graph tensor; NULL for records input */
  const tg_plan *plan;
} tg_evaluation_part;

/* The most parts a result has: the primary records and one per storage of the fallback chain. */
#define TG_EVALUATION_MAX_PARTS (1 + TG_STORAGE_FALLBACK_COUNT)

/* The plans behind result `index`, kept for the smallest valid result of each storage and mode
 * (best_of_mode): the primary part first, then each fallback group with tensors in chain order,
 * into `parts` (room for TG_EVALUATION_MAX_PARTS) and their number into `*count`. Together they
 * are exactly the plans whose bytes the row reports. TG_ERROR_INVALID_ARGUMENT for NULL
 * arguments or an `index` that is not one of those. Everything points into the evaluation.
 * Cheap. */
tg_status tg_evaluation_get_parts(const tg_evaluation *evaluation, size_t index, tg_evaluation_part *parts,
                                  size_t *count);

/* The records the evaluation planned for `storage` of a graph (tg_model_records_create_chain
 * under the evaluation's limits), owned by the evaluation; NULL for records input or a storage
 * out of range. Cheap. */
const tg_model_records *tg_evaluation_get_records(const tg_evaluation *evaluation, tg_storage storage);

/* A sentence for people about the recommendation, e.g. "least memory: texture_3d objects
 * (greedy-by-size): 1.23 MiB, 12% less than buffer offsets (greedy-by-size)". It compares
 * with buffer's best, or, when buffer wins, with the best texture storage. Writes a
 * NUL-terminated string (truncated to `size`) and returns `buf`. */
const char *tg_evaluation_describe(const tg_evaluation *evaluation, char *buf, size_t size);

/* Bytes in human units: "512 B", "1.50 KiB", "6.64 MiB", written NUL-terminated (truncated to
 * `size`) into `buf`. Returns `buf`. */
const char *tg_report_format_bytes(uint64_t bytes, char *buf, size_t size);

/* ------------------------------------------------------------------------------------------ */
/* SVG memory timeline and CSV export. */

/* Render `plan` (made for `records`, of dimensionality `dims`) as an SVG memory timeline of
 * 1700 x 1000 pixels: x is the task (a record spans [first_task, last_task + 1)), y the byte
 * address (offsets mode) or the objects stacked back to back in id order, each lane as tall
 * as its object (objects mode; a record's rectangle is as tall as the record, so the rest of
 * its lane is visibly unused). Sizes are volumes x `unit_bytes` (1 for byte records, the
 * bytes of a texel for textures; 0 counts as 1). One <rect class="t"> per record with a
 * <title> tooltip: name (`names` may be NULL, or hold NULLs: "#<index>"), size in human units
 * and interval. The plan's end (offsets: the highest address used; objects: the sum of the
 * objects) and `lower_bound` (in the plan's units; 0: not drawn) are labelled horizontal
 * lines. Names are printed inside rectangles only where they fit. `title` (NULL: none) heads
 * the chart. The text is NUL-terminated, allocated from `alloc`, freed with
 * tg_report_free; `*out_length` (may be NULL) excludes the NUL. TG_ERROR_INVALID_ARGUMENT
 * when the plan does not match the records, TG_ERROR_OVERFLOW when a byte size does not fit
 * 64 bits. `*out_svg` is NULL on failure. */
tg_status tg_report_render_svg(const tg_usage_record *records, const char *const *names,
                               size_t count, uint32_t dims, const tg_plan *plan,
                               uint64_t lower_bound, uint64_t unit_bytes, const char *title,
                               const tg_allocator *alloc, char **out_svg, size_t *out_length);

/* Render a view (tg_evaluation_get_view) as tg_report_render_svg does, adding where each tensor
 * lives to its tooltip and, when some tensors fall back to buffers, a labelled line where the
 * fallback buffers start (above it: their arena or objects; below: the storage's own). */
tg_status tg_report_render_view_svg(const tg_report_view *view, const char *title,
                                    const tg_allocator *alloc, char **out_svg,
                                    size_t *out_length);

/* The plan as CSV with a header and one line per record:
 *   tensor_name,size,offset,start_time,end_time,object,storage
 * size in bytes (volume x `unit_bytes`); offset in bytes: the record's offset (offsets mode)
 * or its object's start when the objects are laid back to back in id order (objects mode);
 * start_time/end_time the inclusive task interval; object the object id (offsets mode: 0);
 * storage `storage_of[r]`'s name (`storage_of` NULL: empty). Names are quoted ("" doubles a
 * quote); NULL names print as "#<index>". Allocation and errors as tg_report_render_svg. */
tg_status tg_report_build_csv(const tg_usage_record *records, const char *const *names,
                              const tg_storage *storage_of, size_t count, uint32_t dims,
                              const tg_plan *plan, uint64_t unit_bytes, const tg_allocator *alloc,
                              char **out_csv, size_t *out_length);

/* ------------------------------------------------------------------------------------------ */
/* Plans over a range of input sizes (tangram/range_plan.h), size by size. */

/* One record set planned over a range. Totals become bytes as elsewhere in this header: 1D
 * records are bytes, 2D/3D records texels of the precision given. */
typedef struct tg_range_report_part {
  const tg_range_records *records;  /* what `plan` was computed for */
  const tg_range_plan *plan;        /* every part's range must be the same */
  /* The options `plan` was computed with: the validator's alignment and relation, and the
   * options of a size planned alone for its own best (mode, strategy, time limit, in-place
   * pairs, max_allocation). */
  const tg_plan_options *options;
  /* For the run-time pool: NULL when the records are what lives at run time (1D: buffers;
   * 2D/3D: images of their extent); else the texel records these byte records were made of
   * (textures planned in one arena), the same count and range: images of their extent. */
  const tg_range_records *images;
} tg_range_report_part;

/* One size of a range, summed over the parts, in bytes. */
typedef struct tg_range_report_size {
  uint64_t point;                   /* index in the range (tg_size_range_point's numbering) */
  int64_t dims[TG_RANGE_MAX_DIMS];  /* the size */
  uint32_t piece;                   /* the first part's piece there */
  uint64_t bytes;                   /* the range plans instantiated there */
  /* That size's own best: per part the smaller of its records at this size planned alone
   * (tg_plan_compute with the part's options) and the best plan the range planner knows there
   * (tg_range_point_report.own_total). */
  uint64_t own_bytes;
  uint64_t alone_bytes;             /* the plans alone only */
  uint64_t upper_bound_bytes;       /* the upper-bound plans (every record at its largest size) */
  uint64_t pool_bytes;              /* the run-time pool's peak (see tg_range_report_compute_size) */
  uint64_t lower_bound;             /* the range plans' lower bounds there */
  uint64_t alone_us;                /* time spent planning alone */
} tg_range_report_size;

/* Size `point` of the parts' range into `*out`. Each part's plan is instantiated there (into
 * instances[k] when `instances` and that entry are non-NULL, which must then come from
 * tg_range_plan_create_instance of that part's plan; the instance then holds the plan at this
 * size) and validated (tg_plan_validate with the part's alignment and relation); the records at
 * that size are planned alone with the part's options and validated. The pool's peak: every
 * record of every part, allocated at its first task and freed after its last, through one
 * virtual tlsf pool whose new blocks are the size of the request (buffers for byte records,
 * images of their extent for texel records), in bytes. Statuses: TG_ERROR_INVALID_ARGUMENT (no
 * parts, parts over different ranges, a point past the range), TG_ERROR_INVALID_PLAN when a plan
 * fails validation (`err` names the part, the size and the rule), TG_ERROR_OVERFLOW, or
 * tg_plan_compute's errors. `*out` is zeroed on failure but for what was summed. Cost: per part
 * one tg_plan_compute and two validations, and one pool run over every record. */
tg_status tg_range_report_compute_size(const tg_range_report_part *parts, size_t part_count, tg_precision precision,
                                       uint64_t point, tg_plan *const *instances, const tg_allocator *alloc,
                                       tg_range_report_size *out, tg_error_info *err);

/* Draw memory against size as an SVG chart of 1700 x 1000 pixels: one line each for the
 * range plan's bytes, the own best, the upper-bound plan, the pool's peak and the lower bound,
 * over `sizes` in the order given (x: the sizes, labelled by their dims; `dim_count` 1 or 2).
 * Each size has a tooltip with its figures; the worst ratio of bytes to own best is marked.
 * `title` may be NULL. Allocation as tg_report_render_svg; TG_ERROR_INVALID_ARGUMENT for no
 * sizes or a dim_count other than 1 or 2. */
tg_status tg_report_render_range_svg(const tg_range_report_size *sizes, size_t count, uint32_t dim_count,
                                     const char *title, const tg_allocator *alloc, char **out_svg,
                                     size_t *out_length);

/* Free text returned by this header's functions, with the same allocator. NULL is a no-op. */
void tg_report_free(const tg_allocator *alloc, char *text);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
