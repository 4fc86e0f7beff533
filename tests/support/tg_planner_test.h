/* Helpers shared by the planner's tests (tests/planner/): TFLite's record vectors, a
 * pseudo-random relation over pairs of records, `best` under a work limit. Include after
 * support/tg_test.h. */
#ifndef TG_PLANNER_TEST_H
#define TG_PLANNER_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/planner.h"
#include "tangram/records.h"

/* TFLite's two 1D test vectors (memory_planning tests): the chain of five records and the
 * complex set of nine, alignment 0. */
extern const tg_usage_record tg_test_tflite_chain[5];
extern const tg_usage_record tg_test_tflite_complex[9];

/* A pseudo-random number for the unordered pair {a, b} under `seed`: the same for (a, b) and
 * (b, a), so relations drawn from it are symmetric and pure. */
uint64_t tg_test_pair_hash(uint64_t seed, size_t a, size_t b);

/* The plan of r[0 .. n) under `o`, asserted computed and valid (under o's alignment and
 * relation). */
tg_plan *tg_test_plan_valid(const tg_usage_record *r, size_t n, uint32_t dims,
                            const tg_plan_options *o);

/* Options for `best` in `mode` under a work limit of `work` units and no clock (time_limit_ms
 * 0; tg_plan_options.work_limit): the plan depends only on the records and the options. `rel`
 * may be NULL. */
tg_plan_options tg_test_best_work_options(tg_mode mode, uint32_t work, uint64_t seed,
                                          const tg_share_relation *rel);
/* The plan of r[0 .. n) under those options, asserted computed and valid (under `rel`). */
tg_plan *tg_test_best_work(const tg_usage_record *r, size_t n, uint32_t dims, tg_mode mode,
                           uint32_t work, uint64_t seed, const tg_share_relation *rel);

#endif
