/* libFuzzer target: the .tflite reader and its input listing, then lifetimes and records of whatever parses. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"

static tg_status parse(const void *data, size_t size, const tg_allocator *a, tg_graph **out,
                       tg_error_info *err) {
  tg_fuzz_list_inputs(data, size, "fuzz.tflite", a);
  return tg_graph_parse_tflite(data, size, "fuzz.tflite", a, out, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return tg_fuzz_run(parse, data, size);
}
