/* Plan files, internal: the format's layout (docs/plan-files.md) and a function for tests and
 * fuzz targets. Not installed. */
#ifndef TANGRAM_PLANFILE_INTERNAL_H
#define TANGRAM_PLANFILE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/internal.h"
#include "tangram/plan_file.h"

#define TG__PLAN_FILE_HEADER_BYTES 128u   /* fixed header, source name follows */
#define TG__PLAN_FILE_RECORD_BYTES 48u    /* one record's fixed-width entry */
#define TG__PLAN_FILE_CHECKSUM_BYTES 4u   /* CRC-32 of everything before it */
#define TG__PLAN_FILE_NO_NAME 0xFFFFFFFFu /* name_bytes of a record without a name */

/* Header field offsets. */
enum {
  TG__PF_MAGIC = 0,
  TG__PF_VERSION = 8,
  TG__PF_FLAGS = 12,
  TG__PF_FILE_BYTES = 16,
  TG__PF_DIMS = 24,
  TG__PF_MODE = 28,
  TG__PF_STRATEGY = 32,
  TG__PF_PLAN_STRATEGY = 36,
  TG__PF_FIT = 40,
  TG__PF_STORAGE = 44,
  TG__PF_PRECISION = 48,
  TG__PF_POLICY = 52,
  TG__PF_ALIGNMENT = 56,
  TG__PF_RECORD_COUNT = 64,
  TG__PF_OBJECT_COUNT = 72,
  TG__PF_TOTAL = 80,
  TG__PF_FINGERPRINT = 88,
  TG__PF_SOURCE_BYTES = 120,
  TG__PF_RESERVED = 124
};

/* Little-endian fields. */
static inline void tg__pf_put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void tg__pf_put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t tg__pf_get_u32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
static inline uint64_t tg__pf_get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

/* Tagged sections (version 2): [u32 tag][u64 payload bytes][payload]; the tag's four bytes
 * read as ASCII in file order. */
#define TAG(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define TG__PF_SECTION_HEAD 12u
#define TG__PF_TAG_RANGE TAG('R', 'N', 'G', 'E') /* a plan over a range of input sizes */

/* ---- section RNGE (plan_file_range.c) ---- */

/* A range section prepared for writing: the sizes of every record at every size, how each is
 * stored, and the section's bytes (head included). */
typedef struct tg__pf_range_out {
  const tg_plan_file_range *range;
  size_t count;          /* records */
  uint32_t dims;
  uint64_t points;
  uint8_t *formula;      /* count * dims: 1 = stored as a formula (coef), 0 = a table */
  uint64_t *coef;        /* count * dims * 4 */
  uint64_t *values;      /* points * count * dims: the value of record r, axis a at point p */
  size_t bytes;
} tg__pf_range_out;

/* Check desc->range against the rest of `desc` (records and plan at the first size, modes,
 * input shapes) and prepare `out`. TG_ERROR_INVALID_ARGUMENT naming the problem,
 * TG_ERROR_OVERFLOW, TG_ERROR_OUT_OF_HOST_MEMORY. Free with tg__pf_range_out_free. */
tg_status tg__pf_range_prepare(const tg_plan_file_desc *desc, const tg_allocator *alloc, tg__pf_range_out *out,
                               tg_error_info *err);
void tg__pf_range_out_free(tg__pf_range_out *out, const tg_allocator *alloc);
/* Write the prepared section at `b` (out->bytes bytes). */
void tg__pf_range_write(const tg__pf_range_out *out, uint8_t *b);

/* Read a range section's payload into `f` (its records, plan, alignment, policy and mode
 * already read and checked): the range records, input shapes and structures, all checked
 * against the bytes present, the structures against the records, and (serial policy) the
 * instance at the first size against f->plan. TG_ERROR_PARSE naming the field,
 * TG_ERROR_INVALID_PLAN, TG_ERROR_OUT_OF_HOST_MEMORY. */
tg_status tg__pf_range_read(const uint8_t *payload, uint64_t length, tg_plan_file *f, const char *name,
                            tg_error_info *err);
void tg__pf_range_free(tg_plan_file *f);

/* For tests and fuzz targets: the description that writes `f` again (without its range: set
 * d->range to write one). */
static inline void tg__plan_file_describe(const tg_plan_file *f, tg_plan_file_desc *d) {
  memset(d, 0, sizeof *d);
  d->plan = f->plan;
  d->records = f->records->records;
  d->names = (const char *const *)f->records->names;
  d->record_count = f->records->count;
  d->dims = f->records->dims;
  d->storage = f->storage;
  d->precision = f->precision;
  d->policy = f->policy;
  d->strategy = f->strategy;
  d->alignment = f->alignment;
  d->flags = f->flags;
  d->source = f->source;
  d->limits = f->has_limits ? &f->limits : NULL;
}

/* For tests and fuzz targets, which change bytes of a file and want the reader to get past
 * its integrity checks to the fields behind them: set the file-size field to `size`, recompute
 * the fingerprint from the records section when the header's counts and lengths lie within
 * the bytes (else leave it), and recompute the checksum. Does nothing to files shorter than
 * the header and checksum. Never reads or writes outside `size` bytes. */
void tg__plan_file_reseal(uint8_t *data, size_t size);

#endif
