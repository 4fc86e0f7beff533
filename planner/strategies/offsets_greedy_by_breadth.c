/* GREEDY_BY_BREADTH, offsets mode. The breadth of a task is the sum of the sizes live at it;
 * the widest tasks are the ones that fix the arena's size, so they are packed first: tasks go
 * by decreasing breadth (ties in task order), and within a task its not yet placed records by
 * decreasing size (ties by index). Each record takes the smallest gap that holds it among the
 * placed records it conflicts with (the same search as greedy-by-size), else the first aligned
 * address above them.
 *
 * Only task points (distinct first tasks) matter: the live set of any other task is a subset
 * of the live set of the point before it. A record is placed with the first processed point
 * of its interval, found by a range-minimum query over the points' processing ranks, so the
 * whole strategy is O(n log n) plus the gap searches. Zero-size records occupy nothing and go
 * to offset 0. Serial inputs with a deadline (`best` under a time limit) stop placing at it,
 * and the records left go right above what they meet in time, as greedy-by-size's do. */
#include "planner/strategies/offsets_common.h"

tg_status tg__offsets_greedy_by_breadth(const tg__plan_input *in, tg_plan **out) {
  size_t n = in->count;
  tg_status st = tg_plan_create(TG_MODE_OFFSETS, in->dims, n, 0, in->alloc, out);
  if (st != TG_OK) return st;
  tg__task_points tp = {0, NULL, NULL};
  tg__gap_index *ix = NULL;
  uint64_t *live = NULL;
  uint32_t *tree = NULL;
  size_t *order = NULL;
  tg__sort_item *items = NULL;
  if (n == 0) goto finish;
  if ((st = tg__task_points_init(in, &tp)) != TG_OK) goto done;
  size_t np = tp.count;
  live = tg__calloc(in->alloc, np, sizeof *live);
  tree = tg__calloc(in->alloc, 2 * np, sizeof *tree);
  order = tg__calloc(in->alloc, n, sizeof *order);
  items = tg__calloc(in->alloc, 2 * (n > np ? n : np), sizeof *items);
  if (live == NULL || tree == NULL || order == NULL || items == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }

  /* Breadth per point. A live sum beyond 64 bits means no plan can exist. */
  if ((st = tg__live_at_points(in, &tp, live)) != TG_OK) goto done;
  for (size_t p = 0; p < np; ++p) items[p] = (tg__sort_item){UINT64_MAX - live[p], p};
  tg__sort_items_stable(items, np, items + np);
  /* tree[np + p] = processing rank of point p; inner nodes hold minima. */
  for (size_t i = 0; i < np; ++i) tree[np + items[i].idx] = (uint32_t)i;
  for (size_t i = np - 1; i > 0; --i)
    tree[i] = tree[2 * i] < tree[2 * i + 1] ? tree[2 * i] : tree[2 * i + 1];

  /* Records by (rank of their first processed point, size descending, index). */
  if ((st = tg__order_by_size_desc(in, order)) != TG_OK) goto done;
  for (size_t i = 0; i < n; ++i) {
    size_t r = order[i];
    size_t lo = tp.pf[r] + np, hi = tp.pl[r] + np + 1;
    uint32_t best = UINT32_MAX;
    while (lo < hi) {
      if (lo & 1) { if (tree[lo] < best) best = tree[lo]; ++lo; }
      if (hi & 1) { --hi; if (tree[hi] < best) best = tree[hi]; }
      lo >>= 1;
      hi >>= 1;
    }
    items[i] = (tg__sort_item){best, r};
  }
  tg__sort_items_stable(items, n, items + n);

  if ((st = tg__gap_index_create(in, &ix)) != TG_OK) goto done;
  const int cut = in->options->relation == NULL && in->deadline_us != 0;
  for (size_t i = 0; i < n; ++i) {
    if (cut && (i & 15) == 15 && tg__now_us() >= in->deadline_us) {
      for (size_t j = i; j < n; ++j) order[j - i] = items[j].idx;
      if ((st = tg__offsets_complete_on_top(in, order, n - i, (*out)->offset_of)) != TG_OK) goto done;
      break;
    }
    size_t r = items[i].idx;
    uint64_t off = 0, end;
    if (in->volumes[r] == 0) {
      (*out)->offset_of[r] = 0;
      continue;
    }
    if ((st = tg__gap_index_find(ix, r, TG_FIT_BEST, &off)) != TG_OK) goto done;
    if (!tg__add_u64(off, in->volumes[r], &end)) {
      st = TG_ERROR_OVERFLOW;
      goto done;
    }
    (*out)->offset_of[r] = off;
    tg__gap_index_insert(ix, r, off);
  }
finish:
  st = tg__plan_finish_offsets(in, *out);
done:
  tg__gap_index_destroy(ix);
  tg__task_points_free(in, &tp);
  tg__free(in->alloc, live);
  tg__free(in->alloc, tree);
  tg__free(in->alloc, order);
  tg__free(in->alloc, items);
  if (st != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
  }
  return st;
}
