/* Internal interface shared by the model readers (model/). */
#ifndef TANGRAM_MODEL_INTERNAL_H
#define TANGRAM_MODEL_INTERNAL_H

#include "core/internal.h"
#include "tangram/graph.h"

/* A graph parser (tg_graph_parse_text's shape). */
typedef tg_status (*tg__graph_parse_fn)(const char *data, size_t length, const char *source,
                                        const tg_allocator *alloc, tg_graph **out,
                                        tg_error_info *err);

/* Read `path` whole and parse it with `parse` (the file name is the source in errors): the
 * body of the tg_graph_read_* functions. */
tg_status tg__graph_read_file(const char *path, tg__graph_parse_fn parse, const tg_allocator *alloc,
                              tg_graph **out, tg_error_info *err);

/* A reader of a whole file's bytes for tg__parse_file: `user` is the caller's (options),
 * `out` the caller's result pointer (a tg_model **, ...). */
typedef tg_status (*tg__file_parse_fn)(const char *data, size_t length, const char *path, const void *user,
                                       const tg_allocator *alloc, void *out, tg_error_info *err);

/* The body of the functions that load a file: TG_ERROR_INVALID_ARGUMENT ("path or out is
 * NULL", after "`who`: " when `who` is not NULL) when `path` or `out` is NULL; else read
 * `path` whole with `alloc` (NULL: the default), hand the bytes to `parse` and free them.
 * The caller sets its *out to NULL before. */
tg_status tg__parse_file(const char *path, const char *who, tg__file_parse_fn parse, const void *user,
                         const tg_allocator *alloc, void *out, tg_error_info *err);

/* TG_ERROR_GRAPH (naming it) unless the graph's subgraph table is consistent: every op in a
 * listed subgraph, every subgraph after its parent with its ops inside the graph, ended by a
 * control op after them. TG_OK for a graph without control flow. */
tg_status tg__graph_check_subgraphs(const struct tg_graph *g, tg_error_info *err);

/* Input shapes (tg_model_options, declared in model.h). */
struct tg_model_options;
struct tg_input_shape;
struct tg_graph;

/* Every entry well-formed: a name, rank <= TG_MAX_RANK, dims >= 0 with a product under 2^63,
 * no name twice. TG_ERROR_INVALID_ARGUMENT (or TG_ERROR_OVERFLOW) naming `source`. */
tg_status tg__check_input_shapes(const char *source, const struct tg_model_options *o,
                                 tg_error_info *err);
/* The entry for input `name`, or NULL (also when `o` is NULL). */
const struct tg_input_shape *tg__find_input_shape(const struct tg_model_options *o, const char *name);
/* TG_ERROR_INVALID_ARGUMENT when an entry names none of `inputs`, listing them. */
tg_status tg__unknown_input_shapes(const char *source, const struct tg_model_options *o,
                                   const char *const *inputs, size_t input_count,
                                   tg_error_info *err);
/* For formats whose shapes are all static: every entry must name a graph input of `g` and
 * repeat its shape. */
tg_status tg__check_static_input_shapes(const struct tg_graph *g, const struct tg_model_options *o,
                                        tg_error_info *err);
/* Dynamic dimensions of one .tflite tensor: bit d of `dynamic` when shape_signature[d] is -1;
 * bit d of `unrecorded` when the file holds no size for it (no `shape`, or -1 there too). */
typedef struct tg__tflite_dims {
  uint8_t dynamic, unrecorded;
} tg__tflite_dims;

/* Read a .tflite file as tg_graph_parse_tflite does, but leave dynamic dimensions unresolved
 * (never an error): per tensor, `*dynamic` (allocated from `alloc`, graph->tensor_count
 * entries) says which dimensions are dynamic; the shapes hold the file's sizes (0 where it
 * records none). For listing a model's inputs. */
tg_status tg__tflite_parse_unresolved(const void *data, size_t length, const char *source,
                                      const tg_allocator *alloc, struct tg_graph **out,
                                      tg__tflite_dims **dynamic, tg_error_info *err);

/* A .onnx file decoded once and read at several input sizes (the body of tg_graph_parse_onnx,
 * split so a range of sizes decodes the file once). `source` names the file in errors and is
 * borrowed until tg__onnx_close; `data` is not kept. tg__onnx_read is tg_graph_parse_onnx on
 * the decoded file. */
typedef struct tg__onnx_file tg__onnx_file;
tg_status tg__onnx_open(const void *data, size_t length, const char *source, const tg_allocator *alloc,
                        tg__onnx_file **out, tg_error_info *err);
tg_status tg__onnx_read(const tg__onnx_file *f, const struct tg_model_options *options,
                        struct tg_graph **out, tg_error_info *err);
void tg__onnx_close(tg__onnx_file *f);

/* tg__check_input_shapes, where `ranges` nonzero lets a dimension be a range (well formed:
 * 0 <= lo <= hi, step >= 1); with `ranges` 0 a range is TG_ERROR_INVALID_ARGUMENT saying the
 * plain readers take one size. */
tg_status tg__check_input_shapes_with(const char *source, const struct tg_model_options *o, int ranges,
                                      tg_error_info *err);

/* A range as --input-shape writes it: "32..1600/8" ("/STEP" left out for step 1). */
struct tg_dim_range;
void tg__dim_range_text(const struct tg_dim_range *r, char *buf, size_t size);

/* An input shape as --input-shape writes it: "1x3x48x32..1600/8", truncated to `size`. */
void tg__input_shape_text(const struct tg_input_shape *s, char *buf, size_t size);

/* "1x3x640x640" ("?" for negative entries, "scalar" for rank 0), truncated to `size`. */
void tg__shape_text(const int64_t *dims, uint32_t rank, char *buf, size_t size);

/* When two shapes are equal: the same rank and the same size in every dimension. The one
 * definition the readers and the in-place rule use. */
int tg__dims_equal(const int64_t *a, uint32_t a_rank, const int64_t *b, uint32_t b_rank);
/* tg__dims_equal on two tensors' shapes. */
int tg__tensor_same_shape(const struct tg_tensor *a, const struct tg_tensor *b);

/* 1 when a tensor has a dimension of size 0: it holds nothing (docs/models.md), so reading it
 * needs no writer and it is never planned. */
int tg__tensor_zero_elements(const struct tg_tensor *t);

#endif
