/* The `tangram` command line: contracts other tools depend on (flags, JSON keys, exit codes)
 * and clean failures on bad input. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"
#include "support/tg_tools_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT_CAP (1 << 22)



static void usage_and_help(void **state) {
  (void)state;

  cli_expect(2, NULL, "usage: tangram", "%s", "");
  static const char *const cmds[] = {"plan", "run", "evaluate", "schedule"};
  for (int i = 0; i < 4; ++i) {
    cli_expect(0, "usage: tangram", NULL, "%s --help", cmds[i]);
  }
  cli_expect(2, NULL, "unknown command 'frobnicate'", "frobnicate");
  cli_result r = cli("plan %s --strategy bogus", tg_test_data("records/pose_landmark_lite.buffer.csv"));
  assert_int_equal(r.code, 2);
  assert_non_null(strstr(r.err, "bogus"));
  assert_string_equal(r.out, "");
  cli_free(&r);
}

/* Bad input: exit 2, file:line and the problem on stderr, nothing on stdout. */
static void bad_input(void **state) {
  (void)state;
  const char *path = "/tmp/tg_cli_bad.csv";
  static const struct { const char *text, *message; } cases[] = {
      {"name,size,first,last\na,12,0,1\nb,-3,1,2\n", "tg_cli_bad.csv:3: size '-3' is negative"},
      {"name,size,first,last\na,12,5,1\n", "tg_cli_bad.csv:2: first 5 is after last 1"},
      {"name,size,first\n", "tg_cli_bad.csv:1: header lacks the 'last' column"},
      {"", "empty file"},
      {"name,size,first,last\na,twelve,0,1\n", "tg_cli_bad.csv:2: size 'twelve' is not a plain decimal"},
      {"name,size,first,last\na,99999999999999999999,0,1\n", "too large"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    tg_test_write_file(path, cases[i].text);
    cli_result r = cli("plan %s --json", path);
    assert_int_equal(r.code, 2);
    if (strstr(r.err, cases[i].message) == NULL) fail_msg("stderr '%s' lacks '%s'", r.err, cases[i].message);
    assert_string_equal(r.out, "");
    cli_free(&r);
  }
  cli_expect(2, NULL, "/nonexistent/records.csv", "plan /nonexistent/records.csv");
  remove(path);
}

/* `plan --json`: exactly one JSON object with the documented keys and per-record arrays. */
static void plan_json_contract(void **state) {
  (void)state;
  cli_result r = cli_json("plan %s --json", tg_test_data("records/face_detection_short_range.buffer.csv"));
  static const char *const keys[] = {"\"records\":88", "\"dims\":1", "\"mode\":\"objects\"", "\"naive\":",
                                     "\"lower_bound\":1406976", "\"results\":[", "\"strategy\":\"greedy-by-size\"",
                                     "\"strategy\":\"min-cost-flow\"", "\"strategy\":\"best\"", "\"valid\":true",
                                     "\"plan_us\":", "\"object_of\":[", "\"object_sizes\":["};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; ++i)
    if (strstr(r.out, keys[i]) == NULL) fail_msg("JSON lacks %s", keys[i]);
  assert_null(strstr(r.out, "\"valid\":false"));
  cli_free(&r);
  r = cli_json("plan %s --mode offsets --alignment 128 --json", tg_test_data("records/face_detection_short_range.buffer.csv"));
  tg_expect_all(r.out, "\"offset_of\":[", "\"fit\":\"first\"", "\"alignment\":128", NULL);
  cli_free(&r);
  r = cli_json("plan %s --strategy greedy-in-order --json", tg_test_data("records/hand_landmark_lite.tex3.csv"));
  tg_expect_all(r.out, "\"dims\":3", "\"object_sizes\":[[", NULL);
  /* The shape-aware bound: 401408 texels (an all-pairs assignment computed outside Tangram
   * agrees), against a positional maximum of 288512. */
  tg_expect_all(r.out, "\"positional_max\":288512", "\"shape_bound\":401408", NULL);
  cli_free(&r);
  cli_expect(0, "shape-aware bound 401408 texels", NULL, "plan %s --strategy greedy-in-order", tg_test_data("records/hand_landmark_lite.tex3.csv"));
  /* The subset bound: 537040 texels, which `best` with a search reaches (so that plan is
   * optimal); only for objects plans. */
  r = cli_json("plan %s --strategy best --time-limit 100 --subset-bound --json",
               tg_test_data("records/hand_landmark_lite.tex3.csv"));
  tg_expect_all(r.out, "\"subset_bound\":537040", "\"total\":537040", NULL);
  cli_free(&r);
  cli_expect(0, "subset bound 537040 texels", NULL, "plan %s --strategy best --subset-bound", tg_test_data("records/hand_landmark_lite.tex3.csv"));
  cli_expect(2, NULL, "--subset-bound", "plan %s --mode offsets --subset-bound", tg_test_data("records/hand_landmark_lite.buffer.csv"));
  /* The LP bound: 143744 texels on face_detection_short_range's 3D textures, where the shape
   * and subset bounds stop at 119808 and 136704; best reaches it (so the plan is optimal). */
  r = cli_json("plan %s --strategy best --time-limit 2000 --lp-bound --json",
               tg_test_data("records/face_detection_short_range.tex3.csv"));
  tg_expect_all(r.out, "\"lp_bound\":143744", "\"total\":143744", NULL);
  cli_free(&r);
  cli_expect(0, "LP bound 143744 texels", NULL, "plan %s --strategy greedy-in-order --lp-bound", tg_test_data("records/face_detection_short_range.tex3.csv"));
  cli_expect(2, NULL, "--lp-bound", "plan %s --mode offsets --lp-bound", tg_test_data("records/hand_landmark_lite.buffer.csv"));
  /* Offsets: each result's lower bound and its source. Two 3-byte records that meet, offsets
   * multiples of 4: peak-live 6 (the top-level lower_bound, unchanged), the subset-exact bound
   * 7, which the plans meet; --exact proves 7. */
  tg_test_write_file("bound_offsets.csv", "name,size,first,last\nA,3,0,1\nB,3,1,2\n");
  r = cli_json("plan bound_offsets.csv --mode offsets --alignment 4 --exact --json");
  tg_expect_all(r.out, "\"lower_bound\":6,", "\"lower_bound\":{\"bytes\":7,\"source\":\"subset-exact\"}",
                "\"proved_optimal\":true", NULL);
  assert_null(strstr(r.out, "\"source\":\"peak-live\""));
  cli_free(&r);
  cli_expect(0, "\"lower_bound\":{\"bytes\":4214784,\"source\":\"peak-live\"}", NULL, "plan %s --mode offsets --json", tg_test_data("records/hand_landmark_lite.buffer.csv"));
  r = cli_json("evaluate %s --json", tg_test_data("records/hand_landmark_lite.buffer.csv"));
  assert_non_null(strstr(r.out, "\"lower_bound\":{\"bytes\":4214784,\"source\":\"peak-live\"}"));
  cli_free(&r);
  remove("bound_offsets.csv");
  /* Textures have no offsets mode of their own. */
  cli_expect(2, NULL, NULL, "plan %s --mode offsets", tg_test_data("records/hand_landmark_lite.tex2.csv"));
}

static void plan_csv_out(void **state) {
  (void)state;
  cli_expect(0, NULL, NULL, "plan %s --mode offsets --strategy best --csv-out /tmp/tg_cli_plan.csv",
                     tg_test_data("records/selfie_segmentation.buffer.csv"));
  FILE *f = fopen("/tmp/tg_cli_plan.csv", "rb");
  assert_non_null(f);
  char line[4096];
  assert_non_null(fgets(line, sizeof line, f));
  assert_string_equal(line, "tensor_name,size,offset,start_time,end_time,object,storage\n");
  size_t rows = 0;
  while (fgets(line, sizeof line, f)) ++rows;
  fclose(f);
  assert_int_equal(rows, 135);
  remove("/tmp/tg_cli_plan.csv");
}

/* Models: plan with a storage and every policy; JSON carries what lets anyone check safety. */
static void plan_model_policies(void **state) {
  (void)state;
  const char *model = tg_test_cached_model("selfie_segmentation.tflite");
  cli_result r = cli_json("plan %s --storage texture_2d --policy all --json", model);
  static const char *const keys[] = {"\"producer_of\":[", "\"consumers_of\":[", "\"size_of\":[",
                                     "\"policy\":\"parallel-safe\"", "\"policy\":\"branch-local\"",
                                     "\"extra_edges\":", "\"storage\":\"texture_2d\"", "\"dims\":2"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; ++i)
    if (strstr(r.out, keys[i]) == NULL) fail_msg("JSON lacks %s", keys[i]);
  assert_null(strstr(r.out, "\"valid\":false"));
  cli_free(&r);
  cli_expect(2, NULL, "needs a model", "plan %s --policy parallel-safe", tg_test_data("records/pose_landmark_lite.buffer.csv"));
}

/* The main job on the host backend, with the documented JSON keys. */
static void run_json_contract(void **state) {
  (void)state;
  const char *model = tg_test_cached_model("face_detection_short_range.tflite");
  cli_result r = cli_json("run %s --backend host --json", model);
  static const char *const keys[] = {"\"backend\":\"host\"", "\"device\":", "\"storage\":", "\"mode\":",
                                     "\"strategy\":", "\"policy\":", "\"objects\":", "\"allocations\":",
                                     "\"allocated_bytes\":", "\"naive_bytes\":", "\"lower_bound_bytes\":",
                                     "\"corrupted_tensors\":0", "\"plan_us\":", "\"allocate_us\":",
                                     "\"check_us\":", "\"skipped\":["};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; ++i)
    if (strstr(r.out, keys[i]) == NULL) fail_msg("JSON lacks %s", keys[i]);
  cli_free(&r);
  /* TANGRAM_BACKEND picks the backend when --backend is auto. */
  r = cli("run %s --json", model);
  cli_free(&r);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "TANGRAM_BACKEND=host %s run %s --json", tg_test_cli(), model);
  char *out = malloc(OUT_CAP);
  assert_int_equal(tg_test_run(cmd, out, OUT_CAP, NULL, 0), 0);
  tg_expect_all(out, "\"backend\":\"host\"", "\"skipped\":[]", NULL);
  free(out);
}

/* A budget nothing fits: a clear error with what is needed and available, exit 1. */
static void run_budget(void **state) {
  (void)state;
  const char *model = tg_test_cached_model("face_detection_short_range.tflite");
  cli_result r = cli("run %s --backend host --budget 64K", model);
  assert_int_equal(r.code, 1);
  tg_expect_all(r.err, "the budget is 65536", "allocated nothing", NULL);
  cli_free(&r);
  /* A budget below the asked strategy's plan but above the best: another plan is chosen. */
  r = cli("run %s --backend host --strategy naive --mode objects --budget 2M --json", model);
  assert_int_equal(r.code, 0);
  assert_null(strstr(r.out, "\"winner\":\"naive\""));
  cli_free(&r);
}

/* --plan-io: graph inputs are planned but no op writes them (the engine does): the check has
 * nothing to verify for them, and must not report them corrupted (it once did). */
static void run_plan_io(void **state) {
  (void)state;
  const char *model = tg_test_cached_model("hand_landmark_lite.tflite");
  const char *modes[] = {"objects", "offsets"};
  for (int m = 0; m < 2; ++m) {
    cli_expect(0, "\"corrupted_tensors\":0", NULL, "run %s --backend host --plan-io --mode %s --json", model, modes[m]);
  }
}

/* Record files of texel extents: `run` picks a texture storage of as many dimensions (a buffer
 * once won the storage choice and failed to realise), and refuses a storage that cannot hold
 * them with the reason. */
static void run_texel_records(void **state) {
  (void)state;
  char path[512];
  const char *files[] = {"records/face_detection_short_range.tex2.csv",
                         "records/face_detection_short_range.tex3.csv"};
  for (int f = 0; f < 2; ++f) {
    cli_result r = cli("run %s --backend host --json", tg_test_data_path(path, sizeof path, files[f]));
    assert_int_equal(r.code, 0);
    assert_non_null(strstr(r.out, "\"corrupted_tensors\":0"));
    assert_null(strstr(r.out, "\"storage\":\"buffer\""));
    cli_free(&r);
  }
  cli_expect(1, NULL, "2D texel extents, which buffer cannot hold", "run %s --backend host --storage buffer", tg_test_data_path(path, sizeof path, files[0]));
}

/* Out of order: a serial plan without its reuse edges is refused; parallel-safe needs none. */
static void run_out_of_order(void **state) {
  (void)state;
  const char *model = tg_test_cached_model("selfie_segmentation.tflite");
  cli_result r = cli("run %s --backend host --policy parallel-safe --out-of-order --json", model);
  assert_int_equal(r.code, 0);
  tg_expect_all(r.out, "\"corrupted_tensors\":0", "\"reuse_edges\":0", NULL);
  cli_free(&r);
  cli_expect(0, NULL, NULL, "run %s --backend host --policy serial --out-of-order --json", model);
  r = cli("run %s --backend host --policy serial --out-of-order --no-reuse-edges", model);
  if (r.code == 0 && strstr(r.out, "reuse_edges\":0")) {
    /* No reuse edge needed on this model: nothing to refuse. */
  } else {
    assert_int_equal(r.code, 1);
    assert_non_null(strstr(r.err, "reuses the memory of"));
  }
  cli_free(&r);
}

/* Every host allocation of `tangram plan` fails once: never a crash, a clean exit code. */
static void host_allocation_failures(void **state) {
  (void)state;
  const char *path = "/tmp/tg_cli_small.csv";
  tg_test_write_file(path, "name,size,first,last\na,32,0,1\nb,32,1,4\nc,8,2,5\nd,16,3,5\ne,8,4,5\n"
                   "f,64,5,7\ng,8,6,8\nh,8,7,8\ni,16,8,9\n");
  int n;
  for (n = 1; n < 5000; ++n) {
    char cmd[2048];
    /* A short search: the CLI's default second of search would allocate without end. */
    snprintf(cmd, sizeof cmd, "TANGRAM_FAIL_HOST_ALLOC_AT=%d %s plan %s --time-limit 10 --json", n, tg_test_cli(), path);
    char err[4096];
    int code = tg_test_run(cmd, NULL, 0, err, sizeof err);
    assert_true(code >= 0); /* no signal */
    if (code == 0) break;
    assert_true(code == 1 || code == 2);
    assert_non_null(strstr(err, "tangram: "));
  }
  print_message("tangram plan survived %d injected host allocation failures\n", n - 1);
  assert_true(n > 20 && n < 5000);
  remove(path);
}

/* The test runner runs a command again only when LeakSanitizer failed itself (twice at most),
 * never for a finding: a leak report or an ordinary failure comes back at the first run. */
static void runner_reruns_only_sanitizer_self_failures(void **state) {
  (void)state;
  char dir[] = "/tmp/tg_cli_rerunXXXXXX";
  assert_non_null(mkdtemp(dir));
  char cmd[1024], out[256], err[256];
  /* Fails like LeakSanitizer's tracer on its first run, then succeeds. */
  snprintf(cmd, sizeof cmd,
           "echo run >> %s/a; if [ $(wc -l < %s/a) -lt 2 ]; then "
           "echo '==1==LeakSanitizer has encountered a fatal error.' >&2; exit 1; fi; echo ok",
           dir, dir);
  assert_int_equal(tg_test_run(cmd, out, sizeof out, err, sizeof err), 0);
  assert_string_equal(out, "ok\n");
  /* Always fails so: three runs, then its failure. */
  snprintf(cmd, sizeof cmd, "echo run >> %s/b; echo 'LeakSanitizer has encountered a fatal error' >&2; exit 23", dir);
  assert_int_equal(tg_test_run(cmd, NULL, 0, NULL, 0), 23);
  /* A leak report and a plain failure: one run each. */
  snprintf(cmd, sizeof cmd, "echo run >> %s/c; echo 'ERROR: LeakSanitizer: detected memory leaks' >&2; exit 23", dir);
  assert_int_equal(tg_test_run(cmd, NULL, 0, err, sizeof err), 23);
  snprintf(cmd, sizeof cmd, "echo run >> %s/d; exit 4", dir);
  assert_int_equal(tg_test_run(cmd, NULL, 0, NULL, 0), 4);
  static const struct {
    const char *file;
    int runs;
  } want[] = {{"a", 2}, {"b", 3}, {"c", 1}, {"d", 1}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i) {
    snprintf(cmd, sizeof cmd, "wc -l < %s/%s", dir, want[i].file);
    assert_int_equal(tg_test_run(cmd, out, sizeof out, NULL, 0), 0);
    if (atoi(out) != want[i].runs) fail_msg("%s: %d runs, expected %d", want[i].file, atoi(out), want[i].runs);
  }
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(tg_test_run(cmd, NULL, 0, NULL, 0), 0);
}

TG_TEST_MAIN(cmocka_unit_test(runner_reruns_only_sanitizer_self_failures),
             cmocka_unit_test(usage_and_help), cmocka_unit_test(bad_input),
             cmocka_unit_test(plan_json_contract), cmocka_unit_test(plan_csv_out),
             cmocka_unit_test(plan_model_policies), cmocka_unit_test(run_json_contract),
             cmocka_unit_test(run_budget), cmocka_unit_test(run_out_of_order),
             cmocka_unit_test(run_plan_io), cmocka_unit_test(run_texel_records),
             cmocka_unit_test(host_allocation_failures))
