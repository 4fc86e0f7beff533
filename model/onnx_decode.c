/* The .onnx reader's bottom layer: the wire-format check that runs before protobuf-c, the
 * budgeted decode, the arena and the error helpers.
 *
 * protobuf-c decodes recursively and allocates as it goes. A hostile file could nest messages
 * deeply enough to exhaust the stack, or make a small file decode into gigabytes (thousands of
 * empty 2-byte messages, each a 100-byte struct). So the file is first walked here with the
 * same descriptors protobuf-c uses, without allocating: every tag, varint, length and wire type
 * is checked against the bytes left and the schema, nesting is capped, and the memory the
 * decoded model will take is added up. Only a file that passes is handed to protobuf-c, with
 * an allocator that refuses to go past that estimate. */
#ifdef TANGRAM_HAVE_ONNX

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "model/onnx_internal.h"
#include "tangram/model.h"

/* ------------------------------------------------------------------------------------------ */
/* Errors and the arena. */

tg_status onnx_fail(onnx_ctx *c, tg_status status, const char *fmt, ...) {
  if (c->err == NULL) return status;
  char msg[TG_ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tg__error(c->err, status, "%s: %s", c->source, msg);
}

tg_status onnx_fail_node(onnx_ctx *c, const onnx_node *n, tg_status status, const char *fmt, ...) {
  if (c->err == NULL) return status;
  char msg[TG_ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char label[200];
  onnx_node_label(n, label, sizeof label);
  return tg__error(c->err, status, "%s: %s: %s", c->source, label, msg);
}

void onnx_node_label(const onnx_node *n, char *buf, size_t size) {
  const char *name = n->proto->name && n->proto->name[0] ? n->proto->name : NULL;
  if (name) snprintf(buf, size, "node %zu '%.100s' (%.60s)", n->index, name, n->op);
  else snprintf(buf, size, "node %zu (%.60s)", n->index, n->op);
}

struct onnx_arena_block {
  onnx_arena_block *next;
  size_t size;
  max_align_t data[];
};

void *onnx_arena_alloc(onnx_arena *a, size_t size) {
  const size_t align = sizeof(max_align_t);
  size = (size + align - 1) / align * align;
  if (size == 0) size = align;
  if (a->head == NULL || a->capacity - a->used < size) {
    size_t cap = size > 65536 ? size : 65536;
    onnx_arena_block *b = tg__malloc(a->alloc, sizeof *b + cap);
    if (b == NULL) return NULL;
    b->next = a->head;
    b->size = cap;
    a->head = b;
    a->used = 0;
    a->capacity = cap;
  }
  void *p = (char *)a->head->data + a->used;
  a->used += size;
  memset(p, 0, size);
  return p;
}

void onnx_arena_free(onnx_arena *a) {
  onnx_arena_block *b = a->head;
  while (b) {
    onnx_arena_block *next = b->next;
    tg__free(a->alloc, b);
    b = next;
  }
  a->head = NULL;
  a->used = a->capacity = 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Wire-format check. */

/* Nested messages deeper than this are refused (ModelProto -> GraphProto -> NodeProto ->
 * AttributeProto -> GraphProto is depth 4; real models with control flow stay far below). */
#define ONNX_MAX_DEPTH 32
/* Bytes the scan charges per field occurrence for protobuf-c's bookkeeping while it decodes
 * (its scanned-member slabs) plus the allocator's block header. */
#define ONNX_FIELD_OVERHEAD 64
#define ONNX_BLOCK_HEADER 16

typedef struct scan_frame {
  const char *field;     /* field name in the parent, NULL at the root */
  uint32_t index;        /* occurrence of that field in the parent */
} scan_frame;

typedef struct scan_state {
  onnx_ctx *c;
  const uint8_t *data;
  size_t length;
  uint64_t estimate;     /* bytes protobuf-c will allocate, at most */
  unsigned depth;
  scan_frame path[ONNX_MAX_DEPTH + 1];
} scan_state;

static void format_path(const scan_state *s, char *buf, size_t size) {
  size_t n = 0;
  buf[0] = '\0';
  for (unsigned d = 1; d <= s->depth && n + 1 < size; ++d) {
    int w = snprintf(buf + n, size - n, "%s%s[%u]", d > 1 ? "." : "", s->path[d].field,
                     s->path[d].index);
    if (w < 0) break;
    n += (size_t)w < size - n ? (size_t)w : size - n - 1;
  }
  if (n == 0) snprintf(buf, size, "ModelProto");
}

static tg_status scan_fail(scan_state *s, size_t at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static tg_status scan_fail(scan_state *s, size_t at, const char *fmt, ...) {
  char msg[TG_ERROR_MESSAGE_MAX / 2], path[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  format_path(s, path, sizeof path);
  return onnx_fail(s->c, TG_ERROR_PARSE, "byte %zu (in %s): %s", at, path, msg);
}

/* A varint at `*pos` (< end): at most 10 bytes, the 10th only 0 or 1. */
static int read_varint(const uint8_t *d, size_t *pos, size_t end, uint64_t *out) {
  uint64_t v = 0;
  for (unsigned k = 0; k < 10; ++k) {
    if (*pos >= end) return 0;
    uint8_t b = d[(*pos)++];
    if (k == 9 && b > 1) return 0;
    v |= (uint64_t)(b & 0x7f) << (7 * k);
    if (!(b & 0x80)) {
      *out = v;
      return 1;
    }
  }
  return 0;
}

static void charge(scan_state *s, uint64_t bytes) { s->estimate = tg__add_sat_u64(s->estimate, bytes); }

/* Size of one element of a repeated field as protobuf-c stores it. */
static size_t element_size(ProtobufCType t) {
  switch (t) {
    case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32: case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_ENUM:
      return 4;
    case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
    default: return 8;
  }
}

static int is_varint_type(ProtobufCType t) {
  return t == PROTOBUF_C_TYPE_INT32 || t == PROTOBUF_C_TYPE_SINT32 || t == PROTOBUF_C_TYPE_INT64 ||
         t == PROTOBUF_C_TYPE_SINT64 || t == PROTOBUF_C_TYPE_UINT32 || t == PROTOBUF_C_TYPE_UINT64 ||
         t == PROTOBUF_C_TYPE_BOOL || t == PROTOBUF_C_TYPE_ENUM;
}
static int is_fixed32_type(ProtobufCType t) {
  return t == PROTOBUF_C_TYPE_SFIXED32 || t == PROTOBUF_C_TYPE_FIXED32 || t == PROTOBUF_C_TYPE_FLOAT;
}
static int is_fixed64_type(ProtobufCType t) {
  return t == PROTOBUF_C_TYPE_SFIXED64 || t == PROTOBUF_C_TYPE_FIXED64 || t == PROTOBUF_C_TYPE_DOUBLE;
}

static const char *wire_name(unsigned wt) {
  static const char *const k[] = {"varint", "64-bit", "length-delimited", "group start",
                                  "group end", "32-bit", "wire type 6", "wire type 7"};
  return k[wt & 7];
}

/* Check the message spanning [start, end) against descriptor `d`. */
static tg_status scan_message(scan_state *s, const ProtobufCMessageDescriptor *d, size_t start,
                              size_t end) {
  uint32_t seen[64];
  memset(seen, 0, sizeof seen);
  charge(s, d->sizeof_message + ONNX_BLOCK_HEADER);
  size_t pos = start;
  while (pos < end) {
    size_t field_at = pos;
    uint64_t tag;
    if (!read_varint(s->data, &pos, end, &tag))
      return scan_fail(s, field_at, "field tag runs past the end of its message (or of the file)");
    uint64_t number = tag >> 3;
    unsigned wt = (unsigned)(tag & 7);
    if (number == 0 || number > 0x1fffffff)
      return scan_fail(s, field_at, "field number %llu is not valid", (unsigned long long)number);
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field(d, (unsigned)number);
    const char *fname = f ? f->name : "unknown field";
    uint64_t len = 0;
    size_t payload = pos;
    switch (wt) {
      case 0:
        if (!read_varint(s->data, &pos, end, &len))
          return scan_fail(s, field_at, "%s (field %llu): varint is malformed or runs past the end",
                           fname, (unsigned long long)number);
        len = 0;
        break;
      case 1:
      case 5: {
        size_t w = wt == 1 ? 8 : 4;
        if (end - pos < w)
          return scan_fail(s, field_at, "%s (field %llu): %zu-byte value runs past the end (%zu bytes left)",
                           fname, (unsigned long long)number, w, end - pos);
        pos += w;
        break;
      }
      case 2:
        if (!read_varint(s->data, &pos, end, &len))
          return scan_fail(s, field_at, "%s (field %llu): length is malformed or runs past the end",
                           fname, (unsigned long long)number);
        if (len > end - pos)
          return scan_fail(s, field_at, "%s (field %llu) claims %llu bytes but only %zu remain",
                           fname, (unsigned long long)number, (unsigned long long)len, end - pos);
        payload = pos;
        pos += (size_t)len;
        break;
      default:
        return scan_fail(s, field_at, "field %llu has %s, which ONNX does not use",
                         (unsigned long long)number, wire_name(wt));
    }
    charge(s, ONNX_FIELD_OVERHEAD);
    if (f == NULL) {
      /* protobuf-c keeps unknown fields: a record and a copy of the bytes. */
      charge(s, sizeof(ProtobufCMessageUnknownField) + (wt == 2 ? len : 8));
      continue;
    }
    uint32_t occurrence = 0;
    size_t fi = (size_t)(f - d->fields);
    if (fi < 64) occurrence = seen[fi]++;
    ProtobufCType t = f->type;
    int repeated = f->label == PROTOBUF_C_LABEL_REPEATED;
    /* protobuf merges repeats of a singular message field, and protobuf-c does it by copying
     * every repeated field gathered so far: n repeats cost n^2. Writers emit such a field
     * once, so a second occurrence is refused. */
    if (t == PROTOBUF_C_TYPE_MESSAGE && !repeated && (fi >= 64 || occurrence > 0))
      return scan_fail(s, field_at, "%s (field %llu) appears more than once in one message", fname,
                       (unsigned long long)number);
    if (t == PROTOBUF_C_TYPE_MESSAGE || t == PROTOBUF_C_TYPE_STRING || t == PROTOBUF_C_TYPE_BYTES) {
      if (wt != 2)
        return scan_fail(s, field_at, "%s (field %llu) must be length-delimited, not %s", fname,
                         (unsigned long long)number, wire_name(wt));
      charge(s, (repeated ? element_size(t) : 0) + len + 1);
      if (t == PROTOBUF_C_TYPE_MESSAGE) {
        if (s->depth >= ONNX_MAX_DEPTH)
          return scan_fail(s, field_at, "%s (field %llu): messages nest deeper than %d levels",
                           fname, (unsigned long long)number, ONNX_MAX_DEPTH);
        s->depth++;
        s->path[s->depth].field = f->name;
        s->path[s->depth].index = occurrence;
        tg_status st = scan_message(s, f->descriptor, payload, payload + (size_t)len);
        s->depth--;
        if (st != TG_OK) return st;
      }
      continue;
    }
    /* Scalars: the wire type of the type, or a packed run for repeated fields. */
    size_t elem = element_size(t);
    if (wt == 2) {
      if (!repeated)
        return scan_fail(s, field_at, "%s (field %llu) is a single %s value but arrives as a packed list",
                         fname, (unsigned long long)number, wire_name(is_varint_type(t) ? 0 : is_fixed32_type(t) ? 5 : 1));
      uint64_t count = 0;
      if (is_varint_type(t)) {
        size_t p = payload, e = payload + (size_t)len;
        while (p < e) {
          uint64_t v;
          size_t at = p;
          if (!read_varint(s->data, &p, e, &v))
            return scan_fail(s, at, "%s (field %llu): packed varint is malformed or runs past its list",
                             fname, (unsigned long long)number);
          ++count;
        }
      } else {
        size_t w = is_fixed32_type(t) ? 4 : 8;
        if (len % w != 0)
          return scan_fail(s, field_at, "%s (field %llu): packed list of %llu bytes is not a multiple of %zu",
                           fname, (unsigned long long)number, (unsigned long long)len, w);
        count = len / w;
      }
      charge(s, count * elem);
      continue;
    }
    int ok = (wt == 0 && is_varint_type(t)) || (wt == 5 && is_fixed32_type(t)) ||
             (wt == 1 && is_fixed64_type(t));
    if (!ok)
      return scan_fail(s, field_at, "%s (field %llu) arrives as %s, which does not match its type",
                       fname, (unsigned long long)number, wire_name(wt));
    if (repeated) charge(s, elem);
  }
  return TG_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* The budgeted decode. */

typedef struct budget {
  const tg_allocator *alloc;
  uint64_t limit, used, peak;
  int refused;
} budget;

struct onnx_decoded {
  ProtobufCAllocator pa;
  budget b;
  Onnx__ModelProto *model;
};

static void *budget_alloc(void *user, size_t size) {
  budget *b = user;
  uint64_t need = (uint64_t)size + ONNX_BLOCK_HEADER;
  if (size > SIZE_MAX - ONNX_BLOCK_HEADER || need > b->limit - b->used) {
    b->refused = 1;
    return NULL;
  }
  unsigned char *p = tg__malloc(b->alloc, (size_t)need);
  if (p == NULL) return NULL;
  memcpy(p, &need, sizeof need);
  b->used += need;
  if (b->used > b->peak) b->peak = b->used;
  return p + ONNX_BLOCK_HEADER;
}

static void budget_free(void *user, void *ptr) {
  budget *b = user;
  if (ptr == NULL) return;
  unsigned char *p = (unsigned char *)ptr - ONNX_BLOCK_HEADER;
  uint64_t need;
  memcpy(&need, p, sizeof need);
  b->used -= need;
  tg__free(b->alloc, p);
}

void onnx_decoded_free(onnx_decoded *d, const tg_allocator *alloc) {
  if (d == NULL) return;
  if (d->model) protobuf_c_message_free_unpacked(&d->model->base, &d->pa);
  tg__free(alloc, d);
}

tg_status onnx_decode(onnx_ctx *c, const uint8_t *data, size_t length, onnx_decoded **out,
                      const Onnx__ModelProto **model) {
  *out = NULL;
  *model = NULL;
  /* protobuf's own limit: messages over 2 GiB cannot be written by the reference writers. */
  if (length > (size_t)INT32_MAX)
    return onnx_fail(c, TG_ERROR_PARSE, "%zu bytes is more than the 2 GiB a protobuf message may hold",
                     length);
  if (length == 0) return onnx_fail(c, TG_ERROR_PARSE, "empty file: no ModelProto");
  scan_state s = {.c = c, .data = data, .length = length};
  tg_status st = scan_message(&s, &onnx__model_proto__descriptor, 0, length);
  if (st != TG_OK) return st;
  /* Decoding copies the file's bytes (weights included) and adds a struct per message. The
   * estimate is an upper bound; real models stay near 1x their size, while a file of many tiny
   * messages can expand 50x: such files are refused before anything is allocated. */
  uint64_t limit = tg__add_sat_u64((uint64_t)length * 8, (uint64_t)64 << 20);
  if (s.estimate > limit)
    return onnx_fail(c, TG_ERROR_PARSE,
                     "decoding would take %llu bytes, more than 8 times the file's %zu bytes plus 64 MiB",
                     (unsigned long long)s.estimate, length);
  onnx_decoded *d = tg__calloc(c->alloc, 1, sizeof *d);
  if (d == NULL) return onnx_fail(c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
  d->b.alloc = c->alloc;
  d->b.limit = tg__add_sat_u64(s.estimate, (uint64_t)1 << 20);
  d->pa.alloc = budget_alloc;
  d->pa.free = budget_free;
  d->pa.allocator_data = &d->b;
  d->model = onnx__model_proto__unpack(&d->pa, length, data);
  if (d->model == NULL) {
    int refused = d->b.refused;
    onnx_decoded_free(d, c->alloc);
    if (refused)
      return onnx_fail(c, TG_ERROR_PARSE, "decoding needed more than the %llu bytes estimated",
                       (unsigned long long)s.estimate);
    /* The check above accepts what protobuf-c accepts; what is left is running out of memory. */
    return onnx_fail(c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory while decoding");
  }
  *out = d;
  *model = d->model;
  return TG_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Tensors and types. */

tg_dtype onnx_dtype(int32_t type) {
  switch (type) {
    case ONNX_FLOAT: return TG_DTYPE_FLOAT32;
    case ONNX_UINT8: return TG_DTYPE_UINT8;
    case ONNX_INT8: return TG_DTYPE_INT8;
    case ONNX_UINT16: return TG_DTYPE_UINT16;
    case ONNX_INT16: return TG_DTYPE_INT16;
    case ONNX_INT32: return TG_DTYPE_INT32;
    case ONNX_INT64: return TG_DTYPE_INT64;
    case ONNX_STRING: return TG_DTYPE_STRING;
    case ONNX_BOOL: return TG_DTYPE_BOOL;
    case ONNX_FLOAT16: return TG_DTYPE_FLOAT16;
    case ONNX_DOUBLE: return TG_DTYPE_FLOAT64;
    case ONNX_UINT32: return TG_DTYPE_UINT32;
    case ONNX_UINT64: return TG_DTYPE_UINT64;
    case ONNX_COMPLEX64: return TG_DTYPE_COMPLEX64;
    case ONNX_COMPLEX128: return TG_DTYPE_COMPLEX128;
    case 22: return TG_DTYPE_INT4;
    default: return TG_DTYPE_UNKNOWN;
  }
}

const char *onnx_type_name(int32_t type) {
  switch (type) {
    case ONNX_BFLOAT16: return "bfloat16";
    default: {
      tg_dtype t = onnx_dtype(type);
      return t == TG_DTYPE_UNKNOWN ? "unknown" : tg_dtype_name(t);
    }
  }
}

int onnx_element_count(const int64_t *dims, uint32_t rank, uint64_t *count) {
  uint64_t n = 1;
  for (uint32_t k = 0; k < rank; ++k) {
    if (dims[k] < 0 || !tg__mul_u64(n, (uint64_t)dims[k], &n) || n > (uint64_t)INT64_MAX) return -1;
  }
  *count = n;
  return 0;
}

/* Bytes per element of the raw_data encoding (0: variable or unknown). */
static size_t raw_element_bytes(int32_t type) {
  switch (type) {
    case ONNX_FLOAT: case ONNX_INT32: case ONNX_UINT32: return 4;
    case ONNX_UINT8: case ONNX_INT8: case ONNX_BOOL: return 1;
    case ONNX_UINT16: case ONNX_INT16: case ONNX_FLOAT16: case ONNX_BFLOAT16: return 2;
    case ONNX_INT64: case ONNX_UINT64: case ONNX_DOUBLE: case ONNX_COMPLEX64: return 8;
    case ONNX_COMPLEX128: return 16;
    default: return 0;
  }
}

int onnx_type_is_float(int32_t t) {
  return t == ONNX_FLOAT || t == ONNX_DOUBLE || t == ONNX_FLOAT16 || t == ONNX_BFLOAT16;
}

static double half_to_double(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v;
  if (e == 0) v = m / 1024.0 / 16384.0;
  else if (e == 31) v = m ? NAN : INFINITY;
  else {
    v = 1.0 + m / 1024.0;
    for (int k = e - 15; k > 0; --k) v *= 2;
    for (int k = e - 15; k < 0; ++k) v /= 2;
  }
  return (h & 0x8000) ? -v : v;
}

/* Element k of little-endian raw data. */
static void raw_element(const uint8_t *p, int32_t type, int64_t *iv, double *fv) {
  uint64_t u = 0;
  size_t w = raw_element_bytes(type);
  for (size_t b = 0; b < w && b < 8; ++b) u |= (uint64_t)p[b] << (8 * b);
  switch (type) {
    case ONNX_FLOAT: { uint32_t x = (uint32_t)u; float f; memcpy(&f, &x, 4); *fv = f; break; }
    case ONNX_DOUBLE: { double f; memcpy(&f, &u, 8); *fv = f; break; }
    case ONNX_FLOAT16: *fv = half_to_double((uint16_t)u); break;
    case ONNX_BFLOAT16: { uint32_t x = (uint32_t)u << 16; float f; memcpy(&f, &x, 4); *fv = f; break; }
    case ONNX_INT8: *iv = (int8_t)u; break;
    case ONNX_INT16: *iv = (int16_t)u; break;
    case ONNX_INT32: *iv = (int32_t)u; break;
    case ONNX_INT64: *iv = (int64_t)u; break;
    case ONNX_UINT64: *iv = u > (uint64_t)INT64_MAX ? -1 : (int64_t)u; break;
    default: *iv = (int64_t)u; break;
  }
}

tg_status onnx_value_from_tensor(onnx_ctx *c, const Onnx__TensorProto *t, const char *what,
                                 onnx_value *v) {
  if (t->n_dims > TG_MAX_RANK)
    return onnx_fail(c, TG_ERROR_UNSUPPORTED, "%s: rank %zu exceeds the maximum of %d", what,
                     t->n_dims, TG_MAX_RANK);
  v->rank = (uint32_t)t->n_dims;
  for (size_t k = 0; k < t->n_dims; ++k) {
    if (t->dims[k] < 0)
      return onnx_fail(c, TG_ERROR_PARSE, "%s: dimension %zu is %lld", what, k, (long long)t->dims[k]);
    if (t->dims[k] > ONNX_MAX_DIM)
      return onnx_fail(c, TG_ERROR_OVERFLOW, "%s: dimension %zu is %lld, more than 2^62", what, k,
                       (long long)t->dims[k]);
    v->dims[k] = t->dims[k];
  }
  uint64_t count;
  if (onnx_element_count(v->dims, v->rank, &count) != 0)
    return onnx_fail(c, TG_ERROR_OVERFLOW, "%s: shape has more elements than fit in 63 bits", what);
  v->has_shape = 1;
  v->type = t->has_data_type ? t->data_type : ONNX_UNDEFINED;
  if (t->segment != NULL)
    return onnx_fail(c, TG_ERROR_UNSUPPORTED, "%s: segmented tensors are not supported", what);
  if ((t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) ||
      t->n_external_data > 0) {
    /* Weights in another file: only their shape matters for planning. */
    v->external = 1;
    return TG_OK;
  }
  /* Where the data is, and how many elements it holds. */
  size_t have;
  const uint8_t *raw = NULL;
  size_t ew = raw_element_bytes(v->type);
  if (t->has_raw_data) {
    if (ew == 0)
      return onnx_fail(c, TG_ERROR_PARSE, "%s: raw_data for a %s tensor", what, onnx_type_name(v->type));
    if (t->raw_data.len % ew != 0 || t->raw_data.len / ew != count)
      return onnx_fail(c, TG_ERROR_PARSE,
                       "%s: raw_data holds %zu bytes but a %s tensor of %llu elements needs %llu",
                       what, t->raw_data.len, onnx_type_name(v->type), (unsigned long long)count,
                       (unsigned long long)count * ew);
    raw = t->raw_data.data;
    have = (size_t)count;
  } else {
    size_t typed = t->n_float_data + t->n_int32_data + t->n_string_data + t->n_int64_data +
                   t->n_double_data + t->n_uint64_data;
    /* Complex types store two numbers per element. */
    uint64_t expect = count;
    if (v->type == ONNX_COMPLEX64 || v->type == ONNX_COMPLEX128) expect = count * 2;
    if (typed != expect)
      return onnx_fail(c, TG_ERROR_PARSE, "%s: holds %zu values but its shape has %llu elements",
                       what, typed, (unsigned long long)count);
    have = (size_t)count;
  }
  if (have > ONNX_MAX_DECODE || v->type == ONNX_STRING || v->type == ONNX_COMPLEX64 ||
      v->type == ONNX_COMPLEX128 || v->type == ONNX_UNDEFINED)
    return TG_OK;
  v->count = have;
  v->is_float = (uint8_t)onnx_type_is_float(v->type);
  if (v->is_float) v->f = onnx_arena_alloc(&c->arena, (have ? have : 1) * sizeof *v->f);
  else v->i = onnx_arena_alloc(&c->arena, (have ? have : 1) * sizeof *v->i);
  if (v->f == NULL && v->i == NULL) return onnx_fail(c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
  for (size_t k = 0; k < have; ++k) {
    int64_t iv = 0;
    double fv = 0;
    if (raw) raw_element(raw + k * ew, v->type, &iv, &fv);
    else if (t->n_float_data) fv = t->float_data[k];
    else if (t->n_double_data) fv = t->double_data[k];
    else if (t->n_int64_data) iv = t->int64_data[k];
    else if (t->n_uint64_data) iv = t->uint64_data[k] > (uint64_t)INT64_MAX ? -1 : (int64_t)t->uint64_data[k];
    else if (t->n_int32_data) {
      /* int32_data carries int8..int32, bool and the bits of float16/bfloat16. */
      if (v->type == ONNX_FLOAT16) fv = half_to_double((uint16_t)t->int32_data[k]);
      else if (v->type == ONNX_BFLOAT16) {
        uint32_t x = (uint32_t)(uint16_t)t->int32_data[k] << 16;
        float f;
        memcpy(&f, &x, 4);
        fv = f;
      } else iv = t->int32_data[k];
    }
    if (v->is_float) {
      if (!raw && !t->n_float_data && !t->n_double_data && !t->n_int32_data)
        return onnx_fail(c, TG_ERROR_PARSE, "%s: %s data is not in a field for that type", what,
                         onnx_type_name(v->type));
      v->f[k] = fv;
    } else {
      if (!raw && !t->n_int64_data && !t->n_int32_data && !t->n_uint64_data)
        return onnx_fail(c, TG_ERROR_PARSE, "%s: %s data is not in a field for that type", what,
                         onnx_type_name(v->type));
      /* A uint64 above 2^63 - 1 (read as -1) has no int64 value: the tensor gets none. */
      if (v->type == ONNX_UINT64 && iv < 0) {
        v->why = "a uint64 value above 2^63 - 1";
        v->why_status = TG_ERROR_UNSUPPORTED;
        return TG_OK;
      }
      v->i[k] = iv;
    }
  }
  v->has_data = 1;
  return TG_OK;
}

#else
/* Built without protobuf-c (TANGRAM_ONNX=OFF): model/onnx.c answers TG_ERROR_UNSUPPORTED. */
typedef int tg__onnx_unused_onnx_decode;
#endif
