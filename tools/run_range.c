/* `tangram run` over a range of input sizes (tools/run_range.h). The model is loaded over the
 * range; the plan over it is computed (offsets mode over the device's own sizes and
 * alignments at every size) or read from a plan file and matched; the allocations are made
 * once with room for every size asked (or, with --grow, for the first, twice as large when a
 * size no longer fits); then, size after size, the plan is instantiated there, the tensors
 * re-offset in the same allocations, and the on-device check run. */
#include <stdio.h>
#include <string.h>

#include "tangram/range_plan.h"
#include "tangram/report.h"
#include "tangram/schedule.h"
#include "tools/cli.h"
#include "tools/range_cli.h"
#include "tools/run_range.h"

/* What happened at one size. */
typedef struct size_result {
  uint64_t bytes, capacity, instantiate_us, reoffset_us, check_us, checked_bytes, corrupted, views_remade;
  uint64_t allocations;
  int created;  /* allocated at this size (the first, or grown) */
} size_result;

typedef struct range_run {
  const tg_cli_run_range_args *a;
  const tg_allocator *alloc;
  tg_error_info err;
  tg_device *dev;
  const tg_device_info *info;
  tg_backend_skip skipped[TG_BACKEND_COUNT];
  size_t nskipped;
  tg_model_options options;           /* the input shapes the model is loaded with */
  tg_model_range *mr;
  size_t n;
  uint32_t dims;                      /* of the model's records (tensor extents) */
  tg_range_records *arena;            /* offsets, planned here: the device's sizes at every size */
  const tg_range_records *planned;    /* what the plan is over: arena or mr->primary */
  tg_policy_relation *relation;
  tg_range_plan *rp;
  uint64_t plan_us;
  tg_cli_sizes sizes;
  tg_usage_record *recs;              /* the plan's records at a size */
  tg_usage_record *tensors;           /* the model's records at a size */
  tg_tensor_resource *res;            /* what each tensor is there */
  tg_record_set *arena_set;           /* offsets: the device's records there */
  tg_plan *inst;
  uint32_t *run_order;
  size_t run_order_length;
  uint32_t *slot;                     /* objects: the allocation of object o of structure s, at
                                         [s * room_count + o] */
  tg_extent *scratch;                 /* objects: room_count extents */
  tg_extent *room;                    /* capacity: per allocation */
  size_t room_count;
  size_result *results;
  uint64_t allocations, reallocations;
} range_run;

static void run_free(range_run *r) {
  const tg_allocator *a = r->alloc;
  tg__free(a, r->results);
  tg__free(a, r->room);
  tg__free(a, r->slot);
  tg__free(a, r->scratch);
  tg__free(a, r->run_order);
  tg_plan_destroy(r->inst);
  tg_record_set_destroy(r->arena_set);
  tg__free(a, r->res);
  tg__free(a, r->tensors);
  tg__free(a, r->recs);
  tg_cli_sizes_free(&r->sizes);
  tg_range_plan_destroy(r->rp);
  tg_policy_relation_destroy(r->relation);
  tg_range_records_destroy(r->arena);
  tg_model_range_destroy(r->mr);
  tg_device_close(r->dev);
}

/* The sizes asked for: --sizes, the one size of --input-shape with a plan file (each dynamic
 * dimension's value where the file's shapes vary), or both ends and six between. Returns an
 * exit code. */
static int choose_sizes(range_run *r) {
  const tg_cli_run_range_args *a = r->a;
  if (a->sizes) return tg_cli_sizes_parse("run", a->sizes, r->mr, r->alloc, &r->sizes);
  if (a->plan_file != NULL && a->shapes->options.input_shape_count > 0) {
    int64_t dims[TG_RANGE_MAX_DIMS] = {0, 0};
    for (size_t k = 0; k < r->mr->axis_count; ++k) {
      const tg_model_range_axis *x = &r->mr->axes[k];
      const char *name = r->options.input_shapes[x->option].name;
      const tg_input_shape *given = NULL;
      for (size_t i = 0; i < a->shapes->options.input_shape_count; ++i)
        if (strcmp(a->shapes->options.input_shapes[i].name, name) == 0) given = &a->shapes->options.input_shapes[i];
      if (given == NULL || given->rank <= x->axis) {
        tg_cli_error("run: --input-shape: the plan varies input '%s' (dimension %u): give its shape at one size, "
                     "or leave --input-shape out to run the plan's sizes", name, x->axis);
        return TG_EXIT_USAGE;
      }
      dims[x->dim] = given->dims[x->axis];
    }
    return tg_cli_sizes_single("run", "--input-shape", r->mr, dims, r->alloc, &r->sizes);
  }
  return tg_cli_sizes_default("run", &r->mr->range, 0, TG_CLI_RUN_SIZES_BETWEEN, r->alloc, &r->sizes);
}

/* The input shapes to load the model with: --input-shape's ranges, or the plan file's (with
 * --input-shape at one size: each given shape must be the file's where the file does not
 * vary). 0 with the reason printed. */
static int choose_shapes(range_run *r) {
  const tg_cli_run_range_args *a = r->a;
  const tg_plan_file *pf = a->plan_file;
  const tg_model_options *given = &a->shapes->options;
  const int ranged = tg_cli_range_given(given);
  if (pf == NULL || ranged) {
    if (!ranged) {
      tg_cli_error("run: --sizes and --grow need a range in --input-shape (e.g. x:1x3x48x32..1600/8)");
      return 0;
    }
    r->options = *given;
    return 1;
  }
  if (pf->input_shape_count == 0) {
    tg_cli_error("run: --plan %s: the file holds no input shapes: give --input-shape with the range it was made for",
                 a->plan_path);
    return 0;
  }
  for (size_t i = 0; i < given->input_shape_count; ++i) {
    const tg_input_shape *s = &given->input_shapes[i], *mine = NULL;
    for (size_t k = 0; k < pf->input_shape_count; ++k)
      if (strcmp(pf->input_shapes[k].name, s->name) == 0) mine = &pf->input_shapes[k];
    int same = mine != NULL && mine->rank == s->rank;
    for (uint32_t d = 0; same && d < s->rank; ++d) same = mine->range[d].step != 0 || mine->dims[d] == s->dims[d];
    if (!same) {
      tg_cli_error("run: --input-shape %s: the plan %s was made for %s", s->name, a->plan_path,
                   mine ? "another shape of this input (its fixed dimensions differ)" : "models without this input");
      return 0;
    }
  }
  r->options.input_shapes = pf->input_shapes;
  r->options.input_shape_count = pf->input_shape_count;
  return 1;
}

static tg_status load_model(range_run *r) {
  const tg_cli_run_range_args *a = r->a;
  tg_model_range_desc d;
  memset(&d, 0, sizeof d);
  d.options = &r->options;
  d.storage = a->storage;
  d.precision = a->precision;
  d.limits = &r->info->limits;
  d.plan_io = a->plan_io;
  d.chain = 1;
  d.in_place_images = r->info->read_write_images;
  tg_status st = tg_model_range_load(a->file, &d, r->alloc, &r->mr, &r->err);
  if (st != TG_OK) return st;
  const tg_model_records *m = r->mr->records;
  size_t fallen = tg_model_records_fallback_count(m);
  if (fallen > 0)
    return tg__error(&r->err, TG_ERROR_INVALID_ARGUMENT,
                     "%zu tensors do not fit %s on this device and fall back to other storages; a range runs one "
                     "storage: choose another --storage", fallen, tg_storage_name(a->storage));
  r->n = m->records->count;
  r->dims = m->records->dims;
  if (tg_storage_is_texture(a->storage) && !r->info->images)
    return tg__error(&r->err, TG_ERROR_UNSUPPORTED, "%s: the device has no image support", tg_storage_name(a->storage));
  if (a->mode == TG_MODE_OFFSETS && tg_storage_is_texture(a->storage) && !r->info->arena_images)
    return tg__error(&r->err, TG_ERROR_UNSUPPORTED, "this device cannot place %s tensors in an arena: use --mode objects",
                     tg_storage_name(a->storage));
  return TG_OK;
}

/* The model's records at grid point `p` into r->tensors and what each tensor is there into
 * r->res; offsets mode: the device's records of them into r->arena_set. */
static tg_status tensors_at(range_run *r, const int64_t *dims) {
  tg_status st = tg_range_records_at(r->mr->primary, dims, r->tensors);
  if (st != TG_OK) return st;
  tg_record_set set = {r->dims, r->n, r->tensors, NULL, {0}};
  tg__free(r->alloc, r->res);
  r->res = NULL;
  if ((st = tg_cli_resources(&set, r->a->storage, r->a->precision, r->alloc, &r->res)) != TG_OK) return st;
  if (r->a->mode != TG_MODE_OFFSETS) return TG_OK;
  tg_record_set_destroy(r->arena_set);
  r->arena_set = NULL;
  return tg_device_compute_arena_records(r->dev, r->res, r->tensors, r->n, r->a->precision, r->alloc, &r->arena_set);
}

/* Offsets mode, planned here: the device's records at every size (their alignment the
 * largest over the range). */
static tg_status arena_at(void *ctx, uint64_t p, const tg_usage_record **recs) {
  range_run *r = ctx;
  int64_t dims[TG_RANGE_MAX_DIMS] = {0, 0};
  tg_size_range_point(&r->mr->range, p, dims);
  tg_status st = tensors_at(r, dims);
  *recs = st == TG_OK ? r->arena_set->records : NULL;
  return st;
}

static tg_status arena_records(range_run *r) {
  tg_status st = tg_cli_range_records_build(&r->mr->range, r->n, arena_at, r, r->alloc, &r->arena);
  if (st != TG_OK) return tg__error(&r->err, st, "the device's records over the range: %s", tg_status_string(st));
  return TG_OK;
}

/* The plan over the range: computed, or the plan file's matched with the model's records. */
static tg_status make_plan(range_run *r) {
  const tg_cli_run_range_args *a = r->a;
  tg_status st;
  if ((st = tg_cli_range_relation(r->mr, a->policy, r->alloc, &r->relation, &r->err)) != TG_OK) return st;
  const tg_share_relation *rel = tg_policy_relation_get(r->relation);
  uint64_t t0 = tg__now_us();
  if (a->plan_file != NULL) {
    r->planned = r->mr->primary;
    st = tg_plan_file_match_range(a->plan_file, r->planned, (const char *const *)r->mr->records->records->names, rel,
                                  r->alloc, &r->rp, &r->err);
    const tg_plan *fp = a->plan_file->plan;
    for (size_t i = 0; st == TG_OK && i < fp->in_place_count; ++i) {
      int allowed = 0;
      for (size_t k = 0; k < r->mr->in_place_count && !allowed; ++k)
        allowed = r->mr->in_place[k].input == fp->in_place[i].input && r->mr->in_place[k].output == fp->in_place[i].output &&
                  r->mr->in_place[k].op == fp->in_place[i].op;
      if (!allowed)
        st = tg__error(&r->err, TG_ERROR_INVALID_PLAN,
                       "in-place pair at op %u (records %zu -> %zu) is not one this model, storage and device allow at "
                       "every size", fp->in_place[i].op, fp->in_place[i].input, fp->in_place[i].output);
    }
  } else {
    if (a->mode == TG_MODE_OFFSETS && (st = arena_records(r)) != TG_OK) return st;
    r->planned = a->mode == TG_MODE_OFFSETS ? r->arena : r->mr->primary;
    tg_plan_options o;
    memset(&o, 0, sizeof o);
    o.mode = a->mode;
    o.strategy = a->strategy;
    o.relation = rel;
    if (a->strategy == TG_STRATEGY_BEST) o.time_limit_ms = a->time_limit_ms;
    st = tg_range_plan_compute(r->planned, &o, NULL, r->alloc, &r->rp, &r->err);
  }
  r->plan_us = tg__now_us() - t0;
  return st;
}

/* Objects mode: the structure of the piece holding `dims`. */
static uint32_t structure_at(const range_run *r, const int64_t *dims) {
  uint64_t index = 0;
  tg_range_point_report rep;
  tg_range_piece pc;
  tg_size_range_index(&r->mr->range, dims, &index);
  tg_range_plan_get_point(r->rp, index, &rep);
  tg_range_plan_get_piece(r->rp, rep.piece, &pc);
  return pc.structure;
}

/* Objects mode: the instance's objects moved to their allocations (r->slot): the same plan,
 * objects renumbered, unused ones empty. */
static tg_status to_slots(range_run *r, const int64_t *dims) {
  tg_plan *p = r->inst;
  const uint32_t *slot = &r->slot[(size_t)structure_at(r, dims) * r->room_count];
  for (size_t o = 0; o < r->room_count; ++o) r->scratch[o] = (tg_extent){0, 1, 1};
  for (size_t o = 0; o < p->object_count; ++o) r->scratch[slot[o]] = p->object_sizes[o];
  for (size_t i = 0; i < r->n; ++i) p->object_of[i] = slot[p->object_of[i]];
  memcpy(p->object_sizes, r->scratch, r->room_count * sizeof *r->scratch);
  p->object_count = r->room_count;
  return TG_OK;
}

/* The plan at size k into r->inst and r->recs, the tensors there (tensors_at), and the records
 * the device realises (the plan's, or in offsets mode the device's), validated there. */
static tg_status plan_at(range_run *r, size_t k, const tg_usage_record **realised, uint64_t *us) {
  int64_t dims[TG_RANGE_MAX_DIMS] = {0, 0};
  tg_size_range_point(&r->mr->range, r->sizes.point[k], dims);
  uint64_t t0 = tg__now_us();
  tg_status st = tg_range_plan_instantiate(r->rp, dims, r->recs, r->inst);
  if (st == TG_OK && r->slot != NULL) st = to_slots(r, dims);
  *us = tg__now_us() - t0;
  if (st != TG_OK) return tg__error(&r->err, st, "instantiating the plan: %s", tg_status_string(st));
  if ((st = tensors_at(r, dims)) != TG_OK) return tg__error(&r->err, st, "the tensors: %s", tg_status_string(st));
  *realised = r->a->mode == TG_MODE_OFFSETS ? r->arena_set->records : r->recs;
  /* Every plan through the validator; in offsets mode against the device's own sizes and
   * alignments (a plan file's plan was made with portable ones). */
  tg_error_info why = {{0}};
  st = tg_plan_validate(*realised, r->n, r->a->mode == TG_MODE_OFFSETS ? 1 : r->dims, r->inst, 0,
                        tg_policy_relation_get(r->relation), r->alloc, &why);
  if (st != TG_OK) {
    char at[64];
    tg_cli_range_size_name(&r->mr->range, dims, at, sizeof at);
    return tg__error(&r->err, st == TG_ERROR_INVALID_PLAN ? TG_ERROR_LIMIT : st,
                     "at size %s the plan does not hold for this device's tensors: %s", at, why.message);
  }
  return TG_OK;
}

static uint64_t plan_bytes(const range_run *r) {
  const tg_plan *p = r->inst;
  if (p->mode == TG_MODE_OFFSETS || p->dims == 1) return p->total;
  return p->total * tg_precision_texel_bytes(r->a->precision);
}

/* Raise `room` to what size k needs: the arena's end, or each object's extent. */
static void need_room(range_run *r, const tg_usage_record *realised, tg_extent *room) {
  const tg_plan *p = r->inst;
  if (p->mode == TG_MODE_OFFSETS) {
    for (size_t i = 0; i < r->n; ++i)
      if (p->offset_of[i] + realised[i].size.w > room[0].w) room[0].w = p->offset_of[i] + realised[i].size.w;
    return;
  }
  for (size_t o = 0; o < p->object_count; ++o) {
    tg_extent *e = &room[o];
    if (p->object_sizes[o].w > e->w) e->w = p->object_sizes[o].w;
    if (p->object_sizes[o].h > e->h) e->h = p->object_sizes[o].h;
    if (p->object_sizes[o].d > e->d) e->d = p->object_sizes[o].d;
  }
}

/* Objects mode: which allocation each object of each structure takes. Pieces with different
 * structures number their objects independently; object o of one and of another share an
 * allocation as large as the larger of the two, so each structure's objects go to the
 * allocations in order of size (at the largest size of its pieces): the largest objects of
 * every structure share one allocation. */
static tg_status object_slots(range_run *r) {
  const size_t structures = tg_range_plan_get_structure_count(r->rp), k_count = r->room_count;
  tg_range_plan_summary sm;
  tg_range_plan_get_summary(r->rp, &sm);
  size_t cells = structures * (k_count ? k_count : 1);
  r->slot = tg__calloc(r->alloc, cells, sizeof *r->slot);
  r->scratch = tg__calloc(r->alloc, k_count ? k_count : 1, sizeof *r->scratch);
  uint64_t *volume = tg__calloc(r->alloc, cells, sizeof *volume);
  tg_status st = r->slot && r->scratch && volume ? TG_OK : TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t k = 0; st == TG_OK && k < sm.piece_count; ++k) {
    tg_range_piece pc;
    tg_range_plan_get_piece(r->rp, k, &pc);
    int64_t hi[TG_RANGE_MAX_DIMS] = {pc.range.dim[0].hi, pc.range.dim[1].hi};
    if ((st = tg_range_plan_instantiate(r->rp, hi, r->recs, r->inst)) != TG_OK) break;
    for (size_t o = 0; o < r->inst->object_count; ++o) {
      uint64_t v = 0, *at = &volume[(size_t)pc.structure * k_count + o];
      tg_extent_volume(r->inst->object_sizes[o], &v);
      if (v > *at) *at = v;
    }
  }
  for (size_t s = 0; st == TG_OK && s < structures; ++s) {
    /* Rank by volume, largest first (ties: lower object first). */
    const uint64_t *v = &volume[s * k_count];
    for (size_t o = 0; o < k_count; ++o) {
      uint32_t rank = 0;
      for (size_t q = 0; q < k_count; ++q) rank += v[q] > v[o] || (v[q] == v[o] && q < o);
      r->slot[s * k_count + o] = rank;
    }
  }
  tg__free(r->alloc, volume);
  return st;
}

/* Capacity: for every size asked, or (--grow) the first. */
static tg_status capacity(range_run *r) {
  tg_range_plan_summary sm;
  tg_range_plan_get_summary(r->rp, &sm);
  r->room_count = r->a->mode == TG_MODE_OFFSETS ? 1 : sm.max_object_count;
  r->room = tg__calloc(r->alloc, r->room_count ? r->room_count : 1, sizeof *r->room);
  if (r->room == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_status sst = r->a->mode == TG_MODE_OBJECTS ? object_slots(r) : TG_OK;
  if (sst != TG_OK) return sst;
  for (size_t o = 0; o < r->room_count; ++o) r->room[o] = (tg_extent){0, 1, 1};
  for (size_t k = 0; k < (r->a->grow ? 1 : r->sizes.count); ++k) {
    const tg_usage_record *realised;
    uint64_t us;
    tg_status st = plan_at(r, k, &realised, &us);
    if (st != TG_OK) return st;
    need_room(r, realised, r->room);
  }
  return TG_OK;
}

static tg_status check_at(range_run *r, tg_realization *z, size_result *out) {
  uint64_t *mismatches = tg__calloc(r->alloc, r->n ? r->n : 1, sizeof *mismatches);
  if (mismatches == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_check_desc cd = {r->mr->model->graph, r->mr->records->tensor_of, 0, 0, NULL, NULL};
  tg_check_result result = {0, mismatches, 0};
  uint64_t t0 = tg__now_us();
  tg_status st = r->run_order ? tg_realization_check_run(z, &cd, r->run_order, r->run_order_length, &result, &r->err)
                              : tg_realization_check(z, &cd, &result, &r->err);
  out->check_us = tg__now_us() - t0;
  out->corrupted = result.corrupted_records;
  out->checked_bytes = result.checked_bytes;
  for (size_t i = 0; st == TG_OK && i < r->n; ++i)
    if (mismatches[i]) {
      const char *name = r->mr->records->records->names[i];
      tg_cli_error("corrupted: %s (%llu mismatching words/texels)", name ? name : "(unnamed)",
                   (unsigned long long)mismatches[i]);
    }
  tg__free(r->alloc, mismatches);
  return st;
}

/* Size after size: instantiate, re-offset (the first size, or one that outgrows the capacity
 * with --grow: allocate), check. */
static tg_status run_sizes(range_run *r) {
  tg_realization *z = NULL;
  tg_status st = TG_OK;
  const uint64_t budget = r->a->budget ? r->a->budget : r->info->memory_budget;
  for (size_t k = 0; k < r->sizes.count && st == TG_OK; ++k) {
    size_result *out = &r->results[k];
    const tg_usage_record *realised;
    if ((st = plan_at(r, k, &realised, &out->instantiate_us)) != TG_OK) break;
    tg_realize_desc desc = {r->inst, realised, r->n, r->a->mode == TG_MODE_OFFSETS ? 1 : r->dims, r->res,
                            r->a->precision, 1 /* validated above; an instance is valid by construction */};
    if (z != NULL) {
      uint64_t t0 = tg__now_us();
      tg_error_info why = {{0}};
      st = tg_realization_reoffset(z, &desc, &why);
      out->reoffset_us = tg__now_us() - t0;
      if (st == TG_ERROR_LIMIT && r->a->grow) {
        /* Outgrown: twice the room, or what this size needs. */
        for (size_t o = 0; o < r->room_count; ++o) {
          r->room[o].w = r->room[o].w > UINT64_MAX / 2 ? UINT64_MAX : 2 * r->room[o].w;
          if (r->dims > 1) r->room[o].h = r->room[o].h > UINT64_MAX / 2 ? UINT64_MAX : 2 * r->room[o].h;
        }
        need_room(r, realised, r->room);
        tg_realization_destroy(z);
        z = NULL;
        r->reallocations++;
        st = TG_OK;
      } else if (st != TG_OK) {
        tg__error(&r->err, st, "%s", why.message);
        break;
      }
    }
    if (z == NULL) {
      tg_realize_capacity cap = {r->room, r->room_count};
      st = tg_realization_create_with_capacity(r->dev, &desc, &cap, r->alloc, &z, &r->err);
      out->reoffset_us = 0;
      if (st != TG_OK) break;
      out->created = 1;
      tg_realization_stats s;
      tg_realization_get_stats(z, &s);
      r->allocations += s.allocations;
      if (s.allocated_bytes > budget) {
        st = tg__error(&r->err, TG_ERROR_BUDGET, "the allocations take %llu bytes, the budget is %llu",
                       (unsigned long long)s.allocated_bytes, (unsigned long long)budget);
        break;
      }
    }
    tg_realization_stats before, after;
    tg_realization_get_stats(z, &before);
    st = check_at(r, z, out);
    tg_realization_get_stats(z, &after);
    out->bytes = plan_bytes(r);
    out->capacity = after.allocated_bytes;
    out->allocations = after.allocations;
    out->views_remade = after.views_remade;
  }
  /* views_remade per size: the counter's steps. */
  for (size_t k = r->sizes.count; k-- > 1;)
    if (!r->results[k].created) r->results[k].views_remade -= r->results[k - 1].views_remade;
  tg_realization_destroy(z);
  return st;
}

static void report_json(const range_run *r, tg__strbuf *b) {
  const tg_cli_run_range_args *a = r->a;
  tg_range_plan_summary sm;
  tg_range_plan_get_summary(r->rp, &sm);
  uint64_t corrupted = 0;
  for (size_t k = 0; k < r->sizes.count; ++k) corrupted += r->results[k].corrupted;
  tg__strbuf_puts(b, "{\"model\":");
  tg__strbuf_json_string(b, a->file);
  if (a->plan_path) {
    tg__strbuf_puts(b, ",\"plan_file\":");
    tg__strbuf_json_string(b, a->plan_path);
  }
  tg__strbuf_printf(b, ",\"backend\":\"%s\",\"device\":", tg_backend_name(r->info->backend));
  tg__strbuf_json_string(b, r->info->name);
  tg__strbuf_printf(b,
                    ",\"device_kind\":\"%s\",\"storage\":\"%s\",\"precision\":\"%s\",\"mode\":\"%s\","
                    "\"strategy\":\"%s\",\"policy\":\"%s\",\"records\":%zu,\"allocations\":%llu,"
                    "\"reallocations\":%llu,\"corrupted_tensors\":%llu,\"range\":{",
                    r->info->kind, tg_storage_name(a->storage), tg_precision_name(a->precision), tg_mode_name(a->mode),
                    tg_strategy_name(a->strategy), tg_policy_name(a->policy), r->n, (unsigned long long)r->allocations,
                    (unsigned long long)r->reallocations, (unsigned long long)corrupted);
  const tg_size_range *range = &r->mr->range;
  tg_cli_json_range_dims(b, r->mr);
  tg__strbuf_printf(b, ",\"points\":%llu,\"pieces\":%zu,\"plan_us\":%llu,\"sizes\":[",
                    (unsigned long long)sm.point_count, sm.piece_count, (unsigned long long)r->plan_us);
  for (size_t k = 0; k < r->sizes.count; ++k) {
    const size_result *s = &r->results[k];
    int64_t dims[TG_RANGE_MAX_DIMS] = {0, 0};
    tg_size_range_point(range, r->sizes.point[k], dims);
    tg__strbuf_puts(b, k ? ",{\"dims\":[" : "{\"dims\":[");
    for (uint32_t d = 0; d < range->count; ++d) tg__strbuf_printf(b, "%s%lld", d ? "," : "", (long long)dims[d]);
    tg__strbuf_printf(b,
                      "],\"bytes\":%llu,\"capacity\":%llu,\"reoffset_us\":%llu,\"corrupted\":%llu,"
                      "\"instantiate_us\":%llu,\"allocated\":%s,\"allocations\":%llu,\"views_remade\":%llu,"
                      "\"check_us\":%llu,\"checked_bytes\":%llu}",
                      (unsigned long long)s->bytes, (unsigned long long)s->capacity, (unsigned long long)s->reoffset_us,
                      (unsigned long long)s->corrupted, (unsigned long long)s->instantiate_us,
                      s->created ? "true" : "false", (unsigned long long)s->allocations,
                      (unsigned long long)s->views_remade, (unsigned long long)s->check_us,
                      (unsigned long long)s->checked_bytes);
  }
  tg__strbuf_puts(b, "]},\"skipped\":[");
  tg_cli_json_skipped(b, r->skipped, r->nskipped);
  tg__strbuf_puts(b, "]}\n");
}

static void report_text(const range_run *r, tg__strbuf *b) {
  const tg_cli_run_range_args *a = r->a;
  tg_range_plan_summary sm;
  tg_range_plan_get_summary(r->rp, &sm);
  char rt[160], b1[32], b2[32];
  tg_cli_range_text(r->mr, rt, sizeof rt);
  uint64_t corrupted = 0;
  for (size_t k = 0; k < r->sizes.count; ++k) corrupted += r->results[k].corrupted;
  tg__strbuf_printf(b, "Tangram: %s over %s (%llu sizes), %zu run\n", a->file, rt,
                    (unsigned long long)sm.point_count, r->sizes.count);
  tg_cli_text_skipped(b, r->skipped, r->nskipped);
  tg__strbuf_printf(b, "  backend %s, device \"%s\" (%s)\n", tg_backend_name(r->info->backend), r->info->name,
                    r->info->kind);
  tg__strbuf_printf(b, "  storage %s %s, mode %s, strategy %s, policy %s, %zu tensors\n", tg_storage_name(a->storage),
                    tg_precision_name(a->precision), tg_mode_name(a->mode), tg_strategy_name(a->strategy),
                    tg_policy_name(a->policy), r->n);
  if (a->plan_path)
    tg__strbuf_printf(b, "  plan over the range loaded from %s (made for %s), checked against these records: %zu "
                      "piece%s, %.2f ms\n", a->plan_path, a->plan_file->source, sm.piece_count,
                      sm.piece_count == 1 ? "" : "s", (double)r->plan_us / 1000.0);
  else
    tg__strbuf_printf(b, "  plan over the range: %zu piece%s, %.2f ms\n", sm.piece_count, sm.piece_count == 1 ? "" : "s",
                      (double)r->plan_us / 1000.0);
  if (a->grow)
    tg__strbuf_printf(b, "  %llu allocations made, for the first size and grown %llu time%s\n\n",
                      (unsigned long long)r->allocations, (unsigned long long)r->reallocations,
                      r->reallocations == 1 ? "" : "s");
  else
    tg__strbuf_printf(b, "  %llu allocation%s made once, for the largest size asked\n\n",
                      (unsigned long long)r->allocations, r->allocations == 1 ? "" : "s");
  tg__strbuf_puts(b, "size           plan bytes    capacity     instantiate  re-offset    views remade  corrupted\n");
  for (size_t k = 0; k < r->sizes.count; ++k) {
    const size_result *s = &r->results[k];
    char at[64], inst[32], re[32];
    int64_t dims[TG_RANGE_MAX_DIMS] = {0, 0};
    tg_size_range_point(&r->mr->range, r->sizes.point[k], dims);
    tg_cli_range_size_name(&r->mr->range, dims, at, sizeof at);
    snprintf(inst, sizeof inst, "%llu us", (unsigned long long)s->instantiate_us);
    if (s->created) snprintf(re, sizeof re, "allocated");
    else snprintf(re, sizeof re, "%llu us", (unsigned long long)s->reoffset_us);
    tg__strbuf_printf(b, "%-14s %-13s %-12s %-12s %-12s %-13llu %llu\n", at, tg_report_format_bytes(s->bytes, b1, sizeof b1),
                      tg_report_format_bytes(s->capacity, b2, sizeof b2), inst, re, (unsigned long long)s->views_remade,
                      (unsigned long long)s->corrupted);
  }
  tg__strbuf_printf(b, "----------------------------------------\n"
                       "On-device check: %llu corrupted tensors at %zu sizes on %llu allocation%s\n",
                    (unsigned long long)corrupted, r->sizes.count, (unsigned long long)r->allocations,
                    r->allocations == 1 ? "" : "s");
}

int tg_cli_run_range(const tg_cli_run_range_args *a, const tg_allocator *alloc) {
  range_run r;
  memset(&r, 0, sizeof r);
  r.a = a;
  r.alloc = alloc;
  if (!choose_shapes(&r)) return TG_EXIT_USAGE;
  int opened = tg_cli_open_device(&a->device, alloc, &r.dev, r.skipped, &r.nskipped, &r.err);
  if (opened != 0) return opened;
  tg_status st = TG_OK;
  r.info = tg_device_get_info(r.dev);
  int code = TG_EXIT_FAILURE;
  if ((st = load_model(&r)) != TG_OK) {
    tg_cli_error("run: %s", r.err.message[0] ? r.err.message : tg_status_string(st));
    code = st == TG_ERROR_OUT_OF_HOST_MEMORY ? TG_EXIT_FAILURE : TG_EXIT_USAGE;
    goto done;
  }
  if ((code = choose_sizes(&r)) != TG_EXIT_OK) goto done;
  code = TG_EXIT_FAILURE;
  r.recs = tg__calloc(alloc, r.n ? r.n : 1, sizeof *r.recs);
  r.tensors = tg__calloc(alloc, r.n ? r.n : 1, sizeof *r.tensors);
  r.results = tg__calloc(alloc, r.sizes.count ? r.sizes.count : 1, sizeof *r.results);
  if (r.recs == NULL || r.tensors == NULL || r.results == NULL) {
    tg_cli_error("run: out of memory");
    goto done;
  }
  if ((st = make_plan(&r)) != TG_OK) {
    tg_cli_error("run: %s%s%s", a->plan_path ? a->plan_path : "", a->plan_path ? ": " : "",
                 r.err.message[0] ? r.err.message : tg_status_string(st));
    code = tg_cli_exit_code(st) == TG_EXIT_USAGE || st == TG_ERROR_INVALID_PLAN ? TG_EXIT_USAGE : TG_EXIT_FAILURE;
    goto done;
  }
  const tg_graph *g = r.mr->model->graph;
  if ((st = tg_range_plan_create_instance(r.rp, alloc, &r.inst)) != TG_OK ||
      (g->flow_count > 0 &&
       (st = tg_graph_run_order(g, a->flow[0], a->flow[1], alloc, &r.run_order, &r.run_order_length, &r.err)) != TG_OK)) {
    tg_cli_error("run: %s", r.err.message[0] ? r.err.message : tg_status_string(st));
    goto done;
  }
  if ((st = capacity(&r)) != TG_OK || (st = run_sizes(&r)) != TG_OK) {
    tg_cli_error("run: %s", r.err.message[0] ? r.err.message : tg_status_string(st));
    int64_t native = tg_device_get_native_error(r.dev);
    if (native) tg_cli_error("run: the driver's last error code: %lld", (long long)native);
    /* A plan file's plan beyond this device's sizes, alignments or limits is bad input. */
    code = (a->plan_file && st == TG_ERROR_LIMIT) ? TG_EXIT_USAGE : TG_EXIT_FAILURE;
    goto done;
  }
  tg__strbuf b;
  tg__strbuf_init(&b, alloc);
  if (a->json) report_json(&r, &b);
  else report_text(&r, &b);
  code = TG_EXIT_OK;
  for (size_t k = 0; k < r.sizes.count; ++k)
    if (r.results[k].corrupted) code = TG_EXIT_FAILURE;
  code = tg_cli_print_report(&b, code);
done:
  run_free(&r);
  return code;
}
