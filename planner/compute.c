/* The planner's front door: tg_plan_compute checks its input and runs one strategy, or
 * `best` (planner/search/best.c). */
#include <string.h>

#include "planner/base/base.h"
#include "planner/base/in_place.h"
#include "planner/search/best.h"

/* `default_ms`: the search time that time_limit_ms 0 stands for (0: the library's default;
 * tg__in_place_split_budget gives each of two plans its share). */
static tg_status plan_compute(const tg_usage_record *records, size_t count, uint32_t dims,
                              const tg_plan_options *options, uint32_t default_ms, const tg_allocator *alloc,
                              tg_plan **out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  static const tg_plan_options k_defaults = {0};
  if (options == NULL) options = &k_defaults;
  const uint64_t t0 = options->strategy == TG_STRATEGY_BEST ? tg__now_us() : 0;
  if ((records == NULL && count > 0) || dims < 1 || dims > 3) return TG_ERROR_INVALID_ARGUMENT;
  if ((unsigned)options->strategy >= TG_STRATEGY_COUNT) return TG_ERROR_INVALID_ARGUMENT;
  if (options->mode == TG_MODE_OFFSETS && dims != 1) return TG_ERROR_UNSUPPORTED;
  if (!tg_strategy_applies(options->strategy, options->mode, dims)) return TG_ERROR_UNSUPPORTED;
  alloc = tg__alloc_or_default(alloc);

  uint64_t *volumes = tg__calloc(alloc, count ? count : 1, sizeof *volumes);
  if (volumes == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t r = 0; r < count; ++r) {
    const tg_usage_record *rec = &records[r];
    if (rec->first_task > rec->last_task) {
      tg__free(alloc, volumes);
      return TG_ERROR_INVALID_ARGUMENT;
    }
    /* Unused dimensions must be exactly 1, so per-dimension maxima and volumes agree. */
    tg_extent e = rec->size;
    if ((dims < 3 && e.d != 1) || (dims < 2 && e.h != 1)) {
      tg__free(alloc, volumes);
      return TG_ERROR_INVALID_ARGUMENT;
    }
    if (tg_extent_volume(e, &volumes[r]) != TG_OK) {
      tg__free(alloc, volumes);
      return TG_ERROR_OVERFLOW;
    }
  }
  /* Under a cap, a record larger than the cap fits no arena (offsets) and no object (1D). */
  if (options->max_allocation > 0 && dims == 1) {
    for (size_t r = 0; r < count; ++r) {
      if (volumes[r] > options->max_allocation) {
        tg__free(alloc, volumes);
        return TG_ERROR_LIMIT;
      }
    }
  }
  tg__plan_input in = {records, count, dims, options, alloc, volumes, 0, NULL, NULL};
  tg_status st;
  if (options->strategy == TG_STRATEGY_BEST) {
    /* The time limit as the search reads it: 0 = no search (with `exact`: 1000 ms), and a
     * deadline when the caller set one. */
    tg_plan_options eff = *options;
    if (eff.time_limit_ms == TG_TIME_LIMIT_NONE) {
      eff.time_limit_ms = eff.exact ? default_ms : 0;
    } else if (eff.time_limit_ms == 0) {
      eff.time_limit_ms = default_ms ? default_ms : eff.exact ? 0 : TG_DEFAULT_TIME_LIMIT_MS;
    } else if (!eff.exact) {
      in.deadline_us = t0 + (uint64_t)eff.time_limit_ms * 1000;
    }
    in.options = &eff;
    st = tg__best_plan(&in, out);
  } else {
    st = tg__strategy_fn_get(options->mode, options->strategy)(&in, out);
    if (st == TG_OK) {
      (*out)->strategy = options->strategy;
      (*out)->fit = options->fit;
    }
  }
  tg__free(alloc, volumes);
  if (st == TG_OK && options->max_allocation > 0) {
    if (options->mode == TG_MODE_OFFSETS)
      st = tg_plan_split_arenas(records, count, *out, options->max_allocation, options->alignment,
                                options->relation, alloc);
    else if (dims == 1)
      (*out)->max_allocation = options->max_allocation;
  }
  if (st != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
  }
  return st;
}

/* The plan of the merged records (one per chain) unfolded onto the records: every member of a
 * group gets its group's object or offset. */
static tg_status unfold(const tg__in_place_groups *g, const tg_plan *merged, const tg_allocator *alloc,
                        tg_plan **out) {
  tg_status st = tg_plan_create(merged->mode, merged->dims, g->count, merged->object_count, alloc, out);
  if (st != TG_OK) return st;
  tg_plan *p = *out;
  p->strategy = merged->strategy;
  p->fit = merged->fit;
  p->total = merged->total;
  p->object_count = merged->object_count;
  if (merged->mode == TG_MODE_OBJECTS) {
    for (size_t k = 0; k < merged->object_count; ++k) p->object_sizes[k] = merged->object_sizes[k];
    for (size_t r = 0; r < g->count; ++r) p->object_of[r] = merged->object_of[g->group_of[r]];
  } else {
    for (size_t r = 0; r < g->count; ++r) p->offset_of[r] = merged->offset_of[g->group_of[r]];
    /* Arenas (a cap): each member in its group's arena. */
    p->arena_count = merged->arena_count;
    if (merged->arena_count > 1) {
      p->arena_of = tg__calloc(&p->alloc, g->count, sizeof *p->arena_of);
      p->arena_sizes = tg__calloc(&p->alloc, merged->arena_count, sizeof *p->arena_sizes);
      if (p->arena_of == NULL || p->arena_sizes == NULL) {
        tg_plan_destroy(p);
        *out = NULL;
        return TG_ERROR_OUT_OF_HOST_MEMORY;
      }
      for (size_t r = 0; r < g->count; ++r) p->arena_of[r] = merged->arena_of[g->group_of[r]];
      for (size_t k = 0; k < merged->arena_count; ++k) p->arena_sizes[k] = merged->arena_sizes[k];
    }
  }
  p->max_allocation = merged->max_allocation;
  if ((st = tg_plan_set_in_place(p, g->used, g->used_count)) != TG_OK) {
    tg_plan_destroy(p);
    *out = NULL;
  }
  return st;
}

tg_status tg_plan_compute(const tg_usage_record *records, size_t count, uint32_t dims,
                          const tg_plan_options *options, const tg_allocator *alloc,
                          tg_plan **out) {
  if (options == NULL || options->in_place_count == 0 || count == 0 || dims < 1 || dims > 3 || records == NULL)
    return plan_compute(records, count, dims, options, 0, alloc, out);
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  alloc = tg__alloc_or_default(alloc);
  tg__in_place_groups g;
  tg_status st = tg__in_place_groups_build(records, count, dims, options->in_place, options->in_place_count,
                                           options->relation, alloc, &g);
  if (st != TG_OK) return st;
  tg_plan_options plain = *options;
  plain.in_place = NULL;
  plain.in_place_count = 0;
  if (g.used_count == 0) {
    tg__in_place_groups_free(&g, alloc);
    return plan_compute(records, count, dims, &plain, 0, alloc, out);
  }
  /* Both plans share the call's search budget (each half of it); the exact mode's statistics
   * are those of the plan kept. */
  const tg_plan_options whole = plain;
  tg_plan_options merged_opt;
  uint32_t merged_ms, plain_ms;
  tg__in_place_split_budget(&whole, 0, &merged_opt, &merged_ms);
  tg__in_place_split_budget(&whole, 1, &plain, &plain_ms);
  merged_opt.relation = options->relation ? &g.relation : NULL;
  tg_exact_stats stats_plain, stats_merged;
  if (options->exact_stats) {
    stats_plain = *options->exact_stats;
    stats_merged = *options->exact_stats;
    plain.exact_stats = &stats_plain;
    merged_opt.exact_stats = &stats_merged;
  }
  tg_plan *merged = NULL, *flat = NULL;
  st = plan_compute(g.merged, g.group_count, dims, &merged_opt, merged_ms, alloc, &merged);
  if (st == TG_OK) st = plan_compute(records, count, dims, &plain, plain_ms, alloc, &flat);
  if (st == TG_OK) {
    if (merged->total < flat->total) {
      st = unfold(&g, merged, alloc, out);
      if (options->exact_stats) *options->exact_stats = stats_merged;
    } else {
      *out = flat;
      flat = NULL;
      if (options->exact_stats) *options->exact_stats = stats_plain;
    }
  }
  tg_plan_destroy(merged);
  tg_plan_destroy(flat);
  tg__in_place_groups_free(&g, alloc);
  return st;
}

tg_status tg_plan_compute_exact(const tg_usage_record *records, size_t count,
                                const tg_plan_options *options, const tg_allocator *alloc,
                                tg_plan **out, tg_exact_stats *stats) {
  tg_plan_options opt;
  memset(&opt, 0, sizeof opt);
  if (options != NULL) opt = *options;
  opt.mode = TG_MODE_OFFSETS;
  opt.strategy = TG_STRATEGY_BEST;
  opt.exact = 1;
  opt.exact_stats = stats;
  return tg_plan_compute(records, count, 1, &opt, alloc, out);
}
