/* Large-neighbourhood search for big offsets inputs (serial relation).
 *
 * On tens of thousands of records one greedy pass costs milliseconds, so iterated greedy
 * (iterated.c) tries only a few dozen orders a second, and each re-places everything. The
 * arena's total is decided locally, though: by the records reaching the top, each among the
 * few records near it in time. So one gap index holds every record at its current offset, and
 * each step takes a record reaching the top (t), the records meeting a random time range
 * around it (4 to 256 starts on each side), keeps those ending above a random level (2% to
 * 100% of the total below it) and at most 64 / 128 / 256 of them (the highest ends, or the
 * largest, first; t always), and lifts this window out of the index. It places the window
 * again - largest first, sizes randomly weighted, or by current offset with first fit; t first
 * half the time - with every other record where it is, stopping as soon as a record would end
 * above the window's old top.
 * A step is kept when the window's highest end goes down, or stays and no more of its records
 * reach it (sideways steps let the search cross plateaus); otherwise the window goes back. The
 * total falls when the last record at the top moves down.
 *
 * Every step is valid by construction: the gap index sees every placed record a moved one
 * conflicts with. The assembled plan is finished (total recomputed) like any other, and tests
 * validate it.
 *
 * Determinism: steps are a function of the records, the options and the seed; the budget's
 * work decides how many are tried, unless its deadline comes first. */
#include <string.h>

#include "planner/strategies/objects_common.h"
#include "planner/strategies/offsets_common.h"
#include "planner/search/search.h"

typedef struct lns {
  const tg__plan_input *in;
  size_t n;
  uint64_t *off;         /* current offsets */
  uint64_t total;        /* current max(offset + size) */
  tg__gap_index *ix;     /* every record at its current offset */
  size_t *by_first;      /* records by first task (ties by index) */
  size_t *pos;           /* pos[r]: r's position in by_first */
  uint64_t *max_last;    /* max_last[i]: the latest last task among by_first[0..i] */
  size_t *tops;          /* records reaching `total` */
  size_t ntops;
  size_t *win;           /* the window of a step */
  size_t nwin;
  size_t *order;         /* its placement order */
  uint64_t *trial;       /* new offsets of its records (by record) */
  tg__sort_item *items, *tmp;
  void *mem;             /* the block all the arrays above are carved from */
  uint64_t deadline;     /* a step past it is undone (tg__now_us clock) */
} lns;

static void lns_layout(tg__arena *ar, size_t n, lns *s) {
  s->off = tg__arena_take(ar, n, sizeof *s->off);
  s->by_first = tg__arena_take(ar, n, sizeof *s->by_first);
  s->pos = tg__arena_take(ar, n, sizeof *s->pos);
  s->max_last = tg__arena_take(ar, n, sizeof *s->max_last);
  s->tops = tg__arena_take(ar, n, sizeof *s->tops);
  s->win = tg__arena_take(ar, n, sizeof *s->win);
  s->order = tg__arena_take(ar, n, sizeof *s->order);
  s->trial = tg__arena_take(ar, n, sizeof *s->trial);
  s->items = tg__arena_take(ar, n, sizeof *s->items);
  s->tmp = tg__arena_take(ar, n, sizeof *s->tmp);
}

static void lns_free(lns *s) {
  tg__gap_index_destroy(s->ix);
  tg__free(s->in->alloc, s->mem);
}

static tg_status lns_init(lns *s, const tg__plan_input *in, const tg_plan *start) {
  memset(s, 0, sizeof *s);
  s->in = in;
  size_t n = s->n = in->count;
  tg__arena ar = {NULL, 0, 0};
  lns_layout(&ar, n, s);
  if (ar.overflow || (s->mem = tg__malloc(in->alloc, ar.off)) == NULL)
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  ar = (tg__arena){s->mem, 0, 0};
  lns_layout(&ar, n, s);
  memcpy(s->off, start->offset_of, n * sizeof *s->off);
  s->total = start->total;
  for (size_t r = 0; r < n; ++r) s->items[r] = (tg__sort_item){in->records[r].first_task, r};
  tg__sort_items_stable(s->items, n, s->tmp);
  uint64_t m = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t r = s->items[i].idx;
    s->by_first[i] = r;
    s->pos[r] = i;
    if (in->records[r].last_task > m || i == 0) m = in->records[r].last_task;
    s->max_last[i] = m;
  }
  tg_status st = tg__gap_index_create(in, &s->ix);
  if (st != TG_OK) return st;
  /* In offset order: each insertion then lands at the end of its lists. */
  for (size_t r = 0; r < n; ++r) s->items[r] = (tg__sort_item){s->off[r], r};
  tg__sort_items_stable(s->items, n, s->tmp);
  for (size_t i = 0; i < n; ++i) tg__gap_index_insert(s->ix, s->items[i].idx, s->off[s->items[i].idx]);
  return TG_OK;
}

/* The records reaching the current total. */
static void lns_find_tops(lns *s) {
  s->ntops = 0;
  for (size_t r = 0; r < s->n; ++r)
    if (s->off[r] + s->in->volumes[r] == s->total) s->tops[s->ntops++] = r;
}

/* Records meeting [a, b] in time, appended to out[k..]: those with first task <= b, scanned
 * from the latest while an earlier one can still reach a. */
static size_t collect(const lns *s, uint64_t a, uint64_t b, size_t *out, size_t k) {
  const tg_usage_record *rec = s->in->records;
  size_t lo = 0, hi = s->n; /* the end of the records with first task <= b */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (rec[s->by_first[mid]].first_task <= b) lo = mid + 1;
    else hi = mid;
  }
  for (size_t i = lo; i-- > 0;) {
    if (s->max_last[i] < a) break;
    size_t r = s->by_first[i];
    if (rec[r].last_task >= a) out[k++] = r;
  }
  return k;
}

/* One step around top record t; *kept = 1 when it was kept. */
static tg_status lns_step(lns *s, tg__rng *g, size_t t, int *kept) {
  const tg__plan_input *in = s->in;
  const tg_usage_record *rec = in->records;
  const uint64_t *vol = in->volumes;
  *kept = 0;
  /* The window: records meeting a range spanning a random number of starts around t... */
  size_t span = (size_t)4 << tg__rng_below(g, 7); /* 4 .. 256 starts on each side */
  size_t p = s->pos[t];
  size_t pa = p > span ? p - span : 0, pb = p + span < s->n ? p + span : s->n - 1;
  uint64_t a = rec[s->by_first[pa]].first_task;
  uint64_t b = rec[s->by_first[pb]].first_task;
  if (b < rec[t].last_task) b = rec[t].last_task;
  size_t nw = collect(s, a, b, s->win, 0);
  /* ...of which only those ending above a random level move: the top layer... */
  static const unsigned k_depth[6] = {2, 5, 10, 20, 40, 100}; /* percent of the total */
  uint64_t depth = s->total / 100 * k_depth[tg__rng_below(g, 6)];
  uint64_t level = s->total > depth ? s->total - depth : 0;
  size_t keep = 0;
  for (size_t i = 0; i < nw; ++i) {
    size_t r = s->win[i];
    if (s->off[r] + vol[r] > level || r == t) s->win[keep++] = r;
  }
  nw = keep;
  /* ...and at most `cap` of them, the highest ends or the largest first (t always):
   * long-lived records would otherwise make windows of thousands. */
  size_t cap = (size_t)64 << tg__rng_below(g, 3);
  if (nw > cap) {
    int by_size = (int)tg__rng_below(g, 2);
    for (size_t i = 0; i < nw; ++i) {
      size_t r = s->win[i];
      uint64_t key = by_size ? vol[r] : s->off[r] + vol[r];
      s->items[i] = (tg__sort_item){r == t ? 0 : UINT64_MAX - key, r};
    }
    tg__sort_items_stable(s->items, nw, s->tmp);
    for (size_t i = 0; i < cap; ++i) s->win[i] = s->items[i].idx;
    nw = cap;
  }
  uint64_t old_top = 0;
  for (size_t i = 0; i < nw; ++i)
    if (s->off[s->win[i]] + vol[s->win[i]] > old_top) old_top = s->off[s->win[i]] + vol[s->win[i]];
  size_t old_at_top = 0;
  for (size_t i = 0; i < nw; ++i) old_at_top += s->off[s->win[i]] + vol[s->win[i]] == old_top;

  /* The order: largest first (kind 0), sizes randomly weighted (1), or the current offsets
   * ascending (2), each with the top record moved to the front half the time. */
  unsigned kind = (unsigned)tg__rng_below(g, 3);
  int t_first = (int)tg__rng_below(g, 2);
  for (size_t i = 0; i < nw; ++i) {
    size_t r = s->win[i];
    uint64_t v = vol[r];
    if (kind == 2) {
      v = UINT64_MAX - s->off[r];
    } else if (kind == 1) {
      uint64_t w = 32 + tg__rng_below(g, 65); /* x 0.5 .. 1.5 */
      v = v > UINT64_MAX / 96 ? v : v / 64 * w;
    }
    s->items[i] = (tg__sort_item){UINT64_MAX - v, r};
  }
  tg__sort_items_stable(s->items, nw, s->tmp);
  size_t k = 0;
  if (t_first) s->order[k++] = t;
  for (size_t i = 0; i < nw; ++i)
    if (!t_first || s->items[i].idx != t) s->order[k++] = s->items[i].idx;
  tg_fit fit = kind == 2 || tg__rng_below(g, 2) ? TG_FIT_FIRST : TG_FIT_BEST;

  /* Lift the window out of the index and place it again, stopping as soon as a record would
   * end above the window's old top. */
  for (size_t i = 0; i < nw; ++i) tg__gap_index_remove(s->ix, s->win[i], s->off[s->win[i]]);
  uint64_t new_top = 0;
  size_t placed = 0;
  tg_status st = TG_OK;
  for (; placed < nw; ++placed) {
    size_t r = s->order[placed];
    uint64_t o, end;
    /* A find can cost milliseconds (a long-lived record meets every gap of its lifetime):
     * past the deadline the step is undone rather than finished (one step took 300 ms on
     * 60k-record compiler traces). */
    if (tg__now_us() >= s->deadline) break;
    st = tg__gap_index_find(s->ix, r, fit, &o);
    if (st == TG_ERROR_OVERFLOW || (st == TG_OK && !tg__add_u64(o, vol[r], &end))) {
      st = TG_OK;
      break;
    }
    if (st != TG_OK || end > old_top) break;
    if (end > new_top) new_top = end;
    s->trial[r] = o;
    tg__gap_index_insert(s->ix, r, o);
  }
  size_t new_at_top = 0;
  if (placed == nw)
    for (size_t i = 0; i < nw; ++i) new_at_top += s->trial[s->win[i]] + vol[s->win[i]] == old_top;
  if (placed == nw && (new_top < old_top || new_at_top <= old_at_top)) {
    for (size_t i = 0; i < nw; ++i) s->off[s->win[i]] = s->trial[s->win[i]];
    s->nwin = nw;
    *kept = 1;
    return TG_OK;
  }
  /* Not kept: back to where they were. */
  for (size_t i = 0; i < placed; ++i) tg__gap_index_remove(s->ix, s->order[i], s->trial[s->order[i]]);
  for (size_t i = 0; i < nw; ++i) tg__gap_index_insert(s->ix, s->win[i], s->off[s->win[i]]);
  return st;
}

tg_status tg__search_offsets_lns(const tg__plan_input *in, uint64_t bound, tg__budget *b,
                                 uint64_t stall_steps, uint64_t *setup_us, tg_plan **best) {
  uint64_t t0 = tg__now_us();
  if (in->count < 2 || in->options->relation != NULL || (*best)->total <= bound) return TG_OK;
  const uint64_t deadline = tg__budget_deadline(b), max_iters = tg__budget_count(b, TG__LNS_STEPS_PER_UNIT);
  uint64_t it = 0;
  lns s;
  tg_status st = lns_init(&s, in, *best);
  if (st != TG_OK) goto done;
  if (setup_us != NULL) *setup_us = tg__now_us() - t0;
  s.deadline = deadline;
  tg__rng g = {in->options->seed ^ 0x6C6E735F73656172ull};
  lns_find_tops(&s);
  int improved = 0;
  uint64_t last_gain = 0; /* the step that last lowered the total */
  for (; it < max_iters && s.total > bound && s.ntops > 0; ++it) {
    /* Every step: on inputs with long-lived records a window holds thousands of records. */
    if (tg__now_us() >= deadline) break;
    if (stall_steps != 0 && it - last_gain > stall_steps) break;
    size_t t = s.tops[tg__rng_below(&g, s.ntops)];
    int kept = 0;
    if ((st = lns_step(&s, &g, t, &kept)) != TG_OK) goto done;
    if (!kept) continue;
    /* Only the window moved, and no higher than the total: update the top records from it
     * (all of them again when many reach the top or none is left). */
    size_t k = 0;
    for (size_t i = 0; i < s.ntops; ++i)
      if (s.off[s.tops[i]] + in->volumes[s.tops[i]] == s.total) s.tops[k++] = s.tops[i];
    for (size_t i = 0; i < s.nwin && k <= 64; ++i) {
      size_t r = s.win[i], j = 0;
      if (s.off[r] + in->volumes[r] != s.total) continue;
      while (j < k && s.tops[j] != r) ++j;
      if (j == k) s.tops[k++] = r;
    }
    s.ntops = k;
    if (k == 0 || k > 64) {
      uint64_t top = 0;
      for (size_t r = 0; r < s.n; ++r)
        if (s.off[r] + in->volumes[r] > top) top = s.off[r] + in->volumes[r];
      if (top < s.total) {
        improved = 1;
        last_gain = it;
      }
      s.total = top;
      lns_find_tops(&s);
    }
  }
  if (improved) {
    tg_plan *p = NULL;
    if ((st = tg_plan_create(TG_MODE_OFFSETS, in->dims, in->count, 0, in->alloc, &p)) != TG_OK)
      goto done;
    memcpy(p->offset_of, s.off, in->count * sizeof *s.off);
    if ((st = tg__plan_finish_offsets(in, p)) != TG_OK || p->total >= (*best)->total) {
      tg_plan_destroy(p);
      goto done;
    }
    p->strategy = TG_STRATEGY_BEST;
    p->fit = (*best)->fit;
    tg_plan_destroy(*best);
    *best = p;
  }
done:
  tg__budget_spend(b, it, TG__LNS_STEPS_PER_UNIT);
  lns_free(&s);
  return st;
}
