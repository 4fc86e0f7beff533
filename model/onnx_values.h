/* What the .onnx reader knows of every value of a model: shapes and the values it computed
 * before the run (folding). Not part of the public API: tests and tests/model/onnx_values.c
 * compare it with ONNX's own shape inference (tests/model/onnx_oracle.py). */
#ifndef TANGRAM_MODEL_ONNX_VALUES_H
#define TANGRAM_MODEL_ONNX_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/graph.h"
#include "tangram/model.h"

/* One value as the reader left it. Pointers are valid during the callback only. */
typedef struct onnx_value_report {
  const char *name;
  const char *scope;           /* "main", or the subgraph's name ("If_3.then_branch") */
  int32_t type;                /* ONNX data type (TensorProto.DataType), 0 unknown */
  int live;                    /* 0: in an If branch the condition known at read time rules out */
  int has_shape;               /* rank and dims are known (every live value has them) */
  uint32_t rank;
  const int64_t *dims;
  size_t count;                /* elements of the values below */
  const int64_t *ints;         /* integer and bool values, or NULL */
  const double *floats;        /* floating-point values, or NULL (both NULL: not computed) */
} onnx_value_report;

typedef void (*onnx_value_visit)(void *user, const onnx_value_report *v);

/* Read a model as tg_graph_parse_onnx does and call `visit` once per value (initializers, graph
 * inputs, node outputs of every subgraph, in that order) before freeing everything. Returns
 * what tg_graph_parse_onnx would (with `err` filled the same way); nothing is visited on failure. */
tg_status onnx_read_values(const void *data, size_t length, const char *source,
                           const tg_model_options *options, const tg_allocator *alloc,
                           onnx_value_visit visit, void *user, tg_error_info *err);

#endif
