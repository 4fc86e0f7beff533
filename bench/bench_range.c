/* Plans over a range of input sizes (tangram/range_plan.h): planning a whole range, the worst
 * ratio to each size's own best plan, the upper-bound plan and the run-time pool beside it, and
 * instantiation at a new size against planning that size from scratch.
 *
 *   build/bench/bench_range [--time-limit MS] [--models DIR] [--no-models] [--no-synthetic]
 *                           [--only NAME] [--table FILE ...] [--write-tables DIR]
 *                           [--per-size NAME] [--csv DIR]
 *                           [--verify-own K] [--own-limit MS] [--own-dir DIR]
 *
 * Cases: synthetic instances that mimic the models (rec-like: 400 records whose sizes are affine
 * or ceil-divided in the width, 32..1600/8; det-like: 330 records bilinear in H and W,
 * 32..960/32, buffers and 2D textures) and two harder ones (mixed, dense: 400 records of sizes
 * a W + b with slopes and constants over three orders of magnitude, over 300 and 100 tasks); the
 * cached models over the ranges of the targets, loaded with tg_model_range_load (PP-OCRv4 rec
 * width 32..1600/8; ch_ppocr cls and PP-OCRv4 det H, W 32..960/32, buffers offsets and
 * texture_2d objects; openwakeword melspectrogram samples 1280..32000/160 and embedding_model
 * batch 1..16); and tables given with --table (format below). cls has no valid output at
 * height 32 (its first 2 x 2 max pool meets a 1-pixel map): the bench prints the loader's
 * refusal of the targets' range and plans the range the model accepts, H 64..960/32.
 *
 * Per case: the time to plan the whole range (strategy best, --time-limit MS for the whole
 * range, default 1000 as the CLI's), pieces, the worst ratio to the own best and where, the
 * planner's own worst ratio (against the best plans it knows), the worst ratio to the lower
 * bound, sizes above the upper-bound plan, the largest pool / plan ratio (the run-time pool of
 * tg_range_report_compute_size), the time to instantiate at a size (median over every size,
 * 400-record target <= 20 us) and to plan that size from scratch (strategy best, library default
 * and no search), and how the sizes are stored (constant / affine / bilinear / table).
 * --per-size NAME prints every size of that case; --csv DIR writes NAME.csv per case (dims, bytes,
 * own, upper_bound, pool, lower_bound, piece) for charts.
 *
 * Own best: as `tangram plan` reports it, the smaller of the size planned alone and the best plan
 * the range planner knows there. Planned alone without search by default; with --verify-own K,
 * every K-th size planned alone with best and --own-limit MS of search (default 1000, the CLI's):
 * --verify-own 1 checks the targets at every size. --own-dir DIR keeps those plans' totals
 * (DIR/NAME.MODE.own) for later runs with the same limit, sizes and records: a second of search
 * per size is 15 minutes for a 900-size range.
 *
 * Targets (exit 1 when one is missed): every case within its ratio target at every size checked
 * (1.05 offsets, 1.10 objects), never above the upper-bound plan; instantiation <= 20 us for the
 * 400-record cases; the rec range (synthetic and model) planned in under 5 s.
 *
 * Table format (--table FILE, --write-tables DIR), text, one item per line:
 *   range LO..HI/STEP[,LO..HI/STEP]
 *   dims D                        (1: bytes; 2, 3: texels)
 *   mode offsets|objects
 *   records N
 *   N lines "FIRST LAST"
 *   one line per grid point, in point order: N sizes, each W, WxH or WxHxD */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

#include "bench/bench_rng.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/planner.h"
#include "tangram/range.h"
#include "tangram/range_plan.h"
#include "tangram/report.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

typedef struct range_case {
  char name[64];
  const tg_range_records *rr;
  tg_range_records *owned;  /* synthetic and table cases */
  tg_model_range *model;    /* model cases: rr is its primary records */
  tg_mode mode;
  int rec_time_target; /* the 5 s target applies */
} range_case;

/* ---- Records over a range from a sizes table ---- */

static tg_range_records *records_from(const tg_size_range *range, uint32_t dims, size_t n, const uint32_t *first,
                                      const uint32_t *last, const tg_extent *sizes) {
  tg_range_records_desc d = {*range, dims, n, first, last, sizes, NULL};
  tg_range_records *rr = NULL;
  if (tg_range_records_create(&d, NULL, &rr) != TG_OK) return NULL;
  return rr;
}

/* A synthetic instance: per record its interval and two parameters (u, v) drawn by `draw`, its
 * size at each point from `size`. */
typedef struct synthetic {
  uint32_t *first, *last;
  uint64_t *u, *v;
  uint64_t rng;
} synthetic;

static tg_range_records *synthetic_build(const tg_size_range *range, uint32_t dims, size_t n, uint64_t seed,
                                         void (*draw)(synthetic *s, size_t r),
                                         tg_extent (*size)(const synthetic *s, size_t r, const int64_t *d)) {
  uint64_t points = tg_size_range_point_count(range);
  synthetic s = {calloc(n, sizeof *s.first), calloc(n, sizeof *s.last), calloc(n, sizeof *s.u),
                 calloc(n, sizeof *s.v), seed};
  tg_extent *sizes = calloc(points * n, sizeof *sizes);
  if (!s.first || !s.last || !s.u || !s.v || !sizes) exit(2);
  for (size_t r = 0; r < n; ++r) draw(&s, r);
  for (uint64_t p = 0; p < points; ++p) {
    int64_t d[2] = {0, 0};
    tg_size_range_point(range, p, d);
    for (size_t r = 0; r < n; ++r) sizes[p * n + r] = size(&s, r, d);
  }
  tg_range_records *rr = records_from(range, dims, n, s.first, s.last, sizes);
  free(s.first);
  free(s.last);
  free(s.u);
  free(s.v);
  free(sizes);
  return rr;
}

/* Synthetic rec-like: a chain of 400 records (most live two ops, one in eight reaches 2-12 ops
 * further, as residual branches do), sizes 4 C ceil(W / s) H' bytes with strides 4, 8, 16, 32
 * (ceil for 16 and 32 across the 8-step grid), one in ten constant (weights-like, LSTM states).
 * u: stride (0 = constant), v: channels. */
static void rec_draw(synthetic *s, size_t r) {
  static const uint64_t strides[4] = {4, 8, 16, 32};
  s->first[r] = (uint32_t)r;
  s->last[r] = (uint32_t)(r + 1 + (rng_below(&s->rng, 8) == 0 ? 2 + rng_below(&s->rng, 11) : 0));
  s->u[r] = rng_below(&s->rng, 10) == 0 ? 0 : strides[rng_below(&s->rng, 4)];
  s->v[r] = 16u << rng_below(&s->rng, 4);
}

static tg_extent rec_size(const synthetic *s, size_t r, const int64_t *d) {
  uint64_t w = (uint64_t)d[0], st = s->u[r], c = s->v[r];
  return (tg_extent){st == 0 ? 4 * c * 120 : 4 * c * (48 / (st > 8 ? 8 : st)) * ((w + st - 1) / st), 1, 1};
}

/* Synthetic det-like: 330 records, a backbone chain down to stride 32 and an FPN back up (long
 * skips), tensors of C channels at H/s x W/s: buffers 4 C H/s W/s bytes, textures W/s ceil(C/4)
 * x H/s texels. u: stride, v: channels. */
static void det_draw(synthetic *s, size_t r) {
  s->first[r] = (uint32_t)r;
  int skip = r < 240 && rng_below(&s->rng, 12) == 0;
  s->last[r] = (uint32_t)(r + 1 + (skip ? 20 + rng_below(&s->rng, 70) : 0));
  uint64_t level = r < 240 ? 1 + r * 4 / 240 : 4 - (r - 240) * 3 / 90; /* 1..4 then back up */
  s->u[r] = (uint64_t)4 << (level > 3 ? 3 : level);
  s->v[r] = 8u << (level + rng_below(&s->rng, 2));
}

static tg_extent det_extent(const synthetic *s, size_t r, const int64_t *d, int textures) {
  uint64_t h = (uint64_t)d[0] / s->u[r] ? (uint64_t)d[0] / s->u[r] : 1;
  uint64_t w = (uint64_t)d[1] / s->u[r] ? (uint64_t)d[1] / s->u[r] : 1;
  return textures ? (tg_extent){w * ((s->v[r] + 3) / 4), h, 1} : (tg_extent){4 * s->v[r] * h * w, 1, 1};
}

static tg_extent det_bytes(const synthetic *s, size_t r, const int64_t *d) { return det_extent(s, r, d, 0); }
static tg_extent det_texels(const synthetic *s, size_t r, const int64_t *d) { return det_extent(s, r, d, 1); }

/* Synthetic mixed: 400 records over random intervals (up to 40 tasks long), sizes u W + v + 1
 * with slopes and constants drawn over three orders of magnitude, so that which records pack
 * together changes across the range. */
static void mixed_records(synthetic *s, size_t r, size_t span) {
  s->first[r] = (uint32_t)rng_below(&s->rng, span);
  s->last[r] = s->first[r] + (uint32_t)(rng_below(&s->rng, 4) == 0 ? rng_below(&s->rng, 40) : rng_below(&s->rng, 3));
  s->u[r] = rng_below(&s->rng, 3) == 0 ? 0 : (uint64_t)1 << rng_below(&s->rng, 10);
  s->v[r] = rng_below(&s->rng, 2) == 0 ? 0 : 256u * (1 + rng_below(&s->rng, 4000));
}

static void mixed_draw(synthetic *s, size_t r) { mixed_records(s, r, 300); }
/* The same over 100 tasks: three times as many records live at once. */
static void dense_draw(synthetic *s, size_t r) { mixed_records(s, r, 100); }

static tg_extent mixed_size(const synthetic *s, size_t r, const int64_t *d) {
  return (tg_extent){s->u[r] * (uint64_t)d[0] + s->v[r] + 1, 1, 1};
}

static const tg_size_range k_width = {1, {{32, 1600, 8}}};
static const tg_size_range k_area = {2, {{32, 960, 32}, {32, 960, 32}}};

/* ---- Records of a model over a range ---- */

typedef struct model_spec {
  const char *file;       /* in the model cache */
  const char *input;
  uint32_t rank;
  int64_t dims[4];        /* -1, -2: the first and second dynamic dimensions */
  tg_size_range range;
  tg_size_range refused;  /* count 0, or the targets' range when the model refuses it */
} model_spec;

static const model_spec k_models[] = {
    {"ch_PP-OCRv4_rec_infer.onnx", "x", 4, {1, 3, 48, -1}, {1, {{32, 1600, 8}}}, {0, {{0}}}},
    /* cls has no valid output at height 32 (a 2x2 max pool meets a 1-pixel map): from 64. */
    {"ch_ppocr_mobile_v2.0_cls_infer.onnx", "x", 4, {1, 3, -1, -2}, {2, {{64, 960, 32}, {32, 960, 32}}},
     {2, {{32, 960, 32}, {32, 960, 32}}}},
    {"ch_PP-OCRv4_det_infer.onnx", "x", 4, {1, 3, -1, -2}, {2, {{32, 960, 32}, {32, 960, 32}}}, {0, {{0}}}},
    {"openwakeword/melspectrogram.onnx", "input", 2, {1, -1}, {1, {{1280, 32000, 160}}}, {0, {{0}}}},
    {"openwakeword/embedding_model.onnx", "input_1", 4, {-1, 76, 32, 1}, {1, {{1, 16, 1}}}, {0, {{0}}}},
};

/* `path` loaded over spec->range for `storage` (tg_model_range_load, fp32, default limits); NULL
 * with the reason in `why` when the loader refuses the range or a tensor falls back to buffers
 * (only the primary records are planned here). */
static tg_model_range *load_model_range(const char *path, const model_spec *spec, const tg_size_range *range,
                                        tg_storage storage, char *why, size_t why_size) {
  tg_input_shape shape;
  memset(&shape, 0, sizeof shape);
  shape.name = spec->input;
  shape.rank = spec->rank;
  for (uint32_t k = 0; k < spec->rank; ++k) {
    int64_t v = spec->dims[k];
    if (v < 0) {
      shape.range[k] = range->dim[-v - 1];
      v = shape.range[k].lo;
    }
    shape.dims[k] = v;
  }
  tg_model_options mo = {&shape, 1};
  tg_device_limits lim = tg_device_limits_default();
  tg_model_range_desc desc = {&mo, storage, TG_PRECISION_FP32, &lim, 0, 1, 0};
  tg_model_range *r = NULL;
  tg_error_info err;
  memset(&err, 0, sizeof err);
  if (tg_model_range_load(path, &desc, NULL, &r, &err) != TG_OK) {
    snprintf(why, why_size, "%.400s", err.message);
    return NULL;
  }
  if (tg_model_records_fallback_count(r->records) > 0) {
    snprintf(why, why_size, "%zu tensors fall back to another storage", tg_model_records_fallback_count(r->records));
    tg_model_range_destroy(r);
    return NULL;
  }
  return r;
}

/* ---- Tables ---- */

static int parse_range_list(const char *text, tg_size_range *out) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", text);
  char *comma = strchr(buf, ',');
  memset(out, 0, sizeof *out);
  if (comma) *comma = '\0';
  if (tg_dim_range_parse(buf, &out->dim[0], NULL, 0) != TG_OK) return 0;
  out->count = 1;
  if (comma) {
    if (tg_dim_range_parse(comma + 1, &out->dim[1], NULL, 0) != TG_OK) return 0;
    out->count = 2;
  }
  return 1;
}

static int read_table(const char *path, range_case *c) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "bench_range: %s: %s\n", path, strerror(errno));
    return 0;
  }
  char word[64], text[128], mode[16];
  tg_size_range range;
  unsigned dims = 0;
  size_t n = 0;
  int ok = fscanf(f, "%63s %127s", word, text) == 2 && strcmp(word, "range") == 0 && parse_range_list(text, &range) &&
           fscanf(f, " dims %u mode %15s records %zu", &dims, mode, &n) == 3 && dims >= 1 && dims <= 3;
  uint64_t points = ok ? tg_size_range_point_count(&range) : 0;
  uint32_t *first = calloc(n ? n : 1, sizeof *first), *last = calloc(n ? n : 1, sizeof *last);
  tg_extent *sizes = ok ? calloc(points * (n ? n : 1), sizeof *sizes) : NULL;
  ok = ok && first && last && sizes;
  for (size_t r = 0; ok && r < n; ++r) ok = fscanf(f, "%u %u", &first[r], &last[r]) == 2;
  for (uint64_t k = 0; ok && k < points * n; ++k) {
    char s[96];
    unsigned long long w = 0, h = 1, d = 1;
    ok = fscanf(f, "%95s", s) == 1 && sscanf(s, "%llux%llux%llu", &w, &h, &d) >= 1;
    sizes[k] = (tg_extent){w, h, d};
  }
  fclose(f);
  if (ok) {
    c->rr = c->owned = records_from(&range, dims, n, first, last, sizes);
    c->mode = strcmp(mode, "objects") == 0 ? TG_MODE_OBJECTS : TG_MODE_OFFSETS;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    snprintf(c->name, sizeof c->name, "%s", base);
    ok = c->rr != NULL;
  }
  if (!ok) fprintf(stderr, "bench_range: %s: not a range table\n", path);
  free(first);
  free(last);
  free(sizes);
  return ok;
}

static void write_table(const char *dir, const range_case *c) {
  char path[512];
  snprintf(path, sizeof path, "%.400s/%.64s.range", dir, c->name);
  FILE *f = fopen(path, "w");
  if (f == NULL) return;
  const tg_size_range *r = tg_range_records_range(c->rr);
  size_t n = tg_range_records_count(c->rr);
  uint32_t dims = tg_range_records_dims(c->rr);
  fprintf(f, "range %lld..%lld/%lld", (long long)r->dim[0].lo, (long long)r->dim[0].hi, (long long)r->dim[0].step);
  if (r->count > 1)
    fprintf(f, ",%lld..%lld/%lld", (long long)r->dim[1].lo, (long long)r->dim[1].hi, (long long)r->dim[1].step);
  fprintf(f, "\ndims %u\nmode %s\nrecords %zu\n", dims, tg_mode_name(c->mode), n);
  tg_usage_record *recs = calloc(n ? n : 1, sizeof *recs);
  tg_range_records_at_index(c->rr, 0, recs);
  for (size_t k = 0; k < n; ++k) fprintf(f, "%u %u\n", recs[k].first_task, recs[k].last_task);
  uint64_t points = tg_size_range_point_count(r);
  for (uint64_t p = 0; p < points; ++p) {
    tg_range_records_at_index(c->rr, p, recs);
    for (size_t k = 0; k < n; ++k) {
      const tg_extent e = recs[k].size;
      if (dims == 1) fprintf(f, "%s%llu", k ? " " : "", (unsigned long long)e.w);
      else if (dims == 2) fprintf(f, "%s%llux%llu", k ? " " : "", (unsigned long long)e.w, (unsigned long long)e.h);
      else fprintf(f, "%s%llux%llux%llu", k ? " " : "", (unsigned long long)e.w, (unsigned long long)e.h,
                   (unsigned long long)e.d);
    }
    fputc('\n', f);
  }
  free(recs);
  fclose(f);
}

/* ---- Measurements ---- */

typedef struct bench_opts {
  uint32_t time_limit;
  uint32_t verify_every; /* 0: none; k: every k-th size planned alone with the search */
  uint32_t own_limit;    /* the search of a size alone (ms) */
  const char *own_dir;   /* cache of the sizes planned alone */
  const char *per_size;
  const char *csv_dir;
} bench_opts;

static void print_dims(FILE *f, const tg_size_range *r, const int64_t *d) {
  if (r->count == 1) fprintf(f, "%lld", (long long)d[0]);
  else fprintf(f, "%lldx%lld", (long long)d[0], (long long)d[1]);
}

/* Each size planned alone, as the reported own best's definition says: strategy best with
 * --own-limit (default 1000 ms, the CLI's) at every --verify-own K-th size; totals per point (0
 * where not planned). With --own-dir DIR the totals are kept in DIR/NAME.own and read back by
 * later runs with the same limit, sizes and records (a size searched for a second takes that long). */
static uint64_t *own_alone(const range_case *c, const bench_opts *bo) {
  const tg_size_range *range = tg_range_records_range(c->rr);
  const size_t n = tg_range_records_count(c->rr);
  const uint32_t dims = tg_range_records_dims(c->rr);
  const uint64_t points = tg_size_range_point_count(range);
  uint64_t *own = calloc(points, sizeof *own);
  tg_usage_record *recs = calloc(n ? n : 1, sizeof *recs);
  if (own == NULL || recs == NULL) exit(2);
  char path[512] = "";
  if (bo->own_dir) snprintf(path, sizeof path, "%.400s/%.64s.%s.own", bo->own_dir, c->name, tg_mode_name(c->mode));
  FILE *f = path[0] ? fopen(path, "r") : NULL;
  if (f != NULL) {
    unsigned limit = 0;
    unsigned long long pts = 0;
    size_t recn = 0;
    if (fscanf(f, "own limit %u points %llu records %zu", &limit, &pts, &recn) == 3 && limit == bo->own_limit &&
        pts == points && recn == n)
      for (uint64_t p = 0; p < points; ++p) {
        unsigned long long v = 0;
        if (fscanf(f, "%llu", &v) != 1) break;
        own[p] = v;
      }
    fclose(f);
  }
  tg_plan_options o;
  memset(&o, 0, sizeof o);
  o.mode = c->mode;
  o.strategy = TG_STRATEGY_BEST;
  o.time_limit_ms = bo->own_limit;
  int added = 0;
  for (uint64_t p = 0; p < points; p += bo->verify_every) {
    if (own[p] != 0) continue;
    tg_range_records_at_index(c->rr, p, recs);
    tg_plan *plan = NULL;
    if (tg_plan_compute(recs, n, dims, &o, NULL, &plan) != TG_OK) exit(2);
    own[p] = plan->total ? plan->total : 1;
    tg_plan_destroy(plan);
    added = 1;
    if (path[0] && p % 64 == 0) fprintf(stderr, "%s: own best alone at %llu of %llu sizes\n", c->name,
                                        (unsigned long long)p, (unsigned long long)points);
  }
  if (added && path[0] && (f = fopen(path, "w")) != NULL) {
    fprintf(f, "own limit %u points %llu records %zu\n", bo->own_limit, (unsigned long long)points, n);
    for (uint64_t p = 0; p < points; ++p) fprintf(f, "%llu\n", (unsigned long long)own[p]);
    fclose(f);
  }
  free(recs);
  return own;
}

/* Plan the range of one case, check every size, time instantiation and re-planning, print a row.
 * Returns the number of targets missed (or failures). */
static int run_case(const range_case *c, const bench_opts *bo) {
  const tg_size_range *range = tg_range_records_range(c->rr);
  const size_t n = tg_range_records_count(c->rr);
  const uint32_t dims = tg_range_records_dims(c->rr);
  const uint64_t points = tg_size_range_point_count(range);
  tg_plan_options o = {.mode = c->mode, .strategy = TG_STRATEGY_BEST, .time_limit_ms = bo->time_limit};
  tg_range_plan *plan = NULL;
  tg_error_info err;
  memset(&err, 0, sizeof err);
  double t0 = now_us();
  tg_status st = tg_range_plan_compute(c->rr, &o, NULL, NULL, &plan, &err);
  double plan_ms = (now_us() - t0) / 1e3;
  if (st != TG_OK) {
    printf("| %s | planning failed: %s |\n", c->name, err.message);
    return 1;
  }
  tg_range_plan_summary s;
  tg_range_plan_get_summary(plan, &s);
  tg_plan *inst = NULL;
  tg_usage_record *recs = calloc(n ? n : 1, sizeof *recs);
  int missed = 0;
  if (tg_range_plan_create_instance(plan, NULL, &inst) != TG_OK || recs == NULL) return 1;
  /* Own best: the smaller of the planner's best plan at a size and that size planned alone, with
   * the search (--verify-own, at every K-th size) or without (the report's, at every size). */
  uint64_t *alone = bo->verify_every > 0 ? own_alone(c, bo) : NULL;
  tg_plan_options cheap = o;
  cheap.time_limit_ms = TG_TIME_LIMIT_NONE;
  const tg_range_report_part part = {c->rr, plan, &cheap, NULL};
  /* Bytes per unit of the records: texels are 16 bytes (fp32). */
  const uint64_t unit = dims == 1 ? 1 : 16;
  double worst = 0.0, worst_pool = 0.0;
  uint64_t worst_at = 0;
  FILE *csv = NULL;
  if (bo->csv_dir) {
    char path[512];
    snprintf(path, sizeof path, "%.400s/%.64s.csv", bo->csv_dir, c->name);
    csv = fopen(path, "w");
    if (csv) fprintf(csv, "dims,bytes,own_bytes,upper_bound_bytes,pool_bytes,lower_bound,piece\n");
  }
  int per_size = bo->per_size && strcmp(bo->per_size, c->name) == 0;
  if (per_size)
    printf("\n%s, every size (bytes):\n\n| size | plan | own best | ratio | upper bound | pool | bound | piece |\n"
           "|---|---|---|---|---|---|---|---|\n", c->name);
  for (uint64_t p = 0; p < points; ++p) {
    tg_range_report_size z;
    tg_plan *insts[1] = {inst};
    if (tg_range_report_compute_size(&part, 1, TG_PRECISION_FP32, p, insts, NULL, &z, &err) != TG_OK) {
      printf("| %s | invalid at point %llu: %s |\n", c->name, (unsigned long long)p, err.message);
      missed++;
      break;
    }
    uint64_t own = z.own_bytes;
    if (alone && alone[p] && alone[p] * unit < own) own = alone[p] * unit;
    double r = own ? (double)z.bytes / (double)own : 1.0;
    if ((alone == NULL || p % bo->verify_every == 0) && r > worst) {
      worst = r;
      worst_at = p;
    }
    double pr = z.bytes ? (double)z.pool_bytes / (double)z.bytes : 1.0;
    if (pr > worst_pool) worst_pool = pr;
    if (csv) {
      print_dims(csv, range, z.dims);
      fprintf(csv, ",%llu,%llu,%llu,%llu,%llu,%u\n", (unsigned long long)z.bytes, (unsigned long long)own,
              (unsigned long long)z.upper_bound_bytes, (unsigned long long)z.pool_bytes,
              (unsigned long long)z.lower_bound, z.piece);
    }
    if (per_size) {
      printf("| ");
      print_dims(stdout, range, z.dims);
      printf(" | %llu | %llu | %.4f | %llu | %llu | %llu | %u |\n", (unsigned long long)z.bytes,
             (unsigned long long)own, r, (unsigned long long)z.upper_bound_bytes, (unsigned long long)z.pool_bytes,
             (unsigned long long)z.lower_bound, z.piece);
    }
  }
  if (csv) fclose(csv);
  free(alone);
  /* Instantiation: every size in a shuffled order, several rounds; median per call. */
  uint64_t rounds = points < 1000 ? 2000 / points + 1 : 1;
  double *times = calloc(points * rounds, sizeof *times);
  uint64_t *perm = calloc(points, sizeof *perm);
  uint64_t seed = 1;
  for (uint64_t p = 0; p < points; ++p) perm[p] = p;
  for (uint64_t k = 0; k < rounds; ++k) {
    for (uint64_t p = points; p > 1; --p) {
      uint64_t q = rng_below(&seed, (size_t)p), t = perm[p - 1];
      perm[p - 1] = perm[q];
      perm[q] = t;
    }
    for (uint64_t p = 0; p < points; ++p) {
      int64_t d[2];
      tg_size_range_point(range, perm[p], d);
      double a = now_us();
      tg_range_plan_instantiate(plan, d, recs, inst);
      times[k * points + p] = now_us() - a;
    }
  }
  qsort(times, points * rounds, sizeof *times, bench_cmp_double);
  double inst_us = times[points * rounds / 2];
  /* Planning one size from scratch: the worst size, with the library's default search and none. */
  double replan_ms[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    tg_plan_options one = o;
    one.time_limit_ms = k == 0 ? 0 : TG_TIME_LIMIT_NONE;
    tg_range_records_at_index(c->rr, worst_at, recs);
    tg_plan *fresh = NULL;
    double a = now_us();
    if (tg_plan_compute(recs, n, dims, &one, NULL, &fresh) == TG_OK) replan_ms[k] = (now_us() - a) / 1e3;
    tg_plan_destroy(fresh);
  }
  int64_t wd[2];
  tg_size_range_point(range, worst_at, wd);
  double target = c->mode == TG_MODE_OFFSETS ? 1.05 : 1.10;
  printf("| %s | %s | %zu | %llu | %.0f | %zu | %.4f at ", c->name, tg_mode_name(c->mode), n,
         (unsigned long long)points, plan_ms, s.piece_count, worst);
  print_dims(stdout, range, wd);
  tg_range_records_stats rs;
  tg_range_records_get_stats(c->rr, &rs);
  printf(" | %.4f | %.4f | %llu | %.3f | %.2f | %.2f / %.2f | %zu/%zu/%zu/%zu |\n", s.worst_ratio, s.worst_bound_ratio,
         (unsigned long long)s.above_upper_bound, worst_pool, inst_us, replan_ms[0], replan_ms[1], rs.constant,
         rs.affine, rs.bilinear, rs.table);
  fflush(stdout);
  if (worst > target + 1e-12 || s.above_upper_bound > 0) missed++;
  if (n >= 400 && inst_us > 20.0) missed++;
  if (c->rec_time_target && plan_ms > 5000.0) missed++;
  free(times);
  free(perm);
  free(recs);
  tg_plan_destroy(inst);
  tg_range_plan_destroy(plan);
  return missed;
}

static void add_case(range_case *cases, size_t *count, const char *name, tg_range_records *rr, tg_mode mode,
                     int rec_time_target) {
  range_case *c = &cases[(*count)++];
  snprintf(c->name, sizeof c->name, "%s", name);
  c->rr = c->owned = rr;
  c->mode = mode;
  c->rec_time_target = rec_time_target;
}

int main(int argc, char **argv) {
  bench_opts bo = {1000, 0, 1000, NULL, NULL, NULL};
  const char *models = getenv("TANGRAM_MODEL_CACHE");
  const char *only = NULL, *write_dir = NULL;
  const char *tables[16];
  size_t table_count = 0;
  int no_models = 0, no_synthetic = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--time-limit") == 0 && i + 1 < argc) bo.time_limit = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--models") == 0 && i + 1 < argc) models = argv[++i];
    else if (strcmp(argv[i], "--no-models") == 0) no_models = 1;
    else if (strcmp(argv[i], "--no-synthetic") == 0) no_synthetic = 1;
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    else if (strcmp(argv[i], "--table") == 0 && i + 1 < argc && table_count < 16) tables[table_count++] = argv[++i];
    else if (strcmp(argv[i], "--write-tables") == 0 && i + 1 < argc) write_dir = argv[++i];
    else if (strcmp(argv[i], "--per-size") == 0 && i + 1 < argc) bo.per_size = argv[++i];
    else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) bo.csv_dir = argv[++i];
    else if (strcmp(argv[i], "--verify-own") == 0 && i + 1 < argc) bo.verify_every = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--own-limit") == 0 && i + 1 < argc) bo.own_limit = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--own-dir") == 0 && i + 1 < argc) bo.own_dir = argv[++i];
    else {
      fprintf(stderr, "usage: bench_range [--time-limit MS] [--models DIR] [--no-models] [--no-synthetic] [--only NAME]"
                      " [--table FILE] [--write-tables DIR] [--per-size NAME] [--csv DIR] [--verify-own K]"
                      " [--own-limit MS] [--own-dir DIR]\n");
      return 2;
    }
  }
  if (bo.time_limit == 0) bo.time_limit = TG_TIME_LIMIT_NONE; /* as the CLI's --time-limit 0 */
  if (bo.own_limit == 0) bo.own_limit = TG_TIME_LIMIT_NONE;
  range_case cases[32];
  size_t count = 0;
  memset(cases, 0, sizeof cases);
  if (!no_synthetic) {
    add_case(cases, &count, "synthetic-rec", synthetic_build(&k_width, 1, 400, 42, rec_draw, rec_size),
             TG_MODE_OFFSETS, 1);
    add_case(cases, &count, "synthetic-mixed", synthetic_build(&k_width, 1, 400, 99, mixed_draw, mixed_size),
             TG_MODE_OFFSETS, 0);
    add_case(cases, &count, "synthetic-mixed-objects", synthetic_build(&k_width, 1, 400, 99, mixed_draw, mixed_size),
             TG_MODE_OBJECTS, 0);
    add_case(cases, &count, "synthetic-dense", synthetic_build(&k_width, 1, 400, 99, dense_draw, mixed_size),
             TG_MODE_OFFSETS, 0);
    add_case(cases, &count, "synthetic-det", synthetic_build(&k_area, 1, 330, 7, det_draw, det_bytes),
             TG_MODE_OFFSETS, 0);
    add_case(cases, &count, "synthetic-det-tex2", synthetic_build(&k_area, 2, 330, 7, det_draw, det_texels),
             TG_MODE_OBJECTS, 0);
  }
  for (size_t k = 0; k < table_count; ++k)
    if (read_table(tables[k], &cases[count])) count++;
  if (!no_models && models != NULL) {
    for (size_t m = 0; m < sizeof k_models / sizeof k_models[0]; ++m) {
      const model_spec *spec = &k_models[m];
      char path[1024];
      snprintf(path, sizeof path, "%s/%s", models, spec->file);
      FILE *probe = fopen(path, "rb");
      if (probe == NULL) continue;
      fclose(probe);
      const char *base = strrchr(spec->file, '/') ? strrchr(spec->file, '/') + 1 : spec->file;
      int textures = spec->range.count == 2;
      for (int t = 0; t <= textures; ++t) {
        range_case *c = &cases[count];
        snprintf(c->name, sizeof c->name, "%.*s%s", (int)(strrchr(base, '.') - base), base, t ? "-tex2" : "");
        if (only && strstr(c->name, only) == NULL) continue;
        char why[512] = "";
        double a = now_us();
        if (spec->refused.count > 0 && t == 0) {
          tg_model_range *no = load_model_range(path, spec, &spec->refused, TG_STORAGE_BUFFER, why, sizeof why);
          printf("%s over the targets' range %lld..%lld/%lld x %lld..%lld/%lld: %s\n", c->name,
                 (long long)spec->refused.dim[0].lo, (long long)spec->refused.dim[0].hi,
                 (long long)spec->refused.dim[0].step, (long long)spec->refused.dim[1].lo,
                 (long long)spec->refused.dim[1].hi, (long long)spec->refused.dim[1].step,
                 no ? "loaded" : why);
          tg_model_range_destroy(no);
        }
        c->model = load_model_range(path, spec, &spec->range, t ? TG_STORAGE_TEXTURE_2D : TG_STORAGE_BUFFER, why,
                                    sizeof why);
        if (c->model == NULL) {
          printf("%s: not over its range: %s\n", c->name, why);
          continue;
        }
        c->rr = c->model->primary;
        fprintf(stderr, "%s: loaded over %llu sizes (tg_model_range_load) in %.2f s\n", c->name,
                (unsigned long long)c->model->point_count, (now_us() - a) / 1e6);
        c->mode = t ? TG_MODE_OBJECTS : TG_MODE_OFFSETS;
        c->rec_time_target = strstr(c->name, "rec") != NULL;
        count++;
      }
    }
  }
  if (bo.verify_every > 0)
    printf("own best: each %u-th size planned alone with best, %u ms (or the planner's best plan there, when smaller)\n\n",
           bo.verify_every, bo.own_limit);
  else
    printf("own best: each size planned alone without search, or the planner's best plan there (--verify-own K "
           "searches sizes alone)\n\n");
  printf("| case | mode | records | sizes | plan range ms | pieces | worst ratio to own best | planner's worst ratio "
         "| worst / bound | above upper | pool / plan | instantiate us | re-plan ms (default / none) "
         "| sizes stored c/a/b/t |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int missed = 0;
  for (size_t k = 0; k < count; ++k) {
    if (cases[k].rr == NULL) {
      printf("| %s | records refused |\n", cases[k].name);
      missed++;
      continue;
    }
    if (only && strstr(cases[k].name, only) == NULL) continue;
    if (write_dir) write_table(write_dir, &cases[k]);
    missed += run_case(&cases[k], &bo);
  }
  for (size_t k = 0; k < count; ++k) {
    tg_range_records_destroy(cases[k].owned);
    tg_model_range_destroy(cases[k].model);
  }
  if (missed) printf("\n%d target(s) missed\n", missed);
  return missed ? 1 : 0;
}
