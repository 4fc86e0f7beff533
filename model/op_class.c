/* The op classes of the speed proxies and estimates (tangram/op_class.h): one table. */
#include <ctype.h>
#include <string.h>

#include "core/internal.h"
#include "tangram/op_class.h"

static const char *const k_class_names[TG_OP_CLASS_COUNT] = {"elementwise", "stencil", "channel_mixing",
                                                             "reduction", "copy"};

const char *tg_op_class_name(tg_op_class c) {
  return (int)c >= 0 && c < TG_OP_CLASS_COUNT ? k_class_names[c] : NULL;
}

/* The one table: op names (TFLite builtins and MediaPipe customs, ONNX op types), compared in
 * lower case without '_'. Ops not listed are elementwise (ADD, MUL, activations, ...). */
static const struct {
  const char *name;
  tg_op_class op_class;
} k_op_classes[] = {
    /* stencil: convolutions (1x1 ones become channel mixing) */
    {"conv2d", TG_OP_CLASS_STENCIL},
    {"conv", TG_OP_CLASS_STENCIL},
    {"depthwiseconv2d", TG_OP_CLASS_STENCIL},
    {"transposeconv", TG_OP_CLASS_STENCIL},
    {"convtranspose", TG_OP_CLASS_STENCIL},
    {"convolution2dtransposebias", TG_OP_CLASS_STENCIL},
    /* channel mixing */
    {"fullyconnected", TG_OP_CLASS_CHANNEL_MIXING},
    {"matmul", TG_OP_CLASS_CHANNEL_MIXING},
    {"batchmatmul", TG_OP_CLASS_CHANNEL_MIXING},
    {"gemm", TG_OP_CLASS_CHANNEL_MIXING},
    {"softmax", TG_OP_CLASS_CHANNEL_MIXING},
    {"logsoftmax", TG_OP_CLASS_CHANNEL_MIXING},
    /* reduction */
    {"mean", TG_OP_CLASS_REDUCTION},
    {"sum", TG_OP_CLASS_REDUCTION},
    {"reducemax", TG_OP_CLASS_REDUCTION},
    {"reducemin", TG_OP_CLASS_REDUCTION},
    {"reduceprod", TG_OP_CLASS_REDUCTION},
    {"reducemean", TG_OP_CLASS_REDUCTION},
    {"reducesum", TG_OP_CLASS_REDUCTION},
    {"averagepool2d", TG_OP_CLASS_REDUCTION},
    {"maxpool2d", TG_OP_CLASS_REDUCTION},
    {"l2pool2d", TG_OP_CLASS_REDUCTION},
    {"averagepool", TG_OP_CLASS_REDUCTION},
    {"maxpool", TG_OP_CLASS_REDUCTION},
    {"globalaveragepool", TG_OP_CLASS_REDUCTION},
    {"globalmaxpool", TG_OP_CLASS_REDUCTION},
    {"maxpoolingwithargmax2d", TG_OP_CLASS_REDUCTION},
    {"argmax", TG_OP_CLASS_REDUCTION},
    {"argmin", TG_OP_CLASS_REDUCTION},
    /* copy-like, with a source mapping */
    {"concatenation", TG_OP_CLASS_COPY},
    {"concat", TG_OP_CLASS_COPY},
    {"pad", TG_OP_CLASS_COPY},
    {"padv2", TG_OP_CLASS_COPY},
    {"mirrorpad", TG_OP_CLASS_COPY},
    {"reshape", TG_OP_CLASS_COPY},
    {"squeeze", TG_OP_CLASS_COPY},
    {"unsqueeze", TG_OP_CLASS_COPY},
    {"expanddims", TG_OP_CLASS_COPY},
    {"flatten", TG_OP_CLASS_COPY},
    {"resizebilinear", TG_OP_CLASS_COPY},
    {"resizenearestneighbor", TG_OP_CLASS_COPY},
    {"resize", TG_OP_CLASS_COPY},
    {"upsample", TG_OP_CLASS_COPY},
    {"maxunpooling2d", TG_OP_CLASS_COPY},
    {"transpose", TG_OP_CLASS_COPY},
    {"slice", TG_OP_CLASS_COPY},
    {"stridedslice", TG_OP_CLASS_COPY},
    {"split", TG_OP_CLASS_COPY},
    {"splitv", TG_OP_CLASS_COPY},
    {"gather", TG_OP_CLASS_COPY},
    {"tile", TG_OP_CLASS_COPY},
    {"pack", TG_OP_CLASS_COPY},
    {"unpack", TG_OP_CLASS_COPY},
    {"spacetodepth", TG_OP_CLASS_COPY},
    {"depthtospace", TG_OP_CLASS_COPY},
    {"identity", TG_OP_CLASS_COPY},
};

tg_status tg_op_class_of(const tg_graph *g, size_t op, tg_op_class *out, uint32_t *kernel) {
  if (g == NULL || out == NULL || op >= g->op_count) return TG_ERROR_INVALID_ARGUMENT;
  const tg_op *o = &g->ops[op];
  char key[64];
  size_t n = 0;
  for (const char *c = o->name ? o->name : ""; *c && n + 1 < sizeof key; ++c)
    if (*c != '_') key[n++] = (char)tolower((unsigned char)*c);
  key[n] = '\0';
  tg_op_class cls = TG_OP_CLASS_ELEMENTWISE;
  for (size_t i = 0; i < sizeof k_op_classes / sizeof k_op_classes[0]; ++i)
    if (strcmp(key, k_op_classes[i].name) == 0) {
      cls = k_op_classes[i].op_class;
      break;
    }
  uint32_t k = 3;
  if (cls == TG_OP_CLASS_STENCIL) {
    /* The kernel size from the weights, input 1 of every convolution here (constant, or made
     * by a DEQUANTIZE op): [O, kh, kw, I] (NHWC graphs) or [O, I, kh, kw] (NCHW). */
    int32_t t = o->input_count > 1 ? o->inputs[1] : -1;
    if (t >= 0 && (size_t)t < g->tensor_count && g->tensors[t].rank == 4) {
      const tg_tensor *w = &g->tensors[t];
      int64_t kh = g->dim_order == TG_DIM_ORDER_NCHW ? w->shape[2] : w->shape[1];
      if (kh >= 1 && kh <= 15) k = (uint32_t)kh;
    }
    if (k == 1) cls = TG_OP_CLASS_CHANNEL_MIXING;
  }
  *out = cls;
  if (kernel) *kernel = k;
  return TG_OK;
}

