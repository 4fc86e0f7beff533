/* The planner's front door: names, plan objects, strategy dispatch and `best`. */
#include <string.h>

#include "planner/exact_objects.h"
#include "planner/search.h"
#include "planner/strategies.h"

static const char *const k_strategy_names[TG_STRATEGY_COUNT] = {
    "naive", "equality", "greedy-in-order", "greedy-by-breadth", "greedy-by-size",
    "min-cost-flow", "best"};

const char *tg_strategy_name(tg_strategy s) {
  return ((unsigned)s < TG_STRATEGY_COUNT) ? k_strategy_names[s] : NULL;
}

tg_status tg_strategy_from_name(const char *name, tg_strategy *out) {
  if (name == NULL || out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < TG_STRATEGY_COUNT; ++i) {
    if (strcmp(name, k_strategy_names[i]) == 0) {
      *out = (tg_strategy)i;
      return TG_OK;
    }
  }
  return TG_ERROR_INVALID_ARGUMENT;
}

const char *tg_mode_name(tg_mode m) {
  switch (m) {
    case TG_MODE_OBJECTS: return "objects";
    case TG_MODE_OFFSETS: return "offsets";
  }
  return NULL;
}

tg_status tg_mode_from_name(const char *name, tg_mode *out) {
  if (name == NULL || out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  if (strcmp(name, "objects") == 0) { *out = TG_MODE_OBJECTS; return TG_OK; }
  if (strcmp(name, "offsets") == 0) { *out = TG_MODE_OFFSETS; return TG_OK; }
  return TG_ERROR_INVALID_ARGUMENT;
}

const char *tg_fit_name(tg_fit f) {
  switch (f) {
    case TG_FIT_BEST: return "best";
    case TG_FIT_FIRST: return "first";
    case TG_FIT_WORST: return "worst";
  }
  return NULL;
}

tg_status tg_fit_from_name(const char *name, tg_fit *out) {
  if (name == NULL || out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  if (strcmp(name, "best") == 0) { *out = TG_FIT_BEST; return TG_OK; }
  if (strcmp(name, "first") == 0) { *out = TG_FIT_FIRST; return TG_OK; }
  if (strcmp(name, "worst") == 0) { *out = TG_FIT_WORST; return TG_OK; }
  return TG_ERROR_INVALID_ARGUMENT;
}

tg_status tg_plan_create(tg_mode mode, uint32_t dims, size_t record_count, size_t object_count,
                         const tg_allocator *alloc, tg_plan **out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  if (dims < 1 || dims > 3 || (mode != TG_MODE_OBJECTS && mode != TG_MODE_OFFSETS))
    return TG_ERROR_INVALID_ARGUMENT;
  alloc = tg__alloc_or_default(alloc);
  tg_plan *p = tg__calloc(alloc, 1, sizeof *p);
  if (p == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  p->mode = mode;
  p->dims = dims;
  p->record_count = record_count;
  p->alloc = *alloc;
  int ok = 1;
  if (mode == TG_MODE_OBJECTS) {
    p->object_count = object_count;
    p->object_of = tg__calloc(alloc, record_count ? record_count : 1, sizeof *p->object_of);
    p->object_sizes = tg__calloc(alloc, object_count ? object_count : 1, sizeof *p->object_sizes);
    ok = p->object_of && p->object_sizes;
  } else {
    p->object_count = record_count ? 1 : 0;
    p->offset_of = tg__calloc(alloc, record_count ? record_count : 1, sizeof *p->offset_of);
    ok = p->offset_of != NULL;
  }
  if (!ok) {
    tg_plan_destroy(p);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  *out = p;
  return TG_OK;
}

void tg_plan_destroy(tg_plan *plan) {
  if (plan == NULL) return;
  tg_allocator a = plan->alloc;
  tg__free(&a, plan->object_of);
  tg__free(&a, plan->object_sizes);
  tg__free(&a, plan->offset_of);
  tg__free(&a, plan);
}

tg_status tg__plan_finish_objects(const tg__plan_input *in, tg_plan *plan) {
  for (size_t k = 0; k < plan->object_count; ++k) plan->object_sizes[k] = (tg_extent){0, 0, 0};
  for (size_t r = 0; r < in->count; ++r) {
    uint32_t k = plan->object_of[r];
    if (k >= plan->object_count) return TG_ERROR_INTERNAL;
    tg_extent *o = &plan->object_sizes[k];
    const tg_extent *s = &in->records[r].size;
    if (s->w > o->w) o->w = s->w;
    if (s->h > o->h) o->h = s->h;
    if (s->d > o->d) o->d = s->d;
  }
  uint64_t total = 0;
  for (size_t k = 0; k < plan->object_count; ++k) {
    uint64_t v;
    if (tg_extent_volume(plan->object_sizes[k], &v) != TG_OK || !tg__add_u64(total, v, &total))
      return TG_ERROR_OVERFLOW;
  }
  plan->total = total;
  return TG_OK;
}

tg_status tg__plan_finish_offsets(const tg__plan_input *in, tg_plan *plan) {
  uint64_t total = 0;
  for (size_t r = 0; r < in->count; ++r) {
    uint64_t end;
    if (!tg__add_u64(plan->offset_of[r], in->volumes[r], &end)) return TG_ERROR_OVERFLOW;
    if (end > total) total = end;
  }
  plan->total = total;
  return TG_OK;
}

static tg__strategy_fn strategy_fn(tg_mode mode, tg_strategy s) {
  if (mode == TG_MODE_OBJECTS) {
    switch (s) {
      case TG_STRATEGY_NAIVE: return tg__objects_naive;
      case TG_STRATEGY_EQUALITY: return tg__objects_equality;
      case TG_STRATEGY_GREEDY_IN_ORDER: return tg__objects_greedy_in_order;
      case TG_STRATEGY_GREEDY_BY_BREADTH: return tg__objects_greedy_by_breadth;
      case TG_STRATEGY_GREEDY_BY_SIZE: return tg__objects_greedy_by_size;
      case TG_STRATEGY_MIN_COST_FLOW: return tg__objects_min_cost_flow;
      default: return NULL;
    }
  }
  switch (s) {
    case TG_STRATEGY_NAIVE: return tg__offsets_naive;
    case TG_STRATEGY_GREEDY_IN_ORDER: return tg__offsets_greedy_in_order;
    case TG_STRATEGY_GREEDY_BY_BREADTH: return tg__offsets_greedy_by_breadth;
    case TG_STRATEGY_GREEDY_BY_SIZE: return tg__offsets_greedy_by_size;
    default: return NULL;
  }
}

void tg__keep_smaller(tg_plan **best, tg_plan *cand) {
  if (*best == NULL || cand->total < (*best)->total) {
    tg_plan_destroy(*best);
    *best = cand;
  } else {
    tg_plan_destroy(cand);
  }
}

/* `best` with a time limit on large serial offsets inputs (see TG__LNS_MIN_RECORDS): the other
 * greedy passes cost several times greedy-by-size at 100k records, and the search closes
 * their gap, so greedy-by-size alone is the first answer and the search (which may start again
 * from greedy-by-breadth, see tg__search_improve) gets the time. Returns TG_ERROR_OVERFLOW, for
 * run_best to try every strategy, when that layout does not fit 64 bits. */
static tg_status run_best_large(const tg__plan_input *in, tg_plan **out) {
  tg_plan *best = NULL;
  tg_status st = tg__offsets_greedy_by_size(in, &best);
  if (st == TG_OK) {
    best->strategy = TG_STRATEGY_GREEDY_BY_SIZE;
    st = tg__search_after_greedy(in, &best);
  }
  if (st != TG_OK) {
    tg_plan_destroy(best);
    return st;
  }
  *out = best;
  return TG_OK;
}

/* Objects mode, 1D, after greedy. The search: the branch-and-bound for half of the time limit
 * under a node cap proportional to it (so the plan does not depend on the machine's speed
 * unless the clock stops it first), then, unless it proved the plan optimal, iterated greedy,
 * which finds different improvements on larger sets. The exact mode: that search with a fifth
 * of the time (so it never ends above it), then the branch-and-bound without a cap for the rest
 * from the better incumbent; the shape-aware bound (bounds_shape.c), often above the
 * positional maximums it prunes with, tightens the gap it reports and proves a plan that meets
 * it optimal. */
static tg_status objects_1d_improve(const tg__plan_input *in, tg_plan **best) {
  const tg_plan_options *o = in->options;
  tg_exact_stats local;
  memset(&local, 0, sizeof local);
  tg_exact_stats *stats = o->exact && o->exact_stats ? o->exact_stats : &local;
  if (o->exact) tg__exact_stats_reset(stats); /* the branch-and-bound skips 0 records */
  uint64_t ms = o->time_limit_ms ? o->time_limit_ms : 1000, t0 = tg__now_us();
  uint64_t search_ms = o->exact ? (ms / 5 ? ms / 5 : 1) : ms, bb_ms = (search_ms + 1) / 2;
  tg_status st = tg__exact_objects_improve(in, bb_ms * 1000, bb_ms * TG__EXACT_OBJECTS_NODES_PER_MS,
                                           best, stats);
  if (st == TG_OK && !stats->proved_optimal) {
    uint64_t bound, used = tg__now_us() - t0;
    uint64_t left = search_ms * 1000 > used ? search_ms * 1000 - used : 0;
    st = tg__search_bound(in, &bound);
    if (st == TG_OK && left > 0)
      st = tg__search_improve(in, bound, left, (search_ms - bb_ms) * TG__SEARCH_ITERS_PER_MS, best);
  }
  if (st != TG_OK || !o->exact) return st;
  if (!stats->proved_optimal) {
    uint64_t nodes = stats->nodes, used = tg__now_us() - t0;
    st = tg__exact_objects_improve(in, ms * 1000 > used ? ms * 1000 - used : 0, 0, best, stats);
    stats->nodes += nodes;
  }
  uint64_t shape = 0;
  if (st == TG_OK && !stats->proved_optimal &&
      (st = tg_bounds_objects_shape(in->records, in->count, 1, in->alloc, &shape)) == TG_OK &&
      shape >= stats->lower_bound) {
    stats->lower_bound = shape < (*best)->total ? shape : (*best)->total;
    stats->proved_optimal = shape >= (*best)->total;
  }
  stats->elapsed_us = tg__now_us() - t0;
  if (st == TG_OK && stats->progress != NULL) stats->progress(stats->progress_user, stats);
  return st;
}

static tg_status run_best(const tg__plan_input *in, tg_plan **out) {
  if (in->options->mode == TG_MODE_OFFSETS && in->options->time_limit_ms > 0 &&
      !in->options->exact && in->options->relation == NULL && in->count >= TG__LNS_MIN_RECORDS) {
    tg_status st = run_best_large(in, out);
    if (st != TG_ERROR_OVERFLOW) return st;
  }
  tg_plan *best = NULL;
  int overflowed = 0;
  size_t mcf_max = in->options->mcf_max_records ? in->options->mcf_max_records
                                                : TG_DEFAULT_MCF_MAX_RECORDS;
  tg_plan_options opt = *in->options;
  tg__plan_input sub = *in;
  sub.options = &opt;
  for (int s = 0; s < TG_STRATEGY_BEST; ++s) {
    tg__strategy_fn fn = strategy_fn(in->options->mode, (tg_strategy)s);
    if (fn == NULL) continue;
    if (s == TG_STRATEGY_MIN_COST_FLOW && in->count > mcf_max) continue;
    int fits = (in->options->mode == TG_MODE_OFFSETS && s == TG_STRATEGY_GREEDY_IN_ORDER) ? 3 : 1;
    for (int f = 0; f < fits; ++f) {
      if (fits > 1) opt.fit = (tg_fit)f;
      tg_plan *cand = NULL;
      tg_status st = fn(&sub, &cand);
      if (st != TG_OK) {
        /* A strategy may leave a half-filled plan behind when it fails (an overflowing
         * total is found after the plan was created): free it like tg_plan_compute does. */
        tg_plan_destroy(cand);
        /* A layout that does not fit 64 bits is no candidate, but another strategy's may
         * (sizes near 2^64 that only fit when shared): keep looking. */
        if (st == TG_ERROR_OVERFLOW) {
          overflowed = 1;
          continue;
        }
        tg_plan_destroy(best);
        return st;
      }
      cand->strategy = (tg_strategy)s;
      cand->fit = opt.fit;
      tg__keep_smaller(&best, cand);
    }
  }
  if (best == NULL) return overflowed ? TG_ERROR_OVERFLOW : TG_ERROR_INTERNAL;
  /* Objects mode, 1D: the branch-and-bound over assignments (exact_objects.c) is both the
   * exact mode and, under a node cap, the improvement search (objects_1d_improve). The
   * iterated-greedy search alone only runs where it cannot (textures, too many records). */
  if ((in->options->exact || in->options->time_limit_ms > 0) && in->options->mode == TG_MODE_OBJECTS &&
      in->dims == 1 && in->count <= TG__EXACT_OBJECTS_MAX_RECORDS) {
    tg_status st = objects_1d_improve(in, &best);
    if (st != TG_OK) {
      tg_plan_destroy(best);
      return st;
    }
    *out = best;
    return TG_OK;
  }
  /* Improvement search (and the exact mode) on top of the best greedy plan. */
  if (in->options->time_limit_ms > 0 || in->options->exact) {
    tg_status st = tg__search_after_greedy(in, &best);
    if (st != TG_OK) {
      tg_plan_destroy(best);
      return st;
    }
  }
  *out = best;
  return TG_OK;
}

tg_status tg_plan_compute(const tg_usage_record *records, size_t count, uint32_t dims,
                          const tg_plan_options *options, const tg_allocator *alloc,
                          tg_plan **out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  static const tg_plan_options k_defaults = {0};
  if (options == NULL) options = &k_defaults;
  if ((records == NULL && count > 0) || dims < 1 || dims > 3) return TG_ERROR_INVALID_ARGUMENT;
  if ((unsigned)options->strategy >= TG_STRATEGY_COUNT) return TG_ERROR_INVALID_ARGUMENT;
  if (options->mode == TG_MODE_OFFSETS && dims != 1) return TG_ERROR_UNSUPPORTED;
  if (options->strategy != TG_STRATEGY_BEST && strategy_fn(options->mode, options->strategy) == NULL)
    return TG_ERROR_UNSUPPORTED;
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
  tg__plan_input in = {records, count, dims, options, alloc, volumes};
  tg_status st;
  if (options->strategy == TG_STRATEGY_BEST) {
    st = run_best(&in, out);
  } else {
    st = strategy_fn(options->mode, options->strategy)(&in, out);
    if (st == TG_OK) {
      (*out)->strategy = options->strategy;
      (*out)->fit = options->fit;
    }
  }
  tg__free(alloc, volumes);
  if (st != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
  }
  return st;
}
