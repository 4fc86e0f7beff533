/* ONNX benchmark: read a .onnx model (decode and shape inference), then evaluate every
 * storage x mode x strategy (plus best), each plan validated, as `tangram evaluate` does.
 *
 *   bench_onnx [MODEL [NAME:DxDx... [RUNS]]]
 *       default: ch_PP-OCRv4_det_infer.onnx from the model cache, x:1x3x640x640, 5 runs
 *
 * Target: read + infer + full evaluation of the detector at 640x640 <= 200 ms (median). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#include "core/internal.h"
#include "tangram/model.h"
#include "tangram/report.h"

#define TARGET_MS 200.0

/* "x:1x3x640x640" -> shape (name points into `text`'s copy in `name`). */
static int parse_shape(const char *text, char *name, size_t name_size, tg_input_shape *s) {
  const char *colon = strrchr(text, ':');
  if (colon == NULL || (size_t)(colon - text) >= name_size) return 0;
  memcpy(name, text, (size_t)(colon - text));
  name[colon - text] = '\0';
  memset(s, 0, sizeof *s);
  s->name = name;
  const char *p = colon + 1;
  while (*p && s->rank < TG_MAX_RANK) {
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 0) return 0;
    s->dims[s->rank++] = v;
    p = *end == 'x' ? end + 1 : end;
    if (*end != 'x' && *end != '\0') return 0;
  }
  return s->rank > 0;
}

int main(int argc, char **argv) {
  char buf[1024], name[256];
  const char *path = argc > 1 ? argv[1] : bench_model_path(buf, sizeof buf, "ch_PP-OCRv4_det_infer.onnx");
  const char *shape_text = argc > 2 ? argv[2] : "x:1x3x640x640";
  int runs = argc > 3 ? atoi(argv[3]) : 5;
  if (runs < 1 || runs > 1000) runs = 5;
  tg_input_shape shape;
  if (!parse_shape(shape_text, name, sizeof name, &shape)) {
    fprintf(stderr, "bench_onnx: input shape must be NAME:DxDx..., not '%s'\n", shape_text);
    return 2;
  }
  tg_model_options options = {&shape, 1};
  uint64_t read_us[1000], eval_us[1000], total_us[1000];
  size_t plans = 0, invalid = 0, tensors = 0, ops = 0;
  char sentence[512] = "";
  for (int i = 0; i < runs; ++i) {
    tg_error_info err = {{0}};
    tg_model *m = NULL;
    uint64_t t0 = tg__now_us();
    tg_status st = tg_model_load_with(path, &options, NULL, &m, &err);
    uint64_t t1 = tg__now_us();
    if (st != TG_OK) {
      fprintf(stderr, "bench_onnx: %s (run scripts/fetch-models.sh)\n", err.message);
      return 1;
    }
    tg_evaluation *ev = NULL;
    st = tg_evaluation_create_from_graph(m->graph, NULL, NULL, &ev, &err);
    uint64_t t2 = tg__now_us();
    if (st != TG_OK) {
      fprintf(stderr, "bench_onnx: %s\n", err.message);
      tg_model_destroy(m);
      return 1;
    }
    read_us[i] = t1 - t0;
    eval_us[i] = t2 - t1;
    total_us[i] = t2 - t0;
    if (i == 0) {
      tensors = m->graph->tensor_count;
      ops = m->graph->op_count;
      for (size_t r = 0; r < ev->result_count; ++r) {
        plans += !ev->results[r].skipped;
        invalid += !ev->results[r].skipped && !ev->results[r].valid;
      }
      tg_evaluation_describe(ev, sentence, sizeof sentence);
    }
    tg_evaluation_destroy(ev);
    tg_model_destroy(m);
  }
  qsort(read_us, (size_t)runs, sizeof read_us[0], bench_cmp_u64);
  qsort(eval_us, (size_t)runs, sizeof eval_us[0], bench_cmp_u64);
  qsort(total_us, (size_t)runs, sizeof total_us[0], bench_cmp_u64);
  double median = (double)total_us[runs / 2] / 1000.0;
  printf("bench_onnx: %s at %s: %zu tensors, %zu ops\n", path, shape_text, tensors, ops);
  printf("  %zu storage x mode x strategy results planned and validated (%zu invalid)\n", plans, invalid);
  printf("  %s\n", sentence);
  printf("  read + shape inference: median %.1f ms; evaluation: median %.1f ms\n",
         (double)read_us[runs / 2] / 1000.0, (double)eval_us[runs / 2] / 1000.0);
  printf("  read + infer + evaluate: min %.1f ms, median %.1f ms over %d runs (target <= %.0f ms): %s\n",
         (double)total_us[0] / 1000.0, median, runs, TARGET_MS, median <= TARGET_MS ? "ok" : "OVER TARGET");
  return invalid ? 1 : 0;
}
