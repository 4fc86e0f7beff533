/* `tangram plan --reorder` and `tangram evaluate --reorder`: the JSON key, the table line, the
 * serial-only rule and inputs without a graph. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"
#include "support/tg_tools_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>



/* tests/data/graphs/two_branches.graph: file order A1, B1, A2, B2, C keeps both 64 KiB tensors
 * live; A1, A2, B1, B2, C does not. */
static void plan_json(void **state) {
  (void)state;
  char path[1024];
  tg_test_data_path(path, sizeof path, "graphs/two_branches.graph");
  cli_result r = cli_json("plan %s --reorder --mode offsets --json", path);
  tg_expect_all(r.out, "\"reorder\":{\"original_peak\":132096,\"peak\":67584,", "\"optimal\":true",
                "\"op_order\":[0,2,1,3,4]}", NULL);
  /* The records planned are the reordered ones: the bound and the plan follow. */
  tg_expect_all(r.out, "\"peak_live\":67584", "\"total\":67584,", NULL);
  assert_null(strstr(r.out, "\"valid\":false"));
  cli_free(&r);
  /* Without --reorder: no key, the file's order. */
  r = cli("plan %s --mode offsets --json", path);
  assert_int_equal(r.code, 0);
  assert_null(strstr(r.out, "\"reorder\""));
  assert_non_null(strstr(r.out, "\"peak_live\":132096"));
  cli_free(&r);
}

static void plan_text_and_help(void **state) {
  (void)state;
  char path[1024];
  tg_test_data_path(path, sizeof path, "graphs/two_branches.graph");
  cli_result r = cli("plan %s --reorder", path);
  if (r.code != 0) fail_msg("exit %d: %s", r.code, r.err);
  assert_non_null(strstr(r.out, "reorder: peak live 132096 -> 67584 bytes (48.8% less)"));
  cli_free(&r);
  cli_expect(0, "--reorder", NULL, "%s", "plan --help");
  cli_expect(0, "--reorder", NULL, "%s", "evaluate --help");
}

static void serial_only_and_graph_only(void **state) {
  (void)state;
  char path[1024];
  tg_test_data_path(path, sizeof path, "graphs/two_branches.graph");
  static const char *const k_policies[] = {"parallel-safe", "branch-local", "all"};
  for (size_t i = 0; i < 3; ++i) {
    cli_expect(2, NULL, "--reorder works only with --policy serial", "plan %s --reorder --policy %s", path, k_policies[i]);
    cli_expect(2, NULL, "--reorder works only with --policy serial", "evaluate %s --reorder --policy %s", path, k_policies[i]);
  }
  char csv[1024];
  tg_test_data_path(csv, sizeof csv, "records/pose_landmark_lite.buffer.csv");
  FILE *f = fopen(csv, "rb");
  if (f == NULL) {
    /* Any CSV will do. */
    snprintf(csv, sizeof csv, "%s/order_cli_records.csv", TG_BINARY_DIR);
    f = fopen(csv, "wb");
    assert_non_null(f);
    fputs("size,first,last\n16,0,1\n32,1,2\n", f);
  }
  fclose(f);
  cli_expect(2, NULL, "--reorder needs a model", "plan %s --reorder", csv);
  cli_expect(2, NULL, "--reorder needs a model", "evaluate %s --reorder", csv);
}

static void evaluate_json(void **state) {
  (void)state;
  char path[1024];
  tg_test_data_path(path, sizeof path, "graphs/two_branches.graph");
  cli_result r = cli_json("evaluate %s --reorder --json", path);
  assert_non_null(strstr(r.out, "\"reorder\":{\"storage\":\"buffer\",\"original_peak\":132096,\"peak\":67584,"));
  cli_free(&r);
}

/* A real model, when cached: the reordered plan is valid and no larger than the bound says. */
static void model(void **state) {
  (void)state;
  char path[1024];
  if (tg_test_model_path(path, sizeof path, "pose_landmark_lite.tflite") == NULL) {
    print_message("pose_landmark_lite.tflite not cached: skipped\n");
    return;
  }
  cli_result r = cli_json("plan %s --reorder --mode offsets --strategy best --json", path);
  tg_expect_all(r.out, "\"reorder\":{", "\"valid\":true", NULL);
  cli_free(&r);
}

TG_TEST_MAIN(cmocka_unit_test(plan_json), cmocka_unit_test(plan_text_and_help),
             cmocka_unit_test(serial_only_and_graph_only), cmocka_unit_test(evaluate_json),
             cmocka_unit_test(model))
