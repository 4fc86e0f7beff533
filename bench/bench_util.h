/* What the benches share: a monotonic clock, sorting doubles, where the public models are
 * ($TANGRAM_MODEL_CACHE, else $XDG_CACHE_HOME/tangram/models, else ~/.cache/tangram/models;
 * scripts/fetch-models.sh fills it) and the models found there. */
#ifndef TANGRAM_BENCH_UTIL_H
#define TANGRAM_BENCH_UTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline uint64_t bench_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* qsort comparators: doubles and uint64_t ascending, strings by name. */
static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static inline int bench_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static inline int bench_cmp_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The model cache's directory, into `buf`. */
static inline const char *bench_model_dir(char *buf, size_t size) {
  const char *cache = getenv("TANGRAM_MODEL_CACHE");
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  if (cache && *cache) snprintf(buf, size, "%s", cache);
  else if (xdg && *xdg) snprintf(buf, size, "%s/tangram/models", xdg);
  else snprintf(buf, size, "%s/.cache/tangram/models", home ? home : ".");
  return buf;
}

/* The cached model `file`'s path, into `buf`. */
static inline const char *bench_model_path(char *buf, size_t size, const char *file) {
  char dir[900];
  snprintf(buf, size, "%s/%s", bench_model_dir(dir, sizeof dir), file);
  return buf;
}

/* The .tflite files in `dir` (and its .onnx files when `onnx`), sorted by name: malloc'ed
 * paths in a malloc'ed array (the caller frees both), their count in *count. NULL when `dir`
 * cannot be read (*count 0). */
static inline char **bench_list_models(const char *dir, int onnx, size_t *count) {
  *count = 0;
  DIR *d = opendir(dir);
  if (d == NULL) return NULL;
  char **names = NULL;
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    int tflite = len > 7 && strcmp(e->d_name + len - 7, ".tflite") == 0;
    int is_onnx = len > 5 && strcmp(e->d_name + len - 5, ".onnx") == 0;
    if (!tflite && !(onnx && is_onnx)) continue;
    char **grown = realloc(names, (n + 1) * sizeof *names);
    char *path = malloc(strlen(dir) + len + 2);
    if (grown == NULL || path == NULL) {
      free(path);
      names = grown ? grown : names;
      break;
    }
    names = grown;
    sprintf(path, "%s/%s", dir, e->d_name);
    names[n++] = path;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, bench_cmp_name);
  *count = n;
  return names ? names : calloc(1, sizeof *names);
}

static inline void bench_free_models(char **names, size_t count) {
  for (size_t i = 0; i < count; ++i) free(names[i]);
  free(names);
}

#endif
