/* The .onnx reader: the three PaddleOCR models at two input shapes each against shape tables
 * derived without Tangram, one-op models for every op family against shapes worked out from
 * the ONNX operator definitions, folding of shape subgraphs, the NCHW layout, and hostile
 * input (truncation at every prefix, byte flips, hostile dimensions, deep nesting, decode
 * expansion, allocation failure at every site).
 *
 * The shape tables (tests/data/onnx/<model>.shapes). How they were derived, once:
 *  1. tests/data/onnx/derive_shapes.py runs ONNX's own shape inference (the reference
 *     implementation in the `onnx` package, python3-onnx 1.12) on each model with its input
 *     fixed at two sizes: detector 1x3x640x640 and 1x3x960x736, recogniser 1x3x48x320 and
 *     1x3x48x640, classifier 1x3x48x192 and 6x3x48x192.
 *  2. ONNX's inference does not follow the recogniser's Shape -> Cast(int32) -> Slice ->
 *     Cast(int64) -> Concat -> Reshape chains (opset-9 Slice, casts of shapes), so the script
 *     evaluates those chains with numpy from the shapes inferred so far, pins each Reshape's
 *     target as a constant and infers again, until every value has a static shape.
 *  3. Each dimension is written as a formula in N, H, W fitted on the two sizes and checked to
 *     reproduce both exactly ("N,16,H/2,W/2").
 * The formulas were then checked by hand against the models' structure (node by node with the
 * weights' shapes; channel counts are the weights' first dimensions):
 *  - detector (PP-OCRv4 det: PP-LCNetV3 backbone, RSE-FPN neck, DB head): the stem is a
 *    stride-2 conv (16, then 32 channels at H/2); the stages end at strides 4, 8, 16, 32 with
 *    48, 96, 192, 384 channels, their squeeze-excitation branches pooled to 1x1; 1x1 convs
 *    give the four backbone outputs 12 (H/4), 18 (H/8), 42 (H/16), 360 (H/32); the neck maps
 *    each to 96 channels, adds them top-down after Resize x2 (scales 1,1,2,2 in the file),
 *    reduces each to 24 channels, upsamples them to H/4 (Resize x8, x4, x2) and concatenates
 *    4 x 24 = 96 channels at H/4; the head is a 3x3 conv to 24 channels at H/4 and two
 *    stride-2 ConvTransposes (kernel 2, no padding: 2 (n - 1) + 2 = 2n): 24 at H/2, then 1
 *    at H, ending in the sigmoid map 1,1,H,W. The batch is 1 at both sizes, so the table
 *    writes it as 1;
 *  - recogniser (PP-OCRv4 rec: PP-LCNetV3 with stride (2,1) stages, SVTR neck, CTC head):
 *    the input height 48 is fixed by the model, so heights are written as numbers: the stem
 *    gives 16 channels at 24 x W/2; the stages end at 12 x W/2 (64, 128), 12 x W/4 (240),
 *    6 x W/4 (480) and 3 x W/4, and the (3,2)/(3,2) average pool makes 1 x W/8; after 1x1
 *    convs to 60 and 120 channels the neck flattens to 1,120,W/8 and transposes to T = W/8
 *    tokens of 120 features; each of its two attention blocks reshapes 1,T,360 to
 *    [0, T, 3, 8, 15] (q, k, v; 8 heads of 15, the target folded from Shape -> Cast -> Slice
 *    -> Concat), transposes to 3,1,8,T,15 and forms 1,8,T,T attention; the MLP widens to 240;
 *    the tokens return to 1,120,1,T, are concatenated with the pooled features (480 + 480 =
 *    960), reduced to 60 and 120 channels, and the CTC head maps 1,T,120 to 1,T,6625;
 *  - classifier (PP-OCR mobile v2 cls, MobileNetV3 small with stride (2,1) stages): the width
 *    192 is fixed at both sizes (the batch N varies), so widths are numbers: 24 x 96 after the
 *    stem, then 12, 6, 3 and 2 rows at width 96, a 2x2 max pool to 1 x 48 with 200 channels,
 *    the global pool to N,200,1,1, the reshape (target folded from Shape -> Cast -> Slice ->
 *    Cast -> Concat) to N,200 and the 200x2 MatMul to N,2.
 * Where the tables and the structure disagree the test would fail; they do not. */
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

#ifdef TANGRAM_HAVE_ONNX
#include "model/onnx_values.h"
#include "onnx_builder.h"

static void assert_contains(const char *haystack, const char *needle) {
  if (strstr(haystack, needle) == NULL) fail_msg("'%s' does not contain '%s'", haystack, needle);
}

static unsigned char *read_all(const char *path, size_t *length) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) fail_msg("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *data = malloc((size_t)n + 1);
  assert_non_null(data);
  if (fread(data, 1, (size_t)n, f) != (size_t)n) fail_msg("cannot read %s", path);
  fclose(f);
  *length = (size_t)n;
  return data;
}

static const tg_tensor *tensor_named(const tg_graph *g, const char *name) {
  for (size_t t = 0; t < g->tensor_count; ++t)
    if (strcmp(g->tensors[t].name, name) == 0) return &g->tensors[t];
  return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Parsing everything: lifetimes and records for every storage of whatever parses. */

static tg_status parse_everything(const unsigned char *data, size_t length, const tg_model_options *o) {
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 0);
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_graph *g = (tg_graph *)(uintptr_t)1;
  tg_status st = tg_graph_parse_onnx(data, length, "fuzz.onnx", o, &fa.base, &g, &err);
  if (st == TG_OK) {
    assert_non_null(g);
    tg_lifetimes *l = NULL;
    st = tg_graph_compute_lifetimes(g, NULL, &fa.base, &l, &err);
    if (st == TG_OK) {
      tg_device_limits lim = tg_device_limits_default();
      for (int s = 0; s < TG_STORAGE_COUNT && st == TG_OK; ++s) {
        tg_model_records *m = NULL;
        st = tg_model_records_create(g, l, (tg_storage)s, TG_PRECISION_FP16, &lim, &fa.base, &m, &err);
        if (st != TG_OK) assert_null(m);
        tg_model_records_destroy(m);
      }
    }
    tg_lifetimes_destroy(l);
    tg_graph_destroy(g);
  } else {
    assert_null(g);
  }
  if (st != TG_OK) {
    if (err.message[0] == '\0') fail_msg("status %s without a message", tg_status_name(st));
    if (st != TG_ERROR_PARSE && st != TG_ERROR_GRAPH && st != TG_ERROR_LIMIT && st != TG_ERROR_OVERFLOW &&
        st != TG_ERROR_UNSUPPORTED && st != TG_ERROR_INVALID_ARGUMENT)
      fail_msg("unexpected status %s: %s", tg_status_name(st), err.message);
  }
  if (fa.live_blocks != 0) fail_msg("%lld blocks leaked (%s)", (long long)fa.live_blocks, err.message);
  return st;
}

/* Parse `m`; expect `status`, and on failure a message containing `needle`. The graph on
 * success (caller destroys). */
static tg_graph *parse_expect(const pb *m, const tg_model_options *o, tg_status status, const char *needle) {
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 0);
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_graph *g = (tg_graph *)(uintptr_t)1;
  tg_status st = tg_graph_parse_onnx(m->data, m->len, "t.onnx", o, &fa.base, &g, &err);
  if (st != status) fail_msg("expected %s, got %s (%s)", tg_status_name(status), tg_status_name(st), err.message);
  if (st != TG_OK) {
    assert_null(g);
    if (needle) assert_contains(err.message, needle);
    assert_int_equal(fa.live_blocks, 0);
    return NULL;
  }
  /* Rebuild with the default allocator for the caller to own. */
  tg_graph_destroy(g);
  assert_int_equal(fa.live_blocks, 0);
  assert_int_equal(tg_graph_parse_onnx(m->data, m->len, "t.onnx", o, NULL, &g, &err), TG_OK);
  return g;
}

/* ------------------------------------------------------------------------------------------ */
/* The PaddleOCR models against the shape tables. */

/* Evaluate a table formula ("N*W/4", "96", "H/32") at n, h, w; the division must be exact. */
static int64_t eval_formula(const char *f, int64_t n, int64_t h, int64_t w, const char *where) {
  int64_t v = 1;
  const char *p = f;
  for (;;) {
    if (*p == 'N') v *= n, ++p;
    else if (*p == 'H') v *= h, ++p;
    else if (*p == 'W') v *= w, ++p;
    else {
      char *end;
      long long k = strtoll(p, &end, 10);
      if (end == p) fail_msg("%s: bad formula '%s'", where, f);
      v *= k;
      p = end;
    }
    if (*p == '*') {
      ++p;
      continue;
    }
    break;
  }
  if (*p == '/') {
    long long d = strtoll(p + 1, NULL, 10);
    if (d <= 0 || v % d != 0) fail_msg("%s: '%s' at N=%lld H=%lld W=%lld is not whole", where, f, (long long)n,
                                       (long long)h, (long long)w);
    v /= d;
  }
  return v;
}

typedef struct model_case {
  const char *model;
  int64_t n, h, w;
  /* Facts of the graph read: tensors (values), ops (nodes less Constant and folded ones),
   * folded nodes and planned records (buffer storage, without --plan-io). */
  size_t tensors, ops, folded, records;
} model_case;

/* Counts: tensors = initializers + inputs + node outputs; ops = nodes - Constant nodes - folded
 * nodes (detector 672 - 342 - 0; recogniser 765 - 325 - 37: its 4 Shape, 23 Cast, 4 of its 10
 * Slice and 6 of its 7 Concat nodes compute shapes; classifier 471 - 250 - 6); records = ops'
 * outputs that are neither constant nor graph outputs. */
static const model_case k_models[] = {
    {"ch_PP-OCRv4_det_infer.onnx", 1, 640, 640, 673, 330, 0, 329},
    {"ch_PP-OCRv4_det_infer.onnx", 1, 960, 736, 673, 330, 0, 329},
    {"ch_PP-OCRv4_rec_infer.onnx", 1, 48, 320, 766, 403, 37, 402},
    {"ch_PP-OCRv4_rec_infer.onnx", 1, 48, 640, 766, 403, 37, 402},
    {"ch_ppocr_mobile_v2.0_cls_infer.onnx", 1, 48, 192, 472, 215, 6, 214},
    {"ch_ppocr_mobile_v2.0_cls_infer.onnx", 6, 48, 192, 472, 215, 6, 214},
};

static void check_against_table(const tg_graph *g, const model_case *mc) {
  char table[1024], stem[256];
  snprintf(stem, sizeof stem, "onnx/%s", mc->model);
  stem[strlen(stem) - 5] = '\0';
  strcat(stem, ".shapes");
  tg_test_data_path(table, sizeof table, stem);
  FILE *f = fopen(table, "r");
  if (f == NULL) fail_msg("cannot open %s", table);
  char line[1024];
  size_t checked = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n') continue;
    char name[512], dims[512];
    if (sscanf(line, "%511s %511s", name, dims) != 2) fail_msg("%s: bad line '%s'", table, line);
    const tg_tensor *t = tensor_named(g, name);
    if (t == NULL) fail_msg("%s: value '%s' is not a tensor of the graph", mc->model, name);
    int64_t want[TG_MAX_RANK];
    uint32_t rank = 0;
    if (strcmp(dims, "scalar") != 0) {
      char *save = NULL;
      for (char *tok = strtok_r(dims, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (rank == TG_MAX_RANK) fail_msg("%s: '%s' has too many dimensions", table, name);
        want[rank++] = eval_formula(tok, mc->n, mc->h, mc->w, name);
      }
    }
    int same = t->rank == rank;
    for (uint32_t d = 0; same && d < rank; ++d) same = t->shape[d] == want[d];
    if (!same) {
      char a[128] = "", b[128] = "";
      for (uint32_t d = 0; d < t->rank; ++d) snprintf(a + strlen(a), sizeof a - strlen(a), "%s%lld", d ? "x" : "", (long long)t->shape[d]);
      for (uint32_t d = 0; d < rank; ++d) snprintf(b + strlen(b), sizeof b - strlen(b), "%s%lld", d ? "x" : "", (long long)want[d]);
      fail_msg("%s at %lldx3x%lldx%lld: '%s' is %s, the table says %s", mc->model, (long long)mc->n,
               (long long)mc->h, (long long)mc->w, name, a, b);
    }
    ++checked;
  }
  fclose(f);
  /* Every value a node writes is in the table: the graph's tensors less initializers, Constant
   * outputs and the input. */
  size_t written = 0;
  for (size_t t = 0; t < g->tensor_count; ++t)
    if (!(g->tensors[t].flags & TG_TENSOR_INPUT)) ++written;
  /* Constant outputs are in the graph but not in the table; folded outputs are in both. */
  assert_true(checked <= written);
  assert_true(checked + 350 >= written || checked > 200);
}

static void real_models_match_shape_tables(void **state) {
  (void)state;
  int ran = 0;
  for (size_t k = 0; k < sizeof k_models / sizeof k_models[0]; ++k) {
    const model_case *mc = &k_models[k];
    char path[1024];
    if (tg_test_model_path(path, sizeof path, mc->model) == NULL) continue;
    ++ran;
    tg_input_shape s = {"x", 4, {mc->n, 3, mc->h, mc->w}, {{0}}};
    tg_model_options o = {&s, 1};
    tg_error_info err;
    memset(&err, 0, sizeof err);
    tg_model *model = NULL;
    tg_status st = tg_model_load_with(path, &o, NULL, &model, &err);
    if (st != TG_OK) fail_msg("%s: %s", path, err.message);
    assert_int_equal(model->format, TG_MODEL_FORMAT_ONNX);
    const tg_graph *g = model->graph;
    assert_int_equal(g->dim_order, TG_DIM_ORDER_NCHW);
    assert_int_equal(g->tensor_count, mc->tensors);
    assert_int_equal(g->op_count, mc->ops);
    assert_int_equal(g->input_count, 1);
    assert_int_equal(g->output_count, 1);
    assert_string_equal(g->tensors[g->inputs[0]].name, "x");
    check_against_table(g, mc);
    /* Folded nodes leave no shape arithmetic behind. */
    for (size_t i = 0; i < g->op_count; ++i)
      if (strcmp(g->ops[i].name, "Shape") == 0 || strcmp(g->ops[i].name, "Constant") == 0)
        fail_msg("%s: op %zu is %s", mc->model, i, g->ops[i].name);
    /* Lifetimes, records for every storage, best plans through the validator. */
    tg_lifetimes *l = NULL;
    if ((st = tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err)) != TG_OK) fail_msg("%s", err.message);
    size_t planned = 0;
    for (size_t t = 0; t < l->tensor_count; ++t) planned += l->tensors[t].planned != 0;
    assert_int_equal(planned, mc->records);
    tg_device_limits lim = tg_device_limits_default();
    for (int sto = 0; sto < TG_STORAGE_COUNT; ++sto) {
      tg_model_records *r = NULL;
      if ((st = tg_model_records_create(g, l, (tg_storage)sto, TG_PRECISION_FP16, &lim, NULL, &r, &err)) != TG_OK)
        fail_msg("%s %s: %s", mc->model, tg_storage_name((tg_storage)sto), err.message);
      assert_int_equal(r->records->count + r->fallback->count, mc->records);
      for (int mode = 0; mode < 2; ++mode) {
        if (mode == TG_MODE_OFFSETS && r->records->dims != 1) continue;
        tg_plan_options po = {0};
        po.mode = (tg_mode)mode;
        po.strategy = TG_STRATEGY_BEST;
        tg_plan *p = NULL;
        assert_int_equal(tg_plan_compute(r->records->records, r->records->count, r->records->dims, &po, NULL, &p), TG_OK);
        tg_test_assert_valid(r->records->records, r->records->count, r->records->dims, p, 1, NULL);
        tg_plan_destroy(p);
      }
      tg_model_records_destroy(r);
    }
    tg_lifetimes_destroy(l);
    tg_model_destroy(model);
  }
  if (ran == 0) skip();
}

/* The recogniser's Reshape targets come from folded shape arithmetic; its input size flows
 * into them (a wrong fold would give a wrong token count). */
static void recogniser_tokens_follow_the_width(void **state) {
  (void)state;
  char path[1024];
  if (tg_test_model_path(path, sizeof path, "ch_PP-OCRv4_rec_infer.onnx") == NULL) skip();
  for (int64_t w = 64; w <= 1024; w *= 2) {
    tg_input_shape s = {"x", 4, {1, 3, 48, w}, {{0}}};
    tg_model_options o = {&s, 1};
    tg_graph *g = NULL;
    tg_error_info err;
    memset(&err, 0, sizeof err);
    if (tg_graph_read_onnx(path, &o, NULL, &g, &err) != TG_OK) fail_msg("%s", err.message);
    /* The attention reshape [0, T, 3, 8, 15] with T = W/8 tokens; the output N, T, 6625. */
    const tg_tensor *t = tensor_named(g, "reshape2_25.tmp_0");
    assert_non_null(t);
    assert_int_equal(t->rank, 5);
    assert_int_equal(t->shape[1], w / 8);
    assert_int_equal(t->shape[2], 3);
    const tg_tensor *y = &g->tensors[g->outputs[0]];
    assert_int_equal(y->rank, 3);
    assert_int_equal(y->shape[1], w / 8);
    assert_int_equal(y->shape[2], 6625);
    tg_graph_destroy(g);
  }
}

static void real_models_need_input_shapes(void **state) {
  (void)state;
  char path[1024];
  if (tg_test_model_path(path, sizeof path, "ch_PP-OCRv4_det_infer.onnx") == NULL) skip();
  tg_model *m = NULL;
  tg_error_info err;
  memset(&err, 0, sizeof err);
  assert_int_equal(tg_model_load(path, NULL, &m, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_null(m);
  assert_contains(err.message, "input 'x' (?x3x?x?): dynamic dimensions 0 ('p2o.DynamicDimension.0'), 2");
  assert_contains(err.message, "give the sizes in tg_model_options.input_shapes (x:?x3x?x?)");
  assert_null(strstr(err.message, "--input-shape"));
  tg_input_shape s = {"x", 4, {1, 4, 640, 640}, {{0}}};
  tg_model_options o = {&s, 1};
  assert_int_equal(tg_model_load_with(path, &o, NULL, &m, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_contains(err.message, "dimension 1 is 3 in the file, not 4");
  /* A size the network cannot take: the first conv's window is larger than the padded input
   * (a 1x1 image still works: every conv is padded). */
  tg_input_shape tiny = {"x", 4, {1, 3, 0, 0}, {{0}}};
  o.input_shapes = &tiny;
  assert_int_equal(tg_model_load_with(path, &o, NULL, &m, &err), TG_ERROR_PARSE);
  assert_contains(err.message, "(Conv): spatial dimension");
}

/* ------------------------------------------------------------------------------------------ */
/* One-op models: each op's output shapes, worked out from the ONNX operator definitions. */

enum { NONE, DYN, CONST_I, CONST_F, INIT };

typedef struct case_input {
  int kind;              /* NONE: absent; DYN: a graph input; CONST_I/F: a Constant node; INIT: zeros */
  int rank;
  int64_t dims[6];
  int nvals;
  int64_t vals[8];       /* CONST_I values; CONST_F values given as integers (or scaled below) */
} case_input;

typedef struct case_attr {
  const char *name;
  int kind;              /* OB_ATTR_INT, _INTS, _FLOAT, _FLOATS, _STRING */
  int n;
  int64_t i[8];
  float f[4];
  const char *s;
} case_attr;

typedef struct op_case {
  const char *what;      /* why the expected shape is what it is */
  const char *op;
  int64_t opset;
  int nin;
  case_input in[5];
  case_attr attrs[5];
  int nout;
  int out_rank[2];
  int64_t out[2][6];
  tg_status status;      /* TG_OK, or the error expected (then `needle`) */
  const char *needle;
} op_case;

#define I(...) {__VA_ARGS__}
#define MAXI INT64_MAX
/* The table leaves unused trailing fields to zero. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const op_case k_cases[] = {
    {"Conv: floor((32 + 1 + 1 - 3) / 2) + 1 = 16, 8 filters", "Conv", 13, 2,
     {{DYN, 4, I(1, 3, 32, 32)}, {INIT, 4, I(8, 3, 3, 3)}},
     {{"pads", OB_ATTR_INTS, 4, I(1, 1, 1, 1)}, {"strides", OB_ATTR_INTS, 2, I(2, 2)}},
     1, {4}, {I(1, 8, 16, 16)}, TG_OK, NULL},
    {"Conv SAME_UPPER: ceil(33 / 2) = 17", "Conv", 13, 2,
     {{DYN, 4, I(1, 3, 33, 33)}, {INIT, 4, I(4, 3, 3, 3)}},
     {{"auto_pad", OB_ATTR_STRING, 0, I(0), {0}, "SAME_UPPER"}, {"strides", OB_ATTR_INTS, 2, I(2, 2)}},
     1, {4}, {I(1, 4, 17, 17)}, TG_OK, NULL},
    {"depthwise Conv, dilation 2: window 5, 10 - 5 + 1 = 6", "Conv", 11, 2,
     {{DYN, 4, I(1, 8, 10, 10)}, {INIT, 4, I(8, 1, 3, 3)}},
     {{"group", OB_ATTR_INT, 1, I(8)}, {"dilations", OB_ATTR_INTS, 2, I(2, 2)}},
     1, {4}, {I(1, 8, 6, 6)}, TG_OK, NULL},
    {"Conv 1-D: 100 - 5 + 1 = 96", "Conv", 13, 3,
     {{DYN, 3, I(2, 4, 100)}, {INIT, 3, I(6, 4, 5)}, {INIT, 1, I(6)}}, {{0}},
     1, {3}, {I(2, 6, 96)}, TG_OK, NULL},
    {"Conv channels differ", "Conv", 13, 2, {{DYN, 4, I(1, 3, 8, 8)}, {INIT, 4, I(4, 2, 3, 3)}}, {{0}},
     1, {4}, {I(0)}, TG_ERROR_PARSE, "input has 3 channels but the weights take 2 x group 1"},
    {"Conv window larger than the input", "Conv", 13, 2, {{DYN, 4, I(1, 3, 2, 2)}, {INIT, 4, I(4, 3, 3, 3)}}, {{0}},
     1, {4}, {I(0)}, TG_ERROR_PARSE, "window of 3 (kernel 3, dilation 1) is larger than the padded input (2)"},
    {"ConvTranspose: 2 * (5 - 1) + 1 + 3 - 2 = 10, W[1] = 2 channels", "ConvTranspose", 11, 2,
     {{DYN, 4, I(1, 4, 5, 5)}, {INIT, 4, I(4, 2, 3, 3)}},
     {{"strides", OB_ATTR_INTS, 2, I(2, 2)}, {"pads", OB_ATTR_INTS, 4, I(1, 1, 1, 1)},
      {"output_padding", OB_ATTR_INTS, 2, I(1, 1)}},
     1, {4}, {I(1, 2, 10, 10)}, TG_OK, NULL},
    {"ConvTranspose k2 s2 (the detector head): 2 * (160 - 1) + 2 = 320", "ConvTranspose", 11, 2,
     {{DYN, 4, I(1, 24, 160, 160)}, {INIT, 4, I(24, 24, 2, 2)}}, {{"strides", OB_ATTR_INTS, 2, I(2, 2)}},
     1, {4}, {I(1, 24, 320, 320)}, TG_OK, NULL},
    {"MaxPool 3/2: floor(13 / 2) + 1 = 7", "MaxPool", 12, 1, {{DYN, 4, I(1, 8, 16, 16)}},
     {{"kernel_shape", OB_ATTR_INTS, 2, I(3, 3)}, {"strides", OB_ATTR_INTS, 2, I(2, 2)}},
     1, {4}, {I(1, 8, 7, 7)}, TG_OK, NULL},
    {"MaxPool ceil_mode: ceil(13 / 2) + 1 = 8; indices too", "MaxPool", 12, 1, {{DYN, 4, I(1, 8, 16, 16)}},
     {{"kernel_shape", OB_ATTR_INTS, 2, I(3, 3)}, {"strides", OB_ATTR_INTS, 2, I(2, 2)}, {"ceil_mode", OB_ATTR_INT, 1, I(1)}},
     2, {4, 4}, {I(1, 8, 8, 8), I(1, 8, 8, 8)}, TG_OK, NULL},
    {"AveragePool (3,2)/(3,2), the recogniser's: 3 -> 1, 40 -> 20", "AveragePool", 11, 1, {{DYN, 4, I(1, 8, 3, 40)}},
     {{"kernel_shape", OB_ATTR_INTS, 2, I(3, 2)}, {"strides", OB_ATTR_INTS, 2, I(3, 2)}},
     1, {4}, {I(1, 8, 1, 20)}, TG_OK, NULL},
    {"GlobalAveragePool keeps N and C", "GlobalAveragePool", 11, 1, {{DYN, 4, I(2, 8, 7, 9)}}, {{0}},
     1, {4}, {I(2, 8, 1, 1)}, TG_OK, NULL},
    {"BatchNormalization keeps the shape", "BatchNormalization", 15, 5,
     {{DYN, 4, I(1, 16, 8, 8)}, {INIT, 1, I(16)}, {INIT, 1, I(16)}, {INIT, 1, I(16)}, {INIT, 1, I(16)}}, {{0}},
     1, {4}, {I(1, 16, 8, 8)}, TG_OK, NULL},
    {"HardSigmoid keeps the shape", "HardSigmoid", 11, 1, {{DYN, 3, I(2, 3, 4)}},
     {{"alpha", OB_ATTR_FLOAT, 0, I(0), {0.2f}}}, 1, {3}, {I(2, 3, 4)}, TG_OK, NULL},
    {"Add broadcasts [2,1,4] with [3,1] to [2,3,4]", "Add", 13, 2, {{DYN, 3, I(2, 1, 4)}, {INIT, 2, I(3, 1)}}, {{0}},
     1, {3}, {I(2, 3, 4)}, TG_OK, NULL},
    {"Mul by a scalar", "Mul", 13, 2, {{DYN, 4, I(1, 3, 4, 4)}, {CONST_F, 0, I(0), 1, I(3)}}, {{0}},
     1, {4}, {I(1, 3, 4, 4)}, TG_OK, NULL},
    {"Sub of [2,3] and [4] does not broadcast", "Sub", 13, 2, {{DYN, 2, I(2, 3)}, {INIT, 1, I(4)}}, {{0}},
     1, {2}, {I(0)}, TG_ERROR_PARSE, "do not broadcast (dimension 1: 3 vs 4)"},
    {"Pow broadcasts its exponent", "Pow", 13, 2, {{DYN, 3, I(1, 40, 120)}, {CONST_F, 0, I(0), 1, I(2)}}, {{0}},
     1, {3}, {I(1, 40, 120)}, TG_OK, NULL},
    {"Sqrt keeps the shape", "Sqrt", 13, 1, {{DYN, 3, I(1, 40, 1)}}, {{0}}, 1, {3}, {I(1, 40, 1)}, TG_OK, NULL},
    {"Clip (opset 11: bounds as inputs) keeps the shape", "Clip", 11, 3,
     {{DYN, 2, I(5, 7)}, {CONST_F, 0, I(0), 1, I(0)}, {CONST_F, 0, I(0), 1, I(6)}}, {{0}},
     1, {2}, {I(5, 7)}, TG_OK, NULL},
    {"Where broadcasts three inputs", "Where", 16, 3, {{DYN, 3, I(2, 1, 1)}, {INIT, 2, I(3, 1)}, {INIT, 1, I(4)}}, {{0}},
     1, {3}, {I(2, 3, 4)}, TG_OK, NULL},
    {"Equal gives booleans of the broadcast shape", "Equal", 13, 2, {{DYN, 2, I(4, 1)}, {INIT, 1, I(5)}}, {{0}},
     1, {2}, {I(4, 5)}, TG_OK, NULL},
    {"Concat on axis -3 (= 1): 3 + 5", "Concat", 13, 2, {{DYN, 4, I(1, 3, 4, 4)}, {INIT, 4, I(1, 5, 4, 4)}},
     {{"axis", OB_ATTR_INT, 1, I(-3)}}, 1, {4}, {I(1, 8, 4, 4)}, TG_OK, NULL},
    {"Concat of different ranks", "Concat", 13, 2, {{DYN, 2, I(3, 4)}, {INIT, 1, I(4)}},
     {{"axis", OB_ATTR_INT, 1, I(0)}}, 1, {2}, {I(0)}, TG_ERROR_PARSE, "input 1 has rank 1, input 0 rank 2"},
    {"Split (opset 13: sizes as input) 6 -> 2 + 4", "Split", 13, 2, {{DYN, 3, I(1, 6, 4)}, {CONST_I, 1, I(2), 2, I(2, 4)}},
     {{"axis", OB_ATTR_INT, 1, I(1)}}, 2, {3, 3}, {I(1, 2, 4), I(1, 4, 4)}, TG_OK, NULL},
    {"Split into equal parts: 9 / 2 does not divide", "Split", 11, 1, {{DYN, 2, I(9, 2)}}, {{0}},
     2, {2, 2}, {I(0), I(0)}, TG_ERROR_PARSE, "dimension 9 does not split into 2 equal parts"},
    {"Slice (inputs): axis 1 from 0 by 2 of 3 -> 2; axis 3 from 5 to -5 of 320 -> 310", "Slice", 13, 5,
     {{DYN, 4, I(1, 3, 48, 320)}, {CONST_I, 1, I(2), 2, I(0, 5)}, {CONST_I, 1, I(2), 2, I(MAXI, -5)},
      {CONST_I, 1, I(2), 2, I(1, 3)}, {CONST_I, 1, I(2), 2, I(2, 1)}}, {{0}},
     1, {4}, {I(1, 2, 48, 310)}, TG_OK, NULL},
    {"Slice backwards: from -1 (9) towards INT64_MIN (clamped to -1) by -3: 9, 6, 3, 0", "Slice", 13, 5,
     {{DYN, 1, I(10)}, {CONST_I, 1, I(1), 1, I(-1)}, {CONST_I, 1, I(1), 1, I(INT64_MIN)}, {NONE, 0, I(0)},
      {CONST_I, 1, I(1), 1, I(-3)}}, {{0}},
     1, {1}, {I(4)}, TG_OK, NULL},
    {"Slice (opset 9 attributes): rows 1..3 of 5", "Slice", 9, 1, {{DYN, 2, I(5, 2)}},
     {{"starts", OB_ATTR_INTS, 1, I(1)}, {"ends", OB_ATTR_INTS, 1, I(3)}, {"axes", OB_ATTR_INTS, 1, I(0)}},
     1, {2}, {I(2, 2)}, TG_OK, NULL},
    {"Slice with step 0", "Slice", 13, 5, {{DYN, 1, I(10)}, {CONST_I, 1, I(1), 1, I(0)}, {CONST_I, 1, I(1), 1, I(5)},
      {NONE, 0, I(0)}, {CONST_I, 1, I(1), 1, I(0)}}, {{0}}, 1, {1}, {I(0)}, TG_ERROR_PARSE, "step is 0"},
    {"Reshape [2,3,4] to [0,-1]: 0 copies 2, -1 takes 12", "Reshape", 13, 2, {{DYN, 3, I(2, 3, 4)}, {CONST_I, 1, I(2), 2, I(0, -1)}}, {{0}},
     1, {2}, {I(2, 12)}, TG_OK, NULL},
    {"Reshape to a different element count", "Reshape", 13, 2, {{DYN, 2, I(2, 3)}, {CONST_I, 1, I(2), 2, I(4, 2)}}, {{0}},
     1, {2}, {I(0)}, TG_ERROR_PARSE, "cannot reshape 2x3 (6 elements) to 4x2"},
    {"Reshape with a runtime target", "Reshape", 13, 2, {{DYN, 2, I(2, 3)}, {DYN, 1, I(2)}}, {{0}},
     1, {2}, {I(0)}, TG_ERROR_UNSUPPORTED, "needs the values of input 1 'in1' (shape) to know its output shape, and they are computed at run time"},
    {"Reshape to 2^40 x 2^40 of 4 elements", "Reshape", 13, 2, {{DYN, 1, I(4)}, {CONST_I, 1, I(2), 2, I(1LL << 40, 1LL << 40)}}, {{0}},
     1, {2}, {I(0)}, TG_ERROR_OVERFLOW, "target shape has more elements than fit in 63 bits"},
    {"Transpose [0,3,1,2]", "Transpose", 13, 1, {{DYN, 4, I(1, 2, 3, 4)}}, {{"perm", OB_ATTR_INTS, 4, I(0, 3, 1, 2)}},
     1, {4}, {I(1, 4, 2, 3)}, TG_OK, NULL},
    {"Transpose without perm reverses", "Transpose", 13, 1, {{DYN, 3, I(2, 3, 4)}}, {{0}}, 1, {3}, {I(4, 3, 2)}, TG_OK, NULL},
    {"Transpose with a repeated axis", "Transpose", 13, 1, {{DYN, 3, I(2, 3, 4)}}, {{"perm", OB_ATTR_INTS, 3, I(0, 0, 1)}},
     1, {3}, {I(0)}, TG_ERROR_PARSE, "perm is not a permutation of 0..2"},
    {"Squeeze axis 0 (opset 13 input)", "Squeeze", 13, 2, {{DYN, 4, I(1, 3, 1, 5)}, {CONST_I, 1, I(1), 1, I(0)}}, {{0}},
     1, {3}, {I(3, 1, 5)}, TG_OK, NULL},
    {"Squeeze without axes drops every 1", "Squeeze", 11, 1, {{DYN, 4, I(1, 3, 1, 5)}}, {{0}}, 1, {2}, {I(3, 5)}, TG_OK, NULL},
    {"Squeeze of a dimension that is not 1", "Squeeze", 11, 1, {{DYN, 2, I(2, 3)}}, {{"axes", OB_ATTR_INTS, 1, I(1)}},
     1, {1}, {I(0)}, TG_ERROR_PARSE, "cannot squeeze dimension 1 of size 3"},
    {"Unsqueeze axes 0 and -1 of a rank-4 result", "Unsqueeze", 13, 2, {{DYN, 2, I(3, 5)}, {CONST_I, 1, I(2), 2, I(0, -1)}}, {{0}},
     1, {4}, {I(1, 3, 5, 1)}, TG_OK, NULL},
    {"Unsqueeze (opset 11 attribute)", "Unsqueeze", 11, 1, {{DYN, 1, I(7)}}, {{"axes", OB_ATTR_INTS, 1, I(1)}},
     1, {2}, {I(7, 1)}, TG_OK, NULL},
    {"Flatten at axis 2: 2*3, 4*5", "Flatten", 13, 1, {{DYN, 4, I(2, 3, 4, 5)}}, {{"axis", OB_ATTR_INT, 1, I(2)}},
     1, {2}, {I(6, 20)}, TG_OK, NULL},
    {"Flatten at axis 0: 1, everything", "Flatten", 13, 1, {{DYN, 4, I(2, 3, 4, 5)}}, {{"axis", OB_ATTR_INT, 1, I(0)}},
     1, {2}, {I(1, 120)}, TG_OK, NULL},
    {"Gemm with transB: [4,8] x [16,8]^T", "Gemm", 13, 3, {{DYN, 2, I(4, 8)}, {INIT, 2, I(16, 8)}, {INIT, 1, I(16)}},
     {{"transB", OB_ATTR_INT, 1, I(1)}}, 1, {2}, {I(4, 16)}, TG_OK, NULL},
    {"Gemm inner dimensions differ", "Gemm", 13, 2, {{DYN, 2, I(4, 8)}, {INIT, 2, I(7, 16)}}, {{0}},
     1, {2}, {I(0)}, TG_ERROR_PARSE, "inner dimensions differ (8 vs 7)"},
    {"MatMul batches broadcast: [2,1,3,4] x [5,4,6]", "MatMul", 13, 2, {{DYN, 4, I(2, 1, 3, 4)}, {INIT, 3, I(5, 4, 6)}}, {{0}},
     1, {4}, {I(2, 5, 3, 6)}, TG_OK, NULL},
    {"MatMul of a vector: [4] x [4,6] = [6]", "MatMul", 13, 2, {{DYN, 1, I(4)}, {INIT, 2, I(4, 6)}}, {{0}},
     1, {1}, {I(6)}, TG_OK, NULL},
    {"MatMul by a vector: [3,4] x [4] = [3]", "MatMul", 13, 2, {{DYN, 2, I(3, 4)}, {INIT, 1, I(4)}}, {{0}},
     1, {1}, {I(3)}, TG_OK, NULL},
    {"Softmax keeps the shape", "Softmax", 13, 1, {{DYN, 4, I(1, 8, 40, 40)}}, {{"axis", OB_ATTR_INT, 1, I(3)}},
     1, {4}, {I(1, 8, 40, 40)}, TG_OK, NULL},
    {"LayerNormalization: Y like X, Mean [2,5,1]", "LayerNormalization", 17, 3,
     {{DYN, 3, I(2, 5, 8)}, {INIT, 1, I(8)}, {INIT, 1, I(8)}}, {{0}},
     2, {3, 3}, {I(2, 5, 8), I(2, 5, 1)}, TG_OK, NULL},
    {"Resize by scales (1,1,2,2): 5x7 -> 10x14", "Resize", 11, 3,
     {{DYN, 4, I(1, 3, 5, 7)}, {CONST_F, 1, I(0), 0, I(0)}, {CONST_F, 1, I(4), 4, I(1, 1, 2, 2)}}, {{0}},
     1, {4}, {I(1, 3, 10, 14)}, TG_OK, NULL},
    {"Resize to sizes (1,3,9,9)", "Resize", 13, 4,
     {{DYN, 4, I(1, 3, 5, 7)}, {NONE, 0, I(0)}, {NONE, 0, I(0)}, {CONST_I, 1, I(4), 4, I(1, 3, 9, 9)}}, {{0}},
     1, {4}, {I(1, 3, 9, 9)}, TG_OK, NULL},
    {"Resize (opset 10: X, scales) by 8", "Resize", 10, 2, {{DYN, 4, I(1, 96, 20, 20)}, {CONST_F, 1, I(4), 4, I(1, 1, 8, 8)}}, {{0}},
     1, {4}, {I(1, 96, 160, 160)}, TG_OK, NULL},
    {"Upsample (opset 9: scales input) by 2", "Upsample", 9, 2, {{DYN, 4, I(1, 4, 3, 5)}, {CONST_F, 1, I(4), 4, I(1, 1, 2, 2)}}, {{0}},
     1, {4}, {I(1, 4, 6, 10)}, TG_OK, NULL},
    {"Pad (opset 11: pads input) 1,2 before and 3,4 after H, W: 5+1+3, 5+2+4", "Pad", 11, 2,
     {{DYN, 4, I(1, 3, 5, 5)}, {CONST_I, 1, I(8), 8, I(0, 0, 1, 2, 0, 0, 3, 4)}}, {{0}},
     1, {4}, {I(1, 3, 9, 11)}, TG_OK, NULL},
    {"Pad (opset 2 attribute), negative pads crop", "Pad", 2, 1, {{DYN, 2, I(6, 6)}},
     {{"pads", OB_ATTR_INTS, 4, I(-1, 0, -2, 1)}}, 1, {2}, {I(3, 7)}, TG_OK, NULL},
    {"ReduceMean over the last axis, kept", "ReduceMean", 13, 1, {{DYN, 3, I(2, 5, 8)}}, {{"axes", OB_ATTR_INTS, 1, I(-1)}},
     1, {3}, {I(2, 5, 1)}, TG_OK, NULL},
    {"ReduceMean (opset 18: axes input), not kept", "ReduceMean", 18, 2, {{DYN, 3, I(2, 5, 8)}, {CONST_I, 1, I(1), 1, I(1)}},
     {{"keepdims", OB_ATTR_INT, 1, I(0)}}, 1, {2}, {I(2, 8)}, TG_OK, NULL},
    {"ReduceL2 over axis 0", "ReduceL2", 13, 1, {{DYN, 2, I(3, 4)}}, {{"axes", OB_ATTR_INTS, 1, I(0)}},
     1, {2}, {I(1, 4)}, TG_OK, NULL},
    {"ReduceSum over everything", "ReduceSum", 13, 1, {{DYN, 3, I(2, 5, 8)}}, {{"keepdims", OB_ATTR_INT, 1, I(0)}},
     1, {0}, {I(0)}, TG_OK, NULL},
    {"Shape of a rank-3 tensor: 3 values", "Shape", 13, 1, {{DYN, 3, I(2, 3, 4)}}, {{0}}, 1, {1}, {I(3)}, TG_OK, NULL},
    {"Shape from 1 (opset 15): 2 values", "Shape", 15, 1, {{DYN, 3, I(2, 3, 4)}}, {{"start", OB_ATTR_INT, 1, I(1)}},
     1, {1}, {I(2)}, TG_OK, NULL},
    {"Gather 2 indices on axis 1: [5,2,7]", "Gather", 13, 2, {{DYN, 3, I(5, 6, 7)}, {CONST_I, 1, I(2), 2, I(0, 5)}},
     {{"axis", OB_ATTR_INT, 1, I(1)}}, 1, {3}, {I(5, 2, 7)}, TG_OK, NULL},
    {"Gather a scalar index drops the axis", "Gather", 13, 2, {{DYN, 3, I(5, 6, 7)}, {CONST_I, 0, I(0), 1, I(-1)}},
     {{0}}, 1, {2}, {I(6, 7)}, TG_OK, NULL},
    {"Gather with an index out of range", "Gather", 13, 2, {{DYN, 2, I(5, 6)}, {CONST_I, 1, I(1), 1, I(5)}}, {{0}},
     1, {2}, {I(0)}, TG_ERROR_PARSE, "index 5 is out of range for dimension 5"},
    {"Cast keeps the shape", "Cast", 13, 1, {{DYN, 2, I(3, 4)}}, {{"to", OB_ATTR_INT, 1, I(7)}}, 1, {2}, {I(3, 4)}, TG_OK, NULL},
    {"Expand [3,1] to [2,1,6]: [2,3,6]", "Expand", 13, 2, {{DYN, 2, I(3, 1)}, {CONST_I, 1, I(3), 3, I(2, 1, 6)}}, {{0}},
     1, {3}, {I(2, 3, 6)}, TG_OK, NULL},
    {"Tile [2,3] by [2,2]", "Tile", 13, 2, {{DYN, 2, I(2, 3)}, {CONST_I, 1, I(2), 2, I(2, 2)}}, {{0}}, 1, {2}, {I(4, 6)}, TG_OK, NULL},
    {"Tile by 2^62 overflows", "Tile", 13, 2, {{DYN, 1, I(3)}, {CONST_I, 1, I(1), 1, I(1LL << 62)}}, {{0}},
     1, {1}, {I(0)}, TG_ERROR_OVERFLOW, "negative or overflows"},
    {"DepthToSpace by 2: 8 channels -> 2, 2x3 -> 4x6", "DepthToSpace", 13, 1, {{DYN, 4, I(1, 8, 2, 3)}},
     {{"blocksize", OB_ATTR_INT, 1, I(2)}}, 1, {4}, {I(1, 2, 4, 6)}, TG_OK, NULL},
    {"ArgMax on axis 1, not kept", "ArgMax", 13, 1, {{DYN, 3, I(2, 5, 3)}},
     {{"axis", OB_ATTR_INT, 1, I(1)}, {"keepdims", OB_ATTR_INT, 1, I(0)}}, 1, {2}, {I(2, 3)}, TG_OK, NULL},
    {"TopK 2 of the last axis: values and indices", "TopK", 11, 2, {{DYN, 2, I(3, 7)}, {CONST_I, 1, I(1), 1, I(2)}}, {{0}},
     2, {2, 2}, {I(3, 2), I(3, 2)}, TG_OK, NULL},
    {"Dropout: output and mask", "Dropout", 12, 1, {{DYN, 2, I(3, 7)}}, {{0}}, 2, {2, 2}, {I(3, 7), I(3, 7)}, TG_OK, NULL},
    {"NonZero depends on the data", "NonZero", 13, 1, {{DYN, 2, I(3, 7)}}, {{0}}, 1, {2}, {I(0)},
     TG_ERROR_UNSUPPORTED, "the output size depends on the input data"},
    /* Hostile sizes reaching the inference: every sum and product is checked. */
    {"Concat of two 2^62 dimensions", "Concat", 13, 2, {{DYN, 1, I(1LL << 62)}, {DYN, 1, I(1LL << 62)}},
     {{"axis", OB_ATTR_INT, 1, I(0)}}, 1, {1}, {I(0)}, TG_ERROR_OVERFLOW, "concatenated dimension overflows"},
    {"Conv with a stride of 2^40", "Conv", 13, 2, {{DYN, 4, I(1, 3, 8, 8)}, {INIT, 4, I(4, 3, 1, 1)}},
     {{"strides", OB_ATTR_INTS, 2, I(1LL << 40, 1)}}, 1, {4}, {I(0)}, TG_ERROR_PARSE, "each must be in 1..2^31"},
    {"Pad by 2^61", "Pad", 11, 2, {{DYN, 1, I(4)}, {CONST_I, 1, I(2), 2, I(1LL << 61, 0)}}, {{0}},
     1, {1}, {I(0)}, TG_ERROR_PARSE, "are out of range"},
    {"Resize by 2^40 of 2^30", "Resize", 13, 3, {{DYN, 2, I(1, 1LL << 30)}, {NONE, 0, I(0)}, {CONST_F, 1, I(2), 2, I(1, 1LL << 40)}},
     {{0}}, 1, {2}, {I(0)}, TG_ERROR_PARSE, "gives an invalid size"},
    {"Range of 2^62 elements", "Range", 13, 3, {{CONST_I, 0, I(0), 1, I(0)}, {CONST_I, 0, I(0), 1, I(MAXI)}, {CONST_I, 0, I(0), 1, I(1)}},
     {{0}}, 1, {1}, {I(0)}, TG_ERROR_OVERFLOW, "dimension 0 would be 9223372036854775807"},
    {"an op type without shape inference", "MyOp", 13, 1, {{DYN, 2, I(3, 7)}}, {{0}}, 1, {2}, {I(0)},
     TG_ERROR_UNSUPPORTED, "node 0 'n0' (MyOp): no shape inference for op type 'MyOp'"},
};
#pragma GCC diagnostic pop

/* Build the one-node model of `c`: inputs in0.. (graph inputs, initializers or Constant
 * nodes), outputs y0.. */
static void build_case(const op_case *c, pb *model) {
  pb graph = {0};
  const char *in_names[5] = {"in0", "in1", "in2", "in3", "in4"};
  const char *names[5];
  const char *out_names[2] = {"y0", "y1"};
  for (int k = 0; k < c->nin; ++k) {
    const case_input *x = &c->in[k];
    names[k] = x->kind == NONE ? "" : in_names[k];
    int64_t count = 1;
    for (int d = 0; d < x->rank; ++d) count *= x->dims[d];
    switch (x->kind) {
      case DYN: ob_value_info(&graph, 11, in_names[k], OB_FLOAT, x->rank, x->dims); break;
      case CONST_I: ob_const_ints(&graph, in_names[k], x->rank, x->dims, x->vals, (size_t)x->nvals); break;
      case CONST_F: ob_const_floats(&graph, in_names[k], x->rank, x->dims, x->vals, (size_t)x->nvals); break;
      case INIT: ob_initializer(&graph, in_names[k], OB_FLOAT, x->rank, x->dims, NULL, (size_t)count); break;
      default: break;
    }
  }
  pb attrs = {0};
  for (int a = 0; a < 5 && c->attrs[a].name; ++a) {
    const case_attr *at = &c->attrs[a];
    switch (at->kind) {
      case OB_ATTR_INT: ob_attr_int(&attrs, at->name, at->i[0]); break;
      case OB_ATTR_INTS: ob_attr_ints(&attrs, at->name, at->i, at->n); break;
      case OB_ATTR_FLOAT: ob_attr_float(&attrs, at->name, at->f[0]); break;
      case OB_ATTR_FLOATS: ob_attr_floats(&attrs, at->name, at->f, at->n); break;
      case OB_ATTR_STRING: ob_attr_string(&attrs, at->name, at->s); break;
      default: break;
    }
  }
  ob_node(&graph, c->op, "n0", names, c->nin, out_names, c->nout, &attrs);
  for (int k = 0; k < c->nout; ++k) ob_value_info(&graph, 12, out_names[k], OB_FLOAT, -1, NULL);
  ob_model(model, &graph, c->opset);
}

static void every_op_family(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; ++i) {
    const op_case *c = &k_cases[i];
    pb model = {0};
    build_case(c, &model);
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, 0);
    tg_error_info err;
    memset(&err, 0, sizeof err);
    tg_graph *g = NULL;
    tg_status st = tg_graph_parse_onnx(model.data, model.len, "t.onnx", NULL, &fa.base, &g, &err);
    if (st != c->status)
      fail_msg("%s (%s): expected %s, got %s: %s", c->what, c->op, tg_status_name(c->status), tg_status_name(st), err.message);
    if (st != TG_OK) {
      assert_null(g);
      assert_contains(err.message, c->needle);
    } else {
      for (int k = 0; k < c->nout; ++k) {
        const tg_tensor *y = tensor_named(g, k ? "y1" : "y0");
        assert_non_null(y);
        int same = (int)y->rank == c->out_rank[k];
        for (int d = 0; same && d < c->out_rank[k]; ++d) same = y->shape[d] == c->out[k][d];
        if (!same) {
          char a[128] = "";
          for (uint32_t d = 0; d < y->rank; ++d) snprintf(a + strlen(a), sizeof a - strlen(a), "%s%lld", d ? "x" : "", (long long)y->shape[d]);
          fail_msg("%s (%s): output %d is %s", c->what, c->op, k, a[0] ? a : "scalar");
        }
      }
    }
    tg_graph_destroy(g);
    assert_int_equal(fa.live_blocks, 0);
    pb_free(&model);
  }
  /* The supported list names the families above, in strcmp order (the reader searches it). */
  size_t n = 0;
  int conv = 0, resize = 0;
  for (const char *op; (op = tg_onnx_supported_op(n)) != NULL; ++n) {
    conv |= strcmp(op, "Conv") == 0;
    resize |= strcmp(op, "Resize") == 0;
    if (n > 0 && strcmp(tg_onnx_supported_op(n - 1), op) >= 0) fail_msg("'%s' before '%s'", tg_onnx_supported_op(n - 1), op);
  }
  assert_true(n > 100);
  assert_true(conv && resize);
}

/* ------------------------------------------------------------------------------------------ */
/* A small network: dynamic input, initializers, folding, op names, dtypes, layout. */

/* x[N,3,H,W] -> Conv(8, 3x3, pad 1) -> Relu -> flatten as PyTorch exports it:
 *   Shape(x1) -> Gather(0) -> Unsqueeze(0) -> Concat(., [-1]) -> Reshape(x1, .) -> MatMul(w2) -> y
 * and the PaddleOCR form on a second branch: Shape -> Cast(int32) -> Slice[0:1] ->
 * Cast(int64) -> Concat(., [-1]) -> Reshape. */
static void build_small_net(pb *model, int opset, int dynamic) {
  pb graph = {0};
  int64_t xd[4] = {dynamic ? -1 : 2, 3, dynamic ? -1 : 8, dynamic ? -1 : 8};
  ob_value_info(&graph, 11, "x", OB_FLOAT, 4, xd);
  int64_t wd[4] = {8, 3, 3, 3}, w2d[2] = {512, 10};
  ob_initializer(&graph, "w", OB_FLOAT, 4, wd, NULL, 8 * 3 * 3 * 3);
  ob_initializer(&graph, "w2", OB_FLOAT, 2, w2d, NULL, 512 * 10);
  pb a = {0};
  int64_t pads[4] = {1, 1, 1, 1};
  ob_attr_ints(&a, "pads", pads, 4);
  const char *conv_in[2] = {"x", "w"}, *conv_out[1] = {"c"};
  ob_node(&graph, "Conv", "conv", conv_in, 2, conv_out, 1, &a);
  const char *relu_in[1] = {"c"}, *relu_out[1] = {"r"};
  ob_node(&graph, "Relu", "relu", relu_in, 1, relu_out, 1, NULL);
  const char *s_in[1] = {"r"}, *s_out[1] = {"s"};
  ob_node(&graph, "Shape", "shape", s_in, 1, s_out, 1, NULL);
  int64_t one = 1, zero = 0, minus1 = -1;
  ob_const_ints(&graph, "i0", 0, NULL, &zero, 1);
  const char *g_in[2] = {"s", "i0"}, *g_out[1] = {"n"};
  ob_node(&graph, "Gather", "gather", g_in, 2, g_out, 1, NULL);
  const char *u_out[1] = {"n1"};
  if (opset >= 13) {
    ob_const_ints(&graph, "ax", 1, &one, &zero, 1);
    const char *u_in[2] = {"n", "ax"};
    ob_node(&graph, "Unsqueeze", "unsq", u_in, 2, u_out, 1, NULL);
  } else {
    pb ua = {0};
    ob_attr_ints(&ua, "axes", &zero, 1);
    const char *u_in[1] = {"n"};
    ob_node(&graph, "Unsqueeze", "unsq", u_in, 1, u_out, 1, &ua);
  }
  ob_const_ints(&graph, "m1", 1, &one, &minus1, 1);
  pb ca = {0};
  ob_attr_int(&ca, "axis", 0);
  const char *c_in[2] = {"n1", "m1"}, *c_out[1] = {"target"};
  ob_node(&graph, "Concat", "concat", c_in, 2, c_out, 1, &ca);
  const char *r_in[2] = {"r", "target"}, *r_out[1] = {"flat"};
  ob_node(&graph, "Reshape", "reshape", r_in, 2, r_out, 1, NULL);
  const char *m_in[2] = {"flat", "w2"}, *m_out[1] = {"y"};
  ob_node(&graph, "MatMul", "fc", m_in, 2, m_out, 1, NULL);
  /* The PaddleOCR form, on the Relu output too. */
  const char *s2_out[1] = {"s2"}, *c32_in[1] = {"s2"}, *c32_out[1] = {"s2i"};
  ob_node(&graph, "Shape", "shape2", s_in, 1, s2_out, 1, NULL);
  pb ta = {0};
  ob_attr_int(&ta, "to", 6);
  ob_node(&graph, "Cast", "cast32", c32_in, 1, c32_out, 1, &ta);
  const char *sl_out[1] = {"batch"};
  if (opset >= 10) {
    int64_t starts = 0, ends = 1;
    ob_const_ints(&graph, "st", 1, &one, &starts, 1);
    ob_const_ints(&graph, "en", 1, &one, &ends, 1);
    const char *sl_in[3] = {"s2i", "st", "en"};
    ob_node(&graph, "Slice", "slice", sl_in, 3, sl_out, 1, NULL);
  } else {
    pb sa = {0};
    int64_t starts = 0, ends = 1;
    ob_attr_ints(&sa, "starts", &starts, 1);
    ob_attr_ints(&sa, "ends", &ends, 1);
    ob_attr_ints(&sa, "axes", &zero, 1);
    const char *sl_in[1] = {"s2i"};
    ob_node(&graph, "Slice", "slice", sl_in, 1, sl_out, 1, &sa);
  }
  pb tb = {0};
  ob_attr_int(&tb, "to", 7);
  const char *c64_in[1] = {"batch"}, *c64_out[1] = {"batch64"};
  ob_node(&graph, "Cast", "cast64", c64_in, 1, c64_out, 1, &tb);
  pb cb = {0};
  ob_attr_int(&cb, "axis", 0);
  const char *c2_in[2] = {"batch64", "m1"}, *c2_out[1] = {"target2"};
  ob_node(&graph, "Concat", "concat2", c2_in, 2, c2_out, 1, &cb);
  const char *r2_in[2] = {"r", "target2"}, *r2_out[1] = {"flat2"};
  ob_node(&graph, "Reshape", "reshape2", r2_in, 2, r2_out, 1, NULL);
  ob_value_info(&graph, 12, "y", OB_FLOAT, -1, NULL);
  ob_value_info(&graph, 12, "flat2", OB_FLOAT, -1, NULL);
  ob_model(model, &graph, opset);
}

/* Old exporters list every initializer among the graph inputs too: those are constants with a
 * default, not inputs an engine feeds, so the listing leaves them out (in any order, many). */
static void inputs_leave_out_initializers(void **state) {
  (void)state;
  pb graph = {0};
  int64_t xd[2] = {-1, 16}, wd[2] = {16, 4};
  enum { K = 300 };
  char names[K][16];
  for (int k = K - 1; k >= 0; --k) {
    snprintf(names[k], sizeof names[k], "w%03d", k);
    ob_value_info(&graph, 11, names[k], OB_FLOAT, 2, wd);
    if (k == K / 2) ob_value_info(&graph, 11, "x", OB_FLOAT, 2, xd);
  }
  for (int k = 0; k < K; ++k) ob_initializer(&graph, names[k], OB_FLOAT, 2, wd, NULL, 16 * 4);
  const char *in[2] = {"x", "w000"}, *out[1] = {"y"};
  ob_node(&graph, "MatMul", "mm", in, 2, out, 1, NULL);
  ob_value_info(&graph, 12, "y", OB_FLOAT, -1, NULL);
  pb model = {0};
  ob_model(&model, &graph, 13);
  tg_model_inputs *li = NULL;
  tg_error_info err;
  memset(&err, 0, sizeof err);
  assert_int_equal(tg_model_parse_inputs(model.data, model.len, "init.onnx", NULL, &li, &err), TG_OK);
  assert_int_equal(li->count, 1);
  assert_string_equal(li->inputs[0].name, "x");
  assert_int_equal(li->inputs[0].dims[0], -1);
  assert_int_equal(li->inputs[0].dims[1], 16);
  assert_true(li->inputs[0].needs_shape);
  tg_model_inputs_destroy(li);
  pb_free(&model);
}

static void small_net_folds_shape_arithmetic(void **state) {
  (void)state;
  for (int opset = 9; opset <= 13; opset += 2) {
    pb model = {0};
    build_small_net(&model, opset, 1);
    /* The dynamic input needs its shape. */
    parse_expect(&model, NULL, TG_ERROR_INVALID_ARGUMENT,
                 "input 'x' (?x3x?x?): dynamic dimensions 0 ('d0'), 2 ('d2'), 3 ('d3'): give the sizes in "
                 "tg_model_options.input_shapes (x:?x3x?x?)");
    /* Its inputs are listed without a size: which dimensions are dynamic, under which names. */
    tg_model_inputs *li = NULL;
    tg_error_info lerr;
    memset(&lerr, 0, sizeof lerr);
    assert_int_equal(tg_model_parse_inputs(model.data, model.len, "t.onnx", NULL, &li, &lerr), TG_OK);
    assert_int_equal(li->format, TG_MODEL_FORMAT_ONNX);
    assert_int_equal(li->count, 1);
    assert_string_equal(li->inputs[0].name, "x");
    assert_int_equal(li->inputs[0].rank, 4);
    assert_int_equal(li->inputs[0].dims[0], -1);
    assert_int_equal(li->inputs[0].dims[1], 3);
    assert_int_equal(li->inputs[0].dynamic, 0xdu);
    assert_string_equal(li->inputs[0].dim_names[2], "d2");
    assert_null(li->inputs[0].dim_names[1]);
    assert_true(li->inputs[0].needs_shape);
    tg_model_inputs_destroy(li);
    tg_input_shape s = {"x", 4, {2, 3, 8, 8}, {{0}}};
    tg_model_options o = {&s, 1};
    tg_graph *g = parse_expect(&model, &o, TG_OK, NULL);
    assert_int_equal(g->dim_order, TG_DIM_ORDER_NCHW);
    assert_int_equal(tensor_named(g, "x")->dynamic_dims, 0xdu);
    /* Ops left: Conv, Relu, Reshape, MatMul, Reshape; the shape arithmetic is folded. */
    static const char *const ops[] = {"Conv", "Relu", "Reshape", "MatMul", "Reshape"};
    assert_int_equal(g->op_count, 5);
    for (size_t i = 0; i < 5; ++i) assert_string_equal(g->ops[i].name, ops[i]);
    const tg_tensor *flat = tensor_named(g, "flat"), *flat2 = tensor_named(g, "flat2"), *y = tensor_named(g, "y");
    assert_int_equal(flat->rank, 2);
    assert_int_equal(flat->shape[0], 2);
    assert_int_equal(flat->shape[1], 8 * 8 * 8);
    assert_int_equal(flat2->shape[0], 2);
    assert_int_equal(flat2->shape[1], 512);
    assert_int_equal(y->shape[0], 2);
    assert_int_equal(y->shape[1], 10);
    /* Folded values are constants with their dtypes; weights are constants; x is the input. */
    assert_true(tensor_named(g, "target")->flags & TG_TENSOR_CONSTANT);
    assert_int_equal(tensor_named(g, "target")->dtype, TG_DTYPE_INT64);
    assert_int_equal(tensor_named(g, "s2i")->dtype, TG_DTYPE_INT32);
    assert_true(tensor_named(g, "w")->flags & TG_TENSOR_CONSTANT);
    assert_int_equal(tensor_named(g, "x")->flags, TG_TENSOR_INPUT);
    assert_true(y->flags & TG_TENSOR_OUTPUT);
    assert_int_equal(g->input_count, 1);
    assert_int_equal(g->output_count, 2);
    /* Reshape reads its data and a constant target: planned are c, r, flat (y and flat2 are
     * outputs). */
    tg_lifetimes *l = NULL;
    tg_error_info err;
    memset(&err, 0, sizeof err);
    assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err), TG_OK);
    size_t planned = 0;
    for (size_t t = 0; t < l->tensor_count; ++t) planned += l->tensors[t].planned != 0;
    assert_int_equal(planned, 3);
    tg_lifetimes_destroy(l);
    tg_graph_destroy(g);
    /* A different batch flows through the folded subgraphs. */
    s.dims[0] = 5;
    g = parse_expect(&model, &o, TG_OK, NULL);
    assert_int_equal(tensor_named(g, "flat")->shape[0], 5);
    assert_int_equal(tensor_named(g, "flat2")->shape[0], 5);
    tg_graph_destroy(g);
    /* Bad input shapes. */
    tg_input_shape bad[] = {{"x", 4, {2, 4, 8, 8}, {{0}}}, {"x", 3, {2, 3, 8}, {{0}}}, {"z", 4, {2, 3, 8, 8}, {{0}}},
                            {"x", 4, {INT64_MAX, 3, 8, 8}, {{0}}}, {"x", 4, {-2, 3, 8, 8}, {{0}}}};
    static const struct { tg_status st; const char *needle; } bad_out[] = {
        {TG_ERROR_INVALID_ARGUMENT, "dimension 1 is 3 in the file, not 4 as given (2x4x8x8)"},
        {TG_ERROR_INVALID_ARGUMENT, "input 'x' has rank 4 (?x3x?x?) but the shape given, 2x3x8, has rank 3"},
        {TG_ERROR_INVALID_ARGUMENT, "an input shape is given for 'z', which is not a graph input (inputs: 'x')"},
        {TG_ERROR_OVERFLOW, "more elements than fit in 63 bits"},
        {TG_ERROR_INVALID_ARGUMENT, "dimension 0 is -2"}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
      tg_model_options ob = {&bad[k], 1};
      parse_expect(&model, &ob, bad_out[k].st, bad_out[k].needle);
    }
    /* Static file: no input shape needed, and the same sizes come out. */
    pb fixed = {0};
    build_small_net(&fixed, opset, 0);
    g = parse_expect(&fixed, NULL, TG_OK, NULL);
    assert_int_equal(tensor_named(g, "flat")->shape[1], 512);
    tg_graph_destroy(g);
    /* Detection by content. */
    assert_int_equal(tg_model_detect_format(fixed.data, fixed.len), TG_MODEL_FORMAT_ONNX);
    pb_free(&fixed);
    pb_free(&model);
  }
  assert_string_equal(tg_model_format_name(TG_MODEL_FORMAT_ONNX), "onnx");
  assert_int_equal(tg_model_detect_format("tensor x 1 float32 input\n", 25), TG_MODEL_FORMAT_TEXT_GRAPH);
  assert_int_equal(tg_model_detect_format("\x08\x08", 2), TG_MODEL_FORMAT_ONNX);
  assert_int_equal(tg_model_detect_format("\x08\x08\x10", 3), TG_MODEL_FORMAT_TEXT_GRAPH);
}

/* ------------------------------------------------------------------------------------------ */
/* Layout: NCHW maps onto the storages as BHWC does. */

static void nchw_maps_like_bhwc(void **state) {
  (void)state;
  static const struct { uint32_t rank; int64_t nchw[5]; tg_bhwc want; } k[] = {
      {0, {0}, {1, 1, 1, 1}},
      {1, {7}, {1, 1, 1, 7}},
      {2, {2, 7}, {2, 1, 1, 7}},
      {3, {2, 7, 9}, {2, 1, 9, 7}},
      {4, {2, 7, 5, 9}, {2, 5, 9, 7}},
      {5, {2, 7, 3, 5, 9}, {6, 5, 9, 7}},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; ++i) {
    tg_bhwc b;
    assert_int_equal(tg_shape_to_bhwc_ordered(k[i].nchw, k[i].rank, TG_DIM_ORDER_NCHW, &b), TG_OK);
    assert_true(b.b == k[i].want.b && b.h == k[i].want.h && b.w == k[i].want.w && b.c == k[i].want.c);
  }
  int64_t neg[4] = {1, -3, 4, 4};
  tg_bhwc b;
  assert_int_equal(tg_shape_to_bhwc_ordered(neg, 4, TG_DIM_ORDER_NCHW, &b), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_shape_to_bhwc_ordered(neg, 4, (tg_dim_order)7, &b), TG_ERROR_INVALID_ARGUMENT);
  /* The same network as a text graph in NHWC and as ONNX in NCHW gives the same records. */
  const char *text =
      "tensor x 1x32x32x3 float32 input\n"
      "tensor w 8x3x3x3 float32 constant\n"
      "tensor c 1x32x32x8 float32\n"
      "tensor r 1x32x32x8 float32\n"
      "tensor y 1x32x32x8 float32 output\n"
      "op CONV_2D inputs=x,w outputs=c\nop RELU inputs=c outputs=r\nop RELU inputs=r outputs=y\n";
  pb model = {0}, graph = {0};
  int64_t xd[4] = {1, 3, 32, 32}, wd[4] = {8, 3, 3, 3}, pads[4] = {1, 1, 1, 1};
  ob_value_info(&graph, 11, "x", OB_FLOAT, 4, xd);
  ob_initializer(&graph, "w", OB_FLOAT, 4, wd, NULL, 216);
  pb a = {0};
  ob_attr_ints(&a, "pads", pads, 4);
  const char *i0[2] = {"x", "w"}, *o0[1] = {"c"}, *i1[1] = {"c"}, *o1[1] = {"r"}, *i2[1] = {"r"}, *o2[1] = {"y"};
  ob_node(&graph, "Conv", NULL, i0, 2, o0, 1, &a);
  ob_node(&graph, "Relu", NULL, i1, 1, o1, 1, NULL);
  ob_node(&graph, "Relu", NULL, i2, 1, o2, 1, NULL);
  ob_value_info(&graph, 12, "y", OB_FLOAT, -1, NULL);
  ob_model(&model, &graph, 13);
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_graph *gt = NULL, *go = NULL;
  assert_int_equal(tg_graph_parse_text(text, strlen(text), "t", NULL, &gt, &err), TG_OK);
  assert_int_equal(tg_graph_parse_onnx(model.data, model.len, "o", NULL, NULL, &go, &err), TG_OK);
  tg_lifetime_options lo = {1};
  tg_lifetimes *lt = NULL, *lon = NULL;
  assert_int_equal(tg_graph_compute_lifetimes(gt, &lo, NULL, &lt, &err), TG_OK);
  assert_int_equal(tg_graph_compute_lifetimes(go, &lo, NULL, &lon, &err), TG_OK);
  for (int s = 0; s < TG_STORAGE_COUNT; ++s)
    for (int p = 0; p < TG_PRECISION_COUNT; ++p) {
      tg_model_records *rt = NULL, *ro = NULL;
      assert_int_equal(tg_model_records_create(gt, lt, (tg_storage)s, (tg_precision)p, NULL, NULL, &rt, &err), TG_OK);
      assert_int_equal(tg_model_records_create(go, lon, (tg_storage)s, (tg_precision)p, NULL, NULL, &ro, &err), TG_OK);
      assert_int_equal(rt->records->count + rt->fallback->count, 4);
      assert_int_equal(ro->records->count, rt->records->count);
      assert_int_equal(ro->fallback->count, rt->fallback->count);
      for (size_t r = 0; r < rt->records->count; ++r) {
        const tg_extent *et = &rt->records->records[r].size, *eo = &ro->records->records[r].size;
        assert_true(et->w == eo->w && et->h == eo->h && et->d == eo->d);
      }
      tg_model_records_destroy(rt);
      tg_model_records_destroy(ro);
    }
  /* x [1,3,32,32] fp32 in a buffer: 32*32 texels of one 4-channel slice, 16 bytes each. */
  tg_model_records *rb = NULL;
  assert_int_equal(tg_model_records_create(go, lon, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL, NULL, &rb, &err), TG_OK);
  assert_string_equal(rb->records->names[0], "x");
  assert_int_equal(rb->records->records[0].size.w, 32 * 32 * 16);
  assert_int_equal(rb->records->records[1].size.w, 32 * 32 * 2 * 16);
  tg_model_records_destroy(rb);
  tg_lifetimes_destroy(lt);
  tg_lifetimes_destroy(lon);
  tg_graph_destroy(gt);
  tg_graph_destroy(go);
  pb_free(&model);
}

/* ------------------------------------------------------------------------------------------ */
/* Errors that name the node, the value or the input. */

static void build_two_nodes(pb *model, const char *first_in, const char *second_out) {
  pb graph = {0};
  int64_t xd[2] = {2, 3};
  ob_value_info(&graph, 11, "x", OB_FLOAT, 2, xd);
  const char *i0[1] = {first_in}, *o0[1] = {"a"}, *i1[1] = {"a"}, *o1[1] = {second_out};
  ob_node(&graph, "Relu", "first", i0, 1, o0, 1, NULL);
  ob_node(&graph, "Relu", "second", i1, 1, o1, 1, NULL);
  ob_value_info(&graph, 12, second_out, OB_FLOAT, -1, NULL);
  ob_model(model, &graph, 13);
}

static void graph_errors_name_the_node(void **state) {
  (void)state;
  pb m = {0};
  /* Node 0 reads what node 1 writes: not topological. */
  build_two_nodes(&m, "b", "b");
  parse_expect(&m, NULL, TG_ERROR_GRAPH, "node 0 'first' (Relu): reads 'b' before node 1 writes it");
  pb_free(&m);
  build_two_nodes(&m, "nowhere", "b");
  parse_expect(&m, NULL, TG_ERROR_GRAPH, "node 0 'first' (Relu): reads 'nowhere', which is neither");
  pb_free(&m);
  /* Written twice: by node 1 and as the graph input. */
  build_two_nodes(&m, "x", "x");
  parse_expect(&m, NULL, TG_ERROR_GRAPH, "'x' is written twice: it is a graph input and an output of node 1");
  pb_free(&m);
  build_two_nodes(&m, "x", "a");
  parse_expect(&m, NULL, TG_ERROR_GRAPH, "'a' is written twice: it is an output of node 0 and an output of node 1");
  pb_free(&m);

  /* If, Loop and Scan: subgraphs; another op with a subgraph is refused. */
  static const char *const flow[] = {"If", "Loop", "Scan", "Sum"};
  for (size_t k = 0; k < 4; ++k) {
    pb graph = {0}, body = {0}, attr = {0}, attrs = {0};
    int64_t xd[1] = {4};
    ob_value_info(&graph, 11, "x", OB_FLOAT, 1, xd);
    pb_str(&body, 2, "body");
    pb_str(&attr, 1, k == 0 ? "then_branch" : "body");
    pb_msg(&attr, 6, &body);
    pb_int(&attr, 20, OB_ATTR_GRAPH);
    pb_msg(&attrs, 5, &attr);
    const char *in[1] = {"x"}, *out[1] = {"y"};
    ob_node(&graph, flow[k], "flow", in, 1, out, 1, &attrs);
    ob_value_info(&graph, 12, "y", OB_FLOAT, -1, NULL);
    ob_model(&m, &graph, 13);
    /* Malformed control flow is refused naming the node (If, Loop and Scan themselves are
     * read: tests/tools/test_control_flow_cli.c). */
    static const char *const why[] = {"node 0 'flow' (If): the subgraph attribute 'else_branch' is missing",
                                      "node 0 'flow' (Loop): has 1 inputs; M and cond (maybe empty) come first",
                                      "node 0 'flow' (Scan): num_scan_inputs is missing or not in [1, 1]",
                                      "node 0 'flow' (Sum): has a subgraph, and only If, Loop and Scan"};
    parse_expect(&m, NULL, k == 3 ? TG_ERROR_UNSUPPORTED : TG_ERROR_PARSE, why[k]);
    pb_free(&m);
  }

  /* A custom domain. */
  {
    pb graph = {0}, node = {0};
    int64_t xd[1] = {4};
    ob_value_info(&graph, 11, "x", OB_FLOAT, 1, xd);
    pb_str(&node, 1, "x");
    pb_str(&node, 2, "y");
    pb_str(&node, 3, "fused");
    pb_str(&node, 4, "FusedConv");
    pb_str(&node, 7, "com.microsoft");
    pb_msg(&graph, 1, &node);
    ob_model(&m, &graph, 13);
    parse_expect(&m, NULL, TG_ERROR_UNSUPPORTED, "node 0 'fused' (FusedConv): op 'FusedConv' of domain 'com.microsoft'");
    pb_free(&m);
  }

  /* No opset, no graph. */
  {
    pb graph = {0};
    pb_int(&m, 1, 8);
    pb_str(&graph, 2, "g");
    pb_msg(&m, 7, &graph);
    parse_expect(&m, NULL, TG_ERROR_PARSE, "imports no opset of the default ONNX domain");
    pb_free(&m);
    pb os = {0};
    pb_int(&m, 1, 8);
    pb_str(&os, 1, "");
    pb_int(&os, 2, 13);
    pb_msg(&m, 8, &os);
    parse_expect(&m, NULL, TG_ERROR_PARSE, "the model has no graph");
    pb_free(&m);
  }
  /* A graph output that nothing writes. */
  {
    pb graph = {0};
    int64_t xd[1] = {4};
    ob_value_info(&graph, 11, "x", OB_FLOAT, 1, xd);
    ob_value_info(&graph, 12, "ghost", OB_FLOAT, -1, NULL);
    ob_model(&m, &graph, 13);
    parse_expect(&m, NULL, TG_ERROR_GRAPH, "graph output 0 'ghost' is not a value of the graph");
    pb_free(&m);
  }
  /* An input without any shape. */
  {
    pb graph = {0};
    ob_value_info(&graph, 11, "x", OB_FLOAT, -1, NULL);
    const char *in[1] = {"x"}, *out[1] = {"y"};
    ob_node(&graph, "Relu", NULL, in, 1, out, 1, NULL);
    ob_model(&m, &graph, 13);
    parse_expect(&m, NULL, TG_ERROR_INVALID_ARGUMENT, "input 'x' has no shape in the file: give it in tg_model_options.input_shapes (x:DxDx...)");
    tg_input_shape s = {"x", 2, {3, 4}, {{0}}};
    tg_model_options o = {&s, 1};
    tg_graph *g = parse_expect(&m, &o, TG_OK, NULL);
    assert_int_equal(tensor_named(g, "y")->shape[1], 4);
    tg_graph_destroy(g);
    pb_free(&m);
  }
}

/* Weights kept in another file: their shape is all the planner needs. */
static void external_data(void **state) {
  (void)state;
  pb m = {0}, graph = {0}, w = {0}, shape = {0};
  int64_t xd[4] = {1, 3, 8, 8}, wd[4] = {4, 3, 1, 1};
  ob_value_info(&graph, 11, "x", OB_FLOAT, 4, xd);
  for (int d = 0; d < 4; ++d) pb_int(&w, 1, wd[d]);
  pb_int(&w, 2, OB_FLOAT);
  pb_str(&w, 8, "w");
  pb loc = {0};
  pb_str(&loc, 1, "location");
  pb_str(&loc, 2, "weights.bin");
  pb_msg(&w, 13, &loc);
  pb_int(&w, 14, 1);
  pb_msg(&graph, 5, &w);
  /* A shape tensor kept outside too: needed as values by the Reshape. */
  int64_t two = 2;
  pb_int(&shape, 1, two);
  pb_int(&shape, 2, OB_INT64);
  pb_str(&shape, 8, "target");
  pb_int(&shape, 14, 1);
  pb_msg(&graph, 5, &shape);
  const char *ci[2] = {"x", "w"}, *co[1] = {"c"}, *ri[2] = {"c", "target"}, *ro[1] = {"y"};
  ob_node(&graph, "Conv", "conv", ci, 2, co, 1, NULL);
  pb graph2 = {0};
  pb_raw(&graph2, graph.data, graph.len);
  ob_value_info(&graph, 12, "c", OB_FLOAT, -1, NULL);
  ob_model(&m, &graph, 13);
  tg_graph *g = parse_expect(&m, NULL, TG_OK, NULL);
  assert_true(tensor_named(g, "w")->flags & TG_TENSOR_CONSTANT);
  assert_int_equal(tensor_named(g, "c")->shape[1], 4);
  tg_graph_destroy(g);
  pb_free(&m);
  ob_node(&graph2, "Reshape", "reshape", ri, 2, ro, 1, NULL);
  ob_model(&m, &graph2, 13);
  parse_expect(&m, NULL, TG_ERROR_UNSUPPORTED,
               "node 1 'reshape' (Reshape): needs the values of input 1 'target' (shape), which are kept in an external file");
  pb_free(&m);
}

/* Dimensions no model has: negative, 2^63, products past 63 bits, in inputs and initializers. */
static void hostile_dimensions(void **state) {
  (void)state;
  static const struct {
    int where;          /* 0: graph input value_info, 1: initializer */
    int rank;
    uint64_t dims[4];   /* written as varints */
    tg_status st;
    const char *needle;
  } k[] = {
      {0, 2, {3, (uint64_t)-5}, TG_ERROR_PARSE, "input 'x': dimension 1 is -5"},
      {0, 1, {1ull << 63}, TG_ERROR_PARSE, "input 'x': dimension 0 is -9223372036854775808"},
      {0, 1, {(uint64_t)INT64_MAX}, TG_ERROR_OVERFLOW, "input 'x': dimension 0 is 9223372036854775807, more than 2^62"},
      {0, 3, {1u << 31, 1u << 31, 1u << 31}, TG_ERROR_OVERFLOW, "input 'x' has more elements than fit in 63 bits"},
      {1, 2, {3, (uint64_t)-1}, TG_ERROR_PARSE, "initializer 'k': dimension 1 is -1"},
      {1, 1, {1ull << 63}, TG_ERROR_PARSE, "initializer 'k': dimension 0 is -9223372036854775808"},
      {1, 3, {1u << 31, 1u << 31, 1u << 31}, TG_ERROR_OVERFLOW, "initializer 'k': shape has more elements than fit in 63 bits"},
      {1, 2, {1ull << 62, 1ull << 62}, TG_ERROR_OVERFLOW, "initializer 'k': shape has more elements than fit in 63 bits"},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; ++i) {
    pb m = {0}, graph = {0};
    if (k[i].where == 0) {
      pb vi = {0}, tp = {0}, tt = {0}, sh = {0};
      pb_str(&vi, 1, "x");
      pb_int(&tt, 1, OB_FLOAT);
      for (int d = 0; d < k[i].rank; ++d) {
        pb dim = {0};
        pb_tag(&dim, 1, 0);
        pb_varint(&dim, k[i].dims[d]);
        pb_msg(&sh, 1, &dim);
      }
      pb_msg(&tt, 2, &sh);
      pb_msg(&tp, 1, &tt);
      pb_msg(&vi, 2, &tp);
      pb_msg(&graph, 11, &vi);
    } else {
      pb t = {0};
      for (int d = 0; d < k[i].rank; ++d) {
        pb_tag(&t, 1, 0);
        pb_varint(&t, k[i].dims[d]);
      }
      pb_int(&t, 2, OB_FLOAT);
      pb_str(&t, 8, "k");
      pb_msg(&graph, 5, &t);
    }
    ob_model(&m, &graph, 13);
    parse_expect(&m, NULL, k[i].st, k[i].needle);
    pb_free(&m);
  }
  /* Data that does not match the dims. */
  pb m = {0}, graph = {0}, t = {0};
  pb_int(&t, 1, 4);
  pb_int(&t, 2, OB_FLOAT);
  pb_str(&t, 8, "k");
  pb_bytes(&t, 9, "0123456789ab", 12);
  pb_msg(&graph, 5, &t);
  ob_model(&m, &graph, 13);
  parse_expect(&m, NULL, TG_ERROR_PARSE, "initializer 'k': raw_data holds 12 bytes but a float32 tensor of 4 elements needs 16");
  pb_free(&m);
}

/* The wire format: nesting, expansion, truncated lengths, wrong wire types. */
static void hostile_wire_format(void **state) {
  (void)state;
  /* Graph -> Node -> Attribute -> Graph -> ... 40 levels. */
  pb inner = {0};
  pb_str(&inner, 2, "leaf");
  for (int level = 0; level < 40; ++level) {
    pb node = {0}, attr = {0}, graph = {0};
    pb_str(&attr, 1, "g");
    pb_msg(&attr, 6, &inner);
    pb_str(&node, 4, "If");
    pb_msg(&node, 5, &attr);
    pb_msg(&graph, 1, &node);
    inner = graph;
  }
  pb m = {0};
  ob_model(&m, &inner, 13);
  parse_expect(&m, NULL, TG_ERROR_PARSE, "messages nest deeper than 32 levels");
  pb_free(&m);

  /* A million empty nodes: 2 MB that would decode into far more. */
  pb graph = {0};
  for (int k = 0; k < 1000000; ++k) {
    uint8_t empty[2] = {0x0a, 0x00};
    pb_raw(&graph, empty, 2);
  }
  ob_model(&m, &graph, 13);
  parse_expect(&m, NULL, TG_ERROR_PARSE, "decoding would take");
  pb_free(&m);

  /* A length past the end, a wrong wire type, a group, field 0, an overlong varint. */
  static const struct { uint8_t bytes[16]; size_t n; const char *needle; } k[] = {
      {{0x08, 0x08, 0x3a, 0x10, 0x0a}, 5, "graph (field 7) claims 16 bytes but only 1 remain"},
      {{0x08, 0x08, 0x3d, 1, 2, 3, 4}, 7, "graph (field 7) must be length-delimited, not 32-bit"},
      {{0x08, 0x08, 0x0b}, 3, "field 1 has group start, which ONNX does not use"},
      {{0x08, 0x08, 0x00, 0x00}, 4, "field number 0 is not valid"},
      {{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, 11, "ir_version (field 1): varint is malformed"},
      {{0x08, 0x08, 0x42, 0x01, 0x10}, 5, "version (field 2): varint is malformed or runs past the end"},
      /* Repeats of a singular message would make protobuf-c merge them, quadratically. */
      {{0x08, 0x08, 0x3a, 0x00, 0x3a, 0x00}, 6, "graph (field 7) appears more than once in one message"},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; ++i) {
    pb b = {0};
    pb_raw(&b, k[i].bytes, k[i].n);
    parse_expect(&b, NULL, TG_ERROR_PARSE, k[i].needle);
    pb_free(&b);
  }
  /* Nothing at all. */
  pb empty = {0};
  uint8_t z = 0;
  pb_raw(&empty, &z, 0);
  tg_graph *g = NULL;
  tg_error_info err;
  memset(&err, 0, sizeof err);
  assert_int_equal(tg_graph_parse_onnx("", 0, "e.onnx", NULL, NULL, &g, &err), TG_ERROR_PARSE);
  assert_contains(err.message, "e.onnx: empty file");
  pb_free(&empty);
}

/* ------------------------------------------------------------------------------------------ */
/* Truncation, byte flips and allocation failures on the fuzz seeds (cut from the models). */

static const char *const k_seeds[] = {"cls_head", "cls_stem", "rec_attention", "det_neck_head", "cls_whole"};

static unsigned char *read_seed(const char *name, size_t *length) {
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/fuzz/corpus/fuzz_onnx/%s.onnx", TG_SOURCE_DIR, name);
  return read_all(path, length);
}

static void truncation_and_byte_flips(void **state) {
  (void)state;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  size_t prefixes = 0, flips = 0, ok_flips = 0, inner_cuts = 0, inner_ok = 0;
  tg_test_rng rng = {27};
  for (size_t s = 0; s < sizeof k_seeds / sizeof k_seeds[0]; ++s) {
    size_t length;
    unsigned char *data = read_seed(k_seeds[s], &length);
    /* The seed itself parses. */
    assert_int_equal(parse_everything(data, length, NULL), TG_OK);
    /* Every prefix fails cleanly: a protobuf cut anywhere leaves a length, a tag or a varint
     * unfinished, or drops the graph's end (then the opset, written last, is missing). Quick
     * mode (sanitizer builds): every 7th prefix of the largest seed. */
    size_t stride = tg_test_quick() && length > 20000 ? 7 : 1;
    for (size_t len = 0; len < length; len += stride, ++prefixes)
      if (parse_everything(data, len, NULL) == TG_OK) fail_msg("%s: prefix of %zu bytes parsed", k_seeds[s], len);
    /* The graph cut short inside: ModelProto's length for it rewritten to match, so the cut
     * lands in a node, an attribute, a tensor, or between nodes (a graph missing its end).
     * Up to 2000 cut points per seed (500 in quick mode), evenly spread. */
    size_t at = 0, graph_at = 0, graph_len = 0, graph_end = 0;
    while (at < length) {
      size_t field_at = at;
      uint64_t tag = 0, v = 0;
      for (unsigned sh = 0; at < length; sh += 7) {
        tag |= (uint64_t)(data[at] & 0x7f) << sh;
        if (!(data[at++] & 0x80)) break;
      }
      if ((tag & 7) == 0) {
        while (at < length && (data[at++] & 0x80)) continue;
        continue;
      }
      for (unsigned sh = 0; at < length; sh += 7) {
        v |= (uint64_t)(data[at] & 0x7f) << sh;
        if (!(data[at++] & 0x80)) break;
      }
      if ((tag >> 3) == 7) {
        graph_at = field_at;
        graph_len = (size_t)v;
        graph_end = at + (size_t)v;
        break;
      }
      at += (size_t)v;
    }
    assert_true(graph_len > 0);
    size_t graph_payload = graph_end - graph_len;
    size_t cuts = tg_test_quick() ? 500 : 2000, step = graph_len / cuts + 1;
    for (size_t cut = 0; cut < graph_len; cut += step, ++inner_cuts) {
      pb m = {0};
      pb_raw(&m, data, graph_at);
      pb_bytes(&m, 7, data + graph_payload, cut);
      pb_raw(&m, data + graph_end, length - graph_end);
      inner_ok += parse_everything(m.data, m.len, NULL) == TG_OK;
      pb_free(&m);
    }
    /* Byte flips: each byte of a seed up to 4 KiB, 1500 random ones of the others (300 in
     * quick mode), set to a random value or XORed with 0xff. */
    unsigned char *work = malloc(length);
    assert_non_null(work);
    int every = length <= 4096;
    size_t n = every ? length : tg_test_quick() ? 300 : 1500;
    for (size_t k = 0; k < n; ++k) {
      size_t at = every ? k : (size_t)tg_test_rng_range(&rng, 0, length - 1);
      memcpy(work, data, length);
      work[at] = (k & 1) ? (unsigned char)(work[at] ^ 0xff) : (unsigned char)tg_test_rng_range(&rng, 0, 255);
      ok_flips += parse_everything(work, length, NULL) == TG_OK;
      ++flips;
    }
    free(work);
    free(data);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  fprintf(stderr, "hostile: %zu prefixes, %zu graphs cut inside (%zu parse), %zu byte flips (%zu parse) in %.2fs\n",
          prefixes, inner_cuts, inner_ok, flips, ok_flips,
          (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
}

static void out_of_memory_everywhere(void **state) {
  (void)state;
  size_t length;
  unsigned char *data = read_seed("rec_attention", &length);
  size_t sites = 0;
  for (uint64_t n = 1;; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, n);
    tg_error_info err;
    memset(&err, 0, sizeof err);
    tg_model *m = NULL;
    tg_status st = tg_model_parse(data, length, "oom.onnx", &fa.base, &m, &err);
    if (st == TG_OK) {
      assert_int_equal(fa.failures, 0);
      tg_model_destroy(m);
      assert_int_equal(fa.live_blocks, 0);
      break;
    }
    if (st != TG_ERROR_OUT_OF_HOST_MEMORY) fail_msg("allocation %llu: %s: %s", (unsigned long long)n, tg_status_name(st), err.message);
    assert_null(m);
    assert_contains(err.message, "out of memory");
    if (fa.live_blocks != 0) fail_msg("allocation %llu failed: %lld blocks leaked", (unsigned long long)n, (long long)fa.live_blocks);
    ++sites;
  }
  free(data);
  assert_true(sites > 50);
  fprintf(stderr, "out of memory: %zu allocation sites\n", sites);
}

/* ---- control flow: what every iteration reads ---- */

static size_t op_named(const tg_graph *g, const char *name) {
  for (size_t o = 0; o < g->op_count; ++o)
    if (strcmp(g->ops[o].name, name) == 0) return o;
  fail_msg("%s has no op '%s'", g->source, name);
  return 0;
}

static int op_reads(const tg_op *op, size_t t) {
  for (uint32_t k = 0; k < op->input_count; ++k)
    if (op->inputs[k] == (int32_t)t) return 1;
  return 0;
}

/* Scan's scan inputs and a Loop's trip count and condition computed at run time are read by
 * every iteration (an engine takes slice i of a scan input in iteration i): they live until the
 * op that ends the loop, and the run order of N iterations reads them once inside each. */
static void loop_inputs_live_to_the_end_op(void **state) {
  (void)state;
  static const struct { const char *file, *end, *names[2]; } cases[] = {
      {"onnx/control_flow/scan.onnx", "Scan.end", {"e", NULL}},
      {"onnx/control_flow/loop_counted.onnx", "Loop.end", {"n", "c"}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    char path[1024];
    tg_graph *g = NULL;
    tg_lifetimes *l = NULL;
    tg_error_info err = {{0}};
    if (tg_graph_read_onnx(tg_test_data_path(path, sizeof path, cases[i].file), NULL, NULL, &g, &err) != TG_OK)
      fail_msg("%s", err.message);
    assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err), TG_OK);
    const size_t end = op_named(g, cases[i].end);
    for (size_t k = 0; k < 2 && cases[i].names[k]; ++k) {
      const tg_tensor *named = tensor_named(g, cases[i].names[k]);
      assert_non_null(named);
      const size_t t = (size_t)(named - g->tensors);
      const tg_tensor_lifetime *tl = &l->tensors[t];
      assert_true(tl->planned);
      if (tl->last_task != (int32_t)end)
        fail_msg("%s: '%s' lives %d..%d; the loop ends at op %zu", cases[i].file, cases[i].names[k], tl->first_task,
                 tl->last_task, end);
      for (uint32_t n = 0; n <= 3; ++n) {
        uint32_t *order = NULL;
        size_t length = 0, in_body = 0;
        assert_int_equal(tg_graph_run_order(g, 0, n, NULL, &order, &length, &err), TG_OK);
        for (size_t s = 0; s < length; ++s)
          in_body += g->subgraphs[g->ops[order[s]].subgraph].kind == TG_SUBGRAPH_BODY && op_reads(&g->ops[order[s]], t);
        free(order);
        if (in_body != n)
          fail_msg("%s: %u iterations read '%s' %zu times inside the body", cases[i].file, n, cases[i].names[k],
                   in_body);
      }
    }
    tg_lifetimes_destroy(l);
    tg_graph_destroy(g);
  }
}

/* An If whose condition is known when the model is read keeps one branch, and an engine runs
 * that branch whichever branch the run order is asked for. */
static void known_conditions_run_their_branch(void **state) {
  (void)state;
  char path[1024];
  tg_graph *g = NULL;
  tg_error_info err = {{0}};
  if (tg_graph_read_onnx(tg_test_data_path(path, sizeof path, "onnx/control_flow/if_known.onnx"), NULL, NULL, &g,
                         &err) != TG_OK)
    fail_msg("%s", err.message);
  assert_int_equal(g->flow_count, 2);
  assert_int_equal(g->subgraphs[1].branch, 1);
  for (uint32_t branch = 0; branch < 3; ++branch) {
    uint32_t *order = NULL;
    size_t length = 0, in_branch = 0;
    assert_int_equal(tg_graph_run_order(g, branch, 1, NULL, &order, &length, &err), TG_OK);
    for (size_t k = 0; k < length; ++k) in_branch += g->ops[order[k]].subgraph == 1;
    free(order);
    if (in_branch != 2) fail_msg("branch %u: %zu ops of the else_branch run, not 2", branch, in_branch);
  }
  tg_graph_destroy(g);
}

/* ------------------------------------------------------------------------------------------ */
/* Values computed inside subgraphs: the exporter's patterns (tests/data/onnx/folding.py). */

static tg_graph *read_folding(const char *file) {
  char rel[128], path[1024];
  snprintf(rel, sizeof rel, "onnx/folding/%s", file);
  tg_test_data_path(path, sizeof path, rel);
  size_t length;
  unsigned char *data = read_all(path, &length);
  /* Lifetimes and records for every storage, under a checking allocator. */
  tg_status st = parse_everything(data, length, NULL);
  free(data);
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_graph *g = NULL;
  tg_status again = tg_graph_read_onnx(path, NULL, NULL, &g, &err);
  if (st != TG_OK || again != TG_OK) fail_msg("%s: %s (%s)", file, tg_status_name(again), err.message);
  return g;
}

static void assert_shape(const tg_graph *g, const char *name, uint32_t rank, const int64_t *dims) {
  const tg_tensor *t = tensor_named(g, name);
  if (t == NULL) fail_msg("no tensor '%s'", name);
  int same = t->rank == rank;
  for (uint32_t d = 0; same && d < rank; ++d) same = t->shape[d] == dims[d];
  if (!same) {
    char got[160] = "", want[160] = "";
    for (uint32_t d = 0; d < t->rank; ++d)
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? "x" : "", (long long)t->shape[d]);
    for (uint32_t d = 0; d < rank; ++d)
      snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? "x" : "", (long long)dims[d]);
    fail_msg("'%s' is %s, not %s", name, got, want);
  }
}

static void assert_ops(const tg_graph *g, const char *const *ops, size_t count) {
  char list[512] = "";
  for (size_t o = 0; o < g->op_count; ++o) {
    strncat(list, g->ops[o].name, sizeof list - strlen(list) - 2);
    strncat(list, " ", sizeof list - strlen(list) - 1);
  }
  if (g->op_count != count) fail_msg("%zu ops (%s), %zu expected", g->op_count, list, count);
  for (size_t o = 0; o < count; ++o)
    if (strcmp(g->ops[o].name, ops[o]) != 0) fail_msg("op %zu is %s, not %s (%s)", o, g->ops[o].name, ops[o], list);
}

static void subgraphs_fold_exporter_patterns(void **state) {
  (void)state;
  /* F.pad in both branches of an If (constant pads; pads from the outer x's Shape): only the
   * Pads are left to run, and they add 3 + 4 rows and 1 + 2 columns. */
  tg_graph *g = read_folding("pad_if.onnx");
  static const char *const pad_if_ops[] = {"ReduceSum", "Greater", "Pad", "Pad", "If"};
  assert_ops(g, pad_if_ops, 5);
  static const int64_t padded[] = {1, 3, 15, 11}, pads_dims[] = {8};
  assert_shape(g, "t_y", 4, padded);
  assert_shape(g, "e_y", 4, padded);
  assert_shape(g, "y", 4, padded);
  assert_shape(g, "e_pads", 1, pads_dims);
  assert_true(tensor_named(g, "t_pads")->flags & TG_TENSOR_CONSTANT);
  assert_true(tensor_named(g, "e_pads")->flags & TG_TENSOR_CONSTANT);
  assert_int_equal(tensor_named(g, "e_pads")->dtype, TG_DTYPE_INT64);
  tg_graph_destroy(g);

  /* The same chain in a Loop body on pads of the outer graph; a Slice cut back with ends
   * computed from the body input's Shape. */
  g = read_folding("pad_loop.onnx");
  static const char *const pad_loop_ops[] = {"Loop", "Loop.iteration", "Pad", "Slice", "Relu", "Identity",
                                                "Loop.end"};
  assert_ops(g, pad_loop_ops, 7);
  static const int64_t stack[] = {2, 1, 3, 15, 11}, cut[] = {1, 3, 8, 8};
  assert_shape(g, "b_padded", 4, padded);
  assert_shape(g, "b_cut", 4, cut);
  assert_shape(g, "stack", 5, stack);
  tg_graph_destroy(g);

  /* F.interpolate: Resize with sizes (then) and scales (else) computed from Shape. */
  g = read_folding("interpolate_if.onnx");
  static const char *const interp_ops[] = {"ReduceSum", "Greater", "Resize", "Resize", "If"};
  assert_ops(g, interp_ops, 5);
  static const int64_t resized[] = {1, 4, 12, 15};
  assert_shape(g, "t_y", 4, resized);
  assert_shape(g, "e_y", 4, resized);
  tg_graph_destroy(g);

  /* torch.flatten in a Loop body; an If in the body decided by Shape when read. */
  g = read_folding("flatten_loop.onnx");
  static const char *const flat_ops[] = {"Loop", "Loop.iteration", "Reshape", "Relu", "If",
                                            "Sigmoid", "Identity", "Loop.end"};
  assert_ops(g, flat_ops, 8);
  static const int64_t flat[] = {2, 12, 5}, flat_stack[] = {3, 2, 12, 5};
  assert_shape(g, "b_flat", 3, flat);
  assert_shape(g, "stack", 4, flat_stack);
  tg_graph_destroy(g);

  /* torch.chunk in a Scan body: Split with computed sizes, Slice with computed starts, a Split
   * of the Shape vector itself. */
  g = read_folding("split_scan.onnx");
  static const char *const split_ops[] = {"Scan", "Scan.iteration", "Split", "Slice", "Slice", "Add", "Sub",
                                          "Mul", "Reshape", "Add", "Scan.end"};
  assert_ops(g, split_ops, 11);
  static const int64_t half[] = {1, 3, 4}, mat[] = {6, 4}, ys[] = {4, 1, 3, 4};
  assert_shape(g, "b_lo", 3, half);
  assert_shape(g, "b_hi2", 3, half);
  assert_shape(g, "b_mat", 2, mat);
  assert_shape(g, "ys", 4, ys);
  tg_graph_destroy(g);

  /* F.interpolate in a Loop body; flatten (then) and split (else) in an If inside it. */
  g = read_folding("nested_loop.onnx");
  static const char *const nested_ops[] = {"Loop", "Loop.iteration", "Resize", "ReduceSum", "Greater", "Reshape",
                                           "Split", "Concat", "Flatten", "If", "Relu", "Identity",
                                           "Loop.end"};
  assert_ops(g, nested_ops, 13);
  static const int64_t up[] = {1, 2, 6, 8}, ups[] = {2, 1, 2, 6, 8}, row[] = {1, 24}, flats[] = {2, 1, 24},
                       part[] = {1, 1, 3, 4};
  assert_shape(g, "b_up", 4, up);
  assert_shape(g, "ups", 5, ups);
  assert_shape(g, "t_flat", 2, row);
  assert_shape(g, "e_flat", 2, row);
  assert_shape(g, "e_hi", 4, part);
  assert_shape(g, "flats", 3, flats);
  tg_graph_destroy(g);

  /* Integer arithmetic in a branch decides a Reshape to 4x6 (then), Gather / Squeeze / Mul a
   * 6x4 one transposed (else). */
  g = read_folding("arith_if.onnx");
  static const char *const arith_ops[] = {"ReduceSum", "Greater", "Reshape", "Mul", "Reshape", "Transpose", "If"};
  assert_ops(g, arith_ops, 7);
  static const int64_t four_six[] = {4, 6}, six_four[] = {6, 4};
  assert_shape(g, "t_y", 2, four_six);
  assert_shape(g, "e_r", 2, six_four);
  assert_shape(g, "y", 2, four_six);
  tg_graph_destroy(g);
}

/* The values the reader computed, by name (onnx_read_values). */
typedef struct known_value {
  char name[64];
  int32_t type;
  uint32_t rank;
  int64_t dims[TG_MAX_RANK];
  size_t count;
  int is_float, computed;
  int64_t i[16];
  double f[16];
} known_value;

typedef struct known_values {
  known_value v[256];
  size_t count;
} known_values;

static void keep_value(void *user, const onnx_value_report *r) {
  known_values *k = user;
  if (k->count == sizeof k->v / sizeof k->v[0]) fail_msg("more than %zu values", k->count);
  known_value *v = &k->v[k->count++];
  memset(v, 0, sizeof *v);
  snprintf(v->name, sizeof v->name, "%s", r->name);
  v->type = r->type;
  v->rank = r->rank;
  memcpy(v->dims, r->dims, r->rank * sizeof *r->dims);
  v->computed = r->ints != NULL || r->floats != NULL;
  v->is_float = r->floats != NULL;
  v->count = r->count;
  for (size_t e = 0; e < r->count && e < 16; ++e) {
    if (r->ints) v->i[e] = r->ints[e];
    if (r->floats) v->f[e] = r->floats[e];
  }
}

static void read_folding_values(const char *file, known_values *k) {
  char rel[128], path[1024];
  snprintf(rel, sizeof rel, "onnx/folding/%s", file);
  tg_test_data_path(path, sizeof path, rel);
  size_t length;
  unsigned char *data = read_all(path, &length);
  tg_error_info err;
  memset(&err, 0, sizeof err);
  k->count = 0;
  tg_status st = onnx_read_values(data, length, file, NULL, NULL, keep_value, k, &err);
  free(data);
  if (st != TG_OK) fail_msg("%s: %s (%s)", file, tg_status_name(st), err.message);
}

static const known_value *value_named(const known_values *k, const char *name) {
  for (size_t v = 0; v < k->count; ++v)
    if (strcmp(k->v[v].name, name) == 0) return &k->v[v];
  fail_msg("no value '%s'", name);
  return NULL;
}

static void assert_ints(const known_values *k, const char *name, int32_t type, const int64_t *want, size_t count) {
  const known_value *v = value_named(k, name);
  if (!v->computed || v->is_float) fail_msg("'%s' has no integer values", name);
  if (v->type != type) fail_msg("'%s' has type %d, not %d", name, v->type, type);
  if (v->count != count) fail_msg("'%s' has %zu values, not %zu", name, v->count, count);
  for (size_t e = 0; e < count; ++e)
    if (v->i[e] != want[e]) fail_msg("'%s'[%zu] is %lld, not %lld", name, e, (long long)v->i[e], (long long)want[e]);
}

static void assert_floats(const known_values *k, const char *name, int32_t type, const double *want, size_t count) {
  const known_value *v = value_named(k, name);
  if (!v->computed || !v->is_float) fail_msg("'%s' has no float values", name);
  if (v->type != type) fail_msg("'%s' has type %d, not %d", name, v->type, type);
  if (v->count != count) fail_msg("'%s' has %zu values, not %zu", name, v->count, count);
  for (size_t e = 0; e < count; ++e)
    if (v->f[e] != want[e]) fail_msg("'%s'[%zu] is %.17g, not %.17g", name, e, v->f[e], want[e]);
}

enum { T_FLOAT = 1, T_UINT8 = 2, T_INT32 = 6, T_INT64 = 7, T_BOOL = 9 };

/* ONNX's semantics, worked out by hand from the operator definitions (and what ONNX's numpy
 * reference computes). */
static void folded_values_follow_onnx(void **state) {
  (void)state;
  known_values *k = calloc(1, sizeof *k);
  assert_non_null(k);
  read_folding_values("arith_if.onnx", k);
  static const int64_t div[] = {-3, -3, -2, 3}, mod[] = {1, -1, 1, 0}, fmod[] = {-1, 1, -2, 0},
                       abs_[] = {3, 3, 2, 3}, neg[] = {-3, -3, -2, -3}, min[] = {1, -2, 1, 0},
                       max[] = {3, 3, 3, 3}, less[] = {1, 1, 1, 1}, greater[] = {0, 0, 1, 0},
                       eq[] = {1, 1, 0, 1}, prod[] = {81}, idx[] = {0, 1, 2}, dims[] = {2, 3, 4},
                       ceil_[] = {1, 2, 2}, twenty[] = {20}, target[] = {4, -1}, g[] = {3, 4},
                       t[] = {6, 4}, rev[] = {4, 2}, wrap[] = {5, -1, INT32_MIN}, u8[] = {255, 7},
                       trunc_[] = {2, -2}, down[] = {5, 3, 1};
  assert_ints(k, "t_div", T_INT64, div, 4);
  assert_ints(k, "t_mod", T_INT64, mod, 4);
  assert_ints(k, "t_fmod", T_INT64, fmod, 4);
  assert_ints(k, "t_abs", T_INT64, abs_, 4);
  assert_ints(k, "t_neg", T_INT64, neg, 4);
  assert_ints(k, "t_min", T_INT64, min, 4);
  assert_ints(k, "t_max", T_INT64, max, 4);
  assert_ints(k, "t_less", T_BOOL, less, 4);
  assert_ints(k, "t_greater", T_BOOL, greater, 4);
  assert_ints(k, "t_eq", T_BOOL, eq, 4);
  assert_ints(k, "t_pick", T_INT64, max, 4);
  assert_ints(k, "t_prod", T_INT64, prod, 1);
  assert_ints(k, "t_idx", T_INT64, idx, 3);
  assert_ints(k, "t_d32", T_INT32, dims, 3);
  static const double halves[] = {1, 1.5, 2}, ceil_f[] = {1, 2, 2}, f32[] = {16777216.0};
  assert_floats(k, "t_halves", T_FLOAT, halves, 3);
  assert_floats(k, "t_ceil", T_FLOAT, ceil_f, 3);
  assert_ints(k, "t_ci", T_INT64, ceil_, 3);
  assert_ints(k, "t_20", T_INT64, twenty, 1);
  assert_ints(k, "t_target", T_INT64, target, 2);
  assert_ints(k, "e_g", T_INT64, g, 2);
  assert_int_equal(value_named(k, "e_g")->rank, 2);
  assert_ints(k, "e_hw", T_INT64, g, 2);
  assert_ints(k, "e_t", T_INT64, t, 2);
  assert_ints(k, "t_rev", T_INT64, rev, 2);
  assert_ints(k, "t_wrap", T_INT32, wrap, 3);
  assert_ints(k, "t_u8", T_UINT8, u8, 2);
  assert_ints(k, "t_trunc", T_INT64, trunc_, 2);
  assert_floats(k, "t_f32", T_FLOAT, f32, 1);
  assert_ints(k, "t_down", T_INT64, down, 3);
  assert_ints(k, "t_none", T_INT64, NULL, 0);
  /* 1 * -2^63 is -2^63; -1 * -2^63 leaves 64 bits: no values, the model still reads. */
  static const int64_t lowest[] = {INT64_MIN};
  assert_ints(k, "t_times", T_INT64, lowest, 1);
  assert_false(value_named(k, "t_over")->computed);
  assert_int_equal(value_named(k, "t_none")->rank, 1);
  assert_int_equal(value_named(k, "t_none")->dims[0], 0);

  /* The pad chain: pairs flipped to (H, W) order, begins then ends. */
  read_folding_values("pad_if.onnx", k);
  static const int64_t pads[] = {0, 0, 3, 1, 0, 0, 4, 2}, flipped[] = {0, 0, 0, 0, 3, 4, 1, 2};
  assert_ints(k, "t_flipped", T_INT64, flipped, 8);
  assert_ints(k, "t_pads", T_INT64, pads, 8);
  assert_ints(k, "e_pads", T_INT64, pads, 8);
  read_folding_values("pad_loop.onnx", k);
  static const int64_t ends[] = {11, 9};
  assert_ints(k, "b_pads", T_INT64, pads, 8);
  assert_ints(k, "b_ends", T_INT64, ends, 2);
  read_folding_values("interpolate_if.onnx", k);
  static const int64_t sizes[] = {1, 4, 12, 15};
  static const double scales[] = {1, 1, 2, 1.5};
  assert_ints(k, "t_sizes", T_INT64, sizes, 4);
  assert_floats(k, "e_scales", T_FLOAT, scales, 4);
  read_folding_values("nested_loop.onnx", k);
  static const int64_t up_sizes[] = {1, 2, 6, 8}, flat_target[] = {1, -1}, halves1[] = {1, 1};
  assert_ints(k, "b_sizes", T_INT64, up_sizes, 4);
  assert_ints(k, "t_target", T_INT64, flat_target, 2);
  assert_ints(k, "e_sizes", T_INT64, halves1, 2);
  read_folding_values("split_scan.onnx", k);
  static const int64_t halves_i[] = {3, 3}, batch[] = {1}, tail[] = {6, 4};
  assert_ints(k, "b_sizes", T_INT64, halves_i, 2);
  assert_ints(k, "b_batch", T_INT64, batch, 1);
  assert_ints(k, "b_tail", T_INT64, tail, 2);
  free(k);
}

/* A value a shape needs but that cannot be computed: the error names the node that failed. */
static void folding_errors_name_the_node(void **state) {
  (void)state;
  static const struct { const char *file; tg_status st; const char *needle; } k[] = {
      {"overflow_if.onnx", TG_ERROR_OVERFLOW,
       "node 5 (Reshape): needs the values of input 1 't_b' (shape), which cannot be computed before the run: "
       "node 4 'too_big' (Mul): 1099511627776 * 1073741824 leaves 64 bits"},
      {"div_zero_loop.onnx", TG_ERROR_PARSE,
       "node 3 (Reshape): needs the values of input 1 'b_q' (shape), which cannot be computed before the run: "
       "node 2 'by_zero' (Div): division by zero"},
  };
  for (size_t c = 0; c < sizeof k / sizeof k[0]; ++c) {
    char rel[128], path[1024];
    snprintf(rel, sizeof rel, "onnx/folding/%s", k[c].file);
    tg_test_data_path(path, sizeof path, rel);
    size_t length;
    unsigned char *data = read_all(path, &length);
    pb m = {data, length, length};
    parse_expect(&m, NULL, k[c].st, k[c].needle);
    free(data);
  }
}

#endif /* TANGRAM_HAVE_ONNX */

int main(void) {
#ifndef TANGRAM_HAVE_ONNX
  tg_graph *g = NULL;
  tg_error_info err = {{0}};
  if (tg_graph_parse_onnx("\x08\x08", 2, "x.onnx", NULL, NULL, &g, &err) != TG_ERROR_UNSUPPORTED) return 1;
  return strstr(err.message, "TANGRAM_ONNX=OFF") ? 0 : 1;
#else
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(real_models_match_shape_tables),
      cmocka_unit_test(recogniser_tokens_follow_the_width),
      cmocka_unit_test(real_models_need_input_shapes),
      cmocka_unit_test(every_op_family),
      cmocka_unit_test(inputs_leave_out_initializers),
      cmocka_unit_test(small_net_folds_shape_arithmetic),
      cmocka_unit_test(nchw_maps_like_bhwc),
      cmocka_unit_test(graph_errors_name_the_node),
      cmocka_unit_test(external_data),
      cmocka_unit_test(hostile_dimensions),
      cmocka_unit_test(hostile_wire_format),
      cmocka_unit_test(truncation_and_byte_flips),
      cmocka_unit_test(out_of_memory_everywhere),
      cmocka_unit_test(loop_inputs_live_to_the_end_op),
      cmocka_unit_test(known_conditions_run_their_branch),
      cmocka_unit_test(subgraphs_fold_exporter_patterns),
      cmocka_unit_test(folded_values_follow_onnx),
      cmocka_unit_test(folding_errors_name_the_node),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
#endif
}
