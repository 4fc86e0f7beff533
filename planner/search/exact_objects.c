/* Objects mode, 1D, exact: a branch-and-bound over object assignments.
 *
 * Records are taken by size, largest first, so an object's size is the size of the record that
 * opened it and never changes. Each record either joins an object it may share (no member
 * intersects it in time, and the relation allows every member) or opens a new object.
 *
 * Bound (TFLite's positional maximums, made exact per position): pm[k] is the largest k-th
 * biggest size live at one task. In any plan, the k-th largest object is at least pm[k] (the k
 * biggest records live at that task sit in k distinct objects). Objects are opened in
 * decreasing size, so the first m opened are the m largest of the final plan: a node with m
 * objects of total C can reach no less than C + pm[m+1] + pm[m+2] + ..., and it is dead when
 * the record at hand is smaller than pm[m+1] while fewer than L objects exist (L = the most
 * records live at one task): every later record is smaller still, so object m+1 could never
 * be large enough.
 *
 * Branching: join existing objects smallest first (joining costs nothing), then open one.
 * Records of equal size and equal interval are interchangeable: the later one never goes to
 * an object before the earlier one's (symmetry breaking). The search starts from the incumbent
 * (the best greedy plan) and replaces it only by a strictly smaller plan. */
#include "planner/search/exact_objects.h"

#include <string.h>

#include "planner/strategies/objects_common.h"

typedef struct ex_state {
  const tg__plan_input *in;
  size_t n;
  uint32_t *order;      /* records by size desc, then first task, then index */
  uint32_t *twin_of;    /* per position: previous position with equal size and interval, or NONE */
  uint32_t *pf, *pl;    /* per record: task point range */
  size_t words;         /* words per object row */
  uint64_t *rows;       /* per object: task points covered by its members */
  uint64_t *size;       /* per object */
  uint32_t *members;    /* per object: member list heads (relation only) */
  uint32_t *next;       /* per record: next member (relation only) */
  uint32_t *obj_of;     /* per record: current assignment */
  uint32_t *best_of;    /* per record: best assignment found */
  size_t best_objects;
  uint64_t best_total;
  uint64_t *pm;         /* pm[k]: the (k+1)-th positional maximum (0 from k = live_max on) */
  uint64_t *pm_tail;    /* pm_tail[m] = pm[m] + pm[m+1] + ... (n + 1 entries) */
  size_t live_max;
  uint64_t nodes;
  uint64_t max_nodes;     /* 0 = no cap */
  uint64_t deadline_us;
  uint64_t start_us, reported_us;
  tg_exact_stats *stats;  /* progress reports */
  int timed_out;
  int improved;
} ex_state;

/* The bits of word w that lie in points [lo, hi]. */
static uint64_t range_mask(uint32_t w, uint32_t lo, uint32_t hi) {
  uint64_t m = ~(uint64_t)0;
  if (w == lo / 64) m &= ~(uint64_t)0 << (lo % 64);
  if (w == hi / 64 && hi % 64 != 63) m &= ((uint64_t)1 << (hi % 64 + 1)) - 1;
  return m;
}

static int row_hits(const uint64_t *row, uint32_t lo, uint32_t hi) {
  for (uint32_t w = lo / 64; w <= hi / 64; ++w)
    if (row[w] & range_mask(w, lo, hi)) return 1;
  return 0;
}

static void row_flip(uint64_t *row, uint32_t lo, uint32_t hi) {
  for (uint32_t w = lo / 64; w <= hi / 64; ++w) row[w] ^= range_mask(w, lo, hi);
}

static int may_join(const ex_state *s, uint32_t o, uint32_t r) {
  if (row_hits(s->rows + (size_t)o * s->words, s->pf[r], s->pl[r])) return 0;
  if (s->members == NULL) return 1;
  for (uint32_t x = s->members[o]; x != TG__NONE; x = s->next[x])
    if (tg__records_conflict(s->in, x, r)) return 0;
  return 1;
}

static void put(ex_state *s, uint32_t o, uint32_t r) {
  row_flip(s->rows + (size_t)o * s->words, s->pf[r], s->pl[r]);
  s->obj_of[r] = o;
  if (s->members != NULL) {
    s->next[r] = s->members[o];
    s->members[o] = r;
  }
}

static void take(ex_state *s, uint32_t o, uint32_t r) {
  row_flip(s->rows + (size_t)o * s->words, s->pf[r], s->pl[r]);
  s->obj_of[r] = TG__NONE;
  if (s->members != NULL) s->members[o] = s->next[r]; /* r is the head: LIFO */
}

/* Place order[i..n) with `m` objects open at total `cost`. */
static void search(ex_state *s, size_t i, size_t m, uint64_t cost) {
  if (s->timed_out) return;
  if (s->max_nodes != 0 && s->nodes >= s->max_nodes) {
    s->timed_out = 1;
    return;
  }
  if ((++s->nodes & 1023) == 0) {
    uint64_t now = tg__now_us();
    if (now >= s->deadline_us) {
      s->timed_out = 1;
      return;
    }
    if (s->stats->progress != NULL && now - s->reported_us >= 100000) {
      s->reported_us = now;
      s->stats->nodes = s->nodes;
      s->stats->total = s->best_total;
      s->stats->elapsed_us = now - s->start_us;
      s->stats->progress(s->stats->progress_user, s->stats);
    }
  }
  if (i == s->n) {
    if (cost < s->best_total) {
      s->best_total = cost;
      s->best_objects = m;
      memcpy(s->best_of, s->obj_of, s->n * sizeof *s->best_of);
      s->improved = 1;
    }
    return;
  }
  const uint32_t r = s->order[i];
  const uint64_t v = s->in->volumes[r];
  /* Fewer than L objects and this record too small to open the next: dead. */
  if (m < s->live_max && v < s->pm[m]) return;
  uint32_t from = 0;
  if (s->twin_of[i] != TG__NONE) from = s->obj_of[s->order[s->twin_of[i]]];
  if (cost + s->pm_tail[m] >= s->best_total) return;
  /* Join: objects in opening order are by size desc; smallest first = reverse. */
  for (size_t k = m; k-- > from;) {
    if (!may_join(s, (uint32_t)k, r)) continue;
    put(s, (uint32_t)k, r);
    search(s, i + 1, m, cost);
    take(s, (uint32_t)k, r);
    if (s->timed_out) return;
  }
  /* Open a new object (its row is clear: taken objects are cleared on the way back). */
  if (cost + v + s->pm_tail[m + 1] >= s->best_total) return;
  s->size[m] = v;
  put(s, (uint32_t)m, r);
  search(s, i + 1, m + 1, cost + v);
  take(s, (uint32_t)m, r);
}

/* pm[k] for k < live_max, by a sweep over task points with each point's live sizes sorted. */
static void positional_maxima(ex_state *s, size_t points, uint64_t *scratch) {
  const size_t n = s->n;
  memset(s->pm, 0, n * sizeof *s->pm);
  s->live_max = 0;
  for (size_t p = 0; p < points; ++p) {
    size_t live = 0;
    /* order is by size desc: the live records at p in that order are already sorted. */
    for (size_t i = 0; i < n; ++i) {
      uint32_t r = s->order[i];
      if (s->pf[r] <= p && p <= s->pl[r]) scratch[live++] = s->in->volumes[r];
    }
    for (size_t k = 0; k < live; ++k)
      if (scratch[k] > s->pm[k]) s->pm[k] = scratch[k];
    if (live > s->live_max) s->live_max = live;
  }
  s->pm_tail[n] = 0;
  for (size_t k = n; k-- > 0;) s->pm_tail[k] = s->pm_tail[k + 1] + s->pm[k];
}

tg_status tg__exact_objects_improve(const tg__plan_input *in, tg__budget *b, tg_plan **best,
                                    tg_exact_stats *stats) {
  const size_t n = in->count;
  uint64_t start = tg__now_us();
  stats->searched = 0;
  stats->nodes = 0;
  stats->proved_optimal = 0;
  stats->total = (*best)->total;
  if (in->dims != 1 || n == 0 || n > TG__EXACT_OBJECTS_MAX_RECORDS) return TG_OK;
  const tg_allocator *a = in->alloc;
  ex_state s;
  memset(&s, 0, sizeof s);
  s.in = in;
  s.n = n;
  tg_status st = TG_ERROR_OUT_OF_HOST_MEMORY;
  uint32_t *u32 = tg__obj_alloc(a, n, 10 * sizeof(uint32_t));
  uint64_t *u64 = tg__obj_alloc(a, n + 1, 5 * sizeof(uint64_t));
  uint64_t *rows = NULL;
  if (u32 == NULL || u64 == NULL) goto done;
  s.order = u32;
  s.twin_of = u32 + n;
  s.pf = u32 + 2 * n;
  s.pl = u32 + 3 * n;
  uint32_t *pts = u32 + 4 * n, *idx = u32 + 5 * n, *tmp = u32 + 6 * n;
  s.obj_of = u32 + 7 * n;
  s.best_of = u32 + 8 * n;
  s.next = u32 + 9 * n;
  s.size = u64;
  s.pm = u64 + n;
  s.pm_tail = u64 + 2 * n;     /* n + 1 entries */
  uint64_t *scratch = u64 + 3 * n + 1;
  size_t points = tg__obj_points(in, s.pf, s.pl, pts, idx, tmp);
  s.words = (points + 63) / 64;
  rows = tg__calloc(a, n * s.words, sizeof *rows);
  if (rows == NULL) goto done;
  s.rows = rows;
  /* Order: size desc, then first task, then last task, then index (stable sorts, last key first). */
  for (size_t r = 0; r < n; ++r) s.order[r] = (uint32_t)r;
  tg__sort_key k = tg__key_last(in);
  tg__sort_idx(s.order, tmp, n, &k);
  k = tg__key_first(in);
  tg__sort_idx(s.order, tmp, n, &k);
  k = tg__key_u64(in->volumes, 1);
  tg__sort_idx(s.order, tmp, n, &k);
  for (size_t i = 0; i < n; ++i) {
    s.twin_of[i] = TG__NONE;
    if (i > 0) {
      const tg_usage_record *x = &in->records[s.order[i]], *y = &in->records[s.order[i - 1]];
      if (in->volumes[s.order[i]] == in->volumes[s.order[i - 1]] && x->first_task == y->first_task &&
          x->last_task == y->last_task && in->options->relation == NULL)
        s.twin_of[i] = (uint32_t)(i - 1);
    }
    s.obj_of[i] = TG__NONE;
  }
  if (in->options->relation != NULL) {
    s.members = u32 + 4 * n; /* pts is no longer needed */
    for (size_t o = 0; o < n; ++o) s.members[o] = TG__NONE;
  }
  positional_maxima(&s, points, scratch);
  s.best_total = (*best)->total;
  s.deadline_us = tg__budget_deadline(b);
  s.max_nodes = tg__budget_count(b, TG__EXACT_OBJECTS_NODES_PER_UNIT);
  if (s.max_nodes == UINT64_MAX) s.max_nodes = 0; /* no cap */
  else if (s.max_nodes == 0) s.max_nodes = 1;   /* nothing to spend: stop at once */
  s.start_us = s.reported_us = start;
  s.stats = stats;
  stats->lower_bound = s.pm_tail[0];
  stats->searched = 1;
  if (s.pm_tail[0] < s.best_total) search(&s, 0, 0, 0);
  stats->nodes = s.nodes;
  tg__budget_spend(b, s.nodes, TG__EXACT_OBJECTS_NODES_PER_UNIT);
  stats->lower_bound = s.pm_tail[0];
  if (!s.timed_out) {
    stats->proved_optimal = 1;
    stats->lower_bound = s.best_total;
  }
  st = TG_OK;
  if (s.improved) {
    tg_plan *p = NULL;
    st = tg__obj_emit(in, s.best_of, s.best_objects, &p);
    if (st == TG_OK) {
      p->strategy = TG_STRATEGY_BEST;
      tg_plan_destroy(*best);
      *best = p;
    }
  }
  stats->total = (*best)->total;
done:
  tg__free(a, rows);
  tg__free(a, u64);
  tg__free(a, u32);
  stats->elapsed_us = tg__now_us() - start;
  return st;
}
