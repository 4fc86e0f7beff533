/* Helpers shared by the planner's tests (tests/planner/): TFLite's record vectors and a
 * pseudo-random relation over pairs of records. Include after support/tg_test.h. */
#ifndef TG_PLANNER_TEST_H
#define TG_PLANNER_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/records.h"

/* TFLite's two 1D test vectors (memory_planning tests): the chain of five records and the
 * complex set of nine, alignment 0. */
extern const tg_usage_record tg_test_tflite_chain[5];
extern const tg_usage_record tg_test_tflite_complex[9];

/* A pseudo-random number for the unordered pair {a, b} under `seed`: the same for (a, b) and
 * (b, a), so relations drawn from it are symmetric and pure. */
uint64_t tg_test_pair_hash(uint64_t seed, size_t a, size_t b);

#endif
