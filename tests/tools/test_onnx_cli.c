/* The CLI on .onnx models: --input-shape on plan, evaluate, schedule and run, its errors, the
 * shape_of key of plan and run JSON, and `run` on every backend this machine has. The models
 * are the fuzz seeds cut from PaddleOCR's (static inputs, always present) and, when cached,
 * the real ones (dynamic inputs). */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"
#include "support/tg_tools_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TANGRAM_HAVE_ONNX

static const char *seed(const char *name) {
  static char buf[4][1024];
  static int i;
  i = (i + 1) % 4;
  snprintf(buf[i], sizeof buf[i], "%s/tests/fuzz/corpus/fuzz_onnx/%s.onnx", TG_SOURCE_DIR, name);
  return buf[i];
}

static void input_shape_option(void **state) {
  (void)state;
  const char *cls = seed("cls_whole"); /* input x: 1x3x48x64 in the file */
  cli_result r = cli("plan %s --input-shape x:1x3x48x64 --strategy best --json", cls);
  tg_test_expect(&r, 0, "\"shape_of\":[[1,8,24,32],", NULL);
  assert_true(tg_test_json_valid(r.out));
  assert_null(strstr(r.out, "\"valid\":false"));
  cli_free(&r);
  static const struct { const char *arg, *message; } bad[] = {
      {"x", "--input-shape must be NAME:DxDx... (e.g. x:1x3x640x640), not 'x'"},
      {":1x3", "--input-shape must be NAME:DxDx..."},
      {"x:1x-3x48x64", "dimensions must be non-negative decimals separated by 'x'"},
      {"x:1xx3", "dimensions must be non-negative decimals separated by 'x'"},
      {"x:", "dimensions must be non-negative decimals"},
      {"x:99999999999999999999", "dimension 0 does not fit 63 bits"},
      {"x:1x1x1x1x1x1x1x1x1", "more than 8 dimensions"},
      {"x:2x3x48x64", "dimension 0 is 1 in the file, not 2 as given (2x3x48x64)"},
      {"y:1x3x48x64", "an input shape is given for 'y', which is not a graph input (inputs: 'x')"},
      {"x:1x3x48", "has rank 4 (1x3x48x64) but the shape given, 1x3x48, has rank 3"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i)
    for (int cmd = 0; cmd < 4; ++cmd) {
      static const char *const cmds[] = {"plan", "evaluate", "schedule", "run --backend host"};
      r = cli("%s %s --input-shape '%s'", cmds[cmd], cls, bad[i].arg);
      tg_test_expect(&r, 2, NULL, bad[i].message);
      assert_string_equal(r.out, "");
      cli_free(&r);
    }
  cli_expect(2, NULL, "input 'x' is given twice", "plan %s --input-shape x:1x3x48x64 --input-shape x:1x3x48x64", cls);
  char csv[1024];
  tg_test_data_path(csv, sizeof csv, "records/pose_landmark_lite.buffer.csv");
  cli_expect(2, NULL, "holds usage records, which have no inputs to give shapes to",
             "plan %s --input-shape x:1x2", csv);
  cli_expect(0, "--input-shape NAME:DxDx...", NULL, "plan --help");
}

/* Every command reads an .onnx model; plan's and run's JSON carry shapes in NCHW order. */
static void every_command_reads_onnx(void **state) {
  (void)state;
  const char *rec = seed("rec_attention"), *det = seed("det_neck_head");
  cli_result r = cli("evaluate %s --json", rec);
  tg_test_expect(&r, 0, "\"best_per_storage\"", NULL);
  assert_true(tg_test_json_valid(r.out));
  cli_free(&r);
  r = cli("schedule %s --policy parallel-safe --json", det);
  tg_test_expect(&r, 0, "\"waves\"", NULL);
  assert_true(tg_test_json_valid(r.out));
  cli_free(&r);
  r = cli("plan %s --storage texture_2d --policy all --json", det);
  tg_test_expect(&r, 0, "\"shape_of\":[[", NULL);
  assert_true(tg_test_json_valid(r.out));
  cli_free(&r);
  cli_expect(0, "\"reorder\"", NULL, "plan %s --reorder --mode offsets --json", rec);
  /* A .tflite model's shapes are NHWC: the face detector's input is 1x128x128x3. */
  char face[1024];
  if (tg_test_model_path(face, sizeof face, "face_detection_short_range.tflite")) {
    cli_expect(0, "\"shape_of\":[[1,128,128,3]", NULL, "plan %s --plan-io --strategy naive --json", face);
  }
}

static void run_on_every_backend(void **state) {
  (void)state;
  const char *cls = seed("cls_whole");
  static const char *const backends[] = {"host", "opencl", "vulkan"};
  for (size_t b = 0; b < 3; ++b) {
    for (int s = 0; s < 2; ++s) {
      cli_result r = cli("run %s --backend %s --storage %s --json", cls, backends[b], s ? "texture_2d" : "buffer");
      if (r.code != 0 && strcmp(backends[b], "host") != 0 && !tg_test_in_ci()) {
        fprintf(stderr, "SKIPPING: the %s backend does not run here: %s\n", backends[b], r.err);
        cli_free(&r);
        break;
      }
      tg_test_expect(&r, 0, "\"corrupted_tensors\":0", NULL);
      assert_non_null(strstr(r.out, "\"shape_of\":[[1,8,24,32]"));
      assert_true(tg_test_json_valid(r.out));
      cli_free(&r);
    }
  }
}

/* The real models: dynamic inputs need --input-shape; with it every command works. */
static void real_models(void **state) {
  (void)state;
  char det[1024], cls[1024];
  if (tg_test_model_path(det, sizeof det, "ch_PP-OCRv4_det_infer.onnx") == NULL ||
      tg_test_model_path(cls, sizeof cls, "ch_ppocr_mobile_v2.0_cls_infer.onnx") == NULL)
    skip();
  static const char *const cmds[] = {"plan", "evaluate", "schedule", "run --backend host"};
  for (int c = 0; c < 4; ++c) {
    cli_result r = cli("%s %s", cmds[c], det);
    tg_test_expect(&r, 2, NULL, "input 'x' (?x3x?x?): dynamic dimensions 0 ('p2o.DynamicDimension.0')");
    assert_non_null(strstr(r.err, "--input-shape x:?x3x?x?"));
    cli_free(&r);
    cli_expect(0, NULL, NULL, "%s %s --input-shape x:1x3x48x192", cmds[c], cls);
  }
  cli_result r = cli("plan %s --input-shape x:1x3x640x640 --strategy best --json", det);
  tg_test_expect(&r, 0, "\"tensors\":673,\"ops\":330", NULL);
  tg_expect_all(r.out, "\"records\":329", "\"shape_of\":[[1,16,320,320]", NULL);
  cli_free(&r);
  cli_expect(0, "\"corrupted_tensors\":0", NULL, "run %s --input-shape x:1x3x640x640 --backend host --json", det);
}

/* `tangram inputs` lists what --input-shape needs without planning; a .tflite whose dynamic
 * batch has a size in the file is planned at it, said on stderr and in JSON. */
static void inputs_and_assumed_shapes(void **state) {
  (void)state;
  char det[1024], emb[1024], mel[1024];
  if (tg_test_model_path(det, sizeof det, "ch_PP-OCRv4_det_infer.onnx") == NULL ||
      tg_test_model_path(emb, sizeof emb, "openwakeword/embedding_model.tflite") == NULL ||
      tg_test_model_path(mel, sizeof mel, "openwakeword/melspectrogram.onnx") == NULL)
    skip();
  cli_result r = cli("inputs %s", det);
  tg_test_expect(&r, 0, "needs --input-shape x:?x3x?x?", NULL);
  cli_free(&r);
  r = cli("inputs %s --json", det);
  tg_test_expect(&r, 0, "\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[-1,3,-1,-1],\"dynamic\":[0,2,3]", NULL);
  assert_non_null(strstr(r.out, "\"needs_shape\":true"));
  assert_true(tg_test_json_valid(r.out));
  cli_free(&r);
  cli_expect(0, "\"dim_names\":{\"0\":\"batch_size\",\"1\":\"samples\"}", NULL, "inputs %s --json", mel);
  r = cli("inputs %s", emb);
  tg_test_expect(&r, 0, "1x76x32x1", NULL);
  assert_null(strstr(r.out, "needs --input-shape"));
  cli_free(&r);
  static const char *const cmds[] = {"plan", "evaluate", "run --backend host"};
  for (int c = 0; c < 3; ++c) {
    r = cli("%s %s --json", cmds[c], emb);
    tg_test_expect(&r, 0, "\"assumed_input_shapes\":[{\"name\":\"serving_default_input_1:0\",\"shape\":[1,76,32,1],\"dynamic\":[0]}]",
           "input 'serving_default_input_1:0' has dynamic dimensions; planned at 1x76x32x1");
    assert_true(tg_test_json_valid(r.out));
    cli_free(&r);
  }
  /* Given explicitly, nothing is assumed. */
  r = cli("plan %s --input-shape serving_default_input_1:0:1x76x32x1 --json", emb);
  tg_test_expect(&r, 0, "\"assumed_input_shapes\":[]", NULL);
  assert_null(strstr(r.err, "planned at"));
  cli_free(&r);
  cli_expect(2, NULL, "usage: tangram inputs", "inputs");
  cli_expect(2, NULL, "inputs: unknown option '--bogus'", "inputs %s --bogus", det);
  cli_expect(2, NULL, "/nonexistent/m.onnx", "inputs /nonexistent/m.onnx");
}

#endif /* TANGRAM_HAVE_ONNX */

int main(void) {
#ifndef TANGRAM_HAVE_ONNX
  return 0; /* built without the .onnx reader */
#else
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(input_shape_option),
      cmocka_unit_test(every_command_reads_onnx),
      cmocka_unit_test(run_on_every_backend),
      cmocka_unit_test(real_models),
      cmocka_unit_test(inputs_and_assumed_shapes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
#endif
}
