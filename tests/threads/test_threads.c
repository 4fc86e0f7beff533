/* Planning from several threads at once on shared read-only input gives the same plans as
 * planning alone (and is clean under ThreadSanitizer: scripts/test.sh runs this test in a
 * TANGRAM_TSAN build). */
#include "support/tg_test.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4

typedef struct job {
  const tg_record_set *sets[3];   /* 1D, 2D, 3D: shared, read-only */
  tg_plan *plans[3][2][TG_STRATEGY_COUNT];
  tg_bounds bounds[3];
  int failures;
} job;

static void plan_all(job *j) {
  for (int d = 0; d < 3; ++d) {
    const tg_record_set *s = j->sets[d];
    if (tg_bounds_compute(s->records, s->count, s->dims, NULL, &j->bounds[d]) != TG_OK) j->failures++;
    for (int m = 0; m < 2; ++m) {
      if (m == TG_MODE_OFFSETS && s->dims != 1) continue;
      for (int st = 0; st < TG_STRATEGY_COUNT; ++st) {
        if (!tg_strategy_applies((tg_strategy)st, (tg_mode)m, s->dims)) continue;
        tg_plan_options o = {0};
        o.mode = (tg_mode)m;
        o.strategy = (tg_strategy)st;
        /* No clock in `best`: the threads must agree plan for plan. */
        o.time_limit_ms = TG_TIME_LIMIT_NONE;
        if (tg_plan_compute(s->records, s->count, s->dims, &o, NULL, &j->plans[d][m][st]) != TG_OK ||
            tg_plan_validate(s->records, s->count, s->dims, j->plans[d][m][st], 0, NULL, NULL, NULL) != TG_OK)
          j->failures++;
      }
    }
  }
}

static void *thread_main(void *arg) {
  plan_all(arg);
  return NULL;
}

static int same_plan(const tg_plan *a, const tg_plan *b) {
  if (a == NULL || b == NULL) return a == b;
  if (a->total != b->total || a->object_count != b->object_count || a->record_count != b->record_count)
    return 0;
  size_t n = a->record_count;
  if (a->object_of && memcmp(a->object_of, b->object_of, n * sizeof *a->object_of)) return 0;
  if (a->offset_of && memcmp(a->offset_of, b->offset_of, n * sizeof *a->offset_of)) return 0;
  return 1;
}

static void free_job(job *j) {
  for (int d = 0; d < 3; ++d)
    for (int m = 0; m < 2; ++m)
      for (int s = 0; s < TG_STRATEGY_COUNT; ++s) tg_plan_destroy(j->plans[d][m][s]);
}

static void four_threads_plan_the_same(void **state) {
  (void)state;
  static const char *const files[3] = {"records/pose_landmark_lite.buffer.csv",
                                       "records/pose_landmark_lite.tex2.csv",
                                       "records/pose_landmark_lite.tex3.csv"};
  tg_record_set *sets[3];
  for (int d = 0; d < 3; ++d) {
    char path[1024];
    tg_error_info err = {{0}};
    assert_int_equal(tg_records_read_csv(tg_test_data_path(path, sizeof path, files[d]), NULL, &sets[d], &err), TG_OK);
  }
  job reference, jobs[THREADS];
  memset(&reference, 0, sizeof reference);
  memset(jobs, 0, sizeof jobs);
  for (int d = 0; d < 3; ++d) reference.sets[d] = sets[d];
  plan_all(&reference);
  assert_int_equal(reference.failures, 0);
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; ++t) {
    jobs[t] = (job){{sets[0], sets[1], sets[2]}, {{{0}}}, {{0, 0, 0}}, 0};
    assert_int_equal(pthread_create(&threads[t], NULL, thread_main, &jobs[t]), 0);
  }
  for (int t = 0; t < THREADS; ++t) assert_int_equal(pthread_join(threads[t], NULL), 0);
  for (int t = 0; t < THREADS; ++t) {
    assert_int_equal(jobs[t].failures, 0);
    for (int d = 0; d < 3; ++d) {
      assert_memory_equal(&jobs[t].bounds[d], &reference.bounds[d], sizeof reference.bounds[d]);
      for (int m = 0; m < 2; ++m)
        for (int s = 0; s < TG_STRATEGY_COUNT; ++s)
          assert_true(same_plan(jobs[t].plans[d][m][s], reference.plans[d][m][s]));
    }
    free_job(&jobs[t]);
  }
  free_job(&reference);
  for (int d = 0; d < 3; ++d) tg_record_set_destroy(sets[d]);
}

TG_TEST_MAIN(cmocka_unit_test(four_threads_plan_the_same))
