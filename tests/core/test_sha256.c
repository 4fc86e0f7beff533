/* SHA-256 (plan-file fingerprints and checksums) against the FIPS 180-4 example digests, and
 * streaming in pieces of every size against the one-call digest. */
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sha256.h"

static void hex(const uint8_t d[TG__SHA256_BYTES], char out[65]) {
  for (int i = 0; i < TG__SHA256_BYTES; ++i) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void expect(const void *data, size_t size, const char *digest) {
  uint8_t d[TG__SHA256_BYTES];
  char h[65];
  tg__sha256_digest(data, size, d);
  hex(d, h);
  assert_string_equal(h, digest);
}

/* The examples of FIPS 180-4 (NIST's SHA256.pdf, SHA2_Additional.pdf) and one million 'a'. */
static void known_digests(void **state) {
  (void)state;
  expect("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  expect("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  expect("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const char *two_blocks = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
  expect(two_blocks, strlen(two_blocks), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  char *a = malloc(1000000);
  assert_non_null(a);
  memset(a, 'a', 1000000);
  expect(a, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  free(a);
}

/* Every split of 1280 bytes into pieces of one length gives the one-call digest (the value
 * itself: Python's hashlib over bytes(range(256)) * 5). */
static void streaming_equals_one_call(void **state) {
  (void)state;
  uint8_t data[1280];
  for (size_t i = 0; i < sizeof data; ++i) data[i] = (uint8_t)i;
  expect(data, sizeof data, "d414b085826eb06778483ba35564dc849e643359f69ed9747878ba6e54985bed");
  uint8_t whole[TG__SHA256_BYTES];
  tg__sha256_digest(data, sizeof data, whole);
  for (size_t piece = 1; piece <= 200; ++piece) {
    tg__sha256 s;
    tg__sha256_init(&s);
    for (size_t at = 0; at < sizeof data; at += piece)
      tg__sha256_update(&s, data + at, at + piece <= sizeof data ? piece : sizeof data - at);
    tg__sha256_update(&s, NULL, 0);
    uint8_t d[TG__SHA256_BYTES];
    tg__sha256_final(&s, d);
    if (memcmp(d, whole, sizeof d) != 0) fail_msg("pieces of %zu bytes give another digest", piece);
  }
}

TG_TEST_MAIN(cmocka_unit_test(known_digests), cmocka_unit_test(streaming_equals_one_call))
