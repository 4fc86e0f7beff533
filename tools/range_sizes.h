/* Sizes of a range of input sizes on the command line, for every command that takes a range
 * (plan, evaluate, run): `--sizes a,b,c` (each size names the range's dynamic dimensions in
 * order, joined by 'x' when there are two: 320x640), the default sizes a command takes when
 * none are given, and sizes and ranges as text. */
#ifndef TANGRAM_TOOLS_RANGE_SIZES_H
#define TANGRAM_TOOLS_RANGE_SIZES_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/model.h"
#include "tangram/range.h"

/* Sizes of a range: `count` grid points (tg_size_range_point gives a point's dimensions). */
typedef struct tg_cli_sizes {
  size_t count;
  uint64_t *point;
  const tg_allocator *alloc;
} tg_cli_sizes;

/* The most sizes one --sizes may list. */
#define TG_CLI_SIZES_MAX 65536u

/* The default sizes: plan and evaluate report every size when there are at most
 * TG_CLI_REPORT_SIZES_ALL, else both ends and TG_CLI_REPORT_SIZES_BETWEEN between; run runs
 * both ends and TG_CLI_RUN_SIZES_BETWEEN between. */
#define TG_CLI_REPORT_SIZES_ALL 256u
#define TG_CLI_REPORT_SIZES_BETWEEN 62u
#define TG_CLI_RUN_SIZES_BETWEEN 6u

/* Parse `text` (comma-separated sizes, each the range's dimensions in order joined by 'x')
 * into `*out`, sizes of the range of `r`. Every size must lie inside the range and on its
 * step; duplicates are kept in the order given. A bad list prints "<cmd>: --sizes: <problem>"
 * naming the size and the range (e.g. "1700 is outside the range: dimension 1 is 1700, the
 * range takes 32..1600/8 (x[3] 32..1600/8)") and returns TG_EXIT_USAGE with `*out` empty;
 * out of memory TG_EXIT_FAILURE; TG_EXIT_OK on success. Free with tg_cli_sizes_free. */
int tg_cli_sizes_parse(const char *cmd, const char *text, const tg_model_range *r, const tg_allocator *alloc,
                       tg_cli_sizes *out);

/* One size, `dims` (the range's dimension values, as `option` gave them): as
 * tg_cli_sizes_parse for a list of one, the problem named after `option`. */
int tg_cli_sizes_single(const char *cmd, const char *option, const tg_model_range *r, const int64_t *dims,
                        const tg_allocator *alloc, tg_cli_sizes *out);

/* The sizes taken when --sizes is not given: every size of `range` when it has at most
 * `all_up_to`, else both ends and `between` sizes evenly spread between them (by point index:
 * row-major over two dimensions). Returns TG_EXIT_OK, or TG_EXIT_FAILURE (printed) when out of
 * memory. */
int tg_cli_sizes_default(const char *cmd, const tg_size_range *range, uint64_t all_up_to, uint64_t between,
                         const tg_allocator *alloc, tg_cli_sizes *out);

void tg_cli_sizes_free(tg_cli_sizes *sizes);

/* "320" or "320x640": a size of `range`. */
void tg_cli_range_size_name(const tg_size_range *range, const int64_t *dims, char *buf, size_t size);

/* "x[3] 32..1600/8" (one dimension) or "x[2] 32..960/32, x[3] 32..960/32": the range of `r`,
 * each dimension by the first input axis that follows it. */
void tg_cli_range_text(const tg_model_range *r, char *buf, size_t size);

#endif
