/* Plans over a range of sizes (tangram/range_plan.h): the entry (the records, in-place chains
 * and lower bounds at every size; the structures chosen in range_choose.c), the plan compiled
 * from its pieces, the allocation cap checked at every size, and instantiation at a size.
 * docs/ranges.md explains the choices. */
#include "planner/range_internal.h"

/* Node sizes cached up to this many bytes; beyond, computed again at each use. */
#define RANGE_CACHE_MAX_BYTES ((uint64_t)64 << 20)

tg_status tg__range_pairs_check(const tg_plan_options *o, size_t count, tg_error_info *err) {
  if (o->in_place_count > 0 && o->in_place == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "range plan: in-place pairs missing");
  for (size_t i = 0; i < o->in_place_count; ++i) {
    const tg_in_place_pair *q = &o->in_place[i];
    if (q->input >= count || q->output >= count || q->input == q->output)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                       "range plan: in-place pair %zu: records %zu -> %zu out of range or equal (%zu records)", i,
                       q->input, q->output, count);
  }
  return TG_OK;
}

tg_status tg__range_nodes_over_chains(const tg_usage_record *at, size_t count, uint32_t dims,
                                      const tg_plan_options *o, const tg_in_place_pair *pairs, size_t pair_count,
                                      const tg_allocator *alloc, tg__in_place_groups *groups, int *have_groups,
                                      tg__range_nodes *nodes, tg_error_info *err) {
  *have_groups = 0;
  if (pair_count > 0) {
    char why[TG_ERROR_MESSAGE_MAX] = "";
    tg_status st = tg__in_place_check(at, count, dims, pairs, pair_count, alloc, why, sizeof why);
    if (st == TG_OK) st = tg__in_place_groups_build(at, count, dims, pairs, pair_count, o->relation, alloc, groups);
    if (st != TG_OK) return tg__error(err, st, "range plan: %s", why[0] ? why : tg_status_string(st));
    *have_groups = 1;
  }
  return tg__range_nodes_build(at, count, dims, o, *have_groups ? groups->group_of : NULL,
                               *have_groups ? groups->group_count : count,
                               *have_groups ? (o->relation ? &groups->relation : NULL) : o->relation, alloc, nodes);
}

/* In-place pairs that hold at every point (equal sizes everywhere); the rest of the rules are
 * checked when the chains are built. */
static tg_status keep_pairs(tg__range_ctx *c, tg_in_place_pair **kept, size_t *kept_count) {
  const tg_plan_options *o = c->options;
  *kept = NULL;
  *kept_count = 0;
  tg_status st = tg__range_pairs_check(o, c->count, c->err);
  if (st != TG_OK || o->in_place_count == 0) return st;
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

static void ctx_free(tg__range_ctx *c) {
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
static tg_status finish(tg_range_plan *plan, tg__range_ctx *c, const tg__range_piece *pieces, size_t piece_count) {
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
static tg_status check_cap(const tg_range_plan *plan, tg__range_ctx *c) {
  if (plan->max_allocation == 0) return TG_OK;
  if (plan->mode == TG_MODE_OFFSETS) {
    for (uint64_t p = 0; p < c->points; ++p)
      if (plan->total[p] > plan->max_allocation) {
        char at[64];
        tg__range_dims_text(&c->range, p, at, sizeof at);
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
      const tg_extent *sizes = tg__range_sizes_at(c, p);
      for (size_t v = 0; v < c->nodes.count; ++v)
        c->scratch[v] = (tg_extent){0, 1, 1};
      for (size_t r = 0; r < plan->count; ++r) {
        uint64_t w = sizes[c->nodes.node_of[r]].w;
        if (w > c->scratch[g->object_of[r]].w) c->scratch[g->object_of[r]].w = w;
      }
      for (uint32_t o = 0; o < g->object_count; ++o)
        if (c->scratch[o].w > plan->max_allocation) {
          char at[64];
          tg__range_dims_text(&c->range, p, at, sizeof at);
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

static tg_status compute(tg__range_ctx *c, tg_range_plan *plan, const tg_range_plan_options *ropts) {
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
  st = tg__range_nodes_over_chains(c->recs, n, c->dims, o, kept, kept_count, c->alloc, &c->groups, &c->have_groups,
                                   &c->nodes, c->err);
  tg__free(c->alloc, kept);
  if (st != TG_OK) return st;
  plan->summary.in_place_kept = c->have_groups ? c->groups.used_count : 0;
  plan->summary.in_place_dropped = o->in_place_count - plan->summary.in_place_kept;
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
    if ((st = tg__range_bound_at(c, p)) != TG_OK) return st;
    for (size_t r = 0; o->max_allocation > 0 && c->dims == 1 && r < n; ++r)
      if (c->recs[r].size.w > o->max_allocation) {
        char at[64];
        tg__range_dims_text(&c->range, p, at, sizeof at);
        return tg__error(c->err, TG_ERROR_LIMIT, "range plan: at size %s record %zu needs %llu bytes, above max_allocation %llu",
                         at, r, (unsigned long long)c->recs[r].size.w, (unsigned long long)o->max_allocation);
      }
  }

  /* The plans the structures come from: per-size options. */
  c->full = *o;
  c->full.exact_stats = NULL;
  c->full.in_place = c->have_groups ? c->groups.used : NULL;
  c->full.in_place_count = c->have_groups ? c->groups.used_count : 0;
  c->cheap = c->full;
  c->cheap.exact = 0;

  tg__range_piece *pieces = NULL;
  size_t piece_count = 0;
  if ((st = tg__range_choose(c, target, ropts->samples, &pieces, &piece_count)) != TG_OK) return st;
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
  plan->summary.mode = plan->mode;
  plan->summary.dims = dims;
  plan->summary.record_count = plan->count;
  plan->summary.point_count = points;
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

  tg__range_ctx c;
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
  /* A limit holds for the whole call, set-up included: an explicit one, or by default (best)
   * the default search budget of one size for each sampled size and the upper-bound plan. */
  const uint64_t samples = range_options->samples ? range_options->samples : plan->range.count == 1 ? 17 : 25;
  if (options->time_limit_ms != 0 && options->time_limit_ms != TG_TIME_LIMIT_NONE) {
    c.clock.limited = 1;
    c.clock.deadline = t0 + (uint64_t)options->time_limit_ms * 1000u;
  } else if (options->time_limit_ms == 0 && options->strategy == TG_STRATEGY_BEST) {
    c.clock.limited = 1;
    c.clock.deadline = t0 + (samples + 1) * TG_DEFAULT_TIME_LIMIT_MS * 1000u;
  }
  tg_status st = compute(&c, plan, range_options);
  ctx_free(&c);
  if (st != TG_OK) {
    tg_range_plan_destroy(plan);
    return st;
  }
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
