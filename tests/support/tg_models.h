/* The public models in the backend tests: a model's graph with what derives from it
 * independently of the device (lifetimes, schedule), and the resources of a record set. */
#ifndef TG_TESTS_SUPPORT_TG_MODELS_H
#define TG_TESTS_SUPPORT_TG_MODELS_H

#include "tangram/backend.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/schedule.h"

typedef struct tg_test_model {
  const char *name;
  tg_model *model;
  tg_lifetimes *lifetimes;
  tg_schedule *schedule;
} tg_test_model;

/* Loads NAME.tflite from the model cache with its lifetimes and schedule: 1, or 0 when the
 * model is not cached (`m` zeroed); a load failure fails the test. */
int tg_test_model_open(const char *name, tg_test_model *m);
void tg_test_model_close(tg_test_model *m);

/* Resources of a record set (calloc'ed, the caller frees): 1D sets are buffers of that many
 * bytes, others images of their extent in `storage` with `precision`'s texels. */
tg_tensor_resource *tg_test_resources_for(const tg_record_set *set, tg_storage storage, tg_precision precision);

/* `set` (record r holding tensor tensor_of[r] of the graph `schedule` was made from) planned by
 * `best` without its search in `mode`, with the in-place candidates `pairs` under `policy`'s
 * relation; the plan passes the validator under that relation (else the test fails). */
tg_plan *tg_test_plan_in_place(const tg_schedule *schedule, tg_policy policy, tg_mode mode, const tg_record_set *set,
                               const uint32_t *tensor_of, const tg_in_place_pair *pairs, size_t pair_count);

#endif
