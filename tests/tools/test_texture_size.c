/* --max-texture-size WxH[xL] simulates a smaller device: tensors whose texture is larger fall
 * along the chain (texture_2d, image_buffer, buffer) to the first storage that fits, are
 * counted and named with that storage, each group is planned and realised in its storage, and
 * the run on the host, OpenCL (PoCL) and Vulkan (lavapipe) backends corrupts nothing (planned,
 * and with --runtime-pool);
 * --no-fallback makes such a tensor an error (exit 2); a bad size exits 2 on plan, run and
 * evaluate. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"
#include "support/tg_tools_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tg_test_json_u64 for %llu messages. */
static unsigned long long json_u64(const char *json, const char *key) { return tg_test_json_u64(json, key); }

/* The "fallback_storages" object of a JSON document, e.g. {"texture_2d":40,"image_buffer":27}. */
static void expect_groups(const char *json, const char *want, const char *what) {
  const char *p = strstr(json, "\"fallback_storages\":");
  if (p == NULL) fail_msg("%s: JSON lacks fallback_storages: %.300s", what, json);
  p += strlen("\"fallback_storages\":");
  const char *end = strchr(p, '}');
  if (end == NULL || strncmp(p, want, strlen(want)) != 0 || (size_t)(end + 1 - p) != strlen(want))
    fail_msg("%s: fallback_storages %.*s, expected %s", what, end ? (int)(end + 1 - p) : 80, p, want);
}

static size_t count_of(const char *text, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) ++n;
  return n;
}

/* face_detection_short_range's groups per storage: at 64x64 nothing fits a 2D texture that did
 * not fit the 3D/array one (their widths are the same), so tensors go to image buffers; with
 * 8 layers at 256x256 the deep tensors fit a 2D texture. */
static const struct {
  const char *storage, *size, *groups;
} k_expected[] = {
    {"texture_2d", "64x64", "{\"image_buffer\":86}"},
    {"texture_array", "64x64", "{\"image_buffer\":4}"},
    {"texture_3d", "64x64", "{\"image_buffer\":4}"},
    {"texture_array", "256x256x8", "{\"texture_2d\":40,\"image_buffer\":27}"},
    {"texture_3d", "256x256x8", "{\"texture_2d\":40,\"image_buffer\":27}"},
};

static void plan_groups_fallbacks_by_storage(void **state) {
  (void)state;
  const char *model = tg_test_cached_model("face_detection_short_range.tflite");
  for (size_t i = 0; i < sizeof k_expected / sizeof k_expected[0]; ++i) {
    cli_result r = cli_json("plan %s --storage %s --strategy greedy-by-size --max-texture-size %s --json", model,
                            k_expected[i].storage, k_expected[i].size);
    expect_groups(r.out, k_expected[i].groups, k_expected[i].storage);
    assert_null(strstr(r.out, "\"valid\":false"));
    cli_free(&r);
  }
  /* Pose landmarks at 64x64 with 4 layers: all three groups. */
  char pose[1024];
  if (tg_test_model_path(pose, sizeof pose, "pose_landmark_lite.tflite")) {
    cli_result r = cli("plan %s --storage texture_3d --strategy greedy-by-size --max-texture-size 64x64x4 --json", pose);
    assert_int_equal(r.code, 0);
    expect_groups(r.out, "{\"texture_2d\":3,\"image_buffer\":98,\"buffer\":16}", "pose texture_3d 64x64x4");
    assert_int_equal(count_of(r.out, "\"storage\":\"texture_2d\",\"reason\":"), 3);
    cli_free(&r);
  }
  /* --no-fallback names the first tensor that does not fit; a plan file holds one storage. */
  cli_result r = cli("plan %s --storage texture_3d --max-texture-size 256x256x8 --no-fallback", model);
  assert_int_equal(r.code, 2);
  tg_expect_all(r.err, "does not fit texture_3d",
                "tensor depthwise_conv2d_5 does not fit texture_3d: extent 16x16x11 exceeds max 3D 256x256x8",
                NULL);
  cli_free(&r);
  cli_expect(2, NULL, "to texture_2d", "plan %s --storage texture_3d --max-texture-size 256x256x8 --save /dev/null", model);
  /* Where the chain does not apply, the options are refused rather than ignored. */
  cli_expect(2, NULL, "do not combine with --place", "run %s --backend host --place gpu --max-texture-size 64x64", model);
  cli_expect(2, NULL, "do not combine with --place", "evaluate %s --place gpu --max-texture-size 64x64", model);
}

static void plan_counts_fallbacks(void **state) {
  (void)state;
  const char *model = tg_test_cached_model("face_detection_short_range.tflite");
  cli_result all = cli("plan %s --storage texture_2d --strategy greedy-by-size --json", model);
  assert_int_equal(all.code, 0);
  unsigned long long none = json_u64(all.out, "fallback_tensors");
  cli_free(&all);
  cli_result r = cli_json("plan %s --storage texture_2d --strategy greedy-by-size --max-texture-size 64x64 --json", model);
  unsigned long long n = json_u64(r.out, "fallback_tensors");
  assert_true(n > none);
  assert_non_null(strstr(r.out, "exceeds max 2D 64x64"));
  print_message("face_detection_short_range texture_2d at 64x64: %llu fallback tensors (%llu without)\n", n, none);
  cli_free(&r);
  r = cli("plan %s --storage texture_2d --max-texture-size 64x64 --no-fallback", model);
  assert_int_equal(r.code, 2);
  tg_expect_all(r.err, "does not fit texture_2d", "--no-fallback", NULL);
  cli_free(&r);
  static const char *const bad[] = {"64", "0x64", "0x0", "axb", "64x", "x64", "99999999999x2", "4294967296x64",
                                    "64x64x0", "64x64x", "1x2x3x4", "-1x64", ""};
  static const char *const cmds[] = {"plan %s --storage texture_2d --max-texture-size '%s'",
                                     "run %s --backend host --max-texture-size '%s'",
                                     "evaluate %s --max-texture-size '%s'"};
  for (size_t c = 0; c < 3; ++c)
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
      r = cli(cmds[c], model, bad[i]);
      if (r.code != 2 || strstr(r.err, "--max-texture-size must be WIDTHxHEIGHT") == NULL ||
          strstr(r.err, bad[i]) == NULL)
        fail_msg("%s --max-texture-size '%s': exit %d: %s", cmds[c], bad[i], r.code, r.err);
      cli_free(&r);
    }
}

static void runs_on(const char *backend) {
  const char *model = tg_test_cached_model("face_detection_short_range.tflite");
  if (!tg_test_backend_usable(backend)) return;
  /* Every group realised in its storage: 0 corrupted, in order and out of order (with the
   * schedule's waits), objects and offsets. */
  const int quick = tg_test_quick();
  for (size_t s = 0; s < sizeof k_expected / sizeof k_expected[0]; ++s)
    for (int variant = 0; variant < 3; ++variant) {
      static const char *const extra[] = {"", "--mode offsets", "--out-of-order"};
      if (variant > 0 && strcmp(k_expected[s].size, "64x64") == 0) continue;
      /* Quick runs (sanitizers): the other modes on texture_3d only. */
      if (variant > 0 && quick && strcmp(k_expected[s].storage, "texture_3d") != 0) continue;
      cli_result r = cli("run %s --backend %s --storage %s --max-texture-size %s %s --json", model, backend,
                         k_expected[s].storage, k_expected[s].size, extra[variant]);
      if (r.code != 0) fail_msg("%s %s %s %s: exit %d: %s", backend, k_expected[s].storage, k_expected[s].size,
                                extra[variant], r.code, r.err);
      assert_true(tg_test_json_valid(r.out));
      assert_int_equal(json_u64(r.out, "corrupted_tensors"), 0);
      expect_groups(r.out, k_expected[s].groups, k_expected[s].storage);
      unsigned long long n = json_u64(r.out, "fallback_tensors");
      assert_int_equal(n, count_of(r.out, "{\"tensor\":"));
      assert_non_null(strstr(r.out, "\"fallbacks\":[{\"tensor\":"));
      print_message("%s %s at %s %s: %llu tensors fall back (%s), 0 corrupted, %llu allocations\n", backend,
                    k_expected[s].storage, k_expected[s].size, extra[variant], n, k_expected[s].groups,
                    json_u64(r.out, "allocations"));
      cli_free(&r);
    }
  /* The run-time pool: each group pooled in its storage. */
  cli_result p = cli("run %s --backend %s --runtime-pool tlsf --storage texture_3d --max-texture-size 256x256x8 --json",
                     model, backend);
  if (p.code != 0) fail_msg("%s --runtime-pool: exit %d: %s", backend, p.code, p.err);
  assert_int_equal(json_u64(p.out, "corrupted_tensors"), 0);
  assert_int_equal(json_u64(p.out, "fallback_tensors"), 67);
  assert_int_equal(json_u64(p.out, "records"), 21);
  cli_free(&p);
  cli_expect(2, NULL, "--no-fallback", "run %s --backend %s --storage texture_2d --max-texture-size 64x64 --no-fallback", model, backend);
}

/* evaluate --max-texture-size: the same groups, each planned in its storage, every row valid. */
static void evaluate_groups_fallbacks(void **state) {
  (void)state;
  const char *model = tg_test_cached_model("face_detection_short_range.tflite");
  cli_result r = cli_json("evaluate %s --max-texture-size 256x256x8 --json", model);
  assert_non_null(strstr(r.out, "\"max_texture_size\":\"256x256x8\""));
  assert_null(strstr(r.out, "\"valid\":false"));
  assert_int_equal(count_of(r.out, "\"storage\":\"texture_3d\",\"to\":\"texture_2d\""), 40);
  assert_int_equal(count_of(r.out, "\"storage\":\"texture_3d\",\"to\":\"image_buffer\""), 27);
  assert_int_equal(count_of(r.out, "\"storage\":\"texture_array\",\"to\":\"texture_2d\""), 40);
  assert_int_equal(count_of(r.out, "\"storage\":\"texture_2d\",\"to\":\"image_buffer\""), 38);
  /* The bytes of a row are those run plans and allocates for the same storage and strategy. */
  cli_result e = r;
  cli_result h = cli("run %s --backend host --storage texture_3d --strategy greedy-by-size "
                     "--max-texture-size 256x256x8 --json", model);
  assert_int_equal(h.code, 0);
  const char *row = strstr(e.out, "{\"storage\":\"texture_3d\",\"mode\":\"objects\",\"strategy\":\"greedy-by-size\"");
  assert_non_null(row);
  assert_int_equal(json_u64(row, "bytes"), json_u64(h.out, "planned_bytes"));
  assert_int_equal(json_u64(h.out, "planned_bytes"), json_u64(h.out, "allocated_bytes"));
  cli_free(&e);
  cli_free(&h);
  /* --no-fallback: storages where a tensor does not fit give skipped rows. */
  r = cli("evaluate %s --max-texture-size 64x64 --no-fallback --json", model);
  assert_int_equal(r.code, 0);
  assert_non_null(strstr(r.out, "a tensor does not fit this storage (no fallback)"));
  assert_null(strstr(r.out, "\"best_per_storage\":[{\"storage\":\"texture_2d\""));
  cli_free(&r);
  cli_expect(2, NULL, NULL, "evaluate %s --max-texture-size 64x64 --no-limits", model);
}

/* The reuse policy holds in every fallback group, in run and evaluate alike: inception's four
 * branches fall to image buffers at 16x16, where parallel-safe and branch-local plans need no
 * reuse edge out of order and run plans the bytes evaluate reports. */
static void policy_holds_in_fallback_groups(void **state) {
  (void)state;
  char graph[1024];
  tg_test_data_path(graph, sizeof graph, "graphs/inception.graph");
  static const char *const policies[] = {"parallel-safe", "branch-local"};
  static const char *const strategies[] = {"greedy-by-size", "greedy-in-order"};
  for (size_t p = 0; p < 2; ++p) {
    cli_result e = cli("evaluate %s --policy %s --max-texture-size 16x16 --json", graph, policies[p]);
    assert_int_equal(e.code, 0);
    for (size_t s = 0; s < 2; ++s) {
      char key[160];
      snprintf(key, sizeof key, "{\"storage\":\"texture_2d\",\"mode\":\"objects\",\"strategy\":\"%s\"",
               strategies[s]);
      const char *row = strstr(e.out, key);
      assert_non_null(row);
      for (int mode = 0; mode < 2; ++mode) {
        cli_result r = cli("run %s --backend host --policy %s --storage texture_2d --max-texture-size 16x16 "
                           "--mode %s --strategy %s --out-of-order --json",
                           graph, policies[p], mode ? "offsets" : "objects", strategies[s]);
        if (r.code != 0) fail_msg("run %s %s: exit %d: %s", policies[p], strategies[s], r.code, r.err);
        assert_int_equal(json_u64(r.out, "fallback_tensors"), 9);
        assert_int_equal(json_u64(r.out, "corrupted_tensors"), 0);
        if (json_u64(r.out, "reuse_edges") != 0)
          fail_msg("%s %s %s: %llu reuse edges: fallback tensors of concurrent branches share", policies[p],
                   mode ? "offsets" : "objects", strategies[s], json_u64(r.out, "reuse_edges"));
        if (mode == 0 && json_u64(r.out, "planned_bytes") != json_u64(row, "bytes"))
          fail_msg("%s %s: run plans %llu bytes, evaluate %llu", policies[p], strategies[s],
                   json_u64(r.out, "planned_bytes"), json_u64(row, "bytes"));
        cli_free(&r);
      }
    }
    cli_free(&e);
  }
}

TG_TEST_ON_BACKENDS(runs_on)

TG_TEST_MAIN(cmocka_unit_test(plan_counts_fallbacks),
             cmocka_unit_test(plan_groups_fallbacks_by_storage),
             cmocka_unit_test(evaluate_groups_fallbacks),
             cmocka_unit_test(policy_holds_in_fallback_groups), cmocka_unit_test(runs_on_host),
             cmocka_unit_test(runs_on_opencl), cmocka_unit_test(runs_on_vulkan))
