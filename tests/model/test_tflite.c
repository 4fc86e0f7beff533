/* The .tflite reader on the real MediaPipe models (records must equal the reference CSVs) and
 * on hostile input (truncation, byte flips, bad offsets, absurd counts, bad indices). */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/planner.h"
#include "tflite_builder.h"

/* ------------------------------------------------------------------------------------------ */
/* Helpers. */

static double seconds_since(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static unsigned char *read_all(const char *path, size_t *length) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  assert_true(n > 0);
  unsigned char *data = malloc((size_t)n);
  assert_non_null(data);
  assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *length = (size_t)n;
  return data;
}

/* Parse `data`; on success also compute lifetimes and records for every storage under the
 * default limits. Everything is freed. Returns the first failing status; checks that failures
 * come with a message and that nothing leaks. */
static tg_status parse_everything(const unsigned char *data, size_t length) {
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 0);
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_graph *g = NULL;
  tg_status st = tg_graph_parse_tflite(data, length, "fuzz.tflite", &fa.base, &g, &err);
  if (st == TG_OK) {
    assert_non_null(g);
    tg_lifetimes *l = NULL;
    st = tg_graph_compute_lifetimes(g, NULL, &fa.base, &l, &err);
    if (st == TG_OK) {
      tg_device_limits lim = tg_device_limits_default();
      for (int s = 0; s < TG_STORAGE_COUNT && st == TG_OK; ++s) {
        tg_model_records *m = NULL;
        st = tg_model_records_create(g, l, (tg_storage)s, TG_PRECISION_FP16, &lim, &fa.base, &m,
                                     &err);
        if (st != TG_OK) assert_null(m);
        tg_model_records_destroy(m);
      }
    } else {
      assert_null(l);
    }
    tg_lifetimes_destroy(l);
    tg_graph_destroy(g);
  } else {
    assert_null(g);
  }
  if (st != TG_OK) {
    if (err.message[0] == '\0') fail_msg("status %s without a message", tg_status_name(st));
    /* UNSUPPORTED and INVALID_ARGUMENT: a dynamic dimension (-1) that no input shape fixes. */
    if (st != TG_ERROR_PARSE && st != TG_ERROR_GRAPH && st != TG_ERROR_LIMIT &&
        st != TG_ERROR_OVERFLOW && st != TG_ERROR_UNSUPPORTED && st != TG_ERROR_INVALID_ARGUMENT)
      fail_msg("unexpected status %s: %s", tg_status_name(st), err.message);
  }
  if (fa.live_blocks != 0) fail_msg("%lld blocks leaked (%s)", (long long)fa.live_blocks, err.message);
  return st;
}

static void assert_contains(const char *haystack, const char *needle) {
  if (strstr(haystack, needle) == NULL) fail_msg("'%s' does not contain '%s'", haystack, needle);
}

/* Build, parse, expect failure with `status` and a message containing `needle`. */
static void expect_parse_error(const unsigned char *data, size_t length, tg_status status,
                               const char *needle) {
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 0);
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_graph *g = (tg_graph *)(uintptr_t)1;
  tg_status st = tg_graph_parse_tflite(data, length, "t.tflite", &fa.base, &g, &err);
  if (st != status)
    fail_msg("expected %s, got %s (%s)", tg_status_name(status), tg_status_name(st), err.message);
  assert_null(g);
  assert_contains(err.message, needle);
  assert_int_equal(fa.live_blocks, 0);
}

/* ------------------------------------------------------------------------------------------ */
/* Real models. */

typedef struct model_facts {
  const char *name;
  size_t tensors, ops, records;
  uint64_t naive_bytes, peak_live_bytes, positional_max_bytes, texel_bound;
} model_facts;

/* From /work/shared/reference/tflite-on-mediapipe.md (also in docs/models.md). */
static const model_facts k_models[] = {
    {"selfie_segmentation", 360, 246, 135, 29697952, 3670016, 3801600, 237600},
    {"face_detection_short_range", 250, 164, 88, 9691136, 1376256, 1406976, 87936},
    {"hand_landmark_lite", 271, 167, 61, 18420448, 4214784, 4616192, 288512},
    {"pose_landmark_lite", 492, 305, 124, 49834064, 6963200, 7193088, 449568},
};

static void compare_with_reference(const tg_model_records *m, const char *model, const char *kind) {
  char rel[256], path[1024];
  snprintf(rel, sizeof rel, "records/%s.%s.csv", model, kind);
  tg_test_data_path(path, sizeof path, rel);
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_record_set *ref = NULL;
  tg_status st = tg_records_read_csv(path, NULL, &ref, &err);
  if (st != TG_OK) fail_msg("%s: %s", path, err.message);
  const tg_record_set *got = m->records;
  assert_int_equal(got->dims, ref->dims);
  assert_int_equal(m->fallback->count, 0);
  if (got->count != ref->count)
    fail_msg("%s %s: %zu records, reference has %zu", model, kind, got->count, ref->count);
  for (size_t i = 0; i < ref->count; ++i) {
    char name[2048];
    snprintf(name, sizeof name, "%s", got->names[i] ? got->names[i] : "");
    for (char *p = name; *p; ++p)
      if (*p == ',') *p = ';';
    const tg_usage_record *a = &got->records[i], *b = &ref->records[i];
    if (strcmp(name, ref->names[i] ? ref->names[i] : "") != 0 || a->size.w != b->size.w ||
        a->size.h != b->size.h || a->size.d != b->size.d || a->first_task != b->first_task ||
        a->last_task != b->last_task)
      fail_msg("%s %s record %zu: got %s %llux%llux%llu [%u,%u], reference %s %llux%llux%llu [%u,%u]",
               model, kind, i, name, (unsigned long long)a->size.w, (unsigned long long)a->size.h,
               (unsigned long long)a->size.d, a->first_task, a->last_task, ref->names[i],
               (unsigned long long)b->size.w, (unsigned long long)b->size.h,
               (unsigned long long)b->size.d, b->first_task, b->last_task);
  }
  tg_record_set_destroy(ref);
}

static void real_models_match_reference_records(void **state) {
  (void)state;
  int ran = 0;
  for (size_t k = 0; k < sizeof k_models / sizeof k_models[0]; ++k) {
    const model_facts *f = &k_models[k];
    char file[256], path[1024];
    snprintf(file, sizeof file, "%s.tflite", f->name);
    if (tg_test_model_path(path, sizeof path, file) == NULL) continue;
    ++ran;
    tg_error_info err;
    memset(&err, 0, sizeof err);
    tg_model *model = NULL;
    tg_status st = tg_model_load(path, NULL, &model, &err);
    if (st != TG_OK) fail_msg("%s: %s", path, err.message);
    assert_int_equal(model->kind, TG_MODEL_GRAPH);
    assert_int_equal(model->format, TG_MODEL_FORMAT_TFLITE);
    const tg_graph *g = model->graph;
    assert_int_equal(g->tensor_count, f->tensors);
    assert_int_equal(g->op_count, f->ops);
    assert_int_equal(g->subgraph_count, 1);
    assert_string_equal(g->source, path);
    assert_true(g->input_count >= 1);
    assert_true(g->output_count >= 1);

    tg_graph *direct = NULL;
    assert_int_equal(tg_graph_read_tflite(path, NULL, &direct, &err), TG_OK);
    assert_int_equal(direct->tensor_count, g->tensor_count);
    assert_string_equal(direct->ops[direct->op_count - 1].name, g->ops[g->op_count - 1].name);
    tg_graph_destroy(direct);

    tg_lifetimes *l = NULL;
    st = tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err);
    if (st != TG_OK) fail_msg("%s: %s", path, err.message);
    size_t planned = 0;
    for (size_t t = 0; t < l->tensor_count; ++t) planned += l->tensors[t].planned != 0;
    assert_int_equal(planned, f->records);

    static const struct { tg_storage storage; const char *kind; } kinds[] = {
        {TG_STORAGE_BUFFER, "buffer"}, {TG_STORAGE_TEXTURE_2D, "tex2"},
        {TG_STORAGE_TEXTURE_3D, "tex3"}};
    tg_device_limits lim = tg_device_limits_default();
    for (size_t s = 0; s < 3; ++s) {
      tg_model_records *m = NULL;
      st = tg_model_records_create(g, l, kinds[s].storage, TG_PRECISION_FP32, &lim, NULL, &m, &err);
      if (st != TG_OK) fail_msg("%s: %s", path, err.message);
      compare_with_reference(m, f->name, kinds[s].kind);
      for (size_t r = 0; r < m->records->count; ++r)
        assert_true(l->tensors[m->tensor_of[r]].planned);

      tg_bounds b;
      st = tg_bounds_compute(m->records->records, m->records->count, m->records->dims, NULL, &b);
      if (st != TG_OK) fail_msg("tg_bounds_compute: %s", tg_status_name(st));
      if (kinds[s].storage == TG_STORAGE_BUFFER) {
        assert_int_equal(b.naive, f->naive_bytes);
        assert_int_equal(b.peak_live, f->peak_live_bytes);
        assert_int_equal(b.positional_max, f->positional_max_bytes);
      } else {
        assert_int_equal(b.positional_max, f->texel_bound);
      }
      tg_model_records_destroy(m);
    }

    /* fp16 halves every buffer size. */
    tg_model_records *m32 = NULL, *m16 = NULL;
    assert_int_equal(tg_model_records_create(g, l, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL,
                                             NULL, &m32, &err), TG_OK);
    assert_int_equal(tg_model_records_create(g, l, TG_STORAGE_BUFFER, TG_PRECISION_FP16, NULL,
                                             NULL, &m16, &err), TG_OK);
    assert_int_equal(m32->records->count, m16->records->count);
    for (size_t r = 0; r < m32->records->count; ++r)
      assert_int_equal(m32->records->records[r].size.w, 2 * m16->records->records[r].size.w);
    tg_model_records_destroy(m32);
    tg_model_records_destroy(m16);
    tg_lifetimes_destroy(l);
    tg_model_destroy(model);
  }
  if (ran == 0) fprintf(stderr, "SKIPPED: no cached models\n");
}

/* ------------------------------------------------------------------------------------------ */
/* The hand-made model. */

static void example_model_parses(void **state) {
  (void)state;
  static tt_buf b;
  tt_model m;
  tt_example(&m);
  m.subgraphs = 2;
  size_t n = tt_build(&m, &b, NULL);
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_graph *g = NULL;
  tg_status st = tg_graph_parse_tflite(b.data, n, NULL, NULL, &g, &err);
  if (st != TG_OK) fail_msg("%s", err.message);
  assert_int_equal(g->subgraph_count, 2);
  assert_string_equal(g->source, "<memory>");
  assert_int_equal(g->tensor_count, 6);
  assert_int_equal(g->op_count, 4);
  assert_string_equal(g->ops[0].name, "DEQUANTIZE");
  assert_string_equal(g->ops[1].name, "CONV_2D");
  assert_string_equal(g->ops[2].name, "MyOp");
  assert_string_equal(g->ops[3].name, "ADD");
  assert_int_equal(g->ops[1].input_count, 3);
  assert_int_equal(g->ops[1].inputs[2], -1);
  assert_string_equal(g->tensors[4].name, "b");
  assert_int_equal(g->tensors[4].shape[0], 1); /* from shape_signature (no shape field) */
  assert_int_equal(g->tensors[1].dtype, TG_DTYPE_FLOAT16);
  assert_int_equal(g->tensors[1].flags, TG_TENSOR_CONSTANT);
  assert_int_equal(g->tensors[2].flags, 0); /* buffer 2 is empty */
  assert_int_equal(g->tensors[0].flags, TG_TENSOR_INPUT);
  assert_int_equal(g->tensors[5].flags, TG_TENSOR_OUTPUT);
  assert_int_equal(g->input_count, 1);
  assert_int_equal(g->inputs[0], 0);
  assert_int_equal(g->outputs[0], 5);

  tg_lifetimes *l = NULL;
  assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err), TG_OK);
  assert_true(l->tensors[2].constant); /* DEQUANTIZE of a constant */
  assert_false(l->tensors[2].planned);
  assert_true(l->tensors[3].planned);
  assert_int_equal(l->tensors[3].first_task, 1);
  assert_int_equal(l->tensors[3].last_task, 3);
  assert_int_equal(l->tensors[3].consumer_count, 2);
  assert_int_equal(l->tensors[3].consumers[0], 2);
  assert_int_equal(l->tensors[3].consumers[1], 3);
  assert_true(l->tensors[4].planned);
  assert_false(l->tensors[5].planned);
  assert_true(l->tensors[5].persistent);
  assert_int_equal(l->tensors[0].first_task, 0);
  tg_lifetimes_destroy(l);

  /* plan_io: the input from task 0, the output until the last op. */
  tg_lifetime_options o = {1};
  assert_int_equal(tg_graph_compute_lifetimes(g, &o, NULL, &l, &err), TG_OK);
  assert_true(l->tensors[0].planned);
  assert_int_equal(l->tensors[0].first_task, 0);
  assert_int_equal(l->tensors[0].last_task, 1);
  assert_true(l->tensors[5].planned);
  assert_int_equal(l->tensors[5].first_task, 3);
  tg_model_records *r = NULL;
  assert_int_equal(tg_model_records_create(g, l, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL,
                                           NULL, &r, &err), TG_OK);
  assert_int_equal(r->records->count, 4);
  assert_string_equal(r->records->names[0], "x"); /* graph inputs first */
  assert_string_equal(r->records->names[1], "a");
  assert_string_equal(r->records->names[3], "y");
  assert_int_equal(r->records->records[0].size.w, 1 * 8 * 8 * 1 * 16);
  tg_model_records_destroy(r);
  tg_lifetimes_destroy(l);
  tg_graph_destroy(g);
}

static void builtin_codes_follow_tflite(void **state) {
  (void)state;
  static tt_buf b;
  tt_model m;
  tt_example(&m);
  m.opcodes[0] = (tt_opcode){127, 150, NULL};  /* placeholder in the old field: GELU */
  m.opcodes[1] = (tt_opcode){4, 0, NULL};      /* old writer: DEPTHWISE_CONV_2D */
  m.opcodes[2] = (tt_opcode){0, 400, NULL};    /* unknown to this version */
  m.opcodes[3] = (tt_opcode){32, 32, NULL};    /* CUSTOM without a custom code */
  size_t n = tt_build(&m, &b, NULL);
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_graph *g = NULL;
  tg_status st = tg_graph_parse_tflite(b.data, n, "t.tflite", NULL, &g, &err);
  if (st != TG_OK) fail_msg("%s", err.message);
  assert_string_equal(g->ops[0].name, "GELU");
  assert_string_equal(g->ops[1].name, "DEPTHWISE_CONV_2D");
  assert_string_equal(g->ops[2].name, "BUILTIN_400");
  assert_string_equal(g->ops[3].name, "CUSTOM");
  tg_graph_destroy(g);
  assert_string_equal(tg_tflite_builtin_name(3), "CONV_2D");
  assert_string_equal(tg_tflite_builtin_name(127), "PLACEHOLDER_FOR_GREATER_OP_CODES");
  assert_string_equal(tg_tflite_builtin_name(150), "GELU");
  assert_string_equal(tg_tflite_builtin_name(161), "RIGHT_SHIFT");
  assert_null(tg_tflite_builtin_name(-1));
  assert_null(tg_tflite_builtin_name(100000));
}

static void constants_from_offset_and_variables(void **state) {
  (void)state;
  static tt_buf b;
  tt_model m;
  tt_example(&m);
  /* w16's data moves out of line: offset/size into the file (here: the header, which is as
   * good as any bytes for the reader). */
  m.buffers[1] = (tt_buffer){0, 8, 16};
  m.tensors[4].variable = 1;
  size_t n = tt_build(&m, &b, NULL);
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_graph *g = NULL;
  assert_int_equal(tg_graph_parse_tflite(b.data, n, "t.tflite", NULL, &g, &err), TG_OK);
  assert_true(g->tensors[1].flags & TG_TENSOR_CONSTANT);
  assert_true(g->tensors[4].flags & TG_TENSOR_CONSTANT);
  tg_graph_destroy(g);
  /* Offset 1 is the writers' placeholder, not data. */
  m.buffers[1] = (tt_buffer){0, 1, 16};
  n = tt_build(&m, &b, NULL);
  assert_int_equal(tg_graph_parse_tflite(b.data, n, "t.tflite", NULL, &g, &err), TG_OK);
  assert_false(g->tensors[1].flags & TG_TENSOR_CONSTANT);
  tg_graph_destroy(g);
  /* Out-of-file external data. */
  m.buffers[1] = (tt_buffer){0, 8, 1u << 30};
  n = tt_build(&m, &b, NULL);
  expect_parse_error(b.data, n, TG_ERROR_PARSE, "buffer 1: data (offset 8, size 1073741824) runs past the end");
}

/* ------------------------------------------------------------------------------------------ */
/* Hostile input, targeted. */

static void bad_indices_name_the_op(void **state) {
  (void)state;
  static tt_buf b;
  tt_model m;
  tt_example(&m);
  m.ops[3].in[1] = -5;
  size_t n = tt_build(&m, &b, NULL);
  expect_parse_error(b.data, n, TG_ERROR_PARSE, "t.tflite: op 3 (ADD): input 1 is tensor -5, outside 0..5");
  tt_example(&m);
  m.ops[1].in[0] = 1000000000;
  n = tt_build(&m, &b, NULL);
  expect_parse_error(b.data, n, TG_ERROR_PARSE, "op 1 (CONV_2D): input 0 is tensor 1000000000");
  tt_example(&m);
  m.ops[2].out[0] = -1;
  n = tt_build(&m, &b, NULL);
  expect_parse_error(b.data, n, TG_ERROR_PARSE, "op 2 (MyOp): output 0 is -1");
  tt_example(&m);
  m.ops[2].opcode = 9;
  n = tt_build(&m, &b, NULL);
  expect_parse_error(b.data, n, TG_ERROR_PARSE, "op 2: opcode index 9 is out of range (the model has 4 operator codes)");
  tt_example(&m);
  m.inputs[0] = 6;
  n = tt_build(&m, &b, NULL);
  expect_parse_error(b.data, n, TG_ERROR_PARSE, "input 0 is tensor 6, outside 0..5");
  tt_example(&m);
  m.tensors[3].buffer = 77;
  n = tt_build(&m, &b, NULL);
  expect_parse_error(b.data, n, TG_ERROR_PARSE, "tensor 3: buffer index 77 is out of range (the model has 3 buffers)");
}

static void bad_shapes_are_rejected(void **state) {
  (void)state;
  static tt_buf b;
  tt_model m;
  tt_example(&m);
  m.tensors[3].shape[2] = -7;
  size_t n = tt_build(&m, &b, NULL);
  expect_parse_error(b.data, n, TG_ERROR_PARSE, "tensor 3: shape dimension 2 is -7");
  tt_example(&m);
  m.tensors[3].rank = 8;
  for (int d = 0; d < 8; ++d) m.tensors[3].shape[d] = INT32_MAX;
  n = tt_build(&m, &b, NULL);
  expect_parse_error(b.data, n, TG_ERROR_PARSE, "tensor 3: shape has more elements than fit in 63 bits");
  tt_example(&m);
  m.tensors[0].rank = 9;
  n = tt_build(&m, &b, NULL);
  expect_parse_error(b.data, n, TG_ERROR_PARSE, "tensor 0: rank 9 exceeds the maximum of 8");
  /* Absent shape: a scalar. Absent name: synthesised. */
  tt_example(&m);
  m.tensors[5].rank = -1;
  m.tensors[5].name = NULL;
  n = tt_build(&m, &b, NULL);
  tg_graph *g = NULL;
  tg_error_info err;
  memset(&err, 0, sizeof err);
  assert_int_equal(tg_graph_parse_tflite(b.data, n, "t.tflite", NULL, &g, &err), TG_OK);
  assert_int_equal(g->tensors[5].rank, 0);
  assert_string_equal(g->tensors[5].name, "tensor_5");
  tg_graph_destroy(g);
}

static void bad_structure_is_rejected(void **state) {
  (void)state;
  static tt_buf b, c;
  tt_model m;
  tt_layout lay;
  tt_example(&m);
  size_t n = tt_build(&m, &b, &lay);

#define MUTATE(stmt, status, needle) \
  do {                               \
    c = b;                           \
    stmt;                            \
    expect_parse_error(c.data, n, status, needle); \
  } while (0)

  /* Not a .tflite / too short / wrong version. */
  expect_parse_error(b.data, 7, TG_ERROR_PARSE, "too short");
  MUTATE(c.data[4] = 'X', TG_ERROR_PARSE, "no \"TFL3\" identifier");
  MUTATE(tt_set32(&c, tt_field(lay.model_table, 0), 2), TG_ERROR_PARSE, "schema version 2 is not supported");
  /* Root offset pointing to itself and past the end. */
  MUTATE(tt_set32(&c, 0, 0), TG_ERROR_PARSE, "root table offset at 0 points to itself");
  MUTATE(tt_set32(&c, 0, 0xFFFFFFF0u), TG_ERROR_PARSE, "points past the end of the file");
  /* Absurd vector lengths, rejected before allocating anything. */
  MUTATE(tt_set32(&c, lay.tensors_vec, 0x7FFFFFFFu), TG_ERROR_PARSE,
         "subgraph 0: tensors vector of 2147483647 elements runs past the end of the file");
  MUTATE(tt_set32(&c, lay.tensors_vec, 0xFFFFFFFFu), TG_ERROR_PARSE, "runs past the end");
  {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, 0);
    tg_graph *g = NULL;
    c = b;
    tt_set32(&c, lay.tensors_vec, 0x7FFFFFFFu);
    assert_int_equal(tg_graph_parse_tflite(c.data, n, "t.tflite", &fa.base, &g, NULL), TG_ERROR_PARSE);
    assert_int_equal(fa.allocations, 0); /* rejected before allocating anything */
  }
  MUTATE(tt_set32(&c, lay.shape_vec[3], 1000000), TG_ERROR_PARSE,
         "tensor 3: shape vector of 1000000 elements runs past the end of the file");
  MUTATE(tt_set32(&c, lay.op_inputs_vec[1], 0xFFFFFFFFu), TG_ERROR_PARSE,
         "op 1 (CONV_2D): inputs vector");
  /* An element offset of 0 (the table would be its own reference). */
  MUTATE(tt_set32(&c, tt_elem(lay.tensors_vec, 2), 0), TG_ERROR_PARSE, "tensor 2: tensor offset");
  /* A table whose soffset is 0: its vtable is itself. */
  MUTATE(tt_set32(&c, lay.tensor_table[2], 0), TG_ERROR_PARSE, "invalid vtable size");
  /* vtable outside the file, before and after. */
  MUTATE(tt_set32(&c, lay.tensor_table[2], 0x7FFFFFFFu), TG_ERROR_PARSE, "vtable outside the file");
  MUTATE(tt_set32(&c, lay.tensor_table[2], 0x80000000u), TG_ERROR_PARSE, "vtable outside the file");
  /* Odd vtable size, a field beyond its table, an oversized table. */
  MUTATE(c.data[lay.tensor_table[2] - 20] = 19, TG_ERROR_PARSE, "invalid vtable size 19");
  MUTATE(c.data[lay.tensor_table[2] - 20 + 4] = 200, TG_ERROR_PARSE,
         "field shape at table offset 200 (4 bytes) lies outside its table");
  MUTATE((c.data[lay.tensor_table[2] - 20 + 2] = 0xFF, c.data[lay.tensor_table[2] - 20 + 3] = 0xFF),
         TG_ERROR_PARSE, "tensor table runs past the end of the file");
  /* A name that is not NUL-terminated and one that runs off the end. */
  MUTATE(c.data[lay.name_str[1] + 4 + 3] = 'x', TG_ERROR_PARSE, "tensor 1: name string at offset");
  MUTATE(tt_set32(&c, lay.name_str[1], 0xFFFFFF00u), TG_ERROR_PARSE, "tensor 1: name vector of");
  /* No subgraphs. */
  MUTATE(tt_set32(&c, lay.subgraphs_vec, 0), TG_ERROR_PARSE, "the model has no subgraphs");
#undef MUTATE
  /* Self-check of the vtable arithmetic used above: a tensor vtable has 8 fields. */
  assert_int_equal(b.data[lay.tensor_table[2] - 20], 20);
}

/* FlatBuffers lets tables share a vector or string. A small file whose tensors all share one
 * table with a long name (or whose ops share one long input list) must not make the reader copy
 * gigabytes. */
static void shared_objects_cannot_amplify(void **state) {
  (void)state;
  static tt_buf b;
  for (int variant = 0; variant < 2; ++variant) {
    const int n = 12000;
    b.len = 0;
    size_t root = tt_u32(&b, 0);
    tt_put(&b, "TFL3", 4);
    size_t model = tt_table(&b, 5, 0x7); /* version, operator_codes, subgraphs */
    tt_link(&b, root, model);
    tt_set32(&b, tt_field(model, 0), 3);
    size_t ocv = tt_vec_offsets(&b, 1);
    tt_link(&b, tt_field(model, 1), ocv);
    tt_link(&b, tt_elem(ocv, 0), tt_table(&b, 4, 0)); /* ADD */
    size_t sgv = tt_vec_offsets(&b, 1);
    tt_link(&b, tt_field(model, 2), sgv);
    size_t sg = tt_table(&b, 4, variant == 0 ? 0x1 : 0x9); /* tensors (+ operators) */
    tt_link(&b, tt_elem(sgv, 0), sg);
    size_t tv = tt_vec_offsets(&b, variant == 0 ? n : 1);
    tt_link(&b, tt_field(sg, 0), tv);
    size_t opv = 0;
    if (variant == 1) {
      opv = tt_vec_offsets(&b, n);
      tt_link(&b, tt_field(sg, 3), opv);
    }
    size_t tensor = tt_table(&b, 8, 0x8); /* name only */
    for (int i = 0; i < (variant == 0 ? n : 1); ++i) tt_link(&b, tt_elem(tv, i), tensor);
    char name[4001];
    memset(name, 'n', 4000);
    name[4000] = '\0';
    tt_link(&b, tt_field(tensor, 3), tt_string(&b, variant == 0 ? name : "t"));
    if (variant == 1) {
      size_t op = tt_table(&b, 3, 0x2); /* inputs only */
      for (int i = 0; i < n; ++i) tt_link(&b, tt_elem(opv, i), op);
      static int32_t zeros[3000];
      tt_link(&b, tt_field(op, 1), tt_vec_i32(&b, zeros, 3000));
    }
    assert_true(b.len < TT_CAP);
    expect_parse_error(b.data, b.len, TG_ERROR_PARSE,
                       "the file expands to more than 16 times its size");
  }
}

static void order_errors_come_from_lifetimes(void **state) {
  (void)state;
  static tt_buf b;
  tt_model m;
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_graph *g = NULL;
  tg_lifetimes *l = NULL;
  /* ADD reads 'b' before MyOp writes it. */
  tt_example(&m);
  tt_op tmp = m.ops[2];
  m.ops[2] = m.ops[3];
  m.ops[3] = tmp;
  size_t n = tt_build(&m, &b, NULL);
  assert_int_equal(tg_graph_parse_tflite(b.data, n, "t.tflite", NULL, &g, &err), TG_OK);
  assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err), TG_ERROR_GRAPH);
  assert_null(l);
  assert_string_equal(err.message, "t.tflite: op 2 (ADD) reads tensor 'b' before it is written");
  tg_graph_destroy(g);
  /* 'a' written twice. */
  tt_example(&m);
  m.ops[2].out[0] = 3;
  n = tt_build(&m, &b, NULL);
  assert_int_equal(tg_graph_parse_tflite(b.data, n, "t.tflite", NULL, &g, &err), TG_OK);
  assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err), TG_ERROR_GRAPH);
  assert_string_equal(err.message, "t.tflite: op 2 (MyOp) writes tensor 'a', already written by op 1");
  tg_graph_destroy(g);
  /* An op writing the graph input. */
  tt_example(&m);
  m.ops[2].out[0] = 0;
  n = tt_build(&m, &b, NULL);
  assert_int_equal(tg_graph_parse_tflite(b.data, n, "t.tflite", NULL, &g, &err), TG_OK);
  assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err), TG_ERROR_GRAPH);
  assert_contains(err.message, "op 2 (MyOp) writes tensor 'x', which is a graph input");
  tg_graph_destroy(g);
}

/* ------------------------------------------------------------------------------------------ */
/* Hostile input, bulk. */

/* ------------------------------------------------------------------------------------------ */
/* Dynamic dimensions (-1 in shape_signature). */

/* Parse with input shapes; expect `status` and, on failure, a message containing `needle`. */
static tg_graph *parse_with(const tt_buf *b, size_t n, const tg_input_shape *shapes, size_t count,
                            tg_status status, const char *needle) {
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 0);
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_model_options o = {shapes, count};
  tg_graph *g = NULL;
  tg_status st = tg_graph_parse_tflite_with(b->data, n, "d.tflite", &o, NULL, &g, &err);
  if (st != status)
    fail_msg("expected %s, got %s (%s)", tg_status_name(status), tg_status_name(st), err.message);
  if (st != TG_OK) {
    assert_null(g);
    assert_contains(err.message, needle);
  }
  return g;
}

/* The example with a dynamic batch: x is 1x8x8x3 in `shape` and -1x8x8x3 in shape_signature,
 * and so are the tensors computed from it. */
static void dynamic_batch_example(tt_model *m) {
  tt_example(m);
  static const int dyn[] = {0, 3, 5};
  for (size_t k = 0; k < sizeof dyn / sizeof dyn[0]; ++k) {
    int t = dyn[k];
    m->signature_rank[t] = 4;
    for (int d = 0; d < 4; ++d) m->signature[t][d] = m->tensors[t].shape[d];
    m->signature[t][0] = -1;
  }
  m->tensors[4].shape_in_signature = 0; /* b: shape 1x8x8x4, signature -1x8x8x4 */
  m->signature_rank[4] = 4;
  int32_t sb[4] = {-1, 8, 8, 4};
  memcpy(m->signature[4], sb, sizeof sb);
}

static void dynamic_dimensions_need_input_shapes(void **state) {
  (void)state;
  static tt_buf b;
  tt_model m;
  dynamic_batch_example(&m);
  size_t n = tt_build(&m, &b, NULL);
  /* No input shape: the size the file records (1), as TFLite's interpreter runs the model until
   * the engine resizes it; the input says so. */
  tg_graph *g = parse_with(&b, n, NULL, 0, TG_OK, NULL);
  assert_int_equal(g->tensors[0].shape[0], 1);
  assert_int_equal(g->tensors[5].shape[0], 1);
  assert_true(g->tensors[0].flags & TG_TENSOR_ASSUMED_SHAPE);
  assert_int_equal(g->tensors[0].dynamic_dims, 1u);
  for (size_t i = 1; i < g->tensor_count; ++i) assert_false(g->tensors[i].flags & TG_TENSOR_ASSUMED_SHAPE);
  tg_graph_destroy(g);
  /* tg_model_parse (no options) plans it the same way. */
  tg_model *model = NULL;
  tg_error_info err;
  memset(&err, 0, sizeof err);
  assert_int_equal(tg_model_parse(b.data, n, "d.tflite", NULL, &model, &err), TG_OK);
  assert_true(model->graph->tensors[0].flags & TG_TENSOR_ASSUMED_SHAPE);
  tg_model_destroy(model);
  /* The size the file's shapes were computed for, given: every shape as recorded, nothing assumed. */
  tg_input_shape one = {"x", 4, {1, 8, 8, 3}, {{0}}};
  g = parse_with(&b, n, &one, 1, TG_OK, NULL);
  assert_int_equal(g->tensors[0].shape[0], 1);
  assert_int_equal(g->tensors[5].shape[0], 1);
  assert_false(g->tensors[0].flags & TG_TENSOR_ASSUMED_SHAPE);
  assert_int_equal(g->tensors[0].dynamic_dims, 1u);
  tg_graph_destroy(g);
  /* Another batch: every op's output shape is inferred again; an op without inference (the
   * custom MyOp) is named. */
  tg_input_shape four = {"x", 4, {4, 8, 8, 3}, {{0}}};
  g = parse_with(&b, n, &four, 1, TG_ERROR_UNSUPPORTED, "d.tflite: op 2 (MyOp): no shape inference for this op");
  tg_graph_destroy(g);
  {
    static tt_buf b2;
    tt_model m2;
    dynamic_batch_example(&m2);
    m2.opcodes[2] = (tt_opcode){19, 19, NULL}; /* RELU instead of MyOp */
    size_t n2 = tt_build(&m2, &b2, NULL);
    g = parse_with(&b2, n2, &four, 1, TG_OK, NULL);
    static const int64_t want[4] = {4, 8, 8, 4};
    for (int t = 3; t <= 5; ++t) {
      assert_int_equal(g->tensors[t].rank, 4);
      for (int d = 0; d < 4; ++d) assert_int_equal(g->tensors[t].shape[d], want[d]);
    }
    assert_int_equal(g->tensors[2].shape[0], 4); /* the weights keep their shape */
    tg_graph_destroy(g);
    /* A shape subgraph folds: SHAPE(a) -> b feeds RESHAPE(a, b) -> y; SHAPE is no op any more. */
    dynamic_batch_example(&m2);
    m2.opcodes[2] = (tt_opcode){77, 77, NULL}; /* SHAPE */
    m2.opcodes[3] = (tt_opcode){22, 22, NULL}; /* RESHAPE */
    m2.signature_rank[4] = 0;
    m2.tensors[4] = (tt_tensor){"b", 1, {4}, 0, 2, 0, 0};
    n2 = tt_build(&m2, &b2, NULL);
    g = parse_with(&b2, n2, &four, 1, TG_OK, NULL);
    assert_int_equal(g->op_count, 3);
    assert_string_equal(g->ops[2].name, "RESHAPE");
    assert_true(g->tensors[4].flags & TG_TENSOR_CONSTANT);
    for (int d = 0; d < 4; ++d) assert_int_equal(g->tensors[5].shape[d], want[d]);
    tg_graph_destroy(g);
  }
  /* Static dimensions must be repeated; names must be inputs; ranks must agree. */
  tg_input_shape wide = {"x", 4, {1, 9, 8, 3}, {{0}}};
  g = parse_with(&b, n, &wide, 1, TG_ERROR_INVALID_ARGUMENT, "dimension 1 is 8 in the file, not 9");
  tg_graph_destroy(g);
  tg_input_shape other[2] = {{"x", 4, {1, 8, 8, 3}, {{0}}}, {"nope", 1, {3}, {{0}}}};
  g = parse_with(&b, n, other, 2, TG_ERROR_INVALID_ARGUMENT, "'nope', which is not a graph input (inputs: 'x')");
  tg_graph_destroy(g);
  tg_input_shape flat = {"x", 2, {1, 192}, {{0}}};
  g = parse_with(&b, n, &flat, 1, TG_ERROR_INVALID_ARGUMENT, "has rank 4 (?x8x8x3) but the shape given, 1x192, has rank 2");
  tg_graph_destroy(g);
  tg_input_shape twice[2] = {{"x", 4, {1, 8, 8, 3}, {{0}}}, {"x", 4, {1, 8, 8, 3}, {{0}}}};
  g = parse_with(&b, n, twice, 2, TG_ERROR_INVALID_ARGUMENT, "input 'x' is given two shapes");
  tg_graph_destroy(g);
  tg_input_shape negative = {"x", 4, {-1, 8, 8, 3}, {{0}}};
  g = parse_with(&b, n, &negative, 1, TG_ERROR_INVALID_ARGUMENT, "dimension 0 is -1");
  tg_graph_destroy(g);
  tg_input_shape huge = {"x", 4, {INT64_MAX, 8, 8, 3}, {{0}}};
  g = parse_with(&b, n, &huge, 1, TG_ERROR_OVERFLOW, "more elements than fit in 63 bits");
  tg_graph_destroy(g);
  /* A dynamic input dimension the file records no size for needs one: the message names the
   * input, the dimension and the library's option (not a command-line flag). */
  m.tensors[0].shape[0] = -1;
  n = tt_build(&m, &b, NULL);
  g = parse_with(&b, n, NULL, 0, TG_ERROR_INVALID_ARGUMENT,
                 "input 'x': dimension 0 is dynamic (-1 in shape_signature) and the file records no size: "
                 "give its size in tg_model_options.input_shapes (x:?x8x8x3)");
  tg_graph_destroy(g);
  g = parse_with(&b, n, &one, 1, TG_OK, NULL);
  assert_int_equal(g->tensors[0].shape[0], 1);
  tg_graph_destroy(g);
}

/* tg_model_parse_inputs: the inputs as the file declares them, whatever their dynamic sizes. */
static void inputs_are_listed_without_loading(void **state) {
  (void)state;
  static tt_buf b;
  tt_model m;
  dynamic_batch_example(&m);
  size_t n = tt_build(&m, &b, NULL);
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_model_inputs *l = NULL;
  assert_int_equal(tg_model_parse_inputs(b.data, n, "d.tflite", NULL, &l, &err), TG_OK);
  assert_int_equal(l->format, TG_MODEL_FORMAT_TFLITE);
  assert_int_equal(l->count, 1);
  assert_string_equal(l->inputs[0].name, "x");
  assert_int_equal(l->inputs[0].dtype, TG_DTYPE_FLOAT32);
  assert_true(l->inputs[0].has_shape);
  assert_int_equal(l->inputs[0].rank, 4);
  int64_t want[4] = {1, 8, 8, 3};
  for (int d = 0; d < 4; ++d) assert_int_equal(l->inputs[0].dims[d], want[d]);
  assert_int_equal(l->inputs[0].dynamic, 1u);
  assert_false(l->inputs[0].needs_shape);
  tg_model_inputs_destroy(l);
  /* No recorded size: -1 there, and a size is needed. */
  m.tensors[0].shape[0] = -1;
  n = tt_build(&m, &b, NULL);
  assert_int_equal(tg_model_parse_inputs(b.data, n, "d.tflite", NULL, &l, &err), TG_OK);
  assert_int_equal(l->inputs[0].dims[0], -1);
  assert_true(l->inputs[0].needs_shape);
  tg_model_inputs_destroy(l);
  /* Every allocation failing in turn: a clean failure, nothing leaked (cmocka checks). */
  for (size_t at = 1;; ++at) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, at);
    tg_status st = tg_model_parse_inputs(b.data, n, "d.tflite", &fa.base, &l, &err);
    if (st == TG_OK) {
      tg_model_inputs_destroy(l);
      break;
    }
    assert_int_equal(st, TG_ERROR_OUT_OF_HOST_MEMORY);
    assert_null(l);
  }
  /* A truncated file: the reader's error, naming the place. */
  assert_int_equal(tg_model_parse_inputs(b.data, 40, "d.tflite", NULL, &l, &err), TG_ERROR_PARSE);
  assert_null(l);
  assert_contains(err.message, "d.tflite");
  /* Text graphs: static inputs; usage-record CSVs: none. */
  const char *text = "tensor x 1x4x4x3 float32 input\ntensor y 1x4x4x3 float32 output\nop RELU inputs=x outputs=y\n";
  assert_int_equal(tg_model_parse_inputs(text, strlen(text), "t.graph", NULL, &l, &err), TG_OK);
  assert_int_equal(l->format, TG_MODEL_FORMAT_TEXT_GRAPH);
  assert_int_equal(l->count, 1);
  assert_int_equal(l->inputs[0].dims[3], 3);
  assert_int_equal(l->inputs[0].dynamic, 0u);
  tg_model_inputs_destroy(l);
  const char *csv = "size,first,last\n16,0,1\n";
  assert_int_equal(tg_model_parse_inputs(csv, strlen(csv), "r.csv", NULL, &l, &err), TG_OK);
  assert_int_equal(l->format, TG_MODEL_FORMAT_RECORDS_CSV);
  assert_int_equal(l->count, 0);
  tg_model_inputs_destroy(l);
  assert_int_equal(tg_model_list_inputs("/nonexistent/m.tflite", NULL, &l, &err), TG_ERROR_IO);
  assert_null(l);
}

static void data_dependent_dimensions_are_refused(void **state) {
  (void)state;
  static tt_buf b;
  tt_model m;
  /* Static input, but the custom op's output b is -1x8x8x4: its size depends on the data. */
  tt_example(&m);
  m.tensors[4].shape_in_signature = 0;
  m.signature_rank[4] = 4;
  int32_t sb[4] = {-1, 8, 8, 4};
  memcpy(m.signature[4], sb, sizeof sb);
  size_t n = tt_build(&m, &b, NULL);
  tg_graph *g = parse_with(&b, n, NULL, 0, TG_ERROR_UNSUPPORTED,
                           "tensor 4 'b' (written by op 2, MyOp): dimension 0 (?x8x8x4) is dynamic although "
                           "every input is static");
  tg_graph_destroy(g);
  /* Only a signature, -1 in it: no size at all. */
  tt_example(&m);
  m.tensors[4].shape[0] = -1;
  n = tt_build(&m, &b, NULL);
  g = parse_with(&b, n, NULL, 0, TG_ERROR_UNSUPPORTED, "the file records no size for it");
  tg_graph_destroy(g);
  /* shape and shape_signature that disagree on a static dimension: a broken file. */
  tt_example(&m);
  m.signature_rank[3] = 4;
  int32_t sa[4] = {1, 8, 7, 4};
  memcpy(m.signature[3], sa, sizeof sa);
  n = tt_build(&m, &b, NULL);
  g = parse_with(&b, n, NULL, 0, TG_ERROR_PARSE, "tensor 3: dimension 2 is 8 in shape but 7 in shape_signature");
  tg_graph_destroy(g);
}

/* Tensor `name` of the subgraph called `subgraph` in a graph laid out with control flow. */
static const tg_tensor *subgraph_tensor(const tg_graph *g, const char *subgraph, const char *name) {
  for (size_t t = 0; t < g->tensor_count; ++t) {
    const tg_tensor *x = &g->tensors[t];
    if (x->subgraph < g->flow_count && strcmp(g->subgraphs[x->subgraph].name, subgraph) == 0 &&
        strcmp(x->name, name) == 0)
      return x;
  }
  fail_msg("no tensor '%s' in %s", name, subgraph);
  return NULL;
}

/* Parse, then expect tensor `name` of `subgraph` to be 1x16 and planned. */
static void expect_planned_1x16(const tt_buf *b, size_t n, const char *subgraph, const char *name) {
  tg_graph *g = parse_with(b, n, NULL, 0, TG_OK, NULL);
  const tg_tensor *t = subgraph_tensor(g, subgraph, name);
  assert_int_equal(t->rank, 2);
  assert_int_equal(t->shape[0], 1);
  assert_int_equal(t->shape[1], 16);
  tg_lifetimes *l = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err), TG_OK);
  assert_true(l->tensors[t - g->tensors].planned);
  tg_lifetimes_destroy(l);
  tg_graph_destroy(g);
}

/* The subgraphs an IF or WHILE runs get subgraph 0's checks of dynamic dimensions: a subgraph
 * input takes the size the op passes it where the file records none; a recorded size other
 * than the one passed is refused; any other dynamic dimension must follow from a dynamic input
 * at its recorded size. Refusals name the tensor and the subgraph. */
static void subgraph_dynamic_dimensions(void **state) {
  (void)state;
  static tt_buf b;
  tt_model m;
  /* -1 in a body tensor's shape: no size recorded (it is no zero-element tensor). */
  tt_flow_example(&m, TT_WHILE);
  m.extra[1].shape[2][1] = -1;
  size_t n = tt_build(&m, &b, NULL);
  parse_with(&b, n, NULL, 0, TG_ERROR_UNSUPPORTED,
             "d.tflite (subgraph 2): tensor 2 'tensor_2' (written by op 0, RELU): dynamic dimension 1 (1x?), and "
             "the file records no size for it");
  /* The same in an IF's else branch. */
  tt_flow_example(&m, TT_IF);
  m.extra[1].shape[3][1] = -1;
  n = tt_build(&m, &b, NULL);
  parse_with(&b, n, NULL, 0, TG_ERROR_UNSUPPORTED,
             "d.tflite (subgraph 2): tensor 3 'tensor_3' (written by op 1, ADD): dynamic dimension 1 (1x?)");
  /* -1 in shape_signature only, every input of the body static: the size depends on the data. */
  tt_flow_example(&m, TT_WHILE);
  m.extra[1].signature_rank[2] = 2;
  m.extra[1].signature[2][0] = 1;
  m.extra[1].signature[2][1] = -1;
  n = tt_build(&m, &b, NULL);
  parse_with(&b, n, NULL, 0, TG_ERROR_UNSUPPORTED,
             "d.tflite (subgraph 2): tensor 2 'tensor_2' (written by op 0, RELU): dimension 1 (1x?) is dynamic "
             "although every input is static");
  /* ... and with the body's input 0 dynamic too, recorded at the size the WHILE passes: the
   * recorded sizes stand. */
  m.extra[1].signature_rank[0] = 2;
  m.extra[1].signature[0][0] = 1;
  m.extra[1].signature[0][1] = -1;
  n = tt_build(&m, &b, NULL);
  expect_planned_1x16(&b, n, "subgraph 2", "tensor_2");
  /* A subgraph input without a recorded size takes the size the WHILE passes (1x16). */
  tt_flow_example(&m, TT_WHILE);
  m.extra[0].shape[0][1] = -1;
  n = tt_build(&m, &b, NULL);
  expect_planned_1x16(&b, n, "subgraph 1", "tensor_0");
  /* A subgraph input recorded at another size than the one passed: its shapes do not hold. */
  m.extra[0].shape[0][1] = 8;
  n = tt_build(&m, &b, NULL);
  parse_with(&b, n, NULL, 0, TG_ERROR_UNSUPPORTED,
             "d.tflite (subgraph 1): input 0 'tensor_0' is 1x8, but op 1 (WHILE) passes 1x16");
  m.extra[0].signature_rank[0] = 2;
  m.extra[0].signature[0][0] = 1;
  m.extra[0].signature[0][1] = -1;
  n = tt_build(&m, &b, NULL);
  parse_with(&b, n, NULL, 0, TG_ERROR_UNSUPPORTED,
             "d.tflite (subgraph 1): input 0 'tensor_0' is 1x8, but op 1 (WHILE) passes 1x16");
  /* The IF's then branch: its inputs are the IF's arguments. */
  tt_flow_example(&m, TT_IF);
  m.extra[0].shape[1][1] = 4;
  n = tt_build(&m, &b, NULL);
  parse_with(&b, n, NULL, 0, TG_ERROR_UNSUPPORTED,
             "d.tflite (subgraph 1): input 1 'tensor_1' is 1x4, but op 1 (IF) passes 1x16");
}

/* A WHILE whose loop values start from a constant: they change every iteration, so the cond's
 * and body's tensors, the WHILE's outputs and what follows are planned, not constants. */
static void loop_values_are_never_constant(void **state) {
  (void)state;
  static tt_buf b;
  tt_model m;
  tt_flow_example(&m, TT_WHILE);
  m.nbuffers = 2;
  m.buffers[1].data_len = 64;
  m.ntensors = 7;
  m.tensors[6] = (tt_tensor){"k", 2, {1, 16}, 0, 0, 1, 0};
  m.ops[1].in[0] = m.ops[1].in[1] = 6;
  size_t n = tt_build(&m, &b, NULL);
  tg_graph *g = parse_with(&b, n, NULL, 0, TG_OK, NULL);
  tg_lifetimes *l = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err), TG_OK);
  static const struct { const char *subgraph, *name; } k_planned[] = {
      {"subgraph 1", "tensor_0"}, {"subgraph 1", "tensor_1"}, {"subgraph 2", "tensor_0"}, {"subgraph 2", "tensor_2"},
      {"subgraph 2", "tensor_4"}, {"main", "y1"}, {"main", "y2"}};
  for (size_t i = 0; i < sizeof k_planned / sizeof k_planned[0]; ++i) {
    const tg_tensor *t = subgraph_tensor(g, k_planned[i].subgraph, k_planned[i].name);
    if (!l->tensors[t - g->tensors].planned || l->tensors[t - g->tensors].constant)
      fail_msg("%s '%s' is %s", k_planned[i].subgraph, k_planned[i].name,
               l->tensors[t - g->tensors].constant ? "constant" : "not planned");
  }
  assert_true(l->tensors[subgraph_tensor(g, "main", "k") - g->tensors].constant);
  tg_lifetimes_destroy(l);
  tg_graph_destroy(g);
}

/* Input shapes for formats whose shapes are all static. */
static void input_shapes_for_static_formats(void **state) {
  (void)state;
  const char *text = "tensor x 1x4x4x3 float32 input\ntensor y 1x4x4x3 float32 output\nop RELU inputs=x outputs=y\n";
  tg_input_shape same = {"x", 4, {1, 4, 4, 3}, {{0}}}, other = {"x", 4, {2, 4, 4, 3}, {{0}}}, csv = {"x", 1, {1}, {{0}}};
  tg_model_options o = {&same, 1};
  tg_model *m = NULL;
  tg_error_info err;
  memset(&err, 0, sizeof err);
  assert_int_equal(tg_model_parse_with(text, strlen(text), "t.graph", &o, NULL, &m, &err), TG_OK);
  tg_model_destroy(m);
  o.input_shapes = &other;
  assert_int_equal(tg_model_parse_with(text, strlen(text), "t.graph", &o, NULL, &m, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_null(m);
  assert_contains(err.message, "input 'x' is 1x4x4x3 in the file, whose shapes are all static; 2x4x4x3 was given");
  o.input_shapes = &csv;
  const char *records = "size,first,last\n16,0,1\n";
  assert_int_equal(tg_model_parse_with(records, strlen(records), "r.csv", &o, NULL, &m, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_contains(err.message, "usage records, which have no inputs");
}

static void truncation_and_byte_flips(void **state) {
  (void)state;
  char path[1024];
  if (tg_test_model_path(path, sizeof path, "face_detection_short_range.tflite") == NULL) return;
  size_t length;
  unsigned char *orig = read_all(path, &length);
  unsigned char *work = malloc(length);
  assert_non_null(work);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);

  /* 1. Every prefix. */
  size_t ok = 0;
  for (size_t len = 0; len < length; ++len) ok += parse_everything(orig, len) == TG_OK;
  assert_int_equal(ok, 0);
  double t_prefix = seconds_since(&t0);

  /* 2. The tail past a cut overwritten (length kept), so parsing reaches deep into the file:
   * with zeros, with 0xFF and with a copy of the head. Stride 61 over the whole file. */
  size_t runs = 0;
  for (size_t cut = 0; cut < length; cut += 61)
    for (int fill = 0; fill < 3; ++fill) {
      memcpy(work, orig, cut);
      for (size_t i = cut; i < length; ++i)
        work[i] = fill == 0 ? 0 : fill == 1 ? 0xFF : orig[(i - cut) % (cut ? cut : 1)];
      parse_everything(work, length);
      ++runs;
    }
  double t_tail = seconds_since(&t0) - t_prefix;

  /* 3. Seeded random corruption: 1..8 bytes set to random values, or to values that are
   * dangerous as offsets and lengths, mostly in the first 16 KB and last 16 KB where the
   * flatbuffer's tables and vectors are. */
  tg_test_rng rng = {20240611u};
  static const uint8_t special[] = {0x00, 0xFF, 0x7F, 0x80, 0x01, 0xFE};
  size_t flips = 6000, outcome[4] = {0, 0, 0, 0};
  for (size_t k = 0; k < flips; ++k) {
    memcpy(work, orig, length);
    int count = (int)tg_test_rng_range(&rng, 1, 8);
    for (int j = 0; j < count; ++j) {
      size_t at;
      uint64_t where = tg_test_rng_range(&rng, 0, 3);
      if (where == 0) at = (size_t)tg_test_rng_range(&rng, 0, length - 1);
      else if (where == 1) at = (size_t)tg_test_rng_range(&rng, 0, 16383);
      else at = (size_t)tg_test_rng_range(&rng, length - 16384, length - 1);
      work[at] = tg_test_rng_range(&rng, 0, 1) ? (uint8_t)tg_test_rng_next(&rng)
                                               : special[tg_test_rng_range(&rng, 0, 5)];
    }
    tg_status st = parse_everything(work, length);
    outcome[st == TG_OK ? 0 : st == TG_ERROR_PARSE ? 1 : st == TG_ERROR_GRAPH ? 2 : 3]++;
  }
  double t_flip = seconds_since(&t0) - t_prefix - t_tail;
  fprintf(stderr,
          "hostile: %zu prefixes in %.2fs; %zu overwritten tails in %.2fs; %zu corruptions in %.2fs "
          "(ok %zu, parse %zu, graph %zu, limit/overflow %zu)\n",
          length, t_prefix, runs, t_tail, flips, t_flip, outcome[0], outcome[1], outcome[2],
          outcome[3]);
  /* The mix must exercise both the error paths and the full pipeline. */
  assert_true(outcome[0] > 0);
  assert_true(outcome[1] > 0);
  free(work);
  free(orig);
}

/* Byte flips on the tiny model reach every table of it (a real model is mostly weights). */
static void tiny_model_byte_flips(void **state) {
  (void)state;
  static tt_buf b;
  tt_model m;
  tt_example(&m);
  size_t n = tt_build(&m, &b, NULL);
  static unsigned char work[TT_CAP];
  tg_test_rng rng = {7};
  size_t ok = 0;
  /* Every byte set to each of a few dangerous values. */
  static const uint8_t special[] = {0x00, 0xFF, 0x7F, 0x80, 0x01, 0x10};
  for (size_t at = 0; at < n; ++at)
    for (size_t v = 0; v < sizeof special; ++v) {
      memcpy(work, b.data, n);
      work[at] = special[v];
      ok += parse_everything(work, n) == TG_OK;
    }
  /* And random multi-byte damage. */
  for (int k = 0; k < 20000; ++k) {
    memcpy(work, b.data, n);
    int count = (int)tg_test_rng_range(&rng, 1, 4);
    for (int j = 0; j < count; ++j)
      work[tg_test_rng_range(&rng, 0, n - 1)] = (uint8_t)tg_test_rng_next(&rng);
    ok += parse_everything(work, n) == TG_OK;
  }
  for (size_t len = 0; len < n; ++len) assert_int_not_equal(parse_everything(b.data, len), TG_OK);
  assert_true(ok > 0);
}

/* ------------------------------------------------------------------------------------------ */
/* Out of memory at every host allocation of load + lifetimes + records. */

/* Parse (from memory when `data` is set, else by loading `path`), compute lifetimes and build
 * texture_2d records (with fallbacks) and buffer records. */
static tg_status load_and_build(const char *path, const unsigned char *data, size_t length,
                                const tg_allocator *a) {
  tg_model *model = NULL;
  tg_lifetimes *l = NULL;
  tg_model_records *r2 = NULL, *r1 = NULL;
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_device_limits lim = tg_device_limits_default();
  lim.max_texture_2d_height = 512;  /* force some fallbacks, so that path allocates too */
  tg_status st = data ? tg_model_parse(data, length, path, a, &model, &err)
                      : tg_model_load(path, a, &model, &err);
  if (st == TG_OK) st = tg_graph_compute_lifetimes(model->graph, NULL, a, &l, &err);
  if (st == TG_OK)
    st = tg_model_records_create(model->graph, l, TG_STORAGE_TEXTURE_2D, TG_PRECISION_FP32,
                                 &lim, a, &r2, &err);
  if (st == TG_OK)
    st = tg_model_records_create(model->graph, l, TG_STORAGE_BUFFER, TG_PRECISION_FP16, &lim, a,
                                 &r1, &err);
  if (st == TG_OK) assert_true(r2->fallback->count > 0);
  if (st != TG_OK && err.message[0] == '\0') fail_msg("%s without a message", tg_status_name(st));
  tg_model_records_destroy(r1);
  tg_model_records_destroy(r2);
  tg_lifetimes_destroy(l);
  tg_model_destroy(model);
  return st;
}

/* Fail each allocation in turn until a run needs no failure; returns the number of sites. */
static uint64_t walk_allocations(const char *path, const unsigned char *data, size_t length,
                                 uint64_t limit) {
  uint64_t fail_at = 1;
  for (; limit == 0 || fail_at <= limit; ++fail_at) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, fail_at);
    tg_status st = load_and_build(path, data, length, &fa.base);
    if (fa.live_blocks != 0)
      fail_msg("fail_at %llu: %lld blocks leaked", (unsigned long long)fail_at, (long long)fa.live_blocks);
    if (fa.failures == 0) {
      assert_int_equal(st, TG_OK);
      break;
    }
    if (st != TG_ERROR_OUT_OF_HOST_MEMORY)
      fail_msg("fail_at %llu: %s", (unsigned long long)fail_at, tg_status_name(st));
  }
  return fail_at - 1;
}

static void out_of_memory_everywhere(void **state) {
  (void)state;
  char path[1024];
  if (tg_test_model_path(path, sizeof path, "pose_landmark_lite.tflite") == NULL) return;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* Reading the 2.8 MB file is slow under sanitizers and allocates only in its first few
   * allocations: walk those through tg_model_load, then every allocation of parsing,
   * lifetimes and records through tg_model_parse on the same bytes. */
  walk_allocations(path, NULL, 0, 32);
  size_t length;
  unsigned char *data = read_all(path, &length);
  uint64_t sites = walk_allocations(path, data, length, 0);
  free(data);
  fprintf(stderr, "out of memory: 32 load + %llu parse/lifetimes/records allocation sites in %.2fs\n",
          (unsigned long long)sites, seconds_since(&t0));
  assert_true(sites > 1000);
}

TG_TEST_MAIN(cmocka_unit_test(real_models_match_reference_records),
             cmocka_unit_test(example_model_parses), cmocka_unit_test(builtin_codes_follow_tflite),
             cmocka_unit_test(constants_from_offset_and_variables),
             cmocka_unit_test(bad_indices_name_the_op), cmocka_unit_test(bad_shapes_are_rejected),
             cmocka_unit_test(bad_structure_is_rejected),
             cmocka_unit_test(shared_objects_cannot_amplify),
             cmocka_unit_test(order_errors_come_from_lifetimes),
             cmocka_unit_test(tiny_model_byte_flips),
             cmocka_unit_test(dynamic_dimensions_need_input_shapes),
             cmocka_unit_test(inputs_are_listed_without_loading),
             cmocka_unit_test(data_dependent_dimensions_are_refused),
             cmocka_unit_test(subgraph_dynamic_dimensions),
             cmocka_unit_test(loop_values_are_never_constant),
             cmocka_unit_test(input_shapes_for_static_formats),
             cmocka_unit_test(truncation_and_byte_flips),
             cmocka_unit_test(out_of_memory_everywhere))
