/* A .tflite reader that walks the FlatBuffers binary directly.
 *
 * FlatBuffers in brief: the file starts with a uoffset (uint32, relative to its own position)
 * to the root table. A table starts with an soffset (int32) to its vtable: vtable = table -
 * soffset. A vtable is uint16 vtable_size, uint16 table_size, then one uint16 per field: the
 * field's offset inside the table, 0 when absent. Vectors and strings are reached through a
 * uoffset and start with a uint32 element count; strings end with a NUL. Everything is little
 * endian. Nothing in the file is trusted: every read below is preceded by a bounds check done
 * in size_t arithmetic that cannot wrap, and the reader follows a fixed schema path (model ->
 * subgraph -> tensor/operator -> vector), so hostile offsets cannot make it loop or recurse.
 *
 * Schema fields used (tensorflow/lite/schema/schema.fbs, field index in parentheses):
 *   Model: version (0), operator_codes (1), subgraphs (2), buffers (4)
 *   OperatorCode: deprecated_builtin_code:byte (0), custom_code (1), builtin_code:int (3)
 *   SubGraph: tensors (0), inputs (1), outputs (2), operators (3)
 *   Tensor: shape (0), type (1), buffer (2), name (3), is_variable (5), shape_signature (7)
 *   Operator: opcode_index (0), inputs (1), outputs (2)
 *   Buffer: data (0), offset:ulong (1), size:ulong (2) */
#include <stdarg.h>
#include <stdio.h>

#include "model/model_internal.h"
#include "tangram/model.h"

/* ------------------------------------------------------------------------------------------ */
/* Builtin operator names, indexed by BuiltinOperator value. */

static const char *const k_builtin_names[] = {
    "ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D",
    "DEPTH_TO_SPACE", "DEQUANTIZE", "EMBEDDING_LOOKUP", "FLOOR", "FULLY_CONNECTED",
    /* 10 */
    "HASHTABLE_LOOKUP", "L2_NORMALIZATION", "L2_POOL_2D", "LOCAL_RESPONSE_NORMALIZATION",
    "LOGISTIC", "LSH_PROJECTION", "LSTM", "MAX_POOL_2D", "MUL", "RELU",
    /* 20 */
    "RELU_N1_TO_1", "RELU6", "RESHAPE", "RESIZE_BILINEAR", "RNN", "SOFTMAX", "SPACE_TO_DEPTH",
    "SVDF", "TANH", "CONCAT_EMBEDDINGS",
    /* 30 */
    "SKIP_GRAM", "CALL", "CUSTOM", "EMBEDDING_LOOKUP_SPARSE", "PAD",
    "UNIDIRECTIONAL_SEQUENCE_RNN", "GATHER", "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND",
    "TRANSPOSE",
    /* 40 */
    "MEAN", "SUB", "DIV", "SQUEEZE", "UNIDIRECTIONAL_SEQUENCE_LSTM", "STRIDED_SLICE",
    "BIDIRECTIONAL_SEQUENCE_RNN", "EXP", "TOPK_V2", "SPLIT",
    /* 50 */
    "LOG_SOFTMAX", "DELEGATE", "BIDIRECTIONAL_SEQUENCE_LSTM", "CAST", "PRELU", "MAXIMUM",
    "ARG_MAX", "MINIMUM", "LESS", "NEG",
    /* 60 */
    "PADV2", "GREATER", "GREATER_EQUAL", "LESS_EQUAL", "SELECT", "SLICE", "SIN",
    "TRANSPOSE_CONV", "SPARSE_TO_DENSE", "TILE",
    /* 70 */
    "EXPAND_DIMS", "EQUAL", "NOT_EQUAL", "LOG", "SUM", "SQRT", "RSQRT", "SHAPE", "POW",
    "ARG_MIN",
    /* 80 */
    "FAKE_QUANT", "REDUCE_PROD", "REDUCE_MAX", "PACK", "LOGICAL_OR", "ONE_HOT", "LOGICAL_AND",
    "LOGICAL_NOT", "UNPACK", "REDUCE_MIN",
    /* 90 */
    "FLOOR_DIV", "REDUCE_ANY", "SQUARE", "ZEROS_LIKE", "FILL", "FLOOR_MOD", "RANGE",
    "RESIZE_NEAREST_NEIGHBOR", "LEAKY_RELU", "SQUARED_DIFFERENCE",
    /* 100 */
    "MIRROR_PAD", "ABS", "SPLIT_V", "UNIQUE", "CEIL", "REVERSE_V2", "ADD_N", "GATHER_ND", "COS",
    "WHERE",
    /* 110 */
    "RANK", "ELU", "REVERSE_SEQUENCE", "MATRIX_DIAG", "QUANTIZE", "MATRIX_SET_DIAG", "ROUND",
    "HARD_SWISH", "IF", "WHILE",
    /* 120 */
    "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5", "SCATTER_ND", "SELECT_V2", "DENSIFY",
    "SEGMENT_SUM", "BATCH_MATMUL", "PLACEHOLDER_FOR_GREATER_OP_CODES", "CUMSUM", "CALL_ONCE",
    /* 130 */
    "BROADCAST_TO", "RFFT2D", "CONV_3D", "IMAG", "REAL", "COMPLEX_ABS", "HASHTABLE",
    "HASHTABLE_FIND", "HASHTABLE_IMPORT", "HASHTABLE_SIZE",
    /* 140 */
    "REDUCE_ALL", "CONV_3D_TRANSPOSE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE",
    "BROADCAST_ARGS", "RANDOM_STANDARD_NORMAL", "BUCKETIZE", "RANDOM_UNIFORM", "MULTINOMIAL",
    /* 150 */
    "GELU", "DYNAMIC_UPDATE_SLICE", "RELU_0_TO_1", "UNSORTED_SEGMENT_PROD",
    "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_SUM", "ATAN2", "UNSORTED_SEGMENT_MIN", "SIGN",
    "BITCAST",
    /* 160 */
    "BITWISE_XOR", "RIGHT_SHIFT",
};

#define TG_TFLITE_BUILTIN_CUSTOM 32

const char *tg_tflite_builtin_name(int32_t code) {
  if (code < 0 || (size_t)code >= sizeof k_builtin_names / sizeof k_builtin_names[0]) return NULL;
  return k_builtin_names[code];
}

/* ------------------------------------------------------------------------------------------ */
/* Bounds-checked FlatBuffers access. */

/* Copies out of the file may total this many times the file size, plus 1 MiB. */
#define TG_TFLITE_EXPANSION 16

typedef struct fb_reader {
  const uint8_t *data;
  size_t length;
  const char *source;
  char where[160];  /* what is being read, e.g. "tensor 12"; prefixes every message */
  tg_error_info *err;
  /* Bytes the reader may still copy out of the file (names, index lists). FlatBuffers lets
   * many tables share one vector or string, so a small file could otherwise make the reader
   * copy the same large vector for every op: a few MB expanding to tens of GB. Real models
   * share little; the budget is a generous multiple of the file size. */
  uint64_t budget;
  int recompute;    /* a dynamic input was given a size other than the file's: infer shapes */
} fb_reader;

typedef struct fb_table {
  size_t pos;            /* table start (where its soffset is) */
  size_t vtable;         /* vtable start */
  uint16_t vtable_size;  /* bytes, including the two header fields */
  uint16_t size;         /* table inline size in bytes */
} fb_table;

typedef struct fb_vector {
  size_t pos;       /* first element */
  uint32_t count;
  int present;
} fb_vector;

static tg_status fb_fail(fb_reader *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static tg_status fb_fail(fb_reader *r, const char *fmt, ...) {
  char msg[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (r->where[0] != '\0')
    return tg__error(r->err, TG_ERROR_PARSE, "%s: %s: %s", r->source, r->where, msg);
  return tg__error(r->err, TG_ERROR_PARSE, "%s: %s", r->source, msg);
}

/* Charge `bytes` of copying to the budget. */
static tg_status fb_spend(fb_reader *r, uint64_t bytes) {
  if (bytes > r->budget)
    return fb_fail(r, "the file expands to more than %d times its size (vectors or strings shared by too many tables)",
                   TG_TFLITE_EXPANSION);
  r->budget -= bytes;
  return TG_OK;
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24);
}
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32); }
/* Two's complement without relying on implementation-defined unsigned->signed conversion. */
static int32_t rdi32(const uint8_t *p) {
  uint32_t u = rd32(p);
  return u <= INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) - INT32_MAX - 1;
}

/* The table at `pos`: its soffset, vtable and inline size must all lie inside the file. */
static tg_status fb_table_at(fb_reader *r, size_t pos, const char *what, fb_table *t) {
  if (pos > r->length || r->length - pos < 4)
    return fb_fail(r, "%s table runs past the end of the file (offset %zu, length %zu)", what,
                   pos, r->length);
  int64_t so = rdi32(r->data + pos);
  /* |so| < 2^31 and pos < 2^63, so the subtraction cannot overflow int64. */
  int64_t vt = (int64_t)pos - so;
  if (vt < 0 || (uint64_t)vt > r->length || r->length - (size_t)vt < 4)
    return fb_fail(r, "%s table at offset %zu has its vtable outside the file (at %lld, length %zu)",
                   what, pos, (long long)vt, r->length);
  t->pos = pos;
  t->vtable = (size_t)vt;
  t->vtable_size = rd16(r->data + t->vtable);
  t->size = rd16(r->data + t->vtable + 2);
  if (t->vtable_size < 4 || (t->vtable_size & 1u) != 0)
    return fb_fail(r, "%s table at offset %zu has an invalid vtable size %u", what, pos,
                   (unsigned)t->vtable_size);
  if (r->length - t->vtable < t->vtable_size)
    return fb_fail(r, "%s vtable runs past the end of the file (offset %zu, size %u, length %zu)",
                   what, t->vtable, (unsigned)t->vtable_size, r->length);
  if (t->size < 4)
    return fb_fail(r, "%s table at offset %zu has an invalid size %u", what, pos,
                   (unsigned)t->size);
  if (r->length - pos < t->size)
    return fb_fail(r, "%s table runs past the end of the file (offset %zu, size %u, length %zu)",
                   what, pos, (unsigned)t->size, r->length);
  return TG_OK;
}

/* Position of field `field` (`width` bytes) of table `t`, or 0 when absent. The field must lie
 * inside the table's inline data (and so inside the file). */
static tg_status fb_field(fb_reader *r, const fb_table *t, unsigned field, size_t width,
                          const char *name, size_t *pos) {
  size_t entry = 4 + 2 * (size_t)field;
  *pos = 0;
  if (entry + 2 > t->vtable_size) return TG_OK; /* older writer: field not in the vtable */
  uint16_t off = rd16(r->data + t->vtable + entry);
  if (off == 0) return TG_OK;
  if (off < 4 || (size_t)off + width > t->size)
    return fb_fail(r, "field %s at table offset %u (%zu bytes) lies outside its table (size %u)",
                   name, (unsigned)off, width, (unsigned)t->size);
  *pos = t->pos + off;
  return TG_OK;
}

static tg_status fb_u32(fb_reader *r, const fb_table *t, unsigned field, const char *name,
                        uint32_t def, uint32_t *out) {
  size_t pos;
  tg_status st = fb_field(r, t, field, 4, name, &pos);
  if (st != TG_OK) return st;
  *out = pos ? rd32(r->data + pos) : def;
  return TG_OK;
}

static tg_status fb_i32(fb_reader *r, const fb_table *t, unsigned field, const char *name,
                        int32_t def, int32_t *out) {
  size_t pos;
  tg_status st = fb_field(r, t, field, 4, name, &pos);
  if (st != TG_OK) return st;
  *out = pos ? rdi32(r->data + pos) : def;
  return TG_OK;
}

static tg_status fb_u8(fb_reader *r, const fb_table *t, unsigned field, const char *name,
                       uint8_t def, uint8_t *out) {
  size_t pos;
  tg_status st = fb_field(r, t, field, 1, name, &pos);
  if (st != TG_OK) return st;
  *out = pos ? r->data[pos] : def;
  return TG_OK;
}

static tg_status fb_u64(fb_reader *r, const fb_table *t, unsigned field, const char *name,
                        uint64_t def, uint64_t *out) {
  size_t pos;
  tg_status st = fb_field(r, t, field, 8, name, &pos);
  if (st != TG_OK) return st;
  *out = pos ? rd64(r->data + pos) : def;
  return TG_OK;
}

/* Follow the uoffset stored at `at` (4 bytes at `at` are known to be inside the file). */
static tg_status fb_deref(fb_reader *r, size_t at, const char *name, size_t *target) {
  uint32_t u = rd32(r->data + at);
  *target = 0;
  /* A uoffset always points forward past itself; 0 would make the object overlap its own
   * reference (the classic self-referencing input). */
  if (u == 0) return fb_fail(r, "%s offset at %zu points to itself", name, at);
  if (u > r->length - at)
    return fb_fail(r, "%s offset at %zu points past the end of the file (offset %zu + %u, length %zu)",
                   name, at, at, u, r->length);
  *target = at + u;
  return TG_OK;
}

/* The vector whose length word is at `at`, of `elem`-byte elements. */
static tg_status fb_vector_at(fb_reader *r, size_t at, size_t elem, const char *name,
                              fb_vector *v) {
  if (at > r->length || r->length - at < 4)
    return fb_fail(r, "%s vector runs past the end of the file (offset %zu, length %zu)", name,
                   at, r->length);
  uint32_t n = rd32(r->data + at);
  if ((r->length - at - 4) / elem < n)
    return fb_fail(r, "%s vector of %u elements runs past the end of the file (offset %zu, length %zu)",
                   name, n, at, r->length);
  v->pos = at + 4;
  v->count = n;
  v->present = 1;
  return TG_OK;
}

static tg_status fb_vector_field(fb_reader *r, const fb_table *t, unsigned field, size_t elem,
                                 const char *name, fb_vector *v) {
  size_t pos, target;
  v->pos = 0;
  v->count = 0;
  v->present = 0;
  tg_status st = fb_field(r, t, field, 4, name, &pos);
  if (st != TG_OK || pos == 0) return st;
  if ((st = fb_deref(r, pos, name, &target)) != TG_OK) return st;
  return fb_vector_at(r, target, elem, name, v);
}

/* A string field: `*s` points into the file (NUL-terminated inside it), NULL when absent. */
static tg_status fb_string_field(fb_reader *r, const fb_table *t, unsigned field,
                                 const char *name, const char **s, size_t *len) {
  fb_vector v;
  *s = NULL;
  *len = 0;
  tg_status st = fb_vector_field(r, t, field, 1, name, &v);
  if (st != TG_OK || !v.present) return st;
  if (r->length - v.pos - v.count < 1)
    return fb_fail(r, "%s string runs past the end of the file (offset %zu, length %zu)", name,
                   v.pos - 4, r->length);
  if (r->data[v.pos + v.count] != 0)
    return fb_fail(r, "%s string at offset %zu is not NUL-terminated", name, v.pos - 4);
  *s = (const char *)(r->data + v.pos);
  *len = v.count;
  return TG_OK;
}

/* Table element `i` of a vector of tables (i < v->count). */
static tg_status fb_vector_table(fb_reader *r, const fb_vector *v, uint32_t i, const char *what,
                                 fb_table *t) {
  size_t at = v->pos + 4 * (size_t)i, target = 0;
  tg_status st = fb_deref(r, at, what, &target);
  if (st != TG_OK) return st;
  return fb_table_at(r, target, what, t);
}

/* ------------------------------------------------------------------------------------------ */
/* The model. */

typedef struct tflite_model {
  fb_table root;
  fb_vector opcodes;
  fb_vector subgraphs;
  fb_vector buffers;
  fb_table subgraph;
  fb_vector tensors;
  fb_vector inputs;
  fb_vector outputs;
  fb_vector operators;
} tflite_model;

static tg_status read_header(fb_reader *r, tflite_model *m) {
  tg_status st;
  size_t root = 0;
  if (r->length < 8)
    return fb_fail(r, "too short for a .tflite file (%zu bytes)", r->length);
  if (memcmp(r->data + 4, "TFL3", 4) != 0)
    return fb_fail(r, "not a .tflite file (no \"TFL3\" identifier at bytes 4..7)");
  if ((st = fb_deref(r, 0, "root table", &root)) != TG_OK) return st;
  if ((st = fb_table_at(r, root, "model", &m->root)) != TG_OK) return st;
  uint32_t version;
  if ((st = fb_u32(r, &m->root, 0, "version", 0, &version)) != TG_OK) return st;
  if (version != 3)
    return fb_fail(r, "schema version %u is not supported (only version 3 is)", version);
  if ((st = fb_vector_field(r, &m->root, 1, 4, "operator_codes", &m->opcodes)) != TG_OK ||
      (st = fb_vector_field(r, &m->root, 2, 4, "subgraphs", &m->subgraphs)) != TG_OK ||
      (st = fb_vector_field(r, &m->root, 4, 4, "buffers", &m->buffers)) != TG_OK)
    return st;
  if (m->subgraphs.count == 0) return fb_fail(r, "the model has no subgraphs");
  snprintf(r->where, sizeof r->where, "subgraph 0");
  if ((st = fb_vector_table(r, &m->subgraphs, 0, "subgraph", &m->subgraph)) != TG_OK ||
      (st = fb_vector_field(r, &m->subgraph, 0, 4, "tensors", &m->tensors)) != TG_OK ||
      (st = fb_vector_field(r, &m->subgraph, 1, 4, "inputs", &m->inputs)) != TG_OK ||
      (st = fb_vector_field(r, &m->subgraph, 2, 4, "outputs", &m->outputs)) != TG_OK ||
      (st = fb_vector_field(r, &m->subgraph, 3, 4, "operators", &m->operators)) != TG_OK)
    return st;
  /* Tensor indices are int32 in the schema: more tensors than that cannot be referenced. */
  if (m->tensors.count > (uint32_t)INT32_MAX)
    return fb_fail(r, "%u tensors is more than can be indexed", m->tensors.count);
  r->where[0] = '\0';
  return TG_OK;
}

/* Is buffer `index` non-empty? Data is inline (`data`) or, in files over 2 GB, stored after
 * the flatbuffer at `offset` with `size` (offset 0 and 1 mean "none": 1 is the placeholder
 * writers use while building). */
static tg_status buffer_has_data(fb_reader *r, const tflite_model *m, uint32_t index, int *has) {
  fb_table b;
  fb_vector data;
  uint64_t offset, size;
  tg_status st;
  char what[32];
  *has = 0;
  snprintf(what, sizeof what, "buffer %u", index);
  if ((st = fb_vector_table(r, &m->buffers, index, what, &b)) != TG_OK ||
      (st = fb_vector_field(r, &b, 0, 1, "buffer data", &data)) != TG_OK ||
      (st = fb_u64(r, &b, 1, "buffer offset", 0, &offset)) != TG_OK ||
      (st = fb_u64(r, &b, 2, "buffer size", 0, &size)) != TG_OK)
    return st;
  if (data.count > 0) {
    *has = 1;
    return TG_OK;
  }
  if (offset > 1 && size > 0) {
    if (offset > r->length || size > r->length - offset)
      return fb_fail(r, "buffer %u: data (offset %llu, size %llu) runs past the end of the file (length %zu)",
                     index, (unsigned long long)offset, (unsigned long long)size, r->length);
    *has = 1;
  }
  return TG_OK;
}

/* Dynamic dimensions of one tensor (model_internal.h). */
typedef tg__tflite_dims dyn_dims;

static tg_status read_tensor(fb_reader *r, const tflite_model *m, uint32_t i, tg_graph *g,
                             dyn_dims *dyn) {
  tg_tensor *tensor = &g->tensors[i];
  fb_table t;
  fb_vector shape, sig;
  tg_status st;
  snprintf(r->where, sizeof r->where, "tensor %u", i);
  if ((st = fb_vector_table(r, &m->tensors, i, "tensor", &t)) != TG_OK) return st;

  /* `shape` holds the sizes the converter computed (1 where the size is dynamic);
   * shape_signature, when present, marks the dynamic dimensions with -1. */
  if ((st = fb_vector_field(r, &t, 0, 4, "shape", &shape)) != TG_OK ||
      (st = fb_vector_field(r, &t, 7, 4, "shape_signature", &sig)) != TG_OK)
    return st;
  const fb_vector *dims = shape.present ? &shape : &sig;
  if (dims->count > TG_MAX_RANK)
    return fb_fail(r, "rank %u exceeds the maximum of %d", dims->count, TG_MAX_RANK);
  if (shape.present && sig.present && sig.count != shape.count)
    return fb_fail(r, "shape_signature has rank %u but shape rank %u", sig.count, shape.count);
  tensor->rank = dims->count;
  uint64_t elements = 1;
  for (uint32_t d = 0; d < dims->count; ++d) {
    int32_t v = rdi32(r->data + dims->pos + 4 * (size_t)d);
    int32_t s = sig.present ? rdi32(r->data + sig.pos + 4 * (size_t)d) : v;
    if (v < -1) return fb_fail(r, "shape dimension %u is %d", d, (int)v);
    if (s < -1) return fb_fail(r, "shape_signature dimension %u is %d", d, (int)s);
    if (s == -1 || v == -1) dyn->dynamic |= (uint8_t)(1u << d);
    if (v == -1) dyn->unrecorded |= (uint8_t)(1u << d);
    if (s >= 0 && v >= 0 && s != v)
      return fb_fail(r, "dimension %u is %d in shape but %d in shape_signature", d, (int)v, (int)s);
    /* A dynamic dimension keeps the recorded size; the caller decides whether that stands. */
    tensor->shape[d] = v == -1 ? 0 : v;
    if (!tg__mul_u64(elements, (uint64_t)tensor->shape[d], &elements) ||
        elements > (uint64_t)INT64_MAX)
      return fb_fail(r, "shape has more elements than fit in 63 bits");
  }

  uint8_t type, is_variable;
  uint32_t buffer;
  if ((st = fb_u8(r, &t, 1, "type", 0, &type)) != TG_OK ||
      (st = fb_u32(r, &t, 2, "buffer", 0, &buffer)) != TG_OK ||
      (st = fb_u8(r, &t, 5, "is_variable", 0, &is_variable)) != TG_OK)
    return st;
  tensor->dtype = type <= TG_DTYPE_INT4 ? (tg_dtype)type : TG_DTYPE_UNKNOWN;
  if (buffer > 0) {
    /* Buffer 0 is, by convention, the empty buffer. */
    if (buffer >= m->buffers.count)
      return fb_fail(r, "buffer index %u is out of range (the model has %u buffers)", buffer,
                     m->buffers.count);
    int has;
    if ((st = buffer_has_data(r, m, buffer, &has)) != TG_OK) return st;
    if (has) tensor->flags |= TG_TENSOR_CONSTANT;
  }
  /* Variables hold state across invocations; they are never planned, and ops read them
   * before (or without) writing them. */
  if (is_variable) tensor->flags |= TG_TENSOR_CONSTANT;

  const char *name;
  size_t name_len;
  if ((st = fb_string_field(r, &t, 3, "name", &name, &name_len)) != TG_OK) return st;
  if ((st = fb_spend(r, (uint64_t)name_len + 16)) != TG_OK) return st;
  if (name != NULL && name_len > 0) {
    tensor->name = tg__strndup(&g->alloc, name, name_len);
  } else {
    char buf[32];
    snprintf(buf, sizeof buf, "tensor_%u", i);
    tensor->name = tg__strdup(&g->alloc, buf);
  }
  return tensor->name ? TG_OK : TG_ERROR_OUT_OF_HOST_MEMORY;
}

/* The op name for operator code `index`: builtin name, custom code, or "BUILTIN_<n>". */
static tg_status opcode_name(fb_reader *r, const tflite_model *m, uint32_t index,
                             const tg_allocator *a, char **out) {
  fb_table c;
  tg_status st;
  uint8_t deprecated_u8;
  int32_t builtin;
  const char *custom;
  size_t custom_len;
  char what[40];
  *out = NULL;
  if (index >= m->opcodes.count)
    return fb_fail(r, "opcode index %u is out of range (the model has %u operator codes)", index,
                   m->opcodes.count);
  snprintf(what, sizeof what, "operator code %u", index);
  if ((st = fb_vector_table(r, &m->opcodes, index, what, &c)) != TG_OK ||
      (st = fb_u8(r, &c, 0, "deprecated_builtin_code", 0, &deprecated_u8)) != TG_OK ||
      (st = fb_string_field(r, &c, 1, "custom_code", &custom, &custom_len)) != TG_OK ||
      (st = fb_i32(r, &c, 3, "builtin_code", 0, &builtin)) != TG_OK)
    return st;
  /* deprecated_builtin_code is an int8 kept for old readers; codes above 127 live only in
   * builtin_code, which old writers leave at 0. TFLite takes the larger of the two. */
  int32_t deprecated = deprecated_u8 < 128 ? deprecated_u8 : (int32_t)deprecated_u8 - 256;
  int32_t code = deprecated > builtin ? deprecated : builtin;
  if (code < 0) return fb_fail(r, "%s: builtin code %d is negative", what, (int)code);
  if ((st = fb_spend(r, (uint64_t)custom_len + 32)) != TG_OK) return st;
  if (code == TG_TFLITE_BUILTIN_CUSTOM && custom != NULL && custom_len > 0) {
    *out = tg__strndup(a, custom, custom_len);
  } else {
    const char *name = tg_tflite_builtin_name(code);
    char buf[32];
    if (name == NULL) {
      snprintf(buf, sizeof buf, "BUILTIN_%d", (int)code);
      name = buf;
    }
    *out = tg__strdup(a, name);
  }
  return *out ? TG_OK : TG_ERROR_OUT_OF_HOST_MEMORY;
}

/* Copy an int32 tensor-index vector, checking every entry. `allow_absent`: -1 is kept. */
static tg_status read_index_list(fb_reader *r, const fb_vector *v, size_t tensor_count,
                                 int allow_absent, const char *what, const tg_allocator *a,
                                 int32_t **out) {
  *out = NULL;
  tg_status st = fb_spend(r, 4 * (uint64_t)v->count);
  if (st != TG_OK) return st;
  *out = tg__calloc(a, v->count ? v->count : 1, sizeof **out);
  if (*out == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (uint32_t k = 0; k < v->count; ++k) {
    int32_t idx = rdi32(r->data + v->pos + 4 * (size_t)k);
    if (idx == -1 && allow_absent) {
      (*out)[k] = -1;
      continue;
    }
    if (idx < 0 || (size_t)idx >= tensor_count) {
      /* The caller frees *out with the graph. */
      if (idx == -1)
        return fb_fail(r, "%s %u is -1 (absent), which is not allowed here", what, k);
      return fb_fail(r, "%s %u is tensor %d, outside 0..%zu", what, k, (int)idx,
                     tensor_count ? tensor_count - 1 : 0);
    }
    (*out)[k] = idx;
  }
  return TG_OK;
}

static tg_status read_op(fb_reader *r, const tflite_model *m, uint32_t i, tg_graph *g) {
  tg_op *op = &g->ops[i];
  fb_table t;
  fb_vector ins, outs;
  uint32_t opcode;
  tg_status st;
  snprintf(r->where, sizeof r->where, "op %u", i);
  if ((st = fb_vector_table(r, &m->operators, i, "operator", &t)) != TG_OK ||
      (st = fb_u32(r, &t, 0, "opcode_index", 0, &opcode)) != TG_OK ||
      (st = opcode_name(r, m, opcode, &g->alloc, &op->name)) != TG_OK)
    return st;
  snprintf(r->where, sizeof r->where, "op %u (%.120s)", i, op->name);
  if ((st = fb_vector_field(r, &t, 1, 4, "inputs", &ins)) != TG_OK ||
      (st = fb_vector_field(r, &t, 2, 4, "outputs", &outs)) != TG_OK)
    return st;
  op->input_count = ins.count;
  op->output_count = outs.count;
  if ((st = read_index_list(r, &ins, g->tensor_count, 1, "input", &g->alloc, &op->inputs)) !=
      TG_OK)
    return st;
  return read_index_list(r, &outs, g->tensor_count, 0, "output", &g->alloc, &op->outputs);
}

static tg_status read_io(fb_reader *r, const fb_vector *v, tg_graph *g, uint32_t flag,
                         const char *what, uint32_t **out, size_t *count) {
  int32_t *list = NULL;
  tg_status st = read_index_list(r, v, g->tensor_count, 0, what, &g->alloc, &list);
  /* int32 and uint32 have the same size and every entry is now a valid index >= 0. */
  *out = (uint32_t *)(void *)list;
  if (st != TG_OK) return st;
  *count = v->count;
  for (uint32_t k = 0; k < v->count; ++k) {
    (*out)[k] = (uint32_t)list[k];
    g->tensors[(*out)[k]].flags |= flag;
  }
  return TG_OK;
}

/* The dims of `d` as "0, 2 and 3" and the shape with "?" there, for messages. */
static void describe_dynamic(const tg_tensor *t, uint8_t mask, char *dims, size_t dsize,
                             char *shape, size_t ssize) {
  int64_t s[TG_MAX_RANK];
  size_t n = 0;
  unsigned total = 0, seen = 0;
  for (uint32_t d = 0; d < t->rank; ++d) total += (mask >> d) & 1u;
  dims[0] = '\0';
  for (uint32_t d = 0; d < t->rank; ++d) {
    s[d] = (mask >> d) & 1u ? -1 : t->shape[d];
    if (!((mask >> d) & 1u) || n + 1 >= dsize) continue;
    ++seen;
    int w = snprintf(dims + n, dsize - n, "%s%u", seen == 1 ? "" : seen == total ? " and " : ", ", d);
    if (w < 0) break;
    n += (size_t)w < dsize - n ? (size_t)w : dsize - n - 1;
  }
  tg__shape_text(s, t->rank, shape, ssize);
}

/* The dynamic dimensions of the tensors of `g` other than its inputs: each must follow from an
 * input (`any_dynamic_input`) at the size the file records, or be inferred again. */
static tg_status check_dynamic_tensors(fb_reader *r, const tg_graph *g, const dyn_dims *dyn, int any_dynamic_input) {
  for (size_t i = 0; i < g->tensor_count; ++i) {
    const tg_tensor *t = &g->tensors[i];
    if (dyn[i].dynamic == 0 || (t->flags & TG_TENSOR_INPUT)) continue;
    char dims[64], shape[160], by[200];
    describe_dynamic(t, dyn[i].dynamic, dims, sizeof dims, shape, sizeof shape);
    by[0] = '\0';
    for (size_t o = 0; o < g->op_count && by[0] == '\0'; ++o)
      for (uint32_t k = 0; k < g->ops[o].output_count; ++k)
        if (g->ops[o].outputs[k] == (int32_t)i) {
          snprintf(by, sizeof by, " (written by op %zu, %.120s)", o, g->ops[o].name ? g->ops[o].name : "?");
          break;
        }
    if (dyn[i].unrecorded && !r->recompute)
      return tg__error(r->err, TG_ERROR_UNSUPPORTED,
                       "%s: tensor %zu '%s'%s: dynamic dimension%s %s (%s), and the file records no size for %s",
                       r->source, i, t->name, by, strchr(dims, ' ') ? "s" : "", dims, shape,
                       strchr(dims, ' ') ? "them" : "it");
    if (!any_dynamic_input)
      return tg__error(r->err, TG_ERROR_UNSUPPORTED,
                       "%s: tensor %zu '%s'%s: dimension%s %s (%s) %s dynamic although every input "
                       "is static: the size depends on the data, and Tangram plans static sizes only",
                       r->source, i, t->name, by, strchr(dims, ' ') ? "s" : "", dims, shape,
                       strchr(dims, ' ') ? "are" : "is");
    /* Follows from a dynamic input fixed at the size the file was computed for. */
  }
  return TG_OK;
}

/* Dynamic dimensions: graph inputs take the sizes given in `options` (which must be the ones
 * the file's shapes were computed for); other tensors must follow from the inputs. */
static tg_status resolve_dynamic(fb_reader *r, tg_graph *g, const dyn_dims *dyn,
                                 const tg_model_options *options) {
  r->where[0] = '\0';
  tg_status st = tg__check_input_shapes(r->source, options, r->err);
  if (st != TG_OK) return st;
  if (options != NULL && options->input_shape_count > 0) {
    const char **names = tg__calloc(&g->alloc, g->input_count ? g->input_count : 1, sizeof *names);
    if (names == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    for (size_t k = 0; k < g->input_count; ++k) names[k] = g->tensors[g->inputs[k]].name;
    st = tg__unknown_input_shapes(r->source, options, names, g->input_count, r->err);
    tg__free(&g->alloc, names);
    if (st != TG_OK) return st;
  }
  int any_dynamic_input = 0;
  for (size_t k = 0; k < g->input_count; ++k) {
    tg_tensor *t = &g->tensors[g->inputs[k]];
    const dyn_dims *dd = &dyn[g->inputs[k]];
    const tg_input_shape *given = tg__find_input_shape(options, t->name);
    char dims[64], shape[160], got[160];
    t->dynamic_dims = dd->dynamic;
    if (given == NULL) {
      if (dd->dynamic == 0) continue;
      if ((dd->dynamic & dd->unrecorded) == 0) {
        /* The file records a size for each dynamic dimension: TFLite's interpreter runs the
         * model at it until the engine resizes the input, and so does the plan. */
        t->flags |= TG_TENSOR_ASSUMED_SHAPE;
        any_dynamic_input = 1;
        continue;
      }
      describe_dynamic(t, dd->dynamic & dd->unrecorded, dims, sizeof dims, shape, sizeof shape);
      return tg__error(r->err, TG_ERROR_INVALID_ARGUMENT,
                       "%s: input '%s': dimension%s %s %s dynamic (-1 in shape_signature) and the file "
                       "records no size: give %s in tg_model_options.input_shapes (%s:%s)",
                       r->source, t->name, strchr(dims, ' ') ? "s" : "", dims,
                       strchr(dims, ' ') ? "are" : "is", strchr(dims, ' ') ? "their sizes" : "its size",
                       t->name, shape);
    }
    tg__shape_text(given->dims, given->rank, got, sizeof got);
    if (given->rank != t->rank) {
      describe_dynamic(t, dd->dynamic, dims, sizeof dims, shape, sizeof shape);
      return tg__error(r->err, TG_ERROR_INVALID_ARGUMENT,
                       "%s: input '%s' has rank %u (%s) but the shape given, %s, has rank %u",
                       r->source, t->name, t->rank, shape, got, given->rank);
    }
    any_dynamic_input |= dd->dynamic != 0;
    for (uint32_t d = 0; d < t->rank; ++d) {
      int dynamic = (dd->dynamic >> d) & 1u, unrecorded = (dd->unrecorded >> d) & 1u;
      if (!dynamic && given->dims[d] != t->shape[d])
        return tg__error(r->err, TG_ERROR_INVALID_ARGUMENT,
                         "%s: input '%s': dimension %u is %lld in the file, not %lld as given (%s)",
                         r->source, t->name, d, (long long)t->shape[d], (long long)given->dims[d], got);
      if (dynamic && !unrecorded && given->dims[d] != t->shape[d]) r->recompute = 1;
      t->shape[d] = given->dims[d];
    }
  }
  return check_dynamic_tensors(r, g, dyn, any_dynamic_input);
}

/* A subgraph `g` that `caller` runs with the tensors `args` of `built` (-1: absent) as its
 * inputs: each input takes the size passed where the file records none, and must have the
 * size passed where it records one (its other tensors' shapes hold for the recorded sizes
 * only); then its other tensors as in subgraph 0. */
static tg_status resolve_subgraph(fb_reader *r, tg_graph *g, const dyn_dims *dyn, const tg_tensor *built,
                                  const int32_t *args, const char *caller) {
  int any_dynamic_input = 0;
  for (size_t k = 0; k < g->input_count; ++k) {
    tg_tensor *t = &g->tensors[g->inputs[k]];
    const dyn_dims *dd = &dyn[g->inputs[k]];
    any_dynamic_input |= dd->dynamic != 0;
    if (args[k] < 0) continue;
    const tg_tensor *arg = &built[args[k]];
    int same = arg->rank == t->rank;
    for (uint32_t d = 0; same && d < t->rank; ++d) same = arg->shape[d] == t->shape[d] || ((dd->unrecorded >> d) & 1u);
    if (!same) {
      char dims[64], shape[160], passed[160];
      describe_dynamic(t, dd->unrecorded, dims, sizeof dims, shape, sizeof shape);
      tg__shape_text(arg->shape, arg->rank, passed, sizeof passed);
      return tg__error(r->err, TG_ERROR_UNSUPPORTED,
                       "%s: input %zu '%s' is %s, but %s passes %s: the shapes the file records for this "
                       "subgraph hold for the sizes it records, and Tangram does not infer them again",
                       r->source, k, t->name, shape, caller, passed);
    }
    for (uint32_t d = 0; d < t->rank; ++d) t->shape[d] = arg->shape[d];
  }
  return check_dynamic_tensors(r, g, dyn, any_dynamic_input);
}

/* ------------------------------------------------------------------------------------------ */
/* Control flow: IF, WHILE and CALL_ONCE run other subgraphs of the file. Their ops are laid out
 * in the caller's op order (tangram/graph.h, tg_subgraph): an IF's branches then the IF (its
 * branches read the IF's inputs directly); a WHILE's start op (writing the cond and body
 * subgraphs' inputs), cond, body, then WHILE.end (reading both subgraphs' inputs and outputs,
 * writing the WHILE's outputs); a CALL_ONCE's subgraph then the CALL_ONCE. */

#define TFLITE_MAX_NESTING 16

typedef struct cf_builder {
  fb_reader *r;
  const tflite_model *m;        /* the model (subgraph 0 selected) */
  const tg_allocator *a;
  tg_tensor *tensors;
  size_t nt, ct;
  tg_op *ops;
  size_t no, co;
  tg_subgraph *subs;
  size_t ns, cs;
  uint32_t stack[TFLITE_MAX_NESTING + 1]; /* subgraph indices being laid out */
  unsigned depth;
  char source[TFLITE_MAX_NESTING + 2][200]; /* "<file> (subgraph N)" per depth, for messages */
} cf_builder;

static tg_status cf_grow(cf_builder *b, void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return TG_OK;
  size_t n = *cap ? *cap * 2 : 16;
  while (n < need) n *= 2;
  void *q = tg__realloc(b->a, *p, *cap * elem, n * elem);
  if (q == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  memset((char *)q + *cap * elem, 0, (n - *cap) * elem);
  *p = q;
  *cap = n;
  return TG_OK;
}

static int is_flow_op(const char *name) {
  return name && (strcmp(name, "IF") == 0 || strcmp(name, "WHILE") == 0 || strcmp(name, "CALL_ONCE") == 0);
}

/* Subgraph `index` of the file as a graph of its own (tensors, inputs, outputs, ops) with its
 * tensors' dynamic dimensions (`*dyn_out`, the caller frees it). */
static tg_status cf_read_subgraph(cf_builder *b, uint32_t index, tflite_model *mk, tg_graph **out,
                                  dyn_dims **dyn_out) {
  fb_reader *r = b->r;
  tg_status st;
  *out = NULL;
  *dyn_out = NULL;
  *mk = *b->m;
  snprintf(r->where, sizeof r->where, "subgraph %u", index);
  if ((st = fb_vector_table(r, &mk->subgraphs, index, "subgraph", &mk->subgraph)) != TG_OK ||
      (st = fb_vector_field(r, &mk->subgraph, 0, 4, "tensors", &mk->tensors)) != TG_OK ||
      (st = fb_vector_field(r, &mk->subgraph, 1, 4, "inputs", &mk->inputs)) != TG_OK ||
      (st = fb_vector_field(r, &mk->subgraph, 2, 4, "outputs", &mk->outputs)) != TG_OK ||
      (st = fb_vector_field(r, &mk->subgraph, 3, 4, "operators", &mk->operators)) != TG_OK)
    return st;
  if (mk->tensors.count > (uint32_t)INT32_MAX) return fb_fail(r, "%u tensors is more than can be indexed", mk->tensors.count);
  tg_graph *g = NULL;
  if ((st = tg_graph_create(mk->tensors.count, mk->operators.count, b->a, &g)) != TG_OK) return st;
  dyn_dims *dyn = tg__calloc(b->a, mk->tensors.count ? mk->tensors.count : 1, sizeof *dyn);
  if (dyn == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
  for (uint32_t i = 0; st == TG_OK && i < mk->tensors.count; ++i) st = read_tensor(r, mk, i, g, &dyn[i]);
  if (st == TG_OK) {
    snprintf(r->where, sizeof r->where, "subgraph %u", index);
    st = read_io(r, &mk->inputs, g, TG_TENSOR_INPUT, "input", &g->inputs, &g->input_count);
  }
  if (st == TG_OK) st = read_io(r, &mk->outputs, g, TG_TENSOR_OUTPUT, "output", &g->outputs, &g->output_count);
  for (uint32_t i = 0; st == TG_OK && i < mk->operators.count; ++i) st = read_op(r, mk, i, g);
  if (st != TG_OK) {
    tg__free(b->a, dyn);
    tg_graph_destroy(g);
    return st;
  }
  *out = g;
  *dyn_out = dyn;
  return TG_OK;
}

/* The subgraph indices in op `i`'s options (IfOptions, WhileOptions: fields 0 and 1;
 * CallOnceOptions: field 0), each checked against the file's subgraphs. */
static tg_status cf_op_subgraphs(cf_builder *b, const tflite_model *mk, uint32_t i, const char *opname,
                                 unsigned count, uint32_t *out) {
  fb_reader *r = b->r;
  fb_table t, opts;
  size_t pos, target;
  tg_status st;
  snprintf(r->where, sizeof r->where, "op %u (%s)", i, opname);
  if ((st = fb_vector_table(r, &mk->operators, i, "operator", &t)) != TG_OK ||
      (st = fb_field(r, &t, 4, 4, "builtin_options", &pos)) != TG_OK)
    return st;
  if (pos == 0) return fb_fail(r, "has no options, so no subgraph to run");
  if ((st = fb_deref(r, pos, "builtin_options", &target)) != TG_OK ||
      (st = fb_table_at(r, target, "builtin_options", &opts)) != TG_OK)
    return st;
  static const char *const k_names[3][2] = {{"then_subgraph_index", "else_subgraph_index"},
                                            {"cond_subgraph_index", "body_subgraph_index"},
                                            {"init_subgraph_index", ""}};
  int kind = strcmp(opname, "IF") == 0 ? 0 : strcmp(opname, "WHILE") == 0 ? 1 : 2;
  for (unsigned k = 0; k < count; ++k) {
    int32_t v;
    if ((st = fb_i32(r, &opts, k, k_names[kind][k], 0, &v)) != TG_OK) return st;
    if (v < 0 || (uint32_t)v >= mk->subgraphs.count)
      return fb_fail(r, "%s %d is out of range (the model has %u subgraphs)", k_names[kind][k], (int)v,
                     mk->subgraphs.count);
    for (unsigned d = 0; d <= b->depth; ++d)
      if (b->stack[d] == (uint32_t)v)
        return fb_fail(r, "%s %d: subgraph %d is already running (subgraph %u calls it, a cycle of subgraph calls)",
                       k_names[kind][k], (int)v, (int)v, b->stack[b->depth]);
    out[k] = (uint32_t)v;
  }
  return TG_OK;
}

static tg_status cf_add_tensor(cf_builder *b, const tg_tensor *t, uint32_t scope, int keep_io, int32_t *index) {
  tg_status st = cf_grow(b, (void **)&b->tensors, &b->ct, b->nt + 1, sizeof *b->tensors);
  if (st != TG_OK) return st;
  tg_tensor *n = &b->tensors[b->nt];
  *n = *t;
  n->name = tg__strdup(b->a, t->name ? t->name : "");
  if (n->name == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  if (!keep_io) n->flags &= ~(uint32_t)(TG_TENSOR_INPUT | TG_TENSOR_OUTPUT);
  n->subgraph = scope;
  *index = (int32_t)b->nt++;
  return TG_OK;
}

/* Append an op (copying name and lists). */
static tg_status cf_add_op(cf_builder *b, const char *name, const int32_t *ins, uint32_t nin, const int32_t *outs,
                           uint32_t nout, uint32_t scope, size_t *index) {
  tg_status st = cf_grow(b, (void **)&b->ops, &b->co, b->no + 1, sizeof *b->ops);
  if (st != TG_OK) return st;
  tg_op *op = &b->ops[b->no];
  op->name = tg__strdup(b->a, name);
  op->inputs = tg__calloc(b->a, nin ? nin : 1, sizeof *op->inputs);
  op->outputs = tg__calloc(b->a, nout ? nout : 1, sizeof *op->outputs);
  if (op->name == NULL || op->inputs == NULL || op->outputs == NULL) {
    tg__free(b->a, op->name);
    tg__free(b->a, op->inputs);
    tg__free(b->a, op->outputs);
    memset(op, 0, sizeof *op);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (nin) memcpy(op->inputs, ins, nin * sizeof *ins);
  if (nout) memcpy(op->outputs, outs, nout * sizeof *outs);
  op->input_count = nin;
  op->output_count = nout;
  op->subgraph = scope;
  if (index) *index = b->no;
  ++b->no;
  return TG_OK;
}

static tg_status cf_add_scope(cf_builder *b, uint32_t parent, tg_subgraph_kind kind, uint32_t branch,
                              uint32_t file_index, const tflite_model *mk, uint32_t *out) {
  tg_status st = cf_grow(b, (void **)&b->subs, &b->cs, b->ns + 1, sizeof *b->subs);
  if (st != TG_OK) return st;
  tg_subgraph *s = &b->subs[b->ns];
  const char *name = NULL;
  size_t len = 0;
  fb_table sg;
  if (fb_vector_table(b->r, &mk->subgraphs, file_index, "subgraph", &sg) == TG_OK)
    (void)fb_string_field(b->r, &sg, 4, "name", &name, &len);
  char buf[200];
  snprintf(buf, sizeof buf, "%s%ssubgraph %u%s%.*s%s", parent ? b->subs[parent].name : "", parent ? "/" : "",
           file_index, len ? " '" : "", (int)(len > 100 ? 100 : len), name ? name : "", len ? "'" : "");
  s->name = tg__strdup(b->a, buf);
  if (s->name == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  s->kind = kind;
  s->parent = parent;
  s->branch = branch;
  s->first_op = (uint32_t)b->no;
  *out = (uint32_t)b->ns++;
  return TG_OK;
}

static tg_status cf_emit(cf_builder *b, const tflite_model *mk, const tg_graph *gk, uint32_t scope,
                         const int32_t *alias, int32_t **map_out);

/* Lay out subgraph `file_index` as scope `scope`, run with the built graph's tensors `args`
 * as its inputs (NULL when it takes none); with `alias` they are its inputs, else it has its
 * own. `*map` (freed by the caller) maps its tensors to the built graph's. */
static tg_status cf_emit_file_subgraph(cf_builder *b, uint32_t file_index, uint32_t scope, const int32_t *args,
                                       int alias, size_t want_inputs, size_t want_outputs, const char *role,
                                       const char *caller, tg_graph **gk_out, int32_t **map) {
  fb_reader *r = b->r;
  tflite_model mk;
  tg_graph *gk = NULL;
  dyn_dims *dyn = NULL;
  *map = NULL;
  *gk_out = NULL;
  const char *saved = r->source;
  const char *file = b->source[0][0] ? b->source[0] : r->source;
  if (b->source[0][0] == '\0') snprintf(b->source[0], sizeof b->source[0], "%s", r->source);
  snprintf(b->source[b->depth + 1], sizeof b->source[0], "%.150s (subgraph %u)", file, file_index);
  r->source = b->source[b->depth + 1];
  tg_status st = cf_read_subgraph(b, file_index, &mk, &gk, &dyn);
  if (st == TG_OK && (gk->input_count != want_inputs || (want_outputs != (size_t)-1 && gk->output_count != want_outputs))) {
    r->where[0] = '\0';
    st = fb_fail(r, "%s: its %s, subgraph %u, has %zu inputs and %zu outputs; %zu and %zu expected", caller, role,
                 file_index, gk->input_count, gk->output_count, want_inputs,
                 want_outputs == (size_t)-1 ? gk->output_count : want_outputs);
  }
  if (st == TG_OK) {
    r->where[0] = '\0';
    st = resolve_subgraph(r, gk, dyn, b->tensors, args, caller);
  }
  tg__free(b->a, dyn);
  if (st == TG_OK) {
    b->stack[++b->depth] = file_index;
    st = cf_emit(b, &mk, gk, scope, alias ? args : NULL, map);
    --b->depth;
  }
  r->source = saved;
  if (st != TG_OK) {
    tg_graph_destroy(gk);
    return st;
  }
  *gk_out = gk;
  return TG_OK;
}

static tg_status cf_flow(cf_builder *b, const tflite_model *mk, const tg_graph *gk, uint32_t i, uint32_t scope,
                         const int32_t *map) {
  fb_reader *r = b->r;
  const tg_op *op = &gk->ops[i];
  char caller[64];
  snprintf(caller, sizeof caller, "op %u (%s)", i, op->name);
  if (b->depth >= TFLITE_MAX_NESTING) {
    r->where[0] = '\0';
    return fb_fail(r, "%s: subgraphs nest more than %d deep", caller, TFLITE_MAX_NESTING);
  }
  int kind = strcmp(op->name, "IF") == 0 ? 0 : strcmp(op->name, "WHILE") == 0 ? 1 : 2;
  uint32_t idx[2] = {0, 0};
  tg_status st = cf_op_subgraphs(b, mk, i, op->name, kind == 2 ? 1 : 2, idx);
  if (st != TG_OK) return st;
  r->where[0] = '\0';
  int32_t *ins = tg__calloc(b->a, op->input_count + 1, sizeof *ins);
  int32_t *outs = tg__calloc(b->a, op->output_count + 1, sizeof *outs);
  int32_t *maps[2] = {NULL, NULL};
  tg_graph *gs[2] = {NULL, NULL};
  int32_t *list = NULL;
  uint32_t scopes[2] = {0, 0};
  if (ins == NULL || outs == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  for (uint32_t k = 0; k < op->input_count; ++k) ins[k] = op->inputs[k] < 0 ? -1 : map[op->inputs[k]];
  for (uint32_t k = 0; k < op->output_count; ++k) outs[k] = map[op->outputs[k]];
  if (kind == 0) {
    /* IF: inputs (cond, args...); each branch takes the args, gives the outputs. */
    if (op->input_count < 1) {
      st = fb_fail(r, "%s: has no condition input", caller);
      goto done;
    }
    for (unsigned j = 0; j < 2 && st == TG_OK; ++j) {
      if ((st = cf_add_scope(b, scope, TG_SUBGRAPH_BRANCH, j, idx[j], mk, &scopes[j])) != TG_OK) break;
      st = cf_emit_file_subgraph(b, idx[j], scopes[j], ins + 1, 1, op->input_count - 1, op->output_count,
                                 j ? "else branch" : "then branch", caller, &gs[j], &maps[j]);
      b->subs[scopes[j]].end_op = (uint32_t)b->no;
    }
    if (st != TG_OK) goto done;
    size_t n = op->input_count + 2 * (size_t)op->output_count;
    if ((list = tg__calloc(b->a, n ? n : 1, sizeof *list)) == NULL) {
      st = TG_ERROR_OUT_OF_HOST_MEMORY;
      goto done;
    }
    size_t c = 0;
    for (uint32_t k = 0; k < op->input_count; ++k) list[c++] = ins[k];
    for (unsigned j = 0; j < 2; ++j)
      for (size_t k = 0; k < gs[j]->output_count; ++k) list[c++] = maps[j][gs[j]->outputs[k]];
    size_t at;
    if ((st = cf_add_op(b, "IF", list, (uint32_t)c, outs, op->output_count, scope, &at)) != TG_OK) goto done;
    b->ops[at].flags = TG_OP_CONTROL_FLOW;
    b->subs[scopes[0]].control_op = b->subs[scopes[1]].control_op = (uint32_t)at;
  } else if (kind == 1) {
    /* WHILE: N loop values in and out; cond takes N and gives 1, body takes N and gives N. */
    if (op->input_count != op->output_count) {
      st = fb_fail(r, "%s: has %u inputs and %u outputs; a WHILE carries as many values out as in", caller,
                   op->input_count, op->output_count);
      goto done;
    }
    size_t begin;
    if ((st = cf_add_op(b, "WHILE", ins, op->input_count, NULL, 0, scope, &begin)) != TG_OK) goto done;
    b->ops[begin].flags = TG_OP_CONTROL_FLOW;
    static const char *const roles[2] = {"cond", "body"};
    for (unsigned j = 0; j < 2 && st == TG_OK; ++j) {
      if ((st = cf_add_scope(b, scope, TG_SUBGRAPH_BODY, 0, idx[j], mk, &scopes[j])) != TG_OK) break;
      st = cf_emit_file_subgraph(b, idx[j], scopes[j], ins, 0, op->input_count, j ? op->output_count : 1, roles[j],
                                 caller, &gs[j], &maps[j]);
      b->subs[scopes[j]].end_op = (uint32_t)b->no;
    }
    if (st != TG_OK) goto done;
    for (size_t k = 0; k < gs[1]->output_count; ++k) {
      const tg_tensor *in = &b->tensors[maps[1][gs[1]->inputs[k]]], *o = &b->tensors[maps[1][gs[1]->outputs[k]]];
      if (!tg__tensor_same_shape(in, o)) {
        char a[120], c2[120];
        tg__shape_text(in->shape, in->rank, a, sizeof a);
        tg__shape_text(o->shape, o->rank, c2, sizeof c2);
        st = fb_fail(r, "%s: loop value %zu is %s on entry to the body and %s after it: values that change shape "
                     "across iterations are not supported", caller, k, a, c2);
        goto done;
      }
    }
    /* The start op writes both subgraphs' inputs. */
    size_t n = 2 * (size_t)op->input_count;
    tg_op *bop = &b->ops[begin];
    tg__free(b->a, bop->outputs);
    if ((bop->outputs = tg__calloc(b->a, n ? n : 1, sizeof *bop->outputs)) == NULL) {
      st = TG_ERROR_OUT_OF_HOST_MEMORY;
      goto done;
    }
    for (unsigned j = 0; j < 2; ++j)
      for (size_t k = 0; k < gs[j]->input_count; ++k) bop->outputs[bop->output_count++] = maps[j][gs[j]->inputs[k]];
    n = 2 * (size_t)op->input_count + 1 + op->output_count;
    if ((list = tg__calloc(b->a, n, sizeof *list)) == NULL) {
      st = TG_ERROR_OUT_OF_HOST_MEMORY;
      goto done;
    }
    size_t c = 0;
    for (unsigned j = 0; j < 2; ++j) {
      for (size_t k = 0; k < gs[j]->input_count; ++k) list[c++] = maps[j][gs[j]->inputs[k]];
      for (size_t k = 0; k < gs[j]->output_count; ++k) list[c++] = maps[j][gs[j]->outputs[k]];
    }
    size_t at;
    if ((st = cf_add_op(b, "WHILE.end", list, (uint32_t)c, outs, op->output_count, scope, &at)) != TG_OK) goto done;
    b->ops[at].flags = TG_OP_CONTROL_FLOW;
    b->subs[scopes[0]].control_op = b->subs[scopes[1]].control_op = (uint32_t)at;
  } else {
    /* CALL_ONCE: the init subgraph (no inputs, no outputs: it sets variables) runs once. */
    if ((st = cf_add_scope(b, scope, TG_SUBGRAPH_CALL, 0, idx[0], mk, &scopes[0])) != TG_OK) goto done;
    st = cf_emit_file_subgraph(b, idx[0], scopes[0], NULL, 0, 0, (size_t)-1, "init subgraph", caller, &gs[0], &maps[0]);
    b->subs[scopes[0]].end_op = (uint32_t)b->no;
    if (st != TG_OK) goto done;
    size_t at;
    if ((st = cf_add_op(b, "CALL_ONCE", ins, op->input_count, outs, op->output_count, scope, &at)) != TG_OK) goto done;
    b->ops[at].flags = TG_OP_CONTROL_FLOW;
    b->subs[scopes[0]].control_op = (uint32_t)at;
  }
done:
  for (unsigned j = 0; j < 2; ++j) {
    tg__free(b->a, maps[j]);
    tg_graph_destroy(gs[j]);
  }
  tg__free(b->a, ins);
  tg__free(b->a, outs);
  tg__free(b->a, list);
  return st;
}

static tg_status cf_emit(cf_builder *b, const tflite_model *mk, const tg_graph *gk, uint32_t scope,
                         const int32_t *alias, int32_t **map_out) {
  tg_status st = TG_OK;
  int32_t *map = tg__calloc(b->a, gk->tensor_count ? gk->tensor_count : 1, sizeof *map);
  *map_out = map;
  if (map == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t t = 0; t < gk->tensor_count; ++t) map[t] = -1;
  if (alias)
    for (size_t k = 0; k < gk->input_count; ++k) map[gk->inputs[k]] = alias[k];
  for (size_t t = 0; st == TG_OK && t < gk->tensor_count; ++t)
    if (map[t] < 0) st = cf_add_tensor(b, &gk->tensors[t], scope, scope == 0, &map[t]);
  for (size_t i = 0; st == TG_OK && i < gk->op_count; ++i) {
    const tg_op *op = &gk->ops[i];
    if (is_flow_op(op->name)) {
      st = cf_flow(b, mk, gk, (uint32_t)i, scope, map);
      continue;
    }
    int32_t *ins = tg__calloc(b->a, op->input_count + 1, sizeof *ins);
    int32_t *outs = tg__calloc(b->a, op->output_count + 1, sizeof *outs);
    if (ins == NULL || outs == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
    for (uint32_t k = 0; st == TG_OK && k < op->input_count; ++k) ins[k] = op->inputs[k] < 0 ? -1 : map[op->inputs[k]];
    for (uint32_t k = 0; st == TG_OK && k < op->output_count; ++k) outs[k] = map[op->outputs[k]];
    if (st == TG_OK) st = cf_add_op(b, op->name, ins, op->input_count, outs, op->output_count, scope, NULL);
    tg__free(b->a, ins);
    tg__free(b->a, outs);
  }
  return st;
}

static void cf_free(cf_builder *b) {
  for (size_t t = 0; t < b->nt; ++t) tg__free(b->a, b->tensors[t].name);
  for (size_t o = 0; o < b->no; ++o) {
    tg__free(b->a, b->ops[o].name);
    tg__free(b->a, b->ops[o].inputs);
    tg__free(b->a, b->ops[o].outputs);
  }
  for (size_t s = 0; s < b->ns; ++s) tg__free(b->a, b->subs[s].name);
  tg__free(b->a, b->tensors);
  tg__free(b->a, b->ops);
  tg__free(b->a, b->subs);
}

/* When subgraph 0 (read into `*g`) runs other subgraphs, replace `*g` by the graph with every
 * subgraph it runs laid out. */
static tg_status inline_subgraphs(fb_reader *r, const tflite_model *m, tg_graph **g) {
  tg_graph *g0 = *g;
  int any = 0;
  for (size_t i = 0; i < g0->op_count && !any; ++i) any = is_flow_op(g0->ops[i].name);
  if (!any) return TG_OK;
  cf_builder b = {.r = r, .m = m, .a = &g0->alloc};
  b.stack[0] = 0;
  uint32_t main_scope;
  tg_status st = cf_grow(&b, (void **)&b.subs, &b.cs, 1, sizeof *b.subs);
  if (st == TG_OK) {
    b.subs[0].name = tg__strdup(b.a, "main");
    b.ns = 1;
    main_scope = 0;
    st = b.subs[0].name ? TG_OK : TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  int32_t *map = NULL;
  if (st == TG_OK) st = cf_emit(&b, m, g0, main_scope, NULL, &map);
  tg_graph *ng = NULL;
  if (st == TG_OK) st = tg_graph_create(0, 0, b.a, &ng);
  if (st == TG_OK) {
    b.subs[0].end_op = (uint32_t)b.no;
    tg__free(b.a, ng->tensors);
    tg__free(b.a, ng->ops);
    ng->tensors = b.tensors;
    ng->tensor_count = b.nt;
    ng->ops = b.ops;
    ng->op_count = b.no;
    ng->subgraphs = b.subs;
    ng->flow_count = b.ns;
    ng->subgraph_count = g0->subgraph_count;
    ng->dim_order = g0->dim_order;
    ng->source = g0->source;
    g0->source = NULL;
    ng->inputs = g0->inputs;
    ng->input_count = g0->input_count;
    ng->outputs = g0->outputs;
    ng->output_count = g0->output_count;
    g0->inputs = g0->outputs = NULL;
    g0->input_count = g0->output_count = 0;
    for (size_t k = 0; k < ng->input_count; ++k) ng->inputs[k] = (uint32_t)map[ng->inputs[k]];
    for (size_t k = 0; k < ng->output_count; ++k) ng->outputs[k] = (uint32_t)map[ng->outputs[k]];
    memset(&b, 0, sizeof b);
    tg_graph_destroy(g0);
    *g = ng;
  } else {
    tg_graph_destroy(ng);
    cf_free(&b);
  }
  tg__free(&(*g)->alloc, map);
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* Shapes at another input size. The file's shapes hold for the size it was converted with; when
 * a dynamic input is given another size, every tensor of subgraph 0 that ops write is inferred
 * again, op by op, from the builtin operator definitions (NHWC, as the GPU delegate reads them).
 * Small integer tensors (shape vectors: constants and what SHAPE, STRIDED_SLICE, GATHER, PACK,
 * CONCATENATION, CAST, RESHAPE and integer arithmetic compute from them) are tracked, so shape
 * subgraphs fold: their outputs become constants, as on GPU engines. */

#define TFL_MAX_VALUES 64

typedef struct tfl_value {
  int has;                      /* values known */
  uint32_t count;
  int64_t v[TFL_MAX_VALUES];
} tfl_value;

typedef struct tfl_infer {
  fb_reader *r;
  const tflite_model *m;
  tg_graph *g;
  tfl_value *val;               /* per tensor */
  uint32_t op;                  /* the op being inferred */
  fb_table opts;                /* its builtin options */
  int has_opts;
} tfl_infer;

static tg_status tfl_fail(tfl_infer *x, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static tg_status tfl_fail(tfl_infer *x, const char *fmt, ...) {
  char msg[300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const tg_op *op = &x->g->ops[x->op];
  return tg__error(x->r->err, TG_ERROR_UNSUPPORTED, "%s: op %u (%s): %s", x->r->source, x->op,
                   op->name ? op->name : "?", msg);
}

/* The values of a constant integer tensor (int32, int64; at most TFL_MAX_VALUES). */
static tg_status tfl_read_constant(tfl_infer *x, uint32_t i) {
  fb_reader *r = x->r;
  fb_table t, b;
  fb_vector data;
  uint32_t buffer;
  uint8_t type;
  tg_status st;
  tfl_value *v = &x->val[i];
  const tg_tensor *tensor = &x->g->tensors[i];
  if (!(tensor->flags & TG_TENSOR_CONSTANT)) return TG_OK;
  if ((st = fb_vector_table(r, &x->m->tensors, i, "tensor", &t)) != TG_OK ||
      (st = fb_u32(r, &t, 2, "buffer", 0, &buffer)) != TG_OK || (st = fb_u8(r, &t, 1, "type", 0, &type)) != TG_OK)
    return st;
  if (buffer == 0 || buffer >= x->m->buffers.count || (type != 2 && type != 4)) return TG_OK;
  if ((st = fb_vector_table(r, &x->m->buffers, buffer, "buffer", &b)) != TG_OK ||
      (st = fb_vector_field(r, &b, 0, 1, "buffer data", &data)) != TG_OK)
    return st;
  size_t width = type == 2 ? 4 : 8;
  uint64_t elements = 1;
  for (uint32_t d = 0; d < tensor->rank; ++d) elements *= (uint64_t)tensor->shape[d];
  if (elements > TFL_MAX_VALUES || data.count < elements * width) return TG_OK;
  for (uint64_t k = 0; k < elements; ++k)
    v->v[k] = width == 4 ? (int64_t)rdi32(r->data + data.pos + 4 * k) : (int64_t)rd64(r->data + data.pos + 8 * k);
  v->count = (uint32_t)elements;
  v->has = 1;
  return TG_OK;
}

static tg_tensor *tfl_in(tfl_infer *x, uint32_t k) {
  const tg_op *op = &x->g->ops[x->op];
  return k < op->input_count && op->inputs[k] >= 0 ? &x->g->tensors[op->inputs[k]] : NULL;
}
static tfl_value *tfl_inv(tfl_infer *x, uint32_t k) {
  const tg_op *op = &x->g->ops[x->op];
  return k < op->input_count && op->inputs[k] >= 0 ? &x->val[op->inputs[k]] : NULL;
}

static tg_status tfl_need(tfl_infer *x, uint32_t k, tg_tensor **t) {
  *t = tfl_in(x, k);
  if (*t == NULL) return tfl_fail(x, "input %u is required", k);
  return TG_OK;
}

/* Values of input k (a shape vector, axes...): required. */
static tg_status tfl_need_values(tfl_infer *x, uint32_t k, const char *what, tfl_value **v) {
  *v = tfl_inv(x, k);
  if (*v == NULL || !(*v)->has)
    return tfl_fail(x, "needs the values of input %u (%s) to know its output shape, and they are computed at run time",
                    k, what);
  return TG_OK;
}

static int32_t tfl_opt_i32(tfl_infer *x, unsigned field, int32_t def) {
  int32_t v = def;
  if (x->has_opts && fb_i32(x->r, &x->opts, field, "option", def, &v) != TG_OK) v = def;
  return v;
}

static tg_status tfl_set(tfl_infer *x, uint32_t k, uint32_t rank, const int64_t *dims) {
  const tg_op *op = &x->g->ops[x->op];
  if (k >= op->output_count) return TG_OK;
  if (rank > TG_MAX_RANK) return tfl_fail(x, "output %u would have rank %u, more than %d", k, rank, TG_MAX_RANK);
  uint64_t count = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    if (dims[d] < 0) return tfl_fail(x, "output %u: dimension %u would be %lld", k, d, (long long)dims[d]);
    if (!tg__mul_u64(count, (uint64_t)dims[d], &count) || count > (uint64_t)INT64_MAX)
      return tfl_fail(x, "output %u would have more elements than fit in 63 bits", k);
  }
  tg_tensor *t = &x->g->tensors[op->outputs[k]];
  t->rank = rank;
  memset(t->shape, 0, sizeof t->shape);
  for (uint32_t d = 0; d < rank; ++d) t->shape[d] = dims[d];
  return TG_OK;
}

static tg_status tfl_set_like(tfl_infer *x, uint32_t k, const tg_tensor *t) { return tfl_set(x, k, t->rank, t->shape); }

static int64_t tfl_axis(int64_t a, uint32_t rank) { return a < 0 ? a + (int64_t)rank : a; }

/* Numpy broadcasting of inputs [0, n). */
static tg_status tfl_broadcast(tfl_infer *x, uint32_t n) {
  int64_t out[TG_MAX_RANK];
  uint32_t rank = 0;
  for (uint32_t k = 0; k < n; ++k) {
    const tg_tensor *t = tfl_in(x, k);
    if (t && t->rank > rank) rank = t->rank;
  }
  for (uint32_t d = 0; d < rank; ++d) out[d] = 1;
  for (uint32_t k = 0; k < n; ++k) {
    const tg_tensor *t = tfl_in(x, k);
    if (t == NULL) continue;
    for (uint32_t d = 0; d < t->rank; ++d) {
      int64_t *o = &out[rank - t->rank + d], v = t->shape[d];
      if (v == *o || v == 1) continue;
      if (*o != 1) return tfl_fail(x, "inputs do not broadcast (dimension %u: %lld and %lld)", d, (long long)*o, (long long)v);
      *o = v;
    }
  }
  return tfl_set(x, 0, rank, out);
}

/* Sliding windows: padding (0 SAME, 1 VALID), stride, dilation. */
static tg_status tfl_window(tfl_infer *x, int64_t in, int64_t k, int32_t stride, int32_t dilation, int padding, int64_t *out) {
  if (stride < 1 || dilation < 1) return tfl_fail(x, "stride %d or dilation %d is below 1", (int)stride, (int)dilation);
  int64_t eff = (k - 1) * dilation + 1;
  if (padding == 0) *out = (in + stride - 1) / stride;
  else if (in < eff) return tfl_fail(x, "a window of %lld does not fit an input of %lld (VALID padding)", (long long)eff, (long long)in);
  else *out = (in - eff) / stride + 1;
  return TG_OK;
}

/* Fold an integer op when its inputs' values are known. */
static int64_t tfl_arith(const char *name, int64_t a, int64_t b, int *ok) {
  *ok = 1;
  if (strcmp(name, "ADD") == 0) return a + b;
  if (strcmp(name, "SUB") == 0) return a - b;
  if (strcmp(name, "MUL") == 0) return a * b;
  if (strcmp(name, "MAXIMUM") == 0) return a > b ? a : b;
  if (strcmp(name, "MINIMUM") == 0) return a < b ? a : b;
  if ((strcmp(name, "FLOOR_DIV") == 0 || strcmp(name, "DIV") == 0) && b != 0) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  }
  *ok = 0;
  return 0;
}

static int tfl_name_in(const char *name, const char *const *list) {
  for (; *list; ++list)
    if (strcmp(name, *list) == 0) return 1;
  return 0;
}

static tg_status tfl_infer_op(tfl_infer *x) {
  tg_graph *g = x->g;
  const tg_op *op = &g->ops[x->op];
  const char *name = op->name ? op->name : "";
  tg_status st;
  tg_tensor *a = NULL;
  static const char *const same[] = {
      "RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "LOGISTIC", "TANH", "ELU", "HARD_SWISH", "LEAKY_RELU",
      "PRELU", "GELU", "EXP", "LOG", "SQRT", "RSQRT", "SQUARE", "NEG", "ABS", "SIN", "COS", "CEIL", "FLOOR",
      "ROUND", "SIGN", "SOFTMAX", "LOG_SOFTMAX", "L2_NORMALIZATION", "LOCAL_RESPONSE_NORMALIZATION",
      "DEQUANTIZE", "QUANTIZE", "CAST", "LOGICAL_NOT", "ZEROS_LIKE", "CUMSUM", "REVERSE_V2", "ADD_N", NULL};
  static const char *const binary[] = {
      "ADD", "SUB", "MUL", "DIV", "POW", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "FLOOR_DIV", "FLOOR_MOD",
      "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL", "EQUAL", "NOT_EQUAL", "LOGICAL_AND", "LOGICAL_OR",
      "ATAN2", "SELECT", "SELECT_V2", NULL};
  static const char *const reducers[] = {"MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_ANY",
                                         "REDUCE_ALL", NULL};
  tfl_value *out_val = op->output_count > 0 ? &x->val[op->outputs[0]] : NULL;
  if (tfl_name_in(name, same)) {
    if ((st = tfl_need(x, 0, &a)) != TG_OK) return st;
    if (strcmp(name, "CAST") == 0 && tfl_inv(x, 0)->has && out_val) *out_val = *tfl_inv(x, 0);
    return tfl_set_like(x, 0, a);
  }
  if (tfl_name_in(name, binary)) {
    uint32_t n = strncmp(name, "SELECT", 6) == 0 ? 3 : 2;
    if ((st = tfl_broadcast(x, n)) != TG_OK) return st;
    tfl_value *va = tfl_inv(x, 0), *vb = tfl_inv(x, 1);
    const tg_tensor *o = &g->tensors[op->outputs[0]];
    uint64_t count = 1;
    for (uint32_t d = 0; d < o->rank; ++d) count *= (uint64_t)o->shape[d];
    if (n == 2 && va && vb && va->has && vb->has && out_val && count <= TFL_MAX_VALUES && count > 0 &&
        (va->count == count || va->count == 1) && (vb->count == count || vb->count == 1)) {
      int ok = 1;
      for (uint64_t k = 0; k < count && ok; ++k)
        out_val->v[k] = tfl_arith(name, va->v[va->count == 1 ? 0 : k], vb->v[vb->count == 1 ? 0 : k], &ok);
      out_val->has = ok;
      out_val->count = (uint32_t)count;
    }
    return TG_OK;
  }
  if (strcmp(name, "CONV_2D") == 0 || strcmp(name, "DEPTHWISE_CONV_2D") == 0) {
    tg_tensor *w;
    if ((st = tfl_need(x, 0, &a)) != TG_OK || (st = tfl_need(x, 1, &w)) != TG_OK) return st;
    if (a->rank != 4 || w->rank != 4) return tfl_fail(x, "input and filter must have rank 4 (%u, %u)", a->rank, w->rank);
    int dw = name[0] == 'D';
    int padding = tfl_opt_i32(x, 0, 0) & 0xFF;
    int32_t sw = tfl_opt_i32(x, 1, 1), sh = tfl_opt_i32(x, 2, 1);
    int32_t dlw = tfl_opt_i32(x, dw ? 5 : 4, 1), dlh = tfl_opt_i32(x, dw ? 6 : 5, 1);
    if (x->has_opts) {
      uint8_t p = 0;
      if (fb_u8(x->r, &x->opts, 0, "padding", 0, &p) == TG_OK) padding = p;
    }
    int64_t d[4] = {a->shape[0], 0, 0, dw ? w->shape[3] : w->shape[0]};
    if ((st = tfl_window(x, a->shape[1], w->shape[1], sh, dlh, padding, &d[1])) != TG_OK ||
        (st = tfl_window(x, a->shape[2], w->shape[2], sw, dlw, padding, &d[2])) != TG_OK)
      return st;
    return tfl_set(x, 0, 4, d);
  }
  if (strcmp(name, "MAX_POOL_2D") == 0 || strcmp(name, "AVERAGE_POOL_2D") == 0 || strcmp(name, "L2_POOL_2D") == 0) {
    if ((st = tfl_need(x, 0, &a)) != TG_OK) return st;
    if (a->rank != 4) return tfl_fail(x, "input must have rank 4 (%u)", a->rank);
    uint8_t padding = 0;
    if (x->has_opts && (st = fb_u8(x->r, &x->opts, 0, "padding", 0, &padding)) != TG_OK) return st;
    int64_t d[4] = {a->shape[0], 0, 0, a->shape[3]};
    if ((st = tfl_window(x, a->shape[1], tfl_opt_i32(x, 4, 1), tfl_opt_i32(x, 2, 1), 1, padding, &d[1])) != TG_OK ||
        (st = tfl_window(x, a->shape[2], tfl_opt_i32(x, 3, 1), tfl_opt_i32(x, 1, 1), 1, padding, &d[2])) != TG_OK)
      return st;
    return tfl_set(x, 0, 4, d);
  }
  if (strcmp(name, "FULLY_CONNECTED") == 0) {
    tg_tensor *w;
    if ((st = tfl_need(x, 0, &a)) != TG_OK || (st = tfl_need(x, 1, &w)) != TG_OK) return st;
    if (w->rank != 2) return tfl_fail(x, "weights must have rank 2 (%u)", w->rank);
    uint8_t keep = 0;
    if (x->has_opts && (st = fb_u8(x->r, &x->opts, 2, "keep_num_dims", 0, &keep)) != TG_OK) return st;
    uint64_t count = 1;
    for (uint32_t d = 0; d < a->rank; ++d) count *= (uint64_t)a->shape[d];
    if (w->shape[1] == 0 || count % (uint64_t)w->shape[1] != 0)
      return tfl_fail(x, "input of %llu elements is not a multiple of the weights' %lld inputs", (unsigned long long)count,
                      (long long)w->shape[1]);
    if (keep) {
      int64_t d[TG_MAX_RANK];
      for (uint32_t k = 0; k < a->rank; ++k) d[k] = a->shape[k];
      if (a->rank > 0) d[a->rank - 1] = w->shape[0];
      return tfl_set(x, 0, a->rank, d);
    }
    int64_t d[2] = {(int64_t)(count / (uint64_t)w->shape[1]), w->shape[0]};
    return tfl_set(x, 0, 2, d);
  }
  if (strcmp(name, "BATCH_MATMUL") == 0) {
    tg_tensor *b;
    if ((st = tfl_need(x, 0, &a)) != TG_OK || (st = tfl_need(x, 1, &b)) != TG_OK) return st;
    if (a->rank < 2 || b->rank < 2) return tfl_fail(x, "inputs must have rank 2 or more");
    uint8_t adj_x = 0, adj_y = 0;
    if (x->has_opts && ((st = fb_u8(x->r, &x->opts, 0, "adj_x", 0, &adj_x)) != TG_OK ||
                        (st = fb_u8(x->r, &x->opts, 1, "adj_y", 0, &adj_y)) != TG_OK))
      return st;
    uint32_t rank = a->rank > b->rank ? a->rank : b->rank;
    int64_t d[TG_MAX_RANK];
    for (uint32_t k = 0; k + 2 < rank; ++k) {
      int64_t da = k + a->rank >= rank ? a->shape[k + a->rank - rank] : 1;
      int64_t db = k + b->rank >= rank ? b->shape[k + b->rank - rank] : 1;
      if (da != db && da != 1 && db != 1) return tfl_fail(x, "batch dimensions do not broadcast");
      d[k] = da == 1 ? db : da;
    }
    int64_t m = adj_x ? a->shape[a->rank - 1] : a->shape[a->rank - 2];
    int64_t ka = adj_x ? a->shape[a->rank - 2] : a->shape[a->rank - 1];
    int64_t kb = adj_y ? b->shape[b->rank - 1] : b->shape[b->rank - 2];
    int64_t n = adj_y ? b->shape[b->rank - 2] : b->shape[b->rank - 1];
    if (ka != kb) return tfl_fail(x, "inner dimensions differ (%lld and %lld)", (long long)ka, (long long)kb);
    d[rank - 2] = m;
    d[rank - 1] = n;
    return tfl_set(x, 0, rank, d);
  }
  if (strcmp(name, "RESHAPE") == 0) {
    if ((st = tfl_need(x, 0, &a)) != TG_OK) return st;
    int64_t want[TG_MAX_RANK];
    uint32_t rank = 0;
    tfl_value *sv = tfl_inv(x, 1);
    if (sv && sv->has) {
      if (sv->count > TG_MAX_RANK) return tfl_fail(x, "new shape has %u dimensions", sv->count);
      rank = sv->count;
      for (uint32_t k = 0; k < rank; ++k) want[k] = sv->v[k];
    } else if (tfl_in(x, 1) != NULL) {
      return tfl_need_values(x, 1, "shape", &sv);
    } else {
      fb_vector ns = {0, 0, 0};
      if (x->has_opts && (st = fb_vector_field(x->r, &x->opts, 0, 4, "new_shape", &ns)) != TG_OK) return st;
      if (!ns.present) return tfl_fail(x, "has neither a shape input nor new_shape");
      if (ns.count > TG_MAX_RANK) return tfl_fail(x, "new shape has %u dimensions", ns.count);
      rank = ns.count;
      for (uint32_t k = 0; k < rank; ++k) want[k] = rdi32(x->r->data + ns.pos + 4 * (size_t)k);
    }
    uint64_t count = 1, known = 1;
    int minus = -1;
    for (uint32_t d = 0; d < a->rank; ++d) count *= (uint64_t)a->shape[d];
    for (uint32_t d = 0; d < rank; ++d) {
      if (want[d] == -1 && minus < 0) minus = (int)d;
      else if (want[d] < 0) return tfl_fail(x, "new shape dimension %u is %lld", d, (long long)want[d]);
      else known *= (uint64_t)want[d];
    }
    if (minus >= 0) {
      if (known == 0 || count % known != 0) return tfl_fail(x, "cannot reshape %llu elements", (unsigned long long)count);
      want[minus] = (int64_t)(count / known);
    } else if (known != count) {
      return tfl_fail(x, "reshapes %llu elements into %llu", (unsigned long long)count, (unsigned long long)known);
    }
    if (tfl_inv(x, 0)->has && out_val) *out_val = *tfl_inv(x, 0);
    return tfl_set(x, 0, rank, want);
  }
  if (strcmp(name, "EXPAND_DIMS") == 0) {
    tfl_value *ax;
    if ((st = tfl_need(x, 0, &a)) != TG_OK || (st = tfl_need_values(x, 1, "axis", &ax)) != TG_OK) return st;
    int64_t axis = ax->v[0] < 0 ? ax->v[0] + a->rank + 1 : ax->v[0];
    if (axis < 0 || axis > (int64_t)a->rank || a->rank + 1 > TG_MAX_RANK) return tfl_fail(x, "axis %lld is out of range", (long long)ax->v[0]);
    int64_t d[TG_MAX_RANK];
    uint32_t n = 0;
    for (uint32_t k = 0; k <= a->rank; ++k) {
      if ((int64_t)k == axis) d[n++] = 1;
      if (k < a->rank) d[n++] = a->shape[k];
    }
    if (tfl_inv(x, 0)->has && out_val) *out_val = *tfl_inv(x, 0);
    return tfl_set(x, 0, n, d);
  }
  if (strcmp(name, "SQUEEZE") == 0) {
    if ((st = tfl_need(x, 0, &a)) != TG_OK) return st;
    fb_vector dims = {0, 0, 0};
    if (x->has_opts && (st = fb_vector_field(x->r, &x->opts, 0, 4, "squeeze_dims", &dims)) != TG_OK) return st;
    uint32_t drop = 0;
    for (uint32_t k = 0; k < dims.count && k < 32; ++k) {
      int64_t ax = tfl_axis(rdi32(x->r->data + dims.pos + 4 * (size_t)k), a->rank);
      if (ax < 0 || ax >= (int64_t)a->rank || a->shape[ax] != 1) return tfl_fail(x, "squeeze_dims entry %u is not a dimension of 1", k);
      drop |= 1u << ax;
    }
    int64_t d[TG_MAX_RANK];
    uint32_t n = 0;
    for (uint32_t k = 0; k < a->rank; ++k)
      if (dims.count ? !((drop >> k) & 1u) : a->shape[k] != 1) d[n++] = a->shape[k];
    return tfl_set(x, 0, n, d);
  }
  if (strcmp(name, "TRANSPOSE") == 0) {
    tfl_value *perm;
    if ((st = tfl_need(x, 0, &a)) != TG_OK || (st = tfl_need_values(x, 1, "perm", &perm)) != TG_OK) return st;
    if (perm->count != a->rank) return tfl_fail(x, "perm has %u entries for rank %u", perm->count, a->rank);
    int64_t d[TG_MAX_RANK];
    for (uint32_t k = 0; k < a->rank; ++k) {
      if (perm->v[k] < 0 || perm->v[k] >= (int64_t)a->rank) return tfl_fail(x, "perm entry %u is out of range", k);
      d[k] = a->shape[perm->v[k]];
    }
    return tfl_set(x, 0, a->rank, d);
  }
  if (strcmp(name, "CONCATENATION") == 0) {
    if ((st = tfl_need(x, 0, &a)) != TG_OK) return st;
    int64_t axis = tfl_axis(tfl_opt_i32(x, 0, 0), a->rank);
    if (axis < 0 || axis >= (int64_t)a->rank) return tfl_fail(x, "axis is out of range");
    int64_t d[TG_MAX_RANK];
    for (uint32_t k = 0; k < a->rank; ++k) d[k] = a->shape[k];
    d[axis] = 0;
    int fold = out_val != NULL && a->rank == 1;
    uint32_t nv = 0;
    for (uint32_t i = 0; i < op->input_count; ++i) {
      const tg_tensor *t = tfl_in(x, i);
      if (t == NULL || t->rank != a->rank) return tfl_fail(x, "input %u has another rank", i);
      for (uint32_t k = 0; k < a->rank; ++k)
        if ((int64_t)k != axis && t->shape[k] != a->shape[k]) return tfl_fail(x, "input %u differs off the axis", i);
      d[axis] += t->shape[axis];
      tfl_value *v = tfl_inv(x, i);
      if (fold && v->has && nv + v->count <= TFL_MAX_VALUES) {
        for (uint32_t k = 0; k < v->count; ++k) out_val->v[nv++] = v->v[k];
      } else {
        fold = 0;
      }
    }
    if (fold) {
      out_val->has = 1;
      out_val->count = nv;
    }
    return tfl_set(x, 0, a->rank, d);
  }
  if (strcmp(name, "PAD") == 0 || strcmp(name, "PADV2") == 0 || strcmp(name, "MIRROR_PAD") == 0) {
    tfl_value *p;
    if ((st = tfl_need(x, 0, &a)) != TG_OK || (st = tfl_need_values(x, 1, "paddings", &p)) != TG_OK) return st;
    if (p->count != 2 * a->rank) return tfl_fail(x, "paddings has %u entries for rank %u", p->count, a->rank);
    int64_t d[TG_MAX_RANK];
    for (uint32_t k = 0; k < a->rank; ++k) d[k] = a->shape[k] + p->v[2 * k] + p->v[2 * k + 1];
    return tfl_set(x, 0, a->rank, d);
  }
  if (tfl_name_in(name, reducers) || strcmp(name, "ARG_MAX") == 0 || strcmp(name, "ARG_MIN") == 0) {
    tfl_value *axes;
    if ((st = tfl_need(x, 0, &a)) != TG_OK || (st = tfl_need_values(x, 1, "axes", &axes)) != TG_OK) return st;
    int arg = strncmp(name, "ARG_", 4) == 0;
    uint8_t keep = 0;
    if (!arg && x->has_opts && (st = fb_u8(x->r, &x->opts, 0, "keep_dims", 0, &keep)) != TG_OK) return st;
    uint32_t mask = 0;
    for (uint32_t k = 0; k < axes->count; ++k) {
      int64_t ax = tfl_axis(axes->v[k], a->rank);
      if (ax < 0 || ax >= (int64_t)a->rank) return tfl_fail(x, "axis %lld is out of range", (long long)axes->v[k]);
      mask |= 1u << ax;
    }
    int64_t d[TG_MAX_RANK];
    uint32_t n = 0;
    for (uint32_t k = 0; k < a->rank; ++k) {
      if (!((mask >> k) & 1u)) d[n++] = a->shape[k];
      else if (keep) d[n++] = 1;
    }
    return tfl_set(x, 0, n, d);
  }
  if (strcmp(name, "SHAPE") == 0) {
    if ((st = tfl_need(x, 0, &a)) != TG_OK) return st;
    int64_t d[1] = {a->rank};
    if (out_val) {
      out_val->has = 1;
      out_val->count = a->rank;
      for (uint32_t k = 0; k < a->rank; ++k) out_val->v[k] = a->shape[k];
    }
    return tfl_set(x, 0, 1, d);
  }
  if (strcmp(name, "STRIDED_SLICE") == 0 || strcmp(name, "SLICE") == 0) {
    tfl_value *b, *e, *s = NULL;
    int strided = name[0] == 'S' && name[1] == 'T';
    if ((st = tfl_need(x, 0, &a)) != TG_OK || (st = tfl_need_values(x, 1, "begin", &b)) != TG_OK ||
        (st = tfl_need_values(x, 2, strided ? "end" : "size", &e)) != TG_OK)
      return st;
    if (strided && (st = tfl_need_values(x, 3, "strides", &s)) != TG_OK) return st;
    if (b->count != a->rank || e->count != a->rank || (s && s->count != a->rank))
      return tfl_fail(x, "begin/end/strides do not match rank %u", a->rank);
    int32_t bm = strided ? tfl_opt_i32(x, 0, 0) : 0, em = strided ? tfl_opt_i32(x, 1, 0) : 0;
    int32_t ell = strided ? tfl_opt_i32(x, 2, 0) : 0, na = strided ? tfl_opt_i32(x, 3, 0) : 0;
    int32_t shrink = strided ? tfl_opt_i32(x, 4, 0) : 0;
    if (ell || na) return tfl_fail(x, "ellipsis and new-axis masks are not supported");
    int64_t d[TG_MAX_RANK], starts[TG_MAX_RANK], steps[TG_MAX_RANK];
    uint32_t n = 0;
    for (uint32_t k = 0; k < a->rank; ++k) {
      int64_t dim = a->shape[k], step = s ? s->v[k] : 1, lo, hi, len;
      if (step == 0) return tfl_fail(x, "stride %u is 0", k);
      if (!strided) {
        lo = b->v[k];
        len = e->v[k] == -1 ? dim - lo : e->v[k];
        if (lo < 0 || len < 0 || lo + len > dim) return tfl_fail(x, "slice %u out of range", k);
        starts[k] = lo;
        steps[k] = 1;
        d[n++] = len;
        continue;
      }
      lo = (bm >> k) & 1 ? (step > 0 ? 0 : dim - 1) : b->v[k];
      hi = (em >> k) & 1 ? (step > 0 ? dim : -1) : e->v[k];
      if (!((bm >> k) & 1) && lo < 0) lo += dim;
      if (!((em >> k) & 1) && hi < 0) hi += dim;
      if ((shrink >> k) & 1) {
        hi = lo + 1;
        step = 1;
      }
      if (step > 0) {
        lo = lo < 0 ? 0 : lo > dim ? dim : lo;
        hi = hi < 0 ? 0 : hi > dim ? dim : hi;
        len = hi > lo ? (hi - lo + step - 1) / step : 0;
      } else {
        lo = lo < -1 ? -1 : lo > dim - 1 ? dim - 1 : lo;
        hi = hi < -1 ? -1 : hi > dim - 1 ? dim - 1 : hi;
        len = lo > hi ? (lo - hi - step - 1) / -step : 0;
      }
      starts[k] = lo;
      steps[k] = step;
      if (!((shrink >> k) & 1)) d[n++] = len;
    }
    /* Fold a slice of a known vector. */
    tfl_value *v = tfl_inv(x, 0);
    if (v->has && a->rank == 1 && out_val) {
      int64_t len = n ? d[0] : 1;
      if (len >= 0 && len <= TFL_MAX_VALUES) {
        out_val->has = 1;
        out_val->count = (uint32_t)len;
        for (int64_t k = 0; k < len; ++k) {
          int64_t at = starts[0] + k * steps[0];
          if (at < 0 || at >= (int64_t)v->count) out_val->has = 0;
          else out_val->v[k] = v->v[at];
        }
      }
    }
    return tfl_set(x, 0, n, d);
  }
  if (strcmp(name, "GATHER") == 0) {
    tg_tensor *idx;
    if ((st = tfl_need(x, 0, &a)) != TG_OK || (st = tfl_need(x, 1, &idx)) != TG_OK) return st;
    int64_t axis = tfl_axis(tfl_opt_i32(x, 0, 0), a->rank);
    if (axis < 0 || axis >= (int64_t)a->rank || a->rank - 1 + idx->rank > TG_MAX_RANK) return tfl_fail(x, "axis is out of range");
    int64_t d[TG_MAX_RANK];
    uint32_t n = 0;
    for (uint32_t k = 0; k < a->rank; ++k) {
      if ((int64_t)k != axis) d[n++] = a->shape[k];
      else
        for (uint32_t j = 0; j < idx->rank; ++j) d[n++] = idx->shape[j];
    }
    tfl_value *v = tfl_inv(x, 0), *iv = tfl_inv(x, 1);
    if (v->has && iv->has && a->rank == 1 && out_val) {
      out_val->has = 1;
      out_val->count = iv->count;
      for (uint32_t k = 0; k < iv->count; ++k) {
        int64_t at = iv->v[k] < 0 ? iv->v[k] + (int64_t)v->count : iv->v[k];
        if (at < 0 || at >= (int64_t)v->count) out_val->has = 0;
        else out_val->v[k] = v->v[at];
      }
    }
    return tfl_set(x, 0, n, d);
  }
  if (strcmp(name, "PACK") == 0) {
    if ((st = tfl_need(x, 0, &a)) != TG_OK) return st;
    int64_t axis = tfl_opt_i32(x, 1, 0);
    if (axis < 0) axis += a->rank + 1;
    if (axis < 0 || axis > (int64_t)a->rank || a->rank + 1 > TG_MAX_RANK) return tfl_fail(x, "axis is out of range");
    int64_t d[TG_MAX_RANK];
    uint32_t n = 0;
    for (uint32_t k = 0; k <= a->rank; ++k) {
      if ((int64_t)k == axis) d[n++] = op->input_count;
      if (k < a->rank) d[n++] = a->shape[k];
    }
    int fold = a->rank == 0 && out_val && op->input_count <= TFL_MAX_VALUES;
    for (uint32_t i = 0; fold && i < op->input_count; ++i) {
      tfl_value *v = tfl_inv(x, i);
      if (v == NULL || !v->has || v->count != 1) fold = 0;
      else out_val->v[i] = v->v[0];
    }
    if (fold) {
      out_val->has = 1;
      out_val->count = op->input_count;
    }
    return tfl_set(x, 0, n, d);
  }
  if (strcmp(name, "SPLIT") == 0 || strcmp(name, "UNPACK") == 0) {
    int unpack = name[0] == 'U';
    tfl_value *ax = NULL;
    if (unpack) {
      if ((st = tfl_need(x, 0, &a)) != TG_OK) return st;
    } else if ((st = tfl_need_values(x, 0, "axis", &ax)) != TG_OK || (st = tfl_need(x, 1, &a)) != TG_OK) {
      return st;
    }
    int64_t axis = tfl_axis(unpack ? tfl_opt_i32(x, 1, 0) : ax->v[0], a->rank);
    if (axis < 0 || axis >= (int64_t)a->rank) return tfl_fail(x, "axis is out of range");
    uint32_t parts = op->output_count;
    if (parts == 0 || a->shape[axis] % parts != 0) return tfl_fail(x, "dimension %lld does not split in %u", (long long)axis, parts);
    int64_t d[TG_MAX_RANK];
    uint32_t n = 0;
    for (uint32_t k = 0; k < a->rank; ++k) {
      if ((int64_t)k != axis) d[n++] = a->shape[k];
      else if (!unpack) d[n++] = a->shape[k] / parts;
    }
    for (uint32_t k = 0; k < parts; ++k)
      if ((st = tfl_set(x, k, n, d)) != TG_OK) return st;
    return TG_OK;
  }
  if (strcmp(name, "RESIZE_BILINEAR") == 0 || strcmp(name, "RESIZE_NEAREST_NEIGHBOR") == 0) {
    tfl_value *size;
    if ((st = tfl_need(x, 0, &a)) != TG_OK || (st = tfl_need_values(x, 1, "size", &size)) != TG_OK) return st;
    if (a->rank != 4 || size->count != 2) return tfl_fail(x, "input must have rank 4 and size 2 entries");
    int64_t d[4] = {a->shape[0], size->v[0], size->v[1], a->shape[3]};
    return tfl_set(x, 0, 4, d);
  }
  if (strcmp(name, "DEPTH_TO_SPACE") == 0 || strcmp(name, "SPACE_TO_DEPTH") == 0) {
    if ((st = tfl_need(x, 0, &a)) != TG_OK) return st;
    int64_t bs = tfl_opt_i32(x, 0, 0);
    if (a->rank != 4 || bs < 1) return tfl_fail(x, "needs a rank-4 input and a block size (%lld)", (long long)bs);
    int64_t d[4];
    if (name[0] == 'D') {
      if (a->shape[3] % (bs * bs) != 0) return tfl_fail(x, "channels %lld do not divide by %lld", (long long)a->shape[3], (long long)(bs * bs));
      int64_t dd[4] = {a->shape[0], a->shape[1] * bs, a->shape[2] * bs, a->shape[3] / (bs * bs)};
      memcpy(d, dd, sizeof d);
    } else {
      if (a->shape[1] % bs != 0 || a->shape[2] % bs != 0) return tfl_fail(x, "height or width does not divide by %lld", (long long)bs);
      int64_t dd[4] = {a->shape[0], a->shape[1] / bs, a->shape[2] / bs, a->shape[3] * bs * bs};
      memcpy(d, dd, sizeof d);
    }
    return tfl_set(x, 0, 4, d);
  }
  if (strcmp(name, "TILE") == 0) {
    tfl_value *mult;
    if ((st = tfl_need(x, 0, &a)) != TG_OK || (st = tfl_need_values(x, 1, "multiples", &mult)) != TG_OK) return st;
    if (mult->count != a->rank) return tfl_fail(x, "multiples has %u entries for rank %u", mult->count, a->rank);
    int64_t d[TG_MAX_RANK];
    for (uint32_t k = 0; k < a->rank; ++k) {
      if (mult->v[k] < 0 || (a->shape[k] && mult->v[k] > INT64_MAX / a->shape[k])) return tfl_fail(x, "multiple %u is out of range", k);
      d[k] = a->shape[k] * mult->v[k];
    }
    return tfl_set(x, 0, a->rank, d);
  }
  if (strcmp(name, "TRANSPOSE_CONV") == 0 || strcmp(name, "BROADCAST_TO") == 0 || strcmp(name, "FILL") == 0) {
    /* The output shape is a vector input: TRANSPOSE_CONV's 0, BROADCAST_TO's 1, FILL's 0. */
    tfl_value *shape;
    if ((st = tfl_need_values(x, name[0] == 'B' ? 1 : 0, "output shape", &shape)) != TG_OK) return st;
    if (shape->count > TG_MAX_RANK) return tfl_fail(x, "output shape has %u dimensions", shape->count);
    return tfl_set(x, 0, shape->count, shape->v);
  }
  return tfl_fail(x, "no shape inference for this op: its output shape at an input size other than the file's "
                     "cannot be known");
}

/* Infer subgraph 0's shapes again (the graph inputs hold the sizes given). */
static tg_status tflite_infer_shapes(fb_reader *r, const tflite_model *m, tg_graph *g) {
  tfl_infer x = {
      .r = r, .m = m, .g = g,
      .val = tg__calloc(&g->alloc, g->tensor_count ? g->tensor_count : 1, sizeof *x.val)
  };
  if (x.val == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_status st = TG_OK;
  r->where[0] = '\0';
  for (size_t i = 0; st == TG_OK && i < g->tensor_count; ++i) st = tfl_read_constant(&x, (uint32_t)i);
  for (size_t o = 0; st == TG_OK && o < g->op_count; ++o) {
    const tg_op *op = &g->ops[o];
    x.op = (uint32_t)o;
    /* Ops on constants only keep the file's shapes (weights prepared at load time). */
    int all_constant = 1, any = 0;
    for (uint32_t k = 0; k < op->input_count; ++k) {
      if (op->inputs[k] < 0) continue;
      any = 1;
      if (!(g->tensors[op->inputs[k]].flags & TG_TENSOR_CONSTANT)) all_constant = 0;
    }
    if (any && all_constant) continue;
    if (is_flow_op(op->name)) {
      st = tfl_fail(&x, "control flow at an input size other than the file's is not supported");
      break;
    }
    fb_table t;
    size_t pos = 0, target;
    x.has_opts = 0;
    if ((st = fb_vector_table(r, &m->operators, (uint32_t)o, "operator", &t)) != TG_OK ||
        (st = fb_field(r, &t, 4, 4, "builtin_options", &pos)) != TG_OK)
      break;
    if (pos) {
      if ((st = fb_deref(r, pos, "builtin_options", &target)) != TG_OK ||
          (st = fb_table_at(r, target, "builtin_options", &x.opts)) != TG_OK)
        break;
      x.has_opts = 1;
    }
    st = tfl_infer_op(&x);
  }
  /* Ops whose outputs are computed entirely before the run (shape arithmetic) are not ops of
   * the graph: their outputs become constants, as on GPU engines. (No control flow here: it is
   * refused above, so op indices no longer need to match the file's.) */
  size_t kept = 0;
  for (size_t o = 0; st == TG_OK && o < g->op_count; ++o) {
    tg_op *op = &g->ops[o];
    int folded = op->output_count > 0;
    for (uint32_t k = 0; k < op->output_count && folded; ++k) folded = x.val[op->outputs[k]].has;
    if (!folded) {
      g->ops[kept++] = *op;
      continue;
    }
    for (uint32_t k = 0; k < op->output_count; ++k) g->tensors[op->outputs[k]].flags |= TG_TENSOR_CONSTANT;
    tg__free(&g->alloc, op->name);
    tg__free(&g->alloc, op->inputs);
    tg__free(&g->alloc, op->outputs);
  }
  if (st == TG_OK) g->op_count = kept;
  tg__free(&g->alloc, x.val);
  return st;
}

tg_status tg_graph_parse_tflite(const void *data, size_t length, const char *source,
                                const tg_allocator *alloc, tg_graph **out, tg_error_info *err) {
  return tg_graph_parse_tflite_with(data, length, source, NULL, alloc, out, err);
}

/* The reader behind tg_graph_parse_tflite_with and tg__tflite_parse_unresolved: with
 * `dynamic_out`, dynamic dimensions are left as the file has them and their masks handed out. */
static tg_status parse_tflite(const void *data, size_t length, const char *source,
                              const tg_model_options *options, const tg_allocator *alloc,
                              tg_graph **out, tg__tflite_dims **dynamic_out, tg_error_info *err);

tg_status tg_graph_parse_tflite_with(const void *data, size_t length, const char *source,
                                     const tg_model_options *options, const tg_allocator *alloc,
                                     tg_graph **out, tg_error_info *err) {
  return parse_tflite(data, length, source, options, alloc, out, NULL, err);
}

tg_status tg__tflite_parse_unresolved(const void *data, size_t length, const char *source,
                                      const tg_allocator *alloc, tg_graph **out,
                                      tg__tflite_dims **dynamic, tg_error_info *err) {
  if (dynamic == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "dynamic is NULL");
  *dynamic = NULL;
  return parse_tflite(data, length, source, NULL, alloc, out, dynamic, err);
}

static tg_status parse_tflite(const void *data, size_t length, const char *source,
                              const tg_model_options *options, const tg_allocator *alloc,
                              tg_graph **out, tg__tflite_dims **dynamic_out, tg_error_info *err) {
  if (out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = NULL;
  if (data == NULL && length > 0)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "data is NULL");
  alloc = tg__alloc_or_default(alloc);
  fb_reader r = {.data = data, .length = length, .source = source ? source : "<memory>", .err = err};
  if (!tg__mul_u64((uint64_t)length, TG_TFLITE_EXPANSION, &r.budget) ||
      !tg__add_u64(r.budget, (uint64_t)1 << 20, &r.budget))
    r.budget = UINT64_MAX;

  tflite_model m;
  tg_status st = read_header(&r, &m);
  if (st != TG_OK) return st;

  tg_graph *g = NULL;
  st = tg_graph_create(m.tensors.count, m.operators.count, alloc, &g);
  if (st != TG_OK) return tg__error(err, st, "%s: out of memory", r.source);
  g->subgraph_count = m.subgraphs.count;
  g->source = tg__strdup(alloc, r.source);
  dyn_dims *dyn = tg__calloc(alloc, m.tensors.count ? m.tensors.count : 1, sizeof *dyn);
  if (g->source == NULL || dyn == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
  for (uint32_t i = 0; st == TG_OK && i < m.tensors.count; ++i) st = read_tensor(&r, &m, i, g, &dyn[i]);
  if (st == TG_OK) {
    snprintf(r.where, sizeof r.where, "subgraph 0");
    st = read_io(&r, &m.inputs, g, TG_TENSOR_INPUT, "input", &g->inputs, &g->input_count);
  }
  if (st == TG_OK)
    st = read_io(&r, &m.outputs, g, TG_TENSOR_OUTPUT, "output", &g->outputs, &g->output_count);
  for (uint32_t i = 0; st == TG_OK && i < m.operators.count; ++i) st = read_op(&r, &m, i, g);
  if (st == TG_OK && dynamic_out == NULL) st = resolve_dynamic(&r, g, dyn, options);
  if (st == TG_OK && dynamic_out != NULL) {
    *dynamic_out = dyn;
    dyn = NULL;
  }
  tg__free(alloc, dyn);
  if (st == TG_OK && r.recompute) st = tflite_infer_shapes(&r, &m, g);
  if (st == TG_OK) st = inline_subgraphs(&r, &m, &g);
  if (st != TG_OK) {
    if (st == TG_ERROR_OUT_OF_HOST_MEMORY) tg__error(err, st, "%s: out of memory", r.source);
    tg_graph_destroy(g);
    return st;
  }
  *out = g;
  return TG_OK;
}

static tg_status parse_tflite_text(const char *data, size_t length, const char *source,
                                   const tg_allocator *alloc, tg_graph **out, tg_error_info *err) {
  return tg_graph_parse_tflite(data, length, source, alloc, out, err);
}

tg_status tg_graph_read_tflite(const char *path, const tg_allocator *alloc, tg_graph **out,
                               tg_error_info *err) {
  return tg__graph_read_file(path, parse_tflite_text, alloc, out, err);
}
