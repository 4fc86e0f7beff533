/* Ranges of input sizes and records over a range (a table of sizes per grid point). */
#include "tangram/range.h"

#include <stdio.h>

#include "core/internal.h"

struct tg_range_records {
  tg_size_range range;
  uint32_t dims;
  size_t count;
  uint64_t points;
  uint32_t *first_task, *last_task;
  tg_extent *sizes;             /* points * count, point-major */
  tg_allocator alloc;
};

static tg_status range_fail(char *err, size_t size, const char *fmt, const char *text) {
  if (err != NULL && size > 0) snprintf(err, size, fmt, text);
  return TG_ERROR_INVALID_ARGUMENT;
}

/* A non-negative decimal of at most 63 bits at *p; advances *p. 0 when none or too large. */
static int parse_number(const char **p, int64_t *out) {
  const char *s = *p;
  uint64_t v = 0;
  if (*s < '0' || *s > '9') return 0;
  while (*s >= '0' && *s <= '9') {
    if (!tg__mul_u64(v, 10, &v) || !tg__add_u64(v, (uint64_t)(*s - '0'), &v) || v > (uint64_t)INT64_MAX)
      return 0;
    ++s;
  }
  *p = s;
  *out = (int64_t)v;
  return 1;
}

tg_status tg_dim_range_parse(const char *text, tg_dim_range *out, char *err, size_t err_size) {
  if (text == NULL || out == NULL) return range_fail(err, err_size, "%s", "no range text");
  const char *p = text;
  const char *form = "'%s' is not a range: LO..HI or LO..HI/STEP (non-negative decimals below 2^63)";
  tg_dim_range r = {0, 0, 1};
  if (!parse_number(&p, &r.lo) || p[0] != '.' || p[1] != '.') return range_fail(err, err_size, form, text);
  p += 2;
  if (!parse_number(&p, &r.hi)) return range_fail(err, err_size, form, text);
  if (*p == '/') {
    ++p;
    if (!parse_number(&p, &r.step)) return range_fail(err, err_size, form, text);
  }
  if (*p != '\0') return range_fail(err, err_size, form, text);
  if (r.lo > r.hi) return range_fail(err, err_size, "range %s: LO is above HI", text);
  if (r.step == 0) return range_fail(err, err_size, "range %s: STEP is 0", text);
  *out = r;
  return TG_OK;
}

tg_status tg_size_range_check(const tg_size_range *range, char *err, size_t err_size) {
  if (range == NULL) return range_fail(err, err_size, "%s", "no range");
  if (range->count < 1 || range->count > TG_RANGE_MAX_DIMS) {
    if (err != NULL && err_size > 0)
      snprintf(err, err_size, "a range varies 1 or 2 dimensions, not %u", range->count);
    return TG_ERROR_INVALID_ARGUMENT;
  }
  for (uint32_t k = 0; k < range->count; ++k) {
    const tg_dim_range *d = &range->dim[k];
    const char *problem = d->lo < 0 ? "LO is negative" : d->lo > d->hi ? "LO is above HI"
                          : d->step < 1 ? "STEP is below 1" : NULL;
    if (problem != NULL) {
      if (err != NULL && err_size > 0)
        snprintf(err, err_size, "range %u (%lld..%lld/%lld): %s", k, (long long)d->lo, (long long)d->hi,
                 (long long)d->step, problem);
      return TG_ERROR_INVALID_ARGUMENT;
    }
  }
  return TG_OK;
}

uint64_t tg_size_range_point_count(const tg_size_range *range) {
  if (tg_size_range_check(range, NULL, 0) != TG_OK) return 0;
  uint64_t n = 1;
  for (uint32_t k = 0; k < range->count; ++k) {
    const tg_dim_range *d = &range->dim[k];
    uint64_t along = (uint64_t)(d->hi - d->lo) / (uint64_t)d->step + 1;
    if (!tg__mul_u64(n, along, &n)) return 0;
  }
  return n;
}

tg_status tg_size_range_point(const tg_size_range *range, uint64_t index, int64_t *dims) {
  uint64_t n = tg_size_range_point_count(range);
  if (n == 0 || index >= n || dims == NULL) return TG_ERROR_INVALID_ARGUMENT;
  for (uint32_t k = range->count; k-- > 0;) {
    const tg_dim_range *d = &range->dim[k];
    uint64_t along = (uint64_t)(d->hi - d->lo) / (uint64_t)d->step + 1;
    dims[k] = d->lo + (int64_t)(index % along) * d->step;
    index /= along;
  }
  return TG_OK;
}

tg_status tg_size_range_index(const tg_size_range *range, const int64_t *dims, uint64_t *index) {
  if (tg_size_range_point_count(range) == 0 || dims == NULL || index == NULL) return TG_ERROR_INVALID_ARGUMENT;
  uint64_t i = 0;
  for (uint32_t k = 0; k < range->count; ++k) {
    const tg_dim_range *d = &range->dim[k];
    if (dims[k] < d->lo || dims[k] > d->hi || (dims[k] - d->lo) % d->step != 0) return TG_ERROR_INVALID_ARGUMENT;
    uint64_t along = (uint64_t)(d->hi - d->lo) / (uint64_t)d->step + 1;
    i = i * along + (uint64_t)((dims[k] - d->lo) / d->step);
  }
  *index = i;
  return TG_OK;
}

void tg_range_records_destroy(tg_range_records *r) {
  if (r == NULL) return;
  tg_allocator a = r->alloc;
  tg__free(&a, r->first_task);
  tg__free(&a, r->last_task);
  tg__free(&a, r->sizes);
  tg__free(&a, r);
}

tg_status tg_range_records_create(const tg_range_records_desc *desc, const tg_allocator *alloc,
                                  tg_range_records **out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  if (desc == NULL || desc->dims < 1 || desc->dims > 3) return TG_ERROR_INVALID_ARGUMENT;
  uint64_t points = tg_size_range_point_count(&desc->range);
  if (points == 0) return TG_ERROR_INVALID_ARGUMENT;
  size_t cells;
  if (points > SIZE_MAX || !tg__mul_size((size_t)points, desc->count, &cells)) return TG_ERROR_OVERFLOW;
  if (desc->count > 0 && (desc->first_task == NULL || desc->last_task == NULL || desc->sizes == NULL))
    return TG_ERROR_INVALID_ARGUMENT;
  for (size_t i = 0; i < desc->count; ++i)
    if (desc->first_task[i] > desc->last_task[i] || desc->last_task[i] > TG_MAX_TASK) return TG_ERROR_INVALID_ARGUMENT;
  for (size_t c = 0; c < cells; ++c) {
    tg_extent e = desc->sizes[c];
    uint64_t v;
    if ((desc->dims < 2 && e.h != 1) || (desc->dims < 3 && e.d != 1)) return TG_ERROR_INVALID_ARGUMENT;
    if (tg_extent_volume(e, &v) != TG_OK) return TG_ERROR_OVERFLOW;
  }
  alloc = tg__alloc_or_default(alloc);
  tg_range_records *r = tg__calloc(alloc, 1, sizeof *r);
  if (r == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  r->alloc = *alloc;
  r->range = desc->range;
  r->dims = desc->dims;
  r->count = desc->count;
  r->points = points;
  r->first_task = tg__calloc(alloc, desc->count ? desc->count : 1, sizeof *r->first_task);
  r->last_task = tg__calloc(alloc, desc->count ? desc->count : 1, sizeof *r->last_task);
  r->sizes = tg__calloc(alloc, cells ? cells : 1, sizeof *r->sizes);
  if (r->first_task == NULL || r->last_task == NULL || r->sizes == NULL) {
    tg_range_records_destroy(r);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (desc->count > 0) {
    memcpy(r->first_task, desc->first_task, desc->count * sizeof *r->first_task);
    memcpy(r->last_task, desc->last_task, desc->count * sizeof *r->last_task);
    memcpy(r->sizes, desc->sizes, cells * sizeof *r->sizes);
  }
  *out = r;
  return TG_OK;
}

const tg_size_range *tg_range_records_range(const tg_range_records *r) { return r ? &r->range : NULL; }
size_t tg_range_records_count(const tg_range_records *r) { return r ? r->count : 0; }
uint32_t tg_range_records_dims(const tg_range_records *r) { return r ? r->dims : 0; }

tg_status tg_range_records_at(const tg_range_records *r, const int64_t *dims, tg_usage_record *out) {
  uint64_t p;
  if (r == NULL || (out == NULL && r->count > 0)) return TG_ERROR_INVALID_ARGUMENT;
  if (tg_size_range_index(&r->range, dims, &p) != TG_OK) return TG_ERROR_INVALID_ARGUMENT;
  const tg_extent *row = r->sizes + (size_t)p * r->count;
  for (size_t i = 0; i < r->count; ++i) {
    out[i].size = row[i];
    out[i].first_task = r->first_task[i];
    out[i].last_task = r->last_task[i];
    out[i].alignment = 0;
  }
  return TG_OK;
}
