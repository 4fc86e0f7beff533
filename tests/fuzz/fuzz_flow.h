/* The control-flow invariants the model fuzz targets check on every graph that parses, as an
 * engine runs it (tg_subgraph in tangram/graph.h):
 *  - the run order of one execution (each branch in turn, 2 iterations) runs every op once
 *    per iteration of each loop body around it, and only in the branch taken;
 *  - every planned tensor that an op of a loop body reads but that was written before the body
 *    (a scan input, a trip count, an outer value) lives until the op that ends the loop.
 * A broken invariant aborts. Everything allocated is freed (the caller checks live_blocks). */
#ifndef TG_FUZZ_FLOW_H
#define TG_FUZZ_FLOW_H

#include <stdint.h>
#include <stdlib.h>

#include "tangram/graph.h"

/* How many times op `o` runs in one execution with `branch` and `iterations`. */
static size_t tg_fuzz_runs_of(const tg_graph *g, size_t o, uint32_t branch, uint32_t iterations) {
  size_t runs = 1;
  for (uint32_t k = g->ops[o].subgraph, steps = 0; k != 0 && steps < g->flow_count;
       k = g->subgraphs[k].parent, ++steps) {
    const tg_subgraph *s = &g->subgraphs[k];
    if (s->kind == TG_SUBGRAPH_BODY) runs *= iterations;
    if (s->kind != TG_SUBGRAPH_BRANCH) continue;
    /* It runs unless a sibling is nearer `branch` from below, or, when it lies above `branch`,
     * unless a sibling lies below it. */
    for (size_t j = 1; j < g->flow_count; ++j) {
      const tg_subgraph *x = &g->subgraphs[j];
      if (j == k || x->parent != s->parent || x->control_op != s->control_op) continue;
      if (s->branch <= branch ? x->branch <= branch && x->branch > s->branch : x->branch < s->branch) runs = 0;
    }
  }
  return runs;
}

static void tg_fuzz_check_flow(const tg_graph *g, const tg_allocator *a) {
  if (g->flow_count == 0 || g->subgraphs == NULL) return;
  for (uint32_t branch = 0; branch < 2; ++branch) {
    uint32_t *order = NULL;
    size_t length = 0;
    tg_error_info err = {{0}};
    if (tg_graph_run_order(g, branch, 2, a, &order, &length, &err) != TG_OK) {
      if (order != NULL || err.message[0] == '\0') abort();
      return; /* an inconsistent table is refused, with a message */
    }
    size_t *count = a->alloc(a->user, (g->op_count ? g->op_count : 1) * sizeof *count);
    if (count == NULL) abort();
    for (size_t o = 0; o < g->op_count; ++o) count[o] = 0;
    for (size_t k = 0; k < length; ++k) count[order[k]]++;
    for (size_t o = 0; o < g->op_count; ++o)
      if (count[o] != tg_fuzz_runs_of(g, o, branch, 2)) abort();
    a->free(a->user, count);
    a->free(a->user, order);
  }
  tg_lifetimes *l = NULL;
  tg_error_info err = {{0}};
  if (tg_graph_compute_lifetimes(g, NULL, a, &l, &err) != TG_OK) {
    if (l != NULL || err.message[0] == '\0') abort();
    return;
  }
  for (size_t o = 0; o < g->op_count; ++o) {
    const tg_op *op = &g->ops[o];
    for (uint32_t i = 0; i < op->input_count; ++i) {
      int32_t t = op->inputs[i];
      if (t < 0 || !l->tensors[t].planned) continue;
      int32_t producer = l->tensors[t].producer;
      for (uint32_t k = op->subgraph, steps = 0; k != 0 && steps < g->flow_count; k = g->subgraphs[k].parent, ++steps) {
        const tg_subgraph *s = &g->subgraphs[k];
        int inside = producer >= (int32_t)s->first_op && producer < (int32_t)s->end_op;
        if (s->kind == TG_SUBGRAPH_BODY && !inside && l->tensors[t].last_task < (int32_t)s->control_op) abort();
      }
    }
  }
  tg_lifetimes_destroy(l);
}

#endif
