/* libFuzzer target: the .onnx reader (wire check, protobuf-c decode, shape inference) and its
 * input listing, then lifetimes and records of whatever parses. A model whose input has dynamic
 * dimensions is parsed again with input "x" fixed at 1x3x32x32, so the inference behind it is
 * reached too. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"

static tg_status parse(const void *data, size_t size, const tg_allocator *a, tg_graph **out,
                       tg_error_info *err) {
  tg_fuzz_list_inputs(data, size, "fuzz.onnx", a);
  tg_status st = tg_graph_parse_onnx(data, size, "fuzz.onnx", NULL, a, out, err);
  if (st != TG_ERROR_INVALID_ARGUMENT) return st;
  static const tg_input_shape x = {"x", 4, {1, 3, 32, 32}, {{0}}};
  tg_model_options o = {&x, 1};
  err->message[0] = '\0';
  return tg_graph_parse_onnx(data, size, "fuzz.onnx", &o, a, out, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return tg_fuzz_run(parse, data, size);
}
