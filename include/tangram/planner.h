/* The device-neutral planner: strategies that map usage records to shared objects or to
 * offsets in one arena, lower bounds, and an independent validator. Every function here is
 * safe to call from several threads at once on shared read-only input. */
#ifndef TANGRAM_PLANNER_H
#define TANGRAM_PLANNER_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/records.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* What a plan assigns to each record. */
typedef enum tg_mode {
  TG_MODE_OBJECTS = 0, /* each record gets a shared object; object size = per-dimension max */
  TG_MODE_OFFSETS = 1  /* each record gets an offset in one arena (1D only) */
} tg_mode;

/* How a plan is computed. Every strategy, and `best` without a search, gives a plan that is a
 * function of the records and options alone. */
typedef enum tg_strategy {
  TG_STRATEGY_NAIVE = 0,         /* one object / slot per record */
  TG_STRATEGY_EQUALITY,          /* reuse only objects of exactly the same size (objects mode) */
  TG_STRATEGY_GREEDY_IN_ORDER,   /* by first task; objects: TFLite's; offsets: free list + fit */
  TG_STRATEGY_GREEDY_BY_BREADTH, /* tasks by decreasing breadth */
  TG_STRATEGY_GREEDY_BY_SIZE,    /* objects: TFLite's distance priority; offsets: TFLite's */
  TG_STRATEGY_MIN_COST_FLOW,     /* objects mode */
  TG_STRATEGY_BEST,              /* the smallest of the applicable strategies' plans, improved
                                  * by a search (see time_limit_ms) */
  /* Peers' planners, side by side (tg_strategy_origin says whose). Values after BEST. */
  TG_STRATEGY_BEAM,              /* beam search over placements in first-task order (beam_width
                                  * states kept); both modes */
  TG_STRATEGY_ALLOCATION_TREE,   /* PyTorch inductor's allocation tree; offsets mode */
  TG_STRATEGY_GREEDY_COLORING,   /* Mini-Infer's interference-graph colouring; objects mode */
  TG_STRATEGY_GREEDY_BY_CONFLICTS, /* TVM USMP's greedy by liveness conflicts; offsets mode */
  TG_STRATEGY_HILL_CLIMB,        /* TVM USMP's hill climbing over the placement order; offsets */
  TG_STRATEGY_COUNT              /* number of strategies; not a strategy */
} tg_strategy;

/* Free-block choice for offsets-mode greedy-in-order, among the free blocks that hold the
 * record: best = the smallest, first = the lowest, worst = the largest. */
typedef enum tg_fit { TG_FIT_BEST = 0, TG_FIT_FIRST = 1, TG_FIT_WORST = 2 } tg_fit;

/* "naive", "equality", "greedy-in-order", "greedy-by-breadth", "greedy-by-size",
 * "min-cost-flow", "best", "beam", "allocation-tree", "greedy-coloring", "greedy-by-conflicts",
 * "hill-climb"; NULL for out-of-range values. Static strings, here and below. */
const char *tg_strategy_name(tg_strategy strategy);
/* Where a strategy comes from: "TFLite" (naive, equality, the greedy strategies, min-cost-flow:
 * the GPU delegate's memory_management), "PyTorch" (allocation-tree: inductor's memory_plan),
 * "Mini-Infer" (greedy-coloring), "TVM" (greedy-by-conflicts, hill-climb: USMP), "seed 000"
 * (beam: the beam search of the tensor-lifetime article, docs/strategies.md), "Tangram" (best);
 * NULL for out-of-range values. */
const char *tg_strategy_origin(tg_strategy strategy);
/* 1 when tg_plan_compute runs `strategy` in `mode` on records of `dims` dimensions, 0 when it
 * answers TG_ERROR_UNSUPPORTED or a value is out of range. Offsets mode needs 1D records and
 * runs every strategy but equality, min-cost-flow and greedy-coloring; objects mode runs every
 * strategy but allocation-tree, greedy-by-conflicts and hill-climb, and greedy-coloring on 1D
 * records only (Mini-Infer sizes pools in bytes). */
int tg_strategy_applies(tg_strategy strategy, tg_mode mode, uint32_t dims);
/* Parse a strategy name as above. TG_ERROR_INVALID_ARGUMENT if unknown (`*out` untouched). */
tg_status tg_strategy_from_name(const char *name, tg_strategy *out);
/* "objects" / "offsets"; NULL if out of range. */
const char *tg_mode_name(tg_mode mode);
/* Parse "objects" / "offsets". TG_ERROR_INVALID_ARGUMENT if unknown (`*out` untouched). */
tg_status tg_mode_from_name(const char *name, tg_mode *out);
/* "best" / "first" / "worst"; NULL if out of range. */
const char *tg_fit_name(tg_fit fit);
/* Parse "best" / "first" / "worst". TG_ERROR_INVALID_ARGUMENT if unknown (`*out` untouched). */
tg_status tg_fit_from_name(const char *name, tg_fit *out);

/* A may-share relation beyond interval overlap (the scheduler supplies one for parallel
 * execution). `may_share(user, a, b)` is called only for records a != b whose task intervals do
 * NOT intersect; it returns nonzero when they may use the same memory. It must be symmetric and
 * pure (planners may call it any number of times, in any order, and from concurrent
 * tg_plan_compute calls that share the relation). NULL relation = serial execution: disjoint
 * intervals always may share. The planner only reads the struct; it must outlive the call.
 *
 * Two optional facts let planners avoid testing every pair (a zeroed field means "not known";
 * planners then test pairs, which is slower but gives the same plans):
 * - `window(user, r, &lo, &hi)`: a task range of record r such that may_share(a, b) is nonzero
 *   whenever the windows of a and b do not intersect. Planners widen it to contain r's own
 *   interval, and test may_share only for records whose windows intersect.
 * - `transitive`: for records a, b, c whose intervals are disjoint and in that order in time,
 *   may_share(a, b) and may_share(b, c) imply may_share(a, c). Objects-mode strategies then
 *   test a record only against its neighbours in time within an object.
 *
 * In-place pairs (tg_in_place_pair) meet at their op, so may_share says nothing about them:
 * `in_place(user, input, output, op, &other)` does. It returns nonzero when op `op` may write
 * record `output` over record `input` in the execution the relation stands for: every other op
 * touching `input` (its producer and its other readers) is ordered before `op`, and whatever
 * else the relation demands of two records sharing memory holds. When it returns 0 it sets
 * `*other` to an op touching `input` that is not so ordered (UINT32_MAX when it names none).
 * Pure, like may_share. NULL with a relation: no pair may be used under it
 * (the planner leaves every pair out, the validator refuses a plan that declares one). Without
 * a relation (serial order) the rules of tg_in_place_pair alone decide. */
typedef struct tg_share_relation {
  int (*may_share)(void *user, size_t a, size_t b);
  void *user;
  void (*window)(void *user, size_t r, uint64_t *lo, uint64_t *hi);
  int transitive;
  int (*in_place)(void *user, size_t input, size_t output, uint32_t op, uint32_t *other);
} tg_share_relation;

/* Planning options. A zeroed struct (or NULL for tg_plan_compute) means: objects mode, naive
 * strategy, best fit, no alignment, serial relation, default search budget for `best`, beam
 * width 8. Read only during the call. */
typedef struct tg_plan_options {
  tg_mode mode;
  tg_strategy strategy;
  tg_fit fit;                          /* offsets-mode greedy-in-order only */
  /* Offsets mode: offsets are multiples (0 or 1 = none). Objects mode: greedy-coloring rounds
   * each 1D record's size up to a multiple before sizing its object (Mini-Infer's pool
   * alignment, 256 there), so its objects may exceed their records; other objects strategies
   * and 2D/3D records ignore it. */
  uint64_t alignment;
  const tg_share_relation *relation;   /* NULL = serial */
  /* `best` runs min-cost-flow only up to this many records (0 = TG_DEFAULT_MCF_MAX_RECORDS). */
  size_t mcf_max_records;
  /* Strategy best: the search for a plan smaller than the greedy strategies' (only a smaller
   * valid plan ever replaces theirs; it ends as soon as the plan meets the lower bound).
   * - 0, as in a zeroed struct: the default budget. Every strategy `best` runs, then at most
   *   TG_DEFAULT_TIME_LIMIT_MS of search. Not a limit on the call: the strategies before the
   *   search are not counted.
   * - TG_TIME_LIMIT_NONE: no search; the smallest plan of the strategies `best` runs.
   * - any other value: a limit on the whole call, set-up and strategies included: it returns
   *   within time_limit_ms plus at most a tenth of it plus 20 ms (measured on inputs up to
   *   100k records). What cannot fit is skipped or cut short: strategies are skipped or stop
   *   (beam, hill-climb; up to TG_EXACT_MAX_RECORDS records every strategy that costs about
   *   one greedy pass still runs in full), large inputs start from fewer of them (offsets: greedy-by-size
   *   alone, whose unplaced records go right above what they meet in time when it is cut
   *   short), and a limit too short for even that (well under 0.5 us per record) gives the
   *   naive plan. So a short limit can give a larger plan than the default.
   * With `exact`, 0 and TG_TIME_LIMIT_NONE mean 1000. Under an explicit limit (not exact) the
   * search runs in rounds (see work_limit and "Monotone in time" below): the clock only decides
   * how many rounds run, so the plan may depend on the machine's speed and load only through
   * that. Same records, options, seed and work_limit (time_limit_ms 0) give the same plan.
   * docs/architecture.md describes the search. */
  uint32_t time_limit_ms;
  uint64_t seed;                       /* the search's and hill-climb's only source of randomness */
  /* Strategy best: after the greedy strategies, spend time_limit_ms in all (0 = 1000) on
   * finding a plan and proving it optimal, or else a lower bound on every plan's total; part
   * of the time goes to the improvement search first. The plan is never worse than the best
   * greedy plan. Applies to offsets mode (see tg_plan_compute_exact, TG_EXACT_MAX_RECORDS) and
   * to objects mode with 1D records up to an internal size limit; elsewhere `exact` is ignored
   * (only time_limit_ms counts) and exact_stats is left untouched. */
  int exact;
  /* Where the exact mode reports what it proved (may be NULL; read only with `exact`). Must
   * stay valid during the call. See tg_exact_stats. */
  struct tg_exact_stats *exact_stats;
  /* Strategy beam: states kept at each step (0 = TG_DEFAULT_BEAM_WIDTH; 1 is the greedy).
   * Time and memory grow about linearly with it. `best` runs beam with the default width. */
  uint32_t beam_width;
  /* Strategy best, not exact: a limit on the search's work instead of (or beside) the clock,
   * in work units of about a millisecond each on a typical machine (0 = none). With it, or
   * with an explicit time_limit_ms, the search after the strategies runs in rounds whose work
   * budgets double (2, 4, 8, ... units), each a restart from the best plan so far with its own
   * choices drawn from `seed`; work counts, not the clock, decide what a round explores. With
   * work_limit alone (time_limit_ms 0) no clock is read: the rounds whose budgets sum to at
   * most work_limit run, so the same records, options, seed and work_limit give the same
   * plan on every machine. See "Monotone in time" below. */
  uint32_t work_limit;
  /* In-place candidates (none by default: an engine must accept an output aliasing an input,
   * reading each element before writing it). Each pair (see tg_in_place_pair) must satisfy its
   * rules, and a record may be the input of one pair and the output of one pair at most
   * (else TG_ERROR_INVALID_ARGUMENT). Chains of pairs become one allocation each; the planner
   * plans the records with and without them and keeps the smaller plan (ties: without), so
   * in-place never raises a total; the two plans share the call's search budget (each gets
   * half of time_limit_ms, of the default search time and of work_limit), so in-place takes
   * about the time the call would take without it, plus the strategies' second pass. A pair is
   * left out when the relation does not allow it (tg_share_relation.in_place: another op
   * touching its input may run at the same time as its op) or when its chain would join
   * records that conflict (the relation forbids them to share, or their intervals meet
   * elsewhere). The pairs used are in tg_plan.in_place. */
  const tg_in_place_pair *in_place;
  size_t in_place_count;
  /* The largest single allocation the device accepts, in bytes (0 = no cap). Offsets mode:
   * the plan spans as many arenas as it needs, each at most this many bytes (see tg_plan's
   * arenas), smallest total first, then fewest arenas; every strategy, `best` included, plans
   * as usual and its plan is then split into arenas. Objects mode, 1D: every object must fit.
   * A 1D record larger than the cap gives TG_ERROR_LIMIT. 2D/3D objects are not checked here
   * (their bytes depend on the texel format: the caller checks them). */
  uint64_t max_allocation;
} tg_plan_options;

/* Monotone in time (strategy best under time_limit_ms or work_limit, not exact). The rounds
 * run in an order that is the same for every limit, and the plan returned is the smallest of
 * the strategies' and of every round's, so a larger work_limit explores what a smaller one did
 * and more: its plan is never larger. A larger time_limit_ms lets more rounds finish, so its
 * plan is never larger either, as long as the machine runs the rounds at a steady speed. On
 * large serial offsets inputs the greedy passes that start the search run in a schedule fixed
 * by the input (some between rounds), so a longer limit runs them too; on smaller inputs the
 * strategies before the search fit themselves to the limit (a short limit may skip some). Under a time limit the call returns before the limit only when the plan
 * meets a proved lower bound (or work_limit is spent); otherwise rounds run until the deadline
 * cuts the last one, which keeps what it found. Proved bounds: peak-live (offsets) or the
 * positional maximum (objects), the LP bound, a search that exhausted its tree, and in offsets
 * mode the subset-exact bound (tg_bounds_offsets), computed before rounds 7 and 10 under a
 * node cap of the round's budget (its work is not counted in work_limit). */

/* time_limit_ms: the default search budget of `best` (what 0 means), and the value that turns
 * the search off. */
#define TG_DEFAULT_TIME_LIMIT_MS 10u
#define TG_TIME_LIMIT_NONE UINT32_MAX

/* beam_width 0 means this. */
#define TG_DEFAULT_BEAM_WIDTH 8u

/* The record count up to which `best` runs min-cost-flow when mcf_max_records is 0. */
#define TG_DEFAULT_MCF_MAX_RECORDS ((size_t)500)
/* `best` runs allocation-tree, beam and hill-climb only up to this many records, hill-climb
 * only without a may-share relation (their time, up to many greedy passes' worth, is better
 * spent by the search; hill-climb's passes are quadratic with a relation), and these and
 * min-cost-flow only while no plan of the others meets the lower bound (they could only
 * tie). */
#define TG_BEST_PEERS_MAX_RECORDS ((size_t)1000)

/* A plan. Objects mode: `object_of[r]` is record r's object; `object_sizes[k]` is object k's
 * extent (per-dimension max of its records); `total` = sum of object volumes (bytes for 1D,
 * texels for 2D/3D). Offsets mode: `offset_of[r]` is record r's offset; `total` =
 * max(offset + size) (not rounded up to the alignment); `object_count` = 1 if any record,
 * else 0. Offsets mode over several arenas (planned under max_allocation): `arena_count` > 1,
 * `arena_of[r]` is record r's arena and `offset_of[r]` its offset inside that arena,
 * `arena_sizes[k]` = max(offset + size) over arena k's records, and `total` = the sum of the
 * arena sizes. With one arena (or none), `arena_count` <= 1 and both arrays are NULL. */
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
  /* The in-place pairs the plan uses (see tg_plan_options.in_place): the records of each share
   * one allocation. NULL / 0 when none; owned by the plan. */
  tg_in_place_pair *in_place;
  size_t in_place_count;
  tg_allocator alloc;     /* what the arrays came from */
  size_t arena_count;     /* offsets mode: arenas (1 if any record and no split, else 0) */
  uint32_t *arena_of;     /* offsets mode, arena_count > 1: record_count entries; else NULL */
  uint64_t *arena_sizes;  /* offsets mode, arena_count > 1: arena_count entries; else NULL */
  uint64_t max_allocation;/* the cap it was planned under (0 = none); the validator checks it */
} tg_plan;

/* Record r's arena in an offsets plan (0 when the plan has one arena). Cannot fail. */
static inline uint32_t tg_plan_arena_of(const tg_plan *plan, size_t r) {
  return plan->arena_of != NULL ? plan->arena_of[r] : 0u;
}

/* Arena k's size in an offsets plan (the total when the plan has one arena). Cannot fail. */
static inline uint64_t tg_plan_arena_size(const tg_plan *plan, size_t k) {
  return plan->arena_sizes != NULL ? plan->arena_sizes[k] : plan->total;
}

/* Split a valid one-arena offsets plan of 1D records into arenas of at most `max_allocation`
 * bytes each (see tg_plan), in place: records of each band of the arena keep their places
 * relative to it, records that straddle a cut are placed again where they fit, smallest
 * total first, then fewest arenas. `alignment` and `relation` as the plan was computed with.
 * A plan already within the cap is left as it is. TG_ERROR_LIMIT when a record is larger than
 * the cap (nothing changed), TG_ERROR_INVALID_ARGUMENT for a plan that is not a one-arena
 * offsets plan of these records, TG_ERROR_OUT_OF_HOST_MEMORY. Cost: O(n log n) plus, for each
 * straddling record, a scan of the records of the arenas it is tried in. */
tg_status tg_plan_split_arenas(const tg_usage_record *records, size_t count, tg_plan *plan,
                               uint64_t max_allocation, uint64_t alignment,
                               const tg_share_relation *relation, const tg_allocator *alloc);

/* Lower bound on the number of arenas of at most `max_allocation` bytes that any offsets plan
 * of these 1D records needs: at every task, the live bytes over the cap, and the live
 * records larger than half the cap (no two share an arena), rounded up. 0 for no records.
 * TG_ERROR_INVALID_ARGUMENT for max_allocation 0 or bad records, TG_ERROR_LIMIT when a record
 * exceeds the cap, TG_ERROR_OUT_OF_HOST_MEMORY. O(n log n). The bound on the total bytes is
 * tg_bounds.peak_live, under a cap as without one. */
tg_status tg_bounds_arena_count(const tg_usage_record *records, size_t count,
                                uint64_t max_allocation, const tg_allocator *alloc,
                                size_t *out);

/* Compute a plan for `count` records of dimensionality `dims` (1..3). Records may come in any
 * order. Offsets mode requires dims == 1 (TG_ERROR_UNSUPPORTED otherwise). Strategies that do
 * not exist for a mode (equality and min-cost-flow in offsets mode) give TG_ERROR_UNSUPPORTED.
 * TG_ERROR_INVALID_ARGUMENT for a record with first_task > last_task or an unused dimension
 * other than 1, TG_ERROR_OVERFLOW when a volume or a layout does not fit 64 bits. The plan is
 * allocated from `alloc` (NULL = default) and owned by the caller (tg_plan_destroy); `*out` is
 * NULL on failure. Cost: that of the strategy, about O(n log n) for most on typical inputs,
 * quadratic or more at worst (min-cost-flow is the slowest, hence mcf_max_records); `best`
 * runs every applicable strategy, then the search of time_limit_ms. Thread-safe for concurrent calls on shared
 * read-only input. */
tg_status tg_plan_compute(const tg_usage_record *records, size_t count, uint32_t dims,
                          const tg_plan_options *options, const tg_allocator *alloc,
                          tg_plan **out);

/* Allocate an empty plan with arrays for `record_count` records and `object_count` objects
 * (objects mode; offsets mode sets object_count to 1 when record_count > 0) for strategies
 * and tests to fill. Arrays are zeroed and `total` is 0. TG_ERROR_INVALID_ARGUMENT for dims
 * outside 1..3 or an unknown mode. The caller owns the plan; `*out` is NULL on failure. */
tg_status tg_plan_create(tg_mode mode, uint32_t dims, size_t record_count, size_t object_count,
                         const tg_allocator *alloc, tg_plan **out);

/* Copy `count` in-place pairs into `plan` (replacing those it held; 0 clears them), from the
 * plan's allocator. Nothing is checked here: tg_plan_validate checks them against the records.
 * TG_ERROR_INVALID_ARGUMENT for a NULL plan (or NULL pairs with count > 0),
 * TG_ERROR_OUT_OF_HOST_MEMORY (the plan is then unchanged). */
tg_status tg_plan_set_in_place(tg_plan *plan, const tg_in_place_pair *pairs, size_t count);

/* Free a plan and its arrays, with the allocator it records. NULL is a no-op. */
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

/* Compute the three bounds into `*out` (not meaningful on failure). O(n log n); allocates
 * scratch only. TG_ERROR_INVALID_ARGUMENT for bad records or dims (as tg_plan_compute),
 * TG_ERROR_OVERFLOW when a sum does not fit 64 bits, TG_ERROR_OUT_OF_HOST_MEMORY. */
tg_status tg_bounds_compute(const tg_usage_record *records, size_t count, uint32_t dims,
                            const tg_allocator *alloc, tg_bounds *out);

/* A lower bound on objects-mode totals that pays for shapes: for two task points, the
 * records live at the first and those live only at the second each need an object of their
 * own set, an object holds at most one of each and costs at least their per-dimension
 * maximum, so the cheapest such pairing bounds every objects plan, under any may-share
 * relation. Pairs of points are tried within a fixed amount of work (deterministic: no clock,
 * no randomness). `*out` is the largest of those bounds and the positional maximum, so
 * never below tg_bounds_compute's; for textures, where a 64x64 and a 16x256 tensor cannot
 * share 4096 texels, it is often far tighter. Statuses as tg_bounds_compute (the same input
 * checks), or TG_ERROR_OUT_OF_HOST_MEMORY. */
tg_status tg_bounds_objects_shape(const tg_usage_record *records, size_t count, uint32_t dims,
                                  const tg_allocator *alloc, uint64_t *out);

/* A lower bound on objects-mode totals from exact optima of record subsets: restricted to any
 * subset, an objects plan is a plan of the subset and costs no less than the subset's optimum,
 * found exactly in 3^k steps for k records. The subset is chosen among the largest records and
 * grows up to `max_subset` records (at most 20; 0 = 15) while its optimum rises, within a
 * fixed amount of work (seconds at most; deterministic: no clock, no randomness). Holds under
 * any may-share relation. Meant for reports and benchmarks, not for every plan. `*out` is at
 * least the positional maximum. TG_ERROR_INVALID_ARGUMENT when max_subset > 20; otherwise the
 * statuses of tg_bounds_compute, or TG_ERROR_OUT_OF_HOST_MEMORY. */
tg_status tg_bounds_objects_subset(const tg_usage_record *records, size_t count, uint32_t dims,
                                   size_t max_subset, const tg_allocator *alloc, uint64_t *out);

/* A lower bound on objects-mode totals from the linear programme over objects: weights on the
 * records such that no object (a set of pairwise time-disjoint records) weighs more than the
 * volume of its per-dimension maximum bound every objects plan from below by their sum; the
 * best weights (the LP dual) are searched by column generation and the bound is then computed
 * in exact integer arithmetic, so it is a proof whatever the floating point did. Holds under
 * any may-share relation. Usually the tightest of the objects bounds (on every MediaPipe model
 * it meets Tangram's plans within 1%), and the costliest: about n^2 per simplex pivot and
 * n per record shape per round. `max_work` caps the inner-loop steps (0 = the default, about a
 * second at most on this library's benchmark machines; deterministic: no clock, no randomness);
 * stopping early still gives a valid, weaker bound. Inputs of more than 1024 records, or with
 * more than 16384 distinct record shapes, get the positional maximum. `*out` is at least the
 * positional maximum. Statuses as tg_bounds_compute (the same input checks), or
 * TG_ERROR_OUT_OF_HOST_MEMORY (then `*out` is 0). Allocates about 24 n^2 bytes of scratch. */
tg_status tg_bounds_objects_lp(const tg_usage_record *records, size_t count, uint32_t dims,
                               uint64_t target, uint64_t max_work, const tg_allocator *alloc, uint64_t *out);

/* Which bound gave an offsets-mode lower bound (tg_offsets_bound). */
typedef enum tg_bound_source {
  TG_BOUND_PEAK_LIVE = 0,    /* the peak live size (tg_bounds.peak_live) */
  TG_BOUND_SUBSET_EXACT = 1, /* the exact search on a subset of the records (tg_bounds_offsets) */
  TG_BOUND_EXACT_SEARCH = 2  /* the exact search on all of them (tg_exact_stats.lower_bound) */
} tg_bound_source;

/* "peak-live", "subset-exact", "exact-search" ("unknown" for other values). Cannot fail. */
const char *tg_bound_source_name(tg_bound_source source);

/* An offsets-mode lower bound and where it comes from. */
typedef struct tg_offsets_bound {
  uint64_t bytes;          /* no offsets plan of the records has a smaller total */
  tg_bound_source source;
  size_t subset_records;   /* TG_BOUND_SUBSET_EXACT: the records of the subset that gave it */
} tg_offsets_bound;

/* tg_bounds_offsets' work cap when max_work is 0 (search nodes, weighted by the records they
 * search, and set-up; up to about 100 ms on 10k-60k records on this library's benchmark
 * machines, under a millisecond on a model's few hundred). */
#define TG_DEFAULT_BOUND_WORK ((uint64_t)50000)

/* A lower bound on offsets-mode totals, at least tg_bounds.peak_live: above it where the
 * records around a peak cannot be packed into their peak-live (alignments, sizes that do not
 * fit together), equal to it where they can. Any plan restricted to a subset of the records is
 * a plan of that subset, so the subset's optimum bounds every plan of all of them; the subsets
 * are the records live in windows of task points around the largest live sums, grown while
 * the exact skyline search (the one of tg_plan_compute_exact) settles them, and the bound is
 * the largest value the search proved on any of them (a capacity it showed to be infeasible,
 * plus 1, or the subset's optimum). Holds for plans with offsets that are multiples of
 * `alignment` (0 or 1 = none; the records' own alignments are honoured too) under any
 * may-share relation, not for plans using in-place pairs. `max_work` caps the work in all
 * (0 = TG_DEFAULT_BOUND_WORK); deterministic: no clock, no randomness. `out->source` says which
 * bound gave `out->bytes` (peak-live when the subsets prove no more). Statuses as
 * tg_bounds_compute (the same input checks), or TG_ERROR_OUT_OF_HOST_MEMORY. */
tg_status tg_bounds_offsets(const tg_usage_record *records, size_t count, uint32_t dims,
                            uint64_t alignment, uint64_t max_work, const tg_allocator *alloc,
                            tg_offsets_bound *out);

/* The bounds of tg_bounds_compute for the problem with in-place pairs (rules as for
 * tg_plan_options.in_place, every chain counted once: its records merged into one record over
 * their union): no plan using any of these pairs can be smaller. `objects_lp` (may be NULL)
 * receives tg_bounds_objects_lp of the merged records. Statuses as tg_bounds_compute, and
 * TG_ERROR_INVALID_ARGUMENT for a pair breaking the rules. */
tg_status tg_bounds_compute_in_place(const tg_usage_record *records, size_t count, uint32_t dims,
                                     const tg_in_place_pair *pairs, size_t pair_count,
                                     const tg_allocator *alloc, tg_bounds *out,
                                     uint64_t *objects_lp);

/* Independent validation of a plan against its records: every record placed; in objects
 * mode object ids in range and each object covering its records in every dimension and the
 * total equal to the sum of object volumes; in offsets mode offsets aligned (to
 * max(alignment, record alignment)), no arithmetic overflow, total = max(offset+size), or
 * with several arenas each arena's size = max(offset + size) of its records and total = their
 * sum; with plan->max_allocation set, every arena (objects mode: every object) within it; no two
 * records that conflict (intersecting intervals, or `relation` says they may not share) use
 * the same object or intersecting address ranges of one arena, except the in-place pairs the
 * plan declares (tg_plan.in_place): each must follow the pair rules (the input's last task and
 * the output's first task are the pair's op, equal sizes, one pair per record as input and as
 * output), be allowed by `relation` (tg_share_relation.in_place: with a relation, an op that
 * touches the input and is not ordered before the pair's op is an error naming both ops) and
 * put both records in the same object or at the same offset of one arena; they are the only
 * records whose intervals may meet and still share. Returns TG_OK when valid,
 * TG_ERROR_INVALID_PLAN with `err` naming the records and the rule broken when not, or
 * another error (allocation). Reads only; allocates scratch. O(n log n) plus, with a
 * relation, one may_share test per pair of records sharing memory (quadratic at worst). */
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
 * to its largest record, so theirs validate (except greedy-coloring's with an alignment, whose
 * objects are rounded up). TG_ERROR_UNSUPPORTED for 2D/3D plans,
 * TG_ERROR_INVALID_ARGUMENT for an offsets plan or an object id out of range,
 * TG_ERROR_OVERFLOW if the layout does not fit 64 bits. The new plan is the caller's;
 * `*out` is NULL on failure. O(records + objects). */
tg_status tg_plan_objects_to_offsets(const tg_plan *objects_plan, uint64_t alignment,
                                     const tg_allocator *alloc, tg_plan **out);

/* What the exact mode reports. The caller may set `progress` (and `progress_user`) before the
 * call: it is then called on the calling thread from time to time during the search (about
 * every 100 ms while a branch-and-bound runs) with the numbers so far, and once at the end.
 * Everything else is output, reset at the start of the call. */
typedef struct tg_exact_stats {
  int proved_optimal;      /* 1: no plan has a smaller total than the one returned */
  uint64_t nodes;          /* branch-and-bound nodes visited */
  uint64_t lower_bound;    /* proved lower bound on any plan's total (= total when optimal) */
  uint64_t total;          /* the returned plan's total */
  uint64_t elapsed_us;     /* wall time of the search phases (the greedy strategies excluded) */
  int searched;            /* 1 when a branch-and-bound ran; 0 when the input was too large
                              for it or the plan already met the lower bound */
  void (*progress)(void *user, const struct tg_exact_stats *stats);
  void *progress_user;
} tg_exact_stats;

/* Largest record count the offsets exact mode searches with a relation (TG_EXACT_MAX_RECORDS)
 * and without one (TG_EXACT_MAX_SERIAL_RECORDS). Above it the exact mode returns the plan of
 * the greedy strategies and the search, proved optimal only when it meets the peak-live
 * bound or the subset-exact bound (tg_bounds_offsets), which the exact mode computes first, in
 * a tenth of its time, at every size, and gives its search as the target. Without a relation,
 * an input whose records fall into parts that share no task is measured part by part. */
#define TG_EXACT_MAX_RECORDS ((size_t)1024)
#define TG_EXACT_MAX_SERIAL_RECORDS ((size_t)16384)

/* Offsets mode, exact: tg_plan_compute with mode offsets, strategy best and `exact` set,
 * whatever options->mode, strategy, exact and exact_stats say (`options` may be NULL). Other
 * options (alignment, relation, seed, time_limit_ms: 0 = 1000) are honoured. Records must be
 * 1D. The plan returned is always valid and never worse than the best greedy plan; `stats`
 * (may be NULL) says whether it is proved optimal and, when not, the proved lower bound.
 * Statuses and ownership as tg_plan_compute. Takes the greedy strategies' time plus about
 * time_limit_ms (overruns as for tg_plan_options.time_limit_ms). */
tg_status tg_plan_compute_exact(const tg_usage_record *records, size_t count,
                                const tg_plan_options *options, const tg_allocator *alloc,
                                tg_plan **out, tg_exact_stats *stats);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
