/* Memory-aware op ordering (include/tangram/order.h, docs/scheduler.md "Op ordering").
 *
 * The model. Folded constant ops run first (they compute weights at load time and hold no
 * planned tensor). The other ("scheduled") ops run in some topological order; at the step of op
 * v the live memory is L(S) + out(v), where S is the set of ops run before v, L(S) the size of
 * the planned tensors written by S (or graph inputs, with plan_io) that an op outside S still
 * reads or that are pinned (planned graph outputs live to the end), and out(v) the size of v's
 * planned outputs. This is exactly the peak of the inclusive [first_task, last_task] intervals
 * of tg_graph_compute_lifetimes on the reordered graph. The peak of an order is the largest step.
 *
 * The search. (1) Candidates: the original order, four greedy list schedules (choose among the
 * ready ops by net allocation, step memory, or continuing the most recent branch) and two
 * depth-first post-orders (XLA's DFS scheduler: heavier operand subtrees first, or lighter
 * first); keep the best. (2) Local moves: move an op that writes or ends a tensor live at the
 * first peak step to another place in its window (after its last predecessor, before its first
 * successor); accept a move when it lowers (peak, steps at the peak, sum of steps). (3) Exact:
 * dynamic programming over the sets of executed ops (the order ideals of the DAG), layer by
 * layer, keeping per set the smallest prefix peak, pruned by the best peak known; an empty layer
 * proves the known order optimal. */
#include "tangram/order.h"

#include <string.h>

#include "core/internal.h"

const char *tg_order_method_name(tg_order_method method) {
  switch (method) {
    case TG_ORDER_ORIGINAL: return "original";
    case TG_ORDER_HEURISTIC: return "heuristic";
    case TG_ORDER_EXACT: return "exact";
  }
  return NULL;
}

#define DEFAULT_TIME_LIMIT_MS 1000u
/* Work units (op and tensor visits) of the local moves: about a second on a current core. */
#define LOCAL_WORK_CAP ((uint64_t)300000000)

/* ------------------------------------------------------------------------------------------ */
/* The problem. */

typedef struct order_problem {
  const tg_allocator *alloc;
  size_t n;               /* ops of the graph */
  size_t m;               /* scheduled ops */
  size_t folded;          /* n - m */
  uint32_t *sched;        /* m: graph op index of scheduled op s, ascending */
  int32_t *sched_of;      /* n: scheduled index, or -1 for a folded op */
  size_t *pred_start;     /* m + 1: scheduled predecessors (CSR, ascending, unique) */
  uint32_t *preds;
  size_t *succ_start;     /* m + 1: scheduled successors (CSR) */
  uint32_t *succs;
  size_t tc;              /* memory tensors: planned, size > 0 */
  uint64_t *size;
  uint32_t *cons_count;   /* scheduled consumers of each memory tensor */
  unsigned char *pinned;  /* planned graph output: live to the last task */
  int32_t *producer;      /* scheduled index, -1 for a graph input */
  size_t *cons_start;     /* tc + 1: consumers (scheduled indices) */
  uint32_t *cons;
  size_t *read_start;     /* m + 1: memory tensors each op reads */
  uint32_t *reads;
  size_t *write_start;    /* m + 1: memory tensors each op writes */
  uint32_t *writes;
  uint64_t *out_add;      /* m: size of the op's outputs (live at its step) */
  uint64_t *out_keep;     /* m: size of the outputs that stay live after it */
  uint64_t live0;         /* graph inputs live from the first task until their last reader */
  uint64_t dead0;         /* graph inputs nobody reads: live at task 0 only */
  uint64_t lower_bound;   /* max over ops of inputs + outputs, and live0 + dead0 */
  size_t edges;           /* preds entries + reads entries: the cost of one evaluation */
} order_problem;

static void problem_free(order_problem *p) {
  const tg_allocator *a = p->alloc;
  void *arrays[] = {p->sched, p->sched_of, p->pred_start, p->preds, p->succ_start, p->succs,
                    p->size, p->cons_count, p->pinned, p->producer, p->cons_start, p->cons,
                    p->read_start, p->reads, p->write_start, p->writes, p->out_add, p->out_keep};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; ++i) tg__free(a, arrays[i]);
  memset(p, 0, sizeof *p);
}

/* n + 1 entries (at least 1), zeroed. */
static size_t *alloc_starts(const tg_allocator *a, size_t n) { return tg__calloc(a, n + 1, sizeof(size_t)); }

static int is_folded(const tg_graph *g, const tg_lifetimes *lt, size_t i) {
  const tg_op *op = &g->ops[i];
  int any = 0;
  for (uint32_t k = 0; k < op->input_count; ++k) {
    int32_t t = op->inputs[k];
    if (t == -1) continue;
    any = 1;
    if (!lt->tensors[t].constant) return 0;
  }
  return any;
}

/* Check that every index the graph holds is in range (tg_graph_compute_lifetimes did on the
 * same graph; a mismatched pair must not read out of bounds). */
static tg_status check_graph(const tg_graph *g, const tg_lifetimes *lt, tg_error_info *err) {
  if (lt->tensor_count != g->tensor_count)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "lifetimes have %zu tensors, the graph %zu",
                     lt->tensor_count, g->tensor_count);
  if (g->op_count > (size_t)INT32_MAX || g->tensor_count > (size_t)INT32_MAX)
    return tg__error(err, TG_ERROR_UNSUPPORTED, "graph too large (%zu ops)", g->op_count);
  for (size_t i = 0; i < g->op_count; ++i) {
    const tg_op *op = &g->ops[i];
    for (uint32_t k = 0; k < op->input_count; ++k)
      if (op->inputs[k] < -1 || (op->inputs[k] >= 0 && (size_t)op->inputs[k] >= g->tensor_count))
        return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "op %zu: input tensor %d out of range", i,
                         (int)op->inputs[k]);
    for (uint32_t k = 0; k < op->output_count; ++k)
      if (op->outputs[k] < 0 || (size_t)op->outputs[k] >= g->tensor_count)
        return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "op %zu: output tensor %d out of range", i,
                         (int)op->outputs[k]);
  }
  for (size_t t = 0; t < lt->tensor_count; ++t) {
    const tg_tensor_lifetime *tl = &lt->tensors[t];
    if (tl->producer >= 0 && (size_t)tl->producer >= g->op_count)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "lifetimes do not match the graph");
    for (uint32_t c = 0; c < tl->consumer_count; ++c)
      if (tl->consumers[c] >= g->op_count)
        return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "lifetimes do not match the graph");
  }
  return TG_OK;
}

static tg_status problem_build(const tg_graph *g, const tg_lifetimes *lt, const uint64_t *sizes,
                               const tg_allocator *a, order_problem *p, tg_error_info *err) {
  memset(p, 0, sizeof *p);
  p->alloc = a;
  tg_status st = check_graph(g, lt, err);
  if (st != TG_OK) return st;
  const size_t n = g->op_count, T = g->tensor_count;
  p->n = n;
  p->sched_of = tg__calloc(a, n ? n : 1, sizeof *p->sched_of);
  p->sched = tg__calloc(a, n ? n : 1, sizeof *p->sched);
  int32_t *mem_of = tg__calloc(a, T ? T : 1, sizeof *mem_of);
  unsigned char *is_output = tg__calloc(a, T ? T : 1, 1);
  uint32_t *mark = tg__calloc(a, n ? n : 1, sizeof *mark);
  if (!p->sched_of || !p->sched || !mem_of || !is_output || !mark) goto oom;
  for (size_t i = 0; i < n; ++i) {
    if (is_folded(g, lt, i)) {
      p->sched_of[i] = -1;
      p->folded++;
    } else {
      p->sched_of[i] = (int32_t)p->m;
      p->sched[p->m++] = (uint32_t)i;
    }
  }
  const size_t m = p->m;
  /* Dependencies between scheduled ops (folded ones always run first). */
  p->pred_start = alloc_starts(a, m);
  p->succ_start = alloc_starts(a, m);
  if (!p->pred_start || !p->succ_start) goto oom;
  for (int pass = 0; pass < 2; ++pass) {
    memset(mark, 0, (n ? n : 1) * sizeof *mark);
    for (size_t s = 0; s < m; ++s) {
      const tg_op *op = &g->ops[p->sched[s]];
      size_t fill = pass ? p->pred_start[s] : 0;
      for (uint32_t k = 0; k < op->input_count; ++k) {
        int32_t t = op->inputs[k];
        if (t < 0) continue;
        int32_t pr = lt->tensors[t].producer;
        if (pr < 0 || p->sched_of[pr] < 0 || (size_t)pr == p->sched[s]) continue;
        uint32_t ps = (uint32_t)p->sched_of[pr];
        if (mark[ps] == s + 1) continue;
        mark[ps] = (uint32_t)(s + 1);
        if (pass == 0) {
          p->pred_start[s + 1]++;
          p->succ_start[ps + 1]++;
        } else {
          p->preds[fill++] = ps;
          p->succs[p->succ_start[ps + 1]++] = (uint32_t)s; /* cursor; fixed below */
        }
      }
    }
    if (pass == 0) {
      for (size_t s = 0; s < m; ++s) {
        p->pred_start[s + 1] += p->pred_start[s];
        p->succ_start[s + 1] += p->succ_start[s];
      }
      p->preds = tg__calloc(a, p->pred_start[m] ? p->pred_start[m] : 1, sizeof *p->preds);
      p->succs = tg__calloc(a, p->succ_start[m] ? p->succ_start[m] : 1, sizeof *p->succs);
      if (!p->preds || !p->succs) goto oom;
      /* succ_start[s + 1] becomes the fill cursor of s's successors. */
      for (size_t s = m; s > 0; --s) p->succ_start[s] = p->succ_start[s - 1];
    }
  }
  /* Predecessor lists ascending (insertion sort: in-degrees are small). */
  for (size_t s = 0; s < m; ++s)
    for (size_t i = p->pred_start[s] + 1; i < p->pred_start[s + 1]; ++i)
      for (size_t j = i; j > p->pred_start[s] && p->preds[j - 1] > p->preds[j]; --j) {
        uint32_t tmp = p->preds[j];
        p->preds[j] = p->preds[j - 1];
        p->preds[j - 1] = tmp;
      }

  /* Memory tensors. */
  for (size_t t = 0; t < T; ++t) {
    if (g->tensors[t].flags & TG_TENSOR_OUTPUT) is_output[t] = 1;
    mem_of[t] = -1;
  }
  for (size_t k = 0; k < g->output_count; ++k)
    if (g->outputs[k] < T) is_output[g->outputs[k]] = 1;
  uint64_t total = 0;
  for (size_t t = 0; t < T; ++t) {
    const tg_tensor_lifetime *tl = &lt->tensors[t];
    if (!tl->planned || sizes[t] == 0) continue;
    if (!tg__add_u64(total, sizes[t], &total)) {
      st = tg__error(err, TG_ERROR_OVERFLOW, "tensor sizes add up beyond 64 bits");
      goto fail;
    }
    for (uint32_t c = 0; c < tl->consumer_count; ++c)
      if (p->sched_of[tl->consumers[c]] < 0) {
        st = tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                       "planned tensor %zu is read by a folded op: lifetimes do not match the graph", t);
        goto fail;
      }
    mem_of[t] = (int32_t)p->tc++;
  }
  const size_t tc = p->tc;
  p->size = tg__calloc(a, tc ? tc : 1, sizeof *p->size);
  p->cons_count = tg__calloc(a, tc ? tc : 1, sizeof *p->cons_count);
  p->pinned = tg__calloc(a, tc ? tc : 1, 1);
  p->producer = tg__calloc(a, tc ? tc : 1, sizeof *p->producer);
  p->cons_start = alloc_starts(a, tc);
  p->read_start = alloc_starts(a, m);
  p->write_start = alloc_starts(a, m);
  p->out_add = tg__calloc(a, m ? m : 1, sizeof *p->out_add);
  p->out_keep = tg__calloc(a, m ? m : 1, sizeof *p->out_keep);
  if (!p->size || !p->cons_count || !p->pinned || !p->producer || !p->cons_start || !p->read_start ||
      !p->write_start || !p->out_add || !p->out_keep)
    goto oom;
  for (size_t t = 0; t < T; ++t) {
    if (mem_of[t] < 0) continue;
    const tg_tensor_lifetime *tl = &lt->tensors[t];
    size_t x = (size_t)mem_of[t];
    p->size[x] = sizes[t];
    p->cons_count[x] = tl->consumer_count;
    p->pinned[x] = tl->persistent && is_output[t];
    /* A planned tensor has a scheduled producer (folded ops write only constants) or none. */
    p->producer[x] = (tl->producer >= 0 && p->sched_of[tl->producer] >= 0) ? p->sched_of[tl->producer] : -1;
    p->cons_start[x + 1] = p->cons_start[x] + tl->consumer_count;
    for (uint32_t c = 0; c < tl->consumer_count; ++c) p->read_start[p->sched_of[tl->consumers[c]] + 1]++;
    if (p->producer[x] >= 0) p->write_start[p->producer[x] + 1]++;
  }
  for (size_t s = 0; s < m; ++s) {
    p->read_start[s + 1] += p->read_start[s];
    p->write_start[s + 1] += p->write_start[s];
  }
  p->cons = tg__calloc(a, p->cons_start[tc] ? p->cons_start[tc] : 1, sizeof *p->cons);
  p->reads = tg__calloc(a, p->read_start[m] ? p->read_start[m] : 1, sizeof *p->reads);
  p->writes = tg__calloc(a, p->write_start[m] ? p->write_start[m] : 1, sizeof *p->writes);
  if (!p->cons || !p->reads || !p->writes) goto oom;
  memset(mark, 0, (n ? n : 1) * sizeof *mark); /* read fill cursors per scheduled op */
  size_t *wcur = tg__calloc(a, m ? m : 1, sizeof *wcur);
  if (wcur == NULL) goto oom;
  for (size_t t = 0; t < T; ++t) {
    if (mem_of[t] < 0) continue;
    const tg_tensor_lifetime *tl = &lt->tensors[t];
    uint32_t x = (uint32_t)mem_of[t];
    for (uint32_t c = 0; c < tl->consumer_count; ++c) {
      uint32_t s = (uint32_t)p->sched_of[tl->consumers[c]];
      p->cons[p->cons_start[x] + c] = s;
      p->reads[p->read_start[s] + mark[s]++] = x;
    }
    if (p->producer[x] >= 0) {
      uint32_t s = (uint32_t)p->producer[x];
      p->writes[p->write_start[s] + wcur[s]++] = x;
      p->out_add[s] += p->size[x];
      if (p->cons_count[x] > 0 || p->pinned[x]) p->out_keep[s] += p->size[x];
    } else if (p->cons_count[x] > 0 || p->pinned[x]) {
      p->live0 += p->size[x];
    } else {
      p->dead0 += p->size[x];
    }
  }
  tg__free(a, wcur);
  p->lower_bound = p->live0 + p->dead0;
  for (size_t s = 0; s < m; ++s) {
    uint64_t v = p->out_add[s];
    for (size_t r = p->read_start[s]; r < p->read_start[s + 1]; ++r) v += p->size[p->reads[r]];
    if (v > p->lower_bound) p->lower_bound = v;
  }
  p->edges = p->pred_start[m] + p->read_start[m] + p->write_start[m];
  tg__free(a, mem_of);
  tg__free(a, is_output);
  tg__free(a, mark);
  return TG_OK;

oom:
  st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "op order: out of memory");
fail:
  tg__free(a, mem_of);
  tg__free(a, is_output);
  tg__free(a, mark);
  problem_free(p);
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* Evaluation. */

/* What an order scores: lower is better, compared in this sequence. */
typedef struct order_score {
  uint64_t peak;
  uint64_t at_peak;   /* steps at the peak */
  uint64_t area;      /* sum of all steps (saturating) */
} order_score;

static int score_less(const order_score *a, const order_score *b) {
  if (a->peak != b->peak) return a->peak < b->peak;
  if (a->at_peak != b->at_peak) return a->at_peak < b->at_peak;
  return a->area < b->area;
}

/* What freeing after op v gives back, given rem[] = consumers not yet run (v included). */
static uint64_t freed_by(const order_problem *p, uint32_t v, const uint32_t *rem) {
  uint64_t f = 0;
  for (size_t r = p->read_start[v]; r < p->read_start[v + 1]; ++r) {
    uint32_t x = p->reads[r];
    if (rem[x] == 1 && !p->pinned[x]) f += p->size[x];
  }
  return f;
}

static void run_op(const order_problem *p, uint32_t v, uint32_t *rem, uint64_t *live) {
  uint64_t freed = freed_by(p, v, rem);
  for (size_t r = p->read_start[v]; r < p->read_start[v + 1]; ++r) rem[p->reads[r]]--;
  *live = *live + p->out_keep[v] - freed;
}

/* Score of a scheduled order (folded ops first). `mem` (may be NULL) gets each step. */
static order_score score_sched(const order_problem *p, const uint32_t *ord, uint32_t *rem, uint64_t *mem) {
  order_score sc = {0, 0, 0};
  memcpy(rem, p->cons_count, (p->tc ? p->tc : 1) * sizeof *rem);
  uint64_t live = p->live0;
  if (p->folded > 0 || p->m == 0) sc.peak = p->live0 + p->dead0, sc.at_peak = 1, sc.area = sc.peak;
  for (size_t k = 0; k < p->m; ++k) {
    uint32_t v = ord[k];
    uint64_t step = live + p->out_add[v] + ((k == 0 && p->folded == 0) ? p->dead0 : 0);
    if (mem) mem[k] = step;
    if (step > sc.peak) sc.peak = step, sc.at_peak = 1;
    else if (step == sc.peak) sc.at_peak++;
    sc.area = tg__add_sat_u64(sc.area, step);
    run_op(p, v, rem, &live);
  }
  return sc;
}

/* Peak of a full order of the graph's ops (folded ones anywhere). */
static uint64_t peak_full(const order_problem *p, const uint32_t *order, uint32_t *rem) {
  memcpy(rem, p->cons_count, (p->tc ? p->tc : 1) * sizeof *rem);
  uint64_t live = p->live0, peak = p->n == 0 ? p->live0 + p->dead0 : 0;
  for (size_t k = 0; k < p->n; ++k) {
    int32_t s = p->sched_of[order[k]];
    uint64_t step = live + (k == 0 ? p->dead0 : 0) + (s >= 0 ? p->out_add[s] : 0);
    if (step > peak) peak = step;
    if (s >= 0) run_op(p, (uint32_t)s, rem, &live);
  }
  return peak;
}

/* ------------------------------------------------------------------------------------------ */
/* Heuristics. */

/* Scratch shared by the heuristics: m- and tc-sized arrays. */
typedef struct order_scratch {
  uint32_t *rem;      /* tc */
  uint32_t *indeg;    /* m */
  uint32_t *ready;    /* m */
  int64_t *lastpos;   /* m */
  uint32_t *tmp;      /* m */
  uint32_t *tmp2;     /* m */
  uint64_t *key;      /* m */
  uint64_t *mem;      /* m */
  uint32_t *pos;      /* m */
  size_t *stack;      /* m: DFS cursor */
  unsigned char *seen;/* m + tc */
} order_scratch;

static void scratch_free(const tg_allocator *a, order_scratch *s) {
  void *arrays[] = {s->rem, s->indeg, s->ready, s->lastpos, s->tmp, s->tmp2, s->key, s->mem, s->pos, s->stack, s->seen};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; ++i) tg__free(a, arrays[i]);
  memset(s, 0, sizeof *s);
}

static int scratch_alloc(const tg_allocator *a, const order_problem *p, order_scratch *s) {
  size_t m = p->m ? p->m : 1, tc = p->tc ? p->tc : 1;
  memset(s, 0, sizeof *s);
  s->rem = tg__calloc(a, tc, sizeof *s->rem);
  s->indeg = tg__calloc(a, m, sizeof *s->indeg);
  s->ready = tg__calloc(a, m, sizeof *s->ready);
  s->lastpos = tg__calloc(a, m, sizeof *s->lastpos);
  s->tmp = tg__calloc(a, m, sizeof *s->tmp);
  s->tmp2 = tg__calloc(a, m, sizeof *s->tmp2);
  s->key = tg__calloc(a, m, sizeof *s->key);
  s->mem = tg__calloc(a, m, sizeof *s->mem);
  s->pos = tg__calloc(a, m, sizeof *s->pos);
  s->stack = tg__calloc(a, m, sizeof *s->stack);
  s->seen = tg__calloc(a, m + tc, 1);
  if (s->rem && s->indeg && s->ready && s->lastpos && s->tmp && s->tmp2 && s->key && s->mem && s->pos &&
      s->stack && s->seen)
    return 1;
  scratch_free(a, s);
  return 0;
}

/* keep - freed compared without overflow: -1, 0, 1. */
static int cmp_net(uint64_t keep_a, uint64_t freed_a, uint64_t keep_b, uint64_t freed_b) {
  int pos_a = keep_a >= freed_a, pos_b = keep_b >= freed_b;
  uint64_t mag_a = pos_a ? keep_a - freed_a : freed_a - keep_a;
  uint64_t mag_b = pos_b ? keep_b - freed_b : freed_b - keep_b;
  if (pos_a != pos_b) return pos_a ? 1 : -1;
  if (mag_a == mag_b) return 0;
  return (mag_a < mag_b) == pos_a ? -1 : 1;
}

static int cmp_u64(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }

enum { GREEDY_NET, GREEDY_STEP, GREEDY_BRANCH, GREEDY_NET_BRANCH, GREEDY_COUNT };

/* List scheduling: among the ready ops, take the best by the variant's key. */
static void greedy(const order_problem *p, int variant, order_scratch *s, uint32_t *out) {
  const size_t m = p->m;
  memcpy(s->rem, p->cons_count, (p->tc ? p->tc : 1) * sizeof *s->rem);
  size_t nready = 0;
  for (size_t v = 0; v < m; ++v) {
    s->indeg[v] = (uint32_t)(p->pred_start[v + 1] - p->pred_start[v]);
    s->lastpos[v] = -1;
    if (s->indeg[v] == 0) s->ready[nready++] = (uint32_t)v;
  }
  uint64_t live = p->live0;
  for (size_t k = 0; k < m; ++k) {
    size_t best = 0;
    uint64_t best_freed = 0;
    for (size_t i = 0; i < nready; ++i) {
      uint32_t v = s->ready[i];
      uint64_t fr = freed_by(p, v, s->rem);
      if (i == 0) {
        best_freed = fr;
        continue;
      }
      uint32_t b = s->ready[best];
      int c = 0;
      int net = cmp_net(p->out_keep[v], fr, p->out_keep[b], best_freed);
      int step = cmp_u64(p->out_add[v], p->out_add[b]);
      int branch = s->lastpos[v] > s->lastpos[b] ? -1 : s->lastpos[v] < s->lastpos[b];
      switch (variant) {
        case GREEDY_NET: c = net ? net : step; break;
        case GREEDY_STEP: c = step ? step : net; break;
        case GREEDY_BRANCH: c = branch ? branch : net; break;
        default: c = net ? net : branch; break;
      }
      if (c == 0) c = v < b ? -1 : 1;
      if (c < 0) best = i, best_freed = fr;
    }
    uint32_t v = s->ready[best];
    s->ready[best] = s->ready[--nready];
    out[k] = v;
    run_op(p, v, s->rem, &live);
    for (size_t e = p->succ_start[v]; e < p->succ_start[v + 1]; ++e) {
      uint32_t w = p->succs[e];
      s->lastpos[w] = (int64_t)k;
      if (--s->indeg[w] == 0) s->ready[nready++] = w;
    }
  }
}

/* Stable merge sort of idx[0..n) by key[idx] (descending when `desc`). */
static void sort_by_key(uint32_t *idx, size_t n, const uint64_t *key, int desc, uint32_t *tmp) {
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      size_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
      size_t i = lo, j = mid, o = lo;
      while (i < mid && j < hi) {
        uint64_t a = key[idx[i]], b = key[idx[j]];
        int take_right = desc ? b > a : b < a;
        tmp[o++] = take_right ? idx[j++] : idx[i++];
      }
      while (i < mid) tmp[o++] = idx[i++];
      while (j < hi) tmp[o++] = idx[j++];
    }
    memcpy(idx, tmp, n * sizeof *idx);
  }
}

/* Depth-first post-order from the sinks: an op runs right after its operands' subtrees, the
 * heavier (or lighter) subtrees first. `work` holds a copy of the predecessor lists, sorted. */
static void dfs_order(const order_problem *p, int heavy_first, order_scratch *s, uint32_t *work, uint32_t *out) {
  const size_t m = p->m;
  /* Subtree weight: own outputs plus the operands' weights (saturating; shared operands count
   * more than once, which is what a heuristic may live with). */
  for (size_t v = 0; v < m; ++v) {
    uint64_t w = p->out_add[v];
    for (size_t e = p->pred_start[v]; e < p->pred_start[v + 1]; ++e) {
      uint64_t x = s->key[p->preds[e]];
      w = tg__add_sat_u64(w, x);
    }
    s->key[v] = w;
  }
  memcpy(work, p->preds, (p->pred_start[m] ? p->pred_start[m] : 1) * sizeof *work);
  for (size_t v = 0; v < m; ++v)
    sort_by_key(work + p->pred_start[v], p->pred_start[v + 1] - p->pred_start[v], s->key, heavy_first, s->tmp);
  size_t nsinks = 0;
  for (size_t v = 0; v < m; ++v)
    if (p->succ_start[v + 1] == p->succ_start[v]) s->tmp2[nsinks++] = (uint32_t)v;
  sort_by_key(s->tmp2, nsinks, s->key, heavy_first, s->tmp);
  memset(s->seen, 0, m);
  size_t k = 0;
  for (size_t r = 0; r < nsinks; ++r) {
    uint32_t root = s->tmp2[r];
    if (s->seen[root]) continue;
    /* Explicit stack: ready[] holds ops, stack[] their next operand. */
    size_t depth = 0;
    s->ready[depth] = root;
    s->stack[depth] = p->pred_start[root];
    s->seen[root] = 1;
    ++depth;
    while (depth > 0) {
      uint32_t v = s->ready[depth - 1];
      if (s->stack[depth - 1] < p->pred_start[v + 1]) {
        uint32_t w = work[s->stack[depth - 1]++];
        if (!s->seen[w]) {
          s->seen[w] = 1;
          s->ready[depth] = w;
          s->stack[depth] = p->pred_start[w];
          ++depth;
        }
      } else {
        out[k++] = v;
        --depth;
      }
    }
  }
}

/* Local moves from `ord` (improved in place). Returns the final score. */
static order_score improve(const order_problem *p, uint32_t *ord, order_scratch *s, uint32_t *cand,
                           uint64_t deadline_us, uint64_t *work) {
  const size_t m = p->m;
  order_score cur = score_sched(p, ord, s->rem, s->mem);
  const uint64_t eval_cost = (uint64_t)m + p->edges + 1;
  for (;;) {
    for (size_t k = 0; k < m; ++k) s->pos[ord[k]] = (uint32_t)k;
    size_t kp = 0;
    while (kp < m && s->mem[kp] != cur.peak) ++kp;
    if (kp == m) break; /* the peak is a folded step: no move lowers it */
    /* Candidates: the op at the peak, the producers of the tensors live there and their last
     * consumers. */
    memset(s->seen, 0, m);
    size_t nc = 0;
    cand[nc++] = ord[kp];
    s->seen[ord[kp]] = 1;
    for (size_t x = 0; x < p->tc; ++x) {
      int64_t first = p->producer[x] >= 0 ? (int64_t)s->pos[p->producer[x]] : -1, last = first;
      for (size_t c = p->cons_start[x]; c < p->cons_start[x + 1]; ++c)
        if ((int64_t)s->pos[p->cons[c]] > last) last = s->pos[p->cons[c]];
      if (p->pinned[x]) last = (int64_t)m;
      if (first > (int64_t)kp || last < (int64_t)kp) continue;
      if (p->producer[x] >= 0 && !s->seen[p->producer[x]]) {
        s->seen[p->producer[x]] = 1;
        cand[nc++] = (uint32_t)p->producer[x];
      }
      if (!p->pinned[x] && last > (int64_t)kp && last < (int64_t)m) {
        uint32_t lc = ord[last];
        if (!s->seen[lc]) s->seen[lc] = 1, cand[nc++] = lc;
      }
    }
    *work += eval_cost;
    int improved = 0;
    uint64_t evals = 0;
    for (size_t ci = 0; ci < nc && !improved; ++ci) {
      uint32_t v = cand[ci];
      size_t lo = 0, hi = m - 1, at = s->pos[v];
      for (size_t e = p->pred_start[v]; e < p->pred_start[v + 1]; ++e)
        if (s->pos[p->preds[e]] + 1 > lo) lo = s->pos[p->preds[e]] + 1;
      for (size_t e = p->succ_start[v]; e < p->succ_start[v + 1]; ++e)
        if (s->pos[p->succs[e]] < hi + 1) hi = s->pos[p->succs[e]] - 1;
      for (size_t j = lo; j <= hi && !improved; ++j) {
        if (j == at) continue;
        if (*work > LOCAL_WORK_CAP || ((++evals & 63) == 0 && tg__now_us() > deadline_us)) return cur;
        /* ord with v moved from `at` to `j`. */
        size_t o = 0;
        for (size_t k = 0; k < m; ++k) {
          if (k == at) continue;
          if (o == j) s->tmp2[o++] = v;
          s->tmp2[o++] = ord[k];
        }
        if (o == j) s->tmp2[o++] = v;
        *work += eval_cost;
        order_score sc = score_sched(p, s->tmp2, s->rem, NULL);
        if (score_less(&sc, &cur)) {
          memcpy(ord, s->tmp2, m * sizeof *ord);
          cur = score_sched(p, ord, s->rem, s->mem);
          improved = 1;
        }
      }
    }
    if (!improved) break;
  }
  return cur;
}

/* ------------------------------------------------------------------------------------------ */
/* Exact search. */

typedef struct dp_layer {
  uint64_t *bits;     /* count * words */
  uint64_t *live;     /* L(S) */
  uint64_t *best;     /* smallest prefix peak reaching S */
  uint32_t *id;       /* global state id (index into the parent / op arrays) */
  size_t count, cap;
  uint32_t *slots;    /* hash table: local index + 1, 0 = empty */
  size_t slot_cap;    /* power of two */
} dp_layer;

typedef struct dp_search {
  const order_problem *p;
  const tg_allocator *a;
  size_t words;
  uint32_t *parent, *op;  /* per global state */
  uint64_t states, max_states;
} dp_search;

static void layer_free(const tg_allocator *a, dp_layer *l) {
  TG__FREE_EACH(a, l->bits, l->live, l->best, l->id, l->slots);
  memset(l, 0, sizeof *l);
}

static uint64_t hash_bits(const uint64_t *b, size_t words) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < words; ++i) {
    h ^= b[i];
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  }
  return h;
}

static int layer_grow(const tg_allocator *a, dp_layer *l, size_t words) {
  if (l->count < l->cap) return 1;
  size_t cap = l->cap ? l->cap * 2 : 1024, bytes;
  if (!tg__mul_size(cap, words * sizeof(uint64_t), &bytes)) return 0;
  uint64_t *bits = tg__realloc(a, l->bits, l->cap * words * sizeof(uint64_t), bytes);
  if (bits == NULL) return 0;
  l->bits = bits;
  uint64_t *live = tg__realloc(a, l->live, l->cap * sizeof *live, cap * sizeof *live);
  if (live == NULL) return 0;
  l->live = live;
  uint64_t *best = tg__realloc(a, l->best, l->cap * sizeof *best, cap * sizeof *best);
  if (best == NULL) return 0;
  l->best = best;
  uint32_t *id = tg__realloc(a, l->id, l->cap * sizeof *id, cap * sizeof *id);
  if (id == NULL) return 0;
  l->id = id;
  l->cap = cap;
  /* Keep the hash table at most half full. */
  if (l->slot_cap < 2 * cap) {
    size_t sc = l->slot_cap ? l->slot_cap : 2048;
    while (sc < 2 * cap) sc *= 2;
    uint32_t *slots = tg__calloc(a, sc, sizeof *slots);
    if (slots == NULL) return 0;
    for (size_t i = 0; i < l->count; ++i) {
      size_t h = (size_t)hash_bits(l->bits + i * words, words) & (sc - 1);
      while (slots[h]) h = (h + 1) & (sc - 1);
      slots[h] = (uint32_t)(i + 1);
    }
    tg__free(a, l->slots);
    l->slots = slots;
    l->slot_cap = sc;
  }
  return 1;
}

static void layer_clear(dp_layer *l) {
  l->count = 0;
  if (l->slots) memset(l->slots, 0, l->slot_cap * sizeof *l->slots);
}

enum { DP_OK, DP_OOM, DP_LIMIT };

/* Insert (or improve) state `bits` in `l`. */
static int layer_put(dp_search *d, dp_layer *l, const uint64_t *bits, uint64_t live, uint64_t best,
                     uint32_t parent, uint32_t op) {
  const size_t words = d->words;
  if (l->slot_cap) {
    size_t h = (size_t)hash_bits(bits, words) & (l->slot_cap - 1);
    while (l->slots[h]) {
      size_t i = l->slots[h] - 1;
      if (memcmp(l->bits + i * words, bits, words * sizeof *bits) == 0) {
        if (best < l->best[i]) {
          l->best[i] = best;
          d->parent[l->id[i]] = parent;
          d->op[l->id[i]] = op;
        }
        return DP_OK;
      }
      h = (h + 1) & (l->slot_cap - 1);
    }
  }
  if (d->states >= d->max_states) return DP_LIMIT;
  if (!layer_grow(d->a, l, words)) return DP_OOM;
  size_t i = l->count++;
  memcpy(l->bits + i * words, bits, words * sizeof *bits);
  l->live[i] = live;
  l->best[i] = best;
  l->id[i] = (uint32_t)d->states;
  d->parent[d->states] = parent;
  d->op[d->states] = op;
  d->states++;
  size_t h = (size_t)hash_bits(bits, words) & (l->slot_cap - 1);
  while (l->slots[h]) h = (h + 1) & (l->slot_cap - 1);
  l->slots[h] = (uint32_t)(i + 1);
  return DP_OK;
}

static int bit_get(const uint64_t *b, size_t i) { return (int)((b[i >> 6] >> (i & 63)) & 1u); }

/* Result of the exact search. */
typedef struct dp_result {
  int status;         /* DP_OK: finished (found or proved); DP_OOM; DP_LIMIT (states or time) */
  int found;          /* an order with peak < ub, written to out */
  uint64_t peak;
  uint64_t states;
} dp_result;

static dp_result exact_search(const order_problem *p, const tg_allocator *a, uint64_t ub, uint64_t max_states,
                              uint64_t deadline_us, uint32_t *out) {
  dp_result res = {DP_OK, 0, 0, 0};
  const size_t m = p->m, words = (m + 63) / 64;
  dp_search d = {p, a, words ? words : 1, NULL, NULL, 0, max_states};
  dp_layer cur, next;
  memset(&cur, 0, sizeof cur);
  memset(&next, 0, sizeof next);
  uint64_t *bits = tg__calloc(a, d.words, sizeof *bits);
  /* parent / op grow with the states (at most max_states). */
  size_t meta_cap = 4096;
  d.parent = tg__calloc(a, meta_cap, sizeof *d.parent);
  d.op = tg__calloc(a, meta_cap, sizeof *d.op);
  if (bits == NULL || d.parent == NULL || d.op == NULL) {
    res.status = DP_OOM;
    goto done;
  }
  uint64_t start_peak = (p->folded > 0) ? p->live0 + p->dead0 : 0;
  if (start_peak >= ub) goto done; /* nothing beats ub: proved */
  int rc = layer_put(&d, &cur, bits, p->live0, start_peak, UINT32_MAX, UINT32_MAX);
  if (rc != DP_OK) {
    res.status = rc;
    goto done;
  }
  uint64_t expansions = 0;
  for (size_t k = 0; k < m; ++k) {
    layer_clear(&next);
    for (size_t i = 0; i < cur.count; ++i) {
      const uint64_t *S = cur.bits + i * d.words;
      size_t z = 0;
      while (z < m && bit_get(S, z)) ++z;
      for (size_t v = z; v < m; ++v) {
        if (bit_get(S, v)) continue;
        int ready = 1;
        for (size_t e = p->pred_start[v]; e < p->pred_start[v + 1] && ready; ++e) ready = bit_get(S, p->preds[e]);
        if (!ready) continue;
        if ((++expansions & 0x3FF) == 0 && tg__now_us() > deadline_us) {
          res.status = DP_LIMIT;
          goto done;
        }
        uint64_t step = cur.live[i] + p->out_add[v] + ((k == 0 && p->folded == 0) ? p->dead0 : 0);
        uint64_t g = step > cur.best[i] ? step : cur.best[i];
        if (g >= ub) continue;
        uint64_t freed = 0;
        for (size_t r = p->read_start[v]; r < p->read_start[v + 1]; ++r) {
          uint32_t x = p->reads[r];
          if (p->pinned[x]) continue;
          int last = 1;
          for (size_t c = p->cons_start[x]; c < p->cons_start[x + 1] && last; ++c)
            last = p->cons[c] == v || bit_get(S, p->cons[c]);
          if (last) freed += p->size[x];
        }
        memcpy(bits, S, d.words * sizeof *bits);
        bits[v >> 6] |= (uint64_t)1 << (v & 63);
        if (d.states >= meta_cap && d.states < max_states) {
          size_t nc = meta_cap * 2;
          if (nc > max_states) nc = (size_t)max_states;
          uint32_t *np = tg__realloc(a, d.parent, meta_cap * sizeof *np, nc * sizeof *np);
          if (np == NULL) {
            res.status = DP_OOM;
            goto done;
          }
          d.parent = np;
          uint32_t *no = tg__realloc(a, d.op, meta_cap * sizeof *no, nc * sizeof *no);
          if (no == NULL) {
            res.status = DP_OOM;
            goto done;
          }
          d.op = no;
          meta_cap = nc;
        }
        rc = layer_put(&d, &next, bits, cur.live[i] + p->out_keep[v] - freed, g, cur.id[i], (uint32_t)v);
        if (rc != DP_OK) {
          res.status = rc;
          goto done;
        }
      }
    }
    dp_layer t = cur;
    cur = next;
    next = t;
    if (cur.count == 0) goto done; /* every order reaches ub: proved */
  }
  /* One state left: every op run, with a peak below ub. */
  res.found = 1;
  res.peak = cur.best[0];
  for (uint32_t id = cur.id[0], k = (uint32_t)m; id != UINT32_MAX && k > 0; id = d.parent[id]) out[--k] = d.op[id];

done:
  res.states = d.states;
  layer_free(a, &cur);
  layer_free(a, &next);
  tg__free(a, bits);
  tg__free(a, d.parent);
  tg__free(a, d.op);
  return res;
}

/* ------------------------------------------------------------------------------------------ */
/* Public API. */

void tg_op_order_destroy(tg_op_order *o) {
  if (o == NULL) return;
  tg_allocator a = o->alloc;
  tg__free(&a, o->order);
  tg__free(&a, o->position);
  tg__free(&a, o);
}

/* Is `order` a permutation of the graph's ops in which every op comes after the producers of
 * its inputs? */
static tg_status check_order(const tg_graph *g, const tg_lifetimes *lt, const uint32_t *order,
                             const tg_allocator *a, tg_error_info *err) {
  const size_t n = g->op_count;
  unsigned char *done = tg__calloc(a, n ? n : 1, 1);
  if (done == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "op order: out of memory");
  tg_status st = TG_OK;
  for (size_t k = 0; k < n && st == TG_OK; ++k) {
    uint32_t i = order[k];
    if (i >= n || done[i]) {
      st = tg__error(err, TG_ERROR_GRAPH, "op order: entry %zu (%u) is not a new op index below %zu", k, i, n);
      break;
    }
    const tg_op *op = &g->ops[i];
    for (uint32_t j = 0; j < op->input_count; ++j) {
      int32_t t = op->inputs[j];
      if (t < 0) continue;
      int32_t pr = lt->tensors[t].producer;
      if (pr >= 0 && (uint32_t)pr != i && !done[pr]) {
        st = tg__error(err, TG_ERROR_GRAPH, "op order: op %u (%s) runs before op %d, which writes its input '%s'",
                       i, op->name ? op->name : "?", (int)pr, g->tensors[t].name ? g->tensors[t].name : "?");
        break;
      }
    }
    done[i] = 1;
  }
  tg__free(a, done);
  return st;
}

tg_status tg_op_order_compute_peak(const tg_graph *graph, const tg_lifetimes *lifetimes,
                                   const uint64_t *tensor_sizes, const uint32_t *order,
                                   const tg_allocator *alloc, uint64_t *peak, tg_error_info *err) {
  if (graph == NULL || lifetimes == NULL || tensor_sizes == NULL || peak == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "op order: NULL argument");
  alloc = tg__alloc_or_default(alloc);
  order_problem p;
  tg_status st = problem_build(graph, lifetimes, tensor_sizes, alloc, &p, err);
  if (st != TG_OK) return st;
  uint32_t *ident = NULL;
  uint32_t *rem = tg__calloc(alloc, p.tc ? p.tc : 1, sizeof *rem);
  if (rem == NULL) st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "op order: out of memory");
  if (st == TG_OK && order == NULL) {
    ident = tg__calloc(alloc, p.n ? p.n : 1, sizeof *ident);
    if (ident == NULL) st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "op order: out of memory");
    for (size_t i = 0; ident && i < p.n; ++i) ident[i] = (uint32_t)i;
    order = ident;
  }
  if (st == TG_OK && ident == NULL) st = check_order(graph, lifetimes, order, alloc, err);
  if (st == TG_OK) *peak = peak_full(&p, order, rem);
  tg__free(alloc, ident);
  tg__free(alloc, rem);
  problem_free(&p);
  return st;
}

tg_status tg_op_order_compute(const tg_graph *graph, const tg_lifetimes *lifetimes,
                              const uint64_t *tensor_sizes, const tg_order_options *options,
                              const tg_allocator *alloc, tg_op_order **out, tg_error_info *err) {
  if (out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "op order: out is NULL");
  *out = NULL;
  if (graph == NULL || lifetimes == NULL || tensor_sizes == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "op order: NULL argument");
  const uint64_t t0 = tg__now_us();
  tg_order_options opt;
  memset(&opt, 0, sizeof opt);
  if (options) opt = *options;
  const uint64_t limit_us = (uint64_t)(opt.time_limit_ms ? opt.time_limit_ms : DEFAULT_TIME_LIMIT_MS) * 1000u;
  const size_t exact_max_ops = opt.exact_max_ops ? opt.exact_max_ops : TG_ORDER_DEFAULT_EXACT_MAX_OPS;
  uint64_t max_states = opt.exact_max_states ? opt.exact_max_states : TG_ORDER_DEFAULT_EXACT_MAX_STATES;
  if (max_states > UINT32_MAX - 1) max_states = UINT32_MAX - 1;
  alloc = tg__alloc_or_default(alloc);

  order_problem p;
  tg_status st = problem_build(graph, lifetimes, tensor_sizes, alloc, &p, err);
  if (st != TG_OK) return st;
  const size_t n = p.n, m = p.m;
  order_scratch s;
  tg_op_order *o = tg__calloc(alloc, 1, sizeof *o);
  uint32_t *best = tg__calloc(alloc, m ? m : 1, sizeof *best);
  uint32_t *cand = tg__calloc(alloc, m ? m : 1, sizeof *cand);
  uint32_t *work = tg__calloc(alloc, p.pred_start[m] ? p.pred_start[m] : 1, sizeof *work);
  uint32_t *full = tg__calloc(alloc, n ? n : 1, sizeof *full);
  int have_scratch = o && best && cand && work && full && scratch_alloc(alloc, &p, &s);
  if (o) {
    o->alloc = *alloc;
    o->op_count = n;
    o->order = tg__calloc(alloc, n ? n : 1, sizeof *o->order);
    o->position = tg__calloc(alloc, n ? n : 1, sizeof *o->position);
  }
  if (!have_scratch || !o->order || !o->position) {
    if (have_scratch) scratch_free(alloc, &s);
    st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "op order: out of memory");
    goto done;
  }

  for (size_t i = 0; i < n; ++i) full[i] = (uint32_t)i;
  o->original_peak = peak_full(&p, full, s.rem);
  o->folded_count = p.folded;

  if (graph->flow_count > 0) {
    /* Control flow: a branch or a loop body runs as a block and its rules (what a body reads
     * from before it lives to the loop's end op) hang on the subgraph table, so the graph keeps
     * its own order. */
    o->method = TG_ORDER_ORIGINAL;
    o->peak = o->original_peak;
    o->lower_bound = p.lower_bound < o->original_peak ? p.lower_bound : o->original_peak;
    o->proved_optimal = 0;
    memcpy(o->order, full, n * sizeof *full);
    for (size_t i = 0; i < n; ++i) o->position[i] = (uint32_t)i;
    scratch_free(alloc, &s);
    o->elapsed_us = tg__now_us() - t0;
    goto done;
  }
  /* (1) Candidates. */
  for (size_t v = 0; v < m; ++v) best[v] = (uint32_t)v;
  order_score best_sc = score_sched(&p, best, s.rem, NULL);
  for (int c = 0; c < GREEDY_COUNT + 2; ++c) {
    if (c < GREEDY_COUNT) greedy(&p, c, &s, cand);
    else dfs_order(&p, c == GREEDY_COUNT, &s, work, cand);
    order_score sc = score_sched(&p, cand, s.rem, NULL);
    if (score_less(&sc, &best_sc)) {
      best_sc = sc;
      memcpy(best, cand, m * sizeof *best);
    }
  }
  /* (2) Local moves, for half the time when the exact search may follow. */
  const int exact_possible = !opt.no_exact && m <= exact_max_ops;
  uint64_t local_work = 0;
  if (best_sc.peak > p.lower_bound && m > 1)
    best_sc = improve(&p, best, &s, cand, t0 + (exact_possible ? limit_us / 2 : limit_us), &local_work);
  uint64_t peak = best_sc.peak;
  o->method = TG_ORDER_HEURISTIC;
  o->lower_bound = p.lower_bound;
  o->proved_optimal = peak <= p.lower_bound;
  /* (3) Exact. */
  if (exact_possible && !o->proved_optimal && m > 0) {
    o->exact_ran = 1;
    dp_result r = exact_search(&p, alloc, peak, max_states, t0 + limit_us, cand);
    o->exact_states = r.states;
    if (r.status == DP_OK) {
      o->proved_optimal = 1;
      if (r.found) {
        memcpy(best, cand, m * sizeof *best);
        peak = r.peak;
        o->method = TG_ORDER_EXACT;
      }
      o->lower_bound = peak;
    }
    /* DP_OOM / DP_LIMIT: keep the heuristic order, unproved. */
  }

  /* The full order: folded ops first, in their original order. */
  size_t k = 0;
  for (size_t i = 0; i < n; ++i)
    if (p.sched_of[i] < 0) full[k++] = (uint32_t)i;
  for (size_t v = 0; v < m; ++v) full[k++] = p.sched[best[v]];
  peak = peak_full(&p, full, s.rem);
  if (peak >= o->original_peak) {
    for (size_t i = 0; i < n; ++i) full[i] = (uint32_t)i;
    peak = o->original_peak;
    o->method = TG_ORDER_ORIGINAL;
    if (o->proved_optimal && o->lower_bound < peak) o->proved_optimal = 0;
  }
  o->peak = peak;
  if (o->lower_bound > peak) o->lower_bound = peak;
  memcpy(o->order, full, n * sizeof *full);
  for (size_t i = 0; i < n; ++i) o->position[full[i]] = (uint32_t)i;
  scratch_free(alloc, &s);
  o->elapsed_us = tg__now_us() - t0;

done:
  tg__free(alloc, best);
  tg__free(alloc, cand);
  tg__free(alloc, work);
  tg__free(alloc, full);
  problem_free(&p);
  if (st != TG_OK) {
    tg_op_order_destroy(o);
    return st;
  }
  *out = o;
  return TG_OK;
}

tg_status tg_graph_create_reordered(const tg_graph *graph, const uint32_t *order,
                                    const tg_allocator *alloc, tg_graph **out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  if (graph == NULL || (order == NULL && graph->op_count > 0)) return TG_ERROR_INVALID_ARGUMENT;
  alloc = tg__alloc_or_default(alloc);
  const size_t n = graph->op_count;
  unsigned char *seen = tg__calloc(alloc, n ? n : 1, 1);
  if (seen == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t k = 0; k < n; ++k) {
    if (order[k] >= n || seen[order[k]]) {
      tg__free(alloc, seen);
      return TG_ERROR_INVALID_ARGUMENT;
    }
    seen[order[k]] = 1;
  }
  tg__free(alloc, seen);
  if (graph->flow_count > 0)
    for (size_t k = 0; k < n; ++k)
      if (order[k] != k) return TG_ERROR_UNSUPPORTED; /* branches and bodies run as blocks */
  tg_graph *g = NULL;
  tg_status st = tg_graph_create(graph->tensor_count, n, alloc, &g);
  if (st != TG_OK) return st;
  g->subgraph_count = graph->subgraph_count;
  if (graph->flow_count > 0) {
    g->subgraphs = tg__calloc(alloc, graph->flow_count, sizeof *g->subgraphs);
    if (g->subgraphs == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
    else {
      g->flow_count = graph->flow_count;
      for (size_t k = 0; k < graph->flow_count && st == TG_OK; ++k) {
        g->subgraphs[k] = graph->subgraphs[k];
        g->subgraphs[k].name = NULL;
        if (graph->subgraphs[k].name && (g->subgraphs[k].name = tg__strdup(alloc, graph->subgraphs[k].name)) == NULL)
          st = TG_ERROR_OUT_OF_HOST_MEMORY;
      }
    }
  }
  g->dim_order = graph->dim_order;
  for (size_t t = 0; t < graph->tensor_count && st == TG_OK; ++t) {
    const tg_tensor *src = &graph->tensors[t];
    g->tensors[t] = *src;
    g->tensors[t].name = NULL;
    if (src->name && (g->tensors[t].name = tg__strdup(alloc, src->name)) == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  for (size_t k = 0; k < n && st == TG_OK; ++k) {
    const tg_op *src = &graph->ops[order[k]];
    tg_op *dst = &g->ops[k];
    if (src->name && (dst->name = tg__strdup(alloc, src->name)) == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
    dst->inputs = tg__calloc(alloc, src->input_count ? src->input_count : 1, sizeof *dst->inputs);
    dst->outputs = tg__calloc(alloc, src->output_count ? src->output_count : 1, sizeof *dst->outputs);
    if (dst->inputs == NULL || dst->outputs == NULL) {
      st = TG_ERROR_OUT_OF_HOST_MEMORY;
      break;
    }
    dst->input_count = src->input_count;
    dst->output_count = src->output_count;
    dst->subgraph = src->subgraph;
    dst->flags = src->flags;
    if (src->input_count) memcpy(dst->inputs, src->inputs, src->input_count * sizeof *dst->inputs);
    if (src->output_count) memcpy(dst->outputs, src->outputs, src->output_count * sizeof *dst->outputs);
  }
  if (st == TG_OK) {
    g->input_count = graph->input_count;
    g->output_count = graph->output_count;
    g->inputs = tg__calloc(alloc, graph->input_count ? graph->input_count : 1, sizeof *g->inputs);
    g->outputs = tg__calloc(alloc, graph->output_count ? graph->output_count : 1, sizeof *g->outputs);
    if (g->inputs == NULL || g->outputs == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (st == TG_OK) {
    if (graph->input_count) memcpy(g->inputs, graph->inputs, graph->input_count * sizeof *g->inputs);
    if (graph->output_count) memcpy(g->outputs, graph->outputs, graph->output_count * sizeof *g->outputs);
    const char *src = graph->source ? graph->source : "graph";
    size_t len = strlen(src);
    g->source = tg__malloc(alloc, len + sizeof " (reordered)");
    if (g->source == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
    else {
      memcpy(g->source, src, len);
      memcpy(g->source + len, " (reordered)", sizeof " (reordered)");
    }
  }
  if (st != TG_OK) {
    tg_graph_destroy(g);
    return st;
  }
  *out = g;
  return TG_OK;
}
