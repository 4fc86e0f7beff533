/* GREEDY_BY_SIZE, offsets mode: TFLite's GreedyBySizeAssignment. Records go by decreasing
 * size (ties in input order); each takes the smallest gap, among the placed records that
 * conflict with it, that holds it, or else the first aligned address above them all.
 *
 * TFLite walks every placed record for every record, O(n^2). The plans here are the same,
 * but the gap index visits only placed records near the new record in time, already ordered
 * by offset, which makes typical inputs close to O(n * live). Serial inputs with a deadline
 * (in->deadline_us: `best` under a time limit) stop placing at it, and the records left go
 * right above what they meet in time (tg__offsets_complete_on_top). */
#include "planner/strategies/offsets_common.h"

tg_status tg__offsets_greedy_by_size(const tg__plan_input *in, tg_plan **out) {
  tg_status st = tg_plan_create(TG_MODE_OFFSETS, in->dims, in->count, 0, in->alloc, out);
  if (st != TG_OK) return st;
  size_t *order = tg__calloc(in->alloc, in->count ? in->count : 1, sizeof *order);
  tg__gap_index *ix = NULL;
  if (order == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  if ((st = tg__order_by_size_desc(in, order)) != TG_OK) goto done;
  /* Serial: the index's slots in placement order (see tg__gap_index_create_ordered). */
  int slots = in->options->relation == NULL;
  if ((st = tg__gap_index_create_ordered(in, slots ? order : NULL, &ix)) != TG_OK) goto done;
  size_t placed = in->count;
  for (size_t i = 0; i < in->count; ++i) {
    /* A deadline (serial inputs, `best` under a time limit): the rest goes on top. */
    if (slots && in->deadline_us != 0 && (i & 15) == 15 && tg__now_us() >= in->deadline_us) {
      placed = i;
      break;
    }
    size_t r = order[i], x = slots ? i : r;
    uint64_t off, end;
    if ((st = tg__gap_index_find(ix, x, TG_FIT_BEST, &off)) != TG_OK) goto done;
    if (!tg__add_u64(off, in->volumes[r], &end)) {
      st = TG_ERROR_OVERFLOW;
      goto done;
    }
    (*out)->offset_of[r] = off;
    tg__gap_index_insert(ix, x, off);
  }
  if (placed < in->count &&
      (st = tg__offsets_complete_on_top(in, order + placed, in->count - placed, (*out)->offset_of)) != TG_OK)
    goto done;
  st = tg__plan_finish_offsets(in, *out);
done:
  tg__gap_index_destroy(ix);
  tg__free(in->alloc, order);
  if (st != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
  }
  return st;
}
