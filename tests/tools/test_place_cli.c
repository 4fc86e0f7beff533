/* `--place` and `--place-file` on plan, evaluate, schedule and run: the JSON contract (keys,
 * spaces checked against the placement independently), the text, the default (no --place)
 * untouched, and clear errors with exit code 2 for bad input. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"
#include "support/tg_tools_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/place_json.h"

static const char *model(char *buf, size_t size, const char *name) {
  char file[128];
  snprintf(file, sizeof file, "%s.tflite", name);
  return tg_test_model_path(buf, size, file);
}

static void require_ok(const cli_result *r, const char *what) {
  if (r->code != 0) fail_msg("%s: exit %d: %s", what, r->code, r->err);
  if (r->out[0] == '{' && !tg_test_json_valid(r->out)) fail_msg("%s: invalid JSON", what);
}

/* Every key the heterogeneous reports promise. */
static void assert_keys(const char *json) {
  static const char *const keys[] = {"\"placement_of\":[", "\"spaces\":[", "\"zero_copy_tensors\":[",
                                     "\"copies_avoided_bytes\":", "\"space_of\":[", "\"producer_of\":[",
                                     "\"consumers_of\":[", "\"total\":", "\"lower_bound\":", "\"allocations\":",
                                     "\"waits_added\":", "\"bytes_saved\":", "\"baseline\":{"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; ++i)
    if (strstr(json, keys[i]) == NULL) fail_msg("missing %s", keys[i]);
}

static void contract(void **state) {
  (void)state;
  char path[1024];
  if (model(path, sizeof path, "selfie_segmentation") == NULL) skip();
  static const char *const commands[] = {"plan", "schedule", "evaluate", "run --backend host"};
  for (size_t c = 0; c < 4; ++c) {
    cli_result r = cli("%s %s --place auto --json", commands[c], path);
    require_ok(&r, commands[c]);
    assert_keys(r.out);
    /* The default profile: one custom op on the CPU, its input and output shared. */
    assert_int_equal(pj_int(r.out, "cpu_ops"), 1);
    assert_non_null(strstr(r.out, "\"space\":\"shared\",\"records\":2,"));
    assert_int_equal(pj_check_spaces(r.out), 2);
    assert_int_equal(pj_int(r.out, "copies_avoided"), 2);
    assert_true(pj_int(r.out, "copies_avoided_bytes") > 0);
    assert_int_equal(pj_int(r.out, "waits_added"), 2);
    cli_free(&r);
  }
  /* Text. */
  cli_result r = cli("plan %s --place auto", path);
  require_ok(&r, "plan text");
  tg_expect_all(r.out, "245 ops on the gpu, 1 on the cpu", "zero-copy tensors (shared memory): 2",
                "partition by partition", NULL);
  cli_free(&r);
  r = cli("plan %s --place auto --storage texture_2d", path);
  require_ok(&r, "plan textures");
  assert_non_null(strstr(r.out, "2 of them are buffers, not texture_2d images: an image cannot be mapped"));
  cli_free(&r);
  r = cli("run %s --backend host --place auto --out-of-order", path);
  require_ok(&r, "run text");
  assert_non_null(strstr(r.out, "On-device check (out of order): 0 corrupted tensors"));
  cli_free(&r);
  r = cli("schedule %s --place auto", path);
  require_ok(&r, "schedule text");
  assert_non_null(strstr(r.out, "(Convolution2DTransposeBias, cpu) after op"));
  cli_free(&r);
}

/* Everything on the GPU: the device space holds every record, and its total is the plan's total
 * without --place, for buffers and textures, both modes where they exist. */
static void all_gpu_matches_default(void **state) {
  (void)state;
  char path[1024];
  if (model(path, sizeof path, "pose_landmark_lite") == NULL) skip();
  static const char *const storages[] = {"buffer", "texture_2d", "texture_3d"};
  for (size_t s = 0; s < 3; ++s)
    for (int mode = 0; mode < (s == 0 ? 2 : 1); ++mode) {
      const char *m = mode ? "offsets" : "objects";
      cli_result a = cli("plan %s --storage %s --mode %s --strategy best --time-limit 0 --json", path, storages[s], m);
      cli_result b = cli("plan %s --storage %s --mode %s --strategy best --time-limit 0 --place gpu --json", path,
                         storages[s], m);
      require_ok(&a, "plan");
      require_ok(&b, "plan --place gpu");
      /* The plain plan: "results":[{... "total":T ...}]; texels for textures. */
      long long total = pj_int(pj_key(a.out, "results"), "total");
      long long texel = s == 0 ? 1 : 16;
      const char *dev = strstr(b.out, "{\"space\":\"device\"");
      assert_non_null(dev);
      assert_int_equal(pj_int(dev, "total"), total * texel);
      assert_int_equal(pj_int(b.out, "copies_avoided_bytes"), 0);
      assert_int_equal(pj_int(b.out, "bytes_saved"), 0);
      assert_non_null(strstr(b.out, "\"zero_copy_tensors\":[]"));
      assert_int_equal(pj_check_spaces(b.out), 0);
      cli_free(&a);
      cli_free(&b);
    }
}

static void place_file_and_every_op_on_cpu(void **state) {
  (void)state;
  char path[1024];
  if (model(path, sizeof path, "face_detection_short_range") == NULL) skip();
  char file[] = "/tmp/tg_place_cli_XXXXXX";
  int fd = mkstemp(file);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs("# the two first scheduled ops on the CPU, then every CONV_2D\n74 cpu\n75 -> cpu\nCONV_2D=cpu\n", f);
  fclose(f);
  cli_result r = cli("plan %s --place-file %s --json", path, file);
  require_ok(&r, "place file");
  assert_true(pj_check_spaces(r.out) > 0);
  long long cpu = pj_int(r.out, "cpu_ops");
  assert_true(cpu >= 21);
  assert_non_null(strstr(r.out, "\"place\":null"));
  cli_free(&r);
  /* --place then --place-file: the file wins where it says something. */
  r = cli("plan %s --place cpu:* --place-file %s --json", path, file);
  require_ok(&r, "place + file");
  assert_int_equal(pj_int(r.out, "cpu_ops"), pj_int(r.out, "ops"));
  tg_expect_all(r.out, "\"space\":\"host\",\"records\":", "\"space\":\"device\",\"records\":0,",
                "\"space\":\"shared\",\"records\":0,", NULL);
  cli_free(&r);
  unlink(file);
}

static void errors(void **state) {
  (void)state;
  char path[1024], csv[1024];
  if (model(path, sizeof path, "hand_landmark_lite") == NULL) skip();
  tg_test_data_path(csv, sizeof csv, "records/selfie_segmentation.buffer.csv");
  static const struct {
    const char *args;
    const char *says;
  } bad[] = {
      {"plan %s --place everything", "expected auto, gpu, or cpu:TYPE"},
      {"plan %s --place cpu:CONV2D", "no op of the graph has type 'CONV2D'"},
      {"plan %s --place-file /nonexistent/place.txt", "/nonexistent/place.txt"},
      {"run %s --backend host --place auto --svg /tmp/x.svg", "--svg does not combine with --place"},
      {"plan %s --place auto --policy all", "--place does not combine"},
      {"plan %s --place auto --reorder", "--place does not combine"},
      {"evaluate %s --place auto --policy all", "--place does not combine"},
      {"schedule %s --place auto --all-ops", "--place does not combine"},
      {"plan %s --place auto --mode offsets --strategy equality", "exists only in objects mode"},
      {"plan %s --place auto --mode offsets --storage texture_2d", "offsets mode needs 1D records"},
      {"plan %s --place", "option --place needs a value"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    cli_result r = cli(bad[i].args, path);
    if (r.code != 2) fail_msg("'%s': exit %d (want 2): %s", bad[i].args, r.code, r.err);
    if (strstr(r.err, bad[i].says) == NULL) fail_msg("'%s': %s", bad[i].args, r.err);
    assert_string_equal(r.out, "");
    cli_free(&r);
  }
  cli_expect(2, NULL, "--place needs a model's graph", "plan %s --place auto", csv);
  /* A place file with a bad line: exit 2, the line named. */
  char file[] = "/tmp/tg_place_bad_XXXXXX";
  int fd = mkstemp(file);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs("0 cpu\n1 cpu\n99999 cpu\n", f);
  fclose(f);
  cli_result r = cli("run %s --backend host --place-file %s", path, file);
  assert_int_equal(r.code, 2);
  char want[128];
  snprintf(want, sizeof want, "%s:3: op 99999 is out of range", file);
  if (strstr(r.err, want) == NULL) fail_msg("%s", r.err);
  cli_free(&r);
  unlink(file);
  /* Help mentions the options. */
  static const char *const cmds[] = {"plan", "evaluate", "schedule", "run"};
  for (size_t c = 0; c < 4; ++c) {
    r = cli("%s --help", cmds[c]);
    assert_int_equal(r.code, 0);
    tg_expect_all(r.out, "--place auto|gpu|cpu:TYPE", "--place-file FILE", NULL);
    cli_free(&r);
  }
}

/* A budget too small for the shared space. */
static void budget(void **state) {
  (void)state;
  char path[1024];
  if (model(path, sizeof path, "selfie_segmentation") == NULL) skip();
  cli_result r = cli("run %s --backend host --place auto --budget 1K", path);
  assert_int_equal(r.code, 1);
  tg_expect_all(r.err, "nothing fits", "the budget is 1024", NULL);
  assert_string_equal(r.out, "");
  cli_free(&r);
}

TG_TEST_MAIN(cmocka_unit_test(contract), cmocka_unit_test(all_gpu_matches_default),
             cmocka_unit_test(place_file_and_every_op_on_cpu), cmocka_unit_test(errors),
             cmocka_unit_test(budget))
