/* The LP dive for objects plans (strategy best, no may-share relation, up to 400 records).
 *
 * Solve the linear programme over objects (planner/bounds/lp.h) of the records not placed yet;
 * every column of its optimum at value 1 becomes an object (disjoint ones; else the column of
 * the largest value, ties to the larger volume), and the rest is solved again, until every
 * record has an object. Each object is a chain of time-disjoint records, so the plan is valid
 * by construction; its total is at most the sum of the chosen columns' volumes. The root LP's
 * bound is a proof: when the incumbent meets it the dive is skipped, and a dive whose fixed
 * volume plus the rest's LP bound cannot beat the incumbent stops. Where the greedy strategies
 * and the iterated search stay a few percent above the bound (pose_landmark_heavy, 2D
 * textures: 1.6%), the dive reaches it. Cost: one LP per step (tens of steps), each from
 * scratch (seeding it with the previous LP's columns was tried: slower, the pricing then
 * scans more columns per pivot); cut by the deadline, the partial dive is dropped. */
#include <string.h>

#include "planner/bounds/lp.h"
#include "planner/search/search.h"
#include "planner/strategies/objects_common.h"

/* Above this, one refactorisation of the LP's basis (1.5 n^3 steps, about 50 ms at 400) would
 * overrun a deadline by more than the search allows. */
#define TG__LP_DIVE_MAX_RECORDS 400u

typedef struct dive_work {
  uint32_t *alive, *object_of;
  tg_usage_record *sub;
  tg__lp_column *cols;
  uint32_t *col_of; /* per alive position: the chosen column's object id, or TG__NONE */
} dive_work;

/* Fix the columns of the LP's solution: every column at 1 whose members are all free, else
 * the largest. Returns the volume fixed; ids from *nobj on. */
static uint64_t fix_columns(const tg__lp_column *cols, size_t k, uint32_t *col_of, uint32_t *nobj) {
  uint64_t fixed = 0;
  for (int pass = 0; pass < 2; ++pass) {
    size_t pick = SIZE_MAX;
    for (size_t c = 0; c < k; ++c) {
      if (pass == 0 && cols[c].x <= 0.999) continue;
      if (pass == 1 && pick != SIZE_MAX &&
          (cols[c].x < cols[pick].x || (cols[c].x == cols[pick].x && cols[c].volume <= cols[pick].volume)))
        continue;
      int free_ = 1;
      for (uint32_t m = 0; m < cols[c].len && free_; ++m) free_ = col_of[cols[c].members[m]] == TG__NONE;
      if (!free_) continue;
      if (pass == 1) {
        pick = c;
        continue;
      }
      for (uint32_t m = 0; m < cols[c].len; ++m) col_of[cols[c].members[m]] = *nobj;
      ++*nobj;
      fixed += cols[c].volume;
    }
    if (pass == 0 && fixed > 0) break;
    if (pass == 1 && pick != SIZE_MAX) {
      for (uint32_t m = 0; m < cols[pick].len; ++m) col_of[cols[pick].members[m]] = *nobj;
      ++*nobj;
      fixed += cols[pick].volume;
    }
  }
  return fixed;
}

tg_status tg__search_lp_dive(const tg__plan_input *in, tg__budget *b, tg_plan **best, uint64_t *proved) {
  size_t n = in->count;
  *proved = 0;
  const uint64_t deadline_us = tg__budget_deadline(b);
  uint64_t max_work = tg__budget_count(b, TG__LP_DIVE_WORK_PER_UNIT);
  if (max_work == UINT64_MAX) max_work = 0; /* no cap */
  else if (max_work == 0) return TG_OK;
  uint64_t work = 0;
  if (in->options->relation != NULL || n < 2 || n > TG__LP_DIVE_MAX_RECORDS || *best == NULL) return TG_OK;
  dive_work w;
  w.alive = tg__obj_alloc(in->alloc, n, sizeof *w.alive);
  w.object_of = tg__obj_alloc(in->alloc, n, sizeof *w.object_of);
  w.sub = tg__obj_alloc(in->alloc, n, sizeof *w.sub);
  w.cols = tg__obj_alloc(in->alloc, n, sizeof *w.cols);
  w.col_of = tg__obj_alloc(in->alloc, n, sizeof *w.col_of);
  tg_status st = TG_OK;
  tg__lp *lp = NULL;
  if (w.alive == NULL || w.object_of == NULL || w.sub == NULL || w.cols == NULL || w.col_of == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  size_t nalive = n;
  for (size_t r = 0; r < n; ++r) w.alive[r] = (uint32_t)r;
  uint32_t nobj = 0;
  uint64_t fixed_total = 0;
  for (int root = 1; nalive > 0; root = 0) {
    if (nalive == 1) {
      w.object_of[w.alive[0]] = nobj++;
      break;
    }
    for (size_t i = 0; i < nalive; ++i) w.sub[i] = in->records[w.alive[i]];
    int optimal = 0;
    if (max_work != 0 && work >= max_work) goto done; /* out of work: the dive is dropped */
    st = tg__lp_create(w.sub, nalive, max_work != 0 ? max_work - work : UINT64_MAX, deadline_us,
                       in->alloc, &lp);
    if (st == TG_OK && lp != NULL) st = tg__lp_solve(lp, 0, &optimal);
    work += tg__lp_work_done(lp);
    if (st != TG_OK || lp == NULL || !optimal) goto done;
    uint64_t rest = tg__lp_bound(lp);
    if (root) *proved = rest;
    /* the incumbent is optimal, or this dive cannot beat it */
    if (fixed_total + rest >= (*best)->total) goto done;
    size_t k = tg__lp_solution(lp, w.cols);
    for (size_t i = 0; i < nalive; ++i) w.col_of[i] = TG__NONE;
    fixed_total += fix_columns(w.cols, k, w.col_of, &nobj);
    tg__lp_destroy(lp);
    lp = NULL;
    size_t kept = 0;
    for (size_t i = 0; i < nalive; ++i) {
      if (w.col_of[i] != TG__NONE) w.object_of[w.alive[i]] = w.col_of[i];
      else w.alive[kept++] = w.alive[i];
    }
    if (kept == nalive) goto done; /* nothing fixed: cannot happen with an optimal LP */
    nalive = kept;
  }
  tg_plan *plan = NULL;
  st = tg__obj_emit(in, w.object_of, nobj, &plan);
  if (st == TG_OK) {
    plan->strategy = TG_STRATEGY_BEST;
    tg__keep_smaller(best, plan);
  }
done:
  tg__budget_spend(b, work, TG__LP_DIVE_WORK_PER_UNIT);
  tg__lp_destroy(lp);
  tg__free(in->alloc, w.alive);
  tg__free(in->alloc, w.object_of);
  tg__free(in->alloc, w.sub);
  tg__free(in->alloc, w.cols);
  tg__free(in->alloc, w.col_of);
  return st;
}
