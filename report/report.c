/* Evaluation: every storage x mode x strategy for a model, compared in bytes, and the views
 * (plans as bytes) behind the charts and CSV exports. */
#include <stdio.h>

#include "core/internal.h"
#include "tangram/report.h"

/* The plans of one result, while deciding whether it is the storage's best. */
typedef struct result_plans {
  tg_plan *primary;
  tg_plan *fallback[TG_STORAGE_FALLBACK_COUNT];  /* NULL when the group has no tensors */
} result_plans;

/* What is kept per storage: its records, the plans of each mode's best result (and the byte
 * records an offsets plan of textures was made for), and the best result as a view. */
typedef struct storage_state {
  tg_model_records *model;      /* graph input: the storage's records (owns names) */
  result_plans kept[2];         /* per mode (objects, offsets): tg_evaluation.best_of_mode's plans */
  tg_usage_record *offsets_primary;  /* the primary records' bytes (textures), else NULL */
  tg_usage_record *offsets_fallback[TG_STORAGE_FALLBACK_COUNT]; /* each 2D group's bytes, else NULL */
  tg_usage_record *view_records;
  const char **view_names;
  tg_storage *view_storage_of;
  tg_plan *view_plan;
  uint64_t view_lower_bound;
  size_t view_primary_count;
  uint64_t view_primary_bytes;
} storage_state;

struct tg_evaluation_state {
  storage_state storage[TG_STORAGE_COUNT];
  tg_record_set *input_copy;    /* records input: a private copy, so views own their names */
};

/* The storages of the fallback chain tensors fall to, in chain order (tg_storage_fallback_at):
 * each group is planned on its own. */
#define FB_GROUPS TG_STORAGE_FALLBACK_COUNT

static void result_plans_clear(result_plans *p) {
  tg_plan_destroy(p->primary);
  p->primary = NULL;
  for (int g = 0; g < FB_GROUPS; ++g) {
    tg_plan_destroy(p->fallback[g]);
    p->fallback[g] = NULL;
  }
}

/* Everything needed to evaluate one storage. */
typedef struct storage_input {
  tg_storage storage;
  const tg_record_set *primary;         /* dims = the storage's */
  const tg_record_set *fallback[FB_GROUPS]; /* per tg_storage_fallback_at; may be NULL or empty */
  uint64_t unit;                        /* bytes per primary volume unit */
  const tg_share_relation *rel_primary; /* NULL: serial */
  const tg_share_relation *rel_fallback[FB_GROUPS];
  const tg_in_place_pair *pairs;        /* the primary records' in-place candidates */
  size_t pair_count;
} storage_input;

/* A fallback group while evaluating: its records, their byte form (offsets mode; the records
 * themselves for 1D groups) and the bytes per volume unit of its objects. */
typedef struct fb_group {
  const tg_record_set *set;             /* NULL: empty group */
  const tg_usage_record *bytes;
  tg_usage_record *owned;               /* bytes, when converted */
  uint64_t unit;
} fb_group;

const char *tg_report_format_bytes(uint64_t bytes, char *buf, size_t size) {
  static const char *const k_units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (buf == NULL || size == 0) return buf;
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) snprintf(buf, size, "%llu B", (unsigned long long)bytes);
  else snprintf(buf, size, "%.2f %s", v, k_units[u]);
  return buf;
}

void tg_evaluation_destroy(tg_evaluation *ev) {
  if (ev == NULL) return;
  tg_allocator a = ev->alloc;
  if (ev->state != NULL) {
    for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
      storage_state *ss = &ev->state->storage[s];
      tg_model_records_destroy(ss->model);
      for (int m = 0; m < 2; ++m) result_plans_clear(&ss->kept[m]);
      tg__free(&a, ss->offsets_primary);
      for (int g = 0; g < FB_GROUPS; ++g) tg__free(&a, ss->offsets_fallback[g]);
      tg__free(&a, ss->view_records);
      tg__free(&a, (void *)ss->view_names);
      tg__free(&a, ss->view_storage_of);
      tg_plan_destroy(ss->view_plan);
    }
    tg_record_set_destroy(ev->state->input_copy);
    tg__free(&a, ev->state);
  }
  tg__free(&a, ev->results);
  tg__free(&a, ev->fallbacks);
  tg__free(&a, ev);
}

/* Write records whose sizes are volumes x `unit` bytes (1D), same tasks: the arena form of
 * texture records, and the byte view of any records. */
static tg_status to_byte_records(const tg_usage_record *in, size_t count, uint64_t unit,
                                 tg_usage_record *out) {
  for (size_t i = 0; i < count; ++i) {
    uint64_t v;
    if (tg_extent_volume(in[i].size, &v) != TG_OK || !tg__mul_u64(v, unit, &v))
      return TG_ERROR_OVERFLOW;
    out[i].size = (tg_extent){v, 1, 1};
    out[i].first_task = in[i].first_task;
    out[i].last_task = in[i].last_task;
    out[i].alignment = 0;
  }
  return TG_OK;
}

/* The view of a storage's best result: primary records as bytes, then the fallback ones; one
 * 1D plan of the result's mode (see tg_report_view). */
/* Record r's address when the arenas of an offsets plan lie back to back (sizes add up to
 * the total, so no sum overflows). */
static uint64_t flat_offset(const tg_plan *p, size_t r) {
  uint64_t base = 0;
  for (uint32_t k = 0; k < tg_plan_arena_of(p, r); ++k) base += p->arena_sizes[k];
  return base + p->offset_of[r];
}

static tg_status build_view(storage_state *ss, const storage_input *in, const fb_group *fg, tg_mode mode,
                            const result_plans *rp, uint64_t lower_bound,
                            const tg_allocator *alloc) {
  const tg_record_set *p = in->primary;
  size_t np = p->count, n = np;
  for (int g = 0; g < FB_GROUPS; ++g) n += fg[g].set ? fg[g].set->count : 0;
  tg_status st;
  tg_usage_record *recs = NULL;
  const char **names = tg__calloc(alloc, n ? n : 1, sizeof *names);
  tg_storage *where = tg__calloc(alloc, n ? n : 1, sizeof *where);
  tg_plan *plan = NULL;
  if (names == NULL || where == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto fail;
  }
  recs = tg__calloc(alloc, n ? n : 1, sizeof *recs);
  if (recs == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto fail;
  }
  /* For an offsets plan of textures the caller passes the arena form (unit 1). */
  if ((st = to_byte_records(p->records, np, in->unit, recs)) != TG_OK) goto fail;
  for (size_t r = 0; r < np; ++r) {
    names[r] = p->names ? p->names[r] : NULL;
    where[r] = in->storage;
  }
  size_t base = np;
  for (int g = 0; g < FB_GROUPS; ++g) {
    const tg_record_set *f = fg[g].set;
    for (size_t j = 0; f && j < f->count; ++j) {
      recs[base + j] = fg[g].bytes[j];
      names[base + j] = f->names ? f->names[j] : NULL;
      where[base + j] = tg_storage_fallback_at((uint32_t)g);
    }
    base += f ? f->count : 0;
  }

  uint64_t primary_bytes = 0;
  if (mode == TG_MODE_OBJECTS) {
    size_t kp = rp->primary->object_count, k = kp;
    for (int g = 0; g < FB_GROUPS; ++g) k += rp->fallback[g] ? rp->fallback[g]->object_count : 0;
    if ((st = tg_plan_create(TG_MODE_OBJECTS, 1, n, k, alloc, &plan)) != TG_OK) goto fail;
    uint64_t total = 0;
    for (size_t o = 0; o < kp; ++o) {
      uint64_t v;
      if (tg_extent_volume(rp->primary->object_sizes[o], &v) != TG_OK ||
          !tg__mul_u64(v, in->unit, &v) || !tg__add_u64(total, v, &total)) {
        st = TG_ERROR_OVERFLOW;
        goto fail;
      }
      plan->object_sizes[o] = (tg_extent){v, 1, 1};
    }
    primary_bytes = total;
    for (size_t r = 0; r < np; ++r) plan->object_of[r] = rp->primary->object_of[r];
    size_t kbase = kp;
    base = np;
    for (int g = 0; g < FB_GROUPS; ++g) {
      const tg_plan *fp = rp->fallback[g];
      if (fp == NULL) continue;
      for (size_t o = 0; o < fp->object_count; ++o) {
        uint64_t v;
        if (tg_extent_volume(fp->object_sizes[o], &v) != TG_OK || !tg__mul_u64(v, fg[g].unit, &v) ||
            !tg__add_u64(total, v, &total)) {
          st = TG_ERROR_OVERFLOW;
          goto fail;
        }
        plan->object_sizes[kbase + o] = (tg_extent){v, 1, 1};
      }
      for (size_t j = 0; j < fg[g].set->count; ++j) plan->object_of[base + j] = (uint32_t)(kbase + fp->object_of[j]);
      kbase += fp->object_count;
      base += fg[g].set->count;
    }
    plan->total = total;
  } else {
    if ((st = tg_plan_create(TG_MODE_OFFSETS, 1, n, 0, alloc, &plan)) != TG_OK) goto fail;
    /* Plans of several arenas are drawn with the arenas one above the other; each fallback
     * group's arenas above the ones before. */
    primary_bytes = rp->primary->total;
    for (size_t r = 0; r < np; ++r)
      plan->offset_of[r] = flat_offset(rp->primary, r);
    uint64_t total = primary_bytes, start = primary_bytes;
    base = np;
    for (int g = 0; g < FB_GROUPS; ++g) {
      const tg_plan *fp = rp->fallback[g];
      if (fp == NULL) continue;
      for (size_t j = 0; j < fg[g].set->count; ++j) {
        uint64_t end;
        if (!tg__add_u64(start, flat_offset(fp, j), &plan->offset_of[base + j]) ||
            !tg__add_u64(plan->offset_of[base + j], recs[base + j].size.w, &end)) {
          st = TG_ERROR_OVERFLOW;
          goto fail;
        }
        if (end > total) total = end;
      }
      if (!tg__add_u64(start, fp->total, &start)) {
        st = TG_ERROR_OVERFLOW;
        goto fail;
      }
      base += fg[g].set->count;
    }
    plan->total = total;
  }
  plan->strategy = rp->primary->strategy;
  plan->fit = rp->primary->fit;
  if ((st = tg_plan_set_in_place(plan, rp->primary->in_place, rp->primary->in_place_count)) != TG_OK) goto fail;
  ss->view_records = recs;
  ss->view_names = names;
  ss->view_storage_of = where;
  ss->view_plan = plan;
  ss->view_lower_bound = lower_bound;
  ss->view_primary_count = np;
  ss->view_primary_bytes = primary_bytes;
  return TG_OK;

fail:
  tg__free(alloc, recs);
  tg__free(alloc, (void *)names);
  tg__free(alloc, where);
  tg_plan_destroy(plan);
  return st;
}

/* Plan one record set with one mode and strategy, timing it. UNSUPPORTED passes through. */
static tg_status plan_timed(const tg_usage_record *recs, size_t count, uint32_t dims,
                            tg_mode mode, tg_strategy strategy, const tg_share_relation *rel,
                            size_t mcf_max, uint64_t max_allocation, const tg_in_place_pair *pairs,
                            size_t pair_count, const tg_allocator *alloc, tg_plan **out, uint64_t *us) {
  tg_plan_options opt = {
      .in_place = pairs, .in_place_count = pair_count, .mode = mode, .strategy = strategy,
      .fit = TG_FIT_BEST, .relation = rel, .mcf_max_records = mcf_max
  };
  /* Objects of 2D/3D records hold texels: the caller checks their bytes. */
  opt.max_allocation = mode == TG_MODE_OFFSETS || dims == 1 ? max_allocation : 0;
  uint64_t t0 = tg__now_us();
  tg_status st = tg_plan_compute(recs, count, dims, &opt, alloc, out);
  *us += tg__now_us() - t0;
  return st;
}

/* 1 when every object of an objects plan takes at most `cap` bytes (texels x `unit`). */
static int objects_within(const tg_plan *p, uint64_t unit, uint64_t cap) {
  if (p->mode != TG_MODE_OBJECTS) return 1;
  for (size_t k = 0; k < p->object_count; ++k) {
    uint64_t v = 0;
    if (tg_extent_volume(p->object_sizes[k], &v) != TG_OK || !tg__mul_u64(v, unit, &v) || v > cap) return 0;
  }
  return 1;
}

/* Validate; 1 when valid, 0 when not (message in `why`), -1 with `*st` on other errors. */
static int check_plan(const tg_usage_record *recs, size_t count, uint32_t dims, const tg_plan *p,
                      const tg_share_relation *rel, const tg_allocator *alloc, char *why,
                      tg_status *st) {
  tg_error_info verr;
  verr.message[0] = '\0';
  tg_status vs = tg_plan_validate(recs, count, dims, p, 0, rel, alloc, &verr);
  if (vs == TG_OK) return 1;
  if (vs == TG_ERROR_INVALID_PLAN) {
    if (why[0] == '\0') memcpy(why, verr.message, sizeof verr.message);
    return 0;
  }
  *st = vs;
  return -1;
}

/* Evaluate one storage: append its results to ev->results and keep its best view. */
static tg_status evaluate_storage(tg_evaluation *ev, const storage_input *in,
                                  const tg_evaluation_options *opt, const tg_allocator *alloc,
                                  tg_error_info *err) {
  const tg_record_set *p = in->primary;
  size_t np = p->count, nf = 0, nf_max = 0;
  size_t mcf_max = opt->mcf_max_records ? opt->mcf_max_records : TG_DEFAULT_MCF_MAX_RECORDS;
  storage_state *ss = &ev->state->storage[in->storage];
  tg_usage_record *arena = NULL;  /* offsets form of texture records */
  result_plans kept[2]; /* per mode: the plans of its smallest valid result */
  memset(kept, 0, sizeof kept);
  uint64_t kept_lb[2] = {0, 0};
  tg_status st;

  /* The fallback groups, each with its byte form and bounds (bytes). */
  fb_group fg[FB_GROUPS];
  memset(fg, 0, sizeof fg);
  uint64_t bf_peak = 0, shape_f = 0;
  tg_bounds bp, ba;
  if ((st = tg_bounds_compute(p->records, np, p->dims, alloc, &bp)) != TG_OK)
    return tg__error(err, st, "%s: bounds: %s", tg_storage_name(in->storage), tg_status_string(st));
  for (int g = 0; g < FB_GROUPS; ++g) {
    const tg_record_set *f = in->fallback[g];
    if (f == NULL || f->count == 0) continue;
    fg[g].set = f;
    fg[g].unit = f->dims == 1 ? 1 : tg_precision_texel_bytes(opt->precision);
    fg[g].bytes = f->records;
    nf += f->count;
    if (f->count > nf_max) nf_max = f->count;
    if (f->dims != 1) {
      fg[g].owned = tg__calloc(alloc, f->count, sizeof *fg[g].owned);
      if (fg[g].owned == NULL) {
        st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
        goto fail;
      }
      if ((st = to_byte_records(f->records, f->count, fg[g].unit, fg[g].owned)) != TG_OK) {
        st = tg__error(err, st, "%s: record bytes do not fit 64 bits", tg_storage_name(in->storage));
        goto fail;
      }
      fg[g].bytes = fg[g].owned;
    }
    tg_bounds b;
    uint64_t shape = 0;
    if ((st = tg_bounds_compute(fg[g].bytes, f->count, 1, alloc, &b)) != TG_OK ||
        (st = tg_bounds_objects_shape(f->records, f->count, f->dims, alloc, &shape)) != TG_OK) {
      st = tg__error(err, st, "%s: bounds: %s", tg_storage_name(in->storage), tg_status_string(st));
      goto fail;
    }
    if (!tg__add_u64(bf_peak, b.peak_live, &bf_peak) || !tg__mul_u64(shape, fg[g].unit, &shape) ||
        !tg__add_u64(shape_f, shape, &shape_f)) {
      st = tg__error(err, TG_ERROR_OVERFLOW, "%s: bound does not fit 64 bits", tg_storage_name(in->storage));
      goto fail;
    }
  }
  const tg_usage_record *offsets_recs = p->records;
  if (p->dims != 1 || in->unit != 1) {
    arena = tg__calloc(alloc, np ? np : 1, sizeof *arena);
    if (arena == NULL) {
      st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
      goto fail;
    }
    if ((st = to_byte_records(p->records, np, in->unit, arena)) != TG_OK) {
      st = tg__error(err, st, "%s: record bytes do not fit 64 bits", tg_storage_name(in->storage));
      goto fail;
    }
    offsets_recs = arena;
    if ((st = tg_bounds_compute(arena, np, 1, alloc, &ba)) != TG_OK) {
      st = tg__error(err, st, "%s: bounds: %s", tg_storage_name(in->storage), tg_status_string(st));
      goto fail;
    }
  } else {
    ba = bp;
  }
  /* With in-place pairs the bounds are those of the merged chains. */
  const int use_pairs = opt->in_place && in->pair_count > 0;
  tg_bounds ip_p = bp, ip_a = ba;
  if (use_pairs &&
      ((st = tg_bounds_compute_in_place(p->records, np, p->dims, in->pairs, in->pair_count, alloc, &ip_p, NULL)) !=
           TG_OK ||
       (st = tg_bounds_compute_in_place(offsets_recs, np, 1, in->pairs, in->pair_count, alloc, &ip_a, NULL)) !=
           TG_OK)) {
    st = tg__error(err, st, "%s: in-place bounds: %s", tg_storage_name(in->storage), tg_status_string(st));
    goto fail;
  }

  /* Objects plans are measured against the shape-aware bound (>= the positional maximum). */
  uint64_t shape_p = 0;
  if ((st = tg_bounds_objects_shape(p->records, np, p->dims, alloc, &shape_p)) != TG_OK) {
    st = tg__error(err, st, "%s: bounds: %s", tg_storage_name(in->storage), tg_status_string(st));
    goto fail;
  }
  if (use_pairs) {
    shape_p = ip_p.positional_max; /* the shape-aware bound holds only without the pairs */
    ba = ip_a;
  }
  /* Offsets: the subset-exact bound where it beats peak-live (not with in-place pairs): the
   * primary set's plus each fallback group's, each group being planned on its own. */
  uint64_t offsets_lb = 0;
  tg_bound_source offsets_source = TG_BOUND_PEAK_LIVE;
  int lb_fits = 1;
  for (int g = -1; g < FB_GROUPS; ++g) { /* -1: the primary set */
    tg_offsets_bound ob = {ba.peak_live, TG_BOUND_PEAK_LIVE, 0};
    if (g >= 0 && fg[g].set == NULL) continue;
    if (g >= 0 || !use_pairs) {
      st = g < 0 ? tg_bounds_offsets(offsets_recs, np, 1, 0, 0, alloc, &ob)
                 : tg_bounds_offsets(fg[g].bytes, fg[g].set->count, 1, 0, 0, alloc, &ob);
      if (st != TG_OK) {
        st = tg__error(err, st, "%s: offsets bound: %s", tg_storage_name(in->storage), tg_status_string(st));
        goto fail;
      }
    }
    if (ob.source == TG_BOUND_SUBSET_EXACT) offsets_source = TG_BOUND_SUBSET_EXACT;
    lb_fits = lb_fits && tg__add_u64(offsets_lb, ob.bytes, &offsets_lb);
  }
  if (!lb_fits) offsets_lb = UINT64_MAX;
  for (int m = 0; m < 2; ++m) {
    tg_mode mode = m == 0 ? TG_MODE_OBJECTS : TG_MODE_OFFSETS;
    const tg_usage_record *recs = mode == TG_MODE_OBJECTS ? p->records : offsets_recs;
    uint32_t dims = mode == TG_MODE_OBJECTS ? p->dims : 1;
    uint64_t unit = mode == TG_MODE_OBJECTS ? in->unit : 1;
    uint64_t lb;
    int lb_ok = mode == TG_MODE_OBJECTS
                    ? tg__mul_u64(shape_p, in->unit, &lb) && tg__add_u64(lb, shape_f, &lb)
                    : tg__add_u64(ba.peak_live, bf_peak, &lb);
    if (!lb_ok) {
      st = tg__error(err, TG_ERROR_OVERFLOW, "%s: bound does not fit 64 bits", tg_storage_name(in->storage));
      goto fail;
    }
    for (int si = 0; si < TG_STRATEGY_COUNT; ++si) {
      /* Every strategy of the mode in enum order, best last (rows exist for each; those that
       * do not plan the dimensionality are skipped rows). */
      const int s = si == TG_STRATEGY_COUNT - 1 ? TG_STRATEGY_BEST : si < TG_STRATEGY_BEST ? si : si + 1;
      if (!tg_strategy_applies((tg_strategy)s, mode, 1)) continue;
      tg_evaluation_result *r = &ev->results[ev->result_count++];
      memset(r, 0, sizeof *r);
      r->storage = in->storage;
      r->mode = mode;
      r->strategy = (tg_strategy)s;
      r->winner = (tg_strategy)s;
      r->fit = TG_FIT_BEST;
      r->lower_bound_bytes = lb;
      r->offsets_bound_bytes = mode == TG_MODE_OFFSETS ? offsets_lb : lb;
      r->offsets_bound_source = mode == TG_MODE_OFFSETS ? offsets_source : TG_BOUND_PEAK_LIVE;
      r->fallback_tensors = nf;
      if (opt->no_fallback && nf > 0) {
        r->skipped = 1;
        r->skip_reason = "a tensor does not fit this storage (no fallback)";
        continue;
      }
      if (s == TG_STRATEGY_MIN_COST_FLOW && (np > mcf_max || nf_max > mcf_max)) {
        r->skipped = 1;
        r->skip_reason = "more records than min-cost-flow's limit";
        continue;
      }
      result_plans rp;
      memset(&rp, 0, sizeof rp);
      st = plan_timed(recs, np, dims, mode, (tg_strategy)s, in->rel_primary, opt->mcf_max_records,
                      opt->max_allocation, use_pairs ? in->pairs : NULL, use_pairs ? in->pair_count : 0, alloc,
                      &rp.primary, &r->plan_us);
      for (int g = 0; g < FB_GROUPS && st == TG_OK; ++g) {
        /* Each group in its own storage: objects of its dimensionality, or its byte form. */
        if (fg[g].set == NULL) continue;
        const int obj = mode == TG_MODE_OBJECTS;
        st = plan_timed(obj ? fg[g].set->records : fg[g].bytes, fg[g].set->count, obj ? fg[g].set->dims : 1, mode,
                        (tg_strategy)s, in->rel_fallback[g], opt->mcf_max_records, opt->max_allocation, NULL, 0,
                        alloc, &rp.fallback[g], &r->plan_us);
        if (st == TG_OK && opt->max_allocation && obj &&
            !objects_within(rp.fallback[g], fg[g].unit, opt->max_allocation))
          st = TG_ERROR_LIMIT;
      }
      if (st == TG_OK && opt->max_allocation && !objects_within(rp.primary, unit, opt->max_allocation))
        st = TG_ERROR_LIMIT;
      if (st == TG_ERROR_LIMIT) {
        result_plans_clear(&rp);
        r->skipped = 1;
        r->skip_reason = "a tensor or object is larger than the allocation cap";
        continue;
      }
      if (st == TG_ERROR_UNSUPPORTED) {
        result_plans_clear(&rp);
        r->skipped = 1;
        r->skip_reason = s == TG_STRATEGY_GREEDY_COLORING
                             ? "Mini-Infer's colouring sizes pools in bytes (1D records only)"
                             : "not available in this build for this mode and dimensionality";
        continue;
      }
      if (st != TG_OK) {
        result_plans_clear(&rp);
        st = tg__error(err, st, "%s %s %s: %s", tg_storage_name(in->storage), tg_mode_name(mode),
                       tg_strategy_name((tg_strategy)s), tg_status_string(st));
        goto fail;
      }
      r->winner = rp.primary->strategy;
      r->fit = rp.primary->fit;
      int v1 = check_plan(recs, np, dims, rp.primary, in->rel_primary, alloc, r->invalid_reason, &st);
      int v2 = 1;
      for (int g = 0; g < FB_GROUPS && v1 >= 0 && v2 >= 0; ++g) {
        if (fg[g].set == NULL) continue;
        const int obj = mode == TG_MODE_OBJECTS;
        int v = check_plan(obj ? fg[g].set->records : fg[g].bytes, fg[g].set->count, obj ? fg[g].set->dims : 1,
                           rp.fallback[g], in->rel_fallback[g], alloc, r->invalid_reason, &st);
        if (v <= 0) v2 = v;
      }
      if (v1 < 0 || v2 < 0) {
        result_plans_clear(&rp);
        st = tg__error(err, st, "validator: %s", tg_status_string(st));
        goto fail;
      }
      r->valid = v1 && v2;
      uint64_t bytes, fb_bytes = 0;
      size_t fb_objects = 0, fb_arenas = 0;
      int fits = 1;
      for (int g = 0; g < FB_GROUPS; ++g) {
        const tg_plan *fp = rp.fallback[g];
        if (fp == NULL) continue;
        uint64_t v;
        fits = fits && tg__mul_u64(fp->total, mode == TG_MODE_OBJECTS ? fg[g].unit : 1, &v) &&
               tg__add_u64(fb_bytes, v, &fb_bytes);
        fb_objects += fp->object_count;
        fb_arenas += fp->arena_count;
      }
      if (!fits || !tg__mul_u64(rp.primary->total, unit, &bytes) || !tg__add_u64(bytes, fb_bytes, &bytes)) {
        result_plans_clear(&rp);
        st = tg__error(err, TG_ERROR_OVERFLOW, "%s: plan bytes do not fit 64 bits",
                       tg_storage_name(in->storage));
        goto fail;
      }
      r->bytes = bytes;
      r->objects = rp.primary->object_count + fb_objects;
      r->arenas = mode == TG_MODE_OFFSETS ? rp.primary->arena_count + fb_arenas : 0;
      if (s == TG_STRATEGY_BEST) {
        /* What `best` with the pairs needs: this plan, or one more `best` (not timed). */
        r->in_place_bytes = bytes;
        const tg_plan *ip_plan = rp.primary;
        tg_plan *extra = NULL;
        if (!use_pairs && in->pair_count > 0) {
          uint64_t ignored = 0, ib;
          st = plan_timed(recs, np, dims, mode, TG_STRATEGY_BEST, in->rel_primary, opt->mcf_max_records, opt->max_allocation, in->pairs,
                          in->pair_count, alloc, &extra, &ignored);
          if (st == TG_OK && check_plan(recs, np, dims, extra, in->rel_primary, alloc, r->invalid_reason, &st) != 1)
            st = st != TG_OK ? st : TG_ERROR_INTERNAL;
          if (st != TG_OK || !tg__mul_u64(extra->total, unit, &ib) || !tg__add_u64(ib, fb_bytes, &ib)) {
            tg_plan_destroy(extra);
            result_plans_clear(&rp);
            st = tg__error(err, st != TG_OK ? st : TG_ERROR_OVERFLOW, "%s %s best with in-place pairs: %s",
                           tg_storage_name(in->storage), tg_mode_name(mode), tg_status_string(st));
            goto fail;
          }
          r->in_place_bytes = ib;
          ip_plan = extra;
        }
        r->in_place_pairs = ip_plan->in_place_count;
        for (size_t k = 0; k < ip_plan->in_place_count; ++k) r->in_place_views += ip_plan->in_place[k].view != 0;
        tg_plan_destroy(extra);
      }
      size_t *cur = &ev->best_of_mode[in->storage][m];
      if (r->valid && (*cur == TG_EVALUATION_NONE || r->bytes < ev->results[*cur].bytes)) {
        result_plans_clear(&kept[m]);
        kept[m] = rp;
        kept_lb[m] = lb;
        *cur = ev->result_count - 1;
      } else {
        result_plans_clear(&rp);
      }
    }
  }
  /* The storage's best: the smaller mode's (ties: objects, the earlier rows). */
  const size_t *bm = ev->best_of_mode[in->storage];
  const int best_m = bm[1] != TG_EVALUATION_NONE &&
                     (bm[0] == TG_EVALUATION_NONE || ev->results[bm[1]].bytes < ev->results[bm[0]].bytes);
  if (bm[best_m] != TG_EVALUATION_NONE) {
    ev->best_of_storage[in->storage] = bm[best_m];
    /* The view of an offsets plan of textures is built from the arena (byte) records. */
    storage_input vin = *in;
    tg_record_set arena_set;
    if (best_m == 1 && arena != NULL) {
      arena_set = *p;
      arena_set.dims = 1;
      arena_set.records = arena;
      vin.primary = &arena_set;
      vin.unit = 1;
    }
    if ((st = build_view(ss, &vin, fg, best_m ? TG_MODE_OFFSETS : TG_MODE_OBJECTS, &kept[best_m],
                         kept_lb[best_m], alloc)) != TG_OK) {
      st = tg__error(err, st, "%s: view: %s", tg_storage_name(in->storage), tg_status_string(st));
      goto fail;
    }
  }
  /* Each mode's plans stay (tg_evaluation_get_parts), offsets ones with their byte records. */
  memcpy(ss->kept, kept, sizeof kept);
  if (kept[1].primary != NULL) {
    ss->offsets_primary = arena;
    arena = NULL;
    for (int g = 0; g < FB_GROUPS; ++g) {
      ss->offsets_fallback[g] = fg[g].owned;
      fg[g].owned = NULL;
    }
  }
  tg__free(alloc, arena);
  for (int g = 0; g < FB_GROUPS; ++g) tg__free(alloc, fg[g].owned);
  return TG_OK;

fail:
  for (int m = 0; m < 2; ++m) result_plans_clear(&kept[m]);
  tg__free(alloc, arena);
  for (int g = 0; g < FB_GROUPS; ++g) tg__free(alloc, fg[g].owned);
  return st;
}

/* Results one storage can produce: objects (all strategies + best) and offsets. */
static size_t results_per_storage(void) { return (size_t)TG_STRATEGY_COUNT * 2; }

static tg_status evaluation_alloc(const tg_evaluation_options *opt, size_t storages,
                                  const tg_allocator *alloc, tg_evaluation **out) {
  tg_evaluation *ev = tg__calloc(alloc, 1, sizeof *ev);
  if (ev == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  ev->alloc = *alloc;
  ev->precision = opt->precision;
  ev->policy = opt->policy;
  ev->recommended = TG_EVALUATION_NONE;
  ev->recommended_objects = TG_EVALUATION_NONE;
  for (int s = 0; s < TG_STORAGE_COUNT; ++s)
    ev->best_of_storage[s] = ev->best_of_mode[s][0] = ev->best_of_mode[s][1] = TG_EVALUATION_NONE;
  ev->state = tg__calloc(alloc, 1, sizeof *ev->state);
  ev->results = tg__calloc(alloc, storages * results_per_storage(), sizeof *ev->results);
  if (ev->state == NULL || ev->results == NULL) {
    tg_evaluation_destroy(ev);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  *out = ev;
  return TG_OK;
}

static void pick_recommendation(tg_evaluation *ev) {
  for (size_t i = 0; i < ev->result_count; ++i) {
    const tg_evaluation_result *r = &ev->results[i];
    if (r->mode != TG_MODE_OBJECTS || r->skipped || !r->valid) continue;
    if (ev->recommended_objects == TG_EVALUATION_NONE ||
        r->bytes < ev->results[ev->recommended_objects].bytes)
      ev->recommended_objects = i;
  }
  for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
    size_t i = ev->best_of_storage[s];
    if (i == TG_EVALUATION_NONE) continue;
    if (ev->recommended == TG_EVALUATION_NONE || ev->results[i].bytes < ev->results[ev->recommended].bytes)
      ev->recommended = i;
  }
}

static tg_status check_options(const tg_evaluation_options *opt, tg_error_info *err) {
  if (tg_precision_element_bytes(opt->precision) == 0)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "unknown precision %d", (int)opt->precision);
  if (tg_policy_name(opt->policy) == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "unknown policy %d", (int)opt->policy);
  return TG_OK;
}

tg_status tg_evaluation_create_from_graph(const tg_graph *graph,
                                          const tg_evaluation_options *options,
                                          const tg_allocator *alloc, tg_evaluation **out,
                                          tg_error_info *err) {
  if (out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = NULL;
  if (graph == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "graph is NULL");
  static const tg_evaluation_options k_defaults = {0};
  const tg_evaluation_options *opt = options ? options : &k_defaults;
  tg_status st = check_options(opt, err);
  if (st != TG_OK) return st;
  alloc = tg__alloc_or_default(alloc);
  tg_device_limits def = tg_device_limits_default();
  const tg_device_limits *limits = opt->limits ? opt->limits : (opt->no_limits ? NULL : &def);

  tg_lifetimes *life = NULL;
  tg_schedule *sched = NULL;
  tg_model_relations rels;
  memset(&rels, 0, sizeof rels);
  tg_evaluation *ev = NULL;
  if ((st = tg_graph_compute_lifetimes(graph, NULL, alloc, &life, err)) != TG_OK) return st;
  if (opt->policy != TG_POLICY_SERIAL &&
      (st = tg_schedule_create(graph, NULL, alloc, &sched, err)) != TG_OK)
    goto fail;
  if ((st = evaluation_alloc(opt, TG_STORAGE_COUNT, alloc, &ev)) != TG_OK) {
    tg__error(err, st, "out of memory");
    goto fail;
  }
  ev->tensor_count = graph->tensor_count;
  ev->op_count = graph->op_count;

  size_t total_fallbacks = 0;
  for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
    tg_storage storage = (tg_storage)s;
    storage_state *ss = &ev->state->storage[s];
    if ((st = tg_model_records_create_chain(graph, life, storage, opt->precision, limits, alloc,
                                            &ss->model, err)) != TG_OK)
      goto fail;
    const tg_model_records *mr = ss->model;
    const size_t nfb = tg_model_records_fallback_count(mr);
    if (s == 0) ev->record_count = mr->records->count + nfb;
    total_fallbacks += nfb;
    storage_input in;
    memset(&in, 0, sizeof in);
    in.storage = storage;
    in.primary = mr->records;
    for (int g = 0; g < FB_GROUPS; ++g) in.fallback[g] = mr->fallbacks[tg_storage_fallback_at((uint32_t)g)].records;
    in.unit = tg_storage_dims(storage) == 1 ? 1 : tg_precision_texel_bytes(opt->precision);
    tg_in_place_pair *pairs = NULL;
    if ((st = tg_model_in_place_pairs(graph, life, mr, 1, alloc, &pairs, &in.pair_count)) != TG_OK) {
      tg__error(err, st, "%s: in-place pairs: %s", tg_storage_name(storage), tg_status_string(st));
      goto fail;
    }
    in.pairs = pairs;
    if (sched != NULL && (st = tg_model_relations_create(sched, opt->policy, mr, alloc, &rels)) != TG_OK) {
      tg__error(err, st, "%s: policy relation: %s", tg_storage_name(storage), tg_status_string(st));
      if (pairs) tg__free(alloc, pairs);
      goto fail;
    }
    in.rel_primary = tg_policy_relation_get(rels.primary);
    for (int g = 0; g < FB_GROUPS; ++g)
      in.rel_fallback[g] = tg_policy_relation_get(rels.fallback[tg_storage_fallback_at((uint32_t)g)]);
    st = evaluate_storage(ev, &in, opt, alloc, err);
    if (pairs) tg__free(alloc, pairs);
    tg_model_relations_clear(&rels);
    if (st != TG_OK) goto fail;
  }

  ev->fallbacks = tg__calloc(alloc, total_fallbacks ? total_fallbacks : 1, sizeof *ev->fallbacks);
  if (ev->fallbacks == NULL) {
    st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of memory");
    goto fail;
  }
  for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
    const tg_model_records *mr = ev->state->storage[s].model;
    for (int g = 0; g < FB_GROUPS; ++g) {
      const tg_model_fallback *f = &mr->fallbacks[tg_storage_fallback_at((uint32_t)g)];
      for (size_t j = 0; f->records && j < f->records->count; ++j) {
        tg_evaluation_fallback *fb = &ev->fallbacks[ev->fallback_count++];
        fb->storage = (tg_storage)s;
        fb->to = tg_storage_fallback_at((uint32_t)g);
        fb->tensor = f->tensor_of[j];
        fb->name = f->records->names[j];
        fb->reason = f->reasons[j];
      }
    }
  }
  pick_recommendation(ev);
  tg_schedule_destroy(sched);
  tg_lifetimes_destroy(life);
  *out = ev;
  return TG_OK;

fail:
  tg_model_relations_clear(&rels);
  tg_evaluation_destroy(ev);
  tg_schedule_destroy(sched);
  tg_lifetimes_destroy(life);
  return st;
}

tg_status tg_evaluation_create_from_records(const tg_record_set *records,
                                            const tg_evaluation_options *options,
                                            const tg_allocator *alloc, tg_evaluation **out,
                                            tg_error_info *err) {
  if (out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "out is NULL");
  *out = NULL;
  if (records == NULL || records->dims < 1 || records->dims > 3 ||
      (records->records == NULL && records->count > 0))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "records are NULL or of unknown dimensionality");
  static const tg_evaluation_options k_defaults = {0};
  const tg_evaluation_options *opt = options ? options : &k_defaults;
  tg_status st = check_options(opt, err);
  if (st != TG_OK) return st;
  if (opt->policy != TG_POLICY_SERIAL)
    return tg__error(err, TG_ERROR_UNSUPPORTED,
                     "the %s policy needs a graph; usage records support only serial",
                     tg_policy_name(opt->policy));
  alloc = tg__alloc_or_default(alloc);
  tg_evaluation *ev = NULL;
  if ((st = evaluation_alloc(opt, 1, alloc, &ev)) != TG_OK)
    return tg__error(err, st, "out of memory");
  ev->from_records = 1;
  ev->input_dims = records->dims;
  ev->tensor_count = records->count;
  ev->record_count = records->count;
  size_t tasks = 0;
  for (size_t r = 0; r < records->count; ++r)
    if ((size_t)records->records[r].last_task + 1 > tasks) tasks = (size_t)records->records[r].last_task + 1;
  ev->op_count = tasks;

  /* A private copy: the views keep pointers to names. */
  tg_record_set *copy = NULL;
  if ((st = tg_record_set_create(records->dims, records->count, alloc, &copy)) != TG_OK) goto oom;
  ev->state->input_copy = copy;
  if (records->count) memcpy(copy->records, records->records, records->count * sizeof *copy->records);
  for (size_t r = 0; r < records->count; ++r)
    if (records->names && records->names[r] &&
        (st = tg_record_set_set_name(copy, r, records->names[r])) != TG_OK)
      goto oom;

  storage_input in;
  memset(&in, 0, sizeof in);
  in.storage = records->dims == 1 ? TG_STORAGE_BUFFER
               : records->dims == 2 ? TG_STORAGE_TEXTURE_2D : TG_STORAGE_TEXTURE_3D;
  in.primary = copy;
  in.unit = records->dims == 1 ? 1 : tg_precision_texel_bytes(opt->precision);
  if ((st = evaluate_storage(ev, &in, opt, alloc, err)) != TG_OK) {
    tg_evaluation_destroy(ev);
    return st;
  }
  pick_recommendation(ev);
  *out = ev;
  return TG_OK;

oom:
  tg_evaluation_destroy(ev);
  return tg__error(err, st, "out of memory");
}

tg_status tg_evaluation_get_view(const tg_evaluation *ev, size_t index, tg_report_view *out) {
  if (ev == NULL || out == NULL || index >= ev->result_count) return TG_ERROR_INVALID_ARGUMENT;
  const tg_evaluation_result *r = &ev->results[index];
  if (ev->best_of_storage[r->storage] != index) return TG_ERROR_INVALID_ARGUMENT;
  const storage_state *ss = &ev->state->storage[r->storage];
  if (ss->view_plan == NULL) return TG_ERROR_INVALID_ARGUMENT;
  out->storage = r->storage;
  out->mode = r->mode;
  out->count = ss->view_plan->record_count;
  out->records = ss->view_records;
  out->names = ss->view_names;
  out->storage_of = ss->view_storage_of;
  out->plan = ss->view_plan;
  out->lower_bound = ss->view_lower_bound;
  out->primary_count = ss->view_primary_count;
  out->primary_bytes = ss->view_primary_bytes;
  return TG_OK;
}

tg_status tg_evaluation_get_parts(const tg_evaluation *ev, size_t index, tg_evaluation_part *parts,
                                  size_t *count) {
  if (ev == NULL || parts == NULL || count == NULL || index >= ev->result_count) return TG_ERROR_INVALID_ARGUMENT;
  const tg_evaluation_result *r = &ev->results[index];
  const int m = r->mode == TG_MODE_OFFSETS;
  const storage_state *ss = &ev->state->storage[r->storage];
  if (ev->best_of_mode[r->storage][m] != index || ss->kept[m].primary == NULL) return TG_ERROR_INVALID_ARGUMENT;
  const tg_model_records *mr = ss->model;
  const tg_record_set *primary = mr ? mr->records : ev->state->input_copy;
  size_t n = 0;
  parts[n++] = (tg_evaluation_part){r->storage, primary,
                                    m && ss->offsets_primary ? ss->offsets_primary : primary->records,
                                    mr ? mr->tensor_of : NULL, ss->kept[m].primary};
  for (int g = 0; mr && g < FB_GROUPS; ++g) {
    const tg_plan *plan = ss->kept[m].fallback[g];
    if (plan == NULL) continue;
    const tg_storage s = tg_storage_fallback_at((uint32_t)g);
    const tg_model_fallback *f = &mr->fallbacks[s];
    parts[n++] = (tg_evaluation_part){s, f->records,
                                      m && ss->offsets_fallback[g] ? ss->offsets_fallback[g] : f->records->records,
                                      f->tensor_of, plan};
  }
  *count = n;
  return TG_OK;
}

const tg_model_records *tg_evaluation_get_records(const tg_evaluation *ev, tg_storage storage) {
  if (ev == NULL || (unsigned)storage >= TG_STORAGE_COUNT) return NULL;
  return ev->state->storage[storage].model;
}

/* "texture_3d objects (greedy-by-size)"; `best` rows name their winner; a storage most of
 * whose tensors fall back says so, or the comparison would mislead. */
static void describe_result(const tg_evaluation *ev, const tg_evaluation_result *r, char *buf,
                            size_t size) {
  char fallback[64] = "";
  if (r->fallback_tensors)
    snprintf(fallback, sizeof fallback, "; %zu of %zu tensors fall back", r->fallback_tensors,
             ev->record_count);
  snprintf(buf, size, "%s %s (%s%s%s)", tg_storage_name(r->storage), tg_mode_name(r->mode),
           r->strategy == TG_STRATEGY_BEST ? "best = " : "", tg_strategy_name(r->winner), fallback);
}

const char *tg_evaluation_describe(const tg_evaluation *ev, char *buf, size_t size) {
  if (buf == NULL || size == 0) return buf;
  buf[0] = '\0';
  if (ev == NULL || ev->recommended == TG_EVALUATION_NONE) {
    snprintf(buf, size, "no valid plan to recommend");
    return buf;
  }
  const tg_evaluation_result *rec = &ev->results[ev->recommended];
  char what[192], bytes[32];
  describe_result(ev, rec, what, sizeof what);
  tg_report_format_bytes(rec->bytes, bytes, sizeof bytes);
  /* Compare with buffer's best: the storage people start from. When a buffer wins, compare
   * with the best texture, since "texture or buffer?" is the question people ask. */
  size_t other = TG_EVALUATION_NONE;
  if (rec->storage != TG_STORAGE_BUFFER) {
    other = ev->best_of_storage[TG_STORAGE_BUFFER];
  } else {
    for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
      size_t i = ev->best_of_storage[s];
      if (i == TG_EVALUATION_NONE || !tg_storage_is_texture((tg_storage)s)) continue;
      if (other == TG_EVALUATION_NONE || ev->results[i].bytes < ev->results[other].bytes) other = i;
    }
  }
  if (other == TG_EVALUATION_NONE) {
    snprintf(buf, size, "least memory: %s: %s", what, bytes);
    return buf;
  }
  const tg_evaluation_result *o = &ev->results[other];
  char owhat[192];
  describe_result(ev, o, owhat, sizeof owhat);
  if (o->bytes == 0 || o->bytes == rec->bytes) {
    snprintf(buf, size, "least memory: %s: %s, the same as %s", what, bytes, owhat);
    return buf;
  }
  double pct = 100.0 * (1.0 - (double)rec->bytes / (double)o->bytes);
  /* Whole percent reads best; below 1% one decimal, and below 0.1% the bytes themselves, so the
   * sentence never says "0% less". */
  if (pct >= 0.1)
    snprintf(buf, size, "least memory: %s: %s, %.*f%% less than %s", what, bytes, pct < 1.0 ? 1 : 0,
             pct, owhat);
  else
    snprintf(buf, size, "least memory: %s: %s, %llu bytes less than %s", what, bytes,
             (unsigned long long)(o->bytes - rec->bytes), owhat);
  return buf;
}
