/* A tiny ONNX writer for tests: protobuf wire format written by hand, so tests can build valid
 * models in a few lines and also encode what no ONNX writer would (negative or 2^63
 * dimensions, truncated lengths, deep nesting).
 *
 * Field numbers are those of onnx.proto:
 *   ModelProto: ir_version 1, graph 7, opset_import 8
 *   OperatorSetIdProto: domain 1, version 2
 *   GraphProto: node 1, name 2, initializer 5, input 11, output 12
 *   NodeProto: input 1, output 2, name 3, op_type 4, attribute 5, domain 7
 *   AttributeProto: name 1, f 2, i 3, s 4, t 5, g 6, floats 7, ints 8, type 20
 *   TensorProto: dims 1, data_type 2, int64_data 7, name 8, raw_data 9, external_data 13,
 *                data_location 14
 *   ValueInfoProto: name 1, type 2; TypeProto: tensor_type 1; TypeProto.Tensor: elem_type 1,
 *   shape 2; TensorShapeProto: dim 1; Dimension: dim_value 1, dim_param 2
 *   StringStringEntryProto: key 1, value 2 */
#ifndef TG_ONNX_BUILDER_H
#define TG_ONNX_BUILDER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pb {
  uint8_t *data;
  size_t len, cap;
} pb;

static void pb_free(pb *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

static void pb_raw(pb *b, const void *p, size_t n) {
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n) cap *= 2;
    b->data = realloc(b->data, cap);
    if (b->data == NULL) abort();
    b->cap = cap;
  }
  if (n) memcpy(b->data + b->len, p, n);
  b->len += n;
}

static void pb_varint(pb *b, uint64_t v) {
  uint8_t buf[10];
  size_t n = 0;
  do {
    buf[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) buf[n] |= 0x80;
    ++n;
  } while (v);
  pb_raw(b, buf, n);
}

static void pb_tag(pb *b, unsigned field, unsigned wt) { pb_varint(b, ((uint64_t)field << 3) | wt); }
static void pb_int(pb *b, unsigned field, int64_t v) {
  pb_tag(b, field, 0);
  pb_varint(b, (uint64_t)v);
}
static void pb_bytes(pb *b, unsigned field, const void *p, size_t n) {
  pb_tag(b, field, 2);
  pb_varint(b, n);
  pb_raw(b, p, n);
}
static void pb_str(pb *b, unsigned field, const char *s) { pb_bytes(b, field, s, strlen(s)); }
/* Append `sub` as a length-delimited field and free it. */
static void pb_msg(pb *b, unsigned field, pb *sub) {
  pb_bytes(b, field, sub->data, sub->len);
  pb_free(sub);
}
static void pb_float(pb *b, unsigned field, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint8_t le[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
  pb_tag(b, field, 5);
  pb_raw(b, le, 4);
}

/* ---- ONNX pieces ---- */

enum { OB_FLOAT = 1, OB_INT32 = 6, OB_INT64 = 7 };
enum { OB_ATTR_FLOAT = 1, OB_ATTR_INT = 2, OB_ATTR_STRING = 3, OB_ATTR_TENSOR = 4, OB_ATTR_GRAPH = 5,
       OB_ATTR_FLOATS = 6, OB_ATTR_INTS = 7 };

/* A tensor value_info: dims >= 0 are static, -1 is a dim_param ("d<k>"), and rank -1 means no
 * shape at all. */
static void ob_value_info(pb *out, unsigned field, const char *name, int elem, int rank, const int64_t *dims) {
  pb vi = {0}, tp = {0}, tt = {0}, sh = {0};
  pb_str(&vi, 1, name);
  pb_int(&tt, 1, elem);
  if (rank >= 0) {
    for (int d = 0; d < rank; ++d) {
      pb dim = {0};
      if (dims[d] == -1) {
        char p[16];
        snprintf(p, sizeof p, "d%d", d);
        pb_str(&dim, 2, p);
      } else {
        pb_int(&dim, 1, dims[d]);
      }
      pb_msg(&sh, 1, &dim);
    }
    pb_msg(&tt, 2, &sh);
  }
  pb_msg(&tp, 1, &tt);
  pb_msg(&vi, 2, &tp);
  pb_msg(out, field, &vi);
}

/* A TensorProto (int64 values in int64_data, floats as raw_data zeros). `count` values. */
static void ob_tensor(pb *t, const char *name, int elem, int rank, const int64_t *dims, const int64_t *ivals,
                      size_t count) {
  for (int d = 0; d < rank; ++d) pb_int(t, 1, dims[d]);
  pb_int(t, 2, elem);
  if (name) pb_str(t, 8, name);
  if (elem == OB_INT64) {
    pb sub = {0};
    for (size_t k = 0; k < count; ++k) pb_varint(&sub, (uint64_t)ivals[k]);
    pb_msg(t, 7, &sub);
  } else {
    size_t bytes = count * (elem == OB_INT32 || elem == OB_FLOAT ? 4 : 8);
    uint8_t *z = calloc(bytes ? bytes : 1, 1);
    if (elem == OB_FLOAT && ivals)
      for (size_t k = 0; k < count; ++k) {
        float f = (float)ivals[k];
        memcpy(z + 4 * k, &f, 4);
      }
    pb_bytes(t, 9, z, bytes);
    free(z);
  }
}

static void ob_initializer(pb *graph, const char *name, int elem, int rank, const int64_t *dims,
                           const int64_t *ivals, size_t count) {
  pb t = {0};
  ob_tensor(&t, name, elem, rank, dims, ivals, count);
  pb_msg(graph, 5, &t);
}

/* A node with attributes already encoded in `attrs` (may be empty). */
static void ob_node(pb *graph, const char *op, const char *name, const char *const *in, int nin,
                    const char *const *out, int nout, pb *attrs) {
  pb n = {0};
  for (int k = 0; k < nin; ++k) pb_str(&n, 1, in[k]);
  for (int k = 0; k < nout; ++k) pb_str(&n, 2, out[k]);
  if (name) pb_str(&n, 3, name);
  pb_str(&n, 4, op);
  if (attrs && attrs->len) pb_raw(&n, attrs->data, attrs->len);
  if (attrs) pb_free(attrs);
  pb_msg(graph, 1, &n);
}

static void ob_attr_int(pb *attrs, const char *name, int64_t v) {
  pb a = {0};
  pb_str(&a, 1, name);
  pb_int(&a, 3, v);
  pb_int(&a, 20, OB_ATTR_INT);
  pb_msg(attrs, 5, &a);
}
static void ob_attr_float(pb *attrs, const char *name, float v) {
  pb a = {0};
  pb_str(&a, 1, name);
  pb_float(&a, 2, v);
  pb_int(&a, 20, OB_ATTR_FLOAT);
  pb_msg(attrs, 5, &a);
}
static void ob_attr_ints(pb *attrs, const char *name, const int64_t *v, int n) {
  pb a = {0};
  pb_str(&a, 1, name);
  for (int k = 0; k < n; ++k) pb_int(&a, 8, v[k]);
  pb_int(&a, 20, OB_ATTR_INTS);
  pb_msg(attrs, 5, &a);
}
static void ob_attr_floats(pb *attrs, const char *name, const float *v, int n) {
  pb a = {0};
  pb_str(&a, 1, name);
  for (int k = 0; k < n; ++k) pb_float(&a, 7, v[k]);
  pb_int(&a, 20, OB_ATTR_FLOATS);
  pb_msg(attrs, 5, &a);
}
static void ob_attr_string(pb *attrs, const char *name, const char *v) {
  pb a = {0};
  pb_str(&a, 1, name);
  pb_str(&a, 4, v);
  pb_int(&a, 20, OB_ATTR_STRING);
  pb_msg(attrs, 5, &a);
}
static void ob_attr_tensor(pb *attrs, const char *name, int elem, int rank, const int64_t *dims,
                           const int64_t *ivals, size_t count) {
  pb a = {0}, t = {0};
  pb_str(&a, 1, name);
  ob_tensor(&t, NULL, elem, rank, dims, ivals, count);
  pb_msg(&a, 5, &t);
  pb_int(&a, 20, OB_ATTR_TENSOR);
  pb_msg(attrs, 5, &a);
}

/* A Constant node holding int64 values. */
static void ob_const_ints(pb *graph, const char *out, int rank, const int64_t *dims, const int64_t *v, size_t n) {
  pb attrs = {0};
  ob_attr_tensor(&attrs, "value", OB_INT64, rank, dims, v, n);
  const char *o[1] = {out};
  ob_node(graph, "Constant", NULL, NULL, 0, o, 1, &attrs);
}

/* A Constant node holding float values (given as integers). */
static void ob_const_floats(pb *graph, const char *out, int rank, const int64_t *dims, const int64_t *v, size_t n) {
  pb attrs = {0};
  ob_attr_tensor(&attrs, "value", OB_FLOAT, rank, dims, v, n);
  const char *o[1] = {out};
  ob_node(graph, "Constant", NULL, NULL, 0, o, 1, &attrs);
}

/* The model around `graph` (consumed), with the default domain at `opset`. */
static void ob_model(pb *model, pb *graph, int64_t opset) {
  pb os = {0};
  pb_int(model, 1, 8);
  pb_str(&os, 1, "");
  pb_int(&os, 2, opset);
  pb_msg(model, 7, graph);
  pb_msg(model, 8, &os);
}

#endif
