/* A tiny .tflite writer for tests: builds valid (or deliberately broken) flatbuffers from a
 * plain description, and reports where interesting pieces landed so tests can corrupt them.
 *
 * Layout is front to back (uoffsets must point forward): root offset, "TFL3", the Model table,
 * then its children. Every table field gets an 8-byte slot, which is legal FlatBuffers (a
 * vtable may place fields anywhere inside the table) and keeps the writer trivial. */
#ifndef TG_TFLITE_BUILDER_H
#define TG_TFLITE_BUILDER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TT_CAP (1u << 16)
#define TT_MAX 16

typedef struct tt_buf {
  uint8_t data[TT_CAP];
  size_t len;
} tt_buf;

typedef struct tt_tensor {
  const char *name;        /* NULL: no name field */
  int rank;                /* -1: no shape field */
  int32_t shape[10];
  int shape_in_signature;  /* write the shape as shape_signature instead of shape */
  uint8_t type;
  uint32_t buffer;
  int variable;
} tt_tensor;

typedef struct tt_op {
  uint32_t opcode;
  int nin, nout;
  int32_t in[8], out[8];
  int noptions;            /* > 0: builtin_options, a table of int32 fields (IfOptions...) */
  int32_t options[2];
} tt_op;

/* A further subgraph (index 1, 2, ... in the file): unnamed float tensors of the given shapes
 * (-1: a dimension the file records no size for). */
typedef struct tt_subgraph {
  int ntensors, nops, ninputs, noutputs;
  int rank[TT_MAX];
  int32_t shape[TT_MAX][4];
  tt_op ops[TT_MAX];
  int32_t inputs[TT_MAX], outputs[TT_MAX];
  /* shape_signature written next to the shape (rank > 0; -1 marks a dynamic dimension). */
  int signature_rank[TT_MAX];
  int32_t signature[TT_MAX][4];
} tt_subgraph;

typedef struct tt_opcode {
  int8_t deprecated;
  int32_t builtin;         /* written only when nonzero, as old writers do */
  const char *custom;
} tt_opcode;

typedef struct tt_buffer {
  uint32_t data_len;       /* inline data bytes */
  uint64_t offset, size;   /* external data (0: fields absent) */
} tt_buffer;

typedef struct tt_model {
  uint32_t version;
  int subgraphs;           /* entries in the subgraphs vector (all the same table) */
  int ntensors, nops, nopcodes, nbuffers, ninputs, noutputs;
  tt_tensor tensors[TT_MAX];
  tt_op ops[TT_MAX];
  tt_opcode opcodes[TT_MAX];
  tt_buffer buffers[TT_MAX];
  int32_t inputs[TT_MAX], outputs[TT_MAX];
  /* shape_signature written next to the shape (rank > 0; -1 marks a dynamic dimension). */
  int signature_rank[TT_MAX];
  int32_t signature[TT_MAX][10];
  /* With subgraphs == 1: further subgraphs after the first. */
  int nextra;
  tt_subgraph extra[4];
} tt_model;

/* Where things are in the built file. */
typedef struct tt_layout {
  size_t model_table;
  size_t tensors_vec;      /* the tensors vector's length word */
  size_t tensor_table[TT_MAX];
  size_t shape_vec[TT_MAX];
  size_t name_str[TT_MAX]; /* length word of tensor names */
  size_t op_inputs_vec[TT_MAX];
  size_t opcodes_vec;
  size_t subgraphs_vec;
} tt_layout;

static void tt_put(tt_buf *b, const void *p, size_t n) {
  if (b->len + n > TT_CAP) return;
  memcpy(b->data + b->len, p, n);
  b->len += n;
}
static void tt_set32(tt_buf *b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b->data[at + i] = (uint8_t)(v >> (8 * i));
}
static void tt_set64(tt_buf *b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b->data[at + i] = (uint8_t)(v >> (8 * i));
}
static size_t tt_u32(tt_buf *b, uint32_t v) {
  size_t at = b->len;
  uint8_t w[4];
  for (int i = 0; i < 4; ++i) w[i] = (uint8_t)(v >> (8 * i));
  tt_put(b, w, 4);
  return at;
}
static void tt_align4(tt_buf *b) {
  static const uint8_t z[4] = {0};
  tt_put(b, z, (4 - b->len % 4) % 4);
}
/* Point the uoffset at `at` to `target` (which must come later). */
static void tt_link(tt_buf *b, size_t at, size_t target) { tt_set32(b, at, (uint32_t)(target - at)); }

/* A table with `n` 8-byte field slots; bit i of `present` marks field i present. */
static size_t tt_table(tt_buf *b, unsigned n, uint32_t present) {
  tt_align4(b);
  size_t vt = b->len;
  uint8_t h[4] = {(uint8_t)(4 + 2 * n), 0, (uint8_t)(4 + 8 * n), 0};
  tt_put(b, h, 4);
  for (unsigned i = 0; i < n; ++i) {
    uint16_t off = (present >> i) & 1u ? (uint16_t)(4 + 8 * i) : 0;
    uint8_t e[2] = {(uint8_t)off, (uint8_t)(off >> 8)};
    tt_put(b, e, 2);
  }
  tt_align4(b);
  size_t t = b->len;
  tt_u32(b, (uint32_t)(t - vt)); /* soffset: vtable lies before the table */
  static const uint8_t z[8] = {0};
  for (unsigned i = 0; i < n; ++i) tt_put(b, z, 8);
  return t;
}
static size_t tt_field(size_t table, unsigned i) { return table + 4 + 8 * i; }

static size_t tt_vec_i32(tt_buf *b, const int32_t *v, int n) {
  tt_align4(b);
  size_t at = tt_u32(b, (uint32_t)n);
  for (int i = 0; i < n; ++i) tt_u32(b, (uint32_t)v[i]);
  return at;
}
static size_t tt_string(tt_buf *b, const char *s) {
  tt_align4(b);
  size_t n = strlen(s);
  size_t at = tt_u32(b, (uint32_t)n);
  tt_put(b, s, n + 1);
  return at;
}
/* A vector of `n` uoffsets to fill with tt_link; returns the length word's position. */
static size_t tt_vec_offsets(tt_buf *b, int n) {
  tt_align4(b);
  size_t at = tt_u32(b, (uint32_t)n);
  for (int i = 0; i < n; ++i) tt_u32(b, 0);
  return at;
}
static size_t tt_elem(size_t vec, int i) { return vec + 4 + 4 * (size_t)i; }

/* Operator i of the operators vector `opv`; returns the inputs vector's position. */
static size_t tt_op_table(tt_buf *b, size_t opv, int i, const tt_op *o) {
  /* Operator: opcode_index 0, inputs 1, outputs 2, builtin_options_type 3, builtin_options 4. */
  size_t t = tt_table(b, o->noptions ? 5 : 3, o->noptions ? 0x1F : 0x7);
  tt_link(b, tt_elem(opv, i), t);
  tt_set32(b, tt_field(t, 0), o->opcode);
  size_t iv = tt_vec_i32(b, o->in, o->nin);
  tt_link(b, tt_field(t, 1), iv);
  tt_link(b, tt_field(t, 2), tt_vec_i32(b, o->out, o->nout));
  if (o->noptions) {
    b->data[tt_field(t, 3)] = 1;
    size_t opt = tt_table(b, (unsigned)o->noptions, o->noptions == 2 ? 0x3u : 0x1u);
    tt_link(b, tt_field(t, 4), opt);
    for (int k = 0; k < o->noptions; ++k) tt_set32(b, tt_field(opt, (unsigned)k), (uint32_t)o->options[k]);
  }
  return iv;
}

/* Build `m` into `b`; returns the file length. */
static size_t tt_build(const tt_model *m, tt_buf *b, tt_layout *lay) {
  tt_layout dummy;
  if (lay == NULL) lay = &dummy;
  memset(lay, 0, sizeof *lay);
  b->len = 0;
  size_t root = tt_u32(b, 0);
  tt_put(b, "TFL3", 4);
  /* Model: version 0, operator_codes 1, subgraphs 2, buffers 4. */
  size_t model = tt_table(b, 5, 0x17);
  lay->model_table = model;
  tt_link(b, root, model);
  tt_set32(b, tt_field(model, 0), m->version);

  size_t ocv = tt_vec_offsets(b, m->nopcodes);
  lay->opcodes_vec = ocv;
  tt_link(b, tt_field(model, 1), ocv);
  for (int i = 0; i < m->nopcodes; ++i) {
    const tt_opcode *c = &m->opcodes[i];
    uint32_t present = 0x1u | (c->custom ? 0x2u : 0) | (c->builtin ? 0x8u : 0);
    size_t t = tt_table(b, 4, present);
    tt_link(b, tt_elem(ocv, i), t);
    b->data[tt_field(t, 0)] = (uint8_t)c->deprecated;
    if (c->builtin) tt_set32(b, tt_field(t, 3), (uint32_t)c->builtin);
    if (c->custom) tt_link(b, tt_field(t, 1), tt_string(b, c->custom));
  }

  size_t sgv = tt_vec_offsets(b, m->subgraphs == 1 ? 1 + m->nextra : m->subgraphs);
  lay->subgraphs_vec = sgv;
  tt_link(b, tt_field(model, 2), sgv);
  /* SubGraph: tensors 0, inputs 1, outputs 2, operators 3. */
  size_t sg = tt_table(b, 4, 0xF);
  for (int i = 0; i < m->subgraphs; ++i) tt_link(b, tt_elem(sgv, i), sg);
  size_t tv = tt_vec_offsets(b, m->ntensors);
  lay->tensors_vec = tv;
  tt_link(b, tt_field(sg, 0), tv);
  for (int i = 0; i < m->ntensors; ++i) {
    const tt_tensor *x = &m->tensors[i];
    /* Tensor: shape 0, type 1, buffer 2, name 3, is_variable 5, shape_signature 7. */
    uint32_t present = 0x2u | 0x4u | (x->name ? 0x8u : 0) | (x->variable ? 0x20u : 0);
    if (x->rank >= 0) present |= x->shape_in_signature ? 0x80u : 0x1u;
    if (m->signature_rank[i] > 0) present |= 0x80u;
    size_t t = tt_table(b, 8, present);
    lay->tensor_table[i] = t;
    tt_link(b, tt_elem(tv, i), t);
    b->data[tt_field(t, 1)] = x->type;
    tt_set32(b, tt_field(t, 2), x->buffer);
    if (x->variable) b->data[tt_field(t, 5)] = 1;
    if (x->rank >= 0) {
      size_t sv = tt_vec_i32(b, x->shape, x->rank);
      lay->shape_vec[i] = sv;
      tt_link(b, tt_field(t, x->shape_in_signature ? 7 : 0), sv);
    }
    if (m->signature_rank[i] > 0) tt_link(b, tt_field(t, 7), tt_vec_i32(b, m->signature[i], m->signature_rank[i]));
    if (x->name) {
      size_t s = tt_string(b, x->name);
      lay->name_str[i] = s;
      tt_link(b, tt_field(t, 3), s);
    }
  }
  tt_link(b, tt_field(sg, 1), tt_vec_i32(b, m->inputs, m->ninputs));
  tt_link(b, tt_field(sg, 2), tt_vec_i32(b, m->outputs, m->noutputs));
  size_t opv = tt_vec_offsets(b, m->nops);
  tt_link(b, tt_field(sg, 3), opv);
  for (int i = 0; i < m->nops; ++i) lay->op_inputs_vec[i] = tt_op_table(b, opv, i, &m->ops[i]);
  /* Further subgraphs. */
  for (int e = 0; m->subgraphs == 1 && e < m->nextra; ++e) {
    const tt_subgraph *x = &m->extra[e];
    size_t t = tt_table(b, 4, 0xF);
    tt_link(b, tt_elem(sgv, 1 + e), t);
    size_t xv = tt_vec_offsets(b, x->ntensors);
    tt_link(b, tt_field(t, 0), xv);
    for (int i = 0; i < x->ntensors; ++i) {
      size_t tt = tt_table(b, 8, 0x1u | 0x2u | 0x4u | (x->signature_rank[i] > 0 ? 0x80u : 0));
      tt_link(b, tt_elem(xv, i), tt);
      tt_link(b, tt_field(tt, 0), tt_vec_i32(b, x->shape[i], x->rank[i]));
      if (x->signature_rank[i] > 0)
        tt_link(b, tt_field(tt, 7), tt_vec_i32(b, x->signature[i], x->signature_rank[i]));
    }
    tt_link(b, tt_field(t, 1), tt_vec_i32(b, x->inputs, x->ninputs));
    tt_link(b, tt_field(t, 2), tt_vec_i32(b, x->outputs, x->noutputs));
    size_t xo = tt_vec_offsets(b, x->nops);
    tt_link(b, tt_field(t, 3), xo);
    for (int i = 0; i < x->nops; ++i) tt_op_table(b, xo, i, &x->ops[i]);
  }

  size_t bv = tt_vec_offsets(b, m->nbuffers);
  tt_link(b, tt_field(model, 4), bv);
  for (int i = 0; i < m->nbuffers; ++i) {
    const tt_buffer *x = &m->buffers[i];
    uint32_t present = (x->data_len ? 0x1u : 0) | (x->offset || x->size ? 0x6u : 0);
    size_t t = tt_table(b, 3, present);
    tt_link(b, tt_elem(bv, i), t);
    if (x->offset || x->size) {
      tt_set64(b, tt_field(t, 1), x->offset);
      tt_set64(b, tt_field(t, 2), x->size);
    }
    if (x->data_len) {
      tt_align4(b);
      size_t dv = tt_u32(b, x->data_len);
      for (uint32_t k = 0; k < x->data_len; ++k) {
        uint8_t v = (uint8_t)k;
        tt_put(b, &v, 1);
      }
      tt_link(b, tt_field(t, 0), dv);
    }
  }
  return b->len;
}

/* A small valid model: DEQUANTIZE(w16) -> w; CONV_2D(x, w, -) -> a; CUSTOM "MyOp"(a) -> b;
 * ADD(a, b) -> y. Buffer 1 holds w16's data; buffer 2 is empty. */
static void tt_example(tt_model *m) {
  memset(m, 0, sizeof *m);
  m->version = 3;
  m->subgraphs = 1;
  m->nopcodes = 4;
  m->opcodes[0] = (tt_opcode){6, 0, NULL};          /* DEQUANTIZE (deprecated field only) */
  m->opcodes[1] = (tt_opcode){3, 3, NULL};          /* CONV_2D */
  m->opcodes[2] = (tt_opcode){32, 32, "MyOp"};      /* CUSTOM */
  m->opcodes[3] = (tt_opcode){0, 0, NULL};          /* ADD (all defaults) */
  m->nbuffers = 3;
  m->buffers[1].data_len = 24;
  m->ntensors = 6;
  m->tensors[0] = (tt_tensor){"x", 4, {1, 8, 8, 3}, 0, 0, 0, 0};
  m->tensors[1] = (tt_tensor){"w16", 4, {4, 1, 1, 3}, 0, 1, 1, 0};
  m->tensors[2] = (tt_tensor){"w", 4, {4, 1, 1, 3}, 0, 0, 2, 0};
  m->tensors[3] = (tt_tensor){"a", 4, {1, 8, 8, 4}, 0, 0, 0, 0};
  m->tensors[4] = (tt_tensor){"b", 4, {1, 8, 8, 4}, 1, 0, 0, 0};  /* shape_signature only */
  m->tensors[5] = (tt_tensor){"y", 4, {1, 8, 8, 4}, 0, 0, 0, 0};
  m->ninputs = 1;
  m->inputs[0] = 0;
  m->noutputs = 1;
  m->outputs[0] = 5;
  m->nops = 4;
  m->ops[0] = (tt_op){0, 1, 1, {1}, {2}, 0, {0, 0}};
  m->ops[1] = (tt_op){1, 3, 1, {0, 2, -1}, {3}, 0, {0, 0}};
  m->ops[2] = (tt_op){2, 1, 1, {3}, {4}, 0, {0, 0}};
  m->ops[3] = (tt_op){3, 2, 1, {3, 4}, {5}, 0, {0, 0}};
}

/* Opcode indices of tt_flow_example. */
enum { TT_IF = 0, TT_WHILE = 1, TT_RELU = 2, TT_ADD = 3, TT_LESS = 4 };

/* The main subgraph both control-flow models start from: opcodes TT_IF ... TT_LESS, one
 * buffer, `count` tensors named `names`, each 1x`width` but tensor 1 (c, a bool scalar), inputs
 * x and c (tensors 0 and 1), the last tensor the output; no ops yet. */
static inline void tt_flow_frame(tt_model *m, const char *const *names, int count, int32_t width) {
  memset(m, 0, sizeof *m);
  m->version = 3;
  m->subgraphs = 1;
  m->nopcodes = 5;
  m->opcodes[TT_IF].builtin = 118;
  m->opcodes[TT_WHILE].builtin = 119;
  m->opcodes[TT_RELU].deprecated = 19;
  m->opcodes[TT_ADD].deprecated = 0;
  m->opcodes[TT_LESS].deprecated = 58;
  m->nbuffers = 1;
  m->ntensors = count;
  for (int i = 0; i < count; ++i) {
    m->tensors[i].name = names[i];
    m->tensors[i].rank = i == 1 ? 0 : 2;
    m->tensors[i].shape[0] = 1;
    m->tensors[i].shape[1] = width;
    m->tensors[i].type = i == 1 ? 6 : 0;
  }
  m->ninputs = 2;
  m->inputs[0] = 0;
  m->inputs[1] = 1;
  m->noutputs = 1;
  m->outputs[0] = count - 1;
}

/* A model with control flow over subgraphs 1 and 2, tensors 1x16 (x and c the inputs, z the
 * output; subgraph tensors unnamed, inputs 0 and 1):
 *  TT_IF:    a = RELU(x); y1 = IF(c, a, x) [then: ADD(0, 1) -> 2; else: RELU(0) -> 2,
 *            ADD(2, 1) -> 3, RELU(3) -> 4]; z = RELU(y1).
 *  TT_WHILE: a = RELU(x); y1, y2 = WHILE(x, a) [cond: LESS(0, 1) -> 2 (a scalar); body:
 *            RELU(0) -> 2, ADD(2, 1) -> 3, ADD(3, 0) -> 4, outputs (4, 3)]; z = ADD(y1, y2). */
static inline void tt_flow_example(tt_model *m, int flow) {
  static const char *const names[6] = {"x", "c", "a", "y1", "y2", "z"};
  tt_flow_frame(m, names, 6, 16);
  m->nops = 3;
  m->ops[0] = (tt_op){TT_RELU, 1, 1, {0}, {2}, 0, {0, 0}};
  if (flow == TT_IF) {
    m->ops[1] = (tt_op){TT_IF, 3, 1, {1, 2, 0}, {3}, 2, {1, 2}};
    m->ops[2] = (tt_op){TT_RELU, 1, 1, {3}, {5}, 0, {0, 0}};
  } else {
    m->ops[1] = (tt_op){TT_WHILE, 2, 2, {0, 2}, {3, 4}, 2, {1, 2}};
    m->ops[2] = (tt_op){TT_ADD, 2, 1, {3, 4}, {5}, 0, {0, 0}};
  }
  m->nextra = 2;
  tt_subgraph *a = &m->extra[0], *b = &m->extra[1];
  a->ntensors = 3;
  b->ntensors = 5;
  for (int i = 0; i < TT_MAX; ++i) {
    a->rank[i] = b->rank[i] = 2;
    a->shape[i][0] = b->shape[i][0] = 1;
    a->shape[i][1] = b->shape[i][1] = 16;
  }
  a->ninputs = b->ninputs = 2;
  a->inputs[0] = b->inputs[0] = 0;
  a->inputs[1] = b->inputs[1] = 1;
  a->nops = 1;
  a->noutputs = 1;
  a->outputs[0] = 2;
  b->nops = 3;
  b->ops[0] = (tt_op){TT_RELU, 1, 1, {0}, {2}, 0, {0, 0}};
  b->ops[1] = (tt_op){TT_ADD, 2, 1, {2, 1}, {3}, 0, {0, 0}};
  if (flow == TT_IF) {
    a->ops[0] = (tt_op){TT_ADD, 2, 1, {0, 1}, {2}, 0, {0, 0}};
    b->ops[2] = (tt_op){TT_RELU, 1, 1, {3}, {4}, 0, {0, 0}};
    b->noutputs = 1;
    b->outputs[0] = 4;
  } else {
    a->rank[2] = 0;
    a->ops[0] = (tt_op){TT_LESS, 2, 1, {0, 1}, {2}, 0, {0, 0}};
    b->ops[2] = (tt_op){TT_ADD, 2, 1, {3, 0}, {4}, 0, {0, 0}};
    b->noutputs = 2;
    b->outputs[0] = 4;
    b->outputs[1] = 3;
  }
}

#endif
