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
#include <unistd.h>

#include "model/tflite_builder.h"
#include "tangram/graph.h"
#include "tangram/model.h"

/* ---- .tflite: IF, WHILE, CALL_ONCE over the file's subgraphs (tflite_builder.h) ---- */

enum { OP_IF = 0, OP_WHILE = 1, OP_RELU = 2, OP_ADD = 3, OP_LESS = 4, OP_CALL_ONCE = 5 };

/* Subgraph 0: x (1x4), c (bool) inputs; FLOW(...) -> y; RELU(y) -> z (output). `flow` IF or
 * WHILE; subgraph 1 = then / cond, 2 = else / body. */
static void tfl_flow_model(tt_model *m, int flow) {
  static const char *const names[4] = {"x", "c", "y", "z"};
  tt_flow_frame(m, names, 4, 4);
  m->nopcodes = 6;
  m->opcodes[OP_CALL_ONCE].builtin = 129;
  m->nops = 2;
  tt_op *f = &m->ops[0];
  f->opcode = flow == OP_IF ? OP_IF : OP_WHILE;
  if (flow == OP_IF) {
    f->nin = 2;
    f->in[0] = 1;
    f->in[1] = 0;
  } else {
    f->nin = 1;
    f->in[0] = 0;
  }
  f->nout = 1;
  f->out[0] = 2;
  f->noptions = 2;
  f->options[0] = 1;
  f->options[1] = 2;
  m->ops[1] = (tt_op){OP_RELU, 1, 1, {2}, {3}, 0, {0, 0}};
  /* Subgraph 1 (then / cond): in 0 -> RELU / LESS -> 1. Subgraph 2 (else / body): in 0 -> RELU
   * -> 1, ADD(1, 0) -> 2 (out). */
  m->nextra = 2;
  tt_subgraph *a = &m->extra[0], *b = &m->extra[1];
  a->ntensors = 2;
  a->rank[0] = a->rank[1] = 2;
  a->shape[0][0] = a->shape[1][0] = 1;
  a->shape[0][1] = a->shape[1][1] = 4;
  if (flow != OP_IF) a->rank[1] = 0;
  a->ninputs = a->noutputs = 1;
  a->inputs[0] = 0;
  a->outputs[0] = 1;
  a->nops = 1;
  a->ops[0] = (tt_op){flow == OP_IF ? OP_RELU : OP_LESS, 1, 1, {0}, {1}, 0, {0, 0}};
  b->ntensors = 3;
  for (int i = 0; i < 3; ++i) {
    b->rank[i] = 2;
    b->shape[i][0] = 1;
    b->shape[i][1] = 4;
  }
  b->ninputs = b->noutputs = 1;
  b->inputs[0] = 0;
  b->outputs[0] = 2;
  b->nops = 2;
  b->ops[0] = (tt_op){OP_RELU, 1, 1, {0}, {1}, 0, {0, 0}};
  b->ops[1] = (tt_op){OP_ADD, 2, 1, {1, 0}, {2}, 0, {0, 0}};
}

static tg_status tfl_parse(const tt_model *m, tg_graph **g, tg_error_info *err) {
  static tt_buf buf;
  size_t n = tt_build(m, &buf, NULL);
  return tg_graph_parse_tflite(buf.data, n, "t.tflite", NULL, g, err);
}

static const char *tfl_file(const tt_model *m, char *path, size_t size) {
  static tt_buf buf;
  size_t n = tt_build(m, &buf, NULL);
  snprintf(path, size, "/tmp/tangram_cf_%ld.tflite", (long)getpid());
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(buf.data, 1, n, f), n);
  fclose(f);
  return path;
}

static void tflite_while_and_if(void **state) {
  (void)state;
  (void)tt_example;
  tt_model m;
  tg_error_info err = {{0}};
  for (int flow = 0; flow < 2; ++flow) {
    tfl_flow_model(&m, flow ? OP_WHILE : OP_IF);
    tg_graph *g = NULL;
    tg_status st = tfl_parse(&m, &g, &err);
    if (st != TG_OK) fail_msg("%s", err.message);
    assert_int_equal(g->flow_count, 3);
    /* IF: RELU (then), RELU ADD (else), IF, RELU. WHILE: WHILE, LESS (cond), RELU ADD (body),
     * WHILE.end, RELU. */
    static const char *const want[2][6] = {{"RELU", "RELU", "ADD", "IF", "RELU", NULL},
                                          {"WHILE", "LESS", "RELU", "ADD", "WHILE.end", "RELU"}};
    assert_int_equal(g->op_count, flow ? 6 : 5);
    for (size_t o = 0; o < g->op_count; ++o) assert_string_equal(g->ops[o].name, want[flow][o]);
    assert_int_equal(g->subgraphs[1].kind, flow ? TG_SUBGRAPH_BODY : TG_SUBGRAPH_BRANCH);
    assert_int_equal(g->subgraphs[2].control_op, flow ? 4 : 3);
    uint32_t *order = NULL;
    size_t length = 0;
    assert_int_equal(tg_graph_run_order(g, 1, 3, NULL, &order, &length, &err), TG_OK);
    /* IF, else branch: ADD's RELU, ADD, IF, RELU; WHILE, 3 iterations: 1 + 3 x 3 + 2. */
    assert_int_equal(length, flow ? 12 : 4);
    free(order);
    tg_graph_destroy(g);
    char path[256];
    tfl_file(&m, path, sizeof path);
    for (int branch = 0; branch < 2; ++branch)
      for (int it = 0; it < 4; it += 3) {
        cli_result r = cli("run %s --backend host --branch %d --iterations %d --json", path, branch, it);
        if (r.code != 0) fail_msg("exit %d: %s", r.code, r.err);
        assert_non_null(strstr(r.out, "\"corrupted_tensors\":0"));
        cli_free(&r);
      }
    cli_result r = cli("plan %s --json", path);
    assert_int_equal(r.code, 0);
    assert_non_null(strstr(r.out, flow ? "\"subgraph 2\"" : "\"subgraph 1\""));
    assert_null(strstr(r.out, "\"valid\":false"));
    cli_free(&r);
    unlink(path);
  }
}

static void tflite_hostile_subgraphs(void **state) {
  (void)state;
  tt_model m;
  tg_error_info err = {{0}};
  tg_graph *g = NULL;
  /* A subgraph index out of range. */
  tfl_flow_model(&m, OP_WHILE);
  m.ops[0].options[1] = 7;
  assert_int_equal(tfl_parse(&m, &g, &err), TG_ERROR_PARSE);
  assert_non_null(strstr(err.message, "op 0 (WHILE): body_subgraph_index 7 is out of range (the model has 3 subgraphs)"));
  /* A cycle: the body runs a WHILE over subgraphs 1 and 2 again. */
  tfl_flow_model(&m, OP_WHILE);
  tt_subgraph *b = &m.extra[1];
  b->ops[1] = (tt_op){OP_WHILE, 1, 1, {1}, {2}, 2, {1, 2}};
  assert_int_equal(tfl_parse(&m, &g, &err), TG_ERROR_PARSE);
  assert_non_null(strstr(err.message, "t.tflite (subgraph 2): op 1 (WHILE): body_subgraph_index 2: subgraph 2 is "
                                      "already running"));
  /* A branch with the wrong number of outputs. */
  tfl_flow_model(&m, OP_IF);
  m.extra[1].noutputs = 2;
  m.extra[1].outputs[1] = 1;
  assert_int_equal(tfl_parse(&m, &g, &err), TG_ERROR_PARSE);
  assert_non_null(strstr(err.message, "op 0 (IF): its else branch, subgraph 2, has 1 inputs and 2 outputs; 1 and 1 expected"));
  /* A body that changes a loop value's shape. */
  tfl_flow_model(&m, OP_WHILE);
  m.extra[1].shape[2][1] = 8;
  assert_int_equal(tfl_parse(&m, &g, &err), TG_ERROR_PARSE);
  assert_non_null(strstr(err.message, "op 0 (WHILE): loop value 0 is 1x4 on entry to the body and 1x8 after it"));
  assert_null(g);
  /* The CLI: exit 2 naming the place. */
  tfl_flow_model(&m, OP_IF);
  m.ops[0].options[0] = -1;
  char path[256];
  tfl_file(&m, path, sizeof path);
  cli_result r = cli("plan %s", path);
  if (r.code != 2 || strstr(r.err, "op 0 (IF): then_subgraph_index -1 is out of range") == NULL)
    fail_msg("exit %d: %s", r.code, r.err);
  cli_free(&r);
  unlink(path);
}

#ifdef TANGRAM_HAVE_ONNX

/* Plan (JSON, every strategy validated) and run with every branch and the given iteration
 * counts: on the host always, on the GPU backends when `gpu` (one run per branch: each run
 * there costs a kernel build). `shape` may be empty. */
static void plan_and_run(const char *path, const char *shape, const char *subgraph, const int *iterations,
                         size_t n_iterations, int gpu) {
  cli_result r = cli("plan %s %s --json", path, shape);
  tg_test_expect(&r, 0, "\"subgraph_of\":[", NULL);
  if (subgraph) tg_test_expect(&r, 0, subgraph, NULL);
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
        tg_test_expect(&r, 0, "\"corrupted_tensors\":0", NULL);
        cli_free(&r);
      }
  next_backend:;
}

static void hand_made_models(void **state) {
  (void)state;
  static const int its[] = {0, 1, 3};
  int gpu = !tg_test_quick();
  plan_and_run(tg_test_data("onnx/control_flow/loop.onnx"), "", "\"node 2.body\"", its, 3, gpu);
  plan_and_run(tg_test_data("onnx/control_flow/scan.onnx"), "", "\"node 1.body\"", its, 3, 0);
  plan_and_run(tg_test_data("onnx/control_flow/if_nested.onnx"), "", "\"node 3.then_branch/node 1.else_branch\"", its, 1,
               gpu);
  /* The layout: Loop writes the body's carried input and the stacked output, Loop.iteration
   * (in the body) the iteration number and condition, Loop.end the final value. */
  cli_result r = cli("plan %s --json", tg_test_data("onnx/control_flow/loop.onnx"));
  tg_test_expect(&r, 0, "\"tensors\":15,\"ops\":10,", NULL);
  cli_free(&r);
  cli_expect(0, "node 2.body                              body         5        7", NULL,
             "plan %s", tg_test_data("onnx/control_flow/loop.onnx"));
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
    cli_result r = cli("plan %s", tg_test_data(rel));
    tg_test_expect(&r, 2, NULL, bad[i].message);
    cli_free(&r);
    cli_expect(2, NULL, bad[i].message, "run %s --backend host", tg_test_data(rel));
  }
  cli_result r = cli("run %s --backend host --branch x", tg_test_data("onnx/control_flow/loop.onnx"));
  tg_test_expect(&r, 2, NULL, "--branch takes a count");
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
      {"hey_jarvis_v0.1.tflite", {""}, "\"subgraph 2 'onnx_tf_prefix_If_32_true_1240'\""},
      {"hey_mycroft_v0.1.tflite", {""}, NULL},
      {"hey_rhasspy_v0.1.tflite", {""}, NULL},
      {"timer_v0.1.tflite", {""}, NULL},
      /* Dynamic lengths: the shapes are inferred again at each size. */
      {"melspectrogram.tflite", {"--input-shape serving_default_input:0:1x1280", "--input-shape serving_default_input:0:1x1760",
                                 "--input-shape serving_default_input:0:2x3200"}, NULL},
      {"embedding_model.tflite", {"--input-shape serving_default_input_1:0:1x76x32x1",
                                  "--input-shape serving_default_input_1:0:2x76x32x1",
                                  "--input-shape serving_default_input_1:0:5x76x32x1"}, NULL},
      {"weather_v0.1.tflite", {""}, NULL},
  };
  static const int its[] = {2};
  int quick = tg_test_quick();
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

TG_TEST_MAIN(cmocka_unit_test(tflite_while_and_if), cmocka_unit_test(tflite_hostile_subgraphs),
             cmocka_unit_test(hand_made_models), cmocka_unit_test(hostile_subgraphs),
             cmocka_unit_test(openwakeword_models))

#else

TG_TEST_MAIN(cmocka_unit_test(tflite_while_and_if), cmocka_unit_test(tflite_hostile_subgraphs))

#endif
