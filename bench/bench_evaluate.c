/* Evaluation benchmark: every storage x mode x strategy (plus best) for one model, each plan
 * validated, as `tangram evaluate` does.
 *
 *   bench_evaluate [MODEL [RUNS]]   (default: pose_landmark_lite.tflite from the model cache,
 *                                    5 runs)
 *
 * Target: one full evaluation (6 storages, 72 plans and their fallback plans) <= 200 ms. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#include "core/internal.h"
#include "tangram/model.h"
#include "tangram/report.h"

#define TARGET_MS 200.0

int main(int argc, char **argv) {
  char buf[1024];
  const char *path = argc > 1 ? argv[1] : bench_model_path(buf, sizeof buf, "pose_landmark_lite.tflite");
  int runs = argc > 2 ? atoi(argv[2]) : 5;
  if (runs < 1 || runs > 1000) runs = 5;
  tg_model *m = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_model_load(path, NULL, &m, &err);
  if (st != TG_OK) {
    fprintf(stderr, "bench_evaluate: %s (run scripts/fetch-models.sh)\n", err.message);
    return 1;
  }
  if (m->kind != TG_MODEL_GRAPH) {
    fprintf(stderr, "bench_evaluate: %s is not a graph\n", path);
    tg_model_destroy(m);
    return 1;
  }
  uint64_t times[1000];
  size_t plans = 0, invalid = 0;
  char sentence[512] = "";
  for (int i = 0; i < runs; ++i) {
    tg_evaluation *ev = NULL;
    uint64_t t0 = tg__now_us();
    st = tg_evaluation_create_from_graph(m->graph, NULL, NULL, &ev, &err);
    times[i] = tg__now_us() - t0;
    if (st != TG_OK) {
      fprintf(stderr, "bench_evaluate: %s\n", err.message);
      tg_model_destroy(m);
      return 1;
    }
    if (i == 0) {
      for (size_t r = 0; r < ev->result_count; ++r) {
        plans += !ev->results[r].skipped;
        invalid += !ev->results[r].skipped && !ev->results[r].valid;
      }
      tg_evaluation_describe(ev, sentence, sizeof sentence);
    }
    tg_evaluation_destroy(ev);
  }
  qsort(times, (size_t)runs, sizeof times[0], bench_cmp_u64);
  double min_ms = (double)times[0] / 1000.0, median_ms = (double)times[runs / 2] / 1000.0;
  printf("bench_evaluate: %s: %zu tensors, %zu ops\n", path, m->graph->tensor_count, m->graph->op_count);
  printf("  %zu storage x mode x strategy results planned and validated (%zu invalid)\n", plans, invalid);
  printf("  %s\n", sentence);
  printf("  full evaluation: min %.1f ms, median %.1f ms over %d runs (target <= %.0f ms): %s\n",
         min_ms, median_ms, runs, TARGET_MS, median_ms <= TARGET_MS ? "ok" : "OVER TARGET");
  tg_model_destroy(m);
  return invalid ? 1 : 0;
}
