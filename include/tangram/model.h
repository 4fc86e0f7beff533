/* Model readers: TensorFlow Lite flatbuffers (.tflite), ONNX protobuf (.onnx), the plain text
 * graph format (docs/models.md) and usage-record CSV, with format detection. Readers produce a
 * tg_graph (graph.h); CSV produces a tg_record_set (records.h). */
#ifndef TANGRAM_MODEL_H
#define TANGRAM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/range.h"
#include "tangram/records.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* The text graph name of an element type: "float32", "float16", "int32", "uint8", "int64",
 * "string", "bool", "int16", "complex64", "int8", "float64", "complex128", "uint64",
 * "resource", "variant", "uint32", "uint16", "int4", "unknown". NULL for values outside
 * tg_dtype. Static string. */
const char *tg_dtype_name(tg_dtype dtype);

/* Parse a name as returned by tg_dtype_name. TG_ERROR_INVALID_ARGUMENT if unknown (`*out`
 * untouched). */
tg_status tg_dtype_from_name(const char *name, tg_dtype *out);

/* The name of a TFLite BuiltinOperator value ("CONV_2D" for 3), or NULL when `code` is not
 * one this library knows. Static string. */
const char *tg_tflite_builtin_name(int32_t code);

/* The shape of one graph input, fixing the dimensions the file leaves dynamic. */
typedef struct tg_input_shape {
  const char *name;            /* the graph input's name (borrowed for the call) */
  uint32_t rank;               /* must equal the input's rank in the file */
  int64_t dims[TG_MAX_RANK];   /* each >= 0; dimensions the file fixes must be repeated as is */
  /* Where range[d].step is nonzero, dimension d (a dynamic one) varies over range[d] and
   * dims[d] is not read: only tg_model_range_load / tg_model_range_parse take ranges (the
   * other readers refuse them, TG_ERROR_INVALID_ARGUMENT). Zeroed: no range. */
  tg_dim_range range[TG_MAX_RANK];
} tg_input_shape;

/* Parse an input shape as the CLI's --input-shape takes it: "NAME:DxDx..." (split at the last
 * ':'; "NAME:scalar" for rank 0), each dimension a non-negative decimal or a range "LO..HI" /
 * "LO..HI/STEP" (tg_dim_range_parse; dims[d] is then LO), e.g. "x:1x3x48x32..1600/8". The name
 * is copied into `name` (`name_size` bytes, NUL included) and `out->name` points there. On
 * failure TG_ERROR_INVALID_ARGUMENT, `*out` and `name` untouched, and `err` (when non-NULL)
 * holds the problem: "must be NAME:DxDx... (e.g. x:1x3x640x640), not 'x'" when there is no name,
 * else the text then the problem ("x:1xx3: dimensions must be non-negative decimals ...",
 * "x:1x3x48x64..32: dimension 3: ..."). Nothing is allocated. */
tg_status tg_input_shape_parse(const char *text, char *name, size_t name_size, tg_input_shape *out,
                               char *err, size_t err_size);

/* Options for reading a model. A zeroed struct (or NULL) means no input shapes given: a
 * dynamic input dimension is then an error, except in .tflite files, which record a size for
 * it (see tg_graph_parse_tflite_with). tg_model_list_inputs tells which inputs need one. */
typedef struct tg_model_options {
  const tg_input_shape *input_shapes;  /* input_shape_count entries (borrowed for the call) */
  size_t input_shape_count;
} tg_model_options;

/* Read subgraph 0 of a .tflite flatbuffer held in memory (`data` is only read, and need not
 * be aligned). Every offset, vtable, vector, string and table is bounds-checked; the file must
 * carry the "TFL3" identifier and schema version 3. Tensors: name (or "tensor_<i>"), shape
 * (see tg_graph_parse_tflite_with for dynamic dimensions), type, TG_TENSOR_CONSTANT when the
 * tensor's buffer holds
 * data (inline or at an offset in the file) or the tensor is a variable; graph inputs and
 * outputs are flagged. Ops: the builtin name or the custom code, inputs (-1 = absent optional
 * input) and outputs. graph->subgraph_count is the number of subgraphs in the file.
 * `source` (NULL: "<memory>") names the input in error messages and is copied into
 * graph->source. On failure `*out` is NULL, nothing is leaked, the status is TG_ERROR_PARSE
 * (malformed file: `err` says where, e.g. "m.tflite: tensor 12: shape vector runs past the
 * end of the file (offset 123456, length 1000000)") or TG_ERROR_OUT_OF_HOST_MEMORY. */
tg_status tg_graph_parse_tflite(const void *data, size_t length, const char *source,
                                const tg_allocator *alloc, tg_graph **out, tg_error_info *err);

/* tg_graph_parse_tflite with options. A dimension is dynamic when the tensor's
 * shape_signature holds -1 there. TFLite files record every tensor's shape for one size of
 * the dynamic dimensions (`shape`, usually 1), the size TFLite's interpreter runs the model at
 * until the engine resizes it: a dynamic input dimension without an entry in
 * `options->input_shapes` takes that size (the input is marked TG_TENSOR_ASSUMED_SHAPE, its
 * dynamic dimensions in tg_tensor.dynamic_dims); one the file records no size for needs an
 * entry (TG_ERROR_INVALID_ARGUMENT naming the input, the dimension and
 * tg_model_options.input_shapes). At another size than the file's, the shapes of subgraph 0
 * are inferred again op by op (docs/models.md lists the ops); an op without inference, or
 * control flow, is TG_ERROR_UNSUPPORTED naming it. A dynamic dimension that follows
 * from no input (an op whose output size depends on the data) is TG_ERROR_UNSUPPORTED naming
 * the tensor. Input shapes naming no graph input, or contradicting a static dimension, are
 * TG_ERROR_INVALID_ARGUMENT. Errors name the input (or tensor) and the dimension. The
 * subgraphs that IF, WHILE and CALL_ONCE ops run are checked the same way, their inputs taking
 * the sizes their op passes where the file records none: a recorded size other than the one
 * passed, or a dynamic dimension that follows from no dynamic input of its subgraph, is
 * TG_ERROR_UNSUPPORTED naming the tensor and the subgraph. */
tg_status tg_graph_parse_tflite_with(const void *data, size_t length, const char *source,
                                     const tg_model_options *options, const tg_allocator *alloc,
                                     tg_graph **out, tg_error_info *err);

/* Parse an ONNX ModelProto held in memory (`data` is only read). The file is decoded with
 * protobuf-c (from ONNX's own onnx.proto) only after every tag, length and wire type has been
 * checked without allocating; files nested too deeply, or that would decode into far more
 * memory than their size, are refused first (TG_ERROR_PARSE; the limits are in
 * docs/models.md). Then:
 *   - the opset of the default domain is read from opset_import (required);
 *   - initializers and Constant nodes are constants (TG_TENSOR_CONSTANT, never planned); graph
 *     inputs that are also initializers are constants too; initializers whose data lives in an
 *     external file are read for their shape only;
 *   - graph inputs take their shapes from the file, dynamic dimensions (dim_param or no value)
 *     from `options->input_shapes`: a dynamic dimension without one is TG_ERROR_INVALID_ARGUMENT
 *     naming the input and the dimension;
 *   - nodes run in file order, which must be topological (TG_ERROR_GRAPH naming the node and
 *     the value read before it is written, or written twice); every output's shape is inferred
 *     from the ONNX operator definitions (tg_onnx_supported_op lists the op types); an output
 *     that cannot be inferred is TG_ERROR_UNSUPPORTED naming the node and its op type;
 *   - nodes whose outputs are all computable before the run (Shape and the small integer
 *     arithmetic on shapes: Cast, Slice, Concat, Gather, Unsqueeze, ...) are folded: their
 *     outputs become constants and they are not ops of the graph;
 *   - nodes with subgraphs (If, Loop, Scan: attributes of type GRAPH) are TG_ERROR_UNSUPPORTED
 *     naming the node.
 * Ops are named by op type ("Conv"; "domain.OpType" outside the default domain). The graph's
 * dim_order is TG_DIM_ORDER_NCHW. Errors read "m.onnx: node 12 'conv1' (Conv): ...". On
 * failure `*out` is NULL and nothing is leaked. Builds without protobuf-c (TANGRAM_ONNX=OFF)
 * return TG_ERROR_UNSUPPORTED. Cost: linear in the file plus O(n log n) in value names. */
tg_status tg_graph_parse_onnx(const void *data, size_t length, const char *source,
                              const tg_model_options *options, const tg_allocator *alloc,
                              tg_graph **out, tg_error_info *err);

/* Read a .onnx file (see tg_graph_parse_onnx). TG_ERROR_IO when it cannot be read. */
tg_status tg_graph_read_onnx(const char *path, const tg_model_options *options,
                             const tg_allocator *alloc, tg_graph **out, tg_error_info *err);

/* The index-th ONNX op type the reader infers shapes for ("Conv", "Reshape", ...), or NULL
 * past the end (and in builds without ONNX support). Static strings. */
const char *tg_onnx_supported_op(size_t index);

/* Read a .tflite file (see tg_graph_parse_tflite). TG_ERROR_IO when it cannot be read. */
tg_status tg_graph_read_tflite(const char *path, const tg_allocator *alloc, tg_graph **out,
                               tg_error_info *err);

/* Parse the plain text graph format of docs/models.md:
 *   tensor NAME SHAPE DTYPE [input|output|constant]...
 *   op NAME inputs=A,B,... outputs=C,...
 * `text` need not be NUL-terminated. Ops run in file order; tensors may be declared after
 * the ops that use them. Errors name "source:LINE" and give TG_ERROR_PARSE (syntax, unknown or
 * duplicate tensor names, bad shapes or dtypes, dimensions that overflow), TG_ERROR_GRAPH
 * (an op reads a tensor that is neither a graph input, nor constant, nor written by an earlier
 * op - which is how a cycle shows in a list of ops - or writes a tensor twice) or
 * TG_ERROR_OUT_OF_HOST_MEMORY. On failure `*out` is NULL. */
tg_status tg_graph_parse_text(const char *text, size_t length, const char *source,
                              const tg_allocator *alloc, tg_graph **out, tg_error_info *err);

/* Read a text graph file (see tg_graph_parse_text). TG_ERROR_IO when it cannot be read. */
tg_status tg_graph_read_text(const char *path, const tg_allocator *alloc, tg_graph **out,
                             tg_error_info *err);

/* Input formats tg_model_load understands. */
typedef enum tg_model_format {
  TG_MODEL_FORMAT_TFLITE = 0,     /* "TFL3" at bytes 4..7 */
  TG_MODEL_FORMAT_RECORDS_CSV = 1,/* first line starts with "name,", "size,", "width," or "id," */
  TG_MODEL_FORMAT_TEXT_GRAPH = 2, /* anything else */
  TG_MODEL_FORMAT_ONNX = 3        /* a protobuf ModelProto: byte 0 is 0x08 (ir_version), byte 1 a
                                     version below 128, then another ModelProto field's tag */
} tg_model_format;

/* "tflite", "csv", "text", "onnx"; NULL for values outside the enum. Static string. */
const char *tg_model_format_name(tg_model_format format);

/* The format of `data` by the rules above. Never fails. */
tg_model_format tg_model_detect_format(const void *data, size_t length);

/* What a loaded model holds. */
typedef enum tg_model_kind {
  TG_MODEL_GRAPH = 0,  /* a graph: compute lifetimes and layouts to get records */
  TG_MODEL_RECORDS = 1 /* usage records, ready for the planner */
} tg_model_kind;

/* A loaded model: exactly one of `graph` (kind TG_MODEL_GRAPH) and `records`
 * (TG_MODEL_RECORDS) is non-NULL. Owns it; free with tg_model_destroy. */
typedef struct tg_model {
  tg_model_kind kind;
  tg_model_format format;
  tg_graph *graph;
  tg_record_set *records;
  tg_allocator alloc;
} tg_model;

/* Parse a model held in memory, detecting its format with tg_model_detect_format. `source`
 * (NULL: "<memory>") names it in errors. On failure `*out` is NULL and `err` comes from the
 * reader for the detected format. The caller owns the model (tg_model_destroy). */
tg_status tg_model_parse(const void *data, size_t length, const char *source,
                         const tg_allocator *alloc, tg_model **out, tg_error_info *err);

/* tg_model_parse with options (input shapes; NULL: none). Text graphs have static shapes:
 * input shapes given for them must repeat them. Usage-record CSVs have no inputs: input shapes
 * given for them are TG_ERROR_INVALID_ARGUMENT. */
tg_status tg_model_parse_with(const void *data, size_t length, const char *source,
                              const tg_model_options *options, const tg_allocator *alloc,
                              tg_model **out, tg_error_info *err);

/* Read the file at `path` and parse it as tg_model_parse does. TG_ERROR_IO if unreadable. */
tg_status tg_model_load(const char *path, const tg_allocator *alloc, tg_model **out,
                        tg_error_info *err);

/* tg_model_load with options (see tg_model_parse_with). */
tg_status tg_model_load_with(const char *path, const tg_model_options *options,
                             const tg_allocator *alloc, tg_model **out, tg_error_info *err);

/* Free a model and what it holds. NULL is a no-op. */
void tg_model_destroy(tg_model *model);

/* One graph input of a model file, as the file declares it (before any size is chosen). */
typedef struct tg_model_input {
  const char *name;                    /* never NULL */
  tg_dtype dtype;
  int has_shape;                       /* 0: the file declares no shape at all (ONNX) */
  uint32_t rank;
  int64_t dims[TG_MAX_RANK];           /* the size the file records; -1 where it records none */
  uint32_t dynamic;                    /* bit d: dimension d is dynamic (ONNX dim_param or no
                                          value; TFLite -1 in shape_signature) */
  const char *dim_names[TG_MAX_RANK];  /* ONNX dim_param of a dynamic dimension, else NULL */
  int needs_shape;                     /* loading needs an entry in tg_model_options.input_shapes:
                                          a dynamic dimension without a recorded size, or no shape */
} tg_model_input;

/* A model's graph inputs (constants such as ONNX initializers listed as inputs are left out).
 * Owns everything it points to; free with tg_model_inputs_destroy. */
typedef struct tg_model_inputs {
  tg_model_format format;
  size_t count;
  tg_model_input *inputs;              /* count entries, in the file's order */
  tg_allocator alloc;
} tg_model_inputs;

/* List the graph inputs of a model held in memory, in any format tg_model_detect_format knows,
 * without loading it: no shape is inferred, so this succeeds on a model whose dynamic inputs
 * have no size yet (the way to learn the names and dimensions to put in
 * tg_model_options.input_shapes). The file is checked as the readers check it (TG_ERROR_PARSE
 * naming the place). Text graphs list their (static) inputs; usage-record CSVs have none
 * (count 0). `source` (NULL: "<memory>") names the input in messages. The caller owns `*out`
 * (tg_model_inputs_destroy); on failure `*out` is NULL and nothing leaks. Cost: for .onnx, one
 * decode of the file; for .tflite and text graphs, one read of the graph (linear). */
tg_status tg_model_parse_inputs(const void *data, size_t length, const char *source,
                                const tg_allocator *alloc, tg_model_inputs **out,
                                tg_error_info *err);

/* Read the file at `path` and list its inputs as tg_model_parse_inputs does. TG_ERROR_IO when
 * it cannot be read. */
tg_status tg_model_list_inputs(const char *path, const tg_allocator *alloc, tg_model_inputs **out,
                               tg_error_info *err);

/* Free an input list. NULL is a no-op. */
void tg_model_inputs_destroy(tg_model_inputs *inputs);

/* Loading a model over a range of input sizes: the records of every size at once.
 *
 * The input shapes of `options` may give one or two dynamic dimensions as ranges
 * (tg_input_shape.range). Dimensions of several inputs that the file names alike (ONNX
 * dim_param) and that are given the same range vary together, as one dimension. The model is
 * loaded at every point of the grid the ranges make, as tg_model_load_with loads it at one
 * size, and turned into records as tg_model_records_create (or _create_chain) does. The
 * records must be the same at every size: the same tensors planned, each in the same storage
 * group (primary or the same fallback), at the same index, with the same task interval; only
 * their sizes vary. So record r at any size is record r of a plain load at that size. */

/* Most grid points a range may have (the sizes of every record at every point are kept). */
#define TG_MODEL_RANGE_MAX_POINTS 16384u
/* Most input dimensions that follow the range's dimensions, over all inputs. */
#define TG_MODEL_RANGE_MAX_AXES 16u

typedef struct tg_model_range_desc {
  const tg_model_options *options;   /* input shapes with the ranges (borrowed for the call) */
  tg_storage storage;
  tg_precision precision;
  const tg_device_limits *limits;    /* NULL: no limits */
  int plan_io;                       /* tg_lifetime_options.plan_io */
  int chain;                         /* nonzero: tensors that do not fit `storage` fall along
                                        the chain (tg_model_records_create_chain); 0: straight to
                                        buffers (tg_model_records_create) */
  int in_place_images;               /* tg_model_in_place_pairs's `images` */
} tg_model_range_desc;

/* One input dimension that follows a dimension of the range. */
typedef struct tg_model_range_axis {
  uint32_t input;                    /* index in model->graph->inputs */
  uint32_t axis;                     /* the input's dimension */
  uint32_t dim;                      /* the range's dimension it equals (0 or 1) */
  uint32_t option;                   /* the entry of desc->options->input_shapes giving it */
} tg_model_range_axis;

/* A model loaded over a range. Owns everything; free with tg_model_range_destroy. */
typedef struct tg_model_range {
  tg_size_range range;               /* the varying dimensions, in input then axis order */
  uint64_t point_count;              /* tg_size_range_point_count(&range) */
  size_t axis_count;
  tg_model_range_axis axes[TG_MODEL_RANGE_MAX_AXES];
  /* The model at one size, the range's first point (dims `at`): its graph (every size has the
   * same ops and tensors; shapes are those at `at`), lifetimes (the same at every size) and
   * records (names, record -> tensor maps, fallback groups and reasons; sizes at `at`). */
  int64_t at[TG_RANGE_MAX_DIMS];
  tg_model *model;
  tg_lifetimes *lifetimes;
  tg_model_records *records;
  /* The sizes at every point: `primary` for records->records, fallbacks[s] for
   * records->fallbacks[s].records (NULL where that group is empty). tg_range_records_at(dims)
   * gives, record for record, that set of a plain load at dims. */
  tg_range_records *primary;
  tg_range_records *fallbacks[TG_STORAGE_COUNT];
  /* In-place candidates of records->records (tg_model_in_place_pairs) that hold at every size. */
  tg_in_place_pair *in_place;
  size_t in_place_count;
  tg_allocator alloc;
} tg_model_range;

/* Load the model held in memory over the ranges of desc->options. Errors
 * (TG_ERROR_INVALID_ARGUMENT unless noted; `*out` NULL, nothing leaked), each naming the input
 * and dimension or the tensor:
 *   - no range given, a malformed range (LO above HI, a negative step), more than two varying
 *     dimensions, more than TG_MODEL_RANGE_MAX_POINTS points (give a larger STEP);
 *   - a range on a dimension the file fixes (a static one), on a text graph (all static) or a
 *     usage-record CSV (no inputs);
 *   - a size where loading fails: the reader's error (TG_ERROR_PARSE, TG_ERROR_UNSUPPORTED, ...)
 *     with the size in front of it, e.g. "m.onnx at x:1x3x48x1: node 556 'pool' (AveragePool):
 *     ... window of 2 ... is larger than the padded input (1)";
 *   - records that are not the same at two sizes, naming the tensor and both sizes (a tensor
 *     that falls back to another storage at some sizes only, a branch taken at some sizes).
 * Cost: one load of the model per grid point (an .onnx file is decoded once), and
 * point_count x records extents of memory. */
tg_status tg_model_range_parse(const void *data, size_t length, const char *source,
                               const tg_model_range_desc *desc, const tg_allocator *alloc,
                               tg_model_range **out, tg_error_info *err);

/* Read the file at `path` and load it as tg_model_range_parse does. TG_ERROR_IO if unreadable. */
tg_status tg_model_range_load(const char *path, const tg_model_range_desc *desc, const tg_allocator *alloc,
                              tg_model_range **out, tg_error_info *err);

/* Free a model range. NULL is a no-op. */
void tg_model_range_destroy(tg_model_range *range);

/* The input shapes of `options` (the ones `range` was loaded with) at the grid point `dims`:
 * `out` (options->input_shape_count entries) gets them with every range replaced by its size
 * there, for tg_model_load_with at that size. TG_ERROR_INVALID_ARGUMENT when `dims` is off the
 * grid or `options` is not the one the range was loaded with. No allocation. */
tg_status tg_model_range_shapes_at(const tg_model_range *range, const tg_model_options *options,
                                   const int64_t *dims, tg_input_shape *out);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
