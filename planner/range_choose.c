/* Plans over a range of sizes: choosing the structures (docs/ranges.md, "How the structure is
 * chosen"). The upper-bound plan, the sampled sizes planned with the search, the own best at
 * every size, then the worst sizes, each a structure evaluated at every size, all within the
 * time the caller gave the range (tg__range_clock). */
#include <stdlib.h>

#include "planner/range_internal.h"

/* Structures drawn from plans at most: the samples, the refinements and the upper bound, plus
 * those added where no structure held the target (further ones are not kept). */
#define RANGE_MAX_STRUCTURES 512u
/* Under a deadline, what each step may take of the time left (after the reserve): the
 * upper-bound plan, the sampled sizes together, the plans without search together; the worst
 * sizes take the rest. */
#define RANGE_SHARE_UPPER 0.2
#define RANGE_SHARE_SAMPLES 0.5
#define RANGE_SHARE_OWN 0.15

tg_status tg__range_fail_at(tg__range_ctx *c, tg_status st, uint64_t p, const char *what) {
  char at[64];
  tg__range_dims_text(&c->range, p, at, sizeof at);
  return tg__error(c->err, st, "range plan: at size %s: %s: %s", at, what, tg_status_string(st));
}

const tg_extent *tg__range_sizes_at(tg__range_ctx *c, uint64_t p) {
  if (c->cache != NULL) return &c->cache[p * c->nodes.count];
  tg_range_records_at_index(c->rr, p, c->recs);
  for (size_t v = 0; v < c->nodes.count; ++v) c->node_sizes[v] = c->recs[c->nodes.rep[v]].size;
  return c->node_sizes;
}

tg_status tg__range_bound_at(tg__range_ctx *c, uint64_t p) {
  tg_bounds b;
  tg_status st;
  if (c->have_groups)
    st = tg_bounds_compute_in_place(c->recs, c->count, c->dims, c->groups.used, c->groups.used_count, c->alloc, &b,
                                    NULL);
  else
    st = tg_bounds_compute(c->recs, c->count, c->dims, c->alloc, &b);
  if (st != TG_OK) return tg__range_fail_at(c, st, p, "lower bound");
  c->lower[p] = c->options->mode == TG_MODE_OFFSETS ? b.peak_live : b.positional_max;
  return TG_OK;
}

/* ---- The clock ---- */

static uint64_t left_us(const tg__range_ctx *c) {
  uint64_t now = tg__now_us();
  return now < c->clock.deadline ? c->clock.deadline - now : 0;
}

/* What stays for the end: choosing the pieces, one structure's evaluation, a plan's overrun. */
static uint64_t reserve_us(const tg__range_ctx *c) { return 2000 + c->clock.eval_us + c->clock.overrun; }

/* The time left for the steps, and a step's share of it: `fraction` of what is left, spread
 * over `calls` calls. Unlimited: UINT64_MAX. */
static uint64_t share_us(const tg__range_ctx *c, double fraction, uint64_t calls) {
  if (!c->clock.limited) return UINT64_MAX;
  uint64_t left = left_us(c), reserve = reserve_us(c);
  if (left <= reserve) return 0;
  return (uint64_t)((double)(left - reserve) * fraction) / (calls ? calls : 1);
}

static tg_status plan_at(tg__range_ctx *c, const tg_usage_record *recs, const tg_plan_options *o, tg_plan **out) {
  return tg_plan_compute(recs, c->count, c->dims, o, c->alloc, out);
}

/* ---- Structures ---- */

static int same_structure(const tg__range_nodes *n, const tg__range_structure *a, const tg__range_structure *b) {
  if (a->hash != b->hash || a->object_count != b->object_count) return 0;
  if (n->mode == TG_MODE_OFFSETS) return memcmp(a->order, b->order, n->count * sizeof *a->order) == 0;
  return memcmp(a->object_of, b->object_of, n->count * sizeof *a->object_of) == 0;
}

/* Add the structure of `plan` (a plan of records whose node sizes are `sizes`) and evaluate it
 * at every point; a duplicate of one held is dropped. `*index` gets its index (or the
 * duplicate's); SIZE_MAX when the cap is reached or, unless `always`, when the time left does
 * not hold one more evaluation. */
static tg_status add_structure(tg__range_ctx *c, const tg_plan *plan, const tg_extent *sizes, int always,
                               size_t *index) {
  if (index) *index = SIZE_MAX;
  if (c->structure_count == RANGE_MAX_STRUCTURES) return TG_OK;
  if (!always && c->clock.limited && left_us(c) < 2 * c->clock.eval_us + 1000) return TG_OK;
  tg__range_structure s;
  tg_status st = tg__range_structure_from_plan(&c->nodes, plan, sizes, c->alloc, &s);
  if (st != TG_OK) return st;
  for (size_t k = 0; k < c->structure_count; ++k) {
    if (same_structure(&c->nodes, &c->structures[k], &s)) {
      tg__range_structure_free(&s, c->alloc);
      if (index) *index = k;
      return TG_OK;
    }
  }
  if (c->structure_count == c->structure_cap) {
    size_t cap = c->structure_cap ? 2 * c->structure_cap : 32;
    tg__range_structure *ns = tg__realloc(c->alloc, c->structures, c->structure_cap * sizeof *ns, cap * sizeof *ns);
    if (ns != NULL) c->structures = ns;
    uint64_t *nt = ns == NULL ? NULL
                              : tg__realloc(c->alloc, c->totals, c->structure_cap * c->points * sizeof *nt,
                                            cap * c->points * sizeof *nt);
    if (nt == NULL) {
      tg__range_structure_free(&s, c->alloc);
      return TG_ERROR_OUT_OF_HOST_MEMORY;
    }
    c->totals = nt;
    c->structure_cap = cap;
  }
  size_t k = c->structure_count++;
  c->structures[k] = s;
  uint64_t *row = &c->totals[k * c->points];
  const uint64_t t0 = tg__now_us();
  for (uint64_t p = 0; p < c->points; ++p)
    row[p] = tg__range_structure_total(&c->nodes, &s, tg__range_sizes_at(c, p), c->scratch);
  const uint64_t took = tg__now_us() - t0;
  if (took > c->clock.eval_us) c->clock.eval_us = took;
  if (index) *index = k;
  return TG_OK;
}

static uint64_t best_total_at(const tg__range_ctx *c, uint64_t p) {
  uint64_t best = UINT64_MAX;
  for (size_t k = 0; k < c->structure_count; ++k)
    if (c->totals[k * c->points + p] < best) best = c->totals[k * c->points + p];
  return best;
}

static void own_from_structures(tg__range_ctx *c) {
  for (uint64_t p = 0; p < c->points; ++p) {
    uint64_t best = best_total_at(c, p);
    if (best < c->own[p]) c->own[p] = best;
  }
}

/* Plan point p with the caller's options (search included) within `share` us and add its
 * structure. `*done` is 0 when the time left holds no such plan (nothing is planned). */
static tg_status search_point(tg__range_ctx *c, uint64_t p, uint64_t share, int *done) {
  *done = 0;
  tg_plan_options o = c->full;
  uint64_t limit_us = 0;
  if (c->clock.limited) {
    const uint64_t left = left_us(c), reserve = reserve_us(c), avail = left > reserve ? left - reserve : 0;
    if (o.strategy == TG_STRATEGY_BEST) {
      /* An explicit limit returns within it and a little more (the overrun seen is reserved). */
      if (share > avail) share = avail;
      if (share < 1000) return TG_OK;
      o.time_limit_ms = (uint32_t)(share / 1000);
      limit_us = (uint64_t)o.time_limit_ms * 1000u;
    } else if (avail < c->clock.cheap_us) {
      return TG_OK;
    }
  }
  tg_plan *plan = NULL;
  const tg_extent *sizes = tg__range_sizes_at(c, p);
  if (c->cache != NULL) tg_range_records_at_index(c->rr, p, c->recs);
  const uint64_t t0 = tg__now_us();
  tg_status st = plan_at(c, c->recs, &o, &plan);
  const uint64_t took = tg__now_us() - t0;
  if (st != TG_OK) return tg__range_fail_at(c, st, p, "planning this size");
  if (limit_us > 0 && took > limit_us && took - limit_us > c->clock.overrun) c->clock.overrun = took - limit_us;
  if (limit_us == 0 && took > c->clock.cheap_us) c->clock.cheap_us = took;
  *done = 1;
  c->searched[p] = 1;
  c->searched_count++;
  if (plan->total < c->own[p]) c->own[p] = plan->total;
  st = add_structure(c, plan, sizes, 0, NULL);
  tg_plan_destroy(plan);
  return st;
}

/* The plan of one size without search: the caller's strategy, or for `best` the smallest of the
 * one-pass greedy strategies (the costly peers and the search are left to the sampled sizes). */
static tg_status plan_cheap(tg__range_ctx *c, tg_plan **out) {
  *out = NULL;
  if (c->options->strategy != TG_STRATEGY_BEST) return plan_at(c, c->recs, &c->cheap, out);
  static const tg_strategy k_greedy[] = {TG_STRATEGY_GREEDY_IN_ORDER, TG_STRATEGY_GREEDY_BY_BREADTH,
                                         TG_STRATEGY_GREEDY_BY_SIZE, TG_STRATEGY_GREEDY_BY_CONFLICTS,
                                         TG_STRATEGY_EQUALITY};
  for (size_t k = 0; k < sizeof k_greedy / sizeof k_greedy[0]; ++k) {
    if (!tg_strategy_applies(k_greedy[k], c->cheap.mode, c->dims)) continue;
    tg_plan_options o = c->cheap;
    o.strategy = k_greedy[k];
    tg_plan *p = NULL;
    tg_status st = plan_at(c, c->recs, &o, &p);
    if (st != TG_OK) {
      tg_plan_destroy(*out);
      *out = NULL;
      return st;
    }
    if (*out == NULL || p->total < (*out)->total) {
      tg_plan_destroy(*out);
      *out = p;
    } else {
      tg_plan_destroy(p);
    }
  }
  return TG_OK;
}

/* ---- The steps ---- */

/* The upper-bound plan: every record at its largest size over the range (per dimension). Its
 * structure is always kept: no size is above it. */
static tg_status plan_upper_bound(tg__range_ctx *c) {
  tg_usage_record *maxr = tg__calloc(c->alloc, c->count ? c->count : 1, sizeof *maxr);
  tg_extent *sizes = tg__calloc(c->alloc, c->nodes.count ? c->nodes.count : 1, sizeof *sizes);
  if (maxr == NULL || sizes == NULL) {
    tg__free(c->alloc, maxr);
    tg__free(c->alloc, sizes);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  for (uint64_t p = 0; p < c->points; ++p) {
    tg_range_records_at_index(c->rr, p, c->recs);
    for (size_t r = 0; r < c->count; ++r) {
      if (p == 0) {
        maxr[r] = c->recs[r];
        continue;
      }
      tg_extent *m = &maxr[r].size, e = c->recs[r].size;
      if (e.w > m->w) m->w = e.w;
      if (e.h > m->h) m->h = e.h;
      if (e.d > m->d) m->d = e.d;
    }
  }
  for (size_t v = 0; v < c->nodes.count; ++v) sizes[v] = maxr[c->nodes.rep[v]].size;
  tg_plan_options o = c->full;
  uint64_t share = share_us(c, RANGE_SHARE_UPPER, 1);
  if (c->clock.limited && o.strategy == TG_STRATEGY_BEST) o.time_limit_ms = share >= 1000 ? (uint32_t)(share / 1000) : 1;
  tg_plan *plan = NULL;
  const uint64_t t0 = tg__now_us();
  tg_status st = plan_at(c, maxr, &o, &plan);
  c->clock.search_us = (tg__now_us() - t0) / 2;
  if (c->clock.search_us < 1000) c->clock.search_us = 1000;
  if (st != TG_OK) {
    st = tg__error(c->err, st, "range plan: the upper-bound plan (every record at its largest size): %s",
                   tg_status_string(st));
  } else {
    c->upper = plan->total;
    st = add_structure(c, plan, sizes, 1, &c->ub_structure);
  }
  tg_plan_destroy(plan);
  tg__free(c->alloc, maxr);
  tg__free(c->alloc, sizes);
  return st;
}

/* The order samples along one dimension are planned in: both ends, then the middles of the
 * gaps, coarse to fine, so that a deadline that cuts the list still leaves them spread.
 * rank[k] is sample k's place. */
static void sample_ranks(uint64_t count, uint64_t *rank) {
  for (uint64_t k = 0; k < count; ++k) rank[k] = UINT64_MAX;
  uint64_t next = 0;
  if (count > 0) rank[0] = next++;
  if (count > 1) rank[count - 1] = next++;
  for (int any = 1; any;) {
    const uint64_t level = next; /* samples ranked before this level bound the gaps */
    uint64_t a = 0;
    any = 0;
    for (uint64_t k = 1; k < count; ++k) {
      if (rank[k] >= level) continue;
      if (k - a > 1) {
        rank[(a + k) / 2] = next++;
        any = 1;
      }
      a = k;
    }
  }
}

/* The sampled points: evenly spread along each dimension, both ends included. */
static uint64_t sample_along(uint64_t n, uint64_t count, uint64_t k) {
  return count <= 1 ? 0 : (k * (n - 1) + (count - 1) / 2) / (count - 1);
}

typedef struct sample_key {
  uint64_t major, minor, point;
} sample_key;

static int sample_key_cmp(const void *x, const void *y) {
  const sample_key *a = x, *b = y;
  if (a->major != b->major) return a->major < b->major ? -1 : 1;
  if (a->minor != b->minor) return a->minor < b->minor ? -1 : 1;
  return a->point < b->point ? -1 : (a->point > b->point);
}

static tg_status plan_samples(tg__range_ctx *c, uint32_t samples) {
  uint64_t s0, s1;
  if (c->grid.dims == 1) {
    s0 = samples ? samples : 17;
    s1 = 1;
  } else {
    uint64_t side = 5;
    if (samples) {
      side = 1;
      while ((side + 1) * (side + 1) <= samples) ++side;
    }
    s0 = s1 = side;
  }
  if (s0 > c->grid.n0) s0 = c->grid.n0;
  if (s1 > c->grid.n1) s1 = c->grid.n1;
  if (s0 < 1) s0 = 1;
  if (s1 < 1) s1 = 1;
  uint64_t *rank = tg__calloc(c->alloc, (size_t)(s0 + s1), sizeof *rank);
  sample_key *keys = tg__calloc(c->alloc, (size_t)(s0 * s1), sizeof *keys);
  if (rank == NULL || keys == NULL) {
    tg__free(c->alloc, rank);
    tg__free(c->alloc, keys);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  sample_ranks(s0, rank);
  sample_ranks(s1, rank + s0);
  size_t m = 0;
  for (uint64_t a = 0; a < s0; ++a)
    for (uint64_t b = 0; b < s1; ++b) {
      uint64_t ra = rank[a], rb = rank[s0 + b];
      keys[m++] = (sample_key){ra > rb ? ra : rb, ra < rb ? ra : rb,
                               sample_along(c->grid.n0, s0, a) * c->grid.n1 + sample_along(c->grid.n1, s1, b)};
    }
  qsort(keys, m, sizeof *keys, sample_key_cmp);
  const uint64_t end = c->clock.limited ? tg__now_us() + share_us(c, RANGE_SHARE_SAMPLES, 1) : UINT64_MAX;
  tg_status st = TG_OK;
  for (size_t i = 0; st == TG_OK && i < m; ++i) {
    const uint64_t p = keys[i].point, now = tg__now_us();
    if (c->searched[p]) continue;
    uint64_t share = UINT64_MAX;
    if (c->clock.limited) {
      share = now < end ? (end - now) / (m - i) : 0;
      if (share < c->clock.search_us) share = c->clock.search_us;
      if (now + share > end) break;
    }
    int done;
    st = search_point(c, p, share, &done);
    if (!done) break;
  }
  tg__free(c->alloc, rank);
  tg__free(c->alloc, keys);
  return st;
}

typedef struct point_gap {
  double gap;
  uint64_t point;
} point_gap;

static int point_gap_cmp(const void *x, const void *y) {
  const point_gap *a = x, *b = y;
  if (a->gap != b->gap) return a->gap > b->gap ? -1 : 1;
  return a->point < b->point ? -1 : (a->point > b->point);
}

/* Own best at the points no structure proves optimal: the plan without search, first where the
 * best structure lies furthest above the lower bound (as far as the time allows); where no
 * structure comes within the target of it, its structure joins the candidates. */
static tg_status plan_own(tg__range_ctx *c, double target) {
  own_from_structures(c);
  point_gap *order = tg__calloc(c->alloc, (size_t)c->points, sizeof *order);
  if (order == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  size_t m = 0;
  for (uint64_t p = 0; p < c->points; ++p) {
    uint64_t best = best_total_at(c, p);
    if (c->searched[p] || best <= c->lower[p]) continue;
    order[m++] = (point_gap){tg__range_ratio(best, c->lower[p]), p};
  }
  if (c->clock.limited) qsort(order, m, sizeof *order, point_gap_cmp);
  const uint64_t end = c->clock.limited ? tg__now_us() + share_us(c, RANGE_SHARE_OWN, 1) : UINT64_MAX;
  tg_status st = TG_OK;
  for (size_t i = 0; st == TG_OK && i < m; ++i) {
    const uint64_t p = order[i].point;
    const uint64_t t0 = tg__now_us();
    if (c->clock.limited && t0 + c->clock.cheap_us > end) break;
    tg_plan *plan = NULL;
    const tg_extent *sizes = tg__range_sizes_at(c, p);
    if (c->cache != NULL) tg_range_records_at_index(c->rr, p, c->recs);
    st = plan_cheap(c, &plan);
    if (st != TG_OK) {
      st = tg__range_fail_at(c, st, p, "planning this size");
      break;
    }
    const uint64_t took = tg__now_us() - t0;
    if (took > c->clock.cheap_us) c->clock.cheap_us = took;
    c->planned_count++;
    if (plan->total < c->own[p]) c->own[p] = plan->total;
    uint64_t limit = c->upper, best = best_total_at(c, p);
    double within = (double)c->own[p] * target;
    if (within < (double)limit) limit = (uint64_t)within;
    if (best > limit) st = add_structure(c, plan, sizes, 0, NULL);
    tg_plan_destroy(plan);
  }
  tg__free(c->alloc, order);
  if (st == TG_OK) own_from_structures(c);
  return st;
}

/* The next size to plan with the search: a piece's worst size not searched yet, else the size
 * whose plan is furthest above its lower bound (where the own best without search is least
 * likely the best there is); UINT64_MAX when every such size was searched or meets its bound. */
static uint64_t next_search(const tg__range_ctx *c, const tg__range_piece *pieces, size_t piece_count) {
  for (size_t k = 0; k < piece_count; ++k)
    if (pieces[k].worst_ratio > 1.0 && !c->searched[pieces[k].worst_point]) return pieces[k].worst_point;
  uint64_t best = UINT64_MAX;
  double gap = 1.0;
  for (size_t k = 0; k < piece_count; ++k) {
    const tg__range_piece *pc = &pieces[k];
    for (uint64_t i = pc->lo[0]; i <= pc->hi[0]; ++i)
      for (uint64_t j = pc->lo[1]; j <= pc->hi[1]; ++j) {
        uint64_t p = i * c->grid.n1 + j;
        double r = tg__range_ratio(c->totals[pc->structure * c->points + p], c->lower[p]);
        if (!c->searched[p] && r > gap) {
          gap = r;
          best = p;
        }
      }
  }
  return best;
}

tg_status tg__range_choose(tg__range_ctx *c, double target, uint32_t samples, tg__range_piece **pieces,
                           size_t *piece_count) {
  *pieces = NULL;
  *piece_count = 0;
  tg_status st;
  if ((st = plan_upper_bound(c)) != TG_OK) return st;
  if ((st = plan_samples(c, samples)) != TG_OK) return st;
  if ((st = plan_own(c, target)) != TG_OK) return st;
  /* Pieces; then, as many sizes again as were sampled (while the time lasts), the next size
   * planned with the search, its structure added and the pieces chosen again. */
  uint64_t budget = c->searched_count;
  for (;;) {
    own_from_structures(c);
    st = tg__range_pieces_choose(&c->grid, c->totals, c->structure_count, c->own, c->upper, target, c->alloc,
                                 pieces, piece_count);
    if (st != TG_OK) return st;
    uint64_t p = budget > 0 ? next_search(c, *pieces, *piece_count) : UINT64_MAX;
    if (p == UINT64_MAX) return TG_OK;
    uint64_t share = share_us(c, 1.0, budget);
    if (c->clock.limited && share < c->clock.search_us) share = c->clock.search_us;
    int done;
    if ((st = search_point(c, p, share, &done)) != TG_OK || !done) {
      if (st != TG_OK) {
        tg__free(c->alloc, *pieces);
        *pieces = NULL;
      }
      return st;
    }
    tg__free(c->alloc, *pieces);
    *pieces = NULL;
    budget--;
  }
}
