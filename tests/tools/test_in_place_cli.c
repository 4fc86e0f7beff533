/* --in-place on the command line: the JSON contract (top-level "in_place" pairs in `names`
 * order, views marked), plans never above those without, evaluate's report of what in place
 * would save, and run's on-device check. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"
#include "support/tg_tools_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void plan_json(void **state) {
  (void)state;
  const char *model = tg_test_cached_model("selfie_segmentation.tflite");
  cli_result a = cli("plan %s --mode offsets --strategy best --time-limit 200 --json", model);
  cli_result b = cli("plan %s --mode offsets --strategy best --time-limit 200 --in-place --json", model);
  assert_int_equal(a.code, 0);
  assert_int_equal(b.code, 0);
  assert_true(tg_test_json_valid(b.out));
  assert_null(strstr(a.out, "\"in_place\""));
  tg_expect_all(b.out, "\"in_place\":[{\"op\":", "\"in_place_candidates\":64", NULL);
  /* Each pair names records: the first pair's output is born at its op (producer_of). */
  const uint64_t without = tg_test_json_u64(strstr(a.out, "\"results\""), "total");
  const uint64_t with = tg_test_json_u64(strstr(b.out, "\"results\""), "total");
  assert_true(with > 0 && with <= without);
  assert_int_equal(with, 3145792); /* the in-place peak of live bytes: 0.857x */
  assert_int_equal(tg_test_json_u64(b.out, "lower_bound"), 3145792);
  cli_free(&a);
  cli_free(&b);
  /* Views are marked: the ONNX recognizer's Reshape/Flatten outputs. */
  char cls[1024];
  if (tg_test_model_path(cls, sizeof cls, "ch_ppocr_mobile_v2.0_cls_infer.onnx")) {
    cli_expect(0, ",\"view\":true}", NULL, "plan %s --input-shape x:1x3x48x192 --mode offsets --strategy best --time-limit 200 "
                       "--in-place --json", cls);
  }
  /* Heterogeneous plans do not take pairs. */
  cli_expect(2, NULL, NULL, "plan %s --in-place --place auto", model);
}

static void evaluate_and_run(void **state) {
  (void)state;
  const char *model = tg_test_cached_model("face_detection_short_range.tflite");
  cli_result e = cli("evaluate %s --json", model);
  assert_int_equal(e.code, 0);
  tg_expect_all(e.out, "\"in_place_enabled\":false", "\"in_place_bytes\":", NULL);
  cli_free(&e);
  e = cli("evaluate %s", model);
  assert_non_null(strstr(e.out, "in place (off; --in-place would give): buffer objects"));
  cli_free(&e);
  static const char *const backends[] = {"host", "opencl", "vulkan"};
  for (size_t i = 0; i < 3; ++i) {
    cli_result r = cli("run %s --backend %s --mode offsets --storage buffer --in-place --time-limit 100 --json", model,
                       backends[i]);
    if (r.code != 0 && i > 0 && !tg_test_in_ci()) {
      cli_free(&r);
      continue;
    }
    assert_int_equal(r.code, 0);
    tg_expect_all(r.out, "\"corrupted_tensors\":0", "\"in_place\":[{\"op\":", NULL);
    assert_int_equal(tg_test_json_u64(r.out, "planned_bytes"), 1310720); /* 0.952x of 1376256 */
    cli_free(&r);
  }
}

/* On OpenCL an image is read or written by a kernel, never both: image buffers and textures
 * keep only the views there; Vulkan and the host keep the elementwise pairs. */
static void opencl_images_keep_views_only(void **state) {
  (void)state;
  const char *model = tg_test_cached_model("face_detection_short_range.tflite");
  static const char *const storages[] = {"image_buffer", "texture_2d"};
  static const char *const backends[] = {"host", "opencl", "vulkan"};
  for (size_t s = 0; s < 2; ++s)
    for (size_t i = 0; i < 3; ++i) {
      cli_result r = cli("run %s --backend %s --storage %s --in-place --strategy greedy-by-size --json", model,
                         backends[i], storages[s]);
      if (r.code != 0 && i > 0 && !tg_test_in_ci()) {
        cli_free(&r);
        continue;
      }
      if (r.code != 0) fail_msg("%s %s: exit %d: %s", backends[i], storages[s], r.code, r.err);
      assert_int_equal(tg_test_json_u64(r.out, "corrupted_tensors"), 0);
      size_t pairs = 0, views = 0;
      const char *list = strstr(r.out, "\"in_place\":[");
      assert_non_null(list);
      for (const char *p = strstr(list, "{\"op\":"); p; p = strstr(p + 1, "{\"op\":")) ++pairs;
      for (const char *p = strstr(list, "\"view\":true"); p; p = strstr(p + 1, "\"view\":true")) ++views;
      if (strcmp(backends[i], "opencl") == 0) {
        if (pairs != views) fail_msg("opencl %s: %zu pairs, %zu of them views", storages[s], pairs, views);
      } else {
        assert_true(pairs > views); /* the model's elementwise pairs */
      }
      cli_free(&r);
    }
}

TG_TEST_MAIN(cmocka_unit_test(plan_json), cmocka_unit_test(evaluate_and_run),
             cmocka_unit_test(opencl_images_keep_views_only))
