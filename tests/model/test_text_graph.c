/* The text graph format: the example file, every error kind with file:line, format detection,
 * out-of-memory at every allocation. */
#include "support/tg_test.h"

#include <stdio.h>
#include <string.h>

#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/model.h"

static void assert_contains(const char *haystack, const char *needle) {
  if (strstr(haystack, needle) == NULL) fail_msg("'%s' does not contain '%s'", haystack, needle);
}

static int find_tensor(const tg_graph *g, const char *name) {
  for (size_t t = 0; t < g->tensor_count; ++t)
    if (strcmp(g->tensors[t].name, name) == 0) return (int)t;
  return -1;
}

static void example_file_parses(void **state) {
  (void)state;
  char path[1024];
  tg_test_data_path(path, sizeof path, "graphs/example.graph");
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_model *model = NULL;
  tg_status st = tg_model_load(path, NULL, &model, &err);
  if (st != TG_OK) fail_msg("%s", err.message);
  assert_int_equal(model->format, TG_MODEL_FORMAT_TEXT_GRAPH);
  assert_int_equal(model->kind, TG_MODEL_GRAPH);
  const tg_graph *g = model->graph;
  assert_int_equal(g->tensor_count, 17);
  assert_int_equal(g->op_count, 8);
  assert_int_equal(g->subgraph_count, 1);
  assert_int_equal(g->input_count, 1);
  assert_int_equal(g->output_count, 2);
  assert_string_equal(g->tensors[g->inputs[0]].name, "image");
  assert_string_equal(g->tensors[g->outputs[0]].name, "logits");
  assert_string_equal(g->tensors[g->outputs[1]].name, "probs");
  int image = find_tensor(g, "image"), w16 = find_tensor(g, "conv1_w16");
  assert_int_equal(g->tensors[image].rank, 4);
  assert_int_equal(g->tensors[image].shape[3], 3);
  assert_int_equal(g->tensors[image].dtype, TG_DTYPE_FLOAT32);
  assert_int_equal(g->tensors[w16].dtype, TG_DTYPE_FLOAT16);
  assert_int_equal(g->tensors[w16].flags, TG_TENSOR_CONSTANT);
  assert_string_equal(g->ops[2].name, "DEPTHWISE_CONV_2D");
  assert_int_equal(g->ops[2].input_count, 3);
  assert_int_equal(g->ops[2].inputs[2], -1);

  tg_lifetimes *l = NULL;
  assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err), TG_OK);
  tg_model_records *r = NULL;
  assert_int_equal(tg_model_records_create(g, l, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL,
                                           NULL, &r, &err), TG_OK);
  /* conv1_w is folded (DEQUANTIZE of a constant); logits and probs are outputs. */
  static const struct { const char *name; uint64_t bytes; uint32_t first, last; } want[] = {
      {"conv1", 65536, 1, 4}, {"dw", 65536, 2, 3}, {"pw", 65536, 3, 4},
      {"residual", 65536, 4, 5}, {"pooled", 64, 5, 6}};
  assert_int_equal(r->records->count, 5);
  for (size_t i = 0; i < 5; ++i) {
    assert_string_equal(r->records->names[i], want[i].name);
    assert_int_equal(r->records->records[i].size.w, want[i].bytes);
    assert_int_equal(r->records->records[i].first_task, want[i].first);
    assert_int_equal(r->records->records[i].last_task, want[i].last);
  }
  tg_model_records_destroy(r);
  tg_lifetimes_destroy(l);
  tg_model_destroy(model);
}

/* Parse `text`; expect `status` and an exact message. */
static void expect_error(const char *text, tg_status status, const char *message) {
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 0);
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_graph *g = NULL;
  tg_status st = tg_graph_parse_text(text, strlen(text), "g.graph", &fa.base, &g, &err);
  if (st != status)
    fail_msg("expected %s, got %s (%s)", tg_status_name(status), tg_status_name(st), err.message);
  assert_null(g);
  assert_string_equal(err.message, message);
  assert_int_equal(fa.live_blocks, 0);
}

static void errors_name_file_and_line(void **state) {
  (void)state;
  /* Read before write: the only way a cycle can show in an ordered op list. */
  expect_error("tensor x 1x4 float32 input\n"
               "tensor a 1x4 float32\n"
               "tensor b 1x4 float32 output\n"
               "op ADD inputs=x,b outputs=a   # b comes from the next op: a cycle\n"
               "op MUL inputs=a outputs=b\n",
               TG_ERROR_GRAPH,
               "g.graph:4: op 0 (ADD) reads tensor 'b' before it is written (not an input, not "
               "constant, and no earlier op writes it)");
  expect_error("tensor x 1x4 float32 input\ntensor a 1x4 float32 output\n"
               "op A inputs=x outputs=a\nop B inputs=x outputs=a\n",
               TG_ERROR_GRAPH, "g.graph:4: op 1 (B) writes tensor 'a', already written on line 3");
  expect_error("tensor x 1x4 float32 input\n\nop A inputs= outputs=x\n", TG_ERROR_GRAPH,
               "g.graph:3: op 0 (A) writes tensor 'x', which is a graph input");
  expect_error("tensor x 1x4 float32\n# comment\ntensor x 2 int8\n", TG_ERROR_PARSE,
               "g.graph:3: tensor 'x' is already declared on line 1");
  expect_error("tensor x 1x4 float32 input\nop A inputs=x,y outputs=x\n", TG_ERROR_PARSE,
               "g.graph:2: inputs: unknown tensor 'y'");
  expect_error("tensor x 1x4 float32 input\nop A inputs=x outputs=-\n", TG_ERROR_PARSE,
               "g.graph:2: outputs: '-' (absent) is allowed only among inputs");
  expect_error("tensor x 1x4 float32 input\nop A inputs=x,,x outputs=\n", TG_ERROR_PARSE,
               "g.graph:2: inputs: empty name in the list");
  expect_error("tensor x 1x-4 float32\n", TG_ERROR_PARSE,
               "g.graph:1: shape '1x-4': dimension 1 is negative");
  expect_error("tensor x 1xx4 float32\n", TG_ERROR_PARSE,
               "g.graph:1: shape '1xx4': expected a dimension (a non-negative integer) at "
               "character 3; write e.g. 1x56x56x24, or 'scalar'");
  expect_error("tensor x 1*4 float32\n", TG_ERROR_PARSE,
               "g.graph:1: shape '1*4': unexpected character '*' at 2; dimensions are separated "
               "by 'x'");
  expect_error("\n\ntensor x 99999999999999999999 float32\n", TG_ERROR_PARSE,
               "g.graph:3: shape '99999999999999999999': dimension 0 is too large");
  expect_error("tensor x 4294967296x4294967296 float32\n", TG_ERROR_PARSE,
               "g.graph:1: shape '4294967296x4294967296': more elements than fit in 63 bits");
  expect_error("tensor x 1x1x1x1x1x1x1x1x1 float32\n", TG_ERROR_PARSE,
               "g.graph:1: shape '1x1x1x1x1x1x1x1x1': rank exceeds the maximum of 8");
  expect_error("tensor x 1x4 float33\n", TG_ERROR_PARSE,
               "g.graph:1: unknown dtype 'float33' (expected float32, float16, int32, int8, "
               "uint8, int16, int64, bool, ...)");
  expect_error("tensor x 1x4 float32 inptu\n", TG_ERROR_PARSE,
               "g.graph:1: unknown tensor flag 'inptu' (expected input, output or constant)");
  expect_error("tensor x 1x4\n", TG_ERROR_PARSE,
               "g.graph:1: expected: tensor NAME SHAPE DTYPE [input|output|constant]...");
  expect_error("tensor a,b 1x4 float32\n", TG_ERROR_PARSE,
               "g.graph:1: invalid tensor name 'a,b': names may not be '-' or contain ',' or '='");
  expect_error("tensor x 4 float32 input constant\n", TG_ERROR_PARSE,
               "g.graph:1: tensor 'x' cannot be both an input and a constant");
  expect_error("tensor x 4 float32 input\nop A inputs=x\n", TG_ERROR_PARSE,
               "g.graph:2: op 'A' needs both inputs= and outputs= (either list may be empty)");
  expect_error("tensor x 4 float32 input\nop A inputs=x inputs=x outputs=\n", TG_ERROR_PARSE,
               "g.graph:2: inputs= given twice");
  expect_error("tensor x 4 float32 input\nop A in=x\n", TG_ERROR_PARSE,
               "g.graph:2: unexpected 'in=x' (expected inputs=... or outputs=...)");
  {
    static const char nul[] = "tensor x 4 float32\n\ntensor k\0x 4 int8\n";
    tg_error_info err;
    tg_graph *g = NULL;
    assert_int_equal(tg_graph_parse_text(nul, sizeof nul - 1, "g.graph", NULL, &g, &err),
                     TG_ERROR_PARSE);
    assert_string_equal(err.message, "g.graph:3: the line contains a NUL byte (is this a text file?)");
  }
  expect_error("tensor x 4 float32\r\nnode A\r\n", TG_ERROR_PARSE,
               "g.graph:2: unknown line kind 'node' (expected 'tensor' or 'op')");
}

static void lenient_where_it_is_harmless(void **state) {
  (void)state;
  /* CRLF, tabs, comments, tensors declared after use, scalar, empty lists, no final newline. */
  const char *text = "# header\r\n"
                     "op\tCONST_GEN inputs= outputs=k\r\n"
                     "op RESHAPE outputs=y inputs=k,-\r\n"
                     "tensor k scalar int32   # a scalar\r\n"
                     "tensor y 0x3 float16 output";
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_graph *g = NULL;
  tg_status st = tg_graph_parse_text(text, strlen(text), NULL, NULL, &g, &err);
  if (st != TG_OK) fail_msg("%s", err.message);
  assert_string_equal(g->source, "<memory>");
  assert_int_equal(g->tensors[0].rank, 0);
  assert_int_equal(g->tensors[1].rank, 2);
  assert_int_equal(g->tensors[1].shape[0], 0);
  assert_int_equal(g->ops[0].input_count, 0);
  assert_int_equal(g->ops[1].input_count, 2);
  assert_int_equal(g->ops[1].inputs[1], -1);
  tg_lifetimes *l = NULL;
  assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err), TG_OK);
  /* An op without inputs produces a non-constant tensor (it has no constant inputs). */
  assert_false(l->tensors[0].constant);
  assert_true(l->tensors[0].planned);
  tg_lifetimes_destroy(l);
  tg_graph_destroy(g);

  /* Empty text: an empty graph. */
  assert_int_equal(tg_graph_parse_text("", 0, "e", NULL, &g, &err), TG_OK);
  assert_int_equal(g->tensor_count, 0);
  tg_graph_destroy(g);
}

static void formats_are_detected(void **state) {
  (void)state;
  assert_int_equal(tg_model_detect_format("name,size,first,last\n", 21), TG_MODEL_FORMAT_RECORDS_CSV);
  assert_int_equal(tg_model_detect_format("\xEF\xBB\xBFsize,first,last\n", 19), TG_MODEL_FORMAT_RECORDS_CSV);
  assert_int_equal(tg_model_detect_format("id,lower,upper,size\n", 20), TG_MODEL_FORMAT_RECORDS_CSV);
  assert_int_equal(tg_model_detect_format("width,height,first,last\n", 24), TG_MODEL_FORMAT_RECORDS_CSV);
  assert_int_equal(tg_model_detect_format("\x1c\0\0\0TFL3", 8), TG_MODEL_FORMAT_TFLITE);
  assert_int_equal(tg_model_detect_format("tensor x 1 int8\n", 16), TG_MODEL_FORMAT_TEXT_GRAPH);
  assert_int_equal(tg_model_detect_format("", 0), TG_MODEL_FORMAT_TEXT_GRAPH);
  assert_string_equal(tg_model_format_name(TG_MODEL_FORMAT_TFLITE), "tflite");

  const char *csv = "name,size,first,last\na,16,0,1\nb,32,1,2\n";
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_model *m = NULL;
  tg_status st = tg_model_parse(csv, strlen(csv), "r.csv", NULL, &m, &err);
  if (st != TG_OK) fail_msg("%s", err.message);
  assert_int_equal(m->kind, TG_MODEL_RECORDS);
  assert_null(m->graph);
  assert_int_equal(m->records->count, 2);
  tg_model_destroy(m);

  /* A .tflite-looking file that is not one is a parse error, not a text graph. */
  assert_int_equal(tg_model_parse("\x1c\0\0\0TFL3", 8, "x.tflite", NULL, &m, &err), TG_ERROR_PARSE);
  assert_null(m);
  assert_int_equal(tg_model_load("/nonexistent/model.tflite", NULL, &m, &err), TG_ERROR_IO);
  assert_null(m);
  tg_graph *g = (tg_graph *)(uintptr_t)1;
  assert_int_equal(tg_graph_read_text("/nonexistent/g.graph", NULL, &g, &err), TG_ERROR_IO);
  assert_null(g);
  assert_contains(err.message, "/nonexistent/g.graph");
  g = (tg_graph *)(uintptr_t)1;
  assert_int_equal(tg_graph_read_tflite("/nonexistent/m.tflite", NULL, &g, &err), TG_ERROR_IO);
  assert_null(g);
  char path[1024];
  tg_test_data_path(path, sizeof path, "graphs/example.graph");
  assert_int_equal(tg_graph_read_text(path, NULL, &g, &err), TG_OK);
  assert_string_equal(g->source, path);
  tg_graph_destroy(g);
  /* The text reader on a .tflite path reports a line, not garbage. */
  assert_int_equal(tg_graph_parse_text("\x1c\0\0\0TFL3", 8, "x", NULL, &g, &err), TG_ERROR_PARSE);
  assert_string_equal(err.message, "x:1: the line contains a NUL byte (is this a text file?)");
  tg_model_destroy(NULL);

  tg_dtype d;
  for (int i = 0; i <= TG_DTYPE_INT4; ++i) {
    assert_int_equal(tg_dtype_from_name(tg_dtype_name((tg_dtype)i), &d), TG_OK);
    assert_int_equal(d, i);
  }
  assert_int_equal(tg_dtype_from_name("float", &d), TG_ERROR_INVALID_ARGUMENT);
}

static void out_of_memory_everywhere(void **state) {
  (void)state;
  char path[1024];
  tg_test_data_path(path, sizeof path, "graphs/example.graph");
  uint64_t fail_at = 1;
  for (;; ++fail_at) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, fail_at);
    tg_error_info err;
    memset(&err, 0, sizeof err);
    tg_model *m = NULL;
    tg_lifetimes *l = NULL;
    tg_model_records *r = NULL;
    tg_status st = tg_model_load(path, &fa.base, &m, &err);
    if (st == TG_OK) st = tg_graph_compute_lifetimes(m->graph, NULL, &fa.base, &l, &err);
    if (st == TG_OK)
      st = tg_model_records_create(m->graph, l, TG_STORAGE_SINGLE_TEXTURE_2D, TG_PRECISION_FP16,
                                   NULL, &fa.base, &r, &err);
    tg_model_records_destroy(r);
    tg_lifetimes_destroy(l);
    tg_model_destroy(m);
    if (tg_test_walk_step(&fa, st, TG_OK)) break;
    assert_true(err.message[0] != '\0');
  }
  assert_true(fail_at > 50);
}

TG_TEST_MAIN(cmocka_unit_test(example_file_parses), cmocka_unit_test(errors_name_file_and_line),
             cmocka_unit_test(lenient_where_it_is_harmless), cmocka_unit_test(formats_are_detected),
             cmocka_unit_test(out_of_memory_everywhere))
