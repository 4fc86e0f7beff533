/* Strategy `best`: every greedy strategy, then the search in rounds on the smallest plan, in
 * both the search and the exact modes. This file is the one way into planner/search/: it
 * drives the layers below it (reduce.c and split.c transform the input; iterated.c, lns.c,
 * exact_offsets.c, exact_objects.c and lp_dive.c improve a plan, bound_offsets.c bounds it),
 * hands every stage its budget (search.h: work units and the deadline), and hands reduce.c and
 * split.c the function that plans their smaller inputs, so that no file below calls back up
 * into this one. */
#include <string.h>

#include "planner/search/best.h"
#include "planner/search/exact_objects.h"
#include "planner/search/search.h"

/* ---- one round ---------------------------------------------------------------------------- */

/* The share (percent) of the skyline search's and overlap minimisation's budget that overlap
 * minimisation gets in the next round: 20 points more when it gained more per unit than the
 * tree in this one, 20 points less when it gained less (10% to 90%). When neither gained and
 * its share ended inside its first capacity attempt, a share below the first one returns to it:
 * held at 10% in short rounds it never grew (500/10 stayed at its greedy plan at 100 ms for some
 * seeds); growing further took the tree's time where the tree solves the set (350/5 at 50 ms).
 * On capacity-tight sets of 300-500 buffers at 1 s the pair ends at 1.007-1.012 of peak-live in
 * the mean of five (three seeds), against 1.030 for the tree alone. */
static void overlap_adapt(unsigned *share, uint64_t tree_gain, uint64_t tree_spent, uint64_t ov_gain,
                          uint64_t ov_spent, int ov_cut_short) {
  /* Gains per thousandth of a unit, compared crosswise. */
  const double tree_rate = (double)tree_gain * (double)(ov_spent + 1);
  const double ov_rate = (double)ov_gain * (double)(tree_spent + 1);
  if (ov_rate > tree_rate) *share = *share + 20 > 90 ? 90 : *share + 20;
  else if (tree_rate > ov_rate) *share = *share < 30 ? 10 : *share - 20;
  else if (ov_cut_short && *share < TG__OVERLAP_FIRST_SHARE) *share = TG__OVERLAP_FIRST_SHARE;
}

/* What a round runs on a part of a split input (split.c) or on the whole input: the search
 * aimed at `bound` (the input's own bound, or a higher one: the whole input's, for a part of
 * it) within `b`. */
static tg_status search_after_greedy_bound(const tg__plan_input *in, uint64_t bound, tg__budget *b,
                                          tg_plan **best) {
  const tg_plan_options *o = in->options;
  tg_status st = TG_OK;
  if (o->mode == TG_MODE_OFFSETS && o->relation == NULL && in->count <= TG_EXACT_MAX_RECORDS) {
    /* Small serial inputs: a relaxing dive in a quarter of nine tenths of the budget (a
     * near-bound incumbent where the greedy strategies leave several percent: wide DAGs), the
     * skyline search (at the bound first, then relaxed targets, then below the incumbent) and
     * overlap minimisation sharing the rest of those nine tenths (overlap_share), then
     * iterated greedy with what is left. */
    tg__budget sky = tg__budget_share(b, 9, 10);
    tg__budget dive = tg__budget_share(&sky, 1, 4);
    st = tg__search_dive(in, bound, TG__DIVE_MAX_LIST, &dive, best);
    tg__budget_charge(&sky, &dive);
    if (st != TG_OK) return st;
    const int overlap = tg__overlap_applies(in);
    const unsigned share = !overlap ? 0 : in->overlap_share != NULL ? *in->overlap_share : TG__OVERLAP_FIRST_SHARE;
    const uint64_t before = (*best)->total;
    tg__stage_relay relay;
    tg_exact_stats sky_stats = tg__stage_stats(in, &relay);
    tg__budget tree = tg__budget_share(&sky, 100 - share, 100);
    st = tg__skyline_improve(in, bound, &tree, 0, best, &sky_stats);
    tg__budget_charge(&sky, &tree);
    if (st != TG_OK && st != TG_ERROR_OVERFLOW) {
      tg__budget_charge(b, &sky);
      return st;
    }
    tg__stage_done(&relay, &sky_stats);
    st = TG_OK;
    if (overlap && !sky_stats.proved_optimal) {
      const uint64_t mid = (*best)->total;
      tg__budget ov = tg__budget_share(&sky, 1, 1);
      int cut_short;
      st = tg__search_overlap_run(in, bound, &ov, best, &cut_short);
      tg__budget_charge(&sky, &ov);
      if (st == TG_OK && in->overlap_share != NULL)
        overlap_adapt(in->overlap_share, before - mid, tree.spent, mid - (*best)->total, ov.spent, cut_short);
    }
    tg__budget_charge(b, &sky);
    if (st != TG_OK || sky_stats.proved_optimal) return st;
    return tg__search_improve(in, bound, b, best);
  }
  /* Objects, 2 to 400 records without a relation: the LP dive first, with up to nine tenths
   * of the budget (pose_landmark_heavy's 2D textures need about 780 of 1000 units); its proof
   * ends the search when the plan meets it. */
  uint64_t proved = in->proved != NULL ? *in->proved : 0;
  if (o->mode == TG_MODE_OBJECTS && (*best)->total > bound) {
    uint64_t lp = 0;
    tg__budget dive = tg__budget_share(b, 9, 10);
    st = tg__search_lp_dive(in, &dive, best, &lp);
    tg__budget_charge(b, &dive);
    if (st != TG_OK) return st;
    if (lp > proved) proved = lp;
    if (in->proved != NULL && proved > *in->proved) *in->proved = proved;
  }
  if ((*best)->total <= proved) return TG_OK;
  return tg__search_improve(in, proved > bound ? proved : bound, b, best);
}

/* The merged blocks' planner (reduce.c): 1D records planned with `best` within `b` (the blocks
 * are well-formed by construction, so only their volumes are needed). */
static tg_status plan_with_budget(const tg__plan_input *in, tg__budget *b, uint64_t search_ms,
                                  tg_plan **out);

static tg_status plan_blocks(const tg_usage_record *records, size_t count,
                             const tg_plan_options *options, tg__budget *b,
                             const tg_allocator *alloc, tg_plan **out) {
  *out = NULL;
  uint64_t *volumes = tg__calloc(alloc, count ? count : 1, sizeof *volumes);
  if (volumes == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t r = 0; r < count; ++r) volumes[r] = records[r].size.w;
  tg__plan_input in = {records, count, 1, options, alloc, volumes, b->deadline_us, NULL, NULL};
  tg_status st = plan_with_budget(&in, b, 0, out);
  tg__free(alloc, volumes);
  if (st != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
  }
  return st;
}

/* What the rounds of one call learn about its input: the same in every round, so found once.
 * The merging passes and the parts depend on the records alone. */
typedef struct round_memo {
  int blocks_tried; /* the merging ran to its end and planned no blocks: not again */
  int whole;        /* the records do not split into parts */
} round_memo;

/* One round after the greedy strategies: the merged blocks first (at most half of the budget
 * for each of their two candidates; not before the budget covers their passes, about 0.2 us a
 * record each), then part by part where the time axis splits, else the whole input, with
 * what the blocks leave. */
static tg_status search_after_greedy(const tg__plan_input *in, tg__budget *b, round_memo *memo,
                                     tg_plan **best) {
  uint64_t bound;
  tg_status st = tg__search_bound(in, &bound);
  if (st != TG_OK) return st;
  if ((*best)->total > bound && !memo->blocks_tried && tg__budget_left(b) >= (uint64_t)in->count / 5) {
    int reduced = 0;
    st = tg__search_reduced(in, bound, b, plan_blocks, best, &reduced);
    if (st != TG_OK) return st;
    memo->blocks_tried = !reduced && !tg__budget_expired(b);
  }
  if (tg__budget_done(b)) return TG_OK;
  if (!memo->whole) {
    int split = 0;
    st = tg__search_split(in, bound, b, search_after_greedy_bound, best, &split);
    if (st != TG_OK || split) return st;
    memo->whole = (*best)->total > bound; /* (at the bound: not looked at) */
  }
  return search_after_greedy_bound(in, bound, b, best);
}

/* Objects mode, 1D, a round: the LP dive with up to half of the budget (its bound proves the
 * plan optimal when the plan meets it, which ends the search), the branch-and-bound over
 * object assignments (exact_objects.c) with up to half of what is left, and, unless it proved
 * the plan optimal, iterated greedy with the rest, which finds different improvements on
 * larger sets. */
static tg_status objects_1d_round(const tg__plan_input *in, tg__budget *b, tg_plan **best) {
  uint64_t lp = 0, bound;
  tg_status st = tg__search_bound(in, &bound);
  if (st != TG_OK) return st;
  tg__budget dive = tg__budget_share(b, 1, 2);
  st = tg__search_lp_dive(in, &dive, best, &lp);
  tg__budget_charge(b, &dive);
  if (st != TG_OK) return st;
  if (in->proved != NULL && lp > *in->proved) *in->proved = lp;
  if (in->proved != NULL && (*best)->total <= *in->proved) return TG_OK;
  tg__stage_relay relay;
  tg_exact_stats bb_stats = tg__stage_stats(in, &relay);
  tg__budget bb = tg__budget_share(b, 1, 2);
  st = tg__exact_objects_improve(in, &bb, best, &bb_stats);
  tg__budget_charge(b, &bb);
  if (st != TG_OK) return st;
  if (bb_stats.proved_optimal) bb_stats.lower_bound = (*best)->total;
  else bb_stats.lower_bound = 0; /* the positional maximum: proved already */
  tg__stage_done(&relay, &bb_stats);
  if (bb_stats.proved_optimal) return TG_OK;
  return tg__search_improve(in, bound, b, best);
}

/* ---- rounds ------------------------------------------------------------------------------- */

/* What runs before round k of search_rounds (run_best_large's later greedy passes). */
typedef tg_status (*before_round_fn)(const tg__plan_input *in, uint32_t k, void *ctx, tg_plan **best);

/* An offsets plan's copy (one arena, no in-place pairs: a plan of the search). */
static tg_status copy_offsets_plan(const tg__plan_input *in, const tg_plan *p, tg_plan **out) {
  tg_status st = tg_plan_create(TG_MODE_OFFSETS, in->dims, in->count, 0, in->alloc, out);
  if (st != TG_OK) return st;
  memcpy((*out)->offset_of, p->offset_of, in->count * sizeof *p->offset_of);
  (*out)->total = p->total;
  (*out)->strategy = p->strategy;
  (*out)->fit = p->fit;
  return TG_OK;
}

/* Exact mode, offsets with a relation: after each round, the branch-and-bound over canonical
 * placement orders (exact_offsets.c) with as much work again as the round's, from the better
 * of the rounds' plan and its own, aiming at what is proved. Its plans are kept apart (the
 * rounds go on from theirs, so they run as in the search mode) and the smaller plan wins. */
static tg_status order_round(const tg__plan_input *in, const tg__budget *round, const tg_plan *best,
                             tg_plan **own) {
  tg_plan *start = NULL;
  tg_status st = copy_offsets_plan(in, *own != NULL && (*own)->total < best->total ? *own : best, &start);
  if (st != TG_OK) return st;
  tg__budget b = {round->cap, 0, round->deadline_us};
  tg__stage_relay relay;
  tg_exact_stats stats = tg__stage_stats(in, &relay);
  st = tg__exact_order_improve(in, *in->proved, &b, &start, &stats);
  if (st == TG_OK) {
    tg__stage_done(&relay, &stats);
    tg__keep_smaller(own, start);
  } else {
    tg_plan_destroy(start);
  }
  return st;
}

/* The search in rounds: round k runs what follows the strategies with a budget of
 * TG__ROUND_FIRST_UNITS << k work units and seed + k, from the best plan so far; inside a round
 * each stage hands what it did not use to the next. The order is the same for every limit, so
 * a larger budget explores what a smaller one did, and more; rounds go on until the deadline,
 * the work cap (whole rounds only: a round costs its budget), or a plan at a proved bound. */
#define TG__ROUND_FIRST_UNITS 2u
#define TG__ROUND_MAX_SHIFT 20u

static tg_status search_rounds(const tg__plan_input *in, int objects_1d, tg__budget *b, uint64_t t0,
                               before_round_fn before, void *ctx, tg_plan **best) {
  uint64_t bound;
  tg_status st = tg__search_bound(in, &bound);
  if (st == TG_ERROR_OVERFLOW) return TG_OK; /* sizes near 2^64: no search */
  if (st != TG_OK) return st;
  uint64_t proved = in->proved != NULL && *in->proved > bound ? *in->proved : bound;
  tg_plan_options opt = *in->options;
  tg__plan_input sub = *in;
  sub.options = &opt;
  sub.proved = &proved;
  const tg_plan_options *o = in->options;
  const int order_search = o->exact && o->mode == TG_MODE_OFFSETS && o->relation != NULL &&
                           in->count <= TG_EXACT_MAX_RECORDS;
  tg_plan *own = NULL; /* order_round's */
  round_memo memo = {0, 0};
  unsigned overlap_share = TG__OVERLAP_FIRST_SHARE;
  sub.overlap_share = &overlap_share;
  for (uint32_t k = 0; (*best)->total > proved && (own == NULL || own->total > proved); ++k) {
    if (tg__budget_expired(b)) break;
    const uint64_t units = (uint64_t)TG__ROUND_FIRST_UNITS << (k < TG__ROUND_MAX_SHIFT ? k : TG__ROUND_MAX_SHIFT);
    if (tg__budget_left(b) < units * TG__MILLI) break;
    if (before != NULL) {
      st = before(in, k, ctx, best);
      if (st != TG_OK) break;
      if ((*best)->total <= proved || tg__budget_expired(b)) break;
    }
    opt.seed = o->seed + (uint64_t)k * 0x9E3779B97F4A7C15ull;
    /* Offsets: at rounds 7 and 10 (after 254 and 2046 units), the subset-exact bound
     * (bound_offsets.c) with a budget of the round's own (not counted): a plan that meets it
     * is optimal and ends the rounds. */
    if (!objects_1d && o->mode == TG_MODE_OFFSETS && (k == 7 || k == 10)) {
      uint64_t subset = 0;
      tg__budget bb = tg__budget_make(units, b->deadline_us);
      st = tg__offsets_subset_bound(in, &bb, &subset, NULL);
      if (st != TG_OK) break;
      if (subset > proved) proved = subset;
      if ((*best)->total <= proved) break;
    }
    tg__budget round = tg__budget_make(units, b->deadline_us);
    if (o->exact && o->exact_stats != NULL) o->exact_stats->elapsed_us = tg__now_us() - t0;
    st = objects_1d ? objects_1d_round(&sub, &round, best) : search_after_greedy(&sub, &round, &memo, best);
    if (st != TG_OK) break;
    round.spent = round.cap; /* a round costs its budget, whatever it used */
    tg__budget_charge(b, &round);
    if (order_search && (*best)->total > proved) {
      tg__budget side = tg__budget_make(units, b->deadline_us);
      st = order_round(&sub, &side, *best, &own);
      if (st != TG_OK) break;
    }
    if (o->exact && o->exact_stats != NULL) {
      tg_exact_stats *es = o->exact_stats;
      es->total = own != NULL && own->total < (*best)->total ? own->total : (*best)->total;
      es->lower_bound = proved < es->total ? proved : es->total;
      es->elapsed_us = tg__now_us() - t0;
      if (es->progress != NULL) es->progress(es->progress_user, es);
    }
    /* Without a deadline only the work cap ends the rounds: stop where nothing more is
     * possible. */
    if (b->deadline_us == 0 && k >= 62) break;
  }
  if (own != NULL) tg__keep_smaller(best, own);
  if (in->proved != NULL && proved > *in->proved) *in->proved = proved;
  return st;
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

/* before_round_fn: `ctx` points to the passes' reserve (uint64_t microseconds). Over
 * TG__LARGE_BIG_RECORDS records, before round 0 and before the other passes, the relaxing dive
 * (iterated.c) runs with the work its nodes need (TG__DIVE_NODES_PER_RECORD and a twentieth
 * more a record), when the time left covers that work: in the rounds it would wait for one of
 * about 700 units (at 100k records, past a second), and on wide DAGs it is what reaches the
 * bound (1.0537 at 1 s in rounds, 1.001 given the dive). It stops at the deadline (a dive cut
 * short is dropped) and gives up early where it cannot reach the last record in its time. */
static tg_status large_before_round(const tg__plan_input *in, uint32_t k, void *ctx, tg_plan **best) {
  const uint64_t reserve = *(const uint64_t *)ctx;
  const large_schedule *sch = large_schedule_for(in->count);
  if (k == 0 && in->count > TG__LARGE_BIG_RECORDS && in->options->relation == NULL) {
    uint64_t bound, nodes = (uint64_t)in->count * TG__DIVE_NODES_PER_RECORD + in->count / 5;
    tg__budget dive = {(nodes * TG__MILLI + TG__DIVE_NODES_PER_UNIT - 1) / TG__DIVE_NODES_PER_UNIT, 0,
                       in->deadline_us};
    /* Only with the time its work takes (a unit is about a millisecond). */
    uint64_t now = tg__now_us();
    if (now < in->deadline_us && in->deadline_us - now >= dive.cap) {
      tg_status st = tg__search_bound(in, &bound);
      if (st == TG_OK) st = tg__search_dive(in, bound, TG__DIVE_EARLY_MAX_LIST, &dive, best);
      if (st != TG_OK && st != TG_ERROR_OVERFLOW) return st; /* (sizes near 2^64: no dive) */
    }
  }
  for (size_t i = 1; i < 3; ++i) {
    uint64_t now = tg__now_us();
    if (sch->round[i] != k || now >= in->deadline_us || in->deadline_us - now < (uint64_t)in->count * 7 / 10)
      continue;
    tg_status st = large_pass(in, sch->pass[i], reserve, best);
    if (st != TG_OK) return st;
  }
  return TG_OK;
}

static tg_status run_best_large(const tg__plan_input *in, tg__budget *b, uint64_t t0, tg_plan **out) {
  tg_plan *best = NULL;
  *out = NULL;
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
  if (st == TG_OK && best == NULL) st = TG_ERROR_OVERFLOW; /* the first pass's layout */
  if (st == TG_OK && !tg__budget_done(b))
    st = search_rounds(in, 0, b, t0, large_before_round, &reserve, &best);
  if (st != TG_OK) {
    tg_plan_destroy(best);
    return st;
  }
  *out = best;
  return TG_OK;
}

/* The strategies `best` runs before the search (tg__best_strategy_at), the smallest plan in
 * `*out`. Under a deadline (in->deadline_us): naive first (a plan at once), then the ones that
 * usually win first, each only when it is expected to end in time (see docs/architecture.md);
 * beam and hill-climb get half and a quarter of the time left (and of `b`'s work). */
static tg_status run_strategies(const tg__plan_input *in, const tg__budget *b, tg_plan **out) {
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
      /* Under a work cap too (the merged blocks of a round), a share of that (a unit is about
       * a millisecond). */
      uint64_t left = tg__budget_left(b);
      if (left != TG__BUDGET_NONE && left / (s == TG_STRATEGY_BEAM ? 2 : 4) < share)
        share = left / (s == TG_STRATEGY_BEAM ? 2 : 4);
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
  *out = best;
  if (best == NULL) return overflowed ? TG_ERROR_OVERFLOW : TG_ERROR_INTERNAL;
  return TG_OK;
}

/* The strategies, then the search in rounds within `b` (nothing when `b` has no work left).
 * `search_ms` (the default search) > 0: `b` gets its deadline, that many milliseconds, when the
 * strategies are done. */
static tg_status plan_with_budget(const tg__plan_input *in, tg__budget *b, uint64_t search_ms,
                                  tg_plan **out) {
  *out = NULL;
  uint64_t t0 = tg__now_us();
  const tg_plan_options *o = in->options;
  if (o->mode == TG_MODE_OFFSETS && in->deadline_us != 0 && o->relation == NULL &&
      in->count >= TG__LNS_MIN_RECORDS) {
    tg_status st = run_best_large(in, b, t0, out);
    if (st != TG_ERROR_OVERFLOW) return st;
  }
  tg_plan *best = NULL;
  tg_status st = run_strategies(in, b, &best);
  if (st != TG_OK) return st;
  if (search_ms > 0) b->deadline_us = tg__now_us() + search_ms * 1000;
  const int objects_1d = o->mode == TG_MODE_OBJECTS && in->dims == 1 &&
                         in->count <= TG__EXACT_OBJECTS_MAX_RECORDS;
  if (!tg__budget_done(b)) st = search_rounds(in, objects_1d, b, t0, NULL, NULL, &best);
  if (st != TG_OK) {
    tg_plan_destroy(best);
    return st;
  }
  *out = best;
  return TG_OK;
}

/* Default exact limit (time_limit_ms 0 or TG_TIME_LIMIT_NONE with `exact`). */
#define TG__EXACT_DEFAULT_MS 1000u

tg_status tg__best_plan(const tg__plan_input *in, tg_plan **out) {
  const tg_plan_options *o = in->options;
  tg_plan_options eff = *o;
  tg__plan_input call = *in;
  call.options = &eff;
  uint64_t proved = 0;
  call.proved = &proved;
  /* The budget. A work cap: work_limit, or the default search's TG_DEFAULT_TIME_LIMIT_MS units
   * (compute.c passes time_limit_ms = that without a deadline); a deadline: the caller's limit
   * (compute.c sets in->deadline_us), the exact mode's (time_limit_ms, 0 = 1000, unless only
   * a work limit is given), or the default search's, counted from the end of the strategies. */
  int default_search = 0;
  if (o->exact) {
    if (eff.time_limit_ms == 0 && eff.work_limit == 0) eff.time_limit_ms = TG__EXACT_DEFAULT_MS;
    if (eff.time_limit_ms != 0 && call.deadline_us == 0)
      call.deadline_us = tg__now_us() + (uint64_t)eff.time_limit_ms * 1000;
  } else if (call.deadline_us == 0 && eff.work_limit == 0) {
    default_search = eff.time_limit_ms != 0;
  }
  const int searching = eff.exact || eff.work_limit != 0 || eff.time_limit_ms != 0;
  tg__budget b = {TG__BUDGET_NONE, 0, call.deadline_us};
  if (eff.work_limit != 0) b.cap = (uint64_t)eff.work_limit * TG__MILLI;
  else if (default_search) b.cap = (uint64_t)eff.time_limit_ms * TG__MILLI;
  if (!searching) b.cap = 0;
  /* The exact mode's stats: where it applies (offsets; objects with 1D records up to the
   * branch-and-bound's size). */
  tg_exact_stats *es = NULL;
  if (o->exact && o->exact_stats != NULL &&
      (o->mode == TG_MODE_OFFSETS || (in->dims == 1 && in->count <= TG__EXACT_OBJECTS_MAX_RECORDS)))
    es = o->exact_stats;
  if (es != NULL) tg__exact_stats_reset(es);
  eff.exact_stats = es;
  eff.exact = es != NULL;
  /* Objects mode, exact: the shape-aware bound (bounds_shape.c, a fixed amount of work), often
   * above the positional maximums, is what is proved before the search. */
  if (es != NULL && eff.mode == TG_MODE_OBJECTS) {
    tg_status bs = tg_bounds_objects_shape(in->records, in->count, in->dims, in->alloc, &proved);
    if (bs != TG_OK) return bs;
  }
  tg_status st;
  uint64_t t0 = tg__now_us();
  st = plan_with_budget(&call, &b, default_search ? eff.time_limit_ms : 0, out);
  if (st != TG_OK || es == NULL) return st;
  /* What the exact mode proved: the largest lower bound any stage proved (peak-live or the
   * positional maximum at least), optimality when the plan meets it, else whether the time or
   * the work ran out. */
  uint64_t bound = 0;
  if ((st = tg__search_bound(&call, &bound)) != TG_OK && st != TG_ERROR_OVERFLOW) {
    tg_plan_destroy(*out);
    *out = NULL;
    return st;
  }
  if (bound > proved) proved = bound;
  es->total = (*out)->total;
  es->proved_optimal = es->total <= proved;
  es->lower_bound = es->proved_optimal ? es->total : proved;
  es->ended = es->proved_optimal         ? TG_EXACT_PROVED_OPTIMAL
              : b.cap == TG__BUDGET_NONE || tg__budget_expired(&b) ? TG_EXACT_TIME_LIMIT
                                                                   : TG_EXACT_WORK_LIMIT;
  es->elapsed_us = tg__now_us() - t0;
  if (es->progress != NULL) es->progress(es->progress_user, es);
  return TG_OK;
}
