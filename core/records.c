/* Record sets and extents. The CSV reader is in records_csv.c. */
#include "tangram/records.h"

#include "core/internal.h"

tg_status tg_extent_volume(tg_extent e, uint64_t *out) {
  uint64_t v;
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  if (!tg__mul_u64(e.w, e.h, &v) || !tg__mul_u64(v, e.d, &v)) return TG_ERROR_OVERFLOW;
  *out = v;
  return TG_OK;
}

tg_status tg_record_set_create(uint32_t dims, size_t count, const tg_allocator *alloc,
                               tg_record_set **out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  if (dims < 1 || dims > 3) return TG_ERROR_INVALID_ARGUMENT;
  alloc = tg__alloc_or_default(alloc);
  tg_record_set *s = tg__calloc(alloc, 1, sizeof *s);
  if (s == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  s->alloc = *alloc;
  s->dims = dims;
  s->count = count;
  s->records = tg__calloc(alloc, count ? count : 1, sizeof *s->records);
  s->names = tg__calloc(alloc, count ? count : 1, sizeof *s->names);
  if (s->records == NULL || s->names == NULL) {
    tg_record_set_destroy(s);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  for (size_t i = 0; i < count; ++i) s->records[i].size = (tg_extent){0, 1, 1};
  *out = s;
  return TG_OK;
}

void tg_record_set_destroy(tg_record_set *s) {
  if (s == NULL) return;
  tg_allocator a = s->alloc;
  if (s->names)
    for (size_t i = 0; i < s->count; ++i) tg__free(&a, s->names[i]);
  tg__free(&a, s->names);
  tg__free(&a, s->records);
  tg__free(&a, s);
}

tg_status tg_record_set_set_name(tg_record_set *s, size_t index, const char *name) {
  if (s == NULL || index >= s->count) return TG_ERROR_INVALID_ARGUMENT;
  char *copy = NULL;
  if (name != NULL) {
    copy = tg__strdup(&s->alloc, name);
    if (copy == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  tg__free(&s->alloc, s->names[index]);
  s->names[index] = copy;
  return TG_OK;
}
