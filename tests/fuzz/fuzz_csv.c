/* libFuzzer target: the usage-record CSV reader, then bounds and a `best` plan (objects mode,
 * and offsets mode for 1D sets) of whatever parses, each plan checked by the validator.
 *
 * Beyond "no crash, no leak", it checks that the reader and the planner agree on what a valid
 * record is: a set the reader accepts must never be rejected by the planner as an invalid
 * argument, and a 1D set whose naive total fits 64 bits must plan without overflow. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tangram/allocator.h"
#include "tangram/planner.h"
#include "tangram/records.h"

/* Name the broken property (by line) before aborting, so a crash input explains itself. */
#define FUZZ_FAIL() (fprintf(stderr, "%s:%d: property violated\n", __FILE__, __LINE__), abort())

/* `best` tries min-cost-flow only up to this many records: the reader accepts inputs of
 * hundreds of records within libFuzzer's default length, and min-cost-flow at that size would
 * cut executions per second by orders of magnitude without reaching new reader code. */
#define FUZZ_CSV_MCF_MAX_RECORDS 64

/* The reader's promises about an accepted set. */
static void check_set(const tg_record_set *set) {
  if (set->dims < 1 || set->dims > 3) FUZZ_FAIL();
  if (set->count > 0 && (set->records == NULL || set->names == NULL)) FUZZ_FAIL();
  for (size_t i = 0; i < set->count; ++i) {
    const tg_usage_record *r = &set->records[i];
    if (r->first_task > r->last_task || r->last_task > TG_MAX_TASK) FUZZ_FAIL();
    if ((set->dims < 2 && r->size.h != 1) || (set->dims < 3 && r->size.d != 1)) FUZZ_FAIL();
    uint64_t v;
    if (tg_extent_volume(r->size, &v) != TG_OK) FUZZ_FAIL();
    if (set->names[i] != NULL) (void)strlen(set->names[i]); /* must be NUL-terminated */
  }
}

/* Plan the set in `mode` with `best`, validate, and compare with the bounds (when known). */
static void plan_and_check(const tg_record_set *set, tg_mode mode, const tg_bounds *bounds,
                           int bounds_ok, const tg_allocator *a) {
  tg_plan_options o = {
      .mode = mode, .strategy = TG_STRATEGY_BEST, .mcf_max_records = FUZZ_CSV_MCF_MAX_RECORDS
  };
  tg_plan *p = NULL;
  tg_status st = tg_plan_compute(set->records, set->count, set->dims, &o, a, &p);
  if (st != TG_OK) {
    if (p != NULL) FUZZ_FAIL();
    /* Objects of 2D/3D sets are per-dimension maxima, so their volumes can exceed the records'
     * sum and overflow even when the naive total fits; 1D totals never exceed the naive sum. */
    if (st != TG_ERROR_OVERFLOW || (bounds_ok && set->dims == 1)) FUZZ_FAIL();
    return;
  }
  tg_error_info err = {{0}};
  if (tg_plan_validate(set->records, set->count, set->dims, p, 0, NULL, a, &err) != TG_OK) FUZZ_FAIL();
  if (bounds_ok && (p->total < bounds->peak_live ||
                    (mode == TG_MODE_OBJECTS && p->total < bounds->positional_max)))
    FUZZ_FAIL();
  tg_plan_destroy(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 0);
  tg_record_set *set = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_records_parse_csv((const char *)data, size, "fuzz.csv", &fa.base, &set, &err);
  if (st != TG_OK) {
    /* Only malformed text can fail here: allocations do not fail with this allocator. */
    if (set != NULL || st != TG_ERROR_PARSE || err.message[0] == '\0') FUZZ_FAIL();
  } else {
    if (set == NULL) FUZZ_FAIL();
    check_set(set);
    tg_bounds b;
    st = tg_bounds_compute(set->records, set->count, set->dims, &fa.base, &b);
    if (st != TG_OK && st != TG_ERROR_OVERFLOW) FUZZ_FAIL();
    int bounds_ok = st == TG_OK;
    if (bounds_ok && (b.peak_live > b.positional_max || b.positional_max > b.naive)) FUZZ_FAIL();
    plan_and_check(set, TG_MODE_OBJECTS, &b, bounds_ok, &fa.base);
    if (set->dims == 1) plan_and_check(set, TG_MODE_OFFSETS, &b, bounds_ok, &fa.base);
    tg_record_set_destroy(set);
  }
  if (fa.live_blocks != 0) FUZZ_FAIL();
  return 0;
}
