/* Usage records: what the planner consumes. One record per tensor: a size and an inclusive
 * task interval. */
#ifndef TANGRAM_RECORDS_H
#define TANGRAM_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* A size: bytes for 1D records (w = bytes, h = d = 1), a texture extent in texels for 2D
 * (w, h; d = 1) and 3D (w, h, d). Unused dimensions are 1. */
typedef struct tg_extent {
  uint64_t w, h, d;
} tg_extent;

/* One tensor's lifetime. The interval [first_task, last_task] is inclusive (TFLite's
 * convention): two records conflict when their intervals intersect. */
typedef struct tg_usage_record {
  tg_extent size;
  uint32_t first_task;
  uint32_t last_task;
  /* Offsets mode: this record's offset must be a multiple of max(alignment, plan alignment).
   * 0 = only the plan's alignment. Lets backends pass per-resource requirements. */
  uint64_t alignment;
} tg_usage_record;

/* An op that writes its output record over an input record ("in place"), or whose output is a
 * view of its input (`view` nonzero: the op copies nothing). Valid when the input's last task
 * and the output's first task are both `op` and the two records have the same size, and, where
 * ops may run at the same time, when every other op touching the input is ordered before `op`
 * (tg_share_relation.in_place decides); then they may share one allocation (same object, or the
 * same offset) although their intervals meet at `op`. Record indices refer to the record set
 * the pair comes with. */
typedef struct tg_in_place_pair {
  uint32_t op;
  size_t input;
  size_t output;
  int view;
} tg_in_place_pair;

/* Largest task index accepted anywhere (readers reject larger). */
#define TG_MAX_TASK 0xFFFFFFF0u
/* Largest number of records a reader accepts (the planner itself takes any count that fits
 * in memory). */
#define TG_MAX_RECORDS ((size_t)50000000)

/* A record set: records of one dimensionality plus optional names. Owns its storage; free
 * with tg_record_set_destroy. */
typedef struct tg_record_set {
  uint32_t dims;              /* 1, 2 or 3 */
  size_t count;
  tg_usage_record *records;   /* `count` entries */
  char **names;               /* `count` entries, each NULL or a NUL-terminated string owned here */
  tg_allocator alloc;         /* the allocator everything above came from */
} tg_record_set;

/* Create a set of `count` records of size (0,1,1) with tasks [0,0] and dimensionality
 * `dims` (1..3) with no names. The caller owns the set; `*out` is NULL on failure
 * (TG_ERROR_INVALID_ARGUMENT for dims, TG_ERROR_OUT_OF_HOST_MEMORY). */
tg_status tg_record_set_create(uint32_t dims, size_t count, const tg_allocator *alloc,
                               tg_record_set **out);

/* Free the set and its names. NULL is a no-op. */
void tg_record_set_destroy(tg_record_set *set);

/* Copy `name` (may be NULL to clear) as record `index`'s name, freeing the old one.
 * TG_ERROR_INVALID_ARGUMENT for an index out of range; on failure the old name stays. */
tg_status tg_record_set_set_name(tg_record_set *set, size_t index, const char *name);

/* The volume of an extent (w*h*d) in *out; TG_ERROR_OVERFLOW if it does not fit 64 bits. */
tg_status tg_extent_volume(tg_extent e, uint64_t *out);

/* Parse usage records from CSV text. The header selects the format:
 *   [name,]size,first,last                  1D, inclusive interval
 *   [name,]width,height,first,last          2D
 *   [name,]width,height,depth,first,last    3D
 *   id,lower,upper,size[,...]               MiniMalloc: half-open [lower, upper), extra columns ignored
 * `source` names the input in error messages ("file.csv:LINE: problem"). Numbers are plain
 * non-negative decimals. `text` need not be NUL-terminated. The caller owns the set. On
 * failure `*out` is NULL and `err` says where and why (TG_ERROR_PARSE,
 * TG_ERROR_OUT_OF_HOST_MEMORY, or TG_ERROR_INVALID_ARGUMENT for NULL arguments). Linear in
 * `length`. */
tg_status tg_records_parse_csv(const char *text, size_t length, const char *source,
                               const tg_allocator *alloc, tg_record_set **out,
                               tg_error_info *err);

/* Read and parse a CSV file (see tg_records_parse_csv). TG_ERROR_IO when it cannot be read. */
tg_status tg_records_read_csv(const char *path, const tg_allocator *alloc, tg_record_set **out,
                              tg_error_info *err);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
