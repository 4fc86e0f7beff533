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

tg_status tg__usmp_conflict_counts(const tg__plan_input *in, uint64_t *counts) {
  size_t n = in->count;
  if (n == 0) return TG_OK;
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
  for (size_t r = 0; r < n; ++r) {
    size_t ended = lower_bound_u64(lasts, n, in->records[r].first_task);
    size_t later = n - lower_bound_u64(firsts, n, (uint64_t)in->records[r].last_task + 1);
    counts[r] = (uint64_t)(n - 1 - ended - later);
  }
  tg_status st = TG_OK;
  if (in->options->relation != NULL) {
    tg__obj_share share;
    st = tg__obj_share_init(&share, in);
    if (st == TG_OK && share.win != NULL) {
      /* Pairs whose windows intersect: sweep in order of window start. */
      for (size_t r = 0; r < n; ++r) firsts[r] = (tg__sort_item){share.win[2 * r], r};
      tg__sort_items_stable(firsts, n, tmp);
      for (size_t i = 0; i < n; ++i) {
        size_t a = firsts[i].idx;
        uint64_t hi = share.win[2 * a + 1];
        for (size_t j = i + 1; j < n && firsts[j].key <= hi; ++j) {
          size_t b = firsts[j].idx;
          if (intervals_meet(&in->records[a], &in->records[b])) continue;
          if (!share.rel->may_share(share.rel->user, a, b)) {
            counts[a]++;
            counts[b]++;
          }
        }
      }
    } else if (st == TG_OK) {
      for (size_t a = 0; a < n; ++a)
        for (size_t b = a + 1; b < n; ++b) {
          if (intervals_meet(&in->records[a], &in->records[b])) continue;
          if (!share.rel->may_share(share.rel->user, a, b)) {
            counts[a]++;
            counts[b]++;
          }
        }
    }
    tg__obj_share_free(&share);
  }
  tg__free(in->alloc, firsts);
  return st;
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

tg_status tg__usmp_place(const tg__plan_input *in, const size_t *order, uint64_t *offset_of,
                         uint64_t *total) {
  *total = 0;
  tg__gap_index *ix = NULL;
  int slots = in->options->relation == NULL;
  tg_status st = tg__gap_index_create_ordered(in, slots ? order : NULL, &ix);
  if (st != TG_OK) return st;
  uint64_t top = 0;
  for (size_t i = 0; i < in->count; ++i) {
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
  if (st == TG_OK) *total = top;
  return st;
}
