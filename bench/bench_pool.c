/* Run-time pool benchmark (tangram/pool.h), three parts in one run:
 *
 *   1. throughput: alloc+free pairs per second for each policy (virtual pools, locked and
 *      unsynchronized) and for the C library's malloc/free on the same sequence: a working set
 *      of 64 slots, each step frees a random slot and allocates into it, sizes drawn from the
 *      public models' tensors (the buffer record CSVs in tests/data/records); best of 3 rounds;
 *   2. the price of not planning ahead: each model's tensors through each policy (allocated
 *      at their producer, freed after their last reader), the pool's peak reserved bytes over
 *      the ahead-of-time plan's total (offsets, strategy best, validated) for buffers, and over
 *      the objects plan's bytes for textures (texture_2d records);
 *   3. a soak: random allocs and frees whose sizes drift from a quarter to four times the
 *      models' sizes, trim every TRIM ops; per window the reserved bytes after trim against
 *      the window's live peak. The run fails (exit 1) if that ratio exceeds SOAK_FACTOR in any
 *      window or grows: mean ratio of the last quarter above 1.25x the second quarter's.
 *
 *   bench_pool [--ops N] [--soak-ops N] [--seed S]     (default 10^6 each, seed 1)
 *
 * Markdown tables on stdout. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_rng.h"
#include "core/internal.h"
#include "pool/pool_internal.h"
#include "pool/pool_run.h"
#include "tangram/planner.h"
#include "tangram/pool.h"
#include "tangram/records.h"

#define SLOTS 64
#define TRIM 10000
#define SOAK_FACTOR 2.0
#define GROWTH_FACTOR 1.25

static const char *const k_models[] = {"face_detection_short_range", "hand_landmark_lite", "pose_landmark_lite",
                                       "selfie_segmentation"};
#define MODELS 4

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static tg_record_set *load(const char *model, const char *kind) {
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/data/records/%s.%s.csv", TG_SOURCE_DIR, model, kind);
  tg_record_set *set = NULL;
  tg_error_info err = {{0}};
  if (tg_records_read_csv(path, NULL, &set, &err) != TG_OK) {
    fprintf(stderr, "bench_pool: %s\n", err.message);
    exit(2);
  }
  return set;
}

static tg_pool *virtual_pool(tg_pool_policy policy, uint64_t capacity, uint64_t block, int unsync) {
  tg_pool_options o = {policy, capacity, policy == TG_POOL_EXACT ? 0 : block, 64, TG_PRECISION_FP32, unsync};
  tg_pool *p = NULL;
  tg_error_info err = {{0}};
  if (tg_pool_create(NULL, &o, NULL, &p, &err) != TG_OK) {
    fprintf(stderr, "bench_pool: %s\n", err.message);
    exit(2);
  }
  return p;
}

/* ---- 1. throughput ---- */

typedef struct sequence {
  size_t steps;
  uint32_t *slot;
  uint64_t *size;
} sequence;

static double run_pool(tg_pool_policy policy, int unsync, const sequence *s, tg_pool_stats *stats) {
  tg_pool *p = virtual_pool(policy, 1ull << 40, 0, unsync);
  uint64_t ids[SLOTS] = {0};
  double t0 = now_s();
  for (size_t i = 0; i < s->steps; ++i) {
    uint32_t k = s->slot[i];
    if (ids[k]) tg_pool_free(p, ids[k]);
    tg_pool_allocation a;
    if (tg_pool_alloc(p, s->size[i], &a, NULL) != TG_OK) {
      fprintf(stderr, "bench_pool: allocation failed\n");
      exit(1);
    }
    ids[k] = a.id;
  }
  double t = now_s() - t0;
  tg_pool_get_stats(p, stats);
  tg_error_info err = {{0}};
  if (tg_pool_check(p, &err) != TG_OK) {
    fprintf(stderr, "bench_pool: %s\n", err.message);
    exit(1);
  }
  tg_pool_destroy(p);
  return t;
}

static double run_malloc(const sequence *s) {
  void *ptr[SLOTS] = {0};
  uintptr_t sink = 0;
  double t0 = now_s();
  for (size_t i = 0; i < s->steps; ++i) {
    uint32_t k = s->slot[i];
    free(ptr[k]);
    ptr[k] = malloc((size_t)s->size[i]);
    if (ptr[k] == NULL) exit(1);
    sink ^= (uintptr_t)ptr[k];
  }
  double t = now_s() - t0;
  for (int k = 0; k < SLOTS; ++k) free(ptr[k]);
  if (sink == 1) puts("");
  return t;
}

static void throughput(size_t ops, uint64_t seed, const uint64_t *sizes, size_t nsizes) {
  sequence s = {ops, malloc(ops * sizeof(uint32_t)), malloc(ops * sizeof(uint64_t))};
  if (!s.slot || !s.size) exit(2);
  uint64_t st = seed;
  for (size_t i = 0; i < ops; ++i) {
    s.slot[i] = (uint32_t)rng_below(&st, SLOTS);
    s.size[i] = sizes[rng_below(&st, nsizes)];
  }
  enum { ROWS = 2 * TG_POOL_POLICY_COUNT + 1 };
  double best[ROWS];
  tg_pool_stats stats[ROWS];
  for (int r = 0; r < ROWS; ++r) best[r] = 1e30;
  for (int round = 0; round < 3; ++round)
    for (int r = 0; r < ROWS; ++r) {
      double t = r == ROWS - 1 ? run_malloc(&s) : run_pool((tg_pool_policy)(r / 2), r % 2, &s, &stats[r]);
      if (t < best[r]) best[r] = t;
    }
  double malloc_rate = (double)ops / best[ROWS - 1];
  printf("## Throughput: %zu alloc+free pairs, %d live slots, sizes from the models (best of 3)\n\n", ops, SLOTS);
  printf("| allocator | pairs/s | ns/pair | vs malloc | driver allocations | peak reserved / peak in use |\n");
  printf("|---|---|---|---|---|---|\n");
  for (int r = 0; r < ROWS; ++r) {
    double rate = (double)ops / best[r];
    if (r == ROWS - 1) {
      printf("| malloc/free (C library) | %.3g | %.1f | 1.00 | - | - |\n", rate, 1e9 / rate);
      continue;
    }
    printf("| %s%s | %.3g | %.1f | %.2f | %llu | %.3f |\n", tg_pool_policy_name((tg_pool_policy)(r / 2)),
           r % 2 ? " (unsynchronized)" : "", rate, 1e9 / rate, rate / malloc_rate,
           (unsigned long long)stats[r].driver_allocations,
           (double)stats[r].peak_reserved / (double)stats[r].peak_in_use);
  }
  printf("\n");
  free(s.slot);
  free(s.size);
}

/* ---- 2. peak reserved / plan total ---- */

static uint64_t plan_total(tg_record_set *set, tg_mode mode) {
  for (size_t r = 0; r < set->count; ++r) set->records[r].alignment = set->dims == 1 ? 64 : 1;
  tg_plan_options o = {0};
  o.mode = mode;
  o.strategy = TG_STRATEGY_BEST;
  tg_plan *plan = NULL;
  tg_error_info err = {{0}};
  if (tg_plan_compute(set->records, set->count, set->dims, &o, NULL, &plan) != TG_OK ||
      tg_plan_validate(set->records, set->count, set->dims, plan, 0, NULL, NULL, &err) != TG_OK) {
    fprintf(stderr, "bench_pool: planning failed: %s\n", err.message);
    exit(1);
  }
  uint64_t total = plan->total * (set->dims == 1 ? 1 : 16);
  tg_plan_destroy(plan);
  return total;
}

static uint64_t pooled_peak(tg_pool_policy policy, uint64_t block, const tg_record_set *set) {
  tg_tensor_resource *res = calloc(set->count, sizeof *res);
  uint64_t *bytes = calloc(set->count, sizeof *bytes);
  if (!res || !bytes) exit(2);
  for (size_t r = 0; r < set->count; ++r) {
    const tg_extent e = set->records[r].size;
    res[r] = set->dims == 1 ? (tg_tensor_resource){TG_STORAGE_BUFFER, {e.w, 1, 1}, e.w}
                            : (tg_tensor_resource){TG_STORAGE_TEXTURE_2D, e, e.w * e.h * 16};
    bytes[r] = res[r].bytes;
  }
  tg_pool *p = virtual_pool(policy, 1ull << 40, block, 1);
  tg__pool_run run;
  tg_error_info err = {{0}};
  if (tg__pool_run_records(p, set->records, res, bytes, set->count, 0, NULL, &run, &err) != TG_OK) {
    fprintf(stderr, "bench_pool: pooled run: %s\n", err.message);
    exit(1);
  }
  tg_pool_stats s;
  tg_pool_get_stats(p, &s);
  tg__pool_run_free(&run);
  tg_pool_destroy(p);
  free(res);
  free(bytes);
  return s.peak_reserved;
}

static void ratios(const char *kind, tg_mode mode, uint64_t block) {
  char bs[32];
  snprintf(bs, sizeof bs, block ? "%llu KiB" : "as requested", (unsigned long long)(block / 1024));
  printf("## Peak reserved / ahead-of-time plan total: %s records, block size %s\n\n", kind, bs);
  printf("| policy |");
  for (int m = 0; m < MODELS; ++m) printf(" %s |", k_models[m]);
  printf(" mean |\n|---|");
  for (int m = 0; m <= MODELS; ++m) printf("---|");
  printf("\n");
  tg_record_set *sets[MODELS];
  uint64_t plans[MODELS], naive[MODELS];
  for (int m = 0; m < MODELS; ++m) {
    sets[m] = load(k_models[m], kind);
    plans[m] = plan_total(sets[m], mode);
    naive[m] = 0;
    for (size_t r = 0; r < sets[m]->count; ++r) {
      uint64_t v = 0;
      tg_extent_volume(sets[m]->records[r].size, &v);
      naive[m] += v * (sets[m]->dims == 1 ? 1 : 16);
    }
  }
  for (int pol = 0; pol < TG_POOL_POLICY_COUNT; ++pol) {
    if (pol == TG_POOL_EXACT && block) continue;
    double sum = 0;
    printf("| %s |", tg_pool_policy_name((tg_pool_policy)pol));
    for (int m = 0; m < MODELS; ++m) {
      double ratio = (double)pooled_peak((tg_pool_policy)pol, block, sets[m]) / (double)plans[m];
      sum += ratio;
      printf(" %.4f |", ratio);
    }
    printf(" %.4f |\n", sum / MODELS);
  }
  double sum = 0;
  printf("| (no reuse: one allocation per tensor) |");
  for (int m = 0; m < MODELS; ++m) {
    sum += (double)naive[m] / (double)plans[m];
    printf(" %.4f |", (double)naive[m] / (double)plans[m]);
  }
  printf(" %.4f |\n\nplan totals (%s best):", sum / MODELS, tg_mode_name(mode));
  for (int m = 0; m < MODELS; ++m) printf(" %s %llu B%s", k_models[m], (unsigned long long)plans[m], m + 1 < MODELS ? "," : "\n\n");
  for (int m = 0; m < MODELS; ++m) tg_record_set_destroy(sets[m]);
}

/* ---- 3. soak ---- */

typedef struct soak_result {
  double worst, first_q, last_q, before_trim;
  uint64_t windows, final_reserved, max_reserved, live_peak;
  int ok;
} soak_result;

static soak_result soak(tg_pool_policy policy, uint64_t block, size_t ops, uint64_t seed, const uint64_t *sizes,
                        size_t nsizes) {
  tg_pool *p = virtual_pool(policy, 1ull << 50, block, 1);
  size_t cap = 1024, n = 0;
  tg_pool_allocation *live = malloc(cap * sizeof *live);
  size_t windows = ops / TRIM;
  double *ratio = calloc(windows ? windows : 1, sizeof *ratio);
  if (!live || !ratio) exit(2);
  uint64_t st = seed, in_use = 0, window_peak = 0;
  soak_result out;
  memset(&out, 0, sizeof out);
  out.ok = 1;
  size_t w = 0;
  for (size_t i = 0; i < ops; ++i) {
    /* Live count wanders between 64 and 512; sizes drift from x1/4 to x4 over the run. */
    int alloc_op = n < 64 || (n < 512 && rng_below(&st, 2));
    if (alloc_op) {
      double phase = (double)i / (double)ops;
      double scale = 0.25 * (1.0 + 15.0 * phase);
      uint64_t size = (uint64_t)((double)sizes[rng_below(&st, nsizes)] * scale) + rng_below(&st, 64);
      tg_pool_allocation a;
      if (tg_pool_alloc(p, size, &a, NULL) != TG_OK) exit(1);
      if (n == cap) {
        cap *= 2;
        live = realloc(live, cap * sizeof *live);
        if (!live) exit(2);
      }
      live[n++] = a;
      in_use += a.size;
      if (in_use > window_peak) window_peak = in_use;
    } else {
      size_t k = rng_below(&st, n);
      in_use -= live[k].size;
      tg_pool_free(p, live[k].id);
      live[k] = live[--n];
    }
    if ((i + 1) % TRIM == 0 && w < windows) {
      tg_pool_stats s;
      tg_pool_get_stats(p, &s);
      double before = (double)s.reserved / (double)window_peak;
      if (before > out.before_trim) out.before_trim = before;
      tg_pool_trim(p, NULL);
      tg_pool_get_stats(p, &s);
      ratio[w] = (double)s.reserved / (double)window_peak;
      if (ratio[w] > out.worst) out.worst = ratio[w];
      if (s.reserved > out.max_reserved) out.max_reserved = s.reserved;
      if (window_peak > out.live_peak) out.live_peak = window_peak;
      out.final_reserved = s.reserved;
      ++w;
      window_peak = in_use;
    }
  }
  tg_error_info err = {{0}};
  if (tg_pool_check(p, &err) != TG_OK) {
    fprintf(stderr, "bench_pool: soak: %s\n", err.message);
    out.ok = 0;
  }
  out.windows = w;
  size_t q = w / 4;
  for (size_t k = q; k < 2 * q; ++k) out.first_q += ratio[k];
  for (size_t k = w - q; k < w; ++k) out.last_q += ratio[k];
  if (q) {
    out.first_q /= (double)q;
    out.last_q /= (double)q;
  }
  if (out.worst > SOAK_FACTOR || out.last_q > GROWTH_FACTOR * out.first_q) out.ok = 0;
  tg_pool_destroy(p);
  free(live);
  free(ratio);
  return out;
}

int main(int argc, char **argv) {
  size_t ops = 1000000, soak_ops = 1000000;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc) ops = (size_t)strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--soak-ops") == 0 && i + 1 < argc) soak_ops = (size_t)strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
    else {
      fprintf(stderr, "usage: bench_pool [--ops N] [--soak-ops N] [--seed S]\n");
      return 2;
    }
  }
  if (ops == 0 || soak_ops < TRIM * 8) {
    fprintf(stderr, "bench_pool: --ops must be positive and --soak-ops at least %d\n", TRIM * 8);
    return 2;
  }
  /* Every buffer tensor size of the four models, repeats kept (as often as they occur). */
  size_t nsizes = 0;
  uint64_t *sizes = NULL;
  for (int m = 0; m < MODELS; ++m) {
    tg_record_set *set = load(k_models[m], "buffer");
    sizes = realloc(sizes, (nsizes + set->count) * sizeof *sizes);
    if (!sizes) return 2;
    for (size_t r = 0; r < set->count; ++r) sizes[nsizes++] = set->records[r].size.w;
    tg_record_set_destroy(set);
  }

  throughput(ops, seed, sizes, nsizes);
  ratios("buffer", TG_MODE_OFFSETS, 0);
  ratios("buffer", TG_MODE_OFFSETS, 1024 * 1024);
  ratios("tex2", TG_MODE_OBJECTS, 0);

  printf("## Soak: %zu random allocs and frees, sizes drifting x1/4 -> x4, trim every %d\n\n", soak_ops, TRIM);
  printf("pass: reserved after trim <= %.1fx the window's live peak in every window, and the last quarter's mean "
         "ratio <= %.2fx the second quarter's\n\n", SOAK_FACTOR, GROWTH_FACTOR);
  printf("| policy | block size | windows | worst after trim | 2nd quarter mean | last quarter mean | worst before trim | max reserved / live peak | pass |\n");
  printf("|---|---|---|---|---|---|---|---|---|\n");
  int failed = 0;
  for (int pol = 0; pol < TG_POOL_POLICY_COUNT; ++pol)
    for (int b = 0; b < 2; ++b) {
      uint64_t block = b ? 4 * 1024 * 1024 : 0;
      if (pol == TG_POOL_EXACT && block) continue;
      soak_result s = soak((tg_pool_policy)pol, block, soak_ops, seed + 7, sizes, nsizes);
      printf("| %s | %s | %llu | %.3f | %.3f | %.3f | %.3f | %.3f | %s |\n", tg_pool_policy_name((tg_pool_policy)pol),
             block ? "4 MiB" : "as requested", (unsigned long long)s.windows, s.worst, s.first_q, s.last_q,
             s.before_trim, (double)s.max_reserved / (double)s.live_peak, s.ok ? "yes" : "NO");
      failed |= !s.ok;
    }
  free(sizes);
  if (failed) {
    fprintf(stderr, "bench_pool: reserved bytes grew past the stated bound in the soak\n");
    return 1;
  }
  return 0;
}
