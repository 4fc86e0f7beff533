/* The linear programme over objects (bounds_lp.c): the LP bound, and the columns of its optimum
 * for the search's LP dive (planner/search/lp_dive.c). Internal to the planner.
 *
 * Columns are objects: a chain of pairwise time-disjoint records and a shape (per-dimension
 * extents) that covers them, costing the shape's volume; rows are records, each to be covered
 * at least once. Solved by column generation (see bounds_lp.c). */
#ifndef TANGRAM_PLANNER_BOUNDS_LP_H
#define TANGRAM_PLANNER_BOUNDS_LP_H

#include "tangram/planner.h"

typedef struct tg__lp tg__lp;

/* Set up the LP of records[0..count). `*out` is NULL (and TG_OK) when the LP does not apply:
 * fewer than 2 or more than 1024 records, or too many distinct shapes. `max_work` caps the
 * inner-loop steps (0 = the default); `deadline_us` (tg__now_us clock, 0 = none) stops it too.
 * Records must be valid (tg_bounds_compute's checks). */
tg_status tg__lp_create(const tg_usage_record *records, size_t count, uint64_t max_work,
                        uint64_t deadline_us, const tg_allocator *alloc, tg__lp **out);

/* Column generation until the LP's optimum (*optimal = 1), or the bound reaches `target`
 * (0 = none), or the work or deadline runs out. TG_ERROR_OUT_OF_HOST_MEMORY on allocation
 * failure (the LP stays valid to destroy). */
tg_status tg__lp_solve(tg__lp *lp, uint64_t target, int *optimal);

/* The exact lower bound from the best duals seen (0 when none): no objects plan of the
 * records is smaller. */
uint64_t tg__lp_bound(tg__lp *lp);

/* The columns of the current basic solution with a value above 1e-6, into cols (room for
 * `count` entries); returns their number. Members are indices into the LP's records, valid
 * until the LP changes. */
typedef struct tg__lp_column {
  double x;
  const uint32_t *members;
  uint32_t len;
  uint64_t volume;
} tg__lp_column;
size_t tg__lp_solution(const tg__lp *lp, tg__lp_column *cols);

/* The inner-loop steps spent so far (what max_work caps). */
uint64_t tg__lp_work_done(const tg__lp *lp);

void tg__lp_destroy(tg__lp *lp);

#endif
