/* Models with control flow through the CLI: the hand-made If / Loop / Scan models of
 * tests/data/onnx/control_flow/ (control_flow.py) and, when cached, openWakeWord's models,
 * planned (every plan validated), then realised and checked on every backend this machine has,
 * with each If branch in turn and several loop iteration counts; hostile subgraphs exit 2
 * naming the node. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TANGRAM_HAVE_ONNX

static const char *data(const char *name) {
  static char buf[4][1024];
  static int i;
  i = (i + 1) % 4;
  return tg_test_data_path(buf[i], sizeof buf[i], name);
}

static void expect(const cli_result *r, int code, const char *in_out, const char *in_err) {
  if (r->code != code) fail_msg("exit %d, not %d; stderr: %s", r->code, code, r->err);
  if (in_out && strstr(r->out, in_out) == NULL) fail_msg("stdout lacks '%s': %.2000s", in_out, r->out);
  if (in_err && strstr(r->err, in_err) == NULL) fail_msg("stderr lacks '%s': %s", in_err, r->err);
}

/* Plan (JSON, every strategy validated) and run with every branch and the given iteration
 * counts: on the host always, on the GPU backends when `gpu` (one run per branch: each run
 * there costs a kernel build). `shape` may be empty. */
static void plan_and_run(const char *path, const char *shape, const char *subgraph, const int *iterations,
                         size_t n_iterations, int gpu) {
  cli_result r = cli("plan %s %s --json", path, shape);
  expect(&r, 0, "\"subgraph_of\":[", NULL);
  if (subgraph) expect(&r, 0, subgraph, NULL);
  assert_true(tg_test_json_valid(r.out));
  assert_null(strstr(r.out, "\"valid\":false"));
  cli_free(&r);
  static const char *const backends[] = {"host", "opencl", "vulkan"};
  for (size_t b = 0; b < (gpu ? 3u : 1u); ++b)
    for (int branch = 0; branch < 2; ++branch)
      for (size_t it = 0; it < (b ? 1 : n_iterations); ++it) {
        const char *storage = b == 0 || branch == 0 ? "buffer" : "texture_2d";
        r = cli("run %s %s --backend %s --storage %s --branch %d --iterations %d --json", path, shape, backends[b],
                storage, branch, b ? 2 : iterations[it]);
        if (r.code != 0 && b > 0 && !tg_test_in_ci()) {
          fprintf(stderr, "SKIPPING: the %s backend does not run here: %s\n", backends[b], r.err);
          cli_free(&r);
          goto next_backend;
        }
        expect(&r, 0, "\"corrupted_tensors\":0", NULL);
        cli_free(&r);
      }
  next_backend:;
}

static void hand_made_models(void **state) {
  (void)state;
  static const int its[] = {0, 1, 3};
  int gpu = getenv("TANGRAM_TEST_QUICK") == NULL;
  plan_and_run(data("onnx/control_flow/loop.onnx"), "", "\"node 2.body\"", its, 3, gpu);
  plan_and_run(data("onnx/control_flow/scan.onnx"), "", "\"node 1.body\"", its, 3, 0);
  plan_and_run(data("onnx/control_flow/if_nested.onnx"), "", "\"node 3.then_branch/node 1.else_branch\"", its, 1,
               gpu);
  /* The layout: Loop writes the body's inputs and the stacked output, Loop.end the final value. */
  cli_result r = cli("plan %s --json", data("onnx/control_flow/loop.onnx"));
  expect(&r, 0, "\"tensors\":15,\"ops\":9,", NULL);
  cli_free(&r);
  r = cli("plan %s", data("onnx/control_flow/loop.onnx"));
  expect(&r, 0, "node 2.body                              body         4        7", NULL);
  cli_free(&r);
}

static void hostile_subgraphs(void **state) {
  (void)state;
  static const struct { const char *file, *message; } bad[] = {
      {"if_outputs", "node 2 (If): else_branch has 2 outputs but the node has 1"},
      {"loop_grows", "node 0 (Loop): carried value 0 ('x_in') is 1x4 on entry and 1x8 after the body"},
      {"loop_dynamic", "node 2 (Loop): scan output 0 ('stack') stacks one slice per iteration"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    char rel[128];
    snprintf(rel, sizeof rel, "onnx/control_flow/%s.onnx", bad[i].file);
    cli_result r = cli("plan %s", data(rel));
    expect(&r, 2, NULL, bad[i].message);
    cli_free(&r);
    r = cli("run %s --backend host", data(rel));
    expect(&r, 2, NULL, bad[i].message);
    cli_free(&r);
  }
  cli_result r = cli("run %s --backend host --branch x", data("onnx/control_flow/loop.onnx"));
  expect(&r, 2, NULL, "--branch takes a count");
  cli_free(&r);
}

/* openWakeWord's models (scripts/fetch-models.sh), three input lengths where dynamic. */
static void openwakeword_models(void **state) {
  (void)state;
  static const struct { const char *file, *shapes[3], *subgraph; } models[] = {
      {"alexa_v0.1.onnx", {""}, NULL},
      {"hey_jarvis_v0.1.onnx", {""}, "\"If_32.else_branch\""},
      {"hey_mycroft_v0.1.onnx", {""}, NULL},
      {"hey_rhasspy_v0.1.onnx", {""}, NULL},
      {"timer_v0.1.onnx", {""}, NULL},
      {"weather_v0.1.onnx", {""}, NULL},
      {"melspectrogram.onnx", {"--input-shape input:1x1280", "--input-shape input:1x1760", "--input-shape input:2x3200"}, NULL},
      {"embedding_model.onnx", {"--input-shape input_1:1x76x32x1", "--input-shape input_1:2x76x32x1",
                                "--input-shape input_1:5x76x32x1"}, NULL},
      {"silero_vad.onnx", {"--input-shape input:1x256 --input-shape h:2x1x64 --input-shape c:2x1x64",
                           "--input-shape input:1x512 --input-shape h:2x1x64 --input-shape c:2x1x64",
                           "--input-shape input:2x1536 --input-shape h:2x2x64 --input-shape c:2x2x64"},
       "\"If_25.else_branch\""},
      {"alexa_v0.1.tflite", {""}, NULL},
      {"hey_mycroft_v0.1.tflite", {""}, NULL},
      {"hey_rhasspy_v0.1.tflite", {""}, NULL},
      {"timer_v0.1.tflite", {""}, NULL},
      {"weather_v0.1.tflite", {""}, NULL},
  };
  static const int its[] = {2};
  int quick = getenv("TANGRAM_TEST_QUICK") != NULL;
  for (size_t m = 0; m < sizeof models / sizeof models[0]; ++m) {
    char rel[128], path[1024];
    snprintf(rel, sizeof rel, "openwakeword/%s", models[m].file);
    if (tg_test_model_path(path, sizeof path, rel) == NULL) continue;
    /* The GPU backends on the model with an If, each branch in turn. */
    int gpu = !quick && models[m].subgraph != NULL;
    for (size_t s = 0; s < 3 && models[m].shapes[s]; ++s)
      plan_and_run(path, models[m].shapes[s], models[m].subgraph, its, 1, gpu && s == 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(hand_made_models),
      cmocka_unit_test(hostile_subgraphs),
      cmocka_unit_test(openwakeword_models),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

#else

int main(void) {
  fprintf(stderr, "SKIPPING: built without the .onnx reader\n");
  return 0;
}

#endif
