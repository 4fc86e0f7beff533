/* Objects mode, 1D: the exact branch-and-bound over object assignments (exact_objects.c). */
#ifndef TANGRAM_PLANNER_EXACT_OBJECTS_H
#define TANGRAM_PLANNER_EXACT_OBJECTS_H

#include "planner/strategies.h"

/* Largest record count the objects branch-and-bound takes on. */
#define TG__EXACT_OBJECTS_MAX_RECORDS ((size_t)2048)

/* Improve `*best` (a valid objects plan for `in`, 1D) by branch-and-bound for at most
 * `budget_us`. Replaces `*best` only by a strictly smaller plan. Fills `stats` (never NULL):
 * proved_optimal when the search finished, nodes, lower_bound, total, elapsed_us, searched
 * (0 for 2D/3D records or more than TG__EXACT_OBJECTS_MAX_RECORDS). */
tg_status tg__exact_objects_improve(const tg__plan_input *in, uint64_t budget_us, tg_plan **best,
                                    tg_exact_stats *stats);

#endif
