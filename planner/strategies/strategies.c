/* The strategy table: which function plans a strategy in a mode, and the strategies `best`
 * runs. */
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
      case TG_STRATEGY_BEAM: return tg__objects_beam;
      case TG_STRATEGY_GREEDY_COLORING: return tg__objects_greedy_coloring;
      default: return NULL;
    }
  }
  if (mode != TG_MODE_OFFSETS) return NULL;
  switch (s) {
    case TG_STRATEGY_NAIVE: return tg__offsets_naive;
    case TG_STRATEGY_GREEDY_IN_ORDER: return tg__offsets_greedy_in_order;
    case TG_STRATEGY_GREEDY_BY_BREADTH: return tg__offsets_greedy_by_breadth;
    case TG_STRATEGY_GREEDY_BY_SIZE: return tg__offsets_greedy_by_size;
    case TG_STRATEGY_BEAM: return tg__offsets_beam;
    case TG_STRATEGY_ALLOCATION_TREE: return tg__offsets_allocation_tree;
    case TG_STRATEGY_GREEDY_BY_CONFLICTS: return tg__offsets_greedy_by_conflicts;
    case TG_STRATEGY_HILL_CLIMB: return tg__offsets_hill_climb;
    default: return NULL;
  }
}

/* Public: see planner.h. */
int tg_strategy_applies(tg_strategy s, tg_mode mode, uint32_t dims) {
  if ((unsigned)s >= TG_STRATEGY_COUNT || (mode != TG_MODE_OBJECTS && mode != TG_MODE_OFFSETS) ||
      dims < 1 || dims > 3 || (mode == TG_MODE_OFFSETS && dims != 1))
    return 0;
  if (s == TG_STRATEGY_GREEDY_COLORING && dims != 1) return 0;
  return s == TG_STRATEGY_BEST || tg__strategy_fn_get(mode, s) != NULL;
}

/* Every strategy but `best`: TFLite's as `best` always ran them, then the peers' that cost
 * about a greedy pass, then those that can cost many (min-cost-flow, allocation-tree, beam,
 * hill-climb), which `best` skips once a plan meets the lower bound. */
static const tg_strategy k_best_runs[] = {
    TG_STRATEGY_NAIVE,           TG_STRATEGY_EQUALITY,        TG_STRATEGY_GREEDY_IN_ORDER,
    TG_STRATEGY_GREEDY_BY_BREADTH, TG_STRATEGY_GREEDY_BY_SIZE, TG_STRATEGY_GREEDY_COLORING,
    TG_STRATEGY_GREEDY_BY_CONFLICTS, TG_STRATEGY_MIN_COST_FLOW, TG_STRATEGY_ALLOCATION_TREE,
    TG_STRATEGY_BEAM,            TG_STRATEGY_HILL_CLIMB};

size_t tg__best_strategy_count(void) { return sizeof k_best_runs / sizeof k_best_runs[0]; }

tg_strategy tg__best_strategy_at(size_t i) { return k_best_runs[i]; }
