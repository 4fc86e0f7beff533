/* Sizes of a range of input sizes on the command line: `--sizes a,b,c` (each size names the
 * range's dynamic dimensions in order, joined by 'x' when there are two: 320x640), the
 * default sizes a command reports when none are given, and sizes and ranges as text. */
#ifndef TANGRAM_TOOLS_RANGE_SIZES_H
#define TANGRAM_TOOLS_RANGE_SIZES_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/range.h"

/* Sizes of a range: `count` sizes of `dims` values each (the range's dimension count), size k
 * at at[k * dims]. */
typedef struct tg_cli_sizes {
  size_t count;
  uint32_t dims;
  int64_t *at;
  const tg_allocator *alloc;
} tg_cli_sizes;

/* The most sizes one --sizes may list. */
#define TG_CLI_SIZES_MAX 65536u

/* If argv[*i] is --sizes (value next or after '='): store the text in *text, advance *i and
 * return 1; -1 (error printed) when the value is missing; 0 for another argument. The text is
 * checked by tg_cli_sizes_parse once the range is known. */
int tg_cli_sizes_option(int argc, char **argv, int *i, const char **text);

/* Parse `text` (comma-separated sizes, each the range's dimensions in order joined by 'x')
 * into `*out` for `range`. Every size must lie inside the range and on its grid; duplicates
 * are kept in the order given. On a bad list prints "<cmd>: --sizes ...: <problem>" naming
 * the size and the range (e.g. "size 1700 is outside the range 32..1600/8") and returns 0 with
 * `*out` empty; 1 on success. Free with tg_cli_sizes_free. */
int tg_cli_sizes_parse(const char *cmd, const char *text, const tg_size_range *range, const tg_allocator *alloc,
                       tg_cli_sizes *out);

/* The sizes reported when --sizes is not given: every size of the range when it has at most
 * `all_up_to`, else both ends and `between` sizes evenly spaced between them (by point index:
 * row-major over two dimensions). 0 on out of memory, else 1. */
int tg_cli_sizes_default(const tg_size_range *range, uint64_t all_up_to, uint64_t between, const tg_allocator *alloc,
                         tg_cli_sizes *out);

/* One size, `dims` (the range's dimension values): as tg_cli_sizes_parse for a list of one
 * (refused naming the size and the range when it is not one of the range's). */
int tg_cli_sizes_single(const char *cmd, const tg_size_range *range, const int64_t *dims, const tg_allocator *alloc,
                        tg_cli_sizes *out);

void tg_cli_sizes_free(tg_cli_sizes *sizes);

/* "320" or "320x640" (`count` values); "1..3x32..960/32" for a range (a step of 1 left out). */
void tg_cli_size_text(const int64_t *dims, uint32_t count, char *buf, size_t size);
void tg_cli_range_text(const tg_size_range *range, char *buf, size_t size);

#endif
