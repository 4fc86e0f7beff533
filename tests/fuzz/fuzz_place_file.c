/* libFuzzer target: place files (tg_placement_parse) and placement specs
 * (tg_placement_apply_spec) on a small fixed graph, then the spaces, plans, waits and baseline
 * of whatever placement results. Every failure must come with a message and leave the
 * placement untouched; nothing may leak. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/placement.h"
#include "tangram/schedule.h"

static const char k_graph[] =
    "tensor x 1x8x8x4 float32 input\n"
    "tensor w 4 float32 constant\n"
    "tensor a 1x8x8x4 float32\n"
    "tensor b 1x8x8x4 float32\n"
    "tensor c 1x4x4x8 float32\n"
    "tensor d 1x8x8x4 float32\n"
    "tensor y 1x8x8x4 float32 output\n"
    "op CONV_2D inputs=x,w outputs=a\n"
    "op Custom inputs=a outputs=b\n"
    "op ADD inputs=x,b outputs=c\n"
    "op CONV_2D inputs=a,c outputs=d\n"
    "op Custom inputs=d,b outputs=y\n";

static void exercise(const tg_graph *g, const tg_lifetimes *l, const tg_schedule *s,
                     const tg_model_records *mr, const tg_processor *proc, const tg_allocator *a) {
  tg_error_info err = {{0}};
  tg_spaces *sp = NULL;
  if (tg_spaces_create(g, l, mr, proc, a, &sp, &err) != TG_OK) {
    if (sp != NULL || err.message[0] == '\0') abort();
    return;
  }
  tg_space_options o[TG_SET_COUNT];
  for (int k = 0; k < TG_SET_COUNT; ++k)
    o[k] = (tg_space_options){.plan = {.strategy = TG_STRATEGY_BEST},
                              .policy = proc[0] == TG_PROCESSOR_CPU ? TG_POLICY_PARALLEL_SAFE : TG_POLICY_SERIAL};
  tg_spaces_plan plan;
  tg_status st = tg_spaces_plan_all(sp, s, o, NULL, 0, proc[1] == TG_PROCESSOR_GPU, a, &plan, &err);
  if (st == TG_OK) {
    const tg_spaces_waits *w = plan.waits;
    for (size_t e = 0; e < w->cross_count; ++e)
      if (proc[w->cross[e].op] == proc[w->cross[e].after] || w->cross[e].after >= w->cross[e].op) abort();
    tg_partition_baseline bl;
    st = tg_spaces_partition_baseline(sp, mr, &o[0], &o[0], a, &bl, &err);
  }
  if (st != TG_OK && err.message[0] == '\0') abort();
  tg_spaces_plan_free(&plan);
  tg_spaces_destroy(sp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 0);
  const tg_allocator *a = &fa.base;
  tg_graph *g = NULL;
  tg_lifetimes *l = NULL;
  tg_schedule *s = NULL;
  tg_model_records *mr = NULL;
  tg_error_info err = {{0}};
  if (tg_graph_parse_text(k_graph, sizeof k_graph - 1, "fuzz.graph", a, &g, &err) != TG_OK ||
      tg_graph_compute_lifetimes(g, NULL, a, &l, &err) != TG_OK ||
      tg_schedule_create(g, NULL, a, &s, &err) != TG_OK ||
      tg_model_records_create(g, l, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL, a, &mr, &err) != TG_OK)
    abort();
  tg_processor proc[5], before[5];
  for (int i = 0; i < 5; ++i) proc[i] = before[i] = (tg_processor)(i % 2);
  /* As a place file. */
  err.message[0] = '\0';
  tg_status st = tg_placement_parse(g, (const char *)data, size, "fuzz.place", proc, &err);
  if (st != TG_OK) {
    if (err.message[0] == '\0' || memcmp(proc, before, sizeof proc) != 0) abort();
  } else {
    for (int i = 0; i < 5; ++i)
      if ((unsigned)proc[i] >= TG_PROCESSOR_COUNT) abort();
    exercise(g, l, s, mr, proc, a);
  }
  /* As a spec (its first line, NUL-terminated). */
  char spec[257];
  size_t n = 0;
  while (n < size && n < 256 && data[n] != '\n') {
    spec[n] = (char)data[n];
    ++n;
  }
  spec[n] = '\0';
  memcpy(proc, before, sizeof proc);
  err.message[0] = '\0';
  st = tg_placement_apply_spec(g, spec, proc, &err);
  if (st != TG_OK) {
    if (err.message[0] == '\0' || memcmp(proc, before, sizeof proc) != 0) abort();
  } else {
    exercise(g, l, s, mr, proc, a);
  }
  tg_model_records_destroy(mr);
  tg_schedule_destroy(s);
  tg_lifetimes_destroy(l);
  tg_graph_destroy(g);
  if (fa.live_blocks != 0) abort();
  return 0;
}
