/* The planner's front door: tg_plan_compute checks its input and runs one strategy, or
 * `best` (planner/search/best.c). */
#include <string.h>

#include "planner/base/base.h"
#include "planner/search/best.h"

tg_status tg_plan_compute(const tg_usage_record *records, size_t count, uint32_t dims,
                          const tg_plan_options *options, const tg_allocator *alloc,
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
  tg__plan_input in = {records, count, dims, options, alloc, volumes, 0, 0, NULL};
  tg_status st;
  if (options->strategy == TG_STRATEGY_BEST) {
    /* The time limit as the search reads it: 0 = no search (with `exact`: 1000 ms), and a
     * deadline when the caller set one. */
    tg_plan_options eff = *options;
    if (eff.time_limit_ms == TG_TIME_LIMIT_NONE) {
      eff.time_limit_ms = 0;
    } else if (eff.time_limit_ms == 0) {
      if (!eff.exact) eff.time_limit_ms = TG_DEFAULT_TIME_LIMIT_MS;
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
  if (st != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
  }
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
