/* The .onnx reader: ModelProto (decoded by protobuf-c in onnx_decode.c) -> tg_graph.
 *
 * Values (ONNX's named tensors) are numbered in a fixed order: initializers, then graph inputs
 * that are not initializers, then node outputs in node order. Their names are sorted once, so
 * a lookup is a binary search and a duplicate is two equal neighbours, whatever the names; a
 * value becomes visible to lookups when its node runs, which is how the node order is checked
 * to be topological. Nodes then run in file order through shape inference (onnx_shapes.c).
 * Constant nodes and folded nodes (all outputs computed before the run) become constants and
 * are not ops of the graph. */
#include <stdio.h>
#include <stdlib.h>

#include "model/model_internal.h"
#include "model/onnx_values.h"
#include "tangram/model.h"

#ifdef TANGRAM_HAVE_ONNX

#include "model/onnx_internal.h"

typedef struct name_entry {
  const char *name;
  uint32_t value;
} name_entry;

/* Control flow. The nodes of every graph are laid out as entries in run order: a node of a
 * subgraph sits between the entries of the control-flow node that owns it. An If is its
 * branches' nodes then one END entry; a Loop or Scan is a BEGIN entry (writing the body's
 * carried inputs and the stacked scan outputs), the body: an ITERATION entry (what an engine
 * does at the start of every iteration: reading the trip count and condition, or the scan
 * inputs, and writing the iteration number and condition, or the scan slices) and the body's
 * nodes, then an END entry. */
enum { FLOW_IF = 1, FLOW_LOOP = 2, FLOW_SCAN = 3 };
enum { ENTRY_NODE = 0, ENTRY_BEGIN = 1, ENTRY_END = 2, ENTRY_ITERATION = 3 };

typedef struct scope_info {
  const Onnx__GraphProto *graph;
  uint32_t parent;           /* enclosing scope (0: the main graph) */
  uint32_t flow;             /* the control-flow node owning it (0 for the main graph) */
  uint32_t branch;           /* If: 0 then, 1 else */
  uint8_t kind;              /* TG_SUBGRAPH_* */
  uint8_t state;             /* 0 not known yet, 1 can run, 2 dead (an If condition known at read time) */
  const char *name;          /* "If_32.then_branch" (arena) */
  const char *where;         /* "<file> (in If_32.then_branch)", for errors (arena) */
  size_t first_entry, end_entry;
  uint32_t tg_index;         /* its index in the graph's subgraph table */
} scope_info;

typedef struct flow_info {
  const Onnx__NodeProto *proto;
  size_t node_index;         /* in its own graph */
  uint32_t scope;            /* where the node sits */
  int kind;                  /* FLOW_* */
  uint32_t sub[2], nsub;     /* its subgraphs' scopes */
  size_t carried;            /* Loop: loop-carried values; Scan: state values */
  size_t scan_inputs;        /* Scan: num_scan_inputs */
  int64_t iterations;        /* known trip count / scan length, -1 unknown */
  size_t begin_entry;
  uint32_t *captured;        /* outer values its subgraphs read */
  size_t ncaptured, capacity;
} flow_info;

typedef struct entry {
  uint8_t role;              /* ENTRY_* */
  uint32_t scope;
  uint32_t flow;             /* BEGIN / END: the flow */
  const Onnx__NodeProto *proto;
  size_t node_index;         /* in its own graph */
} entry;

typedef struct reader {
  onnx_ctx c;
  const char *source;
  const tg_model_options *options;
  const Onnx__GraphProto *graph;
  int64_t opset;
  onnx_value *values;
  size_t value_count;
  uint8_t *visible;          /* per value: defined by the time the current node runs */
  name_entry *sorted;        /* value names, sorted */
  int32_t *node_of_value;    /* per value: the node that writes it, -1 */
  uint32_t *scope_of_value;  /* per value: the scope it belongs to */
  onnx_node *nodes;          /* per entry */
  uint8_t *dead;             /* per entry: in a scope that cannot run */
  scope_info *scopes;
  size_t scope_count, scope_cap;
  flow_info *flows;          /* flows[0] unused */
  size_t flow_count, flow_cap;
  entry *entries;
  size_t entry_count, entry_cap;
} reader;

static int entry_cmp(const void *a, const void *b) {
  const name_entry *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  if (c != 0) return c;
  return x->value < y->value ? -1 : x->value > y->value;
}

/* The value called `name`, or -1. */
static int64_t find_value(const reader *r, const char *name) {
  size_t lo = 0, hi = r->value_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(r->sorted[mid].name, name);
    if (c == 0) return r->sorted[mid].value;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

static const char *kind_text(const reader *r, uint32_t v, char *buf, size_t size) {
  switch (r->values[v].kind) {
    case ONNX_KIND_INITIALIZER: return "an initializer";
    case ONNX_KIND_INPUT: return "a graph input";
    default:
      snprintf(buf, size, "an output of node %d", (int)r->node_of_value[v]);
      return buf;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Graph inputs. */

static tg_status read_input(reader *r, const Onnx__ValueInfoProto *vi, onnx_value *v) {
  onnx_ctx *c = &r->c;
  const Onnx__TypeProto *tp = vi->type;
  if (tp == NULL || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || tp->tensor_type == NULL)
    return onnx_fail(c, TG_ERROR_UNSUPPORTED, "input '%s' is not a tensor (sequences, maps and optionals are not supported)",
                     v->name);
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  v->type = tt->has_elem_type ? tt->elem_type : ONNX_UNDEFINED;
  const tg_input_shape *given = tg__find_input_shape(r->options, v->name);
  char got[160];
  if (given) tg__shape_text(given->dims, given->rank, got, sizeof got);
  if (tt->shape == NULL) {
    if (given == NULL)
      return onnx_fail(c, TG_ERROR_INVALID_ARGUMENT,
                       "input '%s' has no shape in the file: give it in tg_model_options.input_shapes "
                       "(%s:DxDx...)", v->name, v->name);
    v->rank = given->rank;
    memcpy(v->dims, given->dims, sizeof v->dims);
    v->dynamic = (uint8_t)((1u << v->rank) - 1u);
    v->has_shape = 1;
    return TG_OK;
  }
  const Onnx__TensorShapeProto *sp = tt->shape;
  if (sp->n_dim > TG_MAX_RANK)
    return onnx_fail(c, TG_ERROR_UNSUPPORTED, "input '%s' has rank %zu, more than %d", v->name, sp->n_dim, TG_MAX_RANK);
  v->rank = (uint32_t)sp->n_dim;
  uint8_t dynamic = 0;
  for (uint32_t d = 0; d < v->rank; ++d) {
    const Onnx__TensorShapeProto__Dimension *dim = sp->dim[d];
    if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
      if (dim->dim_value < 0)
        return onnx_fail(c, TG_ERROR_PARSE, "input '%s': dimension %u is %lld", v->name, d, (long long)dim->dim_value);
      if (dim->dim_value > ONNX_MAX_DIM)
        return onnx_fail(c, TG_ERROR_OVERFLOW, "input '%s': dimension %u is %lld, more than 2^62", v->name, d,
                         (long long)dim->dim_value);
      v->dims[d] = dim->dim_value;
    } else {
      dynamic |= (uint8_t)(1u << d);
      v->dims[d] = -1;
    }
  }
  v->dynamic = dynamic;
  char shape[160];
  tg__shape_text(v->dims, v->rank, shape, sizeof shape);
  if (given == NULL) {
    if (dynamic) {
      char list[200];
      size_t n = 0;
      unsigned count = 0;
      list[0] = '\0';
      for (uint32_t d = 0; d < v->rank; ++d) count += (dynamic >> d) & 1u;
      for (uint32_t d = 0; d < v->rank; ++d) {
        if (!((dynamic >> d) & 1u)) continue;
        const Onnx__TensorShapeProto__Dimension *dim = sp->dim[d];
        const char *param = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dim->dim_param
                                ? dim->dim_param : NULL;
        int w = param ? snprintf(list + n, sizeof list - n, "%s%u ('%.40s')", n ? ", " : "", d, param)
                      : snprintf(list + n, sizeof list - n, "%s%u", n ? ", " : "", d);
        if (w < 0 || (size_t)w >= sizeof list - n) break;
        n += (size_t)w;
      }
      return onnx_fail(c, TG_ERROR_INVALID_ARGUMENT,
                       "input '%s' (%s): dynamic dimension%s %s: give %s in tg_model_options.input_shapes "
                       "(%s:%s)", v->name, shape, count > 1 ? "s" : "", list,
                       count > 1 ? "the sizes" : "its size", v->name, shape);
    }
  } else {
    if (given->rank != v->rank)
      return onnx_fail(c, TG_ERROR_INVALID_ARGUMENT, "input '%s' has rank %u (%s) but the shape given, %s, has rank %u",
                       v->name, v->rank, shape, got, given->rank);
    for (uint32_t d = 0; d < v->rank; ++d) {
      if (!((dynamic >> d) & 1u) && given->dims[d] != v->dims[d])
        return onnx_fail(c, TG_ERROR_INVALID_ARGUMENT, "input '%s' (%s): dimension %u is %lld in the file, not %lld as given (%s)",
                         v->name, shape, d, (long long)v->dims[d], (long long)given->dims[d], got);
      if (given->dims[d] > ONNX_MAX_DIM)
        return onnx_fail(c, TG_ERROR_OVERFLOW, "input '%s': dimension %u given as %lld, more than 2^62", v->name, d,
                         (long long)given->dims[d]);
      v->dims[d] = given->dims[d];
    }
  }
  uint64_t count;
  if (onnx_element_count(v->dims, v->rank, &count) != 0)
    return onnx_fail(c, TG_ERROR_OVERFLOW, "input '%s' has more elements than fit in 63 bits", v->name);
  v->has_shape = 1;
  return TG_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Constant nodes. */

static tg_status read_constant(reader *r, onnx_node *n) {
  onnx_ctx *c = &r->c;
  onnx_value *v = n->nout > 0 ? n->out[0] : NULL;
  if (v == NULL || n->nout != 1)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "a Constant node has exactly one output");
  if (n->proto->n_attribute != 1)
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "a Constant node has exactly one attribute, not %zu", n->proto->n_attribute);
  const Onnx__AttributeProto *a = n->proto->attribute[0];
  const char *an = a->name ? a->name : "";
  char what[200];
  snprintf(what, sizeof what, "node %zu '%.100s' (Constant)", n->index, n->proto->name ? n->proto->name : "");
  tg_status st;
  if (strcmp(an, "value") == 0) {
    if (a->t == NULL) return onnx_fail_node(c, n, TG_ERROR_PARSE, "attribute 'value' holds no tensor");
    if ((st = onnx_value_from_tensor(c, a->t, what, v)) != TG_OK) return st;
  } else if (strcmp(an, "value_float") == 0 || strcmp(an, "value_int") == 0) {
    int is_float = an[6] == 'f';
    v->rank = 0;
    v->type = is_float ? ONNX_FLOAT : ONNX_INT64;
    v->count = 1;
    v->is_float = (uint8_t)is_float;
    if (is_float) {
      if ((v->f = onnx_arena_alloc(&c->arena, sizeof *v->f)) == NULL) return onnx_fail(c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
      v->f[0] = a->f;
    } else {
      if ((v->i = onnx_arena_alloc(&c->arena, sizeof *v->i)) == NULL) return onnx_fail(c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
      v->i[0] = a->i;
    }
    v->has_data = 1;
  } else if (strcmp(an, "value_floats") == 0 || strcmp(an, "value_ints") == 0) {
    int is_float = an[6] == 'f';
    size_t cnt = is_float ? a->n_floats : a->n_ints;
    v->rank = 1;
    v->dims[0] = (int64_t)cnt;
    v->type = is_float ? ONNX_FLOAT : ONNX_INT64;
    if (cnt <= ONNX_MAX_FOLD) {
      v->count = cnt;
      v->is_float = (uint8_t)is_float;
      if (is_float) v->f = onnx_arena_alloc(&c->arena, (cnt ? cnt : 1) * sizeof *v->f);
      else v->i = onnx_arena_alloc(&c->arena, (cnt ? cnt : 1) * sizeof *v->i);
      if (v->f == NULL && v->i == NULL) return onnx_fail(c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
      for (size_t k = 0; k < cnt; ++k) {
        if (is_float) v->f[k] = a->floats[k];
        else v->i[k] = a->ints[k];
      }
      v->has_data = 1;
    }
  } else if (strcmp(an, "value_string") == 0) {
    v->rank = 0;
    v->type = ONNX_STRING;
  } else if (strcmp(an, "value_strings") == 0) {
    v->rank = 1;
    v->dims[0] = (int64_t)a->n_strings;
    v->type = ONNX_STRING;
  } else if (strcmp(an, "sparse_value") == 0) {
    return onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED, "sparse constants are not supported");
  } else {
    return onnx_fail_node(c, n, TG_ERROR_PARSE, "unknown Constant attribute '%.60s'", an);
  }
  v->has_shape = 1;
  v->constant = 1;
  v->kind = ONNX_KIND_CONSTANT;
  return TG_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Control flow: subgraphs laid out in the parent's node order (tangram/graph.h). */

static tg_status grow(reader *r, void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return TG_OK;
  size_t n = *cap ? *cap * 2 : 16;
  while (n < need) n *= 2;
  void *q = tg__realloc(r->c.alloc, *p, *cap * elem, n * elem);
  if (q == NULL) return onnx_fail(&r->c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
  *p = q;
  *cap = n;
  return TG_OK;
}

static const Onnx__AttributeProto *find_attr(const Onnx__NodeProto *np, const char *name) {
  for (size_t k = 0; k < np->n_attribute; ++k)
    if (np->attribute[k]->name && strcmp(np->attribute[k]->name, name) == 0) return np->attribute[k];
  return NULL;
}

static const char *node_label(const Onnx__NodeProto *np, size_t index, char *buf, size_t size) {
  if (np->name && np->name[0]) snprintf(buf, size, "%.80s", np->name);
  else snprintf(buf, size, "node %zu", index);
  return buf;
}

/* A scope for subgraph `gp` (attribute `attr` of flow f), child of `parent`. */
static tg_status add_scope(reader *r, const Onnx__GraphProto *gp, uint32_t parent, uint32_t f,
                           const char *attr, uint32_t branch, uint8_t kind, uint32_t *out) {
  tg_status st = grow(r, (void **)&r->scopes, &r->scope_cap, r->scope_count + 1, sizeof *r->scopes);
  if (st != TG_OK) return st;
  scope_info *s = &r->scopes[r->scope_count];
  memset(s, 0, sizeof *s);
  s->graph = gp;
  s->parent = parent;
  s->flow = f;
  s->branch = branch;
  s->kind = kind;
  char label[100];
  const flow_info *fl = &r->flows[f];
  node_label(fl->proto, fl->node_index, label, sizeof label);
  const char *pname = parent ? r->scopes[parent].name : "";
  size_t len = strlen(pname) + strlen(label) + strlen(attr) + 4;
  char *name = onnx_arena_alloc(&r->c.arena, len);
  size_t wlen = strlen(r->source) + len + 16;
  char *where = onnx_arena_alloc(&r->c.arena, wlen);
  if (name == NULL || where == NULL) return onnx_fail(&r->c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
  snprintf(name, len, "%s%s%s.%s", pname, parent ? "/" : "", label, attr);
  snprintf(where, wlen, "%s (in %s)", r->source, name);
  s->name = name;
  s->where = where;
  if (gp->n_sparse_initializer > 0)
    return onnx_fail(&r->c, TG_ERROR_UNSUPPORTED, "subgraph %s: sparse initializers are not supported", name);
  *out = (uint32_t)r->scope_count++;
  return TG_OK;
}

static tg_status add_entry(reader *r, uint8_t role, uint32_t scope, uint32_t f, const Onnx__NodeProto *np,
                           size_t index) {
  tg_status st = grow(r, (void **)&r->entries, &r->entry_cap, r->entry_count + 1, sizeof *r->entries);
  if (st != TG_OK) return st;
  entry *e = &r->entries[r->entry_count++];
  memset(e, 0, sizeof *e);
  e->role = role;
  e->scope = scope;
  e->flow = f;
  e->proto = np;
  e->node_index = index;
  return TG_OK;
}

static tg_status flatten(reader *r, const Onnx__GraphProto *gp, uint32_t scope, unsigned depth);

/* A node with subgraph attributes: If, Loop, Scan of the default domain; anything else is
 * refused naming the node. */
static tg_status flatten_flow(reader *r, const Onnx__NodeProto *np, size_t index, uint32_t scope,
                              unsigned depth) {
  onnx_ctx *c = &r->c;
  const char *op = np->op_type ? np->op_type : "";
  char label[100];
  node_label(np, index, label, sizeof label);
  const char *where = scope ? r->scopes[scope].where : r->source;
  int default_domain = np->domain == NULL || np->domain[0] == '\0' || strcmp(np->domain, "ai.onnx") == 0;
  int kind = !default_domain ? 0 : strcmp(op, "If") == 0 ? FLOW_IF : strcmp(op, "Loop") == 0 ? FLOW_LOOP
                                 : strcmp(op, "Scan") == 0 ? FLOW_SCAN : 0;
  if (kind == 0)
    return tg__error(c->err, TG_ERROR_UNSUPPORTED, "%s: node %zu '%s' (%.60s): has a subgraph, and only If, Loop "
                     "and Scan of the default domain are supported with subgraphs", where, index, label, op);
  if (depth >= 16)
    return tg__error(c->err, TG_ERROR_UNSUPPORTED, "%s: node %zu '%s' (%s): subgraphs nest more than 16 deep",
                     where, index, label, op);
  if (kind == FLOW_SCAN && r->opset < 9)
    return tg__error(c->err, TG_ERROR_UNSUPPORTED, "%s: node %zu '%s' (Scan): Scan before opset 9 (batch axis, "
                     "sequence_lens) is not supported (the model imports opset %lld)", where, index, label,
                     (long long)r->opset);
  const char *names[2] = {kind == FLOW_IF ? "then_branch" : "body", "else_branch"};
  size_t nsub = kind == FLOW_IF ? 2 : 1;
  const Onnx__GraphProto *sub[2] = {NULL, NULL};
  for (size_t k = 0; k < np->n_attribute; ++k) {
    const Onnx__AttributeProto *a = np->attribute[k];
    int graph_type = a->has_type && (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH ||
                                     a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS);
    if (!graph_type && a->g == NULL && a->n_graphs == 0) continue;
    size_t j = 0;
    while (j < nsub && !(a->name && strcmp(a->name, names[j]) == 0)) ++j;
    if (j == nsub || a->g == NULL || a->n_graphs > 0)
      return tg__error(c->err, TG_ERROR_PARSE, "%s: node %zu '%s' (%s): attribute '%.60s' is not a subgraph of %s",
                       where, index, label, op, a->name ? a->name : "", op);
    sub[j] = a->g;
  }
  for (size_t j = 0; j < nsub; ++j)
    if (sub[j] == NULL)
      return tg__error(c->err, TG_ERROR_PARSE, "%s: node %zu '%s' (%s): the subgraph attribute '%s' is missing",
                       where, index, label, op, names[j]);
  tg_status st = grow(r, (void **)&r->flows, &r->flow_cap, r->flow_count + 1, sizeof *r->flows);
  if (st != TG_OK) return st;
  uint32_t f = (uint32_t)r->flow_count++;
  flow_info *fl = &r->flows[f];
  memset(fl, 0, sizeof *fl);
  fl->proto = np;
  fl->node_index = index;
  fl->scope = scope;
  fl->kind = kind;
  fl->nsub = (uint32_t)nsub;
  if (kind == FLOW_LOOP) {
    if (np->n_input < 2)
      return tg__error(c->err, TG_ERROR_PARSE, "%s: node %zu '%s' (Loop): has %zu inputs; M and cond (maybe empty) "
                       "come first", where, index, label, np->n_input);
    fl->carried = np->n_input - 2;
  } else if (kind == FLOW_SCAN) {
    const Onnx__AttributeProto *a = find_attr(np, "num_scan_inputs");
    if (a == NULL || a->i < 1 || (uint64_t)a->i > np->n_input)
      return tg__error(c->err, TG_ERROR_PARSE, "%s: node %zu '%s' (Scan): num_scan_inputs is missing or not in "
                       "[1, %zu]", where, index, label, np->n_input);
    fl->scan_inputs = (size_t)a->i;
    fl->carried = np->n_input - fl->scan_inputs;
  } else if (np->n_input != 1) {
    return tg__error(c->err, TG_ERROR_PARSE, "%s: node %zu '%s' (If): has %zu inputs, not 1 (cond)", where, index,
                     label, np->n_input);
  }
  if (kind != FLOW_IF) {
    if ((st = add_entry(r, ENTRY_BEGIN, scope, f, np, index)) != TG_OK) return st;
    r->flows[f].begin_entry = r->entry_count - 1;
  }
  for (size_t j = 0; j < nsub; ++j) {
    uint32_t s = 0;
    st = add_scope(r, sub[j], scope, f, names[j], (uint32_t)j,
                   kind == FLOW_IF ? TG_SUBGRAPH_BRANCH : TG_SUBGRAPH_BODY, &s);
    if (st != TG_OK) return st;
    r->flows[f].sub[j] = s;
    r->scopes[s].first_entry = r->entry_count;
    if (kind == FLOW_IF && sub[j]->n_input > 0)
      return tg__error(c->err, TG_ERROR_PARSE, "%s: node %zu '%s' (If): %s has %zu inputs; a branch takes none",
                       where, index, label, names[j], sub[j]->n_input);
    if (kind != FLOW_IF && (st = add_entry(r, ENTRY_ITERATION, s, f, np, index)) != TG_OK) return st;
    if ((st = flatten(r, sub[j], s, depth + 1)) != TG_OK) return st;
    r->scopes[s].end_entry = r->entry_count;
  }
  return add_entry(r, ENTRY_END, scope, f, np, index);
}

static tg_status flatten(reader *r, const Onnx__GraphProto *gp, uint32_t scope, unsigned depth) {
  for (size_t i = 0; i < gp->n_node; ++i) {
    const Onnx__NodeProto *np = gp->node[i];
    int has_graph = 0;
    for (size_t k = 0; k < np->n_attribute && !has_graph; ++k) {
      const Onnx__AttributeProto *a = np->attribute[k];
      has_graph = (a->has_type && (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH ||
                                   a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS)) ||
                  a->g != NULL || a->n_graphs > 0;
    }
    tg_status st = has_graph ? flatten_flow(r, np, i, scope, depth) : add_entry(r, ENTRY_NODE, scope, 0, np, i);
    if (st != TG_OK) return st;
  }
  return TG_OK;
}

/* Whether scope s can run: a branch whose If has a condition known before the run is dead when
 * the condition picks the other branch (and so is everything inside it). */
static int scope_live(reader *r, uint32_t s) {
  if (s == 0) return 1;
  scope_info *sc = &r->scopes[s];
  if (sc->state) return sc->state == 1;
  int live = scope_live(r, sc->parent);
  if (live && sc->kind == TG_SUBGRAPH_BRANCH) {
    const Onnx__NodeProto *np = r->flows[sc->flow].proto;
    int64_t v = np->n_input > 0 && np->input[0] ? find_value(r, np->input[0]) : -1;
    if (v >= 0 && r->visible[v] && r->values[v].has_data && r->values[v].count >= 1) {
      const onnx_value *x = &r->values[v];
      int truth = x->is_float ? x->f[0] != 0.0 : x->i[0] != 0;
      live = truth ? sc->branch == 0 : sc->branch == 1;
    }
  }
  sc->state = live ? 1 : 2;
  return live;
}

/* Record that scope `reader_scope` reads value v: v must belong to it or to an enclosing scope;
 * a value from outside is captured by the outermost control-flow node on the way, which reads
 * it (so it lives across the whole construct). */
static tg_status note_read(reader *r, const onnx_node *n, uint32_t v, uint32_t reader_scope) {
  uint32_t vs = r->scope_of_value[v];
  uint32_t a = reader_scope, child = UINT32_MAX;
  while (a != vs && a != 0) {
    child = a;
    a = r->scopes[a].parent;
  }
  if (a != vs)
    return onnx_fail_node(&r->c, n, TG_ERROR_GRAPH, "reads '%.100s', a value of %s, which it cannot see",
                          r->values[v].name, r->scopes[vs].name);
  if (child == UINT32_MAX) return TG_OK;
  flow_info *f = &r->flows[r->scopes[child].flow];
  for (size_t k = 0; k < f->ncaptured; ++k)
    if (f->captured[k] == v) return TG_OK;
  tg_status st = grow(r, (void **)&f->captured, &f->capacity, f->ncaptured + 1, sizeof *f->captured);
  if (st != TG_OK) return st;
  f->captured[f->ncaptured++] = v;
  return TG_OK;
}

/* The visible value `name` read by node n of scope `scope`. */
static tg_status read_named(reader *r, const onnx_node *n, const char *name, uint32_t scope, onnx_value **out) {
  onnx_ctx *c = &r->c;
  *out = NULL;
  int64_t v = find_value(r, name);
  if (v < 0)
    return onnx_fail_node(c, n, TG_ERROR_GRAPH,
                          "reads '%.100s', which is neither a graph input, an initializer nor an output of a node", name);
  if (!r->visible[v])
    return onnx_fail_node(c, n, TG_ERROR_GRAPH,
                          "reads '%.100s' before node %d writes it: the nodes are not in topological order",
                          name, (int)r->node_of_value[v]);
  tg_status st = note_read(r, n, (uint32_t)v, scope);
  if (st != TG_OK) return st;
  *out = &r->values[v];
  return TG_OK;
}

static tg_status run_node(reader *r, size_t e_index, onnx_value **scratch_in, onnx_value **scratch_out) {
  onnx_ctx *c = &r->c;
  const entry *e = &r->entries[e_index];
  const Onnx__NodeProto *np = e->proto;
  onnx_node *n = &r->nodes[e_index];
  n->in = scratch_in;
  n->out = scratch_out;
  if (n->op[0] == '\0') return onnx_fail_node(c, n, TG_ERROR_PARSE, "has no op type");
  tg_status st;
  for (size_t k = 0; k < np->n_input; ++k) {
    const char *name = np->input[k];
    n->in[k] = NULL;
    if (name == NULL || name[0] == '\0') continue;
    if ((st = read_named(r, n, name, e->scope, &n->in[k])) != TG_OK) return st;
  }
  for (size_t k = 0; k < np->n_output; ++k) {
    const char *name = np->output[k];
    n->out[k] = NULL;
    if (name == NULL || name[0] == '\0') continue;
    int64_t v = find_value(r, name);
    /* Names are unique (checked when sorting), so this is the value the node owns. */
    n->out[k] = &r->values[v];
  }
  int constant_node = strcmp(n->op, "Constant") == 0 && (np->domain == NULL || np->domain[0] == '\0' ||
                                                          strcmp(np->domain, "ai.onnx") == 0);
  if (constant_node) {
    st = read_constant(r, n);
  } else if (np->domain != NULL && np->domain[0] != '\0' && strcmp(np->domain, "ai.onnx") != 0) {
    st = onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED, "op '%.60s' of domain '%.60s' has no shape inference here",
                        n->op, np->domain);
  } else {
    st = onnx_infer_node(c, n);
  }
  if (st != TG_OK) return st;
  if (n->folded)
    for (size_t k = 0; k < n->nout; ++k)
      if (n->out[k]) n->out[k]->constant = 1;
  for (size_t k = 0; k < np->n_output; ++k)
    if (n->out[k]) r->visible[n->out[k] - r->values] = 1;
  /* The node's input/output lists live in scratch: keep what the graph build needs. */
  onnx_value **keep_in = onnx_arena_alloc(&c->arena, (n->nin ? n->nin : 1) * sizeof *keep_in);
  onnx_value **keep_out = onnx_arena_alloc(&c->arena, (n->nout ? n->nout : 1) * sizeof *keep_out);
  if (keep_in == NULL || keep_out == NULL) return onnx_fail(c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
  if (n->nin) memcpy(keep_in, n->in, n->nin * sizeof *keep_in);
  if (n->nout) memcpy(keep_out, n->out, n->nout * sizeof *keep_out);
  n->in = keep_in;
  n->out = keep_out;
  if (constant_node) n->folded = 1;
  return TG_OK;
}

/* A list of values being built in the arena-free scratch of the reader. */
typedef struct value_list {
  onnx_value **v;
  size_t count, cap;
} value_list;

static tg_status list_add(reader *r, value_list *l, onnx_value *v) {
  for (size_t k = 0; k < l->count; ++k)
    if (l->v[k] == v) return TG_OK;
  tg_status st = grow(r, (void **)&l->v, &l->cap, l->count + 1, sizeof *l->v);
  if (st != TG_OK) return st;
  l->v[l->count++] = v;
  return TG_OK;
}

static tg_status list_keep(reader *r, value_list *l, onnx_value ***out, size_t *count) {
  onnx_value **keep = onnx_arena_alloc(&r->c.arena, (l->count ? l->count : 1) * sizeof *keep);
  tg_status st = keep ? TG_OK : onnx_fail(&r->c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
  if (keep && l->count) memcpy(keep, l->v, l->count * sizeof *keep);
  *out = keep;
  *count = l->count;
  tg__free(r->c.alloc, l->v);
  memset(l, 0, sizeof *l);
  return st;
}

static void describe_shape(const onnx_value *v, char *buf, size_t size) {
  if (!v->has_shape) snprintf(buf, size, "unknown");
  else tg__shape_text(v->dims, v->rank, buf, size);
}

static int same_shape(const onnx_value *a, const onnx_value *b) {
  return a->has_shape && b->has_shape && tg__dims_equal(a->dims, a->rank, b->dims, b->rank);
}

/* The value named output k of subgraph s (read from inside s). */
static tg_status subgraph_output(reader *r, const onnx_node *n, uint32_t s, size_t k, onnx_value **out) {
  const Onnx__GraphProto *gp = r->scopes[s].graph;
  const char *name = gp->output[k]->name;
  if (name == NULL || name[0] == '\0')
    return onnx_fail_node(&r->c, n, TG_ERROR_PARSE, "output %zu of %s has no name", k, r->scopes[s].name);
  tg_status st = read_named(r, n, name, s, out);
  if (st == TG_OK && !(*out)->has_shape)
    st = onnx_fail_node(&r->c, n, TG_ERROR_UNSUPPORTED, "output %zu '%.100s' of %s has no known shape", k, name,
                        r->scopes[s].name);
  return st;
}

static tg_status set_value_shape(reader *r, const onnx_node *n, onnx_value *v, int32_t type, uint32_t rank,
                                 const int64_t *dims) {
  if (rank > TG_MAX_RANK)
    return onnx_fail_node(&r->c, n, TG_ERROR_UNSUPPORTED, "'%.100s' would have rank %u, more than %d", v->name,
                          rank, TG_MAX_RANK);
  uint64_t count;
  for (uint32_t d = 0; d < rank; ++d)
    if (dims[d] < 0 || dims[d] > ONNX_MAX_DIM)
      return onnx_fail_node(&r->c, n, TG_ERROR_PARSE, "'%.100s': dimension %u would be %lld", v->name, d,
                            (long long)dims[d]);
  if (onnx_element_count(dims, rank, &count) != 0)
    return onnx_fail_node(&r->c, n, TG_ERROR_OVERFLOW, "'%.100s' would have more elements than fit in 63 bits",
                          v->name);
  v->type = type;
  v->rank = rank;
  memset(v->dims, 0, sizeof v->dims);
  for (uint32_t d = 0; d < rank; ++d) v->dims[d] = dims[d];
  v->has_shape = 1;
  return TG_OK;
}

/* The body inputs [*lo, *hi) that a loop's BEGIN entry writes (the carried values) or its
 * ITERATION entry writes (Loop: iteration number and condition; Scan: the scan slices). */
static void body_inputs_written(const reader *r, const entry *e, size_t *lo, size_t *hi) {
  const flow_info *f = &r->flows[e->flow];
  size_t n = r->scopes[f->sub[0]].graph->n_input;
  /* Loop: i, cond, carried values; Scan: state values, scan slices. */
  size_t split = f->kind == FLOW_LOOP ? 2 : f->carried;
  if (split > n) split = n;
  int below = f->kind == FLOW_LOOP ? e->role == ENTRY_ITERATION : e->role == ENTRY_BEGIN;
  *lo = below ? 0 : split;
  *hi = below ? split : n;
}

/* The names a control-flow entry writes, in order (see read_model's numbering): BEGIN its
 * body inputs then the stacked scan outputs, ITERATION its body inputs, END the node's
 * outputs (a loop's: the final carried values). */
static size_t flow_out_count(const reader *r, const entry *e) {
  const flow_info *f = &r->flows[e->flow];
  const Onnx__NodeProto *np = f->proto;
  size_t lo, hi;
  if (e->role == ENTRY_BEGIN || e->role == ENTRY_ITERATION) {
    body_inputs_written(r, e, &lo, &hi);
    size_t scan_out = np->n_output > f->carried ? np->n_output - f->carried : 0;
    return hi - lo + (e->role == ENTRY_BEGIN ? scan_out : 0);
  }
  if (f->kind == FLOW_IF) return np->n_output;
  return np->n_output < f->carried ? np->n_output : f->carried;
}

static const char *flow_out_name(const reader *r, const entry *e, size_t k) {
  const flow_info *f = &r->flows[e->flow];
  const Onnx__NodeProto *np = f->proto;
  size_t lo, hi;
  if (e->role == ENTRY_BEGIN || e->role == ENTRY_ITERATION) {
    body_inputs_written(r, e, &lo, &hi);
    if (k < hi - lo) return r->scopes[f->sub[0]].graph->input[lo + k]->name;
    return np->output[f->carried + (k - (hi - lo))];
  }
  return np->output[k];
}

static tg_status run_flow(reader *r, size_t e_index) {
  onnx_ctx *c = &r->c;
  const entry *e = &r->entries[e_index];
  flow_info *f = &r->flows[e->flow];
  const Onnx__NodeProto *np = f->proto;
  onnx_node *n = &r->nodes[e_index];
  tg_status st = TG_OK;
  value_list ins = {0}, outs = {0};
  size_t nout = flow_out_count(r, e), lo = 0, hi = 0;
  if (e->role == ENTRY_BEGIN || e->role == ENTRY_ITERATION) body_inputs_written(r, e, &lo, &hi);
  for (size_t k = 0; k < nout && st == TG_OK; ++k) {
    const char *name = flow_out_name(r, e, k);
    if (name == NULL || name[0] == '\0') {
      if (k < hi - lo) st = onnx_fail_node(c, n, TG_ERROR_PARSE, "input %zu of its body has no name", lo + k);
      continue;
    }
    st = list_add(r, &outs, &r->values[find_value(r, name)]);
  }
  /* Node inputs (read by BEGIN for loops, by the END of an If). */
  if (st == TG_OK && (e->role == ENTRY_BEGIN || f->kind == FLOW_IF))
    for (size_t k = 0; k < np->n_input && st == TG_OK; ++k) {
      onnx_value *v = NULL;
      if (np->input[k] == NULL || np->input[k][0] == '\0') {
        if (f->kind == FLOW_IF || k >= 2)
          st = onnx_fail_node(c, n, TG_ERROR_PARSE, "input %zu is required but absent", k);
        continue;
      }
      if ((st = read_named(r, n, np->input[k], e->scope, &v)) == TG_OK && !v->has_shape)
        st = onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED, "input %zu '%s' has no known shape", k, v->name);
      if (st == TG_OK) st = list_add(r, &ins, v);
    }
  if (st != TG_OK) goto done;

  if (f->kind == FLOW_IF) {
    int live[2] = {scope_live(r, f->sub[0]), scope_live(r, f->sub[1])};
    for (uint32_t b = 0; b < 2 && st == TG_OK; ++b) {
      const scope_info *s = &r->scopes[f->sub[b]];
      if (s->graph->n_output != np->n_output)
        st = onnx_fail_node(c, n, TG_ERROR_PARSE, "%s has %zu outputs but the node has %zu",
                            b ? "else_branch" : "then_branch", s->graph->n_output, np->n_output);
    }
    for (size_t k = 0; k < np->n_output && st == TG_OK; ++k) {
      onnx_value *got[2] = {NULL, NULL};
      for (uint32_t b = 0; b < 2 && st == TG_OK; ++b)
        if (live[b] && (st = subgraph_output(r, n, f->sub[b], k, &got[b])) == TG_OK) st = list_add(r, &ins, got[b]);
      if (st != TG_OK) break;
      if (got[0] && got[1] && !same_shape(got[0], got[1])) {
        char a[120], b[120];
        describe_shape(got[0], a, sizeof a);
        describe_shape(got[1], b, sizeof b);
        st = onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED, "output %zu: then_branch gives %s, else_branch %s; "
                            "branches whose outputs differ in shape are not supported", k, a, b);
        break;
      }
      const onnx_value *src = got[0] ? got[0] : got[1];
      onnx_value *o = np->output[k] && np->output[k][0] ? &r->values[find_value(r, np->output[k])] : NULL;
      if (o == NULL || src == NULL) continue;
      if ((st = set_value_shape(r, n, o, src->type, src->rank, src->dims)) != TG_OK) break;
      if (!(live[0] && live[1])) {
        o->has_data = src->has_data;
        o->is_float = src->is_float;
        o->count = src->count;
        o->i = src->i;
        o->f = src->f;
        o->why = src->why;
        o->why_scope = src->why_scope;
        o->why_status = src->why_status;
      }
    }
  } else if (e->role == ENTRY_ITERATION) {
    /* Read by every iteration, from inside the body: so captured, and read by END too. */
    size_t first = f->kind == FLOW_LOOP ? 0 : f->carried, end = f->kind == FLOW_LOOP ? 2 : f->carried + f->scan_inputs;
    for (size_t k = first; k < end && k < np->n_input && st == TG_OK; ++k) {
      onnx_value *v = NULL;
      if (np->input[k] == NULL || np->input[k][0] == '\0') continue;
      if ((st = read_named(r, n, np->input[k], e->scope, &v)) == TG_OK) st = list_add(r, &ins, v);
    }
  } else if (e->role == ENTRY_BEGIN) {
    const scope_info *s = &r->scopes[f->sub[0]];
    const Onnx__GraphProto *body = s->graph;
    size_t lead = f->kind == FLOW_LOOP ? 2 : 0;
    size_t scan_out = np->n_output > f->carried ? np->n_output - f->carried : 0;
    if (np->n_output < f->carried)
      st = onnx_fail_node(c, n, TG_ERROR_PARSE, "has %zu outputs, fewer than its %zu carried values",
                          np->n_output, f->carried);
    else if (body->n_input != lead + f->carried + f->scan_inputs)
      st = onnx_fail_node(c, n, TG_ERROR_PARSE, "its body has %zu inputs; %zu expected", body->n_input,
                          lead + f->carried + f->scan_inputs);
    else if (body->n_output != (f->kind == FLOW_LOOP ? 1 : 0) + f->carried + scan_out)
      st = onnx_fail_node(c, n, TG_ERROR_PARSE, "its body has %zu outputs; %zu expected", body->n_output,
                          (f->kind == FLOW_LOOP ? 1 : 0) + f->carried + scan_out);
    if (st != TG_OK) goto done;
    const Onnx__AttributeProto *axes = f->kind == FLOW_SCAN ? find_attr(np, "scan_input_axes") : NULL;
    int64_t iterations = -1;
    for (size_t k = 0; k < body->n_input && st == TG_OK; ++k) {
      onnx_value *v = &r->values[find_value(r, body->input[k]->name)];
      if (f->kind == FLOW_LOOP && k < 2) {
        st = set_value_shape(r, n, v, k == 0 ? ONNX_INT64 : ONNX_BOOL, 0, NULL);
        continue;
      }
      size_t j = k - lead;
      const onnx_value *init = np->input[j + lead] && np->input[j + lead][0]
                                   ? &r->values[find_value(r, np->input[j + lead])] : NULL;
      if (init == NULL) {
        st = onnx_fail_node(c, n, TG_ERROR_PARSE, "input %zu is required but absent", j + lead);
        break;
      }
      if (j < f->carried) {
        st = set_value_shape(r, n, v, init->type, init->rank, init->dims);
        continue;
      }
      /* A scan input: one slice along its axis per iteration. */
      size_t si = j - f->carried;
      int64_t axis = axes && si < axes->n_ints ? axes->ints[si] : 0;
      if (axis < 0) axis += init->rank;
      if (axis < 0 || axis >= (int64_t)init->rank) {
        st = onnx_fail_node(c, n, TG_ERROR_PARSE, "scan input %zu ('%s', rank %u): axis %lld is out of range", si,
                            init->name, init->rank, (long long)(axes && si < axes->n_ints ? axes->ints[si] : 0));
        break;
      }
      if (iterations >= 0 && init->dims[axis] != iterations) {
        st = onnx_fail_node(c, n, TG_ERROR_PARSE, "scan inputs differ in length (%lld and %lld)",
                            (long long)iterations, (long long)init->dims[axis]);
        break;
      }
      iterations = init->dims[axis];
      int64_t dims[TG_MAX_RANK];
      uint32_t rank = 0;
      for (uint32_t d = 0; d < init->rank; ++d)
        if ((int64_t)d != axis) dims[rank++] = init->dims[d];
      st = set_value_shape(r, n, v, init->type, rank, dims);
    }
    f->iterations = iterations;
    if (f->kind == FLOW_LOOP) {
      const onnx_value *m = np->input[0] && np->input[0][0] ? &r->values[find_value(r, np->input[0])] : NULL;
      f->iterations = m && m->has_data && m->count == 1 && !m->is_float ? (m->i[0] > 0 ? m->i[0] : 0) : -1;
    }
    for (size_t k = 0; k < body->n_input; ++k) r->visible[find_value(r, body->input[k]->name)] = 1;
  } else {
    /* END of a loop: the body's outputs, its inputs and what it captured keep living until here. */
    const scope_info *s = &r->scopes[f->sub[0]];
    const Onnx__GraphProto *body = s->graph;
    size_t lead_in = f->kind == FLOW_LOOP ? 2 : 0, lead_out = f->kind == FLOW_LOOP ? 1 : 0;
    for (size_t k = 0; k < body->n_input && st == TG_OK; ++k)
      st = list_add(r, &ins, &r->values[find_value(r, body->input[k]->name)]);
    for (size_t k = 0; k < body->n_output && st == TG_OK; ++k) {
      onnx_value *got = NULL;
      if ((st = subgraph_output(r, n, f->sub[0], k, &got)) != TG_OK) break;
      if ((st = list_add(r, &ins, got)) != TG_OK) break;
      if (k < lead_out) continue;
      size_t j = k - lead_out;
      if (j < f->carried) {
        const onnx_value *in = &r->values[find_value(r, body->input[lead_in + j]->name)];
        if (!same_shape(in, got)) {
          char a[120], b[120];
          describe_shape(in, a, sizeof a);
          describe_shape(got, b, sizeof b);
          st = onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED, "carried value %zu ('%s') is %s on entry and %s after the "
                              "body: values that change shape across iterations are not supported", j, in->name, a, b);
          break;
        }
        if (j < np->n_output && np->output[j] && np->output[j][0])
          st = set_value_shape(r, n, &r->values[find_value(r, np->output[j])], in->type, in->rank, in->dims);
        continue;
      }
      size_t so = j - f->carried;
      const char *oname = np->output[f->carried + so];
      if (oname == NULL || oname[0] == '\0') continue;
      onnx_value *o = &r->values[find_value(r, oname)];
      if (f->iterations < 0) {
        st = onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED, "scan output %zu ('%s') stacks one slice per iteration, and "
                            "the number of iterations (input M) is only known at run time", so, oname);
        break;
      }
      const Onnx__AttributeProto *axes = f->kind == FLOW_SCAN ? find_attr(np, "scan_output_axes") : NULL;
      int64_t axis = axes && so < axes->n_ints ? axes->ints[so] : 0;
      if (axis < 0) axis += (int64_t)got->rank + 1;
      if (axis < 0 || axis > (int64_t)got->rank) {
        st = onnx_fail_node(c, n, TG_ERROR_PARSE, "scan output %zu: axis out of range", so);
        break;
      }
      if (got->rank + 1 > TG_MAX_RANK) {
        st = onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED, "scan output %zu would have rank %u, more than %d", so,
                            got->rank + 1, TG_MAX_RANK);
        break;
      }
      int64_t dims[TG_MAX_RANK];
      uint32_t rank = 0;
      for (uint32_t d = 0; d <= got->rank; ++d) {
        if ((int64_t)d == axis) dims[rank++] = f->iterations;
        if (d < got->rank) dims[rank++] = got->dims[d];
      }
      if ((st = set_value_shape(r, n, o, got->type, rank, dims)) != TG_OK) break;
      st = list_add(r, &ins, o);
      r->visible[o - r->values] = 1;
    }
  }
  /* Every outer value a subgraph read: the construct reads it (and passes it outwards). */
  for (size_t k = 0; k < f->ncaptured && st == TG_OK && e->role == ENTRY_END; ++k) {
    onnx_value *v = &r->values[f->captured[k]];
    if ((st = note_read(r, n, f->captured[k], e->scope)) == TG_OK) st = list_add(r, &ins, v);
  }
  if (st != TG_OK) goto done;
  if (e->role == ENTRY_END)
    for (size_t k = 0; k < outs.count; ++k) r->visible[outs.v[k] - r->values] = 1;
  if ((st = list_keep(r, &ins, &n->in, &n->nin)) == TG_OK) st = list_keep(r, &outs, &n->out, &n->nout);
done:
  tg__free(c->alloc, ins.v);
  tg__free(c->alloc, outs.v);
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* The graph. */

static const char *entry_op_name(const reader *r, const entry *e) {
  if (e->role == ENTRY_NODE) return NULL;
  int kind = r->flows[e->flow].kind;
  if (kind == FLOW_IF) return "If";
  if (kind == FLOW_LOOP)
    return e->role == ENTRY_BEGIN ? "Loop" : e->role == ENTRY_ITERATION ? "Loop.iteration" : "Loop.end";
  return e->role == ENTRY_BEGIN ? "Scan" : e->role == ENTRY_ITERATION ? "Scan.iteration" : "Scan.end";
}

static tg_status build_subgraphs(reader *r, tg_graph *g, const size_t *ops_before, const int32_t *op_of_entry) {
  size_t live = 0;
  for (size_t s = 0; s < r->scope_count; ++s) {
    r->scopes[s].tg_index = 0;
    if (s == 0 || r->scopes[s].state != 2) r->scopes[s].tg_index = (uint32_t)live++;
  }
  /* A dead scope's values belong to its nearest live ancestor. */
  for (size_t s = 1; s < r->scope_count; ++s)
    if (r->scopes[s].state == 2) r->scopes[s].tg_index = r->scopes[r->scopes[s].parent].tg_index;
  if (live <= 1) return TG_OK;
  g->subgraphs = tg__calloc(&g->alloc, live, sizeof *g->subgraphs);
  if (g->subgraphs == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  g->flow_count = live;
  g->subgraphs[0].name = tg__strdup(&g->alloc, "main");
  g->subgraphs[0].end_op = (uint32_t)g->op_count;
  if (g->subgraphs[0].name == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t s = 1; s < r->scope_count; ++s) {
    const scope_info *sc = &r->scopes[s];
    if (sc->state == 2) continue;
    tg_subgraph *t = &g->subgraphs[sc->tg_index];
    t->name = tg__strdup(&g->alloc, sc->name);
    if (t->name == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    t->kind = (tg_subgraph_kind)sc->kind;
    t->parent = r->scopes[sc->parent].tg_index;
    t->branch = sc->branch;
    t->first_op = (uint32_t)ops_before[sc->first_entry];
    t->end_op = (uint32_t)ops_before[sc->end_entry];
    /* The END entry of the flow follows its last subgraph. */
    const flow_info *f = &r->flows[sc->flow];
    const scope_info *last = &r->scopes[f->sub[f->nsub - 1]];
    int32_t end_op = op_of_entry[last->end_entry];
    t->control_op = end_op >= 0 ? (uint32_t)end_op : 0;
  }
  for (size_t o = 0; o < g->op_count; ++o) g->ops[o].subgraph = r->scopes[g->ops[o].subgraph].tg_index;
  for (size_t v = 0; v < g->tensor_count; ++v) g->tensors[v].subgraph = r->scopes[r->scope_of_value[v]].tg_index;
  return TG_OK;
}

static tg_status build_graph(reader *r, const tg_allocator *alloc, tg_graph **out) {
  onnx_ctx *c = &r->c;
  const Onnx__GraphProto *gp = r->graph;
  size_t ops = 0;
  size_t *ops_before = tg__calloc(c->alloc, r->entry_count + 1, sizeof *ops_before);
  int32_t *op_of_entry = tg__calloc(c->alloc, r->entry_count + 1, sizeof *op_of_entry);
  if (ops_before == NULL || op_of_entry == NULL) {
    tg__free(c->alloc, ops_before);
    tg__free(c->alloc, op_of_entry);
    return onnx_fail(c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
  }
  for (size_t i = 0; i < r->entry_count; ++i) {
    ops_before[i] = ops;
    op_of_entry[i] = -1;
    if (!r->nodes[i].folded && !r->dead[i]) op_of_entry[i] = (int32_t)ops++;
  }
  ops_before[r->entry_count] = ops;
  op_of_entry[r->entry_count] = -1;
  tg_graph *g = NULL;
  tg_status st = tg_graph_create(r->value_count, ops, alloc, &g);
  if (st != TG_OK) {
    tg__free(c->alloc, ops_before);
    tg__free(c->alloc, op_of_entry);
    return onnx_fail(c, st, "out of memory");
  }
  g->dim_order = TG_DIM_ORDER_NCHW;
  g->source = tg__strdup(alloc, r->source);
  if (g->source == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
  size_t inputs = 0, outputs = 0;
  for (size_t v = 0; st == TG_OK && v < r->value_count; ++v) {
    const onnx_value *x = &r->values[v];
    tg_tensor *t = &g->tensors[v];
    t->name = tg__strdup(alloc, x->name);
    if (t->name == NULL) {
      st = TG_ERROR_OUT_OF_HOST_MEMORY;
      break;
    }
    t->rank = x->rank;
    for (uint32_t d = 0; d < x->rank; ++d) t->shape[d] = x->dims[d];
    t->dtype = onnx_dtype(x->type);
    if (x->constant) t->flags |= TG_TENSOR_CONSTANT;
    if (x->kind == ONNX_KIND_INPUT) {
      ++inputs;
      t->dynamic_dims = x->dynamic;
    }
    if (x->is_output) ++outputs;
  }
  if (st == TG_OK) {
    g->inputs = tg__calloc(alloc, inputs ? inputs : 1, sizeof *g->inputs);
    g->outputs = tg__calloc(alloc, gp->n_output ? gp->n_output : 1, sizeof *g->outputs);
    if (g->inputs == NULL || g->outputs == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (st == TG_OK) {
    for (size_t v = 0; v < r->value_count; ++v)
      if (r->values[v].kind == ONNX_KIND_INPUT) {
        g->inputs[g->input_count++] = (uint32_t)v;
        g->tensors[v].flags |= TG_TENSOR_INPUT;
      }
    for (size_t k = 0; k < gp->n_output; ++k) {
      int64_t v = find_value(r, gp->output[k]->name);
      g->outputs[g->output_count++] = (uint32_t)v;
      g->tensors[v].flags |= TG_TENSOR_OUTPUT;
    }
  }
  size_t o = 0;
  for (size_t i = 0; st == TG_OK && i < r->entry_count; ++i) {
    const onnx_node *n = &r->nodes[i];
    const entry *e = &r->entries[i];
    if (op_of_entry[i] < 0) continue;
    tg_op *op = &g->ops[o++];
    op->subgraph = e->scope; /* a scope index until build_subgraphs maps it */
    const char *dom = e->proto->domain;
    const char *flow_name = entry_op_name(r, e);
    if (flow_name) {
      op->name = tg__strdup(alloc, flow_name);
      op->flags = TG_OP_CONTROL_FLOW;
    } else if (dom != NULL && dom[0] != '\0' && strcmp(dom, "ai.onnx") != 0) {
      size_t len = strlen(dom) + 1 + strlen(n->op) + 1;
      op->name = tg__malloc(alloc, len);
      if (op->name) snprintf(op->name, len, "%s.%s", dom, n->op);
    } else {
      op->name = tg__strdup(alloc, n->op);
    }
    size_t present_out = 0;
    for (size_t k = 0; k < n->nout; ++k) present_out += n->out[k] != NULL;
    op->inputs = tg__calloc(alloc, n->nin ? n->nin : 1, sizeof *op->inputs);
    op->outputs = tg__calloc(alloc, present_out ? present_out : 1, sizeof *op->outputs);
    if (op->name == NULL || op->inputs == NULL || op->outputs == NULL) {
      st = TG_ERROR_OUT_OF_HOST_MEMORY;
      break;
    }
    op->input_count = (uint32_t)n->nin;
    for (size_t k = 0; k < n->nin; ++k)
      op->inputs[k] = n->in[k] ? (int32_t)(n->in[k] - r->values) : -1;
    for (size_t k = 0; k < n->nout; ++k)
      if (n->out[k]) op->outputs[op->output_count++] = (int32_t)(n->out[k] - r->values);
  }
  if (st == TG_OK && r->scope_count > 1) st = build_subgraphs(r, g, ops_before, op_of_entry);
  tg__free(c->alloc, ops_before);
  tg__free(c->alloc, op_of_entry);
  if (st != TG_OK) {
    tg_graph_destroy(g);
    return onnx_fail(c, st, "out of memory");
  }
  *out = g;
  return TG_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* The model. */

static tg_status add_initializers(reader *r, const Onnx__GraphProto *gp, uint32_t scope, size_t *nv) {
  onnx_ctx *c = &r->c;
  for (size_t k = 0; k < gp->n_initializer; ++k) {
    const Onnx__TensorProto *t = gp->initializer[k];
    onnx_value *v = &r->values[*nv];
    if (t->name == NULL || t->name[0] == '\0')
      return onnx_fail(c, TG_ERROR_PARSE, "initializer %zu%s%s has no name", k, scope ? " of " : "",
                       scope ? r->scopes[scope].name : "");
    v->name = t->name;
    v->kind = ONNX_KIND_INITIALIZER;
    v->constant = 1;
    v->producer = -1;
    char what[160];
    snprintf(what, sizeof what, "initializer '%.100s'", t->name);
    tg_status st = onnx_value_from_tensor(c, t, what, v);
    if (st != TG_OK) return st;
    r->sorted[*nv].name = v->name;
    r->sorted[*nv].value = (uint32_t)*nv;
    r->node_of_value[*nv] = -1;
    r->scope_of_value[*nv] = scope;
    r->visible[*nv] = 1;
    ++*nv;
  }
  return TG_OK;
}

static tg_status read_model(reader *r, const Onnx__ModelProto *m, const tg_allocator *alloc, tg_graph **out) {
  onnx_ctx *c = &r->c;
  tg_status st;
  r->opset = -1;
  for (size_t k = 0; k < m->n_opset_import; ++k) {
    const Onnx__OperatorSetIdProto *o = m->opset_import[k];
    if ((o->domain == NULL || o->domain[0] == '\0' || strcmp(o->domain, "ai.onnx") == 0) && o->has_version)
      r->opset = o->version;
  }
  if (r->opset < 1)
    return onnx_fail(c, TG_ERROR_PARSE, "the model imports no opset of the default ONNX domain (opset_import)");
  if (m->graph == NULL) return onnx_fail(c, TG_ERROR_PARSE, "the model has no graph");
  const Onnx__GraphProto *gp = m->graph;
  r->graph = gp;
  if (gp->n_sparse_initializer > 0)
    return onnx_fail(c, TG_ERROR_UNSUPPORTED, "sparse initializers are not supported (%zu in the graph)",
                     gp->n_sparse_initializer);

  /* Lay the subgraphs out: entries in run order, scope 0 the main graph. */
  if ((st = grow(r, (void **)&r->scopes, &r->scope_cap, 1, sizeof *r->scopes)) != TG_OK) return st;
  memset(&r->scopes[0], 0, sizeof r->scopes[0]);
  r->scopes[0].graph = gp;
  r->scopes[0].name = "main";
  r->scopes[0].where = r->source;
  r->scopes[0].state = 1;
  r->scope_count = 1;
  if ((st = grow(r, (void **)&r->flows, &r->flow_cap, 1, sizeof *r->flows)) != TG_OK) return st;
  memset(&r->flows[0], 0, sizeof r->flows[0]);
  r->flow_count = 1;
  if ((st = flatten(r, gp, 0, 0)) != TG_OK) return st;
  r->scopes[0].end_entry = r->entry_count;

  /* Count the values; node counts and names are bounded by the file size. */
  size_t count = gp->n_input;
  for (size_t s = 0; s < r->scope_count; ++s) count += r->scopes[s].graph->n_initializer;
  for (size_t i = 0; i < r->entry_count; ++i)
    count += r->entries[i].role == ENTRY_NODE ? r->entries[i].proto->n_output : flow_out_count(r, &r->entries[i]);
  if (count > (size_t)INT32_MAX || r->entry_count > (size_t)INT32_MAX)
    return onnx_fail(c, TG_ERROR_UNSUPPORTED, "too many values (%zu) or nodes (%zu)", count, r->entry_count);
  r->values = tg__calloc(c->alloc, count ? count : 1, sizeof *r->values);
  r->visible = tg__calloc(c->alloc, count ? count : 1, 1);
  r->sorted = tg__calloc(c->alloc, count ? count : 1, sizeof *r->sorted);
  r->node_of_value = tg__calloc(c->alloc, count ? count : 1, sizeof *r->node_of_value);
  r->scope_of_value = tg__calloc(c->alloc, count ? count : 1, sizeof *r->scope_of_value);
  r->nodes = tg__calloc(c->alloc, r->entry_count ? r->entry_count : 1, sizeof *r->nodes);
  r->dead = tg__calloc(c->alloc, r->entry_count ? r->entry_count : 1, 1);
  if (!r->values || !r->visible || !r->sorted || !r->node_of_value || !r->nodes || !r->scope_of_value || !r->dead)
    return onnx_fail(c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");

  /* Initializers first (constants), sorted to let inputs that repeat them be recognised. */
  size_t nv = 0;
  if ((st = add_initializers(r, gp, 0, &nv)) != TG_OK) return st;
  size_t n_init = nv;
  qsort(r->sorted, n_init, sizeof *r->sorted, entry_cmp);
  r->value_count = n_init;
  for (size_t k = 1; k < n_init; ++k)
    if (strcmp(r->sorted[k - 1].name, r->sorted[k].name) == 0)
      return onnx_fail(c, TG_ERROR_GRAPH, "two initializers are named '%.100s'", r->sorted[k].name);
  for (size_t s = 1; s < r->scope_count; ++s)
    if ((st = add_initializers(r, r->scopes[s].graph, (uint32_t)s, &nv)) != TG_OK) return st;

  /* Graph inputs: the ones that are initializers too are constants with a default. */
  if ((st = tg__check_input_shapes(c->source, r->options, c->err)) != TG_OK) return st;
  size_t ninputs = 0;
  const char **input_names = tg__calloc(c->alloc, gp->n_input ? gp->n_input : 1, sizeof *input_names);
  if (input_names == NULL) return onnx_fail(c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
  for (size_t k = 0; k < gp->n_input; ++k) {
    const Onnx__ValueInfoProto *vi = gp->input[k];
    if (vi->name == NULL || vi->name[0] == '\0') {
      tg__free(c->alloc, input_names);
      return onnx_fail(c, TG_ERROR_PARSE, "graph input %zu has no name", k);
    }
    if (find_value(r, vi->name) < 0) input_names[ninputs++] = vi->name;
  }
  st = tg__unknown_input_shapes(c->source, r->options, input_names, ninputs, c->err);
  tg__free(c->alloc, input_names);
  for (size_t k = 0; k < gp->n_input && st == TG_OK; ++k) {
    const Onnx__ValueInfoProto *vi = gp->input[k];
    if (find_value(r, vi->name) >= 0) continue;
    onnx_value *v = &r->values[nv];
    v->name = vi->name;
    v->kind = ONNX_KIND_INPUT;
    v->producer = -1;
    r->node_of_value[nv] = -1;
    r->visible[nv] = 1;
    st = read_input(r, vi, v);
    ++nv;
  }
  if (st != TG_OK) return st;

  /* Node outputs (and what control-flow entries write). */
  for (size_t i = 0; i < r->entry_count; ++i) {
    const entry *e = &r->entries[i];
    size_t n = e->role == ENTRY_NODE ? e->proto->n_output : flow_out_count(r, e);
    for (size_t k = 0; k < n; ++k) {
      const char *name = e->role == ENTRY_NODE ? e->proto->output[k] : flow_out_name(r, e, k);
      if (name == NULL || name[0] == '\0') continue;
      onnx_value *v = &r->values[nv];
      v->name = name;
      v->kind = ONNX_KIND_NODE;
      v->producer = (int32_t)i;
      r->node_of_value[nv] = (int32_t)e->node_index;
      /* A loop's start writes its body's carried inputs (body scope) and its scan outputs
       * (outer); its ITERATION entry sits in the body. */
      uint32_t scope = e->scope;
      size_t lo = 0, hi = 0;
      if (e->role == ENTRY_BEGIN) body_inputs_written(r, e, &lo, &hi);
      if (k < hi - lo) scope = r->flows[e->flow].sub[0];
      r->scope_of_value[nv] = scope;
      ++nv;
    }
  }
  r->value_count = nv;
  for (size_t v = 0; v < nv; ++v) {
    r->sorted[v].name = r->values[v].name;
    r->sorted[v].value = (uint32_t)v;
  }
  qsort(r->sorted, nv, sizeof *r->sorted, entry_cmp);
  for (size_t k = 1; k < nv; ++k)
    if (strcmp(r->sorted[k - 1].name, r->sorted[k].name) == 0) {
      char a[64], b[64];
      uint32_t first = r->sorted[k - 1].value, second = r->sorted[k].value;
      return onnx_fail(c, TG_ERROR_GRAPH, "'%.100s' is written twice: it is %s and %s", r->sorted[k].name,
                       kind_text(r, first, a, sizeof a), kind_text(r, second, b, sizeof b));
    }

  /* Run the entries. */
  size_t max_in = 1, max_out = 1;
  for (size_t i = 0; i < r->entry_count; ++i) {
    if (r->entries[i].proto->n_input > max_in) max_in = r->entries[i].proto->n_input;
    if (r->entries[i].proto->n_output > max_out) max_out = r->entries[i].proto->n_output;
  }
  onnx_value **sin = tg__calloc(c->alloc, max_in, sizeof *sin);
  onnx_value **sout = tg__calloc(c->alloc, max_out, sizeof *sout);
  if (sin == NULL || sout == NULL) st = onnx_fail(c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
  for (size_t i = 0; st == TG_OK && i < r->entry_count; ++i) {
    const entry *e = &r->entries[i];
    onnx_node *n = &r->nodes[i];
    n->proto = e->proto;
    n->index = e->node_index;
    n->op = e->proto->op_type ? e->proto->op_type : "";
    n->opset = r->opset;
    n->nin = e->proto->n_input;
    n->nout = e->proto->n_output;
    if (!scope_live(r, e->scope)) {
      r->dead[i] = 1;
      continue;
    }
    c->source = r->scopes[e->scope].where;
    c->scope = r->scopes[e->scope].name;
    st = e->role == ENTRY_NODE ? run_node(r, i, sin, sout) : run_flow(r, i);
    c->source = r->source;
    c->scope = NULL;
  }
  tg__free(c->alloc, sin);
  tg__free(c->alloc, sout);
  if (st != TG_OK) return st;

  /* Graph outputs. */
  for (size_t k = 0; k < gp->n_output; ++k) {
    const char *name = gp->output[k]->name;
    int64_t v = name ? find_value(r, name) : -1;
    if (v < 0 || r->scope_of_value[v] != 0)
      return onnx_fail(c, TG_ERROR_GRAPH, "graph output %zu '%.100s' is not a value of the graph", k, name ? name : "");
    r->values[v].is_output = 1;
  }
  return build_graph(r, alloc, out);
}

static void reader_free(reader *r) {
  const tg_allocator *a = r->c.alloc;
  tg__free(a, r->values);
  tg__free(a, r->visible);
  tg__free(a, r->sorted);
  tg__free(a, r->node_of_value);
  tg__free(a, r->scope_of_value);
  tg__free(a, r->nodes);
  tg__free(a, r->dead);
  for (size_t f = 0; f < r->flow_count; ++f) tg__free(a, r->flows[f].captured);
  tg__free(a, r->flows);
  tg__free(a, r->scopes);
  tg__free(a, r->entries);
  onnx_arena_free(&r->c.arena);
}

/* A decoded file, read at several input sizes without decoding it again. */
struct tg__onnx_file {
  const char *source;
  const tg_allocator *alloc;
  onnx_decoded *decoded;
  const Onnx__ModelProto *model;
};

void tg__onnx_close(tg__onnx_file *f) {
  if (f == NULL) return;
  const tg_allocator *a = f->alloc;
  onnx_decoded_free(f->decoded, a);
  tg__free(a, f);
}

tg_status tg__onnx_open(const void *data, size_t length, const char *source, const tg_allocator *alloc,
                        tg__onnx_file **out, tg_error_info *err) {
  *out = NULL;
  alloc = tg__alloc_or_default(alloc);
  tg__onnx_file *f = tg__calloc(alloc, 1, sizeof *f);
  if (f == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", source);
  f->source = source;
  f->alloc = alloc;
  onnx_ctx c = {.source = source, .err = err, .alloc = alloc};
  c.arena.alloc = alloc;
  tg_status st = onnx_decode(&c, data, length, &f->decoded, &f->model);
  onnx_arena_free(&c.arena);
  if (st != TG_OK) {
    tg__onnx_close(f);
    return st;
  }
  *out = f;
  return TG_OK;
}

/* Every value as the reader left it (onnx_read_values). */
static void visit_values(reader *r, onnx_value_visit visit, void *user) {
  for (size_t v = 0; v < r->value_count; ++v) {
    const onnx_value *x = &r->values[v];
    uint32_t s = r->scope_of_value[v];
    onnx_value_report rep = {
        .name = x->name, .scope = r->scopes[s].name, .type = x->type, .live = scope_live(r, s),
        .has_shape = x->has_shape, .rank = x->has_shape ? x->rank : 0, .dims = x->dims
    };
    if (x->has_data) {
      rep.count = x->count;
      rep.ints = x->is_float ? NULL : x->i;
      rep.floats = x->is_float ? x->f : NULL;
    }
    visit(user, &rep);
  }
}

static tg_status read_file(const tg__onnx_file *f, const tg_model_options *options, tg_graph **out,
                          onnx_value_visit visit, void *user, tg_error_info *err) {
  *out = NULL;
  reader r;
  memset(&r, 0, sizeof r);
  r.c.source = f->source;
  r.source = f->source;
  r.c.err = err;
  r.c.alloc = f->alloc;
  r.c.arena.alloc = f->alloc;
  r.options = options;
  tg_status st = read_model(&r, f->model, f->alloc, out);
  if (st == TG_OK && visit) visit_values(&r, visit, user);
  reader_free(&r);
  return st;
}

tg_status tg__onnx_read(const tg__onnx_file *f, const tg_model_options *options, tg_graph **out,
                        tg_error_info *err) {
  return read_file(f, options, out, NULL, NULL, err);
}

tg_status tg_graph_parse_onnx(const void *data, size_t length, const char *source,
                              const tg_model_options *options, const tg_allocator *alloc,
                              tg_graph **out, tg_error_info *err) {
  if (out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = NULL;
  if (data == NULL && length > 0) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "data is NULL");
  tg__onnx_file *f = NULL;
  tg_status st = tg__onnx_open(data, length, source ? source : "<memory>", alloc, &f, err);
  if (st == TG_OK) st = tg__onnx_read(f, options, out, err);
  tg__onnx_close(f);
  return st;
}


tg_status onnx_read_values(const void *data, size_t length, const char *source,
                           const tg_model_options *options, const tg_allocator *alloc,
                           onnx_value_visit visit, void *user, tg_error_info *err) {
  if (visit == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "visit is NULL");
  if (data == NULL && length > 0) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "data is NULL");
  tg__onnx_file *f = NULL;
  tg_graph *g = NULL;
  tg_status st = tg__onnx_open(data, length, source ? source : "<memory>", alloc, &f, err);
  if (st == TG_OK) st = read_file(f, options, &g, visit, user, err);
  tg_graph_destroy(g);
  tg__onnx_close(f);
  return st;
}

const char *tg_onnx_supported_op(size_t index) { return onnx_op_at(index); }

#else /* !TANGRAM_HAVE_ONNX */

tg_status tg_graph_parse_onnx(const void *data, size_t length, const char *source,
                              const tg_model_options *options, const tg_allocator *alloc,
                              tg_graph **out, tg_error_info *err) {
  (void)data;
  (void)length;
  (void)options;
  (void)alloc;
  if (out) *out = NULL;
  return tg__error(err, TG_ERROR_UNSUPPORTED,
                   "%s: this build of Tangram reads no .onnx files (configured with TANGRAM_ONNX=OFF)",
                   source ? source : "<memory>");
}

const char *tg_onnx_supported_op(size_t index) {
  (void)index;
  return NULL;
}

tg_status tg__onnx_open(const void *data, size_t length, const char *source, const tg_allocator *alloc,
                        tg__onnx_file **out, tg_error_info *err) {
  (void)data;
  (void)length;
  (void)alloc;
  *out = NULL;
  return tg__error(err, TG_ERROR_UNSUPPORTED,
                   "%s: this build of Tangram reads no .onnx files (configured with TANGRAM_ONNX=OFF)", source);
}

tg_status tg__onnx_read(const tg__onnx_file *f, const tg_model_options *options, tg_graph **out,
                        tg_error_info *err) {
  (void)f;
  (void)options;
  *out = NULL;
  return tg__error(err, TG_ERROR_UNSUPPORTED, "this build of Tangram reads no .onnx files");
}

void tg__onnx_close(tg__onnx_file *f) { (void)f; }

tg_status onnx_read_values(const void *data, size_t length, const char *source,
                           const tg_model_options *options, const tg_allocator *alloc,
                           onnx_value_visit visit, void *user, tg_error_info *err) {
  (void)visit;
  (void)user;
  tg_graph *g = NULL;
  return tg_graph_parse_onnx(data, length, source, options, alloc, &g, err);
}

#endif

static tg_status parse_onnx_plain(const char *data, size_t length, const char *source,
                                  const tg_allocator *alloc, tg_graph **out, tg_error_info *err) {
  return tg_graph_parse_onnx(data, length, source, NULL, alloc, out, err);
}

static tg_status parse_onnx_with(const char *data, size_t length, const char *path, const void *options,
                                 const tg_allocator *alloc, void *out, tg_error_info *err) {
  return tg_graph_parse_onnx(data, length, path, options, alloc, out, err);
}

tg_status tg_graph_read_onnx(const char *path, const tg_model_options *options,
                             const tg_allocator *alloc, tg_graph **out, tg_error_info *err) {
  if (options == NULL || options->input_shape_count == 0)
    return tg__graph_read_file(path, parse_onnx_plain, alloc, out, err);
  if (out != NULL) *out = NULL;
  return tg__parse_file(path, NULL, parse_onnx_with, options, alloc, out, err);
}
