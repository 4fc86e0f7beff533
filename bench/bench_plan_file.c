/* Plan files: what a saved plan costs at run time against planning there.
 *
 *   bench_plan_file [ITERATIONS]     (default 30; models from $TANGRAM_MODEL_CACHE or
 *                                     ~/.cache/tangram/models, see scripts/fetch-models.sh)
 *
 * For each public model and storage (buffer, texture_2d, texture_array, texture_3d; fp32,
 * objects mode, serial policy, strategy best without a search: `tangram run`'s defaults), the
 * median of ITERATIONS runs of:
 *   plan     tg_plan_compute (strategy best)
 *   load     tg_plan_file_load of the saved plan (read, decode, checksum, fingerprint, validate)
 *   check    tg_plan_file_match against the model's records (compared field by field)
 *   realise  tg_realization_create (validates the plan again, then allocates) on the host
 *            backend and, when one opens, an OpenCL device; destroy is not timed
 * and the ratio of planning to load + check. The model's records are built once (reading the
 * model is the same work with or without a plan file). Exit status 0, also without OpenCL (the
 * columns say n/a), 1 when something fails. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#include "tangram/backend.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/plan_file.h"
#include "tangram/planner.h"

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, bench_cmp_double);
  return t[n / 2];
}

static const char *const k_models[] = {"face_detection_short_range", "hand_landmark_lite", "pose_landmark_lite",
                                       "selfie_segmentation"};
static const tg_storage k_storages[] = {TG_STORAGE_BUFFER, TG_STORAGE_TEXTURE_2D, TG_STORAGE_TEXTURE_ARRAY,
                                        TG_STORAGE_TEXTURE_3D};

/* Median ms of tg_realization_create on `dev`; < 0 on failure. */
static double time_realise(tg_device *dev, const tg_plan *plan, const tg_record_set *set,
                           const tg_tensor_resource *res, int iterations, double *t) {
  tg_realize_desc desc = {plan, set->records, set->count, set->dims, res, TG_PRECISION_FP32, 0};
  tg_error_info err = {{0}};
  for (int i = -1; i < iterations; ++i) { /* i = -1: warm-up */
    tg_realization *z = NULL;
    double a = bench_now_ms();
    tg_status st = tg_realization_create(dev, &desc, NULL, &z, &err);
    double b = bench_now_ms();
    if (st != TG_OK) {
      fprintf(stderr, "bench_plan_file: realise: %s\n", err.message);
      return -1;
    }
    tg_realization_destroy(z);
    if (i >= 0) t[i] = b - a;
  }
  return median(t, iterations);
}

int main(int argc, char **argv) {
  int iterations = argc > 1 ? atoi(argv[1]) : 30;
  if (iterations < 1) iterations = 1;
  char dir[900];
  bench_model_dir(dir, sizeof dir);
  char plan_path[128];
  snprintf(plan_path, sizeof plan_path, "/tmp/bench_plan_file_%ld.tgplan", (long)getpid());

  tg_error_info err = {{0}};
  tg_device *devs[2] = {NULL, NULL};
  const char *dev_names[2] = {"host", "opencl"};
  tg_backend_kind kinds[2] = {TG_BACKEND_HOST, TG_BACKEND_OPENCL};
  for (int k = 0; k < 2; ++k) {
    tg_device_options o = {0};
    o.backend = kinds[k];
    if (tg_device_open(&o, NULL, &devs[k], NULL, NULL, &err) != TG_OK) {
      if (k == 0) {
        fprintf(stderr, "bench_plan_file: host backend: %s\n", err.message);
        return 1;
      }
      printf("OpenCL: not available (%s): its columns say n/a\n", err.message);
    } else {
      const tg_device_info *info = tg_device_get_info(devs[k]);
      printf("%s: %s (%s)\n", dev_names[k], info->name, info->driver);
    }
  }
  printf("%d iterations, medians in ms; fp32, objects, serial, strategy best (no search)\n\n", iterations);
  printf("| model | storage | records | plan | load | check | realise host | load+check+realise host | realise "
         "OpenCL | load+check+realise OpenCL | plan / (load+check) |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  double *t = calloc((size_t)iterations, sizeof *t);
  int rc = t == NULL;
  double ratio_min = 0, ratio_max = 0;
  for (size_t m = 0; m < sizeof k_models / sizeof k_models[0] && rc == 0; ++m) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.tflite", dir, k_models[m]);
    tg_model *model = NULL;
    tg_lifetimes *lt = NULL;
    if (tg_model_load(path, NULL, &model, &err) != TG_OK ||
        tg_graph_compute_lifetimes(model->graph, NULL, NULL, &lt, &err) != TG_OK) {
      fprintf(stderr, "bench_plan_file: %s (run scripts/fetch-models.sh)\n", err.message);
      tg_model_destroy(model);
      rc = 1;
      break;
    }
    for (size_t s = 0; s < sizeof k_storages / sizeof k_storages[0] && rc == 0; ++s) {
      tg_storage storage = k_storages[s];
      tg_device_limits limits = tg_device_limits_default();
      tg_model_records *mr = NULL;
      tg_plan *plan = NULL;
      tg_tensor_resource *res = NULL;
      tg_plan_file *pf = NULL;
      rc = 1;
      if (tg_model_records_create(model->graph, lt, storage, TG_PRECISION_FP32, &limits, NULL, &mr, &err) != TG_OK) {
        fprintf(stderr, "bench_plan_file: records: %s\n", err.message);
        goto next;
      }
      const tg_record_set *set = mr->records;
      const char *const *names = (const char *const *)set->names;
      tg_plan_options opt = {0};
      opt.strategy = TG_STRATEGY_BEST;
      for (int i = 0; i < iterations; ++i) {
        tg_plan_destroy(plan);
        plan = NULL;
        double a = bench_now_ms();
        tg_status st = tg_plan_compute(set->records, set->count, set->dims, &opt, NULL, &plan);
        t[i] = bench_now_ms() - a;
        if (st != TG_OK) {
          fprintf(stderr, "bench_plan_file: plan: %s\n", tg_status_string(st));
          goto next;
        }
      }
      double plan_ms = median(t, iterations);
      tg_plan_file_desc d = {plan, set->records, names, set->count, set->dims, storage, TG_PRECISION_FP32,
                             TG_POLICY_SERIAL, TG_STRATEGY_BEST, 0, 0, k_models[m], NULL, NULL};
      if (tg_plan_file_save(&d, plan_path, NULL, &err) != TG_OK) {
        fprintf(stderr, "bench_plan_file: save: %s\n", err.message);
        goto next;
      }
      for (int i = 0; i < iterations; ++i) {
        tg_plan_file_destroy(pf);
        pf = NULL;
        double a = bench_now_ms();
        tg_status st = tg_plan_file_load(plan_path, NULL, &pf, &err);
        t[i] = bench_now_ms() - a;
        if (st != TG_OK) {
          fprintf(stderr, "bench_plan_file: load: %s\n", err.message);
          goto next;
        }
      }
      double load_ms = median(t, iterations);
      for (int i = 0; i < iterations; ++i) {
        double a = bench_now_ms();
        tg_status st = tg_plan_file_match(pf, set->records, names, set->count, set->dims, NULL, NULL, &err);
        t[i] = bench_now_ms() - a;
        if (st != TG_OK) {
          fprintf(stderr, "bench_plan_file: match: %s\n", err.message);
          goto next;
        }
      }
      double check_ms = median(t, iterations);
      res = calloc(set->count ? set->count : 1, sizeof *res);
      if (res == NULL) goto next;
      for (size_t r = 0; r < set->count; ++r) {
        const tg_extent *e = &set->records[r].size;
        res[r].storage = storage;
        res[r].extent = set->dims == 1 ? (tg_extent){e->w, 1, 1} : *e;
        res[r].bytes = set->dims == 1 ? e->w : e->w * e->h * e->d * tg_precision_texel_bytes(TG_PRECISION_FP32);
      }
      double real_ms[2] = {-1, -1};
      for (int k = 0; k < 2; ++k) {
        if (devs[k] == NULL) continue;
        real_ms[k] = time_realise(devs[k], pf->plan, pf->records, res, iterations, t);
        if (real_ms[k] < 0) goto next;
      }
      char ocl[2][32];
      if (devs[1]) {
        snprintf(ocl[0], sizeof ocl[0], "%.3f", real_ms[1]);
        snprintf(ocl[1], sizeof ocl[1], "%.3f", load_ms + check_ms + real_ms[1]);
      } else {
        snprintf(ocl[0], sizeof ocl[0], "n/a");
        snprintf(ocl[1], sizeof ocl[1], "n/a");
      }
      double ratio = plan_ms / (load_ms + check_ms);
      if (ratio_min == 0 || ratio < ratio_min) ratio_min = ratio;
      if (ratio > ratio_max) ratio_max = ratio;
      printf("| %s | %s | %zu | %.3f | %.3f | %.3f | %.3f | %.3f | %s | %s | %.1fx |\n", k_models[m],
             tg_storage_name(storage), set->count, plan_ms, load_ms, check_ms, real_ms[0],
             load_ms + check_ms + real_ms[0], ocl[0], ocl[1], ratio);
      fflush(stdout);
      rc = 0;
    next:
      tg_plan_file_destroy(pf);
      free(res);
      tg_plan_destroy(plan);
      tg_model_records_destroy(mr);
    }
    tg_lifetimes_destroy(lt);
    tg_model_destroy(model);
  }
  remove(plan_path);
  free(t);
  for (int k = 0; k < 2; ++k) tg_device_close(devs[k]);
  if (rc == 0) printf("\nplanning / (load + check): %.1fx to %.1fx\n", ratio_min, ratio_max);
  return rc;
}
