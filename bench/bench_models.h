/* The benches that go over every cached model (bench_objects_gap, bench_in_place): their
 * command line, and the loop that loads each model and builds its records in each storage.
 *
 *   bench_X [--time-limit MS] [--models DIR] [--markdown] [MODEL ...]
 *
 * MODEL defaults to every .tflite (and, when asked, .onnx) file in the model cache. */
#ifndef TANGRAM_BENCH_MODELS_H
#define TANGRAM_BENCH_MODELS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/planner.h"

/* One storage of the loop: its kind and its name in the tables. */
typedef struct bench_storage {
  tg_storage storage;
  const char *name;
} bench_storage;

/* A model's records in one storage (fp32, the default device limits), for the bench's work. */
typedef void (*bench_records_fn)(const char *base, const bench_storage *storage, const tg_model *model,
                                 const tg_lifetimes *lifetimes, const tg_model_records *records, void *user);

/* Load `path` (with `options`, may be NULL), compute its lifetimes and call `fn` with its
 * records in each of `storages`. Returns the failures, each printed on stderr. */
static inline int bench_each_storage(const char *path, const tg_model_options *options,
                                     const bench_storage *storages, size_t count, bench_records_fn fn, void *user) {
  tg_error_info err = {{0}};
  tg_model *model = NULL;
  tg_lifetimes *life = NULL;
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  int failures = 0;
  if (tg_model_load_with(path, options, NULL, &model, &err) != TG_OK || model->kind != TG_MODEL_GRAPH ||
      tg_graph_compute_lifetimes(model->graph, NULL, NULL, &life, &err) != TG_OK) {
    fprintf(stderr, "%s: %s\n", base, err.message);
    tg_model_destroy(model);
    return 1;
  }
  tg_device_limits lim = tg_device_limits_default();
  for (size_t k = 0; k < count; ++k) {
    tg_model_records *mr = NULL;
    if (tg_model_records_create(model->graph, life, storages[k].storage, TG_PRECISION_FP32, &lim, NULL, &mr, &err) !=
        TG_OK) {
      fprintf(stderr, "%s %s: %s\n", base, storages[k].name, err.message);
      ++failures;
      continue;
    }
    fn(base, &storages[k], model, life, mr, user);
    tg_model_records_destroy(mr);
  }
  tg_lifetimes_destroy(life);
  tg_model_destroy(model);
  return failures;
}

/* The command line shared by these benches. */
typedef struct bench_models_args {
  uint32_t limit_ms;   /* --time-limit, default 1000 (0: none) */
  int markdown;
  char **models;       /* the models named, or every cached one (bench_models_free) */
  size_t model_count;
  int owned;
} bench_models_args;

/* Parse argv into `a` (`onnx`: .onnx files in the cache too). 0 on success, else the exit
 * status (2 for a bad option, 1 without models), with the usage or the reason printed. */
static inline int bench_models_parse(int argc, char **argv, const char *usage, int onnx, bench_models_args *a) {
  memset(a, 0, sizeof *a);
  a->limit_ms = 1000;
  const char *dir = NULL;
  char cache[1024];
  int first = argc;
  for (int i = 1; i < argc && first == argc; ++i) {
    if (strcmp(argv[i], "--time-limit") == 0 && i + 1 < argc) {
      a->limit_ms = (uint32_t)strtoul(argv[++i], NULL, 10);
      if (a->limit_ms == 0) a->limit_ms = TG_TIME_LIMIT_NONE;
    } else if (strcmp(argv[i], "--models") == 0 && i + 1 < argc) {
      dir = argv[++i];
    } else if (strcmp(argv[i], "--markdown") == 0) {
      a->markdown = 1;
    } else if (argv[i][0] == '-') {
      fprintf(strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0 ? stdout : stderr, "usage: %s\n", usage);
      return strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0 ? -1 : 2;
    } else {
      first = i;
    }
  }
  if (first < argc) {
    a->models = argv + first;
    a->model_count = (size_t)(argc - first);
    return 0;
  }
  if (dir == NULL) dir = bench_model_dir(cache, sizeof cache);
  a->models = bench_list_models(dir, onnx, &a->model_count);
  a->owned = 1;
  if (a->models == NULL) {
    fprintf(stderr, "no model cache at %s (scripts/fetch-models.sh)\n", dir);
    return 1;
  }
  return 0;
}

static inline void bench_models_free(bench_models_args *a) {
  if (a->owned) bench_free_models(a->models, a->model_count);
}

#endif
