/* Loading a model over a range of input sizes (tg_model_range_load): the records at every size
 * equal, record for record, those of a plain load at that size (the real models, every
 * storage), known answers on hand-made models, the errors (a range on a static dimension, too
 * many dimensions, a size where inference fails naming the op and the size, a tensor falling
 * back at some sizes only), the --input-shape syntax (tg_input_shape_parse) and allocation
 * failure at every site.
 *
 * The PP-OCRv4 detector is checked over H, W 32..960/96 (100 sizes); TANGRAM_TEST_DEEP=1 checks
 * the full 32..960/32 grid (900 sizes) and every storage of every model. */
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/range_models.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/range.h"

static void assert_contains(const char *text, const char *part) {
  if (strstr(text, part) == NULL) fail_msg("'%s' lacks '%s'", text, part);
}

/* Options from --input-shape texts (at most 4). */
typedef struct shapes {
  tg_input_shape s[4];
  char names[4][64];
  tg_model_options o;
} shapes;

static void shapes_parse(shapes *sh, const char *const *texts, size_t n) {
  memset(sh, 0, sizeof *sh);
  for (size_t i = 0; i < n; ++i) {
    char err[256];
    tg_status st = tg_input_shape_parse(texts[i], sh->names[i], sizeof sh->names[i], &sh->s[i], err, sizeof err);
    if (st != TG_OK) fail_msg("%s: %s", texts[i], err);
  }
  sh->o.input_shapes = sh->s;
  sh->o.input_shape_count = n;
}

#ifdef TANGRAM_HAVE_ONNX
static tg_status load_range(const void *data, size_t length, const char *source, const char *shape_text,
                            tg_storage storage, const tg_device_limits *limits, tg_model_range **out,
                            tg_error_info *err) {
  shapes sh;
  shapes_parse(&sh, &shape_text, 1);
  tg_model_range_desc d = {&sh.o, storage, TG_PRECISION_FP32, limits, 0, 1, 1};
  return tg_model_range_parse(data, length, source, &d, NULL, out, err);
}

#endif

/* ---- Every size equals a plain load ------------------------------------------------------ */

static void assert_same_set(const tg_record_set *plain, const uint32_t *plain_tensors, const tg_range_records *rr,
                            const tg_record_set *ref, const uint32_t *ref_tensors, const int64_t *dims,
                            const char *what) {
  size_t n = plain ? plain->count : 0;
  if (rr == NULL) {
    if (n != 0) fail_msg("%s: %zu records at this size, none over the range", what, n);
    return;
  }
  if (tg_range_records_count(rr) != n || ref->count != n)
    fail_msg("%s: %zu records over the range, %zu in a plain load", what, tg_range_records_count(rr), n);
  assert_int_equal(tg_range_records_dims(rr), plain->dims);
  tg_usage_record *at = calloc(n ? n : 1, sizeof *at);
  assert_non_null(at);
  assert_int_equal(tg_range_records_at(rr, dims, at), TG_OK);
  for (size_t r = 0; r < n; ++r) {
    const tg_usage_record *p = &plain->records[r];
    if (memcmp(&at[r].size, &p->size, sizeof p->size) != 0 || at[r].first_task != p->first_task ||
        at[r].last_task != p->last_task || plain_tensors[r] != ref_tensors[r] ||
        strcmp(plain->names[r], ref->names[r]) != 0)
      fail_msg("%s: record %zu ('%s'): %llux%llux%llu [%u,%u] over the range, %llux%llux%llu [%u,%u] '%s' in a "
               "plain load", what, r, ref->names[r], (unsigned long long)at[r].size.w,
               (unsigned long long)at[r].size.h, (unsigned long long)at[r].size.d, at[r].first_task,
               at[r].last_task, (unsigned long long)p->size.w, (unsigned long long)p->size.h,
               (unsigned long long)p->size.d, p->first_task, p->last_task, plain->names[r]);
  }
  free(at);
}

/* Load `path` over `shape_text` in `storage` and compare every point with a plain load there.
 * Returns the number of points compared. */
static size_t compare_with_plain_loads(const char *path, const char *shape_text, tg_storage storage) {
  shapes sh;
  shapes_parse(&sh, &shape_text, 1);
  /* Default limits; where a tensor outgrows them at some sizes only, the range is refused
   * (fallback_at_some_sizes checks such a refusal) and the sizes are compared without limits. */
  tg_device_limits def = tg_device_limits_default(), *limits = &def;
  tg_model_range_desc d = {&sh.o, storage, TG_PRECISION_FP32, limits, 0, 1, 1};
  tg_model_range *r = NULL;
  tg_error_info err = {{0}};
  /* The file is read once; plain loads parse it from memory. */
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long length = ftell(f);
  assert_true(length > 0);
  assert_int_equal(fseek(f, 0, SEEK_SET), 0);
  char *data = malloc((size_t)length);
  assert_non_null(data);
  assert_int_equal(fread(data, 1, (size_t)length, f), (size_t)length);
  fclose(f);
  tg_status st = tg_model_range_parse(data, (size_t)length, path, &d, NULL, &r, &err);
  if (st == TG_ERROR_UNSUPPORTED && strstr(err.message, "' is in ") != NULL &&
      strstr(err.message, " but in ") != NULL) {
    d.limits = limits = NULL;
    st = tg_model_range_parse(data, (size_t)length, path, &d, NULL, &r, &err);
  }
  if (st != TG_OK) fail_msg("%s over %s in %s: %s", path, shape_text, tg_storage_name(storage), err.message);
  assert_int_equal(r->point_count, tg_size_range_point_count(&r->range));
  size_t compared = 0;
  for (uint64_t p = 0; p < r->point_count; ++p) {
    int64_t dims[TG_RANGE_MAX_DIMS];
    assert_int_equal(tg_size_range_point(&r->range, p, dims), TG_OK);
    tg_input_shape at[4];
    assert_int_equal(tg_model_range_shapes_at(r, &sh.o, dims, at), TG_OK);
    tg_model_options o = {at, sh.o.input_shape_count};
    tg_model *m = NULL;
    st = tg_model_parse_with(data, (size_t)length, path, &o, NULL, &m, &err);
    if (st != TG_OK) fail_msg("plain load: %s", err.message);
    tg_lifetime_options lo = {0};
    tg_lifetimes *l = NULL;
    tg_model_records *mr = NULL;
    assert_int_equal(tg_graph_compute_lifetimes(m->graph, &lo, NULL, &l, &err), TG_OK);
    assert_int_equal(tg_model_records_create_chain(m->graph, l, storage, TG_PRECISION_FP32, limits, NULL, &mr, &err),
                     TG_OK);
    char what[1400];
    snprintf(what, sizeof what, "%s at point %llu (%lld, %lld) in %s", path, (unsigned long long)p, (long long)dims[0],
             (long long)(r->range.count > 1 ? dims[1] : -1), tg_storage_name(storage));
    assert_same_set(mr->records, mr->tensor_of, r->primary, r->records->records, r->records->tensor_of, dims, what);
    for (int s = 0; s < TG_STORAGE_COUNT; ++s)
      if (s != TG_STORAGE_BUFFER || mr->fallbacks[s].records != NULL)
        assert_same_set(mr->fallbacks[s].records, mr->fallbacks[s].tensor_of, r->fallbacks[s],
                        r->records->fallbacks[s].records, r->records->fallbacks[s].tensor_of, dims, what);
    /* The pairs kept hold at this size too. */
    tg_in_place_pair *pairs = NULL;
    size_t pair_count = 0;
    assert_int_equal(tg_model_in_place_pairs(m->graph, l, mr, 1, NULL, &pairs, &pair_count), TG_OK);
    for (size_t k = 0; k < r->in_place_count; ++k) {
      size_t j = 0;
      while (j < pair_count && !(pairs[j].op == r->in_place[k].op && pairs[j].input == r->in_place[k].input &&
                                 pairs[j].output == r->in_place[k].output))
        ++j;
      if (j == pair_count) fail_msg("%s: in-place pair at op %u does not hold", what, r->in_place[k].op);
    }
    free(pairs);
    tg_model_records_destroy(mr);
    tg_lifetimes_destroy(l);
    tg_model_destroy(m);
    ++compared;
  }
  tg_model_range_destroy(r);
  free(data);
  return compared;
}

typedef struct real_model {
  const char *file, *shape;
  const char *deep_shape;       /* NULL: the same */
} real_model;

static void real_models_equal_plain_loads(void **state) {
  (void)state;
  static const real_model models[] = {
      {"ch_PP-OCRv4_rec_infer.onnx", "x:1x3x48x32..1600/8", NULL},
      {"ch_ppocr_mobile_v2.0_cls_infer.onnx", "x:1..6x3x48x64..320/32", NULL},
      {"ch_PP-OCRv4_det_infer.onnx", "x:1x3x32..960/96x32..960/96", "x:1x3x32..960/32x32..960/32"},
      {"openwakeword/melspectrogram.onnx", "input:1x1280..32000/160", NULL},
      {"openwakeword/embedding_model.onnx", "input_1:1..16x76x32x1", NULL},
      {"openwakeword/embedding_model.tflite", "serving_default_input_1:0:1..16x76x32x1", NULL},
      {"openwakeword/melspectrogram.tflite", "serving_default_input:0:1x1280..32000/160", NULL},
  };
  int all = tg_test_deep();
  for (size_t i = 0; i < sizeof models / sizeof models[0]; ++i) {
    char path[1024];
    if (tg_test_model_path(path, sizeof path, models[i].file) == NULL) continue;
#ifndef TANGRAM_HAVE_ONNX
    if (strstr(models[i].file, ".onnx") != NULL) continue;
#endif
    const char *shape = all && models[i].deep_shape ? models[i].deep_shape : models[i].shape;
    for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
      /* Buffers and 2D textures always; the rest in deep runs, and on the small models. */
      int small = strstr(models[i].file, "PP-OCRv4") == NULL;
      if (!all && !small && s != TG_STORAGE_BUFFER && s != TG_STORAGE_TEXTURE_2D) continue;
      /* The recogniser's transposes put the width into channels, which cross C = 4 over its
       * range: single_texture_2d cannot hold them at every size, and the range is refused as
       * one plan (as in fallback_at_some_sizes). */
      if (s == TG_STORAGE_SINGLE_TEXTURE_2D && strstr(models[i].file, "PP-OCRv4_rec") != NULL) continue;
      /* The recogniser's textures at every other width (every width in deep runs). */
      const char *at = shape;
      if (!all && s == TG_STORAGE_TEXTURE_2D && strstr(shape, "32..1600/8") != NULL) at = "x:1x3x48x32..1600/16";
      size_t n = compare_with_plain_loads(path, at, (tg_storage)s);
      assert_true(n >= 16);
    }
  }
}

/* The group tensor `name` is in at a plain load of `path` at `shape_text` (-1: primary). */
static int group_at(const char *path, const char *shape_text, tg_storage storage, const char *name) {
  shapes sh;
  shapes_parse(&sh, &shape_text, 1);
  tg_model *m = NULL;
  tg_error_info err = {{0}};
  if (tg_model_load_with(path, &sh.o, NULL, &m, &err) != TG_OK) fail_msg("%s", err.message);
  tg_lifetime_options lo = {0};
  tg_lifetimes *l = NULL;
  tg_model_records *mr = NULL;
  tg_device_limits limits = tg_device_limits_default();
  assert_int_equal(tg_graph_compute_lifetimes(m->graph, &lo, NULL, &l, &err), TG_OK);
  assert_int_equal(tg_model_records_create_chain(m->graph, l, storage, TG_PRECISION_FP32, &limits, NULL, &mr, &err), TG_OK);
  int group = -2;
  for (size_t r = 0; r < mr->records->count; ++r)
    if (strcmp(mr->records->names[r], name) == 0) group = -1;
  for (int s = 0; s < TG_STORAGE_COUNT; ++s)
    for (size_t r = 0; mr->fallbacks[s].records && r < mr->fallbacks[s].records->count; ++r)
      if (strcmp(mr->fallbacks[s].records->names[r], name) == 0) group = s;
  tg_model_records_destroy(mr);
  tg_lifetimes_destroy(l);
  tg_model_destroy(m);
  return group;
}

/* A tensor that fits image buffers at small sizes only: the range is refused, naming it and
 * two sizes at which plain loads do put it in different storages. */
static void fallback_at_some_sizes(void **state) {
  (void)state;
  char path[1024];
  if (tg_test_model_path(path, sizeof path, "ch_ppocr_mobile_v2.0_cls_infer.onnx") == NULL) return;
#ifdef TANGRAM_HAVE_ONNX
  shapes sh;
  const char *text = "x:1..6x3x48x64..320/32";
  shapes_parse(&sh, &text, 1);
  tg_device_limits limits = tg_device_limits_default();
  tg_model_range_desc d = {&sh.o, TG_STORAGE_IMAGE_BUFFER, TG_PRECISION_FP32, &limits, 0, 1, 1};
  tg_model_range *r = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_model_range_load(path, &d, NULL, &r, &err), TG_ERROR_UNSUPPORTED);
  assert_null(r);
  assert_contains(err.message, "tensor 'conv2d_86.tmp_0' is in image_buffer at x:1x3x48x64 but in buffer at "
                               "x:5x3x48x288 (72000 texels exceed max image buffer 65536 texels at x:5x3x48x288)");
  assert_int_equal(group_at(path, "x:1x3x48x64", TG_STORAGE_IMAGE_BUFFER, "conv2d_86.tmp_0"), -1);
  assert_int_equal(group_at(path, "x:5x3x48x288", TG_STORAGE_IMAGE_BUFFER, "conv2d_86.tmp_0"), TG_STORAGE_BUFFER);
  /* The point before it (4x3x48x320... in row-major order, 5x3x48x256) still fits. */
  assert_int_equal(group_at(path, "x:5x3x48x256", TG_STORAGE_IMAGE_BUFFER, "conv2d_86.tmp_0"), -1);
#endif
}

/* ---- Hand-made models -------------------------------------------------------------------- */

#ifdef TANGRAM_HAVE_ONNX
/* a[N,8] + b[N,8] -> s -> Relu -> y: both inputs' dimension 0 is named "d0". */
static void build_two_inputs(pb *model) {
  pb graph = {0};
  int64_t d[2] = {-1, 8};
  ob_value_info(&graph, 11, "a", OB_FLOAT, 2, d);
  ob_value_info(&graph, 11, "b", OB_FLOAT, 2, d);
  const char *add_in[2] = {"a", "b"}, *add_out[1] = {"s"};
  ob_node(&graph, "Add", "add", add_in, 2, add_out, 1, NULL);
  const char *r_in[1] = {"s"}, *r_out[1] = {"t"};
  ob_node(&graph, "Relu", "relu", r_in, 1, r_out, 1, NULL);
  const char *e_in[1] = {"t"}, *e_out[1] = {"y"};
  ob_node(&graph, "Exp", "exp", e_in, 1, e_out, 1, NULL);
  ob_value_info(&graph, 12, "y", OB_FLOAT, 2, d);
  ob_model(model, &graph, 13);
}

static void known_sizes(void **state) {
  (void)state;
  pb m = {0};
  tg_test_conv1d_onnx(&m, 1);
  tg_model_range *r = NULL;
  tg_error_info err = {{0}};
  /* Buffers: c and r are [1,8,W-2] = (1,1,W-2,8) BHWC, 2 slices of 4 fp32: 32 (W-2) bytes. */
  tg_status st = load_range(m.data, m.len, "conv.onnx", "x:1x4x5..100/5", TG_STORAGE_BUFFER, NULL, &r, &err);
  if (st != TG_OK) fail_msg("%s", err.message);
  assert_int_equal(r->range.count, 1);
  assert_int_equal(r->range.dim[0].lo, 5);
  assert_int_equal(r->range.dim[0].hi, 100);
  assert_int_equal(r->range.dim[0].step, 5);
  assert_int_equal(r->point_count, 20);
  assert_int_equal(r->axis_count, 1);
  assert_int_equal(r->axes[0].axis, 2);
  assert_int_equal(r->axes[0].dim, 0);
  assert_int_equal(r->at[0], 5);
  assert_int_equal(tg_range_records_count(r->primary), 2);
  assert_string_equal(r->records->records->names[0], "c");
  assert_string_equal(r->records->records->names[1], "r");
  /* Relu writes r over c, at every size. */
  assert_int_equal(r->in_place_count, 1);
  assert_int_equal(r->in_place[0].input, 0);
  assert_int_equal(r->in_place[0].output, 1);
  for (int64_t w = 5; w <= 100; w += 5) {
    tg_usage_record at[2];
    assert_int_equal(tg_range_records_at(r->primary, &w, at), TG_OK);
    for (int k = 0; k < 2; ++k) {
      assert_int_equal(at[k].size.w, 32 * (uint64_t)(w - 2));
      assert_int_equal(at[k].size.h, 1);
      assert_int_equal(at[k].first_task, (uint32_t)k);
      assert_int_equal(at[k].last_task, (uint32_t)k + 1);
    }
  }
  int64_t off = 7;
  tg_usage_record one[2];
  assert_int_equal(tg_range_records_at(r->primary, &off, one), TG_ERROR_INVALID_ARGUMENT);
  tg_model_range_destroy(r);

  /* 2D textures: (W·B, H·S) = (W-2, 2) texels; with plan_io, x is (W, 1) and y (ceil, 2). */
  shapes sh;
  const char *text = "x:1x4x5..40";
  shapes_parse(&sh, &text, 1);
  tg_model_range_desc d = {&sh.o, TG_STORAGE_TEXTURE_2D, TG_PRECISION_FP16, NULL, 1, 1, 1};
  st = tg_model_range_parse(m.data, m.len, "conv.onnx", &d, NULL, &r, &err);
  if (st != TG_OK) fail_msg("%s", err.message);
  assert_int_equal(tg_range_records_count(r->primary), 4);
  assert_int_equal(tg_range_records_dims(r->primary), 2);
  for (int64_t w = 5; w <= 40; ++w) {
    tg_usage_record at[4];
    assert_int_equal(tg_range_records_at(r->primary, &w, at), TG_OK);
    uint64_t expect[4][2] = {{(uint64_t)w, 1}, {(uint64_t)w - 2, 2}, {(uint64_t)w - 2, 2}, {(uint64_t)(w - 5) / 2 + 1, 2}};
    for (int k = 0; k < 4; ++k) {
      assert_int_equal(at[k].size.w, expect[k][0]);
      assert_int_equal(at[k].size.h, expect[k][1]);
      assert_int_equal(at[k].size.d, 1);
    }
  }
  tg_model_range_destroy(r);
  pb_free(&m);
}

static void errors(void **state) {
  (void)state;
  pb m = {0};
  tg_test_conv1d_onnx(&m, 1);
  tg_model_range *r = (tg_model_range *)&r;
  tg_error_info err = {{0}};
  /* A size where the second convolution has less input than its kernel: the op and the size. */
  tg_status st = load_range(m.data, m.len, "conv.onnx", "x:1x4x3..64", TG_STORAGE_BUFFER, NULL, &r, &err);
  assert_int_not_equal(st, TG_OK);
  assert_null(r);
  assert_contains(err.message, "conv.onnx at x:1x4x3: node 2 'conv2' (Conv)");
  /* A static dimension. */
  st = load_range(m.data, m.len, "conv.onnx", "x:1x2..4x8", TG_STORAGE_BUFFER, NULL, &r, &err);
  assert_int_equal(st, TG_ERROR_INVALID_ARGUMENT);
  assert_contains(err.message, "input 'x': dimension 1 is static (4 in the file, 1x4x?): a range (2..4) is only for a dynamic dimension");
  /* No range at all. */
  st = load_range(m.data, m.len, "conv.onnx", "x:1x4x8", TG_STORAGE_BUFFER, NULL, &r, &err);
  assert_int_equal(st, TG_ERROR_INVALID_ARGUMENT);
  assert_contains(err.message, "no dimension is given as a range");
  /* Too many sizes. */
  st = load_range(m.data, m.len, "conv.onnx", "x:1x4x8..100000", TG_STORAGE_BUFFER, NULL, &r, &err);
  assert_int_equal(st, TG_ERROR_INVALID_ARGUMENT);
  assert_contains(err.message, "make 99993 sizes, more than the 16384 a model is loaded at: give a larger STEP");
  /* Another input name, another rank. */
  st = load_range(m.data, m.len, "conv.onnx", "z:1x4x8..9", TG_STORAGE_BUFFER, NULL, &r, &err);
  assert_int_equal(st, TG_ERROR_INVALID_ARGUMENT);
  assert_contains(err.message, "an input shape is given for 'z', which is not a graph input (inputs: 'x')");
  st = load_range(m.data, m.len, "conv.onnx", "x:1x4x8..9x1", TG_STORAGE_BUFFER, NULL, &r, &err);
  assert_int_equal(st, TG_ERROR_INVALID_ARGUMENT);
  assert_contains(err.message, "input 'x' has rank 3 in the file but the shape given, 1x4x8..9x1, has rank 4");
  /* A tensor that falls back at some sizes only (2D textures 32 wide). */
  tg_device_limits small = tg_device_limits_default();
  small.max_texture_2d_width = 32;
  st = load_range(m.data, m.len, "conv.onnx", "x:1x4x8..64/8", TG_STORAGE_TEXTURE_2D, &small, &r, &err);
  assert_int_equal(st, TG_ERROR_UNSUPPORTED);
  assert_contains(err.message, "tensor 'c' is in texture_2d at x:1x4x8 but in image_buffer at x:1x4x40 (extent 38x2 "
                               "exceeds max 2D 32x8192 at x:1x4x40)");
  /* Ranges as structs: LO above HI, a negative step. */
  shapes sh;
  const char *text = "x:1x4x8..9";
  shapes_parse(&sh, &text, 1);
  sh.s[0].range[2] = (tg_dim_range){9, 8, 1};
  tg_model_range_desc d = {&sh.o, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL, 0, 1, 1};
  assert_int_equal(tg_model_range_parse(m.data, m.len, "conv.onnx", &d, NULL, &r, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_contains(err.message, "conv.onnx: input shape for 'x': dimension 2: range 9..8: LO is above HI");
  sh.s[0].range[2] = (tg_dim_range){8, 9, -1};
  assert_int_equal(tg_model_range_parse(m.data, m.len, "conv.onnx", &d, NULL, &r, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_contains(err.message, "STEP is negative");
  /* A plain load refuses a range. */
  sh.s[0].range[2] = (tg_dim_range){8, 9, 1};
  tg_model *plain = (tg_model *)&plain;
  assert_int_equal(tg_model_parse_with(m.data, m.len, "conv.onnx", &sh.o, NULL, &plain, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_null(plain);
  assert_contains(err.message, "dimension 2 is a range (8..9), and a model is loaded at one size: load it over the "
                               "range with tg_model_range_load");
  pb_free(&m);

  /* Three varying dimensions; a range on a text graph; on usage records. */
  build_two_inputs(&m);
  const char *three[2] = {"a:1..2x8", "b:1..3x8"};
  shapes_parse(&sh, three, 2);
  d.options = &sh.o;
  st = tg_model_range_parse(m.data, m.len, "two.onnx", &d, NULL, &r, &err);
  /* a and b vary apart: at a = 2, b = 3 the Add does not broadcast. */
  assert_int_not_equal(st, TG_OK);
  assert_contains(err.message, "two.onnx at a:2x8, b:3x8: node 0 'add' (Add)");
  pb_free(&m);
  const char *graph_text = "tensor x 1x8 float32 input\ntensor y 1x8 float32 output\nop relu inputs=x outputs=y\n";
  st = load_range(graph_text, strlen(graph_text), "g.graph", "x:1..4x8", TG_STORAGE_BUFFER, NULL, &r, &err);
  assert_int_equal(st, TG_ERROR_INVALID_ARGUMENT);
  assert_contains(err.message, "g.graph: input 'x': dimension 0 is static (1 in the file, 1x8)");
  const char *csv = "size,first,last\n4,0,1\n";
  st = load_range(csv, strlen(csv), "r.csv", "x:1..4x8", TG_STORAGE_BUFFER, NULL, &r, &err);
  assert_int_equal(st, TG_ERROR_INVALID_ARGUMENT);
  assert_contains(err.message, "r.csv: holds usage records, which have no inputs to give ranges to");
}

static void three_dimensions(void **state) {
  (void)state;
  /* x[N,3,H,W]: N, H and W all dynamic. */
  pb m = {0};
  tg_test_nchw_relu_onnx(&m);
  tg_model_range *r = NULL;
  tg_error_info err = {{0}};
  tg_status st = load_range(m.data, m.len, "n.onnx", "x:1..2x3x8..16x8..16", TG_STORAGE_BUFFER, NULL, &r, &err);
  assert_int_equal(st, TG_ERROR_INVALID_ARGUMENT);
  assert_contains(err.message, "n.onnx: ranges on 3 dimensions (x[0], x[2], x[3]): at most 2 may vary");
  /* Two of them vary: (N, W), W fastest. */
  st = load_range(m.data, m.len, "n.onnx", "x:1..2x3x8x8..16/4", TG_STORAGE_BUFFER, NULL, &r, &err);
  if (st != TG_OK) fail_msg("%s", err.message);
  assert_int_equal(r->range.count, 2);
  assert_int_equal(r->point_count, 6);
  int64_t dims[2];
  assert_int_equal(tg_size_range_point(&r->range, 4, dims), TG_OK);
  assert_int_equal(dims[0], 2);
  assert_int_equal(dims[1], 12);
  tg_model_range_destroy(r);
  pb_free(&m);
}

/* Inputs whose dimensions the file names alike vary together when given the same range. */
static void tied_dimensions(void **state) {
  (void)state;
  pb m = {0};
  build_two_inputs(&m);
  shapes sh;
  const char *texts[2] = {"a:1..16x8", "b:1..16x8"};
  shapes_parse(&sh, texts, 2);
  tg_model_range_desc d = {&sh.o, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL, 1, 1, 1};
  tg_model_range *r = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_model_range_parse(m.data, m.len, "two.onnx", &d, NULL, &r, &err);
  if (st != TG_OK) fail_msg("%s", err.message);
  assert_int_equal(r->range.count, 1);
  assert_int_equal(r->point_count, 16);
  assert_int_equal(r->axis_count, 2);
  assert_int_equal(r->axes[0].input, 0);
  assert_int_equal(r->axes[1].input, 1);
  assert_int_equal(r->axes[1].dim, 0);
  /* With plan_io: a, b, s, t, y; each N·8 fp32 = 32 N bytes. */
  assert_int_equal(tg_range_records_count(r->primary), 5);
  for (int64_t n = 1; n <= 16; ++n) {
    tg_usage_record at[5];
    assert_int_equal(tg_range_records_at(r->primary, &n, at), TG_OK);
    for (int k = 0; k < 5; ++k) assert_int_equal(at[k].size.w, 32 * (uint64_t)n);
  }
  tg_input_shape at[2];
  int64_t seven = 7;
  assert_int_equal(tg_model_range_shapes_at(r, &sh.o, &seven, at), TG_OK);
  assert_int_equal(at[0].dims[0], 7);
  assert_int_equal(at[1].dims[0], 7);
  assert_int_equal(at[1].range[0].step, 0);
  int64_t seventeen = 17;
  assert_int_equal(tg_model_range_shapes_at(r, &sh.o, &seventeen, at), TG_ERROR_INVALID_ARGUMENT);
  tg_model_range_destroy(r);
  pb_free(&m);
}

/* Allocation failure at every site: a clean error, no leak, then success. */
static void allocation_failures(void **state) {
  (void)state;
  pb m = {0};
  tg_test_conv1d_onnx(&m, 1);
  shapes sh;
  const char *text = "x:1x4x5..12";
  shapes_parse(&sh, &text, 1);
  tg_model_range_desc d = {&sh.o, TG_STORAGE_TEXTURE_2D, TG_PRECISION_FP32, NULL, 1, 1, 1};
  for (uint64_t fail_at = 1;; ++fail_at) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, fail_at);
    tg_model_range *r = NULL;
    tg_error_info err = {{0}};
    tg_status st = tg_model_range_parse(m.data, m.len, "conv.onnx", &d, &fa.base, &r, &err);
    if (st == TG_OK) {
      tg_model_range_destroy(r);
      assert_int_equal(fa.live_blocks, 0);
      assert_true(fail_at > 10);
      break;
    }
    assert_null(r);
    if (fa.live_blocks != 0) fail_msg("fail_at %llu: %llu blocks leaked", (unsigned long long)fail_at,
                                     (unsigned long long)fa.live_blocks);
    assert_true(err.message[0] != '\0');
  }
  pb_free(&m);
}
#endif

/* ---- The --input-shape syntax ------------------------------------------------------------ */

static void input_shape_syntax(void **state) {
  (void)state;
  char name[16], err[256];
  tg_input_shape s;
  assert_int_equal(tg_input_shape_parse("x:1x3x32..960/32x32..960/32", name, sizeof name, &s, err, sizeof err), TG_OK);
  assert_string_equal(s.name, "x");
  assert_ptr_equal(s.name, name);
  assert_int_equal(s.rank, 4);
  assert_int_equal(s.dims[1], 3);
  assert_int_equal(s.range[1].step, 0);
  assert_int_equal(s.range[2].lo, 32);
  assert_int_equal(s.range[2].hi, 960);
  assert_int_equal(s.range[2].step, 32);
  assert_int_equal(s.dims[3], 32);
  assert_int_equal(tg_input_shape_parse("a:b:1..16", name, sizeof name, &s, err, sizeof err), TG_OK);
  assert_string_equal(name, "a:b");
  assert_int_equal(s.range[0].step, 1);
  assert_int_equal(s.range[0].hi, 16);
  assert_int_equal(tg_input_shape_parse("x:scalar", name, sizeof name, &s, err, sizeof err), TG_OK);
  assert_int_equal(s.rank, 0);
  static const struct { const char *text, *message; } bad[] = {
      {"x", "must be NAME:DxDx... (e.g. x:1x3x640x640), not 'x'"},
      {"x:1x3x48x1600..32", "x:1x3x48x1600..32: dimension 3: "},
      {"x:1x3x48x32..1600/0", "x:1x3x48x32..1600/0: dimension 3: "},
      {"x:1x3x48x32..", "x:1x3x48x32..: dimension 3: "},
      {"x:1x3x48x..5", "x:1x3x48x..5: dimension 3: "},
      {"x:1x3x48x1..5/", "x:1x3x48x1..5/: dimension 3: "},
      {"x:1x3x48x1...5", "x:1x3x48x1...5: dimension 3: "},
      {"x:1x3x48x1..99999999999999999999", "dimension 3: "},
      {"x:1x-3", "dimensions must be non-negative decimals separated by 'x', or ranges LO..HI or LO..HI/STEP"},
      {"x:1x3/2", "dimensions must be non-negative decimals separated by 'x'"},
      {"x:1x1x1x1x1x1x1x1x1..2", "more than 8 dimensions"},
      {"averyveryverylongname:1", "input name of 21 bytes is too long (at most 15)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    memset(&s, 0x5a, sizeof s);
    tg_input_shape before = s;
    err[0] = '\0';
    assert_int_equal(tg_input_shape_parse(bad[i].text, name, sizeof name, &s, err, sizeof err), TG_ERROR_INVALID_ARGUMENT);
    assert_contains(err, bad[i].message);
    assert_memory_equal(&s, &before, sizeof s);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(input_shape_syntax),
#ifdef TANGRAM_HAVE_ONNX
      cmocka_unit_test(known_sizes),
      cmocka_unit_test(errors),
      cmocka_unit_test(three_dimensions),
      cmocka_unit_test(tied_dimensions),
      cmocka_unit_test(allocation_failures),
#endif
      cmocka_unit_test(real_models_equal_plain_loads),
      cmocka_unit_test(fallback_at_some_sizes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
