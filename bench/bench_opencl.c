/* OpenCL realisation benchmark: the time to realise the best plan of a model on an OpenCL
 * device and release it again (tg_realization_create + tg_realization_destroy), for buffer
 * objects, buffer offsets (one arena of sub-buffers) and texture_2d objects.
 *
 *   bench_opencl [MODEL.tflite [ITERATIONS]]
 *       (default: pose_landmark_lite.tflite from $TANGRAM_MODEL_CACHE or
 *        ~/.cache/tangram/models; 50 iterations)
 *
 * The shadow run's kernels are compiled (and one check run) before timing, so the numbers
 * exclude the first kernel compile. Target: <= 20 ms per create + destroy. Exit status 0 also
 * when no OpenCL device exists (it says so), 1 on failure. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tangram/backend.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/planner.h"

#define TARGET_MS 20.0

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct bench_case {
  const char *label;
  tg_storage storage;
  tg_mode mode;
} bench_case;

/* Plan, warm up, then time `iterations` create + destroy pairs. Returns 0 on success. */
static int run_case(tg_device *dev, const tg_graph *graph, const tg_lifetimes *lifetimes,
                    const bench_case *bc, int iterations, double *median_out) {
  const tg_device_info *info = tg_device_get_info(dev);
  tg_error_info err = {{0}};
  tg_model_records *mr = NULL;
  int rc = 1;
  tg_tensor_resource *res = NULL;
  tg_record_set *arena = NULL;
  tg_plan *plan = NULL;
  double *t = NULL;
  tg_status st = tg_model_records_create(graph, lifetimes, bc->storage, TG_PRECISION_FP16,
                                         &info->limits, NULL, &mr, &err);
  if (st != TG_OK) {
    fprintf(stderr, "%s: records: %s\n", bc->label, err.message);
    goto done;
  }
  const tg_record_set *set = mr->records;
  res = calloc(set->count ? set->count : 1, sizeof *res);
  t = calloc((size_t)iterations, sizeof *t);
  if (res == NULL || t == NULL) goto done;
  for (size_t r = 0; r < set->count; ++r) {
    const tg_extent *s = &set->records[r].size;
    if (set->dims == 1)
      res[r] = (tg_tensor_resource){TG_STORAGE_BUFFER, {s->w, 1, 1}, s->w};
    else
      res[r] = (tg_tensor_resource){bc->storage, *s, s->w * s->h * s->d * 8};
  }
  const tg_record_set *planned = set;
  if (bc->mode == TG_MODE_OFFSETS) {
    if ((st = tg_device_compute_arena_records(dev, res, set->records, set->count, TG_PRECISION_FP16,
                                              NULL, &arena)) != TG_OK) {
      fprintf(stderr, "%s: arena records: %s\n", bc->label, tg_status_string(st));
      goto done;
    }
    planned = arena;
  }
  tg_plan_options opt = {0};
  opt.mode = bc->mode;
  opt.strategy = TG_STRATEGY_BEST;
  opt.alignment = bc->mode == TG_MODE_OFFSETS ? info->buffer_alignment : 0;
  if ((st = tg_plan_compute(planned->records, planned->count, planned->dims, &opt, NULL, &plan)) !=
      TG_OK) {
    fprintf(stderr, "%s: plan: %s\n", bc->label, tg_status_string(st));
    goto done;
  }
  tg_realize_desc desc = {plan, set->records, set->count, set->dims, res, TG_PRECISION_FP16, 0};
  /* Warm-up: the first check compiles the kernels (or loads them from the driver's cache). */
  tg_realization *z = NULL;
  double t0 = now_ms();
  if ((st = tg_realization_create(dev, &desc, NULL, &z, &err)) != TG_OK) {
    fprintf(stderr, "%s: realize: %s\n", bc->label, err.message);
    goto done;
  }
  tg_check_result cr = {0, NULL, 0};
  st = tg_realization_check(z, NULL, &cr, &err);
  tg_realization_destroy(z);
  double warm = now_ms() - t0;
  if (st != TG_OK || cr.corrupted_records) {
    fprintf(stderr, "%s: warm-up check: %s\n", bc->label, st != TG_OK ? err.message : "corruption");
    goto done;
  }
  tg_realization_stats stats = {0};
  for (int i = 0; i < iterations; ++i) {
    double a = now_ms();
    if ((st = tg_realization_create(dev, &desc, NULL, &z, &err)) != TG_OK) {
      fprintf(stderr, "%s: realize: %s\n", bc->label, err.message);
      goto done;
    }
    if (i == 0) tg_realization_get_stats(z, &stats);
    tg_realization_destroy(z);
    t[i] = now_ms() - a;
  }
  qsort(t, (size_t)iterations, sizeof *t, cmp_double);
  double sum = 0;
  for (int i = 0; i < iterations; ++i) sum += t[i];
  double median = t[iterations / 2];
  printf(
      "%-18s %4zu records %3llu allocations %3llu views %10llu bytes | create+destroy "
      "min %7.3f ms  median %7.3f ms  mean %7.3f ms  max %7.3f ms | first create+check+destroy "
      "%8.1f ms | %s\n",
      bc->label, set->count, (unsigned long long)stats.allocations, (unsigned long long)stats.views,
      (unsigned long long)stats.allocated_bytes, t[0], median, sum / iterations, t[iterations - 1],
      warm, median <= TARGET_MS ? "ok" : "OVER TARGET");
  *median_out = median;
  rc = 0;
done:
  free(t);
  tg_plan_destroy(plan);
  tg_record_set_destroy(arena);
  free(res);
  tg_model_records_destroy(mr);
  return rc;
}

int main(int argc, char **argv) {
  char path[1024];
  if (argc > 1) {
    snprintf(path, sizeof path, "%s", argv[1]);
  } else {
    const char *cache = getenv("TANGRAM_MODEL_CACHE");
    const char *home = getenv("HOME");
    if (cache && *cache)
      snprintf(path, sizeof path, "%s/pose_landmark_lite.tflite", cache);
    else
      snprintf(path, sizeof path, "%s/.cache/tangram/models/pose_landmark_lite.tflite",
               home ? home : ".");
  }
  int iterations = argc > 2 ? atoi(argv[2]) : 50;
  if (iterations < 1) iterations = 1;

  tg_error_info err = {{0}};
  tg_model *model = NULL;
  if (tg_model_load(path, NULL, &model, &err) != TG_OK) {
    fprintf(stderr, "bench_opencl: %s (run scripts/fetch-models.sh)\n", err.message);
    return 1;
  }
  if (model->kind != TG_MODEL_GRAPH) {
    fprintf(stderr, "bench_opencl: %s is not a graph\n", path);
    tg_model_destroy(model);
    return 1;
  }
  tg_lifetimes *lifetimes = NULL;
  if (tg_graph_compute_lifetimes(model->graph, NULL, NULL, &lifetimes, &err) != TG_OK) {
    fprintf(stderr, "bench_opencl: %s\n", err.message);
    tg_model_destroy(model);
    return 1;
  }
  tg_device_options opt = {0};
  opt.backend = TG_BACKEND_OPENCL;
  opt.device = getenv("TANGRAM_DEVICE");
  tg_device *dev = NULL;
  tg_status st = tg_device_open(&opt, NULL, &dev, NULL, NULL, &err);
  if (st != TG_OK) {
    printf("bench_opencl: no OpenCL device (%s): nothing to measure\n", err.message);
    tg_lifetimes_destroy(lifetimes);
    tg_model_destroy(model);
    return 0;
  }
  const tg_device_info *info = tg_device_get_info(dev);
  printf("bench_opencl: %s on %s (%s), %d iterations, fp16, target <= %.0f ms\n", path, info->name,
         info->driver, iterations, TARGET_MS);
  static const bench_case cases[] = {
      {"buffer objects", TG_STORAGE_BUFFER, TG_MODE_OBJECTS},
      {"buffer offsets", TG_STORAGE_BUFFER, TG_MODE_OFFSETS},
      {"texture_2d objects", TG_STORAGE_TEXTURE_2D, TG_MODE_OBJECTS},
  };
  int rc = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    double median = 0;
    if (run_case(dev, model->graph, lifetimes, &cases[i], iterations, &median) != 0) rc = 1;
  }
  tg_device_close(dev);
  tg_lifetimes_destroy(lifetimes);
  tg_model_destroy(model);
  return rc;
}
