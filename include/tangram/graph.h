/* A model's dataflow graph (tensors and ops in execution order) and tensor lifetimes.
 * Readers for .tflite files and the plain text graph format fill it; the scheduler, the
 * storage layouts and the backends consume it. */
#ifndef TANGRAM_GRAPH_H
#define TANGRAM_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* Element types. Values equal TFLite's TensorType so the reader can pass them through. */
typedef enum tg_dtype {
  TG_DTYPE_FLOAT32 = 0, TG_DTYPE_FLOAT16 = 1, TG_DTYPE_INT32 = 2, TG_DTYPE_UINT8 = 3,
  TG_DTYPE_INT64 = 4, TG_DTYPE_STRING = 5, TG_DTYPE_BOOL = 6, TG_DTYPE_INT16 = 7,
  TG_DTYPE_COMPLEX64 = 8, TG_DTYPE_INT8 = 9, TG_DTYPE_FLOAT64 = 10, TG_DTYPE_COMPLEX128 = 11,
  TG_DTYPE_UINT64 = 12, TG_DTYPE_RESOURCE = 13, TG_DTYPE_VARIANT = 14, TG_DTYPE_UINT32 = 15,
  TG_DTYPE_UINT16 = 16, TG_DTYPE_INT4 = 17,
  TG_DTYPE_UNKNOWN = 255
} tg_dtype;

/* Tensor marks (bits of tg_tensor.flags). */
enum {
  TG_TENSOR_INPUT = 1u << 0,    /* a graph input */
  TG_TENSOR_OUTPUT = 1u << 1,   /* a graph output */
  TG_TENSOR_CONSTANT = 1u << 2, /* holds data in the file (weights) or marked constant */
  TG_TENSOR_ASSUMED_SHAPE = 1u << 3 /* a graph input whose dynamic dimensions (dynamic_dims)
                                       were given no size and take the size the file records */
};

/* Largest tensor rank Tangram represents (readers reject higher ranks). */
#define TG_MAX_RANK 8

/* One tensor of a graph. Strings and arrays are owned by the graph. */
typedef struct tg_tensor {
  char *name;                  /* never NULL (readers synthesise "tensor_<i>" if absent) */
  uint32_t rank;               /* 0..TG_MAX_RANK */
  int64_t shape[TG_MAX_RANK];  /* each >= 0, in the graph's dim_order; readers refuse dynamic
                                  dimensions that tg_model_options does not fix */
  tg_dtype dtype;
  uint32_t flags;              /* TG_TENSOR_* */
  uint32_t dynamic_dims;       /* graph inputs: bit d set when the file leaves dimension d
                                  dynamic (shape[d] is then the size planned); else 0 */
  uint32_t subgraph;           /* index into graph->subgraphs (0: the main graph) */
} tg_tensor;

/* Where a graph's tensors keep their channels (which dimension the storage layouts pack into
 * 4-channel slices, see layout.h). */
typedef enum tg_dim_order {
  TG_DIM_ORDER_NHWC = 0,       /* channels last: [B,H,W,C] (.tflite, text graphs) */
  TG_DIM_ORDER_NCHW = 1        /* channels second: [N,C,H,W] (.onnx) */
} tg_dim_order;

/* Op marks (bits of tg_op.flags). */
enum {
  TG_OP_CONTROL_FLOW = 1u << 0 /* starts, iterates or ends a control-flow construct (tg_subgraph):
                                  what it writes changes from one execution or iteration to the
                                  next, so it is never constant, whatever it reads */
};

/* One op of a graph: the tensors it reads and writes. Owned by the graph. */
typedef struct tg_op {
  char *name;                  /* builtin op name ("CONV_2D"), custom code, or the text graph's op name */
  uint32_t input_count;
  uint32_t output_count;
  int32_t *inputs;             /* tensor indices; -1 = optional input absent */
  int32_t *outputs;            /* tensor indices (never -1) */
  uint32_t subgraph;           /* index into graph->subgraphs (0: the main graph) */
  uint32_t flags;              /* TG_OP_* (0: an ordinary op) */
} tg_op;

/* Control flow. A reader lays the ops of a model's subgraphs (the branches of an If, the body
 * of a loop, a called function) out in the op list of the graph, inside the interval of the
 * control-flow op that runs them, so that the plain task order of the graph, with the lifetime
 * rule below, is conservative for every execution:
 *   - branch: the branches of one op follow each other, then the op itself (reading the
 *     condition, every branch's outputs and every outer value any branch reads; writing the
 *     op's outputs). Only one branch runs; intermediates of different branches never overlap.
 *   - body: an op that starts the loop (writing the values that cross iterations: the body's
 *     carried inputs, and the stacked scan outputs) comes first, then the body (one or more
 *     sibling subgraphs run in turn every iteration, e.g. a WHILE's cond and body), then the op
 *     that ends the loop (reading the body's outputs and inputs and every outer value the body
 *     reads; writing the final carried values). What an engine does at the start of every
 *     iteration (taking slice i of a scan input, counting iterations) is an op of the body, its
 *     first (ONNX: Loop.iteration, Scan.iteration). The body runs any number of times: values
 *     crossing iterations live from the start op to the end op, intermediates stay inside, and
 *     between iterations an engine copies the body's carried outputs into its carried inputs.
 *   - call: the called subgraph's ops, then the call op reading its outputs and writing its own.
 * Subgraphs nest: a subgraph's ops [first_op, end_op) hold its nested subgraphs' ops too. The
 * ops that start, iterate or end a construct are marked TG_OP_CONTROL_FLOW.
 * Lifetimes (tg_graph_compute_lifetimes) add one rule: a tensor that an op of a body reads but
 * that was written before the body (or is a graph input) lives until the op that ends the loop,
 * since every iteration reads it. */
typedef enum tg_subgraph_kind {
  TG_SUBGRAPH_MAIN = 0,        /* the model's main graph (subgraph 0) */
  TG_SUBGRAPH_BRANCH = 1,      /* one branch of an If */
  TG_SUBGRAPH_BODY = 2,        /* a loop body (Loop, Scan, WHILE's cond and body) */
  TG_SUBGRAPH_CALL = 3         /* run once (CALL_ONCE, CALL) */
} tg_subgraph_kind;

typedef struct tg_subgraph {
  char *name;                  /* "main", "If_32.then_branch", ... (owned by the graph) */
  tg_subgraph_kind kind;
  uint32_t parent;             /* the enclosing subgraph (0 for the main graph and its children) */
  uint32_t control_op;         /* the op that ends the construct (If, Loop.end, ...); 0 for main */
  uint32_t branch;             /* branch index under control_op (If: 0 then, 1 else); 0 otherwise */
  uint32_t first_op, end_op;   /* its ops and its nested subgraphs' ops: [first_op, end_op) */
} tg_subgraph;

/* A graph. Op order is execution order. Owns all its memory (from `alloc`); free with
 * tg_graph_destroy. */
typedef struct tg_graph {
  size_t tensor_count;
  tg_tensor *tensors;
  size_t op_count;
  tg_op *ops;
  size_t input_count;
  uint32_t *inputs;            /* graph input tensor indices */
  size_t output_count;
  uint32_t *outputs;           /* graph output tensor indices */
  uint32_t subgraph_count;     /* .tflite: subgraphs in the file; else 1 */
  size_t flow_count;           /* entries of `subgraphs` (0: a graph without control flow) */
  tg_subgraph *subgraphs;      /* subgraphs[0] is the main graph when flow_count > 0 */
  tg_dim_order dim_order;      /* NHWC unless the reader says otherwise (tg_graph_create: NHWC) */
  char *source;                /* path or description of where it came from */
  tg_allocator alloc;
} tg_graph;

/* Create an empty graph with room for the given counts (all zeroed: tensor names are NULL
 * until set). Used by readers and by programs that build a graph in code. The caller owns the
 * graph; `*out` is NULL on failure (TG_ERROR_OUT_OF_HOST_MEMORY). */
tg_status tg_graph_create(size_t tensor_count, size_t op_count, const tg_allocator *alloc,
                          tg_graph **out);
/* Free a graph and everything it owns. NULL is a no-op. */
void tg_graph_destroy(tg_graph *graph);

/* Builders for graphs made in code: each copies its arguments into graph-owned memory
 * (replacing what the slot held). TG_ERROR_INVALID_ARGUMENT for a slot index out of range, a
 * NULL name, a rank above TG_MAX_RANK or a negative dimension; an op's tensor indices are
 * checked later (tg_graph_compute_lifetimes). On failure the slot is left as it was. */
tg_status tg_graph_set_tensor(tg_graph *graph, size_t index, const char *name, uint32_t rank,
                              const int64_t *shape, tg_dtype dtype, uint32_t flags);
tg_status tg_graph_set_op(tg_graph *graph, size_t index, const char *name, uint32_t input_count,
                          const int32_t *inputs, uint32_t output_count, const int32_t *outputs);
/* Set the graph inputs and outputs (copied), replacing the previous ones and their
 * TG_TENSOR_INPUT / TG_TENSOR_OUTPUT marks. TG_ERROR_INVALID_ARGUMENT for an index out of
 * range; on any failure the graph is unchanged. */
tg_status tg_graph_set_io(tg_graph *graph, size_t input_count, const uint32_t *inputs,
                          size_t output_count, const uint32_t *outputs);

/* The order in which the ops run for one execution, as an engine runs them: the branch
 * `branch` of every If (where it has no such branch: the nearest below, else its first; an If
 * whose condition was known when the model was read keeps one) and `iterations` runs of every
 * loop body (each of its sibling subgraphs in turn, the body's iteration op first: so what
 * every iteration reads is read `iterations` times). Without control flow, every op once in
 * order. `*order` (allocated from `alloc`, free with its free) holds `*count` op indices; ops
 * may repeat. TG_ERROR_GRAPH for an inconsistent subgraph table (naming it), TG_ERROR_LIMIT
 * past 2^31 entries. O(count). */
tg_status tg_graph_run_order(const tg_graph *graph, uint32_t branch, uint32_t iterations,
                             const tg_allocator *alloc, uint32_t **order, size_t *count,
                             tg_error_info *err);
/* The name of the subgraph op `op` belongs to ("main" without control flow). */
const char *tg_graph_op_subgraph_name(const tg_graph *graph, size_t op);

/* Lifetime facts derived from a graph (see tg_graph_compute_lifetimes). */
typedef struct tg_tensor_lifetime {
  int32_t producer;            /* op index that writes it, -1 if none */
  int32_t first_task;          /* producer, or 0 for inputs/constants; -1 if never used */
  int32_t last_task;           /* last op that reads it (first_task if none reads it) */
  uint32_t consumer_count;
  uint32_t *consumers;         /* op indices that read it, ascending, no duplicates */
  int constant;                /* data in the file, or produced by an op whose inputs are all constant */
  int persistent;              /* graph input or output: not reused unless plan_io */
  int planned;                 /* gets a usage record */
} tg_tensor_lifetime;

/* Lifetimes of every tensor of one graph (tensor_count entries, indexed like graph->tensors).
 * Owns its arrays; free with tg_lifetimes_destroy. */
typedef struct tg_lifetimes {
  size_t tensor_count;
  tg_tensor_lifetime *tensors;
  tg_allocator alloc;
} tg_lifetimes;

/* Lifetime options. A zeroed struct (or NULL) means the defaults. */
typedef struct tg_lifetime_options {
  int plan_io;                 /* nonzero: graph inputs and outputs get records too */
} tg_lifetime_options;

/* Compute lifetimes with the rules of docs/models.md (with control flow, see tg_subgraph: what a
 * loop body reads from before it lives until the loop's end op; ops marked TG_OP_CONTROL_FLOW
 * never make constants). Fails with TG_ERROR_GRAPH (and `err` naming the op) when the op order
 * is not topological (a tensor read before it is written, or written twice), or naming the
 * subgraph when the subgraph table is inconsistent. `options` may be NULL. The caller owns the
 * result; `*out` is NULL on failure. O(tensors + op inputs and outputs x subgraph depth). */
tg_status tg_graph_compute_lifetimes(const tg_graph *graph, const tg_lifetime_options *options,
                                     const tg_allocator *alloc, tg_lifetimes **out,
                                     tg_error_info *err);
/* Free lifetimes. NULL is a no-op. */
void tg_lifetimes_destroy(tg_lifetimes *lifetimes);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
