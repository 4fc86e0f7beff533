/* One pool shared by four threads: allocations never overlap (each thread stamps its bytes in
 * host memory and finds them intact when it frees), the counts add up, and the structure
 * walks clean afterwards, for every policy over the host device and over no device. Clean
 * under ThreadSanitizer (scripts/test.sh runs the threads label in a TANGRAM_TSAN build). */
#include "support/tg_test.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tangram/backend.h"
#include "tangram/pool.h"

#define THREADS 4
#define LIVE 32

typedef struct worker {
  tg_pool *pool;
  int device;        /* allocations are host memory to stamp */
  uint64_t seed;
  int ops;
  uint64_t allocs, frees, failures, overwritten;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  tg_test_rng rng = {w->seed};
  tg_pool_allocation live[LIVE];
  uint8_t stamp[LIVE];
  size_t n = 0;
  for (int op = 0; op < w->ops; ++op) {
    if (n < LIVE && (n == 0 || tg_test_rng_range(&rng, 0, 1))) {
      uint64_t bytes = tg_test_rng_range(&rng, 1, 20000);
      tg_status st = op % 17 == 5
                         ? tg_pool_alloc_image(w->pool, TG_STORAGE_TEXTURE_2D, (tg_extent){bytes % 7 + 1, 8, 1}, &live[n], NULL)
                         : tg_pool_alloc(w->pool, bytes, &live[n], NULL);
      if (st != TG_OK) {
        w->failures++;
        continue;
      }
      w->allocs++;
      stamp[n] = (uint8_t)(w->seed * 31 + (uint64_t)op);
      if (w->device) memset((void *)(uintptr_t)(live[n].memory + live[n].offset), stamp[n], (size_t)live[n].size);
      n++;
    } else {
      size_t k = (size_t)tg_test_rng_range(&rng, 0, n - 1);
      if (w->device) {
        const uint8_t *m = (const uint8_t *)(uintptr_t)(live[k].memory + live[k].offset);
        for (uint64_t i = 0; i < live[k].size; ++i) w->overwritten += m[i] != stamp[k];
      }
      if (tg_pool_free(w->pool, live[k].id) != TG_OK) w->failures++;
      w->frees++;
      live[k] = live[--n];
      stamp[k] = stamp[n];
    }
    if (op % 1000 == 999) tg_pool_trim(w->pool, NULL);
  }
  while (n) {
    if (tg_pool_free(w->pool, live[--n].id) != TG_OK) w->failures++;
    w->frees++;
  }
  return NULL;
}

static void four_threads_share_a_pool(void **state) {
  (void)state;
  tg_device_options dopt = {0};
  dopt.backend = TG_BACKEND_HOST;
  tg_device *dev = NULL;
  assert_int_equal(tg_device_open(&dopt, NULL, &dev, NULL, NULL, NULL), TG_OK);
  for (int device = 0; device < 2; ++device)
    for (int pol = 0; pol < TG_POOL_POLICY_COUNT; ++pol) {
      tg_pool_options o = {(tg_pool_policy)pol, 1ull << 32, pol == TG_POOL_EXACT ? 0 : 1 << 18, 64, TG_PRECISION_FP32, 0};
      tg_pool *p = NULL;
      assert_int_equal(tg_pool_create(device ? dev : NULL, &o, NULL, &p, NULL), TG_OK);
      worker w[THREADS];
      pthread_t t[THREADS];
      for (int i = 0; i < THREADS; ++i) {
        w[i] = (worker){p, device, 100u * (uint64_t)pol + (uint64_t)i + 1, 4000, 0, 0, 0, 0};
        assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
      }
      uint64_t allocs = 0, frees = 0;
      for (int i = 0; i < THREADS; ++i) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(w[i].failures, 0);
        assert_int_equal(w[i].overwritten, 0);
        allocs += w[i].allocs;
        frees += w[i].frees;
      }
      tg_pool_stats s;
      tg_pool_get_stats(p, &s);
      assert_int_equal(s.allocs, allocs);
      assert_int_equal(s.frees, frees);
      assert_int_equal(s.in_use, 0);
      assert_int_equal(s.live, 0);
      tg_error_info err = {{0}};
      if (tg_pool_check(p, &err) != TG_OK) fail_msg("%s", err.message);
      tg_pool_destroy(p);
    }
  tg_device_close(dev);
}

TG_TEST_MAIN(cmocka_unit_test(four_threads_share_a_pool))
