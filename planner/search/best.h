/* The entry of planner/search/: strategy `best`. */
#ifndef TANGRAM_PLANNER_SEARCH_BEST_H
#define TANGRAM_PLANNER_SEARCH_BEST_H

#include "planner/base/base.h"

/* Strategy `best` on a checked input: every applicable greedy strategy, the smallest plan
 * kept, then (time_limit_ms > 0 or exact) the search and exact modes. `*out` is the plan, or
 * NULL on failure. */
tg_status tg__best_plan(const tg__plan_input *in, tg_plan **out);

#endif
