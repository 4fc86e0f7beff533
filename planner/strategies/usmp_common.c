/* TVM USMP's shared pieces: conflict counts, orders, first-fit placement (usmp_common.h). */
#include "planner/strategies/usmp_common.h"

/* Index of the first value >= key in the ascending v[0..n). */
static size_t lower_bound_u64(const tg__sort_item *v, size_t n, uint64_t key) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].key < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static int intervals_meet(const tg_usage_record *a, const tg_usage_record *b) {
  return a->first_task <= b->last_task && b->first_task <= a->last_task;
}

/* A growable list of record pairs (the relation's conflicts between disjoint intervals). */
typedef struct pair_list {
  uint32_t *v; /* 2 per pair */
  size_t n, cap;
  int over;    /* more than allowed: no list */
} pair_list;

static tg_status pair_add(const tg__plan_input *in, pair_list *pl, size_t a, size_t b, size_t max) {
  if (pl->over) return TG_OK;
  if (2 * (pl->n + 1) > max) {
    pl->over = 1;
    tg__free(in->alloc, pl->v);
    pl->v = NULL;
    return TG_OK;
  }
  if (pl->n == pl->cap) {
    size_t cap = pl->cap ? 2 * pl->cap : 256;
    uint32_t *v = tg__realloc(in->alloc, pl->v, pl->cap * 2 * sizeof *v, cap * 2 * sizeof *v);
    if (v == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    pl->v = v;
    pl->cap = cap;
  }
  pl->v[2 * pl->n] = (uint32_t)a;
  pl->v[2 * pl->n + 1] = (uint32_t)b;
  pl->n++;
  return TG_OK;
}

/* The relation's conflicts between records with disjoint intervals: counted, and listed in
 * `pl` while they fit `max` entries. */
static tg_status relation_pairs(const tg__plan_input *in, uint64_t *counts, tg__sort_item *items,
                                tg__sort_item *tmp, pair_list *pl, size_t max) {
  size_t n = in->count;
  tg__obj_share share;
  tg_status st = tg__obj_share_init(&share, in);
  if (st != TG_OK) return st;
  if (share.win != NULL) {
    /* Pairs whose windows intersect: sweep in order of window start. */
    for (size_t r = 0; r < n; ++r) items[r] = (tg__sort_item){share.win[2 * r], r};
    tg__sort_items_stable(items, n, tmp);
    for (size_t i = 0; i < n && st == TG_OK; ++i) {
      size_t a = items[i].idx;
      uint64_t hi = share.win[2 * a + 1];
      for (size_t j = i + 1; j < n && items[j].key <= hi && st == TG_OK; ++j) {
        size_t b = items[j].idx;
        if (intervals_meet(&in->records[a], &in->records[b])) continue;
        if (!share.rel->may_share(share.rel->user, a, b)) {
          counts[a]++;
          counts[b]++;
          st = pair_add(in, pl, a, b, max);
        }
      }
    }
  } else {
    for (size_t a = 0; a < n && st == TG_OK; ++a)
      for (size_t b = a + 1; b < n && st == TG_OK; ++b) {
        if (intervals_meet(&in->records[a], &in->records[b])) continue;
        if (!share.rel->may_share(share.rel->user, a, b)) {
          counts[a]++;
          counts[b]++;
          st = pair_add(in, pl, a, b, max);
        }
      }
  }
  tg__obj_share_free(&share);
  return st;
}

tg_status tg__usmp_conflicts(const tg__plan_input *in, size_t max_entries, uint64_t *counts,
                             size_t **adj_at, uint32_t **adj) {
  size_t n = in->count;
  if (adj_at != NULL) {
    *adj_at = NULL;
    *adj = NULL;
  }
  if (n == 0) return TG_OK;
  if (adj_at == NULL || n >= UINT32_MAX) max_entries = 0;
  tg__sort_item *firsts = tg__alloc_array(in->alloc, 3 * n, sizeof *firsts);
  if (firsts == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg__sort_item *lasts = firsts + n, *tmp = firsts + 2 * n;
  for (size_t r = 0; r < n; ++r) {
    firsts[r] = (tg__sort_item){in->records[r].first_task, r};
    lasts[r] = (tg__sort_item){in->records[r].last_task, r};
  }
  tg__sort_items_stable(firsts, n, tmp);
  tg__sort_items_stable(lasts, n, tmp);
  /* Intersecting = all others but those that end before r starts and those that start after
   * r ends (disjoint sets, neither holding r). */
  uint64_t interval_entries = 0;
  for (size_t r = 0; r < n; ++r) {
    size_t ended = lower_bound_u64(lasts, n, in->records[r].first_task);
    size_t later = n - lower_bound_u64(firsts, n, (uint64_t)in->records[r].last_task + 1);
    counts[r] = (uint64_t)(n - 1 - ended - later);
    interval_entries += counts[r];
  }
  tg_status st = TG_OK;
  pair_list pl = {NULL, 0, 0, interval_entries > max_entries};
  size_t rel_max = interval_entries <= max_entries ? max_entries - (size_t)interval_entries : 0;
  if (in->options->relation != NULL) st = relation_pairs(in, counts, lasts, tmp, &pl, rel_max);
  if (st == TG_OK && !pl.over && adj_at != NULL) {
    /* The lists: interval pairs by a sweep over the records by first task, then the
     * relation's. */
    size_t *at = tg__calloc(in->alloc, n + 1, sizeof *at);
    size_t total = (size_t)interval_entries + 2 * pl.n;
    uint32_t *list = tg__alloc_array(in->alloc, total ? total : 1, sizeof *list);
    size_t *fill = tg__alloc_array(in->alloc, n, sizeof *fill);
    if (at == NULL || list == NULL || fill == NULL) {
      tg__free(in->alloc, at);
      tg__free(in->alloc, list);
      st = TG_ERROR_OUT_OF_HOST_MEMORY;
    } else {
      for (size_t r = 0; r < n; ++r) at[r + 1] = at[r] + counts[r];
      memcpy(fill, at, n * sizeof *fill);
      for (size_t i = 0; i < n; ++i) {
        size_t a = firsts[i].idx;
        for (size_t j = i + 1; j < n && firsts[j].key <= in->records[a].last_task; ++j) {
          size_t b = firsts[j].idx;
          list[fill[a]++] = (uint32_t)b;
          list[fill[b]++] = (uint32_t)a;
        }
      }
      for (size_t k = 0; k < pl.n; ++k) {
        uint32_t a = pl.v[2 * k], b = pl.v[2 * k + 1];
        list[fill[a]++] = b;
        list[fill[b]++] = a;
      }
      *adj_at = at;
      *adj = list;
    }
    tg__free(in->alloc, fill);
  }
  tg__free(in->alloc, pl.v);
  tg__free(in->alloc, firsts);
  return st;
}

tg_status tg__usmp_conflict_counts(const tg__plan_input *in, uint64_t *counts) {
  return tg__usmp_conflicts(in, 0, counts, NULL, NULL);
}

tg_status tg__usmp_order(const tg__plan_input *in, const uint64_t *counts, int by_conflicts,
                         size_t *order) {
  size_t n = in->count;
  if (n == 0) return TG_OK;
  tg__sort_item *items = tg__alloc_array(in->alloc, 2 * n, sizeof *items);
  if (items == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  /* Two stable passes: the secondary key first, then the primary one. */
  for (size_t r = 0; r < n; ++r)
    items[r] = (tg__sort_item){UINT64_MAX - (by_conflicts ? in->volumes[r] : counts[r]), r};
  tg__sort_items_stable(items, n, items + n);
  for (size_t i = 0; i < n; ++i) {
    size_t r = items[i].idx;
    items[i].key = UINT64_MAX - (by_conflicts ? counts[r] : in->volumes[r]);
  }
  tg__sort_items_stable(items, n, items + n);
  for (size_t i = 0; i < n; ++i) order[i] = items[i].idx;
  tg__free(in->alloc, items);
  return TG_OK;
}

static tg_status usmp_place(const tg__plan_input *in, const size_t *order, uint64_t deadline_us,
                            uint64_t *offset_of, uint64_t *total) {
  *total = 0;
  tg__gap_index *ix = NULL;
  int slots = in->options->relation == NULL;
  tg_status st = tg__gap_index_create_ordered(in, slots ? order : NULL, &ix);
  if (st != TG_OK) return st;
  uint64_t top = 0;
  size_t placed = in->count;
  for (size_t i = 0; i < in->count; ++i) {
    if (slots && deadline_us != 0 && (i & 15) == 15 && tg__now_us() >= deadline_us) {
      placed = i;
      break;
    }
    size_t r = order[i], x = slots ? i : r;
    uint64_t off, end;
    if ((st = tg__gap_index_find(ix, x, TG_FIT_FIRST, &off)) != TG_OK) break;
    if (!tg__add_u64(off, in->volumes[r], &end)) {
      st = TG_ERROR_OVERFLOW;
      break;
    }
    offset_of[r] = off;
    if (end > top) top = end;
    tg__gap_index_insert(ix, x, off);
  }
  tg__gap_index_destroy(ix);
  if (st == TG_OK && placed < in->count)
    return tg__offsets_complete_on_top(in, order + placed, in->count - placed, offset_of);
  if (st == TG_OK) *total = top;
  return st;
}

tg_status tg__usmp_place(const tg__plan_input *in, const size_t *order, uint64_t *offset_of,
                         uint64_t *total) {
  return usmp_place(in, order, 0, offset_of, total);
}

tg_status tg__usmp_place_until(const tg__plan_input *in, const size_t *order, uint64_t deadline_us,
                               uint64_t *offset_of) {
  uint64_t total;
  return usmp_place(in, order, deadline_us, offset_of, &total);
}
