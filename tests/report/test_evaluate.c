/* Evaluation of every storage x mode x strategy: on a small graph with fallbacks, on usage
 * records, on every public model (library and `tangram evaluate`), under the reuse policies,
 * and under allocation failures. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"
#include "support/tg_tools_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_checks.h"
#include "tangram/model.h"
#include "tangram/report.h"

static const char *const k_models[] = {"selfie_segmentation.tflite", "face_detection_short_range.tflite",
                                       "hand_landmark_lite.tflite", "pose_landmark_lite.tflite"};

/* A small branchy graph: conv outputs of 32 channels cannot be single_texture_2d, and `wide`
 * (1 x 1 x 20000 x 4) is wider than a 2D texture may be (8192), so it falls back everywhere
 * but in buffers and image buffers. */
static const char k_graph[] =
    "tensor in      1x16x16x4   float32 input\n"
    "tensor w       32x1x1x4    float32 constant\n"
    "tensor a       1x16x16x32  float32\n"
    "tensor b       1x16x16x4   float32\n"
    "tensor c       1x16x16x4   float32\n"
    "tensor wide    1x1x20000x4 float32\n"
    "tensor d       1x16x16x4   float32\n"
    "tensor e       1x16x16x32  float32\n"
    "tensor out     1x16x16x4   float32 output\n"
    "op conv  inputs=in,w  outputs=a\n"
    "op left  inputs=a     outputs=b\n"
    "op right inputs=a     outputs=c\n"
    "op widen inputs=c     outputs=wide\n"
    "op narrow inputs=wide outputs=d\n"
    "op add   inputs=b,d   outputs=e\n"
    "op head  inputs=e     outputs=out\n";

static tg_graph *small_graph(void) {
  tg_graph *g = NULL;
  tg_error_info err = {{0}};
  if (tg_graph_parse_text(k_graph, strlen(k_graph), "small.graph", NULL, &g, &err) != TG_OK)
    fail_msg("%s", err.message);
  return g;
}

static const tg_evaluation_result *find(const tg_evaluation *ev, tg_storage s, tg_mode m, tg_strategy st) {
  for (size_t i = 0; i < ev->result_count; ++i)
    if (ev->results[i].storage == s && ev->results[i].mode == m && ev->results[i].strategy == st)
      return &ev->results[i];
  return NULL;
}

/* Every non-skipped result valid, bytes >= bound, each storage's view a valid 1D plan that
 * adds up to the result's bytes. */
static void check_evaluation(const tg_evaluation *ev, int allow_skips) {
  size_t expect = ev->from_records ? 1 : TG_STORAGE_COUNT;
  /* objects: 6 TFLite strategies, beam, greedy-coloring + best; offsets: 4 TFLite strategies,
   * beam, allocation-tree, greedy-by-conflicts, hill-climb + best */
  assert_int_equal(ev->result_count, expect * 18);
  for (size_t i = 0; i < ev->result_count; ++i) {
    const tg_evaluation_result *r = &ev->results[i];
    if (r->skipped) {
      /* Mini-Infer's colouring sizes pools in bytes: 1D records only. */
      if (r->strategy == TG_STRATEGY_GREEDY_COLORING && r->mode == TG_MODE_OBJECTS &&
          r->storage != TG_STORAGE_BUFFER)
        continue;
      if (!allow_skips) fail_msg("%s %s %s skipped: %s", tg_storage_name(r->storage), tg_mode_name(r->mode),
                                 tg_strategy_name(r->strategy), r->skip_reason);
      continue;
    }
    if (!r->valid) fail_msg("%s %s %s invalid: %s", tg_storage_name(r->storage), tg_mode_name(r->mode),
                            tg_strategy_name(r->strategy), r->invalid_reason);
    assert_true(r->bytes >= r->lower_bound_bytes);
    assert_true(r->objects >= 1 || ev->record_count == 0);
  }
  for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
    size_t i = ev->best_of_storage[s];
    if (i == TG_EVALUATION_NONE) continue;
    const tg_evaluation_result *best = &ev->results[i];
    for (size_t j = 0; j < ev->result_count; ++j)
      if (ev->results[j].storage == (tg_storage)s && !ev->results[j].skipped)
        assert_true(best->bytes <= ev->results[j].bytes);
    tg_report_view v;
    assert_int_equal(tg_evaluation_get_view(ev, i, &v), TG_OK);
    assert_int_equal(v.count, ev->record_count);
    assert_int_equal(v.plan->total, best->bytes);
    assert_int_equal(v.lower_bound, best->lower_bound_bytes);
    if (ev->policy == TG_POLICY_SERIAL) tg_test_assert_valid(v.records, v.count, 1, v.plan, 0, NULL);
    size_t fallback = 0;
    for (size_t r = 0; r < v.count; ++r) fallback += v.storage_of[r] != (tg_storage)s;
    assert_int_equal(fallback, best->fallback_tensors);
    assert_int_equal(v.primary_count, v.count - fallback);
  }
  if (ev->recommended != TG_EVALUATION_NONE)
    for (int s = 0; s < TG_STORAGE_COUNT; ++s)
      if (ev->best_of_storage[s] != TG_EVALUATION_NONE)
        assert_true(ev->results[ev->recommended].bytes <= ev->results[ev->best_of_storage[s]].bytes);
  assert_int_not_equal(ev->recommended_objects, TG_EVALUATION_NONE);
  const tg_evaluation_result *ro = &ev->results[ev->recommended_objects];
  assert_int_equal(ro->mode, TG_MODE_OBJECTS);
  for (size_t i = 0; i < ev->result_count; ++i)
    if (ev->results[i].mode == TG_MODE_OBJECTS && !ev->results[i].skipped)
      assert_true(ro->bytes <= ev->results[i].bytes);
  /* Only the best rows have views. */
  for (size_t i = 0; i < ev->result_count; ++i) {
    tg_report_view v;
    if (ev->best_of_storage[ev->results[i].storage] != i)
      assert_int_equal(tg_evaluation_get_view(ev, i, &v), TG_ERROR_INVALID_ARGUMENT);
  }
}

/* The fallback chain: with 2 layers, the 32-channel tensors (8 layers) of texture_3d and
 * texture_array fall to 2D textures and `wide` (20000 texels wide) to an image buffer; every
 * group is planned in its own storage and counted in the bytes. */
static void small_graph_fallback_chain(void **state) {
  (void)state;
  tg_graph *g = small_graph();
  tg_device_limits lim = tg_device_limits_default();
  lim.max_texture_3d_depth = lim.max_texture_array_layers = 2;
  tg_evaluation_options opt;
  memset(&opt, 0, sizeof opt);
  opt.limits = &lim;
  tg_evaluation *ev = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_evaluation_create_from_graph(g, &opt, NULL, &ev, &err), TG_OK);
  check_evaluation(ev, 0);
  size_t to[TG_STORAGE_COUNT][TG_STORAGE_COUNT] = {{0}};
  for (size_t j = 0; j < ev->fallback_count; ++j) to[ev->fallbacks[j].storage][ev->fallbacks[j].to]++;
  for (int s = TG_STORAGE_TEXTURE_ARRAY; s <= TG_STORAGE_TEXTURE_3D; ++s) {
    assert_int_equal(to[s][TG_STORAGE_TEXTURE_2D], 2); /* a, e */
    assert_int_equal(to[s][TG_STORAGE_IMAGE_BUFFER], 1); /* wide */
    assert_int_equal(to[s][TG_STORAGE_BUFFER], 0);
    /* Naive offsets and objects: every tensor its own slot, whichever storage it fell to. */
    assert_int_equal(find(ev, (tg_storage)s, TG_MODE_OFFSETS, TG_STRATEGY_NAIVE)->bytes, 3 * 4096 + 2 * 32768 + 320000);
    assert_int_equal(find(ev, (tg_storage)s, TG_MODE_OBJECTS, TG_STRATEGY_NAIVE)->bytes, 3 * 4096 + 2 * 32768 + 320000);
    assert_int_equal(find(ev, (tg_storage)s, TG_MODE_OBJECTS, TG_STRATEGY_NAIVE)->objects, 6);
    /* The view: primary tensors, then the 2D textures, then the image buffer. */
    tg_report_view v;
    assert_int_equal(tg_evaluation_get_view(ev, ev->best_of_storage[s], &v), TG_OK);
    assert_int_equal(v.primary_count, 3);
    assert_int_equal(v.storage_of[3], TG_STORAGE_TEXTURE_2D);
    assert_int_equal(v.storage_of[4], TG_STORAGE_TEXTURE_2D);
    assert_int_equal(v.storage_of[5], TG_STORAGE_IMAGE_BUFFER);
  }
  /* texture_2d and single_texture_2d never fall to texture_2d. */
  assert_int_equal(to[TG_STORAGE_TEXTURE_2D][TG_STORAGE_IMAGE_BUFFER], 1);
  assert_int_equal(to[TG_STORAGE_SINGLE_TEXTURE_2D][TG_STORAGE_IMAGE_BUFFER], 3);
  assert_int_equal(to[TG_STORAGE_SINGLE_TEXTURE_2D][TG_STORAGE_TEXTURE_2D], 0);
  tg_evaluation_destroy(ev);
  /* no_fallback: the storages where a tensor does not fit give skipped rows only. */
  opt.no_fallback = 1;
  assert_int_equal(tg_evaluation_create_from_graph(g, &opt, NULL, &ev, &err), TG_OK);
  for (size_t i = 0; i < ev->result_count; ++i) {
    const tg_evaluation_result *r = &ev->results[i];
    int falls = r->storage != TG_STORAGE_BUFFER && r->storage != TG_STORAGE_IMAGE_BUFFER;
    if (falls) assert_true(r->skipped && strstr(r->skip_reason, "no fallback") != NULL);
    else if (r->skipped) assert_null(strstr(r->skip_reason, "no fallback"));
  }
  assert_int_equal(ev->best_of_storage[TG_STORAGE_TEXTURE_3D], TG_EVALUATION_NONE);
  assert_int_not_equal(ev->best_of_storage[TG_STORAGE_BUFFER], TG_EVALUATION_NONE);
  tg_evaluation_destroy(ev);
  tg_graph_destroy(g);
}

static void small_graph_with_fallbacks(void **state) {
  (void)state;
  tg_graph *g = small_graph();
  tg_evaluation *ev = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_evaluation_create_from_graph(g, NULL, NULL, &ev, &err), TG_OK);
  check_evaluation(ev, 0);
  assert_int_equal(ev->tensor_count, 9);
  assert_int_equal(ev->op_count, 7);
  assert_int_equal(ev->record_count, 6);  /* a b c wide d e */
  /* single_texture_2d: a and e (C=32) and wide; texture_2d/array/3d: wide only. */
  size_t per[TG_STORAGE_COUNT] = {0};
  for (size_t j = 0; j < ev->fallback_count; ++j) {
    per[ev->fallbacks[j].storage]++;
    assert_non_null(ev->fallbacks[j].name);
    assert_non_null(ev->fallbacks[j].reason);
    assert_true(strlen(ev->fallbacks[j].reason) > 0);
  }
  assert_int_equal(per[TG_STORAGE_BUFFER], 0);
  assert_int_equal(per[TG_STORAGE_IMAGE_BUFFER], 0);
  assert_int_equal(per[TG_STORAGE_TEXTURE_2D], 1);
  assert_int_equal(per[TG_STORAGE_TEXTURE_3D], 1);
  assert_int_equal(per[TG_STORAGE_SINGLE_TEXTURE_2D], 3);
  const tg_evaluation_result *r = find(ev, TG_STORAGE_SINGLE_TEXTURE_2D, TG_MODE_OFFSETS, TG_STRATEGY_NAIVE);
  assert_non_null(r);
  assert_int_equal(r->fallback_tensors, 3);
  /* Naive offsets: every tensor its own slot, so bytes = all tensor bytes. Buffer bytes of a
   * 1x16x16x4 fp32 tensor: 4096; of 32 channels: 32768; wide: 320000. */
  assert_int_equal(r->bytes, 3 * 4096 + 2 * 32768 + 320000);
  const tg_evaluation_result *bo = find(ev, TG_STORAGE_BUFFER, TG_MODE_OFFSETS, TG_STRATEGY_BEST);
  assert_int_equal(bo->bytes, bo->lower_bound_bytes);
  /* Texture bytes are texels x 16: texture_2d naive objects = naive buffer bytes here (every
   * shape is a whole number of 4-channel slices). */
  const tg_evaluation_result *t2 = find(ev, TG_STORAGE_TEXTURE_2D, TG_MODE_OBJECTS, TG_STRATEGY_NAIVE);
  const tg_evaluation_result *b2 = find(ev, TG_STORAGE_BUFFER, TG_MODE_OBJECTS, TG_STRATEGY_NAIVE);
  assert_int_equal(t2->bytes, b2->bytes);
  char sentence[256];
  tg_evaluation_describe(ev, sentence, sizeof sentence);
  assert_non_null(strstr(sentence, "least memory: "));
  /* fp16 halves everything. */
  tg_evaluation_options opt;
  memset(&opt, 0, sizeof opt);
  opt.precision = TG_PRECISION_FP16;
  tg_evaluation *half = NULL;
  assert_int_equal(tg_evaluation_create_from_graph(g, &opt, NULL, &half, &err), TG_OK);
  check_evaluation(half, 0);
  assert_int_equal(find(half, TG_STORAGE_BUFFER, TG_MODE_OBJECTS, TG_STRATEGY_NAIVE)->bytes * 2, b2->bytes);
  assert_int_equal(find(half, TG_STORAGE_TEXTURE_2D, TG_MODE_OBJECTS, TG_STRATEGY_NAIVE)->bytes * 2, t2->bytes);
  tg_evaluation_destroy(half);
  /* Without limits only the channel rule sends tensors to buffers. */
  opt.precision = TG_PRECISION_FP32;
  opt.no_limits = 1;
  assert_int_equal(tg_evaluation_create_from_graph(g, &opt, NULL, &half, &err), TG_OK);
  assert_int_equal(half->fallback_count, 2);
  tg_evaluation_destroy(half);
  tg_evaluation_destroy(ev);
  tg_graph_destroy(g);
}

static void policies_restrict_sharing(void **state) {
  (void)state;
  tg_graph *g = small_graph();
  tg_error_info err = {{0}};
  tg_evaluation *ev[TG_POLICY_COUNT] = {NULL};
  for (int p = 0; p < TG_POLICY_COUNT; ++p) {
    tg_evaluation_options opt;
    memset(&opt, 0, sizeof opt);
    opt.policy = (tg_policy)p;
    if (tg_evaluation_create_from_graph(g, &opt, NULL, &ev[p], &err) != TG_OK) fail_msg("%s", err.message);
    assert_int_equal(ev[p]->policy, p);
    check_evaluation(ev[p], 0);
  }
  /* Naive plans do not share, so every policy gives the same; the bound does not depend on the
   * policy. */
  for (int p = 1; p < TG_POLICY_COUNT; ++p)
    for (size_t i = 0; i < ev[0]->result_count; ++i) {
      assert_int_equal(ev[p]->results[i].lower_bound_bytes, ev[0]->results[i].lower_bound_bytes);
      if (ev[0]->results[i].strategy == TG_STRATEGY_NAIVE)
        assert_int_equal(ev[p]->results[i].bytes, ev[0]->results[i].bytes);
    }
  for (int p = 0; p < TG_POLICY_COUNT; ++p) tg_evaluation_destroy(ev[p]);
  tg_graph_destroy(g);
}

static void usage_records_evaluate_their_own_storage(void **state) {
  (void)state;
  char path[1024];
  tg_record_set *set = NULL;
  tg_error_info err = {{0}};
  static const char *const files[] = {"records/pose_landmark_lite.buffer.csv",
                                      "records/pose_landmark_lite.tex2.csv",
                                      "records/pose_landmark_lite.tex3.csv"};
  static const tg_storage storages[] = {TG_STORAGE_BUFFER, TG_STORAGE_TEXTURE_2D, TG_STORAGE_TEXTURE_3D};
  for (size_t f = 0; f < 3; ++f) {
    if (tg_records_read_csv(tg_test_data_path(path, sizeof path, files[f]), NULL, &set, &err) != TG_OK)
      fail_msg("%s", err.message);
    tg_evaluation *ev = NULL;
    assert_int_equal(tg_evaluation_create_from_records(set, NULL, NULL, &ev, &err), TG_OK);
    assert_true(ev->from_records);
    assert_int_equal(ev->input_dims, set->dims);
    check_evaluation(ev, 0);
    for (int s = 0; s < TG_STORAGE_COUNT; ++s)
      assert_int_equal(ev->best_of_storage[s] != TG_EVALUATION_NONE, (tg_storage)s == storages[f]);
    assert_int_equal(ev->recommended, ev->best_of_storage[storages[f]]);
    if (storages[f] == TG_STORAGE_BUFFER) {
      const tg_evaluation_result *r = find(ev, TG_STORAGE_BUFFER, TG_MODE_OFFSETS, TG_STRATEGY_BEST);
      assert_int_equal(r->bytes, r->lower_bound_bytes);
      assert_int_equal(r->bytes, 6963200); /* shared/reference: pose_landmark_lite peak live */
    }
    tg_evaluation_destroy(ev);
    /* Records have no graph: other policies are refused. */
    tg_evaluation_options opt;
    memset(&opt, 0, sizeof opt);
    opt.policy = TG_POLICY_PARALLEL_SAFE;
    assert_int_equal(tg_evaluation_create_from_records(set, &opt, NULL, &ev, &err), TG_ERROR_UNSUPPORTED);
    assert_null(ev);
    tg_record_set_destroy(set);
  }
}

static void allocation_failures_leak_nothing(void **state) {
  (void)state;
  tg_graph *g = small_graph();
  int succeeded = 0;
  /* Every one of the first 3000 allocations, then a sample growing with the index (an
   * evaluation runs every strategy of both modes on six storages: thousands). */
  for (uint64_t at = 1; at < 200000 && !succeeded; at += at < 3000 ? 1 : at / 64) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, at);
    tg_evaluation_options opt;
    memset(&opt, 0, sizeof opt);
    opt.policy = at % 2 ? TG_POLICY_SERIAL : TG_POLICY_BRANCH_LOCAL;
    tg_evaluation *ev = NULL;
    tg_error_info err = {{0}};
    tg_status st = tg_evaluation_create_from_graph(g, &opt, &fa.base, &ev, &err);
    if (st == TG_OK) {
      if (opt.policy == TG_POLICY_SERIAL) succeeded = 1;
      tg_evaluation_destroy(ev);
    } else {
      assert_null(ev);
      assert_int_equal(st, TG_ERROR_OUT_OF_HOST_MEMORY);
    }
    if (fa.live_blocks != 0) fail_msg("failing allocation %llu: %lld blocks leaked", (unsigned long long)at, (long long)fa.live_blocks);
  }
  assert_true(succeeded);
  tg_graph_destroy(g);
}

static void bad_arguments(void **state) {
  (void)state;
  tg_evaluation *ev = (tg_evaluation *)1;
  tg_error_info err = {{0}};
  assert_int_equal(tg_evaluation_create_from_graph(NULL, NULL, NULL, &ev, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_null(ev);
  tg_graph *g = small_graph();
  tg_evaluation_options opt;
  memset(&opt, 0, sizeof opt);
  opt.precision = (tg_precision)7;
  assert_int_equal(tg_evaluation_create_from_graph(g, &opt, NULL, &ev, &err), TG_ERROR_INVALID_ARGUMENT);
  opt.precision = TG_PRECISION_FP32;
  opt.policy = (tg_policy)9;
  assert_int_equal(tg_evaluation_create_from_graph(g, &opt, NULL, &ev, &err), TG_ERROR_INVALID_ARGUMENT);
  tg_graph_destroy(g);
  tg_evaluation_destroy(NULL);
  char buf[16];
  assert_string_equal(tg_evaluation_describe(NULL, buf, sizeof buf), "no valid plan t");
  assert_string_equal(tg_report_format_bytes(512, buf, sizeof buf), "512 B");
  assert_string_equal(tg_report_format_bytes(1536, buf, sizeof buf), "1.50 KiB");
  assert_string_equal(tg_report_format_bytes(6963200, buf, sizeof buf), "6.64 MiB");
}

/* ------------------------------------------------------------------------------------------ */
/* Public models. */

static void models_library(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof k_models / sizeof k_models[0]; ++k) {
    char path[1024];
    if (tg_test_model_path(path, sizeof path, k_models[k]) == NULL) continue;
    tg_model *m = NULL;
    tg_error_info err = {{0}};
    if (tg_model_load(path, NULL, &m, &err) != TG_OK) fail_msg("%s", err.message);
    for (int p = 0; p < TG_POLICY_COUNT; ++p) {
      tg_evaluation_options opt;
      memset(&opt, 0, sizeof opt);
      opt.policy = (tg_policy)p;
      tg_evaluation *ev = NULL;
      if (tg_evaluation_create_from_graph(m->graph, &opt, NULL, &ev, &err) != TG_OK)
        fail_msg("%s: %s", k_models[k], err.message);
      check_evaluation(ev, 0);
      assert_int_not_equal(ev->recommended, TG_EVALUATION_NONE);
      if (p == TG_POLICY_SERIAL) {
        /* Greedy-by-size offsets reach the peak-live bound on these models. */
        const tg_evaluation_result *r = find(ev, TG_STORAGE_BUFFER, TG_MODE_OFFSETS, TG_STRATEGY_BEST);
        assert_int_equal(r->bytes, r->lower_bound_bytes);
        assert_int_equal(ev->results[ev->best_of_storage[TG_STORAGE_BUFFER]].bytes, r->lower_bound_bytes);
        char sentence[512];
        fprintf(stderr, "%s: %s\n", k_models[k], tg_evaluation_describe(ev, sentence, sizeof sentence));
      }
      tg_evaluation_destroy(ev);
    }
    tg_model_destroy(m);
  }
}

/* Run the CLI with `args`, stdout to `out`; returns its exit status. */
static int run_cli(const char *args, const char *out) {
  const char *cli = getenv("TANGRAM_CLI");
  if (cli == NULL) fail_msg("TANGRAM_CLI is not set (run through ctest)");
  char cmd[16384];
  snprintf(cmd, sizeof cmd, "'%s' evaluate %s > '%s' 2> '%s.err'", cli, args, out, out);
  int rc = system(cmd);
  return rc == -1 ? -1 : (rc >> 8) & 0xff;
}

static char *must_read(const char *path) {
  char *s = read_text_file(path, NULL);
  if (s == NULL) fail_msg("cannot read %s", path);
  return s;
}

static void check_json_keys(const char *json, int all_policies) {
  char why[256] = "";
  if (!json_sane(json, why, sizeof why)) fail_msg("JSON: %s\n%.400s", why, json);
  static const char *const keys[] = {
      "{\"model\":", "\"tensors\":", "\"ops\":", "\"records\":", "\"precision\":\"fp32\"",
      "\"results\":[{", "\"storage\":\"buffer\"", "\"storage\":\"image_buffer\"",
      "\"storage\":\"texture_2d\"", "\"storage\":\"texture_array\"", "\"storage\":\"texture_3d\"",
      "\"storage\":\"single_texture_2d\"", "\"mode\":\"objects\"", "\"mode\":\"offsets\"",
      "\"strategy\":\"best\"", "\"bytes\":", "\"lower_bound_bytes\":", "\"objects\":",
      "\"valid\":true", "\"plan_us\":", "\"fallback_tensors\":", "\"best_per_storage\":[{",
      "\"recommendation\":{", "\"fallbacks\":["};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; ++i)
    if (strstr(json, keys[i]) == NULL) fail_msg("JSON lacks %s", keys[i]);
  assert_null(strstr(json, "\"valid\":false"));
  assert_int_equal(count_substr(json, "\"policy\":\"parallel-safe\"") > 0, all_policies);
  assert_int_equal(strstr(json, "\"recommendations\":[") != NULL, all_policies);
  /* Per policy 6 storages x (9 + 9) results, less greedy-coloring on the four texture
   * storages (skipped: 1D only), and 6 bests; the recommendation, the objects-mode one, and
   * with all policies one recommendation per policy. */
  assert_non_null(strstr(json, "\"recommendation_objects_mode\":{"));
  assert_int_equal(count_substr(json, "\"lower_bound_bytes\":"),
                   (size_t)(all_policies ? 3 : 1) * (6 * 18 - 4 + 6) + 2 + (size_t)(all_policies ? 3 : 0));
}

static void models_cli(void **state) {
  (void)state;
  const char *dir = artifact_dir();
  for (size_t k = 0; k < sizeof k_models / sizeof k_models[0]; ++k) {
    char path[1024], out[1024], args[8192];
    if (tg_test_model_path(path, sizeof path, k_models[k]) == NULL) continue;
    snprintf(out, sizeof out, "%s/%s.evaluate.json", dir, k_models[k]);
    snprintf(args, sizeof args, "'%s' --json", path);
    assert_int_equal(run_cli(args, out), 0);
    char *json = must_read(out);
    check_json_keys(json, 0);
    free(json);
  }
  char path[1024];
  if (tg_test_model_path(path, sizeof path, "pose_landmark_lite.tflite") == NULL) return;
  char out[1024], args[8192], svgdir[1024], csv[1024];
  /* All policies side by side, as JSON and as text. */
  snprintf(out, sizeof out, "%s/pose.policies.json", dir);
  snprintf(args, sizeof args, "'%s' --json --policy all", path);
  assert_int_equal(run_cli(args, out), 0);
  char *text = must_read(out);
  check_json_keys(text, 1);
  free(text);
  snprintf(out, sizeof out, "%s/pose.policies.txt", dir);
  snprintf(args, sizeof args, "'%s' --policy all", path);
  assert_int_equal(run_cli(args, out), 0);
  text = must_read(out);
  tg_expect_all(text, "parallel-safe", "branch-local", "least memory: ", NULL);
  free(text);
  /* Text, charts and the CSV of the recommendation. */
  snprintf(svgdir, sizeof svgdir, "%s/pose-charts", dir);
  snprintf(csv, sizeof csv, "%s/pose.recommended.csv", dir);
  snprintf(out, sizeof out, "%s/pose.evaluate.txt", dir);
  snprintf(args, sizeof args, "'%s' --svg-dir '%s' --csv-out '%s'", path, svgdir, csv);
  assert_int_equal(run_cli(args, out), 0);
  text = must_read(out);
  tg_expect_all(text, "least memory: ", "best per storage:", "fallbacks:", "single_texture_2d", NULL);
  free(text);
  for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
    char svg_path[2048];
    snprintf(svg_path, sizeof svg_path, "%s/pose_landmark_lite.%s.svg", svgdir, tg_storage_name((tg_storage)s));
    char *svg = must_read(svg_path);
    char why[256] = "";
    if (!xml_well_formed(svg, why, sizeof why, NULL)) fail_msg("%s: %s", svg_path, why);
    assert_true(count_substr(svg, "<rect class=\"t\"") > 100);
    free(svg);
  }
  text = must_read(csv);
  assert_true(strncmp(text, "tensor_name,size,offset,start_time,end_time,object,storage\n", 59) == 0);
  assert_true(count_substr(text, "\n") > 100);
  free(text);
  /* Usage errors exit 2. */
  snprintf(out, sizeof out, "%s/usage.txt", dir);
  assert_int_equal(run_cli("--policy nonsense x", out), 2);
  assert_int_equal(run_cli("", out), 2);
  assert_int_equal(run_cli("--precision fp64 x", out), 2);
  assert_int_equal(run_cli("/nonexistent/model.tflite", out), 2);
  char empty[1024];
  snprintf(empty, sizeof empty, "%s/empty.graph", dir);
  assert_true(write_text_file(empty, "# nothing\n", 10));
  snprintf(args, sizeof args, "'%s'", empty);
  assert_int_equal(run_cli(args, out), 2);
  assert_int_equal(run_cli("--help", out), 0);
  text = must_read(out);
  assert_non_null(strstr(text, "usage: tangram evaluate MODEL"));
  free(text);
  /* Records input: only their storage, and non-serial policies refused. */
  char rec[1024];
  tg_test_data_path(rec, sizeof rec, "records/pose_landmark_lite.tex2.csv");
  snprintf(args, sizeof args, "'%s' --json", rec);
  snprintf(out, sizeof out, "%s/records.json", dir);
  assert_int_equal(run_cli(args, out), 0);
  text = must_read(out);
  char why[256] = "";
  if (!json_sane(text, why, sizeof why)) fail_msg("records JSON: %s", why);
  assert_non_null(strstr(text, "\"input\":\"records\""));
  assert_null(strstr(text, "\"storage\":\"buffer\""));
  assert_non_null(strstr(text, "\"storage\":\"texture_2d\""));
  free(text);
  snprintf(args, sizeof args, "'%s' --policy branch-local", rec);
  assert_int_equal(run_cli(args, out), 2);
}

TG_TEST_MAIN(cmocka_unit_test(small_graph_with_fallbacks),
             cmocka_unit_test(small_graph_fallback_chain),
             cmocka_unit_test(policies_restrict_sharing),
             cmocka_unit_test(usage_records_evaluate_their_own_storage),
             cmocka_unit_test(allocation_failures_leak_nothing), cmocka_unit_test(bad_arguments),
             cmocka_unit_test(models_library), cmocka_unit_test(models_cli))
