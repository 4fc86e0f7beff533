/* libFuzzer target: the .onnx reader (wire check, protobuf-c decode, shape inference) and its
 * input listing, then lifetimes and records of whatever parses, and the control-flow
 * invariants (fuzz_flow.h; and every Loop and Scan body begins with the op that reads the trip
 * count, condition and scan inputs in every iteration). A model whose input has dynamic
 * dimensions is parsed again with input "x" fixed at 1x3x32x32, so the inference behind it is
 * reached too. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "fuzz_flow.h"

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

static tg_status parse(const void *data, size_t size, const tg_allocator *a, tg_graph **out,
                       tg_error_info *err) {
  tg_fuzz_list_inputs(data, size, "fuzz.onnx", a);
  tg_status st = tg_graph_parse_onnx(data, size, "fuzz.onnx", NULL, a, out, err);
  if (st == TG_ERROR_INVALID_ARGUMENT) {
    static const tg_input_shape x = {"x", 4, {1, 3, 32, 32}, {{0}}};
    tg_model_options o = {&x, 1};
    err->message[0] = '\0';
    st = tg_graph_parse_onnx(data, size, "fuzz.onnx", &o, a, out, err);
  }
  if (st == TG_OK) {
    check_iteration_ops(*out);
    tg_fuzz_check_flow(*out, a);
  }
  return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return tg_fuzz_run(parse, data, size);
}
