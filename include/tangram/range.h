/* Ranges of input sizes: a dimension that varies over a grid (LO..HI/STEP), one or two such
 * dimensions, and usage records whose sizes are known at every point of that grid. */
#ifndef TANGRAM_RANGE_H
#define TANGRAM_RANGE_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/records.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* Most dimensions that may vary together. */
#define TG_RANGE_MAX_DIMS 2u

/* A dimension that varies: lo, lo+step, ..., up to the largest value <= hi; step >= 1. */
typedef struct tg_dim_range {
  int64_t lo, hi, step;
} tg_dim_range;

/* The dynamic dimensions of a model, in order (input order, then axis order): 1 or 2. */
typedef struct tg_size_range {
  uint32_t count;
  tg_dim_range dim[TG_RANGE_MAX_DIMS];
} tg_size_range;

/* Parse "LO..HI" (step 1) or "LO..HI/STEP": non-negative decimals, no spaces. On failure
 * TG_ERROR_INVALID_ARGUMENT with the problem in `err` (LO > HI, STEP 0, not a number, a
 * number beyond 63 bits) and `*out` untouched. */
tg_status tg_dim_range_parse(const char *text, tg_dim_range *out, char *err, size_t err_size);

/* TG_OK when `range` is well formed (count 1 or 2; per dimension lo >= 0, lo <= hi,
 * step >= 1), else TG_ERROR_INVALID_ARGUMENT with the problem in `err`. */
tg_status tg_size_range_check(const tg_size_range *range, char *err, size_t err_size);

/* The number of grid points: the product over dimensions of (hi - lo) / step + 1; 0 for a
 * malformed range or a product beyond 64 bits. */
uint64_t tg_size_range_point_count(const tg_size_range *range);

/* Point `index` (row-major: the last dimension fastest) -> dims[range->count].
 * TG_ERROR_INVALID_ARGUMENT for an index past the end or a malformed range. */
tg_status tg_size_range_point(const tg_size_range *range, uint64_t index, int64_t *dims);

/* dims[range->count] -> its point index; TG_ERROR_INVALID_ARGUMENT when outside the range or
 * off its step grid. */
tg_status tg_size_range_index(const tg_size_range *range, const int64_t *dims, uint64_t *index);

/* Records whose task intervals are the same at every size of a range and whose sizes are
 * known at every point of it. Opaque. */
typedef struct tg_range_records tg_range_records;

typedef struct tg_range_records_desc {
  tg_size_range range;
  uint32_t dims;                /* 1 (bytes), 2 or 3 (texels) */
  size_t count;                 /* records */
  const uint32_t *first_task;   /* count entries, the same at every size */
  const uint32_t *last_task;
  /* The sizes at every grid point: point_count * count extents, point-major (sizes[p * count
   * + r] is record r at point p). Copied. */
  const tg_extent *sizes;
} tg_range_records_desc;

/* Build records over a range from `desc` (copied). TG_ERROR_INVALID_ARGUMENT for a malformed
 * range or desc (dims, intervals, extents whose unused axes are not 1), TG_ERROR_OVERFLOW,
 * TG_ERROR_OUT_OF_HOST_MEMORY; `*out` is NULL on failure. Free with tg_range_records_destroy. */
tg_status tg_range_records_create(const tg_range_records_desc *desc, const tg_allocator *alloc,
                                  tg_range_records **out);

/* Free the records. NULL is a no-op. */
void tg_range_records_destroy(tg_range_records *records);

/* The range, the record count and the records' dimensionality. Cheap. */
const tg_size_range *tg_range_records_range(const tg_range_records *records);
size_t tg_range_records_count(const tg_range_records *records);
uint32_t tg_range_records_dims(const tg_range_records *records);

/* The records at `dims` (a grid point) into `out` (count entries): tasks fixed, sizes at that
 * point, alignment 0. No allocation; O(count). TG_ERROR_INVALID_ARGUMENT off the grid. */
tg_status tg_range_records_at(const tg_range_records *records, const int64_t *dims,
                              tg_usage_record *out);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
