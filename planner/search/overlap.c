/* Overlap minimisation at a fixed capacity (offsets, serial relation).
 *
 * The tree searches (exact_offsets.c) build a plan record by record; on dense sets of large
 * buffers (capacity-tight: a few hundred records, several of them a tenth of the arena or more,
 * most task points 90-100% full) a wrong choice near the bottom shows only hundreds of levels
 * later. This search works on whole plans instead: it fixes a capacity C below the incumbent's
 * total, pushes every record that ends above C down to end at C, and then moves one record at a
 * time to the offset in [0, C - size] where it overlaps the records it meets in time the least,
 * until nothing overlaps (a plan at C) or its moves run out. Each overlapping pair carries a
 * weight that grows while the pair keeps overlapping at a local minimum (guided local search),
 * so the search leaves the minima it would otherwise circle in.
 *
 * A record's best offset: the weighted overlap with the records it meets, as a function of its
 * offset, is a sum of trapezoids (piecewise linear), whose slope rises only where the record
 * would start at a neighbour's end or end at a neighbour's start; so its minimum over
 * [0, C - size] is at one of those, at 0 or at C - size (each aligned: ends up, starts down).
 * All are evaluated on a copy of the neighbours' offsets, ends and weights, each stopping once
 * it costs more than the best so far, or than staying where it is (O(degree^2) a move at most).
 * A record moves when its best place costs less than where it is, else the overlapping pairs
 * of largest utility (overlap / (weight + 1), guided local search's rule) get heavier; one time
 * in eight, drawn before the candidates, it moves to its best place anyway (a random walk
 * across plateaus).
 *
 * Capacities: C starts a sixteenth of the gap to the bound below the incumbent; a plan found at
 * C becomes the incumbent and the next C is as far below it; a C not reached within 2000 + 20n
 * moves halves the step, and a step halved to nothing starts the ladder again. Work is counted
 * (neighbour entries read, TG__OVERLAP_WORK_PER_UNIT a unit), so a run that the deadline does
 * not stop depends on the records, the options and the budget only.
 *
 * Measured (bench_planner --time-sweep --family capacity-tight --limits 100,1000,10000, in
 * `best` beside the skyline search): the five capacity-tight sets the tree alone left 1-10%
 * above peak-live at 1 s end at 1.000-1.011 with seed 0 (1.000-1.029 over seeds 0-2); at 10 s
 * all at peak-live. Cutting the candidates at the cost of staying: 0.73 -> 0.92 moves a
 * microsecond on 500/10 (the copy of the neighbours before it: about 7% of the whole run). */
#include <string.h>

#include "planner/strategies/offsets_common.h"
#include "planner/search/search.h"

typedef struct ov {
  size_t n;
  size_t *rec;
  uint64_t *vol, *al, *off, *best_off;
  uint32_t *pf, *pl;
  size_t *adj_beg;  /* neighbours (records meeting in time) of u: adj[adj_beg[u] .. adj_beg[u+1]) */
  uint32_t *adj;
  size_t *rev;      /* the entry of the same pair in the other record's list */
  uint64_t *w;      /* weight per entry (both entries of a pair hold the same) */
  uint64_t *viol;   /* weighted overlap per record */
  size_t *bad, *bad_pos; /* records with viol > 0 */
  size_t nbad;
  uint64_t *cand;   /* candidate offsets of one move */
  uint64_t *nlo, *nhi, *nw; /* one move's neighbours: offset, end, weight */
  uint64_t work;    /* neighbour entries read (the budget's measure) */
  tg__rng rng;
} ov;

static uint64_t overlap(uint64_t a, uint64_t sa, uint64_t b, uint64_t sb) {
  uint64_t lo = a > b ? a : b, hi = a + sa < b + sb ? a + sa : b + sb;
  return hi > lo ? hi - lo : 0;
}

static void bad_set(ov *o, size_t u) {
  int is_bad = o->viol[u] > 0, was = o->bad_pos[u] != SIZE_MAX;
  if (is_bad && !was) {
    o->bad_pos[u] = o->nbad;
    o->bad[o->nbad++] = u;
  } else if (!is_bad && was) {
    size_t p = o->bad_pos[u], last = o->bad[--o->nbad];
    o->bad[p] = last;
    o->bad_pos[last] = p;
    o->bad_pos[u] = SIZE_MAX;
  }
}

/* The weighted overlap of u where it is (o->off[u]). */
static uint64_t cost_here(ov *o, size_t u) {
  uint64_t c = 0;
  o->work += o->adj_beg[u + 1] - o->adj_beg[u];
  for (size_t e = o->adj_beg[u]; e < o->adj_beg[u + 1]; ++e) {
    size_t v = o->adj[e];
    c += overlap(o->off[u], o->vol[u], o->off[v], o->vol[v]) * o->w[e];
  }
  return c;
}

static void move_to(ov *o, size_t u, uint64_t x) {
  uint64_t vu = 0;
  o->work += o->adj_beg[u + 1] - o->adj_beg[u];
  for (size_t e = o->adj_beg[u]; e < o->adj_beg[u + 1]; ++e) {
    size_t v = o->adj[e];
    uint64_t before = overlap(o->off[u], o->vol[u], o->off[v], o->vol[v]) * o->w[e];
    uint64_t after = overlap(x, o->vol[u], o->off[v], o->vol[v]) * o->w[e];
    o->viol[v] = o->viol[v] - before + after;
    vu += after;
    bad_set(o, v);
  }
  o->off[u] = x;
  o->viol[u] = vu;
  bad_set(o, u);
}

/* Weights of u's overlapping pairs of largest utility (overlap / (weight + 1)) up by one (both
 * entries; up to TG__OVERLAP_MAX_WEIGHT), and the records' overlaps with them. */
static void penalise(ov *o, size_t u) {
  o->work += 2 * (o->adj_beg[u + 1] - o->adj_beg[u]);
  uint64_t bo = 0, bw = 1;
  for (size_t e = o->adj_beg[u]; e < o->adj_beg[u + 1]; ++e) {
    size_t v = o->adj[e];
    uint64_t ol = overlap(o->off[u], o->vol[u], o->off[v], o->vol[v]);
    if (ol == 0 || o->w[e] >= TG__OVERLAP_MAX_WEIGHT) continue;
    if (ol * bw > bo * (o->w[e] + 1)) bo = ol, bw = o->w[e] + 1;
  }
  for (size_t e = o->adj_beg[u]; e < o->adj_beg[u + 1]; ++e) {
    size_t v = o->adj[e];
    uint64_t ol = overlap(o->off[u], o->vol[u], o->off[v], o->vol[v]);
    if (ol == 0 || o->w[e] >= TG__OVERLAP_MAX_WEIGHT) continue;
    if (ol * bw < bo * (o->w[e] + 1)) continue;
    o->w[e]++;
    o->w[o->rev[e]]++;
    o->viol[u] += ol;
    o->viol[v] += ol;
  }
}

static uint64_t align_down(uint64_t x, uint64_t a) { return x - x % a; }

/* One move of u: to its least-cost offset in [0, cap - size] other than where it is (ties at
 * random); when none costs less than staying, the pairs it overlaps are penalised instead
 * (unless this is one of the one-in-eight moves drawn as a walk: those take the least-cost
 * offset whatever it costs). */
static void step(ov *o, size_t u, uint64_t cap) {
  const uint64_t s = o->vol[u], a = o->al[u], top = align_down(cap - s, a);
  const size_t beg = o->adj_beg[u], d = o->adj_beg[u + 1] - beg;
  uint64_t *lo = o->nlo, *hi = o->nhi, *w = o->nw;
  size_t nc = 0;
  o->cand[nc++] = 0;
  o->cand[nc++] = top;
  for (size_t i = 0; i < d; ++i) {
    size_t v = o->adj[beg + i];
    uint64_t x;
    lo[i] = o->off[v];
    hi[i] = o->off[v] + o->vol[v];
    w[i] = o->w[beg + i];
    if (tg__align_up(hi[i], a, &x) && x <= top) o->cand[nc++] = x;
    if (lo[i] >= s) {
      x = align_down(lo[i] - s, a);
      if (x <= top) o->cand[nc++] = x;
    }
  }
  const int walk = (tg__rng_next(&o->rng) & 7) == 0;
  uint64_t here = o->viol[u], best = walk ? UINT64_MAX : here, bx = o->off[u], work = 0;
  size_t ties = 0;
  for (size_t i = 0; i < nc; ++i) {
    const uint64_t x = o->cand[i], xe = x + s;
    if (x == o->off[u]) continue;
    uint64_t c = 0;
    size_t k = 0;
    while (k < d) {
      uint64_t l = x > lo[k] ? x : lo[k], h = xe < hi[k] ? xe : hi[k];
      if (h > l) {
        c += (h - l) * w[k]; /* < 2^62 in all: TG__OVERLAP_MAX_TOTAL, TG__OVERLAP_MAX_WEIGHT */
        if (c > best) break;
      }
      ++k;
    }
    work += k < d ? k + 1 : d;
    if (c < best) {
      best = c;
      bx = x;
      ties = 1;
    } else if (c == best && ties > 0 && tg__rng_below(&o->rng, ++ties) == 0) {
      bx = x;
    }
  }
  o->work += work;
  /* (a candidate found outside a walk costs less than staying: best started at here) */
  if (ties > 0) move_to(o, u, bx);
  else if (!walk) penalise(o, u);
}

/* Search for a plan at `cap` (at least every size) from o->best_off, within `moves` moves and
 * until o->work reaches `work_end`; 1 when found (in o->off). */
static int run_at(ov *o, uint64_t cap, uint64_t moves, uint64_t work_end, uint64_t deadline) {
  const size_t n = o->n;
  for (size_t u = 0; u < n; ++u) {
    uint64_t x = o->best_off[u];
    if (x + o->vol[u] > cap) x = align_down(cap - o->vol[u], o->al[u]);
    o->off[u] = x;
    o->bad_pos[u] = SIZE_MAX;
  }
  for (size_t e = 0; e < o->adj_beg[n]; ++e) o->w[e] = 1;
  o->nbad = 0;
  for (size_t u = 0; u < n; ++u) {
    o->viol[u] = cost_here(o, u);
    bad_set(o, u);
  }
  for (uint64_t m = 0; m < moves && o->nbad > 0 && o->work < work_end; ++m) {
    if ((m & 1023) == 1023 && tg__now_us() >= deadline) break;
    step(o, o->bad[tg__rng_below(&o->rng, o->nbad)], cap);
  }
  return o->nbad == 0;
}

int tg__overlap_applies(const tg__plan_input *in) {
  if (in->options->mode != TG_MODE_OFFSETS || in->options->relation != NULL || in->count > TG_EXACT_MAX_RECORDS)
    return 0;
  /* Live records per task over the tasks from the first to the last. */
  uint64_t cover = 0, first = UINT64_MAX, last = 0;
  for (size_t r = 0; r < in->count; ++r) {
    if (in->volumes[r] == 0) continue;
    cover += (uint64_t)in->records[r].last_task - in->records[r].first_task + 1;
    if (in->records[r].first_task < first) first = in->records[r].first_task;
    if (in->records[r].last_task > last) last = in->records[r].last_task;
  }
  return cover == 0 || cover <= (uint64_t)TG__OVERLAP_MAX_LIVE * (last - first + 1);
}

tg_status tg__search_overlap(const tg__plan_input *in, uint64_t bound, tg__budget *b, tg_plan **best) {
  int cut_short;
  return tg__search_overlap_run(in, bound, b, best, &cut_short);
}

tg_status tg__search_overlap_run(const tg__plan_input *in, uint64_t bound, tg__budget *b, tg_plan **best,
                                 int *cut_short) {
  *cut_short = 0;
  if (in->options->relation != NULL || (*best)->total <= bound || in->count > TG_EXACT_MAX_RECORDS ||
      (*best)->total > TG__OVERLAP_MAX_TOTAL)
    return TG_OK;
  const tg_allocator *a = in->alloc;
  ov o;
  memset(&o, 0, sizeof o);
  size_t n = 0;
  for (size_t r = 0; r < in->count; ++r) n += in->volumes[r] > 0;
  o.n = n;
  size_t nn = n ? n : 1;
  tg_status st = TG_OK;
  o.rec = tg__alloc_array(a, nn, sizeof *o.rec);
  o.vol = tg__alloc_array(a, nn, sizeof *o.vol);
  o.al = tg__alloc_array(a, nn, sizeof *o.al);
  o.off = tg__alloc_array(a, nn, sizeof *o.off);
  o.best_off = tg__alloc_array(a, nn, sizeof *o.best_off);
  o.pf = tg__alloc_array(a, nn, sizeof *o.pf);
  o.pl = tg__alloc_array(a, nn, sizeof *o.pl);
  o.adj_beg = tg__calloc(a, nn + 1, sizeof *o.adj_beg);
  o.viol = tg__alloc_array(a, nn, sizeof *o.viol);
  o.bad = tg__alloc_array(a, nn, sizeof *o.bad);
  o.bad_pos = tg__alloc_array(a, nn, sizeof *o.bad_pos);
  if (!o.rec || !o.vol || !o.al || !o.off || !o.best_off || !o.pf || !o.pl || !o.adj_beg || !o.viol ||
      !o.bad || !o.bad_pos) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  size_t j = 0;
  for (size_t r = 0; r < in->count; ++r) {
    if (in->volumes[r] == 0) continue;
    o.rec[j] = r;
    o.vol[j] = in->volumes[r];
    o.al[j] = tg__record_alignment(in, r);
    o.pf[j] = in->records[r].first_task;
    o.pl[j] = in->records[r].last_task;
    o.best_off[j] = (*best)->offset_of[r];
    ++j;
  }
  /* Neighbour lists (O(n^2): up to TG_EXACT_MAX_RECORDS records), each sorted by index: a
   * pair's two entries are made together, each the other's reverse. */
  size_t edges = 0;
  for (size_t u = 0; u < n; ++u)
    for (size_t v = u + 1; v < n; ++v)
      if (o.pf[u] <= o.pl[v] && o.pf[v] <= o.pl[u]) edges += 2, o.adj_beg[u + 1]++, o.adj_beg[v + 1]++;
  for (size_t u = 0; u < n; ++u) o.adj_beg[u + 1] += o.adj_beg[u];
  o.adj = tg__alloc_array(a, edges ? edges : 1, sizeof *o.adj);
  o.rev = tg__alloc_array(a, edges ? edges : 1, sizeof *o.rev);
  o.w = tg__alloc_array(a, edges ? edges : 1, sizeof *o.w);
  o.cand = tg__alloc_array(a, 2 * nn + 2, sizeof *o.cand);
  o.nlo = tg__alloc_array(a, nn, sizeof *o.nlo);
  o.nhi = tg__alloc_array(a, nn, sizeof *o.nhi);
  o.nw = tg__alloc_array(a, nn, sizeof *o.nw);
  if (!o.adj || !o.rev || !o.w || !o.cand || !o.nlo || !o.nhi || !o.nw) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  /* (u's list gets the smaller indices while u is the larger of a pair, in order, then the
   * larger ones: sorted) */
  memcpy(o.bad, o.adj_beg, n * sizeof *o.bad); /* the next free entry per record, for now */
  for (size_t u = 0; u < n; ++u)
    for (size_t v = u + 1; v < n; ++v)
      if (o.pf[u] <= o.pl[v] && o.pf[v] <= o.pl[u]) {
        size_t eu = o.bad[u]++, ev = o.bad[v]++;
        o.adj[eu] = (uint32_t)v;
        o.adj[ev] = (uint32_t)u;
        o.rev[eu] = ev;
        o.rev[ev] = eu;
      }
  o.rng.state = in->options->seed ^ 0x6F7665726C617073ull;
  {
    uint64_t total = 0, largest = 0;
    for (size_t u = 0; u < n; ++u) {
      if (o.best_off[u] + o.vol[u] > total) total = o.best_off[u] + o.vol[u];
      if (o.vol[u] > largest) largest = o.vol[u];
    }
    const uint64_t work_end = tg__budget_count(b, TG__OVERLAP_WORK_PER_UNIT);
    const uint64_t deadline = tg__budget_deadline(b);
    const uint64_t found_total = total;
    uint64_t step = (total - bound) / 16 + 1;
    int finished = 0; /* a capacity attempt ended by itself (found, or out of moves) */
    while (o.work < work_end && total > bound && tg__now_us() < deadline) {
      uint64_t cap = total - bound > step ? total - step : bound;
      if (cap < largest) cap = largest;
      if (cap >= total) break;
      const int found = run_at(&o, cap, 2000 + 20 * (uint64_t)n, work_end, deadline);
      if (!found && (o.work >= work_end || tg__now_us() >= deadline)) {
        *cut_short = !finished; /* the budget ended inside the first attempt */
        break;
      }
      finished = 1;
      if (found) {
        uint64_t t = 0;
        for (size_t u = 0; u < n; ++u)
          if (o.off[u] + o.vol[u] > t) t = o.off[u] + o.vol[u];
        memcpy(o.best_off, o.off, n * sizeof *o.off);
        total = t;
      } else {
        step /= 2;
        if (step == 0) step = (total - bound) / 16 + 1; /* start the ladder again */
      }
    }
    tg__budget_spend(b, o.work, TG__OVERLAP_WORK_PER_UNIT);
    if (total < found_total) {
      tg_plan *p = NULL;
      st = tg_plan_create(TG_MODE_OFFSETS, in->dims, in->count, 0, in->alloc, &p);
      if (st != TG_OK) goto done;
      for (size_t u = 0; u < n; ++u) p->offset_of[o.rec[u]] = o.best_off[u];
      if ((st = tg__plan_finish_offsets(in, p)) != TG_OK || p->total >= (*best)->total) {
        tg_plan_destroy(p);
        goto done;
      }
      p->strategy = TG_STRATEGY_BEST;
      tg_plan_destroy(*best);
      *best = p;
    }
  }
done:
  TG__FREE_EACH(a, o.rec, o.vol, o.al, o.off, o.best_off, o.pf, o.pl, o.adj_beg, o.viol, o.bad, o.bad_pos,
                o.adj, o.rev, o.w, o.cand, o.nlo, o.nhi, o.nw);
  return st;
}
