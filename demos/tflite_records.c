/* TFLite-style usage records in, assignment out.
 *
 * The records are TFLite's own "ComplexRecords" test case: {tensor size, first task, last
 * task}, intervals inclusive. Tangram assigns shared objects (object id per tensor plus object
 * sizes) and arena offsets, checks both plans with its validator, and compares them with the
 * lower bounds.
 *
 *   tflite_records            */
#include <stdio.h>

#include "tangram/planner.h"

int main(void) {
  static const struct { uint64_t size; uint32_t first, last; } k_records[] = {
      {32, 0, 1}, {32, 1, 4}, {8, 2, 5}, {16, 3, 5}, {8, 4, 5},
      {64, 5, 7}, {8, 6, 8},  {8, 7, 8}, {16, 8, 9}};
  enum { N = sizeof k_records / sizeof k_records[0] };
  tg_usage_record records[N];
  for (size_t i = 0; i < N; ++i)
    records[i] = (tg_usage_record){{k_records[i].size, 1, 1}, k_records[i].first, k_records[i].last, 0};

  tg_bounds bounds;
  if (tg_bounds_compute(records, N, 1, NULL, &bounds) != TG_OK) return 1;

  /* Shared objects: greedy-by-size, TFLite's distance-priority algorithm. */
  tg_plan_options options = {0};
  options.mode = TG_MODE_OBJECTS;
  options.strategy = TG_STRATEGY_GREEDY_BY_SIZE;
  tg_plan *plan = NULL;
  if (tg_plan_compute(records, N, 1, &options, NULL, &plan) != TG_OK) return 1;
  if (tg_plan_validate(records, N, 1, plan, 0, NULL, NULL, NULL) != TG_OK) return 1;
  printf("objects (greedy-by-size): total %llu bytes, bound %llu\n  object_ids:",
         (unsigned long long)plan->total, (unsigned long long)bounds.positional_max);
  for (size_t i = 0; i < N; ++i) printf(" %u", plan->object_of[i]);
  printf("\n  object_sizes:");
  for (size_t k = 0; k < plan->object_count; ++k) printf(" %llu", (unsigned long long)plan->object_sizes[k].w);
  printf("\n");
  tg_plan_destroy(plan);

  /* One arena: greedy-by-size offsets (TFLite's offset algorithm; set options.alignment for a
   * device's base-address alignment). */
  options.mode = TG_MODE_OFFSETS;
  if (tg_plan_compute(records, N, 1, &options, NULL, &plan) != TG_OK) return 1;
  if (tg_plan_validate(records, N, 1, plan, 0, NULL, NULL, NULL) != TG_OK) return 1;
  printf("offsets (greedy-by-size): total %llu bytes, bound %llu\n  offsets:",
         (unsigned long long)plan->total, (unsigned long long)bounds.peak_live);
  for (size_t i = 0; i < N; ++i) printf(" %llu", (unsigned long long)plan->offset_of[i]);
  printf("\n");
  tg_plan_destroy(plan);
  return 0;
}
