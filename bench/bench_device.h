/* The realisation benchmark of a GPU backend, shared by bench_opencl.c and bench_vulkan.c: the
 * time to realise the best plan of a model on a device and release it again
 * (tg_realization_create + tg_realization_destroy), for the backend's cases.
 *
 *   bench_<backend> [MODEL.tflite [ITERATIONS [fp16|fp32]]]
 *       (default: pose_landmark_lite.tflite from the model cache; 50 iterations; fp16)
 *
 * One check runs before timing, so the shadow run's kernels or pipelines exist and the numbers
 * exclude their creation. $TANGRAM_DEVICE picks the device. Target: <= 20 ms per create +
 * destroy. Exit status 0 also when no device of the backend exists (it says so), 1 on failure
 * (a validation message included). */
#ifndef TANGRAM_BENCH_DEVICE_H
#define TANGRAM_BENCH_DEVICE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "tangram/backend.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/planner.h"

#define TARGET_MS 20.0

typedef struct bench_case {
  const char *label;
  tg_storage storage;
  tg_mode mode;
} bench_case;

/* Plan, warm up, then time `iterations` create + destroy pairs. Returns 0 on success. */
static int run_case(tg_device *dev, const tg_graph *graph, const tg_lifetimes *lifetimes,
                    const bench_case *bc, tg_precision precision, int iterations) {
  const tg_device_info *info = tg_device_get_info(dev);
  tg_error_info err = {{0}};
  tg_model_records *mr = NULL;
  int rc = 1;
  tg_tensor_resource *res = NULL;
  tg_record_set *arena = NULL;
  tg_plan *plan = NULL;
  double *t = NULL;
  tg_status st = tg_model_records_create(graph, lifetimes, bc->storage, precision, &info->limits,
                                         NULL, &mr, &err);
  if (st != TG_OK) {
    fprintf(stderr, "%s: records: %s\n", bc->label, err.message);
    goto done;
  }
  const tg_record_set *set = mr->records;
  res = calloc(set->count ? set->count : 1, sizeof *res);
  t = calloc((size_t)iterations, sizeof *t);
  if (res == NULL || t == NULL) goto done;
  uint64_t texel = tg_precision_texel_bytes(precision);
  for (size_t r = 0; r < set->count; ++r) {
    const tg_extent *s = &set->records[r].size;
    if (set->dims == 1) res[r] = (tg_tensor_resource){TG_STORAGE_BUFFER, {s->w, 1, 1}, s->w};
    else res[r] = (tg_tensor_resource){bc->storage, *s, s->w * s->h * s->d * texel};
  }
  /* Arena: records with the driver's own sizes and alignments (and bufferImageGranularity). */
  const tg_record_set *planned = set;
  if (bc->mode == TG_MODE_OFFSETS) {
    if ((st = tg_device_compute_arena_records(dev, res, set->records, set->count, precision, NULL,
                                              &arena)) != TG_OK) {
      fprintf(stderr, "%s: arena records: %s\n", bc->label, tg_status_string(st));
      goto done;
    }
    planned = arena;
  }
  tg_plan_options opt = {0};
  opt.mode = bc->mode;
  opt.strategy = TG_STRATEGY_BEST;
  opt.alignment = bc->mode == TG_MODE_OFFSETS ? info->buffer_alignment : 0;
  if ((st = tg_plan_compute(planned->records, planned->count, planned->dims, &opt, NULL, &plan)) != TG_OK) {
    fprintf(stderr, "%s: plan: %s\n", bc->label, tg_status_string(st));
    goto done;
  }
  tg_realize_desc desc = {plan, planned->records, planned->count, planned->dims, res, precision, 0};
  /* Warm-up: one realisation and check, which creates the shadow run's pipelines. */
  tg_realization *z = NULL;
  double t0 = bench_now_ms();
  if ((st = tg_realization_create(dev, &desc, NULL, &z, &err)) != TG_OK) {
    fprintf(stderr, "%s: realize: %s\n", bc->label, err.message);
    goto done;
  }
  tg_check_result cr = {0, NULL, 0};
  st = tg_realization_check(z, NULL, &cr, &err);
  tg_realization_destroy(z);
  double warm = bench_now_ms() - t0;
  if (st != TG_OK || cr.corrupted_records) {
    fprintf(stderr, "%s: warm-up check: %s\n", bc->label, st != TG_OK ? err.message : "corruption");
    goto done;
  }
  tg_realization_stats stats = {0};
  for (int i = 0; i < iterations; ++i) {
    double a = bench_now_ms();
    if ((st = tg_realization_create(dev, &desc, NULL, &z, &err)) != TG_OK) {
      fprintf(stderr, "%s: realize: %s\n", bc->label, err.message);
      goto done;
    }
    if (i == 0) tg_realization_get_stats(z, &stats);
    tg_realization_destroy(z);
    t[i] = bench_now_ms() - a;
  }
  qsort(t, (size_t)iterations, sizeof *t, bench_cmp_double);
  double sum = 0;
  for (int i = 0; i < iterations; ++i) sum += t[i];
  double median = t[iterations / 2];
  printf("%-18s %4zu records %3llu allocations %3llu views %10llu bytes | create+destroy "
         "min %7.3f ms  median %7.3f ms  mean %7.3f ms  max %7.3f ms | first create+check+destroy "
         "%8.1f ms | %s\n",
         bc->label, set->count, (unsigned long long)stats.allocations,
         (unsigned long long)stats.views, (unsigned long long)stats.allocated_bytes, t[0], median,
         sum / iterations, t[iterations - 1], warm, median <= TARGET_MS ? "ok" : "OVER TARGET");
  rc = 0;
done:
  free(t);
  tg_plan_destroy(plan);
  tg_record_set_destroy(arena);
  free(res);
  tg_model_records_destroy(mr);
  return rc;
}

/* main() of bench_`name` on `backend` with its `cases`. */
static int bench_device_main(int argc, char **argv, tg_backend_kind backend, const char *name,
                             const bench_case *cases, size_t case_count) {
  char path[1024];
  if (argc > 1) snprintf(path, sizeof path, "%s", argv[1]);
  else bench_model_path(path, sizeof path, "pose_landmark_lite.tflite");
  int iterations = argc > 2 ? atoi(argv[2]) : 50;
  if (iterations < 1) iterations = 1;
  tg_precision precision = TG_PRECISION_FP16;
  if (argc > 3 && tg_precision_from_name(argv[3], &precision) != TG_OK) {
    fprintf(stderr, "%s: precision '%s' is not fp16 or fp32\n", name, argv[3]);
    return 1;
  }
  tg_error_info err = {{0}};
  tg_model *model = NULL;
  if (tg_model_load(path, NULL, &model, &err) != TG_OK) {
    fprintf(stderr, "%s: %s (run scripts/fetch-models.sh)\n", name, err.message);
    return 1;
  }
  tg_lifetimes *lifetimes = NULL;
  if (model->kind != TG_MODEL_GRAPH ||
      tg_graph_compute_lifetimes(model->graph, NULL, NULL, &lifetimes, &err) != TG_OK) {
    fprintf(stderr, "%s: %s\n", name, model->kind != TG_MODEL_GRAPH ? "not a graph" : err.message);
    tg_model_destroy(model);
    return 1;
  }
  tg_device_options opt = {.backend = backend, .device = getenv("TANGRAM_DEVICE")};
  tg_device *dev = NULL;
  if (tg_device_open(&opt, NULL, &dev, NULL, NULL, &err) != TG_OK) {
    printf("%s: no %s device (%s): nothing to measure\n", name, tg_backend_name(backend), err.message);
    tg_lifetimes_destroy(lifetimes);
    tg_model_destroy(model);
    return 0;
  }
  const tg_device_info *info = tg_device_get_info(dev);
  printf("%s: %s on %s (%s), %d iterations, %s, target <= %.0f ms\n", name, path, info->name, info->driver,
         iterations, tg_precision_name(precision), TARGET_MS);
  int rc = 0;
  for (size_t i = 0; i < case_count; ++i)
    if (run_case(dev, model->graph, lifetimes, &cases[i], precision, iterations) != 0) rc = 1;
  uint64_t messages = tg_device_get_validation_messages(dev);
  if (messages) {
    fprintf(stderr, "%s: %llu validation message(s)\n", name, (unsigned long long)messages);
    rc = 1;
  }
  tg_device_close(dev);
  tg_lifetimes_destroy(lifetimes);
  tg_model_destroy(model);
  return rc;
}

#endif
