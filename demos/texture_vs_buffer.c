/* Texture or buffer? How much GPU memory a model needs in each storage type.
 *
 * Loads a model (.tflite, text graph), and for each storage type builds its usage records
 * (tensors that do not fit a texture fall back to buffers), plans them with the `best`
 * strategy as shared objects, and prints the bytes next to the naive "one allocation per
 * tensor" figure.
 *
 *   texture_vs_buffer MODEL [fp16]   */
#include <stdio.h>
#include <string.h>

#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/planner.h"

/* Bytes of the best objects plan of one record set (textures: texels x bytes per texel). */
static tg_status best_bytes(const tg_record_set *set, uint64_t texel_bytes, uint64_t *bytes,
                            uint64_t *naive) {
  *bytes = *naive = 0;
  if (set == NULL || set->count == 0) return TG_OK;
  tg_plan_options options = {0};
  options.strategy = TG_STRATEGY_BEST;
  tg_plan *plan = NULL;
  tg_status st = tg_plan_compute(set->records, set->count, set->dims, &options, NULL, &plan);
  if (st != TG_OK) return st;
  uint64_t unit = set->dims == 1 ? 1 : texel_bytes;
  *bytes = plan->total * unit;
  tg_plan_destroy(plan);
  tg_bounds b;
  st = tg_bounds_compute(set->records, set->count, set->dims, NULL, &b);
  *naive = b.naive * unit;
  return st;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: texture_vs_buffer MODEL [fp16]\n");
    return 2;
  }
  tg_precision precision = (argc > 2 && strcmp(argv[2], "fp16") == 0) ? TG_PRECISION_FP16 : TG_PRECISION_FP32;
  tg_model *model = NULL;
  tg_error_info err;
  if (tg_model_load(argv[1], NULL, &model, &err) != TG_OK) {
    fprintf(stderr, "%s\n", err.message);
    return 2;
  }
  if (model->kind != TG_MODEL_GRAPH) {
    fprintf(stderr, "%s holds usage records, not a graph: no storage choice to make\n", argv[1]);
    tg_model_destroy(model);
    return 2;
  }
  tg_lifetimes *lt = NULL;
  if (tg_graph_compute_lifetimes(model->graph, NULL, NULL, &lt, &err) != TG_OK) {
    fprintf(stderr, "%s\n", err.message);
    tg_model_destroy(model);
    return 2;
  }
  tg_device_limits limits = tg_device_limits_default(); /* a conservative mobile GPU */
  printf("%-18s %14s %14s %9s\n", "storage", "naive bytes", "planned bytes", "fallbacks");
  for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
    tg_model_records *mr = NULL;
    if (tg_model_records_create(model->graph, lt, (tg_storage)s, precision, &limits, NULL, &mr, &err) != TG_OK) {
      printf("%-18s %s\n", tg_storage_name((tg_storage)s), err.message);
      continue;
    }
    uint64_t bytes, naive, fb_bytes, fb_naive;
    uint64_t texel = tg_precision_texel_bytes(precision);
    if (best_bytes(mr->records, texel, &bytes, &naive) != TG_OK ||
        best_bytes(mr->fallback, texel, &fb_bytes, &fb_naive) != TG_OK) {
      tg_model_records_destroy(mr);
      break;
    }
    printf("%-18s %14llu %14llu %9zu\n", tg_storage_name((tg_storage)s),
           (unsigned long long)(naive + fb_naive), (unsigned long long)(bytes + fb_bytes),
           mr->fallback ? mr->fallback->count : (size_t)0);
    tg_model_records_destroy(mr);
  }
  tg_lifetimes_destroy(lt);
  tg_model_destroy(model);
  return 0;
}
