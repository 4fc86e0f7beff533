/* libFuzzer target: the .onnx reader (wire check, protobuf-c decode, shape inference and the
 * values it computes before the run, in every subgraph) and its input listing, then lifetimes and
 * records of whatever parses, and the control-flow invariants (fuzz_flow.h; and every Loop and
 * Scan body begins with the op that reads the trip count, condition and scan inputs in every
 * iteration). A model whose input has dynamic dimensions is parsed again with input "x" fixed at
 * 1x3x32x32, so the inference behind it is reached too. Of a model that parses, every value the
 * reader reports must hold together (check_value). */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "fuzz_flow.h"
#include "model/onnx_values.h"

static void check_iteration_ops(const tg_graph *g) {
  for (size_t o = 0; o < g->op_count; ++o) {
    const char *name = g->ops[o].name;
    if (strcmp(name, "Loop") != 0 && strcmp(name, "Scan") != 0) continue;
    if (!(g->ops[o].flags & TG_OP_CONTROL_FLOW) || o + 1 >= g->op_count || strncmp(g->ops[o + 1].name, name, 4) != 0 ||
        strcmp(g->ops[o + 1].name + 4, ".iteration") != 0)
      abort();
    const tg_subgraph *body = &g->subgraphs[g->ops[o + 1].subgraph];
    if (body->kind != TG_SUBGRAPH_BODY || body->first_op != o + 1) abort();
  }
}


/* A value in a branch that can run has a shape; values computed before the run number its
 * elements, and are values of its type (ONNX's TensorProto.DataType numbers). */
static void check_value(void *user, const onnx_value_report *v) {
  (void)user;
  if (!v->live) return;
  if (!v->has_shape || v->rank > TG_MAX_RANK) abort();
  uint64_t count = 1;
  for (uint32_t d = 0; d < v->rank; ++d) {
    if (v->dims[d] < 0) abort();
    count = v->dims[d] == 0 || count <= UINT64_MAX / (uint64_t)v->dims[d] ? count * (uint64_t)v->dims[d] : 0;
  }
  if (v->ints == NULL && v->floats == NULL) return;
  if (v->count != count || (v->ints && v->floats)) abort();
  static const struct { int32_t type; int64_t lo, hi; } ranges[] = {
      {9, 0, 1}, {2, 0, 255}, {3, -128, 127}, {4, 0, 65535}, {5, -32768, 32767},
      {6, INT32_MIN, INT32_MAX}, {12, 0, UINT32_MAX}, {13, 0, INT64_MAX}};
  for (size_t e = 0; e < v->count; ++e) {
    if (v->ints) {
      for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; ++r)
        if (ranges[r].type == v->type && (v->ints[e] < ranges[r].lo || v->ints[e] > ranges[r].hi)) abort();
    } else if (v->type == 1 && isfinite(v->floats[e]) &&
               (fabs(v->floats[e]) > FLT_MAX || (double)(float)v->floats[e] != v->floats[e])) {
      abort(); /* a float32 value that float32 cannot hold */
    }
  }
}

static tg_status parse(const void *data, size_t size, const tg_allocator *a, tg_graph **out,
                       tg_error_info *err) {
  tg_fuzz_list_inputs(data, size, "fuzz.onnx", a);
  static const tg_input_shape x = {"x", 4, {1, 3, 32, 32}, {{0}}};
  tg_model_options o = {&x, 1};
  const tg_model_options *with = NULL;
  tg_status st = tg_graph_parse_onnx(data, size, "fuzz.onnx", NULL, a, out, err);
  if (st == TG_ERROR_INVALID_ARGUMENT) {
    err->message[0] = '\0';
    with = &o;
    st = tg_graph_parse_onnx(data, size, "fuzz.onnx", with, a, out, err);
  }
  if (st == TG_OK) {
    check_iteration_ops(*out);
    tg_fuzz_check_flow(*out, a);
    tg_error_info again = {{0}};
    if (onnx_read_values(data, size, "fuzz.onnx", with, a, check_value, NULL, &again) != TG_OK) abort();
  }
  return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return tg_fuzz_run(parse, data, size);
}
