/* Internal interface of the .onnx reader (model/onnx*.c).
 *
 * onnx_decode.c  checks the protobuf wire format (nesting, lengths, wire types, the memory the
 *                decoded model will take) without allocating, then decodes ModelProto with
 *                protobuf-c under a memory budget; also the reader's arena and error helpers.
 * onnx_shapes.c  shape (and small-value) inference, one function per op type.
 * onnx.c         the public entry: values from the graph, nodes in order, the tg_graph; and what
 *                it knows of every value for the tests (onnx_values.h).
 * Calls go onnx.c -> onnx_shapes.c -> onnx_decode.c only. */
#ifndef TANGRAM_MODEL_ONNX_INTERNAL_H
#define TANGRAM_MODEL_ONNX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "model/model_internal.h"
#include "onnx.pb-c.h"
#include "tangram/graph.h"

/* ONNX TensorProto.DataType values used by the reader. */
enum {
  ONNX_UNDEFINED = 0, ONNX_FLOAT = 1, ONNX_UINT8 = 2, ONNX_INT8 = 3, ONNX_UINT16 = 4,
  ONNX_INT16 = 5, ONNX_INT32 = 6, ONNX_INT64 = 7, ONNX_STRING = 8, ONNX_BOOL = 9,
  ONNX_FLOAT16 = 10, ONNX_DOUBLE = 11, ONNX_UINT32 = 12, ONNX_UINT64 = 13, ONNX_COMPLEX64 = 14,
  ONNX_COMPLEX128 = 15, ONNX_BFLOAT16 = 16
};

/* Computed tensors with at most this many elements have their values tracked (shape
 * arithmetic); initializers and Constant nodes are decoded up to ONNX_MAX_DECODE elements (shape
 * vectors, axes, pads, scales are far smaller; weights are never needed). */
#define ONNX_MAX_FOLD 4096
#define ONNX_MAX_DECODE 256
/* Largest dimension the reader accepts: every product of two dimensions fits 64 bits and
 * every element count must also fit 63 bits. */
#define ONNX_MAX_DIM ((int64_t)1 << 62)
/* Largest kernel, stride, dilation and padding of a sliding window. */
#define ONNX_MAX_WINDOW ((int64_t)1 << 31)

/* A bump allocator: blocks from the caller's allocator, freed together. */
typedef struct onnx_arena_block onnx_arena_block;
typedef struct onnx_arena {
  const tg_allocator *alloc;
  onnx_arena_block *head;
  size_t used, capacity;  /* in the head block */
} onnx_arena;

void *onnx_arena_alloc(onnx_arena *a, size_t size);
void onnx_arena_free(onnx_arena *a);

/* What the reader knows of one ONNX value (a named tensor). */
enum { ONNX_KIND_INPUT = 1, ONNX_KIND_INITIALIZER = 2, ONNX_KIND_CONSTANT = 3, ONNX_KIND_NODE = 4 };

typedef struct onnx_value {
  const char *name;            /* borrowed from the decoded model */
  int32_t type;                /* ONNX data type (0: unknown) */
  uint32_t rank;
  int64_t dims[TG_MAX_RANK];
  uint8_t kind;                /* ONNX_KIND_* */
  uint8_t constant;            /* known before the run: initializer, Constant, folded */
  uint8_t has_shape;           /* dims are known */
  uint8_t has_data;            /* values are known (count elements in i or f) */
  uint8_t is_float;            /* values live in f (float types) rather than i */
  uint8_t is_output;           /* a graph output */
  uint8_t external;            /* initializer whose data lives in another file */
  uint8_t dynamic;             /* graph inputs: bit d when the file leaves dimension d dynamic */
  int32_t producer;            /* node index, -1 when none */
  size_t count;                /* elements when has_data */
  int64_t *i;                  /* integer and bool values (arena) */
  double *f;                   /* floating-point values (arena) */
  /* Values that cannot be computed before the run although their inputs' could (an overflow,
   * a division by zero) or that follow from such values: why, naming the node that failed
   * (arena), the status a node needing them fails with, and the scope of that node. */
  const char *why;
  const char *why_scope;
  tg_status why_status;
} onnx_value;

/* One node as the inference sees it. */
typedef struct onnx_node {
  const Onnx__NodeProto *proto;
  size_t index;
  const char *op;              /* op_type */
  int64_t opset;               /* the default domain's opset version */
  size_t nin, nout;
  onnx_value **in;             /* nin entries; NULL = absent optional input */
  onnx_value **out;            /* nout entries; NULL = absent optional output */
  int folded;                  /* set by inference: every output got its values */
} onnx_node;

/* Reader state shared by the three files. */
typedef struct onnx_ctx {
  const char *source;
  const char *scope;           /* the subgraph being read ("main" for the graph) */
  tg_error_info *err;
  const tg_allocator *alloc;
  onnx_arena arena;
} onnx_ctx;

/* Error helpers: format into ctx->err with "<source>: " or "<source>: node N 'name' (Op): "
 * in front; return `status`. */
tg_status onnx_fail(onnx_ctx *c, tg_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
tg_status onnx_fail_node(onnx_ctx *c, const onnx_node *n, tg_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* "node 3 'name' (Op)" or "node 3 (Op)" for messages. */
void onnx_node_label(const onnx_node *n, char *buf, size_t size);

/* A decoded model: protobuf-c's ModelProto and the budgeted allocator it came from. */
typedef struct onnx_decoded onnx_decoded;

/* Check the wire format and decode. `err` names the byte offset and the field path on
 * failure (TG_ERROR_PARSE), or says the decoded model would need more than its budget. */
tg_status onnx_decode(onnx_ctx *c, const uint8_t *data, size_t length, onnx_decoded **out,
                      const Onnx__ModelProto **model);
void onnx_decoded_free(onnx_decoded *d, const tg_allocator *alloc);

/* Fill `v`'s type, dims and (small tensors) values from a TensorProto. `what` names it in
 * errors ("initializer 'w'", "node 3 'c' (Constant)"). Dims are checked (rank, sign, element
 * count) and the data length must match them. */
tg_status onnx_value_from_tensor(onnx_ctx *c, const Onnx__TensorProto *t, const char *what,
                                 onnx_value *v);

/* Infer the outputs of `n` (shapes, types and, where cheap and small, values). Inputs that are
 * present have has_shape set. On failure the error names the node and op type. */
tg_status onnx_infer_node(onnx_ctx *c, onnx_node *n);

/* The index-th op type with shape inference (alphabetical order not guaranteed); NULL past the
 * end. */
const char *onnx_op_at(size_t index);

/* Checked element count of a shape: 0 and sets *count, or -1 when it exceeds 2^63 - 1. */
int onnx_element_count(const int64_t *dims, uint32_t rank, uint64_t *count);

/* Whether an ONNX data type holds floating-point values (kept in onnx_value.f). */
int onnx_type_is_float(int32_t type);

/* The tg_dtype for an ONNX data type. */
tg_dtype onnx_dtype(int32_t type);
/* "float32", "int64", ... for messages; "type <n>" is not produced: unknown types print as
 * "unknown". */
const char *onnx_type_name(int32_t type);

#endif
