/* Exact mode for offsets: the skyline search and the branch-and-bound over placement orders.
 *
 * Two searches live here. Without a relation (the common case) the skyline branch-and-bound
 * below ("skyline branch-and-bound") builds plans bottom-left, MiniMalloc style; it also runs,
 * with a node cap, inside the improvement search of strategy best. With a relation records
 * may conflict without meeting in time, the skyline does not sum up a partial plan, and the
 * generic search over canonical placement orders that follows is used.
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

#include "planner/strategies/objects_common.h"
#include "planner/strategies/offsets_common.h"
#include "planner/search/search.h"

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
  uint64_t max_nodes;  /* stop when stats->nodes reaches it */
  tg_exact_stats *stats;
} bb;

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
  if (++b->stats->nodes >= b->max_nodes) {
    b->timed_out = 1;
    return;
  }
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
    for (uint32_t t = b->pf[u]; t <= b->pl[u]; ++t) b->acc[t] = tg__add_sat_u64(b->acc[t], b->vol[u]);
    int after = l > last_off ||
                (l == last_off && (last_idx == SIZE_MAX || b->rank[u] > b->rank[last_idx]));
    if (after && (b->twin[u] == SIZE_MAX || b->placed[b->twin[u]]))
      b->items[nc++] = (tg__sort_item){l, u};
  }
  for (size_t i = 0; i < d; ++i) {
    size_t p = b->stack[i];
    uint64_t pe = b->off[p] + b->vol[p];
    if (pe > last_off)
      for (uint32_t t = b->pf[p]; t <= b->pl[p]; ++t) b->acc[t] = tg__add_sat_u64(b->acc[t], pe - last_off);
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

/* Task points (see offsets_common.h): the distinct first tasks of the n search records
 * (record rec[u]), ascending, into pt; each record's span of points into pf (its first task's)
 * and pl (the last point at or before its last task). items and tmp: n entries of sort
 * scratch. Returns the number of points. */
static size_t task_points(const tg__plan_input *in, const size_t *rec, size_t n,
                          tg__sort_item *items, tg__sort_item *tmp, uint64_t *pt, uint32_t *pf,
                          uint32_t *pl) {
  for (size_t u = 0; u < n; ++u) items[u] = (tg__sort_item){in->records[rec[u]].first_task, u};
  tg__sort_items_stable(items, n, tmp);
  size_t points = 0;
  for (size_t i = 0; i < n; ++i) {
    if (points == 0 || pt[points - 1] != items[i].key) pt[points++] = items[i].key;
    pf[items[i].idx] = (uint32_t)(points - 1);
  }
  for (size_t u = 0; u < n; ++u) {
    uint64_t last = in->records[rec[u]].last_task;
    size_t lo = pf[u], hi = points; /* last point <= last: binary search in (pf, points) */
    while (hi - lo > 1) {
      size_t mid = lo + (hi - lo) / 2;
      if (pt[mid] <= last) lo = mid;
      else hi = mid;
    }
    pl[u] = (uint32_t)lo;
  }
  return points;
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
  /* b->acc: scratch for the points */
  b->points = task_points(in, b->rec, n, b->items, b->tmp, b->acc, b->pf, b->pl);
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
  TG__FREE_EACH(a, b->rec, b->vol, b->al, b->conf, b->pf, b->pl, b->byvol, b->lf, b->cand, b->items,
                b->tmp, b->off, b->inc_off, b->placed, b->stack, b->acc, b->twin, b->rank,
                b->byrank);
}

/* ---- skyline branch-and-bound (serial relation) ------------------------------------------ */

/* Without a relation two records conflict exactly when their task-point spans meet, so a
 * partial plan is summed up by its skyline: per task point, the floor above which every record
 * still to place must go. Take any plan and let gravity pull every record down (to 0 or onto
 * the aligned end of a record it conflicts with): nothing gets bigger. The search builds such
 * a plan bottom-left, MiniMalloc style. At each node let s be the leftmost task point, among
 * those where an unplaced record lives, with the lowest floor f. In the plan, either
 *  (A) some unplaced record c sits at (s, f): every record below c that conflicts with it ends
 *      at or under f, and every unplaced record starts at or above the lowest floor f, so all
 *      of them are placed already; c's whole span has floor f (others are higher and c sits
 *      above them), so no point left of s is in c's span (it would have been chosen as s):
 *      c starts at s. The children place, at f, each unplaced record starting at s whose span
 *      stays on floor f;
 *  (B) nothing sits at (s, f): the lowest unplaced record c over s rests higher, at its own
 *      skyline offset sp(c) when that is above f, else on an unplaced record (at least f plus
 *      the smallest unplaced size). The last child raises the floor at s to the least of these.
 * Each gravity-compacted plan is reached by exactly one path (identical records go in index
 * order), so the tree holds an optimal plan and no duplicate. Case (A) leaves floor + (sizes
 * still to place) unchanged at every point; (B) raises it: a node is cut when that exceeds the
 * limit at s. On a perfect packing at the bound every point is full, so (B) never happens and
 * the search only tries records that fit the lowest step of the skyline exactly.
 *
 * The relaxing dive (tg__skyline_dive) runs the same tree for a heuristic answer on up to
 * hundreds of thousands of records. Its limit starts at the bound; a dead end found at once
 * is backed out of as usual, but one that shows only after TG__SKY_RELAX_NODES nodes without a
 * deeper node was made long before, among decisions elsewhere on the time axis that
 * backtracking would undo for nothing: the limit rises by a step instead and the dive goes
 * on from where it is. Frames far above the current one become final and are dropped with
 * their undo log. A min tree over the floors finds the lowest points in O(log points). On wide
 * DAGs of 10k-100k records (greedy 6-7% above the bound) the dive ends at 1.0000-1.0019. A
 * dive stopped by the clock or its node cap keeps what it placed and places the rest greedily
 * (sky_complete), so any dive gives a plan.
 *
 * What a node costs on 100k records is memory traffic: records are numbered by first task (the
 * records over a point read nearby entries), the coverage lists hold 32-bit indices, a placed
 * record lifts each record it meets once (not once per shared point), and per point sp_max
 * bounds the skyline offsets from above, so a point is looked at again only when its check
 * could fail (on wide DAGs 99.5% of them cannot). */

typedef struct sky_frame {
  size_t s;                 /* section (task point) branched on */
  uint64_t f;               /* its floor */
  size_t cbeg, cend, next;  /* candidates in the pool */
  int raise_tried;          /* case (B) done */
  int applied;              /* 0 none, 1 placed `c`, 2 raised floor[s] from `old` */
  size_t c;
  uint64_t old;
  size_t trail_mark;
} sky_frame;

typedef struct sky {
  const tg__plan_input *in;
  size_t n, points;
  size_t *rec;
  uint64_t *vol, *al;
  uint32_t *pf, *pl;
  size_t *st_beg, *st_idx;  /* records starting at each point, in the order children go */
  size_t *cv_beg;           /* records covering each point, cv_idx[cv_beg[t]...]: */
  uint32_t *cv_idx;         /* the first cnt[t] are unplaced (32 bits: half the memory
                               traffic of the scans) */
  size_t *cv_base;          /* where record u sits in the list of point pf[u] + i: */
  uint32_t *cv_where;       /* cv_where[cv_base[u] + i] */
  size_t *fill;             /* scratch of sky_init */
  size_t *twin;             /* previous identical record, or SIZE_MAX */
  uint64_t *floor, *rem;
  uint64_t *sp_max;         /* per point: at least the largest sp over the unplaced records
                               covering it (exact after its lookahead scan; sky_open) */
  uint64_t *sp;             /* per unplaced record: skyline offset (aligned highest floor) */
  size_t *trail_u;          /* undo log of sp changes */
  uint64_t *trail_sp;
  size_t trail_len, trail_cap;
  size_t *dirty;            /* points whose floor, sums or sp of covering records changed */
  size_t ndirty;
  uint64_t *stamp, gen;
  tg__sort_item *sort_items;/* n items each: sky_init's sort buffers, then the lookahead's */
  tg__sort_item *sort_tmp;  /* scratch (sky_open) and sky_complete's order */
  void *mem;                /* the block the per-record arrays are carved from (sky_layout) */
  uint32_t *cnt;
  unsigned char *placed;
  uint64_t *off, *inc_off;
  size_t placed_count;
  sky_frame *frames;        /* frame of depth d: frames[d - frame_base] (sky_at) */
  size_t frame_cap, frame_base;
  size_t *pool;
  size_t pool_cap;
  uint64_t *seg;            /* min tree over the points: floor where cnt > 0, else UINT64_MAX */
  size_t seg_leaves;        /* leaves (a power of two >= points); leaf of t: seg_leaves + t */
  size_t scan_cap;          /* lowest points compared for the fewest candidates (sky_open) */
  uint64_t relax_step;      /* > 0: a relaxing dive (tg__skyline_dive): the limit rises by this
                               when the dive stalls (sky_run; proves nothing then)... */
  uint64_t relax_ceiling;   /* ...up to this (the incumbent's total - 1) */
  size_t max_depth;         /* deepest node reached */
  uint64_t progress_at;     /* stats->nodes when it was reached (or the limit last rose) */
  size_t commit;            /* relaxing dive: frames below this depth are final (their undo
                               log is dropped) */
  tg__rng rng;
  int shuffle;              /* perturb the children order (restarts after the first dive) */
  uint64_t limit;           /* looking for plans with total <= limit */
  uint64_t inc;             /* best total found (or the incumbent's) */
  int found;
  int stopped;              /* deadline or node cap */
  int may_give_up;          /* relaxing dive: stop once it cannot reach its last record in time */
  int gave_up;
  uint64_t max_nodes, deadline, next_report, t0;
  uint64_t mean_list;       /* the coverage lists' mean length seen from a record (sky_init) */
  tg_exact_stats *stats;
  const size_t *fix;        /* neighbourhood steps (sky_steps): records placed at `off` before */
  size_t nfix;              /* the search starts (sky_fix), the others searched above them */
} sky;

static void sky_free(sky *k, const tg_allocator *a) {
  TG__FREE_EACH(a, k->mem, k->seg, k->cv_idx, k->cv_base, k->cv_where, k->trail_u, k->trail_sp,
                k->frames, k->pool);
}

/* The per-record arrays of sky_init (and its two sort buffers), carved from one zeroed block. */
static void sky_layout(tg__arena *ar, sky *k, size_t nn, tg__sort_item **items, tg__sort_item **tmp) {
  k->rec = tg__arena_take(ar, nn, sizeof *k->rec);
  k->vol = tg__arena_take(ar, nn, sizeof *k->vol);
  k->al = tg__arena_take(ar, nn, sizeof *k->al);
  k->pf = tg__arena_take(ar, nn, sizeof *k->pf);
  k->pl = tg__arena_take(ar, nn, sizeof *k->pl);
  k->st_beg = tg__arena_take(ar, nn + 1, sizeof *k->st_beg);
  k->st_idx = tg__arena_take(ar, nn, sizeof *k->st_idx);
  k->cv_beg = tg__arena_take(ar, nn + 1, sizeof *k->cv_beg);
  k->fill = tg__arena_take(ar, nn, sizeof *k->fill);
  k->twin = tg__arena_take(ar, nn, sizeof *k->twin);
  k->floor = tg__arena_take(ar, nn, sizeof *k->floor);
  k->rem = tg__arena_take(ar, nn, sizeof *k->rem);
  k->sp_max = tg__arena_take(ar, nn, sizeof *k->sp_max);
  k->sp = tg__arena_take(ar, nn, sizeof *k->sp);
  k->dirty = tg__arena_take(ar, nn, sizeof *k->dirty);
  k->stamp = tg__arena_take(ar, nn, sizeof *k->stamp);
  k->cnt = tg__arena_take(ar, nn, sizeof *k->cnt);
  k->placed = tg__arena_take(ar, nn, 1);
  k->off = tg__arena_take(ar, nn, sizeof *k->off);
  k->inc_off = tg__arena_take(ar, nn, sizeof *k->inc_off);
  *items = k->sort_items = tg__arena_take(ar, nn, sizeof **items);
  *tmp = k->sort_tmp = tg__arena_take(ar, nn, sizeof **tmp);
}

/* TG_ERROR_OVERFLOW ("not searched") when the coverage lists would hold more than `max_cover`
 * entries, or their mean length seen from a record (sum over points of the count squared,
 * over the entries) exceeds `max_list`, or live sums exceed 64 bits. */
static tg_status sky_init(sky *k, const tg__plan_input *in, size_t max_cover, size_t max_list) {
  const tg_allocator *a = in->alloc;
  size_t n = 0;
  for (size_t r = 0; r < in->count; ++r) n += in->volumes[r] > 0;
  k->in = in;
  k->n = n;
  size_t nn = n ? n : 1;
  tg__sort_item *items = NULL, *tmp = NULL;
  tg__arena ar = {NULL, 0, 0};
  sky_layout(&ar, k, nn, &items, &tmp);
  tg_status st = TG_OK;
  if (ar.overflow || (k->mem = tg__calloc(a, 1, ar.off)) == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  ar = (tg__arena){k->mem, 0, 0};
  sky_layout(&ar, k, nn, &items, &tmp);
  /* Search indices in order of first task (then record index): the records over a point have
   * nearby indices, so the per-record arrays read at a point share cache lines (on 100k
   * records, most of a node's time is those reads). Ties keep the record order, so every
   * choice among records (by index) is the same as in record order. */
  size_t j = 0;
  for (size_t r = 0; r < in->count; ++r)
    if (in->volumes[r] > 0) items[j++] = (tg__sort_item){in->records[r].first_task, r};
  tg__sort_items_stable(items, n, tmp);
  for (size_t u = 0; u < n; ++u) {
    size_t r = items[u].idx;
    k->rec[u] = r;
    k->vol[u] = in->volumes[r];
    k->al[u] = tg__record_alignment(in, r);
  }
  /* k->rem: scratch for the points */
  size_t points = task_points(in, k->rec, n, items, tmp, k->rem, k->pf, k->pl);
  k->points = points;
  memset(k->rem, 0, nn * sizeof *k->rem);
  /* Children order at a point: longest span first (it fills most of the step), then the
   * largest, then index. */
  for (size_t u = 0; u < n; ++u) items[u] = (tg__sort_item){UINT64_MAX - k->vol[u], u};
  tg__sort_items_stable(items, n, tmp);
  for (size_t i = 0; i < n; ++i) items[i].key = UINT64_MAX - k->pl[items[i].idx];
  tg__sort_items_stable(items, n, tmp);
  for (size_t i = 0; i < n; ++i) items[i].key = k->pf[items[i].idx];
  tg__sort_items_stable(items, n, tmp);
  for (size_t i = 0; i < n; ++i) {
    k->st_idx[i] = items[i].idx;
    k->st_beg[k->pf[items[i].idx] + 1]++;
  }
  for (size_t t = 0; t < points; ++t) k->st_beg[t + 1] += k->st_beg[t];
  /* Coverage lists, live sums and counts. */
  size_t cover = 0;
  for (size_t u = 0; u < n; ++u) {
    cover += (size_t)k->pl[u] - k->pf[u] + 1;
    if (cover > max_cover || cover > UINT32_MAX || u > UINT32_MAX) {
      st = TG_ERROR_OVERFLOW;
      goto done;
    }
  }
  for (size_t u = 0; u < n; ++u) {
    for (uint32_t t = k->pf[u]; t <= k->pl[u]; ++t) {
      k->cv_beg[t + 1]++;
      k->cnt[t]++;
      if (!tg__add_u64(k->rem[t], k->vol[u], &k->rem[t])) {
        st = TG_ERROR_OVERFLOW; /* live sums beyond 64 bits: not searched */
        goto done;
      }
    }
  }
  {
    uint64_t sq = 0, lim;
    for (size_t t = 0; t < points; ++t) sq = tg__add_sat_u64(sq, (uint64_t)k->cnt[t] * k->cnt[t]);
    k->mean_list = cover ? sq / cover : 0;
    if (max_list != SIZE_MAX) {
      if (!tg__mul_u64(max_list, cover, &lim)) lim = UINT64_MAX;
      if (sq > lim) {
        st = TG_ERROR_OVERFLOW;
        goto done;
      }
    }
  }
  k->cv_idx = tg__alloc_array(a, cover ? cover : 1, sizeof *k->cv_idx);
  k->cv_where = tg__alloc_array(a, cover ? cover : 1, sizeof *k->cv_where);
  k->cv_base = tg__alloc_array(a, nn, sizeof *k->cv_base);
  k->seg_leaves = 1;
  while (k->seg_leaves < points) k->seg_leaves *= 2;
  k->seg = tg__alloc_array(a, 2 * k->seg_leaves, sizeof *k->seg);
  k->scan_cap = SIZE_MAX;
  if (k->cv_idx == NULL || k->cv_where == NULL || k->cv_base == NULL || k->seg == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  for (size_t t = 0; t < points; ++t) k->cv_beg[t + 1] += k->cv_beg[t];
  {
    size_t *fill = k->fill; /* next slot per point */
    for (size_t t = 0; t < points; ++t) fill[t] = k->cv_beg[t];
    size_t base = 0;
    for (size_t u = 0; u < n; ++u) {
      k->cv_base[u] = base;
      for (uint32_t t = k->pf[u]; t <= k->pl[u]; ++t) {
        k->cv_where[base++] = (uint32_t)fill[t];
        k->cv_idx[fill[t]++] = (uint32_t)u;
      }
    }
  }
  /* Identical records go in index order; they sit next to each other in a start list. */
  for (size_t t = 0; t < points; ++t) {
    for (size_t i = k->st_beg[t]; i < k->st_beg[t + 1]; ++i) {
      size_t u = k->st_idx[i];
      k->twin[u] = SIZE_MAX;
      for (size_t q = i; q-- > k->st_beg[t];) {
        size_t v = k->st_idx[q];
        if (k->pl[v] != k->pl[u] || k->vol[v] != k->vol[u]) break;
        if (k->al[v] == k->al[u] &&
            in->records[k->rec[v]].last_task == in->records[k->rec[u]].last_task &&
            in->records[k->rec[v]].first_task == in->records[k->rec[u]].first_task) {
          k->twin[u] = v; /* v < u: the start list keeps index order among equals */
          break;
        }
      }
    }
  }
done:
  return st;
}

/* Min tree node x from its children. */
static void seg_pull(uint64_t *g, size_t x) {
  g[x] = g[2 * x] < g[2 * x + 1] ? g[2 * x] : g[2 * x + 1];
}

/* The min tree: leaves [a, b] changed (floor or count); recompute them and their ancestors. */
static void seg_update(sky *k, size_t a, size_t b) {
  uint64_t *g = k->seg;
  for (size_t t = a; t <= b; ++t) g[k->seg_leaves + t] = k->cnt[t] ? k->floor[t] : UINT64_MAX;
  for (size_t i = (k->seg_leaves + a) >> 1, j = (k->seg_leaves + b) >> 1; i > 0; i >>= 1, j >>= 1)
    for (size_t x = i; x <= j; ++x) seg_pull(g, x);
}

static void seg_build(sky *k) {
  uint64_t *g = k->seg;
  for (size_t t = 0; t < k->seg_leaves; ++t)
    g[k->seg_leaves + t] = t < k->points && k->cnt[t] ? k->floor[t] : UINT64_MAX;
  for (size_t x = k->seg_leaves; x-- > 1;) seg_pull(g, x);
}

/* The first point at or after p whose key is <= f (f the tree's minimum: the lowest points in
 * order), or SIZE_MAX. */
static size_t seg_next(const sky *k, size_t p, uint64_t f) {
  const uint64_t *g = k->seg;
  if (p >= k->points) return SIZE_MAX;
  size_t x = k->seg_leaves + p;
  if (g[x] > f) {
    for (;;) {
      while (x & 1) x >>= 1; /* up while a right child (the root, 1, ends at 0) */
      if (x == 0) return SIZE_MAX;
      ++x;                   /* the right sibling */
      if (g[x] <= f) break;
    }
    while (x < k->seg_leaves) x = g[2 * x] <= f ? 2 * x : 2 * x + 1;
  }
  return x - k->seg_leaves;
}

static void sky_dirty(sky *k, size_t t) {
  if (k->stamp[t] == k->gen) return;
  k->stamp[t] = k->gen;
  k->dirty[k->ndirty++] = t;
}

/* Room for one more entry in the undo log. */
static tg_status sky_trail_grow(sky *k) {
  size_t cap = k->trail_cap ? k->trail_cap * 2 : 1024, b1, b2;
  if (!tg__mul_size(cap, sizeof *k->trail_u, &b1) || !tg__mul_size(cap, sizeof *k->trail_sp, &b2))
    return TG_ERROR_OVERFLOW;
  size_t *nu = tg__realloc(k->in->alloc, k->trail_u, k->trail_cap * sizeof *k->trail_u, b1);
  if (nu == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  k->trail_u = nu;
  uint64_t *ns = tg__realloc(k->in->alloc, k->trail_sp, k->trail_cap * sizeof *k->trail_sp, b2);
  if (ns == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  k->trail_sp = ns;
  k->trail_cap = cap;
  return TG_OK;
}

/* The records a rise lifted (sky_lift_record): the points their spans cover, [lo, hi], and the
 * highest skyline offset they got. */
typedef struct sky_lifted {
  uint32_t lo, hi;
  uint64_t top;
  int any;
} sky_lifted;

/* A floor under the unplaced record u rose to `to`: raise sp[u] to it (aligned), logging the
 * old value, and add u to `lf`. TG_ERROR_OUT_OF_HOST_MEMORY if the log cannot grow. */
static inline tg_status sky_lift_record(sky *k, size_t u, uint64_t to, sky_lifted *lf) {
  uint64_t a;
  if (k->sp[u] >= to) return TG_OK;
  if (!tg__align_up(to, k->al[u], &a)) a = UINT64_MAX;
  tg_status st;
  if (k->trail_len == k->trail_cap && (st = sky_trail_grow(k)) != TG_OK) return st;
  k->trail_u[k->trail_len] = u;
  k->trail_sp[k->trail_len++] = k->sp[u];
  k->sp[u] = a;
  if (!lf->any || k->pf[u] < lf->lo) lf->lo = k->pf[u];
  if (!lf->any || k->pl[u] > lf->hi) lf->hi = k->pl[u];
  if (a > lf->top) lf->top = a;
  lf->any = 1;
  return TG_OK;
}

/* The points the lifted records cover need their lookahead again, unless nothing there can
 * fail (see sky_open; rem and the limit do not change before it runs). The lifted records
 * all meet one point (a raised floor) or the placed record's span, so their spans make one
 * run of points, each covered by one of them or by the placed record (whose floor is the
 * rise: every record over it has sp at least that): at each, the largest sp is at least the
 * rise, and `top` bounds it from above. One pass over the run instead of one per record (on
 * wide DAGs, a placed record lifts a hundred records of a dozen points each). */
static void sky_lifted_mark(sky *k, const sky_lifted *lf) {
  if (!lf->any) return;
  for (uint32_t q = lf->lo; q <= lf->hi; ++q) {
    if (k->sp_max[q] < lf->top) k->sp_max[q] = lf->top;
    if (tg__add_sat_u64(k->sp_max[q], k->rem[q]) > k->limit) sky_dirty(k, q);
  }
}

/* The floor at t rose to `to`: lift the unplaced records over t. */
static tg_status sky_lift(sky *k, size_t t, uint64_t to) {
  tg_status st = TG_OK;
  sky_lifted lf = {0, 0, 0, 0};
  for (size_t i = k->cv_beg[t]; i < k->cv_beg[t] + k->cnt[t] && st == TG_OK; ++i)
    st = sky_lift_record(k, k->cv_idx[i], to, &lf);
  sky_lifted_mark(k, &lf);
  return st;
}

static void sky_untrail(sky *k, size_t mark) {
  while (k->trail_len > mark) {
    --k->trail_len;
    k->sp[k->trail_u[k->trail_len]] = k->trail_sp[k->trail_len];
  }
}

/* Record c leaves the unplaced records over t: it is swapped past them; unplacing (last in,
 * first out) finds it right there, so restoring the count restores the set. */
static void sky_take(sky *k, size_t c, uint32_t t) {
  uint32_t *slot = &k->cv_where[k->cv_base[c] + (t - k->pf[c])];
  size_t last = k->cv_beg[t] + --k->cnt[t];
  uint32_t v = k->cv_idx[last];
  k->cv_idx[*slot] = v;
  k->cv_where[k->cv_base[v] + (t - k->pf[v])] = *slot;
  k->cv_idx[last] = (uint32_t)c;
  *slot = (uint32_t)last;
}

static tg_status sky_place(sky *k, size_t c, uint64_t f) {
  k->off[c] = f;
  k->placed[c] = 1;
  k->placed_count++;
  tg_status st = TG_OK;
  for (uint32_t t = k->pf[c]; t <= k->pl[c]; ++t) {
    k->floor[t] = f + k->vol[c];
    k->rem[t] -= k->vol[c];
    sky_take(k, c, t);
    sky_dirty(k, t);
  }
  seg_update(k, k->pf[c], k->pl[c]);
  /* The unplaced records meeting c's span: those over its first point, and those starting
   * at a later one (each visited once, not once per point it shares with c). */
  uint64_t to = f + k->vol[c];
  sky_lifted lf = {k->pf[c], k->pl[c], to, 1};
  const size_t t = k->pf[c];
  for (size_t i = k->cv_beg[t]; i < k->cv_beg[t] + k->cnt[t] && st == TG_OK; ++i)
    st = sky_lift_record(k, k->cv_idx[i], to, &lf);
  for (size_t i = k->st_beg[k->pf[c] + 1]; i < k->st_beg[k->pl[c] + 1] && st == TG_OK; ++i)
    if (!k->placed[k->st_idx[i]]) st = sky_lift_record(k, k->st_idx[i], to, &lf);
  sky_lifted_mark(k, &lf);
  return st;
}

static void sky_unplace(sky *k, size_t c, uint64_t f) {
  k->placed[c] = 0;
  k->placed_count--;
  for (uint32_t t = k->pf[c]; t <= k->pl[c]; ++t) {
    k->floor[t] = f;
    k->rem[t] += k->vol[c];
    k->cnt[t]++;
    if (k->sp_max[t] < k->sp[c]) k->sp_max[t] = k->sp[c];
  }
  seg_update(k, k->pf[c], k->pl[c]);
}

/* Case (B): the least offset the lowest unplaced record c over s can have when nothing sits at
 * (s, f); UINT64_MAX when none (or on overflow). In a gravity-compacted plan c sits at 0 or at
 * the aligned end of a record it conflicts with. If sp(c) > f that may be a placed record: c
 * goes at sp(c) or higher. Else every placed record it conflicts with ends at or below f, so
 * c rests on an unplaced record d that meets c's span but not s (d covering s would be lower
 * at s than c): at least sp(d) + size(d); with no such d, c cannot sit above f at all. */
static uint64_t sky_raise_to(const sky *k, size_t s, uint64_t f) {
  uint64_t best = UINT64_MAX;
  for (size_t i = k->cv_beg[s]; i < k->cv_beg[s] + k->cnt[s]; ++i) {
    size_t u = k->cv_idx[i];
    uint64_t lb = k->sp[u];
    if (lb <= f) {
      lb = UINT64_MAX;
      for (uint32_t t = k->pf[u]; t <= k->pl[u]; ++t) {
        if (t == s) continue;
        for (size_t j = k->cv_beg[t]; j < k->cv_beg[t] + k->cnt[t]; ++j) {
          size_t d = k->cv_idx[j];
          uint64_t top, a;
          if (k->pf[d] <= s && s <= k->pl[d]) continue;
          if (!tg__add_u64(k->sp[d], k->vol[d], &top) || !tg__align_up(top, k->al[u], &a))
            continue;
          if (a < lb) lb = a;
        }
      }
    }
    if (lb < best) best = lb;
  }
  return best;
}

static tg_status sky_push(sky *k, size_t depth) {
  if (depth - k->frame_base < k->frame_cap) return TG_OK;
  size_t cap = k->frame_cap ? k->frame_cap * 2 : 256, bytes;
  if (!tg__mul_size(cap, sizeof *k->frames, &bytes)) return TG_ERROR_OVERFLOW;
  sky_frame *f = tg__realloc(k->in->alloc, k->frames, k->frame_cap * sizeof *k->frames, bytes);
  if (f == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  k->frames = f;
  k->frame_cap = cap;
  return TG_OK;
}

static sky_frame *sky_at(sky *k, size_t depth) { return &k->frames[depth - k->frame_base]; }

static tg_status sky_pool_reserve(sky *k, size_t need) {
  if (need <= k->pool_cap) return TG_OK;
  size_t cap = k->pool_cap ? k->pool_cap : 1024, bytes;
  while (cap < need) cap *= 2;
  if (!tg__mul_size(cap, sizeof *k->pool, &bytes)) return TG_ERROR_OVERFLOW;
  size_t *p = tg__realloc(k->in->alloc, k->pool, k->pool_cap * sizeof *k->pool, bytes);
  if (p == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  k->pool = p;
  k->pool_cap = cap;
  return TG_OK;
}

/* 1 when u goes before v among the children: leftmost start, then the longest span (it
 * covers most of the step), then the largest, then index. (Measured on perfect packings
 * against largest-first, shortest-first and longest-anywhere: the most robust.) */
static int sky_child_before(const sky *k, size_t u, size_t v) {
  if (k->pf[u] != k->pf[v]) return k->pf[u] < k->pf[v];
  if (k->pl[u] != k->pl[v]) return k->pl[u] > k->pl[v];
  if (k->vol[u] != k->vol[v]) return k->vol[u] > k->vol[v];
  return u < v;
}

/* See search.h. Partitions around an sp value and checks the parts apart only where neither
 * test on the whole decides; the smaller part recursively (depth <= log2 m). */
int tg__skyline_fits_above(tg__sort_item *it, size_t m, uint64_t above, const uint64_t *vol,
                           uint64_t limit) {
  for (;;) {
    uint64_t mn = UINT64_MAX, mx = 0, tot = above, need;
    for (size_t i = 0; i < m; ++i) {
      if (it[i].key < mn) mn = it[i].key;
      if (it[i].key > mx) mx = it[i].key;
      tot += vol[it[i].idx]; /* <= rem at the point, which fits */
    }
    if (m == 0 || (tg__add_u64(mx, tot, &need) && need <= limit)) return 1;
    if (!tg__add_u64(mn, tot, &need) || need > limit) return 0;
    /* mn < mx here. The higher part: sp >= p, with p the middle item's sp (or mx). */
    uint64_t p = it[m / 2].key > mn ? it[m / 2].key : mx;
    size_t hi = 0;
    for (size_t i = 0; i < m; ++i)
      if (it[i].key >= p) {
        tg__sort_item x = it[i];
        it[i] = it[hi];
        it[hi++] = x;
      }
    uint64_t hi_sum = 0;
    for (size_t i = 0; i < hi; ++i) hi_sum += vol[it[i].idx];
    /* Two independent checks: the higher part under `above`, the lower one under that plus
     * the higher part. */
    if (hi <= m - hi) {
      if (!tg__skyline_fits_above(it, hi, above, vol, limit)) return 0;
      it += hi;
      m -= hi;
      above += hi_sum;
    } else {
      if (!tg__skyline_fits_above(it + hi, m - hi, above + hi_sum, vol, limit)) return 0;
      m = hi;
    }
  }
}

/* Open a node: the lowest skyline points and their candidates. Every unplaced record will go
 * at or above its skyline offset sp (the aligned highest floor over its span), so at each point
 * the lowest record still to come sits at least at the least sp over the records covering it:
 * that plus what is still to place there must stay within the limit (else `*leaf` = 2: dead).
 * Among the points with the lowest floor the one with the fewest candidates is branched on
 * (any of them is a valid choice: see case (A)). `*leaf` = 1 when everything is placed. */
static tg_status sky_open(sky *k, size_t depth, size_t pool_top, int *leaf) {
  *leaf = 0;
  if (k->placed_count == k->n) {
    *leaf = 1;
    return TG_OK;
  }
  sky_frame *fr = sky_at(k, depth);
  fr->cbeg = fr->cend = fr->next = pool_top;
  fr->raise_tried = 0;
  fr->applied = 0;
  /* The lookahead at the points that changed. */
  for (size_t i = 0; i < k->ndirty; ++i) {
    size_t t = k->dirty[i];
    if (k->cnt[t] == 0) continue;
    /* The unplaced records over t by sp descending: those at or above each sp value h all
     * go above h, so h plus their sizes S(h) must fit. Nothing can fail when the largest sp
     * does not (on wide DAGs, 99% of the points looked at): the bound sp_max tells without
     * reading the records. Nor can any h <= thr = limit - rem[t] (S(h) <= rem[t]): only the
     * records with sp above thr are kept and checked (tg__skyline_fits_above). */
    uint64_t need;
    if (tg__add_u64(k->sp_max[t], k->rem[t], &need) && need <= k->limit) continue;
    if (k->rem[t] > k->limit) {
      fr->raise_tried = 1;
      *leaf = 2;
      return TG_OK;
    }
    uint64_t thr = k->limit - k->rem[t], hi = 0;
    size_t m = 0;
    for (size_t j = k->cv_beg[t]; j < k->cv_beg[t] + k->cnt[t]; ++j) {
      size_t u = k->cv_idx[j];
      uint64_t x = k->sp[u];
      if (x > hi) hi = x;
      if (x > thr) k->sort_items[m++] = (tg__sort_item){x, u};
    }
    k->sp_max[t] = hi;
    if (!tg__skyline_fits_above(k->sort_items, m, 0, k->vol, k->limit)) {
      fr->raise_tried = 1;
      *leaf = 2;
      return TG_OK;
    }
  }
  uint64_t f = k->seg[1];
  /* Fail first: among the lowest points (the first scan_cap of them), the one with the fewest
   * candidates. */
  size_t s = SIZE_MAX, s_fit = SIZE_MAX, seen = 0;
  for (size_t t = seg_next(k, 0, f); t != SIZE_MAX && s_fit > 1 && seen < k->scan_cap;
       t = seg_next(k, t + 1, f), ++seen) {
    size_t fit = 0; /* counted up to s_fit only: a point with as many is not chosen */
    for (size_t j = k->cv_beg[t]; j < k->cv_beg[t] + k->cnt[t] && fit < s_fit; ++j) {
      size_t u = k->cv_idx[j];
      fit += k->sp[u] == f &&
             (k->twin[u] == SIZE_MAX || k->placed[k->twin[u]]);
    }
    if (fit < s_fit) {
      s = t;
      s_fit = fit;
    }
  }
  fr->s = s;
  fr->f = f;
  tg_status st = sky_pool_reserve(k, pool_top + s_fit);
  if (st != TG_OK) return st;
  for (size_t i = k->cv_beg[s]; i < k->cv_beg[s] + k->cnt[s]; ++i) {
    size_t u = k->cv_idx[i];
    uint64_t end;
    if (k->sp[u] != f) continue;
    if (k->twin[u] != SIZE_MAX && !k->placed[k->twin[u]]) continue;
    if (!tg__add_u64(f, k->vol[u], &end) || end > k->limit) continue;
    /* Insert by the children order: leftmost start, longest span, largest, index. */
    size_t j = fr->cend++;
    while (j > fr->cbeg) {
      size_t v = k->pool[j - 1];
      int later = sky_child_before(k, u, v);
      if (!later) break;
      k->pool[j] = v;
      --j;
    }
    k->pool[j] = u;
  }
  /* Restarts: the first child is drawn among the first three (1/2, 1/4, 1/4), the rest keep
   * their order. Any order keeps the tree complete. */
  size_t nc = fr->cend - fr->cbeg;
  if (k->shuffle && nc > 1) {
    uint64_t x = tg__rng_next(&k->rng) & 3;
    size_t pick = x < 2 ? 0 : (size_t)(x - 1);
    if (pick >= nc) pick = nc - 1;
    size_t u = k->pool[fr->cbeg + pick];
    memmove(k->pool + fr->cbeg + 1, k->pool + fr->cbeg, pick * sizeof *k->pool);
    k->pool[fr->cbeg] = u;
  }
  return TG_OK;
}

static void sky_report(sky *k, uint64_t now) {
  if (k->stats->progress == NULL) return;
  k->stats->elapsed_us = now - k->t0;
  k->stats->progress(k->stats->progress_user, k->stats);
}

/* A relaxing dive at `depth` (called when it is 2 x TG__SKY_COMMIT_DEPTH levels below the last
 * commit; frame `depth` is open, its trail mark not yet set) makes the frames more than
 * TG__SKY_COMMIT_DEPTH levels up final and drops them with their part of the undo log and of
 * the candidate pool (else a dive over many records would keep all of them). */
static void sky_commit(sky *k, size_t depth) {
  k->commit = depth - TG__SKY_COMMIT_DEPTH;
  size_t mark = sky_at(k, k->commit)->trail_mark, pmark = sky_at(k, k->commit)->cbeg;
  memmove(k->trail_u, k->trail_u + mark, (k->trail_len - mark) * sizeof *k->trail_u);
  memmove(k->trail_sp, k->trail_sp + mark, (k->trail_len - mark) * sizeof *k->trail_sp);
  k->trail_len -= mark;
  size_t pend = sky_at(k, depth)->cend;
  memmove(k->pool, k->pool + pmark, (pend - pmark) * sizeof *k->pool);
  for (size_t d = k->commit; d <= depth; ++d) {
    sky_frame *fr = sky_at(k, d);
    if (d < depth) fr->trail_mark -= mark;
    fr->cbeg -= pmark;
    fr->cend -= pmark;
    fr->next -= pmark;
  }
  memmove(k->frames, sky_at(k, k->commit), (depth - k->commit + 1) * sizeof *k->frames);
  k->frame_base = k->commit;
}

/* The records k->fix[] go at k->off before a run: the floors rise to their ends, and the others'
 * skyline offsets and sp_max follow. With no floor below a fixed record's end under any other
 * record, the cases (A) and (B) hold from there as from the empty plan: the run searches every
 * gravity-compacted placement of the others above the fixed ones. */
static void sky_fix(sky *k) {
  if (k->nfix == 0) return;
  for (size_t i = 0; i < k->nfix; ++i) {
    size_t c = k->fix[i];
    uint64_t end = k->off[c] + k->vol[c];
    k->placed[c] = 1;
    k->placed_count++;
    for (uint32_t t = k->pf[c]; t <= k->pl[c]; ++t) {
      if (k->floor[t] < end) k->floor[t] = end;
      k->rem[t] -= k->vol[c];
      sky_take(k, c, t); /* (sky_unfix restores) */
    }
  }
  for (size_t u = 0; u < k->n; ++u) {
    if (k->placed[u]) continue;
    uint64_t h = 0, a;
    for (uint32_t t = k->pf[u]; t <= k->pl[u]; ++t)
      if (k->floor[t] > h) h = k->floor[t];
    if (!tg__align_up(h, k->al[u], &a)) a = UINT64_MAX;
    k->sp[u] = a;
    for (uint32_t t = k->pf[u]; t <= k->pl[u]; ++t)
      if (k->sp_max[t] < a) k->sp_max[t] = a;
  }
}

/* Undo sky_fix, last in first out (which restores the coverage lists). */
static void sky_unfix(sky *k) {
  for (size_t i = k->nfix; i-- > 0;) {
    size_t c = k->fix[i];
    k->placed[c] = 0;
    k->placed_count--;
    for (uint32_t t = k->pf[c]; t <= k->pl[c]; ++t) {
      k->rem[t] += k->vol[c];
      k->cnt[t]++;
    }
  }
}

/* Depth-first search for plans with total <= limit; on each one found the limit drops below
 * it (so with limit = inc - 1 this is branch-and-bound). Stops at the deadline, the node cap,
 * or when `stop_at` (a total) is reached. Returns with k->stopped set if the tree was not
 * exhausted. The records k->fix[] (if any) stay at k->off. */
static tg_status sky_run_fixed(sky *k, uint64_t stop_at);
static tg_status sky_run(sky *k, uint64_t stop_at) {
  tg_status st = sky_run_fixed(k, stop_at);
  sky_unfix(k);
  return st;
}

static tg_status sky_run_fixed(sky *k, uint64_t stop_at) {
  tg_status st;
  k->stopped = 0;
  memset(k->floor, 0, k->points * sizeof *k->floor);
  memset(k->sp, 0, k->n * sizeof *k->sp);
  memset(k->sp_max, 0, k->points * sizeof *k->sp_max);
  sky_fix(k);
  seg_build(k);
  k->max_depth = 0;
  k->commit = 0;
  k->frame_base = 0;
  k->progress_at = k->stats->nodes;
  k->trail_len = 0;
  if ((st = sky_push(k, 0)) != TG_OK) return st;
  int leaf;
  k->gen++;
  k->ndirty = 0;
  for (size_t t = 0; t < k->points; ++t) sky_dirty(k, t);
  if ((st = sky_open(k, 0, 0, &leaf)) != TG_OK) return st;
  if (leaf == 1) { /* nothing to place */
    if (0 < k->inc) {
      k->inc = 0;
      k->found = 1;
    }
    return TG_OK;
  }
  if (leaf == 2) return TG_OK;
  size_t depth = 0;
  for (;;) {
    sky_frame *fr = sky_at(k, depth);
    if (fr->applied == 1) sky_unplace(k, fr->c, fr->f);
    else if (fr->applied == 2) {
      k->floor[fr->s] = fr->old;
      seg_update(k, fr->s, fr->s);
    }
    if (fr->applied) sky_untrail(k, fr->trail_mark);
    fr->applied = 0;
    if (k->stopped) {
      /* Unwound to the root, which restores the records' state for the next run; a relaxing
       * dive (one run) keeps the path it stopped on (tg__skyline_dive completes it). */
      if (k->relax_step > 0 || depth == 0) break;
      --depth;
      continue;
    }
    k->stats->nodes++;
    if ((k->stats->nodes & 255) == 0 || k->stats->nodes >= k->max_nodes) {
      uint64_t now = tg__now_us();
      if (now >= k->deadline || k->stats->nodes >= k->max_nodes) {
        k->stopped = 1;
        continue;
      }
      /* A relaxing dive that, at the depth it has reached after a tenth of its time, would need
       * more than its time to reach the last record gives up: the stages after it get the time
       * (on compiler traces it visits a few dozen nodes per ms, where wide DAGs see 600). */
      if (k->may_give_up && k->deadline > k->t0 && now - k->t0 > (k->deadline - k->t0) / 10 &&
          (now - k->t0) / (k->max_depth + 1) > (k->deadline - k->t0) / k->n) {
        k->stopped = k->gave_up = 1;
        continue;
      }
      if (now >= k->next_report) {
        k->next_report = now + 100000;
        sky_report(k, now);
      }
    }
    k->gen++;
    k->ndirty = 0;
    if (k->relax_step > 0 && k->stats->nodes - k->progress_at > TG__SKY_RELAX_NODES) {
      /* A dive stuck below the deepest node it reached: the dead end was made long before it
       * showed, and backing up through the unrelated decisions since then will not repair
       * it. Allow more room and try this node again. */
      if (k->limit >= k->relax_ceiling) { /* nothing better than the incumbent left */
        k->stopped = 1;
        continue;
      }
      k->limit = tg__add_sat_u64(k->limit, k->relax_step);
      if (k->limit > k->relax_ceiling) k->limit = k->relax_ceiling;
      k->progress_at = k->stats->nodes;
      if ((st = sky_open(k, depth, fr->cbeg, &leaf)) != TG_OK) return st;
      k->gen++;
      k->ndirty = 0;
    }
    fr->trail_mark = k->trail_len;
    if (fr->next < fr->cend) {
      size_t c = k->pool[fr->next++];
      uint64_t end = fr->f + k->vol[c];
      if (end > k->limit) continue;
      fr->applied = 1;
      fr->c = c;
      if ((st = sky_place(k, c, fr->f)) != TG_OK) return st;
    } else if (!fr->raise_tried) {
      fr->raise_tried = 1;
      uint64_t to = sky_raise_to(k, fr->s, fr->f), need;
      if (to == UINT64_MAX || !tg__add_u64(to, k->rem[fr->s], &need) || need > k->limit)
        continue;
      fr->old = k->floor[fr->s];
      k->floor[fr->s] = to;
      seg_update(k, fr->s, fr->s);
      fr->applied = 2;
      sky_dirty(k, fr->s);
      if ((st = sky_lift(k, fr->s, to)) != TG_OK) return st;
    } else if (k->relax_step > 0 && depth <= k->commit) {
      k->progress_at = 0; /* cannot back up into final frames: relax (next node) */
      continue;
    } else {
      if (depth == 0) break;
      --depth;
      continue;
    }
    size_t top = fr->cend;
    if ((st = sky_push(k, depth + 1)) != TG_OK) return st;
    fr = sky_at(k, depth);
    if ((st = sky_open(k, depth + 1, top, &leaf)) != TG_OK) return st;
    if (leaf == 2) continue;
    if (leaf == 1) {
      uint64_t total = 0;
      for (size_t u = 0; u < k->n; ++u)
        if (k->off[u] + k->vol[u] > total) total = k->off[u] + k->vol[u];
      if (total < k->inc) {
        k->inc = total;
        memcpy(k->inc_off, k->off, k->n * sizeof *k->off);
        k->found = 1;
        k->stats->total = total;
        if (total <= stop_at) k->stopped = 1;
        k->limit = total - 1;
      }
      continue;
    }
    if (++depth > k->max_depth) {
      k->max_depth = depth;
      k->progress_at = k->stats->nodes;
    }
    if (k->relax_step > 0 && depth - k->commit > 2 * TG__SKY_COMMIT_DEPTH) sky_commit(k, depth);
  }
  return TG_OK;
}

/* Neighbourhood steps (large-neighbourhood search) on the plan `cur` (total `*cur_total`),
 * until `*cur_total` reaches `lb`, the deadline or `node_end` nodes.
 *
 * Where the optimum is well above peak-live (capacity-tight sets of a few hundred large
 * buffers) the tree from the empty plan thrashes: a dead end near the top of the plan is undone
 * through every unrelated decision below it. A step keeps most of the plan and searches a small
 * tree: it takes a record r reaching the top, the records meeting a time window around it (r's
 * span widened by 1 to 8 points on each side) that end above a random level (10% to 95% of the
 * total), and every record above one of those that it meets in time, transitively. That set F
 * is closed upwards, so each record outside it (fixed) ends at or below every record of F it
 * meets: the fixed ones make the floors (sky_fix) and F's current places are one of the
 * placements the run searches. The run looks, within 20 nodes per record of F plus 200, for a
 * placement of F whose highest end is below F's current one; the first it finds is kept. The
 * total falls when the last record reaching it moves down. (Measured on capacity-tight sets of
 * 300-500 buffers at 1 s: plan / peak-live 1.043 -> 1.030 in the mean of five.) Every step is a
 * plan: the run places F only where the floors allow. */
static tg_status sky_steps(sky *k, uint64_t *cur, uint64_t *cur_total, uint64_t lb, uint64_t deadline,
                           uint64_t node_end) {
  const size_t n = k->n;
  const uint64_t inc = k->inc; /* the runs below use inc and found for themselves */
  const int found = k->found;
  const tg_allocator *a = k->in->alloc;
  unsigned char *in_f = tg__calloc(a, n ? n : 1, 1);
  size_t *q = tg__alloc_array(a, n ? n : 1, sizeof *q);
  size_t *fixed = tg__alloc_array(a, n ? n : 1, sizeof *fixed);
  tg_status st = TG_OK;
  if (in_f == NULL || q == NULL || fixed == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
  while (st == TG_OK && *cur_total > lb && k->stats->nodes < node_end && tg__now_us() < deadline) {
    size_t tops = 0;
    for (size_t u = 0; u < n; ++u)
      if (cur[u] + k->vol[u] == *cur_total) q[tops++] = u;
    const size_t r = q[tg__rng_below(&k->rng, tops)];
    const uint32_t w = (uint32_t)1 << tg__rng_below(&k->rng, 4);
    const uint32_t lo = k->pf[r] > w ? k->pf[r] - w : 0, hi = k->pl[r] + w;
    const uint64_t level = *cur_total / 1024 * (102 + tg__rng_below(&k->rng, 871));
    memset(in_f, 0, n);
    size_t m = 0;
    for (size_t u = 0; u < n; ++u)
      if ((k->pf[u] <= hi && lo <= k->pl[u] && cur[u] + k->vol[u] > level) || u == r) {
        in_f[u] = 1;
        q[m++] = u;
      }
    /* Closed upwards: the records meeting u's span are those over its first point and those
     * starting at a later one of it (all unplaced between runs: the lists are whole). */
    uint64_t visited = 0;
    for (size_t i = 0; i < m; ++i) {
      const size_t u = q[i];
      const uint64_t end = cur[u] + k->vol[u];
      const uint32_t t = k->pf[u];
      for (size_t j = k->cv_beg[t]; j < k->cv_beg[t + 1]; ++j) {
        size_t v = k->cv_idx[j];
        if (!in_f[v] && cur[v] >= end) in_f[v] = 1, q[m++] = v;
      }
      for (size_t j = k->st_beg[t + 1]; j < k->st_beg[k->pl[u] + 1]; ++j) {
        size_t v = k->st_idx[j];
        if (!in_f[v] && cur[v] >= end) in_f[v] = 1, q[m++] = v;
      }
      visited += (k->cv_beg[t + 1] - k->cv_beg[t]) + (k->st_beg[k->pl[u] + 1] - k->st_beg[t + 1]);
    }
    uint64_t top = 0;
    size_t nfix = 0;
    for (size_t u = 0; u < n; ++u) {
      k->off[u] = cur[u];
      if (!in_f[u]) fixed[nfix++] = u;
      else if (cur[u] + k->vol[u] > top) top = cur[u] + k->vol[u];
    }
    /* The set's scan counts as nodes (64 entries a node), so that work caps cover it. */
    k->stats->nodes += visited / 64 + 1;
    k->fix = fixed;
    k->nfix = nfix;
    k->limit = top - 1;
    k->inc = UINT64_MAX; /* the first placement found ends the run */
    k->found = 0;
    k->shuffle = 1;
    k->deadline = deadline;
    const uint64_t cap = 20 * (uint64_t)m + 200;
    k->max_nodes = k->stats->nodes >= node_end || node_end - k->stats->nodes < cap ? node_end : k->stats->nodes + cap;
    st = sky_run(k, UINT64_MAX);
    k->fix = NULL;
    k->nfix = 0;
    if (st == TG_OK && k->found) {
      uint64_t total = 0;
      memcpy(cur, k->inc_off, n * sizeof *cur);
      for (size_t u = 0; u < n; ++u)
        if (cur[u] + k->vol[u] > total) total = cur[u] + k->vol[u];
      *cur_total = total;
    }
  }
  tg__free(a, in_f);
  tg__free(a, q);
  tg__free(a, fixed);
  k->inc = inc;
  k->found = found;
  return st;
}

/* Half of what is left from `at` to `cap` (a deadline or a node count; UINT64_MAX: none). The
 * nodes counted may pass a cap by a few: then nothing is left, never a wrapped-around amount. */
static uint64_t halfway(uint64_t at, uint64_t cap) {
  return cap == UINT64_MAX ? cap : at + tg__sub_sat_u64(cap, at) / 2;
}

/* Luby's restart sequence 1 1 2 1 1 2 4 1 1 2 ... (i >= 1). */
static uint64_t luby(uint64_t i) {
  for (;;) {
    unsigned e = 1;
    while (e < 63 && ((uint64_t)1 << e) - 1 < i) ++e;
    if (((uint64_t)1 << e) - 1 == i || e == 63) return (uint64_t)1 << (e - 1);
    i -= ((uint64_t)1 << (e - 1)) - 1;
  }
}

/* Runs of sky_run under node caps following Luby's sequence (units of 4 nodes per record),
 * each run after the first with a seeded perturbation of the children order: dives that go
 * wrong early go wrong for long (heavy tails), and restarts cut those tails. Looks for plans
 * with total <= limit (then below each one found) and stops at `stop_at`, the deadline or
 * `node_end` nodes in all. `*exhausted`: a run ended without hitting its cap, so it searched
 * the whole tree: no plan with total <= k->limit exists. */
static tg_status sky_restarts(sky *k, uint64_t limit, uint64_t stop_at, uint64_t deadline,
                              uint64_t node_end, int single, int *exhausted) {
  *exhausted = 0;
  uint64_t unit = single ? UINT64_MAX : 4 * (uint64_t)k->n + 64;
  k->limit = limit;
  k->deadline = deadline;
  for (uint64_t run = 1;; ++run) {
    if (k->found && k->inc <= stop_at) break;
    if (tg__now_us() >= deadline || k->stats->nodes >= node_end) break;
    uint64_t run_cap;
    if (!tg__mul_u64(luby(run), unit, &run_cap)) run_cap = UINT64_MAX;
    k->max_nodes = node_end - k->stats->nodes < run_cap ? node_end : k->stats->nodes + run_cap;
    k->shuffle = run > 1 && !single;
    tg_status st = sky_run(k, stop_at);
    if (st != TG_OK) return st;
    if (!k->stopped) {
      *exhausted = 1;
      break;
    }
  }
  return TG_OK;
}

/* Copy the search's best plan into *best when it is smaller. */
static tg_status sky_adopt(const sky *k, tg_plan **best) {
  if (!k->found || k->inc >= (*best)->total) return TG_OK;
  const tg__plan_input *in = k->in;
  tg_plan *p = NULL;
  tg_status st = tg_plan_create(TG_MODE_OFFSETS, in->dims, in->count, 0, in->alloc, &p);
  if (st != TG_OK) return st;
  for (size_t u = 0; u < k->n; ++u) p->offset_of[k->rec[u]] = k->inc_off[u];
  if ((st = tg__plan_finish_offsets(in, p)) != TG_OK || p->total >= (*best)->total) {
    tg_plan_destroy(p);
    return st;
  }
  p->strategy = TG_STRATEGY_BEST;
  tg_plan_destroy(*best);
  *best = p;
  return TG_OK;
}

tg_status tg__skyline_improve(const tg__plan_input *in, uint64_t bound, tg__budget *b,
                              uint64_t per_unit, tg_plan **best, tg_exact_stats *stats) {
  uint64_t t0 = tg__now_us();
  stats->total = (*best)->total;
  if (stats->lower_bound < bound) stats->lower_bound = bound;
  if ((*best)->total <= stats->lower_bound) {
    stats->proved_optimal = 1;
    stats->lower_bound = (*best)->total;
    return TG_OK;
  }
  if (in->options->relation != NULL || in->count > TG__SKYLINE_MAX_RECORDS) return TG_OK;
  sky k;
  memset(&k, 0, sizeof k);
  k.stats = stats;
  k.t0 = t0;
  k.next_report = t0 + 100000;
  tg_status st = sky_init(&k, in, TG__SKYLINE_MAX_COVER(k.n), SIZE_MAX);
  if (st != TG_OK) {
    sky_free(&k, in->alloc);
    return st;
  }
  stats->searched = 1;
  const uint64_t end = tg__budget_deadline(b);
  /* A node costs about the length of the lists it scans: short lists buy more nodes a unit. */
  if (per_unit == 0) {
    per_unit = TG__SKYLINE_LIST_NODES_PER_UNIT / (k.mean_list ? k.mean_list : 1);
    if (per_unit < TG__SKYLINE_NODES_PER_UNIT) per_unit = TG__SKYLINE_NODES_PER_UNIT;
  }
  const uint64_t cap = tg__budget_count(b, per_unit);
  uint64_t start_nodes = stats->nodes;
  /* Phase 1 (a fifth of the nodes): a plan at the bound only. Phase 2 (a fifth): relaxed targets
   * between the proved lower bound and the incumbent - lb + gap/16, gap/4, gap/2 -, each for a
   * slice of the nodes; a plan found shrinks the gap and starts the ladder again, a target
   * whose tree is exhausted raises the lower bound. A tight target prunes far more than
   * "anything below the incumbent", so this finds good plans fast where they exist. Phase 3
   * (the rest): branch-and-bound below the incumbent, each plan found lowering the limit; a
   * run that exhausts its tree proves the incumbent optimal. (Where the bound is far below the
   * optimum - capacity-tight sets of a few hundred large buffers - only the third phase finds
   * plans: with three fifths of the nodes in phase 1, as before, the search in rounds stayed
   * several percent above what longer searches find.) Without a node cap the phases share the
   * time to the deadline in the same proportions. */
  k.inc = (*best)->total;
  k.rng.state = in->options->seed ^ 0x736B796C696E6521ull;
  uint64_t p1_end = end, p2_end = end;
  if (cap == UINT64_MAX && end != UINT64_MAX && end > t0) {
    p1_end = t0 + (end - t0) / 5;
    p2_end = t0 + (end - t0) / 5 * 2;
  }
  uint64_t p1_nodes = cap == UINT64_MAX ? UINT64_MAX : start_nodes + cap / 5;
  uint64_t p2_nodes = cap == UINT64_MAX ? UINT64_MAX : start_nodes + cap / 5 * 2;
  uint64_t all_nodes = cap == UINT64_MAX ? UINT64_MAX : start_nodes + cap;
  int exhausted = 0, proved = 0;
  /* Skip phase 1 when an earlier search proved more. */
  if (stats->lower_bound <= bound)
    st = sky_restarts(&k, bound, bound, p1_end, p1_nodes, 0, &exhausted);
  if (st == TG_OK && k.found) {
    proved = k.inc <= bound; /* at the bound */
  }
  if (st == TG_OK && !proved) {
    if (exhausted && stats->lower_bound <= bound) stats->lower_bound = bound + 1;
    uint64_t lb = stats->lower_bound;
    uint64_t slice = cap == UINT64_MAX ? 64 * (4 * (uint64_t)k.n + 64) : cap / 24 + 1;
    static const unsigned shifts[] = {4, 2, 1};
    for (size_t rung = 0; st == TG_OK && rung < 3 && k.inc - 1 > lb;) {
      uint64_t now = tg__now_us();
      if (now >= p2_end || stats->nodes >= p2_nodes) break;
      uint64_t target = lb + (k.inc - 1 - lb) / ((uint64_t)1 << shifts[rung]);
      uint64_t before = k.inc;
      uint64_t node_end = p2_nodes - stats->nodes < slice ? p2_nodes : stats->nodes + slice;
      st = sky_restarts(&k, target, lb, p2_end, node_end, 0, &exhausted);
      if (st == TG_OK && exhausted) {
        lb = k.limit + 1; /* no plan at or below the final limit */
        stats->lower_bound = lb;
        rung = 0;
      } else {
        rung = k.inc < before ? 0 : rung + 1;
      }
    }
    /* Phase 3: neighbourhood steps from the incumbent for half of what is left (sky_steps; not
     * without a limit, where they would never end), restarts for half of the rest, then one run
     * with what remains, which can exhaust a tree of that size (restarts cut a run before it
     * could, and rounds start them again from the shortest). */
    if (st == TG_OK && k.inc > lb && (end != UINT64_MAX || all_nodes != UINT64_MAX)) {
      uint64_t *cur = tg__alloc_array(in->alloc, k.n ? k.n : 1, sizeof *cur), total = 0;
      if (cur == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
      for (size_t u = 0; cur != NULL && u < k.n; ++u) {
        cur[u] = k.found ? k.inc_off[u] : (*best)->offset_of[k.rec[u]];
        if (cur[u] + k.vol[u] > total) total = cur[u] + k.vol[u];
      }
      if (st == TG_OK)
        st = sky_steps(&k, cur, &total, lb, halfway(tg__now_us(), end), halfway(stats->nodes, all_nodes));
      if (st == TG_OK && total < k.inc) {
        k.inc = total;
        memcpy(k.inc_off, cur, k.n * sizeof *cur);
        k.found = 1;
        k.stats->total = total;
      }
      tg__free(in->alloc, cur);
    }
    if (st == TG_OK && k.inc > lb) {
      st = sky_restarts(&k, k.inc - 1, lb, halfway(tg__now_us(), end), halfway(stats->nodes, all_nodes), 0,
                        &exhausted);
      if (st == TG_OK && !exhausted && k.inc > lb)
        st = sky_restarts(&k, k.inc - 1, lb, end, all_nodes, 1, &exhausted);
    }
    proved = st == TG_OK && (exhausted || (k.found && k.inc <= lb));
  }
  if (st == TG_OK) st = sky_adopt(&k, best);
  stats->total = (*best)->total;
  if (st == TG_OK && proved) {
    stats->proved_optimal = 1;
    stats->lower_bound = stats->total;
  }
  tg__budget_spend(b, stats->nodes - start_nodes, per_unit);
  sky_free(&k, in->alloc);
  return st;
}

/* A relaxing dive that stopped before placing everything: the records it placed stay where
 * they are, the others go by size, largest first, each in the smallest gap that holds it
 * (greedy-by-size's rule), which makes the partial dive a plan. */
static tg_status sky_complete(sky *k) {
  const tg__plan_input *in = k->in;
  if (tg__now_us() >= k->deadline) return TG_OK; /* stopped by the deadline: nothing to finish with */
  tg__sort_item *items = k->sort_items, *tmp = k->sort_tmp; /* the dive is over */
  size_t *order = tg__alloc_array(in->alloc, in->count ? in->count : 1, sizeof *order);
  tg__gap_index *ix = NULL;
  tg_status st = TG_OK;
  if (order == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  /* The index's slots in the order of the walk below (see tg__gap_index_create_ordered): the
   * placed records by offset (each goes at the end of the index's lists, which keep offset
   * order), then the others by size, then the empty records (never placed). */
  size_t m = 0, placed = 0;
  for (size_t u = 0; u < k->n; ++u)
    if (k->placed[u]) items[m++] = (tg__sort_item){k->off[u], u};
  tg__sort_items_stable(items, m, tmp);
  placed = m;
  for (size_t u = 0; u < k->n; ++u)
    if (!k->placed[u]) items[m++] = (tg__sort_item){UINT64_MAX - k->vol[u], u};
  tg__sort_items_stable(items + placed, m - placed, tmp);
  for (size_t i = 0; i < m; ++i) order[i] = k->rec[items[i].idx];
  for (size_t r = 0; r < in->count; ++r)
    if (in->volumes[r] == 0) order[m++] = r;
  if ((st = tg__gap_index_create_ordered(in, order, &ix)) != TG_OK) goto done;
  uint64_t total = 0;
  for (size_t i = 0; i < k->n; ++i) {
    size_t u = items[i].idx;
    uint64_t o = k->off[u], end;
    /* The dive's deadline (the call's): the partial plan is dropped. */
    if ((i & 255) == 255 && tg__now_us() >= k->deadline) goto done;
    if (i >= placed && (st = tg__gap_index_find(ix, i, TG_FIT_BEST, &o)) != TG_OK) goto done;
    if (!tg__add_u64(o, k->vol[u], &end)) {
      st = TG_ERROR_OVERFLOW;
      goto done;
    }
    k->off[u] = o;
    tg__gap_index_insert(ix, i, o);
    if (end > total) total = end;
  }
  if (total < k->inc) {
    k->inc = total;
    memcpy(k->inc_off, k->off, k->n * sizeof *k->off);
    k->found = 1;
  }
done:
  tg__gap_index_destroy(ix);
  tg__free(in->alloc, order);
  return st == TG_ERROR_OVERFLOW ? TG_OK : st; /* no plan from there */
}

tg_status tg__skyline_dive(const tg__plan_input *in, uint64_t bound, uint64_t step,
                           uint64_t deadline, uint64_t max_nodes, size_t max_list, uint64_t *nodes,
                           tg_plan **best) {
  if (nodes != NULL) *nodes = 0;
  if (in->options->relation != NULL || (*best)->total <= bound || step == 0) return TG_OK;
  tg_exact_stats stats;
  memset(&stats, 0, sizeof stats);
  sky k;
  memset(&k, 0, sizeof k);
  k.stats = &stats;
  k.t0 = tg__now_us();
  k.next_report = UINT64_MAX;
  /* Long-lived records over many points make each node cost thousands of steps: a dive there
   * would not finish in any budget worth giving it. */
  size_t max_cover = TG__SKYLINE_MAX_COVER(in->count);
  if (max_cover > TG__DIVE_MAX_COVER_PER_RECORD * in->count)
    max_cover = TG__DIVE_MAX_COVER_PER_RECORD * in->count;
  tg_status st = sky_init(&k, in, max_cover, max_list);
  if (st == TG_OK) {
    /* The first 16 lowest points at most: on thousands of points comparing all of them
     * costs more than it saves. */
    k.scan_cap = 16;
    k.inc = UINT64_MAX; /* take the first plan; sky_adopt keeps it only when smaller */
    k.limit = bound;
    k.relax_step = step;
    k.relax_ceiling = (*best)->total - 1; /* > bound (checked above) */
    k.deadline = deadline;
    k.max_nodes = max_nodes ? max_nodes : UINT64_MAX;
    k.may_give_up = 1;
    st = sky_run(&k, UINT64_MAX); /* stop at the first plan */
    if (st == TG_OK && !k.found && k.placed_count > 0 && !k.gave_up) st = sky_complete(&k);
  }
  if (st == TG_OK) st = sky_adopt(&k, best);
  if (nodes != NULL) *nodes = stats.nodes;
  sky_free(&k, in->alloc);
  return st;
}

tg_status tg__exact_order_improve(const tg__plan_input *in, uint64_t bound, tg__budget *budget,
                                  tg_plan **best, tg_exact_stats *stats) {
  uint64_t t0 = tg__now_us();
  stats->total = (*best)->total;
  if (stats->lower_bound < bound) stats->lower_bound = bound;
  if ((*best)->total <= stats->lower_bound) {
    stats->proved_optimal = 1;
    stats->lower_bound = (*best)->total;
    return TG_OK;
  }
  if (in->options->relation == NULL || in->count > TG_EXACT_MAX_RECORDS) return TG_OK;
  bb b;
  memset(&b, 0, sizeof b);
  b.in = in;
  b.stats = stats;
  b.bound = stats->lower_bound;
  b.t0 = t0;
  b.next_report = t0 + 100000;
  tg_status st = bb_init(&b, in);
  if (st != TG_OK) {
    bb_free(&b, in->alloc);
    return st;
  }
  stats->searched = 1;
  const uint64_t end = tg__budget_deadline(budget), start_nodes = stats->nodes;
  const uint64_t cap = tg__budget_count(budget, TG__EXACT_ORDER_NODES_PER_UNIT);
  const uint64_t all_nodes = cap == UINT64_MAX ? UINT64_MAX : tg__add_sat_u64(start_nodes, cap);
  /* Phase 1 (half the nodes, or without a cap half the time to the deadline): a plan at the
   * bound only. */
  b.inc = b.bound + 1;
  b.deadline = cap == UINT64_MAX && end != UINT64_MAX && end > t0 ? t0 + (end - t0) / 2 : end;
  b.max_nodes = cap == UINT64_MAX ? UINT64_MAX : start_nodes + cap / 2;
  dfs(&b, 0, 0, SIZE_MAX, 0);
  int proved = 0;
  if (b.found) {
    proved = 1;
  } else {
    if (!b.timed_out) stats->lower_bound = b.bound + 1;
    /* Phase 2: anything better than the incumbent. */
    b.inc = (*best)->total;
    b.timed_out = 0;
    b.deadline = end;
    b.max_nodes = all_nodes;
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
  tg__budget_spend(budget, stats->nodes - start_nodes, TG__EXACT_ORDER_NODES_PER_UNIT);
  bb_free(&b, in->alloc);
  return st;
}
