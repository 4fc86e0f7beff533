/* `tangram run` over a range of input sizes: on the host, OpenCL (PoCL) and Vulkan (lavapipe),
 * buffers in an arena and textures in objects, one and two dynamic dimensions: one set of
 * allocations at every size asked (the same count and capacity), 0 corrupted at each, the
 * per-size JSON keys; --grow allocates again only when a size outgrows the capacity; bad
 * --sizes, sizes outside the range and options a range does not take exit 2 naming the
 * problem; `plan --save` over a range and `run --plan` at one size, at --sizes and at the
 * file's default sizes; a file for another range or model exits 2 naming the difference. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"
#include "support/tg_tools_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REC "ch_PP-OCRv4_rec_infer.onnx"
#define CLS "ch_ppocr_mobile_v2.0_cls_infer.onnx"

static char g_dir[256];

static int setup(void **state) {
  (void)state;
  return tg_scratch_create(g_dir, sizeof g_dir, "tg_run_range_cli");
}

static int teardown(void **state) {
  (void)state;
  return tg_scratch_remove(g_dir);
}

static void expect(const cli_result *r, int code, const char *in_err) {
  if (r->code != code) fail_msg("exit %d, not %d; stderr: %s", r->code, code, r->err);
  if (in_err && strstr(r->err, in_err) == NULL) fail_msg("stderr lacks '%s': %s", in_err, r->err);
}

/* Every `"key":N` in `json`, in order (at most `max`; with `sum`, their sum). */
static size_t values(const char *json, const char *key, uint64_t *out, size_t max, uint64_t *sum) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  size_t n = 0;
  uint64_t total = 0;
  for (const char *p = strstr(json, pat); p != NULL; p = strstr(p, pat)) {
    p += strlen(pat);
    char *end;
    uint64_t v = strtoull(p, &end, 10);
    if (end == p) fail_msg("%s holds a non-number at '%.40s'", key, p);
    if (n < max) out[n] = v;
    total += v;
    ++n;
  }
  if (sum) *sum = total;
  return n;
}

/* A run's per-size results: every size with exactly the contract's keys, 0 corrupted, one set
 * of allocations (unless it grew), plan bytes within the capacity. Returns the size count. */
static size_t assert_sizes(const char *json, int grew) {
  assert_true(tg_test_json_valid(json));
  const char *sizes = strstr(json, "\"sizes\":[");
  assert_non_null(sizes);
  uint64_t bytes[64], capacity[64], corrupted[64], allocations[64], sum = 0;
  size_t n = values(sizes, "bytes", bytes, 64, NULL);
  assert_int_equal(values(sizes, "capacity", capacity, 64, NULL), n);
  assert_int_equal(values(sizes, "corrupted", corrupted, 64, &sum), n);
  assert_int_equal(values(sizes, "allocations", allocations, 64, NULL), n);
  uint64_t us[64];
  assert_int_equal(values(sizes, "reoffset_us", us, 64, NULL), n);
  size_t dims = 0;
  for (const char *p = strstr(sizes, "{\"dims\":["); p != NULL; p = strstr(p + 1, "{\"dims\":[")) ++dims;
  assert_int_equal(dims, n);
  assert_true(n >= 1);
  assert_int_equal(sum, 0);
  for (size_t k = 0; k < n; ++k) {
    assert_true(bytes[k] > 0 && bytes[k] <= capacity[k]);
    if (!grew) {
      assert_int_equal(capacity[k], capacity[0]);
      assert_int_equal(allocations[k], allocations[0]);
    }
  }
  if (!grew) {
    assert_int_equal(tg_test_json_u64(json, "reallocations"), 0);
    assert_int_equal(tg_test_json_u64(json, "allocations"), allocations[0]);
    /* The capacity is the largest size's plan: some size fills it. */
    int full = 0;
    for (size_t k = 0; k < n; ++k) full |= bytes[k] == capacity[k];
    if (!full && strstr(json, "\"mode\":\"offsets\"") != NULL) fail_msg("no size fills the arena: %.600s", json);
  }
  assert_int_equal(tg_test_json_u64(json, "corrupted_tensors"), 0);
  return n;
}

static void range_runs(const char *backend) {
  char rec[1024], cls[1024];
  if (tg_test_model_path(rec, sizeof rec, REC) == NULL || tg_test_model_path(cls, sizeof cls, CLS) == NULL) return;
  /* One dimension, buffers in one arena, sizes up and down. */
  cli_result r = cli("run %s --input-shape x:1x3x48x32..160/8 --backend %s --mode offsets --sizes 32,160,96,40 --json",
                     rec, backend);
  expect(&r, 0, NULL);
  assert_int_equal(assert_sizes(r.out, 0), 4);
  assert_int_equal(tg_test_json_u64(r.out, "allocations"), 1);
  assert_non_null(strstr(r.out, "\"sizes\":[{\"dims\":[32],\"bytes\":"));
  assert_non_null(strstr(r.out, "\"range\":{\"dims\":[{\"lo\":32,\"hi\":160,\"step\":8,\"axes\":[{\"input\":\"x\","
                                "\"axis\":3}]}],\"points\":17,\"pieces\":"));
  cli_free(&r);
  /* 2D textures in objects, two dimensions: the default sizes (both ends and six between). */
  r = cli("run %s --input-shape x:1x3x64..128/32x32..96/32 --backend %s --storage texture_2d --json", cls, backend);
  expect(&r, 0, NULL);
  assert_int_equal(assert_sizes(r.out, 0), 8);
  tg_expect_all(r.out, "{\"dims\":[64,32],", "{\"dims\":[128,96],", NULL);
  cli_free(&r);
  r = cli("run %s --input-shape x:1x3x48x32..160/8 --backend %s --storage texture_2d --sizes 64,32 --json", rec, backend);
  expect(&r, 0, NULL);
  assert_int_equal(assert_sizes(r.out, 0), 2);
  cli_free(&r);
  /* Two dimensions, buffers in objects; fp16 textures in objects. */
  r = cli("run %s --input-shape x:1x3x64..128/32x32..96/32 --backend %s --sizes 64x32,128x96,96x64 --json", cls, backend);
  expect(&r, 0, NULL);
  assert_int_equal(assert_sizes(r.out, 0), 3);
  assert_non_null(strstr(r.out, "{\"dims\":[128,96],"));
  cli_free(&r);
  r = cli("run %s --input-shape x:1x3x64..128/32x32..96/32 --backend %s --storage texture_2d --precision fp16 "
          "--sizes 128x96,64x32 --json", cls, backend);
  expect(&r, 0, NULL);
  assert_int_equal(assert_sizes(r.out, 0), 2);
  cli_free(&r);
  /* The table. */
  r = cli("run %s --input-shape x:1x3x48x32..160/8 --backend %s --sizes 64,32", rec, backend);
  expect(&r, 0, NULL);
  tg_expect_all(r.out, "re-offset", "On-device check: 0 corrupted tensors at 2 sizes", NULL);
  cli_free(&r);
}
TG_TEST_ON_BACKENDS(range_runs)

/* --grow: allocated for the first size, again (twice as large, or as the size needs) only when
 * a size outgrows it. */
static void grows(void **state) {
  (void)state;
  char rec[1024];
  if (tg_test_model_path(rec, sizeof rec, REC) == NULL) return;
  cli_result r = cli("run %s --input-shape x:1x3x48x32..160/8 --backend host --mode offsets --grow "
                     "--sizes 32,48,40,160,64 --json", rec);
  expect(&r, 0, NULL);
  assert_int_equal(assert_sizes(r.out, 1), 5);
  /* 32: allocated; 48 > 32: twice (64 wide's worth) holds 48; 40 fits; 160: again; 64 fits. */
  assert_int_equal(tg_test_json_u64(r.out, "reallocations"), 2);
  assert_int_equal(tg_test_json_u64(r.out, "allocations"), 3);
  const char *s = strstr(r.out, "\"sizes\":[");
  const char *want[5] = {"true", "true", "false", "true", "false"};
  for (int k = 0; k < 5; ++k) {
    s = strstr(s, "\"allocated\":");
    assert_non_null(s);
    s += 12;
    if (strncmp(s, want[k], strlen(want[k])) != 0) fail_msg("size %d: allocated %.5s, not %s", k, s, want[k]);
  }
  cli_free(&r);
}

static void refusals(void **state) {
  (void)state;
  char rec[1024];
  if (tg_test_model_path(rec, sizeof rec, REC) == NULL) return;
  static const struct {
    const char *args, *err;
  } k_bad[] = {
      {"--input-shape x:1x3x48x32..320/8 --sizes 1700",
       "run: --sizes: 1700 is outside the range: dimension 1 is 1700, the range takes 32..320/8 (x[3] 32..320/8)"},
      {"--input-shape x:1x3x48x32..320/8 --sizes 33",
       "run: --sizes: 33 is off the range's step: dimension 1 is 33, the range takes 32..320/8 (32 or 40; x[3]"},
      {"--input-shape x:1x3x48x32..320/8 --sizes 32,abc",
       "run: --sizes: 'abc' is not a size of the range x[3] 32..320/8: give one number"},
      {"--input-shape x:1x3x48x32..320/8 --sizes 32x48", "'32x48' is not a size of the range x[3] 32..320/8"},
      {"--input-shape x:1x3x48x32..320/8 --sizes ,", "run: --sizes ',': an empty size"},
      {"--input-shape x:1x3x48x320 --sizes 320", "--sizes and --grow need a range in --input-shape"},
      {"--input-shape x:1x3x48x32..320/8 --svg /dev/null", "--svg does not combine with a range of sizes"},
      {"--input-shape x:1x3x48x32..320/8 --out-of-order", "--out-of-order does not combine with a range"},
      {"--input-shape x:1x3x48x32..320/8 --place cpu:CONV", "--place does not combine with a range"},
      {"--input-shape x:1x3x48x320..32/8", "LO"},
  };
  for (size_t i = 0; i < sizeof k_bad / sizeof k_bad[0]; ++i) {
    cli_result r = cli("run %s --backend host %s", rec, k_bad[i].args);
    if (r.code != 2 || strstr(r.err, k_bad[i].err) == NULL)
      fail_msg("run %s: exit %d, stderr '%s'; expected 2 and '%s'", k_bad[i].args, r.code, r.err, k_bad[i].err);
    cli_free(&r);
  }
  cli_result h = cli("run --help");
  expect(&h, 0, NULL);
  tg_expect_all(h.out, "--sizes", "--grow", NULL);
  cli_free(&h);
}

/* The bytes of size `dims` ("[104]") in a report's "sizes", or UINT64_MAX. */
static uint64_t bytes_at(const char *json, const char *dims) {
  char pat[64];
  snprintf(pat, sizeof pat, "{\"dims\":%s,\"bytes\":", dims);
  const char *p = strstr(json, pat);
  return p ? strtoull(p + strlen(pat), NULL, 10) : UINT64_MAX;
}

/* plan --save over a range saves the plan it reports; then run --plan: the file's sizes, one
 * size (the bytes plan reported there), chosen sizes; outside the range, another range, another
 * model, a file of one size: exit 2 naming it. */
static void plan_files(void **state) {
  (void)state;
  char rec[1024], cls[1024], file[512], one[512], tex[512];
  if (tg_test_model_path(rec, sizeof rec, REC) == NULL || tg_test_model_path(cls, sizeof cls, CLS) == NULL) return;
  snprintf(file, sizeof file, "%s/rec.tgplan", g_dir);
  snprintf(one, sizeof one, "%s/one.tgplan", g_dir);
  snprintf(tex, sizeof tex, "%s/cls.tgplan", g_dir);
  cli_result r = cli("plan %s --input-shape x:1x3x48x32..160/8 --mode offsets --save %s --sizes 104,160 --json", rec,
                     file);
  expect(&r, 0, NULL);
  assert_true(tg_test_json_valid(r.out));
  assert_non_null(strstr(r.out, "\"saved\":{\"file\":"));
  assert_int_equal(tg_test_json_u64(r.out, "points"), 17);
  assert_int_equal(tg_test_json_u64(r.out, "records"), 402);
  const uint64_t reported = bytes_at(r.out, "[104]");
  assert_true(reported > 0 && reported != UINT64_MAX);
  cli_free(&r);
  static const char *const k_backends[] = {"host", "opencl", "vulkan"};
  for (size_t b = 0; b < 3; ++b) {
    r = cli("run %s --plan %s --backend %s --json", rec, file, k_backends[b]);
    if (r.code != 0 && !tg_test_in_ci() && strstr(r.err, "no device") != NULL) {
      cli_free(&r);
      continue;
    }
    expect(&r, 0, NULL);
    assert_int_equal(assert_sizes(r.out, 0), 8);
    assert_non_null(strstr(r.out, "\"plan_file\":"));
    cli_free(&r);
  }
  r = cli("run %s --plan %s --backend host --input-shape x:1x3x48x104 --json", rec, file);
  expect(&r, 0, NULL);
  assert_int_equal(assert_sizes(r.out, 0), 1);
  assert_non_null(strstr(r.out, "\"sizes\":[{\"dims\":[104],"));
  assert_int_equal(bytes_at(r.out, "[104]"), reported);
  cli_free(&r);
  r = cli("run %s --plan %s --backend host --sizes 160,32,104 --json", rec, file);
  expect(&r, 0, NULL);
  assert_int_equal(assert_sizes(r.out, 0), 3);
  cli_free(&r);
  r = cli("run %s --plan %s --backend host --input-shape x:1x3x48x1000", rec, file);
  expect(&r, 2, "run: --input-shape: 1000 is outside the range: dimension 1 is 1000, the range takes 32..160/8 "
                "(x[3] 32..160/8)");
  cli_free(&r);
  r = cli("run %s --plan %s --backend host --input-shape x:1x3x48x32..80/8", rec, file);
  expect(&r, 2, "over sizes 32..160/8, not for records over sizes 32..80/8");
  cli_free(&r);
  r = cli("run %s --plan %s --backend host --input-shape x:1x3x48x32..160/8", cls, file);
  expect(&r, 2, "(402 1D records over sizes 32..160/8), not for these 214 1D records");
  cli_free(&r);
  r = cli("run %s --plan %s --backend host --mode objects", rec, file);
  expect(&r, 2, "--mode objects conflicts with the plan file");
  cli_free(&r);
  r = cli("run %s --plan %s --backend host --out-of-order", rec, file);
  expect(&r, 2, "holds a plan over a range of sizes: --out-of-order does not combine with it");
  cli_free(&r);
  /* A file of one size with a range. */
  r = cli("plan %s --input-shape x:1x3x48x64 --save %s", rec, one);
  expect(&r, 0, NULL);
  cli_free(&r);
  r = cli("run %s --plan %s --backend host --input-shape x:1x3x48x32..160/8", rec, one);
  expect(&r, 2, "holds a plan for one size");
  cli_free(&r);
  /* Two dimensions, textures in objects, parallel-safe. */
  r = cli("plan %s --input-shape x:1x3x64..128/32x32..96/32 --storage texture_2d --policy parallel-safe --save %s "
          "--sizes 96x64 --own-time-limit 0", cls, tex);
  expect(&r, 0, NULL);
  assert_non_null(strstr(r.out, "saved the plan over the range (best, policy parallel-safe"));
  const char *row = strstr(r.out, "\n96x64 ");
  assert_non_null(row);
  const uint64_t reported_tex = strtoull(row + 7, NULL, 10);
  cli_free(&r);
  r = cli("run %s --plan %s --backend vulkan --sizes 128x96,64x64 --json", cls, tex);
  if (!(r.code != 0 && !tg_test_in_ci() && strstr(r.err, "no device") != NULL)) {
    expect(&r, 0, NULL);
    assert_int_equal(assert_sizes(r.out, 0), 2);
    assert_non_null(strstr(r.out, "\"policy\":\"parallel-safe\""));
  }
  cli_free(&r);
  r = cli("run %s --plan %s --backend host --input-shape x:1x3x96x64 --json", cls, tex);
  expect(&r, 0, NULL);
  assert_non_null(strstr(r.out, "\"sizes\":[{\"dims\":[96,64],"));
  assert_int_equal(bytes_at(r.out, "[96,64]"), reported_tex);
  cli_free(&r);
}

TG_TEST_MAIN_FIXTURES(setup, teardown,
                      cmocka_unit_test(range_runs_host),
                      cmocka_unit_test(range_runs_opencl),
                      cmocka_unit_test(range_runs_vulkan),
                      cmocka_unit_test(grows),
                      cmocka_unit_test(refusals),
                      cmocka_unit_test(plan_files))
