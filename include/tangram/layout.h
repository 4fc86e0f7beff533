/* Storage layouts, device-neutral: how a tensor's shape maps to a GPU buffer or texture
 * extent (the rules of TFLite's GPU delegate, see docs/models.md), device limits, and the
 * usage records a graph yields for a storage type. */
#ifndef TANGRAM_LAYOUT_H
#define TANGRAM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/graph.h"
#include "tangram/records.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* Where a tensor lives. Channels are packed 4 to a texel/element group ("slices"). Tangram
 * sizes buffers and image buffers but does not order their texels: that is the engine's. The
 * one assumption it makes is that of the in-place views (tg_model_in_place_pairs): at batch 1,
 * a buffer's texel order depends on H and W only through y * W + x (rows of W texels, one row
 * after another), as in BHWC order and in TFLite's GPU order (slice, then y, then x). */
typedef enum tg_storage {
  TG_STORAGE_BUFFER = 0,            /* linear buffer; 1D record in bytes */
  TG_STORAGE_IMAGE_BUFFER,          /* 1D texel buffer; 1D record in bytes */
  TG_STORAGE_TEXTURE_2D,            /* (W*B, H*S) texels; 2D record */
  TG_STORAGE_TEXTURE_ARRAY,         /* (W*B, H) texels x S layers; 3D record */
  TG_STORAGE_TEXTURE_3D,            /* (W*B, H, S) texels; 3D record */
  TG_STORAGE_SINGLE_TEXTURE_2D,     /* (W*B, H) texels, only for C <= 4; 2D record */
  TG_STORAGE_COUNT
} tg_storage;

/* "buffer", "image_buffer", "texture_2d", "texture_array", "texture_3d",
 * "single_texture_2d"; NULL when out of range. Static string. */
const char *tg_storage_name(tg_storage storage);

/* Parse a storage name as above. TG_ERROR_INVALID_ARGUMENT if unknown (`*out` untouched). */
tg_status tg_storage_from_name(const char *name, tg_storage *out);

/* Dimensionality of the usage records for `storage`: 1 (buffer, image_buffer), 2
 * (texture_2d, single_texture_2d) or 3 (texture_array, texture_3d); 0 when out of range. */
uint32_t tg_storage_dims(tg_storage storage);

/* 1 for the texture storages, images with a texel extent (texture_2d, texture_array,
 * texture_3d, single_texture_2d: 2D and 3D records); 0 for buffer and image_buffer (linear
 * memory, 1D records in bytes) and out of range. */
int tg_storage_is_texture(tg_storage storage);

/* Element precision on the device. */
typedef enum tg_precision {
  TG_PRECISION_FP32 = 0,
  TG_PRECISION_FP16 = 1,
  TG_PRECISION_COUNT
} tg_precision;

/* "fp32" / "fp16"; NULL when out of range. */
const char *tg_precision_name(tg_precision precision);

/* Parse "fp32" / "fp16". TG_ERROR_INVALID_ARGUMENT if unknown (`*out` untouched). */
tg_status tg_precision_from_name(const char *name, tg_precision *out);

/* Bytes per element (4 or 2) and per texel of 4 channels (16 or 8); 0 when out of range. */
uint32_t tg_precision_element_bytes(tg_precision precision);
uint32_t tg_precision_texel_bytes(tg_precision precision);

/* A shape as the GPU sees it: batch, height, width, channels. */
typedef struct tg_bhwc {
  uint64_t b, h, w, c;
} tg_bhwc;

/* Map a shape to BHWC: rank 0 -> (1,1,1,1); [C] -> (1,1,1,C); [B,C] -> (B,1,1,C);
 * [B,W,C] -> (B,1,W,C); [B,H,W,C] as is; rank > 4: the leading rank-3 dimensions multiplied
 * into B. TG_ERROR_INVALID_ARGUMENT for rank > TG_MAX_RANK or a negative dimension,
 * TG_ERROR_OVERFLOW when B does not fit 64 bits. `*out` is written only on success. */
tg_status tg_shape_to_bhwc(const int64_t *shape, uint32_t rank, tg_bhwc *out);

/* tg_shape_to_bhwc for a shape in `order`. NCHW shapes ([N,C,spatial...]) have dimension 1
 * moved last first, then map as above: [N,C] -> (N,1,1,C); [N,C,W] -> (N,1,W,C); [N,C,H,W] ->
 * (N,H,W,C); [N,C,D,H,W] -> (N*D,H,W,C); [C] -> (1,1,1,C). Same errors as tg_shape_to_bhwc,
 * and TG_ERROR_INVALID_ARGUMENT for an unknown order. */
tg_status tg_shape_to_bhwc_ordered(const int64_t *shape, uint32_t rank, tg_dim_order order,
                                   tg_bhwc *out);

/* The record size of a BHWC shape in `storage`, with S = ceil(C/4):
 *   buffer, image_buffer: (B*H*W*S*4*element_bytes, 1, 1) bytes
 *   texture_2d:           (W*B, H*S, 1) texels
 *   texture_array:        (W*B, H, S) texels (S layers)
 *   texture_3d:           (W*B, H, S) texels
 *   single_texture_2d:    (W*B, H, 1) texels; TG_ERROR_UNSUPPORTED when C > 4
 * TG_ERROR_OVERFLOW when a product does not fit 64 bits. `*out` is written only on success. */
tg_status tg_storage_extent(tg_bhwc shape, tg_storage storage, tg_precision precision,
                            tg_extent *out);

/* Per-resource limits of a device. A zero field means "no limit". */
typedef struct tg_device_limits {
  uint64_t max_buffer_bytes;          /* one buffer (also bounds an image buffer's bytes) */
  uint64_t max_image_buffer_texels;   /* one 1D texel buffer */
  uint64_t max_texture_2d_width;      /* 2D textures and each layer of a texture array */
  uint64_t max_texture_2d_height;
  uint64_t max_texture_3d_width;
  uint64_t max_texture_3d_height;
  uint64_t max_texture_3d_depth;
  uint64_t max_texture_array_layers;
} tg_device_limits;

/* Limits every mainstream mobile GPU of the last years meets (Adreno 5xx+, Mali
 * Bifrost/Valhall, PowerVR Rogue), under both OpenCL and Vulkan:
 *   max_buffer_bytes          128 MiB (2^27): Vulkan's guaranteed maxStorageBufferRange and the
 *                             floor of OpenCL's CL_DEVICE_MAX_MEM_ALLOC_SIZE (full profile)
 *   max_image_buffer_texels   65536: Vulkan's guaranteed maxTexelBufferElements and OpenCL's
 *                             CL_DEVICE_IMAGE_MAX_BUFFER_SIZE minimum; Mali reports exactly this
 *   max_texture_2d_*          8192 x 8192: Mali Midgard/early Bifrost and PowerVR Rogue report
 *                             8192 (Adreno 16384); the spec minimums (4096 Vulkan, 8192 OpenCL
 *                             full profile, 2048 embedded) are lower but no current mobile GPU
 *                             is that small
 *   max_texture_3d_*          2048 x 2048 x 2048: Adreno's Vulkan maxImageDimension3D (others
 *                             report 4096-16384)
 *   max_texture_array_layers  2048: Adreno and Mali (Vulkan maxImageArrayLayers; OpenCL's
 *                             CL_DEVICE_IMAGE_MAX_ARRAY_SIZE)
 * A plan that fits these fits most phones; query the real device for exact values. */
tg_device_limits tg_device_limits_default(void);

/* Does a tensor of `shape` fit `storage` on a device with `limits` (NULL: no limits)? Writes
 * the record size to `*extent` (when non-NULL and the size is computable) and returns TG_OK
 * when it fits, or TG_ERROR_LIMIT (a limit is exceeded), TG_ERROR_UNSUPPORTED (C > 4 for
 * single_texture_2d) or TG_ERROR_OVERFLOW, with a short reason in `reason` (when non-NULL)
 * such as "extent 16384x96 exceeds max 2D 8192x8192" or "C=32 > 4 for single_texture_2d". */
tg_status tg_storage_check_fit(tg_bhwc shape, tg_storage storage, tg_precision precision,
                               const tg_device_limits *limits, tg_extent *extent, char *reason,
                               size_t reason_size);

/* The fallback chain of TFLite's GPU delegate: the storage a tensor tries next when it does
 * not fit `storage`: texture_array and texture_3d -> texture_2d; texture_2d and
 * single_texture_2d -> image_buffer; image_buffer -> buffer; buffer (and out of range) ->
 * TG_STORAGE_COUNT (none). */
tg_storage tg_storage_fallback_next(tg_storage storage);

/* The storages a tensor can fall back to, in chain order: texture_2d, image_buffer, buffer
 * for `g` = 0, 1, 2 (below TG_STORAGE_FALLBACK_COUNT); TG_STORAGE_COUNT beyond. Each is
 * tg_storage_fallback_next of the one before. */
#define TG_STORAGE_FALLBACK_COUNT 3
tg_storage tg_storage_fallback_at(uint32_t g);

/* The tensors that fell back to one storage: a record set of that storage's dimensionality
 * (sizes as tg_storage_extent says), with each record's tensor and the reason it left the
 * storages before (e.g. "extent 8x8 with 3 layers exceeds max 2D 64x64 with 2048 layers"). */
typedef struct tg_model_fallback {
  tg_record_set *records;       /* NULL when no tensor fell to this storage */
  uint32_t *tensor_of;          /* records->count tensor indices */
  char **reasons;               /* records->count strings */
} tg_model_fallback;

/* The usage records of a graph for one storage type: planner input.
 * `records` holds one record per planned tensor (tg_lifetimes.planned) that fits `storage`,
 * sized as tg_storage_extent says (dims = tg_storage_dims(storage)) and named after its tensor.
 * Tensors that do not fit their texture or image-buffer storage fall back:
 * - tg_model_records_create: straight to a plain buffer: they are in `fallback` (1D records
 *   in bytes; count may be 0) with the reason in `fallback_reasons`;
 * - tg_model_records_create_chain: along the chain (tg_storage_fallback_next) to the first
 *   storage that fits; those that reach a buffer are in `fallback` as above.
 * `fallbacks[s]` groups the fallback tensors by the storage s they fell to: for s = texture_2d
 * and image_buffer (only ever set by the chain) it owns its set (NULL records when none fell
 * there); fallbacks[TG_STORAGE_BUFFER] is `fallback`, `fallback_tensor_of` and
 * `fallback_reasons` (the same pointers); the other entries are empty. Each group is planned
 * on its own, as a record set of its storage (a realised plan holds one storage per set).
 * Every set lists tensors in the order of their producer op, then in the op's output order
 * (with plan_io, graph inputs come first, in graph input order); task intervals are the
 * lifetimes' [first_task, last_task]. Every planned tensor is in exactly one set. */
typedef struct tg_model_records {
  tg_storage storage;
  tg_precision precision;
  tg_record_set *records;       /* primary records */
  uint32_t *tensor_of;          /* records->count tensor indices */
  tg_record_set *fallback;      /* buffer records of tensors that did not fit `storage` */
  uint32_t *fallback_tensor_of; /* fallback->count tensor indices */
  char **fallback_reasons;      /* fallback->count strings, e.g. "C=32 > 4 for single_texture_2d" */
  tg_model_fallback fallbacks[TG_STORAGE_COUNT]; /* by the storage fallen to, see above */
  tg_allocator alloc;
} tg_model_records;

/* The fallback tensors of every group of `records` (0 for NULL). */
size_t tg_model_records_fallback_count(const tg_model_records *records);

/* Build the records of `graph` (with `lifetimes` from tg_graph_compute_lifetimes on it) for
 * `storage` and `precision` under `limits` (NULL: no limits). Shapes are mapped to BHWC in
 * the graph's dim_order (tg_shape_to_bhwc_ordered). Fails with TG_ERROR_LIMIT when a
 * tensor does not fit even a buffer (naming it), TG_ERROR_OVERFLOW for sizes beyond 64 bits,
 * TG_ERROR_INVALID_ARGUMENT for mismatched inputs, TG_ERROR_OUT_OF_HOST_MEMORY. On failure
 * `*out` is NULL. Free with tg_model_records_destroy. */
tg_status tg_model_records_create(const tg_graph *graph, const tg_lifetimes *lifetimes,
                                  tg_storage storage, tg_precision precision,
                                  const tg_device_limits *limits, const tg_allocator *alloc,
                                  tg_model_records **out, tg_error_info *err);

/* As tg_model_records_create, but a tensor that does not fit `storage` takes the first storage
 * of the fallback chain that fits it (texture_2d, image_buffer, buffer; see
 * tg_storage_fallback_next), grouped in `fallbacks`. Same errors. */
tg_status tg_model_records_create_chain(const tg_graph *graph, const tg_lifetimes *lifetimes,
                                        tg_storage storage, tg_precision precision,
                                        const tg_device_limits *limits, const tg_allocator *alloc,
                                        tg_model_records **out, tg_error_info *err);

/* Free the records and everything they hold. NULL is a no-op. */
void tg_model_records_destroy(tg_model_records *records);

/* What an op may do with its memory (docs/models.md, "In-place ops and views"). */
typedef enum tg_in_place_kind {
  TG_IN_PLACE_NONE = 0,
  TG_IN_PLACE_ELEMENTWISE = 1, /* output[i] from the inputs at i: may be written over an input of
                                * the same shape (ADD, MUL, RELU, LOGISTIC, HARD_SWISH, PRELU, ...;
                                * Add, Mul, Relu, Sigmoid, ...) */
  TG_IN_PLACE_VIEW = 2         /* the output is its first input's elements, reshaped: RESHAPE,
                                * SQUEEZE, EXPAND_DIMS; Reshape, Squeeze, Unsqueeze, Flatten,
                                * Identity */
} tg_in_place_kind;

/* The kind of a .tflite builtin name or an ONNX op type (NULL or unknown: TG_IN_PLACE_NONE). */
tg_in_place_kind tg_op_in_place_kind(const char *op_name);

/* The in-place candidates of `records` (built from `graph` and `lifetimes`): at most one pair
 * per op, for ops with one output, where an input record dies at the op (the op is its last
 * reader in op order) and has the output record's size and element type, neither being
 * persistent (a graph input or output, as `lifetimes` says) or constant. Elementwise ops: the
 * input's shape equals the output's; only where one kernel may read and write the same memory:
 * buffers always, image storages (image buffers and textures) only with `images` nonzero
 * (Vulkan storage images; not OpenCL 1.2 images). Views: input 0, where the device layout is
 * the same: equal BHWC shapes, or in buffers batch 1, equal channels and H*W equal (see
 * tg_storage). The candidates hold for serial order; where ops may run at the same time the
 * planner leaves out those the policy's relation does not allow (another op still reading the
 * input: tg_share_relation.in_place). `*pairs` (record indices of records->records, ascending
 * ops) is allocated from `alloc` (NULL when `*count` is 0). TG_ERROR_INVALID_ARGUMENT for
 * mismatched inputs, TG_ERROR_OUT_OF_HOST_MEMORY. */
tg_status tg_model_in_place_pairs(const tg_graph *graph, const tg_lifetimes *lifetimes,
                                  const tg_model_records *records, int images,
                                  const tg_allocator *alloc, tg_in_place_pair **pairs,
                                  size_t *count);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
