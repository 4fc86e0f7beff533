/* `tangram evaluate --speed`: the JSON contract (a speed object per timed result, the
 * recommendation), bytes equal to the evaluation without --speed, the memory-versus-time
 * chart, and bad requests refused with exit 2. Timing runs need an OpenCL device (PoCL on
 * CI); without one they are skipped loudly outside CI. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"
#include "support/tg_tools_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *graph_path(void) {
  static char buf[1024];
  return tg_test_data_path(buf, sizeof buf, "graphs/speed.graph");
}

/* The "bytes" values of the "results" array, in order, into v (returns how many). */
static size_t result_bytes(const char *json, uint64_t *v, size_t cap) {
  const char *start = strstr(json, "\"results\":[");
  const char *end = strstr(json, "\"skipped\":[");
  assert_non_null(start);
  assert_non_null(end);
  size_t n = 0;
  for (const char *p = strstr(start, "\"bytes\":"); p && p < end && n < cap; p = strstr(p + 1, "\"bytes\":"))
    v[n++] = strtoull(p + 8, NULL, 10);
  return n;
}

static double field(const char *from, const char *key) {
  const char *p = strstr(from, key);
  assert_non_null(p);
  return strtod(p + strlen(key), NULL);
}

/* The speed object of the result row starting at `row` (NULL when the row was not timed). */
static const char *speed_of(const char *row) {
  const char *next = strstr(row + 1, "{\"storage\":");
  const char *sp = strstr(row, "\"speed\":{");
  return sp && (next == NULL || sp < next) ? sp : NULL;
}

static void speed_json_contract(void **state) {
  (void)state;
  cli_result plain = cli("evaluate %s --json", graph_path());
  assert_int_equal(plain.code, 0);
  cli_result r = cli("evaluate %s --json --speed --repeat 2", graph_path());
  if (r.code == 1 && strstr(r.err, "OpenCL") && !tg_test_in_ci()) {
    fprintf(stderr, "*** SKIPPING: no OpenCL device: %s ***\n", r.err);
    cli_free(&plain);
    cli_free(&r);
    skip();
  }
  if (r.code != 0) fail_msg("evaluate --speed failed (%d): %s", r.code, r.err);
  assert_true(tg_test_json_valid(r.out));
  /* Planned bytes: the same as without --speed, row for row. */
  uint64_t a[512], b[512];
  size_t na = result_bytes(plain.out, a, 512), nb = result_bytes(r.out, b, 512);
  assert_true(na > 0);
  assert_int_equal(na, nb);
  for (size_t i = 0; i < na; ++i) assert_int_equal(a[i], b[i]);
  /* Every speed object: min <= median <= max, > 0, repeats 2, the five classes. */
  size_t timed = 0;
  for (const char *p = strstr(r.out, "\"speed\":{"); p; p = strstr(p + 1, "\"speed\":{")) {
    double med = field(p, "\"median_ms\":"), lo = field(p, "\"min_ms\":"), hi = field(p, "\"max_ms\":");
    assert_true(lo > 0.0);
    assert_true(lo <= med && med <= hi);
    assert_int_equal((int)field(p, "\"repeats\":"), 2);
    const char *pc = strstr(p, "\"per_class\":{");
    assert_non_null(pc);
    static const char *const classes[] = {"\"elementwise\":", "\"stencil\":", "\"channel_mixing\":",
                                          "\"reduction\":", "\"copy\":"};
    for (int c = 0; c < 5; ++c) assert_true(field(pc, classes[c]) > 0.0);
    ++timed;
  }
  /* Each storage's best per mode, in results and again in best_per_storage: buffer and
   * image_buffer in both modes at least. */
  assert_true(timed >= 4);
  const char *rec = strstr(r.out, "\"speed_recommendation\":{\"fastest\":{\"storage\":\"");
  assert_non_null(rec);
  assert_non_null(strstr(rec, "\"smallest\":{\"storage\":\""));
  /* Storages the device cannot realise in a mode are named skips with a reason. */
  assert_non_null(strstr(r.out, "\"speed_skipped\":["));
  cli_free(&plain);
  cli_free(&r);

  /* Text: the table and the recommendation; --svg-dir adds the chart. */
  const char *dir = "/tmp/tg_speed_cli_svg";
  mkdir(dir, 0755);
  remove("/tmp/tg_speed_cli_svg/speed.speed.svg");
  r = cli("evaluate %s --speed --repeat 1 --svg-dir %s", graph_path(), dir);
  assert_int_equal(r.code, 0);
  tg_expect_all(r.out, "median ms", "fastest", NULL);
  cli_free(&r);
  FILE *f = fopen("/tmp/tg_speed_cli_svg/speed.speed.svg", "rb");
  assert_non_null(f);
  char head[64] = {0};
  assert_true(fread(head, 1, sizeof head - 1, f) > 0);
  fclose(f);
  assert_non_null(strstr(head, "<svg"));
}

static void bad_requests_exit_2(void **state) {
  (void)state;
  static const struct {
    const char *args, *message;
  } cases[] = {
      {"--speed --repeat 0", "--repeat must be a whole number from 1"},
      {"--speed --repeat x", "--repeat must be a whole number from 1"},
      {"--speed --backend metal", "--backend must be opencl or vulkan, not 'metal'"},
      {"--repeat 3", "need --speed"},
      {"--speed --policy all", "--speed times serial plans"},
      {"--profile x.profile", "need --speed"},
      {"--speed --profile x.profile --repeat 3", "does not combine"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    cli_result r = cli("evaluate %s %s", graph_path(), cases[i].args);
    if (r.code != 2 || strstr(r.err, cases[i].message) == NULL)
      fail_msg("'%s': exit %d, stderr '%s'", cases[i].args, r.code, r.err);
    assert_string_equal(r.out, "");
    cli_free(&r);
  }
  char rec[1024];
  cli_expect(2, NULL, "--speed needs a model", "evaluate %s --speed", tg_test_data_path(rec, sizeof rec, "records/pose_landmark_lite.buffer.csv"));
}

/* probe --save, then evaluate --speed --profile: estimated times without a device, and bad
 * profiles refused with exit 2 and the reason. */
static void probe_and_profile(void **state) {
  (void)state;
  const char *file = "/tmp/tg_speed_cli.profile";
  remove(file);
  cli_result r = cli("probe --repeat 1 --save %s --json", file);
  if (r.code == 1 && !tg_test_in_ci()) {
    fprintf(stderr, "*** SKIPPING: no OpenCL device: %s ***\n", r.err);
    cli_free(&r);
    skip();
  }
  if (r.code != 0) fail_msg("probe failed (%d): %s", r.code, r.err);
  assert_true(tg_test_json_valid(r.out));
  const char *bw = strstr(r.out, "\"bandwidth_gbps\":{\"buffer\":{\"linear\":");
  assert_non_null(bw);
  assert_true(field(bw, "\"linear\":") > 0.0);
  /* Image buffers are measured as such (PoCL has image1d_buffer). */
  const char *ib = strstr(r.out, "\"image_buffer\":{\"linear\":");
  assert_non_null(ib);
  assert_true(field(ib, "\"linear\":") > 0.0);
  assert_true(field(ib, "\"channel_strided\":") > 0.0);
  assert_non_null(strstr(r.out, "\"alignments\":{\"buffer\":"));
  cli_free(&r);
  r = cli_json("evaluate %s --json --speed --profile %s", graph_path(), file);
  assert_non_null(strstr(r.out, "\"speed_estimated\":true"));
  size_t n = 0;
  for (const char *p = strstr(r.out, "\"speed\":{"); p; p = strstr(p + 1, "\"speed\":{")) {
    const char *end = strchr(p, '}');
    const char *est = strstr(p, "\"estimated\":true");
    assert_true(est != NULL && est < end);
    assert_true(field(p, "\"median_ms\":") > 0.0);
    ++n;
  }
  assert_true(n >= 4);
  cli_free(&r);
  /* The estimate prices the plan's storages: at a 1x1 texture limit every tensor of a texture
   * storage falls to image buffers, and costs what the image_buffer row costs. */
  r = cli("evaluate %s --json --speed --profile %s --max-texture-size 1x1", graph_path(), file);
  if (r.code != 0) fail_msg("evaluate --profile --max-texture-size failed (%d): %s", r.code, r.err);
  const char *ib_row = strstr(r.out, "{\"storage\":\"image_buffer\",\"mode\":\"objects\"");
  const char *t2_row = strstr(r.out, "{\"storage\":\"texture_2d\",\"mode\":\"objects\"");
  assert_non_null(ib_row);
  assert_non_null(t2_row);
  double ib_ms = -1, t2_ms = -2;
  for (const char *row = ib_row; row && ib_ms < 0; row = strstr(row + 1, "{\"storage\":\"image_buffer\""))
    if (speed_of(row)) ib_ms = field(speed_of(row), "\"median_ms\":");
  for (const char *row = t2_row; row && t2_ms < 0; row = strstr(row + 1, "{\"storage\":\"texture_2d\""))
    if (speed_of(row)) t2_ms = field(speed_of(row), "\"median_ms\":");
  if (!(ib_ms > 0 && ib_ms == t2_ms)) fail_msg("image_buffer %.6f ms, texture_2d falling to image buffers %.6f ms", ib_ms, t2_ms);
  cli_free(&r);
  /* A cut profile and one of another version: exit 2 with the reason. */
  FILE *f = fopen(file, "rb");
  assert_non_null(f);
  char text[8192];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = '\0';
  f = fopen("/tmp/tg_speed_cli_cut.profile", "wb");
  fwrite(text, 1, len / 2, f);
  fclose(f);
  r = cli("evaluate %s --speed --profile /tmp/tg_speed_cli_cut.profile", graph_path());
  assert_int_equal(r.code, 2);
  tg_expect_all(r.err, "cut short", "tg_speed_cli_cut.profile", NULL);
  cli_free(&r);
  char *v = strstr(text, "tangram-profile 2");
  assert_non_null(v);
  v[16] = '7';
  f = fopen("/tmp/tg_speed_cli_v7.profile", "wb");
  fwrite(text, 1, len, f);
  fclose(f);
  cli_expect(2, NULL, "profile version 7", "evaluate %s --speed --profile /tmp/tg_speed_cli_v7.profile", graph_path());
  cli_expect(2, NULL, NULL, "evaluate %s --speed --profile /nonexistent/x.profile", graph_path());
}

/* Each timed row times the plan whose bytes it shows (the search's plan, its in-place pairs,
 * its arenas under --max-allocation, its fallback groups under --max-texture-size), or says
 * what the timed plan changes and what it takes. */
static void times_the_reported_plan(void **state) {
  (void)state;
  static const char *const options[] = {"--in-place --max-allocation 4K", "--max-texture-size 8x8", ""};
  for (size_t o = 0; o < sizeof options / sizeof options[0]; ++o) {
    cli_result r = cli("evaluate %s --json --speed --repeat 1 %s", graph_path(), options[o]);
    if (r.code == 1 && strstr(r.err, "OpenCL") && !tg_test_in_ci()) {
      fprintf(stderr, "*** SKIPPING: no OpenCL device: %s ***\n", r.err);
      cli_free(&r);
      skip();
    }
    if (r.code != 0) fail_msg("evaluate --speed %s: exit %d: %s", options[o], r.code, r.err);
    assert_true(tg_test_json_valid(r.out));
    const char *results = strstr(r.out, "\"results\":[");
    const char *end = strstr(r.out, "\"skipped\":[");
    size_t timed = 0, exact = 0, exact_objects = 0;
    for (const char *row = strstr(results, "{\"storage\":"); row && row < end; row = strstr(row + 1, "{\"storage\":")) {
      const char *sp = speed_of(row);
      if (sp == NULL || sp > end) continue;
      ++timed;
      const int objects = strncmp(strstr(row, "\"mode\":"), "\"mode\":\"objects\"", 16) == 0;
      const uint64_t bytes = tg_test_json_u64(row, "bytes"), realised = tg_test_json_u64(sp, "realised_bytes");
      const char *how = strstr(sp, "\"timed_plan\":\"");
      if (how == NULL) fail_msg("%s: a timed row without timed_plan: %.300s", options[o], row);
      if (strncmp(how, "\"timed_plan\":\"exact\"", 20) == 0) {
        ++exact;
        exact_objects += objects;
        if (objects && realised != bytes)
          fail_msg("%s: %.60s: timed %llu bytes for a row of %llu", options[o], row, (unsigned long long)realised,
                   (unsigned long long)bytes);
        assert_int_equal(tg_test_json_u64(sp, "timed_bytes"), bytes);
        assert_int_equal(tg_test_json_u64(sp, "allocations"),
                         objects ? tg_test_json_u64(row, "objects") : tg_test_json_u64(row, "arenas"));
      } else {
        assert_true(strlen(how) > strlen("\"timed_plan\":\"x\""));
        (void)tg_test_json_u64(sp, "timed_bytes");
      }
    }
    print_message("%s: %zu rows timed, %zu the exact plan (%zu objects)\n", options[o][0] ? options[o] : "defaults",
                  timed, exact, exact_objects);
    assert_true(timed >= 4);
    assert_true(exact_objects >= 2); /* buffer and image_buffer objects at least */
    cli_free(&r);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bad_requests_exit_2),
      cmocka_unit_test(speed_json_contract),
      cmocka_unit_test(probe_and_profile),
      cmocka_unit_test(times_the_reported_plan),
  };
  return cmocka_run_group_tests_name("speed_cli", tests, NULL, NULL);
}
