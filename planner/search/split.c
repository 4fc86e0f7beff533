/* Serial offsets inputs whose time axis splits. Without a relation two records conflict only
 * when their task intervals meet, so sweeping the records by first task, one that starts after
 * every earlier record has ended opens a new part: records of different parts never conflict.
 * A plan is then any plan per part, its total the largest of theirs, and the optimum the
 * largest of the parts' optima. Searching the parts one at a time pays: on the whole input a
 * search that backs out of a dead end in one part undoes decisions in the others for nothing,
 * and parts of at most TG_EXACT_MAX_RECORDS records get the small inputs' skyline search even
 * when the whole input has more.
 *
 * Each part starts from the incumbent's offsets for its records and runs what `best` runs after
 * the greedy strategies (`search_part`, from best.c) with the whole input's bound as its
 * target: a part at or below it cannot lower the total further, so parts already there are
 * skipped. The budget is shared out in proportion to the records of the parts still to search,
 * smallest part first: work a part leaves unused (it reached the bound) goes to the later,
 * larger ones. A part's optimum bounds the whole input's total from below, so what the search
 * proves on a part (a lower bound, optimality) is proved for the whole (in->proved). */
#include <string.h>

#include "planner/search/search.h"

typedef struct part {
  size_t beg, end; /* its records: items[beg..end).idx */
  uint64_t total;  /* its records' highest end in the current plan */
} part;

/* The parts of `in`: items (sorted by first task) and parts[0..*count) in time order. */
static tg_status split_parts(const tg__plan_input *in, tg__sort_item *items, part *parts,
                             size_t *count) {
  tg__sort_item *tmp = tg__alloc_array(in->alloc, in->count, sizeof *tmp);
  if (tmp == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t r = 0; r < in->count; ++r) items[r] = (tg__sort_item){in->records[r].first_task, r};
  tg__sort_items_stable(items, in->count, tmp);
  tg__free(in->alloc, tmp);
  size_t n = 0;
  uint64_t last = 0;
  for (size_t i = 0; i < in->count; ++i) {
    const tg_usage_record *rec = &in->records[items[i].idx];
    if (n == 0 || rec->first_task > last) {
      if (n > 0) parts[n - 1].end = i;
      parts[n++] = (part){i, i, 0};
      last = rec->last_task;
    } else if (rec->last_task > last) {
      last = rec->last_task;
    }
  }
  if (n > 0) parts[n - 1].end = in->count;
  *count = n;
  return TG_OK;
}

/* Part p's records as an input of their own (records, volumes) with its incumbent plan. */
static tg_status part_input(const tg__plan_input *in, const tg__sort_item *items, const part *p,
                            const tg_plan *best, tg_usage_record *recs, uint64_t *vols,
                            tg__plan_input *sub, tg_plan **plan) {
  size_t m = p->end - p->beg;
  for (size_t j = 0; j < m; ++j) {
    recs[j] = in->records[items[p->beg + j].idx];
    vols[j] = in->volumes[items[p->beg + j].idx];
  }
  sub->records = recs;
  sub->count = m;
  sub->volumes = vols;
  tg_status st = tg_plan_create(TG_MODE_OFFSETS, 1, m, 0, in->alloc, plan);
  if (st != TG_OK) return st;
  for (size_t j = 0; j < m; ++j) (*plan)->offset_of[j] = best->offset_of[items[p->beg + j].idx];
  (*plan)->strategy = best->strategy;
  return tg__plan_finish_offsets(sub, *plan);
}

tg_status tg__search_split(const tg__plan_input *in, uint64_t bound, tg__budget *b,
                           tg__search_part_fn search_part, tg_plan **best, int *split) {
  *split = 0;
  const tg_plan_options *o = in->options;
  if (o->mode != TG_MODE_OFFSETS || o->relation != NULL || in->count < 2 ||
      (*best)->total <= bound)
    return TG_OK;
  const tg_allocator *a = in->alloc;
  tg__sort_item *items = tg__alloc_array(a, in->count, sizeof *items);
  part *parts = tg__alloc_array(a, in->count, sizeof *parts);
  tg__sort_item *by_size = tg__alloc_array(a, 2 * in->count, sizeof *by_size); /* + scratch */
  tg_usage_record *recs = tg__alloc_array(a, in->count, sizeof *recs);
  uint64_t *vols = tg__alloc_array(a, in->count, sizeof *vols);
  tg_plan *acc = NULL, *sub_plan = NULL;
  tg_status st = TG_OK;
  size_t count = 0;
  if (items == NULL || parts == NULL || by_size == NULL || recs == NULL || vols == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  if ((st = split_parts(in, items, parts, &count)) != TG_OK || count < 2) goto done;
  *split = 1;
  /* Each part's total, and the records of the parts above the bound (the ones to search). */
  size_t pending = 0;
  for (size_t i = 0; i < count; ++i) {
    for (size_t j = parts[i].beg; j < parts[i].end; ++j) {
      size_t r = items[j].idx;
      uint64_t end = (*best)->offset_of[r] + in->volumes[r]; /* <= (*best)->total */
      if (end > parts[i].total) parts[i].total = end;
    }
    if (parts[i].total > bound) pending += parts[i].end - parts[i].beg;
  }
  /* Smallest part first (ties in time order). */
  for (size_t i = 0; i < count; ++i) by_size[i] = (tg__sort_item){parts[i].end - parts[i].beg, i};
  tg__sort_items_stable(by_size, count, by_size + count);
  if ((st = tg_plan_create(TG_MODE_OFFSETS, 1, in->count, 0, a, &acc)) != TG_OK) goto done;
  memcpy(acc->offset_of, (*best)->offset_of, in->count * sizeof *acc->offset_of);
  tg__plan_input sub = *in;
  for (size_t k = 0; k < count && st == TG_OK; ++k) {
    part *p = &parts[by_size[k].idx];
    if (p->total <= bound) continue;
    if (tg__budget_done(b)) break; /* the rest keep the incumbent's offsets */
    uint64_t m = p->end - p->beg;
    tg__budget share = tg__budget_share(b, m, pending);
    pending -= m;
    if ((st = part_input(in, items, p, *best, recs, vols, &sub, &sub_plan)) != TG_OK) break;
    st = search_part(&sub, bound, &share, &sub_plan);
    tg__budget_charge(b, &share);
    if (st != TG_OK) break;
    for (size_t j = 0; j < m; ++j) acc->offset_of[items[p->beg + j].idx] = sub_plan->offset_of[j];
    p->total = sub_plan->total;
    tg_plan_destroy(sub_plan);
    sub_plan = NULL;
  }
  if (st == TG_OK) st = tg__plan_finish_offsets(in, acc);
  if (st == TG_OK && acc->total < (*best)->total) {
    acc->strategy = TG_STRATEGY_BEST;
    tg_plan_destroy(*best);
    *best = acc;
    acc = NULL;
  }
done:
  tg_plan_destroy(sub_plan);
  tg_plan_destroy(acc);
  tg__free(a, items);
  tg__free(a, parts);
  tg__free(a, by_size);
  tg__free(a, recs);
  tg__free(a, vols);
  return st;
}
