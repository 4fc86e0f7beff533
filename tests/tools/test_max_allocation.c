/* --max-allocation on plan, evaluate and run: plans of several arenas realised as one
 * allocation per arena on the host, OpenCL (PoCL) and Vulkan (lavapipe) backends with nothing
 * corrupted; saved with their arenas and run again from the file; a cap below the largest
 * tensor, 0 or an absurd value exits 2 with the reason. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"
#include "support/tg_tools_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A realised run: several arenas, one allocation each, 0 corrupted; returns the arena count. */
static size_t check_run(const cli_result *r, const char *what) {
  if (r->code != 0) fail_msg("%s: exit %d: %s", what, r->code, r->err);
  assert_true(tg_test_json_valid(r->out));
  assert_int_equal(tg_test_json_u64(r->out, "corrupted_tensors"), 0);
  uint64_t sum = 0;
  size_t arenas = tg_test_json_u64s(r->out, "arenas", NULL, 0, &sum);
  assert_true(arenas > 1);
  assert_int_equal(tg_test_json_u64(r->out, "allocations"), arenas);
  assert_int_equal(tg_test_json_u64(r->out, "allocated_bytes"), sum);
  assert_int_equal(tg_test_json_u64(r->out, "planned_bytes"), sum);
  print_message("%s: %zu arenas, %llu bytes, 0 corrupted\n", what, arenas, (unsigned long long)sum);
  return arenas;
}

static void runs_on(const char *backend) {
  const char *model = tg_test_cached_model("face_detection_short_range.tflite");
  if (!tg_test_backend_usable(backend)) return;
  char what[256];
  snprintf(what, sizeof what, "%s offsets 1M", backend);
  cli_result r = cli("run %s --backend %s --mode offsets --max-allocation 1M --json", model, backend);
  check_run(&r, what);
  assert_int_equal(tg_test_json_u64(r.out, "max_allocation"), 1048576);
  cli_free(&r);
  /* Out of order, with the reuse edges the arenas need. */
  r = cli("run %s --backend %s --storage buffer --mode offsets --max-allocation 600K --policy parallel-safe "
          "--out-of-order --json", model, backend);
  snprintf(what, sizeof what, "%s offsets 600K parallel-safe out of order", backend);
  check_run(&r, what);
  cli_free(&r);
  /* Saved with its arenas (aligned to 256 by default), run from the file. */
  char file[256];
  snprintf(file, sizeof file, "/tmp/tg_max_allocation_%ld_%s.tgplan", (long)getpid(), backend);
  cli_result p = cli("plan %s --mode offsets --strategy best --max-allocation 1M --save %s --json", model, file);
  if (p.code != 0) fail_msg("plan --save: exit %d: %s", p.code, p.err);
  assert_int_equal(tg_test_json_u64(p.out, "alignment"), 256);
  r = cli("run %s --plan %s --backend %s --json", model, file, backend);
  snprintf(what, sizeof what, "%s run --plan (1M)", backend);
  check_run(&r, what);
  assert_int_equal(tg_test_json_u64(r.out, "planned_bytes"), tg_test_json_u64(strstr(p.out, "\"saved\":"), "total"));
  cli_free(&r);
  /* A smaller cap than the file's arenas need: exit 2, naming the cap. */
  cli_expect(2, NULL, "allocation cap: arena 0 of the plan takes", "run %s --plan %s --backend %s --max-allocation 500K", model, file, backend);
  cli_free(&p);
  remove(file);
}

TG_TEST_ON_BACKENDS(runs_on)

/* plan --json: arenas and arena_of per result; the arena bound; the text table. */
static void plan_reports_arenas(void **state) {
  (void)state;
  const char *model = tg_test_cached_model("pose_landmark_lite.tflite");
  cli_result r = cli_json("plan %s --mode offsets --strategy greedy-by-size --max-allocation 3M --json", model);
  assert_int_equal(tg_test_json_u64(r.out, "max_allocation"), 3u << 20);
  size_t min_arenas = tg_test_json_u64(r.out, "min_arenas");
  assert_int_equal(min_arenas, 3); /* peak live 6963200 over 3 MiB */
  uint64_t sum = 0;
  size_t arenas = tg_test_json_u64s(strstr(r.out, "\"results\":"), "arenas", NULL, 0, &sum);
  assert_true(arenas >= min_arenas);
  assert_int_equal(sum, tg_test_json_u64(strstr(r.out, "\"results\":"), "total"));
  size_t records = tg_test_json_u64(r.out, "records");
  assert_int_equal(tg_test_json_u64s(strstr(r.out, "\"results\":"), "arena_of", NULL, 0, NULL), records);
  cli_free(&r);
  cli_expect(0, "allocation cap 3145728 bytes: at least 3 arenas", NULL, "plan %s --mode offsets --max-allocation 3M", model);
}

/* Bad caps: exit 2 with the reason, on every command. */
static void bad_caps(void **state) {
  (void)state;
  const char *model = tg_test_cached_model("face_detection_short_range.tflite");
  static const char *const commands[] = {"plan", "evaluate", "run"};
  static const struct {
    const char *value, *words;
  } k_bad[] = {
      {"0", "0 allocates nothing"},
      {"abc", "must be a positive number of bytes"},
      {"5Q", "must be a positive number of bytes"},
      {"-1", "must be a positive number of bytes"},
      {"99999999999999G", "must be a positive number of bytes"},
      {"100K", "tensor conv2d (393216 bytes) is larger than the allocation cap 102400 bytes"},
  };
  for (size_t c = 0; c < 3; ++c) {
    for (size_t i = 0; i < sizeof k_bad / sizeof k_bad[0]; ++i) {
      cli_result r = cli("%s %s --max-allocation %s%s", commands[c], model, k_bad[i].value,
                         c == 2 ? " --backend host --mode offsets" : c == 0 ? " --mode offsets" : "");
      if (r.code != 2 || strstr(r.err, k_bad[i].words) == NULL)
        fail_msg("%s --max-allocation %s: exit %d, '%s' (expected 2 and '%s')", commands[c], k_bad[i].value, r.code,
                 r.err, k_bad[i].words);
      cli_free(&r);
    }
  }
  /* Objects mode of textures: an object above the cap (texture_3d objects take the
   * per-dimension maximum of their tensors: 589824 bytes here, its largest tensor 458752) names
   * its largest tensor. */
  cli_result r = cli("plan %s --storage texture_3d --strategy greedy-by-size --max-allocation 500K", model);
  assert_int_equal(r.code, 2);
  assert_non_null(strstr(r.err, "object 0 (589824 bytes) is larger than the allocation cap 512000 bytes; its "
                                "largest tensor is conv2d_2"));
  cli_free(&r);
  /* run goes on with another strategy or the offsets mode. */
  r = cli("run %s --storage texture_3d --strategy greedy-by-size --max-allocation 500K --backend host --json", model);
  assert_int_equal(r.code, 0);
  assert_int_equal(tg_test_json_u64(r.out, "corrupted_tensors"), 0);
  cli_free(&r);
}

TG_TEST_MAIN(cmocka_unit_test(bad_caps), cmocka_unit_test(plan_reports_arenas),
             cmocka_unit_test(runs_on_host), cmocka_unit_test(runs_on_opencl),
             cmocka_unit_test(runs_on_vulkan))
