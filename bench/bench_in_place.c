/* In-place ops and views on every cached model: the bytes `best` needs without and with the
 * in-place pairs, the in-place lower bound, the pairs and views used, and the targets.
 *
 *   build/bench/bench_in_place [--time-limit MS] [--models DIR] [--markdown] [MODEL ...]
 *
 * For each model (default: every .tflite and .onnx in the model cache, scripts/fetch-models.sh)
 * and each storage (buffer; 2D texture with image pairs, as on Vulkan; fp32) and mode (objects;
 * offsets, for textures their bytes in one arena), plans with strategy best and --time-limit MS
 * (default 1000) without and with the pairs of tg_model_in_place_pairs, validates both, and
 * prints bytes, the ratio, the in-place bound (offsets: peak live with each chain counted once;
 * objects: the LP bound of the merged records), the gap to it, and the pairs (views) the plan
 * uses of the candidates. Then the targets: buffers, offsets, with pairs: face_detection_full_range
 * <= 0.80x, both selfie_segmentation models <= 0.88x, face_detection_short_range <= 0.97x the
 * total without; no row above its total without; every buffer offsets plan within 1% of its
 * bound. Exit 1 when a plan fails, is invalid, or a target is missed. */
#define _POSIX_C_SOURCE 200809L
#include "bench_models.h"

typedef struct totals {
  int rows, failures, missed, markdown;
  uint32_t limit;
} totals;

static const char *base_of(const char *path) { return strrchr(path, '/') ? strrchr(path, '/') + 1 : path; }

/* The target ratio of a model's buffer offsets plan with pairs, or 0 for none. */
static double target_of(const char *base) {
  if (strncmp(base, "face_detection_full_range.", 26) == 0) return 0.80;
  if (strncmp(base, "selfie_segmentation", 19) == 0) return 0.88;
  if (strncmp(base, "face_detection_short_range.", 27) == 0) return 0.97;
  return 0.0;
}

/* The PP-OCR models' dynamic input x, fixed as their demos use them. */
static int onnx_shape(const char *base, tg_input_shape *s) {
  static const struct {
    const char *prefix;
    int64_t h, w;
  } k[] = {{"ch_PP-OCRv4_det", 640, 640}, {"ch_PP-OCRv4_rec", 48, 320}, {"ch_ppocr_mobile_v2.0_cls", 48, 192}};
  for (size_t i = 0; i < sizeof k / sizeof *k; ++i)
    if (strncmp(base, k[i].prefix, strlen(k[i].prefix)) == 0) {
      memset(s, 0, sizeof *s);
      s->name = "x";
      s->rank = 4;
      s->dims[0] = 1;
      s->dims[1] = 3;
      s->dims[2] = k[i].h;
      s->dims[3] = k[i].w;
      return 1;
    }
  return 0;
}

static int plan_one(const tg_usage_record *rec, size_t n, uint32_t dims, tg_mode mode, uint32_t limit,
                    const tg_in_place_pair *pairs, size_t np, tg_plan **out) {
  tg_plan_options o = {
      .mode = mode, .strategy = TG_STRATEGY_BEST, .time_limit_ms = limit, .in_place = pairs,
      .in_place_count = np
  };
  tg_error_info err;
  memset(&err, 0, sizeof err);
  if (tg_plan_compute(rec, n, dims, &o, NULL, out) != TG_OK) return 0;
  if (tg_plan_validate(rec, n, dims, *out, 0, NULL, NULL, &err) != TG_OK) {
    fprintf(stderr, "invalid plan: %s\n", err.message);
    return 0;
  }
  return 1;
}

static void run_storage(const char *base, const bench_storage *kind, const tg_model *model,
                        const tg_lifetimes *life, const tg_model_records *mr, void *user) {
  totals *t = user;
  const uint32_t limit = t->limit;
  const int markdown = t->markdown;
  const tg_record_set *set = mr->records;
  tg_in_place_pair *pairs = NULL;
  size_t np = 0;
  size_t views = 0;
  if (tg_model_in_place_pairs(model->graph, life, mr, 1, NULL, &pairs, &np) != TG_OK) {
    ++t->failures;
    return;
  }
  for (size_t i = 0; i < np; ++i) views += pairs[i].view != 0;
  const uint64_t unit = set->dims == 1 ? 1 : 16;
  /* Offsets of textures: their bytes in one arena. */
  tg_usage_record *bytes = calloc(set->count ? set->count : 1, sizeof *bytes);
  for (size_t r = 0; r < set->count; ++r) {
    bytes[r] = set->records[r];
    bytes[r].size = (tg_extent){set->records[r].size.w * set->records[r].size.h * set->records[r].size.d * unit, 1, 1};
  }
  for (int m = 0; m < 2; ++m) {
    const tg_mode mode = (tg_mode)m;
    const tg_usage_record *rec = mode == TG_MODE_OBJECTS ? set->records : bytes;
    const uint32_t dims = mode == TG_MODE_OBJECTS ? set->dims : 1;
    const uint64_t u = mode == TG_MODE_OBJECTS ? unit : 1;
    tg_plan *without = NULL, *with = NULL;
    if (!plan_one(rec, set->count, dims, mode, limit, NULL, 0, &without) ||
        !plan_one(rec, set->count, dims, mode, limit, pairs, np, &with)) {
      fprintf(stderr, "%s %s %s: planning failed\n", base, kind->name, tg_mode_name(mode));
      ++t->failures;
      tg_plan_destroy(without);
      tg_plan_destroy(with);
      continue;
    }
    tg_bounds ib;
    uint64_t lp = 0, bound = 0;
    if (tg_bounds_compute_in_place(rec, set->count, dims, pairs, np, NULL, &ib,
                                   mode == TG_MODE_OBJECTS ? &lp : NULL) != TG_OK) {
      ++t->failures;
    }
    bound = mode == TG_MODE_OBJECTS ? (lp > ib.positional_max ? lp : ib.positional_max) : ib.peak_live;
    const uint64_t b0 = without->total * u, b1 = with->total * u, bb = bound * u;
    size_t used_views = 0;
    for (size_t i = 0; i < with->in_place_count; ++i) used_views += with->in_place[i].view != 0;
    const double ratio = b0 ? (double)b1 / (double)b0 : 1.0;
    const double gap = bb ? 100.0 * ((double)b1 / (double)bb - 1.0) : 0.0;
    const char *verdict = "";
    if (b1 > b0) {
      verdict = "ABOVE";
      ++t->missed;
    }
    if (kind->storage == TG_STORAGE_BUFFER && mode == TG_MODE_OFFSETS) {
      const double target = target_of(base);
      if ((target > 0 && ratio > target) || gap > 1.0) {
        verdict = "MISSED";
        ++t->missed;
      } else if (target > 0) {
        verdict = "target met";
      }
    }
    if (markdown)
      printf("| %s | %s | %s | %llu | %llu | %.3f | %llu | %.2f%% | %zu (%zu) | %zu (%zu) | %s |\n", base,
             kind->name, tg_mode_name(mode), (unsigned long long)b0, (unsigned long long)b1, ratio,
             (unsigned long long)bb, gap, with->in_place_count, used_views, np, views, verdict);
    else
      printf("%-36s %-6s %-7s %12llu %12llu %6.3f %12llu %6.2f%% %4zu (%2zu) of %4zu (%2zu) %s\n", base,
             kind->name, tg_mode_name(mode), (unsigned long long)b0, (unsigned long long)b1, ratio,
             (unsigned long long)bb, gap, with->in_place_count, used_views, np, views, verdict);
    ++t->rows;
    tg_plan_destroy(without);
    tg_plan_destroy(with);
  }
  free(bytes);
  free(pairs);
}

int main(int argc, char **argv) {
  bench_models_args a;
  int rc = bench_models_parse(argc, argv, "bench_in_place [--time-limit MS] [--models DIR] [--markdown] [MODEL ...]", 1, &a);
  if (rc) return rc < 0 ? 0 : rc;
  if (a.markdown)
    printf("| model | storage | mode | without | with | ratio | in-place bound | gap | pairs (views) used | "
           "candidates (views) | target |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  else
    printf("%-36s %-6s %-7s %12s %12s %6s %12s %7s %s\n", "model", "store", "mode", "without", "with", "ratio",
           "bound", "gap", "pairs (views) used of candidates (views)");
  static const bench_storage kinds[] = {{TG_STORAGE_BUFFER, "buffer"}, {TG_STORAGE_TEXTURE_2D, "tex2"}};
  totals t = {0, 0, 0, a.markdown, a.limit_ms};
  for (size_t i = 0; i < a.model_count; ++i) {
    const char *path = a.models[i];
    const char *base = base_of(path);
    tg_input_shape shape;
    tg_model_options mo = {&shape, (size_t)onnx_shape(base, &shape)};
    t.failures += bench_each_storage(path, &mo, kinds, sizeof kinds / sizeof kinds[0], run_storage, &t);
  }
  printf("%d rows, %d failures, %d targets missed (bytes: textures as texels x 16, fp32)\n", t.rows, t.failures,
         t.missed);
  bench_models_free(&a);
  return t.failures || t.missed ? 1 : 0;
}
