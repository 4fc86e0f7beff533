/* Ranges in --input-shape through the CLI: `tangram inputs MODEL --input-shape x:..LO..HI/STEP`
 * lists the records at every size (known answers on a hand-made model, the real recogniser
 * against `plan` at single sizes), bad ranges exit 2 naming the problem (LO above HI, STEP 0,
 * a static dimension, three varying dimensions, a size where inference fails: the op and the
 * size), the commands that take one size refuse ranges, and every --help mentions them. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef TANGRAM_HAVE_ONNX

#include "model/range_models.h"

#include "range_fixture.h"

static int setup(void **state) {
  return range_fixture_setup(state, "/tmp/tg_range_cliXXXXXX");
}

/* Per size, the totals of the hand-made model: c and r are [N,8,W-2] = 32 N (W-2) bytes each
 * in buffers; in 2D textures (W-2)·N x 2 texels of 16 bytes. */
static void records_per_size(void **state) {
  fixture *f = *state;
  cli_result r = cli("inputs %s --input-shape x:1x4x5..100/5 --json", f->model);
  tg_test_expect(&r, 0, "\"points\":20,\"storage\":\"buffer\",\"precision\":\"fp32\",\"records\":2,", NULL);
  assert_true(tg_test_json_valid(r.out));
  assert_non_null(strstr(r.out, "\"dims\":[{\"lo\":5,\"hi\":100,\"step\":5,\"axes\":[{\"input\":\"x\",\"axis\":2}]}]"));
  for (int w = 5; w <= 100; w += 5) {
    char want[128];
    snprintf(want, sizeof want, "{\"dims\":[%d],\"bytes\":%d,\"largest\":%d}", w, 64 * (w - 2), 32 * (w - 2));
    if (strstr(r.out, want) == NULL) fail_msg("lacks %s: %s", want, r.out);
  }
  cli_free(&r);
  /* Two dimensions (N, W), W fastest; textures, fp16 (8-byte texels). */
  r = cli("inputs %s --input-shape x:1..3x4x8..24/8 --storage texture_2d --precision fp16 --json", f->model);
  tg_test_expect(&r, 0, "\"points\":9,\"storage\":\"texture_2d\",\"precision\":\"fp16\"", NULL);
  assert_true(tg_test_json_valid(r.out));
  const char *at = strstr(r.out, "\"sizes\":[");
  assert_non_null(at);
  for (int n = 1; n <= 3; ++n)
    for (int w = 8; w <= 24; w += 8) {
      char want[128];
      snprintf(want, sizeof want, "{\"dims\":[%d,%d],\"bytes\":%d,\"largest\":%d}", n, w, 2 * (w - 2) * n * 2 * 8,
               (w - 2) * n * 2 * 8);
      const char *next = strstr(at, want);
      if (next == NULL) fail_msg("lacks %s (in order): %s", want, r.out);
      at = next;
    }
  cli_free(&r);
  /* The table. */
  r = cli("inputs %s --input-shape x:1..2x4x10", f->model);
  tg_test_expect(&r, 0, "2 sizes, 2 records in buffer fp32 at every size, 1 in-place pairs at every size", NULL);
  char row[128];
  snprintf(row, sizeof row, "\n%-12s %16d %16d\n%-12s %16d %16d\n", "1", 512, 256, "2", 1024, 512);
  if (strstr(r.out, row) == NULL) fail_msg("lacks %s: %s", row, r.out);
  cli_free(&r);
  /* Without a range, the listing says how to give one. */
  r = cli("inputs %s", f->model);
  tg_test_expect(&r, 0, "needs --input-shape x:?x4x?", NULL);
  assert_non_null(strstr(r.out, "A dynamic dimension may be a range, LO..HI or LO..HI/STEP"));
  cli_free(&r);
}

static void bad_ranges(void **state) {
  fixture *f = *state;
  static const struct { const char *shape, *message; } bad[] = {
      /* The syntax: LO above HI, STEP 0 (the range parser words the problem). */
      {"x:1x4x100..5", "--input-shape x:1x4x100..5: dimension 2: "},
      {"x:1x4x5..100/0", "--input-shape x:1x4x5..100/0: dimension 2: "},
      {"x:1x4x5..", "--input-shape x:1x4x5..: dimension 2: "},
      {"x:1x4x5..100/x", "--input-shape x:1x4x5..100/x: dimension 2: "},
      {"x:1x4xa", "--input-shape x:1x4xa: dimensions must be non-negative decimals"},
      /* Against the file. */
      {"x:1x2..4x8", "conv.onnx: input 'x': dimension 1 is static (4 in the file, ?x4x?): a range (2..4) is only "
                     "for a dynamic dimension"},
      {"x:1x4x8..9x1", "input 'x' has rank 3 in the file but the shape given, 1x4x8..9x1, has rank 4"},
      {"y:1x4x8..9", "an input shape is given for 'y', which is not a graph input (inputs: 'x')"},
      {"x:1x4x8", "no dimension is given as a range (LO..HI or LO..HI/STEP)"},
      {"x:1x4x8..1000000", "make 999993 sizes, more than the 16384 a model is loaded at: give a larger STEP"},
      /* A size where the second convolution has less input than its kernel. */
      {"x:1x4x3..64", "conv.onnx at x:1x4x3: node 2 'conv2' (Conv): "},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    cli_result r = cli("inputs %s --input-shape '%s' --json", f->model, bad[i].shape);
    tg_test_expect(&r, 2, NULL, bad[i].message);
    assert_string_equal(r.out, "");
    cli_free(&r);
  }
  /* Three varying dimensions. */
  char three[160];
  snprintf(three, sizeof three, "%s/three.onnx", f->dir);
  pb model = {0};
  tg_test_nchw_relu_onnx(&model);
  write_model(&model, three);
  cli_result r = cli("inputs %s --input-shape x:1..2x3x8..16x8..16", three);
  tg_test_expect(&r, 2, NULL, "ranges on 3 dimensions (x[0], x[2], x[3]): at most 2 may vary; give the others one size");
  cli_free(&r);
  unlink(three);
  /* A text graph's dimensions are all static; usage records have no inputs. */
  char graph_path[1024];
  tg_test_data_path(graph_path, sizeof graph_path, "graphs/example.graph");
  cli_expect(2, NULL, "example.graph: input 'image': dimension 0 is static (1 in the file, 1x64x64x3)",
             "inputs %s --input-shape image:1..2x64x64x3", graph_path);
  char csv[1024];
  tg_test_data_path(csv, sizeof csv, "records/pose_landmark_lite.buffer.csv");
  cli_expect(2, NULL, "holds usage records, which have no inputs to give ranges to",
             "inputs %s --input-shape x:1..2x8", csv);
  /* Options that go with a range only. */
  cli_expect(2, NULL, "--storage, --precision and --plan-io go with --input-shape and a range",
             "inputs %s --storage texture_2d", f->model);
  cli_expect(2, NULL, "--storage 'nope'", "inputs %s --input-shape x:1x4x8..9 --storage nope", f->model);
}

/* Commands that plan one size refuse ranges for now (plan and evaluate take them:
 * test_range_plan_cli; run: test_run_range_cli); every --help tells of them. */
static void commands_refuse_ranges(void **state) {
  fixture *f = *state;
  static const char *const cmds[] = {"schedule", "run --backend host --runtime-pool exact"};
  for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; ++c) {
    cli_result r = cli("%s %s --input-shape x:1x4x8..64/8", cmds[c], f->model);
    tg_test_expect(&r, 2, NULL, "--input-shape x:1x4x8..64/8: ranges: not supported by this command yet");
    assert_string_equal(r.out, "");
    cli_free(&r);
    /* One size still works. */
    cli_expect(0, NULL, NULL, "%s %s --input-shape x:1x4x64", cmds[c], f->model);
  }
  static const char *const helps[] = {"plan", "evaluate", "schedule", "run", "inputs"};
  for (size_t c = 0; c < sizeof helps / sizeof helps[0]; ++c) {
    cli_result r = cli("%s --help", helps[c]);
    tg_test_expect(&r, 0, "LO..HI", NULL);
    assert_non_null(strstr(r.out, "x:1x3x48x32..1600/8"));
    cli_free(&r);
  }
}

/* The recogniser over its widths: each size's total equals `plan`'s naive total (objects
 * mode: the sum of the records) at that size alone. */
static void real_recogniser(void **state) {
  (void)state;
  char rec[1024];
  if (tg_test_model_path(rec, sizeof rec, "ch_PP-OCRv4_rec_infer.onnx") == NULL) return;
  cli_result r = cli("inputs %s --input-shape x:1x3x48x32..1600/8 --json", rec);
  tg_test_expect(&r, 0, "\"points\":197,\"storage\":\"buffer\",\"precision\":\"fp32\",\"records\":402,", NULL);
  assert_true(tg_test_json_valid(r.out));
  static const int widths[] = {32, 320, 808, 1600};
  for (size_t i = 0; i < sizeof widths / sizeof widths[0]; ++i) {
    cli_result p = cli("plan %s --input-shape x:1x3x48x%d --json", rec, widths[i]);
    tg_test_expect(&p, 0, NULL, NULL);
    uint64_t naive = tg_test_json_u64(p.out, "naive");
    char want[128];
    snprintf(want, sizeof want, "{\"dims\":[%d],\"bytes\":%llu,", widths[i], (unsigned long long)naive);
    if (strstr(r.out, want) == NULL) fail_msg("lacks %s", want);
    cli_free(&p);
  }
  cli_free(&r);
  /* Widths below 8 leave the pooling without input: the op and the width are named. */
  cli_expect(2, NULL, "at x:1x3x48x1: node 556 'p2o.AveragePool.0' (AveragePool): ",
             "inputs %s --input-shape x:1x3x48x1..1600/8", rec);
}

TG_TEST_MAIN_FIXTURES(setup, teardown,
                      cmocka_unit_test(records_per_size),
                      cmocka_unit_test(bad_ranges),
                      cmocka_unit_test(commands_refuse_ranges),
                      cmocka_unit_test(real_recogniser))

#else

TG_TEST_SKIP_MAIN("built without .onnx support")

#endif
