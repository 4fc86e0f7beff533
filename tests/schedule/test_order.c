/* Memory-aware op ordering (tangram/order.h): known optimal peaks on hand-built DAGs, the exact
 * search against brute force over every topological order, the heuristic's validity, the
 * records of the reordered graph through the whole pipeline, allocation failures, and the
 * MediaPipe models. */
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/order.h"
#include "tangram/planner.h"

/* ------------------------------------------------------------------------------------------ */
/* Graph building. */

/* A tensor of `bytes` (a multiple of 16) in buffer fp32 storage: shape 1x1x1x(bytes/4). */
static void set_tensor(tg_graph *g, size_t t, uint64_t bytes, uint32_t flags) {
  char name[32];
  snprintf(name, sizeof name, "t%zu", t);
  int64_t shape[4] = {1, 1, 1, (int64_t)(bytes / 4)};
  assert_int_equal(tg_graph_set_tensor(g, t, name, 4, shape, TG_DTYPE_FLOAT32, flags), TG_OK);
}

static void set_op(tg_graph *g, size_t i, uint32_t nin, const int32_t *in, uint32_t nout, const int32_t *out) {
  char name[32];
  snprintf(name, sizeof name, "op%zu", i);
  assert_int_equal(tg_graph_set_op(g, i, name, nin, in, nout, out), TG_OK);
}

/* Lifetimes, records (buffer fp32) and per-tensor sizes of a graph. */
typedef struct prepared {
  tg_lifetimes *lt;
  tg_model_records *mr;
  uint64_t *sizes;
} prepared;

static void prepare(const tg_graph *g, int plan_io, prepared *p) {
  tg_lifetime_options lo = {plan_io};
  assert_int_equal(tg_graph_compute_lifetimes(g, &lo, NULL, &p->lt, NULL), TG_OK);
  assert_int_equal(tg_model_records_create(g, p->lt, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL, NULL, &p->mr, NULL),
                   TG_OK);
  p->sizes = calloc(g->tensor_count + 1, sizeof *p->sizes);
  assert_non_null(p->sizes);
  for (size_t r = 0; r < p->mr->records->count; ++r) p->sizes[p->mr->tensor_of[r]] = p->mr->records->records[r].size.w;
}

static void prepared_free(prepared *p) {
  tg_model_records_destroy(p->mr);
  tg_lifetimes_destroy(p->lt);
  free(p->sizes);
  memset(p, 0, sizeof *p);
}

/* The peak-live bound of a record set. */
static uint64_t records_peak(const tg_record_set *set) {
  tg_bounds b;
  assert_int_equal(tg_bounds_compute(set->records, set->count, set->dims, NULL, &b), TG_OK);
  return b.peak_live;
}

/* Reorder `g` by `order`, recompute lifetimes and records as the CLI does, and return the
 * records' peak; also plan them (offsets and objects, best) and validate the plans. */
static uint64_t pipeline_peak(const tg_graph *g, const uint32_t *order, int plan_io, int plan) {
  tg_graph *r = NULL;
  assert_int_equal(tg_graph_create_reordered(g, order, NULL, &r), TG_OK);
  prepared p;
  prepare(r, plan_io, &p);
  const tg_record_set *set = p.mr->records;
  uint64_t peak = records_peak(set);
  for (int mode = 0; plan && mode < 2; ++mode) {
    tg_plan_options opt;
    memset(&opt, 0, sizeof opt);
    opt.mode = (tg_mode)mode;
    opt.strategy = TG_STRATEGY_BEST;
    tg_plan *pl = NULL;
    assert_int_equal(tg_plan_compute(set->records, set->count, set->dims, &opt, NULL, &pl), TG_OK);
    tg_test_assert_valid(set->records, set->count, set->dims, pl, 0, NULL);
    assert_true(pl->total >= peak);
    tg_plan_destroy(pl);
  }
  prepared_free(&p);
  tg_graph_destroy(r);
  return peak;
}

static tg_op_order *order_of(const tg_graph *g, const prepared *p, const tg_order_options *opt) {
  tg_op_order *o = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_op_order_compute(g, p->lt, p->sizes, opt, NULL, &o, &err);
  if (st != TG_OK) fail_msg("tg_op_order_compute: %s: %s", tg_status_name(st), err.message);
  return o;
}

/* ------------------------------------------------------------------------------------------ */
/* Hand-built DAGs. */

/* x -> A1 -> a1 (big) -> A2 -> a2 (small); x -> B1 -> b1 (big) -> B2 -> b2; C(a2, b2) -> y.
 * File order A1, B1, A2, B2, C holds both big tensors at once; A1, A2, B1, B2, C does not. */
static tg_graph *two_branches(void) {
  tg_graph *g = NULL;
  assert_int_equal(tg_graph_create(6, 5, NULL, &g), TG_OK);
  set_tensor(g, 0, 16, 0);     /* x */
  set_tensor(g, 1, 1600, 0);   /* a1 */
  set_tensor(g, 2, 1600, 0);   /* b1 */
  set_tensor(g, 3, 16, 0);     /* a2 */
  set_tensor(g, 4, 16, 0);     /* b2 */
  set_tensor(g, 5, 32, 0);     /* y */
  int32_t x = 0, a1 = 1, b1 = 2, a2 = 3, b2 = 4, cat[2] = {3, 4}, y = 5;
  set_op(g, 0, 1, &x, 1, &a1);
  set_op(g, 1, 1, &x, 1, &b1);
  set_op(g, 2, 1, &a1, 1, &a2);
  set_op(g, 3, 1, &b1, 1, &b2);
  set_op(g, 4, 2, cat, 1, &y);
  uint32_t in = 0, out = 5;
  assert_int_equal(tg_graph_set_io(g, 1, &in, 1, &out), TG_OK);
  return g;
}

static void two_branches_halve_the_peak(void **state) {
  (void)state;
  tg_graph *g = two_branches();
  prepared p;
  prepare(g, 0, &p);
  tg_op_order *o = order_of(g, &p, NULL);
  assert_int_equal(o->original_peak, 3216);
  assert_int_equal(o->original_peak, records_peak(p.mr->records));
  /* A1: a1; A2: a1 + a2; B1: a2 + b1; B2: a2 + b1 + b2. */
  assert_int_equal(o->peak, 1632);
  assert_true(o->proved_optimal);
  assert_int_equal(o->lower_bound, 1632);
  assert_int_not_equal(o->method, TG_ORDER_ORIGINAL);
  assert_int_equal(pipeline_peak(g, o->order, 0, 1), 1632);
  for (size_t k = 0; k < o->op_count; ++k) assert_int_equal(o->order[o->position[k]], k);
  /* With the heuristic alone, the same. */
  tg_order_options opt;
  memset(&opt, 0, sizeof opt);
  opt.no_exact = 1;
  tg_op_order *h = order_of(g, &p, &opt);
  assert_int_equal(h->peak, 1632);
  assert_int_equal(h->exact_ran, 0);
  tg_op_order_destroy(h);
  tg_op_order_destroy(o);
  prepared_free(&p);
  tg_graph_destroy(g);
}

/* A -> a; B(a) -> b (50); C(a) -> c (40); E(c) -> e (1); D(b, e) -> d (output).
 * File order A, B, C, E, D peaks at C (a + b + c = 100); A, C, E, B, D at B (a + e + b = 61). */
static void diamond(void **state) {
  (void)state;
  tg_graph *g = NULL;
  assert_int_equal(tg_graph_create(6, 5, NULL, &g), TG_OK);
  set_tensor(g, 0, 160, 0); /* a */
  set_tensor(g, 1, 800, 0); /* b */
  set_tensor(g, 2, 640, 0); /* c */
  set_tensor(g, 3, 16, 0);  /* e */
  set_tensor(g, 4, 16, 0);  /* d */
  set_tensor(g, 5, 16, 0);  /* x: input */
  int32_t x = 5, a = 0, b = 1, c = 2, e = 3, d = 4, be[2] = {1, 3};
  set_op(g, 0, 1, &x, 1, &a);
  set_op(g, 1, 1, &a, 1, &b);
  set_op(g, 2, 1, &a, 1, &c);
  set_op(g, 3, 1, &c, 1, &e);
  set_op(g, 4, 2, be, 1, &d);
  uint32_t in = 5, out = 4;
  assert_int_equal(tg_graph_set_io(g, 1, &in, 1, &out), TG_OK);
  prepared p;
  prepare(g, 0, &p);
  tg_op_order *o = order_of(g, &p, NULL);
  assert_int_equal(o->original_peak, 1600);
  assert_int_equal(o->peak, 976);
  assert_true(o->proved_optimal);
  const uint32_t expect[5] = {0, 2, 3, 1, 4};
  assert_memory_equal(o->order, expect, sizeof expect);
  assert_int_equal(pipeline_peak(g, o->order, 0, 1), 976);
  tg_op_order_destroy(o);
  /* A chain has one order: the original, proved optimal. */
  prepared_free(&p);
  tg_graph_destroy(g);
}

static void chain_keeps_its_order(void **state) {
  (void)state;
  tg_graph *g = NULL;
  assert_int_equal(tg_graph_create(5, 4, NULL, &g), TG_OK);
  for (size_t t = 0; t < 5; ++t) set_tensor(g, t, 16 * (t + 1), 0);
  for (int32_t i = 0; i < 4; ++i) {
    int32_t in = i, out = i + 1;
    set_op(g, (size_t)i, 1, &in, 1, &out);
  }
  uint32_t in = 0, out = 4;
  assert_int_equal(tg_graph_set_io(g, 1, &in, 1, &out), TG_OK);
  prepared p;
  prepare(g, 0, &p);
  tg_op_order *o = order_of(g, &p, NULL);
  assert_int_equal(o->method, TG_ORDER_ORIGINAL);
  assert_int_equal(o->peak, o->original_peak);
  for (uint32_t k = 0; k < 4; ++k) assert_int_equal(o->order[k], k);
  tg_op_order_destroy(o);
  prepared_free(&p);
  tg_graph_destroy(g);
}

/* Errors: NULL arguments, a non-topological order, a non-permutation. */
static void errors(void **state) {
  (void)state;
  tg_graph *g = two_branches();
  prepared p;
  prepare(g, 0, &p);
  tg_op_order *o = (tg_op_order *)&p; /* any non-NULL value: must become NULL */
  assert_int_equal(tg_op_order_compute(NULL, p.lt, p.sizes, NULL, NULL, &o, NULL), TG_ERROR_INVALID_ARGUMENT);
  assert_null(o);
  assert_int_equal(tg_op_order_compute(g, p.lt, p.sizes, NULL, NULL, NULL, NULL), TG_ERROR_INVALID_ARGUMENT);
  uint64_t peak = 0;
  const uint32_t bad[5] = {2, 0, 1, 3, 4}; /* A2 before A1 */
  tg_error_info err = {{0}};
  assert_int_equal(tg_op_order_compute_peak(g, p.lt, p.sizes, bad, NULL, &peak, &err), TG_ERROR_GRAPH);
  assert_non_null(strstr(err.message, "runs before"));
  const uint32_t dup[5] = {0, 0, 1, 3, 4};
  assert_int_equal(tg_op_order_compute_peak(g, p.lt, p.sizes, dup, NULL, &peak, NULL), TG_ERROR_GRAPH);
  tg_graph *r = (tg_graph *)g;
  assert_int_equal(tg_graph_create_reordered(g, dup, NULL, &r), TG_ERROR_INVALID_ARGUMENT);
  assert_null(r);
  assert_int_equal(tg_op_order_compute_peak(g, p.lt, p.sizes, NULL, NULL, &peak, NULL), TG_OK);
  assert_int_equal(peak, 3216);
  const uint32_t good[5] = {1, 3, 0, 2, 4};
  assert_int_equal(tg_op_order_compute_peak(g, p.lt, p.sizes, good, NULL, &peak, NULL), TG_OK);
  assert_int_equal(peak, 1632);
  assert_string_equal(tg_order_method_name(TG_ORDER_EXACT), "exact");
  assert_null(tg_order_method_name((tg_order_method)7));
  /* Sizes that add up beyond 64 bits. */
  uint64_t *huge = calloc(g->tensor_count, sizeof *huge);
  for (size_t t = 0; t < g->tensor_count; ++t) huge[t] = UINT64_MAX / 2;
  assert_int_equal(tg_op_order_compute(g, p.lt, huge, NULL, NULL, &o, NULL), TG_ERROR_OVERFLOW);
  free(huge);
  prepared_free(&p);
  tg_graph_destroy(g);
}

/* ------------------------------------------------------------------------------------------ */
/* Random DAGs. */

/* Up to `max_ops` ops over graph inputs, constant weights, a folded op (DEQUANTIZE of a weight)
 * now and then, 1-3 inputs and 1-2 outputs per op; graph outputs are the tensors nobody reads
 * and sometimes one more. */
static tg_graph *random_dag(tg_test_rng *rng, size_t min_ops, size_t max_ops) {
  size_t n = (size_t)tg_test_rng_range(rng, min_ops, max_ops);
  size_t ninputs = (size_t)tg_test_rng_range(rng, 1, 2), nweights = 2;
  size_t tcount = ninputs + nweights + 2 * n;
  tg_graph *g = NULL;
  assert_int_equal(tg_graph_create(tcount, n, NULL, &g), TG_OK);
  size_t *avail = calloc(tcount, sizeof *avail), navail = 0, next = 0;
  unsigned char *is_const = calloc(tcount, 1), *read = calloc(tcount, 1);
  uint32_t *ins = calloc(ninputs, sizeof *ins), *outs = calloc(tcount, sizeof *outs);
  for (size_t i = 0; i < ninputs; ++i) {
    ins[i] = (uint32_t)next;
    avail[navail++] = next++;
  }
  for (size_t i = 0; i < nweights; ++i) {
    is_const[next] = 1;
    set_tensor(g, next, 16 * tg_test_rng_range(rng, 1, 4), TG_TENSOR_CONSTANT);
    avail[navail++] = next++;
  }
  for (size_t i = 0; i < n; ++i) {
    int32_t in[3], out[2];
    uint32_t nin = (uint32_t)tg_test_rng_range(rng, 1, 3), nout = tg_test_rng_range(rng, 0, 4) == 0 ? 2 : 1;
    int folded = tg_test_rng_range(rng, 0, 7) == 0;
    for (uint32_t k = 0; k < nin; ++k) {
      size_t t;
      if (folded) {
        t = ninputs + tg_test_rng_range(rng, 0, nweights - 1);
      } else {
        /* Mostly recent tensors (chains), sometimes anything. */
        size_t back = tg_test_rng_range(rng, 0, 3) ? tg_test_rng_range(rng, 0, navail < 3 ? navail - 1 : 2)
                                                   : tg_test_rng_range(rng, 0, navail - 1);
        t = avail[navail - 1 - back];
      }
      in[k] = (int32_t)t;
      read[t] = 1;
    }
    for (uint32_t k = 0; k < nout; ++k) {
      out[k] = (int32_t)next;
      avail[navail++] = next++;
    }
    set_op(g, i, nin, in, nout, out);
  }
  for (size_t t = 0; t < tcount; ++t)
    if (g->tensors[t].name == NULL) set_tensor(g, t, t < next ? 16 * tg_test_rng_range(rng, 1, 64) : 16, 0);
  size_t nouts = 0;
  for (size_t t = ninputs + nweights; t < next; ++t)
    if (!read[t] || tg_test_rng_range(rng, 0, 9) == 0) outs[nouts++] = (uint32_t)t;
  if (nouts == 0) outs[nouts++] = (uint32_t)(next - 1);
  assert_int_equal(tg_graph_set_io(g, ninputs, ins, nouts, outs), TG_OK);
  for (size_t i = 0; i < nweights; ++i) g->tensors[ninputs + i].flags |= TG_TENSOR_CONSTANT;
  free(avail);
  free(is_const);
  free(read);
  free(ins);
  free(outs);
  return g;
}

/* Brute force, independent of schedule/order.c: every topological order of all ops, peak of the
 * inclusive [first, last] intervals the lifetime rules give in that order. */
typedef struct brute {
  const tg_graph *g;
  const tg_lifetimes *lt;
  const uint64_t *sizes;
  size_t n;
  uint32_t order[16];
  int32_t pos[16];
  uint64_t best;
  uint64_t orders;
} brute;

static uint64_t brute_peak(const brute *b) {
  const size_t n = b->n;
  uint64_t live[16] = {0}, peak = 0;
  for (size_t t = 0; t < b->g->tensor_count; ++t) {
    const tg_tensor_lifetime *tl = &b->lt->tensors[t];
    if (!tl->planned || b->sizes[t] == 0) continue;
    int32_t first = tl->producer >= 0 ? b->pos[tl->producer] : 0, last = first;
    for (uint32_t c = 0; c < tl->consumer_count; ++c)
      if (b->pos[tl->consumers[c]] > last) last = b->pos[tl->consumers[c]];
    if (tl->persistent && (b->g->tensors[t].flags & TG_TENSOR_OUTPUT) && n > 0) last = (int32_t)n - 1;
    for (int32_t k = first; k <= last; ++k) live[k] += b->sizes[t];
  }
  for (size_t k = 0; k < (n ? n : 1); ++k)
    if (live[k] > peak) peak = live[k];
  return peak;
}

static void brute_rec(brute *b, size_t k) {
  if (k == b->n) {
    uint64_t p = brute_peak(b);
    if (p < b->best) b->best = p;
    b->orders++;
    return;
  }
  for (size_t i = 0; i < b->n; ++i) {
    if (b->pos[i] >= 0) continue;
    const tg_op *op = &b->g->ops[i];
    int ready = 1;
    for (uint32_t j = 0; j < op->input_count && ready; ++j) {
      int32_t pr = op->inputs[j] >= 0 ? b->lt->tensors[op->inputs[j]].producer : -1;
      ready = pr < 0 || b->pos[pr] >= 0;
    }
    if (!ready) continue;
    b->pos[i] = (int32_t)k;
    b->order[k] = (uint32_t)i;
    brute_rec(b, k + 1);
    b->pos[i] = -1;
  }
}

static void exact_equals_brute_force(void **state) {
  (void)state;
  tg_test_rng rng = {12345};
  size_t improved = 0, total_orders = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    tg_graph *g = random_dag(&rng, 1, iter < 2000 ? 8 : 9);
    int plan_io = (int)tg_test_rng_range(&rng, 0, 3) == 0;
    prepared p;
    prepare(g, plan_io, &p);
    brute b = {.g = g, .lt = p.lt, .sizes = p.sizes, .n = g->op_count, .best = UINT64_MAX};
    for (size_t i = 0; i < 16; ++i) b.pos[i] = -1;
    brute_rec(&b, 0);
    total_orders += b.orders;
    tg_op_order *o = order_of(g, &p, NULL);
    if (!o->proved_optimal || o->peak != b.best)
      fail_msg("iteration %d (%zu ops, plan_io %d): order peak %llu (optimal %d, %s), brute force %llu", iter,
               g->op_count, plan_io, (unsigned long long)o->peak, o->proved_optimal,
               tg_order_method_name(o->method), (unsigned long long)b.best);
    assert_int_equal(o->original_peak, records_peak(p.mr->records));
    assert_true(o->peak <= o->original_peak);
    uint64_t check = 0;
    assert_int_equal(tg_op_order_compute_peak(g, p.lt, p.sizes, o->order, NULL, &check, NULL), TG_OK);
    assert_int_equal(check, o->peak);
    assert_int_equal(pipeline_peak(g, o->order, plan_io, iter % 10 == 0), o->peak);
    improved += o->peak < o->original_peak;
    tg_op_order_destroy(o);
    prepared_free(&p);
    tg_graph_destroy(g);
  }
  print_message("exact vs brute force: 3000 DAGs, %zu topological orders, %zu improved\n", total_orders, improved);
  assert_true(improved > 100);
}

static void heuristic_valid_and_never_worse(void **state) {
  (void)state;
  tg_test_rng rng = {777};
  tg_order_options opt;
  memset(&opt, 0, sizeof opt);
  opt.no_exact = 1;
  /* The determinism check below holds when the heuristic's work cap, not the clock, ends the
   * search (order.h): a limit no run reaches keeps it so on slow machines and emulators too
   * (natively every search here ends in milliseconds). */
  opt.time_limit_ms = 600000;
  size_t improved = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    tg_graph *g = random_dag(&rng, 1, iter < 1500 ? 40 : 150);
    int plan_io = (int)tg_test_rng_range(&rng, 0, 3) == 0;
    prepared p;
    prepare(g, plan_io, &p);
    tg_op_order *o = order_of(g, &p, &opt);
    uint64_t check = 0;
    assert_int_equal(tg_op_order_compute_peak(g, p.lt, p.sizes, o->order, NULL, &check, NULL), TG_OK);
    assert_int_equal(check, o->peak);
    assert_true(o->peak <= o->original_peak);
    assert_true(o->lower_bound <= o->peak);
    assert_int_equal(o->original_peak, records_peak(p.mr->records));
    int identity = 1;
    for (uint32_t k = 0; k < o->op_count; ++k) identity &= o->order[k] == k;
    assert_int_equal(identity, o->method == TG_ORDER_ORIGINAL);
    assert_int_equal(o->method == TG_ORDER_ORIGINAL, o->peak == o->original_peak);
    if (iter % 20 == 0) assert_int_equal(pipeline_peak(g, o->order, plan_io, 1), o->peak);
    /* Deterministic. */
    if (iter % 50 == 0) {
      tg_op_order *o2 = order_of(g, &p, &opt);
      assert_memory_equal(o->order, o2->order, o->op_count * sizeof *o->order);
      tg_op_order_destroy(o2);
    }
    improved += o->peak < o->original_peak;
    tg_op_order_destroy(o);
    prepared_free(&p);
    tg_graph_destroy(g);
  }
  print_message("heuristic: 2000 DAGs, %zu improved\n", improved);
  assert_true(improved > 100);
}

/* The exact search with a tiny state budget gives up and keeps the heuristic order, unproved
 * unless the heuristic met the bound. */
static void exact_limits(void **state) {
  (void)state;
  tg_test_rng rng = {99};
  for (int iter = 0; iter < 200; ++iter) {
    tg_graph *g = random_dag(&rng, 20, 40);
    prepared p;
    prepare(g, 0, &p);
    tg_order_options opt;
    memset(&opt, 0, sizeof opt);
    opt.exact_max_states = 3;
    tg_op_order *o = order_of(g, &p, &opt);
    assert_true(o->exact_states <= 3);
    assert_true(o->peak <= o->original_peak);
    if (o->exact_ran && o->proved_optimal) assert_int_equal(o->lower_bound, o->peak);
    if (!o->proved_optimal) assert_true(o->lower_bound < o->peak);
    tg_op_order_destroy(o);
    prepared_free(&p);
    tg_graph_destroy(g);
  }
}

static void allocation_failures(void **state) {
  (void)state;
  tg_test_rng rng = {4242};
  for (int iter = 0; iter < 6; ++iter) {
    tg_graph *g = iter == 0 ? two_branches() : random_dag(&rng, 6, 12);
    prepared p;
    prepare(g, iter & 1, &p);
    int succeeded = 0;
    for (uint64_t fail_at = 1; fail_at < 2000 && !succeeded; ++fail_at) {
      tg_failing_allocator fa;
      tg_failing_allocator_init(&fa, NULL, fail_at);
      tg_op_order *o = NULL;
      tg_graph *r = NULL;
      uint64_t peak = 0;
      tg_status st = tg_op_order_compute(g, p.lt, p.sizes, NULL, &fa.base, &o, NULL);
      if (st == TG_OK) st = tg_graph_create_reordered(g, o->order, &fa.base, &r);
      if (st == TG_OK) st = tg_op_order_compute_peak(g, p.lt, p.sizes, o->order, &fa.base, &peak, NULL);
      if (st == TG_OK) {
        succeeded = fa.failures == 0;
        assert_int_equal(peak, o->peak);
      } else {
        assert_int_equal(st, TG_ERROR_OUT_OF_HOST_MEMORY);
        assert_true(fa.failures > 0);
      }
      tg_graph_destroy(r);
      tg_op_order_destroy(o);
      assert_int_equal(fa.live_blocks, 0);
    }
    assert_true(succeeded);
    prepared_free(&p);
    tg_graph_destroy(g);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Models. */

static void mediapipe_models(void **state) {
  (void)state;
  static const char *const k_models[] = {"face_detection_short_range.tflite", "hand_landmark_lite.tflite",
                                         "pose_landmark_lite.tflite", "selfie_segmentation.tflite"};
  int any = 0;
  for (size_t i = 0; i < sizeof k_models / sizeof k_models[0]; ++i) {
    char path[1024];
    if (tg_test_model_path(path, sizeof path, k_models[i]) == NULL) continue;
    any = 1;
    tg_graph *g = NULL;
    assert_int_equal(tg_graph_read_tflite(path, NULL, &g, NULL), TG_OK);
    for (int plan_io = 0; plan_io < 2; ++plan_io) {
      prepared p;
      prepare(g, plan_io, &p);
      tg_op_order *o = order_of(g, &p, NULL);
      assert_int_equal(o->original_peak, records_peak(p.mr->records));
      assert_true(o->peak <= o->original_peak);
      assert_int_equal(pipeline_peak(g, o->order, plan_io, 1), o->peak);
      print_message("%-36s plan_io %d: %zu ops (%zu folded), peak %llu -> %llu (-%.1f%%), %s%s, %.1f ms\n",
                    k_models[i], plan_io, o->op_count, o->folded_count, (unsigned long long)o->original_peak,
                    (unsigned long long)o->peak,
                    100.0 * (1.0 - (double)o->peak / (double)o->original_peak), tg_order_method_name(o->method),
                    o->proved_optimal ? ", optimal" : "", (double)o->elapsed_us / 1000.0);
      tg_op_order_destroy(o);
      prepared_free(&p);
    }
    tg_graph_destroy(g);
  }
  if (!any) print_message("no MediaPipe model in the cache: skipped (scripts/fetch-models.sh)\n");
}

/* ------------------------------------------------------------------------------------------ */
/* Control flow: a loop body or a branch is a block of ops the reorder may not cut apart, and its
 * rules (what a body reads from before it lives to the loop's end op) live in the subgraph table:
 * a graph with control flow keeps its own order, and its copy keeps the table. */

static void control_flow_keeps_its_order(void **state) {
  (void)state;
#ifdef TANGRAM_HAVE_ONNX
  static const char *const k_files[] = {"scan.onnx", "loop.onnx", "loop_counted.onnx", "if_nested.onnx",
                                        "if_known.onnx"};
  for (size_t f = 0; f < sizeof k_files / sizeof k_files[0]; ++f) {
    char rel[128], path[1024];
    snprintf(rel, sizeof rel, "onnx/control_flow/%s", k_files[f]);
    tg_test_data_path(path, sizeof path, rel);
    tg_graph *g = NULL;
    tg_error_info err = {{0}};
    if (tg_graph_read_onnx(path, NULL, NULL, &g, &err) != TG_OK) fail_msg("%s: %s", rel, err.message);
    assert_true(g->flow_count > 0);
    prepared p;
    prepare(g, 0, &p);
    tg_op_order *o = order_of(g, &p, NULL);
    for (size_t k = 0; k < g->op_count; ++k)
      if (o->order[k] != k) fail_msg("%s: op %u runs at %zu", rel, o->order[k], k);
    assert_int_equal(o->method, TG_ORDER_ORIGINAL);
    tg_graph *r = NULL;
    assert_int_equal(tg_graph_create_reordered(g, o->order, NULL, &r), TG_OK);
    assert_int_equal(r->flow_count, g->flow_count);
    prepared q;
    prepare(r, 0, &q);
    assert_int_equal(q.mr->records->count, p.mr->records->count);
    for (size_t i = 0; i < p.mr->records->count; ++i) {
      const tg_usage_record *a = &p.mr->records->records[i], *b = &q.mr->records->records[i];
      if (a->first_task != b->first_task || a->last_task != b->last_task)
        fail_msg("%s: record %zu lives %u..%u in the copy, %u..%u in the graph", rel, i, b->first_task,
                 b->last_task, a->first_task, a->last_task);
    }
    /* Any other order of a graph with control flow is refused. */
    uint32_t *swapped = malloc(g->op_count * sizeof *swapped);
    assert_non_null(swapped);
    for (size_t k = 0; k < g->op_count; ++k) swapped[k] = (uint32_t)k;
    swapped[0] = 1;
    swapped[1] = 0;
    tg_graph *bad = NULL;
    assert_int_equal(tg_graph_create_reordered(g, swapped, NULL, &bad), TG_ERROR_UNSUPPORTED);
    assert_null(bad);
    free(swapped);
    prepared_free(&q);
    tg_graph_destroy(r);
    tg_op_order_destroy(o);
    prepared_free(&p);
    tg_graph_destroy(g);
  }
#endif
}

TG_TEST_MAIN(cmocka_unit_test(two_branches_halve_the_peak),
             cmocka_unit_test(diamond),
             cmocka_unit_test(chain_keeps_its_order),
             cmocka_unit_test(errors),
             cmocka_unit_test(exact_equals_brute_force),
             cmocka_unit_test(heuristic_valid_and_never_worse),
             cmocka_unit_test(exact_limits),
             cmocka_unit_test(allocation_failures),
             cmocka_unit_test(mediapipe_models),
             cmocka_unit_test(control_flow_keeps_its_order))
