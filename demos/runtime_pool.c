/* A run-time pool: seed 004's example on a real device.
 *
 * T_A (100 MiB) -> OpB -> T_B (150 MiB) -> OpC -> T_C (50 MiB) -> OpD -> T_D (100 MiB), each
 * tensor released after the op that reads it, under a 300 MiB capacity: with exact-size
 * reuse T_D takes T_A's block and the pool never holds more than 300 MiB. One byte less and
 * T_C does not fit: the pool says so in its own status, holds nothing more, and keeps going
 * once its free blocks are trimmed. The device is chosen as tg_device_open's auto does
 * (TANGRAM_BACKEND=host|opencl|vulkan overrides it).
 *
 *   runtime_pool */
#include <stdio.h>

#include "tangram/backend.h"
#include "tangram/pool.h"

#define MiB (1024ull * 1024ull)

static int run(tg_device *device, uint64_t capacity) {
  tg_pool_options options = {0};
  options.policy = TG_POOL_EXACT;
  options.capacity = capacity;
  tg_pool *pool = NULL;
  tg_error_info err;
  if (tg_pool_create(device, &options, NULL, &pool, &err) != TG_OK) {
    fprintf(stderr, "pool: %s\n", err.message);
    return 1;
  }
  printf("=== capacity %llu bytes, policy %s\n", (unsigned long long)capacity, tg_pool_policy_name(options.policy));
  static const char *const names[4] = {"T_A", "T_B", "T_C", "T_D"};
  static const uint64_t sizes[4] = {100 * MiB, 150 * MiB, 50 * MiB, 100 * MiB};
  tg_pool_allocation t[4];
  int failed = 0;
  for (int i = 0; i < 4 && !failed; ++i) {
    tg_pool_stats before, after;
    tg_pool_get_stats(pool, &before);
    tg_status st = tg_pool_alloc(pool, sizes[i], &t[i], &err);
    if (st != TG_OK) {
      printf("alloc %s: %s: %s\n", names[i], tg_status_name(st), err.message);
      failed = 1;
      break;
    }
    tg_pool_get_stats(pool, &after);
    printf("alloc %s %3llu MiB -> block %llu (%s), reserved %llu MiB\n", names[i],
           (unsigned long long)(sizes[i] / MiB), (unsigned long long)t[i].block,
           after.driver_allocations > before.driver_allocations ? "new" : "reused",
           (unsigned long long)(after.reserved / MiB));
    if (i > 0) { /* op i read tensor i-1: release it */
      tg_pool_free(pool, t[i - 1].id);
      printf("free  %s\n", names[i - 1]);
    }
  }
  tg_pool_stats s;
  tg_pool_get_stats(pool, &s);
  printf("peak reserved %llu MiB, peak in use %llu MiB, %llu driver allocations\n",
         (unsigned long long)(s.peak_reserved / MiB), (unsigned long long)(s.peak_in_use / MiB),
         (unsigned long long)s.driver_allocations);
  if (failed) {
    /* Still usable: give the unused blocks back and carry on. */
    tg_pool_free(pool, t[1].id);
    uint64_t released = 0;
    tg_pool_trim(pool, &released);
    tg_status st = tg_pool_alloc(pool, sizes[2], &t[2], &err);
    printf("after trim (%llu MiB given back): alloc T_C %s\n", (unsigned long long)(released / MiB),
           st == TG_OK ? "ok" : err.message);
  }
  tg_pool_destroy(pool); /* releases every block */
  return 0;
}

int main(void) {
  tg_device_options options = {0};
  tg_device *device = NULL;
  tg_error_info err;
  if (tg_device_open(&options, NULL, &device, NULL, NULL, &err) != TG_OK) {
    fprintf(stderr, "no device (%s): using a virtual pool\n", err.message);
    device = NULL;
  } else {
    printf("device: %s \"%s\"\n", tg_backend_name(tg_device_get_info(device)->backend),
           tg_device_get_info(device)->name);
  }
  int rc = run(device, 300 * MiB) | run(device, 300 * MiB - 1);
  tg_device_close(device);
  return rc;
}
