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

/* The budget every stage of the search is handed: a cap on the work it may spend and the
 * call's hard deadline. Work is counted, never measured on the clock: a stage turns what is
 * left into its own caps (nodes, candidates, steps: a fixed number per work unit, the
 * TG__*_PER_UNIT rates below), checks the deadline as it goes, and charges what it did
 * use, so its caller hands the rest to the next stage. A unit is about a millisecond of a
 * loaded 2-core machine; budgets count thousandths of one (`cap` and `spent`), so that small
 * stages are charged what they used. A run that the deadline does not stop depends only on
 * (records, options, cap): the same plan on every machine. */
typedef struct tg__budget {
  uint64_t cap;         /* thousandths of a work unit this stage may spend; UINT64_MAX = no cap */
  uint64_t spent;       /* thousandths spent so far */
  uint64_t deadline_us; /* tg__now_us() by which the call returns; 0 = none */
} tg__budget;

#define TG__BUDGET_NONE UINT64_MAX
#define TG__MILLI 1000u

/* A budget of `units` work units (TG__BUDGET_NONE: no cap) and `deadline_us`. */
static inline tg__budget tg__budget_make(uint64_t units, uint64_t deadline_us) {
  tg__budget b = {units == TG__BUDGET_NONE ? TG__BUDGET_NONE : tg__add_sat_u64(0, units) * TG__MILLI,
                  0, deadline_us};
  if (units != TG__BUDGET_NONE && units > UINT64_MAX / TG__MILLI) b.cap = TG__BUDGET_NONE - 1;
  return b;
}

/* Thousandths of a unit left. */
static inline uint64_t tg__budget_left(const tg__budget *b) {
  if (b->cap == TG__BUDGET_NONE) return TG__BUDGET_NONE;
  return b->cap > b->spent ? b->cap - b->spent : 0;
}

/* A stage's own budget: at most `cap` thousandths of what `b` has left, the same deadline.
 * Charge it back with tg__budget_charge. */
static inline tg__budget tg__budget_sub(const tg__budget *b, uint64_t cap) {
  uint64_t left = tg__budget_left(b);
  tg__budget s = {cap < left ? cap : left, 0, b->deadline_us};
  return s;
}

/* `num` / `den` of what `b` has left (all of it when `b` has no cap). */
static inline tg__budget tg__budget_share(const tg__budget *b, uint64_t num, uint64_t den) {
  uint64_t left = tg__budget_left(b), part;
  if (left == TG__BUDGET_NONE) return tg__budget_sub(b, TG__BUDGET_NONE);
  part = tg__mul_u64(left, num, &part) ? part / den : left / den * num;
  return tg__budget_sub(b, part);
}

/* `b` pays for what the stage given `sub` spent. */
static inline void tg__budget_charge(tg__budget *b, const tg__budget *sub) {
  b->spent = tg__add_sat_u64(b->spent, sub->spent);
}

/* How many items at `per_unit` a unit the budget still buys (UINT64_MAX without a cap). */
static inline uint64_t tg__budget_count(const tg__budget *b, uint64_t per_unit) {
  uint64_t left = tg__budget_left(b), n;
  if (left == TG__BUDGET_NONE) return UINT64_MAX;
  return tg__mul_u64(left, per_unit, &n) ? n / TG__MILLI : left / TG__MILLI * per_unit;
}

/* Charge `items` at `per_unit` a unit (rounded up). */
static inline void tg__budget_spend(tg__budget *b, uint64_t items, uint64_t per_unit) {
  uint64_t mu;
  mu = tg__mul_u64(items, TG__MILLI, &mu) ? (mu + per_unit - 1) / per_unit : UINT64_MAX;
  b->spent = tg__add_sat_u64(b->spent, mu);
}

/* 1 when the deadline has passed (reads the clock only when there is one). */
static inline int tg__budget_expired(const tg__budget *b) {
  return b->deadline_us != 0 && tg__now_us() >= b->deadline_us;
}

/* 1 when nothing is left: the work is spent or the deadline has passed. */
static inline int tg__budget_done(const tg__budget *b) {
  return tg__budget_left(b) == 0 || tg__budget_expired(b);
}

/* The deadline as a tg__now_us() value to compare with (UINT64_MAX when none). */
static inline uint64_t tg__budget_deadline(const tg__budget *b) {
  return b->deadline_us != 0 ? b->deadline_us : UINT64_MAX;
}

/* Iterated greedy: a candidate plan places every record again, so a unit buys candidates in
 * inverse proportion to the records (offsets: TG__SEARCH_ITER_RECORDS_PER_UNIT / n, about 50
 * us a candidate on 250 records of a loaded 2-core machine), or to records x objects (objects:
 * TG__SEARCH_ITER_TESTS_PER_UNIT compatibility tests a unit), at least one. */
#define TG__SEARCH_ITER_RECORDS_PER_UNIT 5000u
#define TG__SEARCH_ITER_TESTS_PER_UNIT 50000u

/* Skyline search nodes per work unit: a node costs about the mean length of the coverage
 * lists it scans (records over a task point, seen from a record), so a unit buys
 * TG__SKYLINE_LIST_NODES_PER_UNIT / that length nodes, at least TG__SKYLINE_NODES_PER_UNIT:
 * about what a loaded 2-core machine visits in a millisecond (measured at a load of 6: wide
 * DAGs of 400-1,000 records, lists of 104, 180-430 nodes a ms; minimalloc sets, 30-55,
 * 1,000-1,350; capacity-tight sets of 150-500 records, 7-11, 3,000-4,000). */
#define TG__SKYLINE_NODES_PER_UNIT 500u
#define TG__SKYLINE_LIST_NODES_PER_UNIT 30000u

/* The subset-exact bound's weighted skyline nodes (bound_offsets.c) per work unit: their
 * windows' set-up and larger lists make them slower than the search's. */
#define TG__SUBSET_NODES_PER_UNIT 500u

/* The bound the search aims at: peak-live for offsets, positional-max for objects. */
tg_status tg__search_bound(const tg__plan_input *in, uint64_t *bound);

/* Improve `*best` (a valid plan for `in`) within budget `b`: iterated greedy over the placement
 * order (candidates at the TG__SEARCH_ITER_* rates), or on large serial offsets inputs the
 * stages of search_large (iterated.c). Replaces `*best` only by a strictly smaller valid plan
 * (strategy field TG_STRATEGY_BEST). Stops as soon as `bound` is reached; charges `b`. */
tg_status tg__search_improve(const tg__plan_input *in, uint64_t bound, tg__budget *b, tg_plan **best);

/* Relaxing dive nodes per work unit on large inputs (the bench machine visits 520-650 a
 * millisecond on wide DAGs of 10k-100k records; where the clock stops the dive first, it
 * completes its plan greedily), and the nodes per record its cap must cover for it to run at
 * all (wide DAGs need 4.1-4.2: a cap of 4 stops it a few percent short, and that partial dive
 * is completed too). */
#define TG__DIVE_NODES_PER_UNIT 600u
#define TG__DIVE_NODES_PER_RECORD 4u
/* ...and it runs only when the records cover at most this many task points each on average
 * (wide DAGs: about 11; cut-rectangle perfect packings: 4-50)... */
#define TG__DIVE_MAX_COVER_PER_RECORD 64u
/* ...and the mean length of the coverage lists a record is on (sum over task points of the
 * count squared, over the entries) is at most this: a node's work grows with it (wide DAGs:
 * 105-116; perfect packing of 100k records: 420, 70 times slower per node). */
#define TG__DIVE_MAX_LIST 256u
/* ...or, for the dive the largest inputs get before the search rounds (best.c), at most this
 * (compiler-like traces of 20k-100k records: 236, where it gives up after a tenth of its time;
 * wide DAGs: 116). */
#define TG__DIVE_EARLY_MAX_LIST 160u

/* Offsets inputs with at least this many records and no relation: the search is the
 * large-neighbourhood search of lns.c, TG__LNS_STEPS_PER_UNIT steps a unit.
 * It starts where the small inputs' skyline search (tg__search_after_greedy) stops: from 1025
 * to 4999 records iterated greedy alone (the previous threshold, 5000) stayed 1-10% above the
 * bound on chains and wide DAGs where this reaches it (docs/bench.md, "Mid-size inputs"). */
#define TG__LNS_MIN_RECORDS (TG_EXACT_MAX_RECORDS + 1)
#define TG__LNS_STEPS_PER_UNIT 200u
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

/* Overlap minimisation (overlap.c): improve `*best` (a valid offsets plan, serial relation,
 * up to TG_EXACT_MAX_RECORDS records, total up to TG__OVERLAP_MAX_TOTAL; else it returns at
 * once) by searching plans at capacities below its total, TG__OVERLAP_WORK_PER_UNIT neighbour
 * entries read a unit of `b`, until its deadline. Replaces `*best` only by a strictly smaller
 * plan; charges `b` the work done. O(n^2) setup. Weights stop at TG__OVERLAP_MAX_WEIGHT, so a
 * record's weighted overlap (total x weight x neighbours) stays below 2^62. */
#define TG__OVERLAP_WORK_PER_UNIT 400000u
#define TG__OVERLAP_MAX_TOTAL ((uint64_t)1 << 36)
#define TG__OVERLAP_MAX_WEIGHT 65535u
tg_status tg__search_overlap(const tg__plan_input *in, uint64_t bound, tg__budget *b, tg_plan **best);
/* The same, and `*cut_short` = 1 when `b` ended before its first capacity attempt did (the
 * round was too short for it to gain anything; 0 otherwise). */
tg_status tg__search_overlap_run(const tg__plan_input *in, uint64_t bound, tg__budget *b, tg_plan **best,
                                 int *cut_short);

/* Where `best` runs overlap minimisation (best.c): offsets, serial relation, up to
 * TG_EXACT_MAX_RECORDS records, and on average at most TG__OVERLAP_MAX_LIVE records live at a
 * task (over the tasks the records use): a move reads every record its record meets in time,
 * once per place it tries, and on wide DAGs, with about 90, the tree search is the better use
 * of the time. O(n). */
#define TG__OVERLAP_MAX_LIVE 32u
int tg__overlap_applies(const tg__plan_input *in);
/* Its share of the skyline search's budget in the first round of `best`, in percent. */
#define TG__OVERLAP_FIRST_SHARE 30u

/* Large-neighbourhood search (lns.c): improve `*best` (a valid offsets plan, serial
 * relation) by re-placing the records near the top of the arena, TG__LNS_STEPS_PER_UNIT steps
 * a unit of `b`, until its deadline, and (stall_steps > 0) until that many steps in a row have
 * not lowered the total. Replaces `*best` only by a strictly smaller plan; charges `b` the
 * steps taken. `*setup_us` (when not NULL) receives the time spent before the first step
 * (building its index). */
tg_status tg__search_offsets_lns(const tg__plan_input *in, uint64_t bound, tg__budget *b,
                                 uint64_t stall_steps, uint64_t *setup_us, tg_plan **best);

/* Branch-and-bound nodes per work unit of the search over canonical placement orders (offsets
 * mode with a relation: each node recomputes first-fit offsets, tens of microseconds on a few
 * hundred records). */
#define TG__EXACT_ORDER_NODES_PER_UNIT 200u

/* Offsets mode with a relation, at most TG_EXACT_MAX_RECORDS records: the branch-and-bound
 * over canonical placement orders (exact_offsets.c) from the incumbent `*best`, aiming at
 * `bound`, TG__EXACT_ORDER_NODES_PER_UNIT nodes a unit of `b`, until its deadline. Replaces
 * `*best` by a smaller plan when found; charges `b`; fills `stats` (never NULL; nodes added):
 * proved_optimal when the tree was exhausted (then lower_bound is the plan's total), else
 * lower_bound is `bound`, or `bound` + 1 when no plan at `bound` exists. Does nothing without
 * a relation or above TG_EXACT_MAX_RECORDS records. */
tg_status tg__exact_order_improve(const tg__plan_input *in, uint64_t bound, tg__budget *b,
                                  tg_plan **best, tg_exact_stats *stats);

/* Offsets mode, serial relation only: the skyline branch-and-bound (exact_offsets.c): a plan at
 * `bound` first (three fifths of the nodes), then relaxed targets between the proved lower
 * bound and the incumbent, then below the incumbent; `per_unit` nodes a unit of `b` (0: the
 * rate for these records, see TG__SKYLINE_LIST_NODES_PER_UNIT; no cap: until the deadline or
 * a proof), until its deadline. Replaces `*best` by a
 * smaller plan when found; charges `b`; adds to `stats` (never NULL; nodes counted on from
 * stats->nodes; a lower_bound above `bound` already proved skips the first phase):
 * lower_bound raised by every target whose tree was exhausted, proved_optimal when the tree
 * below the incumbent was exhausted or the bound reached. Does nothing with a relation or
 * above TG__SKYLINE_MAX_RECORDS records; TG_ERROR_OVERFLOW when live sums do not fit 64 bits
 * (callers treat that as "not searched"). */
tg_status tg__skyline_improve(const tg__plan_input *in, uint64_t bound, tg__budget *b,
                              uint64_t per_unit, tg_plan **best, tg_exact_stats *stats);

/* Offsets mode, serial relation only: one skyline dive (exact_offsets.c) aiming at `bound`, on any
 * number of records. Dead ends found at once are backed out of as in the search; when the
 * dive visits TG__SKY_RELAX_NODES nodes without going deeper, the limit rises by `step`
 * (> 0) instead and the dive goes on, up to the incumbent's total - 1: it ends with a plan
 * below the incumbent, or at that ceiling, or when the deadline or `max_nodes` (0: none)
 * stop it. A dive stopped before placing every record keeps what it placed and places the
 * rest as greedy-by-size would (best fit, largest first), unless the deadline comes first (the
 * partial plan is then dropped). Replaces `*best` when the plan is smaller; `*nodes` (when
 * not NULL) receives the nodes visited. Does nothing with a relation. TG_ERROR_OVERFLOW when
 * not searched: live sums beyond 64 bits, or coverage lists over
 * TG__DIVE_MAX_COVER_PER_RECORD entries per record (or TG__SKYLINE_MAX_COVER), or longer
 * than `max_list` (TG__DIVE_MAX_LIST, or less) on average. */
tg_status tg__skyline_dive(const tg__plan_input *in, uint64_t bound, uint64_t step,
                           uint64_t deadline, uint64_t max_nodes, size_t max_list, uint64_t *nodes,
                           tg_plan **best);

/* Objects mode, no relation, 2 to 400 records: the LP dive (lp_dive.c), TG__LP_DIVE_WORK_PER_UNIT
 * inner-loop steps of its LPs a unit of `b`, until its deadline: each step solves the LP over
 * objects of the records left and makes its columns at 1 (or its largest) objects. Replaces
 * `*best` (strategy TG_STRATEGY_BEST) when the plan is smaller; drops a dive its work or the
 * deadline cuts; charges `b`. `*proved` receives the LP bound of all the records when the
 * first LP was solved (a proof: no plan is smaller), else 0. */
tg_status tg__search_lp_dive(const tg__plan_input *in, tg__budget *b, tg_plan **best, uint64_t *proved);
#define TG__LP_DIVE_WORK_PER_UNIT 2000000u

/* tg__skyline_dive with the limit rising by a thousandth of `bound` (at least the largest
 * alignment) at each stall, TG__DIVE_NODES_PER_UNIT nodes a unit of `b`, when that covers
 * TG__DIVE_NODES_PER_RECORD nodes per record (else nothing), until its deadline, on inputs
 * whose coverage lists are at most `max_list` long on average; charges `b` the nodes visited.
 * TG_ERROR_OVERFLOW (not searched) becomes TG_OK. */
tg_status tg__search_dive(const tg__plan_input *in, uint64_t bound, size_t max_list, tg__budget *b,
                          tg_plan **best);

/* Offsets mode: the subset-exact lower bound (bound_offsets.c, see tg_bounds_offsets) of
 * `in` (its records and volumes; options->alignment honoured, relation ignored: the bound holds
 * under any), TG__SUBSET_NODES_PER_UNIT weighted skyline nodes a unit of `b` in all (no cap:
 * none), stopping at its deadline with what it proved so far; charges `b`. `*out` receives
 * the bound (0 when nothing was proved; compare with peak-live), `*subset_records` (may be
 * NULL) the records of the window that gave it. */
tg_status tg__offsets_subset_bound(const tg__plan_input *in, tg__budget *b, uint64_t *out,
                                   size_t *subset_records);

/* A stage that runs a tree search with stats of its own (the skyline search, the dive, the
 * branch-and-bounds) starts them with tg__stage_stats and ends with tg__stage_done: its lower
 * bound starts at what is proved on the input (in->proved; the search skips what that
 * settles) and what it proves raises it (a lower bound proved on a part of a split input is
 * one of the whole: see split.c); in the exact mode its nodes count in options->exact_stats,
 * and its progress reports are relayed with the call's totals (time counted from the round's
 * start, which the rounds write into the exact stats). */
typedef struct tg__stage_relay {
  tg_exact_stats *exact; /* NULL outside the exact mode */
  uint64_t nodes0;       /* exact->nodes before the stage */
  uint64_t t0;           /* exact->elapsed_us counts from here */
  uint64_t *proved;      /* the input's proved bound (may be NULL) */
} tg__stage_relay;

static inline void tg__stage_relay_progress(void *user, const tg_exact_stats *s) {
  tg__stage_relay *r = (tg__stage_relay *)user;
  r->exact->nodes = r->nodes0 + s->nodes;
  if (s->total < r->exact->total) r->exact->total = s->total;
  r->exact->elapsed_us = tg__now_us() - r->t0;
  r->exact->progress(r->exact->progress_user, r->exact);
}

static inline tg_exact_stats tg__stage_stats(const tg__plan_input *in, tg__stage_relay *relay) {
  tg_exact_stats s;
  memset(&s, 0, sizeof s);
  const tg_plan_options *o = in->options;
  relay->exact = o->exact ? o->exact_stats : NULL;
  relay->nodes0 = relay->exact != NULL ? relay->exact->nodes : 0;
  relay->t0 = relay->exact != NULL ? tg__now_us() - relay->exact->elapsed_us : 0;
  relay->proved = in->proved;
  if (in->proved != NULL) s.lower_bound = *in->proved;
  if (relay->exact != NULL && relay->exact->progress != NULL) {
    s.progress = tg__stage_relay_progress;
    s.progress_user = relay;
  }
  return s;
}

static inline void tg__stage_done(const tg__stage_relay *relay, const tg_exact_stats *s) {
  if (relay->proved != NULL && s->lower_bound > *relay->proved) *relay->proved = s->lower_bound;
  if (relay->exact != NULL) {
    relay->exact->nodes = relay->nodes0 + s->nodes;
    relay->exact->searched |= s->searched;
  }
}

/* Exact mode's stats at the start of a call: zeroed, the caller's progress callback kept. */
static inline void tg__exact_stats_reset(tg_exact_stats *stats) {
  void (*progress)(void *, const tg_exact_stats *) = stats->progress;
  void *user = stats->progress_user;
  memset(stats, 0, sizeof *stats);
  stats->progress = progress;
  stats->progress_user = user;
}

/* Plans 1D records with `best` (the entry supplies it: the layers below never call back up into
 * it): the strategies, then the search in rounds within budget `b` (whole rounds; charged). */
typedef tg_status (*tg__plan_records_fn)(const tg_usage_record *records, size_t count,
                                         const tg_plan_options *options, tg__budget *b,
                                         const tg_allocator *alloc, tg_plan **out);

/* Searches one part of a split input within `b`, aiming at `bound` (the entry supplies it). */
typedef tg_status (*tg__search_part_fn)(const tg__plan_input *in, uint64_t bound, tg__budget *b,
                                        tg_plan **best);

/* Serial offsets inputs: records born and dying together merged into blocks (reduce.c),
 * subset chains for groups of at most TG__REDUCE_SUBSET_MAX live members and at most
 * TG__REDUCE_PAIRS_MAX pairs of groups per task boundary, at most TG__REDUCE_MAX_PASSES passes
 * over the blocks. */
#define TG__REDUCE_SUBSET_MAX 10u
#define TG__REDUCE_PAIRS_MAX 16u
#define TG__REDUCE_MAX_PASSES 64

/* Serial offsets inputs above `bound`: merges blocks (equal sums only, then also stacking the
 * groups left without a partner) and, for each of the two that at least halves the records,
 * plans the blocks with `plan` (the entry's `best`, not exact) within what `b` has left (half
 * of it for the first) and keeps the unfolded plan when it is smaller than `*best`; charges
 * `b`. `*reduced` is 1 when a block plan was made. */
tg_status tg__search_reduced(const tg__plan_input *in, uint64_t bound, tg__budget *b,
                             tg__plan_records_fn plan, tg_plan **best, int *reduced);

/* Serial offsets inputs whose records fall into two or more parts with no task in common
 * (split.c): `*split` = 1 and each part above `bound` (the input's bound) searched on
 * its own by `search_part`, smallest first, each with a share of what `b` has left in
 * proportion to its records (what a part does not use goes to the later ones); charges `b`.
 * A part's proved lower bound is one of the whole input's (in->proved). Replaces `*best` only
 * by a smaller plan. `*split` = 0 and nothing done otherwise, or when `*best` is at `bound`
 * already. */
tg_status tg__search_split(const tg__plan_input *in, uint64_t bound, tg__budget *b,
                           tg__search_part_fn search_part, tg_plan **best, int *split);

#endif
