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
#include "tangram/model.h"

#ifdef TANGRAM_HAVE_ONNX

#include "model/onnx_internal.h"

typedef struct name_entry {
  const char *name;
  uint32_t value;
} name_entry;

typedef struct reader {
  onnx_ctx c;
  const tg_model_options *options;
  const Onnx__GraphProto *graph;
  int64_t opset;
  onnx_value *values;
  size_t value_count;
  uint8_t *visible;          /* per value: defined by the time the current node runs */
  name_entry *sorted;        /* value names, sorted */
  int32_t *node_of_value;    /* per value: the node that writes it, -1 */
  onnx_node *nodes;          /* per node (arena) */
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
/* Nodes. */

static tg_status check_subgraphs(onnx_ctx *c, const onnx_node *n) {
  for (size_t k = 0; k < n->proto->n_attribute; ++k) {
    const Onnx__AttributeProto *a = n->proto->attribute[k];
    int graph_type = a->has_type && (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH ||
                                     a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS);
    if (graph_type || a->g != NULL || a->n_graphs > 0)
      return onnx_fail_node(c, n, TG_ERROR_UNSUPPORTED,
                            "has a subgraph (attribute '%.60s'): control flow (If, Loop, Scan) is not supported; "
                            "export the model with the branches resolved",
                            a->name ? a->name : "");
  }
  return TG_OK;
}

static tg_status run_node(reader *r, size_t index, onnx_value **scratch_in, onnx_value **scratch_out) {
  onnx_ctx *c = &r->c;
  const Onnx__NodeProto *np = r->graph->node[index];
  onnx_node *n = &r->nodes[index];
  n->proto = np;
  n->index = index;
  n->op = np->op_type ? np->op_type : "";
  n->opset = r->opset;
  n->nin = np->n_input;
  n->nout = np->n_output;
  n->in = scratch_in;
  n->out = scratch_out;
  if (n->op[0] == '\0') return onnx_fail_node(c, n, TG_ERROR_PARSE, "has no op type");
  tg_status st = check_subgraphs(c, n);
  if (st != TG_OK) return st;
  for (size_t k = 0; k < np->n_input; ++k) {
    const char *name = np->input[k];
    n->in[k] = NULL;
    if (name == NULL || name[0] == '\0') continue;
    int64_t v = find_value(r, name);
    if (v < 0)
      return onnx_fail_node(c, n, TG_ERROR_GRAPH,
                            "reads '%.100s', which is neither a graph input, an initializer nor an output of a node",
                            name);
    if (!r->visible[v])
      return onnx_fail_node(c, n, TG_ERROR_GRAPH,
                            "reads '%.100s' before node %d writes it: the nodes are not in topological order",
                            name, (int)r->node_of_value[v]);
    n->in[k] = &r->values[v];
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

/* ------------------------------------------------------------------------------------------ */
/* The graph. */

static tg_status build_graph(reader *r, const tg_allocator *alloc, tg_graph **out) {
  onnx_ctx *c = &r->c;
  const Onnx__GraphProto *gp = r->graph;
  size_t ops = 0;
  for (size_t i = 0; i < gp->n_node; ++i) ops += !r->nodes[i].folded;
  tg_graph *g = NULL;
  tg_status st = tg_graph_create(r->value_count, ops, alloc, &g);
  if (st != TG_OK) return onnx_fail(c, st, "out of memory");
  g->dim_order = TG_DIM_ORDER_NCHW;
  g->source = tg__strdup(alloc, c->source);
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
  for (size_t i = 0; st == TG_OK && i < gp->n_node; ++i) {
    const onnx_node *n = &r->nodes[i];
    if (n->folded) continue;
    tg_op *op = &g->ops[o++];
    const char *dom = n->proto->domain;
    if (dom != NULL && dom[0] != '\0' && strcmp(dom, "ai.onnx") != 0) {
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
  if (st != TG_OK) {
    tg_graph_destroy(g);
    return onnx_fail(c, st, "out of memory");
  }
  *out = g;
  return TG_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* The model. */

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

  /* Count the values; node counts and names are bounded by the file size. */
  size_t count = gp->n_initializer + gp->n_input;
  for (size_t i = 0; i < gp->n_node; ++i) count += gp->node[i]->n_output;
  if (count > (size_t)INT32_MAX || gp->n_node > (size_t)INT32_MAX)
    return onnx_fail(c, TG_ERROR_UNSUPPORTED, "too many values (%zu) or nodes (%zu)", count, gp->n_node);
  r->values = tg__calloc(c->alloc, count ? count : 1, sizeof *r->values);
  r->visible = tg__calloc(c->alloc, count ? count : 1, 1);
  r->sorted = tg__calloc(c->alloc, count ? count : 1, sizeof *r->sorted);
  r->node_of_value = tg__calloc(c->alloc, count ? count : 1, sizeof *r->node_of_value);
  r->nodes = tg__calloc(c->alloc, gp->n_node ? gp->n_node : 1, sizeof *r->nodes);
  if (!r->values || !r->visible || !r->sorted || !r->node_of_value || !r->nodes)
    return onnx_fail(c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");

  /* Initializers first (constants), sorted to let inputs that repeat them be recognised. */
  size_t nv = 0;
  for (size_t k = 0; k < gp->n_initializer; ++k) {
    const Onnx__TensorProto *t = gp->initializer[k];
    onnx_value *v = &r->values[nv];
    if (t->name == NULL || t->name[0] == '\0')
      return onnx_fail(c, TG_ERROR_PARSE, "initializer %zu has no name", k);
    v->name = t->name;
    v->kind = ONNX_KIND_INITIALIZER;
    v->constant = 1;
    v->producer = -1;
    char what[160];
    snprintf(what, sizeof what, "initializer '%.100s'", t->name);
    if ((st = onnx_value_from_tensor(c, t, what, v)) != TG_OK) return st;
    r->sorted[nv].name = v->name;
    r->sorted[nv].value = (uint32_t)nv;
    r->node_of_value[nv] = -1;
    r->visible[nv] = 1;
    ++nv;
  }
  size_t n_init = nv;
  qsort(r->sorted, n_init, sizeof *r->sorted, entry_cmp);
  r->value_count = n_init;
  for (size_t k = 1; k < n_init; ++k)
    if (strcmp(r->sorted[k - 1].name, r->sorted[k].name) == 0)
      return onnx_fail(c, TG_ERROR_GRAPH, "two initializers are named '%.100s'", r->sorted[k].name);

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

  /* Node outputs. */
  for (size_t i = 0; i < gp->n_node; ++i) {
    const Onnx__NodeProto *np = gp->node[i];
    for (size_t k = 0; k < np->n_output; ++k) {
      if (np->output[k] == NULL || np->output[k][0] == '\0') continue;
      onnx_value *v = &r->values[nv];
      v->name = np->output[k];
      v->kind = ONNX_KIND_NODE;
      v->producer = (int32_t)i;
      r->node_of_value[nv] = (int32_t)i;
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

  /* Run the nodes. */
  size_t max_in = 1, max_out = 1;
  for (size_t i = 0; i < gp->n_node; ++i) {
    if (gp->node[i]->n_input > max_in) max_in = gp->node[i]->n_input;
    if (gp->node[i]->n_output > max_out) max_out = gp->node[i]->n_output;
  }
  onnx_value **sin = tg__calloc(c->alloc, max_in, sizeof *sin);
  onnx_value **sout = tg__calloc(c->alloc, max_out, sizeof *sout);
  if (sin == NULL || sout == NULL) st = onnx_fail(c, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
  for (size_t i = 0; st == TG_OK && i < gp->n_node; ++i) st = run_node(r, i, sin, sout);
  tg__free(c->alloc, sin);
  tg__free(c->alloc, sout);
  if (st != TG_OK) return st;

  /* Graph outputs. */
  for (size_t k = 0; k < gp->n_output; ++k) {
    const char *name = gp->output[k]->name;
    int64_t v = name ? find_value(r, name) : -1;
    if (v < 0)
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
  tg__free(a, r->nodes);
  onnx_arena_free(&r->c.arena);
}

tg_status tg_graph_parse_onnx(const void *data, size_t length, const char *source,
                              const tg_model_options *options, const tg_allocator *alloc,
                              tg_graph **out, tg_error_info *err) {
  if (out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = NULL;
  if (data == NULL && length > 0) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "data is NULL");
  alloc = tg__alloc_or_default(alloc);
  reader r;
  memset(&r, 0, sizeof r);
  r.c.source = source ? source : "<memory>";
  r.c.err = err;
  r.c.alloc = alloc;
  r.c.arena.alloc = alloc;
  r.options = options;
  onnx_decoded *d = NULL;
  const Onnx__ModelProto *m = NULL;
  tg_status st = onnx_decode(&r.c, data, length, &d, &m);
  if (st == TG_OK) st = read_model(&r, m, alloc, out);
  reader_free(&r);
  onnx_decoded_free(d, alloc);
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

#endif

static tg_status parse_onnx_plain(const char *data, size_t length, const char *source,
                                  const tg_allocator *alloc, tg_graph **out, tg_error_info *err) {
  return tg_graph_parse_onnx(data, length, source, NULL, alloc, out, err);
}

tg_status tg_graph_read_onnx(const char *path, const tg_model_options *options,
                             const tg_allocator *alloc, tg_graph **out, tg_error_info *err) {
  if (options == NULL || options->input_shape_count == 0)
    return tg__graph_read_file(path, parse_onnx_plain, alloc, out, err);
  if (out == NULL || path == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "path or out is NULL");
  *out = NULL;
  alloc = tg__alloc_or_default(alloc);
  char *data;
  size_t length;
  tg_status st = tg__read_file(path, alloc, &data, &length, err);
  if (st != TG_OK) return st;
  st = tg_graph_parse_onnx(data, length, path, options, alloc, out, err);
  tg__free(alloc, data);
  return st;
}
