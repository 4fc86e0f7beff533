/* Ranges of input sizes in `plan` and `evaluate`: a plan valid at every size of the range
 * (tangram/range_plan.h), reported size by size (tangram/report.h): the plan's bytes, that size's
 * own best, the upper-bound plan, the run-time pool's peak and the bound. tools/range_cli.c holds
 * what both commands share and `plan`; tools/range_evaluate.c `evaluate`. */
#ifndef TANGRAM_TOOLS_RANGE_CLI_H
#define TANGRAM_TOOLS_RANGE_CLI_H

#include "tangram/model.h"
#include "tangram/range_plan.h"
#include "tangram/report.h"
#include "tangram/schedule.h"
#include "tools/cli.h"
#include "tools/input.h"
#include "tools/range_sizes.h"

/* The options a range adds. */
typedef struct tg_cli_range_options {
  const char *sizes;       /* --sizes a,b,c (NULL: the default sizes) */
  const char *svg_dir;     /* plan: --svg-dir DIR */
  const char *own_time_s;  /* --own-time-limit MS, as given */
  int svg_dir_option;      /* set by a command whose --svg-dir is parsed here (plan) */
} tg_cli_range_options;

/* If argv[*i] is --sizes, --own-time-limit (or, with svg_dir_option, --svg-dir): store its value,
 * advance *i, return 1; -1 for a missing value (printed); 0 for another argument. */
int tg_cli_range_option(int argc, char **argv, int *i, tg_cli_range_options *o);

/* `"dims":[{"lo":..,"hi":..,"step":..,"axes":[{"input":..,"axis":..}]},...]` for the range of `r`. */
void tg_cli_json_range_dims(tg__strbuf *b, const tg_model_range *r);

/* The help lines of the options a range adds (plan and evaluate). */
#define TG_CLI_RANGE_HELP                                                                            \
  TG_CLI_INPUT_SHAPE_RANGE_HELP                                                                      \
  "                           With a range: one plan valid at every size of it\n"                 \
  "                           (docs/ranges.md), reported per size: its bytes, that size's own\n"  \
  "                           best, the upper-bound plan (the largest size's plan used at every\n"\
  "                           size), the run-time pool's peak and the lower bound (JSON\n"        \
  "                           \"range\")\n"                                                        \
  "  --sizes A,B,...          with a range: the sizes reported, each the dynamic dimensions in\n" \
  "                           order joined by x (e.g. 320,640 or 320x640,960x960); default:\n"    \
  "                           every size up to 256 of them, else both ends and 62 between\n"     \
  "  --own-time-limit MS      with a range: a reported size's own best is the smaller of that\n"  \
  "                           size planned alone (same mode, strategy, alignment, policy,\n"     \
  "                           in-place pairs and cap; best searches MS ms, 0: no search;\n"     \
  "                           default: plan's --time-limit, evaluate's library default) and\n"  \
  "                           the best plan the range planner knows there\n"

/* Records over `range` made point by point: `at(ctx, p, &recs)` gives the `count` records at
 * grid point p (their tasks the same at every point); each record's alignment is its largest
 * over the range. */
typedef tg_status (*tg_cli_records_at_fn)(void *ctx, uint64_t point, const tg_usage_record **recs);
tg_status tg_cli_range_records_build(const tg_size_range *range, size_t count, tg_cli_records_at_fn at, void *ctx,
                                     const tg_allocator *alloc, tg_range_records **out);

/* The relation of `policy` (NULL for serial) over the primary records of `r`; `err` says why
 * not. */
tg_status tg_cli_range_relation(const tg_model_range *r, tg_policy policy, const tg_allocator *alloc,
                                tg_policy_relation **rel, tg_error_info *err);

/* `plan` over a range. */
typedef struct tg_cli_plan_range_request {
  const char *file;
  const tg_model_options *model;     /* the input shapes, with the range */
  tg_storage storage;
  tg_precision precision;
  int plan_io;
  const tg_device_limits *limits;
  tg_mode mode;
  tg_strategy strategy;              /* --strategy all plans the range with best */
  tg_fit fit;
  uint64_t alignment;
  tg_policy policy;
  uint32_t beam_width;
  uint64_t seed;
  uint32_t time_limit_ms;            /* for the whole range (TG_TIME_LIMIT_NONE: no search) */
  int in_place;
  uint64_t max_allocation;
  int json;
  int no_fallback;
  const char *save;                  /* --save FILE: the plan reported, over the range, or NULL */
  const char *refused;               /* an option given that does not take a range, or NULL */
  tg_cli_range_options range;
} tg_cli_plan_range_request;

/* Plan the range, report it, save it (once every plan reported passed the validator), draw
 * it; returns the exit code. */
int tg_cli_plan_range(const tg_cli_plan_range_request *rq);

/* What `plan` and `evaluate` share: one storage and mode planned over a range, in parts (the
 * primary records, then each fallback group in chain order), and its reported sizes. */
#define TG_CLI_RANGE_MAX_PARTS (1 + TG_STORAGE_FALLBACK_COUNT)
typedef struct tg_cli_range_job {
  size_t part_count;
  tg_range_report_part parts[TG_CLI_RANGE_MAX_PARTS];
  tg_plan_options options[TG_CLI_RANGE_MAX_PARTS];
  tg_storage storage_of[TG_CLI_RANGE_MAX_PARTS];   /* where each part lives */
  tg_range_plan *plans[TG_CLI_RANGE_MAX_PARTS];
  tg_range_records *owned[TG_CLI_RANGE_MAX_PARTS]; /* byte records made of texel records */
  tg_plan *instances[TG_CLI_RANGE_MAX_PARTS];
  tg_range_report_size *sizes;
  size_t size_count;
  uint32_t own_time_limit_ms;
  const tg_allocator *alloc;
} tg_cli_range_job;

/* Add a part: `records` planned over the range with `options` (copied; relation and pairs
 * borrowed). `bytes_of_texels`: plan the records' bytes (texels x the precision's texel bytes)
 * in one arena, as textures are in offsets mode. On failure `err` says why; the job keeps the
 * parts added before. */
tg_status tg_cli_range_job_add(tg_cli_range_job *job, const tg_range_records *records, tg_storage storage,
                               const tg_plan_options *options, int bytes_of_texels, tg_precision precision,
                               tg_error_info *err);

/* Report every size of `points` (tg_range_report_compute_size): TG_ERROR_INVALID_PLAN when a
 * plan there fails validation. */
tg_status tg_cli_range_job_report(tg_cli_range_job *job, const uint64_t *points, size_t count, tg_precision precision,
                                  tg_error_info *err);

/* The worst ratio of bytes to own best over the reported sizes, and its index. */
double tg_cli_range_job_worst(const tg_cli_range_job *job, size_t *at);

/* `,"range":{...}` (docs/ranges.md); `with_records`: each size's offset_of, or object_of and
 * object_sizes, of the first part (plan). */
void tg_cli_json_range(tg__strbuf *b, const tg_cli_range_job *job, const tg_model_range *r, int with_records);

/* The chart of memory against size: DIR/<stem>.<storage>.<mode>.range.svg. Returns 1 on success,
 * else prints why and returns 0. */
int tg_cli_range_svg(const char *cmd, const char *dir, const char *model_path, tg_storage storage, tg_mode mode,
                     const tg_cli_range_job *job, uint32_t dim_count, const char *title);

void tg_cli_range_job_free(tg_cli_range_job *job);

/* `evaluate` over a range. */
typedef struct tg_cli_evaluate_range_request {
  const char *file;
  const tg_model_options *model;
  tg_precision precision;
  tg_policy policy;
  const tg_device_limits *limits;    /* NULL: none (--no-limits) */
  int in_place;
  uint64_t max_allocation;
  int no_fallback;
  int json;
  const char *svg_dir;
  const char *refused;               /* an option given that does not take a range, or NULL */
  tg_cli_range_options range;
} tg_cli_evaluate_range_request;

int tg_cli_evaluate_range(const tg_cli_evaluate_range_request *rq);

#endif
