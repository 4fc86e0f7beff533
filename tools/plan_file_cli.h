/* Plan files in the CLI: `plan --save FILE` and `run --plan FILE` (docs/plan-files.md). */
#ifndef TANGRAM_TOOLS_PLAN_FILE_CLI_H
#define TANGRAM_TOOLS_PLAN_FILE_CLI_H

#include "tangram/plan_file.h"
#include "tangram/range_plan.h"
#include "tools/input.h"

/* Write `plan` (made for in->records under `policy`, asked for as `strategy`) to `path` with
 * the storage, precision and plan_io of `io`; `source` names the model. Prints the reason and
 * returns TG_EXIT_USAGE when the input cannot be saved (tensors that fall back to buffers, a
 * record CSV whose dimensionality is not the storage's), TG_EXIT_FAILURE when writing fails;
 * TG_EXIT_OK with the fingerprint's 64 hex digits in `hex` otherwise. */
int tg_cli_plan_save(const char *path, const tg_cli_input *in, const char *source,
                     const tg_cli_input_options *io, tg_policy policy, tg_strategy strategy,
                     uint64_t alignment, const tg_plan *plan, const tg_allocator *alloc,
                     char hex[2 * TG_FINGERPRINT_BYTES + 1]);

/* The alignment `plan --save` gives offsets plans when none is asked for. */
#define TG_CLI_PORTABLE_ALIGNMENT 256u

/* Whether a plan file's plan can run on a device: its arenas (or its one arena) within the
 * device's largest allocation `max_allocation` (0: no limit), and the limits the records were
 * made under within the device's `limits` (each recorded limit at most the device's, where
 * both are set). TG_OK, or TG_ERROR_LIMIT with `err` naming the first that fails. */
tg_status tg_cli_plan_file_check_device(const tg_plan_file *file, uint64_t max_allocation,
                                        const tg_device_limits *limits, tg_error_info *err);

/* Whether every in-place pair `plan` declares is one of `allowed` (the pairs this model,
 * storage and device allow: tg_cli_device_pairs on `in`, the records the plan was matched
 * with; `read_write_images` as given there): TG_OK, or TG_ERROR_INVALID_PLAN with `err`
 * naming the first that is not (its op, tensors and why). */
tg_status tg_cli_plan_file_check_pairs(const tg_plan *plan, const tg_cli_input *in, int read_write_images,
                                       const tg_in_place_pair *allowed, size_t allowed_count, tg_error_info *err);

/* 1 when a plan of `mr`'s records can be saved: none of its tensors falls back to another
 * storage (a plan file holds one); else prints why (`cmd`: --save: ...) and returns 0. */
int tg_cli_range_plan_savable(const char *cmd, const tg_model_range *mr);

/* Write a plan over a range of input sizes (`rp`, made over mr->primary, the records of the
 * model loaded over `shapes`' ranges for `io`'s storage and precision, under `policy`, asked
 * for as `strategy`, with `alignment`) to `path`: the records and plan at the range's first
 * size, and section RNGE. Prints the reason and returns TG_EXIT_USAGE when it cannot be saved
 * (tg_cli_range_plan_savable), TG_EXIT_FAILURE when writing fails; TG_EXIT_OK with the first
 * size's records fingerprint in `hex` otherwise. */
int tg_cli_range_plan_save(const char *path, const tg_model_range *mr, const tg_range_plan *rp,
                           const tg_model_options *shapes, const char *source, const tg_cli_input_options *io,
                           tg_policy policy, tg_strategy strategy, uint64_t alignment, const tg_allocator *alloc,
                           char hex[2 * TG_FINGERPRINT_BYTES + 1]);

/* The 64 hex digits of a fingerprint. */
void tg_cli_fingerprint_hex(const uint8_t fp[TG_FINGERPRINT_BYTES], char hex[2 * TG_FINGERPRINT_BYTES + 1]);

#endif
