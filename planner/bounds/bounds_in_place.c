/* Bounds for the problem with in-place pairs: every chain of pairs merged into one record. */
#include "planner/base/in_place.h"

tg_status tg_bounds_compute_in_place(const tg_usage_record *records, size_t count, uint32_t dims,
                                     const tg_in_place_pair *pairs, size_t pair_count,
                                     const tg_allocator *alloc, tg_bounds *out,
                                     uint64_t *objects_lp) {
  if (out == NULL || (records == NULL && count > 0) || dims < 1 || dims > 3) return TG_ERROR_INVALID_ARGUMENT;
  alloc = tg__alloc_or_default(alloc);
  tg__in_place_groups g;
  tg_status st = tg__in_place_groups_build(records, count, dims, pairs, pair_count, NULL, alloc, &g);
  if (st != TG_OK) return st;
  st = tg_bounds_compute(g.merged, g.group_count, dims, alloc, out);
  if (st == TG_OK && objects_lp != NULL)
    st = tg_bounds_objects_lp(g.merged, g.group_count, dims, 0, 0, alloc, objects_lp);
  if (st == TG_OK) {
    /* The naive bound stays the sum of every record's size. */
    tg_bounds plain;
    st = tg_bounds_compute(records, count, dims, alloc, &plain);
    if (st == TG_OK) out->naive = plain.naive;
  }
  tg__in_place_groups_free(&g, alloc);
  return st;
}
