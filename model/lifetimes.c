/* Tensor lifetimes from a graph whose op order is the execution order. Rules (docs/models.md,
 * the same ones TFLite's GPU delegate uses): task = op index; constants are tensors with data
 * plus every output of an op whose present inputs are all constant; a tensor is planned when
 * an op writes it and it is neither constant nor a graph input/output (unless plan_io); its
 * interval runs from its producer to its last reader. With control flow (tg_subgraph), a loop
 * body runs again and again between the ops that start and end the loop: a tensor that the
 * body reads but that was written before it lives until the op that ends the loop. */
#include "model/model_internal.h"
#include "tangram/graph.h"

void tg_lifetimes_destroy(tg_lifetimes *l) {
  if (l == NULL) return;
  tg_allocator a = l->alloc;
  if (l->tensors)
    for (size_t i = 0; i < l->tensor_count; ++i) tg__free(&a, l->tensors[i].consumers);
  tg__free(&a, l->tensors);
  tg__free(&a, l);
}

static const char *op_name(const tg_op *op) { return op->name ? op->name : "?"; }

/* Mark graph inputs/outputs from the index lists too, so graphs built in code need only fill
 * one of the two. Returns TG_ERROR_GRAPH for an index out of range. */
static tg_status mark_io(const tg_graph *g, const uint32_t *list, size_t count, int *flags,
                         int bit, const char *what, tg_error_info *err) {
  for (size_t k = 0; k < count; ++k) {
    if (list[k] >= g->tensor_count)
      return tg__error(err, TG_ERROR_GRAPH, "%s: graph %s %zu is tensor %u, outside 0..%zu",
                       g->source ? g->source : "graph", what, k, list[k],
                       g->tensor_count ? g->tensor_count - 1 : 0);
    flags[list[k]] |= bit;
  }
  return TG_OK;
}

/* The last op that ends a loop whose body holds op `reader` but not `producer` (-1: written
 * before any op), or -1 when there is none. The subgraph table is consistent (checked). */
static int32_t loop_end_after(const tg_graph *g, size_t reader, int32_t producer) {
  int32_t until = -1;
  uint32_t k = g->ops[reader].subgraph;
  for (size_t steps = 0; k != 0 && steps < g->flow_count; ++steps) {
    const tg_subgraph *s = &g->subgraphs[k];
    int inside = producer >= (int32_t)s->first_op && producer < (int32_t)s->end_op;
    if (s->kind == TG_SUBGRAPH_BODY && !inside && (int32_t)s->control_op > until) until = (int32_t)s->control_op;
    k = s->parent;
  }
  return until;
}

tg_status tg_graph_compute_lifetimes(const tg_graph *g, const tg_lifetime_options *options,
                                     const tg_allocator *alloc, tg_lifetimes **out,
                                     tg_error_info *err) {
  if (out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = NULL;
  if (g == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "graph is NULL");
  /* Task indices are int32 in tg_tensor_lifetime. */
  if (g->op_count > (size_t)INT32_MAX || g->tensor_count > (size_t)INT32_MAX)
    return tg__error(err, TG_ERROR_UNSUPPORTED, "graph too large (%zu ops, %zu tensors)",
                     g->op_count, g->tensor_count);
  const int plan_io = options != NULL && options->plan_io;
  const char *src = g->source ? g->source : "graph";
  alloc = tg__alloc_or_default(alloc);

  tg_lifetimes *l = tg__calloc(alloc, 1, sizeof *l);
  if (l == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", src);
  l->alloc = *alloc;
  l->tensor_count = g->tensor_count;
  l->tensors = tg__calloc(alloc, g->tensor_count ? g->tensor_count : 1, sizeof *l->tensors);
  /* Scratch: io flags per tensor (bit 1 input, bit 2 output) and a fill cursor; the op that
   * ends the outermost loop reading it from outside its body (-1: none). */
  int *io = tg__calloc(alloc, g->tensor_count ? g->tensor_count : 1, sizeof *io);
  int32_t *until = tg__malloc(alloc, (g->tensor_count ? g->tensor_count : 1) * sizeof *until);
  if (l->tensors == NULL || io == NULL || until == NULL) {
    tg__free(alloc, io);
    tg__free(alloc, until);
    tg_lifetimes_destroy(l);
    return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", src);
  }
  tg_status st = tg__graph_check_subgraphs(g, err);
  if (st != TG_OK) goto fail;
  const int flow = g->flow_count > 0 && g->subgraphs != NULL;
  for (size_t t = 0; t < g->tensor_count; ++t) {
    tg_tensor_lifetime *tl = &l->tensors[t];
    tl->producer = -1;
    tl->first_task = -1;
    tl->last_task = -1;
    until[t] = -1;
    tl->constant = (g->tensors[t].flags & TG_TENSOR_CONSTANT) != 0;
    if (g->tensors[t].flags & TG_TENSOR_INPUT) io[t] |= 1;
    if (g->tensors[t].flags & TG_TENSOR_OUTPUT) io[t] |= 2;
  }
  if ((st = mark_io(g, g->inputs, g->input_count, io, 1, "input", err)) != TG_OK ||
      (st = mark_io(g, g->outputs, g->output_count, io, 2, "output", err)) != TG_OK)
    goto fail;

  /* One pass in execution order: reads must see a written (or given) tensor; constness
   * propagates forward. last_task temporarily holds the last reader. */
  for (size_t i = 0; i < g->op_count; ++i) {
    const tg_op *op = &g->ops[i];
    int any_input = 0, all_constant = 1;
    for (uint32_t k = 0; k < op->input_count; ++k) {
      int32_t t = op->inputs[k];
      if (t == -1) continue;
      if (t < 0 || (size_t)t >= g->tensor_count) {
        st = tg__error(err, TG_ERROR_GRAPH, "%s: op %zu (%s): input %u is tensor %d, outside 0..%zu",
                       src, i, op_name(op), k, (int)t, g->tensor_count ? g->tensor_count - 1 : 0);
        goto fail;
      }
      tg_tensor_lifetime *tl = &l->tensors[t];
      /* A zero-element tensor holds nothing: read like an absent input, never planned. */
      if (tg__tensor_zero_elements(&g->tensors[t])) continue;
      if (tl->producer < 0 && !(io[t] & 1) && !tl->constant) {
        st = tg__error(err, TG_ERROR_GRAPH, "%s: op %zu (%s) reads tensor '%s' before it is written",
                       src, i, op_name(op), g->tensors[t].name ? g->tensors[t].name : "?");
        goto fail;
      }
      any_input = 1;
      if (!tl->constant) all_constant = 0;
      if (flow) {
        int32_t end = loop_end_after(g, i, tl->producer);
        if (end > until[t]) until[t] = end;
      }
      /* Count each reader once even if it lists the tensor twice. */
      if (tl->last_task != (int32_t)i) {
        tl->last_task = (int32_t)i;
        tl->consumer_count++;
      }
    }
    for (uint32_t k = 0; k < op->output_count; ++k) {
      int32_t t = op->outputs[k];
      if (t < 0 || (size_t)t >= g->tensor_count) {
        st = tg__error(err, TG_ERROR_GRAPH, "%s: op %zu (%s): output %u is tensor %d, outside 0..%zu",
                       src, i, op_name(op), k, (int)t, g->tensor_count ? g->tensor_count - 1 : 0);
        goto fail;
      }
      tg_tensor_lifetime *tl = &l->tensors[t];
      const char *tname = g->tensors[t].name ? g->tensors[t].name : "?";
      if (tl->producer >= 0) {
        st = tg__error(err, TG_ERROR_GRAPH, "%s: op %zu (%s) writes tensor '%s', already written by op %d",
                       src, i, op_name(op), tname, (int)tl->producer);
        goto fail;
      }
      if (io[t] & 1) {
        st = tg__error(err, TG_ERROR_GRAPH, "%s: op %zu (%s) writes tensor '%s', which is a graph input",
                       src, i, op_name(op), tname);
        goto fail;
      }
      if (tl->constant) {
        st = tg__error(err, TG_ERROR_GRAPH, "%s: op %zu (%s) writes tensor '%s', which is constant",
                       src, i, op_name(op), tname);
        goto fail;
      }
      tl->producer = (int32_t)i;
    }
    /* Outputs of all-constant ops are constant (TFLite folds them: e.g. DEQUANTIZE of fp16
     * weights), except a control-flow op's: a loop's values change from one iteration to the
     * next. Done after the writes so an op cannot make its own inputs constant. */
    if (any_input && all_constant && !(op->flags & TG_OP_CONTROL_FLOW))
      for (uint32_t k = 0; k < op->output_count; ++k) l->tensors[op->outputs[k]].constant = 1;
  }

  for (size_t t = 0; t < g->tensor_count; ++t) {
    tg_tensor_lifetime *tl = &l->tensors[t];
    int32_t last_reader = tl->last_task;
    tl->persistent = io[t] != 0;
    if (tl->producer >= 0) tl->first_task = tl->producer;
    else if ((io[t] & 1) || (tl->constant && tl->consumer_count > 0)) tl->first_task = 0;
    else tl->first_task = -1;
    tl->last_task = last_reader >= 0 ? last_reader : tl->first_task;
    if (until[t] > tl->last_task) tl->last_task = until[t];
    if (tl->constant || tg__tensor_zero_elements(&g->tensors[t])) {
      tl->planned = 0; /* a zero-element tensor holds nothing */
    } else if (!tl->persistent) {
      tl->planned = tl->producer >= 0;
    } else if (plan_io && (tl->producer >= 0 || (io[t] & 1))) {
      tl->planned = 1;
      /* The caller reads outputs after the last op: nothing may reuse them before then. */
      if ((io[t] & 2) && g->op_count > 0) tl->last_task = (int32_t)(g->op_count - 1);
    }
    if (tl->consumer_count > 0) {
      tl->consumers = tg__calloc(alloc, tl->consumer_count, sizeof *tl->consumers);
      if (tl->consumers == NULL) {
        st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", src);
        goto fail;
      }
    }
  }
  /* Fill consumers in op order (ascending); io[] is reused as the fill cursor. */
  memset(io, 0, (g->tensor_count ? g->tensor_count : 1) * sizeof *io);
  for (size_t i = 0; i < g->op_count; ++i) {
    const tg_op *op = &g->ops[i];
    for (uint32_t k = 0; k < op->input_count; ++k) {
      int32_t t = op->inputs[k];
      if (t == -1 || tg__tensor_zero_elements(&g->tensors[t])) continue;
      tg_tensor_lifetime *tl = &l->tensors[t];
      int n = io[t];
      if (n > 0 && tl->consumers[n - 1] == (uint32_t)i) continue;
      tl->consumers[n] = (uint32_t)i;
      io[t] = n + 1;
    }
  }
  tg__free(alloc, io);
  tg__free(alloc, until);
  *out = l;
  return TG_OK;

fail:
  tg__free(alloc, io);
  tg__free(alloc, until);
  tg_lifetimes_destroy(l);
  return st;
}
