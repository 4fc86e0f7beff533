/* `tangram plan MODEL --save FILE` and `tangram run MODEL --plan FILE`: a saved plan runs on the
 * host and OpenCL backends with the same report as a planned run and the same plan; a plan
 * for another model, a damaged file, a conflicting option or a plan the device cannot hold
 * exits 2 with the reason. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"
#include "support/tg_tools_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tangram/model.h"
#include "tangram/plan_file.h"

static char g_dir[256];

static const char *tmp(const char *name) {
  static char buf[4][512];
  static int i;
  i = (i + 1) % 4;
  snprintf(buf[i], sizeof buf[i], "%s/%s", g_dir, name);
  return buf[i];
}

static int setup(void **state) {
  (void)state;
  return tg_scratch_create(g_dir, sizeof g_dir, "tg_plan_file_cli");
}

static int teardown(void **state) {
  (void)state;
  return tg_scratch_remove(g_dir);
}

/* Save with `plan_options`, run it with --plan on `backend`: no corruption; and with
 * `run_options` (the same choices; NULL: none), a run that plans itself realises the same bytes. */
static void save_and_run(const char *model, const char *backend, const char *plan_options, const char *run_options) {
  const char *file = tmp("saved.tgplan");
  cli_result p = cli_json("plan %s %s --save %s --json", model, plan_options, file);
  const char *saved = strstr(p.out, "\"saved\":{");
  assert_non_null(saved);
  uint64_t saved_total = tg_test_json_u64(saved, "total");
  cli_result r = cli_json("run %s --plan %s --backend %s --json", model, file, backend);
  assert_non_null(strstr(r.out, "\"plan_file\":"));
  assert_int_equal(tg_test_json_u64(r.out, "corrupted_tensors"), 0);
  assert_true(tg_test_json_u64(r.out, "checked_bytes") > 0);
  uint64_t planned = tg_test_json_u64(r.out, "planned_bytes");
  /* Objects of textures count texels in the plan file, bytes in the run. */
  if (strstr(plan_options, "texture") == NULL) assert_int_equal(planned, saved_total);
  if (run_options) {
    cli_result own = cli("run %s %s --backend %s --json", model, run_options, backend);
    if (own.code != 0) fail_msg("run %s: exit %d: %s", run_options, own.code, own.err);
    assert_int_equal(tg_test_json_u64(own.out, "planned_bytes"), planned);
    assert_int_equal(tg_test_json_u64(own.out, "allocated_bytes"), tg_test_json_u64(r.out, "allocated_bytes"));
    cli_free(&own);
  }
  print_message("%s %s: saved %llu, realised %llu bytes, 0 corrupted\n", backend, plan_options,
                (unsigned long long)saved_total, (unsigned long long)planned);
  cli_free(&r);
  cli_free(&p);
}

static void run_on(const char *backend) {
  const char *model = tg_test_cached_model("face_detection_short_range.tflite");
  if (!tg_test_backend_usable(backend)) return;
  /* Compared with a run that plans itself: strategies without `best`'s clock-bounded search,
   * so both sides plan the same. */
  save_and_run(model, backend, "--strategy greedy-by-size", "--storage buffer --strategy greedy-by-size");
  save_and_run(model, backend, "--storage texture_2d --precision fp16 --strategy greedy-in-order",
               "--storage texture_2d --precision fp16 --strategy greedy-in-order");
  save_and_run(model, backend, "--mode offsets --alignment 256 --strategy best", NULL);
  save_and_run(model, backend, "--storage texture_3d --policy parallel-safe --strategy greedy-by-breadth",
               "--storage texture_3d --policy parallel-safe --strategy greedy-by-breadth");
  save_and_run(model, backend, "--storage texture_3d --strategy best", NULL);
  /* --strategy all saves the smallest and says which. */
  const char *file = tmp("all.tgplan");
  cli_expect(0, "saved the smallest plan, ", NULL, "plan %s --save %s", model, file);
  cli_result r = cli("run %s --plan %s --backend %s", model, file, backend);
  assert_int_equal(r.code, 0);
  tg_expect_all(r.out, "plan loaded from ", "0 corrupted tensors", NULL);
  cli_free(&r);
}

TG_TEST_ON_BACKENDS(run_on)

/* A plan made for another model, a damaged file, a conflicting option, over the budget: exit 2
 * with the reason on stderr and nothing on stdout. */
static void refusals(void **state) {
  (void)state;
  char pose[1024], hand[1024];
  if (!tg_test_model_path(pose, sizeof pose, "pose_landmark_lite.tflite") ||
      !tg_test_model_path(hand, sizeof hand, "hand_landmark_lite.tflite"))
    skip();
  const char *file = tmp("pose.tgplan");
  cli_expect(0, NULL, NULL, "plan %s --strategy best --time-limit 0 --save %s", pose, file);
  struct {
    const char *model, *options, *message;
  } cases[] = {
      {hand, "", "pose_landmark_lite.tflite' (124 records, buffer fp32"},
      {hand, "", "not for these 61 records"},
      {pose, "--storage texture_2d", "--storage texture_2d conflicts with the plan file"},
      {pose, "--policy branch-local", "--policy branch-local conflicts"},
      {pose, "--plan-io", "--plan-io conflicts with the plan file"},
      {pose, "--budget 1M", "the plan needs 7635456 bytes, the budget is 1048576 (allocated nothing)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    cli_result r = cli("run %s --plan %s --backend host %s", cases[i].model, file, cases[i].options);
    assert_int_equal(r.code, 2);
    assert_string_equal(r.out, "");
    if (strstr(r.err, cases[i].message) == NULL) fail_msg("case %zu: '%s' lacks '%s'", i, r.err, cases[i].message);
    cli_free(&r);
  }
  /* Damaged: one byte changed, cut short, not a plan file at all. */
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "cp %s %s && printf '\\377' | dd of=%s bs=1 seek=3000 conv=notrunc 2>/dev/null && head -c 500 %s > %s", file,
           tmp("flipped.tgplan"), tmp("flipped.tgplan"), file, tmp("short.tgplan"));
  assert_int_equal(system(cmd), 0);
  struct {
    const char *file, *message;
  } bad[] = {{tmp("flipped.tgplan"), "checksum mismatch: the file is corrupted"},
             {tmp("short.tgplan"), "truncated: 500 of the"},
             {pose, "not a Tangram plan file"},
             {tmp("none.tgplan"), "cannot open"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    cli_result r = cli("run %s --plan %s --backend host", pose, bad[i].file);
    assert_int_equal(r.code, 2);
    if (strstr(r.err, bad[i].message) == NULL) fail_msg("'%s' lacks '%s'", r.err, bad[i].message);
    cli_free(&r);
  }
}

/* Offsets planned without the device's alignment: the device cannot place them (exit 2, naming
 * the alignment to plan with); planned with it, they run. PoCL wants 128 bytes, and hand's
 * offsets plan has offsets of 64 modulo 128. */
static void offsets_without_the_device_alignment(void **state) {
  (void)state;
  const char *hand = tg_test_cached_model("hand_landmark_lite.tflite");
  if (!tg_test_backend_usable("opencl")) skip();
  const char *file = tmp("hand_offsets.tgplan");
  cli_expect(0, NULL, NULL, "plan %s --mode offsets --strategy best --save %s", hand, file);
  cli_result r = cli("run %s --plan %s --backend opencl", hand, file);
  if (r.code == 0) {
    /* A device whose alignment this plan happens to meet: nothing to refuse. */
    assert_non_null(strstr(r.out, "0 corrupted tensors"));
    cli_free(&r);
    skip();
  }
  assert_int_equal(r.code, 2);
  assert_string_equal(r.out, "");
  assert_non_null(strstr(r.err, "the plan's offsets do not meet this device's sizes and alignments"));
  const char *hint = strstr(r.err, "plan with --alignment ");
  assert_non_null(hint);
  unsigned long long alignment = strtoull(hint + strlen("plan with --alignment "), NULL, 10);
  assert_true(alignment > 1);
  cli_free(&r);
  cli_expect(0, NULL, NULL, "plan %s --mode offsets --strategy best --alignment %llu --save %s", hand, alignment, file);
  cli_expect(0, "0 corrupted tensors", NULL, "run %s --plan %s --backend opencl", hand, file);
}

/* run --plan with the Nth device allocation failing, for every N, and with the Nth host
 * allocation failing, for N on a geometric walk: each a clean error (exit 1, a message), and in
 * sanitizer builds no leak. */
static void allocation_failures(void **state) {
  (void)state;
  const char *face = tg_test_cached_model("face_detection_short_range.tflite");
  const char *file = tmp("face_faults.tgplan");
  cli_expect(0, NULL, NULL, "plan %s --storage texture_2d --strategy best --save %s", face, file);
  int n;
  for (n = 1; n < 500; ++n) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "TANGRAM_FAIL_DEVICE_ALLOC_AT=%d %s run %s --plan %s --backend host --json", n,
             tg_test_cli(), face, file);
    char err[4096];
    int code = tg_test_run(cmd, NULL, 0, err, sizeof err);
    if (code == 0) break;
    if (code != 1 || strstr(err, "TANGRAM_FAIL_DEVICE_ALLOC_AT") == NULL)
      fail_msg("device allocation %d failing: exit %d: %s", n, code, err);
  }
  assert_true(n > 1 && n < 500);
  int host_points = 0;
  for (unsigned long long k = 1;; k = k * 3 / 2 + 1) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "TANGRAM_FAIL_HOST_ALLOC_AT=%llu %s run %s --plan %s --backend host --json", k,
             tg_test_cli(), face, file);
    char err[4096];
    int code = tg_test_run(cmd, NULL, 0, err, sizeof err);
    if (code == 0) break;
    if (code != 1 || err[0] == '\0') fail_msg("host allocation %llu failing: exit %d: %s", k, code, err);
    ++host_points;
    assert_true(k < 10000000);
  }
  print_message("run --plan: %d device and %d host allocation failure points, each a clean error\n", n - 1,
                host_points);
}

static void save_refusals_and_help(void **state) {
  (void)state;
  const char *face = tg_test_cached_model("face_detection_short_range.tflite");
  cli_expect(2, NULL, "--save does not work with --reorder", "plan %s --reorder --save %s", face, tmp("x.tgplan"));
  char csv[1024];
  tg_test_data_path(csv, sizeof csv, "records/hand_landmark_lite.tex2.csv");
  cli_expect(2, NULL, "these records are 2D; --storage buffer gives 1D records (use texture_2d", "plan %s --save %s", csv, tmp("x.tgplan"));
  cli_result r = cli_json("plan %s --storage texture_2d --save %s --json", csv, tmp("csv.tgplan"));
  tg_expect_all(r.out, "\"saved\":{\"file\":", "\"fingerprint\":\"", NULL);
  cli_free(&r);
  cli_expect(1, NULL, "/nonexistent-dir/x.tgplan: cannot create", "plan %s --save /nonexistent-dir/x.tgplan", face);
  r = cli("plan --help");
  assert_non_null(strstr(r.out, "--save FILE"));
  cli_free(&r);
  r = cli("run --help");
  assert_non_null(strstr(r.out, "--plan FILE"));
  cli_free(&r);
}

/* The in-place pairs of a plan file are checked against the pairs this model, storage and
 * device allow: elementwise pairs on images are not for OpenCL (one kernel cannot read and
 * write one image there), and a pair at an op that has no in-place form (a CONV_2D, in a file
 * that is otherwise well-formed: checksum and validator pass) is refused, naming the pair. */
static void pairs_checked_against_the_model(void **state) {
  (void)state;
  /* x -> RELU -> a -> CONV_2D -> b -> RELU -> c -> RELU -> y: the model's only pair is the
   * RELU at op 2 (b -> c); a -> b at the CONV_2D meets every rule the validator checks. */
  const char *graph = tmp("conv_pair.graph");
  FILE *f = fopen(graph, "w");
  assert_non_null(f);
  fputs("tensor x 1x8x8x4 float32 input\n"
        "tensor w 4x1x1x4 float32 constant\n"
        "tensor a 1x8x8x4 float32\n"
        "tensor b 1x8x8x4 float32\n"
        "tensor c 1x8x8x4 float32\n"
        "tensor y 1x8x8x4 float32 output\n"
        "op RELU inputs=x outputs=a\n"
        "op CONV_2D inputs=a,w outputs=b\n"
        "op RELU inputs=b outputs=c\n"
        "op RELU inputs=c outputs=y\n",
        f);
  fclose(f);
  tg_model *m = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_model_load(graph, NULL, &m, &err), TG_OK);
  tg_lifetimes *lt = NULL;
  assert_int_equal(tg_graph_compute_lifetimes(m->graph, NULL, NULL, &lt, &err), TG_OK);
  tg_model_records *mr = NULL;
  assert_int_equal(tg_model_records_create(m->graph, lt, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL, NULL, &mr, &err),
                   TG_OK);
  const tg_record_set *set = mr->records;
  assert_int_equal(set->count, 3);
  assert_string_equal(set->names[0], "a");
  assert_string_equal(set->names[1], "b");
  /* Objects by hand: a and b in object 0 (the pair), c in object 1. */
  tg_in_place_pair conv_pair = {1, 0, 1, 0};
  tg_plan *p = NULL;
  assert_int_equal(tg_plan_create(TG_MODE_OBJECTS, 1, 3, 2, NULL, &p), TG_OK);
  p->object_of[0] = p->object_of[1] = 0, p->object_of[2] = 1;
  p->object_sizes[0] = p->object_sizes[1] = set->records[0].size;
  p->total = 2 * set->records[0].size.w;
  p->strategy = TG_STRATEGY_GREEDY_BY_SIZE;
  assert_int_equal(tg_plan_set_in_place(p, &conv_pair, 1), TG_OK);
  tg_test_assert_valid(set->records, set->count, 1, p, 0, NULL);
  tg_device_limits limits = tg_device_limits_default();
  tg_plan_file_desc d = {
      .plan = p, .records = set->records, .names = (const char *const *)set->names,
      .record_count = set->count, .dims = 1, .storage = TG_STORAGE_BUFFER, .precision = TG_PRECISION_FP32,
      .policy = TG_POLICY_SERIAL, .strategy = TG_STRATEGY_GREEDY_BY_SIZE, .source = "conv_pair.graph",
      .limits = &limits
  };
  const char *file = tmp("conv_pair.tgplan");
  assert_int_equal(tg_plan_file_save(&d, file, NULL, &err), TG_OK);
  tg_plan_destroy(p);
  tg_model_records_destroy(mr);
  tg_lifetimes_destroy(lt);
  tg_model_destroy(m);
  cli_result r = cli("run %s --plan %s --backend host", graph, file);
  if (r.code != 2) fail_msg("a pair at a CONV_2D: exit %d, stdout %.200s", r.code, r.out);
  assert_string_equal(r.out, "");
  tg_expect_all(r.err, "in-place pair at op 1 (CONV_2D): a -> b", "CONV_2D has no in-place form", NULL);
  cli_free(&r);
  /* A model's own pairs, saved by plan --in-place, run: three RELUs in a row share one buffer. */
  const char *chain = tmp("relu_chain.graph");
  f = fopen(chain, "w");
  assert_non_null(f);
  fputs("tensor x 1x8x8x4 float32 input\n"
        "tensor a 1x8x8x4 float32\n"
        "tensor b 1x8x8x4 float32\n"
        "tensor c 1x8x8x4 float32\n"
        "tensor y 1x8x8x4 float32 output\n"
        "op RELU inputs=x outputs=a\n"
        "op RELU inputs=a outputs=b\n"
        "op RELU inputs=b outputs=c\n"
        "op RELU inputs=c outputs=y\n",
        f);
  fclose(f);
  cli_expect(0, "\"in_place\":[{\"op\":1,", NULL, "plan %s --in-place --strategy greedy-by-size --save %s --json", chain, file);
  r = cli("run %s --plan %s --backend host --json", chain, file);
  if (r.code != 0) fail_msg("the model's own pairs: exit %d: %s", r.code, r.err);
  assert_non_null(strstr(r.out, "\"in_place\":[{\"op\":1,"));
  assert_int_equal(tg_test_json_u64(r.out, "planned_bytes"), 1024);
  cli_free(&r);

  /* A texture plan saved with --in-place holds elementwise pairs: fine on the host, refused
   * on OpenCL, naming the pair. */
  const char *face = tg_test_cached_model("face_detection_short_range.tflite");
  const char *tex = tmp("face_in_place.tgplan");
  cli_expect(0, "\"in_place\":[{\"op\":", NULL, "plan %s --storage texture_2d --in-place --strategy greedy-by-size --save %s --json", face, tex);
  r = cli("run %s --plan %s --backend host --json", face, tex);
  if (r.code != 0) fail_msg("texture pairs on the host: exit %d: %s", r.code, r.err);
  assert_int_equal(tg_test_json_u64(r.out, "corrupted_tensors"), 0);
  cli_free(&r);
  if (!tg_test_backend_usable("opencl")) return;
  r = cli("run %s --plan %s --backend opencl", face, tex);
  if (r.code != 2) fail_msg("elementwise texture pairs on OpenCL: exit %d, stdout %.200s", r.code, r.out);
  assert_string_equal(r.out, "");
  tg_expect_all(r.err, "in-place pair at op ", "this device cannot read and write one image in one kernel", NULL);
  cli_free(&r);
}

TG_TEST_MAIN_FIXTURES(setup, teardown,
                      cmocka_unit_test(run_on_host),
                      cmocka_unit_test(run_on_opencl),
                      cmocka_unit_test(run_on_vulkan),
                      cmocka_unit_test(refusals),
                      cmocka_unit_test(offsets_without_the_device_alignment),
                      cmocka_unit_test(allocation_failures),
                      cmocka_unit_test(save_refusals_and_help),
                      cmocka_unit_test(pairs_checked_against_the_model))
