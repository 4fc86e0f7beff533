/* Op classes: the memory-access pattern of each op of a graph, which the speed proxies
 * (tangram/speed.h) run and the profile estimates (tangram/profile.h) price. */
#ifndef TANGRAM_OP_CLASS_H
#define TANGRAM_OP_CLASS_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/graph.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* The memory-access pattern of an op. Each output texel (4 channels) reads:
 *   ELEMENTWISE     the same texel of every input (broadcast inputs clamped)
 *   STENCIL         a k x k neighbourhood of its slice in the first input (k from the
 *                   weights' shape, 3 if unknown; strided ops scale the centre)
 *   CHANNEL_MIXING  every slice of its pixel in the first input (1x1 convolutions, fully
 *                   connected, matrix products)
 *   REDUCTION       the window of the first input that maps onto it (pooling, MEAN)
 *   COPY            one texel of one input, by source mapping: the output is split among the
 *                   inputs in proportion to their sizes (CONCAT), and each part maps linearly
 *                   onto its input (RESHAPE, PAD, RESIZE, TRANSPOSE, SLICE). */
typedef enum tg_op_class {
  TG_OP_CLASS_ELEMENTWISE = 0,
  TG_OP_CLASS_STENCIL,
  TG_OP_CLASS_CHANNEL_MIXING,
  TG_OP_CLASS_REDUCTION,
  TG_OP_CLASS_COPY,
  TG_OP_CLASS_COUNT
} tg_op_class;

/* "elementwise", "stencil", "channel_mixing", "reduction", "copy"; NULL when out of range. */
const char *tg_op_class_name(tg_op_class op_class);

/* The class of op `op` of `graph` (one table of TFLite and ONNX op names; unknown ops are
 * ELEMENTWISE), and in `*kernel` (may be NULL) the stencil size k. Convolutions with a 1x1
 * kernel are CHANNEL_MIXING. TG_ERROR_INVALID_ARGUMENT for NULL or an op out of range. */
tg_status tg_op_class_of(const tg_graph *graph, size_t op, tg_op_class *out, uint32_t *kernel);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
