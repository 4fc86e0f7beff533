/* Plan objects and names: the base every strategy and search builds on. */
#include <string.h>

#include "planner/base/base.h"

static const char *const k_strategy_names[TG_STRATEGY_COUNT] = {
    "naive", "equality", "greedy-in-order", "greedy-by-breadth", "greedy-by-size",
    "min-cost-flow", "best", "beam", "allocation-tree", "greedy-coloring",
    "greedy-by-conflicts", "hill-climb"};

static const char *const k_strategy_origins[TG_STRATEGY_COUNT] = {
    "TFLite", "TFLite", "TFLite", "TFLite", "TFLite", "TFLite", "Tangram",
    "seed 000", "PyTorch", "Mini-Infer", "TVM", "TVM"};

const char *tg_strategy_name(tg_strategy s) {
  return ((unsigned)s < TG_STRATEGY_COUNT) ? k_strategy_names[s] : NULL;
}

const char *tg_strategy_origin(tg_strategy s) {
  return ((unsigned)s < TG_STRATEGY_COUNT) ? k_strategy_origins[s] : NULL;
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
    p->arena_count = p->object_count;
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

tg_status tg_plan_set_in_place(tg_plan *plan, const tg_in_place_pair *pairs, size_t count) {
  if (plan == NULL || (pairs == NULL && count > 0)) return TG_ERROR_INVALID_ARGUMENT;
  tg_in_place_pair *copy = NULL;
  if (count > 0) {
    copy = tg__calloc(&plan->alloc, count, sizeof *copy);
    if (copy == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    memcpy(copy, pairs, count * sizeof *copy);
  }
  tg__free(&plan->alloc, plan->in_place);
  plan->in_place = copy;
  plan->in_place_count = count;
  return TG_OK;
}

void tg_plan_destroy(tg_plan *plan) {
  if (plan == NULL) return;
  tg_allocator a = plan->alloc;
  tg__free(&a, plan->object_of);
  tg__free(&a, plan->object_sizes);
  tg__free(&a, plan->offset_of);
  tg__free(&a, plan->in_place);
  tg__free(&a, plan->arena_of);
  tg__free(&a, plan->arena_sizes);
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

void tg__keep_smaller(tg_plan **best, tg_plan *cand) {
  if (*best == NULL || cand->total < (*best)->total) {
    tg_plan_destroy(*best);
    *best = cand;
  } else {
    tg_plan_destroy(cand);
  }
}
