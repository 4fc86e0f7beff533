/* What every fuzz target does with a graph that parsed: lifetimes (with and without plan_io)
 * and records for every storage and precision under the default device limits. Any failure
 * must come with a message, and everything must be freed: the caller checks live_blocks. */
#ifndef TG_FUZZ_COMMON_H
#define TG_FUZZ_COMMON_H

#include <stdint.h>
#include <stdlib.h>

#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/model.h"

static void tg_fuzz_exercise_graph(const tg_graph *g, const tg_allocator *a) {
  tg_device_limits limits = tg_device_limits_default();
  /* Control flow: the run order of one execution names ops of the graph only. */
  for (uint32_t branch = 0; branch < 2; ++branch) {
    uint32_t *order = NULL;
    size_t length = 0;
    tg_error_info err = {{0}};
    tg_status st = tg_graph_run_order(g, branch, 2, a, &order, &length, &err);
    if (st != TG_OK && (order != NULL || err.message[0] == '\0')) abort();
    for (size_t k = 0; st == TG_OK && k < length; ++k)
      if (order[k] >= g->op_count) abort();
    if (order) a->free(a->user, order);
  }
  for (int plan_io = 0; plan_io <= 1; ++plan_io) {
    tg_lifetime_options options = {plan_io};
    tg_lifetimes *l = NULL;
    tg_error_info err = {{0}};
    tg_status st = tg_graph_compute_lifetimes(g, &options, a, &l, &err);
    if (st != TG_OK) {
      if (l != NULL || err.message[0] == '\0') abort();
      continue;
    }
    for (int s = 0; s < TG_STORAGE_COUNT; ++s)
      for (int p = 0; p < TG_PRECISION_COUNT; ++p) {
        tg_model_records *r = NULL;
        st = tg_model_records_create(g, l, (tg_storage)s, (tg_precision)p, &limits, a, &r, &err);
        if (st != TG_OK && (r != NULL || err.message[0] == '\0')) abort();
        if (st == TG_OK) {
          /* Every planned tensor has exactly one record, in one of the two sets. */
          size_t planned = 0;
          for (size_t t = 0; t < l->tensor_count; ++t) planned += l->tensors[t].planned != 0;
          if (r->records->count + r->fallback->count != planned) abort();
          for (size_t i = 0; i < r->records->count; ++i)
            if (r->records->records[i].first_task > r->records->records[i].last_task) abort();
        }
        tg_model_records_destroy(r);
      }
    tg_lifetimes_destroy(l);
  }
}

/* Run `parse` on the input with a leak-counting allocator and exercise the result. */
typedef tg_status (*tg_fuzz_parse_fn)(const void *data, size_t size, const tg_allocator *a,
                                      tg_graph **out, tg_error_info *err);

static int tg_fuzz_run(tg_fuzz_parse_fn parse, const uint8_t *data, size_t size) {
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 0);
  tg_graph *g = NULL;
  tg_error_info err = {{0}};
  tg_status st = parse(data, size, &fa.base, &g, &err);
  if (st == TG_OK) {
    if (g == NULL) abort();
    tg_fuzz_exercise_graph(g, &fa.base);
    tg_graph_destroy(g);
  } else if (g != NULL || err.message[0] == '\0') {
    abort();
  }
  if (fa.live_blocks != 0) abort();
  return 0;
}

#endif
