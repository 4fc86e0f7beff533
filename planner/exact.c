/* Exact mode for offsets: branch-and-bound over canonical placement orders, and the driver that
 * runs greedy's answer through the search and then the branch-and-bound.
 *
 * Why canonical orders suffice. Placing records one by one, each at the lowest aligned
 * address where it fits among the records placed before it that it conflicts with ("first
 * fit"), and taking any plan's records in order of (offset, rank) for a fixed tie order "rank": every record lands at or
 * below its offset in that plan (the records placed before it sit at or below theirs, so its old
 * place is still free). Repeating this never raises an offset, so it reaches a plan that this
 * order reproduces exactly - a plan at least as good as the one we started from, produced by an
 * order along which (offset, rank) increases. So the search only extends a partial order by a
 * record whose first-fit (offset, rank) is above the last placed one's; an optimal plan is
 * among these orders.
 *
 * Pruning, at a node whose last placed record sits at L:
 *  - every unplaced record ends up at or above L, and at or above its current first-fit
 *    offset (placing more records only removes room);
 *  - an unplaced record whose first-fit window lies wholly below L is dead: later records all
 *    go at L or above, so they cannot fill that window, and the record can never be placed in
 *    canonical order;
 *  - at every task point, the records still to place that are live there, plus the parts above
 *    L of the placed ones live there, must all fit above L: total >= L + that sum;
 *  - identical records (same size, alignment and interval; serial relation) are placed in
 *    index order (swapping two such records changes nothing).
 * Ties among equal offsets may be broken by any fixed order of the records; "rank" (first
 * task, then volume descending, then index) is used, and children go by first-fit offset, then
 * rank.
 *
 * The search first looks only for a plan at the peak-live bound (any waste prunes), for half
 * the time: if that tree is exhausted the bound + 1 is proved. Then it runs against the
 * incumbent. An exhausted tree proves the incumbent optimal. */
#include <string.h>

#include "planner/offsets_common.h"
#include "planner/search.h"

typedef struct bb {
  const tg__plan_input *in;
  size_t n;            /* records in the search (non-zero volume) */
  size_t *rec;         /* search index -> record index */
  uint64_t *vol, *al;
  unsigned char *conf; /* n*n conflict bits */
  uint32_t *pf, *pl;   /* task point span */
  size_t points;
  size_t *byvol;       /* search indices by volume descending */
  uint64_t *lf;        /* (n+1) * n first-fit offsets, per depth */
  size_t *cand;        /* (n+1) * n candidates, per depth */
  tg__sort_item *items, *tmp;
  uint64_t *off;
  unsigned char *placed;
  size_t *stack;       /* placement order (offsets nondecreasing) */
  uint64_t *acc;       /* per task point */
  size_t *twin;        /* previous identical record, or SIZE_MAX */
  size_t *byrank;      /* rank -> search index */
  size_t *rank;        /* tie order among equal offsets: first task, then volume descending */
  uint64_t inc;        /* looking for plans with total < inc */
  uint64_t *inc_off;
  int found;
  int timed_out;
  int done;            /* reached the bound: nothing left to prove */
  uint64_t bound;
  uint64_t deadline, next_report, t0;
  tg_exact_stats *stats;
} bb;

static void sat_add(uint64_t *a, uint64_t v) { *a = *a + v < *a ? UINT64_MAX : *a + v; }

static int conflicts(const bb *b, size_t u, size_t v) {
  size_t bit = u * b->n + v;
  return (b->conf[bit >> 3] >> (bit & 7)) & 1;
}

/* Lowest aligned offset for u among the first `depth` placed records (sorted by offset). */
static uint64_t first_fit(const bb *b, size_t u, size_t depth) {
  uint64_t pos = 0, end;
  for (size_t i = 0; i < depth; ++i) {
    size_t p = b->stack[i];
    if (!conflicts(b, u, p)) continue;
    if (!tg__add_u64(pos, b->vol[u], &end)) return UINT64_MAX;
    if (b->off[p] >= end) break;
    uint64_t pe = b->off[p] + b->vol[p];
    if (pe > pos && !tg__align_up(pe, b->al[u], &pos)) return UINT64_MAX;
  }
  return pos;
}

static void report(bb *b, uint64_t now) {
  if (b->stats->progress == NULL) return;
  b->stats->elapsed_us = now - b->t0;
  b->stats->progress(b->stats->progress_user, b->stats);
}

static void dfs(bb *b, size_t d, uint64_t last_off, size_t last_idx, uint64_t top) {
  if (b->timed_out || b->done) return;
  b->stats->nodes++;
  if ((b->stats->nodes & 63) == 0) {
    uint64_t now = tg__now_us();
    if (now >= b->deadline) {
      b->timed_out = 1;
      return;
    }
    if (now >= b->next_report) {
      b->next_report = now + 100000;
      report(b, now);
    }
  }
  size_t n = b->n;
  if (d == n) {
    if (top < b->inc) {
      b->inc = top;
      memcpy(b->inc_off, b->off, n * sizeof *b->off);
      b->found = 1;
      if (top <= b->bound) b->done = 1;
    }
    return;
  }
  const uint64_t *lf = b->lf + d * n;
  memset(b->acc, 0, b->points * sizeof *b->acc);
  size_t nc = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t u = b->byrank[i]; /* candidates come out in rank order */
    if (b->placed[u]) continue;
    uint64_t l = lf[u], s, end;
    if (l == UINT64_MAX) return;
    if (l < last_off && l + b->vol[u] <= last_off) return; /* dead */
    s = l > last_off ? l : last_off;
    if (!tg__add_u64(s, b->vol[u], &end) || end >= b->inc) return;
    for (uint32_t t = b->pf[u]; t <= b->pl[u]; ++t) sat_add(&b->acc[t], b->vol[u]);
    int after = l > last_off ||
                (l == last_off && (last_idx == SIZE_MAX || b->rank[u] > b->rank[last_idx]));
    if (after && (b->twin[u] == SIZE_MAX || b->placed[b->twin[u]]))
      b->items[nc++] = (tg__sort_item){l, u};
  }
  for (size_t i = 0; i < d; ++i) {
    size_t p = b->stack[i];
    uint64_t pe = b->off[p] + b->vol[p];
    if (pe > last_off)
      for (uint32_t t = b->pf[p]; t <= b->pl[p]; ++t) sat_add(&b->acc[t], pe - last_off);
  }
  for (size_t t = 0; t < b->points; ++t) {
    uint64_t need;
    if (!tg__add_u64(last_off, b->acc[t], &need) || need >= b->inc) return;
  }
  /* Children by offset, then rank: the lowest gap is filled first, sweeping forward in time,
   * which follows the canonical order instead of fighting it. */
  tg__sort_items_stable(b->items, nc, b->tmp);
  size_t *cand = b->cand + d * n;
  for (size_t i = 0; i < nc; ++i) cand[i] = b->items[i].idx;
  uint64_t *next = b->lf + (d + 1) * n;
  for (size_t i = 0; i < nc; ++i) {
    if (b->timed_out || b->done) return;
    size_t c = cand[i];
    uint64_t o = lf[c], end = o + b->vol[c]; /* checked above */
    if (end >= b->inc) continue;
    b->off[c] = o;
    b->placed[c] = 1;
    b->stack[d] = c;
    memcpy(next, lf, n * sizeof *next);
    for (size_t u = 0; u < n; ++u) {
      if (b->placed[u] || !conflicts(b, u, c)) continue;
      /* Only a record whose first-fit window meets c's range moves up. */
      if (next[u] < end && next[u] + b->vol[u] > o) next[u] = first_fit(b, u, d + 1);
    }
    dfs(b, d + 1, o, c, end > top ? end : top);
    b->placed[c] = 0;
  }
}

static tg_status bb_init(bb *b, const tg__plan_input *in) {
  const tg_allocator *a = in->alloc;
  size_t n = 0;
  for (size_t r = 0; r < in->count; ++r) n += in->volumes[r] > 0;
  b->n = n;
  size_t nn = n ? n : 1, cells, bits;
  if (!tg__mul_size(nn, nn, &bits) || !tg__mul_size(nn + 1, nn, &cells))
    return TG_ERROR_OVERFLOW;
  b->rec = tg__alloc_array(a, nn, sizeof *b->rec);
  b->vol = tg__alloc_array(a, nn, sizeof *b->vol);
  b->al = tg__alloc_array(a, nn, sizeof *b->al);
  b->conf = tg__calloc(a, bits / 8 + 1, 1);
  b->pf = tg__alloc_array(a, nn, sizeof *b->pf);
  b->pl = tg__alloc_array(a, nn, sizeof *b->pl);
  b->byvol = tg__alloc_array(a, nn, sizeof *b->byvol);
  b->lf = tg__calloc(a, cells, sizeof *b->lf);
  b->cand = tg__alloc_array(a, cells, sizeof *b->cand);
  b->items = tg__alloc_array(a, nn, sizeof *b->items);
  b->tmp = tg__alloc_array(a, nn, sizeof *b->tmp);
  b->off = tg__calloc(a, nn, sizeof *b->off);
  b->inc_off = tg__calloc(a, nn, sizeof *b->inc_off);
  b->placed = tg__calloc(a, nn, 1);
  b->stack = tg__alloc_array(a, nn, sizeof *b->stack);
  b->acc = tg__alloc_array(a, nn, sizeof *b->acc);
  b->twin = tg__alloc_array(a, nn, sizeof *b->twin);
  b->rank = tg__alloc_array(a, nn, sizeof *b->rank);
  b->byrank = tg__alloc_array(a, nn, sizeof *b->byrank);
  if (!b->rec || !b->vol || !b->al || !b->conf || !b->pf || !b->pl || !b->byvol || !b->lf ||
      !b->cand || !b->items || !b->tmp || !b->off || !b->inc_off || !b->placed || !b->stack ||
      !b->acc || !b->twin || !b->rank || !b->byrank)
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  size_t k = 0;
  for (size_t r = 0; r < in->count; ++r) {
    if (in->volumes[r] == 0) continue;
    b->rec[k] = r;
    b->vol[k] = in->volumes[r];
    b->al[k] = tg__record_alignment(in, r);
    ++k;
  }
  for (size_t u = 0; u < n; ++u)
    for (size_t v = u + 1; v < n; ++v)
      if (tg__records_conflict(in, b->rec[u], b->rec[v])) {
        size_t x = u * n + v, y = v * n + u;
        b->conf[x >> 3] |= (unsigned char)(1u << (x & 7));
        b->conf[y >> 3] |= (unsigned char)(1u << (y & 7));
      }
  /* Task points: the distinct first tasks. */
  for (size_t u = 0; u < n; ++u) b->items[u] = (tg__sort_item){in->records[b->rec[u]].first_task, u};
  tg__sort_items_stable(b->items, n, b->tmp);
  uint64_t *pt = b->acc; /* scratch: the distinct first tasks */
  size_t points = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t f = b->items[i].key;
    if (points == 0 || pt[points - 1] != f) pt[points++] = f;
    b->pf[b->items[i].idx] = (uint32_t)(points - 1);
  }
  for (size_t u = 0; u < n; ++u) {
    uint64_t last = in->records[b->rec[u]].last_task;
    size_t lo = b->pf[u], hi = points; /* last point <= last: binary search in (pf, points) */
    while (hi - lo > 1) {
      size_t mid = lo + (hi - lo) / 2;
      if (pt[mid] <= last) lo = mid;
      else hi = mid;
    }
    b->pl[u] = (uint32_t)lo;
  }
  b->points = points;
  for (size_t u = 0; u < n; ++u) b->items[u] = (tg__sort_item){UINT64_MAX - b->vol[u], u};
  tg__sort_items_stable(b->items, n, b->tmp);
  for (size_t i = 0; i < n; ++i) b->byvol[i] = b->items[i].idx;
  for (size_t i = 0; i < n; ++i) {
    size_t u = b->byvol[i];
    b->items[i] = (tg__sort_item){in->records[b->rec[u]].first_task, u};
  }
  tg__sort_items_stable(b->items, n, b->tmp);
  for (size_t i = 0; i < n; ++i) {
    b->byrank[i] = b->items[i].idx;
    b->rank[b->items[i].idx] = i;
  }
  /* Identical records (serial relation only: a relation may tell them apart). */
  for (size_t i = 0; i < n; ++i) {
    size_t u = b->byvol[i];
    b->twin[u] = SIZE_MAX;
    if (in->options->relation != NULL) continue;
    const tg_usage_record *ru = &in->records[b->rec[u]];
    for (size_t j = i; j-- > 0;) {
      size_t v = b->byvol[j];
      if (b->vol[v] != b->vol[u]) break;
      const tg_usage_record *rv = &in->records[b->rec[v]];
      if (rv->first_task == ru->first_task && rv->last_task == ru->last_task &&
          b->al[v] == b->al[u] && v < u) {
        b->twin[u] = v;
        break;
      }
    }
  }
  return TG_OK;
}

static void bb_free(bb *b, const tg_allocator *a) {
  tg__free(a, b->rec);
  tg__free(a, b->vol);
  tg__free(a, b->al);
  tg__free(a, b->conf);
  tg__free(a, b->pf);
  tg__free(a, b->pl);
  tg__free(a, b->byvol);
  tg__free(a, b->lf);
  tg__free(a, b->cand);
  tg__free(a, b->items);
  tg__free(a, b->tmp);
  tg__free(a, b->off);
  tg__free(a, b->inc_off);
  tg__free(a, b->placed);
  tg__free(a, b->stack);
  tg__free(a, b->acc);
  tg__free(a, b->twin);
  tg__free(a, b->rank);
  tg__free(a, b->byrank);
}

tg_status tg__exact_improve(const tg__plan_input *in, uint64_t bound, uint64_t budget_us,
                            tg_plan **best, tg_exact_stats *stats) {
  uint64_t t0 = tg__now_us();
  stats->total = (*best)->total;
  stats->lower_bound = bound;
  if ((*best)->total <= bound) {
    stats->proved_optimal = 1;
    stats->lower_bound = (*best)->total;
    return TG_OK;
  }
  if (in->count > TG_EXACT_MAX_RECORDS) return TG_OK;
  bb b;
  memset(&b, 0, sizeof b);
  b.in = in;
  b.stats = stats;
  b.bound = bound;
  b.t0 = t0;
  b.next_report = t0 + 100000;
  tg_status st = bb_init(&b, in);
  if (st != TG_OK) {
    bb_free(&b, in->alloc);
    return st;
  }
  stats->searched = 1;
  uint64_t end = UINT64_MAX - t0 < budget_us ? UINT64_MAX : t0 + budget_us;
  /* Phase 1: a plan at the bound only. */
  b.inc = bound + 1;
  b.deadline = t0 + (end - t0) / 2;
  dfs(&b, 0, 0, SIZE_MAX, 0);
  int proved = 0;
  if (b.found) {
    proved = 1;
  } else {
    if (!b.timed_out) stats->lower_bound = bound + 1;
    /* Phase 2: anything better than the incumbent. */
    b.inc = (*best)->total;
    b.timed_out = 0;
    b.deadline = end;
    memset(b.placed, 0, b.n);
    dfs(&b, 0, 0, SIZE_MAX, 0);
    proved = !b.timed_out;
  }
  if (b.found && b.inc < (*best)->total) {
    tg_plan *p = NULL;
    st = tg_plan_create(TG_MODE_OFFSETS, in->dims, in->count, 0, in->alloc, &p);
    if (st == TG_OK) {
      for (size_t u = 0; u < b.n; ++u) p->offset_of[b.rec[u]] = b.inc_off[u];
      st = tg__plan_finish_offsets(in, p);
    }
    if (st == TG_OK && p->total < (*best)->total) {
      p->strategy = TG_STRATEGY_BEST;
      tg_plan_destroy(*best);
      *best = p;
    } else {
      tg_plan_destroy(p);
    }
  }
  stats->total = (*best)->total;
  if (proved) {
    stats->proved_optimal = 1;
    stats->lower_bound = stats->total;
  }
  bb_free(&b, in->alloc);
  return st;
}

tg_status tg__search_after_greedy(const tg__plan_input *in, tg_plan **best) {
  const tg_plan_options *o = in->options;
  uint64_t t0 = tg__now_us();
  tg_exact_stats local;
  memset(&local, 0, sizeof local);
  tg_exact_stats *stats = o->exact_stats ? o->exact_stats : &local;
  int exact = o->exact && o->mode == TG_MODE_OFFSETS;
  if (exact) {
    void (*progress)(void *, const tg_exact_stats *) = stats->progress;
    void *user = stats->progress_user;
    memset(stats, 0, sizeof *stats);
    stats->progress = progress;
    stats->progress_user = user;
  }
  uint64_t limit_ms = o->time_limit_ms;
  if (exact && limit_ms == 0) limit_ms = 1000;
  uint64_t search_ms = exact ? (limit_ms + 9) / 10 : limit_ms;
  uint64_t bound;
  tg_status st = tg__search_bound(in, &bound);
  if (st != TG_OK) return st;
  if (search_ms > 0) {
    st = tg__search_improve(in, bound, search_ms * 1000, search_ms * TG__SEARCH_ITERS_PER_MS,
                            best);
    if (st != TG_OK) return st;
  }
  if (exact) {
    uint64_t used = tg__now_us() - t0, budget = limit_ms * 1000;
    st = tg__exact_improve(in, bound, budget > used ? budget - used : 0, best, stats);
    stats->elapsed_us = tg__now_us() - t0;
    if (stats->progress != NULL) stats->progress(stats->progress_user, stats);
  }
  return st;
}

tg_status tg_plan_compute_exact(const tg_usage_record *records, size_t count,
                                const tg_plan_options *options, const tg_allocator *alloc,
                                tg_plan **out, tg_exact_stats *stats) {
  tg_plan_options opt;
  memset(&opt, 0, sizeof opt);
  if (options != NULL) opt = *options;
  opt.mode = TG_MODE_OFFSETS;
  opt.strategy = TG_STRATEGY_BEST;
  opt.exact = 1;
  opt.exact_stats = stats;
  return tg_plan_compute(records, count, 1, &opt, alloc, out);
}
