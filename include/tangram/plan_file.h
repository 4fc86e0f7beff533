/* Plan files: a plan computed ahead of time (on a desktop, at build time) saved together with
 * the usage records it was made for, and loaded where the engine runs, which then only checks
 * and follows it. A plan file holds the records (sizes or extents, task intervals, alignments,
 * names), the storage, precision, mode, strategy, reuse policy and alignment the plan was made
 * with, the plan, the name of the model it was made for, and a fingerprint of the records.
 * docs/plan-files.md describes the format (a versioned little-endian binary format with a
 * CRC-32 checksum).
 *
 * Every function here is safe to call from several threads at once on different objects, or
 * on shared read-only input. */
#ifndef TANGRAM_PLAN_FILE_H
#define TANGRAM_PLAN_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/planner.h"
#include "tangram/range.h"
#include "tangram/range_plan.h"
#include "tangram/records.h"
#include "tangram/schedule.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* The newest format version this library writes and reads: version 2 is version 1 followed by
 * tagged sections (in-place pairs, allocation arenas and their cap, the device limits the
 * records were made under, a plan over a range of input sizes); a plan without sections is
 * written as version 1, and version 1 files load as before. A file of another version is
 * refused with a message naming both versions. */
#define TG_PLAN_FILE_VERSION 2u

/* Bytes of a records fingerprint (a SHA-256 digest). */
#define TG_FINGERPRINT_BYTES 32

/* Longest source name (model name or path) and record name a plan file holds, in bytes. */
#define TG_PLAN_FILE_MAX_SOURCE 4096u
#define TG_PLAN_FILE_MAX_NAME 65536u

/* Flags (tg_plan_file_desc.flags, tg_plan_file.flags). */
#define TG_PLAN_FILE_IO_PLANNED 1u /* the records include the graph's inputs and outputs */

/* The fingerprint of a record set: SHA-256 over its dimensionality, count, and every record in
 * order (extent w, h, d, first and last task, alignment, name), each field little-endian as
 * docs/plan-files.md lays out; two sets have the same fingerprint exactly when those fields are
 * equal, record by record (no collision of SHA-256 is known). `names` may be NULL (no names),
 * and any entry may be NULL (no name; differs from ""). Writes TG_FINGERPRINT_BYTES bytes to
 * `out`. TG_ERROR_INVALID_ARGUMENT for NULL `out`, NULL `records` with count > 0, or dims
 * outside 1..3. Allocates nothing; linear in the records and their names. */
tg_status tg_records_fingerprint(const tg_usage_record *records, const char *const *names,
                                 size_t count, uint32_t dims, uint8_t out[TG_FINGERPRINT_BYTES]);

/* A plan over a range of input sizes to save (tangram/range_plan.h). */
typedef struct tg_plan_file_range {
  const tg_range_plan *plan;          /* computed (or created) over `records` */
  const tg_range_records *records;    /* the records at every size of the range */
  /* Optional: the model's input shapes with their ranges (tg_input_shape.range), so that a
   * tool can load the model over the same range; NULL / 0: none. */
  const tg_input_shape *input_shapes;
  size_t input_shape_count;
} tg_plan_file_range;

/* What to write. Read only during the call. */
typedef struct tg_plan_file_desc {
  const tg_plan *plan;               /* objects or offsets, made for `records` */
  const tg_usage_record *records;    /* plan->record_count records */
  const char *const *names;          /* per record, NULL or a name; NULL: no names */
  size_t record_count;               /* must equal plan->record_count */
  uint32_t dims;                     /* of the records; must equal plan->dims */
  tg_storage storage;                /* tg_storage_dims(storage) must equal dims */
  tg_precision precision;
  tg_policy policy;                  /* the reuse policy the plan was made under */
  tg_strategy strategy;              /* the strategy asked for (plan->strategy: the one used) */
  uint64_t alignment;                /* the plan's alignment (offsets mode; 0 or 1 = none) */
  uint32_t flags;                    /* TG_PLAN_FILE_* flags */
  const char *source;                /* the model's name or path, for messages; NULL = "" */
  /* The texture and buffer limits the records were made under (NULL: none recorded). The
   * allocation cap and the arenas come from the plan (plan->max_allocation, arenas). */
  const tg_device_limits *limits;
  /* A plan over a range of input sizes (NULL: one size). `plan` and `records` are then its
   * instance and records at the range's first size (tg_range_plan_instantiate), `alignment`
   * the one it was computed with, `names` the records' names (the same at every size). */
  const tg_plan_file_range *range;
} tg_plan_file_desc;

/* Encode a plan file in memory. The plan is validated first (tg_plan_validate with the serial
 * rule and desc->alignment; a plan made under a stricter policy passes it too): an invalid plan
 * is never written (TG_ERROR_INVALID_PLAN, `err` says why). TG_ERROR_INVALID_ARGUMENT, with
 * `err` naming the field, for NULL arguments, counts or dims that do not match the plan, an
 * enum out of range, unknown flags, a storage of another dimensionality, or a source or record
 * name longer than its maximum; with a range, a range plan of other records, mode or dims than
 * the plan's, records or a plan that are not the range's at its first size, or an input shape
 * whose ranges are not the range's; TG_ERROR_OVERFLOW when the file would not fit in memory;
 * TG_ERROR_OUT_OF_HOST_MEMORY. On success `*data` (allocated from `alloc`, NULL = default) and
 * `*size` hold the file; free it with tg_plan_file_free_data. On failure `*data` is NULL.
 * Linear in the records, names and plan, plus the validator's O(n log n). */
tg_status tg_plan_file_write(const tg_plan_file_desc *desc, const tg_allocator *alloc,
                             void **data, size_t *size, tg_error_info *err);

/* Free a buffer from tg_plan_file_write with the same allocator. NULL is a no-op. */
void tg_plan_file_free_data(const tg_allocator *alloc, void *data);

/* tg_plan_file_write, then write the bytes to `path` (created or replaced). TG_ERROR_IO, with
 * `err` naming the path, when it cannot be written; a partly written file is removed. */
tg_status tg_plan_file_save(const tg_plan_file_desc *desc, const char *path,
                            const tg_allocator *alloc, tg_error_info *err);

/* A plan file read back. Owns everything it points to; free with tg_plan_file_destroy. */
typedef struct tg_plan_file {
  uint32_t version;                  /* TG_PLAN_FILE_VERSION */
  tg_storage storage;
  tg_precision precision;
  tg_policy policy;
  tg_strategy strategy;              /* the strategy asked for; plan->strategy: the one used */
  uint64_t alignment;
  uint32_t flags;
  char *source;                      /* NUL-terminated; "" when none was given */
  tg_record_set *records;            /* dims, records and names, as written */
  tg_plan *plan;                     /* mode, strategy, fit, objects or offsets, total */
  uint8_t fingerprint[TG_FINGERPRINT_BYTES]; /* of `records` (checked on reading) */
  tg_allocator alloc;                /* what everything above came from */
  int has_limits;                    /* 1: `limits` holds the limits the records were made under */
  tg_device_limits limits;           /* zero fields: no limit */
  /* The allocation cap the plan was made under is plan->max_allocation (0: none); an offsets
   * plan of several arenas has them in plan->arena_count, arena_of and arena_sizes. */
  /* A plan over a range of input sizes (NULL / 0 when the file holds one size): `records` and
   * `plan` are then those at the range's first size; `range_records` holds the records at every
   * size (tasks, alignments and names as `records`); tg_plan_file_match_range gives the plan
   * over the range. `input_shapes`: the model's input shapes with their ranges, as saved (names
   * owned by the file). */
  tg_range_records *range_records;
  tg_input_shape *input_shapes;
  size_t input_shape_count;
  struct tg_plan_file_structures *structures; /* the saved structures and pieces (opaque) */
} tg_plan_file;

/* Decode a plan file from `size` bytes at `data`. Every length, count, enum and size is
 * checked against the bytes actually present before it is used (a count is never trusted to
 * size an allocation), then the checksum, the fingerprint of the records, and the plan
 * itself (tg_plan_validate against the file's records and alignment, serial rule). `name`
 * (NULL = "plan file") starts every message, e.g. "pose.tgplan: truncated: 97 bytes, a plan
 * file's header and checksum alone take 132". TG_ERROR_PARSE for a malformed, truncated or
 * corrupted file (bad magic, another version, a checksum or fingerprint mismatch, a field out
 * of range: `err` names the field and, for records, the record); TG_ERROR_INVALID_PLAN when
 * the plan breaks a rule for its own records; TG_ERROR_INVALID_ARGUMENT for NULL arguments; TG_ERROR_OUT_OF_HOST_MEMORY.
 * On success the caller owns `*out` (tg_plan_file_destroy); on failure `*out` is NULL and
 * nothing leaks. Linear in `size` plus the validator's O(n log n). */
tg_status tg_plan_file_parse(const void *data, size_t size, const char *name,
                             const tg_allocator *alloc, tg_plan_file **out, tg_error_info *err);

/* Read the file at `path` and parse it (messages start with the path). TG_ERROR_IO when it
 * cannot be read; otherwise as tg_plan_file_parse. */
tg_status tg_plan_file_load(const char *path, const tg_allocator *alloc, tg_plan_file **out,
                            tg_error_info *err);

/* Free a plan file and everything it owns. NULL is a no-op. */
void tg_plan_file_destroy(tg_plan_file *file);

/* Check that a plan file fits the records an engine has (typically its model's records for
 * the file's storage and precision): their fingerprint must equal the file's (the records are
 * compared field by field, which decides the same exactly), and with a
 * `relation` (the file's policy over the engine's graph; NULL = serial) the plan must be valid
 * under it. TG_OK when both hold: the file's plan can then be realised for `records`.
 * TG_ERROR_INVALID_PLAN when not, with `err` saying which model the plan was made for (the
 * file's source and record count), what the given records are, and the first record that
 * differs (or the validator's reason). TG_ERROR_INVALID_ARGUMENT for NULL arguments or dims
 * outside 1..3; TG_ERROR_OUT_OF_HOST_MEMORY. Reads only; allocates scratch for the validator
 * only with a relation. Linear in the records plus, with a relation, the validator's cost. */
tg_status tg_plan_file_match(const tg_plan_file *file, const tg_usage_record *records,
                             const char *const *names, size_t count, uint32_t dims,
                             const tg_share_relation *relation, const tg_allocator *alloc,
                             tg_error_info *err);

/* The plan of a file over a range, for records over a range an engine has (typically its
 * model's records for the file's storage and precision, loaded over the file's input shapes):
 * `records` must have the file's range and, at every size, the file's records there (sizes,
 * tasks, alignments; `names`, the same at every size, as the file's; NULL `records`: the
 * file's own range_records, with their names). With `relation` (the file's policy over the
 * engine's graph; NULL = serial) offsets are placed above every record a record may not share
 * with: every instance is valid under it by construction. On TG_OK `*out` is the plan
 * (tg_range_plan_instantiate at any size of the range gives the saved plan there; its instance
 * at the first size is compared with the file's plan), borrowing `records` (or the file's):
 * they must outlive it; the caller owns it (tg_range_plan_destroy). TG_ERROR_INVALID_PLAN,
 * with `err` naming the difference: another range (both named), the first size and record
 * whose size, task or alignment differs, a name that differs, a relation the saved plan breaks
 * (the first size's instance is not the file's plan, or two records that may not share hold
 * one object). TG_ERROR_INVALID_ARGUMENT for a file without a range or NULL arguments;
 * TG_ERROR_OUT_OF_HOST_MEMORY. `*out` is NULL on failure. Cost: one comparison per size and
 * record, and tg_range_plan_create. */
tg_status tg_plan_file_match_range(const tg_plan_file *file, const tg_range_records *records,
                                   const char *const *names, const tg_share_relation *relation,
                                   const tg_allocator *alloc, tg_range_plan **out, tg_error_info *err);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
