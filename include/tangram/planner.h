/* The device-neutral planner: strategies that map usage records to shared objects or to
 * offsets in one arena, lower bounds, and an independent validator. */
#ifndef TANGRAM_PLANNER_H
#define TANGRAM_PLANNER_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/records.h"
#include "tangram/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tg_mode {
  TG_MODE_OBJECTS = 0, /* each record gets a shared object; object size = per-dimension max */
  TG_MODE_OFFSETS = 1  /* each record gets an offset in one arena (1D only) */
} tg_mode;

typedef enum tg_strategy {
  TG_STRATEGY_NAIVE = 0,         /* one object / slot per record */
  TG_STRATEGY_EQUALITY,          /* reuse only objects of exactly the same size (objects mode) */
  TG_STRATEGY_GREEDY_IN_ORDER,   /* by first task; objects: TFLite's; offsets: free list + fit */
  TG_STRATEGY_GREEDY_BY_BREADTH, /* tasks by decreasing breadth */
  TG_STRATEGY_GREEDY_BY_SIZE,    /* objects: TFLite's distance priority; offsets: TFLite's */
  TG_STRATEGY_MIN_COST_FLOW,     /* objects mode */
  TG_STRATEGY_BEST,              /* run every applicable strategy, keep the smallest total */
  TG_STRATEGY_COUNT
} tg_strategy;

/* Free-block choice for offsets-mode greedy-in-order. */
typedef enum tg_fit { TG_FIT_BEST = 0, TG_FIT_FIRST = 1, TG_FIT_WORST = 2 } tg_fit;

/* "naive", "equality", "greedy-in-order", "greedy-by-breadth", "greedy-by-size",
 * "min-cost-flow", "best"; NULL for out-of-range values. */
const char *tg_strategy_name(tg_strategy strategy);
/* Parse a strategy name as above. TG_ERROR_INVALID_ARGUMENT if unknown. */
tg_status tg_strategy_from_name(const char *name, tg_strategy *out);
/* "objects" / "offsets"; NULL if out of range. */
const char *tg_mode_name(tg_mode mode);
tg_status tg_mode_from_name(const char *name, tg_mode *out);
/* "best" / "first" / "worst"; NULL if out of range. */
const char *tg_fit_name(tg_fit fit);
tg_status tg_fit_from_name(const char *name, tg_fit *out);

/* A may-share relation beyond interval overlap (the scheduler supplies one for parallel
 * execution). `may_share(user, a, b)` is called only for records a != b whose task intervals do
 * NOT intersect; it returns nonzero when they may use the same memory. It must be symmetric and
 * pure. NULL relation = serial execution: disjoint intervals always may share.
 *
 * Two optional facts let planners avoid testing every pair (a zeroed field means "not known";
 * planners then test pairs, which is slower but gives the same plans):
 * - `window(user, r, &lo, &hi)`: a task range of record r such that may_share(a, b) is nonzero
 *   whenever the windows of a and b do not intersect. Planners widen it to contain r's own
 *   interval. Planners find the records a relation can refuse through the windows, as they find
 *   overlapping intervals, and test only those.
 * - `transitive`: for records a, b, c whose intervals are disjoint and in that order in time,
 *   may_share(a, b) and may_share(b, c) imply may_share(a, c). Objects-mode strategies then test
 *   a record only against the members of an object just before and just after it in time. */
typedef struct tg_share_relation {
  int (*may_share)(void *user, size_t a, size_t b);
  void *user;
  void (*window)(void *user, size_t r, uint64_t *lo, uint64_t *hi);
  int transitive;
} tg_share_relation;

/* Planning options. A zeroed struct means: objects mode, naive strategy, best fit, no
 * alignment, serial relation, no search. */
typedef struct tg_plan_options {
  tg_mode mode;
  tg_strategy strategy;
  tg_fit fit;                          /* offsets-mode greedy-in-order only */
  uint64_t alignment;                  /* offsets mode: offsets are multiples (0 or 1 = none) */
  const tg_share_relation *relation;   /* NULL = serial */
  /* `best` runs min-cost-flow only up to this many records (0 = TG_DEFAULT_MCF_MAX_RECORDS). */
  size_t mcf_max_records;
  /* Improvement search after the greedy answer, strategy best only (0 = none). Milliseconds
   * of wall time for the search phase. Offsets mode without a relation and with at most
   * TG_EXACT_MAX_RECORDS records first runs the skyline search of planner/exact.c (nine
   * tenths of the time, at most 500 * time_limit_ms nodes; it starts with a relaxing dive
   * aimed at the bound, a quarter of that), then iterated greedy
   * (planner/search.c) for the rest. Objects mode, 1D, at most 2048 records: the objects
   * branch-and-bound (planner/exact_objects.c) for half the time, at most 8000 *
   * time_limit_ms / 2 nodes, then iterated greedy. Offsets mode without a relation and with
   * more than TG_EXACT_MAX_RECORDS records: greedy-by-size alone is the first answer (the
   * other greedy passes cost several times as much there; all run if its layout does not fit
   * 64 bits), then, when nine tenths of the limit cover 4 nodes per record at 600 nodes per
   * millisecond and the records cover at most 64 task points each and lists of at most 256
   * records on average, the relaxing skyline dive (planner/exact.c: one skyline dive aimed at
   * the bound whose limit rises when it stalls; stopped early, it completes its plan
   * greedily), then a large-neighbourhood search (planner/search_lns.c: windows around the
   * records at the top of the arena lifted out and placed again; at most 200 * time_limit_ms
   * steps per stage) until it goes 2000 steps without progress, the same from
   * greedy-by-breadth's plan (when the time left exceeds three times the first search's
   * setup), then on the better one, up to TG_EXACT_MAX_SERIAL_RECORDS records, the skyline
   * search (its setup may overrun the limit by a few tens of
   * milliseconds at that size), else the neighbourhood search again. Other inputs run
   * iterated greedy only (at most 20 * time_limit_ms candidates). Offsets mode without a
   * relation, records falling into parts with no task in common (none spans from one part
   * into the next): each part above the bound is searched on its own by the above, smallest
   * first, with a share of the time in proportion to its records (time a part leaves unused
   * goes to the later ones, so the later parts' caps then depend on the clock); the exact mode
   * likewise (planner/search_split.c). Before all this, serial offsets inputs above the
   * bound are merged into blocks (records of one interval stacked, equal blocks chained across
   * a task boundary; planner/search_reduce.c); when that at least halves the records the
   * blocks are planned (`best` with part of the time: half, a tenth in exact mode) and the
   * unfolded plan kept if smaller, the rest getting the time left. All try candidates in an
   * order fixed by `seed` and stop at the first of: the lower bound reached (or optimality
   * proved), their cap, or the time limit. So the plan is a function of (records, options)
   * whenever a cap or a proof ends the search; when the clock ends it, a slower machine may
   * return a plan found earlier in the same sequence (or a dive completed earlier). */
  uint32_t time_limit_ms;
  uint64_t seed;                       /* search seed: same seed, same plan */
  /* Strategy best, 1D. Offsets mode: after greedy + search, run the exact branch-and-bound
   * (planner/exact.c) for what is left of time_limit_ms (0 = 1000). See tg_plan_compute_exact.
   * Objects mode: after greedy, the search below with a fifth of time_limit_ms (0 = 1000), so
   * the plan is never worse than that search's, then a branch-and-bound over object
   * assignments (records by size, each joining an object or opening one, pruned by the
   * positional maximums) for the rest, up to 2048 records; exact_stats says whether it
   * finished or the plan meets the shape-aware bound (then the plan is optimal), and otherwise
   * the larger of the two bounds. Without `exact`, objects mode with a time limit runs the
   * same branch-and-bound for half of it under a node cap, then the search. */
  int exact;
  /* Where the exact mode reports what it proved (may be NULL). See tg_exact_stats. */
  struct tg_exact_stats *exact_stats;
} tg_plan_options;

#define TG_DEFAULT_MCF_MAX_RECORDS ((size_t)500)

/* A plan. Objects mode: `object_of[r]` is record r's object; `object_sizes[k]` is object k's
 * extent (per-dimension max of its records); `total` = sum of object volumes (bytes for 1D,
 * texels for 2D/3D). Offsets mode: `offset_of[r]` is record r's offset; `total` =
 * max(offset + size) (not rounded up to the alignment); `object_count` = 1 if any record,
 * else 0. */
typedef struct tg_plan {
  tg_mode mode;
  uint32_t dims;
  tg_strategy strategy;   /* the strategy that produced the plan (for `best`: the winner) */
  tg_fit fit;             /* the fit used, when strategy is greedy-in-order in offsets mode */
  size_t record_count;
  size_t object_count;
  uint32_t *object_of;    /* objects mode: record_count entries; else NULL */
  tg_extent *object_sizes;/* objects mode: object_count entries; else NULL */
  uint64_t *offset_of;    /* offsets mode: record_count entries; else NULL */
  uint64_t total;
  tg_allocator alloc;     /* what the arrays came from */
} tg_plan;

/* Compute a plan for `count` records of dimensionality `dims` (1..3). Records may come in any
 * order. Offsets mode requires dims == 1 (TG_ERROR_UNSUPPORTED otherwise). Strategies that do
 * not exist for a mode (equality and min-cost-flow in offsets mode) give TG_ERROR_UNSUPPORTED.
 * `*out` is NULL on failure. Thread-safe for concurrent calls on shared read-only input. */
tg_status tg_plan_compute(const tg_usage_record *records, size_t count, uint32_t dims,
                          const tg_plan_options *options, const tg_allocator *alloc,
                          tg_plan **out);

/* Allocate an empty plan with arrays for `record_count` records and `object_count` objects
 * (objects mode) for strategies and tests to fill. Arrays are zeroed. */
tg_status tg_plan_create(tg_mode mode, uint32_t dims, size_t record_count, size_t object_count,
                         const tg_allocator *alloc, tg_plan **out);

/* Free a plan. NULL is a no-op. */
void tg_plan_destroy(tg_plan *plan);

/* Lower bounds. `peak_live`: the largest sum of live sizes (volumes) at any task: no plan in
 * either mode can be smaller. `positional_max`: the sum over positions of the largest
 * position-th biggest live record at any task (TFLite's positional maximums): no objects plan
 * can be smaller. `naive`: the sum of all sizes. For 2D/3D everything is in texels. */
typedef struct tg_bounds {
  uint64_t peak_live;
  uint64_t positional_max;
  uint64_t naive;
} tg_bounds;

tg_status tg_bounds_compute(const tg_usage_record *records, size_t count, uint32_t dims,
                            const tg_allocator *alloc, tg_bounds *out);

/* A lower bound on objects-mode totals that pays for shapes (planner/bounds_shape.c): for two
 * task points, the records live at the first and those live only at the second each need an
 * object of their own set, an object holds at most one of each, and costs at least their
 * per-dimension maximum; the cheapest such pairing (an exact assignment) bounds every objects
 * plan, under any may-share relation. Tried on pairs among the 32 points of largest live volume
 * with at most 64 records live, within a fixed amount of work. `*out` is the largest of those
 * and the positional maximum, so never below tg_bounds_compute's. For textures, where a
 * 64x64 and a 16x256 tensor cannot share 4096 texels, it is often far tighter. Statuses as
 * tg_bounds_compute (the same input checks), or TG_ERROR_OUT_OF_HOST_MEMORY. */
tg_status tg_bounds_objects_shape(const tg_usage_record *records, size_t count, uint32_t dims,
                                  const tg_allocator *alloc, uint64_t *out);

/* A lower bound on objects-mode totals from exact optima of record subsets
 * (planner/bounds_subset.c): restricted to any subset, an objects plan is a plan of the subset
 * and costs no less than the subset's optimum, which a dynamic programme over its subsets
 * finds exactly (3^k steps for k records). The subset starts as the 12 largest records, then
 * swaps and grows (up to `max_subset` records, at most 20; 0 = 15) among the 40 largest while
 * its optimum rises, within a fixed amount of work (seconds at most; deterministic). Holds
 * under any may-share relation. Meant for reports and benchmarks, not for every plan: it
 * proves, for instance, that the public models' texture plans cannot be much smaller than
 * Tangram's. `*out` is at least the positional maximum. TG_ERROR_INVALID_ARGUMENT when
 * max_subset > 20; otherwise the statuses of tg_bounds_compute, or
 * TG_ERROR_OUT_OF_HOST_MEMORY. */
tg_status tg_bounds_objects_subset(const tg_usage_record *records, size_t count, uint32_t dims,
                                   size_t max_subset, const tg_allocator *alloc, uint64_t *out);

/* Independent validation of a plan against its records: every record placed; in objects
 * mode object ids in range and each object covering its records in every dimension and the
 * total equal to the sum of object volumes; in offsets mode offsets aligned (to
 * max(alignment, record alignment)), no arithmetic overflow, total = max(offset+size); no two
 * records that conflict (intersecting intervals, or `relation` says they may not share) use
 * the same object or intersecting address ranges. Returns TG_OK when valid,
 * TG_ERROR_INVALID_PLAN with `err` naming the records and the rule broken when not, or
 * another error (allocation). */
tg_status tg_plan_validate(const tg_usage_record *records, size_t count, uint32_t dims,
                           const tg_plan *plan, uint64_t alignment,
                           const tg_share_relation *relation, const tg_allocator *alloc,
                           tg_error_info *err);

/* TFLite's ObjectsToOffsets for a 1D objects plan: the objects are laid out back to back in
 * id order, each starting at the next multiple of `alignment` (0 or 1 = none); each record's
 * offset is its object's, and `total` is the end of the last object (the sum of the object
 * sizes when unaligned). Uses `object_sizes` as given, so an object larger than its records,
 * or one with no records, still takes its full size; the total then exceeds max(offset +
 * size) and tg_plan_validate rejects the result. Plans from tg_plan_compute size every object
 * to its largest record, so theirs validate. TG_ERROR_UNSUPPORTED for 2D/3D plans,
 * TG_ERROR_INVALID_ARGUMENT for an offsets plan or an object id out of range,
 * TG_ERROR_OVERFLOW if the layout does not fit 64 bits. `*out` is NULL on failure. */
tg_status tg_plan_objects_to_offsets(const tg_plan *objects_plan, uint64_t alignment,
                                     const tg_allocator *alloc, tg_plan **out);

/* What the exact mode reports. The caller may set `progress` (and `progress_user`) before the
 * call: it is then called about every 100 ms of the branch-and-bound with the current numbers
 * (and once at the end). Everything else is output. */
typedef struct tg_exact_stats {
  int proved_optimal;      /* 1: no plan has a smaller total than the one returned */
  uint64_t nodes;          /* branch-and-bound nodes visited */
  uint64_t lower_bound;    /* proved lower bound on any plan's total (= total when optimal) */
  uint64_t total;          /* the returned plan's total */
  uint64_t elapsed_us;     /* wall time of the whole call */
  int searched;            /* 1 when the branch-and-bound ran (0: too many records, or the
                              greedy + search answer already met the bound) */
  void (*progress)(void *user, const struct tg_exact_stats *stats);
  void *progress_user;
} tg_exact_stats;

/* Largest record count the exact branch-and-bound takes on with a relation
 * (TG_EXACT_MAX_RECORDS) and without one (TG_EXACT_MAX_SERIAL_RECORDS: the skyline search,
 * whose nodes stay cheap on more records); above it the exact mode returns greedy + search and
 * proves optimality only when that reaches the peak-live bound. */
#define TG_EXACT_MAX_RECORDS ((size_t)1024)
#define TG_EXACT_MAX_SERIAL_RECORDS ((size_t)16384)

/* Offsets mode, exact: greedy (every strategy), then the improvement search for a tenth of
 * `options->time_limit_ms`, then a branch-and-bound over canonical placements for the rest of
 * it (time_limit_ms 0 = 1000). The plan returned is always valid and never worse than `best`;
 * `stats` (may be NULL) says whether it is proved optimal and, when not, the proved lower
 * bound. options->mode is taken as offsets and options->strategy as best; other options
 * (alignment, relation, seed) are honoured. Records must be 1D. */
tg_status tg_plan_compute_exact(const tg_usage_record *records, size_t count,
                                const tg_plan_options *options, const tg_allocator *alloc,
                                tg_plan **out, tg_exact_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
