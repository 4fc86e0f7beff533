/* A lower bound for offsets plans from exact optima of record subsets ("subset-exact").
 *
 * Restrict any offsets plan of all records to a subset S: the records of S keep their
 * offsets, no two that meet in time overlap, so it is a plan of S and its total (the largest
 * end) is at least OPT(S). So OPT(S), or any proved lower bound on it, bounds every plan of
 * the records, under any may-share relation too (a relation only forbids more). Intervals may
 * even be clipped to a window W that every record of S meets: two intervals that meet each
 * other and both meet W meet inside W (Helly, in one dimension), so clipping changes no
 * conflict, and the clipped problem has fewer task points to search.
 *
 * Which subsets: around the task points with the largest live sums (the peak first), the
 * records live in a window of points [c - w, c + w], for w = 0, 1, 2, 4, ... while the skyline
 * search (exact_offsets.c) still settles the window's problem within its node cap. Each
 * window gives the search's proved lower bound for it (its peak-live, raised by every target
 * capacity whose tree it exhausted, or its optimum). Deterministic: node caps, no clock unless
 * a deadline is given (which only stops early with a smaller, still valid bound). */
#include <string.h>

#include "planner/strategies/offsets_common.h"
#include "planner/search/search.h"

/* Records in a window at most: the skyline search proves little beyond that within caps that
 * fit a bound meant to be cheap. */
#define TG__SUBSET_BOUND_MAX_RECORDS 400u
/* Windows around this many centres (task points with the largest live sums, apart). */
#define TG__SUBSET_BOUND_CENTRES 3u

typedef struct window_work {
  const tg__plan_input *in;
  const tg__task_points *tp;
  tg_usage_record *recs;  /* the window's clipped records */
  uint64_t *vols;
  tg__sort_item *items;   /* the window's records (key: volume, descending) */
  tg__sort_item *tmp;
} window_work;

/* The proved lower bound of the records live in points [lo, hi], clipped to it; `*settled`:
 * the search exhausted its tree (the bound is the window's optimum). `*nodes` counts the work
 * on (weighted nodes, see below); `max_nodes` caps this window's (0 = none). */
static tg_status window_bound(window_work *ww, size_t lo, size_t hi, uint64_t max_nodes,
                              uint64_t deadline_us, uint64_t *nodes, uint64_t *lb, int *settled,
                              size_t *members_out) {
  const tg__plan_input *in = ww->in;
  *lb = 0;
  *settled = 0;
  *members_out = 0;
  /* Work (weighted nodes): the window's set-up, a pass over all records and the search's
   * coverage lists, (in->count + cover) / 16; a node over m records about 1 + m / 32 (the
   * lists it scans grow with them). Nothing starts that the work left does not cover. */
  if (max_nodes != 0 && in->count / 16 >= max_nodes) return TG_OK;
  size_t m = 0;
  for (size_t r = 0; r < in->count; ++r)
    if (in->volumes[r] != 0 && ww->tp->pf[r] <= hi && ww->tp->pl[r] >= lo)
      ww->items[m++] = (tg__sort_item){UINT64_MAX - in->volumes[r], r};
  *members_out = m;
  uint64_t cover = 0; /* task points covered, summed over the window's records */
  /* Too many for the search: the largest of them (ties: lower index), still a subset. */
  if (m > TG__SUBSET_BOUND_MAX_RECORDS) {
    tg__sort_items_stable(ww->items, m, ww->tmp);
    m = TG__SUBSET_BOUND_MAX_RECORDS;
  }
  for (size_t i = 0; i < m; ++i) {
    size_t r = ww->items[i].idx;
    size_t f = ww->tp->pf[r] > lo ? ww->tp->pf[r] : lo, l = ww->tp->pl[r] < hi ? ww->tp->pl[r] : hi;
    ww->recs[i] = (tg_usage_record){{in->volumes[r], 1, 1}, (uint32_t)(f - lo), (uint32_t)(l - lo),
                                    in->records[r].alignment};
    ww->vols[i] = in->volumes[r];
    cover += l - f + 1;
  }
  const uint64_t setup = (in->count + cover) / 16;
  if (m == 0 || (max_nodes != 0 && setup >= max_nodes)) {
    *nodes += in->count / 16;
    return TG_OK;
  }
  *nodes += setup;
  tg_plan_options opt;
  memset(&opt, 0, sizeof opt);
  opt.mode = TG_MODE_OFFSETS;
  opt.alignment = in->options->alignment;
  tg__plan_input sub = {ww->recs, m, 1, &opt, in->alloc, ww->vols, deadline_us, NULL, NULL};
  uint64_t peak = 0;
  tg_status st = tg__peak_live(&sub, &peak);
  if (st != TG_OK) return st == TG_ERROR_OVERFLOW ? TG_OK : st;
  *lb = peak;
  tg_plan *plan = NULL;
  sub.deadline_us = 0; /* one greedy pass: a start for the search */
  st = tg__offsets_greedy_by_size(&sub, &plan);
  sub.deadline_us = deadline_us;
  if (st != TG_OK) {
    tg_plan_destroy(plan);
    return st == TG_ERROR_OVERFLOW ? TG_OK : st;
  }
  const uint64_t weight = 1 + (uint64_t)m / 32;
  uint64_t cap = max_nodes != 0 ? (max_nodes - setup) / weight : 0;
  if (max_nodes != 0 && cap == 0) {
    tg_plan_destroy(plan);
    return TG_OK;
  }
  tg_exact_stats stats;
  memset(&stats, 0, sizeof stats);
  tg__budget nb = {TG__BUDGET_NONE, 0, deadline_us};
  if (max_nodes != 0) nb.cap = cap * TG__MILLI / TG__SKYLINE_NODES_PER_UNIT;
  st = tg__skyline_improve(&sub, peak, &nb, TG__SKYLINE_NODES_PER_UNIT, &plan, &stats);
  tg_plan_destroy(plan);
  *nodes += stats.nodes * weight;
  if (st != TG_OK) return st == TG_ERROR_OVERFLOW ? TG_OK : st;
  if (stats.lower_bound > *lb) *lb = stats.lower_bound;
  *settled = stats.proved_optimal;
  return TG_OK;
}

tg_status tg__offsets_subset_bound(const tg__plan_input *in, tg__budget *b, uint64_t *out,
                                   size_t *subset_records) {
  *out = 0;
  const uint64_t deadline_us = b->deadline_us;
  uint64_t max_nodes = tg__budget_count(b, TG__SUBSET_NODES_PER_UNIT);
  if (max_nodes == UINT64_MAX) max_nodes = 0; /* no cap */
  uint64_t nodes = 0;
  if (subset_records != NULL) *subset_records = 0;
  if (in->count == 0) return TG_OK;
  const tg_allocator *a = in->alloc;
  tg__task_points tp = {0, NULL, NULL};
  uint64_t *live = NULL;
  size_t centres[TG__SUBSET_BOUND_CENTRES];
  window_work ww = {in, &tp, NULL, NULL, NULL, NULL};
  size_t cap = in->count < TG__SUBSET_BOUND_MAX_RECORDS ? in->count : TG__SUBSET_BOUND_MAX_RECORDS;
  tg_status st = tg__task_points_init(in, &tp);
  if (st != TG_OK) goto done;
  live = tg__calloc(a, tp.count ? tp.count : 1, sizeof *live);
  ww.recs = tg__calloc(a, cap, sizeof *ww.recs);
  ww.vols = tg__calloc(a, cap, sizeof *ww.vols);
  ww.items = tg__calloc(a, in->count, sizeof *ww.items);
  ww.tmp = tg__calloc(a, in->count, sizeof *ww.tmp);
  if (live == NULL || ww.recs == NULL || ww.vols == NULL || ww.items == NULL || ww.tmp == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  if ((st = tg__live_at_points(in, &tp, live)) != TG_OK) goto done;
  /* Centres: the point with the largest live sum, then the largest ones at least 8 points away
   * from those chosen (ties: the earlier point). */
  size_t nc = 0;
  while (nc < TG__SUBSET_BOUND_CENTRES) {
    size_t pick = SIZE_MAX;
    for (size_t p = 0; p < tp.count; ++p) {
      int near = 0;
      for (size_t c = 0; c < nc && !near; ++c)
        near = (p > centres[c] ? p - centres[c] : centres[c] - p) < 8;
      if (!near && (pick == SIZE_MAX || live[p] > live[pick])) pick = p;
    }
    if (pick == SIZE_MAX) break;
    centres[nc++] = pick;
  }
  uint64_t best = 0;
  const uint64_t node_cap = max_nodes ? max_nodes : UINT64_MAX;
  for (size_t c = 0; c < nc && nodes < node_cap; ++c) {
    for (size_t w = 0;; w = w ? 2 * w : 1) {
      if (deadline_us != 0 && tg__now_us() >= deadline_us) goto done;
      size_t lo = centres[c] > w ? centres[c] - w : 0;
      size_t hi = tp.count - 1 - centres[c] > w ? centres[c] + w : tp.count - 1;
      uint64_t lb = 0;
      int settled = 0;
      size_t m = 0;
      uint64_t left = node_cap == UINT64_MAX ? 0 : node_cap > nodes ? node_cap - nodes : 0;
      if (node_cap != UINT64_MAX && left == 0) break;
      st = window_bound(&ww, lo, hi, left, deadline_us, &nodes, &lb, &settled, &m);
      if (st != TG_OK) goto done;
      if (lb > best) {
        *out = best = lb;
        if (subset_records != NULL) *subset_records = m < cap ? m : cap;
      }
      if (!settled || nodes >= node_cap || (lo == 0 && hi == tp.count - 1)) break;
    }
  }
done:
  tg__budget_spend(b, nodes, TG__SUBSET_NODES_PER_UNIT);
  tg__task_points_free(in, &tp);
  tg__free(a, live);
  tg__free(a, ww.recs);
  tg__free(a, ww.vols);
  tg__free(a, ww.items);
  tg__free(a, ww.tmp);
  if (st == TG_ERROR_OVERFLOW) st = TG_OK; /* no bound from there */
  return st;
}

const char *tg_exact_end_name(tg_exact_end end) {
  switch (end) {
    case TG_EXACT_PROVED_OPTIMAL: return "proved-optimal";
    case TG_EXACT_TIME_LIMIT: return "time-limit";
    case TG_EXACT_WORK_LIMIT: return "work-limit";
  }
  return "unknown";
}

const char *tg_bound_source_name(tg_bound_source source) {
  switch (source) {
    case TG_BOUND_PEAK_LIVE: return "peak-live";
    case TG_BOUND_SUBSET_EXACT: return "subset-exact";
    case TG_BOUND_EXACT_SEARCH: return "exact-search";
  }
  return "unknown";
}

tg_status tg_bounds_offsets(const tg_usage_record *records, size_t count, uint32_t dims,
                            uint64_t alignment, uint64_t max_work, const tg_allocator *alloc,
                            tg_offsets_bound *out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = (tg_offsets_bound){0, TG_BOUND_PEAK_LIVE, 0};
  tg_bounds b;
  tg_status st = tg_bounds_compute(records, count, dims, alloc, &b);
  if (st != TG_OK) return st;
  out->bytes = b.peak_live;
  if (count == 0) return TG_OK;
  alloc = tg__alloc_or_default(alloc);
  uint64_t *volumes = tg__calloc(alloc, count, sizeof *volumes);
  if (volumes == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t r = 0; r < count; ++r) (void)tg_extent_volume(records[r].size, &volumes[r]);
  tg_plan_options opt;
  memset(&opt, 0, sizeof opt);
  opt.mode = TG_MODE_OFFSETS;
  opt.alignment = alignment;
  tg__plan_input in = {records, count, dims, &opt, alloc, volumes, 0, NULL, NULL};
  uint64_t lb = 0;
  size_t m = 0;
  /* max_work counts weighted nodes: TG__SUBSET_NODES_PER_UNIT of them a unit. */
  const uint64_t work = max_work ? max_work : TG_DEFAULT_BOUND_WORK;
  tg__budget nb = {work > UINT64_MAX / TG__MILLI - 1 ? TG__BUDGET_NONE - 1 : work * TG__MILLI / TG__SUBSET_NODES_PER_UNIT, 0, 0};
  if (nb.cap == 0) nb.cap = 1;
  st = tg__offsets_subset_bound(&in, &nb, &lb, &m);
  tg__free(alloc, volumes);
  if (st != TG_OK) {
    *out = (tg_offsets_bound){0, TG_BOUND_PEAK_LIVE, 0};
    return st;
  }
  if (lb > out->bytes) *out = (tg_offsets_bound){lb, TG_BOUND_SUBSET_EXACT, m};
  return TG_OK;
}
