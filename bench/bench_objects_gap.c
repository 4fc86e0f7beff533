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
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/planner.h"

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct totals {
  int plans, within, failures;
  double worst;
} totals;

static void run_model(const char *path, uint32_t limit_ms, int markdown, totals *t) {
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_model *model = NULL;
  tg_lifetimes *life = NULL;
  if (tg_model_load(path, NULL, &model, &err) != TG_OK || model->kind != TG_MODEL_GRAPH ||
      tg_graph_compute_lifetimes(model->graph, NULL, NULL, &life, &err) != TG_OK) {
    fprintf(stderr, "%s: %s\n", path, err.message);
    ++t->failures;
    tg_model_destroy(model);
    return;
  }
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  static const struct {
    tg_storage storage;
    const char *name;
  } kinds[] = {{TG_STORAGE_BUFFER, "buffer"}, {TG_STORAGE_TEXTURE_2D, "tex2"}, {TG_STORAGE_TEXTURE_3D, "tex3"}};
  tg_device_limits lim = tg_device_limits_default();
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; ++k) {
    tg_model_records *mr = NULL;
    if (tg_model_records_create(model->graph, life, kinds[k].storage, TG_PRECISION_FP32, &lim, NULL, &mr, &err) !=
        TG_OK) {
      fprintf(stderr, "%s %s: %s\n", base, kinds[k].name, err.message);
      ++t->failures;
      continue;
    }
    const tg_record_set *set = mr->records;
    uint64_t shape = 0, subset = 0, t0 = now_us();
    tg_status st = tg_bounds_objects_shape(set->records, set->count, set->dims, NULL, &shape);
    if (st == TG_OK) st = tg_bounds_objects_subset(set->records, set->count, set->dims, 0, NULL, &subset);
    uint64_t bound_us = now_us() - t0;
    tg_plan_options opt = {.mode = TG_MODE_OBJECTS, .strategy = TG_STRATEGY_BEST, .time_limit_ms = limit_ms};
    tg_plan *plan = NULL;
    t0 = now_us();
    if (st == TG_OK) st = tg_plan_compute(set->records, set->count, set->dims, &opt, NULL, &plan);
    uint64_t plan_us = now_us() - t0;
    if (st == TG_OK)
      st = tg_plan_validate(set->records, set->count, set->dims, plan, 0, NULL, NULL, &err);
    uint64_t lp = 0, lp_us = 0;
    if (st == TG_OK) {
      t0 = now_us();
      st = tg_bounds_objects_lp(set->records, set->count, set->dims, plan->total, 0, NULL, &lp);
      lp_us = now_us() - t0;
    }
    if (st == TG_OK && (shape > plan->total || subset > plan->total || lp > plan->total)) {
      fprintf(stderr, "%s %s: a lower bound exceeds the plan's total %" PRIu64 "\n", base, kinds[k].name,
              plan->total);
      ++t->failures;
    }
    if (st != TG_OK) {
      fprintf(stderr, "%s %s: %s %s\n", base, kinds[k].name, tg_status_name(st), err.message);
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
               base, kinds[k].name, set->count, plan->total, shape, subset, lp, ratio, (double)plan_us / 1000.0,
               (double)lp_us / 1000.0);
      else
        printf("%-40s %-6s %5zu records  plan %10" PRIu64 "  shape %10" PRIu64 "  subset %10" PRIu64
               "  lp %10" PRIu64 "  x%.4f  plan %.0f ms, bounds %.0f + %.0f ms\n",
               base, kinds[k].name, set->count, plan->total, shape, subset, lp, ratio, (double)plan_us / 1000.0,
               (double)bound_us / 1000.0, (double)lp_us / 1000.0);
    }
    tg_plan_destroy(plan);
    tg_model_records_destroy(mr);
  }
  tg_lifetimes_destroy(life);
  tg_model_destroy(model);
}

int main(int argc, char **argv) {
  uint32_t limit_ms = 1000;
  int markdown = 0;
  const char *dir = getenv("TANGRAM_MODEL_CACHE");
  char cache[1024];
  if (dir == NULL || *dir == '\0') {
    const char *home = getenv("HOME");
    snprintf(cache, sizeof cache, "%s/.cache/tangram/models", home ? home : ".");
    dir = cache;
  }
  char **files = calloc((size_t)argc + 1, sizeof *files);
  size_t nfiles = 0;
  if (files == NULL) return 1;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--time-limit") == 0 && i + 1 < argc) {
      limit_ms = (uint32_t)strtoul(argv[++i], NULL, 10);
      if (limit_ms == 0) limit_ms = TG_TIME_LIMIT_NONE;
    } else if (strcmp(argv[i], "--models") == 0 && i + 1 < argc) {
      dir = argv[++i];
    } else if (strcmp(argv[i], "--markdown") == 0) {
      markdown = 1;
    } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      printf("usage: bench_objects_gap [--time-limit MS] [--models DIR] [--markdown] [MODEL.tflite ...]\n");
      return 0;
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "bench_objects_gap: unknown option '%s'\n", argv[i]);
      return 2;
    } else {
      files[nfiles++] = argv[i];
    }
  }
  char **owned = NULL;
  size_t nowned = 0;
  if (nfiles == 0) {
    DIR *d = opendir(dir);
    if (d == NULL) {
      fprintf(stderr, "bench_objects_gap: cannot open %s (run scripts/fetch-models.sh)\n", dir);
      return 1;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      size_t n = strlen(e->d_name);
      if (n < 7 || strcmp(e->d_name + n - 7, ".tflite") != 0) continue;
      char **grown = realloc(owned, (nowned + 1) * sizeof *owned);
      if (grown == NULL) return 1;
      owned = grown;
      size_t len = strlen(dir) + n + 2;
      owned[nowned] = malloc(len);
      if (owned[nowned] == NULL) return 1;
      snprintf(owned[nowned], len, "%s/%s", dir, e->d_name);
      ++nowned;
    }
    closedir(d);
    qsort(owned, nowned, sizeof *owned, by_name);
  }
  if (markdown)
    printf("| model | storage | records | plan | shape bound | subset bound | LP bound | plan / bound | plan ms | LP ms |\n"
           "|---|---|---|---|---|---|---|---|---|---|\n");
  totals t = {0, 0, 0, 0};
  for (size_t i = 0; i < (nfiles ? nfiles : nowned); ++i) run_model(nfiles ? files[i] : owned[i], limit_ms, markdown, &t);
  printf("%s%d objects plans, %d within 1%% of their bound, worst x%.4f, %d failures (time limit %u ms)\n",
         markdown ? "\n" : "", t.plans, t.within, t.worst, t.failures, limit_ms);
  for (size_t i = 0; i < nowned; ++i) free(owned[i]);
  free(owned);
  free(files);
  return t.failures ? 1 : 0;
}
