/* MIN_COST_FLOW: TFLite's MinCostFlowAssignment model. Every record needs an object: either a
 * new one, costing its size, or the object of a record that ended before it started, costing
 * the growth (max(0, size - predecessor's size); 2D/3D: the texels gained by the per-dimension
 * max). Each record hands its object on to at most one successor. The cheapest choice of
 * predecessors is a minimum-cost assignment of records to (predecessor | new object), which
 * TFLite solves as a flow with Bellman-Ford augmentations over all pairs. We solve it with
 * successive shortest paths (Dijkstra with potentials, one record at a time), so the cost is the
 * same optimum as long as every useful pair is offered. The chains of predecessors are the
 * objects, numbered by their first record in (first_task, index) order.
 *
 * All pairs make the graph quadratic, and most are useless. Each record is offered the RECENT
 * records that ended last before it starts (the chains it would naturally continue) and, among
 * the earlier ones, its CANDIDATES cheapest (ties: less waste, then the most recently ended),
 * which keeps augmentations short. With at most RECENT + 1 records every pair is offered and
 * the result is TFLite's optimum exactly; above that it is the optimum over the offered pairs.
 * On the models' records and on random chains and DAGs of 1k records its plans' totals equalled
 * those of the all-pairs optimum or came within a fraction of a percent. Offering only the
 * cheapest predecessors is not enough: on long chains it left most records without one, and
 * the totals were several times larger.
 *
 * With a may-share relation, predecessors the relation rules out are not offered, and a chain
 * is cut where a record may not share with an earlier record of its object. */
#include "planner/strategies/objects_common.h"

#define RECENT 32    /* most recently ended predecessors offered */
#define CANDIDATES 8 /* cheapest of the earlier ones offered as well */
#define NONE32 UINT32_MAX

typedef struct cand {
  uint64_t cost, waste;
  uint32_t col; /* predecessor: index in by-last order */
} cand;

/* Worse candidate first: higher cost, then more waste, then ended earlier. */
static int cand_worse(const cand *x, const cand *y) {
  if (x->cost != y->cost) return x->cost > y->cost;
  if (x->waste != y->waste) return x->waste > y->waste;
  return x->col < y->col;
}

/* Max-heap (worst on top) of the best candidates seen so far. */
static void cand_offer(cand *h, size_t *n, size_t cap, const cand *c) {
  size_t i;
  if (*n < cap) {
    i = (*n)++;
    while (i > 0 && cand_worse(c, &h[(i - 1) / 2])) {
      h[i] = h[(i - 1) / 2];
      i = (i - 1) / 2;
    }
    h[i] = *c;
    return;
  }
  if (!cand_worse(&h[0], c)) return;
  i = 0;
  for (;;) {
    size_t l = 2 * i + 1, w = i;
    const cand *wc = c;
    if (l < *n && cand_worse(&h[l], wc)) { w = l; wc = &h[l]; }
    if (l + 1 < *n && cand_worse(&h[l + 1], wc)) w = l + 1;
    if (w == i) break;
    h[i] = h[w];
    i = w;
  }
  h[i] = *c;
}

static void pair_cost(const tg__plan_input *in, uint32_t pred, uint32_t rec, uint64_t *cost,
                      uint64_t *waste) {
  if (in->dims == 1) {
    uint64_t s = in->volumes[rec], p = in->volumes[pred];
    *cost = s > p ? s - p : 0;
    *waste = p > s ? p - s : 0;
    return;
  }
  tg_extent g = tg__extent_max(in->records[pred].size, in->records[rec].size);
  uint64_t gv = tg__extent_volume_sat(g);
  *cost = gv == UINT64_MAX ? UINT64_MAX : gv - in->volumes[pred];
  *waste = gv == UINT64_MAX ? UINT64_MAX : gv - in->volumes[rec];
}

/* Dijkstra heap over nodes keyed by distance: rows are nodes [0, n), columns [n, 3n) (n
 * predecessors in by-last order, then each row's own "new object" column). */
typedef struct qitem {
  int64_t d;
  uint32_t node;
} qitem;

static void q_push(qitem *q, size_t *n, int64_t d, uint32_t node) {
  size_t i = (*n)++;
  while (i > 0 && q[(i - 1) / 2].d > d) {
    q[i] = q[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  q[i].d = d;
  q[i].node = node;
}

static qitem q_pop(qitem *q, size_t *n) {
  qitem top = q[0], v = q[--*n];
  size_t i = 0, m = *n;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= m) break;
    if (c + 1 < m && q[c + 1].d < q[c].d) ++c;
    if (q[c].d >= v.d) break;
    q[i] = q[c];
    i = c;
  }
  if (m > 0) q[i] = v;
  return top;
}

typedef struct mcf_work {
  uint32_t *order, *by_last, *tmp, *object_of, *pred, *succ;
  uint32_t *edge_start;  /* n + 1 */
  uint32_t *edge_col;    /* per edge: column node */
  int64_t *edge_cost;
  int64_t *base;         /* potentials (offset form), per node */
  int64_t *dist;         /* per node */
  uint32_t *via;         /* per node: the node it was reached from */
  uint32_t *match;       /* per node: row <-> column partner */
  uint8_t *done;         /* per node: finalized in this round */
  uint32_t *touched;     /* nodes touched this round */
  qitem *q;
  cand *heap;
} mcf_work;

static void mcf_layout(tg__arena *ar, size_t n, size_t edges, mcf_work *w) {
  const size_t nodes = 3 * n;
  w->order = tg__arena_take(ar, n, sizeof *w->order);
  w->by_last = tg__arena_take(ar, n, sizeof *w->by_last);
  w->tmp = tg__arena_take(ar, n, sizeof *w->tmp);
  w->object_of = tg__arena_take(ar, n, sizeof *w->object_of);
  w->pred = tg__arena_take(ar, n, sizeof *w->pred);
  w->succ = tg__arena_take(ar, n, sizeof *w->succ);
  w->edge_start = tg__arena_take(ar, n + 1, sizeof *w->edge_start);
  w->edge_col = tg__arena_take(ar, edges, sizeof *w->edge_col);
  w->edge_cost = tg__arena_take(ar, edges, sizeof *w->edge_cost);
  w->base = tg__arena_take(ar, nodes, sizeof *w->base);
  w->dist = tg__arena_take(ar, nodes, sizeof *w->dist);
  w->via = tg__arena_take(ar, nodes, sizeof *w->via);
  w->match = tg__arena_take(ar, nodes, sizeof *w->match);
  w->done = tg__arena_take(ar, nodes, sizeof *w->done);
  w->touched = tg__arena_take(ar, nodes, sizeof *w->touched);
  w->q = tg__arena_take(ar, edges + nodes, sizeof *w->q);
  w->heap = tg__arena_take(ar, CANDIDATES, sizeof *w->heap);
}

tg_status tg__objects_min_cost_flow(const tg__plan_input *in, tg_plan **out) {
  *out = NULL;
  tg_status st = tg__obj_check_count(in);
  if (st != TG_OK) return st;
  const size_t n = in->count;
  const tg_allocator *a = in->alloc;
  const tg_share_relation *rel = in->options->relation;
  if (n == 0) return tg__obj_emit(in, NULL, 0, out);
  const size_t k = CANDIDATES;
  size_t edges;
  if (!tg__mul_size(n, k + RECENT + 1, &edges) || edges >= UINT32_MAX / 4) return TG_ERROR_OUT_OF_HOST_MEMORY;
  mcf_work w;
  tg__arena ar = {NULL, 0, 0};
  mcf_layout(&ar, n, edges, &w);
  if (ar.overflow) return TG_ERROR_OUT_OF_HOST_MEMORY;
  unsigned char *block = tg__malloc(a, ar.off);
  if (block == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  ar = (tg__arena){block, 0, 0};
  mcf_layout(&ar, n, edges, &w);
  tg__obj_members mem;
  if ((st = tg__obj_members_init(&mem, in)) != TG_OK) goto done;

  tg__obj_order_by_first(in, w.order, w.tmp);
  for (size_t r = 0; r < n; ++r) w.by_last[r] = (uint32_t)r;
  tg__sort_key k_last = tg__key_last(in);
  tg__sort_idx(w.by_last, w.tmp, n, &k_last);
  /* Costs must stay well inside int64 for the potentials: scale astronomically large sizes
   * down (the assignment is then approximate, but still valid). */
  unsigned shift = 0;
  for (;;) {
    uint64_t sum = 0;
    int fits = 1;
    for (size_t r = 0; r < n && fits; ++r) fits = tg__add_u64(sum, in->volumes[r] >> shift, &sum);
    if (fits && sum <= ((uint64_t)1 << 60)) break;
    ++shift;
  }
  /* Offered pairs per row (rows in first-task order): the best candidates among the records
   * that ended before the row's record starts (a prefix of by-last order), then "new". */
  size_t e = 0;
  for (size_t i = 0, j = 0; i < n; ++i) {
    const uint32_t rec = w.order[i];
    const uint32_t first = in->records[rec].first_task;
    while (j < n && in->records[w.by_last[j]].last_task < first) ++j;
    /* The most recently ended ones (the chain a record would naturally continue), and the
     * cheapest of the others. */
    size_t hn = 0;
    w.edge_start[i] = (uint32_t)e;
    const size_t recent_from = j > RECENT ? j - RECENT : 0;
    for (size_t c = 0; c < j; ++c) {
      cand cd;
      pair_cost(in, w.by_last[c], rec, &cd.cost, &cd.waste);
      if (cd.cost > in->volumes[rec]) continue; /* never better than a new object */
      if (rel && !rel->may_share(rel->user, w.by_last[c], rec)) continue;
      cd.col = (uint32_t)c;
      if (c >= recent_from) {
        w.edge_col[e] = (uint32_t)(n + c);
        w.edge_cost[e++] = (int64_t)(cd.cost >> shift);
      } else {
        cand_offer(w.heap, &hn, k, &cd);
      }
    }
    for (size_t h = 0; h < hn; ++h) {
      w.edge_col[e] = (uint32_t)(n + w.heap[h].col);
      w.edge_cost[e++] = (int64_t)(w.heap[h].cost >> shift);
    }
    w.edge_col[e] = (uint32_t)(2 * n + i);
    w.edge_cost[e++] = (int64_t)(in->volumes[rec] >> shift);
  }
  w.edge_start[n] = (uint32_t)e;

  const size_t nodes = 3 * n;
  for (size_t v = 0; v < nodes; ++v) {
    w.base[v] = 0;
    w.dist[v] = INT64_MAX;
    w.match[v] = NONE32;
    w.done[v] = 0;
  }
  for (size_t i = 0; i < n; ++i) {
    /* Shortest augmenting path from row i to a free column, over reduced costs. */
    size_t qn = 0, nt = 0;
    w.dist[i] = 0;
    w.via[i] = NONE32;
    w.touched[nt++] = (uint32_t)i;
    q_push(w.q, &qn, 0, (uint32_t)i);
    uint32_t sink = NONE32;
    int64_t dt = 0;
    while (qn > 0) {
      qitem it = q_pop(w.q, &qn);
      const uint32_t v = it.node;
      if (w.done[v] || it.d != w.dist[v]) continue;
      w.done[v] = 1;
      if (v >= n) { /* a column: free ends the search; else continue at its row */
        const uint32_t r = w.match[v];
        if (r == NONE32) {
          sink = v;
          dt = it.d;
          break;
        }
        /* The matched edge back to its row is tight: same distance. */
        if (!w.done[r] && it.d < w.dist[r]) {
          if (w.dist[r] == INT64_MAX) w.touched[nt++] = r;
          w.dist[r] = it.d;
          w.via[r] = v;
          q_push(w.q, &qn, it.d, r);
        }
        continue;
      }
      for (uint32_t x = w.edge_start[v]; x < w.edge_start[v + 1]; ++x) {
        const uint32_t c = w.edge_col[x];
        if (c == w.match[v] || w.done[c]) continue;
        const int64_t nd = it.d + w.edge_cost[x] + w.base[v] - w.base[c];
        if (nd < w.dist[c]) {
          if (w.dist[c] == INT64_MAX) w.touched[nt++] = c;
          w.dist[c] = nd;
          w.via[c] = v;
          if (nd == it.d && w.match[c] == NONE32) { /* a free column at the current minimum */
            w.done[c] = 1;
            sink = c;
            dt = nd;
            break;
          }
          q_push(w.q, &qn, nd, c);
        }
      }
      if (sink != NONE32) break;
    }
    if (sink == NONE32) {
      st = TG_ERROR_INTERNAL; /* the row's own column is always free for it */
      goto done;
    }
    /* Potentials: nodes settled closer than the sink move by the difference. */
    for (size_t t = 0; t < nt; ++t) {
      const uint32_t v = w.touched[t];
      if (w.done[v] && w.dist[v] < dt) w.base[v] -= dt - w.dist[v];
      w.dist[v] = INT64_MAX;
      w.done[v] = 0;
    }
    /* Flip the path: each row on it takes the column it reached next. */
    for (uint32_t c = sink; c != NONE32;) {
      const uint32_t r = w.via[c];
      const uint32_t prev_col = w.match[r];
      w.match[c] = r;
      w.match[r] = c;
      c = w.via[r] == NONE32 ? NONE32 : prev_col;
    }
  }
  for (size_t r = 0; r < n; ++r) w.pred[r] = w.succ[r] = TG__NONE;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t c = w.match[i];
    if (c >= 2 * n) continue;
    const uint32_t rec = w.order[i], p = w.by_last[c - n];
    w.pred[rec] = p;
    w.succ[p] = rec;
  }
  size_t objects = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = w.order[i];
    if (w.pred[r] != TG__NONE) continue;
    uint32_t o = (uint32_t)objects++;
    for (uint32_t x = r; x != TG__NONE; x = w.succ[x]) {
      if (rel && !tg__obj_may_join(&mem, o, x)) o = (uint32_t)objects++;
      w.object_of[x] = o;
      if ((st = tg__obj_members_add(&mem, o, x)) != TG_OK) goto done;
    }
  }
  st = tg__obj_emit(in, w.object_of, objects, out);
done:
  tg__obj_members_free(&mem);
  tg__free(a, block);
  return st;
}
