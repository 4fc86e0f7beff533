/* Graph construction and destruction. Readers and lifetimes live in their own files. */
#include "tangram/graph.h"

#include <string.h>

#include "model/model_internal.h"

tg_status tg_graph_create(size_t tensor_count, size_t op_count, const tg_allocator *alloc,
                          tg_graph **out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  alloc = tg__alloc_or_default(alloc);
  tg_graph *g = tg__calloc(alloc, 1, sizeof *g);
  if (g == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  g->alloc = *alloc;
  g->subgraph_count = 1;
  g->tensor_count = tensor_count;
  g->op_count = op_count;
  g->tensors = tg__calloc(alloc, tensor_count ? tensor_count : 1, sizeof *g->tensors);
  g->ops = tg__calloc(alloc, op_count ? op_count : 1, sizeof *g->ops);
  if (g->tensors == NULL || g->ops == NULL) {
    tg_graph_destroy(g);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  return (*out = g), TG_OK;
}

void tg_graph_destroy(tg_graph *g) {
  if (g == NULL) return;
  tg_allocator a = g->alloc;
  if (g->tensors)
    for (size_t i = 0; i < g->tensor_count; ++i) tg__free(&a, g->tensors[i].name);
  if (g->ops)
    for (size_t i = 0; i < g->op_count; ++i) {
      tg__free(&a, g->ops[i].name);
      tg__free(&a, g->ops[i].inputs);
      tg__free(&a, g->ops[i].outputs);
    }
  if (g->subgraphs)
    for (size_t i = 0; i < g->flow_count; ++i) tg__free(&a, g->subgraphs[i].name);
  tg__free(&a, g->subgraphs);
  tg__free(&a, g->tensors);
  tg__free(&a, g->ops);
  tg__free(&a, g->inputs);
  tg__free(&a, g->outputs);
  tg__free(&a, g->source);
  tg__free(&a, g);
}

tg_status tg_graph_set_tensor(tg_graph *g, size_t index, const char *name, uint32_t rank,
                              const int64_t *shape, tg_dtype dtype, uint32_t flags) {
  if (g == NULL || index >= g->tensor_count || rank > TG_MAX_RANK || name == NULL ||
      (rank > 0 && shape == NULL))
    return TG_ERROR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < rank; ++i)
    if (shape[i] < 0) return TG_ERROR_INVALID_ARGUMENT;
  char *copy = tg__strdup(&g->alloc, name);
  if (copy == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_tensor *t = &g->tensors[index];
  tg__free(&g->alloc, t->name);
  t->name = copy;
  t->rank = rank;
  memset(t->shape, 0, sizeof t->shape);
  for (uint32_t i = 0; i < rank; ++i) t->shape[i] = shape[i];
  t->dtype = dtype;
  t->flags = flags;
  return TG_OK;
}

tg_status tg_graph_set_op(tg_graph *g, size_t index, const char *name, uint32_t input_count,
                          const int32_t *inputs, uint32_t output_count, const int32_t *outputs) {
  if (g == NULL || index >= g->op_count || name == NULL || (input_count && !inputs) ||
      (output_count && !outputs))
    return TG_ERROR_INVALID_ARGUMENT;
  char *copy = tg__strdup(&g->alloc, name);
  int32_t *in = tg__calloc(&g->alloc, input_count ? input_count : 1, sizeof *in);
  int32_t *out = tg__calloc(&g->alloc, output_count ? output_count : 1, sizeof *out);
  if (!copy || !in || !out) {
    tg__free(&g->alloc, copy);
    tg__free(&g->alloc, in);
    tg__free(&g->alloc, out);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (input_count) memcpy(in, inputs, input_count * sizeof *in);
  if (output_count) memcpy(out, outputs, output_count * sizeof *out);
  tg_op *op = &g->ops[index];
  tg__free(&g->alloc, op->name);
  tg__free(&g->alloc, op->inputs);
  tg__free(&g->alloc, op->outputs);
  op->name = copy;
  op->input_count = input_count;
  op->output_count = output_count;
  op->inputs = in;
  op->outputs = out;
  return TG_OK;
}

tg_status tg_graph_set_io(tg_graph *g, size_t input_count, const uint32_t *inputs,
                          size_t output_count, const uint32_t *outputs) {
  if (g == NULL || (input_count && !inputs) || (output_count && !outputs))
    return TG_ERROR_INVALID_ARGUMENT;
  for (size_t i = 0; i < input_count; ++i)
    if (inputs[i] >= g->tensor_count) return TG_ERROR_INVALID_ARGUMENT;
  for (size_t i = 0; i < output_count; ++i)
    if (outputs[i] >= g->tensor_count) return TG_ERROR_INVALID_ARGUMENT;
  uint32_t *in = tg__calloc(&g->alloc, input_count ? input_count : 1, sizeof *in);
  uint32_t *out = tg__calloc(&g->alloc, output_count ? output_count : 1, sizeof *out);
  if (!in || !out) {
    tg__free(&g->alloc, in);
    tg__free(&g->alloc, out);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (input_count) memcpy(in, inputs, input_count * sizeof *in);
  if (output_count) memcpy(out, outputs, output_count * sizeof *out);
  tg__free(&g->alloc, g->inputs);
  tg__free(&g->alloc, g->outputs);
  for (size_t t = 0; t < g->tensor_count; ++t) g->tensors[t].flags &= ~(uint32_t)(TG_TENSOR_INPUT | TG_TENSOR_OUTPUT);
  g->inputs = in;
  g->input_count = input_count;
  g->outputs = out;
  g->output_count = output_count;
  for (size_t i = 0; i < input_count; ++i) g->tensors[inputs[i]].flags |= TG_TENSOR_INPUT;
  for (size_t i = 0; i < output_count; ++i) g->tensors[outputs[i]].flags |= TG_TENSOR_OUTPUT;
  return TG_OK;
}

tg_status tg__parse_file(const char *path, const char *who, tg__file_parse_fn parse, const void *user,
                         const tg_allocator *alloc, void *out, tg_error_info *err) {
  if (out == NULL || path == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "%s%spath or out is NULL", who ? who : "", who ? ": " : "");
  alloc = tg__alloc_or_default(alloc);
  char *data = NULL;
  size_t length = 0;
  tg_status st = tg__read_file(path, alloc, &data, &length, err);
  if (st != TG_OK) return st;
  st = parse(data, length, path, user, alloc, out, err);
  tg__free(alloc, data);
  return st;
}

/* tg__graph_read_file's parser, as tg__parse_file's `user`. */
typedef struct graph_parser {
  tg__graph_parse_fn parse;
} graph_parser;

static tg_status parse_graph(const char *data, size_t length, const char *path, const void *user,
                             const tg_allocator *alloc, void *out, tg_error_info *err) {
  return ((const graph_parser *)user)->parse(data, length, path, alloc, out, err);
}

tg_status tg__graph_read_file(const char *path, tg__graph_parse_fn parse, const tg_allocator *alloc,
                              tg_graph **out, tg_error_info *err) {
  if (out != NULL) *out = NULL;
  const graph_parser p = {parse};
  return tg__parse_file(path, NULL, parse_graph, &p, alloc, out, err);
}

/* ------------------------------------------------------------------------------------------ */
/* Control flow: the order of one execution. */

const char *tg_graph_op_subgraph_name(const tg_graph *g, size_t op) {
  if (g == NULL || g->subgraphs == NULL || g->flow_count == 0 || op >= g->op_count) return "main";
  uint32_t s = g->ops[op].subgraph;
  if (s >= g->flow_count || g->subgraphs[s].name == NULL) return "main";
  return g->subgraphs[s].name;
}

tg_status tg__graph_check_subgraphs(const tg_graph *g, tg_error_info *err) {
  if (g->flow_count == 0 || g->subgraphs == NULL) return TG_OK;
  const char *src = g->source ? g->source : "graph";
  for (size_t o = 0; o < g->op_count; ++o)
    if (g->ops[o].subgraph >= g->flow_count)
      return tg__error(err, TG_ERROR_GRAPH, "%s: op %zu names subgraph %u of %zu", src, o, g->ops[o].subgraph,
                       g->flow_count);
  for (size_t k = 1; k < g->flow_count; ++k) {
    const tg_subgraph *s = &g->subgraphs[k];
    if (s->parent >= k || s->first_op > s->end_op || s->end_op > g->op_count || s->control_op < s->end_op ||
        s->control_op >= g->op_count)
      return tg__error(err, TG_ERROR_GRAPH, "%s: subgraph %zu ('%s') has an inconsistent op range or parent", src,
                       k, s->name ? s->name : "");
  }
  return TG_OK;
}

typedef struct run_order {
  const tg_graph *g;
  const tg_allocator *alloc;
  uint32_t branch, iterations;
  uint32_t *ops;
  size_t count, capacity;
  tg_error_info *err;
} run_order;

static tg_status order_emit(run_order *r, size_t op) {
  if (r->count == r->capacity) {
    size_t cap = r->capacity ? r->capacity * 2 : 64;
    if (cap > ((size_t)1 << 31)) cap = (size_t)1 << 31;
    if (r->count >= cap)
      return tg__error(r->err, TG_ERROR_LIMIT, "%s: the run order has more than 2^31 ops",
                       r->g->source ? r->g->source : "graph");
    uint32_t *grown = tg__realloc(r->alloc, r->ops, r->capacity * sizeof *grown, cap * sizeof *grown);
    if (grown == NULL) return tg__error(r->err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    r->ops = grown;
    r->capacity = cap;
  }
  r->ops[r->count++] = (uint32_t)op;
  return TG_OK;
}

static tg_status order_walk(run_order *r, uint32_t scope, size_t from, size_t to, unsigned depth) {
  const tg_graph *g = r->g;
  const char *src = g->source ? g->source : "graph";
  if (depth > 64) return tg__error(r->err, TG_ERROR_GRAPH, "%s: subgraphs nest more than 64 deep", src);
  size_t o = from;
  while (o < to) {
    uint32_t sg = g->ops[o].subgraph;
    tg_status st;
    if (sg == scope) {
      if ((st = order_emit(r, o)) != TG_OK) return st;
      ++o;
      continue;
    }
    /* The child of `scope` that holds op o. */
    uint32_t c = sg;
    size_t steps = 0;
    while (c < g->flow_count && c != 0 && g->subgraphs[c].parent != scope && steps++ <= g->flow_count)
      c = g->subgraphs[c].parent;
    if (c == 0 || c >= g->flow_count || g->subgraphs[c].parent != scope || g->subgraphs[c].first_op != o)
      return tg__error(r->err, TG_ERROR_GRAPH, "%s: op %zu (subgraph %u) does not start a subgraph of subgraph %u",
                       src, o, sg, scope);
    uint32_t control = g->subgraphs[c].control_op;
    tg_subgraph_kind kind = g->subgraphs[c].kind;
    /* Its siblings (the other subgraphs of the same op), in op order. The branch that runs:
     * the one asked for, else the nearest below it, else the first there is (a branch whose
     * condition was known when the model was read may be the only one left). */
    size_t end = o;
    uint32_t want = UINT32_MAX, first_branch = UINT32_MAX;
    for (uint32_t k = 1; k < g->flow_count; ++k) {
      const tg_subgraph *s = &g->subgraphs[k];
      if (s->parent != scope || s->control_op != control) continue;
      if (s->end_op > end) end = s->end_op;
      if (s->branch < first_branch) first_branch = s->branch;
      if (s->branch <= r->branch && (want == UINT32_MAX || s->branch > want)) want = s->branch;
    }
    if (end > to)
      return tg__error(r->err, TG_ERROR_GRAPH, "%s: subgraph %u runs past its parent's ops", src, c);
    if (want == UINT32_MAX) want = first_branch;
    uint32_t rounds = kind == TG_SUBGRAPH_BODY ? r->iterations : 1;
    for (uint32_t it = 0; it < rounds; ++it) {
      size_t at = o;
      while (at < end) {
        uint32_t k = 1;
        for (; k < g->flow_count; ++k) {
          const tg_subgraph *s = &g->subgraphs[k];
          if (s->parent == scope && s->control_op == control && s->first_op == at && s->end_op > at) break;
        }
        if (k == g->flow_count)
          return tg__error(r->err, TG_ERROR_GRAPH, "%s: op %zu lies in no subgraph of op %u", src, at, control);
        const tg_subgraph *s = &g->subgraphs[k];
        if (kind != TG_SUBGRAPH_BRANCH || s->branch == want)
          if ((st = order_walk(r, k, s->first_op, s->end_op, depth + 1)) != TG_OK) return st;
        at = s->end_op;
      }
    }
    o = end;
  }
  return TG_OK;
}

tg_status tg_graph_run_order(const tg_graph *g, uint32_t branch, uint32_t iterations,
                             const tg_allocator *alloc, uint32_t **order, size_t *count,
                             tg_error_info *err) {
  if (g == NULL || order == NULL || count == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "graph, order or count is NULL");
  *order = NULL;
  *count = 0;
  alloc = tg__alloc_or_default(alloc);
  const char *src = g->source ? g->source : "graph";
  if (g->op_count > ((size_t)1 << 31))
    return tg__error(err, TG_ERROR_LIMIT, "%s: more than 2^31 ops", src);
  run_order r = {g, alloc, branch, iterations, NULL, 0, 0, err};
  tg_status st = TG_OK;
  if (g->flow_count == 0 || g->subgraphs == NULL) {
    for (size_t o = 0; st == TG_OK && o < g->op_count; ++o) st = order_emit(&r, o);
  } else if ((st = tg__graph_check_subgraphs(g, err)) == TG_OK) {
    st = order_walk(&r, 0, 0, g->op_count, 0);
  }
  if (st != TG_OK) {
    tg__free(alloc, r.ops);
    return st;
  }
  *order = r.ops;
  *count = r.count;
  return TG_OK;
}

int tg__dims_equal(const int64_t *a, uint32_t a_rank, const int64_t *b, uint32_t b_rank) {
  if (a_rank != b_rank) return 0;
  for (uint32_t d = 0; d < a_rank; ++d)
    if (a[d] != b[d]) return 0;
  return 1;
}

int tg__tensor_same_shape(const tg_tensor *a, const tg_tensor *b) {
  return tg__dims_equal(a->shape, a->rank, b->shape, b->rank);
}

int tg__tensor_zero_elements(const tg_tensor *t) {
  for (uint32_t d = 0; d < t->rank && d < TG_MAX_RANK; ++d)
    if (t->shape[d] == 0) return 1;
  return 0;
}
