/* A branchy graph built in code, planned so that memory reuse never links parallel branches.
 *
 * An inception-like block: a stem, four branches of different lengths, a concat. Under the
 * `serial` policy the planner may hand a finished branch's memory to a tensor of another
 * branch, which silently orders two branches a parallel runtime would run together. Under
 * `parallel-safe`, a tensor only takes memory whose every user happens before its producer.
 * The program prints the execution waves and both plans.
 *
 *   branchy_graph             */
#include <stdio.h>

#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/planner.h"
#include "tangram/schedule.h"

#define CHECK(x)                                                   \
  do {                                                             \
    tg_status st_ = (x);                                           \
    if (st_ != TG_OK) {                                            \
      fprintf(stderr, "%s failed: %s\n", #x, tg_status_string(st_)); \
      return 1;                                                    \
    }                                                              \
  } while (0)

int main(void) {
  /* Tensors: 0 input, 1 stem, 2..8 branch tensors, 9 concat output. */
  static const char *const names[] = {"input", "stem", "b1", "b2a", "b2b", "b3a", "b3b", "b3c",
                                      "b4", "concat"};
  static const int64_t channels[] = {3, 32, 16, 24, 16, 8, 16, 16, 16, 64};
  tg_graph *g = NULL;
  CHECK(tg_graph_create(10, 9, NULL, &g));
  for (size_t t = 0; t < 10; ++t) {
    int64_t shape[4] = {1, 56, 56, channels[t]};
    CHECK(tg_graph_set_tensor(g, t, names[t], 4, shape, TG_DTYPE_FLOAT32, 0));
  }
  /* Ops in a topological order: stem, then the branches one after another, then concat. */
  static const struct { const char *name; int32_t in, out; } chain[] = {
      {"stem", 0, 1}, {"b1", 1, 2}, {"b2a", 1, 3}, {"b2b", 3, 4},
      {"b3a", 1, 5},  {"b3b", 5, 6}, {"b3c", 6, 7}, {"b4", 1, 8}};
  for (size_t o = 0; o < 8; ++o) CHECK(tg_graph_set_op(g, o, chain[o].name, 1, &chain[o].in, 1, &chain[o].out));
  const int32_t concat_in[] = {2, 4, 7, 8}, concat_out[] = {9};
  CHECK(tg_graph_set_op(g, 8, "concat", 4, concat_in, 1, concat_out));
  const uint32_t graph_in[] = {0}, graph_out[] = {9};
  CHECK(tg_graph_set_io(g, 1, graph_in, 1, graph_out));

  /* Lifetimes -> buffer records -> schedule. */
  tg_lifetimes *lt = NULL;
  tg_error_info err;
  CHECK(tg_graph_compute_lifetimes(g, NULL, NULL, &lt, &err));
  tg_model_records *mr = NULL;
  CHECK(tg_model_records_create(g, lt, TG_STORAGE_BUFFER, TG_PRECISION_FP16, NULL, NULL, &mr, &err));
  tg_schedule *s = NULL;
  CHECK(tg_schedule_create(g, NULL, NULL, &s, &err));

  tg_schedule_stats stats;
  tg_schedule_get_stats(s, &stats);
  printf("%zu ops in %zu waves (widest %zu):\n", stats.op_count, stats.wave_count, stats.max_wave_width);
  for (size_t w = 0; w < stats.wave_count; ++w) {
    size_t n = 0;
    const uint32_t *ops = tg_schedule_get_wave(s, w, &n);
    printf("  wave %zu:", w);
    for (size_t i = 0; i < n; ++i) printf(" %s", g->ops[ops[i]].name);
    printf("\n");
  }

  const tg_record_set *set = mr->records;
  for (int p = TG_POLICY_SERIAL; p <= TG_POLICY_PARALLEL_SAFE; ++p) {
    tg_policy_relation *rel = NULL;
    CHECK(tg_policy_relation_create(s, (tg_policy)p, mr->tensor_of, set->count, NULL, &rel));
    tg_plan_options options = {0};
    options.mode = TG_MODE_OBJECTS;
    options.strategy = TG_STRATEGY_BEST;
    options.relation = tg_policy_relation_get(rel); /* NULL for serial */
    tg_plan *plan = NULL;
    CHECK(tg_plan_compute(set->records, set->count, 1, &options, NULL, &plan));
    CHECK(tg_plan_validate(set->records, set->count, 1, plan, 0, options.relation, NULL, &err));
    tg_waits *waits = NULL;
    CHECK(tg_schedule_compute_waits(s, set->records, mr->tensor_of, set->count, plan, NULL, &waits, &err));
    printf("%-13s %zu objects, %llu bytes; on a parallel runtime: %zu extra waits, critical path %zu -> %zu\n",
           tg_policy_name((tg_policy)p), plan->object_count, (unsigned long long)plan->total,
           waits->reuse_edge_count, waits->critical_path, waits->critical_path_with_reuse);
    for (size_t k = 0; k < plan->object_count; ++k) {
      printf("    object %zu:", k);
      for (size_t r = 0; r < set->count; ++r)
        if (plan->object_of[r] == k) printf(" %s", set->names[r]);
      printf("\n");
    }
    tg_waits_destroy(waits);
    tg_plan_destroy(plan);
    tg_policy_relation_destroy(rel);
  }
  tg_schedule_destroy(s);
  tg_model_records_destroy(mr);
  tg_lifetimes_destroy(lt);
  tg_graph_destroy(g);
  return 0;
}
