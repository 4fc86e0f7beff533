#include "support/tg_test.h"

#include <string.h>

#include "tangram/status.h"

static void status_strings_are_stable(void **state) {
  (void)state;
  assert_int_equal(TG_OK, 0);
  assert_int_equal(TG_ERROR_PARSE, 4);
  assert_string_equal(tg_status_name(TG_ERROR_PARSE), "TG_ERROR_PARSE");
  assert_string_equal(tg_status_string(TG_OK), "ok");
  assert_string_equal(tg_status_string((tg_status)9999), "unknown status");
}

static void failing_allocator_fails_the_nth(void **state) {
  (void)state;
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 3);
  void *a = fa.base.alloc(fa.base.user, 8);
  void *b = fa.base.alloc(fa.base.user, 8);
  void *c = fa.base.alloc(fa.base.user, 8);
  assert_non_null(a);
  assert_non_null(b);
  assert_null(c);
  assert_int_equal(fa.live_blocks, 2);
  fa.base.free(fa.base.user, a);
  fa.base.free(fa.base.user, b);
  assert_int_equal(fa.live_blocks, 0);
  assert_int_equal(fa.failures, 1);
}

TG_TEST_MAIN(cmocka_unit_test(status_strings_are_stable),
             cmocka_unit_test(failing_allocator_fails_the_nth))
