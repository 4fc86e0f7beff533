/* SVG memory timelines and CSV export: well-formed output, one rectangle per tensor, escaped
 * names, the peak and bound lines, CSV round trips, failure paths, and a real rendering by
 * headless Chromium. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"
#include "support/tg_tools_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_checks.h"
#include "tangram/model.h"
#include "tangram/report.h"

/* Names that break naive XML and CSV writers. */
static const char *const k_nasty[] = {"a<b&c\"d'e>f", "conv,1", "plain", NULL,
                                      "bad\xff" "utf8", "tab\tnew\nline", "\xE2\x9C\x93 ok"};
#define NASTY_COUNT (sizeof k_nasty / sizeof k_nasty[0])

static void nasty_records(tg_usage_record *r) {
  static const uint64_t sizes[NASTY_COUNT] = {4096, 1024, 2048, 0, 512, 8192, 100};
  static const uint32_t first[NASTY_COUNT] = {0, 1, 2, 3, 3, 4, 5};
  static const uint32_t last[NASTY_COUNT] = {1, 3, 4, 3, 5, 6, 6};
  for (size_t i = 0; i < NASTY_COUNT; ++i) {
    memset(&r[i], 0, sizeof r[i]);
    r[i].size = (tg_extent){sizes[i], 1, 1};
    r[i].first_task = first[i];
    r[i].last_task = last[i];
  }
}

static tg_plan *plan_or_fail(const tg_usage_record *r, size_t n, uint32_t dims, tg_mode mode,
                             tg_strategy s) {
  tg_plan_options opt;
  memset(&opt, 0, sizeof opt);
  opt.mode = mode;
  opt.strategy = s;
  tg_plan *p = NULL;
  tg_status st = tg_plan_compute(r, n, dims, &opt, NULL, &p);
  if (st != TG_OK) fail_msg("plan %s/%s: %s", tg_mode_name(mode), tg_strategy_name(s), tg_status_name(st));
  tg_test_assert_valid(r, n, dims, p, 0, NULL);
  return p;
}

static void check_svg(const char *svg, size_t tensors, int expect_bound) {
  char why[256] = "";
  size_t elements = 0;
  if (!xml_well_formed(svg, why, sizeof why, &elements)) fail_msg("SVG not well-formed: %s", why);
  assert_int_equal(count_substr(svg, "<rect class=\"t\""), tensors);
  assert_int_equal(count_substr(svg, "<title>"), tensors);
  assert_int_equal(count_substr(svg, "</title>"), tensors);
  assert_int_equal(count_substr(svg, "<line class=\"peak\""), 1);
  assert_int_equal(count_substr(svg, "class=\"peak-label\""), 1);
  assert_int_equal(count_substr(svg, "<line class=\"bound\""), expect_bound ? 1 : 0);
  assert_int_equal(count_substr(svg, "class=\"bound-label\""), expect_bound ? 1 : 0);
  assert_non_null(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
}

static void svg_is_well_formed_with_escaped_names(void **state) {
  (void)state;
  tg_usage_record r[NASTY_COUNT];
  nasty_records(r);
  for (int m = 0; m < 2; ++m) {
    tg_mode mode = m ? TG_MODE_OFFSETS : TG_MODE_OBJECTS;
    tg_plan *p = plan_or_fail(r, NASTY_COUNT, 1, mode, TG_STRATEGY_NAIVE);
    tg_bounds b;
    assert_int_equal(tg_bounds_compute(r, NASTY_COUNT, 1, NULL, &b), TG_OK);
    char *svg = NULL;
    size_t len = 0;
    assert_int_equal(tg_report_render_svg(r, k_nasty, NASTY_COUNT, 1, p, b.peak_live, 1,
                                          "title <with> & \"quotes\"", NULL, &svg, &len),
                     TG_OK);
    assert_int_equal(strlen(svg), len);
    check_svg(svg, NASTY_COUNT, 1);
    tg_expect_all(svg, "a&lt;b&amp;c&quot;d&apos;e&gt;f", "title &lt;with&gt; &amp; &quot;quotes&quot;", NULL);
    assert_null(strstr(svg, "a<b"));
    assert_null(strstr(svg, "\xff"));          /* invalid UTF-8 replaced */
    assert_non_null(strstr(svg, "bad?utf8"));
    assert_non_null(strstr(svg, "\xE2\x9C\x93 ok")); /* valid UTF-8 kept */
    assert_non_null(strstr(svg, "#3"));        /* the unnamed record */
    /* Lanes exist only in objects mode. */
    assert_int_equal(count_substr(svg, "<rect class=\"lane\"") > 0, mode == TG_MODE_OBJECTS);
    tg_report_free(NULL, svg);
    tg_plan_destroy(p);
  }
}

static void svg_without_bound_or_names(void **state) {
  (void)state;
  tg_usage_record r[NASTY_COUNT];
  nasty_records(r);
  tg_plan *p = plan_or_fail(r, NASTY_COUNT, 1, TG_MODE_OFFSETS, TG_STRATEGY_NAIVE);
  char *svg = NULL;
  assert_int_equal(tg_report_render_svg(r, NULL, NASTY_COUNT, 1, p, 0, 0, NULL, NULL, &svg, NULL), TG_OK);
  check_svg(svg, NASTY_COUNT, 0);
  assert_null(strstr(svg, "class=\"title\""));
  tg_report_free(NULL, svg);
  /* An empty plan still draws axes and the peak line. */
  tg_plan *empty = plan_or_fail(NULL, 0, 1, TG_MODE_OFFSETS, TG_STRATEGY_NAIVE);
  assert_int_equal(tg_report_render_svg(NULL, NULL, 0, 1, empty, 0, 1, "empty", NULL, &svg, NULL), TG_OK);
  check_svg(svg, 0, 0);
  tg_report_free(NULL, svg);
  tg_plan_destroy(empty);
  tg_plan_destroy(p);
}

static void svg_rejects_mismatched_input(void **state) {
  (void)state;
  tg_usage_record r[NASTY_COUNT];
  nasty_records(r);
  tg_plan *p = plan_or_fail(r, NASTY_COUNT, 1, TG_MODE_OBJECTS, TG_STRATEGY_NAIVE);
  char *out = (char *)1;
  assert_int_equal(tg_report_render_svg(r, NULL, NASTY_COUNT - 1, 1, p, 0, 1, NULL, NULL, &out, NULL),
                   TG_ERROR_INVALID_ARGUMENT);
  assert_null(out);
  assert_int_equal(tg_report_render_svg(r, NULL, NASTY_COUNT, 2, p, 0, 1, NULL, NULL, &out, NULL),
                   TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_report_build_csv(r, NULL, NULL, NASTY_COUNT, 1, NULL, 1, NULL, &out, NULL),
                   TG_ERROR_INVALID_ARGUMENT);
  p->object_of[2] = (uint32_t)p->object_count; /* out of range */
  assert_int_equal(tg_report_render_svg(r, NULL, NASTY_COUNT, 1, p, 0, 1, NULL, NULL, &out, NULL),
                   TG_ERROR_INVALID_ARGUMENT);
  assert_null(out);
  tg_plan_destroy(p);
  tg_report_free(NULL, NULL);
}

/* Parse the export and compare every field with the plan. */
static void check_csv_round_trip(const char *csv, const tg_usage_record *r, const char *const *names,
                                 size_t n, const tg_plan *p, uint64_t unit, const char *storage) {
  char *copy = strdup(csv);
  assert_non_null(copy);
  /* Objects laid back to back in id order. */
  uint64_t *lane = calloc(p->object_count + 1, sizeof *lane);
  assert_non_null(lane);
  if (p->mode == TG_MODE_OBJECTS)
    for (size_t k = 0; k < p->object_count; ++k) {
      uint64_t v;
      assert_int_equal(tg_extent_volume(p->object_sizes[k], &v), TG_OK);
      lane[k + 1] = lane[k] + v * unit;
    }
  char *save = NULL;
  char *line = strtok_r(copy, "\n", &save);
  assert_string_equal(line, "tensor_name,size,offset,start_time,end_time,object,storage");
  size_t rows = 0;
  /* Names with newlines span lines: join until the quotes balance. */
  for (line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char joined[1024];
    snprintf(joined, sizeof joined, "%s", line);
    while (count_substr(joined, "\"") % 2 != 0) {
      char *more = strtok_r(NULL, "\n", &save);
      assert_non_null(more);
      size_t l = strlen(joined);
      snprintf(joined + l, sizeof joined - l, "\n%s", more);
    }
    char *f[8];
    assert_int_equal(csv_fields(joined, f, 8), 7);
    assert_true(rows < n);
    size_t i = rows++;
    char fallback[32];
    snprintf(fallback, sizeof fallback, "#%zu", i);
    assert_string_equal(f[0], names && names[i] ? names[i] : fallback);
    uint64_t vol;
    assert_int_equal(tg_extent_volume(r[i].size, &vol), TG_OK);
    assert_int_equal(strtoull(f[1], NULL, 10), vol * unit);
    uint64_t off = p->mode == TG_MODE_OFFSETS ? p->offset_of[i] * unit : lane[p->object_of[i]];
    assert_int_equal(strtoull(f[2], NULL, 10), off);
    assert_int_equal(strtoul(f[3], NULL, 10), r[i].first_task);
    assert_int_equal(strtoul(f[4], NULL, 10), r[i].last_task);
    assert_int_equal(strtoul(f[5], NULL, 10), p->mode == TG_MODE_OBJECTS ? p->object_of[i] : 0);
    assert_string_equal(f[6], storage);
  }
  assert_int_equal(rows, n);
  free(lane);
  free(copy);
}

static void csv_round_trips(void **state) {
  (void)state;
  tg_usage_record r[NASTY_COUNT];
  nasty_records(r);
  tg_storage where[NASTY_COUNT];
  for (size_t i = 0; i < NASTY_COUNT; ++i) where[i] = TG_STORAGE_IMAGE_BUFFER;
  for (int m = 0; m < 2; ++m) {
    tg_plan *p = plan_or_fail(r, NASTY_COUNT, 1, m ? TG_MODE_OFFSETS : TG_MODE_OBJECTS, TG_STRATEGY_NAIVE);
    char *csv = NULL;
    size_t len = 0;
    assert_int_equal(tg_report_build_csv(r, k_nasty, where, NASTY_COUNT, 1, p, 1, NULL, &csv, &len), TG_OK);
    assert_int_equal(strlen(csv), len);
    check_csv_round_trip(csv, r, k_nasty, NASTY_COUNT, p, 1, "image_buffer");
    tg_report_free(NULL, csv);
    tg_plan_destroy(p);
  }
  /* 2D texture objects: sizes are texels x bytes per texel; no storage column. */
  tg_test_rng rng = {7};
  tg_test_random_spec spec = {2, 60, 40, 8, 64, 0, 0};
  tg_usage_record t[60];
  tg_test_random_records(&rng, &spec, t);
  tg_plan *p = plan_or_fail(t, 60, 2, TG_MODE_OBJECTS, TG_STRATEGY_NAIVE);
  char *csv = NULL;
  assert_int_equal(tg_report_build_csv(t, NULL, NULL, 60, 2, p, 16, NULL, &csv, NULL), TG_OK);
  check_csv_round_trip(csv, t, NULL, 60, p, 16, "");
  tg_report_free(NULL, csv);
  char *svg = NULL;
  assert_int_equal(tg_report_render_svg(t, NULL, 60, 2, p, 0, 16, "2D", NULL, &svg, NULL), TG_OK);
  check_svg(svg, 60, 0);
  tg_report_free(NULL, svg);
  tg_plan_destroy(p);
}

static void allocation_failures_leak_nothing(void **state) {
  (void)state;
  tg_usage_record r[NASTY_COUNT];
  nasty_records(r);
  tg_plan *p = plan_or_fail(r, NASTY_COUNT, 1, TG_MODE_OBJECTS, TG_STRATEGY_NAIVE);
  for (int which = 0; which < 2; ++which) {
    int succeeded = 0;
    for (uint64_t at = 1; at < 200 && !succeeded; ++at) {
      tg_failing_allocator fa;
      tg_failing_allocator_init(&fa, NULL, at);
      char *out = NULL;
      tg_status st = which == 0
                         ? tg_report_render_svg(r, k_nasty, NASTY_COUNT, 1, p, 10, 1, "t", &fa.base, &out, NULL)
                         : tg_report_build_csv(r, k_nasty, NULL, NASTY_COUNT, 1, p, 1, &fa.base, &out, NULL);
      if (st == TG_OK) {
        succeeded = 1;
        tg_report_free(&fa.base, out);
      } else {
        assert_int_equal(st, TG_ERROR_OUT_OF_HOST_MEMORY);
        assert_null(out);
      }
      assert_int_equal(fa.live_blocks, 0);
    }
    assert_true(succeeded);
  }
  tg_plan_destroy(p);
}

/* ------------------------------------------------------------------------------------------ */
/* Rendering by a real browser. */

/* 1,000 tensors over 1,200 tasks: the legibility case. */
static char *synthetic_1000_svg(void) {
  enum { N = 1000 };
  tg_test_rng rng = {2024};
  tg_test_random_spec spec = {1, N, 1200, 60, 1u << 20, 0, 0};
  tg_usage_record *r = calloc(N, sizeof *r);
  char **names = calloc(N, sizeof *names);
  assert_non_null(r);
  assert_non_null(names);
  tg_test_random_records(&rng, &spec, r);
  for (size_t i = 0; i < N; ++i) {
    names[i] = malloc(32);
    assert_non_null(names[i]);
    snprintf(names[i], 32, "layer_%zu/out", i);
  }
  tg_plan_options opt;
  memset(&opt, 0, sizeof opt);
  opt.mode = TG_MODE_OFFSETS;
  opt.strategy = TG_STRATEGY_BEST;
  tg_plan *p = NULL;
  assert_int_equal(tg_plan_compute(r, N, 1, &opt, NULL, &p), TG_OK);
  tg_test_assert_valid(r, N, 1, p, 0, NULL);
  tg_bounds b;
  assert_int_equal(tg_bounds_compute(r, N, 1, NULL, &b), TG_OK);
  char *svg = NULL;
  size_t len = 0;
  assert_int_equal(tg_report_render_svg(r, (const char *const *)names, N, 1, p, b.peak_live, 1,
                                        "synthetic: 1,000 tensors, offsets (best)", NULL, &svg, &len),
                   TG_OK);
  check_svg(svg, N, 1);
  /* Legible at this density: a bounded size, and names only where they fit. */
  assert_true(len < 600 * 1024);
  assert_true(count_substr(svg, "<text x=") < 200);
  char *copy = strdup(svg);
  assert_non_null(copy);
  tg_report_free(NULL, svg);
  tg_plan_destroy(p);
  for (size_t i = 0; i < N; ++i) free(names[i]);
  free(names);
  free(r);
  return copy;
}

/* The best plan of one storage of pose_landmark_lite as an SVG, or NULL (model not cached). */
static char *model_svg(const char *file, tg_storage storage) {
  char path[1024];
  if (tg_test_model_path(path, sizeof path, file) == NULL) return NULL;
  tg_model *m = NULL;
  tg_error_info err = {{0}};
  if (tg_model_load(path, NULL, &m, &err) != TG_OK) fail_msg("%s", err.message);
  tg_evaluation *ev = NULL;
  if (tg_evaluation_create_from_graph(m->graph, NULL, NULL, &ev, &err) != TG_OK) fail_msg("%s", err.message);
  size_t i = ev->best_of_storage[storage];
  assert_int_not_equal(i, TG_EVALUATION_NONE);
  tg_report_view v;
  assert_int_equal(tg_evaluation_get_view(ev, i, &v), TG_OK);
  char title[256];
  snprintf(title, sizeof title, "%s: %s %s (best = %s), fp32", file, tg_storage_name(storage),
           tg_mode_name(v.mode), tg_strategy_name(v.plan->strategy));
  char *svg = NULL;
  assert_int_equal(tg_report_render_view_svg(&v, title, NULL, &svg, NULL), TG_OK);
  check_svg(svg, v.count, 1);
  /* Fallback buffers are marked: a split line, and "(fallback)" in their tooltips. */
  size_t fallbacks = v.count - v.primary_count;
  assert_int_equal(count_substr(svg, "<line class=\"fallback-split\""), fallbacks ? 1 : 0);
  assert_int_equal(count_substr(svg, " (fallback)</title>"), fallbacks);
  char *copy = strdup(svg);
  tg_report_free(NULL, svg);
  tg_evaluation_destroy(ev);
  tg_model_destroy(m);
  return copy;
}

/* A texture_2d objects plan (best strategy) of a model: lanes of 2D objects, in bytes. */
static char *model_objects_svg(const char *file) {
  char path[1024];
  if (tg_test_model_path(path, sizeof path, file) == NULL) return NULL;
  tg_model *m = NULL;
  tg_error_info err = {{0}};
  if (tg_model_load(path, NULL, &m, &err) != TG_OK) fail_msg("%s", err.message);
  tg_lifetimes *life = NULL;
  if (tg_graph_compute_lifetimes(m->graph, NULL, NULL, &life, &err) != TG_OK) fail_msg("%s", err.message);
  tg_model_records *mr = NULL;
  if (tg_model_records_create(m->graph, life, TG_STORAGE_TEXTURE_2D, TG_PRECISION_FP32, NULL, NULL, &mr, &err) != TG_OK)
    fail_msg("%s", err.message);
  const tg_record_set *set = mr->records;
  tg_plan *p = plan_or_fail(set->records, set->count, 2, TG_MODE_OBJECTS, TG_STRATEGY_BEST);
  tg_bounds b;
  assert_int_equal(tg_bounds_compute(set->records, set->count, 2, NULL, &b), TG_OK);
  char title[256];
  snprintf(title, sizeof title, "%s: texture_2d objects (best = %s), fp32, 16 bytes per texel", file,
           tg_strategy_name(p->strategy));
  char *svg = NULL;
  assert_int_equal(tg_report_render_svg(set->records, (const char *const *)set->names, set->count, 2, p,
                                        b.positional_max, 16, title, NULL, &svg, NULL),
                   TG_OK);
  check_svg(svg, set->count, 1);
  assert_true(count_substr(svg, "<rect class=\"lane\"") == p->object_count);
  char *copy = strdup(svg);
  tg_report_free(NULL, svg);
  tg_plan_destroy(p);
  tg_model_records_destroy(mr);
  tg_lifetimes_destroy(life);
  tg_model_destroy(m);
  return copy;
}

static const char k_blank_svg[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1700\" height=\"1000\" viewBox=\"0 0 1700 1000\">"
    "<rect x=\"0\" y=\"0\" width=\"1700\" height=\"1000\" fill=\"#ffffff\"/></svg>\n";

/* Render `svg` and a blank page of the same size; the chart's compressed pixels must be far
 * larger than the blank page's. Deflate makes a uniform image tiny, so this measures how much
 * the browser actually drew without decoding the PNG. */
static void screenshot_is_not_blank(const char *chromium, const char *svg, const char *name) {
  char svg_path[1024], png_path[1024], blank_svg[1024], blank_png[1024];
  snprintf(svg_path, sizeof svg_path, "%s/%s.svg", artifact_dir(), name);
  snprintf(png_path, sizeof png_path, "%s/%s.png", artifact_dir(), name);
  snprintf(blank_svg, sizeof blank_svg, "%s/blank.svg", artifact_dir());
  snprintf(blank_png, sizeof blank_png, "%s/blank.png", artifact_dir());
  assert_true(write_text_file(svg_path, svg, strlen(svg)));
  assert_true(write_text_file(blank_svg, k_blank_svg, strlen(k_blank_svg)));
  if (!chromium_screenshot(chromium, svg_path, png_path)) fail_msg("chromium did not write %s (see %s.log)", png_path, png_path);
  if (access(blank_png, R_OK) != 0 && !chromium_screenshot(chromium, blank_svg, blank_png))
    fail_msg("chromium did not write %s", blank_png);
  png_facts chart = {0}, blank = {0};
  assert_true(png_read_facts(png_path, &chart));
  assert_true(png_read_facts(blank_png, &blank));
  fprintf(stderr, "%s: %ux%u, %llu bytes of image data (blank page: %llu)\n", png_path, chart.width,
          chart.height, (unsigned long long)chart.idat_bytes, (unsigned long long)blank.idat_bytes);
  assert_int_equal(chart.width, blank.width);
  assert_int_equal(chart.height, blank.height);
  assert_true(chart.width >= 1700 && chart.height >= 1000);
  assert_true(chart.idat_bytes > 4 * blank.idat_bytes);
  assert_true(chart.idat_bytes > blank.idat_bytes + 40000);
}

static void chromium_renders_charts(void **state) {
  (void)state;
  const char *chromium = find_chromium();
  if (chromium == NULL) {
    if (tg_test_in_ci()) fail_msg("chromium is missing under CI (scripts/setup.sh installs it)");
    fprintf(stderr, "\n*** SKIPPING: chromium not found; SVG charts were not rendered ***\n\n");
    skip();
  }
  /* The blank page is rendered once per run, by the first comparison. */
  char blank_png[1024];
  snprintf(blank_png, sizeof blank_png, "%s/blank.png", artifact_dir());
  unlink(blank_png);
  char *svg = synthetic_1000_svg();
  screenshot_is_not_blank(chromium, svg, "synthetic_1000");
  free(svg);
  svg = model_svg("pose_landmark_lite.tflite", TG_STORAGE_SINGLE_TEXTURE_2D);
  if (svg != NULL) {
    screenshot_is_not_blank(chromium, svg, "pose_landmark_lite.single_texture_2d");
    free(svg);
    svg = model_svg("pose_landmark_lite.tflite", TG_STORAGE_BUFFER);
    assert_null(strstr(svg, "fallback-split"));
    free(svg);
    svg = model_objects_svg("pose_landmark_lite.tflite");
    screenshot_is_not_blank(chromium, svg, "pose_landmark_lite.texture_2d_objects");
    free(svg);
  }
}

TG_TEST_MAIN(cmocka_unit_test(svg_is_well_formed_with_escaped_names),
             cmocka_unit_test(svg_without_bound_or_names),
             cmocka_unit_test(svg_rejects_mismatched_input), cmocka_unit_test(csv_round_trips),
             cmocka_unit_test(allocation_failures_leak_nothing),
             cmocka_unit_test(chromium_renders_charts))
