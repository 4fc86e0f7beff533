/* GREEDY_BY_CONFLICTS, offsets mode: TVM USMP's greedy_by_conflicts. Records go by decreasing
 * number of liveness conflicts (ties: larger first, then input order, where TVM breaks them
 * by name); each takes the lowest offset where it overlaps none of the placed records it
 * conflicts with, found by walking them in offset order and jumping past each it would
 * overlap. A one-pool version: TVM's candidate pools, size hints and access maps do not apply
 * to one arena. Serial inputs with a deadline (`best` under a time limit) stop placing at it,
 * and the records left go right above what they meet in time, as greedy-by-size's do. */
#include "planner/strategies/usmp_common.h"

tg_status tg__offsets_greedy_by_conflicts(const tg__plan_input *in, tg_plan **out) {
  tg_status st = tg_plan_create(TG_MODE_OFFSETS, in->dims, in->count, 0, in->alloc, out);
  if (st != TG_OK) return st;
  size_t n = in->count ? in->count : 1;
  uint64_t *counts = tg__alloc_array(in->alloc, n, sizeof *counts);
  size_t *order = tg__alloc_array(in->alloc, n, sizeof *order);
  if (counts == NULL || order == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
  if (st == TG_OK) st = tg__usmp_conflict_counts(in, counts);
  if (st == TG_OK) st = tg__usmp_order(in, counts, 1, order);
  if (st == TG_OK) st = tg__usmp_place_until(in, order, in->deadline_us, (*out)->offset_of);
  if (st == TG_OK) st = tg__plan_finish_offsets(in, *out);
  tg__free(in->alloc, counts);
  tg__free(in->alloc, order);
  if (st != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
  }
  return st;
}
