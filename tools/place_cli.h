/* `--place` and `--place-file` for plan, evaluate, schedule and run: heterogeneous graphs, each
 * op on the GPU or the CPU and each tensor in device, host or shared memory
 * (docs/heterogeneous.md). Without these options every command behaves as before. */
#ifndef TANGRAM_TOOLS_PLACE_CLI_H
#define TANGRAM_TOOLS_PLACE_CLI_H

#include <stdint.h>

#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/planner.h"
#include "tangram/schedule.h"
#include "tools/cli.h"

/* What a command was asked. Zero-initialise, then fill what the command has. */
typedef struct tg_cli_place_request {
  const char *model;
  const tg_model_options *model_options; /* --input-shape; NULL: none */
  const char *place;          /* --place: auto | gpu | cpu:TYPE[,TYPE...]; NULL when not given */
  const char *place_file;     /* --place-file FILE; NULL when not given */
  tg_storage storage;
  int auto_storage;           /* run: --storage auto */
  tg_precision precision;
  tg_mode mode;
  tg_strategy strategy;
  tg_policy policy;
  int plan_io;
  int json;
  uint32_t time_limit_ms;     /* plan: --time-limit */
  uint64_t seed;              /* plan: --seed */
  uint64_t alignment;         /* plan: --alignment (offsets) */
  uint64_t max_allocation;    /* plan, evaluate, run: --max-allocation (0: none) */
  tg_fit fit;                 /* plan: --fit (offsets greedy-in-order) */
  int no_limits;              /* evaluate: --no-limits */
  /* run */
  const char *backend;
  const char *device;
  uint64_t budget;            /* 0: the device's */
  int out_of_order;
  int no_reuse_edges;
} tg_cli_place_request;

/* Match `--place VALUE` / `--place=VALUE` / `--place-file FILE` at argv[*i] into `req`:
 * 1 matched (and *i advanced), 0 not these options, -1 a missing value (message printed). */
int tg_cli_place_option(int argc, char **argv, int *i, tg_cli_place_request *req);

/* 1 when --place or --place-file was given. */
int tg_cli_place_given(const tg_cli_place_request *req);

/* The commands with a placement. Each returns the exit code. */
int tg_cli_place_plan(const tg_cli_place_request *req);
int tg_cli_place_evaluate(const tg_cli_place_request *req);
int tg_cli_place_schedule(const tg_cli_place_request *req);
int tg_cli_place_run(const tg_cli_place_request *req);

/* Usage lines shared by the four commands' --help. */
#define TG_CLI_PLACE_USAGE                                                                      \
  "  --place auto|gpu|cpu:TYPE[,TYPE...]\n"                                                    \
  "                           heterogeneous graph: each op on the GPU or the CPU (auto: the\n" \
  "                           default profile, ops a mobile GPU path lacks on the CPU;\n"       \
  "                           cpu:* every op on the CPU); tensors live in device, host or\n"    \
  "                           shared memory, each space planned on its own (see\n"             \
  "                           docs/heterogeneous.md); default: every op on the device\n"        \
  "  --place-file FILE        per-op placement, one 'OP gpu|cpu' per line (OP: index or\n"     \
  "                           name), applied after --place\n"

#endif
