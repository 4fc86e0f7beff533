/* Shared helpers for Tangram's tests. Include after <cmocka.h>'s prerequisites. */
#ifndef TG_TEST_H
#define TG_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "tangram/allocator.h"
#include "tangram/planner.h"
#include "tangram/records.h"

/* Deterministic random numbers (splitmix64). */
typedef struct tg_test_rng {
  uint64_t state;
} tg_test_rng;

uint64_t tg_test_rng_next(tg_test_rng *rng);
/* Uniform in [lo, hi] (inclusive). */
uint64_t tg_test_rng_range(tg_test_rng *rng, uint64_t lo, uint64_t hi);

/* Constant may-share relations (tg_share_relation.may_share): every pair may share / none may. */
int tg_test_share_always(void *user, size_t a, size_t b);
int tg_test_share_never(void *user, size_t a, size_t b);

/* Parameters for random record sets. */
typedef struct tg_test_random_spec {
  uint32_t dims;          /* 1..3 */
  size_t count;
  uint32_t max_task;      /* tasks in [0, max_task] */
  uint32_t max_length;    /* last - first in [0, max_length] */
  uint64_t max_size;      /* each dimension in [1, max_size] (1D: bytes) */
  int allow_zero_size;    /* 1D: some sizes 0 */
  int few_distinct_sizes; /* draw sizes from a small set (many ties) */
} tg_test_random_spec;

/* Fill `out[0..spec->count)` with random records in random order. */
void tg_test_random_records(tg_test_rng *rng, const tg_test_random_spec *spec,
                            tg_usage_record *out);

/* `n` 1D records (calloc'd: free()) over tasks [0, tasks]: each lives 0..short_len tasks after
 * its first, except every long_every-th (index % long_every == 0), which lives tasks/4..tasks;
 * sizes 1..max_size bytes. Per record it draws the first task, the length, then the size. */
tg_usage_record *tg_test_long_lived_set(tg_test_rng *rng, size_t n, uint32_t tasks, size_t long_every,
                                        uint32_t short_len, uint64_t max_size);

/* Path to a file under tests/data (static buffer per call site is NOT used: writes into buf). */
const char *tg_test_data_path(char *buf, size_t size, const char *relative);

/* The record set in tests/data/`relative` (a usage-record CSV); fails the test, naming the file
 * and the reader's message, when it cannot be read. Destroy with tg_record_set_destroy. */
tg_record_set *tg_test_load_records(const char *relative);

/* Path to a cached MediaPipe model (e.g. "pose_landmark_lite.tflite") in buf, or NULL when the
 * model cache does not hold it. Under CI (CI=true) a missing model fails the test instead. */
const char *tg_test_model_path(char *buf, size_t size, const char *file);

/* The path of the cached model `file` in one of 8 rotating buffers (valid for the next 7 calls);
 * the test is skipped when the cache does not hold it (under CI: fails, as tg_test_model_path). */
const char *tg_test_cached_model(const char *file);

/* 1 when running under CI (environment CI=true). */
int tg_test_in_ci(void);

/* The time a call under a time limit may take past it in a test: the rule (a tenth of the limit
 * and 20 ms), with the fixed part scaled by 4 in a sanitizer build, where the steps that cannot
 * be interrupted run several times slower. Microseconds. */
uint64_t tg_test_limit_allowance_us(uint64_t limit_ms);

/* An objects plan of `count` records of `dims` dimensions, all in object 0 of extent
 * `object` (its total the object's volume): what a test realises with skip_validation to
 * share memory the planner would not. Fails the test when it cannot be made. */
tg_plan *tg_test_one_object_plan(size_t count, uint32_t dims, tg_extent object);

/* Run the validator on a plan and fail the test with its message if invalid. */
void tg_test_assert_valid(const tg_usage_record *records, size_t count, uint32_t dims,
                          const tg_plan *plan, uint64_t alignment,
                          const tg_share_relation *relation);

/* 1 when two plans place every record the same (offsets, or objects and their count) with the
 * same total: what determinism tests compare. */
int tg_test_same_plan(const tg_plan *a, const tg_plan *b);

/* One run of a host-allocation fault walk ended with `st` under `fa`: nothing is left
 * allocated; when no allocation failed the run must have returned `done` and the walk is over
 * (returns 1), else it must have returned TG_ERROR_OUT_OF_HOST_MEMORY (returns 0). */
int tg_test_walk_step(const tg_failing_allocator *fa, tg_status st, tg_status done);

/* Plan with the 1st, 2nd, ... host allocation failing until a run makes no allocation fail:
 * every failing run must return TG_ERROR_OUT_OF_HOST_MEMORY with no plan, the last one TG_OK,
 * and no run may leak. */
void tg_test_plan_fault_walk(const tg_usage_record *records, size_t count, uint32_t dims,
                             const tg_plan_options *options);


/* A strict JSON syntax check (RFC 8259 values; no extensions). Returns 1 when `text` holds
 * exactly one JSON value (surrounding whitespace allowed). */
int tg_test_json_valid(const char *text);

/* The number after the first "KEY": in `json` (fails the test when the key is missing). */
uint64_t tg_test_json_u64(const char *json, const char *key);

/* The numbers of the first array "KEY":[...] in `json` (fails the test when it is missing):
 * returns their count; the first `max` go to `out` (may be NULL), their sum to `*sum` (may be
 * NULL). */
size_t tg_test_json_u64s(const char *json, const char *key, uint64_t *out, size_t max, uint64_t *sum);

/* A test program's main(): runs the given cmocka_unit_test(...) entries as one group. */
#define TG_TEST_MAIN(...)                                           \
  int main(void) {                                                  \
    const struct CMUnitTest tests[] = {__VA_ARGS__};                \
    return cmocka_run_group_tests(tests, NULL, NULL);               \
  }

/* The same with a group setup and teardown (cmocka's group fixtures). */
#define TG_TEST_MAIN_FIXTURES(setup, teardown, ...)                 \
  int main(void) {                                                  \
    const struct CMUnitTest tests[] = {__VA_ARGS__};                \
    return cmocka_run_group_tests(tests, setup, teardown);          \
  }

/* A test program's main() in a build without what it tests: says so on stderr and passes. */
#define TG_TEST_SKIP_MAIN(reason)                                   \
  int main(void) {                                                  \
    fputs("SKIPPING: " reason "\n", stderr);                        \
    return 0;                                                       \
  }

/* Three cmocka cases NAME_host, NAME_opencl and NAME_vulkan calling NAME("host"), ... */
#define TG_TEST_ON_BACKENDS(name)                                   \
  static void name##_host(void **state) { (void)state; name("host"); }     \
  static void name##_opencl(void **state) { (void)state; name("opencl"); } \
  static void name##_vulkan(void **state) { (void)state; name("vulkan"); }

/* Run a shell command, capturing stdout and stderr (each up to `cap` bytes, NUL-terminated;
 * either may be NULL). Returns the exit status, or -1 when the command died from a signal. */
int tg_test_run(const char *command, char *out, size_t out_cap, char *errout, size_t err_cap);

/* The tangram CLI binary ($TANGRAM_CLI, set by CTest). Fails the test when unset. */
const char *tg_test_cli(void);

/* What one run of the CLI printed: stdout up to 4 MiB, stderr up to 64 KiB (NUL-terminated),
 * and the exit status (-1 when killed by a signal). */
typedef struct cli_result {
  int code;
  char *out, *err;
} cli_result;

/* Run `tangram ARGS` (printf-style arguments, shell syntax). Free with cli_free. */
cli_result cli(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void cli_free(cli_result *r);
/* cli with a va_list: the arguments are formatted into `args` (`size` bytes, for the caller's
 * messages), then run. */
cli_result tg_test_cli_va(char *args, size_t size, const char *fmt, va_list ap);

/* The exit status is `code`, stdout holds `in_out` and stderr `in_err` (either may be NULL);
 * otherwise the test fails, saying which and showing the output. */
void tg_test_expect(const cli_result *r, int code, const char *in_out, const char *in_err);

/* Run `tangram ARGS` (printf-style, as cli) and check the run as tg_test_expect does. */
void cli_expect(int code, const char *in_out, const char *in_err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Does `backend` ("host", "opencl", "vulkan") run here? A two-op graph run through the CLI on
 * it says. 0 outside CI with a SKIPPING line on stderr; under CI (CI=true), and for the host
 * backend anywhere, an unusable backend fails the test. */
int tg_test_backend_usable(const char *backend);

/* The path of tests/data/`relative` in one of 8 rotating buffers (valid for the next 7 calls). */
const char *tg_test_data(const char *relative);

/* Write `text` to `path` (fails the test when it cannot). */
void tg_test_write_file(const char *path, const char *text);

/* The number after the first "KEY": in `json` as a double (fractions and exponents too); fails
 * the test when the key is missing. */
double tg_test_json_number(const char *json, const char *key);

/* The test-size levels: TANGRAM_TEST_QUICK=1 (sanitizer, emulator and valgrind runs: the
 * longest loops trimmed) and TANGRAM_TEST_DEEP=1 (scripts/test-deep.sh: long property runs
 * at full size). Any value but empty or "0" counts as set. */
int tg_test_quick(void);
int tg_test_deep(void);
/* The size of a long property run at the current level: `deep` under TANGRAM_TEST_DEEP=1
 * (which wins when both are set), `quick` under TANGRAM_TEST_QUICK=1, else `normal`. */
size_t tg_test_scale(size_t quick, size_t normal, size_t deep);

#endif
