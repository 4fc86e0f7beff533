/* Helpers for the CLI tests under tests/tools: a run that must print valid JSON, several
 * substrings checked at once, and a scratch folder per test program. */
#ifndef TG_TOOLS_TEST_H
#define TG_TOOLS_TEST_H

#include <stddef.h>

#include "support/tg_test.h"

/* Run `tangram ARGS` (printf-style, as cli): it must exit 0 with valid JSON on stdout,
 * otherwise the test fails showing stderr. Free with cli_free. */
cli_result cli_json(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* `text` holds each of the strings that follow (the list ends with NULL); otherwise the test
 * fails naming the first one missing. */
void tg_expect_all(const char *text, ...);

/* Make the folder /tmp/NAME_PID (mkdir -p) and write its path to `dir`; 0, or -1 on failure.
 * For a cmocka group setup. */
int tg_scratch_create(char *dir, size_t size, const char *name);

/* Remove `dir` and all in it (rm -rf); 0, or -1 on failure. For a cmocka group teardown. */
int tg_scratch_remove(const char *dir);

#endif
