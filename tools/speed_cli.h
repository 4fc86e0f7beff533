/* `tangram evaluate --speed`: every storage and mode's best plan realised on a device and
 * timed with memory-access proxies of the model's ops (tangram/speed.h), side by side with its
 * bytes; the fastest and the smallest named, each in the other's terms. */
#ifndef TANGRAM_TOOLS_SPEED_CLI_H
#define TANGRAM_TOOLS_SPEED_CLI_H

#include "core/internal.h"
#include "tangram/backend.h"
#include "tangram/graph.h"
#include "tangram/report.h"

#define TG_CLI_SPEED_DEFAULT_REPEATS 5

typedef struct tg_cli_speed_request {
  int speed;                 /* --speed given */
  const char *backend;       /* --backend (NULL: opencl) */
  const char *device;        /* --device */
  const char *repeat;        /* --repeat, as given */
  const char *profile;       /* --profile FILE: estimate from a device profile, no device */
} tg_cli_speed_request;

/* If argv[*i] is one of --speed, --backend, --device, --repeat, --profile: store it, advance *i, return
 * 1; -1 when its value is missing (error printed); 0 for another argument. */
int tg_cli_speed_option(int argc, char **argv, int *i, tg_cli_speed_request *req);

/* The options' lines for evaluate --help. */
#define TG_CLI_SPEED_USAGE                                                                       \
  "  --speed                  also time each storage and mode's best plan on a device with\n"   \
  "                           memory-access proxies of the ops (not inference time; see\n"      \
  "                           docs/speed.md): median/min/max ms, per op class, the fastest\n"   \
  "                           and the smallest. The plan timed is the row's own; where the\n"   \
  "                           device cannot run it (offsets off its alignments, in-place\n"     \
  "                           pairs on OpenCL images) the row says what was planned instead\n"  \
  "                           (JSON \"timed_plan\", \"timed_bytes\")\n"                          \
  "  --backend opencl|vulkan  with --speed: the device's API (default opencl)\n"                \
  "  --device N|NAME          with --speed: which device (index or name substring)\n"           \
  "  --repeat N               with --speed: timed runs per plan (default 5, after 1 warm-up)\n"   \
  "  --profile FILE           with --speed: estimate the times from a device profile saved by\n"  \
  "                           tangram probe --save, without the device (marked estimated)\n"

typedef struct tg_cli_speed tg_cli_speed;

/* Check the request (exit code 2 with the reason printed when it is bad: --repeat 0, an
 * unknown backend, options without --speed). Returns 1 to go on. */
int tg_cli_speed_check(const tg_cli_speed_request *req);

/* The smallest valid result of one storage and mode of `ev`, or NULL. */
static inline const tg_evaluation_result *tg_cli_best_of_mode(const tg_evaluation *ev, tg_storage s, tg_mode m) {
  const size_t i = ev->best_of_mode[s][m == TG_MODE_OFFSETS];
  return i == TG_EVALUATION_NONE ? NULL : &ev->results[i];
}

/* Realise and time the best plan of every storage and mode of `ev` (made from `graph`): the
 * evaluation's own plans (tg_evaluation_get_parts), or, where this device cannot run them, ones
 * made here with the row's strategy, `max_allocation` and the pairs it can use, each row saying
 * what differs. A (storage, mode) the device cannot realise is a named skip. Errors: no
 * device, or a backend without proxies. */
tg_status tg_cli_speed_run(const tg_cli_speed_request *req, const tg_graph *graph, const tg_evaluation *ev,
                           uint64_t max_allocation, const tg_allocator *alloc, tg_cli_speed **out,
                           tg_error_info *err);
void tg_cli_speed_free(tg_cli_speed *s);

/* Text: the speed table, per-class split and the recommendation. */
void tg_cli_speed_text(tg__strbuf *b, const tg_cli_speed *s);
/* JSON: `,"speed":{...}` after the fields of result `r` when it is a timed plan. */
void tg_cli_speed_json_result(tg__strbuf *b, const tg_cli_speed *s, const tg_evaluation *ev,
                              const tg_evaluation_result *r);
/* JSON: `,"speed_device":..,"speed_recommendation":{..},"speed_skipped":[..]`. */
void tg_cli_speed_json_top(tg__strbuf *b, const tg_cli_speed *s);
/* The memory-versus-time chart DIR/<stem>.speed.svg. Returns 1 on success (error printed). */
int tg_cli_speed_svg(const tg_cli_speed *s, const char *dir, const char *stem, const char *title,
                     const tg_allocator *alloc);

#endif
