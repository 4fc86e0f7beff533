/* The in-place oracle (tg_in_place_oracle.h). Deliberately naive: no scheduler, relation or
 * validator code, only the graph's tensors and the plan's placements. */
#include "support/tg_test.h"

#include "support/tg_in_place_oracle.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tangram/model.h"

static tg_oracle_order order_new(size_t ops) {
  tg_oracle_order o = {ops, (2 * ops + 63) / 64, NULL};
  o.after = calloc(2 * ops * (o.words ? o.words : 1) + 1, sizeof *o.after);
  if (o.after == NULL) fail_msg("oracle: out of memory");
  return o;
}

static void edge(tg_oracle_order *o, size_t from, size_t to) {
  if (from >= to) fail_msg("oracle: edge %zu -> %zu does not go forward", from, to);
  o->after[from * o->words + to / 64] |= (uint64_t)1 << (to % 64);
}

/* Every edge goes from a lower event to a higher one: the closure, highest event first. */
static void close_order(tg_oracle_order *o) {
  for (size_t e = 2 * o->ops; e-- > 0;) {
    uint64_t *row = o->after + e * o->words;
    for (size_t s = e + 1; s < 2 * o->ops; ++s)
      if ((row[s / 64] >> (s % 64)) & 1u)
        for (size_t w = 0; w < o->words; ++w) row[w] |= o->after[s * o->words + w];
  }
}

static int precedes(const tg_oracle_order *o, size_t a, size_t b) {
  return (int)((o->after[a * o->words + b / 64] >> (b % 64)) & 1u);
}

#define R(op) (2 * (size_t)(op))
#define W(op) (2 * (size_t)(op) + 1)

tg_oracle_order tg_oracle_order_serial(size_t ops) {
  tg_oracle_order o = order_new(ops);
  for (size_t i = 0; i < ops; ++i) {
    edge(&o, R(i), W(i));
    if (i + 1 < ops) edge(&o, W(i), R(i + 1));
  }
  close_order(&o);
  return o;
}

tg_oracle_order tg_oracle_order_dataflow(const tg_graph *g) {
  tg_oracle_order o = order_new(g->op_count);
  int32_t *producer = malloc((g->tensor_count ? g->tensor_count : 1) * sizeof *producer);
  if (producer == NULL) fail_msg("oracle: out of memory");
  for (size_t t = 0; t < g->tensor_count; ++t) producer[t] = -1;
  for (size_t i = 0; i < g->op_count; ++i) {
    edge(&o, R(i), W(i));
    for (uint32_t k = 0; k < g->ops[i].input_count; ++k) {
      int32_t t = g->ops[i].inputs[k];
      if (t >= 0 && producer[t] >= 0) edge(&o, W(producer[t]), R(i));
    }
    for (uint32_t k = 0; k < g->ops[i].output_count; ++k) producer[g->ops[i].outputs[k]] = (int32_t)i;
  }
  free(producer);
  close_order(&o);
  return o;
}

tg_oracle_order tg_oracle_order_waits(size_t ops, const uint32_t *counts, const uint32_t *const *waits) {
  tg_oracle_order o = order_new(ops);
  for (size_t i = 0; i < ops; ++i) {
    edge(&o, R(i), W(i));
    for (uint32_t k = 0; k < counts[i]; ++k) edge(&o, W(waits[i][k]), R(i));
  }
  close_order(&o);
  return o;
}

void tg_oracle_order_free(tg_oracle_order *o) {
  free(o->after);
  memset(o, 0, sizeof *o);
}

static int reads(const tg_op *op, uint32_t t) {
  for (uint32_t k = 0; k < op->input_count; ++k)
    if (op->inputs[k] == (int32_t)t) return 1;
  return 0;
}

static int shares(const tg_usage_record *records, const tg_plan *p, size_t a, size_t b) {
  if (p->mode == TG_MODE_OBJECTS) return p->object_of[a] == p->object_of[b];
  const uint32_t aa = p->arena_count > 1 ? p->arena_of[a] : 0, ab = p->arena_count > 1 ? p->arena_of[b] : 0;
  const uint64_t sa = records[a].size.w, sb = records[b].size.w;
  return aa == ab && sa > 0 && sb > 0 && p->offset_of[a] < p->offset_of[b] + sb &&
         p->offset_of[b] < p->offset_of[a] + sa;
}

static int declared(const tg_plan *p, size_t input, size_t output, size_t op) {
  for (size_t i = 0; i < p->in_place_count; ++i)
    if (p->in_place[i].input == input && p->in_place[i].output == output && p->in_place[i].op == op) return 1;
  return 0;
}

int tg_oracle_find_corruption(const tg_graph *g, const tg_usage_record *records, const uint32_t *tensor_of,
                              size_t count, const tg_plan *plan, const tg_oracle_order *order, char *why,
                              size_t why_size) {
  char scratch[8];
  if (why == NULL) {
    why = scratch;
    why_size = sizeof scratch;
  }
  if (order->ops != g->op_count) fail_msg("oracle: the order has %zu ops, the graph %zu", order->ops, g->op_count);
  int32_t *producer = malloc((g->tensor_count ? g->tensor_count : 1) * sizeof *producer);
  if (producer == NULL) fail_msg("oracle: out of memory");
  for (size_t t = 0; t < g->tensor_count; ++t) producer[t] = -1;
  for (size_t i = 0; i < g->op_count; ++i)
    for (uint32_t k = 0; k < g->ops[i].output_count; ++k) producer[g->ops[i].outputs[k]] = (int32_t)i;
  int found = 0;
  /* Record x, written by px, read by op o; record y shares its memory and is written by py.
   * Some execution puts w(py) between w(px) and r(o) unless the order forces w(py) before
   * w(px), or r(o) before w(py). */
  for (size_t x = 0; x < count && !found; ++x) {
    const int32_t px = producer[tensor_of[x]];
    for (size_t y = 0; y < count && !found; ++y) {
      if (y == x || !shares(records, plan, x, y)) continue;
      const int32_t py = producer[tensor_of[y]];
      if (py < 0) continue; /* written before the run: x's write comes after it */
      if (py == px) {
        snprintf(why, why_size, "op %d writes records %zu and %zu into the same memory", px, x, y);
        found = 1;
        break;
      }
      if (px >= 0 && precedes(order, W(py), W(px))) continue;
      for (size_t o = 0; o < g->op_count && !found; ++o) {
        if (!reads(&g->ops[o], tensor_of[x])) continue;
        if ((int32_t)o == py) {
          if (declared(plan, x, y, o)) continue;
          snprintf(why, why_size, "op %zu reads record %zu and writes record %zu over it without a declared pair", o,
                   x, y);
          found = 1;
        } else if (!precedes(order, R(o), W(py))) {
          snprintf(why, why_size,
                   "record %zu (tensor %s) is read by op %zu, but op %d may write record %zu (tensor %s) over it first",
                   x, g->tensors[tensor_of[x]].name, o, py, y, g->tensors[tensor_of[y]].name);
          found = 1;
        }
      }
    }
  }
  free(producer);
  return found;
}

/* Five shapes of 128 elements and one of 64 (the last). In buffers, views regroup H and W of
 * the first two (batch 1) and of the next two (batch 2). */
#define SHAPES 6
static const int64_t k_shapes[SHAPES][4] = {{1, 4, 4, 8}, {1, 2, 8, 8}, {2, 4, 4, 4},
                                             {2, 2, 8, 4}, {1, 8, 4, 4}, {1, 4, 4, 4}};

tg_graph *tg_oracle_random_graph(tg_test_rng *rng, size_t ops) {
  tg_graph *g = NULL;
  if (tg_graph_create(ops + 1, ops, NULL, &g) != TG_OK) fail_msg("oracle: graph");
  unsigned char *read = calloc(ops + 1, 1);
  uint32_t *outs = calloc(ops + 1, sizeof *outs);
  size_t *shape_of = calloc(ops + 1, sizeof *shape_of);
  if (read == NULL || outs == NULL || shape_of == NULL) fail_msg("oracle: out of memory");
  shape_of[0] = (size_t)tg_test_rng_range(rng, 0, SHAPES - 1);
  if (tg_graph_set_tensor(g, 0, "x", 4, k_shapes[shape_of[0]], TG_DTYPE_FLOAT32, 0) != TG_OK) fail_msg("x");
  for (size_t i = 0; i < ops; ++i) {
    const size_t tensors = i + 1;
    /* Mostly the newest tensor; often one a few back (read again: fan-out, ops unordered). */
    const uint64_t pick = tg_test_rng_range(rng, 0, 9);
    size_t t = pick < 5 ? tensors - 1
               : pick < 9 ? tensors - 1 - (size_t)tg_test_rng_range(rng, 0, tensors < 4 ? tensors - 1 : 3)
                          : (size_t)tg_test_rng_range(rng, 0, tensors - 1);
    const uint64_t kind = tg_test_rng_range(rng, 0, 99);
    const char *name;
    int32_t in[2] = {(int32_t)t, -1};
    uint32_t nin = 1;
    size_t shape = shape_of[t];
    if (kind < 30) {
      name = "RELU";
    } else if (kind < 50) {
      name = "ADD"; /* over an equal-shaped tensor, else RELU */
      size_t other = SIZE_MAX;
      for (size_t k = tensors; k-- > 0 && other == SIZE_MAX;)
        if (k != t && shape_of[k] == shape && tg_test_rng_range(rng, 0, 2) != 0) other = k;
      if (other != SIZE_MAX) {
        in[1] = (int32_t)other;
        nin = 2;
      } else {
        name = "RELU";
      }
    } else if (kind < 65) {
      name = "RESHAPE"; /* to a shape of the same volume (the same one included) */
      if (shape != SHAPES - 1) shape = (size_t)tg_test_rng_range(rng, 0, SHAPES - 2);
    } else if (kind < 90) {
      name = "CONV_2D";
      shape = (size_t)tg_test_rng_range(rng, 0, SHAPES - 1);
    } else {
      name = "CONCATENATION";
      in[1] = (int32_t)tg_test_rng_range(rng, 0, tensors - 1);
      nin = in[1] == in[0] ? 1 : 2;
      shape = (size_t)tg_test_rng_range(rng, 0, SHAPES - 1);
    }
    for (uint32_t k = 0; k < nin; ++k) read[in[k]] = 1;
    const int32_t out = (int32_t)(i + 1);
    shape_of[i + 1] = shape;
    char tname[32];
    snprintf(tname, sizeof tname, "t%zu", i + 1);
    if (tg_graph_set_op(g, i, name, nin, in, 1, &out) != TG_OK ||
        tg_graph_set_tensor(g, i + 1, tname, 4, k_shapes[shape], TG_DTYPE_FLOAT32, 0) != TG_OK)
      fail_msg("oracle: op %zu", i);
  }
  size_t nout = 0;
  for (size_t t = 1; t <= ops; ++t)
    if (!read[t]) outs[nout++] = (uint32_t)t;
  const uint32_t in0 = 0;
  if (tg_graph_set_io(g, 1, &in0, nout, outs) != TG_OK) fail_msg("oracle: io");
  free(read);
  free(outs);
  free(shape_of);
  return g;
}

tg_graph *tg_oracle_race_graph(int chained) {
  char path[512];
  tg_test_data_path(path, sizeof path, chained ? "graphs/in_place_race_chain.graph" : "graphs/in_place_race.graph");
  tg_graph *g = NULL;
  tg_error_info err = {{0}};
  if (tg_graph_read_text(path, NULL, &g, &err) != TG_OK) fail_msg("%s: %s", path, err.message);
  return g;
}
