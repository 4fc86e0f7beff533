/* `tangram run`'s plans (tools/run_plan.h): a model's records for one storage on a device, the
 * in-place pairs this model, storage and device allow, the policy's relations, the primary
 * plan and each fallback group's, and the bounds; or a plan file's plan checked against all of
 * that. */
#include <string.h>

#include "tools/plan_file_cli.h"
#include "tools/run_plan.h"

void tg_cli_storage_plan_free(tg_cli_storage_plan *sp) {
  if (sp->pairs) tg__free(sp->in.alloc, sp->pairs);
  tg_plan_destroy(sp->plan);
  tg_record_set_destroy(sp->arena_records);
  tg__free(sp->in.alloc, sp->resources);
  for (int g = 0; g < TG_STORAGE_FALLBACK_COUNT; ++g) {
    tg_plan_destroy(sp->fb[g].plan);
    tg_record_set_destroy(sp->fb[g].arena);
    tg__free(sp->in.alloc, sp->fb[g].resources);
  }
  tg_cli_input_free(&sp->in);
  memset(sp, 0, sizeof *sp);
}

/* Bytes of a plan over `set` with `resources`. */
static uint64_t plan_bytes(const tg_plan *p, tg_precision precision) {
  if (p == NULL) return 0;
  if (p->mode == TG_MODE_OFFSETS || p->dims == 1) return p->total;
  return p->total * tg_precision_texel_bytes(precision);
}

/* What the device creates for `set` in `storage` and, in offsets mode, the records to plan:
 * the device's real sizes and alignments (`*arena`; NULL in objects mode). */
static tg_status device_records(tg_device *dev, const tg_record_set *set, tg_storage storage, tg_precision precision,
                                tg_mode mode, const tg_allocator *alloc, tg_tensor_resource **res,
                                tg_record_set **arena) {
  *arena = NULL;
  tg_status st = tg_cli_resources(set, storage, precision, alloc, res);
  if (st == TG_OK && mode == TG_MODE_OFFSETS)
    st = tg_device_compute_arena_records(dev, *res, set->records, set->count, precision, alloc, arena);
  return st;
}

/* Plan one record set on the device (`planned`: the records or their arena records). */
static tg_status plan_records(const tg_record_set *planned, tg_mode mode, tg_strategy strategy,
                              const tg_share_relation *relation, const tg_in_place_pair *pairs, size_t pair_count,
                              uint32_t time_limit_ms, uint64_t max_allocation, const tg_allocator *alloc,
                              tg_plan **plan) {
  tg_plan_options opt = {0};
  opt.in_place = pairs;
  opt.in_place_count = pair_count;
  if (strategy == TG_STRATEGY_BEST) opt.time_limit_ms = time_limit_ms;
  opt.mode = mode;
  opt.strategy = strategy;
  opt.relation = relation;
  opt.max_allocation = max_allocation;
  return tg_plan_compute(planned->records, planned->count, planned->dims, &opt, alloc, plan);
}

/* Under the allocation cap: every tensor, and every object of an objects plan (`plan`, may be
 * NULL), at most `cap` bytes; else TG_ERROR_LIMIT naming the tensor (for an object, its
 * largest). */
static tg_status check_cap(const tg_record_set *set, const tg_plan *plan, tg_precision precision,
                           uint64_t cap, tg_error_info *err) {
  if (cap == 0) return TG_OK;
  uint64_t unit = set->dims == 1 ? 1 : tg_precision_texel_bytes(precision);
  for (size_t r = 0; r < set->count && plan == NULL; ++r) {
    uint64_t v = 0, bytes = UINT64_MAX;
    if (tg_extent_volume(set->records[r].size, &v) == TG_OK && tg__mul_u64(v, unit, &bytes) && bytes <= cap)
      continue;
    return tg__error(err, TG_ERROR_LIMIT, "tensor %s (%llu bytes) is larger than the allocation cap %llu bytes",
                     set->names[r] ? set->names[r] : "?", (unsigned long long)bytes, (unsigned long long)cap);
  }
  if (plan == NULL || plan->mode != TG_MODE_OBJECTS) return TG_OK;
  for (size_t k = 0; k < plan->object_count; ++k) {
    uint64_t v = 0, bytes = UINT64_MAX;
    if (tg_extent_volume(plan->object_sizes[k], &v) == TG_OK && tg__mul_u64(v, unit, &bytes) && bytes <= cap)
      continue;
    size_t big = 0;
    uint64_t big_v = 0;
    for (size_t r = 0, seen = 0; r < set->count; ++r) {
      uint64_t rv = 0;
      if (plan->object_of[r] == k && tg_extent_volume(set->records[r].size, &rv) == TG_OK && (!seen || rv > big_v))
        big = r, big_v = rv, seen = 1;
    }
    return tg__error(err, TG_ERROR_LIMIT,
                     "object %zu (%llu bytes) is larger than the allocation cap %llu bytes; its largest "
                     "tensor is %s", k, (unsigned long long)bytes, (unsigned long long)cap,
                     set->names[big] ? set->names[big] : "?");
  }
  return TG_OK;
}

/* The naive total and the lower bound of a record set's plans in `mode`: peak live for
 * offsets, the shape-aware bound (>= the positional maximum) for objects. */
static tg_status set_bounds(const tg_record_set *set, tg_mode mode, const tg_allocator *alloc,
                            uint64_t *naive, uint64_t *lb) {
  tg_bounds b;
  tg_status st = tg_bounds_compute(set->records, set->count, set->dims, alloc, &b);
  if (st != TG_OK) return st;
  *naive = b.naive;
  *lb = b.peak_live;
  return mode == TG_MODE_OBJECTS ? tg_bounds_objects_shape(set->records, set->count, set->dims, alloc, lb)
                                 : TG_OK;
}

/* Load MODEL's records for `storage` and check that they and the device can hold it: record
 * files of 2D/3D extents hold texels, which only a texture storage of as many dimensions
 * realises; textures need image support; images in offsets mode need images in an arena
 * (`*mode` becomes objects, with a note, unless `from_file`, where that is an error). */
static tg_status storage_load(tg_device *dev, const char *path, tg_storage storage, tg_precision precision,
                              tg_mode *mode, int plan_io, const tg_model_options *shapes,
                              const tg_device_limits *limits, int from_file, const tg_allocator *alloc,
                              tg_cli_storage_plan *sp, tg_error_info *err) {
  memset(sp, 0, sizeof *sp);
  const tg_device_info *info = tg_device_get_info(dev);
  sp->storage = storage;
  tg_cli_input_options io = {storage, precision, plan_io, limits, shapes, 1, 1};
  tg_status st = tg_cli_input_load(path, &io, alloc, &sp->in, err);
  if (st != TG_OK) return st;
  const uint32_t dims = sp->in.records->dims;
  const int texture = tg_storage_is_texture(storage);
  if ((dims > 1 && !texture) || (dims == 3 && tg_storage_dims(storage) != 3))
    st = tg__error(err, TG_ERROR_UNSUPPORTED, "the records are %uD texel extents, which %s cannot hold", dims,
                   tg_storage_name(storage));
  else if (texture && !info->images)
    st = tg__error(err, TG_ERROR_UNSUPPORTED, "%s: the device has no image support", tg_storage_name(storage));
  else if (texture && *mode == TG_MODE_OFFSETS && !info->arena_images && from_file)
    st = tg__error(err, TG_ERROR_UNSUPPORTED, "the plan places %s tensors in one arena; this device cannot",
                   tg_storage_name(storage));
  if (st != TG_OK) {
    tg_cli_storage_plan_free(sp);
    return st;
  }
  if (texture && *mode == TG_MODE_OFFSETS && !info->arena_images) {
    *mode = TG_MODE_OBJECTS;
    sp->note = "this device cannot place images in an arena: textures use objects mode";
  }
  return TG_OK;
}

/* The primary records' resources, their arena records (offsets mode) and, with `in_place`,
 * the pairs this model, storage and device allow over them. */
static tg_status storage_records(tg_device *dev, tg_cli_storage_plan *sp, tg_precision precision, int in_place,
                                 uint64_t max_allocation, tg_error_info *err) {
  const tg_record_set *set = sp->in.records;
  tg_status st = device_records(dev, set, sp->storage, precision, sp->mode, sp->in.alloc, &sp->resources,
                                &sp->arena_records);
  if (st != TG_OK) return tg__error(err, st, "%s records on the device: %s", tg_storage_name(sp->storage),
                                    tg_status_string(st));
  sp->planned = sp->arena_records ? sp->arena_records : set;
  if ((st = check_cap(set, NULL, precision, max_allocation, err)) != TG_OK) return st;
  if (!in_place) return TG_OK;
  st = tg_cli_device_pairs(&sp->in, tg_device_get_info(dev)->read_write_images, sp->planned, &sp->pairs,
                           &sp->pair_count);
  return st == TG_OK ? TG_OK : tg__error(err, st, "in-place pairs: %s", tg_status_string(st));
}

/* Tensors that do not fit the storage: each group of the fallback chain planned in its own
 * storage, under the policy's relation over the group's records. Textures use objects mode
 * where the device cannot place images in an arena. */
static tg_status plan_fallbacks(tg_device *dev, tg_cli_storage_plan *sp, tg_precision precision, tg_mode mode,
                                tg_strategy strategy, const tg_model_relations *rels, uint32_t time_limit_ms,
                                uint64_t max_allocation, int no_fallback, tg_error_info *err) {
  const tg_device_info *info = tg_device_get_info(dev);
  const tg_model_records *mr = sp->in.model_records;
  for (int g = 0; mr && g < TG_STORAGE_FALLBACK_COUNT; ++g) {
    const tg_storage fs = tg_storage_fallback_at((uint32_t)g);
    const tg_model_fallback *grp = &mr->fallbacks[fs];
    const tg_record_set *fb = grp->records;
    if (fb == NULL || fb->count == 0) continue;
    if (no_fallback)
      return tg__error(err, TG_ERROR_LIMIT, "tensor %s does not fit %s: %s (--no-fallback)",
                       fb->names[0] ? fb->names[0] : "?", tg_storage_name(sp->storage), grp->reasons[0]);
    tg_cli_fallback_plan *fp = &sp->fb[g];
    fp->group = grp;
    const int texture = tg_storage_is_texture(fs);
    if (texture && !info->images)
      return tg__error(err, TG_ERROR_UNSUPPORTED, "tensor %s falls back to %s: the device has no image support",
                       fb->names[0] ? fb->names[0] : "?", tg_storage_name(fs));
    tg_mode fmode = (texture && mode == TG_MODE_OFFSETS && !info->arena_images) ? TG_MODE_OBJECTS : mode;
    tg_strategy fstrategy = tg_strategy_applies(strategy, fmode, fmode == TG_MODE_OBJECTS ? fb->dims : 1)
                                ? strategy : TG_STRATEGY_BEST;
    tg_status st = device_records(dev, fb, fs, precision, fmode, sp->in.alloc, &fp->resources, &fp->arena);
    if (st == TG_OK && (st = check_cap(fb, NULL, precision, max_allocation, err)) != TG_OK) return st;
    if (st == TG_OK)
      st = plan_records(fp->arena ? fp->arena : fb, fmode, fstrategy, tg_policy_relation_get(rels->fallback[fs]),
                        NULL, 0, time_limit_ms, max_allocation, sp->in.alloc, &fp->plan);
    if (st != TG_OK)
      return tg__error(err, st, "planning the tensors that fall back to %s failed: %s", tg_storage_name(fs),
                       tg_status_string(st));
    if ((st = check_cap(fb, fp->plan, precision, max_allocation, err)) != TG_OK) return st;
  }
  return TG_OK;
}

/* Bytes, naive total and lower bound of a storage plan, its fallback groups' included; the
 * in-place bound when the plan may use pairs. */
static tg_status storage_bounds(tg_cli_storage_plan *sp, tg_precision precision, tg_error_info *err) {
  const tg_allocator *alloc = sp->in.alloc;
  sp->bytes = plan_bytes(sp->plan, precision);
  for (int g = 0; g < TG_STORAGE_FALLBACK_COUNT; ++g) sp->bytes += plan_bytes(sp->fb[g].plan, precision);
  uint64_t naive, lb;
  tg_status st = set_bounds(sp->planned, sp->mode, alloc, &naive, &lb);
  if (st == TG_OK && sp->pair_count > 0) {
    tg_bounds ib;
    st = tg_bounds_compute_in_place(sp->planned->records, sp->planned->count, sp->planned->dims, sp->pairs,
                                    sp->pair_count, alloc, &ib, NULL);
    lb = sp->mode == TG_MODE_OBJECTS ? ib.positional_max : ib.peak_live;
  }
  if (st != TG_OK) return tg__error(err, st, "bounds: %s", tg_status_string(st));
  uint64_t unit = (sp->planned->dims == 1) ? 1 : tg_precision_texel_bytes(precision);
  sp->naive_bytes = naive * unit;
  sp->lower_bound_bytes = lb * unit;
  for (int g = 0; g < TG_STORAGE_FALLBACK_COUNT; ++g) {
    const tg_cli_fallback_plan *fp = &sp->fb[g];
    if (fp->plan == NULL) continue;
    const tg_record_set *fs = fp->arena ? fp->arena : fp->group->records;
    if ((st = set_bounds(fs, fp->plan->mode, alloc, &naive, &lb)) != TG_OK)
      return tg__error(err, st, "bounds: %s", tg_status_string(st));
    const uint64_t funit = fs->dims == 1 ? 1 : tg_precision_texel_bytes(precision);
    sp->naive_bytes += naive * funit;
    sp->lower_bound_bytes += lb * funit;
  }
  return TG_OK;
}

tg_status tg_cli_storage_plan_build(tg_device *dev, const char *path, tg_storage storage,
                                    tg_precision precision, tg_mode mode, tg_strategy strategy,
                                    tg_policy policy, int plan_io, int in_place, uint32_t time_limit_ms,
                                    const tg_model_options *shapes,
                                    uint64_t max_allocation, const tg_device_limits *limits, int no_fallback,
                                    const tg_allocator *alloc, tg_cli_storage_plan *sp, tg_error_info *err) {
  const tg_mode asked = mode;
  tg_status st = storage_load(dev, path, storage, precision, &mode, plan_io, shapes, limits, 0, alloc, sp, err);
  if (st != TG_OK) return st;
  if (mode != asked && !tg_strategy_applies(strategy, mode, tg_storage_dims(storage))) {
    strategy = TG_STRATEGY_BEST;
    sp->note = "this device cannot place images in an arena: textures use objects mode, and "
               "strategy best (the one asked for plans offsets only)";
  }
  sp->mode = mode;
  sp->strategy = strategy;
  tg_model_relations rels;
  memset(&rels, 0, sizeof rels);
  uint64_t t0 = tg__now_us();
  if ((st = storage_records(dev, sp, precision, in_place, max_allocation, err)) != TG_OK ||
      (st = tg_cli_input_relations(&sp->in, policy, &rels, err)) != TG_OK)
    goto fail;
  st = plan_records(sp->planned, mode, strategy, tg_policy_relation_get(rels.primary), sp->pairs, sp->pair_count,
                    time_limit_ms, max_allocation, alloc, &sp->plan);
  if (st != TG_OK) {
    tg__error(err, st, "planning %s failed: %s", tg_storage_name(storage), tg_status_string(st));
    goto fail;
  }
  if ((st = check_cap(sp->in.records, sp->plan, precision, max_allocation, err)) != TG_OK ||
      (st = plan_fallbacks(dev, sp, precision, mode, strategy, &rels, time_limit_ms, max_allocation, no_fallback,
                           err)) != TG_OK)
    goto fail;
  sp->plan_us = tg__now_us() - t0;
  if ((st = storage_bounds(sp, precision, err)) != TG_OK) goto fail;
  tg_model_relations_clear(&rels);
  return TG_OK;
fail:
  tg_model_relations_clear(&rels);
  tg_cli_storage_plan_free(sp);
  return st;
}

tg_status tg_cli_storage_plan_from_file(tg_device *dev, const char *path, tg_plan_file *pf,
                                              int plan_io, const tg_model_options *shapes,
                                              uint64_t max_allocation, const tg_device_limits *limits,
                                              const tg_allocator *alloc, tg_cli_storage_plan *sp,
                                              tg_error_info *err) {
  tg_mode mode = pf->plan->mode;
  tg_status st = storage_load(dev, path, pf->storage, pf->precision, &mode, plan_io, shapes, limits, 1, alloc, sp,
                              err);
  if (st != TG_OK) return st;
  sp->mode = mode;
  sp->strategy = pf->strategy;
  const tg_record_set *set = sp->in.records;
  tg_storage to = TG_STORAGE_BUFFER;
  const tg_model_fallback *first = tg_cli_first_fallback(sp->in.model_records, &to);
  uint64_t t0 = tg__now_us();
  tg_policy_relation *rel = NULL;
  if (first)
    st = tg__error(err, TG_ERROR_LIMIT, "%zu tensors of %s do not fit %s on this device (first: %s: %s); the plan "
                   "needs all of them there", tg_model_records_fallback_count(sp->in.model_records), path,
                   tg_storage_name(pf->storage), first->records->names[0] ? first->records->names[0] : "?",
                   first->reasons[0]);
  else if ((st = storage_records(dev, sp, pf->precision, pf->plan->in_place_count > 0, 0, err)) == TG_OK &&
           (st = tg_cli_input_relation(&sp->in, pf->policy, &rel, err)) == TG_OK &&
           (st = tg_plan_file_match(pf, set->records, (const char *const *)set->names, set->count, set->dims,
                                    tg_policy_relation_get(rel), alloc, err)) == TG_OK)
    st = tg_cli_plan_file_check_pairs(pf->plan, &sp->in, tg_device_get_info(dev)->read_write_images, sp->pairs,
                                      sp->pair_count, err);
  tg_policy_relation_destroy(rel);
  if (st == TG_OK && sp->mode == TG_MODE_OFFSETS) {
    /* The device's real sizes and alignments: the plan must hold for them too. */
    tg_error_info verr = {{0}};
    st = tg_plan_validate(sp->arena_records->records, set->count, 1, pf->plan, pf->alignment, NULL, alloc, &verr);
    if (st == TG_ERROR_INVALID_PLAN) {
      uint64_t need = 1; /* the largest alignment the device asks of these tensors */
      for (size_t r = 0; r < set->count; ++r)
        if (sp->arena_records->records[r].alignment > need) need = sp->arena_records->records[r].alignment;
      st = tg__error(err, TG_ERROR_LIMIT, "the plan's offsets do not meet this device's sizes and alignments "
                     "(plan with --alignment %llu): %s", (unsigned long long)need, verr.message);
    }
  }
  /* Then the cap and the limits the plan was made under, against this device's. */
  if (st == TG_OK) st = tg_cli_plan_file_check_device(pf, max_allocation, limits, err);
  if (st != TG_OK) {
    tg_cli_storage_plan_free(sp);
    return st;
  }
  sp->plan = pf->plan;
  pf->plan = NULL;
  sp->plan_us = tg__now_us() - t0;
  if ((st = storage_bounds(sp, pf->precision, err)) != TG_OK) tg_cli_storage_plan_free(sp);
  return st;
}

void tg_cli_storage_plan_lp_bound(tg_cli_storage_plan *sp, tg_precision precision) {
  uint64_t shape_lb = 0, naive_unused = 0, lp = 0;
  const tg_record_set *pl = sp->planned;
  const tg_allocator *alloc = sp->in.alloc;
  tg_bounds ib;
  tg_status st = set_bounds(pl, TG_MODE_OBJECTS, alloc, &naive_unused, &shape_lb);
  if (st == TG_OK && sp->pair_count > 0) {
    st = tg_bounds_compute_in_place(pl->records, pl->count, pl->dims, sp->pairs, sp->pair_count, alloc, &ib, &lp);
    shape_lb = ib.positional_max;
  } else if (st == TG_OK) {
    st = tg_bounds_objects_lp(pl->records, pl->count, pl->dims, 0, 0, alloc, &lp);
  }
  const uint64_t unit = pl->dims == 1 ? 1 : tg_precision_texel_bytes(precision);
  if (st == TG_OK && lp > shape_lb) sp->lower_bound_bytes += (lp - shape_lb) * unit;
}
