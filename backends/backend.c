/* The generic half of every backend: choosing one, fault injection, realising plans with
 * rollback, arena records, and driving the shadow run. Backends only make driver calls
 * (backend_internal.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend_internal.h"

struct tg_device {
  const tg__backend_vtable *vt;
  void *impl;
  tg_device_info info;
  tg_allocator alloc;
  uint64_t fail_at;        /* Nth device object creation fails; 0 = never */
  uint64_t creations;      /* device object creations attempted so far */
};

static const char *const k_backend_names[TG_BACKEND_COUNT] = {"auto", "host", "opencl", "vulkan"};

const char *tg_backend_name(tg_backend_kind k) {
  return (unsigned)k < TG_BACKEND_COUNT ? k_backend_names[k] : NULL;
}

tg_status tg_backend_from_name(const char *name, tg_backend_kind *out) {
  if (name == NULL || out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < TG_BACKEND_COUNT; ++i)
    if (strcmp(name, k_backend_names[i]) == 0) {
      *out = (tg_backend_kind)i;
      return TG_OK;
    }
  return TG_ERROR_INVALID_ARGUMENT;
}

static const tg__backend_vtable *backend_vtable(tg_backend_kind k) {
  switch (k) {
    case TG_BACKEND_HOST: return tg__host_backend();
    case TG_BACKEND_OPENCL: return tg__opencl_backend();
    case TG_BACKEND_VULKAN: return tg__vulkan_backend();
    default: return NULL;
  }
}

tg_status tg__device_open_with(tg_backend_kind kind, tg__wrap_fn wrap, const void *borrowed,
                               const tg_device_options *opt, const tg_allocator *alloc,
                               tg_device **out, tg_error_info *err) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  static const tg_device_options k_defaults = {0};
  if (opt == NULL) opt = &k_defaults;
  alloc = tg__alloc_or_default(alloc);
  const tg__backend_vtable *vt = backend_vtable(kind);
  if (vt == NULL)
    return tg__error(err, TG_ERROR_UNSUPPORTED, "the %s backend is not built in",
                     tg_backend_name(kind));
  tg_device *d = tg__calloc(alloc, 1, sizeof *d);
  if (d == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  d->vt = vt;
  d->alloc = *alloc;
  d->fail_at = opt->fail_device_alloc_at ? opt->fail_device_alloc_at
                                         : tg__env_u64("TANGRAM_FAIL_DEVICE_ALLOC_AT");
  d->info.backend = kind;
  tg_status st = wrap != NULL ? wrap(borrowed, opt, alloc, &d->impl, &d->info, err)
                              : vt->open(opt, alloc, &d->impl, &d->info, err);
  if (st != TG_OK) {
    tg__free(alloc, d);
    return st;
  }
  d->info.backend = kind;
  *out = d;
  return TG_OK;
}

static tg_status open_one(tg_backend_kind kind, const tg_device_options *opt,
                          const tg_allocator *alloc, tg_device **out, tg_error_info *err) {
  return tg__device_open_with(kind, NULL, NULL, opt, alloc, out, err);
}

static tg_status entry_device_open(const tg_device_options *options, const tg_allocator *alloc,
                         tg_device **out, tg_backend_skip *skipped, size_t *skipped_count,
                         tg_error_info *err) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  if (skipped_count) *skipped_count = 0;
  static const tg_device_options k_defaults = {0};
  if (options == NULL) options = &k_defaults;
  alloc = tg__alloc_or_default(alloc);
  tg_backend_kind kind = options->backend;
  if ((unsigned)kind >= TG_BACKEND_COUNT) return TG_ERROR_INVALID_ARGUMENT;
  if (kind == TG_BACKEND_AUTO) {
    const char *env = getenv("TANGRAM_BACKEND");
    if (env && *env && strcmp(env, "auto") != 0) {
      if (tg_backend_from_name(env, &kind) != TG_OK)
        return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                         "TANGRAM_BACKEND='%s' is not one of auto, vulkan, opencl, host", env);
    }
  }
  if (kind != TG_BACKEND_AUTO) return open_one(kind, options, alloc, out, err);

  static const tg_backend_kind k_order[] = {TG_BACKEND_VULKAN, TG_BACKEND_OPENCL, TG_BACKEND_HOST};
  tg_status last = TG_ERROR_NO_DEVICE;
  for (size_t i = 0; i < sizeof k_order / sizeof k_order[0]; ++i) {
    tg_error_info why = {{0}};
    last = open_one(k_order[i], options, alloc, out, &why);
    if (last == TG_OK) return TG_OK;
    if (last == TG_ERROR_OUT_OF_HOST_MEMORY) return tg__error(err, last, "%s", why.message);
    if (skipped && skipped_count) {
      tg_backend_skip *s = &skipped[(*skipped_count)++];
      s->backend = k_order[i];
      s->status = last;
      tg__strlcpy(s->reason, sizeof s->reason, why.message[0] ? why.message : tg_status_string(last));
    }
  }
  return tg__error(err, last, "no backend could be opened");
}

void tg_device_close(tg_device *d) {
  if (d == NULL) return;
  d->vt->close(d->impl);
  tg_allocator a = d->alloc;
  tg__free(&a, d);
}

const tg_device_info *tg_device_get_info(const tg_device *d) { return d ? &d->info : NULL; }

void *tg__device_impl(const tg_device *d) { return d ? d->impl : NULL; }

const tg__backend_vtable *tg__device_vtable(const tg_device *d) { return d ? d->vt : NULL; }

int64_t tg_device_get_native_error(const tg_device *d) {
  return (d && d->vt->native_error) ? d->vt->native_error(d->impl) : 0;
}

uint64_t tg_device_get_validation_messages(const tg_device *d) {
  return (d && d->vt->validation_messages) ? d->vt->validation_messages(d->impl) : 0;
}

/* Every device object creation passes here so fault injection sees all of them. */
tg_status tg__device_inject_failure(tg_device *d, tg_error_info *err) {
  d->creations++;
  if (d->fail_at == 0 || d->creations != d->fail_at) return TG_OK;
  return tg__error(err, TG_ERROR_OUT_OF_DEVICE_MEMORY,
                   "device object creation %llu failed (TANGRAM_FAIL_DEVICE_ALLOC_AT)",
                   (unsigned long long)d->creations);
}

static tg_status resource_bytes(const tg_tensor_resource *r, tg_precision p, uint64_t *out) {
  if (!tg_storage_is_texture(r->storage)) {
    *out = r->bytes;
    return TG_OK;
  }
  uint64_t v;
  if (tg_extent_volume(r->extent, &v) != TG_OK || !tg__mul_u64(v, tg__texel_bytes(p), &v))
    return TG_ERROR_OVERFLOW;
  *out = v;
  return TG_OK;
}

tg_status tg_device_compute_requirements(tg_device *d, const tg_tensor_resource *res,
                                         tg_precision precision, tg_resource_requirements *out) {
  if (d == NULL || res == NULL || out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  if (d->vt->requirements) return d->vt->requirements(d->impl, res, precision, out);
  uint64_t bytes;
  tg_status st = resource_bytes(res, precision, &bytes);
  if (st != TG_OK) return st;
  out->size = bytes;
  out->alignment = tg_storage_is_texture(res->storage) ? d->info.image_alignment
                                                      : d->info.buffer_alignment;
  if (out->alignment == 0) out->alignment = 1;
  out->linear = !tg_storage_is_texture(res->storage);
  return TG_OK;
}

tg_status tg_device_compute_arena_records(tg_device *d, const tg_tensor_resource *resources,
                                          const tg_usage_record *records, size_t count,
                                          tg_precision precision, const tg_allocator *alloc,
                                          tg_record_set **out) {
  if (d == NULL || out == NULL || (count && (resources == NULL || records == NULL)))
    return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  tg_record_set *set;
  tg_status st = tg_record_set_create(1, count, alloc, &set);
  if (st != TG_OK) return st;
  int mixed = 0, first_linear = -1;
  for (size_t r = 0; r < count; ++r) {
    tg_resource_requirements req;
    st = tg_device_compute_requirements(d, &resources[r], precision, &req);
    if (st != TG_OK) {
      tg_record_set_destroy(set);
      return st;
    }
    if (first_linear < 0) first_linear = req.linear;
    else if (req.linear != first_linear) mixed = 1;
    set->records[r].size = (tg_extent){req.size, 1, 1};
    set->records[r].alignment = req.alignment ? req.alignment : 1;
    set->records[r].first_task = records[r].first_task;
    set->records[r].last_task = records[r].last_task;
  }
  /* Linear and optimal resources must not share a bufferImageGranularity page. Rounding
   * every start and end of a mixed arena to the granularity keeps them apart at a small cost. */
  uint64_t g = d->info.buffer_image_granularity;
  if (mixed && g > 1) {
    for (size_t r = 0; r < count; ++r) {
      tg_usage_record *rec = &set->records[r];
      if (rec->alignment < g) rec->alignment = g;
      if (!tg__align_up(rec->size.w, g, &rec->size.w)) {
        tg_record_set_destroy(set);
        return TG_ERROR_OVERFLOW;
      }
    }
  }
  *out = set;
  return TG_OK;
}

/* ---- realisation ---- */

void tg_realization_destroy(tg_realization *z) {
  if (z == NULL) return;
  tg_device *d = z->device;
  if (z->views)
    for (size_t r = 0; r < z->record_count; ++r)
      if (z->views[r]) d->vt->unbind(d->impl, z->views[r]);
  if (z->memories)
    for (size_t k = 0; k < z->memory_count; ++k)
      if (z->memories[k] && !z->borrowed) d->vt->release(d->impl, z->memories[k]);
  tg_allocator a = z->alloc;
  tg__free(&a, z->memories);
  tg__free(&a, z->objects);
  tg__free(&a, z->memory_of);
  tg__free(&a, z->offset_of);
  tg__free(&a, z->views);
  tg__free(&a, z->resources);
  tg__free(&a, z->records);
  tg__free(&a, z);
}

/* Objects mode: object k's resource: its members' storage (mixed members are not allowed; an
 * object no tensor uses takes the first tensor's storage, else a buffer), at the plan's extent,
 * raised to `room` (NULL: none) per axis. */
static tg_status make_object_resource(const tg_realize_desc *desc, size_t k, const tg_extent *room,
                                      tg_tensor_resource *obj) {
  const tg_plan *p = desc->plan;
  tg_storage storage = TG_STORAGE_COUNT;
  for (size_t r = 0; r < desc->record_count; ++r) {
    if (k >= p->object_count || p->object_of[r] != k) continue;
    if (storage == TG_STORAGE_COUNT) storage = desc->resources[r].storage;
    else if (storage != desc->resources[r].storage) return TG_ERROR_INVALID_ARGUMENT;
  }
  if (storage == TG_STORAGE_COUNT) /* unused object */
    storage = room != NULL && desc->record_count ? desc->resources[0].storage : TG_STORAGE_BUFFER;
  obj->storage = storage;
  tg_extent e = k < p->object_count ? p->object_sizes[k] : (tg_extent){0, 1, 1};
  if (room != NULL) {
    if (room->w > e.w) e.w = room->w;
    if (room->h > e.h) e.h = room->h;
    if (room->d > e.d) e.d = room->d;
  }
  if (tg_storage_is_texture(storage)) {
    obj->extent = e;
    uint64_t v;
    if (tg_extent_volume(obj->extent, &v) != TG_OK || !tg__mul_u64(v, tg__texel_bytes(desc->precision), &obj->bytes))
      return TG_ERROR_OVERFLOW;
  } else {
    if (p->dims != 1) return TG_ERROR_INVALID_ARGUMENT;
    obj->bytes = e.w;
    obj->extent = (tg_extent){obj->bytes, 1, 1};
  }
  return TG_OK;
}

tg_status tg__realize_desc_check(tg_device *d, const tg_realize_desc *desc, const tg_allocator *alloc,
                                 tg_error_info *err) {
  const tg_plan *p = desc->plan;
  if (!desc->skip_validation) {
    tg_status vs = tg_plan_validate(desc->records, desc->record_count, desc->dims, p, 0, NULL, alloc, err);
    if (vs != TG_OK) return vs;
  }
  for (size_t r = 0; r < desc->record_count; ++r) {
    if (tg_storage_is_texture(desc->resources[r].storage) && !d->info.images)
      return tg__error(err, TG_ERROR_UNSUPPORTED,
                       "realize: record %zu is a %s image, but the %s device %s has no image support",
                       r, tg_storage_name(desc->resources[r].storage),
                       tg_backend_name(d->info.backend), d->info.name);
    if (p->mode == TG_MODE_OFFSETS && tg_storage_is_texture(desc->resources[r].storage) &&
        !d->info.arena_images)
      return tg__error(err, TG_ERROR_UNSUPPORTED,
                       "realize: this %s device cannot place images inside an arena; use objects mode",
                       tg_backend_name(d->info.backend));
  }
  return TG_OK;
}

static tg_status realize(tg_device *d, const tg_realize_desc *desc, const tg_realize_capacity *capacity,
                         const tg_allocator *alloc, tg_realization **out, tg_error_info *err) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  if (d == NULL || desc == NULL || desc->plan == NULL ||
      (desc->record_count && (desc->records == NULL || desc->resources == NULL)) ||
      desc->plan->record_count != desc->record_count)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "realize: plan, records and resources disagree");
  alloc = tg__alloc_or_default(alloc);
  const tg_plan *p = desc->plan;
  const size_t plan_memories =
      p->mode == TG_MODE_OBJECTS ? p->object_count : (desc->record_count ? (p->arena_count > 1 ? p->arena_count : 1) : 0);
  if (capacity != NULL && ((capacity->count && capacity->extent == NULL) ||
                           (p->mode == TG_MODE_OFFSETS ? capacity->count > plan_memories : capacity->count > UINT32_MAX)))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                     "realize: a capacity of %zu allocations for a plan of %zu %s", capacity->count, plan_memories,
                     p->mode == TG_MODE_OFFSETS ? "arenas (an arena's room is given per arena)" : "objects");
  tg_status st = tg__realize_desc_check(d, desc, alloc, err);
  if (st != TG_OK) return st;

  tg_realization *z = tg__calloc(alloc, 1, sizeof *z);
  if (z == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  z->device = d;
  z->alloc = *alloc;
  z->mode = p->mode;
  z->precision = desc->precision;
  z->dims = desc->dims;
  z->record_count = desc->record_count;
  /* Offsets mode: one allocation per arena. Objects mode: one per object, and one for each
   * further object the capacity names (room for the objects of other sizes). */
  z->memory_count = plan_memories;
  if (capacity != NULL && p->mode == TG_MODE_OBJECTS && capacity->count > z->memory_count)
    z->memory_count = capacity->count;
  size_t nr = desc->record_count ? desc->record_count : 1;
  size_t nm = z->memory_count ? z->memory_count : 1;
  z->memories = tg__calloc(alloc, nm, sizeof *z->memories);
  z->objects = tg__calloc(alloc, nm, sizeof *z->objects);
  z->memory_of = tg__calloc(alloc, nr, sizeof *z->memory_of);
  z->offset_of = tg__calloc(alloc, nr, sizeof *z->offset_of);
  z->views = tg__calloc(alloc, nr, sizeof *z->views);
  z->resources = tg__calloc(alloc, nr, sizeof *z->resources);
  z->records = tg__calloc(alloc, nr, sizeof *z->records);
  if (!z->memories || !z->objects || !z->memory_of || !z->offset_of || !z->views ||
      !z->resources || !z->records) {
    st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    goto fail;
  }
  if (desc->record_count) {
    memcpy(z->resources, desc->resources, desc->record_count * sizeof *z->resources);
    memcpy(z->records, desc->records, desc->record_count * sizeof *z->records);
  }

  /* Allocations. */
  for (size_t k = 0; k < z->memory_count; ++k) {
    int arena = p->mode == TG_MODE_OFFSETS;
    const tg_extent *room = capacity != NULL && k < capacity->count ? &capacity->extent[k] : NULL;
    if (arena) {
      uint64_t bytes = tg_plan_arena_size(p, k);
      if (room != NULL && room->w > bytes) bytes = room->w;
      z->objects[k] = (tg_tensor_resource){TG_STORAGE_BUFFER, {bytes, 1, 1}, bytes};
    } else if ((st = make_object_resource(desc, k, room, &z->objects[k])) != TG_OK) {
      tg__error(err, st, "realize: object %zu mixes storages or has a bad extent", k);
      goto fail;
    }
    if ((st = tg__device_inject_failure(d, err)) != TG_OK) goto fail;
    st = d->vt->allocate(d->impl, &z->objects[k], z->precision, arena, &z->memories[k]);
    if (st != TG_OK) {
      tg__error(err, st, "realize: allocating %s %zu (%llu bytes) failed: %s (driver code %lld)",
                arena ? "arena" : "object", k, (unsigned long long)z->objects[k].bytes,
                tg_status_string(st), (long long)tg_device_get_native_error(d));
      z->memories[k] = NULL;
      goto fail;
    }
    z->stats.allocations++;
    z->stats.allocated_bytes += z->objects[k].bytes;
  }
  /* Views. */
  for (size_t r = 0; r < z->record_count; ++r) {
    int arena = p->mode == TG_MODE_OFFSETS;
    z->memory_of[r] = arena ? tg_plan_arena_of(p, r) : p->object_of[r];
    z->offset_of[r] = arena ? p->offset_of[r] : 0;
    if ((st = tg__device_inject_failure(d, err)) != TG_OK) goto fail;
    st = d->vt->bind(d->impl, z->memories[z->memory_of[r]], &z->objects[z->memory_of[r]],
                     z->offset_of[r], &z->resources[r], z->precision, arena, &z->views[r]);
    if (st != TG_OK) {
      tg__error(err, st, "realize: placing record %zu failed: %s (driver code %lld)", r,
                tg_status_string(st), (long long)tg_device_get_native_error(d));
      z->views[r] = NULL;
      goto fail;
    }
    z->stats.views++;
  }
  *out = z;
  return TG_OK;

fail:
  tg_realization_destroy(z);
  return st;
}

void tg_realization_get_stats(const tg_realization *z, tg_realization_stats *out) {
  if (out == NULL) return;
  if (z == NULL) {
    memset(out, 0, sizeof *out);
    return;
  }
  *out = z->stats;
}

tg_status tg__realization_parts(const tg_realization *z, size_t record, const tg_device **device,
                               void **memory, void **view) {
  if (z == NULL || device == NULL || memory == NULL || view == NULL || record >= z->record_count)
    return TG_ERROR_INVALID_ARGUMENT;
  *device = z->device;
  *memory = z->memories[z->memory_of[record]];
  *view = z->views[record];
  return TG_OK;
}

tg_status tg__realization_describe(const tg_realization *z, tg__realization_info *out) {
  if (z == NULL || out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  out->device = z->device;
  out->precision = z->precision;
  out->record_count = z->record_count;
  out->resources = z->resources;
  out->views = z->views;
  out->alloc = &z->alloc;
  return TG_OK;
}

tg_status tg_realization_get_tensor(const tg_realization *z, size_t record, tg_tensor_handle *out) {
  if (z == NULL || out == NULL || record >= z->record_count) return TG_ERROR_INVALID_ARGUMENT;
  memset(out, 0, sizeof *out);
  tg_device *d = z->device;
  d->vt->handle(d->impl, z->memories[z->memory_of[record]], z->views[record], out);
  /* The backend gives where its allocation starts inside `memory` (0 unless it is a block of
   * a larger allocation); the plan gives the tensor's place in the allocation. */
  out->offset += z->offset_of[record];
  const tg_tensor_resource *res = &z->resources[record];
  out->region = tg_storage_is_texture(res->storage) ? res->extent : (tg_extent){res->bytes, 1, 1};
  return TG_OK;
}

/* ---- shadow run ---- */

/* Per-op reads and writes of records. */
typedef struct op_accesses {
  size_t op_count;
  uint32_t *read_start, *write_start;   /* op_count + 1 */
  uint32_t *reads, *writes;             /* record indices */
} op_accesses;

static void accesses_free(const tg_allocator *a, op_accesses *x) {
  tg__free(a, x->read_start);
  tg__free(a, x->write_start);
  tg__free(a, x->reads);
  tg__free(a, x->writes);
}

/* Build CSR lists: with a graph, an op reads each planned input record and writes each
 * planned output record; without one, record r is written at first_task, read at last_task. */
static tg_status build_accesses(const tg_realization *z, const tg_check_desc *desc,
                                const tg_allocator *a, op_accesses *x) {
  memset(x, 0, sizeof *x);
  size_t n = z->record_count;
  const tg_graph *g = desc->graph;
  size_t ops = 0;
  int32_t *record_of_tensor = NULL;
  if (g) {
    if (desc->tensor_of_record == NULL && n) return TG_ERROR_INVALID_ARGUMENT;
    ops = g->op_count;
    record_of_tensor = tg__malloc(a, (g->tensor_count ? g->tensor_count : 1) * sizeof *record_of_tensor);
    if (record_of_tensor == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    for (size_t t = 0; t < g->tensor_count; ++t) record_of_tensor[t] = -1;
    for (size_t r = 0; r < n; ++r) {
      if (desc->tensor_of_record[r] >= g->tensor_count) {
        tg__free(a, record_of_tensor);
        return TG_ERROR_INVALID_ARGUMENT;
      }
      record_of_tensor[desc->tensor_of_record[r]] = (int32_t)r;
    }
    /* A planned graph input (TG_TENSOR_INPUT) that no op writes is filled by the engine before
     * the first op: it has no signature to verify, so its reads are not checked. Any other
     * record read and never written stays checked (and reported: reading unwritten memory).
     * Marked by negating its entry. */
    int32_t *written = tg__calloc(a, n ? n : 1, sizeof *written);
    if (written == NULL) {
      tg__free(a, record_of_tensor);
      return TG_ERROR_OUT_OF_HOST_MEMORY;
    }
    for (size_t o = 0; o < g->op_count; ++o)
      for (uint32_t i = 0; i < g->ops[o].output_count; ++i) {
        int32_t t = g->ops[o].outputs[i];
        if (t >= 0 && (size_t)t < g->tensor_count && record_of_tensor[t] >= 0)
          written[record_of_tensor[t]] = 1;
      }
    for (size_t t = 0; t < g->tensor_count; ++t)
      if (record_of_tensor[t] >= 0 && !written[record_of_tensor[t]] &&
          (g->tensors[t].flags & TG_TENSOR_INPUT))
        record_of_tensor[t] = -2 - record_of_tensor[t];
    tg__free(a, written);
  } else {
    for (size_t r = 0; r < n; ++r)
      if ((size_t)z->records[r].last_task + 1 > ops) ops = (size_t)z->records[r].last_task + 1;
  }
  if (desc->wait_counts && desc->op_count > ops) ops = desc->op_count;
  x->op_count = ops;
  x->read_start = tg__calloc(a, ops + 1, sizeof *x->read_start);
  x->write_start = tg__calloc(a, ops + 1, sizeof *x->write_start);
  if (!x->read_start || !x->write_start) goto oom;
  /* Two passes: count, then fill. */
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      for (size_t o = 0; o < ops; ++o) {
        x->read_start[o + 1] += x->read_start[o];
        x->write_start[o + 1] += x->write_start[o];
      }
      x->reads = tg__calloc(a, x->read_start[ops] + 1, sizeof *x->reads);
      x->writes = tg__calloc(a, x->write_start[ops] + 1, sizeof *x->writes);
      if (!x->reads || !x->writes) goto oom;
    }
    uint32_t *rc = NULL, *wc = NULL;
    if (pass == 1) {
      rc = tg__calloc(a, ops + 1, sizeof *rc);
      wc = tg__calloc(a, ops + 1, sizeof *wc);
      if (!rc || !wc) {
        tg__free(a, rc);
        tg__free(a, wc);
        goto oom;
      }
    }
#define ADD_ACCESS(kind, op, rec)                                         \
  do {                                                                    \
    if (pass == 0) x->kind##_start[(op) + 1]++;                           \
    else x->kind##s[x->kind##_start[op] + kind##_cursor[op]++] = (rec);   \
  } while (0)
    uint32_t *read_cursor = rc, *write_cursor = wc;
    if (g) {
      for (size_t o = 0; o < g->op_count; ++o) {
        const tg_op *op = &g->ops[o];
        for (uint32_t i = 0; i < op->input_count; ++i) {
          int32_t t = op->inputs[i];
          if (t < 0 || (size_t)t >= g->tensor_count || record_of_tensor[t] < 0) continue;
          /* An op naming one tensor twice reads it once. */
          int dup = 0;
          for (uint32_t j = 0; j < i; ++j) dup |= op->inputs[j] == t;
          if (!dup) ADD_ACCESS(read, o, (uint32_t)record_of_tensor[t]);
        }
        for (uint32_t i = 0; i < op->output_count; ++i) {
          int32_t t = op->outputs[i];
          if (t < 0 || (size_t)t >= g->tensor_count || record_of_tensor[t] < 0) continue;
          ADD_ACCESS(write, o, (uint32_t)record_of_tensor[t]);
        }
      }
    } else {
      for (size_t r = 0; r < n; ++r) {
        ADD_ACCESS(write, z->records[r].first_task, (uint32_t)r);
        /* first == last: written and never read (an op reads its inputs before writing). */
        if (z->records[r].last_task > z->records[r].first_task)
          ADD_ACCESS(read, z->records[r].last_task, (uint32_t)r);
      }
    }
#undef ADD_ACCESS
    tg__free(a, rc);
    tg__free(a, wc);
  }
  tg__free(a, record_of_tensor);
  return TG_OK;
oom:
  tg__free(a, record_of_tensor);
  accesses_free(a, x);
  return TG_ERROR_OUT_OF_HOST_MEMORY;
}

/* Out of order, memory reuse is safe only if the waits order it: for two records sharing
 * memory, every op touching the earlier one must finish before the op that writes the later
 * one. Checked up front so a plan that needs more ordering than the waits give is refused
 * with the pair named, instead of racing on the device. */
static tg_status check_waits_order_reuse(const tg_realization *z, const tg_check_desc *desc,
                                         const op_accesses *x, const tg_allocator *a,
                                         tg_error_info *err) {
  size_t ops = x->op_count, n = z->record_count;
  size_t words = (ops + 63) / 64;
  size_t cells;
  if (!tg__mul_size(ops ? ops : 1, words ? words : 1, &cells))
    return tg__error(err, TG_ERROR_OVERFLOW, "check: too many ops");
  uint64_t *before = tg__calloc(a, cells, sizeof *before);    /* before[o]: ops that finish before o starts */
  int32_t *producer = tg__malloc(a, (n ? n : 1) * sizeof *producer);
  uint32_t *order = tg__malloc(a, (n ? n : 1) * sizeof *order);
  tg_status st = TG_OK;
  if (!before || !producer || !order) {
    st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    goto done;
  }
  for (size_t o = 0; o < ops; ++o) {
    uint64_t *bo = before + o * words;
    if (o >= desc->op_count) continue;
    for (uint32_t i = 0; i < desc->wait_counts[o]; ++i) {
      uint32_t w = desc->waits[o][i];
      if (w >= o) {
        st = tg__error(err, TG_ERROR_INVALID_ARGUMENT, "check: op %zu waits for op %u, which is not earlier", o, w);
        goto done;
      }
      const uint64_t *bw = before + (size_t)w * words;
      for (size_t k = 0; k < words; ++k) bo[k] |= bw[k];
      bo[w / 64] |= 1ull << (w % 64);
    }
  }
  for (size_t r = 0; r < n; ++r) producer[r] = -1;
  for (size_t o = 0; o < ops; ++o)
    for (uint32_t i = x->write_start[o]; i < x->write_start[o + 1]; ++i) producer[x->writes[i]] = (int32_t)o;
  /* Records sharing memory, taken in pairs: (earlier, later) by task interval. */
  for (size_t r = 0; r < n; ++r) order[r] = (uint32_t)r;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      uint32_t ra = order[i], rb = order[j];
      int share;
      if (z->mode == TG_MODE_OBJECTS) {
        share = z->memory_of[ra] == z->memory_of[rb];
      } else {
        uint64_t a0 = z->offset_of[ra], a1 = a0 + z->resources[ra].bytes;
        uint64_t b0 = z->offset_of[rb], b1 = b0 + z->resources[rb].bytes;
        share = z->memory_of[ra] == z->memory_of[rb] && a0 < b1 && b0 < a1;
      }
      if (!share) continue;
      const tg_usage_record *A = &z->records[ra], *B = &z->records[rb];
      uint32_t early = A->last_task < B->first_task ? ra : rb, late = early == ra ? rb : ra;
      if (A->last_task >= B->first_task && B->last_task >= A->first_task) {
        /* Intervals that meet: an in-place pair (the op that last reads one record writes the
         * other over it; the validator lets only declared pairs meet). Every other op touching
         * the input must still finish before that op; other meetings are the validator's
         * business. */
        if (A->last_task == B->first_task && A->first_task < B->first_task) early = ra, late = rb;
        else if (B->last_task == A->first_task && B->first_task < A->first_task) early = rb, late = ra;
        else continue;
        if (producer[late] != (int32_t)z->records[late].first_task) continue;
      }
      if (producer[late] < 0) continue;
      size_t p = (size_t)producer[late];
      const uint64_t *bp = before + p * words;
      for (size_t o = 0; o < ops; ++o) {
        int touches = 0;
        for (uint32_t k = x->read_start[o]; k < x->read_start[o + 1] && !touches; ++k) touches = x->reads[k] == early;
        for (uint32_t k = x->write_start[o]; k < x->write_start[o + 1] && !touches; ++k) touches = x->writes[k] == early;
        if (!touches || o == p) continue;
        if (!(bp[o / 64] >> (o % 64) & 1u)) {
          st = tg__error(err, TG_ERROR_INVALID_PLAN,
                         "check: record %u reuses the memory of record %u, but op %zu (touching "
                         "record %u) is not ordered before op %zu (writing record %u): add the "
                         "reuse edges to the waits or plan with --policy parallel-safe",
                         late, early, o, early, p, late);
          goto done;
        }
      }
    }
done:
  tg__free(a, before);
  tg__free(a, producer);
  tg__free(a, order);
  return st;
}

void tg_check_desc_use_waits(tg_check_desc *desc, const tg_wait_lists *lists) {
  if (desc == NULL || lists == NULL) return;
  desc->op_count = lists->op_count;
  desc->wait_counts = lists->counts;
  desc->waits = lists->lists;
}

static tg_status check_impl(tg_realization *z, const tg_check_desc *desc, const uint32_t *run_order,
                            size_t run_order_length, tg_check_result *out, tg_error_info *err) {
  if (z == NULL || out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  static const tg_check_desc k_default = {0};
  if (desc == NULL) desc = &k_default;
  tg_device *d = z->device;
  const tg_allocator *a = &z->alloc;
  uint64_t *mismatches = out->mismatches;
  out->corrupted_records = 0;
  out->checked_bytes = 0;
  op_accesses x;
  tg_status st = build_accesses(z, desc, a, &x);
  if (st != TG_OK) return tg__error(err, st, "check: cannot build the op accesses");
  uint64_t *counts = tg__calloc(a, z->record_count ? z->record_count : 1, sizeof *counts);
  size_t max_access = 1;
  for (size_t o = 0; o < x.op_count; ++o) {
    size_t nr = x.read_start[o + 1] - x.read_start[o], nw = x.write_start[o + 1] - x.write_start[o];
    if (nr > max_access) max_access = nr;
    if (nw > max_access) max_access = nw;
  }
  tg__check_access *reads = tg__calloc(a, max_access, sizeof *reads);
  tg__check_access *writes = tg__calloc(a, max_access, sizeof *writes);
  uint8_t *has_writer = NULL, *written = NULL;
  uint32_t *last_step = NULL, *step_waits = NULL; /* a run order out of order */
  uint8_t *decides = NULL;                        /* ... per op: the host decides there */
  size_t segment = 0;                             /* the first task after the last control-flow op */
  if (!counts || !reads || !writes) {
    st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    goto done;
  }
  int ooo = desc->out_of_order && d->info.out_of_order;
  int sequence = run_order != NULL;
  if (sequence) {
    if (desc->graph == NULL) {
      st = tg__error(err, TG_ERROR_INVALID_ARGUMENT, "check: a run order needs a graph");
      goto done;
    }
    has_writer = tg__calloc(a, z->record_count ? z->record_count : 1, 1);
    written = tg__calloc(a, z->record_count ? z->record_count : 1, 1);
    if (!has_writer || !written) {
      st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
      goto done;
    }
    for (size_t k = 0; k < x.write_start[x.op_count]; ++k) has_writer[x.writes[k]] = 1;
    for (size_t k = 0; k < run_order_length; ++k)
      if (run_order[k] >= x.op_count) {
        st = tg__error(err, TG_ERROR_INVALID_ARGUMENT, "check: run order entry %zu names op %u of %zu", k,
                       run_order[k], x.op_count);
        goto done;
      }
  }
  if (desc->out_of_order && desc->wait_counts) {
    st = check_waits_order_reuse(z, desc, &x, a, err);
    if (st != TG_OK) goto done;
  }
  /* A run order out of order: each entry is a task of its own, waiting for the latest run of the
   * ops its op waits for; where the host decides (a control-flow op, the first op of a branch or
   * of a loop's subgraph) a task waits for every task before it and every task after it waits
   * for it. */
  if (sequence && ooo) {
    last_step = tg__calloc(a, x.op_count ? x.op_count : 1, sizeof *last_step);
    step_waits = tg__calloc(a, run_order_length + 1, sizeof *step_waits);
    decides = tg__calloc(a, x.op_count ? x.op_count : 1, 1);
    if (!last_step || !step_waits || !decides) {
      st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
      goto done;
    }
    for (size_t o = 0; o < x.op_count; ++o) {
      last_step[o] = UINT32_MAX;
      decides[o] = o < desc->graph->op_count && (desc->graph->ops[o].flags & TG_OP_CONTROL_FLOW) != 0;
    }
    /* The first op of a branch or of a loop's subgraph runs once the host has decided to run it
     * (a WHILE's cond and body alike: the body's values of one iteration are the cond's of the
     * next). */
    for (size_t k = 1; k < desc->graph->flow_count; ++k) {
      const tg_subgraph *sg = &desc->graph->subgraphs[k];
      if (sg->first_op < sg->end_op && sg->first_op < x.op_count) decides[sg->first_op] = 1;
    }
  }
  st = d->vt->check_begin(d->impl, z->record_count, sequence && ooo ? run_order_length : x.op_count, ooo,
                          z->precision);
  if (st != TG_OK) {
    tg__error(err, st, "check: %s backend could not start (driver code %lld)",
              tg_backend_name(d->info.backend), (long long)tg_device_get_native_error(d));
    goto done;
  }
  size_t steps = sequence ? run_order_length : x.op_count;
  for (size_t step = 0; step < steps; ++step) {
    size_t o = sequence ? run_order[step] : step;
    size_t nr = 0, nw = 0;
    for (uint32_t i = x.read_start[o]; i < x.read_start[o + 1]; ++i) {
      uint32_t r = x.reads[i];
      if (sequence && has_writer[r] && !written[r]) continue; /* its producer did not run */
      reads[nr++] = (tg__check_access){r + 1, r, z->views[r], &z->resources[r]};
    }
    for (uint32_t i = x.write_start[o]; i < x.write_start[o + 1]; ++i) {
      uint32_t r = x.writes[i];
      if (sequence) written[r] = 1;
      writes[nw++] = (tg__check_access){r + 1, r, z->views[r], &z->resources[r]};
    }
    if (nr == 0 && nw == 0 && !ooo) continue;
    const uint32_t *w = NULL;
    size_t wn = 0;
    if (desc->wait_counts && o < desc->op_count) {
      w = desc->waits[o];
      wn = desc->wait_counts[o];
    }
    size_t task = o;
    if (sequence && ooo) {
      task = step;
      const int barrier = decides[o];
      size_t n = 0;
      if (segment > 0) step_waits[n++] = (uint32_t)(segment - 1); /* the last control-flow op */
      if (barrier) {
        for (size_t k = segment; k < step; ++k) step_waits[n++] = (uint32_t)k;
      } else {
        for (size_t k = 0; k < wn && n < run_order_length; ++k)
          if (w[k] < x.op_count && last_step[w[k]] != UINT32_MAX && last_step[w[k]] >= segment)
            step_waits[n++] = last_step[w[k]];
      }
      last_step[o] = (uint32_t)step;
      if (barrier) segment = step + 1;
      w = step_waits;
      wn = n;
    }
    st = d->vt->check_op(d->impl, task, reads, nr, writes, nw, w, wn);
    if (st != TG_OK) {
      d->vt->check_abort(d->impl);
      tg__error(err, st, "check: op %zu failed on the device (driver code %lld)", o,
                (long long)tg_device_get_native_error(d));
      goto done;
    }
  }
  st = d->vt->check_end(d->impl, counts, &out->checked_bytes);
  if (st != TG_OK) {
    tg__error(err, st, "check: finishing failed (driver code %lld)",
              (long long)tg_device_get_native_error(d));
    goto done;
  }
  for (size_t r = 0; r < z->record_count; ++r) {
    if (counts[r]) out->corrupted_records++;
    if (mismatches) mismatches[r] = counts[r];
  }
done:
  tg__free(a, last_step);
  tg__free(a, step_waits);
  tg__free(a, decides);
  tg__free(a, has_writer);
  tg__free(a, written);
  tg__free(a, counts);
  tg__free(a, reads);
  tg__free(a, writes);
  accesses_free(a, &x);
  return st;
}

static tg_status entry_realization_check_run(tg_realization *z, const tg_check_desc *desc,
                                             const uint32_t *run_order, size_t length,
                                             tg_check_result *out, tg_error_info *err) {
  if (run_order == NULL && length > 0) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "check: run order is NULL");
  static const uint32_t k_none = 0;
  return check_impl(z, desc, run_order ? run_order : &k_none, length, out, err);
}

tg_status tg_realization_check_run(tg_realization *z, const tg_check_desc *desc,
                                   const uint32_t *run_order, size_t length,
                                   tg_check_result *out, tg_error_info *err) {
  tg__error_begin(err);
  return tg__error_entry(err, entry_realization_check_run(z, desc, run_order, length, out, err),
                         "tg_realization_check_run", "check");
}

/* ---- single allocations and placed realizations (run-time pools) ---- */

tg_status tg__device_allocate(tg_device *d, const tg_tensor_resource *resource, tg_precision precision,
                              int arena, void **memory, tg_error_info *err) {
  *memory = NULL;
  tg_status st = tg__device_inject_failure(d, err);
  if (st != TG_OK) return st;
  st = d->vt->allocate(d->impl, resource, precision, arena, memory);
  if (st != TG_OK) {
    *memory = NULL;
    return tg__error(err, st, "allocating %llu bytes on the %s device failed: %s (driver code %lld)",
                     (unsigned long long)resource->bytes, tg_backend_name(d->info.backend),
                     tg_status_string(st), (long long)tg_device_get_native_error(d));
  }
  return TG_OK;
}

void tg__device_release(tg_device *d, void *memory) {
  if (d != NULL && memory != NULL) d->vt->release(d->impl, memory);
}

uint64_t tg__device_memory_native(tg_device *d, void *memory) {
  if (d == NULL || memory == NULL) return 0;
  tg_tensor_handle h;
  memset(&h, 0, sizeof h);
  d->vt->handle(d->impl, memory, NULL, &h);
  return h.memory;
}

tg_status tg__realization_create_placed(tg_device *d, const tg__placed_desc *desc,
                                        const tg_allocator *alloc, tg_realization **out,
                                        tg_error_info *err) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  if (d == NULL || desc == NULL ||
      (desc->record_count && (!desc->records || !desc->resources || !desc->memory_of || !desc->offset_of)) ||
      (desc->memory_count && (!desc->memories || !desc->objects)))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "placed realization: missing arrays");
  for (size_t r = 0; r < desc->record_count; ++r)
    if (desc->memory_of[r] >= desc->memory_count)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "placed realization: record %zu names memory %u of %zu",
                       r, desc->memory_of[r], desc->memory_count);
  alloc = tg__alloc_or_default(alloc);
  tg_realization *z = tg__calloc(alloc, 1, sizeof *z);
  if (z == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  z->device = d;
  z->alloc = *alloc;
  z->mode = TG_MODE_OBJECTS; /* sharing = same memory: a superset of real overlap, for waits */
  z->precision = desc->precision;
  z->record_count = desc->record_count;
  z->memory_count = desc->memory_count;
  z->borrowed = 1;
  size_t nr = desc->record_count ? desc->record_count : 1;
  size_t nm = desc->memory_count ? desc->memory_count : 1;
  z->memories = tg__calloc(alloc, nm, sizeof *z->memories);
  z->objects = tg__calloc(alloc, nm, sizeof *z->objects);
  z->memory_of = tg__calloc(alloc, nr, sizeof *z->memory_of);
  z->offset_of = tg__calloc(alloc, nr, sizeof *z->offset_of);
  z->views = tg__calloc(alloc, nr, sizeof *z->views);
  z->resources = tg__calloc(alloc, nr, sizeof *z->resources);
  z->records = tg__calloc(alloc, nr, sizeof *z->records);
  tg_status st = TG_OK;
  if (!z->memories || !z->objects || !z->memory_of || !z->offset_of || !z->views ||
      !z->resources || !z->records) {
    st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    goto fail;
  }
  if (desc->memory_count) {
    memcpy(z->memories, desc->memories, desc->memory_count * sizeof *z->memories);
    memcpy(z->objects, desc->objects, desc->memory_count * sizeof *z->objects);
  }
  if (desc->record_count) {
    memcpy(z->memory_of, desc->memory_of, desc->record_count * sizeof *z->memory_of);
    memcpy(z->offset_of, desc->offset_of, desc->record_count * sizeof *z->offset_of);
    memcpy(z->resources, desc->resources, desc->record_count * sizeof *z->resources);
    memcpy(z->records, desc->records, desc->record_count * sizeof *z->records);
  }
  for (size_t r = 0; r < z->record_count; ++r) {
    uint32_t k = z->memory_of[r];
    int arena = !tg_storage_is_texture(z->objects[k].storage);
    if ((st = tg__device_inject_failure(d, err)) != TG_OK) goto fail;
    st = d->vt->bind(d->impl, z->memories[k], &z->objects[k], z->offset_of[r], &z->resources[r],
                     z->precision, arena, &z->views[r]);
    if (st != TG_OK) {
      tg__error(err, st, "placing record %zu in memory %u at offset %llu failed: %s (driver code %lld)",
                r, k, (unsigned long long)z->offset_of[r], tg_status_string(st),
                (long long)tg_device_get_native_error(d));
      z->views[r] = NULL;
      goto fail;
    }
    z->stats.views++;
  }
  *out = z;
  return TG_OK;
fail:
  tg_realization_destroy(z);
  return st;
}

tg_status tg_device_open(const tg_device_options *options, const tg_allocator *alloc, tg_device **out,
                         tg_backend_skip *skipped, size_t *skipped_count, tg_error_info *err) {
  tg__error_begin(err);
  return tg__error_entry(err, entry_device_open(options, alloc, out, skipped, skipped_count, err), "tg_device_open", NULL);
}

tg_status tg_realization_create(tg_device *device, const tg_realize_desc *desc, const tg_allocator *alloc,
                                tg_realization **out, tg_error_info *err) {
  tg__error_begin(err);
  return tg__error_entry(err, realize(device, desc, NULL, alloc, out, err), "tg_realization_create", "realize");
}

tg_status tg_realization_create_with_capacity(tg_device *device, const tg_realize_desc *desc,
                                              const tg_realize_capacity *capacity, const tg_allocator *alloc,
                                              tg_realization **out, tg_error_info *err) {
  tg__error_begin(err);
  return tg__error_entry(err, realize(device, desc, capacity, alloc, out, err), "tg_realization_create_with_capacity",
                         "realize");
}

tg_status tg_realization_check(tg_realization *realization, const tg_check_desc *desc, tg_check_result *out,
                               tg_error_info *err) {
  tg__error_begin(err);
  return tg__error_entry(err, check_impl(realization, desc, NULL, 0, out, err), "tg_realization_check", "check");
}
