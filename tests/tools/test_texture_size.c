/* --max-texture-size WxH simulates a smaller device: tensors whose texture is larger fall back
 * to buffers, are counted and named, and the run on the host, OpenCL (PoCL) and Vulkan
 * (lavapipe) backends corrupts nothing; --no-fallback makes such a tensor an error (exit 2);
 * a bad size exits 2. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long json_u64(const char *json, const char *key) {
  char pat[128];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(json, pat);
  if (p == NULL) fail_msg("JSON lacks %s: %.300s", key, json);
  return strtoull(p + strlen(pat), NULL, 10);
}

static void plan_counts_fallbacks(void **state) {
  (void)state;
  char model[1024];
  if (!tg_test_model_path(model, sizeof model, "face_detection_short_range.tflite")) skip();
  cli_result all = cli("plan %s --storage texture_2d --strategy greedy-by-size --json", model);
  assert_int_equal(all.code, 0);
  unsigned long long none = json_u64(all.out, "fallback_tensors");
  cli_free(&all);
  cli_result r = cli("plan %s --storage texture_2d --strategy greedy-by-size --max-texture-size 64x64 --json", model);
  if (r.code != 0) fail_msg("plan: exit %d: %s", r.code, r.err);
  assert_true(tg_test_json_valid(r.out));
  unsigned long long n = json_u64(r.out, "fallback_tensors");
  assert_true(n > none);
  assert_non_null(strstr(r.out, "exceeds max 2D 64x64"));
  print_message("face_detection_short_range texture_2d at 64x64: %llu fallback tensors (%llu without)\n", n, none);
  cli_free(&r);
  r = cli("plan %s --storage texture_2d --max-texture-size 64x64 --no-fallback", model);
  assert_int_equal(r.code, 2);
  assert_non_null(strstr(r.err, "does not fit texture_2d"));
  assert_non_null(strstr(r.err, "--no-fallback"));
  cli_free(&r);
  static const char *const bad[] = {"64", "0x64", "axb", "64x", "x64", "99999999999x2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    r = cli("plan %s --storage texture_2d --max-texture-size %s", model, bad[i]);
    if (r.code != 2 || strstr(r.err, "--max-texture-size must be WIDTHxHEIGHT") == NULL)
      fail_msg("--max-texture-size %s: exit %d: %s", bad[i], r.code, r.err);
    cli_free(&r);
  }
}

static void runs_on(const char *backend) {
  char model[1024];
  if (!tg_test_model_path(model, sizeof model, "face_detection_short_range.tflite")) skip();
  cli_result probe = cli("run %s --backend %s --json", model, backend);
  int ok = probe.code == 0;
  cli_free(&probe);
  if (!ok) {
    if (strcmp(backend, "host") == 0 || tg_test_in_ci()) fail_msg("backend %s does not run", backend);
    fprintf(stderr, "SKIPPING: the %s backend is not available here\n", backend);
    return;
  }
  static const char *const storages[] = {"texture_2d", "texture_3d", "texture_array"};
  for (size_t s = 0; s < 3; ++s) {
    cli_result r = cli("run %s --backend %s --storage %s --max-texture-size 64x64 --json", model, backend, storages[s]);
    if (r.code != 0) fail_msg("%s %s: exit %d: %s", backend, storages[s], r.code, r.err);
    assert_true(tg_test_json_valid(r.out));
    assert_int_equal(json_u64(r.out, "corrupted_tensors"), 0);
    unsigned long long n = json_u64(r.out, "fallback_tensors");
    assert_true(n > 0);
    assert_non_null(strstr(r.out, "\"fallbacks\":[{\"tensor\":"));
    print_message("%s %s at 64x64: %llu tensors fall back, 0 corrupted\n", backend, storages[s], n);
    cli_free(&r);
  }
  cli_result r = cli("run %s --backend %s --storage texture_2d --max-texture-size 64x64 --no-fallback", model, backend);
  assert_int_equal(r.code, 2);
  assert_non_null(strstr(r.err, "--no-fallback"));
  cli_free(&r);
}

static void host_backend(void **state) {
  (void)state;
  runs_on("host");
}

static void opencl_backend(void **state) {
  (void)state;
  runs_on("opencl");
}

static void vulkan_backend(void **state) {
  (void)state;
  runs_on("vulkan");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(plan_counts_fallbacks),
      cmocka_unit_test(host_backend),
      cmocka_unit_test(opencl_backend),
      cmocka_unit_test(vulkan_backend),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
