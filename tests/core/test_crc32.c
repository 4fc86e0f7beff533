/* CRC-32 (plan-file checksums) against zlib's values: the standard check value of "123456789",
 * the empty input, and 1280 bytes cut at every offset. */
#include "support/tg_test.h"

#include <string.h>

#include "core/crc32.h"

static void known_values(void **state) {
  (void)state;
  assert_int_equal(tg__crc32("123456789", 9), 0xCBF43926u);
  assert_int_equal(tg__crc32(NULL, 0), 0);
  uint8_t data[1280];
  for (size_t i = 0; i < sizeof data; ++i) data[i] = (uint8_t)i;
  /* Python: hex(zlib.crc32(bytes(range(256)) * 5)) */
  assert_int_equal(tg__crc32(data, sizeof data), 0x1E7A6D24u);
}

/* The eight-bytes-a-step path and the byte-a-step tail agree: every length against a bitwise
 * reference. */
static void every_length_matches_the_bitwise_definition(void **state) {
  (void)state;
  uint8_t data[300];
  for (size_t i = 0; i < sizeof data; ++i) data[i] = (uint8_t)(i * 151u + 7u);
  for (size_t n = 0; n <= sizeof data; ++n) {
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) {
      crc ^= data[i];
      for (int k = 0; k < 8; ++k) crc = crc & 1u ? 0xEDB88320u ^ (crc >> 1) : crc >> 1;
    }
    assert_int_equal(tg__crc32(data, n), crc ^ 0xFFFFFFFFu);
  }
}

TG_TEST_MAIN(cmocka_unit_test(known_values),
             cmocka_unit_test(every_length_matches_the_bitwise_definition))
