#define _POSIX_C_SOURCE 200809L
/* Heterogeneous realisation on every backend built and present (host always; OpenCL through
 * PoCL and Vulkan through lavapipe, with validation, on CI): device, host and shared memory,
 * the check over both processors in order and out of order, a dropped wait between processors
 * caught as corruption (both directions, and on a public model), a plan whose shared memory
 * needs a wait between processors, mapping, refusals, and rollback of every allocation.
 *
 * Outside CI a missing OpenCL or Vulkan driver skips that backend loudly; under CI (CI=true)
 * it fails. */
#include "support/tg_test.h"
#include "support/tg_vulkan_leaks.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tangram/backend.h"
#include "tangram/hetero.h"
#include "tangram/model.h"
#include "tangram/placement.h"
#include "tangram/schedule.h"

#include "backends/hetero_case.h"


/* ---- graphs ---- */

/* Processors alternate: every tensor is shared. */
static const char k_alternate[] =
    "tensor x 1x8x8x4 float32 input\n"
    "tensor a 1x8x8x5 float32\n"
    "tensor b 1x8x8x4 float32\n"
    "tensor c 1x4x8x4 float32\n"
    "tensor e 1x8x8x4 float32 output\n"
    "op CONV_2D inputs=x outputs=a\n"  /* 0 gpu */
    "op Custom inputs=a outputs=b\n"   /* 1 cpu */
    "op ADD inputs=b outputs=c\n"      /* 2 gpu */
    "op Custom inputs=c outputs=e\n";  /* 3 cpu */

/* Device, host and shared tensors; a [0,1] and b [2,4] must not share memory (op 1 on the CPU
 * may still read a when op 2 on the GPU writes b). */
static const char k_race[] =
    "tensor x 1x8x8x4 float32 input\n"
    "tensor a 1x8x8x4 float32\n"
    "tensor h 1x8x8x4 float32\n"
    "tensor b 1x8x8x4 float32\n"
    "tensor c 1x8x8x4 float32\n"
    "tensor d 1x8x8x4 float32\n"
    "tensor y 1x8x8x4 float32 output\n"
    "op CONV_2D inputs=x outputs=a\n"       /* 0 gpu */
    "op Custom inputs=a outputs=h\n"        /* 1 cpu */
    "op CONV_2D inputs=x outputs=b\n"       /* 2 gpu */
    "op CONV_2D inputs=b outputs=c\n"       /* 3 gpu */
    "op ADD inputs=c outputs=d\n"           /* 4 gpu */
    "op Custom inputs=h,b,d outputs=y\n";   /* 5 cpu */

/* ---- devices ---- */

typedef struct suite {
  tg_device *dev[TG_BACKEND_COUNT];
} suite;

static int setup(void **state) {
  suite *s = calloc(1, sizeof *s);
  if (s == NULL) return -1;
  for (int b = TG_BACKEND_HOST; b < TG_BACKEND_COUNT; ++b) {
    tg_device_options opt;
    memset(&opt, 0, sizeof opt);
    opt.backend = (tg_backend_kind)b;
    opt.validation = b == TG_BACKEND_VULKAN;
    tg_error_info err = {{0}};
    if (tg_device_open(&opt, NULL, &s->dev[b], NULL, NULL, &err) != TG_OK) {
      s->dev[b] = NULL;
      if (tg_test_in_ci()) {
        fprintf(stderr, "FAILURE: no usable %s device under CI: %s\n", tg_backend_name((tg_backend_kind)b), err.message);
        return -1;
      }
      fprintf(stderr, "SKIPPING the %s backend: %s\n", tg_backend_name((tg_backend_kind)b), err.message);
    }
  }
  *state = s;
  return 0;
}

static int teardown(void **state) {
  suite *s = *state;
  for (int b = 0; b < TG_BACKEND_COUNT; ++b) tg_device_close(s->dev[b]);
  free(s);
  return 0;
}

static void assert_quiet(tg_device *d, const char *what) {
  uint64_t n = tg_device_get_validation_messages(d);
  if (n) fail_msg("%s: %llu validation message(s)", what, (unsigned long long)n);
}

/* ---- tests ---- */

/* Every kind of memory, clean in order and out of order, on every backend. */
static void clean_runs(void **state) {
  suite *s = *state;
  static const char *const texts[] = {k_alternate, k_race};
  static const char *const places[] = {"auto", "gpu", "cpu:*", "cpu:CONV_2D"};
  for (int b = TG_BACKEND_HOST; b < TG_BACKEND_COUNT; ++b) {
    tg_device *d = s->dev[b];
    if (d == NULL) continue;
    for (size_t t = 0; t < 2; ++t)
      for (size_t p = 0; p < 4; ++p) {
        case_data c;
        case_text(&c, texts[t], places[p]);
        for (int ooo = 0; ooo <= 1; ++ooo) {
          plan_case(&c, TG_STRATEGY_BEST, ooo ? TG_POLICY_PARALLEL_SAFE : TG_POLICY_SERIAL, !ooo);
          make_resources(&c, TG_PRECISION_FP32);
          uint64_t bad = realise_check(d, &c, ooo, c.waits->wait_start, c.waits->waits);
          if (bad) fail_msg("%s: graph %zu, %s, %s: %llu corrupted", tg_backend_name((tg_backend_kind)b), t,
                            places[p], ooo ? "out of order" : "in order", (unsigned long long)bad);
        }
        case_free(&c);
      }
    assert_quiet(d, "clean runs");
  }
}

/* Realise and check `c` on `d` out of order with its waits but `x`: the corrupted records. With
 * `in_order_clean`, the same waits in order check clean. `*kept`: how many waits were kept. */
static uint64_t check_without_wait(tg_device *d, case_data *c, const tg_cross_wait *x, int in_order_clean,
                                   size_t *kept) {
  const tg_spaces_waits *w = c->waits;
  const size_t n = c->graph->op_count;
  size_t *start = calloc(n + 1, sizeof *start);
  uint32_t *list = calloc(w->wait_start[n] + 1, sizeof *list);
  assert_true(start && list);
  size_t at = 0;
  for (size_t o = 0; o < n; ++o) {
    for (size_t i = w->wait_start[o]; i < w->wait_start[o + 1]; ++i)
      if (!(o == x->op && w->waits[i] == x->after)) list[at++] = w->waits[i];
    start[o + 1] = at;
  }
  const uint64_t bad = realise_check(d, c, 1, start, list);
  if (in_order_clean) assert_int_equal(realise_check(d, c, 0, start, list), 0);
  free(start);
  free(list);
  *kept = at;
  return bad;
}

/* Drop one wait between processors at a time: out of order, the op that lost it runs before the
 * op it needed, and the check says so. In order, the same waits are not needed. */
static void dropped_wait(void **state) {
  suite *s = *state;
  for (int b = TG_BACKEND_HOST; b < TG_BACKEND_COUNT; ++b) {
    tg_device *d = s->dev[b];
    if (d == NULL) continue;
    case_data c;
    case_text(&c, k_alternate, "auto");
    plan_case(&c, TG_STRATEGY_BEST, TG_POLICY_PARALLEL_SAFE, 0);
    make_resources(&c, TG_PRECISION_FP32);
    const tg_spaces_waits *w = c.waits;
    assert_int_equal(w->cross_count, 3); /* 1 after 0, 2 after 1, 3 after 2 */
    assert_int_equal(realise_check(d, &c, 1, w->wait_start, w->waits), 0);
    for (size_t e = 0; e < w->cross_count; ++e) {
      const tg_cross_wait *x = &w->cross[e];
      size_t kept = 0;
      const uint64_t bad = check_without_wait(d, &c, x, 1, &kept);
      assert_int_equal(kept + 1, w->wait_start[c.graph->op_count]);
      print_message("%s: op %u without its wait for op %u (%s -> %s): %llu corrupted\n",
                    tg_backend_name((tg_backend_kind)b), x->op, x->after, tg_processor_name(c.proc[x->after]),
                    tg_processor_name(c.proc[x->op]), (unsigned long long)bad);
      if (bad == 0) fail_msg("%s: dropping the wait of op %u for op %u went unnoticed", tg_backend_name((tg_backend_kind)b),
                             x->op, x->after);
    }
    case_free(&c);
  }
}

/* A shared plan that needs a wait between processors: a and b in one object (serial
 * planning); the reuse edge (op 2 on the GPU after op 1 on the CPU) makes it safe, and its
 * absence shows. */
static void shared_reuse_wait(void **state) {
  suite *s = *state;
  for (int b = TG_BACKEND_HOST; b < TG_BACKEND_COUNT; ++b) {
    tg_device *d = s->dev[b];
    if (d == NULL) continue;
    case_data c;
    case_text(&c, k_race, "auto");
    const tg_space_set *shared = &c.spaces->sets[TG_SET_SHARED];
    tg_plan_destroy(c.plans[TG_SET_SHARED].plan);
    c.plans[TG_SET_SHARED].plan = NULL;
    tg_plan_options po = {0};
    po.strategy = TG_STRATEGY_GREEDY_BY_SIZE;
    assert_int_equal(tg_plan_compute(shared->records->records, shared->records->count, 1, &po, NULL,
                                     &c.plans[TG_SET_SHARED].plan), TG_OK);
    tg_space_plan_ref refs[TG_SET_COUNT];
    for (int k = 0; k < TG_SET_COUNT; ++k) {
      refs[k].plan = c.plans[k].plan;
      refs[k].records = c.spaces->sets[k].records->records;
    }
    tg_spaces_waits_destroy(c.waits);
    tg_error_info err = {{0}};
    assert_int_equal(tg_spaces_compute_waits(c.spaces, c.schedule, refs, 0, NULL, &c.waits, &err), TG_OK);
    int reuse = 0;
    for (size_t e = 0; e < c.waits->cross_count; ++e)
      if (c.waits->cross[e].reuse && c.waits->cross[e].op == 2 && c.waits->cross[e].after == 1) reuse = 1;
    assert_true(reuse);
    make_resources(&c, TG_PRECISION_FP32);
    assert_int_equal(realise_check(d, &c, 1, c.waits->wait_start, c.waits->waits), 0);
    assert_int_equal(realise_check(d, &c, 0, NULL, NULL), 0);
    uint64_t bad = realise_check(d, &c, 1, NULL, NULL); /* the graph's edges alone */
    print_message("%s: shared reuse without its wait: %llu corrupted\n", tg_backend_name((tg_backend_kind)b),
                  (unsigned long long)bad);
    assert_true(bad > 0);
    case_free(&c);
  }
}

/* selfie_segmentation with the default profile: its custom op on the CPU. Clean with the
 * waits, in buffers and textures; its wait for the GPU dropped, corrupted. */
static void public_model(void **state) {
  suite *s = *state;
  char path[1024];
  if (tg_test_model_path(path, sizeof path, "selfie_segmentation.tflite") == NULL) skip();
  static const tg_storage storages[] = {TG_STORAGE_BUFFER, TG_STORAGE_TEXTURE_2D};
  for (int b = TG_BACKEND_HOST; b < TG_BACKEND_COUNT; ++b) {
    tg_device *d = s->dev[b];
    if (d == NULL) continue;
    for (size_t si = 0; si < 2; ++si) {
      tg_model *m = NULL;
      tg_error_info err = {{0}};
      assert_int_equal(tg_model_load(path, NULL, &m, &err), TG_OK);
      tg_graph *g = m->graph;
      m->graph = NULL;
      tg_model_destroy(m);
      case_data c;
      case_build(&c, g, storages[si], "auto");
      assert_int_equal(tg_spaces_count(c.spaces, TG_SPACE_SHARED), 2);
      if (storages[si] == TG_STORAGE_TEXTURE_2D) assert_int_equal(c.spaces->images_as_buffers, 2);
      assert_int_equal(realise_check(d, &c, 0, NULL, NULL), 0);
      assert_int_equal(realise_check(d, &c, 1, c.waits->wait_start, c.waits->waits), 0);
      /* The CPU op's wait for the GPU op writing its input. */
      const tg_cross_wait *x = NULL;
      for (size_t e = 0; e < c.waits->cross_count; ++e)
        if (c.proc[c.waits->cross[e].op] == TG_PROCESSOR_CPU) x = &c.waits->cross[e];
      assert_non_null(x);
      size_t kept = 0;
      const uint64_t bad = check_without_wait(d, &c, x, 0, &kept);
      print_message("%s %s: op %u (%s) without its wait for op %u: %llu corrupted\n",
                    tg_backend_name((tg_backend_kind)b), tg_storage_name(storages[si]), x->op,
                    c.graph->ops[x->op].name, x->after, (unsigned long long)bad);
      assert_true(bad > 0);
      case_free(&c);
    }
  }
}

/* Mapping, handles and refusals. */
static void map_handles_refusals(void **state) {
  suite *s = *state;
  for (int b = TG_BACKEND_HOST; b < TG_BACKEND_COUNT; ++b) {
    tg_device *d = s->dev[b];
    if (d == NULL) continue;
    case_data c;
    case_text(&c, k_race, "auto");
    tg_error_info err = {{0}};
    tg_hetero_realize_desc rd = {c.sets, TG_SET_COUNT, TG_PRECISION_FP32, 0};
    tg_hetero_realization *z = NULL;
    assert_int_equal(tg_hetero_realization_create(d, &rd, NULL, &z, &err), TG_OK);
    tg_hetero_stats st;
    tg_hetero_realization_get_stats(z, &st);
    assert_int_equal(st.allocations[TG_SPACE_HOST], c.plans[TG_SET_HOST].allocations);
    assert_int_equal(st.allocations[TG_SPACE_SHARED], c.plans[TG_SET_SHARED].allocations);
    assert_int_equal(st.allocations[TG_SPACE_DEVICE], c.plans[TG_SET_DEVICE].allocations);
    assert_int_equal(st.views, c.spaces->sets[TG_SET_DEVICE].records->count + c.spaces->sets[TG_SET_SHARED].records->count);
    size_t total = 0;
    for (int k = 0; k < TG_SET_COUNT; ++k) total += c.sets[k].record_count;
    /* Host pointers: host records always, shared records while mapped. */
    size_t first_shared = total - c.sets[TG_SET_SHARED].record_count;
    tg_space sp;
    tg_tensor_handle h;
    void *host = NULL;
    assert_int_equal(tg_hetero_realization_get_tensor(z, first_shared, &sp, &h, &host), TG_OK);
    assert_int_equal(sp, TG_SPACE_SHARED);
    assert_null(host);
    assert_true(h.native != 0);
    assert_int_equal(tg_hetero_realization_map(z, &err), TG_OK);
    assert_int_equal(tg_hetero_realization_get_tensor(z, first_shared, &sp, NULL, &host), TG_OK);
    assert_non_null(host);
    memset(host, 0x5A, (size_t)c.resources[TG_SET_SHARED][0].bytes);
    tg_hetero_check_desc cd = {c.graph, c.proc, 0, NULL, NULL};
    tg_check_result res = {0, NULL, 0};
    assert_int_equal(tg_hetero_realization_check(z, &cd, &res, &err), TG_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "mapped by the caller"));
    assert_int_equal(tg_hetero_realization_unmap(z, &err), TG_OK);
    assert_int_equal(tg_hetero_realization_unmap(z, &err), TG_OK);
    size_t first_host = c.sets[TG_SET_DEVICE].record_count + c.sets[TG_SET_DEVICE_FALLBACK].record_count;
    assert_int_equal(tg_hetero_realization_get_tensor(z, first_host, &sp, &h, &host), TG_OK);
    assert_int_equal(sp, TG_SPACE_HOST);
    assert_non_null(host);
    assert_int_equal(h.native, 0);
    assert_int_equal(tg_hetero_realization_get_tensor(z, total, &sp, &h, &host), TG_ERROR_INVALID_ARGUMENT);
    /* A placement that disagrees with the spaces: a GPU op touching host memory. */
    tg_processor *wrong = calloc(c.graph->op_count, sizeof *wrong);
    assert_non_null(wrong);
    cd.processor_of = wrong; /* all GPU: op 1 writes h, in host memory */
    assert_int_equal(tg_hetero_realization_check(z, &cd, &res, &err), TG_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "runs on the gpu but record"));
    for (size_t i = 0; i < c.graph->op_count; ++i) wrong[i] = TG_PROCESSOR_CPU;
    tg_hetero_realization_destroy(z);
    /* Only device records on the CPU: refused. */
    case_data g;
    case_text(&g, k_race, "gpu");
    assert_int_equal(tg_hetero_realization_create(d, &(tg_hetero_realize_desc){g.sets, TG_SET_COUNT, TG_PRECISION_FP32, 0},
                                                  NULL, &z, &err), TG_OK);
    cd.graph = g.graph;
    assert_int_equal(tg_hetero_realization_check(z, &cd, &res, &err), TG_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "runs on the cpu but record"));
    /* Waits that point forward. */
    size_t ws[8] = {0, 0, 0, 1, 1, 1, 1, 1};
    uint32_t wl[1] = {5};
    tg_hetero_check_desc fwd = {g.graph, g.proc, 1, ws, wl};
    assert_int_equal(tg_hetero_realization_check(z, &fwd, &res, &err), TG_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "not earlier"));
    tg_hetero_realization_destroy(z);
    free(wrong);
    case_free(&g);
    /* Images in shared memory: refused, naming why. */
    tg_tensor_resource img = {TG_STORAGE_TEXTURE_2D, {8, 8, 1}, 8 * 8 * 16};
    tg_usage_record rec = {{8, 8, 1}, 0, 1, 0};
    tg_plan *pl = NULL;
    assert_int_equal(tg_plan_compute(&rec, 1, 2, NULL, NULL, &pl), TG_OK);
    tg_hetero_set_desc one = {TG_SPACE_SHARED, pl, &rec, 1, 2, &img, NULL};
    assert_int_equal(tg_hetero_realization_create(d, &(tg_hetero_realize_desc){&one, 1, TG_PRECISION_FP32, 0}, NULL,
                                                  &z, &err), TG_ERROR_UNSUPPORTED);
    assert_null(z);
    assert_non_null(strstr(err.message, "cannot be mapped without a copy"));
    tg_plan_destroy(pl);
    case_free(&c);
    assert_quiet(d, "map and refusals");
  }
}

/* Every device object creation failing in turn, then every host allocation (host backend):
 * each failure is reported and rolls back everything. */
static void fault_injection(void **state) {
  (void)state;
  for (int b = TG_BACKEND_HOST; b < TG_BACKEND_COUNT; ++b) {
    case_data c;
    case_text(&c, k_race, "auto");
    size_t made = 0;
    for (uint64_t n = 1;; ++n) {
      tg_device_options opt;
      memset(&opt, 0, sizeof opt);
      opt.backend = (tg_backend_kind)b;
      opt.fail_device_alloc_at = n;
      tg_failing_allocator fa;
      tg_failing_allocator_init(&fa, NULL, 0);
      tg_device *d = NULL;
      tg_error_info err = {{0}};
      if (tg_device_open(&opt, &fa.base, &d, NULL, NULL, &err) != TG_OK) break; /* not here */
      tg_hetero_realize_desc rd = {c.sets, TG_SET_COUNT, TG_PRECISION_FP32, 0};
      tg_hetero_realization *z = NULL;
      tg_status st = tg_hetero_realization_create(d, &rd, &fa.base, &z, &err);
      tg_hetero_realization_destroy(z);
      tg_device_close(d);
      if (b == TG_BACKEND_HOST) assert_int_equal(fa.live_blocks, 0);
      if (st == TG_OK) {
        made = (size_t)n;
        break;
      }
      assert_int_equal(st, TG_ERROR_OUT_OF_DEVICE_MEMORY);
      assert_null(z);
      assert_non_null(strstr(err.message, "TANGRAM_FAIL_DEVICE_ALLOC_AT"));
    }
    if (made) print_message("%s: %zu device object creations each failed in turn\n",
                            tg_backend_name((tg_backend_kind)b), made - 1);
    case_free(&c);
  }
  /* Host memory: realisation and check on the host backend. */
  case_data c;
  case_text(&c, k_race, "auto");
  tg_device *d = NULL;
  tg_device_options opt;
  memset(&opt, 0, sizeof opt);
  opt.backend = TG_BACKEND_HOST;
  assert_int_equal(tg_device_open(&opt, NULL, &d, NULL, NULL, NULL), TG_OK);
  for (uint64_t n = 1;; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, n);
    tg_error_info err = {{0}};
    tg_hetero_realize_desc rd = {c.sets, TG_SET_COUNT, TG_PRECISION_FP32, 0};
    tg_hetero_realization *z = NULL;
    tg_status st = tg_hetero_realization_create(d, &rd, &fa.base, &z, &err);
    if (st == TG_OK) {
      tg_hetero_check_desc cd = {c.graph, c.proc, (int)(n % 2), c.waits->wait_start, c.waits->waits};
      tg_check_result res = {0, NULL, 0};
      st = tg_hetero_realization_check(z, &cd, &res, &err);
      if (st == TG_OK) assert_int_equal(res.corrupted_records, 0);
    }
    tg_hetero_realization_destroy(z);
    if (tg_test_walk_step(&fa, st, TG_OK)) break;
    assert_true(err.message[0] != '\0');
  }
  tg_device_close(d);
  case_free(&c);
}

int main(void) {
  tg_test_keep_vulkan_loaded();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(clean_runs),
      cmocka_unit_test(dropped_wait),
      cmocka_unit_test(shared_reuse_wait),
      cmocka_unit_test(public_model),
      cmocka_unit_test(map_handles_refusals),
      cmocka_unit_test(fault_injection),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
