/* Shared pieces of the `tangram` command-line tool. */
#ifndef TANGRAM_TOOLS_CLI_H
#define TANGRAM_TOOLS_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "core/internal.h"
#include "tangram/allocator.h"
#include "tangram/backend.h"
#include "tangram/layout.h"
#include "tangram/planner.h"
#include "tangram/records.h"
#include "tangram/status.h"

/* Exit codes: 0 success, 1 a failure while working (device, allocation, corruption found),
 * 2 bad usage or bad input. */
enum { TG_EXIT_OK = 0, TG_EXIT_FAILURE = 1, TG_EXIT_USAGE = 2 };

/* Print "tangram: <message>" on stderr. */
void tg_cli_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* The exit code for a library status: 2 for input problems, 1 otherwise. */
int tg_cli_exit_code(tg_status st);

/* Parse a plain non-negative decimal (optionally with K/M/G/KiB/MiB/GiB suffix when
 * `allow_suffix`). Returns 1 on success. */
int tg_cli_parse_u64(const char *s, int allow_suffix, uint64_t *out);

/* --max-allocation BYTES (K/M/G suffixes): a positive size of at most 2^60 bytes. On a bad
 * value prints "<cmd>: --max-allocation must be ..." and returns 0; else 1. */
int tg_cli_parse_max_allocation(const char *cmd, const char *s, uint64_t *out);

/* Under an allocation cap of `cap` bytes: the first record of `set` larger than the cap (for
 * 2D/3D records, texels times `texel_bytes`) is an error naming it (or its index), printed as
 * "<cmd>: tensor NAME (N bytes) is larger than the allocation cap C bytes"; returns 0 then,
 * else 1. */
int tg_cli_check_max_allocation(const char *cmd, const tg_record_set *set, uint32_t texel_bytes,
                                uint64_t cap);

/* Under an allocation cap: an objects plan's first object larger than `cap` bytes (texels
 * times `texel_bytes` for 2D/3D) is an error naming its largest tensor; returns 0 then, else 1
 * (also for offsets plans, which the planner keeps within the cap). */
int tg_cli_check_objects_cap(const char *cmd, const tg_record_set *set, const tg_plan *plan,
                             uint32_t texel_bytes, uint64_t cap);

/* --max-texture-size WxH or WxHxL: two or three positive numbers up to 2^31 (`*d` = L, or 0
 * when absent). On a bad value prints the reason and returns 0; else 1. */
int tg_cli_parse_texture_size(const char *cmd, const char *s, uint64_t *w, uint64_t *h, uint64_t *d);

/* A smaller device's textures: 2D width and height, and 3D width and height, at most w and h;
 * with d > 0 also array layers and 3D depth at most d (a zero limit, none, becomes the value). */
void tg_cli_limit_texture_size(tg_device_limits *limits, uint64_t w, uint64_t h, uint64_t d);

/* Option matching: if argv[*i] is `--name` followed by a value, or `--name=value`, store the
 * value in *value, advance *i past what was consumed and return 1. If `--name` is the last
 * argument, print an error and return -1. Otherwise return 0. */
int tg_cli_option(int argc, char **argv, int *i, const char *name, const char **value);

/* tg_cli_option over a table: the first of names[0..count) that matches stores its value in
 * *targets[k] and sets *which = k; returns 1, -1 (a name without its value, error printed) or
 * 0 when none matches. */
int tg_cli_option_table(int argc, char **argv, int *i, const char *const *names, const char **const *targets,
                        size_t count, size_t *which);

/* The host allocator the CLI uses: the default, wrapped in a failing allocator when
 * TANGRAM_FAIL_HOST_ALLOC_AT=N is set (the Nth host allocation fails). `fa` is caller storage. */
const tg_allocator *tg_cli_allocator(tg_failing_allocator *fa);

/* Print what `b` holds on stdout and free it; when building it ran out of memory, print that
 * instead and return TG_EXIT_FAILURE, else `code`. */
int tg_cli_print_report(tg__strbuf *b, int code);

/* After tg_device_open failed with `st`: "run: no device: <err>" and each backend skipped with
 * its reason on stderr; returns the exit code (TG_EXIT_USAGE for bad input, else
 * TG_EXIT_FAILURE). */
int tg_cli_no_device(tg_status st, const tg_error_info *err, const tg_backend_skip *skipped, size_t nskipped);
/* Open the device `opt` names (tg_device_open), the backends skipped on the way in `skipped`
 * (TG_BACKEND_COUNT entries) and `*nskipped` for the report: 0 with `*dev` open, else the exit
 * code after tg_cli_no_device has said why. */
int tg_cli_open_device(const tg_device_options *opt, const tg_allocator *alloc, tg_device **dev,
                       tg_backend_skip *skipped, size_t *nskipped, tg_error_info *err);
/* The text report's line "  skipped BACKEND: REASON" for each backend skipped. */
void tg_cli_text_skipped(tg__strbuf *b, const tg_backend_skip *skipped, size_t nskipped);

/* An offsets plan's `,"arenas":[BYTES,...]` and, when `with_arena_of`, each record's arena
 * `,"arena_of":[K,...]`. */
void tg_cli_json_arenas(tg__strbuf *b, const tg_plan *p, int with_arena_of);

/* `,"dynamic":[D,...]`: the dimensions d < `rank` whose bit d is set in `dynamic`. */
void tg_cli_json_dynamic(tg__strbuf *b, uint32_t dynamic, uint32_t rank);

/* The entries of a JSON "skipped" array: `{"backend":NAME,"reason":TEXT}`, comma-separated. */
void tg_cli_json_skipped(tg__strbuf *b, const tg_backend_skip *skipped, size_t nskipped);

/* Write `text` to `path` ("-" = stdout). Returns 1 on success; prints an error otherwise. */
int tg_cli_write_file(const char *path, const char *text, size_t length);

/* `,"in_place":[{"op":OP,"input":RECORD,"output":RECORD[,"view":true]},...]` (the top-level key
 * of plan, evaluate and run JSON). */
void tg_cli_json_in_place(tg__strbuf *b, const tg_in_place_pair *pairs, size_t count);

/* The --in-place help line of plan, evaluate and run. */
#define TG_CLI_IN_PLACE_HELP                                                                  \
  "  --in-place               models: let elementwise ops (ADD, MUL, RELU, ...) write their\n" \
  "                           output over an input that dies there, and RESHAPE-like ops be\n" \
  "                           views of their input (one allocation each), where that lowers\n" \
  "                           the total; the engine's kernels must then read each element\n"  \
  "                           before writing it (no restrict). JSON \"in_place\" lists the\n"  \
  "                           pairs used (docs/models.md). Image storages: Vulkan only.\n"  \
  "                           --policy parallel-safe|branch-local keep only pairs whose\n"   \
  "                           input no other op may still read when the op runs\n"

/* Strategy best's search time on the command line when --time-limit is not given: the CLI
 * plans offline, so it searches longer than the library's TG_DEFAULT_TIME_LIMIT_MS (meant for
 * an engine at load time); the search still ends as soon as its plan meets a bound. */
#define TG_CLI_DEFAULT_TIME_LIMIT_MS 1000u
/* `run` plans every storage it tries (and other strategies and modes over a budget): a
 * quarter of that per plan. */
#define TG_CLI_RUN_TIME_LIMIT_MS 250u

/* Subcommands: each takes the arguments after the subcommand name (argv[0] = subcommand). */
int tg_cli_plan(int argc, char **argv);
int tg_cli_evaluate(int argc, char **argv);
int tg_cli_schedule(int argc, char **argv);
int tg_cli_run(int argc, char **argv);
int tg_cli_inputs(int argc, char **argv);
/* `run` with --runtime-pool (tools/cmd_run_pool.c): same arguments as tg_cli_run. */
int tg_cli_run_pool(int argc, char **argv);

#endif
