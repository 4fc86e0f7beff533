/* libFuzzer target: the plan-file reader (tg_plan_file_parse) and tg_plan_file_match.
 *
 * Each input is read twice: as it is (nearly every change fails the checksum, which must say
 * so), and resealed (the length field, the records' fingerprint and the checksum recomputed
 * over the bytes), so that the fuzzer reaches the field checks, the record and plan sections,
 * the fingerprint comparison and the validator behind them. The seed corpus holds real plan
 * files (tests/fuzz/corpus/fuzz_plan_file/, see docs/plan-files.md).
 *
 * Properties: a refusal is TG_ERROR_PARSE or TG_ERROR_INVALID_PLAN with a message and no
 * output; an accepted file's plan passes tg_plan_validate against its records, the file
 * matches its own records, and writing it again gives the same bytes (accepted files are
 * canonical; a version-1 file comes back as the current version); with an allocation failing, reading fails with TG_ERROR_OUT_OF_HOST_MEMORY or
 * gives the same file; nothing leaks. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planfile/plan_file_internal.h"
#include "tangram/plan_file.h"

#define FUZZ_FAIL() (fprintf(stderr, "%s:%d: property violated\n", __FILE__, __LINE__), abort())

static int share_all(void *user, size_t a, size_t b) {
  (void)user;
  (void)a;
  (void)b;
  return 1;
}

static void check_accepted(const tg_plan_file *f, const uint8_t *data, size_t size, const tg_allocator *a) {
  const tg_record_set *s = f->records;
  tg_error_info err = {{0}};
  if (tg_plan_validate(s->records, s->count, s->dims, f->plan, f->alignment, NULL, a, &err) != TG_OK) FUZZ_FAIL();
  if (tg_plan_file_match(f, s->records, (const char *const *)s->names, s->count, s->dims, NULL, a, &err) != TG_OK)
    FUZZ_FAIL();
  /* Every pair may share: only the serial rule's conflicts remain, so the plan still holds. */
  tg_share_relation all = {share_all, NULL, NULL, 0};
  if (tg_plan_file_match(f, s->records, (const char *const *)s->names, s->count, s->dims, &all, a, &err) != TG_OK)
    FUZZ_FAIL();
  tg_plan_file_desc d = {
      .plan = f->plan, .records = s->records, .names = (const char *const *)s->names,
      .record_count = s->count, .dims = s->dims, .storage = f->storage, .precision = f->precision,
      .policy = f->policy, .strategy = f->strategy, .alignment = f->alignment, .flags = f->flags,
      .source = f->source, .limits = f->has_limits ? &f->limits : NULL
  };
  void *again = NULL;
  size_t again_size = 0;
  if (tg_plan_file_write(&d, a, &again, &again_size, &err) != TG_OK) FUZZ_FAIL();
  if (again_size != size) FUZZ_FAIL();
  if (f->version == TG_PLAN_FILE_VERSION) {
    if (memcmp(again, data, size) != 0) FUZZ_FAIL();
  } else {
    /* A version-1 file (no sections) comes back as the current version: the same bytes but
     * the version field and the checksum. */
    const uint8_t *w = again;
    if (size < TG__PLAN_FILE_HEADER_BYTES + TG__PLAN_FILE_CHECKSUM_BYTES || f->version != 1 ||
        memcmp(w, data, TG__PF_VERSION) != 0 ||
        memcmp(w + TG__PF_VERSION + 4, data + TG__PF_VERSION + 4,
               size - TG__PF_VERSION - 4 - TG__PLAN_FILE_CHECKSUM_BYTES) != 0)
      FUZZ_FAIL();
  }
  tg_plan_file_free_data(a, again);
}

static void read_once(const uint8_t *data, size_t size) {
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 0);
  tg_plan_file *f = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_plan_file_parse(data, size, "fuzz.tgplan", &fa.base, &f, &err);
  if (st != TG_OK) {
    if (f != NULL || (st != TG_ERROR_PARSE && st != TG_ERROR_INVALID_PLAN)) FUZZ_FAIL();
    if (strncmp(err.message, "fuzz.tgplan: ", 13) != 0 || err.message[13] == '\0') FUZZ_FAIL();
  } else {
    if (f == NULL) FUZZ_FAIL();
    check_accepted(f, data, size, &fa.base);
    /* One allocation failing, chosen from the input: a clean error or the same result. */
    uint64_t total = fa.allocations;
    tg_plan_file_destroy(f);
    if (total > 0) {
      tg_failing_allocator fb;
      tg_failing_allocator_init(&fb, NULL, 1 + (size > 0 ? data[size - 1] : 0) % total);
      tg_plan_file *g = NULL;
      st = tg_plan_file_parse(data, size, "fuzz.tgplan", &fb.base, &g, &err);
      if (st == TG_OK) tg_plan_file_destroy(g);
      else if (st != TG_ERROR_OUT_OF_HOST_MEMORY || g != NULL) FUZZ_FAIL();
      if (fb.live_blocks != 0) FUZZ_FAIL();
    }
  }
  if (fa.live_blocks != 0) FUZZ_FAIL();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* On the heap at exactly `size` bytes, so that AddressSanitizer sees any read past the end. */
  uint8_t *copy = malloc(size ? size : 1);
  if (copy == NULL) return 0;
  if (size) memcpy(copy, data, size);
  read_once(copy, size);
  tg__plan_file_reseal(copy, size);
  read_once(copy, size);
  free(copy);
  return 0;
}
