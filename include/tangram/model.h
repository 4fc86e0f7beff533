/* Model readers: TensorFlow Lite flatbuffers (.tflite), the plain text graph format
 * (docs/models.md) and usage-record CSV, with format detection. Readers produce a tg_graph
 * (graph.h); CSV produces a tg_record_set (records.h). */
#ifndef TANGRAM_MODEL_H
#define TANGRAM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/graph.h"
#include "tangram/records.h"
#include "tangram/status.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* Read subgraph 0 of a .tflite flatbuffer held in memory (`data` is only read, and need not
 * be aligned). Every offset, vtable, vector, string and table is bounds-checked; the file must
 * carry the "TFL3" identifier and schema version 3. Tensors: name (or "tensor_<i>"), shape
 * (TFLite's -1 dimensions become 1), type, TG_TENSOR_CONSTANT when the tensor's buffer holds
 * data (inline or at an offset in the file) or the tensor is a variable; graph inputs and
 * outputs are flagged. Ops: the builtin name or the custom code, inputs (-1 = absent optional
 * input) and outputs. graph->subgraph_count is the number of subgraphs in the file.
 * `source` (NULL: "<memory>") names the input in error messages and is copied into
 * graph->source. On failure `*out` is NULL, nothing is leaked, the status is TG_ERROR_PARSE
 * (malformed file: `err` says where, e.g. "m.tflite: tensor 12: shape vector runs past the
 * end of the file (offset 123456, length 1000000)") or TG_ERROR_OUT_OF_HOST_MEMORY. */
tg_status tg_graph_parse_tflite(const void *data, size_t length, const char *source,
                                const tg_allocator *alloc, tg_graph **out, tg_error_info *err);

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
  TG_MODEL_FORMAT_TEXT_GRAPH = 2  /* anything else */
} tg_model_format;

/* "tflite", "csv", "text"; NULL for values outside the enum. Static string. */
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

/* Read the file at `path` and parse it as tg_model_parse does. TG_ERROR_IO if unreadable. */
tg_status tg_model_load(const char *path, const tg_allocator *alloc, tg_model **out,
                        tg_error_info *err);

/* Free a model and what it holds. NULL is a no-op. */
void tg_model_destroy(tg_model *model);

#ifdef __cplusplus
}
#endif
#endif
