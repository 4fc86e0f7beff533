/* Twins as the oracle: openWakeWord ships most models as both .onnx and .tflite (converted with
 * onnx-tf). The same network planned from either file at the same input size must give the
 * same planned totals in buffers (peak live, best offsets and objects plans), and the .tflite's
 * records must be the .onnx's less the ones the converter fused away (Gemm + Relu is one
 * FULLY_CONNECTED there): every .tflite record size, with its multiplicity, is an .onnx one. (The
 * order differs slightly: records follow their producers, and the converter orders some ops
 * otherwise.) hey_rhasspy's two files are different networks (the .tflite's layers are twice as
 * wide, 416 KB against 204 KB): the test pins that difference. Skips models not cached. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TANGRAM_HAVE_ONNX

typedef struct twin_plan {
  uint64_t peak, offsets, objects;
  uint64_t sizes[512];
  size_t count;
} twin_plan;

static void plan_twin(const char *path, const char *shape, twin_plan *t) {
  cli_result r = cli("plan %s %s --mode offsets --strategy best --json", path, shape);
  if (r.code != 0) fail_msg("plan %s: exit %d: %s", path, r.code, r.err);
  t->peak = tg_test_json_u64(r.out, "peak_live");
  t->offsets = tg_test_json_u64(strstr(r.out, "\"results\":"), "total");
  t->count = tg_test_json_u64s(r.out, "size_of", t->sizes, 512, NULL);
  cli_free(&r);
  r = cli("plan %s %s --mode objects --strategy best --json", path, shape);
  if (r.code != 0) fail_msg("plan %s: exit %d: %s", path, r.code, r.err);
  t->objects = tg_test_json_u64(strstr(r.out, "\"results\":"), "total");
  cli_free(&r);
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/* Is every record size of b (with its multiplicity) one of a's? (Sorted copies.) */
static int sizes_within(const uint64_t *a0, size_t na, const uint64_t *b0, size_t nb) {
  static uint64_t a[512], b[512];
  memcpy(a, a0, na * sizeof *a);
  memcpy(b, b0, nb * sizeof *b);
  qsort(a, na, sizeof *a, cmp_u64);
  qsort(b, nb, sizeof *b, cmp_u64);
  size_t i = 0;
  for (size_t j = 0; j < nb; ++j) {
    while (i < na && a[i] < b[j]) ++i;
    if (i == na || a[i] != b[j]) return 0;
    ++i;
  }
  return 1;
}

static void twins_agree(void **state) {
  (void)state;
  static const struct { const char *name; int same_network; size_t onnx_records, tflite_records; } twins[] = {
      {"alexa_v0.1", 1, 6, 4},        {"hey_jarvis_v0.1", 1, 53, 51}, {"hey_mycroft_v0.1", 1, 24, 22},
      {"hey_rhasspy_v0.1", 0, 24, 22}, {"timer_v0.1", 1, 7, 4},        {"weather_v0.1", 1, 6, 4},
  };
  for (size_t k = 0; k < sizeof twins / sizeof twins[0]; ++k) {
    char rel[128], onnx[1024], tflite[1024];
    snprintf(rel, sizeof rel, "openwakeword/%s.onnx", twins[k].name);
    if (tg_test_model_path(onnx, sizeof onnx, rel) == NULL) continue;
    snprintf(rel, sizeof rel, "openwakeword/%s.tflite", twins[k].name);
    if (tg_test_model_path(tflite, sizeof tflite, rel) == NULL) continue;
    static twin_plan a, b;
    plan_twin(onnx, "", &a);
    plan_twin(tflite, "", &b);
    assert_int_equal(a.count, twins[k].onnx_records);
    assert_int_equal(b.count, twins[k].tflite_records);
    if (twins[k].same_network) {
      if (a.peak != b.peak || a.offsets != b.offsets || a.objects != b.objects)
        fail_msg("%s: .onnx peak %llu, offsets %llu, objects %llu; .tflite %llu, %llu, %llu", twins[k].name,
                 (unsigned long long)a.peak, (unsigned long long)a.offsets, (unsigned long long)a.objects,
                 (unsigned long long)b.peak, (unsigned long long)b.offsets, (unsigned long long)b.objects);
      if (!sizes_within(a.sizes, a.count, b.sizes, b.count))
        fail_msg("%s: the .tflite has records of sizes the .onnx has not", twins[k].name);
    } else {
      /* hey_rhasspy: 32-wide layers in the .onnx (128-byte records), 64-wide in the .tflite. */
      assert_int_equal(a.sizes[1], 128);
      assert_int_equal(b.sizes[1], 256);
      assert_true(b.peak > a.peak);
    }
  }
}

/* The dynamic twins at the same input sizes (the .tflite's shapes inferred again). */
static void dynamic_twins(void **state) {
  (void)state;
  char onnx[1024], tflite[1024];
  if (tg_test_model_path(onnx, sizeof onnx, "openwakeword/embedding_model.onnx") &&
      tg_test_model_path(tflite, sizeof tflite, "openwakeword/embedding_model.tflite")) {
    for (int batch = 1; batch <= 5; batch += 2) {
      static twin_plan a, b;
      char sa[80], sb[80];
      snprintf(sa, sizeof sa, "--input-shape input_1:%dx76x32x1", batch);
      snprintf(sb, sizeof sb, "--input-shape serving_default_input_1:0:%dx76x32x1", batch);
      plan_twin(onnx, sa, &a);
      plan_twin(tflite, sb, &b);
      /* 64 records against 63, not all of one size: the .onnx transposes its input to
       * [N,1,76,32] and ends with a [N,96,1,1] Reshape; the .tflite pads its input to [N,76,34,1]
       * (the converter made the first conv's padding an explicit PAD). The same totals. */
      assert_int_equal(a.count, 64);
      assert_int_equal(b.count, 63);
      assert_int_equal(a.peak, 454656u * (unsigned)batch);
      assert_int_equal(b.peak, a.peak);
      assert_int_equal(b.offsets, a.offsets);
      assert_int_equal(b.objects, a.objects);
    }
  }
  if (tg_test_model_path(onnx, sizeof onnx, "openwakeword/melspectrogram.onnx") &&
      tg_test_model_path(tflite, sizeof tflite, "openwakeword/melspectrogram.tflite")) {
    static const struct { int samples; uint64_t onnx_peak, tflite_peak; } lengths[] = {
        {1280, 61680, 40960}, {1760, 98688, 56320}, {3200, 209712, 102400}};
    for (size_t k = 0; k < 3; ++k) {
      static twin_plan a, b;
      char sa[80], sb[80];
      snprintf(sa, sizeof sa, "--input-shape input:1x%d", lengths[k].samples);
      snprintf(sb, sizeof sb, "--input-shape serving_default_input:0:1x%d", lengths[k].samples);
      plan_twin(onnx, sa, &a);
      plan_twin(tflite, sb, &b);
      /* The layouts differ: onnx-tf's transposes leave the .onnx's spectra as [1,1,257,F]
       * (NCHW: one channel, padded to a 4-channel slice: 4x the bytes) where the .tflite has
       * [1,1,F,257] (NHWC: 257 channels). */
      assert_int_equal(a.peak, lengths[k].onnx_peak);
      assert_int_equal(b.peak, lengths[k].tflite_peak);
      assert_int_equal(a.offsets, a.peak);
      assert_int_equal(b.offsets, b.peak);
    }
  }
}

TG_TEST_MAIN(cmocka_unit_test(twins_agree), cmocka_unit_test(dynamic_twins))

#else

TG_TEST_SKIP_MAIN("built without the .onnx reader")

#endif
