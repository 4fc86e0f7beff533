/* Loading what the CLI plans: a usage-record CSV, or a model (.tflite / text graph) turned
 * into usage records for one storage type, with its schedule for reuse policies. */
#ifndef TANGRAM_TOOLS_INPUT_H
#define TANGRAM_TOOLS_INPUT_H

#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/schedule.h"
#include "tools/cli.h"

typedef struct tg_cli_input {
  tg_model *model;
  tg_lifetimes *lifetimes;            /* models only */
  tg_model_records *model_records;    /* models only */
  tg_schedule *schedule;              /* models only */
  const tg_record_set *records;       /* what to plan (model_records->records or the CSV) */
  const uint32_t *tensor_of;          /* models only: record -> tensor */
  const tg_graph *graph;              /* models only */
  const tg_allocator *alloc;
} tg_cli_input;

typedef struct tg_cli_input_options {
  tg_storage storage;
  tg_precision precision;
  int plan_io;
  const tg_device_limits *limits;     /* NULL: tg_device_limits_default() */
} tg_cli_input_options;

/* Load `path`. On failure prints nothing; `err` says why; `*in` is left empty. */
tg_status tg_cli_input_load(const char *path, const tg_cli_input_options *options,
                            const tg_allocator *alloc, tg_cli_input *in, tg_error_info *err);
void tg_cli_input_free(tg_cli_input *in);

/* The relation for `policy` over the input's records (NULL for serial). Models only: CSV
 * inputs have no graph, so only `serial` is possible there (TG_ERROR_INVALID_ARGUMENT). */
tg_status tg_cli_input_relation(const tg_cli_input *in, tg_policy policy,
                                tg_policy_relation **out, tg_error_info *err);

#endif
