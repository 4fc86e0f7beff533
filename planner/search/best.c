/* Strategy `best`: every greedy strategy, then the search and exact modes on the smallest
 * plan. This file is the one way into planner/search/: it drives the layers below it
 * (reduce.c and split.c transform the input; iterated.c, lns.c, exact_offsets.c and
 * exact_objects.c improve a plan), and hands reduce.c and split.c the function that plans
 * their smaller inputs, so that no file below calls back up into this one. */
#include <string.h>

#include "planner/search/best.h"
#include "planner/search/exact_objects.h"
#include "planner/search/search.h"

/* A stage's clock budget in a round: the call's deadline alone stops it (work caps decide). */
#define TG__FAR_US ((uint64_t)1 << 52)

/* In a round: the call's deadline, or none. */
static uint64_t far_deadline(const tg__plan_input *in) {
  return in->deadline_us != 0 ? in->deadline_us : UINT64_MAX;
}

/* What `best` runs after the greedy strategies on a part of a split input (split.c) or on
 * the whole input: the search aimed at `bound` (the input's own bound, or a higher one: the
 * whole input's, for a part of it), then (offsets mode, exact) the branch-and-bound, filling
 * options->exact_stats. */
static tg_status search_after_greedy_bound(const tg__plan_input *in, uint64_t bound,
                                          tg_plan **best) {
  const tg_plan_options *o = in->options;
  uint64_t t0 = tg__now_us();
  tg_exact_stats local;
  memset(&local, 0, sizeof local);
  tg_exact_stats *stats = o->exact_stats ? o->exact_stats : &local;
  int exact = o->exact && o->mode == TG_MODE_OFFSETS;
  if (exact) tg__exact_stats_reset(stats);
  uint64_t limit_ms = o->time_limit_ms;
  if (exact && limit_ms == 0) limit_ms = 1000;
  uint64_t search_ms = tg__ms_left(in, exact ? (limit_ms + 9) / 10 : limit_ms);
  tg_status st = TG_OK;
  if (search_ms > 0 && o->mode == TG_MODE_OFFSETS && o->relation == NULL &&
      in->count <= TG_EXACT_MAX_RECORDS) {
    /* Small serial inputs: the skyline search (at the bound first, then below the greedy
     * answer) for nine tenths of the time and of a node cap, then iterated greedy. In exact
     * mode its nodes and what it proves count in the exact stats. */
    tg_exact_stats sky_stats;
    memset(&sky_stats, 0, sizeof sky_stats);
    uint64_t sky_ms = search_ms - search_ms / 10;
    /* A relaxing dive first, in at most a quarter of that: a near-bound incumbent where the
     * greedy strategies leave several percent (wide DAGs). */
    uint64_t dive_nodes = 0;
    st = tg__search_dive(in, bound, in->round ? far_deadline(in) : t0 + sky_ms * 250,
                         sky_ms * TG__SKYLINE_NODES_PER_MS / 4, &dive_nodes, best);
    if (st != TG_OK) return st;
    if (exact && dive_nodes > 0) { /* part of the skyline search in the stats */
      stats->nodes += dive_nodes;
      stats->searched = 1;
    }
    uint64_t dive_us = tg__now_us() - t0;
    st = tg__skyline_improve(in, bound,
                             in->round ? TG__FAR_US : sky_ms * 1000 > dive_us ? sky_ms * 1000 - dive_us : 0,
                             sky_ms * TG__SKYLINE_NODES_PER_MS, best, exact ? stats : &sky_stats);
    if (st != TG_OK && st != TG_ERROR_OVERFLOW) return st;
    if (in->proved != NULL && sky_stats.proved_optimal && sky_stats.lower_bound > *in->proved)
      *in->proved = sky_stats.lower_bound;
    st = TG_OK;
    uint64_t used = tg__now_us() - t0, left = search_ms * 1000 > used ? search_ms * 1000 - used : 0;
    if (in->round) left = (search_ms - sky_ms) * 1000 + 1; /* a work measure only */
    if (left > 0)
      st = tg__search_improve(in, bound, left, (search_ms - sky_ms) * TG__SEARCH_ITERS_PER_MS,
                              best);
    if (st != TG_OK) return st;
  } else if (search_ms > 0) {
    /* Objects: the LP dive first, for up to 90% of the time (pose_landmark_heavy's 2D textures
     * need about 780 ms of a 1000 ms limit); its proof ends the search when the plan meets it. */
    uint64_t proved = in->proved != NULL ? *in->proved : 0, left_us = search_ms * 1000;
    /* In rounds the dive stops at its work cap (the partial dive is dropped). */
    if (o->mode == TG_MODE_OBJECTS && (*best)->total > bound) {
      st = tg__search_lp_dive(in, in->round ? far_deadline(in) : t0 + search_ms * 900,
                              in->round ? search_ms * 9 / 10 * TG__LP_DIVE_WORK_PER_MS : 0, best, &proved);
      if (st != TG_OK) return st;
      if (in->proved != NULL && proved > *in->proved) *in->proved = proved;
      uint64_t used = tg__now_us() - t0;
      if (!in->round) left_us = left_us > used ? left_us - used : 0;
    }
    if ((*best)->total > proved && left_us > 0)
      st = tg__search_improve(in, proved > bound ? proved : bound, left_us,
                              search_ms * TG__SEARCH_ITERS_PER_MS, best);
    if (st != TG_OK) return st;
  }
  if (exact) {
    uint64_t used = tg__now_us() - t0, budget = limit_ms * 1000;
    if (stats->proved_optimal && stats->total == (*best)->total) {
      stats->lower_bound = stats->total; /* the search already proved it */
    } else {
      /* The subset-exact bound (bound_offsets.c) in a tenth of the time and a node cap to
       * match: a stronger target for the search, and a proof where it is met. */
      uint64_t subset = 0;
      st = tg__offsets_subset_bound(in, limit_ms / 10 * TG__SKYLINE_NODES_PER_MS,
                                    tg__now_us() + budget / 10, &subset, NULL);
      if (st != TG_OK) return st;
      if (subset > bound) bound = subset;
      used = tg__now_us() - t0;
      stats->proved_optimal = 0;
      st = tg__exact_improve(in, bound, budget > used ? budget - used : 0, best, stats);
    }
    stats->elapsed_us = tg__now_us() - t0;
    if (stats->progress != NULL) stats->progress(stats->progress_user, stats);
  }
  return st;
}

/* The merged blocks' planner (reduce.c): 1D records planned with `best` as tg_plan_compute
 * would (the blocks are well-formed by construction, so only their volumes are needed). */
static tg_status plan_blocks(const tg_usage_record *records, size_t count,
                             const tg_plan_options *options, uint64_t deadline_us,
                             const tg_allocator *alloc, tg_plan **out) {
  *out = NULL;
  uint64_t *volumes = tg__calloc(alloc, count ? count : 1, sizeof *volumes);
  if (volumes == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t r = 0; r < count; ++r) volumes[r] = records[r].size.w;
  tg__plan_input in = {records, count, 1, options, alloc, volumes, 0, 0, NULL};
  if (deadline_us != 0)
    in.deadline_us = deadline_us;
  else if (options->time_limit_ms > 0 && !options->exact)
    in.deadline_us = tg__now_us() + (uint64_t)options->time_limit_ms * 1000;
  tg_status st = tg__best_plan(&in, out);
  tg__free(alloc, volumes);
  if (st != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
  }
  return st;
}

/* The search after the greedy strategies: the merged blocks first, then part by part where
 * the time axis splits, else the whole input. */
static tg_status search_after_greedy(const tg__plan_input *in, tg_plan **best) {
  uint64_t bound;
  tg_status st = tg__search_bound(in, &bound);
  if (st != TG_OK) return st;
  /* The merged blocks first (reduce.c), for half the time (a tenth in exact mode);
   * what follows gets what they leave. */
  tg_plan_options opt = *in->options;
  tg__plan_input sub = *in;
  sub.options = &opt;
  if ((*best)->total > bound) {
    uint64_t limit = opt.time_limit_ms, t0 = tg__now_us();
    if (opt.exact && limit == 0) limit = 1000;
    int reduced = 0;
    /* (In a round, the blocks get the round's whole budget: they are the cheaper input.) */
    st = tg__search_reduced(in, bound, (uint32_t)(opt.exact ? limit / 10 : in->round ? limit : limit / 2),
                            plan_blocks, best, &reduced);
    if (st != TG_OK) return st;
    uint64_t used = (tg__now_us() - t0) / 1000;
    if (reduced && !in->round) opt.time_limit_ms = (uint32_t)(limit > used + 1 ? limit - used : 1);
  }
  if (in->round && in->deadline_us != 0 && tg__now_us() >= in->deadline_us) return TG_OK;
  /* Under the call's deadline, what is left of it. */
  if (in->deadline_us != 0 && !in->round) {
    opt.time_limit_ms = (uint32_t)tg__ms_left(in, opt.time_limit_ms);
    if (opt.time_limit_ms == 0) return TG_OK;
  }
  int split = 0;
  st = tg__search_split(&sub, bound, search_after_greedy_bound, best, &split);
  if (st != TG_OK || split) return st;
  return search_after_greedy_bound(&sub, bound, best);
}

/* What runs before round k of search_rounds (run_best_large's later greedy passes). */
typedef tg_status (*before_round_fn)(const tg__plan_input *in, uint32_t k, void *ctx, tg_plan **best);

static tg_status search_rounds(const tg__plan_input *in, int objects_1d, before_round_fn before,
                               void *ctx, tg_plan **best);

/* Milliseconds left before in->deadline_us (which must be set), rounded down. */
static uint32_t time_left_ms(const tg__plan_input *in) {
  uint64_t now = tg__now_us();
  return now < in->deadline_us ? (uint32_t)((in->deadline_us - now) / 1000) : 0;
}

/* `best` with a time limit on large serial offsets inputs (see TG__LNS_MIN_RECORDS): the other
 * strategies cost up to several times the three greedy passes at 100k records, and the search
 * closes their gap. So the passes give the start, in a schedule fixed by the record count
 * alone (never by the limit, so a longer limit runs what a shorter one did, and more): a first
 * pass, then each other pass before a given search round, when the deadline has not passed
 * and the time left covers setting it up and finishing it (about 0.7 us per record). Every
 * pass stops at the deadline, less what finishing its plan takes, and its records left go on
 * top. Greedy-by-size goes first on inputs of up to TG__LARGE_MID_RECORDS and over
 * TG__LARGE_BIG_RECORDS records: it is the usual best start for the search, and the pass that
 * degrades most gently when the deadline cuts it (the largest records are placed). In between
 * greedy-by-conflicts goes first: greedy-by-size's best-fit walks visit every live record
 * (two to three times greedy-by-conflicts' first fit on compiler-like traces, where
 * greedy-by-conflicts and -breadth are also the better starts by percents), and a pass over
 * that many records still completes in 100 ms. Returns TG_ERROR_OVERFLOW, for tg__best_plan
 * to try every strategy, when no layout of these fits 64 bits. */
#define TG__LARGE_MID_RECORDS 20000u
#define TG__LARGE_BIG_RECORDS 64000u

typedef struct large_schedule {
  tg_strategy pass[3];
  uint32_t round[3]; /* before which round pass i runs (pass 0: before the search) */
} large_schedule;

static const large_schedule k_schedule_small = {
    {TG_STRATEGY_GREEDY_BY_SIZE, TG_STRATEGY_GREEDY_BY_CONFLICTS, TG_STRATEGY_GREEDY_BY_BREADTH}, {0, 1, 1}};
static const large_schedule k_schedule_mid = {
    {TG_STRATEGY_GREEDY_BY_CONFLICTS, TG_STRATEGY_GREEDY_BY_BREADTH, TG_STRATEGY_GREEDY_BY_SIZE}, {0, 0, 4}};
static const large_schedule k_schedule_big = {
    {TG_STRATEGY_GREEDY_BY_SIZE, TG_STRATEGY_GREEDY_BY_BREADTH, TG_STRATEGY_GREEDY_BY_CONFLICTS}, {0, 0, 0}};

static const large_schedule *large_schedule_for(size_t count) {
  return count <= TG__LARGE_MID_RECORDS ? &k_schedule_small
         : count <= TG__LARGE_BIG_RECORDS ? &k_schedule_mid
                                          : &k_schedule_big;
}

/* One greedy pass of run_best_large, kept when smaller; its deadline is the call's less
 * `reserve`. A layout that does not fit 64 bits is no start (not an error). */
static tg_status large_pass(const tg__plan_input *in, tg_strategy s, uint64_t reserve, tg_plan **best) {
  tg__plan_input greedy = *in;
  greedy.deadline_us = in->deadline_us > reserve ? in->deadline_us - reserve : 1;
  tg_plan *plan = NULL;
  tg_status st = tg__strategy_fn_get(TG_MODE_OFFSETS, s)(&greedy, &plan);
  if (st == TG_OK) {
    plan->strategy = s;
    tg__keep_smaller(best, plan);
    return TG_OK;
  }
  tg_plan_destroy(plan);
  return st == TG_ERROR_OVERFLOW ? TG_OK : st;
}

/* before_round_fn: `ctx` points to the passes' reserve (uint64_t microseconds). */
static tg_status large_before_round(const tg__plan_input *in, uint32_t k, void *ctx, tg_plan **best) {
  const uint64_t reserve = *(const uint64_t *)ctx;
  const large_schedule *sch = large_schedule_for(in->count);
  for (size_t i = 1; i < 3; ++i) {
    uint64_t now = tg__now_us();
    if (sch->round[i] != k || now >= in->deadline_us || in->deadline_us - now < (uint64_t)in->count * 7 / 10)
      continue;
    tg_status st = large_pass(in, sch->pass[i], reserve, best);
    if (st != TG_OK) return st;
  }
  return TG_OK;
}

static tg_status run_best_large(const tg__plan_input *in, tg_plan **out) {
  tg_plan *best = NULL;
  /* Setting a pass up and finishing its plan cannot be interrupted: about 0.35 us per record.
   * When even that would end past the overrun allowed (a tenth of the limit and 20 ms), the
   * plan is naive's. */
  uint64_t now = tg__now_us(), allowed = in->deadline_us + (uint64_t)in->options->time_limit_ms * 100 + 20000;
  if (now + (uint64_t)in->count * 35 / 100 > allowed) {
    tg_status nst = tg__offsets_naive(in, &best);
    if (nst == TG_OK) {
      best->strategy = TG_STRATEGY_NAIVE;
      *out = best;
    }
    return nst;
  }
  /* Finishing a cut pass's plan takes about 0.3 us per record (at most half the limit); the
   * first pass, the only plan so far, may use a quarter of the overrun allowed for it. */
  uint64_t limit_us = (uint64_t)in->options->time_limit_ms * 1000;
  uint64_t reserve = (uint64_t)in->count * 3 / 10;
  if (reserve > limit_us / 2) reserve = limit_us / 2;
  const uint64_t quarter_slack = (allowed - in->deadline_us) / 4;
  tg_status st = large_pass(in, large_schedule_for(in->count)->pass[0],
                            reserve > quarter_slack ? reserve - quarter_slack : 0, &best);
  tg_plan_options left = *in->options;
  tg__plan_input rest = *in;
  rest.options = &left;
  left.time_limit_ms = time_left_ms(in);
  if (st == TG_OK && best == NULL) st = TG_ERROR_OVERFLOW; /* the first pass's layout */
  if (st == TG_OK && left.time_limit_ms > 0) st = search_rounds(&rest, 0, large_before_round, &reserve, &best);
  if (st != TG_OK) {
    tg_plan_destroy(best);
    return st;
  }
  *out = best;
  return TG_OK;
}

/* Objects mode, 1D, after greedy. The search: the branch-and-bound for half of the time limit
 * under a node cap proportional to it (so the plan does not depend on the machine's speed
 * unless the clock stops it first), then, unless it proved the plan optimal, iterated greedy,
 * which finds different improvements on larger sets. The exact mode: that search with a fifth
 * of the time (so it never ends above it), then the branch-and-bound without a cap for the rest
 * from the better incumbent; the shape-aware bound (bounds_shape.c), often above the
 * positional maximums it prunes with, tightens the gap it reports and proves a plan that meets
 * it optimal. */
static tg_status objects_1d_improve(const tg__plan_input *in, tg_plan **best) {
  const tg_plan_options *o = in->options;
  tg_exact_stats local;
  memset(&local, 0, sizeof local);
  tg_exact_stats *stats = o->exact && o->exact_stats ? o->exact_stats : &local;
  if (o->exact) tg__exact_stats_reset(stats); /* the branch-and-bound skips 0 records */
  uint64_t ms = o->time_limit_ms ? o->time_limit_ms : 1000, t0 = tg__now_us();
  uint64_t search_ms = o->exact ? (ms / 5 ? ms / 5 : 1) : ms, bb_ms = (search_ms + 1) / 2;
  /* The LP dive first, for up to half the search time: its bound (the LP's) proves the plan
   * optimal when the plan meets it, which ends the search. */
  uint64_t proved = 0;
  tg_status st = TG_OK;
  if (in->proved != NULL) proved = *in->proved;
  if ((*best)->total > stats->lower_bound) {
    st = tg__search_lp_dive(in, in->round ? far_deadline(in) : t0 + search_ms * 500,
                            in->round ? search_ms / 2 * TG__LP_DIVE_WORK_PER_MS : 0, best, &proved);
    if (st != TG_OK) return st;
    if (in->proved != NULL && proved > *in->proved) *in->proved = proved;
  }
  if (proved > 0 && proved >= (*best)->total) {
    stats->proved_optimal = 1;
    stats->lower_bound = stats->total = (*best)->total;
    stats->elapsed_us = tg__now_us() - t0;
    if (o->exact && stats->progress != NULL) stats->progress(stats->progress_user, stats);
    return TG_OK;
  }
  if (!in->round) {
    uint64_t used = (tg__now_us() - t0) / 1000;
    uint64_t rest = search_ms > used ? search_ms - used : 1;
    bb_ms = (rest + 1) / 2;
  }
  st = tg__exact_objects_improve(in, in->round ? TG__FAR_US : bb_ms * 1000,
                                 bb_ms * TG__EXACT_OBJECTS_NODES_PER_MS, best, stats);
  if (st == TG_OK && stats->proved_optimal && in->proved != NULL && (*best)->total > *in->proved)
    *in->proved = (*best)->total;
  if (st == TG_OK && !stats->proved_optimal) {
    uint64_t bound, used = tg__now_us() - t0;
    uint64_t left = search_ms * 1000 > used ? search_ms * 1000 - used : 0;
    if (in->round) left = (search_ms - bb_ms) * 1000 + 1; /* a work measure only */
    st = tg__search_bound(in, &bound);
    if (st == TG_OK && left > 0)
      st = tg__search_improve(in, bound, left, (search_ms - bb_ms) * TG__SEARCH_ITERS_PER_MS, best);
  }
  if (st != TG_OK || !o->exact) return st;
  if (!stats->proved_optimal) {
    uint64_t nodes = stats->nodes, used = tg__now_us() - t0;
    st = tg__exact_objects_improve(in, ms * 1000 > used ? ms * 1000 - used : 0, 0, best, stats);
    stats->nodes += nodes;
  }
  /* The best proved bound: the branch-and-bound's, the shape-aware one, the LP's. */
  uint64_t shape = 0;
  if (st == TG_OK && !stats->proved_optimal &&
      (st = tg_bounds_objects_shape(in->records, in->count, 1, in->alloc, &shape)) == TG_OK) {
    uint64_t lower = shape > proved ? shape : proved;
    if (lower >= stats->lower_bound) {
      stats->lower_bound = lower < (*best)->total ? lower : (*best)->total;
      stats->proved_optimal = lower >= (*best)->total;
    }
  }
  stats->elapsed_us = tg__now_us() - t0;
  if (st == TG_OK && stats->progress != NULL) stats->progress(stats->progress_user, stats);
  return st;
}

/* The search in rounds (under an explicit time limit or a work limit, not exact): round k
 * runs what follows the strategies with a budget of TG__ROUND_FIRST_MS << k work units (the
 * stages' caps are rates per unit) and seed + k, from the best plan so far, with the clock
 * only cutting at the deadline. The order is the same for every limit, so a longer limit
 * explores what a shorter one did, and more; rounds go on until the deadline, the work limit
 * (whole rounds only), or a plan at a proved bound. */
#define TG__ROUND_FIRST_MS 2u
#define TG__ROUND_MAX_SHIFT 20u

static tg_status search_rounds(const tg__plan_input *in, int objects_1d, before_round_fn before,
                               void *ctx, tg_plan **best) {
  uint64_t bound;
  tg_status st = tg__search_bound(in, &bound);
  if (st != TG_OK) return st;
  uint64_t proved = bound, spent = 0;
  const uint64_t cap = in->options->work_limit ? in->options->work_limit : UINT64_MAX;
  tg_plan_options opt = *in->options;
  tg__plan_input sub = *in;
  sub.options = &opt;
  sub.proved = &proved;
  for (uint32_t k = 0; (*best)->total > proved; ++k) {
    if (in->deadline_us != 0 && tg__now_us() >= in->deadline_us) break;
    uint64_t budget = (uint64_t)TG__ROUND_FIRST_MS << (k < TG__ROUND_MAX_SHIFT ? k : TG__ROUND_MAX_SHIFT);
    if (budget > cap - spent) break;
    if (before != NULL) {
      st = before(in, k, ctx, best);
      if (st != TG_OK) return st;
      if ((*best)->total <= proved || (in->deadline_us != 0 && tg__now_us() >= in->deadline_us)) break;
    }
    spent += budget;
    opt.time_limit_ms = (uint32_t)budget;
    opt.seed = in->options->seed + (uint64_t)k * 0x9E3779B97F4A7C15ull;
    sub.round = k + 1;
    /* Offsets: at rounds 7 and 10 (after 254 and 2046 units), the subset-exact bound
     * (bound_offsets.c) under a node cap of the round's budget: a plan that meets it is
     * optimal and ends the rounds. */
    if (!objects_1d && in->options->mode == TG_MODE_OFFSETS && (k == 7 || k == 10)) {
      uint64_t subset = 0;
      st = tg__offsets_subset_bound(in, budget * TG__SKYLINE_NODES_PER_MS, in->deadline_us, &subset, NULL);
      if (st != TG_OK) return st;
      if (subset > proved) proved = subset;
      if ((*best)->total <= proved) break;
    }
    st = objects_1d ? objects_1d_improve(&sub, best) : search_after_greedy(&sub, best);
    if (st != TG_OK) return st;
    /* Without a deadline only the work limit ends the rounds: stop where nothing more is
     * possible. */
    if (in->deadline_us == 0 && k >= 62) break;
  }
  return TG_OK;
}

tg_status tg__best_plan(const tg__plan_input *in, tg_plan **out) {
  if (in->options->mode == TG_MODE_OFFSETS && in->deadline_us != 0 &&
      !in->options->exact && in->options->relation == NULL && in->count >= TG__LNS_MIN_RECORDS) {
    tg_status st = run_best_large(in, out);
    if (st != TG_ERROR_OVERFLOW) return st;
  }
  tg_plan *best = NULL;
  int overflowed = 0;
  size_t mcf_max = in->options->mcf_max_records ? in->options->mcf_max_records
                                                : TG_DEFAULT_MCF_MAX_RECORDS;
  tg_plan_options opt = *in->options;
  tg__plan_input sub = *in;
  sub.options = &opt;
  uint64_t bound = 0;
  int have_bound = 0;
  /* Under a deadline: the slowest one-pass strategy so far, to predict the next one's time. */
  uint64_t slowest_us = 0;
  const uint64_t slack_us = (uint64_t)in->options->time_limit_ms * 100 + 20000;
  /* Under a deadline, the strategies that usually win first (after naive: a plan at once). */
  static const tg_strategy k_hurried[] = {
      TG_STRATEGY_NAIVE,           TG_STRATEGY_GREEDY_IN_ORDER,   TG_STRATEGY_GREEDY_BY_SIZE,
      TG_STRATEGY_GREEDY_BY_BREADTH, TG_STRATEGY_GREEDY_BY_CONFLICTS, TG_STRATEGY_GREEDY_COLORING,
      TG_STRATEGY_EQUALITY,        TG_STRATEGY_MIN_COST_FLOW,     TG_STRATEGY_ALLOCATION_TREE,
      TG_STRATEGY_BEAM,            TG_STRATEGY_HILL_CLIMB};
  const size_t runs = in->deadline_us != 0 ? sizeof k_hurried / sizeof k_hurried[0]
                                           : tg__best_strategy_count();
  for (size_t i = 0; i < runs; ++i) {
    const tg_strategy s = in->deadline_us != 0 ? k_hurried[i] : tg__best_strategy_at(i);
    const int one_pass = s != TG_STRATEGY_MIN_COST_FLOW && s != TG_STRATEGY_ALLOCATION_TREE &&
                         s != TG_STRATEGY_BEAM && s != TG_STRATEGY_HILL_CLIMB;
    /* Inputs of at most TG_EXACT_MAX_RECORDS records: the one-pass strategies always run (a
     * few milliseconds in all), so a limit never makes the plan worse than theirs. */
    if (in->deadline_us != 0 && best != NULL && !(one_pass && in->count <= TG_EXACT_MAX_RECORDS)) {
      /* Naive first: a plan at once. Then nothing starts after the deadline, and a strategy
       * expected to end past it (twice the slowest so far), plus the overrun allowed, waits
       * for no one: the ones with their own deadline (beam, hill-climb, greedy-coloring,
       * objects greedy-by-size) stop there. */
      uint64_t now = tg__now_us();
      if (now >= in->deadline_us) continue;
      /* Before any is measured: about 0.3 us per record (the greedy passes on 100k records
       * take 5-40 ms here). */
      uint64_t expect = 2 * slowest_us, floor = (uint64_t)in->count * 45 / 100;
      if (expect < floor) expect = floor;
      const int own_deadline = s == TG_STRATEGY_BEAM || s == TG_STRATEGY_HILL_CLIMB ||
                               s == TG_STRATEGY_GREEDY_COLORING ||
                               (s == TG_STRATEGY_GREEDY_BY_SIZE && in->options->mode == TG_MODE_OBJECTS);
      if (!own_deadline && now + expect > in->deadline_us + slack_us) continue;
    }
    if (!tg_strategy_applies(s, in->options->mode, in->dims)) continue;
    tg__strategy_fn fn = tg__strategy_fn_get(in->options->mode, s);
    if (s == TG_STRATEGY_MIN_COST_FLOW && in->count > mcf_max) continue;
    const int peer = s == TG_STRATEGY_BEAM || s == TG_STRATEGY_HILL_CLIMB || s == TG_STRATEGY_ALLOCATION_TREE;
    const int costly = peer || s == TG_STRATEGY_MIN_COST_FLOW;
    if (peer && in->count > TG_BEST_PEERS_MAX_RECORDS) continue;
    if (s == TG_STRATEGY_HILL_CLIMB && in->options->relation != NULL) continue;
    if (costly && best != NULL) {
      /* No plan is below the bound: once one meets it, the costly strategies can only tie
       * (and ties keep the earlier plan), so they are skipped. */
      if (!have_bound) {
        tg_status bs = tg__search_bound(in, &bound);
        if (bs != TG_OK && bs != TG_ERROR_OVERFLOW) {
          tg_plan_destroy(best);
          return bs;
        }
        if (bs != TG_OK) bound = 0;
        have_bound = 1;
      }
      if (best->total <= bound) break;
    }
    opt.beam_width = 0; /* `best` runs beam with the default width */
    /* Under a time limit, beam and hill-climb (searches of their own) get half and a quarter
     * of what is left, and stop there; the search after them usually does more with it. */
    sub.deadline_us = one_pass && in->count <= TG_EXACT_MAX_RECORDS ? 0 : in->deadline_us;
    if (in->deadline_us != 0 && (s == TG_STRATEGY_BEAM || s == TG_STRATEGY_HILL_CLIMB)) {
      uint64_t now = tg__now_us();
      uint64_t share = now < in->deadline_us ? (in->deadline_us - now) / (s == TG_STRATEGY_BEAM ? 2 : 4) : 0;
      /* Under a work limit too (the merged blocks of a round), a share of that. */
      uint64_t work_us = (uint64_t)in->options->work_limit * 1000 / (s == TG_STRATEGY_BEAM ? 2 : 4);
      if (in->options->work_limit != 0 && work_us < share) share = work_us;
      sub.deadline_us = now + share;
    }
    int fits = (in->options->mode == TG_MODE_OFFSETS && s == TG_STRATEGY_GREEDY_IN_ORDER) ? 3 : 1;
    for (int f = 0; f < fits; ++f) {
      if (fits > 1) opt.fit = (tg_fit)f;
      tg_plan *cand = NULL;
      uint64_t started = tg__now_us();
      tg_status st = fn(&sub, &cand);
      uint64_t took = tg__now_us() - started;
      if (!costly && s != TG_STRATEGY_NAIVE && st != TG_ERROR_TIMEOUT && took > slowest_us)
        slowest_us = took;
      if (st != TG_OK) {
        /* A strategy may leave a half-filled plan behind when it fails (an overflowing
         * total is found after the plan was created): free it like tg_plan_compute does. */
        tg_plan_destroy(cand);
        /* A layout that does not fit 64 bits is no candidate, but another strategy's may
         * (sizes near 2^64 that only fit when shared): keep looking. The same for a
         * strategy the deadline stopped. */
        if (st == TG_ERROR_OVERFLOW) {
          overflowed = 1;
          continue;
        }
        if (st == TG_ERROR_TIMEOUT) continue;
        tg_plan_destroy(best);
        return st;
      }
      cand->strategy = s;
      cand->fit = opt.fit;
      tg__keep_smaller(&best, cand);
    }
  }
  if (best == NULL) return overflowed ? TG_ERROR_OVERFLOW : TG_ERROR_INTERNAL;
  /* Under a deadline the search gets the time left (none when it is up). */
  tg_plan_options left = *in->options;
  tg__plan_input rest = *in;
  rest.options = &left;
  if (in->deadline_us != 0) left.time_limit_ms = time_left_ms(in);
  const int rounds = !left.exact && (in->deadline_us != 0 || left.work_limit != 0);
  const int objects_1d = left.mode == TG_MODE_OBJECTS && in->dims == 1 &&
                         in->count <= TG__EXACT_OBJECTS_MAX_RECORDS;
  if (rounds) {
    tg_status st = search_rounds(&rest, objects_1d, NULL, NULL, &best);
    if (st != TG_OK) {
      tg_plan_destroy(best);
      return st;
    }
    *out = best;
    return TG_OK;
  }
  /* Objects mode, 1D: the branch-and-bound over assignments (exact_objects.c) is both the
   * exact mode and, under a node cap, the improvement search (objects_1d_improve). The
   * iterated-greedy search alone only runs where it cannot (textures, too many records). */
  if ((left.exact || left.time_limit_ms > 0) && objects_1d) {
    tg_status st = objects_1d_improve(&rest, &best);
    if (st != TG_OK) {
      tg_plan_destroy(best);
      return st;
    }
    *out = best;
    return TG_OK;
  }
  /* Improvement search (and the exact mode) on top of the best greedy plan. */
  if (left.time_limit_ms > 0 || left.exact) {
    tg_status st = search_after_greedy(&rest, &best);
    if (st != TG_OK) {
      tg_plan_destroy(best);
      return st;
    }
  }
  *out = best;
  return TG_OK;
}
