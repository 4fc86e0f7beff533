/* Re-offsetting a realization (tangram/backend.h: tg_realization_reoffset): the same model's
 * tensors at another size, placed in the allocations already made. Views are made for the
 * tensors that moved first; only when all of them exist are the old ones released, so a
 * failure leaves the realization as it was. */
#include <stdio.h>
#include <string.h>

#include "backends/backend_internal.h"

static void extent_text(const tg_tensor_resource *r, char *buf, size_t size) {
  if (tg_storage_is_texture(r->storage))
    snprintf(buf, size, "%llux%llux%llu texels", (unsigned long long)r->extent.w, (unsigned long long)r->extent.h,
             (unsigned long long)r->extent.d);
  else
    snprintf(buf, size, "%llu bytes", (unsigned long long)r->bytes);
}

/* Where record r goes under `p`, and whether it fits there: TG_ERROR_LIMIT naming both. */
static tg_status place(const tg_realization *z, const tg_realize_desc *desc, size_t r, uint32_t *memory,
                       uint64_t *offset, tg_error_info *err) {
  const tg_plan *p = desc->plan;
  const tg_tensor_resource *t = &desc->resources[r];
  if (t->storage != z->resources[r].storage)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "reoffset: record %zu is a %s here, a %s in the realization", r,
                     tg_storage_name(t->storage), tg_storage_name(z->resources[r].storage));
  char need[96], have[96];
  if (p->mode == TG_MODE_OFFSETS) {
    *memory = tg_plan_arena_of(p, r);
    *offset = p->offset_of[r];
    uint64_t end = UINT64_MAX;
    if (*memory >= z->memory_count) return tg__error(err, TG_ERROR_LIMIT, "reoffset: the plan uses arena %u of %zu", *memory, z->memory_count);
    if (!tg__add_u64(*offset, desc->records[r].size.w, &end) || end > z->objects[*memory].bytes) {
      if (end < *offset) end = UINT64_MAX;
      return tg__error(err, TG_ERROR_LIMIT,
                       "reoffset: record %zu ends at byte %llu of arena %u, which holds %llu: make the realization "
                       "with more capacity", r, (unsigned long long)end, *memory,
                       (unsigned long long)z->objects[*memory].bytes);
    }
    return TG_OK;
  }
  *memory = p->object_of[r];
  *offset = 0;
  if (*memory >= z->memory_count)
    return tg__error(err, TG_ERROR_LIMIT, "reoffset: record %zu is in object %u; the realization has %zu objects: make "
                     "it with capacity for more", r, *memory, z->memory_count);
  const tg_tensor_resource *o = &z->objects[*memory];
  int image = tg_storage_is_texture(t->storage);
  int fits = image ? o->storage == t->storage && t->extent.w <= o->extent.w && t->extent.h <= o->extent.h &&
                         t->extent.d <= o->extent.d
                   : !tg_storage_is_texture(o->storage) && t->bytes <= o->bytes;
  if (fits) return TG_OK;
  extent_text(t, need, sizeof need);
  extent_text(o, have, sizeof have);
  return tg__error(err, TG_ERROR_LIMIT,
                   "reoffset: record %zu needs %s (%s), object %u holds %s (%s): make the realization with more "
                   "capacity", r, need, tg_storage_name(t->storage), *memory, have, tg_storage_name(o->storage));
}

static int same_resource(const tg_tensor_resource *a, const tg_tensor_resource *b) {
  return a->storage == b->storage && a->bytes == b->bytes && a->extent.w == b->extent.w &&
         a->extent.h == b->extent.h && a->extent.d == b->extent.d;
}

static tg_status reoffset(tg_realization *z, const tg_realize_desc *desc, tg_error_info *err) {
  if (z == NULL || desc == NULL || desc->plan == NULL || (desc->record_count && (!desc->records || !desc->resources)))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "reoffset: NULL realization, description, plan or arrays");
  const tg_plan *p = desc->plan;
  if (z->borrowed || p->mode != z->mode || p->record_count != desc->record_count ||
      desc->record_count != z->record_count || desc->dims != z->dims || desc->precision != z->precision)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                     "reoffset: a %s plan of %zu %uD records, %s, for a realization of a %s plan of %zu %uD records, %s",
                     tg_mode_name(p->mode), desc->record_count, desc->dims, tg_precision_name(desc->precision),
                     tg_mode_name(z->mode), z->record_count, z->dims, tg_precision_name(z->precision));
  tg_device *d = z->device;
  const tg__backend_vtable *vt = tg__device_vtable(d);
  void *impl = tg__device_impl(d);
  const tg_allocator *a = &z->alloc;
  tg_status st = tg__realize_desc_check(d, desc, a, err);
  if (st != TG_OK) return st;
  const size_t n = z->record_count;
  uint32_t *memory_of = tg__calloc(a, n ? n : 1, sizeof *memory_of);
  uint64_t *offset_of = tg__calloc(a, n ? n : 1, sizeof *offset_of);
  void **views = tg__calloc(a, n ? n : 1, sizeof *views);
  uint8_t *moved = tg__calloc(a, n ? n : 1, 1);
  if (!memory_of || !offset_of || !views || !moved) {
    st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    goto done;
  }
  for (size_t r = 0; r < n && st == TG_OK; ++r) {
    st = place(z, desc, r, &memory_of[r], &offset_of[r], err);
    moved[r] = memory_of[r] != z->memory_of[r] || offset_of[r] != z->offset_of[r] ||
               !same_resource(&desc->resources[r], &z->resources[r]);
  }
  /* New views first: on a failure the old ones are all still there. */
  for (size_t r = 0; r < n && st == TG_OK; ++r) {
    if (!moved[r]) continue;
    if ((st = tg__device_inject_failure(d, err)) != TG_OK) break;
    uint32_t k = memory_of[r];
    st = vt->bind(impl, z->memories[k], &z->objects[k], offset_of[r], &desc->resources[r], z->precision,
                  z->mode == TG_MODE_OFFSETS, &views[r]);
    if (st != TG_OK) {
      views[r] = NULL;
      tg__error(err, st, "reoffset: placing record %zu in %s %u at offset %llu failed: %s (driver code %lld)", r,
                z->mode == TG_MODE_OFFSETS ? "arena" : "object", k, (unsigned long long)offset_of[r],
                tg_status_string(st), (long long)tg_device_get_native_error(d));
    }
  }
  if (st != TG_OK) {
    for (size_t r = 0; r < n; ++r)
      if (views[r] != NULL) vt->unbind(impl, views[r]);
    goto done;
  }
  uint64_t remade = 0;
  for (size_t r = 0; r < n; ++r) {
    if (!moved[r]) continue;
    if (z->views[r] != NULL) vt->unbind(impl, z->views[r]);
    z->views[r] = views[r];
    z->memory_of[r] = memory_of[r];
    z->offset_of[r] = offset_of[r];
    z->resources[r] = desc->resources[r];
    ++remade;
  }
  if (n) memcpy(z->records, desc->records, n * sizeof *z->records);
  z->stats.reoffsets++;
  z->stats.views_remade += remade;
done:
  tg__free(a, memory_of);
  tg__free(a, offset_of);
  tg__free(a, views);
  tg__free(a, moved);
  return st;
}

tg_status tg_realization_reoffset(tg_realization *realization, const tg_realize_desc *desc, tg_error_info *err) {
  tg__error_begin(err);
  return tg__error_entry(err, reoffset(realization, desc, err), "tg_realization_reoffset", "reoffset");
}
