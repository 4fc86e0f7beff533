/* Plans over a range of sizes (tangram/range_plan.h): the entry that plans sampled sizes, draws
 * structures from their plans, evaluates every structure at every size, cuts the range into
 * pieces (range_pieces.c), and instantiates the plan at a size. docs/ranges.md explains the
 * choices. */
#include <stdio.h>

#include "planner/base/in_place.h"
#include "planner/range_internal.h"

/* Everything the computation holds. */
typedef struct range_ctx {
  const tg_range_records *rr;
  const tg_allocator *alloc;
  tg_error_info *err;
  const tg_plan_options *options;
  tg_plan_options full, cheap;
  tg_size_range range;
  uint64_t points;
  size_t count;
  uint32_t dims;
  tg__range_grid grid;
  tg__in_place_groups groups;
  int have_groups;
  tg__range_nodes nodes;
  tg_usage_record *recs;       /* count: records at the current point */
  tg_extent *node_sizes;       /* node count: scratch */
  tg_extent *scratch;          /* node count: scratch for totals */
  tg_extent *cache;            /* points * node count, or NULL: node sizes at every point */
  tg__range_structure *structures;
  size_t structure_count, structure_cap;
  uint64_t *totals;            /* structure_cap * points */
  uint64_t *own, *lower;
  uint8_t *searched;
  uint64_t upper;
  size_t ub_structure;
  uint64_t searched_count, planned_count;
} range_ctx;

/* Node sizes cached up to this many bytes; beyond, computed again at each use. */
#define RANGE_CACHE_MAX_BYTES ((uint64_t)64 << 20)
/* Structures drawn from plans at most: the samples, the refinements and the upper bound, plus
 * those added where no structure held the target (further ones are not kept). */
#define RANGE_MAX_STRUCTURES 512u

static void dims_text(const range_ctx *c, uint64_t p, char *buf, size_t size) {
  int64_t d[TG_RANGE_MAX_DIMS] = {0, 0};
  tg_size_range_point(&c->range, p, d);
  if (c->range.count == 1) snprintf(buf, size, "%lld", (long long)d[0]);
  else snprintf(buf, size, "%lldx%lld", (long long)d[0], (long long)d[1]);
}

static tg_status fail_at(range_ctx *c, tg_status st, uint64_t p, const char *what) {
  char at[64];
  dims_text(c, p, at, sizeof at);
  return tg__error(c->err, st, "range plan: at size %s: %s: %s", at, what, tg_status_string(st));
}

/* Records at point p into c->recs; node sizes into the returned array. */
static const tg_extent *sizes_at(range_ctx *c, uint64_t p) {
  if (c->cache != NULL) return &c->cache[p * c->nodes.count];
  tg_range_records_at_index(c->rr, p, c->recs);
  for (size_t v = 0; v < c->nodes.count; ++v) c->node_sizes[v] = c->recs[c->nodes.rep[v]].size;
  return c->node_sizes;
}

static tg_status plan_at(range_ctx *c, const tg_usage_record *recs, const tg_plan_options *o, tg_plan **out) {
  return tg_plan_compute(recs, c->count, c->dims, o, c->alloc, out);
}

static int same_structure(const tg__range_nodes *n, const tg__range_structure *a, const tg__range_structure *b) {
  if (a->hash != b->hash || a->object_count != b->object_count) return 0;
  if (n->mode == TG_MODE_OFFSETS) return memcmp(a->order, b->order, n->count * sizeof *a->order) == 0;
  return memcmp(a->object_of, b->object_of, n->count * sizeof *a->object_of) == 0;
}

/* The plan of one size without search: the caller's strategy, or for `best` the smallest of the
 * one-pass greedy strategies (the costly peers and the search are left to the sampled sizes). */
static tg_status plan_cheap(range_ctx *c, tg_plan **out) {
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

/* Add the structure of `plan` (a plan of records whose node sizes are `sizes`) and evaluate it
 * at every point; a duplicate of one held is dropped. `*index` gets its index (or the
 * duplicate's); SIZE_MAX when the cap is reached. */
static tg_status add_structure(range_ctx *c, const tg_plan *plan, const tg_extent *sizes, size_t *index) {
  if (index) *index = SIZE_MAX;
  if (c->structure_count == RANGE_MAX_STRUCTURES) return TG_OK;
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
  for (uint64_t p = 0; p < c->points; ++p) row[p] = tg__range_structure_total(&c->nodes, &s, sizes_at(c, p), c->scratch);
  if (index) *index = k;
  return TG_OK;
}

static uint64_t best_total_at(const range_ctx *c, uint64_t p) {
  uint64_t best = UINT64_MAX;
  for (size_t k = 0; k < c->structure_count; ++k)
    if (c->totals[k * c->points + p] < best) best = c->totals[k * c->points + p];
  return best;
}

/* Plan point p with the caller's options (search included) and add its structure. */
static tg_status search_point(range_ctx *c, uint64_t p) {
  tg_plan *plan = NULL;
  const tg_extent *sizes = sizes_at(c, p);
  if (c->cache != NULL) tg_range_records_at_index(c->rr, p, c->recs);
  tg_status st = plan_at(c, c->recs, &c->full, &plan);
  if (st != TG_OK) return fail_at(c, st, p, "planning this size");
  c->searched[p] = 1;
  c->searched_count++;
  if (plan->total < c->own[p]) c->own[p] = plan->total;
  st = add_structure(c, plan, sizes, NULL);
  tg_plan_destroy(plan);
  return st;
}

/* Lower bound at point p (c->recs holds its records). */
static tg_status bound_at(range_ctx *c, uint64_t p) {
  tg_bounds b;
  tg_status st;
  if (c->have_groups)
    st = tg_bounds_compute_in_place(c->recs, c->count, c->dims, c->groups.used, c->groups.used_count, c->alloc, &b,
                                    NULL);
  else
    st = tg_bounds_compute(c->recs, c->count, c->dims, c->alloc, &b);
  if (st != TG_OK) return fail_at(c, st, p, "lower bound");
  c->lower[p] = c->options->mode == TG_MODE_OFFSETS ? b.peak_live : b.positional_max;
  return TG_OK;
}

/* In-place pairs that hold at every point: indices checked, equal sizes everywhere; the rest
 * of the rules are checked when the groups are built. */
static tg_status keep_pairs(range_ctx *c, tg_in_place_pair **kept, size_t *kept_count) {
  const tg_plan_options *o = c->options;
  *kept = NULL;
  *kept_count = 0;
  if (o->in_place_count == 0) return TG_OK;
  if (o->in_place == NULL) return tg__error(c->err, TG_ERROR_INVALID_ARGUMENT, "range plan: in-place pairs missing");
  for (size_t i = 0; i < o->in_place_count; ++i) {
    const tg_in_place_pair *q = &o->in_place[i];
    if (q->input >= c->count || q->output >= c->count || q->input == q->output)
      return tg__error(c->err, TG_ERROR_INVALID_ARGUMENT,
                       "range plan: in-place pair %zu: records %zu -> %zu out of range or equal (%zu records)", i,
                       q->input, q->output, c->count);
  }
  uint8_t *ok = tg__calloc(c->alloc, o->in_place_count, 1);
  *kept = tg__calloc(c->alloc, o->in_place_count, sizeof **kept);
  if (ok == NULL || *kept == NULL) {
    tg__free(c->alloc, ok);
    tg__free(c->alloc, *kept);
    *kept = NULL;
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  memset(ok, 1, o->in_place_count);
  for (uint64_t p = 0; p < c->points; ++p) {
    tg_range_records_at_index(c->rr, p, c->recs);
    for (size_t i = 0; i < o->in_place_count; ++i) {
      tg_extent a = c->recs[o->in_place[i].input].size, b = c->recs[o->in_place[i].output].size;
      if (a.w != b.w || a.h != b.h || a.d != b.d) ok[i] = 0;
    }
  }
  for (size_t i = 0; i < o->in_place_count; ++i)
    if (ok[i]) (*kept)[(*kept_count)++] = o->in_place[i];
  tg__free(c->alloc, ok);
  return TG_OK;
}

static void ctx_free(range_ctx *c) {
  const tg_allocator *a = c->alloc;
  for (size_t k = 0; k < c->structure_count; ++k) tg__range_structure_free(&c->structures[k], a);
  tg__free(a, c->structures);
  tg__free(a, c->totals);
  tg__free(a, c->own);
  tg__free(a, c->lower);
  tg__free(a, c->searched);
  tg__free(a, c->recs);
  tg__free(a, c->node_sizes);
  tg__free(a, c->scratch);
  tg__free(a, c->cache);
  tg__range_nodes_free(&c->nodes, a);
  if (c->have_groups) tg__in_place_groups_free(&c->groups, a);
}

void tg_range_plan_destroy(tg_range_plan *plan) {
  if (plan == NULL) return;
  tg_allocator a = plan->alloc;
  for (size_t k = 0; k < plan->program_count; ++k) {
    tg__range_program *g = &plan->programs[k];
    tg__free(&a, g->order);
    tg__free(&a, g->align);
    tg__free(&a, g->pred_start);
    tg__free(&a, g->pred);
    tg__free(&a, g->object_of);
  }
  tg__free(&a, plan->programs);
  tg__free(&a, plan->pairs);
  tg__free(&a, plan->member);
  tg__free(&a, plan->member_rep);
  tg__free(&a, plan->piece_of);
  tg__free(&a, plan->total);
  tg__free(&a, plan->own);
  tg__free(&a, plan->lower);
  tg__free(&a, plan->pieces);
  tg__free(&a, plan->piece_program);
  tg__free(&a, plan);
}

/* The sampled points: evenly spread along each dimension, both ends included. */
static uint64_t sample_along(uint64_t n, uint64_t count, uint64_t k) {
  return count <= 1 ? 0 : (k * (n - 1) + (count - 1) / 2) / (count - 1);
}

static tg_status plan_samples(range_ctx *c, uint32_t samples) {
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
  for (uint64_t a = 0; a < s0; ++a) {
    for (uint64_t b = 0; b < s1; ++b) {
      uint64_t p = sample_along(c->grid.n0, s0, a) * c->grid.n1 + sample_along(c->grid.n1, s1, b);
      if (c->searched[p]) continue;
      tg_status st = search_point(c, p);
      if (st != TG_OK) return st;
    }
  }
  return TG_OK;
}

/* The upper-bound plan: every record at its largest size over the range (per dimension). */
static tg_status plan_upper_bound(range_ctx *c) {
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
  tg_plan *plan = NULL;
  tg_status st = plan_at(c, maxr, &c->full, &plan);
  if (st != TG_OK) {
    st = tg__error(c->err, st, "range plan: the upper-bound plan (every record at its largest size): %s",
                   tg_status_string(st));
  } else {
    c->upper = plan->total;
    st = add_structure(c, plan, sizes, &c->ub_structure);
  }
  tg_plan_destroy(plan);
  tg__free(c->alloc, maxr);
  tg__free(c->alloc, sizes);
  return st;
}

/* Own best at every point: where no structure meets the lower bound, the plan without search
 * (sampled points have theirs); where no structure comes within the target of it, its structure
 * joins the candidates. */
static tg_status plan_own(range_ctx *c, double target) {
  for (uint64_t p = 0; p < c->points; ++p) {
    uint64_t best = best_total_at(c, p);
    if (best < c->own[p]) c->own[p] = best;
    if (c->searched[p] || best <= c->lower[p]) continue;
    tg_plan *plan = NULL;
    const tg_extent *sizes = sizes_at(c, p);
    if (c->cache != NULL) tg_range_records_at_index(c->rr, p, c->recs);
    tg_status st = plan_cheap(c, &plan);
    if (st != TG_OK) return fail_at(c, st, p, "planning this size");
    c->planned_count++;
    if (plan->total < c->own[p]) c->own[p] = plan->total;
    uint64_t limit = c->upper;
    double within = (double)c->own[p] * target;
    if (within < (double)limit) limit = (uint64_t)within;
    if (best > limit) st = add_structure(c, plan, sizes, NULL);
    tg_plan_destroy(plan);
    if (st != TG_OK) return st;
  }
  for (uint64_t p = 0; p < c->points; ++p) {
    uint64_t best = best_total_at(c, p);
    if (best < c->own[p]) c->own[p] = best;
  }
  return TG_OK;
}

/* The next size to plan with the search: a piece's worst size not searched yet, else the size
 * whose plan is furthest above its lower bound (where the own best without search is least
 * likely the best there is); UINT64_MAX when every such size was searched or meets its bound. */
static uint64_t next_search(const range_ctx *c, const tg__range_piece *pieces, size_t piece_count) {
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

/* Pieces; then, within the budget, one more size planned with the search (next_search), its
 * structure added and the pieces chosen again. */
static tg_status choose(range_ctx *c, double target, uint32_t budget, tg__range_piece **pieces, size_t *piece_count) {
  for (;;) {
    for (uint64_t p = 0; p < c->points; ++p) {
      uint64_t best = best_total_at(c, p);
      if (best < c->own[p]) c->own[p] = best;
    }
    tg_status st = tg__range_pieces_choose(&c->grid, c->totals, c->structure_count, c->own, c->upper, target,
                                           c->alloc, pieces, piece_count);
    if (st != TG_OK) return st;
    uint64_t p = budget > 0 ? next_search(c, *pieces, *piece_count) : UINT64_MAX;
    if (p == UINT64_MAX) return TG_OK;
    tg__free(c->alloc, *pieces);
    *pieces = NULL;
    if ((st = search_point(c, p)) != TG_OK) return st;
    budget--;
  }
}

tg_status tg__range_compile(tg_range_plan *plan, const tg__range_nodes *n, const tg__range_structure *s,
                            tg__range_program *g) {
  const tg_allocator *a = &plan->alloc;
  memset(g, 0, sizeof *g);
  if (plan->mode == TG_MODE_OFFSETS) {
    size_t edges = s->pred_start[n->count];
    g->order = tg__calloc(a, n->count ? n->count : 1, sizeof *g->order);
    g->align = tg__calloc(a, n->count ? n->count : 1, sizeof *g->align);
    g->pred_start = tg__calloc(a, n->count + 1, sizeof *g->pred_start);
    g->pred = tg__calloc(a, edges ? edges : 1, sizeof *g->pred);
    if (g->order == NULL || g->align == NULL || g->pred_start == NULL || g->pred == NULL)
      return TG_ERROR_OUT_OF_HOST_MEMORY;
    for (size_t k = 0; k < n->count; ++k) {
      g->order[k] = n->rep[s->order[k]];
      g->align[k] = n->align[s->order[k]];
    }
    memcpy(g->pred_start, s->pred_start, (n->count + 1) * sizeof *g->pred_start);
    for (size_t e = 0; e < edges; ++e) g->pred[e] = n->rep[s->pred[e]];
    g->order_count = n->count;
  } else {
    g->object_count = s->object_count;
    g->object_of = tg__calloc(a, plan->count ? plan->count : 1, sizeof *g->object_of);
    if (g->object_of == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    for (size_t r = 0; r < plan->count; ++r) g->object_of[r] = s->object_of[n->node_of[r]];
  }
  return TG_OK;
}

/* The plan from the pieces chosen: per-point figures, programs, pieces in public form. */
static tg_status finish(tg_range_plan *plan, range_ctx *c, const tg__range_piece *pieces, size_t piece_count) {
  const tg_allocator *a = &plan->alloc;
  uint64_t points = c->points;
  plan->piece_of = tg__calloc(a, points, sizeof *plan->piece_of);
  plan->total = tg__calloc(a, points, sizeof *plan->total);
  plan->own = tg__calloc(a, points, sizeof *plan->own);
  plan->lower = tg__calloc(a, points, sizeof *plan->lower);
  plan->pieces = tg__calloc(a, piece_count, sizeof *plan->pieces);
  plan->piece_program = tg__calloc(a, piece_count, sizeof *plan->piece_program);
  plan->programs = tg__calloc(a, piece_count, sizeof *plan->programs);
  uint32_t *program_of = tg__calloc(a, c->structure_count, sizeof *program_of);
  if (plan->piece_of == NULL || plan->total == NULL || plan->own == NULL || plan->lower == NULL ||
      plan->pieces == NULL || plan->piece_program == NULL || plan->programs == NULL || program_of == NULL) {
    tg__free(a, program_of);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  for (size_t k = 0; k < c->structure_count; ++k) program_of[k] = UINT32_MAX;
  tg_status st = TG_OK;
  plan->piece_count = piece_count;
  for (size_t k = 0; k < piece_count && st == TG_OK; ++k) {
    const tg__range_piece *pc = &pieces[k];
    if (program_of[pc->structure] == UINT32_MAX) {
      program_of[pc->structure] = (uint32_t)plan->program_count;
      st = tg__range_compile(plan, &c->nodes, &c->structures[pc->structure], &plan->programs[plan->program_count++]);
    }
    plan->piece_program[k] = program_of[pc->structure];
    tg_range_piece *out = &plan->pieces[k];
    out->range = c->range;
    for (uint32_t d = 0; d < c->range.count; ++d) {
      const tg_dim_range *dr = &c->range.dim[d];
      uint64_t lo = c->range.count == 1 ? pc->lo[0] : pc->lo[d], hi = c->range.count == 1 ? pc->hi[0] : pc->hi[d];
      out->range.dim[d].lo = dr->lo + (int64_t)lo * dr->step;
      out->range.dim[d].hi = dr->lo + (int64_t)hi * dr->step;
    }
    out->object_count = plan->mode == TG_MODE_OBJECTS ? c->structures[pc->structure].object_count : 1;
    out->worst_ratio = pc->worst_ratio;
    out->worst_point = pc->worst_point;
    out->structure = plan->piece_program[k];
    for (uint64_t i = pc->lo[0]; i <= pc->hi[0]; ++i)
      for (uint64_t j = pc->lo[1]; j <= pc->hi[1]; ++j) {
        uint64_t p = i * c->grid.n1 + j;
        plan->piece_of[p] = (uint32_t)k;
        plan->total[p] = c->totals[pc->structure * points + p];
      }
  }
  tg__free(a, program_of);
  if (st != TG_OK) return st;
  memcpy(plan->own, c->own, points * sizeof *plan->own);
  memcpy(plan->lower, c->lower, points * sizeof *plan->lower);
  plan->upper = c->upper;
  tg_range_plan_summary *sm = &plan->summary;
  sm->worst_ratio = 0.0;
  sm->worst_bound_ratio = 0.0;
  for (uint64_t p = 0; p < points; ++p) {
    double r = tg__range_ratio(plan->total[p], plan->own[p]);
    if (r > sm->worst_ratio) {
      sm->worst_ratio = r;
      sm->worst_point = p;
    }
    double rb = tg__range_ratio(plan->total[p], plan->lower[p]);
    if (rb > sm->worst_bound_ratio) sm->worst_bound_ratio = rb;
    if (plan->total[p] > plan->upper) sm->above_upper_bound++;
  }
  size_t most = plan->mode == TG_MODE_OFFSETS ? 1 : 0;
  for (size_t k = 0; k < piece_count; ++k)
    if (plan->pieces[k].object_count > most) most = plan->pieces[k].object_count;
  sm->max_object_count = most;
  sm->piece_count = piece_count;
  return TG_OK;
}

/* A cap on allocations holds at every size in one arena (offsets) or every 1D object. */
static tg_status check_cap(const tg_range_plan *plan, range_ctx *c) {
  if (plan->max_allocation == 0) return TG_OK;
  if (plan->mode == TG_MODE_OFFSETS) {
    for (uint64_t p = 0; p < c->points; ++p)
      if (plan->total[p] > plan->max_allocation) {
        char at[64];
        dims_text(c, p, at, sizeof at);
        return tg__error(c->err, TG_ERROR_LIMIT,
                         "range plan: at size %s the plan needs %llu bytes in one arena, above max_allocation "
                         "%llu: a plan over a range keeps one arena at every size (plan the sizes one by one "
                         "to split them into arenas)",
                         at, (unsigned long long)plan->total[p], (unsigned long long)plan->max_allocation);
      }
    return TG_OK;
  }
  if (plan->dims != 1) return TG_OK;
  for (size_t k = 0; k < plan->piece_count; ++k) {
    const tg__range_program *g = &plan->programs[plan->piece_program[k]];
    for (uint64_t p = 0; p < c->points; ++p) {
      if (plan->piece_of[p] != k) continue;
      const tg_extent *sizes = sizes_at(c, p);
      for (size_t v = 0; v < c->nodes.count; ++v)
        c->scratch[v] = (tg_extent){0, 1, 1};
      for (size_t r = 0; r < plan->count; ++r) {
        uint64_t w = sizes[c->nodes.node_of[r]].w;
        if (w > c->scratch[g->object_of[r]].w) c->scratch[g->object_of[r]].w = w;
      }
      for (uint32_t o = 0; o < g->object_count; ++o)
        if (c->scratch[o].w > plan->max_allocation) {
          char at[64];
          dims_text(c, p, at, sizeof at);
          return tg__error(c->err, TG_ERROR_LIMIT,
                           "range plan: at size %s object %u needs %llu bytes, above max_allocation %llu", at, o,
                           (unsigned long long)c->scratch[o].w, (unsigned long long)plan->max_allocation);
        }
    }
  }
  return TG_OK;
}

tg_status tg__range_plan_keep_chains(tg_range_plan *plan, const tg__range_nodes *nodes,
                                     const tg__in_place_groups *groups) {
  const tg_allocator *a = &plan->alloc;
  const size_t n = plan->count;
  if (plan->mode == TG_MODE_OFFSETS) {
    plan->member = tg__calloc(a, n ? n : 1, sizeof *plan->member);
    plan->member_rep = tg__calloc(a, n ? n : 1, sizeof *plan->member_rep);
    if (plan->member == NULL || plan->member_rep == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    for (size_t r = 0; r < n; ++r) {
      uint32_t rep = nodes->rep[nodes->node_of[r]];
      if (rep == r) continue;
      plan->member[plan->member_count] = (uint32_t)r;
      plan->member_rep[plan->member_count++] = rep;
    }
  }
  if (groups->used_count > 0) {
    plan->pairs = tg__calloc(a, groups->used_count, sizeof *plan->pairs);
    if (plan->pairs == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    memcpy(plan->pairs, groups->used, groups->used_count * sizeof *plan->pairs);
    plan->pair_count = groups->used_count;
  }
  return TG_OK;
}

static tg_status compute(range_ctx *c, tg_range_plan *plan, const tg_range_plan_options *ropts) {
  const tg_plan_options *o = c->options;
  double target = ropts->target > 0 ? ropts->target : (o->mode == TG_MODE_OFFSETS ? 1.05 : 1.10);
  if (target < 1.0) target = 1.0;
  tg_status st;
  size_t n = c->count;
  c->recs = tg__calloc(c->alloc, n ? n : 1, sizeof *c->recs);
  if (c->recs == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;

  /* In-place pairs that hold everywhere, chained; nodes over the chains. */
  tg_in_place_pair *kept = NULL;
  size_t kept_count = 0;
  if ((st = keep_pairs(c, &kept, &kept_count)) != TG_OK) return st;
  tg_range_records_at_index(c->rr, 0, c->recs);
  if (kept_count > 0) {
    char why[TG_ERROR_MESSAGE_MAX] = "";
    st = tg__in_place_check(c->recs, n, c->dims, kept, kept_count, c->alloc, why, sizeof why);
    if (st == TG_OK)
      st = tg__in_place_groups_build(c->recs, n, c->dims, kept, kept_count, o->relation, c->alloc, &c->groups);
    if (st != TG_OK) {
      tg__free(c->alloc, kept);
      return tg__error(c->err, st, "range plan: %s", why[0] ? why : tg_status_string(st));
    }
    c->have_groups = 1;
  }
  tg__free(c->alloc, kept);
  plan->summary.in_place_kept = c->have_groups ? c->groups.used_count : 0;
  plan->summary.in_place_dropped = o->in_place_count - plan->summary.in_place_kept;
  st = tg__range_nodes_build(c->recs, n, c->dims, o, c->have_groups ? c->groups.group_of : NULL,
                             c->have_groups ? c->groups.group_count : n,
                             c->have_groups ? (o->relation ? &c->groups.relation : NULL) : o->relation, c->alloc,
                             &c->nodes);
  if (st != TG_OK) return st;
  size_t nn = c->nodes.count;
  c->node_sizes = tg__calloc(c->alloc, nn ? nn : 1, sizeof *c->node_sizes);
  c->scratch = tg__calloc(c->alloc, nn ? nn : 1, sizeof *c->scratch);
  c->own = tg__calloc(c->alloc, c->points, sizeof *c->own);
  c->lower = tg__calloc(c->alloc, c->points, sizeof *c->lower);
  c->searched = tg__calloc(c->alloc, c->points, 1);
  if (c->node_sizes == NULL || c->scratch == NULL || c->own == NULL || c->lower == NULL || c->searched == NULL)
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  uint64_t cells;
  if (tg__mul_u64(c->points, nn ? nn : 1, &cells) && cells <= RANGE_CACHE_MAX_BYTES / sizeof(tg_extent))
    c->cache = tg__calloc(c->alloc, (size_t)cells, sizeof *c->cache);
  for (uint64_t p = 0; p < c->points; ++p) {
    c->own[p] = UINT64_MAX;
    tg_range_records_at_index(c->rr, p, c->recs);
    if (c->cache != NULL)
      for (size_t v = 0; v < nn; ++v) c->cache[p * nn + v] = c->recs[c->nodes.rep[v]].size;
    if ((st = bound_at(c, p)) != TG_OK) return st;
    for (size_t r = 0; o->max_allocation > 0 && c->dims == 1 && r < n; ++r)
      if (c->recs[r].size.w > o->max_allocation) {
        char at[64];
        dims_text(c, p, at, sizeof at);
        return tg__error(c->err, TG_ERROR_LIMIT, "range plan: at size %s record %zu needs %llu bytes, above max_allocation %llu",
                         at, r, (unsigned long long)c->recs[r].size.w, (unsigned long long)o->max_allocation);
      }
  }

  /* The plans the structures come from: per-size options. */
  c->full = *o;
  c->full.exact_stats = NULL;
  c->full.in_place = c->have_groups ? c->groups.used : NULL;
  c->full.in_place_count = c->have_groups ? c->groups.used_count : 0;
  uint32_t samples = ropts->samples;
  uint64_t searches = samples ? samples : (c->grid.dims == 1 ? 17 : 25);
  if (o->strategy == TG_STRATEGY_BEST && o->time_limit_ms != 0 && o->time_limit_ms != TG_TIME_LIMIT_NONE) {
    uint64_t each = o->time_limit_ms / (2 * searches + 1);
    c->full.time_limit_ms = each > 0 ? (uint32_t)each : 1;
  }
  c->cheap = c->full;
  c->cheap.exact = 0;

  if ((st = plan_upper_bound(c)) != TG_OK) return st;
  if ((st = plan_samples(c, samples)) != TG_OK) return st;
  if ((st = plan_own(c, target)) != TG_OK) return st;
  tg__range_piece *pieces = NULL;
  size_t piece_count = 0;
  if ((st = choose(c, target, (uint32_t)searches, &pieces, &piece_count)) != TG_OK) return st;
  st = finish(plan, c, pieces, piece_count);
  tg__free(c->alloc, pieces);
  if (st != TG_OK) return st;
  if ((st = check_cap(plan, c)) != TG_OK) return st;

  if (c->have_groups && (st = tg__range_plan_keep_chains(plan, &c->nodes, &c->groups)) != TG_OK) return st;
  plan->summary.searched_points = c->searched_count;
  plan->summary.planned_points = c->planned_count;
  plan->summary.structures_tried = c->structure_count;
  return TG_OK;
}

tg_status tg__range_plan_new(const tg_range_records *records, const tg_plan_options *options,
                             const tg_allocator *alloc, tg_range_plan **out, tg_error_info *err) {
  *out = NULL;
  if (records == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "range plan: no records");
  const uint32_t dims = tg_range_records_dims(records);
  if ((unsigned)options->strategy >= TG_STRATEGY_COUNT || (unsigned)options->mode > TG_MODE_OFFSETS)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "range plan: unknown mode or strategy");
  if (options->mode == TG_MODE_OFFSETS && dims != 1)
    return tg__error(err, TG_ERROR_UNSUPPORTED, "range plan: offsets mode needs 1D records (these are %uD)", dims);
  uint64_t points = tg_size_range_point_count(tg_range_records_range(records));
  if (points > TG_RANGE_PLAN_MAX_POINTS)
    return tg__error(err, TG_ERROR_LIMIT, "range plan: %llu sizes, more than %llu", (unsigned long long)points,
                     (unsigned long long)TG_RANGE_PLAN_MAX_POINTS);
  alloc = tg__alloc_or_default(alloc);
  tg_range_plan *plan = tg__calloc(alloc, 1, sizeof *plan);
  if (plan == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  plan->alloc = *alloc;
  plan->records = records;
  plan->range = *tg_range_records_range(records);
  plan->mode = options->mode;
  plan->dims = dims;
  plan->count = tg_range_records_count(records);
  plan->points = points;
  plan->strategy = options->strategy;
  plan->max_allocation = options->max_allocation;
  *out = plan;
  return TG_OK;
}

tg_status tg_range_plan_compute(const tg_range_records *records, const tg_plan_options *options,
                                const tg_range_plan_options *range_options, const tg_allocator *alloc,
                                tg_range_plan **out, tg_error_info *err) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  const uint64_t t0 = tg__now_us();
  static const tg_plan_options k_defaults = {0};
  static const tg_range_plan_options k_range_defaults = {0};
  if (options == NULL) options = &k_defaults;
  if (range_options == NULL) range_options = &k_range_defaults;
  tg_range_plan *plan = NULL;
  tg_status new_st = tg__range_plan_new(records, options, alloc, &plan, err);
  if (new_st != TG_OK) return new_st;
  if (!tg_strategy_applies(options->strategy, options->mode, plan->dims)) {
    tg_range_plan_destroy(plan);
    return tg__error(err, TG_ERROR_UNSUPPORTED, "range plan: strategy %s does not apply to %s mode",
                     tg_strategy_name(options->strategy), tg_mode_name(options->mode));
  }
  alloc = &plan->alloc;
  const uint32_t dims = plan->dims;

  range_ctx c;
  memset(&c, 0, sizeof c);
  c.rr = records;
  c.alloc = alloc;
  c.err = err;
  c.options = options;
  c.range = plan->range;
  c.points = plan->points;
  c.count = plan->count;
  c.dims = dims;
  c.grid.points = c.points;
  c.grid.dims = plan->range.count;
  c.grid.n1 = plan->range.count > 1 ? (uint64_t)(plan->range.dim[1].hi - plan->range.dim[1].lo) /
                                              (uint64_t)plan->range.dim[1].step + 1u
                                    : 1u;
  c.grid.n0 = c.points / c.grid.n1;
  tg_status st = compute(&c, plan, range_options);
  ctx_free(&c);
  if (st != TG_OK) {
    tg_range_plan_destroy(plan);
    return st;
  }
  plan->summary.mode = plan->mode;
  plan->summary.dims = dims;
  plan->summary.record_count = plan->count;
  plan->summary.point_count = plan->points;
  plan->summary.compute_us = tg__now_us() - t0;
  *out = plan;
  return TG_OK;
}

void tg_range_plan_get_summary(const tg_range_plan *plan, tg_range_plan_summary *out) {
  if (out == NULL) return;
  if (plan == NULL) {
    memset(out, 0, sizeof *out);
    return;
  }
  *out = plan->summary;
}

tg_status tg_range_plan_get_point(const tg_range_plan *plan, uint64_t index, tg_range_point_report *out) {
  if (plan == NULL || out == NULL || index >= plan->points) return TG_ERROR_INVALID_ARGUMENT;
  memset(out, 0, sizeof *out);
  tg_size_range_point(&plan->range, index, out->dims);
  out->piece = plan->piece_of[index];
  out->total = plan->total[index];
  out->own_total = plan->own[index];
  out->upper_bound_total = plan->upper;
  out->lower_bound = plan->lower[index];
  return TG_OK;
}

tg_status tg_range_plan_get_piece(const tg_range_plan *plan, size_t k, tg_range_piece *out) {
  if (plan == NULL || out == NULL || k >= plan->piece_count) return TG_ERROR_INVALID_ARGUMENT;
  *out = plan->pieces[k];
  return TG_OK;
}

tg_status tg_range_plan_create_instance(const tg_range_plan *plan, const tg_allocator *alloc, tg_plan **out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  if (plan == NULL) return TG_ERROR_INVALID_ARGUMENT;
  tg_plan *p = NULL;
  tg_status st = tg_plan_create(plan->mode, plan->dims, plan->count,
                                plan->mode == TG_MODE_OBJECTS ? plan->summary.max_object_count : 0, alloc, &p);
  if (st != TG_OK) return st;
  p->strategy = plan->strategy;
  p->max_allocation = plan->max_allocation;
  if (plan->pair_count > 0 && (st = tg_plan_set_in_place(p, plan->pairs, plan->pair_count)) != TG_OK) {
    tg_plan_destroy(p);
    return st;
  }
  *out = p;
  return TG_OK;
}

tg_status tg_range_plan_instantiate(const tg_range_plan *plan, const int64_t *dims, tg_usage_record *records,
                                    tg_plan *instance) {
  uint64_t index;
  if (plan == NULL || instance == NULL || (records == NULL && plan->count > 0) || instance->mode != plan->mode ||
      instance->dims != plan->dims || instance->record_count != plan->count ||
      tg_size_range_index(&plan->range, dims, &index) != TG_OK)
    return TG_ERROR_INVALID_ARGUMENT;
  tg_range_records_at_index(plan->records, index, records);
  const tg__range_program *g = &plan->programs[plan->piece_program[plan->piece_of[index]]];
  uint64_t total = 0;
  if (plan->mode == TG_MODE_OFFSETS) {
    if (instance->offset_of == NULL) return TG_ERROR_INVALID_ARGUMENT;
    uint64_t *off = instance->offset_of;
    const size_t nodes = plan->count - plan->member_count;
    for (size_t k = 0; k < nodes; ++k) {
      uint64_t o = 0, end;
      for (size_t e = g->pred_start[k]; e < g->pred_start[k + 1]; ++e) {
        uint32_t q = g->pred[e];
        if (!tg__add_u64(off[q], records[q].size.w, &end)) return TG_ERROR_OVERFLOW;
        if (end > o) o = end;
      }
      uint32_t r = g->order[k];
      if (!tg__align_up(o, g->align[k], &o) || !tg__add_u64(o, records[r].size.w, &end)) return TG_ERROR_OVERFLOW;
      off[r] = o;
      if (end > total) total = end;
    }
    for (size_t m = 0; m < plan->member_count; ++m) off[plan->member[m]] = off[plan->member_rep[m]];
  } else {
    if (instance->object_of == NULL || instance->object_sizes == NULL) return TG_ERROR_INVALID_ARGUMENT;
    memcpy(instance->object_of, g->object_of, plan->count * sizeof *instance->object_of);
    tg_extent *ext = instance->object_sizes;
    for (uint32_t k = 0; k < g->object_count; ++k) ext[k] = (tg_extent){0, 0, 0};
    for (size_t r = 0; r < plan->count; ++r) {
      tg_extent *e = &ext[g->object_of[r]];
      const tg_extent s = records[r].size;
      if (s.w > e->w) e->w = s.w;
      if (s.h > e->h) e->h = s.h;
      if (s.d > e->d) e->d = s.d;
    }
    for (uint32_t k = 0; k < g->object_count; ++k) {
      uint64_t vol;
      if (tg_extent_volume(ext[k], &vol) != TG_OK || !tg__add_u64(total, vol, &total)) return TG_ERROR_OVERFLOW;
    }
    instance->object_count = g->object_count;
  }
  instance->total = total;
  return TG_OK;
}
