/* Which ops may write their output over an input, and which are views of their input: the
 * in-place candidates of a graph's records (layout.h, docs/models.md "In-place ops"). */
#include <string.h>

#include "core/internal.h"
#include "model/model_internal.h"
#include "tangram/layout.h"

/* Elementwise ops: output[i] depends on the inputs at i alone (equal-shaped operands). */
static const char *const k_elementwise[] = {
    /* .tflite builtins */
    "ADD", "SUB", "MUL", "DIV", "SQUARED_DIFFERENCE", "MAXIMUM", "MINIMUM", "POW", "RELU", "RELU6",
    "RELU_N1_TO_1", "RELU_0_TO_1", "LEAKY_RELU", "PRELU", "LOGISTIC", "TANH", "HARD_SWISH", "ELU", "GELU",
    "ABS", "NEG", "EXP", "LOG", "SQRT", "RSQRT", "SQUARE", "SIN", "COS", "FLOOR", "CEIL", "ROUND", "SIGN",
    /* ONNX op types */
    "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Relu", "LeakyRelu", "PRelu", "Sigmoid", "HardSigmoid",
    "HardSwish", "Tanh", "Elu", "Selu", "Gelu", "Erf", "Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Sin",
    "Cos", "Floor", "Ceil", "Round", "Sign", "Softplus", "Clip", "Mish"};

/* Views: the output holds the input's elements in the same order (only input 0 is data). */
static const char *const k_views[] = {"RESHAPE", "SQUEEZE", "EXPAND_DIMS", "Reshape", "Squeeze",
                                      "Unsqueeze", "Flatten", "Identity"};

tg_in_place_kind tg_op_in_place_kind(const char *op_name) {
  if (op_name == NULL) return TG_IN_PLACE_NONE;
  for (size_t i = 0; i < sizeof k_elementwise / sizeof *k_elementwise; ++i)
    if (strcmp(op_name, k_elementwise[i]) == 0) return TG_IN_PLACE_ELEMENTWISE;
  for (size_t i = 0; i < sizeof k_views / sizeof *k_views; ++i)
    if (strcmp(op_name, k_views[i]) == 0) return TG_IN_PLACE_VIEW;
  return TG_IN_PLACE_NONE;
}

/* A view keeps the device layout when the BHWC shapes are equal, or, in a buffer, when batch
 * is 1, channels are equal and only H and W are regrouped (H*W equal): the one texel order a
 * buffer is assumed to have (tangram/layout.h, TG_STORAGE_BUFFER). With batch > 1 the orders
 * engines use differ in where the batch goes, so no regrouping view is offered there. */
static int same_layout(const tg_graph *g, const tg_tensor *a, const tg_tensor *b, int buffer) {
  tg_bhwc x, y;
  if (tg_shape_to_bhwc_ordered(a->shape, a->rank, g->dim_order, &x) != TG_OK ||
      tg_shape_to_bhwc_ordered(b->shape, b->rank, g->dim_order, &y) != TG_OK)
    return 0;
  if (x.b == y.b && x.h == y.h && x.w == y.w && x.c == y.c) return 1;
  return buffer && x.b == 1 && y.b == 1 && x.c == y.c && x.h * x.w == y.h * y.w;
}

tg_status tg_model_in_place_pairs(const tg_graph *graph, const tg_lifetimes *lifetimes,
                                  const tg_model_records *records, int images,
                                  const tg_allocator *alloc, tg_in_place_pair **pairs,
                                  size_t *count) {
  if (pairs == NULL || count == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *pairs = NULL;
  *count = 0;
  if (graph == NULL || lifetimes == NULL || records == NULL || records->records == NULL ||
      lifetimes->tensor_count != graph->tensor_count)
    return TG_ERROR_INVALID_ARGUMENT;
  alloc = tg__alloc_or_default(alloc);
  const tg_record_set *set = records->records;
  size_t *record_of = tg__calloc(alloc, graph->tensor_count ? graph->tensor_count : 1, sizeof *record_of);
  tg_in_place_pair *out = tg__calloc(alloc, graph->op_count ? graph->op_count : 1, sizeof *out);
  if (record_of == NULL || out == NULL) {
    tg__free(alloc, record_of);
    tg__free(alloc, out);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  for (size_t t = 0; t < graph->tensor_count; ++t) record_of[t] = SIZE_MAX;
  for (size_t r = 0; r < set->count; ++r)
    if (records->tensor_of[r] < graph->tensor_count) record_of[records->tensor_of[r]] = r;
  const int buffer = records->storage == TG_STORAGE_BUFFER;
  size_t n = 0;
  for (size_t o = 0; o < graph->op_count; ++o) {
    const tg_op *op = &graph->ops[o];
    const tg_in_place_kind kind = tg_op_in_place_kind(op->name);
    if (kind == TG_IN_PLACE_NONE || op->output_count != 1 || op->input_count == 0) continue;
    if (kind == TG_IN_PLACE_ELEMENTWISE && !buffer && !images) continue;
    const int32_t out_t = op->outputs[0];
    if (out_t < 0 || (size_t)out_t >= graph->tensor_count || record_of[out_t] == SIZE_MAX) continue;
    const tg_tensor *ot = &graph->tensors[out_t];
    /* Graph inputs and outputs (the lifetimes know them from the flags and the graph's lists)
     * keep memory of their own, and constants are never written. */
    if (lifetimes->tensors[out_t].persistent || lifetimes->tensors[out_t].constant) continue;
    const uint32_t inputs = kind == TG_IN_PLACE_VIEW ? 1 : op->input_count;
    for (uint32_t i = 0; i < inputs; ++i) {
      const int32_t in_t = op->inputs[i];
      if (in_t < 0 || (size_t)in_t >= graph->tensor_count || in_t == out_t || record_of[in_t] == SIZE_MAX)
        continue;
      const tg_tensor *it = &graph->tensors[in_t];
      if (lifetimes->tensors[in_t].persistent || lifetimes->tensors[in_t].constant) continue;
      const tg_in_place_pair pair = {(uint32_t)o, record_of[in_t], record_of[out_t], kind == TG_IN_PLACE_VIEW};
      if (!tg__in_place_pair_fits(set->records, set->count, &pair, n, NULL, 0)) continue;
      if (lifetimes->tensors[in_t].last_task != (int32_t)o || it->dtype != ot->dtype) continue;
      if (kind == TG_IN_PLACE_ELEMENTWISE ? !tg__tensor_same_shape(it, ot) : !same_layout(graph, it, ot, buffer)) continue;
      out[n++] = pair;
      break;
    }
  }
  tg__free(alloc, record_of);
  if (n == 0) {
    tg__free(alloc, out);
    out = NULL;
  }
  *pairs = out;
  *count = n;
  return TG_OK;
}
