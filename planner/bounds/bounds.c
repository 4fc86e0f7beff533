/* Lower bounds on any plan's total: peak live size, TFLite's sum of positional maximums, and
 * the naive sum. All three are O(n log n) whatever the task indices. */
#include <string.h>

#include "planner/strategies/offsets_common.h"

/* Positional maximums without building task profiles: the number of positions whose maximum
 * is >= v equals the largest count, over tasks, of live records of volume >= v. So the sum of
 * positional maximums is the sum over the distinct volumes v_1 > v_2 > ... of
 * (v_k - v_{k+1}) * maxcount(v_k). Records are added by decreasing volume to a max-segment
 * tree over task points (range +1), whose root is maxcount. */
typedef struct count_tree {
  uint64_t *max; /* max over the node's range, including the adds of the node and below */
  uint64_t *add; /* +1s applied to the whole node range */
  size_t size;   /* leaves, a power of two; node i has children 2i and 2i+1 */
} count_tree;

/* +1 on leaves [l, r], bottom-up: bump the canonical nodes, then recompute the maxima on the
 * two boundary paths. The root's max is the answer. */
static void tree_add(count_tree *t, size_t l, size_t r) {
  size_t lo = l + t->size, hi = r + t->size + 1;
  for (size_t a = lo, b = hi; a < b; a >>= 1, b >>= 1) {
    if (a & 1) { t->add[a]++; t->max[a]++; ++a; }
    if (b & 1) { --b; t->add[b]++; t->max[b]++; }
  }
  for (size_t i = lo >> 1; i > 0; i >>= 1) {
    uint64_t x = t->max[2 * i], y = t->max[2 * i + 1];
    t->max[i] = (x > y ? x : y) + t->add[i];
  }
  for (size_t i = (hi - 1) >> 1; i > 0; i >>= 1) {
    uint64_t x = t->max[2 * i], y = t->max[2 * i + 1];
    t->max[i] = (x > y ? x : y) + t->add[i];
  }
}

/* The largest live sum over the task points `tp` of `in` (tg__live_at_points); 0 on failure. */
static tg_status peak_at_points(const tg__plan_input *in, const tg__task_points *tp,
                                uint64_t *peak) {
  *peak = 0;
  uint64_t *live = tg__calloc(in->alloc, tp->count ? tp->count : 1, sizeof *live);
  if (live == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_status st = tg__live_at_points(in, tp, live);
  for (size_t p = 0; st == TG_OK && p < tp->count; ++p)
    if (live[p] > *peak) *peak = live[p];
  tg__free(in->alloc, live);
  return st;
}

tg_status tg__peak_live(const tg__plan_input *in, uint64_t *peak) {
  *peak = 0;
  tg__task_points tp = {0, NULL, NULL};
  tg_status st = tg__task_points_init(in, &tp);
  if (st == TG_OK) st = peak_at_points(in, &tp, peak); /* 0 unless it succeeds */
  tg__task_points_free(in, &tp);
  return st;
}

tg_status tg_bounds_compute(const tg_usage_record *records, size_t count, uint32_t dims,
                            const tg_allocator *alloc, tg_bounds *out) {
  if (out == NULL || (records == NULL && count > 0) || dims < 1 || dims > 3)
    return TG_ERROR_INVALID_ARGUMENT;
  *out = (tg_bounds){0, 0, 0};
  alloc = tg__alloc_or_default(alloc);
  size_t n = count;
  tg_status st = TG_OK;
  uint64_t *volumes = tg__calloc(alloc, n ? n : 1, sizeof *volumes);
  if (volumes == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  uint64_t naive = 0;
  for (size_t r = 0; r < n; ++r) {
    const tg_usage_record *rec = &records[r];
    if (rec->first_task > rec->last_task || (dims < 3 && rec->size.d != 1) ||
        (dims < 2 && rec->size.h != 1)) {
      tg__free(alloc, volumes);
      return TG_ERROR_INVALID_ARGUMENT;
    }
    if (tg_extent_volume(rec->size, &volumes[r]) != TG_OK || !tg__add_u64(naive, volumes[r], &naive)) {
      tg__free(alloc, volumes);
      return TG_ERROR_OVERFLOW;
    }
  }
  if (n == 0) {
    tg__free(alloc, volumes);
    return TG_OK;
  }
  static const tg_plan_options k_options = {0};
  tg__plan_input in = {records, n, dims, &k_options, alloc, volumes, 0, NULL, NULL};
  tg__task_points tp = {0, NULL, NULL};
  size_t *order = NULL;
  count_tree tree = {NULL, NULL, 1};
  uint64_t peak = 0;
  if ((st = tg__task_points_init(&in, &tp)) != TG_OK) goto done;
  if ((st = peak_at_points(&in, &tp, &peak)) != TG_OK) goto done;
  size_t np = tp.count;
  while (tree.size < np) tree.size *= 2;
  order = tg__calloc(alloc, n, sizeof *order);
  tree.max = tg__calloc(alloc, 2 * tree.size, sizeof *tree.max);
  tree.add = tg__calloc(alloc, 2 * tree.size, sizeof *tree.add);
  if (order == NULL || tree.max == NULL || tree.add == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }

  /* Positional maximums. */
  if ((st = tg__order_by_size_desc(&in, order)) != TG_OK) goto done;
  uint64_t posmax = 0;
  for (size_t i = 0; i < n;) {
    uint64_t v = volumes[order[i]];
    if (v == 0) break;
    for (; i < n && volumes[order[i]] == v; ++i)
      tree_add(&tree, tp.pf[order[i]], tp.pl[order[i]]);
    uint64_t next = (i < n) ? volumes[order[i]] : 0, term;
    if (!tg__mul_u64(v - next, tree.max[1], &term) || !tg__add_u64(posmax, term, &posmax)) {
      st = TG_ERROR_OVERFLOW;
      goto done;
    }
  }
  out->peak_live = peak;
  out->positional_max = posmax;
  out->naive = naive;
done:
  tg__task_points_free(&in, &tp);
  tg__free(alloc, order);
  tg__free(alloc, tree.max);
  tg__free(alloc, tree.add);
  tg__free(alloc, volumes);
  if (st != TG_OK) *out = (tg_bounds){0, 0, 0};
  return st;
}
