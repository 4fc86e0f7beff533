/* Op ordering benchmark: the time of the memory-aware order search (tangram/order.h) and its
 * gain on the MediaPipe models of the model cache and on random DAGs.
 *
 *   bench_order [OPS [SEED]]      (default 10000 ops, seed 1)
 *
 * Models: buffer fp32 records, default options (1 s budget). Random DAG: network-like (mostly
 * chains, joins of two or three tensors, some long skips), once with the default options
 * (heuristic, the exact search is skipped above 512 ops) and once heuristic-only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/order.h"

#include "bench/random_graph.h"

/* Search an order for `g` (buffer fp32 sizes) and print one line. Returns 0 on failure. */
static int bench_graph(const char *what, const tg_graph *g, const tg_order_options *opt) {
  tg_lifetimes *lt = NULL;
  tg_model_records *mr = NULL;
  tg_op_order *o = NULL;
  tg_error_info err = {{0}};
  uint64_t *sizes = calloc(g->tensor_count ? g->tensor_count : 1, sizeof *sizes);
  tg_status st = sizes ? tg_graph_compute_lifetimes(g, NULL, NULL, &lt, &err) : TG_ERROR_OUT_OF_HOST_MEMORY;
  if (st == TG_OK)
    st = tg_model_records_create(g, lt, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL, NULL, &mr, &err);
  if (st == TG_OK) {
    for (size_t r = 0; r < mr->records->count; ++r) sizes[mr->tensor_of[r]] = mr->records->records[r].size.w;
    uint64_t t0 = tg__now_us();
    st = tg_op_order_compute(g, lt, sizes, opt, NULL, &o, &err);
    uint64_t us = tg__now_us() - t0;
    if (st == TG_OK)
      printf("%-40s %6zu ops %5zu folded %12llu -> %12llu bytes %6.2f%%  %-9s %-7s %10.1f ms  %llu states\n", what,
             g->op_count, o->folded_count, (unsigned long long)o->original_peak, (unsigned long long)o->peak,
             o->original_peak ? 100.0 * (1.0 - (double)o->peak / (double)o->original_peak) : 0.0,
             tg_order_method_name(o->method), o->proved_optimal ? "optimal" : "-", (double)us / 1000.0,
             (unsigned long long)o->exact_states);
  }
  if (st != TG_OK) fprintf(stderr, "%s: %s: %s\n", what, tg_status_name(st), err.message);
  tg_op_order_destroy(o);
  tg_model_records_destroy(mr);
  tg_lifetimes_destroy(lt);
  free(sizes);
  return st == TG_OK;
}

int main(int argc, char **argv) {
  size_t ops = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 10000;
  uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
  int ok = 1;
  static const char *const k_models[] = {"face_detection_short_range.tflite", "hand_landmark_lite.tflite",
                                         "pose_landmark_lite.tflite", "selfie_segmentation.tflite"};
  const char *cache = getenv("TANGRAM_MODEL_CACHE"), *home = getenv("HOME");
  printf("%-40s %6s %5s %12s    %12s %13s  %-9s %-7s %13s\n", "graph", "", "", "peak before", "after", "gain",
         "method", "proved", "search time");
  for (size_t i = 0; i < sizeof k_models / sizeof k_models[0]; ++i) {
    char path[4096];
    if (cache && *cache) snprintf(path, sizeof path, "%s/%s", cache, k_models[i]);
    else snprintf(path, sizeof path, "%s/.cache/tangram/models/%s", home ? home : ".", k_models[i]);
    tg_graph *g = NULL;
    if (tg_graph_read_tflite(path, NULL, &g, NULL) != TG_OK) {
      printf("%-40s not in the model cache (scripts/fetch-models.sh)\n", k_models[i]);
      continue;
    }
    ok &= bench_graph(k_models[i], g, NULL);
    tg_graph_destroy(g);
  }
  for (size_t n = 100; n <= ops; n = n * 10 > ops && n < ops ? ops : n * 10) {
    tg_graph *g = random_graph(n, seed);
    if (g == NULL) {
      fprintf(stderr, "random graph: out of memory\n");
      return 1;
    }
    char what[64];
    snprintf(what, sizeof what, "random DAG, seed %llu", (unsigned long long)seed);
    ok &= bench_graph(what, g, NULL);
    tg_order_options opt;
    memset(&opt, 0, sizeof opt);
    opt.no_exact = 1;
    snprintf(what, sizeof what, "random DAG, seed %llu, heuristic only", (unsigned long long)seed);
    ok &= bench_graph(what, g, &opt);
    tg_graph_destroy(g);
    if (n == ops) break;
  }
  return ok ? 0 : 1;
}
