/* Objects plans of every MediaPipe model against the best lower bound Tangram proves.
 *
 *   build/bench/bench_objects_gap [--time-limit MS] [--models DIR] [--markdown] [MODEL.tflite ...]
 *
 * For each model (default: every .tflite in the model cache, scripts/fetch-models.sh) and each
 * storage (buffer, 2D texture, 3D texture, fp32), plans objects with strategy best and
 * --time-limit MS (default 1000), validates the plan, and prints the plan's total over the
 * largest of the shape-aware, subset and LP lower bounds (tg_bounds_objects_shape,
 * tg_bounds_objects_subset, tg_bounds_objects_lp; the LP bound stops once it proves the plan
 * optimal). Totals are bytes for buffers and texels for textures. The last line counts the
 * plans within 1% of their bound. Exit 1 when a plan fails or is invalid, or a bound exceeds
 * a plan. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>

#include "bench_models.h"

typedef struct totals {
  int plans, within, failures, markdown;
  uint32_t limit_ms;
  double worst;
} totals;

static void run_storage(const char *base, const bench_storage *kind, const tg_model *model,
                        const tg_lifetimes *life, const tg_model_records *mr, void *user) {
  (void)model;
  (void)life;
  totals *t = user;
  const uint32_t limit_ms = t->limit_ms;
  const int markdown = t->markdown;
  tg_error_info err = {{0}};
  const tg_record_set *set = mr->records;
  uint64_t shape = 0, subset = 0, t0 = bench_now_us();
  tg_status st = tg_bounds_objects_shape(set->records, set->count, set->dims, NULL, &shape);
  if (st == TG_OK) st = tg_bounds_objects_subset(set->records, set->count, set->dims, 0, NULL, &subset);
  uint64_t bound_us = bench_now_us() - t0;
  tg_plan_options opt = {.mode = TG_MODE_OBJECTS, .strategy = TG_STRATEGY_BEST, .time_limit_ms = limit_ms};
  tg_plan *plan = NULL;
  t0 = bench_now_us();
  if (st == TG_OK) st = tg_plan_compute(set->records, set->count, set->dims, &opt, NULL, &plan);
  uint64_t plan_us = bench_now_us() - t0;
  if (st == TG_OK)
    st = tg_plan_validate(set->records, set->count, set->dims, plan, 0, NULL, NULL, &err);
  uint64_t lp = 0, lp_us = 0;
  if (st == TG_OK) {
    t0 = bench_now_us();
    st = tg_bounds_objects_lp(set->records, set->count, set->dims, plan->total, 0, NULL, &lp);
    lp_us = bench_now_us() - t0;
  }
  if (st == TG_OK && (shape > plan->total || subset > plan->total || lp > plan->total)) {
    fprintf(stderr, "%s %s: a lower bound exceeds the plan's total %" PRIu64 "\n", base, kind->name,
            plan->total);
    ++t->failures;
  }
  if (st != TG_OK) {
    fprintf(stderr, "%s %s: %s %s\n", base, kind->name, tg_status_name(st), err.message);
    ++t->failures;
  } else {
    uint64_t lb = shape > subset ? shape : subset;
    if (lp > lb) lb = lp;
    double ratio = lb ? (double)plan->total / (double)lb : 0;
    ++t->plans;
    t->within += ratio <= 1.01;
    if (ratio > t->worst) t->worst = ratio;
    if (markdown)
      printf("| %s | %s | %zu | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %.4f | %.0f | %.0f |\n",
             base, kind->name, set->count, plan->total, shape, subset, lp, ratio, (double)plan_us / 1000.0,
             (double)lp_us / 1000.0);
    else
      printf("%-40s %-6s %5zu records  plan %10" PRIu64 "  shape %10" PRIu64 "  subset %10" PRIu64
             "  lp %10" PRIu64 "  x%.4f  plan %.0f ms, bounds %.0f + %.0f ms\n",
             base, kind->name, set->count, plan->total, shape, subset, lp, ratio, (double)plan_us / 1000.0,
             (double)bound_us / 1000.0, (double)lp_us / 1000.0);
  }
  tg_plan_destroy(plan);
}

int main(int argc, char **argv) {
  bench_models_args a;
  int rc = bench_models_parse(argc, argv, "bench_objects_gap [--time-limit MS] [--models DIR] [--markdown] [MODEL.tflite ...]",
                              0, &a);
  if (rc) return rc < 0 ? 0 : rc;
  if (a.markdown)
    printf("| model | storage | records | plan | shape bound | subset bound | LP bound | plan / bound | plan ms | LP ms |\n"
           "|---|---|---|---|---|---|---|---|---|---|\n");
  static const bench_storage kinds[] = {{TG_STORAGE_BUFFER, "buffer"}, {TG_STORAGE_TEXTURE_2D, "tex2"},
                                        {TG_STORAGE_TEXTURE_3D, "tex3"}};
  totals t = {0, 0, 0, a.markdown, a.limit_ms, 0};
  for (size_t i = 0; i < a.model_count; ++i)
    t.failures += bench_each_storage(a.models[i], NULL, kinds, sizeof kinds / sizeof kinds[0], run_storage, &t);
  printf("%s%d objects plans, %d within 1%% of their bound, worst x%.4f, %d failures (time limit %u ms)\n",
         a.markdown ? "\n" : "", t.plans, t.within, t.worst, t.failures, a.limit_ms);
  bench_models_free(&a);
  return t.failures ? 1 : 0;
}
