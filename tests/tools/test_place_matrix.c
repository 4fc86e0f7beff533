/* The heterogeneous matrix through the CLI: the four public models with --place auto, every
 * k-th scheduled op on the CPU (k = 2, 3, 5) and every op on the CPU, on the host, OpenCL
 * (PoCL) and Vulkan (lavapipe, validation on) backends, in buffers and textures, in order and
 * out of order: 0 corrupted tensors, 0 validation messages, and every run's spaces checked
 * against its placement from its JSON alone. That whole matrix (240 runs) under
 * TANGRAM_TEST_DEEP=1 (scripts/test-deep.sh); otherwise a subset of 48 runs: per model, auto
 * placement and one k, buffers in order and textures out of order, on every backend.
 *
 * A backend that cannot be opened is skipped outside CI and fails under CI (CI=true). */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/place_json.h"

static const char *const k_models[] = {"face_detection_short_range", "hand_landmark_lite",
                                       "pose_landmark_lite", "selfie_segmentation"};
static const char *const k_backends[] = {"host", "opencl", "vulkan"};
/* Textures: a different kind per model, so that all three are covered. */
static const char *const k_textures[] = {"texture_2d", "texture_array", "texture_3d", "texture_2d"};
#define PLACEMENTS 5 /* auto, k = 2, 3, 5, cpu:* */

/* A place file putting every k-th scheduled op (not folded) on the CPU. */
static void write_every_kth(const char *model_path, int k, char *file, size_t size) {
  cli_result r = cli("schedule %s --json", model_path);
  if (r.code != 0) fail_msg("schedule: %s", r.err);
  long long ops = pj_int(r.out, "ops");
  long long *folded = calloc((size_t)ops + 1, sizeof *folded);
  assert_non_null(folded);
  size_t nf = pj_ints(r.out, "folded", folded, (size_t)ops);
  cli_free(&r);
  snprintf(file, size, "/tmp/tg_place_k%d_XXXXXX", k);
  int fd = mkstemp(file);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  assert_non_null(f);
  fprintf(f, "# every %d-th scheduled op on the cpu\n", k);
  long long rank = 0;
  for (long long op = 0; op < ops; ++op) {
    int is_folded = 0;
    for (size_t i = 0; i < nf; ++i) is_folded |= folded[i] == op;
    if (is_folded) continue;
    if (++rank % k == 0) fprintf(f, "%lld cpu\n", op);
  }
  fclose(f);
  free(folded);
}

static void matrix(void **state) {
  (void)state;
  int q = !tg_test_deep();
  size_t runs = 0, shared_records = 0, corrupted = 0, messages = 0;
  size_t per_backend[3] = {0, 0, 0};
  int usable[3];
  for (int b = 0; b < 3; ++b) usable[b] = tg_test_backend_usable(k_backends[b]);
  for (size_t m = 0; m < sizeof k_models / sizeof k_models[0]; ++m) {
    char path[1024], file[256];
    char files[PLACEMENTS][256];
    snprintf(file, sizeof file, "%s.tflite", k_models[m]);
    if (tg_test_model_path(path, sizeof path, file) == NULL) continue;
    static const int ks[3] = {2, 3, 5};
    for (int i = 0; i < 3; ++i) write_every_kth(path, ks[i], files[1 + i], sizeof files[1 + i]);
    for (int p = 0; p < PLACEMENTS; ++p) {
      /* The subset: auto and one k per model, rotating. */
      if (q && p != 0 && p != 1 + (int)(m % 3)) continue;
      char place[1400]; /* room for any of files[] after the option name */
      if (p == 0) snprintf(place, sizeof place, "--place auto");
      else if (p == PLACEMENTS - 1) snprintf(place, sizeof place, "--place 'cpu:*'");
      else snprintf(place, sizeof place, "--place-file %s", files[p]);
      for (int b = 0; b < 3; ++b) {
        if (!usable[b]) continue;
        for (int s = 0; s < 2; ++s) {
          for (int ooo = 0; ooo <= 1; ++ooo) {
            if (q && s != ooo) continue; /* subset: buffers in order, textures out of order */
            const char *storage = s ? k_textures[m] : "buffer";
            /* In order: serial, objects. Out of order: buffers in offsets (one arena per
             * space), serial plans with their reuse edges or parallel-safe plans in turn. */
            const char *mode = (ooo && s == 0) ? "offsets" : "objects";
            const char *policy = (ooo && (p % 2)) ? "parallel-safe" : "serial";
            /* Every 3rd op on the CPU: graph inputs and outputs planned too (written by the
             * host before the run, in whatever space their readers put them). */
            const char *io = p == 2 ? "--plan-io" : "";
            cli_result r = cli("run %s --backend %s --storage %s --mode %s --policy %s %s %s %s --json", path,
                               k_backends[b], storage, mode, policy, ooo ? "--out-of-order" : "", io, place);
            char what[2048];
            snprintf(what, sizeof what, "%s %s %s %s %s %s %s %s", k_models[m], k_backends[b], storage, mode, policy,
                     ooo ? "out-of-order" : "in-order", io, place);
            /* A failure prints the run's whole stderr first (a sanitizer's report from the CLI
             * lands there), so that a log cut to its tail still names the cause. */
            if (r.code != 0) {
              fprintf(stderr, "FAILED RUN %s\n--- its stderr ---\n%s\n--- end ---\n", what, r.err);
              fail_msg("%s: exit %d", what, r.code);
            }
            if (!tg_test_json_valid(r.out)) fail_msg("%s: invalid JSON: %.2000s", what, r.out);
            long long bad = pj_int(r.out, "corrupted_tensors"), msgs = pj_int(r.out, "validation_messages");
            corrupted += (size_t)bad;
            messages += (size_t)msgs;
            if (bad || msgs) {
              fprintf(stderr, "FAILED RUN %s\n--- its stderr ---\n%s\n--- end ---\n", what, r.err);
              fail_msg("%s: %lld corrupted, %lld validation messages", what, bad, msgs);
            }
            shared_records += pj_check_spaces(r.out);
            ++runs;
            ++per_backend[b];
            cli_free(&r);
          }
        }
      }
    }
    for (int i = 1; i <= 3; ++i) unlink(files[i]);
  }
  print_message("%zu runs (host %zu, opencl %zu, vulkan %zu): %zu corrupted, %zu validation messages, "
                "%zu shared records checked against their placement\n",
                runs, per_backend[0], per_backend[1], per_backend[2], corrupted, messages, shared_records);
  if (runs == 0) skip();
}

int main(void) {
  /* Vulkan runs with the validation and synchronization validation layers. */
  setenv("TANGRAM_VULKAN_VALIDATION", "1", 1);
  const struct CMUnitTest tests[] = {cmocka_unit_test(matrix)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
