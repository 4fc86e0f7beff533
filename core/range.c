/* Ranges of input sizes (the grid of LO..HI/STEP dimensions) and records over a range.
 *
 * A record's size along one axis is stored as v = a + b*i + c*j + d*i*j in the grid indices
 * (i along the first dynamic dimension, j along the second), computed in unsigned 64-bit
 * arithmetic, which wraps: the coefficients come from the values at the grid's first corner
 * and are accepted only when the formula gives back the given value at every point, so what
 * the records return is exact by construction (wrapping is harmless: equality mod 2^64 of two
 * 64-bit values is equality). A size that no such formula reproduces is kept as a table. */
#include "tangram/range.h"

#include <stdio.h>

#include "core/internal.h"

enum { FIT_CONSTANT = 0, FIT_AFFINE = 1, FIT_BILINEAR = 2, FIT_TABLE = 3 };

struct tg_range_records {
  tg_allocator alloc;
  tg_size_range range;
  uint32_t dims;
  size_t count;
  uint64_t points;
  uint64_t last_dim_points;  /* points along the last dynamic dimension (1D: 1) */
  uint32_t *first_task;
  uint32_t *last_task;
  uint64_t *alignment;       /* NULL: every record 0 */
  uint8_t *kind;             /* count * dims entries: FIT_* */
  uint64_t *coef;            /* count * dims * 4: a, b, c, d (FIT_TABLE: a = start in table) */
  uint64_t *table;
  tg_range_records_stats stats;
};

static void put_error(char *err, size_t err_size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void put_error(char *err, size_t err_size, const char *fmt, ...) {
  if (err == NULL || err_size == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, err_size, fmt, ap);
  va_end(ap);
}

/* A plain decimal at *p (at least one digit); 0 when there is none, -1 over INT64_MAX. */
static int parse_decimal(const char **p, int64_t *out) {
  const char *s = *p;
  uint64_t v = 0;
  int overflow = 0;
  if (*s < '0' || *s > '9') return 0;
  for (; *s >= '0' && *s <= '9'; ++s) {
    uint64_t digit = (uint64_t)(*s - '0');
    if (v > ((uint64_t)INT64_MAX - digit) / 10u) overflow = 1;
    else v = v * 10u + digit;
  }
  *p = s;
  if (overflow) return -1;
  *out = (int64_t)v;
  return 1;
}

tg_status tg_dim_range_parse(const char *text, tg_dim_range *out, char *err, size_t err_size) {
  if (text == NULL || out == NULL) {
    put_error(err, err_size, "range: no text");
    return TG_ERROR_INVALID_ARGUMENT;
  }
  const char *p = text;
  int64_t lo = 0, hi = 0, step = 1;
  int r1 = parse_decimal(&p, &lo);
  int sep = r1 != 0 && p[0] == '.' && p[1] == '.';
  int r2 = 0, r3 = 1;
  if (sep) {
    p += 2;
    r2 = parse_decimal(&p, &hi);
    if (r2 != 0 && *p == '/') {
      ++p;
      r3 = parse_decimal(&p, &step);
    }
  }
  if (r1 == 0 || !sep || r2 == 0 || r3 == 0 || *p != '\0') {
    put_error(err, err_size, "'%.64s' is not a range: expected LO..HI or LO..HI/STEP (plain decimals)",
              text);
    return TG_ERROR_INVALID_ARGUMENT;
  }
  if (r1 < 0 || r2 < 0 || r3 < 0) {
    put_error(err, err_size, "range '%.64s': %s does not fit 63 bits",
              text, r1 < 0 ? "LO" : (r2 < 0 ? "HI" : "STEP"));
    return TG_ERROR_INVALID_ARGUMENT;
  }
  if (lo > hi) {
    put_error(err, err_size, "range '%.64s': LO %lld is above HI %lld", text, (long long)lo,
              (long long)hi);
    return TG_ERROR_INVALID_ARGUMENT;
  }
  if (step == 0) {
    put_error(err, err_size, "range '%.64s': STEP must be at least 1", text);
    return TG_ERROR_INVALID_ARGUMENT;
  }
  out->lo = lo;
  out->hi = hi;
  out->step = step;
  return TG_OK;
}

/* Points along dimension k of a well-formed range. */
static uint64_t dim_points(const tg_dim_range *d) {
  return (uint64_t)(d->hi - d->lo) / (uint64_t)d->step + 1u;
}

tg_status tg_size_range_check(const tg_size_range *range, char *err, size_t err_size) {
  if (range == NULL) {
    put_error(err, err_size, "range: none given");
    return TG_ERROR_INVALID_ARGUMENT;
  }
  if (range->count < 1 || range->count > TG_RANGE_MAX_DIMS) {
    put_error(err, err_size, "range: %u dynamic dimensions (1 or 2 may vary)", range->count);
    return TG_ERROR_INVALID_ARGUMENT;
  }
  uint64_t points = 1;
  for (uint32_t k = 0; k < range->count; ++k) {
    const tg_dim_range *d = &range->dim[k];
    if (d->lo < 0) {
      put_error(err, err_size, "range: dynamic dimension %u: LO %lld is negative", k, (long long)d->lo);
      return TG_ERROR_INVALID_ARGUMENT;
    }
    if (d->lo > d->hi) {
      put_error(err, err_size, "range: dynamic dimension %u: LO %lld is above HI %lld", k,
                (long long)d->lo, (long long)d->hi);
      return TG_ERROR_INVALID_ARGUMENT;
    }
    if (d->step < 1) {
      put_error(err, err_size, "range: dynamic dimension %u: STEP %lld (must be at least 1)", k,
                (long long)d->step);
      return TG_ERROR_INVALID_ARGUMENT;
    }
    if (!tg__mul_u64(points, dim_points(d), &points)) {
      put_error(err, err_size, "range: the number of sizes does not fit 64 bits");
      return TG_ERROR_INVALID_ARGUMENT;
    }
  }
  return TG_OK;
}

uint64_t tg_size_range_point_count(const tg_size_range *range) {
  if (tg_size_range_check(range, NULL, 0) != TG_OK) return 0;
  uint64_t points = 1;
  for (uint32_t k = 0; k < range->count; ++k) points *= dim_points(&range->dim[k]);
  return points;
}

tg_status tg_size_range_point(const tg_size_range *range, uint64_t index, int64_t *dims) {
  uint64_t points = tg_size_range_point_count(range);
  if (dims == NULL || index >= points) return TG_ERROR_INVALID_ARGUMENT;
  for (uint32_t k = range->count; k-- > 0;) {
    const tg_dim_range *d = &range->dim[k];
    uint64_t n = dim_points(d);
    dims[k] = d->lo + (int64_t)(index % n) * d->step;
    index /= n;
  }
  return TG_OK;
}

tg_status tg_size_range_index(const tg_size_range *range, const int64_t *dims, uint64_t *index) {
  if (tg_size_range_point_count(range) == 0 || dims == NULL || index == NULL)
    return TG_ERROR_INVALID_ARGUMENT;
  uint64_t at = 0;
  for (uint32_t k = 0; k < range->count; ++k) {
    const tg_dim_range *d = &range->dim[k];
    if (dims[k] < d->lo || dims[k] > d->hi || (dims[k] - d->lo) % d->step != 0)
      return TG_ERROR_INVALID_ARGUMENT;
    at = at * dim_points(d) + (uint64_t)((dims[k] - d->lo) / d->step);
  }
  *index = at;
  return TG_OK;
}

static uint64_t extent_axis(const tg_extent *e, uint32_t axis) {
  return axis == 0 ? e->w : (axis == 1 ? e->h : e->d);
}

/* The value of one stored size at grid indices (i, j), point p. */
static inline uint64_t size_at(uint8_t kind, const uint64_t *c, const uint64_t *table, uint64_t i,
                               uint64_t j, uint64_t p) {
  switch (kind) {
    case FIT_CONSTANT: return c[0];
    case FIT_AFFINE: return c[0] + c[1] * i + c[2] * j;
    case FIT_BILINEAR: return c[0] + c[1] * i + c[2] * j + c[3] * i * j;
    default: return table[c[0] + p];
  }
}

/* Fit record r's size along `axis` (values from `desc`): kind and coefficients. */
static uint8_t fit_size(const tg_range_records_desc *desc, uint64_t points, uint64_t n1, size_t r,
                        uint32_t axis, uint64_t *c) {
  const tg_extent *s = desc->sizes;
  size_t n = desc->count;
  uint64_t n0 = points / n1;
#define V(i, j) extent_axis(&s[((i) * n1 + (j)) * n + r], axis)
  uint64_t a = V(0, 0);
  uint64_t b = n0 > 1 ? V(1, 0) - a : 0;
  uint64_t cc = n1 > 1 ? V(0, 1) - a : 0;
  uint64_t d = (n0 > 1 && n1 > 1) ? V(1, 1) - V(1, 0) - V(0, 1) + a : 0;
#undef V
  c[0] = a;
  c[1] = b;
  c[2] = cc;
  c[3] = d;
  uint8_t kind = d != 0 ? FIT_BILINEAR : ((b != 0 || cc != 0) ? FIT_AFFINE : FIT_CONSTANT);
  for (uint64_t p = 0; p < points; ++p) {
    if (size_at(kind, c, NULL, p / n1, p % n1, p) != extent_axis(&s[p * n + r], axis)) return FIT_TABLE;
  }
  return kind;
}

tg_status tg_range_records_create(const tg_range_records_desc *desc, const tg_allocator *alloc,
                                  tg_range_records **out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  if (desc == NULL || desc->dims < 1 || desc->dims > 3) return TG_ERROR_INVALID_ARGUMENT;
  uint64_t points = tg_size_range_point_count(&desc->range);
  if (points == 0) return TG_ERROR_INVALID_ARGUMENT;
  size_t n = desc->count;
  if (n > 0 && (desc->first_task == NULL || desc->last_task == NULL || desc->sizes == NULL))
    return TG_ERROR_INVALID_ARGUMENT;
  uint64_t cells;
  if (!tg__mul_u64(points, (uint64_t)n, &cells) || cells > SIZE_MAX / sizeof(tg_extent))
    return TG_ERROR_OVERFLOW;
  for (size_t r = 0; r < n; ++r)
    if (desc->first_task[r] > desc->last_task[r]) return TG_ERROR_INVALID_ARGUMENT;
  for (uint64_t k = 0; k < cells; ++k) {
    const tg_extent *e = &desc->sizes[k];
    if ((desc->dims < 2 && e->h != 1) || (desc->dims < 3 && e->d != 1)) return TG_ERROR_INVALID_ARGUMENT;
  }
  alloc = tg__alloc_or_default(alloc);
  tg_range_records *rr = tg__calloc(alloc, 1, sizeof *rr);
  if (rr == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  rr->alloc = *alloc;
  rr->range = desc->range;
  rr->dims = desc->dims;
  rr->count = n;
  rr->points = points;
  rr->last_dim_points = desc->range.count > 1 ? dim_points(&desc->range.dim[1]) : 1u;
  size_t sizes = n * desc->dims;
  size_t m = n ? n : 1, ms = sizes ? sizes : 1;
  rr->first_task = tg__calloc(alloc, m, sizeof *rr->first_task);
  rr->last_task = tg__calloc(alloc, m, sizeof *rr->last_task);
  rr->kind = tg__calloc(alloc, ms, sizeof *rr->kind);
  rr->coef = tg__calloc(alloc, ms, 4 * sizeof *rr->coef);
  if (desc->alignment != NULL) rr->alignment = tg__calloc(alloc, m, sizeof *rr->alignment);
  if (rr->first_task == NULL || rr->last_task == NULL || rr->kind == NULL || rr->coef == NULL ||
      (desc->alignment != NULL && rr->alignment == NULL)) {
    tg_range_records_destroy(rr);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (n > 0) {
    memcpy(rr->first_task, desc->first_task, n * sizeof *rr->first_task);
    memcpy(rr->last_task, desc->last_task, n * sizeof *rr->last_task);
    if (desc->alignment != NULL) memcpy(rr->alignment, desc->alignment, n * sizeof *rr->alignment);
  }
  size_t tables = 0;
  for (size_t r = 0; r < n; ++r) {
    for (uint32_t x = 0; x < desc->dims; ++x) {
      size_t s = r * desc->dims + x;
      rr->kind[s] = fit_size(desc, points, rr->last_dim_points, r, x, &rr->coef[4 * s]);
      switch (rr->kind[s]) {
        case FIT_CONSTANT: rr->stats.constant++; break;
        case FIT_AFFINE: rr->stats.affine++; break;
        case FIT_BILINEAR: rr->stats.bilinear++; break;
        default: rr->stats.table++; tables++; break;
      }
    }
  }
  if (tables > 0) {
    /* tables * points <= cells * dims, which fits size_t (checked above for extents). */
    rr->table = tg__calloc(alloc, tables * (size_t)points, sizeof *rr->table);
    if (rr->table == NULL) {
      tg_range_records_destroy(rr);
      return TG_ERROR_OUT_OF_HOST_MEMORY;
    }
    uint64_t start = 0;
    for (size_t s = 0; s < sizes; ++s) {
      if (rr->kind[s] != FIT_TABLE) continue;
      size_t r = s / desc->dims;
      uint32_t x = (uint32_t)(s % desc->dims);
      rr->coef[4 * s] = start;
      for (uint64_t p = 0; p < points; ++p) rr->table[start + p] = extent_axis(&desc->sizes[p * n + r], x);
      start += points;
    }
  }
  *out = rr;
  return TG_OK;
}

void tg_range_records_destroy(tg_range_records *rr) {
  if (rr == NULL) return;
  tg_allocator a = rr->alloc;
  tg__free(&a, rr->first_task);
  tg__free(&a, rr->last_task);
  tg__free(&a, rr->alignment);
  tg__free(&a, rr->kind);
  tg__free(&a, rr->coef);
  tg__free(&a, rr->table);
  tg__free(&a, rr);
}

const tg_size_range *tg_range_records_range(const tg_range_records *rr) {
  return rr != NULL ? &rr->range : NULL;
}

size_t tg_range_records_count(const tg_range_records *rr) { return rr != NULL ? rr->count : 0; }

uint32_t tg_range_records_dims(const tg_range_records *rr) { return rr != NULL ? rr->dims : 0; }

tg_status tg_range_records_at_index(const tg_range_records *rr, uint64_t index, tg_usage_record *out) {
  if (rr == NULL || index >= rr->points || (out == NULL && rr->count > 0)) return TG_ERROR_INVALID_ARGUMENT;
  uint64_t i = index / rr->last_dim_points, j = index % rr->last_dim_points;
  const uint32_t dims = rr->dims;
  for (size_t r = 0; r < rr->count; ++r) {
    tg_usage_record *o = &out[r];
    uint64_t v[3] = {1, 1, 1};
    for (uint32_t x = 0; x < dims; ++x) {
      size_t s = r * dims + x;
      v[x] = size_at(rr->kind[s], &rr->coef[4 * s], rr->table, i, j, index);
    }
    o->size.w = v[0];
    o->size.h = v[1];
    o->size.d = v[2];
    o->first_task = rr->first_task[r];
    o->last_task = rr->last_task[r];
    o->alignment = rr->alignment != NULL ? rr->alignment[r] : 0;
  }
  return TG_OK;
}

tg_status tg_range_records_at(const tg_range_records *rr, const int64_t *dims, tg_usage_record *out) {
  uint64_t index;
  if (rr == NULL || tg_size_range_index(&rr->range, dims, &index) != TG_OK) return TG_ERROR_INVALID_ARGUMENT;
  return tg_range_records_at_index(rr, index, out);
}

void tg_range_records_get_stats(const tg_range_records *rr, tg_range_records_stats *out) {
  if (out == NULL) return;
  if (rr == NULL) {
    memset(out, 0, sizeof *out);
    return;
  }
  *out = rr->stats;
}
