#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"
#include "support/tg_tools_test.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

cli_result cli_json(const char *fmt, ...) {
  char args[4096];
  va_list ap;
  va_start(ap, fmt);
  cli_result r = tg_test_cli_va(args, sizeof args, fmt, ap);
  va_end(ap);
  if (r.code != 0) fail_msg("tangram %s: exit %d, not 0; stderr: %s", args, r.code, r.err);
  if (!tg_test_json_valid(r.out)) fail_msg("tangram %s: stdout is not valid JSON: %.3000s", args, r.out);
  return r;
}

void tg_expect_all(const char *text, ...) {
  va_list ap;
  va_start(ap, text);
  for (const char *want = va_arg(ap, const char *); want != NULL; want = va_arg(ap, const char *))
    if (strstr(text, want) == NULL) fail_msg("lacks '%s': %.3000s", want, text);
  va_end(ap);
}

int tg_scratch_create(char *dir, size_t size, const char *name) {
  snprintf(dir, size, "/tmp/%s_%ld", name, (long)getpid());
  char cmd[600];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
  return system(cmd) == 0 ? 0 : -1;
}

int tg_scratch_remove(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : -1;
}
