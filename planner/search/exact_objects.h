/* Objects mode, 1D: the exact branch-and-bound over object assignments (exact_objects.c). */
#ifndef TANGRAM_PLANNER_EXACT_OBJECTS_H
#define TANGRAM_PLANNER_EXACT_OBJECTS_H

#include "planner/search/search.h"

/* Largest record count the objects branch-and-bound takes on. */
#define TG__EXACT_OBJECTS_MAX_RECORDS ((size_t)2048)

/* Improve `*best` (a valid objects plan for `in`, 1D) by branch-and-bound,
 * TG__EXACT_OBJECTS_NODES_PER_UNIT nodes a unit of `b` (no cap: until its deadline), until
 * its deadline; charges `b`. Replaces `*best` only by a strictly smaller plan. Fills `stats`
 * (never NULL): proved_optimal when the search finished, nodes, lower_bound, total,
 * elapsed_us, searched (0 for 2D/3D records or more than TG__EXACT_OBJECTS_MAX_RECORDS). */
tg_status tg__exact_objects_improve(const tg__plan_input *in, tg__budget *b, tg_plan **best,
                                    tg_exact_stats *stats);

/* Nodes a work unit when the branch-and-bound serves as `best`'s search (about a third of
 * what one core visits in a millisecond). */
#define TG__EXACT_OBJECTS_NODES_PER_UNIT ((uint64_t)8000)

#endif
