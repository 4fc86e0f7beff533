/* Shape inference for ONNX nodes, following the operator definitions of the ONNX standard
 * (onnx/docs/Operators.md) for opsets 1 to 21, and folding of the small integer tensors that
 * models compute shapes with (Shape -> Cast -> Slice -> Concat -> Reshape and the like).
 *
 * Every input of a node has a known, static shape when its turn comes (graph inputs are fixed
 * by the caller, nodes run in order). Each function below computes its outputs' shapes and
 * element types, and, when the inputs' values are known and small, the outputs' values: a node
 * whose outputs all get values is "folded" (the reader turns it into constants). Dimensions are
 * checked as they are made: each in [0, 2^62], each element count under 2^63. */
#ifdef TANGRAM_HAVE_ONNX

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "model/onnx_internal.h"

/* ------------------------------------------------------------------------------------------ */
/* Inputs, outputs, attributes. */

static onnx_value *in_at(const onnx_node *n, size_t k) { return k < n->nin ? n->in[k] : NULL; }

static tg_status need_in(onnx_ctx *c, const onnx_node *n, size_t k, onnx_value **v) {
  *v = in_at(n, k);
  if (*v == NULL) return onnx_fail_node(c, n, TG_ERROR_PARSE, "input %zu is required but absent", k);
  return TG_OK;
}

static tg_status need_out(onnx_ctx *c, const onnx_node *n, size_t min) {
  if (n->nout < min || n->out[0] == NULL)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "has %zu outputs; at least %zu needed", n->nout, min);
  return TG_OK;
}

/* Set output k's shape (and type); absent outputs are skipped. */
static tg_status set_out(onnx_ctx *c, onnx_node *n, size_t k, int32_t type, uint32_t rank,
                         const int64_t *dims) {
  if (k >= n->nout || n->out[k] == NULL) return TG_OK;
  onnx_value *o = n->out[k];
  if (rank > TG_MAX_RANK)
    return onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED, "output '%s' would have rank %u, more than %d",
                          o->name, rank, TG_MAX_RANK);
  for (uint32_t d = 0; d < rank; ++d)
    if (dims[d] < 0 || dims[d] > ONNX_MAX_DIM)
      return onnx_fail_node(c, n, dims[d] < 0 ? TG_ERROR_PARSE : TG_ERROR_OVERFLOW,
                            "output '%s' dimension %u would be %lld", o->name, d, (long long)dims[d]);
  uint64_t count;
  if (onnx_element_count(dims, rank, &count) != 0)
    return onnx_fail_node(c, n, TG_ERROR_OVERFLOW, "output '%s' would have more elements than fit in 63 bits",
                          o->name);
  o->type = type;
  o->rank = rank;
  memset(o->dims, 0, sizeof o->dims);
  for (uint32_t d = 0; d < rank; ++d) o->dims[d] = dims[d];
  o->has_shape = 1;
  return TG_OK;
}

static tg_status set_out_like(onnx_ctx *c, onnx_node *n, size_t k, int32_t type, const onnx_value *like) {
  return set_out(c, n, k, type, like->rank, like->dims);
}

/* Scratch for computed values: arena arrays of `count` elements (count <= ONNX_MAX_FOLD). */
typedef struct scratch {
  int64_t *i;
  double *f;
} scratch;

static tg_status scratch_get(onnx_ctx *c, size_t count, scratch *s) {
  s->i = onnx_arena_alloc(&c->arena, (count ? count : 1) * sizeof *s->i);
  s->f = onnx_arena_alloc(&c->arena, (count ? count : 1) * sizeof *s->f);
  if (s->i == NULL || s->f == NULL) return onnx_fail(c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
  return TG_OK;
}

/* Give output k values (after set_out): `count` integers (iv) or doubles (fv). The arrays are
 * referenced, not copied: they must live in the arena or in another value. */
static tg_status set_values(onnx_ctx *c, onnx_node *n, size_t k, int64_t *iv, double *fv,
                            size_t count) {
  (void)c;
  if (k >= n->nout || n->out[k] == NULL || count > ONNX_MAX_FOLD) return TG_OK;
  onnx_value *o = n->out[k];
  o->i = fv ? NULL : iv;
  o->f = fv;
  o->is_float = fv != NULL;
  o->count = count;
  o->has_data = 1;
  return TG_OK;
}

/* Output k's values cannot be computed before the run although its inputs' are known (an
 * overflow, a division by zero): record why, naming this node, for the node that may need them
 * (onnx_value.why). Not an error here: nothing may need them. */
static tg_status cannot_fold(onnx_ctx *c, onnx_node *n, tg_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static tg_status cannot_fold(onnx_ctx *c, onnx_node *n, tg_status status, const char *fmt, ...) {
  char label[200], msg[200];
  onnx_node_label(n, label, sizeof label);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t len = strlen(label) + strlen(msg) + 3;
  char *why = onnx_arena_alloc(&c->arena, len);
  if (why == NULL) return onnx_fail(c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
  snprintf(why, len, "%s: %s", label, msg);
  for (size_t k = 0; k < n->nout; ++k) {
    onnx_value *o = n->out[k];
    if (o == NULL || o->has_data || o->why) continue;
    o->why = why;
    o->why_scope = c->scope;
    o->why_status = status;
  }
  return TG_OK;
}

/* Whether integer v is a value of ONNX integer type `type` (bool: 0 or 1). */
static int int_fits(int32_t type, int64_t v) {
  switch (type) {
    case ONNX_BOOL: return v == 0 || v == 1;
    case ONNX_INT8: return v >= INT8_MIN && v <= INT8_MAX;
    case ONNX_UINT8: return v >= 0 && v <= UINT8_MAX;
    case ONNX_INT16: return v >= INT16_MIN && v <= INT16_MAX;
    case ONNX_UINT16: return v >= 0 && v <= UINT16_MAX;
    case ONNX_INT32: return v >= INT32_MIN && v <= INT32_MAX;
    case ONNX_UINT32: return v >= 0 && v <= (int64_t)UINT32_MAX;
    case ONNX_UINT64: return v >= 0;
    default: return 1;
  }
}

/* v rounded to nearest (ties to even) with `bits` significant bits, exponents below `min_exp`
 * subnormal, magnitudes above `max` infinite. */
static double round_bits(double v, int bits, int min_exp, double max) {
  if (!isfinite(v) || v == 0) return v;
  int e;
  (void)frexp(v, &e);
  int exp = e - 1 < min_exp ? min_exp : e - 1;
  double quantum = ldexp(1.0, exp - (bits - 1));
  double r = nearbyint(v / quantum) * quantum;
  return fabs(r) > max ? copysign(INFINITY, v) : r;
}

/* v as a value of floating-point type `type` holds it (float32, float16 and bfloat16 round). */
static double float_of_type(int32_t type, double v) {
  switch (type) {
    case ONNX_FLOAT: return round_bits(v, 24, -126, FLT_MAX);
    case ONNX_FLOAT16: return round_bits(v, 11, -14, 65504.0);
    case ONNX_BFLOAT16: return round_bits(v, 8, -126, 3.3895313892515355e38);
    default: return v;
  }
}

/* Computed values of output k: integers checked against its type (cannot_fold when one does
 * not fit), floats rounded to it; then set_values. */
static tg_status set_computed(onnx_ctx *c, onnx_node *n, size_t k, int64_t *iv, double *fv, size_t count) {
  if (k >= n->nout || n->out[k] == NULL) return TG_OK;
  int32_t type = n->out[k]->type;
  for (size_t e = 0; e < count; ++e) {
    if (fv) {
      fv[e] = float_of_type(type, fv[e]);
    } else if (!int_fits(type, iv[e])) {
      return cannot_fold(c, n, TG_ERROR_OVERFLOW, "value %lld does not fit %s", (long long)iv[e],
                         onnx_type_name(type));
    }
  }
  return set_values(c, n, k, iv, fv, count);
}

static const Onnx__AttributeProto *attr(const onnx_node *n, const char *name) {
  for (size_t k = 0; k < n->proto->n_attribute; ++k) {
    const Onnx__AttributeProto *a = n->proto->attribute[k];
    if (a->name && strcmp(a->name, name) == 0) return a;
  }
  return NULL;
}

static int attr_is(const Onnx__AttributeProto *a, Onnx__AttributeProto__AttributeType t) {
  return !a->has_type || a->type == t;
}

static tg_status attr_int(onnx_ctx *c, const onnx_node *n, const char *name, int64_t def, int64_t *out) {
  const Onnx__AttributeProto *a = attr(n, name);
  *out = def;
  if (a == NULL) return TG_OK;
  if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) || !a->has_i)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "attribute '%s' must be an integer", name);
  *out = a->i;
  return TG_OK;
}

/* An ints attribute: *present = 0 when absent. */
static tg_status attr_ints(onnx_ctx *c, const onnx_node *n, const char *name, const int64_t **v,
                           size_t *count, int *present) {
  const Onnx__AttributeProto *a = attr(n, name);
  *v = NULL;
  *count = 0;
  *present = a != NULL;
  if (a == NULL) return TG_OK;
  if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS))
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "attribute '%s' must be a list of integers", name);
  *v = a->ints;
  *count = a->n_ints;
  return TG_OK;
}

static tg_status attr_floats(onnx_ctx *c, const onnx_node *n, const char *name, const float **v,
                             size_t *count, int *present) {
  const Onnx__AttributeProto *a = attr(n, name);
  *v = NULL;
  *count = 0;
  *present = a != NULL;
  if (a == NULL) return TG_OK;
  if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS))
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "attribute '%s' must be a list of floats", name);
  *v = a->floats;
  *count = a->n_floats;
  return TG_OK;
}

/* A string attribute compared with `s` (absent: `def`). */
static tg_status attr_string_is(onnx_ctx *c, const onnx_node *n, const char *name, const char *def,
                                const char *s, int *equal) {
  const Onnx__AttributeProto *a = attr(n, name);
  if (a == NULL) {
    *equal = strcmp(def, s) == 0;
    return TG_OK;
  }
  if (!attr_is(a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING) || !a->has_s)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "attribute '%s' must be a string", name);
  size_t len = strlen(s);
  *equal = a->s.len == len && memcmp(a->s.data, s, len) == 0;
  return TG_OK;
}

/* Input k (`what`: "shape", "pads"...) has no values of the kind needed (`kind`: "integers"). */
static tg_status values_missing(onnx_ctx *c, const onnx_node *n, size_t k, const onnx_value *x,
                                const char *what, const char *kind) {
  if (x->external)
    return onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED,
                          "needs the values of input %zu '%s' (%s), which are kept in an external file",
                          k, x->name, what);
  if (!x->has_data && x->why) {
    int elsewhere = x->why_scope && c->scope && strcmp(x->why_scope, c->scope) != 0;
    return onnx_fail_node(c, n, x->why_status,
                          "needs the values of input %zu '%s' (%s), which cannot be computed before the run: "
                          "%s%s%s%s", k, x->name, what, x->why, elsewhere ? " (in " : "",
                          elsewhere ? x->why_scope : "", elsewhere ? ")" : "");
  }
  return onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED,
                        "needs the values of input %zu '%s' (%s) to know its output shape, and they are %s%s",
                        k, x->name, what, x->has_data ? "not " : "computed at run time",
                        x->has_data ? kind : "");
}

/* The integer values of input k (it must have them: shapes, axes, pads...). */
static tg_status in_ints(onnx_ctx *c, const onnx_node *n, size_t k, const char *what,
                         const int64_t **v, size_t *count) {
  onnx_value *x = in_at(n, k);
  if (x == NULL) return onnx_fail_node(c, n, TG_ERROR_PARSE, "input %zu (%s) is required but absent", k, what);
  if (!x->has_data || x->is_float) return values_missing(c, n, k, x, what, "integers");
  if (x->rank > 1)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "input %zu '%s' (%s) must be a scalar or a list, not rank %u",
                          k, x->name, what, x->rank);
  *v = x->i;
  *count = x->count;
  return TG_OK;
}

static tg_status in_floats(onnx_ctx *c, const onnx_node *n, size_t k, const char *what,
                           const double **v, size_t *count) {
  onnx_value *x = in_at(n, k);
  if (x == NULL) return onnx_fail_node(c, n, TG_ERROR_PARSE, "input %zu (%s) is required but absent", k, what);
  if (!x->has_data || !x->is_float) return values_missing(c, n, k, x, what, "floats");
  *v = x->f;
  *count = x->count;
  return TG_OK;
}

/* Axis in [-rank, rank) -> [0, rank). */
static tg_status norm_axis(onnx_ctx *c, const onnx_node *n, int64_t axis, uint32_t rank, uint32_t *out) {
  if (axis < -(int64_t)rank || axis >= (int64_t)rank)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "axis %lld is out of range for rank %u", (long long)axis, rank);
  *out = (uint32_t)(axis < 0 ? axis + (int64_t)rank : axis);
  return TG_OK;
}

static void shape_text(const int64_t *d, uint32_t rank, char *buf, size_t size) {
  size_t n = 0;
  buf[0] = '\0';
  if (rank == 0) {
    snprintf(buf, size, "scalar");
    return;
  }
  for (uint32_t k = 0; k < rank && n + 1 < size; ++k) {
    int w = snprintf(buf + n, size - n, "%s%lld", k ? "x" : "", (long long)d[k]);
    if (w < 0) break;
    n += (size_t)w < size - n ? (size_t)w : size - n - 1;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Broadcasting and value arithmetic. */

/* Multidirectional (numpy) broadcast of the present inputs in [from, to). */
static tg_status broadcast(onnx_ctx *c, const onnx_node *n, size_t from, size_t to, uint32_t *rank,
                           int64_t *dims) {
  uint32_t r = 0;
  for (size_t k = from; k < to; ++k)
    if (in_at(n, k) && in_at(n, k)->rank > r) r = in_at(n, k)->rank;
  for (uint32_t d = 0; d < r; ++d) dims[d] = 1;
  for (size_t k = from; k < to; ++k) {
    const onnx_value *v = in_at(n, k);
    if (v == NULL) continue;
    for (uint32_t d = 0; d < v->rank; ++d) {
      uint32_t o = r - v->rank + d;
      int64_t a = dims[o], b = v->dims[d];
      if (a == b || b == 1) continue;
      if (a == 1) {
        dims[o] = b;
        continue;
      }
      char s1[96], s2[96];
      shape_text(in_at(n, from)->dims, in_at(n, from)->rank, s1, sizeof s1);
      shape_text(v->dims, v->rank, s2, sizeof s2);
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "inputs of shapes %s and %s do not broadcast (dimension %u: %lld vs %lld)",
                            s1, s2, o, (long long)a, (long long)b);
    }
  }
  *rank = r;
  return TG_OK;
}

/* Flat index into `v` (broadcast to `rank`/`dims`) of the element at output flat index `at`. */
static size_t broadcast_index(const onnx_value *v, uint32_t rank, const int64_t *dims, size_t at) {
  size_t idx = 0, stride = 1;
  for (uint32_t d = rank; d-- > 0;) {
    size_t coord = (size_t)(at % (size_t)dims[d]);
    at /= (size_t)dims[d];
    int32_t vd = (int32_t)d - (int32_t)(rank - v->rank);
    if (vd < 0) continue;
    size_t size = (size_t)v->dims[vd];
    if (size != 1) idx += coord * stride;
    stride *= size;
  }
  return idx;
}

typedef enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_FMOD, OP_MAX, OP_MIN, OP_EQUAL, OP_LESS,
               OP_GREATER, OP_LESS_EQ, OP_GREATER_EQ, OP_POW, OP_AND, OP_OR, OP_XOR, OP_NONE } arith_op;

/* Sums and products of integers, exact whenever the result fits 64 bits, whatever the order and
 * the partial results (an engine's wrapping arithmetic gives that result too): a sum in 128-bit
 * two's complement (hi:lo), a product as its magnitude and sign. */
typedef struct exact_acc {
  int product;
  uint64_t lo;                 /* sum: the low 64 bits; product: the magnitude */
  int64_t hi;                  /* sum: the high bits (at most the count of terms away from 0) */
  int negative, zero, overflow;  /* product: its sign, a factor 0, the magnitude passed 2^64 - 1 */
} exact_acc;

static void acc_add(exact_acc *a, int64_t v) {
  if (a->product) {
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    a->zero |= v == 0;
    a->negative ^= v < 0;
    if (!a->overflow && !tg__mul_u64(a->lo, m, &a->lo)) a->overflow = 1;
    return;
  }
  uint64_t lo = a->lo + (uint64_t)v;
  a->hi += (lo < a->lo) - (v < 0);
  a->lo = lo;
}

static void acc_start(exact_acc *a, int product, int64_t v) {
  memset(a, 0, sizeof *a);
  a->product = product;
  a->lo = product;  /* 1 for a product, 0 for a sum */
  acc_add(a, v);
}

/* The result, or 0 when it leaves 64 bits. */
static int acc_result(const exact_acc *a, int64_t *r) {
  if (a->product) {
    if (a->zero) *r = 0;
    else if (a->overflow || a->lo > (uint64_t)INT64_MAX + (uint64_t)a->negative) return 0;
    else *r = !a->negative ? (int64_t)a->lo : a->lo > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)a->lo;
    return 1;
  }
  if (a->hi == 0 && a->lo <= (uint64_t)INT64_MAX) *r = (int64_t)a->lo;
  else if (a->hi == -1 && a->lo > (uint64_t)INT64_MAX) *r = -(int64_t)~a->lo - 1;
  else return 0;
  return 1;
}

/* a op b on integers as ONNX defines it: Div truncates towards zero (as ONNX's reference and
 * its shape inference do), Mod takes the divisor's sign (fmod = 1: the dividend's). 0 when the
 * result is undefined (division by zero) or leaves 64 bits. Sums and products: exact_acc. */
static int int_apply(arith_op op, int64_t a, int64_t b, int64_t *r) {
  switch (op) {
    case OP_SUB: if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b)) return 0; *r = a - b; return 1;
    case OP_DIV: if (b == 0 || (a == INT64_MIN && b == -1)) return 0; *r = a / b; return 1;
    case OP_MOD:
    case OP_FMOD:
      if (b == 0) return 0;
      *r = b == -1 ? 0 : a % b;
      if (op == OP_MOD && *r != 0 && ((*r < 0) != (b < 0))) *r += b;
      return 1;
    case OP_MAX: *r = a > b ? a : b; return 1;
    case OP_MIN: *r = a < b ? a : b; return 1;
    case OP_EQUAL: *r = a == b; return 1;
    case OP_LESS: *r = a < b; return 1;
    case OP_GREATER: *r = a > b; return 1;
    case OP_LESS_EQ: *r = a <= b; return 1;
    case OP_GREATER_EQ: *r = a >= b; return 1;
    case OP_AND: *r = a && b; return 1;
    case OP_OR: *r = a || b; return 1;
    case OP_XOR: *r = !a != !b; return 1;
    default: return 0;
  }
}

/* a op b on floats (in double; the caller rounds to the output's type). Max and Min propagate
 * NaN as numpy does. 0 for ops without a floating-point meaning here. */
static int float_apply(arith_op op, double a, double b, double *r) {
  switch (op) {
    case OP_ADD: *r = a + b; return 1;
    case OP_SUB: *r = a - b; return 1;
    case OP_MUL: *r = a * b; return 1;
    case OP_DIV: *r = a / b; return 1;
    case OP_FMOD: *r = fmod(a, b); return 1;
    case OP_MAX: *r = isnan(a) || isnan(b) ? NAN : a > b ? a : b; return 1;
    case OP_MIN: *r = isnan(a) || isnan(b) ? NAN : a < b ? a : b; return 1;
    case OP_POW: *r = pow(a, b); return 1;
    default: return 0;
  }
}

static int is_compare(arith_op op) {
  return op == OP_EQUAL || op == OP_LESS || op == OP_GREATER || op == OP_LESS_EQ || op == OP_GREATER_EQ;
}

static int float_compare(arith_op op, double x, double y) {
  return op == OP_EQUAL ? x == y : op == OP_LESS ? x < y : op == OP_GREATER ? x > y : op == OP_LESS_EQ ? x <= y : x >= y;
}

static const char *op_symbol(arith_op op) {
  switch (op) {
    case OP_ADD: return "+";
    case OP_SUB: return "-";
    case OP_MUL: return "*";
    case OP_DIV: return "/";
    default: return "mod";
  }
}

/* Values of a broadcast elementwise op on output 0 (two inputs, or more for Max, Min and Sum,
 * folded left to right), when every input has values of one kind. */
static tg_status fold_elementwise(onnx_ctx *c, onnx_node *n, arith_op op) {
  onnx_value *o = n->out[0], *first = in_at(n, 0);
  for (size_t k = 0; k < n->nin; ++k) {
    const onnx_value *v = n->in[k];
    if (v == NULL || !v->has_data || v->is_float != first->is_float) return TG_OK;
  }
  uint64_t count;
  if ((op == OP_POW && !first->is_float) || onnx_element_count(o->dims, o->rank, &count) != 0 ||
      count > ONNX_MAX_FOLD)
    return TG_OK;
  scratch sc;
  tg_status st = scratch_get(c, (size_t)count, &sc);
  if (st != TG_OK) return st;
  int as_float = first->is_float && !is_compare(op), exact = !first->is_float && (op == OP_ADD || op == OP_MUL);
  for (size_t e = 0; e < (size_t)count; ++e) {
    size_t i0 = broadcast_index(first, o->rank, o->dims, e);
    int64_t acc = first->is_float ? 0 : first->i[i0];
    double facc = first->is_float ? first->f[i0] : 0;
    exact_acc sum;
    acc_start(&sum, op == OP_MUL, acc);
    for (size_t k = 1; k < n->nin; ++k) {
      const onnx_value *v = n->in[k];
      size_t ik = broadcast_index(v, o->rank, o->dims, e);
      if (first->is_float && is_compare(op)) {
        acc = float_compare(op, facc, v->f[ik]);
      } else if (first->is_float) {
        if (!float_apply(op, facc, v->f[ik], &facc)) return TG_OK;
        facc = float_of_type(first->type, facc);
      } else if (exact) {
        acc_add(&sum, v->i[ik]);
      } else if (!int_apply(op, acc, v->i[ik], &acc)) {
        if ((op == OP_DIV || op == OP_MOD || op == OP_FMOD) && v->i[ik] == 0)
          return cannot_fold(c, n, TG_ERROR_PARSE, "division by zero");
        return cannot_fold(c, n, TG_ERROR_OVERFLOW, "%lld %s %lld leaves 64 bits", (long long)acc, op_symbol(op),
                           (long long)v->i[ik]);
      }
    }
    if (exact && !acc_result(&sum, &acc)) {
      if (n->nin == 2)
        return cannot_fold(c, n, TG_ERROR_OVERFLOW, "%lld %s %lld leaves 64 bits", (long long)first->i[i0],
                           op_symbol(op), (long long)n->in[1]->i[broadcast_index(n->in[1], o->rank, o->dims, e)]);
      return cannot_fold(c, n, TG_ERROR_OVERFLOW, "the %s leaves 64 bits", op == OP_MUL ? "product" : "sum");
    }
    sc.i[e] = acc;
    sc.f[e] = facc;
  }
  return set_computed(c, n, 0, as_float ? NULL : sc.i, as_float ? sc.f : NULL, (size_t)count);
}

/* Values passed through unchanged (Identity, Reshape, Squeeze, ...). */
static tg_status pass_values(onnx_ctx *c, onnx_node *n, const onnx_value *from) {
  if (!from->has_data) return TG_OK;
  return set_values(c, n, 0, from->is_float ? NULL : from->i, from->is_float ? from->f : NULL, from->count);
}

/* ------------------------------------------------------------------------------------------ */
/* Ops that keep their input's shape. */

static tg_status infer_same(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st = need_in(c, n, 0, &x);
  if (st != TG_OK || (st = need_out(c, n, 1)) != TG_OK) return st;
  return set_out_like(c, n, 0, x->type, x);
}

static tg_status infer_identity(onnx_ctx *c, onnx_node *n) {
  tg_status st = infer_same(c, n);
  if (st != TG_OK) return st;
  return pass_values(c, n, n->in[0]);
}

static tg_status infer_bool_same(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st = need_in(c, n, 0, &x);
  if (st != TG_OK || (st = need_out(c, n, 1)) != TG_OK) return st;
  return set_out_like(c, n, 0, ONNX_BOOL, x);
}

static tg_status infer_dropout(onnx_ctx *c, onnx_node *n) {
  tg_status st = infer_same(c, n);
  if (st != TG_OK) return st;
  return set_out_like(c, n, 1, ONNX_BOOL, n->in[0]);
}

/* Neg, Abs, Sign (any numbers) and Not (bools): values elementwise. */
static tg_status infer_unary(onnx_ctx *c, onnx_node *n) {
  int is_not = strcmp(n->op, "Not") == 0;
  tg_status st = is_not ? infer_bool_same(c, n) : infer_same(c, n);
  if (st != TG_OK) return st;
  onnx_value *x = n->in[0];
  if (!x->has_data) return TG_OK;
  scratch sc;
  if ((st = scratch_get(c, x->count, &sc)) != TG_OK) return st;
  char op = n->op[0];
  for (size_t k = 0; k < x->count; ++k) {
    if (x->is_float) {
      double f = x->f[k];
      sc.f[k] = op == 'N' ? -f : op == 'A' ? fabs(f) : isnan(f) ? f : (f > 0) - (f < 0);
      continue;
    }
    int64_t v = x->i[k];
    if (v == INT64_MIN && (op == 'N' || op == 'A'))
      return cannot_fold(c, n, TG_ERROR_OVERFLOW, "-(%lld) leaves 64 bits", (long long)v);
    sc.i[k] = is_not ? !v : op == 'N' ? -v : op == 'A' ? (v < 0 ? -v : v) : (v > 0) - (v < 0);
  }
  return set_computed(c, n, 0, x->is_float ? NULL : sc.i, x->is_float ? sc.f : NULL, x->count);
}

/* Floor, Ceil, Round of float values. */
static tg_status infer_rounding(onnx_ctx *c, onnx_node *n) {
  tg_status st = infer_same(c, n);
  if (st != TG_OK) return st;
  onnx_value *x = n->in[0];
  if (!x->has_data || !x->is_float) return TG_OK;
  scratch sc;
  if ((st = scratch_get(c, x->count, &sc)) != TG_OK) return st;
  double *fv = sc.f;
  for (size_t k = 0; k < x->count; ++k)
    fv[k] = n->op[0] == 'F' ? floor(x->f[k]) : n->op[0] == 'C' ? ceil(x->f[k]) : nearbyint(x->f[k]);
  return set_values(c, n, 0, NULL, fv, x->count);
}

/* Integer v as integer type `to` holds it: the low bits, as ONNX's reference (numpy's astype)
 * converts between integer types. 0 for a uint64 above 2^63 - 1 (no int64 value). */
static int int_wrap(int32_t to, int64_t v, int64_t *r) {
  uint64_t u = (uint64_t)v;
  switch (to) {
    case ONNX_BOOL: *r = v != 0; return 1;
    case ONNX_INT8: *r = (int8_t)(uint8_t)u; return 1;
    case ONNX_UINT8: *r = (uint8_t)u; return 1;
    case ONNX_INT16: *r = (int16_t)(uint16_t)u; return 1;
    case ONNX_UINT16: *r = (uint16_t)u; return 1;
    case ONNX_INT32: *r = (int32_t)(uint32_t)u; return 1;
    case ONNX_UINT32: *r = (uint32_t)u; return 1;
    case ONNX_UINT64: *r = v; return v >= 0;
    default: *r = v; return 1;
  }
}

/* Float f as integer type `to`: truncated towards zero; 0 when that is outside the type (or f
 * is not a number), where ONNX leaves the result undefined. */
static int float_to_int(int32_t to, double f, int64_t *r) {
  if (to == ONNX_BOOL) {
    *r = f != 0;
    return 1;
  }
  double t = trunc(f);
  /* -2^63 <= t < 2^63 is exact in doubles; NaN fails both tests. */
  if (!(t >= -9223372036854775808.0 && t < 9223372036854775808.0)) return 0;
  *r = (int64_t)t;
  return int_fits(to, *r);
}

static tg_status infer_cast(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st = need_in(c, n, 0, &x);
  if (st != TG_OK || (st = need_out(c, n, 1)) != TG_OK) return st;
  int64_t to;
  if (strcmp(n->op, "CastLike") == 0) {
    onnx_value *like;
    if ((st = need_in(c, n, 1, &like)) != TG_OK) return st;
    to = like->type;
  } else {
    if ((st = attr_int(c, n, "to", -1, &to)) != TG_OK) return st;
    if (to < 0) return onnx_fail_node(c, n, TG_ERROR_PARSE, "attribute 'to' is missing");
    if (to > 255) return onnx_fail_node(c, n, TG_ERROR_PARSE, "attribute 'to' is %lld, not a data type", (long long)to);
  }
  if ((st = set_out_like(c, n, 0, (int32_t)to, x)) != TG_OK || !x->has_data) return st;
  /* Numbers and bools only (not strings, complex numbers or types this reader does not know). */
  int numeric = (to >= ONNX_FLOAT && to <= ONNX_INT64) || (to >= ONNX_BOOL && to <= ONNX_UINT64) || to == ONNX_BFLOAT16;
  if (!numeric) return TG_OK;
  int to_float = onnx_type_is_float((int32_t)to);
  scratch sc;
  if ((st = scratch_get(c, x->count, &sc)) != TG_OK) return st;
  for (size_t k = 0; k < x->count; ++k) {
    if (to_float && x->is_float) {
      sc.f[k] = float_of_type((int32_t)to, x->f[k]);
    } else if (to_float) {
      /* int64 -> float32 rounds once (a detour through double could round twice). */
      sc.f[k] = to == ONNX_FLOAT ? (double)(float)x->i[k] : float_of_type((int32_t)to, (double)x->i[k]);
    } else if (x->is_float ? !float_to_int((int32_t)to, x->f[k], &sc.i[k]) : !int_wrap((int32_t)to, x->i[k], &sc.i[k])) {
      if (x->is_float)
        return cannot_fold(c, n, TG_ERROR_UNSUPPORTED, "%g is not a value of %s", x->f[k], onnx_type_name((int32_t)to));
      return cannot_fold(c, n, TG_ERROR_UNSUPPORTED, "%lld is not a value of %s", (long long)x->i[k],
                         onnx_type_name((int32_t)to));
    }
  }
  return set_values(c, n, 0, to_float ? NULL : sc.i, to_float ? sc.f : NULL, x->count);
}

/* BatchNormalization: Y like X; training-mode outputs are per-channel [C]. */
static tg_status infer_batchnorm(onnx_ctx *c, onnx_node *n) {
  tg_status st = infer_same(c, n);
  if (st != TG_OK) return st;
  onnx_value *x = n->in[0];
  int64_t ch = x->rank >= 2 ? x->dims[1] : 1;
  for (size_t k = 1; k < n->nout; ++k)
    if ((st = set_out(c, n, k, x->type, 1, &ch)) != TG_OK) return st;
  return TG_OK;
}

/* LayerNormalization: Y like X; Mean and InvStdDev keep the dims before `axis`, 1 after. */
static tg_status infer_layernorm(onnx_ctx *c, onnx_node *n) {
  tg_status st = infer_same(c, n);
  if (st != TG_OK) return st;
  onnx_value *x = n->in[0];
  int64_t axis;
  uint32_t a = 0;
  if ((st = attr_int(c, n, "axis", -1, &axis)) != TG_OK || (st = norm_axis(c, n, axis, x->rank, &a)) != TG_OK)
    return st;
  int64_t d[TG_MAX_RANK];
  for (uint32_t k = 0; k < x->rank; ++k) d[k] = k < a ? x->dims[k] : 1;
  for (size_t k = 1; k < n->nout; ++k)
    if ((st = set_out(c, n, k, ONNX_FLOAT, x->rank, d)) != TG_OK) return st;
  return TG_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Elementwise with broadcasting. */

static arith_op arith_of(const char *op) {
  static const struct { const char *name; arith_op op; } k[] = {
      {"Add", OP_ADD}, {"Sub", OP_SUB}, {"Mul", OP_MUL}, {"Div", OP_DIV}, {"Mod", OP_MOD},
      {"Max", OP_MAX}, {"Min", OP_MIN}, {"Equal", OP_EQUAL}, {"Less", OP_LESS},
      {"Greater", OP_GREATER}, {"LessOrEqual", OP_LESS_EQ}, {"GreaterOrEqual", OP_GREATER_EQ},
      {"Pow", OP_POW}, {"And", OP_AND}, {"Or", OP_OR}, {"Xor", OP_XOR}, {"Sum", OP_ADD}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; ++i)
    if (strcmp(op, k[i].name) == 0) return k[i].op;
  return OP_NONE;
}

static tg_status infer_broadcast(onnx_ctx *c, onnx_node *n) {
  tg_status st = need_out(c, n, 1);
  if (st != TG_OK) return st;
  if (in_at(n, 0) == NULL) return onnx_fail_node(c, n, TG_ERROR_PARSE, "input 0 is required but absent");
  uint32_t rank = 0;
  int64_t dims[TG_MAX_RANK];
  if ((st = broadcast(c, n, 0, n->nin, &rank, dims)) != TG_OK) return st;
  arith_op op = arith_of(n->op);
  int32_t type = in_at(n, 0)->type;
  if (is_compare(op) || op == OP_AND || op == OP_OR || op == OP_XOR) type = ONNX_BOOL;
  if ((st = set_out(c, n, 0, type, rank, dims)) != TG_OK) return st;
  if (op == OP_MOD) {
    int64_t fmod_attr;
    if ((st = attr_int(c, n, "fmod", 0, &fmod_attr)) != TG_OK) return st;
    /* Floating-point Mod is defined with fmod = 1 only. */
    if (fmod_attr) op = OP_FMOD;
    else if (in_at(n, 0)->is_float) op = OP_NONE;
  }
  int variadic = op == OP_MAX || op == OP_MIN || strcmp(n->op, "Sum") == 0;
  if (op != OP_NONE && (n->nin == 2 || (variadic && n->nin >= 1))) return fold_elementwise(c, n, op);
  return TG_OK;
}

static tg_status infer_where(onnx_ctx *c, onnx_node *n) {
  onnx_value *cond, *x, *y;
  tg_status st;
  if ((st = need_in(c, n, 0, &cond)) != TG_OK || (st = need_in(c, n, 1, &x)) != TG_OK ||
      (st = need_in(c, n, 2, &y)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK)
    return st;
  uint32_t rank = 0;
  int64_t dims[TG_MAX_RANK];
  if ((st = broadcast(c, n, 0, 3, &rank, dims)) != TG_OK ||
      (st = set_out(c, n, 0, x->type, rank, dims)) != TG_OK)
    return st;
  onnx_value *o = n->out[0];
  if (!cond->has_data || cond->is_float || !x->has_data || !y->has_data || x->is_float != y->is_float)
    return TG_OK;
  uint64_t count;
  if (onnx_element_count(o->dims, o->rank, &count) != 0 || count > ONNX_MAX_FOLD) return TG_OK;
  scratch sc;
  if ((st = scratch_get(c, (size_t)count, &sc)) != TG_OK) return st;
  for (size_t k = 0; k < (size_t)count; ++k) {
    const onnx_value *from = cond->i[broadcast_index(cond, rank, dims, k)] ? x : y;
    size_t at = broadcast_index(from, rank, dims, k);
    if (from->is_float) sc.f[k] = from->f[at];
    else sc.i[k] = from->i[at];
  }
  return set_values(c, n, 0, x->is_float ? NULL : sc.i, x->is_float ? sc.f : NULL, (size_t)count);
}

/* ------------------------------------------------------------------------------------------ */
/* Convolution and pooling. */

typedef struct window {
  uint32_t spatial;
  int64_t kernel[TG_MAX_RANK], stride[TG_MAX_RANK], dilation[TG_MAX_RANK];
  int64_t pad_begin[TG_MAX_RANK], pad_end[TG_MAX_RANK];
  int auto_pad;  /* 0 NOTSET, 1 SAME_UPPER, 2 SAME_LOWER, 3 VALID */
} window;

/* Read kernel_shape (or `kernel` when given), strides, dilations, pads, auto_pad. */
static tg_status read_window(onnx_ctx *c, const onnx_node *n, uint32_t spatial, const int64_t *kernel,
                             window *w) {
  memset(w, 0, sizeof *w);
  w->spatial = spatial;
  const int64_t *v;
  size_t cnt;
  int present;
  tg_status st = attr_ints(c, n, "kernel_shape", &v, &cnt, &present);
  if (st != TG_OK) return st;
  if (present) {
    if (cnt != spatial)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "kernel_shape has %zu values for %u spatial dimensions", cnt, spatial);
    for (uint32_t k = 0; k < spatial; ++k) w->kernel[k] = v[k];
  } else if (kernel) {
    for (uint32_t k = 0; k < spatial; ++k) w->kernel[k] = kernel[k];
  } else {
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "attribute 'kernel_shape' is missing");
  }
  static const char *const names[] = {"strides", "dilations"};
  int64_t *dst[] = {w->stride, w->dilation};
  for (int a = 0; a < 2; ++a) {
    if ((st = attr_ints(c, n, names[a], &v, &cnt, &present)) != TG_OK) return st;
    if (present && cnt != spatial)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "%s has %zu values for %u spatial dimensions", names[a], cnt, spatial);
    for (uint32_t k = 0; k < spatial; ++k) dst[a][k] = present ? v[k] : 1;
  }
  if ((st = attr_ints(c, n, "pads", &v, &cnt, &present)) != TG_OK) return st;
  if (present && cnt != 2 * (size_t)spatial)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "pads has %zu values for %u spatial dimensions", cnt, spatial);
  for (uint32_t k = 0; k < spatial; ++k) {
    w->pad_begin[k] = present ? v[k] : 0;
    w->pad_end[k] = present ? v[spatial + k] : 0;
  }
  /* Window parameters up to 2^31 keep every sum and product below in 64 bits. */
  for (uint32_t k = 0; k < spatial; ++k) {
    if (w->kernel[k] < 1 || w->kernel[k] > ONNX_MAX_WINDOW || w->stride[k] < 1 || w->stride[k] > ONNX_MAX_WINDOW ||
        w->dilation[k] < 1 || w->dilation[k] > ONNX_MAX_WINDOW)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "kernel %lld, stride %lld, dilation %lld: each must be in 1..2^31",
                            (long long)w->kernel[k], (long long)w->stride[k], (long long)w->dilation[k]);
    if (w->pad_begin[k] < 0 || w->pad_end[k] < 0 || w->pad_begin[k] > ONNX_MAX_WINDOW || w->pad_end[k] > ONNX_MAX_WINDOW)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "pads %lld, %lld: each must be in 0..2^31",
                            (long long)w->pad_begin[k], (long long)w->pad_end[k]);
  }
  int eq;
  static const char *const modes[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
  w->auto_pad = -1;
  for (int m = 0; m < 4 && w->auto_pad < 0; ++m) {
    if ((st = attr_string_is(c, n, "auto_pad", "NOTSET", modes[m], &eq)) != TG_OK) return st;
    if (eq) w->auto_pad = m;
  }
  if (w->auto_pad < 0) return onnx_fail_node(c, n, TG_ERROR_PARSE, "attribute 'auto_pad' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  return TG_OK;
}

/* Output size of a sliding window over `in` (conv and pooling); ceil_mode rounds up. */
static tg_status window_out(onnx_ctx *c, const onnx_node *n, const window *w, uint32_t k, int64_t in,
                            int ceil_mode, int64_t *out) {
  /* in <= 2^62 and window parameters <= 2^31: no sum or product below leaves 64 bits. */
  uint64_t span = (uint64_t)(w->kernel[k] - 1) * (uint64_t)w->dilation[k] + 1; /* < 2^62 */
  int64_t s = w->stride[k];
  if (w->auto_pad == 1 || w->auto_pad == 2) {
    *out = in / s + (in % s != 0);
    return TG_OK;
  }
  int64_t padded = in;
  if (w->auto_pad == 0) padded = in + w->pad_begin[k] + w->pad_end[k];  /* each <= 2^62 */
  if (padded < (int64_t)span)
    return onnx_fail_node(c, n, TG_ERROR_PARSE,
                          "spatial dimension %u: window of %llu (kernel %lld, dilation %lld) is larger than the padded input (%lld)",
                          k, (unsigned long long)span, (long long)w->kernel[k], (long long)w->dilation[k], (long long)padded);
  int64_t room = padded - (int64_t)span;
  int64_t o = room / s + 1;
  if (ceil_mode && room % s != 0) {
    o += 1;
    /* The last window must start inside the input or its left padding. */
    if ((o - 1) * s >= in + w->pad_begin[k]) o -= 1;
  }
  *out = o;
  return TG_OK;
}

static tg_status infer_conv(onnx_ctx *c, onnx_node *n) {
  onnx_value *x, *wt;
  tg_status st;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_in(c, n, 1, &wt)) != TG_OK ||
      (st = need_out(c, n, 1)) != TG_OK)
    return st;
  if (x->rank < 3 || wt->rank != x->rank)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "input rank %u and weight rank %u: both must be the same, at least 3",
                          x->rank, wt->rank);
  int64_t group;
  if ((st = attr_int(c, n, "group", 1, &group)) != TG_OK) return st;
  if (group < 1 || group > ONNX_MAX_DIM) return onnx_fail_node(c, n, TG_ERROR_PARSE, "group %lld is not positive", (long long)group);
  uint64_t in_ch;
  if (!tg__mul_u64((uint64_t)wt->dims[1], (uint64_t)group, &in_ch) || in_ch != (uint64_t)x->dims[1])
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "input has %lld channels but the weights take %lld x group %lld",
                          (long long)x->dims[1], (long long)wt->dims[1], (long long)group);
  uint32_t sp = x->rank - 2;
  window w;
  if ((st = read_window(c, n, sp, wt->dims + 2, &w)) != TG_OK) return st;
  int64_t d[TG_MAX_RANK];
  d[0] = x->dims[0];
  d[1] = wt->dims[0];
  for (uint32_t k = 0; k < sp; ++k) {
    if (w.kernel[k] != wt->dims[2 + k])
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "kernel_shape %lld differs from the weights' %lld",
                            (long long)w.kernel[k], (long long)wt->dims[2 + k]);
    if ((st = window_out(c, n, &w, k, x->dims[2 + k], 0, &d[2 + k])) != TG_OK) return st;
  }
  return set_out(c, n, 0, x->type, x->rank, d);
}

static tg_status infer_conv_transpose(onnx_ctx *c, onnx_node *n) {
  onnx_value *x, *wt;
  tg_status st;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_in(c, n, 1, &wt)) != TG_OK ||
      (st = need_out(c, n, 1)) != TG_OK)
    return st;
  if (x->rank < 3 || wt->rank != x->rank)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "input rank %u and weight rank %u: both must be the same, at least 3",
                          x->rank, wt->rank);
  int64_t group;
  if ((st = attr_int(c, n, "group", 1, &group)) != TG_OK) return st;
  if (group < 1 || group > ONNX_MAX_DIM) return onnx_fail_node(c, n, TG_ERROR_PARSE, "group %lld is not positive", (long long)group);
  if (wt->dims[0] != x->dims[1])
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "input has %lld channels but the weights take %lld",
                          (long long)x->dims[1], (long long)wt->dims[0]);
  uint32_t sp = x->rank - 2;
  window w;
  if ((st = read_window(c, n, sp, wt->dims + 2, &w)) != TG_OK) return st;
  int64_t d[TG_MAX_RANK];
  uint64_t out_ch;
  if (!tg__mul_u64((uint64_t)wt->dims[1], (uint64_t)group, &out_ch) || out_ch > (uint64_t)ONNX_MAX_DIM)
    return onnx_fail_node(c, n, TG_ERROR_OVERFLOW, "output channels overflow");
  d[0] = x->dims[0];
  d[1] = (int64_t)out_ch;
  const int64_t *os, *op;
  size_t nos, nop;
  int has_os, has_op;
  if ((st = attr_ints(c, n, "output_shape", &os, &nos, &has_os)) != TG_OK ||
      (st = attr_ints(c, n, "output_padding", &op, &nop, &has_op)) != TG_OK)
    return st;
  if (has_op && nop != sp)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "output_padding has %zu values for %u spatial dimensions", nop, sp);
  if (has_os) {
    if (nos != sp && nos != x->rank)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "output_shape has %zu values for %u spatial dimensions", nos, sp);
    for (uint32_t k = 0; k < sp; ++k) d[2 + k] = os[nos - sp + k];
    return set_out(c, n, 0, x->type, x->rank, d);
  }
  for (uint32_t k = 0; k < sp; ++k) {
    int64_t in = x->dims[2 + k], pad = has_op ? op[k] : 0;
    if (pad < 0 || pad > ONNX_MAX_WINDOW) return onnx_fail_node(c, n, TG_ERROR_PARSE, "output_padding %lld is out of range", (long long)pad);
    if (w.auto_pad == 1 || w.auto_pad == 2) {
      uint64_t v;
      if (!tg__mul_u64((uint64_t)in, (uint64_t)w.stride[k], &v) || v > (uint64_t)ONNX_MAX_DIM)
        return onnx_fail_node(c, n, TG_ERROR_OVERFLOW, "spatial dimension %u overflows", k);
      d[2 + k] = (int64_t)v;
      continue;
    }
    /* stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 - pads */
    uint64_t a, b;
    if (in == 0) return onnx_fail_node(c, n, TG_ERROR_PARSE, "spatial dimension %u is 0", k);
    if (!tg__mul_u64((uint64_t)(in - 1), (uint64_t)w.stride[k], &a) ||
        !tg__mul_u64((uint64_t)(w.kernel[k] - 1), (uint64_t)w.dilation[k], &b) || !tg__add_u64(a, b, &a) ||
        !tg__add_u64(a, (uint64_t)pad + 1, &a) || a > (uint64_t)ONNX_MAX_DIM + ((uint64_t)ONNX_MAX_WINDOW << 1))
      return onnx_fail_node(c, n, TG_ERROR_OVERFLOW, "spatial dimension %u overflows", k);
    int64_t v = (int64_t)a;
    if (w.auto_pad == 0) v -= w.pad_begin[k] + w.pad_end[k];
    if (v < 1) return onnx_fail_node(c, n, TG_ERROR_PARSE, "spatial dimension %u would be %lld", k, (long long)v);
    d[2 + k] = v;
  }
  return set_out(c, n, 0, x->type, x->rank, d);
}

static tg_status infer_pool(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK) return st;
  if (x->rank < 3) return onnx_fail_node(c, n, TG_ERROR_PARSE, "input rank %u: at least 3 needed", x->rank);
  uint32_t sp = x->rank - 2;
  window w;
  int64_t ceil_mode;
  if ((st = read_window(c, n, sp, NULL, &w)) != TG_OK || (st = attr_int(c, n, "ceil_mode", 0, &ceil_mode)) != TG_OK)
    return st;
  int64_t d[TG_MAX_RANK];
  d[0] = x->dims[0];
  d[1] = x->dims[1];
  for (uint32_t k = 0; k < sp; ++k)
    if ((st = window_out(c, n, &w, k, x->dims[2 + k], ceil_mode != 0, &d[2 + k])) != TG_OK) return st;
  if ((st = set_out(c, n, 0, x->type, x->rank, d)) != TG_OK) return st;
  return set_out(c, n, 1, ONNX_INT64, x->rank, d); /* MaxPool's Indices */
}

static tg_status infer_global_pool(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK) return st;
  if (x->rank < 2) return onnx_fail_node(c, n, TG_ERROR_PARSE, "input rank %u: at least 2 needed", x->rank);
  int64_t d[TG_MAX_RANK];
  for (uint32_t k = 0; k < x->rank; ++k) d[k] = k < 2 ? x->dims[k] : 1;
  return set_out(c, n, 0, x->type, x->rank, d);
}

/* ------------------------------------------------------------------------------------------ */
/* Matrix products. */

static tg_status infer_matmul(onnx_ctx *c, onnx_node *n) {
  onnx_value *a, *b;
  tg_status st;
  if ((st = need_in(c, n, 0, &a)) != TG_OK || (st = need_in(c, n, 1, &b)) != TG_OK ||
      (st = need_out(c, n, 1)) != TG_OK)
    return st;
  if (a->rank == 0 || b->rank == 0) return onnx_fail_node(c, n, TG_ERROR_PARSE, "inputs must not be scalars");
  /* numpy.matmul: 1-D operands become matrices, and lose that dimension again. */
  int64_t ad[TG_MAX_RANK + 1], bd[TG_MAX_RANK + 1];
  uint32_t ar = a->rank, br = b->rank;
  if (ar == 1) { ad[0] = 1; ad[1] = a->dims[0]; ar = 2; } else memcpy(ad, a->dims, ar * sizeof *ad);
  if (br == 1) { bd[0] = b->dims[0]; bd[1] = 1; br = 2; } else memcpy(bd, b->dims, br * sizeof *bd);
  if (ad[ar - 1] != bd[br - 2])
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "inner dimensions differ (%lld vs %lld)",
                          (long long)ad[ar - 1], (long long)bd[br - 2]);
  uint32_t batch = (ar > br ? ar : br) - 2;
  int64_t d[TG_MAX_RANK + 2];
  for (uint32_t k = 0; k < batch; ++k) {
    int32_t ia = (int32_t)k - (int32_t)(batch - (ar - 2)), ib = (int32_t)k - (int32_t)(batch - (br - 2));
    int64_t x = ia >= 0 ? ad[ia] : 1, y = ib >= 0 ? bd[ib] : 1;
    if (x != y && x != 1 && y != 1)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "batch dimensions %lld and %lld do not broadcast", (long long)x, (long long)y);
    d[k] = x == 1 ? y : x;
  }
  uint32_t r = batch;
  if (a->rank != 1) d[r++] = ad[ar - 2];
  if (b->rank != 1) d[r++] = bd[br - 1];
  return set_out(c, n, 0, a->type, r, d);
}

static tg_status infer_gemm(onnx_ctx *c, onnx_node *n) {
  onnx_value *a, *b;
  tg_status st;
  int64_t ta, tb;
  if ((st = need_in(c, n, 0, &a)) != TG_OK || (st = need_in(c, n, 1, &b)) != TG_OK ||
      (st = need_out(c, n, 1)) != TG_OK || (st = attr_int(c, n, "transA", 0, &ta)) != TG_OK ||
      (st = attr_int(c, n, "transB", 0, &tb)) != TG_OK)
    return st;
  if (a->rank != 2 || b->rank != 2)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "inputs must be matrices (ranks %u and %u)", a->rank, b->rank);
  int64_t m = ta ? a->dims[1] : a->dims[0], ka = ta ? a->dims[0] : a->dims[1];
  int64_t kb = tb ? b->dims[1] : b->dims[0], nn = tb ? b->dims[0] : b->dims[1];
  if (ka != kb)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "inner dimensions differ (%lld vs %lld)", (long long)ka, (long long)kb);
  int64_t d[2] = {m, nn};
  return set_out(c, n, 0, a->type, 2, d);
}

/* LSTM, GRU and RNN: X is [seq, batch, input] ([batch, seq, input] with layout 1, opset 14); W
 * is [directions, gates x hidden, input]. Y is [seq, directions, batch, hidden] ([batch, seq,
 * directions, hidden]); Y_h (and LSTM's Y_c) [directions, batch, hidden] ([batch, directions,
 * hidden]). */
static tg_status infer_recurrent(onnx_ctx *c, onnx_node *n) {
  onnx_value *x, *w;
  tg_status st;
  int64_t hidden, layout = 0;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_in(c, n, 1, &w)) != TG_OK ||
      (st = attr_int(c, n, "hidden_size", -1, &hidden)) != TG_OK)
    return st;
  if (n->opset >= 14 && (st = attr_int(c, n, "layout", 0, &layout)) != TG_OK) return st;
  if (x->rank != 3 || w->rank != 3)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "X and W must have rank 3 (ranks %u and %u)", x->rank, w->rank);
  int64_t gates = strcmp(n->op, "LSTM") == 0 ? 4 : strcmp(n->op, "GRU") == 0 ? 3 : 1;
  if (hidden < 0) hidden = w->dims[1] / gates;
  if (hidden * gates != w->dims[1])
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "W has %lld rows, not %lld gates x hidden_size %lld",
                          (long long)w->dims[1], (long long)gates, (long long)hidden);
  int64_t dirs = w->dims[0], seq = layout ? x->dims[1] : x->dims[0], batch = layout ? x->dims[0] : x->dims[1];
  if (dirs != 1 && dirs != 2)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "W has %lld directions", (long long)dirs);
  int64_t y[4] = {seq, dirs, batch, hidden}, yl[4] = {batch, seq, dirs, hidden};
  int64_t h[3] = {dirs, batch, hidden}, hl[3] = {batch, dirs, hidden};
  if ((st = set_out(c, n, 0, x->type, 4, layout ? yl : y)) != TG_OK) return st;
  for (size_t k = 1; k < n->nout && k < 3; ++k)
    if ((st = set_out(c, n, k, x->type, 3, layout ? hl : h)) != TG_OK) return st;
  return TG_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Shape manipulation. */

static tg_status infer_shape(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK) return st;
  int64_t start = 0, end = x->rank;
  if ((st = attr_int(c, n, "start", 0, &start)) != TG_OK || (st = attr_int(c, n, "end", x->rank, &end)) != TG_OK)
    return st;
  int64_t r = x->rank;
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = start < 0 ? 0 : start > r ? r : start;
  end = end < 0 ? 0 : end > r ? r : end;
  int64_t len = end > start ? end - start : 0;
  if ((st = set_out(c, n, 0, ONNX_INT64, 1, &len)) != TG_OK) return st;
  return set_values(c, n, 0, x->dims + start, NULL, (size_t)len);
}

static tg_status infer_size(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK) return st;
  uint64_t count;
  (void)onnx_element_count(x->dims, x->rank, &count);
  scratch sc;
  if ((st = set_out(c, n, 0, ONNX_INT64, 0, NULL)) != TG_OK || (st = scratch_get(c, 1, &sc)) != TG_OK) return st;
  sc.i[0] = (int64_t)count;
  return set_values(c, n, 0, sc.i, NULL, 1);
}

static tg_status infer_reshape(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK) return st;
  const int64_t *shape;
  size_t cnt;
  int present;
  if (n->opset < 5) {
    if ((st = attr_ints(c, n, "shape", &shape, &cnt, &present)) != TG_OK) return st;
    if (!present) return onnx_fail_node(c, n, TG_ERROR_PARSE, "attribute 'shape' is missing");
  } else if ((st = in_ints(c, n, 1, "shape", &shape, &cnt)) != TG_OK) {
    return st;
  }
  if (cnt > TG_MAX_RANK)
    return onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED, "target rank %zu exceeds the maximum of %d", cnt, TG_MAX_RANK);
  int64_t allowzero;
  if ((st = attr_int(c, n, "allowzero", 0, &allowzero)) != TG_OK) return st;
  int64_t d[TG_MAX_RANK];
  int infer_at = -1;
  uint64_t known = 1, total;
  if (onnx_element_count(x->dims, x->rank, &total) != 0) total = 0;
  for (size_t k = 0; k < cnt; ++k) {
    int64_t v = shape[k];
    if (v == 0 && !allowzero) {
      if (k >= x->rank)
        return onnx_fail_node(c, n, TG_ERROR_PARSE, "shape entry %zu is 0 (copy) but the input has rank %u", k, x->rank);
      v = x->dims[k];
    }
    if (v == -1) {
      if (infer_at >= 0) return onnx_fail_node(c, n, TG_ERROR_PARSE, "shape has more than one -1");
      infer_at = (int)k;
      d[k] = 1;
      continue;
    }
    if (v < 0 || v > ONNX_MAX_DIM)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "shape entry %zu is %lld", k, (long long)v);
    d[k] = v;
    if (!tg__mul_u64(known, (uint64_t)v, &known) || known > (uint64_t)INT64_MAX)
      return onnx_fail_node(c, n, TG_ERROR_OVERFLOW, "target shape has more elements than fit in 63 bits");
  }
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "cannot infer the -1 entry: %llu elements into blocks of %llu",
                            (unsigned long long)total, (unsigned long long)known);
    d[infer_at] = (int64_t)(total / known);
  } else if (known != total) {
    char s1[96], s2[96];
    shape_text(x->dims, x->rank, s1, sizeof s1);
    shape_text(d, (uint32_t)cnt, s2, sizeof s2);
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "cannot reshape %s (%llu elements) to %s", s1,
                          (unsigned long long)total, s2);
  }
  if ((st = set_out(c, n, 0, x->type, (uint32_t)cnt, d)) != TG_OK) return st;
  return pass_values(c, n, x);
}

static tg_status infer_flatten(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  int64_t axis;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK ||
      (st = attr_int(c, n, "axis", 1, &axis)) != TG_OK)
    return st;
  if (axis < -(int64_t)x->rank || axis > (int64_t)x->rank)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "axis %lld is out of range for rank %u", (long long)axis, x->rank);
  if (axis < 0) axis += x->rank;
  uint64_t outer, inner;
  (void)onnx_element_count(x->dims, (uint32_t)axis, &outer);
  (void)onnx_element_count(x->dims + axis, x->rank - (uint32_t)axis, &inner);
  int64_t d[2] = {(int64_t)outer, (int64_t)inner};
  if ((st = set_out(c, n, 0, x->type, 2, d)) != TG_OK) return st;
  return pass_values(c, n, x);
}

static tg_status infer_transpose(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK) return st;
  const int64_t *perm;
  size_t cnt;
  int present;
  if ((st = attr_ints(c, n, "perm", &perm, &cnt, &present)) != TG_OK) return st;
  if (present && cnt != x->rank)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "perm has %zu entries for rank %u", cnt, x->rank);
  int64_t d[TG_MAX_RANK];
  unsigned used = 0;
  for (uint32_t k = 0; k < x->rank; ++k) {
    int64_t p = present ? perm[k] : (int64_t)(x->rank - 1 - k);
    if (p < 0 || p >= (int64_t)x->rank || (used & (1u << p)))
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "perm is not a permutation of 0..%u", x->rank - 1);
    used |= 1u << p;
    d[k] = x->dims[p];
  }
  if ((st = set_out(c, n, 0, x->type, x->rank, d)) != TG_OK) return st;
  if (x->rank <= 1) return pass_values(c, n, x);
  if (!x->has_data) return TG_OK;
  /* Output element e reads input coordinates permuted back: stride of input axis perm[k]. */
  size_t in_stride[TG_MAX_RANK], stride = 1;
  for (uint32_t k = x->rank; k-- > 0;) {
    in_stride[k] = stride;
    stride *= (size_t)x->dims[k];
  }
  scratch sc;
  if ((st = scratch_get(c, x->count, &sc)) != TG_OK) return st;
  for (size_t e = 0; e < x->count; ++e) {
    size_t at = e, src = 0;
    for (uint32_t k = x->rank; k-- > 0;) {
      int64_t p = present ? perm[k] : (int64_t)(x->rank - 1 - k);
      src += (at % (size_t)d[k]) * in_stride[p];
      at /= (size_t)d[k];
    }
    if (x->is_float) sc.f[e] = x->f[src];
    else sc.i[e] = x->i[src];
  }
  return set_values(c, n, 0, x->is_float ? NULL : sc.i, x->is_float ? sc.f : NULL, x->count);
}

/* Axes from an attribute (older opsets) or input 1 (newer). `*present` = 0 when neither. */
static tg_status axes_of(onnx_ctx *c, const onnx_node *n, int64_t input_since, const int64_t **axes,
                         size_t *count, int *present) {
  if (n->opset >= input_since) {
    *present = in_at(n, 1) != NULL;
    *axes = NULL;
    *count = 0;
    if (!*present) return TG_OK;
    return in_ints(c, n, 1, "axes", axes, count);
  }
  return attr_ints(c, n, "axes", axes, count, present);
}

static tg_status infer_squeeze(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK) return st;
  const int64_t *axes;
  size_t cnt;
  int present;
  if ((st = axes_of(c, n, 13, &axes, &cnt, &present)) != TG_OK) return st;
  unsigned drop = 0;
  for (size_t k = 0; k < cnt; ++k) {
    uint32_t a = 0;
    if ((st = norm_axis(c, n, axes[k], x->rank, &a)) != TG_OK) return st;
    if (x->dims[a] != 1)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "cannot squeeze dimension %u of size %lld", a, (long long)x->dims[a]);
    drop |= 1u << a;
  }
  if (!present)
    for (uint32_t a = 0; a < x->rank; ++a)
      if (x->dims[a] == 1) drop |= 1u << a;
  int64_t d[TG_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t a = 0; a < x->rank; ++a)
    if (!(drop & (1u << a))) d[r++] = x->dims[a];
  if ((st = set_out(c, n, 0, x->type, r, d)) != TG_OK) return st;
  return pass_values(c, n, x);
}

static tg_status infer_unsqueeze(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK) return st;
  const int64_t *axes;
  size_t cnt;
  int present;
  if ((st = axes_of(c, n, 13, &axes, &cnt, &present)) != TG_OK) return st;
  if (!present) return onnx_fail_node(c, n, TG_ERROR_PARSE, "axes are missing");
  if (x->rank + cnt > TG_MAX_RANK)
    return onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED, "output rank %zu exceeds the maximum of %d", x->rank + cnt, TG_MAX_RANK);
  uint32_t r = x->rank + (uint32_t)cnt;
  unsigned add = 0;
  for (size_t k = 0; k < cnt; ++k) {
    uint32_t a = 0;
    if ((st = norm_axis(c, n, axes[k], r, &a)) != TG_OK) return st;
    if (add & (1u << a)) return onnx_fail_node(c, n, TG_ERROR_PARSE, "axis %u is listed twice", a);
    add |= 1u << a;
  }
  int64_t d[TG_MAX_RANK];
  uint32_t src = 0;
  for (uint32_t a = 0; a < r; ++a) d[a] = (add & (1u << a)) ? 1 : x->dims[src++];
  if ((st = set_out(c, n, 0, x->type, r, d)) != TG_OK) return st;
  return pass_values(c, n, x);
}

static tg_status infer_concat(onnx_ctx *c, onnx_node *n) {
  tg_status st = need_out(c, n, 1);
  if (st != TG_OK) return st;
  onnx_value *first = NULL;
  for (size_t k = 0; k < n->nin && first == NULL; ++k) first = n->in[k];
  if (first == NULL) return onnx_fail_node(c, n, TG_ERROR_PARSE, "has no inputs");
  int64_t axis;
  uint32_t a = 0;
  if ((st = attr_int(c, n, "axis", INT64_MIN, &axis)) != TG_OK) return st;
  if (axis == INT64_MIN) {
    if (n->opset >= 4) return onnx_fail_node(c, n, TG_ERROR_PARSE, "attribute 'axis' is missing");
    axis = 1;
  }
  if ((st = norm_axis(c, n, axis, first->rank, &a)) != TG_OK) return st;
  int64_t d[TG_MAX_RANK];
  memcpy(d, first->dims, sizeof d);
  d[a] = 0;
  int all_values = 1, is_float = first->is_float;
  for (size_t k = 0; k < n->nin; ++k) {
    const onnx_value *v = n->in[k];
    if (v == NULL) continue;
    if (v->rank != first->rank)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "input %zu has rank %u, input 0 rank %u", k, v->rank, first->rank);
    for (uint32_t j = 0; j < v->rank; ++j)
      if (j != a && v->dims[j] != first->dims[j])
        return onnx_fail_node(c, n, TG_ERROR_PARSE, "input %zu dimension %u is %lld, input 0 has %lld", k, j,
                              (long long)v->dims[j], (long long)first->dims[j]);
    if (v->dims[a] > ONNX_MAX_DIM - d[a]) return onnx_fail_node(c, n, TG_ERROR_OVERFLOW, "concatenated dimension overflows");
    d[a] += v->dims[a];
    if (!v->has_data || v->is_float != is_float) all_values = 0;
  }
  if ((st = set_out(c, n, 0, first->type, first->rank, d)) != TG_OK || !all_values) return st;
  uint64_t count;
  if (onnx_element_count(d, first->rank, &count) != 0 || count > ONNX_MAX_FOLD) return TG_OK;
  /* outer blocks of (dims[a] * inner) elements from each input in turn */
  uint64_t outer = 1, inner = 1;
  for (uint32_t j = 0; j < a; ++j) outer *= (uint64_t)d[j];
  for (uint32_t j = a + 1; j < first->rank; ++j) inner *= (uint64_t)d[j];
  scratch sc;
  if ((st = scratch_get(c, (size_t)count, &sc)) != TG_OK) return st;
  int64_t *iv = sc.i;
  double *fv = sc.f;
  size_t at = 0;
  for (uint64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < n->nin; ++k) {
      const onnx_value *v = n->in[k];
      if (v == NULL) continue;
      size_t block = (size_t)((uint64_t)v->dims[a] * inner);
      for (size_t e = 0; e < block; ++e) {
        if (is_float) fv[at++] = v->f[o * block + e];
        else iv[at++] = v->i[o * block + e];
      }
    }
  return set_values(c, n, 0, is_float ? NULL : iv, is_float ? fv : NULL, at);
}

/* Values of output k: the elements of x from `first` in steps of `step`, `d` per axis (Slice,
 * Split). */
static tg_status slice_values(onnx_ctx *c, onnx_node *n, size_t k, const onnx_value *x, const int64_t *first,
                              const int64_t *step, const int64_t *d) {
  uint64_t count;
  if (!x->has_data || onnx_element_count(d, x->rank, &count) != 0 || count > ONNX_MAX_FOLD) return TG_OK;
  scratch sc;
  tg_status st = scratch_get(c, (size_t)count, &sc);
  if (st != TG_OK) return st;
  for (size_t e = 0; e < (size_t)count; ++e) {
    size_t at = e, src = 0, stride = 1;
    for (uint32_t a = x->rank; a-- > 0;) {
      size_t coord = at % (size_t)d[a];
      at /= (size_t)d[a];
      src += (size_t)(first[a] + (int64_t)coord * step[a]) * stride;
      stride *= (size_t)x->dims[a];
    }
    if (x->is_float) sc.f[e] = x->f[src];
    else sc.i[e] = x->i[src];
  }
  return set_values(c, n, k, x->is_float ? NULL : sc.i, x->is_float ? sc.f : NULL, (size_t)count);
}

static tg_status infer_split(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  int64_t axis;
  uint32_t a = 0;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK ||
      (st = attr_int(c, n, "axis", 0, &axis)) != TG_OK || (st = norm_axis(c, n, axis, x->rank, &a)) != TG_OK)
    return st;
  const int64_t *split = NULL;
  size_t cnt = 0;
  int present = 0;
  if (n->opset >= 13) {
    if (in_at(n, 1) != NULL) {
      if ((st = in_ints(c, n, 1, "split", &split, &cnt)) != TG_OK) return st;
      present = 1;
    }
  } else if (n->opset >= 2) {
    if ((st = attr_ints(c, n, "split", &split, &cnt, &present)) != TG_OK) return st;
  } else if (in_at(n, 1) != NULL) {
    if ((st = in_ints(c, n, 1, "split", &split, &cnt)) != TG_OK) return st;
    present = 1;
  } else if ((st = attr_ints(c, n, "split", &split, &cnt, &present)) != TG_OK) {
    return st;
  }
  int64_t parts = (int64_t)n->nout, num_outputs;
  if ((st = attr_int(c, n, "num_outputs", 0, &num_outputs)) != TG_OK) return st;
  int64_t dim = x->dims[a];
  int64_t d[TG_MAX_RANK];
  memcpy(d, x->dims, sizeof d);
  if (present) {
    if (cnt != n->nout)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "split lists %zu sizes for %zu outputs", cnt, n->nout);
    int64_t sum = 0;
    for (size_t k = 0; k < cnt; ++k) {
      if (split[k] < 0 || split[k] > ONNX_MAX_DIM) return onnx_fail_node(c, n, TG_ERROR_PARSE, "split size %lld", (long long)split[k]);
      if (split[k] > ONNX_MAX_DIM - sum) return onnx_fail_node(c, n, TG_ERROR_OVERFLOW, "split sizes overflow");
      sum += split[k];
    }
    if (sum != dim)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "split sizes add up to %lld, the dimension is %lld", (long long)sum, (long long)dim);
  } else {
    if (num_outputs > 0) parts = num_outputs;
    if (parts < 1 || (size_t)parts != n->nout)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "splits into %lld parts but has %zu outputs", (long long)parts, n->nout);
    if (num_outputs == 0 && dim % parts != 0)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "dimension %lld does not split into %lld equal parts", (long long)dim, (long long)parts);
  }
  /* Equal parts; opset 18's num_outputs lets the last one be smaller. */
  int64_t each = dim / parts + (dim % parts != 0), first[TG_MAX_RANK] = {0}, step[TG_MAX_RANK];
  for (uint32_t k = 0; k < TG_MAX_RANK; ++k) step[k] = 1;
  for (size_t k = 0; k < n->nout; ++k) {
    int64_t left = dim - (int64_t)k * each;
    d[a] = present ? split[k] : left < 0 ? 0 : left < each ? left : each;
    if ((st = set_out(c, n, k, x->type, x->rank, d)) != TG_OK ||
        (n->out[k] && (st = slice_values(c, n, k, x, first, step, d)) != TG_OK))
      return st;
    first[a] += d[a];
  }
  return TG_OK;
}

/* ONNX Slice bounds for one axis: the clamped start and the element count. */
static void slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *first, int64_t *count) {
  if (dim == 0) {
    /* Nothing to take (the negative-step clamps below would make [0, -1] a one-element range). */
    *first = 0;
    *count = 0;
    return;
  }
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = start < 0 ? 0 : start > dim ? dim : start;
    end = end < 0 ? 0 : end > dim ? dim : end;
    *count = end > start ? (end - start - 1) / step + 1 : 0;
  } else {
    start = start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;
    end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
    /* step < 0: (start - end) / -step rounded up; -step is at most 2^63 - 1 here */
    uint64_t s = (uint64_t)0 - (uint64_t)step;
    *count = start > end ? (int64_t)(((uint64_t)(start - end) - 1) / s + 1) : 0;
  }
  *first = start;
}

static tg_status infer_slice(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK) return st;
  const int64_t *starts, *ends, *axes = NULL, *steps = NULL;
  size_t ns, ne, na = 0, nst = 0;
  int present;
  if (n->opset < 10) {
    if ((st = attr_ints(c, n, "starts", &starts, &ns, &present)) != TG_OK) return st;
    if (!present) return onnx_fail_node(c, n, TG_ERROR_PARSE, "attribute 'starts' is missing");
    if ((st = attr_ints(c, n, "ends", &ends, &ne, &present)) != TG_OK) return st;
    if (!present) return onnx_fail_node(c, n, TG_ERROR_PARSE, "attribute 'ends' is missing");
    if ((st = attr_ints(c, n, "axes", &axes, &na, &present)) != TG_OK) return st;
  } else {
    if ((st = in_ints(c, n, 1, "starts", &starts, &ns)) != TG_OK ||
        (st = in_ints(c, n, 2, "ends", &ends, &ne)) != TG_OK)
      return st;
    if (in_at(n, 3) && (st = in_ints(c, n, 3, "axes", &axes, &na)) != TG_OK) return st;
    if (in_at(n, 4) && (st = in_ints(c, n, 4, "steps", &steps, &nst)) != TG_OK) return st;
  }
  if (ns != ne || (axes && na != ns) || (steps && nst != ns))
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "starts, ends, axes and steps differ in length (%zu, %zu, %zu, %zu)",
                          ns, ne, na, nst);
  int64_t first[TG_MAX_RANK], step_of[TG_MAX_RANK], d[TG_MAX_RANK];
  unsigned seen = 0;
  for (uint32_t k = 0; k < x->rank; ++k) {
    first[k] = 0;
    step_of[k] = 1;
    d[k] = x->dims[k];
  }
  for (size_t k = 0; k < ns; ++k) {
    uint32_t a = 0;
    if ((st = norm_axis(c, n, axes ? axes[k] : (int64_t)k, x->rank, &a)) != TG_OK) return st;
    if (seen & (1u << a)) return onnx_fail_node(c, n, TG_ERROR_PARSE, "axis %u is sliced twice", a);
    seen |= 1u << a;
    int64_t step = steps ? steps[k] : 1;
    if (step == 0) return onnx_fail_node(c, n, TG_ERROR_PARSE, "step is 0");
    if (step == INT64_MIN) step = -INT64_MAX;
    slice_axis(x->dims[a], starts[k], ends[k], step, &first[a], &d[a]);
    step_of[a] = step;
  }
  if ((st = set_out(c, n, 0, x->type, x->rank, d)) != TG_OK) return st;
  return slice_values(c, n, 0, x, first, step_of, d);
}

static tg_status infer_gather(onnx_ctx *c, onnx_node *n) {
  onnx_value *x, *idx;
  tg_status st;
  int64_t axis;
  uint32_t a = 0;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_in(c, n, 1, &idx)) != TG_OK ||
      (st = need_out(c, n, 1)) != TG_OK || (st = attr_int(c, n, "axis", 0, &axis)) != TG_OK ||
      (st = norm_axis(c, n, axis, x->rank, &a)) != TG_OK)
    return st;
  if (x->rank + idx->rank - 1 > TG_MAX_RANK)
    return onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED, "output rank %u exceeds the maximum of %d", x->rank + idx->rank - 1, TG_MAX_RANK);
  int64_t d[TG_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t k = 0; k < a; ++k) d[r++] = x->dims[k];
  for (uint32_t k = 0; k < idx->rank; ++k) d[r++] = idx->dims[k];
  for (uint32_t k = a + 1; k < x->rank; ++k) d[r++] = x->dims[k];
  if ((st = set_out(c, n, 0, x->type, r, d)) != TG_OK) return st;
  if (!idx->has_data || idx->is_float) return TG_OK;
  for (size_t k = 0; k < idx->count; ++k)
    if (idx->i[k] < -x->dims[a] || idx->i[k] >= x->dims[a])
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "index %lld is out of range for dimension %lld",
                            (long long)idx->i[k], (long long)x->dims[a]);
  if (!x->has_data) return TG_OK;
  uint64_t count;
  if (onnx_element_count(d, r, &count) != 0 || count > ONNX_MAX_FOLD) return TG_OK;
  uint64_t outer = 1, inner = 1;
  for (uint32_t k = 0; k < a; ++k) outer *= (uint64_t)x->dims[k];
  for (uint32_t k = a + 1; k < x->rank; ++k) inner *= (uint64_t)x->dims[k];
  scratch sc;
  if ((st = scratch_get(c, (size_t)count, &sc)) != TG_OK) return st;
  int64_t *iv = sc.i;
  double *fv = sc.f;
  size_t at = 0;
  for (uint64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < idx->count; ++k) {
      int64_t j = idx->i[k] < 0 ? idx->i[k] + x->dims[a] : idx->i[k];
      for (uint64_t e = 0; e < inner; ++e) {
        size_t src = (size_t)((o * (uint64_t)x->dims[a] + (uint64_t)j) * inner + e);
        if (x->is_float) fv[at++] = x->f[src];
        else iv[at++] = x->i[src];
      }
    }
  return set_values(c, n, 0, x->is_float ? NULL : iv, x->is_float ? fv : NULL, at);
}

static tg_status infer_gather_elements(onnx_ctx *c, onnx_node *n) {
  onnx_value *x, *idx;
  tg_status st;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_in(c, n, 1, &idx)) != TG_OK ||
      (st = need_out(c, n, 1)) != TG_OK)
    return st;
  return set_out_like(c, n, 0, x->type, idx);
}

static tg_status infer_expand(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  const int64_t *shape;
  size_t cnt;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK ||
      (st = in_ints(c, n, 1, "shape", &shape, &cnt)) != TG_OK)
    return st;
  if (cnt > TG_MAX_RANK) return onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED, "shape has %zu entries", cnt);
  onnx_value tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.rank = (uint32_t)cnt;
  for (size_t k = 0; k < cnt; ++k) {
    if (shape[k] < 0 || shape[k] > ONNX_MAX_DIM)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "shape entry %zu is %lld", k, (long long)shape[k]);
    tmp.dims[k] = shape[k];
  }
  onnx_value *save = n->in[1];
  n->in[1] = &tmp;
  uint32_t rank = 0;
  int64_t d[TG_MAX_RANK];
  st = broadcast(c, n, 0, 2, &rank, d);
  n->in[1] = save;
  if (st != TG_OK || (st = set_out(c, n, 0, x->type, rank, d)) != TG_OK) return st;
  uint64_t count;
  if (!x->has_data || onnx_element_count(d, rank, &count) != 0 || count > ONNX_MAX_FOLD) return TG_OK;
  scratch sc;
  if ((st = scratch_get(c, (size_t)count, &sc)) != TG_OK) return st;
  for (size_t e = 0; e < (size_t)count; ++e) {
    size_t at = broadcast_index(x, rank, d, e);
    if (x->is_float) sc.f[e] = x->f[at];
    else sc.i[e] = x->i[at];
  }
  return set_values(c, n, 0, x->is_float ? NULL : sc.i, x->is_float ? sc.f : NULL, (size_t)count);
}

static tg_status infer_tile(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  const int64_t *rep;
  size_t cnt;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK ||
      (st = in_ints(c, n, 1, "repeats", &rep, &cnt)) != TG_OK)
    return st;
  if (cnt != x->rank) return onnx_fail_node(c, n, TG_ERROR_PARSE, "repeats has %zu entries for rank %u", cnt, x->rank);
  int64_t d[TG_MAX_RANK];
  for (uint32_t k = 0; k < x->rank; ++k) {
    uint64_t v;
    if (rep[k] < 0 || !tg__mul_u64((uint64_t)x->dims[k], (uint64_t)rep[k], &v) || v > (uint64_t)ONNX_MAX_DIM)
      return onnx_fail_node(c, n, TG_ERROR_OVERFLOW, "repeats entry %u (%lld) is negative or overflows", k, (long long)rep[k]);
    d[k] = (int64_t)v;
  }
  if ((st = set_out(c, n, 0, x->type, x->rank, d)) != TG_OK) return st;
  uint64_t count;
  if (!x->has_data || onnx_element_count(d, x->rank, &count) != 0 || count > ONNX_MAX_FOLD) return TG_OK;
  scratch sc;
  if ((st = scratch_get(c, (size_t)count, &sc)) != TG_OK) return st;
  /* Output coordinate j of axis k reads input coordinate j mod dims[k]. */
  for (size_t e = 0; e < (size_t)count; ++e) {
    size_t at = e, src = 0, stride = 1;
    for (uint32_t k = x->rank; k-- > 0;) {
      src += (at % (size_t)d[k]) % (size_t)x->dims[k] * stride;
      at /= (size_t)d[k];
      stride *= (size_t)x->dims[k];
    }
    if (x->is_float) sc.f[e] = x->f[src];
    else sc.i[e] = x->i[src];
  }
  return set_values(c, n, 0, x->is_float ? NULL : sc.i, x->is_float ? sc.f : NULL, (size_t)count);
}

static tg_status infer_pad(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK) return st;
  const int64_t *pads, *axes = NULL;
  size_t cnt, na = 0;
  int present;
  if (n->opset < 11) {
    if ((st = attr_ints(c, n, "pads", &pads, &cnt, &present)) != TG_OK) return st;
    if (!present) return onnx_fail_node(c, n, TG_ERROR_PARSE, "attribute 'pads' is missing");
  } else {
    if ((st = in_ints(c, n, 1, "pads", &pads, &cnt)) != TG_OK) return st;
    if (in_at(n, 3) && (st = in_ints(c, n, 3, "axes", &axes, &na)) != TG_OK) return st;
  }
  size_t naxes = axes ? na : x->rank;
  if (cnt != 2 * naxes)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "pads has %zu entries for %zu axes", cnt, naxes);
  int64_t d[TG_MAX_RANK];
  memcpy(d, x->dims, sizeof d);
  for (size_t k = 0; k < naxes; ++k) {
    uint32_t a = (uint32_t)k;
    if (axes && (st = norm_axis(c, n, axes[k], x->rank, &a)) != TG_OK) return st;
    int64_t b = pads[k], e = pads[naxes + k];
    if (b < -ONNX_MAX_DIM / 4 || b > ONNX_MAX_DIM / 4 || e < -ONNX_MAX_DIM / 4 || e > ONNX_MAX_DIM / 4)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "pads %lld, %lld are out of range", (long long)b, (long long)e);
    int64_t v = x->dims[a] + b + e;  /* |pads| <= 2^60, dims <= 2^62 */
    if (v < 0) return onnx_fail_node(c, n, TG_ERROR_PARSE, "pads make dimension %u negative (%lld)", a, (long long)v);
    d[a] = v;
  }
  return set_out(c, n, 0, x->type, x->rank, d);
}

/* out = floor(in * scale), checked. */
static tg_status scale_dim(onnx_ctx *c, const onnx_node *n, int64_t in, double scale, int64_t *out) {
  double v = floor((double)in * scale);
  if (!(scale > 0) || !(v >= 0) || v > (double)ONNX_MAX_DIM)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "scale %g applied to %lld gives an invalid size", scale, (long long)in);
  *out = (int64_t)v;
  return TG_OK;
}

static tg_status infer_resize(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK) return st;
  int64_t d[TG_MAX_RANK];
  memcpy(d, x->dims, sizeof d);
  int upsample = strcmp(n->op, "Upsample") == 0;
  const double *scales = NULL;
  size_t nsc = 0;
  double scale_buf[TG_MAX_RANK];
  if (upsample && n->opset < 9) {
    const float *fs;
    int present;
    if ((st = attr_floats(c, n, "scales", &fs, &nsc, &present)) != TG_OK) return st;
    if (!present) return onnx_fail_node(c, n, TG_ERROR_PARSE, "attribute 'scales' is missing");
    if (nsc > TG_MAX_RANK) nsc = TG_MAX_RANK + 1;
    for (size_t k = 0; k < nsc && k < TG_MAX_RANK; ++k) scale_buf[k] = fs[k];
    scales = scale_buf;
  } else {
    /* Resize 10: (X, scales); 11+: (X, roi, scales, sizes); Upsample 9: (X, scales). */
    size_t scales_at = (upsample || n->opset < 11) ? 1 : 2;
    const onnx_value *sv = in_at(n, scales_at), *zv = upsample || n->opset < 11 ? NULL : in_at(n, 3);
    if (zv != NULL && zv->rank == 1 && zv->dims[0] > 0) {
      const int64_t *sizes;
      size_t nz;
      if ((st = in_ints(c, n, 3, "sizes", &sizes, &nz)) != TG_OK) return st;
      const int64_t *axes;
      size_t na;
      int has_axes;
      if ((st = attr_ints(c, n, "axes", &axes, &na, &has_axes)) != TG_OK) return st;
      size_t expect = has_axes ? na : x->rank;
      if (nz != expect) return onnx_fail_node(c, n, TG_ERROR_PARSE, "sizes has %zu entries for %zu axes", nz, expect);
      /* keep_aspect_ratio_policy (opset 18): one scale for all axes, then rounded sizes. */
      int stretch, not_larger;
      if ((st = attr_string_is(c, n, "keep_aspect_ratio_policy", "stretch", "stretch", &stretch)) != TG_OK ||
          (st = attr_string_is(c, n, "keep_aspect_ratio_policy", "stretch", "not_larger", &not_larger)) != TG_OK)
        return st;
      double ratio = not_larger ? INFINITY : 0;
      for (size_t k = 0; k < nz; ++k) {
        uint32_t a = (uint32_t)k;
        if (has_axes && (st = norm_axis(c, n, axes[k], x->rank, &a)) != TG_OK) return st;
        if (sizes[k] < 0 || sizes[k] > ONNX_MAX_DIM)
          return onnx_fail_node(c, n, TG_ERROR_PARSE, "sizes entry %zu is %lld", k, (long long)sizes[k]);
        if (stretch) {
          d[a] = sizes[k];
          continue;
        }
        if (x->dims[a] == 0) return onnx_fail_node(c, n, TG_ERROR_PARSE, "dimension %u is 0", a);
        double r = (double)sizes[k] / (double)x->dims[a];
        ratio = not_larger ? (r < ratio ? r : ratio) : (r > ratio ? r : ratio);
      }
      if (!stretch)
        for (size_t k = 0; k < nz; ++k) {
          uint32_t a = (uint32_t)k;
          if (has_axes) (void)norm_axis(c, n, axes[k], x->rank, &a);
          double v = nearbyint((double)x->dims[a] * ratio);
          if (!(v >= 0) || v > (double)ONNX_MAX_DIM) return onnx_fail_node(c, n, TG_ERROR_PARSE, "size overflows");
          d[a] = (int64_t)v;
        }
      return set_out(c, n, 0, x->type, x->rank, d);
    }
    if (sv == NULL || (sv->rank == 1 && sv->dims[0] == 0))
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "neither scales nor sizes are given");
    if ((st = in_floats(c, n, scales_at, "scales", &scales, &nsc)) != TG_OK) return st;
  }
  const int64_t *axes = NULL;
  size_t na = 0;
  int has_axes = 0;
  if (!upsample && (st = attr_ints(c, n, "axes", &axes, &na, &has_axes)) != TG_OK) return st;
  size_t expect = has_axes ? na : x->rank;
  if (nsc != expect) return onnx_fail_node(c, n, TG_ERROR_PARSE, "scales has %zu entries for %zu axes", nsc, expect);
  for (size_t k = 0; k < nsc; ++k) {
    uint32_t a = (uint32_t)k;
    if (has_axes && (st = norm_axis(c, n, axes[k], x->rank, &a)) != TG_OK) return st;
    if ((st = scale_dim(c, n, x->dims[a], scales[k], &d[a])) != TG_OK) return st;
  }
  return set_out(c, n, 0, x->type, x->rank, d);
}

static tg_status infer_depth_space(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  int64_t bs;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK ||
      (st = attr_int(c, n, "blocksize", 0, &bs)) != TG_OK)
    return st;
  if (x->rank != 4) return onnx_fail_node(c, n, TG_ERROR_PARSE, "input rank %u: 4 needed", x->rank);
  if (bs < 1 || bs > 65536) return onnx_fail_node(c, n, TG_ERROR_PARSE, "blocksize %lld is out of range", (long long)bs);
  int64_t d[4] = {x->dims[0], x->dims[1], x->dims[2], x->dims[3]};
  if (strcmp(n->op, "DepthToSpace") == 0) {
    if (d[1] % (bs * bs) != 0)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "%lld channels do not divide by blocksize^2 %lld", (long long)d[1], (long long)(bs * bs));
    if (x->dims[2] > ONNX_MAX_DIM / bs || x->dims[3] > ONNX_MAX_DIM / bs)
      return onnx_fail_node(c, n, TG_ERROR_OVERFLOW, "spatial dimensions overflow");
    d[1] /= bs * bs;
    d[2] *= bs;
    d[3] *= bs;
  } else {
    if (d[2] % bs != 0 || d[3] % bs != 0)
      return onnx_fail_node(c, n, TG_ERROR_PARSE, "spatial dimensions %lldx%lld do not divide by blocksize %lld",
                            (long long)d[2], (long long)d[3], (long long)bs);
    if (x->dims[1] > ONNX_MAX_DIM / (bs * bs)) return onnx_fail_node(c, n, TG_ERROR_OVERFLOW, "channels overflow");
    d[1] *= bs * bs;
    d[2] /= bs;
    d[3] /= bs;
  }
  return set_out(c, n, 0, x->type, 4, d);
}

/* ------------------------------------------------------------------------------------------ */
/* Reductions. */

static tg_status infer_reduce(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK) return st;
  int64_t keep, noop;
  if ((st = attr_int(c, n, "keepdims", 1, &keep)) != TG_OK ||
      (st = attr_int(c, n, "noop_with_empty_axes", 0, &noop)) != TG_OK)
    return st;
  /* Axes moved from an attribute to an input in opset 13 (ReduceSum) and 18 (the others). */
  int64_t since = strcmp(n->op, "ReduceSum") == 0 ? 13 : 18;
  const int64_t *axes;
  size_t cnt;
  int present;
  if ((st = axes_of(c, n, since, &axes, &cnt, &present)) != TG_OK) return st;
  unsigned mask = 0;
  for (size_t k = 0; k < cnt; ++k) {
    uint32_t a = 0;
    if ((st = norm_axis(c, n, axes[k], x->rank, &a)) != TG_OK) return st;
    mask |= 1u << a;
  }
  if (cnt == 0) {
    if (noop) return (st = set_out_like(c, n, 0, x->type, x)) != TG_OK ? st : pass_values(c, n, x);
    mask = (1u << x->rank) - 1;
  }
  int64_t d[TG_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t a = 0; a < x->rank; ++a) {
    if (!(mask & (1u << a))) d[r++] = x->dims[a];
    else if (keep) d[r++] = 1;
  }
  if ((st = set_out(c, n, 0, x->type, r, d)) != TG_OK) return st;
  /* Values of a whole-vector reduction (shape arithmetic: the product of some dimensions); an
   * empty vector sums to 0 and multiplies to 1. */
  if (!x->has_data || x->is_float || x->rank > 1) return TG_OK;
  arith_op op = strcmp(n->op, "ReduceProd") == 0 ? OP_MUL : strcmp(n->op, "ReduceSum") == 0 ? OP_ADD
              : strcmp(n->op, "ReduceMax") == 0 ? OP_MAX : strcmp(n->op, "ReduceMin") == 0 ? OP_MIN : OP_NONE;
  if (op == OP_NONE || (x->count == 0 && op != OP_MUL && op != OP_ADD)) return TG_OK;
  int64_t acc = x->count ? x->i[0] : op == OP_MUL;
  exact_acc sum;
  acc_start(&sum, op == OP_MUL, acc);
  for (size_t k = 1; k < x->count; ++k) {
    if (op == OP_ADD || op == OP_MUL) acc_add(&sum, x->i[k]);
    else (void)int_apply(op, acc, x->i[k], &acc);  /* Max, Min */
  }
  if ((op == OP_ADD || op == OP_MUL) && !acc_result(&sum, &acc))
    return cannot_fold(c, n, TG_ERROR_OVERFLOW, "the %s leaves 64 bits", op == OP_MUL ? "product" : "sum");
  scratch sc;
  if ((st = scratch_get(c, 1, &sc)) != TG_OK) return st;
  sc.i[0] = acc;
  return set_computed(c, n, 0, sc.i, NULL, 1);
}

static tg_status infer_arg(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  int64_t axis, keep;
  uint32_t a = 0;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK ||
      (st = attr_int(c, n, "axis", 0, &axis)) != TG_OK || (st = attr_int(c, n, "keepdims", 1, &keep)) != TG_OK ||
      (st = norm_axis(c, n, axis, x->rank, &a)) != TG_OK)
    return st;
  int64_t d[TG_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t k = 0; k < x->rank; ++k) {
    if (k != a) d[r++] = x->dims[k];
    else if (keep) d[r++] = 1;
  }
  return set_out(c, n, 0, ONNX_INT64, r, d);
}

static tg_status infer_topk(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  int64_t axis, k;
  uint32_t a = 0;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK ||
      (st = attr_int(c, n, "axis", -1, &axis)) != TG_OK || (st = norm_axis(c, n, axis, x->rank, &a)) != TG_OK)
    return st;
  if (n->opset < 10) {
    if ((st = attr_int(c, n, "k", -1, &k)) != TG_OK) return st;
  } else {
    const int64_t *kv;
    size_t cnt;
    if ((st = in_ints(c, n, 1, "K", &kv, &cnt)) != TG_OK) return st;
    if (cnt != 1) return onnx_fail_node(c, n, TG_ERROR_PARSE, "K must hold one value, not %zu", cnt);
    k = kv[0];
  }
  if (k < 0 || k > x->dims[a])
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "K = %lld is outside 0..%lld", (long long)k, (long long)x->dims[a]);
  int64_t d[TG_MAX_RANK];
  memcpy(d, x->dims, sizeof d);
  d[a] = k;
  if ((st = set_out(c, n, 0, x->type, x->rank, d)) != TG_OK) return st;
  return set_out(c, n, 1, ONNX_INT64, x->rank, d);
}

/* ------------------------------------------------------------------------------------------ */
/* Generators. */

static tg_status infer_constant_of_shape(onnx_ctx *c, onnx_node *n) {
  tg_status st;
  const int64_t *shape;
  size_t cnt;
  if ((st = need_out(c, n, 1)) != TG_OK || (st = in_ints(c, n, 0, "shape", &shape, &cnt)) != TG_OK) return st;
  if (cnt > TG_MAX_RANK) return onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED, "shape has %zu entries", cnt);
  int32_t type = ONNX_FLOAT;
  int64_t iv0 = 0;
  double fv0 = 0;
  const Onnx__AttributeProto *a = attr(n, "value");
  if (a != NULL) {
    if (a->t == NULL) return onnx_fail_node(c, n, TG_ERROR_PARSE, "attribute 'value' must be a tensor");
    onnx_value tmp;
    memset(&tmp, 0, sizeof tmp);
    char what[64];
    snprintf(what, sizeof what, "node %zu attribute 'value'", n->index);
    if ((st = onnx_value_from_tensor(c, a->t, what, &tmp)) != TG_OK) return st;
    type = tmp.type;
    if (tmp.has_data && tmp.count == 1) {
      if (tmp.is_float) fv0 = tmp.f[0];
      else iv0 = tmp.i[0];
    }
  }
  if ((st = set_out(c, n, 0, type, (uint32_t)cnt, shape)) != TG_OK) return st;
  uint64_t count;
  if (onnx_element_count(shape, (uint32_t)cnt, &count) != 0 || count > ONNX_MAX_FOLD) return TG_OK;
  scratch sc;
  if ((st = scratch_get(c, (size_t)count, &sc)) != TG_OK) return st;
  int64_t *iv = sc.i;
  double *fv = sc.f;
  int is_float = type == ONNX_FLOAT || type == ONNX_DOUBLE || type == ONNX_FLOAT16 || type == ONNX_BFLOAT16;
  for (size_t k = 0; k < (size_t)count; ++k) {
    iv[k] = iv0;
    fv[k] = fv0;
  }
  return set_values(c, n, 0, is_float ? NULL : iv, is_float ? fv : NULL, (size_t)count);
}

static tg_status infer_range(onnx_ctx *c, onnx_node *n) {
  tg_status st;
  if ((st = need_out(c, n, 1)) != TG_OK) return st;
  const onnx_value *s = in_at(n, 0);
  if (s == NULL) return onnx_fail_node(c, n, TG_ERROR_PARSE, "input 0 is required but absent");
  int64_t len;
  if (s->is_float) {
    const double *v[3];
    size_t cnt;
    for (size_t k = 0; k < 3; ++k) {
      if ((st = in_floats(c, n, k, k == 0 ? "start" : k == 1 ? "limit" : "delta", &v[k], &cnt)) != TG_OK) return st;
      if (cnt != 1) return onnx_fail_node(c, n, TG_ERROR_PARSE, "input %zu must be a scalar", k);
    }
    double l = ceil((*v[1] - *v[0]) / *v[2]);
    if (!(l < (double)ONNX_MAX_DIM)) return onnx_fail_node(c, n, TG_ERROR_PARSE, "range length is invalid");
    len = l > 0 ? (int64_t)l : 0;
    if ((st = set_out(c, n, 0, s->type, 1, &len)) != TG_OK) return st;
    if (len > ONNX_MAX_FOLD) return TG_OK;
    scratch sc;
    if ((st = scratch_get(c, (size_t)len, &sc)) != TG_OK) return st;
    double *fv = sc.f;
    for (int64_t k = 0; k < len; ++k) fv[k] = *v[0] + (double)k * *v[2];
    return set_computed(c, n, 0, NULL, fv, (size_t)len);
  }
  const int64_t *v[3];
  size_t cnt;
  for (size_t k = 0; k < 3; ++k) {
    if ((st = in_ints(c, n, k, k == 0 ? "start" : k == 1 ? "limit" : "delta", &v[k], &cnt)) != TG_OK) return st;
    if (cnt != 1) return onnx_fail_node(c, n, TG_ERROR_PARSE, "input %zu must be a scalar", k);
  }
  int64_t span;
  if (*v[2] == 0 || !int_apply(OP_SUB, *v[1], *v[0], &span))
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "delta is 0 or the range overflows");
  if (*v[2] == -1 && span == INT64_MIN) return onnx_fail_node(c, n, TG_ERROR_OVERFLOW, "the range overflows");
  int64_t q = span / *v[2], r = span % *v[2];
  len = q + (r != 0 && ((r > 0) == (*v[2] > 0)));
  if (len < 0) len = 0;
  if ((st = set_out(c, n, 0, s->type, 1, &len)) != TG_OK) return st;
  if (len > ONNX_MAX_FOLD) return TG_OK;
  scratch sc;
  if ((st = scratch_get(c, (size_t)len, &sc)) != TG_OK) return st;
  int64_t *iv = sc.i;
  for (int64_t k = 0; k < len; ++k) iv[k] = *v[0] + k * *v[2];
  return set_computed(c, n, 0, iv, NULL, (size_t)len);
}

static tg_status infer_quantize(onnx_ctx *c, onnx_node *n) {
  onnx_value *x;
  tg_status st;
  if ((st = need_in(c, n, 0, &x)) != TG_OK || (st = need_out(c, n, 1)) != TG_OK) return st;
  int32_t type = ONNX_UINT8;
  if (strcmp(n->op, "DequantizeLinear") == 0) type = in_at(n, 1) ? in_at(n, 1)->type : ONNX_FLOAT;
  else if (in_at(n, 2)) type = in_at(n, 2)->type;
  return set_out_like(c, n, 0, type, x);
}

static tg_status infer_data_dependent(onnx_ctx *c, onnx_node *n) {
  return onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED,
                        "the output size depends on the input data, so it cannot be planned ahead");
}

/* ------------------------------------------------------------------------------------------ */
/* The op table. */

typedef tg_status (*infer_fn)(onnx_ctx *c, onnx_node *n);

/* Sorted by strcmp for the binary search in onnx_infer_node (test_onnx checks the order). */
static const struct {
  const char *op;
  infer_fn fn;
} k_ops[] = {
    {"Abs", infer_unary}, {"Acos", infer_same}, {"Acosh", infer_same}, {"Add", infer_broadcast},
    {"And", infer_broadcast}, {"ArgMax", infer_arg}, {"ArgMin", infer_arg}, {"Asin", infer_same},
    {"Asinh", infer_same}, {"Atan", infer_same}, {"Atanh", infer_same}, {"AveragePool", infer_pool},
    {"BatchNormalization", infer_batchnorm}, {"BitShift", infer_broadcast},
    {"BitwiseAnd", infer_broadcast}, {"BitwiseOr", infer_broadcast},
    {"BitwiseXor", infer_broadcast}, {"Cast", infer_cast}, {"CastLike", infer_cast},
    {"Ceil", infer_rounding}, {"Celu", infer_same}, {"Clip", infer_same},
    {"Compress", infer_data_dependent}, {"Concat", infer_concat},
    {"ConstantOfShape", infer_constant_of_shape}, {"Conv", infer_conv},
    {"ConvTranspose", infer_conv_transpose}, {"Cos", infer_same}, {"Cosh", infer_same},
    {"CumSum", infer_same}, {"DepthToSpace", infer_depth_space},
    {"DequantizeLinear", infer_quantize}, {"Div", infer_broadcast}, {"Dropout", infer_dropout},
    {"Elu", infer_same}, {"Equal", infer_broadcast}, {"Erf", infer_same}, {"Exp", infer_same},
    {"Expand", infer_expand}, {"EyeLike", infer_same}, {"Flatten", infer_flatten},
    {"Floor", infer_rounding}, {"GRU", infer_recurrent}, {"Gather", infer_gather},
    {"GatherElements", infer_gather_elements}, {"Gelu", infer_same}, {"Gemm", infer_gemm},
    {"GlobalAveragePool", infer_global_pool}, {"GlobalLpPool", infer_global_pool},
    {"GlobalMaxPool", infer_global_pool}, {"Greater", infer_broadcast},
    {"GreaterOrEqual", infer_broadcast}, {"GroupNormalization", infer_same},
    {"HardSigmoid", infer_same}, {"HardSwish", infer_same}, {"Hardmax", infer_same},
    {"Identity", infer_identity}, {"InstanceNormalization", infer_same}, {"IsInf", infer_bool_same},
    {"IsNaN", infer_bool_same}, {"LRN", infer_same}, {"LSTM", infer_recurrent},
    {"LayerNormalization", infer_layernorm}, {"LeakyRelu", infer_same}, {"Less", infer_broadcast},
    {"LessOrEqual", infer_broadcast}, {"Log", infer_same}, {"LogSoftmax", infer_same},
    {"LpNormalization", infer_same}, {"LpPool", infer_pool}, {"MatMul", infer_matmul},
    {"Max", infer_broadcast}, {"MaxPool", infer_pool}, {"Mean", infer_broadcast},
    {"MeanVarianceNormalization", infer_same}, {"Min", infer_broadcast}, {"Mish", infer_same},
    {"Mod", infer_broadcast}, {"Mul", infer_broadcast}, {"Neg", infer_unary},
    {"NonMaxSuppression", infer_data_dependent}, {"NonZero", infer_data_dependent},
    {"Not", infer_unary}, {"Or", infer_broadcast}, {"PRelu", infer_broadcast},
    {"Pad", infer_pad}, {"Pow", infer_broadcast}, {"QuantizeLinear", infer_quantize},
    {"RNN", infer_recurrent}, {"Range", infer_range}, {"Reciprocal", infer_same},
    {"ReduceL1", infer_reduce}, {"ReduceL2", infer_reduce}, {"ReduceLogSum", infer_reduce},
    {"ReduceLogSumExp", infer_reduce}, {"ReduceMax", infer_reduce}, {"ReduceMean", infer_reduce},
    {"ReduceMin", infer_reduce}, {"ReduceProd", infer_reduce}, {"ReduceSum", infer_reduce},
    {"ReduceSumSquare", infer_reduce}, {"Relu", infer_same}, {"Reshape", infer_reshape},
    {"Resize", infer_resize}, {"Round", infer_rounding}, {"Scatter", infer_same},
    {"ScatterElements", infer_same}, {"ScatterND", infer_same}, {"Selu", infer_same},
    {"Shape", infer_shape}, {"Shrink", infer_same}, {"Sigmoid", infer_same}, {"Sign", infer_unary},
    {"Sin", infer_same}, {"Sinh", infer_same}, {"Size", infer_size}, {"Slice", infer_slice},
    {"Softmax", infer_same}, {"Softplus", infer_same}, {"Softsign", infer_same},
    {"SpaceToDepth", infer_depth_space}, {"Split", infer_split}, {"Sqrt", infer_same},
    {"Squeeze", infer_squeeze}, {"Sub", infer_broadcast}, {"Sum", infer_broadcast},
    {"Tan", infer_same}, {"Tanh", infer_same}, {"ThresholdedRelu", infer_same},
    {"Tile", infer_tile}, {"TopK", infer_topk}, {"Transpose", infer_transpose},
    {"Trilu", infer_same}, {"Unique", infer_data_dependent}, {"Unsqueeze", infer_unsqueeze},
    {"Upsample", infer_resize}, {"Where", infer_where}, {"Xor", infer_broadcast},
};

tg_status onnx_infer_node(onnx_ctx *c, onnx_node *n) {
  for (size_t k = 0; k < n->nin; ++k)
    if (n->in[k] && !n->in[k]->has_shape)
      return onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED, "input %zu '%s' has no known shape", k, n->in[k]->name);
  infer_fn fn = NULL;
  size_t lo = 0, hi = sizeof k_ops / sizeof k_ops[0];
  while (lo < hi && fn == NULL) {
    size_t mid = lo + (hi - lo) / 2;
    int cmp = strcmp(k_ops[mid].op, n->op);
    if (cmp == 0) fn = k_ops[mid].fn;
    else if (cmp < 0) lo = mid + 1;
    else hi = mid;
  }
  if (fn == NULL)
    return onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED, "no shape inference for op type '%s' (see docs/models.md for the ops supported)",
                          n->op);
  tg_status st = fn(c, n);
  if (st != TG_OK) return st;
  int all = 1, any = 0;
  for (size_t k = 0; k < n->nout; ++k) {
    if (n->out[k] == NULL) continue;
    if (!n->out[k]->has_shape)
      return onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED, "the shape of output %zu '%s' cannot be inferred", k, n->out[k]->name);
    any = 1;
    if (!n->out[k]->has_data) all = 0;
  }
  n->folded = any && all;
  /* Outputs left without values because an input's could not be computed (and the others' are
   * known) inherit the reason. */
  const onnx_value *cause = NULL;
  int others_known = 1;
  for (size_t k = 0; k < n->nin; ++k) {
    const onnx_value *v = n->in[k];
    if (v == NULL || v->has_data) continue;
    if (v->why == NULL) others_known = 0;
    else if (cause == NULL) cause = v;
  }
  for (size_t k = 0; k < n->nout && cause && others_known; ++k) {
    onnx_value *o = n->out[k];
    if (o == NULL || o->has_data || o->why) continue;
    o->why = cause->why;
    o->why_scope = cause->why_scope;
    o->why_status = cause->why_status;
  }
  return TG_OK;
}

const char *onnx_op_at(size_t index) {
  /* The ops whose output size depends on the data are known only to refuse them clearly. */
  for (size_t i = 0; i < sizeof k_ops / sizeof k_ops[0]; ++i) {
    if (k_ops[i].fn == infer_data_dependent) continue;
    if (index-- == 0) return k_ops[i].op;
  }
  return NULL;
}

#else
/* Built without protobuf-c (TANGRAM_ONNX=OFF): model/onnx.c answers TG_ERROR_UNSUPPORTED. */
typedef int tg__onnx_unused_onnx_shapes;
#endif
