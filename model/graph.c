/* Graph construction and destruction. Readers and lifetimes live in their own files. */
#include "tangram/graph.h"

#include <string.h>

#include "model/model_internal.h"

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

tg_status tg_graph_set_tensor(tg_graph *g, size_t index, const char *name, uint32_t rank,
                              const int64_t *shape, tg_dtype dtype, uint32_t flags) {
  if (g == NULL || index >= g->tensor_count || rank > TG_MAX_RANK || name == NULL ||
      (rank > 0 && shape == NULL))
    return TG_ERROR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < rank; ++i)
    if (shape[i] < 0) return TG_ERROR_INVALID_ARGUMENT;
  char *copy = tg__strdup(&g->alloc, name);
  if (copy == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_tensor *t = &g->tensors[index];
  tg__free(&g->alloc, t->name);
  t->name = copy;
  t->rank = rank;
  memset(t->shape, 0, sizeof t->shape);
  for (uint32_t i = 0; i < rank; ++i) t->shape[i] = shape[i];
  t->dtype = dtype;
  t->flags = flags;
  return TG_OK;
}

tg_status tg_graph_set_op(tg_graph *g, size_t index, const char *name, uint32_t input_count,
                          const int32_t *inputs, uint32_t output_count, const int32_t *outputs) {
  if (g == NULL || index >= g->op_count || name == NULL || (input_count && !inputs) ||
      (output_count && !outputs))
    return TG_ERROR_INVALID_ARGUMENT;
  char *copy = tg__strdup(&g->alloc, name);
  int32_t *in = tg__calloc(&g->alloc, input_count ? input_count : 1, sizeof *in);
  int32_t *out = tg__calloc(&g->alloc, output_count ? output_count : 1, sizeof *out);
  if (!copy || !in || !out) {
    tg__free(&g->alloc, copy);
    tg__free(&g->alloc, in);
    tg__free(&g->alloc, out);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (input_count) memcpy(in, inputs, input_count * sizeof *in);
  if (output_count) memcpy(out, outputs, output_count * sizeof *out);
  tg_op *op = &g->ops[index];
  tg__free(&g->alloc, op->name);
  tg__free(&g->alloc, op->inputs);
  tg__free(&g->alloc, op->outputs);
  op->name = copy;
  op->input_count = input_count;
  op->output_count = output_count;
  op->inputs = in;
  op->outputs = out;
  return TG_OK;
}

tg_status tg_graph_set_io(tg_graph *g, size_t input_count, const uint32_t *inputs,
                          size_t output_count, const uint32_t *outputs) {
  if (g == NULL || (input_count && !inputs) || (output_count && !outputs))
    return TG_ERROR_INVALID_ARGUMENT;
  for (size_t i = 0; i < input_count; ++i)
    if (inputs[i] >= g->tensor_count) return TG_ERROR_INVALID_ARGUMENT;
  for (size_t i = 0; i < output_count; ++i)
    if (outputs[i] >= g->tensor_count) return TG_ERROR_INVALID_ARGUMENT;
  uint32_t *in = tg__calloc(&g->alloc, input_count ? input_count : 1, sizeof *in);
  uint32_t *out = tg__calloc(&g->alloc, output_count ? output_count : 1, sizeof *out);
  if (!in || !out) {
    tg__free(&g->alloc, in);
    tg__free(&g->alloc, out);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (input_count) memcpy(in, inputs, input_count * sizeof *in);
  if (output_count) memcpy(out, outputs, output_count * sizeof *out);
  tg__free(&g->alloc, g->inputs);
  tg__free(&g->alloc, g->outputs);
  for (size_t t = 0; t < g->tensor_count; ++t) g->tensors[t].flags &= ~(uint32_t)(TG_TENSOR_INPUT | TG_TENSOR_OUTPUT);
  g->inputs = in;
  g->input_count = input_count;
  g->outputs = out;
  g->output_count = output_count;
  for (size_t i = 0; i < input_count; ++i) g->tensors[inputs[i]].flags |= TG_TENSOR_INPUT;
  for (size_t i = 0; i < output_count; ++i) g->tensors[outputs[i]].flags |= TG_TENSOR_OUTPUT;
  return TG_OK;
}

tg_status tg__graph_read_file(const char *path, tg__graph_parse_fn parse, const tg_allocator *alloc,
                              tg_graph **out, tg_error_info *err) {
  if (out == NULL || path == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "path or out is NULL");
  *out = NULL;
  alloc = tg__alloc_or_default(alloc);
  char *data;
  size_t length;
  tg_status st = tg__read_file(path, alloc, &data, &length, err);
  if (st != TG_OK) return st;
  st = parse(data, length, path, alloc, out, err);
  tg__free(alloc, data);
  return st;
}
