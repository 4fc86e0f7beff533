/* `tangram run` over a range of input sizes (docs/ranges.md): one plan over the range (planned
 * here or read from a plan file), one set of allocations for the largest size asked (or grown
 * geometrically with --grow), re-offset at each size and checked on the device. */
#ifndef TANGRAM_TOOLS_RUN_RANGE_H
#define TANGRAM_TOOLS_RUN_RANGE_H

#include "tangram/backend.h"
#include "tangram/plan_file.h"
#include "tools/input.h"

typedef struct tg_cli_run_range_args {
  const char *file;                   /* the model */
  const char *plan_path;              /* --plan FILE, or NULL */
  const tg_plan_file *plan_file;      /* that file, read (storage, precision, mode, policy and
                                         plan_io below are its own) */
  const char *sizes;                  /* --sizes text, or NULL */
  int grow;                           /* --grow: allocate for the first size, grow when needed */
  tg_device_options device;
  tg_storage storage;
  tg_precision precision;
  tg_mode mode;
  tg_strategy strategy;
  tg_policy policy;
  uint32_t time_limit_ms;
  int plan_io;
  int json;
  uint32_t flow[2];                   /* control flow in the check: branch, iterations */
  uint64_t budget;                    /* 0: the device's */
  const tg_cli_model_options *shapes; /* --input-shape (ranges, or one size with --plan) */
} tg_cli_run_range_args;

/* Run it; prints the report (JSON with `json`) and returns the exit code: 0, 1 (a device
 * failure, corruption, over the budget) or 2 (bad input: no range, a size outside the range,
 * a plan file for another model or range, options a range does not take). */
int tg_cli_run_range(const tg_cli_run_range_args *args, const tg_allocator *alloc);

#endif
