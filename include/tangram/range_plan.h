/* Plans valid over a range of input sizes (records from tangram/range.h): one structure fixed
 * for all sizes of a piece of the range, evaluated at any size of it in microseconds without
 * allocating.
 * - Offsets mode: for every two records that overlap in time, which lies below is fixed; at a
 *   size, each record's offset is the lowest aligned one above the records fixed below it,
 *   found in one pass.
 * - Objects mode: the assignment of records to shared objects is fixed; at a size, an object's
 *   extent is the per-dimension maximum of its records' there.
 * Either way the plan at every size is valid by construction. The structure is chosen to
 * minimise the worst ratio, over the sizes of the range, of its total at a size to that
 * size's own best plan; where one structure cannot keep that ratio within a target, the range
 * is cut into pieces, each with its own structure. docs/ranges.md describes the choice. */
#ifndef TANGRAM_RANGE_PLAN_H
#define TANGRAM_RANGE_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/planner.h"
#include "tangram/range.h"
#include "tangram/records.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* How the structure over a range is chosen. A zeroed struct (or NULL) means the defaults. */
typedef struct tg_range_plan_options {
  /* The worst ratio (total at a size) / (own best at that size) a piece must keep; the range is
   * cut into pieces until every piece does. 0 = 1.05 in offsets mode, 1.10 in objects mode;
   * values below 1 are treated as 1. */
  double target;
  /* Sizes planned with the caller's options (strategy, search) to draw structures from, spread
   * evenly over the range, both ends included, planned coarse to fine (a time limit may leave
   * the finer ones out); as many again may be planned after, at the worst sizes and at those
   * furthest above their lower bound. 0 = 17 along one dimension, 5 x 5 over two. */
  uint32_t samples;
} tg_range_plan_options;

/* The most sizes (grid points) one range plan covers. */
#define TG_RANGE_PLAN_MAX_POINTS ((uint64_t)1 << 16)

/* A plan over a range (opaque). Immutable once computed: instantiation may run from several
 * threads at once. */
typedef struct tg_range_plan tg_range_plan;

/* Compute a plan over every size of `records`' range. `options` as for tg_plan_compute (NULL =
 * defaults): mode, strategy, alignment, relation, in-place pairs and max_allocation apply at
 * every size. In-place pairs are kept only where both records have the same size at every point
 * (others are dropped, as are pairs whose chain would join records that conflict); the plan uses
 * the kept pairs at every size. With max_allocation, the plan must hold at every size in one
 * arena (offsets: its total; objects: each 1D object) within the cap, else TG_ERROR_LIMIT naming
 * the first size where it does not.
 *
 * Time (strategy best): an explicit time_limit_ms bounds the whole call, every size planned
 * included: it returns within time_limit_ms plus at most a tenth of it plus 20 ms (unless the
 * set-up alone, reading every size once for its records and lower bound, takes longer: then
 * about that plus the upper-bound plan). 0, the default,
 * bounds it the same way by TG_DEFAULT_TIME_LIMIT_MS for each sampled size and one more (180 ms
 * along one dimension, 260 ms over two, with the default samples). TG_TIME_LIMIT_NONE: no search
 * and no limit (each size planned gets best's strategies only). What a limit cuts short is the
 * number of sizes planned and how long each is searched: a short limit gives a plan further
 * from each size's own best, never an invalid one or one above the upper-bound plan.
 *
 * Own best at a size (the ratio's denominator, tg_range_point_report.own_total): the smallest
 * plan the computation knows for that size: `options`' plan for that size alone at the sizes
 * planned with the search, elsewhere the same strategy without search (for `best`: the smallest
 * of the one-pass greedy strategies' plans) where the time allows, beside every structure
 * considered and the upper-bound plan there. No plan is made where a structure meets the size's
 * lower bound (it is then proved optimal). A size planned alone with a longer search may do
 * better: tangram/report.h's tg_range_report_compute_size reports against that.
 *
 * Statuses: TG_ERROR_INVALID_ARGUMENT (bad records, options or in-place pairs),
 * TG_ERROR_UNSUPPORTED (offsets mode on 2D/3D records, a strategy that does not apply),
 * TG_ERROR_OVERFLOW (a layout that does not fit 64 bits at some size), TG_ERROR_LIMIT (above, a
 * record larger than max_allocation at some size, or more than TG_RANGE_PLAN_MAX_POINTS sizes),
 * TG_ERROR_OUT_OF_HOST_MEMORY, or a planning failure at one size; `err` (may be NULL) then names
 * the size. `records` is borrowed: it must outlive the plan. The plan is allocated from `alloc`
 * (NULL = default) and owned by the caller (tg_range_plan_destroy); `*out` is NULL on failure.
 * Cost: within the time above; without a limit, one plan per sampled size with `options`, one
 * without search at most other sizes, and O(points * structures * (records + overlaps)) to
 * evaluate the structures. */
tg_status tg_range_plan_compute(const tg_range_records *records, const tg_plan_options *options,
                                const tg_range_plan_options *range_options, const tg_allocator *alloc,
                                tg_range_plan **out, tg_error_info *err);

/* Free a plan. NULL is a no-op. */
void tg_range_plan_destroy(tg_range_plan *plan);

/* What the plan is, over the whole range. Cheap. */
typedef struct tg_range_plan_summary {
  tg_mode mode;
  uint32_t dims;              /* of the records: 1, 2 or 3 */
  size_t record_count;
  uint64_t point_count;       /* sizes in the range */
  size_t piece_count;         /* sub-ranges, each with one structure */
  size_t max_object_count;    /* objects mode: the most objects of any piece; offsets: 1 */
  double worst_ratio;         /* the largest total / own best over every size */
  uint64_t worst_point;       /* where it occurs (a point index) */
  double worst_bound_ratio;   /* the largest total / lower bound over every size */
  uint64_t above_upper_bound; /* sizes where the total exceeds the upper-bound plan's (0) */
  uint64_t searched_points;   /* sizes planned with `options` in full */
  uint64_t planned_points;    /* sizes planned without search for their own best */
  size_t structures_tried;    /* structures evaluated over the range */
  size_t in_place_kept;       /* in-place pairs kept at every size */
  size_t in_place_dropped;    /* pairs given, dropped (sizes differ somewhere, or conflicts) */
  uint64_t compute_us;        /* time tg_range_plan_compute took */
} tg_range_plan_summary;
void tg_range_plan_get_summary(const tg_range_plan *plan, tg_range_plan_summary *out);

/* One size of the range, as planned. Totals are bytes (1D) or texels (2D/3D), as tg_plan.total. */
typedef struct tg_range_point_report {
  int64_t dims[TG_RANGE_MAX_DIMS]; /* the size (range.count entries used) */
  uint32_t piece;                  /* the piece it lies in */
  uint64_t total;                  /* the plan's total there */
  uint64_t own_total;              /* that size's own best plan (see tg_range_plan_compute) */
  uint64_t upper_bound_total;      /* the plan of every record at its largest size over the range,
                                      used at every size (the same at every size) */
  uint64_t lower_bound;            /* peak live (offsets) or positional maximum (objects) there;
                                      with in-place pairs, of the records merged along them */
} tg_range_point_report;

/* Point `index` (tg_size_range_point's numbering) into `*out`. TG_ERROR_INVALID_ARGUMENT for
 * an index at or past the point count. Cheap. */
tg_status tg_range_plan_get_point(const tg_range_plan *plan, uint64_t index, tg_range_point_report *out);

/* One piece: a sub-grid of the range (a contiguous run of sizes; with two dimensions, a
 * rectangle of the grid) and how its structure does there. */
typedef struct tg_range_piece {
  tg_size_range range;   /* the piece's sizes: same steps, narrower bounds */
  size_t object_count;   /* objects mode: its structure's objects; offsets: 1 */
  double worst_ratio;    /* over its sizes */
  uint64_t worst_point;  /* point index (of the whole range) where it occurs */
  uint32_t structure;    /* its structure (tg_range_plan_get_structure); pieces may share one */
} tg_range_piece;

/* Piece `k` (< piece_count) into `*out`. One dimension: pieces in the order of their sizes; two:
 * in the order the grid was halved (depth first, the lower half first).
 * TG_ERROR_INVALID_ARGUMENT for k out of range. Cheap. */
tg_status tg_range_plan_get_piece(const tg_range_plan *plan, size_t k, tg_range_piece *out);

/* A plan object to instantiate into: arrays for every record (and, objects mode, for the most
 * objects of any piece), the kept in-place pairs, and max_allocation as planned. Reusable at
 * every size. The caller owns it (tg_plan_destroy); `*out` is NULL on failure
 * (TG_ERROR_INVALID_ARGUMENT, TG_ERROR_OUT_OF_HOST_MEMORY). */
tg_status tg_range_plan_create_instance(const tg_range_plan *plan, const tg_allocator *alloc, tg_plan **out);

/* The plan at the grid point `dims[range.count]`: fills `records` (count entries, as
 * tg_range_records_at) and `instance` (from tg_range_plan_create_instance of this plan):
 * offset_of and total, or object_of, object_count, object_sizes and total. The result passes
 * tg_plan_validate against `records` with the plan's alignment and relation. No allocation;
 * O(records + the overlaps the structure keeps). TG_ERROR_INVALID_ARGUMENT off the grid or for an
 * instance of another shape; TG_ERROR_OVERFLOW when the layout does not fit 64 bits (only
 * possible for sizes whose records already sum near 2^64). On failure `instance` and `records`
 * hold unspecified values. Thread-safe for distinct instances. */
tg_status tg_range_plan_instantiate(const tg_range_plan *plan, const int64_t *dims, tg_usage_record *records,
                                    tg_plan *instance);

/* A structure as it is saved and restored (plan files, tangram/plan_file.h). Records joined by
 * the plan's in-place pairs form one node (a record alone is its own node); a node is named by
 * its lowest record. */
typedef struct tg_range_structure {
  /* Offsets mode: the nodes in pass order (`order_count` = the node count): at any size each
   * node lies at the lowest aligned offset above the nodes before it that it meets in time (or,
   * with a relation, may not share with). */
  const uint32_t *order;
  size_t order_count;
  /* Objects mode: each record's object (record count entries; the records of one node share
   * one), `object_count` objects, each holding a record; no two records that meet in time (or
   * may not share) in one object. */
  const uint32_t *object_of;
  uint32_t object_count;
} tg_range_structure;

/* How many structures the pieces use (at most piece_count). Cheap; 0 for NULL. */
size_t tg_range_plan_get_structure_count(const tg_range_plan *plan);

/* Structure `k` (< tg_range_plan_get_structure_count) into `*out`; its arrays belong to the
 * plan and live as long as it. TG_ERROR_INVALID_ARGUMENT for k out of range. Cheap. */
tg_status tg_range_plan_get_structure(const tg_range_plan *plan, size_t k, tg_range_structure *out);

/* A plan over a range from structures chosen before (saved in a plan file), without planning. */
typedef struct tg_range_plan_desc {
  /* mode, strategy (recorded as the plan's), alignment, relation, max_allocation and in-place
   * pairs, as for tg_range_plan_compute; every pair given is kept and must hold at every size.
   * NULL = defaults. */
  const tg_plan_options *options;
  const tg_range_structure *structures;
  size_t structure_count;
  /* The pieces: sub-grids of the range (its steps; with two dimensions, rectangles) that
   * together hold every size exactly once, and the structure of each. */
  const tg_size_range *pieces;
  const uint32_t *piece_structure;
  size_t piece_count;
} tg_range_plan_desc;

/* Make the plan of `desc` over `records`: the same instances at every size as the plan whose
 * structures and pieces these are (tg_range_plan_get_structure, tg_range_plan_get_piece), when
 * made with the same records and options. Offsets predecessors are derived again from the
 * records' task intervals and the relation, so every instance is valid by construction.
 * Records and options tg_range_plan_compute refuses are refused alike (its statuses, but for a
 * strategy, which is only recorded). TG_ERROR_INVALID_ARGUMENT, with `err` naming what, for:
 * an in-place pair whose records differ in size at some size (or that the relation does not
 * allow); an order that is not every node once, named by its lowest record; an object
 * assignment that splits a node, leaves an object empty, or puts two records that meet in time
 * (or may not share) in one object; pieces that are not sub-grids of the range or that miss or
 * overlap a size; a structure index out of range. TG_ERROR_LIMIT with max_allocation as
 * tg_range_plan_compute. Per-size figures: the total at each size; own best, lower bound and
 * upper-bound plan are not known (0), nor the summary's ratios. `records` is borrowed: it must
 * outlive the plan. The caller owns `*out` (tg_range_plan_destroy); NULL on failure. Cost:
 * O(records + conflicts) per structure (O(n^2 / 64) words for the reduction) plus one
 * instantiation per size. */
tg_status tg_range_plan_create(const tg_range_records *records, const tg_range_plan_desc *desc,
                               const tg_allocator *alloc, tg_range_plan **out, tg_error_info *err);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
