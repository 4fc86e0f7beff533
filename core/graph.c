/* Graph construction and destruction. Readers and lifetimes live in their own files. */
#include "tangram/graph.h"

#include "internal.h"

tg_status tg_graph_create(size_t tensor_count, size_t op_count, const tg_allocator *alloc,
                          tg_graph **out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  alloc = tg__alloc_or_default(alloc);
  tg_graph *g = tg__calloc(alloc, 1, sizeof *g);
  if (g == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  g->alloc = *alloc;
  g->subgraph_count = 1;
  g->tensor_count = tensor_count;
  g->op_count = op_count;
  g->tensors = tg__calloc(alloc, tensor_count ? tensor_count : 1, sizeof *g->tensors);
  g->ops = tg__calloc(alloc, op_count ? op_count : 1, sizeof *g->ops);
  if (g->tensors == NULL || g->ops == NULL) {
    tg_graph_destroy(g);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  return (*out = g), TG_OK;
}

void tg_graph_destroy(tg_graph *g) {
  if (g == NULL) return;
  tg_allocator a = g->alloc;
  if (g->tensors)
    for (size_t i = 0; i < g->tensor_count; ++i) tg__free(&a, g->tensors[i].name);
  if (g->ops)
    for (size_t i = 0; i < g->op_count; ++i) {
      tg__free(&a, g->ops[i].name);
      tg__free(&a, g->ops[i].inputs);
      tg__free(&a, g->ops[i].outputs);
    }
  tg__free(&a, g->tensors);
  tg__free(&a, g->ops);
  tg__free(&a, g->inputs);
  tg__free(&a, g->outputs);
  tg__free(&a, g->source);
  tg__free(&a, g);
}
