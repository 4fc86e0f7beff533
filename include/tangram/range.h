/* Ranges of input sizes: one or two dimensions that vary over a grid (LO..HI/STEP), and usage
 * records whose tasks are the same at every size of the grid and whose sizes are known, exactly,
 * at every point of it. Plans valid over a whole range: tangram/range_plan.h. */
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

/* At most this many dimensions vary in one range. */
#define TG_RANGE_MAX_DIMS 2u

/* A dimension that varies: lo, lo+step, ..., up to the largest value <= hi (lo >= 0,
 * lo <= hi, step >= 1: see tg_size_range_check). A fixed dimension is not a range. */
typedef struct tg_dim_range {
  int64_t lo, hi, step;
} tg_dim_range;

/* The dynamic dimensions of a model, in order (input order, then axis order): 1 or 2. */
typedef struct tg_size_range {
  uint32_t count; /* 1 or 2 */
  tg_dim_range dim[TG_RANGE_MAX_DIMS];
} tg_size_range;

/* Parse "LO..HI" or "LO..HI/STEP" (plain decimals, no sign, no spaces; no STEP = 1) into `*out`.
 * TG_ERROR_INVALID_ARGUMENT with a message in `err` (may be NULL; `err_size` bytes,
 * NUL-terminated) for LO > HI, STEP 0, something that is not that syntax, or a number over
 * INT64_MAX; `*out` is then untouched. The whole of `text` must match. O(length). */
tg_status tg_dim_range_parse(const char *text, tg_dim_range *out, char *err, size_t err_size);

/* TG_OK when `range` is well formed: count 1 or 2, each dimension with lo >= 0, lo <= hi and
 * step >= 1, and a point count that fits 64 bits. Else TG_ERROR_INVALID_ARGUMENT with a message
 * in `err` (may be NULL) naming the dimension and the rule. O(1). */
tg_status tg_size_range_check(const tg_size_range *range, char *err, size_t err_size);

/* Number of grid points: the product over dimensions of (hi - lo) / step + 1. 0 for a NULL or
 * malformed range. O(1). */
uint64_t tg_size_range_point_count(const tg_size_range *range);

/* Point `index` of the grid (row-major: the last dimension varies fastest) into
 * `dims[range->count]`. TG_ERROR_INVALID_ARGUMENT for a malformed range or an index at or past
 * the point count (`dims` untouched). O(1). */
tg_status tg_size_range_point(const tg_size_range *range, uint64_t index, int64_t *dims);

/* The index of the grid point `dims[range->count]` (the inverse of tg_size_range_point).
 * TG_ERROR_INVALID_ARGUMENT for a malformed range, or dims outside the range or off its step
 * grid (`*index` untouched). O(1). */
tg_status tg_size_range_index(const tg_size_range *range, const int64_t *dims, uint64_t *index);

/* Usage records over a range: the same records, with the same tasks, at every point of the
 * range; each record's size is known at every point. Opaque; immutable once created, so it may
 * be read from several threads at once. */
typedef struct tg_range_records tg_range_records;

typedef struct tg_range_records_desc {
  tg_size_range range;
  uint32_t dims;               /* 1 (bytes), 2 or 3 (texels): as tg_usage_record.size */
  size_t count;                /* records */
  const uint32_t *first_task;  /* count entries, the same at every point */
  const uint32_t *last_task;   /* count entries */
  /* The sizes at every grid point: point_count * count extents, point-major (sizes[p * count
   * + r] is record r at point p); the dimensions past `dims` must be 1. Copied. */
  const tg_extent *sizes;
  /* Optional (NULL = 0 for every record): each record's tg_usage_record.alignment, the same at
   * every point. Copied. */
  const uint64_t *alignment;
} tg_range_records_desc;

/* Make the records of `desc`. The sizes are stored exactly, compactly where they allow it (a
 * size that is a constant, or an affine or bilinear function of the grid indices at every point,
 * takes a few numbers; others a table). TG_ERROR_INVALID_ARGUMENT for a malformed range, dims outside 1..3, NULL arrays for a nonzero count, a record
 * with first_task > last_task, or a size with an unused dimension other than 1;
 * TG_ERROR_OVERFLOW when point_count * count does not fit; TG_ERROR_OUT_OF_HOST_MEMORY. The
 * records are allocated from `alloc` (NULL = default) and owned by the caller
 * (tg_range_records_destroy); `*out` is NULL on failure. Cost: O(point_count * count * dims). */
tg_status tg_range_records_create(const tg_range_records_desc *desc, const tg_allocator *alloc,
                                  tg_range_records **out);

/* Free the records. NULL is a no-op. */
void tg_range_records_destroy(tg_range_records *records);

/* The range, the record count and the dimensionality (1..3). Cheap; NULL/0 for NULL records. */
const tg_size_range *tg_range_records_range(const tg_range_records *records);
size_t tg_range_records_count(const tg_range_records *records);
uint32_t tg_range_records_dims(const tg_range_records *records);

/* The records at the grid point `dims[range.count]` into `out` (count entries): tasks and
 * alignment as created, sizes at that point, exactly those given at creation. No allocation;
 * O(count * dims). TG_ERROR_INVALID_ARGUMENT off the grid (`out` untouched). Thread-safe. */
tg_status tg_range_records_at(const tg_range_records *records, const int64_t *dims,
                              tg_usage_record *out);

/* The same at grid point `index` (tg_size_range_point's numbering). TG_ERROR_INVALID_ARGUMENT
 * for an index at or past the point count. */
tg_status tg_range_records_at_index(const tg_range_records *records, uint64_t index,
                                    tg_usage_record *out);

/* How the sizes are stored (for reports and tests): records * dims sizes in all, of which
 * `constant` are constants, `affine` affine and `bilinear` bilinear (not affine) functions of
 * the grid indices, and `table` stored point by point. Zeros for NULL records. Cheap. */
typedef struct tg_range_records_stats {
  size_t constant, affine, bilinear, table;
} tg_range_records_stats;
void tg_range_records_get_stats(const tg_range_records *records, tg_range_records_stats *out);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
