/* The fixture of the CLI tests over input ranges: a fresh folder under /tmp holding the
 * hand-made one-dimension convolution model (conv.onnx, any width), removed with all in it. */
#ifndef TG_TESTS_TOOLS_RANGE_FIXTURE_H
#define TG_TESTS_TOOLS_RANGE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

/* Include after support/tg_test.h and model/range_models.h. */

typedef struct fixture {
  char dir[64];
  char model[128];
} fixture;

/* Write `model` (consumed) to `path`. */
static void write_model(pb *model, const char *path) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(model->data, 1, model->len, f), model->len);
  assert_int_equal(fclose(f), 0);
  pb_free(model);
}

/* A cmocka setup making the folder from mkdtemp's `pattern` ("/tmp/NAMEXXXXXX"). */
static int range_fixture_setup(void **state, const char *pattern) {
  fixture *f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  snprintf(f->dir, sizeof f->dir, "%s", pattern);
  if (mkdtemp(f->dir) == NULL) return -1;
  snprintf(f->model, sizeof f->model, "%s/conv.onnx", f->dir);
  pb m = {0};
  tg_test_conv1d_onnx(&m, -1);
  write_model(&m, f->model);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
  if (system(cmd) != 0) return -1;
  free(f);
  return 0;
}

#endif
