/* `plan` and `evaluate` over a range of input sizes: the JSON "range" object and its keys, each
 * reported size's plan record for record against a plain load at that size (valid under the
 * validator, the same total), known answers on a hand-made model, --sizes and its errors, the
 * default sizes, --svg-dir, in-place pairs and --max-allocation over the range, the options
 * that do not take a range, and a real recogniser at a coarse step (the detector and the
 * classifier at their ranges with TANGRAM_TEST_DEEP=1). */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"
#include "support/tg_tools_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef TANGRAM_HAVE_ONNX

#include "model/range_models.h"
#include "tangram/model.h"
#include "range_fixture.h"

static int deep(void) {
  const char *d = getenv("TANGRAM_TEST_DEEP");
  return d != NULL && strcmp(d, "1") == 0;
}

static void expect(const cli_result *r, int code, const char *in_out, const char *in_err) {
  if (r->code != code) fail_msg("exit %d, not %d; stderr: %s", r->code, code, r->err);
  if (in_out && strstr(r->out, in_out) == NULL) fail_msg("stdout lacks '%s': %.3000s", in_out, r->out);
  if (in_err && strstr(r->err, in_err) == NULL) fail_msg("stderr lacks '%s': %s", in_err, r->err);
}

static int setup(void **state) {
  return range_fixture_setup(state, "/tmp/tg_range_planXXXXXX");
}

/* The entry of size `dims` ("[10]" or "[2,16]") in the range's sizes, or NULL. */
static const char *entry_of(const char *json, const char *dims) {
  char pat[96];
  snprintf(pat, sizeof pat, "{\"dims\":%s,\"bytes\":", dims);
  return strstr(json, pat);
}

/* The numbers of an array of numbers or of [w,h] pairs after "KEY":[ in `at` (before the next
 * entry), flattened into `out`; returns how many. */
static size_t numbers_of(const char *at, const char *key, uint64_t *out, size_t max) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":[", key);
  const char *p = strstr(at, pat);
  const char *next = strstr(at + 1, "{\"dims\":");
  if (p == NULL || (next != NULL && p > next)) fail_msg("entry lacks %s: %.300s", key, at);
  p += strlen(pat);
  size_t n = 0;
  int depth = 1;
  while (*p && depth > 0) {
    if (*p == '[') ++depth, ++p;
    else if (*p == ']') --depth, ++p;
    else if (*p == ',') ++p;
    else {
      char *end;
      uint64_t v = strtoull(p, &end, 10);
      if (end == p) fail_msg("not a number at %.40s", p);
      if (n < max) out[n] = v;
      ++n;
      p = end;
    }
  }
  return n;
}

static uint64_t number_of(const char *at, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(at, pat);
  if (p == NULL) fail_msg("lacks %s: %.300s", key, at);
  return strtoull(p + strlen(pat), NULL, 10);
}

/* The records of a plain load of `path` at one shape (as `plan` loads it: the chain, default
 * limits), in `storage`. */
static tg_model_records *plain_records(const char *path, const char *shape, tg_storage storage, tg_model **model,
                                       tg_lifetimes **lt) {
  char name[64], why[256];
  tg_input_shape s;
  assert_int_equal(tg_input_shape_parse(shape, name, sizeof name, &s, why, sizeof why), TG_OK);
  tg_model_options mo = {&s, 1};
  tg_error_info err = {{0}};
  tg_device_limits lim = tg_device_limits_default();
  tg_model_records *mr = NULL;
  if (tg_model_load_with(path, &mo, NULL, model, &err) != TG_OK ||
      tg_graph_compute_lifetimes((*model)->graph, NULL, NULL, lt, &err) != TG_OK ||
      tg_model_records_create_chain((*model)->graph, *lt, storage, TG_PRECISION_FP32, &lim, NULL, &mr, &err) != TG_OK)
    fail_msg("%s at %s: %s", path, shape, err.message);
  return mr;
}

/* Size `dims` of a `plan --json` over a range against a plain load at `shape`: its record arrays
 * make a plan of exactly those records (the validator accepts it, its total is the entry's
 * total), and the entry's figures are in order. Returns the entry's bytes. */
static uint64_t check_entry(const char *json, const char *dims, const char *path, const char *shape, tg_storage storage,
                            tg_mode mode) {
  const char *at = entry_of(json, dims);
  if (at == NULL) fail_msg("no entry for %s: %.2000s", dims, json);
  tg_model *model = NULL;
  tg_lifetimes *lt = NULL;
  tg_model_records *mr = plain_records(path, shape, storage, &model, &lt);
  const tg_record_set *set = mr->records;
  size_t n = set->count;
  uint64_t *v = calloc(3 * n + 8, sizeof *v);
  tg_plan *p = NULL;
  if (mode == TG_MODE_OFFSETS) {
    assert_int_equal(numbers_of(at, "offset_of", v, 3 * n + 8), n);
    assert_int_equal(tg_plan_create(mode, set->dims, n, 0, NULL, &p), TG_OK);
    for (size_t r = 0; r < n; ++r) {
      p->offset_of[r] = v[r];
      if (v[r] + set->records[r].size.w > p->total) p->total = v[r] + set->records[r].size.w;
    }
  } else {
    assert_int_equal(numbers_of(at, "object_of", v, 3 * n + 8), n);
    size_t objects = 0;
    for (size_t r = 0; r < n; ++r)
      if (v[r] + 1 > objects) objects = v[r] + 1;
    assert_int_equal(tg_plan_create(mode, set->dims, n, objects, NULL, &p), TG_OK);
    for (size_t r = 0; r < n; ++r) p->object_of[r] = (uint32_t)v[r];
    assert_int_equal(numbers_of(at, "object_sizes", v, 3 * n + 8), objects * set->dims);
    for (size_t k = 0; k < objects; ++k) {
      p->object_sizes[k] = (tg_extent){v[k * set->dims], set->dims > 1 ? v[k * set->dims + 1] : 1, 1};
      p->total += p->object_sizes[k].w * p->object_sizes[k].h;
    }
  }
  tg_test_assert_valid(set->records, n, set->dims, p, 0, NULL);
  assert_int_equal(p->total, number_of(at, "total"));
  uint64_t bytes = number_of(at, "bytes"), own = number_of(at, "own_bytes"), upper = number_of(at, "upper_bound_bytes");
  uint64_t lower = number_of(at, "lower_bound"), pool = number_of(at, "pool_bytes");
  assert_int_equal(bytes, p->total * (set->dims == 1 ? 1 : 16));
  if (!(lower <= own && own <= bytes && bytes <= upper && pool >= lower))
    fail_msg("%s: lower %llu own %llu bytes %llu upper %llu pool %llu", dims, (unsigned long long)lower,
             (unsigned long long)own, (unsigned long long)bytes, (unsigned long long)upper, (unsigned long long)pool);
  tg_plan_destroy(p);
  free(v);
  tg_model_records_destroy(mr);
  tg_lifetimes_destroy(lt);
  tg_model_destroy(model);
  return bytes;
}

/* The hand-made model: c = conv1(x) and r = relu(c), each [1,8,W-2] (32 (W-2) bytes), meet at
 * the relu: every plan holds both, 64 (W-2) bytes, the peak live; the pool holds both too. */
static void plan_json_known_answers_and_records(void **state) {
  fixture *f = *state;
  static const struct { const char *mode, *storage; tg_mode m; tg_storage s; } cases[] = {
      {"offsets", "buffer", TG_MODE_OFFSETS, TG_STORAGE_BUFFER},
      {"objects", "buffer", TG_MODE_OBJECTS, TG_STORAGE_BUFFER},
      {"objects", "texture_2d", TG_MODE_OBJECTS, TG_STORAGE_TEXTURE_2D},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    cli_result r = cli("plan %s --input-shape x:1x4x5..100/5 --mode %s --storage %s --json", f->model, cases[c].mode,
                       cases[c].storage);
    expect(&r, 0, "\"range\":{\"dims\":[{\"lo\":5,\"hi\":100,\"step\":5,\"axes\":[{\"input\":\"x\",\"axis\":2}]}]", NULL);
    assert_true(tg_test_json_valid(r.out));
    assert_non_null(strstr(r.out, "\"points\":20,\"worst_ratio\":1.000000,\"worst_at\":[5],\"pieces\":1,"));
    assert_int_equal(strstr(r.out, "\"offset_of\"") != NULL, cases[c].m == TG_MODE_OFFSETS);
    assert_int_equal(strstr(r.out, "\"object_of\"") != NULL, cases[c].m == TG_MODE_OBJECTS);
    for (int w = 5; w <= 100; w += 5) {
      char dims[16], shape[64];
      snprintf(dims, sizeof dims, "[%d]", w);
      snprintf(shape, sizeof shape, "x:1x4x%d", w);
      uint64_t bytes = check_entry(r.out, dims, f->model, shape, cases[c].s, cases[c].m);
      /* Textures: (W-2) x 2 texels of 16 bytes each, two of them. */
      assert_int_equal(bytes, 64u * (uint64_t)(w - 2));
      const char *at = entry_of(r.out, dims);
      assert_int_equal(number_of(at, "own_bytes"), bytes);
      assert_int_equal(number_of(at, "lower_bound"), bytes);
      assert_int_equal(number_of(at, "pool_bytes"), bytes);
      assert_int_equal(number_of(at, "upper_bound_bytes"), 64u * 98u);
    }
    cli_free(&r);
  }
  /* A plain `plan` at one size has the same records, in the same order. */
  cli_result a = cli("plan %s --input-shape x:1x4x5..100/5 --json --sizes 35", f->model);
  cli_result b = cli("plan %s --input-shape x:1x4x35 --json --strategy best", f->model);
  expect(&a, 0, NULL, NULL);
  expect(&b, 0, NULL, NULL);
  const char *na = strstr(a.out, "\"names\":["), *nb = strstr(b.out, "\"names\":[");
  assert_non_null(na);
  assert_non_null(nb);
  assert_int_equal(strcspn(na, "]"), strcspn(nb, "]"));
  assert_memory_equal(na, nb, strcspn(na, "]"));
  assert_int_equal(tg_test_json_u64(b.out, "total"), number_of(entry_of(a.out, "[35]"), "total"));
  cli_free(&a);
  cli_free(&b);
  /* The table. */
  cli_result t = cli("plan %s --input-shape x:1x4x5..100/5 --mode offsets --sizes 5,100", f->model);
  expect(&t, 0, "range x[2] 5..100/5: 20 sizes; one plan for all of them (best, policy serial): 1 piece", NULL);
  char row[160];
  snprintf(row, sizeof row, "\n%-12s %14d %14d %8.4f %14d %14d %14d %6d\n", "100", 6272, 6272, 1.0, 6272, 6272, 6272, 0);
  if (strstr(t.out, row) == NULL) fail_msg("lacks %s: %s", row, t.out);
  assert_non_null(strstr(t.out, "worst ratio to the own best 1.0000 at 5 (piece 0); above the upper-bound plan"));
  cli_free(&t);
}

/* A size longer than any the parser reads (100 digits), and its first 64. */
#define LONG_SIZE_64 "1234567890123456789012345678901234567890123456789012345678901234"
#define LONG_SIZE LONG_SIZE_64 "567890123456789012345678901234567890"

static void sizes_option(void **state) {
  fixture *f = *state;
  cli_result r = cli("plan %s --input-shape x:1x4x5..100/5 --json --sizes 10,100,5", f->model);
  expect(&r, 0, NULL, NULL);
  const char *a = entry_of(r.out, "[10]"), *b = entry_of(r.out, "[100]"), *c = entry_of(r.out, "[5]");
  assert_true(a && b && c && a < b && b < c);
  assert_null(entry_of(r.out, "[15]"));
  cli_free(&r);
  static const struct { const char *range, *sizes, *message; } bad[] = {
      {"x:1x4x5..100/5", "101", "--sizes: 101 is outside the range: dimension 1 is 101, the range takes 5..100/5"},
      {"x:1x4x5..100/5", "0", "--sizes: 0 is outside the range"},
      {"x:1x4x5..100/5", "12", "--sizes: 12 is off the range's step: dimension 1 is 12, the range takes 5..100/5 (10 or 15"},
      {"x:1x4x5..100/5", "10x20", "--sizes: '10x20' is not a size of the range x[2] 5..100/5: give one number"},
      {"x:1x4x5..100/5", "ten", "--sizes: 'ten' is not a size"},
      {"x:1x4x5..100/5", "10,,20", "an empty size"},
      {"x:1x4x5..100/5", "10,", "an empty size"},
      {"x:1x4x5..100/5", "5," LONG_SIZE, "--sizes: '" LONG_SIZE_64 "...' is not a size of the range x[2] 5..100/5"},
      {"x:1..3x4x8..24/8", "2", "'2' is not a size of the range x[0] 1..3/1, x[2] 8..24/8: give the two dynamic dimensions"},
      {"x:1..3x4x8..24/8", "4x16", "--sizes: 4x16 is outside the range: dimension 1 is 4"},
      {"x:1..3x4x8..24/8", "2x20", "--sizes: 2x20 is off the range's step: dimension 2 is 20"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    for (int e = 0; e < 2; ++e) {
      r = cli("%s %s --input-shape %s --sizes '%s'", e ? "evaluate" : "plan", f->model, bad[i].range, bad[i].sizes);
      expect(&r, 2, NULL, bad[i].message);
      assert_string_equal(r.out, "");
      cli_free(&r);
    }
  }
  /* Two dimensions, W fastest. */
  r = cli("plan %s --input-shape x:1..3x4x8..24/8 --json --sizes 2x16,3x24", f->model);
  expect(&r, 0, NULL, NULL);
  assert_non_null(entry_of(r.out, "[2,16]"));
  assert_non_null(entry_of(r.out, "[3,24]"));
  check_entry(r.out, "[2,16]", f->model, "x:2x4x16", TG_STORAGE_BUFFER, TG_MODE_OBJECTS);
  cli_free(&r);
  /* By default every size up to 256, else both ends and 62 between. */
  r = cli("plan %s --input-shape x:1x4x5..1400 --mode offsets --json --time-limit 0", f->model);
  expect(&r, 0, "\"points\":1396,", NULL);
  size_t n = 0;
  for (const char *p = strstr(r.out, "{\"dims\":["); p; p = strstr(p + 1, "{\"dims\":[")) n += p[9] >= '0' && p[9] <= '9';
  assert_int_equal(n, 64);
  assert_non_null(entry_of(r.out, "[5]"));
  assert_non_null(entry_of(r.out, "[1400]"));
  cli_free(&r);
  /* Options of a range without one. */
  r = cli("plan %s --input-shape x:1x4x50 --sizes 50", f->model);
  expect(&r, 2, NULL, "--sizes, --own-time-limit and --svg-dir go with a range of sizes");
  cli_free(&r);
  r = cli("evaluate %s --input-shape x:1x4x50 --own-time-limit 10", f->model);
  expect(&r, 2, NULL, "--sizes and --own-time-limit go with a range of sizes");
  cli_free(&r);
}

static int file_has(const char *path, const char *what) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return 0;
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strstr(buf, what) != NULL;
}

static void charts_and_evaluate(void **state) {
  fixture *f = *state;
  char dir[160], path[256];
  snprintf(dir, sizeof dir, "%s/charts", f->dir);
  cli_result r = cli("plan %s --input-shape x:1x4x5..100/5 --mode offsets --svg-dir %s", f->model, dir);
  expect(&r, 0, NULL, NULL);
  cli_free(&r);
  snprintf(path, sizeof path, "%s/conv.buffer.offsets.range.svg", dir);
  assert_true(file_has(path, "<polyline class=\"plan\""));
  assert_true(file_has(path, "worst ratio 1.0000 at 5"));
  r = cli("evaluate %s --input-shape x:1x4x5..100/5 --json --svg-dir %s --sizes 5,50,100", f->model, dir);
  expect(&r, 0, "\"results\":[{\"storage\":\"buffer\",\"mode\":\"objects\",\"strategy\":\"best\",\"parts\":1", NULL);
  assert_true(tg_test_json_valid(r.out));
  /* Every storage and mode, planned or skipped; the same range object, without record arrays. */
  size_t rows = 0;
  for (const char *p = strstr(r.out, "\"mode\":"); p; p = strstr(p + 1, "\"mode\":")) ++rows;
  assert_int_equal(rows, 12);
  assert_null(strstr(r.out, "\"offset_of\""));
  const char *e = entry_of(r.out, "[50]");
  assert_non_null(e);
  assert_int_equal(number_of(e, "bytes"), 64u * 48u);
  for (int s = 0; s < TG_STORAGE_COUNT; ++s)
    for (int m = 0; m < 2; ++m) {
      char want[96];
      snprintf(want, sizeof want, "{\"storage\":\"%s\",\"mode\":\"%s\",\"strategy\":\"best\"",
               tg_storage_name((tg_storage)s), tg_mode_name((tg_mode)m));
      if (strstr(r.out, want) == NULL) continue;
      snprintf(path, sizeof path, "%s/conv.%s.%s.range.svg", dir, tg_storage_name((tg_storage)s),
               tg_mode_name((tg_mode)m));
      if (!file_has(path, "<polyline class=\"pool\"")) fail_msg("no chart %s", path);
    }
  cli_free(&r);
  r = cli("evaluate %s --input-shape x:1x4x5..100/5 --sizes 5,100", f->model);
  expect(&r, 0, "worst ratio (at)", NULL);
  tg_expect_all(r.out, "buffer             offsets       1 1.0000 (5)", "least memory at 100: ", NULL);
  cli_free(&r);
}

/* The relu may write over the conv's output at every size: kept, one allocation for both. */
static void in_place_and_cap(void **state) {
  fixture *f = *state;
  cli_result r = cli("plan %s --input-shape x:1x4x5..100/5 --mode offsets --in-place --json --sizes 50", f->model);
  expect(&r, 0, "\"in_place_candidates\":1,", NULL);
  assert_non_null(strstr(r.out, "\"in_place_kept\":1,\"in_place_dropped\":0,"));
  assert_int_equal(number_of(entry_of(r.out, "[50]"), "bytes"), 32u * 48u);
  cli_free(&r);
  r = cli("plan %s --input-shape x:1x4x5..100/5 --mode offsets --in-place --sizes 50", f->model);
  expect(&r, 0, "in place: 1 candidate pairs at every size; the range plan keeps 1, drops 0", NULL);
  cli_free(&r);
  /* One arena at every size: 64 (W-2) bytes, 6272 at W = 100. */
  r = cli("plan %s --input-shape x:1x4x5..100/5 --mode offsets --max-allocation 6272 --sizes 100", f->model);
  expect(&r, 0, NULL, NULL);
  cli_free(&r);
  r = cli("plan %s --input-shape x:1x4x5..100/5 --mode offsets --max-allocation 6000", f->model);
  expect(&r, 2, NULL, "plan: --max-allocation does not hold over the range: range plan: at size 100 the plan needs "
                      "6272 bytes in one arena, above max_allocation 6000");
  cli_free(&r);
  r = cli("plan %s --input-shape x:1x4x5..100/5 --mode objects --storage texture_2d --max-allocation 3000", f->model);
  expect(&r, 2, NULL, "plan: --max-allocation at size 100: object 0 (3136 bytes) is larger than the allocation cap 3000 bytes");
  cli_free(&r);
  r = cli("evaluate %s --input-shape x:1x4x5..100/5 --max-allocation 3000 --sizes 5 --json", f->model);
  expect(&r, 0, "{\"storage\":\"buffer\",\"mode\":\"offsets\",\"reason\":\"--max-allocation does not hold over the range", NULL);
  cli_free(&r);
}

/* --save with a range: the plan reported, saved (offsets aligned to 256 by default); refused
 * before planning when tensors fall back to another storage. */
static void save_over_range(void **state) {
  fixture *f = *state;
  char file[160];
  snprintf(file, sizeof file, "%s/range.tgplan", f->dir);
  cli_result r = cli("plan %s --input-shape x:1x4x5..100/5 --mode offsets --save %s --json --sizes 50", f->model, file);
  expect(&r, 0, "\"alignment\":256,", NULL);
  assert_true(tg_test_json_valid(r.out));
  tg_expect_all(r.out, "\"saved\":{\"file\":",
                "\"policy\":\"serial\",\"strategy\":\"best\",\"pieces\":1,\"fingerprint\":\"", NULL);
  assert_true(number_of(entry_of(r.out, "[50]"), "bytes") > 0);
  cli_free(&r);
  FILE *saved = fopen(file, "rb");
  assert_non_null(saved);
  fclose(saved);
  remove(file);
  r = cli("plan %s --input-shape x:1x4x5..100/5 --storage texture_2d --max-texture-size 2x2 --save %s", f->model, file);
  expect(&r, 2, NULL, "plan: --save: ");
  assert_non_null(strstr(r.err, "fall back to other storages; a plan file holds one storage"));
  assert_string_equal(r.out, "");
  cli_free(&r);
  assert_null(fopen(file, "rb"));
}

static void options_without_ranges(void **state) {
  fixture *f = *state;
  static const struct { const char *cmd, *option, *name; } refused[] = {
      {"plan", "--reorder", "--reorder"},
      {"plan", "--exact --mode offsets", "--exact"},
      {"plan", "--subset-bound", "--subset-bound"},
      {"plan", "--lp-bound", "--lp-bound"},
      {"plan", "--csv-out c.csv", "--csv-out"},
      {"plan", "--svg c.svg", "--svg (give --svg-dir)"},
      {"plan", "--policy all", "--policy all"},
      {"plan", "--place auto", "--place"},
      {"evaluate", "--reorder", "--reorder"},
      {"evaluate", "--csv-out c.csv", "--csv-out"},
      {"evaluate", "--policy all", "--policy all"},
      {"evaluate", "--place auto", "--place"},
      {"evaluate", "--speed --backend opencl", "--speed"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; ++i) {
    cli_result r = cli("%s %s --input-shape x:1x4x5..100/5 %s", refused[i].cmd, f->model, refused[i].option);
    char want[160];
    snprintf(want, sizeof want, "%s: %s does not take a range of sizes: give each dynamic dimension one size",
             refused[i].cmd, refused[i].name);
    expect(&r, 2, NULL, want);
    cli_free(&r);
  }
  /* Policies other than serial plan over the range with their relation. */
  cli_result r = cli("plan %s --input-shape x:1x4x5..100/5 --policy parallel-safe --mode offsets --sizes 5,100", f->model);
  expect(&r, 0, "policy parallel-safe", NULL);
  cli_free(&r);
}

/* The recogniser over its widths at a coarse step: every reported size's plan is a plan of a
 * plain load's records there, within 1.05 of its own best; the classifier's range from height
 * 32 has no valid output there (exit 2 naming the op and the size). */
static void real_models(void **state) {
  (void)state;
  char rec[1024], cls[1024], det[1024];
  if (tg_test_model_path(rec, sizeof rec, "ch_PP-OCRv4_rec_infer.onnx") != NULL) {
    cli_result r = cli("plan %s --input-shape x:1x3x48x32..1600/392 --mode offsets --json", rec);
    expect(&r, 0, "\"points\":5,", NULL);
    static const int widths[] = {32, 424, 816, 1208, 1600};
    for (size_t i = 0; i < 5; ++i) {
      char dims[16], shape[64];
      snprintf(dims, sizeof dims, "[%d]", widths[i]);
      snprintf(shape, sizeof shape, "x:1x3x48x%d", widths[i]);
      uint64_t bytes = check_entry(r.out, dims, rec, shape, TG_STORAGE_BUFFER, TG_MODE_OFFSETS);
      assert_true((double)bytes <= 1.05 * (double)number_of(entry_of(r.out, dims), "own_bytes"));
    }
    cli_free(&r);
  }
  if (tg_test_model_path(cls, sizeof cls, "ch_ppocr_mobile_v2.0_cls_infer.onnx") != NULL) {
    cli_result r = cli("plan %s --input-shape x:1x3x32..960/32x32..960/32", cls);
    expect(&r, 2, NULL, "at x:1x3x32x32: node ");
    cli_free(&r);
    if (deep()) {
      r = cli("plan %s --input-shape x:1x3x64..960/448x32..960/464 --storage texture_2d --json", cls);
      expect(&r, 0, "\"points\":9,", NULL);
      check_entry(r.out, "[512,496]", cls, "x:1x3x512x496", TG_STORAGE_TEXTURE_2D, TG_MODE_OBJECTS);
      cli_free(&r);
    }
  }
  if (deep() && tg_test_model_path(det, sizeof det, "ch_PP-OCRv4_det_infer.onnx") != NULL) {
    cli_result r = cli("plan %s --input-shape x:1x3x32..960/448x32..960/448 --mode offsets --json", det);
    expect(&r, 0, "\"points\":9,", NULL);
    check_entry(r.out, "[480,928]", det, "x:1x3x480x928", TG_STORAGE_BUFFER, TG_MODE_OFFSETS);
    cli_free(&r);
    r = cli("evaluate %s --input-shape x:1x3x32..960/448x32..960/448 --json", det);
    expect(&r, 0, "{\"storage\":\"texture_2d\",\"mode\":\"objects\",\"strategy\":\"best\"", NULL);
    cli_free(&r);
  }
}

TG_TEST_MAIN_FIXTURES(setup, teardown,
                      cmocka_unit_test(plan_json_known_answers_and_records),
                      cmocka_unit_test(sizes_option),
                      cmocka_unit_test(charts_and_evaluate),
                      cmocka_unit_test(in_place_and_cap),
                      cmocka_unit_test(save_over_range),
                      cmocka_unit_test(options_without_ranges),
                      cmocka_unit_test(real_models))

#else

TG_TEST_SKIP_MAIN("built without .onnx support")

#endif
