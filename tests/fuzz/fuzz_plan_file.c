/* libFuzzer target: the plan-file reader (tg_plan_file_parse), tg_plan_file_match and, for
 * files over a range of input sizes (section RNGE), tg_plan_file_match_range.
 *
 * Each input is read twice: as it is (nearly every change fails the checksum, which must say
 * so), and resealed (the length field, the records' fingerprint and the checksum recomputed
 * over the bytes), so that the fuzzer reaches the field checks, the record and plan sections,
 * the fingerprint comparison and the validator behind them. The seed corpus holds real plan
 * files (tests/fuzz/corpus/fuzz_plan_file/, see docs/plan-files.md).
 *
 * Properties: a refusal is TG_ERROR_PARSE or TG_ERROR_INVALID_PLAN with a message and no
 * output; an accepted file's plan passes tg_plan_validate against its records, the file
 * matches its own records (under a relation that refuses every in-place pair: exactly when
 * the plan declares none), and writing it again gives the same bytes (accepted files are
 * canonical; a version-1 file comes back as the current version); a file over a range gives
 * its plan over its own records (under the serial rule for a serial plan; under another
 * policy the plan may be refused as another), valid at every size, and is written back the
 * same with that plan; with an allocation failing, reading fails with
 * TG_ERROR_OUT_OF_HOST_MEMORY or gives the same file; nothing leaks. */
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

static int in_place_all(void *user, size_t input, size_t output, uint32_t op, uint32_t *other) {
  (void)user;
  (void)input;
  (void)output;
  (void)op;
  *other = UINT32_MAX;
  return 1;
}

/* A file over a range: its plan over its own records, valid at every size (the first 4096). */
static tg_range_plan *check_range(const tg_plan_file *f, const tg_allocator *a) {
  tg_error_info err = {{0}};
  tg_range_plan *rp = NULL;
  tg_status st = tg_plan_file_match_range(f, NULL, NULL, NULL, a, &rp, &err);
  if (st != TG_OK) {
    if (rp != NULL || f->policy == TG_POLICY_SERIAL || st != TG_ERROR_INVALID_PLAN) FUZZ_FAIL();
    return NULL;
  }
  const tg_record_set *s = f->records;
  const tg_size_range *range = tg_range_records_range(f->range_records);
  tg_plan *inst = NULL;
  tg_usage_record *recs = calloc(s->count ? s->count : 1, sizeof *recs);
  if (recs == NULL || tg_range_plan_create_instance(rp, a, &inst) != TG_OK) FUZZ_FAIL();
  uint64_t points = tg_size_range_point_count(range);
  for (uint64_t p = 0; p < points && p < 4096; ++p) {
    int64_t dims[TG_RANGE_MAX_DIMS] = {0, 0};
    if (tg_size_range_point(range, p, dims) != TG_OK || tg_range_plan_instantiate(rp, dims, recs, inst) != TG_OK ||
        tg_plan_validate(recs, s->count, s->dims, inst, f->alignment, NULL, a, &err) != TG_OK)
      FUZZ_FAIL();
  }
  free(recs);
  tg_plan_destroy(inst);
  return rp;
}

static void check_accepted(const tg_plan_file *f, const uint8_t *data, size_t size, const tg_allocator *a) {
  const tg_record_set *s = f->records;
  tg_error_info err = {{0}};
  tg_range_plan *rp = NULL;
  tg_plan_file_range fr = {NULL, f->range_records, f->input_shapes, f->input_shape_count};
  if (f->range_records != NULL && (rp = check_range(f, a)) == NULL) return;
  if (tg_plan_validate(s->records, s->count, s->dims, f->plan, f->alignment, NULL, a, &err) != TG_OK) FUZZ_FAIL();
  if (tg_plan_file_match(f, s->records, (const char *const *)s->names, s->count, s->dims, NULL, a, &err) != TG_OK)
    FUZZ_FAIL();
  /* Every pair may share and every in-place pair may write: only the serial rule's conflicts
   * remain, so the plan still holds. */
  tg_share_relation all = {share_all, NULL, NULL, 0, in_place_all};
  if (tg_plan_file_match(f, s->records, (const char *const *)s->names, s->count, s->dims, &all, a, &err) != TG_OK)
    FUZZ_FAIL();
  /* Pairs against the relation: one that lets no op write in place refuses exactly the plans
   * that declare a pair. */
  tg_share_relation no_pairs = {share_all, NULL, NULL, 0, NULL};
  tg_status st = tg_plan_file_match(f, s->records, (const char *const *)s->names, s->count, s->dims, &no_pairs, a, &err);
  if (f->plan->in_place_count == 0 ? st != TG_OK : st != TG_ERROR_INVALID_PLAN) FUZZ_FAIL();
  tg_plan_file_desc d;
  tg__plan_file_describe(f, &d);
  fr.plan = rp;
  d.range = rp != NULL ? &fr : NULL;
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
  tg_range_plan_destroy(rp);
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
