/* The planner's internal base: the checked input every strategy and search receives, the
 * strategy table, and plan finishing (plan.c beside this file). */
#ifndef TANGRAM_PLANNER_BASE_H
#define TANGRAM_PLANNER_BASE_H

#include "core/internal.h"
#include "tangram/planner.h"

/* What every strategy receives. All pointers are valid; `count` may be 0. */
typedef struct tg__plan_input {
  const tg_usage_record *records;
  size_t count;
  uint32_t dims;                   /* 1..3 */
  const tg_plan_options *options;  /* never NULL */
  const tg_allocator *alloc;       /* never NULL */
  const uint64_t *volumes;         /* volumes[r] = w*h*d of record r, overflow already rejected */
  /* When the call must return (tg__now_us() clock), 0 = no deadline. Set by `best` under an
   * explicit time limit; strategies that can cut their work short (beam, hill-climb) read it.
   * The search's stages get their own deadline in their budget (planner/search/search.h). */
  uint64_t deadline_us;
  /* In `best`'s search (planner/search/best.c): the largest lower bound proved so far on this
   * input's plans (raised by the stages that prove one), else NULL. */
  uint64_t *proved;
  /* In `best`'s rounds (planner/search/best.c): the share, in percent, of the skyline search's
   * and overlap minimisation's budget that overlap minimisation gets, adapted round by round to
   * what each gained; else NULL (TG__OVERLAP_FIRST_SHARE every time: parts of a split input). */
  unsigned *overlap_share;
} tg__plan_input;

/* A strategy creates `*out` (with tg_plan_create) and fills it; on failure `*out` is NULL. */
typedef tg_status (*tg__strategy_fn)(const tg__plan_input *in, tg_plan **out);

/* Objects mode (1D, 2D and 3D). */
tg_status tg__objects_naive(const tg__plan_input *in, tg_plan **out);
tg_status tg__objects_equality(const tg__plan_input *in, tg_plan **out);
tg_status tg__objects_greedy_in_order(const tg__plan_input *in, tg_plan **out);
tg_status tg__objects_greedy_by_breadth(const tg__plan_input *in, tg_plan **out);
tg_status tg__objects_greedy_by_size(const tg__plan_input *in, tg_plan **out);
tg_status tg__objects_min_cost_flow(const tg__plan_input *in, tg_plan **out);

/* Offsets mode (1D). */
tg_status tg__offsets_naive(const tg__plan_input *in, tg_plan **out);
tg_status tg__offsets_greedy_in_order(const tg__plan_input *in, tg_plan **out); /* options->fit */
tg_status tg__offsets_greedy_by_breadth(const tg__plan_input *in, tg_plan **out);
tg_status tg__offsets_greedy_by_size(const tg__plan_input *in, tg_plan **out);

/* The peers' planners (planner/strategies/, one file each). */
tg_status tg__objects_beam(const tg__plan_input *in, tg_plan **out);    /* options->beam_width */
tg_status tg__offsets_beam(const tg__plan_input *in, tg_plan **out);
tg_status tg__offsets_allocation_tree(const tg__plan_input *in, tg_plan **out);
tg_status tg__objects_greedy_coloring(const tg__plan_input *in, tg_plan **out); /* alignment */
tg_status tg__offsets_greedy_by_conflicts(const tg__plan_input *in, tg_plan **out);
tg_status tg__offsets_hill_climb(const tg__plan_input *in, tg_plan **out);   /* options->seed */

/* Given plan->object_of filled for every record, set object_sizes (per-dimension max) and
 * total (sum of volumes). object_count must already be right. TG_ERROR_OVERFLOW if the total
 * does not fit 64 bits. */
/* The function that plans strategy `s` in `mode` (planner/strategies/strategies.c); NULL where
 * the strategy does not apply to the mode, and for TG_STRATEGY_BEST. */
tg__strategy_fn tg__strategy_fn_get(tg_mode mode, tg_strategy s);

/* The strategies `best` runs (every one but `best`, whether or not it applies to a mode), in
 * the order it runs them: tg__best_strategy_at(i) for i < tg__best_strategy_count(). Code that
 * walks "every strategy" walks this list, never an enum range (the peers' strategies come
 * after TG_STRATEGY_BEST in the enum). */
size_t tg__best_strategy_count(void);
tg_strategy tg__best_strategy_at(size_t i);

tg_status tg__plan_finish_objects(const tg__plan_input *in, tg_plan *plan);
/* Keep in `*best` the smaller of `*best` (may be NULL) and `cand` (ties keep `*best`); the
 * other plan is destroyed. */
void tg__keep_smaller(tg_plan **best, tg_plan *cand);

/* Given plan->offset_of filled, set total = max(offset + size). */
tg_status tg__plan_finish_offsets(const tg__plan_input *in, tg_plan *plan);

/* The alignment record r must honour in offsets mode: max(options->alignment, record's), at
 * least 1. */
static inline uint64_t tg__record_alignment(const tg__plan_input *in, size_t r) {
  uint64_t a = in->options->alignment;
  uint64_t ra = in->records[r].alignment;
  if (ra > a) a = ra;
  return a ? a : 1;
}

/* The first index in the ascending v[0 .. n) whose entry is not below `key` (n when none). */
static inline size_t tg__lower_bound_u64(const uint64_t *v, size_t n, uint64_t key) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Conflict test shared by strategies: 1 when records a and b may NOT use the same memory
 * (intervals intersect, or the relation forbids it). */
static inline int tg__records_conflict(const tg__plan_input *in, size_t a, size_t b) {
  const tg_usage_record *ra = &in->records[a], *rb = &in->records[b];
  if (ra->first_task <= rb->last_task && rb->first_task <= ra->last_task) return 1;
  const tg_share_relation *rel = in->options->relation;
  return rel != NULL && a != b && !rel->may_share(rel->user, a, b);
}

#endif
