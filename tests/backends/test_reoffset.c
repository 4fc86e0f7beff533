/* Re-offsetting a realization at other sizes of a range (tg_realization_create_with_capacity,
 * tg_realization_reoffset) on the host, OpenCL (PoCL) and Vulkan (lavapipe): buffers in one
 * arena and in objects, 2D textures in objects (and in an arena where the device places
 * images there). At every size, in an order that goes up and down: the same allocations (no
 * allocation made, the same driver memory behind every tensor), each tensor's handle at the
 * plan's offset with the size's extent, and 0 corrupted in the on-device check. A stale plan
 * (the first size's offsets with a larger size's tensors) is refused or caught as corruption;
 * a size beyond the capacity, and a driver failure while re-offsetting, leave the realization
 * as it was. */
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/tg_backend_cases.h"
#include "support/tg_models.h"
#include "tangram/backend.h"
#include "tangram/range.h"
#include "tangram/range_plan.h"

#define MAX_N 24

/* Records of a network-like chain over widths W: record r is written at task r and read up to
 * three tasks later; its size grows with W at its own rate (buffers: bytes, multiples of 4;
 * textures: W x h texels). */
typedef struct net {
  tg_size_range range;
  size_t n;
  uint32_t dims;
  uint32_t first[MAX_N], last[MAX_N];
  uint64_t rate[MAX_N], height[MAX_N];
  tg_range_records *tensors;
} net;

static void make_net(tg_test_rng *rng, net *t, uint32_t dims) {
  memset(t, 0, sizeof *t);
  t->range = (tg_size_range){1, {{8, 64, 8}}};
  t->dims = dims;
  t->n = (size_t)tg_test_rng_range(rng, 10, MAX_N);
  for (size_t r = 0; r < t->n; ++r) {
    t->first[r] = (uint32_t)r;
    t->last[r] = (uint32_t)(r + tg_test_rng_range(rng, 1, 3));
    t->rate[r] = tg_test_rng_range(rng, 1, 16);
    t->height[r] = tg_test_rng_range(rng, 1, 4);
  }
  uint64_t points = tg_size_range_point_count(&t->range);
  tg_extent *sizes = calloc(points * t->n, sizeof *sizes);
  assert_non_null(sizes);
  for (uint64_t p = 0; p < points; ++p) {
    int64_t w[2] = {0, 0};
    tg_size_range_point(&t->range, p, w);
    for (size_t r = 0; r < t->n; ++r)
      sizes[p * t->n + r] = dims == 1 ? (tg_extent){64 * t->rate[r] * (uint64_t)w[0], 1, 1}
                                      : (tg_extent){t->rate[r] * (uint64_t)w[0], t->height[r], 1};
  }
  tg_range_records_desc d = {t->range, dims, t->n, t->first, t->last, sizes, NULL};
  assert_int_equal(tg_range_records_create(&d, NULL, &t->tensors), TG_OK);
  free(sizes);
}

/* Everything at one size: the tensors, what they are on the device, the records realised (the
 * device's arena records in offsets mode). */
typedef struct at_size {
  tg_record_set set;
  tg_usage_record tensors[MAX_N];
  tg_tensor_resource *res;
  tg_record_set *arena;
} at_size;

static void size_free(at_size *s) {
  free(s->res);
  tg_record_set_destroy(s->arena);
  memset(s, 0, sizeof *s);
}

static void tensors_at(tg_device *d, const net *t, tg_storage storage, tg_mode mode, int64_t w, at_size *s) {
  size_free(s);
  assert_int_equal(tg_range_records_at(t->tensors, &w, s->tensors), TG_OK);
  s->set = (tg_record_set){t->dims, t->n, s->tensors, NULL, {0}};
  s->res = tg_test_resources_for(&s->set, storage, TG_PRECISION_FP32);
  if (mode == TG_MODE_OFFSETS)
    assert_int_equal(tg_device_compute_arena_records(d, s->res, s->tensors, t->n, TG_PRECISION_FP32, NULL, &s->arena),
                     TG_OK);
}

/* Offsets mode: the device's records at every width, to plan over. */
static tg_range_records *arena_range(tg_device *d, const net *t, tg_storage storage) {
  uint64_t points = tg_size_range_point_count(&t->range);
  tg_extent *sizes = calloc(points * t->n, sizeof *sizes);
  uint64_t align[MAX_N] = {0};
  at_size s;
  memset(&s, 0, sizeof s);
  for (uint64_t p = 0; p < points; ++p) {
    int64_t w[2] = {0, 0};
    tg_size_range_point(&t->range, p, w);
    tensors_at(d, t, storage, TG_MODE_OFFSETS, w[0], &s);
    for (size_t r = 0; r < t->n; ++r) {
      sizes[p * t->n + r] = s.arena->records[r].size;
      if (s.arena->records[r].alignment > align[r]) align[r] = s.arena->records[r].alignment;
    }
  }
  size_free(&s);
  tg_range_records_desc desc = {t->range, 1, t->n, t->first, t->last, sizes, align};
  tg_range_records *rr = NULL;
  assert_int_equal(tg_range_records_create(&desc, NULL, &rr), TG_OK);
  free(sizes);
  return rr;
}

static tg_device *open_device(tg_backend_kind backend, uint64_t fail_at) {
  tg_device_options opt = {0};
  opt.backend = backend;
  opt.fail_device_alloc_at = fail_at;
  return tg_test_open_backend(&opt);
}

static uint64_t check(tg_realization *z) {
  tg_check_result result = {0, NULL, 0};
  tg_error_info err = {{0}};
  if (tg_realization_check(z, NULL, &result, &err) != TG_OK) fail_msg("check: %s", err.message);
  assert_true(result.checked_bytes > 0);
  return result.corrupted_records;
}

/* The allocations of the `n` tensors of `z`, one per tensor, into `memories`: n. */
static size_t memories_of(const tg_realization *z, size_t n, uint64_t *memories) {
  for (size_t r = 0; r < n; ++r) {
    tg_tensor_handle h;
    tg_realization_get_tensor(z, r, &h);
    memories[r] = h.memory;
  }
  return n;
}

/* Each tensor's handle: its allocation one of `memories` (the ones made at creation), at the
 * plan's offset (offsets mode), with the size's region. */
static void assert_handles(const tg_realization *z, const tg_plan *plan, const at_size *s, const uint64_t *memories,
                           size_t memory_count, tg_tensor_handle *out) {
  for (size_t r = 0; r < plan->record_count; ++r) {
    tg_tensor_handle h;
    assert_int_equal(tg_realization_get_tensor(z, r, &h), TG_OK);
    int known = 0;
    for (size_t k = 0; k < memory_count; ++k) known |= memories[k] == h.memory;
    if (!known) fail_msg("record %zu is in memory %llx, not one made at creation", r, (unsigned long long)h.memory);
    if (plan->mode == TG_MODE_OFFSETS && h.offset != plan->offset_of[r])
      fail_msg("record %zu at offset %llu, the plan says %llu", r, (unsigned long long)h.offset,
               (unsigned long long)plan->offset_of[r]);
    const tg_tensor_resource *res = &s->res[r];
    tg_extent want = tg_storage_is_texture(res->storage) ? res->extent : (tg_extent){res->bytes, 1, 1};
    if (h.region.w != want.w || h.region.h != want.h || h.region.d != want.d)
      fail_msg("record %zu: region %llux%llu, the size's %llux%llu", r, (unsigned long long)h.region.w,
               (unsigned long long)h.region.h, (unsigned long long)want.w, (unsigned long long)want.h);
    if (out) out[r] = h;
  }
}

static tg_realize_desc desc_at(const net *t, const tg_plan *plan, const at_size *s, const tg_usage_record *recs) {
  tg_realize_desc d = {plan, s->arena ? s->arena->records : recs, t->n, s->arena ? 1 : t->dims, s->res,
                       TG_PRECISION_FP32, 0};
  return d;
}

static int deep(void) {
  const char *v = getenv("TANGRAM_TEST_DEEP");
  return v != NULL && strcmp(v, "1") == 0;
}

/* One network, planned over its range in `mode`; `faults`: also walk driver failures. */
static void one_case(tg_backend_kind backend, tg_storage storage, tg_mode mode, uint64_t seed, int faults) {
  tg_device *d = open_device(backend, 0);
  if (d == NULL) return;
  const tg_device_info *info = tg_device_get_info(d);
  if (tg_storage_is_texture(storage) && (!info->images || (mode == TG_MODE_OFFSETS && !info->arena_images))) {
    tg_device_close(d);
    return;
  }
  tg_test_rng rng = {seed};
  net t;
  make_net(&rng, &t, tg_storage_dims(storage));
  tg_range_records *planned = mode == TG_MODE_OFFSETS ? arena_range(d, &t, storage) : t.tensors;
  tg_plan_options o = {0};
  o.mode = mode;
  o.strategy = TG_STRATEGY_GREEDY_BY_SIZE;
  tg_range_plan *rp = NULL;
  tg_error_info err = {{0}};
  if (tg_range_plan_compute(planned, &o, NULL, NULL, &rp, &err) != TG_OK) fail_msg("range plan: %s", err.message);
  tg_plan *inst = NULL;
  assert_int_equal(tg_range_plan_create_instance(rp, NULL, &inst), TG_OK);
  tg_range_plan_summary sm;
  tg_range_plan_get_summary(rp, &sm);
  /* Up and down the range. */
  static const int64_t k_widths[] = {8, 64, 16, 40, 8, 56, 24, 64, 32};
  const size_t sizes = sizeof k_widths / sizeof k_widths[0];
  tg_usage_record recs[MAX_N];
  /* Capacity: per allocation, the most any width needs. */
  tg_extent room[MAX_N];
  size_t room_count = mode == TG_MODE_OFFSETS ? 1 : sm.max_object_count;
  for (size_t k = 0; k < room_count; ++k) room[k] = (tg_extent){0, 1, 1};
  for (size_t i = 0; i < sizes; ++i) {
    assert_int_equal(tg_range_plan_instantiate(rp, &k_widths[i], recs, inst), TG_OK);
    for (size_t k = 0; k < (mode == TG_MODE_OFFSETS ? 1 : inst->object_count); ++k) {
      tg_extent e = mode == TG_MODE_OFFSETS ? (tg_extent){inst->total, 1, 1} : inst->object_sizes[k];
      if (e.w > room[k].w) room[k].w = e.w;
      if (e.h > room[k].h) room[k].h = e.h;
    }
  }
  at_size s;
  memset(&s, 0, sizeof s);
  tg_realization *z = NULL;
  uint64_t memories[MAX_N];
  size_t memory_count = 0;
  tg_realization_stats first;
  uint64_t remade = 0;
  for (size_t i = 0; i < sizes; ++i) {
    assert_int_equal(tg_range_plan_instantiate(rp, &k_widths[i], recs, inst), TG_OK);
    tensors_at(d, &t, storage, mode, k_widths[i], &s);
    tg_realize_desc rd = desc_at(&t, inst, &s, recs);
    if (z == NULL) {
      tg_realize_capacity cap = {room, room_count};
      if (tg_realization_create_with_capacity(d, &rd, &cap, NULL, &z, &err) != TG_OK) fail_msg("create: %s", err.message);
      tg_realization_get_stats(z, &first);
      assert_int_equal(first.allocations, room_count);
      for (size_t r = 0; r < t.n; ++r) {
        tg_tensor_handle h;
        tg_realization_get_tensor(z, r, &h);
        int known = 0;
        for (size_t k = 0; k < memory_count; ++k) known |= memories[k] == h.memory;
        if (!known) memories[memory_count++] = h.memory;
      }
    } else if (tg_realization_reoffset(z, &rd, &err) != TG_OK) {
      fail_msg("%s, %s %s, width %lld: %s", tg_backend_name(backend), tg_storage_name(storage), tg_mode_name(mode),
               (long long)k_widths[i], err.message);
    }
    assert_handles(z, inst, &s, memories, memory_count, NULL);
    uint64_t bad = check(z);
    if (bad) fail_msg("%s, %s %s, width %lld: %llu corrupted", tg_backend_name(backend), tg_storage_name(storage),
                      tg_mode_name(mode), (long long)k_widths[i], (unsigned long long)bad);
    tg_realization_stats now;
    tg_realization_get_stats(z, &now);
    assert_int_equal(now.allocations, first.allocations);
    assert_int_equal(now.allocated_bytes, first.allocated_bytes);
    remade = now.views_remade;
  }
  assert_true(remade > 0);

  /* Offsets mode, a stale plan: the smallest width's offsets with the largest width's tensors.
   * Refused (it leaves its arena) or caught by the check. (In objects mode a plan's
   * assignment is the same at every width of a piece: nothing goes stale.) */
  int64_t lo = 8, hi = 64;
  tg_status st = TG_OK;
  const char *stale_said = "";
  if (mode == TG_MODE_OFFSETS) {
    assert_int_equal(tg_range_plan_instantiate(rp, &lo, recs, inst), TG_OK);
    tensors_at(d, &t, storage, mode, hi, &s);
    tg_realize_desc bad_desc = {inst, s.arena->records, t.n, 1, s.res, TG_PRECISION_FP32, 1};
    st = tg_realization_reoffset(z, &bad_desc, &err);
    uint64_t caught = st == TG_OK ? check(z) : 0;
    if (st != TG_OK) assert_int_equal(st, TG_ERROR_LIMIT);
    else if (caught == 0)
      fail_msg("%s, %s %s: a stale plan went unnoticed", tg_backend_name(backend), tg_storage_name(storage),
               tg_mode_name(mode));
    stale_said = st == TG_OK ? "; a stale plan corrupts" : "; a stale plan is refused";
  }
  print_message("%s, %s %s: %zu sizes, %llu allocation(s), %llu views remade, 0 corrupted%s\n",
                tg_backend_name(backend), tg_storage_name(storage), tg_mode_name(mode), sizes,
                (unsigned long long)first.allocations, (unsigned long long)remade, stale_said);
  tg_realization_destroy(z);

  /* No capacity: the largest width does not fit the smallest's allocations, and the
   * realization stays at the smallest (handles and check unchanged). */
  assert_int_equal(tg_range_plan_instantiate(rp, &lo, recs, inst), TG_OK);
  tensors_at(d, &t, storage, mode, lo, &s);
  tg_realize_desc small = desc_at(&t, inst, &s, recs);
  assert_int_equal(tg_realization_create(d, &small, NULL, &z, &err), TG_OK);
  tg_tensor_handle before[MAX_N], after[MAX_N];
  memory_count = memories_of(z, t.n, memories);
  assert_handles(z, inst, &s, memories, memory_count, before);
  at_size big;
  memset(&big, 0, sizeof big);
  tg_plan *inst_hi = NULL;
  tg_usage_record recs_hi[MAX_N];
  assert_int_equal(tg_range_plan_create_instance(rp, NULL, &inst_hi), TG_OK);
  assert_int_equal(tg_range_plan_instantiate(rp, &hi, recs_hi, inst_hi), TG_OK);
  tensors_at(d, &t, storage, mode, hi, &big);
  tg_realize_desc large = desc_at(&t, inst_hi, &big, recs_hi);
  assert_int_equal(tg_realization_reoffset(z, &large, &err), TG_ERROR_LIMIT);
  if (strstr(err.message, "capacity") == NULL || strncmp(err.message, "tg_realization_reoffset: ", 25) != 0)
    fail_msg("'%s'", err.message);
  assert_handles(z, inst, &s, memories, memory_count, after);
  assert_memory_equal(before, after, t.n * sizeof *before);
  assert_int_equal(check(z), 0);
  tg_realization_destroy(z);
  tg_device_close(d);

  /* A driver failure while re-offsetting, at each device object creation in turn: the
   * realization as it was (handles, check), then the same call succeeds. */
  size_t failures = 0;
  for (uint64_t at = 1; faults && at < 400; ++at) {
    tg_device *f = open_device(backend, at);
    assert_non_null(f);
    assert_int_equal(tg_range_plan_instantiate(rp, &lo, recs, inst), TG_OK);
    tensors_at(f, &t, storage, mode, lo, &s);
    tg_realize_desc dl = desc_at(&t, inst, &s, recs);
    tg_realize_capacity cap = {room, room_count};
    if (tg_realization_create_with_capacity(f, &dl, &cap, NULL, &z, &err) != TG_OK) {
      tg_device_close(f);
      continue; /* the failure hit the creation */
    }
    memory_count = memories_of(z, t.n, memories);
    assert_handles(z, inst, &s, memories, memory_count, before);
    assert_int_equal(tg_range_plan_instantiate(rp, &hi, recs_hi, inst_hi), TG_OK);
    tensors_at(f, &t, storage, mode, hi, &big);
    large = desc_at(&t, inst_hi, &big, recs_hi);
    st = tg_realization_reoffset(z, &large, &err);
    if (st == TG_OK) {
      assert_int_equal(check(z), 0);
      tg_realization_destroy(z);
      tg_device_close(f);
      break; /* past every creation of the call */
    }
    if (st != TG_ERROR_OUT_OF_DEVICE_MEMORY) fail_msg("failure %llu: %s", (unsigned long long)at, err.message);
    ++failures;
    assert_handles(z, inst, &s, memories, memory_count, after);
    assert_memory_equal(before, after, t.n * sizeof *before);
    assert_int_equal(check(z), 0);
    if (tg_realization_reoffset(z, &large, &err) != TG_OK) fail_msg("after failure %llu: %s", (unsigned long long)at, err.message);
    assert_int_equal(check(z), 0);
    tg_realization_destroy(z);
    tg_device_close(f);
  }
  if (faults) {
    assert_true(failures > 0);
    print_message("  %zu driver failures while re-offsetting, each leaving it as it was\n", failures);
  }
  size_free(&big);
  size_free(&s);
  tg_plan_destroy(inst_hi);
  tg_plan_destroy(inst);
  tg_range_plan_destroy(rp);
  if (planned != t.tensors) tg_range_records_destroy(planned);
  tg_range_records_destroy(t.tensors);
}

static void on_backend(tg_backend_kind backend) {
  static const struct {
    tg_storage storage;
    tg_mode mode;
  } k_cases[] = {{TG_STORAGE_BUFFER, TG_MODE_OFFSETS},
                 {TG_STORAGE_BUFFER, TG_MODE_OBJECTS},
                 {TG_STORAGE_TEXTURE_2D, TG_MODE_OBJECTS},
                 {TG_STORAGE_TEXTURE_2D, TG_MODE_OFFSETS}};
  for (size_t c = 0; c < sizeof k_cases / sizeof k_cases[0]; ++c)
    for (uint64_t seed = 1; seed <= (deep() ? 12u : 2u); ++seed)
      /* Driver failures: every case on the host; on a GPU one case of each kind of view (an
       * arena's sub-buffers or bound buffers, an object's images), enough to reach every
       * rollback at a fraction of the time (TANGRAM_TEST_DEEP=1: all). */
      one_case(backend, k_cases[c].storage, k_cases[c].mode, seed * 7 + c,
               seed == 1 && (deep() || backend == TG_BACKEND_HOST || c == 0 || c == 2));
}

static void host(void **state) {
  (void)state;
  on_backend(TG_BACKEND_HOST);
}
static void opencl(void **state) {
  (void)state;
  on_backend(TG_BACKEND_OPENCL);
}
static void vulkan(void **state) {
  (void)state;
  on_backend(TG_BACKEND_VULKAN);
}

int main(int argc, char **argv) {
  if (argc > 1) cmocka_set_test_filter(argv[1]); /* one backend: test_reoffset vulkan */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(host),
      cmocka_unit_test(opencl),
      cmocka_unit_test(vulkan),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
