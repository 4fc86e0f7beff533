/* libFuzzer target: the .tflite reader and its input listing, then lifetimes and records of
 * whatever parses, and the control-flow invariants (fuzz_flow.h). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "fuzz_flow.h"

static tg_status parse(const void *data, size_t size, const tg_allocator *a, tg_graph **out,
                       tg_error_info *err) {
  tg_fuzz_list_inputs(data, size, "fuzz.tflite", a);
  tg_status st = tg_graph_parse_tflite(data, size, "fuzz.tflite", a, out, err);
  if (st == TG_OK) tg_fuzz_check_flow(*out, a);
  return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return tg_fuzz_run(parse, data, size);
}
