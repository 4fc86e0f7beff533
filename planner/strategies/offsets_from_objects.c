/* tg_plan_objects_to_offsets: TFLite's ObjectsToOffsets, turning a 1D shared-object plan into
 * one arena with the objects back to back. */
#include "planner/base/base.h"

tg_status tg_plan_objects_to_offsets(const tg_plan *objects_plan, uint64_t alignment,
                                     const tg_allocator *alloc, tg_plan **out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  const tg_plan *p = objects_plan;
  if (p == NULL || p->mode != TG_MODE_OBJECTS) return TG_ERROR_INVALID_ARGUMENT;
  if (p->dims != 1) return TG_ERROR_UNSUPPORTED;
  if ((p->record_count > 0 && p->object_of == NULL) ||
      (p->object_count > 0 && p->object_sizes == NULL))
    return TG_ERROR_INVALID_ARGUMENT;
  alloc = tg__alloc_or_default(alloc);
  uint64_t *object_offset = tg__calloc(alloc, p->object_count ? p->object_count : 1,
                                       sizeof *object_offset);
  if (object_offset == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_status st = TG_OK;
  uint64_t end = 0;
  for (size_t k = 0; k < p->object_count; ++k) {
    uint64_t size;
    if (tg_extent_volume(p->object_sizes[k], &size) != TG_OK ||
        !tg__align_up(end, alignment, &object_offset[k]) ||
        !tg__add_u64(object_offset[k], size, &end)) {
      st = TG_ERROR_OVERFLOW;
      goto done;
    }
  }
  for (size_t r = 0; r < p->record_count; ++r) {
    if (p->object_of[r] >= p->object_count) {
      st = TG_ERROR_INVALID_ARGUMENT;
      goto done;
    }
  }
  if ((st = tg_plan_create(TG_MODE_OFFSETS, 1, p->record_count, 0, alloc, out)) != TG_OK) goto done;
  for (size_t r = 0; r < p->record_count; ++r) (*out)->offset_of[r] = object_offset[p->object_of[r]];
  (*out)->total = end;
  (*out)->strategy = p->strategy;
  (*out)->fit = p->fit;
  if ((st = tg_plan_set_in_place(*out, p->in_place, p->in_place_count)) != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
  }
done:
  tg__free(alloc, object_offset);
  return st;
}
