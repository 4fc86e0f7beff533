/* Lifetimes of graphs with control flow (tg_subgraph), built in code: a value a loop body reads
 * from before the body lives until the op that ends the loop (whether or not that op lists it),
 * nested bodies and If branches included; an inconsistent subgraph table is refused. And a
 * property over random graphs with nested loops (one or two subgraphs per loop: Loop / WHILE)
 * and Ifs (with both branches, or one left): for every branch and 0 to 3 iterations, replaying
 * tg_graph_run_order, no two planned tensors whose intervals are disjoint (which any plan may
 * overlap) ever clobber each other: every read sees the last write of its own tensor. */
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tangram/graph.h"

/* ---- graphs built in code ---- */

enum { MAX_T = 96, MAX_O = 96, MAX_S = 24, MAX_IN = 8 };

typedef struct draft_op {
  const char *name;
  int32_t in[MAX_IN], out[MAX_IN];
  uint32_t nin, nout, subgraph, flags;
} draft_op;

typedef struct draft {
  size_t nt, no, ns;
  uint32_t tensor_subgraph[MAX_T];
  uint32_t tensor_flags[MAX_T];
  draft_op ops[MAX_O];
  tg_subgraph subs[MAX_S];
} draft;

static tg_graph *build(const draft *d) {
  tg_graph *g = NULL;
  assert_int_equal(tg_graph_create(d->nt, d->no, NULL, &g), TG_OK);
  static const int64_t shape[2] = {1, 4};
  uint32_t inputs[MAX_T], outputs[MAX_T];
  size_t ni = 0, no = 0;
  for (size_t t = 0; t < d->nt; ++t) {
    char name[32];
    snprintf(name, sizeof name, "t%zu", t);
    assert_int_equal(tg_graph_set_tensor(g, t, name, 2, shape, TG_DTYPE_FLOAT32, 0), TG_OK);
    g->tensors[t].subgraph = d->tensor_subgraph[t];
    if (d->tensor_flags[t] & TG_TENSOR_INPUT) inputs[ni++] = (uint32_t)t;
    if (d->tensor_flags[t] & TG_TENSOR_OUTPUT) outputs[no++] = (uint32_t)t;
  }
  assert_int_equal(tg_graph_set_io(g, ni, inputs, no, outputs), TG_OK);
  for (size_t o = 0; o < d->no; ++o) {
    const draft_op *x = &d->ops[o];
    assert_int_equal(tg_graph_set_op(g, o, x->name, x->nin, x->in, x->nout, x->out), TG_OK);
    g->ops[o].subgraph = x->subgraph;
    g->ops[o].flags = x->flags;
  }
  if (d->ns > 1) {
    g->subgraphs = g->alloc.alloc(g->alloc.user, d->ns * sizeof *g->subgraphs);
    assert_non_null(g->subgraphs);
    memcpy(g->subgraphs, d->subs, d->ns * sizeof *g->subgraphs);
    g->flow_count = d->ns;
    for (size_t s = 0; s < d->ns; ++s) {
      char *name = g->alloc.alloc(g->alloc.user, 32);
      assert_non_null(name);
      snprintf(name, 32, "s%zu", s);
      g->subgraphs[s].name = name;
    }
  }
  return g;
}

static uint32_t add_tensor(draft *d, uint32_t subgraph) {
  assert_true(d->nt < MAX_T);
  d->tensor_subgraph[d->nt] = subgraph;
  d->tensor_flags[d->nt] = 0;
  return (uint32_t)d->nt++;
}

static size_t add_op(draft *d, const char *name, uint32_t subgraph, uint32_t flags, const uint32_t *in, uint32_t nin,
                     const uint32_t *out, uint32_t nout) {
  assert_true(d->no < MAX_O && nin <= MAX_IN && nout <= MAX_IN);
  draft_op *x = &d->ops[d->no];
  memset(x, 0, sizeof *x);
  x->name = name;
  x->subgraph = subgraph;
  x->flags = flags;
  x->nin = nin;
  x->nout = nout;
  for (uint32_t k = 0; k < nin; ++k) x->in[k] = (int32_t)in[k];
  for (uint32_t k = 0; k < nout; ++k) x->out[k] = (int32_t)out[k];
  return d->no++;
}

static uint32_t add_subgraph(draft *d, tg_subgraph_kind kind, uint32_t parent, uint32_t branch) {
  assert_true(d->ns < MAX_S);
  tg_subgraph *s = &d->subs[d->ns];
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->parent = parent;
  s->branch = branch;
  s->first_op = (uint32_t)d->no;
  return (uint32_t)d->ns++;
}

/* ---- known answers ---- */

/* x = A(in); L (start) writes b; body [B(b, x) -> c; C(c) -> e]; L.end(b, e) -> y (not reading
 * x). With `nested`, the body holds an inner loop over [D(e, x, c) -> f] ending at L2.end(f, e)
 * -> h, and L.end reads h too. With `branch`, the body is an If's then branch instead. */
static void outer_values_live_to_the_loop_end(void **state) {
  (void)state;
  for (int variant = 0; variant < 3; ++variant) {
    draft d;
    memset(&d, 0, sizeof d);
    d.ns = 1;
    const uint32_t in = add_tensor(&d, 0), x = add_tensor(&d, 0);
    d.tensor_flags[in] = TG_TENSOR_INPUT;
    add_op(&d, "A", 0, 0, &in, 1, &x, 1);
    const tg_subgraph_kind kind = variant == 2 ? TG_SUBGRAPH_BRANCH : TG_SUBGRAPH_BODY;
    uint32_t b = 0;
    if (kind == TG_SUBGRAPH_BODY) {
      b = add_tensor(&d, 1);
      add_op(&d, "L", 0, TG_OP_CONTROL_FLOW, &x, 0, &b, 1);
    }
    const uint32_t body = add_subgraph(&d, kind, 0, 0);
    const uint32_t c = add_tensor(&d, body), e = add_tensor(&d, body);
    const uint32_t bx[2] = {kind == TG_SUBGRAPH_BODY ? b : in, x};
    const size_t op_b = add_op(&d, "B", body, 0, bx, 2, &c, 1);
    add_op(&d, "C", body, 0, &c, 1, &e, 1);
    uint32_t h = e;
    size_t inner_end = 0;
    if (variant == 1) {
      const uint32_t inner = add_subgraph(&d, TG_SUBGRAPH_BODY, body, 0);
      const uint32_t f = add_tensor(&d, inner);
      const uint32_t ecx[3] = {e, x, c};
      add_op(&d, "D", inner, 0, ecx, 3, &f, 1);
      d.subs[inner].end_op = (uint32_t)d.no;
      h = add_tensor(&d, body);
      const uint32_t fe[2] = {f, e};
      inner_end = add_op(&d, "L2.end", body, TG_OP_CONTROL_FLOW, fe, 2, &h, 1);
      d.subs[inner].control_op = (uint32_t)inner_end;
    }
    d.subs[body].end_op = (uint32_t)d.no;
    const uint32_t y = add_tensor(&d, 0);
    d.tensor_flags[y] = TG_TENSOR_OUTPUT;
    const uint32_t bh[2] = {kind == TG_SUBGRAPH_BODY ? b : h, h};
    const size_t end = add_op(&d, kind == TG_SUBGRAPH_BODY ? "L.end" : "If", 0, TG_OP_CONTROL_FLOW, bh, 2, &y, 1);
    d.subs[body].control_op = (uint32_t)end;
    d.subs[0].end_op = (uint32_t)d.no;
    tg_graph *g = build(&d);
    tg_lifetimes *l = NULL;
    tg_error_info err = {{0}};
    if (tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err) != TG_OK) fail_msg("%s", err.message);
    /* x: read last by B in op order, but every iteration reads it. */
    assert_int_equal(l->tensors[x].last_task, variant == 2 ? (int32_t)op_b : (int32_t)end);
    /* c: written and read inside the outer body; read by the inner body too. */
    assert_int_equal(l->tensors[c].last_task, variant == 1 ? (int32_t)inner_end : (int32_t)op_b + 1);
    if (variant == 1) assert_int_equal(l->tensors[e].last_task, (int32_t)inner_end);
    tg_lifetimes_destroy(l);
    /* Without the subgraph table, op order alone. */
    g->flow_count = 0;
    assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err), TG_OK);
    assert_int_equal(l->tensors[x].last_task, variant == 1 ? (int32_t)inner_end - 1 : (int32_t)op_b);
    tg_lifetimes_destroy(l);
    g->flow_count = d.ns;
    /* An inconsistent table: a subgraph ending after its control op. */
    g->subgraphs[body].control_op = g->subgraphs[body].first_op;
    assert_int_equal(tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err), TG_ERROR_GRAPH);
    assert_null(l);
    if (strstr(err.message, "subgraph 1 ('s1') has an inconsistent op range or parent") == NULL)
      fail_msg("%s", err.message);
    tg_graph_destroy(g);
  }
}

/* ---- random graphs ---- */

typedef struct gen {
  tg_test_rng rng;
  draft d;
  uint32_t visible[MAX_T]; /* a stack: tensors the current scope may read */
  size_t nvisible;
} gen;

static uint32_t pick(gen *x) { return x->visible[tg_test_rng_range(&x->rng, 0, x->nvisible - 1)]; }

static uint32_t plain_op(gen *x, uint32_t scope) {
  uint32_t in[2] = {pick(x), pick(x)}, out = add_tensor(&x->d, scope);
  add_op(&x->d, "OP", scope, 0, in, (uint32_t)tg_test_rng_range(&x->rng, 1, 2), &out, 1);
  x->visible[x->nvisible++] = out;
  return out;
}

static void items(gen *x, uint32_t scope, unsigned depth, size_t count);

/* A loop (1 subgraph: Loop; 2: WHILE's cond and body) or an If in `scope`; the value it writes. */
static uint32_t construct(gen *x, uint32_t scope, unsigned depth) {
  draft *d = &x->d;
  const size_t mark = x->nvisible;
  const int loop = tg_test_rng_range(&x->rng, 0, 2) != 0;
  /* An If may keep one branch (its condition known when read): then or else. */
  const unsigned nsub = (unsigned)tg_test_rng_range(&x->rng, 1, 2);
  const uint32_t only = nsub == 1 && !loop ? (uint32_t)tg_test_rng_range(&x->rng, 0, 1) : 0;
  uint32_t carried[2], ncarried = loop ? (uint32_t)tg_test_rng_range(&x->rng, 1, 2) : 0, init[2];
  uint32_t end_in[MAX_IN], nend = 0, subs[2];
  size_t start = 0;
  if (loop) {
    /* The start op writes the first subgraph's inputs (WHILE: each subgraph has its own). */
    for (uint32_t k = 0; k < ncarried; ++k) init[k] = pick(x);
    start = add_op(d, "START", scope, TG_OP_CONTROL_FLOW, init, ncarried, carried, 0);
  }
  /* Siblings first, so that nested subgraphs come after both in the table. */
  for (unsigned j = 0; j < nsub; ++j)
    subs[j] = add_subgraph(d, loop ? TG_SUBGRAPH_BODY : TG_SUBGRAPH_BRANCH, scope, loop ? 0 : j + only);
  for (unsigned j = 0; j < nsub; ++j) {
    d->subs[subs[j]].first_op = (uint32_t)d->no;
    x->nvisible = mark;
    if (loop)
      for (uint32_t k = 0; k < ncarried; ++k) {
        carried[k] = add_tensor(d, subs[j]);
        d->ops[start].out[d->ops[start].nout++] = (int32_t)carried[k];
        x->visible[x->nvisible++] = carried[k];
        end_in[nend++] = carried[k];
      }
    const size_t before = x->nvisible;
    items(x, subs[j], depth + 1, (size_t)tg_test_rng_range(&x->rng, 1, 4));
    if (x->nvisible == before) plain_op(x, subs[j]);
    /* Its outputs: a value it wrote (the end op reads them; nothing else is read there). */
    end_in[nend++] = x->visible[tg_test_rng_range(&x->rng, before, x->nvisible - 1)];
    d->subs[subs[j]].end_op = (uint32_t)d->no;
  }
  x->nvisible = mark;
  if (!loop) end_in[nend++] = pick(x); /* the condition */
  const uint32_t out = add_tensor(d, scope);
  const size_t end = add_op(d, loop ? "END" : "IF", scope, TG_OP_CONTROL_FLOW, end_in, nend, &out, 1);
  for (unsigned j = 0; j < nsub; ++j) d->subs[subs[j]].control_op = (uint32_t)end;
  x->visible[x->nvisible++] = out;
  return out;
}

static void items(gen *x, uint32_t scope, unsigned depth, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (x->d.no + 24 > MAX_O || x->d.nt + 24 > MAX_T) return;
    if (depth < 3 && x->d.ns + 2 <= MAX_S && tg_test_rng_range(&x->rng, 0, 3) == 0) construct(x, scope, depth);
    else plain_op(x, scope);
  }
}

static tg_graph *random_graph(uint64_t seed) {
  static gen x;
  memset(&x, 0, sizeof x);
  x.rng.state = seed;
  x.d.ns = 1;
  for (int k = 0; k < 2; ++k) {
    uint32_t t = add_tensor(&x.d, 0);
    x.d.tensor_flags[t] = TG_TENSOR_INPUT;
    x.visible[x.nvisible++] = t;
  }
  items(&x, 0, 0, (size_t)tg_test_rng_range(&x.rng, 3, 8));
  plain_op(&x, 0);
  x.d.tensor_flags[x.d.nt - 1] |= TG_TENSOR_OUTPUT;
  x.d.subs[0].end_op = (uint32_t)x.d.no;
  return build(&x.d);
}

/* Replay `order`: the pairs of planned tensors with disjoint intervals where a read of one
 * comes after a write of the other that followed its own last write (naming the first in
 * `why`). since[a] holds the tensors written since a's last write. */
static size_t clobbers(const tg_graph *g, const tg_lifetimes *l, const uint32_t *order, size_t length, char *why,
                       size_t size) {
  enum { WORDS = (MAX_T + 63) / 64 };
  static uint64_t since[MAX_T][WORDS];
  const size_t n = g->tensor_count;
  assert_true(n <= MAX_T);
  memset(since, 0, sizeof since);
  uint8_t written[MAX_T] = {0};
  size_t count = 0;
  for (size_t p = 0; p < length; ++p) {
    const tg_op *op = &g->ops[order[p]];
    for (uint32_t k = 0; k < op->input_count; ++k) {
      const int32_t a = op->inputs[k];
      if (a < 0 || !l->tensors[a].planned || !written[a]) continue;
      for (size_t b = 0; b < n; ++b) {
        if (!(since[a][b / 64] >> (b % 64) & 1u) || !l->tensors[b].planned) continue;
        const tg_tensor_lifetime *la = &l->tensors[a], *lb = &l->tensors[b];
        if (la->last_task >= lb->first_task && lb->last_task >= la->first_task) continue;
        if (count++ == 0)
          snprintf(why, size, "t%d (%d..%d) is read at op %u after t%zu (%d..%d) was written over it", (int)a,
                   la->first_task, la->last_task, order[p], b, lb->first_task, lb->last_task);
      }
    }
    for (uint32_t k = 0; k < op->output_count; ++k) {
      const int32_t b = op->outputs[k];
      for (size_t a = 0; a < n; ++a) since[a][b / 64] |= 1ull << (b % 64);
      memset(since[b], 0, sizeof since[b]);
      written[b] = 1;
    }
  }
  return count;
}

static void random_graphs_never_clobber(void **state) {
  (void)state;
  const size_t graphs = tg_test_scale(4000, 4000, 50000);
  size_t runs = 0, loops = 0, ops = 0, steps = 0;
  for (size_t i = 0; i < graphs; ++i) {
    tg_graph *g = random_graph(0x5eedull + i);
    tg_lifetimes *l = NULL;
    tg_error_info err = {{0}};
    if (tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err) != TG_OK) fail_msg("graph %zu: %s", i, err.message);
    for (size_t s = 1; s < g->flow_count; ++s) loops += g->subgraphs[s].kind == TG_SUBGRAPH_BODY;
    ops += g->op_count;
    for (uint32_t branch = 0; branch < 2; ++branch)
      for (uint32_t it = 0; it <= 3; ++it) {
        uint32_t *order = NULL;
        size_t length = 0;
        if (tg_graph_run_order(g, branch, it, NULL, &order, &length, &err) != TG_OK)
          fail_msg("graph %zu: %s", i, err.message);
        char why[200];
        if (clobbers(g, l, order, length, why, sizeof why))
          fail_msg("graph %zu (%zu ops), branch %u, %u iterations: %s", i, g->op_count, branch, it, why);
        free(order);
        ++runs;
        steps += length;
      }
    tg_lifetimes_destroy(l);
    tg_graph_destroy(g);
  }
  print_message("%zu random graphs (%zu ops, %zu loop subgraphs), %zu runs of %zu ops replayed: 0 clobbered\n",
                graphs, ops, loops, runs, steps);
}

TG_TEST_MAIN(cmocka_unit_test(outer_values_live_to_the_loop_end),
             cmocka_unit_test(random_graphs_never_clobber))
