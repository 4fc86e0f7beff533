/* Placeholders until the object strategies land; each returns TG_ERROR_UNSUPPORTED. */
#include "planner/strategies.h"
#define STUB(fn) tg_status fn(const tg__plan_input *in, tg_plan **out) { (void)in; *out = NULL; return TG_ERROR_UNSUPPORTED; }
STUB(tg__objects_equality)
STUB(tg__objects_greedy_in_order)
STUB(tg__objects_greedy_by_breadth)
STUB(tg__objects_greedy_by_size)
STUB(tg__objects_min_cost_flow)
