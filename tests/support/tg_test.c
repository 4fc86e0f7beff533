#define _POSIX_C_SOURCE 200809L
#include "tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint64_t tg_test_rng_next(tg_test_rng *rng) {
  uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t tg_test_rng_range(tg_test_rng *rng, uint64_t lo, uint64_t hi) {
  if (hi <= lo) return lo;
  uint64_t span = hi - lo + 1;
  if (span == 0) return tg_test_rng_next(rng);
  return lo + tg_test_rng_next(rng) % span;
}

void tg_test_random_records(tg_test_rng *rng, const tg_test_random_spec *spec,
                            tg_usage_record *out) {
  static const uint64_t palette[] = {1, 2, 3, 4, 8, 16, 7};
  for (size_t i = 0; i < spec->count; ++i) {
    tg_usage_record *r = &out[i];
    memset(r, 0, sizeof *r);
    uint64_t dim[3] = {1, 1, 1};
    for (uint32_t d = 0; d < spec->dims; ++d) {
      if (spec->few_distinct_sizes) {
        uint64_t p = palette[tg_test_rng_range(rng, 0, 6)];
        dim[d] = p > spec->max_size ? spec->max_size : p;
      } else {
        dim[d] = tg_test_rng_range(rng, 1, spec->max_size ? spec->max_size : 1);
      }
    }
    if (spec->dims == 1 && spec->allow_zero_size && tg_test_rng_range(rng, 0, 15) == 0) dim[0] = 0;
    r->size.w = dim[0];
    r->size.h = dim[1];
    r->size.d = dim[2];
    uint32_t first = (uint32_t)tg_test_rng_range(rng, 0, spec->max_task);
    uint32_t len = (uint32_t)tg_test_rng_range(rng, 0, spec->max_length);
    r->first_task = first;
    r->last_task = first + len;
  }
}

const char *tg_test_data_path(char *buf, size_t size, const char *relative) {
  snprintf(buf, size, "%s/%s", TG_TEST_DATA_DIR, relative);
  return buf;
}

int tg_test_in_ci(void) {
  const char *ci = getenv("CI");
  return ci != NULL && (strcmp(ci, "true") == 0 || strcmp(ci, "1") == 0);
}

const char *tg_test_model_path(char *buf, size_t size, const char *file) {
  const char *cache = getenv("TANGRAM_MODEL_CACHE");
  char def[1024];
  if (cache == NULL || *cache == '\0') {
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (xdg && *xdg) snprintf(def, sizeof def, "%s/tangram/models", xdg);
    else snprintf(def, sizeof def, "%s/.cache/tangram/models", home ? home : ".");
    cache = def;
  }
  snprintf(buf, size, "%s/%s", cache, file);
  if (access(buf, R_OK) == 0) return buf;
  if (tg_test_in_ci()) fail_msg("model %s missing under CI: run scripts/fetch-models.sh", buf);
  fprintf(stderr, "SKIPPING: model %s not cached (run scripts/fetch-models.sh)\n", buf);
  return NULL;
}

void tg_test_assert_valid(const tg_usage_record *records, size_t count, uint32_t dims,
                          const tg_plan *plan, uint64_t alignment,
                          const tg_share_relation *relation) {
  tg_error_info err = {{0}};
  tg_status st = tg_plan_validate(records, count, dims, plan, alignment, relation, NULL, &err);
  if (st != TG_OK) fail_msg("invalid plan (%s): %s", tg_status_name(st), err.message);
}
