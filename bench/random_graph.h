/* The benches' random DAG, network-like: most ops continue a recent tensor (chains), some join
 * two or three (concats, residual adds), a few read far back (skip connections) or start from
 * the input. Seeded: the same (ops, seed) gives the same graph in every bench. */
#ifndef TANGRAM_BENCH_RANDOM_GRAPH_H
#define TANGRAM_BENCH_RANDOM_GRAPH_H

#include <stdio.h>
#include <stdlib.h>

#include "bench/bench_rng.h"
#include "tangram/graph.h"

/* Tensor 0 is the input, tensor i + 1 the output of op i; unread tensors are outputs. */
static tg_graph *random_graph(size_t ops, uint64_t seed) {
  tg_graph *g = NULL;
  if (tg_graph_create(ops + 1, ops, NULL, &g) != TG_OK) return NULL;
  uint64_t st = seed;
  unsigned char *read = calloc(ops + 1, 1);
  uint32_t *outs = calloc(ops + 1, sizeof *outs);
  int ok = read != NULL && outs != NULL;
  for (size_t i = 0; i < ops && ok; ++i) {
    size_t tensors = i + 1, kind = rng_below(&st, 100);
    uint32_t nin = kind < 70 ? 1 : (kind < 95 ? 2 : 3);
    int32_t in[3], out = (int32_t)(i + 1);
    for (uint32_t k = 0; k < nin; ++k) {
      size_t r = rng_below(&st, 100), t;
      if (r < 2) t = 0;
      else if (r < 90) t = tensors - 1 - rng_below(&st, tensors < 8 ? tensors : 8);
      else t = rng_below(&st, tensors);
      in[k] = (int32_t)t;
      read[t] = 1;
    }
    char name[32];
    snprintf(name, sizeof name, "op%zu", i);
    ok = tg_graph_set_op(g, i, name, nin, in, 1, &out) == TG_OK;
  }
  size_t nout = 0;
  for (size_t t = 0; t <= ops && ok; ++t) {
    char name[32];
    snprintf(name, sizeof name, "t%zu", t);
    int64_t side = (int64_t)(8 << rng_below(&st, 4));
    int64_t shape[4] = {1, side, side, (int64_t)(8 << rng_below(&st, 5))};
    ok = tg_graph_set_tensor(g, t, name, 4, shape, TG_DTYPE_FLOAT32, 0) == TG_OK;
    if (t > 0 && !read[t]) outs[nout++] = (uint32_t)t;
  }
  uint32_t in0 = 0;
  if (ok) ok = tg_graph_set_io(g, 1, &in0, nout, outs) == TG_OK;
  free(read);
  free(outs);
  if (!ok) {
    tg_graph_destroy(g);
    return NULL;
  }
  return g;
}

#endif
