/* Internal interface of the layers below the search entry (best.c): the input transforms
 * (reduce.c, split.c) and the improvers (iterated.c, lns.c, exact_offsets.c). */
#ifndef TANGRAM_PLANNER_SEARCH_SEARCH_H
#define TANGRAM_PLANNER_SEARCH_SEARCH_H

#include <string.h>

#include "planner/strategies/offsets_common.h"
#include "planner/base/base.h"

/* Deterministic pseudo-random numbers (splitmix64): the search's only source of choice. */
typedef struct tg__rng {
  uint64_t state;
} tg__rng;

static inline uint64_t tg__rng_next(tg__rng *g) {
  uint64_t z = (g->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform-ish in [0, n) (n > 0); the modulo bias is irrelevant for a search. */
static inline size_t tg__rng_below(tg__rng *g, size_t n) {
  return (size_t)(tg__rng_next(g) % (uint64_t)n);
}

/* `deadline` (tg__now_us clock), or the call's deadline when that is earlier (in->deadline_us:
 * `best` under an explicit time limit, which every stage keeps). */
static inline uint64_t tg__deadline_cap(const tg__plan_input *in, uint64_t deadline) {
  return in->deadline_us != 0 && in->deadline_us < deadline ? in->deadline_us : deadline;
}

/* Milliseconds the stage may use: `ms`, or less when the call's deadline comes first. */
static inline uint64_t tg__ms_left(const tg__plan_input *in, uint64_t ms) {
  if (in->deadline_us == 0) return ms;
  uint64_t now = tg__now_us(), left = in->deadline_us > now ? (in->deadline_us - now) / 1000 : 0;
  return left < ms ? left : ms;
}

/* Candidate plans tried per millisecond of time limit at most (see tg_plan_options). */
#define TG__SEARCH_ITERS_PER_MS 20u

/* Skyline search nodes per millisecond of time limit at most, in the search of `best`. About
 * what a loaded 2-core machine visits on 200-500 records, so that the cap, not the clock,
 * usually ends the search there (reproducible plans); faster machines stop early. */
#define TG__SKYLINE_NODES_PER_MS 500u

/* The bound the search aims at: peak-live for offsets, positional-max for objects. */
tg_status tg__search_bound(const tg__plan_input *in, uint64_t *bound);

/* Improve `*best` (a valid plan for `in`) by iterated greedy over the placement order for at
 * most `budget_us` microseconds and `max_iters` candidates. Replaces `*best` only by a strictly
 * smaller valid plan (strategy field TG_STRATEGY_BEST). Stops as soon as `bound` is reached. */
tg_status tg__search_improve(const tg__plan_input *in, uint64_t bound, uint64_t budget_us,
                             uint64_t max_iters, tg_plan **best);

/* Relaxing dive nodes per millisecond of time limit at most on large inputs (the bench
 * machine visits 520-650 on wide DAGs of 10k-100k records; where the clock stops the dive
 * first, it completes its plan greedily), and the nodes per record its cap must cover for it
 * to run at all (wide DAGs need 4.1-4.2: a cap of 4 stops it a few percent short, and that
 * partial dive is completed too). */
#define TG__DIVE_NODES_PER_MS 600u
#define TG__DIVE_NODES_PER_RECORD 4u
/* ...and it runs only when the records cover at most this many task points each on average
 * (wide DAGs: about 11; cut-rectangle perfect packings: 4-50)... */
#define TG__DIVE_MAX_COVER_PER_RECORD 64u
/* ...and the mean length of the coverage lists a record is on (sum over task points of the
 * count squared, over the entries) is at most this: a node's work grows with it (wide DAGs:
 * 105-116; perfect packing of 100k records: 420, 70 times slower per node). */
#define TG__DIVE_MAX_LIST 256u

/* Offsets inputs with at least this many records and no relation: the search is the
 * large-neighbourhood search of lns.c, at most TG__LNS_STEPS_PER_MS steps per ms.
 * It starts where the small inputs' skyline search (tg__search_after_greedy) stops: from 1025
 * to 4999 records iterated greedy alone (the previous threshold, 5000) stayed 1-10% above the
 * bound on chains and wide DAGs where this reaches it (docs/bench.md, "Mid-size inputs"). */
#define TG__LNS_MIN_RECORDS (TG_EXACT_MAX_RECORDS + 1)
#define TG__LNS_STEPS_PER_MS 200u
/* The search of large inputs (iterated.c, search_large) moves on from a start when the
 * large-neighbourhood search has gone TG__LNS_STALL_STEPS steps without lowering the total; up
 * to TG__SKYLINE_MAX_RECORDS records its last stage is the skyline search (whose index grows
 * with the records' spans). */
#define TG__LNS_STALL_STEPS 2000u
#define TG__SKYLINE_MAX_RECORDS TG_EXACT_MAX_SERIAL_RECORDS

/* The skyline search's lookahead at one task point: 1 when h + S(h) <= limit for every sp
 * value h among items[0..m) (key = sp, idx = record), where S(h) is `above` plus the sizes
 * (`vol`) of the items with sp >= h, and `above` sums records all higher than these. Decides
 * most lists by the highest sp plus everything (passes) or the lowest sp plus everything (S
 * there: fails) without ordering anything; a full sort of each list was most of a node's
 * time on perfect packings (hundreds of records per point). Reorders the items. `above` plus
 * all the sizes must fit 64 bits (at a point they sum to at most its remaining size). */
int tg__skyline_fits_above(tg__sort_item *items, size_t m, uint64_t above, const uint64_t *vol,
                           uint64_t limit);

/* The skyline search keeps, per task point, the records covering it: inputs whose lists would
 * hold more entries than this (long-lived records over many points) are not searched. */
#define TG__SKYLINE_MAX_COVER(n) (((size_t)1 << 23) + 32 * (size_t)(n))

/* A relaxing dive (tg__skyline_dive) that has visited this many nodes without going deeper
 * than before raises its limit... */
#define TG__SKY_RELAX_NODES 128u
/* ...and makes frames final, never to be backed into, once they are this many levels up
 * (checked every time the dive gets this many levels deeper: it backs up at most twice as
 * far). */
#define TG__SKY_COMMIT_DEPTH 4096u

/* Large-neighbourhood search (lns.c): improve `*best` (a valid offsets plan, serial
 * relation) by re-placing the records near the top of the arena, for at most `max_iters` steps,
 * until `deadline` (tg__now_us), and (stall_steps > 0) until that many steps in a row have not
 * lowered the total. Replaces `*best` only by a strictly smaller plan. `*setup_us` (when not
 * NULL) receives the time spent before the first step (building its index). */
tg_status tg__search_offsets_lns(const tg__plan_input *in, uint64_t bound, uint64_t deadline,
                                 uint64_t max_iters, uint64_t stall_steps, uint64_t *setup_us,
                                 tg_plan **best);

/* Offsets mode: branch-and-bound from the incumbent `*best` for at most `budget_us`. Replaces
 * `*best` by a smaller plan when found; fills `stats` (never NULL). */
tg_status tg__exact_improve(const tg__plan_input *in, uint64_t bound, uint64_t budget_us,
                            tg_plan **best, tg_exact_stats *stats);

/* Offsets mode, serial relation only: the skyline branch-and-bound (exact_offsets.c), first for a plan
 * at `bound` (half the time and nodes), then below the incumbent. `max_nodes` caps the nodes
 * visited (0 = none), which makes the result independent of the clock when the cap ends it.
 * Replaces `*best` by a smaller plan when found; adds to `stats` (never NULL; nodes counted on
 * from stats->nodes): proved_optimal when the tree was exhausted or the bound reached.
 * Does nothing with a relation or above TG__SKYLINE_MAX_RECORDS records; TG_ERROR_OVERFLOW when
 * live sums do not fit 64 bits (callers treat that as "not searched"). */
tg_status tg__skyline_improve(const tg__plan_input *in, uint64_t bound, uint64_t budget_us,
                              uint64_t max_nodes, tg_plan **best, tg_exact_stats *stats);

/* Offsets mode, serial relation only: one skyline dive (exact_offsets.c) aiming at `bound`, on any
 * number of records. Dead ends found at once are backed out of as in the search; when the
 * dive visits TG__SKY_RELAX_NODES nodes without going deeper, the limit rises by `step`
 * (> 0) instead and the dive goes on, up to the incumbent's total - 1: it ends with a plan
 * below the incumbent, or at that ceiling, or when the deadline or `max_nodes` (0: none)
 * stop it. A dive stopped before placing every record keeps what it placed and places the
 * rest as greedy-by-size would (best fit, largest first; not bounded by the deadline: about a
 * greedy pass). Replaces `*best` when the plan is smaller; `*nodes` (when not NULL) receives
 * the nodes visited. Does nothing with a relation. TG_ERROR_OVERFLOW when not searched: live
 * sums beyond 64 bits, or coverage lists over TG__DIVE_MAX_COVER_PER_RECORD entries per record
 * (or TG__SKYLINE_MAX_COVER), or longer than TG__DIVE_MAX_LIST on average. */
tg_status tg__skyline_dive(const tg__plan_input *in, uint64_t bound, uint64_t step,
                           uint64_t deadline, uint64_t max_nodes, uint64_t *nodes,
                           tg_plan **best);

/* Objects mode, no relation, 2 to 400 records: the LP dive (lp_dive.c) until `deadline`
 * (tg__now_us clock) or `max_work` inner-loop steps of its LPs in all (0 = no cap; about 2e6
 * per ms, TG__LP_DIVE_WORK_PER_MS): each step solves the LP over objects of the records left and makes its
 * columns at 1 (or its largest) objects. Replaces `*best` (strategy TG_STRATEGY_BEST) when the
 * plan is smaller; drops a dive the deadline cuts. `*proved` receives the LP bound of all the
 * records when the first LP was solved (a proof: no plan is smaller), else 0. */
tg_status tg__search_lp_dive(const tg__plan_input *in, uint64_t deadline, uint64_t max_work,
                             tg_plan **best, uint64_t *proved);
#define TG__LP_DIVE_WORK_PER_MS 2000000u

/* tg__skyline_dive with the limit rising by a thousandth of `bound` (at least the largest
 * alignment) at each stall, for at most `cap` nodes, when that covers
 * TG__DIVE_NODES_PER_RECORD nodes per record (else nothing); `*nodes` (when not NULL)
 * receives the nodes visited. TG_ERROR_OVERFLOW (not searched) becomes TG_OK. */
tg_status tg__search_dive(const tg__plan_input *in, uint64_t bound, uint64_t deadline,
                          uint64_t cap, uint64_t *nodes, tg_plan **best);

/* Offsets mode: the subset-exact lower bound (bound_offsets.c, see tg_bounds_offsets) of
 * `in` (its records and volumes; options->alignment honoured, relation ignored: the bound holds
 * under any), with at most `max_nodes` skyline search nodes in all (0 = none), stopping at
 * `deadline_us` (tg__now_us clock, 0 = none) with what it proved so far. `*out` receives the
 * bound (0 when nothing was proved; compare with peak-live), `*subset_records` (may be NULL)
 * the records of the window that gave it. */
tg_status tg__offsets_subset_bound(const tg__plan_input *in, uint64_t max_nodes,
                                   uint64_t deadline_us, uint64_t *out, size_t *subset_records);

/* Exact mode's stats at the start of a call: zeroed, the caller's progress callback kept. */
static inline void tg__exact_stats_reset(tg_exact_stats *stats) {
  void (*progress)(void *, const tg_exact_stats *) = stats->progress;
  void *user = stats->progress_user;
  memset(stats, 0, sizeof *stats);
  stats->progress = progress;
  stats->progress_user = user;
}

/* Plans 1D records as tg_plan_compute does (the entry supplies it: the layers below never call
 * back up into it), stopping at `deadline_us` (tg__now_us clock, 0 = none; with 0 and a
 * time limit in `options`, the limit's own deadline). */
typedef tg_status (*tg__plan_records_fn)(const tg_usage_record *records, size_t count,
                                         const tg_plan_options *options, uint64_t deadline_us,
                                         const tg_allocator *alloc, tg_plan **out);

/* Searches one part of a split input, aiming at `bound` (the entry supplies it). */
typedef tg_status (*tg__search_part_fn)(const tg__plan_input *in, uint64_t bound, tg_plan **best);

/* Serial offsets inputs: records born and dying together merged into blocks (reduce.c),
 * subset chains for groups of at most TG__REDUCE_SUBSET_MAX live members and at most
 * TG__REDUCE_PAIRS_MAX pairs of groups per task boundary, at most TG__REDUCE_MAX_PASSES passes
 * over the blocks. */
#define TG__REDUCE_SUBSET_MAX 10u
#define TG__REDUCE_PAIRS_MAX 16u
#define TG__REDUCE_MAX_PASSES 64

/* Serial offsets inputs above `bound`: merges blocks (equal sums only, then also stacking the
 * groups left without a partner) and, for each of the two that at least halves the records,
 * plans the blocks with `plan` (the entry's `best`, search within what is left of `time_limit_ms`: half for the first,
 * all for the second; not exact) and keeps the unfolded plan when it is smaller than `*best`.
 * `*reduced` is 1 when a block plan was made. */
tg_status tg__search_reduced(const tg__plan_input *in, uint64_t bound, uint32_t time_limit_ms,
                             tg__plan_records_fn plan, tg_plan **best, int *reduced);

/* Serial offsets inputs whose records fall into two or more parts with no task in common
 * (split.c): `*split` = 1 and each part above `bound` (the input's bound) searched on
 * its own by `search_part`, in the time and exact mode of in->options (stats
 * in options->exact_stats, for the whole input). Replaces `*best` only by a smaller plan.
 * `*split` = 0 and nothing done otherwise, or when `*best` is at `bound` already. */
tg_status tg__search_split(const tg__plan_input *in, uint64_t bound, tg__search_part_fn search_part,
                           tg_plan **best, int *split);

#endif
