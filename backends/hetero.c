/* Heterogeneous realisation and its check (tangram/hetero.h): device, shared and host memory
 * for the sets of a heterogeneous plan, and a shadow run that drives the device's kernels for
 * GPU ops and the host for CPU ops. Backends only make driver calls (allocate_shared, map,
 * unmap, check_sync in backend_internal.h). */
#include "tangram/hetero.h"

#include <stdlib.h>
#include <string.h>

#include "backends/backend_internal.h"

#define HOST_ALIGN 64u

typedef struct host_block {
  void *raw;
  uint8_t *base;
  uint64_t bytes;
} host_block;

typedef struct hset {
  tg_space space;
  tg_mode mode;
  size_t first;                /* first record (across sets) */
  size_t count;
  size_t memory_count;
  void **memories;             /* device/shared: backend memories; host: host_block * */
  void **mapped;               /* shared: host pointer while mapped */
  tg_tensor_resource *objects; /* per memory */
} hset;

struct tg_hetero_realization {
  tg_device *device;
  const tg__backend_vtable *vt;
  void *impl;
  tg_allocator alloc;
  tg_precision precision;
  size_t set_count;
  hset *sets;
  size_t record_count;
  uint32_t *set_of;            /* per record */
  uint32_t *memory_of;
  uint64_t *offset_of;
  void **views;                /* device and shared records */
  tg_tensor_resource *resources;
  uint32_t *tensor_of;         /* UINT32_MAX when not given */
  int user_mapped;             /* tg_hetero_realization_map in effect */
  tg_hetero_stats stats;
};

/* ---- memory ---- */

static void host_block_free(const tg_allocator *a, host_block *b) {
  if (b == NULL) return;
  tg__free(a, b->raw);
  tg__free(a, b);
}

static tg_status host_block_new(const tg_allocator *a, uint64_t bytes, host_block **out) {
  *out = NULL;
  host_block *b = tg__calloc(a, 1, sizeof *b);
  if (b == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  uint64_t padded;
  if (!tg__add_u64(bytes, HOST_ALIGN, &padded) || padded > SIZE_MAX) {
    tg__free(a, b);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  b->raw = tg__malloc(a, (size_t)padded);
  if (b->raw == NULL) {
    tg__free(a, b);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  uintptr_t p = (uintptr_t)b->raw;
  b->base = (uint8_t *)((p + HOST_ALIGN - 1) & ~(uintptr_t)(HOST_ALIGN - 1));
  b->bytes = bytes;
  memset(b->base, 0xA5, (size_t)bytes);
  *out = b;
  return TG_OK;
}

static void unmap_set(tg_hetero_realization *z, hset *s) {
  if (s->space != TG_SPACE_SHARED || s->mapped == NULL) return;
  for (size_t k = 0; k < s->memory_count; ++k)
    if (s->mapped[k]) {
      z->vt->unmap(z->impl, s->memories[k]);
      s->mapped[k] = NULL;
    }
}

void tg_hetero_realization_destroy(tg_hetero_realization *z) {
  if (z == NULL) return;
  const tg_allocator *a = &z->alloc;
  if (z->views)
    for (size_t r = 0; r < z->record_count; ++r)
      if (z->views[r]) z->vt->unbind(z->impl, z->views[r]);
  for (size_t i = 0; z->sets && i < z->set_count; ++i) {
    hset *s = &z->sets[i];
    unmap_set(z, s);
    for (size_t k = 0; s->memories && k < s->memory_count; ++k) {
      if (s->memories[k] == NULL) continue;
      if (s->space == TG_SPACE_HOST) host_block_free(a, s->memories[k]);
      else z->vt->release(z->impl, s->memories[k]);
    }
    tg__free(a, s->memories);
    tg__free(a, s->mapped);
    tg__free(a, s->objects);
  }
  tg_allocator copy = z->alloc;
  tg__free(&copy, z->sets);
  tg__free(&copy, z->set_of);
  tg__free(&copy, z->memory_of);
  tg__free(&copy, z->offset_of);
  tg__free(&copy, z->views);
  tg__free(&copy, z->resources);
  tg__free(&copy, z->tensor_of);
  tg__free(&copy, z);
}

/* The object resource of memory k of an objects plan: its members' storage and extent. */
static tg_status object_resource(const tg_hetero_set_desc *d, size_t k, tg_precision precision,
                                 tg_tensor_resource *obj) {
  const tg_plan *p = d->plan;
  tg_storage storage = TG_STORAGE_COUNT;
  for (size_t r = 0; r < d->record_count; ++r) {
    if (p->object_of[r] != k) continue;
    if (storage == TG_STORAGE_COUNT) storage = d->resources[r].storage;
    else if (storage != d->resources[r].storage) return TG_ERROR_INVALID_ARGUMENT;
  }
  if (storage == TG_STORAGE_COUNT) storage = TG_STORAGE_BUFFER;
  obj->storage = storage;
  if (tg_storage_is_texture(storage)) {
    obj->extent = p->object_sizes[k];
    uint64_t v;
    if (tg_extent_volume(obj->extent, &v) != TG_OK || !tg__mul_u64(v, tg__texel_bytes(precision), &obj->bytes))
      return TG_ERROR_OVERFLOW;
  } else {
    if (p->dims != 1) return TG_ERROR_INVALID_ARGUMENT;
    obj->bytes = p->object_sizes[k].w;
    obj->extent = (tg_extent){obj->bytes, 1, 1};
  }
  return TG_OK;
}

static tg_status check_set(const tg_device_info *info, const tg__backend_vtable *vt,
                           const tg_hetero_set_desc *d, size_t i, tg_error_info *err) {
  if ((unsigned)d->space >= TG_SPACE_COUNT)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "hetero: set %zu has no space", i);
  if (d->record_count && (d->plan == NULL || d->records == NULL || d->resources == NULL))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "hetero: set %zu lacks its plan, records or resources", i);
  if (d->plan && d->plan->record_count != d->record_count)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "hetero: set %zu: the plan has %zu records, not %zu", i,
                     d->plan->record_count, d->record_count);
  if (d->space == TG_SPACE_SHARED && d->record_count &&
      (vt->allocate_shared == NULL || vt->map == NULL || vt->unmap == NULL))
    return tg__error(err, TG_ERROR_UNSUPPORTED, "hetero: the %s backend has no shared memory",
                     tg_backend_name(info->backend));
  for (size_t r = 0; r < d->record_count; ++r) {
    int image = tg_storage_is_texture(d->resources[r].storage);
    if (image && d->space != TG_SPACE_DEVICE)
      return tg__error(err, TG_ERROR_UNSUPPORTED,
                       "hetero: record %zu of the %s set is an image: %s memory holds buffers only "
                       "(an image cannot be mapped without a copy)",
                       r, tg_space_name(d->space), tg_space_name(d->space));
    if (image && !info->images)
      return tg__error(err, TG_ERROR_UNSUPPORTED, "hetero: the %s device has no image support",
                       tg_backend_name(info->backend));
    if (image && d->plan->mode == TG_MODE_OFFSETS && !info->arena_images)
      return tg__error(err, TG_ERROR_UNSUPPORTED,
                       "hetero: this %s device cannot place images inside an arena; use objects mode",
                       tg_backend_name(info->backend));
  }
  return TG_OK;
}

tg_status tg_hetero_realization_create(tg_device *d, const tg_hetero_realize_desc *desc,
                                       const tg_allocator *alloc, tg_hetero_realization **out,
                                       tg_error_info *err) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  if (d == NULL || desc == NULL || (desc->set_count && desc->sets == NULL))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "hetero: missing device or sets");
  alloc = tg__alloc_or_default(alloc);
  const tg__backend_vtable *vt = tg__device_vtable(d);
  const tg_device_info *info = tg_device_get_info(d);
  size_t total = 0;
  for (size_t i = 0; i < desc->set_count; ++i) {
    const tg_hetero_set_desc *s = &desc->sets[i];
    tg_status st = check_set(info, vt, s, i, err);
    if (st != TG_OK) return st;
    if (s->record_count && !desc->skip_validation) {
      tg_error_info verr = {{0}};
      st = tg_plan_validate(s->records, s->record_count, s->dims, s->plan, 0, NULL, alloc, &verr);
      if (st != TG_OK)
        return tg__error(err, st, "hetero: the %s plan (set %zu): %s", tg_space_name(s->space), i,
                         verr.message);
    }
    total += s->record_count;
  }
  tg_hetero_realization *z = tg__calloc(alloc, 1, sizeof *z);
  if (z == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  z->device = d;
  z->vt = vt;
  z->impl = tg__device_impl(d);
  z->alloc = *alloc;
  z->precision = desc->precision;
  z->set_count = desc->set_count;
  z->record_count = total;
  size_t nr = total ? total : 1;
  z->sets = tg__calloc(alloc, desc->set_count ? desc->set_count : 1, sizeof *z->sets);
  z->set_of = tg__calloc(alloc, nr, sizeof *z->set_of);
  z->memory_of = tg__calloc(alloc, nr, sizeof *z->memory_of);
  z->offset_of = tg__calloc(alloc, nr, sizeof *z->offset_of);
  z->views = tg__calloc(alloc, nr, sizeof *z->views);
  z->resources = tg__calloc(alloc, nr, sizeof *z->resources);
  z->tensor_of = tg__calloc(alloc, nr, sizeof *z->tensor_of);
  tg_status st = TG_OK;
  if (!z->sets || !z->set_of || !z->memory_of || !z->offset_of || !z->views || !z->resources ||
      !z->tensor_of) {
    st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    goto fail;
  }
  size_t first = 0;
  for (size_t i = 0; i < desc->set_count; ++i) {
    const tg_hetero_set_desc *sd = &desc->sets[i];
    hset *s = &z->sets[i];
    s->space = sd->space;
    s->first = first;
    s->count = sd->record_count;
    const tg_plan *p = sd->plan;
    s->mode = p ? p->mode : TG_MODE_OBJECTS;
    int arena = s->mode == TG_MODE_OFFSETS;
    /* Offsets mode: one allocation per arena. */
    s->memory_count = s->count == 0 ? 0 : (arena ? (p->arena_count > 1 ? p->arena_count : 1) : p->object_count);
    size_t nm = s->memory_count ? s->memory_count : 1;
    s->memories = tg__calloc(alloc, nm, sizeof *s->memories);
    s->mapped = tg__calloc(alloc, nm, sizeof *s->mapped);
    s->objects = tg__calloc(alloc, nm, sizeof *s->objects);
    if (!s->memories || !s->mapped || !s->objects) {
      st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
      goto fail;
    }
    for (size_t r = 0; r < s->count; ++r) {
      size_t g = first + r;
      z->set_of[g] = (uint32_t)i;
      z->resources[g] = sd->resources[r];
      z->tensor_of[g] = sd->tensor_of ? sd->tensor_of[r] : UINT32_MAX;
      z->memory_of[g] = arena ? tg_plan_arena_of(p, r) : p->object_of[r];
      z->offset_of[g] = arena ? p->offset_of[r] : 0;
    }
    /* Allocations. */
    for (size_t k = 0; k < s->memory_count; ++k) {
      if (arena) {
        uint64_t bytes = tg_plan_arena_size(p, k);
        s->objects[k] = (tg_tensor_resource){TG_STORAGE_BUFFER, {bytes, 1, 1}, bytes};
      } else if ((st = object_resource(sd, k, z->precision, &s->objects[k])) != TG_OK) {
        tg__error(err, st, "hetero: %s object %zu mixes storages or has a bad extent",
                  tg_space_name(s->space), k);
        goto fail;
      }
      if (s->space == TG_SPACE_HOST) {
        host_block *b = NULL;
        if ((st = host_block_new(alloc, s->objects[k].bytes, &b)) != TG_OK) {
          tg__error(err, st, "hetero: host memory for %s %zu (%llu bytes): out of host memory",
                    arena ? "arena" : "object", k, (unsigned long long)s->objects[k].bytes);
          goto fail;
        }
        s->memories[k] = b;
      } else {
        if ((st = tg__device_inject_failure(d, err)) != TG_OK) goto fail;
        st = s->space == TG_SPACE_SHARED
                 ? vt->allocate_shared(z->impl, &s->objects[k], z->precision, arena, &s->memories[k])
                 : vt->allocate(z->impl, &s->objects[k], z->precision, arena, &s->memories[k]);
        if (st != TG_OK) {
          s->memories[k] = NULL;
          tg__error(err, st, "hetero: allocating %s %s %zu (%llu bytes) failed: %s (driver code %lld)",
                    tg_space_name(s->space), arena ? "arena" : "object", k,
                    (unsigned long long)s->objects[k].bytes, tg_status_string(st),
                    (long long)tg_device_get_native_error(d));
          goto fail;
        }
      }
      z->stats.allocations[s->space]++;
      z->stats.allocated_bytes[s->space] += s->objects[k].bytes;
    }
    /* Device views of device and shared records. */
    for (size_t r = 0; r < s->count && s->space != TG_SPACE_HOST; ++r) {
      size_t g = first + r;
      if ((st = tg__device_inject_failure(d, err)) != TG_OK) goto fail;
      uint32_t k = z->memory_of[g];
      st = vt->bind(z->impl, s->memories[k], &s->objects[k], z->offset_of[g], &z->resources[g],
                    z->precision, arena, &z->views[g]);
      if (st != TG_OK) {
        z->views[g] = NULL;
        tg__error(err, st, "hetero: placing %s record %zu failed: %s (driver code %lld)",
                  tg_space_name(s->space), r, tg_status_string(st),
                  (long long)tg_device_get_native_error(d));
        goto fail;
      }
      z->stats.views++;
    }
    /* Host records must lie inside their memory (the plan was validated; still, never let a
     * host access leave its block). */
    for (size_t r = 0; r < s->count && s->space == TG_SPACE_HOST; ++r) {
      size_t g = first + r;
      uint64_t end;
      if (!tg__add_u64(z->offset_of[g], z->resources[g].bytes, &end) ||
          end > s->objects[z->memory_of[g]].bytes) {
        st = tg__error(err, TG_ERROR_INVALID_PLAN, "hetero: host record %zu leaves its memory", r);
        goto fail;
      }
    }
    first += s->count;
  }
  *out = z;
  return TG_OK;
fail:
  tg_hetero_realization_destroy(z);
  return st;
}

void tg_hetero_realization_get_stats(const tg_hetero_realization *z, tg_hetero_stats *out) {
  if (out == NULL) return;
  if (z == NULL) memset(out, 0, sizeof *out);
  else *out = z->stats;
}

/* Host pointer of shared memory k of set s, mapping it when needed. */
static tg_status map_memory(tg_hetero_realization *z, hset *s, size_t k, uint8_t **out) {
  if (s->mapped[k] == NULL) {
    void *p = NULL;
    tg_status st = z->vt->map(z->impl, s->memories[k], &p);
    if (st != TG_OK) return st;
    s->mapped[k] = p;
  }
  *out = s->mapped[k];
  return TG_OK;
}

tg_status tg_hetero_realization_map(tg_hetero_realization *z, tg_error_info *err) {
  if (z == NULL) return TG_ERROR_INVALID_ARGUMENT;
  for (size_t i = 0; i < z->set_count; ++i) {
    hset *s = &z->sets[i];
    if (s->space != TG_SPACE_SHARED) continue;
    for (size_t k = 0; k < s->memory_count; ++k) {
      uint8_t *p;
      tg_status st = map_memory(z, s, k, &p);
      if (st != TG_OK)
        return tg__error(err, st, "hetero: mapping shared memory %zu failed (driver code %lld)", k,
                         (long long)tg_device_get_native_error(z->device));
    }
  }
  z->user_mapped = 1;
  return TG_OK;
}

tg_status tg_hetero_realization_unmap(tg_hetero_realization *z, tg_error_info *err) {
  if (z == NULL) return TG_ERROR_INVALID_ARGUMENT;
  tg_status st = TG_OK;
  for (size_t i = 0; i < z->set_count; ++i) {
    hset *s = &z->sets[i];
    if (s->space != TG_SPACE_SHARED) continue;
    for (size_t k = 0; k < s->memory_count; ++k) {
      if (s->mapped[k] == NULL) continue;
      tg_status u = z->vt->unmap(z->impl, s->memories[k]);
      s->mapped[k] = NULL;
      if (u != TG_OK && st == TG_OK)
        st = tg__error(err, u, "hetero: unmapping shared memory %zu failed (driver code %lld)", k,
                       (long long)tg_device_get_native_error(z->device));
    }
  }
  z->user_mapped = 0;
  return st;
}

tg_status tg_hetero_realization_get_tensor(const tg_hetero_realization *z, size_t record,
                                           tg_space *space, tg_tensor_handle *handle, void **host) {
  if (z == NULL || record >= z->record_count) return TG_ERROR_INVALID_ARGUMENT;
  const hset *s = &z->sets[z->set_of[record]];
  uint32_t k = z->memory_of[record];
  if (space) *space = s->space;
  if (handle) {
    memset(handle, 0, sizeof *handle);
    if (s->space != TG_SPACE_HOST) {
      z->vt->handle(z->impl, s->memories[k], z->views[record], handle);
      handle->offset = z->offset_of[record];
      const tg_tensor_resource *res = &z->resources[record];
      handle->region = tg_storage_is_texture(res->storage) ? res->extent : (tg_extent){res->bytes, 1, 1};
    }
  }
  if (host) {
    *host = NULL;
    if (s->space == TG_SPACE_HOST) *host = ((host_block *)s->memories[k])->base + z->offset_of[record];
    else if (s->space == TG_SPACE_SHARED && s->mapped[k])
      *host = (uint8_t *)s->mapped[k] + z->offset_of[record];
  }
  return TG_OK;
}

/* ---- the check ---- */

typedef struct run_state {
  tg_hetero_realization *z;
  const tg_graph *g;
  const tg_processor *proc;
  size_t n;
  int32_t *record_of_tensor;
  int32_t *producer;           /* per tensor: the op writing it, -1 if none */
  uint32_t *order;             /* the run order */
  uint32_t *pos;               /* per op: GPU position, UINT32_MAX for CPU ops / not yet */
  uint64_t *counts;            /* per record: CPU mismatches */
  tg__check_access *reads, *writes;
  uint32_t *gwaits;
  size_t access_cap, wait_cap;
  uint64_t checked_bytes;
} run_state;

static tg_processor proc_of(const run_state *r, size_t op) {
  return r->proc ? r->proc[op] : TG_PROCESSOR_GPU;
}

/* The run order: in order, or highest-numbered ready op first under the waits plus the CPU's
 * op order (and the GPU's, when it runs in order). */
static tg_status run_order(run_state *rs, const tg_hetero_check_desc *desc, int ooo,
                             int gpu_in_order, tg_error_info *err) {
  size_t n = rs->n;
  const tg_allocator *a = &rs->z->alloc;
  if (!ooo) {
    for (size_t i = 0; i < n; ++i) rs->order[i] = (uint32_t)i;
    return TG_OK;
  }
  /* Predecessor lists: the waits (or the graph's edges) and the previous CPU op. */
  size_t *start = tg__calloc(a, n + 1, sizeof *start);
  uint32_t *pending = tg__calloc(a, n ? n : 1, sizeof *pending);
  uint32_t *heap = tg__calloc(a, n ? n : 1, sizeof *heap);
  uint32_t *prev_same = tg__calloc(a, n ? n : 1, sizeof *prev_same);
  size_t *succ_start = tg__calloc(a, n + 1, sizeof *succ_start);
  uint32_t *succ = NULL, *preds = NULL;
  tg_status st = TG_ERROR_OUT_OF_HOST_MEMORY;
  if (!start || !pending || !heap || !prev_same || !succ_start) goto done;
  uint32_t last[TG_PROCESSOR_COUNT] = {UINT32_MAX, UINT32_MAX};
  for (size_t i = 0; i < n; ++i) {
    tg_processor p = proc_of(rs, i);
    prev_same[i] = UINT32_MAX;
    if (p == TG_PROCESSOR_CPU || gpu_in_order) {
      prev_same[i] = last[p];
      last[p] = (uint32_t)i;
    }
  }
  /* Count. */
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t c = prev_same[i] != UINT32_MAX;
    if (desc->wait_start) {
      c += desc->wait_start[i + 1] - desc->wait_start[i];
    } else {
      const tg_op *op = &rs->g->ops[i];
      c += op->input_count;
    }
    start[i + 1] = start[i] + c;
    total += c;
  }
  preds = tg__calloc(a, total ? total : 1, sizeof *preds);
  succ = tg__calloc(a, total ? total : 1, sizeof *succ);
  if (!preds || !succ) goto done;
  const int32_t *producer = rs->producer;
  for (size_t i = 0; i < n; ++i) {
    size_t at = start[i];
    if (prev_same[i] != UINT32_MAX) preds[at++] = prev_same[i];
    if (desc->wait_start) {
      for (size_t e = desc->wait_start[i]; e < desc->wait_start[i + 1]; ++e) {
        if (desc->waits[e] >= i) {
          st = tg__error(err, TG_ERROR_INVALID_ARGUMENT, "check: op %zu waits for op %u, which is not earlier",
                         i, desc->waits[e]);
          goto done;
        }
        preds[at++] = desc->waits[e];
      }
    } else {
      const tg_op *op = &rs->g->ops[i];
      for (uint32_t k = 0; k < op->input_count; ++k) {
        int32_t t = op->inputs[k];
        if (t < 0 || (size_t)t >= rs->g->tensor_count || producer[t] < 0 || (size_t)producer[t] >= i) continue;
        preds[at++] = (uint32_t)producer[t];
      }
    }
    start[i + 1] = at; /* may be fewer than counted */
  }
  /* Successors (compacting the predecessor lists as they are read). */
  for (size_t i = 0; i < n; ++i)
    for (size_t e = start[i]; e < start[i + 1]; ++e) succ_start[preds[e] + 1]++;
  for (size_t i = 0; i < n; ++i) succ_start[i + 1] += succ_start[i];
  {
    size_t *cursor = tg__calloc(a, n ? n : 1, sizeof *cursor);
    if (cursor == NULL) goto done;
    for (size_t i = 0; i < n; ++i)
      for (size_t e = start[i]; e < start[i + 1]; ++e) {
        uint32_t p = preds[e];
        succ[succ_start[p] + cursor[p]++] = (uint32_t)i;
        pending[i]++;
      }
    tg__free(a, cursor);
  }
  size_t hn = 0, placed = 0;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) tg__op_heap_push(heap, &hn, (uint32_t)i);
  while (hn > 0) {
    uint32_t op = tg__op_heap_pop(heap, &hn);
    rs->order[placed++] = op;
    for (size_t e = succ_start[op]; e < succ_start[op + 1]; ++e)
      if (--pending[succ[e]] == 0) tg__op_heap_push(heap, &hn, succ[e]);
  }
  st = placed == n ? TG_OK : tg__error(err, TG_ERROR_INVALID_ARGUMENT, "check: the waits form a cycle");
done:
  if (st == TG_ERROR_OUT_OF_HOST_MEMORY) tg__error(err, st, "check: out of host memory");
  tg__free(a, start);
  tg__free(a, pending);
  tg__free(a, heap);
  tg__free(a, prev_same);
  tg__free(a, succ_start);
  tg__free(a, succ);
  tg__free(a, preds);
  return st;
}

/* The records op `o` reads (write = 0) or writes, each once, into rs->reads / rs->writes. */
static tg_status op_records(run_state *rs, size_t o, int write, size_t *count) {
  const tg_op *op = &rs->g->ops[o];
  uint32_t m = write ? op->output_count : op->input_count;
  const int32_t *ts = write ? op->outputs : op->inputs;
  tg__check_access **list = write ? &rs->writes : &rs->reads;
  *count = 0;
  for (uint32_t i = 0; i < m; ++i) {
    int32_t t = ts[i];
    if (t < 0 || (size_t)t >= rs->g->tensor_count || rs->record_of_tensor[t] < 0) continue;
    int dup = 0;
    for (uint32_t j = 0; j < i; ++j) dup |= ts[j] == t;
    if (dup) continue;
    uint32_t r = (uint32_t)rs->record_of_tensor[t];
    (*list)[(*count)++] = (tg__check_access){r + 1, r, rs->z->views[r], &rs->z->resources[r]};
  }
  return TG_OK;
}

/* A CPU op: verify its inputs, then write its outputs, through host or mapped memory. */
static tg_status run_cpu_op(run_state *rs, size_t o, tg_error_info *err) {
  tg_hetero_realization *z = rs->z;
  for (int write = 0; write < 2; ++write) {
    size_t nacc;
    op_records(rs, o, write, &nacc);
    const tg__check_access *acc = write ? rs->writes : rs->reads;
    for (size_t i = 0; i < nacc; ++i) {
      size_t r = acc[i].record;
      hset *s = &z->sets[z->set_of[r]];
      uint32_t k = z->memory_of[r];
      uint8_t *base;
      if (s->space == TG_SPACE_DEVICE)
        return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                         "check: op %zu runs on the cpu but record %zu is in device memory", o, r);
      if (s->space == TG_SPACE_HOST) {
        base = ((host_block *)s->memories[k])->base;
      } else {
        tg_status st = map_memory(z, s, k, &base);
        if (st != TG_OK)
          return tg__error(err, st, "check: op %zu: mapping shared memory failed (driver code %lld)", o,
                           (long long)tg_device_get_native_error(z->device));
      }
      uint64_t bytes = z->resources[r].bytes;
      if (base == NULL) {
        if (bytes) return tg__error(err, TG_ERROR_INVALID_PLAN, "check: record %zu has no memory", r);
        continue;
      }
      rs->counts[r] += tg__signature_buffer_access(base + z->offset_of[r], bytes, acc[i].signature_id, write);
      rs->checked_bytes += bytes;
    }
  }
  return TG_OK;
}

static tg_status unmap_all(tg_hetero_realization *z, tg_error_info *err) {
  for (size_t i = 0; i < z->set_count; ++i) {
    hset *s = &z->sets[i];
    if (s->space != TG_SPACE_SHARED) continue;
    for (size_t k = 0; k < s->memory_count; ++k) {
      if (s->mapped[k] == NULL) continue;
      tg_status st = z->vt->unmap(z->impl, s->memories[k]);
      s->mapped[k] = NULL;
      if (st != TG_OK)
        return tg__error(err, st, "check: unmapping shared memory failed (driver code %lld)",
                         (long long)tg_device_get_native_error(z->device));
    }
  }
  return TG_OK;
}

/* Fresh memory for a check: host and shared memory hold a pattern no signature matches word
 * for word (device memory is reset by the backend). */
static tg_status fill_fresh(tg_hetero_realization *z, tg_error_info *err) {
  for (size_t i = 0; i < z->set_count; ++i) {
    hset *s = &z->sets[i];
    if (s->space == TG_SPACE_DEVICE) continue;
    for (size_t k = 0; k < s->memory_count; ++k) {
      uint8_t *base;
      if (s->space == TG_SPACE_HOST) base = ((host_block *)s->memories[k])->base;
      else {
        tg_status st = map_memory(z, s, k, &base);
        if (st != TG_OK)
          return tg__error(err, st, "check: mapping shared memory failed (driver code %lld)",
                           (long long)tg_device_get_native_error(z->device));
      }
      if (base && s->objects[k].bytes <= SIZE_MAX) memset(base, 0xA5, (size_t)s->objects[k].bytes);
    }
  }
  return unmap_all(z, err);
}

tg_status tg_hetero_realization_check(tg_hetero_realization *z, const tg_hetero_check_desc *desc,
                                      tg_check_result *out, tg_error_info *err) {
  if (z == NULL || desc == NULL || desc->graph == NULL || out == NULL ||
      (desc->wait_start != NULL && desc->waits == NULL))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "check: missing realisation, graph or result");
  const tg_graph *g = desc->graph;
  const tg_allocator *a = &z->alloc;
  out->corrupted_records = 0;
  out->checked_bytes = 0;
  if (z->user_mapped)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "check: shared memory is mapped by the caller");
  for (size_t r = 0; r < z->record_count; ++r)
    if (z->tensor_of[r] >= g->tensor_count)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "check: record %zu names no tensor of the graph", r);
  for (size_t i = 0; desc->processor_of && i < g->op_count; ++i)
    if ((unsigned)desc->processor_of[i] >= TG_PROCESSOR_COUNT)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "check: op %zu has no processor", i);
  run_state rs = {.z = z, .g = g, .proc = desc->processor_of, .n = g->op_count};
  size_t n = rs.n, nr = z->record_count ? z->record_count : 1;
  const tg_device_info *info = tg_device_get_info(z->device);
  int ooo = desc->out_of_order != 0;
  int device_ooo = ooo && info->out_of_order;
  int begun = 0;
  tg_status st = TG_ERROR_OUT_OF_HOST_MEMORY;
  uint64_t *gpu_counts = NULL;
  rs.record_of_tensor = tg__malloc(a, (g->tensor_count ? g->tensor_count : 1) * sizeof *rs.record_of_tensor);
  rs.producer = tg__malloc(a, (g->tensor_count ? g->tensor_count : 1) * sizeof *rs.producer);
  rs.order = tg__calloc(a, n ? n : 1, sizeof *rs.order);
  rs.pos = tg__calloc(a, n ? n : 1, sizeof *rs.pos);
  rs.counts = tg__calloc(a, nr, sizeof *rs.counts);
  gpu_counts = tg__calloc(a, nr, sizeof *gpu_counts);
  if (!rs.record_of_tensor || !rs.producer || !rs.order || !rs.pos || !rs.counts || !gpu_counts)
    goto oom;
  for (size_t t = 0; t < g->tensor_count; ++t) rs.record_of_tensor[t] = rs.producer[t] = -1;
  for (size_t o = 0; o < n; ++o)
    for (uint32_t k = 0; k < g->ops[o].output_count; ++k) {
      int32_t t = g->ops[o].outputs[k];
      if (t >= 0 && (size_t)t < g->tensor_count) rs.producer[t] = (int32_t)o;
    }
  for (size_t r = 0; r < z->record_count; ++r) rs.record_of_tensor[z->tensor_of[r]] = (int32_t)r;
  size_t max_io = 1, gpu_ops = 0;
  for (size_t o = 0; o < n; ++o) {
    const tg_op *op = &g->ops[o];
    if (op->input_count > max_io) max_io = op->input_count;
    if (op->output_count > max_io) max_io = op->output_count;
    gpu_ops += proc_of(&rs, o) == TG_PROCESSOR_GPU;
  }
  /* Records no op writes (graph inputs, with plan_io) are written by the engine before the run:
   * by the host in host and shared memory, by a first device step in device memory. */
  size_t device_inputs = 0;
  for (size_t r = 0; r < z->record_count; ++r)
    device_inputs += rs.producer[z->tensor_of[r]] < 0 && z->sets[z->set_of[r]].space == TG_SPACE_DEVICE;
  rs.reads = tg__calloc(a, max_io, sizeof *rs.reads);
  rs.writes = tg__calloc(a, max_io > device_inputs ? max_io : device_inputs, sizeof *rs.writes);
  if (!rs.reads || !rs.writes) goto oom;
  if ((st = run_order(&rs, desc, ooo, !device_ooo, err)) != TG_OK) goto done;
  if ((st = fill_fresh(z, err)) != TG_OK) goto done;
  st = z->vt->check_begin(z->impl, z->record_count, gpu_ops + (device_inputs > 0), device_ooo, z->precision);
  if (st != TG_OK) {
    tg__error(err, st, "check: the %s backend could not start (driver code %lld)",
              tg_backend_name(info->backend), (long long)tg_device_get_native_error(z->device));
    goto done;
  }
  begun = 1;
  uint32_t next_pos = 0, segment = 0; /* GPU positions given out; the first one since the last drain */
  int gpu_pending = 0;
  for (size_t i = 0; i < n; ++i) rs.pos[i] = UINT32_MAX;
  for (size_t r = 0; r < z->record_count; ++r) {
    if (rs.producer[z->tensor_of[r]] >= 0) continue;
    hset *s = &z->sets[z->set_of[r]];
    if (s->space == TG_SPACE_DEVICE) continue; /* below, in one device step */
    uint8_t *base;
    if (s->space == TG_SPACE_HOST) base = ((host_block *)s->memories[z->memory_of[r]])->base;
    else if ((st = map_memory(z, s, z->memory_of[r], &base)) != TG_OK) {
      tg__error(err, st, "check: mapping shared memory failed (driver code %lld)",
                (long long)tg_device_get_native_error(z->device));
      goto done;
    }
    if (base) tg__signature_buffer_access(base + z->offset_of[r], z->resources[r].bytes, (uint32_t)r + 1, 1);
  }
  if (device_inputs) {
    size_t nw = 0;
    for (size_t r = 0; r < z->record_count; ++r)
      if (rs.producer[z->tensor_of[r]] < 0 && z->sets[z->set_of[r]].space == TG_SPACE_DEVICE)
        rs.writes[nw++] = (tg__check_access){(uint32_t)r + 1, r, z->views[r], &z->resources[r]};
    if ((st = unmap_all(z, err)) != TG_OK) goto done;
    st = z->vt->check_op(z->impl, next_pos++, rs.reads, 0, rs.writes, nw, NULL, 0);
    if (st == TG_OK && z->vt->check_sync) st = z->vt->check_sync(z->impl);
    if (st != TG_OK) {
      tg__error(err, st, "check: writing the graph inputs failed (driver code %lld)",
                (long long)tg_device_get_native_error(z->device));
      goto done;
    }
    segment = next_pos;
  }
  for (size_t k = 0; k < n; ++k) {
    size_t o = rs.order[k];
    if (proc_of(&rs, o) == TG_PROCESSOR_CPU) {
      if (gpu_pending && z->vt->check_sync) {
        if ((st = z->vt->check_sync(z->impl)) != TG_OK) {
          tg__error(err, st, "check: waiting for the device before op %zu failed (driver code %lld)", o,
                    (long long)tg_device_get_native_error(z->device));
          goto done;
        }
      }
      gpu_pending = 0;
      segment = next_pos;
      if ((st = run_cpu_op(&rs, o, err)) != TG_OK) goto done;
      continue;
    }
    if ((st = unmap_all(z, err)) != TG_OK) goto done;
    size_t nrd, nwr;
    op_records(&rs, o, 0, &nrd);
    op_records(&rs, o, 1, &nwr);
    for (size_t i = 0; i < nrd + nwr; ++i) {
      const tg__check_access *x = i < nrd ? &rs.reads[i] : &rs.writes[i - nrd];
      if (z->sets[z->set_of[x->record]].space == TG_SPACE_HOST) {
        st = tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                       "check: op %zu runs on the gpu but record %zu is in host memory", o, x->record);
        goto done;
      }
    }
    /* Device waits: GPU ops started since the last drain (earlier ones have finished). */
    size_t nw = 0;
    if (device_ooo) {
      size_t lo = desc->wait_start ? desc->wait_start[o] : 0, hi = desc->wait_start ? desc->wait_start[o + 1] : 0;
      if (!tg__grow(a, (void **)&rs.gwaits, &rs.wait_cap, (hi - lo) + max_io + 1, sizeof *rs.gwaits)) goto oom;
      if (desc->wait_start) {
        for (size_t e = lo; e < hi; ++e) {
          uint32_t w = desc->waits[e];
          if (rs.pos[w] != UINT32_MAX && rs.pos[w] >= segment) rs.gwaits[nw++] = rs.pos[w];
        }
      } else {
        const tg_op *op = &g->ops[o];
        for (uint32_t x = 0; x < op->input_count; ++x) {
          int32_t t = op->inputs[x];
          if (t < 0 || (size_t)t >= g->tensor_count || rs.producer[t] < 0) continue;
          uint32_t w = (uint32_t)rs.producer[t];
          if (w < o && rs.pos[w] != UINT32_MAX && rs.pos[w] >= segment) rs.gwaits[nw++] = rs.pos[w];
        }
      }
    }
    rs.pos[o] = next_pos++;
    st = z->vt->check_op(z->impl, rs.pos[o], rs.reads, nrd, rs.writes, nwr, rs.gwaits, nw);
    if (st != TG_OK) {
      tg__error(err, st, "check: op %zu failed on the device (driver code %lld)", o,
                (long long)tg_device_get_native_error(z->device));
      goto done;
    }
    gpu_pending = 1;
  }
  if ((st = unmap_all(z, err)) != TG_OK) goto done;
  {
    uint64_t gpu_bytes = 0;
    begun = 0;
    st = z->vt->check_end(z->impl, gpu_counts, &gpu_bytes);
    if (st != TG_OK) {
      tg__error(err, st, "check: finishing failed (driver code %lld)",
                (long long)tg_device_get_native_error(z->device));
      goto done;
    }
    out->checked_bytes = rs.checked_bytes + gpu_bytes;
  }
  for (size_t r = 0; r < z->record_count; ++r) {
    uint64_t c = rs.counts[r] + gpu_counts[r];
    if (c) out->corrupted_records++;
    if (out->mismatches) out->mismatches[r] = c;
  }
  st = TG_OK;
  goto done;
oom:
  st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "check: out of host memory");
done:
  if (st != TG_OK) {
    unmap_all(z, NULL);
    if (begun) z->vt->check_abort(z->impl);
  }
  tg__free(a, rs.record_of_tensor);
  tg__free(a, rs.producer);
  tg__free(a, rs.order);
  tg__free(a, rs.pos);
  tg__free(a, rs.counts);
  tg__free(a, rs.reads);
  tg__free(a, rs.writes);
  tg__free(a, rs.gwaits);
  tg__free(a, gpu_counts);
  return st;
}
