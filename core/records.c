/* Record sets and extents. The CSV reader is in records_csv.c. */
#include <inttypes.h>
#include <stdio.h>

#include "tangram/records.h"

#include "core/internal.h"

int tg__in_place_pair_fits(const tg_usage_record *records, size_t count, const tg_in_place_pair *p, size_t index,
                           char *why, size_t why_size) {
  char scratch[8];
  if (why == NULL || why_size == 0) {
    why = scratch;
    why_size = sizeof scratch;
  }
  if (p->input >= count || p->output >= count || p->input == p->output) {
    snprintf(why, why_size, "in-place pair %zu: records %zu -> %zu out of range or equal (%zu records)", index,
             p->input, p->output, count);
    return 0;
  }
  const tg_usage_record *a = &records[p->input], *b = &records[p->output];
  if (a->last_task < p->op)
    snprintf(why, why_size, "in-place pair %zu: record %zu dies before op %" PRIu32 " (last task %" PRIu32 ")", index,
             p->input, p->op, a->last_task);
  else if (a->last_task != p->op)
    snprintf(why, why_size,
             "in-place pair %zu: record %zu is still read after op %" PRIu32 " (last task %" PRIu32
             "), so record %zu may not be written over it",
             index, p->input, p->op, a->last_task, p->output);
  else if (b->first_task != p->op)
    snprintf(why, why_size, "in-place pair %zu: record %zu is not born at op %" PRIu32 " (first task %" PRIu32 ")",
             index, p->output, p->op, b->first_task);
  else if (a->size.w != b->size.w || a->size.h != b->size.h || a->size.d != b->size.d)
    snprintf(why, why_size, "in-place pair %zu: records %zu and %zu differ in size", index, p->input, p->output);
  else
    return 1;
  return 0;
}

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
