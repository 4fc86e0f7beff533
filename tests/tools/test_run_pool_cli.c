/* `tangram run --runtime-pool`: the JSON contract (runtime_pool's keys exactly, with values
 * that agree with each other), seed 004's example through the CLI (300 MiB peak with exact,
 * the capacity error one byte below), models in buffers and textures with fallback buffers,
 * GPU backends when present, usage errors, and every device allocation failing in turn. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"
#include "support/tg_tools_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The keys of the object after `"name":{` in `json`, in order, comma-separated into `keys`. */
static void object_keys(const char *json, const char *name, char *keys, size_t cap) {
  char pat[128];
  snprintf(pat, sizeof pat, "\"%s\":{", name);
  const char *p = strstr(json, pat);
  if (p == NULL) fail_msg("JSON lacks %s", pat);
  p += strlen(pat);
  keys[0] = '\0';
  while (*p && *p != '}') {
    assert_int_equal(*p, '"');
    const char *end = strchr(p + 1, '"');
    assert_non_null(end);
    size_t len = strlen(keys);
    snprintf(keys + len, cap - len, "%s%.*s", len ? "," : "", (int)(end - p - 1), p + 1);
    p = end + 1;
    assert_int_equal(*p, ':');
    int depth = 0, in_string = 0;
    for (++p; *p && (depth > 0 || in_string || (*p != ',' && *p != '}')); ++p) {
      if (*p == '"' && p[-1] != '\\') in_string = !in_string;
      else if (!in_string && (*p == '{' || *p == '[')) depth++;
      else if (!in_string && (*p == '}' || *p == ']')) depth--;
    }
    if (*p == ',') ++p;
  }
}

/* One pooled run's JSON: the contract and its internal agreement. */
static void check_pool_json(const char *out, const char *policy, double records) {
  assert_true(tg_test_json_valid(out));
  char keys[512];
  object_keys(out, "runtime_pool", keys, sizeof keys);
  assert_string_equal(keys, "policy,capacity,peak_reserved,peak_in_use,plan_total,ratio_to_plan,allocs,frees,"
                            "driver_allocations,views");
  char want[64];
  snprintf(want, sizeof want, "\"policy\":\"%s\"", policy);
  assert_non_null(strstr(out, want));
  double peak = tg_test_json_number(out, "peak_reserved"), in_use = tg_test_json_number(out, "peak_in_use");
  double plan = tg_test_json_number(out, "plan_total"), ratio = tg_test_json_number(out, "ratio_to_plan");
  assert_true(peak >= in_use && in_use > 0 && plan > 0);
  assert_true(ratio > peak / plan - 1e-4 && ratio < peak / plan + 1e-4);
  assert_true(tg_test_json_number(out, "allocs") == tg_test_json_number(out, "frees"));
  if (records > 0) assert_true(tg_test_json_number(out, "allocs") == records);
  assert_true(tg_test_json_number(out, "driver_allocations") >= 1);
  assert_true(tg_test_json_number(out, "corrupted_tensors") == 0);
  assert_true(tg_test_json_number(out, "checked_bytes") > 0);
}

static const char *const k_policies[] = {"exact", "best-fit", "first-fit", "tlsf"};

static void csv_json_contract_every_policy(void **state) {
  (void)state;
  for (int p = 0; p < 4; ++p) {
    cli_result r = cli("run %s --runtime-pool %s --backend host --json", tg_test_data("records/pose_landmark_lite.buffer.csv"),
                       k_policies[p]);
    if (r.code != 0) fail_msg("exit %d: %s", r.code, r.err);
    check_pool_json(r.out, k_policies[p], 124);
    assert_non_null(strstr(r.out, "\"plan_mode\":\"offsets\""));
    cli_free(&r);
  }
  /* Texture records from a CSV: images, planned in objects mode. */
  cli_result r = cli("run %s --runtime-pool best-fit --backend host --json", tg_test_data("records/hand_landmark_lite.tex3.csv"));
  if (r.code != 0) fail_msg("exit %d: %s", r.code, r.err);
  check_pool_json(r.out, "best-fit", 0);
  tg_expect_all(r.out, "\"storage\":\"texture_array\"", "\"plan_mode\":\"objects\"", NULL);
  cli_free(&r);
  /* Text output names the figures. */
  r = cli("run %s --runtime-pool tlsf --backend host --block-size 1M", tg_test_data("records/hand_landmark_lite.buffer.csv"));
  assert_int_equal(r.code, 0);
  tg_expect_all(r.out, "peak reserved:", "ahead-of-time plan:", "block size 1.00 MiB", "0 corrupted tensors", NULL);
  cli_free(&r);
}

static void seed_004_through_the_cli(void **state) {
  (void)state;
  cli_result r = cli("run %s --runtime-pool exact --capacity 300M --backend host --json", tg_test_data("records/seed_004.csv"));
  if (r.code != 0) fail_msg("exit %d: %s", r.code, r.err);
  check_pool_json(r.out, "exact", 4);
  tg_expect_all(r.out, "\"capacity\":314572800", "\"peak_reserved\":314572800", "\"plan_total\":262144000",
                "\"ratio_to_plan\":1.2000", "\"driver_allocations\":3", NULL);
  cli_free(&r);
  r = cli("run %s --runtime-pool exact --capacity 314572799 --backend host --json", tg_test_data("records/seed_004.csv"));
  assert_int_equal(r.code, 1);
  assert_string_equal(r.out, "");
  tg_expect_all(r.err, "tensor T_C", "pool capacity exceeded: required 52428800 bytes, in use 157286400",
                "capacity 314572799", NULL);
  cli_free(&r);
  /* Splitting blocks, the fit policies need no more than the plan. */
  cli_expect(0, "\"peak_reserved\":262144000", NULL, "run %s --runtime-pool best-fit --capacity 314572799 --backend host --json", tg_test_data("records/seed_004.csv"));
}

static void models_in_buffers_and_textures(void **state) {
  (void)state;
  char model[1024];
  if (tg_test_model_path(model, sizeof model, "selfie_segmentation.tflite") == NULL) skip();
  static const char *const storages[] = {"buffer", "texture_2d", "single_texture_2d"};
  for (int s = 0; s < 3; ++s) {
    cli_result r = cli("run %s --runtime-pool %s --storage %s --backend host --json", model, k_policies[s + 1], storages[s]);
    if (r.code != 0) fail_msg("%s: exit %d: %s", storages[s], r.code, r.err);
    check_pool_json(r.out, k_policies[s + 1], 0);
    if (s == 2) assert_true(tg_test_json_number(r.out, "fallback_tensors") > 0); /* C > 4: buffers */
    cli_free(&r);
  }
}

static void gpu_backends_when_present(void **state) {
  (void)state;
  static const char *const backends[] = {"opencl", "vulkan"};
  const char *csv = tg_test_data("records/face_detection_short_range.tex2.csv");
  for (int b = 0; b < 2; ++b) {
    /* Available = a planned run works there (as tests/tools/test_run_faults.c decides). */
    cli_result r = cli("run %s --backend %s --json", csv, backends[b]);
    int available = r.code == 0;
    cli_free(&r);
    if (!available) {
      if (tg_test_in_ci()) fail_msg("backend %s does not run under CI", backends[b]);
      fprintf(stderr, "*** SKIPPING --runtime-pool on %s: the backend does not run here\n", backends[b]);
      continue;
    }
    r = cli("run %s --runtime-pool tlsf --backend %s --json", csv, backends[b]);
    if (r.code != 0) fail_msg("%s: exit %d: %s", backends[b], r.code, r.err);
    check_pool_json(r.out, "tlsf", 0);
    cli_free(&r);
  }
}

/* --in-place: a view (PP-OCR's classifier flattens its pooled features with a Reshape over an
 * input that dies there) allocates nothing; everything else is as without it, and the check
 * still finds nothing corrupted, on every backend here. */
static void views_allocate_nothing(void **state) {
  (void)state;
  char model[1024];
  snprintf(model, sizeof model, "%s/tests/fuzz/corpus/fuzz_onnx/cls_whole.onnx", TG_SOURCE_DIR);
  static const char *const backends[] = {"host", "opencl", "vulkan"};
  for (int b = 0; b < 3; ++b) {
    cli_result plain = cli("run %s --runtime-pool tlsf --backend %s --json", model, backends[b]);
    if (plain.code != 0 && b > 0 && !tg_test_in_ci()) {
      cli_free(&plain);
      continue;
    }
    if (plain.code != 0) fail_msg("%s: exit %d: %s", backends[b], plain.code, plain.err);
    cli_result views = cli("run %s --runtime-pool tlsf --in-place --backend %s --json", model, backends[b]);
    if (views.code != 0) fail_msg("%s --in-place: exit %d: %s", backends[b], views.code, views.err);
    check_pool_json(plain.out, "tlsf", 0);
    check_pool_json(views.out, "tlsf", 0);
    assert_true(tg_test_json_number(plain.out, "views") == 0);
    double v = tg_test_json_number(views.out, "views");
    assert_true(v == 1);
    assert_true(tg_test_json_number(views.out, "allocs") == tg_test_json_number(plain.out, "allocs") - v);
    assert_true(tg_test_json_number(views.out, "records") == tg_test_json_number(plain.out, "records"));
    cli_free(&plain);
    cli_free(&views);
  }
  cli_expect(0, "views (--in-place, no allocation): 1", NULL, "run %s --runtime-pool tlsf --in-place --backend host", model);
}

static void usage_errors(void **state) {
  (void)state;
  const char *csv = tg_test_data("records/hand_landmark_lite.buffer.csv");
  static const struct { const char *args, *message; } cases[] = {
      {"--runtime-pool bogus", "must be exact, best-fit, first-fit or tlsf, not 'bogus'"},
      {"--runtime-pool", "needs a value"},
      {"--capacity 4M", "--capacity applies to --runtime-pool"},
      {"--block-size 1M", "--block-size applies to --runtime-pool"},
      {"--runtime-pool exact --block-size 1M", "--block-size applies to best-fit, first-fit and tlsf"},
      {"--runtime-pool tlsf --capacity 0", "--capacity must be a positive byte count"},
      {"--runtime-pool tlsf --capacity 12Q", "not '12Q'"},
      {"--runtime-pool tlsf --out-of-order", "'--out-of-order' does not apply with --runtime-pool"},
      {"--runtime-pool tlsf --storage texture_2d", "needs texel extents"},
      {"--runtime-pool tlsf --mode objects --strategy bogus", "bad --precision, --mode or --strategy"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    cli_result r = cli("run %s --backend host %s", csv, cases[i].args);
    if (r.code != 2 || strstr(r.err, cases[i].message) == NULL)
      fail_msg("'%s': exit %d, stderr '%s' (wanted '%s')", cases[i].args, r.code, r.err, cases[i].message);
    assert_string_equal(r.out, "");
    cli_free(&r);
  }
  cli_expect(2, NULL, "2D records", "run %s --runtime-pool exact --backend host --storage buffer", tg_test_data("records/hand_landmark_lite.tex2.csv"));
  cli_expect(0, "usage: tangram run", NULL, "run %s --runtime-pool tlsf --help", csv);
  cli_result r = cli("run --help");
  assert_int_equal(r.code, 0);
  tg_expect_all(r.out, "--runtime-pool exact|best-fit|first-fit|tlsf", "--capacity BYTES", "--block-size BYTES", NULL);
  cli_free(&r);
}

/* The Nth device object creation fails: exit 1 with the reason, for every N until a run
 * passes (leaks show under the sanitizers and valgrind). */
static void device_failures_walked(void **state) {
  (void)state;
  const char *csv = tg_test_data("records/hand_landmark_lite.buffer.csv");
  int passed = 0;
  for (int at = 1; at < 400 && !passed; at += tg_test_quick() ? 9 : 1) {
    char cmd[2048];
    char *out = malloc(1 << 20), *err = malloc(1 << 16);
    assert_true(out && err);
    snprintf(cmd, sizeof cmd, "TANGRAM_FAIL_DEVICE_ALLOC_AT=%d %s run %s --runtime-pool best-fit --backend host --json", at,
             tg_test_cli(), csv);
    int code = tg_test_run(cmd, out, 1 << 20, err, 1 << 16);
    if (code == 0) {
      passed = 1;
      check_pool_json(out, "best-fit", 61);
    } else {
      if (code != 1 || strstr(err, "TANGRAM_FAIL_DEVICE_ALLOC_AT") == NULL) fail_msg("at %d: exit %d: %s", at, code, err);
    }
    free(out);
    free(err);
  }
  assert_true(passed);
}

TG_TEST_MAIN(cmocka_unit_test(csv_json_contract_every_policy),
             cmocka_unit_test(seed_004_through_the_cli),
             cmocka_unit_test(models_in_buffers_and_textures),
             cmocka_unit_test(gpu_backends_when_present), cmocka_unit_test(views_allocate_nothing),
             cmocka_unit_test(usage_errors), cmocka_unit_test(device_failures_walked))
