/* `tangram schedule`: its JSON contract, the text table, and exit codes. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"
#include "support/tg_tools_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>



static const char *graph_path(char *buf, size_t size) {
  return tg_test_data_path(buf, size, "graphs/inception.graph");
}

/* The inception block: stem (op 0), four arms (ops 1; 2-3; 4-5; 6-7), concat (op 8), op 9. */
static void json_contract(void **state) {
  (void)state;
  char path[1024], args[1200];
  snprintf(args, sizeof args, "%s --json", graph_path(path, sizeof path));
  cli_result r = cli_json("schedule %s", args);
  tg_expect_all(r.out, "{\"ops\":10,", "\"waves\":[[0],[1,2,4,6],[3,5,7],[8],[9]]",
                "{\"op\":8,\"after\":[1,3,5,7],\"reuse_edges\":[]}", "\"critical_path\":5,",
                "\"max_wave_width\":4,", "\"branches\":5,", "\"policy\":\"serial\"", NULL);
  /* The serial plan reuses memory across the concurrent arms: some reuse edges. */
  assert_null(strstr(r.out, "\"reuse_edge_count\":0,"));
  assert_non_null(strstr(r.out, "\"reuses\":"));
  cli_free(&r);

  static const char *const safe[] = {"parallel-safe", "branch-local"};
  for (int p = 0; p < 2; ++p) {
    for (int mode = 0; mode < 2; ++mode) {
      snprintf(args, sizeof args, "%s --json --policy %s --mode %s", graph_path(path, sizeof path),
               safe[p], mode ? "offsets" : "objects");
      r = cli_json("schedule %s", args);
      assert_non_null(strstr(r.out, "\"reuse_edge_count\":0,"));
      assert_null(strstr(r.out, "\"reuses\":"));
      assert_non_null(strstr(r.out, "\"critical_path_with_reuse\":5,"));
      cli_free(&r);
    }
  }
}

static void text_table(void **state) {
  (void)state;
  char path[1024];
  cli_result r = cli("schedule %s", graph_path(path, sizeof path));
  if (r.code != 0) fail_msg("exit %d: %s", r.code, r.err);
  tg_expect_all(r.out, "max wave width   4", "parallel-safe", "branch-local", "reuse edges of the serial plan",
                "reuses", NULL);
  cli_free(&r);
}

static void exit_codes(void **state) {
  (void)state;
  char path[1024], args[1200];
  cli_expect(0, "usage: tangram schedule", NULL, "schedule %s", "--help");
  cli_expect(2, NULL, NULL, "schedule %s", "");
  snprintf(args, sizeof args, "%s --policy bogus", graph_path(path, sizeof path));
  cli_result r = cli("schedule %s", args);
  assert_int_equal(r.code, 2);
  assert_non_null(strstr(r.err, "bogus"));
  assert_string_equal(r.out, "");
  cli_free(&r);
  snprintf(args, sizeof args, "%s --frobnicate", graph_path(path, sizeof path));
  cli_expect(2, NULL, NULL, "schedule %s", args);
  /* Usage records have no graph. */
  snprintf(args, sizeof args, "%s",
           tg_test_data_path(path, sizeof path, "records/hand_landmark_lite.buffer.csv"));
  cli_expect(2, NULL, "not a graph", "schedule %s", args);
  cli_expect(2, NULL, NULL, "schedule %s", "/nonexistent/model.tflite");
  /* A graph whose ops are out of order. */
  const char *bad = "/tmp/tg_schedule_cli_bad.graph";
  FILE *f = fopen(bad, "wb");
  assert_non_null(f);
  fputs("tensor a 1x4 float32 input\ntensor b 1x4 float32\ntensor c 1x4 float32 output\n"
        "op X inputs=b outputs=c\nop Y inputs=a outputs=b\n",
        f);
  fclose(f);
  r = cli("schedule %s", bad);
  assert_int_equal(r.code, 2);
  assert_string_equal(r.out, "");
  cli_free(&r);
  remove(bad);
}

/* Every public model, every policy: the JSON holds and parallel policies add no waits. */
static void public_models(void **state) {
  (void)state;
  static const char *const models[] = {"selfie_segmentation.tflite",
                                       "face_detection_short_range.tflite",
                                       "hand_landmark_lite.tflite", "pose_landmark_lite.tflite"};
  for (size_t m = 0; m < sizeof models / sizeof models[0]; ++m) {
    char path[1024], args[1200];
    if (tg_test_model_path(path, sizeof path, models[m]) == NULL) continue;
    snprintf(args, sizeof args, "%s --json --policy parallel-safe --storage texture_2d", path);
    cli_result r = cli_json("schedule %s", args);
    assert_non_null(strstr(r.out, "\"reuse_edge_count\":0,"));
    cli_free(&r);
  }
}

TG_TEST_MAIN(cmocka_unit_test(json_contract), cmocka_unit_test(text_table),
             cmocka_unit_test(exit_codes), cmocka_unit_test(public_models))
