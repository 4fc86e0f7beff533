/* Plans over a range from saved structures (tangram/range_plan.h: tg_range_plan_create), and
 * the structures of a plan read back to save them. Nothing is planned: the structures are
 * checked (orders against the nodes, assignments against the conflicts, pieces against the
 * grid), compiled as a computed plan's are, and evaluated once at every size. */
#include "planner/base/in_place.h"
#include "planner/range_internal.h"

size_t tg_range_plan_get_structure_count(const tg_range_plan *plan) { return plan ? plan->program_count : 0; }

tg_status tg_range_plan_get_structure(const tg_range_plan *plan, size_t k, tg_range_structure *out) {
  if (plan == NULL || out == NULL || k >= plan->program_count) return TG_ERROR_INVALID_ARGUMENT;
  const tg__range_program *g = &plan->programs[k];
  memset(out, 0, sizeof *out);
  if (plan->mode == TG_MODE_OFFSETS) {
    out->order = g->order;
    out->order_count = g->order_count;
  } else {
    out->object_of = g->object_of;
    out->object_count = g->object_count;
  }
  return TG_OK;
}

typedef struct saved_ctx {
  tg_range_plan *plan;
  const tg_range_plan_desc *desc;
  const tg_plan_options *options;
  const tg_allocator *alloc;
  tg_error_info *err;
  tg_usage_record *recs;        /* records at the current point */
  tg__in_place_groups groups;
  int have_groups;
  tg__range_nodes nodes;
} saved_ctx;

/* Every pair given holds at every size (equal sizes), follows the rules, and is kept in a
 * chain; the nodes over the chains. */
static tg_status build_nodes(saved_ctx *c) {
  tg_range_plan *plan = c->plan;
  const tg_plan_options *o = c->options;
  const size_t n = plan->count;
  tg_status st = tg__range_pairs_check(o, n, c->err);
  if (st != TG_OK) return st;
  for (uint64_t p = 0; o->in_place_count > 0 && p < plan->points; ++p) {
    tg_range_records_at_index(plan->records, p, c->recs);
    for (size_t i = 0; i < o->in_place_count; ++i) {
      const tg_in_place_pair *q = &o->in_place[i];
      tg_extent a = c->recs[q->input].size, b = c->recs[q->output].size;
      if (a.w != b.w || a.h != b.h || a.d != b.d) {
        char at[64];
        tg__range_dims_text(&plan->range, p, at, sizeof at);
        return tg__error(c->err, TG_ERROR_INVALID_ARGUMENT,
                         "range plan: in-place pair %zu (records %zu -> %zu): sizes differ at size %s", i, q->input,
                         q->output, at);
      }
    }
  }
  tg_range_records_at_index(plan->records, 0, c->recs);
  st = tg__range_nodes_over_chains(c->recs, n, plan->dims, o, o->in_place, o->in_place_count, c->alloc, &c->groups,
                                   &c->have_groups, &c->nodes, c->err);
  if (st == TG_OK && c->have_groups && c->groups.used_count != o->in_place_count)
    return tg__error(c->err, TG_ERROR_INVALID_ARGUMENT,
                     "range plan: %zu of the %zu in-place pairs would chain records that meet in time, or the "
                     "relation does not allow them", o->in_place_count - c->groups.used_count, o->in_place_count);
  return st;
}

/* Offsets: structure k's order, every node once by its lowest record, compiled into `g`. */
static tg_status compile_order(saved_ctx *c, size_t k, tg__range_program *g) {
  const tg_range_structure *s = &c->desc->structures[k];
  const tg__range_nodes *n = &c->nodes;
  if (s->order_count != n->count || (n->count > 0 && s->order == NULL))
    return tg__error(c->err, TG_ERROR_INVALID_ARGUMENT, "range plan: structure %zu orders %zu nodes, not the %zu there are",
                     k, s->order_count, n->count);
  uint32_t *order = tg__calloc(c->alloc, n->count ? n->count : 1, sizeof *order);
  uint8_t *seen = tg__calloc(c->alloc, n->count ? n->count : 1, 1);
  tg_status st = order && seen ? TG_OK : TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t i = 0; st == TG_OK && i < n->count; ++i) {
    uint32_t r = s->order[i];
    if (r >= n->record_count || n->rep[n->node_of[r]] != r || seen[n->node_of[r]]) {
      st = tg__error(c->err, TG_ERROR_INVALID_ARGUMENT,
                     "range plan: structure %zu, position %zu: record %u is %s", k, i, r,
                     r >= n->record_count ? "out of range"
                     : n->rep[n->node_of[r]] != r ? "not the lowest record of its in-place chain"
                                                  : "placed twice");
      break;
    }
    seen[n->node_of[r]] = 1;
    order[i] = n->node_of[r];
  }
  tg__range_structure rs;
  memset(&rs, 0, sizeof rs);
  if (st == TG_OK) st = tg__range_structure_from_order(n, order, c->alloc, &rs);
  if (st == TG_OK) st = tg__range_compile(c->plan, n, &rs, g);
  tg__range_structure_free(&rs, c->alloc);
  tg__free(c->alloc, order);
  tg__free(c->alloc, seen);
  return st;
}

/* Objects: structure k's assignment: in range, one object per node, none empty, no conflict
 * inside an object. */
static tg_status compile_objects(saved_ctx *c, size_t k, tg__range_program *g) {
  const tg_range_structure *s = &c->desc->structures[k];
  const tg__range_nodes *n = &c->nodes;
  const size_t count = c->plan->count;
  if (count > 0 && (s->object_of == NULL || s->object_count == 0))
    return tg__error(c->err, TG_ERROR_INVALID_ARGUMENT, "range plan: structure %zu has no assignment", k);
  uint8_t *used = tg__calloc(c->alloc, s->object_count ? s->object_count : 1, 1);
  uint32_t *node_object = tg__calloc(c->alloc, n->count ? n->count : 1, sizeof *node_object);
  if (used == NULL || node_object == NULL) {
    tg__free(c->alloc, used);
    tg__free(c->alloc, node_object);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  tg_status st = TG_OK;
  for (size_t r = 0; r < count && st == TG_OK; ++r) {
    uint32_t o = s->object_of[r], v = n->node_of[r];
    if (o >= s->object_count)
      st = tg__error(c->err, TG_ERROR_INVALID_ARGUMENT, "range plan: structure %zu: record %zu in object %u of %u", k,
                     r, o, s->object_count);
    else if (n->rep[v] != r && node_object[v] != o)
      st = tg__error(c->err, TG_ERROR_INVALID_ARGUMENT,
                     "range plan: structure %zu: record %zu is in object %u, its in-place chain's record %u in %u", k,
                     r, o, n->rep[v], node_object[v]);
    else
      node_object[v] = o, used[o] = 1;
  }
  for (uint32_t o = 0; o < s->object_count && st == TG_OK; ++o)
    if (!used[o]) st = tg__error(c->err, TG_ERROR_INVALID_ARGUMENT, "range plan: structure %zu: object %u is empty", k, o);
  for (size_t v = 0; v < n->count && st == TG_OK; ++v)
    for (size_t e = n->conf_start[v]; e < n->conf_start[v + 1] && st == TG_OK; ++e) {
      uint32_t u = n->conf[e];
      if (node_object[u] == node_object[v])
        st = tg__error(c->err, TG_ERROR_INVALID_ARGUMENT,
                       "range plan: structure %zu: records %u and %u share object %u but meet in time (or may not "
                       "share)", k, n->rep[u < v ? u : v], n->rep[u < v ? v : u], node_object[v]);
    }
  if (st == TG_OK) {
    g->object_count = s->object_count;
    g->object_of = tg__calloc(&c->plan->alloc, count ? count : 1, sizeof *g->object_of);
    if (g->object_of == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
    else if (count) memcpy(g->object_of, s->object_of, count * sizeof *g->object_of);
  }
  tg__free(c->alloc, used);
  tg__free(c->alloc, node_object);
  return st;
}

/* The pieces: sub-grids of the range, each size in exactly one. */
static tg_status place_pieces(saved_ctx *c) {
  tg_range_plan *plan = c->plan;
  const tg_range_plan_desc *d = c->desc;
  const tg_size_range *range = &plan->range;
  if (d->piece_count == 0 || d->pieces == NULL || d->piece_structure == NULL)
    return tg__error(c->err, TG_ERROR_INVALID_ARGUMENT, "range plan: no pieces");
  if (d->piece_count > plan->points)
    return tg__error(c->err, TG_ERROR_INVALID_ARGUMENT, "range plan: %zu pieces for %llu sizes", d->piece_count,
                     (unsigned long long)plan->points);
  plan->pieces = tg__calloc(c->alloc, d->piece_count, sizeof *plan->pieces);
  plan->piece_program = tg__calloc(c->alloc, d->piece_count, sizeof *plan->piece_program);
  plan->piece_of = tg__calloc(c->alloc, plan->points, sizeof *plan->piece_of);
  if (plan->pieces == NULL || plan->piece_program == NULL || plan->piece_of == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (uint64_t p = 0; p < plan->points; ++p) plan->piece_of[p] = UINT32_MAX;
  plan->piece_count = d->piece_count;
  for (size_t k = 0; k < d->piece_count; ++k) {
    const tg_size_range *pc = &d->pieces[k];
    uint64_t lo[TG_RANGE_MAX_DIMS] = {0, 0}, hi[TG_RANGE_MAX_DIMS] = {0, 0}, side[TG_RANGE_MAX_DIMS] = {1, 1};
    int ok = pc->count == range->count && d->piece_structure[k] < plan->program_count;
    for (uint32_t a = 0; ok && a < range->count; ++a) {
      const tg_dim_range *r = &range->dim[a], *q = &pc->dim[a];
      ok = q->step == r->step && q->lo >= r->lo && q->lo <= q->hi && q->hi <= r->hi && (q->lo - r->lo) % r->step == 0 &&
           (q->hi - r->lo) % r->step == 0;
      if (!ok) break;
      lo[a] = (uint64_t)(q->lo - r->lo) / (uint64_t)r->step;
      hi[a] = (uint64_t)(q->hi - r->lo) / (uint64_t)r->step;
      side[a] = (uint64_t)(r->hi - r->lo) / (uint64_t)r->step + 1;
    }
    if (!ok)
      return tg__error(c->err, TG_ERROR_INVALID_ARGUMENT,
                       "range plan: piece %zu is not a sub-grid of the range with a structure of the %zu given", k,
                       plan->program_count);
    uint64_t n1 = range->count > 1 ? side[1] : 1, seen = 0;
    if (range->count < 2) lo[1] = hi[1] = 0;
    for (uint64_t i = lo[0]; i <= hi[0]; ++i)
      for (uint64_t j = lo[1]; j <= hi[1]; ++j) {
        uint64_t p = i * n1 + j;
        if (plan->piece_of[p] != UINT32_MAX) {
          char at[64];
          tg__range_dims_text(range, p, at, sizeof at);
          return tg__error(c->err, TG_ERROR_INVALID_ARGUMENT, "range plan: pieces %u and %zu both hold size %s",
                           plan->piece_of[p], k, at);
        }
        plan->piece_of[p] = (uint32_t)k;
        if (seen++ == 0) plan->pieces[k].worst_point = p;
      }
    plan->piece_program[k] = d->piece_structure[k];
    plan->pieces[k].range = *pc;
    plan->pieces[k].structure = d->piece_structure[k];
    plan->pieces[k].object_count =
        plan->mode == TG_MODE_OBJECTS ? plan->programs[d->piece_structure[k]].object_count : 1;
  }
  for (uint64_t p = 0; p < plan->points; ++p)
    if (plan->piece_of[p] == UINT32_MAX) {
      char at[64];
      tg__range_dims_text(range, p, at, sizeof at);
      return tg__error(c->err, TG_ERROR_INVALID_ARGUMENT, "range plan: no piece holds size %s", at);
    }
  return TG_OK;
}

/* The total at every size (one instantiation each), and the allocation cap. */
static tg_status evaluate(saved_ctx *c) {
  tg_range_plan *plan = c->plan;
  plan->total = tg__calloc(c->alloc, plan->points, sizeof *plan->total);
  plan->own = tg__calloc(c->alloc, plan->points, sizeof *plan->own);
  plan->lower = tg__calloc(c->alloc, plan->points, sizeof *plan->lower);
  if (plan->total == NULL || plan->own == NULL || plan->lower == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_plan *inst = NULL;
  tg_status st = tg_range_plan_create_instance(plan, c->alloc, &inst);
  if (st != TG_OK) return st;
  for (uint64_t p = 0; p < plan->points && st == TG_OK; ++p) {
    int64_t dims[TG_RANGE_MAX_DIMS] = {0, 0};
    tg_size_range_point(&plan->range, p, dims);
    st = tg_range_plan_instantiate(plan, dims, c->recs, inst);
    char at[64];
    if (st != TG_OK) {
      tg__range_dims_text(&plan->range, p, at, sizeof at);
      st = tg__error(c->err, st, "range plan: at size %s: %s", at, tg_status_string(st));
      break;
    }
    plan->total[p] = inst->total;
    uint64_t cap = plan->max_allocation, over = 0;
    if (cap > 0 && plan->mode == TG_MODE_OFFSETS && inst->total > cap) over = inst->total;
    for (size_t k = 0; cap > 0 && plan->mode == TG_MODE_OBJECTS && plan->dims == 1 && k < inst->object_count; ++k)
      if (inst->object_sizes[k].w > cap && over == 0) over = inst->object_sizes[k].w;
    if (over > 0) {
      tg__range_dims_text(&plan->range, p, at, sizeof at);
      st = tg__error(c->err, TG_ERROR_LIMIT, "range plan: at size %s the plan needs %llu bytes in one %s, above "
                     "max_allocation %llu", at, (unsigned long long)over,
                     plan->mode == TG_MODE_OFFSETS ? "arena" : "object", (unsigned long long)cap);
    }
  }
  tg_plan_destroy(inst);
  return st;
}

static tg_status create(saved_ctx *c) {
  tg_range_plan *plan = c->plan;
  const tg_range_plan_desc *d = c->desc;
  const size_t n = plan->count;
  c->recs = tg__calloc(c->alloc, n ? n : 1, sizeof *c->recs);
  if (c->recs == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_status st = build_nodes(c);
  if (st != TG_OK) return st;
  if (d->structure_count == 0 || d->structures == NULL || d->structure_count > UINT32_MAX)
    return tg__error(c->err, TG_ERROR_INVALID_ARGUMENT, "range plan: no structures");
  plan->programs = tg__calloc(c->alloc, d->structure_count, sizeof *plan->programs);
  if (plan->programs == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  size_t most = plan->mode == TG_MODE_OFFSETS ? 1 : 0;
  for (size_t k = 0; k < d->structure_count; ++k) {
    st = plan->mode == TG_MODE_OFFSETS ? compile_order(c, k, &plan->programs[k])
                                       : compile_objects(c, k, &plan->programs[k]);
    plan->program_count = k + 1; /* freed with the plan from here on */
    if (st != TG_OK) return st;
    if (plan->mode == TG_MODE_OBJECTS && plan->programs[k].object_count > most) most = plan->programs[k].object_count;
  }
  plan->summary.max_object_count = most;
  if ((st = place_pieces(c)) != TG_OK) return st;
  if (c->have_groups && (st = tg__range_plan_keep_chains(plan, &c->nodes, &c->groups)) != TG_OK) return st;
  plan->summary.in_place_kept = plan->pair_count;
  return evaluate(c);
}

tg_status tg_range_plan_create(const tg_range_records *records, const tg_range_plan_desc *desc,
                               const tg_allocator *alloc, tg_range_plan **out, tg_error_info *err) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  const uint64_t t0 = tg__now_us();
  static const tg_plan_options k_defaults = {0};
  if (desc == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "range plan: no description");
  const tg_plan_options *o = desc->options ? desc->options : &k_defaults;
  tg_range_plan *plan = NULL;
  tg_status new_st = tg__range_plan_new(records, o, alloc, &plan, err);
  if (new_st != TG_OK) return new_st;
  alloc = &plan->alloc;
  saved_ctx c;
  memset(&c, 0, sizeof c);
  c.plan = plan;
  c.desc = desc;
  c.options = o;
  c.alloc = alloc;
  c.err = err;
  tg_status st = create(&c);
  tg__free(alloc, c.recs);
  tg__range_nodes_free(&c.nodes, alloc);
  if (c.have_groups) tg__in_place_groups_free(&c.groups, alloc);
  if (st != TG_OK) {
    if (st == TG_ERROR_OUT_OF_HOST_MEMORY) tg__error(err, st, "range plan: out of host memory");
    tg_range_plan_destroy(plan);
    return st;
  }
  plan->summary.piece_count = plan->piece_count;
  plan->summary.structures_tried = plan->program_count;
  plan->summary.compute_us = tg__now_us() - t0;
  *out = plan;
  return TG_OK;
}
