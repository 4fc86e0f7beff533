/* NAIVE: every record gets its own object (objects mode) or its own slot, back to back
 * (offsets mode). The reference every saving is measured against. */
#include "planner/base/base.h"

tg_status tg__objects_naive(const tg__plan_input *in, tg_plan **out) {
  tg_status st = tg_plan_create(TG_MODE_OBJECTS, in->dims, in->count, in->count, in->alloc, out);
  if (st != TG_OK) return st;
  for (size_t r = 0; r < in->count; ++r) (*out)->object_of[r] = (uint32_t)r;
  st = tg__plan_finish_objects(in, *out);
  if (st != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
  }
  return st;
}

tg_status tg__offsets_naive(const tg__plan_input *in, tg_plan **out) {
  tg_status st = tg_plan_create(TG_MODE_OFFSETS, in->dims, in->count, 0, in->alloc, out);
  if (st != TG_OK) return st;
  uint64_t top = 0;
  for (size_t r = 0; r < in->count; ++r) {
    uint64_t off;
    if (!tg__align_up(top, tg__record_alignment(in, r), &off) ||
        !tg__add_u64(off, in->volumes[r], &top)) {
      st = TG_ERROR_OVERFLOW;
      break;
    }
    (*out)->offset_of[r] = off;
  }
  if (st == TG_OK) st = tg__plan_finish_offsets(in, *out);
  if (st != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
  }
  return st;
}
