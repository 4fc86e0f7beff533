/* Plan files, internal: the format's layout (docs/plan-files.md) and a function for tests and
 * fuzz targets. Not installed. */
#ifndef TANGRAM_PLANFILE_INTERNAL_H
#define TANGRAM_PLANFILE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

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

/* For tests and fuzz targets, which change bytes of a file and want the reader to get past
 * its integrity checks to the fields behind them: set the file-size field to `size`, recompute
 * the fingerprint from the records section when the header's counts and lengths lie within
 * the bytes (else leave it), and recompute the checksum. Does nothing to files shorter than
 * the header and checksum. Never reads or writes outside `size` bytes. */
void tg__plan_file_reseal(uint8_t *data, size_t size);

#endif
