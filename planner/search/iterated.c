/* Improvement search: iterated greedy over the placement order.
 *
 * Every greedy strategy is an order plus a placement rule. The search keeps an order, perturbs
 * it (move a record earlier, swap two near records, switch the placement rule), re-runs the
 * placement and keeps the new order when the total is no worse (accepting equal totals lets
 * it drift across plateaus). The best plan seen is kept, so the result is never worse than
 * the greedy plan it starts from.
 *
 * Offsets mode starts from the incumbent's own layout: ordering the records by their offsets
 * and placing each at the lowest address that fits (first fit) gives every record an offset no
 * higher than before (by induction over that order: the records placed earlier sit no higher
 * than they did, so each record's old place is still free). The moves that pay most take a
 * record that reaches the top of the arena and place it earlier.
 *
 * Objects mode starts from records by decreasing volume; each record joins the compatible
 * object it grows the least (ties: the smallest result, then the lowest id), or opens a new one
 * when that is no cheaper.
 *
 * Determinism: the candidates are a function of the records, the options and the seed; the
 * budget's work decides how many are tried, unless its deadline comes first. */
#include <string.h>

#include "planner/strategies/offsets_common.h"
#include "planner/search/search.h"

tg_status tg__search_bound(const tg__plan_input *in, uint64_t *bound) {
  if (in->options->mode == TG_MODE_OFFSETS) return tg__peak_live(in, bound);
  tg_bounds b;
  tg_status st = tg_bounds_compute(in->records, in->count, in->dims, in->alloc, &b);
  if (st != TG_OK) return st;
  *bound = b.positional_max;
  return TG_OK;
}

/* ---- shared order moves ------------------------------------------------------------------ */

typedef struct order_move {
  int kind; /* 0 none, 1 moved from `from` to `to` (to < from), 2 swapped a and b */
  size_t from, to;
} order_move;

static void move_earlier(size_t *order, size_t from, size_t to) {
  size_t r = order[from];
  memmove(order + to + 1, order + to, (from - to) * sizeof *order);
  order[to] = r;
}

static void move_later(size_t *order, size_t from, size_t to) {
  size_t r = order[from];
  memmove(order + from, order + from + 1, (to - from) * sizeof *order);
  order[to] = r;
}

static void undo_move(size_t *order, const order_move *m) {
  if (m->kind == 1) {
    move_later(order, m->to, m->from);
  } else if (m->kind == 2) {
    size_t t = order[m->from];
    order[m->from] = order[m->to];
    order[m->to] = t;
  }
}

/* Move position `p` earlier: half the time near (within 16), else anywhere before. */
static order_move random_promote(tg__rng *g, size_t *order, size_t p) {
  order_move m = {0, 0, 0};
  if (p == 0) return m;
  size_t to;
  if (tg__rng_next(g) & 1) {
    size_t w = p < 16 ? p : 16;
    to = p - 1 - tg__rng_below(g, w);
  } else {
    to = tg__rng_below(g, p);
  }
  move_earlier(order, p, to);
  m.kind = 1;
  m.from = p;
  m.to = to;
  return m;
}

static order_move random_swap(tg__rng *g, size_t *order, size_t n) {
  order_move m = {0, 0, 0};
  if (n < 2) return m;
  size_t a = tg__rng_below(g, n - 1);
  size_t span = n - 1 - a < 8 ? n - 1 - a : 8;
  size_t b = a + 1 + tg__rng_below(g, span);
  size_t t = order[a];
  order[a] = order[b];
  order[b] = t;
  m.kind = 2;
  m.from = a;
  m.to = b;
  return m;
}

/* ---- offsets mode ------------------------------------------------------------------------ */

/* Place records in `order` with the gap index; UINT64_MAX total when the layout overflows. */
static tg_status place_offsets(const tg__plan_input *in, const size_t *order, tg_fit fit,
                               uint64_t *off, uint64_t *total) {
  tg__gap_index *ix = NULL;
  tg_status st = tg__gap_index_create(in, &ix);
  if (st != TG_OK) return st;
  uint64_t top = 0;
  for (size_t i = 0; i < in->count; ++i) {
    size_t r = order[i];
    uint64_t o, end;
    st = tg__gap_index_find(ix, r, fit, &o);
    if (st == TG_ERROR_OVERFLOW || (st == TG_OK && !tg__add_u64(o, in->volumes[r], &end))) {
      top = UINT64_MAX;
      st = TG_OK;
      break;
    }
    if (st != TG_OK) break;
    off[r] = o;
    if (end > top) top = end;
    tg__gap_index_insert(ix, r, o);
  }
  tg__gap_index_destroy(ix);
  *total = top;
  return st;
}

static tg_status search_offsets(const tg__plan_input *in, uint64_t bound, tg__budget *b,
                                tg_plan **best) {
  size_t n = in->count;
  const uint64_t per_unit = n < TG__SEARCH_ITER_RECORDS_PER_UNIT ? TG__SEARCH_ITER_RECORDS_PER_UNIT / n : 1;
  const uint64_t deadline = tg__budget_deadline(b), max_iters = tg__budget_count(b, per_unit);
  uint64_t it = 0;
  tg_status st = TG_OK;
  size_t *order = tg__alloc_array(in->alloc, n, sizeof *order);
  uint64_t *cur = tg__alloc_array(in->alloc, n, sizeof *cur);
  uint64_t *trial = tg__alloc_array(in->alloc, n, sizeof *trial);
  uint64_t *keep = tg__alloc_array(in->alloc, n, sizeof *keep);
  size_t *crit = tg__alloc_array(in->alloc, n, sizeof *crit);
  tg__sort_item *items = tg__alloc_array(in->alloc, n, sizeof *items);
  tg__sort_item *tmp = tg__alloc_array(in->alloc, n, sizeof *tmp);
  if (!order || !cur || !trial || !keep || !crit || !items || !tmp) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  /* Start: the incumbent's offsets ascending, ties by volume descending, then index. */
  for (size_t r = 0; r < n; ++r) items[r] = (tg__sort_item){UINT64_MAX - in->volumes[r], r};
  tg__sort_items_stable(items, n, tmp);
  for (size_t i = 0; i < n; ++i) items[i].key = (*best)->offset_of[items[i].idx];
  tg__sort_items_stable(items, n, tmp);
  for (size_t i = 0; i < n; ++i) order[i] = items[i].idx;

  tg_fit fit = TG_FIT_FIRST;
  uint64_t cur_total;
  if ((st = place_offsets(in, order, fit, cur, &cur_total)) != TG_OK) goto done;
  uint64_t best_total = (*best)->total;
  int improved = 0;
  if (cur_total < best_total) {
    best_total = cur_total;
    memcpy(keep, cur, n * sizeof *keep);
    improved = 1;
  }
  /* Other starting orders, each with both fits: longest-lived first and largest area
   * (size x lifetime) first. Tall-and-long records are the hardest to fit late. */
  for (int key = 0; key < 2 && tg__now_us() < deadline; ++key) {
    for (size_t r = 0; r < n; ++r) {
      const tg_usage_record *rec = &in->records[r];
      uint64_t len = (uint64_t)rec->last_task - rec->first_task + 1, area;
      if (!tg__mul_u64(len, in->volumes[r], &area)) area = UINT64_MAX;
      items[r] = (tg__sort_item){UINT64_MAX - (key == 0 ? len : area), r};
    }
    tg__sort_items_stable(items, n, tmp);
    for (size_t i = 0; i < n; ++i) crit[i] = items[i].idx;
    for (int f = 0; f < 2 && tg__now_us() < deadline; ++f) {
      tg_fit ff = f ? TG_FIT_BEST : TG_FIT_FIRST;
      uint64_t t;
      if ((st = place_offsets(in, crit, ff, trial, &t)) != TG_OK) goto done;
      if (t < cur_total) {
        uint64_t *sw = cur;
        cur = trial;
        trial = sw;
        cur_total = t;
        fit = ff;
        memcpy(order, crit, n * sizeof *order);
        if (t < best_total) {
          best_total = t;
          memcpy(keep, cur, n * sizeof *keep);
          improved = 1;
        }
      }
    }
  }
  tg__rng g = {in->options->seed ^ 0x7A6E6772616D6F66ull};
  for (; it < max_iters && best_total > bound; ++it) {
    if (tg__now_us() >= deadline) break;
    unsigned u = (unsigned)tg__rng_below(&g, 100);
    order_move m = {0, 0, 0};
    tg_fit old_fit = fit;
    if (u < 60 && cur_total != UINT64_MAX) {
      /* A record reaching the top of the arena, placed earlier. */
      size_t nc = 0;
      for (size_t i = 0; i < n; ++i) {
        size_t r = order[i];
        if (cur[r] + in->volumes[r] == cur_total) crit[nc++] = i;
      }
      if (nc > 0) m = random_promote(&g, order, crit[tg__rng_below(&g, nc)]);
    } else if (u < 97) {
      m = random_swap(&g, order, n);
    } else {
      fit = fit == TG_FIT_FIRST ? TG_FIT_BEST : TG_FIT_FIRST;
    }
    if (m.kind == 0 && fit == old_fit) continue;
    uint64_t t;
    if ((st = place_offsets(in, order, fit, trial, &t)) != TG_OK) goto done;
    if (t <= cur_total) {
      uint64_t *sw = cur;
      cur = trial;
      trial = sw;
      cur_total = t;
      if (t < best_total) {
        best_total = t;
        memcpy(keep, cur, n * sizeof *keep);
        improved = 1;
      }
    } else {
      undo_move(order, &m);
      fit = old_fit;
    }
  }
  if (improved) {
    tg_plan *p = NULL;
    if ((st = tg_plan_create(TG_MODE_OFFSETS, in->dims, n, 0, in->alloc, &p)) != TG_OK) goto done;
    memcpy(p->offset_of, keep, n * sizeof *keep);
    if ((st = tg__plan_finish_offsets(in, p)) != TG_OK || p->total >= (*best)->total) {
      tg_plan_destroy(p);
      goto done;
    }
    p->strategy = TG_STRATEGY_BEST;
    p->fit = fit;
    tg_plan_destroy(*best);
    *best = p;
  }
done:
  tg__budget_spend(b, it, per_unit);
  tg__free(in->alloc, order);
  tg__free(in->alloc, cur);
  tg__free(in->alloc, trial);
  tg__free(in->alloc, keep);
  tg__free(in->alloc, crit);
  tg__free(in->alloc, items);
  tg__free(in->alloc, tmp);
  return st;
}

/* ---- objects mode ------------------------------------------------------------------------ */

/* An object under construction: its extent and its records (serial: sorted by first task;
 * their intervals are disjoint, so also by last task). */
typedef struct obj_slot {
  tg_extent ext;
  uint64_t vol;
  size_t *members;
  size_t len, cap;
} obj_slot;

typedef struct obj_state {
  const tg__plan_input *in;
  obj_slot *objs;
  size_t count; /* objects in use */
  uint32_t *object_of;
} obj_state;

/* Position in `o` where record r would go (members before it start earlier). */
static size_t member_pos(const obj_state *s, const obj_slot *o, size_t r) {
  uint32_t f = s->in->records[r].first_task;
  size_t lo = 0, hi = o->len;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->in->records[o->members[mid]].first_task < f) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static int object_accepts(const obj_state *s, const obj_slot *o, size_t r) {
  const tg__plan_input *in = s->in;
  if (in->options->relation != NULL) {
    for (size_t i = 0; i < o->len; ++i)
      if (tg__records_conflict(in, o->members[i], r)) return 0;
    return 1;
  }
  /* Disjoint sorted intervals: only the neighbours in first-task order can intersect r. */
  size_t p = member_pos(s, o, r);
  const tg_usage_record *rec = &in->records[r];
  if (p < o->len && in->records[o->members[p]].first_task <= rec->last_task) return 0;
  if (p > 0 && in->records[o->members[p - 1]].last_task >= rec->first_task) return 0;
  return 1;
}

static tg_status object_add(obj_state *s, size_t k, size_t r) {
  obj_slot *o = &s->objs[k];
  if (o->len == o->cap) {
    size_t cap = o->cap ? o->cap * 2 : 4, bytes;
    if (!tg__mul_size(cap, sizeof *o->members, &bytes)) return TG_ERROR_OVERFLOW;
    size_t *m = tg__realloc(s->in->alloc, o->members, o->cap * sizeof *o->members, bytes);
    if (m == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    o->members = m;
    o->cap = cap;
  }
  size_t p = s->in->options->relation ? o->len : member_pos(s, o, r);
  memmove(o->members + p + 1, o->members + p, (o->len - p) * sizeof *o->members);
  o->members[p] = r;
  o->len++;
  const tg_extent *e = &s->in->records[r].size;
  if (e->w > o->ext.w) o->ext.w = e->w;
  if (e->h > o->ext.h) o->ext.h = e->h;
  if (e->d > o->ext.d) o->ext.d = e->d;
  (void)tg_extent_volume(o->ext, &o->vol); /* <= the caller's checked grown volume */
  s->object_of[r] = (uint32_t)k;
  return TG_OK;
}

/* Assign records in `order`; *total = sum of object volumes (UINT64_MAX on overflow).
 * TG_ERROR_TIMEOUT when `deadline` passes first (checked every 1024 records). */
static tg_status place_objects(obj_state *s, const size_t *order, uint64_t deadline, uint64_t *total) {
  const tg__plan_input *in = s->in;
  for (size_t k = 0; k < s->count; ++k) {
    s->objs[k].len = 0;
    s->objs[k].ext = (tg_extent){0, 0, 0};
    s->objs[k].vol = 0;
  }
  s->count = 0;
  uint64_t sum = 0;
  for (size_t i = 0; i < in->count; ++i) {
    if ((i & 1023) == 1023 && tg__now_us() >= deadline) return TG_ERROR_TIMEOUT;
    size_t r = order[i];
    const tg_extent *e = &in->records[r].size;
    size_t pick = SIZE_MAX;
    uint64_t pick_cost = in->volumes[r], pick_vol = in->volumes[r];
    for (size_t k = 0; k < s->count; ++k) {
      const obj_slot *o = &s->objs[k];
      tg_extent g = {e->w > o->ext.w ? e->w : o->ext.w, e->h > o->ext.h ? e->h : o->ext.h,
                     e->d > o->ext.d ? e->d : o->ext.d};
      uint64_t gv;
      if (tg_extent_volume(g, &gv) != TG_OK) continue;
      uint64_t cost = gv - o->vol;
      /* Cheaper first, then the smaller result; a full tie with "new object" reuses. */
      int better = cost < pick_cost || (cost == pick_cost && gv < pick_vol) ||
                   (cost == pick_cost && gv == pick_vol && pick == SIZE_MAX);
      if (!better) continue;
      if (!object_accepts(s, o, r)) continue;
      pick = k;
      pick_cost = cost;
      pick_vol = gv;
    }
    if (pick == SIZE_MAX) pick = s->count++;
    uint64_t before = s->objs[pick].vol;
    tg_status st = object_add(s, pick, r);
    if (st != TG_OK) return st;
    if (!tg__add_u64(sum - before, s->objs[pick].vol, &sum)) {
      *total = UINT64_MAX;
      return TG_OK;
    }
  }
  *total = sum;
  return TG_OK;
}

static tg_status search_objects(const tg__plan_input *in, uint64_t bound, tg__budget *b,
                                tg_plan **best) {
  size_t n = in->count;
  uint64_t tests = (uint64_t)n * ((*best)->object_count ? (*best)->object_count : 1);
  const uint64_t per_unit = tests < TG__SEARCH_ITER_TESTS_PER_UNIT ? TG__SEARCH_ITER_TESTS_PER_UNIT / tests : 1;
  const uint64_t deadline = tg__budget_deadline(b), max_iters = tg__budget_count(b, per_unit);
  uint64_t it = 0;
  tg_status st = TG_OK;
  if (n >= (size_t)UINT32_MAX) return TG_OK;
  obj_state s = {in, NULL, 0, NULL};
  size_t *order = tg__alloc_array(in->alloc, n, sizeof *order);
  uint32_t *keep = tg__alloc_array(in->alloc, n, sizeof *keep);
  tg__sort_item *items = tg__alloc_array(in->alloc, n, sizeof *items);
  tg__sort_item *tmp = tg__alloc_array(in->alloc, n, sizeof *tmp);
  s.objs = tg__calloc(in->alloc, n, sizeof *s.objs);
  s.object_of = tg__alloc_array(in->alloc, n, sizeof *s.object_of);
  size_t keep_count = 0;
  if (!order || !keep || !items || !tmp || !s.objs || !s.object_of) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  for (size_t r = 0; r < n; ++r) items[r] = (tg__sort_item){UINT64_MAX - in->volumes[r], r};
  tg__sort_items_stable(items, n, tmp);
  for (size_t i = 0; i < n; ++i) order[i] = items[i].idx;
  uint64_t cur_total, best_total = (*best)->total;
  int improved = 0;
  if ((st = place_objects(&s, order, deadline, &cur_total)) != TG_OK) {
    if (st == TG_ERROR_TIMEOUT) st = TG_OK; /* out of time: the incumbent stays */
    goto done;
  }
  if (cur_total < best_total) {
    best_total = cur_total;
    memcpy(keep, s.object_of, n * sizeof *keep);
    keep_count = s.count;
    improved = 1;
  }
  tg__rng g = {in->options->seed ^ 0x6F626A6563747331ull};
  for (; it < max_iters && best_total > bound && n > 1; ++it) {
    if (tg__now_us() >= deadline) break;
    order_move m;
    if (tg__rng_below(&g, 100) < 60) m = random_promote(&g, order, 1 + tg__rng_below(&g, n - 1));
    else m = random_swap(&g, order, n);
    uint64_t t;
    if ((st = place_objects(&s, order, deadline, &t)) != TG_OK) {
      if (st != TG_ERROR_TIMEOUT) goto done;
      st = TG_OK; /* out of time: keep what was found */
      break;
    }
    if (t <= cur_total) {
      cur_total = t;
      if (t < best_total) {
        best_total = t;
        memcpy(keep, s.object_of, n * sizeof *keep);
        keep_count = s.count;
        improved = 1;
      }
    } else {
      undo_move(order, &m);
    }
  }
  if (improved) {
    tg_plan *p = NULL;
    st = tg_plan_create(TG_MODE_OBJECTS, in->dims, n, keep_count, in->alloc, &p);
    if (st != TG_OK) goto done;
    memcpy(p->object_of, keep, n * sizeof *keep);
    if ((st = tg__plan_finish_objects(in, p)) != TG_OK || p->total >= (*best)->total) {
      tg_plan_destroy(p);
      if (st == TG_ERROR_OVERFLOW) st = TG_OK;
      goto done;
    }
    p->strategy = TG_STRATEGY_BEST;
    tg_plan_destroy(*best);
    *best = p;
  }
done:
  tg__budget_spend(b, it, per_unit);
  if (s.objs != NULL)
    for (size_t k = 0; k < n; ++k) tg__free(in->alloc, s.objs[k].members);
  tg__free(in->alloc, s.objs);
  tg__free(in->alloc, s.object_of);
  tg__free(in->alloc, order);
  tg__free(in->alloc, keep);
  tg__free(in->alloc, items);
  tg__free(in->alloc, tmp);
  return st;
}

/* ---- large offsets inputs ---------------------------------------------------------------- */

tg_status tg__search_dive(const tg__plan_input *in, uint64_t bound, size_t max_list, tg__budget *b,
                          tg_plan **best) {
  uint64_t need, cap = tg__budget_count(b, TG__DIVE_NODES_PER_UNIT);
  if (!tg__mul_u64(in->count, TG__DIVE_NODES_PER_RECORD, &need) || need > cap) return TG_OK;
  /* A thousandth of the bound, and at least the largest alignment (a smaller rise may leave
   * every aligned place where it was). */
  uint64_t step = bound / 1000, nodes = 0;
  for (size_t r = 0; r < in->count; ++r) {
    uint64_t a = tg__record_alignment(in, r);
    if (a > step) step = a;
  }
  tg_status st = tg__skyline_dive(in, bound, step, tg__budget_deadline(b), cap == UINT64_MAX ? 0 : cap,
                                  max_list, &nodes, best);
  tg__budget_spend(b, nodes, TG__DIVE_NODES_PER_UNIT);
  if (in->options->exact && in->options->exact_stats != NULL && nodes > 0) {
    in->options->exact_stats->nodes += nodes; /* the skyline search's tree, in the exact stats */
    in->options->exact_stats->searched = 1;
  }
  return st == TG_ERROR_OVERFLOW ? TG_OK : st;
}

/* Serial offsets inputs of at least TG__LNS_MIN_RECORDS records, in stages until the bound, the
 * budget or the deadline: (0) when nine tenths of the budget cover it, the relaxing skyline
 * dive (on wide DAGs it ends within a fraction of a percent of the bound, where the stages
 * below stall a few percent above); (1) the large-neighbourhood search from the incumbent until
 * it stalls (TG__LNS_STALL_STEPS steps without lowering the total) or the budget is spent; (2)
 * the same from greedy-by-breadth's plan when the budget left covers three set-ups
 * of about a third of a microsecond a record - the search gets further from it on some inputs
 * (wide DAGs) and from greedy-by-size's on others (transformer blocks); (3) on the better of
 * the two, up to TG__SKYLINE_MAX_RECORDS records, the skyline search with what is left
 * (long-lived records defeat the neighbourhoods; it does better there), else the
 * neighbourhood search again without the stall limit. */
static tg_status search_large(const tg__plan_input *in, uint64_t bound, tg__budget *b, tg_plan **best) {
  /* The dive's and the neighbourhood search's set-up (their indexes, 0.1-0.3 us per record)
   * cannot be interrupted: not without the work, or the time, for it. */
  uint64_t now = tg__now_us(), deadline = tg__budget_deadline(b);
  if (now >= deadline || deadline - now < (uint64_t)in->count / 4) return TG_OK;
  if (tg__budget_left(b) < (uint64_t)in->count / 4) return TG_OK;
  const uint64_t stall = TG__LNS_STALL_STEPS;
  uint64_t setup_us = 0;
  tg__budget dive = tg__budget_share(b, 9, 10);
  tg_status st = tg__search_dive(in, bound, TG__DIVE_MAX_LIST, &dive, best);
  tg__budget_charge(b, &dive);
  if (st != TG_OK || (*best)->total <= bound) return st;
  st = tg__search_offsets_lns(in, bound, b, stall, &setup_us, best);
  if (st != TG_OK || (*best)->total <= bound || tg__budget_done(b)) return st;
  uint64_t t = tg__now_us();
  tg_plan *other = NULL;
  /* A second start costs a greedy pass and a new index, which cannot be interrupted: about
   * twice the first start's set-up. Only when the budget covers three such set-ups (about
   * 0.3 us a record each) and the deadline leaves time for them. */
  if (tg__budget_left(b) > (uint64_t)in->count && deadline - t > 3 * setup_us)
    st = tg__offsets_greedy_by_breadth(in, &other);
  if (st == TG_ERROR_OVERFLOW) {
    tg_plan_destroy(other); /* no start from there */
    other = NULL;
    st = TG_OK;
  }
  if (st != TG_OK) {
    tg_plan_destroy(other);
    return st;
  }
  if (other != NULL) {
    other->strategy = TG_STRATEGY_GREEDY_BY_BREADTH;
    st = tg__search_offsets_lns(in, bound, b, stall, NULL, &other);
    if (st != TG_OK) {
      tg_plan_destroy(other);
      return st;
    }
    tg__keep_smaller(best, other);
  }
  if ((*best)->total <= bound || tg__budget_done(b)) return TG_OK;
  if (in->count > TG__SKYLINE_MAX_RECORDS) return tg__search_offsets_lns(in, bound, b, 0, NULL, best);
  tg__stage_relay relay;
  tg_exact_stats stats = tg__stage_stats(in, &relay);
  st = tg__skyline_improve(in, bound, b, 0, best, &stats);
  if (st == TG_OK) tg__stage_done(&relay, &stats);
  return st == TG_ERROR_OVERFLOW ? TG_OK : st;
}

tg_status tg__search_improve(const tg__plan_input *in, uint64_t bound, tg__budget *b, tg_plan **best) {
  if (*best == NULL || in->count < 2 || (*best)->total <= bound || tg__budget_done(b)) return TG_OK;
  if (in->options->mode == TG_MODE_OFFSETS) {
    if (in->count >= TG__LNS_MIN_RECORDS && in->options->relation == NULL)
      return search_large(in, bound, b, best);
    return search_offsets(in, bound, b, best);
  }
  /* One objects pass costs about records x objects compatibility tests (~50 per microsecond,
   * 50,000 a unit); a pass is not interrupted, so skip the search when even one would overrun
   * the budget. */
  uint64_t work;
  if (!tg__mul_u64((uint64_t)in->count, (uint64_t)(*best)->object_count, &work) ||
      work / 50 > tg__budget_left(b))
    return TG_OK;
  return search_objects(in, bound, b, best);
}
