/* The strategy table: which function plans a strategy in a mode. */
#include "planner/base/base.h"

tg__strategy_fn tg__strategy_fn_get(tg_mode mode, tg_strategy s) {
  if (mode == TG_MODE_OBJECTS) {
    switch (s) {
      case TG_STRATEGY_NAIVE: return tg__objects_naive;
      case TG_STRATEGY_EQUALITY: return tg__objects_equality;
      case TG_STRATEGY_GREEDY_IN_ORDER: return tg__objects_greedy_in_order;
      case TG_STRATEGY_GREEDY_BY_BREADTH: return tg__objects_greedy_by_breadth;
      case TG_STRATEGY_GREEDY_BY_SIZE: return tg__objects_greedy_by_size;
      case TG_STRATEGY_MIN_COST_FLOW: return tg__objects_min_cost_flow;
      default: return NULL;
    }
  }
  switch (s) {
    case TG_STRATEGY_NAIVE: return tg__offsets_naive;
    case TG_STRATEGY_GREEDY_IN_ORDER: return tg__offsets_greedy_in_order;
    case TG_STRATEGY_GREEDY_BY_BREADTH: return tg__offsets_greedy_by_breadth;
    case TG_STRATEGY_GREEDY_BY_SIZE: return tg__offsets_greedy_by_size;
    default: return NULL;
  }
}
