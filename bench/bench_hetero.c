/* Heterogeneous plans of the public models: per model, placement and storage, the bytes of each
 * memory space, the tensors shared zero-copy, the waits between processors, and the
 * partition-by-partition baseline (each side planned alone, every boundary tensor in both
 * memories and copied once per run): the bytes saved and the copies avoided. Prints a Markdown
 * table (docs/heterogeneous.md quotes it) and the time of the whole pipeline per case.
 *
 *   bench_hetero [MODEL_DIR]   (default: the model cache, as scripts/fetch-models.sh fills it)
 *
 * Placements: auto (the default profile), every k-th scheduled op on the CPU (k = 2, 3, 5),
 * every op on the CPU. Objects mode, strategy best, serial policy. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#include "core/internal.h"
#include "tangram/model.h"
#include "tangram/placement.h"
#include "tangram/schedule.h"

static const char *const k_models[] = {"face_detection_short_range", "hand_landmark_lite",
                                       "pose_landmark_lite", "selfie_segmentation"};
static const tg_storage k_storages[] = {TG_STORAGE_BUFFER, TG_STORAGE_TEXTURE_2D};

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

/* One case: returns 0 on success. */
static int run_case(const tg_graph *g, const char *model, tg_storage storage, int placement) {
  tg_error_info err = {{0}};
  tg_lifetimes *l = NULL;
  tg_schedule *s = NULL;
  tg_model_records *mr = NULL;
  tg_spaces *sp = NULL;
  tg_spaces_waits *w = NULL;
  tg_space_plan plans[TG_SET_COUNT];
  memset(plans, 0, sizeof plans);
  tg_processor *proc = calloc(g->op_count ? g->op_count : 1, sizeof *proc);
  int rc = 1;
  tg_device_limits lim = tg_device_limits_default();
  if (proc == NULL || tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err) != TG_OK ||
      tg_schedule_create(g, NULL, NULL, &s, &err) != TG_OK ||
      tg_model_records_create(g, l, storage, TG_PRECISION_FP32, &lim, NULL, &mr, &err) != TG_OK)
    goto done;
  static const int ks[] = {0, 2, 3, 5, 0}; /* every k-th scheduled op on the CPU */
  char label[32];
  if (placement == 0) {
    tg_placement_apply_spec(g, "auto", proc, &err);
    snprintf(label, sizeof label, "auto");
  } else if (placement == 4) {
    tg_placement_apply_spec(g, "cpu:*", proc, &err);
    snprintf(label, sizeof label, "all on cpu");
  } else {
    size_t rank = 0;
    for (size_t i = 0; i < g->op_count; ++i) {
      proc[i] = TG_PROCESSOR_GPU;
      if (tg_schedule_get_wave_of(s, i) == TG_SCHEDULE_NONE) continue;
      if (++rank % (size_t)ks[placement] == 0) proc[i] = TG_PROCESSOR_CPU;
    }
    static const char *const ord[] = {"", "2nd", "3rd", "5th"};
    snprintf(label, sizeof label, "every %s", ord[placement]);
  }
  uint64_t t0 = tg__now_us();
  if (tg_spaces_create(g, l, mr, proc, NULL, &sp, &err) != TG_OK) goto done;
  tg_space_options o;
  memset(&o, 0, sizeof o);
  o.plan.strategy = TG_STRATEGY_BEST;
  uint64_t bytes[TG_SPACE_COUNT] = {0};
  for (size_t k = 0; k < TG_SET_COUNT; ++k) {
    if (tg_spaces_plan_set(sp, s, k, NULL, &o, NULL, &plans[k], &err) != TG_OK) goto done;
    bytes[sp->sets[k].space] += plans[k].bytes;
  }
  tg_space_plan_ref refs[TG_SET_COUNT];
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    refs[k].plan = plans[k].plan;
    refs[k].records = sp->sets[k].records->records;
  }
  if (tg_spaces_compute_waits(sp, s, refs, 1, NULL, &w, &err) != TG_OK) goto done;
  tg_partition_baseline bl;
  if (tg_spaces_partition_baseline(sp, mr, &o, &o, NULL, &bl, &err) != TG_OK) goto done;
  uint64_t us = tg__now_us() - t0;
  uint64_t total = bytes[0] + bytes[1] + bytes[2];
  int64_t saved = (int64_t)bl.total_bytes - (int64_t)total;
  size_t cpu = 0;
  for (size_t i = 0; i < g->op_count; ++i) cpu += tg_schedule_get_wave_of(s, i) != TG_SCHEDULE_NONE && proc[i] == TG_PROCESSOR_CPU;
  printf("| %s | %s | %s | %zu | %.2f | %.2f | %.2f | %.2f | %zu | %zu | %.2f | %+.2f (%+.1f%%) | %llu (%.2f MiB) | %.1f |\n",
         model, tg_storage_name(storage), label, cpu, mib(bytes[TG_SPACE_DEVICE]), mib(bytes[TG_SPACE_HOST]),
         mib(bytes[TG_SPACE_SHARED]), mib(total), sp->sets[TG_SET_SHARED].records->count, w->cross_count,
         mib(bl.total_bytes), saved / (1024.0 * 1024.0),
         bl.total_bytes ? 100.0 * (double)saved / (double)bl.total_bytes : 0.0, (unsigned long long)bl.copies,
         mib(bl.copy_bytes), (double)us / 1000.0);
  rc = 0;
done:
  if (rc) fprintf(stderr, "bench_hetero: %s %s: %s\n", model, tg_storage_name(storage), err.message);
  tg_spaces_waits_destroy(w);
  for (int k = 0; k < TG_SET_COUNT; ++k) tg_space_plan_free(&plans[k]);
  tg_spaces_destroy(sp);
  tg_model_records_destroy(mr);
  tg_schedule_destroy(s);
  tg_lifetimes_destroy(l);
  free(proc);
  return rc;
}

int main(int argc, char **argv) {
  char dir[1024];
  const char *models = argc > 1 ? argv[1] : bench_model_dir(dir, sizeof dir);
  printf("| model | storage | placement | cpu ops | device MiB | host MiB | shared MiB | total MiB | zero-copy "
         "tensors | waits | partition MiB | saved MiB | copies avoided | ms |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int failures = 0, cases = 0;
  for (size_t m = 0; m < sizeof k_models / sizeof k_models[0]; ++m) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.tflite", models, k_models[m]);
    tg_model *model = NULL;
    tg_error_info err = {{0}};
    if (tg_model_load(path, NULL, &model, &err) != TG_OK) {
      fprintf(stderr, "bench_hetero: %s (run scripts/fetch-models.sh)\n", err.message);
      ++failures;
      continue;
    }
    for (size_t s = 0; s < sizeof k_storages / sizeof k_storages[0]; ++s)
      for (int p = 0; p < 5; ++p) {
        failures += run_case(model->graph, k_models[m], k_storages[s], p);
        ++cases;
      }
    tg_model_destroy(model);
  }
  fprintf(stderr, "bench_hetero: %d cases, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}
